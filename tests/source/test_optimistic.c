/*
 * test_optimistic.c - the optimistic transactions contract of livedb.h,
 * one named case per clause: the pending layer over local and sourced
 * tables, the mutations a program reads, re-application over sync writes
 * (column merge, vanished rows, constraint conflicts, truncates),
 * confirmation with equal and different server rows, rejection with
 * cascades, the mutation callback's refusals, threads, and allocation
 * failure at every point of commit, rejection and sync application.
 *
 * Results are read back with SQL and from live queries' callbacks; each
 * case says what the program must see and how many batches it gets.
 */
#include "nomem.h"
#include "test.h"
#include "test_db.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading results -------------------------------------------------------------- */

static const char *live_rows(ldb_live *q)
{
    static struct test_rows t;
    t.len = 0;
    t.buf[0] = 0;
    CHECK_INT(ldb_live_read(q, test_rows_append, &t), LDB_OK);
    return t.buf;
}

/* A live query that counts its batches and changes. */
struct watch {
    ldb_live *q;
    int batches;
    size_t changes;
};

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct watch *w = ctx;
    w->batches++;
    w->changes += n;
}

static void watch_open(ldb *db, struct watch *w, const char *sql)
{
    memset(w, 0, sizeof *w);
    int rc = ldb_live_open(db, sql, on_change, w, &w->q);
    CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    w->batches = 0;
    w->changes = 0;
}

/* ---- a source the test feeds by hand (EAGER: its load settles at once) ---------- */

static int load_now(void *ctx, ldb_request *req)
{
    return ldb_request_settle(req, LDB_OK, NULL);
}

static ldb_source *attach(ldb *db, const char *table)
{
    ldb_provider p = { load_now, NULL, NULL, NULL };
    ldb_source *s = NULL;
    CHECK_INT(ldb_source_attach(db, table, LDB_SOURCE_EAGER, &p, NULL, &s), LDB_OK);
    return s;
}

/* A sync row of t(id, a, b): upsert (b NULL when b is NULL), or delete;
 * confirm (may be NULL) rides along. Returns the receipt's state. */
static int sync_row(ldb_source *s, int kind, int64_t id, int64_t a, const char *b,
                    ldb_optimistic *confirm)
{
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, id), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 1, a), LDB_OK);
    CHECK_INT(b ? ldb_sync_text(t, 2, b, -1) : ldb_sync_null(t, 2), LDB_OK);
    CHECK_INT(kind == LDB_MUTATION_DELETE ? ldb_sync_delete(t) : ldb_sync_upsert(t), LDB_OK);
    if (confirm)
        CHECK_INT(ldb_sync_confirm(t, confirm), LDB_OK);
    ldb_receipt *rc;
    ldb_sync_commit(t, &rc);
    int st = ldb_receipt_state(rc);
    ldb_receipt_free(rc);
    return st;
}

/* Runs sql (writes) as one optimistic transaction; returns the handle. */
static ldb_optimistic *optimistic(ldb *db, const char *sql)
{
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, sql);
    ldb_optimistic *o = NULL;
    int rc = ldb_optimistic_commit(db, NULL, NULL, &o);
    CHECKF(rc == LDB_OK, "commit: %s", ldb_errmsg(db));
    return o;
}

#define SCHEMA "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)"
#define ALL "SELECT id, a, b FROM t ORDER BY id"

static ldb *open_db(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    EXEC(db, SCHEMA);
    return db;
}

/* t with rows 1..3 through a source. */
static ldb *open_sourced(ldb_source **s)
{
    ldb *db = open_db();
    *s = attach(db, "t");
    for (int i = 1; i <= 3; i++)
        CHECK_INT(sync_row(*s, 0, i, i * 10, "x", NULL), LDB_RECEIPT_APPLIED);
    return db;
}

/* ---- cases -------------------------------------------------------------------------- */

