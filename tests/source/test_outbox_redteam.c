/*
 * test_outbox_redteam.c - the outbox of a durable database (the pending
 * optimistic layer kept in livedb_outbox*, src/source/outbox.c) at its
 * edges. Each case is a defect found by probing it (its comment says
 * "found") or a probe that held:
 *
 *   found: temp_mutation_first, log_record_after_nomem,
 *          close_with_queued_resolution, sync_confirm_foreign_handle,
 *          hostile_sql (UNIQUE indexes), persisted_gone_under_pending;
 *   held:  allocation failure at every point of a sync step under pending
 *          keys, a cascading rejection, a confirmation, ldb_optimistic_pending
 *          and a reopen with many pending transactions (the database and
 *          the outbox exactly as before, or as a run that never failed,
 *          across a crash; nothing leaked); disk failure in those steps;
 *          truncates, UNIQUE re-application and an EAGER source's
 *          ldb_sync_confirm across reopens, against an in-memory database
 *          that never reopens (also with a checkpoint at every commit);
 *          value types and composite keys; dormant views; a transaction of
 *          10,000 mutations.
 */
#include "base/file.h"
#include "nomem.h"
#include "storage/durable_util.h"
#include "test_db.h"
#include "optimistic_util.h"

#include <errno.h>
#include <pthread.h>

/* Closes db as a crash would leave its files (no checkpoint), reopens. */
static ldb *crash_reopen(ldb *db, const char *path)
{
    store_keep_files(db->store);
    ldb_close(db);
    return open_at(path);
}

static const char *const T_ROWS = "SELECT id, name, n FROM t ORDER BY id";

static ldb *fixture(const char *path)
{
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER);"
             "INSERT INTO t VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3)");
    return db;
}

/* Found: a transaction that wrote a TEMP table before a kept one could
 * not resolve after a reopen. Its outbox rows kept their positions among
 * all its mutations (seq 1 here), the reopened transaction has only the
 * kept ones and looked its rows up by their new positions (seq 0): the
 * step failed "the outbox lost transaction", ldb_source_poll still said
 * LDB_OK, and the transaction stayed pending for good. */
static void temp_mutation_first(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "t.ldb");
    ldb *db = fixture(path);
    EXEC(db, "CREATE TEMP TABLE a(id INTEGER PRIMARY KEY, v TEXT)");
    ldb_optimistic_free(commit_sql(db, "INSERT INTO a VALUES (1, 'x'); "
                                       "UPDATE t SET name = 'uno' WHERE id = 1"));
    ldb_optimistic_free(commit_sql(db, "INSERT INTO a VALUES (2, 'y'); "
                                       "UPDATE t SET n = 20 WHERE id = 2"));
    ldb_close(db);
    db = crash_reopen(open_at(path), path);
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 2);
    CHECK_INT(ldb_optimistic_count(s.h[0]), 1);
    CHECK_INT(ldb_optimistic_reject(s.h[0], "no"), LDB_OK);
    CHECK_INT(ldb_optimistic_confirm(s.h[1]), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    CHECK_INT(ldb_optimistic_state(s.h[0]), LDB_OPTIMISTIC_REJECTED);
    CHECK_INT(ldb_optimistic_state(s.h[1]), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;2,two,20;3,three,3");
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM livedb_outbox"), "0");
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM livedb_outbox_keys"), "0");
    sent_free(&s);
    ldb_close(db);
    durable_rmdir(dir);
}

/* Found: an allocation failure while a durable database encoded a
 * commit's log record left the record's builder failed for good (its
 * error stayed set), so every later write of the handle failed "out of
 * memory" until it was closed: a sync transaction or resolution that
 * met one failure was never applied. */
static void log_record_after_nomem(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "l.ldb");
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)");
    char big[3000]; /* a record larger than any before: its builder grows */
    int at = snprintf(big, sizeof big, "INSERT INTO t VALUES (1, '");
    memset(big + at, 'x', sizeof big - (size_t)at - 4);
    memcpy(big + sizeof big - 4, "')", 3);
    int ok = 0;
    for (uint64_t n = 1; ok == 0; n++) {
        mem_fail_at(n, 0);
        int rc = ldb_exec(db, big, NULL, NULL);
        ok = mem_failed_count() == 0;
        mem_fail_at(0, 0);
        CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "n %llu: %d", (unsigned long long)n, rc);
        if (rc == LDB_OK) {
            EXEC(db, "DELETE FROM t");
            continue;
        }
        int again = ldb_exec(db, "INSERT INTO t VALUES (2, 'b')", NULL, NULL);
        CHECKF(again == LDB_OK, "n %llu: the next write: %d %s", (unsigned long long)n, again,
               ldb_errmsg(db));
        EXEC(db, "DELETE FROM t");
    }
    ldb_close(db);
    durable_rmdir(dir);
}

/* ---- threads and closing ---- */

/* Returns the blocks it allocated (the counters are per thread). */
static void *confirm_elsewhere(void *o)
{
    if (ldb_optimistic_confirm(o) != LDB_OK) /* not its home thread: queued */
        return (void *)(intptr_t)-1;
    return (void *)(intptr_t)mem_live();
}

/* Found: resolutions queued from another thread and not yet applied when
 * the database closed were never freed (the queue item, and through it the
 * transaction's handle with its mutations). They lapse: the transaction
 * comes back pending, and resolves when the reopened handle is used. */
