/*
 * shape.c - what a view's body is: which tables it reads, whether it is
 * deterministic, which maintenance arm fits it, and the layout of its
 * backing table.
 *
 * Layout. The body is first given a unique key by the live layer's
 * rewrite (live_ensure_key, live/program.h): the primary key of a scanned table, the group
 * columns of an aggregate, all columns of DISTINCT and set operations,
 * tagged branch keys of UNION ALL. The backing table has the body's
 * visible columns, then the key columns the body does not show (hidden),
 * then what an arm keeps for itself (hidden); its primary key is the
 * body's key. Visible columns that pass a table column through keep that
 * column's type (so its affinity for readers); every other column is ANY,
 * so a stored value is exactly the value the body produced.
 *
 * The two cheap arms are recognised on the keyed plan:
 * - projection: PROJECT over FILTER* over SCAN, no subquery: each backing
 *   column is an expression over one source row;
 * - aggregate: [PROJECT over] AGGREGATE over FILTER* over SCAN, grouping
 *   by plain columns whose canonical equality is identity (INTEGER,
 *   BOOLEAN, BLOB, BINARY TEXT: a group's shown value never depends on
 *   which row supplied it), every aggregate plain (no DISTINCT, FILTER)
 *   and declaring arithmetic (agg_def.combine over an INTEGER column, or
 *   a count) or an extreme (min/max, with an index that leads with the
 *   group columns to re-read a group whose extreme was retracted), no
 *   HAVING. Anything else is the dataflow arm's.
 */
#include "mv/mv_internal.h"

#include "base/mem.h"
#include "live/program.h"
#include "sql/func.h"

#include <stdio.h>
#include <string.h>

/* ---- walking a plan ----------------------------------------------------------------- */

static bool walk_plan(const struct plan *p, struct mv_walk *w);

static bool walk_expr(const expr *e, struct mv_walk *w)
{
    if (!e)
        return true;
    if (w->expr && !w->expr(w->ctx, e))
        return false;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!walk_expr(e->args[i], w))
            return false;
    if (e->kind == EXPR_SUBQUERY) {
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            if (!walk_expr(e->u.sq.captures[i], w))
                return false;
        return walk_plan(e->u.sq.plan, w);
    }
    return true;
}

static bool walk_exprs(expr *const *es, size_t n, struct mv_walk *w)
{
    for (size_t i = 0; i < n; i++)
        if (!walk_expr(es[i], w))
            return false;
    return true;
}

static bool walk_node(const struct plan *p, struct mv_walk *w)
{
    switch (p->kind) {
    case PLAN_VALUES:
        return walk_exprs(p->u.values.cells, (size_t)p->u.values.nrows * p->ncols, w);
    case PLAN_FILTER:
        return walk_expr(p->u.pred, w);
    case PLAN_PROJECT:
        return walk_exprs(p->u.exprs, p->ncols, w);
    case PLAN_JOIN:
        for (uint32_t i = 0; i < p->u.join.nkeys; i++)
            if (!walk_expr(p->u.join.keys[i].left, w) || !walk_expr(p->u.join.keys[i].right, w))
                return false;
        return walk_expr(p->u.join.residual, w);
    case PLAN_AGGREGATE:
        if (!walk_exprs(p->u.agg.groups, p->u.agg.ngroups, w))
            return false;
        for (uint32_t i = 0; i < p->u.agg.naggs; i++)
            if (!walk_exprs(p->u.agg.aggs[i].args, p->u.agg.aggs[i].nargs, w) ||
                !walk_expr(p->u.agg.aggs[i].filter, w))
                return false;
        return true;
    case PLAN_SORT:
        for (uint32_t i = 0; i < p->u.sort.nkeys; i++)
            if (!walk_expr(p->u.sort.keys[i].e, w))
                return false;
        return true;
    case PLAN_LIMIT:
        return walk_expr(p->u.limit.limit, w) && walk_expr(p->u.limit.offset, w);
    default:
        return true;
    }
}

/* True the first time the walk meets p: a shared node has several
 * parents, and walking it per path would be exponential in a chain of
 * CTEs that each read the previous one twice. */
