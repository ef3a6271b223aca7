/*
 * pg.c - ldb_pg's lifetime and event loop: opening (the one blocking
 * setup: server checks, slot, publication), the poll step that drives
 * every connection, quiescence (ldb_pg_sync), explain, stats, close.
 *
 * ldb_pg_fd is an epoll set holding the connections' sockets, a timerfd
 * armed for the next reconnect or status update, and the database's own
 * source queue descriptor; level-triggered, so a poll that leaves work
 * behind (nothing does: every input is drained) would show up at once.
 */
#include "pg/pg_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

static _Thread_local char open_error[512];

const char *ldb_pg_open_error(void) { return open_error; }

static void random_hex(char *out, size_t n)
{
    unsigned char b[16] = { 0 };
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(b, 1, sizeof b, f) : 0;
    if (f)
        fclose(f);
    if (got < sizeof b) {                       /* no urandom: time and address */
        uint64_t x = (uint64_t)pg_now_ms() ^ (uint64_t)(uintptr_t)out;
        memcpy(b, &x, sizeof x);
    }
    for (size_t i = 0; i + 1 < n && i < 2 * sizeof b; i++)
        out[i] = "0123456789abcdef"[b[i / 2] >> (i % 2 ? 0 : 4) & 15];
    out[n - 1 < 2 * sizeof b ? n - 1 : 2 * sizeof b] = 0;
}

static PGresult *setup_exec(PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    int st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return r;
    snprintf(open_error, sizeof open_error, "postgresql: %s", PQerrorMessage(c));
    PQclear(r);
    return NULL;
}

static uint64_t lsn_of(const char *s)
{
    unsigned hi = 0, lo = 0;
    return sscanf(s, "%X/%X", &hi, &lo) == 2 ? (uint64_t)hi << 32 | lo : 0;
}

/* Drops the slot if it exists, trying 40 times pause_us apart: its
 * walsender may hold it a moment after our stream closed, and a query may
 * fail while allocations do. */
static void drop_slot(ldb_pg *pg, PGconn *c, int pause_us)
{
    const char *p[] = { pg->slot };
    for (int i = 0; i < 40; i++) {
        PGresult *r = PQexecParams(c, "SELECT pg_drop_replication_slot(slot_name) FROM "
                                      "pg_replication_slots WHERE slot_name = $1",
                                   1, NULL, p, NULL, NULL, 0);
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
        if (ok)
            return;
        usleep((useconds_t)pause_us);
    }
}

/* The slot: resumed from where it was confirmed, or created now. */
static int setup_slot(ldb_pg *pg, PGconn *c)
{
    const char *p[] = { pg->slot };
    PGresult *r = setup_exec(c, "SELECT confirmed_flush_lsn, plugin FROM pg_replication_slots "
                                "WHERE slot_name = $1", 1, p);
    if (!r)
        return LDB_ERROR;
    if (PQntuples(r) == 1) {
        bool ok = strcmp(PQgetvalue(r, 0, 1), "pgoutput") == 0;
        pg->applied_lsn = lsn_of(PQgetvalue(r, 0, 0));
        PQclear(r);
        if (!ok)
            snprintf(open_error, sizeof open_error, "slot %s does not use pgoutput", pg->slot);
        return ok ? LDB_OK : LDB_ERROR;
    }
    PQclear(r);
    r = setup_exec(c, "SELECT lsn FROM pg_create_logical_replication_slot($1, 'pgoutput')", 1, p);
    if (!r) {               /* the server may have made it and only its answer was lost */
        drop_slot(pg, c, 5000);
        return LDB_ERROR;
    }
    pg->applied_lsn = lsn_of(PQgetvalue(r, 0, 0));
    PQclear(r);
    return LDB_OK;
}

/* Our publication: made when missing (a kept slot keeps its publication,
 * so a resumed stream finds the one it was decoded with). */
