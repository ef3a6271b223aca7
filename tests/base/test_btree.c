/*
 * test_btree.c - the counted B+tree against a sorted-array model.
 *
 * Items are integer keys >= 1 cast to pointers. Random operations
 * (inserts and deletes by comparison and by rank, in-place replaces,
 * finds) run with tiny nodes (deep trees, frequent splits, borrows and
 * merges) and with the default ones; after every step the tree is
 * compared with the model, and
 * regularly it is walked in full: btree_check, both iteration orders,
 * ranks, every seek mode with exact and prefix probes, range counts.
 * Separate cases cover bulk load, allocation failure, the work bound, and
 * held deletes: transactions of inserts, held deletes and replaces, with
 * savepoints, undone with every allocation failing (none may be needed),
 * reads checked in the unsettled shape, then settled.
 */
#include "base/btree.h"
#include "base/mem.h"
#include "livedb.h"
#include "test.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

/* Handed to the tree as comparator context, to prove it is passed on. */
static int tree_ctx;

/* A node size above the maximum, which btree_init_fanout clamps to it. */
#define DEFAULT_NODES UINT_MAX

static void *item_of(uint64_t k) { return (void *)(uintptr_t)k; }
static uint64_t key_of(const void *item) { return (uint64_t)(uintptr_t)item; }

static int order(uint64_t x, uint64_t y) { return (x > y) - (x < y); }

static int cmp_items(void *ctx, const void *a, const void *b)
{
    CHECK(ctx == &tree_ctx);
    return order(key_of(a), key_of(b));
}

/* A probe compares keys without their low shift bits: with shift > 0 a
 * whole run of neighbouring items compares equal to it. */
struct probe {
    uint64_t key;
    unsigned shift;
};

static int cmp_probe(void *ctx, const void *p, const void *item)
{
    const struct probe *pr = p;
    CHECK(ctx == &tree_ctx);
    return order(pr->key >> pr->shift, key_of(item) >> pr->shift);
}

/* ---- the model: a sorted array of keys ------------------------------- */

struct model {
    uint64_t *keys;
    size_t n, cap;
};

static void model_free(struct model *m)
{
    free(m->keys);
    *m = (struct model){ 0 };
}

/* Keys whose prefix is below the probe's (or at or below it). */
static size_t model_below(const struct model *m, const struct probe *p,
                          bool or_equal)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = order(p->key >> p->shift, m->keys[mid] >> p->shift);
        if (c > 0 || (or_equal && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t model_pos(const struct model *m, uint64_t k)
{
    struct probe p = { k, 0 };
    return model_below(m, &p, false);
}

static bool model_has(const struct model *m, uint64_t k)
{
    size_t i = model_pos(m, k);
    return i < m->n && m->keys[i] == k;
}

static void model_insert(struct model *m, uint64_t k)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->keys = realloc(m->keys, m->cap * sizeof m->keys[0]);
        CHECK(m->keys != NULL);
    }
    size_t i = model_pos(m, k);
    memmove(m->keys + i + 1, m->keys + i, (m->n - i) * sizeof m->keys[0]);
    m->keys[i] = k;
    m->n++;
}

static void model_delete(struct model *m, uint64_t k)
{
    size_t i = model_pos(m, k);
    memmove(m->keys + i, m->keys + i + 1, (m->n - i - 1) * sizeof m->keys[0]);
    m->n--;
}

/* ---- comparing tree and model ---------------------------------------- */

static void check_structure(const btree *t)
{
    const char *err = btree_check(t);
    CHECKF(err == NULL, "btree_check: %s", err);
}

/* The cursor is on the model's i-th key. */
static void check_at(const btree_cursor *c, const struct model *m, size_t i)
{
    CHECK(btree_cursor_item(c) != NULL);
    CHECK_INT(key_of(btree_cursor_item(c)), m->keys[i]);
    CHECK_INT(btree_cursor_rank(c), i);
}

static void check_iteration(const btree *t, const struct model *m)
{
    btree_cursor c;
    bool on = btree_first(t, &c);
    for (size_t i = 0; i < m->n; i++) {
        CHECK(on);
        check_at(&c, m, i);
        on = btree_next(&c);
    }
    CHECK(!on);
    CHECK(btree_cursor_item(&c) == NULL);
    CHECK(!btree_next(&c) && !btree_prev(&c));
    on = btree_last(t, &c);
    for (size_t i = m->n; i-- > 0;) {
        CHECK(on);
        check_at(&c, m, i);
        on = btree_prev(&c);
    }
    CHECK(!on);
    CHECK(btree_cursor_item(&c) == NULL);
}

