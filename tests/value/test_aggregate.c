/*
 * test_aggregate.c - built-in aggregates: SQL results against SQLite,
 * incremental (add/retract in any order) against from-scratch, against an
 * independent oracle computed by sorting the surviving multiset, merge,
 * DISTINCT representatives, identity order, string_agg's order terms,
 * and allocation failure.
 */
#include "test.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "livedb.h"
#include "value/aggregate.h"
#include "value/row.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>

static value text(const char *s)
{
    value v;
    CHECK(value_text(&v, s, strlen(s)) == LDB_OK);
    return v;
}

static value random_value(rng *r)
{
    static const char *texts[] = { "a", "A", "b", "B ", "12", "1.5", "x y",
                                   "a rather long text value", "-3" };
    switch (rng_below(r, 9)) {
    case 0: return value_null();
    case 1: return value_int(rng_range(r, -5, 5));
    case 2: return value_real((double)rng_range(r, -5, 5));
    case 3: return value_real((double)rng_range(r, -40, 40) / 8.0);
    case 4: return value_real(rng_chance(r, 1, 2) ? -0.0 : 0.1);
    case 5: return text(texts[rng_below(r, sizeof texts / sizeof texts[0])]);
    case 6: return value_bool(rng_chance(r, 1, 2));
    case 7: return value_int(rng_range(r, 0, 1000));
    default: return value_real((double)rng_range(r, 0, 1000) * 0.01);
    }
}

struct state {
    agg_inst ai;
    void *st;
};

static void st_open(struct state *s, const struct agg_def *def, enum ldb_collation coll,
                    bool distinct)
{
    CHECK(agg_inst_init(&s->ai, def, coll, distinct, NULL) == LDB_OK);
    s->st = malloc(agg_state_size(&s->ai));
    agg_init(&s->ai, s->st);
}

static void st_close(struct state *s)
{
    agg_destroy(&s->ai, s->st);
    free(s->st);
    agg_inst_free(&s->ai);
}

static int st_result(struct state *s, value *out) { return agg_finalize(&s->ai, s->st, out); }

static const struct agg_def *const all_defs[] = {
    &agg_count_star, &agg_count, &agg_sum, &agg_total, &agg_avg,
    &agg_min, &agg_max, &agg_string_agg,
};
#define NDEFS (sizeof all_defs / sizeof all_defs[0])

/* ---- against SQLite ------------------------------------------------------- */

static void bind_value(sqlite3_stmt *q, const value *v)
{
    size_t n;
    switch (value_type(v)) {
    case LDB_NULL: sqlite3_bind_null(q, 1); break;
    case LDB_BOOLEAN:
    case LDB_INTEGER: sqlite3_bind_int64(q, 1, v->h.u.i); break;
    case LDB_REAL: sqlite3_bind_double(q, 1, v->h.u.r); break;
    default: {
        const char *p = value_bytes(v, &n);
        sqlite3_bind_text(q, 1, p, (int)n, SQLITE_TRANSIENT);
    }
    }
}

