/*
 * bench_live.c - the "issues" workloads of ../shared/bench/WORKLOADS.md for
 * live queries, against SQLite doing the same writes and re-running the
 * query, and against livedb doing the writes with no live query open.
 *
 * Each timed operation is one write (or one insert + delete pair) plus the
 * result visibly updated: for livedb the live query's callback has run by
 * the time the write returns; for SQLite the query is re-run and its rows
 * read. Lines:
 *     bench <workload>.<case>.<n>.<stat> <value> <unit>          livedb
 *     bench base.<workload>.<case>.<n>.<stat> ...                livedb, no live query
 *     bench sqlite.<workload>.<case>.<n>.<stat> ...              SQLite, same run
 *     bench ratio.<workload>.<case>.<n> <x> x                    livedb / SQLite
 * plus <workload>.<n>.open_ms and <workload>.<n>.bytes (the query's own
 * count) per live query, <workload>.<n>.heap_bytes (the heap's growth
 * across the open) and <workload>.bytes_per_result_row (that per result
 * row),
 * sqlite.<workload>.<n>.query_ms (SQLite running the query once on the same
 * data) and ratio.<workload>.hydrate.<n> (open_ms / query_ms).
 *
 * The "bulk" section times one transaction of n issue inserts with the
 * list, join and group live queries open (each query's callback run by the
 * time COMMIT returns) against SQLite inserting the same rows and then
 * running the three queries once, and livedb with no live query open:
 *     bench bulk.<n>.rows_per_s, base.bulk..., sqlite.bulk..., ratio.bulk.<n>
 * (time / SQLite's time).
 *
 * LDB_BENCH_LIVE_SIZES (comma-separated) replaces the sizes;
 * LDB_BENCH_LIVE_ITERS=0 skips the timed writes (hydration figures only).
 */
#include "bench_util.h"

#include "livedb.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 20261130u

static uint64_t rng_state;

static uint64_t next_rand(void)
{
    return bench_rand(&rng_state);
}

/* ---- the two engines behind one interface ---------------------------------- */

static struct bench_engine engine_open(bool sqlite)
{
    struct bench_engine e = { sqlite, NULL, NULL };
    if (sqlite ? sqlite3_open(":memory:", &e.lite) != SQLITE_OK : ldb_open(NULL, &e.db) != LDB_OK)
        bench_die("open", sqlite ? "SQLite" : "livedb");
    return e;
}

/* ---- data ---------------------------------------------------------------------- */

static void insert_issue(void *ctx, const struct bench_issue *r)
{
    struct bench_stmt *s = ctx;
    bench_bind_int(s, 1, r->id);
    bench_bind_text(s, 2, r->title);
    bench_bind_text(s, 3, r->status);
    bench_bind_int(s, 4, r->priority);
    bench_bind_int(s, 5, r->created);
    bench_bind_int(s, 6, r->assignee);
    bench_step_all(s);
}

static void insert_issues(struct bench_engine *e, int n)
{
    struct bench_stmt s = bench_prepare(e, "INSERT INTO issues VALUES (?, ?, ?, ?, ?, ?)");
    bench_issues(n, SEED, insert_issue, &s);
    bench_finalize(&s);
}

/* Creates both tables and their indexes, fills users, and inserts n issues
 * in the same transaction. */
static void load_issues(struct bench_engine *e, int n, const char *indexes)
{
    bench_run(e, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
    bench_run(e, "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT, "
           "priority INTEGER, created INTEGER, assignee INTEGER)");
    bench_run(e, indexes);
    bench_run(e, "BEGIN");
    struct bench_stmt u = bench_prepare(e, "INSERT INTO users VALUES (?, ?)");
    char text[64];
    for (int i = 1; i <= BENCH_USERS; i++) {
        snprintf(text, sizeof text, "User %d", i);
        bench_bind_int(&u, 1, i);
        bench_bind_text(&u, 2, text);
        bench_step_all(&u);
    }
    bench_finalize(&u);
    insert_issues(e, n);
    bench_run(e, "COMMIT");
}

/* ---- timing ---------------------------------------------------------------------- */

struct sample {
    double *v;
    size_t n, cap;
};

static void sample_add(struct sample *s, double ns)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = ns;
}

