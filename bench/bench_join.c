/*
 * bench_join.c - many-table inner joins (issue 16): chains, stars and
 * cycles of 3 to 20 tables, livedb against SQLite on the same data in the
 * same run. Target: every query within 1.5x of SQLite's time, none over 1 s.
 *
 * Data, per row count N (1k, 10k, and 100k for the small joins): tables
 * t1..tT(id INTEGER PRIMARY KEY, x, y, c, v) where y is a permutation of
 * 1..N, x a random y value of the next table (a many-to-one link, so a
 * chain has one path per t1 row), c the y of a t1 row whose chain reaches
 * this row (so a cycle keeps a row per reached row instead of ~none) and v
 * a payload; and a fact table f(id INTEGER PRIMARY KEY, d1..d(T-1), v)
 * whose dj is a random id of tj. Queries:
 *     chain n:  t1.x = t2.y AND ... AND t(n-1).x = tn.y
 *     cycle n:  the chain AND tn.c = t1.y
 *     star n:   f.d1 = t1.id AND ... AND f.d(n-1) = t(n-1).id
 * each a comma join with the predicates in WHERE, ending in count(*) and two
 * sums so the result size is never the cost. "natural" lists FROM in the
 * shape's order; "scrambled" in a seeded shuffle whose first two tables
 * share no predicate, so following the FROM order alone means a cross
 * product (the select5 case). "noidx" has only the primary keys (a star
 * still joins its dimensions by them); "idx" adds an index on every join
 * column (x, y, c, f.dj), created after the noidx round on the same data.
 *
 * Each query is prepared and stepped to the end (planning is part of the
 * cost), repeated while short, median reported; the two engines' results
 * must agree or the benchmark stops. A query still running after the budget
 * (10 s; 1 s with --quick; LDB_BENCH_JOIN_BUDGET_MS overrides) is stopped,
 * livedb by ldb_interrupt from a watchdog thread, SQLite by its progress
 * handler, and reported as -1; a larger join of the same shape, rows,
 * indexes and order is then reported as timed out without running livedb.
 * Lines:
 *     bench join.<shape>.<n>.<rows>.<idx|noidx>.<order>.livedb_ms <v> ms
 *     bench join.<shape>.<n>.<rows>.<idx|noidx>.<order>.sqlite_ms <v> ms
 *     bench join.<shape>.<n>.<rows>.<idx|noidx>.<order>.ratio <x> x
 * (ratio -1 when either side timed out), then a summary. Sections: chain,
 * star, cycle.
 */
#include "bench_util.h"

#include "livedb.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 20261202u
#define MAX_TABLES 20

/* ---- watchdog: interrupts livedb once a query passes its deadline --------- */

/* The thread interrupts only while armed and under mu, and the main thread
 * disarms under mu before its next statement, so an interrupt never lands
 * on a later query. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    ldb *db;
    uint64_t deadline;
    bool armed, fired, quit;
} dog = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void *dog_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&dog.mu);
    while (!dog.quit) {
        if (!dog.armed) {
            pthread_cond_wait(&dog.cv, &dog.mu);
            continue;
        }
        uint64_t now = bench_ns();
        if (now >= dog.deadline) {
            ldb_interrupt(dog.db);
            dog.fired = true;
            dog.armed = false;
            continue;
        }
        struct timespec ts = { (time_t)(dog.deadline / 1000000000u),
                               (long)(dog.deadline % 1000000000u) };
        pthread_cond_timedwait(&dog.cv, &dog.mu, &ts);
    }
    pthread_mutex_unlock(&dog.mu);
    return NULL;
}

static void dog_start(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* bench_ns's clock */
    pthread_cond_init(&dog.cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&dog.thread, NULL, dog_main, NULL) != 0)
        bench_die("watchdog", "cannot start the thread");
}

static void dog_arm(ldb *db, uint64_t deadline)
{
    pthread_mutex_lock(&dog.mu);
    dog.db = db;
    dog.deadline = deadline;
    dog.armed = true;
    dog.fired = false;
    pthread_cond_signal(&dog.cv);
    pthread_mutex_unlock(&dog.mu);
}

/* Whether the watchdog fired for this query. */
static bool dog_disarm(void)
{
    pthread_mutex_lock(&dog.mu);
    dog.armed = false;
    bool fired = dog.fired;
    pthread_cond_signal(&dog.cv);
    pthread_mutex_unlock(&dog.mu);
    return fired;
}