/* Seeks in every mode and steps a few items both ways from there. */
static void check_seeks(const btree *t, const struct model *m,
                        const struct probe *p)
{
    size_t lt = model_below(m, p, false), le = model_below(m, p, true);
    CHECK_INT(btree_count_below(t, cmp_probe, p, false), lt);
    CHECK_INT(btree_count_below(t, cmp_probe, p, true), le);
    static const enum btree_seek modes[] = { BT_GE, BT_GT, BT_LE, BT_LT };
    for (int mi = 0; mi < 4; mi++) {
        enum btree_seek mode = modes[mi];
        /* Expected position, one past the model's index (0: no item). */
        size_t want = mode == BT_GE   ? (lt < m->n ? lt + 1 : 0)
                      : mode == BT_GT ? (le < m->n ? le + 1 : 0)
                      : mode == BT_LE ? le
                                      : lt;
        btree_cursor c;
        bool on = btree_seek(t, cmp_probe, p, mode, &c);
        CHECKF(on == (want > 0), "seek mode %d key %llu shift %u", mode,
               (unsigned long long)p->key, p->shift);
        if (!on) {
            CHECK(btree_cursor_item(&c) == NULL);
            continue;
        }
        size_t i = want - 1;
        check_at(&c, m, i);
        btree_cursor back = c;
        for (size_t j = i + 1; j < m->n && j < i + 4; j++) {
            CHECK(btree_next(&c));
            check_at(&c, m, j);
        }
        for (size_t j = i; j-- > 0 && j + 4 > i;) {
            CHECK(btree_prev(&back));
            check_at(&back, m, j);
        }
    }
}

/* A probe that hits an item, misses between items, falls outside, or
 * (shift > 0) covers a run of items. */
static struct probe random_probe(rng *r, const struct model *m,
                                 uint64_t key_limit)
{
    static const unsigned shifts[] = { 0, 0, 0, 1, 3, 5, 8 };
    struct probe p = { rng_below(r, key_limit + 3), shifts[rng_below(r, 7)] };
    if (m->n > 0 && rng_chance(r, 1, 3))
        p.key = m->keys[rng_below(r, m->n)];
    return p;
}

static void check_ranks(const btree *t, const struct model *m, rng *r,
                        int times)
{
    btree_cursor c;
    for (int i = 0; i < times && m->n > 0; i++) {
        size_t rank = rng_below(r, m->n);
        CHECK(btree_at(t, rank, &c));
        check_at(&c, m, rank);
        CHECK_INT(btree_rank_of(t, btree_cursor_item(&c)), rank);
    }
    CHECK(!btree_at(t, m->n, &c));
    CHECK(btree_cursor_item(&c) == NULL);
}

/* Everything, in O(n): for every few steps of a random run. */
static void check_all(const btree *t, const struct model *m, rng *r,
                      uint64_t key_limit)
{
    check_structure(t);
    CHECK_INT(btree_count(t), m->n);
    check_iteration(t, m);
    check_ranks(t, m, r, 20);
    for (int i = 0; i < 20; i++) {
        struct probe p = random_probe(r, m, key_limit);
        check_seeks(t, m, &p);
    }
    struct probe lo = random_probe(r, m, key_limit);
    struct probe hi = random_probe(r, m, key_limit);
    if (lo.key > hi.key) {
        struct probe tmp = lo;
        lo = hi;
        hi = tmp;
    }
    lo.shift = hi.shift = 0;
    size_t in_range = btree_count_below(t, cmp_probe, &hi, true) -
                      btree_count_below(t, cmp_probe, &lo, false);
    CHECK_INT(in_range, model_below(m, &hi, true) - model_below(m, &lo, false));
}

/* ---- random operations ----------------------------------------------- */

/*
 * Replaces an item (mostly one that is there, else k) by a key drawn
 * between its neighbours, which sorts where it did. Never allocates; a
 * probe that matches nothing changes nothing.
 */
static void random_replace(btree *t, struct model *m, rng *r, uint64_t k)
{
    if (m->n > 0 && rng_chance(r, 4, 5))
        k = m->keys[rng_below(r, m->n)];
    uint64_t allocs = mem_alloc_count();
    if (!model_has(m, k)) {
        CHECK(btree_replace(t, item_of(k), item_of(k)) == NULL);
        CHECK_INT(mem_alloc_count(), allocs);
        return;
    }
    size_t i = model_pos(m, k);
    uint64_t lo = i > 0 ? m->keys[i - 1] : 0;
    uint64_t hi = i + 1 < m->n ? m->keys[i + 1] : k + 3;
    uint64_t nk = lo + 1 + rng_below(r, hi - lo - 1);
    CHECK_INT(key_of(btree_replace(t, item_of(k), item_of(nk))), k);
    CHECK_INT(mem_alloc_count(), allocs);
    m->keys[i] = nk;
}

