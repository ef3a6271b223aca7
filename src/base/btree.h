/*
 * btree.h - counted B+tree: an ordered set of opaque items with ranks.
 *
 * The tree holds non-NULL void pointers ordered by a caller comparator. It
 * never looks at an item except through the comparators and never frees
 * one: items belong to the caller. Items are unique under the comparator
 * (callers make the order total, e.g. index columns then primary key).
 *
 * Items live in doubly linked leaves; internal nodes hold, for every child,
 * its least item (as a separator) and its item count. The counts make rank
 * queries (the i-th item, how many items lie below a probe) O(log n) like
 * seeks, and the leaf links make cursor steps O(1).
 *
 * Guarantees:
 * - An insert that fails with LDB_NOMEM leaves the tree exactly as it was.
 * - Delete and replace never allocate. Every node but the root stays at
 *   least half full, and the tree loses a level when the root has a single
 *   child (after held deletes: once the tree is settled, see below).
 * - Any insert, delete or bulk load (by rank too) invalidates every cursor
 *   on the tree;
 *   a replace does not (a cursor on the replaced item reads the new one).
 * - No operation recurses deeper than the height of the tree.
 *
 * The struct is public so that it can be embedded. Its fields may be read
 * (tests and statistics do); only the functions below change them.
 */
#ifndef LDB_BASE_BTREE_H
#define LDB_BASE_BTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bt_leaf;

/* Order of two items: negative, zero or positive as a < b, a == b, a > b. */
typedef int (*btree_cmp_fn)(void *ctx, const void *a, const void *b);

/*
 * Order of a caller probe against an item, same sign convention. A probe
 * comparator may be coarser than the item order (say, comparing only a
 * prefix of the index columns), so that several neighbouring items compare
 * equal to one probe; it must never contradict the item order. The item
 * comparator itself is a valid probe comparator with an item as probe.
 */
typedef int (*btree_probe_fn)(void *ctx, const void *probe, const void *item);

typedef struct btree {
    void *root;            /* NULL when empty */
    unsigned height;       /* levels: 0 when empty, 1 when the root is a leaf */
    unsigned leaf_max;     /* items per leaf at most */
    unsigned inner_max;    /* children per internal node at most */
    size_t count;          /* items */
    size_t nodes;          /* nodes allocated */
    size_t bytes;          /* bytes in those nodes */
    btree_cmp_fn cmp;
    void *ctx;             /* passed to every comparator and pin call */
    uint64_t *work;        /* NULL, or the counter of nodes and steps */
    struct bt_leaf *held;  /* leaves held deletes left to settle (a list) */
    void (*pin)(void *ctx, void *item, bool keep); /* see btree_set_pin */
} btree;

/* A position on an item, for stepping and ranks. */
typedef struct btree_cursor {
    const btree *tree;
    struct bt_leaf *leaf;  /* NULL when the cursor is not on an item */
    unsigned pos;          /* index of the item in leaf */
    size_t rank;           /* 0-based position of the item in the tree */
} btree_cursor;

/*
 * Where a seek lands, given a probe. With a coarse probe comparator several
 * items may compare equal to the probe: GE lands on the first of them, LE
 * on the last.
 */
enum btree_seek {
    BT_GE, /* first item >= probe */
    BT_GT, /* first item >  probe */
    BT_LE, /* last item  <= probe */
    BT_LT  /* last item  <  probe */
};

/* ---- life cycle ------------------------------------------------------ */

/* An empty tree ordered by cmp; ctx goes to every comparator call. Does not
 * allocate: the first node is made by the first insert. */
void btree_init(btree *t, btree_cmp_fn cmp, void *ctx);

/*
 * btree_init with smaller nodes: leaf_max items per leaf and inner_max
 * children per internal node, each clamped to [4, the default]. Exists for
 * tests, which need deep trees, splits and merges from a few items.
 */
void btree_init_fanout(btree *t, btree_cmp_fn cmp, void *ctx,
                       unsigned leaf_max, unsigned inner_max);

