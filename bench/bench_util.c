/*
 * bench_util.c - timing helpers and the shared "issues" data for
 * benchmarks (see bench_util.h).
 */
#include "bench_util.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool bench_quick;

static const char *program = "bench";

int bench_init(int argc, char **argv)
{
    program = argc > 0 ? argv[0] : program;
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

size_t bench_heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
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

void bench_die(const char *what, const char *msg)
{
    const char *slash = strrchr(program, '/');
    fprintf(stderr, "%s: %s: %s\n", slash ? slash + 1 : program, what, msg);
    exit(1);
}

void bench_die_db(ldb *db, const char *what)
{
    bench_die(what, db ? ldb_errmsg(db) : "failed");
}

void bench_exec_both(ldb *db, sqlite3 *lite, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(lite, sql, NULL, NULL, &err) != SQLITE_OK)
        bench_die(sql, err);
    if (ldb_exec(db, sql, NULL, NULL) != LDB_OK)
        bench_die(sql, ldb_errmsg(db));
}

void *bench_realloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        bench_die("malloc", "out of memory");
    return p;
}

void bench_count_changes(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)ctx;
    (void)q;
    (void)c;
    bench_changes_seen += n;
}

uint64_t bench_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The stream is consumed as bench_live always did (the permutation, then
 * status, priority, assignee per row), so its figures compare across runs. */
void bench_issues(int n, uint64_t seed, void (*fn)(void *ctx, const struct bench_issue *row),
                  void *ctx)
{
    uint64_t rng = seed;
    int *perm = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!perm) {
        fprintf(stderr, "bench_issues: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(bench_rand(&rng) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    char title[32];
    for (int i = 1; i <= n; i++) {
        snprintf(title, sizeof title, "Issue %d", i);
        struct bench_issue row = { i, title, NULL, 0, 0, 0 };
        row.status = bench_rand(&rng) % 3 < 2 ? "open" : "closed";
        row.priority = (int64_t)(bench_rand(&rng) % 10);
        row.created = BENCH_CREATED0 + (int64_t)perm[i - 1] * 60000;
        row.assignee = 1 + (int64_t)(bench_rand(&rng) % BENCH_USERS);
        fn(ctx, &row);
    }
    free(perm);
}

/* ---- SQLite and livedb behind one interface -------------------------------- */

const char *bench_engine_name(const struct bench_engine *e)
{
    return e->sqlite ? "SQLite" : "livedb";
}

void bench_run(struct bench_engine *e, const char *sql)
{
    if (e->sqlite) {
        char *err = NULL;
        if (sqlite3_exec(e->lite, sql, NULL, NULL, &err) != SQLITE_OK)
            bench_die(sql, err);
    } else if (ldb_exec(e->db, sql, NULL, NULL) != LDB_OK) {
        bench_die(sql, ldb_errmsg(e->db));
    }
}

struct bench_stmt bench_prepare(struct bench_engine *e, const char *sql)
{
    struct bench_stmt s = { e, NULL, NULL };
    if (e->sqlite ? sqlite3_prepare_v2(e->lite, sql, -1, &s.ss, NULL) != SQLITE_OK
                  : ldb_prepare(e->db, sql, -1, &s.ls, NULL) != LDB_OK)
        bench_die(sql, e->sqlite ? sqlite3_errmsg(e->lite) : ldb_errmsg(e->db));
    return s;
}

void bench_bind_int(struct bench_stmt *s, int i, int64_t v)
{
    if (s->e->sqlite ? sqlite3_bind_int64(s->ss, i, v) != SQLITE_OK
                     : ldb_bind_int64(s->ls, i, v) != LDB_OK)
        bench_die("bind", bench_engine_name(s->e));
}

void bench_bind_text(struct bench_stmt *s, int i, const char *v)
{
    if (s->e->sqlite ? sqlite3_bind_text(s->ss, i, v, -1, SQLITE_TRANSIENT) != SQLITE_OK
                     : ldb_bind_text(s->ls, i, v, -1) != LDB_OK)
        bench_die("bind", bench_engine_name(s->e));
}

int64_t bench_step_all(struct bench_stmt *s)
{
    int64_t rows = 0;
    int rc;
    if (s->e->sqlite) {
        while ((rc = sqlite3_step(s->ss)) == SQLITE_ROW)
            rows++;
        if (rc != SQLITE_DONE)
            bench_die("sqlite step", sqlite3_errmsg(s->e->lite));
        sqlite3_reset(s->ss);
    } else {
        while ((rc = ldb_step(s->ls)) == LDB_ROW)
            rows++;
        if (rc != LDB_DONE)
            bench_die("livedb step", ldb_errmsg(s->e->db));
        ldb_reset(s->ls);
    }
    return rows;
}

void bench_finalize(struct bench_stmt *s)
{
    if (s->ss)
        sqlite3_finalize(s->ss);
    ldb_finalize(s->ls);
}