static void dog_stop(void)
{
    pthread_mutex_lock(&dog.mu);
    dog.quit = true;
    pthread_cond_signal(&dog.cv);
    pthread_mutex_unlock(&dog.mu);
    pthread_join(dog.thread, NULL);
}

/* ---- the two engines ---------------------------------------------------------- */

struct engines {
    ldb *db;
    sqlite3 *lite;
};

/* Inserts the rows of vals (ncols per row) into table on both engines. */
static void insert_rows(struct engines *e, const char *table, int ncols, const int64_t *vals,
                        int nrows)
{
    char sql[512];
    int len = snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (?", table);
    for (int i = 1; i < ncols; i++)
        len += snprintf(sql + len, sizeof sql - (size_t)len, ", ?");
    snprintf(sql + len, sizeof sql - (size_t)len, ")");
    sqlite3_stmt *ss;
    ldb_stmt *ls;
    if (sqlite3_prepare_v2(e->lite, sql, -1, &ss, NULL) != SQLITE_OK)
        bench_die(sql, sqlite3_errmsg(e->lite));
    if (ldb_prepare(e->db, sql, -1, &ls, NULL) != LDB_OK)
        bench_die(sql, ldb_errmsg(e->db));
    for (int r = 0; r < nrows; r++) {
        for (int i = 0; i < ncols; i++) {
            sqlite3_bind_int64(ss, i + 1, vals[(size_t)r * (size_t)ncols + (size_t)i]);
            ldb_bind_int64(ls, i + 1, vals[(size_t)r * (size_t)ncols + (size_t)i]);
        }
        if (sqlite3_step(ss) != SQLITE_DONE)
            bench_die(sql, sqlite3_errmsg(e->lite));
        sqlite3_reset(ss);
        if (ldb_step(ls) != LDB_DONE)
            bench_die(sql, ldb_errmsg(e->db));
        ldb_reset(ls);
    }
    sqlite3_finalize(ss);
    ldb_finalize(ls);
}

/* ---- data ------------------------------------------------------------------------- */

static uint64_t rng;

static int64_t rand_below(int64_t n)
{
    return (int64_t)(bench_rand(&rng) % (uint64_t)n);
}

/* p[0..n) a random permutation of 1..n. */
static void permutation(int64_t *p, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = i + 1;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rand_below(i + 1);
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* Creates and fills t1..tT and f (see the top comment) on both engines. */
static void load(struct engines *e, int ntab, int n)
{
    size_t un = (size_t)n;
    int64_t *y[MAX_TABLES], *x[MAX_TABLES], *c[MAX_TABLES];
    int64_t **row_of_y = bench_realloc(NULL, sizeof(int64_t *) * (size_t)ntab); /* y value -> row index */
    for (int t = 0; t < ntab; t++) {
        y[t] = bench_realloc(NULL, un * sizeof(int64_t));
        x[t] = bench_realloc(NULL, un * sizeof(int64_t));
        c[t] = bench_realloc(NULL, un * sizeof(int64_t));
        row_of_y[t] = bench_realloc(NULL, (un + 1) * sizeof(int64_t));
        permutation(y[t], n);
        for (int r = 0; r < n; r++) {
            row_of_y[t][y[t][r]] = r;
            x[t][r] = 1 + rand_below(n);
            c[t][r] = 1 + rand_below(n);
        }
    }
    /* Follow each t1 row down the chain; the last path to reach a row
     * names the t1 row its cycle edge goes back to. */
    for (int s = 0; s < n; s++) {
        int64_t r = s;
        for (int t = 0; t < ntab; t++) {
            c[t][r] = y[0][s];
            if (t + 1 < ntab)
                r = row_of_y[t + 1][x[t][r]];
        }
    }
    int64_t *rows = bench_realloc(NULL, un * (size_t)(ntab + 1) * sizeof(int64_t));
    char sql[1024], name[16];
    bench_exec_both(e->db, e->lite, "BEGIN");
    for (int t = 0; t < ntab; t++) {
        snprintf(sql, sizeof sql,
                 "CREATE TABLE t%d(id INTEGER PRIMARY KEY, x INTEGER, y INTEGER, c INTEGER, "
                 "v INTEGER)",
                 t + 1);
        bench_exec_both(e->db, e->lite, sql);
        for (int r = 0; r < n; r++) {
            int64_t *row = rows + (size_t)r * 5;
            row[0] = r + 1;
            row[1] = x[t][r];
            row[2] = y[t][r];
            row[3] = c[t][r];
            row[4] = rand_below(1000);
        }
        snprintf(name, sizeof name, "t%d", t + 1);
        insert_rows(e, name, 5, rows, n);
    }
    int len = snprintf(sql, sizeof sql, "CREATE TABLE f(id INTEGER PRIMARY KEY");
    for (int d = 1; d < ntab; d++)
        len += snprintf(sql + len, sizeof sql - (size_t)len, ", d%d INTEGER", d);
    snprintf(sql + len, sizeof sql - (size_t)len, ", v INTEGER)");
    bench_exec_both(e->db, e->lite, sql);
    int fcols = ntab + 1;
    for (int r = 0; r < n; r++) {
        int64_t *row = rows + (size_t)r * (size_t)fcols;
        row[0] = r + 1;
        for (int d = 1; d < ntab; d++)
            row[d] = 1 + rand_below(n);
        row[ntab] = rand_below(1000);
    }
    insert_rows(e, "f", fcols, rows, n);
    bench_exec_both(e->db, e->lite, "COMMIT");
    free(rows);
    for (int t = 0; t < ntab; t++) {
        free(y[t]);
        free(x[t]);
        free(c[t]);
        free(row_of_y[t]);
    }
    free(row_of_y);
}

static void create_indexes(struct engines *e, int ntab)
{
    char sql[256];
    for (int t = 1; t <= ntab; t++) {
        snprintf(sql, sizeof sql,
                 "CREATE INDEX t%d_x ON t%d(x); CREATE INDEX t%d_y ON t%d(y); "
                 "CREATE INDEX t%d_c ON t%d(c)",
                 t, t, t, t, t, t);
        bench_exec_both(e->db, e->lite, sql);
        if (t < ntab) {
            snprintf(sql, sizeof sql, "CREATE INDEX f_d%d ON f(d%d)", t, t);
            bench_exec_both(e->db, e->lite, sql);
        }
    }
}

/* ---- queries ------------------------------------------------------------------------ */

enum shape { CHAIN, STAR, CYCLE };
static const char *const shape_names[] = { "chain", "star", "cycle" };

/* Whether tables a and b (0 = t1 or f, as listed in natural order) share a
 * predicate. */
static bool joined(enum shape s, int n, int a, int b)
{
    if (a > b) {
        int t = a;
        a = b;
        b = t;
    }
    if (s == STAR)
        return a == 0;
    return b == a + 1 || (s == CYCLE && a == 0 && b == n - 1);
}

/* The query text into sql. The scrambled FROM order depends only on the
 * shape and n, so it is the same for every row count and index variant
 * (and when sections are chosen). A 3-cycle joins every pair: any order. */
static void build_query(char *sql, size_t size, enum shape s, int n, bool scrambled)
{
    uint64_t shuffle = SEED ^ ((uint64_t)s << 32) ^ (uint64_t)n;
    char names[MAX_TABLES][16];
    for (int i = 0; i < n; i++) {
        if (s == STAR)
            snprintf(names[i], sizeof names[i], i == 0 ? "f" : "t%d", i);
        else
            snprintf(names[i], sizeof names[i], "t%d", i + 1);
    }
    int order[MAX_TABLES];
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int tries = 0; scrambled && tries < 100; tries++) {
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(bench_rand(&shuffle) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        if (!joined(s, n, order[0], order[1]))
            break;
    }
    size_t len = (size_t)snprintf(sql, size, "SELECT count(*), sum(%s.v), sum(%s.v) FROM ",
                                  names[0], names[n - 1]);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(sql + len, size - len, "%s%s", i ? ", " : "", names[order[i]]);
    len += (size_t)snprintf(sql + len, size - len, " WHERE ");
    for (int i = 1; i < n; i++) {
        const char *and = i > 1 ? " AND " : "";
        if (s == STAR)
            len += (size_t)snprintf(sql + len, size - len, "%sf.d%d = t%d.id", and, i, i);
        else
            len += (size_t)snprintf(sql + len, size - len, "%st%d.x = t%d.y", and, i, i + 1);
    }
    if (s == CYCLE)
        snprintf(sql + len, size - len, " AND t%d.c = t1.y", n);
}

/* The three aggregates; is_null per column. */
struct result {
    int64_t v[3];
    bool is_null[3];
};

static bool result_eq(const struct result *a, const struct result *b)
{
    for (int i = 0; i < 3; i++)
        if (a->is_null[i] != b->is_null[i] || (!a->is_null[i] && a->v[i] != b->v[i]))
            return false;
    return true;
}

static void result_format(const struct result *r, char *buf, size_t size)
{
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        if (r->is_null[i])
            len += (size_t)snprintf(buf + len, size - len, "%sNULL", i ? "|" : "");
        else
            len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "|" : "",
                                    (long long)r->v[i]);
    }
}

