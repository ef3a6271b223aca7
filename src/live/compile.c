/*
 * compile.c - a live query's plan becomes one dataflow graph.
 *
 * Two stages. First the plan is rewritten (in the query's plan arena):
 * subqueries become joins (decorrelate.c), the body gets a unique key
 * (keys.c), and the root becomes PROJECT(visible columns ++ hidden sort
 * values ++ hidden key columns) over an optional LIMIT(SORT(...)), so that
 * every output row carries its key and its order. Then each plan node
 * becomes operators: SCAN an input shared per table, FILTER a filter,
 * PROJECT a map, JOIN two arrangements and a join (an arrangement over a
 * table's index when a side is a plain scan the index serves), AGGREGATE
 * a reduce, DISTINCT and set operations their operators, LIMIT(SORT) a
 * top-k. A SORT without LIMIT only orders the published result.
 *
 * Operator callbacks evaluate bound expressions (expr.h) with the query's
 * parameters; their contexts live in the query's callback arena.
 */
#include "live/live_internal.h"

#include "base/mem.h"
#include "base/ptrmap.h"
#include "live/build.h"
#include "live/window.h"
#include "sql/func.h"
#include "storage/table.h"

#include <stdio.h>
#include <string.h>

/* ---- evaluation helpers --------------------------------------------------- */

void live_eval_ctx(struct live_program *prog, struct eval_ctx *cx, const value *vals, uint32_t ncols)
{
    memset(cx, 0, sizeof *cx);
    cx->row = vals;
    cx->ncols = ncols;
    cx->params = prog->params;
    cx->nparams = prog->nparams;
    cx->err = &prog->err;
}

int live_fail(struct live_program *prog, int code, const char *msg)
{
    if (prog->state == LIVE_OK) {
        prog->state = LIVE_FAILED;
        prog->errcode = code;
        if (msg && msg != prog->err.msg)
            snprintf(prog->err.msg, sizeof prog->err.msg, "%s", msg);
        else if (!msg)
            snprintf(prog->err.msg, sizeof prog->err.msg, "%s", ldb_errstr(code));
    }
    return code;
}

static void *cb_alloc(struct live_program *prog, size_t n)
{
    void *p = arena_alloc(&prog->cba, n);
    if (p)
        memset(p, 0, n);
    return p;
}

/* ---- callbacks ---------------------------------------------------------------- */

struct cb_pred {
    struct live_program *prog;
    const expr *e;
};

static int filter_cb(void *ctx, const row *in, bool *keep)
{
    struct cb_pred *c = ctx;
    struct eval_ctx cx;
    live_eval_ctx(c->prog, &cx, in->cols, in->ncols);
    int truth;
    int rc = expr_eval_truth(c->e, &cx, &truth);
    *keep = truth == 1;
    return rc;
}

/* Map: out[i] = exprs[i](in), with affinity aff[i] applied when set. */
struct cb_map {
    struct live_program *prog;
    uint32_t n;
    expr **es;
    uint8_t *aff; /* NULL: none */
};

static int map_cb(void *ctx, row *in, row **out)
{
    struct cb_map *c = ctx;
    row *r = row_alloc(c->n);
    if (!r)
        return LDB_NOMEM;
    struct eval_ctx cx;
    live_eval_ctx(c->prog, &cx, in->cols, in->ncols);
    for (uint32_t i = 0; i < c->n; i++) {
        const expr *e = c->es[i];
        int rc;
        if (e->kind == EXPR_COLUMN) {
            r->cols[i] = value_copy(&in->cols[e->u.index]);
            rc = LDB_OK;
        } else {
            rc = expr_eval(e, &cx, &r->cols[i]);
        }
        if (!rc && c->aff && c->aff[i] != COL_ANY)
            rc = sql_apply_affinity(&r->cols[i], (enum col_type)c->aff[i]);
        if (rc) {
            row_release(r);
            return rc;
        }
    }
    *out = r;
    return LDB_OK;
}

/* Join residual over left ++ right when both sides carry extra key
 * columns at their ends: the evaluator sees the declared columns only. */
struct cb_residual {
    struct live_program *prog;
    const expr *e;
    uint32_t nl, lx, nr; /* left columns, left extras, right columns */
};

static int residual_cb(void *ctx, const row *joined, bool *keep)
{
    struct cb_residual *c = ctx;
    const value *vals = joined->cols;
    value stack[64];
    value *buf = NULL;
    if (c->lx) {
        size_t n = (size_t)c->nl + c->nr;
        buf = n <= 64 ? stack : mem_alloc(n * sizeof *buf);
        if (!buf)
            return LDB_NOMEM;
        memcpy(buf, joined->cols, c->nl * sizeof *buf);
        memcpy(buf + c->nl, joined->cols + c->nl + c->lx, c->nr * sizeof *buf);
        vals = buf;
    }
    struct eval_ctx cx;
    live_eval_ctx(c->prog, &cx, vals, c->nl + c->nr);
    int truth;
    int rc = expr_eval_truth(c->e, &cx, &truth);
    *keep = truth == 1;
    if (buf != stack)
        mem_free(buf);
    return rc;
}

