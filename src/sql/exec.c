/*
 * exec.c - the executor's framework (exec.h): execution state, operator
 * life cycle, the subquery runner the evaluator calls, and the streaming
 * operators: scan (every access path), values, filter, project, limit,
 * and the reader of a shared node's rows.
 */
#include "sql/exec_internal.h"

#include "base/hash.h"
#include "base/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- execution state ------------------------------------------------------------------ */

int exec_error(struct exec *x, int code, uint32_t off, const char *fmt, ...)
{
    struct eval_error *err = x->err;
    if (err->code)
        return err->code;
    va_list ap;
    va_start(ap, fmt);
    sqlv_verror(err, code, fmt, ap);
    va_end(ap);
    err->off = off;
    err->has_off = off != UINT32_MAX;
    return code;
}

int exec_nomem(struct exec *x)
{
    return exec_fail(x, LDB_NOMEM);
}

int exec_fail(struct exec *x, int code)
{
    return exec_error(x, code, UINT32_MAX, "%s", ldb_errstr(code));
}

static int run_subquery(void *ctx, struct eval_ctx *cx, const struct expr *e,
                        const value *captures, const value *operand, value *out);

int exec_new(const struct exec_env *env, struct eval_error *err, struct exec **out)
{
    struct exec *x = mem_calloc(1, sizeof *x);
    if (!x)
        return LDB_NOMEM;
    x->env = *env;
    x->err = err;
    x->epoch = *env->epoch;
    arena_init(&x->a, 4096);
    if (env->nsubqueries && !(x->subs = mem_calloc(env->nsubqueries, sizeof *x->subs))) {
        mem_free(x);
        return LDB_NOMEM;
    }
    *out = x;
    return LDB_OK;
}

static void subq_reset(struct subq_state *st)
{
    value_release(&st->result);
    for (size_t i = 0; i < st->set_values.len; i++)
        value_release(&st->set_values.data[i]);
    vec_free(&st->set_values);
    hmap_free(&st->set);
    st->set_has_null = false;
    st->cached = false;
}

void exec_free(struct exec *x)
{
    if (!x)
        return;
    for (struct op *o = x->all; o; o = o->all_next)
        op_close(o);
    for (uint32_t i = 0; i < x->env.nsubqueries; i++) {
        struct subq_state *st = &x->subs[i];
        subq_reset(st);
        for (uint32_t k = 0; st->captures && k < st->ncaptures; k++)
            value_release(&st->captures[k]);
    }
    mem_free(x->subs);
    for (struct shared_rows *sr = x->shared; sr; sr = sr->next) {
        for (size_t i = 0; i < sr->rows.len; i++)
            row_release(sr->rows.data[i]);
        vec_free(&sr->rows);
    }
    arena_free(&x->a);
    mem_free(x);
}

/* ---- operator life cycle ----------------------------------------------------------------- */

struct op *op_alloc(struct exec *x, const struct plan *p, size_t size, const value *outer,
                    uint32_t nouter)
{
    struct op *o = arena_calloc(&x->a, size);
    if (!o) {
        exec_nomem(x);
        return NULL;
    }
    o->p = p;
    o->x = x;
    o->cx.outer = outer;
    o->cx.nouter = nouter;
    o->cx.params = x->env.params;
    o->cx.nparams = x->env.nparams;
    o->cx.env = x->env.env;
    o->cx.err = x->err;
    o->cx.sub.run = run_subquery;
    o->cx.sub.ctx = x;
    o->all_next = x->all;
    x->all = o;
    return o;
}

int op_open(struct op *o)
{
    op_close(o);
    int rc = LDB_OK;
    struct op *kids[3] = { o->in, o->left, o->right };
    for (int i = 0; i < 3 && rc == LDB_OK; i++)
        if (kids[i])
            rc = op_open(kids[i]);
    if (rc == LDB_OK && o->open)
        rc = o->open(o);
    o->is_open = true; /* so that close releases what open acquired */
    if (rc != LDB_OK)
        op_close(o);
    return rc;
}

