/*
 * test_base.c - hash table against a reference, arena, vec, strbuf, hash
 * function, hash sorting and the allocation-failure hook.
 */
#include "test.h"

#include "base/arena.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "base/hsort.h"
#include "base/mem.h"
#include "base/strbuf.h"
#include "base/vec.h"

#include <stdlib.h>

/* ---- hash table ----------------------------------------------------------- */

/* Keys are small integers; a deliberately weak hash (key % buckets) forces
 * long probe chains, full-hash collisions and tombstone reuse. */
struct kv {
    uint64_t key;
    uint64_t val;
    int live;
};

static uint64_t weak_hash(uint64_t k, int weak) { return weak ? (k % 7) * 0x1000 : hash_u64(k); }

static uint64_t *entries_key; /* payload is an index into this model */
static bool eq_key(const void *key, uint64_t val) { return entries_key[val] == *(const uint64_t *)key; }

static void hmap_model(void)
{
    rng r;
    rng_seed(&r, test_seed());
    int64_t live0 = mem_live();
    for (int weak = 0; weak < 2; weak++) {
        enum { MAXK = 600 };
        struct kv model[MAXK];
        uint64_t keys[MAXK];
        memset(model, 0, sizeof model);
        for (int i = 0; i < MAXK; i++)
            keys[i] = model[i].key = (uint64_t)i * 2654435761u;
        entries_key = keys;
        hmap m;
        hmap_init(&m);
        int steps = 20000 * test_scale();
        for (int s = 0; s < steps; s++) {
            int k = (int)rng_below(&r, s < steps / 2 ? MAXK : MAXK / 5);
            uint64_t h = weak_hash(keys[k], weak);
            switch (rng_below(&r, 3)) {
            case 0: { /* insert or update */
                uint64_t *v;
                bool found;
                CHECK(hmap_put(&m, h, eq_key, &keys[k], &v, &found) == LDB_OK);
                CHECK(found == (model[k].live != 0));
                *v = (uint64_t)k;
                model[k].live = 1;
                break;
            }
            case 1: { /* delete */
                uint64_t *v = hmap_get(&m, h, eq_key, &keys[k]);
                CHECK((v != NULL) == (model[k].live != 0));
                if (v)
                    hmap_del(&m, v);
                model[k].live = 0;
                break;
            }
            default: {
                uint64_t *v = hmap_get(&m, h, eq_key, &keys[k]);
                CHECK((v != NULL) == (model[k].live != 0));
                if (v)
                    CHECK_INT(*v, k);
            }
            }
            if (s % 997 == 0) {
                uint32_t n = 0, pos = 0;
                uint64_t *v;
                while ((v = hmap_next(&m, &pos, NULL)) != NULL) {
                    CHECK(model[*v].live);
                    n++;
                }
                uint32_t expect = 0;
                for (int i = 0; i < MAXK; i++)
                    expect += (uint32_t)model[i].live;
                CHECK_INT(n, expect);
                CHECK_INT(hmap_count(&m), expect);
                CHECK(m.count + m.tombs <= (m.mask + 1) * 3 / 4);
            }
        }
        hmap_free(&m);
    }
    CHECK_INT(mem_live(), live0);
}

static void hmap_multimap(void)
{
    hmap m;
    hmap_init(&m);
    uint64_t *v;
    bool found;
    for (uint64_t i = 0; i < 100; i++) {
        CHECK(hmap_put(&m, i % 3, NULL, NULL, &v, &found) == LDB_OK);
        CHECK(!found);
        *v = i;
    }
    uint32_t pos = UINT32_MAX;
    int seen = 0;
    while ((v = hmap_probe(&m, 1, &pos)) != NULL) {
        CHECK(*v % 3 == 1);
        seen++;
    }
    CHECK_INT(seen, 33);
    hmap_free(&m);
}

static void hmap_nomem(void)
{
    int64_t live0 = mem_live();
    hmap m;
    hmap_init(&m);
    uint64_t keys[200];
    entries_key = keys;
    for (uint64_t i = 0; i < 200; i++) {
        keys[i] = i;
        uint64_t *v;
        bool found;
        for (;;) {
            mem_fail_at(1, 0); /* each growth is tried once failing first */
            int rc = hmap_put(&m, hash_u64(i), eq_key, &keys[i], &v, &found);
            uint64_t failed = mem_failed_count();
            mem_fail_at(0, 0);
            if (rc == LDB_OK) {
                *v = i;
                break;
            }
            CHECK(failed && rc == LDB_NOMEM);
            CHECK_INT(hmap_count(&m), i); /* unchanged */
            for (uint64_t j = 0; j < i; j++)
                CHECK(hmap_get(&m, hash_u64(j), eq_key, &keys[j]) != NULL);
            CHECK(hmap_reserve(&m, 1) == LDB_OK);
        }
    }
    hmap_free(&m);
    CHECK_INT(mem_live(), live0);
}

