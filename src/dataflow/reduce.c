/*
 * reduce.c - group by: aggregate reduce and general reduce.
 *
 * Both apply a whole delta first, marking the groups it touches, and only
 * then compute each touched group's output once. Weights may therefore
 * pass through negative values inside a batch; only the state at the end
 * of the run must be valid (no negative multiplicity, else LDB_INTERNAL).
 * A group's output is emitted as -old +new, and not at all when the new
 * output is identical to the old one.
 *
 * Aggregate reduce, per group (canonical key): the aggregate states, the
 * group's total weight, the last output row, and the identity variants of
 * its key (key-column projections with their weights: one in the common
 * case, several when 5 and 5.0 or 'a' and 'A' share a group). The output
 * shows the least variant under row_cmp_identity. Variants whose weight
 * reaches zero stay until the end of the run, so the group's key holder
 * stays valid while later entries of the same batch probe the table.
 * Retained rows: one output row per group plus its key variants; input
 * rows are not kept.
 *
 * General reduce, per group: its consolidated rows and its last outputs.
 * Retained rows: both.
 */
#include "dataflow/internal.h"

#include "base/mem.h"

#include <string.h>

struct kvar {
    row *keyrow; /* the key columns, in key order */
    int64_t w;
};

struct rgroup {
    struct ghead h; /* keyrow: the first variant's */
    int64_t weight;
    row *out;
    uint32_t nvar, capvar; /* capvar 0: the one variant is inline */
    union {
        struct kvar one;
        struct kvar *many;
    } v;
    /* aggregate states follow */
};

struct ragg {
    agg_inst ai;
    bool inited;
    uint32_t *args;
    size_t off; /* of the state in the group slot */
};

struct reduce_node {
    df_node base;
    struct key_copy key;
    uint32_t *proj; /* 0..n-1: where keyrow holds the key */
    uint32_t naggs;
    struct ragg *aggs;
    value *argbuf;
    bool scalar;
    struct gtab groups;
    VEC(uint32_t) touched;
};

static inline struct kvar *vars(struct rgroup *g) { return g->capvar ? g->v.many : &g->v.one; }
static inline void *state(struct rgroup *g, const struct ragg *a) { return (char *)g + a->off; }

static int touch(struct reduce_node *r, uint32_t gi)
{
    struct ghead *h = gtab_at(&r->groups, gi);
    if (h->touched)
        return LDB_OK;
    if (vec_push(&r->touched, gi))
        return LDB_NOMEM;
    h->touched = 1;
    return LDB_OK;
}

static row *project_key(const struct reduce_node *r, const row *in)
{
    row *k = row_alloc(r->key.k.n);
    for (uint32_t i = 0; k && i < r->key.k.n; i++)
        k->cols[i] = value_copy(&in->cols[r->key.k.cols[i]]);
    return k;
}

/* Adds w to the variant of in's key, creating it if needed. */
static int add_variant(struct reduce_node *r, struct rgroup *g, const row *in, int64_t w)
{
    struct kvar *v = vars(g);
    for (uint32_t i = 0; i < g->nvar; i++) {
        uint32_t c = 0;
        while (c < r->key.k.n && value_identical(&v[i].keyrow->cols[c], &in->cols[r->key.k.cols[c]]))
            c++;
        if (c == r->key.k.n) {
            v[i].w += w;
            return LDB_OK;
        }
    }
    row *k = project_key(r, in);
    if (!k)
        return LDB_NOMEM;
    if (g->nvar == 1 && g->capvar == 0) {
        struct kvar *m = mem_alloc(2 * sizeof *m);
        if (!m) {
            row_release(k);
            return LDB_NOMEM;
        }
        m[0] = g->v.one;
        g->v.many = m;
        g->capvar = 2;
    } else if (g->capvar && g->nvar == g->capvar) {
        struct kvar *m = mem_realloc(g->v.many, 2 * g->capvar * sizeof *m);
        if (!m) {
            row_release(k);
            return LDB_NOMEM;
        }
        g->v.many = m;
        g->capvar *= 2;
    }
    vars(g)[g->nvar++] = (struct kvar){ k, w };
    g->h.keyrow = vars(g)[0].keyrow;
    return LDB_OK;
}

