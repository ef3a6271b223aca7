/*
 * test_optimistic_durable.c - pending optimistic transactions of a durable
 * database outlive the process (livedb.h, ldb_optimistic_pending): after a
 * close or a crash they come back pending, with their rows visible, their
 * synced rows kept (a rejection brings those back, also when sync writes
 * changed them beneath), their mutations as committed and their ids; and
 * they resolve as they would have. A commit that fails leaves no trace in
 * the outbox; users cannot write the outbox; an in-memory database has
 * none. The random campaign is test_optimistic_oracle's optimistic_durable.
 */
#include "base/file.h"
#include "nomem.h"
#include "storage/durable_util.h"
#include "test_db.h"
#include "optimistic_util.h"

#include <errno.h>
#include <sys/wait.h>

/* t with three rows, and a materialized view over it unless sourced (a
 * source cannot be attached to a table a view reads). */
static ldb *make_fixture(const char *path, bool sourced)
{
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER);"
             "INSERT INTO t VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3)");
    if (!sourced)
        EXEC(db, "CREATE MATERIALIZED VIEW names AS SELECT name FROM t WHERE n > 0");
    return db;
}

static ldb *fixture(const char *path) { return make_fixture(path, false); }

static const char *const T_ROWS = "SELECT id, name, n FROM t ORDER BY id";

/* Three pending transactions survive a close; a rejection of the middle
 * one brings back its synced rows, the others resolve as written. */
static void survive_close(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "o.ldb");
    ldb *db = fixture(path);
    ldb_optimistic *a = commit_sql(db, "UPDATE t SET name = 'uno' WHERE id = 1");
    ldb_optimistic *b = commit_sql(db, "DELETE FROM t WHERE id = 2; "
                                       "INSERT INTO t VALUES (4, 'four', 4)");
    ldb_optimistic *c = commit_sql(db, "UPDATE t SET n = 30 WHERE id = 3");
    uint64_t ids[3] = { ldb_optimistic_id(a), ldb_optimistic_id(b), ldb_optimistic_id(c) };
    const char *visible = "1,uno,1;3,three,30;4,four,4";
    CHECK_STR(sql_rows(db, T_ROWS), visible);
    ldb_optimistic_free(a);
    ldb_optimistic_free(b);
    ldb_optimistic_free(c);
    ldb_close(db);

    db = open_at(path);
    CHECK_STR(sql_rows(db, T_ROWS), visible);
    ldb_optimistic_stats st;
    ldb_optimistic_stats_get(db, &st);
    CHECK_INT(st.pending, 3);
    CHECK_INT(st.rows, 4);
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(ldb_optimistic_id(s.h[i]), ids[i]);
        CHECK_INT(ldb_optimistic_state(s.h[i]), LDB_OPTIMISTIC_PENDING);
    }
    CHECK_INT(ldb_optimistic_count(s.h[1]), 2);
    CHECK_INT(ldb_optimistic_kind(s.h[1], 0), LDB_MUTATION_DELETE);
    CHECK_STR(ldb_optimistic_table(s.h[1], 0), "t");
    CHECK_STR(ldb_value_text(ldb_optimistic_before(s.h[1], 0, 1), NULL), "two");
    CHECK_INT(ldb_optimistic_kind(s.h[1], 1), LDB_MUTATION_INSERT);
    CHECK(ldb_optimistic_before(s.h[1], 1, 0) == NULL);
    CHECK_INT(ldb_value_int64(ldb_optimistic_after(s.h[1], 1, 2)), 4);
    /* plain writes stay refused while they are pending */
    CHECK_INT(ldb_exec(db, "UPDATE t SET n = 0 WHERE id = 3", NULL, NULL), LDB_ERROR);
    CHECK_INT(ldb_optimistic_reject(s.h[1], "no"), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    CHECK_STR(sql_rows(db, T_ROWS), "1,uno,1;2,two,2;3,three,30");
    CHECK_INT(ldb_optimistic_confirm(s.h[0]), LDB_OK);
    CHECK_INT(ldb_optimistic_confirm(s.h[2]), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    CHECK_INT(ldb_optimistic_state(s.h[1]), LDB_OPTIMISTIC_REJECTED);
    ldb_optimistic_stats_get(db, &st);
    CHECK_INT(st.pending, 0);
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM livedb_outbox"), "0");
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM livedb_outbox_keys"), "0");
    CHECK_STR(sql_rows(db, "SELECT name FROM names ORDER BY name"), "three;two;uno");
    sent_free(&s);
    EXEC(db, "UPDATE t SET n = 0 WHERE id = 3"); /* nothing pending: plain writes again */
    ldb_close(db);
    durable_rmdir(dir);
}

static void nop_row(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)ctx, (void)q, (void)c, (void)n;
}