static void random_op(btree *t, struct model *m, rng *r, uint64_t key_limit,
                      bool growing)
{
    uint64_t k = 1 + rng_below(r, key_limit);
    unsigned dice = (unsigned)rng_below(r, 9);
    if (dice == 8) {
        random_replace(t, m, r, k);
        return;
    }
    if (dice < (growing ? 5u : 2u) && !model_has(m, k) && rng_chance(r, 1, 3)) {
        CHECK_INT(btree_insert_rank(t, model_pos(m, k), item_of(k)), LDB_OK);
        model_insert(m, k);
    } else if (dice < (growing ? 5u : 2u)) {
        void *existing = item_of(1);
        CHECK_INT(btree_insert(t, item_of(k), &existing), LDB_OK);
        if (model_has(m, k)) {
            CHECK_INT(key_of(existing), k);
        } else {
            CHECK(existing == NULL);
            model_insert(m, k);
        }
    } else if (dice < 7 && m->n > 0 && rng_chance(r, 1, 3)) {
        size_t i = rng_below(r, m->n);
        uint64_t allocs = mem_alloc_count();
        k = m->keys[i];
        CHECK_INT(key_of(btree_delete_rank(t, i)), k);
        CHECK_INT(mem_alloc_count(), allocs);
        model_delete(m, k);
    } else if (dice < 7) {
        if (m->n > 0 && rng_chance(r, 4, 5))
            k = m->keys[rng_below(r, m->n)];
        uint64_t allocs = mem_alloc_count();
        void *got = btree_delete(t, item_of(k));
        CHECK_INT(mem_alloc_count(), allocs);
        if (model_has(m, k)) {
            CHECK_INT(key_of(got), k);
            model_delete(m, k);
        } else {
            CHECK(got == NULL);
        }
    } else {
        void *got = btree_find(t, item_of(k));
        CHECK_INT(key_of(got), model_has(m, k) ? k : 0);
    }
}

/*
 * Random inserts, deletes and finds on a tree with the given node sizes,
 * swinging between empty and max_items so that the tree grows and loses
 * levels repeatedly. Cheap checks after every step, full ones every
 * full_every steps (and every step while the tree is small).
 */
static void random_run(btree *t, struct model *m, rng *r, size_t max_items,
                       long steps, int full_every)
{
    uint64_t key_limit = 2 * max_items;
    bool growing = true;
    for (long s = 0; s < steps; s++) {
        if (m->n >= max_items)
            growing = false;
        else if (m->n == 0)
            growing = true;
        random_op(t, m, r, key_limit, growing);
        CHECK_INT(btree_count(t), m->n);
        check_ranks(t, m, r, 1);
        struct probe p = random_probe(r, m, key_limit);
        check_seeks(t, m, &p);
        if (m->n < 100 || s % full_every == 0)
            check_all(t, m, r, key_limit);
    }
    check_all(t, m, r, key_limit);
}

static void random_config(unsigned leaf_max, unsigned inner_max,
                          size_t max_items, long steps, int full_every)
{
    rng r;
    rng_seed(&r, test_seed() ^ (leaf_max * 131 + inner_max));
    int64_t live = mem_live();
    btree t;
    btree_init_fanout(&t, cmp_items, &tree_ctx, leaf_max, inner_max);
    struct model m = { 0 };
    random_run(&t, &m, &r, max_items, steps * test_scale(), full_every);
    btree_free(&t);
    check_structure(&t);
    CHECK_INT(mem_live(), live);
    model_free(&m);
}

static void test_random_tiny_nodes(void)
{
    random_config(4, 4, 400, 40000, 25);
    random_config(5, 7, 600, 25000, 25);
    random_config(7, 5, 600, 25000, 25);
}

static void test_random_default_nodes(void)
{
    random_config(DEFAULT_NODES, DEFAULT_NODES, 5000, 100000, 500);
}