/* Top-k order: sort terms over columns, ties left to the operator. */
struct cb_order {
    uint32_t n;
    struct result_sort_term *terms;
};

static int order_cb(void *ctx, const row *a, const row *b)
{
    struct cb_order *c = ctx;
    for (uint32_t i = 0; i < c->n; i++) {
        const struct result_sort_term *t = &c->terms[i];
        const value *x = &a->cols[t->col], *y = &b->cols[t->col];
        bool nx = value_is_null(x), ny = value_is_null(y);
        int r;
        if (nx || ny)
            r = (nx && ny) ? 0 : (nx ? -1 : 1) * (t->nulls_first ? 1 : -1);
        else
            r = t->desc ? -value_cmp(x, y, t->coll) : value_cmp(x, y, t->coll);
        if (r)
            return r;
    }
    return 0;
}

/* ---- compiling nodes --------------------------------------------------------- */

/*
 * The plan is a DAG (the decorrelator reads a node's input both for the
 * domain and for the join; a CTE or view body is one node however often
 * it is read): every node is compiled once, and a node read by several
 * parents becomes one operator with several consumers, not copies.
 */
struct compile {
    struct live_program *prog;
    struct eval_error *err;
    ptrmap done;                     /* plan node -> its df_node */
    ptrmap refs;                     /* plan node -> its parents in the final plan */
    VEC(const struct plan *) scans;  /* every SCAN node */
    ptrmap served;                   /* SCANs read only by a table-index arrangement */
};

static int compile_node(struct compile *c, const struct plan *p, df_node **out);

static int cfail(struct compile *c, int code, const char *msg)
{
    if (c->err->code == LDB_OK) {
        c->err->code = code;
        snprintf(c->err->msg, sizeof c->err->msg, "%s", msg);
    }
    return code;
}

/* A map node computing exprs (with optional affinities) over in. */
static int add_map(struct compile *c, df_node *in, expr **es, uint32_t n, const uint8_t *aff,
                   df_node **out)
{
    struct cb_map *m = cb_alloc(c->prog, sizeof *m);
    expr **copy = cb_alloc(c->prog, (n ? n : 1) * sizeof *copy);
    uint8_t *a = aff ? cb_alloc(c->prog, n ? n : 1) : NULL;
    if (!m || !copy || (aff && !a))
        return LDB_NOMEM;
    memcpy(copy, es, n * sizeof *copy);
    if (aff)
        memcpy(a, aff, n);
    m->prog = c->prog;
    m->n = n;
    m->es = copy;
    m->aff = a;
    return df_map(c->prog->g, in, n, map_cb, m, out);
}

static int compile_scan(struct compile *c, const struct plan *p, df_node **out)
{
    struct live_source *src;
    int rc = live_source_for(c->prog, p->u.scan.table, &src);
    if (!rc)
        *out = src->input;
    return rc;
}

static int compile_values(struct compile *c, const struct plan *p, df_node **out)
{
    int rc = df_input(c->prog->g, p->ncols, out);
    if (rc)
        return rc;
    struct live_values v = { *out, p };
    return vec_push(&c->prog->values, v);
}

static int compile_filter(struct compile *c, const struct plan *p, df_node **out)
{
    df_node *in;
    int rc = compile_node(c, p->in, &in);
    if (rc)
        return rc;
    struct cb_pred *f = cb_alloc(c->prog, sizeof *f);
    if (!f)
        return LDB_NOMEM;
    f->prog = c->prog;
    f->e = p->u.pred;
    return df_filter(c->prog->g, in, filter_cb, f, out);
}

/* A projection that repeats every input column in place builds no rows. */
static bool is_identity(const struct plan *p)
{
    if (p->ncols != p->in->ncols)
        return false;
    for (uint32_t i = 0; i < p->ncols; i++)
        if (p->u.exprs[i]->kind != EXPR_COLUMN || p->u.exprs[i]->u.index != i)
            return false;
    return true;
}

static int compile_project(struct compile *c, const struct plan *p, df_node **out)
{
    df_node *in;
    int rc = compile_node(c, p->in, &in);
    if (rc)
        return rc;
    if (is_identity(p)) {
        *out = in;
        return LDB_OK;
    }
    return add_map(c, in, p->u.exprs, p->ncols, NULL, out);
}

/* ---- joins ----------------------------------------------------------------------- */

/* One side of a join: its node, and the columns its key parts sit in. */
struct join_side {
    const struct plan *plan;
    df_node *node;
    uint32_t ncols;    /* declared columns */
    uint32_t extra;    /* appended key columns */
    uint32_t cols[KEYED_MAX];
};

/* Key part i of side: a plain column when the expression is one and the
 * affinity changes nothing, else a computed column appended by a map. */
