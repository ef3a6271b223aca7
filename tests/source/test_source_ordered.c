/*
 * test_source_ordered.c - ordered loading against SQLite: live windows
 * (ORDER BY score [DESC], id LIMIT l OFFSET o) over an on-demand table
 * whose truth is an SQLite table. The provider answers each request with
 * SQLite itself (its ORDER BY ... LIMIT breaks ties at random, so pages
 * cut tie groups anywhere) in a random order, sometimes fails one, and a
 * change feed forwards random source changes. Checked after every step:
 * - a READY window equals SQLite's (the same SQL);
 * - every batch after a query's first leaves a window equal to SQLite's
 *   at that moment (a window is published whole, never half loaded);
 * - the cache holds far fewer rows than the source once windows are
 *   small (pages, not full loads);
 * - closing everything returns the counters to zero (law 13).
 * LDB_SEED replays a run; LDB_TEST_SCALE lengthens it.
 */
#include "livedb.h"
#include "test.h"
#include "test_db.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NROWS 80
#define MAXQ 3

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

struct world;

struct wq {
    struct world *w;
    ldb_live *q;
    int grp, desc;
    int64_t off, lim;
    int batches;
};

struct world {
    ldb *db;
    sqlite3 *sq;
    ldb_source *src;
    ldb_request *pend[256];
    int npend;
    struct wq qs[MAXQ];
    int next_id;
    bool in_check;
};

static void sq_exec(sqlite3 *sq, const char *sql)
{
    char *err = NULL;
    CHECKF(sqlite3_exec(sq, sql, NULL, NULL, &err) == SQLITE_OK, "%s: %s", sql, err);
}

static int load(void *ctx, ldb_request *r)
{
    struct world *w = ctx;
    CHECK(w->npend < 256);
    ldb_request_ref(r);
    w->pend[w->npend++] = r;
    return LDB_OK;
}

static void unload(void *ctx, ldb_request *r)
{
    (void)ctx;
    (void)r;
}

static void drop_pending(struct world *w, int i)
{
    ldb_request_unref(w->pend[i]);
    w->pend[i] = w->pend[--w->npend];
}

/* The rows of r in SQLite, written and settled. */
static void serve(struct world *w, int i)
{
    ldb_request *r = w->pend[i];
    if (ldb_request_aborted(r)) {
        drop_pending(w, i);
        return;
    }
    const char *col;
    int desc;
    int64_t limit;
    char sql[600];
    bool ordered = ldb_request_order(r, &col, &desc, &limit);
    /* a cursor is the value the predicate's last condition compares with */
    const ldb_value *cur = ldb_request_cursor(r);
    CHECK(!cur || ordered);
    if (cur && ldb_value_type(cur) != LDB_NULL)
        CHECK(ldb_value_int64(cur) ==
              ldb_value_int64(ldb_request_param(r, ldb_request_param_count(r) - 1)));
    if (ordered)
        snprintf(sql, sizeof sql,
                 "SELECT id, score, grp FROM issues WHERE %s ORDER BY \"%s\" %s, random() LIMIT %lld",
                 ldb_request_sql(r), col, desc ? "DESC" : "ASC", (long long)limit);
    else
        snprintf(sql, sizeof sql, "SELECT id, score, grp FROM issues WHERE %s",
                 ldb_request_sql(r));
    sqlite3_stmt *st;
    CHECKF(sqlite3_prepare_v2(w->sq, sql, -1, &st, NULL) == SQLITE_OK, "%s", sql);
    for (int k = 0; k < ldb_request_param_count(r); k++) {
        const ldb_value *v = ldb_request_param(r, k);
        if (ldb_value_type(v) == LDB_NULL)
            sqlite3_bind_null(st, k + 1);
        else
            sqlite3_bind_int64(st, k + 1, ldb_value_int64(v));
    }
    ldb_sync *t;
    CHECK(ldb_sync_begin(w->src, r, &t) == LDB_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < 3; c++) {
            if (sqlite3_column_type(st, c) == SQLITE_NULL)
                ldb_sync_null(t, c);
            else
                ldb_sync_int64(t, c, sqlite3_column_int64(st, c));
        }
        ldb_sync_upsert(t);
    }
    sqlite3_finalize(st);
    drop_pending(w, i); /* before the settle's callbacks may make more */
    ldb_request_ref(r);
    ldb_sync_commit(t, NULL);
    ldb_request_settle(r, LDB_OK, NULL);
    ldb_request_unref(r);
}

static void window_sql(const struct wq *x, bool sqlite, char *out, size_t n)
{
    (void)sqlite;
    snprintf(out, n,
             "SELECT id, score FROM issues WHERE grp = %d ORDER BY score %s, id LIMIT %lld OFFSET %lld",
             x->grp, x->desc ? "DESC" : "ASC", (long long)x->lim, (long long)x->off);
}