static void test_misuse_and_empty(void)
{
    btree t;
    btree_init(&t, cmp_items, &tree_ctx);
    btree_cursor c;
    struct probe p = { 5, 0 };
    struct model m = { 0 };
    CHECK(!btree_first(&t, &c) && !btree_last(&t, &c));
    CHECK(!btree_at(&t, 0, &c));
    CHECK(btree_rank_of(&t, item_of(1)) == SIZE_MAX);
    CHECK(btree_find(&t, item_of(5)) == NULL);
    CHECK(btree_delete(&t, item_of(5)) == NULL);
    CHECK(btree_delete_rank(&t, 0) == NULL);
    CHECK_INT(btree_insert_rank(&t, 1, item_of(5)), LDB_MISUSE);
    check_seeks(&t, &m, &p);
    void *existing = item_of(9);
    CHECK_INT(btree_insert(&t, NULL, &existing), LDB_MISUSE);
    CHECK(existing == NULL);
    CHECK_INT(btree_insert_rank(&t, 0, NULL), LDB_MISUSE);
    CHECK_INT(btree_insert(&t, item_of(5), NULL), LDB_OK);
    CHECK_INT(btree_insert(&t, item_of(5), NULL), LDB_OK);
    CHECK_INT(btree_count(&t), 1);
    void *one = item_of(1);
    CHECK_INT(btree_bulk_load(&t, &one, 1), LDB_MISUSE);
    CHECK(btree_bytes(&t) > 0);
    btree_free(&t);
    CHECK_INT(btree_bytes(&t), 0);
    check_structure(&t);
}

/* ---- bulk load ------------------------------------------------------- */

/* Loads keys 3, 6, ..., 3n (gaps for probes that miss) into t. */
static void bulk_load_multiples(btree *t, struct model *m, size_t n)
{
    void **items = malloc((n ? n : 1) * sizeof *items);
    CHECK(items != NULL);
    for (size_t i = 0; i < n; i++) {
        items[i] = item_of(3 * (i + 1));
        model_insert(m, 3 * (i + 1));
    }
    int rc = btree_bulk_load(t, items, n);
    free(items);
    CHECK_INT(rc, LDB_OK);
}

static void test_bulk_load(void)
{
    static const unsigned fanouts[][2] = { { 4, 4 }, { 5, 7 }, { DEFAULT_NODES, DEFAULT_NODES } };
    static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 6, 9, 17, 63, 64, 65,
                                    100, 1000, 4095, 4096, 4097, 20000 };
    rng r;
    rng_seed(&r, test_seed());
    int64_t live = mem_live();
    for (int f = 0; f < 3; f++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            btree t;
            btree_init_fanout(&t, cmp_items, &tree_ctx, fanouts[f][0],
                              fanouts[f][1]);
            struct model m = { 0 };
            bulk_load_multiples(&t, &m, sizes[s]);
            check_all(&t, &m, &r, 3 * sizes[s] + 3);
            random_run(&t, &m, &r, sizes[s] + 50, 300, 50);
            btree_free(&t);
            model_free(&m);
        }
    }
    CHECK_INT(mem_live(), live);
}

/* ---- replace --------------------------------------------------------- */

/* Every item of a deep tree replaced in place, first items of leaves (the
 * separators) included, with every allocation failing: the order, ranks,
 * counts and nodes stay, and a cursor on an item reads its replacement. */
static void test_replace(void)
{
    int64_t live = mem_live();
    btree t;
    struct model m = { 0 };
    btree_init_fanout(&t, cmp_items, &tree_ctx, 4, 4);
    CHECK(btree_replace(&t, item_of(3), item_of(4)) == NULL);
    bulk_load_multiples(&t, &m, 200);
    size_t nodes = t.nodes, bytes = btree_bytes(&t);
    unsigned height = t.height;
    mem_fail_at(1, 1);
    CHECK(btree_replace(&t, item_of(3), NULL) == NULL);
    CHECK(btree_replace(&t, item_of(301), item_of(302)) == NULL);
    for (size_t i = 0; i < m.n; i++) {
        btree_cursor c;
        struct probe p = { m.keys[i], 0 };
        CHECK(btree_seek(&t, cmp_probe, &p, BT_GE, &c));
        CHECK_INT(key_of(btree_replace(&t, item_of(p.key), item_of(p.key + 1))), p.key);
        m.keys[i] = p.key + 1;
        check_at(&c, &m, i);
        check_structure(&t);
    }
    CHECK_INT(mem_failed_count(), 0);
    mem_fail_at(0, 0);
    CHECK_INT(t.nodes, nodes);
    CHECK_INT(btree_bytes(&t), bytes);
    CHECK_INT(t.height, height);
    rng r;
    rng_seed(&r, test_seed());
    check_all(&t, &m, &r, 3 * 200 + 3);
    btree_free(&t);
    model_free(&m);
    CHECK_INT(mem_live(), live);
}

