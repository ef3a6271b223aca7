/*
 * table.c - the physical side of a table: the primary-key hash table, the
 * links from rows to indexes, scans, accounting and checks (table.h). The
 * logged writes that the SQL layer calls are in write.c.
 *
 * Atomicity without an undo of the undo: every change here first does all
 * that can fail (reserve hash room, add entries to indexes) and only then
 * what cannot (remove entries, store pointers). A failure part-way removes
 * what was added, which never allocates, so the table is left as it was.
 *
 * Undo without memory: removals are held deletes in ordered indexes
 * (index.h) and plain deletes in hash tables, so putting a row back into
 * a table that holds what it held right after the removal finds room in
 * every tree leaf and hash table (table_put_back, table_unrelink). The
 * store settles the trees when the transaction ends (table_settle).
 */
#include "storage/table.h"

#include "base/hash.h"
#include "base/hsort.h"
#include "base/mem.h"

#include <math.h>
#include <string.h>

/* ---- primary keys ------------------------------------------------------------ */

static inline enum ldb_collation key_coll(const struct table *t, uint32_t i)
{
    return t->schema.cols[t->schema.pk[i]].coll;
}

static uint64_t key_hash_vals(const struct table *t, const value *const *key)
{
    if (t->schema.npk == 1)
        return value_hash(key[0], key_coll(t, 0));
    uint64_t h = HASH_SEED;
    for (uint32_t i = 0; i < t->schema.npk; i++)
        h = hash_combine(h, value_hash(key[i], key_coll(t, i)));
    return h;
}

uint64_t table_key_hash(const struct table *t, const row *r)
{
    const value *key[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < t->schema.npk; i++)
        key[i] = &r->cols[t->schema.pk[i]];
    return key_hash_vals(t, key);
}

static inline int value_cmp_fast(const value *a, const value *b, enum ldb_collation c)
{
    if (value_type(a) == LDB_INTEGER && value_type(b) == LDB_INTEGER)
        return (a->h.u.i > b->h.u.i) - (a->h.u.i < b->h.u.i);
    return value_cmp(a, b, c);
}

int table_key_cmp(const struct table *t, const row *a, const row *b)
{
    for (uint32_t i = 0; i < t->schema.npk; i++) {
        uint32_t col = t->schema.pk[i];
        int c = value_cmp_fast(&a->cols[col], &b->cols[col], key_coll(t, i));
        if (c)
            return c;
    }
    return 0;
}

bool table_key_eq(const struct table *t, const row *a, const row *b)
{
    return a == b || table_key_cmp(t, a, b) == 0;
}

/* hmap equality callbacks: the probe names the table and the key. */
struct key_probe {
    const struct table *t;
    const row *r;          /* key taken from this row, or */
    const value *vals;     /* from these npk values */
};

static bool eq_probe(const void *key, uint64_t val)
{
    const struct key_probe *p = key;
    const row *stored = (const row *)(uintptr_t)val;
    const struct schema *sc = &p->t->schema;
    for (uint32_t i = 0; i < sc->npk; i++) {
        const value *a = p->r ? &p->r->cols[sc->pk[i]] : &p->vals[i];
        if (!value_eq(a, &stored->cols[sc->pk[i]], key_coll(p->t, i)))
            return false;
    }
    return true;
}

static uint64_t *find_slot(const struct table *t, const row *r, uint64_t h)
{
    struct key_probe p = { t, r, NULL };
    return hmap_get(&t->rows, h, eq_probe, &p);
}

row *table_lookup(const struct table *t, const value *key)
{
    const value *k[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < t->schema.npk; i++)
        k[i] = &key[i];
    struct key_probe p = { t, NULL, key };
    uint64_t *v = hmap_get(&t->rows, key_hash_vals(t, k), eq_probe, &p);
    return v ? (row *)(uintptr_t)*v : NULL;
}

uint64_t table_key_hash_of(const struct table *t, const value *key)
{
    const value *k[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < t->schema.npk; i++)
        k[i] = &key[i];
    return key_hash_vals(t, k);
}

bool table_key_matches(const struct table *t, const value *key, const row *r)
{
    struct key_probe p = { t, NULL, key };
    return eq_probe(&p, (uint64_t)(uintptr_t)r);
}

row *table_lookup_row(const struct table *t, const row *r)
{
    uint64_t *v = find_slot(t, r, table_key_hash(t, r));
    return v ? (row *)(uintptr_t)*v : NULL;
}