static bool eq_val(const void *key, uint64_t val) { return *(const uint64_t *)key == val; }

/* A table churning just under its growth limit (delete one key, insert
 * another, live count fixed) rehashes rarely: a rehash that only drops
 * tombstones must leave room for many more writes. */
static void hmap_churn(void)
{
    int64_t live0 = mem_live();
    hmap m;
    hmap_init(&m);
    enum { LIVE = 95, STEPS = 20000 }; /* 128 slots hold 96 */
    uint64_t *v;
    bool found;
    for (uint64_t k = 0; k < LIVE; k++) {
        CHECK(hmap_put(&m, hash_u64(k), eq_val, &k, &v, &found) == LDB_OK);
        *v = k;
    }
    CHECK_INT(m.mask + 1, 128);
    uint64_t allocs = mem_alloc_count();
    for (uint64_t k = 0; k < STEPS; k++) {
        hmap_del(&m, hmap_get(&m, hash_u64(k), eq_val, &k));
        uint64_t nk = k + LIVE;
        CHECK(hmap_put(&m, hash_u64(nk), eq_val, &nk, &v, &found) == LDB_OK);
        *v = nk;
    }
    CHECK_INT(hmap_count(&m), LIVE);
    CHECKF(mem_alloc_count() - allocs <= STEPS / 64, "%llu rehashes in %d writes",
           (unsigned long long)(mem_alloc_count() - allocs), STEPS);
    hmap_free(&m);
    CHECK_INT(mem_live(), live0);
}

/* Undo: deletes then puts back of the deleted entries, newest first, as an
 * undo log does, after inserts and deletes that left tombstones behind:
 * no put back may allocate, the load limit holds, and every entry stays
 * findable. Weak hashes make long runs, where purging tombstones in place
 * must keep them whole. */
static void hmap_put_back_undo(void)
{
    rng r;
    rng_seed(&r, test_seed());
    int64_t live0 = mem_live();
    enum { KEYS = 3000, OPS = 400 };
    static uint64_t log[OPS];
    static bool is_put[OPS];
    for (int round = 0; round < 200 * test_scale(); round++) {
        int weak = round % 2;
        hmap m;
        hmap_init(&m);
        uint64_t *v;
        bool found;
        /* Half the rounds fill 128 slots to the limit (96) with d new
         * entries, then delete d old ones: putting those back meets the
         * tombstones of the deletes that undo the inserts. */
        bool phased = round % 4 < 2;
        int d = 1 + (int)rng_below(&r, 40);
        size_t n0 = phased ? 96 - (size_t)d : 1 + rng_below(&r, 200);
        for (uint64_t k = 0; k < n0; k++) {
            CHECK(hmap_put(&m, weak_hash(k, weak), eq_val, &k, &v, &found) == LDB_OK);
            *v = k;
        }
        int nops = phased ? 2 * d : (int)rng_below(&r, OPS);
        for (int i = 0; i < nops; i++) {
            uint64_t k = !phased ? rng_below(&r, rng_chance(&r, 1, 2) ? n0 : KEYS)
                         : i < d ? n0 + (uint64_t)i
                                 : (uint64_t)(i - d) * n0 / (size_t)d;
            uint64_t *at = hmap_get(&m, weak_hash(k, weak), eq_val, &k);
            is_put[i] = at == NULL;
            log[i] = k;
            if (at) {
                hmap_del(&m, at);
            } else {
                CHECK(hmap_put(&m, weak_hash(k, weak), eq_val, &k, &v, &found) == LDB_OK);
                *v = k;
            }
        }
        mem_fail_at(1, 1);
        for (int i = nops; i-- > 0;) {
            uint64_t k = log[i];
            if (is_put[i])
                hmap_del(&m, hmap_get(&m, weak_hash(k, weak), eq_val, &k));
            else
                *hmap_put_back(&m, weak_hash(k, weak)) = k;
            /* the load limit holds, so probe runs stay short and end */
            CHECK((m.count + m.tombs) * 4 <= (m.mask + 1) * 3);
        }
        /* Entries other than the ones deleted may come back too: the count
         * only returns to one the table had. */
        for (uint64_t k = 0; k < n0 && round % 4 == 2; k += 3) {
            hmap_del(&m, hmap_get(&m, weak_hash(k, weak), eq_val, &k));
            uint64_t other = KEYS + k;
            *hmap_put_back(&m, weak_hash(other, weak)) = other;
            CHECK((m.count + m.tombs) * 4 <= (m.mask + 1) * 3);
            hmap_del(&m, hmap_get(&m, weak_hash(other, weak), eq_val, &other));
            *hmap_put_back(&m, weak_hash(k, weak)) = k;
        }
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        CHECK_INT(failed, 0);
        CHECK_INT(hmap_count(&m), n0);
        for (uint64_t k = 0; k < KEYS; k++)
            CHECK((hmap_get(&m, weak_hash(k, weak), eq_val, &k) != NULL) == (k < n0));
        hmap_free(&m);
    }
    CHECK_INT(mem_live(), live0);
}

