/*
 * test_source_laws.c - the demand plane's laws on hand-driven providers:
 * truncate replay as one publication barrier (law 9), stale settlements
 * (law 6), applied settlement order (law 7), sessions (stop/start), what
 * provider callbacks may not do, and space back to its baseline (law 13).
 *
 * The provider here only records requests; each test serves them by hand,
 * so every interleaving is explicit.
 */
#include "base/mem.h"
#include "livedb.h"
#include "test.h"
#include "test_db.h"

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct prov {
    ldb *db;
    ldb_source *src;
    ldb_request *req[64];
    int n, unloads, aborts;
    int unloaded[64];           /* per request: unload calls */
    int load_rc;                /* what load_subset returns */
    int refused;                /* calls refused inside load_subset */
    bool try_forbidden;
};

static int find(struct prov *p, ldb_request *r)
{
    for (int i = 0; i < p->n; i++)
        if (p->req[i] == r)
            return i;
    return -1;
}

static int load(void *ctx, ldb_request *r)
{
    struct prov *p = ctx;
    if (p->try_forbidden) {
        ldb_live *q;
        p->refused += ldb_exec(p->db, "CREATE TABLE zz(a INTEGER PRIMARY KEY)", NULL, NULL) ==
                      LDB_MISUSE;
        p->refused += ldb_exec(p->db, "BEGIN", NULL, NULL) == LDB_MISUSE;
        p->refused += ldb_live_open(p->db, "SELECT 1", NULL, NULL, &q) == LDB_MISUSE;
        p->refused += ldb_source_poll(p->db) == LDB_MISUSE;
        p->refused += ldb_source_stop(p->src) == LDB_MISUSE;
    }
    if (p->load_rc)
        return p->load_rc;
    CHECK(p->n < 64);
    ldb_request_ref(r);
    p->req[p->n++] = r;
    return LDB_OK;
}

static void unload(void *ctx, ldb_request *r)
{
    struct prov *p = ctx;
    int i = find(p, r);
    CHECK(i >= 0);
    p->unloaded[i]++;
    p->unloads++;
}

static void on_abort(void *ctx, ldb_request *r)
{
    struct prov *p = ctx;
    CHECK(ldb_request_aborted(r));
    p->aborts++;
}

static void prov_open(struct prov *p, int mode)
{
    memset(p, 0, sizeof *p);
    CHECK(ldb_open(NULL, &p->db) == LDB_OK);
    EXEC(p->db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, owner INTEGER, title TEXT)");
    ldb_provider v = { load, unload, on_abort, NULL };
    CHECKF(ldb_source_attach(p->db, "issues", mode, &v, p, &p->src) == LDB_OK, "%s",
           ldb_errmsg(p->db));
}

static void prov_close(struct prov *p)
{
    ldb_close(p->db);
    for (int i = 0; i < p->n; i++) {
        CHECKF(p->unloaded[i] <= 1, "request %d unloaded %d times", i, p->unloaded[i]);
        ldb_request_unref(p->req[i]);
    }
}

/* Writes rows ids[0..n) (owner = id % 3) for req (NULL: a change feed),
 * after a truncate when trunc; returns the receipt's state. */
static int serve(struct prov *p, ldb_request *req, const int *ids, int n, bool trunc)
{
    ldb_sync *t;
    CHECK(ldb_sync_begin(p->src, req, &t) == LDB_OK);
    if (trunc)
        CHECK(ldb_sync_truncate(t) == LDB_OK);
    for (int i = 0; i < n; i++) {
        char title[32];
        snprintf(title, sizeof title, "t%d", ids[i]);
        CHECK(ldb_sync_int64(t, 0, ids[i]) == LDB_OK);
        CHECK(ldb_sync_int64(t, 1, ids[i] % 3) == LDB_OK);
        CHECK(ldb_sync_text(t, 2, title, -1) == LDB_OK);
        CHECK(ldb_sync_upsert(t) == LDB_OK);
    }
    ldb_receipt *rc;
    ldb_sync_commit(t, &rc);
    int st = ldb_receipt_state(rc);
    ldb_receipt_free(rc);
    return st;
}

