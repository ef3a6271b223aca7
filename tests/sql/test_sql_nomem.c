/*
 * test_sql_nomem.c - allocation-failure sweeps through the public API
 * (tests/nomem.h): for each statement, fail the 1st, 2nd, ... allocation
 * (once, and from there on) until the statement runs without a failure.
 * Every failed run must return LDB_NOMEM and leave the database exactly as
 * it was, in the store (row objects, index orders, read while allocations
 * still fail) and through SQL (rows, schema); nothing may leak.
 *
 * Table w holds 256 rows under two ordered indexes and a UNIQUE one, so
 * its trees have many leaves: mass deletes and updates leave them in the
 * held shape (emptied and short leaves) that reads and undo must handle,
 * inside transactions and after savepoints.
 */
#include "nomem.h"
#include "test_sql_util.h"

#include <stdbool.h>
#include <stdlib.h>

static const char *setup_sql =
    "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);"
    "CREATE INDEX tb ON t(b);"
    "CREATE TABLE u(a INTEGER, d TEXT UNIQUE);"
    "INSERT INTO t VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, 'three', 3.5),"
    " (4, 'a long text that lives on the heap', 4.5);"
    "INSERT INTO u VALUES (1, 'x'), (3, 'y'), (3, 'z'), (NULL, 'w');"
    "CREATE VIEW v AS SELECT a, b FROM t WHERE a > 1;"
    "CREATE TABLE w(id INTEGER PRIMARY KEY, x INTEGER, y TEXT UNIQUE, z INTEGER);"
    "CREATE INDEX wx ON w(x);"
    "CREATE INDEX wzx ON w(z DESC, x);"
    "INSERT INTO w VALUES (1, 7, 'a', 0), (2, 3, 'b', 1), (3, 9, 'c', 0), (4, 1, 'd', 1);"
    "INSERT INTO w SELECT id + 4, (x * 7 + id) % 101, y || '.' || (id + 4), id % 3 FROM w;"
    "INSERT INTO w SELECT id + 8, (x * 7 + id) % 101, y || '.' || (id + 8), id % 3 FROM w;"
    "INSERT INTO w SELECT id + 16, (x * 7 + id) % 101, y || '.' || (id + 16), id % 3 FROM w;"
    "INSERT INTO w SELECT id + 32, (x * 7 + id) % 101, y || '.' || (id + 32), id % 3 FROM w;"
    "INSERT INTO w SELECT id + 64, (x * 7 + id) % 101, y || '.' || (id + 64), id % 3 FROM w;"
    "INSERT INTO w SELECT id + 128, (x * 7 + id) % 101, y || '.' || (id + 128), id % 3 FROM w;";

static ldb *open_db(void)
{
    ldb *db = sqlt_open();
    EXEC(db, setup_sql);
    return db;
}

/* Everything a statement could have changed, as text. */
static char *snapshot(ldb *db)
{
    const char *s = Q(db, "SELECT * FROM t ORDER BY a; SELECT * FROM u ORDER BY d;"
                          "SELECT * FROM w ORDER BY id; SELECT id FROM w ORDER BY x, id;"
                          "SELECT type, name, sql FROM livedb_schema ORDER BY name");
    size_t n = strlen(s);
    char *copy = malloc(n + 1);
    memcpy(copy, s, n + 1);
    return copy;
}

static const struct nomem_sql db_sweep = { open_db, snapshot, NULL };

static void sweep_both(const char *sql) { nomem_sweep_both(&db_sweep, NULL, sql, LDB_OK); }

static void inserts(void)
{
    sweep_both("INSERT INTO t VALUES (10, 'ten', 10.5), (11, 'another long text value', NULL)");
    sweep_both("INSERT INTO t SELECT a + 100, b || '!', c FROM t");
    sweep_both("INSERT INTO t WITH c AS (SELECT a, b, c FROM t) SELECT a + 100, b, c FROM c "
               "UNION ALL SELECT a + 200, b, c FROM c");
    sweep_both("INSERT INTO u VALUES (7, 'x') ON CONFLICT (d) DO UPDATE SET a = excluded.a + u.a");
    sweep_both("REPLACE INTO u VALUES (9, 'y')");
    sweep_both("INSERT INTO w SELECT id + 1000, x + 1, y || '+', z FROM w WHERE id % 4 = 1");
}