row *table_scan_next(struct table_scan *sc)
{
    uint64_t *v = hmap_next(&sc->t->rows, &sc->pos, NULL);
    return v ? (row *)(uintptr_t)*v : NULL;
}

/* ---- physical changes ------------------------------------------------------------- */

/*
 * Whether old's entry in ix must move for new_row: its key parts or the
 * primary key changed. An entry that stays is re-pointed in place, one
 * descent instead of an insert and a delete of cold rows, and it cannot
 * conflict: the rows it could meet are those old already did not.
 */
static bool entry_moves(const struct table_index *ix, const row *old,
                        const row *new_row, bool same_key)
{
    return !old || !same_key || index_key_cmp(ix, old, new_row, ix->nparts) != 0;
}

/* Adds new_row to the indexes where it replaces old's entry by moving
 * (every index when old is NULL), excluding old from conflicts; on
 * failure removes it from those it reached. */
static int add_to_indexes(struct table *t, row *new_row, const row *old,
                          bool same_key, row **conflict, int *where)
{
    for (size_t i = 0; i < t->indexes.len; i++) {
        struct table_index *ix = t->indexes.data[i];
        if (!entry_moves(ix, old, new_row, same_key))
            continue;
        int rc = index_add(ix, new_row, old, conflict);
        if (rc != LDB_OK) {
            *where = (int)i;
            while (i-- > 0)
                if (entry_moves(t->indexes.data[i], old, new_row, same_key))
                    index_remove(t->indexes.data[i], new_row);
            return rc;
        }
    }
    return LDB_OK;
}

/* Puts rows into the key table in the order of the slots their hashes
 * take once it has room for all: the puts walk the table instead of
 * missing the cache once per row (a million rows at recovery). */
int table_link_unindexed(struct table *t, row **rows, size_t n, row **conflict)
{
    *conflict = NULL;
    if (n > UINT32_MAX / 2)
        return LDB_NOMEM;
    struct hkey *keys = mem_alloc((2 * n + 1) * sizeof *keys);
    int rc = keys ? hmap_reserve(&t->rows, (uint32_t)n) : LDB_NOMEM;
    if (rc) {
        mem_free(keys);
        return rc;
    }
    size_t bytes = 0; /* while each row is read in order: not after the sort */
    for (size_t i = 0; i < n; i++) {
        keys[i] = (struct hkey){ table_key_hash(t, rows[i]), i };
        bytes += row_mem(rows[i]);
    }
    uint32_t mask = t->rows.mask;
    unsigned bits = 1;
    while (bits < 32 && ((mask >> bits) & 1))
        bits++;
    struct hkey *k = hsort_field(keys, keys + n, n, 0, bits);
    size_t linked = 0;
    for (; linked < n; linked++) {
        row *r = rows[k[linked].idx];
        struct key_probe p = { t, r, NULL };
        uint64_t *v;
        bool found;
        hmap_put(&t->rows, k[linked].hash, eq_probe, &p, &v, &found); /* room reserved */
        if (found) {
            *conflict = (row *)(uintptr_t)*v;
            break;
        }
        *v = (uint64_t)(uintptr_t)r;
    }
    for (size_t i = 0; *conflict && i < linked; i++) /* a conflict takes them back */
        hmap_del(&t->rows, find_slot(t, rows[k[i].idx], k[i].hash));
    if (!*conflict) {
        t->row_bytes += bytes;
        t->changes += n;
    }
    mem_free(keys);
    return *conflict ? LDB_CONSTRAINT : LDB_OK;
}

int table_link(struct table *t, row *r, row **conflict, int *where)
{
    *conflict = NULL;
    *where = -1;
    uint64_t h = table_key_hash(t, r);
    int rc = hmap_reserve(&t->rows, 1);
    if (rc != LDB_OK)
        return rc;
    uint64_t *v = find_slot(t, r, h);
    if (v) {
        *conflict = (row *)(uintptr_t)*v;
        return LDB_CONSTRAINT;
    }
    rc = add_to_indexes(t, r, NULL, false, conflict, where);
    if (rc != LDB_OK)
        return rc;
    bool found;
    hmap_put(&t->rows, h, NULL, NULL, &v, &found); /* room reserved above */
    *v = (uint64_t)(uintptr_t)r;
    t->row_bytes += row_mem(r);
    t->changes++;
    return LDB_OK;
}

