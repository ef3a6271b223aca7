/*
 * keys.c - giving every result row a key (seed 000, "Weighted relations
 * and public keys").
 *
 * live_ensure_key rewrites a plan so that its output carries a unique key:
 * the primary key of a scanned table, the group columns of an aggregate,
 * every column of a DISTINCT or set operation. A projection that drops a
 * key column gets it back as a hidden column appended after the visible
 * ones; a UNION ALL tags each branch and carries both branches' keys, so
 * equal rows from different branches stay apart; a side of a FULL JOIN
 * whose key may be all NULL carries a presence column, so its rows stay
 * apart from the other side's NULL-extended ones. A join side joined on
 * its whole key (each row of the other side meets at most one of its
 * rows) adds nothing to the join's key. Hidden columns are only ever
 * appended, so every expression above keeps reading the columns it read
 * before.
 *
 * The plan is a DAG: a shared node (a CTE or view body, plan.h) is
 * rewritten once, whichever parent asks first, and its rewrite is shared
 * again, so the keyed plan stays as large as the plan and the dataflow
 * compiler makes one subgraph for the body.
 */
#include "live/program.h"

#include "base/ptrmap.h"
#include "live/build.h"
#include "storage/table.h"

#include <string.h>

/* One rewrite: what it knows of the shared nodes met so far. */
struct keyer {
    plan_arena *pa;
    ptrmap done;     /* shared node -> its struct keyed (in pa) */
    ptrmap nonnull;  /* shared node -> per column: 0 unknown, 1 nullable, 2 never NULL */
};

static int ensure(struct keyer *c, struct plan *p, struct keyed *k);

static int key_scan(const struct plan *p, struct keyed *k)
{
    const struct schema *sc = table_schema(p->u.scan.table);
    k->n = sc->npk;
    for (uint32_t i = 0; i < sc->npk; i++)
        k->cols[i] = sc->pk[i];
    return LDB_OK;
}

/* VALUES gets a hidden row-number column. */
static int key_values(plan_arena *pa, struct plan *p, struct keyed *k)
{
    uint32_t nr = p->u.values.nrows, nc = p->ncols;
    struct plan *v = plan_new(pa, PLAN_VALUES, nc + 1);
    expr **cells = plan_alloc(pa, ((size_t)nr * (nc + 1) + 1) * sizeof *cells);
    if (!v || !cells)
        return LDB_NOMEM;
    pb_copy_cols(v->cols, p);
    v->cols[nc].name = "?rownum?";
    v->cols[nc].type = COL_INTEGER;
    v->cols[nc].hidden = true;
    for (uint32_t r = 0; r < nr; r++) {
        if (nc) /* SELECT without FROM reads one row of no columns: no cells */
            memcpy(&cells[(size_t)r * (nc + 1)], &p->u.values.cells[(size_t)r * nc],
                   nc * sizeof *cells);
        value num = value_int(r);
        if (!(cells[(size_t)r * (nc + 1) + nc] = xb_const(pa, &num)))
            return LDB_NOMEM;
    }
    v->u.values.nrows = nr;
    v->u.values.cells = cells;
    k->plan = v;
    k->n = 1;
    k->cols[0] = nc;
    return LDB_OK;
}

