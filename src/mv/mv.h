/*
 * mv.h - materialized views: a SELECT kept, row for row, in a read-only
 * table (its backing table) that is brought up to date at the end of
 * every statement that changes what it reads, inside that statement's
 * transaction.
 *
 * The API layer (src/api/db*.c) owns one mv_registry per database and calls:
 *   mv_create, mv_drop, mv_explain   for the three statements, inside a
 *                                    write statement (db_write_begin);
 *   mv_stats, mv_backing_name        to read a view.
 * Everything else comes from the store: while any view exists the
 * registry is a statement subscriber (storage/capture.h), whose hooks
 * maintain the views at statement end, restore them after rollbacks
 * (rollback, then settled), rebuild dataflow state without a dropped
 * index, and refuse DROP TABLE of a backing table or of a table a view
 * reads (with the view's name). The dataflow arm compiles bodies through
 * the live layer's program face (live/program.h).
 *
 * Promises (seed 004, docs/ARCHITECTURE.md "Materialized views"):
 * - after every statement, SELECT * FROM v equals the body evaluated from
 *   scratch, byte for byte; views over views are maintained in the same
 *   statement, producers before consumers;
 * - ROLLBACK, ROLLBACK TO and a failed statement restore the views with
 *   their sources; a maintenance error fails the writing statement;
 * - a change that leaves a view row identical writes nothing;
 * - an out-of-memory failure leaves every view as it was.
 */
#ifndef LDB_MV_MV_H
#define LDB_MV_MV_H

#include <stdbool.h>
#include <stdint.h>

#include "sql/expr.h"

struct store;
struct strbuf;
struct table;
struct table_index;
struct func_registry;
struct mv_registry;

/* What the database's settings say at CREATE (PRAGMA values). */
struct mv_options {
    bool nondeterministic_ok;   /* PRAGMA nondeterministic_schema */
    bool cheap_arms;            /* PRAGMA materialized_view_cheap_arms (default
                                   ON): OFF gives every deterministic body the
                                   dataflow arm (to compare the arms) */
    int64_t rebuild_threshold;  /* PRAGMA materialized_view_rebuild_row_threshold;
                                   0: no limit */
};

#define MV_DEFAULT_REBUILD_THRESHOLD 10000

/* Per-view counters (EXPLAIN MATERIALIZED VIEW, ldb_mv_stats). */
struct mv_stats {
    const char *strategy;       /* "projection", "aggregate", "dataflow", "rebuild" */
    uint64_t changes;           /* source row changes consumed */
    uint64_t written;           /* backing rows inserted, updated or deleted */
    uint64_t suppressed;        /* recomputed rows identical to the stored ones */
    uint64_t runs;              /* maintenance passes (one per statement round) */
    uint64_t rechecks;          /* groups re-read from the source (min/max retractions) */
    uint64_t resyncs;           /* dataflow states rebuilt from the tables */
    uint64_t retained_bytes;    /* maintenance state beyond the backing table */
    int64_t rows;               /* rows of the backing table */
};

/* funcs: the database's registered functions (bodies may call them);
 * env: random state for bodies PRAGMA nondeterministic_schema admits. */
int mv_registry_new(struct store *st, const struct func_registry *funcs, struct eval_env *env,
                    struct mv_registry **out);
/* Before the store closes. NULL is a no-op. */
void mv_registry_free(struct mv_registry *reg);
/* Whether a materialized view reads table t (sources refuse such tables). */
bool mv_reads_table(const struct mv_registry *reg, const struct table *t);

/*
 * CREATE MATERIALIZED VIEW: sql[0..len) is the statement's text (it is
 * parsed again and kept, and becomes the backing table's DDL text). Must
 * run inside a write statement. On failure err has the code, the message
 * and, for SQL errors, the offset in sql[0..len).
 */
int mv_create(struct mv_registry *reg, const char *sql, uint32_t len,
              const struct mv_options *opt, struct eval_error *err);
/*
 * A view whose backing table a durable database recovered (read-only,
 * its DDL text a CREATE MATERIALIZED VIEW): maintained again from now on,
 * its rows taken as they are. Inside a write statement. Fails like
 * mv_create when the body no longer binds (a function the program has
 * not registered yet: the table then stays as it is, unmaintained).
 * LDB_NOTFOUND when the table's text is not a CREATE MATERIALIZED VIEW
 * (a plain view's table), decided by the parser.
 */
int mv_restore(struct mv_registry *reg, struct table *backing, struct eval_error *err);
/* DROP MATERIALIZED VIEW name. Inside a write statement. */
int mv_drop(struct mv_registry *reg, const char *name, bool if_exists, struct eval_error *err);
/* EXPLAIN MATERIALIZED VIEW name: text lines into out. */
int mv_explain(struct mv_registry *reg, const char *name, struct strbuf *out,
               struct eval_error *err);
int mv_stats(struct mv_registry *reg, const char *name, struct mv_stats *out);

/* The view whose backing table is t, if any (its name), else NULL. */
const char *mv_backing_name(const struct mv_registry *reg, const struct table *t);

#endif
