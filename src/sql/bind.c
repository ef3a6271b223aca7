/*
 * bind.c - the binder's entry points, its error and allocation helpers,
 * and the binding of data-changing statements (INSERT with upserts,
 * UPDATE, DELETE). Queries are bound in bind_query.c, expressions in
 * bind_expr.c.
 */
#include "sql/bind_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- errors and memory ------------------------------------------------------------ */

int bind_error(binder *b, int code, uint32_t off, const char *fmt, ...)
{
    struct eval_error *err = b->env->err;
    if (err->code)
        return err->code; /* the first error wins */
    size_t k = 0;
    err->code = code;
    err->has_off = true;
    err->off = off;
    if (b->view_depth) {
        /* a position inside a view's text means nothing to the caller */
        err->off = b->view_off;
        int n = snprintf(err->msg, sizeof err->msg, "in view %s: ", b->view_name);
        k = n < 0 ? 0 : (size_t)n < sizeof err->msg ? (size_t)n : sizeof err->msg - 1;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + k, sizeof err->msg - k, fmt, ap);
    va_end(ap);
    return code;
}

int bind_nomem(binder *b)
{
    struct eval_error *err = b->env->err;
    if (!err->code) {
        err->code = LDB_NOMEM;
        err->has_off = false;
        snprintf(err->msg, sizeof err->msg, "out of memory");
    }
    return LDB_NOMEM;
}

bool bind_enter(binder *b, uint32_t off)
{
    if (b->depth >= SQL_MAX_DEPTH) {
        bind_error(b, LDB_ERROR, off,
                   "query too complex: more than %d levels of nesting, compound terms or "
                   "joins, views and CTEs included",
                   SQL_MAX_DEPTH);
        return false;
    }
    b->depth++;
    return true;
}

void bind_leave(binder *b)
{
    b->depth--;
}

void *balloc(binder *b, size_t n)
{
    void *p = plan_alloc(b->pa, n);
    if (!p)
        bind_nomem(b);
    return p;
}

