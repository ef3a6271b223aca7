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

#include <sqlite3.h>

extern bool bench_quick;

/* Parses the common flags (--quick); returns 0, or 2 after printing usage
 * for an unknown flag. Other arguments name sections to run. */
int bench_init(int argc, char **argv);

/* Prints "<program>: what: msg" and exits with 1 (a benchmark that cannot
 * go on measures nothing). The program name comes from argv[0]. */
void bench_die(const char *what, const char *msg);
/* The same with db's last error message (or "failed" when db is NULL). */
void bench_die_db(ldb *db, const char *what);
/* Runs sql (statements without rows) in SQLite, then in livedb; dies on
 * an error in either. */
void bench_exec_both(ldb *db, sqlite3 *lite, const char *sql);
/* realloc that dies instead of failing; p may be NULL. */
void *bench_realloc(void *p, size_t n);
/* Whether a section runs: named on the command line, or none named. */
bool bench_selected(int argc, char **argv, const char *section);
/* Monotonic clock in nanoseconds. */
uint64_t bench_ns(void);
/* The p-quantile (0 <= p <= 1) of v[0..n), which it sorts; 0 when n is 0. */
double bench_quantile(double *v, size_t n, double p);
/* Bytes the process's heap has in use now (glibc mallinfo2, chunks big
 * enough to be mmap()ed included). */
size_t bench_heap_bytes(void);
/* Prints "bench <name> <value> <unit>". */
void bench_print(const char *name, double value, const char *unit);

/* A live query's on_change that only counts: bench_changes_seen sums the
 * changes of every batch delivered so far. */
extern uint64_t bench_changes_seen;
void bench_count_changes(void *ctx, ldb_live *q, const ldb_change *c, size_t n);

/* splitmix64: the next pseudo-random value of the stream *state. */
uint64_t bench_rand(uint64_t *state);

/* The "issues" data of ../shared/bench/WORKLOADS.md: users 1..BENCH_USERS
 * named 'User <id>', and issue rows produced by bench_issues. */
#define BENCH_USERS 1000
#define BENCH_CREATED0 1700000000000LL

struct bench_issue {
    int64_t id;          /* 1..n, in order */
    const char *title;   /* 'Issue <id>', borrowed for the call */
    const char *status;  /* 'open' (2/3) or 'closed' (static) */
    int64_t priority;    /* 0..9 */
    int64_t created;     /* BENCH_CREATED0 + p(id) * 60000, p a permutation */
    int64_t assignee;    /* 1..BENCH_USERS */
};
/* Calls fn for issues 1..n, the same rows for the same seed (the stream
 * a benchmark prints). */
void bench_issues(int n, uint64_t seed, void (*fn)(void *ctx, const struct bench_issue *row),
                  void *ctx);

/* ---- SQLite and livedb behind one interface -------------------------------- */

/* A database of either engine (the benchmark opens it). */
struct bench_engine {
    bool sqlite;
    ldb *db;
    sqlite3 *lite;
};
/* "SQLite" or "livedb". */
const char *bench_engine_name(const struct bench_engine *e);
/* Runs statements without rows; dies on an error. */
void bench_run(struct bench_engine *e, const char *sql);

/* A prepared statement of either engine; every call dies on an error. */
struct bench_stmt {
    struct bench_engine *e;
    ldb_stmt *ls;
    sqlite3_stmt *ss;
};
struct bench_stmt bench_prepare(struct bench_engine *e, const char *sql);
void bench_bind_int(struct bench_stmt *s, int i, int64_t v);
void bench_bind_text(struct bench_stmt *s, int i, const char *v);
/* Runs to completion and resets; returns the number of rows. */
int64_t bench_step_all(struct bench_stmt *s);
void bench_finalize(struct bench_stmt *s);

#endif
