/*
 * row.h - immutable, reference-counted arrays of values.
 *
 * A row is one allocation: header + ncols values. Tables, indexes and
 * dataflow state share one copy by holding references. A row is never
 * modified after it is handed out (row_alloc's caller fills it first);
 * the only mutable field is the cached hash, computed on first use.
 *
 * Ownership: row_alloc/row_from returns one reference; row_retain adds
 * one; row_release drops one and frees the row (and releases its values)
 * at zero. Refcounts are not atomic: a row belongs to one database handle,
 * which is used by one thread at a time.
 */
#ifndef LDB_VALUE_ROW_H
#define LDB_VALUE_ROW_H

#include "value/value.h"

typedef struct row {
    uint32_t refs;
    uint32_t ncols;
    uint64_t hash; /* 0 = not computed yet */
    value cols[];
} row;

/*
 * The public ldb_row (livedb.h): a borrowed view of n values, so that a
 * result row can hide trailing columns (hidden keys) and a one-shot
 * executor can hand out a scratch array without building a row.
 */
struct ldb_row {
    const value *vals;
    uint32_t n;
};

/* New row with ncols NULL values and one reference; NULL on NOMEM. */
row *row_alloc(uint32_t ncols);
/* New row holding copies (retained) of vals. */
row *row_from(const value *vals, uint32_t n);

static inline row *row_retain(row *r)
{
    r->refs++;
    return r;
}
void row_free_(row *r);
static inline void row_release(row *r)
{
    if (r && --r->refs == 0)
        row_free_(r);
}

/* Hash of all columns (BINARY collation), cached. Consistent with both
 * row_identical and column-wise canonical equality. */
uint64_t row_hash(row *r);
/* Column-wise value_identical. */
bool row_identical(const row *a, const row *b);
/* Lexicographic value_cmp (BINARY), then shorter first: a total order. */
int row_cmp(const row *a, const row *b);
/* Lexicographic value_cmp_identity, then shorter first: a strict total
 * order whose equality is row_identical. */
int row_cmp_identity(const row *a, const row *b);
/* Bytes held: header, values and their heap objects. */
size_t row_mem(const row *r);

#endif
