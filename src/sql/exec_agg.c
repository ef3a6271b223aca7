/*
 * exec_agg.c - hash aggregation, DISTINCT and set operations.
 *
 * Aggregation reads its whole input into a table of groups (canonical
 * equality of the group values under their collations), steps each
 * group's aggregate states (src/value/aggregate.h, the code the dataflow
 * layer runs) and emits the groups in ascending order of their values, as
 * SQLite's sorter-based GROUP BY does. A query without GROUP BY has
 * exactly one group.
 *
 * DISTINCT reads its whole input and emits one row per class, in the
 * order the classes first appeared. UNION, INTERSECT and EXCEPT collect
 * their distinct result rows (INTERSECT and EXCEPT from the left input)
 * and emit them in ascending order of all columns (SQLite's order); UNION
 * ALL streams the left input, then the right.
 *
 * Where canonically equal but not identical values meet (5 and 5.0, 'a'
 * and 'A' under NOCASE, -0.0 and 0.0), the group values, DISTINCT row or
 * set-operation row shown is the least under row_cmp_identity, never the
 * first to arrive: the rule of the dataflow operators (reduce.c,
 * setop.c), so that one-shot and incremental results are byte-identical.
 */
#include "sql/exec_internal.h"

#include "base/hash.h"
#include "base/mem.h"
#include "sql/func.h"

#include <string.h>

/* ---- row sets ------------------------------------------------------------------------- */

/* Distinct rows under canonical equality of the first n columns. */
struct rowset {
    VEC(row *) rows;
    hmap index;                /* row hash -> position */
    const struct plan_col *cols;
    uint32_t n;
};

struct rowset_probe {
    const struct rowset *set;
    const row *r;
};

static bool rowset_eq(const void *key, uint64_t val)
{
    const struct rowset_probe *p = key;
    return rows_equal(p->r, p->set->rows.data[val], p->set->cols, p->set->n);
}

static bool rowset_has(const struct rowset *s, const row *r)
{
    struct rowset_probe p = { s, r };
    return hmap_get(&s->index, rows_hash(r, s->cols, s->n), rowset_eq, &p) != NULL;
}

/* Adds r unless an equal row is there (*added says which); an equal row
 * stays only while it is the least of its class under row_cmp_identity. */
static int rowset_add(struct rowset *s, row *r, bool *added)
{
    struct rowset_probe p = { s, r };
    uint64_t *slot;
    bool found;
    if (hmap_put(&s->index, rows_hash(r, s->cols, s->n), rowset_eq, &p, &slot, &found))
        return LDB_NOMEM;
    *added = !found;
    if (found) {
        row **held = &s->rows.data[*slot];
        if (row_cmp_identity(r, *held) < 0) {
            row_retain(r);
            row_release(*held);
            *held = r;
        }
        return LDB_OK;
    }
    if (vec_push(&s->rows, r)) {
        hmap_del(&s->index, slot);
        return LDB_NOMEM;
    }
    row_retain(r);
    *slot = s->rows.len - 1;
    return LDB_OK;
}

static void rowset_free(struct rowset *s)
{
    for (size_t i = 0; i < s->rows.len; i++)
        row_release(s->rows.data[i]);
    vec_free(&s->rows);
    hmap_free(&s->index);
}

static int row_order(void *ctx, const void *pa, const void *pb)
{
    const struct rowset *s = ctx;
    const row *a = *(row *const *)pa, *b = *(row *const *)pb;
    for (uint32_t i = 0; i < s->n; i++) {
        int c = value_cmp(&a->cols[i], &b->cols[i], s->cols[i].coll);
        if (c)
            return c;
    }
    return 0;
}

/* ---- DISTINCT ---------------------------------------------------------------------------- */

struct distinct_op {
    struct op base;
    struct rowset seen;
    bool collected;
    size_t emit_i;
};

/* A class's row is known only once every row has been seen. */
static int distinct_collect(struct distinct_op *d)
{
    row *r;
    int rc;
    while ((rc = op_next(d->base.in, &r)) == LDB_ROW) {
        bool added;
        if (rowset_add(&d->seen, r, &added))
            return exec_nomem(d->base.x);
    }
    if (rc != LDB_DONE)
        return rc;
    d->collected = true;
    return LDB_OK;
}

static int distinct_next(struct op *o, row **out)
{
    struct distinct_op *d = (struct distinct_op *)o;
    int rc;
    if (!d->collected && (rc = distinct_collect(d)))
        return rc;
    if (d->emit_i >= d->seen.rows.len)
        return LDB_DONE;
    *out = d->seen.rows.data[d->emit_i++];
    return LDB_ROW;
}

