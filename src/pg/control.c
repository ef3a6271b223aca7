/*
 * control.c - the control connection (fences, and ending the backend of
 * a write whose connection died) and the writer connection (optimistic
 * writes, one at a time, in order). Writes have their own connection so
 * that one waiting on a lock never holds up the fences loads wait for.
 *
 * A fence is a transactional logical message "<tag>:f<n>" committed on its
 * own; the stream seeing it proves every transaction committed before it
 * is applied. A write is one implicit PostgreSQL transaction (a
 * multi-statement query) ending with the message "<tag>:w<id>": the
 * stream transaction carrying it confirms the optimistic transaction with
 * the server's rows (ldb_sync_confirm), and any key the write addressed
 * that the server did not change (an UPDATE or DELETE that found no row)
 * is deleted in the same commit, so the local state is the server's. A
 * server error rejects it. A write whose connection died before its
 * outcome was known has its old backend ended (pg_terminate_backend, as
 * the same role), then waits for a fence: if the stream has not carried
 * it by then, it never committed.
 */
#include "pg/pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pg_control_setup(pg_conn *c)
{
    c->state = CONN_IDLE;
    pg_control_kick(c->pg);
}

static pg_table *table_local(ldb_pg *pg, const char *local)
{
    for (int i = 0; i < pg->ntables; i++)
        if (strcmp(pg->tables[i]->local, local) == 0)
            return pg->tables[i];
    return NULL;
}

/* A livedb value as a quoted literal: PostgreSQL reads it with the
 * column's own input function (so '1' fits a boolean, and a text date a
 * date column); a value it cannot read is the server's error. */
static void write_literal(pg_buf *b, const ldb_value *v)
{
    char num[40];
    size_t n;
    const char *s;
    switch (v ? ldb_value_type(v) : LDB_NULL) {
    case LDB_NULL:
        pg_buf_puts(b, "NULL");
        return;
    case LDB_BOOLEAN:
        pg_buf_puts(b, ldb_value_int64(v) ? "'true'" : "'false'");
        return;
    case LDB_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)ldb_value_int64(v));
        pg_buf_literal(b, num, strlen(num));
        return;
    case LDB_REAL:
        snprintf(num, sizeof num, "%.17g", ldb_value_double(v));
        pg_buf_literal(b, num, strlen(num));
        return;
    case LDB_BLOB:
        s = ldb_value_text(v, &n);
        pg_buf_bytea(b, s, n);
        return;
    default:
        s = ldb_value_text(v, &n);
        pg_buf_literal(b, s, n);
    }
}

static bool value_equal(const ldb_value *a, const ldb_value *b)
{
    char x[64], y[64];
    if (ldb_value_type(a) != ldb_value_type(b))
        return false;
    size_t na = ldb_value_format(a, x, sizeof x), nb = ldb_value_format(b, y, sizeof y);
    if (na != nb)
        return false;
    if (na < sizeof x)
        return memcmp(x, y, na) == 0;
    size_t la, lb;
    const char *pa = ldb_value_text(a, &la), *pb = ldb_value_text(b, &lb);
    return la == lb && memcmp(pa, pb, la) == 0;
}

static void where_key(pg_buf *q, const pg_table *t, const ldb_optimistic *o, int i)
{
    for (int k = 0; k < t->npk; k++) {
        pg_buf_puts(q, k ? " AND " : " WHERE ");
        pg_buf_ident(q, t->cols[t->pk[k]].name);
        pg_buf_puts(q, " = ");
        write_literal(q, ldb_optimistic_before(o, i, t->pk[k]));
    }
}