/* ---- a live query that records its batches and statuses ---- */

struct watch {
    int batches, changes;
    int statuses[16], nstatus;
    int64_t count_at_ready;     /* rows when READY was last reported */
    char text[512];             /* the result, "id,id,..." at the last read */
};

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct watch *w = ctx;
    (void)q;
    (void)c;
    w->batches++;
    w->changes += (int)n;
}

static void on_status(void *ctx, ldb_live *q, int st, const char *msg)
{
    struct watch *w = ctx;
    (void)msg;
    if (w->nstatus < 16)
        w->statuses[w->nstatus++] = st;
    if (st == LDB_STATUS_READY) {
        ldb_live_stats s;
        ldb_live_stats_get(q, &s);
        w->count_at_ready = s.result_rows;
    }
}

static int add_id(void *ctx, const ldb_row *r)
{
    struct watch *w = ctx;
    size_t len = strlen(w->text);
    snprintf(w->text + len, sizeof w->text - len, "%s%lld", len ? "," : "",
             (long long)ldb_row_int64(r, 0));
    return 0;
}

static const char *result(ldb_live *q, struct watch *w)
{
    w->text[0] = 0;
    CHECK(ldb_live_read(q, add_id, w) == LDB_OK);
    return w->text;
}

static ldb_live *watch_open(struct prov *p, const char *sql, struct watch *w)
{
    memset(w, 0, sizeof *w);
    ldb_live *q;
    CHECKF(ldb_live_open(p->db, sql, on_change, w, &q) == LDB_OK, "%s", ldb_errmsg(p->db));
    CHECK(ldb_live_set_status_callback(q, on_status, w) == LDB_OK);
    return q;
}

#define OWNER1 "SELECT id FROM issues WHERE owner = 1 ORDER BY id"

static void replay_publishes_one_batch(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    struct watch w;
    ldb_live *q = watch_open(&p, OWNER1, &w);
    CHECK(p.n == 1 && ldb_live_status(q, NULL) == LDB_STATUS_LOADING);
    int first[] = { 1, 4, 7, 10 };
    CHECK(serve(&p, p.req[0], first, 4, false) == LDB_RECEIPT_APPLIED);
    CHECK(ldb_request_settle(p.req[0], LDB_OK, NULL) == LDB_OK);
    CHECK(ldb_live_status(q, NULL) == LDB_STATUS_READY);
    CHECK(strcmp(result(q, &w), "1,4,7,10") == 0);
    int batches = w.batches;

    /* the truncate: the old lease goes (once), a new request is made */
    CHECK(serve(&p, NULL, NULL, 0, true) == LDB_RECEIPT_APPLIED);
    CHECK(p.n == 2 && p.unloaded[0] == 1);
    CHECKF(w.batches == batches, "law 9: a truncate published %d batches",
           w.batches - batches);
    CHECK(ldb_live_status(q, NULL) == LDB_STATUS_LOADING);
    CHECK(strcmp(result(q, &w), "1,4,7,10") == 0); /* the last complete result */
    /* partial replay: private */
    int part[] = { 4, 13 };
    CHECK(serve(&p, p.req[1], part, 2, false) == LDB_RECEIPT_APPLIED);
    CHECKF(w.batches == batches, "law 9: a partial replay was published");
    CHECK(strcmp(result(q, &w), "1,4,7,10") == 0);
    /* settled: the replacement in one batch, then READY */
    CHECK(ldb_request_settle(p.req[1], LDB_OK, NULL) == LDB_OK);
    CHECKF(w.batches == batches + 1, "law 9: the replacement took %d batches",
           w.batches - batches);
    CHECK(w.changes == 4 + 4); /* the first load, then -1 -7 -10 +13 */
    CHECK(strcmp(result(q, &w), "4,13") == 0);
    CHECK(ldb_live_status(q, NULL) == LDB_STATUS_READY);
    CHECKF(w.count_at_ready == 2, "READY came before the replacement (%lld rows)",
           (long long)w.count_at_ready);
    ldb_live_close(q);
    prov_close(&p);
}

