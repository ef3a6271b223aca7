/*
 * live.h - live queries: a SELECT compiled into a dataflow graph that is
 * kept up to date by the committed changes of the tables it reads, and
 * that tells its owner exactly what changed, one batch per commit.
 *
 * The API layer (src/api/db*.c) owns a live_registry per database and calls:
 *   live_open      when the program opens a live query (a bound plan);
 *   live_close     when the program closes one.
 * Everything else comes from the store's hooks (storage/capture.h): each
 * query is a commit subscriber, and the registry subscribes once for
 * publication. (program.h is the layer's other face, for materialized
 * views.)
 *
 * Publication (seed 000, law 9): at commit every affected query runs its
 * graph and installs its new result first; only then, once the store has
 * completed the commit and is out of the statement (its published hook),
 * are the callbacks called, in commit order, so a callback that reads any
 * live query sees the same commit. A rolled-back transaction publishes
 * nothing; a commit that changes nothing in a query's result publishes
 * nothing to it.
 *
 * A query whose graph fails (out of memory, a runtime error such as
 * integer overflow in a projection, a duplicate result key) goes to a
 * terminal error state readable with live_error; it publishes nothing
 * partial and the writing transaction is not affected.
 */
#ifndef LDB_LIVE_LIVE_H
#define LDB_LIVE_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "livedb.h"
#include "sql/plan.h"

struct store;
struct live_registry;

/* Work and space counters of one live query (ldb_live_stats). */
struct live_stats {
    uint64_t rows_read;        /* rows read from tables (hydration + refills) */
    uint64_t rows_processed;   /* rows consumed by the graph's operators */
    uint64_t runs;             /* graph runs */
    size_t retained_rows;      /* rows held by operators and the result */
    size_t retained_bytes;
    int64_t result_rows;       /* rows in the current result */
    uint64_t child_results;    /* active child live results (a root's) */
};

/* user: the API's database, given back by live_db. */
int live_registry_new(struct store *st, void *user, struct live_registry **out);
/* Closes every query still open. */
void live_registry_free(struct live_registry *reg);

/*
 * Opens a live query over plan (bound by the SQL layer, with parameters
 * params[0..nparams), copied). ordered: the SELECT has an ORDER BY of its
 * own (a plan's top SORT may also come from a derived table, whose order
 * is not the result's), so changes report positions. The plan must stay
 * valid while the query lives: it belongs to owner, which the query
 * releases with release(owner) when it is closed (also when live_open
 * fails). The query hydrates from the tables and delivers the initial
 * result as its first batch (all inserts) before returning; *out is then
 * owned by the caller (live_close), or NULL when that first callback
 * closed the query. err says why it failed: LDB_UNSUPPORTED for a query
 * that cannot be kept live (non-deterministic, LIMIT without ORDER
 * BY...), LDB_MISUSE inside an explicit transaction or a callback,
 * LDB_NOMEM (nothing is left behind).
 */
int live_open(struct live_registry *reg, struct plan *plan, bool ordered, const value *params,
              uint32_t nparams, void (*release)(void *owner), void *owner,
              ldb_change_fn fn, void *ctx, ldb_live **out, struct eval_error *err);
/* Closes q; allowed from inside a callback (freed when the outermost
 * callback returns). */
void live_close(ldb_live *q);

/* True while a callback runs (on_change, or ldb_live_read's row
 * function): the API then refuses writes, transaction control and
 * closing the database. */
bool live_in_callback(const struct live_registry *reg);
/* The owner given to live_open (NULL for a child live result). */
void *live_owner(const ldb_live *q);
/* The user given to live_registry_new (roots and child results alike). */
void *live_db(const ldb_live *q);

/* ---- child live results (LIVE (query)) ----------------------------------- */

/* A LIVE cell as published rows show it: type LDB_LIVE, the child handle
 * in the payload. It holds no reference and never enters the value layer
 * (it exists only in the public views of rows). */
static inline value live_cell_value(ldb_live *h)
{
    value v = { .h = { .type = LDB_LIVE, .u.i = (int64_t)(intptr_t)h } };
    return v;
}
static inline ldb_live *live_cell_handle(const value *v)
{
    return v->h.type == LDB_LIVE ? (ldb_live *)(intptr_t)v->h.u.i : NULL;
}
bool live_is_child(const ldb_live *q);
/* A child's activation number within its query (0 for a root). */
uint64_t live_child_id(const ldb_live *q);
/* The program's references to a child handle (LDB_MISUSE for a root, or
 * a release without a retain). A released handle whose bucket has
 * retired is freed once no callback runs. */
int live_retain(ldb_live *q);
int live_release(ldb_live *q);
/* Sets q's callback (any handle, also from inside a callback). */
void live_set_callback(ldb_live *q, ldb_change_fn fn, void *ctx);

/* Moves an ORDER BY ... LIMIT window; the callback gets one batch. err
 * says why it failed: LDB_MISUSE (no window, a transaction, a callback),
 * or the error that failed the query (LDB_NOMEM...). */
int live_set_window(ldb_live *q, int64_t offset, int64_t limit, struct eval_error *err);
/* The query's state: LDB_OK, or the code it failed with (msg then says
 * why, else it is NULL). */
