/*
 * test_shell.c - runs the shell (the livedb binary beside this test's
 * folder: build/livedb for build/tests/test_shell) as a user would, and
 * checks its output modes, multi-line input, dot commands, error reports
 * with a caret under the offending column, exit codes, and live queries
 * (.live, .unlive, .window: the exact batches printed after each commit).
 */
#include "test.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[65536];

static const char *shell_path(void)
{
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
    CHECK(n > 0);
    path[n] = 0;
    char *slash = strrchr(path, '/');
    CHECK(slash);
    strcpy(slash, "/../livedb");
    return path;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(text, f);
    fclose(f);
}

/* Runs the shell with args (already quoted for sh) and stdin_text on its
 * standard input; out gets stdout then stderr. Returns the exit status. */
static int run(const char *args, const char *stdin_text)
{
    char in[] = "/tmp/ldb_shell_in_XXXXXX", res[] = "/tmp/ldb_shell_out_XXXXXX";
    close(mkstemp(in));
    close(mkstemp(res));
    write_file(in, stdin_text);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s < %s > %s 2>&1", shell_path(), args, in, res);
    int status = system(cmd);
    FILE *f = fopen(res, "r");
    CHECK(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    unlink(in);
    unlink(res);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void table_mode(void)
{
    CHECK_INT(run("-c \"SELECT 1 AS a, 'xyz' AS bee UNION ALL SELECT 22, 'q'\"", ""), 0);
    CHECK_STR(out, "+----+-----+\n"
                   "| a  | bee |\n"
                   "+----+-----+\n"
                   "|  1 | xyz |\n"
                   "| 22 | q   |\n"
                   "+----+-----+\n");
}

static void csv_json_line_list(void)
{
    const char *q = "-c \"SELECT 'a,b' AS s, NULL AS n, 'say \\\"hi\\\"' AS t, 7 AS i\"";
    char args[512];
    snprintf(args, sizeof args, "-c '.mode csv' %s", q);
    CHECK_INT(run(args, ""), 0);
    CHECK_STR(out, "s,n,t,i\n\"a,b\",,\"say \"\"hi\"\"\",7\n");
    snprintf(args, sizeof args, "-c '.mode json' %s", q);
    CHECK_INT(run(args, ""), 0);
    CHECK_STR(out, "[{\"s\":\"a,b\",\"n\":null,\"t\":\"say \\\"hi\\\"\",\"i\":7}]\n");
    snprintf(args, sizeof args, "-c '.mode line' %s", q);
    CHECK_INT(run(args, ""), 0);
    CHECK_STR(out, "s = a,b\nn = NULL\nt = say \"hi\"\ni = 7\n");
    snprintf(args, sizeof args, "-c '.mode list' %s", q);
    CHECK_INT(run(args, ""), 0);
    CHECK_STR(out, "a,b|NULL|say \"hi\"|7\n");
    CHECK_INT(run("-c '.mode json' -c 'CREATE TABLE e(x INTEGER)' -c 'SELECT x AS a FROM e'", ""),
              0);
    CHECK_STR(out, "[]\n");
}

/* ARRAY and RECORD values: JSON arrays and objects in json mode, their
 * JSON text in the other modes. */
static void nested_values(void)
{
    const char *sql = "SELECT ARRAY(SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, NULL) AS arr, "
                      "ARRAY(SELECT 1 WHERE 0) AS e;\n";
    char in[512];
    snprintf(in, sizeof in, ".mode json\n%s", sql);
    CHECK_INT(run("", in), 0);
    CHECK_STR(out, "[{\"arr\":[{\"a\":1,\"b\":\"x\"},{\"a\":2,\"b\":null}],\"e\":[]}]\n");
    snprintf(in, sizeof in, ".mode list\n%s", sql);
    CHECK_INT(run("", in), 0);
    CHECK_STR(out, "[{\"a\":1,\"b\":\"x\"},{\"a\":2,\"b\":null}]|[]\n");
}

/* A script file runs first, then standard input; statements span lines
 * and ';' inside strings and comments does not end them. */
static void script_then_stdin(void)
{
    const char *path = "/tmp/ldb_shell_script.sql";
    write_file(path, "-- setup; not a statement end\n"
                     "CREATE TABLE t(id INTEGER PRIMARY KEY,\n"
                     "               name TEXT);\n"
                     "INSERT INTO t VALUES (1, 'a;b'), (2, 'c');\n");
    char args[300];
    snprintf(args, sizeof args, "-f %s", path);
    int rc = run(args, ".mode list\nSELECT name\n  FROM t /* ; */\n  ORDER BY id;\n");
    unlink(path);
    CHECK_INT(rc, 0);
    CHECK_STR(out, "a;b\nc\n");
}

/* A database file on the command line and with .open: what one run
 * writes, the next one reads. */
static void durable_files(void)
{
    char dir[] = "/tmp/ldb_shell_db_XXXXXX";
    CHECK(mkdtemp(dir));
    char args[400];
    snprintf(args, sizeof args, "%s/a.ldb", dir);
    CHECK_INT(run(args, "CREATE TABLE t(x INTEGER PRIMARY KEY);\nINSERT INTO t VALUES (7);\n"), 0);
    char in[600];
    snprintf(in, sizeof in, ".mode list\nSELECT 1;\n.open %s/a.ldb\nSELECT x FROM t;\n"
                            "INSERT INTO t VALUES (8);\n.checkpoint\n.open\n.tables\n"
                            ".open %s/a.ldb\nSELECT count(*) FROM t;\n", dir, dir);
    CHECK_INT(run("", in), 0);
    CHECK_STR(out, "1\n7\n2\n");
    CHECK_INT(run("", ".open /no/such/dir/a.ldb\n"), 1);
    CHECKF(strstr(out, "No such file") != NULL, "%s", out);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

static void dot_commands(void)
{
    const char *script = "CREATE TABLE b(x INTEGER);\n"
                         "CREATE TABLE a(y TEXT);\n"
                         "CREATE INDEX bx ON b(x);\n"
                         ".tables\n"
                         ".schema b\n"
                         "DROP TABLE b;\n"
                         ".schema\n";
    CHECK_INT(run("", script), 0);
    CHECK_STR(out, "a\nb\n"
                   "CREATE TABLE b(x INTEGER);\nCREATE INDEX bx ON b(x);\n"
                   "CREATE TABLE a(y TEXT);\n");
    /* The catalog is the engine's: rolled-back DDL is gone. */
    CHECK_INT(run("", "CREATE TABLE k(x INTEGER);\nBEGIN;\nCREATE TABLE r(x INTEGER);\n"
                      "ROLLBACK;\n.tables\n"),
              0);
    CHECK_STR(out, "k\n");
    /* a key's and a UNIQUE's automatic indexes have no SQL: no line */
    CHECK_INT(run("", "CREATE TABLE u(id INTEGER PRIMARY KEY, e TEXT UNIQUE);\n"
                      "CREATE INDEX ue ON u(e);\n.schema\n.schema u\n"),
              0);
    CHECK_STR(out, "CREATE TABLE u(id INTEGER PRIMARY KEY, e TEXT UNIQUE);\n"
                   "CREATE INDEX ue ON u(e);\n"
                   "CREATE TABLE u(id INTEGER PRIMARY KEY, e TEXT UNIQUE);\n"
                   "CREATE INDEX ue ON u(e);\n");
    CHECK_INT(run("-c '.schema nope'", ""), 1);
    CHECK_INT(run("-c .help", ""), 0);
    CHECK(strstr(out, ".mode"));
    CHECK(strstr(out, ".schema"));
    CHECK_INT(run("-c .frobnicate", ""), 1);
    CHECK(strstr(out, "unknown command"));
    CHECK_INT(run("-c '.mode fancy'", ""), 1);
    CHECK_INT(run("-c '.read /nonexistent/x.sql'", ""), 1);
}

/* The caret sits under the offending column, tabs kept. */
static void error_caret(void)
{
    CHECK_INT(run("-c 'SELECT 1 +;'", ""), 1);
    CHECKF(strstr(out, "Error: ") == out, "%s", out);
    CHECKF(strstr(out, "\n  SELECT 1 +;\n            ^\n"), "%s", out);
    CHECK_INT(run("", "SELECT 1;\nSELECT\t2,\n\t3 +\t;\nSELECT 4;\n"), 1);
    CHECKF(strstr(out, "stdin:3: "), "%s", out);
    CHECKF(strstr(out, "\n  \t3 +\t;\n  \t   \t^\n"), "%s", out);
    CHECKF(!strstr(out, "4\n"), "%s", out); /* stopped at the error */
}

/* Runtime errors exit non-zero too, after the statements before them. */
static void exit_codes(void)
{
    CHECK_INT(run("-c 'SELECT 1'", ""), 0);
    CHECK_INT(run("-c 'SELECT * FROM nowhere'", ""), 1);
    CHECK_INT(run("", ".mode list\nCREATE TABLE t(x INTEGER PRIMARY KEY);\n"
                      "INSERT INTO t VALUES (1);\nSELECT x FROM t;\n"
                      "INSERT INTO t VALUES (1);\nSELECT 99;\n"),
              1);
    CHECKF(strncmp(out, "1\n", 2) == 0 && !strstr(out, "99"), "%s", out);
    CHECK_INT(run("-f no-such-file.sql", ""), 1);
    CHECK_INT(run("/no-such-dir/app.ldb", ""), 1);
    CHECKF(strstr(out, "cannot open") != NULL, "%s", out);
    CHECK_INT(run("--bogus", ""), 2);
}

/* ---- live queries ---------------------------------------------------------------- */

#define LIVE_TABLE                                                                     \
    "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score INTEGER);\n"              \
    "INSERT INTO t VALUES (1, 'ann', 50), (2, 'bob', 40), (3, 'cy', 30);\n"

/* An ordered window: its initial result, then after each statement the
 * changes with positions in the window; a write outside it prints
 * nothing; .window moves it. */
static void live_window(void)
{
    CHECK_INT(run("", LIVE_TABLE
                      ".live SELECT name, score FROM t ORDER BY score DESC LIMIT 2\n"
                      "INSERT INTO t VALUES (4, 'dee', 45);\n"
                      "INSERT INTO t VALUES (5, 'eve', 10);\n"
                      "DELETE FROM t WHERE id = 1;\n"
                      "UPDATE t SET score = 41 WHERE id = 2;\n"
                      "UPDATE t SET score = 99 WHERE id = 2;\n"
                      ".window 1 1 2\n"
                      ".live\n"),
              0);
    CHECK_STR(out, "live 1: name|score\n"
                   "[1] insert @0: ann|50\n"
                   "[1] insert @1: bob|40\n"
                   "[1] delete @1: bob|40\n"  /* dee enters the window */
                   "[1] insert @1: dee|45\n"
                   "[1] delete @0: ann|50\n"  /* a delete refills it */
                   "[1] insert @1: bob|40\n"
                   "[1] update @1: bob|40 -> bob|41\n"
                   "[1] update @1 -> @0: bob|41 -> bob|99\n"
                   "[1] delete @0: bob|99\n"  /* .window 1 1 2 */
                   "[1] insert @1: cy|30\n"
                   "[1] SELECT name, score FROM t ORDER BY score DESC LIMIT 2 -- 2 rows, "
                   "window OFFSET 1 LIMIT 2\n");
}

/* A GROUP BY query: groups appear, change and leave, printed by key. */
static void live_group_by(void)
{
    CHECK_INT(run("", ".mode list\n" LIVE_TABLE
                      ".live SELECT score >= 40 AS high, count(*) AS n, sum(score) AS total "
                      "FROM t GROUP BY high\n"
                      "INSERT INTO t VALUES (4, 'dee', 45), (5, 'eve', NULL);\n"
                      "DELETE FROM t WHERE score < 40;\n"
                      "UPDATE t SET name = 'ANN' WHERE id = 1;\n"
                      "SELECT 'done';\n"),
              0);
    CHECK_STR(out, "live 1: high|n|total\n"
                   "[1] insert: false|1|30\n"
                   "[1] insert: true|2|90\n"
                   "[1] insert: NULL|1|NULL\n"
                   "[1] update: true|2|90 -> true|3|135\n"
                   "[1] delete: false|1|30\n"
                   "done\n"); /* a change that no result sees prints nothing */
}

/* A rolled-back transaction prints nothing; a committed one prints one
 * batch, at its COMMIT, after the statements inside it printed theirs. */
static void live_transactions(void)
{
    CHECK_INT(run("", ".mode list\n" LIVE_TABLE
                      ".live SELECT id, name FROM t ORDER BY id\n"
                      "BEGIN;\nINSERT INTO t VALUES (9, 'zed', 0);\nDELETE FROM t;\n"
                      "ROLLBACK;\n"
                      "SELECT 'after rollback';\n"
                      "BEGIN;\nINSERT INTO t VALUES (0, 'al', 1);\n"
                      "UPDATE t SET name = 'BOB' WHERE id = 2;\nSELECT 'inside';\n"
                      "DELETE FROM t WHERE id = 3;\nCOMMIT;\n"),
              0);
    CHECK_STR(out, "live 1: id|name\n"
                   "[1] insert @0: 1|ann\n"
                   "[1] insert @1: 2|bob\n"
                   "[1] insert @2: 3|cy\n"
                   "after rollback\n"
                   "inside\n"
                   "[1] insert @0: 0|al\n"
                   "[1] delete @2: 3|cy\n"
                   "[1] update @1 -> @2: 2|bob -> 2|BOB\n");
}

/* .live lists the queries (a failed one with its error, said once when it
 * failed); .unlive closes one; batches are labelled with their query; in
 * json mode every line is an object. */
static void live_list_unlive(void)
{
    CHECK_INT(run("", LIVE_TABLE "CREATE TABLE u(k INTEGER PRIMARY KEY);\n"
                      ".live SELECT count(*) AS n FROM t\n"
                      ".live SELECT k FROM u\n"
                      ".live\n"
                      ".unlive 1\n"
                      "INSERT INTO t VALUES (4, 'dee', 45);\n"
                      ".mode json\n"
                      "INSERT INTO u VALUES (7);\n"
                      ".live SELECT name FROM t WHERE id = 4\n"
                      "DROP TABLE u;\n"
                      ".live\n"),
              0);
    CHECK_STR(out, "live 1: n\n"
                   "[1] insert: 3\n"
                   "live 2: k\n"
                   "[1] SELECT count(*) AS n FROM t -- 1 row\n"
                   "[2] SELECT k FROM u -- 0 rows\n"
                   "{\"live\":2,\"change\":\"insert\",\"after\":{\"k\":7}}\n"
                   "{\"live\":3,\"columns\":[\"name\"]}\n"
                   "{\"live\":3,\"change\":\"insert\",\"after\":{\"name\":\"dee\"}}\n"
                   "{\"live\":2,\"error\":\"table u was dropped\"}\n"
                   "[2] SELECT k FROM u -- error: table u was dropped\n"
                   "[3] SELECT name FROM t WHERE id = 4 -- 1 row\n");
}

/* Errors: shown like SQL errors (a caret when there is a position), and
 * a script stops with status 1. */
static void live_errors(void)
{
    CHECK_INT(run("-c 'CREATE TABLE t(x INTEGER)' -c '.live SELECT random() FROM t'", ""), 1);
    CHECKF(strstr(out, "Error: a query that calls a non-deterministic function"), "%s", out);
    CHECK_INT(run("-c 'CREATE TABLE t(x INTEGER)' -c '.live SELECT x FROM t LIMIT 1'", ""), 1);
    CHECKF(strstr(out, "Error: LIMIT without ORDER BY"), "%s", out);
    CHECK_INT(run("", ".live SELECT 1 +\nSELECT 2;\n"), 1);
    CHECKF(strstr(out, "Error: ") == out, "%s", out);
    CHECKF(strstr(out, "\n  SELECT 1 +\n            ^\n"), "%s", out);
    CHECKF(!strstr(out, "2\n"), "%s", out); /* stopped at the error */
    CHECK_INT(run("-c '.live SELECT 1; SELECT 2'", ""), 1);
    CHECK_STR(out, "Error: .live takes one SELECT\n");
    CHECK_INT(run("-c 'CREATE TABLE t(x INTEGER)' -c BEGIN -c '.live SELECT x FROM t'", ""), 1);
    CHECKF(strstr(out, "inside a transaction"), "%s", out);
    CHECK_INT(run("-c .unlive", ""), 1);
    CHECK_STR(out, "Error: usage: .unlive N\n");
    const char *t = "-c 'CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)' ";
    char args[512];
    snprintf(args, sizeof args, "%s -c '.live SELECT x FROM t' -c '.unlive 2'", t);
    CHECK_INT(run(args, ""), 1);
    CHECK_STR(out, "live 1: x\n[1] insert: 1\nError: no live query 2 (.live lists them)\n");
    snprintf(args, sizeof args, "%s -c '.live SELECT x FROM t' -c '.unlive 1' -c '.unlive 1'", t);
    CHECK_INT(run(args, ""), 1);
    CHECKF(strstr(out, "Error: no live query 1"), "%s", out);
    snprintf(args, sizeof args, "%s -c '.live SELECT x FROM t' -c '.window 1 0 5'", t);
    CHECK_INT(run(args, ""), 1);
    CHECKF(strstr(out, "Error: cannot move the window of live query 1"), "%s", out);
    snprintf(args, sizeof args, "%s -c '.live SELECT x FROM t ORDER BY x LIMIT 1' "
                                "-c '.window 1 x 5'", t);
    CHECK_INT(run(args, ""), 1);
    CHECKF(strstr(out, "Error: .window takes N OFFSET LIMIT"), "%s", out);
    CHECK_INT(run("-c .help", ""), 0);
    CHECK(strstr(out, ".live [SELECT ...]"));
    CHECK(strstr(out, ".unlive N"));
    CHECK(strstr(out, ".window N OFFSET LIMIT"));
}

TEST_MAIN(T(table_mode), T(csv_json_line_list), T(nested_values), T(script_then_stdin), T(durable_files),
          T(dot_commands),
          T(error_caret), T(exit_codes), T(live_window), T(live_group_by), T(live_transactions),
          T(live_list_unlive), T(live_errors))
