/*
 * exec.h - the one-shot executor: runs a plan (plan.h) from scratch and
 * yields its rows; runs the data-changing statements (bind.h) through
 * storage.
 *
 * Model: pull-based (Volcano). Every plan node becomes an operator with
 * open / next / close; next yields one row at a time. Pulling suits the
 * public API (ldb_step hands out one row per call, and a caller may stop
 * at any time), makes LIMIT stop its input early (an ORDER BY ... LIMIT
 * over an index reads only offset + limit entries), and lets a correlated
 * subquery re-run its operator tree per outer row by closing and
 * re-opening it. Blocking operators (sort, hash join build side,
 * aggregation, set operations) materialize their input as row pointers.
 *
 * Rows: an operator yields a refcounted row (value/row.h) that the
 * consumer borrows until its next call to next. A scan yields the stored
 * row itself, so reading a table copies nothing. Operators that compute
 * rows (project, join, aggregate output) write them into a scratch row
 * they reuse while nobody else holds it; a consumer that keeps a row
 * (sort, hash build, DISTINCT) retains it, and the producer then starts a
 * fresh scratch row. Only the first plan->ncols columns of a yielded row
 * are the node's output (a scan yields whole table rows).
 *
 * Errors: runtime errors (integer overflow, a bad CAST, LIMIT not an
 * integer, a table changed under an open cursor) are reported in the
 * exec's eval_error with their source offset; LDB_NOMEM everywhere an
 * allocation fails. After an error the exec may only be freed.
 */
#ifndef LDB_SQL_EXEC_H
#define LDB_SQL_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "sql/bind.h"
#include "sql/expr.h"
#include "sql/plan.h"
#include "value/row.h"

struct store;

/* What an execution reads from its statement and database. */
struct exec_env {
    struct store *store;
    const value *params;       /* params[i - 1] is parameter i */
    uint32_t nparams;
    struct eval_env *env;      /* random(), changes() ... */
    const uint64_t *epoch;     /* bumped by the database on every write
                                  statement: open cursors check it */
    uint32_t nsubqueries;      /* plan_arena.nsubqueries of the plans run */
    uint64_t join_memory_limit; /* bytes a hash join's build side may hold
                                   (0: no limit); past it the statement
                                   fails with LDB_ERROR. A view's rebuild
                                   runs without one: a write must not fail
                                   for a setting of queries */
};

struct exec;
struct op;

/* A new execution context (caller owns; exec_free). LDB_NOMEM. */
int exec_new(const struct exec_env *env, struct eval_error *err, struct exec **out);
/* Closes every operator and frees everything. NULL is a no-op. */
void exec_free(struct exec *x);

/* Builds and opens the operator tree of p. The tree belongs to x. */
int exec_open(struct exec *x, const struct plan *p, struct op **out);
/* LDB_ROW with *out borrowed until the next call, LDB_DONE, or an error. */
int exec_next(struct op *o, row **out);

/* ---- data-changing statements (exec_dml.c) ---- */

/* Counts of a DML statement's effect, for changes() and the API. */
struct dml_result {
    int64_t changes;           /* rows inserted, updated or deleted */
    int64_t last_rowid;        /* automatic key of the last insert, or 0 */
    bool inserted;
};

/* Each runs inside an open storage statement (store_stmt_begin); on an
 * error the caller ends the statement with the error, which undoes it. */
int exec_insert(struct exec *x, const struct bound_insert *ins, struct dml_result *res);
int exec_update(struct exec *x, const struct bound_update *up, struct dml_result *res);
int exec_delete(struct exec *x, const struct bound_delete *del, struct dml_result *res);

/* ---- shared with the operator files ---- */

/* The execution's error, with a message; returns code. */
int exec_error(struct exec *x, int code, uint32_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
