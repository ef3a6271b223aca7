/*
 * script_provider.c - the scripted provider of tests/source/
 * (script_provider.h).
 *
 * Callbacks never fail a CHECK (a longjmp out of the library would leave
 * its mutex and state behind): they note the first broken law in
 * sp->violation, which sp_check_laws reports. Everything the provider
 * allocates is its own (malloc), so the library's allocation counters
 * (mem_live) see only the library.
 */
#include "script_provider.h"

#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void violate(script_provider *sp, const char *fmt, ...)
{
    if (sp->violation[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sp->violation, sizeof sp->violation, fmt, ap);
    va_end(ap);
}

static void *grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return p;
    *cap = *cap ? *cap * 2 : 16;
    if (*cap < need)
        *cap = need;
    p = realloc(p, (size_t)*cap * size);
    CHECK(p != NULL);
    return p;
}

/* ---- the cached set ----------------------------------------------------------- */

static int cached_at(const script_provider *sp, int64_t pk, bool *found)
{
    int lo = 0, hi = sp->ncached;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (sp->cached[mid] < pk)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < sp->ncached && sp->cached[lo] == pk;
    return lo;
}

static void cached_add(script_provider *sp, int64_t pk)
{
    bool found;
    int at = cached_at(sp, pk, &found);
    if (found)
        return;
    sp->cached = grow(sp->cached, &sp->capcached, sp->ncached + 1, sizeof *sp->cached);
    memmove(sp->cached + at + 1, sp->cached + at, (size_t)(sp->ncached - at) * sizeof *sp->cached);
    sp->cached[at] = pk;
    sp->ncached++;
}

static void cached_remove(script_provider *sp, int64_t pk)
{
    bool found;
    int at = cached_at(sp, pk, &found);
    if (!found)
        return;
    memmove(sp->cached + at, sp->cached + at + 1, (size_t)(sp->ncached - at - 1) * sizeof *sp->cached);
    sp->ncached--;
}

/* ---- SQLite ---------------------------------------------------------------------- */

void sp_bind_value(sqlite3_stmt *st, int i, const ldb_value *v)
{
    size_t len = 0;
    const char *p;
    switch (ldb_value_type(v)) {
    case LDB_BOOLEAN:
    case LDB_INTEGER: sqlite3_bind_int64(st, i, ldb_value_int64(v)); break;
    case LDB_REAL: sqlite3_bind_double(st, i, ldb_value_double(v)); break;
    case LDB_TEXT:
        p = ldb_value_text(v, &len);
        sqlite3_bind_text(st, i, p ? p : "", (int)len, SQLITE_TRANSIENT);
        break;
    case LDB_BLOB:
        p = ldb_value_text(v, &len);
        sqlite3_bind_blob(st, i, p ? p : "", (int)len, SQLITE_TRANSIENT);
        break;
    default: sqlite3_bind_null(st, i); break;
    }
}

static sqlite3_stmt *prepare(script_provider *sp, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(sp->auth, sql, -1, &st, NULL);
    CHECKF(rc == SQLITE_OK, "SQLite cannot run the request's SQL: %s: %s", sql,
           sqlite3_errmsg(sp->auth));
    return st;
}

/* SELECT <what> FROM t WHERE (<the request's SQL>) [AND pk = ?N+1], its
 * parameters bound. */
static sqlite3_stmt *request_stmt(script_provider *sp, struct sp_req *q, const char *what,
                                  bool by_pk)
{
    char sql[4096];
    int n = snprintf(sql, sizeof sql, "SELECT %s FROM \"%s\" WHERE (%s)", what, sp->table, q->sql);
    if (by_pk)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND \"%s\" = ?%d", sp->pk, q->nparams + 1);
    CHECK(n < (int)sizeof sql);
    sqlite3_stmt *st = prepare(sp, sql);
    CHECKF(sqlite3_bind_parameter_count(st) <= q->nparams + (by_pk ? 1 : 0),
           "request %llu: its SQL has more parameters than ldb_request_param_count: %s",
           (unsigned long long)q->id, q->sql);
    for (int i = 0; i < q->nparams; i++)
        sp_bind_value(st, i + 1, ldb_request_param(q->req, i));
    return st;
}

/* The primary keys of the request's current matching rows (malloc'd). */
static int64_t *matching(script_provider *sp, struct sp_req *q, int *n)
{
    char what[80];
    snprintf(what, sizeof what, "\"%s\"", sp->pk);
    sqlite3_stmt *st = request_stmt(sp, q, what, false);
    int64_t *pks = NULL;
    int cap = 0, rc;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        pks = grow(pks, &cap, *n + 1, sizeof *pks);
        pks[(*n)++] = sqlite3_column_int64(st, 0);
    }
    CHECKF(rc == SQLITE_DONE, "request %llu: %s: %s", (unsigned long long)q->id, q->sql,
           sqlite3_errmsg(sp->auth));
    sqlite3_finalize(st);
    return pks;
}