static void close_with_queued_resolution(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "q.ldb");
    int64_t live0 = mem_live();
    ldb *db = fixture(path);
    ldb_optimistic *a = commit_sql(db, "UPDATE t SET name = 'uno' WHERE id = 1");
    ldb_optimistic *b = commit_sql(db, "DELETE FROM t WHERE id = 2");
    ldb_live *q;
    CHECK_INT(ldb_live_open(db, T_ROWS, NULL, NULL, &q), LDB_OK);
    ldb_optimistic *both[2] = { a, b };
    for (int i = 0; i < 2; i++) { /* its blocks are freed here: count them */
        pthread_t th;
        void *blocks;
        CHECK(pthread_create(&th, NULL, confirm_elsewhere, both[i]) == 0);
        CHECK(pthread_join(th, &blocks) == 0);
        CHECK((intptr_t)blocks > 0);
        live0 -= (intptr_t)blocks;
    }
    ldb_close(db); /* the live query open, the confirmations queued */
    CHECK_INT(ldb_optimistic_state(a), LDB_OPTIMISTIC_PENDING);
    CHECK_INT(ldb_optimistic_confirm(a), LDB_MISUSE);
    ldb_optimistic_free(a);
    ldb_optimistic_free(b);
    CHECKF(mem_live() == live0, "%lld blocks leaked", (long long)(mem_live() - live0));
    db = open_at(path);
    CHECK_STR(sql_rows(db, T_ROWS), "1,uno,1;3,three,3");
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 2);
    CHECK_INT(ldb_optimistic_reject(s.h[0], "no"), LDB_OK);
    CHECK_INT(ldb_optimistic_confirm(s.h[1]), LDB_OK);
    CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;3,three,3");
    sent_free(&s);
    ldb_close(db);
    CHECKF(mem_live() == live0, "%lld blocks leaked", (long long)(mem_live() - live0));
    durable_rmdir(dir);
}


static int load_nothing(void *ctx, ldb_request *req)
{
    (void)ctx, (void)req;
    return LDB_OK;
}

/* Found: ldb_sync_confirm took a handle of another database, whose
 * transaction the step then resolved and unlinked from the wrong layer
 * (a use after free at the next close), and silently took the orphaned
 * handle of a closed (reopened) database. Both are LDB_MISUSE now. */
static void sync_confirm_foreign_handle(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "f.ldb");
    ldb *a = fixture(path), *b = open_at(NULL);
    EXEC(b, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER)");
    ldb_optimistic *o = commit_sql(a, "UPDATE t SET name = 'mine' WHERE id = 1");
    static const ldb_provider p = { .load_subset = load_nothing };
    ldb_source *s;
    CHECK_INT(ldb_source_attach(b, "t", LDB_SOURCE_ON_DEMAND, &p, NULL, &s), LDB_OK);
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_confirm(t, o), LDB_MISUSE);
    ldb_close(a); /* o is an orphan now; its transaction comes back with a new handle */
    a = open_at(path);
    CHECK_INT(ldb_source_attach(a, "t", LDB_SOURCE_ON_DEMAND, &p, NULL, &s), LDB_OK);
    ldb_sync_abandon(t);
    CHECK_INT(ldb_sync_begin(s, NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_confirm(t, o), LDB_MISUSE);
    struct sent sent = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(a, collect, &sent), LDB_OK);
    CHECK_INT(sent.n, 1);
    CHECK_INT(ldb_sync_confirm(t, sent.h[0]), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, NULL), LDB_OK);
    CHECK_INT(ldb_optimistic_state(sent.h[0]), LDB_OPTIMISTIC_CONFIRMED);
    CHECK_STR(sql_rows(a, T_ROWS), "1,mine,1;2,two,2;3,three,3");
    CHECK_STR(sql_rows(a, "SELECT count(*) FROM livedb_outbox_keys"), "0");
    sent_free(&sent);
    ldb_optimistic_free(o);
    ldb_close(b);
    ldb_close(a);
    durable_rmdir(dir);
}

/* Found: a user could put a UNIQUE index on the outbox's tables, and
 * then every optimistic commit (or a sync transaction that moves bases)
 * met a constraint the layer does not know: "UNIQUE constraint failed:
 * livedb_outbox_keys.unknown" at the next commit. Now refused, like
 * every other write to them; plain indexes only speed reading. DDL on a
 * table with pending keys is refused too, or unsupported. */
static void hostile_sql(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "h.ldb");
    ldb *db = fixture(path);
    ldb_optimistic *a = commit_sql(db, "UPDATE t SET name = 'uno' WHERE id = 1");
    static const char *const refused[] = {
        "CREATE UNIQUE INDEX o1 ON livedb_outbox(kind)",
        "CREATE UNIQUE INDEX o2 ON livedb_outbox_keys(unknown)",
        "CREATE UNIQUE INDEX o3 ON livedb_outbox_ids(last)",
        "UPDATE livedb_outbox_ids SET last = 0",
        "DELETE FROM livedb_outbox",
        "INSERT INTO livedb_outbox_keys VALUES (9, 't', NULL, NULL, 0)",
        "DROP TABLE livedb_outbox_ids",
        "DROP VIEW livedb_outbox_keys",
        "DROP MATERIALIZED VIEW livedb_outbox",
        "DROP TABLE t",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        for (int reopened = 0; reopened < 2; reopened++) {
            int rc = ldb_exec(db, refused[i], NULL, NULL);
            CHECKF(rc == LDB_ERROR, "%s: %d %s", refused[i], rc, ldb_errmsg(db));
            if (!reopened)
                db = crash_reopen(db, path);
        }
    }
    CHECK_INT(ldb_exec(db, "ALTER TABLE t ADD COLUMN z INTEGER", NULL, NULL), LDB_UNSUPPORTED);
    EXEC(db, "CREATE INDEX okind ON livedb_outbox(kind)");
    EXEC(db, "CREATE MATERIALIZED VIEW kinds AS SELECT kind, count(*) AS c FROM livedb_outbox "
             "GROUP BY kind");
    ldb_optimistic *b = commit_sql(db, "UPDATE t SET name = 'dos' WHERE id = 2");
    CHECK_STR(sql_rows(db, "SELECT kind, c FROM kinds"), "2,2");
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 2);
    CHECK_INT(ldb_optimistic_reject(s.h[0], "no"), LDB_OK);
    CHECK_INT(ldb_optimistic_state(s.h[0]), LDB_OPTIMISTIC_REJECTED);
    CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;2,dos,2;3,three,3");
    CHECK_STR(sql_rows(db, "SELECT kind, c FROM kinds"), "2,1");
    sent_free(&s);
    ldb_optimistic_free(a);
    ldb_optimistic_free(b);
    db = crash_reopen(db, path);
    CHECK_STR(sql_rows(db, "SELECT kind, c FROM kinds"), "2,1");
    ldb_close(db);
    durable_rmdir(dir);
}

