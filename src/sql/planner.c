/*
 * planner.c - OR factoring, predicate pushdown, join keys, access paths,
 * ordered reads and build sides (planner.h); join order is join_order.c's
 * and estimates estimate.c's. The rewrites walk the tree top-down so a
 * predicate pushed into a join is pushed again into that join's inputs
 * before the inputs are planned; subquery plans met in expressions are
 * planned as their own roots. A shared node (a CTE or view body with
 * several parents, plan.h) is planned once, as its own root: nothing is
 * pushed into it or read through it from above, since its other parents
 * see the same node.
 */
#include "sql/planner_internal.h"

#include "sql/func.h"
#include "storage/store.h"

#include <string.h>

void *planner_alloc(planner *pl, size_t n)
{
    void *p = plan_alloc(pl->pa, n);
    if (!p)
        pl->rc = LDB_NOMEM;
    return p;
}

/* ---- expression helpers ------------------------------------------------------------- */

/* Smallest and largest input column read (lo > hi when none). Captures
 * of subqueries count; their bodies do not. */
static void column_range(const struct expr *e, uint32_t *lo, uint32_t *hi)
{
    if (e->kind == EXPR_COLUMN) {
        *lo = e->u.index < *lo ? e->u.index : *lo;
        *hi = e->u.index + 1 > *hi ? e->u.index + 1 : *hi;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        column_range(e->args[i], lo, hi);
    if (e->kind == EXPR_SUBQUERY)
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            column_range(e->u.sq.captures[i], lo, hi);
}

/* 0: reads no column; 1: only columns < split; 2: only columns >= split;
 * 3: both. */
int expr_sides(const struct expr *e, uint32_t split)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    column_range(e, &lo, &hi);
    if (lo >= hi)
        return 0;
    if (hi <= split)
        return 1;
    return lo >= split ? 2 : 3;
}

struct expr *expr_shift(planner *pl, const struct expr *e, uint32_t delta)
{
    struct expr *x = planner_alloc(pl, sizeof *x);
    if (!x)
        return NULL;
    *x = *e;
    if (e->kind == EXPR_COLUMN) {
        x->u.index -= delta;
        return x;
    }
    if (e->nargs && !(x->args = planner_alloc(pl, e->nargs * sizeof *x->args)))
        return NULL;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!(x->args[i] = expr_shift(pl, e->args[i], delta)))
            return NULL;
    if (e->kind == EXPR_SUBQUERY && e->u.sq.ncaptures) {
        if (!(x->u.sq.captures = planner_alloc(pl, e->u.sq.ncaptures * sizeof *x->u.sq.captures)))
            return NULL;
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            if (!(x->u.sq.captures[i] = expr_shift(pl, e->u.sq.captures[i], delta)))
                return NULL;
    }
    return x;
}

struct expr *expr_and(planner *pl, struct expr *a, struct expr *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    struct expr *e = planner_alloc(pl, sizeof *e);
    struct expr **args = planner_alloc(pl, 2 * sizeof *args);
    if (!e || !args)
        return NULL;
    e->kind = EXPR_BINARY;
    e->op = EOP_AND;
    e->type = COL_BOOLEAN;
    e->off = a->off;
    e->nargs = 2;
    e->args = args;
    args[0] = a;
    args[1] = b;
    e->flags = (a->flags | b->flags) & EXPR_NONDET;
    return e;
}

/* Conjuncts of e, appended to a growing array. */
void conj_append(planner *pl, struct conj *c, struct expr *e)
{
    if (c->n == c->cap) {
        uint32_t cap = c->cap ? c->cap * 2 : 8;
        struct expr **items = planner_alloc(pl, cap * sizeof *items);
        if (!items)
            return;
        if (c->n)
            memcpy(items, c->items, c->n * sizeof *items);
        c->items = items;
        c->cap = cap;
    }
    c->items[c->n++] = e;
}

void conj_split(planner *pl, struct expr *e, struct conj *c)
{
    if (e->kind == EXPR_BINARY && e->op == EOP_AND) {
        conj_split(pl, e->args[0], c);
        conj_split(pl, e->args[1], c);
        return;
    }
    conj_append(pl, c, e);
}

