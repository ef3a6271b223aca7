/*
 * arrange.c - arrangements: state indexed by key, shared by joins.
 *
 * An arrangement node passes its input delta through (its delta IS the
 * input's delta, no copy) and answers lookups against the state after
 * that delta. Updating the state as soon as the delta arrives is what
 * lets an arrangement be external: a storage index can only show its
 * current state, so joins are written against new states (join.c).
 *
 * Internal state: a group table (key hash -> group) where each group is
 * the consolidated multiset of its rows: one entry inline (the common
 * case of a unique key, no allocation), else an array; groups larger
 * than LINEAR_MAX also get a row-hash index so that an update finds its
 * row in O(1) instead of scanning a skewed key. The group keeps the sum
 * of its weights (the match count of a join without residual). Rows are
 * held by reference; the first entry's row is the group's key holder.
 *
 * Per run, every arrangement computes the key hash of each delta entry
 * once (joins reuse it to probe the other side) and, only when a join
 * asks, an index of the delta by key.
 *
 * Retained: one entry per distinct (row) with nonzero weight; bytes are
 * the group table, entry arrays, group indexes and the rows' row_mem.
 * An external arrangement retains nothing.
 */
#include "dataflow/internal.h"

#include "base/mem.h"

#include <string.h>

#define LINEAR_MAX 16

struct agroup {
    struct ghead h;
    int64_t wsum;
    uint32_t n, cap; /* cap 0: the one entry is inline */
    union {
        df_entry one;
        df_entry *many;
    } e;
    hmap idx; /* row hash -> entry position, when n > LINEAR_MAX */
};

struct df_arr {
    df_node base;
    struct key_copy key;
    const struct df_arrangement_ops *ext;
    void *ext_ctx;
    value *keybuf; /* key values of an external lookup */
    struct gtab groups;
    size_t rows, row_bytes, heap_bytes;
    bool was_empty;
    /* this run */
    uint64_t *dhash;
    size_t dhash_cap;
    hmap dindex; /* key hash -> first delta entry of that key */
    uint32_t *dnext;
    size_t dnext_cap;
    bool dindexed;
};

static inline df_entry *entries(struct agroup *g) { return g->cap ? g->e.many : &g->e.one; }

/* ---- group internals ------------------------------------------------------- */

struct rprobe {
    const row *r;
    const df_entry *e;
};

static bool entry_eq(const void *key, uint64_t val)
{
    const struct rprobe *p = key;
    return row_identical(p->r, p->e[val].r);
}

static int index_entry(struct agroup *g, uint32_t pos)
{
    df_entry *e = entries(g);
    struct rprobe p = { e[pos].r, e };
    uint64_t *val;
    bool found;
    int rc = hmap_put(&g->idx, e[pos].r->hash, NULL, &p, &val, &found);
    if (rc == LDB_OK)
        *val = pos;
    return rc;
}

static uint64_t *index_slot(struct agroup *g, const row *r)
{
    struct rprobe p = { r, entries(g) };
    return hmap_get(&g->idx, r->hash, entry_eq, &p);
}

/* Position of the row identical to r, or UINT32_MAX; *slot is its slot
 * in the group's row index, NULL while the group has none. */
static uint32_t find_entry(struct agroup *g, const row *r, uint64_t **slot)
{
    *slot = NULL;
    if (g->n > LINEAR_MAX) {
        uint64_t *v = *slot = index_slot(g, r);
        return v ? (uint32_t)*v : UINT32_MAX;
    }
    df_entry *e = entries(g);
    for (uint32_t i = 0; i < g->n; i++)
        if (e[i].r->hash == r->hash && row_identical(e[i].r, r))
            return i;
    return UINT32_MAX;
}

static size_t idx_bytes(const struct agroup *g) { return hmap_bytes(&g->idx); }

