/*
 * test_storage_model.c - random sequences of inserts, updates, deletes,
 * statements (some failing), transactions, savepoints, ROLLBACK TO and
 * index DDL, checked after every step against a plain model:
 *
 * - the model is arrays of rows per table plus snapshots for the
 *   transaction, each savepoint and the open statement; it predicts the
 *   result code of every write by its own key and uniqueness checks;
 * - every index's forward and reverse order, counts below random keys and
 *   the row at every rank are compared with the model sorted by a
 *   comparator written here from the documented order;
 * - reads in requested orders (random direction, null places and tie
 *   order) are compared in full both ways, with seeks from rows (present
 *   or not), ranks and prefix counts;
 * - change capture is checked by subscribers that mirror the tables from
 *   what they receive: a statement subscriber (which must match the
 *   tables after every step, rollbacks included), a commit subscriber
 *   (which must match the committed state), and a commit subscriber that
 *   joins inside transactions; an MV-like statement hook maintains a
 *   count table from inside the statement and must always match it.
 *
 * Replay a failure with LDB_SEED=<seed>.
 */
#include "storage_util.h"

#include <math.h>
#include <stdlib.h>

enum { T1, T2, T3, NTAB };
#define MAXR 400

/* ---- the model ------------------------------------------------------------------- */

struct mtable {
    row *rows[MAXR];
    int n;
};

struct mstate {
    struct mtable t[2]; /* T1, T2; T3 is derived from T1 */
    bool has_ix;        /* the toggled index exists */
    uint32_t ddl;       /* DDL statements made (commit hooks see DDL too) */
};

static void mstate_copy(struct mstate *dst, const struct mstate *src)
{
    *dst = *src;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < src->t[k].n; i++)
            row_retain(src->t[k].rows[i]);
}

static void mstate_free(struct mstate *m)
{
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < m->t[k].n; i++)
            row_release(m->t[k].rows[i]);
    memset(m, 0, sizeof *m);
}

/* Primary keys: T1 (id), T2 (k1, k2), T3 (g). */
static int model_key_cmp(int tab, const row *a, const row *b)
{
    int c = value_cmp(&a->cols[0], &b->cols[0], LDB_COLL_BINARY);
    if (c == 0 && tab == T2)
        c = value_cmp(&a->cols[1], &b->cols[1], LDB_COLL_BINARY);
    return c;
}

static int mfind(const struct mtable *t, int tab, const row *key)
{
    for (int i = 0; i < t->n; i++)
        if (model_key_cmp(tab, t->rows[i], key) == 0)
            return i;
    return -1;
}

/* T1.u is UNIQUE (NULLs distinct). */
static bool u_conflict(const struct mtable *t, const row *r, int except)
{
    if (value_is_null(&r->cols[4]))
        return false;
    for (int i = 0; i < t->n; i++)
        if (i != except && value_eq(&t->rows[i]->cols[4], &r->cols[4], LDB_COLL_BINARY))
            return true;
    return false;
}

/* ---- the store under test ------------------------------------------------------------ */

struct world {
    rng r;
    struct store *s;
    struct table *t[NTAB];
    struct mstate cur, committed, stmt;
    struct mstate sp[8];
    char sp_names[8][4];
    int nsp;
    bool in_txn;
    bool fail_mv_hook;   /* the MV hook fails once */
    bool fail_commit;    /* the commit subscriber fails its next prepare */
    struct subscription *mv_sub, *stmt_sub, *commit_sub, *late_sub;
};

/* A subscriber's copy of the tables, kept from the deltas it receives. */
struct mirror {
    row *rows[NTAB][MAXR * 2];
    int n[NTAB];
    struct world *w;
    bool pending;        /* commit: a prepared delta awaits finish */
    const struct delta *prepared;
    bool fail_flag_user; /* consults w->fail_commit */
};

static int tab_of(const struct world *w, const struct table *t)
{
    for (int k = 0; k < NTAB; k++)
        if (w->t[k] == t)
            return k;
    return -1;
}

static int mirror_find(struct mirror *m, int tab, const row *key)
{
    for (int i = 0; i < m->n[tab]; i++)
        if (model_key_cmp(tab, m->rows[tab][i], key) == 0)
            return i;
    return -1;
}

static void mirror_remove(struct mirror *m, int tab, const row *expect)
{
    int i = mirror_find(m, tab, expect);
    CHECKF(i >= 0 && row_identical(m->rows[tab][i], expect),
           "delta removes a row the subscriber does not have");
    row_release(m->rows[tab][i]);
    m->rows[tab][i] = m->rows[tab][--m->n[tab]];
}

