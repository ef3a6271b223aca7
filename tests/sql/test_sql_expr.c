/*
 * test_sql_expr.c - expression semantics through SQL: NULL propagation
 * and three-valued logic, arithmetic with overflow detection, division,
 * CAST, the comparison affinity rule, BOOLEAN, LIKE/GLOB, BETWEEN, IN
 * with NULLs, CASE, and the scalar functions.
 */
#include "test_sql_util.h"

static void null_logic(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT NULL AND 0, NULL AND 1, NULL OR 1, NULL OR 0, NOT NULL",
               "false|NULL|true|NULL|NULL\n");
    CHECK_ROWS(db, "SELECT 1 + NULL, NULL || 'a', -NULL, NULL = NULL, NULL IS NULL",
               "NULL|NULL|NULL|NULL|true\n");
    CHECK_ROWS(db, "SELECT 1 IS 1, 1 IS NOT NULL, NULL IS NOT NULL, 1 IS DISTINCT FROM NULL",
               "true|true|false|true\n");
    CHECK_ROWS(db, "SELECT 2 AND 3, 0 OR 0.0, 'abc' AND 1, '1x' AND 1",
               "true|false|false|true\n");
    ldb_close(db);
}

static void arithmetic(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT 7 / 2, -7 / 2, 7 % 3, -7 % 3, 7.0 / 2, 5.5 % 2",
               "3|-3|1|-1|3.5|1.0\n");
    CHECK_ROWS(db, "SELECT 1 / 0, 1 % 0, 1.5 / 0, 0 / 0.0", "NULL|NULL|NULL|NULL\n");
    CHECK_ROWS(db, "SELECT 9223372036854775807 - 1, -9223372036854775808 + 0",
               "9223372036854775806|-9223372036854775808\n");
    CHECK_ERROR(db, "SELECT 9223372036854775807 + 1", "line 1, column 8: integer overflow");
    CHECK_ERROR(db, "SELECT -9223372036854775808 - 1", "line 1, column 8: integer overflow");
    CHECK_ERROR(db, "SELECT 4611686018427387904 * 2", "line 1, column 8: integer overflow");
    CHECK_ERROR(db, "SELECT -(-9223372036854775808)", "line 1, column 8: integer overflow");
    CHECK_ERROR(db, "SELECT -9223372036854775808 / -1", "line 1, column 8: integer overflow");
    CHECK_ERROR(db, "SELECT abs(-9223372036854775808)", "line 1, column 8: integer overflow");
    CHECK_ROWS(db, "SELECT 9223372036854775807 + 1.0", "9.223372036854776e+18\n");
    CHECK_ROWS(db, "SELECT '12abc' + 1, 'abc' + 1, '1e2x' + 1, x'3132' + 1, ' 3 ' * 2",
               "13|1|101.0|13|6\n");
    CHECK_ROWS(db, "SELECT 6 & 3, 6 | 3, 1 << 4, 256 >> 4, ~0, 1 << 64, -8 >> 1, 1 << -1",
               "2|7|16|16|-1|0|-4|0\n");
    CHECK_ROWS(db, "SELECT 1 || 2, 1.5 || 'a', 'a' || x'62'", "12|1.5a|ab\n");
    /* the error of a row that is never evaluated does not happen */
    EXEC(db, "CREATE TABLE t(a INTEGER)");
    CHECK_ROWS(db, "SELECT 9223372036854775807 + a FROM t", "");
    EXEC(db, "INSERT INTO t VALUES (1)");
    CHECK_ERROR(db, "SELECT 9223372036854775807 + a FROM t",
                "line 1, column 8: integer overflow");
    ldb_close(db);
}

