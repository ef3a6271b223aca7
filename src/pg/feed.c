/*
 * feed.c - the change stream: a logical replication connection reading
 * pgoutput (protocol version 1, with logical messages) from the slot, one
 * PostgreSQL transaction at a time.
 *
 * A transaction's messages are kept until its COMMIT, then applied as one
 * sync transaction (one livedb commit), in commit order:
 * - a change is applied when its row is held locally or the new row
 *   matches a current request of its table (value.c's filter), or when
 *   the transaction is one of our optimistic writes (it then confirms the
 *   write); the rest is counted as ignored;
 * - every changed key is recorded in its table's touched map while loads
 *   are outstanding (load.c skips loaded rows the stream changed since);
 * - a logical message "<tag>:f<n>" is fence n, "<tag>:w<id>" marks write
 *   id's transaction.
 * Only what was applied is confirmed to the server (standby status), so
 * after a reconnect the slot resumes at the first transaction not applied.
 * A missing slot, or one confirmed past what we applied (someone else
 * consumed it), is a gap: every source is truncated and replayed.
 */
#include "pg/pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FEED_CHECK, FEED_CREATE, FEED_START, FEED_STREAMING };

struct pg_txn {
    bool open;           /* between BEGIN and COMMIT */
    uint32_t xid;
    pg_buf msgs;         /* the transaction's messages, each: u32 length, bytes */
    uint64_t end_lsn;
};

static uint64_t get_u64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)p[i];
    return v;
}
static uint32_t get_u32(const char *p)
{
    return (uint32_t)(unsigned char)p[0] << 24 | (uint32_t)(unsigned char)p[1] << 16 |
           (uint32_t)(unsigned char)p[2] << 8 | (unsigned char)p[3];
}
static int get_u16(const char *p) { return (unsigned char)p[0] << 8 | (unsigned char)p[1]; }
static void put_u64(char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (char)(v & 0xff);
}

static uint64_t parse_lsn(const char *s)
{
    unsigned hi = 0, lo = 0;
    return sscanf(s, "%X/%X", &hi, &lo) == 2 ? (uint64_t)hi << 32 | lo : 0;
}

/* ---- connection steps: check the slot, create it, start streaming ---- */

static void feed_send(pg_conn *c, const char *sql)
{
    if (!PQsendQuery(c->c, sql))
        pg_conn_drop(c, pg_conn_error(c));
    else
        c->state = CONN_BUSY;
}

static void feed_check(pg_conn *c)
{
    pg_buf q = { 0 };
    pg_buf_puts(&q, "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = ");
    pg_buf_literal(&q, c->pg->slot, strlen(c->pg->slot));
    c->step = FEED_CHECK;
    feed_send(c, pg_buf_str(&q));
    pg_buf_free(&q);
}

void pg_feed_setup(pg_conn *c) { feed_check(c); }

static void feed_start(pg_conn *c)
{
    ldb_pg *pg = c->pg;
    pg_buf q = { 0 };
    pg_buf_puts(&q, "START_REPLICATION SLOT ");
    pg_buf_ident(&q, pg->slot);
    pg_buf_printf(&q, " LOGICAL %X/%X (proto_version '1', publication_names ",
               (unsigned)(pg->applied_lsn >> 32), (unsigned)pg->applied_lsn);
    pg_buf pub = { 0 };
    pg_buf_ident(&pub, pg->publication);
    pg_buf_literal(&q, pub.p, pub.n);
    pg_buf_free(&pub);
    pg_buf_puts(&q, ", messages 'true')");
    c->step = FEED_START;
    feed_send(c, pg_buf_str(&q));
    pg_buf_free(&q);
}

/* Truncates t's source (law 9): the core asks for its demand again, and
 * its live queries publish the replacement only once it is loaded. */
static bool void_table(ldb_pg *pg, pg_table *t)
{
    ldb_sync *s;
    t->truncated = pg->feed_seq;
    if (ldb_sync_begin(t->src, NULL, &s) != LDB_OK)
        return false;
    if (ldb_sync_truncate(s) != LDB_OK) {
        ldb_sync_abandon(s);
        return false;
    }
    return ldb_sync_commit(s, NULL) == LDB_OK;
}

/* false when some table could not be voided (out of memory): the caller
 * must not move past what needed the replay. */