static void visible_at_once_and_reject_restores(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y')");
    struct watch w;
    watch_open(db, &w, ALL);
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 11 WHERE id = 1; "
                                       "DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (3, 30, 'z')");
    CHECK_STR(sql_rows(db, ALL), "1,11,x;3,30,z");
    CHECK_STR(live_rows(w.q), "1,11,x;3,30,z");
    CHECK_INT(w.batches, 1);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_PENDING);
    CHECK_INT(ldb_optimistic_reject(o, "server said no"), LDB_OK);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_REJECTED);
    CHECK_STR(ldb_optimistic_error(o), "server said no");
    CHECK_STR(sql_rows(db, ALL), "1,10,x;2,20,y");
    CHECK_STR(live_rows(w.q), "1,10,x;2,20,y");
    CHECK_INT(w.batches, 2); /* the reject is one commit */
    CHECK_INT(w.changes, 6);
    /* the table takes ordinary writes again */
    EXEC(db, "UPDATE t SET a = 12 WHERE id = 1");
    CHECK_STR(live_rows(w.q), "1,12,x;2,20,y");
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void mutations_are_the_net_change(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y')");
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 11 WHERE id = 1; UPDATE t SET a = 12 "
                                       "WHERE id = 1; INSERT INTO t VALUES (5, 50, 'q'); "
                                       "DELETE FROM t WHERE id = 5; DELETE FROM t WHERE id = 2");
    CHECK_INT(ldb_optimistic_count(o), 2);
    CHECK(ldb_optimistic_id(o) > 0);
    int upd = ldb_optimistic_kind(o, 0) == LDB_MUTATION_UPDATE ? 0 : 1;
    CHECK_INT(ldb_optimistic_kind(o, upd), LDB_MUTATION_UPDATE);
    CHECK_INT(ldb_optimistic_kind(o, 1 - upd), LDB_MUTATION_DELETE);
    CHECK_STR(ldb_optimistic_table(o, upd), "t");
    CHECK_INT(ldb_optimistic_columns(o, upd), 3);
    CHECK_INT(ldb_value_int64(ldb_optimistic_before(o, upd, 1)), 10);
    CHECK_INT(ldb_value_int64(ldb_optimistic_after(o, upd, 1)), 12);
    CHECK(ldb_optimistic_after(o, 1 - upd, 0) == NULL);
    CHECK_INT(ldb_value_int64(ldb_optimistic_before(o, 1 - upd, 0)), 2);
    CHECK(ldb_optimistic_before(o, 9, 0) == NULL && ldb_optimistic_kind(o, -1) == 0);
    ldb_close(db);
    /* the handle outlives its database, values and all */
    CHECK_INT(ldb_value_int64(ldb_optimistic_after(o, upd, 1)), 12);
    CHECK_INT(ldb_optimistic_reject(o, NULL), LDB_MISUSE);
    ldb_optimistic_free(o);
}

/* Moving an INTEGER PRIMARY KEY above every rowid raises the table's
 * rowid high-water mark: a row change, not a schema change. */
