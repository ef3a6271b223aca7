/*
 * fuzz_sql.c - libFuzzer target: arbitrary bytes run as SQL statements on
 * a fresh database holding a few tables, indexes and rows (NULLs,
 * duplicates, every column type). It looks for crashes, sanitizer errors,
 * leaks and hangs in everything from the lexer to the executor; any error
 * code is a fine answer. Each result row is read through every row
 * accessor, so that the values handed out are touched too. The input's
 * first statement is then opened as a live query (its child live results
 * followed and read), a few writes go through it, and it is read again:
 * the incremental layer and the LIVE (query) facade get the same inputs.
 * A progress handler bounds the work of that part.
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

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q;
    for (size_t i = 0; i < n; i++) {
        on_row(ctx, c[i].key);
        if (c[i].before)
            on_row(ctx, c[i].before);
        if (!c[i].after)
            continue;
        on_row(ctx, c[i].after);
        for (int j = 0; j < ldb_row_columns(c[i].after); j++) {
            ldb_live *h = ldb_row_live(c[i].after, j);
            if (!h)
                continue;
            (void)ldb_live_set_callback(h, on_change, ctx);
            (void)ldb_live_read(h, on_row, ctx);
            (void)ldb_live_count(h);
            (void)ldb_live_column_name(h, 0);
        }
    }
}

/* Stops the live part after a bounded amount of work. */
static int out_of_steps(void *ctx)
{
    return --*(long *)ctx < 0;
}

static void run_live(ldb *db, const char *sql, budget *b)
{
    long steps = 20000;
    ldb_progress_handler(db, 64, out_of_steps, &steps);
    ldb_live *q = NULL;
    if (ldb_live_open(db, sql, on_change, b, &q) == LDB_OK && q) {
        (void)ldb_exec(db, "UPDATE t1 SET b = b || 'x' WHERE a = 2;"
                           "DELETE FROM t2 WHERE z = 3;"
                           "INSERT INTO t2 VALUES (1, 'n', 7), (2, 'two', 8);"
                           "UPDATE t2 SET x = 5 WHERE z = 1", NULL, NULL);
        (void)ldb_live_read(q, on_row, b);
        ldb_live_close(q);
    }
    ldb_progress_handler(db, 0, NULL, NULL);
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
    b.rows = 0;
    run_live(db, sql, &b);
    free(sql);
    ldb_close(db);
    return 0;
}
