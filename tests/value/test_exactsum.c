/*
 * test_exactsum.c - exact REAL and INTEGER sums: correct rounding against
 * an independent algorithm (Shewchuk partials, as in Python's fsum),
 * bit-identical results after random add/retract histories in any order,
 * the 128-bit integer accumulator, and allocation failure.
 */
#include "test.h"

#include "base/mem.h"
#include "livedb.h"
#include "value/exactsum.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static bool same_bits(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

#define CHECK_BITS(a, b)                                                      \
    do {                                                                      \
        double a_ = (a), b_ = (b);                                            \
        CHECKF(same_bits(a_, b_), "%s == %s: %.17g != %.17g", #a, #b, a_, b_); \
    } while (0)

/* Correctly rounded sum by non-overlapping partials (no overflow allowed). */
static double oracle_fsum(const double *xs, size_t n)
{
    double *p = malloc((n + 1) * sizeof *p);
    size_t np = 0;
    for (size_t k = 0; k < n; k++) {
        double x = xs[k];
        size_t i = 0;
        for (size_t j = 0; j < np; j++) {
            double y = p[j];
            if (fabs(x) < fabs(y)) {
                double t = x;
                x = y;
                y = t;
            }
            double hi = x + y, lo = y - (hi - x);
            if (lo != 0.0)
                p[i++] = lo;
            x = hi;
        }
        np = i;
        p[np++] = x;
    }
    double hi = 0.0, lo = 0.0;
    if (np > 0) {
        size_t i = np - 1;
        hi = p[i];
        while (i > 0) {
            double x = hi, y = p[--i];
            hi = x + y;
            lo = y - (hi - x);
            if (lo != 0.0)
                break;
        }
        if (i > 0 && ((lo < 0 && p[i - 1] < 0) || (lo > 0 && p[i - 1] > 0))) {
            double y = lo * 2, x = hi + y;
            if (y == x - hi)
                hi = x;
        }
    }
    free(p);
    return hi == 0.0 ? 0.0 : hi;
}

static double sum_of(const double *xs, size_t n)
{
    exactsum s;
    exactsum_init(&s);
    for (size_t i = 0; i < n; i++)
        CHECK(exactsum_add(&s, xs[i], 1) == LDB_OK);
    double r = exactsum_value(&s);
    exactsum_free(&s);
    return r;
}

static void known_sums(void)
{
    double a[] = { 0.1, 0.2, 0.3 };
    CHECK_BITS(sum_of(a, 3), 0.6);
    double b[] = { 1e100, 1.0, -1e100 };
    CHECK_BITS(sum_of(b, 3), 1.0);
    double c[] = { DBL_MAX, DBL_MAX, -DBL_MAX };
    CHECK_BITS(sum_of(c, 3), DBL_MAX);
    double d[] = { DBL_MAX, DBL_MAX };
    CHECK_BITS(sum_of(d, 2), INFINITY);
    double e[] = { 1.0, 0x1p-53 }; /* tie: to even */
    CHECK_BITS(sum_of(e, 2), 1.0);
    double f[] = { 1.0, 0x1p-53, 0x1p-100 };
    CHECK_BITS(sum_of(f, 3), nextafter(1.0, 2.0));
    double g[] = { 0x1p-1074, 0x1p-1074, 0x1p-1074 };
    CHECK_BITS(sum_of(g, 3), 3 * 0x1p-1074);
    double h[] = { DBL_MAX, 0x1p970 }; /* exactly half an ulp above: odd, up */
    CHECK_BITS(sum_of(h, 2), INFINITY);
    double i[] = { INFINITY, -INFINITY, 1.0 };
    CHECK(isnan(sum_of(i, 3)));
    double j[] = { INFINITY, 1e308, 1e308 };
    CHECK_BITS(sum_of(j, 3), INFINITY);
    double k[] = { -0.0, -0.0 };
    CHECK_BITS(sum_of(k, 2), 0.0);
    double l[] = { -1.5, 0.25, -1e-300 };
    CHECK_BITS(sum_of(l, 3), oracle_fsum(l, 3));
    CHECK_BITS(sum_of(NULL, 0), 0.0);
}

static double random_double(rng *r)
{
    switch (rng_below(r, 8)) {
    case 0:
        return ldexp((double)rng_range(r, -1000, 1000), (int)rng_range(r, -1074, -1000));
    case 1:
        return (double)rng_range(r, -1000000, 1000000) / 100.0;
    case 2:
        return rng_chance(r, 1, 2) ? 0.1 : -0.3;
    default: {
        double m = (double)(rng_next(r) >> 11) / 9007199254740992.0 + 0.5;
        int e = (int)rng_range(r, -60, 60);
        if (rng_chance(r, 1, 6))
            e = (int)rng_range(r, -1070, 1000);
        double x = ldexp(m, e);
        return rng_chance(r, 1, 2) ? -x : x;
    }
    }
}

static void shuffle(rng *r, double *xs, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(r, i);
        double t = xs[i - 1];
        xs[i - 1] = xs[j];
        xs[j] = t;
    }
}

static void matches_partials_oracle(void)
{
    rng r;
    rng_seed(&r, test_seed());
    double xs[64];
    for (int iter = 0; iter < 20000 * test_scale(); iter++) {
        size_t n = (size_t)rng_below(&r, 64);
        for (size_t i = 0; i < n; i++)
            xs[i] = random_double(&r);
        double want = oracle_fsum(xs, n);
        if (!isfinite(want))
            continue;
        CHECK_BITS(sum_of(xs, n), want);
        shuffle(&r, xs, n);
        CHECK_BITS(sum_of(xs, n), want);
    }
}

