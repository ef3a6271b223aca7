/*
 * test_mv_nomem.c - allocation-failure sweeps (tests/nomem.h) over
 * statements that maintain materialized views of every arm (projection,
 * aggregate with sums and with min, dataflow join, DISTINCT and HAVING,
 * rebuild) and a view over a view, over small tables and over one of 256
 * rows whose index trees mass writes reshape: fail the 1st, 2nd, ... allocation
 * (once, and from there on) until the statement succeeds. A failed run
 * must return LDB_NOMEM and leave every table and view exactly as it was,
 * read from the store while allocations still fail and through SQL after;
 * then the views must keep being maintained correctly (after more
 * statements each equals its body evaluated from scratch); nothing may
 * leak.
 */
#include "mv_util.h"
#include "nomem.h"

#include <stdbool.h>

static const char *setup_sql =
    "PRAGMA nondeterministic_schema = ON;"
    "CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER, s TEXT);"
    "CREATE INDEX t_gx ON t(g, x);"
    "CREATE TABLE u(k INTEGER PRIMARY KEY, tid INTEGER, v INTEGER UNIQUE);"
    "CREATE INDEX u_tid ON u(tid);"
    "INSERT INTO t VALUES (1, 1, 10, 'a'), (2, 1, 20, 'b'), (3, 2, 5, 'a a long text value'),"
    " (4, NULL, 7, NULL);"
    "INSERT INTO u VALUES (1, 1, 100), (2, 1, 200), (3, 3, 300);"
    /* 256 rows: many leaves in w's trees, which mass writes reshape */
    "CREATE TABLE w(id INTEGER PRIMARY KEY, x INTEGER, z INTEGER);"
    "CREATE INDEX wx ON w(x);"
    "CREATE INDEX wzx ON w(z, x);"
    "INSERT INTO w VALUES (1, 7, 0), (2, 3, 1), (3, 9, 0), (4, 1, 1);"
    "INSERT INTO w SELECT id + 4, (x * 7 + id) % 101, id % 3 FROM w;"
    "INSERT INTO w SELECT id + 8, (x * 7 + id) % 101, id % 3 FROM w;"
    "INSERT INTO w SELECT id + 16, (x * 7 + id) % 101, id % 3 FROM w;"
    "INSERT INTO w SELECT id + 32, (x * 7 + id) % 101, id % 3 FROM w;"
    "INSERT INTO w SELECT id + 64, (x * 7 + id) % 101, id % 3 FROM w;"
    "INSERT INTO w SELECT id + 128, (x * 7 + id) % 101, id % 3 FROM w;";

static const struct {
    const char *name, *body, *strategy;
} views[] = {
    { "p", "SELECT id, x * 2 AS y, s FROM t WHERE x > 6", "projection" },
    { "a", "SELECT g, count(*) AS n, sum(x) AS sx, avg(x) AS ax FROM t GROUP BY g",
      "aggregate" },
    { "m", "SELECT g, min(x) AS mn FROM t GROUP BY g", "aggregate" },
    { "j", "SELECT t.id, t.s, u.v FROM t JOIN u ON u.tid = t.id", "dataflow" },
    { "d", "SELECT DISTINCT g FROM t", "dataflow" },
    { "h", "SELECT g, sum(x) AS sx FROM t GROUP BY g HAVING count(*) > 1", "dataflow" },
    /* LIMIT without ORDER BY sends it to the floor; no table holds 1000
     * rows, so its result is still a function of the tables. */
    { "r", "SELECT id, x FROM t WHERE x > 2 LIMIT 1000", "rebuild" },
    { "aa", "SELECT count(*) AS groups, sum(n) AS rows FROM a", "dataflow" },
    { "wp", "SELECT id, x FROM w WHERE x % 2 = 0", "projection" },
    { "ws", "SELECT z, count(*) AS n, sum(x) AS sx, min(x) AS mn FROM w GROUP BY z",
      "aggregate" },
};

#define NV (sizeof views / sizeof views[0])

static ldb *open_db(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, setup_sql);
    for (size_t i = 0; i < NV; i++) {
        char sql[300];
        snprintf(sql, sizeof sql, "CREATE MATERIALIZED VIEW %s AS %s", views[i].name,
                 views[i].body);
        EXEC(db, sql);
    }
    return db;
}