static void booleans(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT typeof(1 < 2), typeof(TRUE), typeof(1 IN (1)), typeof(NOT 0)",
               "boolean|boolean|boolean|boolean\n");
    CHECK_ROWS(db, "SELECT TRUE = 1, FALSE = 0, (1 < 2) = 1, TRUE + TRUE, TRUE * 5",
               "true|true|true|2|5\n");
    CHECK_ROWS(db, "SELECT TRUE > FALSE, TRUE IS TRUE, NOT TRUE, CAST(TRUE AS INTEGER)",
               "true|true|false|1\n");
    CHECK_ROWS(db, "SELECT CAST('true' AS BOOLEAN), CAST(0 AS BOOLEAN), CAST(2.5 AS BOOLEAN)",
               "true|false|true\n");
    CHECK_ERROR(db, "SELECT CAST('maybe' AS BOOLEAN)",
                "line 1, column 8: cannot cast 'maybe' to BOOLEAN");
    ldb_close(db);
}

static void casts(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT CAST('12abc' AS INTEGER), CAST('1e3' AS INTEGER), "
                   "CAST(' 12 ' AS INTEGER), CAST('abc' AS INTEGER), CAST(3.9 AS INTEGER), "
                   "CAST(-3.9 AS INTEGER)",
               "12|1|12|0|3|-3\n");
    CHECK_ROWS(db, "SELECT CAST(1e20 AS INTEGER), CAST(-1e20 AS INTEGER), "
                   "CAST('99999999999999999999' AS INTEGER)",
               "9223372036854775807|-9223372036854775808|9223372036854775807\n");
    CHECK_ROWS(db, "SELECT CAST('1.5x' AS REAL), CAST(3 AS REAL), CAST('3.0' AS NUMERIC), "
                   "CAST(3.0 AS NUMERIC), CAST('abc' AS NUMERIC), CAST('2.5' AS DECIMAL(4,1))",
               "1.5|3.0|3|3.0|0|2.5\n");
    CHECK_ROWS(db, "SELECT CAST(12 AS TEXT), CAST(1.5 AS VARCHAR(10)), CAST(x'6869' AS TEXT), "
                   "typeof(CAST(12 AS TEXT)), CAST('hi' AS BLOB), CAST(NULL AS INTEGER)",
               "12|1.5|hi|text|X'6869'|NULL\n");
    ldb_close(db);
}

static void affinity(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(i INTEGER, r REAL, s TEXT, a)");
    EXEC(db, "INSERT INTO t VALUES (1, 1.5, '10', 1), (2, 2.0, '9', '2')");
    /* a numeric column makes a numeric-looking text operand a number */
    CHECK_ROWS(db, "SELECT i FROM t WHERE i = '1'", "1\n");
    CHECK_ROWS(db, "SELECT i FROM t WHERE '2' = i", "2\n");
    CHECK_ROWS(db, "SELECT i FROM t WHERE r = '2'", "2\n");
    CHECK_ROWS(db, "SELECT i FROM t WHERE i = '1abc'", "");
    /* a text column makes a number operand text */
    CHECK_ROWS(db, "SELECT i FROM t WHERE s = 10", "1\n");
    CHECK_ROWS(db, "SELECT i FROM t WHERE s < 9 ORDER BY i", "1\n");
    /* a column without affinity compares as stored: 1 <> '1' */
    CHECK_ROWS(db, "SELECT i FROM t WHERE a = 1", "1\n");
    CHECK_ROWS(db, "SELECT i FROM t WHERE a = 2", "");
    CHECK_ROWS(db, "SELECT i FROM t WHERE a = '2'", "2\n");
    /* + drops affinity (SQLite) */
    CHECK_ROWS(db, "SELECT i FROM t WHERE +i = '1'", "");
    /* IN takes the left operand's affinity */
    CHECK_ROWS(db, "SELECT i FROM t WHERE i IN ('1', '3')", "1\n");
    CHECK_ROWS(db, "SELECT i FROM t WHERE i BETWEEN '2' AND '3'", "2\n");
    /* values of different classes order NULL < numbers < text < blob */
    CHECK_ROWS(db, "SELECT 1 < 'a', 'a' < x'00', 10 < 9.5, '10' < '9'",
               "true|true|false|true\n");
    ldb_close(db);
}

