/*
 * include_rows.h - rows of a result as text, for the include tests: a row
 * renders as its columns' ldb_row_format text joined by '|', and a result
 * is a growable list of such strings, sorted to compare as a multiset.
 * static inline so that a test uses any subset without warnings.
 */
#ifndef LDB_TEST_INCLUDE_ROWS_H
#define LDB_TEST_INCLUDE_ROWS_H

#include "livedb.h"

#include <stdlib.h>
#include <string.h>

/* Columns from..end of r, '|'-separated (malloc'd). */
static inline char *render_from(const ldb_row *r, int from)
{
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    s[0] = '\0';
    for (int i = from; i < ldb_row_columns(r); i++) {
        size_t n = ldb_row_format(r, i, NULL, 0);
        while (len + n + 2 > cap)
            s = realloc(s, cap *= 2);
        if (i > from)
            s[len++] = '|';
        ldb_row_format(r, i, s + len, n + 1);
        len += n;
    }
    return s;
}

struct rows {
    char **v;
    size_t n, cap;
};

/* Takes s. */
static inline void rows_add(struct rows *rs, char *s)
{
    if (rs->n == rs->cap)
        rs->v = realloc(rs->v, (rs->cap = rs->cap ? 2 * rs->cap : 16) * sizeof *rs->v);
    rs->v[rs->n++] = s;
}

/* Empties rs, keeping its array. */
static inline void rows_clear(struct rows *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        free(rs->v[i]);
    rs->n = 0;
}

static inline void rows_free(struct rows *rs)
{
    rows_clear(rs);
    free(rs->v);
    memset(rs, 0, sizeof *rs);
}

static inline int rows_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void rows_sort(struct rows *rs)
{
    if (rs->n) /* qsort(NULL, 0) is undefined */
        qsort(rs->v, rs->n, sizeof *rs->v, rows_cmp_str);
}

/* An ldb_row_fn adding each row to the struct rows ctx. */
static inline int rows_collect(void *ctx, const ldb_row *r)
{
    rows_add(ctx, render_from(r, 0));
    return 0;
}

#endif