static bool request_matches(script_provider *sp, struct sp_req *q, int64_t pk)
{
    sqlite3_stmt *st = request_stmt(sp, q, "1", true);
    sqlite3_bind_int64(st, q->nparams + 1, pk);
    bool hit = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return hit;
}

/* ---- sync transactions -------------------------------------------------------------- */

static void set_column(ldb_sync *t, int col, sqlite3_stmt *st)
{
    int rc;
    switch (sqlite3_column_type(st, col)) {
    case SQLITE_INTEGER: rc = ldb_sync_int64(t, col, sqlite3_column_int64(st, col)); break;
    case SQLITE_FLOAT: rc = ldb_sync_double(t, col, sqlite3_column_double(st, col)); break;
    case SQLITE_TEXT: {
        const char *s = (const char *)sqlite3_column_text(st, col);
        rc = ldb_sync_text(t, col, s, sqlite3_column_bytes(st, col));
        break;
    }
    case SQLITE_BLOB: {
        const void *p = sqlite3_column_blob(st, col);
        rc = ldb_sync_blob(t, col, p, sqlite3_column_bytes(st, col));
        break;
    }
    default: rc = ldb_sync_null(t, col); break;
    }
    CHECKF(rc == LDB_OK, "ldb_sync set column %d: rc %d", col, rc);
}

/* Upserts the current row with key pk into t, or deletes it when SQLite
 * has none; the cached set follows. */
static void put_row(script_provider *sp, ldb_sync *t, int64_t pk)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT * FROM \"%s\" WHERE \"%s\" = ?1", sp->table, sp->pk);
    sqlite3_stmt *st = prepare(sp, sql);
    sqlite3_bind_int64(st, 1, pk);
    if (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sp->ncols; c++)
            set_column(t, c, st);
        CHECK(ldb_sync_upsert(t) == LDB_OK);
        cached_add(sp, pk);
    } else {
        CHECK(ldb_sync_int64(t, 0, pk) == LDB_OK);
        CHECK(ldb_sync_delete(t) == LDB_OK);
        cached_remove(sp, pk);
    }
    sqlite3_finalize(st);
}

/* Commits t and checks its receipt against what the request's state
 * allows: ABORTED when the request was aborted before the commit,
 * FAILED exactly when the commit returned an error, else APPLIED (or
 * PENDING when it was queued: checked at sp_check_receipts). */
static int commit(script_provider *sp, ldb_sync *t, struct sp_req *q)
{
    bool was_aborted = q && ldb_request_aborted(q->req);
    ldb_receipt *rec = NULL;
    int rc = ldb_sync_commit(t, &rec);
    if (rc == LDB_NOMEM) {
        CHECKF(!rec || ldb_receipt_state(rec) == LDB_RECEIPT_FAILED,
               "a commit failed with LDB_NOMEM but its receipt says %d", ldb_receipt_state(rec));
        ldb_receipt_free(rec);
        return rc;
    }
    CHECKF(rec != NULL, "ldb_sync_commit: rc %d and no receipt", rc);
    int state = ldb_receipt_state(rec);
    if (state == LDB_RECEIPT_PENDING) {
        sp->pending_receipts = grow(sp->pending_receipts, &sp->cappending,
                                    sp->npending_receipts + 1, sizeof *sp->pending_receipts);
        sp->pending_receipts[sp->npending_receipts++] = (struct sp_receipt){ rec, was_aborted };
        return rc;
    }
    if (was_aborted)
        CHECKF(state == LDB_RECEIPT_ABORTED,
               "law 6: a transaction of aborted request %llu was not dropped (receipt %d, rc %d)",
               (unsigned long long)q->id, state, rc);
    else if (rc != LDB_OK)
        CHECKF(state == LDB_RECEIPT_FAILED, "commit rc %d with receipt %d", rc, state);
    else
        CHECKF(state == LDB_RECEIPT_APPLIED || state == LDB_RECEIPT_ABORTED,
               "commit LDB_OK with receipt %d", state);
    sp->receipts_applied += state == LDB_RECEIPT_APPLIED;
    sp->receipts_aborted += state == LDB_RECEIPT_ABORTED;
    sp->receipts_failed += state == LDB_RECEIPT_FAILED;
    if (state == LDB_RECEIPT_FAILED)
        CHECK(ldb_receipt_error(rec) != NULL);
    ldb_receipt_free(rec);
    return rc;
}

