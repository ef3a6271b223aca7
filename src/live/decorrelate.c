/*
 * decorrelate.c - subqueries become joins, so a live query is one
 * dataflow graph with no per-row re-evaluation.
 *
 * A subquery S in an expression of node N (over input I) depends on I
 * only through its capture list (expr.h). For S:
 *   1. the domain D = DISTINCT of the capture tuples of I's rows, one
 *      column holding an ARRAY of the capture values (never NULL, and
 *      equal arrays are equal tuples, NULLs included);
 *   2. P' = S's plan evaluated for every tuple of D at once: the "domain
 *      push" below rewrites the plan so that its output starts with the
 *      domain column and every capture reference reads it; a subtree that
 *      reads no capture is crossed with D, and an equality between an
 *      expression of the captures and one of the columns becomes a join
 *      key instead of a filter;
 *   3. I joined (LEFT) with what P' says per tuple: the scalar value (when
 *      S gives at most one row per tuple), an existence flag, or for IN
 *      the match flag and the row and non-NULL counts that SQL's
 *      three-valued IN needs;
 *   4. S replaced by an expression over the new columns.
 * Nested subqueries inside S are handled after the push, when their
 * captures have become plain columns. The result is the unnesting of
 * Neumann and Kemper ("Unnesting Arbitrary Queries"), specialized to what
 * the binder produces.
 *
 * Every rewrite builds new nodes in the query's plan arena and keeps the
 * output layout of the node it replaces.
 */
#include "live/live_internal.h"

#include "base/mem.h"
#include "base/ptrmap.h"
#include "live/build.h"
#include "sql/func.h"

#include <stdio.h>
#include <string.h>

/* The plan is a DAG (an attached subquery's domain reads the node's
 * input, which the node's rewrite also reads; CTE and view bodies are
 * shared), so every reference to a node must get the same rewrite, made
 * once, and a rewrite is its own rewrite: done maps a node to it. */
struct dc {
    struct live_program *prog;
    plan_arena *pa;
    struct eval_error *err;
    ptrmap done;
    ptrmap single;  /* shared node -> at_most_one_row: 1 false, 2 true */
};

static int dc_fail(struct dc *d, int code, const char *msg)
{
    if (d->err->code == LDB_OK) {
        d->err->code = code;
        snprintf(d->err->msg, sizeof d->err->msg, "%s", msg);
    }
    return code;
}

static int dc_plan(struct dc *d, struct plan *p, struct plan **out);

/* ---- the domain push ------------------------------------------------------------ */

/* Remaps an expression of a node whose input gained the domain column in
 * front (shift: how many domain columns precede the input's own). */
struct push_remap {
    plan_arena *pa;
    const struct plan *in;  /* the new input, for column metadata */
    uint32_t shift;
    uint32_t dcol;          /* the domain column in the new input */
};

static expr *push_col(void *ctx, uint32_t c)
{
    struct push_remap *m = ctx;
    return xb_column(m->pa, c + m->shift, &m->in->cols[c + m->shift]);
}

static expr *push_outer(void *ctx, uint32_t j)
{
    struct push_remap *m = ctx;
    return xb_field(m->pa, xb_column(m->pa, m->dcol, &m->in->cols[m->dcol]), j);
}

static expr *remap_pushed(plan_arena *pa, const expr *e, const struct plan *in,
                          uint32_t shift, uint32_t dcol)
{
    struct push_remap m = { pa, in, shift, dcol };
    struct xb_remap r = { push_col, push_outer, &m };
    return xb_rewrite(pa, e, &r);
}

static int remap_list(plan_arena *pa, expr **src, uint32_t n, expr **dst,
                      const struct plan *in, uint32_t shift)
{
    for (uint32_t i = 0; i < n; i++)
        if (!(dst[i] = remap_pushed(pa, src[i], in, shift, 0)))
            return LDB_NOMEM;
    return LDB_OK;
}

static expr *domain_col(plan_arena *pa, const struct plan *p)
{
    return xb_column(pa, 0, &p->cols[0]);
}

/* Which columns e reads: column 0 (the domain: captures) and others. */
static void columns_read(const expr *e, bool *zero, bool *other)
{
    if (e->kind == EXPR_COLUMN) {
        *(e->u.index == 0 ? zero : other) = true;
        return;
    }
    if (e->kind == EXPR_SUBQUERY)
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            columns_read(e->u.sq.captures[i], zero, other);
    for (uint32_t i = 0; i < e->nargs; i++)
        columns_read(e->args[i], zero, other);
}

/* True when e is computed from the capture tuple alone. */
static bool reads_domain_only(const expr *e)
{
    bool zero = false, other = false;
    columns_read(e, &zero, &other);
    return zero && !other && !xb_has_subquery(e) && !(e->flags & EXPR_NONDET);
}

static bool reads_column_zero(const expr *e)
{
    bool zero = false, other = false;
    columns_read(e, &zero, &other);
    return zero;
}

/* Splits pred into conjuncts. */
static void conjuncts(expr *e, expr **out, uint32_t *n, uint32_t max)
{
    if (e->kind == EXPR_BINARY && e->op == EOP_AND && *n + 1 < max) {
        conjuncts(e->args[0], out, n, max);
        conjuncts(e->args[1], out, n, max);
        return;
    }
    if (*n < max)
        out[(*n)++] = e;
}

/*
 * FILTER(CROSS(D, X), pred) where conjuncts "expression of the captures =
 * expression over X" become join keys of JOIN(D, X). pred reads [d] ++
 * X's columns.
 */
static struct plan *filter_to_join(plan_arena *pa, struct plan *cross, expr *pred)
{
    expr *cs[64];
    uint32_t n = 0;
    conjuncts(pred, cs, &n, 64);
    struct join_key keys[64];
    expr *rest = NULL;
    uint32_t nk = 0;
    struct plan *x = cross->right;
    for (uint32_t i = 0; i < n; i++) {
        expr *c = cs[i];
        if (c->kind == EXPR_BINARY && c->op == EOP_EQ) {
            expr *a = c->args[0], *b = c->args[1];
            if (!reads_domain_only(a) && reads_domain_only(b)) {
                expr *t = a;
                a = b;
                b = t;
            }
            if (reads_domain_only(a) && !reads_column_zero(b) && !xb_has_subquery(b) &&
                !(b->flags & EXPR_NONDET)) {
                keys[nk].left = a; /* reads column 0 of D: the same position */
                keys[nk].right = xb_shift(pa, b, cross, -1); /* b reads [d] ++ X */
                keys[nk].aff = (enum col_type)c->aff;
                keys[nk].coll = (enum ldb_collation)c->coll;
                if (!keys[nk].right)
                    return NULL;
                nk++;
                continue;
            }
        }
        rest = rest ? xb_binary(pa, EOP_AND, rest, c) : c;
        if (!rest)
            return NULL;
    }
    if (nk == 0)
        return pb_filter(pa, cross, pred);
    struct plan *j = pb_join(pa, JOIN_INNER, cross->left, x, keys, nk, NULL);
    return rest ? pb_filter(pa, j, rest) : j;
}

