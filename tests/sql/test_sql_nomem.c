/*
 * test_sql_nomem.c - allocation-failure sweeps through the public API:
 * for each statement, fail the 1st, 2nd, ... allocation (once, and from
 * there on) until the statement succeeds. Every failed run must return
 * LDB_NOMEM, leave the database exactly as it was (same rows, same
 * schema), and leak nothing (the allocation count is back at its start
 * after ldb_close).
 */
#include "test_sql_util.h"

#include "base/mem.h"

#include <stdbool.h>
#include <stdlib.h>

static const char *setup_sql =
    "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);"
    "CREATE INDEX tb ON t(b);"
    "CREATE TABLE u(a INTEGER, d TEXT UNIQUE);"
    "INSERT INTO t VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, 'three', 3.5),"
    " (4, 'a long text that lives on the heap', 4.5);"
    "INSERT INTO u VALUES (1, 'x'), (3, 'y'), (3, 'z'), (NULL, 'w');"
    "CREATE VIEW v AS SELECT a, b FROM t WHERE a > 1;";

/* Everything a statement could have changed, as text. */
static char *snapshot(ldb *db)
{
    const char *s = Q(db, "SELECT * FROM t ORDER BY a; SELECT * FROM u ORDER BY d;"
                          "SELECT type, name, sql FROM livedb_schema ORDER BY name");
    size_t n = strlen(s);
    char *copy = malloc(n + 1);
    memcpy(copy, s, n + 1);
    return copy;
}

/* One sweep over sql (run after prelude), failing allocations once or
 * persistently. */
static void sweep(const char *prelude, const char *sql, int persistent)
{
    for (uint64_t n = 1;; n++) {
        int64_t live0 = mem_live();
        ldb *db = sqlt_open();
        EXEC(db, setup_sql);
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
            CHECKF(strcmp(before, after) == 0, "%s: allocation %llu changed the database", sql,
                   (unsigned long long)n);
            free(after);
        }
        free(before);
        ldb_close(db);
        CHECKF(mem_live() == live0, "%s: allocation %llu: %lld blocks leaked", sql,
               (unsigned long long)n, (long long)(mem_live() - live0));
        if (rc == LDB_OK && !failed)
            return;
    }
}

static void sweep_both(const char *sql)
{
    sweep(NULL, sql, 0);
    sweep(NULL, sql, 1);
}

static void inserts(void)
{
    sweep_both("INSERT INTO t VALUES (10, 'ten', 10.5), (11, 'another long text value', NULL)");
    sweep_both("INSERT INTO t SELECT a + 100, b || '!', c FROM t");
    sweep_both("INSERT INTO t WITH c AS (SELECT a, b, c FROM t) SELECT a + 100, b, c FROM c "
               "UNION ALL SELECT a + 200, b, c FROM c");
    sweep_both("INSERT INTO u VALUES (7, 'x') ON CONFLICT (d) DO UPDATE SET a = excluded.a + u.a");
    sweep_both("REPLACE INTO u VALUES (9, 'y')");
}

static void updates_and_deletes(void)
{
    sweep_both("UPDATE t SET b = b || ' and more text', c = c * 2 WHERE a > 1");
    sweep_both("UPDATE t SET a = a + 1");
    sweep_both("DELETE FROM t WHERE a IN (SELECT a FROM u)");
}

static void queries(void)
{
    sweep_both("SELECT t.a, count(*), group_concat(d), max(c) FROM t JOIN u ON t.a = u.a "
               "GROUP BY t.a ORDER BY 2 DESC, 1 LIMIT 5");
    sweep_both("SELECT b, (SELECT count(*) FROM u WHERE u.a = t.a) FROM t WHERE b NOT IN "
               "(SELECT d FROM u) UNION SELECT d, a FROM u LEFT JOIN v USING (a)");
    sweep_both("SELECT DISTINCT upper(b), printf('%5.1f', c) FROM t ORDER BY 1");
    /* a CTE and a view read several times: bound once, shared, run once */
    sweep_both("WITH c AS (SELECT a, b FROM v) SELECT x.a, y.b FROM c x JOIN c y "
               "ON x.a = y.a + 1 WHERE x.a IN (SELECT a FROM c) AND y.a IN (SELECT a FROM v)");
    sweep_both("EXPLAIN WITH c AS (SELECT a FROM t) SELECT * FROM c x, c y");
}

static void schema_changes(void)
{
    sweep_both("CREATE TABLE w(x INTEGER PRIMARY KEY, y TEXT DEFAULT 'dflt' UNIQUE)");
    sweep_both("CREATE INDEX tc ON t(c DESC, b)");
    sweep_both("CREATE TABLE copy AS SELECT a, b FROM t");
    sweep_both("CREATE VIEW w AS SELECT a AS x FROM u");
    sweep_both("DROP TABLE u");
}

static void transactions(void)
{
    const char *prelude = "BEGIN; INSERT INTO u VALUES (5, 'q'); SAVEPOINT s; DELETE FROM t";
    for (int persistent = 0; persistent < 2; persistent++) {
        sweep(prelude, "ROLLBACK TO s", persistent);
        sweep(prelude, "ROLLBACK", persistent);
        sweep("BEGIN; INSERT INTO u VALUES (5, 'q')", "COMMIT", persistent);
        sweep(NULL, "SAVEPOINT s", persistent);
    }
}

TEST_MAIN(T(inserts), T(updates_and_deletes), T(queries), T(schema_changes), T(transactions))
