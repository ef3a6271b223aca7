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

/* ---- records ---------------------------------------------------------------------------- */

/*
 * Groups and DISTINCT classes are stored flat, not one allocation each: a
 * record holds a group's values (owned) and, for aggregation, its states
 * right after them, so the line a probe compares is the line a step
 * updates. Records lie in chunks, chunk k holding RECS_CHUNK << k of them
 * (a state never moves: agg states may point into themselves; doubling
 * keeps a one-group aggregate, rerun per row of a correlated subquery,
 * small). A query with 150k groups made 300k allocations, and a probe
 * chased two pointers before it could compare a value.
 */
#define RECS_CHUNK 16

struct recs {
    VEC(char *) chunks;        /* chunk k: RECS_CHUNK << k records */
    size_t rec_bytes;
    size_t n;                  /* records filled */
};

/* Chunk k starts at record RECS_CHUNK * (2^k - 1). */
static size_t chunk_of(size_t i)
{
    return 63 - (size_t)__builtin_clzll(i / RECS_CHUNK + 1);
}

static value *rec_at(const struct recs *r, size_t i)
{
    size_t k = chunk_of(i), first = RECS_CHUNK * (((size_t)1 << k) - 1);
    return (value *)(r->chunks.data[k] + (i - first) * r->rec_bytes);
}

/* Room for record r->n, which the caller fills and then counts. */
static int recs_reserve(struct recs *r)
{
    if (chunk_of(r->n) < r->chunks.len)
        return LDB_OK;
    char *c = NULL;
    if (vec_reserve(&r->chunks, 1) ||
        !(c = mem_alloc(((size_t)RECS_CHUNK << r->chunks.len) * r->rec_bytes + 1)))
        return LDB_NOMEM;
    r->chunks.data[r->chunks.len++] = c;
    return LDB_OK;
}

/* Frees the chunks; the caller released what the records hold. */
static void recs_free(struct recs *r)
{
    for (size_t i = 0; i < r->chunks.len; i++)
        mem_free(r->chunks.data[i]);
    vec_free(&r->chunks);
    r->n = 0;
}

/* Canonical equality with the common case (two integers) inline. */
static inline bool key_eq(const value *x, const value *y, enum ldb_collation coll)
{
    if (x->s.type == LDB_INTEGER && y->s.type == LDB_INTEGER)
        return x->h.u.i == y->h.u.i;
    return value_eq(x, y, coll);
}

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

/* The classes are records of the class's row values (first-appearance
 * order), so a new class copies values instead of keeping the input row,
 * which made its producer allocate a new row for every class. */
struct distinct_op {
    struct op base;
    struct recs seen;
    hmap index;                /* values hash -> record */
    bool collected;
    size_t emit_i;
    row *scratch;
};

struct distinct_probe {
    const struct distinct_op *d;
    const row *r;
};

static bool distinct_eq(const void *key, uint64_t val)
{
    const struct distinct_probe *p = key;
    const struct plan *pl = p->d->base.p;
    const value *k = rec_at(&p->d->seen, val);
    for (uint32_t i = 0; i < pl->ncols; i++)
        if (!key_eq(&p->r->cols[i], &k[i], pl->cols[i].coll))
            return false;
    return true;
}

/* The class shows its least row under row_cmp_identity. */
static void least_row(value *k, const row *r, uint32_t n)
{
    uint32_t i = 0;
    while (i < n && value_identical(&r->cols[i], &k[i]))
        i++;
    if (i == n || value_cmp_identity(&r->cols[i], &k[i]) > 0)
        return;
    for (; i < n; i++) {
        value_release(&k[i]);
        k[i] = value_copy(&r->cols[i]);
    }
}

