/*
 * window.c - the loader that feeds an ordered window from an index (see
 * window.h for the contract).
 *
 * State: the boundary row (the last loaded row in the read order R, kept
 * even after it is deleted: it still names a position) and whether the
 * whole table is loaded. R is the index's
 * requested order (storage/reader.h): the key parts with the requested
 * null placement and direction, then the primary key.
 *
 * The prefix L. When R restricted to the table is the window's order
 * (ties_complete: the index serves every ORDER BY term and has no other
 * part), L is "every row at or before the boundary in R". Otherwise the
 * window orders the rows of a tie group (rows equal on the m index parts
 * that serve the ORDER BY) differently from R, so L is made of whole tie
 * groups: "every row whose first m parts are at or before the
 * boundary's". Either way membership is one comparison, and a row
 * inserted anywhere into the boundary's tie group is in L.
 *
 * Work (seed 003). Every row the loader reads from the index counts in
 * rows_read: rows it loads, rows it reads again to unload them, and rows
 * it looks at to find the end of a tie group. A refill reads the rows
 * the window lacks (plus those the query's filters reject on the way)
 * and at most one tie group and one row past it. Trimming is bounded per
 * change: it may read what is left of 2 * (offset + limit) + 1 after the
 * change's other reads, and it starts only when inserts may have grown
 * the rows past the window beyond offset + limit.
 */
#include "live/window.h"

#include "base/mem.h"
#include "base/ptrmap.h"
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
    int64_t need;              /* offset + limit, saturated */
    row *boundary;             /* referenced; NULL: nothing loaded yet */
    bool exhausted;            /* every row of the table is loaded (the
                                  boundary is still the last in L's order) */
    uint32_t npk;              /* leading result key columns = driving key */
    /* work accounting */
    uint64_t reads;            /* rows read from the index, ever */
    uint64_t mark;             /* reads when the last change ended */
    row *peeked;               /* looked at (and counted) past a tie group,
                                  not loaded; borrowed until the table changes */
    int64_t grown;             /* estimate of the rows loaded past the window:
                                  exact after a trim, then +1 for each row
                                  entering L, -1 for each leaving it */
};