static void replay_failure_keeps_result_until_retry(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    struct watch w;
    ldb_live *q = watch_open(&p, OWNER1, &w);
    int first[] = { 1, 4 };
    serve(&p, p.req[0], first, 2, false);
    ldb_request_settle(p.req[0], LDB_OK, NULL);
    int batches = w.batches;
    serve(&p, NULL, NULL, 0, true);
    ldb_request_settle(p.req[1], LDB_ERROR, "server down");
    const char *msg;
    CHECK(ldb_live_status(q, &msg) == LDB_STATUS_ERROR && strcmp(msg, "server down") == 0);
    /* later source changes stay private while the replay has failed */
    int feed[] = { 7 };
    CHECK(serve(&p, NULL, feed, 1, false) == LDB_RECEIPT_APPLIED);
    CHECKF(w.batches == batches, "law 9: a failed replay published");
    CHECK(strcmp(result(q, &w), "1,4") == 0);
    /* a retry that succeeds publishes everything at once */
    CHECK(ldb_live_retry(q) == LDB_OK);
    CHECK(p.n == 3);
    int again[] = { 4 };
    serve(&p, p.req[2], again, 1, false);
    CHECK(w.batches == batches);
    ldb_request_settle(p.req[2], LDB_OK, NULL);
    CHECK(w.batches == batches + 1);
    CHECK(strcmp(result(q, &w), "4,7") == 0);
    CHECK(ldb_live_status(q, NULL) == LDB_STATUS_READY);
    ldb_live_close(q);
    prov_close(&p);
}

/* A failure scoped to demand that retires stops gating the rest. */
static void replay_failure_of_retired_demand_stops_gating(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    struct watch wa, wb;
    ldb_live *a = watch_open(&p, OWNER1, &wa);
    ldb_live *b = watch_open(&p, "SELECT id FROM issues WHERE owner = 2 ORDER BY id", &wb);
    CHECK(p.n == 2);
    int one[] = { 1 }, two[] = { 2 };
    serve(&p, p.req[0], one, 1, false);
    serve(&p, p.req[1], two, 1, false);
    ldb_request_settle(p.req[0], LDB_OK, NULL);
    ldb_request_settle(p.req[1], LDB_OK, NULL);
    int bb = wb.batches;
    serve(&p, NULL, NULL, 0, true);
    CHECK(p.n == 4);
    /* which new request serves which query: by its SQL's parameter */
    int ra = ldb_value_int64(ldb_request_param(p.req[2], 0)) == 1 ? 2 : 3, rb = 5 - ra;
    ldb_request_settle(p.req[ra], LDB_ERROR, "a failed");
    int five[] = { 5 };
    serve(&p, p.req[rb], five, 1, false);
    ldb_request_settle(p.req[rb], LDB_OK, NULL);
    CHECKF(wb.batches == bb, "law 9: b published while a's replay failed");
    ldb_live_close(a);
    CHECKF(wb.batches == bb + 1, "law 9: the failure of retired demand still gates b");
    CHECK(strcmp(result(b, &wb), "5") == 0);
    CHECK(ldb_live_status(b, NULL) == LDB_STATUS_READY);
    ldb_live_close(b);
    prov_close(&p);
}

