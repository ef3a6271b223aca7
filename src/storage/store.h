/*
 * store.h - the storage layer's entry point: the catalog of tables and
 * indexes, transactions and savepoints, statements, and errors.
 *
 * Include this one header to use the layer; it brings in table.h (rows,
 * writes, scans), index.h (index reads), reader.h (reads in a requested
 * ORDER BY) and capture.h (change capture and hooks).
 *
 * Statements. Every change (row writes and DDL) happens inside a
 * statement: store_stmt_begin, the writes, store_stmt_end(rc). A
 * statement that ends with rc != LDB_OK leaves no trace: the store rolls
 * back to its start. A statement outside an explicit transaction is its
 * own transaction (autocommit): it commits at store_stmt_end. Statements
 * do not nest, and the transaction calls below are made outside them.
 *
 * Transactions follow SQL: BEGIN, COMMIT, ROLLBACK, SAVEPOINT name,
 * RELEASE name, ROLLBACK TO name (which keeps the savepoint open).
 * SAVEPOINT outside a transaction starts one, and releasing that
 * outermost savepoint commits it. Savepoint names are case-insensitive;
 * RELEASE and ROLLBACK TO take the most recent savepoint of that name.
 * DDL (create/drop table or index) is allowed in transactions and rolls
 * back with them.
 *
 * Rollback is implemented with an undo log (old row, new row per write)
 * and needs no memory: writes remove index entries in a way that keeps
 * room to put them back (table.h), so ROLLBACK, ROLLBACK TO and the undo
 * of a failed statement always complete, restoring the very row objects,
 * even while every allocation fails.
 *
 * Errors: functions return result codes from livedb.h; the message of
 * the last failure is store_errmsg (constraint and type errors name the
 * table and column: "UNIQUE constraint failed: t.a").
 *
 * One store is used by one thread at a time.
 */
#ifndef LDB_STORAGE_STORE_H
#define LDB_STORAGE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/capture.h"
#include "storage/index.h"
#include "storage/reader.h"
#include "storage/schema.h"
#include "storage/table.h"

struct store;

/* ---- life cycle and errors --------------------------------------------------- */

/* A new empty store (caller owns; store_close). LDB_NOMEM possible. */
int store_open(struct store **out);
/* Rolls back an open transaction (no hooks are called), frees every
 * table, index and registration. NULL is a no-op. */
void store_close(struct store *s);

/*
 * A durable store at path (docs/ARCHITECTURE.md, "Durability"): the
 * files are locked, the last snapshot and the log replayed, and from then
 * on every commit appends its changes to the log before it completes (a
 * failure to write it fails the commit, like a failed commit hook).
 * Errors: LDB_BUSY (locked by another handle), LDB_CANTOPEN, LDB_CORRUPT,
 * LDB_UNSUPPORTED (a newer file format), LDB_IOERR, LDB_FULL, LDB_NOMEM,
 * with the message in err[0..errlen); the files are then as they were.
 * store_close checkpoints a durable store that has log records (best
 * effort: a failure leaves the log, which holds everything).
 */
int store_open_file(const char *path, struct store **out, char *err, size_t errlen);
/* Writes a snapshot of every table and index and empties the log; a
 * no-op for a store in memory. LDB_MISUSE inside a transaction; on an
 * I/O error or LDB_NOMEM the files still hold everything. */
int store_checkpoint(struct store *s);
bool store_is_durable(const struct store *s);
/* store_close will leave the files as they are (no checkpoint): for an
 * open that fails after recovery. */
void store_keep_files(struct store *s);
/* PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL (livedb.h says what each
 * promises). Ignored in memory. */
void store_set_sync(struct store *s, int mode);
int store_sync_mode(const struct store *s);
/* Log bytes past which a commit checkpoints (0: never). */
void store_set_checkpoint_threshold(struct store *s, uint64_t bytes);
uint64_t store_checkpoint_threshold(const struct store *s);
/* Bytes of the log file (header included); 0 in memory. */
uint64_t store_log_file_bytes(const struct store *s);

/* Message of the last error ("" if none); borrowed until the next call. */
const char *store_errmsg(const struct store *s);
/* Sets the message (printf format) and returns rc: for hooks and for the
 * layers above, so that one message buffer reports every failure. */