static void report(const char *prefix, const char *name, int n, struct sample *s, double *median)
{
    char line[160];
    double med = bench_quantile(s->v, s->n, 0.5), p95 = bench_quantile(s->v, s->n, 0.95);
    snprintf(line, sizeof line, "%s%s.%d.median", prefix, name, n);
    bench_print(line, med / 1000.0, "us");
    snprintf(line, sizeof line, "%s%s.%d.p95", prefix, name, n);
    bench_print(line, p95 / 1000.0, "us");
    if (median)
        *median = med;
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* A workload run on one engine: opens what it needs, then times writes.
 * mode 0 livedb with the live query, 1 livedb without, 2 SQLite. */
struct workload {
    const char *name;
    const char *query;
    const char *indexes;
    void (*writes)(struct bench_engine *e, struct bench_stmt *q, int n, int iters, const char *prefix,
                   double *med);
};

static int64_t next_id, next_created;

static void time_op(struct bench_stmt *q, struct sample *s, uint64_t t0)
{
    if (q)
        bench_step_all(q); /* SQLite: the query re-run */
    sample_add(s, (double)(bench_ns() - t0));
}

static void list_writes(struct bench_engine *e, struct bench_stmt *q, int n, int iters, const char *prefix,
                        double *med)
{
    struct bench_stmt ins = bench_prepare(e, "INSERT INTO issues VALUES (?, 'new', 'open', 1, ?, 1)");
    struct bench_stmt del = bench_prepare(e, "DELETE FROM issues WHERE id = ?");
    struct bench_stmt upd = bench_prepare(e, "UPDATE issues SET title = ? WHERE id = ?");
    struct sample pair = { 0 }, out = { 0 }, in = { 0 };
    char title[32];
    for (int i = 0; i < iters + iters / 10; i++) {
        /* pair: a new open issue above every other, then delete the one
         * inserted before it (a visible row) */
        uint64_t t0 = bench_ns();
        bench_bind_int(&ins, 1, next_id);
        bench_bind_int(&ins, 2, next_created);
        bench_step_all(&ins);
        bench_bind_int(&del, 1, next_id - 1);
        bench_step_all(&del);
        next_id++;
        next_created += 60000;
        if (i >= iters / 10)
            time_op(q, &pair, t0);
        /* update_out: an open row far outside the window (original data) */
        snprintf(title, sizeof title, "t%d", i);
        t0 = bench_ns();
        bench_bind_text(&upd, 1, title);
        bench_bind_int(&upd, 2, 1 + (int64_t)(next_rand() % (uint64_t)(n / 2)));
        bench_step_all(&upd);
        if (i >= iters / 10)
            time_op(q, &out, t0);
        /* update_in: the newest row, in the window */
        t0 = bench_ns();
        bench_bind_text(&upd, 1, title);
        bench_bind_int(&upd, 2, next_id - 1);
        bench_step_all(&upd);
        if (i >= iters / 10)
            time_op(q, &in, t0);
    }
    report(prefix, "list.pair", n, &pair, &med[0]);
    report(prefix, "list.update_out", n, &out, &med[1]);
    report(prefix, "list.update_in", n, &in, &med[2]);
    bench_finalize(&ins);
    bench_finalize(&del);
    bench_finalize(&upd);
}

/* The two cases run as separate loops: a title update timed right after
 * a rename would also pay for freeing the rename's thousand replaced rows
 * (the allocator consolidates them at its next large request). */
static void join_writes(struct bench_engine *e, struct bench_stmt *q, int n, int iters, const char *prefix,
                        double *med)
{
    struct bench_stmt title = bench_prepare(e, "UPDATE issues SET title = ? WHERE id = ?");
    struct bench_stmt name = bench_prepare(e, "UPDATE users SET name = ? WHERE id = ?");
    struct sample a = { 0 }, b = { 0 };
    char text[32];
    /* SQLite re-runs the whole join after every write: fewer iterations */
    int writes = q ? iters / 20 + 10 : iters;
    for (int i = 0; i < writes + writes / 10; i++) {
        snprintf(text, sizeof text, "T%d", i);
        uint64_t t0 = bench_ns();
        bench_bind_text(&title, 1, text);
        bench_bind_int(&title, 2, 1 + (int64_t)(next_rand() % (uint64_t)n));
        bench_step_all(&title);
        if (i >= writes / 10)
            time_op(q, &a, t0);
    }
    for (int i = 0; i < writes + writes / 10; i++) {
        snprintf(text, sizeof text, "N%d", i);
        uint64_t t0 = bench_ns();
        bench_bind_text(&name, 1, text);
        bench_bind_int(&name, 2, 1 + (int64_t)(next_rand() % 1000));
        bench_step_all(&name);
        if (i >= writes / 10)
            time_op(q, &b, t0);
    }
    report(prefix, "join.issue_title", n, &a, &med[0]);
    report(prefix, "join.user_name", n, &b, &med[1]);
    bench_finalize(&title);
    bench_finalize(&name);
}

static void group_writes(struct bench_engine *e, struct bench_stmt *q, int n, int iters, const char *prefix,
                         double *med)
{
    struct bench_stmt ins = bench_prepare(e, "INSERT INTO issues VALUES (?, 'g', ?, ?, ?, 1)");
    struct sample s = { 0 };
    int reps = q ? iters / 20 + 10 : iters; /* SQLite re-aggregates everything */
    for (int i = 0; i < reps + reps / 10; i++) {
        uint64_t t0 = bench_ns();
        bench_bind_int(&ins, 1, next_id++);
        bench_bind_text(&ins, 2, next_rand() % 3 < 2 ? "open" : "closed");
        bench_bind_int(&ins, 3, (int64_t)(next_rand() % 10));
        bench_bind_int(&ins, 4, next_created += 60000);
        bench_step_all(&ins);
        if (i >= reps / 10)
            time_op(q, &s, t0);
    }
    report(prefix, "group.insert", n, &s, &med[0]);
    bench_finalize(&ins);
}

static const struct workload workloads[] = {
    { "list", "SELECT * FROM issues WHERE status = 'open' ORDER BY created DESC LIMIT 50",
      "CREATE INDEX issues_created ON issues(created)", list_writes },
    { "join", "SELECT i.id, i.title, u.name FROM issues i JOIN users u ON u.id = i.assignee",
      "CREATE INDEX issues_created ON issues(created); CREATE INDEX issues_status ON "
      "issues(status); CREATE INDEX issues_assignee ON issues(assignee)",
      join_writes },
    { "group", "SELECT status, count(*), max(priority) FROM issues GROUP BY status",
      "CREATE INDEX issues_created ON issues(created)", group_writes },
};

static const char *case_names[][3] = { { "list.pair", "list.update_out", "list.update_in" },
                                       { "join.issue_title", "join.user_name", NULL },
                                       { "group.insert", NULL, NULL } };

/* What the open live query holds, measured on the heap (the counted
 * retained_bytes misses allocator overhead and counts rows it shares with
 * the tables): the heap's growth across the open, in all and per result
 * row. */
static void heap_figures(const char *wl, int n, size_t heap, const ldb_live_stats *st)
{
    char name[128];
    snprintf(name, sizeof name, "%s.%d.heap_bytes", wl, n);
    bench_print(name, (double)heap, "bytes");
    if (st->result_rows <= 0)
        return;
    snprintf(name, sizeof name, "%s.bytes_per_result_row", wl);
    bench_print(name, (double)heap / (double)st->result_rows, "B");
}

static void run_workload(int w, int n, int iters)
{
    const struct workload *wl = &workloads[w];
    double live[3] = { 0 }, base[3] = { 0 }, lite[3] = { 0 };
    double open_ms = 0, query_ms = 0;
    char name[128];
    for (int mode = 0; mode < 3; mode++) {
        struct bench_engine e = engine_open(mode == 2);
        load_issues(&e, n, wl->indexes);
        next_id = n + 1;
        next_created = BENCH_CREATED0 + (int64_t)n * 60000;
        rng_state = SEED ^ (uint64_t)mode;
        ldb_live *lq = NULL;
        if (mode == 0) {
            size_t heap0 = bench_heap_bytes();
            uint64_t t0 = bench_ns();
            if (ldb_live_open(e.db, wl->query, bench_count_changes, NULL, &lq) != LDB_OK)
                bench_die(wl->query, ldb_errmsg(e.db));
            open_ms = (double)(bench_ns() - t0) / 1e6;
            snprintf(name, sizeof name, "%s.%d.open_ms", wl->name, n);
            bench_print(name, open_ms, "ms");
            ldb_live_stats st;
            ldb_live_stats_get(lq, &st);
            snprintf(name, sizeof name, "%s.%d.bytes", wl->name, n);
            bench_print(name, (double)st.retained_bytes, "bytes");
            heap_figures(wl->name, n, bench_heap_bytes() - heap0, &st);
        }
        struct bench_stmt q = { 0 };
        if (mode == 2) {
            q = bench_prepare(&e, wl->query);
            uint64_t t0 = bench_ns();
            bench_step_all(&q);
            query_ms = (double)(bench_ns() - t0) / 1e6;
            snprintf(name, sizeof name, "sqlite.%s.%d.query_ms", wl->name, n);
            bench_print(name, query_ms, "ms");
        }
        if (mode == 1 && iters == 0)
            continue; /* livedb without a live query: only timed writes */
        if (iters > 0)
            wl->writes(&e, mode == 2 ? &q : NULL, n, iters,
                   mode == 0 ? "" : mode == 1 ? "base." : "sqlite.",
                   mode == 0 ? live : mode == 1 ? base : lite);
        if (lq && ldb_live_error(lq, NULL) != LDB_OK)
            bench_die("live query failed", wl->query);
        if (mode == 2) {
            bench_finalize(&q);
            sqlite3_close(e.lite);
        } else {
            ldb_live_close(lq);
            ldb_close(e.db);
        }
    }
    snprintf(name, sizeof name, "ratio.%s.hydrate.%d", wl->name, n);
    bench_print(name, open_ms / query_ms, "x");
    for (int c = 0; iters > 0 && c < 3 && case_names[w][c]; c++) {
        snprintf(name, sizeof name, "ratio.%s.%d", case_names[w][c], n);
        bench_print(name, live[c] / lite[c], "x");
        snprintf(name, sizeof name, "ratio.base.%s.%d", case_names[w][c], n);
        bench_print(name, live[c] / base[c], "x");
    }
}

/* ---- bulk: one large transaction with the three live queries open ---------------- */

static void run_bulk(int n)
{
    double secs[3] = { 0 };
    static const char *const prefix[3] = { "", "base.", "sqlite." };
    char name[128];
    for (int mode = 0; mode < 3; mode++) {
        struct bench_engine e = engine_open(mode == 2);
        load_issues(&e, 0, workloads[1].indexes);
        ldb_live *lq[3] = { NULL, NULL, NULL };
        for (int w = 0; mode == 0 && w < 3; w++)
            if (ldb_live_open(e.db, workloads[w].query, bench_count_changes, NULL, &lq[w]) !=
                LDB_OK)
                bench_die(workloads[w].query, ldb_errmsg(e.db));
        uint64_t seen = bench_changes_seen;
        uint64_t t0 = bench_ns();
        bench_run(&e, "BEGIN");
        insert_issues(&e, n);
        bench_run(&e, "COMMIT");
        for (int w = 0; mode == 2 && w < 3; w++) {
            struct bench_stmt q = bench_prepare(&e, workloads[w].query);
            bench_step_all(&q);
            bench_finalize(&q);
        }
        secs[mode] = (double)(bench_ns() - t0) / 1e9;
        if (mode == 0 && bench_changes_seen == seen)
            bench_die("bulk", "the live queries published nothing");
        snprintf(name, sizeof name, "%sbulk.%d.rows_per_s", prefix[mode], n);
        bench_print(name, n / secs[mode], "rows/s");
        for (int w = 0; w < 3; w++) {
            if (lq[w] && ldb_live_error(lq[w], NULL) != LDB_OK)
                bench_die("live query failed", workloads[w].query);
            ldb_live_close(lq[w]);
        }
        if (e.sqlite)
            sqlite3_close(e.lite);
        else
            ldb_close(e.db);
    }
    snprintf(name, sizeof name, "ratio.bulk.%d", n);
    bench_print(name, secs[0] / secs[2], "x");
    snprintf(name, sizeof name, "ratio.base.bulk.%d", n);
    bench_print(name, secs[0] / secs[1], "x");
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    printf("# bench_live: issues workloads, seed %u\n", SEED);
    int sizes[8] = { 10000, 1000000 };
    int nsizes = bench_quick ? 1 : 2;
    int iters = bench_quick ? 300 : 2000;
    const char *env = getenv("LDB_BENCH_LIVE_SIZES");
    for (nsizes = env ? 0 : nsizes; env && *env && nsizes < 8; env += *env == ',')
        sizes[nsizes++] = (int)strtol(env, (char **)&env, 10);
    if ((env = getenv("LDB_BENCH_LIVE_ITERS")))
        iters = atoi(env);
    for (int w = 0; w < 3; w++) {
        if (!bench_selected(argc, argv, workloads[w].name))
            continue;
        for (int s = 0; s < nsizes; s++)
            run_workload(w, sizes[s], iters);
    }
    if (bench_selected(argc, argv, "bulk"))
        for (int s = 0; s < nsizes; s++)
            run_bulk(bench_quick ? 20000 : sizes[s]);
    return 0;
}