static struct plan *push_domain(struct dc *d, struct plan *p, struct plan *dom);

static struct plan *cross_domain(plan_arena *pa, struct plan *dom, struct plan *p)
{
    return pb_join(pa, JOIN_CROSS, dom, p, NULL, 0, NULL);
}

static struct plan *push_filter(struct dc *d, struct plan *p, struct plan *dom)
{
    struct plan *x = push_domain(d, p->in, dom);
    if (!x)
        return NULL;
    expr *pred = remap_pushed(d->pa, p->u.pred, x, 1, 0);
    if (!pred)
        return NULL;
    if (x->kind == PLAN_JOIN && x->u.join.kind == JOIN_CROSS && x->left == dom)
        return filter_to_join(d->pa, x, pred);
    return pb_filter(d->pa, x, pred);
}

static struct plan *push_project(struct dc *d, struct plan *p, struct plan *dom)
{
    struct plan *x = push_domain(d, p->in, dom);
    if (!x)
        return NULL;
    uint32_t n = p->ncols + 1;
    expr **es = plan_alloc(d->pa, n * sizeof *es);
    struct plan_col *meta = plan_alloc(d->pa, n * sizeof *meta);
    if (!es || !meta || !(es[0] = domain_col(d->pa, x)))
        return NULL;
    meta[0] = x->cols[0];
    memcpy(meta + 1, p->cols, p->ncols * sizeof *meta);
    if (remap_list(d->pa, p->u.exprs, p->ncols, es + 1, x, 1))
        return NULL;
    return pb_project(d->pa, x, es, n, meta);
}

/* The value an aggregate gives for an empty group (count 0, total 0.0,
 * NULL for the others). */
static int empty_aggregate(const struct plan_agg *a, value *out)
{
    agg_inst ai;
    int rc = agg_inst_init(&ai, a->fn->agg, a->coll, a->distinct,
                           value_is_null(&a->sep) ? NULL : &a->sep);
    if (rc)
        return rc;
    void *st = mem_alloc(agg_state_size(&ai));
    if (!st) {
        agg_inst_free(&ai);
        return LDB_NOMEM;
    }
    agg_init(&ai, st);
    rc = agg_finalize(&ai, st, out);
    agg_destroy(&ai, st);
    mem_free(st);
    agg_inst_free(&ai);
    return rc;
}

/* A scalar aggregate must give a row for every domain tuple, its
 * aggregates' empty values where the tuple has no input rows. */
static struct plan *scalar_per_domain(struct dc *d, struct plan *grouped, struct plan *dom,
                                      const struct plan *orig)
{
    plan_arena *pa = d->pa;
    struct join_key k = { domain_col(pa, dom), domain_col(pa, grouped), COL_ANY,
                          VALUE_COLL_IDENTITY };
    struct plan *j = pb_join(pa, JOIN_LEFT, dom, grouped, &k, 1, NULL);
    if (!j)
        return NULL;
    uint32_t na = orig->u.agg.naggs, n = 1 + na;
    expr **es = plan_alloc(pa, n * sizeof *es);
    if (!es || !(es[0] = domain_col(pa, j)))
        return NULL;
    expr *missing = xb_unary(pa, EOP_ISNULL, xb_column(pa, 1, &j->cols[1]));
    for (uint32_t i = 0; i < na; i++) {
        expr *col = xb_column(pa, 2 + i, &j->cols[2 + i]);
        value empty;
        if (empty_aggregate(&orig->u.agg.aggs[i], &empty))
            return NULL;
        if (value_is_null(&empty)) {
            es[1 + i] = col;
            continue;
        }
        expr *e = xb_const(pa, &empty);
        value_release(&empty);
        es[1 + i] = xb_case(pa, &missing, &e, 1, col);
        if (!es[1 + i])
            return NULL;
    }
    struct plan_col *meta = plan_alloc(pa, n * sizeof *meta);
    if (!meta)
        return NULL;
    meta[0] = j->cols[0];
    memcpy(meta + 1, grouped->cols + 1, na * sizeof *meta);
    return pb_project(pa, j, es, n, meta);
}

static struct plan *push_aggregate(struct dc *d, struct plan *p, struct plan *dom)
{
    plan_arena *pa = d->pa;
    struct plan *x = push_domain(d, p->in, dom);
    if (!x)
        return NULL;
    uint32_t ng = p->u.agg.ngroups + 1, na = p->u.agg.naggs;
    expr **groups = plan_alloc(pa, ng * sizeof *groups);
    struct plan_agg *aggs = plan_alloc(pa, (na ? na : 1) * sizeof *aggs);
    if (!groups || !aggs || !(groups[0] = domain_col(pa, x)))
        return NULL;
    if (remap_list(pa, p->u.agg.groups, ng - 1, groups + 1, x, 1))
        return NULL;
    for (uint32_t i = 0; i < na; i++) {
        aggs[i] = p->u.agg.aggs[i];
        aggs[i].args = plan_alloc(pa, (aggs[i].nargs ? aggs[i].nargs : 1) * sizeof(expr *));
        if (!aggs[i].args ||
            remap_list(pa, p->u.agg.aggs[i].args, aggs[i].nargs, aggs[i].args, x, 1))
            return NULL;
        if (aggs[i].filter && !(aggs[i].filter = remap_pushed(pa, aggs[i].filter, x, 1, 0)))
            return NULL;
    }
    struct plan *a = pb_aggregate(pa, x, groups, ng, aggs, na);
    if (!a)
        return NULL;
    for (uint32_t i = 0; i < p->ncols; i++)
        a->cols[1 + i] = p->cols[i];
    return p->u.agg.ngroups ? a : scalar_per_domain(d, a, dom, p);
}

/* JOIN whose dependent part is the left side only (and a join kind that
 * keeps left rows per tuple): cross D into the left side. */
static struct plan *push_join_left(struct dc *d, struct plan *p, struct plan *dom)
{
    plan_arena *pa = d->pa;
    struct plan *l = push_domain(d, p->left, dom);
    if (!l)
        return NULL;
    struct plan *both = pb_join(pa, JOIN_CROSS, l, p->right, NULL, 0, NULL);
    uint32_t nk = p->u.join.nkeys;
    struct join_key *keys = plan_alloc(pa, (nk ? nk : 1) * sizeof *keys);
    if (!both || !keys)
        return NULL;
    for (uint32_t i = 0; i < nk; i++) {
        keys[i] = p->u.join.keys[i];
        keys[i].left = remap_pushed(pa, keys[i].left, l, 1, 0);
        if (!keys[i].left)
            return NULL;
    }
    expr *res = NULL;
    if (p->u.join.residual && !(res = remap_pushed(pa, p->u.join.residual, both, 1, 0)))
        return NULL;
    return pb_join(pa, p->u.join.kind, l, p->right, keys, nk, res);
}

