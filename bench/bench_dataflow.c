/*
 * bench_dataflow.c - the dataflow core under single-row updates and bulk
 * hydration:
 *   - updates through an inner join of 100k x 1k rows;
 *   - inserts/deletes through group-by count/sum/min/max, 1M rows, 1k groups;
 *   - top-k LIMIT 50 over 10k and 1M rows, in and out of the window;
 *   - hydration of 1M rows through filter+map and through the join.
 * A single-row update is timed end to end: push, df_run, read the output.
 * Baseline: the same number of plain hash-table updates (hmap find and
 * write), measured in the same run.
 */
#include "bench_util.h"

#include "base/hash.h"
#include "base/hmap.h"
#include "dataflow/dataflow.h"
#include "livedb.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static row *row3(int64_t a, int64_t b, int64_t c)
{
    value v[3] = { value_int(a), value_int(b), value_int(c) };
    return row_from(v, 3);
}

static void must(int rc, const char *what)
{
    if (rc != LDB_OK) {
        fprintf(stderr, "%s: %s\n", what, ldb_errstr(rc));
        exit(1);
    }
}

static void push_run(df_graph *g, df_node *in, row *r, int64_t w)
{
    must(df_push(in, r, w), "push");
}

/* Times op(i) for i in [0, n) and prints median and p95 in ns. */
static double time_ops(const char *name, size_t n, void (*op)(size_t i, void *ctx), void *ctx)
{
    double *t = malloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = bench_ns();
        op(i, ctx);
        t[i] = (double)(bench_ns() - t0);
    }
    char buf[128];
    double med = bench_quantile(t, n, 0.5), p95 = bench_quantile(t, n, 0.95);
    snprintf(buf, sizeof buf, "%s_median", name);
    bench_print(buf, med, "ns/update");
    snprintf(buf, sizeof buf, "%s_p95", name);
    bench_print(buf, p95, "ns/update");
    free(t);
    return med;
}

/* ---- baseline: plain hash map updates --------------------------------------------- */

static bool u64_eq(const void *key, uint64_t val) { return *(const uint64_t *)key == val >> 20; }

static double baseline(size_t nkeys, size_t nops)
{
    hmap m = HMAP_INIT;
    for (uint64_t k = 0; k < nkeys; k++) {
        uint64_t *v;
        bool found;
        hmap_put(&m, hash_u64(k), u64_eq, &k, &v, &found);
        *v = k << 20;
    }
    double *t = malloc(nops * sizeof *t);
    for (size_t i = 0; i < nops; i++) {
        uint64_t k = rnd() % nkeys;
        uint64_t t0 = bench_ns();
        uint64_t *v = hmap_get(&m, hash_u64(k), u64_eq, &k);
        *v += 1;
        t[i] = (double)(bench_ns() - t0);
    }
    double med = bench_quantile(t, nops, 0.5);
    free(t);
    hmap_free(&m);
    return med;
}

/* ---- join ----------------------------------------------------------------------------- */

struct join_bench {
    df_graph *g;
    df_node *fact, *dim, *out;
    row **facts;
    size_t nfact, ndim;
};

static void join_update(size_t i, void *ctx)
{
    struct join_bench *b = ctx;
    size_t k = rnd() % b->nfact;
    row *old = b->facts[k];
    row *nw = row3(old->cols[0].h.u.i, (int64_t)(rnd() % b->ndim), (int64_t)i);
    push_run(b->g, b->fact, old, -1);
    push_run(b->g, b->fact, nw, 1);
    must(df_run(b->g), "run");
    size_t n;
    df_output_delta(b->out, &n);
    row_release(old);
    b->facts[k] = nw;
}

