/*
 * test_source_basic.c - the sources contract of livedb.h ("sources:
 * tables whose truth lives elsewhere"), one named case per clause.
 *
 * A table t(id, a, b) is kept authoritatively in SQLite and cached in
 * livedb through the scripted provider (script_provider.h); each case
 * drives the provider by hand: which request gets which rows, when it
 * settles or fails, what the source changes. Readiness, receipts,
 * request counts and the provider's recorded callbacks are checked
 * against the contract's words; results against SQLite over the
 * authoritative data. Some cases use a provider of their own (callback
 * refusals) or threads (commits and settles off the home thread). The
 * last cases sweep allocation failures over attach, open, commit, settle,
 * a new child bucket, detach, close, retry and building a transaction.
 */
#include "nomem.h"
#include "script_provider.h"
#include "test.h"
#include "test_db.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixture -------------------------------------------------------------------- */

struct fx {
    ldb *db;
    sqlite3 *auth;
    rng r;
    script_provider sp;
};

#define T_SCHEMA "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)"

static void auth_exec(struct fx *f, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(f->auth, sql, NULL, NULL, &err);
    CHECKF(rc == SQLITE_OK, "SQLite: %s: %s", sql, err ? err : "?");
}

/* Both databases with the schema (for t: ids 1..12, a = id % 4, b = 'b'
 * || id % 3 in SQLite only), and nothing attached. */
static void fx_open_plain(struct fx *f, const char *schema)
{
    memset(f, 0, sizeof *f);
    rng_seed(&f->r, 42);
    CHECK_INT(ldb_open(NULL, &f->db), LDB_OK);
    CHECK_INT(sqlite3_open(":memory:", &f->auth), SQLITE_OK);
    EXEC(f->db, schema);
    auth_exec(f, schema);
    if (strcmp(schema, T_SCHEMA) == 0)
        auth_exec(f, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12) "
                 "INSERT INTO t SELECT i, i % 4, 'b' || (i % 3) FROM n");
}

static void fx_open(struct fx *f, int mode)
{
    fx_open_plain(f, T_SCHEMA);
    CHECKF(sp_init(&f->sp, f->db, f->auth, "t", mode, &f->r) == LDB_OK, "attach: %s",
           ldb_errmsg(f->db));
    CHECK(f->sp.src != NULL);
}

static void fx_close(struct fx *f)
{
    bool attached = f->sp.src != NULL;
    ldb_close(f->db);
    CHECK(attached ? f->sp.destroyed == 1 : f->sp.destroyed <= 1); /* <= 1: detached */
    sp_free(&f->sp);
    sqlite3_close(f->auth);
}

static ldb_source_stats stats(struct fx *f)
{
    ldb_source_stats s;
    ldb_source_stats_get(f->sp.src, &s);
    return s;
}

static int64_t count_sql(ldb *db, const char *sql)
{
    ldb_stmt *st;
    CHECKF(ldb_prepare(db, sql, -1, &st, NULL) == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    CHECK_INT(ldb_step(st), LDB_ROW);
    int64_t n = ldb_row_int64(ldb_stmt_row(st), 0);
    ldb_finalize(st);
    return n;
}

/* q's rows equal SQLite's for sql over the authoritative data. */
static void check_same(struct fx *f, ldb_live *q, const char *sql)
{
    cmp_result a, b;
    sp_live_rows(q, &a);
    cmp_run_sqlite(f->auth, sql, &b);
    CHECKF(b.ok, "SQLite: %s: %s", sql, b.msg);
    bool same = cmp_same_rows(&a, &b, false);
    size_t na = a.n, nb = b.n;
    cmp_result_free(&a);
    cmp_result_free(&b);
    CHECKF(same, "%s: livedb has %zu rows, SQLite %zu (or other rows)", sql, na, nb);
}

/* Batches and statuses a query received. */
struct watch {
    int batches;
    int nstatus;
    int status[32];
    char msg[128];
    int64_t count_at_ready; /* the query's rows when READY was reported */
};

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct watch *w = ctx;
    w->batches++;
}

static void on_status(void *ctx, ldb_live *q, int status, const char *msg)
{
    struct watch *w = ctx;
    if (w->nstatus < 32)
        w->status[w->nstatus++] = status;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
    if (status == LDB_STATUS_READY)
        w->count_at_ready = ldb_live_count(q);
}

static ldb_live *open_q(struct fx *f, const char *sql, struct watch *w)
{
    ldb_live *q = NULL;
    int rc = ldb_live_open(f->db, sql, w ? on_change : NULL, w, &q);
    CHECKF(rc == LDB_OK && q, "%s: rc %d: %s", sql, rc, ldb_errmsg(f->db));
    if (w)
        CHECK_INT(ldb_live_set_status_callback(q, on_status, w), LDB_OK);
    return q;
}

static struct sp_req *last_req(struct fx *f)
{
    CHECK(f->sp.nreqs > 0);
    return f->sp.reqs[f->sp.nreqs - 1];
}

/* ---- readiness ------------------------------------------------------------------- */

/* Rows are published as they arrive while LOADING; READY after the
 * settle; the request's predicate is the pushed filter. */