static void integer_key_change_is_a_row_change(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x'), (3, 30, 'z')");
    ldb_optimistic *o = optimistic(db, "UPDATE t SET id = 8 WHERE id = 3");
    CHECK_INT(ldb_optimistic_count(o), 2);
    int del = ldb_optimistic_kind(o, 0) == LDB_MUTATION_DELETE ? 0 : 1;
    CHECK_INT(ldb_optimistic_kind(o, del), LDB_MUTATION_DELETE);
    CHECK_INT(ldb_optimistic_kind(o, 1 - del), LDB_MUTATION_INSERT);
    CHECK_INT(ldb_value_int64(ldb_optimistic_after(o, 1 - del, 0)), 8);
    CHECK_STR(sql_rows(db, "SELECT id, a FROM t ORDER BY id"), "1,10;8,30");
    CHECK_INT(ldb_optimistic_reject(o, "no"), LDB_OK);
    CHECK_STR(sql_rows(db, "SELECT id, a FROM t ORDER BY id"), "1,10;3,30");
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void empty_transaction_confirms_at_once(void)
{
    ldb *db = open_db();
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, "UPDATE t SET a = 1 WHERE id = 99");
    ldb_optimistic *o;
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, &o), LDB_OK);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_INT(ldb_optimistic_count(o), 0);
    EXEC(db, "INSERT INTO t VALUES (1, 1, 'a')"); /* nothing pending */
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void sourced_table_needs_optimistic_mode(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    CHECK_FAILS(db, "UPDATE t SET a = 1 WHERE id = 1", LDB_ERROR);
    CHECK(strstr(ldb_errmsg(db), "a source loads it") != NULL);
    CHECK_FAILS(db, "DELETE FROM t WHERE id = 99", LDB_ERROR); /* even matching nothing */
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 1 WHERE id = 1");
    CHECK_STR(sql_rows(db, ALL), "1,1,x;2,20,x;3,30,x");
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void confirm_with_equal_rows_publishes_nothing(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    struct watch w;
    watch_open(db, &w, ALL);
    struct watch agg;
    watch_open(db, &agg, "SELECT count(*), sum(a) FROM t");
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 11 WHERE id = 1");
    CHECK_INT(w.batches, 1);
    CHECK_INT(sync_row(s, 0, 1, 11, "x", o), LDB_RECEIPT_APPLIED);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_INT(w.batches, 1); /* no flicker: nothing published */
    CHECK_INT(agg.batches, 1);
    CHECK_STR(live_rows(w.q), "1,11,x;2,20,x;3,30,x");
    /* the row is synced now: a later sync write shows as is */
    CHECK_INT(sync_row(s, 0, 1, 12, "x", NULL), LDB_RECEIPT_APPLIED);
    CHECK_STR(live_rows(w.q), "1,12,x;2,20,x;3,30,x");
    CHECK_INT(w.batches, 2);
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void confirm_with_server_version_replaces(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    struct watch w;
    watch_open(db, &w, ALL);
    ldb_optimistic *o = optimistic(db, "INSERT INTO t VALUES (4, 40, 'new')");
    CHECK_INT(sync_row(s, 0, 4, 40, "new (server)", o), LDB_RECEIPT_APPLIED);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_STR(live_rows(w.q), "1,10,x;2,20,x;3,30,x;4,40,new (server)");
    CHECK_INT(w.batches, 2);
    CHECK_INT(w.changes, 2);
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void accept_as_written_makes_rows_synced(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    ldb_optimistic *o = optimistic(db, "UPDATE t SET b = 'mine' WHERE id = 2");
    CHECK_INT(ldb_optimistic_confirm(o), LDB_OK);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_STR(sql_rows(db, ALL), "1,10,x;2,20,mine;3,30,x");
    /* a second resolution of a resolved transaction changes nothing */
    CHECK_INT(ldb_optimistic_reject(o, "late"), LDB_OK);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_STR(sql_rows(db, ALL), "1,10,x;2,20,mine;3,30,x");
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void sync_beneath_merges_columns(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    struct watch w;
    watch_open(db, &w, ALL);
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 99 WHERE id = 2");
    /* another client changes b of the same row: both show */
    CHECK_INT(sync_row(s, 0, 2, 20, "theirs", NULL), LDB_RECEIPT_APPLIED);
    CHECK_STR(live_rows(w.q), "1,10,x;2,99,theirs;3,30,x");
    CHECK_INT(w.batches, 2);
    /* and their change of a is under ours */
    CHECK_INT(sync_row(s, 0, 2, 21, "theirs", NULL), LDB_RECEIPT_APPLIED);
    CHECK_STR(live_rows(w.q), "1,10,x;2,99,theirs;3,30,x");
    CHECK_INT(w.batches, 2);
    CHECK_INT(ldb_optimistic_reject(o, NULL), LDB_OK);
    CHECK_STR(live_rows(w.q), "1,10,x;2,21,theirs;3,30,x");
    CHECK_INT(w.batches, 3);
    ldb_optimistic_free(o);
    ldb_close(db);
}

struct resolved_log {
    int n;
    uint64_t ids[8];
    int states[8];
};

static void on_resolved(void *ctx, ldb_optimistic *o, int state)
{
    struct resolved_log *l = ctx;
    if (l->n < 8) {
        l->ids[l->n] = ldb_optimistic_id(o);
        l->states[l->n] = state;
    }
    l->n++;
}

static void reject_cascades_to_later_writes(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    struct resolved_log log = { 0 };
    CHECK_INT(ldb_set_resolved_callback(db, on_resolved, &log), LDB_OK);
    struct watch w;
    watch_open(db, &w, ALL);
    ldb_optimistic *a = optimistic(db, "INSERT INTO t VALUES (7, 70, 'a')");
    ldb_optimistic *b = optimistic(db, "UPDATE t SET b = 'b' WHERE id = 7; "
                                       "UPDATE t SET a = 0 WHERE id = 1");
    ldb_optimistic *c = optimistic(db, "UPDATE t SET a = 5 WHERE id = 3");
    CHECK_STR(live_rows(w.q), "1,0,x;2,20,x;3,5,x;7,70,b");
    CHECK_INT(ldb_optimistic_reject(a, "no"), LDB_OK);
    CHECK_INT(ldb_optimistic_state(b), LDB_OPTIMISTIC_REJECTED);
    CHECK(strstr(ldb_optimistic_error(b), "no longer exists") != NULL);
    CHECK_INT(ldb_optimistic_state(c), LDB_OPTIMISTIC_PENDING);
    CHECK_STR(live_rows(w.q), "1,10,x;2,20,x;3,5,x");
    CHECK_INT(w.batches, 4); /* three commits, then one for the cascade */
    CHECK_INT(log.n, 2);
    CHECK(log.ids[0] == ldb_optimistic_id(a) && log.states[0] == LDB_OPTIMISTIC_REJECTED);
    CHECK(log.ids[1] == ldb_optimistic_id(b) && log.states[1] == LDB_OPTIMISTIC_REJECTED);
    ldb_optimistic_free(a);
    ldb_optimistic_free(b);
    ldb_optimistic_free(c);
    ldb_close(db);
}

static void sync_delete_rejects_pending_update(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    ldb_optimistic *a = optimistic(db, "UPDATE t SET a = 1 WHERE id = 1");
    ldb_optimistic *b = optimistic(db, "DELETE FROM t WHERE id = 2");
    CHECK_INT(sync_row(s, LDB_MUTATION_DELETE, 1, 0, NULL, NULL), LDB_RECEIPT_APPLIED);
    CHECK_INT(sync_row(s, LDB_MUTATION_DELETE, 2, 0, NULL, NULL), LDB_RECEIPT_APPLIED);
    CHECK_INT(ldb_optimistic_state(a), LDB_OPTIMISTIC_REJECTED);
    CHECK_INT(ldb_optimistic_state(b), LDB_OPTIMISTIC_PENDING); /* deleting a gone row applies */
    CHECK_STR(sql_rows(db, ALL), "3,30,x");
    ldb_optimistic_free(a);
    ldb_optimistic_free(b);
    ldb_close(db);
}

static void reapplied_unique_conflict_rejects(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    EXEC(db, "CREATE TABLE u(id INTEGER PRIMARY KEY, email TEXT UNIQUE)");
    ldb_source *s = attach(db, "u");
    ldb_optimistic *o = optimistic(db, "INSERT INTO u VALUES (1, 'x@y')");
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 2), LDB_OK);
    CHECK_INT(ldb_sync_text(t, 1, "x@y", -1), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    ldb_receipt *rc;
    CHECK_INT(ldb_sync_commit(t, &rc), LDB_OK);
    CHECK_INT(ldb_receipt_state(rc), LDB_RECEIPT_APPLIED);
    ldb_receipt_free(rc);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_REJECTED);
    CHECK(strstr(ldb_optimistic_error(o), "UNIQUE") != NULL);
    CHECK_STR(sql_rows(db, "SELECT id, email FROM u ORDER BY id"), "2,x@y");
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void truncate_keeps_pending_rows(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 7 WHERE id = 2");
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_truncate(t), LDB_OK);
    ldb_receipt *rc;
    CHECK_INT(ldb_sync_commit(t, &rc), LDB_OK);
    CHECK_INT(ldb_receipt_state(rc), LDB_RECEIPT_APPLIED);
    ldb_receipt_free(rc);
    CHECK_STR(sql_rows(db, ALL), "2,7,x");
    /* the reload brings the row back under the pending write */
    CHECK_INT(sync_row(s, 0, 2, 20, "reloaded", NULL), LDB_RECEIPT_APPLIED);
    CHECK_STR(sql_rows(db, ALL), "2,7,reloaded");
    CHECK_INT(ldb_optimistic_reject(o, NULL), LDB_OK);
    CHECK_STR(sql_rows(db, ALL), "2,20,reloaded");
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void ordinary_writes_wait_for_pending(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x')");
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 11 WHERE id = 1");
    CHECK_FAILS(db, "INSERT INTO t VALUES (2, 20, 'y')", LDB_ERROR);
    CHECK(strstr(ldb_errmsg(db), "pending") != NULL);
    ldb_optimistic *o2 = optimistic(db, "INSERT INTO t VALUES (2, 20, 'y')");
    CHECK_INT(ldb_optimistic_confirm(o), LDB_OK);
    CHECK_FAILS(db, "INSERT INTO t VALUES (3, 30, 'z')", LDB_ERROR); /* o2 still pending */
    CHECK_INT(ldb_optimistic_confirm(o2), LDB_OK);
    EXEC(db, "INSERT INTO t VALUES (3, 30, 'z')");
    CHECK_STR(sql_rows(db, ALL), "1,11,x;2,20,y;3,30,z");
    ldb_optimistic_free(o);
    ldb_optimistic_free(o2);
    ldb_close(db);
}

static void transaction_control(void)
{
    ldb *db = open_db();
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, NULL), LDB_MISUSE);
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    CHECK_INT(ldb_optimistic_begin(db), LDB_MISUSE);
    EXEC(db, "INSERT INTO t VALUES (1, 1, 'a')");
    CHECK_FAILS(db, "COMMIT", LDB_MISUSE);
    EXEC(db, "ROLLBACK");
    CHECK_STR(sql_rows(db, ALL), "");
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, NULL), LDB_MISUSE);
    /* DDL: refused at commit, the transaction stays open */
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, "INSERT INTO t VALUES (1, 1, 'a')");
    EXEC(db, "CREATE TABLE z(x)");
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, NULL), LDB_ERROR);
    CHECK(strstr(ldb_errmsg(db), "schema") != NULL);
    EXEC(db, "ROLLBACK");
    /* a table without a declared key */
    EXEC(db, "CREATE TABLE nokey(x)");
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, "INSERT INTO nokey VALUES (1)");
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, NULL), LDB_ERROR);
    CHECK(strstr(ldb_errmsg(db), "PRIMARY KEY") != NULL);
    EXEC(db, "ROLLBACK");
    ldb_close(db);
}