static bool replay_all(ldb_pg *pg)
{
    bool ok = true;
    pg->stats.replays++;
    pg_writes_replayed(pg);
    for (int i = 0; i < pg->ntables; i++)
        ok &= void_table(pg, pg->tables[i]);
    return ok;
}

static void feed_step_result(pg_conn *c, PGresult *r)
{
    ldb_pg *pg = c->pg;
    int st = PQresultStatus(r);
    if (c->step == FEED_CHECK && st == PGRES_TUPLES_OK) {
        if (PQntuples(r) == 0) {            /* the slot is gone */
            c->step = FEED_CREATE;
            return;
        }
        uint64_t confirmed = parse_lsn(PQgetvalue(r, 0, 0));
        if (confirmed > pg->applied_lsn) {  /* consumed elsewhere: a gap */
            pg->applied_lsn = confirmed;
            pg->replay_needed = true;
        }
        c->step = FEED_START;
        return;
    }
    if (c->step == FEED_CREATE && st == PGRES_TUPLES_OK) {
        pg->applied_lsn = parse_lsn(PQgetvalue(r, 0, 1));
        pg->replay_needed = true;
        c->step = FEED_START;
        return;
    }
    if (c->step == FEED_START && st == PGRES_COPY_BOTH) {
        c->step = FEED_STREAMING;
        if (pg->replay_needed && replay_all(pg))
            pg->replay_needed = false;
        else if (pg->replay_needed)
            pg_conn_drop(c, "out of memory replaying: trying again");
        return;
    }
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        char why[300];
        snprintf(why, sizeof why, "replication: %s",
                 PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                     ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : pg_conn_error(c));
        c->step = -1;
        pg_conn_drop(c, why);
    }
}

/* Drains the results of a setup command, then sends the next one. */
static void feed_setup_input(pg_conn *c)
{
    while (c->state == CONN_BUSY && !PQisBusy(c->c)) {
        PGresult *r = PQgetResult(c->c);
        if (!r) {
            c->state = CONN_IDLE;
            break;
        }
        feed_step_result(c, r);
        PQclear(r);
        if (c->step == FEED_STREAMING || c->state == CONN_DOWN)
            return;
    }
    if (c->state != CONN_IDLE)
        return;
    if (c->step == FEED_CREATE) {
        pg_buf q = { 0 };
        pg_buf_puts(&q, "CREATE_REPLICATION_SLOT ");
        pg_buf_ident(&q, c->pg->slot);
        pg_buf_puts(&q, " LOGICAL pgoutput NOEXPORT_SNAPSHOT");
        feed_send(c, pg_buf_str(&q));
        pg_buf_free(&q);
    } else if (c->step == FEED_START) {
        feed_start(c);
    }
}

/* ---- standby status ---- */

void pg_feed_status(ldb_pg *pg, bool force)
{
    pg_conn *c = &pg->feed;
    int64_t now = pg_now_ms();
    if (c->state == CONN_DOWN || c->step != FEED_STREAMING || (!force && now < pg->status_at))
        return;
    char m[34];
    m[0] = 'r';
    put_u64(m + 1, pg->applied_lsn);
    put_u64(m + 9, pg->applied_lsn);
    put_u64(m + 17, pg->applied_lsn);
    put_u64(m + 25, (uint64_t)(now - 946684800000LL) * 1000); /* since 2000-01-01, µs */
    m[33] = 0;
    if (PQputCopyData(c->c, m, sizeof m) != 1 || PQflush(c->c) < 0)
        pg_conn_drop(c, pg_conn_error(c));
    pg->status_at = now + 1000;
}

/* ---- applying a transaction ---- */

/* Parses TupleData at p into cells (t->ncols, in our column order; the
 * values are copied NUL-terminated into buf, which the cells then point
 * into: one buf per tuple). Returns the position after it, NULL on a
 * malformed message or NOMEM. */