static bool first_visit(const struct plan *p, struct mv_walk *w)
{
    if (!p->shared)
        return true;
    if (ptrmap_get(&w->seen, p))
        return false;
    w->rc = ptrmap_put(&w->seen, p, 1);
    return w->rc == LDB_OK;
}

static bool walk_plan(const struct plan *p, struct mv_walk *w)
{
    if (!p || !first_visit(p, w))
        return w->rc == LDB_OK;
    if (w->plan && !w->plan(w->ctx, p))
        return false;
    return walk_node(p, w) && walk_plan(p->in, w) && walk_plan(p->left, w) &&
           walk_plan(p->right, w);
}

int mv_walk(const struct plan *p, struct mv_walk *w)
{
    w->rc = LDB_OK;
    walk_plan(p, w);
    ptrmap_free(&w->seen);
    return w->rc;
}

static bool not_subquery(void *ctx, const expr *e) { return e->kind != EXPR_SUBQUERY; }

/* Whether e holds a subquery (the arms without dataflow cannot run one). */
static bool has_subquery(const expr *e)
{
    struct mv_walk w = { NULL, not_subquery, NULL, PTRMAP_INIT, LDB_OK };
    return !walk_expr(e, &w);
}

/* ---- the body's order and the planner's annotations ------------------------------------- */

struct plan *mv_unordered(plan_arena *pa, struct plan *body)
{
    if (body->kind == PLAN_SORT)
        return body->in;
    if (body->kind != PLAN_PROJECT || body->in->kind != PLAN_SORT)
        return body;
    struct plan *p = plan_new(pa, PLAN_PROJECT, body->ncols);
    if (!p)
        return NULL;
    p->u = body->u;
    p->in = body->in->in;
    if (body->ncols)
        memcpy(p->cols, body->cols, body->ncols * sizeof *p->cols);
    return p;
}

/* The planner's annotations name indexes, which a view outlives: the
 * arms ignore them, and the executor of the floor reads tables plainly.
 * A FILTER's exec_pred leaves out the conjuncts its scan's access path
 * guaranteed, so it goes with the access path: the plain scan needs the
 * whole predicate tested again. */
static bool clear_node(void *ctx, const struct plan *cp)
{
    struct plan *p = (struct plan *)cp;
    if (p->kind == PLAN_SCAN) {
        memset(&p->u.scan.access, 0, sizeof p->u.scan.access);
    } else if (p->kind == PLAN_FILTER) {
        p->exec_pred = NULL;
        p->exec_pred_set = false;
    } else if (p->kind == PLAN_SORT) {
        p->u.sort.presorted = false;
    } else if (p->kind == PLAN_JOIN) {
        p->u.join.lookup = NULL;
        p->u.join.lookup_index = NULL;
    }
    return true;
}

int mv_clear_annotations(struct plan *p)
{
    struct mv_walk w = { clear_node, NULL, NULL, PTRMAP_INIT, LDB_OK };
    return mv_walk(p, &w);
}

/* ---- layout ------------------------------------------------------------------------------ */

int mv_layout_alloc(struct mv_view *v, uint32_t ncols)
{
    struct mv_layout *l = &v->lay;
    memset(l, 0, sizeof *l);
    size_t n = ncols ? ncols : 1;
    l->names = plan_alloc(&v->pa, n * sizeof *l->names);
    l->types = plan_alloc(&v->pa, n * sizeof *l->types);
    l->colls = plan_alloc(&v->pa, n * sizeof *l->colls);
    l->hidden = plan_alloc(&v->pa, n * sizeof *l->hidden);
    l->ncols = ncols;
    return l->names && l->types && l->colls && l->hidden ? LDB_OK : LDB_NOMEM;
}

static bool name_used(const struct mv_layout *l, uint32_t upto, const char *name)
{
    for (uint32_t i = 0; i < upto; i++)
        if (l->names[i] && name_eq(l->names[i], name))
            return true;
    return false;
}

/* Column col gets hint, or hint:1, hint:2... when it is taken (SQLite's
 * rule for result columns). */