void op_close(struct op *o)
{
    if (!o->is_open)
        return;
    o->is_open = false;
    if (o->close)
        o->close(o);
    struct op *kids[3] = { o->in, o->left, o->right };
    for (int i = 0; i < 3; i++)
        if (kids[i])
            op_close(kids[i]);
}

row *scratch_row(struct op *o, row **slot, uint32_t n)
{
    row *r = *slot;
    if (r && r->refs == 1) {
        for (uint32_t i = 0; i < r->ncols; i++)
            value_release(&r->cols[i]);
        r->hash = 0;
        return r;
    }
    row_release(r);
    if (!(*slot = row_alloc(n)))
        exec_nomem(o->x);
    return *slot;
}

/* ---- row helpers ------------------------------------------------------------------------------ */

uint64_t rows_hash(const row *r, const struct plan_col *cols, uint32_t n)
{
    uint64_t h = HASH_SEED;
    for (uint32_t i = 0; i < n; i++)
        h = hash_combine(h, value_hash(&r->cols[i], cols[i].coll));
    return h;
}

bool rows_equal(const row *a, const row *b, const struct plan_col *cols, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!value_eq(&a->cols[i], &b->cols[i], cols[i].coll))
            return false;
    return true;
}

int sort_cmp(const value *a, const value *b, bool desc, bool nulls_first,
             enum ldb_collation coll)
{
    bool an = value_is_null(a), bn = value_is_null(b);
    if (an || bn) {
        if (an && bn)
            return 0;
        return (an ? -1 : 1) * (nulls_first ? 1 : -1);
    }
    int c = value_cmp(a, b, coll);
    return desc ? -c : c;
}

/* ---- subqueries --------------------------------------------------------------------------------- */

struct set_probe {
    const struct subq_state *st;
    const value *v;
    enum ldb_collation coll;
};

static bool set_eq(const void *key, uint64_t val)
{
    const struct set_probe *p = key;
    return value_eq(p->v, &p->st->set_values.data[val], p->coll);
}

/* Adds a value (affinity applied) to an uncorrelated IN set. */
static int set_add(struct subq_state *st, value *v, enum ldb_collation coll)
{
    struct set_probe probe = { st, v, coll };
    uint64_t *slot;
    bool found;
    if (hmap_put(&st->set, value_hash(v, coll), set_eq, &probe, &slot, &found))
        return LDB_NOMEM;
    if (found) {
        value_release(v);
        return LDB_OK;
    }
    if (vec_push(&st->set_values, *v)) {
        hmap_del(&st->set, slot);
        return LDB_NOMEM;
    }
    *slot = st->set_values.len - 1;
    *v = value_null();
    return LDB_OK;
}

/* Reads every row of an uncorrelated IN subquery into its set. */
static int fill_set(struct exec *x, const struct expr *e, struct subq_state *st)
{
    row *r;
    int rc;
    while ((rc = op_next(st->root, &r)) == LDB_ROW) {
        if (value_is_null(&r->cols[0])) {
            st->set_has_null = true;
            continue;
        }
        value v = value_copy(&r->cols[0]);
        rc = sql_apply_affinity(&v, (enum col_type)e->aff);
        if (rc == LDB_OK)
            rc = set_add(st, &v, (enum ldb_collation)e->coll);
        value_release(&v);
        if (rc)
            return rc == LDB_NOMEM ? exec_nomem(x) : rc;
    }
    return rc == LDB_DONE ? LDB_OK : rc;
}

/* x IN (rows) for a correlated subquery: *t is 1, 0 or -1. */
static int scan_in(const struct expr *e, struct subq_state *st, const value *x, int *t,
                   bool *empty)
{
    row *r;
    int rc;
    bool has_null = false;
    *t = 0;
    *empty = true;
    while ((rc = op_next(st->root, &r)) == LDB_ROW) {
        *empty = false;
        if (value_is_null(&r->cols[0]) || value_is_null(x)) {
            has_null = true;
            continue;
        }
        int c;
        if ((rc = sqlv_compare(x, &r->cols[0], (enum col_type)e->aff,
                               (enum ldb_collation)e->coll, &c)))
            return rc;
        if (c == 0) {
            *t = 1;
            return LDB_OK;
        }
    }
    if (rc != LDB_DONE)
        return rc;
    *t = has_null ? -1 : 0;
    return LDB_OK;
}