/* Law 6: a settlement of a request whose demand went away readies nothing. */
static void stale_settlement_readies_nothing(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    struct watch w;
    ldb_live *q = watch_open(&p, OWNER1, &w);
    ldb_live_close(q);
    CHECK(p.aborts == 1 && p.unloaded[0] == 1 && ldb_request_aborted(p.req[0]));
    q = watch_open(&p, OWNER1, &w);
    CHECK(p.n == 2 && ldb_request_id(p.req[1]) > ldb_request_id(p.req[0]));
    int rows[] = { 1 };
    CHECK(serve(&p, p.req[0], rows, 1, false) == LDB_RECEIPT_ABORTED);
    ldb_request_settle(p.req[0], LDB_OK, NULL);
    CHECKF(ldb_live_status(q, NULL) == LDB_STATUS_LOADING,
           "law 6: an obsolete settlement readied the current demand");
    CHECK(ldb_live_count(q) == 0);
    ldb_request_settle(p.req[1], LDB_OK, NULL);
    CHECK(ldb_live_status(q, NULL) == LDB_STATUS_READY);
    CHECK(ldb_request_settle(p.req[1], LDB_OK, NULL) == LDB_MISUSE); /* once */
    ldb_live_close(q);
    prov_close(&p);
}

/* ---- law 7 from another thread ---- */

struct feeder {
    struct prov *p;
    ldb_request *req;
    int n;
};

static void *feed_then_settle(void *arg)
{
    struct feeder *f = arg;
    for (int i = 0; i < f->n; i += 10) {
        int ids[10];
        for (int k = 0; k < 10; k++)
            ids[k] = 3 * (i + k) + 1; /* owner 1 */
        ldb_sync *t;
        ldb_sync_begin(f->p->src, f->req, &t);
        for (int k = 0; k < 10; k++) {
            ldb_sync_int64(t, 0, ids[k]);
            ldb_sync_int64(t, 1, 1);
            ldb_sync_upsert(t);
        }
        ldb_sync_commit(t, NULL);
    }
    ldb_request_settle(f->req, LDB_OK, NULL);
    return NULL;
}

static void applied_settlement_from_a_thread(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    struct watch w;
    ldb_live *q = watch_open(&p, OWNER1, &w);
    int fd = ldb_source_fd(p.db);
    CHECK(fd >= 0);
    struct feeder f = { &p, p.req[0], 200 };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, feed_then_settle, &f) == 0);
    for (int spins = 0; ldb_live_status(q, NULL) != LDB_STATUS_READY && spins < 100000; spins++) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        poll(&pfd, 1, 10);
        CHECK(ldb_source_poll(p.db) == LDB_OK);
    }
    pthread_join(th, NULL);
    CHECK(ldb_live_status(q, NULL) == LDB_STATUS_READY);
    CHECKF(w.count_at_ready == 200, "law 7: READY with %lld of 200 rows",
           (long long)w.count_at_ready);
    ldb_live_close(q);
    prov_close(&p);
}

/* ---- sessions ---- */

static void stop_fails_queries_and_start_asks_again(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    struct watch w;
    ldb_live *q = watch_open(&p, OWNER1, &w);
    ldb_sync *early;
    CHECK(ldb_sync_begin(p.src, NULL, &early) == LDB_OK);
    ldb_sync_int64(early, 0, 1);
    ldb_sync_int64(early, 1, 1);
    ldb_sync_upsert(early);
    CHECK(ldb_source_stop(p.src) == LDB_OK);
    CHECK(p.aborts == 1 && p.unloaded[0] == 1);
    const char *msg;
    CHECK(ldb_live_error(q, &msg) != LDB_OK && strstr(msg, "stopped"));
    CHECK(ldb_live_status(q, NULL) == LDB_STATUS_ERROR);
    ldb_receipt *rc;
    ldb_sync_commit(early, &rc); /* begun in the old session */
    CHECK(ldb_receipt_state(rc) == LDB_RECEIPT_ABORTED);
    ldb_receipt_free(rc);
    ldb_live_close(q);
    /* a query opened while stopped waits for the next session */
    struct watch w2;
    ldb_live *q2 = watch_open(&p, OWNER1, &w2);
    CHECK(p.n == 1 && ldb_live_status(q2, NULL) == LDB_STATUS_LOADING);
    CHECK(ldb_source_start(p.src) == LDB_OK);
    CHECK(p.n == 2);
    ldb_request_settle(p.req[0], LDB_OK, NULL); /* old session: ignored */
    CHECK(ldb_live_status(q2, NULL) == LDB_STATUS_LOADING);
    ldb_request_settle(p.req[1], LDB_OK, NULL);
    CHECK(ldb_live_status(q2, NULL) == LDB_STATUS_READY);
    ldb_live_close(q2);
    prov_close(&p);
}

