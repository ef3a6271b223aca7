/*
 * index.c - ordered and hash indexes over a table's rows (see index.h).
 *
 * An ordered index is a btree whose items are row pointers, ordered by
 * the key parts, then the primary key; probes compare only a prefix of
 * the parts (and the primary key when they carry a row), so one tree
 * answers seeks, prefix ranges, counts and ranks. Removals are held
 * deletes (index.h); the tree pins a deleted row it keeps as a separator
 * with a row reference.
 *
 * A hash index is an hmap multimap from the hash of the key parts (under
 * their collations) to row pointers. Equal keys share a probe run, so a
 * key repeated d times costs O(d) to insert, find or remove: hash indexes
 * suit keys with few duplicates; an ordered index handles any.
 */
#include "storage/index.h"

#include "base/hash.h"
#include "base/interrupt.h"
#include "base/mem.h"
#include "storage/table.h"

#include <string.h>

/* ---- comparing keys ------------------------------------------------------- */

/* BINARY text order (bytes, then shorter first) without value_cmp's
 * dispatch: the common key type of text indexes. */
static inline int text_cmp_binary(const value *a, const value *b)
{
    size_t na, nb;
    const char *pa = value_bytes(a, &na), *pb = value_bytes(b, &nb);
    int c = memcmp(pa, pb, na < nb ? na : nb);
    if (c)
        return c < 0 ? -1 : 1;
    return (na > nb) - (na < nb);
}

/* One part: NULL's place first, then the value order, then direction. */
static inline int part_cmp(const struct key_part *p, const value *a, const value *b)
{
    bool an = value_is_null(a), bn = value_is_null(b);
    if (an || bn) {
        if (an && bn)
            return 0;
        return an == p->nulls_first ? -1 : 1;
    }
    int c;
    if (value_type(a) == LDB_INTEGER && value_type(b) == LDB_INTEGER)
        c = (a->h.u.i > b->h.u.i) - (a->h.u.i < b->h.u.i);
    else if (value_type(a) == LDB_TEXT && value_type(b) == LDB_TEXT && p->coll == LDB_COLL_BINARY)
        c = text_cmp_binary(a, b);
    else
        c = value_cmp(a, b, p->coll);
    return p->desc ? -c : c;
}

int index_key_cmp(const struct table_index *ix, const row *a, const row *b,
                  uint32_t nparts)
{
    for (uint32_t i = 0; i < nparts; i++) {
        const struct key_part *p = &ix->parts[i];
        int c = part_cmp(p, &a->cols[p->col], &b->cols[p->col]);
        if (c)
            return c;
    }
    return 0;
}

bool index_key_has_null(const struct table_index *ix, const row *r)
{
    for (uint32_t i = 0; i < ix->nparts; i++)
        if (value_is_null(&r->cols[ix->parts[i].col]))
            return true;
    return false;
}

static int item_cmp(void *ctx, const void *a, const void *b)
{
    const struct table_index *ix = ctx;
    const row *ra = a, *rb = b;
    int c = index_key_cmp(ix, ra, rb, ix->nparts);
    if (c == 0 && ra != rb)
        c = table_key_cmp(ix->table, ra, rb);
    return c;
}

/* The tree's hold on a deleted row it still uses as a separator. */
static void pin_row(void *ctx, void *item, bool keep)
{
    (void)ctx;
    if (keep)
        row_retain(item);
    else
        row_release(item);
}

/* A probe: values for the first n parts, and when pk is set (n must be
 * nparts) the primary key of that row after them. */
struct probe {
    const value *vals;
    uint32_t n;
    const row *pk;
};

static int probe_cmp(void *ctx, const void *probe, const void *item)
{
    const struct table_index *ix = ctx;
    const struct probe *p = probe;
    const row *r = item;
    for (uint32_t i = 0; i < p->n; i++) {
        const struct key_part *kp = &ix->parts[i];
        int c = part_cmp(kp, &p->vals[i], &r->cols[kp->col]);
        if (c)
            return c;
    }
    return p->pk ? table_key_cmp(ix->table, p->pk, r) : 0;
}

