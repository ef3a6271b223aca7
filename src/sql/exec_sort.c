/*
 * exec_sort.c - SORT: materialize the input with its key values, then a
 * stable merge sort; under a LIMIT of k rows a bounded heap keeps only
 * the first k (O(n log k), k rows of memory). Both order rows by the keys
 * and then by arrival, so the heap and the full sort give the same rows
 * in the same order; ties keep the input's order.
 *
 * msort, the stable merge sort, also orders aggregate groups and the
 * results of set operations.
 */
#include "sql/exec_internal.h"

#include "base/mem.h"

#include <string.h>

/* ---- merge sort ------------------------------------------------------------------- */

static void merge_pass(char *dst, const char *src, size_t n, size_t size, size_t width,
                       int (*cmp)(void *, const void *, const void *), void *ctx)
{
    for (size_t lo = 0; lo < n; lo += 2 * width) {
        size_t mid = lo + width < n ? lo + width : n;
        size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
        size_t a = lo, b = mid, k = lo;
        while (a < mid && b < hi) {
            /* <= keeps equal elements in their order: stable */
            if (cmp(ctx, src + a * size, src + b * size) <= 0)
                memcpy(dst + k++ * size, src + a++ * size, size);
            else
                memcpy(dst + k++ * size, src + b++ * size, size);
        }
        memcpy(dst + k * size, src + a * size, (mid - a) * size);
        k += mid - a;
        memcpy(dst + k * size, src + b * size, (hi - b) * size);
    }
}

int msort(void *base, size_t n, size_t size, int (*cmp)(void *, const void *, const void *),
          void *ctx)
{
    if (n < 2)
        return LDB_OK;
    char *tmp = mem_alloc(n * size), *src = base, *dst = tmp;
    if (!tmp)
        return LDB_NOMEM;
    for (size_t width = 1; width < n; width *= 2) {
        /* stopping between passes leaves every element in base once */
        int rc = intr_tick_n((int64_t)n);
        if (rc) {
            mem_free(tmp);
            return rc;
        }
        merge_pass(dst, src, n, size, width, cmp, ctx);
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != base)
        memcpy(base, src, n * size);
    mem_free(tmp);
    return LDB_OK;
}

/* ---- SORT -------------------------------------------------------------------------------- */

/* Above this many rows a LIMIT does not use the heap. */
#define TOPK_MAX 100000

struct sort_entry {
    row *r;
    value *keys;               /* nkeys values */
    uint64_t seq;              /* arrival: the last tie-breaker */
};

struct sort_op {
    struct op base;
    uint64_t topk;             /* 0: keep every row */
    VEC(struct sort_entry) items;
    size_t emit_i;
    bool sorted;
};

static int entry_cmp(void *ctx, const void *pa, const void *pb)
{
    const struct plan *p = ctx;
    const struct sort_entry *a = pa, *b = pb;
    for (uint32_t i = 0; i < p->u.sort.nkeys; i++) {
        const struct sort_key *k = &p->u.sort.keys[i];
        int c = sort_cmp(&a->keys[i], &b->keys[i], k->desc, k->nulls_first, k->coll);
        if (c)
            return c;
    }
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static void entry_free(struct sort_entry *e, uint32_t nkeys)
{
    row_release(e->r);
    for (uint32_t i = 0; i < nkeys; i++)
        value_release(&e->keys[i]);
    mem_free(e->keys);
}

/* A max-heap of the k least entries seen. */
static void sift_down(struct sort_op *s, size_t i)
{
    struct sort_entry *h = s->items.data;
    size_t n = s->items.len;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && entry_cmp((void *)s->base.p, &h[l], &h[m]) > 0)
            m = l;
        if (r < n && entry_cmp((void *)s->base.p, &h[r], &h[m]) > 0)
            m = r;
        if (m == i)
            return;
        struct sort_entry t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(struct sort_op *s, size_t i)
{
    struct sort_entry *h = s->items.data;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (entry_cmp((void *)s->base.p, &h[i], &h[parent]) <= 0)
            return;
        struct sort_entry t = h[i];
        h[i] = h[parent];
        h[parent] = t;
        i = parent;
    }
}

static bool use_heap(const struct sort_op *s)
{
    return s->topk > 0 && s->topk <= TOPK_MAX;
}

/* Takes e (its row and keys) into the items or drops it. */
static int keep(struct sort_op *s, struct sort_entry *e)
{
    uint32_t nkeys = s->base.p->u.sort.nkeys;
    if (use_heap(s) && s->items.len == s->topk) {
        if (entry_cmp((void *)s->base.p, e, &s->items.data[0]) >= 0) {
            entry_free(e, nkeys);
            return LDB_OK;
        }
        entry_free(&s->items.data[0], nkeys);
        s->items.data[0] = *e;
        sift_down(s, 0);
        return LDB_OK;
    }
    if (vec_push(&s->items, *e)) {
        entry_free(e, nkeys);
        return exec_nomem(s->base.x);
    }
    if (use_heap(s))
        sift_up(s, s->items.len - 1);
    return LDB_OK;
}

static int consume(struct sort_op *s)
{
    const struct plan *p = s->base.p;
    uint32_t nkeys = p->u.sort.nkeys;
    row *r;
    int rc;
    uint64_t seq = 0;
    while ((rc = op_next(s->base.in, &r)) == LDB_ROW) {
        struct sort_entry e = { row_retain(r), mem_calloc(nkeys ? nkeys : 1, sizeof(value)),
                                seq++ };
        if (!e.keys) {
            row_release(r);
            return exec_nomem(s->base.x);
        }
        for (uint32_t i = 0; i < nkeys; i++) {
            int erc = op_eval(&s->base, p->u.sort.keys[i].e, r, &e.keys[i]);
            if (erc) {
                entry_free(&e, nkeys);
                return erc;
            }
        }
        int krc = keep(s, &e);
        if (krc)
            return krc;
    }
    if (rc != LDB_DONE)
        return rc;
    if ((rc = msort(s->items.data, s->items.len, sizeof *s->items.data, entry_cmp, (void *)p)))
        return exec_fail(s->base.x, rc);
    s->sorted = true;
    return LDB_OK;
}

static int sort_next(struct op *o, row **out)
{
    struct sort_op *s = (struct sort_op *)o;
    if (o->p->u.sort.presorted)
        return op_next(o->in, out);
    int rc;
    if (!s->sorted && (rc = consume(s)))
        return rc;
    if (s->emit_i >= s->items.len)
        return LDB_DONE;
    *out = s->items.data[s->emit_i++].r;
    return LDB_ROW;
}

static int sort_open(struct op *o)
{
    struct sort_op *s = (struct sort_op *)o;
    s->topk = 0;
    s->emit_i = 0;
    s->sorted = false;
    return LDB_OK;
}

static void sort_close(struct op *o)
{
    struct sort_op *s = (struct sort_op *)o;
    for (size_t i = 0; i < s->items.len; i++)
        entry_free(&s->items.data[i], o->p->u.sort.nkeys);
    vec_free(&s->items);
}

void op_sort_limit(struct op *sort, uint64_t k)
{
    struct sort_op *s = (struct sort_op *)sort;
    s->topk = k;
    if (k == 0)
        s->sorted = true; /* LIMIT 0: nothing to read */
}

struct op *op_sort(struct exec *x, const struct plan *p, const value *outer, uint32_t nouter)
{
    struct op *o = op_alloc(x, p, sizeof(struct sort_op), outer, nouter);
    if (o) {
        o->open = sort_open;
        o->next = sort_next;
        o->close = sort_close;
    }
    return o;
}
