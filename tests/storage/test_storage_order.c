/*
 * test_storage_order.c - the order laws of indexes and requested-order
 * reads, on hand-written data with the expected sequence spelled out:
 * NULLS FIRST/LAST in both directions, NaN above every number, -0.0 = 0,
 * NOCASE and RTRIM, composite keys with mixed directions, ties by primary
 * key (both tie orders), and the reversed read of seed 003 (DESC NULLS
 * FIRST served by an ASC NULLS FIRST index).
 */
#include "storage_util.h"

#include <math.h>
#include <stdlib.h>

static struct store *s;

/* k(id INTEGER PRIMARY KEY, x ANY, y ANY) filled with rows (id, x, y). */
static struct table *fill(const value *xs, const value *ys, int n)
{
    CHECK(store_open(&s) == LDB_OK);
    struct column_def cols[3] = { COL("id", COL_INTEGER), COL("x", COL_ANY), COL("y", COL_ANY) };
    static const uint32_t pk[1] = { 0 };
    struct table *t = make_table(s, "k", cols, 3, pk, 1);
    for (int i = 0; i < n; i++) {
        value v[3] = { V_I(i), xs[i], ys ? ys[i] : V_N() };
        CHECK(stmt_insert(s, t, v) == LDB_OK);
    }
    return t;
}

/* The ids read in the order given by spec (forward read). */
static void expect_order(const struct table_index *ix, const struct order_spec *sp,
                         const int *ids, int n)
{
    struct order_cursor c;
    int i = 0;
    for (bool on = order_first(ix, sp, &c); on; on = order_next(&c), i++) {
        CHECK(i < n);
        CHECKF(order_row(&c)->cols[0].h.u.i == ids[i], "position %d: id %lld, want %d", i,
               (long long)order_row(&c)->cols[0].h.u.i, ids[i]);
    }
    CHECK_INT(i, n);
    /* The same sequence read backward from the end. */
    for (bool on = order_last(ix, sp, &c); on; on = order_prev(&c))
        CHECK_INT(order_row(&c)->cols[0].h.u.i, ids[--i]);
    CHECK_INT(i, 0);
}

static void expect_index(const struct table_index *ix, const int *ids, int n)
{
    struct order_spec sp;
    order_spec_init(ix, false, &sp);
    expect_order(ix, &sp, ids, n);
    struct index_cursor c;
    int i = 0;
    for (bool on = index_first(ix, &c); on; on = index_next(&c), i++)
        CHECK_INT(index_cursor_row(&c)->cols[0].h.u.i, ids[i]);
    CHECK_INT(i, n);
}

static struct order_spec spec(const struct table_index *ix, bool reverse, bool nulls_first)
{
    struct order_spec sp;
    order_spec_init(ix, reverse, &sp);
    sp.nulls_first[0] = nulls_first;
    return sp;
}

static void done(void)
{
    CHECK(store_check(s) == NULL);
    store_close(s);
}

/* x: 0:NULL 1:3 2:NaN 3:-0.0 4:NULL 5:0 6:-inf 7:2.5 8:inf */
static const int N_NUM = 9;
static value num_x(int i)
{
    switch (i) {
    case 0: case 4: return V_N();
    case 1: return V_I(3);
    case 2: return V_R(NAN);
    case 3: return V_R(-0.0);
    case 5: return V_I(0);
    case 6: return V_R(-INFINITY);
    case 7: return V_R(2.5);
    default: return V_R(INFINITY);
    }
}

static void nulls_nan_and_zero(void)
{
    value xs[9];
    for (int i = 0; i < N_NUM; i++)
        xs[i] = num_x(i);
    struct table *t = fill(xs, NULL, N_NUM);
    struct key_part p = PART(1, false); /* ASC NULLS FIRST */
    struct table_index *asc = make_index(s, t, "asc", INDEX_ORDERED, false, &p, 1);
    /* -0.0 = 0: their tie is broken by id (3 before 5). NaN above inf. */
    static const int asc_ids[] = { 0, 4, 6, 3, 5, 7, 1, 8, 2 };
    expect_index(asc, asc_ids, 9);
    struct order_spec sp = spec(asc, true, false); /* DESC NULLS LAST: plain reverse walk */
    static const int desc_last[] = { 2, 8, 1, 7, 3, 5, 6, 0, 4 };
    expect_order(asc, &sp, desc_last, 9);
    sp = spec(asc, true, true); /* DESC NULLS FIRST over ASC NULLS FIRST (seed 003) */
    static const int desc_first[] = { 0, 4, 2, 8, 1, 7, 3, 5, 6 };
    expect_order(asc, &sp, desc_first, 9);
    sp.ties_desc = true; /* ties by id descending */
    static const int desc_first_td[] = { 4, 0, 2, 8, 1, 7, 5, 3, 6 };
    expect_order(asc, &sp, desc_first_td, 9);
    sp = spec(asc, false, false); /* ASC NULLS LAST */
    static const int asc_last[] = { 6, 3, 5, 7, 1, 8, 2, 0, 4 };
    expect_order(asc, &sp, asc_last, 9);

    struct key_part d = { 1, true, false, LDB_COLL_BINARY }; /* DESC NULLS LAST */
    struct table_index *desc = make_index(s, t, "desc", INDEX_ORDERED, false, &d, 1);
    static const int desc_ids[] = { 2, 8, 1, 7, 3, 5, 6, 0, 4 };
    expect_index(desc, desc_ids, 9);
    sp = spec(desc, true, true); /* ASC NULLS FIRST over a DESC NULLS LAST index */
    expect_order(desc, &sp, asc_ids, 9);
    sp = spec(desc, false, true); /* DESC NULLS FIRST: the NULL group moves to the front */
    expect_order(desc, &sp, desc_first, 9);

    /* Lookups: -0.0 finds 0 and -0.0; NaN finds NaN. */
    value key = V_R(0.0);
    CHECK_INT(index_count_eq(asc, &key, 1), 2);
    key = V_R(NAN);
    CHECK_INT(index_count_eq(asc, &key, 1), 1);
    key = V_N();
    CHECK_INT(index_count_eq(asc, &key, 1), 2);
    done();
}

