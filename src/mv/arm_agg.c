/*
 * arm_agg.c - the aggregate arm: a body that groups one table by plain
 * columns, every aggregate declaring its algebra (aggregate.h):
 *
 *   combine   the result is a function of the count of the argument's
 *             non-NULL values and their exact sum (count, INTEGER sum,
 *             total, avg, user decompositions): the backing row keeps
 *             both as hidden partials, a change adds to them, and the
 *             result is recombined. The sum is kept exactly (128 bits:
 *             an INTEGER when it fits, else 16 bytes), never as a REAL,
 *             so nothing drifts: the row is what stepping gives.
 *   extreme   min/max: an insert can only tighten the kept extreme; a
 *             retraction of a value at least as extreme as it re-reads
 *             the group's rows through an index that leads with the
 *             group columns (a retraction of any other value changes
 *             nothing).
 *
 * Every backing row also keeps its group's row count: a group whose count
 * falls to zero loses its row (with no HAVING, a group has a row exactly
 * when it has rows). A scalar aggregate (no GROUP BY) always has its one
 * row.
 *
 * Per statement: every change adds -old / +new contributions to a table
 * of touched groups; then each touched group's stored row is read once,
 * its partials updated, its result recomputed, and written unless
 * identical (an update of a column no aggregate reads ends there).
 */
#include "mv/mv_internal.h"

#include "base/hash.h"
#include "base/hmap.h"
#include "sql/func.h"

#include <string.h>

/* What one statement adds to one aggregate of one group. */
struct acc_agg {
    int64_t count;
    isum sum;
    value best_in;   /* most extreme value inserted (NULL: none) */
    value best_out;  /* most extreme value retracted (NULL: none) */
};

struct acc_group {
    row *keyrow;     /* a source row of the group (retained; NULL: scalar) */
    int64_t rows;
};

struct acc {
    struct mv_view *v;
    VEC(struct acc_group) groups;
    VEC(struct acc_agg) aggs;  /* naggs per group */
    hmap index;                 /* group values -> group */
};

/* ---- group keys ------------------------------------------------------------------------ */

static uint64_t group_hash(const struct mv_agg_arm *a, const row *r)
{
    uint64_t h = 0x2545F4914F6CDD1Dull;
    for (uint32_t i = 0; i < a->ngroups; i++)
        h = hash_combine(h, value_hash(&r->cols[a->gcols[i]], LDB_COLL_BINARY));
    return h;
}

struct group_probe {
    const struct acc *acc;
    const row *r;
};

static bool group_eq(const void *key, uint64_t val)
{
    const struct group_probe *p = key;
    const struct mv_agg_arm *a = &p->acc->v->arm.agg;
    const row *g = p->acc->groups.data[val].keyrow;
    for (uint32_t i = 0; i < a->ngroups; i++)
        if (!value_identical(&g->cols[a->gcols[i]], &p->r->cols[a->gcols[i]]))
            return false;
    return true;
}

static int new_group(struct acc *acc, row *keyrow, uint32_t *gi)
{
    uint32_t na = acc->v->arm.agg.naggs;
    if (vec_reserve(&acc->groups, 1) || vec_reserve(&acc->aggs, na))
        return LDB_NOMEM;
    *gi = (uint32_t)acc->groups.len;
    acc->groups.data[acc->groups.len++] = (struct acc_group){ keyrow ? row_retain(keyrow) : NULL, 0 };
    for (uint32_t i = 0; i < na; i++) {
        struct acc_agg *x = &acc->aggs.data[acc->aggs.len++];
        x->count = 0;
        isum_init(&x->sum);
        x->best_in = x->best_out = value_null();
    }
    return LDB_OK;
}

/* Most statements touch a few groups: found by a scan until there are
 * more than this, then through the index (built at that point). */
#define FEW_GROUPS 8

