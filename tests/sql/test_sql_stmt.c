/*
 * test_sql_stmt.c - every statement kind through the public API: DDL,
 * INSERT (with OR IGNORE/REPLACE and ON CONFLICT), UPDATE, DELETE,
 * transactions and savepoints, statement atomicity, constraint errors,
 * EXPLAIN, PRAGMA, prepared statements with every kind of parameter,
 * re-planning after schema changes, and the catalog table.
 */
#include "test_sql_util.h"

static void create_and_insert(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'anon', "
             "score REAL DEFAULT (1.5 * 2), tag TEXT COLLATE NOCASE UNIQUE, "
             "ref INTEGER REFERENCES other(id))");
    CHECK_ERROR(db, "CREATE TABLE t(a)", "line 1, column 1: table t already exists");
    EXEC(db, "CREATE TABLE IF NOT EXISTS t(a)");
    EXEC(db, "INSERT INTO t(name, tag) VALUES ('a', 'X'), ('b', NULL)");
    EXEC(db, "INSERT INTO t DEFAULT VALUES");
    EXEC(db, "INSERT INTO t(id, tag) VALUES (10, 'y')");
    CHECK_ROWS(db, "SELECT id, name, score, tag FROM t ORDER BY id",
               "1|a|3.0|X\n2|b|3.0|NULL\n3|anon|3.0|NULL\n10|anon|3.0|y\n");
    CHECK_ERROR(db, "INSERT INTO t(tag) VALUES ('x')", "UNIQUE constraint failed: t.tag");
    CHECK_ERROR(db, "INSERT INTO t(id) VALUES (1)", "UNIQUE constraint failed: t.id");
    CHECK_ERROR(db, "INSERT INTO t(name) VALUES (NULL)", "NOT NULL constraint failed: t.name");
    CHECK_FAILS(db, "INSERT INTO t(id) VALUES ('abc')", LDB_TYPE);
    EXEC(db, "INSERT INTO t(id) VALUES ('20')");
    CHECK_ROWS(db, "SELECT id, typeof(id) FROM t WHERE id > 10", "20|integer\n");
    EXEC(db, "CREATE TABLE c AS SELECT id, name || '!' AS shout FROM t WHERE id < 3");
    CHECK_ROWS(db, "SELECT * FROM c ORDER BY id", "1|a!\n2|b!\n");
    /* the columns take the static types of the query's results */
    EXEC(db, "CREATE TABLE c2 AS SELECT abs(name) AS n, substr(x'0102', 1, 1) AS b, "
             "count(*) AS k, 1 < 2 AS t FROM t");
    CHECK_ROWS(db, "SELECT typeof(n), typeof(b), typeof(k), typeof(t) FROM c2",
               "real|blob|integer|boolean\n");
    CHECK_ROWS(db, "SELECT sql FROM livedb_schema WHERE name = 'c2'",
               "CREATE TABLE c2 AS SELECT abs(name) AS n, substr(x'0102', 1, 1) AS b, "
               "count(*) AS k, 1 < 2 AS t FROM t\n");
    EXEC(db, "CREATE TABLE k(a, b, PRIMARY KEY (a, b))");
    EXEC(db, "INSERT INTO k VALUES (1, 1), (1, 2)");
    CHECK_ERROR(db, "INSERT INTO k VALUES (1, 2)", "UNIQUE constraint failed: k.a, k.b");
    CHECK_ERROR(db, "CREATE TABLE bad(a, a)", "line 1, column 1: duplicate column name: a");
    CHECK_ERROR(db, "CREATE TABLE bad(a PRIMARY KEY, b PRIMARY KEY)",
                "line 1, column 35: table bad has more than one primary key");
    ldb_close(db);
}

