/*
 * setop.c - DISTINCT, INTERSECT [ALL], EXCEPT [ALL].
 *
 * Rows fall into classes of canonically equal rows (all columns, each
 * under its collation). A class keeps the identity-distinct rows of each
 * input with their weights, and the rows it last emitted. After a delta
 * is applied, each touched class computes its output multiplicity
 * m = f(a, b) from the two sides' total weights and takes m copies from
 * the left's rows in row_cmp_identity order, so the rows shown never
 * depend on arrival order; only the difference to the last output is
 * emitted. Rows whose weight reaches zero stay until the end of the run
 * (the class's key holder must stay valid while the batch is applied).
 * A negative weight at the end of a run is LDB_INTERNAL.
 *
 * Retained rows: every identity-distinct input row of both sides, plus
 * the output rows.
 */
#include "dataflow/internal.h"

#include "base/mem.h"

#include <string.h>

struct rlist {
    uint32_t n, cap; /* cap 0: the one entry is inline */
    union {
        df_entry one;
        df_entry *many;
    } u;
};

struct sclass {
    struct ghead h;
    struct rlist side[2];
    struct rlist out;
};

struct setop_node {
    df_node base;
    enum df_setop op;
    struct key_copy key; /* every column */
    struct gtab classes;
    VEC(uint32_t) touched;
    df_batch fresh; /* scratch: the new output of one class */
};

static inline df_entry *items(struct rlist *l) { return l->cap ? l->u.many : &l->u.one; }

/* Adds w to r's entry (retaining r when it is new). */
static int rlist_add(struct rlist *l, row *r, int64_t w)
{
    df_entry *e = items(l);
    for (uint32_t i = 0; i < l->n; i++) {
        if (e[i].r->hash == r->hash && row_identical(e[i].r, r)) {
            e[i].w += w;
            return LDB_OK;
        }
    }
    if (l->n == 1 && l->cap == 0) {
        df_entry *m = mem_alloc(2 * sizeof *m);
        if (!m)
            return LDB_NOMEM;
        m[0] = l->u.one;
        l->u.many = m;
        l->cap = 2;
    } else if (l->cap && l->n == l->cap) {
        df_entry *m = mem_realloc(l->u.many, 2 * l->cap * sizeof *m);
        if (!m)
            return LDB_NOMEM;
        l->u.many = m;
        l->cap *= 2;
    }
    items(l)[l->n++] = (df_entry){ row_retain(r), w };
    return LDB_OK;
}

static void rlist_free(struct rlist *l)
{
    df_entry *e = items(l);
    for (uint32_t i = 0; i < l->n; i++)
        row_release(e[i].r);
    if (l->cap)
        mem_free(l->u.many);
    memset(l, 0, sizeof *l);
}

/* Drops zero weights, sorts by identity and returns the total weight;
 * LDB_INTERNAL on a negative weight. */
static int rlist_settle(struct rlist *l, int64_t *total)
{
    df_entry *e = items(l);
    uint32_t out = 0;
    *total = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        if (e[i].w < 0)
            return LDB_INTERNAL;
        if (e[i].w == 0) {
            row_release(e[i].r);
            continue;
        }
        df_entry x = e[i];
        uint32_t j = out++;
        while (j > 0 && row_cmp_identity(e[j - 1].r, x.r) > 0) {
            e[j] = e[j - 1];
            j--;
        }
        e[j] = x;
        *total += x.w;
    }
    l->n = out;
    if (out == 0 && l->cap) {
        mem_free(l->u.many);
        l->cap = 0;
    }
    return LDB_OK;
}

static int64_t multiplicity(enum df_setop op, int64_t a, int64_t b)
{
    switch (op) {
    case DF_DISTINCT: return a > 0;
    case DF_INTERSECT: return a > 0 && b > 0;
    case DF_EXCEPT: return a > 0 && b == 0;
    case DF_INTERSECT_ALL: return a < b ? a : b;
    case DF_EXCEPT_ALL: return a > b ? a - b : 0;
    }
    return 0;
}

static int add(struct setop_node *s, int side, row *r, int64_t w, uint64_t hash)
{
    uint32_t ci;
    bool created;
    if (gtab_get(&s->classes, r, s->key.k.cols, hash, &ci, &created))
        return LDB_NOMEM;
    struct sclass *c = (struct sclass *)gtab_at(&s->classes, ci);
    if (created)
        c->h.keyrow = r;
    if (!c->h.touched) {
        if (vec_push(&s->touched, ci)) {
            if (created)
                gtab_del(&s->classes, ci);
            return LDB_NOMEM;
        }
        c->h.touched = 1;
    }
    row_hash(r);
    if (rlist_add(&c->side[side], r, w))
        return LDB_NOMEM;
    c->h.keyrow = items(&c->side[side])[0].r; /* a row the class holds */
    return LDB_OK;
}