struct expr *conj_join(planner *pl, struct conj *c)
{
    struct expr *e = NULL;
    for (uint32_t i = 0; i < c->n; i++)
        e = expr_and(pl, e, c->items[i]);
    return e;
}

/* Puts pred into a FILTER over *slot (merging with a FILTER already there). */
void plan_add_filter(planner *pl, struct plan **slot, struct expr *pred)
{
    struct plan *in = *slot;
    if (in->kind == PLAN_FILTER && !in->shared) {
        in->u.pred = expr_and(pl, in->u.pred, pred);
        return;
    }
    struct plan *f = plan_new(pl->pa, PLAN_FILTER, in->ncols);
    if (!f) {
        pl->rc = LDB_NOMEM;
        return;
    }
    if (in->ncols)
        memcpy(f->cols, in->cols, in->ncols * sizeof *f->cols);
    f->in = in;
    f->u.pred = pred;
    *slot = f;
}

/* ---- OR factoring ---------------------------------------------------------------------------- */

/*
 * A conjunct every branch of an OR repeats is taken out of it:
 * (a AND b) OR (a AND c) is a AND (b OR c), which holds in SQL's
 * three-valued logic too. The OR alone gives no join key, no access path
 * and no pushdown; a factored a (a join's equality, as in TPC-H Q19's
 * p_partkey = l_partkey in each of three branches) gives all three.
 */

/* The operands of a chain of ORs. */
static void disjuncts(planner *pl, struct expr *e, struct conj *out)
{
    if (e->kind == EXPR_BINARY && e->op == EOP_OR) {
        disjuncts(pl, e->args[0], out);
        disjuncts(pl, e->args[1], out);
        return;
    }
    conj_append(pl, out, e);
}

static struct expr *expr_or(planner *pl, struct expr *a, struct expr *b)
{
    struct expr *e = expr_and(pl, a, b);
    if (e && e != a && e != b)
        e->op = EOP_OR;
    return e;
}

static bool holds_term(const struct conj *c, const struct expr *t)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (expr_equal(c->items[i], t))
            return true;
    return false;
}

static struct expr *factor_or(planner *pl, struct expr *e)
{
    struct conj branches = { 0 }, common = { 0 };
    disjuncts(pl, e, &branches);
    struct conj *terms = planner_alloc(pl, branches.n * sizeof *terms);
    if (!terms || pl->rc)
        return e;
    for (uint32_t b = 0; b < branches.n; b++) {
        terms[b] = (struct conj){ 0 };
        conj_split(pl, branches.items[b], &terms[b]);
    }
    const struct conj *first = &terms[0];
    for (uint32_t i = 0; i < first->n; i++) {
        bool everywhere = !(first->items[i]->flags & EXPR_NONDET);
        for (uint32_t b = 1; b < branches.n && everywhere; b++)
            everywhere = holds_term(&terms[b], first->items[i]);
        if (everywhere && !holds_term(&common, first->items[i]))
            conj_append(pl, &common, first->items[i]);
    }
    if (common.n == 0 || pl->rc)
        return e;
    struct expr *rest = NULL;
    for (uint32_t b = 0; b < branches.n; b++) {
        struct expr *branch = NULL;
        for (uint32_t i = 0; i < terms[b].n; i++)
            if (!holds_term(&common, terms[b].items[i]))
                branch = expr_and(pl, branch, terms[b].items[i]);
        if (!branch)
            return conj_join(pl, &common); /* that branch is common alone: the OR holds */
        rest = expr_or(pl, rest, branch);
    }
    return expr_and(pl, conj_join(pl, &common), rest);
}

/* The conjuncts of *slot with their ORs factored. */
static void factor_ors(planner *pl, struct expr **slot)
{
    if (!*slot)
        return;
    struct conj c = { 0 };
    bool any = false;
    conj_split(pl, *slot, &c);
    for (uint32_t i = 0; i < c.n && !pl->rc; i++)
        if (c.items[i]->kind == EXPR_BINARY && c.items[i]->op == EOP_OR &&
            !(c.items[i]->flags & EXPR_NONDET)) {
            struct expr *f = factor_or(pl, c.items[i]);
            any |= f != c.items[i];
            c.items[i] = f;
        }
    if (any && !pl->rc)
        *slot = conj_join(pl, &c);
}