static void conflicts(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, u TEXT UNIQUE, n INTEGER)");
    EXEC(db, "INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0)");
    EXEC(db, "INSERT OR IGNORE INTO t VALUES (1, 'z', 9), (3, 'c', 0)");
    CHECK_ROWS(db, "SELECT * FROM t ORDER BY id", "1|a|0\n2|b|0\n3|c|0\n");
    CHECK_ROWS(db, "SELECT changes()", "1\n");
    /* REPLACE deletes every row in the way: here two of them */
    EXEC(db, "REPLACE INTO t VALUES (1, 'b', 5)");
    CHECK_ROWS(db, "SELECT * FROM t ORDER BY id", "1|b|5\n3|c|0\n");
    EXEC(db, "INSERT INTO t VALUES (3, 'q', 1) ON CONFLICT (id) DO UPDATE SET n = n + excluded.n");
    CHECK_ROWS(db, "SELECT * FROM t WHERE id = 3", "3|c|1\n");
    EXEC(db, "INSERT INTO t VALUES (4, 'c', 1) ON CONFLICT (u) DO UPDATE SET n = 100 "
             "WHERE t.n > 50");
    CHECK_ROWS(db, "SELECT * FROM t WHERE u = 'c'", "3|c|1\n");
    EXEC(db, "INSERT INTO t VALUES (4, 'c', 1) ON CONFLICT DO NOTHING");
    CHECK_ROWS(db, "SELECT count(*) FROM t", "2\n");
    /* a conflict on another constraint than the target is still an error */
    CHECK_ERROR(db, "INSERT INTO t VALUES (9, 'c', 1) ON CONFLICT (id) DO NOTHING",
                "UNIQUE constraint failed: t.u");
    EXEC(db, "INSERT INTO t AS x VALUES (1, 'w', 1), (7, 'w', 1) ON CONFLICT (id) DO UPDATE "
             "SET u = x.u || excluded.u");
    CHECK_ROWS(db, "SELECT * FROM t ORDER BY id", "1|bw|5\n3|c|1\n7|w|1\n");
    EXEC(db, "UPDATE OR REPLACE t SET u = 'c' WHERE id = 7");
    CHECK_ROWS(db, "SELECT * FROM t ORDER BY id", "1|bw|5\n7|c|1\n");
    EXEC(db, "UPDATE OR IGNORE t SET u = 'c' WHERE id = 1");
    CHECK_ROWS(db, "SELECT u FROM t ORDER BY id", "bw\nc\n");
    ldb_close(db);
}

static void update_delete(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(a INTEGER PRIMARY KEY, b INTEGER)");
    EXEC(db, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)");
    EXEC(db, "UPDATE t SET b = b + (SELECT max(b) FROM t) WHERE a >= 2");
    CHECK_ROWS(db, "SELECT * FROM t ORDER BY a", "1|10\n2|50\n3|60\n");
    CHECK_ROWS(db, "SELECT changes()", "2\n");
    /* the statement sees the table as it was before it started, and keys may
     * move past each other */
    EXEC(db, "UPDATE t SET a = a + 1");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a", "2\n3\n4\n");
    EXEC(db, "UPDATE t SET a = a - 1");
    EXEC(db, "UPDATE t SET a = a + 10");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a", "11\n12\n13\n");
    /* a cycle cannot be ordered: an error, and nothing changed */
    CHECK_ERROR(db, "UPDATE t SET a = CASE a WHEN 11 THEN 12 WHEN 12 THEN 11 ELSE a END",
                "UNIQUE constraint failed: t.a");
    CHECK_ROWS(db, "SELECT a, b FROM t ORDER BY a", "11|10\n12|50\n13|60\n");
    EXEC(db, "INSERT INTO t SELECT a + 100, b FROM t");
    CHECK_ROWS(db, "SELECT count(*) FROM t", "6\n");
    EXEC(db, "DELETE FROM t WHERE b = (SELECT min(b) FROM t)");
    CHECK_ROWS(db, "SELECT count(*), changes() FROM t", "4|2\n");
    EXEC(db, "DELETE FROM t");
    CHECK_ROWS(db, "SELECT count(*) FROM t", "0\n");
    ldb_close(db);
}

