/*
 * test_db.h - checks on statements run through the public API, shared by
 * every test that drives a database with SQL.
 */
#ifndef LDB_TEST_DB_H
#define LDB_TEST_DB_H

#include "livedb.h"
#include "test.h"

/* Runs sql, which must succeed. */
#define EXEC(db, sql)                                                         \
    do {                                                                      \
        int rc_ = ldb_exec((db), (sql), NULL, NULL);                          \
        CHECKF(rc_ == LDB_OK, "%s: %s", (sql), ldb_errmsg(db));               \
    } while (0)

/* Runs sql, which must fail with code. */
#define CHECK_FAILS(db, sql, code)                                            \
    do {                                                                      \
        int rc_ = ldb_exec((db), (sql), NULL, NULL);                          \
        CHECKF(rc_ == (code), "%s: rc %d (%s), wanted %d", (sql), rc_,        \
               ldb_errmsg(db), (code));                                       \
    } while (0)

#endif
