/*
 * livedb.h - the one public header of livedb, an embedded SQL engine whose
 * live queries and materialized views are maintained incrementally.
 *
 * Conventions (as in SQLite):
 * - Every handle is opaque; every function has the ldb_ prefix.
 * - Functions that can fail return an int result code (LDB_OK on success).
 * - Ownership is stated on each function: "caller owns" means the caller
 *   must free/close it; "borrowed" means valid only for the stated span.
 *
 * Threads (SQLite's "serialized" mode, always on):
 * - A database handle, its prepared statements and its live queries may be
 *   used from any number of threads. Every function taking an ldb,
 *   ldb_stmt or ldb_live runs under the database's own recursive mutex, so
 *   calls on one database run one at a time, in some order. Different
 *   databases share nothing and run in parallel.
 * - Callbacks (row functions, live-query change and read callbacks,
 *   aggregate callbacks) run on the calling thread with the mutex held:
 *   their own calls on the same database re-enter it; a callback must not
 *   wait for another thread that uses the same database (deadlock).
 * - Exceptions, taking no lock: ldb_interrupt (also from a signal
 *   handler), ldb_errstr, ldb_complete, the ldb_row_* accessors (rows are
 *   borrowed for the span their producer states), the ldb_result_*
 *   setters (called inside an aggregate callback), and ldb_stmt_row,
 *   ldb_column_count and ldb_column_name, which read what the last
 *   ldb_step of that statement left: call them on the thread that stepped
 *   it, before another thread can step it again.
 * - A call's error (ldb_errcode, ldb_errmsg, ldb_error_offset) is the
 *   last one on the database, which another thread's call may replace in
 *   between: hold ldb_lock around a call and the reading of its error, as
 *   around a statement's ldb_step and ldb_stmt_row when several threads
 *   step statements.
 * - ldb_close must be the last call on a database: no other thread may
 *   use it or any of its handles during or after it.
 */
#ifndef LIVEDB_H
#define LIVEDB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LDB_VERSION "0.1.0"

/* Marks the functions the shared library exports; the library is built
 * with every other symbol hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define LDB_API __attribute__((visibility("default")))
#else
#define LDB_API
#endif

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
#define LDB_INTERRUPT 11  /* stopped by ldb_interrupt or the progress handler */
#define LDB_BUSY 12       /* not done within its time limit (a wait timed out),
                             or the database file is open in another handle */
#define LDB_IOERR 13      /* a read, write or sync of a database file failed */
#define LDB_CORRUPT 14    /* a database file is damaged (not a valid prefix) */
#define LDB_FULL 15       /* the disk (or a quota) is full */
#define LDB_CANTOPEN 16   /* a database file cannot be opened or made
                             (permission denied, no such directory) */
#define LDB_ROW 100       /* a statement step produced a row */
#define LDB_DONE 101      /* a statement step finished */

/* Static English text for a result code; never NULL. */
LDB_API const char *ldb_errstr(int rc);

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
    LDB_RECORD = 7,
    LDB_LIVE = 8    /* a child live result in a row of a live query (a
                       LIVE (query) column): read it with ldb_row_live; never
                       a SQL value (it is not stored, compared or bound) */
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
typedef struct ldb_value ldb_value; /* a value in a row or inside an ARRAY
                                       or RECORD (always borrowed) */

/*
 * Opens a database. path NULL or ":memory:": a database in memory, gone
 * at ldb_close. Any other path names a durable database, made when it does
 * not exist: the file path holds its last checkpoint (a snapshot of every
 * table, index, view and materialized view) and path-wal the log of the
 * transactions committed since. Opening recovers: the snapshot, then the
 * log, stopping at its first torn or damaged record (a write the crash cut
 * short was never acknowledged). Materialized views are maintained again
 * at once; one whose body calls a function or aggregate the program has
 * not registered yet stays readable, and writes to the database are
 * refused (naming it) until the program registers it or drops the view
 * (DROP MATERIALIZED VIEW of it, or of another view, outside a
 * transaction: the only writes taken meanwhile): SQL writes,
 * ldb_source_attach and ldb_source_poll fail, and queued confirmations
 * and rejections wait. Pending optimistic transactions come back pending
 * (ldb_optimistic_pending).
 *
 * Durability (PRAGMA synchronous, per handle, default FULL):
 * - FULL (2): COMMIT returns after the log reached the disk: a committed
 *   transaction survives a crash of the program or of the machine.
 * - NORMAL (1): COMMIT returns after the log reached the operating system;
 *   checkpoints are synced. A crash of the program loses nothing; a power
 *   loss may lose the last transactions, never part of one, and never
 *   damages the database.
 * - OFF (0): nothing is synced. A crash of the program loses nothing; a
 *   power loss may damage the files.
 * A checkpoint is written when the log grows past PRAGMA
 * checkpoint_threshold bytes (default 16 MiB; 0: never), at ldb_close,
 * and by ldb_checkpoint or PRAGMA wal_checkpoint (the same call); the log
 * then starts over.
 *
 * Disk errors. A COMMIT whose log write or sync fails returns LDB_IOERR
 * or LDB_FULL and commits nothing: an explicit transaction stays open
 * (COMMIT may be tried again, or ROLLBACK), an autocommit statement rolls
 * back. If even taking the failed record back out of the log fails, the
 * handle refuses every later write ("close and reopen it"; reads go on)
 * and the next open finds that transaction whole or not at all. An
 * automatic checkpoint that fails is not reported (its commit stands,
 * the log keeps everything) and is tried again after another threshold of
 * log; ldb_checkpoint reports its failures.
 *
 * One handle per file: a second ldb_open of the same path (or of a
 * symbolic link to it: the files are named after the link's target), in
 * this process or another, gets LDB_BUSY until the first closes. An empty
 * path is LDB_CANTOPEN.
 *
 * On LDB_OK the caller owns *out and must ldb_close it. On failure *out is
 * NULL, the files are left as they were, and ldb_errmsg(NULL) tells why on
 * this thread: LDB_BUSY, LDB_CANTOPEN (permission denied, no such
 * directory), LDB_CORRUPT (a damaged snapshot, not a valid database),
 * LDB_UNSUPPORTED (a file of a newer format version), LDB_IOERR, LDB_FULL,
 * LDB_NOMEM.
 */
LDB_API int ldb_open(const char *path, ldb **out);

/*
 * Writes a checkpoint of a durable database now (a new snapshot in a
 * temporary file, synced and renamed over path, then the log emptied),
 * so that the next open replays nothing. A no-op for a database in
 * memory. Not inside a transaction or callback (LDB_MISUSE). On failure
 * (LDB_IOERR, LDB_FULL, LDB_NOMEM) the database and its files are as
 * before: the old snapshot and the log still hold everything.
 */
LDB_API int ldb_checkpoint(ldb *db);

/*
 * Closes db and frees everything it owns, including prepared statements and
 * live queries not yet finalized/closed (their handles become invalid).
 * NULL is a no-op. From inside a live query, provider, mutation or
 * aggregate callback of db it does nothing but record LDB_MISUSE
 * (ldb_errcode): db stays open.
 */
LDB_API void ldb_close(ldb *db);

/* Result code and English message of the last failed call on db (LDB_OK
 * and "not an error" after a success). The message is borrowed until the
 * next call on db. ldb_errmsg(NULL) is the message of this thread's last
 * ldb_open: why it failed (borrowed until its next ldb_open), or "not an
 * error" after a success. */
LDB_API int ldb_errcode(ldb *db);
LDB_API const char *ldb_errmsg(ldb *db);
/* Byte offset into the SQL text of the last SQL error, or -1. */
LDB_API int ldb_error_offset(ldb *db);