/* ---- pushdown and join keys ------------------------------------------------------------- */

static bool keeps_left(enum join_kind k)
{
    return k == JOIN_INNER || k == JOIN_CROSS || k == JOIN_LEFT;
}

static bool keeps_right(enum join_kind k)
{
    return k == JOIN_INNER || k == JOIN_CROSS || k == JOIN_RIGHT;
}

/* A WHERE conjunct over the join's output: into a side, into the join's
 * condition, or false to keep it above. */
static bool push_into_join(planner *pl, struct plan *j, struct expr *c)
{
    if (c->flags & EXPR_NONDET)
        return false;
    enum join_kind k = j->u.join.kind;
    switch (expr_sides(c, j->left->ncols)) {
    case 1:
        if (!keeps_left(k))
            return false;
        plan_add_filter(pl, &j->left, c);
        return true;
    case 2:
        if (!keeps_right(k))
            return false;
        plan_add_filter(pl, &j->right, expr_shift(pl, c, j->left->ncols));
        return true;
    case 3:
        if (k != JOIN_INNER && k != JOIN_CROSS)
            return false;
        j->u.join.residual = expr_and(pl, j->u.join.residual, c);
        j->u.join.kind = JOIN_INNER;
        return true;
    default:
        return false;
    }
}

static void push_filter(planner *pl, struct plan **slot)
{
    struct plan *f = *slot;
    while (f->in->kind == PLAN_FILTER && !f->in->shared) {
        f->u.pred = expr_and(pl, f->in->u.pred, f->u.pred);
        f->in = f->in->in;
    }
    if (f->in->kind != PLAN_JOIN || f->in->shared)
        return;
    struct conj c = { 0 }, keep = { 0 };
    conj_split(pl, f->u.pred, &c);
    for (uint32_t i = 0; i < c.n && !pl->rc; i++)
        if (!push_into_join(pl, f->in, c.items[i]))
            conj_split(pl, c.items[i], &keep);
    if (pl->rc)
        return;
    if (keep.n == 0)
        *slot = f->in;
    else
        f->u.pred = conj_join(pl, &keep);
}

static bool add_key(planner *pl, struct plan *j, struct expr *l, struct expr *r,
                    const struct expr *eq)
{
    uint32_t n = j->u.join.nkeys;
    struct join_key *keys = planner_alloc(pl, (n + 1) * sizeof *keys);
    struct expr *rs = expr_shift(pl, r, j->left->ncols);
    if (!keys || !rs)
        return false;
    if (n)
        memcpy(keys, j->u.join.keys, n * sizeof *keys);
    keys[n] = (struct join_key){ l, rs, (enum col_type)eq->aff, (enum ldb_collation)eq->coll };
    j->u.join.keys = keys;
    j->u.join.nkeys = n + 1;
    return true;
}

/* A conjunct of a join condition: an equi-key, a filter on one input
 * (where the join kind allows), or part of the residual. */
static bool place_join_conj(planner *pl, struct plan *j, struct expr *c)
{
    if (c->flags & EXPR_NONDET)
        return false;
    uint32_t split_at = j->left->ncols;
    if (c->kind == EXPR_BINARY && c->op == EOP_EQ) {
        int a = expr_sides(c->args[0], split_at), b = expr_sides(c->args[1], split_at);
        if (a == 1 && b == 2)
            return add_key(pl, j, c->args[0], c->args[1], c);
        if (a == 2 && b == 1)
            return add_key(pl, j, c->args[1], c->args[0], c);
    }
    enum join_kind k = j->u.join.kind;
    int s = expr_sides(c, split_at);
    /* in an ON clause a side may be filtered unless the join keeps all its rows */
    if (s == 1 && (k == JOIN_INNER || k == JOIN_RIGHT)) {
        plan_add_filter(pl, &j->left, c);
        return true;
    }
    if (s == 2 && (k == JOIN_INNER || k == JOIN_LEFT)) {
        plan_add_filter(pl, &j->right, expr_shift(pl, c, split_at));
        return true;
    }
    return false;
}

