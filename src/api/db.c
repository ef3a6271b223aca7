/*
 * db.c - the public API's handle and statement machinery: opening and
 * closing a database, error reporting with SQL positions, the row
 * accessors, ldb_exec, and prepare / bind / step / reset / finalize.
 *
 * Invariants:
 * - db->errcode/errmsg describe the last API call on db that failed, and
 *   are cleared by the calls that succeed (sqlite3 conventions).
 * - A statement is READY (before its first step), RUNNING (rows pending)
 *   or DONE. Its compiled form is valid for the schema version it was
 *   built for; a step on a stale form rebinds it first.
 * - Every write happens between db_write_begin and db_write_end, so a
 *   failing statement (NOMEM included) leaves the database as it was.
 * - Live query callbacks run inside the ldb_step whose statement
 *   committed (the store publishes as the commit completes): while a
 *   statement is being stepped it cannot be stepped, reset, rebound or
 *   finalized (busy(), LDB_MISUSE), since the step still uses it.
 * - db->nactive counts the calls running SQL (db_run_begin/end) plus the
 *   RUNNING statements; the interrupt flag is cleared whenever it is 0,
 *   so an interrupt stops what runs now and nothing after it.
 */
#include "api/db_internal.h"

#include "live/live.h"
#include "source/source.h"
#include "mv/mv.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/sqlvalue.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- errors ---------------------------------------------------------------------- */

void db_clear_error(ldb *db)
{
    db->errcode = LDB_OK;
    db->erroff = -1;
    db->errmsg[0] = '\0';
}

int db_error(ldb *db, int code, const sql_ast *ast, int64_t off, const char *fmt, ...)
{
    char msg[sizeof db->errmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    db->errcode = code;
    db->erroff = off >= 0 && off <= INT32_MAX ? (int)off : -1;
    if (ast && db->erroff >= 0 && (uint32_t)off >= ast->sql_off &&
        (uint32_t)off <= ast->sql_off + ast->sql_len) {
        uint32_t line, col;
        sql_ast_locate(ast, (uint32_t)off, &line, &col);
        snprintf(db->errmsg, sizeof db->errmsg, "line %u, column %u: %.*s", line, col,
                 (int)(sizeof db->errmsg - 40), msg);
    } else {
        snprintf(db->errmsg, sizeof db->errmsg, "%s", msg);
    }
    return code;
}

int db_error_from(ldb *db, const sql_ast *ast, const struct eval_error *err)
{
    int code = err->code ? err->code : LDB_INTERNAL;
    const char *msg = err->msg[0] ? err->msg : ldb_errstr(code);
    return db_error(db, code, ast, err->has_off ? (int64_t)err->off : -1, "%s", msg);
}

int ldb_errcode(ldb *db)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    int rc = db->errcode;
    db_unlock(db);
    return rc;
}

/* Why this thread's last ldb_open failed (ldb_errmsg(NULL)). */
static _Thread_local char open_errmsg[512];

const char *ldb_errmsg(ldb *db)
{
    if (!db) /* the thread's last ldb_open: it failed, or it did not */
        return open_errmsg[0] ? open_errmsg : ldb_errstr(LDB_OK);
    db_lock(db);
    const char *msg = db->errcode == LDB_OK ? ldb_errstr(LDB_OK) : db->errmsg;
    db_unlock(db);
    return msg;
}

int ldb_error_offset(ldb *db)
{
    if (!db)
        return -1;
    db_lock(db);
    int off = db->errcode != LDB_OK ? db->erroff : -1;
    db_unlock(db);
    return off;
}

void ldb_lock(ldb *db)
{
    if (db)
        db_lock(db);
}

void ldb_unlock(ldb *db)
{
    if (db)
        db_unlock(db);
}

/* ---- running and interrupting -------------------------------------------------------- */

static void clear_interrupt(ldb *db)
{
    atomic_store_explicit(&db->intr.flag, 0, memory_order_relaxed);
}

struct intr *db_run_begin(ldb *db)
{
    if (db->nactive++ == 0)
        clear_interrupt(db);
    return intr_swap(&db->intr);
}

void db_active_leave(ldb *db)
{
    if (--db->nactive == 0)
        clear_interrupt(db);
}

void db_run_end(ldb *db, struct intr *outer)
{
    db_active_leave(db);
    intr_swap(outer);
}