/* Take and release db's mutex (the one every call on db takes; it is
 * recursive, so calls made while holding it do not block). Holding it
 * makes a sequence of calls atomic with respect to other threads, e.g. a
 * call and the reading of its error. Each ldb_lock needs one ldb_unlock
 * on the same thread. NULL is a no-op. */
LDB_API void ldb_lock(ldb *db);
LDB_API void ldb_unlock(ldb *db);

/* ---- rows (borrowed views; valid only during the callback or until the
 *      next step/reset/finalize of the statement that produced them) ---- */

LDB_API int ldb_row_columns(const ldb_row *r);
/* enum ldb_type of column i; LDB_NULL when i is out of range. */
LDB_API int ldb_row_type(const ldb_row *r, int i);
/* INTEGER as is, REAL truncated toward zero (saturating), BOOLEAN 0/1, TEXT
 * by its numeric prefix as SQLite reads it ('12abc' is 12, 'abc' is 0),
 * anything else 0. */
LDB_API int64_t ldb_row_int64(const ldb_row *r, int i);
/* Numbers as double, BOOLEAN 0/1, TEXT by its numeric prefix, else 0.0. */
LDB_API double ldb_row_double(const ldb_row *r, int i);
/* TEXT or BLOB bytes (not converted; NULL for other types), borrowed like
 * the row. *len may be NULL. The bytes are NOT always NUL-terminated
 * (short values live inside the row): use *len, or ldb_row_format for a
 * C string. */
LDB_API const char *ldb_row_text(const ldb_row *r, int i, size_t *len);
/* Column i in livedb's text form (as the shell shows it) written into buf
 * (NUL-terminated, truncated to size); returns the full length. */
LDB_API size_t ldb_row_format(const ldb_row *r, int i, char *buf, size_t size);

/*
 * Nested values (ARRAY (subquery), RECORD). ldb_row_value gives column i
 * of r as an ldb_value (NULL when i is out of range), and ldb_value_item
 * an element of an ARRAY or the value of a RECORD field. Every ldb_value
 * and every pointer read from one is borrowed from the row: valid exactly
 * as long as the row (the callback, or until the next step/reset/finalize
 * of its statement); nothing is to be freed. Each ldb_row_X(r, i) is
 * ldb_value_X(ldb_row_value(r, i)), and every ldb_value_ function accepts
 * NULL (a NULL value).
 */
LDB_API const ldb_value *ldb_row_value(const ldb_row *r, int i);
/* enum ldb_type; LDB_NULL for NULL. */
LDB_API int ldb_value_type(const ldb_value *v);
/* Elements of an ARRAY, fields of a RECORD, bytes of TEXT/BLOB; else 0. */
LDB_API int ldb_value_length(const ldb_value *v);
/* Element i of an ARRAY, or the value of field i of a RECORD; NULL when v
 * is neither or i is out of range. O(1) for a RECORD and an ARRAY of up to
 * 8 elements, O(log n) for a longer ARRAY (a tree shared between its
 * versions): reading every element this way is O(n log n), and never
 * allocates. */
LDB_API const ldb_value *ldb_value_item(const ldb_value *v, int i);
/* Name of field i of a RECORD: its bytes (NOT always NUL-terminated: use
 * *len, which may be NULL), borrowed like the row; NULL when v is not a
 * RECORD or i is out of range. */
LDB_API const char *ldb_value_field_name(const ldb_value *v, int i, size_t *len);
/* As ldb_row_int64, ldb_row_double, ldb_row_text, ldb_row_format; the
 * text form of an ARRAY or RECORD is its JSON (docs/VALUES.md). */
LDB_API int64_t ldb_value_int64(const ldb_value *v);
LDB_API double ldb_value_double(const ldb_value *v);
LDB_API const char *ldb_value_text(const ldb_value *v, size_t *len);
LDB_API size_t ldb_value_format(const ldb_value *v, char *buf, size_t size);

/* ---- one-shot execution ------------------------------------------------ */

/* Called once per result row; return 0 to go on, nonzero to stop (the
 * statement then fails with LDB_ABORT). */
typedef int (*ldb_row_fn)(void *ctx, const ldb_row *row);

/*
 * Runs every statement in sql (separated by ';'). Rows of SELECTs are
 * passed to fn (which may be NULL). Stops at the first error; statements
 * before it stay done (as with sqlite3_exec).
 */
LDB_API int ldb_exec(ldb *db, const char *sql, ldb_row_fn fn, void *ctx);

/* 1 when sql (NUL-terminated) ends a statement: its last token is a ';'
 * outside strings, comments and CREATE TRIGGER bodies; else 0. A shell
 * uses it to know when to stop collecting lines (as sqlite3_complete). */
LDB_API int ldb_complete(const char *sql);

/* ---- prepared statements ----------------------------------------------- */

/*
 * Compiles the first statement of sql (nbytes < 0: up to the NUL). On
 * LDB_OK the caller owns *out (ldb_finalize it); *out is NULL when sql
 * holds only white space/comments. *tail (if tail is not NULL) points past
 * the statement.
 */
LDB_API int ldb_prepare(ldb *db, const char *sql, int nbytes, ldb_stmt **out, const char **tail);
/* Parameters are numbered from 1 (?, ?NNN, :name, @name, $name). */
LDB_API int ldb_bind_null(ldb_stmt *s, int i);
LDB_API int ldb_bind_int64(ldb_stmt *s, int i, int64_t v);
LDB_API int ldb_bind_double(ldb_stmt *s, int i, double v);
LDB_API int ldb_bind_bool(ldb_stmt *s, int i, int v);
/* Copies the bytes (n < 0: up to the NUL). */
LDB_API int ldb_bind_text(ldb_stmt *s, int i, const char *text, int n);
LDB_API int ldb_bind_blob(ldb_stmt *s, int i, const void *data, int n);
LDB_API int ldb_bind_parameter_count(ldb_stmt *s);
/* Index of a named parameter (with its prefix, e.g. ":id"), or 0. */
LDB_API int ldb_bind_parameter_index(ldb_stmt *s, const char *name);
LDB_API int ldb_clear_bindings(ldb_stmt *s);
/* LDB_ROW (a row is ready: ldb_stmt_row), LDB_DONE, or an error code. */
LDB_API int ldb_step(ldb_stmt *s);
LDB_API const ldb_row *ldb_stmt_row(ldb_stmt *s);
LDB_API int ldb_column_count(ldb_stmt *s);
/* Borrowed until the statement is finalized, or compiled again (a step
 * after the schema changed rebinds it, and the names may change). */
LDB_API const char *ldb_column_name(ldb_stmt *s, int i);
/* Back to before the first step; bindings are kept. */
LDB_API int ldb_reset(ldb_stmt *s);
/* Frees s. NULL is a no-op. While s's own ldb_step runs (reached from a
 * live query callback) it does nothing but record LDB_MISUSE; stepping,
 * resetting and binding s are refused the same way. */
LDB_API void ldb_finalize(ldb_stmt *s);

/* Rows inserted, updated or deleted by the last INSERT, UPDATE or DELETE
 * (as SQL's changes()), by every one since open, and the automatic key
 * (rowid or INTEGER PRIMARY KEY) of the last row inserted. */
LDB_API int64_t ldb_changes(ldb *db);
LDB_API int64_t ldb_total_changes(ldb *db);
LDB_API int64_t ldb_last_insert_rowid(ldb *db);

/* ---- interrupting long work -------------------------------------------- */