static int index_groups(struct acc *acc)
{
    const struct mv_agg_arm *a = &acc->v->arm.agg;
    for (uint32_t i = 0; i < acc->groups.len; i++) {
        struct group_probe p = { acc, acc->groups.data[i].keyrow };
        uint64_t *slot;
        bool found;
        if (hmap_put(&acc->index, group_hash(a, p.r), group_eq, &p, &slot, &found))
            return LDB_NOMEM;
        *slot = i;
    }
    return LDB_OK;
}

static int group_of(struct acc *acc, row *r, uint32_t *gi)
{
    if (acc->v->arm.agg.ngroups == 0) {
        *gi = 0;
        return acc->groups.len ? LDB_OK : new_group(acc, NULL, gi);
    }
    struct group_probe p = { acc, r };
    if (acc->groups.len < FEW_GROUPS) {
        for (uint32_t i = 0; i < acc->groups.len; i++) {
            if (group_eq(&p, i)) {
                *gi = i;
                return LDB_OK;
            }
        }
        int rc = new_group(acc, r, gi);
        return rc || acc->groups.len < FEW_GROUPS ? rc : index_groups(acc);
    }
    uint64_t *slot;
    bool found;
    if (hmap_put(&acc->index, group_hash(&acc->v->arm.agg, r), group_eq, &p, &slot, &found))
        return LDB_NOMEM;
    if (found) {
        *gi = (uint32_t)*slot;
        return LDB_OK;
    }
    int rc = new_group(acc, r, gi);
    if (rc)
        hmap_del(&acc->index, slot);
    else
        *slot = *gi;
    return rc;
}

static void acc_free(struct acc *acc)
{
    for (size_t i = 0; i < acc->groups.len; i++)
        row_release(acc->groups.data[i].keyrow);
    for (size_t i = 0; i < acc->aggs.len; i++) {
        value_release(&acc->aggs.data[i].best_in);
        value_release(&acc->aggs.data[i].best_out);
    }
    vec_free(&acc->groups);
    vec_free(&acc->aggs);
    hmap_free(&acc->index);
}

/* ---- contributions --------------------------------------------------------------------- */

/* Order in which a is "more extreme" than b (< 0): min's order, or max's
 * reversed; among canonically equal values, the one the aggregate shows. */
static int ext_cmp(const struct mv_agg_col *c, const value *a, const value *b)
{
    int r = value_cmp(a, b, c->pa->coll);
    if (r == 0)
        r = value_cmp_identity(a, b);
    return c->extreme < 0 ? r : -r;
}

static void keep_extreme(const struct mv_agg_col *c, value *best, const value *v)
{
    if (value_is_null(best) || ext_cmp(c, v, best) < 0) {
        value_release(best);
        *best = value_copy(v);
    }
}

/* Adds w copies of r to its group; other (when not NULL) is a row of the
 * same group whose contribution -w goes with it, so that an extreme whose
 * value both leave and come back is not taken for retracted. */
static int contribute(struct acc *acc, row *r, int64_t w, const row *other)
{
    const struct mv_agg_arm *a = &acc->v->arm.agg;
    uint32_t gi;
    int rc = group_of(acc, r, &gi);
    if (rc)
        return rc;
    acc->groups.data[gi].rows += w;
    for (uint32_t i = 0; i < a->naggs; i++) {
        const struct mv_agg_col *c = &a->aggs[i];
        struct acc_agg *x = &acc->aggs.data[(size_t)gi * a->naggs + i];
        const value *arg = c->arg == UINT32_MAX ? NULL : &r->cols[c->arg];
        if (!arg || value_is_null(arg))
            continue;
        if (c->extreme && other && value_identical(arg, &other->cols[c->arg]))
            continue;
        if (c->extreme) {
            keep_extreme(c, w > 0 ? &x->best_in : &x->best_out, arg);
            continue;
        }
        x->count += w;
        if (c->sum_col != UINT32_MAX)
            isum_add(&x->sum, arg->h.u.i, w);
    }
    return LDB_OK;
}

