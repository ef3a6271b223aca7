/*
 * join_order.c - the order of a tree of inner and cross joins.
 *
 * The tree's inputs (leaves: scans, or any node that is not an inner
 * join, such as an outer join, which keeps its own order) and the
 * conditions of its joins and of the FILTER above it form a join graph.
 * Equalities between columns group the columns into classes (a.x = b.x
 * AND b.x = c.x puts all three in one). When every equality of a class
 * compares under one affinity and collation (applied to both operands,
 * then compared: an equivalence), equality is transitive there, so any
 * two of its columns may be joined (a.x = c.x) under that comparison and
 * a constant one equals (a.x = 5) filters all of them.
 *
 * The order is left-deep. Up to DP_MAX leaves it is the cheapest by
 * dynamic programming over the sets of leaves; above, it is greedy: the
 * cheapest next leaf each time. An order never takes a cross product
 * while a leaf that a condition connects is left. The cost of adding leaf
 * j to the joined set S is the rows read from S, the rows of j unless j
 * is a table looked up by the joining column (then each row of S costs
 * one probe of its primary key or hash index, or SEEK_COST for a seek in
 * an ordered index the column leads, whichever is cheaper against
 * hashing), and the rows out. The rows of S are its leaves' rows (after
 * their own filters) times, per class, one over the larger distinct count
 * at each join (estimate.c) and the selectivity of every other condition:
 * the same figure whatever the order.
 *
 * The rewrite is a left-deep chain of cross joins under one FILTER with
 * every condition, the derived ones included (pushdown then places each
 * at the lowest join that has its columns), and a PROJECT putting the
 * columns back in their original order. A tree is left as it is unless
 * the new order costs under 9/10 of its own, takes fewer cross products,
 * or a derived condition was found, so plans in a good order stay put.
 * Two inputs keep their order: it only decides which one is hashed or
 * looked up, which the planner chooses apart, and the live-query layer
 * reads the FROM order of two (the driving side of an ordered window).
 */
#include "sql/planner_internal.h"

#include "storage/store.h"

#include <string.h>

#define JOIN_MAX 64
#define DP_MAX 12
#define MEMBER_MAX 256
#define SEL_COND 0.25

/* How a joined table is reached from the other side's rows. */
enum probe {
    PROBE_HASH,   /* a hash join: read and hash the table, probe per row */
    PROBE_KEY,    /* looked up per row in the primary key or a hash index */
    PROBE_SEEK    /* looked up per row by a seek in an ordered index */
};

struct member {
    uint32_t col;              /* in the original row */
    uint32_t leaf;
    uint32_t cls;
    const struct expr *ref;    /* a column reference to it */
    double distinct;           /* 0 until known; then filled in */
    enum probe looked_up;      /* how its table can be looked up by it */
    bool has_const;            /* a condition sets it to the class constant */
};

struct eq_class {
    const struct expr *proto;  /* one of its equalities (aff, coll) */
    const struct expr *konst;  /* a constant every column equals, or NULL */
    uint64_t leaves;           /* 0 when not safe: its equalities are then
                                  plain conditions */
    bool safe;                 /* transitive: one affinity and collation */
    double *dist;              /* per leaf: its columns' least distinct count */
    uint64_t lookup;           /* leaves looked up by a key by one of its columns */
    uint64_t seek;             /* leaves sought by one of its columns */
};

struct join_graph {
    uint32_t n, nnodes, ncols;
    struct plan *leaf[JOIN_MAX];
    uint32_t off[JOIN_MAX];     /* its first column in the original row */
    double est[JOIN_MAX];       /* rows, with its own conditions applied */
    uint64_t side[JOIN_MAX][2]; /* each join node's left and right leaves */
    struct conj conds;          /* over the original row */
    uint32_t nindexed;          /* conditions uses and cls_of cover (the
                                   rewrite's links come after them) */
    uint64_t *uses;             /* per condition: the leaves it reads */
    int32_t *cls_of;            /* per condition: its class, or -1 */
    double *sel;                /* per condition of no class: its selectivity */
    uint16_t *cls_at[JOIN_MAX];  /* per leaf: the classes it has a column in */
    uint16_t ncls_at[JOIN_MAX];
    uint32_t *plain;            /* conditions of no class over several leaves */
    uint32_t nplain;
    uint32_t nmembers, nclasses;
    struct member m[MEMBER_MAX];
    struct eq_class cls[MEMBER_MAX];
    uint32_t *parent;           /* per original column: union-find */
    int32_t *member_of;         /* per original column: member, or -1 */
    bool derived;               /* conditions were added */
    bool unfit;                 /* a volatile condition, or too many inputs */
};

