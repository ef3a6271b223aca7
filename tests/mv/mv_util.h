/*
 * mv_util.h - helpers shared by the materialized-view tests: run SQL
 * through the public API, get rows back as text (each value with its
 * type letter, rows sorted, so results compare as multisets), and check a
 * view against its body evaluated from scratch.
 *
 * Results live in static buffers that the next call overwrites.
 */
#ifndef LDB_TEST_MV_UTIL_H
#define LDB_TEST_MV_UTIL_H

#include "livedb.h"
#include "test.h"
#include "test_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MVT_ROWS 4096
#define MVT_ROWLEN 256

/* Rows as text. A result that does not fit (more than MVT_ROWS rows, or
 * a row longer than MVT_ROWLEN) sets overflow and stops the statement:
 * its text would be cut, and two different cut results could compare
 * equal, so mvt_query fails the test instead. Zero the struct before
 * collecting into it. */
struct mvt_rows {
    int n;
    int overflow;
    char r[MVT_ROWS][MVT_ROWLEN];
};

static inline int mvt_collect(void *ctx, const ldb_row *row)
{
    struct mvt_rows *rs = ctx;
    if (rs->n >= MVT_ROWS) {
        rs->overflow = 1;
        return 1;
    }
    char *out = rs->r[rs->n++];
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < ldb_row_columns(row); i++) {
        len += (size_t)snprintf(out + len, MVT_ROWLEN - len, "%s%c:", i ? "|" : "",
                                "NBIRTXAC"[ldb_row_type(row, i)]);
        if (len < MVT_ROWLEN)
            len += ldb_row_format(row, i, out + len, MVT_ROWLEN - len);
        if (len >= MVT_ROWLEN) {
            rs->overflow = 1;
            return 1;
        }
    }
    return 0;
}

static inline int mvt_cmp(const void *a, const void *b) { return strcmp(a, b); }

/* The rows of sql, sorted, joined by newlines (a static buffer), or
 * "error: ..." with the code in *rc. A result too large for the buffers
 * fails the test (see struct mvt_rows). */
static inline const char *mvt_query(ldb *db, const char *sql, int *rc)
{
    static struct mvt_rows rows;
    static char text[MVT_ROWS * 32];
    rows.n = 0;
    rows.overflow = 0;
    int code = ldb_exec(db, sql, mvt_collect, &rows);
    CHECKF(!rows.overflow, "%s: the result does not fit the test's buffers (%d rows of at "
           "most %d bytes)", sql, MVT_ROWS, MVT_ROWLEN);
    if (rc)
        *rc = code;
    if (code != LDB_OK) {
        snprintf(text, sizeof text, "error: %s", ldb_errmsg(db));
        return text;
    }
    qsort(rows.r, (size_t)rows.n, MVT_ROWLEN, mvt_cmp);
    size_t len = 0;
    text[0] = '\0';
    for (int i = 0; i < rows.n; i++) {
        size_t need = strlen(rows.r[i]) + 1;
        CHECKF(len + need < sizeof text, "%s: the result does not fit the test's buffer (%zu "
               "bytes)", sql, sizeof text);
        len += (size_t)snprintf(text + len, sizeof text - len, "%s\n", rows.r[i]);
    }
    return text;
}

#define Q(db, sql) mvt_query((db), (sql), NULL)
#define CHECK_ROWS(db, sql, rows) CHECK_STR(Q(db, sql), rows)

/* The statement fails and its message contains part. */
#define CHECK_ERROR(db, sql, part)                                            \
    do {                                                                      \
        int rc_ = ldb_exec((db), (sql), NULL, NULL);                          \
        CHECKF(rc_ != LDB_OK && strstr(ldb_errmsg(db), (part)),               \
               "%s: rc %d, message '%s', wanted '%s'", (sql), rc_,            \
               ldb_errmsg(db), (part));                                       \
    } while (0)

/* SELECT * FROM view equals body from scratch, byte for byte. */
static inline void mvt_check_view(ldb *db, const char *view, const char *body)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", view);
    static char want[MVT_ROWS * 32];
    snprintf(want, sizeof want, "%s", Q(db, body));
    const char *got = Q(db, sql);
    CHECKF(strcmp(want, got) == 0, "view %s\n  body: %s\n  view: %s", view, want, got);
}

/* The strategy EXPLAIN MATERIALIZED VIEW names. */
static inline const char *mvt_strategy(ldb *db, const char *view)
{
    ldb_mv_stats st;
    return ldb_mv_stats_get(db, view, &st) == LDB_OK ? st.strategy : "(none)";
}

static inline ldb_mv_stats mvt_stats(ldb *db, const char *view)
{
    ldb_mv_stats st;
    CHECKF(ldb_mv_stats_get(db, view, &st) == LDB_OK, "no view %s", view);
    return st;
}

#endif