static int set_lookup(const struct expr *e, struct subq_state *st, const value *x, int *t)
{
    if (st->set_values.len == 0 && !st->set_has_null) {
        *t = 0; /* nothing IN an empty set, NULL included */
        return LDB_OK;
    }
    if (value_is_null(x)) {
        *t = -1;
        return LDB_OK;
    }
    value v = value_copy(x);
    int rc = sql_apply_affinity(&v, (enum col_type)e->aff);
    if (rc == LDB_OK) {
        struct set_probe probe = { st, &v, (enum ldb_collation)e->coll };
        bool found = hmap_get(&st->set, value_hash(&v, probe.coll), set_eq, &probe) != NULL;
        *t = found ? 1 : st->set_has_null ? -1 : 0;
    }
    value_release(&v);
    return rc;
}

/* Runs the subquery's tree once and records its answer (not IN). */
static int compute(struct exec *x, const struct expr *e, struct subq_state *st)
{
    row *r;
    int rc = op_next(st->root, &r);
    if (rc != LDB_ROW && rc != LDB_DONE)
        return rc;
    value_release(&st->result);
    if (e->u.sq.kind == SUBQ_EXISTS)
        st->result = value_bool(rc == LDB_ROW);
    else
        st->result = rc == LDB_ROW ? value_copy(&r->cols[0]) : value_null();
    return LDB_OK;
}

static int prepare_subquery(struct exec *x, const struct expr *e, struct subq_state *st,
                            const value *captures)
{
    uint32_t n = e->u.sq.ncaptures;
    if (!st->root) {
        if (n && !(st->captures = arena_calloc(&x->a, n * sizeof *st->captures)))
            return exec_nomem(x);
        st->ncaptures = n;
        if (!(st->root = op_build(x, e->u.sq.plan, st->captures, n)))
            return x->err->code;
    }
    for (uint32_t i = 0; i < n; i++) {
        value_release(&st->captures[i]);
        st->captures[i] = value_copy(&captures[i]);
    }
    return op_open(st->root);
}

static int run_subquery(void *ctx, struct eval_ctx *cx, const struct expr *e,
                        const value *captures, const value *operand, value *out)
{
    struct exec *x = ctx;
    struct subq_state *st = &x->subs[e->u.sq.id];
    bool correlated = e->u.sq.ncaptures > 0;
    int rc = LDB_OK, t = 0;
    if (!st->cached) {
        if ((rc = prepare_subquery(x, e, st, captures)))
            return rc;
        if (e->u.sq.kind != SUBQ_IN) {
            rc = compute(x, e, st);
        } else if (!correlated) {
            rc = fill_set(x, e, st);
        } else {
            bool empty;
            rc = scan_in(e, st, operand, &t, &empty);
            if (rc == LDB_OK && value_is_null(operand))
                t = empty ? 0 : -1;
        }
        op_close(st->root);
        if (rc)
            return rc;
        st->cached = !correlated;
    }
    if (e->u.sq.kind != SUBQ_IN) {
        *out = value_copy(&st->result);
        return LDB_OK;
    }
    if (!correlated && (rc = set_lookup(e, st, operand, &t)))
        return rc;
    *out = t < 0 ? value_null() : value_bool(t == 1);
    return LDB_OK;
}

/* ---- scan ----------------------------------------------------------------------------------------- */

enum scan_mode { SCAN_EMPTY, SCAN_FULL, SCAN_KEY, SCAN_LOOKUP, SCAN_RANGE, SCAN_ORDERED };

struct scan_op {
    struct op base;
    struct table *t;
    const struct access_path *a;
    enum scan_mode mode;
    bool started;
    value probes[INDEX_MAX_PARTS + 1]; /* eq probes, then lo */
    value hi;
    struct table_scan sc;
    uint32_t ahead;            /* SCAN_FULL: slot position PREFETCH rows ahead */
    struct index_lookup lk;
    struct index_cursor ic;
    struct order_cursor oc;
};

