/*
 * bench_util.c - timing helpers for benchmarks (see bench_util.h).
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool bench_quick;

int bench_init(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            bench_quick = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [--quick] [section...]\n", argv[0]);
            return 2;
        }
    }
    return 0;
}

uint64_t bench_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_quantile(double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

void bench_print(const char *name, double value, const char *unit)
{
    printf("bench %s %.6g %s\n", name, value, unit);
    fflush(stdout);
}

bool bench_selected(int argc, char **argv, const char *section)
{
    bool any = false;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        any = true;
        if (strcmp(argv[i], section) == 0)
            return true;
    }
    return !any;
}

uint64_t bench_changes_seen;

void bench_count_changes(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)ctx;
    (void)q;
    (void)c;
    bench_changes_seen += n;
}