/* ---- arena ---------------------------------------------------------------- */

static void arena_basic(void)
{
    int64_t live0 = mem_live();
    arena a;
    arena_init(&a, 256);
    char *p = arena_alloc(&a, 10);
    CHECK(p && ((uintptr_t)p % 16) == 0);
    memset(p, 'x', 10);
    arena_mark m = arena_get_mark(&a);
    for (int i = 0; i < 100; i++) {
        char *q = arena_alloc(&a, (size_t)(i * 7 + 1));
        CHECK(q && ((uintptr_t)q % 16) == 0);
        memset(q, i, (size_t)(i * 7 + 1));
    }
    char *big = arena_alloc(&a, 10000);
    CHECK(big);
    memset(big, 1, 10000);
    arena_rewind(&a, m);
    CHECK(p[9] == 'x');
    char *s = arena_strndup(&a, "hello", 5);
    CHECK_STR(s, "hello");
    arena_reset(&a);
    CHECK(a.bytes == 256);
    /* failure leaves the arena usable and unchanged */
    mem_fail_at(1, 0);
    CHECK(arena_alloc(&a, 100000) == NULL);
    mem_fail_at(0, 0);
    CHECK(arena_alloc(&a, 16) != NULL);
    arena_free(&a);
    CHECK_INT(mem_live(), live0);
}

/* ---- vec and strbuf ------------------------------------------------------ */

static void vec_and_strbuf(void)
{
    int64_t live0 = mem_live();
    VEC(int) v = VEC_INIT;
    for (int i = 0; i < 1000; i++)
        CHECK(vec_push(&v, i) == LDB_OK);
    CHECK_INT(v.len, 1000);
    CHECK_INT(vec_last(&v), 999);
    mem_fail_at(1, 0);
    size_t cap = v.cap;
    while (v.len < cap)
        CHECK(vec_push(&v, 0) == LDB_OK);
    CHECK(vec_push(&v, 7) == LDB_NOMEM);
    mem_fail_at(0, 0);
    CHECK_INT(v.len, cap);
    vec_free(&v);

    strbuf sb = STRBUF_INIT;
    CHECK_STR(sb_str(&sb), "");
    sb_printf(&sb, "%d-%s", 12, "ab");
    for (int i = 0; i < 100; i++)
        sb_puts(&sb, "0123456789");
    CHECK_INT(sb.len, 5 + 1000);
    CHECK(memcmp(sb_str(&sb), "12-ab0123", 9) == 0);
    size_t len;
    char *s = sb_take(&sb, &len);
    CHECK(s && len == 1005 && s[1005] == '\0');
    mem_free(s);
    mem_fail_at(1, 1);
    sb_puts(&sb, "x");
    sb_puts(&sb, "y");
    mem_fail_at(0, 0);
    CHECK_INT(sb_error(&sb), LDB_NOMEM);
    CHECK(sb_take(&sb, NULL) == NULL);

    /* sb_extend: room written in place, then cut to what was written */
    sb_puts(&sb, "ab");
    char *at = sb_extend(&sb, 100);
    CHECK(at == sb.p + 2 && sb.len == 102);
    memcpy(at, "cde", 3);
    sb_truncate(&sb, 5);
    CHECK_STR(sb_str(&sb), "abcde");
    mem_fail_at(1, 0);
    CHECK(sb_extend(&sb, 1 << 20) == NULL);
    mem_fail_at(0, 0);
    CHECK_INT(sb_error(&sb), LDB_NOMEM);
    sb_free(&sb);
    char fixed[8];
    strbuf fb;
    sb_init_fixed(&fb, fixed, sizeof fixed);
    CHECK(sb_extend(&fb, 2) == NULL); /* not in place in the caller's buffer */
    CHECK_INT(sb_error(&fb), LDB_NOMEM);
    CHECK_INT(mem_live(), live0);
}