static int side_keys(struct compile *c, const struct plan *p, struct join_side *s, bool left)
{
    uint32_t nk = p->u.join.nkeys;
    expr *es[KEYED_MAX + 256];
    uint8_t aff[KEYED_MAX + 256];
    if (nk > KEYED_MAX || s->ncols + nk > sizeof es / sizeof es[0])
        return cfail(c, LDB_UNSUPPORTED, "join key too wide for a live query");
    s->extra = 0;
    for (uint32_t i = 0; i < nk; i++) {
        const struct join_key *k = &p->u.join.keys[i];
        expr *e = left ? k->left : k->right;
        if (e->kind == EXPR_COLUMN &&
            sql_affinity_is_noop(k->aff, s->plan->cols[e->u.index].type)) {
            s->cols[i] = e->u.index;
        } else {
            es[s->ncols + s->extra] = e;
            aff[s->ncols + s->extra] = (uint8_t)k->aff;
            s->cols[i] = s->ncols + s->extra++;
        }
    }
    if (!s->extra)
        return LDB_OK;
    for (uint32_t i = 0; i < s->ncols; i++) {
        if (!(es[i] = xb_column(&c->prog->pa, i, &s->plan->cols[i])))
            return LDB_NOMEM;
        aff[i] = COL_ANY;
    }
    return add_map(c, s->node, es, s->ncols + s->extra, aff, &s->node);
}

/* Counts every node's parents, and lists the SCAN nodes. */
static int count_refs(struct compile *c, const struct plan *p)
{
    uint64_t *n = ptrmap_get(&c->refs, p);
    if (n) {
        (*n)++;
        return LDB_OK;
    }
    int rc = ptrmap_put(&c->refs, p, 1);
    if (!rc && p->kind == PLAN_SCAN)
        rc = vec_push(&c->scans, p);
    const struct plan *kids[3] = { p->in, p->left, p->right };
    for (int i = 0; !rc && i < 3; i++)
        if (kids[i])
            rc = count_refs(c, kids[i]);
    return rc;
}

/* The scan (through filters only) a join side reads, if it is one;
 * *exclusive says whether the side is that chain's only reader. */
static const struct plan *plain_scan(struct compile *c, const struct plan *p,
                                     const expr **filters, uint32_t *nfilters, bool *exclusive)
{
    *nfilters = 0;
    *exclusive = true;
    for (;;) {
        uint64_t *n = ptrmap_get(&c->refs, p);
        *exclusive &= n && *n == 1;
        if (p->kind != PLAN_FILTER || *nfilters == 16)
            break;
        filters[(*nfilters)++] = p->u.pred;
        p = p->in;
    }
    return p->kind == PLAN_SCAN ? p : NULL;
}

/* The side's arrangement: the table's own index when the side is a plain
 * scan an index serves (*external), else state of its own. */
static int arrange_side(struct compile *c, const struct join_side *s,
                        const enum ldb_collation *colls, uint32_t nk, df_node **out,
                        const struct plan **external)
{
    df_key key = { nk, s->cols, colls };
    const expr *filters[16];
    uint32_t nf;
    bool exclusive;
    const struct plan *scan = s->extra ? NULL : plain_scan(c, s->plan, filters, &nf, &exclusive);
    *external = NULL;
    if (scan) {
        struct live_source *src;
        int rc = live_source_for(c->prog, scan->u.scan.table, &src);
        if (rc)
            return rc;
        if (!src->loader) {
            rc = live_arrange_table(c->prog, s->node, scan->u.scan.table, s->cols, colls, nk,
                                    filters, nf, out);
            if (rc == LDB_OK && exclusive) {
                *external = scan;
                rc = ptrmap_put(&c->served, scan, 1);
            }
            if (rc != LDB_NOTFOUND)
                return rc;
        }
    }
    return df_arrange(c->prog->g, s->node, &key, out);
}

/*
 * A table whose every scan is read only through its own index by joins
 * (a lookup table) need not be hydrated: each such join finds its rows
 * by lookups when the other side's rows arrive. A join whose two sides
 * are both lookups keeps its right table hydrated, so that one side
 * brings the rows.
 */
static void mark_lookup_tables(struct compile *c)
{
    struct live_program *prog = c->prog;
    for (size_t i = 0; i < prog->sources.len; i++) {
        struct live_source *src = &prog->sources.data[i];
        bool lookup = !src->loader && !src->must_hydrate;
        for (size_t k = 0; lookup && k < c->scans.len; k++)
            if (c->scans.data[k]->u.scan.table == src->table)
                lookup = ptrmap_get(&c->served, c->scans.data[k]) != NULL;
        src->lookup_only = lookup;
    }
}

static enum df_join_kind df_kind(enum join_kind k)
{
    switch (k) {
    case JOIN_LEFT: return DF_JOIN_LEFT;
    case JOIN_RIGHT: return DF_JOIN_RIGHT;
    case JOIN_FULL: return DF_JOIN_FULL;
    case JOIN_SEMI: return DF_JOIN_SEMI;
    case JOIN_ANTI: return DF_JOIN_ANTI;
    default: return DF_JOIN_INNER;
    }
}