static uint64_t budget_ns;

/* One run on livedb: prepare and step to the end. Returns the time in ns,
 * or 0 when the watchdog stopped it. */
static uint64_t run_livedb(ldb *db, const char *sql, struct result *out)
{
    uint64_t t0 = bench_ns();
    dog_arm(db, t0 + budget_ns);
    ldb_stmt *st;
    if (ldb_prepare(db, sql, -1, &st, NULL) != LDB_OK) {
        dog_disarm();
        bench_die(sql, ldb_errmsg(db));
    }
    int rc, rows = 0;
    while ((rc = ldb_step(st)) == LDB_ROW) {
        const ldb_row *row = ldb_stmt_row(st);
        for (int i = 0; i < 3; i++) {
            out->is_null[i] = ldb_row_type(row, i) == LDB_NULL;
            out->v[i] = ldb_row_int64(row, i);
        }
        rows++;
    }
    uint64_t t = bench_ns() - t0;
    bool fired = dog_disarm();
    ldb_finalize(st);
    if (rc == LDB_INTERRUPT || (fired && rc != LDB_DONE))
        return 0;
    if (rc != LDB_DONE)
        bench_die(sql, ldb_errmsg(db));
    if (rows != 1)
        bench_die(sql, "livedb did not return one row");
    return t ? t : 1;
}

