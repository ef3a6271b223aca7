/*
 * program.h - the live layer's second face, for materialized views: a
 * bound plan compiled into one dataflow program that is fed the tables'
 * rows and changes and gives its result as keyed, weighted output rows;
 * and the rewrite that gives a plan's result a unique key, by which the
 * views lay out their tables. (live.h is the face for the API: live
 * queries with their callbacks.)
 *
 * A program's output rows are its visible columns, then hidden order
 * values, then hidden key columns (live_program_layout says where the
 * key is). Every run appends its output to the program's output batch,
 * consolidated (live_program_output); the owner reads and clears it.
 *
 * A failure of any run leaves the program failed (its operator state is
 * no longer known): every later call returns the code, and
 * live_program_errmsg says why. The owner builds a new program.
 */
#ifndef LDB_LIVE_PROGRAM_H
#define LDB_LIVE_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataflow/dataflow.h"
#include "sql/plan.h"

struct delta;
struct table_index;
struct live_program;

/* ---- result keys (keys.c) ------------------------------------------------------ */

#define KEYED_MAX 64

/* Why a key is too wide, for the error messages. */
#define LIVE_KEY_WHY                                                                       \
    "each table of a join adds its primary key unless it is joined on all of it, DISTINCT " \
    "and set operations use every column"
#define LIVE_KEY_TOO_WIDE                                                                  \
    "result key too wide for a live query: its rows need more than 64 key columns to be "  \
    "told apart (" LIVE_KEY_WHY ")"

/* A plan whose output carries a unique key in cols[0..n). */
struct keyed {
    struct plan *plan;
    uint32_t n;
    uint32_t cols[KEYED_MAX];
};

/*
 * Rewrites p (new nodes in pa; p itself is not changed) so that its
 * output has a unique key; hidden key columns are appended after p's
 * columns, so readers of p's columns read the same positions. n == 0
 * means at most one row (a scalar aggregate). LDB_UNSUPPORTED when the
 * key would have more than KEYED_MAX columns; LDB_NOMEM.
 */
int live_ensure_key(plan_arena *pa, struct plan *p, struct keyed *k);

/* ---- programs (program.c) ------------------------------------------------------- */

/* The most plan nodes a program compiles, counted after decorrelation,
 * a shared (CTE or view) body once: each becomes a few operators. */
#define LIVE_MAX_NODES 100000

/*
 * A program over plan (owned by the caller, valid while the program
 * lives) with copies of params. bounded: an ORDER BY ... LIMIT root may
 * be fed from an index prefix. On failure err says why and *out is NULL:
 * LDB_UNSUPPORTED for what cannot be kept up to date, LDB_ERROR for a
 * plan of more than LIVE_MAX_NODES nodes, LDB_NOMEM.
 */
int live_program_new(struct plan *plan, const value *params, uint32_t nparams,
                     bool bounded, struct live_program **out, struct eval_error *err);
void live_program_free(struct live_program *prog);
/* Feeds the tables' current rows (and VALUES), runs, and appends the
 * output to the output batch. */
int live_program_hydrate(struct live_program *prog);
/* Feeds the changes of d, runs if any touched the program (*touched), and
 * appends the output to the output batch. */
int live_program_apply(struct live_program *prog, const struct delta *d, bool *touched);
/*
 * Pushes the negation of d's changes (+old -new) without running, for an
 * owner whose changes were rolled back (materialized views): it calls
 * live_program_run once the tables are back in the state the negation
 * leads to, since joins read table indexes as they are at the run.
 * LDB_MISUSE for a bounded program (a window's prefix cannot go back).
 */
int live_program_push_negated(struct live_program *prog, const struct delta *d, bool *touched);
/* Runs whatever was pushed (e.g. after a window move) into the output. */
int live_program_run(struct live_program *prog);
/* Moves the window of the root's ORDER BY ... LIMIT (limit DF_NO_LIMIT:
 * none), before hydration or before a run. */
int live_program_set_window(struct live_program *prog, int64_t offset, int64_t limit);
/* After the output is published: windows unload rows far past them. */
int live_program_trim(struct live_program *prog);
/*
 * After DDL: LDB_OK when every table and index prog reads still exists;
 * LDB_NOTFOUND when an index it reads was dropped (rebuild the program);
 * LDB_ERROR when a table it reads was dropped (err says which).
 */
int live_program_check_schema(const struct live_program *prog, struct eval_error *err);
/* Whether the graph reads ix (an arrangement over it). */
bool live_program_reads_index(const struct live_program *prog, const struct table_index *ix);

/* ---- reading a program ---------------------------------------------------------- */

/* Where the columns of the output rows are. */
struct live_program_layout {
    uint32_t ncols;                       /* hidden ones included */
    uint32_t nvisible;
    uint32_t nkey;                        /* key columns (0: at most one row) */
    const uint32_t *key;                  /* their positions */
    const enum ldb_collation *keycoll;    /* and collations */
};
void live_program_layout(const struct live_program *prog, struct live_program_layout *out);
/* The output of the runs since the owner last cleared it (df_batch_clear),
 * consolidated. */
df_batch *live_program_output(struct live_program *prog);
/* Why the program failed, or a runtime error's message ("" if none). */
const char *live_program_errmsg(const struct live_program *prog);
/* What the program's operators retain. */
void live_program_counters(const struct live_program *prog, struct df_counters *out);

#endif