static bool inner_join(const struct plan *p)
{
    return p->kind == PLAN_JOIN && !p->shared && p->u.join.nkeys == 0 &&
           (p->u.join.kind == JOIN_INNER || p->u.join.kind == JOIN_CROSS);
}

/* ---- the graph ------------------------------------------------------------------------- */

/* Leaves and conditions of the join tree p whose first column is base;
 * returns the leaves it holds. */
static uint64_t collect_joins(planner *pl, struct join_graph *g, struct plan *p, uint32_t base)
{
    if (!inner_join(p)) {
        if (g->n == JOIN_MAX) {
            g->unfit = true;
            return 0;
        }
        g->leaf[g->n] = p;
        g->off[g->n] = base;
        return (uint64_t)1 << g->n++;
    }
    uint64_t l = collect_joins(pl, g, p->left, base);
    uint64_t r = collect_joins(pl, g, p->right, base + p->left->ncols);
    if (g->nnodes < JOIN_MAX) {
        g->side[g->nnodes][0] = l;
        g->side[g->nnodes++][1] = r;
    }
    struct expr *cond = p->u.join.residual;
    if (cond && base) /* over this join's row: to the whole tree's */
        cond = expr_shift(pl, cond, 0u - base);
    if (cond)
        conj_split(pl, cond, &g->conds);
    return l | r;
}

static uint32_t leaf_of(const struct join_graph *g, uint32_t col)
{
    uint32_t i = g->n - 1;
    while (i > 0 && g->off[i] > col)
        i--;
    return i;
}

static uint64_t leaves_read(const struct join_graph *g, const struct expr *e)
{
    uint64_t m = e->kind == EXPR_COLUMN ? (uint64_t)1 << leaf_of(g, e->u.index) : 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        m |= leaves_read(g, e->args[i]);
    if (e->kind == EXPR_SUBQUERY)
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            m |= leaves_read(g, e->u.sq.captures[i]);
    return m;
}

/* ---- classes of equal columns -------------------------------------------------------------- */

static uint32_t find(struct join_graph *g, uint32_t c)
{
    while (g->parent[c] != c)
        c = g->parent[c] = g->parent[g->parent[c]];
    return c;
}

static int32_t member(struct join_graph *g, const struct expr *ref)
{
    uint32_t col = ref->u.index;
    if (g->member_of[col] >= 0)
        return g->member_of[col];
    if (g->nmembers == MEMBER_MAX)
        return -1;
    struct member *m = &g->m[g->nmembers];
    memset(m, 0, sizeof *m);
    m->col = col;
    m->leaf = leaf_of(g, col);
    m->ref = ref;
    return g->member_of[col] = (int32_t)g->nmembers++;
}

static bool is_probe(const struct expr *e)
{
    return e->kind == EXPR_CONST || e->kind == EXPR_PARAM;
}

/* Links the columns of equalities column = column into sets. */
static void link_columns(struct join_graph *g)
{
    for (uint32_t c = 0; c < g->conds.n; c++) {
        const struct expr *e = g->conds.items[c];
        if (e->kind != EXPR_BINARY || e->op != EOP_EQ || e->args[0]->kind != EXPR_COLUMN ||
            e->args[1]->kind != EXPR_COLUMN)
            continue;
        int32_t a = member(g, e->args[0]), b = member(g, e->args[1]);
        if (a >= 0 && b >= 0)
            g->parent[find(g, g->m[a].col)] = find(g, g->m[b].col);
    }
}

/* Whether e compares like the class's other equalities. */
static bool same_comparison(const struct expr *e, const struct expr *proto)
{
    return e->aff == proto->aff && e->coll == proto->coll;
}

