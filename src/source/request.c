/*
 * request.c - requests: what a provider is asked to load, as a predicate
 * tree and as SQL text with parameters, and the accessors of livedb.h.
 *
 * A request's data is made once, before the provider sees it, and never
 * changes (seed 000: request data is immutable from submission): the tree
 * and its values are private copies (text and blobs too, so a provider
 * thread reading them shares no memory the core writes), and the SQL text
 * is rendered from the tree. Only the atomics (refs, aborted, settled)
 * change under a provider's eyes.
 *
 * A plan's fixed predicate is built from the live layer's pushable
 * conjuncts; its identity text renders every value with its type and
 * bytes, so two plans are equal exactly when their predicates are.
 */
#include "source/source_internal.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/expr.h"
#include "storage/table.h"

#include <string.h>

/* ---- predicate trees ---------------------------------------------------------------------- */

void pred_free(struct ldb_pred *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; p->kids && i < p->n; i++)
        pred_clear(&p->kids[i]);
    pred_clear(p);
    mem_free(p);
}

void pred_clear(struct ldb_pred *p)
{
    for (uint32_t i = 0; p->kids && i < p->n; i++)
        pred_clear(&p->kids[i]);
    mem_free(p->kids);
    for (uint32_t i = 0; p->vals && i < p->n; i++)
        value_release(&p->vals[i]);
    mem_free(p->vals);
    memset(p, 0, sizeof *p);
}

/* A private copy of v: text and blobs get their own bytes. */
int pred_value_copy(const value *v, value *out)
{
    enum ldb_type t = value_type(v);
    if (value_has_obj(v) && (t == LDB_TEXT || t == LDB_BLOB)) {
        size_t n;
        const char *b = value_bytes(v, &n);
        return t == LDB_TEXT ? value_text(out, b, n) : value_blob(out, b, n);
    }
    *out = value_copy(v);
    return LDB_OK;
}

int pred_copy(const struct ldb_pred *src, struct ldb_pred *dst)
{
    *dst = *src;
    dst->kids = NULL;
    dst->vals = NULL;
    if (src->kids) {
        if (!(dst->kids = mem_calloc(src->n, sizeof *dst->kids)))
            return LDB_NOMEM;
        for (uint32_t i = 0; i < src->n; i++)
            if (pred_copy(&src->kids[i], &dst->kids[i]))
                return LDB_NOMEM; /* the caller clears dst */
    }
    if (src->vals) {
        if (!(dst->vals = mem_calloc(src->n, sizeof *dst->vals)))
            return LDB_NOMEM;
        for (uint32_t i = 0; i < src->n; i++)
            if (pred_value_copy(&src->vals[i], &dst->vals[i]))
                return LDB_NOMEM;
    }
    return LDB_OK;
}

struct pbuild {
    const struct table *t;
    const value *params;
    uint32_t nparams;
};

/* The value of a constant or parameter, converted as the comparison
 * converts it (so the provider compares what livedb compares). */
static int operand(const struct pbuild *b, const struct expr *e, uint8_t aff, value *out)
{
    value v = value_null();
    if (e->kind == EXPR_CONST)
        v = e->u.v;
    else if (e->u.index >= 1 && e->u.index <= b->nparams)
        v = b->params[e->u.index - 1];
    int rc = pred_value_copy(&v, out);
    if (!rc && (rc = sql_apply_affinity(out, (enum col_type)aff)))
        value_release(out);
    return rc;
}

static const char *column_name(const struct pbuild *b, const struct expr *col)
{
    return table_schema(b->t)->cols[col->u.index].name;
}

static int flipped(int op)
{
    switch (op) {
    case LDB_OP_LT: return LDB_OP_GT;
    case LDB_OP_LE: return LDB_OP_GE;
    case LDB_OP_GT: return LDB_OP_LT;
    case LDB_OP_GE: return LDB_OP_LE;
    default: return op;
    }
}

