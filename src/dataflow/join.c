/*
 * join.c - joins of two arrangements: inner, left/right/full outer, semi
 * and anti, with an optional residual predicate.
 *
 * Arrangements already hold their NEW state when the join runs (see
 * arrange.c), so with A, B the new states and dA, dB this run's deltas:
 *
 *     d(A join B) = dA join B_old  +  A join dB
 *                 = dA join B  +  A join dB  -  dA join dB
 *
 * (B_old = B - dB: an external arrangement can only show B, so the old
 * state is read as the new one minus the delta). The last term needs dB
 * by key (a per-run index the arrangement builds on demand); it vanishes
 * when either side was empty before the run (hydration), which then
 * costs a single term.
 *
 * Output consolidation. When both sides change in one run the terms
 * overlap: a pair of two new rows comes out of all three (+1 +1 -1). Left
 * unconsolidated, a join's output delta would be the sum of its terms,
 * and a chain of N joins whose inputs all change in one commit (an N-way
 * self-join, one INSERT) would carry 2^N entries at its end: each level
 * multiplies its input delta's entries (the expansion of N three-term
 * formulas). A join whose run emitted from more than one term therefore
 * consolidates its output, so every level passes on the exact change and
 * the N levels together compute the ordered N-term delta join (input i's
 * delta against the new states of the inputs before it and the old
 * states of those after it), with work linear in N. A run with one
 * producing term (the usual update of one side) emits no overlap and
 * skips the pass.
 *
 * Unmatched rows (the NULL-padded rows of outer joins, and the outputs of
 * semi and anti joins). For a preserved side X against the other side Y,
 * x's match weight m(x) is the total weight of the Y rows with x's key
 * that pass the residual, and x's output is w(x) * F(m(x)) with
 * F(m) = [m <= 0] (pad, anti) or [m > 0] (semi). With Z = F(m_new) and
 * Z' = F(m_new - m_delta) (the old match weight, from new state minus
 * delta), and writing X, dX as weighted multisets:
 *
 *     d out = sum over x in X[k], k a key of dY:  w(x) * (Z(x) - Z'(x))
 *           + sum over x in dX:                   w(x) * Z'(x)
 *
 * which is exact for any batch (consolidated or not) and needs only new
 * states and deltas, so it works on external arrangements. Without a
 * residual m depends on the key alone, and a key whose matched status
 * does not flip costs no scan of X.
 *
 * Keys with a NULL part match nothing unless DF_JOIN_NULLS_EQUAL.
 * Retained: nothing beyond a scratch row for residual calls; the state is
 * in the arrangements.
 */
#include "dataflow/internal.h"

#include "base/interrupt.h"
#include "base/mem.h"

#include <string.h>

struct join_node {
    df_node base;
    enum df_join_kind kind;
    bool nulls_equal;
    df_residual_fn res;
    void *rctx;
    df_node *L, *R;
    uint32_t lc, rc;
    row *scratch; /* lc + rc borrowed values for residual calls */
    /* this run: terms that emitted, and the output length after the last */
    uint32_t terms;
    size_t mark;
};

/* Ends a term of the delta formula: counts it if it emitted anything. */
static int end_term(struct join_node *j, int rc)
{
    if (j->base.out.len > j->mark) {
        j->terms++;
        j->mark = j->base.out.len;
    }
    return rc;
}

static int passes(struct join_node *j, const row *a, const row *b, bool *keep)
{
    if (!j->res) {
        *keep = true;
        return LDB_OK;
    }
    memcpy(j->scratch->cols, a->cols, j->lc * sizeof(value));
    memcpy(j->scratch->cols + j->lc, b->cols, j->rc * sizeof(value));
    j->scratch->hash = 0;
    *keep = false;
    return j->res(j->rctx, j->scratch, keep);
}

/* A new output row: a's columns then b's, NULL where a side is absent. */
static int emit_joined(struct join_node *j, const row *a, const row *b, int64_t w)
{
    row *o = row_alloc(j->lc + j->rc);
    if (!o)
        return LDB_NOMEM;
    for (uint32_t i = 0; a && i < j->lc; i++)
        o->cols[i] = value_copy(&a->cols[i]);
    for (uint32_t i = 0; b && i < j->rc; i++)
        o->cols[j->lc + i] = value_copy(&b->cols[i]);
    return batch_take(&j->base.out, o, w);
}

/* ---- matched pairs ------------------------------------------------------------ */

struct pair_ctx {
    struct join_node *j;
    const row *probe;
    bool probe_left;
    int64_t w;
};

static int pair_visit(void *c, row *r, int64_t w)
{
    struct pair_ctx *p = c;
    const row *a = p->probe_left ? p->probe : r, *b = p->probe_left ? r : p->probe;
    bool keep;
    int rc = intr_tick(); /* every pair visited is work ldb_interrupt can stop */
    if (rc == LDB_OK)
        rc = passes(p->j, a, b, &keep);
    if (rc || !keep || w == 0)
        return rc;
    return emit_joined(p->j, a, b, p->w * w);
}