/* Numbers the sets as classes. */
static void make_classes(struct join_graph *g)
{
    for (uint32_t i = 0; i < g->nmembers; i++) {
        struct member *m = &g->m[i];
        uint32_t root = find(g, m->col);
        m->cls = UINT32_MAX;
        for (uint32_t k = 0; k < i && m->cls == UINT32_MAX; k++)
            if (find(g, g->m[k].col) == root)
                m->cls = g->m[k].cls;
        if (m->cls == UINT32_MAX) {
            m->cls = g->nclasses++;
            g->cls[m->cls] = (struct eq_class){ NULL, NULL, 0, true, NULL, 0, 0 };
        }
        g->cls[m->cls].leaves |= (uint64_t)1 << m->leaf;
    }
}

/* Records each condition's class and checks that the class is transitive. */
static void classify(struct join_graph *g)
{
    for (uint32_t c = 0; c < g->conds.n; c++) {
        const struct expr *e = g->conds.items[c];
        g->cls_of[c] = -1;
        if (e->kind != EXPR_BINARY || e->op != EOP_EQ)
            continue;
        const struct expr *a = e->args[0], *b = e->args[1];
        if (a->kind != EXPR_COLUMN) {
            const struct expr *t = a;
            a = b;
            b = t;
        }
        if (a->kind != EXPR_COLUMN || g->member_of[a->u.index] < 0)
            continue;
        struct member *m = &g->m[g->member_of[a->u.index]];
        struct eq_class *k = &g->cls[m->cls];
        if (b->kind == EXPR_COLUMN) {
            g->cls_of[c] = (int32_t)m->cls;
        } else if (is_probe(b)) {
            if (!k->konst)
                k->konst = b;
            m->has_const |= k->konst == b;
            if (!k->proto)
                k->proto = e;
            k->safe &= same_comparison(e, k->proto);
            continue;
        } else {
            continue;
        }
        if (!k->proto)
            k->proto = e;
        k->safe &= same_comparison(e, k->proto);
    }
    for (uint32_t c = 0; c < g->conds.n; c++)
        if (g->cls_of[c] >= 0 && !g->cls[g->cls_of[c]].safe)
            g->cls_of[c] = -1;
    for (uint32_t k = 0; k < g->nclasses; k++)
        if (!g->cls[k].safe)
            g->cls[k].leaves = 0;
}

/* A new equality under the class's comparison. */
static struct expr *equality(planner *pl, const struct eq_class *k, const struct expr *a,
                             const struct expr *b)
{
    struct expr *e = planner_alloc(pl, sizeof *e);
    struct expr **args = planner_alloc(pl, 2 * sizeof *args);
    if (!e || !args)
        return NULL;
    *e = *k->proto;
    e->args = args;
    args[0] = (struct expr *)a;
    args[1] = (struct expr *)b;
    return e;
}

/* Each column of a class with a constant gets the constant (a.x = 5 AND
 * a.x = b.y: b.y = 5), so that every input is filtered and may use an
 * index. */
static void derive_constants(planner *pl, struct join_graph *g)
{
    for (uint32_t i = 0; i < g->nmembers && !pl->rc; i++) {
        struct member *m = &g->m[i];
        const struct eq_class *k = &g->cls[m->cls];
        if (!k->safe || !k->konst || m->has_const)
            continue;
        conj_split(pl, equality(pl, k, m->ref, k->konst), &g->conds);
        g->derived = true;
    }
}

/* ---- estimates --------------------------------------------------------------------------- */

static enum probe looked_up_by(const struct plan *leaf, uint32_t col)
{
    if (leaf->kind != PLAN_SCAN || leaf->u.scan.not_indexed)
        return PROBE_HASH;
    const struct table *t = leaf->u.scan.table;
    const struct schema *sc = table_schema(t);
    if (sc->npk == 1 && sc->pk[0] == col)
        return PROBE_KEY;
    enum probe best = PROBE_HASH;
    for (size_t i = 0; i < table_index_count(t); i++) {
        const struct table_index *ix = table_index_at(t, i);
        if (ix->parts[0].col == col && ix->kind == INDEX_HASH && ix->nparts == 1)
            return PROBE_KEY;
        if (ix->parts[0].col == col && ix->kind == INDEX_ORDERED)
            best = PROBE_SEEK;
    }
    return best;
}

