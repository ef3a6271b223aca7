/*
 * batch.c - weighted batches, their consolidation, key hashing, and the
 * keyed group table (see internal.h).
 *
 * Consolidation must scale from the two entries of a single-row update to
 * the million of a hydration. Small batches merge pairwise. Large ones
 * are sorted by row hash without touching the rows again: an LSD radix
 * sort of (hash, index) pairs on the top ~log2(n) bits of the hash puts
 * equal hashes into short runs, an insertion sort orders each run by the
 * full hash, and only entries with equal full hashes are compared for
 * identity. That is a few sequential passes instead of one random probe
 * into an n-sized hash table per entry.
 */
#include "dataflow/internal.h"

#include "base/mem.h"

#include <string.h>

int df_batch_push(df_batch *b, row *r, int64_t w)
{
    if (b->len == b->cap && vec_grow_(&b->e, &b->cap, b->len + 1, sizeof *b->e))
        return LDB_NOMEM;
    b->e[b->len].r = row_retain(r);
    b->e[b->len++].w = w;
    return LDB_OK;
}

/* A large batch's rows lie in the heap in no order it follows: releasing
 * them prefetches a few entries ahead. */
#define CLEAR_PREFETCH 8

void df_batch_clear(df_batch *b)
{
    for (size_t i = 0; i < b->len; i++) {
        if (i + CLEAR_PREFETCH < b->len)
            __builtin_prefetch(b->e[i + CLEAR_PREFETCH].r, 1);
        row_release(b->e[i].r);
    }
    b->len = 0;
    if (b->cap > DF_BATCH_KEEP) {
        mem_free(b->e);
        b->e = NULL;
        b->cap = 0;
    }
}

void df_batch_free(df_batch *b)
{
    df_batch_clear(b);
    mem_free(b->e); /* what clear kept */
    b->e = NULL;
    b->cap = 0;
}

/* Entries with equal hash, or (for runs) that merge into e[keep]. */
static bool merge_into(df_entry *keep, df_entry *x)
{
    if (!row_identical(keep->r, x->r))
        return false;
    keep->w += x->w;
    row_release(x->r);
    return true;
}

/* Drops zero weights in place. */
static void drop_zeros(df_batch *b)
{
    size_t out = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->e[i].w == 0)
            row_release(b->e[i].r);
        else
            b->e[out++] = b->e[i];
    }
    b->len = out;
}

#define SMALL_BATCH 16
#define TINY_BATCH 4

/* Pairwise merging. Up to TINY_BATCH entries (a single-row update's -old
 * +new) compare rows directly: at most six comparisons, most decided by a
 * first column, against hashing every column of every row; larger small
 * batches compare full hashes first. */
static void consolidate_small(df_batch *b)
{
    bool hashed = b->len > TINY_BATCH;
    size_t out = 0;
    for (size_t i = 0; i < b->len; i++) {
        uint64_t h = hashed ? row_hash(b->e[i].r) : 0;
        size_t j = 0;
        while (j < out &&
               !((!hashed || b->e[j].r->hash == h) && merge_into(&b->e[j], &b->e[i])))
            j++;
        if (j == out)
            b->e[out++] = b->e[i];
    }
    b->len = out;
    drop_zeros(b);
}

static int scratch_reserve(struct df_scratch *s, size_t n)
{
    if (n > s->cap) {
        struct hkey *a = mem_alloc(n * sizeof *a), *b = mem_alloc(n * sizeof *b);
        if (!a || !b) {
            mem_free(a);
            mem_free(b);
            return LDB_NOMEM;
        }
        mem_free(s->a);
        mem_free(s->b);
        s->a = a;
        s->b = b;
        s->cap = n;
    }
    if (n > s->tmp_cap) {
        df_entry *t = mem_alloc(n * sizeof *t);
        if (!t)
            return LDB_NOMEM;
        mem_free(s->tmp);
        s->tmp = t;
        s->tmp_cap = n;
    }
    return LDB_OK;
}

void df_scratch_free(struct df_scratch *s)
{
    mem_free(s->a);
    mem_free(s->b);
    mem_free(s->tmp);
    memset(s, 0, sizeof *s);
}

int df_consolidate(df_batch *b, struct df_scratch *s)
{
    size_t n = b->len;
    if (n <= SMALL_BATCH) {
        consolidate_small(b);
        return LDB_OK;
    }
    if (scratch_reserve(s, n))
        return LDB_NOMEM;
    for (size_t i = 0; i < n; i++) {
        s->a[i].hash = row_hash(b->e[i].r);
        s->a[i].idx = i;
    }
    unsigned bits = 2;
    while (bits < 62 && ((size_t)1 << (bits - 2)) < n)
        bits++;
    struct hkey *k = hsort_field(s->a, s->b, n, 64 - bits, bits);
    hsort_runs(k, n, 64 - bits, bits);
    size_t out = 0;
    for (size_t x = 0; x < n; x++) {
        df_entry *e = &b->e[k[x].idx];
        size_t y = out;
        /* Only entries with the same full hash (adjacent now) can merge. */
        while (y > 0 && s->tmp[y - 1].r->hash == k[x].hash && !merge_into(&s->tmp[y - 1], e))
            y--;
        if (y == 0 || s->tmp[y - 1].r->hash != k[x].hash)
            s->tmp[out++] = *e;
    }
    df_entry *old = b->e;
    size_t old_cap = b->cap;
    b->e = s->tmp;
    b->cap = s->tmp_cap;
    b->len = out;
    s->tmp = old;
    s->tmp_cap = old_cap;
    drop_zeros(b);
    return LDB_OK;
}