/* A residual over L ++ R read over [d] ++ L ++ [d] ++ R. */
struct both_remap {
    plan_arena *pa;
    const struct plan *both;
    uint32_t nl;
};

static expr *both_col(void *ctx, uint32_t c)
{
    struct both_remap *m = ctx;
    uint32_t nc = c < m->nl ? c + 1 : c + 2;
    return xb_column(m->pa, nc, &m->both->cols[nc]);
}

static expr *both_outer(void *ctx, uint32_t j)
{
    struct both_remap *m = ctx;
    return xb_field(m->pa, xb_column(m->pa, 0, &m->both->cols[0]), j);
}

/* General JOIN: both sides carry the domain, matched on it; the result
 * keeps one domain column (from whichever side has the row). */
static struct plan *push_join_both(struct dc *d, struct plan *p, struct plan *dom)
{
    plan_arena *pa = d->pa;
    struct plan *l = push_domain(d, p->left, dom), *r = push_domain(d, p->right, dom);
    if (!l || !r)
        return NULL;
    uint32_t nl = p->left->ncols, nk = p->u.join.nkeys;
    struct plan *both = pb_join(pa, JOIN_CROSS, l, r, NULL, 0, NULL);
    struct join_key *keys = plan_alloc(pa, (nk + 1) * sizeof *keys);
    if (!both || !keys)
        return NULL;
    keys[0] = (struct join_key){ domain_col(pa, l), domain_col(pa, r), COL_ANY,
                                 VALUE_COLL_IDENTITY };
    for (uint32_t i = 0; i < nk; i++) {
        keys[i + 1] = p->u.join.keys[i];
        keys[i + 1].left = remap_pushed(pa, keys[i + 1].left, l, 1, 0);
        keys[i + 1].right = remap_pushed(pa, keys[i + 1].right, r, 1, 0);
        if (!keys[i + 1].left || !keys[i + 1].right)
            return NULL;
    }
    expr *res = NULL;
    if (p->u.join.residual) {
        struct both_remap m = { pa, both, nl };
        struct xb_remap rm = { both_col, both_outer, &m };
        if (!(res = xb_rewrite(pa, p->u.join.residual, &rm)))
            return NULL;
    }
    struct plan *j = pb_join(pa, p->u.join.kind, l, r, keys, nk + 1, res);
    if (!j)
        return NULL;
    /* [dl] L [dr] R -> [coalesce(dl, dr)] L R */
    uint32_t n = 1 + nl + p->right->ncols;
    expr **es = plan_alloc(pa, n * sizeof *es);
    if (!es)
        return NULL;
    expr *dl = xb_column(pa, 0, &j->cols[0]);
    expr *dr = xb_column(pa, 1 + nl, &j->cols[1 + nl]);
    expr *missing = xb_unary(pa, EOP_ISNULL, dl);
    es[0] = xb_case(pa, &missing, &dr, 1, dl);
    if (es[0]) /* still the domain column: keyed by identity */
        es[0]->coll = dl->coll;
    for (uint32_t i = 0; i < nl; i++)
        es[1 + i] = xb_column(pa, 1 + i, &j->cols[1 + i]);
    for (uint32_t i = 0; i < p->right->ncols; i++)
        es[1 + nl + i] = xb_column(pa, 2 + nl + i, &j->cols[2 + nl + i]);
    return pb_project(pa, j, es, n, NULL);
}

static struct plan *push_join(struct dc *d, struct plan *p, struct plan *dom)
{
    bool right_dep = pb_reads_outer(p->right);
    for (uint32_t i = 0; i < p->u.join.nkeys; i++)
        right_dep |= xb_reads_outer(p->u.join.keys[i].right);
    enum join_kind k = p->u.join.kind;
    bool keeps_left = k == JOIN_INNER || k == JOIN_CROSS || k == JOIN_LEFT ||
                      k == JOIN_SEMI || k == JOIN_ANTI;
    if (!right_dep && keeps_left)
        return push_join_left(d, p, dom);
    return push_join_both(d, p, dom);
}

static struct plan *push_same(struct dc *d, struct plan *p, struct plan *dom)
{
    struct plan *x = push_domain(d, p->in, dom);
    if (!x)
        return NULL;
    struct plan *c = plan_new(d->pa, p->kind, x->ncols);
    if (!c)
        return NULL;
    c->in = x;
    pb_copy_cols(c->cols, x);
    if (p->kind == PLAN_SORT) {
        uint32_t n = p->u.sort.nkeys;
        c->u.sort.nkeys = n;
        c->u.sort.keys = plan_alloc(d->pa, (n ? n : 1) * sizeof *c->u.sort.keys);
        if (!c->u.sort.keys)
            return NULL;
        for (uint32_t i = 0; i < n; i++) {
            c->u.sort.keys[i] = p->u.sort.keys[i];
            if (!(c->u.sort.keys[i].e = remap_pushed(d->pa, p->u.sort.keys[i].e, x, 1, 0)))
                return NULL;
        }
    } else {
        c->u = p->u;
    }
    return c;
}

static struct plan *push_limit(struct dc *d, struct plan *p, struct plan *dom)
{
    if ((p->u.limit.limit && xb_reads_outer(p->u.limit.limit)) ||
        (p->u.limit.offset && xb_reads_outer(p->u.limit.offset))) {
        dc_fail(d, LDB_UNSUPPORTED, "LIMIT depending on an outer query cannot be kept live");
        return NULL;
    }
    struct plan *c = push_same(d, p, dom);
    if (!c)
        return NULL;
    struct live_partition part = { c, 1 };
    if (vec_push(&d->prog->partitions, part))
        return NULL;
    return c;
}

static struct plan *push_setop(struct dc *d, struct plan *p, struct plan *dom)
{
    struct plan *l = push_domain(d, p->left, dom), *r = push_domain(d, p->right, dom);
    if (!l || !r)
        return NULL;
    struct plan *c = plan_new(d->pa, PLAN_SETOP, l->ncols);
    if (!c)
        return NULL;
    c->u.setop = p->u.setop;
    c->left = l;
    c->right = r;
    pb_copy_cols(c->cols, l);
    return c;
}