int db_check_interrupt(ldb *db)
{
    if (!atomic_load_explicit(&db->intr.flag, memory_order_relaxed))
        return LDB_OK;
    return db_error(db, LDB_INTERRUPT, NULL, -1, "%s", ldb_errstr(LDB_INTERRUPT));
}

void ldb_interrupt(ldb *db)
{
    if (db)
        atomic_store_explicit(&db->intr.flag, 1, memory_order_relaxed);
}

void ldb_progress_handler(ldb *db, int n, int (*fn)(void *ctx), void *ctx)
{
    if (!db)
        return;
    db_lock(db);
    intr_set_progress(&db->intr, n, fn, ctx);
    db_unlock(db);
}

/* ---- writes ------------------------------------------------------------------------ */

int db_write_begin(ldb *db)
{
    if (db_mutation_refusal(db))
        return db_error(db, LDB_MISUSE, NULL, -1, "%s", db_mutation_refusal(db));
    if (live_in_callback(db->live))
        return db_error(db, LDB_MISUSE, NULL, -1,
                        "a live query callback cannot write to the database");
    if (src_in_provider(db->src))
        return db_error(db, LDB_MISUSE, NULL, -1,
                        "a source provider callback cannot write to the database with SQL");
    if (db_dormant_refusal(db))
        return db_error(db, LDB_ERROR, NULL, -1, "%s; register it before writing",
                        db_dormant_refusal(db));
    int rc = store_stmt_begin(db->store);
    if (rc) /* e.g. a write from inside a running write: nothing changes */
        return db_error(db, rc, NULL, -1, "%s", store_errmsg(db->store));
    db->epoch++;
    return LDB_OK;
}

int db_write_end(ldb *db, int rc)
{
    struct intr *scope = intr_swap(NULL); /* the hooks' work must not fail halfway */
    int end = store_stmt_end(db->store, rc);
    intr_swap(scope);
    if (end != LDB_OK && rc == LDB_OK)
        return db_error(db, end, NULL, -1, "%s", store_errmsg(db->store));
    return end;
}

/* ---- open and close ---------------------------------------------------------------------- */

/* A recursive mutex: a callback's calls on its own database re-enter it. */
static int mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr))
        return LDB_NOMEM;
    int rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE) ||
             pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc ? LDB_NOMEM : LDB_OK;
}

static int open_failed(int rc, const char *msg)
{
    snprintf(open_errmsg, sizeof open_errmsg, "%s", msg && *msg ? msg : ldb_errstr(rc));
    return rc;
}

static int open_store(const char *path, struct store **out)
{
    if (!path || strcmp(path, ":memory:") == 0)
        return store_open(out) ? open_failed(LDB_NOMEM, "out of memory") : LDB_OK;
    char err[512];
    int rc = store_open_file(path, out, err, sizeof err);
    return rc ? open_failed(rc, err) : LDB_OK;
}

int ldb_open(const char *path, ldb **out)
{
    if (!out)
        return LDB_MISUSE;
    *out = NULL;
    open_errmsg[0] = '\0';
    ldb *db = mem_calloc(1, sizeof *db);
    if (!db)
        return open_failed(LDB_NOMEM, "out of memory");
    int rc = mutex_init(&db->mutex);
    if (rc) {
        mem_free(db);
        return open_failed(rc, "cannot make the database's mutex");
    }
    rc = open_store(path, &db->store);
    if (!rc && (rc = live_registry_new(db->store, db, &db->live)))
        store_close(db->store);
    if (!rc && (rc = mv_registry_new(db->store, &db->funcs, &db->env, &db->mv))) {
        live_registry_free(db->live);
        store_close(db->store);
    }
    if (!rc && (rc = db_sources_open(db))) {
        mv_registry_free(db->mv);
        live_registry_free(db->live);
        store_close(db->store);
    }
    if (rc) {
        pthread_mutex_destroy(&db->mutex);
        mem_free(db);
        return open_errmsg[0] ? rc : open_failed(rc, "out of memory");
    }
    db_clear_error(db);
    intr_init(&db->intr);
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)db;
    db->env.rng[0] = seed | 1;
    db->env.rng[1] = seed * 0x9E3779B97F4A7C15ull + 1;
    if ((rc = db_durable_open(db))) {
        open_failed(rc, db->errmsg);
        store_keep_files(db->store); /* a failed open changes no file */
        ldb_close(db);
        return rc;
    }
    *out = db;
    return LDB_OK;
}