/* One mutation as a statement; false when its table is not attached. */
static bool mutation_sql(ldb_pg *pg, pg_buf *q, const ldb_optimistic *o, int i)
{
    pg_table *t = table_local(pg, ldb_optimistic_table(o, i));
    if (!t)
        return false;
    int kind = ldb_optimistic_kind(o, i);
    if (kind == LDB_MUTATION_INSERT) {
        pg_buf_printf(q, "INSERT INTO %s (", t->pgname);
        for (int c = 0; c < t->ncols; c++)
            pg_buf_puts(q, c ? ", " : ""), pg_buf_ident(q, t->cols[c].name);
        pg_buf_puts(q, ") VALUES (");
        for (int c = 0; c < t->ncols; c++)
            pg_buf_puts(q, c ? ", " : ""), write_literal(q, ldb_optimistic_after(o, i, c));
        pg_buf_puts(q, ");\n");
    } else if (kind == LDB_MUTATION_DELETE) {
        pg_buf_printf(q, "DELETE FROM %s", t->pgname);
        where_key(q, t, o, i);
        pg_buf_puts(q, ";\n");
    } else {
        size_t start = q->n;
        pg_buf_printf(q, "UPDATE %s SET ", t->pgname);
        int set = 0;
        for (int c = 0; c < t->ncols; c++) {
            const ldb_value *a = ldb_optimistic_after(o, i, c);
            if (value_equal(ldb_optimistic_before(o, i, c), a))
                continue;
            pg_buf_puts(q, set++ ? ", " : "");
            pg_buf_ident(q, t->cols[c].name);
            pg_buf_puts(q, " = ");
            write_literal(q, a);
        }
        if (!set)
            q->n = start;            /* nothing changed: nothing to send */
        else {
            where_key(q, t, o, i);
            pg_buf_puts(q, ";\n");
        }
    }
    return true;
}

/* Rejects o now, or at the next polls when even that cannot be queued
 * (out of memory): a write must never stay pending unseen. The retry
 * ring needs no allocation. */
static void reject_soon(ldb_pg *pg, ldb_optimistic *o, const char *msg)
{
    pg->stats.rejected++;
    if (ldb_optimistic_reject(o, msg) == LDB_OK)
        return;
    if (pg->nunsent < (int)(sizeof pg->unsent / sizeof pg->unsent[0])) {
        ldb_optimistic_ref(o);
        pg->unsent[pg->nunsent++] = o;
    }
}

void pg_writes_retry_rejects(ldb_pg *pg)
{
    int n = 0;
    for (int i = 0; i < pg->nunsent; i++) {
        ldb_optimistic *o = pg->unsent[i];
        if (ldb_optimistic_reject(o, "livedb-pg: out of memory sending the write") == LDB_OK)
            ldb_optimistic_free(o);
        else
            pg->unsent[n++] = o;
    }
    pg->nunsent = n;
}

void ldb_pg_send(void *ctx, ldb_optimistic *o)
{
    ldb_pg *pg = ctx;
    pg_write *w = calloc(1, sizeof *w);
    pg_buf q = { 0 };
    const char *bad = NULL;
    /* its xid first: if the connection dies, pg_xact_status tells */
    pg_buf_puts(&q, "SELECT pg_current_xact_id();\n");
    for (int i = 0; w && !bad && i < ldb_optimistic_count(o); i++)
        if (!mutation_sql(pg, &q, o, i))
            bad = ldb_optimistic_table(o, i);
    uint64_t id = pg->write_ids + 1;
    pg_buf_printf(&q, "SELECT pg_logical_emit_message(true, 'livedb', '%s:w%llu')", pg->tag,
                  (unsigned long long)id);
    if (!w || q.oom || bad) {
        char msg[200];
        snprintf(msg, sizeof msg, bad ? "livedb-pg: table %s is not attached to postgresql"
                                      : "livedb-pg: out of memory", bad);
        reject_soon(pg, o, msg);
        pg_buf_free(&q);
        free(w);
        return;
    }
    w->id = pg->write_ids = id;
    w->sql = q.p;
    ldb_optimistic_ref(o);
    w->o = o;
    pg_write **tail = &pg->writes;
    while (*tail)
        tail = &(*tail)->next;
    *tail = w;
    pg->stats.writes++;
    pg_control_kick(pg);
}

static pg_write *write_sending(ldb_pg *pg)
{
    for (pg_write *w = pg->writes; w; w = w->next)
        if (w->state == WRITE_SENT && w->sql)
            return w;
    return NULL;
}

/* A write whose connection died: its backend is ended first (it might
 * still commit otherwise), then a fence settles it. */
