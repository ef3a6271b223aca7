/*
 * test_operators.c - targeted laws of the dataflow core: allocation
 * failure during construction and runs, callback errors, no spurious
 * output, representatives of canonically equal keys, outer-join NULL
 * padding transitions, top-k work and window moves, space counters,
 * invariant violations, and consolidation of large batches.
 */
#include "test.h"

#include "base/mem.h"
#include "dataflow/dataflow.h"
#include "livedb.h"

#include <stdlib.h>

static row *r2(value a, value b)
{
    row *r = row_from((value[]){ a, b }, 2);
    CHECK(r != NULL);
    return r;
}

static row *ri(int64_t a, int64_t b) { return r2(value_int(a), value_int(b)); }

static void push(df_node *in, row *r, int64_t w)
{
    CHECK(df_push(in, r, w) == LDB_OK);
    row_release(r);
}

static size_t out_len(df_node *out)
{
    size_t n;
    df_output_delta(out, &n);
    return n;
}

/* Weight of the row identical to r in the output delta (0 if absent). */
static int64_t out_weight(df_node *out, row *r)
{
    size_t n;
    const df_entry *d = df_output_delta(out, &n);
    int64_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (row_identical(d[i].r, r))
            w += d[i].w;
    row_release(r);
    return w;
}

static const uint32_t col0[] = { 0 }, col1[] = { 1 };
static const enum ldb_collation binary[] = { LDB_COLL_BINARY, LDB_COLL_BINARY };

/* ---- allocation failure ------------------------------------------------------- */

static int less_residual(void *ctx, const row *j, bool *keep)
{
    *keep = value_cmp(&j->cols[1], &j->cols[3], LDB_COLL_BINARY) <= 0;
    return LDB_OK;
}

static int by_col1(void *ctx, const row *a, const row *b)
{
    return value_cmp(&a->cols[1], &b->cols[1], LDB_COLL_BINARY);
}

static int build_small(df_graph *g, df_node **in, df_node **outs)
{
    df_key k0 = { 1, col0, binary };
    df_node *aa, *ab, *j, *red, *dis, *top;
    int rc;
    uint32_t a1[] = { 1 }, a3[] = { 3 };
    struct df_agg_spec aggs[] = {
        { &agg_count_star, NULL, LDB_COLL_BINARY, false, NULL, NULL, 0 },
        { &agg_sum, a3, LDB_COLL_BINARY, false, NULL, NULL, 0 },
        { &agg_min, a1, LDB_COLL_BINARY, false, NULL, NULL, 0 },
        { &agg_string_agg, a1, LDB_COLL_BINARY, true, NULL, NULL, 0 },
    };
    if ((rc = df_input(g, 2, &in[0])) || (rc = df_input(g, 2, &in[1])) ||
        (rc = df_arrange(g, in[0], &k0, &aa)) || (rc = df_arrange(g, in[1], &k0, &ab)) ||
        (rc = df_join(g, aa, ab, DF_JOIN_FULL, 0, less_residual, NULL, &j)) ||
        (rc = df_reduce(g, j, &k0, aggs, 4, 0, &red)) ||
        (rc = df_distinct(g, in[0], binary, &dis)) ||
        (rc = df_topk(g, in[1], &k0, by_col1, NULL, 1, 2, &top)) ||
        (rc = df_output(g, red, &outs[0])) || (rc = df_output(g, dis, &outs[1])) ||
        (rc = df_output(g, top, &outs[2])))
        return rc;
    return LDB_OK;
}

static void allocation_failure_sweep(void)
{
    row *rows[40];
    for (int i = 0; i < 40; i++)
        rows[i] = ri(i % 5, i * 7 % 11);
    int64_t base = mem_live();
    int sweeps = 0;
    for (uint64_t fail = 1;; fail++) {
        mem_fail_at(fail, 0);
        df_graph *g = NULL;
        df_node *in[2], *outs[3];
        int rc = df_graph_new(&g);
        bool built = false;
        if (rc == LDB_OK)
            built = (rc = build_small(g, in, outs)) == LDB_OK;
        for (int run = 0; rc == LDB_OK && run < 3; run++) {
            for (int i = 0; rc == LDB_OK && i < 40; i++)
                rc = df_push(in[i % 2], rows[i], run == 1 && i % 3 == 0 ? -1 : 1);
            if (rc == LDB_OK)
                rc = df_run(g);
        }
        bool tripped = mem_failed_count() > 0;
        mem_fail_at(0, 0);
        if (!tripped) {
            CHECK_INT(rc, LDB_OK);
            df_graph_free(g);
            CHECK_INT(mem_live(), base);
            break;
        }
        CHECK_INT(rc, LDB_NOMEM);
        if (g) {
            CHECK_INT(df_graph_error(g), LDB_NOMEM);
            CHECK_INT(df_run(g), LDB_NOMEM);
            for (int k = 0; k < 3 && built; k++)
                CHECK_INT(out_len(outs[k]), 0);
        }
        df_graph_free(g);
        CHECKF(mem_live() == base, "leak after failing allocation %llu", (unsigned long long)fail);
        sweeps++;
    }
    CHECK(sweeps > 100);
    for (int i = 0; i < 40; i++)
        row_release(rows[i]);
}