static void mirror_add(struct mirror *m, int tab, row *r)
{
    CHECKF(mirror_find(m, tab, r) < 0, "delta inserts a key the subscriber already has");
    CHECK(m->n[tab] < MAXR * 2);
    m->rows[tab][m->n[tab]++] = row_retain(r);
}

/* Applies d (or its negation): also checks it is consolidated. */
static void mirror_apply(struct mirror *m, const struct delta *d, bool negate)
{
    size_t total = 0;
    for (size_t i = 0; i < d->ntables; i++) {
        const struct table_delta *td = &d->tables[i];
        int tab = tab_of(m->w, td->table);
        CHECK(tab >= 0 && td->n > 0);
        total += td->n;
        for (size_t j = 0; j < td->n; j++) {
            const struct change *c = &td->changes[j];
            CHECK(c->old || c->new_row);
            CHECKF(!(c->old && c->new_row && row_identical(c->old, c->new_row)),
                   "delta holds a no-op change");
            for (size_t k = 0; k < j; k++) {
                const struct change *e = &td->changes[k];
                const row *a = c->old ? c->old : c->new_row, *b = e->old ? e->old : e->new_row;
                CHECKF(model_key_cmp(tab, a, b) != 0 || !c->old != !e->old,
                       "a key appears twice in one delta");
            }
            row *from = negate ? c->new_row : c->old, *to = negate ? c->old : c->new_row;
            if (from)
                mirror_remove(m, tab, from);
            if (to)
                mirror_add(m, tab, to);
        }
    }
    CHECK_INT(total, d->nchanges);
}

static void mirror_clear(struct mirror *m)
{
    for (int k = 0; k < NTAB; k++) {
        for (int i = 0; i < m->n[k]; i++)
            row_release(m->rows[k][i]);
        m->n[k] = 0;
    }
}

/* Starts from the tables as they are. */
static void mirror_hydrate(struct mirror *m)
{
    mirror_clear(m);
    for (int k = 0; k < NTAB; k++) {
        struct table_scan sc = table_scan_begin(m->w->t[k]);
        for (row *r; (r = table_scan_next(&sc));)
            mirror_add(m, k, r);
    }
}

static int on_statement(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    mirror_apply(ctx, d, false);
    return LDB_OK;
}

static void on_rollback(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    CHECKF(d != NULL, "rollback could not list changes");
    mirror_apply(ctx, d, true);
}

static int on_prepare(void *ctx, struct store *s, const struct delta *d)
{
    struct mirror *m = ctx;
    if (m->fail_flag_user && m->w->fail_commit) {
        m->w->fail_commit = false;
        return store_error(s, LDB_ABORT, "commit refused by subscriber");
    }
    CHECK(!m->pending);
    m->pending = true;
    m->prepared = d;
    return LDB_OK;
}

static void on_finish(void *ctx, struct store *s, bool committed)
{
    (void)s;
    struct mirror *m = ctx;
    CHECK(m->pending);
    if (committed)
        mirror_apply(m, m->prepared, false);
    m->pending = false;
}

/* Compares a mirror (or the store) with the tables of a model state. */
static void check_mirror_tables(struct mirror *m, struct world *w)
{
    for (int k = 0; k < NTAB; k++) {
        CHECKF(m->n[k] == (int)table_count(w->t[k]), "mirror of table %d has %d rows, table %zu",
               k, m->n[k], table_count(w->t[k]));
        for (int i = 0; i < m->n[k]; i++) {
            row *r = table_lookup_row(w->t[k], m->rows[k][i]);
            CHECKF(r && row_identical(r, m->rows[k][i]), "mirror row differs in table %d", k);
        }
    }
}

/* ---- the MV-like hook: T3(g TEXT PRIMARY KEY, n INTEGER) counts T1 by a ---------------- */

static value group_of(const value *a)
{
    char buf[24];
    if (value_is_null(a))
        return V_T("null");
    snprintf(buf, sizeof buf, "%lld", (long long)a->h.u.i);
    return V_T(buf);
}

static int bump_group(struct store *s, struct table *t3, const value *a, int delta)
{
    value g = group_of(a);
    row *r = table_lookup(t3, &g);
    int64_t n = (r ? r->cols[1].h.u.i : 0) + delta;
    value vals[2] = { g, V_I(n) };
    if (!r)
        return table_insert(s, t3, vals, NULL);
    if (n == 0)
        return table_delete(s, t3, r);
    return table_update(s, t3, r, vals, NULL);
}

