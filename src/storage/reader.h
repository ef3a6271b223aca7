/*
 * reader.h - reading an ordered index in a requested ORDER BY: forward or
 * backward, with any null placement per key part and either tie order,
 * with ranks, seeks from a row, and steps both ways.
 *
 * The requested order ("R order") over an index with parts p0..pm-1 is:
 *   for each part in turn: NULL first or last as requested, non-NULL
 *   values in the index's direction (reverse == false) or the opposite
 *   one (reverse == true), under the part's collation;
 *   then the primary key, ascending unless ties_desc.
 * So ORDER BY created DESC NULLS FIRST over an index on (created ASC
 * NULLS FIRST) is reverse = true, nulls_first[0] = true: the NULL group
 * first, then the values descending. Every part is ordered, so an ORDER
 * BY on a prefix of the parts continues with the remaining parts (in the
 * walk's direction and natural null place) before the primary key.
 *
 * Cost. The index is cut into runs, each a stretch of consecutive
 * entries read in one direction: a single run when no part's NULL group
 * is moved; two when only the first part's is; otherwise one run per
 * group of equal leading values above the deepest moved part. Finding a
 * run costs O(m log n) (m = parts); stepping inside a run is O(1). A tie
 * order opposite to the walk (reverse with ascending ties, or forward with
 * ties_desc) reads each group of equal keys backward, visiting its
 * entries twice. So a seek plus k steps costs O(m log n + k + t) where t
 * is the tie group at the start, plus O(m log n) per run boundary crossed.
 *
 * A cursor is a plain value (no cleanup); any write to the table
 * invalidates it. Rows it returns are borrowed.
 */
#ifndef LDB_STORAGE_READER_H
#define LDB_STORAGE_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "storage/index.h"

struct order_spec {
    bool reverse;                       /* walk the index backward */
    bool ties_desc;                     /* equal keys: primary key descending */
    bool nulls_first[INDEX_MAX_PARTS];  /* NULL's place per part, in R order */
};

/* The plain walk: nulls where the walk meets them, ties ascending. */
void order_spec_init(const struct table_index *ix, bool reverse,
                     struct order_spec *spec);

/* One ORDER BY term, as the planner has it. */
struct order_term {
    uint32_t col;
    bool desc;
    bool nulls_first;
    enum ldb_collation coll;
};

/*
 * The spec that reads ix in the order of terms[0..n) (then the remaining
 * parts, then the primary key ascending), or LDB_NOTFOUND when ix cannot
 * serve it: the terms must be the leading parts (same columns, the same
 * collation for text-capable columns) with every direction equal to the
 * part's, or every one opposite.
 */
int order_spec_for(const struct table_index *ix, const struct order_term *terms,
                   uint32_t n, struct order_spec *spec);

struct order_cursor {
    const struct table_index *ix;
    struct order_spec spec;
    bool on;                   /* on a row */
    bool tie_rev;              /* tie groups read against the walk */
    size_t rank;               /* R rank of the current row */
    size_t run_lo, run_hi;     /* index ranks of the current run */
    size_t run_start;          /* R rank of the run's first row */
    btree_cursor cur;          /* the current row */
    btree_cursor near, far;    /* tie_rev: ends of the current tie group,
                                  first and last in walk order */
};

/* Positioning; each returns true when the cursor is on a row. O(m log n). */
bool order_first(const struct table_index *ix, const struct order_spec *spec,
                 struct order_cursor *c);
bool order_last(const struct table_index *ix, const struct order_spec *spec,
                struct order_cursor *c);
/* The row of 0-based rank in R order (windows with OFFSET). */
bool order_at(const struct table_index *ix, const struct order_spec *spec,
              size_t rank, struct order_cursor *c);
/*
 * The first row at or after (after == false) or strictly after (after ==
 * true) the position of row r in R order; r need not be in the index (a
 * deleted row still names a position).
 */
bool order_seek_row(const struct table_index *ix, const struct order_spec *spec,
                    const row *r, bool after, struct order_cursor *c);
/*
 * The first row whose first n key parts are at or after (after == false)
 * or strictly after (after == true) key[0..n) in R order.
 */
bool order_seek_key(const struct table_index *ix, const struct order_spec *spec,
                    const value *key, uint32_t n, bool after,
                    struct order_cursor *c);

/* Steps in R order; false when the cursor leaves the index. */
bool order_next(struct order_cursor *c);
bool order_prev(struct order_cursor *c);

static inline row *order_row(const struct order_cursor *c)
{
    return c->on ? btree_cursor_item(&c->cur) : NULL;
}
/* R rank of the current row. */
static inline size_t order_rank(const struct order_cursor *c) { return c->rank; }

/*
 * Rows before the position of r in R order (its rank when r is in the
 * index), or before (or_equal false) / up to (true) key prefix key[0..n).
 * Counts of R ranges are differences of these. O(m log n).
 */
size_t order_count_before_row(const struct table_index *ix,
                              const struct order_spec *spec, const row *r);
size_t order_count_before_key(const struct table_index *ix,
                              const struct order_spec *spec, const value *key,
                              uint32_t n, bool or_equal);

#endif