static void bench_join(void)
{
    struct join_bench b = { 0 };
    b.nfact = bench_quick ? 20000 : 100000;
    b.ndim = 1000;
    static const uint32_t fk[] = { 1 }, id[] = { 0 };
    static const enum ldb_collation bin[] = { LDB_COLL_BINARY };
    df_key kf = { 1, fk, bin }, kd = { 1, id, bin };
    df_node *af, *ad, *j;
    must(df_graph_new(&b.g), "graph");
    must(df_input(b.g, 3, &b.fact), "input");
    must(df_input(b.g, 3, &b.dim), "input");
    must(df_arrange(b.g, b.fact, &kf, &af), "arrange");
    must(df_arrange(b.g, b.dim, &kd, &ad), "arrange");
    must(df_join(b.g, af, ad, DF_JOIN_INNER, 0, NULL, NULL, &j), "join");
    must(df_output(b.g, j, &b.out), "output");
    b.facts = malloc(b.nfact * sizeof *b.facts);
    for (size_t i = 0; i < b.ndim; i++) {
        row *r = row3((int64_t)i, (int64_t)(i * 31), 7);
        push_run(b.g, b.dim, r, 1);
        row_release(r);
    }
    for (size_t i = 0; i < b.nfact; i++) {
        b.facts[i] = row3((int64_t)i, (int64_t)(rnd() % b.ndim), (int64_t)i);
        push_run(b.g, b.fact, b.facts[i], 1);
    }
    uint64_t t0 = bench_ns();
    must(df_run(b.g), "run");
    double secs = (double)(bench_ns() - t0) / 1e9;
    bench_print("join_hydrate_rows_per_s", (double)(b.nfact + b.ndim) / secs, "rows/s");
    size_t nops = bench_quick ? 5000 : 50000;
    double med = time_ops("join_update", nops, join_update, &b);
    double base = baseline(b.nfact, nops);
    bench_print("join_update_vs_hmap_update", med / base, "x");
    struct df_counters c;
    df_graph_counters(b.g, &c);
    bench_print("join_retained_rows", (double)c.retained_rows, "rows");
    bench_print("join_retained_bytes_per_row", (double)c.retained_bytes / (double)c.retained_rows,
                "bytes");
    df_graph_free(b.g);
    for (size_t i = 0; i < b.nfact; i++)
        row_release(b.facts[i]);
    free(b.facts);
}

/* ---- group by ------------------------------------------------------------------------ */

struct reduce_bench {
    df_graph *g;
    df_node *in, *out;
    row **live;
    size_t n, ngroups;
};

static void reduce_op(size_t i, void *ctx)
{
    struct reduce_bench *b = ctx;
    if (i % 2 == 0) {
        row *r = row3((int64_t)(rnd() % b->ngroups), (int64_t)(rnd() % 1000000), 1);
        push_run(b->g, b->in, r, 1);
        b->live[b->n++] = r;
    } else {
        size_t k = rnd() % b->n;
        push_run(b->g, b->in, b->live[k], -1);
        row_release(b->live[k]);
        b->live[k] = b->live[--b->n];
    }
    must(df_run(b->g), "run");
}

static void bench_reduce(void)
{
    struct reduce_bench b = { 0 };
    size_t rows = bench_quick ? 100000 : 1000000;
    size_t nops = bench_quick ? 10000 : 100000;
    b.ngroups = 1000;
    static const uint32_t k0[] = { 0 }, a1[] = { 1 };
    static const enum ldb_collation bin[] = { LDB_COLL_BINARY };
    df_key key = { 1, k0, bin };
    struct df_agg_spec aggs[] = {
        { &agg_count_star, NULL, LDB_COLL_BINARY, false, NULL, NULL, 0 },
        { &agg_sum, a1, LDB_COLL_BINARY, false, NULL, NULL, 0 },
        { &agg_min, a1, LDB_COLL_BINARY, false, NULL, NULL, 0 },
        { &agg_max, a1, LDB_COLL_BINARY, false, NULL, NULL, 0 },
    };
    df_node *red;
    must(df_graph_new(&b.g), "graph");
    must(df_input(b.g, 3, &b.in), "input");
    must(df_reduce(b.g, b.in, &key, aggs, 4, 0, &red), "reduce");
    must(df_output(b.g, red, &b.out), "output");
    b.live = malloc((rows + nops) * sizeof *b.live);
    for (size_t i = 0; i < rows; i++) {
        b.live[b.n] = row3((int64_t)(rnd() % b.ngroups), (int64_t)(rnd() % 1000000), 1);
        push_run(b.g, b.in, b.live[b.n++], 1);
    }
    uint64_t t0 = bench_ns();
    must(df_run(b.g), "run");
    bench_print("groupby_hydrate_rows_per_s", (double)rows / ((double)(bench_ns() - t0) / 1e9),
                "rows/s");
    double med = time_ops("groupby_count_sum_min_max_update", nops, reduce_op, &b);
    bench_print("groupby_update_vs_hmap_update", med / baseline(b.ngroups, nops), "x");
    struct df_counters c;
    df_node_counters(red, &c);
    bench_print("groupby_retained_bytes", (double)c.retained_bytes, "bytes");
    df_graph_free(b.g);
    for (size_t i = 0; i < b.n; i++)
        row_release(b.live[i]);
    free(b.live);
}

/* ---- top-k ------------------------------------------------------------------------------ */

static int by_col1(void *ctx, const row *a, const row *b)
{
    int64_t x = a->cols[1].h.u.i, y = b->cols[1].h.u.i;
    return (x > y) - (x < y);
}

struct topk_bench {
    df_graph *g;
    df_node *in, *out;
    row **live;
    size_t n;
    int64_t span;
    bool inside;
};

