/*
 * test_sql_util.h - helpers shared by the SQL engine tests: run SQL
 * through the public API and get its rows back as one string ("a|b\n"
 * per row, values in ldb_row_format's text form), or its error.
 *
 * The result lives in a static buffer that the next call overwrites.
 */
#ifndef LDB_TEST_SQL_UTIL_H
#define LDB_TEST_SQL_UTIL_H

#include "livedb.h"
#include "test.h"
#include "test_db.h"

#include <stdio.h>
#include <string.h>

static char sqlt_buf[1 << 16];
static size_t sqlt_len;

static void sqlt_put(const char *s)
{
    size_t n = strlen(s);
    if (sqlt_len + n + 1 < sizeof sqlt_buf) {
        memcpy(sqlt_buf + sqlt_len, s, n + 1);
        sqlt_len += n;
    }
}

static int sqlt_row(void *ctx, const ldb_row *r)
{
    (void)ctx;
    for (int i = 0; i < ldb_row_columns(r); i++) {
        char v[512];
        ldb_row_format(r, i, v, sizeof v);
        if (i)
            sqlt_put("|");
        sqlt_put(v);
    }
    sqlt_put("\n");
    return 0;
}

/* Rows of sql, or "error: <message>" (with the code in *rc if rc). */
static const char *sqlt_query(ldb *db, const char *sql, int *rc_out)
{
    sqlt_len = 0;
    sqlt_buf[0] = '\0';
    int rc = ldb_exec(db, sql, sqlt_row, NULL);
    if (rc_out)
        *rc_out = rc;
    if (rc != LDB_OK) {
        sqlt_len = 0;
        sqlt_put("error: ");
        sqlt_put(ldb_errmsg(db));
    }
    return sqlt_buf;
}

/* The rows of a query that must succeed, as one string. */
#define Q(db, sql) sqlt_query((db), (sql), NULL)

/* Checks that sql gives exactly these rows ("" for none). */
#define CHECK_ROWS(db, sql, rows) CHECK_STR(Q(db, sql), rows)

/* Checks the error message of a failing statement. */
#define CHECK_ERROR(db, sql, msg)                                             \
    do {                                                                      \
        int rc_ = ldb_exec((db), (sql), NULL, NULL);                          \
        CHECKF(rc_ != LDB_OK, "%s: succeeded", (sql));                        \
        CHECK_STR(ldb_errmsg(db), msg);                                       \
    } while (0)

static ldb *sqlt_open(void)
{
    ldb *db = NULL;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    return db;
}

#endif
