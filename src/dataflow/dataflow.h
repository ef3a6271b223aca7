/*
 * dataflow.h - the differential dataflow core: weighted batches,
 * arrangements, operators and the graph that runs them.
 *
 * Data are weighted multisets of rows: an entry (row, w) adds w copies of
 * the row (w < 0 retracts them); an update is -old +new. A graph is a DAG
 * of operator nodes built up front; every node turns the deltas of its
 * inputs into its own output delta. df_run processes the nodes once in
 * creation order (a topological order, since a node's inputs exist before
 * it), which leaves no pending work; each output node then holds the
 * consolidated delta of that run, readable until the next run.
 *
 * Equalities (docs/VALUES.md "Two equalities"):
 * - whole rows are consolidated by IDENTITY (row_identical): 5 and 5.0
 *   stay different rows, because a visible value must never silently
 *   change;
 * - keys (join keys, group keys, DISTINCT and set operations) use
 *   CANONICAL equality (value_eq) under a collation per key column.
 *   Where canonically equal but non-identical rows meet under one key, the
 *   row shown is the least under row_cmp_identity (never arrival order).
 *
 * Keys are column lists (struct df_key), not per-row callbacks: the SQL
 * compiler first puts a computed key into columns with a map. Arranged
 * rows therefore carry their own keys and arrangements store no key
 * copies.
 *
 * Errors: every function that can fail returns an int result code. The
 * first failure of any kind (LDB_NOMEM, a callback's own code, LDB_MISUSE
 * for a contract violation, LDB_INTERNAL for a broken invariant such as a
 * negative multiplicity) puts the graph in a terminal failed state with
 * that code: every later call returns it, output deltas read as empty,
 * and the owner frees the graph and builds a new one. Operator state is
 * never rolled back.
 *
 * Callbacks return LDB_OK or an error code; they own any message (the SQL
 * layer keeps it in its ctx). Rows handed to callbacks are borrowed for
 * the call.
 *
 * Ownership: the graph owns its nodes; df_node pointers stay valid until
 * df_graph_free. A batch holds one reference to each of its rows. Key and
 * aggregate specifications are copied at node creation.
 */
#ifndef LDB_DATAFLOW_DATAFLOW_H
#define LDB_DATAFLOW_DATAFLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "value/aggregate.h"
#include "value/row.h"

/* ---- weighted batches ------------------------------------------------- */

typedef struct df_entry {
    row *r;
    int64_t w;
} df_entry;

typedef struct df_batch {
    df_entry *e;
    size_t len, cap;
} df_batch;

#define DF_BATCH_INIT { NULL, 0, 0 }

/* Appends (r, w), retaining r. */
int df_batch_push(df_batch *b, row *r, int64_t w);
/* Capacity (entries) a cleared batch keeps for the next run: a hydration's
 * or a bulk commit's buffer is freed with its rows rather than held for
 * as long as the query lives, while a stream of small runs allocates no
 * buffers. */
#define DF_BATCH_KEEP 4096

/* Releases every row; keeps the capacity up to DF_BATCH_KEEP entries. */
void df_batch_clear(df_batch *b);
void df_batch_free(df_batch *b);
/* Merges identical rows (summing weights) and drops zero weights. The
 * order of the result is unspecified. */
int df_batch_consolidate(df_batch *b);

/* ---- keys ---------------------------------------------------------------- */

typedef struct df_key {
    uint32_t n;
    const uint32_t *cols;              /* column of each key part */
    const enum ldb_collation *colls;   /* collation of each key part */
} df_key;

/* Hash of r's key columns, consistent with canonical equality under the
 * key's collations. */
uint64_t df_key_hash(const df_key *k, const row *r);
/* The same hash computed from the key values themselves (vals[i] is key
 * part i), for external arrangements. */
uint64_t df_key_hash_values(const df_key *k, const value *vals);

/* ---- graph ------------------------------------------------------------------ */

typedef struct df_graph df_graph;
typedef struct df_node df_node;

int df_graph_new(df_graph **out);
void df_graph_free(df_graph *g);
/* LDB_OK, or the code the graph failed with. */
int df_graph_error(const df_graph *g);
/* Processes all pushed input. On failure the graph is failed (see top). */
int df_run(df_graph *g);

struct df_counters {
    uint64_t rows_in;      /* entries consumed, over all runs */
    uint64_t rows_out;     /* entries emitted, over all runs */
    size_t retained_rows;  /* rows (with their multiplicity where said) held now */
    size_t retained_bytes; /* bytes of that state, rows included */
};