static void rows_while_loading_then_ready(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    struct watch w = { 0 };
    const char *sql = "SELECT id, a, b FROM t WHERE a = 1";
    ldb_live *q = open_q(&f, sql, &w);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(f.sp.nreqs, 1);
    struct sp_req *r = last_req(&f);
    const ldb_pred *p = ldb_request_pred(r->req);
    CHECK(p != NULL);
    CHECK_INT(ldb_pred_kind(p), LDB_PRED_CMP);
    CHECK_INT(ldb_pred_op(p), LDB_OP_EQ);
    CHECK_STR(ldb_pred_column(p), "a");
    CHECK_INT(ldb_pred_count(p), 1);
    CHECK_INT(ldb_value_int64(ldb_pred_value(p, 0)), 1);
    CHECK_INT(ldb_live_count(q), 0);

    int batches = w.batches;
    CHECK_INT(sp_write_keys(&f.sp, r, (int64_t[]){ 5 }, 1), LDB_OK);
    CHECK_INT(ldb_live_count(q), 1);
    CHECK(w.batches == batches + 1);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);

    CHECK_INT(sp_settle_ok(&f.sp, r, 2), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    CHECK(w.nstatus >= 1 && w.status[w.nstatus - 1] == LDB_STATUS_READY);
    CHECK_INT(w.count_at_ready, 3); /* law 7: the rows were visible at READY */
    check_same(&f, q, sql);
    CHECK_INT(ldb_request_settle(r->req, LDB_OK, NULL), LDB_MISUSE); /* once per request */
    ldb_source_stats s = stats(&f);
    CHECK_INT(s.requests, 1);
    CHECK_INT(s.settles, 1);
    CHECK_INT(s.requests_live, 1);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* A failed settle is ERROR with the provider's message; retry makes a
 * new request, which reaches READY. */
static void failed_settle_then_retry(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    struct watch w = { 0 };
    const char *sql = "SELECT id, b FROM t WHERE a >= 2";
    ldb_live *q = open_q(&f, sql, &w);
    struct sp_req *r1 = last_req(&f);
    CHECK_INT(sp_settle_fail(&f.sp, r1, "server said no"), LDB_OK);
    const char *msg = NULL;
    CHECK_INT(ldb_live_status(q, &msg), LDB_STATUS_ERROR);
    CHECK(msg && strstr(msg, "server said no"));
    CHECK(w.nstatus >= 1 && w.status[w.nstatus - 1] == LDB_STATUS_ERROR);
    CHECK(strstr(w.msg, "server said no"));

    CHECK_INT(ldb_live_retry(q), LDB_OK);
    CHECK_INT(f.sp.nreqs, 2);
    struct sp_req *r2 = last_req(&f);
    CHECK(r2->id > r1->id);
    CHECK_STR(r2->sql, r1->sql);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(sp_settle_ok(&f.sp, r2, 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, q, sql);
    CHECK_INT(stats(&f).requests, 2);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    CHECK_INT(stats(&f).requests_live, 0);
    fx_close(&f);
}

/* The same demand from two queries is one request; it is unloaded once,
 * when the second query closes. */
static void same_demand_one_request(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    ldb_live *q1 = open_q(&f, "SELECT id FROM t WHERE a = 2", NULL);
    ldb_live *q2 = open_q(&f, "SELECT id, b FROM t WHERE a = 2", NULL);
    ldb_source_stats s = stats(&f);
    CHECK_INT(s.requests, 1);
    CHECK_INT(s.demands, 1);
    CHECK_INT(f.sp.nreqs, 1);
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK);
    CHECK_INT(ldb_live_status(q1, NULL), LDB_STATUS_READY);
    CHECK_INT(ldb_live_status(q2, NULL), LDB_STATUS_READY);
    check_same(&f, q2, "SELECT id, b FROM t WHERE a = 2");
    ldb_live_close(q1);
    CHECK_INT(f.sp.reqs[0]->unloads, 0);
    ldb_live *q3 = open_q(&f, "SELECT b FROM t WHERE a = 2", NULL);
    CHECK_INT(ldb_live_status(q3, NULL), LDB_STATUS_READY); /* a settled current request */
    CHECK_INT(stats(&f).requests, 1);
    ldb_live_close(q2);
    ldb_live_close(q3);
    CHECK_INT(f.sp.reqs[0]->unloads, 1);
    CHECK_INT(f.sp.reqs[0]->aborts, 0);
    s = stats(&f);
    CHECK_INT(s.demands, 0);
    CHECK_INT(s.requests_live, 0);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* Closing a query whose request is pending aborts it (flag, abort
 * callback once, then unload once); its later writes are dropped and its
 * settle changes nothing: a new query with the same demand stays LOADING
 * (law 6) until its own request settles. */
static void close_pending_aborts(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    f.sp.ignore_cancel = true;
    const char *sql = "SELECT id, a FROM t WHERE a = 3";
    ldb_live *q = open_q(&f, sql, NULL);
    struct sp_req *r1 = last_req(&f);
    CHECK_INT(sp_write_keys(&f.sp, r1, (int64_t[]){ 3 }, 1), LDB_OK);
    ldb_live_close(q);
    CHECK_INT(ldb_request_aborted(r1->req), 1);
    CHECK_INT(r1->aborts, 1);
    CHECK_INT(r1->unloads, 1);
    CHECK(r1->order_abort < r1->order_unload);
    CHECK_INT(stats(&f).requests_live, 0);

    struct watch w = { 0 };
    q = open_q(&f, sql, &w);
    struct sp_req *r2 = last_req(&f);
    CHECK(r2 != r1 && r2->id > r1->id);
    int64_t before = ldb_live_count(q); /* the row r1 wrote before its abort stays */
    CHECK_INT(before, 1);
    int aborted = f.sp.receipts_aborted;
    CHECK_INT(sp_settle_ok(&f.sp, r1, 2), LDB_OK); /* writes dropped, settle ignored */
    CHECK(f.sp.receipts_aborted > aborted);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(ldb_live_count(q), before);
    CHECK_INT(w.nstatus, 0);
    CHECK_INT(sp_settle_ok(&f.sp, r2, 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, q, sql);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* load_subset failing: status ERROR, never an unload; retry asks again. */
static void failed_load_no_unload(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    f.sp.load_mode = SP_LOAD_FAIL;
    ldb_live *q = open_q(&f, "SELECT id FROM t WHERE b = 'b1'", NULL);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_ERROR);
    CHECK_INT(f.sp.nreqs, 1);
    f.sp.load_mode = SP_LOAD_DEFER;
    CHECK_INT(ldb_live_retry(q), LDB_OK);
    CHECK_INT(f.sp.nreqs, 2);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    ldb_live_close(q);

    f.sp.load_mode = SP_LOAD_FAIL;
    q = open_q(&f, "SELECT id FROM t WHERE b = 'b2'", NULL);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_ERROR);
    ldb_live_close(q);
    CHECK_INT(f.sp.reqs[0]->unloads, 0);
    CHECK_INT(last_req(&f)->unloads, 0);
    ldb_source_stats s = stats(&f);
    CHECK_INT(s.requests_live, 0);
    CHECK_INT(s.demands, 0);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* A request settled from inside load_subset: its commits and its settle
 * are queued and applied when the callback returns, so the query is
 * READY, rows in place, when ldb_live_open returns. */
static void settle_inside_load(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    f.sp.load_mode = SP_LOAD_INLINE;
    struct watch w = { 0 };
    const char *sql = "SELECT id, a, b FROM t WHERE a IN (0, 2) AND id > 3";
    ldb_live *q = open_q(&f, sql, &w);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, q, sql);
    sp_check_receipts(&f.sp);
    CHECK(f.sp.receipts_applied >= 1);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* EAGER: one request for every row, made at attach; queries add none. */
static void eager_one_request(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_EAGER);
    CHECK_INT(f.sp.nreqs, 1);
    struct sp_req *r = last_req(&f);
    CHECK(ldb_request_pred(r->req) == NULL);
    CHECK_STR(r->sql, "TRUE");
    CHECK_INT(r->nparams, 0);
    ldb_live *q = open_q(&f, "SELECT id FROM t WHERE a = 1", NULL);
    CHECK_INT(f.sp.nreqs, 1);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(sp_settle_ok(&f.sp, r, 3), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, q, "SELECT id FROM t WHERE a = 1");
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t"), 12);
    ldb_live_close(q);
    CHECK_INT(r->unloads, 0); /* the eager demand stays */
    CHECK_INT(ldb_source_detach(f.sp.src), LDB_OK);
    CHECK_INT(r->unloads, 1);
    CHECK_INT(f.sp.destroyed, 1);
    f.sp.src = NULL;
    sp_check_laws(&f.sp, true);
    ldb_close(f.db);
    sp_free(&f.sp);
    sqlite3_close(f.auth);
}

/* ---- sync transactions and receipts ------------------------------------------------ */

static int fd_readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Commits made inside an explicit transaction on the home thread are
 * parked (PENDING, not visible, the fd readable) and applied after
 * COMMIT, in order with a settle made meanwhile (law 7: READY comes with
 * the rows). */
static void parked_in_transaction(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    EXEC(f.db, "CREATE TABLE loc(x INTEGER PRIMARY KEY)");
    struct watch w = { 0 };
    const char *sql = "SELECT id, b FROM t WHERE a = 0";
    ldb_live *q = open_q(&f, sql, &w);
    struct sp_req *r = last_req(&f);
    int fd = ldb_source_fd(f.db);
    CHECK(fd >= 0);
    CHECK(!fd_readable(fd));

    EXEC(f.db, "BEGIN");
    EXEC(f.db, "INSERT INTO loc VALUES (1)");
    CHECK_INT(sp_settle_ok(&f.sp, r, 2), LDB_OK);
    CHECK_INT(f.sp.npending_receipts, 2);
    CHECK_INT(ldb_receipt_state(f.sp.pending_receipts[0].rc), LDB_RECEIPT_PENDING);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t"), 0);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK(stats(&f).queued >= 3);
    CHECK(fd_readable(fd));
    EXEC(f.db, "COMMIT");

    sp_check_receipts(&f.sp);
    CHECK_INT(f.sp.receipts_applied, 2);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    CHECK_INT(w.count_at_ready, 3);
    check_same(&f, q, sql);
    CHECK_INT(stats(&f).queued, 0);
    CHECK(!fd_readable(fd));

    /* A parked feed commit is applied after ROLLBACK too. */
    auth_exec(&f, "INSERT INTO t VALUES (20, 0, 'new')");
    EXEC(f.db, "BEGIN");
    CHECK_INT(sp_forward(&f.sp, 20), LDB_OK);
    EXEC(f.db, "ROLLBACK");
    sp_check_receipts(&f.sp);
    CHECK_INT(f.sp.receipts_applied, 3);
    check_same(&f, q, sql);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* ldb_source_poll refuses to apply inside an explicit transaction, so
 * the transaction's ROLLBACK cannot take sync rows with it: they are
 * applied after it. */
static void poll_inside_transaction(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    const char *sql = "SELECT id, b FROM t WHERE a = 0";
    ldb_live *q = open_q(&f, sql, NULL);
    EXEC(f.db, "BEGIN");
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK);
    CHECK_INT(ldb_source_poll(f.db), LDB_MISUSE); /* not inside a transaction */
    int state = ldb_receipt_state(f.sp.pending_receipts[0].rc);
    CHECK_INT(state, LDB_RECEIPT_PENDING);
    EXEC(f.db, "ROLLBACK");
    sp_check_receipts(&f.sp);
    CHECK_INT(f.sp.receipts_applied, 1);
    CHECKF(count_sql(f.db, "SELECT count(*) FROM t") == 3,
           "rows of a receipt %s inside BEGIN are gone after ROLLBACK",
           state == LDB_RECEIPT_APPLIED ? "APPLIED by the poll" : "PENDING at the poll");
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, q, sql);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

static int commit_row(ldb_source *src, ldb_request *req, int64_t id, const char *v, int how,
                      int *state)
{
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(src, req, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, id), LDB_OK);
    CHECK_INT(v ? ldb_sync_text(t, 1, v, -1) : ldb_sync_null(t, 1), LDB_OK);
    int rc = how == 0 ? ldb_sync_insert(t) : how == 1 ? ldb_sync_upsert(t) : ldb_sync_delete(t);
    CHECK_INT(rc, LDB_OK);
    ldb_receipt *rec;
    rc = ldb_sync_commit(t, &rec);
    CHECK(rec != NULL);
    *state = ldb_receipt_state(rec);
    if (*state == LDB_RECEIPT_FAILED)
        CHECK(ldb_receipt_error(rec) && *ldb_receipt_error(rec));
    ldb_receipt_free(rec);
    return rc;
}

/* APPLIED, FAILED (a NOT NULL violation: nothing of the transaction is
 * applied), and the insert rules: an identical row is a no-op (no
 * batch), a conflicting one fails. */
static void receipts_and_insert_rules(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE u(id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "u", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    struct watch w = { 0 };
    ldb_live *q = open_q(&f, "SELECT id, v FROM u", &w);
    ldb_source *src = f.sp.src;
    int st;
    CHECK_INT(commit_row(src, NULL, 1, "x", 0, &st), LDB_OK);
    CHECK_INT(st, LDB_RECEIPT_APPLIED);
    CHECK_INT(ldb_live_count(q), 1);

    ldb_sync *t;
    ldb_receipt *rec;
    CHECK_INT(ldb_sync_begin(src, NULL, &t), LDB_OK);
    ldb_sync_int64(t, 0, 2);
    ldb_sync_text(t, 1, "y", -1);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    ldb_sync_int64(t, 0, 3);
    ldb_sync_null(t, 1);
    CHECK_INT(ldb_sync_insert(t), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, &rec), LDB_CONSTRAINT);
    CHECK_INT(ldb_receipt_state(rec), LDB_RECEIPT_FAILED);
    CHECK(ldb_receipt_error(rec) != NULL);
    ldb_receipt_free(rec);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM u"), 1);
    CHECK_INT(ldb_live_count(q), 1);

    int batches = w.batches;
    CHECK_INT(commit_row(src, NULL, 1, "x", 0, &st), LDB_OK);
    CHECK_INT(st, LDB_RECEIPT_APPLIED);
    CHECK_INT(commit_row(src, NULL, 1, "x", 1, &st), LDB_OK); /* upsert of the same row */
    CHECK_INT(w.batches, batches);
    CHECK_INT(commit_row(src, NULL, 1, "z", 0, &st), LDB_CONSTRAINT);
    CHECK_INT(st, LDB_RECEIPT_FAILED);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM u WHERE v = 'x'"), 1);
    CHECK_INT(commit_row(src, NULL, 9, "x", 2, &st), LDB_OK); /* delete of an absent key */
    CHECK_INT(w.batches, batches);
    CHECK_INT(commit_row(src, NULL, 1, NULL, 2, &st), LDB_OK);
    CHECK_INT(ldb_live_count(q), 0);
    ldb_source_stats s = stats(&f);
    CHECK_INT(s.txns_aborted, 2);
    CHECK(s.txns_applied >= 3);

    ldb_sync_begin(src, NULL, &t);
    ldb_sync_int64(t, 0, 5);
    ldb_sync_insert(t);
    ldb_sync_abandon(t);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM u"), 0);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* A transaction of an aborted request is dropped (ABORTED), also one
 * queued before the abort. */
static void aborted_request_drops_txns(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    EXEC(f.db, "CREATE TABLE loc(x INTEGER PRIMARY KEY)");
    ldb_live *q = open_q(&f, "SELECT id FROM t WHERE a = 1", NULL);
    struct sp_req *r = last_req(&f);
    ldb_request_ref(r->req); /* outlives the unload */
    EXEC(f.db, "BEGIN");
    int st;
    ldb_sync *t;
    ldb_receipt *rec;
    CHECK_INT(ldb_sync_begin(f.sp.src, r->req, &t), LDB_OK);
    ldb_sync_int64(t, 0, 1);
    ldb_sync_int64(t, 1, 1);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, &rec), LDB_OK);
    CHECK_INT(ldb_receipt_state(rec), LDB_RECEIPT_PENDING);
    EXEC(f.db, "ROLLBACK");
    /* Applied at the ROLLBACK's dispatch point: its request was current. */
    CHECK_INT(ldb_receipt_state(rec), LDB_RECEIPT_APPLIED);
    ldb_receipt_free(rec);
    CHECK_INT(ldb_live_count(q), 1);

    ldb_live_close(q);
    CHECK_INT(ldb_request_aborted(r->req), 1);
    CHECK_INT(commit_row(f.sp.src, r->req, 5, "1", 1, &st), LDB_OK);
    CHECK_INT(st, LDB_RECEIPT_ABORTED);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t"), 1);
    CHECK_INT(ldb_request_settle(r->req, LDB_OK, NULL), LDB_OK);
    ldb_request_unref(r->req);
    sp_check_laws(&f.sp, true);
    CHECK_INT(stats(&f).requests_live, 0);
    fx_close(&f);
}