static int cmp_node(const struct pbuild *b, const struct expr *col, int op, const struct expr *val,
                    uint8_t aff, uint8_t coll, struct ldb_pred *out)
{
    *out = (struct ldb_pred){ .kind = LDB_PRED_CMP, .op = op, .coll = coll, .n = 1,
                              .column = column_name(b, col) };
    if (!(out->vals = mem_calloc(1, sizeof *out->vals)))
        return LDB_NOMEM;
    return operand(b, val, aff, &out->vals[0]);
}

static int build(const struct pbuild *b, const struct expr *e, struct ldb_pred *out);

static int build_kids(const struct pbuild *b, int kind, const struct expr *const *es, uint32_t n,
                      struct ldb_pred *out)
{
    *out = (struct ldb_pred){ .kind = kind, .n = n };
    if (!(out->kids = mem_calloc(n, sizeof *out->kids)))
        return LDB_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        if (build(b, es[i], &out->kids[i]))
            return LDB_NOMEM;
    return LDB_OK;
}

static int build(const struct pbuild *b, const struct expr *e, struct ldb_pred *out)
{
    memset(out, 0, sizeof *out);
    switch (e->kind) {
    case EXPR_BINARY: {
        if (e->op == EOP_AND || e->op == EOP_OR)
            return build_kids(b, e->op == EOP_AND ? LDB_PRED_AND : LDB_PRED_OR,
                              (const struct expr *const *)e->args, 2, out);
        int op = LDB_OP_EQ + (e->op - EOP_EQ);
        if (e->args[0]->kind == EXPR_COLUMN)
            return cmp_node(b, e->args[0], op, e->args[1], e->aff, e->coll, out);
        return cmp_node(b, e->args[1], flipped(op), e->args[0], e->aff, e->coll, out);
    }
    case EXPR_IN_LIST: {
        uint32_t n = e->nargs - 1;
        *out = (struct ldb_pred){ .kind = LDB_PRED_IN, .coll = e->coll, .n = n,
                                  .column = column_name(b, e->args[0]) };
        if (!(out->vals = mem_calloc(n, sizeof *out->vals)))
            return LDB_NOMEM;
        for (uint32_t i = 0; i < n; i++)
            if (operand(b, e->args[i + 1], e->aff, &out->vals[i]))
                return LDB_NOMEM;
        return LDB_OK;
    }
    case EXPR_BETWEEN:
        *out = (struct ldb_pred){ .kind = LDB_PRED_AND, .n = 2 };
        if (!(out->kids = mem_calloc(2, sizeof *out->kids)))
            return LDB_NOMEM;
        if (cmp_node(b, e->args[0], LDB_OP_GE, e->args[1], e->aff, e->coll, &out->kids[0]))
            return LDB_NOMEM;
        return cmp_node(b, e->args[0], LDB_OP_LE, e->args[2], e->aff2, e->u.coll_hi,
                        &out->kids[1]);
    case EXPR_UNARY:
        *out = (struct ldb_pred){ .kind = e->op == EOP_ISNULL ? LDB_PRED_ISNULL
                                                              : LDB_PRED_NOTNULL,
                                  .column = column_name(b, e->args[0]) };
        return LDB_OK;
    default:
        return LDB_INTERNAL; /* the live layer pushes only the kinds above */
    }
}

int pred_from_demand(const struct live_demand *d, const value *params, uint32_t nparams,
                     struct ldb_pred **out)
{
    *out = NULL;
    if (d->nconj == 0)
        return LDB_OK;
    struct pbuild b = { d->table, params, nparams };
    struct ldb_pred *p = mem_calloc(1, sizeof *p);
    if (!p)
        return LDB_NOMEM;
    int rc = d->nconj == 1 ? build(&b, d->conj[0], p)
                           : build_kids(&b, LDB_PRED_AND, d->conj, d->nconj, p);
    if (rc) {
        pred_free(p);
        return rc;
    }
    *out = p;
    return LDB_OK;
}

