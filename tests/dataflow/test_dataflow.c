/*
 * test_dataflow.c - laws of the dataflow core.
 *
 * The main property test builds random operator DAGs (every operator,
 * nested, with shared arrangements and external arrangements backed by a
 * plain array) from a small spec language, feeds them random histories,
 * and after every step compares each output's accumulated deltas with a
 * naive from-scratch evaluation of the same spec over the accumulated
 * inputs (plain arrays and nested loops, sharing nothing with the
 * operators but value comparison and the aggregate functions). Every
 * spec is built into two graphs: one gets each step's batch in one run
 * (shuffled, so weights may pass through negative values inside it), the
 * other split over several runs (batch partition law).
 */
#include "test.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "dataflow/dataflow.h"
#include "livedb.h"

#include <math.h>
#include <stdlib.h>

/* ---- relations: consolidated multisets of rows (test side) ------------------- */

typedef struct rel {
    df_entry *e;
    size_t n, cap;
} rel;

static void rel_add(rel *r, row *x, int64_t w)
{
    if (w == 0)
        return;
    for (size_t i = 0; i < r->n; i++) {
        if (row_identical(r->e[i].r, x)) {
            if ((r->e[i].w += w) == 0) {
                row_release(r->e[i].r);
                r->e[i] = r->e[--r->n];
            }
            return;
        }
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->e = realloc(r->e, r->cap * sizeof *r->e);
    }
    r->e[r->n++] = (df_entry){ row_retain(x), w };
}

static void rel_free(rel *r)
{
    for (size_t i = 0; i < r->n; i++)
        row_release(r->e[i].r);
    free(r->e);
    memset(r, 0, sizeof *r);
}

static int ent_cmp(const void *a, const void *b)
{
    const df_entry *x = a, *y = b;
    int c = row_cmp_identity(x->r, y->r);
    return c ? c : (x->w > y->w) - (x->w < y->w);
}

static void rel_sort(rel *r)
{
    if (r->n)
        qsort(r->e, r->n, sizeof *r->e, ent_cmp);
}

static void fmt_rel(strbuf *sb, rel *r)
{
    rel_sort(r);
    for (size_t i = 0; i < r->n && i < 12; i++) {
        sb_puts(sb, "(");
        for (uint32_t c = 0; c < r->e[i].r->ncols; c++) {
            if (c)
                sb_puts(sb, ",");
            value_format(sb, &r->e[i].r->cols[c]);
        }
        sb_printf(sb, ")x%lld ", (long long)r->e[i].w);
    }
}

static bool rel_equal(rel *a, rel *b)
{
    if (a->n != b->n)
        return false;
    rel_sort(a);
    rel_sort(b);
    for (size_t i = 0; i < a->n; i++)
        if (!row_identical(a->e[i].r, b->e[i].r) || a->e[i].w != b->e[i].w)
            return false;
    return true;
}

/* ---- values and rows -------------------------------------------------------------- */

static value text(const char *s)
{
    value v;
    CHECK(value_text(&v, s, strlen(s)) == LDB_OK);
    return v;
}

static row *row3(value a, value b, value c)
{
    value v[3] = { a, b, c };
    row *r = row_from(v, 3);
    CHECK(r != NULL);
    for (int i = 0; i < 3; i++)
        value_release(&v[i]);
    return r;
}

static row *random_row(rng *g)
{
    static const double c0r[] = { 1.0, -0.0, 0.0 };
    static const char *c1[] = { "a", "A", "b", "B" };
    value a, b, c;
    uint64_t k = rng_below(g, 9);
    a = k < 4 ? value_int((int64_t)k) : k < 7 ? value_real(c0r[k - 4]) : value_null();
    k = rng_below(g, 5);
    b = k < 4 ? text(c1[k]) : value_null();
    k = rng_below(g, 12);
    static const double c2r[] = { 5.0, -0.0, 0.0, NAN, 2.5 };
    c = k < 6 ? value_int((int64_t)k - 1) : k < 11 ? value_real(c2r[k - 6]) : value_null();
    return row3(a, b, c);
}

/* ---- the spec language -------------------------------------------------------------- */

enum skind { S_INPUT, S_FILTER, S_MAP, S_MINUS_FILTER, S_CONCAT, S_JOIN, S_REDUCE, S_SCALAR,
             S_GREDUCE, S_SETOP, S_TOPK, S_KINDS };