/* ---- SQL over sourced tables ------------------------------------------------------- */

static void user_writes_refused(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    const char *writes[] = { "INSERT INTO t VALUES (100, 1, 'x')", "UPDATE t SET a = 5",
                             "DELETE FROM t" };
    for (int i = 0; i < 3; i++) {
        CHECK_FAILS(f.db, writes[i], LDB_ERROR);
        CHECKF(strstr(ldb_errmsg(f.db), "source"), "%s", ldb_errmsg(f.db));
    }
    CHECK_INT(f.sp.nreqs, 0);
    fx_close(&f);
}

/* One-shot SELECTs read the cache as it is and load nothing. */
static void select_reads_cache(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t WHERE a = 1"), 0);
    f.sp.feed_all = true;
    CHECK_INT(sp_forward(&f.sp, 1), LDB_OK);
    CHECK_INT(sp_forward(&f.sp, 2), LDB_OK);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t"), 2);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t WHERE a = 1"), 1);
    CHECK_INT(f.sp.nreqs, 0);
    CHECK_INT(stats(&f).requests, 0);
    fx_close(&f);
}

static int settle_now(void *ctx, ldb_request *req)
{
    (void)ctx;
    return ldb_request_settle(req, LDB_OK, NULL);
}

static void mv_over_on_demand_refused(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    CHECK_FAILS(f.db, "CREATE MATERIALIZED VIEW v AS SELECT a, count(*) FROM t GROUP BY a",
                LDB_UNSUPPORTED);
    fx_close(&f);

    /* A table a view reads cannot get an ON_DEMAND source; an EAGER one
     * (as a durable database reopened attaches it again) it can, and its
     * sync writes maintain the view. */
    fx_open_plain(&f, T_SCHEMA);
    EXEC(f.db, "CREATE MATERIALIZED VIEW v AS SELECT a, count(*) AS n FROM t GROUP BY a");
    CHECK(sp_init(&f.sp, f.db, f.auth, "t", LDB_SOURCE_ON_DEMAND, &f.r) != LDB_OK);
    CHECK(f.sp.src == NULL);
    EXEC(f.db, "INSERT INTO t VALUES (1, 1, 'x')");
    ldb_source *s;
    static const ldb_provider eager = { .load_subset = settle_now };
    CHECK_INT(ldb_source_attach(f.db, "t", LDB_SOURCE_EAGER, &eager, NULL, &s), LDB_OK);
    CHECK_INT(ldb_source_poll(f.db), LDB_OK);
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    ldb_sync_int64(t, 0, 2);
    ldb_sync_int64(t, 1, 1);
    ldb_sync_text(t, 2, "y", -1);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, NULL), LDB_OK);
    CHECK_INT(ldb_source_poll(f.db), LDB_OK);
    CHECK_INT(count_sql(f.db, "SELECT n FROM v WHERE a = 1"), 2);
    fx_close(&f);
}

static void attach_errors(void)
{
    struct fx f;
    fx_open_plain(&f, T_SCHEMA);
    EXEC(f.db, "CREATE TABLE nokey(a INTEGER, b TEXT)");
    script_provider other;
    CHECK_INT(sp_init(&other, f.db, f.auth, "t", 99, &f.r), LDB_MISUSE);
    sp_free(&other);
    ldb_provider p = { 0 };
    ldb_source *s = NULL;
    CHECK_INT(ldb_source_attach(f.db, "missing", LDB_SOURCE_ON_DEMAND, &p, NULL, &s),
              LDB_NOTFOUND);
    CHECK_INT(ldb_source_attach(f.db, "nokey", LDB_SOURCE_ON_DEMAND, &p, NULL, &s), LDB_MISUSE);
    EXEC(f.db, "BEGIN");
    CHECK_INT(ldb_source_attach(f.db, "t", LDB_SOURCE_ON_DEMAND, &p, NULL, &s), LDB_MISUSE);
    EXEC(f.db, "COMMIT");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "t", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    CHECK_STR(ldb_source_table(f.sp.src), "t");
    CHECK_INT(ldb_source_attach(f.db, "t", LDB_SOURCE_ON_DEMAND, &p, NULL, &s), LDB_MISUSE);
    fx_close(&f);
}

/* A LIVE (query) child over an on-demand table: the parent's 5 rows with
 * 3 distinct keys make ONE request (k IN 3 values); a new key makes one
 * more request for it alone; deleting its last parent unloads it. */
static const ldb_pred *find_in(const ldb_pred *p, const char *col)
{
    if (!p)
        return NULL;
    int kind = ldb_pred_kind(p);
    if ((kind == LDB_PRED_IN || (kind == LDB_PRED_CMP && ldb_pred_op(p) == LDB_OP_EQ)) &&
        strcmp(ldb_pred_column(p), col) == 0)
        return p;
    if (kind == LDB_PRED_AND)
        for (int i = 0; i < ldb_pred_count(p); i++) {
            const ldb_pred *c = find_in(ldb_pred_child(p, i), col);
            if (c)
                return c;
        }
    return NULL;
}

static bool pred_has_value(const ldb_pred *p, int64_t v)
{
    for (int i = 0; i < ldb_pred_count(p); i++)
        if (ldb_value_int64(ldb_pred_value(p, i)) == v)
            return true;
    return false;
}

struct child_find {
    int64_t key;
    ldb_live *h;
};

static int find_child(void *ctx, const ldb_row *r)
{
    struct child_find *c = ctx;
    if (ldb_row_int64(r, 1) == c->key)
        c->h = ldb_row_live(r, 2);
    return 0;
}

static ldb_live *child_of(ldb_live *q, int64_t key)
{
    struct child_find c = { key, NULL };
    CHECK_INT(ldb_live_read(q, find_child, &c), LDB_OK);
    CHECK(c.h != NULL);
    return c.h;
}

struct child_find_text {
    const char *key;
    ldb_live *h;
};

static int find_child_text(void *ctx, const ldb_row *r)
{
    struct child_find_text *c = ctx;
    size_t len = 0;
    const char *k = ldb_row_text(r, 1, &len);
    if (k && len == strlen(c->key) && memcmp(k, c->key, len) == 0)
        c->h = ldb_row_live(r, 2);
    return 0;
}

static ldb_live *child_of_text(ldb_live *q, const char *key)
{
    struct child_find_text c = { key, NULL };
    CHECK_INT(ldb_live_read(q, find_child_text, &c), LDB_OK);
    CHECK(c.h != NULL);
    return c.h;
}