int df_batch_consolidate(df_batch *b)
{
    struct df_scratch s;
    memset(&s, 0, sizeof s);
    int rc = df_consolidate(b, &s);
    df_scratch_free(&s);
    return rc;
}

/* ---- keys ------------------------------------------------------------------ */

uint64_t key_hash_cols(const df_key *k, const row *r, const uint32_t *cols)
{
    uint64_t h = HASH_SEED ^ k->n;
    for (uint32_t i = 0; i < k->n; i++)
        h = hash_combine(h, value_hash(&r->cols[cols[i]], k->colls[i]));
    return h;
}

uint64_t df_key_hash(const df_key *k, const row *r) { return key_hash_cols(k, r, k->cols); }

uint64_t df_key_hash_values(const df_key *k, const value *vals)
{
    uint64_t h = HASH_SEED ^ k->n;
    for (uint32_t i = 0; i < k->n; i++)
        h = hash_combine(h, value_hash(&vals[i], k->colls[i]));
    return h;
}

int key_copy_init(struct key_copy *kc, const df_key *k, uint32_t ncols)
{
    for (uint32_t i = 0; i < k->n; i++)
        if (k->cols[i] >= ncols)
            return LDB_MISUSE;
    size_t bytes = (size_t)k->n * (sizeof(uint32_t) + sizeof(enum ldb_collation));
    kc->buf = mem_alloc(bytes);
    if (!kc->buf)
        return LDB_NOMEM;
    enum ldb_collation *colls = (enum ldb_collation *)(kc->buf + k->n);
    if (k->n) {
        memcpy(kc->buf, k->cols, k->n * sizeof(uint32_t));
        memcpy(colls, k->colls, k->n * sizeof(enum ldb_collation));
    }
    kc->k.n = k->n;
    kc->k.cols = kc->buf;
    kc->k.colls = colls;
    return LDB_OK;
}

void key_copy_free(struct key_copy *kc)
{
    mem_free(kc->buf);
    kc->buf = NULL;
}

/* ---- keyed group table ------------------------------------------------------ */

struct gprobe {
    const struct gtab *t;
    const row *r;
    const uint32_t *pcols;
};

static bool gtab_eq(const void *key, uint64_t val)
{
    const struct gprobe *p = key;
    const struct ghead *h = gtab_at(p->t, (uint32_t)val);
    return key_eq(p->t->key, p->r, p->pcols, h->keyrow, p->t->kcols);
}

void gtab_init(struct gtab *t, size_t slot_size, const df_key *key, const uint32_t *kcols)
{
    memset(t, 0, sizeof *t);
    hmap_init(&t->map);
    t->stride = (slot_size + 7) & ~(size_t)7;
    t->free_head = UINT32_MAX;
    t->key = key;
    t->kcols = kcols;
}

void gtab_free(struct gtab *t)
{
    hmap_free(&t->map);
    mem_free(t->slots);
    t->slots = NULL;
    t->len = t->cap = t->count = 0;
    t->free_head = UINT32_MAX;
}

/* A zeroed slot: from the free list (linked through ghead.touched, which
 * a free slot does not use) or at the end of the slab. */
static int slot_new(struct gtab *t, uint32_t *idx)
{
    if (t->free_head != UINT32_MAX) {
        *idx = t->free_head;
        t->free_head = gtab_at(t, *idx)->touched;
    } else {
        if (t->len == t->cap) {
            uint32_t ncap = t->cap ? t->cap * 2 : 8;
            char *ns = mem_realloc(t->slots, (size_t)ncap * t->stride);
            if (!ns)
                return LDB_NOMEM;
            t->slots = ns;
            t->cap = ncap;
        }
        *idx = t->len++;
    }
    memset(gtab_at(t, *idx), 0, t->stride);
    return LDB_OK;
}

int gtab_get(struct gtab *t, const row *r, const uint32_t *pcols, uint64_t hash,
             uint32_t *idx, bool *created)
{
    struct gprobe p = { t, r, pcols };
    uint64_t *val = hmap_get(&t->map, hash, gtab_eq, &p);
    if (val) {
        *idx = (uint32_t)*val;
        *created = false;
        return LDB_OK;
    }
    /* Reserve first: after slot_new nothing may fail. */
    if (hmap_reserve(&t->map, 1) || slot_new(t, idx))
        return LDB_NOMEM;
    struct ghead *h = gtab_at(t, *idx);
    h->hash = hash;
    h->live = 1;
    bool found;
    hmap_put(&t->map, hash, NULL, NULL, &val, &found);
    *val = *idx;
    t->count++;
    *created = true;
    return LDB_OK;
}

uint32_t gtab_find(const struct gtab *t, const row *r, const uint32_t *pcols, uint64_t hash)
{
    struct gprobe p = { t, r, pcols };
    uint64_t *val = hmap_get(&t->map, hash, gtab_eq, &p);
    return val ? (uint32_t)*val : UINT32_MAX;
}

void gtab_del(struct gtab *t, uint32_t idx)
{
    struct ghead *h = gtab_at(t, idx);
    uint32_t pos = UINT32_MAX;
    uint64_t *val;
    while ((val = hmap_probe(&t->map, h->hash, &pos)) && *val != idx)
        ;
    hmap_del(&t->map, val);
    h->live = 0;
    h->touched = t->free_head;
    t->free_head = idx;
    t->count--;
}

size_t gtab_bytes(const struct gtab *t)
{
    return hmap_bytes(&t->map) + (size_t)t->cap * t->stride;
}
