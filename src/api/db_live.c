/*
 * db_live.c - the public live-query API (ldb_live_*): statements become
 * live queries of the live layer (src/live).
 *
 * A live query keeps its own private prepared statement: its bound plan
 * must stay valid for the query's whole life, whatever the program does
 * with the statement it opened the query from. The query releases that
 * statement when it is closed (live_open's owner), and reaches its
 * database through it.
 *
 * Every function that returns a result code records it on the database
 * (ldb_errcode, ldb_errmsg) with a message saying why, and clears it on
 * success; a NULL handle gives LDB_MISUSE with nothing to record it on.
 */
#include "api/db_internal.h"

#include "live/live.h"
#include "source/source.h"

#include <string.h>

static void release_stmt(void *owner) { ldb_finalize(owner); }

/* The database of q (root or child). */
static ldb *query_db(ldb_live *q) { return live_db(q); }

/* An error of the live layer; with ast (the query's text), at its offset
 * when it has one, as a one-shot statement reports it. */
static int live_failed(ldb *db, const sql_ast *ast, int rc, const struct eval_error *err)
{
    return db_error(db, rc, ast, ast && err->has_off ? (int64_t)err->off : -1, "%s",
                    err->msg[0] ? err->msg : ldb_errstr(rc));
}

/* The live compiler recurses deeper per node than the executor: bounded
 * here, before it starts (its size is bounded by the compiler). */
static int check_compilable(ldb *db, const struct plan *p)
{
    if (plan_height(p) > PLAN_HEIGHT_MAX)
        return db_error(db, LDB_ERROR, NULL, -1,
                        "query too complex for a live query: its plan is more than %d nodes "
                        "deep",
                        PLAN_HEIGHT_MAX);
    return LDB_OK;
}

static int open_stmt(ldb_stmt *s, ldb_change_fn fn, void *ctx, ldb_live **out)
{
    ldb *db = s->db;
    db_clear_error(db);
    if (!out)
        return db_error(db, LDB_MISUSE, NULL, -1, "ldb_live_open: out is NULL");
    *out = NULL;
    if (s->ast->stmt->kind != AST_STMT_SELECT)
        return db_error(db, LDB_MISUSE, s->ast, s->ast->stmt->off,
                        "only a SELECT can be opened as a live query");
    if (src_in_provider(db->src))
        return db_error(db, LDB_MISUSE, NULL, -1,
                        "a live query cannot be opened from inside a source provider callback");
    if (db_mutation_refusal(db))
        return db_error(db, LDB_MISUSE, NULL, -1, "ldb_live_open: %s", db_mutation_refusal(db));
    ldb_stmt *own;
    int rc = db_prepare_live(db, s->ast->sql, (int)s->ast->sql_len, &own, NULL);
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
    bool ordered = own->ast->stmt->u.select->order_by.n > 0;
    /* hydration may be stopped (ldb_interrupt): the query is then not opened */
    struct intr *outer = db_run_begin(db);
    rc = db_check_interrupt(db);
    if (rc)
        ldb_finalize(own);
    else
        rc = live_open(db->live, own->bound.u.select, ordered, own->params, own->nparams,
                       release_stmt, own, fn, ctx, out, &err);
    db_run_end(db, outer);
    return rc ? live_failed(db, s->ast, rc, &err) : LDB_OK;
}

int ldb_live_open_stmt(ldb_stmt *s, ldb_change_fn fn, void *ctx, ldb_live **out)
{
    if (!s)
        return LDB_MISUSE;
    db_lock(s->db);
    int rc = open_stmt(s, fn, ctx, out);
    db_unlock(s->db);
    return rc;
}

static int open_sql(ldb *db, const char *sql, ldb_change_fn fn, void *ctx, ldb_live **out)
{
    db_clear_error(db);
    if (!sql || !out)
        return db_error(db, LDB_MISUSE, NULL, -1, "ldb_live_open: %s is NULL",
                        !sql ? "the SQL" : "out");
    *out = NULL;
    ldb_stmt *s;
    const char *tail;
    int rc = db_prepare_live(db, sql, -1, &s, &tail);
    if (rc)
        return rc;
    if (!s)
        return db_error(db, LDB_MISUSE, NULL, -1, "no SELECT to open as a live query");
    rc = open_stmt(s, fn, ctx, out);
    ldb_finalize(s);
    return rc;
}

int ldb_live_open(ldb *db, const char *sql, ldb_change_fn fn, void *ctx, ldb_live **out)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    int rc = open_sql(db, sql, fn, ctx, out);
    db_unlock(db);
    return rc;
}

static int set_window(ldb_live *q, int64_t offset, int64_t limit)
{
    ldb *db = query_db(q);
    db_clear_error(db);
    if (src_in_provider(db->src))
        return db_error(db, LDB_MISUSE, NULL, -1,
                        "a window cannot move from inside a source provider callback");
    if (db_mutation_refusal(db))
        return db_error(db, LDB_MISUSE, NULL, -1, "ldb_live_set_window: %s",
                        db_mutation_refusal(db));
    struct eval_error err;
    memset(&err, 0, sizeof err);
    /* the window's loading is never stopped halfway: the query would be lost */
    struct intr *scope = intr_swap(NULL);
    int rc = live_set_window(q, offset, limit, &err);
    intr_swap(scope);
    return rc ? live_failed(db, NULL, rc, &err) : LDB_OK;
}