void ldb_close(ldb *db)
{
    if (!db)
        return;
    db_lock(db);
    if (live_in_callback(db->live) || src_in_provider(db->src) || db->in_mutation ||
        db->in_aggregate) {
        /* the callback's caller still uses db */
        db_error(db, LDB_MISUSE, NULL, -1,
                 "ldb_close cannot be called from inside a live query, provider, mutation or "
                 "aggregate callback; the database stays open");
        db_unlock(db);
        return;
    }
    live_registry_free(db->live); /* releases the queries' statements and demand */
    src_registry_free(db->src);   /* then every request and provider */
    db->src = NULL;
    while (db->stmts)
        ldb_finalize(db->stmts);
    mv_registry_free(db->mv); /* before the store frees the backing tables */
    db_funcs_free(db);
    pragma_table_free(&db->pragmas);
    store_close(db->store);
    db_unlock(db);
    pthread_mutex_destroy(&db->mutex);
    mem_free(db);
}

/* ---- rows -------------------------------------------------------------------------------- */

static const value *row_col(const ldb_row *r, int i)
{
    return r && i >= 0 && (uint32_t)i < r->n ? &r->vals[i] : NULL;
}

int ldb_row_columns(const ldb_row *r)
{
    return r ? (int)r->n : 0;
}

int ldb_row_type(const ldb_row *r, int i) { return ldb_value_type(ldb_row_value(r, i)); }

int64_t ldb_row_int64(const ldb_row *r, int i) { return ldb_value_int64(ldb_row_value(r, i)); }

double ldb_row_double(const ldb_row *r, int i) { return ldb_value_double(ldb_row_value(r, i)); }

const char *ldb_row_text(const ldb_row *r, int i, size_t *len)
{
    return ldb_value_text(ldb_row_value(r, i), len);
}

size_t ldb_row_format(const ldb_row *r, int i, char *buf, size_t size)
{
    return ldb_value_format(ldb_row_value(r, i), buf, size);
}

/* ---- values (an ldb_value is a value of a row or inside one) ----------------------------- */

static const value *val(const ldb_value *v) { return (const value *)v; }

const ldb_value *ldb_row_value(const ldb_row *r, int i)
{
    return (const ldb_value *)row_col(r, i);
}

int ldb_value_type(const ldb_value *v)
{
    return v ? (int)value_type(val(v)) : LDB_NULL;
}

int64_t ldb_value_int64(const ldb_value *v)
{
    int64_t n = 0;
    int t = ldb_value_type(v);
    if ((t == LDB_INTEGER || t == LDB_REAL || t == LDB_BOOLEAN || t == LDB_TEXT) &&
        !sqlv_int64(val(v), &n))
        n = 0;
    return n;
}

double ldb_value_double(const ldb_value *v)
{
    int t = ldb_value_type(v);
    if (!(t == LDB_INTEGER || t == LDB_REAL || t == LDB_BOOLEAN || t == LDB_TEXT))
        return 0.0;
    return sqlv_double(val(v));
}

const char *ldb_value_text(const ldb_value *v, size_t *len)
{
    size_t n = 0;
    const char *p = NULL;
    int t = ldb_value_type(v);
    if (t == LDB_TEXT || t == LDB_BLOB)
        p = value_bytes(val(v), &n);
    if (len)
        *len = n;
    return p;
}

size_t ldb_value_format(const ldb_value *v, char *buf, size_t size)
{
    value null = value_null();
    if (ldb_value_type(v) == LDB_LIVE) { /* a child live result: live#<its number> */
        int n = snprintf(buf, size, "live#%llu",
                         (unsigned long long)live_child_id(live_cell_handle(val(v))));
        return n < 0 ? 0 : (size_t)n;
    }
    return value_format_buf(v ? val(v) : &null, buf, size);
}

int ldb_value_length(const ldb_value *v)
{
    size_t n = 0;
    switch (ldb_value_type(v)) {
    case LDB_ARRAY: n = value_len(val(v)); break;
    case LDB_RECORD: n = value_nfields(val(v)); break;
    case LDB_TEXT:
    case LDB_BLOB: value_bytes(val(v), &n); break;
    default: break;
    }
    return (int)n;
}