/* Items are addresses of keys here, so a key can equal an item at another
 * address: find, delete and replace must then find it by comparison. */
static int cmp_boxed(void *ctx, const void *a, const void *b)
{
    CHECK(ctx == &tree_ctx);
    return order(*(const uint64_t *)a, *(const uint64_t *)b);
}

static void test_equal_keys(void)
{
    enum { N = 300 };
    static uint64_t held[N], twin[N], next[N];
    int64_t live = mem_live();
    btree t;
    btree_init_fanout(&t, cmp_boxed, &tree_ctx, 4, 4);
    for (size_t i = 0; i < N; i++) {
        held[i] = twin[i] = next[i] = 2 * i + 2;
        CHECK_INT(btree_insert(&t, &held[i], NULL), LDB_OK);
    }
    uint64_t odd = 3;
    CHECK(btree_find(&t, &odd) == NULL);
    CHECK(btree_replace(&t, &odd, &odd) == NULL);
    CHECK(btree_delete(&t, &odd) == NULL);
    for (size_t i = 0; i < N; i++) {
        CHECK(btree_find(&t, &twin[i]) == &held[i]);
        if (i % 3 == 0) {
            CHECK(btree_replace(&t, &twin[i], &next[i]) == &held[i]);
            CHECK(btree_find(&t, &held[i]) == &next[i]);
        }
    }
    check_structure(&t);
    for (size_t i = 0; i < N; i += 2)
        CHECK(btree_delete(&t, &twin[i]) == (i % 3 == 0 ? &next[i] : &held[i]));
    CHECK_INT(btree_count(&t), N / 2);
    check_structure(&t);
    btree_free(&t);
    CHECK_INT(mem_live(), live);
}

/* ---- allocation failure ---------------------------------------------- */

/*
 * Inserts k failing each allocation in turn: every failed attempt must
 * return LDB_NOMEM and leave the tree as it was, down to its node count.
 * Returns the number of allocations the insert needed.
 */
static unsigned insert_failing_each(btree *t, struct model *m, uint64_t k)
{
    /* By comparison for even keys, by rank for odd ones. */
    bool by_rank = k % 2;
    for (unsigned fail = 1;; fail++) {
        int64_t live = mem_live();
        size_t nodes = t->nodes, bytes = btree_bytes(t), height = t->height;
        mem_fail_at(fail, 0);
        int rc = by_rank ? btree_insert_rank(t, model_pos(m, k), item_of(k))
                         : btree_insert(t, item_of(k), NULL);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        if (failed == 0) {
            CHECK_INT(rc, LDB_OK);
            model_insert(m, k);
            check_structure(t);
            return fail - 1;
        }
        CHECK_INT(rc, LDB_NOMEM);
        CHECK_INT(mem_live(), live);
        CHECK_INT(t->nodes, nodes);
        CHECK_INT(btree_bytes(t), bytes);
        CHECK_INT(t->height, height);
        check_structure(t);
        CHECK_INT(btree_count(t), m->n);
        check_iteration(t, m);
    }
}

static void test_insert_nomem(void)
{
    rng r;
    rng_seed(&r, test_seed());
    int64_t live = mem_live();
    btree t;
    struct model m = { 0 };

    /* The first insert allocates the root leaf. */
    btree_init_fanout(&t, cmp_items, &tree_ctx, 4, 4);
    CHECK_INT(insert_failing_each(&t, &m, 7), 1);
    btree_free(&t);
    model_free(&m);

    /* Three full levels of tiny nodes: the insert splits a leaf, two
     * internal nodes and the root. Then a few hundred random inserts. */
    bulk_load_multiples(&t, &m, 4 * 4 * 4);
    CHECK_INT(t.height, 3);
    CHECK_INT(insert_failing_each(&t, &m, 3 * 20 + 1), 4);
    CHECK_INT(t.height, 4);
    unsigned most = 0, root_splits = 0;
    for (int i = 0; i < 300; i++) {
        uint64_t k = 1 + rng_below(&r, 3000);
        if (model_has(&m, k))
            continue;
        unsigned height = t.height;
        unsigned allocs = insert_failing_each(&t, &m, k);
        most = allocs > most ? allocs : most;
        root_splits += t.height > height;
    }
    CHECK(most >= 3);
    CHECK(root_splits >= 1);
    check_all(&t, &m, &r, 3000);
    btree_free(&t);
    model_free(&m);

    /* Default nodes, a root over full leaves: leaf split plus root split. */
    btree_init(&t, cmp_items, &tree_ctx);
    bulk_load_multiples(&t, &m, 64 * 64);
    CHECK_INT(t.height, 2);
    CHECK_INT(insert_failing_each(&t, &m, 3 * 4000 + 1), 3);
    CHECK_INT(insert_failing_each(&t, &m, 2), 1);
    check_all(&t, &m, &r, 3 * 64 * 64);
    btree_free(&t);
    model_free(&m);
    CHECK_INT(mem_live(), live);
}