/* Distinct counts of the members; unknown ones take the class's largest
 * known count, else their input's rows. */
static void member_distincts(struct join_graph *g)
{
    for (uint32_t i = 0; i < g->nmembers; i++) {
        struct member *m = &g->m[i];
        m->distinct = estimate_distinct(g->leaf[m->leaf], m->col - g->off[m->leaf]);
        m->looked_up = looked_up_by(g->leaf[m->leaf], m->col - g->off[m->leaf]);
    }
    for (uint32_t i = 0; i < g->nmembers; i++) {
        struct member *m = &g->m[i];
        if (m->distinct >= 1)
            continue;
        double best = 0;
        for (uint32_t j = 0; j < g->nmembers; j++)
            if (g->m[j].cls == m->cls && g->m[j].distinct > best)
                best = g->m[j].distinct;
        m->distinct = best >= 1 ? best : g->est[m->leaf];
    }
}

/* A condition of no class: an equality of two columns keeps one over
 * their larger distinct count, any other a quarter. */
static double condition_selectivity(const struct join_graph *g, const struct expr *e)
{
    if (e->kind != EXPR_BINARY || e->op != EOP_EQ || e->args[0]->kind != EXPR_COLUMN ||
        e->args[1]->kind != EXPR_COLUMN)
        return SEL_COND;
    int32_t a = g->member_of[e->args[0]->u.index], b = g->member_of[e->args[1]->u.index];
    if (a < 0 || b < 0)
        return SEL_COND;
    double d = g->m[a].distinct > g->m[b].distinct ? g->m[a].distinct : g->m[b].distinct;
    return d >= 1 ? 1 / d : 1;
}

/* What step_of walks: each leaf's classes, the conditions of no class. */
static bool index_steps(planner *pl, struct join_graph *g)
{
    for (uint32_t i = 0; i < g->n; i++) {
        uint64_t bit = (uint64_t)1 << i;
        uint16_t n = 0;
        for (uint32_t k = 0; k < g->nclasses; k++)
            n += (g->cls[k].leaves & bit) != 0;
        if (n && !(g->cls_at[i] = planner_alloc(pl, n * sizeof *g->cls_at[i])))
            return false;
        g->ncls_at[i] = 0;
        for (uint32_t k = 0; k < g->nclasses; k++)
            if (g->cls[k].leaves & bit)
                g->cls_at[i][g->ncls_at[i]++] = (uint16_t)k;
    }
    if (!(g->plain = planner_alloc(pl, (g->conds.n ? g->conds.n : 1) * sizeof *g->plain)))
        return false;
    g->nplain = 0;
    for (uint32_t c = 0; c < g->conds.n; c++) {
        uint64_t u = g->uses[c];
        if (g->cls_of[c] < 0 && (u & (u - 1)))
            g->plain[g->nplain++] = c;
    }
    return true;
}

static bool estimate_leaves(planner *pl, struct join_graph *g)
{
    for (uint32_t i = 0; i < g->n; i++)
        g->est[i] = estimate_rows(g->leaf[i]);
    for (uint32_t c = 0; c < g->conds.n; c++) {
        uint64_t u = g->uses[c];
        if (u && !(u & (u - 1))) {
            uint32_t i = (uint32_t)__builtin_ctzll(u);
            g->est[i] *= estimate_selectivity(g->leaf[i], g->conds.items[c], g->off[i]);
        }
    }
    for (uint32_t i = 0; i < g->n; i++)
        g->est[i] = g->est[i] < 1 ? 1 : g->est[i];
    member_distincts(g);
    if (!(g->sel = planner_alloc(pl, (g->conds.n ? g->conds.n : 1) * sizeof *g->sel)))
        return false;
    for (uint32_t c = 0; c < g->conds.n; c++)
        g->sel[c] = condition_selectivity(g, g->conds.items[c]);
    for (uint32_t k = 0; k < g->nclasses; k++) {
        struct eq_class *c = &g->cls[k];
        if (!(c->dist = planner_alloc(pl, g->n * sizeof *c->dist)))
            return false;
        memset(c->dist, 0, g->n * sizeof *c->dist);
    }
    for (uint32_t i = 0; i < g->nmembers; i++) {
        const struct member *m = &g->m[i];
        struct eq_class *c = &g->cls[m->cls];
        if (c->dist[m->leaf] == 0 || m->distinct < c->dist[m->leaf])
            c->dist[m->leaf] = m->distinct;
        c->lookup |= (uint64_t)(m->looked_up == PROBE_KEY) << m->leaf;
        c->seek |= (uint64_t)(m->looked_up == PROBE_SEEK) << m->leaf;
    }
    return index_steps(pl, g);
}

