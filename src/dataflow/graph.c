/*
 * graph.c - graph life cycle, the scheduler, counters, inputs, outputs.
 *
 * Scheduling: nodes are kept in creation order, which is topological
 * because a node's inputs must exist when it is made. A run clears the
 * previous run's deltas, moves each input's staged entries into its
 * delta, and processes every node once, in order, if one of its inputs
 * has a non-empty delta or it has pending work of its own. After that
 * pass no node has pending work: the graph is quiescent.
 *
 * Publication: output deltas are only readable while the graph has not
 * failed, and a failing run empties them, so a partial result is never
 * visible.
 *
 * Buffers: every batch, and the consolidation scratch, keeps its capacity
 * from run to run up to DF_BATCH_KEEP entries, so a steady stream of
 * small runs allocates only the rows it produces and a large run's
 * buffers (a hydration's: as many entries as the result has rows) do not
 * stay with the graph.
 */
#include "dataflow/internal.h"

#include "base/mem.h"

#include <string.h>

int df_graph_new(df_graph **out)
{
    df_graph *g = mem_calloc(1, sizeof *g);
    if (!g)
        return LDB_NOMEM;
    *out = g;
    return LDB_OK;
}

void df_graph_free(df_graph *g)
{
    if (!g)
        return;
    for (size_t i = g->nodes.len; i-- > 0;) {
        df_node *n = g->nodes.data[i];
        df_batch_free(&n->out);
        if (n->ops->free)
            n->ops->free(n);
        mem_free(n->in);
        mem_free(n);
    }
    vec_free(&g->nodes);
    df_scratch_free(&g->scratch);
    mem_free(g);
}

int df_graph_error(const df_graph *g) { return g->err; }

int df_fail(df_graph *g, int rc)
{
    if (!g->err)
        g->err = rc;
    return rc;
}

int node_new(df_graph *g, size_t size, const struct df_node_ops *ops, uint32_t ncols,
             df_node *const *ins, uint32_t nin, df_node **out)
{
    if (g->err)
        return g->err;
    for (uint32_t i = 0; i < nin; i++)
        if (!ins[i] || ins[i]->g != g)
            return df_fail(g, LDB_MISUSE);
    if (vec_reserve(&g->nodes, 1))
        return df_fail(g, LDB_NOMEM);
    df_node *n = mem_calloc(1, size);
    df_node **in = mem_alloc(nin * sizeof *in);
    if (!n || !in) {
        mem_free(n);
        mem_free(in);
        return df_fail(g, LDB_NOMEM);
    }
    if (nin)
        memcpy(in, ins, nin * sizeof *in);
    n->g = g;
    n->ops = ops;
    n->ncols = ncols;
    n->in = in;
    n->nin = nin;
    n->delta = &n->out;
    g->nodes.data[g->nodes.len++] = n;
    *out = n;
    return LDB_OK;
}

static bool has_work(const df_node *n)
{
    if (n->pending)
        return true;
    for (uint32_t i = 0; i < n->nin; i++)
        if (n->in[i]->delta->len)
            return true;
    return false;
}

void df_clear_deltas(df_graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++)
        df_batch_clear(&g->nodes.data[i]->out);
    if (g->scratch.cap > DF_BATCH_KEEP || g->scratch.tmp_cap > DF_BATCH_KEEP)
        df_scratch_free(&g->scratch);
}

int df_run(df_graph *g)
{
    if (g->err)
        return g->err;
    df_clear_deltas(g);
    for (size_t i = 0; i < g->nodes.len; i++) {
        df_node *n = g->nodes.data[i];
        if (!has_work(n))
            continue;
        for (uint32_t k = 0; k < n->nin; k++)
            n->rows_in += n->in[k]->delta->len;
        int rc = n->ops->run(n);
        if (rc) {
            df_fail(g, rc);
            df_clear_deltas(g);
            return rc;
        }
        n->pending = false;
        n->rows_out += n->delta->len;
    }
    return LDB_OK;
}

/* ---- counters ------------------------------------------------------------- */