/*
 * Stops the work running on db: the statement being stepped (a SELECT, a
 * write, CREATE INDEX, CREATE TABLE AS, CREATE MATERIALIZED VIEW) or the
 * hydration of ldb_live_open fails soon with LDB_INTERRUPT, message
 * "interrupted". An interrupted write leaves the database as it was before
 * the statement (inside BEGIN the transaction stays open). The maintenance
 * of live queries and materialized views at a commit is never stopped.
 *
 * It only sets a flag: it takes no lock and may be called from any thread
 * and from a signal handler, while db is open. The flag stays set while
 * any statement of db is running or stepped but not yet done (those fail
 * too at their next step, as do statements started meanwhile), and is
 * cleared when none is left, so the next call works. Called while nothing
 * runs, it has no effect. NULL is a no-op.
 */
LDB_API void ldb_interrupt(ldb *db);

/*
 * Calls fn(ctx) about every n units of work (table rows the executor
 * visits, rows it produces from VALUES or a CTE read twice, pairs a join
 * tries, rows read while hydrating a live query) of the work
 * ldb_interrupt can stop; a nonzero return stops
 * it with LDB_INTERRUPT, as ldb_interrupt does. fn runs on the thread
 * stepping the statement and must not use db (nor close it). n < 1 or fn
 * NULL removes the handler; a new call replaces the previous one (it
 * waits for db's mutex, so it takes effect from the next call on db).
 */
LDB_API void ldb_progress_handler(ldb *db, int n, int (*fn)(void *ctx), void *ctx);

/* ---- live queries ---------------------------------------------------------- */

/*
 * A live query is a SELECT whose result livedb keeps up to date: after
 * every commit that changes it, its callback gets ONE batch saying exactly
 * how the result changed. A rolled-back transaction publishes nothing; a
 * commit that leaves the result unchanged publishes nothing; an unchanged
 * row is never reported: a row is reported when its visible values, its
 * count or (ordered queries) its place among the rows that stay changed,
 * not when only a hidden value did (say the ORDER BY value of a row that
 * stays where it was).
 *
 * Every result row has a key: the primary key for a single-table query,
 * the combined keys for a join, the group columns for an aggregate, all
 * columns for DISTINCT and set operations (hidden key columns are carried
 * but not shown). A change reports one key. A row keeps the key values it
 * was inserted with until it is deleted: its updates and its delete name
 * exactly those values (same types, same bytes), even when the row now
 * stands for them with equal values of other bytes (-0.0 for 0.0, 'B'
 * for 'b' under NOCASE: a group's or a DISTINCT row's shown member
 * changed), so a copy of the result can be kept by key compared bytewise.
 *
 * Positions (queries with an ORDER BY of their own only, else -1; the
 * ORDER BY of a subquery, view or CTE they read does not order their
 * result): before_pos is the row's 0-based position in the result before
 * the batch, after_pos in the result after it. To replay a batch on a
 * copy of the result: remove every before row (descending before_pos),
 * then insert every after row (ascending after_pos). For ORDER BY ...
 * LIMIT/OFFSET the positions are within the visible window.
 */
enum ldb_change_kind {
    LDB_CHANGE_INSERT = 1,
    LDB_CHANGE_UPDATE = 2,
    LDB_CHANGE_DELETE = 3
};

typedef struct ldb_change {
    int kind;                /* enum ldb_change_kind */
    const ldb_row *key;      /* the key columns */
    const ldb_row *before;   /* NULL for an insert */
    const ldb_row *after;    /* NULL for a delete */
    int64_t before_count;    /* copies of the row (1 unless the result is a
                                bag with duplicates); 0 for an insert */
    int64_t after_count;     /* 0 for a delete */
    int64_t before_pos;      /* -1: none or unordered */
    int64_t after_pos;
} ldb_change;

/*
 * Called with the batch of one commit; the changes and their rows are
 * borrowed for the call. It runs as the commit completes, inside the call
 * that committed (the ldb_step or ldb_exec of the statement, COMMIT or
 * RELEASE), after that statement's ldb_changes and ldb_last_insert_rowid
 * are set. The rules for this callback and for the row function of
 * ldb_live_read (both are "live query callbacks"):
 * - allowed: reading any live query (ldb_live_read, ldb_live_count...),
 *   SELECTs and reading PRAGMAs, and ldb_live_close of any query, this
 *   one included (the query is freed when the outermost callback returns;
 *   a closed query publishes nothing more, and its handle must not be
 *   used again);
 * - refused with LDB_MISUSE and a message in ldb_errmsg: any write (DML,
 *   DDL, materialized views), transaction control, setting a PRAGMA,
 *   ldb_live_open, ldb_live_set_window, ldb_close (which then does
 *   nothing), and stepping, resetting, binding or finalizing the statement
 *   whose step is running.
 */
typedef void (*ldb_change_fn)(void *ctx, ldb_live *q, const ldb_change *changes,
                              size_t n);

/*
 * Opens a live query (a deterministic SELECT; LIMIT needs ORDER BY). The
 * initial result is delivered as the first batch (all inserts) before
 * this returns, and is readable at once (ldb_live_read). On LDB_OK the
 * caller owns *out and must ldb_live_close it; *out is NULL when the
 * callback closed the query during that first batch. fn may be NULL (no
 * batches; read the result with ldb_live_read).
 * Errors, each with ldb_errmsg saying why: LDB_ERROR/LDB_UNSUPPORTED: a
 * non-deterministic function or user-defined aggregate, LIMIT without
 * ORDER BY, a scalar subquery that may give several rows per outer row
 * (it needs an aggregate, ORDER BY ... LIMIT 1, or an equality fixing a
 * unique key to a constant, a parameter or a value of the outer row);
 * LDB_MISUSE: NULL sql or out, not a SELECT, inside an explicit
 * transaction or a live query callback; LDB_NOMEM: nothing is left
 * behind and fn was not called. On failure *out is NULL.
 */
LDB_API int ldb_live_open(ldb *db, const char *select_sql, ldb_change_fn fn, void *ctx,
                  ldb_live **out);
/* The same over a prepared SELECT with its bound parameters (the
 * statement can be finalized afterwards; the query keeps copies). */
LDB_API int ldb_live_open_stmt(ldb_stmt *stmt, ldb_change_fn fn, void *ctx, ldb_live **out);
/*
 * Moves the window of an ORDER BY ... LIMIT query (offset < 0: 0; limit <
 * 0: no limit); the callback gets the difference as one batch before this
 * returns (it may close q: this then returns LDB_OK). The window stays
 * where it was moved, also when DDL rebuilds the query (DROP INDEX).
 * LDB_MISUSE for a query without an ORDER BY ... LIMIT of its own, inside
 * an explicit transaction or a live query callback. Any other error
 * (LDB_NOMEM...) is the query's terminal error (ldb_live_error): its last
 * published result stays readable, and it publishes nothing more.
 * Every error sets ldb_errmsg of the query's database.
 */
LDB_API int ldb_live_set_window(ldb_live *q, int64_t offset, int64_t limit);
/* Calls fn for each current result row, in order for ORDER BY queries;
 * rows are borrowed for the call. A nonzero return stops (LDB_ABORT).
 * fn is a live query callback (see ldb_change_fn for what it may do); it
 * sees one unchanging result. A failed query (ldb_live_error) shows its
 * last published result. LDB_MISUSE when fn is NULL. */
LDB_API int ldb_live_read(ldb_live *q, ldb_row_fn fn, void *ctx);
/* Rows of the current result (copies counted); 0 for a NULL q. */
LDB_API int64_t ldb_live_count(ldb_live *q);
/* Visible columns and their names (borrowed while q is open); 0 and NULL
 * for a NULL q or an i out of range. */
LDB_API int ldb_live_column_count(ldb_live *q);
LDB_API const char *ldb_live_column_name(ldb_live *q, int i);
/* LDB_OK, or the error that put q in its terminal error state (a failed
 * graph run: out of memory, integer overflow, duplicate key...); then
 * *msg (if msg is not NULL) says why, else it is NULL. A failed query
 * publishes nothing more; its last published result stays readable;
 * close it and open a new one. Out of memory while a commit maintains a
 * query fails the query, never the commit. LDB_MISUSE for a NULL q. */
