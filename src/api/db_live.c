/*
 * db_live.c - the public live-query API (ldb_live_*): statements become
 * live queries of the live layer (src/live).
 *
 * A live query keeps its own private prepared statement: its bound plan
 * must stay valid for the query's whole life, whatever the program does
 * with the statement it opened the query from. The query releases that
 * statement when it is closed (live_open's owner).
 */
#include "api/db_internal.h"

#include "live/live.h"

#include <string.h>

static void release_stmt(void *owner) { ldb_finalize(owner); }

/* The live compiler copies a shared body per reference and recurses
 * deeper per node than the executor: bounded here, before it starts. */
static int check_compilable(ldb *db, const struct plan *p)
{
    if (plan_expanded_size(p) > PLAN_EXPANDED_MAX)
        return db_error(db, LDB_ERROR, NULL, -1,
                        "query too complex for a live query: its views and CTEs expand to "
                        "more than %d plan nodes",
                        PLAN_EXPANDED_MAX);
    if (plan_height(p) > PLAN_HEIGHT_MAX)
        return db_error(db, LDB_ERROR, NULL, -1,
                        "query too complex for a live query: its plan is more than %d nodes "
                        "deep",
                        PLAN_HEIGHT_MAX);
    return LDB_OK;
}

int ldb_live_open_stmt(ldb_stmt *s, ldb_change_fn fn, void *ctx, ldb_live **out)
{
    if (!s || !out)
        return LDB_MISUSE;
    *out = NULL;
    ldb *db = s->db;
    db_clear_error(db);
    if (s->ast->stmt->kind != AST_STMT_SELECT)
        return db_error(db, LDB_MISUSE, s->ast, s->ast->stmt->off,
                        "only a SELECT can be opened as a live query");
    ldb_stmt *own;
    int rc = ldb_prepare(db, s->ast->sql, (int)s->ast->sql_len, &own, NULL);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < s->nparams && i < own->nparams; i++) {
        value_release(&own->params[i]);
        own->params[i] = value_copy(&s->params[i]);
    }
    if ((rc = stmt_compile(own))) {
        ldb_finalize(own);
        return rc;
    }
    if ((rc = check_compilable(db, own->bound.u.select))) {
        ldb_finalize(own);
        return rc;
    }
    struct eval_error err;
    memset(&err, 0, sizeof err);
    /* hydration may be stopped (ldb_interrupt): the query is then not opened */
    struct intr *outer = db_run_begin(db);
    rc = db_check_interrupt(db);
    if (rc)
        ldb_finalize(own);
    else
        rc = live_open(db->live, own->bound.u.select, own->params, own->nparams, release_stmt,
                       own, fn, ctx, out, &err);
    db_run_end(db, outer);
    if (rc)
        return db_error(db, rc, NULL, -1, "%s", err.msg[0] ? err.msg : ldb_errstr(rc));
    return LDB_OK;
}

int ldb_live_open(ldb *db, const char *sql, ldb_change_fn fn, void *ctx, ldb_live **out)
{
    if (!db || !sql || !out)
        return LDB_MISUSE;
    *out = NULL;
    ldb_stmt *s;
    const char *tail;
    int rc = ldb_prepare(db, sql, -1, &s, &tail);
    if (rc)
        return rc;
    if (!s)
        return db_error(db, LDB_MISUSE, NULL, -1, "no SELECT to open as a live query");
    rc = ldb_live_open_stmt(s, fn, ctx, out);
    ldb_finalize(s);
    return rc;
}

int ldb_live_set_window(ldb_live *q, int64_t offset, int64_t limit)
{
    if (!q)
        return LDB_MISUSE;
    /* the window's loading is never stopped halfway: the query would be lost */
    struct intr *scope = intr_swap(NULL);
    int rc = live_set_window(q, offset, limit);
    intr_swap(scope);
    return rc;
}

int ldb_live_read(ldb_live *q, ldb_row_fn fn, void *ctx)
{
    return q && fn ? live_read(q, fn, ctx) : LDB_MISUSE;
}

int64_t ldb_live_count(ldb_live *q) { return q ? live_count(q) : 0; }

int ldb_live_column_count(ldb_live *q) { return q ? (int)live_columns(q) : 0; }

const char *ldb_live_column_name(ldb_live *q, int i)
{
    return q && i >= 0 ? live_column_name(q, (uint32_t)i) : NULL;
}

int ldb_live_error(ldb_live *q, const char **msg)
{
    if (!q)
        return LDB_MISUSE;
    return live_error(q, msg);
}

void ldb_live_stats_get(ldb_live *q, ldb_live_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!q)
        return;
    struct live_stats st;
    live_stats(q, &st);
    out->rows_read = st.rows_read;
    out->rows_processed = st.rows_processed;
    out->runs = st.runs;
    out->retained_rows = st.retained_rows;
    out->retained_bytes = st.retained_bytes;
    out->result_rows = st.result_rows;
}

void ldb_live_close(ldb_live *q) { live_close(q); }