static int mv_statement(void *ctx, struct store *s, const struct delta *d)
{
    struct world *w = ctx;
    if (w->fail_mv_hook) {
        w->fail_mv_hook = false;
        return store_error(s, LDB_ABORT, "view maintenance failed");
    }
    const struct table_delta *td = delta_for_table(d, w->t[T1]);
    if (!td)
        return LDB_OK;
    store_enter_internal(s);
    int rc = LDB_OK;
    for (size_t i = 0; i < td->n && rc == LDB_OK; i++) {
        if (td->changes[i].old)
            rc = bump_group(s, w->t[T3], &td->changes[i].old->cols[1], -1);
        if (rc == LDB_OK && td->changes[i].new_row)
            rc = bump_group(s, w->t[T3], &td->changes[i].new_row->cols[1], +1);
    }
    store_leave_internal(s);
    return rc;
}

static void check_t3(struct world *w)
{
    int64_t counts[8] = { 0 }; /* a in NULL (index 0), 0..5 (1..6) */
    const struct mtable *t1 = &w->cur.t[0];
    for (int i = 0; i < t1->n; i++) {
        const value *a = &t1->rows[i]->cols[1];
        counts[value_is_null(a) ? 0 : a->h.u.i + 1]++;
    }
    size_t groups = 0;
    for (int g = 0; g < 7; g++) {
        if (!counts[g])
            continue;
        groups++;
        value a = g ? V_I(g - 1) : V_N();
        value key = group_of(&a);
        row *r = table_lookup(w->t[T3], &key);
        CHECKF(r && r->cols[1].h.u.i == counts[g], "count table wrong for group %d", g);
    }
    CHECK_INT(table_count(w->t[T3]), groups);
}

/* ---- schema ---------------------------------------------------------------------------- */

/* T1(id INTEGER PRIMARY KEY, a INTEGER, b TEXT NOCASE, c REAL, u INTEGER UNIQUE) */
static void create_tables(struct world *w)
{
    struct column_def c1[5] = { COL("id", COL_INTEGER), COL("a", COL_INTEGER),
                                COL("b", COL_TEXT), COL("c", COL_REAL), COL("u", COL_INTEGER) };
    c1[2].coll = LDB_COLL_NOCASE;
    static const uint32_t pk1[1] = { 0 }, ucol[1] = { 4 };
    struct unique_def u = { ucol, 1 };
    struct table_def d1 = { "t1", c1, 5, pk1, 1, &u, 1, NULL, false, false };
    CHECK(store_stmt_begin(w->s) == LDB_OK);
    CHECK(store_create_table(w->s, &d1, &w->t[T1]) == LDB_OK);
    CHECK(store_stmt_end(w->s, LDB_OK) == LDB_OK);
    struct column_def c2[3] = { COL("k1", COL_TEXT), COL("k2", COL_INTEGER), COL("v", COL_ANY) };
    static const uint32_t pk2[2] = { 0, 1 };
    w->t[T2] = make_table(w->s, "t2", c2, 3, pk2, 2);
    struct column_def c3[2] = { COL("g", COL_TEXT), COL("n", COL_INTEGER) };
    w->t[T3] = make_table(w->s, "t3", c3, 2, pk1, 1);
    table_set_readonly(w->t[T3], true);

    struct key_part a_asc = PART(1, false);
    make_index(w->s, w->t[T1], "i_a", INDEX_ORDERED, false, &a_asc, 1);
    struct key_part c_desc_nf = { 3, true, true, LDB_COLL_BINARY };
    make_index(w->s, w->t[T1], "i_c", INDEX_ORDERED, false, &c_desc_nf, 1);
    struct key_part a_hash = PART(1, false);
    make_index(w->s, w->t[T1], "h_a", INDEX_HASH, false, &a_hash, 1);
    struct key_part v_asc = { 2, false, false, LDB_COLL_RTRIM };
    make_index(w->s, w->t[T2], "i_v", INDEX_ORDERED, false, &v_asc, 1);
}

/* The toggled index: (b NOCASE ASC NULLS LAST, a DESC NULLS FIRST, c ASC). */
static const struct key_part toggled_parts[3] = {
    { 2, false, false, LDB_COLL_NOCASE },
    { 1, true, true, LDB_COLL_BINARY },
    { 3, false, true, LDB_COLL_BINARY },
};

/* ---- random values and rows ---------------------------------------------------------------- */

static value rand_a(rng *r)
{
    return rng_chance(r, 1, 5) ? V_N() : V_I(rng_range(r, 0, 5));
}

static value rand_b(rng *r)
{
    static const char *const words[] = { "x", "X", "y", "Y ", "y", "yy", "z", "Z  " };
    return rng_chance(r, 1, 6) ? V_N() : V_T(words[rng_below(r, 8)]);
}

