/*
 * window.c - the loader that feeds an ordered window from an index (see
 * window.h for the contract).
 *
 * State: the boundary row (the last loaded row in the read order R, kept
 * even after it is deleted: it still names a position), whether the whole
 * table is loaded, and the count of loaded rows. The prefix L is "every
 * row at or before the boundary in R", so membership is one comparison.
 * R is the index's requested order (storage/reader.h): the key parts with
 * the requested null placement and direction, then the primary key.
 */
#include "live/window.h"

#include "base/mem.h"
#include "storage/capture.h"
#include "storage/reader.h"
#include "storage/table.h"

#include <string.h>

struct window_loader {
    struct live_program *prog;
    size_t src;                /* index into prog->sources */
    struct table *t;
    struct table_index *ix;
    struct order_spec spec;
    uint32_t m;                /* leading ORDER BY terms the index serves */
    bool ties_complete;        /* R restricted to the table is the window order */
    int64_t need;              /* offset + limit */
    row *boundary;             /* referenced; NULL: nothing loaded yet */
    bool exhausted;            /* every row of the table is loaded */
    size_t loaded;
    uint32_t npk;              /* leading result key columns = driving key */
};

/* ---- the read order ------------------------------------------------------------ */

static int r_cmp(const struct window_loader *ld, const row *a, const row *b)
{
    const struct table_index *ix = ld->ix;
    for (uint32_t i = 0; i < ix->nparts; i++) {
        const struct key_part *p = &ix->parts[i];
        const value *x = &a->cols[p->col], *y = &b->cols[p->col];
        bool nx = value_is_null(x), ny = value_is_null(y);
        int c;
        if (nx || ny) {
            c = (nx && ny) ? 0 : (nx ? -1 : 1) * (ld->spec.nulls_first[i] ? 1 : -1);
        } else {
            c = value_cmp(x, y, p->coll);
            if (p->desc != ld->spec.reverse)
                c = -c;
        }
        if (c)
            return c;
    }
    int c = table_key_cmp(ld->t, a, b);
    return ld->spec.ties_desc ? -c : c;
}

/* Equal on the index parts that serve the ORDER BY (a tie group). */
static bool tie(const struct window_loader *ld, const row *a, const row *b)
{
    for (uint32_t i = 0; i < ld->m; i++) {
        const struct key_part *p = &ld->ix->parts[i];
        if (value_cmp(&a->cols[p->col], &b->cols[p->col], p->coll) != 0)
            return false;
    }
    return true;
}

static bool covered(const struct window_loader *ld, const row *r)
{
    return ld->exhausted || (ld->boundary && r_cmp(ld, r, ld->boundary) <= 0);
}

static void set_boundary(struct window_loader *ld, row *r)
{
    row *old = ld->boundary;
    ld->boundary = r ? row_retain(r) : NULL;
    row_release(old);
}

static df_node *input(const struct window_loader *ld)
{
    return ld->prog->sources.data[ld->src].input;
}

/* ---- feeding ------------------------------------------------------------------------ */

int window_loader_push(struct window_loader *ld, const struct table_delta *td)
{
    for (size_t i = 0; i < td->n; i++) {
        const struct change *ch = &td->changes[i];
        int rc = LDB_OK;
        if (ch->old && covered(ld, ch->old)) {
            rc = df_push(input(ld), ch->old, -1);
            ld->loaded--;
        }
        if (!rc && ch->new_row && covered(ld, ch->new_row)) {
            rc = df_push(input(ld), ch->new_row, 1);
            ld->loaded++;
        }
        if (rc)
            return rc;
    }
    return LDB_OK;
}

/* Rows the window's top-k holds: the eligible rows of the prefix. */
static int64_t eligible(const struct window_loader *ld)
{
    return (int64_t)df_topk_rows(ld->prog->window);
}

static int load(struct window_loader *ld, row *r)
{
    ld->prog->stats.rows_read++;
    int rc = df_push(input(ld), r, 1);
    if (rc)
        return rc;
    ld->loaded++;
    set_boundary(ld, r);
    return LDB_OK;
}

int window_loader_settle(struct window_loader *ld, bool *pushed)
{
    *pushed = false;
    int64_t have = eligible(ld);
    if (have >= ld->need || ld->exhausted)
        return LDB_OK;
    int64_t want = ld->need - have;
    struct order_cursor c;
    bool on = ld->boundary ? order_seek_row(ld->ix, &ld->spec, ld->boundary, true, &c)
                           : order_first(ld->ix, &ld->spec, &c);
    for (; on && want > 0; on = order_next(&c), want--) {
        int rc = load(ld, order_row(&c));
        if (rc)
            return rc;
        *pushed = true;
    }
    /* complete the boundary's tie group: rows the index orders after it
     * may come before it in the window's full order */
    for (; on && !ld->ties_complete && tie(ld, order_row(&c), ld->boundary); on = order_next(&c)) {
        int rc = load(ld, order_row(&c));
        if (rc)
            return rc;
    }
    if (!on)
        ld->exhausted = true;
    return LDB_OK;
}

/* The driving row of the last window row (its key leads the result key). */
static row *last_window_driver(const struct window_loader *ld)
{
    const struct result_set *rs = ld->prog->published;
    btree_cursor c;
    if (!btree_last(&rs->order, &c))
        return NULL;
    const struct result_copy *item = btree_cursor_item(&c);
    value key[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < ld->npk; i++)
        key[i] = item->e->r->cols[rs->key[i]];
    return table_lookup(ld->t, key);
}

