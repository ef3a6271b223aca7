/*
 * build.c - plan and expression construction for the live compiler's
 * rewrites (see build.h). Every node lives in the plan_arena; a NULL
 * argument makes the constructor return NULL, so a whole tree is built
 * first and checked once.
 */
#include "live/build.h"

#include <string.h>

/* ---- expressions ------------------------------------------------------------ */

static expr *xb_node(plan_arena *pa, enum expr_kind kind, uint32_t nargs)
{
    expr *e = plan_alloc(pa, sizeof *e);
    if (!e)
        return NULL;
    e->kind = (uint8_t)kind;
    e->type = COL_ANY;
    e->aff = COL_ANY;
    e->aff2 = COL_ANY;
    e->coll = LDB_COLL_BINARY;
    e->nargs = nargs;
    if (nargs) {
        e->args = plan_alloc(pa, nargs * sizeof *e->args);
        if (!e->args)
            return NULL;
    }
    return e;
}

expr *xb_column(plan_arena *pa, uint32_t col, const struct plan_col *meta)
{
    expr *e = xb_node(pa, EXPR_COLUMN, 0);
    if (!e)
        return NULL;
    e->u.index = col;
    if (meta) {
        e->type = (uint8_t)meta->type;
        e->aff = (uint8_t)meta->aff;
        e->coll = (uint8_t)meta->coll;
    }
    return e;
}

expr *xb_const(plan_arena *pa, const value *v)
{
    expr *e = xb_node(pa, EXPR_CONST, 0);
    if (!e || plan_own_value(pa, v))
        return NULL;
    e->u.v = *v; /* the arena holds the reference */
    switch (value_type(v)) {
    case LDB_INTEGER: e->type = COL_INTEGER; break;
    case LDB_REAL: e->type = COL_REAL; break;
    case LDB_TEXT: e->type = COL_TEXT; break;
    case LDB_BOOLEAN: e->type = COL_BOOLEAN; break;
    default: break;
    }
    return e;
}

expr *xb_bool(plan_arena *pa, bool b)
{
    value v = value_bool(b);
    return xb_const(pa, &v);
}

expr *xb_unary(plan_arena *pa, enum expr_op op, expr *a)
{
    if (!a)
        return NULL;
    expr *e = xb_node(pa, EXPR_UNARY, 1);
    if (!e)
        return NULL;
    e->op = (uint8_t)op;
    e->args[0] = a;
    if (op == EOP_NOT || op == EOP_ISNULL || op == EOP_NOTNULL)
        e->type = COL_BOOLEAN;
    return e;
}

expr *xb_binary(plan_arena *pa, enum expr_op op, expr *a, expr *b)
{
    if (!a || !b)
        return NULL;
    expr *e = xb_node(pa, EXPR_BINARY, 2);
    if (!e)
        return NULL;
    e->op = (uint8_t)op;
    e->args[0] = a;
    e->args[1] = b;
    if (op >= EOP_EQ && op <= EOP_OR)
        e->type = COL_BOOLEAN;
    return e;
}

static int array_fn(struct eval_ctx *cx, const value *args, uint32_t nargs, value *out)
{
    (void)cx;
    return value_array(out, args, nargs);
}

static const struct func_def live_array_def = {
    .name = "live_capture_tuple",
    .min_args = 0,
    .max_args = -1,
    .flags = FUNC_DETERMINISTIC,
    .type = COL_ANY,
    .scalar = array_fn,
};

expr *xb_array(plan_arena *pa, expr **args, uint32_t n)
{
    expr *e = xb_node(pa, EXPR_CALL, n);
    if (!e)
        return NULL;
    e->u.fn = &live_array_def;
    for (uint32_t i = 0; i < n; i++) {
        if (!args[i])
            return NULL;
        e->args[i] = args[i];
    }
    return e;
}

expr *xb_field(plan_arena *pa, expr *array, uint32_t i)
{
    if (!array)
        return NULL;
    expr *e = xb_node(pa, EXPR_FIELD, 1);
    if (!e)
        return NULL;
    e->args[0] = array;
    e->u.index = i;
    return e;
}

expr *xb_case(plan_arena *pa, expr **conds, expr **vals, uint32_t n, expr *dflt)
{
    expr *e = xb_node(pa, EXPR_CASE, 2 * n + (dflt ? 1 : 0));
    if (!e)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!conds[i] || !vals[i])
            return NULL;
        e->args[2 * i] = conds[i];
        e->args[2 * i + 1] = vals[i];
    }
    if (dflt)
        e->args[2 * n] = dflt;
    e->u.c.has_base = false;
    e->u.c.has_else = dflt != NULL;
    return e;
}

/* ---- rewriting ----------------------------------------------------------------- */