/* p evaluated for every capture tuple of dom: output [d] ++ p's columns. */
static struct plan *push_domain(struct dc *d, struct plan *p, struct plan *dom)
{
    if (!pb_reads_outer(p))
        return cross_domain(d->pa, dom, p);
    switch (p->kind) {
    case PLAN_FILTER: return push_filter(d, p, dom);
    case PLAN_PROJECT: return push_project(d, p, dom);
    case PLAN_AGGREGATE: return push_aggregate(d, p, dom);
    case PLAN_JOIN: return push_join(d, p, dom);
    case PLAN_DISTINCT:
    case PLAN_SORT: return push_same(d, p, dom);
    case PLAN_LIMIT: return push_limit(d, p, dom);
    case PLAN_SETOP: return push_setop(d, p, dom);
    case PLAN_VALUES:
        dc_fail(d, LDB_UNSUPPORTED, "VALUES reading an outer query cannot be kept live");
        return NULL;
    case PLAN_SCAN:
        break;
    }
    return cross_domain(d->pa, dom, p);
}

/* ---- attaching subquery results to a node's input -------------------------------- */

struct attach {
    struct dc *d;
    struct plan *in; /* the input, growing as subqueries are attached */
    int rc;
};

/* in ++ [ARRAY(captures)] (++ extra), the domain of the capture tuples. */
static struct plan *with_columns(plan_arena *pa, struct plan *in, expr **extra, uint32_t n)
{
    uint32_t total = in->ncols + n;
    expr **es = plan_alloc(pa, total * sizeof *es);
    if (!es)
        return NULL;
    for (uint32_t i = 0; i < in->ncols; i++)
        if (!(es[i] = xb_column(pa, i, &in->cols[i])))
            return NULL;
    memcpy(es + in->ncols, extra, n * sizeof *es);
    return pb_project(pa, in, es, total, NULL);
}

/* True when p is a LIMIT of at most one row per capture tuple (pushed
 * as a window partitioned by the domain column), seen through the
 * projections, sorts and filters above it that keep column 0. */
static bool limited_to_one(const struct dc *d, const struct plan *p)
{
    while (p->kind == PLAN_SORT || p->kind == PLAN_FILTER ||
           (p->kind == PLAN_PROJECT && p->u.exprs[0]->kind == EXPR_COLUMN &&
            p->u.exprs[0]->u.index == 0))
        p = p->in;
    if (p->kind != PLAN_LIMIT || !p->u.limit.limit || p->u.limit.limit->kind != EXPR_CONST)
        return false;
    const value *v = &p->u.limit.limit->u.v;
    if (value_type(v) != LDB_INTEGER || v->h.u.i < 0 || v->h.u.i > 1)
        return false;
    for (size_t i = 0; i < d->prog->partitions.len; i++)
        if (d->prog->partitions.data[i].limit == p)
            return d->prog->partitions.data[i].ncols == 1;
    return false;
}

/* True when p's rows are unique by its column 0 (the domain column): at
 * most one row per capture tuple. */
static bool one_row_per_tuple(const struct dc *d, const struct plan *p)
{
    uint32_t key[256], n;
    if (limited_to_one(d, p))
        return true;
    if (p->ncols > 256 || !plan_unique_key(p, key, &n))
        return false;
    return n == 0 || (n == 1 && key[0] == 0);
}

/* True when e reads no column, so that it is one value for the whole
 * node: constants, parameters, captures (fixed per capture tuple). */
static bool fixed_value(const expr *e)
{
    bool zero = false, other = false;
    columns_read(e, &zero, &other);
    return !zero && !other && !xb_has_subquery(e) && !(e->flags & EXPR_NONDET);
}

/* True when a conjunct of pred is "column c = a fixed value" under a
 * collation no coarser than the column's and an affinity that leaves its
 * stored values as they are: at most one value of c passes (a TEXT
 * affinity lets a text '1' and an integer 1 of an untyped column pass). */
static bool pins_column(const expr *pred, const struct plan *in, uint32_t c)
{
    if (pred->kind == EXPR_BINARY && pred->op == EOP_AND)
        return pins_column(pred->args[0], in, c) || pins_column(pred->args[1], in, c);
    if (pred->kind != EXPR_BINARY || pred->op != EOP_EQ)
        return false;
    if ((pred->coll != LDB_COLL_BINARY && pred->coll != in->cols[c].coll) ||
        !sql_affinity_is_noop(pred->aff, in->cols[c].type))
        return false;
    for (int side = 0; side < 2; side++) {
        const expr *col = pred->args[side], *other = pred->args[1 - side];
        if (col->kind == EXPR_COLUMN && col->u.index == c && fixed_value(other))
            return true;
    }
    return false;
}

/* True when join j's right (or left) side is joined on a whole unique
 * key of it: a row of the other side meets at most one row of that side. */
static bool joined_on_unique_key(const struct plan *j, bool right)
{
    const struct plan *side = right ? j->right : j->left;
    uint32_t key[256], n;
    return side->ncols <= 256 && plan_unique_key(side, key, &n) &&
           plan_joined_on_key(j, right, key, n);
}

static bool at_most_one_row(struct dc *d, const struct plan *p);

/* at_most_one_row of p itself, even when p is shared. */
static bool node_one_row(struct dc *d, const struct plan *p)
{
    switch (p->kind) {
    case PLAN_LIMIT: {
        const expr *n = p->u.limit.limit;
        if (n && n->kind == EXPR_CONST && value_type(&n->u.v) == LDB_INTEGER &&
            n->u.v.h.u.i >= 0 && n->u.v.h.u.i <= 1)
            return true;
        return at_most_one_row(d, p->in);
    }
    case PLAN_AGGREGATE:
        return p->u.agg.ngroups == 0 || at_most_one_row(d, p->in);
    case PLAN_VALUES:
        return p->u.values.nrows <= 1;
    case PLAN_FILTER: {
        if (at_most_one_row(d, p->in))
            return true;
        uint32_t key[256], n;
        if (p->in->ncols > 256 || !plan_unique_key(p->in, key, &n))
            return false;
        for (uint32_t i = 0; i < n; i++)
            if (!pins_column(p->u.pred, p->in, key[i]))
                return false;
        return true;
    }
    case PLAN_PROJECT:
    case PLAN_SORT:
    case PLAN_DISTINCT:
        return at_most_one_row(d, p->in);
    case PLAN_JOIN: {
        enum join_kind k = p->u.join.kind;
        if (k == JOIN_SEMI || k == JOIN_ANTI)
            return at_most_one_row(d, p->left);
        if (k == JOIN_FULL)
            return false;
        bool l1 = at_most_one_row(d, p->left), r1 = at_most_one_row(d, p->right);
        /* one row of a side meets at most one of the other */
        return (k != JOIN_RIGHT && l1 && (r1 || joined_on_unique_key(p, true))) ||
               (k != JOIN_LEFT && r1 && (l1 || joined_on_unique_key(p, false)));
    }
    case PLAN_SETOP:
        return p->u.setop != SETOP_UNION && p->u.setop != SETOP_UNION_ALL &&
               at_most_one_row(d, p->left);
    case PLAN_SCAN:
        return false;
    }
    return false;
}

