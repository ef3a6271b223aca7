/*
 * write.c - writing a view's rows into its backing table.
 *
 * Every arm ends here: a row is addressed by its key (the backing table's
 * primary key, canonical equality under the key's collations), and a row
 * whose values are identical (value_identical, so 5 -> 5.0 is a change)
 * to the stored one is not written at all (MV-016): no log entry, so no
 * change reaches consumers, live queries or the counters of written rows.
 *
 * A view with an empty key (a scalar aggregate) has at most one row, kept
 * in a table with a hidden rowid.
 *
 * Writes to the read-only backing table happen in the store's internal
 * mode, one write at a time, so a user statement never runs in it.
 */
#include "mv/mv_internal.h"

#include "base/hash.h"
#include "base/hmap.h"

#include <string.h>

row *mv_lookup(struct mv_view *v, const value *vals)
{
    const struct mv_layout *l = &v->lay;
    if (l->npk == 0) {
        struct table_scan sc = table_scan_begin(v->backing);
        return table_scan_next(&sc);
    }
    value key[SCHEMA_MAX_KEY];
    for (uint32_t i = 0; i < l->npk; i++)
        key[i] = vals[l->pk[i]];
    return table_lookup(v->backing, key);
}

static bool same_values(const row *r, const value *vals, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!value_identical(&r->cols[i], &vals[i]))
            return false;
    return true;
}

static int internal_write(struct mv_view *v, row *old, const value *vals)
{
    struct store *st = v->reg->store;
    store_enter_internal(st);
    int rc = old ? table_update(st, v->backing, old, vals, NULL)
                 : table_insert(st, v->backing, vals, NULL);
    store_leave_internal(st);
    return rc;
}

int mv_put(struct mv_view *v, const value *vals)
{
    row *old = mv_lookup(v, vals);
    if (old && same_values(old, vals, v->lay.ncols)) {
        v->c.suppressed++;
        return LDB_OK;
    }
    int rc = internal_write(v, old, vals);
    if (rc == LDB_OK)
        v->c.written++;
    return rc;
}

int mv_remove(struct mv_view *v, const value *vals)
{
    row *old = mv_lookup(v, vals);
    if (!old)
        return store_error(v->reg->store, LDB_INTERNAL,
                           "materialized view %s has no row for a key it had", v->name);
    struct store *st = v->reg->store;
    store_enter_internal(st);
    int rc = table_delete(st, v->backing, old);
    store_leave_internal(st);
    if (rc == LDB_OK)
        v->c.written++;
    return rc;
}

/* ---- keys of rows ---------------------------------------------------------------- */

/* Key part i of row r, whose backing column j is r->cols[map[j]] (map
 * NULL: r is a backing row). */
static const value *key_part(const struct mv_view *v, const row *r, const uint32_t *map,
                             uint32_t i)
{
    uint32_t c = v->lay.pk[i];
    return &r->cols[map ? map[c] : c];
}

static uint64_t key_hash(const struct mv_view *v, const row *r, const uint32_t *map)
{
    const struct mv_layout *l = &v->lay;
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < l->npk; i++)
        h = hash_combine(h, value_hash(key_part(v, r, map, i), l->colls[l->pk[i]]));
    return h;
}

static bool keys_equal(const struct mv_view *v, const row *a, const uint32_t *amap,
                       const row *b, const uint32_t *bmap)
{
    const struct mv_layout *l = &v->lay;
    for (uint32_t i = 0; i < l->npk; i++)
        if (!value_eq(key_part(v, a, amap, i), key_part(v, b, bmap, i), l->colls[l->pk[i]]))
            return false;
    return true;
}

/* An index of result rows by key. */
struct key_index {
    const struct mv_view *v;
    const uint32_t *map;
    row *const *rows;
    hmap h;
};

struct key_probe {
    const struct key_index *ix;
    const row *r;
    const uint32_t *map;
};

static bool probe_eq(const void *key, uint64_t val)
{
    const struct key_probe *p = key;
    return keys_equal(p->ix->v, p->ix->rows[val], p->ix->map, p->r, p->map);
}

static int index_rows(struct key_index *ix, size_t n)
{
    if (n > UINT32_MAX / 2 || hmap_reserve(&ix->h, (uint32_t)n))
        return LDB_NOMEM;
    for (size_t i = 0; i < n; i++) {
        struct key_probe p = { ix, ix->rows[i], ix->map };
        uint64_t *slot;
        bool found;
        if (hmap_put(&ix->h, key_hash(ix->v, ix->rows[i], ix->map), probe_eq, &p, &slot, &found))
            return LDB_NOMEM;
        *slot = i;
    }
    return LDB_OK;
}

static bool index_has(const struct key_index *ix, const row *r, const uint32_t *map)
{
    struct key_probe p = { ix, r, map };
    return hmap_get(&ix->h, key_hash(ix->v, r, map), probe_eq, &p) != NULL;
}

/* Values of the backing row made from result row r. */
static void backing_values(const struct mv_view *v, const row *r, const uint32_t *map,
                           value *vals)
{
    for (uint32_t j = 0; j < v->lay.ncols; j++)
        vals[j] = r->cols[map[j]];
}

/* A buffer of ncols values: on the stack when small. */
struct vals_buf {
    value small[64];
    value *p;
};

static value *vals_get(struct vals_buf *b, uint32_t n)
{
    b->p = n <= 64 ? b->small : mem_alloc(n * sizeof *b->p);
    return b->p;
}