/* ---- a world: the same operations on a durable database that reopens
 * and on an in-memory one that does not ---- */

struct world {
    ldb *db;
    ldb_source *src;
    int mode; /* 0: no source */
    char *dir;
    char path[300];
    ldb_request *eager;
    const char *each_open; /* SQL run at every open (PRAGMAs are per handle) */
};

static int keep_req(void *ctx, ldb_request *req)
{
    struct world *w = ctx;
    if (w->eager)
        ldb_request_unref(w->eager);
    ldb_request_ref(req);
    w->eager = req;
    return LDB_OK;
}

static void w_attach(struct world *w)
{
    static const ldb_provider p = { .load_subset = keep_req };
    if (w->mode)
        CHECK_INT(ldb_source_attach(w->db, "t", w->mode, &p, w, &w->src), LDB_OK);
}

static void w_open(struct world *w, bool durable, int mode, const char *setup,
                   const char *each_open)
{
    memset(w, 0, sizeof *w);
    w->mode = mode;
    if (durable) {
        w->dir = durable_tmpdir();
        durable_path(w->path, sizeof w->path, w->dir, "w.ldb");
    }
    w->db = open_at(durable ? w->path : NULL);
    EXEC(w->db, setup);
    w->each_open = durable ? each_open : NULL;
    if (w->each_open)
        EXEC(w->db, w->each_open);
    w_attach(w);
}

static void w_drop_req(struct world *w)
{
    if (w->eager)
        ldb_request_unref(w->eager);
    w->eager = NULL;
}

/* crash: the files as they are (no checkpoint at close). */
static void w_reopen(struct world *w, bool crash)
{
    if (!w->dir)
        return;
    if (crash)
        store_keep_files(w->db->store);
    ldb_close(w->db);
    w_drop_req(w);
    w->db = open_at(w->path);
    if (w->each_open)
        EXEC(w->db, w->each_open);
    w_attach(w);
}

static void w_close(struct world *w)
{
    ldb_close(w->db);
    w_drop_req(w);
    if (w->dir)
        durable_rmdir(w->dir);
}

struct find {
    uint64_t id;
    ldb_optimistic *h;
};

static void find_id(void *ctx, ldb_optimistic *o)
{
    struct find *f = ctx;
    if (ldb_optimistic_id(o) == f->id) {
        ldb_optimistic_ref(o);
        f->h = o;
    }
}

/* The current handle of pending transaction id (a reference), or NULL. */
static ldb_optimistic *w_handle(struct world *w, uint64_t id)
{
    struct find f = { id, NULL };
    CHECK_INT(ldb_optimistic_pending(w->db, find_id, &f), LDB_OK);
    return f.h;
}

static void w_resolve(struct world *w, uint64_t id, bool confirm)
{
    ldb_optimistic *h = w_handle(w, id);
    if (!h)
        return;
    CHECK_INT(confirm ? ldb_optimistic_confirm(h) : ldb_optimistic_reject(h, "no"), LDB_OK);
    CHECK_INT(ldb_source_poll(w->db), LDB_OK);
    ldb_optimistic_free(h);
}

static uint64_t w_commit(struct world *w, const char *sql)
{
    ldb_optimistic *o = commit_sql(w->db, sql);
    uint64_t id = ldb_optimistic_id(o);
    ldb_optimistic_free(o);
    return id;
}

/* A sync row (id, name, n) of t: op 'u' upsert, 'd' delete, 't' truncate. */
static void w_sync(struct world *w, const char *ops, const int64_t *ids, const char **names,
                   uint64_t confirm)
{
    ldb_sync *t;
    CHECK_INT(ldb_sync_begin(w->src, NULL, &t), LDB_OK);
    for (int i = 0; ops[i]; i++) {
        if (ops[i] == 't') {
            CHECK_INT(ldb_sync_truncate(t), LDB_OK);
            continue;
        }
        ldb_sync_int64(t, 0, ids[i]);
        if (ops[i] == 'd') {
            CHECK_INT(ldb_sync_delete(t), LDB_OK);
            continue;
        }
        ldb_sync_text(t, 1, names[i], -1);
        ldb_sync_int64(t, 2, ids[i] * 10);
        CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    }
    ldb_optimistic *h = confirm ? w_handle(w, confirm) : NULL;
    if (h) {
        CHECK_INT(ldb_sync_confirm(t, h), LDB_OK);
        ldb_optimistic_free(h);
    }
    ldb_receipt *rc;
    CHECK_INT(ldb_sync_commit(t, &rc), LDB_OK);
    CHECK_INT(ldb_source_poll(w->db), LDB_OK);
    CHECKF(ldb_receipt_state(rc) == LDB_RECEIPT_APPLIED, "receipt %d %s", ldb_receipt_state(rc),
           ldb_receipt_error(rc));
    ldb_receipt_free(rc);
}

/* Everything a program sees: the rows, the pending transactions. */
static char *w_state(struct world *w)
{
    char *rows = durable_query(w->db, "SELECT * FROM t");
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(w->db, collect, &s), LDB_OK);
    size_t len = strlen(rows) + 64 * 24 + 1;
    char *out = malloc(len);
    size_t at = (size_t)snprintf(out, len, "%s pending:", rows);
    for (int i = 0; i < s.n; i++)
        at += (size_t)snprintf(out + at, len - at, " %llu",
                               (unsigned long long)ldb_optimistic_id(s.h[i]));
    sent_free(&s);
    mem_free(rows); /* the library's allocator made it (strbuf) */
    return out;
}