static const char *parse_tuple(const pg_table *t, const char *p, const char *end, pg_cell *cells,
                               pg_buf *buf)
{
    if (end - p < 2)
        return NULL;
    int n = get_u16(p);
    p += 2;
    buf->n = 0;
    for (int i = 0; i < t->ncols; i++)
        cells[i] = (pg_cell){ NULL, -1, false };
    /* first pass: copy the values, keeping each one's offset in len */
    for (int i = 0; i < n; i++) {
        if (p >= end)
            return NULL;
        char kind = *p++;
        int col = i < t->relmap_n ? t->relmap[i] : -1;
        if (kind == 'u' && col >= 0)
            cells[col].unchanged = true;
        if (kind != 't')
            continue;
        if (end - p < 4)
            return NULL;
        uint32_t len = get_u32(p);
        p += 4;
        if ((uint64_t)(end - p) < len)
            return NULL;
        if (col >= 0) {
            cells[col].len = (int)len;
            cells[col].p = (const char *)(uintptr_t)(buf->n + 1); /* offset + 1 until fixed */
            pg_buf_add(buf, p, len);
            pg_buf_add(buf, "", 1);
        }
        p += len;
    }
    if (buf->oom)
        return NULL;
    for (int i = 0; i < t->ncols; i++)
        if (cells[i].p)
            cells[i].p = buf->p + ((uintptr_t)cells[i].p - 1);
    return p;
}

static pg_table *table_by_relid(ldb_pg *pg, uint32_t relid)
{
    for (int i = 0; i < pg->ntables; i++)
        if (pg->tables[i]->relid == relid)
            return pg->tables[i];
    return NULL;
}

/* A relation message: which of our tables, and its columns by name. A
 * table dropped and made again (a new oid) is void, and one of our
 * columns the server no longer has is NULL from then on (said in
 * ldb_pg_errmsg). */
static void on_relation(ldb_pg *pg, const char *p, const char *end)
{
    if (end - p < 4)
        return;
    uint32_t relid = get_u32(p);
    const char *nsp = p + 4;
    const char *rel = nsp + strnlen(nsp, (size_t)(end - nsp)) + 1;
    if (rel >= end)
        return;
    const char *q = rel + strnlen(rel, (size_t)(end - rel)) + 1;
    if (end - q < 3)
        return;
    pg_table *t = pg_table_by_rel(pg, *nsp ? nsp : "pg_catalog", rel);
    if (!t)
        return;
    int n = get_u16(q + 1);
    q += 3;
    int *map = malloc(((size_t)n + 1) * sizeof *map);
    bool *seen = calloc((size_t)t->ncols + 1, sizeof *seen);
    for (int i = 0; map && seen && i < n; i++) {
        map[i] = -1;
        const char *name = q + 1;
        if (name >= end)
            continue;
        size_t len = strnlen(name, (size_t)(end - name));
        for (int c = 0; c < t->ncols; c++)
            if (strlen(t->cols[c].name) == len && memcmp(t->cols[c].name, name, len) == 0)
                map[i] = c, seen[c] = true;
        q = name + len + 1 + 8;                  /* type oid, typmod */
    }
    if (!map || !seen) {
        free(map), free(seen);
        pg_conn_drop(&pg->feed, "out of memory reading a relation message");
        return;
    }
    for (int c = 0; c < t->ncols; c++)
        if (!seen[c])
            pg_set_err(pg, "column %s of %s is gone from postgresql: NULL from now on",
                       t->cols[c].name, t->pgname);
    free(seen);
    free(t->relmap);
    t->relmap = map;
    t->relmap_n = n;
    if (t->relid != relid) {                     /* dropped and made again */
        t->relid = relid;
        if (!void_table(pg, t))
            pg_conn_drop(&pg->feed, "out of memory voiding a table made again");
    }
}

/* The transaction being applied. */
struct apply {
    ldb_pg *pg;
    ldb_sync *s;
    ldb_source *to;       /* the source rows are set for now */
    uint64_t seq;
    bool all;             /* one of our writes: apply every change */
    bool record;          /* loads are outstanding: record touched keys */
    pg_keymap carried;    /* all: the keys it changed (table, key) */
    bool changed;         /* it changed a row of an attached table */
    pg_keymap mine;       /* (table, key) -> 1 put, 2 deleted by this transaction:
                           * the local table shows neither before the commit */
    pg_buf key, oldbuf, newbuf;
    pg_cell *oldc, *newc; /* a change's tuples (the widest table's columns) */
    pg_cell **saved;      /* rows put (mine's MINE_PUT + index) */
    int nsaved, capsaved;
    int rc;
};

