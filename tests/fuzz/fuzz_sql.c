/*
 * fuzz_sql.c - libFuzzer target: arbitrary bytes run as SQL statements on
 * a fresh database holding a few tables, indexes and rows (NULLs,
 * duplicates, every column type). It looks for crashes, sanitizer errors,
 * leaks and hangs in everything from the lexer to the executor; any error
 * code is a fine answer. Each result row is read through every row
 * accessor, so that the values handed out are touched too.
 *
 * Built by `make fuzz` (clang, -fsanitize=fuzzer,address,undefined) as
 * build/fuzz/fuzz_sql; `make fuzz-ci` replays tests/fuzz/corpus and fuzzes
 * for a minute. A crash found is saved by libFuzzer as build/fuzz/crash-*;
 * add it to tests/fuzz/corpus/ once fixed, as a regression input.
 */
#include "livedb.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Rows read per input before the callback stops the statement: bounds the
 * time spent printing a huge join, not the engine's work. */
#define MAX_ROWS 20000

static const char setup[] =
    "CREATE TABLE t1(a INTEGER PRIMARY KEY, b TEXT, c REAL);"
    "CREATE TABLE t2(x INTEGER, y TEXT, z INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE t3(k TEXT PRIMARY KEY, v BLOB);"
    "CREATE INDEX t1b ON t1(b);"
    "CREATE INDEX t2xy ON t2(x, y);"
    "INSERT INTO t1 VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, NULL, -0.0),"
    " (4, 'two', 1e300), (5, '', 2.5);"
    "INSERT INTO t2 VALUES (1, 'a', 1), (1, 'a', 2), (NULL, 'b', 3), (3, NULL, 4),"
    " (9223372036854775807, 'max', 5);"
    "INSERT INTO t3 VALUES ('k1', x'00ff'), ('k2', NULL);";

typedef struct budget {
    long rows;
} budget;

/* Reads a nested value whole, one past the end at every level too. */
static void walk_value(const ldb_value *v, int depth)
{
    char buf[64];
    size_t len;
    (void)ldb_value_int64(v);
    (void)ldb_value_double(v);
    (void)ldb_value_text(v, &len);
    (void)ldb_value_format(v, buf, sizeof buf);
    int t = ldb_value_type(v);
    int n = t == LDB_ARRAY || t == LDB_RECORD ? ldb_value_length(v) : 0;
    for (int i = 0; i <= n && depth < 64; i++) {
        (void)ldb_value_field_name(v, i, &len);
        walk_value(ldb_value_item(v, i), depth + 1);
    }
}

static int on_row(void *ctx, const ldb_row *row)
{
    budget *b = ctx;
    char buf[64];
    size_t len;
    int n = ldb_row_columns(row);
    for (int i = 0; i <= n; i++) { /* i == n: one past the end */
        (void)ldb_row_type(row, i);
        (void)ldb_row_int64(row, i);
        (void)ldb_row_double(row, i);
        (void)ldb_row_text(row, i, &len);
        (void)ldb_row_format(row, i, buf, sizeof buf);
        walk_value(ldb_row_value(row, i), 0);
    }
    return ++b->rows >= MAX_ROWS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ldb *db;
    if (ldb_open(NULL, &db) != LDB_OK)
        abort();
    if (ldb_exec(db, setup, NULL, NULL) != LDB_OK)
        abort();
    char *sql = malloc(size + 1);
    if (!sql)
        abort();
    memcpy(sql, data, size);
    sql[size] = 0;
    budget b = { 0 };
    (void)ldb_exec(db, sql, on_row, &b);
    (void)ldb_errmsg(db);
    (void)ldb_error_offset(db);
    free(sql);
    ldb_close(db);
    return 0;
}