static value rand_c(rng *r)
{
    static const double reals[] = { 0.0, -0.0, 1.5, -2.0, 1e10, 3.0 };
    switch (rng_below(r, 9)) {
    case 0: return V_N();
    case 1: return V_R(NAN);
    case 2: return V_R(INFINITY);
    default: return V_R(reals[rng_below(r, 6)]);
    }
}

static value rand_any(rng *r)
{
    static const char *const words[] = { "p", "p ", "q", "Q", "r  " };
    switch (rng_below(r, 5)) {
    case 0: return V_N();
    case 1: return V_I(rng_range(r, -2, 2));
    case 2: return V_R((double)rng_range(r, -2, 2) / 2);
    default: return V_T(words[rng_below(r, 5)]);
    }
}

static row *rand_row(rng *r, int tab)
{
    if (tab == T1) {
        value v[5] = { V_I(rng_range(r, 0, 500)), rand_a(r), rand_b(r), rand_c(r),
                       rng_chance(r, 1, 2) ? V_N() : V_I(rng_range(r, 0, 2000)) };
        return row_from(v, 5);
    }
    static const char *const k1[] = { "a", "b", "c" };
    value v[3] = { V_T(k1[rng_below(r, 3)]), V_I(rng_range(r, 0, 6)), rand_any(r) };
    return row_from(v, 3);
}

/* ---- ordered-index checks --------------------------------------------------------------------- */

struct rctx {
    const struct table_index *ix;
    const struct order_spec *sp;
    int tab;
    uint32_t nparts;  /* parts compared */
    bool with_key;    /* then the primary key */
};

static int r_cmp(const struct rctx *x, const row *a, const row *b)
{
    for (uint32_t i = 0; i < x->nparts; i++) {
        const struct key_part *p = &x->ix->parts[i];
        const value *va = &a->cols[p->col], *vb = &b->cols[p->col];
        bool an = value_is_null(va), bn = value_is_null(vb);
        if (an || bn) {
            if (an && bn)
                continue;
            return an == x->sp->nulls_first[i] ? -1 : 1;
        }
        int c = value_cmp(va, vb, p->coll);
        if (c)
            return (p->desc != x->sp->reverse) ? -c : c;
    }
    if (!x->with_key)
        return 0;
    int c = model_key_cmp(x->tab, a, b);
    return x->sp->ties_desc ? -c : c;
}

static const struct rctx *sort_ctx;
static int qsort_r_cmp(const void *a, const void *b)
{
    return r_cmp(sort_ctx, *(row *const *)a, *(row *const *)b);
}

static void sorted_model(const struct mtable *t, const struct rctx *x, row **out)
{
    memcpy(out, t->rows, (size_t)t->n * sizeof *out);
    sort_ctx = x;
    qsort(out, (size_t)t->n, sizeof *out, qsort_r_cmp);
}

static void same_row(const row *got, const row *want)
{
    CHECKF(got && row_identical(got, want), "read returned the wrong row");
}

/* The index's own order: the spec of a forward plain walk. */
static void check_index_order(struct world *w, const struct table_index *ix, int tab)
{
    const struct mtable *t = &w->cur.t[tab];
    struct order_spec sp;
    order_spec_init(ix, false, &sp);
    struct rctx x = { ix, &sp, tab, ix->nparts, true };
    row *sorted[MAXR];
    sorted_model(t, &x, sorted);
    CHECK_INT(index_count(ix), t->n);
    struct index_cursor c;
    int i = 0;
    for (bool on = index_first(ix, &c); on; on = index_next(&c), i++) {
        same_row(index_cursor_row(&c), sorted[i]);
        CHECK_INT(index_cursor_rank(&c), i);
    }
    CHECK_INT(i, t->n);
    for (bool on = index_last(ix, &c); on; on = index_prev(&c))
        same_row(index_cursor_row(&c), sorted[--i]);
    CHECK_INT(i, 0);
    if (t->n) {
        int k = (int)rng_below(&w->r, (uint64_t)t->n);
        CHECK(index_at(ix, (size_t)k, &c));
        same_row(index_cursor_row(&c), sorted[k]);
        CHECK(index_seek_row(ix, sorted[k], IX_GE, &c));
        same_row(index_cursor_row(&c), sorted[k]);
        CHECK_INT(index_count_below_row(ix, sorted[k], false), k);
    }
    /* Counts below random key prefixes, and seeks. */
    for (int probe = 0; probe < 4; probe++) {
        row *p = rand_row(&w->r, tab);
        value key[INDEX_MAX_PARTS];
        for (uint32_t j = 0; j < ix->nparts; j++)
            key[j] = p->cols[ix->parts[j].col];
        uint32_t n = (uint32_t)rng_range(&w->r, 0, ix->nparts);
        struct rctx px = { ix, &sp, tab, n, false };
        size_t lt = 0, le = 0;
        for (int j = 0; j < t->n; j++) {
            int cmp = r_cmp(&px, sorted[j], p);
            lt += cmp < 0;
            le += cmp <= 0;
        }
        CHECK_INT(index_count_below(ix, key, n, false), lt);
        CHECK_INT(index_count_below(ix, key, n, true), le);
        bool on = index_seek(ix, key, n, IX_GE, &c);
        CHECK(on == (lt < (size_t)t->n));
        if (on)
            same_row(index_cursor_row(&c), sorted[lt]);
        on = index_seek(ix, key, n, IX_LE, &c);
        CHECK(on == (le > 0));
        if (on)
            same_row(index_cursor_row(&c), sorted[le - 1]);
        row_release(p);
    }
}

