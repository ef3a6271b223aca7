/*
 * test_array.c - ARRAY values as persistent sequences (src/value/array.c):
 * random edits (insert, remove, set) against a flat model, versions left unchanged by edits,
 * allocation failures in insert and remove, and arrays of a million items.
 */
#include "test.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "value/value.h"

#include <stdlib.h>

static const enum ldb_collation colls[] = { LDB_COLL_BINARY, LDB_COLL_NOCASE, LDB_COLL_RTRIM };

static int sign(int c) { return (c > 0) - (c < 0); }

/* A small random item: integers and reals that collide canonically, short
 * and long text differing in case and trailing spaces, small arrays. */
static value random_item(rng *r)
{
    static const char *const texts[] = { "a", "A", "a ", "b", "a text longer than inline",
                                         "A TEXT LONGER THAN INLINE", "" };
    value v;
    switch (rng_below(r, 6)) {
    case 0: return value_int(rng_range(r, -3, 3));
    case 1: return value_real((double)rng_range(r, -3, 3));
    case 2: return value_null();
    case 3: {
        value two[2] = { value_int(rng_range(r, 0, 2)), value_int(rng_range(r, 0, 2)) };
        CHECK_INT(value_array(&v, two, rng_below(r, 3)), LDB_OK);
        return v;
    }
    default: {
        const char *t = texts[rng_below(r, sizeof texts / sizeof texts[0])];
        CHECK_INT(value_text(&v, t, strlen(t)), LDB_OK);
        return v;
    }
    }
}

/* The model: the items, flat, each owned. */
struct model {
    value *items;
    size_t n, cap;
};

static void model_insert(struct model *m, size_t i, value x)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->items = realloc(m->items, m->cap * sizeof *m->items);
    }
    memmove(m->items + i + 1, m->items + i, (m->n - i) * sizeof *m->items);
    m->items[i] = x;
    m->n++;
}

static void model_remove(struct model *m, size_t i)
{
    value_release(&m->items[i]);
    memmove(m->items + i, m->items + i + 1, (m->n - i - 1) * sizeof *m->items);
    m->n--;
}

static void model_free(struct model *m)
{
    for (size_t i = 0; i < m->n; i++)
        value_release(&m->items[i]);
    free(m->items);
}

/* Lexicographic, item by item: the order value_cmp must give arrays. */
static int model_cmp(const struct model *a, const struct model *b, enum ldb_collation c)
{
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++) {
        int k = value_cmp(&a->items[i], &b->items[i], c);
        if (k)
            return sign(k);
    }
    return a->n < b->n ? -1 : a->n > b->n;
}

