/*
 * test_storage_work.c - bounded work, proved with the index counters: a
 * seek plus k steps in a requested order visits O(log n + k) entries and
 * nodes, whatever the direction, null placement or tie order, and counts,
 * ranks and single-row writes visit O(log n). The same constant bound is
 * asserted at 1k and 1M entries (the 1M index is bulk-loaded by CREATE
 * INDEX over existing rows), so work that grew with n would fail at 1M.
 */
#include "storage_util.h"

#include <math.h>

enum { K = 50 };

struct bench_table {
    struct store *s;
    struct table *t;
    struct table_index *ix;
    size_t n, nulls;
};

/* w(id INTEGER PRIMARY KEY, x INTEGER, y INTEGER): 1% NULL x, otherwise
 * x in [0, n/2): tie groups of two on average; y, which no index reads,
 * 0. */
static void build(struct bench_table *b, size_t n, rng *r)
{
    CHECK(store_open(&b->s) == LDB_OK);
    struct column_def cols[3] = { COL("id", COL_INTEGER), COL("x", COL_INTEGER),
                                  COL("y", COL_INTEGER) };
    static const uint32_t pk[1] = { 0 };
    b->t = make_table(b->s, "w", cols, 3, pk, 1);
    b->n = n;
    b->nulls = 0;
    CHECK(store_stmt_begin(b->s) == LDB_OK);
    for (size_t i = 0; i < n; i++) {
        bool null = i % 100 == 7;
        value v[3] = { V_I((int64_t)i), null ? V_N() : V_I((int64_t)rng_below(r, n / 2)),
                       V_I(0) };
        b->nulls += null;
        CHECK(table_insert(b->s, b->t, v, NULL) == LDB_OK);
    }
    CHECK(store_stmt_end(b->s, LDB_OK) == LDB_OK);
    struct key_part p = PART(1, false); /* ASC NULLS FIRST */
    b->ix = make_index(b->s, b->t, "wx", INDEX_ORDERED, false, &p, 1);
}

/* The bound every read of k rows must meet: c1 log2(n) + c2 k. */
static uint64_t bound(size_t n, int k)
{
    return (uint64_t)(12 * ceil(log2((double)n)) + 3 * k + 8);
}

static void check_read(struct bench_table *b, const struct order_spec *sp,
                       bool (*pos)(struct bench_table *, const struct order_spec *,
                                   struct order_cursor *, rng *),
                       rng *r, const char *what)
{
    index_work_reset(b->ix);
    struct order_cursor c;
    int steps = 0;
    bool on = pos(b, sp, &c, r);
    for (; on && steps < K; on = order_next(&c))
        steps++;
    uint64_t w = index_work(b->ix);
    CHECKF(w <= bound(b->n, steps), "%s at n=%zu: %llu entries and nodes visited, bound %llu",
           what, b->n, (unsigned long long)w, (unsigned long long)bound(b->n, steps));
    CHECK(steps == K || !on); /* fewer only at the end of the index */
}

static bool pos_key(struct bench_table *b, const struct order_spec *sp, struct order_cursor *c,
                    rng *r)
{
    value key = V_I((int64_t)rng_below(r, b->n / 4));
    return order_seek_key(b->ix, sp, &key, 1, false, c);
}

static bool pos_row(struct bench_table *b, const struct order_spec *sp, struct order_cursor *c,
                    rng *r)
{
    value key = V_I((int64_t)rng_below(r, b->n / 2));
    row *at = table_lookup(b->t, &key);
    return order_seek_row(b->ix, sp, at, true, c);
}

static bool pos_rank(struct bench_table *b, const struct order_spec *sp, struct order_cursor *c,
                     rng *r)
{
    return order_at(b->ix, sp, (size_t)rng_below(r, b->n - K), c);
}

/* Just before the end of the NULL group: the read crosses into values. */
static bool pos_null_edge(struct bench_table *b, const struct order_spec *sp,
                          struct order_cursor *c, rng *r)
{
    (void)r;
    return order_at(b->ix, sp, b->nulls - K / 2, c);
}

static void check_reads(struct bench_table *b, rng *r)
{
    struct order_spec plain, desc_ties_asc, desc_nulls_first, desc_ties_desc;
    order_spec_init(b->ix, false, &plain);
    order_spec_init(b->ix, true, &desc_ties_asc);
    desc_ties_desc = desc_ties_asc;
    desc_ties_desc.ties_desc = true;
    desc_nulls_first = desc_ties_asc;
    desc_nulls_first.nulls_first[0] = true;
    const struct order_spec *specs[4] = { &plain, &desc_ties_asc, &desc_nulls_first,
                                          &desc_ties_desc };
    for (int i = 0; i < 4; i++) {
        for (int rep = 0; rep < 20; rep++) {
            check_read(b, specs[i], pos_key, r, "seek by key + 50");
            check_read(b, specs[i], pos_row, r, "seek after a row + 50");
            check_read(b, specs[i], pos_rank, r, "row at a rank + 50");
        }
        check_read(b, specs[i], pos_null_edge, r, "read across the NULL group");
    }
    /* Counts and ranks alone. */
    uint64_t one = (uint64_t)(12 * ceil(log2((double)b->n)));
    for (int rep = 0; rep < 20; rep++) {
        value key = V_I((int64_t)rng_below(r, b->n / 2));
        row *at = table_lookup(b->t, &key);
        index_work_reset(b->ix);
        index_count_below(b->ix, &key, 1, true);
        order_count_before_row(b->ix, &desc_nulls_first, at);
        CHECK(index_work(b->ix) <= one);
    }
}

/* Single-row writes touch O(log n) index nodes; an update that leaves
 * the index key alone re-points its entry with a single descent. */
static void check_writes(struct bench_table *b, rng *r)
{
    uint64_t one = (uint64_t)(6 * ceil(log2((double)b->n)));
    for (int rep = 0; rep < 40; rep++) {
        bool keep_x = rep % 2;
        value key = V_I((int64_t)rng_below(r, b->n));
        row *old = table_lookup(b->t, &key);
        value v[3] = { key, keep_x ? old->cols[1] : V_I((int64_t)rng_below(r, b->n)),
                       V_I(rep) };
        index_work_reset(b->ix);
        CHECK(store_stmt_begin(b->s) == LDB_OK);
        CHECK(table_update(b->s, b->t, old, v, NULL) == LDB_OK);
        CHECK(store_stmt_end(b->s, LDB_OK) == LDB_OK);
        CHECKF(index_work(b->ix) <= one, "update at n=%zu: %llu", b->n,
               (unsigned long long)index_work(b->ix));
        if (keep_x)
            CHECK_INT(index_work(b->ix), b->ix->tree.height);
    }
}

static void run(size_t n)
{
    rng r;
    rng_seed(&r, test_seed());
    struct bench_table b;
    build(&b, n, &r);
    check_reads(&b, &r);
    check_writes(&b, &r);
    CHECK(index_check(b.ix) == NULL || n > 100000); /* O(n log n): small n only */
    store_close(b.s);
}

static void bounded_1k(void) { run(1000); }
static void bounded_1m(void) { run(1000000); }

TEST_MAIN(T(bounded_1k), T(bounded_1m))