void df_node_counters(const df_node *n, struct df_counters *c)
{
    memset(c, 0, sizeof *c);
    c->rows_in = n->rows_in;
    c->rows_out = n->rows_out;
    if (n->ops->retained)
        n->ops->retained(n, &c->retained_rows, &c->retained_bytes);
}

void df_graph_counters(const df_graph *g, struct df_counters *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < g->nodes.len; i++) {
        struct df_counters nc;
        df_node_counters(g->nodes.data[i], &nc);
        c->rows_in += nc.rows_in;
        c->rows_out += nc.rows_out;
        c->retained_rows += nc.retained_rows;
        c->retained_bytes += nc.retained_bytes;
    }
}

uint64_t df_graph_rows_in(const df_graph *g)
{
    uint64_t n = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        n += g->nodes.data[i]->rows_in;
    return n;
}

uint32_t df_node_ncols(const df_node *n) { return n->ncols; }

int df_emit(df_emitter *em, row *r, int64_t w)
{
    if (r->ncols != em->ncols) {
        row_release(r);
        return LDB_MISUSE;
    }
    if (w == 0) {
        row_release(r);
        return LDB_OK;
    }
    return batch_take(em->b, r, w * em->mult);
}

/* ---- inputs ------------------------------------------------------------------ */

/* Pushed entries wait in staged; the run swaps them into the delta. */
struct input_node {
    df_node base;
    df_batch staged;
};

static int input_run(df_node *n)
{
    struct input_node *in = (struct input_node *)n;
    df_batch t = n->out;
    n->out = in->staged;
    in->staged = t;
    return LDB_OK;
}

static void input_free(df_node *n) { df_batch_free(&((struct input_node *)n)->staged); }

static const struct df_node_ops input_ops = { "input", input_run, input_free, NULL };

int df_input(df_graph *g, uint32_t ncols, df_node **out)
{
    return node_new(g, sizeof(struct input_node), &input_ops, ncols, NULL, 0, out);
}

int df_push(df_node *n, row *r, int64_t w)
{
    df_graph *g = n->g;
    if (g->err)
        return g->err;
    if (n->ops != &input_ops || r->ncols != n->ncols)
        return df_fail(g, LDB_MISUSE);
    struct input_node *in = (struct input_node *)n;
    if (df_batch_push(&in->staged, r, w))
        return df_fail(g, LDB_NOMEM);
    n->pending = true;
    return LDB_OK;
}

/* ---- outputs ----------------------------------------------------------------- */

static int output_run(df_node *n)
{
    const df_batch *d = n->in[0]->delta;
    if (batch_reserve(&n->out, d->len))
        return LDB_NOMEM;
    for (size_t i = 0; i < d->len; i++) {
        n->out.e[n->out.len].r = row_retain(d->e[i].r);
        n->out.e[n->out.len++].w = d->e[i].w;
    }
    return df_consolidate(&n->out, &n->g->scratch);
}

static const struct df_node_ops output_ops = { "output", output_run, NULL, NULL };

int df_output(df_graph *g, df_node *in, df_node **out)
{
    return node_new(g, sizeof(df_node), &output_ops, in ? in->ncols : 0, &in, 1, out);
}

const df_entry *df_output_delta(const df_node *n, size_t *len)
{
    if (n->g->err || n->ops != &output_ops) {
        *len = 0;
        return NULL;
    }
    *len = n->out.len;
    return n->out.e;
}

int df_output_take(df_node *n, df_batch *acc)
{
    if (n->g->err || n->ops != &output_ops || n->out.len == 0)
        return LDB_OK;
    if (acc->len == 0) {
        df_batch t = *acc;
        *acc = n->out;
        n->out = t;
        return LDB_OK;
    }
    if (batch_reserve(acc, n->out.len))
        return LDB_NOMEM;
    memcpy(acc->e + acc->len, n->out.e, n->out.len * sizeof *acc->e);
    acc->len += n->out.len;
    n->out.len = 0;
    return LDB_OK;
}
