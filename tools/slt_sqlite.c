/*
 * slt_sqlite.c - the SQLite engine for the sqllogictest runner. It exists
 * to validate the runner: the corpus's expected results were produced by
 * SQLite, so on this engine the runner must reproduce the reference
 * figures of the corpus README. Statements run as sqlite3_exec runs them
 * (every ';'-separated statement); a query is the first statement of its
 * text, stepped to the end. A query limit is a deadline set when each
 * query starts and checked by the progress handler, as on livedb.
 */
#include "slt.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

/* The engine's database: the connection and the query limit's state. */
typedef struct sq_db {
    sqlite3 *db;
    double limit;    /* seconds per query; 0: none */
    double deadline; /* of the running query, slt_now()'s clock */
} sq_db;

/* Virtual machine instructions between two looks at the clock. */
#define CLOCK_EVERY 10000

static int past_deadline(void *ctx)
{
    const sq_db *d = ctx;
    return slt_now() > d->deadline;
}

static void *sq_open(slt_msg *msg)
{
    sq_db *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(msg->text, sizeof msg->text, "out of memory");
        return NULL;
    }
    if (sqlite3_open(":memory:", &d->db) != SQLITE_OK) {
        snprintf(msg->text, sizeof msg->text, "%s", sqlite3_errmsg(d->db));
        sqlite3_close(d->db);
        free(d);
        return NULL;
    }
    return d;
}

static void sq_close(void *vd)
{
    sq_db *d = vd;
    sqlite3_close(d->db);
    free(d);
}

static void sq_limit(void *vd, double seconds)
{
    sq_db *d = vd;
    d->limit = seconds;
    sqlite3_progress_handler(d->db, seconds > 0 ? CLOCK_EVERY : 0,
                             seconds > 0 ? past_deadline : NULL, d);
}

static int sq_fail(sqlite3 *db, slt_msg *msg)
{
    snprintf(msg->text, sizeof msg->text, "%s", sqlite3_errmsg(db));
    return SLT_ERROR;
}

static int sq_exec(void *vd, const char *sql, slt_msg *msg)
{
    sq_db *d = vd;
    d->deadline = 1e300; /* statements are not limited */
    if (sqlite3_exec(d->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return sq_fail(d->db, msg);
    return SLT_OK;
}

static void put_column(slt_result *res, sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: slt_put_null(res); break;
    case SQLITE_INTEGER: slt_put_int(res, sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: slt_put_real(res, sqlite3_column_double(st, i)); break;
    default: {
        const char *p = (const char *)sqlite3_column_blob(st, i);
        slt_put_text(res, p ? p : "", (size_t)sqlite3_column_bytes(st, i));
    }
    }
}

static int sq_query(void *vd, const char *sql, slt_result *res, slt_msg *msg)
{
    sq_db *d = vd;
    sqlite3 *db = d->db;
    d->deadline = d->limit > 0 ? slt_now() + d->limit : 1e300;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return sq_fail(db, msg);
    if (!st) {
        snprintf(msg->text, sizeof msg->text, "no statement");
        return SLT_ERROR;
    }
    int ncol = sqlite3_column_count(st);
    if (ncol != res->ncol) {
        msg->ncol = ncol;
        sqlite3_finalize(st);
        return SLT_COLUMNS;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        for (int i = 0; i < ncol; i++)
            put_column(res, st, i);
    int out = rc == SQLITE_DONE ? SLT_OK : sq_fail(db, msg);
    sqlite3_finalize(st);
    return out;
}

const slt_engine slt_engine_sqlite = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .exec = sq_exec,
    .query = sq_query,
    .limit = sq_limit,
};