void sp_check_receipts(script_provider *sp)
{
    for (int i = 0; i < sp->npending_receipts; i++) {
        struct sp_receipt *p = &sp->pending_receipts[i];
        int state = ldb_receipt_state(p->rc);
        CHECKF(state != LDB_RECEIPT_PENDING, "a receipt is still PENDING after a dispatch point");
        if (p->must_abort)
            CHECKF(state == LDB_RECEIPT_ABORTED,
                   "law 6: a queued transaction of an aborted request was applied (receipt %d)",
                   state);
        sp->receipts_applied += state == LDB_RECEIPT_APPLIED;
        sp->receipts_aborted += state == LDB_RECEIPT_ABORTED;
        sp->receipts_failed += state == LDB_RECEIPT_FAILED;
        ldb_receipt_free(p->rc);
    }
    sp->npending_receipts = 0;
}

int sp_write_keys(script_provider *sp, struct sp_req *q, const int64_t *pks, int n)
{
    if (q && ldb_request_aborted(q->req)) {
        q->aborted_seen = true;
        if (!sp->ignore_cancel)
            return LDB_OK; /* a conforming provider stops writing */
        q->writes_after_abort++;
    }
    ldb_sync *t = NULL;
    int rc = ldb_sync_begin(sp->src, q ? q->req : NULL, &t);
    if (rc != LDB_OK)
        return rc;
    for (int i = 0; i < n; i++)
        put_row(sp, t, pks[i]);
    return commit(sp, t, q);
}

int sp_write_some(script_provider *sp, struct sp_req *q, int max)
{
    int n;
    int64_t *pks = matching(sp, q, &n);
    for (int i = n - 1; i > 0; i--) { /* shuffle, then keep a prefix */
        int j = (int)rng_below(sp->r, (uint64_t)i + 1);
        int64_t x = pks[i];
        pks[i] = pks[j];
        pks[j] = x;
    }
    int k = n ? (int)rng_below(sp->r, (uint64_t)(max < n ? max : n) + 1) : 0;
    int rc = sp_write_keys(sp, q, pks, k);
    free(pks);
    return rc;
}

/* Marked settled before the call: applied at once, the settle may unload
 * the request from inside it. */
int sp_settle(script_provider *sp, struct sp_req *q, int code, const char *msg)
{
    bool was = q->settled;
    q->settled = true;
    q->settle_rc = code;
    int rc = ldb_request_settle(q->req, code, msg);
    if (rc != LDB_OK) {
        q->settled = was;
        return rc;
    }
    if (!q->loaded && q->held)
        sp_drop(sp, q);
    return rc;
}

/* Up to two keys of the table's current rows, any of them. */
static int some_keys(script_provider *sp, int64_t *out)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT \"%s\" FROM \"%s\" ORDER BY 1", sp->pk, sp->table);
    sqlite3_stmt *st = prepare(sp, sql);
    int64_t all[64];
    int n = 0, k = 0;
    while (n < 64 && sqlite3_step(st) == SQLITE_ROW)
        all[n++] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    for (int i = 0; i < 2 && n; i++)
        out[k++] = all[rng_below(sp->r, (uint64_t)n)];
    return k;
}

int sp_settle_ok(script_provider *sp, struct sp_req *q, int parts)
{
    int n;
    int64_t *pks = matching(sp, q, &n);
    if (sp->superset) {
        pks = grow(pks, &(int){ n }, n + 2, sizeof *pks);
        n += some_keys(sp, pks + n);
    }
    parts = parts < 1 ? 1 : parts;
    for (int p = 0; p < parts; p++) {
        int from = n * p / parts, to = n * (p + 1) / parts;
        int rc = sp_write_keys(sp, q, pks + from, to - from);
        if (rc != LDB_OK) {
            free(pks);
            return rc;
        }
    }
    free(pks);
    return sp_settle(sp, q, LDB_OK, NULL);
}

int sp_settle_fail(script_provider *sp, struct sp_req *q, const char *msg)
{
    return sp_settle(sp, q, LDB_ERROR, msg);
}

void sp_drop(script_provider *sp, struct sp_req *q)
{
    if (!q->held)
        return;
    q->held = false;
    ldb_request_unref(q->req);
}

int sp_forward(script_provider *sp, int64_t pk)
{
    bool relevant = sp->feed_all, found;
    cached_at(sp, pk, &found);
    relevant |= found;
    for (int i = 0; i < sp->nreqs && !relevant; i++)
        if (sp->reqs[i]->loaded)
            relevant = request_matches(sp, sp->reqs[i], pk);
    return relevant ? sp_write_keys(sp, NULL, &pk, 1) : LDB_OK;
}