/* PROJECT: keep the input's key columns, appending the missing ones. */
static int key_project(struct keyer *kc, struct plan *p, struct keyed *k)
{
    plan_arena *pa = kc->pa;
    struct keyed in;
    int rc = ensure(kc, p->in, &in);
    if (rc)
        return rc;
    uint32_t n = p->ncols, extra = 0;
    uint32_t pos[KEYED_MAX];
    for (uint32_t i = 0; i < in.n; i++) {
        pos[i] = UINT32_MAX;
        for (uint32_t j = 0; j < n && pos[i] == UINT32_MAX; j++) {
            const expr *e = p->u.exprs[j];
            if (e->kind == EXPR_COLUMN && e->u.index == in.cols[i])
                pos[i] = j;
        }
        if (pos[i] == UINT32_MAX)
            pos[i] = n + extra++;
    }
    if (extra == 0 && in.plan == p->in) {
        k->plan = p;
    } else {
        expr **es = pb_array(pa, p->u.exprs, n, n + extra, sizeof *es);
        struct plan_col *meta = pb_array(pa, p->cols, n, n + extra, sizeof *meta);
        if (!es || !meta)
            return LDB_NOMEM;
        for (uint32_t i = 0; i < in.n; i++) {
            if (pos[i] < n)
                continue;
            uint32_t c = in.cols[i];
            if (!(es[pos[i]] = xb_column(pa, c, &in.plan->cols[c])))
                return LDB_NOMEM;
            meta[pos[i]] = in.plan->cols[c];
            meta[pos[i]].hidden = true;
        }
        if (!(k->plan = pb_project(pa, in.plan, es, n + extra, meta)))
            return LDB_NOMEM;
    }
    k->n = in.n;
    memcpy(k->cols, pos, in.n * sizeof *pos);
    return LDB_OK;
}

/* Nodes whose output is their input's rows: same key, rebuilt over the
 * keyed input (their expressions read the same leading columns). */
static int key_passthrough(struct keyer *kc, struct plan *p, struct keyed *k)
{
    struct keyed in;
    int rc = ensure(kc, p->in, &in);
    if (rc)
        return rc;
    *k = in;
    if (in.plan == p->in) {
        k->plan = p;
        return LDB_OK;
    }
    struct plan *c = plan_new(kc->pa, p->kind, in.plan->ncols);
    if (!c)
        return LDB_NOMEM;
    c->u = p->u;
    c->in = in.plan;
    pb_copy_cols(c->cols, in.plan);
    k->plan = c;
    return LDB_OK;
}

static int key_all_columns(struct plan *p, struct keyed *k)
{
    if (p->ncols > KEYED_MAX)
        return LDB_UNSUPPORTED;
    k->plan = p;
    k->n = p->ncols;
    for (uint32_t i = 0; i < p->ncols; i++)
        k->cols[i] = i;
    return LDB_OK;
}

static bool never_null(struct keyer *kc, const struct plan *p, uint32_t c);

/* never_null of p itself, even when p is shared. */
static bool node_never_null(struct keyer *kc, const struct plan *p, uint32_t c)
{
    switch (p->kind) {
    case PLAN_SCAN:
        return table_schema(p->u.scan.table)->cols[c].not_null;
    case PLAN_VALUES:
        for (uint32_t r = 0; r < p->u.values.nrows; r++) {
            const expr *e = p->u.values.cells[(size_t)r * p->ncols + c];
            if (e->kind != EXPR_CONST || value_is_null(&e->u.v))
                return false;
        }
        return true;
    case PLAN_FILTER:
    case PLAN_SORT:
    case PLAN_LIMIT:
    case PLAN_DISTINCT:
        return never_null(kc, p->in, c);
    case PLAN_PROJECT: {
        const expr *e = p->u.exprs[c];
        if (e->kind == EXPR_CONST)
            return !value_is_null(&e->u.v);
        return e->kind == EXPR_COLUMN && never_null(kc, p->in, e->u.index);
    }
    case PLAN_AGGREGATE: {
        const expr *e = c < p->u.agg.ngroups ? p->u.agg.groups[c] : NULL;
        return e && e->kind == EXPR_COLUMN && never_null(kc, p->in, e->u.index);
    }
    case PLAN_JOIN: {
        enum join_kind k = p->u.join.kind;
        if (c < p->left->ncols)
            return k != JOIN_RIGHT && k != JOIN_FULL && never_null(kc, p->left, c);
        return (k == JOIN_INNER || k == JOIN_CROSS || k == JOIN_RIGHT) &&
               never_null(kc, p->right, c - p->left->ncols);
    }
    case PLAN_SETOP:
        return never_null(kc, p->left, c) && never_null(kc, p->right, c);
    }
    return false;
}

/* The answers known for shared node p (NULL when out of memory: then
 * they are not kept, only computed again). */