static int distinct_open(struct op *o)
{
    struct distinct_op *d = (struct distinct_op *)o;
    d->seen.cols = o->p->cols;
    d->seen.n = o->p->ncols;
    d->collected = false;
    d->emit_i = 0;
    return LDB_OK;
}

static void distinct_close(struct op *o)
{
    rowset_free(&((struct distinct_op *)o)->seen);
}

struct op *op_distinct(struct exec *x, const struct plan *p, const value *outer,
                       uint32_t nouter)
{
    struct op *o = op_alloc(x, p, sizeof(struct distinct_op), outer, nouter);
    if (o) {
        o->open = distinct_open;
        o->next = distinct_next;
        o->close = distinct_close;
    }
    return o;
}

/* ---- set operations -------------------------------------------------------------------------- */

struct setop_op {
    struct op base;
    struct rowset result, right;
    bool collected, in_right;
    size_t emit_i;
};

static int collect_side(struct setop_op *s, struct op *side, bool right)
{
    enum setop_kind k = s->base.p->u.setop;
    row *r;
    int rc;
    while ((rc = op_next(side, &r)) == LDB_ROW) {
        struct rowset *dst = NULL;
        if (right && k != SETOP_UNION)
            dst = &s->right;
        else if (k == SETOP_UNION || (k == SETOP_INTERSECT) == rowset_has(&s->right, r))
            dst = &s->result;
        bool added;
        if (dst && rowset_add(dst, r, &added))
            return exec_nomem(s->base.x);
    }
    return rc == LDB_DONE ? LDB_OK : rc;
}

static int collect(struct setop_op *s)
{
    int rc = collect_side(s, s->base.right, true);
    if (rc == LDB_OK)
        rc = collect_side(s, s->base.left, false);
    if (rc)
        return rc;
    if ((rc = msort(s->result.rows.data, s->result.rows.len, sizeof(row *), row_order,
                    &s->result)))
        return exec_fail(s->base.x, rc);
    s->collected = true;
    return LDB_OK;
}

static int setop_next(struct op *o, row **out)
{
    struct setop_op *s = (struct setop_op *)o;
    int rc;
    if (o->p->u.setop == SETOP_UNION_ALL) {
        if (!s->in_right && (rc = op_next(o->left, out)) != LDB_DONE)
            return rc;
        s->in_right = true;
        return op_next(o->right, out);
    }
    if (!s->collected && (rc = collect(s)))
        return rc;
    if (s->emit_i >= s->result.rows.len)
        return LDB_DONE;
    *out = s->result.rows.data[s->emit_i++];
    return LDB_ROW;
}

static int setop_open(struct op *o)
{
    struct setop_op *s = (struct setop_op *)o;
    s->result.cols = s->right.cols = o->p->cols;
    s->result.n = s->right.n = o->p->ncols;
    s->collected = s->in_right = false;
    s->emit_i = 0;
    return LDB_OK;
}

static void setop_close(struct op *o)
{
    struct setop_op *s = (struct setop_op *)o;
    rowset_free(&s->result);
    rowset_free(&s->right);
}

struct op *op_setop(struct exec *x, const struct plan *p, const value *outer, uint32_t nouter)
{
    struct op *o = op_alloc(x, p, sizeof(struct setop_op), outer, nouter);
    if (o) {
        o->open = setop_open;
        o->next = setop_next;
        o->close = setop_close;
    }
    return o;
}

/* ---- aggregation ---------------------------------------------------------------------------------- */

struct group {
    row *key;                  /* the group values */
    char *states;              /* one state per aggregate, at offsets[i] */
};

struct agg_op {
    struct op base;
    agg_inst *insts;
    uint32_t ninsts;           /* initialized instances */
    size_t *offsets;
    size_t state_bytes;
    VEC(struct group) groups;
    hmap index;                /* key hash -> group position */
    value *gvals;              /* the current row's group values */
    value *args;               /* the current aggregate's arguments */
    bool consumed;
    size_t emit_i;
    row *scratch;
};

struct group_probe {
    const struct agg_op *a;
    const value *vals;
};

static bool group_eq(const void *key, uint64_t val)
{
    const struct group_probe *p = key;
    const struct plan *pl = p->a->base.p;
    const row *k = p->a->groups.data[val].key;
    for (uint32_t i = 0; i < pl->u.agg.ngroups; i++)
        if (!value_eq(&p->vals[i], &k->cols[i], pl->cols[i].coll))
            return false;
    return true;
}

