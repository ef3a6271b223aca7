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
#define LDB_UNSUPPORTED 10 /* valid SQL that livedb does not support */
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


/* ---- database handle --------------------------------------------------- */

typedef struct ldb ldb;           /* a database: tables, views, live queries */
typedef struct ldb_stmt ldb_stmt; /* a prepared statement */
typedef struct ldb_live ldb_live; /* a live query */
typedef struct ldb_row ldb_row;   /* a row of values (always borrowed) */

/*
 * Opens a database. livedb keeps its data in memory: path must be NULL or
 * ":memory:". On LDB_OK the caller owns *out and must ldb_close it. On
 * failure *out is NULL.
 */
int ldb_open(const char *path, ldb **out);

/*
 * Closes db and frees everything it owns, including prepared statements and
 * live queries not yet finalized/closed (their handles become invalid).
 * NULL is a no-op. Must not be called from inside a callback of db.
 */
void ldb_close(ldb *db);

/* Result code and English message of the last failed call on db (LDB_OK
 * and "not an error" after a success). The message is borrowed until the
 * next call on db. */
int ldb_errcode(ldb *db);
const char *ldb_errmsg(ldb *db);
/* Byte offset into the SQL text of the last SQL error, or -1. */
int ldb_error_offset(ldb *db);

/* ---- rows (borrowed views; valid only during the callback or until the
 *      next step/reset/finalize of the statement that produced them) ---- */

int ldb_row_columns(const ldb_row *r);
/* enum ldb_type of column i; LDB_NULL when i is out of range. */
int ldb_row_type(const ldb_row *r, int i);
/* INTEGER as is, REAL truncated toward zero (saturating), BOOLEAN 0/1, TEXT
 * by its numeric prefix as SQLite reads it ('12abc' is 12, 'abc' is 0),
 * anything else 0. */
int64_t ldb_row_int64(const ldb_row *r, int i);
/* Numbers as double, BOOLEAN 0/1, TEXT by its numeric prefix, else 0.0. */
double ldb_row_double(const ldb_row *r, int i);
/* TEXT or BLOB bytes (not converted; NULL for other types), borrowed like
 * the row. *len may be NULL. The bytes are NOT always NUL-terminated
 * (short values live inside the row): use *len, or ldb_row_format for a
 * C string. */
const char *ldb_row_text(const ldb_row *r, int i, size_t *len);
/* Column i in livedb's text form (as the shell shows it) written into buf
 * (NUL-terminated, truncated to size); returns the full length. */
size_t ldb_row_format(const ldb_row *r, int i, char *buf, size_t size);

/* ---- one-shot execution ------------------------------------------------ */

/* Called once per result row; return 0 to go on, nonzero to stop (the
 * statement then fails with LDB_ABORT). */
typedef int (*ldb_row_fn)(void *ctx, const ldb_row *row);

/*
 * Runs every statement in sql (separated by ';'). Rows of SELECTs are
 * passed to fn (which may be NULL). Stops at the first error; statements
 * before it stay done (as with sqlite3_exec).
 */
int ldb_exec(ldb *db, const char *sql, ldb_row_fn fn, void *ctx);

/* ---- prepared statements ----------------------------------------------- */

/*
 * Compiles the first statement of sql (nbytes < 0: up to the NUL). On
 * LDB_OK the caller owns *out (ldb_finalize it); *out is NULL when sql
 * holds only white space/comments. *tail (if tail is not NULL) points past
 * the statement.
 */
int ldb_prepare(ldb *db, const char *sql, int nbytes, ldb_stmt **out, const char **tail);
/* Parameters are numbered from 1 (?, ?NNN, :name, @name, $name). */
int ldb_bind_null(ldb_stmt *s, int i);
int ldb_bind_int64(ldb_stmt *s, int i, int64_t v);
int ldb_bind_double(ldb_stmt *s, int i, double v);
int ldb_bind_bool(ldb_stmt *s, int i, int v);
/* Copies the bytes (n < 0: up to the NUL). */
int ldb_bind_text(ldb_stmt *s, int i, const char *text, int n);
int ldb_bind_blob(ldb_stmt *s, int i, const void *data, int n);
int ldb_bind_parameter_count(ldb_stmt *s);
/* Index of a named parameter (with its prefix, e.g. ":id"), or 0. */
int ldb_bind_parameter_index(ldb_stmt *s, const char *name);
int ldb_clear_bindings(ldb_stmt *s);
/* LDB_ROW (a row is ready: ldb_stmt_row), LDB_DONE, or an error code. */
int ldb_step(ldb_stmt *s);
const ldb_row *ldb_stmt_row(ldb_stmt *s);
int ldb_column_count(ldb_stmt *s);
/* Borrowed until the statement is finalized. */
const char *ldb_column_name(ldb_stmt *s, int i);
/* Back to before the first step; bindings are kept. */
int ldb_reset(ldb_stmt *s);
/* Frees s. NULL is a no-op. */
void ldb_finalize(ldb_stmt *s);

/* Rows inserted, updated or deleted by the last INSERT, UPDATE or DELETE
 * (as SQL's changes()), by every one since open, and the automatic key
 * (rowid or INTEGER PRIMARY KEY) of the last row inserted. */
int64_t ldb_changes(ldb *db);
int64_t ldb_total_changes(ldb *db);
int64_t ldb_last_insert_rowid(ldb *db);

#ifdef __cplusplus
}
#endif
#endif