static uint8_t *nonnull_memo(struct keyer *kc, const struct plan *p)
{
    uint8_t *known = ptrmap_get_ptr(&kc->nonnull, p);
    if (known)
        return known;
    known = plan_alloc(kc->pa, p->ncols ? p->ncols : 1);
    return known && !ptrmap_put_ptr(&kc->nonnull, p, known) ? known : NULL;
}

/* True when column c of p is never NULL: a NOT NULL table column (a
 * primary key's), a non-NULL constant, kept through nodes that do not
 * NULL-extend it. Answered once per column of a shared node. */
static bool never_null(struct keyer *kc, const struct plan *p, uint32_t c)
{
    uint8_t *known = p->shared ? nonnull_memo(kc, p) : NULL;
    if (known && known[c])
        return known[c] == 2;
    bool nn = node_never_null(kc, p, c);
    if (known)
        known[c] = nn ? 2 : 1;
    return nn;
}

/*
 * A side of a FULL JOIN appears NULL-extended: its key reads all NULL
 * then, and a present row whose key is all NULL too (an empty key, or
 * nullable key columns: a scalar aggregate, DISTINCT over NULLs) would
 * share the other side's key. Such a side gets a hidden presence column
 * (TRUE; NULL once extended) as one more key column.
 */
static int mark_presence(struct keyer *kc, struct keyed *side)
{
    plan_arena *pa = kc->pa;
    for (uint32_t i = 0; i < side->n; i++)
        if (never_null(kc, side->plan, side->cols[i]))
            return LDB_OK;
    if (side->n == KEYED_MAX)
        return LDB_UNSUPPORTED;
    struct plan *in = side->plan;
    uint32_t n = in->ncols;
    expr **es = plan_alloc(pa, (n + 1) * sizeof *es);
    struct plan_col *meta = pb_array(pa, in->cols, n, n + 1, sizeof *meta);
    if (!es || !meta || !(es[n] = xb_bool(pa, true)))
        return LDB_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        if (!(es[i] = xb_column(pa, i, &in->cols[i])))
            return LDB_NOMEM;
    memset(&meta[n], 0, sizeof meta[n]);
    meta[n].name = "?present?";
    meta[n].type = COL_BOOLEAN;
    meta[n].hidden = true;
    if (!(side->plan = pb_project(pa, in, es, n + 1, meta)))
        return LDB_NOMEM;
    side->cols[side->n++] = n;
    return LDB_OK;
}

/* Which sides' keys make the join's: both, unless one side is joined on
 * its whole key (plan_joined_on_key: its distinct key values stay distinct
 * under the join's equality) and the other side's rows are never NULL-extended (each
 * of them is then in at most one output row). */
static void key_sides(const struct plan *p, const struct keyed *l, const struct keyed *r,
                      bool *use_l, bool *use_r)
{
    enum join_kind kind = p->u.join.kind;
    *use_l = true;
    *use_r = kind != JOIN_SEMI && kind != JOIN_ANTI;
    if (!*use_r || kind == JOIN_FULL)
        return;
    if (kind != JOIN_RIGHT && plan_joined_on_cols(p, true, r->plan, r->cols, r->n))
        *use_r = false;
    else if (kind != JOIN_LEFT && plan_joined_on_cols(p, false, l->plan, l->cols, l->n))
        *use_l = false;
}

/* Moves the hidden columns of a keyed join side after both sides'
 * declared columns: left ++ right ++ left hidden ++ right hidden. */