/* Evaluates a probe with its comparison affinity; false in *null when it
 * is NULL (the scan is then empty). */
static int eval_probe(struct scan_op *s, const struct expr *e, uint8_t aff, value *out,
                      bool *null)
{
    int rc = op_eval(&s->base, e, NULL, out);
    if (rc == LDB_OK && (rc = sql_apply_affinity(out, (enum col_type)aff)))
        rc = exec_nomem(s->base.x);
    if (rc == LDB_OK && value_is_null(out))
        *null = true;
    return rc;
}

/*
 * A write since the execution started may have changed the table, or
 * dropped it with its indexes (DDL frees them at commit): a scan then
 * fails before it touches either, whether it is reading or being opened
 * again (a correlated subquery's scan, re-opened per outer row). The
 * message names the table by its FROM name, which the plan owns.
 */
static int check_epoch(struct scan_op *s)
{
    struct exec *x = s->base.x;
    if (*x->env.epoch == x->epoch)
        return LDB_OK;
    return exec_error(x, LDB_ABORT, UINT32_MAX,
                      "table %s was changed while a statement was reading it",
                      s->base.p->u.scan.alias);
}

static int scan_open(struct op *o)
{
    struct scan_op *s = (struct scan_op *)o;
    const struct access_path *a = s->a;
    s->started = false;
    int rc = check_epoch(s);
    if (rc)
        return rc;
    bool null = false;
    for (uint32_t i = 0; i < a->neq && rc == LDB_OK; i++)
        rc = eval_probe(s, a->eq[i], a->aff[i], &s->probes[i], &null);
    if (rc == LDB_OK && a->lo)
        rc = eval_probe(s, a->lo, a->aff[a->neq], &s->probes[a->neq], &null);
    if (rc == LDB_OK && a->hi)
        rc = eval_probe(s, a->hi, a->aff[a->neq], &s->hi, &null);
    if (rc)
        return rc;
    switch (a->kind) {
    case ACCESS_FULL: s->mode = SCAN_FULL; break;
    case ACCESS_KEY: s->mode = SCAN_KEY; break;
    case ACCESS_ORDERED: s->mode = SCAN_ORDERED; break;
    default: s->mode = (a->lo || a->hi) ? SCAN_RANGE : SCAN_LOOKUP; break;
    }
    if (null)
        s->mode = SCAN_EMPTY;
    return LDB_OK;
}

static void scan_close(struct op *o)
{
    struct scan_op *s = (struct scan_op *)o;
    for (uint32_t i = 0; i <= INDEX_MAX_PARTS; i++)
        value_release(&s->probes[i]);
    value_release(&s->hi);
}

/* Still inside the range: the equality prefix and the upper bound. */
static bool in_range(const struct scan_op *s, const row *r)
{
    const struct table_index *ix = s->a->index;
    for (uint32_t i = 0; i < s->a->neq; i++)
        if (value_cmp(&r->cols[ix->parts[i].col], &s->probes[i], ix->parts[i].coll) != 0)
            return false;
    if (!s->a->hi)
        return true;
    const struct key_part *kp = &ix->parts[s->a->neq];
    int c = value_cmp(&r->cols[kp->col], &s->hi, kp->coll);
    return c < 0 || (c == 0 && s->a->hi_incl);
}

static row *range_step(struct scan_op *s)
{
    const struct access_path *a = s->a;
    bool on;
    if (s->started) {
        on = index_next(&s->ic);
    } else if (a->lo) {
        on = index_seek(a->index, s->probes, a->neq + 1, a->lo_incl ? IX_GE : IX_GT, &s->ic);
    } else {
        /* no lower bound: start after the range part's NULLs (they sort
         * first), which no comparison accepts */
        s->probes[a->neq] = value_null();
        on = index_seek(a->index, s->probes, a->neq + 1, IX_GT, &s->ic);
    }
    s->started = true;
    row *r = on ? index_cursor_row(&s->ic) : NULL;
    return r && in_range(s, r) ? r : NULL;
}