LDB_API int ldb_live_error(ldb_live *q, const char **msg);

/* Work and space counters of a live query. */
typedef struct ldb_live_stats {
    uint64_t rows_read;      /* rows read from tables (hydration included) */
    uint64_t rows_processed; /* rows consumed by the graph's operators */
    uint64_t runs;           /* graph runs */
    uint64_t retained_rows;  /* rows held by operators and the result */
    uint64_t retained_bytes;
    int64_t result_rows;
    uint64_t child_results;  /* a query's active child live results (one per
                                distinct bucket of each LIVE column); their
                                rows and bytes are in retained_* */
} ldb_live_stats;
/* Fills *out (all zero for a NULL q); a NULL out is a no-op. */
LDB_API void ldb_live_stats_get(ldb_live *q, ldb_live_stats *out);
/* Closes q. Allowed inside any live query callback (see ldb_change_fn).
 * NULL is a no-op, and so is a child live result (see below: release it
 * if it was retained). */
LDB_API void ldb_live_close(ldb_live *q);

/*
 * Child live results: a result column LIVE (query) of a live query (of
 * its outermost SELECT, or of such a child's) holds, in each row, a child
 * live result: an ldb_live of its own whose rows are the child query's
 * for that row's values (docs/SQL.md, "Nested results"). Rows whose
 * values the child reads are the same (same types and bytes, NULLs
 * included: the child may show them, so 5 and 5.0 or 'a' and 'A' are not
 * the same) share one handle (the same pointer).
 * - Its changes come in its own batches, through its own callback
 *   (ldb_live_set_callback; none until one is set). A change of its rows
 *   does not touch the parent row, whose cell names the same handle.
 * - A parent row whose values change so that it reads another bucket
 *   (the route moves) gets the handle of that bucket: a handle is never
 *   retargeted.
 * - Publication order within a commit: a query's own batch, then its
 *   child handles' (parent columns before their children's, then in the
 *   order the handles were made); every result of the commit is installed
 *   before the first callback, so any read sees the whole commit. A new
 *   handle's first batch (its rows, all inserts) comes in the commit that
 *   made it, after the parent batch that shows it, so a parent callback
 *   can set the child's callback in time.
 * - Lifetime: a handle lives while a row of its parent refers to it. When
 *   the last such row goes (or moves), its rows are deleted in one last
 *   batch and then it is freed, unless the program retained it
 *   (ldb_live_retain): then it stays valid, reads as empty and gets no
 *   batch, until ldb_live_release. A later row with those values gets a
 *   new handle. Closing the parent query frees its child handles; a
 *   retained one stays valid (empty, no columns) until released, and
 *   every handle is freed by ldb_close.
 * - ldb_live_read, _count, _column_count, _column_name, _error and
 *   _stats_get work on a child handle
 *   (stats count the work of the whole query); ldb_live_set_window and
 *   ldb_live_close do not apply (LDB_MISUSE / no-op).
 */
/* The child live result in column i of r (a row of a live query's batch
 * or read), borrowed: valid during the callback, or longer if retained;
 * NULL when column i is not a LIVE cell. */
LDB_API ldb_live *ldb_row_live(const ldb_row *r, int i);
/* A child live result's number within its query, from 1 in the order the
 * handles were made (the N of live#N, ldb_row_format's text of its cell);
 * 0 for a query, or NULL. */
LDB_API int64_t ldb_live_id(ldb_live *q);
/* Sets the callback of any live result (root or child); allowed inside
 * callbacks. LDB_MISUSE for a NULL q. */
LDB_API int ldb_live_set_callback(ldb_live *q, ldb_change_fn fn, void *ctx);
/* The program's hold on a child live result (see above); LDB_MISUSE for
 * NULL, a root query (owned by whoever opened it), or a release that was
 * not retained. Allowed inside callbacks. */
LDB_API int ldb_live_retain(ldb_live *q);
LDB_API int ldb_live_release(ldb_live *q);

/* ---- materialized views ------------------------------------------------------ */

/*
 * CREATE MATERIALIZED VIEW v AS SELECT ... keeps the result in a table v
 * that every reader sees as a table and that only its maintenance writes:
 * at the end of each statement that changes what the body reads, inside
 * that statement's transaction (docs/SQL.md, docs/ARCHITECTURE.md). These
 * are its counters since it was created.
 */
typedef struct ldb_mv_stats {
    const char *strategy;    /* "projection", "aggregate", "dataflow" or
                                "rebuild" (static text) */
    uint64_t changes;        /* source row changes the view consumed */
    uint64_t written;        /* rows of v inserted, updated or deleted */
    uint64_t suppressed;     /* recomputed rows identical to the stored ones,
                                not written (no-op changes) */
    uint64_t runs;           /* maintenance passes (one per statement round
                                that changed a source) */
    uint64_t rechecks;       /* groups re-read from a source (a retracted
                                min/max) */
    uint64_t resyncs;        /* dataflow states rebuilt from the tables
                                after a failure */
    uint64_t retained_bytes; /* maintenance state beyond the table v */
    int64_t rows;            /* rows of v */
} ldb_mv_stats;

/* The counters of materialized view name; LDB_NOTFOUND when there is no
 * such view. */
LDB_API int ldb_mv_stats_get(ldb *db, const char *name, ldb_mv_stats *out);

/* ---- user-defined aggregates -------------------------------------------------- */

/* Where a finalize or decompose callback puts its result (borrowed for
 * the call; no call leaves NULL). Text and blobs are copied. The setters
 * return LDB_NOMEM when a copy fails, which the callback returns. */
typedef struct ldb_result ldb_result;
LDB_API void ldb_result_null(ldb_result *r);
LDB_API void ldb_result_int64(ldb_result *r, int64_t v);
LDB_API void ldb_result_double(ldb_result *r, double v);
LDB_API void ldb_result_bool(ldb_result *r, int v);
LDB_API int ldb_result_text(ldb_result *r, const char *s, int n); /* n < 0: up to the NUL */
LDB_API int ldb_result_blob(ldb_result *r, const void *p, int n);

#define LDB_DETERMINISTIC 1 /* the result depends only on the arguments */

/*
 * An aggregate function and its declared algebra. livedb never decides
 * anything from a function's name: the declaration says how a group is
 * kept when rows leave it.
 *
 * Every callback gets ctx; those returning int return LDB_OK, or an error
 * code that fails the statement. A group's state is state_size bytes,
 * zeroed before its first step, owned by livedb.
 * - step (required): adds one tuple of nargs arguments (args is borrowed
 *   for the call, NULL values included).
 * - inverse (optional): removes one tuple that step added. With it, a
 *   group of a live query or materialized view is updated in place when
 *   rows leave it; without it, livedb keeps the group's argument tuples
 *   and recomputes the group from them (steps in value order) when it
 *   changes.
 * - merge (optional): state += other (other unchanged).
 * - finalize (required): the result of the state; called after every
 *   change of an incrementally kept group, so it must not change state.
 * - destroy (optional): releases what state holds; the memory is livedb's.
 * - decompose (optional, one argument only): declares that the result is
 *   a function of count, the number of non-NULL arguments, and sum, their
 *   sum, whenever the arguments are INTEGERs (as avg is sum / count). A
 *   materialized view grouping one table then keeps count and sum in its
 *   table and calls decompose instead of stepping the group's rows (a sum
 *   that does not fit in 64 bits fails the statement).
 * - ctx_free (optional): called with ctx when the database closes.
 */