/*
 * True when the bound plan p gives at most one row for any values of its
 * captures and parameters: a LIMIT of 0 or 1, a scalar aggregate, a
 * filter fixing every column of its input's unique key, or nodes that
 * keep that from their inputs. Read on the plan as bound, before any
 * rewrite, where a LIMIT is never per partition. A shared node is
 * answered once (when memory allows keeping the answer).
 */
static bool at_most_one_row(struct dc *d, const struct plan *p)
{
    uint64_t *known = p->shared ? ptrmap_get(&d->single, p) : NULL;
    if (known)
        return *known == 2;
    bool one = node_one_row(d, p);
    if (p->shared)
        (void)ptrmap_put(&d->single, p, one ? 2 : 1);
    return one;
}

static struct join_key domain_key(plan_arena *pa, const struct plan *l, uint32_t lcol,
                                  const struct plan *r)
{
    struct join_key k = { xb_column(pa, lcol, &l->cols[lcol]), domain_col(pa, r), COL_ANY,
                          VALUE_COLL_IDENTITY };
    return k;
}

/* pp: the subquery sq pushed down the domain. */
static expr *attach_scalar(struct attach *a, struct plan *ext, uint32_t dcol, struct plan *pp,
                           const struct expr_subquery *sq)
{
    plan_arena *pa = a->d->pa;
    if (!at_most_one_row(a->d, sq->plan) && !one_row_per_tuple(a->d, pp)) {
        dc_fail(a->d, LDB_UNSUPPORTED,
                "a scalar subquery that may return several rows cannot be kept live; use an "
                "aggregate, or ORDER BY with LIMIT 1");
        return NULL;
    }
    struct join_key k = domain_key(pa, ext, dcol, pp);
    struct plan *j = pb_join(pa, JOIN_LEFT, ext, pp, &k, 1, NULL);
    if (!j)
        return NULL;
    a->in = j;
    uint32_t v = ext->ncols + 1;
    return xb_column(pa, v, &j->cols[v]);
}

static expr *attach_exists(struct attach *a, struct plan *ext, uint32_t dcol, struct plan *pp)
{
    plan_arena *pa = a->d->pa;
    expr *dc = domain_col(pa, pp);
    struct plan *e = pb_distinct(pa, pb_project(pa, pp, &dc, 1, NULL));
    if (!e)
        return NULL;
    struct join_key k = domain_key(pa, ext, dcol, e);
    struct plan *j = pb_join(pa, JOIN_LEFT, ext, e, &k, 1, NULL);
    if (!j)
        return NULL;
    a->in = j;
    return xb_unary(pa, EOP_NOTNULL, xb_column(pa, ext->ncols, &j->cols[ext->ncols]));
}

static struct plan *in_counts(plan_arena *pa, struct plan *pp)
{
    const struct func_def *cstar = &func_count_star, *cone = func_find("count", 1, NULL);
    if (!cone)
        return NULL;
    struct plan_agg aggs[2];
    memset(aggs, 0, sizeof aggs);
    aggs[0].fn = cstar;
    aggs[1].fn = cone;
    aggs[1].nargs = 1;
    aggs[1].args = plan_alloc(pa, sizeof(expr *));
    if (!aggs[1].args || !(aggs[1].args[0] = xb_column(pa, 1, &pp->cols[1])))
        return NULL;
    aggs[0].sep = aggs[1].sep = value_null();
    expr *g = domain_col(pa, pp);
    return pb_aggregate(pa, pp, &g, 1, aggs, 2);
}

/* x IN (subquery): TRUE on a match; otherwise NULL when x is NULL or the
 * subquery has a NULL (and any row), FALSE when it has no rows. */
static expr *attach_in(struct attach *a, struct plan *ext, uint32_t dcol, struct plan *pp,
                       const expr *s)
{
    plan_arena *pa = a->d->pa;
    if (pp->ncols != 2) {
        dc_fail(a->d, LDB_UNSUPPORTED, "IN with a multi-column subquery cannot be kept live");
        return NULL;
    }
    uint32_t xcol = dcol + 1;
    /* matches: distinct (d, a) with a non-NULL, a under the IN's collation
     * (not its column's), so that each operand matches at most one row */
    expr *two[2] = { domain_col(pa, pp), xb_column(pa, 1, &pp->cols[1]) };
    struct plan *pairs = pb_project(pa, pb_filter(pa, pp,
                                    xb_unary(pa, EOP_NOTNULL, xb_column(pa, 1, &pp->cols[1]))),
                                    two, 2, NULL);
    if (pairs)
        pairs->cols[1].coll = (enum ldb_collation)s->coll;
    struct plan *m = pb_distinct(pa, pairs);
    struct plan *cnt = in_counts(pa, pp);
    if (!m || !cnt)
        return NULL;
    struct join_key mk[2] = { domain_key(pa, ext, dcol, m),
                              { xb_column(pa, xcol, &ext->cols[xcol]),
                                xb_column(pa, 1, &m->cols[1]), (enum col_type)s->aff,
                                (enum ldb_collation)s->coll } };
    struct plan *j1 = pb_join(pa, JOIN_LEFT, ext, m, mk, 2, NULL);
    if (!j1)
        return NULL;
    struct join_key ck = domain_key(pa, j1, dcol, cnt);
    struct plan *j2 = pb_join(pa, JOIN_LEFT, j1, cnt, &ck, 1, NULL);
    if (!j2)
        return NULL;
    a->in = j2;
    uint32_t md = ext->ncols, cd = md + 2, n = cd + 1, nn = cd + 2;
    value null = value_null();
    expr *conds[4] = {
        xb_unary(pa, EOP_NOTNULL, xb_column(pa, md, &j2->cols[md])),
        xb_unary(pa, EOP_ISNULL, xb_column(pa, cd, &j2->cols[cd])),
        xb_unary(pa, EOP_ISNULL, xb_column(pa, xcol, &j2->cols[xcol])),
        xb_binary(pa, EOP_LT, xb_column(pa, nn, &j2->cols[nn]), xb_column(pa, n, &j2->cols[n])),
    };
    expr *vals[4] = { xb_bool(pa, true), xb_bool(pa, false), xb_const(pa, &null),
                      xb_const(pa, &null) };
    expr *res = xb_case(pa, conds, vals, 4, xb_bool(pa, false));
    if (res)
        res->type = COL_BOOLEAN;
    return (s->flags & EXPR_NEGATED) ? xb_unary(pa, EOP_NOT, res) : res;
}

