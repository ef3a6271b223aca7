/*
 * test.h - the test harness shared by every test binary.
 *
 * A test binary lists its cases with TEST_MAIN(T(a), T(b), ...). Each case
 * runs in turn; the first failed CHECK ends that case (longjmp) and the
 * binary goes on with the next one. Output, one line per case:
 *     ok   <name>
 *     FAIL <name>: <file>:<line>: <what>
 * and a last line "# <binary>: N passed, M failed" that tests/run.sh sums.
 *
 * Property tests take their seed from test_seed(): LDB_SEED=<n> replays a
 * run, otherwise a fresh seed is drawn and printed before the case runs.
 * LDB_TEST_SCALE=<k> multiplies iteration counts (default 1).
 * Running a binary with case names as arguments runs only those cases.
 */
#ifndef LDB_TESTS_TEST_H
#define LDB_TESTS_TEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct test_case {
    const char *name;
    void (*fn)(void);
};

extern jmp_buf test_jmp_;
extern int test_failed_;
void test_fail_(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
int test_run_(int argc, char **argv, const struct test_case *cases, int n);

/* The seed of the running case (printed once per case that asks). */
uint64_t test_seed(void);
/* LDB_TEST_SCALE, at least 1. */
int test_scale(void);

#define T(fn) { #fn, fn }
#define TEST_MAIN(...)                                                        \
    int main(int argc, char **argv)                                           \
    {                                                                         \
        static const struct test_case cases_[] = { __VA_ARGS__ };            \
        return test_run_(argc, argv, cases_,                                  \
                         (int)(sizeof cases_ / sizeof cases_[0]));            \
    }

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond))                                                          \
            test_fail_(__FILE__, __LINE__, "CHECK(%s)", #cond);               \
    } while (0)

#define CHECKF(cond, ...)                                                     \
    do {                                                                      \
        if (!(cond))                                                          \
            test_fail_(__FILE__, __LINE__, __VA_ARGS__);                      \
    } while (0)

#define CHECK_INT(a, b)                                                       \
    do {                                                                      \
        long long a_ = (long long)(a), b_ = (long long)(b);                   \
        if (a_ != b_)                                                         \
            test_fail_(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b,  \
                       a_, b_);                                               \
    } while (0)

#define CHECK_STR(a, b)                                                       \
    do {                                                                      \
        const char *a_ = (a), *b_ = (b);                                      \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                \
            test_fail_(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a,  \
                       #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");           \
    } while (0)

/* ---- deterministic PRNG (xoshiro256**, seeded through splitmix64) ---- */

typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
uint64_t rng_next(rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t rng_below(rng *r, uint64_t n);
/* Uniform in [lo, hi]. */
int64_t rng_range(rng *r, int64_t lo, int64_t hi);
/* 1 with probability num/den. */
int rng_chance(rng *r, unsigned num, unsigned den);

#endif
