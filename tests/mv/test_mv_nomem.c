/*
 * test_mv_nomem.c - allocation-failure sweeps over statements that
 * maintain several materialized views (one of each arm, and views over
 * views): fail the 1st, 2nd, ... allocation (once, and from there on)
 * until the statement succeeds. A failed run must return LDB_NOMEM and
 * leave every table and view exactly as it was; the views must then keep
 * being maintained correctly (a later statement leaves each equal to its
 * body); nothing may leak (the allocation count is back after close).
 */
#include "mv_util.h"

#include "base/mem.h"

#include <stdbool.h>

static const char *setup_sql =
    "CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER, s TEXT);"
    "CREATE TABLE u(k INTEGER PRIMARY KEY, tid INTEGER, v INTEGER);"
    "CREATE INDEX u_tid ON u(tid);"
    "INSERT INTO t VALUES (1, 1, 10, 'a'), (2, 1, 20, 'b'), (3, 2, 5, 'a a long text value'),"
    " (4, NULL, 7, NULL);"
    "INSERT INTO u VALUES (1, 1, 100), (2, 1, 200), (3, 3, 300);";

static const struct {
    const char *name, *body;
} views[] = {
    { "p", "SELECT id, x * 2 AS y, s FROM t WHERE x > 6" },
    { "a", "SELECT g, count(*) AS n, sum(x) AS sx, avg(x) AS ax FROM t GROUP BY g" },
    { "j", "SELECT t.id, t.s, u.v FROM t JOIN u ON u.tid = t.id" },
    { "d", "SELECT DISTINCT g FROM t" },
    { "aa", "SELECT count(*) AS groups, sum(n) AS rows FROM a" },
};

#define NV (sizeof views / sizeof views[0])

static void create_views(ldb *db)
{
    for (size_t i = 0; i < NV; i++) {
        char sql[300];
        snprintf(sql, sizeof sql, "CREATE MATERIALIZED VIEW %s AS %s", views[i].name,
                 views[i].body);
        EXEC(db, sql);
    }
}

/* Every table and view, as text. */
static char *snapshot(ldb *db)
{
    static const char *const reads[] = { "SELECT * FROM t", "SELECT * FROM u" };
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < 2 + NV; i++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", i < 2 ? "" : views[i - 2].name);
        const char *rows = Q(db, i < 2 ? reads[i] : sql);
        len += (size_t)snprintf(out + len, cap - len, "%s--\n", rows);
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

static void sweep(const char *prelude, const char *sql, int persistent)
{
    for (uint64_t n = 1;; n++) {
        int64_t live0 = mem_live();
        ldb *db;
        CHECK(ldb_open(NULL, &db) == LDB_OK);
        EXEC(db, setup_sql);
        create_views(db);
        if (prelude)
            EXEC(db, prelude);
        char *before = snapshot(db);
        mem_fail_at(n, persistent);
        int rc = ldb_exec(db, sql, NULL, NULL);
        bool failed = mem_failed_count() > 0;
        mem_fail_at(0, 0);
        if (rc != LDB_OK) {
            CHECKF(rc == LDB_NOMEM, "%s: allocation %llu: rc %d (%s)", sql,
                   (unsigned long long)n, rc, ldb_errmsg(db));
            char *after = snapshot(db);
            CHECKF(strcmp(before, after) == 0, "%s: allocation %llu changed the database:\n%s\n%s",
                   sql, (unsigned long long)n, before, after);
            free(after);
        }
        free(before);
        ldb_exec(db, "ROLLBACK", NULL, NULL); /* a prelude's open transaction */
        EXEC(db, "INSERT INTO t VALUES (50, 2, 3, 'after'); UPDATE u SET tid = 2 WHERE k = 3");
        check_all(db);
        ldb_close(db);
        CHECKF(mem_live() == live0, "%s: allocation %llu: %lld blocks leaked", sql,
               (unsigned long long)n, (long long)(mem_live() - live0));
        if (rc == LDB_OK && !failed)
            return;
    }
}

static void sweep_both(const char *prelude, const char *sql)
{
    sweep(prelude, sql, 0);
    sweep(prelude, sql, 1);
}

static void writes(void)
{
    sweep_both(NULL, "INSERT INTO t VALUES (10, 1, 1, 'x'), (11, 3, 30, 'another long text')");
    sweep_both(NULL, "UPDATE t SET x = x + 1, g = 2 WHERE id < 3");
    sweep_both(NULL, "DELETE FROM t WHERE g = 1");
    sweep_both(NULL, "INSERT INTO u VALUES (4, 2, 400), (5, 1, 500)");
}

static void inside_transactions(void)
{
    sweep_both("BEGIN; INSERT INTO t VALUES (20, 5, 5, 'z')", "UPDATE t SET x = 0 WHERE g = 1");
    sweep_both("BEGIN; DELETE FROM t WHERE id = 1; SAVEPOINT s; INSERT INTO u VALUES (9, 2, 9)",
               "ROLLBACK TO s");
    sweep_both("BEGIN; UPDATE t SET x = x * 2", "ROLLBACK");
}

static void ddl(void)
{
    sweep_both(NULL, "CREATE MATERIALIZED VIEW n AS SELECT t.g, sum(u.v) AS sv FROM t "
                     "LEFT JOIN u ON u.tid = t.id GROUP BY t.g");
    sweep_both(NULL, "DROP MATERIALIZED VIEW aa");
    sweep_both(NULL, "DROP INDEX u_tid");
}

TEST_MAIN(T(writes), T(inside_transactions), T(ddl))