static void random_spec(rng *r, const struct table_index *ix, struct order_spec *sp)
{
    order_spec_init(ix, rng_chance(r, 1, 2), sp);
    sp->ties_desc = rng_chance(r, 1, 2);
    for (uint32_t i = 0; i < ix->nparts; i++)
        if (rng_chance(r, 1, 2))
            sp->nulls_first[i] = !sp->nulls_first[i];
}

static void check_seek_row(struct world *w, const struct table_index *ix, const struct order_spec *sp,
                           int tab, row **sorted, int n)
{
    const struct mtable *t = &w->cur.t[tab];
    struct rctx x = { ix, sp, tab, ix->nparts, true };
    row *p = (t->n && rng_chance(&w->r, 1, 2)) ? row_retain(t->rows[rng_below(&w->r, (uint64_t)t->n)])
                                               : rand_row(&w->r, tab);
    bool after = rng_chance(&w->r, 1, 2);
    int want = 0, before = 0;
    while (want < n && r_cmp(&x, sorted[want], p) < (after ? 1 : 0))
        want++;
    while (before < n && r_cmp(&x, sorted[before], p) < 0)
        before++;
    CHECK_INT(order_count_before_row(ix, sp, p), before);
    struct order_cursor c;
    bool on = order_seek_row(ix, sp, p, after, &c);
    CHECK(on == (want < n));
    if (on) {
        CHECK_INT(order_rank(&c), want);
        same_row(order_row(&c), sorted[want]);
        /* A few steps both ways from there. */
        int at = want;
        for (int k = 0; k < 3; k++) {
            bool back = rng_chance(&w->r, 1, 2);
            bool moved = back ? order_prev(&c) : order_next(&c);
            at += back ? -1 : 1;
            CHECK(moved == (at >= 0 && at < n));
            if (!moved)
                break;
            same_row(order_row(&c), sorted[at]);
            CHECK_INT(order_rank(&c), at);
        }
    }
    row_release(p);
}

static void check_seek_key(struct world *w, const struct table_index *ix, const struct order_spec *sp,
                           int tab, row **sorted, int n)
{
    row *p = rand_row(&w->r, tab);
    uint32_t k = (uint32_t)rng_range(&w->r, 0, ix->nparts);
    struct rctx x = { ix, sp, tab, k, false };
    value key[INDEX_MAX_PARTS];
    for (uint32_t j = 0; j < ix->nparts; j++)
        key[j] = p->cols[ix->parts[j].col];
    int lt = 0, le = 0;
    for (int j = 0; j < n; j++) {
        int cmp = r_cmp(&x, sorted[j], p);
        lt += cmp < 0;
        le += cmp <= 0;
    }
    CHECK_INT(order_count_before_key(ix, sp, key, k, false), lt);
    CHECK_INT(order_count_before_key(ix, sp, key, k, true), le);
    bool after = rng_chance(&w->r, 1, 2);
    struct order_cursor c;
    int want = after ? le : lt;
    bool on = order_seek_key(ix, sp, key, k, after, &c);
    CHECK(on == (want < n));
    if (on)
        same_row(order_row(&c), sorted[want]);
    row_release(p);
}

static void check_requested_order(struct world *w, const struct table_index *ix, int tab)
{
    const struct mtable *t = &w->cur.t[tab];
    struct order_spec sp;
    random_spec(&w->r, ix, &sp);
    struct rctx x = { ix, &sp, tab, ix->nparts, true };
    row *sorted[MAXR];
    sorted_model(t, &x, sorted);
    int n = t->n, i = 0;
    struct order_cursor c;
    for (bool on = order_first(ix, &sp, &c); on; on = order_next(&c), i++) {
        same_row(order_row(&c), sorted[i]);
        CHECK_INT(order_rank(&c), i);
    }
    CHECK_INT(i, n);
    for (bool on = order_last(ix, &sp, &c); on; on = order_prev(&c))
        same_row(order_row(&c), sorted[--i]);
    CHECK_INT(i, 0);
    if (n) {
        int k = (int)rng_below(&w->r, (uint64_t)n);
        CHECK(order_at(ix, &sp, (size_t)k, &c));
        same_row(order_row(&c), sorted[k]);
    }
    CHECK(!order_at(ix, &sp, (size_t)n, &c));
    check_seek_row(w, ix, &sp, tab, sorted, n);
    check_seek_key(w, ix, &sp, tab, sorted, n);
}