/* Frees every node, never the items, and ends every pin. The tree is left
 * empty and usable, with its comparator, context, node sizes, work counter
 * and pin hook. */
void btree_free(btree *t);

/*
 * Points the work counter at *counter (NULL: stop counting). From then on
 * every node a search passes through adds 1, and every cursor step adds 1
 * plus 1 when it enters another leaf. The caller owns the counter, resets
 * it when it likes, and may share one counter among many trees.
 */
void btree_set_work_counter(btree *t, uint64_t *counter);

/* ---- updates --------------------------------------------------------- */

/*
 * Adds item (non-NULL, caller-owned). If an item equal to it is already in
 * the tree, the tree is unchanged and *existing is set to that item;
 * otherwise *existing is set to NULL. existing may be NULL.
 * Returns LDB_OK, LDB_NOMEM (tree unchanged) or LDB_MISUSE (item is NULL).
 */
int btree_insert(btree *t, void *item, void **existing);

/* Removes the item equal to key under the item comparator and returns it
 * (the caller may then free it), or returns NULL if there is none. Never
 * allocates, so it cannot fail. Settles the tree first if held deletes
 * left it unsettled.
 * Delete, replace and find look for key's own address in its leaf before
 * comparing: given the very item the tree holds, they skip the leaf's
 * comparisons, the ones most likely to miss the cache in a large tree. */
void *btree_delete(btree *t, const void *key);

/*
 * Inserts item (non-NULL) at rank, 0 <= rank <= count, without a
 * comparison: rank must be its place in the order, which the tree cannot
 * check (btree_check can). For callers that found the place already, say
 * with a seek that also told them what they needed to know about the
 * neighbours. Returns LDB_OK, LDB_NOMEM (tree unchanged) or LDB_MISUSE
 * (item NULL or rank past the end). Settles the tree first, like
 * btree_delete.
 */
int btree_insert_rank(btree *t, size_t rank, void *item);

/* Removes the item of rank and returns it, or returns NULL when rank >=
 * count; no comparison. Never allocates. Settles the tree first, like
 * btree_delete. */
void *btree_delete_rank(btree *t, size_t rank);

/*
 * Swaps item (non-NULL) in for the item equal to key under the item
 * comparator, in place, and returns the item replaced; returns NULL, tree
 * unchanged, when there is none. item must order against every other
 * item of the tree, and every item pinned by held deletes, as the
 * replaced one does: say, the next version of an index row whose key did
 * not change. The tree cannot check that
 * (btree_check can). One descent, like a find: no allocation, no change
 * of structure or counts, so it cannot fail.
 */
void *btree_replace(btree *t, const void *key, void *item);

/*
 * Builds the tree from items[0..n), which must be strictly increasing under
 * the comparator, in O(n). The tree must be empty. Nodes are packed full,
 * which suits read-mostly data and appends; random inserts that follow
 * split each packed leaf once.
 * Returns LDB_OK, LDB_NOMEM (tree still empty) or LDB_MISUSE (not empty).
 */
int btree_bulk_load(btree *t, void *const *items, size_t n);

/* ---- held deletes: undo without memory -------------------------------- */
/*
 * A held delete removes an item but keeps the tree's shape: no node is
 * merged, rebalanced or freed, and every separator keeps its value. A
 * leaf may fall below half full or empty, and a separator may go on
 * naming the deleted item as the lower bound of its leaf's key range
 * (the tree keeps such an item through the pin hook, so a comparator is
 * never handed a freed item). Until btree_settle the key ranges of the
 * leaves therefore only ever split (on inserts), never grow, and that
 * makes putting items back free of allocation:
 *
 *   Let a held delete remove x, and let every delete since the last
 *   settle be held. Whenever the tree again holds exactly the items it
 *   held right after that delete (say, an undo log has taken back
 *   everything done since), re-inserting x needs no new node: the leaf
 *   whose range holds x holds a subset of what x's leaf held right after
 *   the delete, which was one short of full.
 *
 * Reads stay correct and O(log n) while the tree is unsettled; a cursor
 * step that meets an emptied leaf jumps by rank, O(log n).
 */

