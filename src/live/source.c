/*
 * source.c - how tables feed a live query's graph.
 *
 * Every base table a query reads has one source: a graph input that all
 * scans of that table share. A full source is hydrated with every row of
 * the table and then receives each commit's changes to it as -old +new. A
 * bounded source (window.c) receives only the rows of an ordered window's
 * prefix.
 *
 * A join side that is a plain scan of a table (filters allowed) whose key
 * an index or the primary key serves needs no private copy of the table
 * (seed 000, law 13): its arrangement looks rows up in the table's own
 * index. The table always shows the state after the changes being pushed
 * (the graph runs at commit, after the writes), which is exactly what the
 * dataflow join expects of an external arrangement.
 */
#include "live/live_internal.h"

#include "base/interrupt.h"

#include "live/window.h"
#include "storage/capture.h"
#include "storage/table.h"

#include <string.h>

int live_source_for(struct live_program *prog, struct table *t, struct live_source **out)
{
    for (size_t i = 0; i < prog->sources.len; i++) {
        if (prog->sources.data[i].table == t) {
            *out = &prog->sources.data[i];
            return LDB_OK;
        }
    }
    struct live_source s = { t, NULL, NULL, false, false };
    int rc = df_input(prog->g, table_schema(t)->ncols, &s.input);
    if (!rc)
        rc = vec_push(&prog->sources, s);
    if (!rc)
        *out = &vec_last(&prog->sources);
    return rc;
}

/* ---- hydration ------------------------------------------------------------------ */