/* The key of row r as probe values (borrowed from r). */
static void row_key(const struct table_index *ix, const row *r, value *out)
{
    for (uint32_t i = 0; i < ix->nparts; i++)
        out[i] = r->cols[ix->parts[i].col];
}

static const enum btree_seek seek_modes[] = { BT_GE, BT_GT, BT_LE, BT_LT };

/* ---- hashing keys ------------------------------------------------------------ */

static uint64_t key_hash_vals(const struct table_index *ix, const value *key)
{
    if (ix->nparts == 1)
        return value_hash(&key[0], ix->parts[0].coll);
    uint64_t h = HASH_SEED;
    for (uint32_t i = 0; i < ix->nparts; i++)
        h = hash_combine(h, value_hash(&key[i], ix->parts[i].coll));
    return h;
}

static uint64_t key_hash_row(const struct table_index *ix, const row *r)
{
    value key[INDEX_MAX_PARTS];
    row_key(ix, r, key);
    return key_hash_vals(ix, key);
}

static bool key_eq_vals(const struct table_index *ix, const value *key, const row *r)
{
    for (uint32_t i = 0; i < ix->nparts; i++)
        if (!value_eq(&key[i], &r->cols[ix->parts[i].col], ix->parts[i].coll))
            return false;
    return true;
}

static inline row *slot_row(const uint64_t *v) { return (row *)(uintptr_t)*v; }

/* ---- life cycle ------------------------------------------------------------- */

int index_init(struct table_index *ix, struct table *t, const struct index_def *def)
{
    memset(ix, 0, sizeof *ix);
    ix->name = mem_strndup(def->name, strlen(def->name));
    ix->sql = def->sql ? mem_strndup(def->sql, strlen(def->sql)) : NULL;
    if (!ix->name || (def->sql && !ix->sql)) {
        mem_free(ix->name);
        mem_free(ix->sql);
        return LDB_NOMEM;
    }
    ix->table = t;
    ix->kind = def->kind;
    ix->unique = def->unique;
    ix->nparts = def->nparts;
    memcpy(ix->parts, def->parts, def->nparts * sizeof *def->parts);
    btree_init(&ix->tree, item_cmp, ix);
    btree_set_work_counter(&ix->tree, &ix->work);
    btree_set_pin(&ix->tree, pin_row);
    hmap_init(&ix->hash);
    return LDB_OK;
}

void index_destroy(struct table_index *ix)
{
    btree_free(&ix->tree);
    hmap_free(&ix->hash);
    mem_free(ix->name);
    mem_free(ix->sql);
    ix->name = ix->sql = NULL;
}

size_t index_bytes(const struct table_index *ix)
{
    size_t n = sizeof *ix + strlen(ix->name) + 1 + (ix->sql ? strlen(ix->sql) + 1 : 0);
    return n + (ix->kind == INDEX_ORDERED ? btree_bytes(&ix->tree) : hmap_bytes(&ix->hash));
}

/* ---- maintenance ------------------------------------------------------------- */

/* A row other than except whose key equals r's in a unique index. */
static row *ordered_conflict(const struct table_index *ix, const row *r, const row *except)
{
    value key[INDEX_MAX_PARTS];
    row_key(ix, r, key);
    struct probe p = { key, ix->nparts, NULL };
    btree_cursor c;
    /* At most two rows can share the key: except and one other. */
    for (bool on = btree_seek(&ix->tree, probe_cmp, &p, BT_GE, &c); on; on = btree_next(&c)) {
        row *e = btree_cursor_item(&c);
        if (probe_cmp((void *)ix, &p, e) != 0)
            return NULL;
        if (e != except)
            return e;
    }
    return NULL;
}

static row *hash_conflict(struct table_index *ix, const row *r, uint64_t h, const row *except)
{
    value key[INDEX_MAX_PARTS];
    row_key(ix, r, key);
    uint32_t pos = UINT32_MAX;
    for (uint64_t *v; (v = hmap_probe(&ix->hash, h, &pos));) {
        ix->work++;
        row *e = slot_row(v);
        if (e != except && key_eq_vals(ix, key, e))
            return e;
    }
    return NULL;
}

