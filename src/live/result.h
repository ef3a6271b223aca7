/*
 * result.h - the published state of one live query: its rows by key, in
 * order when the query has an ORDER BY, and the change batch that takes
 * the previous state to the next one.
 *
 * Rows come from the graph's output delta as weighted rows. Every row has
 * a key (columns of the row, compared canonically under their
 * collations). All positive contributors to one key must be identical
 * rows (seed 000, law 2): they fold into one entry with a multiplicity; a
 * key whose contributors differ is an error (LDB_CONSTRAINT), never a
 * silent winner. A negative total is an invariant violation
 * (LDB_INTERNAL).
 *
 * Ordered results keep every copy of every entry in a counted B+tree, so
 * a position is a rank counting multiplicities and the order is total:
 * the ORDER BY terms, then the key.
 *
 * Applying a delta is two-phase so that a failure changes nothing:
 * result_stage computes the per-key changes (and the positions before)
 * without touching the state; result_commit installs them and fills the
 * positions after; result_discard drops a staged batch.
 *
 * A change names its row by the key's values as readers first got them:
 * an entry keeps, until it is deleted, the key bytes of the insert that
 * made it, although a later row under that key may carry other bytes of
 * an equal key (-0.0 for 0.0, 'A' for 'a' under NOCASE: a group's or a
 * DISTINCT class's shown member changed). Readers cannot compare keys
 * canonically (they do not know the key's collations), so a delete or
 * update must name exactly the key they hold.
 *
 * A row's visible columns are its first nvisible ones; the others (hidden
 * order values and key columns) are the result's own. A change that
 * leaves a row's visible values, its count and its place among the rows
 * that stay as they were is installed but not reported (seed 000: an
 * unchanged row is never reported), e.g. a new hidden ORDER BY value that
 * does not move the row. Positions are reported only when the result has
 * them to report (an ORDER BY of the query itself): an ordered result
 * may keep its order for its own use (a window) and report -1.
 *
 * Ownership: the result set holds one reference per key's row (bare or
 * in an entry, see result_ref) and named row; staged changes hold
 * references to their rows until committed or discarded.
 */
#ifndef LDB_LIVE_RESULT_H
#define LDB_LIVE_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/btree.h"
#include "base/hmap.h"
#include "base/pool.h"
#include "base/vec.h"
#include "dataflow/dataflow.h"

#define RESULT_MAX_KEY 64
#define RESULT_MAX_SORT 32

struct result_sort_term {
    uint32_t col;
    bool desc;
    bool nulls_first;
    enum ldb_collation coll;
};

/*
 * A key's state in by_key is a tagged word, result_ref: the row itself
 * when the row says all an entry would (count 1, the key bytes readers
 * got are the row's own, and an unordered result, whose rows are in no
 * order tree): the common case then costs no entry, only its by_key slot.
 * Else it points to a struct result_entry, with the low bit set (entries
 * and rows are 8-aligned). 0: no state.
 */
typedef uint64_t result_ref;

/* An entry holds only what an unordered result needs; an ordered
 * result's entries are struct result_ordered_entry (one pool item size
 * per result set). */
struct result_entry {
    row *r;
    row *named;    /* whose key columns name the entry to readers (its
                      insert's row), when their bytes differ from r's;
                      else NULL; referenced */
    int64_t mult;
};

struct result_ordered_entry {
    struct result_entry e;
    struct result_copy *first; /* its copy 0 in the ordered tree, or NULL */
};

/* One copy of an entry in the ordered tree. */
struct result_copy {
    struct result_entry *e;
    int64_t copy; /* 0 .. mult - 1 */
};

enum result_change_kind { RESULT_INSERT, RESULT_UPDATE, RESULT_DELETE };