static void transactions(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(a INTEGER PRIMARY KEY)");
    EXEC(db, "BEGIN");
    EXEC(db, "INSERT INTO t VALUES (1)");
    EXEC(db, "SAVEPOINT s1");
    EXEC(db, "INSERT INTO t VALUES (2)");
    EXEC(db, "CREATE TABLE x(a)");
    EXEC(db, "ROLLBACK TO s1");
    CHECK_ROWS(db, "SELECT a FROM t", "1\n");
    CHECK_FAILS(db, "SELECT * FROM x", LDB_ERROR);
    EXEC(db, "INSERT INTO t VALUES (3)");
    EXEC(db, "RELEASE s1");
    EXEC(db, "COMMIT");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a", "1\n3\n");
    EXEC(db, "BEGIN");
    EXEC(db, "DELETE FROM t");
    EXEC(db, "ROLLBACK");
    CHECK_ROWS(db, "SELECT count(*) FROM t", "2\n");
    CHECK_ERROR(db, "COMMIT", "line 1, column 1: cannot commit - no transaction is active");
    EXEC(db, "BEGIN");
    CHECK_ERROR(db, "BEGIN", "line 1, column 1: cannot start a transaction within a transaction");
    EXEC(db, "ROLLBACK");
    /* SAVEPOINT outside a transaction starts one; RELEASE commits it */
    EXEC(db, "SAVEPOINT a; INSERT INTO t VALUES (7); RELEASE a");
    CHECK_ROWS(db, "SELECT count(*) FROM t", "3\n");
    ldb_close(db);
}

static void atomicity(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(a INTEGER PRIMARY KEY, b INTEGER)");
    EXEC(db, "INSERT INTO t VALUES (1, 1), (2, 2)");
    /* the third row fails: the first two of the same statement are undone */
    CHECK_FAILS(db, "INSERT INTO t VALUES (3, 3), (4, 4), (1, 5)", LDB_CONSTRAINT);
    CHECK_ROWS(db, "SELECT count(*) FROM t", "2\n");
    CHECK_FAILS(db, "UPDATE t SET b = b + 9223372036854775807", LDB_ERROR);
    CHECK_ROWS(db, "SELECT b FROM t ORDER BY a", "1\n2\n");
    /* inside a transaction only the failed statement is undone */
    EXEC(db, "BEGIN");
    EXEC(db, "INSERT INTO t VALUES (5, 5)");
    CHECK_FAILS(db, "INSERT INTO t VALUES (6, 6), (5, 5)", LDB_CONSTRAINT);
    EXEC(db, "COMMIT");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a", "1\n2\n5\n");
    /* a script stops at its first error; what ran before stays */
    CHECK_FAILS(db, "INSERT INTO t VALUES (8, 8); INSERT INTO t VALUES (8, 8); "
                    "INSERT INTO t VALUES (9, 9)",
                LDB_CONSTRAINT);
    CHECK_ROWS(db, "SELECT a FROM t WHERE a > 5", "8\n");
    ldb_close(db);
}