/*
 * The hook through which the tree keeps an item that a held delete took
 * out while a separator still names it: pin(ctx, item, true) when that
 * starts, pin(ctx, item, false) when settle, a put back or btree_free ends
 * it. NULL (the default): the caller keeps every held-deleted item alive
 * until the next settle or free.
 */
void btree_set_pin(btree *t, void (*pin)(void *ctx, void *item, bool keep));

/* Removes the item equal to key, keeping the shape (see above), and
 * returns it, or NULL if there is none. Never allocates. */
void *btree_delete_held(btree *t, const void *key);

/*
 * Re-inserts an item that a held delete removed, under the condition
 * above, without allocating. LDB_OK; LDB_INTERNAL, tree unchanged, when
 * the condition does not hold (the target leaf is full, the tree empty,
 * or the item already there); LDB_MISUSE for NULL.
 */
int btree_put_back(btree *t, void *item);

/* Whether held deletes left leaves to settle. */
static inline bool btree_unsettled(const btree *t) { return t->held != NULL; }

/*
 * Restores every invariant held deletes relaxed (fill bounds, separators
 * naming items in the tree) by merging, borrowing and freeing, and ends
 * every pin. Never allocates; O(log n) per leaf held deletes left short
 * or with a separator naming a deleted item.
 */
void btree_settle(btree *t);

/* ---- lookups --------------------------------------------------------- */

/* The item equal to key under the item comparator, or NULL. */
void *btree_find(const btree *t, const void *key);
/* The rank of the item the tree holds at this address (compared only on
 * the way down to its leaf: none in a one-leaf tree, whose items may be
 * costly to reach), or SIZE_MAX when it is not there. */
size_t btree_rank_of(const btree *t, const void *item);

static inline size_t btree_count(const btree *t) { return t->count; }

/* Bytes held by the nodes (not the items), for space accounting. */
static inline size_t btree_bytes(const btree *t) { return t->bytes; }

/*
 * Number of items that compare below probe (or_equal false) or at or below
 * it (or_equal true), in O(log n). The count of items in a range is a
 * difference of two calls, e.g. for lo <= item <= hi:
 *     btree_count_below(t, f, hi, true) - btree_count_below(t, f, lo, false)
 */
size_t btree_count_below(const btree *t, btree_probe_fn pcmp,
                         const void *probe, bool or_equal);

/* ---- cursors --------------------------------------------------------- */
/*
 * A cursor is a plain value the caller owns; it needs no cleanup. Every
 * positioning function returns true when the cursor is on an item, and
 * false (cursor not on an item) otherwise. Stepping off either end leaves
 * the cursor off the tree; stepping an off cursor returns false.
 */

bool btree_seek(const btree *t, btree_probe_fn pcmp, const void *probe,
                enum btree_seek mode, btree_cursor *c);
bool btree_first(const btree *t, btree_cursor *c);
bool btree_last(const btree *t, btree_cursor *c);
/* The item of the given 0-based rank, in O(log n). */
bool btree_at(const btree *t, size_t rank, btree_cursor *c);

bool btree_next(btree_cursor *c);
bool btree_prev(btree_cursor *c);

/* The item under the cursor, or NULL when it is not on one. */
void *btree_cursor_item(const btree_cursor *c);

/* The 0-based rank of the item under the cursor, in O(1). Meaningless
 * when the cursor is not on an item. */
static inline size_t btree_cursor_rank(const btree_cursor *c)
{
    return c->rank;
}

/* ---- verification ---------------------------------------------------- */

/*
 * Walks the whole tree and checks every structural invariant: strict item
 * order within and across leaves, node fill bounds, separators equal to
 * the least item of their subtree, child counts equal to real subtree
 * sizes, leaf links, equal leaf depth, and the count, node and byte totals.
 * A leaf that held deletes left unsettled must be on the held list, and
 * may be short, and have a separator below its least item (the pinned
 * deleted item) instead.
 * Returns NULL if all hold, else a static description of the first
 * violation found. O(n); for tests and integrity checks.
 */
const char *btree_check(const btree *t);

#endif
