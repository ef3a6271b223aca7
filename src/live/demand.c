/*
 * demand.c - what a live query asks of loading tables (the demand plane's
 * half inside the live layer), and its readiness status.
 *
 * Demand points are found once, after compiling: every scan of a loading
 * table in the bound plan, per level (the root, or a LIVE (query) child),
 * with the conjuncts of the filters right above it that a provider can
 * test exactly as livedb does. Subqueries other than LIVE ones belong to
 * the level that contains them. A child's conjunct column = <outer value>
 * makes its point keyed: each handle asks for the rows of its own key, and
 * the source layer groups the keys of all handles into one request.
 *
 * The live layer only reports which queries and handles have demand
 * (hooks.opened / hooks.gone); the source layer owns every request. Status
 * is stored here because it is a property of the query, and its callback
 * runs with the rules of change callbacks.
 *
 * Invariant: q->demanding is true exactly between a successful opened(q)
 * and gone(q), so gone is called once per opened.
 */
#include "live/live_internal.h"

#include "base/mem.h"
#include "sql/expr.h"
#include "live/window.h"
#include "storage/table.h"

#include <string.h>

/* ---- finding the points ---------------------------------------------------------------- */

struct dwalk {
    struct live_program *prog;
    uint32_t level;
    const struct plan *scan;   /* the scan whose conjuncts are collected */
    VEC(const struct expr *) conj;
    int32_t key_col;
    uint32_t key_capture;
    uint8_t key_aff, key_coll;
    uint32_t nested;           /* inside a subquery of the level: its outer
                                  references are not the level's captures */
    int rc;
};

static bool is_scan_column(const struct dwalk *w, const struct expr *e, uint32_t *col)
{
    if (e->kind != EXPR_COLUMN || e->u.index >= w->scan->ncols)
        return false;
    *col = e->u.index;
    return true;
}

static bool is_value(const struct expr *e)
{
    return e->kind == EXPR_CONST || e->kind == EXPR_PARAM;
}

/* A comparison of a column with aff, that converts none of its stored
 * values, under BINARY (what a provider compares with; a row it returns
 * must be one livedb's comparison also selects, and vice versa). */
static bool exact_on(const struct dwalk *w, uint32_t col, uint8_t aff, uint8_t coll)
{
    /* the column's own collation too: the provider's text of the request
     * compares under it (a BINARY comparison on a NOCASE column would
     * select fewer rows there) */
    return coll == LDB_COLL_BINARY && w->scan->cols[col].coll == LDB_COLL_BINARY &&
           sql_affinity_is_noop((enum col_type)aff, w->scan->cols[col].type);
}

static bool pushable(const struct dwalk *w, const struct expr *e)
{
    uint32_t col;
    switch (e->kind) {
    case EXPR_BINARY:
        if (e->op == EOP_AND || e->op == EOP_OR)
            return pushable(w, e->args[0]) && pushable(w, e->args[1]);
        if (e->op < EOP_EQ || e->op > EOP_GE)
            return false;
        if (is_scan_column(w, e->args[0], &col) && is_value(e->args[1]))
            return exact_on(w, col, e->aff, e->coll);
        if (is_scan_column(w, e->args[1], &col) && is_value(e->args[0]))
            return exact_on(w, col, e->aff, e->coll);
        return false;
    case EXPR_IN_LIST:
        if ((e->flags & EXPR_NEGATED) || !is_scan_column(w, e->args[0], &col) ||
            !exact_on(w, col, e->aff, e->coll))
            return false;
        for (uint32_t i = 1; i < e->nargs; i++)
            if (!is_value(e->args[i]))
                return false;
        return true;
    case EXPR_BETWEEN:
        return !(e->flags & EXPR_NEGATED) && is_scan_column(w, e->args[0], &col) &&
               is_value(e->args[1]) && is_value(e->args[2]) && exact_on(w, col, e->aff, e->coll) &&
               exact_on(w, col, e->aff2, e->u.coll_hi);
    case EXPR_UNARY:
        return (e->op == EOP_ISNULL || e->op == EOP_NOTNULL) &&
               is_scan_column(w, e->args[0], &col);
    default:
        return false;
    }
}

/* col = <outer value>, in a child: the point's key. */
static bool take_key(struct dwalk *w, const struct expr *e)
{
    uint32_t col;
    if (w->level == LIVE_LEVEL_ROOT || w->nested || w->key_col >= 0 || e->kind != EXPR_BINARY ||
        e->op != EOP_EQ)
        return false;
    const struct expr *other;
    if (is_scan_column(w, e->args[0], &col))
        other = e->args[1];
    else if (is_scan_column(w, e->args[1], &col))
        other = e->args[0];
    else
        return false;
    if (other->kind != EXPR_OUTER || !exact_on(w, col, e->aff, e->coll))
        return false;
    w->key_col = (int32_t)col;
    w->key_capture = other->u.index;
    w->key_aff = e->aff;
    w->key_coll = e->coll;
    return true;
}