expr *xb_rewrite(plan_arena *pa, const expr *e, const struct xb_remap *m)
{
    if (e->kind == EXPR_COLUMN)
        return m->col(m->ctx, e->u.index);
    if (e->kind == EXPR_OUTER && m->outer)
        return m->outer(m->ctx, e->u.index);
    expr *c = plan_alloc(pa, sizeof *c);
    if (!c)
        return NULL;
    *c = *e;
    if (e->nargs) {
        c->args = plan_alloc(pa, e->nargs * sizeof *c->args);
        if (!c->args)
            return NULL;
        for (uint32_t i = 0; i < e->nargs; i++)
            if (!(c->args[i] = xb_rewrite(pa, e->args[i], m)))
                return NULL;
    }
    if (e->kind == EXPR_SUBQUERY && e->u.sq.ncaptures) {
        c->u.sq.captures = plan_alloc(pa, e->u.sq.ncaptures * sizeof(expr *));
        if (!c->u.sq.captures)
            return NULL;
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            if (!(c->u.sq.captures[i] = xb_rewrite(pa, e->u.sq.captures[i], m)))
                return NULL;
    }
    return c;
}

struct shift_ctx {
    plan_arena *pa;
    const struct plan *in;
    int64_t delta;
};

static expr *shift_col(void *ctx, uint32_t c)
{
    struct shift_ctx *s = ctx;
    return xb_column(s->pa, (uint32_t)((int64_t)c + s->delta), s->in ? &s->in->cols[c] : NULL);
}

expr *xb_shift(plan_arena *pa, const expr *e, const struct plan *in, int64_t delta)
{
    struct shift_ctx s = { pa, in, delta };
    struct xb_remap m = { shift_col, NULL, &s };
    return xb_rewrite(pa, e, &m);
}

struct past_ctx {
    plan_arena *pa;
    const struct plan *both;
    uint32_t nl, lx;
};

static expr *past_col(void *ctx, uint32_t c)
{
    struct past_ctx *s = ctx;
    uint32_t nc = c < s->nl ? c : c + s->lx;
    return xb_column(s->pa, nc, &s->both->cols[nc]);
}

expr *xb_residual_past(plan_arena *pa, const expr *e, const struct plan *both, uint32_t nl,
                       uint32_t lx)
{
    struct past_ctx s = { pa, both, nl, lx };
    struct xb_remap m = { past_col, NULL, &s };
    return xb_rewrite(pa, e, &m);
}

bool xb_has_subquery(const expr *e)
{
    if (e->kind == EXPR_SUBQUERY)
        return true;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (xb_has_subquery(e->args[i]))
            return true;
    return false;
}

bool xb_reads_outer(const expr *e)
{
    if (e->kind == EXPR_OUTER)
        return true;
    if (e->kind == EXPR_SUBQUERY)
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            if (xb_reads_outer(e->u.sq.captures[i]))
                return true;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (xb_reads_outer(e->args[i]))
            return true;
    return false;
}

static bool list_reads_outer(expr *const *es, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (es[i] && xb_reads_outer(es[i]))
            return true;
    return false;
}

bool pb_reads_outer(const struct plan *p)
{
    if (p->shared) /* a shared body reads no capture (plan.h) */
        return false;
    switch (p->kind) {
    case PLAN_SCAN:
        return false;
    case PLAN_VALUES:
        return list_reads_outer(p->u.values.cells, p->u.values.nrows * p->ncols);
    case PLAN_FILTER:
        return xb_reads_outer(p->u.pred) || pb_reads_outer(p->in);
    case PLAN_PROJECT:
        return list_reads_outer(p->u.exprs, p->ncols) || pb_reads_outer(p->in);
    case PLAN_JOIN:
        for (uint32_t i = 0; i < p->u.join.nkeys; i++)
            if (xb_reads_outer(p->u.join.keys[i].left) ||
                xb_reads_outer(p->u.join.keys[i].right))
                return true;
        return (p->u.join.residual && xb_reads_outer(p->u.join.residual)) ||
               pb_reads_outer(p->left) || pb_reads_outer(p->right);
    case PLAN_AGGREGATE:
        if (list_reads_outer(p->u.agg.groups, p->u.agg.ngroups))
            return true;
        for (uint32_t i = 0; i < p->u.agg.naggs; i++)
            if (list_reads_outer(p->u.agg.aggs[i].args, p->u.agg.aggs[i].nargs) ||
                (p->u.agg.aggs[i].filter && xb_reads_outer(p->u.agg.aggs[i].filter)))
                return true;
        return pb_reads_outer(p->in);
    case PLAN_DISTINCT:
        return pb_reads_outer(p->in);
    case PLAN_SORT:
        for (uint32_t i = 0; i < p->u.sort.nkeys; i++)
            if (xb_reads_outer(p->u.sort.keys[i].e))
                return true;
        return pb_reads_outer(p->in);
    case PLAN_LIMIT:
        return (p->u.limit.limit && xb_reads_outer(p->u.limit.limit)) ||
               (p->u.limit.offset && xb_reads_outer(p->u.limit.offset)) ||
               pb_reads_outer(p->in);
    case PLAN_SETOP:
        return pb_reads_outer(p->left) || pb_reads_outer(p->right);
    }
    return true;
}

/* ---- plans ---------------------------------------------------------------------- */

void *pb_array(plan_arena *pa, const void *src, size_t n, size_t room, size_t size)
{
    void *a = plan_alloc(pa, (room ? room : 1) * size);
    if (a && n)
        memcpy(a, src, n * size);
    return a;
}