static void same_as_sqlite(void)
{
    rng r;
    rng_seed(&r, test_seed());
    sqlite3 *db;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL) == SQLITE_OK);
    static const char *names[] = { "count", "sum", "total", "avg", "min", "max" };
    for (int iter = 0; iter < 300; iter++) {
        sqlite3_exec(db, "DELETE FROM t", NULL, NULL, NULL);
        struct state s[6];
        for (int k = 0; k < 6; k++)
            st_open(&s[k], agg_builtin(names[k]), LDB_COLL_BINARY, false);
        sqlite3_stmt *ins;
        sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?)", -1, &ins, NULL);
        int n = (int)rng_below(&r, 8);
        for (int i = 0; i < n; i++) {
            value v = random_value(&r);
            if (value_type(&v) == LDB_BOOLEAN || value_type(&v) == LDB_TEXT) {
                value_release(&v);
                v = value_int(rng_range(&r, -9, 9)); /* SQLite has neither */
            }
            /* min/max of canonically equal values (3 and 3.0) are
             * deterministic here and arrival-ordered in SQLite. */
            if (value_type(&v) == LDB_REAL && v.h.u.r == floor(v.h.u.r))
                v = value_real(v.h.u.r + 0.25);
            bind_value(ins, &v);
            CHECK(sqlite3_step(ins) == SQLITE_DONE);
            sqlite3_reset(ins);
            for (int k = 0; k < 6; k++)
                CHECK(agg_step(&s[k].ai, s[k].st, &v, 1) == LDB_OK);
            value_release(&v);
        }
        sqlite3_finalize(ins);
        sqlite3_stmt *q;
        sqlite3_prepare_v2(db, "SELECT count(x), sum(x), total(x), avg(x), min(x), max(x) FROM t",
                           -1, &q, NULL);
        CHECK(sqlite3_step(q) == SQLITE_ROW);
        for (int k = 0; k < 6; k++) {
            value got;
            CHECK(st_result(&s[k], &got) == LDB_OK);
            int t = sqlite3_column_type(q, k);
            if (t == SQLITE_NULL) {
                CHECKF(value_is_null(&got), "%s not NULL", names[k]);
            } else if (t == SQLITE_INTEGER) {
                CHECKF(value_type(&got) == LDB_INTEGER && got.h.u.i == sqlite3_column_int64(q, k),
                       "%s integer", names[k]);
            } else {
                CHECKF(value_type(&got) == LDB_REAL, "%s type %d", names[k], value_type(&got));
                double want = sqlite3_column_double(q, k);
                CHECKF(fabs(got.h.u.r - want) <= 1e-12 * fmax(1, fabs(want)), "%s %.17g vs %.17g",
                       names[k], got.h.u.r, want);
            }
            value_release(&got);
            st_close(&s[k]);
        }
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
}