struct spec {
    enum skind kind;
    int a, b;  /* children (spec indices) */
    int p;     /* input id, filter id, map id, join kind, setop, agg set */
    int key;   /* 0: col 0 BINARY, 1: col 1 NOCASE, 2: empty */
    bool res;  /* join residual */
    bool ext;  /* left child arranged externally (an input) */
    int64_t off, lim;
};

#define MAX_SPECS 48
static struct spec specs[MAX_SPECS];
static int nspecs;

static const uint32_t key_cols[2][1] = { { 0 }, { 1 } };
static const enum ldb_collation key_colls[2][1] = { { LDB_COLL_BINARY }, { LDB_COLL_NOCASE } };
static df_key key_of(int k)
{
    return k == 2 ? (df_key){ 0, NULL, NULL } : (df_key){ 1, key_cols[k], key_colls[k] };
}
static const enum ldb_collation set_colls[3] = { LDB_COLL_BINARY, LDB_COLL_NOCASE, LDB_COLL_BINARY };

static bool filter_keep(int id, const row *r)
{
    const value *c = r->cols;
    value one = value_int(1), zero = value_int(0), a = text("a");
    switch (id) {
    case 0: return !value_is_null(&c[0]) && !value_eq(&c[0], &one, LDB_COLL_BINARY);
    case 1: return value_is_number(&c[2]) && value_cmp(&c[2], &zero, LDB_COLL_BINARY) > 0;
    default: return !value_eq(&c[1], &a, LDB_COLL_NOCASE);
    }
}

static row *map_row(int id, const row *r)
{
    const value *c = r->cols;
    if (id == 0)
        return row_from((value[]){ c[1], c[0], c[2] }, 3);
    value v = value_type(&c[2]) == LDB_INTEGER ? value_real((double)c[2].h.u.i) : c[2];
    return row_from((value[]){ c[0], c[1], v }, 3);
}

static bool residual_keep(const row *j)
{
    return value_cmp(&j->cols[2], &j->cols[5], LDB_COLL_BINARY) <= 0;
}

/* Join output (6 columns) projected back to 3. */
static row *project_join(const row *j)
{
    if (j->ncols == 3)
        return row_retain((row *)j);
    return row_from((value[]){ j->cols[0], j->cols[4], j->cols[5] }, 3);
}

struct aggdef {
    const struct agg_def *def;
    uint32_t arg;
    enum ldb_collation coll;
    bool distinct;
};
static const struct aggdef agg_sets[][3] = {
    { { &agg_count_star, 0, 0, false }, { &agg_sum, 2, 0, false }, { &agg_max, 1, LDB_COLL_NOCASE, false } },
    { { &agg_min, 2, 0, false }, { &agg_string_agg, 1, 0, false }, { &agg_avg, 2, 0, false } },
    { { &agg_count, 2, 0, true }, { &agg_sum, 2, 0, true }, { &agg_total, 2, 0, false } },
    { { &agg_min, 1, LDB_COLL_NOCASE, true }, { &agg_max, 2, 0, false }, { &agg_count, 1, 0, false } },
};
#define NAGGSETS 4

static int topk_cmp_rows(const row *a, const row *b)
{
    int c = value_cmp(&a->cols[2], &b->cols[2], LDB_COLL_BINARY);
    return c ? c : value_cmp(&a->cols[1], &b->cols[1], LDB_COLL_NOCASE);
}

static int gen_spec(rng *g, int depth)
{
    CHECK(nspecs < MAX_SPECS);
    /* Reuse an existing spec now and then: a DAG, with shared nodes. */
    if (nspecs > 2 && rng_chance(g, 1, 5))
        return (int)rng_below(g, (uint64_t)nspecs);
    struct spec s = { 0 };
    s.kind = depth <= 0 || nspecs + 16 >= MAX_SPECS ? S_INPUT : (enum skind)rng_below(g, S_KINDS);
    switch (s.kind) {
    case S_INPUT:
        s.p = (int)rng_below(g, 2);
        break;
    case S_FILTER:
    case S_MAP:
    case S_MINUS_FILTER:
        s.a = gen_spec(g, depth - 1);
        s.p = (int)rng_below(g, 3);
        break;
    case S_CONCAT:
    case S_SETOP:
        s.a = gen_spec(g, depth - 1);
        s.b = gen_spec(g, depth - 1);
        s.p = (int)rng_below(g, 5);
        break;
    case S_JOIN:
        s.a = gen_spec(g, depth - 1);
        s.b = gen_spec(g, depth - 1);
        s.p = (int)rng_below(g, 6);
        s.key = (int)rng_below(g, 3);
        s.res = s.key == 2 ? rng_chance(g, 3, 4) : rng_chance(g, 1, 3);
        s.ext = specs[s.a].kind == S_INPUT && rng_chance(g, 1, 2);
        break;
    case S_REDUCE:
    case S_GREDUCE:
        s.a = gen_spec(g, depth - 1);
        s.key = (int)rng_below(g, 2);
        s.p = (int)rng_below(g, NAGGSETS);
        break;
    case S_SCALAR:
        s.a = gen_spec(g, depth - 1);
        s.p = (int)rng_below(g, NAGGSETS);
        break;
    case S_TOPK:
        s.a = gen_spec(g, depth - 1);
        s.key = rng_chance(g, 1, 2) ? 0 : 2;
        s.off = (int64_t)rng_below(g, 3);
        s.lim = rng_chance(g, 1, 4) ? DF_NO_LIMIT : (int64_t)rng_range(g, 1, 3);
        break;
    default:
        break;
    }
    specs[nspecs] = s;
    return nspecs++;
}