static int mv_layout_name(struct mv_view *v, uint32_t col, const char *hint)
{
    struct mv_layout *l = &v->lay;
    char buf[600];
    snprintf(buf, sizeof buf, "%s", hint && *hint ? hint : "column");
    for (uint32_t k = 1; name_used(l, col, buf); k++)
        snprintf(buf, sizeof buf, "%.500s:%u", hint && *hint ? hint : "column", k);
    char *s = plan_alloc(&v->pa, strlen(buf) + 1);
    if (!s)
        return LDB_NOMEM;
    memcpy(s, buf, strlen(buf) + 1);
    l->names[col] = s;
    return LDB_OK;
}

/* Type of column col of p for the backing table: a passed-through table
 * column's own, else ANY (values stored exactly as produced). */
static enum col_type stored_type(const struct plan *p, uint32_t col)
{
    struct table *t;
    uint32_t tc;
    return plan_lineage(p, col, &t, &tc) ? table_schema(t)->cols[tc].type : COL_ANY;
}

/* Names given in CREATE MATERIALIZED VIEW v(a, b), or the body's. */
static const char *visible_name(const struct mv_view *v, const struct plan *p, uint32_t i)
{
    const ast_name_list *given = &v->ast->stmt->u.create_view.cols;
    return i < given->n ? given->items[i].str : p->cols[i].name;
}

int mv_layout_column(struct mv_view *v, uint32_t j, const struct plan *p, uint32_t col,
                     bool hidden, const char *hint)
{
    struct mv_layout *l = &v->lay;
    l->types[j] = p ? stored_type(p, col) : COL_ANY;
    l->colls[j] = p ? p->cols[col].coll : LDB_COLL_BINARY;
    l->hidden[j] = hidden;
    return mv_layout_name(v, j, hidden ? hint : visible_name(v, p, col));
}

int mv_layout_keyed(struct mv_view *v, const struct plan *keyed, uint32_t nvis,
                    const uint32_t *keycols, uint32_t nkey, uint32_t extra, uint32_t *map)
{
    if (nkey > SCHEMA_MAX_KEY)
        return LDB_UNSUPPORTED;
    uint32_t nhid = 0;
    for (uint32_t i = 0; i < nkey; i++)
        nhid += keycols[i] >= nvis;
    int rc = mv_layout_alloc(v, nvis + nhid + extra);
    struct mv_layout *l = &v->lay;
    l->nvis = nvis;
    for (uint32_t j = 0; j < nvis && rc == LDB_OK; j++) {
        map[j] = j;
        rc = mv_layout_column(v, j, keyed, j, false, NULL);
    }
    uint32_t at = nvis;
    for (uint32_t i = 0; i < nkey && rc == LDB_OK; i++) {
        if (keycols[i] < nvis) {
            l->pk[i] = keycols[i];
            continue;
        }
        map[at] = keycols[i];
        l->pk[i] = at;
        rc = mv_layout_column(v, at++, keyed, keycols[i], true, "_key");
    }
    l->npk = nkey;
    return rc;
}

uint32_t mv_visible_count(const struct plan *p)
{
    uint32_t n = p->ncols;
    while (n > 0 && p->cols[n - 1].hidden)
        n--;
    return n;
}

/* ---- the projection arm ---------------------------------------------------------------- */

/* FILTER* over SCAN: the scan and its predicates. */
static const struct plan *filtered_scan(const struct plan *p, const expr **preds, uint32_t *n,
                                        uint32_t cap)
{
    *n = 0;
    for (; p->kind == PLAN_FILTER; p = p->in) {
        if (*n == cap || has_subquery(p->u.pred))
            return NULL;
        preds[(*n)++] = p->u.pred;
    }
    return p->kind == PLAN_SCAN ? p : NULL;
}

#define MAX_PREDS 32

static const expr **copy_preds(struct mv_view *v, const expr **preds, uint32_t n)
{
    const expr **out = plan_alloc(&v->pa, (n ? n : 1) * sizeof *out);
    if (out)
        memcpy(out, preds, n * sizeof *out);
    return out;
}