static void test_bulk_load_nomem(void)
{
    int64_t live = mem_live();
    void *items[1000];
    for (size_t i = 0; i < 1000; i++)
        items[i] = item_of(i + 1);
    btree t;
    btree_init_fanout(&t, cmp_items, &tree_ctx, 4, 4);
    for (unsigned fail = 1;; fail++) {
        mem_fail_at(fail, 0);
        int rc = btree_bulk_load(&t, items, 1000);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        if (failed == 0) {
            CHECK_INT(rc, LDB_OK);
            break;
        }
        CHECK_INT(rc, LDB_NOMEM);
        CHECK_INT(mem_live(), live);
        CHECK_INT(btree_count(&t), 0);
        check_structure(&t);
    }
    check_structure(&t);
    CHECK_INT(btree_count(&t), 1000);
    btree_free(&t);
    CHECK_INT(mem_live(), live);
}

/* ---- work bound ------------------------------------------------------ */

/* The greatest height n items can have when every node is at least half
 * full: height h needs 2 * leaf_min * inner_min^(h-2) items. */
static unsigned max_height(size_t n, unsigned leaf_min, unsigned inner_min)
{
    unsigned h = 1;
    for (size_t least = 2 * (size_t)leaf_min; least <= n; least *= inner_min)
        h++;
    return h;
}

/*
 * A seek plus k steps costs the height for the descent, one per step and
 * one per leaf entered; k steps enter at most k / leaf_min + 1 leaves. The
 * descent and the steps are checked separately against that bound.
 */
static void check_work_bound(btree *t, const struct model *m, rng *r)
{
    enum { K = 50 };
    uint64_t work = 0;
    btree_set_work_counter(t, &work);
    unsigned leaf_min = t->leaf_max / 2;
    CHECK(t->height <= max_height(m->n, leaf_min, t->inner_max / 2));
    uint64_t step_bound = K + K / leaf_min + 1;
    for (int i = 0; i < 200; i++) {
        struct probe p = random_probe(r, m, 2 * m->keys[m->n - 1]);
        bool forward = i % 2 == 0;
        btree_cursor c;
        work = 0;
        bool on = btree_seek(t, cmp_probe, &p, forward ? BT_GE : BT_LE, &c);
        CHECK(work <= t->height + 2);
        work = 0;
        for (int j = 0; on && j < K; j++)
            on = forward ? btree_next(&c) : btree_prev(&c);
        CHECKF(work <= step_bound, "%d steps took %llu", K,
               (unsigned long long)work);
        work = 0;
        CHECK(btree_at(t, rng_below(r, m->n), &c));
        CHECK_INT(work, t->height);
        work = 0;
        btree_count_below(t, cmp_probe, &p, true);
        CHECK_INT(work, t->height);
    }
    btree_set_work_counter(t, NULL);
}

static void test_work_bound(void)
{
    rng r;
    rng_seed(&r, test_seed());
    int64_t live = mem_live();
    btree t;
    struct model m = { 0 };

    /* 1k items inserted at random: nodes between half and fully packed. */
    btree_init(&t, cmp_items, &tree_ctx);
    while (m.n < 1000) {
        uint64_t k = 1 + rng_below(&r, 1u << 20);
        if (!model_has(&m, k)) {
            CHECK_INT(btree_insert(&t, item_of(k), NULL), LDB_OK);
            model_insert(&m, k);
        }
    }
    check_work_bound(&t, &m, &r);
    CHECK_INT(t.height, 2);
    btree_free(&t);
    model_free(&m);

    /* 1M items: bulk loaded, then a third deleted at random so that the
     * nodes are no longer uniformly packed. */
    bulk_load_multiples(&t, &m, 1500000);
    for (size_t i = 0; i < 500000; i++) {
        uint64_t k = 3 * (1 + rng_below(&r, 1500000));
        btree_delete(&t, item_of(k));
    }
    m.n = 0;
    btree_cursor c;
    for (bool on = btree_first(&t, &c); on; on = btree_next(&c))
        m.keys[m.n++] = key_of(btree_cursor_item(&c));
    CHECK(m.n > 1000000);
    check_structure(&t);
    check_work_bound(&t, &m, &r);
    CHECK(t.height <= 4);
    btree_free(&t);
    model_free(&m);
    CHECK_INT(mem_live(), live);
}