static bool same_group(const struct mv_agg_arm *a, const row *x, const row *y)
{
    for (uint32_t i = 0; i < a->ngroups; i++)
        if (!value_identical(&x->cols[a->gcols[i]], &y->cols[a->gcols[i]]))
            return false;
    return true;
}

static int contribute_change(struct acc *acc, const struct change *ch)
{
    const struct mv_agg_arm *a = &acc->v->arm.agg;
    bool in_old = false, in_new = false;
    int rc = LDB_OK;
    if (ch->old)
        rc = mv_passes(acc->v, a->preds, a->npreds, ch->old, &in_old);
    if (!rc && ch->new_row)
        rc = mv_passes(acc->v, a->preds, a->npreds, ch->new_row, &in_new);
    bool moved = !(in_old && in_new && same_group(a, ch->old, ch->new_row));
    if (!rc && in_old)
        rc = contribute(acc, ch->old, -1, moved ? NULL : ch->new_row);
    if (!rc && in_new)
        rc = contribute(acc, ch->new_row, 1, moved ? NULL : ch->old);
    return rc;
}

/* ---- partials kept in the backing row --------------------------------------------------- */

static int64_t stored_int(const row *r, uint32_t col)
{
    return r && value_type(&r->cols[col]) == LDB_INTEGER ? r->cols[col].h.u.i : 0;
}

static isum stored_sum(const row *r, uint32_t col)
{
    isum s;
    isum_init(&s);
    if (!r)
        return s;
    const value *v = &r->cols[col];
    size_t n;
    if (value_type(v) == LDB_INTEGER)
        isum_add(&s, v->h.u.i, 1);
    else if (value_type(v) == LDB_BLOB && value_bytes(v, &n) && n == sizeof s)
        memcpy(&s, value_bytes(v, &n), sizeof s);
    return s;
}

static int sum_value(const isum *s, value *out)
{
    int64_t i;
    if (isum_to_int64(s, &i)) {
        *out = value_int(i);
        return LDB_OK;
    }
    return value_blob(out, s, sizeof *s);
}

/* ---- one group ------------------------------------------------------------------------- */

/* Re-reads the group's extremes from the source rows. */
static int recheck(struct mv_view *v, const value *gv, value *ext)
{
    const struct mv_agg_arm *a = &v->arm.agg;
    v->c.rechecks++;
    struct table_index *ix = mv_group_index(a->src, a->gcols, a->ngroups);
    value probe[SCHEMA_MAX_KEY];
    for (uint32_t p = 0; ix && p < a->ngroups; p++)
        for (uint32_t g = 0; g < a->ngroups; g++)
            if (ix->parts[p].col == a->gcols[g])
                probe[p] = gv[g];
    struct index_lookup it;
    struct table_scan sc = table_scan_begin(a->src);
    for (row *r = ix ? index_lookup_first(ix, probe, a->ngroups, &it) : table_scan_next(&sc); r;
         r = ix ? index_lookup_next(&it) : table_scan_next(&sc)) {
        bool in = true;
        for (uint32_t g = 0; g < a->ngroups && in; g++)
            in = value_identical(&r->cols[a->gcols[g]], &gv[g]);
        int rc = in ? mv_passes(v, a->preds, a->npreds, r, &in) : LDB_OK;
        if (rc)
            return rc;
        for (uint32_t i = 0; in && i < a->naggs; i++)
            if (a->aggs[i].extreme && !value_is_null(&r->cols[a->aggs[i].arg]))
                keep_extreme(&a->aggs[i], &ext[i], &r->cols[a->aggs[i].arg]);
    }
    return LDB_OK;
}

/* Whether a retraction may have removed the stored extreme. */
static bool extreme_lost(const struct mv_agg_col *c, const struct acc_agg *x, const row *stored)
{
    if (value_is_null(&x->best_out) || !stored)
        return false;
    const value *m = &stored->cols[c->count_col];
    if (value_is_null(m))
        return true;
    int r = value_cmp(&x->best_out, m, c->pa->coll);
    return c->extreme < 0 ? r <= 0 : r >= 0;
}