static int ensure_sync(struct apply *a, pg_table *t)
{
    if (!a->s) {
        int rc = ldb_sync_begin(t->src, NULL, &a->s);
        a->to = t->src;
        return rc;
    }
    if (a->to != t->src) {
        a->to = t->src;
        return ldb_sync_source(a->s, t->src);
    }
    return LDB_OK;
}

static void touch(struct apply *a, pg_table *t, const pg_cell *row)
{
    a->changed = true;
    size_t n = pg_row_key(t, row, &a->key);
    if (a->key.oom || (a->record && !pg_keymap_put(&t->touched, a->key.p, n, a->seq)))
        a->rc = LDB_NOMEM;
    if (a->all) {
        pg_buf_add(&a->key, (const char *)&t, sizeof t);
        if (a->key.oom || !pg_keymap_put(&a->carried, a->key.p, a->key.n, 1))
            a->rc = LDB_NOMEM;
    }
}

/* Whether row's key is held, counting this transaction's own changes. */
/* This transaction's own mark for row's key: 0 none, MINE_DELETED, or
 * MINE_PUT + the index of the row it put (saved: the local table shows
 * neither before the commit). */
enum { MINE_DELETED = 1, MINE_PUT = 2 };

static uint64_t mine_get(struct apply *a, pg_table *t, const pg_cell *row)
{
    pg_row_key(t, row, &a->key);
    pg_buf_add(&a->key, (const char *)&t, sizeof t);
    if (a->key.oom) {
        a->rc = LDB_NOMEM;
        return 0;
    }
    return pg_keymap_get(&a->mine, a->key.p, a->key.n);
}

/* Whether row's key is held, counting this transaction's changes. */
static int held_now(struct apply *a, pg_table *t, const pg_cell *row)
{
    uint64_t v = mine_get(a, t, row);
    return v ? v >= MINE_PUT : pg_row_held(t, row);
}

static void mark(struct apply *a, pg_table *t, const pg_cell *row, uint64_t v)
{
    pg_row_key(t, row, &a->key);
    pg_buf_add(&a->key, (const char *)&t, sizeof t);
    if (a->key.oom || !pg_keymap_put(&a->mine, a->key.p, a->key.n, v))
        a->rc = LDB_NOMEM;
}

/* Keeps a copy of the row put (its text in one block with its cells), so
 * that a later change of the same key in this transaction takes the
 * columns the stream left unchanged from it. */
static int save_put(struct apply *a, pg_table *t, const pg_cell *row)
{
    size_t text = 0;
    for (int i = 0; i < t->ncols; i++)
        text += row[i].p ? (size_t)row[i].len + 1 : 0;
    if (a->nsaved == a->capsaved) {
        int cap = a->capsaved ? a->capsaved * 2 : 8;
        pg_cell **more = realloc(a->saved, (size_t)cap * sizeof *more);
        if (!more)
            return LDB_NOMEM;
        a->saved = more;
        a->capsaved = cap;
    }
    pg_cell *copy = malloc((size_t)t->ncols * sizeof *copy + text + 1);
    if (!copy)
        return LDB_NOMEM;
    char *p = (char *)(copy + t->ncols);
    for (int i = 0; i < t->ncols; i++) {
        copy[i] = row[i];
        if (row[i].p) {
            memcpy(p, row[i].p, (size_t)row[i].len + 1);
            copy[i].p = p;
            p += row[i].len + 1;
        }
    }
    a->saved[a->nsaved++] = copy;
    mark(a, t, row, MINE_PUT + (uint64_t)(a->nsaved - 1));
    return a->rc;
}

/* Fills row's unchanged columns from the row this transaction put. */
static void merge_put(struct apply *a, pg_table *t, pg_cell *row, uint64_t v)
{
    const pg_cell *prev = a->saved[v - MINE_PUT];
    for (int i = 0; i < t->ncols; i++)
        if (row[i].unchanged)
            row[i] = prev[i];
}

static bool wanted(pg_table *t, const pg_cell *row)
{
    for (int i = 0; i < t->nreqs; i++)
        if (pg_cell_matches(t, row, ldb_request_pred(t->reqs[i])))
            return true;
    return false;
}

static int put_row(struct apply *a, pg_table *t, const pg_cell *row, bool held)
{
    int rc = ensure_sync(a, t);
    for (int i = 0; rc == LDB_OK && i < t->ncols; i++)
        if (!row[i].unchanged)
            rc = pg_cell_sync(a->s, i, t->cols[i].kind, &row[i]);
    if (rc == LDB_OK && held && pg_row_read(t, row, a->s) < 0)
        rc = LDB_NOMEM;
    return rc ? rc : ldb_sync_upsert(a->s);
}