const ldb_value *ldb_value_item(const ldb_value *v, int i)
{
    if (i < 0 || i >= ldb_value_length(v))
        return NULL;
    if (ldb_value_type(v) == LDB_RECORD)
        return (const ldb_value *)value_field(val(v), (size_t)i);
    return ldb_value_type(v) == LDB_ARRAY ? (const ldb_value *)value_item(val(v), (size_t)i)
                                          : NULL;
}

const char *ldb_value_field_name(const ldb_value *v, int i, size_t *len)
{
    if (len)
        *len = 0;
    if (ldb_value_type(v) != LDB_RECORD || i < 0 || i >= ldb_value_length(v))
        return NULL;
    return ldb_value_text((const ldb_value *)value_field_name(val(v), (size_t)i), len);
}

/* ---- statements ----------------------------------------------------------------------------- */

/* A statement inside its own ldb_step (reached from a live query
 * callback): records the misuse. */
static bool busy(ldb_stmt *s)
{
    if (!s->stepping)
        return false;
    db_error(s->db, LDB_MISUSE, NULL, -1,
             "a statement cannot be stepped, reset, bound or finalized while its own step "
             "runs (from a live query callback)");
    return true;
}

static void stmt_link(ldb *db, ldb_stmt *s)
{
    s->next = db->stmts;
    if (db->stmts)
        db->stmts->prev = s;
    db->stmts = s;
}

static void stmt_unlink(ldb_stmt *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        s->db->stmts = s->next;
    if (s->next)
        s->next->prev = s->prev;
}

/*
 * A SELECT that binds only as a live query (it has LIVE (query) columns)
 * is prepared as one, so that ldb_live_open_stmt can open it; stepping
 * it gives the error it has as a one-shot statement (kept in
 * s->live_only). Any other failure stays the one-shot error.
 */
static int prepare_live_only(ldb_stmt *s)
{
    struct eval_error *why = mem_alloc(sizeof *why);
    if (!why)
        return db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory");
    *why = s->err;
    s->live = true;
    if (stmt_compile(s) != LDB_OK) {
        s->live = false;
        int rc = db_error_from(s->db, s->ast, why);
        mem_free(why);
        return rc;
    }
    db_clear_error(s->db);
    s->live_only = why;
    return LDB_OK;
}

/* A statement over a parsed tree (taken over, also on failure). */
static int stmt_new(ldb *db, sql_ast *ast, bool live, ldb_stmt **out)
{
    ldb_stmt *s = mem_calloc(1, sizeof *s);
    if (s && ast->nparams && !(s->params = mem_calloc(ast->nparams, sizeof *s->params))) {
        mem_free(s);
        s = NULL;
    }
    if (!s) {
        sql_ast_free(ast);
        return db_error(db, LDB_NOMEM, NULL, -1, "out of memory");
    }
    s->db = db;
    s->ast = ast;
    s->nparams = ast->nparams;
    s->live = live;
    plan_arena_init(&s->pa);
    int rc = stmt_compile(s);
    if (rc == LDB_UNSUPPORTED && !live && ast->stmt->kind == AST_STMT_SELECT)
        rc = prepare_live_only(s);
    if (rc) {
        s->db = db;
        stmt_uncompile(s);
        mem_free(s->params);
        sql_ast_free(ast);
        mem_free(s);
        return rc;
    }
    stmt_link(db, s);
    *out = s;
    return LDB_OK;
}

/* A parse error as the API reports it: valid SQL that livedb does not
 * support is LDB_UNSUPPORTED. */
static int parse_failed(ldb *db, int rc, const sql_error *perr)
{
    if (rc == LDB_NOMEM)
        return db_error(db, rc, NULL, -1, "%s", perr->msg);
    return db_error(db, perr->unsupported ? LDB_UNSUPPORTED : rc, NULL, (int64_t)perr->offset,
                    "%s", perr->msg);
}

static int prepare(ldb *db, const char *sql, int nbytes, bool live, ldb_stmt **out,
                   const char **tail)
{
    *out = NULL;
    db_clear_error(db);
    size_t len = nbytes < 0 ? strlen(sql) : (size_t)nbytes;
    sql_cursor cur;
    sql_cursor_init(&cur, sql, len);
    sql_ast *ast;
    sql_error perr;
    int rc = sql_parse_next(&cur, &ast, &perr);
    if (tail)
        *tail = sql + cur.offset;
    if (rc)
        return parse_failed(db, rc, &perr);
    if (!ast)
        return LDB_OK;
    return stmt_new(db, ast, live, out);
}