static void free_group(struct reduce_node *r, struct rgroup *g)
{
    for (uint32_t i = 0; i < r->naggs; i++)
        agg_destroy(&r->aggs[i].ai, state(g, &r->aggs[i]));
    struct kvar *v = vars(g);
    for (uint32_t i = 0; i < g->nvar; i++)
        row_release(v[i].keyrow);
    if (g->capvar)
        mem_free(g->v.many);
    row_release(g->out);
}

static int group_of(struct reduce_node *r, const row *in, uint64_t hash, uint32_t *gi)
{
    bool created;
    if (gtab_get(&r->groups, in, r->key.k.cols, hash, gi, &created))
        return LDB_NOMEM;
    if (!created)
        return LDB_OK;
    struct rgroup *g = (struct rgroup *)gtab_at(&r->groups, *gi);
    for (uint32_t i = 0; i < r->naggs; i++)
        agg_init(&r->aggs[i].ai, state(g, &r->aggs[i]));
    if (r->key.k.n && add_variant(r, g, in, 0)) {
        free_group(r, g);
        gtab_del(&r->groups, *gi);
        return LDB_NOMEM;
    }
    return LDB_OK;
}

static int step(struct reduce_node *r, const row *in, int64_t w)
{
    uint32_t gi;
    int rc = group_of(r, in, df_key_hash(&r->key.k, in), &gi);
    if (rc || (rc = touch(r, gi)))
        return rc;
    struct rgroup *g = (struct rgroup *)gtab_at(&r->groups, gi);
    if (r->key.k.n && (rc = add_variant(r, g, in, w)))
        return rc;
    g->weight += w;
    for (uint32_t i = 0; i < r->naggs; i++) {
        struct ragg *a = &r->aggs[i];
        uint32_t nargs = agg_nargs(&a->ai);
        for (uint32_t k = 0; k < nargs; k++)
            r->argbuf[k] = in->cols[a->args[k]];
        rc = agg_step(&a->ai, state(g, a), r->argbuf, w);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

/* Drops zero-weight variants; LDB_INTERNAL on a negative one. */
static int settle_variants(struct rgroup *g)
{
    struct kvar *v = vars(g);
    uint32_t out = 0;
    for (uint32_t i = 0; i < g->nvar; i++) {
        if (v[i].w < 0)
            return LDB_INTERNAL;
        if (v[i].w == 0)
            row_release(v[i].keyrow);
        else
            v[out++] = v[i];
    }
    if (g->capvar && out == 1) {
        struct kvar one = v[0];
        mem_free(g->v.many);
        g->v.one = one;
        g->capvar = 0;
    }
    g->nvar = out;
    if (out)
        g->h.keyrow = vars(g)[0].keyrow;
    return LDB_OK;
}

static int build_output(struct reduce_node *r, struct rgroup *g, row **out)
{
    uint32_t n = r->key.k.n;
    row *o = row_alloc(n + r->naggs);
    if (!o)
        return LDB_NOMEM;
    if (n) {
        struct kvar *v = vars(g), *least = &v[0];
        for (uint32_t i = 1; i < g->nvar; i++)
            if (row_cmp_identity(v[i].keyrow, least->keyrow) < 0)
                least = &v[i];
        for (uint32_t i = 0; i < n; i++)
            o->cols[i] = value_copy(&least->keyrow->cols[i]);
    }
    for (uint32_t i = 0; i < r->naggs; i++) {
        int rc = agg_finalize(&r->aggs[i].ai, state(g, &r->aggs[i]), &o->cols[n + i]);
        if (rc) {
            row_release(o);
            return rc;
        }
    }
    *out = o;
    return LDB_OK;
}

static int settle_group(struct reduce_node *r, uint32_t gi)
{
    struct rgroup *g = (struct rgroup *)gtab_at(&r->groups, gi);
    g->h.touched = 0;
    int rc = settle_variants(g);
    if (rc == LDB_OK && g->weight < 0)
        rc = LDB_INTERNAL;
    if (rc)
        return rc;
    df_batch *b = &r->base.out;
    if (g->weight == 0 && !r->scalar) {
        row *old = g->out;
        g->out = NULL;
        free_group(r, g);
        gtab_del(&r->groups, gi);
        return old ? batch_take(b, old, -1) : LDB_OK;
    }
    row *o;
    if ((rc = build_output(r, g, &o)))
        return rc;
    if (g->out && row_identical(o, g->out)) {
        row_release(o);
        return LDB_OK;
    }
    row *old = g->out;
    g->out = o;
    if (old && (rc = batch_take(b, old, -1)))
        return rc;
    return batch_take(b, row_retain(o), 1);
}

static int reduce_run(df_node *n)
{
    struct reduce_node *r = (struct reduce_node *)n;
    int rc;
    if (r->scalar && r->groups.count == 0) {
        uint32_t gi;
        if ((rc = group_of(r, NULL, df_key_hash(&r->key.k, NULL), &gi)) || (rc = touch(r, gi)))
            return rc;
    }
    const df_batch *d = n->in[0]->delta;
    for (size_t i = 0; i < d->len; i++)
        if ((rc = step(r, d->e[i].r, d->e[i].w)))
            return rc;
    for (size_t i = 0; i < r->touched.len; i++)
        if ((rc = settle_group(r, r->touched.data[i])))
            return rc;
    vec_clear(&r->touched);
    return LDB_OK;
}

static void reduce_free(df_node *n)
{
    struct reduce_node *r = (struct reduce_node *)n;
    for (uint32_t i = 0; i < r->groups.len; i++) {
        struct rgroup *g = (struct rgroup *)gtab_at(&r->groups, i);
        if (g->h.live)
            free_group(r, g);
    }
    gtab_free(&r->groups);
    for (uint32_t i = 0; i < r->naggs; i++) {
        if (r->aggs[i].inited)
            agg_inst_free(&r->aggs[i].ai);
        mem_free(r->aggs[i].args);
    }
    mem_free(r->aggs);
    mem_free(r->argbuf);
    mem_free(r->proj);
    key_copy_free(&r->key);
    vec_free(&r->touched);
}

static void reduce_retained(const df_node *n, size_t *rows, size_t *bytes)
{
    const struct reduce_node *r = (const struct reduce_node *)n;
    *rows = 0;
    *bytes = gtab_bytes(&r->groups);
    for (uint32_t i = 0; i < r->groups.len; i++) {
        struct rgroup *g = (struct rgroup *)gtab_at(&r->groups, i);
        if (!g->h.live)
            continue;
        if (g->out) {
            *rows += 1;
            *bytes += row_mem(g->out);
        }
        struct kvar *v = vars(g);
        for (uint32_t k = 0; k < g->nvar; k++)
            *bytes += row_mem(v[k].keyrow);
        *rows += g->nvar;
        *bytes += g->capvar * sizeof(struct kvar);
        for (uint32_t k = 0; k < r->naggs; k++)
            *bytes += agg_heap_bytes(&r->aggs[k].ai, state(g, &r->aggs[k]));
    }
}

static const struct df_node_ops reduce_ops = { "reduce", reduce_run, reduce_free,
                                               reduce_retained };

static int init_aggs(struct reduce_node *r, const struct df_agg_spec *specs, uint32_t naggs,
                     uint32_t ncols, size_t *slot)
{
    uint32_t maxargs = 1;
    *slot = sizeof(struct rgroup);
    if (naggs && !(r->aggs = mem_calloc(naggs, sizeof *r->aggs)))
        return LDB_NOMEM;
    for (uint32_t i = 0; i < naggs; i++) {
        const struct df_agg_spec *s = &specs[i];
        struct ragg *a = &r->aggs[i];
        uint32_t nargs = s->def ? s->def->nargs + (s->norder ? 1 : 0) : 0;
        if (!s->def || (nargs && !s->args) || (s->norder && !s->order))
            return LDB_MISUSE;
        for (uint32_t k = 0; k < nargs; k++)
            if (s->args[k] >= ncols)
                return LDB_MISUSE;
        if (!(a->args = mem_alloc(nargs * sizeof(uint32_t))))
            return LDB_NOMEM;
        if (nargs)
            memcpy(a->args, s->args, nargs * sizeof(uint32_t));
        int rc = agg_inst_init(&a->ai, s->def, s->coll, s->distinct, s->sep);
        if (rc)
            return rc;
        a->inited = true;
        r->naggs = i + 1;
        if ((rc = agg_inst_set_order(&a->ai, s->order, s->norder)))
            return rc;
        a->off = *slot;
        *slot += (agg_state_size(&a->ai) + 7) & ~(size_t)7;
        if (nargs > maxargs)
            maxargs = nargs;
    }
    return (r->argbuf = mem_alloc(maxargs * sizeof(value))) ? LDB_OK : LDB_NOMEM;
}

int df_reduce(df_graph *g, df_node *in, const df_key *key, const struct df_agg_spec *aggs,
              uint32_t naggs, unsigned flags, df_node **out)
{
    if (g->err)
        return g->err;
    if (!in || !key || (naggs && !aggs) || ((flags & DF_REDUCE_SCALAR) && key->n))
        return df_fail(g, LDB_MISUSE);
    int rc = node_new(g, sizeof(struct reduce_node), &reduce_ops, key->n + naggs, &in, 1, out);
    if (rc)
        return rc;
    struct reduce_node *r = (struct reduce_node *)*out;
    r->scalar = flags & DF_REDUCE_SCALAR;
    r->base.pending = r->scalar;
    if ((rc = key_copy_init(&r->key, key, in->ncols)))
        return df_fail(g, rc);
    if (!(r->proj = mem_alloc(key->n * sizeof(uint32_t))))
        return df_fail(g, LDB_NOMEM);
    for (uint32_t i = 0; i < key->n; i++)
        r->proj[i] = i;
    size_t slot;
    if ((rc = init_aggs(r, aggs, naggs, in->ncols, &slot)))
        return df_fail(g, rc);
    gtab_init(&r->groups, slot, &r->key.k, r->proj);
    return LDB_OK;
}

/* ---- general reduce -------------------------------------------------------------- */

struct ggroup {
    struct ghead h; /* keyrow: rows[0] */
    df_batch rows;  /* consolidated; zero weights linger until settled */
    df_batch outs;  /* last emitted */
};

struct greduce_node {
    df_node base;
    struct key_copy key;
    df_reduce_fn fn;
    void *ctx;
    struct gtab groups;
    VEC(uint32_t) touched;
    df_batch fresh, diff; /* scratch */
};

static int gstep(struct greduce_node *r, row *in, int64_t w)
{
    uint32_t gi;
    bool created;
    if (gtab_get(&r->groups, in, r->key.k.cols, df_key_hash(&r->key.k, in), &gi, &created))
        return LDB_NOMEM;
    struct ggroup *g = (struct ggroup *)gtab_at(&r->groups, gi);
    if (!g->h.touched) {
        /* The touched list is the only place a new group is recorded. */
        if (vec_push(&r->touched, gi)) {
            if (created)
                gtab_del(&r->groups, gi);
            return LDB_NOMEM;
        }
        g->h.touched = 1;
    }
    row_hash(in);
    for (size_t i = 0; i < g->rows.len; i++) {
        if (g->rows.e[i].r->hash == in->hash && row_identical(g->rows.e[i].r, in)) {
            g->rows.e[i].w += w;
            return LDB_OK;
        }
    }
    if (df_batch_push(&g->rows, in, w))
        return LDB_NOMEM;
    g->h.keyrow = g->rows.e[0].r;
    return LDB_OK;
}

static int gsettle(struct greduce_node *r, uint32_t gi)
{
    struct ggroup *g = (struct ggroup *)gtab_at(&r->groups, gi);
    g->h.touched = 0;
    size_t k = 0;
    for (size_t i = 0; i < g->rows.len; i++) {
        if (g->rows.e[i].w < 0)
            return LDB_INTERNAL;
        if (g->rows.e[i].w == 0)
            row_release(g->rows.e[i].r);
        else
            g->rows.e[k++] = g->rows.e[i];
    }
    g->rows.len = k;
    df_emitter em = { &r->fresh, 1, r->base.ncols };
    int rc = k ? r->fn(r->ctx, g->rows.e, k, &em) : LDB_OK;
    if (rc || (rc = df_consolidate(&r->fresh, &r->base.g->scratch)))
        return rc;
    /* diff = fresh - outs */
    if (batch_reserve(&r->diff, r->fresh.len + g->outs.len))
        return LDB_NOMEM;
    for (size_t i = 0; i < r->fresh.len; i++)
        r->diff.e[r->diff.len++] = (df_entry){ row_retain(r->fresh.e[i].r), r->fresh.e[i].w };
    for (size_t i = 0; i < g->outs.len; i++)
        r->diff.e[r->diff.len++] = (df_entry){ g->outs.e[i].r, -g->outs.e[i].w };
    g->outs.len = 0;
    df_batch t = g->outs;
    g->outs = r->fresh;
    r->fresh = t;
    if (k == 0) {
        df_batch_free(&g->rows);
        df_batch_free(&g->outs);
        gtab_del(&r->groups, gi);
    } else {
        g->h.keyrow = g->rows.e[0].r;
    }
    if ((rc = df_consolidate(&r->diff, &r->base.g->scratch)) ||
        batch_reserve(&r->base.out, r->diff.len))
        return rc ? rc : LDB_NOMEM;
    for (size_t i = 0; i < r->diff.len; i++)
        r->base.out.e[r->base.out.len++] = r->diff.e[i];
    r->diff.len = 0;
    return LDB_OK;
}

static int greduce_run(df_node *n)
{
    struct greduce_node *r = (struct greduce_node *)n;
    const df_batch *d = n->in[0]->delta;
    int rc;
    for (size_t i = 0; i < d->len; i++)
        if ((rc = gstep(r, d->e[i].r, d->e[i].w)))
            return rc;
    for (size_t i = 0; i < r->touched.len; i++)
        if ((rc = gsettle(r, r->touched.data[i])))
            return rc;
    vec_clear(&r->touched);
    return LDB_OK;
}

static void greduce_free(df_node *n)
{
    struct greduce_node *r = (struct greduce_node *)n;
    for (uint32_t i = 0; i < r->groups.len; i++) {
        struct ggroup *g = (struct ggroup *)gtab_at(&r->groups, i);
        if (g->h.live) {
            df_batch_free(&g->rows);
            df_batch_free(&g->outs);
        }
    }
    gtab_free(&r->groups);
    key_copy_free(&r->key);
    vec_free(&r->touched);
    df_batch_free(&r->fresh);
    df_batch_free(&r->diff);
}

static void greduce_retained(const df_node *n, size_t *rows, size_t *bytes)
{
    const struct greduce_node *r = (const struct greduce_node *)n;
    *rows = 0;
    *bytes = gtab_bytes(&r->groups);
    for (uint32_t i = 0; i < r->groups.len; i++) {
        struct ggroup *g = (struct ggroup *)gtab_at(&r->groups, i);
        if (!g->h.live)
            continue;
        *rows += g->rows.len + g->outs.len;
        *bytes += (g->rows.cap + g->outs.cap) * sizeof(df_entry);
        for (size_t k = 0; k < g->rows.len; k++)
            *bytes += row_mem(g->rows.e[k].r);
        for (size_t k = 0; k < g->outs.len; k++)
            *bytes += row_mem(g->outs.e[k].r);
    }
}

static const struct df_node_ops greduce_ops = { "reduce_general", greduce_run, greduce_free,
                                                greduce_retained };

int df_reduce_general(df_graph *g, df_node *in, const df_key *key, uint32_t ncols,
                      df_reduce_fn fn, void *ctx, df_node **out)
{
    if (g->err)
        return g->err;
    if (!in || !key || !fn)
        return df_fail(g, LDB_MISUSE);
    int rc = node_new(g, sizeof(struct greduce_node), &greduce_ops, ncols, &in, 1, out);
    if (rc)
        return rc;
    struct greduce_node *r = (struct greduce_node *)*out;
    r->fn = fn;
    r->ctx = ctx;
    if ((rc = key_copy_init(&r->key, key, in->ncols)))
        return df_fail(g, rc);
    gtab_init(&r->groups, sizeof(struct ggroup), &r->key.k, r->key.k.cols);
    return LDB_OK;
}
