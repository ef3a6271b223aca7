/*
 * test_sql_bind.c - the binder: name resolution and its errors (with
 * line and column, and ldb_error_offset), the alias rules, result column
 * names, GROUP BY and ORDER BY resolution, joins with USING and NATURAL,
 * CTEs, derived tables, and what is rejected as unsupported.
 */
#include "test_sql_util.h"

static ldb *setup(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(a INTEGER, b TEXT, c REAL)");
    EXEC(db, "CREATE TABLE u(a INTEGER, d TEXT)");
    EXEC(db, "INSERT INTO t VALUES (1, 'x', 1.5), (2, 'y', 2.5), (3, NULL, NULL)");
    EXEC(db, "INSERT INTO u VALUES (1, 'one'), (3, 'three'), (4, 'four')");
    return db;
}

static void name_errors(void)
{
    ldb *db = setup();
    CHECK_ERROR(db, "SELECT zz FROM t", "line 1, column 8: no such column: zz");
    CHECK(ldb_error_offset(db) == 7);
    CHECK_ERROR(db, "SELECT a\n  FROM t\n WHERE t.zz = 1", "line 3, column 8: no such column: t.zz");
    CHECK(ldb_error_offset(db) == 25);
    CHECK_ERROR(db, "SELECT a FROM t, u", "line 1, column 8: ambiguous column name: a");
    CHECK_ERROR(db, "SELECT * FROM nope", "line 1, column 15: no such table: nope");
    CHECK_ERROR(db, "SELECT a FROM t GROUP BY 4",
                "line 1, column 26: GROUP BY term out of range - should be between 1 and 1");
    CHECK_ERROR(db, "SELECT a FROM t ORDER BY 2",
                "line 1, column 26: 1st ORDER BY term out of range - should be between 1 and 1");
    CHECK_ERROR(db, "SELECT a FROM t UNION SELECT a, d FROM u",
                "line 1, column 23: SELECTs to the left and right of UNION do not have the "
                "same number of result columns");
    CHECK_ERROR(db, "SELECT a FROM t UNION SELECT a FROM u ORDER BY zz",
                "line 1, column 48: 1st ORDER BY term does not match any column in the result set");
    CHECK_ERROR(db, "SELECT a FROM t WHERE count(*) > 1",
                "line 1, column 23: misuse of aggregate function count()");
    CHECK_ERROR(db, "SELECT sum(count(*)) FROM t",
                "line 1, column 12: misuse of aggregate function count()");
    CHECK_ERROR(db, "SELECT a FROM t GROUP BY count(*)",
                "line 1, column 26: misuse of aggregate function count()");
    CHECK_ERROR(db, "SELECT a COLLATE klingon FROM t",
                "line 1, column 18: no such collation sequence: klingon");
    CHECK_ERROR(db, "SELECT * FROM t JOIN u USING (zz)",
                "line 1, column 31: cannot join using column zz - column not present in both tables");
    CHECK_ERROR(db, "INSERT INTO t VALUES (1, 2)",
                "line 1, column 15: table t has 3 columns but 2 values were supplied");
    CHECK_ERROR(db, "INSERT INTO t(a, zz) VALUES (1, 2)",
                "line 1, column 18: table t has no column named zz");
    CHECK_ERROR(db, "UPDATE t SET zz = 1", "line 1, column 14: table t has no column named zz");
    CHECK_ERROR(db, "SELECT group_concat(DISTINCT a, '-') FROM t",
                "line 1, column 8: DISTINCT aggregates must have exactly one argument");
    CHECK_ERROR(db, "SELECT count(a, b) FROM t",
                "line 1, column 8: wrong number of arguments to function count()");
    ldb_close(db);
}