int db_prepare_live(ldb *db, const char *sql, int nbytes, ldb_stmt **out, const char **tail)
{
    return prepare(db, sql, nbytes, true, out, tail);
}

int ldb_prepare(ldb *db, const char *sql, int nbytes, ldb_stmt **out, const char **tail)
{
    if (!db || !sql || !out)
        return LDB_MISUSE;
    db_lock(db);
    int rc = prepare(db, sql, nbytes, false, out, tail);
    db_unlock(db);
    return rc;
}

static void finalize(ldb_stmt *s)
{
    if (busy(s))
        return;
    stmt_finish(s);
    stmt_uncompile(s);
    stmt_unlink(s);
    for (uint32_t i = 0; i < s->nparams; i++)
        value_release(&s->params[i]);
    mem_free(s->params);
    mem_free(s->live_only);
    sql_ast_free(s->ast);
    mem_free(s);
}

void ldb_finalize(ldb_stmt *s)
{
    if (!s)
        return;
    ldb *db = s->db;
    db_lock(db);
    finalize(s);
    db_unlock(db);
}

int ldb_reset(ldb_stmt *s)
{
    if (!s)
        return LDB_MISUSE;
    db_lock(s->db);
    int rc = busy(s) ? LDB_MISUSE : LDB_OK;
    if (rc == LDB_OK)
        stmt_finish(s);
    db_unlock(s->db);
    return rc;
}

/* One step; the caller marks s as stepping. */
static int step(ldb_stmt *s)
{
    if (s->live_only)
        return db_error_from(s->db, s->ast, s->live_only);
    int rc = db_check_interrupt(s->db);
    if (rc == LDB_OK && s->state == ST_READY && (rc = stmt_start(s)) == LDB_OK) {
        s->state = ST_RUNNING;
        s->db->nactive++;
    }
    if (rc == LDB_OK && (rc = stmt_next(s)) == LDB_ROW)
        return rc;
    stmt_finish(s);
    s->state = ST_DONE;
    return rc;
}

int ldb_step(ldb_stmt *s)
{
    if (!s)
        return LDB_MISUSE;
    ldb *db = s->db;
    db_lock(db);
    if (busy(s)) {
        db_unlock(db);
        return LDB_MISUSE;
    }
    db_clear_error(db);
    if (s->state == ST_DONE)
        stmt_finish(s); /* stepping a finished statement runs it again */
    s->stepping = true;
    struct intr *outer = db_run_begin(db);
    int rc = step(s);
    db_run_end(db, outer);
    s->stepping = false;
    db_unlock(db);
    return rc;
}

/* The three readers of a stepped statement take no lock: their answer is
 * only meaningful to the thread that stepped it (livedb.h "Threads"), and
 * a lock per row read would cost as much again as the step. */
const ldb_row *ldb_stmt_row(ldb_stmt *s)
{
    return s && s->state == ST_RUNNING && s->cur ? &s->row : NULL;
}

int ldb_column_count(ldb_stmt *s)
{
    return s ? (int)s->ncols : 0;
}

const char *ldb_column_name(ldb_stmt *s, int i)
{
    return s && i >= 0 && (uint32_t)i < s->ncols ? s->colnames[i] : NULL;
}

/* ---- parameters ------------------------------------------------------------------------------ */

/* Binds v (taken over, also on failure) as parameter i. */
static int bind_locked(ldb_stmt *s, int i, value v)
{
    if (busy(s)) {
        value_release(&v);
        return LDB_MISUSE;
    }
    if (i < 1 || (uint32_t)i > s->nparams) {
        value_release(&v);
        return db_error(s->db, LDB_RANGE, NULL, -1,
                        "parameter index %d out of range (the statement has %u)", i,
                        s->nparams);
    }
    if (s->state != ST_READY)
        stmt_finish(s); /* binding resets a run, as it must not change it midway */
    value_release(&s->params[i - 1]);
    s->params[i - 1] = v;
    return LDB_OK;
}

static int bind_value(ldb_stmt *s, int i, value v)
{
    if (!s) {
        value_release(&v);
        return LDB_MISUSE;
    }
    db_lock(s->db);
    int rc = bind_locked(s, i, v);
    db_unlock(s->db);
    return rc;
}

