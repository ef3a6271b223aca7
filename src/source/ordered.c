/*
 * ordered.c - ordered loading: a root ORDER BY ... LIMIT window over an
 * on-demand table loads its rows in pages, not the whole filtered table
 * (seed 000, "Ordered requests, continuation, and recovery"; "Atomic
 * window publication").
 *
 * An ordered plan belongs to one query (its window) and has one param,
 * whose requests follow one another:
 *   PAGE  the first `limit` rows after cov (from the start without one);
 *   TIE   every row equal to the page's last value, so a cut tie group is
 *         closed (one order column only: the cursor is never composite);
 *   FULL  every row: the authoritative retry after a failure.
 * cov is the loading boundary: every source row up to it (inclusive) is
 * loaded. A page proves only its exact request: the last of the rows it
 * can have brought (the limit-th local row after cov) becomes the next
 * tie, and a page that brings no row past what was there is the fixed
 * point (`all`). The window is loaded (done) when the local rows up to cov
 * number offset + limit, or at the fixed point.
 *
 * The query is held (live_hold) from its first ordered request until
 * done, so the window is published once, whole; a failure keeps it held
 * (its last published window stays) until a retry loads everything. A
 * write of the table or a larger window re-checks a done window: rows of
 * its prefix may have gone. Cost: each step sorts the table's matching
 * rows, O(n log n) for the n rows the cache holds.
 */
#include "source/source_internal.h"

#include "base/mem.h"
#include "storage/table.h"

#include <stdlib.h>
#include <string.h>

int ordered_init(struct src_param *p)
{
    struct src_order *o = mem_calloc(1, sizeof *o);
    if (!o)
        return LDB_NOMEM;
    o->step = ORD_PAGE;
    o->cov = o->tie = value_null();
    o->limit = live_window_need(p->plan->q);
    p->ord = o;
    return LDB_OK;
}

void ordered_free(struct src_param *p)
{
    if (!p->ord)
        return;
    value_release(&p->ord->cov);
    value_release(&p->ord->tie);
    vec_free(&p->ord->kept); /* released by the caller */
    mem_free(p->ord);
    p->ord = NULL;
}

bool ordered_covered(const struct src_param *p) { return p->ord->done; }

/* ---- the local rows in the window's order ------------------------------------------------ */

static int order_cmp(const struct src_plan *pl, const value *a, const value *b)
{
    int c = value_cmp(a, b, LDB_COLL_BINARY); /* NULL lowest */
    return pl->order_desc ? -c : c;
}

struct sorted {
    const struct src_plan *pl;
    VEC(const value *) v;       /* borrowed from the table's rows */
};

static int by_order(const void *a, const void *b, void *pl)
{
    return order_cmp(pl, *(const value *const *)a, *(const value *const *)b);
}

/* The order values of the rows matching pl's fixed predicate, sorted. */
static int local_rows(const struct src_plan *pl, struct sorted *out)
{
    out->pl = pl;
    vec_clear(&out->v);
    struct table *t = pl->src->table;
    if (vec_reserve(&out->v, table_count(t)))
        return LDB_NOMEM;
    struct table_scan sc = table_scan_begin(t);
    for (row *r; (r = table_scan_next(&sc));)
        if (!pl->fixed || pred_match(pl->fixed, t, r->cols))
            out->v.data[out->v.len++] = &r->cols[pl->order_col];
    if (out->v.len > 1) /* qsort_r: databases on other threads sort too */
        qsort_r(out->v.data, out->v.len, sizeof *out->v.data, by_order, (void *)pl);
    return LDB_OK;
}

/* Rows at or before cov (every row without one). */
static size_t upto_cov(const struct src_order *o, const struct sorted *s)
{
    if (o->all)
        return s->v.len;
    if (!o->has_cov)
        return 0;
    size_t n = 0;
    while (n < s->v.len && order_cmp(s->pl, s->v.data[n], &o->cov) <= 0)
        n++;
    return n;
}

static int set_value(value *dst, const value *v)
{
    value copy;
    int rc = pred_value_copy(v, &copy);
    if (rc)
        return rc;
    value_release(dst);
    *dst = copy;
    return LDB_OK;
}

/* ---- steps ------------------------------------------------------------------------------------ */

void ordered_hold(struct src_param *p)
{
    if (!p->ord->holding) {
        p->ord->holding = true;
        live_hold(p->plan->q);
    }
}