/* ---- requests --------------------------------------------------------------------------- */

struct sp_req *sp_find(script_provider *sp, uint64_t id)
{
    for (int i = 0; i < sp->nreqs; i++)
        if (sp->reqs[i]->id == id)
            return sp->reqs[i];
    return NULL;
}

int sp_count_pending(script_provider *sp)
{
    int n = 0;
    for (int i = 0; i < sp->nreqs; i++)
        n += sp->reqs[i]->loaded && !sp->reqs[i]->settled;
    return n;
}

int sp_pick_pending(script_provider *sp)
{
    int n = sp_count_pending(sp);
    if (n == 0)
        return -1;
    int k = (int)rng_below(sp->r, (uint64_t)n);
    for (int i = 0; i < sp->nreqs; i++)
        if (sp->reqs[i]->loaded && !sp->reqs[i]->settled && k-- == 0)
            return i;
    return -1;
}

int sp_pick_zombie(script_provider *sp)
{
    int n = 0;
    for (int i = 0; i < sp->nreqs; i++)
        n += sp->reqs[i]->held && !sp->reqs[i]->loaded && !sp->reqs[i]->settled;
    if (n == 0)
        return -1;
    int k = (int)rng_below(sp->r, (uint64_t)n);
    for (int i = 0; i < sp->nreqs; i++)
        if (sp->reqs[i]->held && !sp->reqs[i]->loaded && !sp->reqs[i]->settled && k-- == 0)
            return i;
    return -1;
}

/* ---- callbacks ------------------------------------------------------------------------------ */

static int on_load(void *ctx, ldb_request *req)
{
    script_provider *sp = ctx;
    uint64_t id = ldb_request_id(req);
    if (sp_find(sp, id))
        violate(sp, "request id %llu given to load_subset twice", (unsigned long long)id);
    if (ldb_request_source(req) != sp->src && sp->src)
        violate(sp, "request %llu names another source", (unsigned long long)id);
    if (strcmp(ldb_request_table(req), sp->table) != 0)
        violate(sp, "request %llu names table %s", (unsigned long long)id, ldb_request_table(req));
    if (sp->nreqs && sp->reqs[sp->nreqs - 1]->id >= id)
        violate(sp, "request ids do not increase: %llu after %llu", (unsigned long long)id,
                (unsigned long long)sp->reqs[sp->nreqs - 1]->id);
    struct sp_req *q = calloc(1, sizeof *q);
    const char *sql = ldb_request_sql(req);
    q->sql = strdup(sql ? sql : "(null)");
    if (!q || !q->sql) {
        violate(sp, "out of memory in the test");
        return LDB_ERROR;
    }
    q->req = req;
    q->id = id;
    q->nparams = ldb_request_param_count(req);
    const char *col = NULL;
    if (ldb_request_order(req, &col, &q->desc, &q->limit)) {
        q->ordered = true;
        snprintf(q->order_col, sizeof q->order_col, "%s", col ? col : "?");
    }
    sp->reqs = grow(sp->reqs, &sp->capreqs, sp->nreqs + 1, sizeof *sp->reqs);
    sp->reqs[sp->nreqs++] = q;
    if (sp->load_mode == SP_LOAD_FAIL) {
        q->load_rc = LDB_ERROR;
        return LDB_ERROR;
    }
    ldb_request_ref(req);
    q->held = q->loaded = true;
    q->load_rc = LDB_OK;
    if (sp->load_mode == SP_LOAD_INLINE) {
        int rc = sp_settle_ok(sp, q, 1);
        if (rc != LDB_OK)
            violate(sp, "request %llu: settling inside load_subset: rc %d", (unsigned long long)id, rc);
    }
    return LDB_OK;
}

static void on_unload(void *ctx, ldb_request *req)
{
    script_provider *sp = ctx;
    struct sp_req *q = sp_find(sp, ldb_request_id(req));
    if (!q) {
        violate(sp, "unload_subset of request %llu that load_subset never saw",
                (unsigned long long)ldb_request_id(req));
        return;
    }
    q->unloads++;
    q->order_unload = ++sp->seq;
    if (q->load_rc != LDB_OK)
        violate(sp, "unload_subset of request %llu whose load_subset failed", (unsigned long long)q->id);
    if (q->unloads > 1)
        violate(sp, "request %llu unloaded %d times", (unsigned long long)q->id, q->unloads);
    if (!q->settled && !ldb_request_aborted(req))
        violate(sp, "request %llu unloaded unsettled but not aborted", (unsigned long long)q->id);
    q->loaded = false;
    if (!(sp->ignore_cancel && !q->settled))
        sp_drop(sp, q);
}