/* ---- the oracle ---------------------------------------------------------------------- */

static bool keys_match(int key, const row *a, const row *b, bool nulls_equal)
{
    if (key == 2)
        return true;
    const value *x = &a->cols[key], *y = &b->cols[key];
    if (!nulls_equal && (value_is_null(x) || value_is_null(y)))
        return false;
    return value_eq(x, y, key_colls[key][0]);
}

static row *concat_rows(const row *a, const row *b)
{
    row *r = row_alloc(6);
    for (int i = 0; i < 3; i++) {
        r->cols[i] = a ? value_copy(&a->cols[i]) : value_null();
        r->cols[3 + i] = b ? value_copy(&b->cols[i]) : value_null();
    }
    return r;
}

static void add_owned(rel *out, row *r, int64_t w)
{
    rel_add(out, r, w);
    row_release(r);
}

static int64_t match_weight(const struct spec *s, const row *x, bool x_left, const rel *other)
{
    int64_t m = 0;
    for (size_t k = 0; k < other->n; k++) {
        const row *a = x_left ? x : other->e[k].r, *b = x_left ? other->e[k].r : x;
        if (!keys_match(s->key, a, b, false))
            continue;
        row *j = concat_rows(a, b);
        if (!s->res || residual_keep(j))
            m += other->e[k].w;
        row_release(j);
    }
    return m;
}

static void oracle_join(const struct spec *s, const rel *A, const rel *B, rel *out)
{
    enum df_join_kind kind = (enum df_join_kind)s->p;
    for (size_t i = 0; kind <= DF_JOIN_FULL && i < A->n; i++)
        for (size_t k = 0; k < B->n; k++) {
            if (!keys_match(s->key, A->e[i].r, B->e[k].r, false))
                continue;
            row *j = concat_rows(A->e[i].r, B->e[k].r);
            if (!s->res || residual_keep(j)) {
                row *p = project_join(j);
                add_owned(out, p, A->e[i].w * B->e[k].w);
            }
            row_release(j);
        }
    for (size_t i = 0; i < A->n; i++) {
        int64_t m = match_weight(s, A->e[i].r, true, B);
        row *r = NULL;
        if ((kind == DF_JOIN_LEFT || kind == DF_JOIN_FULL) && m <= 0)
            r = concat_rows(A->e[i].r, NULL);
        else if ((kind == DF_JOIN_SEMI && m > 0) || (kind == DF_JOIN_ANTI && m <= 0))
            r = row_retain(A->e[i].r);
        if (r) {
            row *p = project_join(r);
            add_owned(out, p, A->e[i].w);
            row_release(r);
        }
    }
    for (size_t k = 0; (kind == DF_JOIN_RIGHT || kind == DF_JOIN_FULL) && k < B->n; k++) {
        if (match_weight(s, B->e[k].r, false, A) <= 0) {
            row *j = concat_rows(NULL, B->e[k].r);
            add_owned(out, project_join(j), B->e[k].w);
            row_release(j);
        }
    }
}

/* Groups: the indices of rows canonically equal under eq, in order. */
typedef bool (*same_fn)(int key, const row *a, const row *b);
static bool same_key(int key, const row *a, const row *b) { return keys_match(key, a, b, true); }
static bool same_row(int key, const row *a, const row *b)
{
    for (int c = 0; c < 3; c++)
        if (!value_eq(&a->cols[c], &b->cols[c], set_colls[c]))
            return false;
    return true;
}