bool mv_shape_row(struct mv_view *v, int *rc)
{
    struct keyed k;
    if ((*rc = live_ensure_key(&v->pa, v->body, &k)))
        return false;
    const struct plan *p = k.plan;
    const expr *preds[MAX_PREDS];
    uint32_t npreds;
    if (p->kind != PLAN_PROJECT || !filtered_scan(p->in, preds, &npreds, MAX_PREDS))
        return false;
    for (uint32_t i = 0; i < p->ncols; i++)
        if (has_subquery(p->u.exprs[i]))
            return false;
    uint32_t map[MV_MAX_COLS];
    uint32_t nvis = mv_visible_count(v->body);
    if (p->ncols > MV_MAX_COLS ||
        (*rc = mv_layout_keyed(v, p, nvis, k.cols, k.n, 0, map)) != LDB_OK)
        return false;
    struct mv_row_arm *a = &v->arm.row;
    a->src = filtered_scan(p->in, preds, &npreds, MAX_PREDS)->u.scan.table;
    a->npreds = npreds;
    a->preds = copy_preds(v, preds, npreds);
    a->cols = plan_alloc(&v->pa, v->lay.ncols * sizeof *a->cols);
    if (!a->preds || !a->cols) {
        *rc = LDB_NOMEM;
        return false;
    }
    for (uint32_t j = 0; j < v->lay.ncols; j++)
        a->cols[j] = p->u.exprs[map[j]];
    v->strategy = MV_PROJECTION;
    snprintf(v->why, sizeof v->why,
             "one table, filter and projection: each row of %s maps to at most one row, "
             "computed from that row alone", table_name(a->src));
    return true;
}

/* ---- the aggregate arm ------------------------------------------------------------------ */

/* Canonical equality is identity for these: a group's shown value is the
 * value of every row in it. */
static bool identity_group_column(const struct column *c, enum ldb_collation coll)
{
    switch (c->type) {
    case COL_INTEGER: case COL_BOOLEAN: case COL_BLOB: return true;
    case COL_TEXT: return coll == LDB_COLL_BINARY && c->coll == LDB_COLL_BINARY;
    default: return false;
    }
}

/* An ordered or hash index whose first n parts are the group columns. */
struct table_index *mv_group_index(struct table *t, const uint32_t *gcols, uint32_t n)
{
    for (size_t i = 0; n && i < table_index_count(t); i++) {
        struct table_index *ix = table_index_at(t, i);
        if (ix->nparts < n || (ix->kind == INDEX_HASH && ix->nparts != n))
            continue;
        bool ok = true;
        for (uint32_t p = 0; p < n && ok; p++) {
            bool found = false;
            for (uint32_t g = 0; g < n && !found; g++)
                found = ix->parts[p].col == gcols[g];
            ok = found && ix->parts[p].coll == LDB_COLL_BINARY;
        }
        if (ok)
            return ix;
    }
    return NULL;
}

struct agg_check {
    const struct plan *agg;
    struct table *src;
    const struct schema *sc;
    uint32_t *gcols;
    const char *why;
};

static bool groups_fit(struct agg_check *c)
{
    const struct plan *a = c->agg;
    for (uint32_t i = 0; i < a->u.agg.ngroups; i++) {
        const expr *g = a->u.agg.groups[i];
        if (g->kind != EXPR_COLUMN ||
            !identity_group_column(&c->sc->cols[g->u.index], a->cols[i].coll)) {
            c->why = "a group column whose equal values can differ in bytes";
            return false;
        }
        c->gcols[i] = g->u.index;
    }
    return true;
}