static void collations(void)
{
    static const char *const words[] = { "b", "A", "a ", "B", "a", "c  " };
    value xs[6];
    for (int i = 0; i < 6; i++)
        xs[i] = V_T(words[i]);
    struct table *t = fill(xs, NULL, 6);
    struct key_part p = { 1, false, true, LDB_COLL_NOCASE };
    struct table_index *nocase = make_index(s, t, "nc", INDEX_ORDERED, false, &p, 1);
    /* NOCASE: "A" = "a" < "a " < "B" = "b" < "c  ". */
    static const int nc_ids[] = { 1, 4, 2, 0, 3, 5 };
    expect_index(nocase, nc_ids, 6);
    p.coll = LDB_COLL_RTRIM;
    struct table_index *rtrim = make_index(s, t, "rt", INDEX_ORDERED, false, &p, 1);
    /* RTRIM: "A" < "B" < "a" = "a " < "b" < "c  ". */
    static const int rt_ids[] = { 1, 3, 2, 4, 0, 5 };
    expect_index(rtrim, rt_ids, 6);
    value key = V_T("a");
    CHECK_INT(index_count_eq(rtrim, &key, 1), 2);
    CHECK_INT(index_count_eq(nocase, &key, 1), 2);
    key = V_T("B ");
    CHECK_INT(index_count_eq(rtrim, &key, 1), 1);
    done();
}

static void composite_mixed(void)
{
    /* (x, y): 0:(1,a) 1:(1,NULL) 2:(2,b) 3:(NULL,a) 4:(1,c) 5:(2,a) 6:(NULL,NULL) 7:(1,a) */
    value xs[8] = { V_I(1), V_I(1), V_I(2), V_N(), V_I(1), V_I(2), V_N(), V_I(1) };
    value ys[8] = { V_T("a"), V_N(), V_T("b"), V_T("a"), V_T("c"), V_T("a"), V_N(), V_T("a") };
    struct table *t = fill(xs, ys, 8);
    /* x ASC NULLS LAST, y DESC NULLS FIRST */
    struct key_part parts[2] = { { 1, false, false, LDB_COLL_BINARY },
                                 { 2, true, true, LDB_COLL_BINARY } };
    struct table_index *ix = make_index(s, t, "xy", INDEX_ORDERED, false, parts, 2);
    static const int ids[] = { 1, 4, 0, 7, 2, 5, 6, 3 };
    expect_index(ix, ids, 8);
    /* Reverse walk: x DESC NULLS FIRST, y ASC NULLS LAST, ties by id descending. */
    struct order_spec sp;
    order_spec_init(ix, true, &sp);
    sp.ties_desc = true;
    static const int rev[] = { 3, 6, 5, 2, 7, 0, 4, 1 };
    expect_order(ix, &sp, rev, 8);
    /* Reverse with both null places moved: x DESC NULLS LAST, y ASC NULLS FIRST,
     * ties ascending. */
    sp.nulls_first[0] = false;
    sp.nulls_first[1] = true;
    sp.ties_desc = false;
    static const int moved[] = { 5, 2, 1, 0, 7, 4, 6, 3 };
    expect_order(ix, &sp, moved, 8);
    /* Forward with the second part's NULLs moved last. */
    order_spec_init(ix, false, &sp);
    sp.nulls_first[1] = false;
    static const int fwd[] = { 4, 0, 7, 1, 2, 5, 3, 6 };
    expect_order(ix, &sp, fwd, 8);
    /* Prefix lookup and count: x = 1. */
    value key = V_I(1);
    CHECK_INT(index_count_eq(ix, &key, 1), 4);
    struct index_lookup it;
    int n = 0;
    for (row *r = index_lookup_first(ix, &key, 1, &it); r; r = index_lookup_next(&it))
        CHECK_INT(r->cols[0].h.u.i, ids[n++]);
    CHECK_INT(n, 4);
    /* order_spec_for: ORDER BY x DESC NULLS FIRST is the reverse walk. */
    struct order_term terms[2] = { { 1, true, true, LDB_COLL_BINARY },
                                   { 2, false, false, LDB_COLL_BINARY } };
    CHECK(order_spec_for(ix, terms, 2, &sp) == LDB_OK);
    CHECK(sp.reverse && sp.nulls_first[0] && !sp.nulls_first[1]);
    terms[1].desc = true; /* x DESC, y DESC: mixed against the index */
    CHECK(order_spec_for(ix, terms, 2, &sp) == LDB_NOTFOUND);
    terms[0].col = 2;
    CHECK(order_spec_for(ix, terms, 1, &sp) == LDB_NOTFOUND);
    done();
}