/* ---- callback errors ---------------------------------------------------------- */

static int failing_map(void *ctx, row *in, row **out)
{
    if (in->cols[0].h.u.i == 3)
        return LDB_ABORT;
    *out = row_retain(in);
    return LDB_OK;
}

static void callback_error_fails_run(void)
{
    df_graph *g;
    df_node *in, *m, *out, *out2;
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    CHECK(df_output(g, in, &out2) == LDB_OK);
    CHECK(df_map(g, in, 2, failing_map, NULL, &m) == LDB_OK);
    CHECK(df_output(g, m, &out) == LDB_OK);
    push(in, ri(1, 1), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 1);
    push(in, ri(2, 1), 1);
    push(in, ri(3, 1), 1);
    CHECK_INT(df_run(g), LDB_ABORT);
    CHECK_INT(df_graph_error(g), LDB_ABORT);
    CHECK_INT(out_len(out), 0);
    CHECK_INT(out_len(out2), 0); /* nothing of the failed run is published */
    row *r = ri(4, 1);
    CHECK_INT(df_push(in, r, 1), LDB_ABORT);
    row_release(r);
    CHECK_INT(df_run(g), LDB_ABORT);
    df_graph_free(g);
}

/* ---- no spurious output, representatives --------------------------------------- */

static void no_spurious_output(void)
{
    df_graph *g;
    df_node *in, *red, *out;
    df_key k0 = { 1, col0, binary };
    struct df_agg_spec cnt = { &agg_count_star, NULL, LDB_COLL_BINARY, false, NULL, NULL, 0 };
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    CHECK(df_reduce(g, in, &k0, &cnt, 1, 0, &red) == LDB_OK);
    CHECK(df_output(g, red, &out) == LDB_OK);
    push(in, ri(5, 1), 1);
    push(in, ri(6, 1), 2);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 2);
    /* An update that changes no visible value emits nothing. */
    push(in, ri(5, 1), -1);
    push(in, ri(5, 2), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 0);
    /* A batch that cancels out emits nothing. */
    push(in, ri(7, 7), 1);
    push(in, ri(7, 7), -1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 0);
    /* 5 -> 5.0 is visible: the group's key shows the least contributor,
     * INTEGER 5 while one is there, REAL 5.0 after. */
    push(in, r2(value_real(5.0), value_int(3)), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, ri(5, 1)), -1);
    CHECK_INT(out_weight(out, ri(5, 2)), 1);
    push(in, ri(5, 2), -1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, ri(5, 2)), -1);
    CHECK_INT(out_weight(out, r2(value_real(5.0), value_int(1))), 1);
    struct df_counters c;
    df_node_counters(red, &c);
    CHECK_INT(c.retained_rows, 4); /* two groups: output row + one key variant each */
    df_graph_free(g);
}

static void scalar_aggregate_exists_when_empty(void)
{
    df_graph *g;
    df_node *in, *red, *out;
    df_key none = { 0, NULL, NULL };
    uint32_t a1[] = { 1 };
    struct df_agg_spec aggs[] = { { &agg_count_star, NULL, 0, false, NULL, NULL, 0 },
                                  { &agg_sum, a1, 0, false, NULL, NULL, 0 } };
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    CHECK(df_reduce(g, in, &none, aggs, 2, DF_REDUCE_SCALAR, &red) == LDB_OK);
    CHECK(df_output(g, red, &out) == LDB_OK);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, r2(value_int(0), value_null())), 1);
    push(in, ri(1, 4), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, ri(1, 4)), 1);
    push(in, ri(1, 4), -1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, r2(value_int(0), value_null())), 1);
    CHECK_INT(out_len(out), 2);
    df_graph_free(g);
}

/* ---- outer joins -------------------------------------------------------------------- */

