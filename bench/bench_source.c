/*
 * bench_source.c - the demand plane's costs (livedb.h "sources"), each
 * against a baseline measured in the same run. Lines:
 *     bench source.sync.rows_per_s <r> rows/s        sync transactions applied
 *                                                    on the home thread
 *     bench source.sync_thread.rows_per_s <r> rows/s built and committed on a
 *                                                    producer thread, applied by
 *                                                    a poll(2) loop on ldb_source_fd
 *     bench source.insert.rows_per_s <r> rows/s      plain INSERT, local table
 *     bench ratio.source.sync_vs_insert <x> x        (target >= 0.8)
 *     bench ratio.source.sync_thread_vs_insert <x> x
 *     bench source.grouped.requests_open_1000 <n> requests
 *     bench source.grouped.requests_add_1000 <n> requests
 *     bench source.settle_empty.{median,p95} <us> us
 *     bench source.settle_100_rows.{median,p95} <us> us
 *     bench source.demand.heap_bytes <b> bytes       per active demand
 *     bench source.demand.count <n> demands
 * Every transaction holds 1,000 rows, and the same live query (an
 * aggregate reading every row) is open over the table in both runs. The
 * grouped figures open a query with a LIVE (query) child over an
 * on-demand table under 1,000 distinct parents, then add 1,000 parents in
 * one transaction: each should be ~1 request. A settle is timed on the
 * home thread (applied before the call returns, statuses published),
 * without rows and after a 100-row sync transaction of its request. The
 * heap per demand is the growth of the allocator's in-use bytes (glibc
 * mallinfo2) when that child query opens over the on-demand table, minus
 * the same query's over a local table, over its 1,000 demands.
 */
#include "bench_util.h"

#include "livedb.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(ldb *db, const char *sql)
{
    if (ldb_exec(db, sql, NULL, NULL) != LDB_OK)
        bench_die_db(db, sql);
}

/* ---- a provider on the home thread ------------------------------------------------------ */

/* It settles each request inside load_subset (settle_now) or keeps it for
 * the program to settle (last). */
struct prov {
    bool settle_now;
    ldb_request *last;         /* kept: a reference */
};

static int load(void *ctx, ldb_request *req)
{
    struct prov *p = ctx;
    if (p->settle_now)
        return ldb_request_settle(req, LDB_OK, NULL);
    ldb_request_unref(p->last);
    ldb_request_ref(req);
    p->last = req;
    return LDB_OK;
}

static void unload(void *ctx, ldb_request *req)
{
    struct prov *p = ctx;
    if (p->last == req) {
        ldb_request_unref(req);
        p->last = NULL;
    }
}

static void destroy(void *ctx)
{
    struct prov *p = ctx;
    ldb_request_unref(p->last);
    p->last = NULL;
}

static ldb_source *attach(ldb *db, const char *table, struct prov *p)
{
    static const ldb_provider ops = { load, unload, NULL, destroy };
    ldb_source *s;
    if (ldb_source_attach(db, table, LDB_SOURCE_ON_DEMAND, &ops, p, &s) != LDB_OK)
        bench_die_db(db, "attach");
    return s;
}

static uint64_t requests_of(ldb_source *s)
{
    ldb_source_stats st;
    ldb_source_stats_get(s, &st);
    return st.requests;
}

/* ---- (a) rows per second ------------------------------------------------------------------- */

#define TXN_ROWS 1000
#define SCHEMA "(id INTEGER PRIMARY KEY, grp INTEGER, v INTEGER, title TEXT)"
#define AGG "SELECT grp, count(*), sum(v) FROM %s GROUP BY grp"

static ldb_live *open_agg(ldb *db, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, AGG, table);
    ldb_live *q;
    if (ldb_live_open(db, sql, bench_count_changes, NULL, &q) != LDB_OK)
        bench_die_db(db, sql);
    return q;
}

static ldb_sync *sync_rows(ldb_source *s, ldb_request *req, int64_t from, int n, int64_t grp)
{
    ldb_sync *t;
    if (ldb_sync_begin(s, req, &t) != LDB_OK)
        bench_die_db(NULL, "ldb_sync_begin");
    for (int64_t id = from; id < from + n; id++) {
        ldb_sync_int64(t, 0, id);
        ldb_sync_int64(t, 1, grp >= 0 ? grp : id % 100);
        ldb_sync_int64(t, 2, id % 1000);
        ldb_sync_text(t, 3, "a title of some length", -1);
        if (ldb_sync_insert(t) != LDB_OK)
            bench_die_db(NULL, "ldb_sync_insert");
    }
    return t;
}