int store_error(struct store *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- catalog ----------------------------------------------------------------- */

/*
 * Creates a table from def (copied). Each UNIQUE constraint gets an
 * automatic unique ordered index. *out (optional) is the new table.
 * LDB_ERROR for a name already used by a table or index ("table t already
 * exists") or an invalid definition; LDB_MISUSE outside a statement;
 * LDB_NOMEM.
 */
int store_create_table(struct store *s, const struct table_def *def,
                       struct table **out);
/*
 * A table a layer makes for its own use (materialized views), with what
 * user tables cannot have: declared columns that SELECT * leaves out
 * (hidden[i], one flag per declared column; NULL: none; writes still
 * supply them), and a declared primary key that may hold NULL
 * (key_nulls: NULL is then one key value like any other, and no key is
 * automatic). Otherwise store_create_table.
 */
struct table_opts {
    const bool *hidden;
    bool key_nulls;
};
int store_create_table_opts(struct store *s, const struct table_def *def,
                            const struct table_opts *opts, struct table **out);
/* Drops a table and its indexes. The table stays allocated until the
 * transaction commits (a rollback brings it back). Subscribers are asked
 * first (capture.h check_drop): their refusal is returned. LDB_ERROR for
 * a read-only table outside internal mode. */
int store_drop_table(struct store *s, struct table *t);
/* Asks the subscribers whether t may be dropped, as store_drop_table
 * does: LDB_OK or the first refusal (message set). */
int store_check_drop(struct store *s, struct table *t);

/* The table or index with this name (ASCII case-insensitive), or NULL. */
struct table *store_find_table(const struct store *s, const char *name);
struct table_index *store_find_index(const struct store *s, const char *name);
/* Tables in creation order, for .schema and listing. */
size_t store_table_count(const struct store *s);
struct table *store_table_at(const struct store *s, size_t i);

/*
 * Creates an index on t from def (copied) and fills it from the rows in
 * O(n log n). LDB_CONSTRAINT ("UNIQUE constraint failed: t.a") when a
 * unique index meets duplicate keys; LDB_ERROR for a used name, an empty
 * or too long key, or a bad column; LDB_NOMEM. Nothing changes on error.
 */
int store_create_index(struct store *s, struct table *t,
                       const struct index_def *def, struct table_index **out);
/* Drops an index (kept allocated until commit), then tells the
 * subscribers (capture.h index_dropped; a hook's error is returned with
 * the drop done, and the statement must fail). LDB_ERROR for the index of
 * a UNIQUE constraint. */
int store_drop_index(struct store *s, struct table_index *ix);

/* Incremented by every DDL change, its rollback included: a cached plan
 * or compiled query is stale when the version moved. */
uint64_t store_schema_version(const struct store *s);

/* ---- statements and transactions ---------------------------------------------- */

/* Opens a statement (and an autocommit transaction when none is open).
 * LDB_MISUSE when one is already open; LDB_NOMEM. */
int store_stmt_begin(struct store *s);
/*
 * Closes the statement. rc == LDB_OK: runs the statement hooks (which may
 * write), then in autocommit commits (commit hooks). If rc != LDB_OK, or a
 * hook or the commit fails, rolls the statement back (rollback hooks get
 * what they consumed) and returns the failure code (rc itself, when the
 * caller failed); the message is kept. Returns LDB_OK otherwise.
 */
int store_stmt_end(struct store *s, int rc);
/* True between store_stmt_begin and store_stmt_end. */
bool store_in_statement(const struct store *s);

int store_begin(struct store *s);
int store_commit(struct store *s);
int store_rollback(struct store *s);
int store_savepoint(struct store *s, const char *name);
int store_release(struct store *s, const char *name);
int store_rollback_to(struct store *s, const char *name);
/* True when a transaction is open (explicit, or a statement's own). */
bool store_in_transaction(const struct store *s);
/* True when BEGIN or SAVEPOINT opened the transaction. */
bool store_in_explicit_transaction(const struct store *s);

/*
 * Internal mode: between enter and leave (they nest), writes to read-only
 * tables are allowed. For layers that own such tables (materialized view
 * maintenance); user statements never run in it.
 */
void store_enter_internal(struct store *s);
void store_leave_internal(struct store *s);

/* Whether a user statement may write t now (LDB_OK), or why not (LDB_ERROR
 * or LDB_MISUSE, message set): a dropped table, a materialized view's,
 * a sourced table outside optimistic mode, a table with pending optimistic
 * rows outside optimistic mode. Every row write checks it too; a DML
 * statement asks first so that one matching no row is refused as well. */
int store_check_writable(struct store *s, struct table *t);

/*
 * Optimistic mode (the open transaction is an optimistic one, livedb.h):
 * user writes may then change tables a source loads and tables with
 * pending optimistic rows (table.pending), which they may not otherwise.
 */
void store_set_optimistic(struct store *s, bool on);

/* ---- accounting and checks ---------------------------------------------------- */

/* Bytes of the undo log and pending change capture (not the tables). */
size_t store_log_bytes(const struct store *s);
/* Entries in the undo log of the open transaction. */
size_t store_log_length(const struct store *s);

/* Checks every table and index invariant: NULL or the first problem. For
 * tests; O(total rows x log n). */
const char *store_check(const struct store *s);

#endif