static int key_join(struct keyer *kc, struct plan *p, struct keyed *k)
{
    plan_arena *pa = kc->pa;
    struct keyed l, r;
    int rc = ensure(kc, p->left, &l);
    if (!rc)
        rc = ensure(kc, p->right, &r);
    if (!rc && p->u.join.kind == JOIN_FULL && !(rc = mark_presence(kc, &l)))
        rc = mark_presence(kc, &r);
    if (rc)
        return rc;
    bool left_only = p->u.join.kind == JOIN_SEMI || p->u.join.kind == JOIN_ANTI;
    bool use_l, use_r;
    key_sides(p, &l, &r, &use_l, &use_r);
    uint32_t nl = p->left->ncols, nr = p->right->ncols;
    uint32_t lx = l.plan->ncols - nl, rx = r.plan->ncols - nr;
    if ((use_l ? l.n : 0) + (use_r ? r.n : 0) > KEYED_MAX)
        return LDB_UNSUPPORTED;
    struct plan *j = p;
    if (lx || rx) {
        /* keys and residual read left ++ right: shift right references
         * past the left side's hidden columns */
        struct join_key *keys = pb_array(pa, p->u.join.keys, p->u.join.nkeys,
                                         p->u.join.nkeys + 1, sizeof *keys);
        if (!keys)
            return LDB_NOMEM;
        expr *res = NULL;
        if (p->u.join.residual) {
            struct plan *both = pb_join(pa, JOIN_CROSS, l.plan, r.plan, NULL, 0, NULL);
            if (!both || !(res = xb_residual_past(pa, p->u.join.residual, both, nl, lx)))
                return LDB_NOMEM;
        }
        j = pb_join(pa, p->u.join.kind, l.plan, r.plan, keys, p->u.join.nkeys, res);
        if (!j)
            return LDB_NOMEM;
    }
    /* output of j: L ++ Lx ++ R ++ Rx; reorder to L ++ R ++ Lx ++ Rx */
    uint32_t total = j->ncols;
    uint32_t order[2 * KEYED_MAX + 512];
    if (total > sizeof order / sizeof order[0])
        return LDB_UNSUPPORTED;
    uint32_t n = 0;
    for (uint32_t i = 0; i < nl; i++)
        order[n++] = i;
    if (!left_only)
        for (uint32_t i = 0; i < nr; i++)
            order[n++] = nl + lx + i;
    for (uint32_t i = 0; i < lx; i++)
        order[n++] = nl + i;
    if (!left_only)
        for (uint32_t i = 0; i < rx; i++)
            order[n++] = nl + lx + nr + i;
    /* where each old position went */
    uint32_t where[2 * KEYED_MAX + 512];
    for (uint32_t i = 0; i < n; i++)
        where[order[i]] = i;
    k->n = 0;
    for (uint32_t i = 0; use_l && i < l.n; i++)
        k->cols[k->n++] = where[l.cols[i]];
    for (uint32_t i = 0; use_r && i < r.n; i++)
        k->cols[k->n++] = where[nl + lx + r.cols[i]];
    if (lx == 0 && rx == 0) {
        k->plan = j;
        return LDB_OK;
    }
    expr **es = plan_alloc(pa, n * sizeof *es);
    struct plan_col *meta = plan_alloc(pa, n * sizeof *meta);
    if (!es || !meta)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        if (!(es[i] = xb_column(pa, order[i], &j->cols[order[i]])))
            return LDB_NOMEM;
        meta[i] = j->cols[order[i]];
    }
    k->plan = pb_project(pa, j, es, n, meta);
    return k->plan ? LDB_OK : LDB_NOMEM;
}

/* One UNION ALL branch: its columns, the tag, then the key slots of both
 * branches (this branch's key in its own slots, NULL in the other's). */
static struct plan *tagged_branch(plan_arena *pa, const struct keyed *b, uint32_t ncols,
                                  int64_t tag, uint32_t before, uint32_t after)
{
    uint32_t n = ncols + 1 + before + b->n + after;
    expr **es = plan_alloc(pa, n * sizeof *es);
    struct plan_col *meta = plan_alloc(pa, n * sizeof *meta);
    if (!es || !meta)
        return NULL;
    uint32_t k = 0;
    for (uint32_t i = 0; i < ncols; i++, k++) {
        es[k] = xb_column(pa, i, &b->plan->cols[i]);
        meta[k] = b->plan->cols[i];
    }
    value t = value_int(tag), null = value_null();
    memset(&meta[k], 0, (n - k) * sizeof *meta);
    es[k] = xb_const(pa, &t);
    meta[k].name = "?branch?";
    meta[k++].hidden = true;
    for (uint32_t i = 0; i < before; i++, k++) {
        es[k] = xb_const(pa, &null);
        meta[k].hidden = true;
    }
    for (uint32_t i = 0; i < b->n; i++, k++) {
        es[k] = xb_column(pa, b->cols[i], &b->plan->cols[b->cols[i]]);
        meta[k] = b->plan->cols[b->cols[i]];
        meta[k].hidden = true;
    }
    for (uint32_t i = 0; i < after; i++, k++) {
        es[k] = xb_const(pa, &null);
        meta[k].hidden = true;
    }
    return pb_project(pa, b->plan, es, n, meta);
}

