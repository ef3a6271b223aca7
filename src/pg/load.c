/*
 * load.c - answering requests: each is one SELECT run through a cursor on
 * a load connection, its rows applied as sync transactions of the request.
 *
 * A load: BEGIN READ ONLY; DECLARE (the cursor's snapshot S is taken
 * here); then FETCH rows_per_commit at a time; COMMIT. Right after the
 * DECLARE the load asks for a fence: a logical message committed after S,
 * so once the stream has passed it every transaction S saw is applied
 * locally. Until then fetched chunks are held; from then on each chunk is
 * applied at once, minus the rows whose key the stream changed after the
 * load was sent (the stream's version is newer, or the row no longer
 * matches and is rightly absent). The request settles after the last
 * chunk. docs/ARCHITECTURE.md, "PostgreSQL adapter", has the argument.
 *
 * A request aborted while its command runs has the server query cancelled
 * (PQcancel on a thread: it blocks) and the connection replaced, so a late
 * cancel can never hit the next load's command.
 */
#include "pg/pg_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void load_send(pg_load *l, pg_conn *c);
static void load_settle(pg_load *l, int rc, const char *msg);

static pg_load *load_new(pg_table *t, ldb_request *req, char *sql)
{
    pg_load *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->t = t;
    l->req = req;
    l->sql = sql;
    pg_load **tail = &t->pg->loads;
    while (*tail)
        tail = &(*tail)->next;
    *tail = l;
    return l;
}

static bool reqs_add(pg_table *t, ldb_request *req)
{
    if (t->nreqs == t->capreqs) {
        int cap = t->capreqs ? t->capreqs * 2 : 8;
        ldb_request **more = realloc(t->reqs, (size_t)cap * sizeof *more);
        if (!more)
            return false;
        t->reqs = more;
        t->capreqs = cap;
    }
    ldb_request_ref(req);
    t->reqs[t->nreqs++] = req;
    return true;
}

int pg_load_subset_cb(void *ctx, ldb_request *req)
{
    pg_table *t = ctx;
    pg_buf why = { 0 };
    char *sql = pg_translate_request(t, req, &why);
    pg_buf_free(&why);
    if (!sql)
        return LDB_NOMEM;
    if (!reqs_add(t, req)) {
        free(sql);
        return LDB_NOMEM;
    }
    ldb_request_ref(req);
    if (!load_new(t, req, sql)) {
        ldb_request_unref(req);
        free(sql);
        t->nreqs--;
        ldb_request_unref(req);
        return LDB_NOMEM;
    }
    pg_loads_dispatch(t->pg);
    return LDB_OK;
}

void pg_unload_subset_cb(void *ctx, ldb_request *req)
{
    pg_table *t = ctx;
    for (int i = 0; i < t->nreqs; i++)
        if (t->reqs[i] == req) {
            t->reqs[i] = t->reqs[--t->nreqs];
            ldb_request_unref(req);
            break;
        }
}

static void *cancel_main(void *arg)
{
    char err[256];
    PQcancel(arg, err, sizeof err);
    PQfreeCancel(arg);
    return NULL;
}

/* Stops l's server command and replaces its connection. */
static void load_cancel(pg_load *l)
{
    pg_conn *c = l->conn;
    PGcancel *k = PQgetCancel(c->c);
    pthread_t th;
    if (k && pthread_create(&th, NULL, cancel_main, k) == 0)
        pthread_detach(th);
    else
        PQfreeCancel(k);
    l->conn = NULL;
    c->load = NULL;
    pg_conn_close(c);
    if (!c->pg->closing)
        pg_conn_start(c);
}

/* Done: freed by pg_loads_reap (at the end of ldb_pg_poll, never while a
 * caller up the stack may still be applying its chunks). */
static void load_finish(pg_load *l) { l->state = LOAD_DONE; }

void pg_abort_cb(void *ctx, ldb_request *req)
{
    pg_table *t = ctx;
    for (pg_load *l = t->pg->loads; l; l = l->next) {
        if (l->req != req || l->state == LOAD_DONE)
            continue;
        l->aborted = true;
        if (l->conn && l->state != LOAD_CLOSING)
            load_cancel(l);
        if (!l->conn)
            load_finish(l);
    }
}

/* An internal load of one key (a TOASTed value the stream did not
 * resend, for a row we do not hold); its rows need no request. NOMEM
 * fails the stream transaction (which then replays). */