typedef void (*scenario_fn)(struct world *w);

static const char *const SOURCED =
    "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER);"
    "INSERT INTO t VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3)";

/* Runs fn on a durable world and on an in-memory one; they must agree. */
static void both_worlds(scenario_fn fn, int mode, const char *each_open)
{
    struct world d, m;
    w_open(&d, true, mode, SOURCED, each_open);
    w_open(&m, false, mode, SOURCED, NULL);
    fn(&d);
    fn(&m);
    char *a = w_state(&d), *b = w_state(&m);
    CHECK_STR(a, b);
    free(a);
    free(b);
    w_reopen(&d, false);
    a = w_state(&d);
    b = w_state(&m);
    CHECK_STR(a, b);
    free(a);
    free(b);
    w_close(&d);
    w_close(&m);
}

/* A truncate voids the synced rows under pending keys ("unknown"); a
 * reopen keeps that, and the rejections after it agree with a database
 * that never reopened. */
static void truncate_scenario(struct world *w)
{
    uint64_t a = w_commit(w, "UPDATE t SET name = 'a' WHERE id = 1");
    uint64_t b = w_commit(w, "DELETE FROM t WHERE id = 2");
    uint64_t c = w_commit(w, "INSERT INTO t VALUES (4, 'four', 4); "
                             "UPDATE t SET n = 7 WHERE id = 3");
    w_sync(w, "tu", (int64_t[]){ 0, 1 }, (const char *[]){ NULL, "srv" }, 0);
    w_reopen(w, true);
    w_commit(w, "UPDATE t SET n = 99 WHERE id = 1");
    w_reopen(w, false);
    w_resolve(w, a, false);
    w_reopen(w, true);
    w_resolve(w, b, false);
    w_resolve(w, c, false);
    w_reopen(w, true);
}

static void truncate_then_reopen(void)
{
    both_worlds(truncate_scenario, LDB_SOURCE_ON_DEMAND, NULL);
}

/* Reopened transactions confirmed by sync transactions of an EAGER source
 * attached after the reopen (ldb_sync_confirm). */
static void eager_scenario(struct world *w)
{
    uint64_t a = w_commit(w, "UPDATE t SET name = 'a' WHERE id = 1");
    uint64_t b = w_commit(w, "UPDATE t SET n = 5 WHERE id = 1; DELETE FROM t WHERE id = 3");
    w_reopen(w, true);
    w_sync(w, "u", (int64_t[]){ 1 }, (const char *[]){ "server" }, a);
    w_reopen(w, false);
    w_sync(w, "uu", (int64_t[]){ 1, 3 }, (const char *[]){ "s2", "s3" }, b);
}

static void eager_confirm_after_reopen(void)
{
    both_worlds(eager_scenario, LDB_SOURCE_EAGER, NULL);
}

/* Synced rows that take the UNIQUE values of pending ones after a
 * reopen: the pending ones lose, as in a database that never reopened. */
static void unique_scenario(struct world *w)
{
    w_commit(w, "UPDATE t SET name = 'x' WHERE id = 1");
    w_commit(w, "INSERT INTO t VALUES (5, 'y', 5)");
    w_commit(w, "UPDATE t SET name = 'z' WHERE id = 2");
    w_reopen(w, true);
    w_sync(w, "uu", (int64_t[]){ 3, 4 }, (const char *[]){ "y", "z" }, 0); /* collide */
    w_reopen(w, true);
    w_sync(w, "u", (int64_t[]){ 6 }, (const char *[]){ "x" }, 0);
    w_reopen(w, false);
    CHECK_STR(sql_rows(w->db, "SELECT count(*) FROM t WHERE name IN ('x', 'y', 'z')"), "3");
}

static void unique_after_reopen(void)
{
    both_worlds(unique_scenario, LDB_SOURCE_ON_DEMAND, NULL);
}

/* The same with a checkpoint at every commit (and crashes between). */
static void checkpoint_every_commit(void)
{
    static const char *const every = "PRAGMA checkpoint_threshold = 1";
    both_worlds(truncate_scenario, LDB_SOURCE_ON_DEMAND, every);
    both_worlds(eager_scenario, LDB_SOURCE_EAGER, every);
    both_worlds(unique_scenario, LDB_SOURCE_ON_DEMAND, every);
}

/* ---- allocation failure at every point of a step ---- */

static const char *const SWEEP_SETUP =
    "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER);"
    "INSERT INTO t VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3);"
    "CREATE MATERIALIZED VIEW parity AS SELECT n % 2 AS p, count(*) AS c FROM t GROUP BY 1";

/* Transactions 1..4; 2 updates the row 1 inserts (a rejection of 1
 * cascades). */
static void sweep_prep(struct world *w)
{
    w_commit(w, "INSERT INTO t VALUES (4, 'four', 4); UPDATE t SET name = 'uno' WHERE id = 1");
    w_commit(w, "UPDATE t SET n = 44 WHERE id = 4; DELETE FROM t WHERE id = 2");
    w_commit(w, "UPDATE t SET n = 30 WHERE id = 3");
    w_commit(w, "INSERT INTO t VALUES (5, 'five', 5)");
}

/* An operation under allocation failure: whether it takes effect (maybe
 * at a later dispatch point, once allocations work again). */
typedef bool (*sweep_op)(struct world *w, int *rc);