static void extract_keys(planner *pl, struct plan *j)
{
    if (!j->u.join.residual || j->u.join.kind == JOIN_CROSS)
        return;
    struct conj c = { 0 }, rest = { 0 };
    conj_split(pl, j->u.join.residual, &c);
    for (uint32_t i = 0; i < c.n && !pl->rc; i++)
        if (!place_join_conj(pl, j, c.items[i]))
            conj_split(pl, c.items[i], &rest);
    if (!pl->rc)
        j->u.join.residual = conj_join(pl, &rest);
}

/* ---- access paths ---------------------------------------------------------------------- */

enum bound_kind { B_EQ, B_LO, B_HI };

struct bound {
    uint32_t col;
    enum bound_kind kind;
    bool incl;
    struct expr *probe;
    enum col_type aff;
    enum ldb_collation coll;
    const struct expr *conj;   /* the conjunct it comes from */
};

struct bounds {
    struct bound items[64];
    uint32_t n;
};

static bool probe_ok(const struct expr *e)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    column_range(e, &lo, &hi);
    return lo >= hi && !(e->flags & EXPR_NONDET);
}

static void add_bound(struct bounds *b, uint32_t col, enum bound_kind kind, bool incl,
                      struct expr *probe, const struct expr *cmp)
{
    if (b->n < 64)
        b->items[b->n++] = (struct bound){ col, kind, incl, probe, (enum col_type)cmp->aff,
                                           (enum ldb_collation)cmp->coll, cmp };
}

static void comparison_bounds(struct bounds *b, struct expr *c)
{
    static const enum expr_op flip[] = { [EOP_EQ] = EOP_EQ, [EOP_LT] = EOP_GT,
                                         [EOP_LE] = EOP_GE, [EOP_GT] = EOP_LT,
                                         [EOP_GE] = EOP_LE };
    enum expr_op op = (enum expr_op)c->op;
    struct expr *col = c->args[0], *probe = c->args[1];
    if (col->kind != EXPR_COLUMN) {
        col = c->args[1];
        probe = c->args[0];
        op = flip[op];
    }
    if (col->kind != EXPR_COLUMN || !probe_ok(probe))
        return;
    switch (op) {
    case EOP_EQ: add_bound(b, col->u.index, B_EQ, true, probe, c); break;
    case EOP_GT: add_bound(b, col->u.index, B_LO, false, probe, c); break;
    case EOP_GE: add_bound(b, col->u.index, B_LO, true, probe, c); break;
    case EOP_LT: add_bound(b, col->u.index, B_HI, false, probe, c); break;
    case EOP_LE: add_bound(b, col->u.index, B_HI, true, probe, c); break;
    default: break;
    }
}

static void collect_bounds(struct bounds *b, struct expr *c)
{
    if (c->kind == EXPR_BINARY && c->op == EOP_AND) {
        collect_bounds(b, c->args[0]);
        collect_bounds(b, c->args[1]);
    } else if (c->kind == EXPR_BINARY && (c->op == EOP_EQ || (c->op >= EOP_LT && c->op <= EOP_GE))) {
        comparison_bounds(b, c);
    } else if (c->kind == EXPR_BETWEEN && !(c->flags & EXPR_NEGATED) &&
               c->args[0]->kind == EXPR_COLUMN && probe_ok(c->args[1]) &&
               probe_ok(c->args[2])) {
        uint32_t col = c->args[0]->u.index;
        add_bound(b, col, B_LO, true, c->args[1], c);
        add_bound(b, col, B_HI, true, c->args[2], c);
        b->items[b->n - 1].aff = (enum col_type)c->aff2;
        b->items[b->n - 1].coll = (enum ldb_collation)c->u.coll_hi;
    }
}

/* Whether the comparison's affinity leaves the column's stored values as
 * they are, so that the index order is the comparison's order: no
 * affinity, or one the column's values already have. */
static bool affinity_keeps_column(enum col_type aff, enum col_type type)
{
    return aff == COL_ANY || (col_type_numeric(aff) && col_type_numeric(type)) ||
           (aff == COL_TEXT && type == COL_TEXT);
}

