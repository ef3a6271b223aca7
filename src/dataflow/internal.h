/*
 * internal.h - what the operator files of src/dataflow share: the node
 * header, the graph, consolidation scratch, key comparison, and the keyed
 * group table used by every operator with per-key state.
 *
 * Node invariants:
 * - a node is allocated zeroed by node_new and appended to the graph, so
 *   its free function must accept a node whose own init did not finish;
 * - delta points either to the node's own out batch or to an input's
 *   delta (operators that pass their input through unchanged);
 * - every node is processed after its inputs, once per run, and only
 *   when an input delta is non-empty or the node has pending work.
 */
#ifndef LDB_DATAFLOW_INTERNAL_H
#define LDB_DATAFLOW_INTERNAL_H

#include "base/hash.h"
#include "base/hmap.h"
#include "base/hsort.h"
#include "base/vec.h"
#include "dataflow/dataflow.h"

struct df_node_ops {
    const char *name;
    int (*run)(df_node *n);
    void (*free)(df_node *n);
    /* Rows and bytes the node's state holds now (NULL: none). */
    void (*retained)(const df_node *n, size_t *rows, size_t *bytes);
};

struct df_node {
    df_graph *g;
    const struct df_node_ops *ops;
    uint32_t ncols;
    uint32_t nin;
    df_node **in;
    df_batch out;
    const df_batch *delta;
    bool pending;
    uint64_t rows_in, rows_out;
};

/* Buffers for consolidating large batches, kept across runs. */
struct df_scratch {
    struct hkey *a, *b;
    size_t cap;
    df_entry *tmp;
    size_t tmp_cap;
};

struct df_graph {
    VEC(df_node *) nodes;
    int err;
    struct df_scratch scratch;
};

struct df_emitter {
    df_batch *b;
    int64_t mult;
    uint32_t ncols;
};

/* Allocates a zeroed node of size bytes with these inputs (copied) and
 * appends it to g; on failure marks g failed. delta starts at &out. */
int node_new(df_graph *g, size_t size, const struct df_node_ops *ops,
             uint32_t ncols, df_node *const *ins, uint32_t nin, df_node **out);
/* Marks g failed with rc (keeping the first code) and returns rc. */
int df_fail(df_graph *g, int rc);
/* Consolidates with the graph's scratch buffers. */
int df_consolidate(df_batch *b, struct df_scratch *s);
void df_scratch_free(struct df_scratch *s);

/* Room for n more entries. */
static inline int batch_reserve(df_batch *b, size_t n)
{
    return b->len + n <= b->cap ? LDB_OK : vec_grow_(&b->e, &b->cap, b->len + n, sizeof *b->e);
}

/* Appends (r, w) taking over the caller's reference (released on failure). */
static inline int batch_take(df_batch *b, row *r, int64_t w)
{
    if (b->len == b->cap && vec_grow_(&b->e, &b->cap, b->len + 1, sizeof *b->e)) {
        row_release(r);
        return LDB_NOMEM;
    }
    b->e[b->len].r = r;
    b->e[b->len++].w = w;
    return LDB_OK;
}

/* ---- keys ------------------------------------------------------------------ */

/* Owned copy of a key (cols and colls in one allocation). */
struct key_copy {
    df_key k;
    uint32_t *buf;
};
int key_copy_init(struct key_copy *kc, const df_key *k, uint32_t ncols);
void key_copy_free(struct key_copy *kc);

/* Canonical equality of a's key columns acols and b's key columns bcols. */
static inline bool key_eq(const df_key *k, const row *a, const uint32_t *acols,
                          const row *b, const uint32_t *bcols)
{
    for (uint32_t i = 0; i < k->n; i++)
        if (!value_eq(&a->cols[acols[i]], &b->cols[bcols[i]], k->colls[i]))
            return false;
    return true;
}

static inline bool key_has_null(const df_key *k, const row *r, const uint32_t *cols)
{
    for (uint32_t i = 0; i < k->n; i++)
        if (value_is_null(&r->cols[cols[i]]))
            return true;
    return false;
}

uint64_t key_hash_cols(const df_key *k, const row *r, const uint32_t *cols);

/* ---- keyed groups ---------------------------------------------------------- */
/*
 * A table of per-key groups: an hmap from key hash to a slot in a slab of
 * fixed-size slots (header + the operator's state), with freed slots
 * reused through a free list threaded through them. Slot indices are
 * stable; slot pointers die at the next gtab_get that allocates.
 */
struct ghead {
    uint64_t hash;
    row *keyrow;       /* holds the key at the table's kcols */
    uint32_t touched;  /* on the operator's touched list this run */
    uint32_t live;     /* slot in use */
};

struct gtab {
    hmap map;
    char *slots;
    size_t stride;
    uint32_t len, cap, free_head; /* free_head: UINT32_MAX when none */
    uint32_t count;               /* live groups */
    const df_key *key;
    const uint32_t *kcols;        /* key columns of keyrow */
};

void gtab_init(struct gtab *t, size_t slot_size, const df_key *key,
               const uint32_t *kcols);
void gtab_free(struct gtab *t);
static inline struct ghead *gtab_at(const struct gtab *t, uint32_t i)
{
    return (struct ghead *)(t->slots + (size_t)i * t->stride);
}
/* The group of r's key (at r's pcols); a new group is zeroed with hash
 * set, *created true, and its keyrow must be set before the next call. */
int gtab_get(struct gtab *t, const row *r, const uint32_t *pcols, uint64_t hash,
             uint32_t *idx, bool *created);
/* The group of r's key, or UINT32_MAX. */
uint32_t gtab_find(const struct gtab *t, const row *r, const uint32_t *pcols,
                   uint64_t hash);
/* Removes a group (its keyrow is not looked at). */
void gtab_del(struct gtab *t, uint32_t idx);
size_t gtab_bytes(const struct gtab *t);

/* ---- arrangements (arrange.c), read by join.c ------------------------------ */

struct df_arr;
const df_key *arr_key(const df_node *arr);
bool arr_is_arrangement(const df_node *n);
/* Rows of the current state whose key equals r's key at cols. */
int arr_lookup(df_node *arr, const row *r, const uint32_t *cols, uint64_t hash,
               df_visit_fn visit, void *vctx);
/* Total weight of those rows. */
int arr_weight(df_node *arr, const row *r, const uint32_t *cols, uint64_t hash,
               int64_t *w);
/* Entries of this run's delta whose key equals r's key at cols. */
int arr_delta_lookup(df_node *arr, const row *r, const uint32_t *cols,
                     uint64_t hash, df_visit_fn visit, void *vctx);
/* Calls visit with the index of one delta entry per distinct key of this
 * run's delta. */
int arr_delta_keys(df_node *arr, int (*visit)(void *vctx, size_t i), void *vctx);
/* Key hash of delta entry i (computed once per run). */
uint64_t arr_delta_hash(const df_node *arr, size_t i);
/* The state held no rows before this run (false when unknown). */
bool arr_was_empty(const df_node *arr);

#endif
