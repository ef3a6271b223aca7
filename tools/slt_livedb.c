/*
 * slt_livedb.c - the livedb engine for the sqllogictest runner, through
 * the public API only (include/livedb.h). Statements run with ldb_exec
 * (every ';'-separated statement, stopping at the first error); a query is
 * prepared and stepped. LDB_UNSUPPORTED ("valid SQL that livedb does not
 * support") becomes SLT_UNSUPPORTED, which the runner counts as skipped
 * with its reason, never as passed. A query limit is a deadline set when
 * each query starts and checked by the progress handler, so a runaway
 * plan stops with "interrupted" soon after it (not while it plans).
 */
#include "slt.h"

#include "livedb.h"

#include <stdio.h>
#include <stdlib.h>

/* The engine's database: the handle and the query limit's state. */
typedef struct ld_db {
    ldb *db;
    double limit;    /* seconds per query; 0: none */
    double deadline; /* of the running query, CLOCK_MONOTONIC seconds */
} ld_db;

/* Work units between two looks at the clock: a few microseconds. */
#define CLOCK_EVERY 1000

static int past_deadline(void *ctx)
{
    const ld_db *d = ctx;
    return slt_now() > d->deadline;
}

static void *ld_open(slt_msg *msg)
{
    ld_db *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(msg->text, sizeof msg->text, "out of memory");
        return NULL;
    }
    int rc = ldb_open(NULL, &d->db);
    if (rc != LDB_OK) {
        snprintf(msg->text, sizeof msg->text, "%s", ldb_errstr(rc));
        free(d);
        return NULL;
    }
    return d;
}

static void ld_close(void *vd)
{
    ld_db *d = vd;
    ldb_close(d->db);
    free(d);
}

static void ld_limit(void *vd, double seconds)
{
    ld_db *d = vd;
    d->limit = seconds;
    ldb_progress_handler(d->db, seconds > 0 ? CLOCK_EVERY : 0, past_deadline, d);
}

static int ld_fail(ldb *db, int rc, slt_msg *msg)
{
    snprintf(msg->text, sizeof msg->text, "%s", ldb_errmsg(db));
    return rc == LDB_UNSUPPORTED ? SLT_UNSUPPORTED : SLT_ERROR;
}

static int ld_exec(void *vd, const char *sql, slt_msg *msg)
{
    ld_db *d = vd;
    /* Statements are not limited: the deadline is the last query's. */
    d->deadline = 1e300;
    int rc = ldb_exec(d->db, sql, NULL, NULL);
    return rc == LDB_OK ? SLT_OK : ld_fail(d->db, rc, msg);
}

static void put_column(slt_result *res, const ldb_row *row, int i)
{
    size_t n;
    const char *p;
    switch (ldb_row_type(row, i)) {
    case LDB_NULL: slt_put_null(res); break;
    case LDB_BOOLEAN:
    case LDB_INTEGER: slt_put_int(res, ldb_row_int64(row, i)); break;
    case LDB_REAL: slt_put_real(res, ldb_row_double(row, i)); break;
    case LDB_TEXT:
    case LDB_BLOB:
        p = ldb_row_text(row, i, &n);
        slt_put_text(res, p ? p : "", p ? n : 0);
        break;
    default: {
        /* ARRAY and RECORD: livedb's text form (no SQLite counterpart). */
        char buf[256];
        size_t len = ldb_row_format(row, i, buf, sizeof buf);
        slt_put_text(res, buf, len < sizeof buf ? len : sizeof buf - 1);
    }
    }
}

static int ld_query(void *vd, const char *sql, slt_result *res, slt_msg *msg)
{
    ld_db *d = vd;
    ldb *db = d->db;
    d->deadline = d->limit > 0 ? slt_now() + d->limit : 1e300;
    ldb_stmt *st;
    int rc = ldb_prepare(db, sql, -1, &st, NULL);
    if (rc != LDB_OK)
        return ld_fail(db, rc, msg);
    if (!st) {
        snprintf(msg->text, sizeof msg->text, "no statement");
        return SLT_ERROR;
    }
    int ncol = ldb_column_count(st);
    if (ncol != res->ncol) {
        msg->ncol = ncol;
        ldb_finalize(st);
        return SLT_COLUMNS;
    }
    while ((rc = ldb_step(st)) == LDB_ROW) {
        const ldb_row *row = ldb_stmt_row(st);
        for (int i = 0; i < ncol; i++)
            put_column(res, row, i);
    }
    int out = rc == LDB_DONE ? SLT_OK : ld_fail(db, rc, msg);
    ldb_finalize(st);
    return out;
}

const slt_engine slt_engine_livedb = {
    .name = "livedb",
    .open = ld_open,
    .close = ld_close,
    .exec = ld_exec,
    .query = ld_query,
    .limit = ld_limit,
};