static void sum_types_and_overflow(void)
{
    struct state s;
    st_open(&s, &agg_sum, LDB_COLL_BINARY, false);
    value v = value_int(INT64_MAX), out;
    CHECK(agg_step(&s.ai, s.st, &v, 2) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_RANGE);
    CHECK(agg_step(&s.ai, s.st, &v, -1) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_INTEGER && out.h.u.i == INT64_MAX);
    v = text("12");
    CHECK(agg_step(&s.ai, s.st, &v, 1) == LDB_OK);
    v = value_int(-12);
    CHECK(agg_step(&s.ai, s.st, &v, 1) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_INTEGER && out.h.u.i == INT64_MAX);
    v = text("abc"); /* not a number: REAL 0.0 */
    CHECK(agg_step(&s.ai, s.st, &v, 1) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_REAL && out.h.u.r == 9223372036854775808.0);
    CHECK(agg_step(&s.ai, s.st, &v, -1) == LDB_OK);
    v = value_bool(true);
    CHECK(agg_step(&s.ai, s.st, &v, 1) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_RANGE);
    st_close(&s);

    st_open(&s, &agg_total, LDB_COLL_BINARY, false);
    CHECK(st_result(&s, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_REAL && out.h.u.r == 0.0);
    st_close(&s);
    st_open(&s, &agg_avg, LDB_COLL_BINARY, false);
    CHECK(st_result(&s, &out) == LDB_OK && value_is_null(&out));
    v = value_int(1);
    CHECK(agg_step(&s.ai, s.st, &v, 2) == LDB_OK);
    v = value_int(2);
    CHECK(agg_step(&s.ai, s.st, &v, 1) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_REAL && out.h.u.r == 4.0 / 3.0);
    st_close(&s);
}

/* ---- incremental against from scratch and against the oracle --------------- */

struct item {
    value v;
    int64_t w;
};

static enum ldb_collation sort_coll;
static int item_cmp(const void *a, const void *b)
{
    const value *x = &((const struct item *)a)->v, *y = &((const struct item *)b)->v;
    int c = value_cmp(x, y, sort_coll);
    return c ? c : value_cmp_identity(x, y);
}

/* The expected result, computed from the surviving multiset by sorting
 * (count, min, max, string_agg, and their DISTINCT forms). Returns false
 * for the aggregates it does not model (sum, total, avg). */
static bool oracle(const struct agg_def *def, enum ldb_collation coll, bool distinct,
                   struct item *items, size_t n, value *out)
{
    sort_coll = coll;
    qsort(items, n, sizeof *items, item_cmp);
    struct item sel[256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (def != &agg_count_star && value_is_null(&items[i].v))
            continue;
        if (distinct) {
            if (k && value_eq(&sel[k - 1].v, &items[i].v, coll))
                continue;
            sel[k].v = items[i].v;
            sel[k++].w = 1;
        } else {
            sel[k++] = items[i];
        }
    }
    if (def == &agg_count || def == &agg_count_star) {
        int64_t c = 0;
        for (size_t i = 0; i < k; i++)
            c += sel[i].w;
        *out = value_int(c);
    } else if (def == &agg_min || def == &agg_max) {
        *out = k ? value_copy(&sel[def == &agg_min ? 0 : k - 1].v) : value_null();
    } else if (def == &agg_string_agg) {
        if (!k) {
            *out = value_null();
            return true;
        }
        strbuf sb = STRBUF_INIT;
        for (size_t i = 0; i < k; i++)
            for (int64_t j = 0; j < sel[i].w; j++) {
                if (sb.len || i || j)
                    sb_putc(&sb, ',');
                if (value_type(&sel[i].v) == LDB_TEXT) {
                    size_t len;
                    const char *p = value_bytes(&sel[i].v, &len);
                    sb_put(&sb, p, len);
                } else {
                    value_format(&sb, &sel[i].v);
                }
            }
        CHECK(value_text(out, sb_str(&sb), sb.len) == LDB_OK);
        sb_free(&sb);
    } else {
        return false;
    }
    return true;
}

static void incremental_equals_scratch(void)
{
    rng r;
    rng_seed(&r, test_seed());
    static const enum ldb_collation colls[] = { LDB_COLL_BINARY, LDB_COLL_NOCASE, LDB_COLL_RTRIM };
    for (int iter = 0; iter < 400 * test_scale(); iter++) {
        const struct agg_def *def = all_defs[rng_below(&r, NDEFS)];
        enum ldb_collation coll = colls[rng_below(&r, 3)];
        bool distinct = def->nargs == 1 && rng_chance(&r, 1, 2);
        struct state inc;
        st_open(&inc, def, coll, distinct);
        struct item live[256];
        size_t n = 0;
        int steps = (int)rng_below(&r, 120);
        for (int step = 0; step < steps; step++) {
            if (n < 200 && (n == 0 || rng_chance(&r, 3, 5))) {
                live[n].v = random_value(&r);
                live[n].w = rng_range(&r, 1, 3);
                CHECK(agg_step(&inc.ai, inc.st, &live[n].v, live[n].w) == LDB_OK);
                n++;
            } else {
                size_t k = (size_t)rng_below(&r, n);
                CHECK(agg_step(&inc.ai, inc.st, &live[k].v, -live[k].w) == LDB_OK);
                value_release(&live[k].v);
                live[k] = live[--n];
            }
        }
        /* From scratch, in shuffled order. */
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)rng_below(&r, i);
            struct item t = live[i - 1];
            live[i - 1] = live[j];
            live[j] = t;
        }
        struct state scratch;
        st_open(&scratch, def, coll, distinct);
        for (size_t i = 0; i < n; i++)
            CHECK(agg_step(&scratch.ai, scratch.st, &live[i].v, live[i].w) == LDB_OK);
        value a, b, c;
        int rca = st_result(&inc, &a), rcb = st_result(&scratch, &b);
        CHECK_INT(rca, rcb);
        if (rca == LDB_OK) {
            CHECKF(value_identical(&a, &b), "%s%s incremental != scratch", def->name,
                   distinct ? " distinct" : "");
            if (oracle(def, coll, distinct, live, n, &c)) {
                strbuf x = STRBUF_INIT, y = STRBUF_INIT;
                value_format(&x, &a);
                value_format(&y, &c);
                CHECKF(value_identical(&a, &c), "%s%s coll %d: %s != oracle %s", def->name,
                       distinct ? " distinct" : "", coll, sb_str(&x), sb_str(&y));
                sb_free(&x);
                sb_free(&y);
                value_release(&c);
            }
            value_release(&a);
            value_release(&b);
        }
        /* Merge of two halves equals the whole. */
        if (def->flags & AGG_MERGE) {
            struct state h1, h2;
            st_open(&h1, def, coll, distinct);
            st_open(&h2, def, coll, distinct);
            for (size_t i = 0; i < n; i++) {
                struct state *h = i % 2 ? &h1 : &h2;
                CHECK(agg_step(&h->ai, h->st, &live[i].v, live[i].w) == LDB_OK);
            }
            CHECK(agg_merge(&h1.ai, h1.st, h2.st) == LDB_OK);
            CHECK_INT(st_result(&h1, &a), rcb);
            if (rcb == LDB_OK) {
                CHECK(st_result(&scratch, &b) == LDB_OK);
                CHECK(value_identical(&a, &b));
                value_release(&a);
                value_release(&b);
            }
            st_close(&h1);
            st_close(&h2);
        }
        for (size_t i = 0; i < n; i++)
            value_release(&live[i].v);
        st_close(&inc);
        st_close(&scratch);
    }
}