static pg_write *write_orphan(ldb_pg *pg)
{
    for (pg_write *w = pg->writes; w; w = w->next)
        if (w->state == WRITE_UNKNOWN && !w->fence && w->pid)
            return w;
    return NULL;
}

static bool control_send(pg_conn *c, const char *sql)
{
    if (!PQsendQuery(c->c, sql)) {
        pg_conn_drop(c, pg_conn_error(c));
        return false;
    }
    c->state = CONN_BUSY;
    return true;
}

/* The control connection: a fence when one is wanted, else ending an
 * orphaned write's backend. */
static void control_next(ldb_pg *pg)
{
    pg_conn *c = &pg->control;
    char sql[200];
    if (c->state != CONN_IDLE)
        return;
    pg_write *w = write_orphan(pg);
    if (pg->asking && pg->asking->xid) {
        snprintf(sql, sizeof sql, "SELECT pg_xact_status('%llu'::xid8)",
                 (unsigned long long)pg->asking->xid);
        if (!control_send(c, sql))
            pg->asking = NULL;
    } else if (pg->fence_wanted) {
        uint64_t n = pg->fence_next;
        snprintf(sql, sizeof sql, "SELECT pg_current_snapshot(), "
                                  "pg_logical_emit_message(true, 'livedb', '%s:f%llu')",
                 pg->tag, (unsigned long long)n);
        if (!control_send(c, sql))
            return;
        pg->fence_next++;
        pg->fence_wanted = false;
        pg->fence_inflight = n;
        pg->stats.fences++;
    } else if (w) {
        snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(pid, 10000) FROM "
                                  "pg_stat_activity WHERE pid = %d", w->pid);
        if (control_send(c, sql))
            pg->ending = w;
    }
}

/* The writer connection: the next queued write. */
static void writer_next(ldb_pg *pg)
{
    pg_conn *c = &pg->writer;
    if (c->state != CONN_IDLE)
        return;
    for (pg_write *w = pg->writes; w; w = w->next) {
        if (w->state != WRITE_QUEUED)
            continue;
        if (control_send(c, w->sql)) {
            w->state = WRITE_SENT;  /* sql kept until its result: it is in flight */
            w->pid = PQbackendPID(c->c);
            w->replays = pg->stats.replays;
        }
        return;
    }
}

void pg_control_kick(ldb_pg *pg)
{
    control_next(pg);
    writer_next(pg);
}

static void write_reject(ldb_pg *pg, pg_write *w, const char *msg)
{
    ldb_optimistic_reject(w->o, msg);
    w->state = WRITE_DONE;
    pg->stats.rejected++;
}

static const char *result_message(PGresult *r, pg_conn *c)
{
    const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    return m ? m : pg_conn_error(c);
}

/* A fence's result: its snapshot proves xids; a fence that failed fails
 * the loads waiting for fences (they could wait forever). */
static void fence_result(ldb_pg *pg, pg_conn *c, PGresult *r)
{
    if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
        char msg[400];
        snprintf(msg, sizeof msg, "postgresql: a fence failed: %s", result_message(r, c));
        pg_set_err(pg, "%s", msg);
        pg_loads_fail_all(pg, msg);
    } else if (PQntuples(r) == 1) {
        pg_snapshot snap = { 0 };
        if (pg_snapshot_parse(PQgetvalue(r, 0, 0), &snap))
            pg_unproven_prune(pg, &snap, NULL);
        pg_snapshot_free(&snap);
    }
}

static void write_confirm(ldb_pg *pg, pg_write *w)
{
    ldb_optimistic_confirm(w->o);
    w->state = WRITE_DONE;
    pg->stats.confirmed++;
}

/* pg_xact_status of an orphaned write: committed or aborted settles it;
 * anything else (too old to know) leaves it to a fence. */
static void status_result(ldb_pg *pg, PGresult *r)
{
    pg_write *w = pg->asking;
    const char *st = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                     !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "";
    if (strcmp(st, "committed") == 0)
        write_confirm(pg, w);
    else if (strcmp(st, "aborted") == 0)
        write_reject(pg, w, "livedb-pg: the connection was lost and postgresql did not "
                            "commit the write");
    else
        w->fence = pg_fence_want(pg);
}