static bool op_sync(struct world *w, int *rc)
{
    ldb_sync *t;
    *rc = ldb_sync_begin(w->src, NULL, &t);
    if (*rc)
        return false;
    static const int64_t ids[] = { 1, 2, 3, 6 };
    static const char *const names[] = { "srv1", NULL, "three", "six" };
    for (int i = 0; i < 4 && !*rc; i++) {
        *rc = ldb_sync_int64(t, 0, ids[i]);
        if (!*rc && names[i])
            *rc = ldb_sync_text(t, 1, names[i], -1);
        if (!*rc && names[i])
            *rc = ldb_sync_int64(t, 2, ids[i] * 11);
        if (!*rc)
            *rc = names[i] ? ldb_sync_upsert(t) : ldb_sync_delete(t);
    }
    struct find f = { 4, NULL };
    if (!*rc)
        *rc = ldb_optimistic_pending(w->db, find_id, &f);
    if (!*rc)
        *rc = ldb_sync_confirm(t, f.h);
    ldb_optimistic_free(f.h);
    if (*rc) {
        ldb_sync_abandon(t);
        return false;
    }
    ldb_receipt *r = NULL;
    *rc = ldb_sync_commit(t, &r);
    bool applied = r && ldb_receipt_state(r) == LDB_RECEIPT_APPLIED;
    ldb_receipt_free(r);
    return applied;
}

static bool resolve_op(struct world *w, uint64_t id, bool confirm, int *rc)
{
    struct find f = { id, NULL };
    *rc = ldb_optimistic_pending(w->db, find_id, &f);
    if (*rc)
        return false;
    CHECK(f.h != NULL);
    *rc = confirm ? ldb_optimistic_confirm(f.h) : ldb_optimistic_reject(f.h, "no");
    ldb_optimistic_free(f.h);
    return *rc == LDB_OK; /* queued: it applies, maybe at a later dispatch */
}

static bool op_reject_cascade(struct world *w, int *rc) { return resolve_op(w, 1, false, rc); }
static bool op_confirm(struct world *w, int *rc) { return resolve_op(w, 2, true, rc); }

static bool op_pending(struct world *w, int *rc)
{
    struct sent s = { .n = 0 };
    *rc = ldb_optimistic_pending(w->db, collect, &s);
    CHECK(*rc ? s.n == 0 : s.n == 4);
    sent_free(&s);
    return false;
}

static char *w_picture(struct world *w)
{
    char *dump = durable_dump(w->db), *st = w_state(w);
    size_t n = strlen(dump) + strlen(st) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%s\n%s", dump, st);
    mem_free(dump);
    free(st);
    return out;
}

static void w_load(struct world *w, const struct dur_files *fs)
{
    dur_files_write(w->path, fs);
    w->db = open_at(w->path);
    EXEC(w->db, "PRAGMA synchronous = OFF");
    w_attach(w);
    CHECK_INT(ldb_source_poll(w->db), LDB_OK);
}

static void w_unload(struct world *w)
{
    ldb_close(w->db);
    w->db = NULL;
    w_drop_req(w);
}

static void nomem_step(sweep_op op, int persistent)
{
    struct world w;
    w_open(&w, true, LDB_SOURCE_EAGER, SWEEP_SETUP, NULL);
    sweep_prep(&w);
    w_unload(&w);
    struct dur_files fs = dur_files_read(w.path);
    w_load(&w, &fs);
    char *before = w_picture(&w), *dump_before = durable_dump(w.db);
    int rc;
    op(&w, &rc);
    CHECK_INT(rc, LDB_OK);
    CHECK_INT(ldb_source_poll(w.db), LDB_OK);
    char *want = w_picture(&w), *dump_want = durable_dump(w.db);
    w_unload(&w);
    bool done = false;
    uint64_t n = 1;
    for (; !done; n++) {
        int64_t live0 = mem_live();
        w_load(&w, &fs);
        mem_fail_at(n, persistent);
        bool effect = op(&w, &rc);
        done = mem_failed_count() == 0;
        mem_fail_at(0, 0);
        CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "n %llu: rc %d %s", (unsigned long long)n, rc,
               ldb_errmsg(w.db));
        /* storage as the failure left it (a dump dispatches nothing) */
        char *dump = durable_dump(w.db);
        CHECKF(strcmp(dump, dump_before) == 0 || (effect && strcmp(dump, dump_want) == 0),
               "n %llu%s: effect %d, storage:\n%s\nbefore:\n%s", (unsigned long long)n,
               persistent ? " on" : "", effect, dump, dump_before);
        mem_free(dump);
        CHECK_INT(ldb_source_poll(w.db), LDB_OK); /* a resolution queued again applies */
        char *settled = w_picture(&w);
        CHECKF(strcmp(settled, effect ? want : before) == 0,
               "n %llu%s: effect %d:\n%s\nwanted:\n%s", (unsigned long long)n,
               persistent ? " on" : "", effect, settled, effect ? want : before);
        if (!effect && op != op_pending) { /* nothing was left half done: it works now */
            op(&w, &rc);
            CHECK_INT(ldb_source_poll(w.db), LDB_OK);
            free(settled);
            settled = w_picture(&w);
            CHECKF(strcmp(settled, want) == 0, "n %llu: tried again:\n%s", (unsigned long long)n,
                   settled);
        }
        store_keep_files(w.db->store);
        w_unload(&w);
        w.db = open_at(w.path);
        w_attach(&w);
        char *reopened = w_picture(&w);
        CHECKF(strcmp(reopened, settled) == 0, "n %llu: reopened:\n%s\nwas:\n%s",
               (unsigned long long)n, reopened, settled);
        free(reopened);
        free(settled);
        w_unload(&w);
        CHECKF(mem_live() == live0, "n %llu%s: %lld blocks leaked", (unsigned long long)n,
               persistent ? " on" : "", (long long)(mem_live() - live0));
    }
    free(before);
    free(want);
    mem_free(dump_before);
    mem_free(dump_want);
    dur_files_free(&fs);
    durable_rmdir(w.dir);
}