void df_node_counters(const df_node *n, struct df_counters *c);
/* Sums over all nodes. Rows shared by several nodes count once per node. */
void df_graph_counters(const df_graph *g, struct df_counters *c);
uint32_t df_node_ncols(const df_node *n);
/* Cheap parts of the counters, for hot paths: rows consumed by every
 * node (O(nodes)), and rows a top-k holds over all its groups (O(groups);
 * 0 for a node that is not a top-k). */
uint64_t df_graph_rows_in(const df_graph *g);
size_t df_topk_rows(const df_node *topk);

/* Emitters collect the rows a callback produces; df_emit takes over the
 * caller's reference to r (also on failure). */
typedef struct df_emitter df_emitter;
int df_emit(df_emitter *em, row *r, int64_t w);

/* ---- sources and linear operators ------------------------------------------ */

/* An input of rows with ncols columns. */
int df_input(df_graph *g, uint32_t ncols, df_node **out);
/* Stages (r, w) for the next run (r is retained; LDB_MISUSE if its column
 * count differs from the input's). */
int df_push(df_node *input, row *r, int64_t w);

/* One row out per row in: *out is a new reference (row_retain(in) is
 * fine) with ncols columns; the weight is carried over. */
typedef int (*df_map_fn)(void *ctx, row *in, row **out);
int df_map(df_graph *g, df_node *in, uint32_t ncols, df_map_fn fn, void *ctx,
           df_node **out);

/* 0..n rows out per row in: each df_emit(em, r, m) gives weight w * m. */
typedef int (*df_flat_map_fn)(void *ctx, row *in, df_emitter *em);
int df_flat_map(df_graph *g, df_node *in, uint32_t ncols, df_flat_map_fn fn,
                void *ctx, df_node **out);

typedef int (*df_filter_fn)(void *ctx, const row *in, bool *keep);
int df_filter(df_graph *g, df_node *in, df_filter_fn fn, void *ctx, df_node **out);

int df_negate(df_graph *g, df_node *in, df_node **out);
/* Union all of n >= 1 inputs with equal column counts. */
int df_concat(df_graph *g, df_node *const *ins, uint32_t n, df_node **out);

/* ---- arrangements and joins ----------------------------------------------- */

/*
 * An arrangement is a node whose output delta is its input's, and which
 * also gives lookups by key into the state after this run's delta. Any
 * number of joins may read one arrangement.
 *
 * df_arrange keeps that state itself: key -> consolidated multiset of
 * rows. df_arrange_external keeps nothing: the state lives elsewhere (a
 * storage index) and is reached through ops. The owner must make the
 * external state equal to the arrangement's accumulated input, already
 * including the delta pushed for the next run, whenever df_run is called.
 */
typedef int (*df_visit_fn)(void *vctx, row *r, int64_t w);

struct df_arrangement_ops {
    /* Calls visit for every row whose key parts are canonically equal to
     * key[0..n) under the key's collations (hash is df_key_hash_values
     * of them), with its weight; returns the first non-OK visit result.
     * With an empty key every row matches. */
    int (*lookup)(void *ctx, const value *key, uint64_t hash, df_visit_fn visit,
                  void *vctx);
    /* Calls visit for every row. */
    int (*scan)(void *ctx, df_visit_fn visit, void *vctx);
};

int df_arrange(df_graph *g, df_node *in, const df_key *key, df_node **out);
int df_arrange_external(df_graph *g, df_node *in, const df_key *key,
                        const struct df_arrangement_ops *ops, void *ctx,
                        df_node **out);
/* Every row of the arrangement's current state. */
int df_arrangement_scan(df_node *arr, df_visit_fn visit, void *vctx);

enum df_join_kind {
    DF_JOIN_INNER,
    DF_JOIN_LEFT,
    DF_JOIN_RIGHT,
    DF_JOIN_FULL,
    DF_JOIN_SEMI, /* left rows with a match (EXISTS) */
    DF_JOIN_ANTI  /* left rows without a match (NOT EXISTS) */
};

/* By default a key with a NULL part matches nothing (SQL "="); with this
 * flag NULL equals NULL (IS NOT DISTINCT FROM, routing keys). */
#define DF_JOIN_NULLS_EQUAL 1u

/* Called on the combined row (left columns ++ right columns, a borrowed
 * scratch row that must not be retained). */
typedef int (*df_residual_fn)(void *ctx, const row *joined, bool *keep);