/* The mutation callback: refusals, and a rejection applied on return. */
struct sender {
    ldb *db;
    int calls;
    int rc_open, rc_write, rc_poll, rc_begin;
    ldb_optimistic *seen;
};

static void send_and_misbehave(void *ctx, ldb_optimistic *o)
{
    struct sender *s = ctx;
    s->calls++;
    ldb_live *q = NULL;
    s->rc_open = ldb_live_open(s->db, "SELECT * FROM t", NULL, NULL, &q);
    s->rc_write = ldb_exec(s->db, "INSERT INTO t VALUES (50, 1, 'w')", NULL, NULL);
    s->rc_poll = ldb_source_poll(s->db);
    s->rc_begin = ldb_optimistic_begin(s->db);
    CHECK_STR(sql_rows(s->db, "SELECT a FROM t WHERE id = 1"), "11"); /* reads see it */
    CHECK_INT(ldb_optimistic_reject(o, "refused upstream"), LDB_OK);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_PENDING); /* applied on return */
    s->seen = o;
}

static void mutation_callback_rules(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x')");
    struct sender s = { db, 0, 0, 0, 0, 0, NULL };
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, "UPDATE t SET a = 11 WHERE id = 1");
    ldb_optimistic *o;
    CHECK_INT(ldb_optimistic_commit(db, send_and_misbehave, &s, &o), LDB_OK);
    CHECK_INT(s.calls, 1);
    CHECK(s.seen == o);
    CHECK_INT(s.rc_open, LDB_MISUSE);
    CHECK_INT(s.rc_write, LDB_MISUSE);
    CHECK_INT(s.rc_poll, LDB_MISUSE);
    CHECK_INT(s.rc_begin, LDB_MISUSE);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_REJECTED);
    CHECK_STR(sql_rows(db, ALL), "1,10,x");
    ldb_optimistic_free(o);
    ldb_close(db);
}