/* Rows sit in the heap in no particular order relative to the key hash
 * table a full scan walks, so every row is a cache miss: a second cursor a
 * few slots ahead prefetches them. */
#define PREFETCH 8

static void prefetch_next(struct scan_op *s)
{
    uint64_t *v = hmap_next(&s->t->rows, &s->ahead, NULL);
    if (v)
        __builtin_prefetch((const void *)(uintptr_t)*v);
}

static row *full_step(struct scan_op *s)
{
    if (!s->started) {
        s->sc = table_scan_begin(s->t);
        s->ahead = 0;
        for (int i = 0; i < PREFETCH; i++)
            prefetch_next(s);
        s->started = true;
    }
    prefetch_next(s);
    return table_scan_next(&s->sc);
}

static row *scan_step(struct scan_op *s)
{
    bool first = !s->started;
    switch (s->mode) {
    case SCAN_EMPTY:
        return NULL;
    case SCAN_FULL:
        return full_step(s);
    case SCAN_KEY:
        s->started = true;
        return first ? table_lookup(s->t, s->probes) : NULL;
    case SCAN_LOOKUP:
        s->started = true;
        return first ? index_lookup_first(s->a->index, s->probes, s->a->neq, &s->lk)
                     : index_lookup_next(&s->lk);
    case SCAN_RANGE:
        return range_step(s);
    case SCAN_ORDERED:
        s->started = true;
        if (first)
            return order_first(s->a->index, &s->a->spec, &s->oc) ? order_row(&s->oc) : NULL;
        return order_next(&s->oc) ? order_row(&s->oc) : NULL;
    }
    return NULL;
}

static int scan_next(struct op *o, row **out)
{
    struct scan_op *s = (struct scan_op *)o;
    int rc = check_epoch(s);
    if (rc || (rc = op_tick(o)))
        return rc;
    row *r = scan_step(s);
    if (!r)
        return LDB_DONE;
    *out = r;
    return LDB_ROW;
}

static struct op *op_scan(struct exec *x, const struct plan *p, const value *outer,
                          uint32_t nouter)
{
    struct scan_op *s = (struct scan_op *)op_alloc(x, p, sizeof *s, outer, nouter);
    if (!s)
        return NULL;
    s->t = p->u.scan.table;
    s->a = &p->u.scan.access;
    s->base.open = scan_open;
    s->base.next = scan_next;
    s->base.close = scan_close;
    return &s->base;
}

/* ---- values, filter, project ------------------------------------------------------------------------ */

struct values_op {
    struct op base;
    uint32_t row_i;
    row *scratch;
};

static int values_open(struct op *o)
{
    ((struct values_op *)o)->row_i = 0;
    return LDB_OK;
}

static void values_close(struct op *o)
{
    scratch_free(&((struct values_op *)o)->scratch);
}

static int values_next(struct op *o, row **out)
{
    struct values_op *v = (struct values_op *)o;
    const struct plan *p = o->p;
    int rc = op_tick(o);
    if (rc)
        return rc;
    if (v->row_i >= p->u.values.nrows)
        return LDB_DONE;
    row *r = scratch_row(o, &v->scratch, p->ncols);
    if (!r)
        return LDB_NOMEM;
    for (uint32_t c = 0; c < p->ncols; c++)
        if ((rc = op_eval(o, p->u.values.cells[(size_t)v->row_i * p->ncols + c], NULL,
                          &r->cols[c])))
            return rc;
    v->row_i++;
    *out = r;
    return LDB_ROW;
}

static int filter_next(struct op *o, row **out)
{
    const struct plan *p = o->p;
    const struct expr *pred = p->exec_pred_set ? p->exec_pred : p->u.pred;
    row *r;
    int rc;
    while ((rc = op_next(o->in, &r)) == LDB_ROW) {
        int t = 1;
        if (pred && (rc = op_truth(o, pred, r, &t)))
            return rc;
        if (t == 1) {
            *out = r;
            return LDB_ROW;
        }
    }
    return rc;
}

struct project_op {
    struct op base;
    row *scratch;
};