static void updates_and_deletes(void)
{
    sweep_both("UPDATE t SET b = b || ' and more text', c = c * 2 WHERE a > 1");
    sweep_both("UPDATE t SET a = a + 1");
    sweep_both("DELETE FROM t WHERE a IN (SELECT a FROM u)");
    sweep_both("DELETE FROM w WHERE id BETWEEN 20 AND 200");
    sweep_both("UPDATE w SET x = x + 1000, z = 2 WHERE id % 3 = 0");
    sweep_both("UPDATE w SET id = id + 500 WHERE x < 40");
}

/* Statements that fail on their own after writing: undone as a whole. */
static void conflicts(void)
{
    nomem_sweep_both(&db_sweep, NULL, "INSERT INTO w SELECT id + 1000, x, y, z FROM w WHERE id > 100",
                     LDB_CONSTRAINT);
    nomem_sweep_both(&db_sweep, NULL, "UPDATE w SET y = 'same' WHERE id > 200", LDB_CONSTRAINT);
    nomem_sweep_both(&db_sweep, NULL, "INSERT INTO u VALUES (8, 'v'), (9, 'x')", LDB_CONSTRAINT);
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
    /* join order: statistics, classes of equal columns (a constant and a
     * link derived), the order's search, an OR's common conjunct */
    sweep_both("SELECT count(*), sum(w.x) FROM u, w, t, w AS w2 WHERE w.id = t.a AND t.a = u.a "
               "AND w2.x = w.x AND u.a = 3 AND ((w2.z = 1 AND w.x > 0) OR (w2.z = 1 AND t.c > 2))");
    sweep_both("EXPLAIN QUERY PLAN SELECT * FROM w AS p, w AS q, t WHERE p.x = q.x AND q.x = t.a");
}

static void schema_changes(void)
{
    sweep_both("CREATE TABLE nw(x INTEGER PRIMARY KEY, y TEXT DEFAULT 'dflt' UNIQUE)");
    sweep_both("CREATE INDEX tc ON t(c DESC, b)");
    sweep_both("CREATE TABLE copy AS SELECT a, b FROM t");
    sweep_both("CREATE VIEW vw AS SELECT a AS x FROM u");
    sweep_both("DROP TABLE u");
}

static void transactions(void)
{
    const char *prelude = "BEGIN; INSERT INTO u VALUES (5, 'q'); SAVEPOINT s; DELETE FROM t";
    /* Deletes and updates leave w's trees unsettled for what follows. */
    const char *held = "BEGIN; DELETE FROM w WHERE id BETWEEN 10 AND 180; SAVEPOINT s;"
                       "UPDATE w SET x = x + 500 WHERE id % 2 = 0; DELETE FROM w WHERE id > 230";
    for (int persistent = 0; persistent < 2; persistent++) {
        nomem_sweep(&db_sweep, prelude, "ROLLBACK TO s", LDB_OK, persistent);
        nomem_sweep(&db_sweep, prelude, "ROLLBACK", LDB_OK, persistent);
        nomem_sweep(&db_sweep, "BEGIN; INSERT INTO u VALUES (5, 'q')", "COMMIT", LDB_OK,
                    persistent);
        nomem_sweep(&db_sweep, NULL, "SAVEPOINT s", LDB_OK, persistent);
        nomem_sweep(&db_sweep, held, "ROLLBACK TO s", LDB_OK, persistent);
        nomem_sweep(&db_sweep, held, "ROLLBACK", LDB_OK, persistent);
        nomem_sweep(&db_sweep, held, "COMMIT", LDB_OK, persistent);
        nomem_sweep(&db_sweep, held, "INSERT INTO w SELECT id + 1000, x, y || 'n', 5 FROM w",
                    LDB_OK, persistent);
        nomem_sweep(&db_sweep, held, "UPDATE w SET x = x - 1, y = y || '-' WHERE id < 100",
                    LDB_OK, persistent);
        nomem_sweep(&db_sweep, held, "UPDATE w SET y = 'b' WHERE id > 200", LDB_CONSTRAINT,
                    persistent);
    }
}

TEST_MAIN(T(inserts), T(updates_and_deletes), T(conflicts), T(queries), T(schema_changes),
          T(transactions))
