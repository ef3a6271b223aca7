/*
 * topk.c - top-k per group with OFFSET and LIMIT.
 *
 * Each group (canonical key) keeps all its rows in a counted B+tree
 * (base/btree.h), one item per unit of multiplicity: (row, copy) with
 * copy = 0 .. w-1, ordered by the caller's comparator, then
 * row_cmp_identity, then copy. The order is therefore total and never
 * depends on arrival, and a position counts multiplicities. The tree's
 * subtree counts give the rank of an item and the item at a rank in
 * O(log n), so one unit inserted or deleted at rank r changes the window
 * [lo, hi) by at most one row entering and one leaving, found by rank:
 *
 *   insert at r < lo:        the row now at lo enters, the row now at hi leaves
 *   insert at lo <= r < hi:  the new row enters, the row now at hi leaves
 *   delete at r < lo:        the row at lo leaves, the row at hi enters
 *   delete at lo <= r < hi:  the deleted row leaves, the row at hi enters
 *   at r >= hi:              nothing
 *
 * The input delta is consolidated first (so a -x +x pair costs nothing
 * and no weight goes transiently negative), and the output is
 * consolidated last (a row that leaves and re-enters within one run
 * emits nothing). Per change: O(log n) plus the rows entering and
 * leaving, and a single descent that compares rows (finding the row's
 * place and multiplicity); its units are then added or removed by rank,
 * and the rows entering and leaving found by rank, which compare nothing.
 * A window move emits, per group, the rows in the old window and
 * not the new one and vice versa, stepping a cursor from the interval
 * ends.
 *
 * Items: a comparison during a descent reads the item, so every
 * indirection is a cache miss on a large group. The first copy of a row
 * (the common case: multiplicity 1) is therefore the row pointer itself;
 * copies 1.. are pool entries (struct titem) tagged by setting the low
 * bit of their address (rows and titems are at least 8-byte aligned).
 *
 * Retained: every row unit of every group (the whole group, since any
 * row may enter the window later), the tree nodes and the item pool.
 */
#include "dataflow/internal.h"

#include "base/btree.h"
#include "base/mem.h"
#include "base/pool.h"

#include <string.h>

struct titem {
    row *r;
    uint64_t copy;
};

static inline bool is_tagged(const void *item) { return (uintptr_t)item & 1; }
static inline const struct titem *untag(const void *item)
{
    return (const struct titem *)((uintptr_t)item - 1);
}
static inline row *item_row(const void *item)
{
    return is_tagged(item) ? untag(item)->r : (row *)item;
}
static inline uint64_t item_copy(const void *item)
{
    return is_tagged(item) ? untag(item)->copy : 0;
}
/* The item for (r, copy); t must outlive it when copy > 0. */
static inline void *make_item(row *r, uint64_t copy, struct titem *t)
{
    if (copy == 0)
        return r;
    t->r = r;
    t->copy = copy;
    return (void *)((uintptr_t)t + 1);
}

struct tgroup {
    struct ghead h; /* keyrow: one retained row of the group */
    btree tree;
};

struct topk_node {
    df_node base;
    struct key_copy key;
    df_cmp_fn cmp;
    void *cctx;
    uint64_t lo, hi;     /* window; hi = UINT64_MAX without limit */
    uint64_t new_lo, new_hi;
    struct gtab groups;
    pool items;
    df_batch in; /* scratch: the consolidated input delta */
};

static int item_cmp(void *ctx, const void *a, const void *b)
{
    const struct topk_node *t = ctx;
    row *x = item_row(a), *y = item_row(b);
    int c = t->cmp(t->cctx, x, y);
    if (!c)
        c = row_cmp_identity(x, y);
    if (!c) {
        uint64_t cx = item_copy(a), cy = item_copy(b);
        c = cx < cy ? -1 : cx > cy;
    }
    return c;
}

static int emit_rank(struct topk_node *t, btree *tree, uint64_t rank, int64_t w)
{
    btree_cursor c;
    if (rank >= btree_count(tree) || !btree_at(tree, rank, &c))
        return LDB_OK;
    return batch_take(&t->base.out, row_retain(item_row(btree_cursor_item(&c))), w);
}

/* Adds unit (r, copy) at rank, its place in the order. */
static int insert_unit(struct topk_node *t, btree *tree, row *r, uint64_t copy, uint64_t rank)
{
    struct titem *te = NULL;
    if (copy && !(te = pool_get(&t->items)))
        return LDB_NOMEM;
    if (btree_insert_rank(tree, rank, make_item(r, copy, te))) {
        if (te)
            pool_put(&t->items, te);
        return LDB_NOMEM;
    }
    row_retain(r);
    if (rank >= t->hi)
        return LDB_OK;
    int rc = rank >= t->lo ? batch_take(&t->base.out, row_retain(r), 1)
                           : emit_rank(t, tree, t->lo, 1);
    return rc ? rc : emit_rank(t, tree, t->hi, -1);
}