static char *formatted(const value *v)
{
    strbuf sb = STRBUF_INIT;
    value_format(&sb, v);
    CHECK_INT(sb_error(&sb), LDB_OK);
    char *s = strdup(sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* v holds exactly m's items: by index, by iteration, and as the flat
 * array built from them (equal, identical, same hashes and text). */
static void check_against(const value *v, const struct model *m, rng *r)
{
    const char *err = value_array_check(v);
    CHECKF(!err, "tree: %s", err ? err : "");
    CHECK_INT(value_len(v), m->n);
    for (int k = 0; k < 8 && m->n; k++) {
        size_t i = rng_below(r, m->n);
        CHECK(value_identical(value_item(v, i), &m->items[i]));
    }
    value_iter it;
    value_iter_init(&it, v);
    for (size_t i = 0; i < m->n; i++) {
        const value *x = value_iter_next(&it);
        CHECK(x && value_identical(x, &m->items[i]));
    }
    CHECK(value_iter_next(&it) == NULL);
    value flat;
    CHECK_INT(value_array(&flat, m->items, m->n), LDB_OK);
    CHECK(value_identical(v, &flat) && value_identical(&flat, v));
    CHECK_INT(value_cmp_identity(v, &flat), 0);
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++) {
        CHECK_INT(value_cmp(v, &flat, colls[c]), 0);
        CHECK(value_eq(v, &flat, colls[c]));
        CHECK(value_hash(v, colls[c]) == value_hash(&flat, colls[c]));
    }
    char *a = formatted(v), *b = formatted(&flat);
    CHECK_STR(a, b);
    free(a);
    free(b);
    value_release(&flat);
}

/* A version kept aside, with the items it must still hold. */
struct version {
    value v;
    struct model m;
};

static void model_copy(struct model *dst, const struct model *src)
{
    dst->n = dst->cap = src->n;
    dst->items = malloc((src->n + 1) * sizeof *dst->items);
    for (size_t i = 0; i < src->n; i++)
        dst->items[i] = value_copy(&src->items[i]);
}

/* Random inserts and removes, growing to a few thousand items and back to
 * none, checked against the model; every version kept along the way
 * still holds its items at the end, and orders against the others as
 * their models do. */
static void edits_match_model(void)
{
    rng r;
    rng_seed(&r, test_seed());
    int64_t live0 = mem_live();
    enum { NVERS = 12 };
    struct version vers[NVERS];
    int nvers = 0;
    int rounds = 4 * test_scale();
    for (int round = 0; round < rounds; round++) {
        struct model m = { 0 };
        value v;
        CHECK_INT(value_array(&v, NULL, 0), LDB_OK);
        size_t peak = 16 + rng_below(&r, round % 2 ? 3000 : 200);
        for (int phase = 0; phase < 2; phase++) {
            for (int step = 0; phase == 0 ? m.n < peak : m.n > 0; step++) {
                if (rng_chance(&r, 1, 200) && nvers < NVERS) {
                    vers[nvers].v = value_copy(&v);
                    model_copy(&vers[nvers].m, &m);
                    nvers++;
                }
                bool grow = rng_chance(&r, phase == 0 ? 3 : 1, 4) || m.n == 0;
                value next;
                if (m.n && rng_chance(&r, 1, 5)) {
                    size_t i = rng_below(&r, m.n);
                    value x = random_item(&r);
                    CHECK_INT(value_array_set(&next, &v, i, &x), LDB_OK);
                    value_release(&m.items[i]);
                    m.items[i] = x;
                } else if (grow) {
                    size_t i = rng_below(&r, m.n + 1);
                    value x = random_item(&r);
                    CHECK_INT(value_array_insert(&next, &v, i, &x), LDB_OK);
                    model_insert(&m, i, x);
                } else {
                    size_t i = rng_below(&r, m.n);
                    CHECK_INT(value_array_remove(&next, &v, i), LDB_OK);
                    model_remove(&m, i);
                }
                value_release(&v);
                v = next;
                if (step % 64 == 0 || m.n < 40)
                    check_against(&v, &m, &r);
            }
        }
        check_against(&v, &m, &r);
        value_release(&v);
        model_free(&m);
    }
    for (int i = 0; i < nvers; i++) {
        check_against(&vers[i].v, &vers[i].m, &r);
        for (int j = 0; j < nvers; j++)
            for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
                CHECK_INT(sign(value_cmp(&vers[i].v, &vers[j].v, colls[c])),
                          model_cmp(&vers[i].m, &vers[j].m, colls[c]));
    }
    for (int i = 0; i < nvers; i++) {
        value_release(&vers[i].v);
        model_free(&vers[i].m);
    }
    CHECK_INT(mem_live(), live0);
}

/* An array of n integers 0..n-1. */
static value ints(size_t n)
{
    value *items = malloc((n + 1) * sizeof *items), v;
    for (size_t i = 0; i < n; i++)
        items[i] = value_int((int64_t)i);
    CHECK_INT(value_array(&v, items, n), LDB_OK);
    free(items);
    return v;
}

/* Insert, remove and set, with each allocation failing in turn: LDB_NOMEM,
 * nothing leaked, the array unchanged; then the edit succeeds. Sizes and
 * places cover leaves that split or merge and roots that grow or shrink. */
static void edits_without_memory(void)
{
    static const size_t sizes[] = { 0, 1, 15, 16, 17, 32, 33, 64, 130, 1000 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        value v = ints(n), want = ints(n);
        size_t places[] = { 0, n / 2, n };
        for (int p = 0; p < 3; p++) {
            for (int op = 0; op < 3; op++) { /* insert, remove, set */
                if (op && places[p] >= n)
                    continue;
                int64_t live0 = mem_live();
                for (uint64_t k = 1;; k++) {
                    value out, x = value_int(-1);
                    mem_fail_at(k, 0);
                    int rc = op == 0   ? value_array_insert(&out, &v, places[p], &x)
                             : op == 1 ? value_array_remove(&out, &v, places[p])
                                       : value_array_set(&out, &v, places[p], &x);
                    uint64_t failed = mem_failed_count();
                    mem_fail_at(0, 0);
                    if (!failed) {
                        CHECK_INT(rc, LDB_OK);
                        CHECK_INT(value_len(&out), op == 0 ? n + 1 : op == 1 ? n - 1 : n);
                        CHECK(!value_array_check(&out));
                        value_release(&out);
                        break;
                    }
                    CHECK_INT(rc, LDB_NOMEM);
                    CHECK_INT(mem_live(), live0);
                    CHECK(value_identical(&v, &want) && !value_array_check(&v));
                }
            }
        }
        value_release(&v);
        value_release(&want);
    }
}

/* A million items: built flat and by edits, walked, compared, hashed,
 * formatted and freed without deep recursion (the tree is a few levels
 * high) and with the same result both ways. */
static void million_items(void)
{
    enum { N = 1000000 };
    value a = ints(N), b;
    CHECK(value_varray(&a)->height <= 12); /* 125,000 leaves, 4 kids a node */
    CHECK(!value_array_check(&a));
    /* b: a with its first 1000 items removed and put back one by one */
    value cur = value_copy(&a);
    for (int i = 0; i < 1000; i++) {
        value next;
        CHECK_INT(value_array_remove(&next, &cur, 0), LDB_OK);
        value_release(&cur);
        cur = next;
    }
    for (int i = 999; i >= 0; i--) {
        value next, x = value_int(i);
        CHECK_INT(value_array_insert(&next, &cur, 0, &x), LDB_OK);
        value_release(&cur);
        cur = next;
    }
    b = cur;
    CHECK(!value_array_check(&b));
    CHECK(a.h.u.obj != b.h.u.obj);
    CHECK_INT(value_cmp(&a, &b, LDB_COLL_BINARY), 0);
    CHECK(value_identical(&a, &b));
    CHECK(value_hash(&a, LDB_COLL_BINARY) == value_hash(&b, LDB_COLL_BINARY));
    CHECK(value_hash(&a, LDB_COLL_NOCASE) == value_hash(&b, LDB_COLL_NOCASE));
    CHECK_INT(value_item(&b, 777777)->h.u.i, 777777);
    char *fa = formatted(&a), *fb = formatted(&b);
    CHECK_STR(fa, fb);
    free(fa);
    free(fb);
    value x = value_int(-5), c;
    CHECK_INT(value_array_insert(&c, &b, N / 2, &x), LDB_OK);
    CHECK_INT(value_cmp(&a, &c, LDB_COLL_BINARY), 1); /* 500000 > -5 at N/2 */
    CHECK(!value_eq(&a, &c, LDB_COLL_BINARY));
    value_release(&a);
    value_release(&b);
    value_release(&c);
}

TEST_MAIN(T(edits_match_model), T(edits_without_memory), T(million_items))