static int setup_publication(ldb_pg *pg, PGconn *c)
{
    const char *p[] = { pg->publication };
    PGresult *r = setup_exec(c, "SELECT 1 FROM pg_publication WHERE pubname = $1", 1, p);
    if (!r)
        return LDB_ERROR;
    int have = PQntuples(r);
    PQclear(r);
    if (have)
        return LDB_OK;
    if (!pg->own_publication) {
        snprintf(open_error, sizeof open_error, "publication %s does not exist", pg->publication);
        return LDB_ERROR;
    }
    pg_buf q = { 0 };
    pg_buf_puts(&q, "CREATE PUBLICATION ");
    pg_buf_ident(&q, pg->publication);
    pg_buf_puts(&q, " WITH (publish_via_partition_root = true)");
    if (q.oom) {
        pg_buf_free(&q);
        snprintf(open_error, sizeof open_error, "out of memory");
        return LDB_NOMEM;
    }
    r = PQexec(c, q.p);
    pg_buf_free(&q);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        snprintf(open_error, sizeof open_error, "postgresql: %s", PQerrorMessage(c));
    pg->made_publication = pg_may_have_happened(r);
    PQclear(r);
    return ok ? LDB_OK : LDB_ERROR;
}

/* Open failed after making the publication: drop it on the connection
 * still open (a new one may fail as open did). */
static void undo_publication(ldb_pg *pg, PGconn *c)
{
    pg_buf q = { 0 };
    for (int i = 0; i < 40; i++) {     /* retried while allocations fail */
        if (!q.n || q.oom) {
            pg_buf_free(&q);
            pg_buf_puts(&q, "DROP PUBLICATION IF EXISTS ");
            pg_buf_ident(&q, pg->publication);
        }
        PGresult *r = q.oom ? NULL : PQexec(c, q.p);
        bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (ok)
            break;
        usleep(5000);
    }
    pg_buf_free(&q);
    pg->made_publication = false;
}

static int setup_server(ldb_pg *pg)
{
    PGconn *c = PQconnectdb(pg->conninfo);
    PQsetNoticeProcessor(c, pg_notice_ignore, NULL);
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(open_error, sizeof open_error, "postgresql: %s", PQerrorMessage(c));
        PQfinish(c);
        return LDB_ERROR;
    }
    int rc = LDB_ERROR;
    PGresult *r = setup_exec(c, "SHOW wal_level", 0, NULL);
    if (r && strcmp(PQgetvalue(r, 0, 0), "logical") != 0)
        snprintf(open_error, sizeof open_error,
                 "postgresql: wal_level is %s; the change stream needs wal_level = logical",
                 PQgetvalue(r, 0, 0));
    else if (r)
        rc = setup_publication(pg, c);
    PQclear(r);
    if (rc == LDB_OK)
        rc = setup_slot(pg, c);
    if (rc && pg->made_publication)
        undo_publication(pg, c);
    if (rc)
        PQfinish(c);
    else
        pg->setup = c;                 /* kept until open is done: see teardown */
    return rc;
}

/* Drops the slot open named itself, and our publication with it (the
 * slot may still be held by its walsender for a moment after our stream
 * closed: retried for up to 2 s). */
static void teardown_server(ldb_pg *pg)
{
    if (!pg->drop_at_close)
        return;
    /* a failing open still has its setup connection: a new one could
     * fail the way open did */
    PGconn *c = pg->setup ? pg->setup : PQconnectdb(pg->conninfo);
    pg->setup = NULL;
    PQsetNoticeProcessor(c, pg_notice_ignore, NULL);
    if (PQstatus(c) == CONNECTION_OK) {
        drop_slot(pg, c, 50000);
        if (pg->own_publication) {
            pg_buf q = { 0 };
            pg_buf_puts(&q, "DROP PUBLICATION IF EXISTS ");
            pg_buf_ident(&q, pg->publication);
            PQclear(PQexec(c, pg_buf_str(&q)));
            pg_buf_free(&q);
        }
    }
    PQfinish(c);
}