static expr *attach_expr(struct attach *a, const expr *e);

/* The LIVE (query) column whose subquery plan is bound, registered by the
 * compiler from the select lists (compile.c, add_children); NULL for one
 * written elsewhere. */
static struct live_child *child_of(struct dc *d, const struct plan *bound)
{
    for (size_t i = 0; i < d->prog->children.len; i++)
        if (d->prog->children.data[i].bound == bound)
            return &d->prog->children.data[i];
    return NULL;
}

static expr *refuse_live(struct attach *a, const expr *s)
{
    if (a->d->err->code == LDB_OK) {
        a->d->err->off = s->off;
        a->d->err->has_off = true;
    }
    dc_fail(a->d, LDB_UNSUPPORTED,
            "LIVE (query) is supported only as a whole result column of a live query's "
            "select list (or of a LIVE child's); ARRAY (query) gives the child's rows as a value");
    return NULL;
}

/* The child's columns then its tuple: pp's domain column moved last. */
static struct plan *tuple_last(plan_arena *pa, struct plan *pp)
{
    uint32_t n = pp->ncols;
    expr **es = plan_alloc(pa, n * sizeof *es);
    struct plan_col *meta = plan_alloc(pa, n * sizeof *meta);
    if (!es || !meta)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t from = i + 1 < n ? i + 1 : 0;
        if (!(es[i] = xb_column(pa, from, &pp->cols[from])))
            return NULL;
        meta[i] = pp->cols[from];
    }
    return pb_project(pa, pp, es, n, meta);
}

/*
 * A LIVE (query) child's two outputs, over its parent's output rows (the
 * root's, after its window, or the parent child's): dom, the distinct
 * tuples of the parent's cell column, and rows, the child pushed over
 * dom with the tuple last. Built from the rows the parent publishes, so
 * a handle is active exactly while a published parent row refers to it.
 */
static int decorrelate_child(struct dc *d, struct live_child *ch, struct plan *parent)
{
    plan_arena *pa = d->pa;
    struct plan_col meta = parent->cols[ch->cell];
    meta.coll = VALUE_COLL_IDENTITY; /* the cell is a capture tuple */
    expr *cell = xb_column(pa, ch->cell, &meta);
    struct plan *dom = cell ? pb_distinct(pa, pb_project(pa, parent, &cell, 1, &meta)) : NULL;
    struct plan *pp = dom ? push_domain(d, ch->plan, dom) : NULL;
    if (!pp)
        return d->err->code ? d->err->code : LDB_NOMEM;
    int rc = dc_plan(d, pp, &pp);
    if (rc)
        return rc;
    ch->dom = dom;
    ch->rows = tuple_last(pa, pp);
    return ch->rows ? LDB_OK : LDB_NOMEM;
}

/* The domain value of a subquery: ARRAY of its captures, keyed by
 * identity (VALUE_COLL_IDENTITY) wherever it is a key: the subquery may
 * show the values it reads, so outer rows whose values are equal but not
 * identical (5 and 5.0) must not share its result. */
static expr *capture_tuple(plan_arena *pa, const struct expr_subquery *sq)
{
    expr *t = xb_array(pa, sq->captures, sq->ncaptures);
    if (t)
        t->coll = VALUE_COLL_IDENTITY;
    return t;
}

/* Attaches subquery s to a->in; returns the expression that replaces it. */
static expr *attach_one(struct attach *a, const expr *s)
{
    struct dc *d = a->d;
    plan_arena *pa = d->pa;
    const struct expr_subquery *sq = &s->u.sq;
    for (uint32_t i = 0; i < sq->ncaptures; i++) {
        if (xb_has_subquery(sq->captures[i])) {
            dc_fail(d, LDB_UNSUPPORTED, "a subquery inside an outer reference cannot be kept live");
            return NULL;
        }
    }
    /* a child live result's cell: its capture tuple (its rows are pushed
     * over the tuples of the published parent rows: decorrelate_child) */
    if (sq->kind == SUBQ_LIVE)
        return child_of(d, sq->plan) ? capture_tuple(pa, sq) : refuse_live(a, s);
    /* the input with the capture tuple (and the IN operand) appended; a
     * subquery in the operand is attached first, so the operand becomes
     * an expression over plain columns of the input */
    expr *extra[2];
    uint32_t nextra = 1;
    if (sq->kind == SUBQ_IN && !(extra[nextra++] = attach_expr(a, s->args[0])))
        return NULL;
    if (!(extra[0] = capture_tuple(pa, sq)))
        return NULL;
    struct plan *ext = with_columns(pa, a->in, extra, nextra);
    if (!ext)
        return NULL;
    uint32_t dcol = a->in->ncols;
    expr *dref = xb_column(pa, dcol, &ext->cols[dcol]);
    struct plan *dom = pb_distinct(pa, pb_project(pa, ext, &dref, 1, NULL));
    if (!dom)
        return NULL;
    struct plan *pp = push_domain(d, sq->plan, dom);
    if (!pp)
        return NULL;
    if ((a->rc = dc_plan(d, pp, &pp)))
        return NULL;
    switch (sq->kind) {
    case SUBQ_SCALAR: return attach_scalar(a, ext, dcol, pp, sq);
    case SUBQ_EXISTS: return attach_exists(a, ext, dcol, pp);
    case SUBQ_IN: return attach_in(a, ext, dcol, pp, s);
    case SUBQ_LIVE: break; /* handled above */
    }
    return NULL;
}

/* Copies e with every subquery replaced by its attached columns. */
static expr *attach_expr(struct attach *a, const expr *e)
{
    if (e->kind == EXPR_SUBQUERY)
        return attach_one(a, e);
    if (!xb_has_subquery(e))
        return (expr *)e;
    expr *c = plan_alloc(a->d->pa, sizeof *c);
    if (!c)
        return NULL;
    *c = *e;
    c->args = plan_alloc(a->d->pa, e->nargs * sizeof *c->args);
    if (!c->args)
        return NULL;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!(c->args[i] = attach_expr(a, e->args[i])))
            return NULL;
    return c;
}

/* Rewrites es[0..n) (over in); *in_out becomes the extended input. */
static int attach_list(struct dc *d, struct plan **in_out, expr **es, uint32_t n)
{
    struct attach a = { d, *in_out, LDB_OK };
    for (uint32_t i = 0; i < n; i++) {
        if (!es[i] || !xb_has_subquery(es[i]))
            continue;
        expr *r = attach_expr(&a, es[i]);
        if (!r)
            return a.rc ? a.rc : (d->err->code ? d->err->code : LDB_NOMEM);
        es[i] = r;
    }
    *in_out = a.in;
    return LDB_OK;
}