static void views_follow_the_visible_state(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'x'), (3, 30, 'y')");
    EXEC(db, "CREATE MATERIALIZED VIEW mv AS SELECT b, count(*) AS n, sum(a) AS s FROM t GROUP BY b");
    ldb_optimistic *o = optimistic(db, "UPDATE t SET b = 'y' WHERE id = 1");
    CHECK_STR(sql_rows(db, "SELECT b, n, s FROM mv ORDER BY b"), "x,1,20;y,2,40");
    ldb_optimistic *o2 = optimistic(db, "DELETE FROM t WHERE id = 3");
    CHECK_INT(ldb_optimistic_reject(o, NULL), LDB_OK);
    CHECK_STR(sql_rows(db, "SELECT b, n, s FROM mv ORDER BY b"), "x,2,30");
    CHECK_INT(ldb_optimistic_reject(o2, NULL), LDB_OK);
    CHECK_STR(sql_rows(db, "SELECT b, n, s FROM mv ORDER BY b"), "x,2,30;y,1,30");
    ldb_optimistic_free(o);
    ldb_optimistic_free(o2);
    ldb_close(db);
}

/* Rejections from another thread join the queue; poll applies them. */
static void *reject_elsewhere(void *arg)
{
    CHECK_INT(ldb_optimistic_reject(arg, "from a thread"), LDB_OK);
    return NULL;
}

static void resolution_from_another_thread(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x')");
    ldb_optimistic *o = optimistic(db, "UPDATE t SET a = 11 WHERE id = 1");
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, reject_elsewhere, o), 0);
    pthread_join(th, NULL);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_PENDING);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_REJECTED);
    CHECK_STR(sql_rows(db, ALL), "1,10,x");
    ldb_optimistic_free(o);
    ldb_close(db);
}

/* A resolution callback that rejects another transaction: it joins the
 * queue and applies at the same dispatch point, after this one. */
struct chain_reject {
    ldb_optimistic *next;
    int calls;
};

static void reject_next(void *ctx, ldb_optimistic *o, int state)
{
    struct chain_reject *c = ctx;
    c->calls++;
    if (c->next && state == LDB_OPTIMISTIC_REJECTED) {
        ldb_optimistic *n = c->next;
        c->next = NULL;
        CHECK_INT(ldb_optimistic_reject(n, "after the first"), LDB_OK);
        CHECK_INT(ldb_optimistic_state(n), LDB_OPTIMISTIC_PENDING); /* not inside */
    }
}

static void resolution_callback_reenters(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y')");
    ldb_optimistic *a = optimistic(db, "UPDATE t SET a = 1 WHERE id = 1");
    ldb_optimistic *b = optimistic(db, "UPDATE t SET a = 2 WHERE id = 2");
    struct chain_reject c = { b, 0 };
    CHECK_INT(ldb_set_resolved_callback(db, reject_next, &c), LDB_OK);
    CHECK_INT(ldb_optimistic_reject(a, NULL), LDB_OK);
    CHECK_INT(ldb_optimistic_state(b), LDB_OPTIMISTIC_REJECTED);
    CHECK_INT(c.calls, 2);
    CHECK_STR(sql_rows(db, ALL), "1,10,x;2,20,y");
    ldb_optimistic_free(a);
    ldb_optimistic_free(b);
    ldb_close(db);
}

/* Rows id in [from, to] with a = id (a_one: a = 1) and b = tag. */
static void fill(ldb *db, int from, int to, bool a_one, const char *tag)
{
    ldb_stmt *st;
    CHECK_INT(ldb_prepare(db, "INSERT INTO t VALUES (?, ?, ?)", -1, &st, NULL), LDB_OK);
    for (int i = from; i <= to; i++) {
        ldb_bind_int64(st, 1, i);
        ldb_bind_int64(st, 2, a_one ? 1 : i);
        ldb_bind_text(st, 3, tag, -1);
        CHECKF(ldb_step(st) == LDB_DONE, "%s", ldb_errmsg(db));
        ldb_reset(st);
    }
    ldb_finalize(st);
}

/* One optimistic transaction of many rows, beside another pending one:
 * the reject takes back exactly its rows, in one batch. */
static void large_transaction(void)
{
    ldb *db = open_db();
    EXEC(db, "BEGIN");
    fill(db, 1, 20000, false, "x");
    EXEC(db, "COMMIT");
    struct watch w;
    watch_open(db, &w, "SELECT count(*), sum(a) FROM t");
    ldb_optimistic *small = optimistic(db, "UPDATE t SET a = 0 WHERE id = 5");
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, "UPDATE t SET a = a + 1 WHERE id % 2 = 0; DELETE FROM t WHERE id % 3 = 0");
    fill(db, 20001, 30000, true, "n");
    ldb_optimistic *big;
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, &big), LDB_OK);
    CHECK_INT(ldb_optimistic_count(big), 23333); /* net per key (Python-computed) */
    CHECK_STR(live_rows(w.q), "23334,133363329");
    CHECK_INT(ldb_optimistic_reject(big, NULL), LDB_OK);
    CHECK_STR(live_rows(w.q), "20000,200009995");
    CHECK_INT(w.batches, 3);
    ldb_optimistic_stats st;
    ldb_optimistic_stats_get(db, &st);
    CHECK_INT(st.pending, 1);
    CHECK_INT(st.rows, 1);
    ldb_optimistic_free(small);
    ldb_optimistic_free(big);
    ldb_close(db);
}