/* Tie groups longer than a read walks (reader.c counts their ends): 20
 * NULLs, 20 ones, then 20 distinct values, read in every direction, null
 * place and tie order, forward and backward, against the order spelled
 * out by a comparison of (x under the spec, then id). */
static const struct order_spec *big_spec;

static int big_x(int id) { return id < 20 ? -1 : id < 40 ? 1 : id; } /* -1: NULL */

static int big_cmp(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb, xa = big_x(a), xb = big_x(b);
    if ((xa < 0) != (xb < 0))
        return (xa < 0) == big_spec->nulls_first[0] ? -1 : 1;
    if (xa != xb)
        return (xa < xb) != big_spec->reverse ? -1 : 1;
    return (a < b) != big_spec->ties_desc ? -1 : 1;
}

static void large_tie_groups(void)
{
    value xs[60];
    for (int i = 0; i < 60; i++)
        xs[i] = big_x(i) < 0 ? V_N() : V_I(big_x(i));
    struct table *t = fill(xs, NULL, 60);
    struct key_part p = PART(1, false);
    struct table_index *ix = make_index(s, t, "bx", INDEX_ORDERED, false, &p, 1);
    for (int k = 0; k < 8; k++) {
        struct order_spec sp = spec(ix, k & 1, (k & 2) != 0);
        sp.ties_desc = (k & 4) != 0;
        int ids[60];
        for (int i = 0; i < 60; i++)
            ids[i] = i;
        big_spec = &sp;
        qsort(ids, 60, sizeof *ids, big_cmp);
        expect_order(ix, &sp, ids, 60);
    }
    done();
}

/* Windows: seek after a row that is gone, rank of a row, entry at a rank. */
static void windows(void)
{
    value xs[10];
    for (int i = 0; i < 10; i++)
        xs[i] = i % 4 == 0 ? V_N() : V_I(i / 2);
    /* x: 0:N 1:0 2:1 3:1 4:N 5:2 6:3 7:3 8:N 9:4 */
    struct table *t = fill(xs, NULL, 10);
    struct key_part p = PART(1, false);
    struct table_index *ix = make_index(s, t, "x", INDEX_ORDERED, false, &p, 1);
    struct order_spec sp = spec(ix, true, true); /* x DESC NULLS FIRST, ties by id */
    static const int order[] = { 0, 4, 8, 9, 6, 7, 5, 2, 3, 1 };
    expect_order(ix, &sp, order, 10);
    value key = V_I(6);
    row *r6 = table_lookup(t, &key);
    CHECK_INT(order_count_before_row(ix, &sp, r6), 4);
    struct order_cursor c;
    CHECK(order_at(ix, &sp, 4, &c) && order_row(&c) == r6);
    /* Delete row 6, then read the two rows after where it was. */
    row_retain(r6);
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(table_delete(s, t, r6) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK(order_seek_row(ix, &sp, r6, true, &c));
    CHECK_INT(order_row(&c)->cols[0].h.u.i, 7);
    CHECK(order_next(&c));
    CHECK_INT(order_row(&c)->cols[0].h.u.i, 5);
    CHECK(order_prev(&c) && order_prev(&c));
    CHECK_INT(order_row(&c)->cols[0].h.u.i, 9);
    row_release(r6);
    /* Key seeks: first row with x <= 1 in DESC order, and after the NULLs. */
    key = V_I(1);
    CHECK(order_seek_key(ix, &sp, &key, 1, false, &c));
    CHECK_INT(order_row(&c)->cols[0].h.u.i, 2);
    key = V_N();
    CHECK(order_seek_key(ix, &sp, &key, 1, true, &c));
    CHECK_INT(order_row(&c)->cols[0].h.u.i, 9);
    CHECK_INT(order_rank(&c), 3);
    done();
}

TEST_MAIN(T(nulls_nan_and_zero), T(collations), T(composite_mixed), T(windows),
          T(large_tie_groups))