int table_relink(struct table *t, row *old, row *new_row, row **conflict, int *where)
{
    *conflict = NULL;
    *where = -1;
    bool same_key = table_key_eq(t, old, new_row);
    uint64_t h_old = table_key_hash(t, old);
    uint64_t h_new = same_key ? h_old : table_key_hash(t, new_row);
    if (!same_key) {
        int rc = hmap_reserve(&t->rows, 1);
        if (rc != LDB_OK)
            return rc;
        uint64_t *v = find_slot(t, new_row, h_new);
        if (v) {
            *conflict = (row *)(uintptr_t)*v;
            return LDB_CONSTRAINT;
        }
    }
    int rc = add_to_indexes(t, new_row, old, same_key, conflict, where);
    if (rc != LDB_OK)
        return rc;
    for (size_t i = 0; i < t->indexes.len; i++) {
        struct table_index *ix = t->indexes.data[i];
        if (entry_moves(ix, old, new_row, same_key))
            index_remove(ix, old);
        else
            index_replace(ix, old, new_row);
    }
    uint64_t *v = find_slot(t, old, h_old);
    if (same_key) {
        *v = (uint64_t)(uintptr_t)new_row;
    } else {
        hmap_del(&t->rows, v);
        bool found;
        hmap_put(&t->rows, h_new, NULL, NULL, &v, &found); /* room reserved */
        *v = (uint64_t)(uintptr_t)new_row;
    }
    t->row_bytes += row_mem(new_row);
    t->row_bytes -= row_mem(old);
    t->changes++;
    return LDB_OK;
}

void table_unlink(struct table *t, row *r)
{
    for (size_t i = 0; i < t->indexes.len; i++)
        index_remove(t->indexes.data[i], r);
    hmap_del(&t->rows, find_slot(t, r, table_key_hash(t, r)));
    t->row_bytes -= row_mem(r);
    t->changes++;
}

/* ---- undo ------------------------------------------------------------------------ */

int table_put_back(struct table *t, row *r)
{
    int rc = LDB_OK;
    for (size_t i = 0; i < t->indexes.len; i++)
        if (index_put_back(t->indexes.data[i], r) != LDB_OK)
            rc = LDB_INTERNAL;
    *hmap_put_back(&t->rows, table_key_hash(t, r)) = (uint64_t)(uintptr_t)r;
    t->row_bytes += row_mem(r);
    return rc;
}

int table_unrelink(struct table *t, row *new_row, row *old)
{
    int rc = LDB_OK;
    bool same_key = table_key_eq(t, old, new_row);
    for (size_t i = 0; i < t->indexes.len; i++) {
        struct table_index *ix = t->indexes.data[i];
        if (!entry_moves(ix, old, new_row, same_key)) {
            index_replace(ix, new_row, old);
            continue;
        }
        index_remove(ix, new_row);
        if (index_put_back(ix, old) != LDB_OK)
            rc = LDB_INTERNAL;
    }
    uint64_t *v = find_slot(t, new_row, table_key_hash(t, new_row));
    if (!same_key) {
        hmap_del(&t->rows, v);
        v = hmap_put_back(&t->rows, table_key_hash(t, old));
    }
    *v = (uint64_t)(uintptr_t)old;
    t->row_bytes += row_mem(old);
    t->row_bytes -= row_mem(new_row);
    return rc;
}

bool table_unsettled(const struct table *t)
{
    for (size_t i = 0; i < t->indexes.len; i++)
        if (index_unsettled(t->indexes.data[i]))
            return true;
    return false;
}

void table_settle(struct table *t)
{
    for (size_t i = 0; i < t->indexes.len; i++)
        index_settle(t->indexes.data[i]);
}

/* ---- accounting, teardown, checks ----------------------------------------------- */

size_t table_bytes(const struct table *t)
{
    size_t n = sizeof *t + strlen(t->name) + 1 + (t->sql ? strlen(t->sql) + 1 : 0);
    n += schema_bytes(&t->schema) + t->row_bytes + hmap_bytes(&t->rows);
    return n + t->indexes.cap * sizeof *t->indexes.data;
}

/* ---- statistics ------------------------------------------------------------------- */

#define SAMPLE_ROWS 512
#define SAMPLE_SLOTS 1024 /* a power of two, twice SAMPLE_ROWS */

/* Distinct values among the first SAMPLE_ROWS rows in storage order: d of
 * them, f1 seen once. With s sampled of n, sqrt(n / s) * f1 + (d - f1)
 * estimates the table's count (the GEE estimator: a value seen once
 * stands for sqrt(n / s) values, one seen more for itself). */