/* One sync transaction over two sources' tables confirms a transaction
 * that wrote both: one commit, nothing published when the rows are
 * equal. A queued one whose other source is detached is dropped. */
static void confirm_across_sources(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    EXEC(db, "CREATE TABLE u(id INTEGER PRIMARY KEY, name TEXT)");
    ldb_source *su = attach(db, "u");
    struct watch w;
    watch_open(db, &w, "SELECT t.id, t.b, u.name FROM t JOIN u ON u.id = t.a ORDER BY t.id");
    ldb_optimistic *o = optimistic(db, "INSERT INTO u VALUES (10, 'ten'); "
                                       "UPDATE t SET b = 'owned' WHERE id = 1");
    CHECK_STR(live_rows(w.q), "1,owned,ten");
    CHECK_INT(w.batches, 1);
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 1), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 1, 10), LDB_OK);
    CHECK_INT(ldb_sync_text(t, 2, "owned", -1), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_source(t, su), LDB_OK);
    CHECK_INT(ldb_sync_truncate(t), LDB_MISUSE); /* the first source's only */
    CHECK_INT(ldb_sync_int64(t, 0, 10), LDB_OK);
    CHECK_INT(ldb_sync_text(t, 1, "ten", -1), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_confirm(t, o), LDB_OK);
    ldb_receipt *rc;
    CHECK_INT(ldb_sync_commit(t, &rc), LDB_OK);
    CHECK_INT(ldb_receipt_state(rc), LDB_RECEIPT_APPLIED);
    ldb_receipt_free(rc);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_INT(w.batches, 1);
    ldb_source_stats st;
    ldb_source_stats_get(su, &st);
    CHECK_INT(st.rows, 1);
    /* a server change of both tables in one commit */
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 1), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 1, 10), LDB_OK);
    CHECK_INT(ldb_sync_text(t, 2, "theirs", -1), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_source(t, su), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 10), LDB_OK);
    CHECK_INT(ldb_sync_text(t, 1, "TEN", -1), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, NULL), LDB_OK);
    CHECK_STR(live_rows(w.q), "1,theirs,TEN");
    CHECK_INT(w.batches, 2); /* one commit */
    ldb_optimistic_free(o);
    ldb_close(db);
}

/* A transaction queued from another thread that also writes a source
 * detached before it applies is dropped (ABORTED), nothing applied. */
struct cross_commit {
    ldb_source *first, *other;
    ldb_receipt *rc;
};

static void *commit_elsewhere(void *arg)
{
    struct cross_commit *c = arg;
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(c->first, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 1), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 1, 99), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_source(t, c->other), LDB_OK);
    CHECK_INT(ldb_sync_int64(t, 0, 7), LDB_OK);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, &c->rc), LDB_OK);
    return NULL;
}

static void detached_member_drops_transaction(void)
{
    ldb_source *s;
    ldb *db = open_sourced(&s);
    EXEC(db, "CREATE TABLE u(id INTEGER PRIMARY KEY, name TEXT)");
    struct cross_commit c = { s, attach(db, "u"), NULL };
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, commit_elsewhere, &c), 0);
    pthread_join(th, NULL);
    CHECK_INT(ldb_receipt_state(c.rc), LDB_RECEIPT_PENDING);
    CHECK_INT(ldb_source_detach(c.other), LDB_OK);
    CHECK_INT(ldb_receipt_state(c.rc), LDB_RECEIPT_ABORTED);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    CHECK_STR(sql_rows(db, ALL), "1,10,x;2,20,x;3,30,x");
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM u"), "0");
    ldb_receipt_free(c.rc);
    ldb_close(db);
}

/* ---- work per change ------------------------------------------------------------------ */

/* Random history over many pending transactions: each step's recomputed
 * rows are bounded by the keys it concerns, never by the pending count;
 * the counters return to zero once everything resolved. */
#define WORK_ROWS 2000
#define WORK_PENDING 300

struct work {
    ldb *db;
    ldb_source *s;
    ldb_optimistic *h[WORK_PENDING * 4];
    int nh;
};

static uint64_t recomputed(ldb *db)
{
    ldb_optimistic_stats st;
    ldb_optimistic_stats_get(db, &st);
    return st.recomputed;
}

static void work_write(struct work *w, rng *r)
{
    char sql[200];
    int64_t a = (int64_t)rng_below(r, WORK_ROWS) + 1, b = (int64_t)rng_below(r, WORK_ROWS) + 1;
    snprintf(sql, sizeof sql, "UPDATE t SET a = a + 1 WHERE id = %" PRId64 "; "
             "UPDATE t SET b = 'w' WHERE id = %" PRId64, a, b);
    uint64_t before = recomputed(w->db);
    w->h[w->nh++] = optimistic(w->db, sql);
    CHECK_INT(recomputed(w->db), before); /* a commit recomputes nothing */
}