static void provider_callbacks_are_refused_writes(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    p.try_forbidden = true;
    struct watch w;
    ldb_live *q = watch_open(&p, OWNER1, &w);
    CHECKF(p.refused == 5, "%d of 5 forbidden calls refused", p.refused);
    ldb_live_close(q);
    prov_close(&p);
}

static void failing_load_is_never_unloaded(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    p.load_rc = LDB_ERROR;
    struct watch w;
    ldb_live *q = watch_open(&p, OWNER1, &w);
    const char *msg;
    CHECK(ldb_live_status(q, &msg) == LDB_STATUS_ERROR && strstr(msg, "load_subset"));
    p.load_rc = LDB_OK;
    CHECK(ldb_live_retry(q) == LDB_OK);
    CHECK(p.n == 1 && ldb_live_status(q, NULL) == LDB_STATUS_LOADING);
    ldb_live_close(q);
    CHECK(p.unloads == 1); /* the retried one only */
    prov_close(&p);
}

/* Law 13: nothing of a query's demand stays once it is closed. */
static void space_returns_to_baseline(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    EXEC(p.db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
    EXEC(p.db, "INSERT INTO users VALUES (0,'a'),(1,'b'),(2,'c')");
    int64_t base = 0;
    for (int round = 0; round < 3; round++) {
        struct watch w;
        ldb_live *q = watch_open(&p,
                                 "SELECT u.name, LIVE (SELECT id FROM issues i WHERE i.owner = u.id) "
                                 "FROM users u",
                                 &w);
        CHECK(p.n == 1);
        const char *col;
        CHECK(ldb_request_keys(p.req[0], &col) == 3 && strcmp(col, "owner") == 0);
        CHECK(ldb_request_cursor(p.req[0]) == NULL && !ldb_request_order(p.req[0], 0, 0, 0));
        int rows[] = { 0, 1, 2, 3, 4, 5 };
        serve(&p, p.req[0], rows, 6, false);
        ldb_request_settle(p.req[0], LDB_OK, NULL);
        CHECK(ldb_live_status(q, NULL) == LDB_STATUS_READY);
        EXEC(p.db, "INSERT INTO users VALUES (9,'z')");
        CHECK(p.n == 2); /* the new bucket's key, alone */
        CHECK(ldb_request_keys(p.req[1], NULL) == 1 &&
              ldb_value_int64(ldb_request_key(p.req[1], 0)) == 9);
        EXEC(p.db, "DELETE FROM users WHERE id = 9");
        CHECK(p.unloaded[1] == 1);
        ldb_live_close(q);
        ldb_source_stats st;
        ldb_source_stats_get(p.src, &st);
        CHECKF(st.demands == 0 && st.requests_live == 0 && st.queued == 0,
               "law 13: %llu demands, %llu live requests left",
               (unsigned long long)st.demands, (unsigned long long)st.requests_live);
        /* the provider lets go of its requests too */
        for (int i = 0; i < p.n; i++)
            ldb_request_unref(p.req[i]);
        p.n = 0;
        memset(p.unloaded, 0, sizeof p.unloaded);
        /* after a first round (tables and maps at their size), nothing grows */
        if (round == 0)
            base = mem_live();
        else
            CHECKF(mem_live() == base, "law 13: round %d left %lld blocks more", round,
                   (long long)(mem_live() - base));
    }
    /* the loaded rows stay (releasing demand deletes nothing) */
    CHECK(ldb_live_count(NULL) == 0);
    ldb_stmt *st;
    CHECK(ldb_prepare(p.db, "SELECT count(*) FROM issues", -1, &st, NULL) == LDB_OK);
    CHECK(ldb_step(st) == LDB_ROW && ldb_row_int64(ldb_stmt_row(st), 0) == 6);
    ldb_finalize(st);
    prov_close(&p);
}

static int64_t table_rows(ldb *db, const char *where)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM issues WHERE %s", where);
    ldb_stmt *st;
    CHECK(ldb_prepare(db, sql, -1, &st, NULL) == LDB_OK);
    CHECK(ldb_step(st) == LDB_ROW);
    int64_t n = ldb_row_int64(ldb_stmt_row(st), 0);
    ldb_finalize(st);
    return n;
}

