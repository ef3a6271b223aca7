/*
 * storage_util.h - small helpers shared by the storage tests: building
 * values, tables and indexes in one line, and running one write as its
 * own statement. Header-only (static inline) because each test file is
 * its own binary.
 */
#ifndef LDB_TESTS_STORAGE_UTIL_H
#define LDB_TESTS_STORAGE_UTIL_H

#include "test.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "storage/store.h"

#include <stdarg.h>
#include <string.h>

static inline value V_I(int64_t i) { return value_int(i); }
static inline value V_R(double r) { return value_real(r); }
static inline value V_N(void) { return value_null(); }
static inline value V_B(bool b) { return value_bool(b); }
/* Short text only (inline, no allocation): tests keep keys short. */
static inline value V_T(const char *s)
{
    value v;
    int rc = value_text(&v, s, strlen(s));
    CHECK(rc == LDB_OK);
    return v;
}

static inline struct column_def COL(const char *name, enum col_type type)
{
    struct column_def c = { name, type, LDB_COLL_BINARY, false, false, { { 0 } } };
    return c;
}

/* Creates a table inside its own statement; fails the test on error. */
static inline struct table *make_table(struct store *s, const char *name,
                                       const struct column_def *cols, uint32_t ncols,
                                       const uint32_t *pk, uint32_t npk)
{
    struct table_def def = { name, cols, ncols, pk, npk, NULL, 0, NULL, false, false };
    struct table *t = NULL;
    CHECK(store_stmt_begin(s) == LDB_OK);
    int rc = store_create_table(s, &def, &t);
    CHECKF(rc == LDB_OK, "create %s: %s", name, store_errmsg(s));
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    return t;
}

static inline struct table_index *make_index(struct store *s, struct table *t, const char *name,
                                             enum index_kind kind, bool unique,
                                             const struct key_part *parts, uint32_t n)
{
    struct index_def def = { name, kind, unique, parts, n, NULL };
    struct table_index *ix = NULL;
    CHECK(store_stmt_begin(s) == LDB_OK);
    int rc = store_create_index(s, t, &def, &ix);
    CHECKF(rc == LDB_OK, "create index %s: %s", name, store_errmsg(s));
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    return ix;
}

static inline struct key_part PART(uint32_t col, bool desc)
{
    struct key_part p = { col, desc, key_part_default_nulls_first(desc), LDB_COLL_BINARY };
    return p;
}

/* One insert as a whole statement: returns the statement's result. */
static inline int stmt_insert(struct store *s, struct table *t, const value *vals)
{
    CHECK(store_stmt_begin(s) == LDB_OK);
    int rc = table_insert(s, t, vals, NULL);
    return store_stmt_end(s, rc);
}

#endif