void pg_control_result(pg_conn *c)
{
    ldb_pg *pg = c->pg;
    while (c->state == CONN_BUSY && !PQisBusy(c->c)) {
        PGresult *r = PQgetResult(c->c);
        if (r) {
            if (pg->fence_inflight)
                fence_result(pg, c, r);
            else if (pg->asking && pg->asking->state == WRITE_UNKNOWN && !pg->ending)
                status_result(pg, r);
            PQclear(r);
            continue;
        }
        c->state = CONN_IDLE;       /* the command is over */
        if (pg->fence_inflight) {
            pg->fence_inflight = 0;
        } else if (pg->ending) {    /* its backend is gone: its xid or a fence decides */
            if (pg->ending->xid)
                pg->asking = pg->ending;
            else
                pg->ending->fence = pg_fence_want(pg);
            pg->ending = NULL;
        } else {
            pg->asking = NULL;
        }
        pg_control_kick(pg);
    }
}

/* A replay (the slot was lost or consumed elsewhere): writes PostgreSQL
 * committed may never come through the new slot; they are confirmed as
 * written (the replay loads the server's rows anyway). */
void pg_writes_replayed(ldb_pg *pg)
{
    for (pg_write *w = pg->writes; w; w = w->next)
        if (w->state == WRITE_SENT && !w->sql)
            write_confirm(pg, w);
}

void pg_writer_result(pg_conn *c)
{
    ldb_pg *pg = c->pg;
    while (c->state == CONN_BUSY && !PQisBusy(c->c)) {
        PGresult *r = PQgetResult(c->c);
        pg_write *w = write_sending(pg);
        if (r) {
            bool server = PQresultErrorField(r, PG_DIAG_SQLSTATE) != NULL &&
                          PQstatus(c->c) == CONNECTION_OK;
            if (PQresultStatus(r) == PGRES_FATAL_ERROR && w && !server) {
                /* libpq's own failure (out of memory, the connection):
                 * the outcome is unknown, settled as an orphan */
                PQclear(r);
                pg_conn_drop(c, "the write's result was lost");
                return;
            } else if (PQresultStatus(r) == PGRES_FATAL_ERROR && w) {
                char msg[400];
                snprintf(msg, sizeof msg, "postgresql: %s", result_message(r, c));
                write_reject(pg, w, msg);
            } else if (w && !w->xid && PQresultStatus(r) == PGRES_TUPLES_OK &&
                       PQntuples(r) == 1) {
                w->xid = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
            }
            PQclear(r);
            continue;
        }
        c->state = CONN_IDLE;
        if (w) {
            free(w->sql);           /* committed: the stream will confirm it */
            w->sql = NULL;
            if (w->replays != pg->stats.replays)   /* unless a replay lost it */
                write_confirm(pg, w);
        }
        pg_control_kick(pg);
    }
}

/* The control connection died: a fence in flight is sent again under a
 * new number; a backend being ended is ended again. */
void pg_control_lost(pg_conn *c)
{
    ldb_pg *pg = c->pg;
    if (pg->fence_inflight) {
        pg->fence_inflight = 0;
        pg->fence_wanted = true;
    }
    pg->ending = NULL;
    pg->asking = NULL;
}

/* The writer died: the write in flight has an unknown outcome. */
void pg_writer_lost(pg_conn *c)
{
    pg_write *w = write_sending(c->pg);
    if (w) {
        w->state = WRITE_UNKNOWN;
        free(w->sql);
        w->sql = NULL;
    }
}

static pg_write *write_by_id(ldb_pg *pg, uint64_t id)
{
    for (pg_write *w = pg->writes; w; w = w->next)
        if (w->id == id && w->state != WRITE_DONE)
            return w;
    return NULL;
}

/* The key a mutation addressed (its row after for an INSERT, before for
 * the others), encoded as feed.c's carried map holds it: by value, then
 * the table. */