/* The extremes after the change: tightened, or re-read from the source. */
static int extremes(struct mv_view *v, const value *gv, const struct acc_agg *xs,
                    const row *stored, value *ext)
{
    const struct mv_agg_arm *a = &v->arm.agg;
    bool lost = false;
    for (uint32_t i = 0; i < a->naggs; i++) {
        ext[i] = value_null();
        lost |= a->aggs[i].extreme && extreme_lost(&a->aggs[i], &xs[i], stored);
    }
    if (lost)
        return recheck(v, gv, ext);
    for (uint32_t i = 0; i < a->naggs; i++) {
        const struct mv_agg_col *c = &a->aggs[i];
        if (!c->extreme)
            continue;
        if (stored && !value_is_null(&stored->cols[c->count_col]))
            ext[i] = value_copy(&stored->cols[c->count_col]);
        if (!value_is_null(&xs[i].best_in))
            keep_extreme(c, &ext[i], &xs[i].best_in);
    }
    return LDB_OK;
}

/* The aggregate row (group values, then results) and the new partials. */
static int results(struct mv_view *v, const struct acc_agg *xs, const row *stored, int64_t rows,
                   value *ext, value *ar, value *part)
{
    const struct mv_agg_arm *a = &v->arm.agg;
    uint32_t ng = a->ngroups, nout = a->nout;
    for (uint32_t j = nout; j < v->lay.ncols; j++)
        part[j - nout] = value_null(); /* partials shared by aggregates are set again */
    part[a->rows_col - nout] = value_int(rows);
    for (uint32_t i = 0; i < a->naggs; i++) {
        const struct mv_agg_col *c = &a->aggs[i];
        value *res = &ar[ng + i];
        if (c->extreme) {
            *res = value_copy(&ext[i]);
            part[c->count_col - nout] = ext[i];
            ext[i] = value_null();
            continue;
        }
        int64_t count = c->arg == UINT32_MAX ? rows : stored_int(stored, c->count_col) + xs[i].count;
        isum sum = c->sum_col == UINT32_MAX ? (isum){ 0, 0 } : stored_sum(stored, c->sum_col);
        isum_merge(&sum, &xs[i].sum);
        if (c->count_col != UINT32_MAX)
            part[c->count_col - nout] = value_int(count);
        int rc = LDB_OK;
        if (c->sum_col != UINT32_MAX) {
            value_release(&part[c->sum_col - nout]);
            rc = sum_value(&sum, &part[c->sum_col - nout]);
        }
        if (rc == LDB_OK)
            rc = c->pa->fn->agg->combine(&a->insts[i], count, &sum, res);
        if (rc == LDB_RANGE)
            return store_error(v->reg->store, LDB_ERROR, "integer overflow in %s()",
                               c->pa->fn->name);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

/* The lookup values of the group's backing row (only its key columns). */
static void key_values(const struct mv_view *v, const value *gv, value *vals)
{
    const struct mv_agg_arm *a = &v->arm.agg;
    for (uint32_t i = 0; i < v->lay.npk; i++)
        vals[v->lay.pk[i]] = gv[a->out[v->lay.pk[i]]->u.index];
}

static void release_n(value *vals, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        value_release(&vals[i]);
}

/* Scratch for one group: aggregate row, extremes, backing values. */
struct group_buf {
    value *ar, *ext, *vals;
};

static int settle_group(struct acc *acc, uint32_t gi, struct group_buf *b)
{
    struct mv_view *v = acc->v;
    const struct mv_agg_arm *a = &v->arm.agg;
    const struct acc_group *g = &acc->groups.data[gi];
    const struct acc_agg *xs = &acc->aggs.data[(size_t)gi * a->naggs];
    uint32_t ng = a->ngroups, nar = ng + a->naggs, n = v->lay.ncols;
    for (uint32_t i = 0; i < ng; i++)
        b->ar[i] = value_copy(&g->keyrow->cols[a->gcols[i]]);
    key_values(v, b->ar, b->vals);
    row *stored = mv_lookup(v, b->vals);
    int64_t rows = stored_int(stored, a->rows_col) + g->rows;
    int rc = LDB_OK;
    if (rows < 0)
        rc = store_error(v->reg->store, LDB_INTERNAL, "a group's row count went negative");
    else if (rows == 0 && ng)
        rc = stored ? mv_remove(v, stored->cols) : LDB_OK;
    else if ((rc = extremes(v, b->ar, xs, stored, b->ext)) == LDB_OK) {
        for (uint32_t i = ng; i < nar; i++)
            b->ar[i] = value_null();
        rc = results(v, xs, stored, rows, b->ext, b->ar, b->vals + a->nout);
        if (rc == LDB_OK && (rc = mv_eval_all(v, a->out, a->nout, b->ar, nar, b->vals)) == LDB_OK) {
            rc = mv_put(v, b->vals);
            release_n(b->vals, a->nout);
        }
        release_n(b->vals + a->nout, n - a->nout);
        release_n(b->ext, a->naggs);
        release_n(b->ar + ng, a->naggs);
    }
    release_n(b->ar, ng);
    return rc;
}

static int settle_all(struct acc *acc)
{
    struct mv_view *v = acc->v;
    uint32_t nar = v->arm.agg.ngroups + v->arm.agg.naggs;
    size_t n = (size_t)nar + v->arm.agg.naggs + v->lay.ncols;
    value small[64];
    value *mem = n <= 64 ? small : mem_alloc(n * sizeof *mem);
    if (!mem)
        return LDB_NOMEM;
    struct group_buf b = { mem, mem + nar, mem + nar + v->arm.agg.naggs };
    int rc = LDB_OK;
    for (uint32_t i = 0; i < acc->groups.len && rc == LDB_OK; i++)
        rc = settle_group(acc, i, &b);
    if (mem != small)
        mem_free(mem);
    return rc;
}

int mv_agg_apply(struct mv_view *v, const struct table_delta *td)
{
    struct acc acc = { v, VEC_INIT, VEC_INIT, HMAP_INIT };
    int rc = LDB_OK;
    uint32_t gi;
    if (v->arm.agg.ngroups == 0)
        rc = group_of(&acc, NULL, &gi); /* the one row exists even over no rows */
    for (size_t i = 0; td && i < td->n && rc == LDB_OK; i++)
        rc = contribute_change(&acc, &td->changes[i]);
    if (rc == LDB_OK)
        rc = settle_all(&acc);
    acc_free(&acc);
    return rc;
}

/* ---- life ------------------------------------------------------------------------------- */

int mv_agg_init(struct mv_view *v)
{
    struct mv_agg_arm *a = &v->arm.agg;
    for (uint32_t i = 0; i < v->lay.npk; i++) {
        const expr *k = a->out[v->lay.pk[i]];
        if (k->kind != EXPR_COLUMN || k->u.index >= a->ngroups)
            return LDB_INTERNAL; /* the key of a group row is its group values */
    }
    a->insts = mem_calloc(a->naggs ? a->naggs : 1, sizeof *a->insts);
    if (!a->insts)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < a->naggs; i++) {
        const struct plan_agg *pa = a->aggs[i].pa;
        int rc = agg_inst_init(&a->insts[i], pa->fn->agg, pa->coll, false, NULL);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

void mv_agg_free(struct mv_view *v)
{
    struct mv_agg_arm *a = &v->arm.agg;
    for (uint32_t i = 0; a->insts && i < a->naggs; i++)
        agg_inst_free(&a->insts[i]);
    mem_free(a->insts);
    a->insts = NULL;
}