/* Removes the unit of r at rank. */
static int delete_unit(struct topk_node *t, btree *tree, row *r, uint64_t rank)
{
    int rc = LDB_OK;
    if (rank < t->hi) {
        rc = rank >= t->lo ? batch_take(&t->base.out, row_retain(r), -1)
                           : emit_rank(t, tree, t->lo, -1);
        if (rc == LDB_OK)
            rc = emit_rank(t, tree, t->hi, 1);
    }
    void *it = btree_delete_rank(tree, rank);
    row_release(item_row(it));
    if (is_tagged(it))
        pool_put(&t->items, (void *)untag(it));
    return rc;
}

/*
 * r's multiplicity in the group (its last copy's index + 1), and in *rank
 * the rank of its first unit, or of where that unit would go: the one
 * descent that compares rows. The units are then added or removed by
 * rank, which reads no row.
 */
static uint64_t locate(btree *tree, row *r, uint64_t *rank)
{
    struct titem pt;
    btree_cursor c;
    if (!btree_seek(tree, item_cmp, make_item(r, UINT64_MAX, &pt), BT_LE, &c)) {
        *rank = 0;
        return 0;
    }
    const void *it = btree_cursor_item(&c);
    uint64_t have = row_identical(item_row(it), r) ? item_copy(it) + 1 : 0;
    *rank = btree_cursor_rank(&c) + 1 - have;
    return have;
}

static void drop_group(struct topk_node *t, uint32_t gi)
{
    struct tgroup *g = (struct tgroup *)gtab_at(&t->groups, gi);
    btree_free(&g->tree);
    row_release(g->h.keyrow);
    gtab_del(&t->groups, gi);
}

static int change(struct topk_node *t, row *r, int64_t w)
{
    uint32_t gi;
    bool created;
    if (gtab_get(&t->groups, r, t->key.k.cols, df_key_hash(&t->key.k, r), &gi, &created))
        return LDB_NOMEM;
    struct tgroup *g = (struct tgroup *)gtab_at(&t->groups, gi);
    if (created) {
        g->h.keyrow = row_retain(r);
        btree_init(&g->tree, item_cmp, t);
    }
    uint64_t first = 0;
    uint64_t have = created ? 0 : locate(&g->tree, r, &first);
    if (w < 0 && (uint64_t)-w > have)
        return LDB_INTERNAL;
    int rc = LDB_OK;
    for (int64_t k = 0; rc == LDB_OK && k < w; k++)
        rc = insert_unit(t, &g->tree, r, have + (uint64_t)k, first + have + (uint64_t)k);
    for (int64_t k = 1; rc == LDB_OK && k <= -w; k++)
        rc = delete_unit(t, &g->tree, r, first + have - (uint64_t)k);
    if (btree_count(&g->tree) == 0) {
        drop_group(t, gi);
    } else if (row_identical(g->h.keyrow, r) && have + (uint64_t)w == 0) {
        btree_cursor c;
        btree_first(&g->tree, &c);
        row_release(g->h.keyrow);
        g->h.keyrow = row_retain(item_row(btree_cursor_item(&c)));
    }
    return rc;
}

