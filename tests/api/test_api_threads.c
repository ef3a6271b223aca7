/*
 * test_api_threads.c - one database handle used from several threads at
 * once (livedb.h "Threads": a handle is serialized behind its own
 * recursive mutex), and separate handles on separate threads.
 *
 * Worker threads never CHECK (the harness unwinds with longjmp on the main
 * thread only): they count what went wrong and the main thread checks the
 * counts. The work mixes every kind of call that touches the handle's
 * shared state: writes, prepared reads stepped row by row, finalize (the
 * statement list), live queries opened, read and closed (the registry),
 * and errors (the message slot). Built with ASan in make test-sanitize,
 * which is where an unserialized handle shows as a use-after-free, and
 * with TSan in .ci/run.
 */
#include "test_db.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct shared {
    ldb *db;
    int iters;
    atomic_int failures;
    atomic_int changes_seen; /* rows delivered to live callbacks */
    char first_failure[320];
    pthread_mutex_t fail_mu;
};

static void fail(struct shared *sh, const char *what, int rc)
{
    pthread_mutex_lock(&sh->fail_mu);
    if (atomic_fetch_add(&sh->failures, 1) == 0)
        snprintf(sh->first_failure, sizeof sh->first_failure, "%.256s: rc %d", what, rc);
    pthread_mutex_unlock(&sh->fail_mu);
}

/* Writes: inserts, updates and deletes over a key range, some of them
 * failing on purpose (a duplicate key) so the error slot is exercised. */
static void *writer(void *arg)
{
    struct shared *sh = arg;
    char sql[160];
    for (int i = 0; i < sh->iters; i++) {
        int k = i % 97;
        snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO t VALUES (%d, %d, 'w%d')", k, i, i);
        int rc = ldb_exec(sh->db, sql, NULL, NULL);
        if (rc)
            fail(sh, "insert", rc);
        snprintf(sql, sizeof sql, "UPDATE t SET v = v + 1 WHERE id = %d", (k * 7) % 97);
        if ((rc = ldb_exec(sh->db, sql, NULL, NULL)))
            fail(sh, "update", rc);
        if (i % 5 == 0) {
            snprintf(sql, sizeof sql, "DELETE FROM t WHERE id = %d", (k * 3) % 97);
            if ((rc = ldb_exec(sh->db, sql, NULL, NULL)))
                fail(sh, "delete", rc);
        }
        rc = ldb_exec(sh->db, "INSERT INTO t VALUES (1000, 0, 'x'), (1000, 0, 'y')", NULL, NULL);
        if (rc != LDB_CONSTRAINT)
            fail(sh, "duplicate key not refused", rc);
    }
    return NULL;
}

/* Reads: a prepared statement stepped row by row, reset and finalized. */
static void *reader(void *arg)
{
    struct shared *sh = arg;
    for (int i = 0; i < sh->iters; i++) {
        ldb_stmt *s;
        int rc = ldb_prepare(sh->db, "SELECT id, v, w FROM t WHERE v >= ? ORDER BY id", -1, &s,
                             NULL);
        if (rc) {
            fail(sh, "prepare", rc);
            continue;
        }
        ldb_bind_int64(s, 1, i % 10);
        int64_t last = -1;
        while ((rc = ldb_step(s)) == LDB_ROW) {
            int64_t id = ldb_row_int64(ldb_stmt_row(s), 0);
            if (id <= last)
                fail(sh, "rows out of order", 0);
            last = id;
        }
        if (rc != LDB_DONE)
            fail(sh, "step", rc);
        ldb_finalize(s);
        if (ldb_exec(sh->db, "SELECT nosuchcolumn FROM t", NULL, NULL) != LDB_ERROR)
            fail(sh, "bad column accepted", 0);
    }
    return NULL;
}

static void count_changes(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q;
    (void)c;
    struct shared *sh = ctx;
    atomic_fetch_add(&sh->changes_seen, (int)n);
}

static int count_row(void *ctx, const ldb_row *r)
{
    (void)r;
    (*(int64_t *)ctx)++;
    return 0;
}

/* Live queries: opened, read, counted and closed while the others write. */
static void *watcher(void *arg)
{
    struct shared *sh = arg;
    for (int i = 0; i < sh->iters / 4 + 1; i++) {
        ldb_live *q;
        int rc = ldb_live_open(sh->db, "SELECT id, v FROM t WHERE v % 2 = 0 ORDER BY v DESC, id LIMIT 10",
                               count_changes, sh, &q);
        if (rc) {
            fail(sh, "live open", rc);
            continue;
        }
        /* read and count must see one state: another thread's commit may
         * land between two calls unless they are grouped (ldb_lock) */
        int64_t rows = 0, count;
        ldb_lock(sh->db);
        if ((rc = ldb_live_read(q, count_row, &rows)))
            fail(sh, "live read", rc);
        count = ldb_live_count(q);
        ldb_unlock(sh->db);
        if (rows != count || rows > 10)
            fail(sh, "live count", (int)rows);
        ldb_live_stats st;
        ldb_live_stats_get(q, &st);
        ldb_live_close(q);
    }
    return NULL;
}

static void format_pair(const ldb_row *r, char *out)
{
    snprintf(out, 64, "%lld|%lld", (long long)ldb_row_int64(r, 0), (long long)ldb_row_int64(r, 1));
}

static int read_pair(void *ctx, const ldb_row *r)
{
    format_pair(r, ctx);
    return 0;
}