typedef struct ldb_aggregate {
    size_t state_size;
    unsigned flags;          /* LDB_DETERMINISTIC, needed by live queries
                                and materialized views */
    void *ctx;
    int (*step)(void *ctx, void *state, const ldb_row *args);
    int (*inverse)(void *ctx, void *state, const ldb_row *args);
    int (*merge)(void *ctx, void *state, const void *other);
    int (*finalize)(void *ctx, const void *state, ldb_result *out);
    void (*destroy)(void *ctx, void *state);
    int (*decompose)(void *ctx, int64_t count, int64_t sum, ldb_result *out);
    void (*ctx_free)(void *ctx);
} ldb_aggregate;

/*
 * Registers name(arg1, ..., argN) as an aggregate of db (def is copied;
 * ctx is the caller's until ctx_free). A registration overrides a
 * built-in of the same name and argument count, and the newest
 * registration of a name wins for statements compiled afterwards.
 * LDB_MISUSE for a missing step/finalize, nargs outside 0..100, or
 * decompose with nargs != 1; LDB_NOMEM.
 */
LDB_API int ldb_create_aggregate(ldb *db, const char *name, int nargs, const ldb_aggregate *def);

/* ---- sources: tables whose truth lives elsewhere (the demand plane) ---- */

/*
 * A source makes a table a local cache of rows kept elsewhere (a server,
 * PostgreSQL, an API). The program attaches a provider to the table; from
 * then on user SQL cannot write it (LDB_ERROR "cannot modify table t: a
 * source loads it, ...") and its rows come only from the provider's sync
 * transactions. Live queries
 * drive the loading: each scan of the table in a live query is demand,
 * which livedb turns into requests to the provider, grouped and shared
 * (docs/ARCHITECTURE.md, "Demand plane").
 *
 * - EAGER: one request for every row, made at attach.
 * - ON_DEMAND: requests only for what open live queries read. A query's
 *   WHERE conjuncts over the table's columns (=, <>, <, <=, >, >=, IN,
 *   IS [NOT] NULL, AND/OR of those, with constants or parameters) are
 *   pushed into its request; a LIVE (query) child whose WHERE has
 *   col = <parent column> gets one grouped request per child query for the
 *   values of all its active buckets (col IN (...)), and more as buckets
 *   activate; a value whose last bucket retires is released. Anything
 *   else asks for a superset (in the worst case every row): a provider may
 *   always deliver more rows than asked, never fewer.
 * Releasing demand never deletes rows (rows leave only by sync writes),
 * except under LDB_SOURCE_RETAIN_OWNED.
 * One-shot SELECTs read the cache as it is and cause no loading, and a
 * materialized view cannot read an ON_DEMAND table (LDB_UNSUPPORTED).
 *
 * Threads. The core stays single-threaded: provider callbacks, status
 * callbacks and the application of sync transactions run on the thread
 * of an ldb_ call on the database, with its mutex held, at a dispatch
 * point: the end of the outermost ldb_ call on the database (outside any
 * explicit transaction, callback or unfinished statement), and
 * ldb_source_poll. Sync transactions and settlements may be made from any
 * thread and never take the database's mutex: they join one queue per
 * database, in order, and are applied at the next dispatch point. Made on
 * the thread that attached the source (its home thread), outside any
 * callback, they are applied before the call returns. A program whose
 * provider works on other threads watches ldb_source_fd (readable while
 * the queue holds work) and calls ldb_source_poll.
 */
typedef struct ldb_source ldb_source;
typedef struct ldb_request ldb_request;
typedef struct ldb_pred ldb_pred;
typedef struct ldb_sync ldb_sync;
typedef struct ldb_receipt ldb_receipt;

#define LDB_SOURCE_EAGER 1
#define LDB_SOURCE_ON_DEMAND 2
/*
 * Or'ed into the mode: query-owned retention (law 11). A row stays in the
 * table exactly while some demand owns it: a live query's demand whose
 * predicate (and key) the row matches, or the eager load (which owns
 * every row). A sync row nobody owns is not kept (an old version is
 * deleted), and when demand goes away the rows nobody owns any more are
 * deleted at the next dispatch point, in one commit. A program pins rows
 * by keeping a live query over them open. Without it (the default),
 * rows stay until sync writes delete them.
 *
 * Persisted retention. Rows the table already holds when such a source
 * is attached (a durable database reopened, ldb_open) are visible at once
 * and owned by persisted retention until the source revalidates them:
 * the first dispatch point makes one grouped request for their keys
 * (ldb_request_keys; for a composite primary key, the values of its
 * first column: a superset of the rows). When it settles, each of those
 * rows whose primary key no sync write of the source touched meanwhile
 * (from that request or any other) is deleted, as gone at the source,
 * and persisted retention ends: the rows then stay only while demand
 * owns them. A revalidation that fails leaves the rows, still retained,
 * until the source is detached or stopped.
 */
#define LDB_SOURCE_RETAIN_OWNED 0x10

/*
 * A provider's callbacks (the struct is copied at attach; ctx is the
 * provider's). They run at dispatch points (see above) with db's mutex
 * held. Inside them, the provider may read the database, build and commit
 * sync transactions and settle requests (all applied in order as soon as
 * the callback returns); it may not write with SQL, open or close live
 * queries, or attach/detach sources (LDB_MISUSE).
 * - load_subset: start loading req's rows. LDB_OK: the request is the
 *   provider's until it settles it (ldb_request_settle), maybe from inside
 *   this call; take a reference (ldb_request_ref) to use req after the
 *   callback returns. Any other code: no load started; the demand fails
 *   (status LDB_STATUS_ERROR) and unload_subset is never called for req.
 * - unload_subset (optional): the demand behind req is gone; called exactly
 *   once per request whose load_subset returned LDB_OK, also when it is
 *   released from inside load_subset (then right after it returns). The
 *   request is also aborted (ldb_request_aborted) if it had not settled.
 * - abort (optional): req was aborted before it settled (its demand went
 *   away, or the source is detached): stop writing its rows. Sync
 *   transactions of req still queued are dropped (LDB_RECEIPT_ABORTED).
 *   Called just before unload_subset.
 * - destroy (optional): the source is detached or the database closed;
 *   last call with ctx.
 */
typedef struct ldb_provider {
    int (*load_subset)(void *ctx, ldb_request *req);
    void (*unload_subset)(void *ctx, ldb_request *req);
    void (*abort)(void *ctx, ldb_request *req);
    void (*destroy)(void *ctx);
} ldb_provider;

/*
 * Attaches provider p (copied) with ctx to table, in mode
 * LDB_SOURCE_EAGER or LDB_SOURCE_ON_DEMAND. The table must have a declared
 * PRIMARY KEY (sync writes address rows by it), must not have a source
 * already, nor (ON_DEMAND) be read by a materialized view; live queries
 * and materialized views already open over it keep reading it as it is
 * (an EAGER source attached again after a durable database reopened). *out is borrowed: valid until
 * ldb_source_detach or ldb_close. LDB_NOTFOUND, LDB_MISUSE (no primary
 * key, already attached, a transaction or callback), LDB_NOMEM.
 */
LDB_API int ldb_source_attach(ldb *db, const char *table, int mode, const ldb_provider *p,
                              void *ctx, ldb_source **out);
/*
 * Detaches s: every request is aborted and unloaded once, queued sync
 * transactions are dropped (ABORTED), destroy(ctx) runs, and the table
 * becomes an ordinary local table with the rows it holds. Live queries
 * reading it turn READY. LDB_MISUSE inside a callback or transaction.
 */
LDB_API int ldb_source_detach(ldb_source *s);
/*
 * Sessions (seed 000, "Cleanup, restart"). ldb_source_stop ends s's
 * session: every request is aborted and unloaded once, queued sync
 * transactions and settlements of s are dropped (ABORTED), and so is any
 * transaction begun before the stop; the live queries its demand served
 * fail for good (ldb_live_error: "source of table t stopped"; their last
 * result stays readable): reopen them after ldb_source_start. The table
 * keeps its rows. ldb_source_start opens a new session: demand made
 * meanwhile (queries opened while stopped) is requested then, and an
 * EAGER source loads everything again. Old-session settlements and
 * transactions never publish, fail or ready anything in the new one.
 * Both are no-ops when already so; LDB_MISUSE inside a callback or
 * transaction.
 */