static double sample_column(const struct table *t, uint32_t col)
{
    uint64_t hash[SAMPLE_SLOTS];
    uint16_t seen[SAMPLE_SLOTS];
    memset(seen, 0, sizeof seen);
    size_t s = 0, n = table_count(t);
    double d = 0, f1 = 0;
    uint32_t pos = 0;
    for (uint64_t *v; s < SAMPLE_ROWS && (v = hmap_next(&t->rows, &pos, NULL)); s++) {
        const row *r = (const row *)(uintptr_t)*v;
        uint64_t h = value_hash(&r->cols[col], LDB_COLL_BINARY) | 1;
        uint32_t i = (uint32_t)h & (SAMPLE_SLOTS - 1);
        while (seen[i] && hash[i] != h)
            i = (i + 1) & (SAMPLE_SLOTS - 1);
        hash[i] = h;
        d += seen[i] == 0;
        f1 += seen[i] == 0 ? 1 : seen[i] == 1 ? -1 : 0;
        seen[i]++;
    }
    if (s == n)
        return d;
    double est = sqrt((double)n / (double)s) * f1 + (d - f1);
    return est < d ? d : est > (double)n ? (double)n : est;
}

double table_distinct_estimate(struct table *t, uint32_t col)
{
    if (!t->stats)
        t->stats = mem_calloc(t->schema.ncols, sizeof *t->stats);
    struct column_stats *cs = t->stats ? &t->stats[col] : NULL;
    if (cs && cs->known && (t->changes - cs->at) * 8 <= table_count(t))
        return cs->distinct;
    double d = sample_column(t, col);
    if (cs)
        *cs = (struct column_stats){ d, t->changes, true };
    return d;
}

void table_forget_statistics(struct table *t)
{
    for (uint32_t c = 0; t->stats && c < t->schema.ncols; c++)
        t->stats[c].known = false;
    for (size_t i = 0; i < t->indexes.len; i++)
        t->indexes.data[i]->distinct_known = false;
}

void table_free(struct table *t)
{
    if (!t)
        return;
    if (t->on_free)
        t->on_free(t->on_free_ctx);
    uint32_t pos = 0;
    for (uint64_t *v; (v = hmap_next(&t->rows, &pos, NULL));)
        row_release((row *)(uintptr_t)*v);
    hmap_free(&t->rows);
    for (size_t i = 0; i < t->indexes.len; i++) {
        index_destroy(t->indexes.data[i]);
        mem_free(t->indexes.data[i]);
    }
    vec_free(&t->indexes);
    mem_free(t->stats);
    schema_free(&t->schema);
    mem_free(t->name);
    mem_free(t->sql);
    mem_free(t);
}

static bool type_allowed(enum col_type ct, enum ldb_type vt)
{
    switch (ct) {
    case COL_ANY: return true;
    case COL_INTEGER: return vt == LDB_INTEGER;
    case COL_REAL: return vt == LDB_REAL;
    case COL_TEXT: return vt == LDB_TEXT;
    case COL_BLOB: return vt == LDB_BLOB;
    case COL_BOOLEAN: return vt == LDB_BOOLEAN;
    case COL_NUMERIC: return vt == LDB_INTEGER || vt == LDB_REAL;
    }
    return false;
}

static const char *check_row(const struct table *t, const row *r)
{
    if (r->ncols != t->schema.ncols)
        return "row with the wrong column count";
    for (uint32_t i = 0; i < r->ncols; i++) {
        const struct column *c = &t->schema.cols[i];
        if (value_is_null(&r->cols[i])) {
            if (c->not_null)
                return "NULL in a NOT NULL column";
        } else if (!type_allowed(c->type, value_type(&r->cols[i]))) {
            return "value of a type its column does not accept";
        }
    }
    if (table_lookup_row(t, r) != r)
        return "row not found by its own key";
    return NULL;
}

const char *table_check(const struct table *t)
{
    uint32_t pos = 0;
    size_t bytes = 0, n = 0;
    for (uint64_t *v; (v = hmap_next(&t->rows, &pos, NULL));) {
        const row *r = (const row *)(uintptr_t)*v;
        const char *err = check_row(t, r);
        if (err)
            return err;
        bytes += row_mem(r);
        n++;
    }
    if (n != table_count(t))
        return "key table count is wrong";
    if (bytes != t->row_bytes)
        return "row byte total is wrong";
    for (size_t i = 0; i < t->indexes.len; i++) {
        const char *err = index_check(t->indexes.data[i]);
        if (err)
            return err;
    }
    return NULL;
}