static int compile_join(struct compile *c, const struct plan *p, df_node **out)
{
    struct join_side l = { p->left, NULL, p->left->ncols, 0, { 0 } };
    struct join_side r = { p->right, NULL, p->right->ncols, 0, { 0 } };
    int rc = compile_node(c, p->left, &l.node);
    if (!rc)
        rc = compile_node(c, p->right, &r.node);
    if (!rc)
        rc = side_keys(c, p, &l, true);
    if (!rc)
        rc = side_keys(c, p, &r, false);
    if (rc)
        return rc;
    uint32_t nk = p->u.join.nkeys;
    enum ldb_collation colls[KEYED_MAX];
    for (uint32_t i = 0; i < nk; i++)
        colls[i] = p->u.join.keys[i].coll;
    df_node *la, *ra, *j;
    const struct plan *lx, *rx;
    rc = arrange_side(c, &l, colls, nk, &la, &lx);
    if (!rc)
        rc = arrange_side(c, &r, colls, nk, &ra, &rx);
    if (rc)
        return rc;
    /* a side whose rows the join outputs unmatched (outer, semi, anti)
     * must bring its rows; of two lookup sides, the right one does */
    enum join_kind k = p->u.join.kind;
    bool keep_left = k == JOIN_LEFT || k == JOIN_FULL || k == JOIN_SEMI || k == JOIN_ANTI;
    bool keep_right = k == JOIN_RIGHT || k == JOIN_FULL || (lx && rx && !keep_left);
    const struct plan *hydrate[2] = { keep_left ? lx : NULL, keep_right ? rx : NULL };
    for (int i = 0; i < 2; i++) {
        struct live_source *src;
        if (!hydrate[i])
            continue;
        if ((rc = live_source_for(c->prog, hydrate[i]->u.scan.table, &src)))
            return rc;
        src->must_hydrate = true;
    }
    df_residual_fn res = NULL;
    struct cb_residual *rctx = NULL;
    if (p->u.join.residual) {
        rctx = cb_alloc(c->prog, sizeof *rctx);
        if (!rctx)
            return LDB_NOMEM;
        *rctx = (struct cb_residual){ c->prog, p->u.join.residual, l.ncols, l.extra, r.ncols };
        res = residual_cb;
    }
    rc = df_join(c->prog->g, la, ra, df_kind(p->u.join.kind), 0, res, rctx, &j);
    if (rc || (!l.extra && !r.extra)) {
        *out = j;
        return rc;
    }
    /* drop the computed key columns again (semi/anti output left only) */
    uint32_t n = p->ncols;
    expr **es = plan_alloc(&c->prog->pa, n * sizeof *es);
    if (!es)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t from = i < l.ncols ? i : i + l.extra;
        if (!(es[i] = xb_column(&c->prog->pa, from, &p->cols[i])))
            return LDB_NOMEM;
    }
    return add_map(c, j, es, n, NULL, out);
}

/* ---- aggregates, distinct, set operations -------------------------------------- */

static const struct func_def *count_one(void)
{
    return func_find("count", 1, NULL);
}

/* Aggregate arguments with FILTER become CASE WHEN filter THEN arg END;
 * a filtered count(*) counts CASE WHEN filter THEN 1 END. */
static int agg_arg(struct compile *c, const struct plan_agg *a, uint32_t i, expr **out,
                   const struct func_def **fn)
{
    plan_arena *pa = &c->prog->pa;
    *fn = a->fn;
    if (!a->filter) {
        *out = a->args[i];
        return LDB_OK;
    }
    expr *val = a->nargs ? a->args[i] : NULL;
    if (!val) {
        value one = value_int(1);
        val = xb_const(pa, &one);
        *fn = count_one();
        if (!*fn)
            return LDB_INTERNAL;
    }
    expr *cond = a->filter;
    *out = xb_case(pa, &cond, &val, 1, NULL);
    return *out ? LDB_OK : LDB_NOMEM;
}

static int compile_aggregate(struct compile *c, const struct plan *p, df_node **out)
{
    df_node *in;
    int rc = compile_node(c, p->in, &in);
    if (rc)
        return rc;
    uint32_t ng = p->u.agg.ngroups, na = p->u.agg.naggs, n = ng;
    for (uint32_t i = 0; i < na; i++)
        n += p->u.agg.aggs[i].nargs ? p->u.agg.aggs[i].nargs
                                    : (p->u.agg.aggs[i].filter ? 1 : 0);
    expr **es = cb_alloc(c->prog, (n ? n : 1) * sizeof *es);
    uint32_t *keycols = cb_alloc(c->prog, (ng ? ng : 1) * sizeof *keycols);
    enum ldb_collation *colls = cb_alloc(c->prog, (ng ? ng : 1) * sizeof *colls);
    struct df_agg_spec *specs = cb_alloc(c->prog, (na ? na : 1) * sizeof *specs);
    if (!es || !keycols || !colls || !specs)
        return LDB_NOMEM;
    uint32_t k = 0;
    bool identity = true;
    for (uint32_t i = 0; i < ng; i++, k++) {
        es[k] = p->u.agg.groups[i];
        keycols[i] = k;
        colls[i] = p->cols[i].coll;
        identity &= es[k]->kind == EXPR_COLUMN && es[k]->u.index == k;
    }
    for (uint32_t i = 0; i < na; i++) {
        const struct plan_agg *a = &p->u.agg.aggs[i];
        uint32_t nargs = a->nargs ? a->nargs : (a->filter ? 1 : 0);
        uint32_t *args = cb_alloc(c->prog, (nargs ? nargs : 1) * sizeof *args);
        if (!args)
            return LDB_NOMEM;
        const struct func_def *fn = a->fn;
        for (uint32_t j = 0; j < nargs; j++, k++) {
            if ((rc = agg_arg(c, a, j, &es[k], &fn)))
                return rc;
            args[j] = k;
            identity &= es[k]->kind == EXPR_COLUMN && es[k]->u.index == k;
        }
        if (!fn->agg)
            return cfail(c, LDB_UNSUPPORTED, "aggregate cannot be kept live");
        specs[i].def = fn->agg;
        specs[i].args = args;
        specs[i].coll = a->coll;
        specs[i].distinct = a->distinct;
        specs[i].sep = value_is_null(&a->sep) ? NULL : &a->sep;
        specs[i].order = a->order;
        specs[i].norder = a->norder;
    }
    df_node *src = in;
    if (!identity || n != df_node_ncols(in)) {
        if ((rc = add_map(c, in, es, n, NULL, &src)))
            return rc;
    }
    df_key key = { ng, keycols, colls };
    return df_reduce(c->prog->g, src, &key, specs, na, ng ? 0 : DF_REDUCE_SCALAR, out);
}