int window_loader_trim(struct window_loader *ld, bool *pushed)
{
    *pushed = false;
    int64_t limit = ld->prog->limit;
    if (!ld->prog->published || (int64_t)ld->loaded <= 2 * ld->need + 32 || limit < 0 ||
        ld->prog->published->rows < limit)
        return LDB_OK;
    row *nb = last_window_driver(ld);
    if (!nb)
        return LDB_OK;
    struct order_cursor c;
    bool on = order_seek_row(ld->ix, &ld->spec, nb, true, &c);
    while (on && !ld->ties_complete && tie(ld, order_row(&c), nb)) {
        nb = order_row(&c);
        on = order_next(&c);
    }
    row_retain(nb);
    for (; on && covered(ld, order_row(&c)); on = order_next(&c)) {
        ld->prog->stats.rows_read++;
        int rc = df_push(input(ld), order_row(&c), -1);
        if (rc) {
            row_release(nb);
            return rc;
        }
        ld->loaded--;
        *pushed = true;
    }
    set_boundary(ld, nb);
    row_release(nb);
    ld->exhausted = false;
    return LDB_OK;
}

void window_loader_resize(struct window_loader *ld, int64_t offset, int64_t limit)
{
    ld->need = limit < 0 ? INT64_MAX : offset + limit;
}

void window_loader_free(struct window_loader *ld)
{
    if (!ld)
        return;
    row_release(ld->boundary);
    mem_free(ld);
}

/* ---- planning ---------------------------------------------------------------------------- */

/* Follows output column col of p down to a column of the driving scan
 * (the leftmost one) through nodes that keep the driving rows' order. */
static const struct plan *trace_column(const struct plan *p, uint32_t col, uint32_t *tcol)
{
    for (;;) {
        switch (p->kind) {
        case PLAN_SCAN:
            *tcol = col;
            return p;
        case PLAN_FILTER:
            p = p->in;
            break;
        case PLAN_PROJECT: {
            const expr *e = p->u.exprs[col];
            if (e->kind != EXPR_COLUMN)
                return NULL;
            col = e->u.index;
            p = p->in;
            break;
        }
        case PLAN_JOIN: {
            enum join_kind k = p->u.join.kind;
            if (col >= p->left->ncols ||
                !(k == JOIN_INNER || k == JOIN_CROSS || k == JOIN_LEFT || k == JOIN_SEMI ||
                  k == JOIN_ANTI))
                return NULL;
            p = p->left;
            break;
        }
        default:
            return NULL;
        }
    }
}

/* How many scans of t the plan has (a bounded table must have one). */
static uint32_t scans_of(const struct plan *p, const struct table *t)
{
    if (!p)
        return 0;
    uint32_t n = p->kind == PLAN_SCAN && p->u.scan.table == t;
    return n + scans_of(p->in, t) + scans_of(p->left, t) + scans_of(p->right, t);
}

/* Subqueries were decorrelated into joins, so scans are all in the tree. */
static const struct plan *find_limit(const struct plan *p, const struct plan *target)
{
    if (!p)
        return NULL;
    if (p == target)
        return p;
    const struct plan *f = find_limit(p->in, target);
    if (!f)
        f = find_limit(p->left, target);
    return f ? f : find_limit(p->right, target);
}

static struct table_index *pick_index(struct table *t, const struct order_term *terms,
                                      uint32_t n, uint32_t *m, struct order_spec *spec)
{
    for (uint32_t len = n; len > 0; len--) {
        for (size_t i = 0; i < table_index_count(t); i++) {
            struct table_index *ix = table_index_at(t, i);
            if (order_spec_for(ix, terms, len, spec) == LDB_OK) {
                *m = len;
                return ix;
            }
        }
    }
    return NULL;
}

int live_window_plan(struct live_program *prog, const struct plan *root)
{
    const struct plan *lim = find_limit(root, prog->root_limit);
    if (!prog->bounded || !lim || prog->limit < 0)
        return LDB_OK;
    const struct plan *sort = lim->in;
    uint32_t nuser = prog->nuser_sort;
    if (nuser == 0 || nuser > INDEX_MAX_PARTS)
        return LDB_OK;
    struct order_term terms[INDEX_MAX_PARTS];
    const struct plan *scan = NULL;
    uint32_t n = 0;
    for (; n < nuser; n++) {
        const struct sort_key *k = &sort->u.sort.keys[n];
        uint32_t tcol;
        if (k->e->kind != EXPR_COLUMN)
            break;
        const struct plan *s = trace_column(sort->in, k->e->u.index, &tcol);
        if (!s || (scan && s != scan))
            break;
        scan = s;
        terms[n] = (struct order_term){ tcol, k->desc, k->nulls_first, k->coll };
    }
    if (!scan || n == 0)
        return LDB_OK;
    struct table *t = scan->u.scan.table;
    if (scans_of(root, t) != 1)
        return LDB_OK;
    struct window_loader probe;
    memset(&probe, 0, sizeof probe);
    probe.ix = pick_index(t, terms, n, &probe.m, &probe.spec);
    if (!probe.ix)
        return LDB_OK;
    struct live_source *src;
    int rc = live_source_for(prog, t, &src);
    if (!rc)
        rc = vec_push(&prog->indexes, probe.ix);
    if (rc)
        return rc;
    struct window_loader *ld = mem_alloc(sizeof *ld);
    if (!ld)
        return LDB_NOMEM;
    *ld = probe;
    ld->prog = prog;
    ld->src = (size_t)(src - prog->sources.data);
    ld->t = t;
    ld->ties_complete = probe.m == nuser && probe.ix->nparts == probe.m;
    ld->npk = table_schema(t)->npk;
    window_loader_resize(ld, prog->offset, prog->limit);
    src->loader = ld;
    return LDB_OK;
}