/* The least distinct count in class c among the leaves in set. */
static double class_distinct(const struct eq_class *c, uint64_t set)
{
    double d = 0;
    for (uint64_t b = set & c->leaves; b; b &= b - 1) {
        double x = c->dist[__builtin_ctzll(b)];
        d = d == 0 || x < d ? x : d;
    }
    return d;
}

struct step {
    double rows;      /* of set + j */
    bool connected;
    enum probe probe; /* the cheapest way to reach j */
};

/* Joining leaf j to the leaves in set, whose rows are rows. */
static struct step step_of(const struct join_graph *g, uint64_t set, double rows, uint32_t j)
{
    uint64_t bit = (uint64_t)1 << j;
    struct step s = { rows * g->est[j], false, PROBE_HASH };
    for (uint32_t i = 0; i < g->ncls_at[j]; i++) {
        const struct eq_class *c = &g->cls[g->cls_at[j][i]];
        if (!(c->leaves & set))
            continue;
        s.connected = true;
        double dj = c->dist[j], ds = class_distinct(c, set);
        if (!c->konst)
            s.rows /= dj > ds ? dj : ds;
        if (c->lookup & bit)
            s.probe = PROBE_KEY;
        else if ((c->seek & bit) && s.probe == PROBE_HASH)
            s.probe = PROBE_SEEK;
    }
    for (uint32_t i = 0; i < g->nplain; i++) {
        uint64_t u = g->uses[g->plain[i]];
        if ((u & bit) && (u & set) && !(u & ~(set | bit))) {
            s.connected = true;
            s.rows *= g->sel[g->plain[i]];
        }
    }
    return s;
}

static double step_cost(const struct join_graph *g, double rows, const struct step *s, uint32_t j)
{
    switch (s->probe) {
    case PROBE_KEY: return rows + s->rows;
    case PROBE_SEEK: /* or hashed, when that is cheaper (planner.c) */
        return (rows * SEEK_COST < rows + g->est[j] ? rows * SEEK_COST : rows + g->est[j]) +
               s->rows;
    default: return rows + g->est[j] + s->rows;
    }
}

/* The leaves outside set that a condition connects to it. */
static uint64_t neighbors(const struct join_graph *g, uint64_t set)
{
    uint64_t nb = 0;
    for (uint32_t k = 0; k < g->nclasses; k++)
        if (g->cls[k].leaves & set)
            nb |= g->cls[k].leaves;
    for (uint32_t i = 0; i < g->nplain; i++) {
        uint64_t u = g->uses[g->plain[i]], out = u & ~set;
        if ((u & set) && out && !(out & (out - 1)))
            nb |= out;
    }
    return nb & ~set;
}

/* The leaves that may join set next: its neighbors, or any when it has
 * none (a cross product is then unavoidable). */
static uint64_t candidates(const struct join_graph *g, uint64_t set)
{
    uint64_t nb = neighbors(g, set);
    uint64_t all = g->n == 64 ? ~(uint64_t)0 : ((uint64_t)1 << g->n) - 1;
    return nb ? nb : all & ~set;
}

/* ---- orders ---------------------------------------------------------------------------- */

struct order {
    uint32_t leaf[JOIN_MAX];
    double cost;
    uint32_t crosses;
};