static uint64_t lite_deadline = UINT64_MAX; /* loading runs unbounded */

static int lite_progress(void *ctx)
{
    (void)ctx;
    return bench_ns() >= lite_deadline;
}

/* As run_livedb, for SQLite (its progress handler keeps the budget). */
static uint64_t run_sqlite(sqlite3 *lite, const char *sql, struct result *out)
{
    uint64_t t0 = bench_ns();
    lite_deadline = t0 + budget_ns;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(lite, sql, -1, &st, NULL) != SQLITE_OK)
        bench_die(sql, sqlite3_errmsg(lite));
    int rc, rows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < 3; i++) {
            out->is_null[i] = sqlite3_column_type(st, i) == SQLITE_NULL;
            out->v[i] = sqlite3_column_int64(st, i);
        }
        rows++;
    }
    uint64_t t = bench_ns() - t0;
    lite_deadline = UINT64_MAX;
    sqlite3_finalize(st);
    if (rc == SQLITE_INTERRUPT)
        return 0;
    if (rc != SQLITE_DONE)
        bench_die(sql, sqlite3_errmsg(lite));
    if (rows != 1)
        bench_die(sql, "SQLite did not return one row");
    return t ? t : 1;
}

/* Median time in ms over up to 7 runs while they add up to under 300 ms (a
 * slow query runs once), or -1 when the first run passed the budget. */
static double time_engine(struct engines *e, bool sqlite, const char *sql, struct result *out)
{
    double ms[7];
    int runs = 0;
    uint64_t total = 0;
    do {
        uint64_t t = sqlite ? run_sqlite(e->lite, sql, out) : run_livedb(e->db, sql, out);
        if (t == 0)
            return -1;
        ms[runs++] = (double)t / 1e6;
        total += t;
    } while (runs < 7 && total < 300000000u);
    return bench_quantile(ms, (size_t)runs, 0.5);
}

/* ---- the run ------------------------------------------------------------------------ */

static struct {
    int queries, timeouts, skipped, over_1s, over_ratio;
    double slowest_ms, slowest_ratio;
    char slowest[112];
} sum;

/* Runs one query on both engines and prints its lines. With skip set (a
 * smaller join of the same kind timed out in livedb) livedb is not run and
 * counts as timed out, which keeps a run with a planner that follows the
 * FROM order to minutes. Returns whether livedb timed out. */