/* ---- ordered string_agg ------------------------------------------------------ */

struct orow {
    value x, y;
    int64_t key, w;
};

static struct agg_order_term oterms[2];

static int orow_cmp(const void *pa, const void *pb)
{
    const struct orow *a = pa, *b = pb;
    bool an = value_is_null(&a->y), bn = value_is_null(&b->y);
    int c = an || bn ? (an == bn ? 0 : an == oterms[0].nulls_first ? -1 : 1)
                     : value_cmp(&a->y, &b->y, oterms[0].coll) * (oterms[0].desc ? -1 : 1);
    return c ? c : (a->key > b->key) - (a->key < b->key);
}

/* Sorts rows by (y, key) and joins x, skipping NULLs and, under
 * DISTINCT, every value equal to one already shown. */
static value ordered_oracle(struct orow *rows, size_t n, enum ldb_collation coll, bool distinct)
{
    qsort(rows, n, sizeof *rows, orow_cmp);
    strbuf sb = STRBUF_INIT;
    const value *shown[256];
    size_t nshown = 0;
    for (size_t i = 0; i < n; i++) {
        bool skip = value_is_null(&rows[i].x);
        for (size_t k = 0; distinct && !skip && k < nshown; k++)
            skip = value_eq(shown[k], &rows[i].x, coll);
        if (skip)
            continue;
        shown[nshown++] = &rows[i].x;
        for (int64_t j = 0; j < (distinct ? 1 : rows[i].w); j++) {
            if (sb.len || nshown > 1 || j)
                sb_putc(&sb, ',');
            if (value_type(&rows[i].x) == LDB_TEXT) {
                size_t len;
                const char *p = value_bytes(&rows[i].x, &len);
                sb_put(&sb, p, len);
            } else {
                value_format(&sb, &rows[i].x);
            }
        }
    }
    value out = value_null();
    if (nshown)
        CHECK(value_text(&out, sb_str(&sb), sb.len) == LDB_OK);
    sb_free(&sb);
    return out;
}

static void ostep(struct state *s, const struct orow *r, int64_t w)
{
    value k = value_int(r->key), arr, args[2];
    value parts[3] = { r->x, r->y, k };
    CHECK(value_array(&arr, parts, 3) == LDB_OK);
    args[0] = r->x;
    args[1] = arr;
    CHECK(agg_step(&s->ai, s->st, args, w) == LDB_OK);
    value_release(&arr);
}

static void ostate_open(struct state *s, enum ldb_collation coll, bool distinct)
{
    st_open(s, &agg_string_agg, coll, distinct);
    CHECK(agg_inst_set_order(&s->ai, oterms, 2) == LDB_OK);
}