static enum ldb_collation *column_colls(struct compile *c, const struct plan *p)
{
    enum ldb_collation *colls = cb_alloc(c->prog, (p->ncols ? p->ncols : 1) * sizeof *colls);
    if (colls)
        for (uint32_t i = 0; i < p->ncols; i++)
            colls[i] = p->cols[i].coll;
    return colls;
}

static int compile_distinct(struct compile *c, const struct plan *p, df_node **out)
{
    df_node *in;
    int rc = compile_node(c, p->in, &in);
    if (rc)
        return rc;
    enum ldb_collation *colls = column_colls(c, p);
    return colls ? df_distinct(c->prog->g, in, colls, out) : LDB_NOMEM;
}

static int compile_setop(struct compile *c, const struct plan *p, df_node **out)
{
    df_node *ins[2];
    int rc = compile_node(c, p->left, &ins[0]);
    if (!rc)
        rc = compile_node(c, p->right, &ins[1]);
    if (rc)
        return rc;
    enum ldb_collation *colls = column_colls(c, p);
    if (!colls)
        return LDB_NOMEM;
    df_node *u;
    switch (p->u.setop) {
    case SETOP_UNION_ALL:
        return df_concat(c->prog->g, ins, 2, out);
    case SETOP_UNION:
        rc = df_concat(c->prog->g, ins, 2, &u);
        return rc ? rc : df_distinct(c->prog->g, u, colls, out);
    case SETOP_INTERSECT:
        return df_setop(c->prog->g, DF_INTERSECT, ins[0], ins[1], colls, out);
    case SETOP_EXCEPT:
        return df_setop(c->prog->g, DF_EXCEPT, ins[0], ins[1], colls, out);
    }
    return LDB_INTERNAL;
}

/* ---- ordering and windows ---------------------------------------------------------- */

/* LIMIT/OFFSET are constants or parameters: evaluated once. */
static int eval_count(struct compile *c, const expr *e, int64_t dflt, int64_t *out)
{
    *out = dflt;
    if (!e)
        return LDB_OK;
    struct eval_ctx cx;
    live_eval_ctx(c->prog, &cx, NULL, 0);
    value v;
    int rc = expr_eval(e, &cx, &v);
    if (rc)
        return cfail(c, rc, c->prog->err.msg);
    bool ok = value_type(&v) == LDB_INTEGER;
    int64_t n = ok ? v.h.u.i : 0;
    value_release(&v);
    if (!ok)
        return cfail(c, LDB_ERROR, "LIMIT and OFFSET of a live query must be integers");
    *out = n;
    return LDB_OK;
}

static uint32_t partition_of(const struct live_program *prog, const struct plan *limit)
{
    for (size_t i = 0; i < prog->partitions.len; i++)
        if (prog->partitions.data[i].limit == limit)
            return prog->partitions.data[i].ncols;
    return 0;
}