int index_add(struct table_index *ix, row *r, const row *except, row **conflict)
{
    bool check = ix->unique && !index_key_has_null(ix, r);
    ix->changes++;
    if (ix->kind == INDEX_ORDERED) {
        if (check && (*conflict = ordered_conflict(ix, r, except)))
            return LDB_CONSTRAINT;
        void *existing;
        int rc = btree_insert(&ix->tree, r, &existing);
        return rc == LDB_OK && existing ? LDB_INTERNAL : rc;
    }
    uint64_t h = key_hash_row(ix, r);
    if (check && (*conflict = hash_conflict(ix, r, h, except)))
        return LDB_CONSTRAINT;
    uint64_t *v;
    bool found;
    int rc = hmap_put(&ix->hash, h, NULL, NULL, &v, &found);
    if (rc == LDB_OK)
        *v = (uint64_t)(uintptr_t)r;
    return rc;
}

/* The hash slot that holds r (by pointer identity), or NULL. */
static uint64_t *hash_slot_of(struct table_index *ix, const row *r)
{
    uint32_t pos = UINT32_MAX;
    for (uint64_t *v; (v = hmap_probe(&ix->hash, key_hash_row(ix, r), &pos));) {
        ix->work++;
        if (slot_row(v) == r)
            return v;
    }
    return NULL;
}

void index_remove(struct table_index *ix, row *r)
{
    ix->changes++;
    if (ix->kind == INDEX_ORDERED) {
        btree_delete_held(&ix->tree, r);
        return;
    }
    uint64_t *v = hash_slot_of(ix, r);
    if (v)
        hmap_del(&ix->hash, v);
}

int index_put_back(struct table_index *ix, row *r)
{
    if (ix->kind == INDEX_ORDERED)
        return btree_put_back(&ix->tree, r);
    *hmap_put_back(&ix->hash, key_hash_row(ix, r)) = (uint64_t)(uintptr_t)r;
    return LDB_OK;
}

void index_replace(struct table_index *ix, row *old, row *new_row)
{
    if (ix->kind == INDEX_ORDERED) {
        /* Equal key parts and primary key: new_row orders against every
         * other entry as old does (the address never decides). */
        btree_replace(&ix->tree, old, new_row);
        return;
    }
    /* Equal keys hash alike under their collations (value.h). */
    uint64_t *v = hash_slot_of(ix, old);
    if (v)
        *v = (uint64_t)(uintptr_t)new_row;
}

/* ---- statistics ------------------------------------------------------------------- */

#define DISTINCT_SAMPLES 32

/* Rank sampling meets a value with c copies c times as often, so
 * n * mean(1/c) over the samples is an unbiased estimate of the count of
 * distinct values. */
static double sample_distinct(const struct table_index *ix)
{
    size_t n = index_count(ix);
    if (n == 0)
        return 0;
    uint32_t col = ix->parts[0].col, k = n < DISTINCT_SAMPLES ? (uint32_t)n : DISTINCT_SAMPLES;
    double inv = 0;
    for (uint32_t i = 0; i < k; i++) {
        struct index_cursor c;
        if (!index_at(ix, (size_t)((double)i * (double)n / k), &c))
            return 0;
        size_t same = index_count_eq(ix, &index_cursor_row(&c)->cols[col], 1);
        inv += 1.0 / (double)(same ? same : 1);
    }
    return (double)n * inv / k;
}

double index_distinct_estimate(struct table_index *ix)
{
    if (ix->kind != INDEX_ORDERED)
        return 0;
    if (!ix->distinct_known || (ix->changes - ix->distinct_at) * 8 > index_count(ix)) {
        ix->distinct = sample_distinct(ix);
        ix->distinct_at = ix->changes;
        ix->distinct_known = true;
    }
    return ix->distinct;
}

/* ---- building over existing rows ------------------------------------------------ */