/* Law 11: under LDB_SOURCE_RETAIN_OWNED a row exists exactly while some
 * demand owns it. */
static void retention_keeps_exactly_owned_rows(void)
{
    struct prov p;
    memset(&p, 0, sizeof p);
    CHECK(ldb_open(NULL, &p.db) == LDB_OK);
    EXEC(p.db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, owner INTEGER, title TEXT)");
    EXEC(p.db, "CREATE TABLE users(id INTEGER PRIMARY KEY)");
    EXEC(p.db, "INSERT INTO users VALUES (1), (2)");
    ldb_provider v = { load, unload, on_abort, NULL };
    CHECK(ldb_source_attach(p.db, "issues", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &v,
                            &p, &p.src) == LDB_OK);
    struct watch wa, wb;
    ldb_live *a = watch_open(&p, OWNER1, &wa);
    int all[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
    serve(&p, p.req[0], all, 9, false); /* a superset: only owner 1 is owned */
    ldb_request_settle(p.req[0], LDB_OK, NULL);
    CHECKF(table_rows(p.db, "1") == 3, "law 11: %lld rows kept of 3 owned",
           (long long)table_rows(p.db, "1"));
    int feed[] = { 10, 11 }; /* owners 1 and 2: only the first is owned */
    serve(&p, NULL, feed, 2, false);
    CHECK(table_rows(p.db, "1") == 4 && table_rows(p.db, "id = 10") == 1);
    /* keyed demand from a child owns its keys' rows */
    ldb_live *b = watch_open(&p, "SELECT id, LIVE (SELECT id FROM issues i WHERE i.owner = u.id) "
                                 "FROM users u", &wb);
    CHECK(p.n == 2);
    serve(&p, p.req[1], all, 9, false);
    ldb_request_settle(p.req[1], LDB_OK, NULL);
    CHECK(table_rows(p.db, "owner = 2") == 3 && table_rows(p.db, "owner = 0") == 0);
    /* a's demand goes: owner 1 rows stay, owned by b's key 1 */
    ldb_live_close(a);
    CHECK(table_rows(p.db, "owner = 1") == 4);
    /* user 1 goes: its key's rows have no owner left */
    EXEC(p.db, "DELETE FROM users WHERE id = 1");
    CHECKF(table_rows(p.db, "owner = 1") == 0, "law 11: %lld unowned rows stayed",
           (long long)table_rows(p.db, "owner = 1"));
    CHECK(table_rows(p.db, "owner = 2") == 3);
    ldb_live_close(b);
    ldb_source_stats st;
    ldb_source_stats_get(p.src, &st);
    CHECK(st.rows == 0 && st.demands == 0);
    prov_close(&p);
}

/* ---- allocation failure ---- */

/* serve() that tolerates failures (each call may fail with LDB_NOMEM). */
static void serve_loosely(struct prov *p, ldb_request *req, int from, int to, bool trunc)
{
    ldb_sync *t;
    if (ldb_sync_begin(p->src, req, &t))
        return;
    if (trunc)
        ldb_sync_truncate(t);
    for (int id = from; id < to; id++) {
        ldb_sync_int64(t, 0, id);
        ldb_sync_int64(t, 1, id % 3);
        ldb_sync_text(t, 2, "a title long enough to live on the heap", -1);
        ldb_sync_upsert(t);
    }
    ldb_sync_commit(t, NULL);
    if (req)
        ldb_request_settle(req, LDB_OK, NULL);
}

/* Opens the three kinds of demand (root, grouped child, ordered window),
 * serves, truncates and replays, closes; any step may fail. */
static void nomem_scenario(struct prov *p)
{
    static const char *const sql[] = {
        OWNER1,
        "SELECT u.id, LIVE (SELECT id FROM issues i WHERE i.owner = u.id) FROM users u",
        "SELECT id, owner FROM issues WHERE owner = 2 ORDER BY id DESC LIMIT 3",
    };
    ldb_live *q[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 3; i++) {
        int rc = ldb_live_open(p->db, sql[i], NULL, NULL, &q[i]);
        CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "open: %d %s", rc, ldb_errmsg(p->db));
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < p->n && i < 40; i++)
            if (!p->unloaded[i] && !ldb_request_aborted(p->req[i]))
                serve_loosely(p, p->req[i], 0, 12, false);
        if (round == 0)
            serve_loosely(p, NULL, 0, 0, true);
    }
    int rc = ldb_exec(p->db, "INSERT INTO users VALUES (7)", NULL, NULL);
    CHECK(rc == LDB_OK || rc == LDB_NOMEM);
    for (int i = 0; i < 3; i++)
        ldb_live_close(q[i]);
}

