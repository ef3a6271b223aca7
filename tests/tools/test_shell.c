/*
 * test_shell.c - runs the shell (the livedb binary beside this test's
 * folder: build/livedb for build/tests/test_shell) as a user would, and
 * checks its output modes, multi-line input, dot commands, error reports
 * with a caret under the offending column, and exit codes.
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

/* A script file runs first, then standard input; statements span lines
 * and ';' inside strings and comments does not end them. */
static void script_then_stdin(void)
{
    const char *path = "/tmp/ldb_shell_script.sql";
    write_file(path, "-- setup; not a statement end\n"
                     "CREATE TABLE t(id INTEGER PRIMARY KEY,\n"
                     "               name TEXT);\n"
                     "INSERT INTO t VALUES (1, 'a;b'), (2, 'c');\n");
    int rc = run(path, ".mode list\nSELECT name\n  FROM t /* ; */\n  ORDER BY id;\n");
    unlink(path);
    CHECK_INT(rc, 0);
    CHECK_STR(out, "a;b\nc\n");
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
    CHECK_INT(run("no-such-file.sql", ""), 1);
    CHECK_INT(run("--bogus", ""), 2);
}

TEST_MAIN(T(table_mode), T(csv_json_line_list), T(script_then_stdin), T(dot_commands),
          T(error_caret), T(exit_codes))