static void nomem_sync_under_pending(void)
{
    nomem_step(op_sync, 0);
    nomem_step(op_sync, 1);
}

static void nomem_reject_cascade(void)
{
    nomem_step(op_reject_cascade, 0);
    nomem_step(op_reject_cascade, 1);
}

static void nomem_confirm(void)
{
    nomem_step(op_confirm, 0);
    nomem_step(op_confirm, 1);
}

static void nomem_pending(void)
{
    nomem_step(op_pending, 0);
    nomem_step(op_pending, 1);
}

/* ---- disk failure during a step that writes the outbox ---- */

/* The n-th disk write from the op on fails (once, or from there on; also
 * in the checkpoint after each step under pragma): the step is applied,
 * or not at all and it works when tried again, and a reopen finds what
 * the handle showed (or, when even taking a failed record back failed
 * and the handle refused writes, the step whole or not at all). A
 * resolution (retried: a confirmation or rejection is tried again at the
 * next round, livedb.h) met by a single fault is applied all the same. */
static void fault_step(sweep_op op, int persistent, const char *pragma, bool retried)
{
    struct world w;
    w_open(&w, true, LDB_SOURCE_EAGER, SWEEP_SETUP, NULL);
    sweep_prep(&w);
    w_unload(&w);
    struct dur_files fs = dur_files_read(w.path);
    w_load(&w, &fs);
    EXEC(w.db, pragma);
    char *before = w_picture(&w);
    int rc;
    op(&w, &rc);
    CHECK_INT(ldb_source_poll(w.db), LDB_OK);
    char *want = w_picture(&w);
    w_unload(&w);
    bool done = false;
    uint64_t n = 1, faulted = 0;
    for (; !done; n++) {
        w_load(&w, &fs);
        EXEC(w.db, pragma);
        file_fail_at(n, persistent, EIO);
        op(&w, &rc);
        ldb_source_poll(w.db);
        done = file_failed_count() == 0;
        char *settled = w_picture(&w);
        file_fail_at(0, 0, 0);
        bool applied = strcmp(settled, want) == 0;
        faulted += !done;
        CHECKF(applied || strcmp(settled, before) == 0, "n %llu%s: rc %d:\n%s",
               (unsigned long long)n, persistent ? " on" : "", rc, settled);
        bool broken = ldb_exec(w.db, "PRAGMA wal_checkpoint", NULL, NULL) != LDB_OK;
        CHECKF(applied || !retried || persistent || broken,
               "n %llu: a resolution met by one fault was not tried again", (unsigned long long)n);
        if (!applied && !broken) { /* the layer and the outbox still agree: it works now */
            op(&w, &rc);
            CHECK_INT(ldb_source_poll(w.db), LDB_OK);
            free(settled);
            settled = w_picture(&w);
            CHECKF(strcmp(settled, want) == 0, "n %llu: tried again:\n%s", (unsigned long long)n,
                   settled);
        }
        store_keep_files(w.db->store);
        w_unload(&w);
        w.db = open_at(w.path);
        w_attach(&w);
        char *reopened = w_picture(&w);
        CHECKF(strcmp(reopened, settled) == 0 ||
                   (broken && (strcmp(reopened, want) == 0 || strcmp(reopened, before) == 0)),
               "n %llu%s: broken %d, reopened:\n%s\nwas:\n%s", (unsigned long long)n,
               persistent ? " on" : "", broken, reopened, settled);
        free(reopened);
        free(settled);
        w_unload(&w);
    }
    CHECK(faulted > 0); /* the faults met the step */
    free(before);
    free(want);
    dur_files_free(&fs);
    durable_rmdir(w.dir);
}

static const char *const FAULT_MODES[] = {
    "PRAGMA synchronous = FULL",
    "PRAGMA synchronous = FULL; PRAGMA checkpoint_threshold = 1", /* a checkpoint per step */
};

static void fault_each(sweep_op op, bool retried)
{
    for (int m = 0; m < 2; m++) {
        fault_step(op, 0, FAULT_MODES[m], retried);
        fault_step(op, 1, FAULT_MODES[m], retried);
    }
}

static void fault_sync_under_pending(void) { fault_each(op_sync, false); }
static void fault_reject_cascade(void) { fault_each(op_reject_cascade, true); }
static void fault_confirm(void) { fault_each(op_confirm, true); }

/* ---- reopening with many pending transactions ---- */

static void reopen_many_nomem(void)
{
    struct world w;
    w_open(&w, true, LDB_SOURCE_ON_DEMAND, SOURCED, NULL);
    for (int i = 0; i < 12; i++) {
        char sql[200];
        snprintf(sql, sizeof sql,
                 "UPDATE t SET n = n + %d WHERE id = %d; INSERT INTO t VALUES (%d, 'k%d', %d)",
                 i, i % 3 + 1, 10 + i, i, i);
        w_commit(&w, sql);
        if (i == 5) /* keys whose synced rows a truncate voided */
            w_sync(&w, "tu", (int64_t[]){ 0, 2 }, (const char *[]){ NULL, "srv" }, 0);
    }
    w_commit(&w, "DELETE FROM t WHERE id = 11");
    w_unload(&w);
    w.db = open_at(w.path);
    char *want = w_picture(&w);
    w_unload(&w);
    for (int persistent = 0; persistent < 2; persistent++) {
        bool done = false;
        for (uint64_t n = 1; !done; n++) {
            int64_t live0 = mem_live();
            mem_fail_at(n, persistent);
            int rc = ldb_open(w.path, &w.db);
            done = mem_failed_count() == 0;
            mem_fail_at(0, 0);
            if (rc) {
                CHECKF(rc == LDB_NOMEM, "n %llu: %d %s", (unsigned long long)n, rc,
                       ldb_errmsg(NULL));
                CHECKF(mem_live() == live0, "n %llu%s: %lld blocks leaked", (unsigned long long)n,
                       persistent ? " on" : "", (long long)(mem_live() - live0));
                continue;
            }
            char *got = w_picture(&w);
            CHECKF(strcmp(got, want) == 0, "n %llu: reopened:\n%s", (unsigned long long)n, got);
            free(got);
            w_unload(&w);
            CHECKF(mem_live() == live0, "n %llu: %lld blocks leaked", (unsigned long long)n,
                   (long long)(mem_live() - live0));
        }
    }
    free(want);
    durable_rmdir(w.dir);
}


