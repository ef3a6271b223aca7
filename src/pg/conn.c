/*
 * conn.c - non-blocking libpq connections: connecting, registering their
 * sockets in the adapter's epoll set, dropping them and reconnecting with
 * exponential backoff (50 ms doubling to 5 s).
 *
 * Every session gets the same settings, so the stream's text output and
 * a load's are the same bytes for the same value (keys are compared as
 * text): UTC, ISO dates, UTF8, hex bytea, shortest-exact floats.
 */
#include "pg/pg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_MIN 50
#define BACKOFF_MAX 5000

int64_t pg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void pg_set_err(ldb_pg *pg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pg->err, sizeof pg->err, fmt, ap);
    va_end(ap);
    size_t n = strlen(pg->err);
    while (n && (pg->err[n - 1] == '\n' || pg->err[n - 1] == ' '))
        pg->err[--n] = 0;
}

void pg_conn_init(ldb_pg *pg, pg_conn *c, int role)
{
    *c = (pg_conn){ .pg = pg, .role = role, .state = CONN_DOWN, .fd = -1,
                    .backoff_ms = BACKOFF_MIN };
}

const char *pg_conn_error(pg_conn *c)
{
    static _Thread_local char msg[256];
    snprintf(msg, sizeof msg, "%s", c->c ? PQerrorMessage(c->c) : "not connected");
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = 0;
    return msg;
}

void pg_conn_watch(pg_conn *c, bool write)
{
    int fd = c->c ? PQsocket(c->c) : -1;
    if (c->fd >= 0 && c->fd != fd) {
        epoll_ctl(c->pg->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        c->fd = -1;
    }
    if (fd < 0)
        return;
    struct epoll_event ev = { .events = EPOLLIN | (write ? EPOLLOUT : 0), .data.ptr = c };
    if (epoll_ctl(c->pg->epfd, c->fd == fd ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) == 0)
        c->fd = fd;
}

void pg_conn_close(pg_conn *c)
{
    if (c->fd >= 0)
        epoll_ctl(c->pg->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    c->fd = -1;
    PQfinish(c->c);
    c->c = NULL;
    c->state = CONN_DOWN;
}

static const char *role_name(int role)
{
    static const char *names[] = { "livedb-stream", "livedb-control", "livedb-writer",
                                   "livedb-load" };
    return names[role];
}

/* libpq prints notices and asynchronous errors to stderr by default; a
 * library must not: connection errors reach the program through
 * ldb_pg_state and ldb_pg_errmsg. */
void pg_notice_ignore(void *arg, const char *message)
{
    (void)arg, (void)message;
}

bool pg_may_have_happened(const PGresult *r)
{
    int st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return true;
    return !r || !PQresultErrorField(r, PG_DIAG_SQLSTATE);
}

void pg_conn_start(pg_conn *c)
{
    const char *keys[] = { "dbname", "application_name", "client_encoding", "options",
                           c->role == ROLE_FEED ? "replication" : NULL, NULL };
    const char *vals[] = { c->pg->conninfo, role_name(c->role), "UTF8",
                           "-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=postgres "
                           "-c extra_float_digits=1 -c bytea_output=hex "
                           "-c standard_conforming_strings=on",
                           "database", NULL };
    c->c = PQconnectStartParams(keys, vals, 1);
    if (!c->c || PQstatus(c->c) == CONNECTION_BAD) {
        pg_conn_drop(c, c->c ? pg_conn_error(c) : "out of memory");
        return;
    }
    PQsetnonblocking(c->c, 1);
    PQsetNoticeProcessor(c->c, pg_notice_ignore, NULL);
    c->state = CONN_CONNECTING;
    pg_conn_watch(c, true);
}

/* The role's own loss: what was in flight on it. */
static void conn_lost(pg_conn *c)
{
    if (c->role == ROLE_FEED)
        pg_feed_lost(c->pg);
    else if (c->role == ROLE_CONTROL)
        pg_control_lost(c);
    else if (c->role == ROLE_WRITER)
        pg_writer_lost(c);
    else
        pg_load_conn_lost(c);
}

void pg_conn_drop(pg_conn *c, const char *why)
{
    ldb_pg *pg = c->pg;
    snprintf(pg->state_msg, sizeof pg->state_msg, "%s", why);
    bool was_up = c->state != CONN_DOWN;
    pg_conn_close(c);
    if (was_up)
        conn_lost(c);
    int64_t now = pg_now_ms();
    if (!c->down_since)
        c->down_since = now;
    c->retry_at = now + c->backoff_ms;
    c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX ? BACKOFF_MAX : c->backoff_ms * 2;
    pg_update_state(pg);
}

static void conn_ready(pg_conn *c)
{
    ldb_pg *pg = c->pg;
    if (c->down_since)
        pg->stats.reconnects++;
    c->down_since = 0;
    c->backoff_ms = BACKOFF_MIN;
    c->state = CONN_SETUP;
    pg_conn_watch(c, false);
    if (c->role == ROLE_FEED)
        pg_feed_setup(c);
    else if (c->role == ROLE_CONTROL || c->role == ROLE_WRITER)
        pg_control_setup(c);
    else
        c->state = CONN_IDLE;
    pg_update_state(pg);
}

void pg_conn_drive(pg_conn *c)
{
    switch (PQconnectPoll(c->c)) {
    case PGRES_POLLING_OK:
        conn_ready(c);
        break;
    case PGRES_POLLING_FAILED:
        pg_conn_drop(c, pg_conn_error(c));
        break;
    case PGRES_POLLING_WRITING:
        pg_conn_watch(c, true);
        break;
    default:
        pg_conn_watch(c, false);
    }
}

void pg_update_state(ldb_pg *pg)
{
    bool up = true;
    pg_conn *fixed[] = { &pg->feed, &pg->control, &pg->writer };
    for (int i = 0; i < 3; i++)
        up = up && fixed[i]->state != CONN_DOWN && fixed[i]->state != CONN_CONNECTING;
    for (int i = 0; i < pg->nloadc; i++)
        up = up && pg->loadc[i].state != CONN_DOWN && pg->loadc[i].state != CONN_CONNECTING;
    int state = up ? LDB_PG_CONNECTED : LDB_PG_RECONNECTING;
    if (state == pg->state)
        return;
    pg->state = state;
    if (pg->state_fn)
        pg->state_fn(pg->state_ctx, pg, state, state == LDB_PG_CONNECTED ? NULL : pg->state_msg);
}