static int del_row(struct apply *a, pg_table *t, const pg_cell *row)
{
    int rc = ensure_sync(a, t);
    for (int i = 0; rc == LDB_OK && i < t->npk; i++)
        rc = pg_cell_sync(a->s, t->pk[i], t->cols[t->pk[i]].kind, &row[t->pk[i]]);
    return rc ? rc : ldb_sync_delete(a->s);
}

static bool has_unchanged(const pg_table *t, const pg_cell *row)
{
    for (int i = 0; i < t->ncols; i++)
        if (row[i].unchanged)
            return true;
    return false;
}

/* A new row version: applied when held or wanted. */
static int upsert_change(struct apply *a, pg_table *t, pg_cell *row)
{
    uint64_t v = mine_get(a, t, row);
    int held = v ? v >= MINE_PUT : pg_row_held(t, row);
    if (held < 0)
        return -held;
    if (v >= MINE_PUT)
        merge_put(a, t, row, v);
    touch(a, t, row);
    if (!held && !a->all && !wanted(t, row)) {
        a->pg->stats.ignored++;
        return LDB_OK;
    }
    if (!held && has_unchanged(t, row))        /* a TOASTed value we never saw */
        return pg_load_refetch(t, row);
    a->pg->stats.changes++;
    int rc = save_put(a, t, row);
    return rc ? rc : put_row(a, t, row, held);
}

static bool same_key(const pg_table *t, const pg_cell *a, const pg_cell *b)
{
    for (int i = 0; i < t->npk; i++) {
        const pg_cell *x = &a[t->pk[i]], *y = &b[t->pk[i]];
        if (!x->p || !y->p || x->len != y->len || memcmp(x->p, y->p, (size_t)x->len))
            return false;
    }
    return true;
}

static int apply_change(struct apply *a, char kind, const char *p, const char *end)
{
    if (end - p < 4)
        return LDB_OK;
    pg_table *t = table_by_relid(a->pg, get_u32(p));
    if (!t)
        return LDB_OK;
    p += 4;
    pg_cell *oldc = a->oldc, *newc = a->newc;
    int rc = LDB_OK;
    bool has_old = false;
    if (rc == LDB_OK && kind != 'I' && p < end && (*p == 'K' || *p == 'O')) {
        p = parse_tuple(t, p + 1, end, oldc, &a->oldbuf);
        has_old = p != NULL;
    }
    if (rc == LDB_OK && p && kind != 'D' && p < end && *p == 'N')
        p = parse_tuple(t, p + 1, end, newc, &a->newbuf);
    if (!p)          /* out of memory, or a malformed message: stream it again */
        return LDB_NOMEM;
    if (rc == LDB_OK) {
        if (kind == 'D') {
            touch(a, t, oldc);
            int held = held_now(a, t, oldc);
            if (held == 0)
                a->pg->stats.ignored++;
            else if (held > 0) {
                a->pg->stats.changes++;
                mark(a, t, oldc, MINE_DELETED);
                rc = del_row(a, t, oldc);
            } else
                rc = -held;
        } else {
            if (has_old && !same_key(t, oldc, newc)) {  /* the key changed */
                touch(a, t, oldc);
                int held = held_now(a, t, oldc);
                if (held > 0) {
                    mark(a, t, oldc, MINE_DELETED);
                    rc = del_row(a, t, oldc);
                } else if (held < 0)
                    rc = -held;
            }
            if (rc == LDB_OK)
                rc = upsert_change(a, t, newc);
        }
    }
    return rc ? rc : a->rc;   /* a key that could not be encoded fails it too */
}

/* TRUNCATE: the table's rows are void (law 9); its own sync transaction,
 * so that the truncate is the first source's. */
static int apply_truncate(struct apply *a, const char *p, const char *end)
{
    if (end - p < 5)
        return LDB_OK;
    uint32_t n = get_u32(p);
    p += 5;
    for (uint32_t i = 0; i < n && end - p >= 4; i++, p += 4) {
        pg_table *t = table_by_relid(a->pg, get_u32(p));
        if (!t)
            continue;
        if (a->s) {
            ldb_sync_commit(a->s, NULL);
            a->s = NULL;
        }
        int rc = ldb_sync_begin(t->src, NULL, &a->s);
        a->to = t->src;
        if (rc == LDB_OK)
            rc = ldb_sync_truncate(a->s);
        if (rc)
            return rc;
        t->truncated = a->seq;
    }
    return LDB_OK;
}

