/*
 * db_internal.h - the database handle and prepared statements behind the
 * public API (include/livedb.h), shared by the API files:
 *
 *   db.c           handle, errors, rows, ldb_exec, prepare/bind/step/reset
 *   db_run.c       compiling a statement and running each kind of statement
 *                  (schema changes and PRAGMA through src/sql/ddl.h)
 *   db_live.c      live queries (ldb_live_*)
 *   db_mv.c        CREATE/DROP/EXPLAIN MATERIALIZED VIEW, ldb_mv_stats_get
 *   db_aggregate.c user-defined aggregates (ldb_create_aggregate)
 *   db_source.c    sources, readiness, the dispatch point
 *   db_optimistic.c optimistic transactions (begin, commit, callbacks)
 *
 * Every change to the database goes through db_write_begin/db_write_end,
 * which wrap storage's statement (store_stmt_begin/end): statement
 * atomicity, autocommit outside BEGIN, and the storage hooks through
 * which materialized views (statement hooks) and live queries (commit
 * hooks) see the changes. Transaction control (BEGIN, COMMIT, ...) calls
 * the store directly and bumps the epoch the same way. Rollbacks,
 * publication, dropped indexes and drop refusals reach those layers from
 * the store too: the API calls nothing on their behalf.
 */
#ifndef LDB_DB_INTERNAL_H
#define LDB_DB_INTERNAL_H

#include <pthread.h>

#include "base/interrupt.h"
#include "base/vec.h"
#include "livedb.h"
#include "sql/bind.h"
#include "sql/ddl.h"
#include "sql/exec.h"
#include "sql/func.h"
#include "sql/parser.h"
#include "sql/plan.h"
#include "storage/store.h"
#include "value/row.h" /* struct ldb_row: a view of n borrowed values */

struct ldb {
    pthread_mutex_t mutex;     /* serializes every ldb_ call on db; recursive,
                                  so callbacks re-enter it (db_lock) */
    uint32_t depth;            /* db_lock nesting of the thread holding it */
    struct src_registry *src;  /* sources (src/source); NULL once closing */
    struct store *store;
    int errcode;
    int erroff;                /* -1 when the error has no position */
    char errmsg[512];
    struct eval_env env;       /* random state, changes, last rowid */
    uint64_t epoch;            /* bumped by every statement that writes */
    struct intr intr;          /* ldb_interrupt's flag, the progress handler */
    uint32_t nactive;          /* calls running SQL, plus statements stepped
                                  and not done: the flag clears at 0 */
    struct ldb_stmt *stmts;    /* every unfinalized statement */
    struct live_registry *live; /* open live queries (src/live) */
    struct mv_registry *mv;    /* materialized views (src/mv) */
    struct func_registry funcs; /* ldb_create_aggregate (db_aggregate.c) */
    struct pragma_table pragmas;
    bool optimistic;           /* the open transaction is optimistic */
    uint32_t in_mutation;      /* inside a mutation callback (ldb_mutation_fn) */
    uint32_t in_aggregate;     /* inside a user aggregate's callback */
    uint32_t dormant;          /* recovered views not maintained yet (db_durable.c) */
    char dormant_why[300];     /* why the first of them is not */
};

/* Why nothing may start loads, wait for readiness or write here: inside
 * a mutation callback (livedb.h, ldb_mutation_fn), or NULL. */
static inline const char *db_mutation_refusal(const ldb *db)
{
    return db->in_mutation ? "not allowed inside an optimistic transaction's mutation callback"
                           : NULL;
}

enum stmt_state { ST_READY, ST_RUNNING, ST_DONE };

struct ldb_stmt {
    ldb *db;
    struct ldb_stmt *prev, *next;
    sql_ast *ast;
    /* compiled form, rebuilt when the schema version moves */
    bool compiled;
    bool live;                 /* a live query's own statement (bind_env.live) */
    struct eval_error *live_only; /* a SELECT with LIVE (query) columns that
                                     ldb_prepare took for ldb_live_open_stmt:
                                     why it cannot be stepped (owned) */
    uint64_t schema_version;
    plan_arena pa;
    sql_ast_vec views;         /* view definitions the plans share names with */
    bound_stmt bound;          /* SELECT, INSERT, UPDATE, DELETE; EXPLAIN's inner */
    /* result columns (owned copies: plans may outlive their tables' names) */
    uint32_t ncols;
    char **colnames;
    /* parameters */
    value *params;
    uint32_t nparams;
    /* a run */
    enum stmt_state state;
    bool stepping;             /* inside ldb_step (db.c) */
    struct exec *exec;
    struct op *root;           /* SELECT */
    VEC(row *) out_rows;       /* EXPLAIN and PRAGMA rows */
    size_t out_i;
    struct eval_error err;
    row *cur;
    ldb_row row;               /* the view of cur handed to callers */
};