static bool epoll_add(int epfd, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    return fd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

static ldb_pg *pg_alloc(ldb *db, const ldb_pg_config *cfg)
{
    ldb_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return NULL;
    pg->db = db;
    pg->epfd = pg->timerfd = -1;
    pg->nloadc = cfg->load_connections > 0 ? cfg->load_connections : 2;
    pg->loadc = calloc((size_t)pg->nloadc, sizeof *pg->loadc);
    pg_conn_init(pg, &pg->feed, ROLE_FEED);     /* first: close may run on failure */
    pg_conn_init(pg, &pg->control, ROLE_CONTROL);
    pg_conn_init(pg, &pg->writer, ROLE_WRITER);
    for (int i = 0; pg->loadc && i < pg->nloadc; i++)
        pg_conn_init(pg, &pg->loadc[i], ROLE_LOAD);
    char hex[17];
    random_hex(hex, sizeof hex);
    snprintf(pg->tag, sizeof pg->tag, "l%s", hex);
    char name[64];
    snprintf(name, sizeof name, "livedb_%s", hex);
    pg->conninfo = strdup(cfg->conninfo ? cfg->conninfo : "");
    pg->slot = strdup(cfg->slot ? cfg->slot : name);
    pg->publication = strdup(cfg->publication ? cfg->publication
                             : cfg->slot ? cfg->slot : name);
    pg->own_publication = !cfg->publication;
    pg->drop_at_close = !cfg->slot;
    pg->fail_after_ms = cfg->fail_after_ms > 0 ? cfg->fail_after_ms : 10000;
    pg->rows_per_commit = cfg->rows_per_commit > 0 ? cfg->rows_per_commit : 4096;
    pg->fence_next = 1;
    pg->state = LDB_PG_RECONNECTING;
    pg->epfd = epoll_create1(EPOLL_CLOEXEC);
    pg->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (!pg->conninfo || !pg->slot || !pg->publication || !pg->loadc ||
        !epoll_add(pg->epfd, pg->timerfd) || !epoll_add(pg->epfd, ldb_source_fd(db))) {
        pg->drop_at_close = false;              /* nothing was made on the server */
        ldb_pg_close(pg);
        return NULL;
    }
    return pg;
}

int ldb_pg_open(ldb *db, const ldb_pg_config *cfg, ldb_pg **out)
{
    *out = NULL;
    open_error[0] = 0;
    if (!db || !cfg || !cfg->conninfo) {
        snprintf(open_error, sizeof open_error, "ldb_pg_open: no database or conninfo");
        return LDB_MISUSE;
    }
    ldb_pg *pg = pg_alloc(db, cfg);
    if (!pg) {
        snprintf(open_error, sizeof open_error, "out of memory");
        return LDB_NOMEM;
    }
    int rc = setup_server(pg);
    if (rc) {
        pg->drop_at_close = false;              /* setup_server undid what it made */
        ldb_pg_close(pg);
        return rc == LDB_NOMEM ? LDB_NOMEM : LDB_ERROR;
    }
    pg_conn_start(&pg->feed);
    pg_conn_start(&pg->control);
    pg_conn_start(&pg->writer);
    for (int i = 0; i < pg->nloadc; i++)
        pg_conn_start(&pg->loadc[i]);
    int64_t deadline = pg_now_ms() + 30000;
    while (pg->state != LDB_PG_CONNECTED && pg_now_ms() < deadline)
        ldb_pg_wait(pg, 100);
    if (pg->state != LDB_PG_CONNECTED) {
        snprintf(open_error, sizeof open_error, "postgresql: %s", pg->state_msg);
        ldb_pg_close(pg);
        return LDB_ERROR;
    }
    PQfinish(pg->setup);
    pg->setup = NULL;
    *out = pg;
    return LDB_OK;
}

int ldb_pg_attach(ldb_pg *pg, const char *name, const char *local, int mode, ldb_source **out)
{
    *out = NULL;
    if (!name) {
        pg_set_err(pg, "ldb_pg_attach: no table name");
        return LDB_MISUSE;
    }
    return pg_table_attach(pg, name, local, mode, out);
}

int ldb_pg_fd(ldb_pg *pg) { return pg->epfd; }

/* One connection's input (or its connecting, or its reconnect time). */
static void conn_step(pg_conn *c, int64_t now)
{
    if (c->state == CONN_DOWN) {
        if (now >= c->retry_at)
            pg_conn_start(c);
        return;
    }
    if (c->state == CONN_CONNECTING) {
        pg_conn_drive(c);
        return;
    }
    if (!PQconsumeInput(c->c)) {
        pg_conn_drop(c, pg_conn_error(c));
        return;
    }
    if (c->role == ROLE_FEED)
        pg_feed_input(c);
    else if (c->role == ROLE_CONTROL)
        pg_control_result(c);
    else if (c->role == ROLE_WRITER)
        pg_writer_result(c);
    else
        pg_load_conn_result(c);
    if (c->state != CONN_DOWN && c->state != CONN_CONNECTING) {
        int f = PQflush(c->c);
        if (f < 0)
            pg_conn_drop(c, pg_conn_error(c));
        else
            pg_conn_watch(c, f == 1);
    }
}

/* The next time something is due: a reconnect, a status update, or the
 * point where unanswered requests fail. */
static void arm_timer(ldb_pg *pg, int64_t now)
{
    int64_t due = INT64_MAX;
    pg_conn *all[] = { &pg->feed, &pg->control, &pg->writer };
    for (int i = 0; i < 3 + pg->nloadc; i++) {
        pg_conn *c = i < 3 ? all[i] : &pg->loadc[i - 3];
        if (c->state == CONN_DOWN && c->retry_at < due)
            due = c->retry_at;
        if (c->down_since && c->down_since + pg->fail_after_ms < due)
            due = c->down_since + pg->fail_after_ms;
    }
    if (pg->feed.state == CONN_BUSY && pg->status_at < due)
        due = pg->status_at;
    int64_t loads = pg_loads_due(pg);
    if (loads < due)
        due = loads;
    struct itimerspec it = { { 0, 0 }, { 0, 0 } };
    if (due != INT64_MAX) {
        int64_t ms = due > now ? due - now : 1;
        it.it_value.tv_sec = ms / 1000;
        it.it_value.tv_nsec = (ms % 1000) * 1000000;
    }
    timerfd_settime(pg->timerfd, 0, &it, NULL);
}

static void check_unreachable(ldb_pg *pg, int64_t now)
{
    pg_conn *all[] = { &pg->feed, &pg->control, &pg->writer };
    for (int i = 0; i < 3 + pg->nloadc; i++) {
        pg_conn *c = i < 3 ? all[i] : &pg->loadc[i - 3];
        if (c->down_since && now - c->down_since >= pg->fail_after_ms) {
            char why[400];
            snprintf(why, sizeof why, "postgresql unreachable: %s", pg->state_msg);
            pg_loads_fail_all(pg, why);
            return;
        }
    }
}

int ldb_pg_poll(ldb_pg *pg)
{
    if (pg->polling || ldb_source_poll(pg->db) == LDB_MISUSE) {
        pg_set_err(pg, "ldb_pg_poll: called from inside a callback");
        return LDB_MISUSE;
    }
    pg->polling = 1;
    uint64_t ticks;
    if (read(pg->timerfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
        pg_set_err(pg, "timerfd: %s", strerror(errno));
    int64_t now = pg_now_ms();
    conn_step(&pg->feed, now);
    conn_step(&pg->control, now);
    conn_step(&pg->writer, now);
    for (int i = 0; i < pg->nloadc; i++)
        conn_step(&pg->loadc[i], now);
    check_unreachable(pg, now);
    pg_feed_status(pg, false);
    pg_loads_dispatch(pg);
    pg_control_kick(pg);
    pg_loads_reap(pg);
    pg_writes_free(pg, false);
    pg_writes_retry_rejects(pg);
    ldb_source_poll(pg->db);
    arm_timer(pg, pg_now_ms());
    pg->polling = 0;
    return LDB_OK;
}

int ldb_pg_wait(ldb_pg *pg, int timeout_ms)
{
    struct pollfd p = { .fd = pg->epfd, .events = POLLIN };
    if (poll(&p, 1, timeout_ms) < 0 && errno != EINTR) {
        pg_set_err(pg, "poll: %s", strerror(errno));
        return LDB_ERROR;
    }
    return ldb_pg_poll(pg);
}

int ldb_pg_sync(ldb_pg *pg, int timeout_ms)
{
    if (pg->polling)
        return LDB_MISUSE;
    int64_t deadline = pg_now_ms() + timeout_ms;
    uint64_t fence = pg_fence_want(pg);
    for (;;) {
        int rc = ldb_pg_poll(pg);
        if (rc)
            return rc;
        bool quiet = pg->fence_seen >= fence && pg_loads_idle(pg) && pg_writes_idle(pg) &&
                     !pg->nunsent;
        if (quiet && !pg->nunproven)
            return LDB_OK;
        /* Every transaction applied must also be visible to new snapshots
         * (PostgreSQL streams a commit a moment before): a fence's
         * snapshot proves it. */
        if (quiet && !pg->fence_wanted && !pg->fence_inflight)
            pg_fence_want(pg);
        int64_t left = deadline - pg_now_ms();
        if (left <= 0) {
            pg_set_err(pg, "ldb_pg_sync: not quiescent after %d ms", timeout_ms);
            return LDB_BUSY;
        }
        ldb_pg_wait(pg, left < 100 ? (int)left : 100);
    }
}

int ldb_pg_state(ldb_pg *pg, const char **msg)
{
    if (msg)
        *msg = pg->state == LDB_PG_CONNECTED ? NULL : pg->state_msg;
    return pg->state;
}

void ldb_pg_set_state_callback(ldb_pg *pg, ldb_pg_state_fn fn, void *ctx)
{
    pg->state_fn = fn;
    pg->state_ctx = ctx;
}

const char *ldb_pg_errmsg(ldb_pg *pg) { return pg->err; }

int ldb_pg_explain(ldb_pg *pg, char **out)
{
    pg_buf b = { 0 };
    for (int i = 0; i < pg->ntables; i++) {
        pg_table *t = pg->tables[i];
        for (int r = 0; r < t->nreqs; r++) {
            pg_buf why = { 0 };
            char *sql = pg_translate_request(t, t->reqs[r], &why);
            pg_buf_printf(&b, "%s request %llu: %s", t->local,
                       (unsigned long long)ldb_request_id(t->reqs[r]), sql ? sql : "?");
            if (why.n)
                pg_buf_printf(&b, "  -- superset: livedb filters %s", pg_buf_str(&why));
            pg_buf_puts(&b, "\n");
            free(sql);
            pg_buf_free(&why);
        }
    }
    if (b.oom) {
        pg_buf_free(&b);
        *out = NULL;
        return LDB_NOMEM;
    }
    *out = b.p ? b.p : strdup("");
    return *out ? LDB_OK : LDB_NOMEM;
}

void ldb_pg_stats_get(ldb_pg *pg, ldb_pg_stats *out)
{
    *out = pg->stats;
    out->lsn = pg->applied_lsn;
}

void ldb_pg_close(ldb_pg *pg)
{
    if (!pg)
        return;
    pg->closing = true;
    for (int i = 0; i < pg->ntables; i++)
        if (pg->tables[i]->src)
            ldb_source_detach(pg->tables[i]->src);
    pg_conn_close(&pg->feed);
    pg_conn_close(&pg->control);
    pg_conn_close(&pg->writer);
    for (int i = 0; pg->loadc && i < pg->nloadc; i++) {
        pg->loadc[i].load = NULL;
        pg_conn_close(&pg->loadc[i]);
    }
    for (pg_load *l = pg->loads; l; l = l->next)
        l->state = LOAD_DONE, l->conn = NULL;
    pg_loads_reap(pg);
    pg_writes_free(pg, true);
    for (int i = 0; i < pg->nunsent; i++)
        ldb_optimistic_free(pg->unsent[i]);
    pg_feed_lost(pg);
    teardown_server(pg);
    PQfinish(pg->setup);
    for (int i = 0; i < pg->ntables; i++)
        pg_table_free(pg->tables[i]);
    free(pg->tables);
    free(pg->loadc);
    free(pg->unproven);
    if (pg->epfd >= 0)
        close(pg->epfd);
    if (pg->timerfd >= 0)
        close(pg->timerfd);
    free(pg->conninfo), free(pg->slot), free(pg->publication);
    free(pg);
}