/* Emits weight w for the rows at ranks [from, to) of a tree. */
static int emit_range(struct topk_node *t, btree *tree, uint64_t from, uint64_t to, int64_t w)
{
    btree_cursor c;
    uint64_t n = btree_count(tree);
    if (to > n)
        to = n;
    if (from >= to || !btree_at(tree, from, &c))
        return LDB_OK;
    for (uint64_t p = from; p < to; p++, btree_next(&c)) {
        int rc = batch_take(&t->base.out, row_retain(item_row(btree_cursor_item(&c))), w);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static uint64_t min_u(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* For every group: -(old window minus new) +(new window minus old). */
static int move_window(struct topk_node *t)
{
    uint64_t lo1 = t->lo, hi1 = t->hi, lo2 = t->new_lo, hi2 = t->new_hi;
    for (uint32_t i = 0; i < t->groups.len; i++) {
        struct tgroup *g = (struct tgroup *)gtab_at(&t->groups, i);
        if (!g->h.live)
            continue;
        int rc = emit_range(t, &g->tree, lo1, min_u(hi1, lo2), -1);
        if (!rc)
            rc = emit_range(t, &g->tree, max_u(lo1, hi2), hi1, -1);
        if (!rc)
            rc = emit_range(t, &g->tree, lo2, min_u(hi2, lo1), 1);
        if (!rc)
            rc = emit_range(t, &g->tree, max_u(lo2, hi1), hi2, 1);
        if (rc)
            return rc;
    }
    t->lo = lo2;
    t->hi = hi2;
    return LDB_OK;
}

static int topk_run(df_node *n)
{
    struct topk_node *t = (struct topk_node *)n;
    int rc;
    if ((t->lo != t->new_lo || t->hi != t->new_hi) && (rc = move_window(t)))
        return rc;
    const df_batch *d = n->in[0]->delta;
    df_batch_clear(&t->in);
    if (batch_reserve(&t->in, d->len))
        return LDB_NOMEM;
    for (size_t i = 0; i < d->len; i++)
        t->in.e[t->in.len++] = (df_entry){ row_retain(d->e[i].r), d->e[i].w };
    if ((rc = df_consolidate(&t->in, &n->g->scratch)))
        return rc;
    for (size_t i = 0; i < t->in.len; i++)
        if ((rc = change(t, t->in.e[i].r, t->in.e[i].w)))
            return rc;
    return df_consolidate(&n->out, &n->g->scratch);
}

static void topk_free(df_node *n)
{
    struct topk_node *t = (struct topk_node *)n;
    for (uint32_t i = 0; i < t->groups.len; i++) {
        struct tgroup *g = (struct tgroup *)gtab_at(&t->groups, i);
        if (!g->h.live)
            continue;
        btree_cursor c;
        for (bool on = btree_first(&g->tree, &c); on; on = btree_next(&c))
            row_release(item_row(btree_cursor_item(&c)));
        btree_free(&g->tree);
        row_release(g->h.keyrow);
    }
    gtab_free(&t->groups);
    pool_free(&t->items);
    key_copy_free(&t->key);
    df_batch_free(&t->in);
}

static void topk_retained(const df_node *n, size_t *rows, size_t *bytes)
{
    const struct topk_node *t = (const struct topk_node *)n;
    *rows = 0;
    *bytes = gtab_bytes(&t->groups) + t->items.bytes;
    for (uint32_t i = 0; i < t->groups.len; i++) {
        struct tgroup *g = (struct tgroup *)gtab_at(&t->groups, i);
        if (!g->h.live)
            continue;
        *rows += btree_count(&g->tree);
        *bytes += btree_bytes(&g->tree);
        btree_cursor c;
        for (bool on = btree_first(&g->tree, &c); on; on = btree_next(&c)) {
            const void *it = btree_cursor_item(&c);
            if (item_copy(it) == 0)
                *bytes += row_mem(item_row(it));
        }
    }
}

static const struct df_node_ops topk_ops = { "topk", topk_run, topk_free, topk_retained };

size_t df_topk_rows(const df_node *n)
{
    if (n->ops != &topk_ops)
        return 0;
    const struct topk_node *t = (const struct topk_node *)n;
    size_t rows = 0;
    for (uint32_t i = 0; i < t->groups.len; i++) {
        const struct tgroup *g = (const struct tgroup *)gtab_at(&t->groups, i);
        if (g->h.live)
            rows += btree_count(&g->tree);
    }
    return rows;
}

static bool window(int64_t offset, int64_t limit, uint64_t *lo, uint64_t *hi)
{
    if (offset < 0 || limit < DF_NO_LIMIT)
        return false;
    *lo = (uint64_t)offset;
    *hi = limit == DF_NO_LIMIT ? UINT64_MAX : (uint64_t)offset + (uint64_t)limit;
    return true;
}

int df_topk(df_graph *g, df_node *in, const df_key *group, df_cmp_fn cmp, void *ctx,
            int64_t offset, int64_t limit, df_node **out)
{
    if (g->err)
        return g->err;
    uint64_t lo, hi;
    if (!in || !group || !cmp || !window(offset, limit, &lo, &hi))
        return df_fail(g, LDB_MISUSE);
    int rc = node_new(g, sizeof(struct topk_node), &topk_ops, in->ncols, &in, 1, out);
    if (rc)
        return rc;
    struct topk_node *t = (struct topk_node *)*out;
    t->cmp = cmp;
    t->cctx = ctx;
    t->lo = t->new_lo = lo;
    t->hi = t->new_hi = hi;
    pool_init(&t->items, sizeof(struct titem));
    if ((rc = key_copy_init(&t->key, group, in->ncols)))
        return df_fail(g, rc);
    gtab_init(&t->groups, sizeof(struct tgroup), &t->key.k, t->key.k.cols);
    return LDB_OK;
}

int df_topk_set_window(df_node *n, int64_t offset, int64_t limit)
{
    if (n->g->err)
        return n->g->err;
    struct topk_node *t = (struct topk_node *)n;
    if (n->ops != &topk_ops || !window(offset, limit, &t->new_lo, &t->new_hi))
        return df_fail(n->g, LDB_MISUSE);
    n->pending = t->new_lo != t->lo || t->new_hi != t->hi;
    return LDB_OK;
}