/* ---- rendering --------------------------------------------------------------------------- */

static void put_name(strbuf *sb, const char *name)
{
    sb_putc(sb, '"');
    for (const char *c = name; *c; c++) {
        if (*c == '"')
            sb_putc(sb, '"');
        sb_putc(sb, *c);
    }
    sb_putc(sb, '"');
}

/* A value as identity text: its type and exact bytes. */
static void put_ident_value(strbuf *sb, const value *v)
{
    size_t n;
    switch (value_type(v)) {
    case LDB_NULL: sb_puts(sb, "n"); break;
    case LDB_BOOLEAN: sb_printf(sb, "b%d", (int)v->h.u.i); break;
    case LDB_INTEGER: sb_printf(sb, "i%lld", (long long)v->h.u.i); break;
    case LDB_REAL: sb_printf(sb, "r%a", v->h.u.r); break;
    case LDB_TEXT:
    case LDB_BLOB: {
        const char *b = value_bytes(v, &n);
        sb_printf(sb, "%c%zu:", value_type(v) == LDB_TEXT ? 't' : 'x', n);
        sb_put(sb, b, n);
        break;
    }
    default: /* ARRAY, RECORD: their text form is exact too */
        sb_putc(sb, 'a');
        value_format(sb, v);
    }
}

static const char *const op_text[] = { "", " = ", " <> ", " < ", " <= ", " > ", " >= " };

struct render {
    strbuf *sb;
    bool ident;                 /* values inline (identity), else ?N */
    uint32_t nparams;
    VEC(const value *) *params; /* !ident: the values of ?1.. in order */
};

static void put_value(struct render *r, const value *v)
{
    if (r->ident) {
        put_ident_value(r->sb, v);
        return;
    }
    if (vec_push(r->params, v))
        r->sb->err = LDB_NOMEM;
    sb_printf(r->sb, "?%zu", r->params->len);
}

static void render(struct render *r, const struct ldb_pred *p, int parent)
{
    strbuf *sb = r->sb;
    switch (p->kind) {
    case LDB_PRED_AND:
    case LDB_PRED_OR: {
        bool paren = parent != 0;
        if (paren)
            sb_putc(sb, '(');
        for (uint32_t i = 0; i < p->n; i++) {
            if (i)
                sb_puts(sb, p->kind == LDB_PRED_AND ? " AND " : " OR ");
            render(r, &p->kids[i], p->kind);
        }
        if (paren)
            sb_putc(sb, ')');
        return;
    }
    case LDB_PRED_CMP:
        put_name(sb, p->column);
        sb_puts(sb, op_text[p->op]);
        put_value(r, &p->vals[0]);
        return;
    case LDB_PRED_IN:
        put_name(sb, p->column);
        sb_puts(sb, " IN (");
        for (uint32_t i = 0; i < p->n; i++) {
            if (i)
                sb_puts(sb, ", ");
            put_value(r, &p->vals[i]);
        }
        sb_putc(sb, ')');
        return;
    default:
        put_name(sb, p->column);
        sb_puts(sb, p->kind == LDB_PRED_ISNULL ? " IS NULL" : " IS NOT NULL");
    }
}

int pred_ident(const struct ldb_pred *fixed, int32_t key_col, strbuf *sb)
{
    struct render r = { sb, true, 0, NULL };
    if (fixed)
        render(&r, fixed, 0);
    sb_printf(sb, "|%d", (int)key_col);
    return sb_error(sb);
}

/* ---- requests ------------------------------------------------------------------------------ */

