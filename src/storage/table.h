/*
 * table.h - a table: its schema, its rows found by primary key, its
 * indexes, and the writes the SQL layer makes to it.
 *
 * Rows are stored once, as refcounted immutable rows (value/row.h): the
 * primary-key hash table holds one reference to each current row, and
 * every index points at the same row. An update makes a new row and
 * swaps it in. The key hash table maps the hash of the key columns
 * (under their collations) to the row, so a key lookup is one hash and
 * usually one probe.
 *
 * Invariants, between calls:
 * - every current row is in the key table and in every index exactly once;
 * - no two rows have equal keys; no two rows have equal non-NULL keys in a
 *   unique index;
 * - NOT NULL columns hold no NULL; every value has its column's type under
 *   the affinity rule (schema.h);
 * - row_bytes is the sum of row_mem over the current rows.
 *
 * Writes go through the store (they are logged for rollback and change
 * capture) and must happen inside a statement (store_stmt_begin). Each
 * write is atomic: when it fails, with any code, the table and all its
 * indexes are exactly as before the call.
 *
 * Ownership: the store owns tables; a struct table pointer stays valid
 * until a DROP TABLE that dropped it is committed (or a CREATE TABLE that
 * made it is rolled back). Rows returned here are borrowed: valid until
 * the next write to the table; row_retain keeps one longer.
 */
#ifndef LDB_STORAGE_TABLE_H
#define LDB_STORAGE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hmap.h"
#include "base/vec.h"
#include "storage/index.h"
#include "storage/schema.h"
#include "value/row.h"

struct store;

struct table {
    char *name;                /* owned */
    char *sql;                 /* owned DDL text, may be NULL */
    struct schema schema;
    struct store *store;
    hmap rows;                 /* key hash -> row (one reference each) */
    size_t row_bytes;          /* sum of row_mem of current rows */
    VEC(struct table_index *) indexes;
    int64_t rowid_max;         /* largest automatic-key value ever stored */
    bool readonly;             /* user writes rejected (store_enter_internal) */
    uint8_t loading;           /* enum table_loading */
    uint32_t pending;          /* rows under pending optimistic writes (the
                                  source layer keeps it): user writes outside
                                  optimistic mode are refused while nonzero */
    bool dropped;              /* dropped in the open transaction */
    bool unsettled;            /* on the store's list of tables to settle */
    struct table *unsettled_next; /* that list (store_impl.h) */
    void (*on_free)(void *ctx); /* see table_set_on_free */
    void *on_free_ctx;
    uint64_t changes;          /* rows linked, relinked and unlinked, ever */
    struct column_stats *stats; /* per column, made on first use; or NULL */
    bool key_nulls;            /* made with table_opts.key_nulls */
    bool temp;                 /* TEMP (table_def.temp): not logged, not in
                                  snapshots; gone at close */
};

/* table_distinct_estimate's figure for one column. */
struct column_stats {
    double distinct;
    uint64_t at;               /* table changes when it was made */
    bool known;
};

/* ---- schema and metadata ------------------------------------------------------ */

static inline const char *table_name(const struct table *t) { return t->name; }
static inline const struct schema *table_schema(const struct table *t)
{
    return &t->schema;
}
/* The DDL text given at create, or NULL. */
static inline const char *table_sql(const struct table *t) { return t->sql; }
static inline size_t table_count(const struct table *t) { return hmap_count(&t->rows); }
static inline size_t table_index_count(const struct table *t) { return t->indexes.len; }
static inline struct table_index *table_index_at(const struct table *t, size_t i)
{
    return t->indexes.data[i];
}

/*
 * Marks the table read-only for users: writes (and DROP TABLE) then fail
 * with LDB_ERROR "table <name> may not be modified" unless made between
 * store_enter_internal and store_leave_internal. Not transactional.
 */
static inline void table_set_readonly(struct table *t, bool on) { t->readonly = on; }

/*
 * Where the rows of a table come from: its own writes (LOCAL), or a source
 * that loads them (src/source): all at once (EAGER) or as live queries
 * demand them (ON_DEMAND). Live queries turn their scans of a loading
 * table into demand. Set by the source layer; not transactional.
 */
enum table_loading { TABLE_LOCAL, TABLE_EAGER, TABLE_ON_DEMAND };
static inline void table_set_loading(struct table *t, enum table_loading l)
{
    t->loading = (uint8_t)l;
}

/*
 * Asks to be told when the store frees t: its creation rolled back, its
 * drop committed, or the store closed. fn(ctx) runs once, first thing in
 * table_free (t is still whole), and must not call the store; the layer
 * that made t (materialized views) forgets it there. NULL fn: no call.
 */
static inline void table_set_on_free(struct table *t, void (*fn)(void *ctx), void *ctx)
{
    t->on_free = fn;
    t->on_free_ctx = ctx;
}

/* Whether t has a declared PRIMARY KEY, not the hidden rowid. */
static inline bool table_declared_key(const struct table *t)
{
    return t->schema.npk > 0 && !t->schema.cols[t->schema.pk[0]].hidden;
}

/* A layer's own table that users may not write: read-only without a
 * source (a materialized view's backing table). */
static inline bool table_is_view_store(const struct table *t)
{
    return t->readonly && t->loading == TABLE_LOCAL;
}

/* Bytes held by the table: rows, key table, schema (not its indexes). */
size_t table_bytes(const struct table *t);
/* Distinct values of column col (under BINARY), estimated from a sample
 * of rows in storage order (which is key-hash order, so a spread of the
 * table) and kept until an eighth of the rows changed: exact up to the
 * sample's size. For the planner's statistics; never fails (without
 * memory for the cache it samples each time). */