static void patterns(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT 'abc' LIKE 'a%', 'ABC' LIKE 'a_c', 'abc' LIKE 'b%', "
                   "'a%c' LIKE 'a\\%c' ESCAPE '\\', 'abc' NOT LIKE 'A%'",
               "true|true|false|true|false\n");
    CHECK_ROWS(db, "SELECT 'é' LIKE '_', 'aé' LIKE 'a_', 'x' LIKE '', '' LIKE '%', NULL LIKE 'a'",
               "true|true|false|true|NULL\n");
    CHECK_ROWS(db, "SELECT 'abc' GLOB 'a*', 'ABC' GLOB 'a*', 'abc' GLOB '[a-c]?c', "
                   "'b' GLOB '[^a]', 'a' GLOB '[^a]', 'x]' GLOB 'x[]]'",
               "true|false|true|true|false|true\n");
    CHECK_ROWS(db, "SELECT like('a%', 'abc'), glob('*c', 'abc'), 'aaaaaaaaaaaaaaaaaaaab' LIKE "
                   "'%a%a%a%a%a%a%a%a%a%c'",
               "true|true|false\n");
    CHECK_ERROR(db, "SELECT 'a' LIKE 'a' ESCAPE 'xy'",
                "line 1, column 8: ESCAPE expression must be a single character");
    CHECK_FAILS(db, "SELECT 'a' REGEXP 'a'", LDB_UNSUPPORTED);
    ldb_close(db);
}

static void between_in_case(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT 2 BETWEEN 1 AND 3, 5 NOT BETWEEN 1 AND 3, 2 BETWEEN NULL AND 3, "
                   "5 BETWEEN NULL AND 3, NULL BETWEEN 1 AND 2",
               "true|true|NULL|false|NULL\n");
    CHECK_ROWS(db, "SELECT 1 IN (1, NULL), 2 IN (1, NULL), 2 NOT IN (1, NULL), NULL IN (1), "
                   "NULL IN (), 1 NOT IN ()",
               "true|NULL|NULL|NULL|false|true\n");
    EXEC(db, "CREATE TABLE t(x INTEGER)");
    EXEC(db, "CREATE TABLE e(x INTEGER)");
    EXEC(db, "INSERT INTO t VALUES (1), (2), (NULL)");
    CHECK_ROWS(db, "SELECT 1 IN (SELECT x FROM t), 3 IN (SELECT x FROM t), "
                   "3 NOT IN (SELECT x FROM t), NULL IN (SELECT x FROM e), "
                   "NULL IN (SELECT x FROM t), 3 IN t",
               "true|NULL|NULL|false|NULL|NULL\n");
    CHECK_ROWS(db, "SELECT x, x IN (SELECT x FROM t AS u WHERE u.x = t.x) FROM t ORDER BY x",
               "NULL|false\n1|true\n2|true\n");
    CHECK_ROWS(db, "SELECT CASE 2 WHEN 1 THEN 'a' WHEN 2 THEN 'b' END, "
                   "CASE WHEN NULL THEN 1 WHEN 0 THEN 2 ELSE 3 END, CASE NULL WHEN NULL THEN 1 END, "
                   "CASE 1 WHEN 2 THEN 1 END",
               "b|3|NULL|NULL\n");
    CHECK_ROWS(db, "SELECT EXISTS (SELECT 1 FROM t), EXISTS (SELECT 1 FROM e), "
                   "(SELECT x FROM t ORDER BY x DESC), (SELECT x FROM e)",
               "true|false|2|NULL\n");
    /* several columns: one RECORD (SQLite: an error) */
    CHECK_ROWS(db, "SELECT (SELECT x, x + 1 AS y FROM t ORDER BY x DESC LIMIT 1), "
                   "(SELECT x, x FROM e)",
               "{\"x\":2,\"y\":3}|NULL\n");
    CHECK_ERROR(db, "SELECT 1 IN (SELECT x, x FROM t)",
                "line 1, column 8: sub-select returns 2 columns - expected 1");
    ldb_close(db);
}