/* ---- held deletes: undo without memory, then settle --------------------- */
/*
 * Here an item is a version of a class >= 1, class * 4 + version, and the tree
 * orders classes only: versions of a class are equal, as the versions of
 * one row are in an index. At most one version of a class is in the tree,
 * so the model's full-key order is the tree's; probes compare classes
 * (shift >= 2), never finer than the item order (btree.h).
 */

enum { VBITS = 2 };

static int cmp_classes(void *ctx, const void *a, const void *b)
{
    CHECK(ctx == &tree_ctx);
    return order(key_of(a) >> VBITS, key_of(b) >> VBITS);
}

/* Which items the tree pins: each pin is of a deleted item, ended once,
 * and a settle ends them all. */
static struct {
    unsigned char *on;
    size_t limit, n;
} pins;

static void pin_hook(void *ctx, void *item, bool keep)
{
    CHECK(ctx == &tree_ctx);
    uint64_t k = key_of(item);
    CHECK(k < pins.limit);
    CHECKF(pins.on[k] == !keep, "pin %d of item %llu", keep, (unsigned long long)k);
    pins.on[k] = keep;
    pins.n += keep ? 1 : (size_t)-1;
}

static bool class_present(const struct model *m, uint64_t cls)
{
    size_t i = model_pos(m, cls << VBITS);
    return i < m->n && m->keys[i] >> VBITS == cls;
}

static void check_classes(const btree *t, const struct model *m, rng *r, uint64_t classes)
{
    check_structure(t);
    CHECK_INT(btree_count(t), m->n);
    check_iteration(t, m);
    check_ranks(t, m, r, 20);
    for (int i = 0; i < 20; i++) {
        struct probe p = random_probe(r, m, classes << VBITS);
        p.shift = p.shift < VBITS ? VBITS : p.shift;
        check_seeks(t, m, &p);
    }
    for (size_t k = 0; k < pins.limit; k++)
        CHECKF(!pins.on[k] || !model_has(m, k), "item %zu pinned while in the tree", k);
}

/* One change of a transaction: an insert of a, a held delete of a, or a
 * replace of a by b. */
struct change {
    enum { CH_INSERT, CH_DELETE, CH_REPLACE } kind;
    uint64_t a, b;
};

struct txn {
    struct change *log;
    size_t len, cap;
    size_t saves[8]; /* savepoints: log positions */
    int nsaves;
};

static void log_change(struct txn *x, struct change c)
{
    if (x->len == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        x->log = realloc(x->log, x->cap * sizeof *x->log);
        CHECK(x->log != NULL);
    }
    x->log[x->len++] = c;
}

/* Undoes the log down to pos with every allocation failing: put backs,
 * held deletes and replaces must need none. */
static void undo_to(btree *t, struct model *m, struct txn *x, size_t pos)
{
    mem_fail_at(1, 1);
    while (x->len > pos) {
        struct change c = x->log[--x->len];
        if (c.kind == CH_INSERT) {
            CHECK_INT(key_of(btree_delete_held(t, item_of(c.a))), c.a);
            model_delete(m, c.a);
        } else if (c.kind == CH_DELETE) {
            CHECK_INT(btree_put_back(t, item_of(c.a)), LDB_OK);
            model_insert(m, c.a);
        } else {
            CHECK_INT(key_of(btree_replace(t, item_of(c.b), item_of(c.a))), c.b);
            m->keys[model_pos(m, c.b)] = c.a;
        }
    }
    uint64_t failed = mem_failed_count();
    mem_fail_at(0, 0);
    CHECK_INT(failed, 0);
}

/* A forward change: an insert of an absent class (may allocate), a held
 * delete (often of the item after the last one deleted, to empty whole
 * leaves), or a replace by another version. A pinned item is a deleted
 * one: no insert or replace brings that very item back. */
