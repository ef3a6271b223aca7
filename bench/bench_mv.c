/*
 * bench_mv.c - what materialized views cost the writes that maintain them.
 *
 * Sections (all by default; name some to run only those):
 *   writes     single-row UPDATE / INSERT+DELETE statements on an N-row table
 *              (1M; --quick 50k) with 0, 1 (each shape), 5 and 20 views of
 *              mixed shapes: ns per statement (median, p95) and the ratio
 *              to 0 views;
 *   bulk       INSERT of N rows into a table with a GROUP BY view, as one
 *              INSERT ... SELECT and as N single-row statements in one
 *              transaction: rows/s, with and without the view;
 *   recompute  per-write maintenance (statement time with the view minus
 *              without) against evaluating the same body from scratch, at
 *              10k and at N rows: maintenance must stay flat;
 *   arms       one body through its cheap arm and through the dataflow arm
 *              (PRAGMA materialized_view_cheap_arms = OFF): ns and bytes;
 *   bytes      state each view's maintenance keeps beyond its table.
 * Lines: "bench mv.<section>.<case>[.<stat>] <value> <unit>".
 */
#include "bench_util.h"

#include "livedb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 20261201u;

static uint64_t next_rand(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void run(ldb *db, const char *sql)
{
    if (ldb_exec(db, sql, NULL, NULL) != LDB_OK)
        bench_die_db(db, sql);
}

static ldb_stmt *prepare(ldb *db, const char *sql)
{
    ldb_stmt *s;
    if (ldb_prepare(db, sql, -1, &s, NULL) != LDB_OK)
        bench_die_db(db, sql);
    return s;
}

static void step_done(ldb *db, ldb_stmt *s)
{
    int rc = ldb_step(s);
    if (rc != LDB_DONE)
        bench_die_db(db, "step");
    ldb_reset(s);
}

#define GROUPS 1000

/* big(id, g, x, y, s) with n rows, and a small dimension table. */
static ldb *make_db(int64_t n)
{
    ldb *db;
    if (ldb_open(NULL, &db) != LDB_OK)
        exit(1);
    run(db, "CREATE TABLE big(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER, y INTEGER, s TEXT);"
            "CREATE INDEX big_g ON big(g);"
            "CREATE TABLE dim(id INTEGER PRIMARY KEY, name TEXT);");
    ldb_stmt *ins = prepare(db, "INSERT INTO big VALUES (?, ?, ?, ?, ?)");
    run(db, "BEGIN");
    for (int64_t i = 1; i <= n; i++) {
        ldb_bind_int64(ins, 1, i);
        ldb_bind_int64(ins, 2, (int64_t)(next_rand() % GROUPS));
        ldb_bind_int64(ins, 3, (int64_t)(next_rand() % 1000));
        ldb_bind_int64(ins, 4, (int64_t)(next_rand() % 1000));
        ldb_bind_text(ins, 5, (next_rand() & 1) ? "alpha" : "beta", -1);
        step_done(db, ins);
    }
    ldb_finalize(ins);
    ldb_stmt *dim = prepare(db, "INSERT INTO dim VALUES (?, ?)");
    for (int64_t i = 0; i < GROUPS; i++) {
        ldb_bind_int64(dim, 1, i);
        ldb_bind_text(dim, 2, "dimension name", -1);
        step_done(db, dim);
    }
    ldb_finalize(dim);
    run(db, "COMMIT");
    return db;
}

/* The view shapes, by index; k varies constants so views differ. */
static void view_sql(char *sql, size_t n, int shape, int k)
{
    switch (shape) {
    case 0: /* projection arm, selective */
        snprintf(sql, n, "CREATE MATERIALIZED VIEW v%d AS SELECT id, x + y AS xy, s FROM big "
                         "WHERE x BETWEEN %d AND %d", k, (k * 37) % 990, (k * 37) % 990 + 9);
        break;
    case 1: /* aggregate arm */
        snprintf(sql, n, "CREATE MATERIALIZED VIEW v%d AS SELECT g, count(*) AS n, sum(x) AS sx, "
                         "avg(y) AS ay FROM big WHERE y >= %d GROUP BY g", k, k % 10);
        break;
    case 2: /* dataflow: join through the dimension's key */
        snprintf(sql, n, "CREATE MATERIALIZED VIEW v%d AS SELECT big.id, dim.name, big.x FROM big "
                         "JOIN dim ON dim.id = big.g WHERE big.y < %d", k, 10 + k % 10);
        break;
    case 3: /* dataflow: HAVING */
        snprintf(sql, n, "CREATE MATERIALIZED VIEW v%d AS SELECT g, sum(x) AS sx FROM big "
                         "GROUP BY g HAVING count(*) > %d", k, 900 + k);
        break;
    case 4: /* aggregate arm, scalar */
        snprintf(sql, n, "CREATE MATERIALIZED VIEW v%d AS SELECT count(*) AS n, sum(x) AS sx "
                         "FROM big WHERE y >= %d", k, k % 10);
        break;
    case 5: /* aggregate arm with max: the group's rows through big_g on retraction */
        snprintf(sql, n, "CREATE MATERIALIZED VIEW v%d AS SELECT g, sum(x) AS sx, max(y) AS my "
                         "FROM big WHERE y >= %d GROUP BY g", k, k % 10);
        break;
    default: /* projection arm, every row */
        snprintf(sql, n, "CREATE MATERIALIZED VIEW v%d AS SELECT id, x + y AS xy, s FROM big "
                         "WHERE y >= %d", k, k % 10);
        break;
    }
}

/* The mixed sets of views cycle through the first NSHAPES. */
#define NSHAPES 6

static const char *const shape_names[] = { "projection", "aggregate", "join", "having",
                                           "scalar", "minmax", "projection_all" };

/* ---- writes ------------------------------------------------------------------------ */

struct timing {
    double median, p95;
};

/* Single-row updates of random rows: ns per statement. */
static struct timing time_updates(ldb *db, int64_t n, int reps)
{
    ldb_stmt *up = prepare(db, "UPDATE big SET x = ? WHERE id = ?");
    double *t = malloc((size_t)reps * sizeof *t);
    for (int i = 0; i < reps; i++) {
        ldb_bind_int64(up, 1, (int64_t)(next_rand() % 1000));
        ldb_bind_int64(up, 2, 1 + (int64_t)(next_rand() % (uint64_t)n));
        uint64_t t0 = bench_ns();
        step_done(db, up);
        t[i] = (double)(bench_ns() - t0);
    }
    ldb_finalize(up);
    struct timing r = { bench_quantile(t, (size_t)reps, 0.5), bench_quantile(t, (size_t)reps, 0.95) };
    free(t);
    return r;
}

/* An INSERT of a new row, then its DELETE: ns per statement. */
static struct timing time_insert_delete(ldb *db, int64_t n, int reps)
{
    ldb_stmt *ins = prepare(db, "INSERT INTO big VALUES (?, ?, ?, ?, 'gamma')");
    ldb_stmt *del = prepare(db, "DELETE FROM big WHERE id = ?");
    double *t = malloc((size_t)reps * sizeof *t);
    for (int i = 0; i < reps; i++) {
        int64_t id = n + 1 + i;
        ldb_bind_int64(ins, 1, id);
        ldb_bind_int64(ins, 2, (int64_t)(next_rand() % GROUPS));
        ldb_bind_int64(ins, 3, (int64_t)(next_rand() % 1000));
        ldb_bind_int64(ins, 4, (int64_t)(next_rand() % 1000));
        ldb_bind_int64(del, 1, id);
        uint64_t t0 = bench_ns();
        step_done(db, ins);
        step_done(db, del);
        t[i] = (double)(bench_ns() - t0) / 2;
    }
    ldb_finalize(ins);
    ldb_finalize(del);
    struct timing r = { bench_quantile(t, (size_t)reps, 0.5), bench_quantile(t, (size_t)reps, 0.95) };
    free(t);
    return r;
}

static void report(const char *name, struct timing t, struct timing base)
{
    char buf[160];
    snprintf(buf, sizeof buf, "mv.writes.%s.median", name);
    bench_print(buf, t.median, "ns");
    snprintf(buf, sizeof buf, "mv.writes.%s.p95", name);
    bench_print(buf, t.p95, "ns");
    snprintf(buf, sizeof buf, "mv.writes.%s.ratio", name);
    bench_print(buf, t.median / base.median, "x");
}

static void drop_views(ldb *db, int n)
{
    for (int k = 0; k < n; k++) {
        char sql[64];
        snprintf(sql, sizeof sql, "DROP MATERIALIZED VIEW v%d", k);
        run(db, sql);
    }
}

/* The same writes with no view, measured before and after each view
 * configuration: the ratio's base is their mean, so that drift of the
 * table's state over the run does not count as a view's cost. */
struct base {
    struct timing up, id;
};

static struct base measure_base(ldb *db, int64_t n, int reps)
{
    struct base b = { time_updates(db, n, reps), time_insert_delete(db, n, reps) };
    return b;
}

static struct timing mean(struct timing a, struct timing b)
{
    struct timing m = { (a.median + b.median) / 2, (a.p95 + b.p95) / 2 };
    return m;
}

/* Creates views 0..count-1 (shape given, or mixed when shape < 0),
 * measures, drops them, measures the base again. */
static struct base with_views(ldb *db, int64_t n, int reps, int count, int shape,
                              const char *label, struct base before)
{
    char sql[400], name[80];
    for (int k = 0; k < count; k++) {
        view_sql(sql, sizeof sql, shape >= 0 ? shape : k % NSHAPES, k);
        run(db, sql);
    }
    struct base v = measure_base(db, n, reps);
    drop_views(db, count);
    struct base after = measure_base(db, n, reps);
    snprintf(name, sizeof name, "update.%s", label);
    report(name, v.up, mean(before.up, after.up));
    snprintf(name, sizeof name, "insdel.%s", label);
    report(name, v.id, mean(before.id, after.id));
    return after;
}

static void writes(int64_t n)
{
    ldb *db = make_db(n);
    int reps = bench_quick ? 3000 : 20000;
    measure_base(db, n, reps); /* warm up */
    struct base b = measure_base(db, n, reps);
    report("update.0views", b.up, b.up);
    report("insdel.0views", b.id, b.id);
    char label[80];
    for (int shape = 0; shape < NSHAPES; shape++) {
        snprintf(label, sizeof label, "1view.%s", shape_names[shape]);
        b = with_views(db, n, reps, 1, shape, label, b);
    }
    b = with_views(db, n, reps / 2, 5, -1, "5views", b);
    with_views(db, n, reps / 2, 20, -1, "20views", b);
    ldb_close(db);
}

/* The same body through its cheap arm and through the dataflow arm
 * (PRAGMA materialized_view_cheap_arms = OFF): what choosing the cheap arm
 * buys, per statement and in retained bytes. */
static void arms(int64_t n)
{
    ldb *db = make_db(n);
    int reps = bench_quick ? 3000 : 20000;
    static const int shapes[] = { 0, 6, 1, 4, 5 };
    static const char *const arm[] = { "cheap", "dataflow" };
    measure_base(db, n, reps);
    for (int i = 0; i < 5; i++) {
        struct base t[2];
        for (int a = 0; a < 2; a++) {
            char sql[400], name[120];
            run(db, a ? "PRAGMA materialized_view_cheap_arms = OFF"
                      : "PRAGMA materialized_view_cheap_arms = ON");
            view_sql(sql, sizeof sql, shapes[i], 0);
            run(db, sql);
            t[a] = measure_base(db, n, reps);
            ldb_mv_stats st;
            ldb_mv_stats_get(db, "v0", &st);
            snprintf(name, sizeof name, "mv.arms.%s.%s.update.median", shape_names[shapes[i]],
                     arm[a]);
            bench_print(name, t[a].up.median, "ns");
            snprintf(name, sizeof name, "mv.arms.%s.%s.insdel.median", shape_names[shapes[i]],
                     arm[a]);
            bench_print(name, t[a].id.median, "ns");
            snprintf(name, sizeof name, "mv.arms.%s.%s.bytes", shape_names[shapes[i]], arm[a]);
            bench_print(name, (double)st.retained_bytes, "bytes");
            drop_views(db, 1);
        }
        char name[120];
        snprintf(name, sizeof name, "mv.arms.%s.cheap_over_dataflow", shape_names[shapes[i]]);
        bench_print(name, (t[0].up.median + t[0].id.median) / (t[1].up.median + t[1].id.median),
                    "x");
    }
    run(db, "PRAGMA materialized_view_cheap_arms = ON");
    ldb_close(db);
}

/* ---- bulk -------------------------------------------------------------------------- */

static double bulk_rate(int64_t n, bool view, bool one_statement)
{
    ldb *db;
    if (ldb_open(NULL, &db) != LDB_OK)
        exit(1);
    run(db, "CREATE TABLE src(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER);"
            "CREATE TABLE dst(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER)");
    if (view)
        run(db, "CREATE MATERIALIZED VIEW gv AS SELECT g, count(*) AS n, sum(x) AS sx, "
                "avg(x) AS ax FROM dst GROUP BY g");
    ldb_stmt *ins = prepare(db, one_statement ? "INSERT INTO src VALUES (?, ?, ?)"
                                              : "INSERT INTO dst VALUES (?, ?, ?)");
    uint64_t t0 = 0;
    run(db, "BEGIN");
    if (!one_statement)
        t0 = bench_ns();
    for (int64_t i = 1; i <= n; i++) {
        ldb_bind_int64(ins, 1, i);
        ldb_bind_int64(ins, 2, (int64_t)(next_rand() % GROUPS));
        ldb_bind_int64(ins, 3, (int64_t)(next_rand() % 1000));
        step_done(db, ins);
    }
    ldb_finalize(ins);
    if (one_statement) {
        run(db, "COMMIT; BEGIN");
        t0 = bench_ns();
        run(db, "INSERT INTO dst SELECT * FROM src");
    }
    run(db, "COMMIT");
    double rate = (double)n / ((double)(bench_ns() - t0) / 1e9);
    ldb_close(db);
    return rate;
}

static void bulk(int64_t n)
{
    static const char *const names[] = { "statement", "rows" };
    for (int one = 1; one >= 0; one--) {
        char name[96];
        snprintf(name, sizeof name, "mv.bulk.%s.noview", names[!one]);
        double base = bulk_rate(n, false, one);
        bench_print(name, base, "rows/s");
        snprintf(name, sizeof name, "mv.bulk.%s.groupby_view", names[!one]);
        double with = bulk_rate(n, true, one);
        bench_print(name, with, "rows/s");
        snprintf(name, sizeof name, "mv.bulk.%s.ratio", names[!one]);
        bench_print(name, base / with, "x");
    }
}

/* ---- maintenance against recompute --------------------------------------------------- */

static double body_ms(ldb *db, const char *body)
{
    uint64_t t0 = bench_ns();
    run(db, body);
    return (double)(bench_ns() - t0) / 1e6;
}

/* The least median of three rounds: interference on a shared machine
 * only ever adds time, and maintenance is a difference of two timings. */
static struct timing least_of_three(ldb *db, int64_t n, int reps)
{
    struct timing best = time_updates(db, n, reps);
    for (int k = 0; k < 2; k++) {
        struct timing t = time_updates(db, n, reps);
        if (t.median < best.median)
            best = t;
    }
    return best;
}

static void recompute_at(int64_t n)
{
    ldb *db = make_db(n);
    int reps = bench_quick ? 2000 : 10000;
    time_updates(db, n, reps); /* warm up */
    struct timing base = least_of_three(db, n, reps);
    static const int shapes[] = { 0, 1, 2, 3, 5 };
    for (int i = 0; i < 5; i++) {
        char sql[400], name[120];
        view_sql(sql, sizeof sql, shapes[i], 0);
        run(db, sql);
        struct timing with = least_of_three(db, n, reps);
        const char *body = strstr(sql, " AS SELECT") + 4;
        snprintf(name, sizeof name, "mv.recompute.%s.%lld.full_body", shape_names[shapes[i]],
                 (long long)n);
        bench_print(name, body_ms(db, body) * 1e6, "ns");
        drop_views(db, 1);
        struct timing after = least_of_three(db, n, reps);
        snprintf(name, sizeof name, "mv.recompute.%s.%lld.maintenance", shape_names[shapes[i]],
                 (long long)n);
        bench_print(name, with.median - (base.median + after.median) / 2, "ns");
        base = after;
    }
    ldb_close(db);
}

/* ---- bytes ---------------------------------------------------------------------------- */

static void bytes(int64_t n)
{
    ldb *db = make_db(n);
    run(db, "CREATE INDEX big_xy ON big(x, y)");
    for (int shape = 0; shape < NSHAPES; shape++) {
        char sql[400], name[96];
        view_sql(sql, sizeof sql, shape, shape);
        run(db, sql);
        ldb_mv_stats st;
        char view[16];
        snprintf(view, sizeof view, "v%d", shape);
        ldb_mv_stats_get(db, view, &st);
        snprintf(name, sizeof name, "mv.bytes.%s.%s", shape_names[shape], st.strategy);
        bench_print(name, (double)st.retained_bytes, "bytes");
    }
    run(db, "CREATE MATERIALIZED VIEW copyjoin AS SELECT big.id, dim.name FROM big "
            "JOIN dim ON dim.name = big.s");
    ldb_mv_stats st;
    ldb_mv_stats_get(db, "copyjoin", &st);
    bench_print("mv.bytes.join_without_index.dataflow", (double)st.retained_bytes, "bytes");
    ldb_close(db);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    int64_t n = bench_quick ? 50000 : 1000000;
    if (bench_selected(argc, argv, "writes"))
        writes(n);
    if (bench_selected(argc, argv, "arms"))
        arms(n);
    if (bench_selected(argc, argv, "bulk"))
        bulk(n);
    if (bench_selected(argc, argv, "recompute")) {
        recompute_at(10000);
        recompute_at(n);
    }
    if (bench_selected(argc, argv, "bytes"))
        bytes(bench_quick ? 20000 : 100000);
    return 0;
}