static void on_abort(void *ctx, ldb_request *req)
{
    script_provider *sp = ctx;
    struct sp_req *q = sp_find(sp, ldb_request_id(req));
    if (!q) {
        violate(sp, "abort of request %llu that load_subset never saw",
                (unsigned long long)ldb_request_id(req));
        return;
    }
    q->aborts++;
    q->order_abort = ++sp->seq;
    q->aborted_seen = true;
    if (!ldb_request_aborted(req))
        violate(sp, "abort called for request %llu but ldb_request_aborted is 0",
                (unsigned long long)q->id);
    if (q->aborts > 1 || q->unloads > 0)
        violate(sp, "request %llu: abort #%d after %d unloads", (unsigned long long)q->id, q->aborts,
                q->unloads);
    if (q->settled)
        violate(sp, "request %llu aborted after it settled", (unsigned long long)q->id);
}

static void on_destroy(void *ctx)
{
    script_provider *sp = ctx;
    sp->destroyed++;
}

int sp_init(script_provider *sp, ldb *db, sqlite3 *auth, const char *table, int mode, rng *r)
{
    memset(sp, 0, sizeof *sp);
    sp->db = db;
    sp->auth = auth;
    sp->mode = mode;
    sp->r = r;
    snprintf(sp->table, sizeof sp->table, "%s", table);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", table);
    sqlite3_stmt *st = prepare(sp, sql);
    sp->ncols = sqlite3_column_count(st);
    snprintf(sp->pk, sizeof sp->pk, "%s", sqlite3_column_name(st, 0));
    sqlite3_finalize(st);
    ldb_provider p = { on_load, on_unload, on_abort, on_destroy };
    return ldb_source_attach(db, table, mode, &p, sp, &sp->src);
}

void sp_free(script_provider *sp)
{
    for (int i = 0; i < sp->nreqs; i++) {
        sp_drop(sp, sp->reqs[i]);
        free(sp->reqs[i]->sql);
        free(sp->reqs[i]);
    }
    for (int i = 0; i < sp->npending_receipts; i++)
        ldb_receipt_free(sp->pending_receipts[i].rc);
    free(sp->reqs);
    free(sp->cached);
    free(sp->pending_receipts);
    memset(sp, 0, sizeof *sp);
}

/* ---- laws ------------------------------------------------------------------------------------ */

void sp_check_laws(script_provider *sp, bool final)
{
    CHECKF(!sp->violation[0], "%s: %s", sp->table, sp->violation);
    for (int i = 0; i < sp->nreqs; i++) {
        struct sp_req *q = sp->reqs[i];
        unsigned long long id = (unsigned long long)q->id;
        CHECKF(q->unloads <= (q->load_rc == LDB_OK),
               "%s request %llu (%s): %d unloads after load_subset rc %d", sp->table, id, q->sql,
               q->unloads, q->load_rc);
        if (final && q->load_rc == LDB_OK)
            CHECKF(q->unloads == 1,
                   "%s request %llu (%s): every demand is gone but it was unloaded %d times",
                   sp->table, id, q->sql, q->unloads);
        CHECKF(q->aborts <= 1, "%s request %llu aborted %d times", sp->table, id, q->aborts);
        if (q->aborts && q->unloads)
            CHECKF(q->order_abort < q->order_unload, "%s request %llu: abort after unload",
                   sp->table, id);
        if (q->unloads && !q->settled)
            CHECKF(!q->held || ldb_request_aborted(q->req),
                   "%s request %llu unloaded before it settled but not aborted", sp->table, id);
        CHECKF(sp->ignore_cancel || q->writes_after_abort == 0,
               "law 6: conforming provider wrote for aborted request %llu", id);
    }
}

/* ---- results ------------------------------------------------------------------------------ */

static int collect_row(void *ctx, const ldb_row *row)
{
    cmp_result *r = ctx;
    strbuf sb = STRBUF_INIT;
    for (int i = 0, shown = 0; i < ldb_row_columns(row); i++) {
        if (ldb_row_type(row, i) == LDB_LIVE)
            continue;
        sb_puts(&sb, shown++ ? "|" : "");
        cmp_put_livedb_value(&sb, row, i);
    }
    cmp_result_add(r, &sb);
    return 0;
}

void sp_live_rows(ldb_live *q, cmp_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = ldb_live_read(q, collect_row, out);
    CHECKF(rc == LDB_OK, "ldb_live_read: rc %d", rc);
    out->ok = 1;
}