static int compile_limit(struct compile *c, const struct plan *p, df_node **out)
{
    const struct plan *sort = p->in;
    if (sort->kind != PLAN_SORT)
        return cfail(c, LDB_UNSUPPORTED,
                     "LIMIT without ORDER BY picks arbitrary rows and cannot be kept "
                     "live; add an ORDER BY");
    df_node *in;
    int rc = compile_node(c, sort->in, &in);
    if (rc)
        return rc;
    uint32_t nk = sort->u.sort.nkeys, ncols = sort->ncols;
    struct cb_order *o = cb_alloc(c->prog, sizeof *o);
    struct result_sort_term *terms = cb_alloc(c->prog, (nk ? nk : 1) * sizeof *terms);
    expr **es = cb_alloc(c->prog, (ncols + nk) * sizeof *es);
    if (!o || !terms || !es)
        return LDB_NOMEM;
    uint32_t extra = 0;
    for (uint32_t i = 0; i < nk; i++) {
        const struct sort_key *k = &sort->u.sort.keys[i];
        terms[i] = (struct result_sort_term){ 0, k->desc, k->nulls_first, k->coll };
        if (k->e->kind == EXPR_COLUMN) {
            terms[i].col = k->e->u.index;
        } else {
            es[ncols + extra] = k->e;
            terms[i].col = ncols + extra++;
        }
    }
    if (extra) {
        for (uint32_t i = 0; i < ncols; i++)
            if (!(es[i] = xb_column(&c->prog->pa, i, &sort->cols[i])))
                return LDB_NOMEM;
        if ((rc = add_map(c, in, es, ncols + extra, NULL, &in)))
            return rc;
    }
    o->n = nk;
    o->terms = terms;
    int64_t limit, offset;
    if ((rc = eval_count(c, p->u.limit.limit, DF_NO_LIMIT, &limit)) ||
        (rc = eval_count(c, p->u.limit.offset, 0, &offset)))
        return rc;
    if (limit < 0)
        limit = DF_NO_LIMIT;
    if (offset < 0)
        offset = 0;
    uint32_t part = partition_of(c->prog, p);
    uint32_t *pcols = cb_alloc(c->prog, (part ? part : 1) * sizeof *pcols);
    enum ldb_collation *pcoll = cb_alloc(c->prog, (part ? part : 1) * sizeof *pcoll);
    if (!pcols || !pcoll)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < part; i++) {
        pcols[i] = i;
        pcoll[i] = p->cols[i].coll; /* the capture tuple's: identity */
    }
    df_key group = { part, pcols, pcoll };
    df_node *k;
    if ((rc = df_topk(c->prog->g, in, &group, order_cb, o, offset, limit, &k)))
        return rc;
    if (p == c->prog->root_limit) {
        c->prog->window = k;
        c->prog->offset = offset;
        c->prog->limit = limit;
    }
    if (!extra) {
        *out = k;
        return LDB_OK;
    }
    return add_map(c, k, es, ncols, NULL, out); /* es[0..ncols) are the columns */
}

static int compile_kind(struct compile *c, const struct plan *p, df_node **out)
{
    switch (p->kind) {
    case PLAN_SCAN: return compile_scan(c, p, out);
    case PLAN_VALUES: return compile_values(c, p, out);
    case PLAN_FILTER: return compile_filter(c, p, out);
    case PLAN_PROJECT: return compile_project(c, p, out);
    case PLAN_JOIN: return compile_join(c, p, out);
    case PLAN_AGGREGATE: return compile_aggregate(c, p, out);
    case PLAN_DISTINCT: return compile_distinct(c, p, out);
    case PLAN_SORT: return compile_node(c, p->in, out); /* order: result only */
    case PLAN_LIMIT: return compile_limit(c, p, out);
    case PLAN_SETOP: return compile_setop(c, p, out);
    }
    return LDB_INTERNAL;
}

static int compile_node(struct compile *c, const struct plan *p, df_node **out)
{
    df_node *done = ptrmap_get_ptr(&c->done, p);
    if (done) {
        *out = done;
        return LDB_OK;
    }
    int rc = compile_kind(c, p, out);
    return rc ? rc : ptrmap_put_ptr(&c->done, p, *out);
}

/* ---- the root ------------------------------------------------------------------------- */

/* The shape SELECT [PROJECT] [LIMIT] [SORT] body, as the binder builds it. */
struct root_shape {
    struct plan *project;  /* visible columns, or NULL: body's */
    struct plan *limit;
    struct plan *sort;
    struct plan *body;
};

static int peel_root(struct plan *p, struct root_shape *s)
{
    memset(s, 0, sizeof *s);
    if (p->kind == PLAN_LIMIT) {
        s->limit = p;
        p = p->in;
    }
    if (p->kind == PLAN_PROJECT &&
        (p->in->kind == PLAN_SORT || (p->in->kind == PLAN_LIMIT && !s->limit))) {
        s->project = p;
        p = p->in;
    }
    if (p->kind == PLAN_LIMIT && !s->limit) {
        s->limit = p;
        p = p->in;
    }
    if (p->kind == PLAN_SORT) {
        s->sort = p;
        p = p->in;
    }
    s->body = p;
    if (s->limit && !s->sort)
        return LDB_UNSUPPORTED;
    return LDB_OK;
}

/* The window's top-k must break ties exactly as the result does: by the
 * key, after the ORDER BY terms. */
static int tie_by_key(plan_arena *pa, struct plan *sort, const struct keyed *k)
{
    uint32_t n = sort->u.sort.nkeys;
    struct sort_key *keys = pb_array(pa, sort->u.sort.keys, n, n + k->n, sizeof *keys);
    if (!keys)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < k->n; i++) {
        uint32_t col = k->cols[i];
        keys[n + i] = (struct sort_key){ xb_column(pa, col, &sort->cols[col]), false, true,
                                         sort->cols[col].coll };
        if (!keys[n + i].e)
            return LDB_NOMEM;
    }
    sort->u.sort.keys = keys;
    sort->u.sort.nkeys = n + k->n;
    return LDB_OK;
}

/* The window of the root's ORDER BY ... LIMIT: its bounds, evaluated
 * once (a child's LIMIT stays in its plan: one per capture tuple). */
static int root_window(struct compile *c, const struct plan *limit)
{
    struct live_program *prog = c->prog;
    int rc = eval_count(c, limit->u.limit.limit, DF_NO_LIMIT, &prog->limit);
    if (!rc)
        rc = eval_count(c, limit->u.limit.offset, 0, &prog->offset);
    if (prog->limit < 0)
        prog->limit = DF_NO_LIMIT;
    if (prog->offset < 0)
        prog->offset = 0;
    return rc;
}

