/*
 * livedb.h - the one public header of livedb, an embedded SQL engine whose
 * live queries and materialized views are maintained incrementally.
 *
 * Conventions (as in SQLite):
 * - Every handle is opaque; every function has the ldb_ prefix.
 * - Functions that can fail return an int result code (LDB_OK on success).
 * - Ownership is stated on each function: "caller owns" means the caller
 *   must free/close it; "borrowed" means valid only for the stated span.
 */
#ifndef LIVEDB_H
#define LIVEDB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LDB_VERSION "0.1.0"

/* ---- result codes ---------------------------------------------------- */

#define LDB_OK 0          /* success */
#define LDB_ERROR 1       /* SQL error or other failure; see ldb_errmsg() */
#define LDB_NOMEM 2       /* an allocation failed; state is unchanged */
#define LDB_CONSTRAINT 3  /* PRIMARY KEY, UNIQUE or NOT NULL violated */
#define LDB_MISUSE 4      /* API used against its contract */
#define LDB_RANGE 5       /* index or parameter number out of range */
#define LDB_TYPE 6        /* value of the wrong type */
#define LDB_NOTFOUND 7    /* named object does not exist */
#define LDB_ABORT 8       /* a callback asked to stop */
#define LDB_INTERNAL 9    /* an internal invariant failed (a bug) */
#define LDB_ROW 100       /* a statement step produced a row */
#define LDB_DONE 101      /* a statement step finished */

/* Static English text for a result code; never NULL. */
const char *ldb_errstr(int rc);

/* ---- value types ------------------------------------------------------ */

/*
 * The order of these constants is the order of the type classes in the
 * total sort order (see docs/VALUES.md): NULL < BOOLEAN < numbers (INTEGER
 * and REAL compared by value) < TEXT < BLOB < ARRAY < RECORD.
 */
enum ldb_type {
    LDB_NULL = 0,
    LDB_BOOLEAN = 1,
    LDB_INTEGER = 2,
    LDB_REAL = 3,
    LDB_TEXT = 4,
    LDB_BLOB = 5,
    LDB_ARRAY = 6,
    LDB_RECORD = 7
};

/* Text collations. */
enum ldb_collation {
    LDB_COLL_BINARY = 0, /* bytewise */
    LDB_COLL_NOCASE = 1, /* ASCII letters folded to lower case */
    LDB_COLL_RTRIM = 2   /* trailing spaces (0x20) ignored */
};

#ifdef __cplusplus
}
#endif
#endif