static double sync_home(int nrows)
{
    ldb *db;
    ldb_open(NULL, &db);
    run(db, "CREATE TABLE s" SCHEMA);
    struct prov p = { .settle_now = true };
    ldb_source *s = attach(db, "s", &p);
    ldb_live *q = open_agg(db, "s");
    uint64_t t0 = bench_ns();
    for (int64_t i = 0; i < nrows; i += TXN_ROWS)
        if (ldb_sync_commit(sync_rows(s, NULL, i, TXN_ROWS, -1), NULL) != LDB_OK)
            bench_die_db(db, "ldb_sync_commit");
    double secs = (double)(bench_ns() - t0) / 1e9;
    if (ldb_live_count(q) != 100)
        bench_die_db(db, "sync rows missing");
    ldb_live_close(q);
    ldb_close(db);
    return nrows / secs;
}

struct producer {
    ldb_source *s;
    int nrows;
};

static void *produce(void *arg)
{
    struct producer *pr = arg;
    for (int64_t i = 0; i < pr->nrows; i += TXN_ROWS)
        if (ldb_sync_commit(sync_rows(pr->s, NULL, i, TXN_ROWS, -1), NULL) != LDB_OK)
            bench_die_db(NULL, "ldb_sync_commit");
    return NULL;
}

static double sync_thread(int nrows)
{
    ldb *db;
    ldb_open(NULL, &db);
    run(db, "CREATE TABLE s" SCHEMA);
    struct prov p = { .settle_now = true };
    struct producer pr = { attach(db, "s", &p), nrows };
    ldb_live *q = open_agg(db, "s");
    ldb_source_stats st;
    int fd = ldb_source_fd(db);
    pthread_t th;
    uint64_t t0 = bench_ns();
    if (pthread_create(&th, NULL, produce, &pr))
        bench_die_db(NULL, "pthread_create");
    do {
        struct pollfd pfd = { fd, POLLIN, 0 };
        if (poll(&pfd, 1, 100) > 0)
            ldb_source_poll(db);
        ldb_source_stats_get(pr.s, &st);
    } while (st.rows_written < (uint64_t)nrows);
    double secs = (double)(bench_ns() - t0) / 1e9;
    pthread_join(th, NULL);
    ldb_live_close(q);
    ldb_close(db);
    return nrows / secs;
}

static double insert_local(int nrows)
{
    ldb *db;
    ldb_open(NULL, &db);
    run(db, "CREATE TABLE l" SCHEMA);
    ldb_live *q = open_agg(db, "l");
    ldb_stmt *ins;
    if (ldb_prepare(db, "INSERT INTO l VALUES (?, ?, ?, ?)", -1, &ins, NULL) != LDB_OK)
        bench_die_db(db, "prepare");
    uint64_t t0 = bench_ns();
    for (int64_t i = 0; i < nrows; i += TXN_ROWS) {
        run(db, "BEGIN");
        for (int64_t id = i; id < i + TXN_ROWS; id++) {
            ldb_bind_int64(ins, 1, id);
            ldb_bind_int64(ins, 2, id % 100);
            ldb_bind_int64(ins, 3, id % 1000);
            ldb_bind_text(ins, 4, "a title of some length", -1);
            if (ldb_step(ins) != LDB_DONE)
                bench_die_db(db, "insert");
            ldb_reset(ins);
        }
        run(db, "COMMIT");
    }
    double secs = (double)(bench_ns() - t0) / 1e9;
    ldb_finalize(ins);
    ldb_live_close(q);
    ldb_close(db);
    return nrows / secs;
}

static void rows_per_second(void)
{
    int nrows = bench_quick ? 20000 : 200000;
    double base = insert_local(nrows), home = sync_home(nrows), thread = sync_thread(nrows);
    bench_print("source.sync.rows_per_s", home, "rows/s");
    bench_print("source.sync_thread.rows_per_s", thread, "rows/s");
    bench_print("source.insert.rows_per_s", base, "rows/s");
    bench_print("ratio.source.sync_vs_insert", home / base, "x");
    bench_print("ratio.source.sync_thread_vs_insert", thread / base, "x");
}

/* ---- (b) grouped requests, (d) memory per demand --------------------------------------------- */

#define NPARENTS 1000
#define CHILD "SELECT u.id, LIVE(SELECT i.id, i.title FROM %s i WHERE i.owner = u.id) FROM u"

static void add_parents(ldb *db, int from, int n)
{
    char sql[64];
    run(db, "BEGIN");
    for (int i = from; i < from + n; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO u VALUES (%d)", i);
        run(db, sql);
    }
    run(db, "COMMIT");
}

