/*
 * bench_sql.c - one-shot SQL queries, livedb against SQLite in memory,
 * on the same data in the same run (../shared/bench/WORKLOADS.md "issues"
 * data: N issues, 1,000 users, an index on issues.created).
 *
 *   scan_filter   SELECT id, title FROM issues WHERE priority = 3 AND
 *                 status = 'open'                  (full scan, no index)
 *   index_range   SELECT id, created FROM issues WHERE created BETWEEN ?
 *                 AND ?                            (about 1,000 rows)
 *   order_limit   SELECT * FROM issues ORDER BY created DESC LIMIT 50
 *   hash_join     SELECT i.id, i.title, u.name FROM issues i JOIN users u
 *                 ON u.id = i.assignee             (N x 1,000)
 *   group_by      SELECT assignee, count(*), max(priority) FROM issues
 *                 GROUP BY assignee                (1,000 groups)
 *
 * Both engines run prepared statements, stepped to the last row (each
 * value read once). Prints per case
 *   bench sql.<case>.<n>.median <ms> ms
 *   bench sqlite.sql.<case>.<n>.median <ms> ms
 *   bench ratio.sql.<case>.<n> <livedb/sqlite> x
 * and checks that both engines return the same number of rows.
 * N is 100,000 (10,000 with --quick).
 */
#include "bench_util.h"

#include "livedb.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USERS 1000

typedef struct bench_case {
    const char *name;
    const char *sql;
    int nparams; /* index_range: the two bounds */
} bench_case;

static const bench_case cases[] = {
    { "scan_filter", "SELECT id, title FROM issues WHERE priority = 3 AND status = 'open'", 0 },
    { "index_range", "SELECT id, created FROM issues WHERE created BETWEEN ? AND ?", 2 },
    { "order_limit", "SELECT * FROM issues ORDER BY created DESC LIMIT 50", 0 },
    { "hash_join", "SELECT i.id, i.title, u.name FROM issues i JOIN users u ON u.id = i.assignee", 0 },
    { "group_by", "SELECT assignee, count(*), max(priority) FROM issues GROUP BY assignee", 0 },
};

static const char schema[] =
    "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT);"
    "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT, priority INTEGER,"
    " created INTEGER, assignee INTEGER);"
    "CREATE INDEX issues_created ON issues(created);";

/* splitmix64: the data's PRNG (seed printed). */
static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* One issue row: the values bound to the INSERT for both engines. */
typedef struct issue {
    int64_t id, priority, created, assignee;
    char title[32];
    const char *status;
} issue;

