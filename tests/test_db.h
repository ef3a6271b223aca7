/*
 * test_db.h - checks on statements run through the public API, shared by
 * every test that drives a database with SQL.
 */
#ifndef LDB_TEST_DB_H
#define LDB_TEST_DB_H

#include "livedb.h"
#include "test.h"

#include <stdio.h>

/* Runs sql, which must succeed. */
#define EXEC(db, sql)                                                         \
    do {                                                                      \
        int rc_ = ldb_exec((db), (sql), NULL, NULL);                          \
        CHECKF(rc_ == LDB_OK, "%s: %s", (sql), ldb_errmsg(db));               \
    } while (0)

/* Runs sql, which must fail with code. */
#define CHECK_FAILS(db, sql, code)                                            \
    do {                                                                      \
        int rc_ = ldb_exec((db), (sql), NULL, NULL);                          \
        CHECKF(rc_ == (code), "%s: rc %d (%s), wanted %d", (sql), rc_,        \
               ldb_errmsg(db), (code));                                       \
    } while (0)

/* Rows as text "a,b;c,d" (ldb_row_format), for CHECK_STR. */
struct test_rows {
    char buf[4096];
    size_t len;
};

static inline int test_rows_append(void *ctx, const ldb_row *r)
{
    struct test_rows *t = ctx;
    for (int i = 0; i < ldb_row_columns(r); i++) {
        char v[256];
        ldb_row_format(r, i, v, sizeof v);
        t->len += (size_t)snprintf(t->buf + t->len, sizeof t->buf - t->len, "%s%s",
                                   i ? "," : (t->len ? ";" : ""), v);
    }
    return 0;
}

/* The rows of sql (which should order them); valid until the next call. */
static inline const char *sql_rows(ldb *db, const char *sql)
{
    static struct test_rows t;
    t.len = 0;
    t.buf[0] = 0;
    int rc = ldb_exec(db, sql, test_rows_append, &t);
    CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    return t.buf;
}

#endif