static void run_threads(struct shared *sh, void *(*const *fns)(void *), int n)
{
    pthread_t th[8];
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&th[i], NULL, fns[i], sh) == 0);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

static void shared_init(struct shared *sh, int iters)
{
    memset(sh, 0, sizeof *sh);
    pthread_mutex_init(&sh->fail_mu, NULL);
    sh->iters = iters * test_scale();
    CHECK(ldb_open(NULL, &sh->db) == LDB_OK);
    EXEC(sh->db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, w TEXT)");
    EXEC(sh->db, "CREATE INDEX t_v ON t(v)");
}

static void shared_check(struct shared *sh)
{
    CHECKF(atomic_load(&sh->failures) == 0, "%d failures, first: %s",
           atomic_load(&sh->failures), sh->first_failure);
}

/* A live query kept open through the whole run must equal the table at
 * the end, and must have been told about every change. */
static void one_handle_many_threads(void)
{
    struct shared sh;
    shared_init(&sh, 400);
    ldb_live *sum;
    CHECK(ldb_live_open(sh.db, "SELECT count(*), sum(v) FROM t", count_changes, &sh, &sum) ==
          LDB_OK);
    void *(*const fns[])(void *) = { writer, writer, reader, watcher };
    run_threads(&sh, fns, 4);
    shared_check(&sh);
    CHECK(atomic_load(&sh.changes_seen) > 0);

    /* the live aggregate equals the table, evaluated once more */
    ldb_stmt *s;
    CHECK(ldb_prepare(sh.db, "SELECT count(*), sum(v) FROM t", -1, &s, NULL) == LDB_OK);
    CHECK(ldb_step(s) == LDB_ROW);
    char want[64], got[64] = "";
    format_pair(ldb_stmt_row(s), want);
    ldb_finalize(s);
    CHECK(ldb_live_read(sum, read_pair, got) == LDB_OK);
    CHECK_STR(got, want);
    ldb_live_close(sum);
    ldb_close(sh.db);
}

/* ldb_lock makes a sequence of calls atomic for one thread: another
 * thread's call waits, so the error read after a failed call is that
 * call's own. */
struct locker {
    ldb *db;
    atomic_int phase;
};

static void *late_writer(void *arg)
{
    struct locker *l = arg;
    while (atomic_load(&l->phase) == 0)
        ;
    ldb_exec(l->db, "INSERT INTO t VALUES (1, 1, 'late')", NULL, NULL);
    atomic_store(&l->phase, 2);
    return NULL;
}

static void lock_groups_calls(void)
{
    struct locker l = { NULL, 0 };
    CHECK(ldb_open(NULL, &l.db) == LDB_OK);
    EXEC(l.db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, w TEXT)");
    pthread_t th;
    CHECK(pthread_create(&th, NULL, late_writer, &l) == 0);
    ldb_lock(l.db);
    atomic_store(&l.phase, 1);
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    CHECK_INT(atomic_load(&l.phase), 1); /* the other thread waits for the lock */
    CHECK_INT(ldb_exec(l.db, "SELECT * FROM nosuchtable", NULL, NULL), LDB_ERROR);
    CHECK(strstr(ldb_errmsg(l.db), "nosuchtable"));
    ldb_unlock(l.db);
    pthread_join(th, NULL);
    CHECK_INT(atomic_load(&l.phase), 2);
    CHECK_INT(ldb_exec(l.db, "SELECT * FROM t", NULL, NULL), LDB_OK);
    ldb_close(l.db);
}

/* A callback runs with the handle's lock held; its own calls on the same
 * handle (reads) re-enter the lock instead of deadlocking. */
static int reenter_rows;

static int reenter_row(void *ctx, const ldb_row *r)
{
    (void)ctx;
    (void)r;
    reenter_rows++;
    return 0;
}

static void reenter_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)c;
    (void)n;
    ldb *db = ctx;
    ldb_exec(db, "SELECT * FROM t", reenter_row, NULL);
    ldb_live_read(q, reenter_row, NULL);
}

static void callbacks_reenter(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)");
    ldb_live *q;
    CHECK(ldb_live_open(db, "SELECT id, v FROM t", reenter_change, db, &q) == LDB_OK);
    reenter_rows = 0;
    EXEC(db, "INSERT INTO t VALUES (1, 1), (2, 2)");
    CHECK_INT(reenter_rows, 4); /* 2 rows by ldb_exec, 2 by ldb_live_read */
    ldb_live_close(q);
    ldb_close(db);
}

/* Separate handles on separate threads share nothing. */
static void *own_handle(void *arg)
{
    struct shared *sh = arg;
    struct shared mine;
    memset(&mine, 0, sizeof mine);
    pthread_mutex_init(&mine.fail_mu, NULL);
    mine.iters = sh->iters;
    if (ldb_open(NULL, &mine.db) ||
        ldb_exec(mine.db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, w TEXT)", NULL, NULL)) {
        fail(sh, "open", 0);
        return NULL;
    }
    writer(&mine);
    reader(&mine);
    watcher(&mine);
    if (atomic_load(&mine.failures))
        fail(sh, mine.first_failure, 0);
    ldb_close(mine.db);
    return NULL;
}

static void handle_per_thread(void)
{
    struct shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.fail_mu, NULL);
    sh.iters = 200 * test_scale();
    void *(*const fns[])(void *) = { own_handle, own_handle, own_handle };
    run_threads(&sh, fns, 3);
    shared_check(&sh);
}

TEST_MAIN(T(one_handle_many_threads), T(lock_groups_calls), T(callbacks_reenter),
          T(handle_per_thread))