/* Emits new - old for one class and makes fresh its output. */
static int emit_diff(struct setop_node *s, struct sclass *c)
{
    df_batch *b = &s->base.out;
    df_entry *old = items(&c->out);
    if (batch_reserve(b, s->fresh.len + c->out.n))
        return LDB_NOMEM;
    for (size_t i = 0; i < s->fresh.len; i++) {
        int64_t w = s->fresh.e[i].w;
        for (uint32_t k = 0; k < c->out.n; k++)
            if (row_identical(old[k].r, s->fresh.e[i].r))
                w -= old[k].w;
        if (w)
            b->e[b->len++] = (df_entry){ row_retain(s->fresh.e[i].r), w };
    }
    for (uint32_t k = 0; k < c->out.n; k++) {
        size_t i = 0;
        while (i < s->fresh.len && !row_identical(s->fresh.e[i].r, old[k].r))
            i++;
        if (i == s->fresh.len)
            b->e[b->len++] = (df_entry){ row_retain(old[k].r), -old[k].w };
    }
    rlist_free(&c->out);
    for (size_t i = 0; i < s->fresh.len; i++)
        if (rlist_add(&c->out, s->fresh.e[i].r, s->fresh.e[i].w))
            return LDB_NOMEM;
    df_batch_clear(&s->fresh);
    return LDB_OK;
}

static int settle(struct setop_node *s, uint32_t ci)
{
    struct sclass *c = (struct sclass *)gtab_at(&s->classes, ci);
    c->h.touched = 0;
    int64_t a, b;
    int rc = rlist_settle(&c->side[0], &a);
    if (rc || (rc = rlist_settle(&c->side[1], &b)))
        return rc;
    int64_t m = multiplicity(s->op, a, b);
    df_entry *left = items(&c->side[0]);
    for (uint32_t i = 0; m > 0 && i < c->side[0].n; i++) {
        int64_t take = left[i].w < m ? left[i].w : m;
        if (df_batch_push(&s->fresh, left[i].r, take))
            return LDB_NOMEM;
        m -= take;
    }
    if ((rc = emit_diff(s, c)))
        return rc;
    if (c->side[0].n)
        c->h.keyrow = items(&c->side[0])[0].r;
    else if (c->side[1].n)
        c->h.keyrow = items(&c->side[1])[0].r;
    else
        gtab_del(&s->classes, ci);
    return LDB_OK;
}

static int setop_run(df_node *n)
{
    struct setop_node *s = (struct setop_node *)n;
    int rc;
    for (uint32_t side = 0; side < n->nin; side++) {
        const df_batch *d = n->in[side]->delta;
        for (size_t i = 0; i < d->len; i++)
            if ((rc = add(s, (int)side, d->e[i].r, d->e[i].w, df_key_hash(&s->key.k, d->e[i].r))))
                return rc;
    }
    for (size_t i = 0; i < s->touched.len; i++)
        if ((rc = settle(s, s->touched.data[i])))
            return rc;
    vec_clear(&s->touched);
    return LDB_OK;
}

static void setop_free(df_node *n)
{
    struct setop_node *s = (struct setop_node *)n;
    for (uint32_t i = 0; i < s->classes.len; i++) {
        struct sclass *c = (struct sclass *)gtab_at(&s->classes, i);
        if (!c->h.live)
            continue;
        rlist_free(&c->side[0]);
        rlist_free(&c->side[1]);
        rlist_free(&c->out);
    }
    gtab_free(&s->classes);
    key_copy_free(&s->key);
    vec_free(&s->touched);
    df_batch_free(&s->fresh);
}

static void setop_retained(const df_node *n, size_t *rows, size_t *bytes)
{
    const struct setop_node *s = (const struct setop_node *)n;
    *rows = 0;
    *bytes = gtab_bytes(&s->classes);
    for (uint32_t i = 0; i < s->classes.len; i++) {
        struct sclass *c = (struct sclass *)gtab_at(&s->classes, i);
        if (!c->h.live)
            continue;
        struct rlist *lists[3] = { &c->side[0], &c->side[1], &c->out };
        for (int k = 0; k < 3; k++) {
            *rows += lists[k]->n;
            *bytes += lists[k]->cap * sizeof(df_entry);
            for (uint32_t j = 0; j < lists[k]->n; j++)
                *bytes += row_mem(items(lists[k])[j].r);
        }
    }
}

static const struct df_node_ops setop_ops = { "setop", setop_run, setop_free, setop_retained };

int df_setop(df_graph *g, enum df_setop op, df_node *left, df_node *right,
             const enum ldb_collation *colls, df_node **out)
{
    if (g->err)
        return g->err;
    bool two = op != DF_DISTINCT;
    if (!left || !colls || op > DF_EXCEPT_ALL || (two && (!right || right->ncols != left->ncols)))
        return df_fail(g, LDB_MISUSE);
    df_node *ins[2] = { left, right };
    int rc = node_new(g, sizeof(struct setop_node), &setop_ops, left->ncols, ins, two ? 2 : 1,
                      out);
    if (rc)
        return rc;
    struct setop_node *s = (struct setop_node *)*out;
    s->op = op;
    uint32_t *cols = mem_alloc(left->ncols * sizeof *cols);
    if (!cols)
        return df_fail(g, LDB_NOMEM);
    for (uint32_t i = 0; i < left->ncols; i++)
        cols[i] = i;
    df_key k = { left->ncols, cols, colls };
    rc = key_copy_init(&s->key, &k, left->ncols);
    mem_free(cols);
    if (rc)
        return df_fail(g, rc);
    gtab_init(&s->classes, sizeof(struct sclass), &s->key.k, s->key.k.cols);
    return LDB_OK;
}

int df_distinct(df_graph *g, df_node *in, const enum ldb_collation *colls, df_node **out)
{
    return df_setop(g, DF_DISTINCT, in, NULL, colls, out);
}
