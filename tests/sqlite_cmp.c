/*
 * sqlite_cmp.c - the common text form of livedb's and SQLite's results
 * (sqlite_cmp.h).
 */
#include "sqlite_cmp.h"

#include "base/mem.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>

void cmp_result_free(cmp_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        mem_free(r->rows[i]);
    mem_free(r->rows);
    memset(r, 0, sizeof *r);
}

void cmp_result_add(cmp_result *r, strbuf *row)
{
    CHECK(!sb_error(row));
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->rows = mem_realloc(r->rows, r->cap * sizeof *r->rows);
        CHECK(r->rows);
    }
    r->rows[r->n] = sb_take(row, NULL);
    CHECK(r->rows[r->n]);
    r->n++;
}

void cmp_put_real(strbuf *sb, double v)
{
    if (isnan(v))
        v = INFINITY;
    sb_printf(sb, "r:%.17g", v == 0 ? 0.0 : v);
}

void cmp_put_sqlite_value(strbuf *sb, sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: sb_puts(sb, "n"); break;
    case SQLITE_INTEGER: sb_printf(sb, "i:%lld", (long long)sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: cmp_put_real(sb, sqlite3_column_double(st, i)); break;
    default: {
        const unsigned char *text = sqlite3_column_text(st, i); /* before _bytes */
        sb_puts(sb, "t:");
        sb_put(sb, text, (size_t)sqlite3_column_bytes(st, i));
    }
    }
}

void cmp_put_livedb_value(strbuf *sb, const ldb_row *row, int i)
{
    size_t len = 0;
    const char *text;
    switch (ldb_row_type(row, i)) {
    case LDB_NULL: sb_puts(sb, "n"); break;
    case LDB_BOOLEAN:
    case LDB_INTEGER: sb_printf(sb, "i:%lld", (long long)ldb_row_int64(row, i)); break;
    case LDB_REAL: cmp_put_real(sb, ldb_row_double(row, i)); break;
    default:
        text = ldb_row_text(row, i, &len);
        sb_puts(sb, "t:");
        sb_put(sb, text ? text : "", text ? len : 0);
        break;
    }
}

void cmp_put_livedb_row(strbuf *sb, const ldb_row *row)
{
    for (int i = 0; i < ldb_row_columns(row); i++) {
        sb_puts(sb, i ? "|" : "");
        cmp_put_livedb_value(sb, row, i);
    }
}

void cmp_step_sqlite(sqlite3 *db, sqlite3_stmt *st, cmp_result *r)
{
    memset(r, 0, sizeof *r);
    int rc, ncol = sqlite3_column_count(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        strbuf row = STRBUF_INIT;
        for (int i = 0; i < ncol; i++) {
            sb_puts(&row, i ? "|" : "");
            cmp_put_sqlite_value(&row, st, i);
        }
        cmp_result_add(r, &row);
    }
    r->ok = rc == SQLITE_DONE;
    if (!r->ok)
        snprintf(r->msg, sizeof r->msg, "%s", sqlite3_errmsg(db));
}

void cmp_run_sqlite(sqlite3 *db, const char *sql, cmp_result *r)
{
    sqlite3_stmt *st;
    memset(r, 0, sizeof *r);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(r->msg, sizeof r->msg, "%s", sqlite3_errmsg(db));
        return;
    }
    cmp_step_sqlite(db, st, r);
    sqlite3_finalize(st);
}

void cmp_run_livedb(ldb *db, const char *sql, cmp_result *r)
{
    ldb_stmt *st;
    memset(r, 0, sizeof *r);
    int rc = ldb_prepare(db, sql, -1, &st, NULL);
    if (rc != LDB_OK || !st) {
        snprintf(r->msg, sizeof r->msg, "%s", ldb_errmsg(db));
        r->unsupported = rc == LDB_UNSUPPORTED;
        return;
    }
    while ((rc = ldb_step(st)) == LDB_ROW) {
        strbuf s = STRBUF_INIT;
        cmp_put_livedb_row(&s, ldb_stmt_row(st));
        cmp_result_add(r, &s);
    }
    r->ok = rc == LDB_DONE;
    if (!r->ok) {
        snprintf(r->msg, sizeof r->msg, "%s", ldb_errmsg(db));
        r->unsupported = rc == LDB_UNSUPPORTED;
    }
    ldb_finalize(st);
}

int cmp_rows(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool cmp_same_rows(cmp_result *a, cmp_result *b, bool ordered)
{
    if (a->n != b->n)
        return false;
    if (!ordered && a->n > 1) {
        qsort(a->rows, a->n, sizeof *a->rows, cmp_rows);
        qsort(b->rows, b->n, sizeof *b->rows, cmp_rows);
    }
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->rows[i], b->rows[i]) != 0)
            return false;
    return true;
}