static void done(struct src_registry *r, struct src_param *p)
{
    struct src_order *o = p->ord;
    o->done = true;
    for (struct src_owner *w = p->owners; w; w = w->next_in_param)
        demand_query_dirty(r, w->qs);
    if (o->holding) { /* the whole window, once */
        o->holding = false;
        live_unhold(p->plan->q);
    }
}

static void next(struct src_registry *r, struct src_param *p, enum ord_step step)
{
    p->ord->step = step;
    p->ord->done = false;
    ordered_hold(p);
    if (demand_param_fresh(r, p))
        demand_param_failed(r, p, "out of memory");
}

/* With cov (or all) just established: done, or the next page. */
static void decide(struct src_registry *r, struct src_param *p, const struct sorted *s)
{
    struct src_order *o = p->ord;
    int64_t need = live_window_need(p->plan->q);
    size_t m = upto_cov(o, s);
    /* descending, NULLs last: nothing follows a NULL boundary */
    if (o->has_cov && p->plan->order_desc && value_is_null(&o->cov))
        o->all = true;
    if (o->all || need < 0 || (int64_t)m >= need) {
        done(r, p);
        return;
    }
    o->limit = need - (int64_t)m;
    o->had = (int64_t)(s->v.len - m);
    next(r, p, ORD_PAGE);
}

/* After a settled page: the tie of its last row, or the fixed point. */
static void after_page(struct src_registry *r, struct src_param *p, const struct sorted *s)
{
    struct src_order *o = p->ord;
    size_t start = upto_cov(o, s), after = s->v.len - start;
    bool first = !o->has_cov;
    if ((int64_t)after >= o->limit) {
        if (set_value(&o->tie, s->v.data[start + (size_t)o->limit - 1]))
            goto nomem;
        next(r, p, ORD_TIE);
        return;
    }
    if (after == 0 || (!first && (int64_t)after <= o->had)) {
        o->all = true; /* it brought nothing new: the fixed point */
        decide(r, p, s);
        return;
    }
    if (set_value(&o->tie, s->v.data[s->v.len - 1]))
        goto nomem;
    next(r, p, ORD_TIE);
    return;
nomem:
    demand_param_failed(r, p, "out of memory");
}

void ordered_settled(struct src_registry *r, struct src_param *p)
{
    struct src_order *o = p->ord;
    struct sorted s = { 0 };
    if (local_rows(p->plan, &s)) {
        vec_free(&s.v);
        demand_param_failed(r, p, "out of memory");
        return;
    }
    switch (o->step) {
    case ORD_FULL:
        o->all = true;
        decide(r, p, &s);
        break;
    case ORD_TIE:
        if (set_value(&o->cov, &o->tie)) {
            demand_param_failed(r, p, "out of memory");
            break;
        }
        o->has_cov = true;
        decide(r, p, &s);
        break;
    case ORD_PAGE:
        after_page(r, p, &s);
        break;
    }
    vec_free(&s.v);
}

void ordered_failed(struct src_param *p)
{
    /* the failed request may have written part of its rows: no boundary
     * can be trusted, the retry asks for everything */
    p->ord->step = ORD_FULL;
    p->ord->done = false;
}

/* A done window whose loaded prefix may no longer fill it. */
static void recheck(struct src_registry *r, struct src_param *p)
{
    struct src_order *o = p->ord;
    o->recheck = false;
    if (!o->done || p->failed || p->acq)
        return;
    struct sorted s = { 0 };
    if (local_rows(p->plan, &s) == LDB_OK) {
        int64_t need = live_window_need(p->plan->q);
        if (!o->all && need >= 0 && (int64_t)upto_cov(o, &s) < need)
            decide(r, p, &s);
    }
    vec_free(&s.v);
}

/* The first param of an ordered plan of s for which fn says true (fn
 * must not change s's plans), or NULL; with an fn that always says false,
 * a walk over them all. */
static struct src_param *find_ordered(const ldb_source *s,
                                      bool (*fn)(struct src_param *p, void *ctx), void *ctx)
{
    uint32_t pos = 0;
    uint64_t *slot, hash;
    while ((slot = hmap_next(&s->plans, &pos, &hash))) {
        struct src_plan *pl = (struct src_plan *)(uintptr_t)*slot;
        uint32_t ppos = 0;
        uint64_t *ps = pl->order_col >= 0 ? hmap_next(&pl->params, &ppos, &hash) : NULL;
        struct src_param *p = ps ? (struct src_param *)(uintptr_t)*ps : NULL;
        if (p && fn(p, ctx))
            return p;
    }
    return NULL;
}

