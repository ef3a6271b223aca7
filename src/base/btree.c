/*
 * btree.c - counted B+tree (see btree.h).
 *
 * A leaf holds up to leaf_max items in order and links to both neighbours.
 * An internal node holds up to inner_max children; for child i it keeps
 * counts[i], the number of items below it, and for i >= 1 keys[i], the
 * least item below it. keys[0] is scratch: code that moves children
 * between siblings parks the parent's separator there, so that the move is
 * plain array copying.
 *
 * Invariants (all checked by btree_check):
 * - Every leaf is at level 1 and the root at level height; items increase
 *   strictly along the chain of leaves.
 * - A non-root leaf holds at least leaf_max/2 items and a non-root internal
 *   node at least inner_max/2 children; an internal root has at least two
 *   children and a root leaf at least one item.
 * - keys[i] is the least item under kids[i], so it is an item still in the
 *   tree: a comparator is never handed an item that the caller has deleted
 *   and freed. Deleting or replacing the least item of a leaf therefore
 *   rewrites the one separator that names it.
 * - counts[i] is the exact number of items under kids[i].
 *
 * Held deletes (btree.h) relax two of these for the leaves on the held
 * list, until btree_settle: such a leaf may be short (a root leaf empty),
 * and its separator may be its pinned item (leaf->pinned), a deleted item
 * below every item of the leaf, instead of its least item. Separators
 * stay strictly increasing lower bounds of their subtrees either way, so
 * descents need no change; only a cursor step must skip emptied leaves.
 * A leaf has a separator exactly when it is not the first leaf (prev).
 *
 * Inserts split allocation-first: before touching the tree they count the
 * full nodes on the path, allocate that many new nodes (plus a root) and
 * give up with nothing changed if any allocation fails.
 *
 * Node sizes. Measured with 1M items inserted in random order, then 1M
 * random GE seeks and 1M random deletes (-O2, median of 7 runs, ns per
 * operation). "rows": items point to 64-byte rows scattered in memory and
 * the comparator reads a key from each, as an index does; "ints": the
 * pointers themselves are the keys. Bytes per item after the inserts.
 *     leaf/inner     rows: ins  del  seek    ints: ins  del  seek   B/item
 *       16/16            1459 1279  1492          389  543  469     16.9
 *       32/32            1316 1193  1382          346  437  427     14.2
 *       64/32            1314 1202  1423          318  357  389     12.8
 *       64/64            1287 1221  1320          317  340  417     12.8
 *      128/128           1286 1144  1442          283  301  375     12.2
 * With rows, the ~20 row cache misses of a search dominate and every size
 * from 32 up is within the run-to-run noise (about 15%); 16 loses on
 * height and space. 64/64 is as fast as any, within 5% of the least space,
 * keeps the height at 4 for 1M items, and bounds a split or merge to
 * moving 32 pointers. A bulk-loaded tree packs leaves full: ~9.1 B/item
 * (the fields of held deletes added 24 bytes to a leaf, 0.4 B/item).
 */
#include "base/btree.h"

#include "base/mem.h"
#include "livedb.h"

#include <string.h>

#define LEAF_MAX 64
#define INNER_MAX 64
#define FANOUT_MIN 4
/* Every non-root node holds at least two entries and an internal root at
 * least two children, so a tree of height h holds at least 2^h items. */
#define MAX_HEIGHT 64

struct bt_leaf {
    unsigned n;
    bool held;                 /* on the tree's held list */
    bool dead;                 /* settle took it out of the tree while held */
    struct bt_leaf *prev, *next;
    struct bt_leaf *held_next; /* the held list */
    void *pinned;              /* the deleted item the separator names, or NULL */
    void *items[LEAF_MAX];
};

struct bt_inner {
    unsigned n;               /* children */
    void *keys[INNER_MAX];    /* keys[i], i >= 1: least item under kids[i] */
    size_t counts[INNER_MAX]; /* items under kids[i] */
    void *kids[INNER_MAX];    /* leaves at level 2, internal nodes above */
};

/* One internal level of a root-to-leaf path: the node and the child taken. */
struct bt_step {
    struct bt_inner *node;
    unsigned idx;
};

static inline void add_work(const btree *t, uint64_t n)
{
    if (t->work)
        *t->work += n;
}

static unsigned clamp_fanout(unsigned n, unsigned max)
{
    return n < FANOUT_MIN ? FANOUT_MIN : n > max ? max : n;
}

void btree_init_fanout(btree *t, btree_cmp_fn cmp, void *ctx,
                       unsigned leaf_max, unsigned inner_max)
{
    *t = (btree){
        .leaf_max = clamp_fanout(leaf_max, LEAF_MAX),
        .inner_max = clamp_fanout(inner_max, INNER_MAX),
        .cmp = cmp,
        .ctx = ctx,
    };
}

void btree_init(btree *t, btree_cmp_fn cmp, void *ctx)
{
    btree_init_fanout(t, cmp, ctx, LEAF_MAX, INNER_MAX);
}

void btree_set_work_counter(btree *t, uint64_t *counter) { t->work = counter; }

void btree_set_pin(btree *t, void (*pin)(void *ctx, void *item, bool keep)) { t->pin = pin; }

/* ---- nodes ----------------------------------------------------------- */

static struct bt_leaf *leaf_new(btree *t)
{
    struct bt_leaf *l = mem_alloc(sizeof *l);
    if (!l)
        return NULL;
    l->n = 0;
    l->held = l->dead = false;
    l->prev = l->next = l->held_next = NULL;
    l->pinned = NULL;
    t->nodes++;
    t->bytes += sizeof *l;
    return l;
}

static struct bt_inner *inner_new(btree *t)
{
    struct bt_inner *in = mem_alloc(sizeof *in);
    if (!in)
        return NULL;
    in->n = 0;
    t->nodes++;
    t->bytes += sizeof *in;
    return in;
}