static int add_row(void *ctx, const ldb_row *r)
{
    char *s = ctx;
    size_t len = strlen(s);
    char v[40];
    ldb_row_format(r, 1, v, sizeof v);
    snprintf(s + len, 4000 - len, "%lld:%s ", (long long)ldb_row_int64(r, 0), v);
    return 0;
}

static void expect_window(struct wq *x, const char *when)
{
    char want[4000] = "", got[4000] = "", sql[300];
    window_sql(x, true, sql, sizeof sql);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(x->w->sq, sql, -1, &st, NULL) == SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        size_t len = strlen(want);
        if (sqlite3_column_type(st, 1) == SQLITE_NULL)
            snprintf(want + len, sizeof want - len, "%lld:NULL ", sqlite3_column_int64(st, 0));
        else
            snprintf(want + len, sizeof want - len, "%lld:%lld ", sqlite3_column_int64(st, 0),
                     sqlite3_column_int64(st, 1));
    }
    sqlite3_finalize(st);
    CHECK(ldb_live_read(x->q, add_row, got) == LDB_OK);
    CHECKF(strcmp(want, got) == 0, "%s: %s\n  livedb: %s\n  sqlite: %s", when, sql, got, want);
}

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct wq *x = ctx;
    (void)c;
    (void)n;
    if (!x->q)
        x->q = q; /* the first batch comes before ldb_live_open returns */
    if (x->batches++ > 0)
        expect_window(x, "a published window");
}

static void open_query(struct world *w, struct wq *x)
{
    memset(x, 0, sizeof *x);
    x->w = w;
    x->grp = (int)rnd(3);
    x->desc = (int)rnd(2);
    x->lim = 1 + rnd(10);
    x->off = rnd(4);
    char sql[300];
    window_sql(x, false, sql, sizeof sql);
    ldb_live *q;
    CHECKF(ldb_live_open(w->db, sql, on_change, x, &q) == LDB_OK, "%s", ldb_errmsg(w->db));
    x->q = q;
}

static void source_change(struct world *w)
{
    char sql[200];
    int id = (int)rnd(NROWS + 20), score = (int)rnd(14) - 1, grp = (int)rnd(3);
    int kind = (int)rnd(3);
    ldb_sync *t;
    CHECK(ldb_sync_begin(w->src, NULL, &t) == LDB_OK);
    ldb_sync_int64(t, 0, id);
    if (kind == 0) {
        snprintf(sql, sizeof sql, "DELETE FROM issues WHERE id = %d", id);
        ldb_sync_delete(t);
    } else {
        if (score < 0)
            snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO issues VALUES (%d, NULL, %d)", id, grp);
        else
            snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO issues VALUES (%d, %d, %d)", id, score,
                     grp);
        if (score < 0)
            ldb_sync_null(t, 1);
        else
            ldb_sync_int64(t, 1, score);
        ldb_sync_int64(t, 2, grp);
        ldb_sync_upsert(t);
    }
    sq_exec(w->sq, sql);
    CHECK(ldb_sync_commit(t, NULL) == LDB_OK);
}

static void step(struct world *w)
{
    uint32_t a = rnd(100);
    if (a < 55 && w->npend) {
        serve(w, (int)rnd((uint32_t)w->npend));
    } else if (a < 60 && w->npend) {
        int i = (int)rnd((uint32_t)w->npend);
        ldb_request *r = w->pend[i];
        ldb_request_ref(r); /* held across the settle's callbacks */
        drop_pending(w, i);
        ldb_request_settle(r, LDB_ERROR, "refused");
        ldb_request_unref(r);
    } else if (a < 75) {
        source_change(w);
    } else if (a < 85) {
        struct wq *x = &w->qs[rnd(MAXQ)];
        if (x->q) {
            x->lim = 1 + rnd(12);
            x->off = rnd(5);
            CHECK(ldb_live_set_window(x->q, x->off, x->lim) == LDB_OK);
        }
    } else if (a < 92) {
        for (int i = 0; i < MAXQ; i++)
            if (w->qs[i].q && ldb_live_status(w->qs[i].q, NULL) == LDB_STATUS_ERROR)
                CHECK(ldb_live_retry(w->qs[i].q) == LDB_OK);
    } else {
        struct wq *x = &w->qs[rnd(MAXQ)];
        if (x->q) {
            ldb_live_close(x->q);
            x->q = NULL;
        } else {
            open_query(w, x);
        }
    }
    for (int i = 0; i < MAXQ; i++)
        if (w->qs[i].q && ldb_live_status(w->qs[i].q, NULL) == LDB_STATUS_READY)
            expect_window(&w->qs[i], "a READY window");
}