static int push_values(struct live_program *prog, const struct live_values *v)
{
    const struct plan *p = v->plan;
    struct eval_ctx cx;
    live_eval_ctx(prog, &cx, NULL, 0);
    for (uint32_t r = 0; r < p->u.values.nrows; r++) {
        row *nr = row_alloc(p->ncols);
        if (!nr)
            return LDB_NOMEM;
        for (uint32_t c = 0; c < p->ncols; c++) {
            int rc = expr_eval(p->u.values.cells[(size_t)r * p->ncols + c], &cx, &nr->cols[c]);
            if (rc) {
                row_release(nr);
                return rc;
            }
        }
        int rc = df_push(v->input, nr, 1);
        row_release(nr);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

#define HYDRATE_PREFETCH 8

static void prefetch_row(const row *r)
{
    if (r)
        __builtin_prefetch(r, 1); /* pushing it retains it */
}

int live_hydrate(struct live_program *prog, int (*run)(struct live_program *prog))
{
    size_t pushed = 0;
    for (size_t i = 0; i < prog->sources.len; i++) {
        struct live_source *s = &prog->sources.data[i];
        if (s->loader || s->lookup_only)
            continue; /* the window loader fills it; lookups find its rows */
        /* the rows lie in the heap in no order the scan follows: a second
         * cursor a few rows ahead prefetches them */
        struct table_scan sc = table_scan_begin(s->table), ahead = sc;
        for (int k = 0; k < HYDRATE_PREFETCH; k++)
            prefetch_row(table_scan_next(&ahead));
        for (row *r; (r = table_scan_next(&sc));) {
            prefetch_row(table_scan_next(&ahead));
            prog->stats.rows_read++;
            int rc = intr_tick(); /* ldb_interrupt stops a long hydration */
            if (rc == LDB_OK)
                rc = df_push(s->input, r, 1);
            if (rc == LDB_OK && ++pushed % LIVE_HYDRATE_CHUNK == 0)
                rc = run(prog);
            if (rc)
                return rc;
        }
    }
    for (size_t i = 0; i < prog->values.len; i++) {
        int rc = push_values(prog, &prog->values.data[i]);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

int live_push_delta(struct live_program *prog, const struct delta *d, bool negate,
                    bool *touched, int (*run)(struct live_program *prog))
{
    *touched = false;
    int64_t w = negate ? -1 : 1;
    size_t pushed = 0;
    for (size_t i = 0; d && i < prog->sources.len; i++) {
        struct live_source *s = &prog->sources.data[i];
        const struct table_delta *td = delta_for_table(d, s->table);
        if (!td)
            continue;
        *touched = true;
        if (s->loader) {
            /* a window's prefix follows the table: it cannot go back */
            int rc = negate ? LDB_MISUSE : window_loader_push(s->loader, td);
            if (rc)
                return rc;
            continue;
        }
        for (size_t k = 0; k < td->n; k++) {
            const struct change *ch = &td->changes[k];
            if (k + HYDRATE_PREFETCH < td->n) {
                prefetch_row(td->changes[k + HYDRATE_PREFETCH].old);
                prefetch_row(td->changes[k + HYDRATE_PREFETCH].new_row);
            }
            int rc = LDB_OK;
            if (ch->old)
                rc = df_push(s->input, ch->old, -w);
            if (!rc && ch->new_row)
                rc = df_push(s->input, ch->new_row, w);
            if (!rc && run && ++pushed % LIVE_HYDRATE_CHUNK == 0)
                rc = run(prog);
            if (rc)
                return rc;
        }
    }
    return LDB_OK;
}

/* ---- arrangements over table indexes --------------------------------------------- */

#define EXT_MAX_FILTERS 16

struct table_arrangement {
    struct live_program *prog;
    struct table *t;
    struct table_index *ix;        /* NULL: the primary key */
    uint32_t n;
    uint32_t from_key[INDEX_MAX_PARTS]; /* lookup value i = key part from_key[i] */
    const expr *filters[EXT_MAX_FILTERS];
    uint32_t nfilters;
};

static int passes(struct table_arrangement *a, const row *r, bool *ok)
{
    *ok = true;
    for (uint32_t i = 0; i < a->nfilters && *ok; i++) {
        struct eval_ctx cx;
        live_eval_ctx(a->prog, &cx, r->cols, r->ncols);
        int truth;
        int rc = expr_eval_truth(a->filters[i], &cx, &truth);
        if (rc)
            return rc;
        *ok = truth == 1;
    }
    return LDB_OK;
}

static int visit_if_passes(struct table_arrangement *a, row *r, df_visit_fn visit, void *vctx)
{
    a->prog->stats.rows_read++;
    bool ok;
    int rc = passes(a, r, &ok);
    if (rc || !ok)
        return rc;
    return visit(vctx, r, 1);
}

/* Moves c one entry on and prefetches its row: 1, or -1 at the end. */
static int advance_prefetch(struct index_cursor *c)
{
    if (!index_next(c))
        return -1;
    prefetch_row(index_cursor_row(c));
    return 1;
}

static int table_arr_lookup(void *ctx, const value *key, uint64_t hash, df_visit_fn visit,
                            void *vctx)
{
    (void)hash;
    struct table_arrangement *a = ctx;
    value probe[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < a->n; i++) {
        probe[i] = key[a->from_key[i]];
        if (value_is_null(&probe[i]))
            return LDB_OK; /* SQL '=': a NULL key part matches nothing */
    }
    if (!a->ix) {
        row *r = table_lookup(a->t, probe);
        return r ? visit_if_passes(a, r, visit, vctx) : LDB_OK;
    }
    /* The rows of a key with many (a user's thousand issues) lie in the
     * heap in no order the index follows: from a key's second row on, a
     * raw cursor some entries ahead prefetches them (past the key's last
     * row it only wastes a prefetch). */
    struct index_lookup it;
    struct index_cursor ahead;
    int ahead_state = a->ix->kind == INDEX_ORDERED ? 0 : -1; /* 0 not started, 1 on, -1 off */
    size_t seen = 0;
    for (row *r = index_lookup_first(a->ix, probe, a->n, &it); r; r = index_lookup_next(&it)) {
        if (++seen == 2 && ahead_state == 0) {
            ahead = it.c;
            ahead_state = 1;
            for (int k = 0; ahead_state == 1 && k < HYDRATE_PREFETCH; k++)
                ahead_state = advance_prefetch(&ahead);
        } else if (ahead_state == 1) {
            ahead_state = advance_prefetch(&ahead);
        }
        int rc = visit_if_passes(a, r, visit, vctx);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int table_arr_scan(void *ctx, df_visit_fn visit, void *vctx)
{
    struct table_arrangement *a = ctx;
    struct table_scan sc = table_scan_begin(a->t);
    for (row *r; (r = table_scan_next(&sc));) {
        int rc = visit_if_passes(a, r, visit, vctx);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static const struct df_arrangement_ops table_arr_ops = { table_arr_lookup, table_arr_scan };

/* Position of table column col among the key columns, or -1. */
static int key_position(const uint32_t *cols, uint32_t n, uint32_t col)
{
    for (uint32_t i = 0; i < n; i++)
        if (cols[i] == col)
            return (int)i;
    return -1;
}

/* The key parts are exactly the primary key columns (any order) under
 * their collations. */
static bool pk_serves(struct table *t, const uint32_t *cols, const enum ldb_collation *colls,
                      uint32_t n, struct table_arrangement *a)
{
    const struct schema *sc = table_schema(t);
    if (sc->npk != n || n == 0)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        int k = key_position(cols, n, sc->pk[i]);
        if (k < 0 || colls[k] != sc->cols[sc->pk[i]].coll)
            return false;
        a->from_key[i] = (uint32_t)k;
    }
    a->ix = NULL;
    a->n = n;
    return true;
}

/* An index whose first n parts are the key columns (any order) under the
 * key's collations; a hash index must have exactly n parts. */
static bool index_serves(struct table_index *ix, const uint32_t *cols,
                         const enum ldb_collation *colls, uint32_t n,
                         struct table_arrangement *a)
{
    if (n == 0 || ix->nparts < n || (ix->kind == INDEX_HASH && ix->nparts != n))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        int k = key_position(cols, n, ix->parts[i].col);
        if (k < 0 || colls[k] != ix->parts[i].coll)
            return false;
        a->from_key[i] = (uint32_t)k;
    }
    a->ix = ix;
    a->n = n;
    return true;
}

int live_arrange_table(struct live_program *prog, df_node *in, struct table *t, const uint32_t *cols,
                       const enum ldb_collation *colls, uint32_t n,
                       const expr *const *filters, uint32_t nfilters, df_node **out)
{
    if (nfilters > EXT_MAX_FILTERS || n > INDEX_MAX_PARTS)
        return LDB_NOTFOUND;
    struct table_arrangement probe;
    memset(&probe, 0, sizeof probe);
    bool found = pk_serves(t, cols, colls, n, &probe);
    for (size_t i = 0; !found && i < table_index_count(t); i++)
        found = index_serves(table_index_at(t, i), cols, colls, n, &probe);
    if (!found)
        return LDB_NOTFOUND;
    struct table_arrangement *a = arena_alloc(&prog->cba, sizeof *a);
    if (!a)
        return LDB_NOMEM;
    *a = probe;
    a->prog = prog;
    a->t = t;
    a->nfilters = nfilters;
    memcpy(a->filters, filters, nfilters * sizeof *filters);
    if (a->ix && vec_push(&prog->indexes, a->ix))
        return LDB_NOMEM;
    df_key key = { n, cols, colls };
    return df_arrange_external(prog->g, in, &key, &table_arr_ops, a, out);
}