static void indexes_and_explain(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)");
    EXEC(db, "CREATE INDEX ta ON t(a)");
    EXEC(db, "CREATE UNIQUE INDEX tb ON t(b COLLATE NOCASE)");
    EXEC(db, "CREATE INDEX th ON t(b) USING HASH");
    EXEC(db, "INSERT INTO t VALUES (1, 5, 'x'), (2, 7, 'y'), (3, 5, 'z')");
    CHECK_ERROR(db, "INSERT INTO t VALUES (4, 1, 'X')", "UNIQUE constraint failed: t.b");
    CHECK_ROWS(db, "EXPLAIN SELECT id FROM t WHERE a = 5",
               "PROJECT id\n  FILTER (a = 5) (by the index)\n    SCAN t USING INDEX ta (a = 5)\n");
    CHECK_ROWS(db, "SELECT id FROM t WHERE a = 5 ORDER BY id", "1\n3\n");
    CHECK_ROWS(db, "EXPLAIN SELECT b FROM t WHERE id = ?",
               "PROJECT b\n  FILTER (id = ?1) (by the index)\n    SCAN t USING PRIMARY KEY (id = ?1)\n");
    CHECK_ROWS(db, "EXPLAIN SELECT id FROM t WHERE a > 5 AND a <= 7",
               "PROJECT id\n  FILTER ((a > 5) AND (a <= 7)) (by the index)\n"
               "    SCAN t USING INDEX ta (a > 5 AND a <= 7)\n");
    CHECK_ROWS(db, "EXPLAIN SELECT id FROM t WHERE a > 5 AND b = 'y'",
               "PROJECT id\n  FILTER ((a > 5) AND (b = 'y')) (after the index: (a > 5))\n"
               "    SCAN t USING INDEX th (b = 'y')\n");
    CHECK_ROWS(db, "SELECT id FROM t WHERE a > 5 AND a <= 7", "2\n");
    CHECK_ROWS(db, "EXPLAIN SELECT a FROM t ORDER BY a DESC LIMIT 2",
               "LIMIT 2\n  SORT a DESC (input already in order)\n    PROJECT a\n"
               "      SCAN t USING ORDERED INDEX ta (backward)\n");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a DESC LIMIT 2", "7\n5\n");
    CHECK_ROWS(db, "SELECT id FROM t NOT INDEXED WHERE a = 5 ORDER BY id", "1\n3\n");
    CHECK_ROWS(db, "EXPLAIN INSERT INTO t SELECT id + 10, a, b FROM t",
               "INSERT INTO t\n  PROJECT (id + 10), a, b\n    SCAN t\n");
    CHECK_ROWS(db, "EXPLAIN CREATE INDEX q ON t(a)", "CREATE INDEX q ON t (a)\n");
    EXEC(db, "DROP INDEX ta");
    CHECK_ERROR(db, "DROP INDEX ta", "line 1, column 12: no such index: ta");
    EXEC(db, "DROP INDEX IF EXISTS ta");
    EXEC(db, "REINDEX th");
    CHECK_FAILS(db, "REINDEX nothing", LDB_ERROR);
    EXEC(db, "DROP TABLE t");
    CHECK_ERROR(db, "DROP TABLE t", "line 1, column 12: no such table: t");
    EXEC(db, "DROP TABLE IF EXISTS t");
    ldb_close(db);
}

static void prepared(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(a INTEGER, b TEXT, c REAL, d BLOB, e BOOLEAN)");
    ldb_stmt *s;
    const char *tail;
    CHECK(ldb_prepare(db, "INSERT INTO t VALUES (?, ?2, :c, @d, $e); -- rest", -1, &s, &tail) ==
          LDB_OK);
    CHECK_STR(tail, " -- rest");
    CHECK_INT(ldb_bind_parameter_count(s), 5);
    CHECK_INT(ldb_bind_parameter_index(s, ":c"), 3);
    CHECK_INT(ldb_bind_parameter_index(s, "$e"), 5);
    CHECK_INT(ldb_bind_parameter_index(s, ":nope"), 0);
    CHECK(ldb_bind_int64(s, 1, 42) == LDB_OK);
    CHECK(ldb_bind_text(s, 2, "hello", -1) == LDB_OK);
    CHECK(ldb_bind_double(s, 3, 2.5) == LDB_OK);
    CHECK(ldb_bind_blob(s, 4, "\x01\x02", 2) == LDB_OK);
    CHECK(ldb_bind_bool(s, 5, 1) == LDB_OK);
    CHECK(ldb_bind_int64(s, 6, 1) == LDB_RANGE);
    CHECK_INT(ldb_step(s), LDB_DONE);
    CHECK(ldb_reset(s) == LDB_OK);
    CHECK(ldb_clear_bindings(s) == LDB_OK);
    CHECK(ldb_bind_null(s, 1) == LDB_OK);
    CHECK_INT(ldb_step(s), LDB_DONE);
    ldb_finalize(s);
    CHECK_ROWS(db, "SELECT * FROM t ORDER BY a", "NULL|NULL|NULL|NULL|NULL\n"
                                                 "42|hello|2.5|X'0102'|true\n");
    CHECK(ldb_prepare(db, "SELECT a, b, c FROM t WHERE a = ?1", -1, &s, NULL) == LDB_OK);
    ldb_bind_int64(s, 1, 42);
    CHECK_INT(ldb_step(s), LDB_ROW);
    const ldb_row *r = ldb_stmt_row(s);
    CHECK_INT(ldb_row_columns(r), 3);
    CHECK_INT(ldb_row_type(r, 0), LDB_INTEGER);
    CHECK_INT(ldb_row_int64(r, 0), 42);
    size_t n;
    const char *text = ldb_row_text(r, 1, &n);
    CHECK(n == 5 && memcmp(text, "hello", 5) == 0);
    CHECK(ldb_row_double(r, 2) == 2.5);
    CHECK_INT(ldb_row_type(r, 9), LDB_NULL);
    CHECK_INT(ldb_step(s), LDB_DONE);
    CHECK(ldb_stmt_row(s) == NULL);
    /* a finished statement runs again when stepped */
    CHECK_INT(ldb_step(s), LDB_ROW);
    ldb_reset(s);
    /* schema changes re-plan transparently */
    EXEC(db, "CREATE INDEX ta ON t(a)");
    CHECK_INT(ldb_step(s), LDB_ROW);
    ldb_reset(s);
    EXEC(db, "DROP TABLE t");
    CHECK_INT(ldb_step(s), LDB_ERROR);
    CHECK_STR(ldb_errmsg(db), "line 1, column 21: no such table: t");
    ldb_finalize(s);
    CHECK(ldb_prepare(db, "  -- nothing\n", -1, &s, &tail) == LDB_OK && s == NULL);
    CHECK(ldb_prepare(db, "SELEC 1", -1, &s, NULL) == LDB_ERROR && s == NULL);
    CHECK_INT(ldb_error_offset(db), 0);
    ldb_close(db);
}