static void add_conjuncts(struct dwalk *w, const struct expr *e)
{
    if (w->rc)
        return;
    if (e->kind == EXPR_BINARY && e->op == EOP_AND) {
        add_conjuncts(w, e->args[0]);
        add_conjuncts(w, e->args[1]);
        return;
    }
    if (take_key(w, e) || !pushable(w, e))
        return;
    w->rc = vec_push(&w->conj, e);
}

/* A point for scan, under the chain of filters from top down to it. */
static int add_point(struct dwalk *w, const struct plan *top, const struct plan *scan)
{
    w->scan = scan;
    w->conj.len = 0;
    w->key_col = -1;
    for (const struct plan *f = top; f != scan; f = f->in)
        add_conjuncts(w, f->u.pred);
    if (w->rc)
        return w->rc;
    const struct expr **conj = NULL;
    if (w->conj.len) {
        conj = arena_alloc(&w->prog->cba, w->conj.len * sizeof *conj);
        if (!conj)
            return LDB_NOMEM;
        memcpy(conj, w->conj.data, w->conj.len * sizeof *conj);
    }
    struct live_demand d = {
        .table = scan->u.scan.table,
        .level = w->level,
        .conj = conj,
        .nconj = (uint32_t)w->conj.len,
        .key_col = w->key_col,
        .key_capture = w->key_capture,
        .key_aff = w->key_aff,
        .key_coll = w->key_coll,
        .order_col = -1,
    };
    return vec_push(&w->prog->demands, d);
}

static void walk_plan(struct dwalk *w, const struct plan *p);