/* Every table and view, as text (malloc'd). */
static char *snapshot(ldb *db)
{
    static const char *const tables[] = { "t", "u", "w" };
    size_t cap = 1 << 17, len = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < 3 + NV; i++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", i < 3 ? tables[i] : views[i - 3].name);
        len += (size_t)snprintf(out + len, cap - len, "%s--\n", Q(db, sql));
    }
    return out;
}

/* Every view that exists equals its body. */
static void check_all(ldb *db)
{
    ldb_mv_stats st;
    for (size_t i = 0; i < NV; i++)
        if (ldb_mv_stats_get(db, views[i].name, &st) == LDB_OK)
            mvt_check_view(db, views[i].name, views[i].body);
}

/* With failures off: the views equal their bodies now (a failed rollback
 * or a stale dataflow state would show), and after more writes. */
static void after(ldb *db)
{
    ldb_exec(db, "ROLLBACK", NULL, NULL); /* a prelude's open transaction */
    check_all(db);
    EXEC(db, "INSERT INTO t VALUES (50, 2, 3, 'after'); UPDATE u SET tid = 2 WHERE k = 3;"
             "UPDATE t SET x = x + 1 WHERE g = 1; DELETE FROM t WHERE id = 3;"
             "UPDATE w SET x = x + 1 WHERE id % 5 = 0; DELETE FROM w WHERE id % 7 = 0");
    check_all(db);
}

static const struct nomem_sql mv_sweep = { open_db, snapshot, after };

static void sweep_both(const char *prelude, const char *sql)
{
    nomem_sweep_both(&mv_sweep, prelude, sql, LDB_OK);
}

static void arms(void)
{
    ldb *db = open_db();
    for (size_t i = 0; i < NV; i++)
        CHECK_STR(mvt_strategy(db, views[i].name), views[i].strategy);
    ldb_close(db);
}

static void writes(void)
{
    sweep_both(NULL, "INSERT INTO t VALUES (10, 1, 1, 'x'), (11, 3, 30, 'another long text')");
    sweep_both(NULL, "UPDATE t SET x = x + 1, g = 2 WHERE id < 3");
    sweep_both(NULL, "DELETE FROM t WHERE g = 1");
    sweep_both(NULL, "INSERT INTO u VALUES (4, 2, 400), (5, 1, 500)");
    sweep_both(NULL, "INSERT INTO t SELECT id + 20, g, x + 1, s FROM t");
    nomem_sweep_both(&mv_sweep, NULL, "INSERT INTO u VALUES (6, 1, 600), (7, 2, 100)",
                     LDB_CONSTRAINT);
    sweep_both(NULL, "DELETE FROM w WHERE id BETWEEN 20 AND 230");
    sweep_both(NULL, "UPDATE w SET x = x + 1000 WHERE id % 2 = 0");
}

static void inside_transactions(void)
{
    sweep_both("BEGIN; INSERT INTO t VALUES (20, 5, 5, 'z')", "UPDATE t SET x = 0 WHERE g = 1");
    sweep_both("BEGIN; DELETE FROM t WHERE id = 1; SAVEPOINT s; INSERT INTO u VALUES (9, 2, 9)",
               "ROLLBACK TO s");
    sweep_both("BEGIN; UPDATE t SET x = x * 2", "ROLLBACK");
    sweep_both("BEGIN; DELETE FROM t WHERE id > 2; SAVEPOINT s; UPDATE t SET g = 7",
               "ROLLBACK TO s");
    sweep_both("BEGIN; INSERT INTO t VALUES (30, 1, 50, 'w'); SAVEPOINT s;"
               "UPDATE u SET tid = 30 WHERE k = 1",
               "ROLLBACK");
    sweep_both("BEGIN; UPDATE t SET x = x + 3", "COMMIT");
    sweep_both("BEGIN; DELETE FROM w WHERE id < 120; SAVEPOINT s; UPDATE w SET x = x + 500",
               "ROLLBACK TO s");
    sweep_both("BEGIN; DELETE FROM w WHERE id > 50; SAVEPOINT s; DELETE FROM w WHERE id < 40",
               "INSERT INTO w SELECT id + 1000, x, z FROM w");
}

static void ddl(void)
{
    sweep_both(NULL, "CREATE MATERIALIZED VIEW n AS SELECT t.g, sum(u.v) AS sv FROM t "
                     "LEFT JOIN u ON u.tid = t.id GROUP BY t.g");
    sweep_both(NULL, "DROP MATERIALIZED VIEW aa");
    sweep_both(NULL, "DROP INDEX u_tid");
}

TEST_MAIN(T(arms), T(writes), T(inside_transactions), T(ddl))