static void child_grouped_request(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE c(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)");
    auth_exec(&f, "INSERT INTO c VALUES (1, 10, 'a'), (2, 10, 'b'), (3, 20, 'c'), (4, 30, 'd'), "
                  "(5, 40, 'e'), (6, 50, 'f')");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "c", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    EXEC(f.db, "CREATE TABLE p(id INTEGER PRIMARY KEY, k INTEGER);"
               "INSERT INTO p VALUES (1, 10), (2, 10), (3, 20), (4, 30), (5, 30)");
    ldb_live *q = open_q(&f, "SELECT id, k, LIVE (SELECT id, v FROM c WHERE c.k = p.k) AS kids "
                             "FROM p", NULL);
    CHECK_INT(f.sp.nreqs, 1);
    struct sp_req *r1 = last_req(&f);
    const ldb_pred *in = find_in(ldb_request_pred(r1->req), "k");
    CHECKF(in && ldb_pred_kind(in) == LDB_PRED_IN, "request: %s", r1->sql);
    CHECK_INT(ldb_pred_count(in), 3);
    CHECK(pred_has_value(in, 10) && pred_has_value(in, 20) && pred_has_value(in, 30));
    CHECK_INT(stats(&f).demands, 3);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(ldb_live_status(child_of(q, 20), NULL), LDB_STATUS_LOADING);
    CHECK_INT(sp_settle_ok(&f.sp, r1, 2), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    ldb_live *h10 = child_of(q, 10);
    CHECK_INT(ldb_live_status(h10, NULL), LDB_STATUS_READY);
    check_same(&f, h10, "SELECT id, v FROM c WHERE k = 10");
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM c"), 4); /* k 40 and 50 not loaded */

    EXEC(f.db, "INSERT INTO p VALUES (6, 40)");
    CHECK_INT(f.sp.nreqs, 2);
    struct sp_req *r2 = last_req(&f);
    in = find_in(ldb_request_pred(r2->req), "k");
    CHECKF(in && ldb_pred_count(in) == 1 && pred_has_value(in, 40), "request: %s", r2->sql);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(ldb_live_status(child_of(q, 40), NULL), LDB_STATUS_LOADING);
    CHECK_INT(ldb_live_status(h10, NULL), LDB_STATUS_READY);
    CHECK_INT(sp_settle_ok(&f.sp, r2, 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, child_of(q, 40), "SELECT id, v FROM c WHERE k = 40");

    /* Source-side changes reach the handles through the feed. */
    auth_exec(&f, "UPDATE c SET v = 'z' WHERE id = 1; INSERT INTO c VALUES (7, 20, 'g')");
    CHECK_INT(sp_forward(&f.sp, 1), LDB_OK);
    CHECK_INT(sp_forward(&f.sp, 7), LDB_OK);
    check_same(&f, h10, "SELECT id, v FROM c WHERE k = 10");
    check_same(&f, child_of(q, 20), "SELECT id, v FROM c WHERE k = 20");

    EXEC(f.db, "DELETE FROM p WHERE id = 6");
    CHECK_INT(r2->unloads, 1);
    CHECK_INT(r1->unloads, 0);
    EXEC(f.db, "DELETE FROM p WHERE k = 30"); /* grouped: r1 still serves 10 and 20 */
    CHECK_INT(r1->unloads, 0);
    CHECK_INT(stats(&f).demands, 2);
    CHECK_INT(f.sp.nreqs, 2);
    ldb_live_close(q);
    CHECK_INT(r1->unloads, 1);
    ldb_source_stats s = stats(&f);
    CHECK_INT(s.demands, 0);
    CHECK_INT(s.requests_live, 0);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* Law 13: with every query closed, demands and live requests are 0,
 * whatever state their requests were left in. */
static void stats_back_to_zero(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    EXEC(f.db, "CREATE TABLE p(id INTEGER PRIMARY KEY, k INTEGER);"
               "INSERT INTO p VALUES (1, 1), (2, 2), (3, 3)");
    ldb_live *q[5];
    q[0] = open_q(&f, "SELECT id FROM t WHERE a = 1", NULL);
    q[1] = open_q(&f, "SELECT id FROM t WHERE a = 2 OR b = 'b1'", NULL);
    q[2] = open_q(&f, "SELECT a, count(*) FROM t WHERE id < 8 GROUP BY a", NULL);
    q[3] = open_q(&f, "SELECT p.id, t.b FROM p JOIN t ON t.a = p.k", NULL);
    q[4] = open_q(&f, "SELECT id, LIVE (SELECT id FROM t WHERE t.a = p.k) AS x FROM p", NULL);
    CHECK(f.sp.nreqs >= 5);
    CHECK_INT(sp_settle_ok(&f.sp, f.sp.reqs[0], 1), LDB_OK);
    CHECK_INT(sp_settle_fail(&f.sp, f.sp.reqs[1], "no"), LDB_OK);
    CHECK(stats(&f).demands >= 5);
    ldb_source_stats s;
    for (int i = 0; i < 5; i++)
        ldb_live_close(q[i]);
    s = stats(&f);
    CHECK_INT(s.demands, 0);
    CHECK_INT(s.requests_live, 0);
    CHECK_INT(s.queued, 0);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* Detach aborts and unloads every request once, runs destroy, turns the
 * queries READY and the table local. */
static void detach_unloads_once(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    ldb_live *q1 = open_q(&f, "SELECT id FROM t WHERE a = 1", NULL);
    ldb_live *q2 = open_q(&f, "SELECT id FROM t WHERE a = 2", NULL);
    CHECK_INT(sp_settle_ok(&f.sp, f.sp.reqs[0], 1), LDB_OK);
    struct sp_req *pending = f.sp.reqs[1];
    CHECK_INT(ldb_live_status(q2, NULL), LDB_STATUS_LOADING);
    CHECK_INT(ldb_source_detach(f.sp.src), LDB_OK);
    f.sp.src = NULL;
    CHECK_INT(f.sp.destroyed, 1);
    CHECK_INT(f.sp.reqs[0]->unloads, 1);
    CHECK_INT(f.sp.reqs[0]->aborts, 0);
    CHECK_INT(pending->aborts, 1);
    CHECK_INT(pending->unloads, 1);
    sp_check_laws(&f.sp, true);
    CHECK_INT(ldb_live_status(q1, NULL), LDB_STATUS_READY);
    CHECK_INT(ldb_live_status(q2, NULL), LDB_STATUS_READY);
    EXEC(f.db, "INSERT INTO t VALUES (100, 2, 'x')");
    CHECK_INT(ldb_live_count(q2), 1);
    ldb_live_close(q1);
    ldb_live_close(q2);
    ldb_close(f.db);
    CHECK_INT(f.sp.destroyed, 1);
    sp_free(&f.sp);
    sqlite3_close(f.auth);
}

/* ---- provider and status callbacks ------------------------------------------------------ */

/* What a provider callback may and may not do (livedb.h, ldb_provider). */
struct refusals {
    ldb *db;
    ldb_source *src;
    int loads;
    int insert_rc, open_rc, detach_rc, retry_rc, select_rc, close_code, poll_rc;
};

static int refusing_load(void *ctx, ldb_request *req)
{
    struct refusals *x = ctx;
    if (x->loads++)
        return ldb_request_settle(req, LDB_OK, NULL);
    x->insert_rc = ldb_exec(x->db, "INSERT INTO loc VALUES (1)", NULL, NULL);
    ldb_live *q = NULL;
    x->open_rc = ldb_live_open(x->db, "SELECT x FROM loc", NULL, NULL, &q);
    ldb_live_close(q);
    x->detach_rc = ldb_source_detach(x->src);
    x->poll_rc = ldb_source_poll(x->db);
    x->select_rc = ldb_exec(x->db, "SELECT count(*) FROM loc", NULL, NULL);
    ldb_close(x->db); /* does nothing but record LDB_MISUSE */
    x->close_code = ldb_errcode(x->db);
    return ldb_request_settle(req, LDB_OK, NULL);
}

static void provider_callback_refusals(void)
{
    struct fx f;
    fx_open_plain(&f, T_SCHEMA);
    EXEC(f.db, "CREATE TABLE loc(x INTEGER PRIMARY KEY)");
    struct refusals x = { .db = f.db };
    ldb_provider p = { refusing_load, NULL, NULL, NULL };
    CHECK_INT(ldb_source_attach(f.db, "t", LDB_SOURCE_ON_DEMAND, &p, &x, &x.src), LDB_OK);
    ldb_live *q = open_q(&f, "SELECT id FROM t", NULL);
    CHECK_INT(x.loads, 1);
    CHECK_INT(x.insert_rc, LDB_MISUSE);
    CHECK_INT(x.open_rc, LDB_MISUSE);
    CHECK_INT(x.detach_rc, LDB_MISUSE);
    CHECK_INT(x.poll_rc, LDB_MISUSE);
    CHECK_INT(x.select_rc, LDB_OK);
    CHECK_INT(x.close_code, LDB_MISUSE);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM loc"), 0);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    ldb_live_close(q);
    ldb_source_stats s;
    ldb_source_stats_get(x.src, &s);
    CHECK_INT(s.requests_live, 0);
    ldb_close(f.db);
    sqlite3_close(f.auth);
}

/* A status callback may close its query (a live query callback): the
 * demand is released at the same dispatch point, one unload. */
static void close_on_status(void *ctx, ldb_live *q, int status, const char *msg)
{
    int *closed = ctx;
    if (status != LDB_STATUS_LOADING) {
        ldb_live_close(q);
        (*closed)++;
    }
}

static void status_callback_closes(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    int closed = 0;
    ldb_live *q1 = open_q(&f, "SELECT id FROM t WHERE a = 1", NULL);
    ldb_live *q2 = open_q(&f, "SELECT id FROM t WHERE a = 2", NULL);
    CHECK_INT(ldb_live_set_status_callback(q1, close_on_status, &closed), LDB_OK);
    CHECK_INT(ldb_live_set_status_callback(q2, close_on_status, &closed), LDB_OK);
    CHECK_INT(sp_settle_ok(&f.sp, f.sp.reqs[0], 1), LDB_OK);
    CHECK_INT(closed, 1);
    CHECK_INT(f.sp.reqs[0]->unloads, 1);
    CHECK_INT(sp_settle_fail(&f.sp, f.sp.reqs[1], "gone"), LDB_OK);
    CHECK_INT(closed, 2);
    ldb_source_stats s = stats(&f);
    CHECK_INT(s.demands, 0);
    CHECK_INT(s.requests_live, 0);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* An EAGER load that fails: queries over the table are ERROR until a
 * retry asks again (whose load_subset may fail too). */
static void eager_failed_load_retry(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_EAGER);
    script_provider *sp = &f.sp;
    CHECK_INT(sp->nreqs, 1);
    CHECK_INT(sp_settle_fail(sp, sp->reqs[0], "eager load failed"), LDB_OK);
    ldb_live *q = open_q(&f, "SELECT id, a FROM t WHERE a = 3", NULL);
    CHECK_INT(sp->nreqs, 1);
    const char *msg = NULL;
    CHECK_INT(ldb_live_status(q, &msg), LDB_STATUS_ERROR);
    CHECK(msg && strstr(msg, "eager load failed"));
    sp->load_mode = SP_LOAD_FAIL;
    CHECK_INT(ldb_live_retry(q), LDB_OK);
    CHECK_INT(sp->nreqs, 2);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_ERROR);
    sp->load_mode = SP_LOAD_DEFER;
    CHECK_INT(ldb_live_retry(q), LDB_OK);
    CHECK_INT(sp->nreqs, 3);
    CHECK(ldb_request_pred(sp->reqs[2]->req) == NULL);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    CHECK_INT(sp_settle_ok(sp, sp->reqs[2], 2), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, q, "SELECT id, a FROM t WHERE a = 3");
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t"), 12);
    ldb_live_close(q);
    CHECK_INT(sp->reqs[2]->unloads, 0); /* the eager demand stays */
    sp_check_laws(sp, false);
    ldb_close(f.db);
    CHECK_INT(sp->reqs[2]->unloads, 1);
    CHECK_INT(sp->destroyed, 1);
    sp_check_laws(sp, true);
    sp_free(sp);
    sqlite3_close(f.auth);
}

/* ---- sync values ------------------------------------------------------------------------- */

/* Values are converted by the column's affinity as INSERT does; an
 * update of an absent key is a no-op; a column out of range is
 * LDB_RANGE. */
static void sync_affinity_and_update(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    EXEC(f.db, "CREATE TABLE ref(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)");
    ldb_sync *t;
    ldb_receipt *rec;
    CHECK_INT(ldb_sync_begin(f.sp.src, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_text(t, 0, "7", -1), LDB_OK);
    CHECK_INT(ldb_sync_text(t, 1, "42", -1), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 2, 5), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 8), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 1, 1), LDB_OK);
    CHECK_INT(ldb_sync_update(t), LDB_OK); /* no row 8: nothing */
    CHECK_INT(ldb_sync_commit(t, &rec), LDB_OK);
    CHECK_INT(ldb_receipt_state(rec), LDB_RECEIPT_APPLIED);
    ldb_receipt_free(rec);
    EXEC(f.db, "INSERT INTO ref VALUES ('7', '42', 5)");
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t"), 1);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t JOIN ref USING (id) WHERE "
                              "typeof(t.a) = typeof(ref.a) AND typeof(t.b) = typeof(ref.b) "
                              "AND t.a = ref.a AND t.b = ref.b"),
              1);

    CHECK_INT(ldb_sync_begin(f.sp.src, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 3, 1), LDB_RANGE);
    ldb_sync_abandon(t);

    CHECK_INT(ldb_sync_begin(f.sp.src, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 7), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 1, 43), LDB_OK);
    CHECK_INT(ldb_sync_update(t), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, NULL), LDB_OK);
    CHECK_INT(count_sql(f.db, "SELECT a FROM t WHERE id = 7"), 43);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t WHERE b IS NULL"), 1); /* unset: NULL */
    CHECK_INT(stats(&f).rows_written, 2);
    fx_close(&f);
}