static bool bench_query(struct engines *e, enum shape s, int n, int rows, bool idx,
                        bool scrambled, bool skip)
{
    static char sql[4096];
    build_query(sql, sizeof sql, s, n, scrambled);
    char name[96], line[128];
    snprintf(name, sizeof name, "join.%s.%d.%dk.%s.%s", shape_names[s], n, rows / 1000,
             idx ? "idx" : "noidx", scrambled ? "scrambled" : "natural");
    struct result lr, sr;
    double lite_ms = time_engine(e, true, sql, &sr);
    double live_ms = skip ? -1 : time_engine(e, false, sql, &lr);
    if (skip) {
        printf("# %s: livedb not run, a smaller join of this kind timed out\n", name);
        sum.skipped++;
    }
    if (lite_ms >= 0 && live_ms >= 0 && !result_eq(&lr, &sr)) {
        char a[96], b[96];
        result_format(&lr, a, sizeof a);
        result_format(&sr, b, sizeof b);
        fprintf(stderr, "bench_join: %s: livedb %s, SQLite %s\n  %s\n", name, a, b, sql);
        exit(1);
    }
    double ratio = lite_ms > 0 && live_ms >= 0 ? live_ms / lite_ms : -1;
    snprintf(line, sizeof line, "%s.livedb_ms", name);
    bench_print(line, live_ms, "ms");
    snprintf(line, sizeof line, "%s.sqlite_ms", name);
    bench_print(line, lite_ms, "ms");
    snprintf(line, sizeof line, "%s.ratio", name);
    bench_print(line, ratio, "x");
    sum.queries++;
    bool timed_out = live_ms < 0;
    if (timed_out)
        sum.timeouts++;
    if (timed_out || live_ms > 1000)
        sum.over_1s++;
    if (timed_out || ratio > 1.5)
        sum.over_ratio++;
    double eff = timed_out ? (double)budget_ns / 1e6 : live_ms; /* a timeout is the slowest */
    if (eff > sum.slowest_ms || !sum.slowest[0]) {
        sum.slowest_ms = eff;
        sum.slowest_ratio = ratio;
        snprintf(sum.slowest, sizeof sum.slowest, "%s%s", name, timed_out ? " (timeout)" : "");
    }
    return timed_out;
}

/* The row counts and, for each, the largest join run on them. */
struct size_plan {
    int rows, max_tables;
};

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    const char *env = getenv("LDB_BENCH_JOIN_BUDGET_MS");
    budget_ns = (uint64_t)(env ? atol(env) : bench_quick ? 1000 : 10000) * 1000000u;
    static const int join_sizes[] = { 3, 5, 8, 12, 20 };
    static const struct size_plan full[] = { { 1000, 20 }, { 10000, 20 }, { 100000, 5 } };
    static const struct size_plan quick[] = { { 1000, 20 } };
    const struct size_plan *plan = bench_quick ? quick : full;
    size_t nplan = bench_quick ? 1 : sizeof full / sizeof full[0];
    printf("# bench_join: seed %u, budget %llu ms per query\n", SEED,
           (unsigned long long)(budget_ns / 1000000u));
    rng = SEED;
    dog_start();
    for (size_t p = 0; p < nplan; p++) {
        struct engines e;
        if (ldb_open(NULL, &e.db) != LDB_OK || sqlite3_open(":memory:", &e.lite) != SQLITE_OK)
            bench_die("open", "cannot open the databases");
        sqlite3_progress_handler(e.lite, 1000, lite_progress, NULL);
        uint64_t t0 = bench_ns();
        load(&e, plan[p].max_tables, plan[p].rows);
        printf("# %d rows x %d tables loaded in %.0f ms\n", plan[p].rows, plan[p].max_tables + 1,
               (double)(bench_ns() - t0) / 1e6);
        for (int idx = 0; idx < 2; idx++) {
            if (idx)
                create_indexes(&e, plan[p].max_tables);
            for (int s = CHAIN; s <= CYCLE; s++) {
                if (!bench_selected(argc, argv, shape_names[s]))
                    continue;
                bool timed_out[2] = { false, false }; /* natural, scrambled */
                for (size_t j = 0; j < sizeof join_sizes / sizeof join_sizes[0]; j++) {
                    if (join_sizes[j] > plan[p].max_tables)
                        continue;
                    for (int o = 0; o < 2; o++)
                        timed_out[o] = bench_query(&e, (enum shape)s, join_sizes[j],
                                                   plan[p].rows, idx, o, timed_out[o]);
                }
            }
        }
        ldb_close(e.db);
        sqlite3_close(e.lite);
    }
    dog_stop();
    printf("# %d queries, %d livedb timeouts (%d of them not run)\n", sum.queries, sum.timeouts,
           sum.skipped);
    printf("# slowest livedb query: %s %.1f ms, ratio %.2f x\n", sum.slowest, sum.slowest_ms,
           sum.slowest_ratio);
    bench_print("join.summary.over_1s", sum.over_1s, "queries");
    bench_print("join.summary.over_1_5x", sum.over_ratio, "queries");
    bench_print("join.summary.timeouts", sum.timeouts, "queries");
    return 0;
}