static int key_union_all(struct keyer *kc, struct plan *p, struct keyed *k)
{
    plan_arena *pa = kc->pa;
    struct keyed l, r;
    int rc = ensure(kc, p->left, &l);
    if (!rc)
        rc = ensure(kc, p->right, &r);
    if (rc)
        return rc;
    if (1 + l.n + r.n > KEYED_MAX)
        return LDB_UNSUPPORTED;
    uint32_t nc = p->ncols;
    struct plan *lb = tagged_branch(pa, &l, nc, 0, 0, r.n);
    struct plan *rb = tagged_branch(pa, &r, nc, 1, l.n, 0);
    if (!lb || !rb)
        return LDB_NOMEM;
    struct plan *u = plan_new(pa, PLAN_SETOP, lb->ncols);
    if (!u)
        return LDB_NOMEM;
    u->u.setop = SETOP_UNION_ALL;
    u->left = lb;
    u->right = rb;
    pb_copy_cols(u->cols, lb);
    k->plan = u;
    k->n = 1 + l.n + r.n;
    for (uint32_t i = 0; i < k->n; i++)
        k->cols[i] = nc + i;
    return LDB_OK;
}

/* The key of p itself, even when p is shared. */
static int key_node(struct keyer *c, struct plan *p, struct keyed *k)
{
    k->plan = p;
    k->n = 0;
    switch (p->kind) {
    case PLAN_SCAN:
        return key_scan(p, k);
    case PLAN_VALUES:
        return key_values(c->pa, p, k);
    case PLAN_PROJECT:
        return key_project(c, p, k);
    case PLAN_FILTER:
    case PLAN_SORT:
    case PLAN_LIMIT:
        return key_passthrough(c, p, k);
    case PLAN_JOIN:
        return key_join(c, p, k);
    case PLAN_AGGREGATE:
        k->n = p->u.agg.ngroups;
        for (uint32_t i = 0; i < k->n; i++)
            k->cols[i] = i;
        return LDB_OK;
    case PLAN_DISTINCT:
        return key_all_columns(p, k);
    case PLAN_SETOP:
        if (p->u.setop == SETOP_UNION_ALL)
            return key_union_all(c, p, k);
        /* set results and ALL bags fold equal rows: all columns */
        return key_all_columns(p, k);
    }
    return LDB_INTERNAL;
}

/* A shared node's rewrite is made once and is shared in turn (marked, so
 * that the executor and the plan's walks meet it once too). */
static int ensure(struct keyer *c, struct plan *p, struct keyed *k)
{
    if (!p->shared)
        return key_node(c, p, k);
    struct keyed *done = ptrmap_get_ptr(&c->done, p);
    if (done) {
        *k = *done;
        return LDB_OK;
    }
    int rc = key_node(c, p, k);
    if (!rc && k->plan != p)
        rc = plan_share(c->pa, k->plan);
    if (rc)
        return rc;
    if (!(done = plan_alloc(c->pa, sizeof *done)))
        return LDB_NOMEM;
    *done = *k;
    return ptrmap_put_ptr(&c->done, p, done);
}

int live_ensure_key(plan_arena *pa, struct plan *p, struct keyed *k)
{
    struct keyer c = { pa, PTRMAP_INIT, PTRMAP_INIT };
    int rc = ensure(&c, p, k);
    ptrmap_free(&c.done);
    ptrmap_free(&c.nonnull);
    return rc;
}