/* "<tag>:f<n>" and "<tag>:w<id>" messages of ours. */
static void on_message(ldb_pg *pg, const char *p, const char *end, uint64_t *fence,
                       uint64_t *write)
{
    if (end - p < 9)
        return;
    const char *prefix = p + 9;
    size_t plen = strnlen(prefix, (size_t)(end - prefix));
    if (plen != 6 || memcmp(prefix, "livedb", 6) || end - (prefix + 7) < 4)
        return;
    const char *body = prefix + 7 + 4;
    uint32_t len = get_u32(prefix + 7);
    size_t tl = strlen(pg->tag);
    if ((uint64_t)(end - body) < len || len < tl + 3 || memcmp(body, pg->tag, tl) || body[tl] != ':')
        return;
    char num[24];
    size_t nn = len - tl - 2 < sizeof num - 1 ? len - tl - 2 : sizeof num - 1;
    memcpy(num, body + tl + 2, nn);
    num[nn] = 0;
    uint64_t v = strtoull(num, NULL, 10);
    if (body[tl + 1] == 'f' && v > *fence)
        *fence = v;
    else if (body[tl + 1] == 'w')
        *write = v;
}

static void fence_reached(ldb_pg *pg, uint64_t fence)
{
    if (fence <= pg->fence_seen)
        return;
    pg->fence_seen = fence;
    pg_loads_fence_seen(pg);
    pg_writes_fence_seen(pg);
}

/* A stream transaction that could not be applied is never skipped (its
 * position is not confirmed): out of memory drops the stream, which
 * sends it again after the reconnect; a refusal by the local table (a
 * local UNIQUE index the server's rows break) replays every source. The
 * stream connection may be gone (and the transaction freed) on return. */
static void apply_failed(ldb_pg *pg, int rc)
{
    if (rc != LDB_NOMEM) {
        pg_set_err(pg, "applying a stream transaction failed (%s): replaying",
                   ldb_errmsg(pg->db));
        if (replay_all(pg))
            return;
    }
    pg_conn_drop(&pg->feed, "out of memory applying a stream transaction: it is sent again");
}

/* Applies the buffered transaction at its commit. */
static void apply_txn(ldb_pg *pg, struct pg_txn *x)
{
    struct apply a = { .pg = pg, .seq = pg->feed_seq + 1, .record = !pg_loads_idle(pg) };
    uint64_t fence = 0, write = 0;
    for (size_t off = 0; off + 4 <= x->msgs.n; ) {     /* messages first: is it our write? */
        uint32_t len = get_u32(x->msgs.p + off);
        const char *m = x->msgs.p + off + 4;
        if (*m == 'M')
            on_message(pg, m + 1, m + len, &fence, &write);
        off += 4 + len;
    }
    a.all = write != 0;
    pg->feed_seq = a.seq;
    int width = 1;
    for (int i = 0; i < pg->ntables; i++)
        width = pg->tables[i]->ncols > width ? pg->tables[i]->ncols : width;
    a.oldc = calloc((size_t)width, sizeof *a.oldc);
    a.newc = calloc((size_t)width, sizeof *a.newc);
    if (!a.oldc || !a.newc)
        a.rc = LDB_NOMEM;
    for (size_t off = 0; a.rc == LDB_OK && off + 4 <= x->msgs.n; ) {
        uint32_t len = get_u32(x->msgs.p + off);
        const char *m = x->msgs.p + off + 4;
        if (*m == 'I' || *m == 'U' || *m == 'D')
            a.rc = apply_change(&a, *m, m + 1, m + len);
        else if (*m == 'T')
            a.rc = apply_truncate(&a, m + 1, m + len);
        off += 4 + len;
    }
    pg_write *w = NULL;
    if (a.rc == LDB_OK && write && !a.s && pg->ntables)
        a.rc = ldb_sync_begin(pg->tables[0]->src, NULL, &a.s);
    if (a.rc == LDB_OK && write)
        a.rc = pg_write_confirmed(pg, write, a.s, &a.carried, &w);
    if (a.changed && a.rc == LDB_OK && !pg_unproven_add(pg, x->xid, a.seq))
        a.rc = LDB_NOMEM;
    if (a.s && a.rc == LDB_OK)
        a.rc = ldb_sync_commit(a.s, NULL);
    else if (a.s)
        ldb_sync_abandon(a.s);
    if (a.rc == LDB_OK && w)
        pg_write_settled(pg, w);
    pg_buf_free(&a.key), pg_buf_free(&a.oldbuf), pg_buf_free(&a.newbuf);
    pg_keymap_clear(&a.carried);
    pg_keymap_clear(&a.mine);
    for (int i = 0; i < a.nsaved; i++)
        free(a.saved[i]);
    free(a.saved);
    free(a.oldc), free(a.newc);
    if (a.rc) {
        apply_failed(pg, a.rc);
        return;
    }
    pg->stats.txns++;
    pg->applied_lsn = x->end_lsn;
    fence_reached(pg, fence);
}