static void held_op(btree *t, struct model *m, struct txn *x, rng *r, uint64_t classes,
                    uint64_t *last)
{
    unsigned dice = (unsigned)rng_below(r, 10);
    uint64_t k = ((1 + rng_below(r, classes)) << VBITS) + rng_below(r, 1 << VBITS);
    if (dice < 3) {
        if (class_present(m, k >> VBITS) || pins.on[k])
            return;
        CHECK_INT(btree_insert(t, item_of(k), NULL), LDB_OK);
        model_insert(m, k);
        log_change(x, (struct change){ CH_INSERT, k, 0 });
    } else if (dice < 9 && m->n > 0) {
        size_t i = model_pos(m, *last);
        if (i >= m->n || rng_chance(r, 1, 4))
            i = rng_below(r, m->n);
        k = m->keys[i];
        uint64_t allocs = mem_alloc_count();
        CHECK_INT(key_of(btree_delete_held(t, item_of(k))), k);
        CHECK_INT(mem_alloc_count(), allocs);
        model_delete(m, k);
        log_change(x, (struct change){ CH_DELETE, k, 0 });
        *last = k;
    } else if (m->n > 0) {
        size_t i = rng_below(r, m->n);
        uint64_t old = m->keys[i], nk = (old & ~(uint64_t)3) | rng_below(r, 1 << VBITS);
        if (nk == old || pins.on[nk])
            return;
        CHECK_INT(key_of(btree_replace(t, item_of(old), item_of(nk))), old);
        m->keys[i] = nk;
        log_change(x, (struct change){ CH_REPLACE, old, nk });
    }
}

/* One transaction: forward changes with savepoints and partial rollbacks
 * (each undone without memory), then a commit or a full rollback, then a
 * settle that must leave no held leaf and no pin. */
static void held_transaction(btree *t, struct model *m, rng *r, uint64_t classes, long steps)
{
    struct txn x = { 0 };
    uint64_t last = 0;
    for (long s = 0; s < steps; s++) {
        unsigned dice = (unsigned)rng_below(r, 40);
        if (dice == 0 && x.nsaves < 8) {
            x.saves[x.nsaves++] = x.len;
        } else if (dice == 1 && x.nsaves > 0) {
            int i = (int)rng_below(r, (uint64_t)x.nsaves);
            undo_to(t, m, &x, x.saves[i]);
            x.nsaves = i + 1; /* later savepoints are gone; this one stays */
        } else {
            held_op(t, m, &x, r, classes, &last);
        }
        CHECK_INT(btree_count(t), m->n);
        check_ranks(t, m, r, 1);
        struct probe p = random_probe(r, m, classes << VBITS);
        p.shift = p.shift < VBITS ? VBITS : p.shift;
        check_seeks(t, m, &p);
        if (s % 50 == 0)
            check_classes(t, m, r, classes);
    }
    check_classes(t, m, r, classes);
    if (rng_chance(r, 1, 2))
        undo_to(t, m, &x, 0);
    btree_settle(t);
    CHECK(!btree_unsettled(t));
    CHECK_INT(pins.n, 0);
    check_classes(t, m, r, classes);
    free(x.log);
}

static void held_config(unsigned leaf_max, unsigned inner_max, size_t items, int transactions,
                        long steps)
{
    rng r;
    rng_seed(&r, test_seed() ^ (leaf_max * 977 + inner_max));
    int64_t live = mem_live();
    uint64_t classes = 3 * items;
    pins.limit = (classes + 2) << VBITS;
    pins.on = calloc(pins.limit, 1);
    pins.n = 0;
    btree t;
    btree_init_fanout(&t, cmp_classes, &tree_ctx, leaf_max, inner_max);
    btree_set_pin(&t, pin_hook);
    struct model m = { 0 };
    while (m.n < items) {
        uint64_t k = (1 + rng_below(&r, classes)) << VBITS;
        if (!class_present(&m, k >> VBITS)) {
            CHECK_INT(btree_insert(&t, item_of(k), NULL), LDB_OK);
            model_insert(&m, k);
        }
    }
    for (int i = 0; i < transactions * test_scale(); i++)
        held_transaction(&t, &m, &r, classes, steps);
    /* An unsettled tree ends its pins when freed. */
    for (size_t i = 0; i < m.n; i += 2)
        btree_delete_held(&t, item_of(m.keys[i]));
    btree_free(&t);
    CHECK_INT(pins.n, 0);
    CHECK_INT(mem_live(), live);
    model_free(&m);
    free(pins.on);
}

static void test_held_deletes(void)
{
    held_config(4, 4, 300, 60, 400);
    held_config(5, 7, 500, 40, 600);
    held_config(DEFAULT_NODES, DEFAULT_NODES, 20000, 8, 6000);
}

TEST_MAIN(T(test_held_deletes), T(test_misuse_and_empty), T(test_replace), T(test_equal_keys),
          T(test_random_tiny_nodes), T(test_random_default_nodes),
          T(test_bulk_load), T(test_insert_nomem), T(test_bulk_load_nomem),
          T(test_work_bound))
