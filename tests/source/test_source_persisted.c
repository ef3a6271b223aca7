/*
 * test_source_persisted.c - persisted retention (law 11 of seed 000): rows
 * a table already holds when a source is attached (a durable database
 * reopened) are visible at once, owned by the retention until the source
 * revalidates them: one grouped request for their keys, after whose
 * settlement the rows it did not bring back are deleted and the retention
 * ends (under LDB_SOURCE_RETAIN_OWNED the rows then stay only while
 * demanded). A write of a key from the source meanwhile is the newer word.
 *
 * The provider here is the test's: it records requests and the test
 * answers them, from a "server" of rows, when the scenario says so.
 */
#include "test.h"
#include "test_db.h"

#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

struct server {
    ldb_source *src;
    ldb_request *reqs[16];
    int nreqs;
    int64_t ids[8];        /* rows the server has: id -> name "s<id>" */
    int nids;
};

static int record(void *ctx, ldb_request *req)
{
    struct server *sv = ctx;
    CHECK(sv->nreqs < 16);
    ldb_request_ref(req);
    sv->reqs[sv->nreqs++] = req;
    return LDB_OK;
}

static void release(void *ctx, ldb_request *req)
{
    (void)ctx, (void)req;
}

/* Answers req with the server's rows among its keys, then settles it. */
static void answer(struct server *sv, ldb_request *req, int rc)
{
    const char *col;
    int n = ldb_request_keys(req, &col);
    ldb_sync *t;
    CHECK(ldb_sync_begin(sv->src, req, &t) == LDB_OK);
    for (int i = 0; rc == LDB_OK && i < n; i++) {
        int64_t k = ldb_value_int64(ldb_request_key(req, i));
        for (int j = 0; j < sv->nids; j++) {
            if (sv->ids[j] != k)
                continue;
            char name[16];
            snprintf(name, sizeof name, "s%lld", (long long)k);
            ldb_sync_int64(t, 0, k);
            ldb_sync_text(t, 1, name, -1);
            CHECK(ldb_sync_upsert(t) == LDB_OK);
        }
    }
    CHECK(ldb_sync_commit(t, NULL) == LDB_OK);
    CHECK(ldb_request_settle(req, rc, rc ? "server down" : NULL) == LDB_OK);
}

static void free_reqs(struct server *sv)
{
    for (int i = 0; i < sv->nreqs; i++)
        ldb_request_unref(sv->reqs[i]);
    sv->nreqs = 0;
}

static char *rows_of(ldb *db)
{
    static char buf[512];
    buf[0] = '\0';
    ldb_stmt *st;
    CHECK(ldb_prepare(db, "SELECT id, name FROM t ORDER BY id", -1, &st, NULL) == LDB_OK);
    while (ldb_step(st) == LDB_ROW) {
        const ldb_row *r = ldb_stmt_row(st);
        char one[64];
        snprintf(one, sizeof one, "%lld:%s ", (long long)ldb_row_int64(r, 0),
                 ldb_row_text(r, 1, NULL));
        strcat(buf, one);
    }
    ldb_finalize(st);
    return buf;
}

static ldb *with_rows(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)");
    EXEC(db, "INSERT INTO t VALUES (1, 'old1'), (2, 'old2'), (3, 'old3')");
    return db;
}

static void nop_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)ctx, (void)q, (void)c, (void)n;
}

static const ldb_provider provider = { .load_subset = record, .unload_subset = release };

/* The rows are there at once; one request asks for their keys; what it
 * does not bring back goes, what it brings back is the server's (and
 * stays while a live query owns it). */
