/*
 * live_internal.h - the structures shared by the live layer's files:
 * the live query itself, its table sources, and the compiler's context.
 *
 * A live query owns: its bound plan's owner (released at close), an arena
 * of rewritten plan nodes, the dataflow graph, one source per base table it reads (the
 * graph input that table's changes feed), the callback contexts of the
 * graph's operators (an arena), and the published result.
 */
#ifndef LDB_LIVE_INTERNAL_H
#define LDB_LIVE_INTERNAL_H

#include "base/arena.h"
#include "base/vec.h"
#include "dataflow/dataflow.h"
#include "live/live.h"
#include "live/result.h"
#include "sql/plan.h"

struct table;
struct table_index;
struct store;
struct subscription;
struct window_loader;

/* One base table read by a query: every scan of it shares this input. */
struct live_source {
    struct table *table;
    df_node *input;
    struct window_loader *loader; /* bounded: fed by an ordered window */
};

/* A VALUES node: constant rows pushed once, at hydration. */
struct live_values {
    df_node *input;
    const struct plan *plan;
};

/* LIMIT nodes made by decorrelation are per capture tuple: the plan node
 * and how many leading columns form the partition. */
struct live_partition {
    const struct plan *limit;
    uint32_t ncols;
};

enum live_state { LIVE_OK, LIVE_FAILED };

struct ldb_live {
    struct live_registry *reg;
    ldb_change_fn fn;
    void *ctx;

    plan_arena pa;             /* the rewritten plan nodes */
    struct plan *plan;         /* as bound (owner's) */
    void (*release)(void *);   /* releases owner, which holds the plan */
    void *owner;
    value *params;             /* copies of the bound parameters */
    uint32_t nparams;
    arena cba;                 /* operator callback contexts */

    df_graph *g;
    df_node *out;
    const struct plan *root_limit; /* the LIMIT of the result's window */
    df_node *window;           /* its top-k, when ORDER BY ... LIMIT */
    int64_t offset, limit;     /* its window (limit < 0: none) */
    uint32_t nuser_sort;       /* ORDER BY terms (key tie-breakers follow) */
    df_batch acc;              /* output of the runs of one commit */
    VEC(struct live_source) sources;
    VEC(struct live_values) values;
    VEC(struct live_partition) partitions;

    uint32_t nvisible;         /* visible result columns (then hidden ones) */
    const char **names;        /* nvisible names */
    struct result_set rs;

    enum live_state state;
    int errcode;
    struct eval_error err;     /* runtime errors of operator callbacks */

    struct subscription *sub;
    bool pending;              /* a published batch waits for live_flush */
    bool closing;              /* closed from a callback: free after flush */
    ldb_live *next_pending;

    struct live_stats stats;
};

struct live_registry {
    struct store *store;
    VEC(ldb_live *) queries;
    ldb_live *pending_head, *pending_tail;
    bool publishing;
};

/* ---- compile.c -------------------------------------------------------------- */

/*
 * Builds q->g from q->plan: rewrites the plan (decorrelation, result
 * keys, result order), compiles it into operators, and sets up the
 * result set. err gets the reason of a failure.
 */
int live_compile(ldb_live *q, struct eval_error *err);

/* ---- source.c ------------------------------------------------------------- */

/* The source of table t in q, made on first use. */
int live_source_for(ldb_live *q, struct table *t, struct live_source **out);
/* Pushes every row of every full source and every VALUES node. */
int live_hydrate(ldb_live *q);
/* Pushes one table delta (from change capture) into q's inputs. */
struct delta;
int live_push_delta(ldb_live *q, const struct delta *d, bool *touched);
/*
 * The external arrangement over t's storage for a join side that is a
 * scan of t (filters: conditions the rows must also pass), keyed by the
 * table columns cols[0..n) under colls, or LDB_NOTFOUND when no index or
 * primary key serves that key.
 */
int live_arrange_table(ldb_live *q, df_node *in, struct table *t, const uint32_t *cols,
                       const enum ldb_collation *colls, uint32_t n,
                       const expr *const *filters, uint32_t nfilters, df_node **out);

/* ---- decorrelate.c ------------------------------------------------------- */

/* Replaces every subquery in p's tree by joins; *out is the new tree. */
int live_decorrelate(ldb_live *q, struct plan *p, struct plan **out,
                     struct eval_error *err);

/* ---- evaluation helpers (compile.c) ------------------------------------------ */

void live_eval_ctx(ldb_live *q, struct eval_ctx *cx, const value *vals, uint32_t ncols);
/* Records a failure of q (first one wins). */
int live_fail(ldb_live *q, int code, const char *msg);

#endif