LDB_API int ldb_source_stop(ldb_source *s);
LDB_API int ldb_source_start(ldb_source *s);
/* The name of s's table (borrowed, valid while s is). */
LDB_API const char *ldb_source_table(ldb_source *s);

/* A file descriptor that is readable while the database's queue holds
 * sync transactions or settlements to apply (or -1 on NOMEM): poll it in
 * an event loop and call ldb_source_poll. Owned by db. */
LDB_API int ldb_source_fd(ldb *db);
/* A dispatch point: applies everything queued (transactions and
 * settlements, in the order they were made), makes and releases the
 * requests that changed demand asks for, and runs the callbacks that
 * follow (changes, statuses). LDB_MISUSE inside a callback or an explicit
 * transaction, or while a statement of db is stepped and not yet done or
 * reset (its reads must not see the table change); LDB_OK otherwise
 * (failures are reported on the receipts, requests and queries they
 * concern). */
LDB_API int ldb_source_poll(ldb *db);

/* Counters of a source (law 13: all but the totals return to zero when
 * no live query demands anything). */
typedef struct ldb_source_stats {
    uint64_t demands;        /* distinct demanded subsets (predicate, key value) */
    uint64_t requests_live;  /* requests made and not yet unloaded */
    uint64_t queued;         /* its transactions and settlements in the queue */
    uint64_t requests;       /* total requests made */
    uint64_t settles;        /* total settlements applied */
    uint64_t txns_applied;   /* total sync transactions applied */
    uint64_t txns_aborted;   /* total sync transactions dropped or failed */
    uint64_t rows_written;   /* total rows inserted, updated or deleted */
    uint64_t rows;           /* rows the table holds now (retained rows) */
} ldb_source_stats;
/* Fills *out (zeros for a NULL s). */
LDB_API void ldb_source_stats_get(ldb_source *s, ldb_source_stats *out);

/*
 * Requests. A request is immutable from submission: its predicate, SQL
 * text and values never change (changed demand is a new request). The
 * accessors take no lock and may be called from any thread while the
 * caller holds a reference: during load_subset/unload_subset/abort, or
 * between ldb_request_ref and ldb_request_unref. Strings and values are
 * borrowed for that span.
 */
LDB_API void ldb_request_ref(ldb_request *r);
LDB_API void ldb_request_unref(ldb_request *r);
/* The source and table (borrowed), and a number unique within the
 * database, increasing with each request made (its generation). */
LDB_API ldb_source *ldb_request_source(const ldb_request *r);
LDB_API const char *ldb_request_table(const ldb_request *r);
LDB_API uint64_t ldb_request_id(const ldb_request *r);
/* 1 once r is aborted (its demand went away before it settled, or the
 * source was detached): a conforming provider writes nothing more for r
 * (law 6). Atomic; any thread. */
LDB_API int ldb_request_aborted(const ldb_request *r);
/*
 * The rows asked for, as a livedb/PostgreSQL-compatible boolean SQL
 * expression over the table's columns (double-quoted names) with
 * parameters ?1..?N, e.g. "status" = ?1 AND "owner" IN (?2, ?3); "TRUE"
 * for every row. ldb_request_param(r, i), i in 0..N-1, is ?i+1.
 */
LDB_API const char *ldb_request_sql(const ldb_request *r);
LDB_API int ldb_request_param_count(const ldb_request *r);
LDB_API const ldb_value *ldb_request_param(const ldb_request *r, int i);
/*
 * The same predicate as a tree (NULL: every row). Kinds: AND and OR
 * (children), CMP (column op value), IN (column, values), ISNULL and
 * NOTNULL (column). Comparisons follow SQL: NULL matches nothing, and
 * text compares under ldb_pred_collation (an enum ldb_collation).
 */
#define LDB_PRED_AND 1
#define LDB_PRED_OR 2
#define LDB_PRED_CMP 3
#define LDB_PRED_IN 4
#define LDB_PRED_ISNULL 5
#define LDB_PRED_NOTNULL 6
#define LDB_OP_EQ 1
#define LDB_OP_NE 2
#define LDB_OP_LT 3
#define LDB_OP_LE 4
#define LDB_OP_GT 5
#define LDB_OP_GE 6
LDB_API const ldb_pred *ldb_request_pred(const ldb_request *r);
LDB_API int ldb_pred_kind(const ldb_pred *p);
LDB_API int ldb_pred_op(const ldb_pred *p);            /* CMP */
LDB_API const char *ldb_pred_column(const ldb_pred *p); /* CMP IN ISNULL NOTNULL */
LDB_API int ldb_pred_collation(const ldb_pred *p);     /* CMP IN */
/* AND/OR: children; CMP: 1 value; IN: the values; else 0. */
LDB_API int ldb_pred_count(const ldb_pred *p);
LDB_API const ldb_pred *ldb_pred_child(const ldb_pred *p, int i);
LDB_API const ldb_value *ldb_pred_value(const ldb_pred *p, int i);

/*
 * Ordered loading: a live query with ORDER BY c ... LIMIT n over an
 * on-demand table, whose first ORDER BY term is a column c of the table
 * (BINARY, default NULL placement) and whose rows come from that table
 * alone, loads its window in pages: 1 when r is such a page, with
 * *column = c, *desc, and *limit: r asks for the first *limit rows that
 * match its predicate in the order of c (NULLs lowest: first ascending,
 * last descending); the predicate then holds the page's cursor (e.g.
 * "c" > ?3). A page may cut a group of equal values: livedb then asks
 * for that group (c = value, unordered) and continues after it, until
 * the window is full or a page brings nothing new; the query publishes
 * its window once, when all of it is loaded (also after
 * ldb_live_set_window), and stays LOADING until then. After a failure,
 * ldb_live_retry asks for every matching row. 0 for any other request.
 */
LDB_API int ldb_request_order(const ldb_request *r, const char **column, int *desc,
                              int64_t *limit);
/* A page's cursor: it asks for the rows strictly after this value in the
 * order (a NULL value: the non-NULL rows, ascending); NULL for the first
 * page and for any other request. The predicate already says so. */
LDB_API const ldb_value *ldb_request_cursor(const ldb_request *r);
/*
 * Grouped child demand: the number of key values (0 when r is not
 * grouped) and *column, the table's column they are for; r asks for the
 * rows whose column equals one of them (its predicate's IN node, ANDed
 * with the child's other pushed conjuncts). ldb_request_key(r, i) is the
 * i-th value, i in 0..count-1.
 */
LDB_API int ldb_request_keys(const ldb_request *r, const char **column);
LDB_API const ldb_value *ldb_request_key(const ldb_request *r, int i);

/*
 * Settles r: rc LDB_OK when every row it asked for has been committed
 * through sync transactions (made before this call), else the failure
 * with msg (copied; may be NULL). Any thread, once per request (then
 * LDB_MISUSE); applied in queue order, after the transactions made before
 * it (law 7). A settlement of a request that is no longer current
 * (aborted, unloaded) changes nothing. Does not drop a reference.
 */
LDB_API int ldb_request_settle(ldb_request *r, int rc, const char *msg);