/* pl's fixed predicate AND key IN (keys of ps[0..n)) into r->pred. */
/* pl's fixed predicate AND extra (owned, taken; either may be NULL). */
static int pred_and(ldb_request *r, const struct src_plan *pl, struct ldb_pred *extra)
{
    if (!pl->fixed) {
        r->pred = extra;
        return LDB_OK;
    }
    struct ldb_pred *p = mem_calloc(1, sizeof *p);
    if (!p) {
        pred_free(extra);
        return LDB_NOMEM;
    }
    r->pred = p;
    if (!extra)
        return pred_copy(pl->fixed, p);
    bool flat = pl->fixed->kind == LDB_PRED_AND;
    uint32_t nf = flat ? pl->fixed->n : 1;
    *p = (struct ldb_pred){ .kind = LDB_PRED_AND, .n = nf + 1 };
    if (!(p->kids = mem_calloc(nf + 1, sizeof *p->kids))) {
        pred_free(extra);
        return LDB_NOMEM;
    }
    p->kids[nf] = *extra; /* the node's contents move in */
    mem_free(extra);
    for (uint32_t i = 0; i < nf; i++)
        if (pred_copy(flat ? &pl->fixed->kids[i] : pl->fixed, &p->kids[i]))
            return LDB_NOMEM;
    return LDB_OK;
}

/* An ordered plan's step: its cursor or tie, and its order. */
static int request_ordered(ldb_request *r, const struct src_plan *pl, const struct src_param *p)
{
    struct ldb_pred *extra;
    int rc = ordered_pred(p, &extra);
    if (rc)
        return rc;
    if (p->ord->step == ORD_PAGE) {
        r->order_col = table_schema(pl->src->table)->cols[pl->order_col].name;
        r->order_desc = pl->order_desc;
        r->order_limit = p->ord->limit;
        if (p->ord->has_cov && (rc = pred_value_copy(&p->ord->cov, &r->cursor))) {
            pred_free(extra);
            return rc;
        }
        r->has_cursor = p->ord->has_cov;
    }
    return pred_and(r, pl, extra);
}

static int request_pred(ldb_request *r, struct src_plan *pl, struct src_param *const *ps, size_t n)
{
    if (pl->order_col >= 0)
        return request_ordered(r, pl, ps[0]);
    if (pl->key_col < 0)
        return pred_and(r, pl, NULL);
    struct ldb_pred in = { .kind = LDB_PRED_IN, .coll = pl->key_coll, .n = (uint32_t)n,
                           .column = table_schema(pl->src->table)->cols[pl->key_col].name };
    int rc = (in.vals = mem_calloc(n, sizeof *in.vals)) ? LDB_OK : LDB_NOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        rc = pred_value_copy(&ps[i]->key, &in.vals[i]);
    struct ldb_pred *p = rc ? NULL : mem_calloc(1, sizeof *p);
    if (!p) {
        pred_clear(&in);
        return LDB_NOMEM;
    }
    *p = in;
    if ((rc = pred_and(r, pl, p))) /* AND(fixed's conjuncts..., IN) */
        return rc;
    r->keys = r->pred->kind == LDB_PRED_IN ? r->pred : &r->pred->kids[r->pred->n - 1];
    return LDB_OK;
}

/* r->sql and r->params from r->pred. */
static int request_sql(ldb_request *r)
{
    strbuf sb;
    sb_init(&sb);
    VEC(const value *) vals = VEC_INIT;
    struct render rd = { &sb, false, 0, (void *)&vals };
    if (r->pred)
        render(&rd, r->pred, 0);
    else
        sb_puts(&sb, "TRUE");
    int rc = sb_error(&sb);
    if (!rc && vals.len && !(r->params = mem_calloc(vals.len, sizeof *r->params)))
        rc = LDB_NOMEM;
    for (size_t i = 0; !rc && i < vals.len; i++)
        r->params[r->nparams++] = value_copy(vals.data[i]);
    vec_free(&vals);
    r->sql = rc ? NULL : sb_take(&sb, NULL);
    sb_free(&sb);
    return r->sql ? LDB_OK : LDB_NOMEM;
}