/* group[i] = index of the first row of i's group */
static void group_rows(const rel *A, int key, same_fn same, size_t *group)
{
    for (size_t i = 0; i < A->n; i++) {
        group[i] = i;
        for (size_t k = 0; k < i; k++)
            if (group[k] == k && same(key, A->e[k].r, A->e[i].r)) {
                group[i] = k;
                break;
            }
    }
}

static void agg_result(const struct aggdef *d, const rel *A, const size_t *group, size_t g,
                       value *out)
{
    agg_inst ai;
    CHECK(agg_inst_init(&ai, d->def, d->coll, d->distinct, NULL) == LDB_OK);
    void *st = malloc(agg_state_size(&ai));
    agg_init(&ai, st);
    for (size_t i = 0; i < A->n; i++)
        if (!group || group[i] == g)
            CHECK(agg_step(&ai, st, &A->e[i].r->cols[d->arg], A->e[i].w) == LDB_OK);
    CHECK(agg_finalize(&ai, st, out) == LDB_OK);
    agg_destroy(&ai, st);
    free(st);
    agg_inst_free(&ai);
}

static void oracle_reduce(const struct spec *s, const rel *A, rel *out)
{
    const struct aggdef *set = agg_sets[s->p];
    if (s->kind == S_SCALAR) {
        row *r = row_alloc(3);
        for (int k = 0; k < 3; k++)
            agg_result(&set[k], A, NULL, 0, &r->cols[k]);
        add_owned(out, r, 1);
        return;
    }
    size_t *group = malloc((A->n + 1) * sizeof *group);
    group_rows(A, s->key, same_key, group);
    for (size_t g = 0; g < A->n; g++) {
        if (group[g] != g)
            continue;
        int64_t total = 0;
        const value *rep = NULL;
        size_t distinct = 0;
        for (size_t i = 0; i < A->n; i++) {
            if (group[i] != g)
                continue;
            total += A->e[i].w;
            distinct++;
            const value *k = &A->e[i].r->cols[s->kind == S_GREDUCE ? 0 : s->key];
            if (!rep || value_cmp_identity(k, rep) < 0)
                rep = k;
        }
        if (total == 0)
            continue;
        row *r = row_alloc(3);
        r->cols[0] = value_copy(rep);
        if (s->kind == S_GREDUCE) {
            r->cols[1] = value_int(total);
            r->cols[2] = value_int((int64_t)distinct);
        } else {
            for (int k = 0; k < 2; k++)
                agg_result(&set[k], A, group, g, &r->cols[1 + k]);
        }
        add_owned(out, r, 1);
    }
    free(group);
}

static void oracle_setop(const struct spec *s, const rel *A, const rel *B, rel *out)
{
    rel all = { 0 };
    for (size_t i = 0; i < A->n; i++)
        rel_add(&all, A->e[i].r, 1);
    for (size_t i = 0; B && i < B->n; i++)
        rel_add(&all, B->e[i].r, 1);
    size_t *group = malloc((all.n + 1) * sizeof *group);
    group_rows(&all, 0, same_row, group);
    for (size_t g = 0; g < all.n; g++) {
        if (group[g] != g)
            continue;
        int64_t a = 0, b = 0, m;
        rel left = { 0 };
        for (size_t i = 0; i < A->n; i++)
            if (same_row(0, A->e[i].r, all.e[g].r)) {
                a += A->e[i].w;
                rel_add(&left, A->e[i].r, A->e[i].w);
            }
        for (size_t i = 0; B && i < B->n; i++)
            if (same_row(0, B->e[i].r, all.e[g].r))
                b += B->e[i].w;
        switch (B ? s->p % 4 + 1 : DF_DISTINCT) {
        case DF_DISTINCT: m = a > 0; break;
        case DF_INTERSECT: m = a > 0 && b > 0; break;
        case DF_EXCEPT: m = a > 0 && b == 0; break;
        case DF_INTERSECT_ALL: m = a < b ? a : b; break;
        default: m = a > b ? a - b : 0; break;
        }
        rel_sort(&left);
        for (size_t i = 0; m > 0 && i < left.n; i++) {
            int64_t take = left.e[i].w < m ? left.e[i].w : m;
            rel_add(out, left.e[i].r, take);
            m -= take;
        }
        rel_free(&left);
    }
    free(group);
    rel_free(&all);
}

static int unit_cmp(const void *a, const void *b)
{
    const row *x = *(row *const *)a, *y = *(row *const *)b;
    int c = topk_cmp_rows(x, y);
    return c ? c : row_cmp_identity(x, y);
}