static void check_hash_index(struct world *w, const struct table_index *ix, int tab)
{
    const struct mtable *t = &w->cur.t[tab];
    value key = rand_a(&w->r);
    int want = 0;
    for (int i = 0; i < t->n; i++)
        want += value_eq(&t->rows[i]->cols[1], &key, LDB_COLL_BINARY);
    struct index_lookup it;
    int got = 0;
    for (row *r = index_lookup_first(ix, &key, 1, &it); r; r = index_lookup_next(&it)) {
        CHECK(value_eq(&r->cols[1], &key, LDB_COLL_BINARY));
        got++;
    }
    CHECK_INT(got, want);
}

/* ---- the whole check -------------------------------------------------------------------------- */

static struct mirror stmt_mirror, commit_mirror, late_mirror;

static void check_tables(struct world *w)
{
    for (int k = 0; k < 2; k++) {
        const struct mtable *t = &w->cur.t[k];
        CHECK_INT(table_count(w->t[k]), t->n);
        for (int i = 0; i < t->n; i++) {
            row *r = table_lookup_row(w->t[k], t->rows[i]);
            CHECKF(r && row_identical(r, t->rows[i]), "table %d row %d differs from the model", k, i);
        }
        for (size_t j = 0; j < table_index_count(w->t[k]); j++) {
            const struct table_index *ix = table_index_at(w->t[k], j);
            if (ix->kind == INDEX_HASH) {
                check_hash_index(w, ix, k);
                continue;
            }
            check_index_order(w, ix, k);
            check_requested_order(w, ix, k);
        }
    }
    CHECK((store_find_index(w->s, "i_bac") != NULL) == w->cur.has_ix);
    check_t3(w);
    const char *err = store_check(w->s);
    CHECKF(err == NULL, "store_check: %s", err);
    check_mirror_tables(&stmt_mirror, w);
    if (!store_in_transaction(w->s)) {
        check_mirror_tables(&commit_mirror, w);
        check_mirror_tables(&late_mirror, w);
    }
}

/* ---- steps --------------------------------------------------------------------------------------- */

/* One write inside an open statement; the model follows. Returns rc. */
static int do_write(struct world *w)
{
    int tab = rng_chance(&w->r, 2, 3) ? T1 : T2;
    struct mtable *mt = &w->cur.t[tab];
    struct table *t = w->t[tab];
    /* Inserts dominate so that tables grow past one B-tree leaf. */
    uint64_t pick = rng_below(&w->r, 10);
    int op = pick < 5 ? 0 : pick < 8 ? 1 : 2;
    if (mt->n == 0 || mt->n >= MAXR - 1)
        op = mt->n == 0 ? 0 : 2;
    if (op == 0) {
        row *r = rand_row(&w->r, tab);
        int want = (mfind(mt, tab, r) >= 0 || (tab == T1 && u_conflict(mt, r, -1)))
                       ? LDB_CONSTRAINT : LDB_OK;
        int rc = table_insert(w->s, t, r->cols, NULL);
        CHECKF(rc == want, "insert: %d, want %d (%s)", rc, want, store_errmsg(w->s));
        if (rc == LDB_OK)
            mt->rows[mt->n++] = r;
        else
            row_release(r);
        return rc;
    }
    int i = (int)rng_below(&w->r, (uint64_t)mt->n);
    row *cur = table_lookup_row(t, mt->rows[i]);
    CHECK(cur != NULL);
    if (op == 2) {
        CHECK(table_delete(w->s, t, cur) == LDB_OK);
        row_release(mt->rows[i]);
        mt->rows[i] = mt->rows[--mt->n];
        return LDB_OK;
    }
    row *r = rand_row(&w->r, tab);
    if (rng_chance(&w->r, 2, 3)) { /* keep the key */
        value_release(&r->cols[0]);
        r->cols[0] = value_copy(&mt->rows[i]->cols[0]);
        if (tab == T2)
            r->cols[1] = mt->rows[i]->cols[1];
    }
    int other = mfind(mt, tab, r);
    int want = ((other >= 0 && other != i) || (tab == T1 && u_conflict(mt, r, i)))
                   ? LDB_CONSTRAINT : LDB_OK;
    int rc = table_update(w->s, t, cur, r->cols, NULL);
    CHECKF(rc == want, "update: %d, want %d (%s)", rc, want, store_errmsg(w->s));
    if (rc == LDB_OK) {
        row_release(mt->rows[i]);
        mt->rows[i] = r;
    } else {
        row_release(r);
    }
    return rc;
}