static issue *make_issues(long n, uint64_t seed)
{
    issue *v = malloc((size_t)n * sizeof *v);
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    if (!v || !perm)
        bench_die("data", "out of memory");
    for (long i = 0; i < n; i++)
        perm[i] = i;
    for (long i = n - 1; i > 0; i--) { /* created: a random permutation */
        long j = (long)(next_random(&seed) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (long i = 0; i < n; i++) {
        issue *x = &v[i];
        x->id = i + 1;
        snprintf(x->title, sizeof x->title, "Issue %ld", i + 1);
        x->status = next_random(&seed) % 3 < 2 ? "open" : "closed";
        x->priority = (int64_t)(next_random(&seed) % 10);
        x->created = 1700000000000 + perm[i] * 60000;
        x->assignee = 1 + (int64_t)(next_random(&seed) % USERS);
    }
    free(perm);
    return v;
}

/* ---- loading ------------------------------------------------------------------ */

static void ldb_must(ldb *db, int rc, const char *what)
{
    if (rc != LDB_OK && rc != LDB_DONE && rc != LDB_ROW)
        bench_die(what, ldb_errmsg(db));
}

static void load_livedb(ldb *db, const issue *v, long n)
{
    ldb_must(db, ldb_exec(db, schema, NULL, NULL), "livedb schema");
    ldb_must(db, ldb_exec(db, "BEGIN", NULL, NULL), "livedb begin");
    ldb_stmt *u, *s;
    ldb_must(db, ldb_prepare(db, "INSERT INTO users VALUES (?, ?)", -1, &u, NULL), "livedb");
    for (int i = 1; i <= USERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "User %d", i);
        ldb_bind_int64(u, 1, i);
        ldb_bind_text(u, 2, name, -1);
        ldb_must(db, ldb_step(u), "livedb insert user");
        ldb_reset(u);
    }
    ldb_finalize(u);
    ldb_must(db, ldb_prepare(db, "INSERT INTO issues VALUES (?, ?, ?, ?, ?, ?)", -1, &s, NULL),
             "livedb");
    for (long i = 0; i < n; i++) {
        ldb_bind_int64(s, 1, v[i].id);
        ldb_bind_text(s, 2, v[i].title, -1);
        ldb_bind_text(s, 3, v[i].status, -1);
        ldb_bind_int64(s, 4, v[i].priority);
        ldb_bind_int64(s, 5, v[i].created);
        ldb_bind_int64(s, 6, v[i].assignee);
        ldb_must(db, ldb_step(s), "livedb insert issue");
        ldb_reset(s);
    }
    ldb_finalize(s);
    ldb_must(db, ldb_exec(db, "COMMIT", NULL, NULL), "livedb commit");
}

static void sq_must(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
        bench_die(what, sqlite3_errmsg(db));
}

static void load_sqlite(sqlite3 *db, const issue *v, long n)
{
    sq_must(db, sqlite3_exec(db, schema, NULL, NULL, NULL), "sqlite schema");
    sq_must(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "sqlite begin");
    sqlite3_stmt *u, *s;
    sq_must(db, sqlite3_prepare_v2(db, "INSERT INTO users VALUES (?, ?)", -1, &u, NULL), "sqlite");
    for (int i = 1; i <= USERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "User %d", i);
        sqlite3_bind_int64(u, 1, i);
        sqlite3_bind_text(u, 2, name, -1, SQLITE_TRANSIENT);
        sq_must(db, sqlite3_step(u), "sqlite insert user");
        sqlite3_reset(u);
    }
    sqlite3_finalize(u);
    sq_must(db, sqlite3_prepare_v2(db, "INSERT INTO issues VALUES (?, ?, ?, ?, ?, ?)", -1, &s, NULL),
            "sqlite");
    for (long i = 0; i < n; i++) {
        sqlite3_bind_int64(s, 1, v[i].id);
        sqlite3_bind_text(s, 2, v[i].title, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, v[i].status, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, v[i].priority);
        sqlite3_bind_int64(s, 5, v[i].created);
        sqlite3_bind_int64(s, 6, v[i].assignee);
        sq_must(db, sqlite3_step(s), "sqlite insert issue");
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    sq_must(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "sqlite commit");
}

/* ---- one execution of a case --------------------------------------------------- */

/* Sums every column as an integer or text length, so that no engine can
 * skip producing a value. */
static uint64_t sink;

static long run_livedb(ldb *db, ldb_stmt *st, const int64_t *bounds, int nparams)
{
    ldb_reset(st);
    for (int i = 0; i < nparams; i++)
        ldb_bind_int64(st, i + 1, bounds[i]);
    long rows = 0;
    int rc, ncol = ldb_column_count(st);
    while ((rc = ldb_step(st)) == LDB_ROW) {
        const ldb_row *r = ldb_stmt_row(st);
        for (int c = 0; c < ncol; c++) {
            size_t len = 0;
            if (ldb_row_type(r, c) == LDB_TEXT)
                ldb_row_text(r, c, &len);
            sink += len + (uint64_t)ldb_row_int64(r, c);
        }
        rows++;
    }
    ldb_must(db, rc, "livedb query");
    return rows;
}

static long run_sqlite(sqlite3 *db, sqlite3_stmt *st, const int64_t *bounds, int nparams)
{
    sqlite3_reset(st);
    for (int i = 0; i < nparams; i++)
        sqlite3_bind_int64(st, i + 1, bounds[i]);
    long rows = 0;
    int rc, ncol = sqlite3_column_count(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0; c < ncol; c++) {
            size_t len = 0;
            if (sqlite3_column_type(st, c) == SQLITE_TEXT)
                len = (size_t)sqlite3_column_bytes(st, c);
            sink += len + (uint64_t)sqlite3_column_int64(st, c);
        }
        rows++;
    }
    sq_must(db, rc, "sqlite query");
    return rows;
}