static ldb_live *open_child(ldb *db, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, CHILD, table);
    ldb_live *q;
    if (ldb_live_open(db, sql, NULL, NULL, &q) != LDB_OK)
        bench_die_db(db, sql);
    return q;
}

static void grouped_and_memory(void)
{
    ldb *db;
    ldb_open(NULL, &db);
    run(db, "CREATE TABLE u(id INTEGER PRIMARY KEY)");
    run(db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, owner INTEGER, title TEXT)");
    run(db, "CREATE TABLE local_issues(id INTEGER PRIMARY KEY, owner INTEGER, title TEXT)");
    add_parents(db, 0, NPARENTS);
    struct prov p = { .settle_now = true };
    ldb_source *s = attach(db, "issues", &p);

    size_t h0 = bench_heap_bytes();
    ldb_live *local = open_child(db, "local_issues");
    size_t h1 = bench_heap_bytes();
    uint64_t r0 = requests_of(s);
    ldb_live *q = open_child(db, "issues");
    size_t h2 = bench_heap_bytes();
    uint64_t r1 = requests_of(s);
    ldb_source_stats st;
    ldb_source_stats_get(s, &st);
    bench_print("source.grouped.requests_open_1000", (double)(r1 - r0), "requests");
    bench_print("source.demand.count", (double)st.demands, "demands");
    double per = ((double)(h2 - h1) - (double)(h1 - h0)) / (double)NPARENTS;
    bench_print("source.demand.heap_bytes", per, "bytes");
    ldb_live_close(local); /* its parents' buckets would activate too */

    add_parents(db, NPARENTS, NPARENTS);
    bench_print("source.grouped.requests_add_1000", (double)(requests_of(s) - r1), "requests");
    ldb_live_close(q);
    ldb_close(db);
}

/* ---- (c) us per settle ------------------------------------------------------------------------ */

static void drop_rows(ldb_source *s, int64_t from, int n)
{
    ldb_sync *t;
    if (ldb_sync_begin(s, NULL, &t) != LDB_OK)
        bench_die_db(NULL, "ldb_sync_begin");
    for (int64_t id = from; id < from + n; id++) {
        ldb_sync_int64(t, 0, id);
        ldb_sync_delete(t);
    }
    if (ldb_sync_commit(t, NULL) != LDB_OK)
        bench_die_db(NULL, "ldb_sync_commit");
}

static void settles(void)
{
    int reps = bench_quick ? 300 : 2000;
    ldb *db;
    ldb_open(NULL, &db);
    run(db, "CREATE TABLE s" SCHEMA);
    struct prov p = { .settle_now = false };
    ldb_source *s = attach(db, "s", &p);
    double *t_empty = calloc((size_t)reps, sizeof *t_empty);
    double *t_rows = calloc((size_t)reps, sizeof *t_rows);
    for (int i = 0; i < 2 * reps; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "SELECT id, v FROM s WHERE grp = %d", i);
        ldb_live *q;
        if (ldb_live_open(db, sql, NULL, NULL, &q) != LDB_OK || !p.last)
            bench_die_db(db, sql);
        bool rows = i % 2;
        uint64_t t0 = bench_ns();
        if (rows && ldb_sync_commit(sync_rows(s, p.last, (int64_t)i * 100, 100, i), NULL))
            bench_die_db(db, "ldb_sync_commit");
        ldb_request_settle(p.last, LDB_OK, NULL);
        double us = (double)(bench_ns() - t0) / 1e3;
        (rows ? t_rows : t_empty)[i / 2] = us;
        if (ldb_live_status(q, NULL) != LDB_STATUS_READY || ldb_live_count(q) != (rows ? 100 : 0))
            bench_die_db(db, "settle not applied");
        ldb_live_close(q);
        if (rows) /* the cache stays small: a live open scans the table */
            drop_rows(s, (int64_t)i * 100, 100);
    }
    bench_print("source.settle_empty.median", bench_quantile(t_empty, (size_t)reps, 0.5), "us");
    bench_print("source.settle_empty.p95", bench_quantile(t_empty, (size_t)reps, 0.95), "us");
    bench_print("source.settle_100_rows.median", bench_quantile(t_rows, (size_t)reps, 0.5), "us");
    bench_print("source.settle_100_rows.p95", bench_quantile(t_rows, (size_t)reps, 0.95), "us");
    free(t_empty);
    free(t_rows);
    ldb_close(db);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    printf("# bench_source: sync transactions, grouped requests, settles, demand memory\n");
    if (bench_selected(argc, argv, "rows"))
        rows_per_second();
    if (bench_selected(argc, argv, "grouped"))
        grouped_and_memory();
    if (bench_selected(argc, argv, "settle"))
        settles();
    return 0;
}