int live_error(const ldb_live *q, const char **msg);
/* Visits the current result rows (in order for ORDER BY queries). */
int live_read(ldb_live *q, ldb_row_fn fn, void *ctx);
int64_t live_count(const ldb_live *q);
void live_stats(const ldb_live *q, struct live_stats *out);
/* Visible column count and names of the result. */
uint32_t live_columns(const ldb_live *q);
const char *live_column_name(const ldb_live *q, uint32_t i);

/* ---- demand on loading tables (src/source) ------------------------------------ */

/*
 * A demand point: one scan of a loading table (table.h, table_loading) in
 * a query, at one level: the root query (LIVE_LEVEL_ROOT) or a LIVE
 * (query) child. conj are the pushable conjuncts of the filters right
 * above the scan (column op constant/parameter, IN lists, IS [NOT] NULL,
 * AND/OR of those, BETWEEN), over the table's columns, each with an
 * affinity that changes no stored value of its column; other conjuncts
 * are not pushed, so the rows they ask for are a superset. In a child, a
 * conjunct column = <parent value> makes the point keyed: key_col is that
 * column and the key of a child handle is item key_capture of its bucket
 * tuple, converted by key_aff (live_demand_key). Borrowed from the query,
 * valid while it lives.
 */
#define LIVE_LEVEL_ROOT UINT32_MAX
struct live_demand {
    struct table *table;
    uint32_t level;            /* LIVE_LEVEL_ROOT or the child's index */
    const struct expr **conj;  /* nconj pushable conjuncts */
    uint32_t nconj;
    int32_t key_col;           /* -1: not keyed */
    uint32_t key_capture;
    uint8_t key_aff;           /* enum col_type */
    uint8_t key_coll;          /* enum ldb_collation of the key comparison */
    int32_t order_col;         /* >= 0: the root's ORDER BY ... LIMIT window is
                                  this scan's rows in this column's order
                                  (BINARY, NULLs lowest): ordered loading */
    bool order_desc;
};
/* The rows q's window needs from the start of its order: offset + limit
 * (-1: no window). */
int64_t live_window_need(const ldb_live *q);

/*
 * The source layer's view of demand. opened(q): q (a root query, or a
 * child handle whose bucket activated) now has the demand points of its
 * level (live_demands); LDB_NOMEM fails what made q. gone(q): q's demand
 * is gone (closed, bucket retired, root closed); called once per opened.
 * Neither may call back into the live layer except the readers below.
 */
struct live_demand_hooks {
    void *ctx;
    int (*opened)(void *ctx, ldb_live *q);
    void (*gone)(void *ctx, ldb_live *q);
    /* q's window moved (before its batch is staged): a hold taken here
     * keeps the move private until it ends (ordered loading). */
    void (*window_moved)(void *ctx, ldb_live *q);
};
void live_set_demand_hooks(struct live_registry *reg, const struct live_demand_hooks *h);
/* q's demand points (those of its level); *n gets their count. */
const struct live_demand *live_demands(const ldb_live *q, uint32_t *n);
/* The query's bound parameters (EXPR_PARAM u.index is 1-based). */
const value *live_params(const ldb_live *q, uint32_t *n);
/* The key of keyed point d for child handle q (borrowed), or NULL. */
const value *live_demand_key(const ldb_live *q, const struct live_demand *d);
/* The source layer's state of q (NULL until set). */
void live_set_demand_state(ldb_live *q, void *state);
void *live_demand_state(const ldb_live *q);
/* The root query of q (q itself for a root; NULL for a detached handle). */
ldb_live *live_root(ldb_live *q);
/* The first table of plan (and its subqueries) whose loading is
 * ON_DEMAND, or NULL (materialized views refuse them). */
struct table *live_plan_on_demand_table(const struct plan *p);

/*
 * A publication barrier (law 9, a source's truncate replay): while q (a
 * root) is held, its graph consumes every commit but nothing is staged or
 * published; the last unhold stages the net change since the hold as one
 * batch and publishes it (callbacks run; q may be closed by them). Holds
 * nest. A window move meanwhile stays private too (published with the rest).
 */
void live_hold(ldb_live *q);
void live_unhold(ldb_live *q);

/* Fails q (a root) for good with msg, as a graph failure does (its last
 * published result stays readable; ldb_live_error tells why). */
void live_terminate(ldb_live *q, const char *msg);

/* Readiness (livedb.h ldb_live_status): set by the source layer; a
 * change marks q for live_notify_status. msg is copied (NULL: none). */
void live_set_status(ldb_live *q, int status, const char *msg);
int live_status(const ldb_live *q, const char **msg);
void live_set_status_callback(ldb_live *q, ldb_status_fn fn, void *ctx);
/* Calls q's status callback if its status changed since the last call
 * and q is not closed, with the rules of change callbacks. A query closed
 * by it stays allocated until live_free_closed. */
void live_notify_status(ldb_live *q);
/* Frees the queries closed from callbacks (none may be running). */
void live_free_closed(struct live_registry *reg);

#endif