static void revalidation(void)
{
    ldb *db = with_rows();
    struct server sv = { .ids = { 1, 3 }, .nids = 2 };
    CHECK(ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider, &sv, &sv.src) == LDB_OK);
    CHECK_STR(rows_of(db), "1:old1 2:old2 3:old3 ");
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(sv.nreqs, 1);
    const char *col;
    CHECK_INT(ldb_request_keys(sv.reqs[0], &col), 3);
    CHECK_STR(col, "id");
    CHECK_STR(rows_of(db), "1:old1 2:old2 3:old3 "); /* unsettled: nothing changes */
    ldb_live *q; /* owns the three rows once the retention ends */
    CHECK(ldb_live_open(db, "SELECT * FROM t WHERE id IN (1, 2, 3)", nop_change, NULL, &q) ==
          LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(sv.nreqs, 2);
    answer(&sv, sv.reqs[0], LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_STR(rows_of(db), "1:s1 3:s3 "); /* 2 is gone at the source */
    ldb_source_stats st;
    ldb_source_stats_get(sv.src, &st);
    CHECK_INT(st.requests_live, 1); /* the retention ended: released; the query's stays */
    ldb_live_close(q);
    free_reqs(&sv);
    ldb_close(db);
}

/* A key the source wrote meanwhile (a newer word than the revalidation's
 * snapshot) is not deleted; a failed revalidation deletes nothing. */
static void newer_writes_and_failure(void)
{
    ldb *db = with_rows();
    struct server sv = { .nids = 0 };
    CHECK(ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider, &sv, &sv.src) == LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(sv.nreqs, 1);
    ldb_live *q;
    CHECK(ldb_live_open(db, "SELECT * FROM t WHERE id = 2", nop_change, NULL, &q) == LDB_OK);
    ldb_sync *t; /* a feed's write, no request */
    CHECK(ldb_sync_begin(sv.src, NULL, &t) == LDB_OK);
    ldb_sync_int64(t, 0, 2);
    ldb_sync_text(t, 1, "fed", -1);
    CHECK(ldb_sync_upsert(t) == LDB_OK);
    CHECK(ldb_sync_commit(t, NULL) == LDB_OK);
    answer(&sv, sv.reqs[0], LDB_OK); /* the server had none of them */
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_STR(rows_of(db), "2:fed ");
    ldb_live_close(q);
    free_reqs(&sv);
    ldb_close(db);

    db = with_rows();
    struct server down = { .nids = 0 };
    CHECK(ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider, &down, &down.src) ==
          LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    answer(&down, down.reqs[0], LDB_ERROR);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_STR(rows_of(db), "1:old1 2:old2 3:old3 ");
    free_reqs(&down);
    ldb_close(db);
}

/* Under query-owned retention the persisted rows are kept until they
 * are revalidated (not swept when other demand retires), then stay only
 * while a live query owns them. */
static void retained_until_revalidated(void)
{
    ldb *db = with_rows();
    struct server sv = { .ids = { 1, 2, 3 }, .nids = 3 };
    CHECK(ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider,
                            &sv, &sv.src) == LDB_OK);
    ldb_live *q, *other;
    CHECK(ldb_live_open(db, "SELECT * FROM t WHERE id = 1", nop_change, NULL, &q) == LDB_OK);
    CHECK(ldb_live_open(db, "SELECT * FROM t WHERE id = 9", nop_change, NULL, &other) == LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(sv.nreqs, 3); /* the revalidation and the two queries' */
    ldb_live_close(other); /* demand retires: a sweep, which keeps the persisted rows */
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_STR(rows_of(db), "1:old1 2:old2 3:old3 ");
    ldb_request *reval = NULL;
    for (int i = 0; i < sv.nreqs; i++) {
        const char *col;
        if (ldb_request_keys(sv.reqs[i], &col) == 3)
            reval = sv.reqs[i];
    }
    CHECK(reval != NULL);
    answer(&sv, reval, LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_STR(rows_of(db), "1:s1 "); /* only the queried row is still owned */
    ldb_live_close(q);
    free_reqs(&sv);
    ldb_close(db);
}

/* No retention without rows, and none without query-owned retention,
 * where rows leave only by sync writes. */
static void when_not(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)");
    EXEC(db, "CREATE TABLE d(id INTEGER PRIMARY KEY, name TEXT)");
    EXEC(db, "INSERT INTO d VALUES (1, 'kept')");
    struct server sv = { .nids = 0 }, sd = { .nids = 0 };
    int mode = LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED;
    CHECK(ldb_source_attach(db, "t", mode, &provider, &sv, &sv.src) == LDB_OK);
    CHECK(ldb_source_attach(db, "d", LDB_SOURCE_ON_DEMAND, &provider, &sd, &sd.src) == LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(sv.nreqs + sd.nreqs, 0);
    ldb_close(db);
}

/* A composite key (org, id): one request for the first column's values,
 * a superset of the persisted rows. A persisted row goes when its own key
 * did not come back, even though others of its org did; a key that came
 * back equal under the column's collation (NOCASE) is the same row. */
struct crow {
    const char *org;
    int64_t id;
};

static void answer_composite(ldb_source *src, ldb_request *req, const struct crow *rows, int n)
{
    const char *col;
    int nk = ldb_request_keys(req, &col);
    CHECK_STR(col, "org");
    ldb_sync *t;
    CHECK(ldb_sync_begin(src, req, &t) == LDB_OK);
    for (int i = 0; i < nk; i++) {
        const char *k = ldb_value_text(ldb_request_key(req, i), NULL);
        for (int j = 0; j < n; j++) {
            if (strcasecmp(rows[j].org, k) != 0)
                continue;
            char name[32];
            snprintf(name, sizeof name, "s%s%lld", rows[j].org, (long long)rows[j].id);
            ldb_sync_text(t, 0, rows[j].org, -1);
            ldb_sync_int64(t, 1, rows[j].id);
            ldb_sync_text(t, 2, name, -1);
            CHECK(ldb_sync_upsert(t) == LDB_OK);
        }
    }
    CHECK(ldb_sync_commit(t, NULL) == LDB_OK);
    CHECK(ldb_request_settle(req, LDB_OK, NULL) == LDB_OK);
}

static char *composite_rows(ldb *db)
{
    static char buf[512];
    buf[0] = '\0';
    ldb_stmt *st;
    CHECK(ldb_prepare(db, "SELECT org, id, name FROM c ORDER BY org, id", -1, &st, NULL) ==
          LDB_OK);
    while (ldb_step(st) == LDB_ROW) {
        const ldb_row *r = ldb_stmt_row(st);
        char one[64];
        snprintf(one, sizeof one, "%s/%lld:%s ", ldb_row_text(r, 0, NULL),
                 (long long)ldb_row_int64(r, 1), ldb_row_text(r, 2, NULL));
        strcat(buf, one);
    }
    ldb_finalize(st);
    return buf;
}

static void composite_key(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE c(org TEXT COLLATE NOCASE, id INTEGER, name TEXT, "
             "PRIMARY KEY (org, id))");
    EXEC(db, "INSERT INTO c VALUES ('a', 1, 'old'), ('a', 2, 'old'), ('b', 1, 'old'), "
             "('c', 7, 'old')");
    ldb_source *src;
    struct server sv = { .nids = 0 };
    CHECK(ldb_source_attach(db, "c", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider,
                            &sv, &src) == LDB_OK);
    CHECK_STR(composite_rows(db), "a/1:old a/2:old b/1:old c/7:old ");
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(sv.nreqs, 1);
    const char *col;
    CHECK_INT(ldb_request_keys(sv.reqs[0], &col), 3); /* a, b, c: one param each */
    ldb_live *q; /* owns org a and b once the retention ends */
    CHECK(ldb_live_open(db, "SELECT * FROM c WHERE org IN ('a', 'b')", nop_change, NULL, &q) ==
          LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    /* the server: a/1 (and a new a/3), B/1 spelled in capitals; not a/2, not c/7 */
    static const struct crow server_rows[] = { { "a", 1 }, { "a", 3 }, { "B", 1 } };
    answer_composite(src, sv.reqs[0], server_rows, 3);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_STR(composite_rows(db), "a/1:sa1 a/3:sa3 B/1:sB1 ");
    ldb_source_stats st;
    ldb_source_stats_get(src, &st);
    CHECK_INT(st.requests_live, 1); /* the retention's was released; the query's stays */
    ldb_live_close(q);
    free_reqs(&sv);
    ldb_close(db);
}

/* Detaching before the revalidation settles ends the retention: the
 * request is released once, the rows stay. */
static void detach_before_settle(void)
{
    ldb *db = with_rows();
    struct server sv = { .nids = 0 };
    CHECK(ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider, &sv, &sv.src) == LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(sv.nreqs, 1);
    CHECK(ldb_source_detach(sv.src) == LDB_OK);
    CHECK(ldb_request_aborted(sv.reqs[0]));
    CHECK_STR(rows_of(db), "1:old1 2:old2 3:old3 ");
    free_reqs(&sv);
    ldb_close(db);
}

/* Attaching under allocation failure: LDB_NOMEM leaves the table as it
 * was (no source, nothing requested), and a later attach works. */
static void attach_nomem(void)
{
    int done = 0;
    for (uint64_t n = 1; !done && n < 5000; n++) {
        int64_t live = mem_live();
        ldb *db = with_rows();
        struct server sv = { .ids = { 1 }, .nids = 1 };
        mem_fail_at(n, 0);
        int rc = ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider, &sv, &sv.src);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "n %llu: %d", (unsigned long long)n, rc);
        if (rc == LDB_NOMEM) {
            EXEC(db, "UPDATE t SET name = 'local' WHERE id = 3"); /* still a local table */
            CHECK(ldb_source_attach(db, "t", LDB_SOURCE_ON_DEMAND | LDB_SOURCE_RETAIN_OWNED, &provider, &sv, &sv.src) ==
                  LDB_OK);
        }
        CHECK(ldb_source_poll(db) == LDB_OK);
        CHECKF(sv.nreqs == 1, "n %llu: rc %d, %d requests", (unsigned long long)n, rc, sv.nreqs);
        ldb_live *q;
        CHECK(ldb_live_open(db, "SELECT * FROM t WHERE id < 3", nop_change, NULL, &q) == LDB_OK);
        answer(&sv, sv.reqs[0], LDB_OK);
        CHECK(ldb_source_poll(db) == LDB_OK);
        CHECK_STR(rows_of(db), "1:s1 ");
        ldb_live_close(q);
        free_reqs(&sv);
        ldb_close(db);
        CHECKF(mem_live() == live, "n %llu: %lld blocks leaked", (unsigned long long)n,
               (long long)(mem_live() - live));
        done = failed == 0;
    }
    CHECK(done);
}

TEST_MAIN(T(revalidation), T(newer_writes_and_failure), T(retained_until_revalidated),
          T(when_not), T(composite_key), T(detach_before_settle), T(attach_nomem))
