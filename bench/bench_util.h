/*
 * bench_util.h - timing helpers shared by every benchmark in bench/.
 *
 * Each benchmark prints one line per figure, "bench <name> <value> <unit>",
 * so that scripts can grep and compare runs. "--quick" shrinks the data so
 * a benchmark finishes in seconds (make bench-quick); benchmarks read
 * bench_quick after bench_init.
 */
#ifndef LDB_BENCH_UTIL_H
#define LDB_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "livedb.h"

extern bool bench_quick;

/* Parses the common flags (--quick); returns 0, or 2 after printing usage
 * for an unknown flag. Other arguments name sections to run. */
int bench_init(int argc, char **argv);
/* Whether a section runs: named on the command line, or none named. */
bool bench_selected(int argc, char **argv, const char *section);
/* Monotonic clock in nanoseconds. */
uint64_t bench_ns(void);
/* The p-quantile (0 <= p <= 1) of v[0..n), which it sorts; 0 when n is 0. */
double bench_quantile(double *v, size_t n, double p);
/* Prints "bench <name> <value> <unit>". */
void bench_print(const char *name, double value, const char *unit);

/* A live query's on_change that only counts: bench_changes_seen sums the
 * changes of every batch delivered so far. */
extern uint64_t bench_changes_seen;
void bench_count_changes(void *ctx, ldb_live *q, const ldb_change *c, size_t n);

#endif