/* string_agg ordered by (y, key): incremental with retraction in any
 * order equals from scratch, merge, and the oracle. */
static void ordered_string_agg(void)
{
    rng r;
    rng_seed(&r, test_seed());
    static const enum ldb_collation colls[] = { LDB_COLL_BINARY, LDB_COLL_NOCASE };
    for (int iter = 0; iter < 300 * test_scale(); iter++) {
        enum ldb_collation coll = colls[rng_below(&r, 2)];
        bool distinct = rng_chance(&r, 1, 2);
        oterms[0] = (struct agg_order_term){ colls[rng_below(&r, 2)], rng_chance(&r, 1, 2),
                                             rng_chance(&r, 1, 2) };
        oterms[1] = (struct agg_order_term){ LDB_COLL_BINARY, false, true };
        struct state inc, scratch, h1, h2;
        ostate_open(&inc, coll, distinct);
        struct orow rows[200];
        size_t n = 0;
        int64_t next_key = 0;
        for (int step = (int)rng_below(&r, 100); step > 0; step--) {
            if (n < 200 && (n == 0 || rng_chance(&r, 3, 5))) {
                rows[n] = (struct orow){ random_value(&r), random_value(&r),
                                         (rng_chance(&r, 1, 2) ? 1 : -1) * next_key++,
                                         rng_range(&r, 1, 2) };
                ostep(&inc, &rows[n], rows[n].w);
                n++;
            } else {
                size_t k = (size_t)rng_below(&r, n);
                ostep(&inc, &rows[k], -rows[k].w);
                value_release(&rows[k].x);
                value_release(&rows[k].y);
                rows[k] = rows[--n];
            }
        }
        ostate_open(&scratch, coll, distinct);
        ostate_open(&h1, coll, distinct);
        ostate_open(&h2, coll, distinct);
        for (size_t i = n; i-- > 0;) {
            ostep(&scratch, &rows[i], rows[i].w);
            ostep(i % 2 ? &h1 : &h2, &rows[i], rows[i].w);
        }
        CHECK(agg_merge(&h1.ai, h1.st, h2.st) == LDB_OK);
        value a, b, c, want = ordered_oracle(rows, n, coll, distinct);
        CHECK(st_result(&inc, &a) == LDB_OK && st_result(&scratch, &b) == LDB_OK &&
              st_result(&h1, &c) == LDB_OK);
        strbuf x = STRBUF_INIT, y = STRBUF_INIT;
        value_format(&x, &a);
        value_format(&y, &want);
        CHECKF(value_identical(&a, &want), "%s != oracle %s", sb_str(&x), sb_str(&y));
        CHECK(value_identical(&b, &want) && value_identical(&c, &want));
        sb_free(&x);
        sb_free(&y);
        value_release(&a);
        value_release(&b);
        value_release(&c);
        value_release(&want);
        for (size_t i = 0; i < n; i++) {
            value_release(&rows[i].x);
            value_release(&rows[i].y);
        }
        st_close(&inc);
        st_close(&scratch);
        st_close(&h1);
        st_close(&h2);
    }
    struct state s;
    st_open(&s, &agg_min, LDB_COLL_BINARY, false);
    CHECK_INT(agg_inst_set_order(&s.ai, oterms, 2), LDB_MISUSE); /* min has no order */
    st_close(&s);
}