/* ---- what is pushed ---------------------------------------------------------------------- */

static void pushdown_shapes(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT COLLATE NOCASE)");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "t", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);

    ldb_live *q1 = open_q(&f, "SELECT id FROM t WHERE a >= 2 AND b IS NOT NULL", NULL);
    const ldb_pred *p = ldb_request_pred(last_req(&f)->req);
    CHECKF(p && ldb_pred_kind(p) == LDB_PRED_AND && ldb_pred_count(p) == 2, "%s",
           last_req(&f)->sql);
    int kinds = ldb_pred_kind(ldb_pred_child(p, 0)) * 10 + ldb_pred_kind(ldb_pred_child(p, 1));
    CHECKF(kinds == LDB_PRED_CMP * 10 + LDB_PRED_NOTNULL || kinds == LDB_PRED_NOTNULL * 10 + LDB_PRED_CMP,
           "%s", last_req(&f)->sql);

    /* under NOCASE: pushed with its collation, or not at all (a superset) */
    ldb_live *q2 = open_q(&f, "SELECT id FROM t WHERE b = 'X'", NULL);
    p = find_in(ldb_request_pred(last_req(&f)->req), "b");
    CHECKF(!p || ldb_pred_collation(p) == LDB_COLL_NOCASE, "%s", last_req(&f)->sql);

    ldb_stmt *st;
    CHECK_INT(ldb_prepare(f.db, "SELECT id FROM t WHERE a = ?1 OR a IN (?2, 9)", -1, &st, NULL),
              LDB_OK);
    ldb_bind_int64(st, 1, 3);
    ldb_bind_int64(st, 2, 4);
    ldb_live *q3 = NULL;
    CHECK_INT(ldb_live_open_stmt(st, NULL, NULL, &q3), LDB_OK);
    ldb_finalize(st);
    struct sp_req *r = last_req(&f);
    p = ldb_request_pred(r->req);
    CHECKF(p && ldb_pred_kind(p) == LDB_PRED_OR, "%s", r->sql);
    bool saw3 = false, saw4 = false;
    for (int i = 0; i < ldb_request_param_count(r->req); i++) {
        saw3 |= ldb_value_int64(ldb_request_param(r->req, i)) == 3;
        saw4 |= ldb_value_int64(ldb_request_param(r->req, i)) == 4;
    }
    CHECKF(saw3 && saw4, "the bound values are the request's parameters: %s", r->sql);

    /* An OR with a branch that cannot be pushed asks for a superset. */
    ldb_live *q4 = open_q(&f, "SELECT id FROM t WHERE a = 1 OR length(b) = 2", NULL);
    bool every_row = false; /* its own request, or q2's when b = 'X' was not pushed */
    for (int i = 0; i < f.sp.nreqs; i++)
        every_row |= f.sp.reqs[i]->loaded && ldb_request_pred(f.sp.reqs[i]->req) == NULL &&
                     strcmp(f.sp.reqs[i]->sql, "TRUE") == 0;
    CHECKF(every_row, "no request asks for every row; the last: %s", last_req(&f)->sql);

    for (int i; (i = sp_pick_pending(&f.sp)) >= 0;)
        CHECK_INT(sp_settle_ok(&f.sp, f.sp.reqs[i], 1), LDB_OK);
    check_same(&f, q1, "SELECT id FROM t WHERE a >= 2 AND b IS NOT NULL");
    check_same(&f, q2, "SELECT id FROM t WHERE b = 'X'");
    check_same(&f, q4, "SELECT id FROM t WHERE a = 1 OR length(b) = 2");
    ldb_live_close(q1);
    ldb_live_close(q2);
    ldb_live_close(q3);
    ldb_live_close(q4);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* The same child demand from two queries shares the params: the second
 * query's buckets already covered make no request and are READY. */
static void child_params_shared(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE c(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)");
    auth_exec(&f, "INSERT INTO c VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "c", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    EXEC(f.db, "CREATE TABLE p(id INTEGER PRIMARY KEY, k INTEGER);"
               "CREATE TABLE p2(id INTEGER PRIMARY KEY, k INTEGER);"
               "INSERT INTO p VALUES (1, 10), (2, 20); INSERT INTO p2 VALUES (1, 20), (2, 30)");
    ldb_live *q1 = open_q(&f, "SELECT id, k, LIVE (SELECT id, v FROM c WHERE c.k = p.k) AS x FROM p",
                          NULL);
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK);
    ldb_live *q2 = open_q(&f, "SELECT id, k, LIVE (SELECT id, v FROM c WHERE c.k = p2.k) AS x "
                              "FROM p2", NULL);
    CHECK_INT(f.sp.nreqs, 2);
    const ldb_pred *in = find_in(ldb_request_pred(last_req(&f)->req), "k");
    CHECKF(in && ldb_pred_count(in) == 1 && pred_has_value(in, 30), "request: %s",
           last_req(&f)->sql);
    CHECK_INT(ldb_live_status(child_of(q2, 20), NULL), LDB_STATUS_READY);
    CHECK_INT(ldb_live_status(child_of(q2, 30), NULL), LDB_STATUS_LOADING);
    CHECK_INT(stats(&f).demands, 3);
    ldb_live_close(q1);
    CHECK_INT(f.sp.reqs[0]->unloads, 0); /* k 20 is still q2's */
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK);
    CHECK_INT(ldb_live_status(q2, NULL), LDB_STATUS_READY);
    check_same(&f, child_of(q2, 20), "SELECT id, v FROM c WHERE k = 20");
    ldb_live_close(q2);
    sp_check_laws(&f.sp, true);
    CHECK_INT(stats(&f).requests_live, 0);
    fx_close(&f);
}

/* A comparison's own collation is part of what is asked: the request's
 * SQL must select, over the table's schema, the rows the query's
 * comparison matches ('b1' for 'B1' COLLATE NOCASE on a BINARY column),
 * or ask for a superset. */
