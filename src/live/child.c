/*
 * child.c - child live results (LIVE (query), the seed's Collection-valued
 * include): between a root query's graph and its child handles.
 *
 * Per LIVE column the graph gives two outputs (compile.c, decorrelate.c):
 * dom, the active buckets (the distinct capture tuples of the parent
 * output's rows, which are also the parent's cell values), and rows, every
 * active bucket's rows with the tuple last. This file keeps the only map
 * outside the graph: tuple -> handle, per column. A +tuple in dom makes a
 * new handle (a new one for every activation, numbered per query), a
 * -tuple makes it leave; each handle's rows are staged into its own result
 * set, as a root's are. A bucket's rows are joined with its tuple, so an
 * activation brings the bucket's rows and a retirement their deletes in
 * the same run: a leaving handle's last batch is its deletes.
 *
 * Invariants: every handle in active[k] holds the live tuple of a dom row
 * (tuples compared as the graph's DISTINCT compares them); a handle is
 * never retargeted; a handle that left gets no batch again.
 *
 * Lifetime: a handle lives while its bucket is active or while the
 * program retains it (ldb_live_retain), whichever ends later. A retained
 * handle that left reads as an empty result; once its root query is
 * closed it is detached (root NULL) and reads as empty with no columns.
 * A handle is freed by the registry, never by a callback in progress.
 */
#include "live/live_internal.h"

#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

static struct live_child *child_at(const ldb_live *root, uint32_t k)
{
    return &root->p->children.data[k];
}

static enum ldb_collation tuple_coll(const ldb_live *root, uint32_t k)
{
    return child_at(root, k)->dom->cols[0].coll;
}

struct tuple_probe {
    const value *t;
    enum ldb_collation coll;
};

static bool tuple_eq(const void *key, uint64_t val)
{
    const struct tuple_probe *p = key;
    const ldb_live *h = (const ldb_live *)(uintptr_t)val;
    return value_eq(p->t, &h->dom->cols[0], p->coll);
}

/* The handle of tuple t in column k of root, or NULL. */
static ldb_live *find(const ldb_live *root, uint32_t k, const value *t)
{
    struct tuple_probe p = { t, tuple_coll(root, k) };
    uint64_t *slot = hmap_get(&root->buckets->active[k], value_hash(t, p.coll), tuple_eq, &p);
    return slot ? (ldb_live *)(uintptr_t)*slot : NULL;
}

const struct live_layout *live_layout_of(const ldb_live *q)
{
    if (!q->is_child)
        return &q->p->lay;
    return q->root ? &child_at(q->root, q->child)->lay : NULL;
}

/* The output whose rows q holds: LIVE_ROOT or a child's index. */
static uint32_t output_of(const ldb_live *q) { return q->is_child ? q->child : LIVE_ROOT; }

static const ldb_live *root_of(const ldb_live *q) { return q->is_child ? q->root : q; }

bool live_has_cells(const ldb_live *q)
{
    const ldb_live *root = root_of(q);
    if (!root || !root->buckets)
        return false;
    for (size_t k = 0; k < root->p->children.len; k++)
        if (child_at(root, (uint32_t)k)->parent == output_of(q))
            return true;
    return false;
}

void live_cells_fill(const ldb_live *q, const row *r, value *dst)
{
    const ldb_live *root = root_of(q);
    const struct live_layout *lay = live_layout_of(q);
    memcpy(dst, r->cols, lay->nvisible * sizeof *dst);
    for (size_t k = 0; k < root->p->children.len; k++) {
        const struct live_child *ch = child_at(root, (uint32_t)k);
        if (ch->parent != output_of(q))
            continue;
        ldb_live *h = find(root, (uint32_t)k, &r->cols[ch->cell]);
        dst[ch->cell] = h ? live_cell_value(h) : value_null();
    }
}

