/*
 * index.h - secondary indexes of a table: ordered (a counted B+tree) and
 * hash (equality only).
 *
 * Entries are the table's own row pointers: an index holds no copy of a
 * key and allocates nothing per entry beyond its tree or hash nodes. The
 * index order is total over the rows of a table:
 *     key parts (each ASC/DESC, NULLS FIRST/LAST, under its collation),
 *     then the primary key (ascending, under the key columns' collations).
 * Two versions of one row that coexist for an instant inside an update
 * (the new one is linked before the old one is unlinked, so that a
 * failed allocation changes nothing) differ in one or the other; an
 * update that changes neither re-points the entry in place
 * (index_replace). Rows equal in both compare equal: so a deleted row
 * that an ordered index still holds as a separator (btree.h, held
 * deletes) and a later row with its key and primary key sort alike, and
 * an entry re-pointed in place keeps its place against both.
 *
 * Removals are held deletes: they keep the tree's shape, so that putting
 * the row back (index_put_back, undo) needs no memory; the store settles
 * the trees when the transaction ends (index_settle). A tree keeps a
 * deleted row it still uses as a separator alive (row_retain).
 *
 * NULLS FIRST/LAST name the place of NULL in the index order itself,
 * whatever the direction: (a DESC NULLS FIRST) puts NULL before every
 * value. NaN is above every other number and -0.0 equals 0 (value order).
 *
 * Ownership: the store creates and frees indexes (store_create_index,
 * store_drop_index); everything here borrows. Rows returned by lookups and
 * cursors are borrowed: valid until the next write to the table (retain
 * them to keep them longer). Any write to the table invalidates every
 * cursor on its indexes.
 *
 * Work: every index has a counter of entries and nodes visited (btree.h
 * says what counts); index_work reads it and index_work_reset clears it,
 * so a caller can measure one operation as a difference.
 */
#ifndef LDB_STORAGE_INDEX_H
#define LDB_STORAGE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/btree.h"
#include "base/hmap.h"
#include "storage/schema.h"
#include "value/row.h"

struct table;

#define INDEX_MAX_PARTS SCHEMA_MAX_KEY

enum index_kind {
    INDEX_ORDERED = 0,
    INDEX_HASH = 1 /* equality lookups only (CREATE INDEX ... USING HASH) */
};

/* One key column of an index. */
struct key_part {
    uint32_t col;              /* position in the table's columns */
    bool desc;
    bool nulls_first;          /* NULL's place in the index order */
    enum ldb_collation coll;
};

/* The default null placement of a part: NULL is the smallest value, so
 * first when ascending and last when descending. */
static inline bool key_part_default_nulls_first(bool desc) { return !desc; }

struct index_def {
    const char *name;          /* borrowed */
    enum index_kind kind;
    bool unique;               /* NULLs are distinct: a key with a NULL part
                                  never conflicts */
    const struct key_part *parts;
    uint32_t nparts;           /* 1..INDEX_MAX_PARTS */
    const char *sql;           /* DDL text for .schema; may be NULL */
};

struct table_index {
    char *name;                /* owned */
    char *sql;                 /* owned, may be NULL */
    struct table *table;
    enum index_kind kind;
    bool unique;
    bool automatic;            /* made for a UNIQUE constraint: not droppable */
    uint32_t nparts;
    struct key_part parts[INDEX_MAX_PARTS];
    btree tree;                /* INDEX_ORDERED: rows in index order */
    hmap hash;                 /* INDEX_HASH: key hash -> row (multimap) */
    uint64_t work;             /* entries and nodes visited, see above */
    uint64_t changes;          /* entries added and removed, ever */
    double distinct;           /* index_distinct_estimate's last figure, */
    uint64_t distinct_at;      /* made when changes was this */
    bool distinct_known;
};

/* ---- reading ordered indexes ---------------------------------------------- */

/*
 * Probe keys are values for the first n key parts (0 <= n <= nparts),
 * compared under each part's direction, null placement and collation, so
 * a short key names a prefix: every entry whose first n parts equal it
 * compares equal to it. Values are compared as they are (no affinity):
 * pass values of the column's type (column_coerce) to match stored ones.
 */
enum index_seek_mode {
    IX_GE, /* first entry >= key */
    IX_GT, /* first entry >  key */
    IX_LE, /* last entry  <= key */
    IX_LT  /* last entry  <  key */
};

/* A position in an ordered index; a plain value, no cleanup. */
struct index_cursor {
    const struct table_index *ix;
    btree_cursor bc;
};

/* Positioning: each returns true when the cursor is on an entry. O(log n). */
bool index_seek(const struct table_index *ix, const value *key, uint32_t n,
                enum index_seek_mode mode, struct index_cursor *c);
/* Seek relative to a row's own entry (its key and primary key); the row
 * need not be in the index. */
bool index_seek_row(const struct table_index *ix, const row *r,
                    enum index_seek_mode mode, struct index_cursor *c);
bool index_first(const struct table_index *ix, struct index_cursor *c);
bool index_last(const struct table_index *ix, struct index_cursor *c);
/* The entry of 0-based rank in index order. */
bool index_at(const struct table_index *ix, size_t rank, struct index_cursor *c);

/* Stepping: O(1) (amortized); false when the cursor leaves the index. */
bool index_next(struct index_cursor *c);
bool index_prev(struct index_cursor *c);