static void project_close(struct op *o)
{
    scratch_free(&((struct project_op *)o)->scratch);
}

static int project_next(struct op *o, row **out)
{
    struct project_op *pr = (struct project_op *)o;
    row *in;
    int rc = op_next(o->in, &in);
    if (rc != LDB_ROW)
        return rc;
    row *r = scratch_row(o, &pr->scratch, o->p->ncols);
    if (!r)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < o->p->ncols; i++)
        if ((rc = op_eval(o, o->p->u.exprs[i], in, &r->cols[i])))
            return rc;
    *out = r;
    return LDB_ROW;
}

/* ---- limit ------------------------------------------------------------------------------------------- */

struct limit_op {
    struct op base;
    int64_t limit;             /* -1: none */
    int64_t offset;
    int64_t end;               /* offset + limit, saturated at INT64_MAX */
    int64_t seen;
};

static int limit_value(struct op *o, const struct expr *e, int64_t *out)
{
    value v;
    int rc = op_eval(o, e, NULL, &v);
    if (rc)
        return rc;
    value num = v;
    if (value_type(&v) == LDB_TEXT) {
        size_t n;
        const char *p = value_bytes(&v, &n);
        if (!value_parse_number(p, n, &num))
            num = value_null();
    }
    /* a REAL counts when it is an integer in int64 range (2^63 is not) */
    bool ok = value_type(&num) == LDB_INTEGER ||
              (value_type(&num) == LDB_REAL && num.h.u.r >= -0x1p63 && num.h.u.r < 0x1p63 &&
               num.h.u.r == (double)(int64_t)num.h.u.r);
    if (ok)
        *out = value_type(&num) == LDB_INTEGER ? num.h.u.i : (int64_t)num.h.u.r;
    value_release(&v);
    if (!ok)
        return exec_error(o->x, LDB_ERROR, e->off, "LIMIT and OFFSET must be integers");
    return LDB_OK;
}

static int limit_open(struct op *o)
{
    struct limit_op *l = (struct limit_op *)o;
    l->seen = 0;
    l->offset = 0;
    int rc = limit_value(o, o->p->u.limit.limit, &l->limit);
    if (rc == LDB_OK && o->p->u.limit.offset)
        rc = limit_value(o, o->p->u.limit.offset, &l->offset);
    if (rc)
        return rc;
    if (l->limit < 0)
        l->limit = -1;
    if (l->offset < 0)
        l->offset = 0;
    l->end = l->limit < 0 || l->limit > INT64_MAX - l->offset ? INT64_MAX : l->offset + l->limit;
    if (l->limit >= 0 && o->in->p->kind == PLAN_SORT && !o->in->p->u.sort.presorted)
        op_sort_limit(o->in, (uint64_t)l->end);
    return LDB_OK;
}

static int limit_next(struct op *o, row **out)
{
    struct limit_op *l = (struct limit_op *)o;
    int rc;
    for (;;) {
        if (l->seen >= l->end)
            return LDB_DONE;
        if ((rc = op_next(o->in, out)) != LDB_ROW)
            return rc;
        if (l->seen++ >= l->offset)
            return LDB_ROW;
    }
}

/* ---- shared nodes ------------------------------------------------------------------------------------ */

struct shared_op {
    struct op base;
    struct shared_rows *sr;
    size_t pos;
};

static int fill_shared(struct exec *x, struct shared_rows *sr)
{
    int rc = op_open(sr->root);
    row *r;
    while (rc == LDB_OK && (rc = op_next(sr->root, &r)) == LDB_ROW) {
        if (vec_push(&sr->rows, r)) {
            rc = exec_nomem(x);
            break;
        }
        row_retain(r);
        rc = LDB_OK;
    }
    op_close(sr->root);
    if (rc != LDB_DONE)
        return rc;
    sr->filled = true;
    return LDB_OK;
}

static int shared_open(struct op *o)
{
    ((struct shared_op *)o)->pos = 0;
    return LDB_OK;
}