static void leaf_dispose(btree *t, struct bt_leaf *l)
{
    t->nodes--;
    t->bytes -= sizeof *l;
    mem_free(l);
}

static void inner_dispose(btree *t, struct bt_inner *in)
{
    t->nodes--;
    t->bytes -= sizeof *in;
    mem_free(in);
}

/* Ends the pin of l's separator, if it has one. */
static void unpin(btree *t, struct bt_leaf *l)
{
    if (!l->pinned)
        return;
    if (t->pin)
        t->pin(t->ctx, l->pinned, false);
    l->pinned = NULL;
}

/* Frees node and everything below it; level 1 is a leaf. */
static void free_subtree(btree *t, void *node, unsigned level)
{
    if (level == 1) {
        unpin(t, node);
        leaf_dispose(t, node);
        return;
    }
    struct bt_inner *in = node;
    for (unsigned i = 0; i < in->n; i++)
        free_subtree(t, in->kids[i], level - 1);
    inner_dispose(t, in);
}

void btree_free(btree *t)
{
    if (t->root)
        free_subtree(t, t->root, t->height);
    t->root = NULL;
    t->height = 0;
    t->count = 0;
    t->held = NULL;
}

static unsigned node_size(const void *node, bool leaf)
{
    return leaf ? ((const struct bt_leaf *)node)->n
                : ((const struct bt_inner *)node)->n;
}

/* Copies entries [si, si+k) of src over [di, di+k) of dst; the ranges may
 * overlap when src == dst. */
static void inner_move(struct bt_inner *dst, unsigned di,
                       const struct bt_inner *src, unsigned si, unsigned k)
{
    memmove(dst->keys + di, src->keys + si, k * sizeof dst->keys[0]);
    memmove(dst->counts + di, src->counts + si, k * sizeof dst->counts[0]);
    memmove(dst->kids + di, src->kids + si, k * sizeof dst->kids[0]);
}

static size_t sum_counts(const struct bt_inner *in, unsigned from, unsigned to)
{
    size_t sum = 0;
    for (unsigned i = from; i < to; i++)
        sum += in->counts[i];
    return sum;
}

/* ---- searching ------------------------------------------------------- */
/*
 * A search finds a position as "how many entries lie before the probe".
 * An item lies before it when pcmp(probe, item) >= bias: bias 1 finds the
 * first item >= probe, bias 0 the first item > probe.
 */