/* One aggregate: its partials (count, sum) or its extreme. */
static bool agg_fits(struct agg_check *c, const struct plan_agg *pa, struct mv_agg_col *out)
{
    const struct agg_def *d = pa->fn->agg;
    memset(out, 0, sizeof *out);
    out->pa = pa;
    out->arg = UINT32_MAX;
    if (pa->distinct || pa->filter || d->nargs > 1) {
        c->why = "an aggregate with DISTINCT, FILTER or several arguments";
        return false;
    }
    if (d->nargs == 1) {
        if (pa->args[0]->kind != EXPR_COLUMN) {
            c->why = "an aggregate of an expression";
            return false;
        }
        out->arg = pa->args[0]->u.index;
    }
    out->extreme = d->extreme;
    if (d->extreme) {
        if (c->agg->u.agg.ngroups &&
            mv_group_index(c->src, c->gcols, c->agg->u.agg.ngroups))
            return true;
        c->why = "min/max without an index leading with the group columns";
        return false;
    }
    if (!d->combine) {
        c->why = "an aggregate that declares no arithmetic";
        return false;
    }
    if (d->nargs == 0 || (d->flags & AGG_COUNT_ONLY) ||
        c->sc->cols[out->arg].type == COL_INTEGER)
        return true;
    c->why = "a sum over a column that is not INTEGER (kept exactly by the dataflow arm)";
    return false;
}

static bool wants_count(const struct mv_agg_col *c)
{
    return c->extreme || c->pa->fn->agg->nargs == 1;
}

static bool wants_sum(const struct mv_agg_col *c)
{
    const struct agg_def *d = c->pa->fn->agg;
    return !c->extreme && d->nargs == 1 && !(d->flags & AGG_COUNT_ONLY);
}

/* The column an earlier aggregate of the same argument keeps the same
 * partial in (count, sum, avg and total of x share x's count and sum), or
 * UINT32_MAX. */
static uint32_t shared(const struct mv_agg_col *aggs, uint32_t i, bool sum)
{
    for (uint32_t k = 0; k < i; k++) {
        uint32_t col = sum ? aggs[k].sum_col : aggs[k].count_col;
        if (!aggs[k].extreme && !aggs[i].extreme && aggs[k].arg == aggs[i].arg &&
            col != UINT32_MAX)
            return col;
    }
    return UINT32_MAX;
}

/* Columns for the partials, after the nout output columns; with v NULL
 * only counts them. */
static uint32_t place_partials(struct mv_view *v, struct mv_agg_col *aggs, uint32_t n,
                               uint32_t col, int *rc)
{
    uint32_t first = col++;
    if (v)
        *rc = mv_layout_column(v, first, NULL, 0, true, "_rows");
    for (uint32_t i = 0; i < n; i++) {
        struct mv_agg_col *c = &aggs[i];
        uint32_t sc = shared(aggs, i, false), ss = shared(aggs, i, true);
        c->count_col = wants_count(c) ? (sc != UINT32_MAX ? sc : col++) : UINT32_MAX;
        c->sum_col = wants_sum(c) ? (ss != UINT32_MAX ? ss : col++) : UINT32_MAX;
    }
    for (uint32_t j = first + 1; v && j < col && *rc == LDB_OK; j++) {
        const char *hint = "_sum";
        for (uint32_t i = 0; i < n; i++)
            if (aggs[i].count_col == j)
                hint = aggs[i].extreme ? "_extreme" : "_count";
        *rc = mv_layout_column(v, j, NULL, 0, true, hint);
    }
    return col - first;
}

static uint32_t partial_count(struct mv_agg_col *aggs, uint32_t n)
{
    return place_partials(NULL, aggs, n, 0, NULL);
}

/* A reference to column col of a row described by meta. */
static expr *column_ref(plan_arena *pa, uint32_t col, const struct plan_col *meta)
{
    expr *e = plan_alloc(pa, sizeof *e);
    if (!e)
        return NULL;
    e->kind = EXPR_COLUMN;
    e->type = (uint8_t)meta->type;
    e->aff = (uint8_t)meta->aff;
    e->aff2 = COL_ANY;
    e->coll = (uint8_t)meta->coll;
    e->u.index = col;
    return e;
}

/* The backing columns over the aggregate row (PROJECT's expressions or
 * the aggregate's columns). */