/* The row under the cursor (borrowed), or NULL. */
row *index_cursor_row(const struct index_cursor *c);
/* Rank in index order of the entry under the cursor. O(1). */
static inline size_t index_cursor_rank(const struct index_cursor *c)
{
    return btree_cursor_rank(&c->bc);
}

/*
 * Number of entries below key (or_equal false) or at or below it
 * (or_equal true) in index order, O(log n). Entries in a key range are a
 * difference of two counts; index_count_eq counts a key or prefix.
 */
size_t index_count_below(const struct table_index *ix, const value *key,
                         uint32_t n, bool or_equal);
size_t index_count_eq(const struct table_index *ix, const value *key,
                      uint32_t n);
/* Entries below (or at or below) a row's own entry, given by its key and
 * primary key; the row need not be in the index. */
size_t index_count_below_row(const struct table_index *ix, const row *r,
                             bool or_equal);

static inline size_t index_count(const struct table_index *ix)
{
    return ix->kind == INDEX_ORDERED ? btree_count(&ix->tree)
                                     : hmap_count(&ix->hash);
}

/* ---- equality lookups (both kinds) ---------------------------------------- */

/*
 * Iterates the rows whose first n key parts equal key (n == nparts for a
 * hash index). Ordered indexes yield them in index order.
 *     struct index_lookup it;
 *     for (row *r = index_lookup_first(ix, key, n, &it); r;
 *          r = index_lookup_next(&it)) ...
 * Returns NULL at the end, or at once for a hash index when n != nparts.
 */
struct index_lookup {
    const struct table_index *ix;
    const value *key;          /* borrowed for the whole iteration */
    uint32_t n;
    uint64_t hash;
    uint32_t pos;
    struct index_cursor c;
};
row *index_lookup_first(const struct table_index *ix, const value *key,
                        uint32_t n, struct index_lookup *it);
row *index_lookup_next(struct index_lookup *it);

/* ---- accounting ------------------------------------------------------------- */

/* Bytes of the index structure (tree nodes or hash slots; rows are the
 * table's). */
size_t index_bytes(const struct table_index *ix);
/* Distinct values of an ordered index's first part, estimated by sampling
 * (O(log n) per sample) and kept until an eighth of the entries changed;
 * 0 for a hash index. For the planner's statistics. */
double index_distinct_estimate(struct table_index *ix);
static inline uint64_t index_work(const struct table_index *ix) { return ix->work; }
static inline void index_work_reset(struct table_index *ix) { ix->work = 0; }

/* ---- used by the table and the store ---------------------------------------- */

/* Orders key parts of two rows: the index order restricted to the first
 * nparts parts (no primary key). */
int index_key_cmp(const struct table_index *ix, const row *a, const row *b,
                  uint32_t nparts);
/* True when the row's key has a NULL part (never conflicts when unique). */
bool index_key_has_null(const struct table_index *ix, const row *r);

/*
 * Builds an empty ordered index from rows[0..n) already in index order,
 * in O(n): LDB_ERROR when they are not strictly increasing, LDB_CONSTRAINT
 * when a unique index would hold equal keys, LDB_MISUSE for a hash or
 * non-empty index, LDB_NOMEM. For recovery, whose snapshot keeps each
 * index's order (storage/journal.h); the index is unchanged on failure.
 */
int index_build_sorted(struct table_index *ix, row *const *rows, size_t n);

/* Initializes an empty index from def over table t (def already checked).
 * Allocates only the name and sql copies. */
int index_init(struct table_index *ix, struct table *t,
               const struct index_def *def);
/* Frees the structure and the strings (not the rows, not ix itself). */
void index_destroy(struct table_index *ix);

/*
 * Adds row r. For a unique index, a row whose key equals r's (no NULL
 * part) other than except is a conflict: returns LDB_CONSTRAINT with
 * *conflict set to it. LDB_NOMEM otherwise possible. On any error the
 * index is unchanged.
 */
int index_add(struct table_index *ix, row *r, const row *except, row **conflict);
/* Removes r (found by pointer identity) with a held delete. Never
 * allocates. */
void index_remove(struct table_index *ix, row *r);
/*
 * Undo of index_remove(ix, r): puts r back, the index holding what it
 * held right after that removal (and no settle since). Never allocates
 * (btree_put_back, hmap_put_back); LDB_INTERNAL only if that condition
 * was broken.
 */
int index_put_back(struct table_index *ix, row *r);
/* Whether removals left the tree to settle, and settling it (no memory). */
static inline bool index_unsettled(const struct table_index *ix)
{
    return btree_unsettled(&ix->tree);
}
static inline void index_settle(struct table_index *ix) { btree_settle(&ix->tree); }
/*
 * Puts new_row in old's entry, in place: its key parts and primary key
 * must compare equal to old's (index_key_cmp, table_key_cmp), so the entry
 * keeps its place. One descent or probe run; never allocates.
 */
void index_replace(struct table_index *ix, row *old, row *new_row);

/*
 * Fills an empty index with rows[0..n) (any order; rows is reordered).
 * LDB_CONSTRAINT with *conflict for a unique violation, or LDB_NOMEM; the
 * index stays empty then.
 */
int index_build(struct table_index *ix, row **rows, size_t n, row **conflict);

/* Checks the entries against the table's rows: NULL or a description of
 * the first problem. O(n log n), for tests. */
const char *index_check(const struct table_index *ix);

#endif