static int64_t add_sat(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* ---- the read order ------------------------------------------------------------ */

/* R order on the first n index parts. */
static int parts_cmp(const struct window_loader *ld, const row *a, const row *b, uint32_t n)
{
    const struct table_index *ix = ld->ix;
    for (uint32_t i = 0; i < n; i++) {
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
    return 0;
}

/* The order L is cut in: R, or R's tie groups. */
static int l_cmp(const struct window_loader *ld, const row *a, const row *b)
{
    if (!ld->ties_complete)
        return parts_cmp(ld, a, b, ld->m);
    int c = parts_cmp(ld, a, b, ld->ix->nparts);
    if (c)
        return c;
    c = table_key_cmp(ld->t, a, b);
    return ld->spec.ties_desc ? -c : c;
}

/* Equal on the index parts that serve the ORDER BY (a tie group). */
static bool tie(const struct window_loader *ld, const row *a, const row *b)
{
    return parts_cmp(ld, a, b, ld->m) == 0;
}

static bool covered(const struct window_loader *ld, const row *r)
{
    return ld->exhausted || (ld->boundary && l_cmp(ld, r, ld->boundary) <= 0);
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

static void gather_key(const struct window_loader *ld, const row *r, value *key)
{
    for (uint32_t i = 0; i < ld->m; i++)
        key[i] = r->cols[ld->ix->parts[i].col];
}

/* The first row after L (c off the index when there is none). */
static bool seek_past(const struct window_loader *ld, struct order_cursor *c)
{
    if (!ld->boundary)
        return order_first(ld->ix, &ld->spec, c);
    if (ld->ties_complete)
        return order_seek_row(ld->ix, &ld->spec, ld->boundary, true, c);
    value key[INDEX_MAX_PARTS];
    gather_key(ld, ld->boundary, key);
    return order_seek_key(ld->ix, &ld->spec, key, ld->m, true, c);
}

/* R rank just past the L-position of r: rows at or before it in L's order. */
static size_t end_rank(const struct window_loader *ld, const row *r)
{
    if (!ld->ties_complete) {
        value key[INDEX_MAX_PARTS];
        gather_key(ld, r, key);
        return order_count_before_key(ld->ix, &ld->spec, key, ld->m, true);
    }
    struct order_cursor c;
    return order_seek_row(ld->ix, &ld->spec, r, true, &c) ? order_rank(&c) : index_count(ld->ix);
}

/* ---- work accounting ------------------------------------------------------------ */

static void count_read(struct window_loader *ld)
{
    ld->reads++;
    ld->prog->stats.rows_read++;
}

/* What the change may still read: 2 * need + 1 minus what it has read. */
static uint64_t budget(const struct window_loader *ld)
{
    uint64_t bound = 2 * (uint64_t)ld->need + 1, used = ld->reads - ld->mark;
    return used < bound ? bound - used : 0;
}

/* ---- feeding ------------------------------------------------------------------------ */

int window_loader_push(struct window_loader *ld, const struct table_delta *td)
{
    ld->peeked = NULL; /* the table changed */
    /* A commit of more changes than the window needs into a fully loaded
     * table: forwarding every new row would have the top-k order them all
     * (a million-row insert into a table empty at open). The boundary is
     * the last loaded row in L's order (exhausted keeps it so), so L may
     * end there instead; the refill after the run reads only the rows the
     * window lacks, and nothing is retracted. */
    if (ld->exhausted && td->n > (uint64_t)ld->need)
        ld->exhausted = false;
    for (size_t i = 0; i < td->n; i++) {
        const struct change *ch = &td->changes[i];
        bool was = ch->old && covered(ld, ch->old);
        bool is = ch->new_row && covered(ld, ch->new_row);
        /* every row is loaded: the boundary follows the last one */
        if (is && ld->exhausted && (!ld->boundary || l_cmp(ld, ch->new_row, ld->boundary) > 0))
            set_boundary(ld, ch->new_row);
        int rc = LDB_OK;
        if (was)
            rc = df_push(input(ld), ch->old, -1);
        if (!rc && is)
            rc = df_push(input(ld), ch->new_row, 1);
        if (rc)
            return rc;
        /* a row entering L can push one window row past the window; a
         * row leaving it pulls one back (or there was none past it) */
        if (is && !was)
            ld->grown = add_sat(ld->grown, 1);
        else if (was && !is && ld->grown > 0)
            ld->grown--;
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
    if (r != ld->peeked)
        count_read(ld);
    ld->peeked = NULL;
    int rc = df_push(input(ld), r, 1);
    if (rc)
        return rc;
    set_boundary(ld, r);
    return LDB_OK;
}

/* Looks at r (the first row past a tie group) without loading it; the
 * next refill starts there and does not count it again. */
static void peek(struct window_loader *ld, row *r)
{
    if (r != ld->peeked)
        count_read(ld);
    ld->peeked = r;
}

int window_loader_settle(struct window_loader *ld, bool *pushed)
{
    *pushed = false;
    int64_t have = eligible(ld);
    if (have >= ld->need || ld->exhausted)
        return LDB_OK;
    int64_t want = ld->need - have;
    struct order_cursor c;
    bool on = seek_past(ld, &c);
    for (; on && want > 0; on = order_next(&c), want--) {
        int rc = load(ld, order_row(&c));
        if (rc)
            return rc;
        *pushed = true;
    }
    /* complete the boundary's tie group: rows the index orders after it
     * may come before it in the window's full order */
    for (; on && !ld->ties_complete; on = order_next(&c)) {
        if (!tie(ld, order_row(&c), ld->boundary)) {
            peek(ld, order_row(&c));
            break;
        }
        int rc = load(ld, order_row(&c));
        if (rc)
            return rc;
    }
    if (!on)
        ld->exhausted = true;
    return LDB_OK;
}

/* ---- trimming ------------------------------------------------------------------------ */

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

static int unload(struct window_loader *ld, row *r)
{
    count_read(ld); /* read again to retract it */
    return df_push(input(ld), r, -1);
}

/*
 * Unloads the end of L, rows of R ranks [edge, *end), walking back from
 * the last, reading at most `room` rows; when L is cut in tie groups,
 * whole groups only (the key of a group's last row gives its size: that
 * read is the row's unloading, or a look when the group does not fit).
 * *end becomes the rank just past what stays; c is left on its last row.
 */
static int unload_tail(struct window_loader *ld, size_t edge, size_t *end, uint64_t room,
                       struct order_cursor *c)
{
    order_at(ld->ix, &ld->spec, *end - 1, c);
    while (*end > edge && room > 0) {
        size_t first = *end - 1;
        if (!ld->ties_complete) {
            value key[INDEX_MAX_PARTS];
            gather_key(ld, order_row(c), key);
            first = order_count_before_key(ld->ix, &ld->spec, key, ld->m, false);
            if (*end - first > room) {
                count_read(ld);
                return LDB_OK;
            }
        }
        room -= *end - first;
        for (; *end > first; (*end)--) {
            int rc = unload(ld, order_row(c));
            if (rc)
                return rc;
            order_prev(c);
        }
    }
    return LDB_OK;
}

static int trim(struct window_loader *ld, bool *pushed)
{
    const struct result_set *rs = ld->prog->published;
    uint64_t room = budget(ld);
    /* a window short of its limit needs every loaded row */
    if (!rs || !ld->boundary || rs->rows < ld->prog->limit || room < 2)
        return LDB_OK;
    count_read(ld);
    room--;
    row *last = last_window_driver(ld);
    if (!last)
        return LDB_OK;
    size_t edge = end_rank(ld, last);
    size_t end = ld->exhausted ? index_count(ld->ix) : end_rank(ld, ld->boundary);
    if (end <= edge) {
        ld->grown = 0;
        return LDB_OK;
    }
    size_t was = end;
    struct order_cursor c;
    int rc = unload_tail(ld, edge, &end, room, &c);
    ld->grown = (int64_t)(end - edge);
    if (rc || end == was)
        return rc;
    *pushed = true;
    set_boundary(ld, order_row(&c));
    ld->exhausted = false;
    return LDB_OK;
}

int window_loader_trim(struct window_loader *ld, bool *pushed)
{
    *pushed = false;
    int rc = LDB_OK;
    if (ld->prog->limit >= 0 && ld->grown > ld->need)
        rc = trim(ld, pushed);
    ld->mark = ld->reads; /* the change ends here */
    ld->peeked = NULL;
    return rc;
}

void window_loader_resize(struct window_loader *ld, int64_t offset, int64_t limit)
{
    int64_t need = limit < 0 ? INT64_MAX : add_sat(offset, limit);
    if (need < ld->need) /* the window's end moved up past that many rows */
        ld->grown = add_sat(ld->grown, ld->need - need);
    ld->need = need;
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

struct table *live_window_order(const struct live_program *prog, uint32_t *col, bool *desc,
                                bool *nulls_first, enum ldb_collation *coll)
{
    const struct plan *lim = prog->root_limit;
    if (!lim || prog->limit < 0 || prog->nuser_sort == 0 || lim->in->kind != PLAN_SORT)
        return NULL;
    const struct sort_key *k = &lim->in->u.sort.keys[0];
    if (k->e->kind != EXPR_COLUMN)
        return NULL;
    /* straight from one table: no join may drop or repeat its rows */
    const struct plan *p = lim->in->in;
    uint32_t c = k->e->u.index;
    for (;;) {
        if (p->kind == PLAN_FILTER) {
            p = p->in;
        } else if (p->kind == PLAN_PROJECT && p->u.exprs[c]->kind == EXPR_COLUMN) {
            c = p->u.exprs[c]->u.index;
            p = p->in;
        } else {
            break;
        }
    }
    if (p->kind != PLAN_SCAN)
        return NULL;
    *col = c;
    *desc = k->desc;
    *nulls_first = k->nulls_first;
    *coll = k->coll;
    return p->u.scan.table;
}

/* Whether p is the node the walk looks for. */
typedef bool (*node_is_fn)(const struct plan *p, const void *what);

/*
 * The paths from p down to nodes that are what is looked for, counted up
 * to 2. The rewritten plan is a DAG (decorrelation reads a node's input
 * twice, CTE and view bodies are shared): memo holds each node's count,
 * so every node is walked once. Subqueries were decorrelated into joins,
 * so every node is in the tree.
 */
static int count_paths(ptrmap *memo, const struct plan *p, node_is_fn is, const void *what,
                       uint32_t *out)
{
    *out = 0;
    if (!p)
        return LDB_OK;
    uint64_t *known = ptrmap_get(memo, p);
    if (known) {
        *out = (uint32_t)*known;
        return LDB_OK;
    }
    uint32_t n = is(p, what);
    const struct plan *kids[3] = { p->in, p->left, p->right };
    for (int i = 0; i < 3; i++) {
        uint32_t k;
        int rc = count_paths(memo, kids[i], is, what, &k);
        if (rc)
            return rc;
        n = n + k > 2 ? 2 : n + k;
    }
    *out = n;
    return ptrmap_put(memo, p, n);
}

static bool is_node(const struct plan *p, const void *node) { return p == node; }

static bool is_scan_of(const struct plan *p, const void *t)
{
    return p->kind == PLAN_SCAN && p->u.scan.table == t;
}

/* How many paths from root reach what (at most 2). */
static int paths_to(const struct plan *root, node_is_fn is, const void *what, uint32_t *out)
{
    ptrmap memo = PTRMAP_INIT;
    int rc = count_paths(&memo, root, is, what, out);
    ptrmap_free(&memo);
    return rc;
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

/* A LIVE (query) child reads the window's rows only: its domain must be
 * computed above the LIMIT (else a trim would retire its buckets), and
 * its own plan must not scan the bounded table. */
static int children_allow_bound(const struct live_program *prog, const struct plan *lim,
                                const struct table *t, bool *out)
{
    *out = true;
    for (size_t i = 0; *out && i < prog->children.len; i++) {
        const struct live_child *ch = &prog->children.data[i];
        uint32_t above, scans;
        int rc = paths_to(ch->dom, is_node, lim, &above);
        if (!rc)
            rc = paths_to(ch->plan, is_scan_of, t, &scans);
        if (rc)
            return rc;
        *out = above > 0 && scans == 0;
    }
    return LDB_OK;
}

int live_window_plan(struct live_program *prog, const struct plan *root)
{
    const struct plan *lim = prog->root_limit;
    uint32_t paths;
    if (!prog->bounded || !lim || prog->limit < 0)
        return LDB_OK;
    int rc = paths_to(root, is_node, lim, &paths);
    if (rc || paths == 0)
        return rc;
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
    /* a bounded table must be read by one scan, along one path */
    if ((rc = paths_to(root, is_scan_of, t, &paths)) || paths != 1)
        return rc;
    bool bounds;
    if ((rc = children_allow_bound(prog, lim, t, &bounds)) || !bounds)
        return rc;
    struct window_loader probe;
    memset(&probe, 0, sizeof probe);
    probe.ix = pick_index(t, terms, n, &probe.m, &probe.spec);
    if (!probe.ix)
        return LDB_OK;
    struct live_source *src;
    rc = live_source_for(prog, t, &src);
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