/* A bound usable for a key part: same column, an affinity that does not
 * convert the column's values, and the part's collation when the column
 * can hold text. */
static const struct bound *find_bound(const struct bounds *b, const struct table *t,
                                      uint32_t col, enum ldb_collation coll,
                                      enum bound_kind kind)
{
    enum col_type type = table_schema(t)->cols[col].type;
    bool text_capable = !col_type_numeric(type) && type != COL_BOOLEAN;
    for (uint32_t i = 0; i < b->n; i++)
        if (b->items[i].col == col && b->items[i].kind == kind &&
            affinity_keeps_column(b->items[i].aff, type) &&
            (!text_capable || b->items[i].coll == coll))
            return &b->items[i];
    return NULL;
}

struct choice {
    int score;
    struct table_index *ix;    /* NULL: primary key */
    uint32_t neq;
    const struct bound *eq[INDEX_MAX_PARTS];
    const struct bound *lo, *hi;
};

static void try_primary_key(const struct bounds *b, const struct table *t, struct choice *best)
{
    const struct schema *sc = table_schema(t);
    struct choice c = { 1000000, NULL, sc->npk, { 0 }, NULL, NULL };
    for (uint32_t i = 0; i < sc->npk; i++)
        if (!(c.eq[i] = find_bound(b, t, sc->pk[i], sc->cols[sc->pk[i]].coll, B_EQ)))
            return;
    *best = c;
}

static void try_index(const struct bounds *b, const struct table *t, struct table_index *ix,
                      struct choice *best)
{
    struct choice c = { 0, ix, 0, { 0 }, NULL, NULL };
    while (c.neq < ix->nparts &&
           (c.eq[c.neq] = find_bound(b, t, ix->parts[c.neq].col, ix->parts[c.neq].coll, B_EQ)))
        c.neq++;
    if (ix->kind == INDEX_HASH && c.neq < ix->nparts)
        return;
    if (c.neq < ix->nparts && ix->kind == INDEX_ORDERED && !ix->parts[c.neq].desc &&
        ix->parts[c.neq].nulls_first) {
        const struct key_part *kp = &ix->parts[c.neq];
        c.lo = find_bound(b, t, kp->col, kp->coll, B_LO);
        c.hi = find_bound(b, t, kp->col, kp->coll, B_HI);
    }
    c.score = (ix->unique && c.neq == ix->nparts) ? 100000 : (int)c.neq * 10 + (c.lo || c.hi) * 5;
    if (c.score > best->score)
        *best = c;
}

static void set_access(planner *pl, struct plan *scan, const struct choice *c)
{
    struct access_path *a = &scan->u.scan.access;
    a->kind = c->ix ? ACCESS_INDEX : ACCESS_KEY;
    a->index = c->ix;
    a->neq = c->neq;
    if (c->neq && !(a->eq = planner_alloc(pl, c->neq * sizeof *a->eq)))
        return;
    for (uint32_t i = 0; i < c->neq; i++) {
        a->eq[i] = c->eq[i]->probe;
        a->aff[i] = (uint8_t)c->eq[i]->aff;
    }
    const struct bound *r = c->lo ? c->lo : c->hi;
    if (r)
        a->aff[c->neq] = (uint8_t)r->aff;
    if (c->lo) {
        a->lo = c->lo->probe;
        a->lo_incl = c->lo->incl;
    }
    if (c->hi) {
        a->hi = c->hi->probe;
        a->hi_incl = c->hi->incl;
        if (c->lo && c->hi->aff != c->lo->aff)
            a->hi = NULL; /* one affinity per range: keep the lower bound */
    }
}

/* Whether the access path alone guarantees conjunct c (so the FILTER need
 * not test it again). */
static bool consumed(const struct choice *ch, const struct access_path *a, const struct expr *c)
{
    for (uint32_t i = 0; i < ch->neq; i++)
        if (ch->eq[i]->conj == c)
            return true;
    bool lo = ch->lo && ch->lo->conj == c, hi = a->hi && ch->hi && ch->hi->conj == c;
    if (c->kind == EXPR_BETWEEN)
        return lo && hi;
    return lo || hi;
}