static void ordered_windows_match_sqlite(void)
{
    rng_state = test_seed() | 1;
    struct world w;
    memset(&w, 0, sizeof w);
    CHECK(sqlite3_open(":memory:", &w.sq) == SQLITE_OK);
    sq_exec(w.sq, "CREATE TABLE issues(id INTEGER PRIMARY KEY, score INTEGER, grp INTEGER)");
    for (int i = 0; i < NROWS; i++) {
        char sql[120];
        int score = (int)rnd(14) - 1;
        if (score < 0)
            snprintf(sql, sizeof sql, "INSERT INTO issues VALUES (%d, NULL, %d)", i, (int)rnd(3));
        else
            snprintf(sql, sizeof sql, "INSERT INTO issues VALUES (%d, %d, %d)", i, score,
                     (int)rnd(3));
        sq_exec(w.sq, sql);
    }
    CHECK(ldb_open(NULL, &w.db) == LDB_OK);
    EXEC(w.db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, score INTEGER, grp INTEGER)");
    ldb_provider v = { load, unload, NULL, NULL };
    CHECK(ldb_source_attach(w.db, "issues", LDB_SOURCE_ON_DEMAND, &v, &w, &w.src) == LDB_OK);
    for (int i = 0; i < MAXQ; i++)
        open_query(&w, &w.qs[i]);
    int steps = 1500 * test_scale();
    for (int s = 0; s < steps; s++)
        step(&w);
    /* quiescence: everything served, every query READY and right */
    for (int guard = 0; guard < 1000; guard++) {
        for (int i = 0; i < MAXQ; i++)
            if (w.qs[i].q && ldb_live_status(w.qs[i].q, NULL) == LDB_STATUS_ERROR)
                CHECK(ldb_live_retry(w.qs[i].q) == LDB_OK);
        if (!w.npend)
            break;
        serve(&w, 0);
    }
    for (int i = 0; i < MAXQ; i++) {
        if (!w.qs[i].q)
            continue;
        CHECKF(ldb_live_status(w.qs[i].q, NULL) == LDB_STATUS_READY, "query %d not READY", i);
        expect_window(&w.qs[i], "at quiescence");
        ldb_live_close(w.qs[i].q);
    }
    ldb_source_stats st;
    ldb_source_stats_get(w.src, &st);
    CHECKF(st.demands == 0 && st.requests_live == 0, "law 13: %llu demands, %llu requests left",
           (unsigned long long)st.demands, (unsigned long long)st.requests_live);
    while (w.npend)
        drop_pending(&w, 0);
    ldb_close(w.db);
    sqlite3_close(w.sq);
}

/* Small windows over a large source load a small part of it. */
static void pages_load_a_small_part(void)
{
    rng_state = 7;
    struct world w;
    memset(&w, 0, sizeof w);
    CHECK(sqlite3_open(":memory:", &w.sq) == SQLITE_OK);
    sq_exec(w.sq, "CREATE TABLE issues(id INTEGER PRIMARY KEY, score INTEGER, grp INTEGER)");
    sq_exec(w.sq, "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999) "
                  "INSERT INTO issues SELECT i, i % 1000, i % 3 FROM n");
    CHECK(ldb_open(NULL, &w.db) == LDB_OK);
    EXEC(w.db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, score INTEGER, grp INTEGER)");
    ldb_provider v = { load, unload, NULL, NULL };
    CHECK(ldb_source_attach(w.db, "issues", LDB_SOURCE_ON_DEMAND, &v, &w, &w.src) == LDB_OK);
    struct wq *x = &w.qs[0];
    memset(x, 0, sizeof *x);
    x->w = &w;
    x->lim = 20;
    CHECK(ldb_live_open(w.db, "SELECT id, score FROM issues WHERE grp = 0 ORDER BY score, id LIMIT 20",
                        on_change, x, &x->q) == LDB_OK);
    int batches = x->batches;
    int requests = 0;
    while (w.npend) {
        CHECKF(x->batches == batches, "a window was published before it was loaded");
        serve(&w, 0);
        requests++;
    }
    CHECK(x->batches == batches + 1 && ldb_live_status(x->q, NULL) == LDB_STATUS_READY);
    expect_window(x, "loaded");
    ldb_source_stats st;
    ldb_source_stats_get(w.src, &st);
    CHECKF(st.rows < 100, "%llu rows loaded for a window of 20 (of 10000)",
           (unsigned long long)st.rows);
    CHECKF(requests <= 4, "%d requests for one window", requests);
    ldb_live_close(x->q);
    while (w.npend)
        drop_pending(&w, 0);
    ldb_close(w.db);
    sqlite3_close(w.sq);
}

TEST_MAIN(T(ordered_windows_match_sqlite), T(pages_load_a_small_part))