static int new_group(struct agg_op *a, const value *vals, size_t *at)
{
    const struct plan *p = a->base.p;
    struct group g = { row_from(vals, p->u.agg.ngroups), mem_alloc(a->state_bytes + 1) };
    if (!g.key || !g.states || vec_push(&a->groups, g)) {
        row_release(g.key);
        mem_free(g.states);
        return exec_nomem(a->base.x);
    }
    for (uint32_t i = 0; i < p->u.agg.naggs; i++)
        agg_init(&a->insts[i], g.states + a->offsets[i]);
    *at = a->groups.len - 1;
    return LDB_OK;
}

/* The group shows the least of its keys under row_cmp_identity. */
static int least_key(struct agg_op *a, struct group *g)
{
    uint32_t n = a->base.p->u.agg.ngroups, i = 0;
    while (i < n && value_identical(&a->gvals[i], &g->key->cols[i]))
        i++;
    if (i == n || value_cmp_identity(&a->gvals[i], &g->key->cols[i]) > 0)
        return LDB_OK;
    row *k = row_from(a->gvals, n);
    if (!k)
        return exec_nomem(a->base.x);
    row_release(g->key);
    g->key = k;
    return LDB_OK;
}

static int find_group(struct agg_op *a, size_t *at)
{
    const struct plan *p = a->base.p;
    if (p->u.agg.ngroups == 0 && a->groups.len == 1) {
        *at = 0; /* the one group of a query without GROUP BY */
        return LDB_OK;
    }
    uint64_t h = HASH_SEED;
    for (uint32_t i = 0; i < p->u.agg.ngroups; i++)
        h = hash_combine(h, value_hash(&a->gvals[i], p->cols[i].coll));
    struct group_probe probe = { a, a->gvals };
    uint64_t *slot;
    bool found;
    if (hmap_put(&a->index, h, group_eq, &probe, &slot, &found))
        return exec_nomem(a->base.x);
    if (found) {
        *at = *slot;
        return least_key(a, &a->groups.data[*at]);
    }
    int rc = new_group(a, a->gvals, at);
    if (rc) {
        hmap_del(&a->index, slot);
        return rc;
    }
    *slot = *at;
    return LDB_OK;
}

static int agg_error(struct agg_op *a, int rc, const struct plan_agg *pa)
{
    if (rc == LDB_RANGE)
        return exec_error(a->base.x, LDB_ERROR, pa->args && pa->nargs ? pa->args[0]->off : UINT32_MAX,
                          "integer overflow in %s()", pa->fn->name);
    return rc == LDB_NOMEM ? exec_nomem(a->base.x) : rc;
}