/* ---- walking the plan ------------------------------------------------------------- */

static bool list_has_subquery(expr *const *es, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (es[i] && xb_has_subquery(es[i]))
            return true;
    return false;
}

static int dc_filter(struct dc *d, struct plan *p, struct plan *in, struct plan **out)
{
    if (!xb_has_subquery(p->u.pred)) {
        *out = in == p->in ? p : pb_filter(d->pa, in, p->u.pred);
        return *out ? LDB_OK : LDB_NOMEM;
    }
    expr *pred = p->u.pred;
    struct plan *ext = in;
    int rc = attach_list(d, &ext, &pred, 1);
    if (rc)
        return rc;
    *out = pb_prefix(d->pa, pb_filter(d->pa, ext, pred), in->ncols);
    return *out ? LDB_OK : LDB_NOMEM;
}

static int dc_project(struct dc *d, struct plan *p, struct plan *in, struct plan **out)
{
    if (!list_has_subquery(p->u.exprs, p->ncols) && in == p->in) {
        *out = p;
        return LDB_OK;
    }
    expr **es = pb_array(d->pa, p->u.exprs, p->ncols, p->ncols, sizeof *es);
    if (!es)
        return LDB_NOMEM;
    int rc = attach_list(d, &in, es, p->ncols);
    if (rc)
        return rc;
    *out = pb_project(d->pa, in, es, p->ncols, p->cols);
    return *out ? LDB_OK : LDB_NOMEM;
}

static int dc_aggregate(struct dc *d, struct plan *p, struct plan *in, struct plan **out)
{
    uint32_t ng = p->u.agg.ngroups, na = p->u.agg.naggs;
    bool sub = list_has_subquery(p->u.agg.groups, ng);
    for (uint32_t i = 0; i < na; i++)
        sub |= list_has_subquery(p->u.agg.aggs[i].args, p->u.agg.aggs[i].nargs) ||
               (p->u.agg.aggs[i].filter && xb_has_subquery(p->u.agg.aggs[i].filter));
    if (!sub && in == p->in) {
        *out = p;
        return LDB_OK;
    }
    expr **groups = pb_array(d->pa, p->u.agg.groups, ng, ng, sizeof *groups);
    struct plan_agg *aggs = pb_array(d->pa, p->u.agg.aggs, na, na, sizeof *aggs);
    if (!groups || !aggs)
        return LDB_NOMEM;
    int rc = attach_list(d, &in, groups, ng);
    for (uint32_t i = 0; !rc && i < na; i++) {
        /* the FILTER rides after the arguments */
        expr **args = pb_array(d->pa, aggs[i].args, aggs[i].nargs, aggs[i].nargs + 1,
                               sizeof *args);
        if (!args)
            return LDB_NOMEM;
        args[aggs[i].nargs] = aggs[i].filter;
        rc = attach_list(d, &in, args, aggs[i].nargs + 1);
        aggs[i].args = args;
        aggs[i].filter = args[aggs[i].nargs];
    }
    if (rc)
        return rc;
    struct plan *a = pb_aggregate(d->pa, in, groups, ng, aggs, na);
    if (!a)
        return LDB_NOMEM;
    pb_copy_cols(a->cols, p);
    *out = a;
    return LDB_OK;
}

/* SORT keys with subqueries read attached columns: the new SORT's rows
 * carry them after the input's own columns. */
static int dc_sort(struct dc *d, const struct plan *p, struct plan *in, struct plan **out)
{
    uint32_t nk = p->u.sort.nkeys;
    struct sort_key *keys = plan_alloc(d->pa, (nk ? nk : 1) * sizeof *keys);
    expr **es = plan_alloc(d->pa, (nk ? nk : 1) * sizeof *es);
    if (!keys || !es)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < nk; i++) {
        keys[i] = p->u.sort.keys[i];
        es[i] = keys[i].e;
    }
    int rc = attach_list(d, &in, es, nk);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < nk; i++)
        keys[i].e = es[i];
    struct plan *c = plan_new(d->pa, PLAN_SORT, in->ncols);
    if (!c)
        return LDB_NOMEM;
    c->u.sort.nkeys = nk;
    c->u.sort.keys = keys;
    c->in = in;
    pb_copy_cols(c->cols, in);
    *out = c;
    return LDB_OK;
}

/* A LIMIT rewritten as c keeps its partition and its role as the
 * result's window. */
static void replace_limit(struct dc *d, const struct plan *p, const struct plan *c)
{
    for (size_t i = 0; i < d->prog->partitions.len; i++)
        if (d->prog->partitions.data[i].limit == p)
            d->prog->partitions.data[i].limit = c;
    if (d->prog->root_limit == p)
        d->prog->root_limit = c;
}

/* LIMIT over SORT stays one pair (the top-k pattern); columns the sort
 * keys attached are dropped above it. */
static int dc_limit_sort(struct dc *d, struct plan *p, struct plan **out)
{
    if ((p->u.limit.limit && xb_has_subquery(p->u.limit.limit)) ||
        (p->u.limit.offset && xb_has_subquery(p->u.limit.offset)))
        return dc_fail(d, LDB_UNSUPPORTED, "a subquery in LIMIT cannot be kept live");
    struct plan *in, *sort;
    int rc = dc_plan(d, p->in->in, &in);
    if (!rc)
        rc = dc_sort(d, p->in, in, &sort);
    if (rc)
        return rc;
    struct plan *c = plan_new(d->pa, PLAN_LIMIT, sort->ncols);
    if (!c)
        return LDB_NOMEM;
    c->u = p->u;
    c->in = sort;
    pb_copy_cols(c->cols, sort);
    replace_limit(d, p, c);
    *out = c->ncols == p->ncols ? c : pb_prefix(d->pa, c, p->ncols);
    return *out ? LDB_OK : LDB_NOMEM;
}

static int dc_children(struct dc *d, struct plan *p, struct plan **in, struct plan **l,
                       struct plan **r)
{
    int rc = LDB_OK;
    *in = *l = *r = NULL;
    if (p->in)
        rc = dc_plan(d, p->in, in);
    if (!rc && p->left)
        rc = dc_plan(d, p->left, l);
    if (!rc && p->right)
        rc = dc_plan(d, p->right, r);
    return rc;
}

/* A join whose keys hold subqueries: each side's key expressions are
 * attached to that side (attaching keeps a side's rows and appends
 * columns), the join matches on them, and a projection drops the attached
 * columns again. residual (over left ++ right) has no subquery. */