/*
 * Sync transactions: the only writes to a source's table. Build one on
 * one thread (any thread, no lock taken), then commit or abandon it.
 * req: the request these rows establish (NULL for a change feed): if req
 * is aborted before the transaction is applied, it is dropped. Rows are
 * given by setting column values (by declared column index, copied) and
 * then one of: insert (a new key, or an identical row: no-op), upsert
 * (insert or replace by primary key), update (replace by primary key;
 * no-op when the key is absent), delete (by the primary key columns;
 * no-op when absent). Unset columns are NULL (insert/upsert/update).
 * A row identical to the stored one is not written (no change published).
 * Values are converted by the column's affinity as INSERT does. A call
 * that fails (LDB_NOMEM, LDB_RANGE for a column out of range) changes
 * nothing: repeat it, or abandon the transaction.
 */
LDB_API int ldb_sync_begin(ldb_source *s, ldb_request *req, ldb_sync **out);
LDB_API int ldb_sync_null(ldb_sync *t, int col);
LDB_API int ldb_sync_int64(ldb_sync *t, int col, int64_t v);
LDB_API int ldb_sync_double(ldb_sync *t, int col, double v);
LDB_API int ldb_sync_text(ldb_sync *t, int col, const char *s, int n); /* n < 0: strlen */
LDB_API int ldb_sync_blob(ldb_sync *t, int col, const void *p, int n);
LDB_API int ldb_sync_insert(ldb_sync *t);
LDB_API int ldb_sync_upsert(ldb_sync *t);
LDB_API int ldb_sync_update(ldb_sync *t);
LDB_API int ldb_sync_delete(ldb_sync *t);
/*
 * Rows set after this call are for s's table: one transaction may write
 * the tables of several sources of the database (a server transaction
 * that spans tables), applied as one atomic commit. s must stay attached
 * until t is committed or abandoned; t is dropped (ABORTED) if any source
 * it writes is detached or stopped before it applies. Values set and not
 * yet added as a row are discarded. The first source (ldb_sync_begin's)
 * owns the request, the receipt and the queue position; a truncate is
 * only for it (LDB_MISUSE otherwise). LDB_MISUSE for a source of another
 * database, LDB_NOMEM (nothing changed).
 */
LDB_API int ldb_sync_source(ldb_sync *t, ldb_source *s);
/*
 * Truncate (law 9): everything the source gave is void. The table's rows
 * are deleted by this transaction (the rows that follow in it, and later
 * transactions, fill it again), and every demand on the source is
 * acquired again with new requests (the old ones are aborted and
 * unloaded). Until every request of that replay has settled OK, the live
 * queries its demand serves publish nothing: they keep their last result
 * (their changes are kept privately), and then publish the replacement
 * as one batch before turning READY. A failed replay request keeps them
 * so (status ERROR) until ldb_live_retry succeeds or the failing demand
 * retires; a newer truncate starts a new replay. A window move of a held
 * query waits too (its batch comes with the replacement). One-shot
 * SELECTs read the table as it is meanwhile.
 */
LDB_API int ldb_sync_truncate(ldb_sync *t);
/*
 * Commits t (consumed, also on failure) as one atomic write of the table:
 * every live query sees it as one commit. Applied at once on the source's
 * home thread outside callbacks, else queued for the next dispatch point.
 * receipt (may be NULL): *receipt gets a receipt owned by the caller
 * (ldb_receipt_free). Returns LDB_OK, or the error that made an
 * immediate application fail (LDB_CONSTRAINT, LDB_TYPE...: nothing of it
 * was applied), or LDB_NOMEM (nothing queued).
 */
LDB_API int ldb_sync_commit(ldb_sync *t, ldb_receipt **receipt);
LDB_API void ldb_sync_abandon(ldb_sync *t);

#define LDB_RECEIPT_PENDING 0 /* queued */
#define LDB_RECEIPT_APPLIED 1 /* its writes are in the table and every live result */
#define LDB_RECEIPT_ABORTED 2 /* dropped: its request was aborted, or the source detached */
#define LDB_RECEIPT_FAILED 3  /* applying it failed; nothing of it was applied */
/* The state (atomic; any thread) and, for FAILED, why (valid until freed). */
LDB_API int ldb_receipt_state(const ldb_receipt *r);
LDB_API const char *ldb_receipt_error(const ldb_receipt *r);
LDB_API void ldb_receipt_free(ldb_receipt *r);

/*
 * Readiness of a live query (root or child handle) over sources:
 * LOADING while some demand reachable from its current result is not yet
 * covered by a settled current request; READY when all is (always, for a
 * query over local tables only); ERROR when a request for it failed (msg:
 * the provider's message) until ldb_live_retry. A failed query
 * (ldb_live_error) is ERROR for good, with that error's message, over
 * sources or not: its status callback is called when the commit that
 * failed it publishes (or the next commit, when that one was cancelled).
 * A root's status covers its child handles; a handle's covers its own
 * bucket. Pending demand hides nothing: rows are published as they
 * arrive. Borrowed msg, valid until the status changes.
 */
#define LDB_STATUS_READY 0
#define LDB_STATUS_LOADING 1
#define LDB_STATUS_ERROR 2
LDB_API int ldb_live_status(ldb_live *q, const char **msg);
/* Called after each change of q's status, after the batches of the same
 * dispatch point; same rules as a change callback. NULL fn: none. */
typedef void (*ldb_status_fn)(void *ctx, ldb_live *q, int status, const char *msg);
LDB_API int ldb_live_set_status_callback(ldb_live *q, ldb_status_fn fn, void *ctx);
/* Asks again for q's failed demand (new requests); LDB_MISUSE for NULL
 * or inside a callback. */
LDB_API int ldb_live_retry(ldb_live *q);

/* ---- optimistic transactions ------------------------------------------------
 *
 * A local-first program writes before the server agrees. An optimistic
 * transaction runs ordinary SQL writes (INSERT, UPDATE, DELETE; on local
 * tables and on sourced tables alike) and commits them into a pending
 * layer over the synced state. The visible state is the synced state with
 * every pending optimistic transaction re-applied in commit order; every
 * read sees it: one-shot SELECTs, live queries, includes and materialized
 * views (no read sees the synced state alone; a mutation's before-row is
 * the visible row the transaction replaced).
 *
 * Each row an optimistic transaction wrote (its net change per primary key)
 * is one mutation: INSERT (no row before), UPDATE (same key before and
 * after; a primary key change is a DELETE and an INSERT) or DELETE.
 * Re-applying a mutation over a synced state that changed underneath:
 * INSERT puts its row (over a synced row of the same key too); UPDATE puts
 * the columns it changed onto the row there now, and no longer applies
 * when there is no row (its transaction is rejected); DELETE removes the
 * row if there is one. A re-applied row that breaks a UNIQUE constraint
 * rejects the latest transaction that wrote it (or the other row's, when
 * that one is optimistic); a synced row always wins over an optimistic
 * one it collides with. A sync transaction is judged on its result, not
 * row by row: rows it changes may swap UNIQUE values. Two synced rows
 * that collide (the server's state breaks the constraint) fail the step:
 * a sync transaction then FAILS, and a confirmation or rejection that
 * would expose them is dropped, its transaction still pending.
 *
 * Resolution. An optimistic transaction stays pending until
 * - a sync transaction that carries the server's version is applied with
 *   ldb_sync_confirm: the server's rows replace the synced rows and the
 *   optimistic transaction is dropped in the same commit (rows it wrote
 *   that the sync transaction does not carry keep its values as synced);
 *   when the server's rows equal the optimistic ones nothing is published;
 * - ldb_optimistic_confirm: the server accepted it as written; its rows
 *   become synced;
 * - ldb_optimistic_reject: its effects are removed, the later pending
 *   transactions are re-applied over what is left (one that no longer
 *   applies is rejected too, with a message saying why), and every live
 *   result changes by exactly the difference, in one commit.
 * Sync writes under pending rows change the synced state underneath;
 * livedb recomputes the visible rows of the keys they touched (work in
 * proportion to those keys and the mutations pending on them) and
 * publishes the difference as one commit.
 *
 * While optimistic writes to a table are pending, ordinary SQL writes to
 * it are refused (LDB_ERROR; write it in an optimistic transaction): their
 * statements read the visible state, so they could not be re-applied.
 * DDL inside an optimistic transaction is refused at commit, and so is a
 * write to a table without a declared PRIMARY KEY (mutations address rows
 * by key). Materialized views' own tables are not mutations.
 *
 * Threads: ldb_optimistic_begin/commit run under the database's mutex like
 * ldb_exec. A handle (ldb_optimistic) is immutable but for its state; its
 * accessors, ldb_optimistic_confirm/reject/free and ldb_sync_confirm take
 * no database lock and may be called from any thread. Confirmations and
 * rejections join the queue of sources' transactions and settlements, in
 * order, and are applied at the next dispatch point (at once when made on
 * the thread that committed the optimistic transaction, outside
 * callbacks).
 */