int live_children_init(ldb_live *q)
{
    size_t n = q->p->children.len;
    if (n == 0)
        return LDB_OK;
    struct live_buckets *b = mem_calloc(1, sizeof *b);
    if (!b || !(b->active = mem_calloc(n, sizeof *b->active))) {
        mem_free(b);
        return LDB_NOMEM;
    }
    q->buckets = b;
    return LDB_OK;
}

static void unmap(ldb_live *h);

/* ---- staging ------------------------------------------------------------------------ */

static int touch(struct live_buckets *b, ldb_live *h)
{
    if (h->touched)
        return LDB_OK;
    int rc = vec_push(&b->touched, h);
    h->touched = !rc;
    return rc;
}

/* A new handle for the tuple of dom row d in column k. */
static int activate(ldb_live *q, uint32_t k, row *d)
{
    const struct live_layout *lay = &child_at(q, k)->lay;
    struct live_buckets *b = q->buckets;
    ldb_live *h = mem_calloc(1, sizeof *h);
    if (!h)
        return LDB_NOMEM;
    h->reg = q->reg;
    h->is_child = true;
    h->child = k;
    h->root = q;
    h->ordered = lay->nsort > 0; /* only the child's own ORDER BY gives terms */
    h->dom = d;
    int rc = result_init(&h->rs, lay->key, lay->keycoll, lay->nkey, lay->sort, lay->nsort,
                         lay->nvisible, h->ordered);
    if (rc) {
        mem_free(h);
        return rc;
    }
    struct tuple_probe p = { &d->cols[0], tuple_coll(q, k) };
    uint64_t *slot;
    bool found;
    rc = vec_reserve(&b->touched, 1);
    if (!rc)
        rc = live_registry_add(q->reg, h);
    if (!rc) {
        rc = hmap_put(&b->active[k], value_hash(p.t, p.coll), tuple_eq, &p, &slot, &found);
        if (rc)
            live_registry_remove(q->reg, h);
    }
    if (rc) {
        result_free(&h->rs);
        mem_free(h);
        return rc;
    }
    *slot = (uintptr_t)h;
    row_retain(d);
    h->id = ++b->next_id;
    if ((rc = live_demand_open(h))) {
        unmap(h);
        live_registry_remove(q->reg, h);
        result_free(&h->rs);
        row_release(d);
        mem_free(h);
        return rc;
    }
    return touch(b, h); /* reserved: cannot fail */
}

/* dom's delta of column k: retirements first, so that a tuple whose
 * shown member changed (-[5] +[5.0]: equal tuples) keeps its handle. */
static int stage_buckets(ldb_live *q, uint32_t k)
{
    df_batch *d = &child_at(q, k)->dom_acc;
    for (size_t i = 0; i < d->len; i++) {
        if (d->e[i].w > 0)
            continue;
        ldb_live *h = find(q, k, &d->e[i].r->cols[0]);
        if (!h || h->leaving || d->e[i].w != -1)
            return LDB_INTERNAL;
        h->leaving = true;
        int rc = touch(q->buckets, h);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < d->len; i++) {
        row *r = d->e[i].r;
        if (d->e[i].w < 0)
            continue;
        if (d->e[i].w != 1)
            return LDB_INTERNAL;
        ldb_live *h = find(q, k, &r->cols[0]);
        if (h && !h->leaving)
            return LDB_INTERNAL;
        if (!h) {
            int rc = activate(q, k, r);
            if (rc)
                return rc;
            continue;
        }
        h->leaving = false;
        row_retain(r);
        row_release(h->dom);
        h->dom = r;
    }
    return LDB_OK;
}

static int by_handle(const void *a, const void *b)
{
    uint64_t x = ((const struct live_routed *)a)->h->id;
    uint64_t y = ((const struct live_routed *)b)->h->id;
    return x < y ? -1 : x > y;
}