static int mutation_key(pg_table *t, const ldb_optimistic *o, int i, pg_buf *key)
{
    const ldb_value **vals = calloc((size_t)t->npk + 1, sizeof *vals);
    if (!vals)
        return LDB_NOMEM;
    bool insert = ldb_optimistic_kind(o, i) == LDB_MUTATION_INSERT;
    for (int k = 0; k < t->npk; k++)
        vals[k] = insert ? ldb_optimistic_after(o, i, t->pk[k])
                         : ldb_optimistic_before(o, i, t->pk[k]);
    pg_value_key(t, vals, key);
    pg_buf_add(key, (const char *)&t, sizeof t);
    free(vals);
    return key->oom ? LDB_NOMEM : LDB_OK;
}

/* Makes s confirm write id (*out: the write, settled once s commits); a
 * key it addressed that s does not carry has no
 * row on the server (an UPDATE or DELETE found none, or the server stored
 * an INSERT's key in another form, as an upper-case uuid): s deletes it. */
int pg_write_confirmed(ldb_pg *pg, uint64_t id, ldb_sync *s, const pg_keymap *carried,
                       pg_write **out)
{
    pg_write *w = write_by_id(pg, id);
    *out = NULL;
    if (!w)
        return LDB_OK;
    pg_buf key = { 0 };
    int rc = LDB_OK;
    for (int i = 0; rc == LDB_OK && i < ldb_optimistic_count(w->o); i++) {
        pg_table *t = table_local(pg, ldb_optimistic_table(w->o, i));
        if (!t)
            continue;
        bool insert = ldb_optimistic_kind(w->o, i) == LDB_MUTATION_INSERT;
        rc = mutation_key(t, w->o, i, &key);
        if (rc || pg_keymap_get(carried, key.p, key.n))
            continue;                   /* (a failed key fails the loop) */
        rc = ldb_sync_source(s, t->src);
        for (int k = 0; rc == LDB_OK && k < t->npk; k++) {
            const ldb_value *v = insert ? ldb_optimistic_after(w->o, i, t->pk[k])
                                        : ldb_optimistic_before(w->o, i, t->pk[k]);
            size_t n;
            switch (ldb_value_type(v)) {
            case LDB_INTEGER: rc = ldb_sync_int64(s, t->pk[k], ldb_value_int64(v)); break;
            case LDB_REAL: rc = ldb_sync_double(s, t->pk[k], ldb_value_double(v)); break;
            case LDB_NULL: rc = ldb_sync_null(s, t->pk[k]); break;
            default: {
                const char *p = ldb_value_text(v, &n);
                rc = ldb_value_type(v) == LDB_BLOB ? ldb_sync_blob(s, t->pk[k], p, (int)n)
                                                   : ldb_sync_text(s, t->pk[k], p, (int)n);
            }
            }
        }
        if (rc == LDB_OK)
            rc = ldb_sync_delete(s);
    }
    pg_buf_free(&key);
    if (rc == LDB_OK)
        rc = ldb_sync_confirm(s, w->o);
    if (rc == LDB_OK)
        *out = w;
    return rc;
}

/* s, which confirms w, was committed. */
void pg_write_settled(ldb_pg *pg, pg_write *w)
{
    w->state = WRITE_DONE;
    pg->stats.confirmed++;
}

void pg_writes_fence_seen(ldb_pg *pg)
{
    for (pg_write *w = pg->writes; w; w = w->next)
        if (w->state == WRITE_UNKNOWN && w->fence && w->fence <= pg->fence_seen)
            write_reject(pg, w, "livedb-pg: the connection was lost before postgresql "
                                "committed the write; it was not applied");
    pg_writes_free(pg, false);
}

bool pg_writes_idle(ldb_pg *pg)
{
    for (pg_write *w = pg->writes; w; w = w->next)
        if (w->state != WRITE_DONE)
            return false;
    return true;
}

/* Frees the resolved writes (all of them at close). */
void pg_writes_free(ldb_pg *pg, bool all)
{
    for (pg_write **p = &pg->writes; *p; ) {
        pg_write *w = *p;
        if (w->state != WRITE_DONE && !all) {
            p = &w->next;
            continue;
        }
        *p = w->next;
        ldb_optimistic_free(w->o);
        free(w->sql);
        free(w);
    }
}
