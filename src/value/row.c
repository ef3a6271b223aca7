/*
 * row.c - row allocation, hashing and comparison (see row.h).
 */
#include "value/row.h"

#include "base/hash.h"
#include "base/mem.h"

row *row_alloc(uint32_t ncols)
{
    row *r = mem_alloc(sizeof(row) + (size_t)ncols * sizeof(value));
    if (!r)
        return NULL;
    r->refs = 1;
    r->ncols = ncols;
    r->hash = 0;
    for (uint32_t i = 0; i < ncols; i++)
        r->cols[i] = value_null();
    return r;
}

row *row_from(const value *vals, uint32_t n)
{
    row *r = row_alloc(n);
    if (!r)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        r->cols[i] = value_copy(&vals[i]);
    return r;
}

void row_free_(row *r)
{
    for (uint32_t i = 0; i < r->ncols; i++)
        value_release(&r->cols[i]);
    mem_free(r);
}

uint64_t row_hash(row *r)
{
    if (r->hash)
        return r->hash;
    uint64_t h = HASH_SEED ^ r->ncols;
    for (uint32_t i = 0; i < r->ncols; i++)
        h = hash_combine(h, value_hash(&r->cols[i], LDB_COLL_BINARY));
    if (h == 0)
        h = 1;
    r->hash = h;
    return h;
}

bool row_identical(const row *a, const row *b)
{
    if (a == b)
        return true;
    if (a->ncols != b->ncols)
        return false;
    if (a->hash && b->hash && a->hash != b->hash)
        return false;
    for (uint32_t i = 0; i < a->ncols; i++)
        if (!value_identical(&a->cols[i], &b->cols[i]))
            return false;
    return true;
}

int row_cmp(const row *a, const row *b)
{
    uint32_t n = a->ncols < b->ncols ? a->ncols : b->ncols;
    for (uint32_t i = 0; i < n; i++) {
        int c = value_cmp(&a->cols[i], &b->cols[i], LDB_COLL_BINARY);
        if (c)
            return c;
    }
    return a->ncols < b->ncols ? -1 : a->ncols > b->ncols;
}

int row_cmp_identity(const row *a, const row *b)
{
    if (a == b)
        return 0;
    uint32_t n = a->ncols < b->ncols ? a->ncols : b->ncols;
    for (uint32_t i = 0; i < n; i++) {
        int c = value_cmp_identity(&a->cols[i], &b->cols[i]);
        if (c)
            return c;
    }
    return a->ncols < b->ncols ? -1 : a->ncols > b->ncols;
}

size_t row_mem(const row *r)
{
    size_t n = sizeof(row);
    for (uint32_t i = 0; i < r->ncols; i++)
        n += value_mem(&r->cols[i]);
    return n;
}