/* The FILTER over a SCAN: choose the scan's access path, then tell the
 * executor which conjuncts it still has to test. */
static void choose_access(planner *pl, struct plan *f)
{
    struct plan *scan = f->in;
    if (scan->u.scan.not_indexed)
        return;
    struct bounds *b = planner_alloc(pl, sizeof *b);
    if (!b)
        return;
    collect_bounds(b, f->u.pred);
    if (b->n == 0)
        return;
    struct table *t = scan->u.scan.table;
    struct choice best = { 0, NULL, 0, { 0 }, NULL, NULL };
    try_primary_key(b, t, &best);
    for (size_t i = 0; i < table_index_count(t) && best.score < 1000000; i++)
        try_index(b, t, table_index_at(t, i), &best);
    if (best.score == 0)
        return;
    set_access(pl, scan, &best);
    struct conj c = { 0 }, rest = { 0 };
    conj_split(pl, f->u.pred, &c);
    for (uint32_t i = 0; i < c.n && !pl->rc; i++)
        if (!consumed(&best, &scan->u.scan.access, c.items[i]))
            conj_split(pl, c.items[i], &rest);
    if (pl->rc)
        return;
    f->exec_pred = conj_join(pl, &rest);
    f->exec_pred_set = true;
}

/* ---- ordered reads ----------------------------------------------------------------------- */

/* The scan under a chain of FILTERs and column-passing PROJECTs, with
 * col mapped down to the scan's column; NULL when there is none. */
static struct plan *scan_below(struct plan *p, uint32_t *cols, uint32_t n)
{
    for (;;) {
        if (p->shared)
            return NULL;
        if (p->kind == PLAN_SCAN)
            return p;
        if (p->kind == PLAN_FILTER) {
            p = p->in;
            continue;
        }
        if (p->kind != PLAN_PROJECT)
            return NULL;
        for (uint32_t i = 0; i < n; i++) {
            const struct expr *e = p->u.exprs[cols[i]];
            if (e->kind != EXPR_COLUMN)
                return NULL;
            cols[i] = e->u.index;
        }
        p = p->in;
    }
}

static void ordered_read(struct plan *sort)
{
    uint32_t n = sort->u.sort.nkeys, cols[INDEX_MAX_PARTS];
    if (n > INDEX_MAX_PARTS)
        return;
    for (uint32_t i = 0; i < n; i++) {
        if (sort->u.sort.keys[i].e->kind != EXPR_COLUMN)
            return;
        cols[i] = sort->u.sort.keys[i].e->u.index;
    }
    struct plan *scan = scan_below(sort->in, cols, n);
    if (!scan || scan->u.scan.access.kind != ACCESS_FULL || scan->u.scan.not_indexed)
        return;
    struct order_term terms[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < n; i++)
        terms[i] = (struct order_term){ cols[i], sort->u.sort.keys[i].desc,
                                        sort->u.sort.keys[i].nulls_first,
                                        sort->u.sort.keys[i].coll };
    struct table *t = scan->u.scan.table;
    for (size_t i = 0; i < table_index_count(t); i++) {
        struct table_index *ix = table_index_at(t, i);
        struct order_spec spec;
        if (ix->kind != INDEX_ORDERED || order_spec_for(ix, terms, n, &spec) != LDB_OK)
            continue;
        scan->u.scan.access.kind = ACCESS_ORDERED;
        scan->u.scan.access.index = ix;
        scan->u.scan.access.spec = spec;
        sort->u.sort.presorted = true;
        return;
    }
}

/* ---- index lookup joins ------------------------------------------------------------------- */

/*
 * The build side of an equi-join is looked up instead of hashed when it is
 * a full scan of a table whose primary key, or one of whose indexes, has
 * the join's keys as its leading parts (all of them for the primary key
 * and a hash index), compared as the table stores them: one probe per row
 * of the other side instead of reading and hashing the whole table (a
 * star schema's dimensions, a chain's indexed columns). A key or hash
 * index probe costs what a hash join's probe does, so it is chosen
 * whenever it applies (only where the build side is not preserved by the
 * join); a seek in an ordered index costs SEEK_COST probes, so it is
 * chosen while the other side's estimated rows make that cheaper than
 * hashing the table, or when the table is small (either way is cheap
 * then, and a lookup allocates nothing).
 */
