/*
 * linear.c - operators that treat each entry on its own: map, flat map,
 * filter, negate, concat. They keep no state (retained = 0) and never
 * consolidate: a linear operator gives the same accumulated result on an
 * unconsolidated batch, so consolidation is left to the stateful
 * operators and the outputs.
 */
#include "dataflow/internal.h"

#include "base/mem.h"

union df_fn {
    df_map_fn map;
    df_flat_map_fn flat_map;
    df_filter_fn filter;
};

struct fn_node {
    df_node base;
    union df_fn fn;
    void *ctx;
};

static int map_run(df_node *n)
{
    struct fn_node *m = (struct fn_node *)n;
    df_map_fn fn = m->fn.map;
    const df_batch *d = n->in[0]->delta;
    if (batch_reserve(&n->out, d->len))
        return LDB_NOMEM;
    for (size_t i = 0; i < d->len; i++) {
        row *r = NULL;
        int rc = fn(m->ctx, d->e[i].r, &r);
        if (rc)
            return rc;
        if (r->ncols != n->ncols) {
            row_release(r);
            return LDB_MISUSE;
        }
        n->out.e[n->out.len].r = r;
        n->out.e[n->out.len++].w = d->e[i].w;
    }
    return LDB_OK;
}

static int flat_map_run(df_node *n)
{
    struct fn_node *m = (struct fn_node *)n;
    df_flat_map_fn fn = m->fn.flat_map;
    const df_batch *d = n->in[0]->delta;
    df_emitter em = { &n->out, 0, n->ncols };
    for (size_t i = 0; i < d->len; i++) {
        em.mult = d->e[i].w;
        int rc = fn(m->ctx, d->e[i].r, &em);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int filter_run(df_node *n)
{
    struct fn_node *m = (struct fn_node *)n;
    df_filter_fn fn = m->fn.filter;
    const df_batch *d = n->in[0]->delta;
    if (batch_reserve(&n->out, d->len))
        return LDB_NOMEM;
    for (size_t i = 0; i < d->len; i++) {
        bool keep = false;
        int rc = fn(m->ctx, d->e[i].r, &keep);
        if (rc)
            return rc;
        if (keep) {
            n->out.e[n->out.len].r = row_retain(d->e[i].r);
            n->out.e[n->out.len++].w = d->e[i].w;
        }
    }
    return LDB_OK;
}

static int negate_run(df_node *n)
{
    const df_batch *d = n->in[0]->delta;
    if (batch_reserve(&n->out, d->len))
        return LDB_NOMEM;
    for (size_t i = 0; i < d->len; i++) {
        n->out.e[n->out.len].r = row_retain(d->e[i].r);
        n->out.e[n->out.len++].w = -d->e[i].w;
    }
    return LDB_OK;
}

static int concat_run(df_node *n)
{
    size_t total = 0;
    for (uint32_t k = 0; k < n->nin; k++)
        total += n->in[k]->delta->len;
    if (batch_reserve(&n->out, total))
        return LDB_NOMEM;
    for (uint32_t k = 0; k < n->nin; k++) {
        const df_batch *d = n->in[k]->delta;
        for (size_t i = 0; i < d->len; i++) {
            n->out.e[n->out.len].r = row_retain(d->e[i].r);
            n->out.e[n->out.len++].w = d->e[i].w;
        }
    }
    return LDB_OK;
}

static const struct df_node_ops map_ops = { "map", map_run, NULL, NULL };
static const struct df_node_ops flat_map_ops = { "flat_map", flat_map_run, NULL, NULL };
static const struct df_node_ops filter_ops = { "filter", filter_run, NULL, NULL };
static const struct df_node_ops negate_ops = { "negate", negate_run, NULL, NULL };
static const struct df_node_ops concat_ops = { "concat", concat_run, NULL, NULL };

static int fn_node(df_graph *g, const struct df_node_ops *ops, df_node *in, uint32_t ncols,
                   union df_fn fn, bool have_fn, void *ctx, df_node **out)
{
    if (!g->err && !have_fn)
        return df_fail(g, LDB_MISUSE);
    int rc = node_new(g, sizeof(struct fn_node), ops, ncols, &in, 1, out);
    if (rc)
        return rc;
    struct fn_node *m = (struct fn_node *)*out;
    m->fn = fn;
    m->ctx = ctx;
    return LDB_OK;
}

int df_map(df_graph *g, df_node *in, uint32_t ncols, df_map_fn fn, void *ctx, df_node **out)
{
    return fn_node(g, &map_ops, in, ncols, (union df_fn){ .map = fn }, fn != NULL, ctx, out);
}

int df_flat_map(df_graph *g, df_node *in, uint32_t ncols, df_flat_map_fn fn, void *ctx,
                df_node **out)
{
    return fn_node(g, &flat_map_ops, in, ncols, (union df_fn){ .flat_map = fn }, fn != NULL, ctx,
                   out);
}

int df_filter(df_graph *g, df_node *in, df_filter_fn fn, void *ctx, df_node **out)
{
    return fn_node(g, &filter_ops, in, in ? in->ncols : 0, (union df_fn){ .filter = fn },
                   fn != NULL, ctx, out);
}

int df_negate(df_graph *g, df_node *in, df_node **out)
{
    return node_new(g, sizeof(df_node), &negate_ops, in ? in->ncols : 0, &in, 1, out);
}

int df_concat(df_graph *g, df_node *const *ins, uint32_t n, df_node **out)
{
    if (g->err)
        return g->err;
    if (n == 0 || !ins[0])
        return df_fail(g, LDB_MISUSE);
    for (uint32_t i = 1; i < n; i++)
        if (!ins[i] || ins[i]->ncols != ins[0]->ncols)
            return df_fail(g, LDB_MISUSE);
    return node_new(g, sizeof(df_node), &concat_ops, ins[0]->ncols, ins, n, out);
}