static void toggle_index(struct world *w)
{
    struct table_index *ix = store_find_index(w->s, "i_bac");
    if (ix) {
        CHECK(store_drop_index(w->s, ix) == LDB_OK);
    } else {
        struct index_def d = { "i_bac", INDEX_ORDERED, false, toggled_parts, 3, NULL };
        CHECK(store_create_index(w->s, w->t[T1], &d, NULL) == LDB_OK);
    }
    w->cur.has_ix = !w->cur.has_ix;
    w->cur.ddl++;
}

/* The tables (T1, T2) of a and b differ: some change is not net zero. */
static bool states_differ(const struct mstate *a, const struct mstate *b)
{
    for (int k = 0; k < 2; k++) {
        if (a->t[k].n != b->t[k].n)
            return true;
        for (int i = 0; i < a->t[k].n; i++) {
            int j = mfind(&b->t[k], k, a->t[k].rows[i]);
            if (j < 0 || !row_identical(a->t[k].rows[i], b->t[k].rows[j]))
                return true;
        }
    }
    return false;
}

/* A commit from a to b reaches the commit hooks: rows or schema changed. */
static bool commit_visible(const struct mstate *a, const struct mstate *b)
{
    return a->ddl != b->ddl || states_differ(a, b);
}

static void end_of_autocommit_or_statement(struct world *w, bool ok)
{
    if (ok && !w->in_txn) {
        mstate_free(&w->committed);
        mstate_copy(&w->committed, &w->cur);
    }
    if (!ok) {
        mstate_free(&w->cur);
        mstate_copy(&w->cur, &w->stmt);
    }
}

static void statement(struct world *w)
{
    CHECK(store_stmt_begin(w->s) == LDB_OK);
    mstate_free(&w->stmt);
    mstate_copy(&w->stmt, &w->cur);
    int nops = (int)rng_range(&w->r, 1, 4);
    bool failed = false;
    for (int k = 0; k < nops; k++) {
        if (rng_chance(&w->r, 1, 25))
            toggle_index(w);
        else
            failed |= do_write(w) != LDB_OK;
    }
    int end = (failed && rng_chance(&w->r, 2, 3)) || rng_chance(&w->r, 1, 20) ? LDB_ERROR : LDB_OK;
    bool changed = states_differ(&w->stmt, &w->cur);
    w->fail_mv_hook = end == LDB_OK && rng_chance(&w->r, 1, 30);
    bool hook_fails = w->fail_mv_hook && changed;
    w->fail_commit = end == LDB_OK && !w->in_txn && rng_chance(&w->r, 1, 30);
    bool commit_fails = w->fail_commit && !hook_fails && commit_visible(&w->stmt, &w->cur);
    int rc = store_stmt_end(w->s, end);
    bool ok = end == LDB_OK && !hook_fails && !commit_fails;
    CHECKF((rc == LDB_OK) == ok, "statement end: %d, expected %s (%s)", rc, ok ? "ok" : "failure",
           store_errmsg(w->s));
    w->fail_mv_hook = w->fail_commit = false;
    end_of_autocommit_or_statement(w, ok);
}

static void commit(struct world *w)
{
    w->fail_commit = rng_chance(&w->r, 1, 8);
    bool fails = w->fail_commit && commit_visible(&w->committed, &w->cur);
    int rc = store_commit(w->s);
    w->fail_commit = false;
    if (!w->in_txn) {
        CHECK(rc == LDB_ERROR);
        return;
    }
    CHECKF((rc == LDB_OK) == !fails, "commit: %d (%s)", rc, store_errmsg(w->s));
    if (fails)
        return;
    mstate_free(&w->committed);
    mstate_copy(&w->committed, &w->cur);
    w->in_txn = false;
    while (w->nsp)
        mstate_free(&w->sp[--w->nsp]);
}

static void rollback(struct world *w)
{
    int rc = store_rollback(w->s);
    CHECK(rc == (w->in_txn ? LDB_OK : LDB_ERROR));
    mstate_free(&w->cur);
    mstate_copy(&w->cur, &w->committed);
    w->in_txn = false;
    while (w->nsp)
        mstate_free(&w->sp[--w->nsp]);
}

static int find_sp(struct world *w, const char *name)
{
    for (int i = w->nsp; i-- > 0;)
        if (strcmp(w->sp_names[i], name) == 0)
            return i;
    return -1;
}