/*
 * Joins two arrangements on their keys (same number of parts and same
 * collations). Output rows: left columns ++ right columns, the missing
 * side NULL-padded for outer joins; semi and anti joins output left rows.
 * A pair joins when the keys are equal and the residual (if any) keeps
 * it; with empty keys that is a cross join filtered by the residual. A
 * row is matched when the total weight of the rows it joins is positive.
 */
int df_join(df_graph *g, df_node *left, df_node *right, enum df_join_kind kind,
            unsigned flags, df_residual_fn residual, void *ctx, df_node **out);

/* ---- reductions ---------------------------------------------------------------- */

struct df_agg_spec {
    const struct agg_def *def;
    const uint32_t *args;      /* def->nargs argument columns, then the
                                  order argument when norder > 0 */
    enum ldb_collation coll;   /* argument collation */
    bool distinct;
    const value *sep;          /* string_agg separator, NULL: "," */
    const struct agg_order_term *order; /* agg_inst_set_order's terms */
    uint32_t norder;
};

/* The output row exists even for an empty input (a scalar aggregate:
 * empty key only). */
#define DF_REDUCE_SCALAR 1u

/*
 * Group by key (canonical equality) and aggregate: one output row per
 * group, key columns then aggregate results. A group's key columns show
 * the least (row_cmp_identity) of its contributors' key values. An
 * aggregate without AGG_RETRACT is retracted through its instance's
 * recompute layer (aggregate.h): it keeps the group's values.
 */
int df_reduce(df_graph *g, df_node *in, const df_key *key,
              const struct df_agg_spec *aggs, uint32_t naggs, unsigned flags,
              df_node **out);

/* Recomputes a changed group's output rows (ncols columns, emitted with
 * their weights) from its consolidated rows. */
typedef int (*df_reduce_fn)(void *ctx, const df_entry *rows, size_t n,
                            df_emitter *em);
int df_reduce_general(df_graph *g, df_node *in, const df_key *key, uint32_t ncols,
                      df_reduce_fn fn, void *ctx, df_node **out);

/* ---- set operations ---------------------------------------------------------------- */

/*
 * Rows are compared canonically on all columns (colls: one collation per
 * column). For each class of equal rows with left multiplicity a and
 * right multiplicity b the output has m copies, taken from the left's
 * rows in row_cmp_identity order: DISTINCT m = min(a, 1) (one input),
 * INTERSECT m = (a > 0 && b > 0), EXCEPT m = (a > 0 && b == 0),
 * INTERSECT ALL m = min(a, b), EXCEPT ALL m = max(a - b, 0).
 */
enum df_setop { DF_DISTINCT, DF_INTERSECT, DF_EXCEPT, DF_INTERSECT_ALL, DF_EXCEPT_ALL };

int df_distinct(df_graph *g, df_node *in, const enum ldb_collation *colls,
                df_node **out);
int df_setop(df_graph *g, enum df_setop op, df_node *left, df_node *right,
             const enum ldb_collation *colls, df_node **out);

/* ---- top-k --------------------------------------------------------------------- */

/* Sort order of rows; the node breaks its ties by row_cmp_identity. */
typedef int (*df_cmp_fn)(void *ctx, const row *a, const row *b);

#define DF_NO_LIMIT (-1)

/*
 * Per group (canonical key), the rows at positions [offset, offset +
 * limit) of the group in cmp order, each row counted with its
 * multiplicity. Emits only rows entering or leaving the window.
 */
int df_topk(df_graph *g, df_node *in, const df_key *group, df_cmp_fn cmp,
            void *ctx, int64_t offset, int64_t limit, df_node **out);
/* Moves the window; the next run emits the difference for every group. */
int df_topk_set_window(df_node *topk, int64_t offset, int64_t limit);

/* ---- outputs ------------------------------------------------------------------------ */

int df_output(df_graph *g, df_node *in, df_node **out);
/* The consolidated delta of the last successful run (borrowed until the
 * next run or df_clear_deltas); empty when the graph has failed. */
const df_entry *df_output_delta(const df_node *out, size_t *n);
/* Moves that delta's entries, with their references, to the end of acc
 * (no copy when acc is empty: the two swap buffers); the output then
 * reads empty. LDB_NOMEM leaves both as they were. */
int df_output_take(df_node *out, df_batch *acc);
/* Drops the last run's deltas, outputs included, once the owner has read
 * them, and the buffers a large run left (beyond DF_BATCH_KEEP entries).
 * A run starts with the same step; doing it early frees a large run's
 * rows and buffers with that run instead of charging them to the next. */
void df_clear_deltas(df_graph *g);

#endif