static void alias_rules(void)
{
    ldb *db = setup();
    /* an explicit alias may not repeat an enclosing query's alias */
    CHECK_ERROR(db, "SELECT a FROM t AS x WHERE EXISTS (SELECT 1 FROM u AS x)",
                "line 1, column 55: alias x shadows the alias of an enclosing query");
    CHECK_ERROR(db, "SELECT a FROM t WHERE a IN (SELECT a FROM u AS t)",
                "line 1, column 48: alias t shadows the alias of an enclosing query");
    /* nor repeat in one FROM */
    CHECK_ERROR(db, "SELECT 1 FROM t AS x, u AS x",
                "line 1, column 28: alias x is used twice in one FROM clause");
    CHECK_ERROR(db, "SELECT 1 FROM t, t",
                "line 1, column 18: table t appears twice in one FROM clause; give one of them an alias");
    /* implicit aliases may repeat in a nested query: the inner one wins */
    CHECK_ROWS(db, "SELECT a FROM t WHERE a IN (SELECT a FROM t WHERE a > 1) ORDER BY a", "2\n3\n");
    CHECK_ROWS(db, "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM t AS y WHERE y.a = t.a + 1) "
                   "ORDER BY a",
               "1\n2\n");
    /* sibling scopes may reuse an alias */
    CHECK_ROWS(db, "SELECT (SELECT max(x.a) FROM u AS x), (SELECT min(x.a) FROM u AS x)", "4|1\n");
    CHECK_ROWS(db, "SELECT x.a FROM (SELECT a FROM t AS x) AS x ORDER BY 1", "1\n2\n3\n");
    ldb_close(db);
}

static void result_names(void)
{
    ldb *db = setup();
    ldb_stmt *s;
    CHECK(ldb_prepare(db, "SELECT a, t.b AS bee, c+1, (a), * FROM t", -1, &s, NULL) == LDB_OK);
    CHECK_INT(ldb_column_count(s), 7);
    CHECK_STR(ldb_column_name(s, 0), "a");
    CHECK_STR(ldb_column_name(s, 1), "bee");
    CHECK_STR(ldb_column_name(s, 2), "c+1");
    CHECK_STR(ldb_column_name(s, 3), "a");
    CHECK_STR(ldb_column_name(s, 4), "a");
    CHECK_STR(ldb_column_name(s, 6), "c");
    ldb_finalize(s);
    CHECK(ldb_prepare(db, "SELECT A, count(*) FROM t GROUP BY 1 UNION SELECT 1, 2", -1, &s,
                      NULL) == LDB_OK);
    CHECK_STR(ldb_column_name(s, 0), "a");
    CHECK_STR(ldb_column_name(s, 1), "count(*)");
    ldb_finalize(s);
    CHECK(ldb_prepare(db, "VALUES (1, 2)", -1, &s, NULL) == LDB_OK);
    CHECK_STR(ldb_column_name(s, 1), "column2");
    ldb_finalize(s);
    /* rowid, _rowid_, oid: the automatic key */
    EXEC(db, "CREATE TABLE k(id INTEGER PRIMARY KEY, v)");
    EXEC(db, "INSERT INTO k(v) VALUES ('p'), ('q')");
    CHECK_ROWS(db, "SELECT rowid, _rowid_, t.oid FROM t ORDER BY 1", "1|1|1\n2|2|2\n3|3|3\n");
    CHECK_ROWS(db, "SELECT k.rowid, v FROM k WHERE oid = 2", "2|q\n");
    CHECK_ERROR(db, "SELECT oid FROM t, k", "line 1, column 8: ambiguous column name: oid");
    ldb_close(db);
}