static void vals_put(struct vals_buf *b)
{
    if (b->p != b->small)
        mem_free(b->p);
}

static int nomem_or(struct mv_view *v, int rc)
{
    return rc == LDB_NOMEM ? store_error(v->reg->store, rc, "out of memory") : rc;
}

/* ---- batches of result changes ------------------------------------------------- */

#define SMALL_BATCH 8

/* Whether a +1 entry has r's key: a removal that is really an update. */
static bool key_reinserted(const struct key_index *ix, const df_entry *e, size_t n,
                           const row *r)
{
    if (n > SMALL_BATCH)
        return index_has(ix, r, ix->map);
    for (size_t i = 0; i < n; i++)
        if (e[i].w > 0 && keys_equal(ix->v, e[i].r, ix->map, r, ix->map))
            return true;
    return false;
}

static int apply_entries(struct mv_view *v, const struct key_index *ix, const df_entry *e,
                         size_t n, value *vals)
{
    int rc = LDB_OK;
    for (size_t i = 0; i < n && rc == LDB_OK; i++) {
        if (e[i].w > 0 || key_reinserted(ix, e, n, e[i].r))
            continue;
        backing_values(v, e[i].r, ix->map, vals);
        rc = mv_remove(v, vals);
    }
    for (size_t i = 0; i < n && rc == LDB_OK; i++) {
        if (e[i].w < 0)
            continue;
        backing_values(v, e[i].r, ix->map, vals);
        rc = mv_put(v, vals);
    }
    return rc;
}

/* The rows of the +1 entries, for the index of a large batch. */
static int inserted_rows(const df_entry *e, size_t n, row ***out, size_t *nout)
{
    row **rows = mem_alloc((n ? n : 1) * sizeof *rows);
    if (!rows)
        return LDB_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].w > 0)
            rows[k++] = e[i].r;
    *out = rows;
    *nout = k;
    return LDB_OK;
}

int mv_write_batch(struct mv_view *v, const df_entry *e, size_t n, const uint32_t *map)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].w != 1 && e[i].w != -1)
            return store_error(v->reg->store, LDB_INTERNAL,
                               "materialized view %s: the body gave two copies of a row "
                               "under one key", v->name);
    struct key_index ix = { v, map, NULL, HMAP_INIT };
    row **ins = NULL;
    size_t nins = 0;
    struct vals_buf vb;
    value *vals = vals_get(&vb, v->lay.ncols);
    int rc = vals ? LDB_OK : LDB_NOMEM;
    if (rc == LDB_OK && n > SMALL_BATCH && (rc = inserted_rows(e, n, &ins, &nins)) == LDB_OK) {
        ix.rows = ins;
        rc = index_rows(&ix, nins);
    }
    if (rc == LDB_OK)
        rc = apply_entries(v, &ix, e, n, vals);
    if (vals)
        vals_put(&vb);
    hmap_free(&ix.h);
    mem_free(ins);
    return nomem_or(v, rc);
}

/* ---- replacing the whole content -------------------------------------------------- */

typedef VEC(row *) row_vec;

/* Stored rows whose key no result row has (retained). */
static int stale_rows(struct mv_view *v, const struct key_index *ix, row_vec *gone)
{
    struct table_scan sc = table_scan_begin(v->backing);
    for (row *r; (r = table_scan_next(&sc));) {
        if (index_has(ix, r, NULL))
            continue;
        if (vec_push(gone, r))
            return LDB_NOMEM;
        row_retain(r);
    }
    return LDB_OK;
}

static int delete_rows(struct mv_view *v, row *const *rows, size_t n)
{
    struct store *st = v->reg->store;
    int rc = LDB_OK;
    store_enter_internal(st);
    for (size_t i = 0; i < n && rc == LDB_OK; i++)
        if ((rc = table_delete(st, v->backing, rows[i])) == LDB_OK)
            v->c.written++;
    store_leave_internal(st);
    return rc;
}

static int put_rows(struct mv_view *v, row *const *rows, size_t n, const uint32_t *map)
{
    struct vals_buf vb;
    value *vals = vals_get(&vb, v->lay.ncols);
    if (!vals)
        return LDB_NOMEM;
    int rc = LDB_OK;
    for (size_t i = 0; i < n && rc == LDB_OK; i++) {
        backing_values(v, rows[i], map, vals);
        rc = mv_put(v, vals);
    }
    vals_put(&vb);
    return rc;
}

int mv_write_all(struct mv_view *v, row *const *rows, size_t n, const uint32_t *map)
{
    if (v->lay.npk == 0 && n > 1)
        return store_error(v->reg->store, LDB_INTERNAL,
                           "materialized view %s: more than one row without a key", v->name);
    struct key_index ix = { v, map, rows, HMAP_INIT };
    row_vec gone = VEC_INIT;
    int rc = index_rows(&ix, n);
    if (rc == LDB_OK)
        rc = stale_rows(v, &ix, &gone);
    if (rc == LDB_OK)
        rc = delete_rows(v, gone.data, gone.len);
    if (rc == LDB_OK)
        rc = put_rows(v, rows, n, map);
    for (size_t i = 0; i < gone.len; i++)
        row_release(gone.data[i]);
    vec_free(&gone);
    hmap_free(&ix.h);
    return nomem_or(v, rc);
}