/* Stages one handle's rows (a run of routed entries). */
static int stage_handle(struct live_buckets *b, const struct live_routed *run, size_t n)
{
    ldb_live *h = run[0].h;
    b->scratch.len = 0;
    int rc = vec_reserve(&b->scratch, n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        b->scratch.data[b->scratch.len++] = run[i].e;
    if ((rc = touch(b, h)))
        return rc;
    live_batch_drop(h);
    rc = result_stage(&h->rs, b->scratch.data, n);
    if (!rc)
        rc = live_views_reserve(h, h->rs.staged.len);
    return rc;
}

/* rows' delta of column k, grouped by handle. */
static int stage_rows(ldb_live *q, uint32_t k)
{
    struct live_child *ch = child_at(q, k);
    df_batch *d = &ch->rows_acc;
    if (d->len == 0)
        return LDB_OK;
    struct live_buckets *b = q->buckets;
    b->routed.len = 0;
    if (vec_reserve(&b->routed, d->len))
        return LDB_NOMEM;
    struct live_routed *rt = b->routed.data;
    for (size_t i = 0; i < d->len; i++) {
        rt[i] = (struct live_routed){ find(q, k, &d->e[i].r->cols[ch->lay.ncols]), d->e[i] };
        if (!rt[i].h)
            return LDB_INTERNAL; /* rows of a bucket that is not active */
    }
    if (d->len > 1)
        qsort(rt, d->len, sizeof *rt, by_handle);
    int rc = LDB_OK;
    for (size_t i = 0, j; !rc && i < d->len; i = j) {
        for (j = i + 1; j < d->len && rt[j].h == rt[i].h; j++)
            ;
        rc = stage_handle(b, rt + i, j - i);
    }
    return rc;
}

static int publication_order(const void *a, const void *b)
{
    const ldb_live *x = *(ldb_live *const *)a, *y = *(ldb_live *const *)b;
    if (x->child != y->child)
        return x->child < y->child ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int live_children_stage(ldb_live *q)
{
    struct live_program *prog = q->p;
    if (!q->buckets)
        return LDB_OK;
    int rc = LDB_OK;
    for (uint32_t k = 0; !rc && k < prog->children.len; k++) {
        rc = stage_buckets(q, k);
        if (!rc)
            rc = stage_rows(q, k);
    }
    struct live_buckets *b = q->buckets;
    if (!rc && b->touched.len > 1) /* parents' columns first, then by activation */
        qsort(b->touched.data, b->touched.len, sizeof *b->touched.data, publication_order);
    return rc;
}

int live_children_prepare(ldb_live *q)
{
    struct live_buckets *b = q->buckets;
    for (size_t i = 0; b && i < b->touched.len; i++) {
        if (result_prepare(&b->touched.data[i]->rs)) {
            while (i-- > 0)
                result_unprepare(&b->touched.data[i]->rs);
            return LDB_NOMEM;
        }
    }
    return LDB_OK;
}

void live_children_finish(ldb_live *q)
{
    struct live_buckets *b = q->buckets;
    for (size_t i = 0; b && i < b->touched.len; i++)
        result_finish(&b->touched.data[i]->rs);
}

bool live_children_have_batches(const ldb_live *q)
{
    struct live_buckets *b = q->buckets;
    for (size_t i = 0; b && i < b->touched.len; i++)
        if (b->touched.data[i]->rs.staged.len || b->touched.data[i]->leaving)
            return true;
    return false;
}

void live_children_discard(ldb_live *q)
{
    struct live_buckets *b = q->buckets;
    for (size_t i = 0; b && i < b->touched.len; i++) {
        ldb_live *h = b->touched.data[i];
        live_batch_drop(h);
        h->touched = h->leaving = false;
    }
    if (b)
        b->touched.len = 0;
}

/* ---- publication and retirement ------------------------------------------------------ */

/* Takes h out of its root's map of active buckets. */
static void unmap(ldb_live *h)
{
    struct tuple_probe p = { &h->dom->cols[0], tuple_coll(h->root, h->child) };
    hmap *m = &h->root->buckets->active[h->child];
    uint64_t *slot = hmap_get(m, value_hash(p.t, p.coll), tuple_eq, &p);
    if (slot)
        hmap_del(m, slot);
}

/* h's bucket retired and its last batch is out: out of the map, and
 * freed unless the program retains it (then it reads as empty). */
static void retire(ldb_live *h)
{
    live_demand_gone(h);
    unmap(h);
    h->leaving = false;
    h->gone = true;
    if (h->retains == 0)
        live_mark_closed(h); /* freed once no callback runs */
}

void live_children_publish(ldb_live *q)
{
    struct live_buckets *b = q->buckets;
    if (!b)
        return;
    for (size_t i = 0; i < b->touched.len; i++) {
        ldb_live *h = b->touched.data[i];
        if (!h->closing && !q->closing && q->p->state == LIVE_OK)
            live_publish_batch(h);
        live_batch_drop(h);
    }
    for (size_t i = 0; i < b->touched.len; i++) {
        ldb_live *h = b->touched.data[i];
        h->touched = false;
        if (h->leaving)
            retire(h);
    }
    b->touched.len = 0;
}

/* Adds the active handles of q (a root), their rows and bytes to out. */
void live_children_stats(const ldb_live *q, struct live_stats *out)
{
    for (size_t k = 0; q->buckets && k < q->p->children.len; k++) {
        uint32_t pos = 0;
        uint64_t *slot, hash;
        while ((slot = hmap_next(&q->buckets->active[k], &pos, &hash))) {
            const ldb_live *h = (const ldb_live *)(uintptr_t)*slot;
            out->retained_rows += (size_t)h->rs.rows;
            out->retained_bytes += result_bytes(&h->rs) + sizeof *h;
            out->child_results++;
        }
    }
}

/* ---- rebuild and close ----------------------------------------------------------------- */

static int negate_row(void *ctx, row *r, int64_t pos)
{
    (void)pos;
    return df_batch_push(ctx, r, -1);
}

int live_children_negate(ldb_live *q, struct live_program *prog)
{
    struct live_buckets *b = q->buckets;
    int rc = LDB_OK;
    for (uint32_t k = 0; b && !rc && k < prog->children.len; k++) {
        struct live_child *ch = &prog->children.data[k];
        uint32_t pos = 0;
        uint64_t *slot, hash;
        while (!rc && (slot = hmap_next(&b->active[k], &pos, &hash))) {
            ldb_live *h = (ldb_live *)(uintptr_t)*slot;
            rc = df_batch_push(&ch->dom_acc, h->dom, -1);
            if (!rc)
                rc = result_scan(&h->rs, negate_row, &ch->rows_acc);
        }
        if (!rc)
            rc = df_batch_consolidate(&ch->dom_acc);
        if (!rc)
            rc = df_batch_consolidate(&ch->rows_acc);
    }
    return rc;
}

void live_child_free(ldb_live *h)
{
    live_demand_gone(h);
    if (h->root && !h->gone) /* still active: the registry is closing */
        unmap(h);
    live_registry_remove(h->reg, h);
    live_batch_drop(h);
    result_free(&h->rs);
    row_release(h->dom);
    mem_free(h->status_msg);
    mem_free(h);
}

void live_children_free(ldb_live *q)
{
    struct live_buckets *b = q->buckets;
    if (!b)
        return;
    for (size_t k = 0; k < q->p->children.len; k++) {
        uint32_t pos = 0;
        uint64_t *slot, hash;
        while ((slot = hmap_next(&b->active[k], &pos, &hash))) {
            ldb_live *h = (ldb_live *)(uintptr_t)*slot;
            live_demand_gone(h);
            h->gone = true;
            h->root = NULL;
            if (h->retains == 0 && !h->closing)
                live_child_free(h);
        }
        hmap_free(&b->active[k]);
    }
    /* retained handles that left, or are waiting to be freed */
    for (size_t i = 0; i < q->reg->queries.len; i++)
        if (q->reg->queries.data[i]->is_child && q->reg->queries.data[i]->root == q)
            q->reg->queries.data[i]->root = NULL;
    vec_free(&b->touched);
    vec_free(&b->routed);
    vec_free(&b->scratch);
    mem_free(b->active);
    mem_free(b);
    q->buckets = NULL;
}