/* Random add/retract steps against a multiset of survivors; after each
 * check the incremental sum equals a from-scratch sum in shuffled order. */
static void retraction_history(void)
{
    rng r;
    rng_seed(&r, test_seed());
    enum { CAP = 4096 };
    double *live = malloc(CAP * sizeof *live);
    double *copy = malloc(CAP * sizeof *copy);
    size_t nlive = 0;
    exactsum s;
    exactsum_init(&s);
    long steps = 300000L * test_scale();
    for (long step = 0; step < steps; step++) {
        if (nlive < CAP && (nlive == 0 || rng_chance(&r, 11, 20))) {
            double x = random_double(&r);
            if (rng_chance(&r, 1, 500))
                x = rng_chance(&r, 1, 2) ? INFINITY : NAN;
            CHECK(exactsum_add(&s, x, 1) == LDB_OK);
            live[nlive++] = x;
        } else {
            size_t k = (size_t)rng_below(&r, nlive);
            CHECK(exactsum_add(&s, live[k], -1) == LDB_OK);
            live[k] = live[--nlive];
        }
        if (step % 997 == 0 || step == steps - 1) {
            memcpy(copy, live, nlive * sizeof *copy);
            shuffle(&r, copy, nlive);
            CHECK_BITS(exactsum_value(&s), sum_of(copy, nlive));
            bool finite = true;
            for (size_t i = 0; i < nlive; i++)
                finite = finite && isfinite(copy[i]) && fabs(copy[i]) < 1e300;
            if (finite)
                CHECK_BITS(exactsum_value(&s), oracle_fsum(copy, nlive));
        }
    }
    exactsum_free(&s);
    free(live);
    free(copy);
}

static void weights_and_merge(void)
{
    rng r;
    rng_seed(&r, test_seed());
    for (int iter = 0; iter < 2000; iter++) {
        exactsum a, b, both;
        exactsum_init(&a);
        exactsum_init(&b);
        exactsum_init(&both);
        for (int i = 0; i < 20; i++) {
            double x = random_double(&r);
            int64_t w = rng_range(&r, -5, 5);
            CHECK(exactsum_add(i % 2 ? &a : &b, x, w) == LDB_OK);
            for (int64_t k = 0; k < (w < 0 ? -w : w); k++)
                CHECK(exactsum_add(&both, w < 0 ? -x : x, 1) == LDB_OK);
        }
        CHECK(exactsum_merge(&a, &b) == LDB_OK);
        CHECK_BITS(exactsum_value(&a), exactsum_value(&both));
        exactsum_free(&a);
        exactsum_free(&b);
        exactsum_free(&both);
    }
    exactsum s;
    exactsum_init(&s);
    CHECK(exactsum_add(&s, 1e300, INT64_MIN) == LDB_OK);
    CHECK(exactsum_add(&s, 1e300, INT64_MAX) == LDB_OK);
    CHECK_BITS(exactsum_value(&s), -1e300);
    exactsum_free(&s);
}

static void integer_sums(void)
{
    isum a;
    isum_init(&a);
    int64_t v;
    isum_add(&a, INT64_MAX, 1);
    isum_add(&a, INT64_MAX, 1);
    CHECK(!isum_to_int64(&a, &v));
    isum_add(&a, INT64_MAX, -1);
    CHECK(isum_to_int64(&a, &v));
    CHECK_INT(v, INT64_MAX);
    isum_add(&a, INT64_MIN, 3);
    isum_add(&a, INT64_MIN, -3);
    isum_add(&a, INT64_MAX, -2);
    isum_add(&a, 1, -1);
    CHECK(isum_to_int64(&a, &v));
    CHECK(v == INT64_MIN);
    isum b;
    isum_init(&b);
    isum_add(&b, -5, 7);
    isum_merge(&a, &b);
    isum_add(&a, INT64_MIN, -1);
    CHECK(isum_to_int64(&a, &v));
    CHECK_INT(v, -35);

    /* REAL plus an integer part, rounded once. */
    exactsum s;
    exactsum_init(&s);
    CHECK(exactsum_add(&s, 0.5, 1) == LDB_OK);
    isum_init(&a);
    isum_add(&a, INT64_MAX, 1);
    CHECK_BITS(exactsum_value_plus(&s, &a), 9223372036854775808.0);
    isum_add(&a, INT64_MAX, -1);
    isum_add(&a, 9007199254740993LL, 1); /* 2^53 + 1: +0.5 breaks the tie up */
    CHECK_BITS(exactsum_value_plus(&s, &a), 9007199254740994.0);
    isum_add(&a, -9007199254740993LL, 2);
    CHECK_BITS(exactsum_value_plus(&s, &a), -9007199254740992.0);
    exactsum_free(&s);
}

static void allocation_failure(void)
{
    exactsum s;
    exactsum_init(&s);
    CHECK(exactsum_add(&s, 1.0, 1) == LDB_OK);
    int64_t live = mem_live();
    mem_fail_at(1, 0);
    CHECK(exactsum_add(&s, 1e-200, 1) == LDB_NOMEM);
    mem_fail_at(0, 0);
    CHECK_INT(mem_live(), live);
    CHECK_BITS(exactsum_value(&s), 1.0);
    CHECK(exactsum_add(&s, 1e-200, 1) == LDB_OK);
    CHECK(exactsum_heap_bytes(&s) > 0);
    CHECK(exactsum_add(&s, 1e-200, -1) == LDB_OK);
    CHECK_BITS(exactsum_value(&s), 1.0);
    exactsum_free(&s);
    CHECK_INT(mem_live(), live);
}

TEST_MAIN(T(known_sums), T(matches_partials_oracle), T(retraction_history),
          T(weights_and_merge), T(integer_sums), T(allocation_failure))