static void allocation_failure_at_every_point(void)
{
    int64_t base = mem_live();
    int failed_runs = 0;
    for (uint64_t k = 1; k < 20000; k++) {
        for (int persistent = 0; persistent < 2; persistent++) {
            struct prov p;
            memset(&p, 0, sizeof p);
            CHECK(ldb_open(NULL, &p.db) == LDB_OK);
            EXEC(p.db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, owner INTEGER, title TEXT)");
            EXEC(p.db, "CREATE TABLE users(id INTEGER PRIMARY KEY)");
            EXEC(p.db, "INSERT INTO users VALUES (0), (1), (2)");
            ldb_provider v = { load, unload, on_abort, NULL };
            CHECK(ldb_source_attach(p.db, "issues", LDB_SOURCE_ON_DEMAND, &v, &p, &p.src) ==
                  LDB_OK);
            mem_fail_at(k, persistent);
            nomem_scenario(&p);
            bool hit = mem_failed_count() > 0;
            mem_fail_at(0, 0);
            /* failures off: the database still works and frees everything */
            ldb_source_stats st;
            ldb_source_stats_get(p.src, &st);
            CHECKF(st.demands == 0 && st.requests_live == 0,
                   "k=%llu: %llu demands, %llu requests left after closing",
                   (unsigned long long)k, (unsigned long long)st.demands,
                   (unsigned long long)st.requests_live);
            EXEC(p.db, "SELECT count(*) FROM issues");
            prov_close(&p);
            CHECKF(mem_live() == base, "k=%llu persistent=%d: %lld blocks leaked",
                   (unsigned long long)k, persistent, (long long)(mem_live() - base));
            if (!hit && !persistent) {
                CHECKF(failed_runs > 100, "only %d runs hit a failure", failed_runs);
                printf("#    %d runs failed an allocation\n", failed_runs);
                return;
            }
            failed_runs += hit;
        }
    }
    CHECKF(0, "the scenario never ran without a failure");
}

/* ---- re-entrant calls ---- */

struct closer {
    ldb_live *victims[2];
    int calls;
};

static void close_on_ready(void *ctx, ldb_live *q, int st, const char *msg)
{
    struct closer *c = ctx;
    (void)q;
    (void)msg;
    if (st != LDB_STATUS_READY)
        return;
    c->calls++;
    ldb_live_close(c->victims[0]);
    ldb_live_close(c->victims[1]);
}

/* A status callback closes its own query and another one with a
 * request in flight: both go once, their demand is released once. */