static void left_join_padding_transitions(void)
{
    df_graph *g;
    df_node *a, *b, *aa, *ab, *j, *out;
    df_key k0 = { 1, col0, binary };
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &a) == LDB_OK);
    CHECK(df_input(g, 2, &b) == LDB_OK);
    CHECK(df_arrange(g, a, &k0, &aa) == LDB_OK);
    CHECK(df_arrange(g, b, &k0, &ab) == LDB_OK);
    CHECK(df_join(g, aa, ab, DF_JOIN_LEFT, 0, NULL, NULL, &j) == LDB_OK);
    CHECK(df_output(g, j, &out) == LDB_OK);
    row *pad = row_from((value[]){ value_int(1), value_int(10), value_null(), value_null() }, 4);
    push(a, ri(1, 10), 2);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, row_retain(pad)), 2);
    push(b, ri(1, 20), 1); /* match set becomes non-empty */
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, row_retain(pad)), -2);
    CHECK_INT(out_len(out), 2);
    push(b, ri(1, 21), 1); /* still matched: only the new pair */
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 1);
    push(b, ri(1, 20), -1);
    push(b, ri(1, 21), -1); /* empty again */
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_weight(out, row_retain(pad)), 2);
    CHECK_INT(out_len(out), 3);
    /* NULL keys never match but are padded. */
    push(a, r2(value_null(), value_int(1)), 1);
    push(b, r2(value_null(), value_int(2)), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 1);
    row_release(pad);
    df_graph_free(g);
}

/* ---- join chains: one change reaching every input ------------------------------- */

/*
 * N - 1 joins in a chain over one input T(id, v): level k joins the
 * previous level (arranged by its first id: a star, or by its last v: a
 * chain) with T by id, so one row inserted into T changes every input of
 * every level in the same run. The work of that run (rows consumed by
 * all nodes) must grow linearly with N, and the output be the exact
 * change: the joins' terms overlap when both sides change, and their
 * unconsolidated sum doubled the delta at every level (2^N entries).
 */
static void join_chain_once(enum df_join_kind kind, bool chain, int n)
{
    df_graph *g;
    df_node *in, *at, *cur, *out;
    df_key k0 = { 1, col0, binary };
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    CHECK(df_arrange(g, in, &k0, &at) == LDB_OK);
    cur = in;
    uint32_t *keycol = malloc((size_t)n * sizeof *keycol);
    for (int k = 1; k < n; k++) {
        df_node *ac, *j;
        uint32_t nc = df_node_ncols(cur);
        keycol[k] = chain ? nc - 1 : 0;
        df_key kk = { 1, &keycol[k], binary };
        CHECK(df_arrange(g, cur, &kk, &ac) == LDB_OK);
        CHECK(df_join(g, ac, at, kind, 0, NULL, NULL, &j) == LDB_OK);
        cur = j;
    }
    CHECK(df_output(g, cur, &out) == LDB_OK);
    /* a cycle 1 -> 2 -> 3 -> 1, so that every chain is complete */
    push(in, ri(1, 2), 1);
    push(in, ri(2, 3), 1);
    push(in, ri(3, 1), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 3);
    uint32_t width = df_node_ncols(cur);
    /* a row that joins itself at every level */
    uint64_t before = df_graph_rows_in(g);
    push(in, ri(4, 4), 1);
    CHECK(df_run(g) == LDB_OK);
    uint64_t work = df_graph_rows_in(g) - before;
    CHECKF(work <= (uint64_t)(8 * n), "kind %d, %s, N=%d: one insert consumed %llu rows",
           (int)kind, chain ? "chain" : "star", n, (unsigned long long)work);
    CHECK_INT(out_len(out), 1);
    size_t len;
    const df_entry *d = df_output_delta(out, &len);
    CHECK_INT(d[0].w, 1);
    CHECK_INT(d[0].r->ncols, width);
    for (uint32_t c = 0; c < width; c++)
        CHECK_INT(d[0].r->cols[c].h.u.i, 4);
    /* a star keeps the row (old and new); a chain through v = 5 breaks
     * after the first level: inner and semi lose it, left and right joins
     * pad one row, a full join pads the row of every level */
    size_t want = !chain ? 2
                  : kind == DF_JOIN_INNER || kind == DF_JOIN_SEMI ? 1
                  : kind == DF_JOIN_FULL                          ? (size_t)n + 1
                                                                  : 2;
    /* an update of that row: -old +new at every level */
    before = df_graph_rows_in(g);
    push(in, ri(4, 4), -1);
    push(in, ri(4, 5), 1);
    CHECK(df_run(g) == LDB_OK);
    work = df_graph_rows_in(g) - before;
    /* the full chain's change really grows by one row a level */
    CHECKF(work <= (uint64_t)(16 * n) * (want > 2 ? want : 1),
           "kind %d, %s, N=%d: one update consumed %llu rows", (int)kind,
           chain ? "chain" : "star", n, (unsigned long long)work);
    CHECKF(out_len(out) == want, "kind %d, %s, N=%d: %zu entries after an update",
           (int)kind, chain ? "chain" : "star", n, out_len(out));
    free(keycol);
    df_graph_free(g);
}