static int shared_next(struct op *o, row **out)
{
    struct shared_op *s = (struct shared_op *)o;
    int rc = op_tick(o);
    if (rc || (!s->sr->filled && (rc = fill_shared(o->x, s->sr))))
        return rc;
    if (s->pos >= s->sr->rows.len)
        return LDB_DONE;
    *out = s->sr->rows.data[s->pos++];
    return LDB_ROW;
}

static struct op *build_node(struct exec *x, const struct plan *p, const value *outer,
                             uint32_t nouter);

/* A reader of p's rows; p's own tree is built once per execution. */
static struct op *op_shared(struct exec *x, const struct plan *p)
{
    struct shared_rows *sr = x->shared;
    while (sr && sr->p != p)
        sr = sr->next;
    if (!sr) {
        if (!(sr = arena_calloc(&x->a, sizeof *sr))) {
            exec_nomem(x);
            return NULL;
        }
        sr->p = p;
        sr->next = x->shared;
        x->shared = sr;
        if (!(sr->root = build_node(x, p, NULL, 0)))
            return NULL;
    }
    struct shared_op *s = (struct shared_op *)op_alloc(x, p, sizeof *s, NULL, 0);
    if (!s)
        return NULL;
    s->sr = sr;
    s->base.open = shared_open;
    s->base.next = shared_next;
    return &s->base;
}

/* ---- building ---------------------------------------------------------------------------------------- */

static struct op *simple_op(struct exec *x, const struct plan *p, size_t size,
                            const value *outer, uint32_t nouter)
{
    struct op *o = op_alloc(x, p, size, outer, nouter);
    if (!o)
        return NULL;
    switch (p->kind) {
    case PLAN_VALUES:
        o->open = values_open;
        o->next = values_next;
        o->close = values_close;
        break;
    case PLAN_FILTER:
        o->next = filter_next;
        break;
    case PLAN_PROJECT:
        o->next = project_next;
        o->close = project_close;
        break;
    default: /* PLAN_LIMIT */
        o->open = limit_open;
        o->next = limit_next;
        break;
    }
    return o;
}

struct op *op_build(struct exec *x, const struct plan *p, const value *outer, uint32_t nouter)
{
    return p->shared ? op_shared(x, p) : build_node(x, p, outer, nouter);
}

/* The operator of p itself and its inputs' (op_build). */
static struct op *build_node(struct exec *x, const struct plan *p, const value *outer,
                             uint32_t nouter)
{
    struct op *o = NULL;
    switch (p->kind) {
    case PLAN_SCAN: o = op_scan(x, p, outer, nouter); break;
    case PLAN_VALUES: o = simple_op(x, p, sizeof(struct values_op), outer, nouter); break;
    case PLAN_FILTER: o = simple_op(x, p, sizeof(struct op), outer, nouter); break;
    case PLAN_PROJECT: o = simple_op(x, p, sizeof(struct project_op), outer, nouter); break;
    case PLAN_LIMIT: o = simple_op(x, p, sizeof(struct limit_op), outer, nouter); break;
    case PLAN_JOIN: o = op_join(x, p, outer, nouter); break;
    case PLAN_AGGREGATE: o = op_aggregate(x, p, outer, nouter); break;
    case PLAN_DISTINCT: o = op_distinct(x, p, outer, nouter); break;
    case PLAN_SORT: o = op_sort(x, p, outer, nouter); break;
    case PLAN_SETOP: o = op_setop(x, p, outer, nouter); break;
    }
    if (!o)
        return NULL;
    if ((p->in && !(o->in = op_build(x, p->in, outer, nouter))) ||
        (p->left && !(o->left = op_build(x, p->left, outer, nouter))) ||
        (p->right && !(o->right = op_build(x, p->right, outer, nouter))))
        return NULL;
    return o;
}

int exec_open(struct exec *x, const struct plan *p, struct op **out)
{
    struct op *o = op_build(x, p, NULL, 0);
    if (!o)
        return x->err->code ? x->err->code : LDB_NOMEM;
    int rc = op_open(o);
    if (rc)
        return rc;
    *out = o;
    return LDB_OK;
}

int exec_next(struct op *o, row **out)
{
    return op_next(o, out);
}