static void grouping_and_order(void)
{
    ldb *db = setup();
    EXEC(db, "INSERT INTO t VALUES (1, 'z', 0.5)");
    CHECK_ROWS(db, "SELECT a, count(*), sum(c) FROM t GROUP BY a", "1|2|2.0\n2|1|2.5\n3|1|NULL\n");
    CHECK_ROWS(db, "SELECT a + 1 AS k, count(*) FROM t GROUP BY k HAVING count(*) > 1", "2|2\n");
    CHECK_ROWS(db, "SELECT count(*), count(b), count(DISTINCT a) FROM t", "4|3|3\n");
    CHECK_ROWS(db, "SELECT count(*) FROM t WHERE a > 100", "0\n");
    CHECK_ROWS(db, "SELECT a FROM t GROUP BY a HAVING a > 100", "");
    CHECK_ROWS(db, "SELECT -a AS a FROM t ORDER BY a LIMIT 2", "-3\n-2\n");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY c DESC NULLS FIRST", "3\n2\n1\n1\n");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY c NULLS LAST", "1\n1\n2\n3\n");
    CHECK_ROWS(db, "SELECT b FROM t ORDER BY b COLLATE NOCASE DESC LIMIT 1 OFFSET 1", "y\n");
    CHECK_ROWS(db, "SELECT a, max(c), b FROM t GROUP BY a ORDER BY a", "1|1.5|x\n2|2.5|y\n3|NULL|NULL\n");
    CHECK_ROWS(db, "SELECT a, min(c), b FROM t GROUP BY a ORDER BY a", "1|0.5|z\n2|2.5|y\n3|NULL|NULL\n");
    /* bare columns come from a row of the group even when min() has no value */
    CHECK_ROWS(db, "SELECT a, min(c), a + 1, (SELECT count(*) FROM u WHERE u.a = t.a) FROM t "
                   "GROUP BY (SELECT count(*) FROM u WHERE u.a = t.a) ORDER BY a",
               "1|0.5|2|1\n2|2.5|3|0\n");
    CHECK_ROWS(db, "SELECT b, max(c) FROM t WHERE a = 3", "NULL|NULL\n");
    CHECK_ROWS(db, "SELECT sum(a) FILTER (WHERE a > 1), group_concat(b, '-') FROM t", "5|x-y-z\n");
    /* string_agg follows the rows' keys (here the primary key k), ORDER BY
     * inside the call overrides them, DISTINCT values sit at their first row */
    EXEC(db, "CREATE TABLE g(k INTEGER PRIMARY KEY, x TEXT COLLATE NOCASE, y INTEGER)");
    EXEC(db, "INSERT INTO g VALUES (4, 'b', 1), (2, 'B', 3), (9, 'a', 2), (1, NULL, 0), (3, 'a', 3)");
    CHECK_ROWS(db, "SELECT group_concat(x), group_concat(DISTINCT x) FROM g", "B,a,b,a|B,a\n");
    CHECK_ROWS(db, "SELECT group_concat(x ORDER BY y), group_concat(DISTINCT x ORDER BY y DESC) "
                   "FROM g", "b,a,B,a|B,a\n");
    CHECK_ROWS(db, "SELECT string_agg(k, ';' ORDER BY x DESC, k DESC) FROM g", "4;2;9;3;1\n");
    CHECK_ROWS(db, "SELECT y, group_concat(k) FROM g GROUP BY y ORDER BY y",
               "0|1\n1|4\n2|9\n3|2,3\n");
    /* a join follows the combined keys; a derived table without its key
     * falls back to value order */
    CHECK_ROWS(db, "SELECT group_concat(g.k || h.k) FROM g, g AS h WHERE g.k < 3 AND h.k > 3",
               "14,19,24,29\n");
    CHECK_ROWS(db, "SELECT group_concat(k) FROM (SELECT k + 0 AS k FROM g)", "1,2,3,4,9\n");
    CHECK_ROWS(db, "SELECT DISTINCT a FROM t ORDER BY a DESC", "3\n2\n1\n");
    CHECK_ROWS(db, "SELECT a FROM t UNION SELECT a FROM u ORDER BY 1 DESC", "4\n3\n2\n1\n");
    CHECK_ROWS(db, "SELECT a FROM t INTERSECT SELECT a FROM u", "1\n3\n");
    CHECK_ROWS(db, "SELECT a FROM u EXCEPT SELECT a FROM t", "4\n");
    CHECK_ROWS(db, "SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a LIMIT 3 OFFSET 2",
               "1\n2\n3\n");
    CHECK_ROWS(db, "SELECT * FROM (VALUES (2, 'b'), (1, 'a')) ORDER BY column1", "1|a\n2|b\n");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a LIMIT (SELECT count(*) FROM u) - 2", "1\n");
    CHECK_ERROR(db, "SELECT a FROM t LIMIT 'x'", "line 1, column 23: LIMIT and OFFSET must be integers");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a LIMIT -1 OFFSET 3", "3\n");
    CHECK_ROWS(db, "SELECT a FROM t ORDER BY a LIMIT '1' OFFSET 2.0", "2\n");
    ldb_close(db);
}

