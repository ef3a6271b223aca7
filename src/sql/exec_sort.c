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

/*
 * An entry carries its first key inline: the merge compares entries
 * scattered across the heap, and a key array allocated per row made
 * every comparison two cache misses (and every row a malloc). Further
 * keys lie in one array (more), nkeys - 1 per kept row.
 */
struct sort_entry {
    value k0;                  /* the first key */
    row *r;
    uint64_t seq;              /* arrival: the last tie-breaker */
    size_t more;               /* keys 1.. at more.data[more]; CANDIDATE:
                                  the row being read, keys in tmp */
};

#define CANDIDATE SIZE_MAX

struct sort_op {
    struct op base;
    uint64_t topk;             /* 0: keep every row */
    VEC(struct sort_entry) items;
    VEC(value) more;           /* keys after the first, per item */
    value *tmp;                /* the keys of the row being read */
    size_t emit_i;
    bool sorted;
};

static const value *more_keys(const struct sort_op *s, const struct sort_entry *e)
{
    if (e->more == CANDIDATE)
        return s->tmp + 1;
    return s->more.data ? s->more.data + e->more : NULL; /* NULL: one key, nothing kept */
}

static int entry_cmp(void *ctx, const void *pa, const void *pb)
{
    const struct sort_op *s = ctx;
    const struct plan *p = s->base.p;
    const struct sort_entry *a = pa, *b = pb;
    const struct sort_key *k = p->u.sort.keys;
    int c = p->u.sort.nkeys ? sort_cmp(&a->k0, &b->k0, k->desc, k->nulls_first, k->coll) : 0;
    if (c)
        return c;
    if (p->u.sort.nkeys > 1) {
        const value *ma = more_keys(s, a), *mb = more_keys(s, b);
        for (uint32_t i = 1; i < p->u.sort.nkeys; i++) {
            k = &p->u.sort.keys[i];
            if ((c = sort_cmp(&ma[i - 1], &mb[i - 1], k->desc, k->nulls_first, k->coll)))
                return c;
        }
    }
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static void release_keys(value *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        value_release(&keys[i]);
}

/* A max-heap of the k least entries seen. */
static void sift_down(struct sort_op *s, size_t i)
{
    struct sort_entry *h = s->items.data;
    size_t n = s->items.len;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && entry_cmp(s, &h[l], &h[m]) > 0)
            m = l;
        if (r < n && entry_cmp(s, &h[r], &h[m]) > 0)
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
        if (entry_cmp(s, &h[i], &h[parent]) <= 0)
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

/* Moves the candidate's further keys (tmp + 1) to at. */
static void take_more(struct sort_op *s, size_t at, uint32_t nmore)
{
    if (nmore) /* more.data is NULL while it holds nothing */
        memcpy(s->more.data + at, s->tmp + 1, nmore * sizeof(value));
}

/* Takes row r with the keys in tmp (owned) into the items, or drops it;
 * tmp is left without values either way. */
static int keep(struct sort_op *s, row *r, uint64_t seq)
{
    uint32_t nkeys = s->base.p->u.sort.nkeys, nmore = nkeys ? nkeys - 1 : 0;
    struct sort_entry e = { s->tmp[0], r, seq, CANDIDATE };
    if (use_heap(s) && s->items.len == s->topk) {
        struct sort_entry *top = &s->items.data[0];
        if (entry_cmp(s, &e, top) >= 0) {
            release_keys(s->tmp, nkeys);
            return LDB_OK;
        }
        /* the evicted entry's slots in more are reused */
        row_release(top->r);
        value_release(&top->k0);
        if (nmore)
            release_keys(s->more.data + top->more, nmore);
        take_more(s, top->more, nmore);
        e.more = top->more;
        *top = e;
        row_retain(r);
        sift_down(s, 0);
        return LDB_OK;
    }
    if (vec_reserve(&s->items, 1) || vec_reserve(&s->more, nmore)) {
        release_keys(s->tmp, nkeys);
        return exec_nomem(s->base.x);
    }
    e.more = s->more.len;
    take_more(s, e.more, nmore);
    s->more.len += nmore;
    s->items.data[s->items.len++] = e;
    row_retain(r);
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
        for (uint32_t i = 0; i < nkeys; i++) {
            int erc = op_eval(&s->base, p->u.sort.keys[i].e, r, &s->tmp[i]);
            if (erc) {
                release_keys(s->tmp, i);
                return erc;
            }
        }
        int krc = keep(s, r, seq++);
        if (krc)
            return krc;
    }
    if (rc != LDB_DONE)
        return rc;
    if ((rc = msort(s->items.data, s->items.len, sizeof *s->items.data, entry_cmp, s)))
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
    if (!(s->tmp = mem_calloc(o->p->u.sort.nkeys + 1, sizeof *s->tmp)))
        return exec_nomem(o->x);
    return LDB_OK;
}

static void sort_close(struct op *o)
{
    struct sort_op *s = (struct sort_op *)o;
    for (size_t i = 0; i < s->items.len; i++) {
        row_release(s->items.data[i].r);
        value_release(&s->items.data[i].k0);
    }
    vec_free(&s->items);
    release_keys(s->more.data, s->more.len);
    vec_free(&s->more);
    mem_free(s->tmp);
    s->tmp = NULL;
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