int pg_load_refetch(pg_table *t, const pg_cell *row)
{
    pg_buf q = { 0 };
    pg_select_from(t, &q);
    for (int i = 0; i < t->npk; i++) {
        const pg_cell *c = &row[t->pk[i]];
        if (i)
            pg_buf_puts(&q, " AND ");
        pg_buf_ident(&q, t->cols[t->pk[i]].name);
        pg_buf_puts(&q, " = ");
        pg_buf_literal(&q, c->p ? c->p : "", c->p ? (size_t)c->len : 0);
    }
    if (q.oom || !load_new(t, NULL, q.p)) {
        pg_buf_free(&q);
        return LDB_NOMEM;
    }
    pg_loads_dispatch(t->pg);
    return LDB_OK;
}

/* ---- running loads on connections ---- */

static void load_send(pg_load *l, pg_conn *c)
{
    pg_buf q = { 0 };
    pg_buf_printf(&q, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
                      "DECLARE ldb_cursor NO SCROLL CURSOR FOR %s; SELECT pg_current_snapshot()",
                  l->sql);
    if (q.oom || !PQsendQuery(c->c, q.p)) {
        pg_conn_drop(c, q.oom ? "out of memory" : pg_conn_error(c));
        pg_buf_free(&q);
        return;
    }
    pg_buf_free(&q);
    l->conn = c;
    l->state = LOAD_DECLARING;
    l->seq_sent = c->pg->feed_seq;
    l->fence = 0;
    c->load = l;
    c->state = CONN_BUSY;
    c->pg->stats.loads++;
}

void pg_loads_dispatch(ldb_pg *pg)
{
    int64_t now = pg_now_ms();
    for (pg_load *l = pg->loads; l; l = l->next)
        if (l->unsettled)
            load_settle(l, l->settle_rc, l->settle_msg);
    for (pg_load *l = pg->loads; l; l = l->next) {
        if (l->state != LOAD_QUEUED || l->not_before > now)
            continue;
        if (l->aborted || (l->req && ldb_request_aborted(l->req))) {
            load_finish(l);
            continue;
        }
        pg_conn *c = NULL;
        for (int i = 0; i < pg->nloadc && !c; i++)
            if (pg->loadc[i].state == CONN_IDLE)
                c = &pg->loadc[i];
        if (!c)
            return;
        load_send(l, c);
    }
}

/* Settles l's request; a settlement that cannot be queued (out of
 * memory) is tried again at each poll, and l stays outstanding until then
 * (ldb_pg_sync must not call the query settled). */
static void load_settle(pg_load *l, int rc, const char *msg)
{
    if (!l->req || l->aborted)
        return;
    l->unsettled = ldb_request_settle(l->req, rc, msg) == LDB_NOMEM;
    if (l->unsettled) {
        l->settle_rc = rc;
        snprintf(l->settle_msg, sizeof l->settle_msg, "%s", msg ? msg : "");
    }
}

static void load_fail(pg_load *l, const char *msg)
{
    if (!l->failed)
        load_settle(l, LDB_ERROR, msg);
    l->failed = true;
}

/* Runs l again from the start (new snapshot and fence), a little later. */
static void load_requeue(pg_load *l)
{
    for (int i = 0; i < l->nheld; i++)
        PQclear(l->held[i]);
    l->nheld = 0;
    l->fence = 0;
    l->fetched_all = false;
    l->retry = false;
    l->state = LOAD_QUEUED;
    l->not_before = pg_now_ms() + 5;
}

/* Sets one fetched chunk's rows into s, minus those whose key the stream
 * changed after l was sent. row and key are the caller's scratch. */
static int chunk_rows(pg_load *l, PGresult *r, ldb_sync *s, pg_cell *row, pg_buf *key)
{
    pg_table *t = l->t;
    int rc = LDB_OK;
    for (int i = 0; rc == LDB_OK && i < PQntuples(r); i++) {
        for (int c = 0; c < t->ncols; c++)
            row[c] = (pg_cell){ PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c),
                                PQgetlength(r, i, c), false };
        size_t kn = t->touched.n ? pg_row_key(t, row, key) : 0;
        if (key->oom)
            return LDB_NOMEM;
        if (kn && pg_keymap_get(&t->touched, key->p, kn) > l->seq_sent) {
            t->pg->stats.rows_skipped++;
            continue;
        }
        for (int c = 0; rc == LDB_OK && c < t->ncols; c++)
            rc = pg_cell_sync(s, c, t->cols[c].kind, &row[c]);
        if (rc == LDB_OK)
            rc = ldb_sync_upsert(s);
        t->pg->stats.rows_loaded++;
    }
    return rc;
}

/* Applies l's held chunks once its fence has passed; settles it after the
 * last one. */