static bool walk_expr(void *ctx, const struct expr *e)
{
    struct dwalk *w = ctx;
    if (w->rc)
        return true;
    if (e->kind == EXPR_SUBQUERY) {
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            walk_expr(w, e->u.sq.captures[i]);
        if (e->u.sq.kind != SUBQ_LIVE) { /* children are walked at their own level */
            w->nested++;
            walk_plan(w, e->u.sq.plan);
            w->nested--;
        }
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        walk_expr(w, e->args[i]);
    return w->rc != LDB_OK;
}

static void walk_plan(struct dwalk *w, const struct plan *p)
{
    const struct plan *top = p;
    for (; p->kind == PLAN_FILTER; p = p->in)
        plan_node_exprs(p, walk_expr, w);
    if (w->rc)
        return;
    if (p->kind == PLAN_SCAN) {
        if (p->u.scan.table->loading != TABLE_LOCAL)
            w->rc = add_point(w, top, p);
        return;
    }
    plan_node_exprs(p, walk_expr, w);
    if (p->in)
        walk_plan(w, p->in);
    if (p->left)
        walk_plan(w, p->left);
    if (p->right)
        walk_plan(w, p->right);
}

/* A root window over the rows of the root's only point, in an order a
 * provider can follow: that point loads in pages (source layer). */
static void plan_ordered(struct live_program *prog, uint32_t nroot)
{
    uint32_t col;
    bool desc, nulls_first;
    enum ldb_collation coll;
    struct table *t = live_window_order(prog, &col, &desc, &nulls_first, &coll);
    struct live_demand *d = prog->demands.data;
    if (nroot != 1 || !t || t != d->table || nulls_first == desc || coll != LDB_COLL_BINARY ||
        table_schema(t)->cols[col].coll != LDB_COLL_BINARY) /* the provider orders by it */
        return;
    d->order_col = (int32_t)col;
    d->order_desc = desc;
}

int live_demand_plan(struct live_program *prog)
{
    struct dwalk w = { .prog = prog, .level = LIVE_LEVEL_ROOT };
    walk_plan(&w, prog->plan);
    if (!w.rc)
        plan_ordered(prog, (uint32_t)prog->demands.len);
    for (uint32_t k = 0; !w.rc && k < prog->children.len; k++) {
        w.level = k;
        walk_plan(&w, prog->children.data[k].bound);
    }
    vec_free(&w.conj);
    return w.rc;
}

static bool finds_on_demand(void *ctx, const struct expr *e);

static struct table *on_demand_in(const struct plan *p)
{
    if (p->kind == PLAN_SCAN && p->u.scan.table->loading == TABLE_ON_DEMAND)
        return p->u.scan.table;
    struct table *t = NULL;
    plan_node_exprs(p, finds_on_demand, &t);
    for (const struct plan *c[3] = { p->in, p->left, p->right }, **i = c; !t && i < c + 3; i++)
        if (*i)
            t = on_demand_in(*i);
    return t;
}

static bool finds_on_demand(void *ctx, const struct expr *e)
{
    struct table **t = ctx;
    if (e->kind == EXPR_SUBQUERY)
        *t = on_demand_in(e->u.sq.plan);
    for (uint32_t i = 0; !*t && i < e->nargs; i++)
        finds_on_demand(ctx, e->args[i]);
    return *t != NULL;
}

struct table *live_plan_on_demand_table(const struct plan *p) { return on_demand_in(p); }

/* ---- the hooks ------------------------------------------------------------------------ */

void live_set_demand_hooks(struct live_registry *reg, const struct live_demand_hooks *h)
{
    reg->dhooks = *h;
}

static uint32_t level_of(const ldb_live *q) { return q->is_child ? q->child : LIVE_LEVEL_ROOT; }

static struct live_program *program_of(const ldb_live *q)
{
    return q->is_child ? (q->root ? q->root->p : NULL) : q->p;
}

/* A root answers for its handles' readiness too. */
static bool has_points(const ldb_live *q)
{
    uint32_t n;
    live_demands(q, &n);
    return n > 0 || (!q->is_child && q->p->demands.len > 0);
}

int live_demand_open(ldb_live *q)
{
    struct live_registry *reg = q->reg;
    if (!reg->dhooks.opened || !has_points(q))
        return LDB_OK;
    q->status = LDB_STATUS_LOADING;
    q->notified = LDB_STATUS_LOADING; /* nobody can have seen another */
    int rc = reg->dhooks.opened(reg->dhooks.ctx, q);
    q->demanding = rc == LDB_OK;
    return rc;
}

void live_demand_gone(ldb_live *q)
{
    /* a root without points of its own may have state made by a handle */
    if (!q->demanding && !q->dstate)
        return;
    q->demanding = false;
    q->reg->dhooks.gone(q->reg->dhooks.ctx, q);
}

const struct live_demand *live_demands(const ldb_live *q, uint32_t *n)
{
    struct live_program *prog = program_of(q);
    *n = 0;
    if (!prog || prog->demands.len == 0)
        return NULL;
    /* the points are in level order: the root's, then each child's */
    uint32_t level = level_of(q), i = 0, len = (uint32_t)prog->demands.len;
    const struct live_demand *d = prog->demands.data;
    if (level != LIVE_LEVEL_ROOT)
        while (i < len && d[i].level != level)
            i++;
    uint32_t j = i;
    while (j < len && d[j].level == level)
        j++;
    *n = j - i;
    return d + i;
}

const value *live_params(const ldb_live *q, uint32_t *n)
{
    struct live_program *prog = program_of(q);
    *n = prog ? prog->nparams : 0;
    return prog ? prog->params : NULL;
}

const value *live_demand_key(const ldb_live *q, const struct live_demand *d)
{
    if (!q->is_child || d->key_col < 0 || !q->dom)
        return NULL;
    const value *t = &q->dom->cols[0];
    return d->key_capture < value_len(t) ? value_item(t, d->key_capture) : NULL;
}

void live_set_demand_state(ldb_live *q, void *state) { q->dstate = state; }
void *live_demand_state(const ldb_live *q) { return q->dstate; }

int64_t live_window_need(const ldb_live *q)
{
    const struct live_program *prog = q->is_child ? NULL : q->p;
    if (!prog || prog->limit < 0)
        return -1;
    return prog->offset > INT64_MAX - prog->limit ? INT64_MAX : prog->offset + prog->limit;
}

ldb_live *live_root(ldb_live *q) { return q->is_child ? q->root : q; }

/* ---- status ------------------------------------------------------------------------------ */

void live_set_status(ldb_live *q, int status, const char *msg)
{
    char *copy = msg ? mem_strndup(msg, strlen(msg)) : NULL;
    mem_free(q->status_msg);
    /* out of memory for the message: the code still tells the state */
    q->status_msg = copy;
    q->status = status;
}

/* The message of an ERROR, never NULL (live_set_status may have had no
 * memory to copy it). */
static const char *error_msg(const ldb_live *q)
{
    return q->status_msg ? q->status_msg : "loading failed (its message was lost: out of memory)";
}

/* A failed query (live_error) is ERROR whatever its demand says: it
 * publishes nothing more, so its result is not ready and never will be. */
int live_status(const ldb_live *q, const char **msg)
{
    const char *failed;
    if (live_error(q, &failed) != LDB_OK) {
        if (msg)
            *msg = failed;
        return LDB_STATUS_ERROR;
    }
    if (msg)
        *msg = q->status == LDB_STATUS_ERROR ? error_msg(q) : NULL;
    return q->status;
}

void live_set_status_callback(ldb_live *q, ldb_status_fn fn, void *ctx)
{
    q->sfn = fn;
    q->sctx = ctx;
}

void live_notify_status(ldb_live *q)
{
    const char *msg;
    int status = live_status(q, &msg);
    if (q->closing || q->notified == status)
        return;
    q->notified = status;
    if (!q->sfn)
        return;
    struct live_registry *reg = q->reg;
    bool outer = reg->publishing;
    reg->publishing = true;
    q->sfn(q->sctx, q, status, msg);
    reg->publishing = outer;
}