/* LIMIT(SORT(below)) as s has them, ties broken by the key k. */
static int sort_and_limit(struct compile *c, const struct root_shape *s, const struct keyed *k,
                          bool root, struct plan **below)
{
    plan_arena *pa = &c->prog->pa;
    struct plan *so = plan_new(pa, PLAN_SORT, (*below)->ncols);
    if (!so)
        return LDB_NOMEM;
    so->u = s->sort->u;
    so->in = *below;
    pb_copy_cols(so->cols, *below);
    int rc = s->limit ? tie_by_key(pa, so, k) : LDB_OK;
    *below = so;
    if (rc || !s->limit)
        return rc;
    if (root && (rc = root_window(c, s->limit)))
        return rc;
    struct plan *li = plan_new(pa, PLAN_LIMIT, so->ncols);
    if (!li)
        return LDB_NOMEM;
    li->u = s->limit->u;
    li->in = so;
    pb_copy_cols(li->cols, so);
    *below = li;
    if (root)
        c->prog->root_limit = li;
    return LDB_OK;
}

/*
 * Builds PROJECT(visible ++ hidden sort values ++ hidden key columns) over
 * LIMIT(SORT(keyed body)) for the root (root: its LIMIT is the window)
 * or a LIVE child, and fills lay with where those columns are.
 */
static int assemble_output(struct compile *c, const struct root_shape *s, bool root,
                           struct live_layout *lay, struct plan **out)
{
    plan_arena *pa = &c->prog->pa;
    struct keyed k;
    int rc = live_ensure_key(pa, s->body, &k);
    if (rc)
        return rc == LDB_UNSUPPORTED ? cfail(c, rc, LIVE_KEY_TOO_WIDE) : rc;
    struct plan *below = k.plan;
    uint32_t nsort = s->sort ? s->sort->u.sort.nkeys : 0;
    if (nsort > RESULT_MAX_SORT)
        return cfail(c, LDB_UNSUPPORTED, "too many ORDER BY terms for a live query");
    if (root)
        c->prog->nuser_sort = nsort;
    if (s->sort && (rc = sort_and_limit(c, s, &k, root, &below)))
        return rc;
    /* output columns */
    const struct plan *vis = s->project ? s->project : s->body;
    uint32_t nvis = vis->ncols;
    while (nvis > 0 && vis->cols[nvis - 1].hidden)
        nvis--;
    uint32_t n = nvis + nsort + k.n;
    expr **es = plan_alloc(pa, (n ? n : 1) * sizeof *es);
    struct plan_col *meta = plan_alloc(pa, (n ? n : 1) * sizeof *meta);
    lay->names = plan_alloc(pa, (nvis ? nvis : 1) * sizeof *lay->names);
    if (!es || !meta || !lay->names)
        return LDB_NOMEM;
    bool identity = !s->project;
    for (uint32_t i = 0; i < nvis; i++) {
        es[i] = s->project ? s->project->u.exprs[i] : xb_column(pa, i, &below->cols[i]);
        meta[i] = vis->cols[i];
        lay->names[i] = vis->cols[i].name;
        if (!es[i])
            return LDB_NOMEM;
    }
    uint32_t pos = nvis;
    for (uint32_t i = 0; i < nsort; i++) {
        const struct sort_key *sk = &s->sort->u.sort.keys[i];
        lay->sort[i] = (struct result_sort_term){ pos, sk->desc, sk->nulls_first, sk->coll };
        if (identity && sk->e->kind == EXPR_COLUMN && sk->e->u.index < nvis) {
            lay->sort[i].col = sk->e->u.index;
            continue;
        }
        es[pos] = sk->e;
        memset(&meta[pos], 0, sizeof meta[pos]);
        meta[pos].name = "?order?";
        meta[pos].hidden = true;
        pos++;
    }
    for (uint32_t i = 0; i < k.n; i++) {
        uint32_t kc = k.cols[i];
        lay->keycoll[i] = below->cols[kc].coll;
        if (identity && kc < nvis) {
            lay->key[i] = kc;
            continue;
        }
        if (!(es[pos] = xb_column(pa, kc, &below->cols[kc])))
            return LDB_NOMEM;
        meta[pos] = below->cols[kc];
        meta[pos].hidden = true;
        lay->key[i] = pos++;
    }
    n = pos;
    /* a projection that only repeats the input's leading columns is left out */
    bool noop = n <= below->ncols;
    for (uint32_t i = 0; noop && i < n; i++)
        noop = es[i]->kind == EXPR_COLUMN && es[i]->u.index == i;
    if (noop && n == below->ncols) {
        *out = below;
    } else {
        *out = pb_project(pa, below, es, n, meta);
        if (!*out)
            return LDB_NOMEM;
    }
    lay->nvisible = nvis;
    lay->ncols = n;
    lay->nkey = k.n;
    lay->nsort = nsort;
    return LDB_OK;
}

/* The expression that computes column col of p's output, through the
 * nodes that pass columns on (NULL where it is not a projection's). */