static void load_apply(pg_load *l)
{
    ldb_pg *pg = l->t->pg;
    if (l->aborted || l->failed || !l->fence || pg->fence_seen < l->fence)
        return;
    pg_table *t = l->t;
    if (t->truncated > l->seq_sent) {
        /* read before a truncate: void (a request's load is aborted by
         * it; a one-key refetch has no request to abort) */
        for (int h = 0; h < l->nheld; h++)
            PQclear(l->held[h]);
        l->nheld = 0;
        l->aborted = true;
        if (!l->conn)
            load_finish(l);
        return;
    }
    pg_cell *row = calloc((size_t)t->ncols + 1, sizeof *row);
    pg_buf key = { 0 };
    int rc = row ? LDB_OK : LDB_NOMEM;
    for (int h = 0; rc == LDB_OK && h < l->nheld; h++) {
        ldb_sync *s = NULL;
        rc = ldb_sync_begin(t->src, l->req, &s);
        if (rc == LDB_OK)
            rc = chunk_rows(l, l->held[h], s, row, &key);
        if (rc == LDB_OK)
            rc = ldb_sync_commit(s, NULL);
        else if (s)
            ldb_sync_abandon(s);
        if (l->aborted || l->state == LOAD_DONE)   /* aborted from inside the commit */
            break;
    }
    for (int h = 0; h < l->nheld; h++)
        PQclear(l->held[h]);
    l->nheld = 0;
    free(row);
    pg_buf_free(&key);
    if (rc == LDB_NOMEM) {              /* the rows applied stay; all come again */
        l->retry = true;
        if (!l->conn)
            load_requeue(l);
        return;                         /* on a connection: load_next rolls back */
    }
    if (rc) {
        char msg[300];
        snprintf(msg, sizeof msg, "livedb-pg: applying loaded rows failed: %s",
                 ldb_errmsg(pg->db));
        load_fail(l, msg);
    } else if (l->fetched_all && !l->settled) {
        load_settle(l, LDB_OK, NULL);
        l->settled = true;
    }
    /* On a connection, load_next ends its transaction (COMMIT or
     * ROLLBACK) before the connection is free: this may run between a
     * FETCH's rows and the end of that command. */
    if (!l->conn && (l->settled || l->aborted || rc))
        load_finish(l);
}

void pg_loads_fence_seen(ldb_pg *pg)
{
    for (pg_load *l = pg->loads; l; l = l->next)
        if (l->nheld || (l->fetched_all && l->state != LOAD_DONE))
            load_apply(l);
}

static bool hold(pg_load *l, PGresult *r)
{
    if (l->nheld == l->capheld) {
        int cap = l->capheld ? l->capheld * 2 : 4;
        PGresult **more = realloc(l->held, (size_t)cap * sizeof *more);
        if (!more)
            return false;
        l->held = more;
        l->capheld = cap;
    }
    l->held[l->nheld++] = r;
    return true;
}

static void send_or_drop(pg_conn *c, const char *sql)
{
    if (!PQsendQuery(c->c, sql))
        pg_conn_drop(c, pg_conn_error(c));
}

static const char *result_error(PGresult *r, pg_conn *c)
{
    const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    return m ? m : pg_conn_error(c);
}

/* An error that ends the session, not the query: the backend was
 * terminated or the server is shutting down (57P01-03), a connection
 * exception (08xxx), or libpq saw the socket close. */
static bool connection_lost(pg_conn *c, PGresult *r)
{
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return PQstatus(c->c) == CONNECTION_BAD || !state ||
           strncmp(state, "57P0", 4) == 0 || strncmp(state, "08", 2) == 0;
}

/* One result of l's current command. */
static void load_result(pg_conn *c, pg_load *l, PGresult *r)
{
    int st = PQresultStatus(r);
    if (st == PGRES_FATAL_ERROR && connection_lost(c, r)) {
        l->retry = true;                  /* not the query's fault: run it again */
    } else if (st == PGRES_FATAL_ERROR) {
        char msg[300];
        snprintf(msg, sizeof msg, "postgresql: %s", result_error(r, c));
        load_fail(l, msg);
    } else if (l->state == LOAD_DECLARING && st == PGRES_TUPLES_OK) {
        if (PQntuples(r) != 1 || !pg_snapshot_parse(PQgetvalue(r, 0, 0), &l->snap))
            l->retry = true;              /* out of memory: run it again */
    } else if (l->state == LOAD_FETCHING && st == PGRES_TUPLES_OK) {
        if (PQntuples(r) < c->pg->rows_per_commit)
            l->fetched_all = true;
        if (!hold(l, r)) {
            l->retry = true;              /* out of memory: run it again */
            PQclear(r);
        }
        return;                                   /* r is held */
    }
    PQclear(r);
}