int request_new(struct src_plan *pl, struct src_param *const *ps, size_t n, ldb_request **out)
{
    *out = NULL;
    ldb_request *r = mem_calloc(1, sizeof *r);
    if (!r)
        return LDB_NOMEM;
    atomic_init(&r->refs, 1);
    atomic_init(&r->aborted, 0);
    atomic_init(&r->settled, 0);
    r->src = pl->src;
    r->order_limit = -1;
    r->cursor = value_null();
    int rc = request_pred(r, pl, ps, n);
    if (!rc)
        rc = request_sql(r);
    if (!rc)
        rc = vec_reserve(&r->params_here, n);
    if (rc) {
        request_free(r);
        return rc;
    }
    *out = r;
    return LDB_OK;
}

void request_free(ldb_request *r)
{
    pred_free(r->pred);
    mem_free(r->sql);
    for (uint32_t i = 0; i < r->nparams; i++)
        value_release(&r->params[i]);
    mem_free(r->params);
    mem_free(r->errmsg);
    value_release(&r->cursor);
    vec_free(&r->params_here);
    mem_free(r);
}

/* ---- livedb.h accessors (any thread, no lock) ------------------------------------------------ */

void ldb_request_ref(ldb_request *r)
{
    if (r)
        atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

void ldb_request_unref(ldb_request *r)
{
    if (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        request_free(r);
}

ldb_source *ldb_request_source(const ldb_request *r) { return r ? r->src : NULL; }
const char *ldb_request_table(const ldb_request *r) { return r ? r->src->name : NULL; }
uint64_t ldb_request_id(const ldb_request *r) { return r ? r->id : 0; }

int ldb_request_aborted(const ldb_request *r)
{
    return r && atomic_load_explicit(&r->aborted, memory_order_acquire);
}

const char *ldb_request_sql(const ldb_request *r) { return r ? r->sql : NULL; }
int ldb_request_param_count(const ldb_request *r) { return r ? (int)r->nparams : 0; }

const ldb_value *ldb_request_param(const ldb_request *r, int i)
{
    if (!r || i < 0 || (uint32_t)i >= r->nparams)
        return NULL;
    return (const ldb_value *)&r->params[i];
}

const ldb_pred *ldb_request_pred(const ldb_request *r) { return r ? r->pred : NULL; }

int ldb_request_keys(const ldb_request *r, const char **column)
{
    if (!r || !r->keys)
        return 0;
    if (column)
        *column = r->keys->column;
    return (int)r->keys->n;
}

const ldb_value *ldb_request_key(const ldb_request *r, int i)
{
    return r ? ldb_pred_value(r->keys, i) : NULL;
}

const ldb_value *ldb_request_cursor(const ldb_request *r)
{
    return r && r->has_cursor ? (const ldb_value *)&r->cursor : NULL;
}

int ldb_request_order(const ldb_request *r, const char **column, int *desc, int64_t *limit)
{
    if (!r || !r->order_col)
        return 0;
    if (column)
        *column = r->order_col;
    if (desc)
        *desc = r->order_desc;
    if (limit)
        *limit = r->order_limit;
    return 1;
}
int ldb_pred_kind(const ldb_pred *p) { return p ? p->kind : 0; }
int ldb_pred_op(const ldb_pred *p) { return p ? p->op : 0; }
const char *ldb_pred_column(const ldb_pred *p) { return p ? p->column : NULL; }
int ldb_pred_collation(const ldb_pred *p) { return p ? p->coll : 0; }
int ldb_pred_count(const ldb_pred *p) { return p ? (int)p->n : 0; }

const ldb_pred *ldb_pred_child(const ldb_pred *p, int i)
{
    if (!p || !p->kids || i < 0 || (uint32_t)i >= p->n)
        return NULL;
    return &p->kids[i];
}

const ldb_value *ldb_pred_value(const ldb_pred *p, int i)
{
    if (!p || !p->vals || i < 0 || (uint32_t)i >= p->n)
        return NULL;
    return (const ldb_value *)&p->vals[i];
}