static bool savepoint_txn;

static void savepoint_op(struct world *w)
{
    static const char *const names[] = { "a", "b", "c" };
    const char *name = names[rng_below(&w->r, 3)];
    int i = find_sp(w, name);
    switch (rng_below(&w->r, 3)) {
    case 0:
        if (w->nsp == 8)
            return;
        CHECK(store_savepoint(w->s, name) == LDB_OK);
        if (!w->in_txn)
            savepoint_txn = true;
        w->in_txn = true;
        mstate_copy(&w->sp[w->nsp], &w->cur);
        strcpy(w->sp_names[w->nsp++], name);
        return;
    case 1:
        if (i < 0) {
            CHECK(store_release(w->s, name) == LDB_ERROR);
            return;
        }
        if (i == 0 && savepoint_txn) {
            w->fail_commit = rng_chance(&w->r, 1, 8);
            bool fails = w->fail_commit && commit_visible(&w->committed, &w->cur);
            int rc = store_release(w->s, name);
            w->fail_commit = false;
            CHECK((rc == LDB_OK) == !fails);
            if (fails)
                return;
            mstate_free(&w->committed);
            mstate_copy(&w->committed, &w->cur);
            w->in_txn = false;
        } else {
            CHECK(store_release(w->s, name) == LDB_OK);
        }
        while (w->nsp > i)
            mstate_free(&w->sp[--w->nsp]);
        return;
    default:
        if (i < 0) {
            CHECK(store_rollback_to(w->s, name) == LDB_ERROR);
            return;
        }
        CHECK(store_rollback_to(w->s, name) == LDB_OK);
        mstate_free(&w->cur);
        mstate_copy(&w->cur, &w->sp[i]);
        while (w->nsp > i + 1)
            mstate_free(&w->sp[--w->nsp]);
    }
}

static void begin(struct world *w)
{
    CHECK(store_begin(w->s) == (w->in_txn ? LDB_ERROR : LDB_OK));
    if (!w->in_txn)
        savepoint_txn = false;
    w->in_txn = true;
}

static const struct store_hooks mirror_stmt_hooks = { .statement = on_statement,
                                                      .rollback = on_rollback };
static const struct store_hooks mirror_commit_hooks = { .commit_prepare = on_prepare,
                                                        .commit_finish = on_finish,
                                                        .rollback = on_rollback };
static const struct store_hooks mv_hooks = { .statement = mv_statement };

static void rejoin_late(struct world *w)
{
    if (w->late_sub)
        store_unsubscribe(w->s, w->late_sub);
    mirror_hydrate(&late_mirror);
    CHECK(store_subscribe(w->s, SUB_COMMIT, &mirror_commit_hooks, &late_mirror, &w->late_sub) ==
          LDB_OK);
}

static void model_sequences(void)
{
    int64_t live = mem_live();
    static struct world w;
    memset(&w, 0, sizeof w);
    rng_seed(&w.r, test_seed());
    CHECK(store_open(&w.s) == LDB_OK);
    create_tables(&w);
    stmt_mirror.w = commit_mirror.w = late_mirror.w = &w;
    commit_mirror.fail_flag_user = true;
    CHECK(store_subscribe(w.s, SUB_STATEMENT, &mv_hooks, &w, &w.mv_sub) == LDB_OK);
    CHECK(store_subscribe(w.s, SUB_STATEMENT, &mirror_stmt_hooks, &stmt_mirror, &w.stmt_sub) ==
          LDB_OK);
    CHECK(store_subscribe(w.s, SUB_COMMIT, &mirror_commit_hooks, &commit_mirror, &w.commit_sub) ==
          LDB_OK);
    rejoin_late(&w);
    int steps = 2500 * test_scale();
    for (int step = 0; step < steps; step++) {
        uint64_t pick = rng_below(&w.r, 100);
        if (pick < 62)
            statement(&w);
        else if (pick < 68)
            begin(&w);
        else if (pick < 73)
            commit(&w);
        else if (pick < 76)
            rollback(&w);
        else if (pick < 96)
            savepoint_op(&w);
        else
            rejoin_late(&w);
        check_tables(&w);
    }
    store_unsubscribe(w.s, w.late_sub);
    store_close(w.s);
    mirror_clear(&stmt_mirror);
    mirror_clear(&commit_mirror);
    mirror_clear(&late_mirror);
    mstate_free(&w.cur);
    mstate_free(&w.committed);
    mstate_free(&w.stmt);
    while (w.nsp)
        mstate_free(&w.sp[--w.nsp]);
    CHECK_INT(mem_live(), live);
}

TEST_MAIN(T(model_sequences))