/* Bottom-up merge sort of row pointers by the item order; tmp holds n.
 * Each pass is work ldb_interrupt may stop (LDB_INTERRUPT, a left in some
 * order). */
static int sort_rows(const struct table_index *ix, row **a, row **tmp, size_t n)
{
    for (size_t width = 1; width < n; width *= 2) {
        int rc = intr_tick_n((int64_t)n);
        if (rc)
            return rc;
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = item_cmp((void *)ix, a[i], a[j]) <= 0 ? a[i++] : a[j++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
    return LDB_OK;
}

static int build_ordered(struct table_index *ix, row **rows, size_t n, row **conflict)
{
    row **tmp = mem_alloc(n * sizeof *tmp);
    if (!tmp)
        return LDB_NOMEM;
    int rc = sort_rows(ix, rows, tmp, n);
    mem_free(tmp);
    if (rc)
        return rc;
    for (size_t i = 1; ix->unique && i < n; i++) {
        if (!index_key_has_null(ix, rows[i]) &&
            index_key_cmp(ix, rows[i - 1], rows[i], ix->nparts) == 0) {
            *conflict = rows[i - 1];
            return LDB_CONSTRAINT;
        }
    }
    return btree_bulk_load(&ix->tree, (void *const *)rows, n);
}

int index_build_sorted(struct table_index *ix, row *const *rows, size_t n)
{
    if (ix->kind != INDEX_ORDERED || index_count(ix) != 0)
        return LDB_MISUSE;
    for (size_t i = 1; i < n; i++)
        if (item_cmp((void *)ix, rows[i - 1], rows[i]) >= 0)
            return LDB_ERROR;
    for (size_t i = 1; ix->unique && i < n; i++)
        if (!index_key_has_null(ix, rows[i]) &&
            index_key_cmp(ix, rows[i - 1], rows[i], ix->nparts) == 0)
            return LDB_CONSTRAINT;
    return btree_bulk_load(&ix->tree, (void *const *)rows, n);
}

static int build_hash(struct table_index *ix, row **rows, size_t n, row **conflict)
{
    if (n > UINT32_MAX / 2)
        return LDB_NOMEM;
    int rc = hmap_reserve(&ix->hash, (uint32_t)n);
    for (size_t i = 0; i < n && rc == LDB_OK; i++)
        rc = index_add(ix, rows[i], NULL, conflict);
    if (rc != LDB_OK)
        hmap_free(&ix->hash);
    return rc;
}

int index_build(struct table_index *ix, row **rows, size_t n, row **conflict)
{
    *conflict = NULL;
    return ix->kind == INDEX_ORDERED ? build_ordered(ix, rows, n, conflict)
                                     : build_hash(ix, rows, n, conflict);
}

/* ---- reading ------------------------------------------------------------------ */

static bool cursor_on(const struct table_index *ix, struct index_cursor *c)
{
    c->ix = ix;
    return c->bc.leaf != NULL;
}

bool index_seek(const struct table_index *ix, const value *key, uint32_t n,
                enum index_seek_mode mode, struct index_cursor *c)
{
    struct probe p = { key, n, NULL };
    btree_seek(&ix->tree, probe_cmp, &p, seek_modes[mode], &c->bc);
    return cursor_on(ix, c);
}

bool index_seek_row(const struct table_index *ix, const row *r,
                    enum index_seek_mode mode, struct index_cursor *c)
{
    value key[INDEX_MAX_PARTS];
    row_key(ix, r, key);
    struct probe p = { key, ix->nparts, r };
    btree_seek(&ix->tree, probe_cmp, &p, seek_modes[mode], &c->bc);
    return cursor_on(ix, c);
}

bool index_first(const struct table_index *ix, struct index_cursor *c)
{
    btree_first(&ix->tree, &c->bc);
    return cursor_on(ix, c);
}

bool index_last(const struct table_index *ix, struct index_cursor *c)
{
    btree_last(&ix->tree, &c->bc);
    return cursor_on(ix, c);
}

bool index_at(const struct table_index *ix, size_t rank, struct index_cursor *c)
{
    btree_at(&ix->tree, rank, &c->bc);
    return cursor_on(ix, c);
}

bool index_next(struct index_cursor *c) { return btree_next(&c->bc); }
bool index_prev(struct index_cursor *c) { return btree_prev(&c->bc); }

row *index_cursor_row(const struct index_cursor *c) { return btree_cursor_item(&c->bc); }

size_t index_count_below(const struct table_index *ix, const value *key,
                         uint32_t n, bool or_equal)
{
    struct probe p = { key, n, NULL };
    return btree_count_below(&ix->tree, probe_cmp, &p, or_equal);
}

size_t index_count_eq(const struct table_index *ix, const value *key, uint32_t n)
{
    return index_count_below(ix, key, n, true) - index_count_below(ix, key, n, false);
}

size_t index_count_below_row(const struct table_index *ix, const row *r,
                             bool or_equal)
{
    value key[INDEX_MAX_PARTS];
    row_key(ix, r, key);
    struct probe p = { key, ix->nparts, r };
    return btree_count_below(&ix->tree, probe_cmp, &p, or_equal);
}

/* ---- equality lookups ------------------------------------------------------------ */

static row *lookup_ordered_here(struct index_lookup *it, bool on)
{
    if (!on)
        return NULL;
    row *r = index_cursor_row(&it->c);
    struct probe p = { it->key, it->n, NULL };
    return probe_cmp((void *)it->ix, &p, r) == 0 ? r : NULL;
}

static row *lookup_hash_next(struct index_lookup *it)
{
    struct table_index *ix = (struct table_index *)it->ix;
    for (uint64_t *v; (v = hmap_probe(&ix->hash, it->hash, &it->pos));) {
        ix->work++;
        if (key_eq_vals(ix, it->key, slot_row(v)))
            return slot_row(v);
    }
    return NULL;
}

row *index_lookup_first(const struct table_index *ix, const value *key,
                        uint32_t n, struct index_lookup *it)
{
    it->ix = ix;
    it->key = key;
    it->n = n;
    if (ix->kind == INDEX_ORDERED)
        return lookup_ordered_here(it, index_seek(ix, key, n, IX_GE, &it->c));
    if (n != ix->nparts)
        return NULL;
    it->hash = key_hash_vals(ix, key);
    it->pos = UINT32_MAX;
    return lookup_hash_next(it);
}

row *index_lookup_next(struct index_lookup *it)
{
    if (it->ix->kind == INDEX_ORDERED)
        return lookup_ordered_here(it, index_next(&it->c));
    return lookup_hash_next(it);
}

/* ---- verification ------------------------------------------------------------------ */

static const char *check_ordered(const struct table_index *ix)
{
    const char *err = btree_check(&ix->tree);
    if (err)
        return err;
    btree_cursor c;
    const row *prev = NULL;
    for (bool on = btree_first(&ix->tree, &c); on; on = btree_next(&c)) {
        const row *r = btree_cursor_item(&c);
        if (prev && item_cmp((void *)ix, prev, r) >= 0)
            return "index entries out of order";
        if (prev && table_key_eq(ix->table, prev, r))
            return "two index entries for one primary key";
        if (table_lookup_row(ix->table, r) != r)
            return "index entry is not a current row";
        prev = r;
    }
    return NULL;
}

static const char *check_hash(const struct table_index *ix)
{
    uint32_t pos = 0;
    uint64_t h;
    for (uint64_t *v; (v = hmap_next(&ix->hash, &pos, &h));) {
        const row *r = slot_row(v);
        uint64_t want = key_hash_row(ix, r);
        if (h != want && !(want < 2 && h == want + 2))
            return "hash index entry under the wrong hash";
        if (table_lookup_row(ix->table, r) != r)
            return "hash index entry is not a current row";
    }
    return NULL;
}

const char *index_check(const struct table_index *ix)
{
    if (index_count(ix) != table_count(ix->table))
        return "index entry count differs from the table's row count";
    return ix->kind == INDEX_ORDERED ? check_ordered(ix) : check_hash(ix);
}