/* Appends a new entry (r retained on success). */
static int add_entry(struct df_arr *a, struct agroup *g, row *r, int64_t w)
{
    if (g->n == 1 && g->cap == 0) {
        df_entry *m = mem_alloc(4 * sizeof *m);
        if (!m)
            return LDB_NOMEM;
        m[0] = g->e.one;
        g->e.many = m;
        g->cap = 4;
        a->heap_bytes += 4 * sizeof *m;
    } else if (g->cap && g->n == g->cap) {
        df_entry *m = mem_realloc(g->e.many, 2 * g->cap * sizeof *m);
        if (!m)
            return LDB_NOMEM;
        g->e.many = m;
        a->heap_bytes += g->cap * sizeof *m;
        g->cap *= 2;
    }
    size_t before = idx_bytes(g);
    df_entry *e = entries(g);
    e[g->n] = (df_entry){ r, w };
    if (g->n + 1 > LINEAR_MAX) {
        /* Index every entry when crossing the threshold, else just this. */
        bool crossing = g->n == LINEAR_MAX;
        for (uint32_t i = crossing ? 0 : g->n; i <= g->n; i++) {
            if (index_entry(g, i)) {
                if (crossing)
                    hmap_free(&g->idx);
                return LDB_NOMEM;
            }
        }
    }
    a->heap_bytes += idx_bytes(g) - before;
    g->n++;
    row_retain(r);
    a->rows++;
    a->row_bytes += row_mem(r);
    return LDB_OK;
}

/* Removes entry pos (weight now zero), whose row index slot find_entry
 * gave; frees the group when it empties. */
static void remove_entry(struct df_arr *a, uint32_t gi, uint32_t pos, uint64_t *slot)
{
    struct agroup *g = (struct agroup *)gtab_at(&a->groups, gi);
    df_entry *e = entries(g);
    row *gone = e[pos].r;
    if (g->n > LINEAR_MAX) {
        hmap_del(&g->idx, slot);
        if (pos != g->n - 1)
            *index_slot(g, e[g->n - 1].r) = pos;
    }
    e[pos] = e[g->n - 1];
    g->n--;
    if (g->n == LINEAR_MAX) {
        a->heap_bytes -= idx_bytes(g);
        hmap_free(&g->idx);
    }
    if (g->n == 0) {
        if (g->cap) {
            a->heap_bytes -= g->cap * sizeof(df_entry);
            mem_free(g->e.many);
        }
        gtab_del(&a->groups, gi);
    } else {
        g->h.keyrow = entries(g)[0].r;
    }
    a->rows--;
    a->row_bytes -= row_mem(gone);
    row_release(gone);
}

static int apply(struct df_arr *a, row *r, int64_t w, uint64_t hash)
{
    uint32_t gi;
    bool created;
    if (gtab_get(&a->groups, r, a->key.k.cols, hash, &gi, &created))
        return LDB_NOMEM;
    struct agroup *g = (struct agroup *)gtab_at(&a->groups, gi);
    if (created)
        g->h.keyrow = r;
    row_hash(r);
    uint64_t *slot = NULL;
    uint32_t pos = created ? UINT32_MAX : find_entry(g, r, &slot);
    if (pos == UINT32_MAX) {
        if (add_entry(a, g, r, w)) {
            if (created)
                gtab_del(&a->groups, gi);
            return LDB_NOMEM;
        }
        g->wsum += w;
        return LDB_OK;
    }
    g->wsum += w;
    if ((entries(g)[pos].w += w) == 0)
        remove_entry(a, gi, pos, slot);
    return LDB_OK;
}

/* ---- the node ----------------------------------------------------------------- */

static int arr_run(df_node *n)
{
    struct df_arr *a = (struct df_arr *)n;
    const df_batch *d = n->delta;
    a->dindexed = false;
    a->was_empty = !a->ext && a->rows == 0;
    if (d->len > a->dhash_cap) {
        uint64_t *h = mem_realloc(a->dhash, d->len * sizeof *h);
        if (!h)
            return LDB_NOMEM;
        a->dhash = h;
        a->dhash_cap = d->len;
    }
    for (size_t i = 0; i < d->len; i++) {
        a->dhash[i] = df_key_hash(&a->key.k, d->e[i].r);
        if (!a->ext && d->e[i].w != 0) {
            int rc = apply(a, d->e[i].r, d->e[i].w, a->dhash[i]);
            if (rc)
                return rc;
        }
    }
    return LDB_OK;
}