static int agg_outputs(struct mv_view *v, const struct plan *proj, const struct plan *agg,
                       const uint32_t *map)
{
    struct mv_agg_arm *a = &v->arm.agg;
    a->out = plan_alloc(&v->pa, (a->nout ? a->nout : 1) * sizeof *a->out);
    if (!a->out)
        return LDB_NOMEM;
    for (uint32_t j = 0; j < a->nout; j++) {
        a->out[j] = proj ? proj->u.exprs[map[j]] : column_ref(&v->pa, map[j], &agg->cols[map[j]]);
        if (!a->out[j])
            return LDB_NOMEM;
    }
    return LDB_OK;
}

static bool agg_shape_fits(struct mv_view *v, const struct plan *agg, struct agg_check *c,
                           const expr **preds, uint32_t *npreds)
{
    const struct plan *scan = filtered_scan(agg->in, preds, npreds, MAX_PREDS);
    if (!scan)
        return false;
    c->src = scan->u.scan.table;
    c->sc = table_schema(c->src);
    for (uint32_t i = 0; i < agg->u.agg.naggs; i++) {
        const struct plan_agg *pa = &agg->u.agg.aggs[i];
        if ((pa->nargs && has_subquery(pa->args[0])) || (pa->filter && has_subquery(pa->filter)))
            return false;
    }
    return groups_fit(c);
}

static bool agg_arm_make(struct mv_view *v, const struct keyed *k, const struct plan *proj,
                         const struct plan *agg, struct agg_check *c, const expr **preds,
                         uint32_t npreds, int *rc)
{
    struct mv_agg_arm *a = &v->arm.agg;
    uint32_t na = agg->u.agg.naggs;
    struct mv_agg_col *cols = plan_alloc(&v->pa, (na ? na : 1) * sizeof *cols);
    if (!cols) {
        *rc = LDB_NOMEM;
        return false;
    }
    for (uint32_t i = 0; i < na; i++)
        if (!agg_fits(c, &agg->u.agg.aggs[i], &cols[i]))
            return false;
    uint32_t map[MV_MAX_COLS];
    const struct plan *top = proj ? proj : agg;
    if (top->ncols > MV_MAX_COLS ||
        (*rc = mv_layout_keyed(v, top, mv_visible_count(v->body), k->cols, k->n,
                               partial_count(cols, na), map)))
        return false;
    a->src = c->src;
    a->preds = copy_preds(v, preds, npreds);
    a->npreds = npreds;
    a->ngroups = agg->u.agg.ngroups;
    a->gcols = c->gcols;
    a->naggs = na;
    a->aggs = cols;
    a->nout = v->lay.ncols - partial_count(cols, na);
    a->rows_col = a->nout;
    if (!a->preds || (*rc = agg_outputs(v, proj, agg, map)))
        return false;
    place_partials(v, cols, na, a->nout, rc);
    if (*rc)
        return false;
    v->strategy = MV_AGGREGATE;
    snprintf(v->why, sizeof v->why,
             "one table grouped by plain columns, every aggregate declares arithmetic or an "
             "extreme: each group's stored row is updated from its partials");
    return true;
}

bool mv_shape_agg(struct mv_view *v, int *rc, const char **why)
{
    struct keyed k;
    if ((*rc = live_ensure_key(&v->pa, v->body, &k)))
        return false;
    const struct plan *proj = NULL, *agg = k.plan;
    if (agg->kind == PLAN_PROJECT) {
        proj = agg;
        agg = agg->in;
    }
    if (agg->kind != PLAN_AGGREGATE)
        return false;
    for (uint32_t i = 0; proj && i < proj->ncols; i++)
        if (has_subquery(proj->u.exprs[i]))
            return false;
    struct agg_check c = { agg, NULL, NULL, NULL, NULL };
    c.gcols = plan_alloc(&v->pa, (agg->u.agg.ngroups + 1) * sizeof *c.gcols);
    if (!c.gcols) {
        *rc = LDB_NOMEM;
        return false;
    }
    const expr *preds[MAX_PREDS];
    uint32_t npreds;
    if (!agg_shape_fits(v, agg, &c, preds, &npreds)) {
        *why = c.why;
        return false;
    }
    bool ok = agg_arm_make(v, &k, proj, agg, &c, preds, npreds, rc);
    if (!ok)
        *why = c.why;
    return ok;
}