static const expr *defining_expr(const struct plan *p, uint32_t col)
{
    for (;;) {
        switch (p->kind) {
        case PLAN_PROJECT:
            if (p->u.exprs[col]->kind != EXPR_COLUMN)
                return p->u.exprs[col];
            col = p->u.exprs[col]->u.index;
            break;
        case PLAN_SORT:
        case PLAN_LIMIT:
        case PLAN_DISTINCT:
        case PLAN_FILTER: break;
        default: return NULL;
        }
        p = p->in;
    }
}

/* Registers the LIVE (query) columns of an output's select list as
 * children of parent (LIVE_ROOT or a child's index) with their assembled
 * plans, then their own LIVE columns: parents come first. */
static int add_children(struct compile *c, const struct root_shape *s, uint32_t parent,
                        uint32_t nvis)
{
    for (uint32_t i = 0; i < nvis; i++) {
        const expr *e = defining_expr(s->project ? s->project : s->body, i);
        if (!e || e->kind != EXPR_SUBQUERY || e->u.sq.kind != SUBQ_LIVE)
            continue;
        struct root_shape cs;
        if (peel_root(e->u.sq.plan, &cs))
            return cfail(c, LDB_UNSUPPORTED,
                         "LIMIT without ORDER BY picks arbitrary rows and cannot be kept "
                         "live; add an ORDER BY");
        struct live_child ch;
        memset(&ch, 0, sizeof ch);
        ch.bound = e->u.sq.plan;
        ch.parent = parent;
        ch.cell = i;
        int rc = assemble_output(c, &cs, false, &ch.lay, &ch.plan);
        if (!rc)
            rc = vec_push(&c->prog->children, ch);
        if (!rc)
            rc = add_children(c, &cs, (uint32_t)c->prog->children.len - 1, ch.lay.nvisible);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

/* Each child's two outputs, compiled into the same graph as the root
 * (shared nodes once). */
static int compile_children(struct compile *c)
{
    struct live_program *prog = c->prog;
    int rc = LDB_OK;
    for (size_t i = 0; !rc && i < prog->children.len; i++) {
        struct live_child *ch = &prog->children.data[i];
        df_node *dom, *rows;
        if (!ch->dom || !ch->rows)
            return cfail(c, LDB_INTERNAL, "a LIVE (query) column was not decorrelated");
        rc = compile_node(c, ch->dom, &dom);
        if (!rc)
            rc = compile_node(c, ch->rows, &rows);
        if (!rc)
            rc = df_output(prog->g, dom, &ch->dom_out);
        if (!rc)
            rc = df_output(prog->g, rows, &ch->rows_out);
    }
    return rc;
}

static int count_children_refs(struct compile *c)
{
    struct live_program *prog = c->prog;
    int rc = LDB_OK;
    for (size_t i = 0; !rc && i < prog->children.len; i++) {
        rc = count_refs(c, prog->children.data[i].dom);
        if (!rc)
            rc = count_refs(c, prog->children.data[i].rows);
    }
    return rc;
}

static int too_large(struct compile *c)
{
    char msg[200];
    snprintf(msg, sizeof msg, "query too complex to keep up to date: more than %d plan nodes "
             "once its subqueries are joins (each view and CTE counted once)", LIVE_MAX_NODES);
    return cfail(c, LDB_ERROR, msg);
}

int live_compile(struct live_program *prog, struct eval_error *err)
{
    struct compile c = { prog, err, PTRMAP_INIT, PTRMAP_INIT, VEC_INIT, PTRMAP_INIT };
    if (plan_is_nondeterministic(prog->plan))
        return cfail(&c, LDB_UNSUPPORTED,
                     "a query that calls a non-deterministic function cannot be kept live");
    struct root_shape s;
    if (peel_root(prog->plan, &s))
        return cfail(&c, LDB_UNSUPPORTED,
                     "LIMIT without ORDER BY picks arbitrary rows and cannot be kept live; "
                     "add an ORDER BY");
    struct plan *root;
    int rc = df_graph_new(&prog->g);
    if (!rc)
        rc = assemble_output(&c, &s, true, &prog->lay, &root);
    if (!rc)
        rc = add_children(&c, &s, LIVE_ROOT, prog->lay.nvisible);
    if (!rc)
        rc = live_decorrelate(prog, root, &root, err);
    if (!rc)
        rc = live_window_plan(prog, root);
    df_node *top;
    if (!rc)
        rc = count_refs(&c, root);
    if (!rc)
        rc = count_children_refs(&c);
    if (!rc && c.refs.ents.len > LIVE_MAX_NODES)
        rc = too_large(&c);
    if (!rc)
        rc = compile_node(&c, root, &top);
    if (!rc)
        rc = compile_children(&c);
    if (!rc)
        mark_lookup_tables(&c);
    if (!rc)
        rc = df_output(prog->g, top, &prog->out);
    ptrmap_free(&c.done);
    ptrmap_free(&c.refs);
    vec_free(&c.scans);
    ptrmap_free(&c.served);
    if (rc && err->code == LDB_OK)
        cfail(&c, rc, rc == LDB_NOMEM ? "out of memory" : ldb_errstr(rc));
    return rc;
}