static void oracle_topk(const struct spec *s, const rel *A, int64_t off, int64_t lim, rel *out)
{
    size_t *group = malloc((A->n + 1) * sizeof *group);
    group_rows(A, s->key, same_key, group);
    for (size_t g = 0; g < A->n; g++) {
        if (group[g] != g)
            continue;
        size_t n = 0;
        row **units = NULL;
        for (size_t i = 0; i < A->n; i++)
            for (int64_t k = 0; group[i] == g && k < A->e[i].w; k++) {
                units = realloc(units, (n + 1) * sizeof *units);
                units[n++] = A->e[i].r;
            }
        if (n)
            qsort(units, n, sizeof *units, unit_cmp);
        for (size_t p = (size_t)off; p < n && (lim == DF_NO_LIMIT || p < (size_t)(off + lim)); p++)
            rel_add(out, units[p], 1);
        free(units);
    }
    free(group);
}

/* Evaluates spec i over the inputs; memo holds computed relations. */
static rel *oracle(int i, rel *inputs, rel *memo, bool *done)
{
    if (done[i])
        return &memo[i];
    const struct spec *s = &specs[i];
    rel *out = &memo[i];
    rel *A = s->kind == S_INPUT ? NULL : oracle(s->a, inputs, memo, done);
    rel *B = s->kind == S_CONCAT || s->kind == S_SETOP || s->kind == S_JOIN
                 ? oracle(s->b, inputs, memo, done) : NULL;
    switch (s->kind) {
    case S_INPUT:
        for (size_t k = 0; k < inputs[s->p].n; k++)
            rel_add(out, inputs[s->p].e[k].r, inputs[s->p].e[k].w);
        break;
    case S_FILTER:
    case S_MINUS_FILTER:
        for (size_t k = 0; k < A->n; k++)
            if (filter_keep(s->p, A->e[k].r) == (s->kind == S_FILTER))
                rel_add(out, A->e[k].r, A->e[k].w);
        break;
    case S_MAP:
        for (size_t k = 0; k < A->n; k++)
            add_owned(out, map_row(s->p, A->e[k].r), A->e[k].w);
        break;
    case S_CONCAT:
        for (size_t k = 0; k < A->n; k++)
            rel_add(out, A->e[k].r, A->e[k].w);
        for (size_t k = 0; k < B->n; k++)
            rel_add(out, B->e[k].r, B->e[k].w);
        break;
    case S_JOIN:
        oracle_join(s, A, B, out);
        break;
    case S_REDUCE:
    case S_SCALAR:
    case S_GREDUCE:
        oracle_reduce(s, A, out);
        break;
    case S_SETOP:
        oracle_setop(s, A, s->p == 4 ? NULL : B, out);
        break;
    case S_TOPK:
        oracle_topk(s, A, s->off, s->lim, out);
        break;
    default:
        break;
    }
    done[i] = true;
    return out;
}

/* ---- building graphs ------------------------------------------------------------------ */

static int cb_filter(void *ctx, const row *in, bool *keep)
{
    *keep = filter_keep((int)(intptr_t)ctx, in);
    return LDB_OK;
}
static int cb_not_filter(void *ctx, const row *in, bool *keep)
{
    *keep = !filter_keep((int)(intptr_t)ctx, in);
    return LDB_OK;
}
static int cb_map(void *ctx, row *in, row **out)
{
    *out = map_row((int)(intptr_t)ctx, in);
    return *out ? LDB_OK : LDB_NOMEM;
}
static int cb_project(void *ctx, row *in, row **out)
{
    *out = project_join(in);
    return *out ? LDB_OK : LDB_NOMEM;
}
static int cb_residual(void *ctx, const row *j, bool *keep)
{
    *keep = residual_keep(j);
    return LDB_OK;
}
static int cb_topk_cmp(void *ctx, const row *a, const row *b) { return topk_cmp_rows(a, b); }

static int cb_greduce(void *ctx, const df_entry *rows, size_t n, df_emitter *em)
{
    int64_t total = 0;
    const value *rep = NULL;
    for (size_t i = 0; i < n; i++) {
        total += rows[i].w;
        if (!rep || value_cmp_identity(&rows[i].r->cols[0], rep) < 0)
            rep = &rows[i].r->cols[0];
    }
    row *r = row_alloc(3);
    if (!r)
        return LDB_NOMEM;
    r->cols[0] = value_copy(rep);
    r->cols[1] = value_int(total);
    r->cols[2] = value_int((int64_t)n);
    return df_emit(em, r, 1);
}