void pb_copy_cols(struct plan_col *dst, const struct plan *p)
{
    if (p->ncols) /* a plan without columns (SELECT 1's source) may have none allocated */
        memcpy(dst, p->cols, p->ncols * sizeof *dst);
}

static void col_from_expr(struct plan_col *c, const struct plan *in, const expr *e)
{
    if (e->kind == EXPR_COLUMN && in && e->u.index < in->ncols) {
        *c = in->cols[e->u.index];
        c->hidden = false;
        return;
    }
    memset(c, 0, sizeof *c);
    c->name = "?column?";
    c->type = (enum col_type)e->type;
    c->aff = (enum col_type)e->aff;
    c->coll = (enum ldb_collation)e->coll;
}

struct plan *pb_project(plan_arena *pa, struct plan *in, expr **exprs, uint32_t n,
                        const struct plan_col *meta)
{
    if (!in)
        return NULL;
    struct plan *p = plan_new(pa, PLAN_PROJECT, n);
    if (!p)
        return NULL;
    p->in = in;
    p->u.exprs = plan_alloc(pa, (n ? n : 1) * sizeof *p->u.exprs);
    if (!p->u.exprs)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!exprs[i])
            return NULL;
        p->u.exprs[i] = exprs[i];
        if (meta)
            p->cols[i] = meta[i];
        else
            col_from_expr(&p->cols[i], in, exprs[i]);
    }
    return p;
}

struct plan *pb_prefix(plan_arena *pa, struct plan *in, uint32_t n)
{
    if (!in)
        return NULL;
    expr **es = plan_alloc(pa, (n ? n : 1) * sizeof *es);
    if (!es)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        if (!(es[i] = xb_column(pa, i, &in->cols[i])))
            return NULL;
    return pb_project(pa, in, es, n, in->cols);
}

struct plan *pb_filter(plan_arena *pa, struct plan *in, expr *pred)
{
    if (!in || !pred)
        return NULL;
    struct plan *p = plan_new(pa, PLAN_FILTER, in->ncols);
    if (!p)
        return NULL;
    p->in = in;
    p->u.pred = pred;
    pb_copy_cols(p->cols, in);
    return p;
}

struct plan *pb_distinct(plan_arena *pa, struct plan *in)
{
    if (!in)
        return NULL;
    struct plan *p = plan_new(pa, PLAN_DISTINCT, in->ncols);
    if (!p)
        return NULL;
    p->in = in;
    pb_copy_cols(p->cols, in);
    return p;
}

struct plan *pb_join(plan_arena *pa, enum join_kind kind, struct plan *left,
                     struct plan *right, struct join_key *keys, uint32_t nkeys,
                     expr *residual)
{
    if (!left || !right)
        return NULL;
    bool left_only = kind == JOIN_SEMI || kind == JOIN_ANTI;
    uint32_t n = left->ncols + (left_only ? 0 : right->ncols);
    struct plan *p = plan_new(pa, PLAN_JOIN, n);
    if (!p)
        return NULL;
    p->left = left;
    p->right = right;
    p->u.join.kind = kind;
    p->u.join.nkeys = nkeys;
    if (nkeys) {
        p->u.join.keys = plan_alloc(pa, nkeys * sizeof *keys);
        if (!p->u.join.keys)
            return NULL;
        for (uint32_t i = 0; i < nkeys; i++) {
            if (!keys[i].left || !keys[i].right)
                return NULL;
            p->u.join.keys[i] = keys[i];
        }
    }
    p->u.join.residual = residual;
    pb_copy_cols(p->cols, left);
    if (!left_only)
        pb_copy_cols(p->cols + left->ncols, right);
    return p;
}

struct plan *pb_aggregate(plan_arena *pa, struct plan *in, expr **groups,
                          uint32_t ngroups, struct plan_agg *aggs, uint32_t naggs)
{
    if (!in)
        return NULL;
    struct plan *p = plan_new(pa, PLAN_AGGREGATE, ngroups + naggs);
    if (!p)
        return NULL;
    p->in = in;
    p->u.agg.ngroups = ngroups;
    p->u.agg.naggs = naggs;
    p->u.agg.groups = plan_alloc(pa, (ngroups ? ngroups : 1) * sizeof(expr *));
    p->u.agg.aggs = plan_alloc(pa, (naggs ? naggs : 1) * sizeof *aggs);
    if (!p->u.agg.groups || !p->u.agg.aggs)
        return NULL;
    for (uint32_t i = 0; i < ngroups; i++) {
        if (!groups[i])
            return NULL;
        p->u.agg.groups[i] = groups[i];
        col_from_expr(&p->cols[i], in, groups[i]);
    }
    for (uint32_t i = 0; i < naggs; i++) {
        p->u.agg.aggs[i] = aggs[i];
        memset(&p->cols[ngroups + i], 0, sizeof(struct plan_col));
        p->cols[ngroups + i].name = aggs[i].fn->name;
        p->cols[ngroups + i].type = aggs[i].fn->type;
    }
    return p;
}