/* ---- threads (db.c) ---- */

/* Every public function that touches db, its statements or its live
 * queries runs between these (livedb.h "Threads"). */
static inline void db_lock(ldb *db)
{
    pthread_mutex_lock(&db->mutex);
    db->depth++;
}
/* The end of the outermost call is the demand plane's dispatch point
 * (db_source.c). */
bool db_dispatch_wanted(const ldb *db);
void db_dispatch(ldb *db);
static inline void db_unlock(ldb *db)
{
    if (db->depth == 1 && db_dispatch_wanted(db))
        db_dispatch(db);
    db->depth--;
    pthread_mutex_unlock(&db->mutex);
}
/* Why a call that must not run inside a callback cannot run now (a
 * mutation, provider or live query callback is under way), or NULL. */
const char *db_in_callback(ldb *db);
/* Makes db's source registry (ldb_open). */
int db_sources_open(ldb *db);

/* ---- errors (db.c) ---- */

/* Records an error on db: code, message, and the SQL offset (-1: none).
 * With ast and a position, the message starts "line L, column C: ".
 * Returns code. */
int db_error(ldb *db, int code, const sql_ast *ast, int64_t off, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Records an eval_error (binder or executor) from a statement. */
int db_error_from(ldb *db, const sql_ast *ast, const struct eval_error *err);
void db_clear_error(ldb *db);

/* ---- running (db.c) ---- */

/* Enters a call that runs SQL on db (a step, a live query's hydration):
 * its work may be stopped by ldb_interrupt and the progress handler, and
 * an interrupt left from a moment when nothing ran is dropped. Returns
 * the interrupt scope to give back to db_run_end. */
struct intr *db_run_begin(ldb *db);
void db_run_end(ldb *db, struct intr *outer);
/* One call or RUNNING statement fewer (stmt_finish); the flag clears at 0. */
void db_active_leave(ldb *db);
/* LDB_INTERRUPT, with its message, when db's flag is set; else LDB_OK. */
int db_check_interrupt(ldb *db);

/* ---- writes (db.c) ---- */

/* Opens a storage statement for a write; bumps the epoch. */
int db_write_begin(ldb *db);
/* Ends it: rc == LDB_OK commits (in autocommit) after the statement
 * hooks; anything else undoes the statement. Returns the final code and
 * records storage's message when storage failed. The hooks (view and
 * live query maintenance) are never interrupted. */
int db_write_end(ldb *db, int rc);

/* ldb_prepare for a live query's statement: it binds LIVE (query) as a
 * result column of its outermost SELECT (db.c). The caller holds the lock. */
int db_prepare_live(ldb *db, const char *sql, int nbytes, ldb_stmt **out, const char **tail);

/* ---- compiling and running (db_run.c) ---- */

/* Binds and plans s when it is not compiled for the current schema. */
int stmt_compile(ldb_stmt *s);
/* Frees the compiled form. */
void stmt_uncompile(ldb_stmt *s);
/* Starts a run: statements without rows run to completion here
 * (LDB_DONE), the others are positioned before their first row (LDB_OK). */
int stmt_start(ldb_stmt *s);
/* The next row of a started SELECT, EXPLAIN or PRAGMA. */
int stmt_next(ldb_stmt *s);
/* Ends a run and releases its state. */
void stmt_finish(ldb_stmt *s);

/* ---- durable databases (db_durable.c) ---- */

/* At ldb_open, after the registries: takes the recovered materialized
 * views up again. LDB_OK, or LDB_NOMEM (message set). */
int db_durable_open(ldb *db);
/* Why no write may run (a dormant view), or NULL. */
const char *db_dormant_refusal(const ldb *db);
/* After a registration (ldb_create_aggregate): retries dormant views. */
void db_durable_registered(ldb *db);
/* DROP MATERIALIZED VIEW while views are dormant, outside a transaction:
 * the one write a dormant database takes (drop runs a maintained view's).
 * *handled when s ran here. */
int db_drop_while_dormant(ldb_stmt *s, int (*drop)(ldb_stmt *), bool *handled);
/* PRAGMA synchronous, checkpoint_threshold, wal_checkpoint: *handled
 * when s is one of them; returns LDB_OK or an error (set on db). */
int db_durable_pragma(ldb_stmt *s, bool *handled);

/* CREATE / DROP / EXPLAIN MATERIALIZED VIEW (db_mv.c). */
int db_run_mv(ldb_stmt *s);
/* Frees the functions registered on db (db_aggregate.c). */
void db_funcs_free(ldb *db);

#endif