static void pushed_collation_sql(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    const char *sql = "SELECT id FROM t WHERE b = 'B1' COLLATE NOCASE";
    ldb_live *q = open_q(&f, sql, NULL);
    struct sp_req *r = last_req(&f);
    const ldb_pred *p = find_in(ldb_request_pred(r->req), "b");
    CHECKF(!p || ldb_pred_collation(p) == LDB_COLL_NOCASE, "%s", r->sql);
    CHECK_INT(sp_settle_ok(&f.sp, r, 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    CHECKF(ldb_live_count(q) == 4,
           "the request asks for %s: SQLite gives %lld of the 4 rows 'B1' COLLATE NOCASE matches",
           r->sql, (long long)ldb_live_count(q));
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* A BINARY comparison pushed on a NOCASE column: the request's SQL over
 * the table's schema must still select every row the comparison matches
 * ('x', 'y' and 'Y' are > 'X' bytewise; under the column's NOCASE only
 * 'y' and 'Y' are), e.g. by saying COLLATE BINARY, or ask for more. */
static void binary_compare_on_nocase_column(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE u(id INTEGER PRIMARY KEY, b TEXT COLLATE NOCASE)");
    auth_exec(&f, "INSERT INTO u VALUES (1, 'x'), (2, 'X'), (3, 'y'), (4, 'Y')");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "u", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    ldb_live *q = open_q(&f, "SELECT id FROM u WHERE b > 'X' COLLATE BINARY", NULL);
    struct sp_req *r = last_req(&f);
    CHECK_INT(sp_settle_ok(&f.sp, r, 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    CHECKF(ldb_live_count(q) == 3, "the request asks for %s: it gives %lld of the 3 rows", r->sql,
           (long long)ldb_live_count(q));
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* Two queries differing only by a comparison's collation are different
 * demand: a BINARY request cannot serve the NOCASE query. */
static void collation_is_demand(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    ldb_live *q1 = open_q(&f, "SELECT id FROM t WHERE b = 'B1'", NULL);
    ldb_live *q2 = open_q(&f, "SELECT id FROM t WHERE b = 'B1' COLLATE NOCASE", NULL);
    CHECKF(f.sp.nreqs == 2, "b = 'B1' and b = 'B1' COLLATE NOCASE share request %s",
           last_req(&f)->sql);
    ldb_live_close(q1);
    ldb_live_close(q2);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* The same for a LIVE child correlated under the parent column's
 * collation (x.b = c.b: the left operand's NOCASE decides). */
static void child_key_collation(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE c(id INTEGER PRIMARY KEY, b TEXT)");
    auth_exec(&f, "INSERT INTO c VALUES (1, 'x'), (2, 'X'), (3, 'y')");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "c", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    EXEC(f.db, "CREATE TABLE p(id INTEGER PRIMARY KEY, b TEXT COLLATE NOCASE);"
               "INSERT INTO p VALUES (1, 'x')");
    ldb_live *q = open_q(&f, "SELECT id, b, LIVE (SELECT id FROM c WHERE p.b = c.b) AS k FROM p",
                         NULL);
    struct sp_req *r = last_req(&f);
    const ldb_pred *in = find_in(ldb_request_pred(r->req), "b");
    CHECKF(!in || ldb_pred_collation(in) == LDB_COLL_NOCASE, "%s", r->sql);
    CHECK_INT(sp_settle_ok(&f.sp, r, 1), LDB_OK);
    ldb_live *h = child_of_text(q, "x");
    CHECK_INT(ldb_live_status(h, NULL), LDB_STATUS_READY);
    CHECKF(ldb_live_count(h) == 2, "the request %s gave %lld of the 2 rows 'x' matches under NOCASE",
           r->sql, (long long)ldb_live_count(h));
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* Law 10: demand that went away does not block readiness; the request
 * that served only it is aborted and unloaded, and its late settle
 * changes nothing. */
static void obsolete_demand_does_not_block(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE c(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)");
    auth_exec(&f, "INSERT INTO c VALUES (1, 10, 'a'), (2, 20, 'b')");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "c", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    f.sp.ignore_cancel = true;
    EXEC(f.db, "CREATE TABLE p(id INTEGER PRIMARY KEY, k INTEGER); INSERT INTO p VALUES (1, 10)");
    struct watch w = { 0 };
    ldb_live *q = open_q(&f, "SELECT id, k, LIVE (SELECT id, v FROM c WHERE c.k = p.k) AS x FROM p",
                         &w);
    struct sp_req *r1 = last_req(&f);
    EXEC(f.db, "INSERT INTO p VALUES (2, 20)");
    CHECK_INT(f.sp.nreqs, 2);
    struct sp_req *r2 = last_req(&f);
    CHECK_INT(sp_settle_ok(&f.sp, r1, 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    EXEC(f.db, "DELETE FROM p WHERE id = 2");
    CHECK_INT(r2->aborts, 1);
    CHECK_INT(r2->unloads, 1);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    CHECK(w.nstatus >= 1 && w.status[w.nstatus - 1] == LDB_STATUS_READY);
    int n = w.nstatus;
    CHECK_INT(sp_settle_ok(&f.sp, r2, 1), LDB_OK); /* late: its writes are dropped */
    CHECK_INT(w.nstatus, n);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM c WHERE k = 20"), 0);
    CHECK_INT(ldb_live_retry(q), LDB_OK); /* nothing failed: nothing asked */
    CHECK_INT(f.sp.nreqs, 2);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    CHECK_INT(stats(&f).requests_live, 0);
    fx_close(&f);
}

/* A grouped request that fails fails every bucket it served; a retry on
 * one handle asks for its bucket alone, a retry on the root for the
 * rest, in one request. */
static void grouped_failure_retry(void)
{
    struct fx f;
    fx_open_plain(&f, "CREATE TABLE c(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)");
    auth_exec(&f, "INSERT INTO c VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')");
    CHECK_INT(sp_init(&f.sp, f.db, f.auth, "c", LDB_SOURCE_ON_DEMAND, &f.r), LDB_OK);
    EXEC(f.db, "CREATE TABLE p(id INTEGER PRIMARY KEY, k INTEGER);"
               "INSERT INTO p VALUES (1, 10), (2, 20), (3, 30)");
    ldb_live *q = open_q(&f, "SELECT id, k, LIVE (SELECT id, v FROM c WHERE c.k = p.k) AS x FROM p",
                         NULL);
    CHECK_INT(f.sp.nreqs, 1);
    CHECK_INT(sp_settle_fail(&f.sp, last_req(&f), "partition offline"), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_ERROR);
    ldb_live *h10 = child_of(q, 10), *h20 = child_of(q, 20);
    const char *msg = NULL;
    CHECK_INT(ldb_live_status(h10, &msg), LDB_STATUS_ERROR);
    CHECK(msg && strstr(msg, "partition offline"));
    CHECK_INT(ldb_live_status(h20, NULL), LDB_STATUS_ERROR);

    CHECK_INT(ldb_live_retry(h10), LDB_OK);
    CHECK_INT(f.sp.nreqs, 2);
    const ldb_pred *in = find_in(ldb_request_pred(last_req(&f)->req), "k");
    CHECKF(in && ldb_pred_count(in) == 1 && pred_has_value(in, 10), "%s", last_req(&f)->sql);
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK);
    CHECK_INT(ldb_live_status(h10, NULL), LDB_STATUS_READY);
    CHECK_INT(ldb_live_status(h20, NULL), LDB_STATUS_ERROR);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_ERROR);

    CHECK_INT(ldb_live_retry(q), LDB_OK);
    CHECK_INT(f.sp.nreqs, 3);
    in = find_in(ldb_request_pred(last_req(&f)->req), "k");
    CHECKF(in && ldb_pred_count(in) == 2 && pred_has_value(in, 20) && pred_has_value(in, 30),
           "%s", last_req(&f)->sql);
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, child_of(q, 30), "SELECT id, v FROM c WHERE k = 30");
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    CHECK_INT(stats(&f).requests_live, 0);
    fx_close(&f);
}

/* A loaded window keeps its demand: a row the source adds that enters
 * the window reaches it through a change feed that forwards what loaded
 * requests ask for (the window's page requests must stay loaded while it
 * is open, or the provider cannot know the row is wanted). */
static void window_keeps_demand(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    const char *sql = "SELECT id, b FROM t WHERE a <> 0 ORDER BY b, id LIMIT 2";
    ldb_live *q = open_q(&f, sql, NULL);
    for (int round = 0; round < 10 && sp_count_pending(&f.sp); round++)
        for (int i; (i = sp_pick_pending(&f.sp)) >= 0;)
            CHECK_INT(sp_settle_ok(&f.sp, f.sp.reqs[i], 1), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    check_same(&f, q, "SELECT id, b FROM t WHERE a <> 0 ORDER BY b, id LIMIT 2");
    auth_exec(&f, "INSERT INTO t VALUES (20, 1, 'a0')");
    CHECK_INT(sp_forward(&f.sp, 20), LDB_OK);
    int loaded = 0;
    for (int i = 0; i < f.sp.nreqs; i++)
        loaded += f.sp.reqs[i]->loaded;
    CHECKF(count_sql(f.db, "SELECT count(*) FROM t WHERE id = 20") == 1,
           "the READY window's %d requests: %d still loaded, so the feed did not send the new row",
           f.sp.nreqs, loaded);
    check_same(&f, q, "SELECT id, b FROM t WHERE a <> 0 ORDER BY b, id LIMIT 2");
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* ---- another thread ------------------------------------------------------------------------ */

struct thread_job {
    script_provider *sp;
    struct sp_req *q;
    int rc;
};

static void *settle_job(void *arg)
{
    struct thread_job *j = arg;
    j->rc = sp_settle_ok(j->sp, j->q, 2);
    return NULL;
}

/* Commits and a settle made on another thread wait in the queue (the fd
 * readable) until a dispatch point applies them, in order (law 7). */
static void settle_from_thread(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    struct watch w = { 0 };
    const char *sql = "SELECT id, a, b FROM t WHERE a = 2";
    ldb_live *q = open_q(&f, sql, &w);
    int fd = ldb_source_fd(f.db);
    CHECK(fd >= 0);
    struct thread_job j = { &f.sp, last_req(&f), -1 };
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, settle_job, &j), 0);
    CHECK_INT(pthread_join(th, NULL), 0);
    CHECK_INT(j.rc, LDB_OK);
    CHECK_INT(f.sp.npending_receipts, 2);
    CHECK(fd_readable(fd));
    CHECK_INT(ldb_receipt_state(f.sp.pending_receipts[1].rc), LDB_RECEIPT_PENDING);
    CHECK_INT(w.nstatus, 0);
    /* The end of any ldb_ call on the database is a dispatch point too:
     * poll is the one a program calls when the fd says so. */
    CHECK_INT(ldb_source_poll(f.db), LDB_OK);
    CHECK(!fd_readable(fd));
    sp_check_receipts(&f.sp);
    CHECK_INT(f.sp.receipts_applied, 2);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    CHECK_INT(w.count_at_ready, 3);
    check_same(&f, q, sql);
    ldb_live_close(q);
    sp_check_laws(&f.sp, true);
    fx_close(&f);
}

/* Four provider threads commit change-feed transactions while the home
 * thread writes a local table and polls: every transaction is applied
 * once, in each thread's order, and the live result follows. */
struct stress_job {
    ldb_source *src;
    int base, n;
    atomic_int applied; /* read by the home thread while this one runs */
};

static void *stress_job(void *arg)
{
    struct stress_job *j = arg;
    for (int i = 0; i < j->n; i++) {
        ldb_sync *t;
        if (ldb_sync_begin(j->src, NULL, &t) != LDB_OK)
            return NULL;
        ldb_sync_int64(t, 0, j->base + i % 10);
        ldb_sync_int64(t, 1, i);
        ldb_sync_text(t, 2, "thread", -1);
        if (i % 7 == 6)
            ldb_sync_delete(t);
        else
            ldb_sync_upsert(t);
        ldb_receipt *rec;
        if (ldb_sync_commit(t, &rec) != LDB_OK)
            return NULL;
        while (ldb_receipt_state(rec) == LDB_RECEIPT_PENDING)
            sched_yield();
        atomic_fetch_add(&j->applied, ldb_receipt_state(rec) == LDB_RECEIPT_APPLIED);
        ldb_receipt_free(rec);
    }
    return NULL;
}

static void thread_stress(void)
{
    struct fx f;
    fx_open(&f, LDB_SOURCE_ON_DEMAND);
    EXEC(f.db, "CREATE TABLE loc(x INTEGER PRIMARY KEY)");
    const char *sql = "SELECT count(*), sum(a) FROM t";
    ldb_live *q = open_q(&f, sql, NULL);
    CHECK_INT(sp_settle_ok(&f.sp, last_req(&f), 1), LDB_OK); /* the 12 rows of SQLite */
    int fd = ldb_source_fd(f.db);
    enum { NT = 4, N = 300 };
    struct stress_job jobs[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i].src = f.sp.src;
        jobs[i].base = 1000 + 100 * i;
        jobs[i].n = N;
        atomic_init(&jobs[i].applied, 0);
        CHECK_INT(pthread_create(&th[i], NULL, stress_job, &jobs[i]), 0);
    }
    for (int k = 0, done = 0; !done; k++) {
        char ins[64];
        snprintf(ins, sizeof ins, "INSERT INTO loc VALUES (%d)", k);
        EXEC(f.db, ins);
        if (fd_readable(fd))
            CHECK_INT(ldb_source_poll(f.db), LDB_OK);
        done = 1;
        for (int i = 0; i < NT; i++)
            done &= atomic_load(&jobs[i].applied) == N;
        CHECKF(k < 10000000, "the threads' transactions are not applied");
    }
    for (int i = 0; i < NT; i++)
        CHECK_INT(pthread_join(th[i], NULL), 0);
    CHECK_INT(ldb_source_poll(f.db), LDB_OK);
    /* each thread's key base + r holds its last write: i = N-10+r, unless
     * that was a delete (i % 7 == 6) */
    int64_t rows = 12, sum = 0;
    for (int r = 0; r < 12; r++)
        sum += (r + 1) % 4;
    for (int i = 0; i < NT; i++)
        for (int r = 0; r < 10; r++) {
            int last = N - 10 + r;
            if (last % 7 != 6) {
                rows++;
                sum += last;
            }
        }
    char want[64];
    snprintf(want, sizeof want, "i:%lld|i:%lld", (long long)rows, (long long)sum);
    cmp_result a;
    sp_live_rows(q, &a);
    CHECKF(a.n == 1 && strcmp(a.rows[0], want) == 0, "live result %s, wanted %s",
           a.n ? a.rows[0] : "(none)", want);
    cmp_result_free(&a);
    CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t"), rows);
    ldb_source_stats s = stats(&f);
    CHECK_INT(s.txns_applied, NT * N + 1);
    CHECK_INT(s.queued, 0);
    ldb_live_close(q);
    fx_close(&f);
}

/* ---- allocation failures ----------------------------------------------------------- */

/* What a failed call must leave as it was: the store, the source's
 * counters, the provider's requests and the query's status and rows. */
static char *picture(struct fx *f, ldb_live *q)
{
    char *store = nomem_store_dump(f->db->store);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    fprintf(out, "%s", store);
    free(store);
    if (f->sp.src) {
        ldb_source_stats s = stats(f);
        fprintf(out, "demands %llu live %llu queued %llu requests %llu settles %llu\n",
                (unsigned long long)s.demands, (unsigned long long)s.requests_live,
                (unsigned long long)s.queued, (unsigned long long)s.requests,
                (unsigned long long)s.settles);
    }
    fprintf(out, "provider requests %d\n", f->sp.nreqs);
    if (q)
        fprintf(out, "query %d rows %lld\n", ldb_live_status(q, NULL),
                (long long)ldb_live_count(q));
    fclose(out);
    return text;
}

enum sweep_op { OP_ATTACH, OP_OPEN, OP_COMMIT, OP_SETTLE, OP_BUCKET, OP_DETACH, OP_CLOSE, OP_RETRY };

static const char *const SWEEP_SQL = "SELECT id, b FROM t WHERE a = 1";
static const char *const BUCKET_SQL =
    "SELECT id, k, LIVE (SELECT id, b FROM t WHERE t.a = p.k) AS x FROM p";

static void sweep_setup(struct fx *f, enum sweep_op op, ldb_live **q)
{
    *q = NULL;
    if (op == OP_ATTACH) {
        fx_open_plain(f, T_SCHEMA);
        return;
    }
    fx_open(f, LDB_SOURCE_ON_DEMAND);
    if (op == OP_OPEN)
        return;
    if (op == OP_BUCKET) { /* a child over t whose new bucket asks for more */
        EXEC(f->db, "CREATE TABLE p(id INTEGER PRIMARY KEY, k INTEGER); INSERT INTO p VALUES (1, 1)");
        *q = open_q(f, BUCKET_SQL, NULL);
        CHECK_INT(sp_settle_ok(&f->sp, last_req(f), 1), LDB_OK);
        return;
    }
    *q = open_q(f, SWEEP_SQL, NULL);
    if (op == OP_RETRY) { /* its request failed */
        CHECK_INT(sp_settle_fail(&f->sp, last_req(f), "failed"), LDB_OK);
        return;
    }
    if (op == OP_DETACH || op == OP_CLOSE) { /* its request pending, with a row written */
        CHECK_INT(sp_write_keys(&f->sp, last_req(f), (int64_t[]){ 1 }, 1), LDB_OK);
        return;
    }
    CHECK_INT(sp_write_keys(&f->sp, last_req(f), (int64_t[]){ 1, 5, 9 }, 3), LDB_OK);
    if (op == OP_COMMIT)
        CHECK_INT(sp_settle_ok(&f->sp, last_req(f), 1), LDB_OK);
}

static int sweep_run(struct fx *f, enum sweep_op op, ldb_live **q)
{
    switch (op) {
    case OP_ATTACH: return sp_init(&f->sp, f->db, f->auth, "t", LDB_SOURCE_ON_DEMAND, &f->r);
    case OP_OPEN: return ldb_live_open(f->db, SWEEP_SQL, NULL, NULL, q);
    case OP_COMMIT: {
        ldb_sync *t = NULL;
        int rc = ldb_sync_begin(f->sp.src, NULL, &t);
        if (rc != LDB_OK)
            return rc;
        if ((rc = ldb_sync_int64(t, 0, 13)) != LDB_OK || (rc = ldb_sync_int64(t, 1, 1)) != LDB_OK ||
            (rc = ldb_sync_text(t, 2, "nine", -1)) != LDB_OK || (rc = ldb_sync_upsert(t)) != LDB_OK) {
            ldb_sync_abandon(t);
            return rc;
        }
        ldb_receipt *rec = NULL;
        rc = ldb_sync_commit(t, &rec);
        if (rec) {
            int st = ldb_receipt_state(rec);
            CHECKF(rc == LDB_OK ? st == LDB_RECEIPT_APPLIED : st == LDB_RECEIPT_FAILED,
                   "commit rc %d receipt %d", rc, st);
            ldb_receipt_free(rec);
        }
        return rc;
    }
    case OP_SETTLE: return sp_settle(&f->sp, last_req(f), LDB_OK, NULL);
    case OP_BUCKET: return ldb_exec(f->db, "INSERT INTO p VALUES (2, 2)", NULL, NULL);
    case OP_CLOSE:
        ldb_live_close(*q);
        *q = NULL;
        return LDB_OK;
    case OP_RETRY: return ldb_live_retry(*q);
    case OP_DETACH: {
        int rc = ldb_source_detach(f->sp.src);
        if (rc == LDB_OK)
            f->sp.src = NULL;
        return rc;
    }
    }
    return LDB_INTERNAL;
}

static uint64_t sweep_at; /* the allocation that failed, for messages */
static int sweep_on;     /* and whether failures persisted */

/* After the call succeeded (failures off): the whole path still works. */
static void sweep_finish(struct fx *f, enum sweep_op op, ldb_live *q)
{
    if (op == OP_ATTACH) {
        CHECK(f->sp.src != NULL);
        q = open_q(f, SWEEP_SQL, NULL);
    }
    if (op == OP_CLOSE) { /* its request aborted and unloaded once */
        CHECKF(f->sp.reqs[0]->aborts == 1 && f->sp.reqs[0]->unloads == 1,
               "op %d allocation %llu%s: the pending request got %d aborts, %d unloads", op,
               (unsigned long long)sweep_at, sweep_on ? " on" : "", f->sp.reqs[0]->aborts,
               f->sp.reqs[0]->unloads);
        ldb_source_stats s = stats(f);
        CHECK_INT(s.demands, 0);
        CHECK_INT(s.requests_live, 0);
        return;
    }
    CHECK(q != NULL);
    const char *sql = op == OP_BUCKET ? BUCKET_SQL : SWEEP_SQL;
    if (ldb_live_error(q, NULL) == LDB_NOMEM) {
        /* A commit that maintained q out of memory failed q, not the commit
         * (livedb.h): a new query shows the table. */
        CHECKF(op == OP_COMMIT || op == OP_BUCKET, "op %d allocation %llu: the query failed", op,
               (unsigned long long)sweep_at);
        ldb_live_close(q);
        q = open_q(f, sql, NULL);
    }
    if (op == OP_DETACH) { /* every request unloaded once; READY over the rows it has */
        CHECK_INT(f->sp.destroyed, 1);
        CHECKF(f->sp.reqs[0]->aborts == 1 && f->sp.reqs[0]->unloads == 1,
               "op %d allocation %llu%s: the pending request got %d aborts, %d unloads", op,
               (unsigned long long)sweep_at, sweep_on ? " on" : "", f->sp.reqs[0]->aborts,
               f->sp.reqs[0]->unloads);
        CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
        CHECK_INT(ldb_live_count(q), 1);
        ldb_live_close(q);
        return;
    }
    /* A dispatch that failed for want of memory leaves the query in ERROR
     * (or its request unmade): retry and settle until READY. */
    for (int round = 0; round < 3 && ldb_live_status(q, NULL) != LDB_STATUS_READY; round++) {
        if (ldb_live_status(q, NULL) == LDB_STATUS_ERROR)
            CHECK_INT(ldb_live_retry(q), LDB_OK);
        for (int i; (i = sp_pick_pending(&f->sp)) >= 0;)
            CHECK_INT(sp_settle_ok(&f->sp, f->sp.reqs[i], 1), LDB_OK);
    }
    const char *msg = NULL;
    int st = ldb_live_status(q, &msg);
    CHECKF(st == LDB_STATUS_READY, "op %d allocation %llu%s: status %d (%s), %d requests", op,
           (unsigned long long)sweep_at, sweep_on ? " on" : "", st, msg ? msg : "", f->sp.nreqs);
    const char *err = NULL;
    CHECKF(ldb_live_error(q, &err) == LDB_OK, "op %d allocation %llu%s: the query failed: %s", op,
           (unsigned long long)sweep_at, sweep_on ? " on" : "", err ? err : "");
    if (op == OP_COMMIT)
        CHECKF(ldb_live_count(q) == 4, "op %d allocation %llu%s: %lld rows", op,
               (unsigned long long)sweep_at, sweep_on ? " on" : "", (long long)ldb_live_count(q));
    else if (op == OP_BUCKET)
        check_same(f, child_of(q, 2), "SELECT id, b FROM t WHERE a = 2");
    else
        check_same(f, q, SWEEP_SQL);
    ldb_live_close(q);
    ldb_source_stats s = stats(f);
    CHECK_INT(s.demands, 0);
    CHECK_INT(s.requests_live, 0);
}

static void sweep(enum sweep_op op, int persistent)
{
    for (uint64_t n = 1;; n++) {
        int64_t live0 = mem_live();
        struct fx f;
        ldb_live *q;
        sweep_setup(&f, op, &q);
        char *before = picture(&f, q);
        ldb_live *opened = NULL;
        sweep_at = n;
        sweep_on = persistent;
        mem_fail_at(n, persistent);
        int rc = sweep_run(&f, op, op == OP_OPEN ? &opened : &q);
        bool failed = mem_failed_count() > 0;
        char *after = rc != LDB_OK ? picture(&f, q) : NULL;
        mem_fail_at(0, 0);
        CHECKF(failed ? rc == LDB_OK || rc == LDB_NOMEM : rc == LDB_OK,
               "op %d allocation %llu: rc %d (%s)", op, (unsigned long long)n, rc,
               ldb_errmsg(f.db));
        if (op == OP_RETRY && rc == LDB_OK) { /* it asked again, or says why not */
            const char *msg = NULL;
            int st = ldb_live_status(q, &msg);
            CHECKF(f.sp.nreqs == 2 || st != LDB_STATUS_ERROR || !msg || strcmp(msg, "failed") != 0,
                   "allocation %llu%s: ldb_live_retry returned LDB_OK but asked nothing: %s", (unsigned long long)n,
                   persistent ? " on" : "", msg);
        }
        if (rc != LDB_OK) {
            CHECKF(strcmp(before, after) == 0, "op %d allocation %llu%s changed the state:\n%s\n%s",
                   op, (unsigned long long)n, persistent ? " on" : "", before, after);
            CHECK(opened == NULL);
            if (op == OP_ATTACH) {
                CHECK(f.sp.src == NULL);
                EXEC(f.db, "INSERT INTO t VALUES (50, 1, 'local')");
                EXEC(f.db, "DELETE FROM t WHERE id = 50");
                sp_free(&f.sp);
                rc = sp_init(&f.sp, f.db, f.auth, "t", LDB_SOURCE_ON_DEMAND, &f.r);
            } else {
                rc = sweep_run(&f, op, op == OP_OPEN ? &opened : &q);
            }
            CHECK_INT(rc, LDB_OK);
        }
        sweep_finish(&f, op, op == OP_OPEN ? opened : q);
        sp_check_laws(&f.sp, true);
        free(before);
        free(after);
        fx_close(&f);
        CHECKF(mem_live() == live0, "op %d allocation %llu: %lld blocks leaked", op,
               (unsigned long long)n, (long long)(mem_live() - live0));
        if (!failed)
            return;
    }
}

/* Building a transaction: a set or row call that fails for want of
 * memory leaves the transaction as it was, so the program repeats the
 * call and commits. */
static void nomem_sync_build(void)
{
    for (uint64_t n = 1;; n++) {
        int64_t live0 = mem_live();
        struct fx f;
        fx_open(&f, LDB_SOURCE_ON_DEMAND);
        ldb_sync *t;
        CHECK_INT(ldb_sync_begin(f.sp.src, NULL, &t), LDB_OK);
        CHECK_INT(ldb_sync_int64(t, 0, 1), LDB_OK);
        mem_fail_at(n, 0);
        int rc1 = ldb_sync_text(t, 2, "a text longer than any short value kept inline", -1);
        int rc2 = rc1 == LDB_OK ? ldb_sync_upsert(t) : LDB_OK;
        bool failed = mem_failed_count() > 0;
        mem_fail_at(0, 0);
        CHECK(rc1 == LDB_OK || rc1 == LDB_NOMEM);
        CHECK(rc2 == LDB_OK || rc2 == LDB_NOMEM);
        if (rc1 == LDB_NOMEM)
            CHECK_INT(ldb_sync_text(t, 2, "a text longer than any short value kept inline", -1),
                      LDB_OK);
        if (rc1 == LDB_NOMEM || rc2 == LDB_NOMEM)
            CHECK_INT(ldb_sync_upsert(t), LDB_OK);
        int rc = ldb_sync_commit(t, NULL);
        CHECKF(rc == LDB_OK, "allocation %llu failed in %s, repeated: the commit says %d",
               (unsigned long long)n, rc1 ? "ldb_sync_text" : "ldb_sync_upsert", rc);
        CHECK_INT(count_sql(f.db, "SELECT count(*) FROM t WHERE b IS NOT NULL"), 1);
        fx_close(&f);
        CHECK_INT(mem_live(), live0);
        if (!failed)
            return;
    }
}

static void nomem_new_bucket(void)
{
    sweep(OP_BUCKET, 0);
    sweep(OP_BUCKET, 1);
}

static void nomem_close(void)
{
    sweep(OP_CLOSE, 0);
    sweep(OP_CLOSE, 1);
}

static void nomem_retry(void)
{
    sweep(OP_RETRY, 0);
    sweep(OP_RETRY, 1);
}

static void nomem_detach(void)
{
    sweep(OP_DETACH, 0);
    sweep(OP_DETACH, 1);
}

static void nomem_attach(void)
{
    sweep(OP_ATTACH, 0);
    sweep(OP_ATTACH, 1);
}

static void nomem_open(void)
{
    sweep(OP_OPEN, 0);
    sweep(OP_OPEN, 1);
}

static void nomem_commit(void)
{
    sweep(OP_COMMIT, 0);
    sweep(OP_COMMIT, 1);
}

static void nomem_settle(void)
{
    sweep(OP_SETTLE, 0);
    sweep(OP_SETTLE, 1);
}

TEST_MAIN(T(rows_while_loading_then_ready), T(failed_settle_then_retry),
          T(same_demand_one_request), T(close_pending_aborts), T(failed_load_no_unload),
          T(settle_inside_load), T(eager_one_request), T(parked_in_transaction), T(poll_inside_transaction),
          T(receipts_and_insert_rules), T(aborted_request_drops_txns), T(user_writes_refused),
          T(select_reads_cache), T(mv_over_on_demand_refused), T(attach_errors),
          T(child_grouped_request), T(stats_back_to_zero), T(detach_unloads_once),
          T(provider_callback_refusals), T(status_callback_closes), T(eager_failed_load_retry),
          T(sync_affinity_and_update), T(pushdown_shapes), T(child_params_shared),
          T(settle_from_thread), T(pushed_collation_sql), T(collation_is_demand), T(binary_compare_on_nocase_column),
          T(child_key_collation), T(thread_stress),
          T(obsolete_demand_does_not_block), T(grouped_failure_retry), T(window_keeps_demand),
          T(nomem_attach), T(nomem_open), T(nomem_commit), T(nomem_settle), T(nomem_sync_build),
          T(nomem_new_bucket), T(nomem_detach), T(nomem_close), T(nomem_retry))