double table_distinct_estimate(struct table *t, uint32_t col);
/* Drops the table's and its indexes' sampled statistics (ANALYZE): the
 * next estimate samples again. */
void table_forget_statistics(struct table *t);

/* ---- reading ---------------------------------------------------------------- */

/* The row whose primary key equals key[0..npk) (in key order, values of
 * the key columns' types), or NULL. O(1) expected. */
row *table_lookup(const struct table *t, const value *key);
/* The current row with the same primary key as r, or NULL. */
row *table_lookup_row(const struct table *t, const row *r);
/* For maps kept beside a table (keyed like its rows): the hash of the
 * primary key key[0..npk) (key order), as the table hashes it, and
 * whether row r has that key (under the key columns' collations). */
uint64_t table_key_hash_of(const struct table *t, const value *key);
bool table_key_matches(const struct table *t, const value *key, const row *r);

/*
 * Full scan in an unspecified order that is the same between writes.
 *     struct table_scan sc = table_scan_begin(t);
 *     for (row *r; (r = table_scan_next(&sc)); ) ...
 * A write to the table invalidates the scan.
 */
struct table_scan {
    struct table *t;
    uint32_t pos;
};
static inline struct table_scan table_scan_begin(struct table *t)
{
    struct table_scan sc = { t, 0 };
    return sc;
}
row *table_scan_next(struct table_scan *sc);

/* ---- writing ------------------------------------------------------------------ */

/*
 * Inserts a row made from vals[0..nvisible): one value per declared
 * column, in declaration order (the caller fills omitted columns with
 * their defaults, schema.cols[i].dflt). Values are converted by the
 * affinity rule; an auto-rowid key given as NULL (or the hidden rowid)
 * gets rowid_max + 1. vals is borrowed.
 * On LDB_OK, *out (if not NULL) is the stored row (borrowed).
 * Errors (table unchanged, message in store_errmsg):
 *   LDB_CONSTRAINT  NOT NULL, PRIMARY KEY or UNIQUE violated. For a key
 *                   conflict *out is the existing row that conflicts, so
 *                   the caller can implement OR IGNORE / OR REPLACE /
 *                   ON CONFLICT DO UPDATE; otherwise *out is NULL.
 *   LDB_TYPE        a value the column does not accept
 *   LDB_ERROR       read-only table
 *   LDB_MISUSE      no open statement, or a dropped table
 *   LDB_NOMEM
 */
int table_insert(struct store *s, struct table *t, const value *vals, row **out);

/*
 * Replaces the current row old (as returned by a lookup or scan) with a
 * row made from vals[0..nvisible) (hidden columns keep old's values). The
 * primary key may change. Same errors as table_insert (a key conflict
 * sets *out to the conflicting row); LDB_MISUSE if old is not current.
 * An update that changes no value (identity, value_identical) is a no-op
 * that logs nothing and returns old in *out.
 */
int table_update(struct store *s, struct table *t, row *old, const value *vals,
                 row **out);

/* Deletes the current row old. LDB_MISUSE if old is not current. */
int table_delete(struct store *s, struct table *t, row *old);

/* ---- used inside the storage layer -------------------------------------------- */

/* Hash and equality of primary keys (consistent with each other). */
uint64_t table_key_hash(const struct table *t, const row *r);
bool table_key_eq(const struct table *t, const row *a, const row *b);
/* Order of the primary keys of two rows (ascending, under collations). */
int table_key_cmp(const struct table *t, const row *a, const row *b);

/*
 * Physical changes, each atomic and unlogged (the store logs them):
 * link adds a row to the key table and every index (LDB_CONSTRAINT with
 * *conflict and *where = index position or -1 for the primary key, or
 * LDB_NOMEM); relink replaces old by new everywhere (same errors; old is
 * excluded from conflicts; an index entry whose key parts and primary key
 * did not change is re-pointed in place); unlink removes a row and never
 * fails. The table's reference to the row passes in (link/relink: the
 * caller's reference to new becomes the table's) and out (unlink/relink:
 * the caller receives the table's reference to the removed row).
 */
int table_link(struct table *t, row *r, row **conflict, int *where);
int table_relink(struct table *t, row *old, row *new_row, row **conflict,
                 int *where);
/* table_link of rows[0..n) into the key table alone, for recovery, which
 * then builds every index of t over all its rows at once (index_build,
 * index_build_sorted): until it has, the indexes miss rows. All or
 * nothing: LDB_NOMEM, or LDB_CONSTRAINT with *conflict (a stored row, or
 * one of rows: two with one key) links none, and the references stay the
 * caller's. */
int table_link_unindexed(struct table *t, row **rows, size_t n, row **conflict);
void table_unlink(struct table *t, row *r);

/*
 * Undo, without memory: put_back reverses unlink(r), unrelink reverses
 * relink(old, new_row), each when the table holds exactly what it held
 * right after that change and was not settled since (the undo log's
 * order gives both). References pass back the same way. LDB_INTERNAL,
 * with the change still made, only if that condition was broken.
 */
int table_put_back(struct table *t, row *r);
int table_unrelink(struct table *t, row *new_row, row *old);
/* Whether removals left index trees to settle; settling them (merges and
 * frees, no allocation), which must wait for the end of the transaction:
 * an undo still to come may need the shapes removals left. */
bool table_unsettled(const struct table *t);
void table_settle(struct table *t);

/* Frees everything the table owns: rows, indexes, schema (and t). */
void table_free(struct table *t);

/* Checks every invariant above against the indexes: NULL or the first
 * problem. O(n log n), for tests. */
const char *table_check(const struct table *t);

#endif