/* Values of every type come back from the outbox as they were: the
 * rows a rejection restores, after a crash and a close. */
static void types_survive(void)
{
    static const char *const all = "SELECT typeof(id), id, typeof(a), a, typeof(b), b, "
                                   "typeof(c), c, d FROM x";
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "y.ldb");
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE x(id ANY PRIMARY KEY, a ANY, b REAL, c BLOB, d TEXT COLLATE NOCASE)");
    EXEC(db, "INSERT INTO x VALUES (1.5, 1.0, 2, x'00ff', 'Ab'), ('k', -0.0, NULL, x'', 'é'), "
             "(x'01', 9223372036854775807, 1e308, NULL, ''), "
             "(7, ARRAY(SELECT 1 UNION ALL SELECT 'a'), 0, NULL, 'arr')");
    char *synced = durable_query(db, all);
    ldb_optimistic_free(
        commit_sql(db, "UPDATE x SET a = 'z', d = 'q'; DELETE FROM x WHERE id = 'K'"));
    char *visible = durable_query(db, all);
    db = crash_reopen(db, path);
    char *after_crash = durable_query(db, all);
    CHECK_STR(after_crash, visible);
    ldb_close(db);
    db = open_at(path);
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 1);
    CHECK_INT(ldb_optimistic_count(s.h[0]), 4);
    CHECK_INT(ldb_optimistic_reject(s.h[0], "no"), LDB_OK);
    CHECK_INT(ldb_optimistic_state(s.h[0]), LDB_OPTIMISTIC_REJECTED);
    char *back = durable_query(db, all);
    CHECK_STR(back, synced);
    sent_free(&s);
    mem_free(synced);
    mem_free(visible);
    mem_free(after_crash);
    mem_free(back);
    ldb_close(db);
    durable_rmdir(dir);
}

/* A composite, NOCASE primary key (and a key change: a DELETE and an
 * INSERT) across a crash, against an in-memory database. */
static void composite_key(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "c.ldb");
    ldb *dbs[2] = { open_at(path), NULL };
    CHECK_INT(ldb_open(NULL, &dbs[1]), LDB_OK);
    for (int i = 0; i < 2; i++) {
        EXEC(dbs[i], "CREATE TABLE c(a TEXT COLLATE NOCASE, b INTEGER, v TEXT UNIQUE, "
                     "PRIMARY KEY (b, a));"
                     "INSERT INTO c VALUES ('x', 1, 'p'), ('Y', 2, 'q'), ('z', 3, 'r')");
        ldb_optimistic_free(
            commit_sql(dbs[i], "UPDATE c SET v = 'pp' WHERE a = 'X'; DELETE FROM c WHERE b = 2"));
        ldb_optimistic_free(commit_sql(dbs[i], "INSERT INTO c VALUES ('y', 2, 'q2'); "
                                               "UPDATE c SET a = 'Z', b = 4 WHERE b = 3"));
        ldb_optimistic_free(commit_sql(dbs[i], "UPDATE c SET v = 'q3' WHERE a = 'y'"));
    }
    dbs[0] = crash_reopen(dbs[0], path);
    for (int step = 0; step < 2; step++) {
        for (int i = 0; i < 2; i++) {
            struct sent s = { .n = 0 };
            CHECK_INT(ldb_optimistic_pending(dbs[i], collect, &s), LDB_OK);
            CHECK_INT(s.n, 3 - step);
            CHECK_INT(step ? ldb_optimistic_confirm(s.h[0]) : ldb_optimistic_reject(s.h[0], "no"),
                      LDB_OK);
            sent_free(&s);
        }
        char *a = durable_query(dbs[0], "SELECT a, b, v FROM c");
        char *b = durable_query(dbs[1], "SELECT a, b, v FROM c");
        CHECK_STR(a, b);
        mem_free(a);
        mem_free(b);
        ldb_close(dbs[0]);
        dbs[0] = open_at(path);
    }
    ldb_close(dbs[0]);
    ldb_close(dbs[1]);
    durable_rmdir(dir);
}

static int addup_step(void *ctx, void *state, const ldb_row *args)
{
    (void)ctx;
    *(int64_t *)state += ldb_row_int64(args, 0);
    return LDB_OK;
}

static int addup_final(void *ctx, const void *state, ldb_result *out)
{
    (void)ctx;
    ldb_result_int64(out, *(const int64_t *)state);
    return LDB_OK;
}

static const ldb_aggregate ADDUP = { .state_size = sizeof(int64_t), .flags = LDB_DETERMINISTIC,
                                     .step = addup_step, .finalize = addup_final };

/* A view dormant after a reopen (its aggregate not registered yet): the
 * pending transactions come back, a rejection waits, and applies once the
 * aggregate is registered. */