/* The command finished: what l sends next. */
static void load_next(pg_conn *c, pg_load *l)
{
    ldb_pg *pg = c->pg;
    if (l->state == LOAD_CLOSING || (l->state == LOAD_DONE)) {
        c->load = NULL;
        l->conn = NULL;
        c->state = CONN_IDLE;
        if (l->retry && !l->failed && !l->aborted) {
            load_requeue(l);
            return;
        }
        if (l->state == LOAD_CLOSING)
            l->state = l->nheld ? LOAD_FETCHING : LOAD_DONE;
        if (l->state != LOAD_DONE && (l->failed || l->aborted))
            load_finish(l);
        return;
    }
    if (l->failed || l->aborted || l->retry) {
        l->state = LOAD_CLOSING;
        send_or_drop(c, "ROLLBACK");
        return;
    }
    if (l->state == LOAD_DECLARING) {
        if (pg_unproven_missed(pg, &l->snap, l->seq_sent)) {
            /* its rows could be older than ours: run it again shortly */
            l->retry = true;
            l->state = LOAD_CLOSING;
            send_or_drop(c, "ROLLBACK");
            return;
        }
        pg_unproven_prune(pg, &l->snap, l);
        l->fence = pg_fence_want(pg);
        l->state = LOAD_FETCHING;
    }
    load_apply(l);
    if (l->conn != c)                 /* aborted inside, its connection replaced */
        return;
    if (l->retry || l->failed) {
        l->state = LOAD_CLOSING;
        send_or_drop(c, "ROLLBACK");
    } else if (l->state == LOAD_FETCHING && !l->fetched_all) {
        char sql[64];
        snprintf(sql, sizeof sql, "FETCH %d FROM ldb_cursor", pg->rows_per_commit);
        send_or_drop(c, sql);
    } else if (l->state != LOAD_DONE) {
        l->state = LOAD_CLOSING;
        send_or_drop(c, "COMMIT");
    }
}

void pg_load_conn_result(pg_conn *c)
{
    while (c->state == CONN_BUSY && !PQisBusy(c->c)) {
        pg_load *l = c->load;
        PGresult *r = PQgetResult(c->c);
        if (!l) {                    /* nothing of ours runs: drain */
            if (!r)
                c->state = CONN_IDLE;
            PQclear(r);
            continue;
        }
        if (r) {
            load_result(c, l, r);
            continue;
        }
        load_next(c, l);
    }
}

/* The connection died under l: it runs again from the start (a new
 * snapshot and fence) unless it was aborted. */
void pg_load_conn_lost(pg_conn *c)
{
    pg_load *l = c->load;
    c->load = NULL;
    if (!l)
        return;
    l->conn = NULL;
    l->retry = false;
    if (l->aborted || l->failed || l->state == LOAD_DONE) {
        load_finish(l);
    } else if (l->fetched_all) {
        /* every row is here (only the COMMIT of a read-only transaction
         * was lost): applied, or waiting for the fence as before */
        l->state = l->nheld ? LOAD_FETCHING : LOAD_DONE;
    } else {
        load_requeue(l);
    }
}

/* The server stayed unreachable: every unanswered request fails. */
void pg_loads_fail_all(ldb_pg *pg, const char *why)
{
    for (pg_load *l = pg->loads; l; l = l->next)
        if (l->state != LOAD_DONE && !l->failed) {
            load_fail(l, why);
            if (!l->conn)
                load_finish(l);
        }
}

void pg_loads_reap(ldb_pg *pg)
{
    for (pg_load **p = &pg->loads; *p; ) {
        pg_load *l = *p;
        if (l->state != LOAD_DONE || l->conn || l->unsettled) {
            p = &l->next;
            continue;
        }
        *p = l->next;
        for (int i = 0; i < l->nheld; i++)
            PQclear(l->held[i]);
        free(l->held);
        pg_snapshot_free(&l->snap);
        if (l->req)
            ldb_request_unref(l->req);
        free(l->sql);
        free(l);
    }
    if (!pg->loads)                  /* nothing outstanding: nothing to compare with */
        for (int i = 0; i < pg->ntables; i++)
            pg_keymap_clear(&pg->tables[i]->touched);
}

bool pg_loads_idle(ldb_pg *pg)
{
    for (pg_load *l = pg->loads; l; l = l->next)
        if (l->state != LOAD_DONE || l->unsettled)
            return false;
    return true;
}

/* The number of a fence that will be committed after now. */
uint64_t pg_fence_want(ldb_pg *pg)
{
    pg->fence_wanted = true;
    pg_control_kick(pg);
    return pg->fence_inflight && !pg->fence_wanted ? pg->fence_inflight : pg->fence_next;
}

int64_t pg_loads_due(ldb_pg *pg)
{
    int64_t due = INT64_MAX;
    for (pg_load *l = pg->loads; l; l = l->next)
        if (l->state == LOAD_QUEUED && l->not_before && l->not_before < due)
            due = l->not_before;
    return due;
}