/* Inserts and deletes alternate. Inside: a row with a small sort key
 * enters the window, and the next op deletes it again. Outside: a row
 * with a large key is added, and the next op deletes a random row of the
 * whole group (almost surely outside the window, and cold in cache). */
static void topk_op(size_t i, void *ctx)
{
    struct topk_bench *b = ctx;
    if (i % 2 == 0) {
        int64_t key = b->inside ? -(int64_t)(rnd() % 1000) - 1 : b->span + (int64_t)(rnd() % 1000);
        row *r = row3((int64_t)(b->span + (int64_t)i), key, 0);
        push_run(b->g, b->in, r, 1);
        b->live[b->n++] = r;
    } else {
        size_t k = b->inside ? b->n - 1 : rnd() % b->n;
        row *r = b->live[k];
        b->live[k] = b->live[--b->n];
        push_run(b->g, b->in, r, -1);
        row_release(r);
    }
    must(df_run(b->g), "run");
}

static double bench_topk_at(size_t rows, size_t nops)
{
    struct topk_bench b = { 0 };
    df_key none = { 0, NULL, NULL };
    df_node *top;
    must(df_graph_new(&b.g), "graph");
    must(df_input(b.g, 3, &b.in), "input");
    must(df_topk(b.g, b.in, &none, by_col1, NULL, 0, 50, &top), "topk");
    must(df_output(b.g, top, &b.out), "output");
    b.span = (int64_t)rows * 4;
    b.live = malloc((rows + nops) * sizeof *b.live);
    for (size_t i = 0; i < rows; i++) {
        b.live[b.n] = row3((int64_t)i, (int64_t)(rnd() % (uint64_t)b.span), 0);
        push_run(b.g, b.in, b.live[b.n++], 1);
    }
    uint64_t t0 = bench_ns();
    must(df_run(b.g), "run");
    char name[64];
    snprintf(name, sizeof name, "topk_hydrate_%zu_rows_per_s", rows);
    bench_print(name, (double)rows / ((double)(bench_ns() - t0) / 1e9), "rows/s");
    double meds[2];
    for (int inside = 0; inside < 2; inside++) {
        b.inside = inside;
        snprintf(name, sizeof name, "topk50_%zu_%s", rows, inside ? "inside" : "outside");
        meds[inside] = time_ops(name, nops, topk_op, &b);
    }
    df_graph_free(b.g);
    for (size_t i = 0; i < b.n; i++)
        row_release(b.live[i]);
    free(b.live);
    return (meds[0] + meds[1]) / 2;
}

static void bench_topk(void)
{
    size_t nops = bench_quick ? 5000 : 50000;
    double small = bench_topk_at(10000, nops);
    double big = bench_topk_at(bench_quick ? 200000 : 1000000, nops);
    bench_print("topk50_big_vs_10k", big / small, "x");
}

/* ---- hydration through filter + map ---------------------------------------------------- */

static int keep_even(void *ctx, const row *r, bool *keep)
{
    *keep = (r->cols[1].h.u.i & 1) == 0;
    return LDB_OK;
}

static int project(void *ctx, row *in, row **out)
{
    value v[2] = { in->cols[0], value_int(in->cols[2].h.u.i * 2) };
    *out = row_from(v, 2);
    return *out ? LDB_OK : LDB_NOMEM;
}

static void bench_filter_map(void)
{
    size_t rows = bench_quick ? 200000 : 1000000;
    df_graph *g;
    df_node *in, *f, *m, *out;
    must(df_graph_new(&g), "graph");
    must(df_input(g, 3, &in), "input");
    must(df_filter(g, in, keep_even, NULL, &f), "filter");
    must(df_map(g, f, 2, project, NULL, &m), "map");
    must(df_output(g, m, &out), "output");
    row **rs = malloc(rows * sizeof *rs);
    for (size_t i = 0; i < rows; i++)
        rs[i] = row3((int64_t)i, (int64_t)(rnd() % 4), (int64_t)i);
    uint64_t t0 = bench_ns();
    for (size_t i = 0; i < rows; i++)
        must(df_push(in, rs[i], 1), "push");
    must(df_run(g), "run");
    size_t n;
    df_output_delta(out, &n);
    double secs = (double)(bench_ns() - t0) / 1e9;
    bench_print("filter_map_hydrate_rows_per_s", (double)rows / secs, "rows/s");
    df_graph_free(g);
    for (size_t i = 0; i < rows; i++)
        row_release(rs[i]);
    free(rs);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    if (bench_selected(argc, argv, "filter_map"))
        bench_filter_map();
    if (bench_selected(argc, argv, "join"))
        bench_join();
    if (bench_selected(argc, argv, "groupby"))
        bench_reduce();
    if (bench_selected(argc, argv, "topk"))
        bench_topk();
    return 0;
}