#define LOOKUP_SMALL 1024

/* Whether the key's affinity leaves column col's stored values as they
 * are: none, the column's own, or NUMERIC over an INTEGER or NUMERIC
 * column (which already converted numeric text). */
static bool stores_as_compared(const struct join_key *k, const struct plan_col *col)
{
    return k->aff == COL_ANY || k->aff == col->aff ||
           (k->aff == COL_NUMERIC && (col->aff == COL_INTEGER || col->aff == COL_NUMERIC));
}

/* Whether the keys on side left of j read the columns cols[0..n) (with
 * collations colls), each exactly once: part[i] gets key i's place. */
static bool keys_cover(const struct plan *j, bool left, const struct plan *s, const uint32_t *cols,
                       const enum ldb_collation *colls, uint32_t n, uint32_t *part)
{
    if (j->u.join.nkeys != n)
        return false;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct join_key *k = &j->u.join.keys[i];
        const struct expr *e = left ? k->left : k->right;
        if (e->kind != EXPR_COLUMN || !stores_as_compared(k, &s->cols[e->u.index]))
            return false;
        uint32_t p = 0;
        while (p < n && (cols[p] != e->u.index || ((seen >> p) & 1)))
            p++;
        if (p == n || k->coll != colls[p])
            return false;
        seen |= (uint64_t)1 << p;
        part[i] = p;
    }
    return true;
}

/* The index of t whose leading parts the keys are (the primary key: NULL
 * with *ok), into part. */
static struct table_index *key_source(const struct plan *j, bool left, const struct plan *s,
                                      uint32_t *part, bool *ok)
{
    const struct table *t = s->u.scan.table;
    const struct schema *sc = table_schema(t);
    uint32_t n = j->u.join.nkeys, cols[INDEX_MAX_PARTS];
    enum ldb_collation colls[INDEX_MAX_PARTS];
    for (uint32_t p = 0; p < sc->npk && p < INDEX_MAX_PARTS; p++) {
        cols[p] = sc->pk[p];
        colls[p] = s->cols[sc->pk[p]].coll;
    }
    if ((*ok = sc->npk == n && keys_cover(j, left, s, cols, colls, n, part)))
        return NULL;
    for (size_t i = 0; i < table_index_count(t); i++) {
        struct table_index *ix = table_index_at(t, i);
        if (ix->nparts < n || (ix->kind == INDEX_HASH && ix->nparts != n))
            continue;
        for (uint32_t p = 0; p < n; p++) {
            cols[p] = ix->parts[p].col;
            colls[p] = ix->parts[p].coll;
        }
        if ((*ok = keys_cover(j, left, s, cols, colls, n, part)))
            return ix;
    }
    return NULL;
}

static bool lookup_side(planner *pl, struct plan *j, bool left)
{
    const struct plan *s = left ? j->left : j->right;
    if (s->kind != PLAN_SCAN || s->shared || s->u.scan.not_indexed ||
        s->u.scan.access.kind != ACCESS_FULL || j->u.join.nkeys > INDEX_MAX_PARTS)
        return false;
    uint32_t *part = planner_alloc(pl, j->u.join.nkeys * sizeof *part);
    bool ok = false;
    struct table_index *ix = part ? key_source(j, left, s, part, &ok) : NULL;
    if (!ok)
        return false;
    double probes = estimate_rows(left ? j->right : j->left), rows = estimate_rows(s);
    if (ix && ix->kind == INDEX_ORDERED && rows > LOOKUP_SMALL && probes * SEEK_COST > probes + rows)
        return false; /* seeking per row costs more than hashing the table once */
    j->u.join.lookup = s->u.scan.table;
    j->u.join.lookup_index = ix;
    j->u.join.lookup_part = part;
    j->u.join.build_left = left;
    return true;
}

static void choose_lookup(planner *pl, struct plan *j)
{
    enum join_kind k = j->u.join.kind;
    if ((k == JOIN_INNER || k == JOIN_LEFT) && lookup_side(pl, j, false))
        return;
    if (k == JOIN_INNER || k == JOIN_RIGHT)
        lookup_side(pl, j, true);
}