int ldb_live_set_window(ldb_live *q, int64_t offset, int64_t limit)
{
    if (!q)
        return LDB_MISUSE;
    ldb *db = query_db(q);
    db_lock(db);
    int rc = set_window(q, offset, limit);
    db_unlock(db);
    return rc;
}

static int read_rows(ldb_live *q, ldb_row_fn fn, void *ctx)
{
    ldb *db = query_db(q);
    db_clear_error(db);
    if (!fn)
        return db_error(db, LDB_MISUSE, NULL, -1, "ldb_live_read: the row function is NULL");
    int rc = live_read(q, fn, ctx);
    if (rc == LDB_ABORT)
        return db_error(db, rc, NULL, -1, "the row callback asked to stop");
    return rc ? db_error(db, rc, NULL, -1, "%s", ldb_errstr(rc)) : LDB_OK;
}

int ldb_live_read(ldb_live *q, ldb_row_fn fn, void *ctx)
{
    if (!q)
        return LDB_MISUSE;
    ldb *db = query_db(q);
    db_lock(db);
    int rc = read_rows(q, fn, ctx);
    db_unlock(db);
    return rc;
}

int64_t ldb_live_count(ldb_live *q)
{
    if (!q)
        return 0;
    db_lock(query_db(q));
    int64_t n = live_count(q);
    db_unlock(query_db(q));
    return n;
}

int ldb_live_column_count(ldb_live *q)
{
    if (!q)
        return 0;
    db_lock(query_db(q));
    int n = (int)live_columns(q);
    db_unlock(query_db(q));
    return n;
}

const char *ldb_live_column_name(ldb_live *q, int i)
{
    if (!q || i < 0)
        return NULL;
    db_lock(query_db(q));
    const char *name = live_column_name(q, (uint32_t)i);
    db_unlock(query_db(q));
    return name;
}

int ldb_live_error(ldb_live *q, const char **msg)
{
    if (msg)
        *msg = NULL;
    if (!q)
        return LDB_MISUSE;
    db_lock(query_db(q));
    int rc = live_error(q, msg);
    db_unlock(query_db(q));
    return rc;
}

void ldb_live_stats_get(ldb_live *q, ldb_live_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!q)
        return;
    struct live_stats st;
    db_lock(query_db(q));
    live_stats(q, &st);
    db_unlock(query_db(q));
    out->rows_read = st.rows_read;
    out->rows_processed = st.rows_processed;
    out->runs = st.runs;
    out->retained_rows = st.retained_rows;
    out->retained_bytes = st.retained_bytes;
    out->result_rows = st.result_rows;
    out->child_results = st.child_results;
}

void ldb_live_close(ldb_live *q)
{
    if (!q)
        return;
    ldb *db = query_db(q); /* q and its statement may be freed by the close */
    db_lock(db);
    if (src_in_provider(db->src)) /* its demand is what the provider serves now */
        db_error(db, LDB_MISUSE, NULL, -1,
                 "a live query cannot be closed from inside a source provider callback");
    else
        live_close(q);
    db_unlock(db);
}

ldb_live *ldb_row_live(const ldb_row *r, int i)
{
    if (!r || i < 0 || (uint32_t)i >= r->n)
        return NULL;
    return live_cell_handle(&r->vals[i]);
}

int64_t ldb_live_id(ldb_live *q)
{
    if (!q)
        return 0;
    ldb *db = query_db(q);
    db_lock(db);
    int64_t id = (int64_t)live_child_id(q);
    db_unlock(db);
    return id;
}

int ldb_live_set_callback(ldb_live *q, ldb_change_fn fn, void *ctx)
{
    if (!q)
        return LDB_MISUSE;
    ldb *db = query_db(q);
    db_lock(db);
    live_set_callback(q, fn, ctx);
    db_unlock(db);
    return LDB_OK;
}

/* Retain or release, with ldb_errmsg saying why a misuse is one. */
static int hold(ldb_live *q, bool retain)
{
    if (!q)
        return LDB_MISUSE;
    ldb *db = query_db(q);
    db_lock(db);
    db_clear_error(db);
    int rc = retain ? live_retain(q) : live_release(q);
    if (rc)
        rc = db_error(db, rc, NULL, -1, "%s",
                      !live_is_child(q) ? "only a child live result (LIVE (query)) is retained; "
                                          "a query is closed by whoever opened it"
                                        : "ldb_live_release of a child live result that was not "
                                          "retained");
    db_unlock(db);
    return rc;
}

int ldb_live_retain(ldb_live *q) { return hold(q, true); }

int ldb_live_release(ldb_live *q) { return hold(q, false); }