static void arr_free(df_node *n)
{
    struct df_arr *a = (struct df_arr *)n;
    for (uint32_t i = 0; i < a->groups.len; i++) {
        struct agroup *g = (struct agroup *)gtab_at(&a->groups, i);
        if (!g->h.live)
            continue;
        df_entry *e = entries(g);
        for (uint32_t k = 0; k < g->n; k++)
            row_release(e[k].r);
        if (g->cap)
            mem_free(g->e.many);
        hmap_free(&g->idx);
    }
    gtab_free(&a->groups);
    key_copy_free(&a->key);
    mem_free(a->keybuf);
    mem_free(a->dhash);
    mem_free(a->dnext);
    hmap_free(&a->dindex);
}

static void arr_retained(const df_node *n, size_t *rows, size_t *bytes)
{
    const struct df_arr *a = (const struct df_arr *)n;
    *rows = a->rows;
    *bytes = a->ext ? 0 : gtab_bytes(&a->groups) + a->heap_bytes + a->row_bytes;
}

static const struct df_node_ops arr_ops = { "arrange", arr_run, arr_free, arr_retained };

static int arrange(df_graph *g, df_node *in, const df_key *key,
                   const struct df_arrangement_ops *ops, void *ctx, df_node **out)
{
    if (!g->err && (!in || !key || (ops && (!ops->lookup || !ops->scan))))
        return df_fail(g, LDB_MISUSE);
    int rc = node_new(g, sizeof(struct df_arr), &arr_ops, in ? in->ncols : 0, &in, 1, out);
    if (rc)
        return rc;
    struct df_arr *a = (struct df_arr *)*out;
    a->base.delta = in->delta;
    hmap_init(&a->dindex);
    rc = key_copy_init(&a->key, key, in->ncols);
    if (rc)
        return df_fail(g, rc);
    gtab_init(&a->groups, sizeof(struct agroup), &a->key.k, a->key.k.cols);
    a->ext = ops;
    a->ext_ctx = ctx;
    if (ops && !(a->keybuf = mem_alloc(key->n * sizeof(value))))
        return df_fail(g, LDB_NOMEM);
    return LDB_OK;
}

int df_arrange(df_graph *g, df_node *in, const df_key *key, df_node **out)
{
    return arrange(g, in, key, NULL, NULL, out);
}

int df_arrange_external(df_graph *g, df_node *in, const df_key *key,
                        const struct df_arrangement_ops *ops, void *ctx, df_node **out)
{
    if (!g->err && !ops)
        return df_fail(g, LDB_MISUSE);
    return arrange(g, in, key, ops, ctx, out);
}

/* ---- reads (join.c) -------------------------------------------------------------- */

bool arr_is_arrangement(const df_node *n) { return n->ops == &arr_ops; }
const df_key *arr_key(const df_node *n) { return &((const struct df_arr *)n)->key.k; }
bool arr_was_empty(const df_node *n) { return ((const struct df_arr *)n)->was_empty; }
uint64_t arr_delta_hash(const df_node *n, size_t i) { return ((const struct df_arr *)n)->dhash[i]; }

/* Gathers r's key (at cols) for an external lookup. */
static const value *gather(struct df_arr *a, const row *r, const uint32_t *cols)
{
    for (uint32_t i = 0; i < a->key.k.n; i++)
        a->keybuf[i] = r->cols[cols[i]];
    return a->keybuf;
}