static bool probe_can_match(const struct join_node *j, df_node *side, const row *r)
{
    const df_key *k = arr_key(side);
    return j->nulls_equal || !key_has_null(k, r, k->cols);
}

/* Probes `other` (its new state, or its delta when use_delta) with each
 * entry of side's delta, weights multiplied by sign. The sides are named
 * explicitly: in a self-join both are the same arrangement. */
static int probe_all(struct join_node *j, bool from_left, bool use_delta, int64_t sign)
{
    df_node *side = from_left ? j->L : j->R, *other = from_left ? j->R : j->L;
    const df_batch *d = side->delta;
    const uint32_t *cols = arr_key(side)->cols;
    struct pair_ctx p = { j, NULL, from_left, 0 };
    for (size_t i = 0; i < d->len; i++) {
        if (!probe_can_match(j, side, d->e[i].r))
            continue;
        p.probe = d->e[i].r;
        p.w = d->e[i].w * sign;
        uint64_t h = arr_delta_hash(side, i);
        int rc = use_delta ? arr_delta_lookup(other, p.probe, cols, h, pair_visit, &p)
                           : arr_lookup(other, p.probe, cols, h, pair_visit, &p);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int matched_pairs(struct join_node *j)
{
    bool da = j->L->delta->len > 0, db = j->R->delta->len > 0;
    bool t1 = da, t2 = db, t3 = da && db;
    if (t3 && arr_was_empty(j->R))
        t1 = t3 = false; /* dA join B_old is empty */
    else if (t3 && arr_was_empty(j->L))
        t2 = t3 = false; /* A_old join dB is empty */
    int rc = LDB_OK;
    if (t1)
        rc = end_term(j, probe_all(j, true, false, 1));
    if (!rc && t2)
        rc = end_term(j, probe_all(j, false, false, 1));
    if (!rc && t3)
        rc = end_term(j, probe_all(j, true, true, -1));
    return rc;
}

/* ---- unmatched rows ------------------------------------------------------------- */

enum unmatched_mode { UM_PAD, UM_ANTI, UM_SEMI };

struct side {
    struct join_node *j;
    df_node *X, *Y;
    bool x_left;
    enum unmatched_mode mode;
    const row *x;  /* the row whose matches are being summed */
    int64_t m;     /* their weight */
    uint64_t hash; /* of the key being processed */
    bool per_key;  /* no residual: the key's F values below apply to all */
    bool f_new, f_old;
};

static bool F(const struct side *s, int64_t m) { return s->mode == UM_SEMI ? m > 0 : m <= 0; }

static int emit_unmatched(struct side *s, const row *x, int64_t w)
{
    if (w == 0)
        return LDB_OK;
    if (s->mode != UM_PAD)
        return batch_take(&s->j->base.out, row_retain((row *)x), w);
    return s->x_left ? emit_joined(s->j, x, NULL, w) : emit_joined(s->j, NULL, x, w);
}

static int match_visit(void *c, row *y, int64_t w)
{
    struct side *s = c;
    bool keep;
    int rc = s->x_left ? passes(s->j, s->x, y, &keep) : passes(s->j, y, s->x, &keep);
    if (rc == LDB_OK && keep)
        s->m += w;
    return rc;
}

/* Match weight of x (key at X's key columns) in Y's new state or delta. */
static int match_weight(struct side *s, const row *x, bool delta, int64_t *m)
{
    const uint32_t *cols = arr_key(s->X)->cols;
    if (!s->j->res && !delta)
        return arr_weight(s->Y, x, cols, s->hash, m);
    s->x = x;
    s->m = 0;
    int rc = delta ? arr_delta_lookup(s->Y, x, cols, s->hash, match_visit, s)
                   : arr_lookup(s->Y, x, cols, s->hash, match_visit, s);
    *m = s->m;
    return rc;
}

/* Old and new match weight of x. */
static int match_change(struct side *s, const row *x, int64_t *m_new, int64_t *m_old)
{
    int64_t md = 0;
    int rc = match_weight(s, x, false, m_new);
    if (rc == LDB_OK && s->Y->delta->len)
        rc = match_weight(s, x, true, &md);
    *m_old = *m_new - md;
    return rc;
}

/* First sum: rows of X under a key of dY whose status may flip. */
static int flip_visit(void *c, row *x, int64_t w)
{
    struct side *s = c;
    if (s->per_key)
        return emit_unmatched(s, x, w * (s->f_new - s->f_old));
    int64_t m_new, m_old;
    int rc = match_change(s, x, &m_new, &m_old);
    if (rc)
        return rc;
    return emit_unmatched(s, x, w * (F(s, m_new) - F(s, m_old)));
}

static int sum_weight(void *c, row *r, int64_t w)
{
    *(int64_t *)c += w;
    return LDB_OK;
}

static int dy_key_visit(void *c, size_t i)
{
    struct side *s = c;
    const row *y = s->Y->delta->e[i].r;
    const uint32_t *ycols = arr_key(s->Y)->cols;
    if (!probe_can_match(s->j, s->Y, y))
        return LDB_OK;
    s->hash = arr_delta_hash(s->Y, i);
    if (s->per_key) {
        /* Skip the key unless its status flips. */
        int64_t m_new, md = 0;
        int rc = arr_weight(s->Y, y, ycols, s->hash, &m_new);
        if (rc == LDB_OK)
            rc = arr_delta_lookup(s->Y, y, ycols, s->hash, sum_weight, &md);
        s->f_new = F(s, m_new);
        s->f_old = F(s, m_new - md);
        if (rc || s->f_new == s->f_old)
            return rc;
    }
    return arr_lookup(s->X, y, ycols, s->hash, flip_visit, s);
}

static int unmatched(struct join_node *j, bool x_left, enum unmatched_mode mode)
{
    df_node *X = x_left ? j->L : j->R, *Y = x_left ? j->R : j->L;
    struct side s = { j, X, Y, x_left, mode, NULL, 0, 0, !j->res, false, false };
    int rc = LDB_OK;
    if (Y->delta->len)
        rc = end_term(j, arr_delta_keys(Y, dy_key_visit, &s));
    /* Second sum: each delta row of X with its old status. */
    const df_batch *d = X->delta;
    for (size_t i = 0; rc == LDB_OK && i < d->len; i++) {
        int64_t m_new = 0, m_old = 0;
        s.hash = arr_delta_hash(X, i);
        if (probe_can_match(j, X, d->e[i].r))
            rc = match_change(&s, d->e[i].r, &m_new, &m_old);
        if (rc == LDB_OK)
            rc = emit_unmatched(&s, d->e[i].r, d->e[i].w * F(&s, m_old));
    }
    return end_term(j, rc);
}

static int join_run(df_node *n)
{
    struct join_node *j = (struct join_node *)n;
    j->terms = 0;
    j->mark = 0;
    int rc;
    switch (j->kind) {
    case DF_JOIN_SEMI:
        rc = unmatched(j, true, UM_SEMI);
        break;
    case DF_JOIN_ANTI:
        rc = unmatched(j, true, UM_ANTI);
        break;
    default:
        rc = matched_pairs(j);
        if (rc == LDB_OK && (j->kind == DF_JOIN_LEFT || j->kind == DF_JOIN_FULL))
            rc = unmatched(j, true, UM_PAD);
        if (rc == LDB_OK && (j->kind == DF_JOIN_RIGHT || j->kind == DF_JOIN_FULL))
            rc = unmatched(j, false, UM_PAD);
        break;
    }
    if (rc == LDB_OK && j->terms > 1)
        rc = df_consolidate(&n->out, &n->g->scratch);
    return rc;
}

static void join_free(df_node *n)
{
    struct join_node *j = (struct join_node *)n;
    if (!j->scratch)
        return;
    for (uint32_t i = 0; i < j->scratch->ncols; i++)
        j->scratch->cols[i] = value_null(); /* borrowed, not owned */
    row_release(j->scratch);
}

static const struct df_node_ops join_ops = { "join", join_run, join_free, NULL };

static bool same_keys(const df_key *a, const df_key *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->colls[i] != b->colls[i])
            return false;
    return true;
}

int df_join(df_graph *g, df_node *left, df_node *right, enum df_join_kind kind,
            unsigned flags, df_residual_fn residual, void *ctx, df_node **out)
{
    if (g->err)
        return g->err;
    if (!left || !right || !arr_is_arrangement(left) || !arr_is_arrangement(right) ||
        !same_keys(arr_key(left), arr_key(right)) || kind > DF_JOIN_ANTI)
        return df_fail(g, LDB_MISUSE);
    bool pairs = kind != DF_JOIN_SEMI && kind != DF_JOIN_ANTI;
    df_node *ins[2] = { left, right };
    uint32_t ncols = left->ncols + (pairs ? right->ncols : 0);
    int rc = node_new(g, sizeof(struct join_node), &join_ops, ncols, ins, 2, out);
    if (rc)
        return rc;
    struct join_node *j = (struct join_node *)*out;
    j->kind = kind;
    j->nulls_equal = flags & DF_JOIN_NULLS_EQUAL;
    j->res = residual;
    j->rctx = ctx;
    j->L = left;
    j->R = right;
    j->lc = left->ncols;
    j->rc = right->ncols;
    if (residual && !(j->scratch = row_alloc(j->lc + j->rc)))
        return df_fail(g, LDB_NOMEM);
    return LDB_OK;
}