static void reading_while_writing(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(a INTEGER PRIMARY KEY)");
    EXEC(db, "INSERT INTO t VALUES (1), (2), (3)");
    ldb_stmt *s, *w;
    CHECK(ldb_prepare(db, "SELECT a FROM t", -1, &s, NULL) == LDB_OK);
    CHECK(ldb_prepare(db, "INSERT INTO t VALUES (10)", -1, &w, NULL) == LDB_OK);
    CHECK_INT(ldb_step(s), LDB_ROW);
    CHECK_INT(ldb_step(w), LDB_DONE);
    /* the open cursor would walk a changed table: it stops with an error */
    CHECK_INT(ldb_step(s), LDB_ABORT);
    ldb_finalize(w);
    /* a sorted result was read before: it is unaffected */
    CHECK(ldb_prepare(db, "SELECT a FROM t ORDER BY a", -1, &w, NULL) == LDB_OK);
    CHECK_INT(ldb_step(w), LDB_ROW);
    EXEC(db, "DELETE FROM t");
    CHECK_INT(ldb_step(w), LDB_ROW);
    CHECK_INT(ldb_row_int64(ldb_stmt_row(w), 0), 2);
    ldb_finalize(w);
    ldb_finalize(s);
    ldb_close(db);
}

static void pragmas_and_catalog(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "PRAGMA materialized_view_rebuild_row_threshold", "");
    EXEC(db, "PRAGMA materialized_view_rebuild_row_threshold = 1000");
    EXEC(db, "PRAGMA nondeterministic_schema = ON");
    EXEC(db, "PRAGMA main.label('x')");
    CHECK_ROWS(db, "PRAGMA materialized_view_rebuild_row_threshold", "1000\n");
    CHECK_ROWS(db, "PRAGMA NONDETERMINISTIC_SCHEMA", "1\n");
    CHECK_ROWS(db, "PRAGMA label", "x\n");
    EXEC(db, "CREATE TABLE t(a UNIQUE); CREATE INDEX ti ON t(a); CREATE VIEW v AS SELECT a FROM t");
    CHECK_ROWS(db, "SELECT type, name, tbl_name FROM livedb_schema ORDER BY name",
               "index|autoindex_t_1|t\ntable|t|t\nindex|ti|t\nview|v|v\n");
    CHECK_ROWS(db, "SELECT sql FROM sqlite_master WHERE name = 'ti'", "CREATE INDEX ti ON t(a)\n");
    ldb_close(db);
}

TEST_MAIN(T(create_and_insert), T(conflicts), T(update_delete), T(transactions), T(atomicity),
          T(indexes_and_explain), T(prepared), T(reading_while_writing), T(pragmas_and_catalog))