static void dormant_view_waits(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "d.ldb");
    ldb *db = fixture(path);
    CHECK_INT(ldb_create_aggregate(db, "addup", 1, &ADDUP), LDB_OK);
    EXEC(db, "CREATE MATERIALIZED VIEW s AS SELECT addup(n) AS total FROM t");
    ldb_optimistic_free(commit_sql(db, "UPDATE t SET n = 10 WHERE id = 1"));
    ldb_optimistic_free(commit_sql(db, "DELETE FROM t WHERE id = 2"));
    db = crash_reopen(db, path);
    CHECK_STR(sql_rows(db, "SELECT total FROM s"), "13");
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 2);
    CHECK_INT(ldb_optimistic_reject(s.h[0], "no"), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_ERROR); /* dormant */
    CHECK_INT(ldb_optimistic_state(s.h[0]), LDB_OPTIMISTIC_PENDING);
    CHECK_INT(ldb_create_aggregate(db, "addup", 1, &ADDUP), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    CHECK_INT(ldb_optimistic_state(s.h[0]), LDB_OPTIMISTIC_REJECTED);
    CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;3,three,3");
    CHECK_STR(sql_rows(db, "SELECT total FROM s"), "4");
    sent_free(&s);
    db = crash_reopen(db, path);
    CHECK_INT(ldb_create_aggregate(db, "addup", 1, &ADDUP), LDB_OK);
    CHECK_STR(sql_rows(db, "SELECT total FROM s"), "4");
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM livedb_outbox"), "1");
    ldb_close(db);
    durable_rmdir(dir);
}

/* One transaction of 10,000 mutations survives a crash and rejects. */
static void huge_transaction(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "h.ldb");
    ldb *db = open_at(path);
    EXEC(db, "PRAGMA synchronous = OFF");
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER)");
    EXEC(db, "BEGIN");
    ldb_stmt *st;
    CHECK_INT(ldb_prepare(db, "INSERT INTO t VALUES (?, 'r', ?)", -1, &st, NULL), LDB_OK);
    for (int i = 0; i < 10000; i++) {
        ldb_bind_int64(st, 1, i);
        ldb_bind_int64(st, 2, i);
        CHECK_INT(ldb_step(st), LDB_DONE);
        ldb_reset(st);
    }
    ldb_finalize(st);
    EXEC(db, "COMMIT");
    char *synced = durable_query(db, "SELECT * FROM t");
    ldb_optimistic_free(commit_sql(db, "UPDATE t SET n = n + 1 WHERE id % 2 = 0; "
                                       "DELETE FROM t WHERE id % 2 = 1 AND id < 5000; "
                                       "INSERT INTO t SELECT id + 10000, 'new', 0 FROM t "
                                       "WHERE id >= 7500"));
    char *visible = durable_query(db, "SELECT * FROM t");
    db = crash_reopen(db, path);
    char *again = durable_query(db, "SELECT * FROM t");
    CHECK_STR(again, visible);
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 1);
    CHECK_INT(ldb_optimistic_count(s.h[0]), 10000);
    CHECK_INT(ldb_optimistic_reject(s.h[0], "no"), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    char *back = durable_query(db, "SELECT * FROM t");
    CHECK_STR(back, synced);
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM livedb_outbox"), "0");
    sent_free(&s);
    ldb_close(db);
    db = open_at(path);
    char *last = durable_query(db, "SELECT * FROM t");
    CHECK_STR(last, synced);
    ldb_close(db);
    mem_free(synced);
    mem_free(visible);
    mem_free(again);
    mem_free(back);
    mem_free(last);
    durable_rmdir(dir);
}

/* Found: after a reopen a RETAIN_OWNED source revalidates the
 * rows the table holds (persisted retention), and a row the source no
 * longer has is deleted as gone, but not a row under pending writes
 * (retain.c sweep_persisted skips them: "their fate is the writes'").
 * Its synced row (the key's base in the outbox) is then never told: the
 * pending UPDATE over a row the server deleted stays pending and visible,
 * where a sync delete beneath it rejects it at once ("the row it updates
 * no longer exists"), and a rejection brings the deleted row back, for
 * good (no demand owns it, yet no sweep removes it; it survives reopens).
 * Now "gone" beneath an overlaid key is a sync delete of its synced row,
 * in a step (retain.c delete_beneath). */
static void persisted_gone_under_pending(void)
{
    struct world w;
    w_open(&w, true, LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, SOURCED, NULL);
    uint64_t a = w_commit(&w, "UPDATE t SET name = 'mine' WHERE id = 1");
    w_commit(&w, "UPDATE t SET name = 'mine2' WHERE id = 2");
    w_reopen(&w, true);
    CHECK_INT(ldb_source_poll(w.db), LDB_OK);
    CHECK(w.eager != NULL); /* the revalidation of rows 1, 2 and 3 */
    ldb_sync *t; /* the server has row 2 only */
    CHECK_INT(ldb_sync_begin(w.src, w.eager, &t), LDB_OK);
    ldb_sync_int64(t, 0, 2);
    ldb_sync_text(t, 1, "two", -1);
    ldb_sync_int64(t, 2, 2);
    CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    CHECK_INT(ldb_sync_commit(t, NULL), LDB_OK);
    CHECK_INT(ldb_request_settle(w.eager, LDB_OK, NULL), LDB_OK);
    CHECK_INT(ldb_source_poll(w.db), LDB_OK);
    ldb_optimistic *h = w_handle(&w, a);
    CHECK(h == NULL); /* rejected: the row it updates is gone */
    CHECK_STR(sql_rows(w.db, T_ROWS), "2,mine2,2");
    w_close(&w);
}

TEST_MAIN(T(temp_mutation_first), T(log_record_after_nomem), T(close_with_queued_resolution),
          T(sync_confirm_foreign_handle), T(hostile_sql), T(nomem_sync_under_pending),
          T(nomem_reject_cascade), T(nomem_confirm), T(nomem_pending), T(reopen_many_nomem),
          T(fault_sync_under_pending), T(fault_reject_cascade), T(fault_confirm),
          T(truncate_then_reopen), T(eager_confirm_after_reopen), T(unique_after_reopen),
          T(checkpoint_every_commit), T(types_survive), T(composite_key), T(dormant_view_waits),
          T(huge_transaction), T(persisted_gone_under_pending))