static unsigned count_before(const btree *t, btree_probe_fn pcmp,
                             const void *probe, int bias, void *const *a,
                             unsigned lo, unsigned hi)
{
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (pcmp(t->ctx, probe, a[mid]) >= bias)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Items under kids[0..c) of a node that holds total items. Sums whichever
 * side of c is shorter. */
static size_t items_before_child(const struct bt_inner *in, unsigned c,
                                 size_t total)
{
    if (c <= in->n / 2)
        return sum_counts(in, 0, c);
    return total - sum_counts(in, c, in->n);
}

/* The child of in (which holds total items) that holds the item of rank
 * *r, turning *r into a rank within that child. Scans from the nearer end
 * so that both ends of the tree cost the same. */
static unsigned child_of_rank(const struct bt_inner *in, size_t *r,
                              size_t total)
{
    unsigned i = 0;
    if (*r < total / 2) {
        while (*r >= in->counts[i])
            *r -= in->counts[i++];
        return i;
    }
    size_t from_end = total - *r; /* items at rank *r and after */
    i = in->n - 1;
    while (from_end > in->counts[i])
        from_end -= in->counts[i--];
    *r = in->counts[i] - from_end;
    return i;
}

/*
 * Descends by counts alone, without a comparison, to the item of rank
 * (gap false) or to the gap before it (gap true; rank may then be the
 * count, the end). A gap between two leaves is taken at the end of the
 * left one, where an insert by comparison goes too, so that an insert
 * there never changes a separator. Records the path.
 */
static struct bt_leaf *descend_rank(const btree *t, size_t rank, bool gap,
                                    struct bt_step *path, unsigned *pos)
{
    void *node = t->root;
    size_t r = rank, total = t->count;
    add_work(t, t->height);
    for (unsigned d = 0; d + 1 < t->height; d++) {
        struct bt_inner *in = node;
        unsigned i = 0;
        if (gap) {
            while (i + 1 < in->n && r > in->counts[i])
                r -= in->counts[i++];
        } else {
            i = child_of_rank(in, &r, total);
        }
        path[d] = (struct bt_step){ in, i };
        total = in->counts[i];
        node = in->kids[i];
    }
    *pos = (unsigned)r;
    return node;
}

/*
 * Descends to the leaf where the probe's position lies, with bias in
 * internal nodes. Records the path if path is not NULL, and adds to
 * *before the items of the leaves left of that leaf if before is not NULL.
 */
static struct bt_leaf *descend_inner(const btree *t, btree_probe_fn pcmp,
                                     const void *probe, int bias,
                                     struct bt_step *path, size_t *before)
{
    void *node = t->root;
    size_t total = t->count;
    add_work(t, t->height);
    for (unsigned d = 0; d + 1 < t->height; d++) {
        struct bt_inner *in = node;
        unsigned c = count_before(t, pcmp, probe, bias, in->keys, 1, in->n) - 1;
        if (path)
            path[d] = (struct bt_step){ in, c };
        if (before)
            *before += items_before_child(in, c, total);
        total = in->counts[c];
        node = in->kids[c];
    }
    return node;
}

/*
 * descend_inner, then the probe's position in the leaf with leaf_bias:
 * sets *pos, which may be leaf->n (the position is then the next leaf's
 * first item), and the rank of the position (items before it) if rank is
 * not NULL.
 */
static struct bt_leaf *descend(const btree *t, btree_probe_fn pcmp,
                               const void *probe, int inner_bias,
                               int leaf_bias, struct bt_step *path,
                               unsigned *pos, size_t *rank)
{
    size_t before = 0;
    struct bt_leaf *leaf =
        descend_inner(t, pcmp, probe, inner_bias, path, rank ? &before : NULL);
    *pos = count_before(t, pcmp, probe, leaf_bias, leaf->items, 0, leaf->n);
    if (rank)
        *rank = before + *pos;
    return leaf;
}

/*
 * Descends to the leaf that holds key or would hold it, and sets *pos to
 * where it is or would go. Separators equal to key must be followed (bias
 * 0), since a separator is the least item of the child on its right.
 */
static struct bt_leaf *descend_exact(const btree *t, const void *key,
                                     struct bt_step *path, unsigned *pos)
{
    return descend(t, t->cmp, key, 0, 1, path, pos, NULL);
}

static bool leaf_holds(const btree *t, const struct bt_leaf *l, unsigned pos,
                       const void *key)
{
    return pos < l->n && t->cmp(t->ctx, key, l->items[pos]) == 0;
}

/*
 * The leaf that holds the item equal to key, with its position, or NULL.
 * The leaf is first searched for key's own address: callers mostly hand
 * in the very item the tree holds, and in a large tree each comparison
 * at the leaf level reads an item nothing else touched lately (a cache
 * miss), while the scan reads only the leaf. A key that is merely equal
 * to an item is then found by comparison.
 */
static struct bt_leaf *find_exact(const btree *t, const void *key,
                                  struct bt_step *path, unsigned *pos)
{
    struct bt_leaf *leaf = descend_inner(t, t->cmp, key, 0, path, NULL);
    for (unsigned i = 0; i < leaf->n; i++) {
        if (leaf->items[i] == key) {
            *pos = i;
            return leaf;
        }
    }
    *pos = count_before(t, t->cmp, key, 1, leaf->items, 0, leaf->n);
    return leaf_holds(t, leaf, *pos, key) ? leaf : NULL;
}

size_t btree_rank_of(const btree *t, const void *item)
{
    if (!t->root)
        return SIZE_MAX;
    size_t before = 0;
    struct bt_leaf *leaf = descend_inner(t, t->cmp, item, 0, NULL, &before);
    for (unsigned i = 0; i < leaf->n; i++)
        if (leaf->items[i] == item)
            return before + i;
    return SIZE_MAX;
}

void *btree_find(const btree *t, const void *key)
{
    if (!t->root)
        return NULL;
    unsigned pos;
    struct bt_leaf *leaf = find_exact(t, key, NULL, &pos);
    return leaf ? leaf->items[pos] : NULL;
}

size_t btree_count_below(const btree *t, btree_probe_fn pcmp,
                         const void *probe, bool or_equal)
{
    if (!t->root)
        return 0;
    int bias = or_equal ? 0 : 1;
    unsigned pos;
    size_t rank;
    descend(t, pcmp, probe, bias, bias, NULL, &pos, &rank);
    return rank;
}

/* ---- insert ---------------------------------------------------------- */

static void leaf_insert(struct bt_leaf *l, unsigned pos, void *item)
{
    memmove(l->items + pos + 1, l->items + pos,
            (l->n - pos) * sizeof l->items[0]);
    l->items[pos] = item;
    l->n++;
}

static void inner_insert(struct bt_inner *in, unsigned i, void *key,
                         void *kid, size_t count)
{
    inner_move(in, i + 1, in, i, in->n - i);
    in->keys[i] = key;
    in->counts[i] = count;
    in->kids[i] = kid;
    in->n++;
}

/* Entries that stay in the left node when total entries split in two. */
static unsigned split_keep(unsigned total) { return total - total / 2; }

/* Inserts item at pos of the full leaf l, moving the upper half of the
 * entries into the empty leaf r, which is linked in after l. */
static void leaf_split_insert(struct bt_leaf *l, unsigned pos, void *item,
                              struct bt_leaf *r)
{
    unsigned keep = split_keep(l->n + 1);
    unsigned from = pos < keep ? keep - 1 : keep;
    r->n = l->n - from;
    memcpy(r->items, l->items + from, r->n * sizeof r->items[0]);
    l->n = from;
    if (pos < keep)
        leaf_insert(l, pos, item);
    else
        leaf_insert(r, pos - keep, item);
    r->prev = l;
    r->next = l->next;
    if (l->next)
        l->next->prev = r;
    l->next = r;
}

/* Inserts a child at i of the full node l, moving the upper half of the
 * entries into the empty node r. r->keys[0] is then r's least item. Returns
 * the number of items under r. */
static size_t inner_split_insert(struct bt_inner *l, unsigned i, void *key,
                                 void *kid, size_t count, struct bt_inner *r)
{
    unsigned keep = split_keep(l->n + 1);
    unsigned from = i < keep ? keep - 1 : keep;
    r->n = l->n - from;
    inner_move(r, 0, l, from, r->n);
    l->n = from;
    if (i < keep)
        inner_insert(l, i, key, kid, count);
    else
        inner_insert(r, i - keep, key, kid, count);
    return sum_counts(r, 0, r->n);
}

/* New nodes an insert into leaf, at the end of path, will need: one per
 * full node from the leaf up, and a new root if the root is full too. */
static unsigned nodes_needed(const btree *t, const struct bt_leaf *leaf,
                             const struct bt_step *path)
{
    if (leaf->n < t->leaf_max)
        return 0;
    unsigned k = 1;
    for (unsigned d = t->height - 1; d-- > 0; k++)
        if (path[d].node->n < t->inner_max)
            return k;
    return k + 1;
}

/* Allocates k new nodes, a leaf first and internal nodes after it; all of
 * them or none. */
static int alloc_spares(btree *t, void **spare, unsigned k)
{
    for (unsigned i = 0; i < k; i++) {
        spare[i] = i == 0 ? (void *)leaf_new(t) : (void *)inner_new(t);
        if (spare[i])
            continue;
        for (unsigned j = 1; j < i; j++)
            inner_dispose(t, spare[j]);
        if (i > 0)
            leaf_dispose(t, spare[0]);
        return LDB_NOMEM;
    }
    return LDB_OK;
}

/* The root split: a new root over the old one and right, its new sibling. */
static void grow_root(btree *t, void *key, void *right, size_t right_count,
                      struct bt_inner *root)
{
    root->n = 2;
    root->kids[0] = t->root;
    root->counts[0] = t->count - right_count;
    root->kids[1] = right;
    root->keys[1] = key;
    root->counts[1] = right_count;
    t->root = root;
    t->height++;
}

/* Inserts item at pos of leaf and carries splits up the path, taking new
 * nodes from spare in the order alloc_spares made them. Cannot fail. */
static void insert_at(btree *t, const struct bt_step *path,
                      struct bt_leaf *leaf, unsigned pos, void *item,
                      void **spare)
{
    /* The node split off at the level below, if any: the separator to add
     * to the parent, the node and its item count. */
    void *split = NULL, *split_key = NULL;
    size_t split_count = 0;
    unsigned used = 0;
    if (leaf->n < t->leaf_max) {
        leaf_insert(leaf, pos, item);
    } else {
        struct bt_leaf *r = spare[used++];
        leaf_split_insert(leaf, pos, item, r);
        split = r;
        split_key = r->items[0];
        split_count = r->n;
    }
    t->count++;
    for (unsigned d = t->height - 1; d-- > 0;) {
        struct bt_inner *in = path[d].node;
        unsigned c = path[d].idx;
        in->counts[c]++;
        if (!split)
            continue;
        in->counts[c] -= split_count;
        if (in->n < t->inner_max) {
            inner_insert(in, c + 1, split_key, split, split_count);
            split = NULL;
            continue;
        }
        struct bt_inner *r = spare[used++];
        split_count =
            inner_split_insert(in, c + 1, split_key, split, split_count, r);
        split = r;
        split_key = r->keys[0];
    }
    if (split)
        grow_root(t, split_key, split, split_count, spare[used]);
    /* A put back of the item a held delete left the separator naming:
     * the separator is the leaf's least item again. */
    if (leaf->pinned == item)
        unpin(t, leaf);
}

static int insert_first(btree *t, void *item)
{
    struct bt_leaf *l = leaf_new(t);
    if (!l)
        return LDB_NOMEM;
    l->items[0] = item;
    l->n = 1;
    t->root = l;
    t->height = 1;
    t->count = 1;
    return LDB_OK;
}

int btree_insert_rank(btree *t, size_t rank, void *item)
{
    if (!item || rank > t->count)
        return LDB_MISUSE;
    /* A rank names a gap between items, not a key range: after held
     * deletes the gap's leaf may not be the one whose range holds item. */
    btree_settle(t);
    if (!t->root)
        return insert_first(t, item);
    struct bt_step path[MAX_HEIGHT];
    unsigned pos;
    struct bt_leaf *leaf = descend_rank(t, rank, true, path, &pos);
    void *spare[MAX_HEIGHT + 1];
    if (alloc_spares(t, spare, nodes_needed(t, leaf, path)) != LDB_OK)
        return LDB_NOMEM;
    insert_at(t, path, leaf, pos, item, spare);
    return LDB_OK;
}

int btree_insert(btree *t, void *item, void **existing)
{
    if (existing)
        *existing = NULL;
    if (!item)
        return LDB_MISUSE;
    if (!t->root)
        return insert_first(t, item);
    struct bt_step path[MAX_HEIGHT];
    unsigned pos;
    struct bt_leaf *leaf = descend_exact(t, item, path, &pos);
    if (leaf_holds(t, leaf, pos, item)) {
        if (existing)
            *existing = leaf->items[pos];
        return LDB_OK;
    }
    void *spare[MAX_HEIGHT + 1];
    if (alloc_spares(t, spare, nodes_needed(t, leaf, path)) != LDB_OK)
        return LDB_NOMEM;
    insert_at(t, path, leaf, pos, item, spare);
    return LDB_OK;
}

int btree_put_back(btree *t, void *item)
{
    if (!item)
        return LDB_MISUSE;
    if (!t->root)
        return LDB_INTERNAL;
    struct bt_step path[MAX_HEIGHT];
    unsigned pos;
    struct bt_leaf *leaf = descend_exact(t, item, path, &pos);
    if (leaf_holds(t, leaf, pos, item) || leaf->n >= t->leaf_max)
        return LDB_INTERNAL;
    insert_at(t, path, leaf, pos, item, NULL);
    return LDB_OK;
}

/* ---- delete ---------------------------------------------------------- */

/* The least item of the leaf at the end of path is now min. The separator
 * that named the old one is in the deepest node where the path did not
 * take the first child (none if the leaf is the leftmost). */
static void refresh_separator(const struct bt_step *path, unsigned levels,
                              void *min)
{
    for (unsigned d = levels; d-- > 0;) {
        if (path[d].idx > 0) {
            path[d].node->keys[path[d].idx] = min;
            return;
        }
    }
}

/* Moves the first k entries of kids[j+1] of p to the end of kids[j]. */
static void shift_left(struct bt_inner *p, unsigned j, unsigned k, bool leaves)
{
    size_t moved;
    if (leaves) {
        struct bt_leaf *l = p->kids[j], *r = p->kids[j + 1];
        memcpy(l->items + l->n, r->items, k * sizeof r->items[0]);
        memmove(r->items, r->items + k, (r->n - k) * sizeof r->items[0]);
        l->n += k;
        r->n -= k;
        moved = k;
        if (r->n > 0)
            p->keys[j + 1] = r->items[0];
    } else {
        struct bt_inner *l = p->kids[j], *r = p->kids[j + 1];
        r->keys[0] = p->keys[j + 1];
        moved = sum_counts(r, 0, k);
        inner_move(l, l->n, r, 0, k);
        inner_move(r, 0, r, k, r->n - k);
        l->n += k;
        r->n -= k;
        if (r->n > 0)
            p->keys[j + 1] = r->keys[0];
    }
    p->counts[j] += moved;
    p->counts[j + 1] -= moved;
}

/* Moves the last k entries of kids[j] of p to the front of kids[j+1]. */
static void shift_right(struct bt_inner *p, unsigned j, unsigned k,
                        bool leaves)
{
    size_t moved;
    if (leaves) {
        struct bt_leaf *l = p->kids[j], *r = p->kids[j + 1];
        memmove(r->items + k, r->items, r->n * sizeof r->items[0]);
        memcpy(r->items, l->items + l->n - k, k * sizeof r->items[0]);
        l->n -= k;
        r->n += k;
        moved = k;
        p->keys[j + 1] = r->items[0];
    } else {
        struct bt_inner *l = p->kids[j], *r = p->kids[j + 1];
        r->keys[0] = p->keys[j + 1];
        inner_move(r, k, r, 0, r->n);
        inner_move(r, 0, l, l->n - k, k);
        moved = sum_counts(r, 0, k);
        l->n -= k;
        r->n += k;
        p->keys[j + 1] = r->keys[0];
    }
    p->counts[j] -= moved;
    p->counts[j + 1] += moved;
}

/* Frees a leaf that left the tree; one still on the held list (settle
 * only) is marked dead and freed when settle reaches it. */
static void leaf_drop(btree *t, struct bt_leaf *l)
{
    if (l->held)
        l->dead = true;
    else
        leaf_dispose(t, l);
}

/* Moves everything in kids[j+1] of p into kids[j] and drops kids[j+1]. */
static void merge(btree *t, struct bt_inner *p, unsigned j, bool leaves)
{
    void *r = p->kids[j + 1];
    shift_left(p, j, node_size(r, leaves), leaves);
    if (leaves) {
        struct bt_leaf *l = p->kids[j], *rl = r;
        l->next = rl->next;
        if (rl->next)
            rl->next->prev = l;
        leaf_drop(t, rl);
    } else {
        inner_dispose(t, r);
    }
    inner_move(p, j + 1, p, j + 2, p->n - j - 2);
    p->n--;
}

/*
 * kids[c] of p is one entry short of half full. Borrows from a sibling
 * that can spare entries, evening out the two so that the next deletes do
 * not come straight back; otherwise merges with a sibling (p always has
 * one: an internal node holds at least two children).
 */
static void fix_underflow(btree *t, struct bt_inner *p, unsigned c,
                          bool leaves)
{
    unsigned n = node_size(p->kids[c], leaves);
    unsigned min = (leaves ? t->leaf_max : t->inner_max) / 2;
    if (c > 0) {
        unsigned s = node_size(p->kids[c - 1], leaves);
        if (s > min) {
            shift_right(p, c - 1, (s - n) / 2, leaves);
            return;
        }
    }
    if (c + 1 < p->n) {
        unsigned s = node_size(p->kids[c + 1], leaves);
        if (s > min) {
            shift_left(p, c, (s - n) / 2, leaves);
            return;
        }
    }
    merge(t, p, c > 0 ? c - 1 : c, leaves);
}

static void shrink_root(btree *t)
{
    if (t->height == 1) {
        struct bt_leaf *l = t->root;
        if (l->n > 0)
            return;
        leaf_dispose(t, l);
        t->root = NULL;
        t->height = 0;
        return;
    }
    struct bt_inner *in = t->root;
    if (in->n > 1)
        return;
    t->root = in->kids[0];
    t->height--;
    inner_dispose(t, in);
}

/* Restores the fill bounds bottom-up after the leaf at the end of path
 * lost one item. */
static void rebalance(btree *t, const struct bt_step *path)
{
    for (unsigned d = t->height - 1; d-- > 0;) {
        bool leaves = d == t->height - 2;
        unsigned min = (leaves ? t->leaf_max : t->inner_max) / 2;
        struct bt_inner *p = path[d].node;
        if (node_size(p->kids[path[d].idx], leaves) >= min)
            break;
        fix_underflow(t, p, path[d].idx, leaves);
    }
    shrink_root(t);
}

/* Removes the item at pos of the leaf at the end of path and returns it. */
static void *remove_at(btree *t, const struct bt_step *path,
                       struct bt_leaf *leaf, unsigned pos)
{
    void *item = leaf->items[pos];
    leaf->n--;
    memmove(leaf->items + pos, leaf->items + pos + 1,
            (leaf->n - pos) * sizeof leaf->items[0]);
    t->count--;
    unsigned levels = t->height - 1;
    for (unsigned d = 0; d < levels; d++)
        path[d].node->counts[path[d].idx]--;
    if (pos == 0 && leaf->n > 0)
        refresh_separator(path, levels, leaf->items[0]);
    rebalance(t, path);
    return item;
}

void *btree_delete(btree *t, const void *key)
{
    btree_settle(t);
    if (!t->root)
        return NULL;
    struct bt_step path[MAX_HEIGHT];
    unsigned pos;
    struct bt_leaf *leaf = find_exact(t, key, path, &pos);
    return leaf ? remove_at(t, path, leaf, pos) : NULL;
}

void *btree_delete_rank(btree *t, size_t rank)
{
    btree_settle(t);
    if (rank >= t->count)
        return NULL;
    struct bt_step path[MAX_HEIGHT];
    unsigned pos;
    struct bt_leaf *leaf = descend_rank(t, rank, false, path, &pos);
    return remove_at(t, path, leaf, pos);
}

/* ---- held deletes and settling --------------------------------------- */

/* Whether l breaks an invariant that only the held list may break. */
static bool leaf_unsettled(const btree *t, const struct bt_leaf *l)
{
    if (l->pinned)
        return true;
    return t->root == (void *)l ? l->n == 0 : l->n < t->leaf_max / 2;
}

static void hold(btree *t, struct bt_leaf *l)
{
    if (l->held)
        return;
    l->held = true;
    l->held_next = t->held;
    t->held = l;
}

void *btree_delete_held(btree *t, const void *key)
{
    if (!t->root)
        return NULL;
    struct bt_step path[MAX_HEIGHT];
    unsigned pos;
    struct bt_leaf *leaf = find_exact(t, key, path, &pos);
    if (!leaf)
        return NULL;
    void *item = leaf->items[pos];
    leaf->n--;
    memmove(leaf->items + pos, leaf->items + pos + 1,
            (leaf->n - pos) * sizeof leaf->items[0]);
    t->count--;
    for (unsigned d = 0; d + 1 < t->height; d++)
        path[d].node->counts[path[d].idx]--;
    /* An unpinned leaf's separator is its least item: it now names item,
     * and keeps naming it, so that the leaf's range does not shrink. */
    if (pos == 0 && leaf->prev && !leaf->pinned) {
        leaf->pinned = item;
        if (t->pin)
            t->pin(t->ctx, item, true);
    }
    if (leaf_unsettled(t, leaf))
        hold(t, leaf);
    return item;
}

/*
 * The path from the root to l, a leaf of a tree of height >= 2: found by
 * its least item, by its separator when it is empty (an empty leaf other
 * than the first is pinned), or as the first leaf. Separators are strictly
 * increasing, so each of these leads to l alone.
 */
static void path_to(const btree *t, const struct bt_leaf *l,
                    struct bt_step *path)
{
    const void *key = l->n ? l->items[0] : l->pinned;
    unsigned pos;
    if (key)
        descend_inner(t, t->cmp, key, 0, path, NULL);
    else
        descend_rank(t, 0, true, path, &pos);
}

/* Restores the fill bounds of the internal nodes on path, bottom-up,
 * after path[d].node lost a child. */
static void rebalance_above(btree *t, const struct bt_step *path, unsigned d)
{
    unsigned min = t->inner_max / 2;
    while (d-- > 0) {
        struct bt_inner *g = path[d].node;
        if (node_size(g->kids[path[d].idx], false) >= min)
            break;
        fix_underflow(t, g, path[d].idx, false);
    }
    shrink_root(t);
}

/*
 * Takes the empty leaf l, child c of p = path[d].node, out of the tree.
 * Its separator goes with it; when l is the first child, the next child's
 * separator moves up to where l's was, or, l being the first leaf, the
 * next child becomes the first leaf and has none any more.
 */
static void drop_empty_leaf(btree *t, const struct bt_step *path, unsigned d,
                            struct bt_leaf *l)
{
    struct bt_inner *p = path[d].node;
    unsigned c = path[d].idx;
    if (l->prev)
        l->prev->next = l->next;
    if (l->next)
        l->next->prev = l->prev;
    if (c > 0) {
        inner_move(p, c, p, c + 1, p->n - c - 1);
    } else {
        void *next_sep = p->keys[1];
        inner_move(p, 0, p, 1, p->n - 1);
        if (l->prev)
            refresh_separator(path, d, next_sep);
        else
            unpin(t, p->kids[0]);
    }
    p->n--;
    unpin(t, l);
    leaf_drop(t, l);
}

/*
 * Settles l (off the held list): refreshes a pinned separator, then fills
 * a short leaf from a sibling (borrowing evenly when the two hold more
 * than a leaf, else merging) or drops it when empty, and restores the
 * levels above. A sibling it merges with may be short or pinned too; the
 * loop goes on with the merged leaf until it is settled.
 */
static void settle_leaf(btree *t, struct bt_leaf *l)
{
    struct bt_step path[MAX_HEIGHT];
    while (leaf_unsettled(t, l)) {
        if (t->height == 1) { /* the root leaf: unsettled only when empty */
            if (l->n == 0) {
                leaf_drop(t, l);
                t->root = NULL;
                t->height = 0;
            }
            return;
        }
        path_to(t, l, path);
        unsigned d = t->height - 2;
        struct bt_inner *p = path[d].node;
        if (l->n == 0) {
            drop_empty_leaf(t, path, d, l);
            rebalance_above(t, path, d);
            return;
        }
        if (l->pinned) {
            refresh_separator(path, d + 1, l->items[0]);
            unpin(t, l);
            continue;
        }
        unsigned c = path[d].idx, j = c > 0 ? c - 1 : c;
        struct bt_leaf *a = p->kids[j], *b = p->kids[j + 1];
        if (a->n + b->n <= t->leaf_max) {
            unpin(t, b); /* its separator goes */
            merge(t, p, j, true);
            rebalance_above(t, path, d);
            l = a;
        } else if (l == a) {
            shift_left(p, j, (b->n - a->n) / 2, true);
            unpin(t, b); /* its separator is its least item now */
        } else {
            shift_right(p, j, (a->n - b->n) / 2, true);
        }
    }
}

void btree_settle(btree *t)
{
    while (t->held) {
        struct bt_leaf *l = t->held;
        t->held = l->held_next;
        l->held = false;
        l->held_next = NULL;
        if (l->dead)
            leaf_dispose(t, l);
        else
            settle_leaf(t, l);
    }
}

/* ---- replace --------------------------------------------------------- */

void *btree_replace(btree *t, const void *key, void *item)
{
    if (!t->root || !item)
        return NULL;
    struct bt_step path[MAX_HEIGHT];
    unsigned pos;
    struct bt_leaf *leaf = find_exact(t, key, path, &pos);
    if (!leaf)
        return NULL;
    void *old = leaf->items[pos];
    leaf->items[pos] = item;
    /* A separator names the least item of its subtree: a freed old item
     * must not stay one. (A pinned separator names no item of the leaf.) */
    if (pos == 0 && !leaf->pinned)
        refresh_separator(path, t->height - 1, item);
    return old;
}

/* ---- bulk load ------------------------------------------------------- */
/*
 * Level 0 is the n items, level 1 the leaves, and level l+1 has
 * ceil(width[l] / fanout) nodes, up to a single root. The units of each
 * level are dealt evenly to the nodes above, so with m >= 2 nodes for w
 * units, w > (m-1) * fanout and every node gets more than fanout/2 * (m-1)/m
 * >= fanout/2 of them: no node is less than half full.
 */
struct bulk {
    btree *t;
    void *const *items;
    size_t width[MAX_HEIGHT + 1];
    struct bt_leaf *last_leaf;
};

/* Index of the first of units dealt to node j of nodes. */
static size_t deal_start(size_t units, size_t nodes, size_t j)
{
    size_t q = units / nodes, r = units % nodes;
    return j * q + (j < r ? j : r);
}

/* Builds node j of level (1: a leaf) with everything below it, and sets
 * *count and *least. On allocation failure frees what it built and returns
 * NULL. */
static void *bulk_node(struct bulk *b, unsigned level, size_t j,
                       size_t *count, void **least)
{
    size_t from = deal_start(b->width[level - 1], b->width[level], j);
    size_t to = deal_start(b->width[level - 1], b->width[level], j + 1);
    if (level == 1) {
        struct bt_leaf *l = leaf_new(b->t);
        if (!l)
            return NULL;
        l->n = (unsigned)(to - from);
        memcpy(l->items, b->items + from, l->n * sizeof l->items[0]);
        l->prev = b->last_leaf;
        if (b->last_leaf)
            b->last_leaf->next = l;
        b->last_leaf = l;
        *count = l->n;
        *least = l->items[0];
        return l;
    }
    struct bt_inner *in = inner_new(b->t);
    if (!in)
        return NULL;
    *count = 0;
    for (size_t i = from; i < to; i++) {
        /* The first child's least item lands in the scratch keys[0]. */
        void *kid = bulk_node(b, level - 1, i, &in->counts[in->n],
                              &in->keys[in->n]);
        if (!kid) {
            free_subtree(b->t, in, level);
            return NULL;
        }
        in->kids[in->n] = kid;
        *count += in->counts[in->n++];
    }
    *least = in->keys[0];
    return in;
}

int btree_bulk_load(btree *t, void *const *items, size_t n)
{
    if (t->root)
        return LDB_MISUSE;
    if (n == 0)
        return LDB_OK;
    struct bulk b = { .t = t, .items = items };
    unsigned h = 0;
    size_t fanout = t->leaf_max;
    b.width[0] = n;
    do {
        b.width[h + 1] = b.width[h] / fanout + (b.width[h] % fanout != 0);
        h++;
        fanout = t->inner_max;
    } while (b.width[h] > 1);
    size_t count;
    void *least;
    void *root = bulk_node(&b, h, 0, &count, &least);
    if (!root)
        return LDB_NOMEM;
    t->root = root;
    t->height = h;
    t->count = n;
    return LDB_OK;
}

/* ---- cursors --------------------------------------------------------- */

static bool cursor_set(btree_cursor *c, const btree *t, struct bt_leaf *leaf,
                       unsigned pos, size_t rank)
{
    c->tree = t;
    c->leaf = leaf;
    c->pos = pos;
    c->rank = rank;
    return leaf != NULL;
}

bool btree_next(btree_cursor *c)
{
    if (!c->leaf)
        return false;
    add_work(c->tree, 1);
    c->rank++;
    if (++c->pos < c->leaf->n)
        return true;
    c->leaf = c->leaf->next;
    c->pos = 0;
    if (!c->leaf)
        return false;
    add_work(c->tree, 1);
    if (c->leaf->n == 0) /* emptied by held deletes, maybe many in a row */
        return btree_at(c->tree, c->rank, c);
    return true;
}

bool btree_prev(btree_cursor *c)
{
    if (!c->leaf)
        return false;
    add_work(c->tree, 1);
    if (c->pos > 0) {
        c->pos--;
        c->rank--;
        return true;
    }
    c->leaf = c->leaf->prev;
    if (!c->leaf)
        return false;
    add_work(c->tree, 1);
    if (c->leaf->n == 0) /* see btree_next; rank 0 has nothing before it */
        return btree_at(c->tree, c->rank - 1, c);
    c->pos = c->leaf->n - 1;
    c->rank--;
    return true;
}

void *btree_cursor_item(const btree_cursor *c)
{
    return c->leaf ? c->leaf->items[c->pos] : NULL;
}

bool btree_seek(const btree *t, btree_probe_fn pcmp, const void *probe,
                enum btree_seek mode, btree_cursor *c)
{
    if (!t->root)
        return cursor_set(c, t, NULL, 0, 0);
    int bias = mode == BT_GE || mode == BT_LT ? 1 : 0;
    unsigned pos;
    size_t rank;
    struct bt_leaf *leaf = descend(t, pcmp, probe, bias, bias, NULL, &pos,
                                   &rank);
    /* (leaf, pos) is the first item not before the probe, or one past the
     * end of leaf; step onto it, or back to the item before it. */
    if (mode == BT_LE || mode == BT_LT) {
        cursor_set(c, t, leaf, pos, rank);
        return btree_prev(c);
    }
    if (pos < leaf->n)
        return cursor_set(c, t, leaf, pos, rank);
    if (leaf->n == 0) /* emptied by held deletes */
        return btree_at(t, rank, c);
    cursor_set(c, t, leaf, pos - 1, rank - 1);
    return btree_next(c);
}

bool btree_at(const btree *t, size_t rank, btree_cursor *c)
{
    if (rank >= t->count)
        return cursor_set(c, t, NULL, 0, 0);
    void *node = t->root;
    size_t r = rank, total = t->count;
    add_work(t, t->height);
    for (unsigned d = 1; d < t->height; d++) {
        struct bt_inner *in = node;
        unsigned i = child_of_rank(in, &r, total);
        total = in->counts[i];
        node = in->kids[i];
    }
    return cursor_set(c, t, node, (unsigned)r, rank);
}

bool btree_first(const btree *t, btree_cursor *c) { return btree_at(t, 0, c); }

bool btree_last(const btree *t, btree_cursor *c)
{
    if (t->count == 0)
        return cursor_set(c, t, NULL, 0, 0);
    return btree_at(t, t->count - 1, c);
}

/* ---- verification ---------------------------------------------------- */

struct check {
    const btree *t;
    const struct bt_leaf *prev_leaf; /* the leaf walked last */
    const void *last_item;           /* the greatest item walked so far */
    size_t nodes, bytes, held;
};

static const char *check_subtree(struct check *k, const void *node,
                                 unsigned level, bool is_root, size_t *count,
                                 void **least);

/* A held leaf's own rules: its pinned separator, if any, lies above the
 * items before the leaf and at or below the leaf's least item (equal when
 * an item equal to the deleted one came in after it). */
static const char *check_pinned(struct check *k, const struct bt_leaf *l)
{
    const btree *t = k->t;
    if (!l->pinned)
        return l->n == 0 && l->prev ? "emptied leaf without a pinned separator" : NULL;
    if (!l->prev)
        return "first leaf with a pinned separator";
    if (k->last_item && t->cmp(t->ctx, k->last_item, l->pinned) >= 0)
        return "pinned separator not above the items before its leaf";
    if (l->n > 0 && t->cmp(t->ctx, l->pinned, l->items[0]) > 0)
        return "pinned separator above its leaf's least item";
    return NULL;
}

/* *least is the leaf's lower bound as a separator must name it: its
 * pinned item, else its least item (NULL for an emptied first leaf). */
static const char *check_leaf(struct check *k, const struct bt_leaf *l,
                              bool is_root, size_t *count, void **least)
{
    const btree *t = k->t;
    unsigned min = is_root ? 1 : t->leaf_max / 2;
    if (l->n > t->leaf_max || (!l->held && l->n < min))
        return "leaf fill out of bounds";
    if (l->dead || (l->pinned && !l->held))
        return "dead or pinned leaf off the held list";
    if (l->prev != k->prev_leaf)
        return "leaf prev link broken";
    if (k->prev_leaf && k->prev_leaf->next != l)
        return "leaf next link broken";
    const char *err = check_pinned(k, l);
    if (err)
        return err;
    for (unsigned i = 0; i < l->n; i++) {
        if (!l->items[i])
            return "NULL item";
        if (k->last_item && t->cmp(t->ctx, k->last_item, l->items[i]) >= 0)
            return "items out of order";
        k->last_item = l->items[i];
    }
    k->prev_leaf = l;
    k->nodes++;
    k->bytes += sizeof *l;
    k->held += l->held;
    *count = l->n;
    *least = l->pinned ? l->pinned : l->n ? l->items[0] : NULL;
    return NULL;
}

static const char *check_inner(struct check *k, const struct bt_inner *in,
                               unsigned level, bool is_root, size_t *count,
                               void **least)
{
    const btree *t = k->t;
    if (in->n > t->inner_max || in->n < (is_root ? 2 : t->inner_max / 2))
        return "internal node fill out of bounds";
    *count = 0;
    for (unsigned i = 0; i < in->n; i++) {
        size_t kid_count;
        void *kid_least;
        const char *err = check_subtree(k, in->kids[i], level - 1, false,
                                        &kid_count, &kid_least);
        if (err)
            return err;
        if (in->counts[i] != kid_count)
            return "child count differs from its subtree size";
        if (i == 0)
            *least = kid_least;
        else if (in->keys[i] != kid_least)
            return "separator is not the least item of its subtree";
        *count += kid_count;
    }
    k->nodes++;
    k->bytes += sizeof *in;
    return NULL;
}

static const char *check_subtree(struct check *k, const void *node,
                                 unsigned level, bool is_root, size_t *count,
                                 void **least)
{
    if (level == 1)
        return check_leaf(k, node, is_root, count, least);
    return check_inner(k, node, level, is_root, count, least);
}

/* The held list: no dead leaf, each once (the walk counted k->held). */
static const char *check_held_list(const struct check *k)
{
    size_t n = 0;
    for (const struct bt_leaf *l = k->t->held; l; l = l->held_next) {
        if (!l->held || l->dead || ++n > k->held)
            return "held list broken";
    }
    return n == k->held ? NULL : "held leaf missing from the held list";
}

const char *btree_check(const btree *t)
{
    if (t->leaf_max < FANOUT_MIN || t->leaf_max > LEAF_MAX ||
        t->inner_max < FANOUT_MIN || t->inner_max > INNER_MAX)
        return "node size out of range";
    if (!t->root) {
        if (t->height || t->count || t->nodes || t->bytes || t->held)
            return "empty tree with a height, items, nodes or held leaves";
        return NULL;
    }
    if (t->height == 0 || t->height > MAX_HEIGHT)
        return "height out of range";
    struct check k = { .t = t };
    size_t count;
    void *least;
    const char *err = check_subtree(&k, t->root, t->height, true, &count,
                                    &least);
    if (err)
        return err;
    if (k.prev_leaf->next)
        return "last leaf has a next link";
    if (count != t->count)
        return "count differs from the number of items";
    if (k.nodes != t->nodes || k.bytes != t->bytes)
        return "node or byte total is wrong";
    return check_held_list(&k);
}