int ldb_bind_null(ldb_stmt *s, int i) { return bind_value(s, i, value_null()); }
int ldb_bind_int64(ldb_stmt *s, int i, int64_t v) { return bind_value(s, i, value_int(v)); }
int ldb_bind_double(ldb_stmt *s, int i, double v) { return bind_value(s, i, value_real(v)); }
int ldb_bind_bool(ldb_stmt *s, int i, int v) { return bind_value(s, i, value_bool(v != 0)); }

static int bind_bytes(ldb_stmt *s, int i, const void *p, int n, bool blob)
{
    if (!s || (!p && n != 0))
        return LDB_MISUSE;
    size_t len = n < 0 ? strlen(p) : (size_t)n;
    value v;
    int rc = blob ? value_blob(&v, p, len) : value_text(&v, p, len);
    if (rc) {
        db_lock(s->db);
        db_error(s->db, rc, NULL, -1, "%s", ldb_errstr(rc));
        db_unlock(s->db);
        return rc;
    }
    return bind_value(s, i, v);
}

int ldb_bind_text(ldb_stmt *s, int i, const char *text, int n)
{
    return bind_bytes(s, i, text, n, false);
}

int ldb_bind_blob(ldb_stmt *s, int i, const void *data, int n)
{
    return bind_bytes(s, i, data, n, true);
}

int ldb_bind_parameter_count(ldb_stmt *s)
{
    return s ? (int)s->nparams : 0; /* fixed when s was prepared */
}

int ldb_bind_parameter_index(ldb_stmt *s, const char *name)
{
    if (!s || !name) /* the names are fixed when s was prepared */
        return 0;
    for (uint32_t i = 0; i < s->ast->nparams; i++)
        if (s->ast->param_names[i] && strcmp(s->ast->param_names[i], name) == 0)
            return (int)i + 1;
    return 0;
}

int ldb_clear_bindings(ldb_stmt *s)
{
    if (!s)
        return LDB_MISUSE;
    db_lock(s->db);
    int rc = busy(s) ? LDB_MISUSE : LDB_OK;
    if (rc == LDB_OK) {
        stmt_finish(s);
        for (uint32_t i = 0; i < s->nparams; i++)
            value_release(&s->params[i]);
    }
    db_unlock(s->db);
    return rc;
}

/* ---- ldb_exec -------------------------------------------------------------------------------------- */

static int run_one(ldb_stmt *s, ldb_row_fn fn, void *ctx)
{
    int rc;
    while ((rc = ldb_step(s)) == LDB_ROW) {
        if (fn && fn(ctx, &s->row) != 0) {
            stmt_finish(s);
            return db_error(s->db, LDB_ABORT, NULL, -1, "the row callback asked to stop");
        }
    }
    return rc == LDB_DONE ? LDB_OK : rc;
}

static int exec_script(ldb *db, const char *sql, ldb_row_fn fn, void *ctx)
{
    db_clear_error(db);
    sql_cursor cur;
    sql_cursor_init(&cur, sql, strlen(sql));
    for (;;) {
        sql_ast *ast;
        sql_error perr;
        int rc = sql_parse_next(&cur, &ast, &perr);
        if (rc)
            return parse_failed(db, rc, &perr);
        if (!ast)
            return LDB_OK;
        ldb_stmt *s;
        if ((rc = stmt_new(db, ast, false, &s)))
            return rc;
        rc = run_one(s, fn, ctx);
        ldb_finalize(s); /* leaves the error of the run in place */
        if (rc)
            return rc;
    }
}

int ldb_exec(ldb *db, const char *sql, ldb_row_fn fn, void *ctx)
{
    if (!db || !sql)
        return LDB_MISUSE;
    db_lock(db);
    int rc = exec_script(db, sql, fn, ctx);
    db_unlock(db);
    return rc;
}

/* ---- counters --------------------------------------------------------------------------------------- */

int ldb_complete(const char *sql)
{
    return sql && sql_is_complete(sql, strlen(sql));
}

int64_t ldb_changes(ldb *db)
{
    if (!db)
        return 0;
    db_lock(db);
    int64_t n = db->env.changes;
    db_unlock(db);
    return n;
}

int64_t ldb_total_changes(ldb *db)
{
    if (!db)
        return 0;
    db_lock(db);
    int64_t n = db->env.total_changes;
    db_unlock(db);
    return n;
}

int64_t ldb_last_insert_rowid(ldb *db)
{
    if (!db)
        return 0;
    db_lock(db);
    int64_t n = db->env.last_insert_rowid;
    db_unlock(db);
    return n;
}