static int distinct_add(struct distinct_op *d, const row *r)
{
    const struct plan *p = d->base.p;
    struct distinct_probe probe = { d, r };
    uint64_t *slot;
    bool found;
    if (hmap_put(&d->index, rows_hash(r, p->cols, p->ncols), distinct_eq, &probe, &slot, &found))
        return exec_nomem(d->base.x);
    if (found) {
        least_row(rec_at(&d->seen, *slot), r, p->ncols);
        return LDB_OK;
    }
    if (recs_reserve(&d->seen)) {
        hmap_del(&d->index, slot);
        return exec_nomem(d->base.x);
    }
    value *k = rec_at(&d->seen, d->seen.n);
    for (uint32_t i = 0; i < p->ncols; i++)
        k[i] = value_copy(&r->cols[i]);
    *slot = d->seen.n++;
    return LDB_OK;
}

/* A class's row is known only once every row has been seen. */
static int distinct_collect(struct distinct_op *d)
{
    row *r;
    int rc;
    while ((rc = op_next(d->base.in, &r)) == LDB_ROW)
        if ((rc = distinct_add(d, r)))
            return rc;
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
    if (d->emit_i >= d->seen.n)
        return LDB_DONE;
    row *r = scratch_row(o, &d->scratch, o->p->ncols);
    if (!r)
        return LDB_NOMEM;
    const value *k = rec_at(&d->seen, d->emit_i++);
    for (uint32_t i = 0; i < o->p->ncols; i++)
        r->cols[i] = value_copy(&k[i]);
    *out = r;
    return LDB_ROW;
}

static int distinct_open(struct op *o)
{
    struct distinct_op *d = (struct distinct_op *)o;
    d->seen.rec_bytes = o->p->ncols * sizeof(value);
    d->collected = false;
    d->emit_i = 0;
    return LDB_OK;
}