static void cost_order(const struct join_graph *g, struct order *o)
{
    uint64_t set = (uint64_t)1 << o->leaf[0];
    double rows = g->est[o->leaf[0]];
    o->cost = rows;
    o->crosses = 0;
    for (uint32_t k = 1; k < g->n; k++) {
        struct step s = step_of(g, set, rows, o->leaf[k]);
        o->cost += step_cost(g, rows, &s, o->leaf[k]);
        o->crosses += !s.connected;
        rows = s.rows;
        set |= (uint64_t)1 << o->leaf[k];
    }
}

static void greedy_order(const struct join_graph *g, struct order *o)
{
    uint32_t first = 0;
    for (uint32_t j = 1; j < g->n; j++)
        first = g->est[j] < g->est[first] ? j : first;
    uint64_t set = (uint64_t)1 << first;
    double rows = g->est[first];
    o->leaf[0] = first;
    for (uint32_t k = 1; k < g->n; k++) {
        int best = -1;
        double best_cost = 0, best_rows = 0;
        for (uint64_t b = candidates(g, set); b; b &= b - 1) {
            uint32_t j = (uint32_t)__builtin_ctzll(b);
            struct step s = step_of(g, set, rows, j);
            double c = step_cost(g, rows, &s, j);
            if (best < 0 || c < best_cost) {
                best = (int)j;
                best_cost = c;
                best_rows = s.rows;
            }
        }
        o->leaf[k] = (uint32_t)best;
        set |= (uint64_t)1 << best;
        rows = best_rows;
    }
    cost_order(g, o);
}

struct dp_entry {
    double cost, rows;
    int8_t last; /* -1: not reached */
};

/* The cheapest left-deep order, over every set of leaves. */
static bool dp_order(planner *pl, const struct join_graph *g, struct order *o)
{
    uint32_t full = (1u << g->n) - 1;
    struct dp_entry *t = planner_alloc(pl, ((size_t)full + 1) * sizeof *t);
    if (!t)
        return false;
    for (uint32_t s = 0; s <= full; s++)
        t[s].last = -1;
    for (uint32_t j = 0; j < g->n; j++)
        t[1u << j] = (struct dp_entry){ g->est[j], g->est[j], (int8_t)j };
    for (uint32_t s = 1; s < full; s++) {
        if (t[s].last < 0)
            continue;
        for (uint64_t b = candidates(g, s); b; b &= b - 1) {
            uint32_t j = (uint32_t)__builtin_ctzll(b);
            struct step st = step_of(g, s, t[s].rows, j);
            double c = t[s].cost + step_cost(g, t[s].rows, &st, j);
            struct dp_entry *e = &t[s | (1u << j)];
            if (e->last < 0 || c < e->cost)
                *e = (struct dp_entry){ c, st.rows, (int8_t)j };
        }
    }
    for (uint32_t s = full, k = g->n; k-- > 0;) {
        o->leaf[k] = (uint32_t)t[s].last;
        s &= ~(1u << t[s].last);
    }
    cost_order(g, o);
    return true;
}

/* Join nodes of the original tree with no condition across their sides. */
static uint32_t original_crosses(const struct join_graph *g)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < g->nnodes; k++) {
        uint64_t l = g->side[k][0], r = g->side[k][1];
        bool across = false;
        for (uint32_t c = 0; c < g->conds.n && !across; c++) {
            uint64_t u = g->uses[c];
            across = (u & l) && (u & r) && !(u & ~(l | r));
        }
        n += !across;
    }
    return n;
}

/* ---- the rewrite ------------------------------------------------------------------------ */

/* Where leaf j joins set only through a class (a.x = b.x, b.x = c.x with
 * c joining a first), the equality that makes it a keyed join. */