static void join_chain_work(void)
{
    static const enum df_join_kind kinds[] = { DF_JOIN_INNER, DF_JOIN_LEFT, DF_JOIN_RIGHT,
                                               DF_JOIN_FULL, DF_JOIN_SEMI };
    static const int sizes[] = { 4, 20, 64 };
    for (size_t s = 0; s < 3; s++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            for (int chain = 0; chain < 2; chain++)
                join_chain_once(kinds[k], chain, sizes[s]);
}

/* ---- top-k ---------------------------------------------------------------------------- */

static void topk_work_and_window(void)
{
    df_graph *g;
    df_node *in, *top, *out;
    df_key none = { 0, NULL, NULL };
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    CHECK(df_topk(g, in, &none, by_col1, NULL, 0, 10, &top) == LDB_OK);
    CHECK(df_output(g, top, &out) == LDB_OK);
    for (int i = 0; i < 1000; i++)
        push(in, ri(i, (i * 7919) % 1000), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 10);
    struct df_counters c;
    df_node_counters(top, &c);
    CHECK_INT(c.retained_rows, 1000);
    /* Outside the window: nothing; inside: one row in, one out. */
    push(in, ri(5000, 900), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 0);
    push(in, ri(5001, -1), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 2);
    push(in, ri(5001, -1), -1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 2);
    /* Duplicates count as positions. */
    push(in, ri(7, 7 * 7919 % 1000), 3);
    CHECK(df_run(g) == LDB_OK);
    CHECK(out_len(out) <= 2);
    push(in, ri(7, 7 * 7919 % 1000), -3);
    CHECK(df_run(g) == LDB_OK);
    /* Moving the window emits the minimal difference. */
    CHECK(df_topk_set_window(top, 5, 10) == LDB_OK);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 10);
    CHECK(df_topk_set_window(top, 5, DF_NO_LIMIT) == LDB_OK);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(out), 1001 - 15);
    df_graph_free(g);
}

/* ---- invariants ---------------------------------------------------------------------- */

static void negative_multiplicity_is_internal(void)
{
    df_graph *g;
    df_node *in, *d, *out;
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    CHECK(df_distinct(g, in, binary, &d) == LDB_OK);
    CHECK(df_output(g, d, &out) == LDB_OK);
    push(in, ri(1, 1), -1);
    CHECK_INT(df_run(g), LDB_INTERNAL);
    df_graph_free(g);
    /* Misuse: wrong column count, key column out of range. */
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    row *r = row_alloc(3);
    CHECK_INT(df_push(in, r, 1), LDB_MISUSE);
    row_release(r);
    CHECK_INT(df_graph_error(g), LDB_MISUSE);
    df_graph_free(g);
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &in) == LDB_OK);
    uint32_t bad[] = { 7 };
    df_key k = { 1, bad, binary };
    CHECK_INT(df_arrange(g, in, &k, &d), LDB_MISUSE);
    df_graph_free(g);
}

/* ---- external arrangements ------------------------------------------------------------ */

struct fake {
    row *rows[16];
    int64_t w[16];
    int n;
};

static int fake_lookup(void *ctx, const value *key, uint64_t hash, df_visit_fn visit, void *vctx)
{
    struct fake *f = ctx;
    for (int i = 0; i < f->n; i++)
        if (value_eq(&f->rows[i]->cols[1], key, LDB_COLL_BINARY)) {
            int rc = visit(vctx, f->rows[i], f->w[i]);
            if (rc)
                return rc;
        }
    return LDB_OK;
}