static int join_key_subqueries(struct dc *d, const struct plan *p, struct plan *l,
                               struct plan *r, expr *residual, struct plan **out)
{
    plan_arena *pa = d->pa;
    uint32_t nk = p->u.join.nkeys, nl = p->left->ncols;
    struct join_key *keys = pb_array(pa, p->u.join.keys, nk, nk, sizeof *keys);
    expr **sides = plan_alloc(pa, 2 * nk * sizeof *sides);
    if (!keys || !sides)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < nk; i++) {
        sides[i] = keys[i].left;
        sides[nk + i] = keys[i].right;
    }
    int rc = attach_list(d, &l, sides, nk);
    if (!rc)
        rc = attach_list(d, &r, sides + nk, nk);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < nk; i++) {
        keys[i].left = sides[i];
        keys[i].right = sides[nk + i];
    }
    uint32_t lx = l->ncols - nl;
    expr *res = NULL;
    if (residual) {
        struct plan *both = pb_join(pa, JOIN_CROSS, l, r, NULL, 0, NULL);
        if (!both || !(res = xb_residual_past(pa, residual, both, nl, lx)))
            return LDB_NOMEM;
    }
    struct plan *j = pb_join(pa, p->u.join.kind, l, r, keys, nk, res);
    expr **es = plan_alloc(pa, (p->ncols ? p->ncols : 1) * sizeof *es);
    if (!j || !es)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < p->ncols; i++) {
        uint32_t c = i < nl ? i : i + lx;
        if (!(es[i] = xb_column(pa, c, &j->cols[c])))
            return LDB_NOMEM;
    }
    *out = pb_project(pa, j, es, p->ncols, p->cols);
    return *out ? LDB_OK : LDB_NOMEM;
}

static int dc_join(struct dc *d, struct plan *p, struct plan *l, struct plan *r,
                   struct plan **out)
{
    bool key_sub = false, res_sub = p->u.join.residual && xb_has_subquery(p->u.join.residual);
    for (uint32_t i = 0; i < p->u.join.nkeys; i++)
        key_sub |= xb_has_subquery(p->u.join.keys[i].left) ||
                   xb_has_subquery(p->u.join.keys[i].right);
    if (!key_sub && !res_sub && l == p->left && r == p->right) {
        *out = p;
        return LDB_OK;
    }
    enum join_kind k = p->u.join.kind;
    if (res_sub && k != JOIN_INNER && k != JOIN_CROSS)
        return dc_fail(d, LDB_UNSUPPORTED,
                       "a subquery in the ON condition of an outer join cannot be kept live");
    /* an inner join's residual may as well be a filter above it */
    expr *res = res_sub ? NULL : p->u.join.residual;
    struct plan *j;
    if (key_sub) {
        int rc = join_key_subqueries(d, p, l, r, res, &j);
        if (rc)
            return rc;
    } else {
        j = pb_join(d->pa, k, l, r, p->u.join.keys, p->u.join.nkeys, res);
        if (!j)
            return LDB_NOMEM;
        pb_copy_cols(j->cols, p);
    }
    if (!res_sub) {
        *out = j;
        return LDB_OK;
    }
    struct plan f = { .kind = PLAN_FILTER, .in = j, .u.pred = p->u.join.residual };
    return dc_filter(d, &f, j, out);
}

static int dc_rewrite(struct dc *d, struct plan *p, struct plan **out)
{
    if (p->kind == PLAN_LIMIT && p->in->kind == PLAN_SORT)
        return dc_limit_sort(d, p, out);
    struct plan *in, *l, *r;
    int rc = dc_children(d, p, &in, &l, &r);
    if (rc)
        return rc;
    switch (p->kind) {
    case PLAN_SCAN:
        *out = p;
        return LDB_OK;
    case PLAN_VALUES:
        if (list_has_subquery(p->u.values.cells, p->u.values.nrows * p->ncols))
            return dc_fail(d, LDB_UNSUPPORTED, "a subquery in VALUES cannot be kept live");
        *out = p;
        return LDB_OK;
    case PLAN_FILTER:
        return dc_filter(d, p, in, out);
    case PLAN_PROJECT:
        return dc_project(d, p, in, out);
    case PLAN_AGGREGATE:
        return dc_aggregate(d, p, in, out);
    case PLAN_SORT:
        rc = dc_sort(d, p, in, out);
        if (!rc && (*out)->ncols != p->ncols)
            *out = pb_prefix(d->pa, *out, p->ncols);
        return rc ? rc : (*out ? LDB_OK : LDB_NOMEM);
    case PLAN_JOIN:
        return dc_join(d, p, l, r, out);
    case PLAN_DISTINCT:
    case PLAN_LIMIT:
    case PLAN_SETOP:
        break;
    }
    if ((p->kind == PLAN_LIMIT &&
         ((p->u.limit.limit && xb_has_subquery(p->u.limit.limit)) ||
          (p->u.limit.offset && xb_has_subquery(p->u.limit.offset)))))
        return dc_fail(d, LDB_UNSUPPORTED, "a subquery in LIMIT cannot be kept live");
    if (in == p->in && l == p->left && r == p->right) {
        *out = p;
        return LDB_OK;
    }
    struct plan *c = plan_new(d->pa, p->kind, p->ncols);
    if (!c)
        return LDB_NOMEM;
    *c = *p;
    c->cols = plan_alloc(d->pa, p->ncols * sizeof *c->cols);
    if (!c->cols)
        return LDB_NOMEM;
    pb_copy_cols(c->cols, p);
    c->in = in;
    c->left = l;
    c->right = r;
    replace_limit(d, p, c);
    *out = c;
    return LDB_OK;
}

/* p rewritten once, whichever of its parents asks first. */
static int dc_plan(struct dc *d, struct plan *p, struct plan **out)
{
    struct plan *done = ptrmap_get_ptr(&d->done, p);
    if (done) {
        *out = done;
        return LDB_OK;
    }
    int rc = dc_rewrite(d, p, out);
    if (!rc)
        rc = ptrmap_put_ptr(&d->done, p, *out);
    if (!rc && *out != p)
        rc = ptrmap_put_ptr(&d->done, *out, *out);
    return rc;
}

int live_decorrelate(struct live_program *prog, struct plan *p, struct plan **out, struct eval_error *err)
{
    struct dc d = { prog, &prog->pa, err, PTRMAP_INIT, PTRMAP_INIT };
    int rc = dc_plan(&d, p, out);
    for (size_t i = 0; !rc && i < prog->children.len; i++) { /* parents first */
        struct live_child *ch = &prog->children.data[i];
        rc = decorrelate_child(&d, ch, ch->parent == LIVE_ROOT
                                           ? *out
                                           : prog->children.data[ch->parent].rows);
    }
    ptrmap_free(&d.done);
    ptrmap_free(&d.single);
    if (rc && err->code == LDB_OK)
        dc_fail(&d, rc, rc == LDB_NOMEM ? "out of memory" : "cannot decorrelate the query");
    return rc;
}