static void link_step(planner *pl, struct join_graph *g, uint64_t set, uint32_t j)
{
    uint64_t bit = (uint64_t)1 << j;
    for (uint32_t k = 0; k < g->nclasses; k++) {
        const struct eq_class *c = &g->cls[k];
        if (!c->safe || !(c->leaves & bit) || !(c->leaves & set))
            continue;
        bool direct = false;
        for (uint32_t i = 0; i < g->nindexed && !direct; i++) {
            uint64_t u = g->uses[i];
            direct = g->cls_of[i] == (int32_t)k && (u & bit) && (u & set) && !(u & ~(set | bit));
        }
        const struct member *mj = NULL, *ms = NULL;
        for (uint32_t i = 0; i < g->nmembers; i++) {
            const struct member *m = &g->m[i];
            if (m->cls == k && m->leaf == j && !mj)
                mj = m;
            else if (m->cls == k && (set & ((uint64_t)1 << m->leaf)) && !ms)
                ms = m;
        }
        if (!direct && mj && ms) {
            conj_split(pl, equality(pl, c, ms->ref, mj->ref), &g->conds);
            g->derived = true;
        }
    }
}

/* Conditions read in the new row: column c of leaf i moves to at[i] + (c - off[i]). */
static struct expr *remap(planner *pl, const struct join_graph *g, const uint32_t *at,
                          const struct expr *e)
{
    struct expr *x = planner_alloc(pl, sizeof *x);
    if (!x)
        return NULL;
    *x = *e;
    if (e->kind == EXPR_COLUMN) {
        uint32_t i = leaf_of(g, e->u.index);
        x->u.index = at[i] + (e->u.index - g->off[i]);
        return x;
    }
    if (e->nargs && !(x->args = planner_alloc(pl, e->nargs * sizeof *x->args)))
        return NULL;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!(x->args[i] = remap(pl, g, at, e->args[i])))
            return NULL;
    if (e->kind == EXPR_SUBQUERY && e->u.sq.ncaptures) {
        if (!(x->u.sq.captures = planner_alloc(pl, e->u.sq.ncaptures * sizeof *x->u.sq.captures)))
            return NULL;
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            if (!(x->u.sq.captures[i] = remap(pl, g, at, e->u.sq.captures[i])))
                return NULL;
    }
    return x;
}

/* The leaves joined in order, left-deep, by cross joins; at[i] gets the
 * first column of leaf i in the new row. */
static struct plan *chain_joins(planner *pl, const struct join_graph *g, const uint32_t *order,
                                uint32_t *at)
{
    struct plan *t = g->leaf[order[0]];
    at[order[0]] = 0;
    for (uint32_t k = 1; t && k < g->n; k++) {
        struct plan *r = g->leaf[order[k]];
        struct plan *j = plan_new(pl->pa, PLAN_JOIN, t->ncols + r->ncols);
        if (!j) {
            pl->rc = LDB_NOMEM;
            return NULL;
        }
        memcpy(j->cols, t->cols, t->ncols * sizeof *j->cols);
        memcpy(j->cols + t->ncols, r->cols, r->ncols * sizeof *j->cols);
        j->u.join.kind = JOIN_CROSS;
        j->left = t;
        j->right = r;
        at[order[k]] = t->ncols;
        t = j;
    }
    return t;
}

/* The original columns of root, read from the reordered row (in itself
 * when the order kept every column in place). */
static struct plan *restore_columns(planner *pl, const struct join_graph *g, const uint32_t *at,
                                    const struct plan *root, struct plan *in)
{
    bool moved = false;
    for (uint32_t i = 0; i < g->n; i++)
        moved |= at[i] != g->off[i];
    if (!moved)
        return in;
    struct plan *p = plan_new(pl->pa, PLAN_PROJECT, root->ncols);
    struct expr **es = planner_alloc(pl, root->ncols * sizeof *es);
    if (!p || !es) {
        pl->rc = LDB_NOMEM;
        return NULL;
    }
    memcpy(p->cols, root->cols, root->ncols * sizeof *p->cols);
    for (uint32_t c = 0; c < root->ncols; c++) {
        struct expr *e = planner_alloc(pl, sizeof *e);
        if (!e)
            return NULL;
        memset(e, 0, sizeof *e);
        uint32_t i = leaf_of(g, c);
        e->kind = EXPR_COLUMN;
        e->u.index = at[i] + (c - g->off[i]);
        e->type = (uint8_t)root->cols[c].type;
        e->aff = (uint8_t)root->cols[c].aff;
        e->coll = (uint8_t)root->cols[c].coll;
        e->csrc = COLL_COLUMN;
        es[c] = e;
    }
    p->in = in;
    p->u.exprs = es;
    return p;
}