/* External arrangement fake: a relation scanned linearly. */
struct fake_index {
    rel *state;
    int key;
};

static int fake_lookup(void *ctx, const value *key, uint64_t hash, df_visit_fn visit, void *vctx)
{
    struct fake_index *f = ctx;
    for (size_t i = 0; i < f->state->n; i++) {
        if (f->key != 2 && !value_eq(&f->state->e[i].r->cols[f->key], key, key_colls[f->key][0]))
            continue;
        int rc = visit(vctx, f->state->e[i].r, f->state->e[i].w);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int fake_scan(void *ctx, df_visit_fn visit, void *vctx)
{
    struct fake_index *f = ctx;
    for (size_t i = 0; i < f->state->n; i++) {
        int rc = visit(vctx, f->state->e[i].r, f->state->e[i].w);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static const struct df_arrangement_ops fake_ops = { fake_lookup, fake_scan };

struct world {
    df_graph *g;
    df_node *node[MAX_SPECS];
    df_node *arr[MAX_SPECS][3]; /* arrangement of spec i by key k (internal) */
    df_node *input[2];
    rel inputs[2];              /* accumulated input, seen by the fakes */
    struct fake_index fakes[MAX_SPECS];
};

static df_node *arrangement(struct world *w, int i, int key, bool ext, int owner)
{
    df_key k = key_of(key);
    df_node *n;
    if (ext) {
        w->fakes[owner] = (struct fake_index){ &w->inputs[specs[i].p], key };
        CHECK(df_arrange_external(w->g, w->node[i], &k, &fake_ops, &w->fakes[owner], &n) == LDB_OK);
        return n;
    }
    if (!w->arr[i][key])
        CHECK(df_arrange(w->g, w->node[i], &k, &w->arr[i][key]) == LDB_OK);
    return w->arr[i][key];
}

static df_node *build(struct world *w, int i)
{
    if (w->node[i])
        return w->node[i];
    const struct spec *s = &specs[i];
    df_graph *g = w->g;
    df_node *a = s->kind == S_INPUT ? NULL : build(w, s->a);
    df_node *b = s->kind == S_CONCAT || s->kind == S_SETOP || s->kind == S_JOIN ? build(w, s->b) : NULL;
    df_node *n = NULL, *t;
    void *p = (void *)(intptr_t)s->p;
    df_key k = key_of(s->key);
    switch (s->kind) {
    case S_INPUT:
        n = w->input[s->p];
        break;
    case S_FILTER:
        CHECK(df_filter(g, a, cb_filter, p, &n) == LDB_OK);
        break;
    case S_MINUS_FILTER: {
        /* rows failing the filter, as x - filter(x): negate and concat */
        df_node *f, *neg, *ins[2];
        CHECK(df_filter(g, a, cb_filter, p, &f) == LDB_OK);
        CHECK(df_negate(g, f, &neg) == LDB_OK);
        ins[0] = a;
        ins[1] = neg;
        CHECK(df_concat(g, ins, 2, &n) == LDB_OK);
        (void)cb_not_filter;
        break;
    }
    case S_MAP:
        CHECK(df_map(g, a, 3, cb_map, p, &n) == LDB_OK);
        break;
    case S_CONCAT: {
        df_node *ins[2] = { a, b };
        CHECK(df_concat(g, ins, 2, &n) == LDB_OK);
        break;
    }
    case S_JOIN: {
        w->node[i] = NULL;
        df_node *la = arrangement(w, s->a, s->key, s->ext, i);
        df_node *ra = arrangement(w, s->b, s->key, false, i);
        CHECK(df_join(g, la, ra, (enum df_join_kind)s->p, 0, s->res ? cb_residual : NULL, NULL, &t) ==
              LDB_OK);
        CHECK(df_map(g, t, 3, cb_project, NULL, &n) == LDB_OK);
        break;
    }
    case S_REDUCE:
    case S_SCALAR: {
        struct df_agg_spec aggs[3];
        uint32_t args[3];
        int first = s->kind == S_SCALAR ? 0 : 0, count = s->kind == S_SCALAR ? 3 : 2;
        for (int q = 0; q < count; q++) {
            const struct aggdef *d = &agg_sets[s->p][first + q];
            args[q] = d->arg;
            aggs[q] = (struct df_agg_spec){ d->def, &args[q], d->coll, d->distinct, NULL, NULL, 0 };
        }
        df_key kk = s->kind == S_SCALAR ? key_of(2) : k;
        CHECK(df_reduce(g, a, &kk, aggs, (uint32_t)count, s->kind == S_SCALAR ? DF_REDUCE_SCALAR : 0,
                        &n) == LDB_OK);
        break;
    }
    case S_GREDUCE:
        CHECK(df_reduce_general(g, a, &k, 3, cb_greduce, NULL, &n) == LDB_OK);
        break;
    case S_SETOP:
        if (s->p == 4)
            CHECK(df_distinct(g, a, set_colls, &n) == LDB_OK);
        else
            CHECK(df_setop(g, (enum df_setop)(s->p % 4 + 1), a, b, set_colls, &n) == LDB_OK);
        break;
    case S_TOPK:
        CHECK(df_topk(g, a, &k, cb_topk_cmp, NULL, s->off, s->lim, &n) == LDB_OK);
        break;
    default:
        break;
    }
    w->node[i] = n;
    return n;
}

/* ---- the property test ---------------------------------------------------------------- */

struct change {
    int input;
    row *r;
    int64_t w;
};

static void push_changes(struct world *w, struct change *ch, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        CHECK(df_push(w->input[ch[i].input], ch[i].r, ch[i].w) == LDB_OK);
        rel_add(&w->inputs[ch[i].input], ch[i].r, ch[i].w);
    }
}

static void collect(struct world *w, df_node *out, rel *acc)
{
    size_t n;
    const df_entry *d = df_output_delta(out, &n);
    for (size_t i = 0; i < n; i++) {
        CHECK(d[i].w != 0);
        for (size_t k = 0; k < i; k++)
            CHECK(!row_identical(d[k].r, d[i].r)); /* consolidated */
        rel_add(acc, d[i].r, d[i].w);
    }
}

/* A random batch: inserts (weights 1-2), deletes and updates of live rows,
 * and pairs that cancel. Positive entries come first, so every prefix
 * of the batch keeps the inputs valid. */
static size_t random_batch(rng *g, rel *live, struct change *ch, bool cancel_only)
{
    size_t n = 0;
    int k = (int)rng_range(g, 1, 6);
    for (int j = 0; j < k; j++) {
        int input = (int)rng_below(g, 2);
        rel *l = &live[input];
        uint64_t what = cancel_only ? 3 : rng_below(g, 5);
        if ((what == 1 || what == 2) && l->n) {
            size_t x = (size_t)rng_below(g, l->n);
            int64_t w = rng_range(g, 1, l->e[x].w);
            ch[n++] = (struct change){ input, row_retain(l->e[x].r), -w };
            if (what == 2) /* update: -old +new */
                ch[n++] = (struct change){ input, random_row(g), w };
            rel_add(l, ch[n - 1 - (what == 2)].r, -w);
            if (what == 2)
                rel_add(l, ch[n - 1].r, w);
        } else if (what == 3) {
            row *r = random_row(g);
            ch[n++] = (struct change){ input, row_retain(r), 1 };
            ch[n++] = (struct change){ input, r, -1 };
        } else {
            row *r = random_row(g);
            int64_t w = rng_range(g, 1, 2);
            ch[n++] = (struct change){ input, r, w };
            rel_add(l, r, w);
        }
    }
    /* positives first (stable) */
    struct change tmp[64];
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (ch[i].w > 0)
            tmp[t++] = ch[i];
    for (size_t i = 0; i < n; i++)
        if (ch[i].w < 0)
            tmp[t++] = ch[i];
    memcpy(ch, tmp, n * sizeof *ch);
    return n;
}

static void world_open(struct world *w)
{
    memset(w, 0, sizeof *w);
    CHECK(df_graph_new(&w->g) == LDB_OK);
    CHECK(df_input(w->g, 3, &w->input[0]) == LDB_OK);
    CHECK(df_input(w->g, 3, &w->input[1]) == LDB_OK);
}

static void world_close(struct world *w)
{
    df_graph_free(w->g);
    rel_free(&w->inputs[0]);
    rel_free(&w->inputs[1]);
}

static size_t rows_compared;

static void check_equal(rel *got, rel *want, int root, const char *what)
{
    rows_compared += want->n;
    if (rel_equal(got, want))
        return;
    strbuf sb = STRBUF_INIT;
    sb_printf(&sb, "%s spec %d kind %d: got ", what, root, specs[root].kind);
    fmt_rel(&sb, got);
    sb_puts(&sb, " want ");
    fmt_rel(&sb, want);
    CHECKF(false, "%s", sb_str(&sb));
}

static void equivalence_random_dags(void)
{
    rng g;
    rng_seed(&g, test_seed());
    int dags = 400 * test_scale();
    for (int dag = 0; dag < dags; dag++) {
        nspecs = 0;
        int roots[MAX_SPECS], nroots = (int)rng_range(&g, 1, 3);
        for (int r = 0; r < nroots; r++)
            roots[r] = gen_spec(&g, (int)rng_range(&g, 1, 3));
        struct world one, split;
        world_open(&one);
        world_open(&split);
        for (int r = 0; r < nroots; r++) {
            build(&one, roots[r]);
            build(&split, roots[r]);
        }
        /* Every spec node gets an output, so each is checked on its own. */
        nroots = nspecs;
        df_node *out1[MAX_SPECS], *out2[MAX_SPECS];
        for (int r = 0; r < nroots; r++) {
            roots[r] = r;
            CHECK(df_output(one.g, build(&one, r), &out1[r]) == LDB_OK);
            CHECK(df_output(split.g, build(&split, r), &out2[r]) == LDB_OK);
        }
        rel acc1[MAX_SPECS] = { { 0 } }, acc2[MAX_SPECS] = { { 0 } }, live[2] = { { 0 } };
        for (int step = 0; step < 16; step++) {
            bool cancel_only = step % 5 == 4;
            if (step == 6) /* move every top-k window */
                for (int i = 0; i < nspecs; i++)
                    if (specs[i].kind == S_TOPK && one.node[i]) {
                        specs[i].off = (int64_t)rng_below(&g, 3);
                        specs[i].lim = rng_chance(&g, 1, 4) ? DF_NO_LIMIT : rng_range(&g, 0, 3);
                        CHECK(df_topk_set_window(one.node[i], specs[i].off, specs[i].lim) == LDB_OK);
                        CHECK(df_topk_set_window(split.node[i], specs[i].off, specs[i].lim) == LDB_OK);
                    }
            struct change ch[64];
            size_t n = random_batch(&g, live, ch, cancel_only);
            /* split: prefixes in several runs */
            for (size_t i = 0; i < n;) {
                size_t k = (size_t)rng_range(&g, 1, (int64_t)(n - i));
                push_changes(&split, ch + i, k);
                CHECK(df_run(split.g) == LDB_OK);
                for (int r = 0; r < nroots; r++)
                    collect(&split, out2[r], &acc2[r]);
                i += k;
            }
            /* one: the whole batch shuffled into one run */
            for (size_t i = n; i > 1; i--) {
                size_t j = (size_t)rng_below(&g, i);
                struct change c = ch[i - 1];
                ch[i - 1] = ch[j];
                ch[j] = c;
            }
            push_changes(&one, ch, n);
            CHECK(df_run(one.g) == LDB_OK);
            for (int r = 0; r < nroots; r++) {
                size_t dn;
                df_output_delta(out1[r], &dn);
                if (cancel_only && step != 6)
                    CHECKF(dn == 0, "spurious output from a cancelling batch (spec %d)", roots[r]);
                collect(&one, out1[r], &acc1[r]);
            }
            rel memo[MAX_SPECS] = { { 0 } };
            bool done[MAX_SPECS] = { false };
            for (int r = 0; r < nroots; r++) {
                rel *want = oracle(roots[r], one.inputs, memo, done);
                check_equal(&acc1[r], want, roots[r], "one run");
                check_equal(&acc2[r], want, roots[r], "split runs");
            }
            /* Space: an internal arrangement holds its input's distinct rows. */
            for (int i = 0; i < nspecs; i++)
                for (int key = 0; key < 3; key++) {
                    if (!one.arr[i][key])
                        continue;
                    struct df_counters c;
                    df_node_counters(one.arr[i][key], &c);
                    CHECK_INT(c.retained_rows, oracle(i, one.inputs, memo, done)->n);
                }
            for (int i = 0; i < MAX_SPECS; i++)
                rel_free(&memo[i]);
            for (size_t i = 0; i < n; i++)
                row_release(ch[i].r);
        }
        for (int r = 0; r < nroots; r++) {
            rel_free(&acc1[r]);
            rel_free(&acc2[r]);
        }
        rel_free(&live[0]);
        rel_free(&live[1]);
        world_close(&one);
        world_close(&split);
    }
    printf("#    %d DAGs, %zu accumulated rows compared\n", dags, rows_compared);
}

TEST_MAIN(T(equivalence_random_dags))