/* ---- the walk ---------------------------------------------------------------------------------- */

static void optimize(planner *pl, struct plan **slot);

static void optimize_expr(planner *pl, struct expr *e)
{
    if (!e || pl->rc)
        return;
    if (e->kind == EXPR_SUBQUERY) {
        optimize(pl, &e->u.sq.plan);
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            optimize_expr(pl, e->u.sq.captures[i]);
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        optimize_expr(pl, e->args[i]);
}

static void optimize_exprs(planner *pl, struct expr **es, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        optimize_expr(pl, es[i]);
}

static void optimize_node_exprs(planner *pl, struct plan *p)
{
    switch (p->kind) {
    case PLAN_VALUES: optimize_exprs(pl, p->u.values.cells, p->u.values.nrows * p->ncols); break;
    case PLAN_FILTER: optimize_expr(pl, p->u.pred); break;
    case PLAN_PROJECT: optimize_exprs(pl, p->u.exprs, p->ncols); break;
    case PLAN_JOIN:
        optimize_expr(pl, p->u.join.residual);
        for (uint32_t i = 0; i < p->u.join.nkeys; i++) {
            optimize_expr(pl, p->u.join.keys[i].left);
            optimize_expr(pl, p->u.join.keys[i].right);
        }
        break;
    case PLAN_AGGREGATE:
        optimize_exprs(pl, p->u.agg.groups, p->u.agg.ngroups);
        for (uint32_t i = 0; i < p->u.agg.naggs; i++) {
            optimize_exprs(pl, p->u.agg.aggs[i].args, p->u.agg.aggs[i].nargs);
            optimize_expr(pl, p->u.agg.aggs[i].filter);
        }
        break;
    case PLAN_SORT:
        for (uint32_t i = 0; i < p->u.sort.nkeys; i++)
            optimize_expr(pl, p->u.sort.keys[i].e);
        break;
    case PLAN_LIMIT:
        optimize_expr(pl, p->u.limit.limit);
        optimize_expr(pl, p->u.limit.offset);
        break;
    default:
        break;
    }
}

static void optimize(planner *pl, struct plan **slot)
{
    if (pl->rc)
        return;
    struct plan *p = *slot;
    if (p->shared) {
        if (p->shared->planned)
            return;
        p->shared->planned = true;
    }
    if (p->kind == PLAN_FILTER)
        factor_ors(pl, &p->u.pred);
    else if (p->kind == PLAN_JOIN)
        factor_ors(pl, &p->u.join.residual);
    if (p->kind == PLAN_FILTER || p->kind == PLAN_JOIN) {
        join_reorder(pl, slot);
        if (*slot != p) {
            optimize(pl, slot);
            return;
        }
    }
    if (p->kind == PLAN_FILTER) {
        push_filter(pl, slot);
        if (*slot != p) {
            optimize(pl, slot);
            return;
        }
    }
    if (p->kind == PLAN_JOIN)
        extract_keys(pl, p);
    optimize_node_exprs(pl, p);
    if (p->in)
        optimize(pl, &p->in);
    if (p->left)
        optimize(pl, &p->left);
    if (p->right)
        optimize(pl, &p->right);
    if (pl->rc)
        return;
    if (p->kind == PLAN_FILTER && p->in->kind == PLAN_SCAN && !p->in->shared)
        choose_access(pl, p);
    else if (p->kind == PLAN_SORT)
        ordered_read(p);
    else if (p->kind == PLAN_JOIN && p->u.join.nkeys) {
        p->u.join.build_left = estimate_rows(p->left) < estimate_rows(p->right);
        choose_lookup(pl, p);
    }
}

int planner_optimize(plan_arena *pa, struct plan **root)
{
    planner pl = { pa, LDB_OK, NULL };
    optimize(&pl, root);
    return pl.rc;
}

double planner_estimate(const struct plan *p) { return estimate_rows(p); }

int planner_optimize_expr(plan_arena *pa, struct expr *e)
{
    planner pl = { pa, LDB_OK, NULL };
    optimize_expr(&pl, e);
    return pl.rc;
}