/* Keys of the transactions this step resolved as rejected. */
static int rejected_keys(struct work *w, const int *was)
{
    int n = 0;
    for (int i = 0; i < w->nh; i++)
        if (was[i] == LDB_OPTIMISTIC_PENDING &&
            ldb_optimistic_state(w->h[i]) == LDB_OPTIMISTIC_REJECTED)
            n += ldb_optimistic_count(w->h[i]);
    return n;
}

static void work_step(struct work *w, rng *r)
{
    static int was[WORK_PENDING * 4];
    for (int i = 0; i < w->nh; i++)
        was[i] = ldb_optimistic_state(w->h[i]);
    uint64_t before = recomputed(w->db);
    int pick = (int)rng_below(r, (uint64_t)w->nh), bound;
    switch (rng_below(r, 4)) {
    case 0: /* another client's write beneath: one key, no rejection */
        CHECK_INT(sync_row(w->s, 0, (int64_t)rng_below(r, WORK_ROWS) + 1, 1, "s", NULL),
                  LDB_RECEIPT_APPLIED);
        CHECK(recomputed(w->db) - before <= 1);
        return;
    case 1:
        CHECK_INT(ldb_optimistic_confirm(w->h[pick]), LDB_OK);
        bound = was[pick] == LDB_OPTIMISTIC_PENDING ? ldb_optimistic_count(w->h[pick]) : 0;
        break;
    case 2:
        CHECK_INT(ldb_optimistic_reject(w->h[pick], "no"), LDB_OK);
        bound = 0;
        break;
    default:
        work_write(w, r);
        return;
    }
    bound += 2 * rejected_keys(w, was);
    uint64_t did = recomputed(w->db) - before;
    CHECKF(did <= (uint64_t)bound, "recomputed %" PRIu64 " rows, bound %d", did, bound);
}

static void work_is_per_key(void)
{
    rng r;
    rng_seed(&r, test_seed());
    struct work w = { 0 };
    w.db = open_db();
    w.s = attach(w.db, "t");
    for (int i = 1; i <= WORK_ROWS; i++)
        CHECK_INT(sync_row(w.s, 0, i, 0, "x", NULL), LDB_RECEIPT_APPLIED);
    while (w.nh < WORK_PENDING)
        work_write(&w, &r);
    for (int step = 0; step < 600 * test_scale() && w.nh < WORK_PENDING * 4; step++)
        work_step(&w, &r);
    for (int i = 0; i < w.nh; i++)
        CHECK_INT(ldb_optimistic_reject(w.h[i], NULL), LDB_OK);
    ldb_optimistic_stats st;
    ldb_optimistic_stats_get(w.db, &st);
    CHECK_INT(st.pending, 0);
    CHECK_INT(st.rows, 0);
    CHECK_INT(st.confirmed + st.rejected, (uint64_t)w.nh);
    CHECK_STR(sql_rows(w.db, "SELECT count(*) FROM t"), "2000");
    for (int i = 0; i < w.nh; i++)
        ldb_optimistic_free(w.h[i]);
    ldb_close(w.db);
}

/* ---- allocation failure ------------------------------------------------------------- */

/* Runs step with the n-th allocation failing (n = 1, 2, ...) until it
 * succeeds; each failed run must leave rows and the pending state as
 * they were (the rows after a later reject tell the pending state). */
typedef int (*nomem_step)(ldb *db, ldb_source *s, ldb_optimistic *pending);

/* The sweeps' fixture: open_sourced with b of row 1 pending as 'p';
 * unique: b is UNIQUE (rows 1..3 have b 'x1'..'x3' synced). */
static ldb *sweep_fixture(bool unique, ldb_source **s, ldb_optimistic **p)
{
    ldb *db = open_sourced(s);
    if (unique) {
        for (int i = 1; i <= 3; i++) {
            char b[16];
            snprintf(b, sizeof b, "x%d", i);
            CHECK_INT(sync_row(*s, 0, i, i * 10, b, NULL), LDB_RECEIPT_APPLIED);
        }
        ldb_source_detach(*s);
        EXEC(db, "CREATE UNIQUE INDEX tb ON t(b)");
        *s = attach(db, "t");
    }
    *p = optimistic(db, "UPDATE t SET b = 'p' WHERE id = 1");
    return db;
}

static void sweep(nomem_step step, bool unique, const char *want_after)
{
    for (uint64_t n = 1;; n++) {
        ldb_source *s;
        ldb_optimistic *p;
        ldb *db = sweep_fixture(unique, &s, &p);
        char before[4096];
        snprintf(before, sizeof before, "%s", sql_rows(db, ALL));
        mem_fail_at(n, 0);
        int rc = step(db, s, p);
        bool failed = mem_failed_count() > 0;
        mem_fail_at(0, 0);
        if (!failed) {
            CHECK_INT(rc, LDB_OK);
            CHECK_STR(sql_rows(db, ALL), want_after);
            ldb_optimistic_free(p);
            ldb_close(db);
            break;
        }
        CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "run %" PRIu64 ": rc %d", n, rc);
        if (rc == LDB_NOMEM && ldb_optimistic_state(p) == LDB_OPTIMISTIC_PENDING)
            CHECK_STR(sql_rows(db, ALL), before);
        const char *err = store_check(db->store);
        CHECKF(!err, "run %" PRIu64 ": %s", n, err ? err : "");
        ldb_optimistic_free(p);
        ldb_close(db);
    }
}