static int step_group(struct agg_op *a, struct group *g, const row *r)
{
    const struct plan *p = a->base.p;
    for (uint32_t i = 0; i < p->u.agg.naggs; i++) {
        const struct plan_agg *pa = &p->u.agg.aggs[i];
        int rc, t = 1;
        if (pa->filter && (rc = op_truth(&a->base, pa->filter, r, &t)))
            return rc;
        if (t != 1)
            continue;
        uint32_t k = 0;
        for (rc = LDB_OK; k < pa->nargs && rc == LDB_OK; k++)
            rc = op_eval(&a->base, pa->args[k], r, &a->args[k]);
        if (rc == LDB_OK && (rc = agg_step(&a->insts[i], g->states + a->offsets[i], a->args, 1)))
            rc = agg_error(a, rc, pa);
        for (uint32_t j = 0; j < k; j++)
            value_release(&a->args[j]);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int group_order(void *ctx, const void *pa, const void *pb)
{
    const struct plan *p = ctx;
    const struct group *a = pa, *b = pb;
    for (uint32_t i = 0; i < p->u.agg.ngroups; i++) {
        int c = value_cmp(&a->key->cols[i], &b->key->cols[i], p->cols[i].coll);
        if (c)
            return c;
    }
    return 0;
}

static int consume_input(struct agg_op *a)
{
    const struct plan *p = a->base.p;
    uint32_t ng = p->u.agg.ngroups;
    row *r;
    int rc;
    while ((rc = op_next(a->base.in, &r)) == LDB_ROW) {
        uint32_t k = 0;
        for (rc = LDB_OK; k < ng && rc == LDB_OK; k++)
            rc = op_eval(&a->base, p->u.agg.groups[k], r, &a->gvals[k]);
        size_t at = 0;
        if (rc == LDB_OK && (rc = find_group(a, &at)) == LDB_OK)
            rc = step_group(a, &a->groups.data[at], r);
        for (uint32_t j = 0; j < k; j++)
            value_release(&a->gvals[j]);
        if (rc)
            return rc;
    }
    if (rc != LDB_DONE)
        return rc;
    size_t at;
    if (ng == 0 && a->groups.len == 0 && (rc = new_group(a, NULL, &at)))
        return rc;
    if ((rc = msort(a->groups.data, a->groups.len, sizeof *a->groups.data, group_order,
                    (void *)p)))
        return exec_fail(a->base.x, rc);
    a->consumed = true;
    return LDB_OK;
}

static int agg_next(struct op *o, row **out)
{
    struct agg_op *a = (struct agg_op *)o;
    const struct plan *p = o->p;
    int rc;
    if (!a->consumed && (rc = consume_input(a)))
        return rc;
    if (a->emit_i >= a->groups.len)
        return LDB_DONE;
    struct group *g = &a->groups.data[a->emit_i++];
    row *r = scratch_row(o, &a->scratch, p->ncols);
    if (!r)
        return LDB_NOMEM;
    uint32_t ng = p->u.agg.ngroups;
    for (uint32_t i = 0; i < ng; i++)
        r->cols[i] = value_copy(&g->key->cols[i]);
    for (uint32_t i = 0; i < p->u.agg.naggs; i++)
        if ((rc = agg_finalize(&a->insts[i], g->states + a->offsets[i], &r->cols[ng + i])))
            return agg_error(a, rc, &p->u.agg.aggs[i]);
    *out = r;
    return LDB_ROW;
}

static int agg_open(struct op *o)
{
    struct agg_op *a = (struct agg_op *)o;
    const struct plan *p = o->p;
    uint32_t n = p->u.agg.naggs, maxargs = 1;
    a->consumed = false;
    a->emit_i = 0;
    if (!(a->insts = mem_calloc(n + 1, sizeof *a->insts)) ||
        !(a->offsets = mem_calloc(n + 1, sizeof *a->offsets)) ||
        !(a->gvals = mem_calloc(p->u.agg.ngroups + 1, sizeof *a->gvals)))
        return exec_nomem(o->x);
    a->state_bytes = 0;
    for (a->ninsts = 0; a->ninsts < n; a->ninsts++) {
        const struct plan_agg *pa = &p->u.agg.aggs[a->ninsts];
        agg_inst *ai = &a->insts[a->ninsts];
        int rc = agg_inst_init(ai, pa->fn->agg, pa->coll, pa->distinct,
                               value_is_null(&pa->sep) ? NULL : &pa->sep);
        if (rc == LDB_OK && (rc = agg_inst_set_order(ai, pa->order, pa->norder)))
            agg_inst_free(ai);
        if (rc)
            return rc == LDB_NOMEM ? exec_nomem(o->x) : rc;
        a->offsets[a->ninsts] = a->state_bytes;
        a->state_bytes += (agg_state_size(&a->insts[a->ninsts]) + 7) & ~(size_t)7;
        maxargs = pa->nargs > maxargs ? pa->nargs : maxargs;
    }
    if (!(a->args = mem_calloc(maxargs, sizeof *a->args)))
        return exec_nomem(o->x);
    return LDB_OK;
}

static void agg_close(struct op *o)
{
    struct agg_op *a = (struct agg_op *)o;
    for (size_t g = 0; g < a->groups.len; g++) {
        for (uint32_t i = 0; i < a->ninsts; i++)
            agg_destroy(&a->insts[i], a->groups.data[g].states + a->offsets[i]);
        row_release(a->groups.data[g].key);
        mem_free(a->groups.data[g].states);
    }
    vec_free(&a->groups);
    hmap_free(&a->index);
    for (uint32_t i = 0; i < a->ninsts; i++)
        agg_inst_free(&a->insts[i]);
    a->ninsts = 0;
    mem_free(a->insts);
    mem_free(a->offsets);
    mem_free(a->gvals);
    mem_free(a->args);
    a->insts = NULL;
    a->offsets = NULL;
    a->gvals = a->args = NULL;
    scratch_free(&a->scratch);
}

struct op *op_aggregate(struct exec *x, const struct plan *p, const value *outer,
                        uint32_t nouter)
{
    struct op *o = op_alloc(x, p, sizeof(struct agg_op), outer, nouter);
    if (o) {
        o->open = agg_open;
        o->next = agg_next;
        o->close = agg_close;
    }
    return o;
}
