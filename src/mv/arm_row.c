/*
 * arm_row.c - the projection arm: a body that filters and projects one
 * table. Each source row maps to at most one backing row, keyed by the
 * source's primary key, and computed from that row alone, so maintenance
 * keeps no state: per changed source row,
 *
 *   new image in scope      compute it; write it unless the stored row
 *                           already holds exactly those values (an update
 *                           of columns the view does not read ends here);
 *   only old image in scope delete the row of its key;
 *   neither                 nothing.
 *
 * Capture reports a primary key change as a delete and an insert, so old
 * and new images of one change always have the same backing key.
 */
#include "mv/mv_internal.h"

#include "base/interrupt.h"

#include <string.h>

static void mv_eval_ctx(struct mv_view *v, struct eval_ctx *cx, const value *vals, uint32_t n)
{
    memset(cx, 0, sizeof *cx);
    cx->row = vals;
    cx->ncols = n;
    cx->env = v->reg->env;
    cx->err = &v->err;
}

/* Whether every predicate is true of r. */
int mv_passes(struct mv_view *v, const expr *const *preds, uint32_t n, const row *r, bool *ok)
{
    *ok = true;
    struct eval_ctx cx;
    mv_eval_ctx(v, &cx, r->cols, r->ncols);
    for (uint32_t i = 0; i < n && *ok; i++) {
        int truth, rc = expr_eval_truth(preds[i], &cx, &truth);
        if (rc)
            return rc;
        *ok = truth == 1;
    }
    return LDB_OK;
}

/* vals[j] = cols[j](r) for every backing column (new references). */
int mv_eval_all(struct mv_view *v, const expr *const *cols, uint32_t n, const value *in,
                uint32_t nin, value *vals)
{
    struct eval_ctx cx;
    mv_eval_ctx(v, &cx, in, nin);
    for (uint32_t j = 0; j < n; j++) {
        int rc = cols[j]->kind == EXPR_COLUMN ? (vals[j] = value_copy(&in[cols[j]->u.index]), 0)
                                              : expr_eval(cols[j], &cx, &vals[j]);
        if (rc) {
            while (j-- > 0)
                value_release(&vals[j]);
            return rc;
        }
    }
    return LDB_OK;
}

static void release_all(value *vals, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++)
        value_release(&vals[j]);
}

/* Writes (put) or removes the image of r. */
static int image(struct mv_view *v, const row *r, bool put, value *vals)
{
    const struct mv_row_arm *a = &v->arm.row;
    int rc = mv_eval_all(v, a->cols, v->lay.ncols, r->cols, r->ncols, vals);
    if (rc)
        return rc;
    rc = put ? mv_put(v, vals) : mv_remove(v, vals);
    release_all(vals, v->lay.ncols);
    return rc;
}

static int one_change(struct mv_view *v, const struct change *ch, value *vals)
{
    const struct mv_row_arm *a = &v->arm.row;
    bool in_old = false, in_new = false;
    int rc = LDB_OK;
    if (ch->new_row)
        rc = mv_passes(v, a->preds, a->npreds, ch->new_row, &in_new);
    if (!rc && ch->old && !in_new)
        rc = mv_passes(v, a->preds, a->npreds, ch->old, &in_old);
    if (rc || (!in_new && !in_old))
        return rc;
    return in_new ? image(v, ch->new_row, true, vals) : image(v, ch->old, false, vals);
}

int mv_row_apply(struct mv_view *v, const struct table_delta *td)
{
    value small[32];
    value *vals = v->lay.ncols <= 32 ? small : mem_alloc(v->lay.ncols * sizeof *vals);
    if (!vals)
        return LDB_NOMEM;
    int rc = LDB_OK;
    for (size_t i = 0; i < td->n && rc == LDB_OK; i++)
        rc = one_change(v, &td->changes[i], vals);
    if (vals != small)
        mem_free(vals);
    return rc;
}

int mv_fill_from_source(struct mv_view *v, struct table *src,
                        int (*apply)(struct mv_view *, const struct table_delta *))
{
    size_t n = table_count(src);
    struct change *chs = mem_alloc((n ? n : 1) * sizeof *chs);
    if (!chs)
        return LDB_NOMEM;
    struct table_scan sc = table_scan_begin(src);
    size_t k = 0;
    for (row *r; k < n && (r = table_scan_next(&sc));)
        chs[k++] = (struct change){ NULL, r };
    struct table_delta td = { src, chs, k };
    int rc = intr_tick_n((int64_t)k); /* ldb_interrupt stops a long CREATE */
    if (rc == LDB_OK)
        rc = apply(v, &td);
    mem_free(chs);
    return rc;
}