static void status_callback_closes_queries(void)
{
    struct prov p;
    prov_open(&p, LDB_SOURCE_ON_DEMAND);
    ldb_live *a, *b;
    CHECK(ldb_live_open(p.db, OWNER1, NULL, NULL, &a) == LDB_OK);
    CHECK(ldb_live_open(p.db, "SELECT id FROM issues WHERE owner = 2", NULL, NULL, &b) == LDB_OK);
    struct closer c = { { a, b }, 0 };
    CHECK(ldb_live_set_status_callback(a, close_on_ready, &c) == LDB_OK);
    CHECK(p.n == 2);
    CHECK(ldb_live_retry(a) == LDB_OK); /* nothing failed: a no-op */
    ldb_request_settle(p.req[0], LDB_OK, NULL);
    CHECK(c.calls == 1);
    CHECK(p.unloaded[0] == 1 && p.unloaded[1] == 1 && p.aborts == 1);
    ldb_source_stats st;
    ldb_source_stats_get(p.src, &st);
    CHECK(st.demands == 0 && st.requests_live == 0);
    int rows[] = { 1 };
    CHECK(serve(&p, p.req[1], rows, 1, false) == LDB_RECEIPT_ABORTED);
    prov_close(&p);
}

struct sync_prov {
    ldb *db;
    ldb_source *src;
    int loads, unloads, refused;
};

/* load_subset that answers at once, from inside the callback. */
static int load_now(void *ctx, ldb_request *r)
{
    struct sync_prov *p = ctx;
    p->loads++;
    ldb_sync *t;
    CHECK(ldb_sync_begin(p->src, r, &t) == LDB_OK);
    for (int id = 1; id <= 3; id++) {
        ldb_sync_int64(t, 0, id);
        ldb_sync_int64(t, 1, 1);
        ldb_sync_upsert(t);
    }
    ldb_receipt *rc;
    CHECK(ldb_sync_commit(t, &rc) == LDB_OK);
    /* inside a provider callback it waits for the callback's end */
    CHECK(ldb_receipt_state(rc) == LDB_RECEIPT_PENDING);
    ldb_receipt_free(rc);
    CHECK(ldb_request_settle(r, LDB_OK, NULL) == LDB_OK);
    return LDB_OK;
}

static void unload_refuses(void *ctx, ldb_request *r)
{
    struct sync_prov *p = ctx;
    (void)r;
    p->unloads++;
    p->refused += ldb_source_detach(p->src) == LDB_MISUSE;
    p->refused += ldb_source_poll(p->db) == LDB_MISUSE;
}

/* A provider that answers inside load_subset: READY when the open returns. */
static void synchronous_provider_is_ready_at_open(void)
{
    struct sync_prov p = { 0 };
    CHECK(ldb_open(NULL, &p.db) == LDB_OK);
    EXEC(p.db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, owner INTEGER, title TEXT)");
    ldb_provider v = { load_now, unload_refuses, NULL, NULL };
    CHECK(ldb_source_attach(p.db, "issues", LDB_SOURCE_ON_DEMAND, &v, &p, &p.src) == LDB_OK);
    struct watch w;
    memset(&w, 0, sizeof w);
    ldb_live *q;
    CHECK(ldb_live_open(p.db, OWNER1, on_change, &w, &q) == LDB_OK);
    CHECK(p.loads == 1 && ldb_live_status(q, NULL) == LDB_STATUS_READY);
    CHECKF(ldb_live_count(q) == 3 && w.batches == 1, "%lld rows, %d batches (an empty open has none)", (long long)ldb_live_count(q), w.batches);
    ldb_live_close(q);
    CHECK(p.unloads == 1 && p.refused == 2);
    ldb_close(p.db);
}

TEST_MAIN(T(status_callback_closes_queries), T(synchronous_provider_is_ready_at_open),
          T(retention_keeps_exactly_owned_rows), T(allocation_failure_at_every_point), T(replay_publishes_one_batch), T(replay_failure_keeps_result_until_retry),
          T(replay_failure_of_retired_demand_stops_gating), T(stale_settlement_readies_nothing),
          T(applied_settlement_from_a_thread), T(stop_fails_queries_and_start_asks_again),
          T(provider_callbacks_are_refused_writes), T(failing_load_is_never_unloaded),
          T(space_returns_to_baseline))