static int fake_scan(void *ctx, df_visit_fn visit, void *vctx)
{
    struct fake *f = ctx;
    for (int i = 0; i < f->n; i++) {
        int rc = visit(vctx, f->rows[i], f->w[i]);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int count_visit(void *ctx, row *r, int64_t w)
{
    *(int64_t *)ctx += w;
    return LDB_OK;
}

static void external_arrangement_shared_by_two_joins(void)
{
    static const struct df_arrangement_ops ops = { fake_lookup, fake_scan };
    struct fake f = { .n = 0 };
    df_graph *g;
    df_node *idx_in, *a, *b, *ext, *aa, *ab, *j1, *j2, *o1, *o2;
    df_key k1 = { 1, col1, binary }, k0 = { 1, col0, binary };
    CHECK(df_graph_new(&g) == LDB_OK);
    CHECK(df_input(g, 2, &idx_in) == LDB_OK);
    CHECK(df_input(g, 2, &a) == LDB_OK);
    CHECK(df_input(g, 2, &b) == LDB_OK);
    CHECK(df_arrange_external(g, idx_in, &k1, &ops, &f, &ext) == LDB_OK);
    CHECK(df_arrange(g, a, &k0, &aa) == LDB_OK);
    CHECK(df_arrange(g, b, &k0, &ab) == LDB_OK);
    CHECK(df_join(g, aa, ext, DF_JOIN_INNER, 0, NULL, NULL, &j1) == LDB_OK);
    CHECK(df_join(g, ab, ext, DF_JOIN_ANTI, 0, NULL, NULL, &j2) == LDB_OK);
    CHECK(df_output(g, j1, &o1) == LDB_OK);
    CHECK(df_output(g, j2, &o2) == LDB_OK);
    push(a, ri(1, 0), 1);
    push(b, ri(1, 0), 1);
    push(b, ri(2, 0), 1);
    /* The table's index already shows the new row when the graph runs. */
    f.rows[f.n] = ri(100, 1);
    f.w[f.n++] = 1;
    push(idx_in, ri(100, 1), 1);
    CHECK(df_run(g) == LDB_OK);
    CHECK_INT(out_len(o1), 1);
    CHECK_INT(out_weight(o2, ri(2, 0)), 1);
    CHECK_INT(out_len(o2), 1);
    int64_t total = 0;
    CHECK(df_arrangement_scan(ext, count_visit, &total) == LDB_OK);
    CHECK_INT(total, 1);
    struct df_counters c;
    df_node_counters(ext, &c);
    CHECK_INT(c.retained_rows, 0); /* the graph keeps no copy of the table */
    df_graph_free(g);
    row_release(f.rows[0]);
}

/* ---- consolidation ---------------------------------------------------------------- */

static void consolidation_of_large_batches(void)
{
    rng r;
    rng_seed(&r, test_seed());
    enum { N = 50000, DISTINCT = 3000 };
    row **samples = malloc(DISTINCT * sizeof *samples);
    int64_t *want = calloc(DISTINCT, sizeof *want);
    for (int i = 0; i < DISTINCT; i++)
        samples[i] = i % 2 ? ri(i / 2, 0) : r2(value_real((double)(i / 2)), value_int(0));
    df_batch b = DF_BATCH_INIT;
    for (int i = 0; i < N; i++) {
        int k = (int)rng_below(&r, DISTINCT);
        int64_t w = rng_range(&r, -2, 2);
        /* a fresh copy, so identity and not pointers must match */
        row *copy = row_from(samples[k]->cols, 2);
        CHECK(df_batch_push(&b, copy, w) == LDB_OK);
        row_release(copy);
        want[k] += w;
    }
    CHECK(df_batch_consolidate(&b) == LDB_OK);
    size_t nonzero = 0;
    for (int i = 0; i < DISTINCT; i++)
        nonzero += want[i] != 0;
    CHECK_INT(b.len, nonzero);
    for (size_t i = 0; i < b.len; i++) {
        int k = -1;
        for (int j = 0; j < DISTINCT && k < 0; j++)
            if (row_identical(samples[j], b.e[i].r))
                k = j;
        CHECK(k >= 0);
        CHECK_INT(b.e[i].w, want[k]);
    }
    df_batch_free(&b);
    for (int i = 0; i < DISTINCT; i++)
        row_release(samples[i]);
    free(samples);
    free(want);
}

TEST_MAIN(T(allocation_failure_sweep), T(callback_error_fails_run), T(no_spurious_output),
          T(scalar_aggregate_exists_when_empty), T(left_join_padding_transitions),
          T(topk_work_and_window), T(negative_multiplicity_is_internal),
          T(external_arrangement_shared_by_two_joins), T(consolidation_of_large_batches),
          T(join_chain_work))