struct result_change {
    enum result_change_kind kind;
    row *before, *after;           /* referenced; NULL on the missing side */
    row *named;                    /* referenced: its key columns are the
                                      key the change reports */
    int64_t before_mult, after_mult;
    int64_t before_pos, after_pos; /* -1 when unordered or absent */
    size_t after_bytes;            /* row_mem(after), taken at staging while
                                      the row is in cache */
    uint64_t hash;
    result_ref entry;              /* the key's state before, or 0 */
    result_ref next;               /* the state that replaces it (commit) */
    bool in_place;                 /* commit: the state takes the new row
                                      where it is (same order and count,
                                      an entry or bare as before) */
    bool quiet;                    /* reports nothing (staged: maybe,
                                      when only hidden columns changed;
                                      commit decides) */
};

/* A row's place in a batch, for telling moved rows from unmoved ones. */
struct result_place {
    int64_t pos, mult;
    int64_t through; /* copies up to and including this row (sorted) */
    size_t change;
};

struct result_set {
    uint32_t nkey;
    uint32_t *key;      /* nkey: positions, then */
    enum ldb_collation *key_coll; /* collations, then */
    struct result_sort_term *sort; /* nsort ORDER BY terms: one block, owned
                                      (a result set per child live result) */
    uint32_t nsort;
    bool ordered;
    bool positions;     /* report positions (else -1) */
    uint32_t nvisible;  /* columns a change reports */
    hmap by_key;        /* key hash -> result_ref */
    btree order;        /* struct result_copy *, when ordered */
    pool entries;       /* struct result_entry, or result_ordered_entry
                           when ordered */
    pool copies;        /* struct result_copy */
    int64_t rows;       /* total multiplicity */
    size_t row_bytes;   /* row_mem of the entries' rows */
    VEC(struct result_change) staged;
    VEC(struct result_place) places; /* commit's scratch, reserved by stage */
    size_t nquiet;      /* staged changes that may report nothing */
};

/* key: columns of the key; sort: ORDER BY terms (nsort 0: unordered),
 * both copied (LDB_NOMEM);
 * the first nvisible columns are reported; positions: whether changes
 * report positions (ordered results only). */
int result_init(struct result_set *rs, const uint32_t *key,
                const enum ldb_collation *colls, uint32_t nkey,
                const struct result_sort_term *sort, uint32_t nsort, uint32_t nvisible,
                bool positions);
void result_free(struct result_set *rs);

/*
 * Computes the changes that delta (consolidated) makes, with positions
 * before; the state is untouched. LDB_NOMEM, LDB_CONSTRAINT (two
 * different rows under one key), LDB_INTERNAL (negative multiplicity).
 * On failure nothing stays staged.
 */
int result_stage(struct result_set *rs, const df_entry *delta, size_t n);
/* Installs the staged changes, fills their positions after, and drops
 * from the batch the changes that report nothing. LDB_NOMEM leaves the
 * state unchanged (and the batch staged). */
int result_commit(struct result_set *rs);
/* result_commit in two steps, for installing several result sets at
 * once: result_prepare does every allocation (LDB_NOMEM leaves rs as it
 * was); then either result_finish, which cannot fail, or
 * result_unprepare, which takes the preparation back. */
int result_prepare(struct result_set *rs);
void result_unprepare(struct result_set *rs);
void result_finish(struct result_set *rs);
/* The staged (after stage) or installed (after commit) changes. */
static inline const struct result_change *result_changes(const struct result_set *rs,
                                                         size_t *n)
{
    *n = rs->staged.len;
    return rs->staged.data;
}
/* Drops staged or published changes (releases their rows). */
void result_discard(struct result_set *rs);

/* Visits every row copy in order (ordered) or in key-table order. */
typedef int (*result_visit_fn)(void *ctx, row *r, int64_t pos);
int result_scan(const struct result_set *rs, result_visit_fn fn, void *ctx);

/* Compares two rows in the result's order (ORDER BY terms, then key). */
int result_row_cmp(const struct result_set *rs, const row *a, const row *b);

size_t result_bytes(const struct result_set *rs);

#endif