static void joins(void)
{
    ldb *db = setup();
    CHECK_ROWS(db, "SELECT t.a, d FROM t JOIN u ON t.a = u.a ORDER BY 1", "1|one\n3|three\n");
    CHECK_ROWS(db, "SELECT t.a, d FROM t LEFT JOIN u ON t.a = u.a ORDER BY 1",
               "1|one\n2|NULL\n3|three\n");
    CHECK_ROWS(db, "SELECT t.a, u.a FROM t RIGHT JOIN u ON t.a = u.a ORDER BY 2",
               "1|1\n3|3\nNULL|4\n");
    CHECK_ROWS(db, "SELECT t.a, u.a FROM t FULL JOIN u ON t.a = u.a ORDER BY 1, 2",
               "NULL|4\n1|1\n2|NULL\n3|3\n");
    CHECK_ROWS(db, "SELECT a, b, d FROM t JOIN u USING (a) ORDER BY a", "1|x|one\n3|NULL|three\n");
    CHECK_ROWS(db, "SELECT * FROM t NATURAL JOIN u ORDER BY a", "1|x|1.5|one\n3|NULL|NULL|three\n");
    CHECK_ROWS(db, "SELECT a FROM t FULL JOIN u USING (a) ORDER BY a", "1\n2\n3\n4\n");
    CHECK_ROWS(db, "SELECT count(*) FROM t, u", "9\n");
    CHECK_ROWS(db, "SELECT count(*) FROM t CROSS JOIN u WHERE t.a < u.a", "5\n");
    CHECK_ROWS(db, "SELECT t.a, u.d FROM t LEFT JOIN u ON t.a = u.a AND u.d > 'p' ORDER BY 1",
               "1|NULL\n2|NULL\n3|three\n");
    CHECK_ROWS(db, "SELECT t.a FROM t LEFT JOIN u ON t.a = u.a WHERE u.a IS NULL", "2\n");
    CHECK_ROWS(db, "SELECT x.a, y.a FROM t AS x JOIN (u AS y JOIN t AS z ON y.a = z.a) "
                   "ON x.a = y.a ORDER BY 1",
               "1|1\n3|3\n");
    ldb_close(db);
}

static void ctes_views_derived(void)
{
    ldb *db = setup();
    CHECK_ROWS(db, "WITH big(n) AS (SELECT a FROM t WHERE a > 1), two AS (SELECT n FROM big "
                   "WHERE n = 2) SELECT n FROM big WHERE n NOT IN two ORDER BY n",
               "3\n");
    CHECK_ROWS(db, "SELECT s.total FROM (SELECT sum(a) AS total FROM t) AS s", "6\n");
    EXEC(db, "CREATE VIEW v(k, name) AS SELECT a, b FROM t WHERE a < 3");
    CHECK_ROWS(db, "SELECT k, name FROM v ORDER BY k", "1|x\n2|y\n");
    CHECK_ROWS(db, "SELECT count(*) FROM v JOIN u ON v.k = u.a", "1\n");
    EXEC(db, "CREATE VIEW w AS SELECT k FROM v");
    CHECK_ROWS(db, "SELECT * FROM w ORDER BY 1", "1\n2\n");
    CHECK_ERROR(db, "INSERT INTO v VALUES (1, 'a')",
                "line 1, column 13: cannot modify v because it is a view");
    CHECK_ERROR(db, "DROP TABLE v", "line 1, column 12: use DROP VIEW to delete view v");
    CHECK_ERROR(db, "DROP VIEW t", "line 1, column 11: use DROP TABLE to delete table t");
    CHECK_ERROR(db, "CREATE VIEW v AS SELECT 1", "line 1, column 1: table v already exists");
    EXEC(db, "CREATE VIEW IF NOT EXISTS v AS SELECT 1");
    EXEC(db, "DROP VIEW w");
    CHECK_FAILS(db, "SELECT * FROM w", LDB_ERROR);
    EXEC(db, "DROP TABLE u");
    EXEC(db, "CREATE VIEW vu AS SELECT * FROM t");
    EXEC(db, "DROP TABLE t");
    CHECK_ERROR(db, "SELECT * FROM vu", "line 1, column 15: in view vu: no such table: t");
    ldb_close(db);
}

static void unsupported(void)
{
    ldb *db = setup();
    CHECK_FAILS(db, "SELECT (1, 2) = (1, 2)", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "CREATE TABLE z(a CHECK (a > 0))", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "CREATE TABLE z(a, b AS (a + 1))", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "CREATE INDEX i ON t(a + 1)", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "CREATE INDEX i ON t(a) WHERE a > 0", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "DROP TRIGGER tr", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "DELETE FROM t RETURNING a", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "SELECT DISTINCT a FROM t ORDER BY c", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "SELECT group_concat(a, b) FROM t", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "SELECT count(a ORDER BY b) FROM t", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "SELECT sum(a) OVER (ORDER BY a) FROM t", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "WITH RECURSIVE r(n) AS (SELECT 1) SELECT n FROM r", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "UPDATE t SET a = 1 FROM u", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "SELECT sum(a) OVER", LDB_ERROR);
    /* nothing was created */
    CHECK_ROWS(db, "SELECT count(*) FROM livedb_schema", "2\n");
    ldb_close(db);
}

TEST_MAIN(T(name_errors), T(alias_rules), T(result_names), T(grouping_and_order), T(joins),
          T(ctes_views_derived), T(unsupported))