/* One pgoutput message. */
static void on_pgoutput(ldb_pg *pg, const char *m, size_t len)
{
    const char *end = m + len;
    struct pg_txn *x = pg->txn;
    switch (m[0]) {
    case 'B':
        if (!x && !(x = pg->txn = calloc(1, sizeof *x))) {
            pg_conn_drop(&pg->feed, "out of memory receiving a transaction");
            break;
        }
        x->msgs.n = 0;
        x->msgs.oom = false;
        x->open = true;
        x->xid = len >= 21 ? get_u32(m + 17) : 0;
        break;
    case 'R':
        on_relation(pg, m + 1, end);
        break;
    case 'M':
        if (len > 1 && !(m[1] & 1)) {           /* not transactional: now */
            uint64_t fence = 0, write = 0;
            on_message(pg, m + 1, end, &fence, &write);
            fence_reached(pg, fence);
            break;
        }
        /* fall through */
    case 'I': case 'U': case 'D': case 'T':
        if (x) {
            uint32_t n = (uint32_t)len;
            char hdr[4] = { (char)(n >> 24), (char)(n >> 16), (char)(n >> 8), (char)n };
            pg_buf_add(&x->msgs, hdr, 4);
            pg_buf_add(&x->msgs, m, len);
        }
        break;
    case 'C':
        if (!x || len < 26)
            break;
        x->end_lsn = get_u64(m + 10);
        x->open = false;
        if (x->msgs.oom) {
            pg_conn_drop(&pg->feed, "out of memory buffering a transaction");
            break;                              /* x is freed */
        }
        apply_txn(pg, x);                       /* may drop the stream, freeing x */
        if (pg->txn)
            pg->txn->msgs.n = 0;
        break;
    default:                                    /* 'Y' types, 'O' origins */
        break;
    }
}

static void feed_copy_input(pg_conn *c)
{
    ldb_pg *pg = c->pg;
    for (;;) {
        char *buf = NULL;
        int n = PQgetCopyData(c->c, &buf, 1);
        if (n == 0)
            return;
        if (n < 0) {
            pg_conn_drop(c, n == -1 ? "replication stream ended" : pg_conn_error(c));
            return;
        }
        if (buf[0] == 'w' && n > 25)
            on_pgoutput(pg, buf + 25, (size_t)n - 25);
        else if (buf[0] == 'k' && n >= 18) {
            /* Outside a transaction everything sent so far is applied. */
            uint64_t wal_end = get_u64(buf + 1);
            if ((!pg->txn || !pg->txn->open) && wal_end > pg->applied_lsn)
                pg->applied_lsn = wal_end;
            if (buf[17])
                pg_feed_status(pg, true);
        }
        PQfreemem(buf);
        if (c->state == CONN_DOWN)
            return;
    }
}

void pg_feed_input(pg_conn *c)
{
    if (c->step == FEED_STREAMING)
        feed_copy_input(c);
    else
        feed_setup_input(c);
}

/* The connection is gone: the transaction being received is dropped (the
 * slot sends it again). */
void pg_feed_lost(ldb_pg *pg)
{
    if (pg->txn) {
        pg_buf_free(&pg->txn->msgs);
        free(pg->txn);
        pg->txn = NULL;
    }
    pg->feed.step = FEED_CHECK;
}
