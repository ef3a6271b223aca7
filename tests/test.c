/*
 * test.c - runner, seed handling and PRNG for tests/test.h.
 */
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

jmp_buf test_jmp_;
int test_failed_;

static const char *current_case;
static int seed_printed;
static uint64_t case_seed;

void test_fail_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("FAIL %s: %s:%d: ", current_case, file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (seed_printed)
        printf(" (LDB_SEED=%" PRIu64 ")", case_seed);
    printf("\n");
    fflush(stdout);
    test_failed_ = 1;
    longjmp(test_jmp_, 1);
}

static uint64_t fresh_seed(void)
{
    const char *env = getenv("LDB_SEED");
    if (env && *env)
        return strtoull(env, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)(uintptr_t)&ts;
    x ^= x >> 31;
    x *= 0x9E3779B97F4A7C15u;
    return x ^ (x >> 29);
}

uint64_t test_seed(void)
{
    if (!seed_printed) {
        seed_printed = 1;
        printf("#    %s seed %" PRIu64 " (replay: LDB_SEED=%" PRIu64 ")\n",
               current_case, case_seed, case_seed);
        fflush(stdout);
    }
    return case_seed;
}

int test_scale(void)
{
    const char *env = getenv("LDB_TEST_SCALE");
    int k = env ? atoi(env) : 1;
    return k < 1 ? 1 : k;
}

static int selected(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* Kept apart from test_run_ so that its locals survive the longjmp. */
static int run_case(void (*fn)(void))
{
    test_failed_ = 0;
    if (setjmp(test_jmp_) == 0)
        fn();
    return test_failed_;
}

int test_run_(int argc, char **argv, const struct test_case *cases, int n)
{
    int passed = 0, failed = 0;
    const char *prog = strrchr(argv[0], '/');
    prog = prog ? prog + 1 : argv[0];
    uint64_t base_seed = fresh_seed();
    for (int i = 0; i < n; i++) {
        if (!selected(argc, argv, cases[i].name))
            continue;
        current_case = cases[i].name;
        seed_printed = 0;
        case_seed = base_seed;
        if (run_case(cases[i].fn)) {
            failed++;
        } else {
            passed++;
            printf("ok   %s\n", cases[i].name);
        }
        fflush(stdout);
    }
    printf("# %s: %d passed, %d failed\n", prog, passed, failed);
    return failed ? 1 : 0;
}

/* ---- PRNG ------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t rng_below(rng *r, uint64_t n)
{
    /* Rejection sampling keeps the distribution uniform. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= limit);
    return x % n;
}

int64_t rng_range(rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    if (span == UINT64_MAX)
        return (int64_t)rng_next(r);
    return (int64_t)((uint64_t)lo + rng_below(r, span + 1));
}

int rng_chance(rng *r, unsigned num, unsigned den)
{
    return rng_below(r, den) < num;
}