static void functions(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT coalesce(NULL, 2, 3), ifnull(NULL, 'x'), nullif(1, 1), nullif(1, 2), "
                   "iif(1 < 2, 'y', 'n')",
               "2|x|NULL|1|y\n");
    /* coalesce stops at the first non-NULL argument: no overflow */
    CHECK_ROWS(db, "SELECT coalesce(1, 9223372036854775807 + 1)", "1\n");
    CHECK_ROWS(db, "SELECT abs(-3), abs(-2.5), abs(NULL), abs('-4'), abs('x'), abs(TRUE)",
               "3|2.5|NULL|4.0|0.0|1\n");
    CHECK_ROWS(db, "SELECT round(2.5), round(-2.5), round(1.2345, 2), round(1.005, 2), "
                   "round(3), round(NULL)",
               "3.0|-3.0|1.23|1.01|3.0|NULL\n");
    CHECK_ROWS(db, "SELECT lower('ABÉ'), upper('abé'), length('héllo'), length(x'0001'), "
                   "length(123), length(NULL)",
               "abÉ|ABé|5|2|3|NULL\n");
    CHECK_ROWS(db, "SELECT substr('hello', 2), substr('hello', 2, 3), substr('hello', -3), "
                   "substr('hello', 0, 2), substr('hello', 3, -2), substring('héllo', 2, 2)",
               "ello|ell|llo|h|he|él\n");
    CHECK_ROWS(db, "SELECT trim('  a  '), ltrim('xxa', 'x'), rtrim('ayy', 'y'), "
                   "replace('abcabc', 'b', 'XY'), replace('abc', '', 'z'), instr('hello', 'll'), "
                   "instr('héllo', 'l')",
               "a|a|a|aXYcaXYc|abc|3|3\n");
    CHECK_ROWS(db, "SELECT min(3, 1, 2), max('a', 'b'), max(1, NULL), typeof(1.5), typeof(x'00'), "
                   "typeof(NULL), typeof('a')",
               "1|b|NULL|real|blob|null|text\n");
    CHECK_ROWS(db, "SELECT hex('AB'), hex(x'0aff'), quote('it''s'), quote(12), quote(NULL), "
                   "quote(x'0a')",
               "4142|0AFF|'it''s'|12|NULL|X'0A'\n");
    CHECK_ROWS(db, "SELECT printf('%d-%5.2f-%s-%x', 42, 3.14159, 'z', 255), format('%q', 'a''b'), "
                   "printf('%%|%-4s|', 'ab'), printf('%Q', NULL)",
               "42- 3.14-z-ff|a''b|%|ab  ||NULL\n");
    CHECK_ROWS(db, "SELECT char(72, 105), unicode('é'), length(zeroblob(3)), concat('a', NULL, 1), "
                   "concat_ws('-', 'a', NULL, 'b')",
               "Hi|233|3|a1|a-b\n");
    CHECK_ERROR(db, "SELECT nosuch(1)", "line 1, column 8: no such function: nosuch");
    CHECK_ERROR(db, "SELECT abs(1, 2)",
                "line 1, column 8: wrong number of arguments to function abs()");
    CHECK_ERROR(db, "SELECT count(*) + 1 WHERE sum(1) > 0",
                "line 1, column 27: misuse of aggregate function sum()");
    ldb_close(db);
}

static void nondeterministic(void)
{
    ldb *db = sqlt_open();
    CHECK_ROWS(db, "SELECT typeof(random()), typeof(randomblob(4)), length(randomblob(4))",
               "integer|blob|4\n");
    EXEC(db, "CREATE TABLE t(a INTEGER PRIMARY KEY, b)");
    EXEC(db, "INSERT INTO t(b) VALUES (1), (2)");
    CHECK_ROWS(db, "SELECT changes(), total_changes(), last_insert_rowid()", "2|2|2\n");
    EXEC(db, "UPDATE t SET b = 5 WHERE a = 1");
    CHECK_ROWS(db, "SELECT changes(), total_changes()", "1|3\n");
    CHECK_ROWS(db, "SELECT length(CURRENT_TIMESTAMP), length(CURRENT_DATE), length(CURRENT_TIME)",
               "19|10|8\n");
    ldb_close(db);
}

TEST_MAIN(T(null_logic), T(arithmetic), T(booleans), T(casts), T(affinity), T(patterns),
          T(between_in_case), T(functions), T(nondeterministic))