typedef struct ldb_optimistic ldb_optimistic;

/* Opens an optimistic transaction on db (as BEGIN does): SQL writes made
 * with ldb_exec / ldb_step until ldb_optimistic_commit belong to it, and
 * are visible at once to reads inside it. ROLLBACK (SQL) discards it;
 * COMMIT (SQL) is refused (LDB_MISUSE). LDB_MISUSE inside a transaction or
 * a callback. */
LDB_API int ldb_optimistic_begin(ldb *db);

/*
 * The mutation callback: the program hands o's mutations to its upstream
 * (for instance, queues them for a network thread). It runs inside
 * ldb_optimistic_commit, after every live result shows the write, with
 * db's mutex held. It must not start loads or wait for readiness: opening
 * live queries, moving windows, ldb_source_poll, ldb_live_retry, source
 * attach/detach/stop/start, SQL writes and transaction control get
 * LDB_MISUSE there. Reading is allowed, and so are ldb_optimistic_reject /
 * confirm (applied when the commit returns). o is borrowed for the call
 * (ldb_optimistic_ref keeps it).
 */
typedef void (*ldb_mutation_fn)(void *ctx, ldb_optimistic *o);

/*
 * Commits the open optimistic transaction into the pending layer: its
 * changes are published to live queries as one commit, send(ctx, o) runs
 * (NULL: none), and *out (may be NULL) gets a reference the caller owns
 * (ldb_optimistic_free). A transaction that wrote nothing commits and
 * resolves at once (CONFIRMED, no mutations). On failure the transaction
 * stays open, unchanged (fix it or ROLLBACK): LDB_MISUSE outside an
 * optimistic transaction or inside a callback, LDB_ERROR for DDL or a
 * table without a declared PRIMARY KEY, LDB_NOMEM.
 */
LDB_API int ldb_optimistic_commit(ldb *db, ldb_mutation_fn send, void *ctx,
                                  ldb_optimistic **out);

/*
 * Calls send(ctx, o) for each pending optimistic transaction of db, in
 * commit order, under the rules of the mutation callback (o borrowed).
 * For a program that sends again what its upstream may not have: after a
 * reconnect, or after reopening a durable database, whose pending
 * transactions are kept in the database itself (in the tables
 * livedb_outbox and livedb_outbox_keys, which users can read but not
 * write): they come back pending, with their rows visible and their
 * synced rows kept for a rejection, and resolve as if the program had
 * never stopped. Their handles are new (ldb_optimistic_id is the same).
 * LDB_MISUSE for NULL db or send, or inside a callback; LDB_NOMEM.
 */
LDB_API int ldb_optimistic_pending(ldb *db, ldb_mutation_fn send, void *ctx);

#define LDB_OPTIMISTIC_PENDING 0
#define LDB_OPTIMISTIC_CONFIRMED 1
#define LDB_OPTIMISTIC_REJECTED 2
/* The state (atomic, any thread); for REJECTED, why (valid while the
 * handle is). */
LDB_API int ldb_optimistic_state(const ldb_optimistic *o);
LDB_API const char *ldb_optimistic_error(const ldb_optimistic *o);
/* A number unique within the database, increasing in commit order. */
LDB_API uint64_t ldb_optimistic_id(const ldb_optimistic *o);
/* Another reference (each needs one ldb_optimistic_free). Freeing the
 * last reference does not resolve the transaction. */
LDB_API void ldb_optimistic_ref(ldb_optimistic *o);
LDB_API void ldb_optimistic_free(ldb_optimistic *o);

/*
 * Mutations, i in 0..ldb_optimistic_count-1, in the order of their first
 * write, grouped by table. Everything returned is borrowed from o, valid
 * while a reference is held, from any thread: the values are o's own
 * copies. before is NULL for INSERT, after NULL for DELETE, col in
 * 0..ldb_optimistic_columns-1 (declared columns).
 */
#define LDB_MUTATION_INSERT 1
#define LDB_MUTATION_UPDATE 2
#define LDB_MUTATION_DELETE 3
LDB_API int ldb_optimistic_count(const ldb_optimistic *o);
LDB_API int ldb_optimistic_kind(const ldb_optimistic *o, int i);
LDB_API const char *ldb_optimistic_table(const ldb_optimistic *o, int i);
LDB_API int ldb_optimistic_columns(const ldb_optimistic *o, int i);
LDB_API const ldb_value *ldb_optimistic_before(const ldb_optimistic *o, int i, int col);
LDB_API const ldb_value *ldb_optimistic_after(const ldb_optimistic *o, int i, int col);

/*
 * Resolution (see above). Any thread. LDB_OK once queued (the outcome is
 * ldb_optimistic_state, and the resolution callback); a transaction already
 * resolved when the item is applied stays as it is; one that cannot be
 * applied for lack of memory or a disk error (LDB_IOERR, LDB_FULL) is
 * tried again at the next dispatch point. LDB_MISUSE for NULL or a handle
 * whose database is closed; LDB_NOMEM (nothing queued). msg (copied; may
 * be NULL) is what ldb_optimistic_error will say.
 */
LDB_API int ldb_optimistic_confirm(ldb_optimistic *o);
LDB_API int ldb_optimistic_reject(ldb_optimistic *o, const char *msg);
/* When t is applied, o is confirmed by it in the same commit (see above);
 * if t fails or is dropped, o stays pending. Takes a reference to o.
 * LDB_MISUSE for NULL, or a handle of another database or of a closed
 * one (a durable database's reopened transactions have new handles). */
LDB_API int ldb_sync_confirm(ldb_sync *t, ldb_optimistic *o);

/* Called once per optimistic transaction of db when it resolves
 * (confirmed, or rejected: also those rejected because an earlier one was;
 * not for one that wrote nothing),
 * after the live results show it, at the dispatch point that resolved it.
 * o is borrowed for the call. Same rules as a provider callback. NULL fn:
 * none. */
typedef void (*ldb_resolved_fn)(void *ctx, ldb_optimistic *o, int state);
LDB_API int ldb_set_resolved_callback(ldb *db, ldb_resolved_fn fn, void *ctx);

/* Counters of db's pending layer (pending and rows return to zero once
 * every optimistic transaction has resolved). */
typedef struct ldb_optimistic_stats {
    uint64_t pending;        /* transactions pending */
    uint64_t rows;           /* rows under pending writes (overlaid keys) */
    uint64_t recomputed;     /* total visible rows recomputed by sync writes
                                beneath pending rows, confirmations and
                                rejections (the layer's work) */
    uint64_t confirmed;      /* totals */
    uint64_t rejected;
} ldb_optimistic_stats;
/* Fills *out (zeros for a NULL db). */
LDB_API void ldb_optimistic_stats_get(ldb *db, ldb_optimistic_stats *out);

#ifdef __cplusplus
}
#endif
#endif