char *bstrdup(binder *b, const char *s, size_t n)
{
    char *p = balloc(b, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

bool bpush(binder *b, void **items, uint32_t *n, uint32_t *cap, size_t size,
           const void *item)
{
    if (*n == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 4;
        void *grown = balloc(b, ncap * size);
        if (!grown)
            return false;
        if (*n)
            memcpy(grown, *items, *n * size);
        *items = grown;
        *cap = ncap;
    }
    memcpy((char *)*items + *n * size, item, size);
    (*n)++;
    return true;
}

static void binder_init(binder *b, struct bind_env *env, const sql_ast *ast)
{
    memset(b, 0, sizeof *b);
    b->env = env;
    b->pa = env->pa;
    b->store = env->store;
    b->src = ast;
}

/* ---- DML helpers -------------------------------------------------------------------- */

static struct table *dml_target(binder *b, const ast_qname *q)
{
    struct table *t = store_find_table(b->store, q->name.str);
    if (!t) {
        bind_error(b, LDB_ERROR, q->name.off, "no such table: %s", q->name.str);
        return NULL;
    }
    if (table_is_view(t)) {
        bind_error(b, LDB_ERROR, q->name.off, "cannot modify %s because it is a view",
                   q->name.str);
        return NULL;
    }
    if (table_is_view_store(t)) {
        bind_error(b, LDB_ERROR, q->name.off,
                   "cannot modify materialized view %s: only its maintenance writes it",
                   q->name.str);
        return NULL;
    }
    return t;
}

static bool no_returning(binder *b, const ast_result_list *r)
{
    if (r->n == 0)
        return true;
    bind_error(b, LDB_UNSUPPORTED, r->items[0].off, "RETURNING is not supported");
    return false;
}

/* A declared (visible) column of t by name. */
static int visible_column(binder *b, struct table *t, const ast_name *n)
{
    const struct schema *sc = table_schema(t);
    int c = schema_column(sc, n->str);
    if (c < 0) {
        bind_error(b, LDB_ERROR, n->off, "table %s has no column named %s", table_name(t),
                   n->str);
        return -1;
    }
    if (sc->cols[c].hidden) {
        bind_error(b, LDB_UNSUPPORTED, n->off,
                   "the hidden rowid of %s cannot be assigned; declare an INTEGER PRIMARY KEY",
                   table_name(t));
        return -1;
    }
    return c;
}

/* SET a = x, b = y: columns and expressions bound in b->scope. */
static bool bind_assignments(binder *b, struct table *t, const ast_assign_list *set,
                             uint32_t *n, uint32_t **cols, struct expr ***exprs)
{
    *n = set->n;
    *cols = balloc(b, (set->n + 1) * sizeof **cols);
    *exprs = balloc(b, (set->n + 1) * sizeof **exprs);
    if (!*cols || !*exprs)
        return false;
    for (uint32_t i = 0; i < set->n; i++) {
        const ast_assign *a = &set->items[i];
        if (a->parenthesized) {
            bind_error(b, LDB_UNSUPPORTED, a->cols.items[0].off,
                       "assigning a row value (SET (a, b) = ...) is not supported");
            return false;
        }
        int c = visible_column(b, t, &a->cols.items[0]);
        if (c < 0)
            return false;
        (*cols)[i] = (uint32_t)c;
        if (!((*exprs)[i] = bind_expr(b, a->value)))
            return false;
    }
    return true;
}

/* SCAN(t) [FILTER where] in a fresh scope made current. */
static struct plan *target_rows(binder *b, struct table *t, const ast_name *alias,
                                const ast_expr *where)
{
    struct scope *s = scope_new(b, NULL, NULL);
    struct plan *scan = s ? bind_table_scan(b, t, alias->str) : NULL;
    if (!scan || !scope_add(b, s, alias->str ? alias->str : table_name(t),
                            alias->str ? alias->off : 0, alias->str != NULL, scan))
        return NULL;
    s->from = scan;
    b->scope = s;
    if (!where)
        return scan;
    struct expr *pred = bind_expr(b, where);
    struct plan *f = pred ? plan_new(b->pa, PLAN_FILTER, scan->ncols) : NULL;
    if (!f) {
        if (pred)
            bind_nomem(b);
        return NULL;
    }
    memcpy(f->cols, scan->cols, scan->ncols * sizeof *f->cols);
    f->in = scan;
    f->u.pred = pred;
    return f;
}

static bool with_ctes(binder *b, const ast_with *w, struct cte_frame *frame)
{
    if (w->n == 0)
        return true;
    *frame = (struct cte_frame){ w, w->n, b->src, b->ctes };
    b->ctes = frame;
    return true;
}

/* ---- INSERT ------------------------------------------------------------------------------ */

/* Whether evaluating a plan reads table t (the INSERT ... SELECT snapshot
 * rule). Each shared node is looked into once: seen is indexed by its id. */
struct reads {
    const struct table *t;
    bool *seen;
};

static bool plan_reads(struct reads *w, const struct plan *p);

static bool expr_reads(struct reads *w, const struct expr *e)
{
    if (!e)
        return false;
    if (e->kind == EXPR_SUBQUERY && plan_reads(w, e->u.sq.plan))
        return true;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (expr_reads(w, e->args[i]))
            return true;
    return false;
}

static bool expr_reads_fn(void *ctx, const struct expr *e)
{
    return expr_reads(ctx, e);
}

static bool node_reads(struct reads *w, const struct plan *p)
{
    if (p->kind == PLAN_SCAN && p->u.scan.table == w->t)
        return true;
    return plan_node_exprs(p, expr_reads_fn, w);
}

static bool plan_reads(struct reads *w, const struct plan *p)
{
    if (!p)
        return false;
    if (p->shared) {
        if (w->seen[p->shared->id])
            return false; /* it did not, or the walk would have stopped */
        w->seen[p->shared->id] = true;
    }
    return node_reads(w, p) || plan_reads(w, p->in) || plan_reads(w, p->left) ||
           plan_reads(w, p->right);
}

static bool bind_insert_columns(binder *b, const ast_insert *ins, struct bound_insert *out,
                                uint32_t *ncols, uint32_t **cols)
{
    const struct schema *sc = table_schema(out->table);
    *ncols = ins->cols.n ? ins->cols.n : sc->nvisible;
    *cols = balloc(b, (*ncols + 1) * sizeof **cols);
    if (!*cols)
        return false;
    for (uint32_t i = 0; i < *ncols; i++) {
        int c = (int)i;
        if (ins->cols.n && (c = visible_column(b, out->table, &ins->cols.items[i])) < 0)
            return false;
        for (uint32_t j = 0; j < i; j++)
            if ((*cols)[j] == (uint32_t)c) {
                bind_error(b, LDB_ERROR, ins->cols.items[i].off, "column %s is listed twice",
                           sc->cols[c].name);
                return false;
            }
        (*cols)[i] = (uint32_t)c;
    }
    return true;
}

static bool bind_insert_source(binder *b, const ast_insert *ins, struct bound_insert *out)
{
    uint32_t ncols, *cols;
    if (!bind_insert_columns(b, ins, out, &ncols, &cols))
        return false;
    const struct schema *sc = table_schema(out->table);
    if (!(out->source_col = balloc(b, sc->nvisible * sizeof *out->source_col)))
        return false;
    for (uint32_t i = 0; i < sc->nvisible; i++)
        out->source_col[i] = UINT32_MAX;
    if (!ins->source)
        return true;
    if (!(out->source = bind_select(b, ins->source, NULL, NULL)))
        return false;
    if (out->source->ncols != ncols) {
        if (ins->cols.n)
            bind_error(b, LDB_ERROR, ins->source->off, "%u values for %u columns",
                       out->source->ncols, ncols);
        else
            bind_error(b, LDB_ERROR, ins->source->off,
                       "table %s has %u columns but %u values were supplied",
                       table_name(out->table), ncols, out->source->ncols);
        return false;
    }
    for (uint32_t i = 0; i < ncols; i++)
        out->source_col[cols[i]] = i;
    struct reads w = { out->table, balloc(b, b->pa->nshared + 1) };
    if (!w.seen)
        return false;
    out->reads_target = plan_reads(&w, out->source);
    return true;
}

static bool bind_upsert_target(binder *b, struct table *t, const ast_upsert *u,
                               struct bound_upsert *out)
{
    if (u->target_where) {
        bind_error(b, LDB_UNSUPPORTED, u->target_where->off,
                   "a WHERE clause on an ON CONFLICT target is not supported");
        return false;
    }
    out->ntarget = u->target.n;
    if (u->target.n && !(out->target = balloc(b, u->target.n * sizeof *out->target)))
        return false;
    for (uint32_t i = 0; i < u->target.n; i++) {
        const ast_expr *x = u->target.items[i].expr;
        if (x->kind == AST_COLLATE)
            x = x->u.collate.operand;
        if (x->kind != AST_COLUMN || x->u.column.table.str) {
            bind_error(b, LDB_ERROR, x->off, "an ON CONFLICT target must be a list of columns");
            return false;
        }
        int c = visible_column(b, t, &x->u.column.column);
        if (c < 0)
            return false;
        out->target[i] = (uint32_t)c;
    }
    return true;
}

/* DO UPDATE reads the existing row, then "excluded". */
static bool bind_upsert(binder *b, const ast_insert *ins, const ast_upsert *u,
                        struct bound_upsert *out, struct table *t)
{
    if (!bind_upsert_target(b, t, u, out))
        return false;
    out->do_update = u->do_update;
    if (!u->do_update)
        return true;
    struct scope *s = scope_new(b, NULL, NULL);
    struct plan *cur = s ? bind_table_scan(b, t, ins->alias.str) : NULL;
    struct plan *exc = cur ? bind_table_scan(b, t, "excluded") : NULL;
    const char *name = ins->alias.str ? ins->alias.str : table_name(t);
    if (!exc || !scope_add(b, s, name, ins->alias.off, ins->alias.str != NULL, cur) ||
        !scope_add(b, s, "excluded", u->off, false, exc))
        return false;
    /* an unqualified name means the existing row; excluded.x must be written */
    struct scope_item *ex_item = &s->items[1];
    if (!(ex_item->merged = balloc(b, exc->ncols * sizeof(bool))))
        return false;
    for (uint32_t i = 0; i < exc->ncols; i++)
        ex_item->merged[i] = true;
    struct scope *save = b->scope;
    b->scope = s;
    bool ok = bind_assignments(b, t, &u->set, &out->nset, &out->set_cols, &out->set_exprs) &&
              (!u->where || (out->where = bind_expr(b, u->where)));
    b->scope = save;
    return ok;
}

static int bind_insert(binder *b, const ast_insert *ins, struct bound_insert *out)
{
    struct cte_frame frame;
    if (!no_returning(b, &ins->returning) || !with_ctes(b, &ins->with, &frame) ||
        !(out->table = dml_target(b, &ins->table)) || !bind_insert_source(b, ins, out))
        return b->env->err->code;
    out->or_action = ins->or_action;
    out->nupserts = ins->nupsert;
    if (ins->nupsert && !(out->upserts = balloc(b, ins->nupsert * sizeof *out->upserts)))
        return LDB_NOMEM;
    for (uint32_t i = 0; i < ins->nupsert; i++) {
        if (!bind_upsert(b, ins, &ins->upserts[i], &out->upserts[i], out->table))
            return b->env->err->code;
        if (i + 1 < ins->nupsert && out->upserts[i].ntarget == 0) {
            bind_error(b, LDB_ERROR, ins->upserts[i].off,
                       "only the last ON CONFLICT clause may omit the conflict target");
            return LDB_ERROR;
        }
    }
    return LDB_OK;
}

/* ---- UPDATE and DELETE ---------------------------------------------------------------------- */

static int bind_update(binder *b, const ast_update *up, struct bound_update *out)
{
    struct cte_frame frame;
    if (!no_returning(b, &up->returning) || !with_ctes(b, &up->with, &frame) ||
        !(out->table = dml_target(b, &up->table)) ||
        !(out->rows = target_rows(b, out->table, &up->alias, up->where)) ||
        !bind_assignments(b, out->table, &up->set, &out->nset, &out->set_cols, &out->set_exprs))
        return b->env->err->code;
    out->or_action = up->or_action;
    return LDB_OK;
}

static int bind_delete(binder *b, const ast_delete *del, struct bound_delete *out)
{
    struct cte_frame frame;
    if (!no_returning(b, &del->returning) || !with_ctes(b, &del->with, &frame) ||
        !(out->table = dml_target(b, &del->table)) ||
        !(out->rows = target_rows(b, out->table, &del->alias, del->where)))
        return b->env->err->code;
    return LDB_OK;
}

/* ---- entry points ------------------------------------------------------------------------------ */

int bind_statement(struct bind_env *env, const sql_ast *ast, const ast_stmt *st,
                   bound_stmt *out)
{
    binder b;
    binder_init(&b, env, ast);
    memset(out, 0, sizeof *out);
    out->kind = st->kind;
    switch (st->kind) {
    case AST_STMT_SELECT:
        if (env->live && st->u.select->body->kind == AST_BODY_SELECT)
            b.live_list = &st->u.select->body->u.select.cols;
        out->u.select = bind_select(&b, st->u.select, NULL, NULL);
        return out->u.select ? LDB_OK : env->err->code;
    case AST_STMT_INSERT:
        return bind_insert(&b, &st->u.insert, &out->u.insert);
    case AST_STMT_UPDATE:
        return bind_update(&b, &st->u.update, &out->u.update);
    case AST_STMT_DELETE:
        return bind_delete(&b, &st->u.delete_, &out->u.delete_);
    default:
        return bind_error(&b, LDB_INTERNAL, st->off, "statement cannot be bound");
    }
}

int bind_query(struct bind_env *env, const sql_ast *ast, const ast_select *sel,
               struct plan **out)
{
    binder b;
    binder_init(&b, env, ast);
    *out = bind_select(&b, sel, NULL, NULL);
    return *out ? LDB_OK : env->err->code;
}

int bind_constant(struct bind_env *env, const sql_ast *ast, const ast_expr *e, value *out)
{
    binder b;
    binder_init(&b, env, ast);
    if (!(b.scope = scope_new(&b, NULL, NULL)))
        return LDB_NOMEM;
    struct expr *x = bind_expr(&b, e);
    if (!x)
        return env->err->code;
    if (x->kind != EXPR_CONST) {
        if (!expr_is_constant(x))
            return bind_error(&b, LDB_UNSUPPORTED, e->off,
                              "a DEFAULT value must be a constant expression");
        /* constant but its evaluation failed: report that error */
        struct eval_ctx cx = { .err = env->err };
        int rc = expr_eval(x, &cx, out);
        if (rc == LDB_OK)
            return LDB_OK;
        env->err->off = e->off;
        env->err->has_off = true;
        return rc;
    }
    *out = value_copy(&x->u.v);
    return LDB_OK;
}