static int never_settle(void *ctx, ldb_request *req)
{
    (void)ctx, (void)req;
    return LDB_OK;
}

/* The synced rows under pending ones change (a source's writes) before
 * the crash; after it, a rejection brings back the newest synced row. A
 * child process commits and dies without closing. */
static void survive_crash_with_sync_beneath(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "c.ldb");
    ldb *db = make_fixture(path, true);
    ldb_close(db);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        db = open_at(path);
        static const ldb_provider p = { .load_subset = never_settle };
        ldb_source *src;
        if (ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND, &p, NULL, &src))
            _exit(2);
        ldb_optimistic *o = commit_sql(db, "UPDATE t SET name = 'mine' WHERE id = 2; "
                                           "DELETE FROM t WHERE id = 3");
        ldb_sync *t; /* the server changes both rows beneath */
        if (ldb_sync_begin(src, NULL, &t))
            _exit(3);
        ldb_sync_int64(t, 0, 2);
        ldb_sync_text(t, 1, "theirs", -1);
        ldb_sync_int64(t, 2, 20);
        ldb_sync_upsert(t);
        ldb_sync_int64(t, 0, 3);
        ldb_sync_text(t, 1, "three'", -1);
        ldb_sync_int64(t, 2, 33);
        ldb_sync_upsert(t);
        if (ldb_sync_commit(t, NULL) || ldb_source_poll(db))
            _exit(4);
        (void)o;
        _exit(0); /* no close, no checkpoint: the log alone */
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    db = open_at(path);
    /* the pending update folds over the server's row: its column only */
    CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;2,mine,20");
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
    CHECK_INT(s.n, 1);
    ldb_live *q;
    CHECK_INT(ldb_live_open(db, T_ROWS, nop_row, NULL, &q), LDB_OK);
    CHECK_INT(ldb_optimistic_reject(s.h[0], "no"), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;2,theirs,20;3,three',33");
    CHECK_INT(ldb_live_count(q), 3);
    ldb_live_close(q);
    sent_free(&s);
    ldb_close(db);
    durable_rmdir(dir);
}

/* Allocation failure at every point of a durable optimistic commit: the
 * commit fails and the transaction stays open and unchanged (then
 * ROLLBACK, which leaves no outbox row), or it succeeds and survives a
 * reopen. */
static void commit_nomem(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "n.ldb");
    ldb *db = fixture(path);
    bool done = false;
    for (uint64_t n = 1; !done && n < 10000; n++) {
        CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
        EXEC(db, "UPDATE t SET name = 'x' WHERE id = 1; INSERT INTO t VALUES (9, 'nine', 9)");
        ldb_optimistic *o = NULL;
        mem_fail_at(n, 0);
        int rc = ldb_optimistic_commit(db, NULL, NULL, &o);
        done = mem_failed_count() == 0;
        mem_fail_at(0, 0);
        if (rc) {
            CHECKF(rc == LDB_NOMEM, "n %llu: %d %s", (unsigned long long)n, rc, ldb_errmsg(db));
            CHECK_STR(sql_rows(db, "SELECT name FROM t WHERE id IN (1, 9) ORDER BY id"), "x;nine");
            EXEC(db, "ROLLBACK");
            CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;2,two,2;3,three,3");
            CHECKF(!strstr(sql_rows(db, "SELECT name FROM livedb_schema"), "outbox") ||
                       strcmp(sql_rows(db, "SELECT count(*) FROM livedb_outbox"), "0") == 0,
                   "n %llu: outbox rows after a failed commit", (unsigned long long)n);
            continue;
        }
        ldb_close(db);
        db = open_at(path);
        struct sent s = { .n = 0 };
        CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
        CHECKF(s.n == 1, "n %llu: %d pending after reopen", (unsigned long long)n, s.n);
        CHECK_INT(ldb_optimistic_reject(s.h[0], "undo"), LDB_OK);
        CHECK_INT(ldb_source_poll(db), LDB_OK);
        CHECK_STR(sql_rows(db, T_ROWS), "1,one,1;2,two,2;3,three,3");
        sent_free(&s);
        ldb_optimistic_free(o);
    }
    CHECK(done);
    ldb_close(db);
    durable_rmdir(dir);
}

/* A disk write that fails at an optimistic commit (each one in turn):
 * the commit fails, the transaction stays open and unchanged, and after
 * ROLLBACK and a reopen nothing of it is there; or the commit holds and
 * comes back pending. */
