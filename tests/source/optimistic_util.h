/*
 * optimistic_util.h - what the durable optimistic tests share: opening a
 * database that must open, committing one optimistic transaction of SQL,
 * and collecting the handles ldb_optimistic_pending gives back.
 * Header-only (static inline): each test is its own program.
 */
#ifndef LDB_TESTS_OPTIMISTIC_UTIL_H
#define LDB_TESTS_OPTIMISTIC_UTIL_H

#include "test.h"
#include "test_db.h"

/* path (NULL: in memory), which must open. */
static inline ldb *open_at(const char *path)
{
    ldb *db;
    int rc = ldb_open(path, &db);
    CHECKF(rc == LDB_OK, "open %s: %d %s", path ? path : "(memory)", rc, ldb_errmsg(NULL));
    return db;
}

/* Handles given back (references), in the order they came. */
struct sent {
    ldb_optimistic *h[64];
    int n;
};

/* An ldb_mutation_fn for ldb_optimistic_pending: keeps a reference. */
static inline void collect(void *ctx, ldb_optimistic *o)
{
    struct sent *s = ctx;
    CHECK(s->n < 64);
    ldb_optimistic_ref(o);
    s->h[s->n++] = o;
}

static inline void sent_free(struct sent *s)
{
    for (int i = 0; i < s->n; i++)
        ldb_optimistic_free(s->h[i]);
    s->n = 0;
}

/* sql in one optimistic transaction, committed with no mutation callback;
 * the caller owns the handle. */
static inline ldb_optimistic *commit_sql(ldb *db, const char *sql)
{
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, sql);
    ldb_optimistic *o = NULL;
    CHECKF(ldb_optimistic_commit(db, NULL, NULL, &o) == LDB_OK, "%s", ldb_errmsg(db));
    return o;
}

#endif