/* Times reps executions of one case on both engines, interleaved so that
 * machine noise hits both alike; prints the three figures. */
static void bench_one(const bench_case *bc, ldb *ld, sqlite3 *sq, long n, int reps, uint64_t *seed)
{
    ldb_stmt *ls;
    sqlite3_stmt *ss;
    ldb_must(ld, ldb_prepare(ld, bc->sql, -1, &ls, NULL), bc->name);
    sq_must(sq, sqlite3_prepare_v2(sq, bc->sql, -1, &ss, NULL), bc->name);
    double *tl = malloc((size_t)reps * sizeof *tl), *ts = malloc((size_t)reps * sizeof *ts);
    if (!tl || !ts)
        bench_die("bench", "out of memory");
    for (int r = 0; r < reps; r++) {
        int64_t lo = 1700000000000 + (int64_t)(next_random(seed) % (uint64_t)(n - 1000)) * 60000;
        int64_t bounds[2] = { lo, lo + 999 * 60000 };
        uint64_t t0 = bench_ns();
        long nl = run_livedb(ld, ls, bounds, bc->nparams);
        uint64_t t1 = bench_ns();
        long ns = run_sqlite(sq, ss, bounds, bc->nparams);
        uint64_t t2 = bench_ns();
        if (nl != ns) {
            fprintf(stderr, "bench_sql: %s: livedb returned %ld rows, SQLite %ld\n", bc->name, nl,
                    ns);
            exit(1);
        }
        tl[r] = (double)(t1 - t0) * 1e-6;
        ts[r] = (double)(t2 - t1) * 1e-6;
    }
    double ml = bench_quantile(tl, (size_t)reps, 0.5), ms = bench_quantile(ts, (size_t)reps, 0.5);
    char name[96];
    snprintf(name, sizeof name, "sql.%s.%ld.median", bc->name, n);
    bench_print(name, ml, "ms");
    snprintf(name, sizeof name, "sqlite.sql.%s.%ld.median", bc->name, n);
    bench_print(name, ms, "ms");
    snprintf(name, sizeof name, "ratio.sql.%s.%ld", bc->name, n);
    bench_print(name, ms > 0 ? ml / ms : 0, "x");
    free(tl);
    free(ts);
    ldb_finalize(ls);
    sqlite3_finalize(ss);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    long n = bench_quick ? 10000 : 100000;
    int reps = bench_quick ? 5 : 21;
    uint64_t seed = 20241130;
    printf("# bench_sql: %ld issues, %d users, seed %llu\n", n, USERS, (unsigned long long)seed);
    issue *data = make_issues(n, seed);
    ldb *ld;
    sqlite3 *sq;
    if (ldb_open(NULL, &ld) != LDB_OK || sqlite3_open(":memory:", &sq) != SQLITE_OK)
        bench_die("open", "cannot open the databases");
    load_livedb(ld, data, n);
    load_sqlite(sq, data, n);
    free(data);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (bench_selected(argc, argv, cases[i].name))
            bench_one(&cases[i], ld, sq, n, reps, &seed);
    printf("# checksum %llu\n", (unsigned long long)sink);
    ldb_close(ld);
    sqlite3_close(sq);
    return 0;
}