/* ldb_live *ctx (NULL: any query): a done window re-checks. */
static bool mark(struct src_param *p, void *q)
{
    if (p->ord->done && (!q || p->plan->q == q)) {
        p->ord->recheck = true;
        p->plan->src->reg->work = true;
    }
    return false;
}

void ordered_window_moved(struct src_registry *r, ldb_live *q)
{
    for (size_t i = 0; i < r->sources.len; i++)
        find_ordered(r->sources.data[i], mark, q);
    ordered_recheck(r); /* now: the move must see the hold before it publishes */
}

void ordered_source_wrote(ldb_source *s) { find_ordered(s, mark, NULL); }

static bool txn_hold(struct src_param *p, void *ctx)
{
    (void)ctx;
    p->ord->txn_hold = true;
    live_hold(p->plan->q);
    return false;
}

static bool txn_held(struct src_param *p, void *ctx)
{
    (void)ctx;
    return p->ord->txn_hold;
}

void ordered_txn_begin(ldb_source *s) { find_ordered(s, txn_hold, NULL); }

void ordered_txn_end(ldb_source *s)
{
    ordered_recheck(s->reg); /* a repair takes its hold before the write publishes */
    /* one at a time: a callback may close a query (its plan goes) */
    for (struct src_param *p; (p = find_ordered(s, txn_held, NULL));) {
        p->ord->txn_hold = false;
        live_unhold(p->plan->q); /* publishes the write, unless a repair holds it */
    }
}

static bool holding(struct src_param *p, void *ctx)
{
    (void)ctx;
    return p->ord->holding;
}

struct src_param *ordered_holding(const ldb_source *s) { return find_ordered(s, holding, NULL); }

/* struct src_registry *ctx: runs a re-check asked for (it only queues
 * requests and takes holds: the plans stay as they are). */
static bool run_recheck(struct src_param *p, void *r)
{
    if (p->ord->recheck)
        recheck(r, p);
    return false;
}

void ordered_recheck(struct src_registry *r)
{
    for (size_t i = 0; i < r->sources.len; i++)
        find_ordered(r->sources.data[i], run_recheck, r);
}

/* ---- the request's part ------------------------------------------------------------------------ */

static int column_pred(const struct src_plan *pl, int kind, int op, const value *v,
                       struct ldb_pred *out)
{
    *out = (struct ldb_pred){ .kind = kind, .op = op,
                              .column = table_schema(pl->src->table)->cols[pl->order_col].name };
    if (!v)
        return LDB_OK;
    out->n = 1;
    if (!(out->vals = mem_calloc(1, sizeof *out->vals)))
        return LDB_NOMEM;
    return pred_value_copy(v, &out->vals[0]);
}

int ordered_pred(const struct src_param *p, struct ldb_pred **out)
{
    const struct src_order *o = p->ord;
    const struct src_plan *pl = p->plan;
    *out = NULL;
    bool tie = o->step == ORD_TIE;
    if (o->step == ORD_FULL || (!tie && !o->has_cov))
        return LDB_OK;
    const value *v = tie ? &o->tie : &o->cov;
    struct ldb_pred *e = mem_calloc(1, sizeof *e);
    if (!e)
        return LDB_NOMEM;
    int rc;
    if (value_is_null(v)) /* NULL is lowest: ties are NULLs, rows after it are not */
        rc = column_pred(pl, tie ? LDB_PRED_ISNULL : LDB_PRED_NOTNULL, 0, NULL, e);
    else if (tie)
        rc = column_pred(pl, LDB_PRED_CMP, LDB_OP_EQ, v, e);
    else if (!pl->order_desc)
        rc = column_pred(pl, LDB_PRED_CMP, LDB_OP_GT, v, e);
    else { /* after v descending: smaller, then the NULLs */
        *e = (struct ldb_pred){ .kind = LDB_PRED_OR, .n = 2 };
        rc = (e->kids = mem_calloc(2, sizeof *e->kids)) ? LDB_OK : LDB_NOMEM;
        if (!rc)
            rc = column_pred(pl, LDB_PRED_CMP, LDB_OP_LT, v, &e->kids[0]);
        if (!rc)
            rc = column_pred(pl, LDB_PRED_ISNULL, 0, NULL, &e->kids[1]);
    }
    if (rc) {
        pred_free(e);
        return rc;
    }
    *out = e;
    return LDB_OK;
}