/* ---- hash function -------------------------------------------------------- */

static void hash_quality(void)
{
    /* Flipping any one input bit flips about half of the output bits. */
    rng r;
    rng_seed(&r, test_seed());
    unsigned char buf[40];
    double total = 0;
    int trials = 0;
    for (int t = 0; t < 200; t++) {
        size_t n = (size_t)rng_below(&r, sizeof buf) + 1;
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)rng_next(&r);
        uint64_t h0 = hash_bytes(buf, n, HASH_SEED);
        size_t bit = (size_t)rng_below(&r, n * 8);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        uint64_t h1 = hash_bytes(buf, n, HASH_SEED);
        total += __builtin_popcountll(h0 ^ h1);
        trials++;
    }
    double avg = total / trials;
    CHECKF(avg > 28 && avg < 36, "avalanche average %.2f bits", avg);
    /* length is part of the hash: "" vs "\0" */
    CHECK(hash_bytes("", 0, HASH_SEED) != hash_bytes("\0", 1, HASH_SEED));
    CHECK(hash_u64(1) != hash_u64(2));
}

static void mem_hook(void)
{
    mem_fail_at(3, 0);
    void *a = mem_alloc(1), *b = mem_alloc(1), *c = mem_alloc(1), *d = mem_alloc(1);
    CHECK(a && b && !c && d);
    CHECK_INT(mem_failed_count(), 1);
    mem_fail_at(2, 1);
    void *e = mem_alloc(1), *f = mem_alloc(1), *g = mem_alloc(1);
    CHECK(e && !f && !g);
    CHECK_INT(mem_failed_count(), 2);
    mem_fail_at(0, 0);
    mem_free(a);
    mem_free(b);
    mem_free(d);
    mem_free(e);
    void *p = mem_alloc(0);
    CHECK(p != NULL);
    mem_free(p);
}

/* ---- hash sorting ---------------------------------------------------------- */

/* Random fields of random widths and offsets (few distinct hashes, so runs
 * and full-hash ties are common): the result is a permutation ordered by
 * the field, then the full hash, then input order; and a table's mask
 * after a reserve is the one hmap_mask_after promised. */
static void hsort_orders(void)
{
    rng r;
    rng_seed(&r, test_seed());
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)rng_below(&r, 3000);
        unsigned lo = (unsigned)rng_below(&r, 40), bits = 1 + (unsigned)rng_below(&r, 24);
        uint64_t distinct = 1 + rng_below(&r, 500);
        struct hkey *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
        uint64_t *seen = calloc(n + 1, sizeof *seen);
        for (size_t i = 0; i < n; i++)
            a[i] = (struct hkey){ hash_u64(rng_below(&r, distinct)), i };
        struct hkey *k = hsort_field(a, b, n, lo, bits);
        hsort_runs(k, n, lo, bits);
        uint64_t mask = ((uint64_t)1 << bits) - 1;
        for (size_t i = 0; i < n; i++) {
            CHECK(k[i].idx < n && !seen[k[i].idx]);
            seen[k[i].idx] = 1;
            if (i == 0)
                continue;
            uint64_t f0 = (k[i - 1].hash >> lo) & mask, f1 = (k[i].hash >> lo) & mask;
            CHECKF(f0 < f1 || (f0 == f1 && (k[i - 1].hash < k[i].hash ||
                                            (k[i - 1].hash == k[i].hash && k[i - 1].idx < k[i].idx))),
                   "round %d: entries %zu and %zu out of order", round, i - 1, i);
        }
        free(a);
        free(b);
        free(seen);
        hmap m;
        hmap_init(&m);
        uint32_t before = (uint32_t)rng_below(&r, 2000), more = (uint32_t)rng_below(&r, 5000);
        CHECK(hmap_reserve(&m, before) == LDB_OK);
        for (uint32_t i = 0; i < before; i++) {
            uint64_t *v;
            bool found;
            CHECK(hmap_put(&m, hash_u64(i), NULL, NULL, &v, &found) == LDB_OK);
        }
        uint32_t want = hmap_mask_after(&m, more);
        CHECK(hmap_reserve(&m, more) == LDB_OK);
        CHECK_INT(m.mask, want);
        hmap_free(&m);
    }
}

TEST_MAIN(T(hmap_model), T(hmap_multimap), T(hmap_nomem), T(hmap_churn), T(hmap_put_back_undo), T(arena_basic),
          T(vec_and_strbuf), T(hash_quality), T(hsort_orders), T(mem_hook))