static void min_retraction_and_representatives(void)
{
    struct state s;
    st_open(&s, &agg_min, LDB_COLL_BINARY, false);
    value out;
    for (int i = 0; i < 100; i++) {
        value v = value_int(i);
        CHECK(agg_step(&s.ai, s.st, &v, 1) == LDB_OK);
    }
    for (int i = 0; i < 99; i++) {
        value v = value_int(i);
        CHECK(agg_step(&s.ai, s.st, &v, -1) == LDB_OK);
        CHECK(st_result(&s, &out) == LDB_OK);
        CHECK_INT(out.h.u.i, i + 1);
    }
    CHECK(agg_heap_bytes(&s.ai, s.st) > 0);
    st_close(&s);

    /* sum(DISTINCT x) over {5, 5.0}: one class, represented by INTEGER 5
     * while it is there, by 5.0 after it is gone. */
    st_open(&s, &agg_sum, LDB_COLL_BINARY, true);
    value five = value_int(5), five_r = value_real(5.0);
    CHECK(agg_step(&s.ai, s.st, &five_r, 1) == LDB_OK);
    CHECK(agg_step(&s.ai, s.st, &five, 2) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_INTEGER && out.h.u.i == 5);
    CHECK(agg_step(&s.ai, s.st, &five, -2) == LDB_OK);
    CHECK(st_result(&s, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_REAL && out.h.u.r == 5.0);
    st_close(&s);

    /* Identity order: INTEGER before REAL, -0.0 before 0.0. */
    value z = value_real(0.0), nz = value_real(-0.0), zi = value_int(0);
    CHECK(value_cmp_identity(&zi, &nz) < 0 && value_cmp_identity(&nz, &z) < 0);
    CHECK(value_cmp_identity(&z, &z) == 0);
    row *a = row_from(&five, 1), *b = row_from(&five_r, 1);
    CHECK(row_cmp_identity(a, b) < 0 && row_cmp_identity(b, a) > 0 && row_cmp_identity(a, a) == 0);
    row_release(a);
    row_release(b);
}

/* Every allocation of a run of steps fails in turn: the step says NOMEM,
 * the state can still be destroyed, and nothing leaks. */
/* ---- array_agg keeps its array ----------------------------------------------- */

/* The ARRAY of the rows of counts > 0, from a fresh state. */
static int array_scratch(const struct orow *rows, const int64_t *counts, size_t n,
                         enum ldb_collation coll, bool distinct, value *out)
{
    struct state s;
    st_open(&s, &agg_array_agg, coll, distinct);
    CHECK(agg_inst_set_order(&s.ai, oterms, 2) == LDB_OK);
    for (size_t i = 0; i < n; i++)
        if (counts[i] > 0)
            ostep(&s, &rows[i], counts[i]);
    int rc = st_result(&s, out);
    st_close(&s);
    return rc;
}

/* An array_agg state edits the array it finalized to (array.c) while its
 * items are distinct (a retraction and an addition at one rank become a
 * replace), and rebuilds it otherwise (a row counted twice, a
 * count below zero inside a batch): either way each finalize equals a
 * fresh state's, with hundreds of rows so that the array is a tree. */
static void array_agg_edits_equal_rebuild(void)
{
    rng r;
    rng_seed(&r, test_seed());
    enum { NROWS = 600 };
    for (int iter = 0; iter < 6 * test_scale(); iter++) {
        enum ldb_collation coll = rng_chance(&r, 1, 2) ? LDB_COLL_BINARY : LDB_COLL_NOCASE;
        bool distinct = rng_chance(&r, 1, 4);
        oterms[0] = (struct agg_order_term){ LDB_COLL_BINARY, rng_chance(&r, 1, 2), true };
        oterms[1] = (struct agg_order_term){ LDB_COLL_BINARY, false, true };
        struct orow rows[NROWS];
        int64_t counts[NROWS] = { 0 };
        for (int64_t i = 0; i < NROWS; i++)
            rows[i] = (struct orow){ random_value(&r), random_value(&r), i, 1 };
        struct state inc;
        st_open(&inc, &agg_array_agg, coll, distinct);
        CHECK(agg_inst_set_order(&inc.ai, oterms, 2) == LDB_OK);
        size_t negative = NROWS, compared = 0; /* negative: a row counted below zero */
        for (int step = 0; step < 3000; step++) {
            size_t k = rng_below(&r, step < 1000 ? NROWS / 2 : NROWS);
            int64_t w = counts[k] > 0 && rng_chance(&r, 1, 2) ? -1 : 1;
            if (negative < NROWS)
                k = negative, w = 1;
            else if (rng_chance(&r, 1, 50))
                w = counts[k] > 0 ? 1 : -1; /* a repeated row, or one gone below zero */
            if (counts[k] == 1 && negative == NROWS && rng_chance(&r, 1, 4)) {
                /* an update in place: the new x keeps the row's rank */
                ostep(&inc, &rows[k], -1);
                value_release(&rows[k].x);
                rows[k].x = random_value(&r);
                w = 0;
            }
            ostep(&inc, &rows[k], w ? w : 1);
            counts[k] += w;
            negative = counts[k] < 0 ? k : NROWS;
            if (negative < NROWS || !rng_chance(&r, 1, 8))
                continue;
            value a, b;
            CHECK_INT(st_result(&inc, &a), LDB_OK);
            CHECK_INT(array_scratch(rows, counts, NROWS, coll, distinct, &b), LDB_OK);
            CHECK(value_identical(&a, &b));
            CHECK(!value_array_check(&a));
            value_release(&a);
            value_release(&b);
            compared++;
        }
        CHECK(compared > 200);
        st_close(&inc);
        for (size_t i = 0; i < NROWS; i++) {
            value_release(&rows[i].x);
            value_release(&rows[i].y);
        }
    }
}

/* Retracting a row and adding it back (an update of a column the array
 * does not show) leaves the very ARRAY object: the reduce sees its output
 * unchanged by pointer, without comparing the items. */
static void array_agg_noop_update_keeps_array(void)
{
    oterms[0] = (struct agg_order_term){ LDB_COLL_BINARY, false, true };
    oterms[1] = (struct agg_order_term){ LDB_COLL_BINARY, false, true };
    struct orow rows[100];
    struct state s;
    st_open(&s, &agg_array_agg, LDB_COLL_BINARY, false);
    CHECK(agg_inst_set_order(&s.ai, oterms, 2) == LDB_OK);
    for (int i = 0; i < 100; i++) {
        rows[i] = (struct orow){ value_int(i % 7), value_int(i), i, 1 };
        ostep(&s, &rows[i], 1);
    }
    value a, b;
    CHECK_INT(st_result(&s, &a), LDB_OK);
    ostep(&s, &rows[40], -1);
    ostep(&s, &rows[40], 1);
    CHECK_INT(st_result(&s, &b), LDB_OK);
    CHECK(a.h.u.obj == b.h.u.obj);
    value_release(&a);
    value_release(&b);
    st_close(&s);
}

static void allocation_failure(void)
{
    static const struct agg_def *defs[] = { &agg_min, &agg_string_agg, &agg_sum, &agg_count };
    for (size_t d = 0; d < 4; d++) {
        for (uint64_t fail = 1;; fail++) {
            int64_t live = mem_live();
            value vals[40];
            for (int i = 0; i < 40; i++) {
                vals[i] = value_real(ldexp(1.0 + i, i * 37 - 700));
                if (d == 1)
                    vals[i] = text(i % 3 ? "some long text that is on the heap" : "A");
            }
            struct state s;
            st_open(&s, defs[d], LDB_COLL_NOCASE, d != 0);
            mem_fail_at(fail, 0);
            int rc = LDB_OK;
            for (int i = 0; i < 40 && rc == LDB_OK; i++)
                rc = agg_step(&s.ai, s.st, &vals[i], 1);
            value out = value_null();
            if (rc == LDB_OK)
                rc = st_result(&s, &out);
            mem_fail_at(0, 0);
            value_release(&out);
            for (int i = 0; i < 40; i++)
                value_release(&vals[i]);
            st_close(&s);
            CHECK_INT(mem_live(), live);
            if (rc == LDB_OK)
                break;
            CHECK_INT(rc, LDB_NOMEM);
        }
    }
}

TEST_MAIN(T(same_as_sqlite), T(sum_types_and_overflow), T(incremental_equals_scratch),
          T(ordered_string_agg), T(min_retraction_and_representatives),
          T(array_agg_edits_equal_rebuild), T(array_agg_noop_update_keeps_array),
          T(allocation_failure))