static void commit_disk_fault(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "d.ldb");
    ldb_close(fixture(path));
    bool done = false;
    for (uint64_t n = 1; !done && n < 100; n++) {
        ldb *db = open_at(path);
        CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
        EXEC(db, "UPDATE t SET name = 'x' WHERE id = 1");
        ldb_optimistic *o = NULL;
        file_fail_at(n, 0, EIO); /* the n-th disk write from now */
        int rc = ldb_optimistic_commit(db, NULL, NULL, &o);
        done = file_failed_count() == 0;
        file_fail_at(0, 0, 0);
        if (rc) {
            CHECKF(rc == LDB_IOERR, "n %llu: %d %s", (unsigned long long)n, rc, ldb_errmsg(db));
            CHECK_STR(sql_rows(db, "SELECT name FROM t WHERE id = 1"), "x");
            EXEC(db, "ROLLBACK");
        }
        ldb_close(db);
        db = open_at(path);
        ldb_optimistic_stats st;
        ldb_optimistic_stats_get(db, &st);
        CHECKF(st.pending == (rc ? 0u : 1u), "n %llu: rc %d, %llu pending after reopen",
               (unsigned long long)n, rc, (unsigned long long)st.pending);
        CHECK_STR(sql_rows(db, "SELECT name FROM t WHERE id = 1"), rc ? "one" : "x");
        struct sent s = { .n = 0 };
        CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK);
        for (int i = 0; i < s.n; i++)
            CHECK_INT(ldb_optimistic_reject(s.h[i], "undo"), LDB_OK);
        CHECK_INT(ldb_source_poll(db), LDB_OK);
        CHECK_STR(sql_rows(db, "SELECT name FROM t WHERE id = 1"), "one");
        sent_free(&s);
        ldb_optimistic_free(o);
        ldb_close(db);
    }
    CHECK(done);
    durable_rmdir(dir);
}

/* Reopening with pending transactions under every allocation failure:
 * LDB_NOMEM and nothing changed, or everything back. */
static void reopen_nomem(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "r.ldb");
    ldb *db = fixture(path);
    ldb_optimistic_free(commit_sql(db, "UPDATE t SET name = 'x' WHERE id = 1"));
    ldb_optimistic_free(commit_sql(db, "DELETE FROM t WHERE id = 2"));
    ldb_close(db);
    bool done = false;
    for (uint64_t n = 1; !done && n < 20000; n++) {
        mem_fail_at(n, 0);
        int rc = ldb_open(path, &db);
        done = mem_failed_count() == 0;
        mem_fail_at(0, 0);
        if (rc) {
            CHECKF(rc == LDB_NOMEM, "n %llu: %d %s", (unsigned long long)n, rc, ldb_errmsg(NULL));
            continue;
        }
        ldb_optimistic_stats st;
        ldb_optimistic_stats_get(db, &st);
        CHECKF(st.pending == 2 && st.rows == 2, "n %llu: %llu pending", (unsigned long long)n,
               (unsigned long long)st.pending);
        ldb_close(db);
    }
    CHECK(done);
    durable_rmdir(dir);
}

/* The outbox is the layer's: readable, not writable, not droppable; an
 * in-memory database makes none. */
static void outbox_is_the_layers(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "w.ldb");
    ldb *db = fixture(path);
    ldb_optimistic *o = commit_sql(db, "UPDATE t SET n = 5 WHERE id = 1");
    CHECK_STR(sql_rows(db, "SELECT id, seq, kind FROM livedb_outbox"), "1,0,2");
    CHECK_INT(ldb_exec(db, "DELETE FROM livedb_outbox", NULL, NULL), LDB_ERROR);
    CHECK_INT(ldb_exec(db, "DROP TABLE livedb_outbox_keys", NULL, NULL), LDB_ERROR);
    CHECK_INT(ldb_exec(db, "INSERT INTO livedb_outbox_keys VALUES (9, 't', NULL, NULL, 0)", NULL,
                       NULL),
              LDB_ERROR);
    ldb_optimistic_free(o);
    ldb_close(db);
    durable_rmdir(dir);

    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)");
    ldb_optimistic_free(commit_sql(db, "INSERT INTO t VALUES (1, 1)"));
    CHECK_STR(sql_rows(db, "SELECT count(*) FROM livedb_schema WHERE name LIKE 'livedb_outbox%'"),
              "0");
    struct sent s = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, collect, &s), LDB_OK); /* in memory too */
    CHECK_INT(s.n, 1);
    sent_free(&s);
    CHECK_INT(ldb_optimistic_pending(db, NULL, NULL), LDB_MISUSE);
    CHECK_INT(ldb_optimistic_pending(NULL, collect, &s), LDB_MISUSE);
    ldb_close(db);
}

TEST_MAIN(T(survive_close), T(survive_crash_with_sync_beneath), T(commit_nomem),
          T(commit_disk_fault), T(reopen_nomem), T(outbox_is_the_layers))