int arr_lookup(df_node *n, const row *r, const uint32_t *cols, uint64_t hash,
               df_visit_fn visit, void *vctx)
{
    struct df_arr *a = (struct df_arr *)n;
    if (a->ext)
        return a->ext->lookup(a->ext_ctx, gather(a, r, cols), hash, visit, vctx);
    uint32_t gi = gtab_find(&a->groups, r, cols, hash);
    if (gi == UINT32_MAX)
        return LDB_OK;
    struct agroup *g = (struct agroup *)gtab_at(&a->groups, gi);
    df_entry *e = entries(g);
    for (uint32_t i = 0; i < g->n; i++) {
        int rc = visit(vctx, e[i].r, e[i].w);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int add_weight(void *vctx, row *r, int64_t w)
{
    *(int64_t *)vctx += w;
    return LDB_OK;
}

int arr_weight(df_node *n, const row *r, const uint32_t *cols, uint64_t hash, int64_t *w)
{
    struct df_arr *a = (struct df_arr *)n;
    *w = 0;
    if (a->ext)
        return arr_lookup(n, r, cols, hash, add_weight, w);
    uint32_t gi = gtab_find(&a->groups, r, cols, hash);
    if (gi != UINT32_MAX)
        *w = ((struct agroup *)gtab_at(&a->groups, gi))->wsum;
    return LDB_OK;
}

int df_arrangement_scan(df_node *n, df_visit_fn visit, void *vctx)
{
    if (n->g->err)
        return n->g->err;
    if (!arr_is_arrangement(n))
        return df_fail(n->g, LDB_MISUSE);
    struct df_arr *a = (struct df_arr *)n;
    if (a->ext)
        return a->ext->scan(a->ext_ctx, visit, vctx);
    for (uint32_t i = 0; i < a->groups.len; i++) {
        struct agroup *g = (struct agroup *)gtab_at(&a->groups, i);
        df_entry *e = entries(g);
        for (uint32_t k = 0; g->h.live && k < g->n; k++) {
            int rc = visit(vctx, e[k].r, e[k].w);
            if (rc)
                return rc;
        }
    }
    return LDB_OK;
}

/* ---- the delta by key -------------------------------------------------------------- */

struct dprobe {
    const struct df_arr *a;
    const row *r;
    const uint32_t *cols;
};

static bool delta_eq(const void *key, uint64_t val)
{
    const struct dprobe *p = key;
    const df_key *k = &p->a->key.k;
    return key_eq(k, p->r, p->cols, p->a->base.delta->e[val].r, k->cols);
}

/* Chains the delta entries of each key: dindex holds the first, dnext
 * the rest. A table left large by an earlier, larger delta is dropped
 * rather than cleared, so that clearing never costs more than the delta. */
static int build_delta_index(struct df_arr *a)
{
    const df_batch *d = a->base.delta;
    if (a->dindexed)
        return LDB_OK;
    if (hmap_bytes(&a->dindex) > (4 * d->len + 64) * sizeof(hslot))
        hmap_free(&a->dindex);
    hmap_clear(&a->dindex);
    if (d->len > a->dnext_cap) {
        uint32_t *nx = mem_realloc(a->dnext, d->len * sizeof *nx);
        if (!nx)
            return LDB_NOMEM;
        a->dnext = nx;
        a->dnext_cap = d->len;
    }
    for (size_t i = d->len; i-- > 0;) {
        struct dprobe p = { a, d->e[i].r, a->key.k.cols };
        uint64_t *val;
        bool found;
        if (hmap_put(&a->dindex, a->dhash[i], delta_eq, &p, &val, &found))
            return LDB_NOMEM;
        a->dnext[i] = found ? (uint32_t)*val : UINT32_MAX;
        *val = i;
    }
    a->dindexed = true;
    return LDB_OK;
}

int arr_delta_lookup(df_node *n, const row *r, const uint32_t *cols, uint64_t hash,
                     df_visit_fn visit, void *vctx)
{
    struct df_arr *a = (struct df_arr *)n;
    const df_batch *d = n->delta;
    if (d->len == 0)
        return LDB_OK;
    int rc = build_delta_index(a);
    if (rc)
        return rc;
    struct dprobe p = { a, r, cols };
    uint64_t *val = hmap_get(&a->dindex, hash, delta_eq, &p);
    for (uint32_t i = val ? (uint32_t)*val : UINT32_MAX; i != UINT32_MAX; i = a->dnext[i]) {
        rc = visit(vctx, d->e[i].r, d->e[i].w);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

int arr_delta_keys(df_node *n, int (*visit)(void *vctx, size_t i), void *vctx)
{
    struct df_arr *a = (struct df_arr *)n;
    int rc = build_delta_index(a);
    if (rc)
        return rc;
    uint32_t pos = 0;
    for (uint64_t *val; (val = hmap_next(&a->dindex, &pos, NULL));) {
        rc = visit(vctx, (size_t)*val);
        if (rc)
            return rc;
    }
    return LDB_OK;
}