static void distinct_close(struct op *o)
{
    struct distinct_op *d = (struct distinct_op *)o;
    for (size_t c = 0; c < d->seen.n; c++)
        for (uint32_t i = 0; i < o->p->ncols; i++)
            value_release(&rec_at(&d->seen, c)[i]);
    recs_free(&d->seen);
    hmap_free(&d->index);
    scratch_free(&d->scratch);
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

struct agg_op {
    struct op base;
    agg_inst *insts;
    uint32_t ninsts;           /* initialized instances */
    size_t *offsets;
    size_t state_bytes;
    struct recs groups;        /* a group's values, then its states */
    size_t last;               /* the group of the previous row */
    uint32_t *order;           /* emission order: group positions */
    hmap index;                /* key hash -> group position */
    value *gvals;              /* the current row's group values */
    value *args;               /* the current aggregate's arguments */
    bool consumed;
    size_t emit_i;
    row *scratch;
};

static value *group_key(const struct agg_op *a, size_t g)
{
    return rec_at(&a->groups, g);
}

static char *group_states(const struct agg_op *a, size_t g)
{
    return (char *)(group_key(a, g) + a->base.p->u.agg.ngroups);
}

struct group_probe {
    const struct agg_op *a;
    const value *vals;
};

static bool vals_eq(const struct agg_op *a, const value *vals, size_t g)
{
    const struct plan *pl = a->base.p;
    const value *k = group_key(a, g);
    for (uint32_t i = 0; i < pl->u.agg.ngroups; i++)
        if (!key_eq(&vals[i], &k[i], pl->cols[i].coll))
            return false;
    return true;
}

static bool group_eq(const void *key, uint64_t val)
{
    const struct group_probe *p = key;
    return vals_eq(p->a, p->vals, val);
}

/* Takes the current group values (moved, a->gvals left NULL) as a new
 * group's; room for them is made first, so a failure changes nothing. */
static int new_group(struct agg_op *a, size_t *at)
{
    const struct plan *p = a->base.p;
    uint32_t ng = p->u.agg.ngroups;
    size_t g = a->groups.n;
    if (recs_reserve(&a->groups))
        return exec_nomem(a->base.x);
    value *k = group_key(a, g);
    for (uint32_t i = 0; i < ng; i++) {
        k[i] = a->gvals[i];
        a->gvals[i] = value_null();
    }
    for (uint32_t i = 0; i < p->u.agg.naggs; i++)
        agg_init(&a->insts[i], group_states(a, g) + a->offsets[i]);
    a->groups.n++;
    *at = g;
    return LDB_OK;
}

/* The group shows the least of its keys under row_cmp_identity. */
static void least_key(struct agg_op *a, size_t g)
{
    uint32_t n = a->base.p->u.agg.ngroups, i = 0;
    value *k = group_key(a, g);
    while (i < n && value_identical(&a->gvals[i], &k[i]))
        i++;
    if (i == n || value_cmp_identity(&a->gvals[i], &k[i]) > 0)
        return;
    for (; i < n; i++) { /* swapped: gvals are released by the caller */
        value t = k[i];
        k[i] = a->gvals[i];
        a->gvals[i] = t;
    }
}

static int find_group(struct agg_op *a, size_t *at)
{
    const struct plan *p = a->base.p;
    if (p->u.agg.ngroups == 0 && a->groups.n == 1) {
        *at = 0; /* the one group of a query without GROUP BY */
        return LDB_OK;
    }
    /* input often comes clustered (an ordered read, a join's pairs of one
     * probe row): the previous row's group is checked before hashing */
    if (a->groups.n && vals_eq(a, a->gvals, a->last)) {
        *at = a->last;
        least_key(a, *at);
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
        *at = a->last = *slot;
        least_key(a, *at);
        return LDB_OK;
    }
    int rc = new_group(a, at);
    if (rc) {
        hmap_del(&a->index, slot);
        return rc;
    }
    *slot = a->last = *at;
    return LDB_OK;
}

static int agg_error(struct agg_op *a, int rc, const struct plan_agg *pa)
{
    if (rc == LDB_RANGE)
        return exec_error(a->base.x, LDB_ERROR, pa->args && pa->nargs ? pa->args[0]->off : UINT32_MAX,
                          "integer overflow in %s()", pa->fn->name);
    return rc == LDB_NOMEM ? exec_nomem(a->base.x) : rc;
}

static int step_group(struct agg_op *a, char *states, const row *r)
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
        if (rc == LDB_OK && (rc = agg_step(&a->insts[i], states + a->offsets[i], a->args, 1)))
            rc = agg_error(a, rc, pa);
        for (uint32_t j = 0; j < k; j++)
            value_release(&a->args[j]);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static inline int key_cmp(const value *x, const value *y, enum ldb_collation coll)
{
    if (x->s.type == LDB_INTEGER && y->s.type == LDB_INTEGER)
        return (x->h.u.i > y->h.u.i) - (x->h.u.i < y->h.u.i);
    return value_cmp(x, y, coll);
}

static int group_order(void *ctx, const void *pa, const void *pb)
{
    const struct agg_op *a = ctx;
    const struct plan *p = a->base.p;
    const value *x = group_key(a, *(const uint32_t *)pa), *y = group_key(a, *(const uint32_t *)pb);
    for (uint32_t i = 0; i < p->u.agg.ngroups; i++) {
        int c = key_cmp(&x[i], &y[i], p->cols[i].coll);
        if (c)
            return c;
    }
    return 0;
}

struct int_group {
    uint64_t key;              /* the INTEGER, sign bit flipped: unsigned order */
    uint32_t g;
};

/* One stable counting pass over byte b of the keys, src to dst. */
static void radix_pass(const struct int_group *src, struct int_group *dst, size_t n, unsigned b)
{
    size_t count[256] = { 0 };
    for (size_t i = 0; i < n; i++)
        count[(src[i].key >> (8 * b)) & 0xFF]++;
    for (size_t i = 0, sum = 0; i < 256; i++) {
        size_t c = count[i];
        count[i] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        dst[count[(src[i].key >> (8 * b)) & 0xFF]++] = src[i];
}

/*
 * One INTEGER group column (GROUP BY an id, the commonest many-group
 * case): a radix sort of the keys, passes over bytes that differ only,
 * instead of a comparison sort through value_cmp (a quarter of a 150k
 * group aggregate's time). *done is false when it does not apply.
 */
static int sort_int_groups(struct agg_op *a, bool *done)
{
    size_t n = a->groups.n;
    *done = false;
    if (a->base.p->u.agg.ngroups != 1)
        return LDB_OK;
    if (n < 2) {
        *done = true; /* already in order */
        return LDB_OK;
    }
    uint64_t all_or = 0, all_and = UINT64_MAX;
    for (size_t g = 0; g < n; g++) {
        const value *k = group_key(a, g);
        if (k->s.type != LDB_INTEGER)
            return LDB_OK;
        uint64_t u = (uint64_t)k->h.u.i ^ ((uint64_t)1 << 63);
        all_or |= u;
        all_and &= u;
    }
    struct int_group *v = mem_alloc(2 * n * sizeof *v);
    if (!v)
        return exec_nomem(a->base.x);
    for (size_t g = 0; g < n; g++)
        v[g] = (struct int_group){ (uint64_t)group_key(a, g)->h.u.i ^ ((uint64_t)1 << 63),
                                   (uint32_t)g };
    struct int_group *src = v, *dst = v + n;
    int rc = LDB_OK;
    for (unsigned b = 0; b < 8 && rc == LDB_OK; b++) {
        if ((((all_or ^ all_and) >> (8 * b)) & 0xFF) == 0)
            continue; /* every key has the same byte here */
        if ((rc = intr_tick_n((int64_t)n)) == LDB_OK) {
            radix_pass(src, dst, n, b);
            struct int_group *t = src;
            src = dst;
            dst = t;
        }
    }
    for (size_t i = 0; i < n && rc == LDB_OK; i++)
        a->order[i] = src[i].g;
    mem_free(v);
    *done = true;
    return rc ? exec_fail(a->base.x, rc) : LDB_OK;
}

/* Groups are emitted in ascending order of their values (SQLite's). */
static int sort_groups(struct agg_op *a)
{
    size_t n = a->groups.n;
    if (n > UINT32_MAX)
        return exec_nomem(a->base.x);
    if (!(a->order = mem_alloc((n + 1) * sizeof *a->order)))
        return exec_nomem(a->base.x);
    for (size_t g = 0; g < n; g++)
        a->order[g] = (uint32_t)g;
    bool done;
    int rc = sort_int_groups(a, &done);
    if (rc || done || !a->base.p->u.agg.ngroups)
        return rc;
    if ((rc = msort(a->order, n, sizeof *a->order, group_order, a)))
        return exec_fail(a->base.x, rc);
    return LDB_OK;
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
            rc = step_group(a, group_states(a, at), r);
        for (uint32_t j = 0; j < k; j++)
            value_release(&a->gvals[j]);
        if (rc)
            return rc;
    }
    if (rc != LDB_DONE)
        return rc;
    size_t at;
    if (ng == 0 && a->groups.n == 0 && (rc = new_group(a, &at)))
        return rc;
    if ((rc = sort_groups(a)))
        return rc;
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
    if (a->emit_i >= a->groups.n)
        return LDB_DONE;
    size_t g = a->order[a->emit_i++];
    row *r = scratch_row(o, &a->scratch, p->ncols);
    if (!r)
        return LDB_NOMEM;
    uint32_t ng = p->u.agg.ngroups;
    const value *k = group_key(a, g);
    for (uint32_t i = 0; i < ng; i++)
        r->cols[i] = value_copy(&k[i]);
    char *states = group_states(a, g);
    for (uint32_t i = 0; i < p->u.agg.naggs; i++)
        if ((rc = agg_finalize(&a->insts[i], states + a->offsets[i], &r->cols[ng + i])))
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
    a->groups.rec_bytes = p->u.agg.ngroups * sizeof(value) + a->state_bytes;
    return LDB_OK;
}

static void agg_close(struct op *o)
{
    struct agg_op *a = (struct agg_op *)o;
    for (size_t g = 0; g < a->groups.n; g++) {
        for (uint32_t i = 0; i < a->ninsts; i++)
            agg_destroy(&a->insts[i], group_states(a, g) + a->offsets[i]);
        for (uint32_t i = 0; i < o->p->u.agg.ngroups; i++)
            value_release(&group_key(a, g)[i]);
    }
    recs_free(&a->groups);
    mem_free(a->order);
    a->order = NULL;
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