static int step_commit(ldb *db, ldb_source *s, ldb_optimistic *p)
{
    int rc = ldb_optimistic_begin(db);
    if (!rc)
        rc = ldb_exec(db, "UPDATE t SET a = 5 WHERE id = 1; INSERT INTO t VALUES (9, 9, 'n')",
                      NULL, NULL);
    ldb_optimistic *o = NULL;
    if (!rc)
        rc = ldb_optimistic_commit(db, NULL, NULL, &o);
    if (rc)
        ldb_exec(db, "ROLLBACK", NULL, NULL);
    ldb_optimistic_free(o);
    return rc;
}

static int step_reject(ldb *db, ldb_source *s, ldb_optimistic *p)
{
    int rc = ldb_optimistic_reject(p, "no");
    if (rc)
        return rc;
    ldb_source_poll(db); /* retried at dispatch points until memory is back */
    return ldb_optimistic_state(p) == LDB_OPTIMISTIC_REJECTED ? LDB_OK : LDB_NOMEM;
}

/* LDB_OK when r applied; LDB_NOMEM when it failed for lack of memory. */
static int receipt_rc(const ldb_receipt *r)
{
    if (ldb_receipt_state(r) == LDB_RECEIPT_APPLIED)
        return LDB_OK;
    const char *e = ldb_receipt_error(r);
    return e && strstr(e, "out of memory") ? LDB_NOMEM : LDB_ERROR;
}

static int step_sync_beneath(ldb *db, ldb_source *s, ldb_optimistic *p)
{
    ldb_sync *t;
    int rc = ldb_sync_begin(s, NULL, &t);
    if (rc)
        return rc;
    if ((rc = ldb_sync_int64(t, 0, 1)) || (rc = ldb_sync_int64(t, 1, 77)) ||
        (rc = ldb_sync_text(t, 2, "x", -1)) || (rc = ldb_sync_upsert(t)) ||
        (rc = ldb_sync_confirm(t, p))) {
        ldb_sync_abandon(t);
        return rc;
    }
    ldb_receipt *r = NULL;
    rc = ldb_sync_commit(t, &r);
    rc = rc ? rc : receipt_rc(r);
    ldb_receipt_free(r);
    return rc;
}

/* A synced row takes the pending 'p' away from row 1 while moving 'x3'
 * to row 2 (a swap within the transaction): the pending write is
 * rejected, row 1 goes back to 'x1'. */
static int step_sync_collides(ldb *db, ldb_source *s, ldb_optimistic *p)
{
    ldb_sync *t;
    int rc = ldb_sync_begin(s, NULL, &t);
    if (rc)
        return rc;
    if ((rc = ldb_sync_int64(t, 0, 2)) || (rc = ldb_sync_int64(t, 1, 20)) ||
        (rc = ldb_sync_text(t, 2, "x3", -1)) || (rc = ldb_sync_upsert(t)) ||
        (rc = ldb_sync_int64(t, 0, 3)) || (rc = ldb_sync_int64(t, 1, 30)) ||
        (rc = ldb_sync_text(t, 2, "p", -1)) || (rc = ldb_sync_upsert(t))) {
        ldb_sync_abandon(t);
        return rc;
    }
    ldb_receipt *r = NULL;
    rc = ldb_sync_commit(t, &r);
    rc = rc ? rc : receipt_rc(r);
    ldb_receipt_free(r);
    if (!rc && ldb_optimistic_state(p) != LDB_OPTIMISTIC_REJECTED)
        rc = LDB_INTERNAL;
    return rc;
}

static void nomem_commit(void) { sweep(step_commit, false, "1,5,p;2,20,x;3,30,x;9,9,n"); }
static void nomem_reject(void) { sweep(step_reject, false, "1,10,x;2,20,x;3,30,x"); }
static void nomem_sync_confirm(void) { sweep(step_sync_beneath, false, "1,77,x;2,20,x;3,30,x"); }
static void nomem_sync_collides(void) { sweep(step_sync_collides, true, "1,10,x1;2,20,x3;3,30,p"); }

TEST_MAIN(T(visible_at_once_and_reject_restores), T(mutations_are_the_net_change),
          T(integer_key_change_is_a_row_change),
          T(empty_transaction_confirms_at_once), T(sourced_table_needs_optimistic_mode),
          T(confirm_with_equal_rows_publishes_nothing), T(confirm_with_server_version_replaces),
          T(accept_as_written_makes_rows_synced), T(sync_beneath_merges_columns),
          T(reject_cascades_to_later_writes), T(sync_delete_rejects_pending_update),
          T(reapplied_unique_conflict_rejects), T(truncate_keeps_pending_rows),
          T(ordinary_writes_wait_for_pending), T(transaction_control),
          T(mutation_callback_rules), T(views_follow_the_visible_state),
          T(resolution_from_another_thread), T(resolution_callback_reenters),
          T(large_transaction), T(confirm_across_sources), T(detached_member_drops_transaction),
          T(work_is_per_key), T(nomem_commit), T(nomem_reject),
          T(nomem_sync_confirm), T(nomem_sync_collides))