static struct plan *rewrite(planner *pl, struct join_graph *g, const struct order *o,
                            const struct plan *root)
{
    uint64_t set = (uint64_t)1 << o->leaf[0];
    for (uint32_t k = 1; k < g->n && !pl->rc; k++) {
        link_step(pl, g, set, o->leaf[k]);
        set |= (uint64_t)1 << o->leaf[k];
    }
    uint32_t at[JOIN_MAX];
    struct plan *t = pl->rc ? NULL : chain_joins(pl, g, o->leaf, at);
    pl->fresh = t;
    struct conj moved = { 0 };
    for (uint32_t c = 0; t && c < g->conds.n; c++)
        conj_split(pl, remap(pl, g, at, g->conds.items[c]), &moved);
    if (!t || pl->rc)
        return NULL;
    if (moved.n)
        plan_add_filter(pl, &t, conj_join(pl, &moved));
    return pl->rc ? NULL : restore_columns(pl, g, at, root, t);
}

/* ---- the whole ------------------------------------------------------------------------- */

static bool graph_fit(planner *pl, struct join_graph *g, uint32_t ncols)
{
    if (g->unfit || g->n < 2 || pl->rc)
        return false;
    g->ncols = ncols;
    g->parent = planner_alloc(pl, ncols * sizeof *g->parent);
    g->member_of = planner_alloc(pl, ncols * sizeof *g->member_of);
    if (!g->parent || !g->member_of)
        return false;
    for (uint32_t c = 0; c < ncols; c++) {
        g->parent[c] = c;
        g->member_of[c] = -1;
    }
    for (uint32_t c = 0; c < g->conds.n; c++)
        if (g->conds.items[c]->flags & EXPR_NONDET)
            return false;
    link_columns(g);
    make_classes(g);
    return true;
}

/* uses and cls_of for every condition (after the derived ones). */
static bool index_conditions(planner *pl, struct join_graph *g)
{
    uint32_t n = g->conds.n ? g->conds.n : 1;
    g->uses = planner_alloc(pl, n * sizeof *g->uses);
    g->cls_of = planner_alloc(pl, n * sizeof *g->cls_of);
    if (!g->uses || !g->cls_of)
        return false;
    for (uint32_t c = 0; c < g->conds.n; c++)
        g->uses[c] = leaves_read(g, g->conds.items[c]);
    g->nindexed = g->conds.n;
    classify(g);
    return true;
}

void join_reorder(planner *pl, struct plan **slot)
{
    struct plan *root = *slot;
    struct plan *joins = root->kind == PLAN_FILTER ? root->in : root;
    if (!inner_join(joins) || (root != joins && root->shared))
        return;
    for (const struct plan *f = pl->fresh; f && f->kind == PLAN_JOIN; f = f->left)
        if (f == joins)
            return; /* a chain this file made: already in order */
    struct join_graph *g = planner_alloc(pl, sizeof *g);
    if (!g)
        return;
    memset(g, 0, sizeof *g);
    collect_joins(pl, g, joins, 0);
    if (root != joins)
        conj_split(pl, root->u.pred, &g->conds);
    if (!graph_fit(pl, g, joins->ncols) || !index_conditions(pl, g))
        return;
    derive_constants(pl, g);
    if (pl->rc || (g->derived && !index_conditions(pl, g)))
        return;
    if (!estimate_leaves(pl, g))
        return;
    struct order own, best;
    for (uint32_t i = 0; i < g->n; i++)
        own.leaf[i] = i;
    cost_order(g, &own);
    if (g->n <= DP_MAX ? !dp_order(pl, g, &best) : (greedy_order(g, &best), false))
        return;
    uint32_t crosses = original_crosses(g);
    bool better = g->n > 2 && (best.cost < own.cost * 0.9 || best.crosses < crosses);
    if (!better && !g->derived)
        return;
    struct plan *p = rewrite(pl, g, better ? &best : &own, root);
    if (p)
        *slot = p;
}
