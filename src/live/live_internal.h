/*
 * live_internal.h - the structures shared by the live layer's files:
 * the live query itself, its table sources, and the compiler's context.
 * The program functions (program.h) are the layer's face for
 * materialized views; what is here stays inside src/live/.
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
#include "live/program.h"
#include "live/result.h"
#include "sql/plan.h"

struct table;
struct table_index;
struct store;
struct subscription;
struct window_loader;
struct delta;

/* One base table read by a query: every scan of it shares this input. */
struct live_source {
    struct table *table;
    df_node *input;
    struct window_loader *loader; /* bounded: fed by an ordered window */
    bool lookup_only;  /* read only through its indexes: not hydrated */
    bool must_hydrate; /* the other side of an index-to-index join */
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

/*
 * A compiled query: the rewritten plan, the dataflow graph, the sources
 * that feed it, and where the key and order of its output rows are. Live
 * queries publish its output through a result set; materialized views
 * write it into their backing tables. Its output rows are the visible
 * columns, then hidden order values, then hidden key columns (key[] and
 * sort[] give their positions).
 */
struct live_program {
    plan_arena pa;             /* the rewritten plan nodes */
    struct plan *plan;         /* as bound (its owner's) */
    value *params;             /* copies of the bound parameters */
    uint32_t nparams;
    arena cba;                 /* operator callback contexts */

    df_graph *g;
    df_node *out;
    const struct plan *root_limit; /* the LIMIT of the result's window */
    df_node *window;           /* its top-k, when ORDER BY ... LIMIT */
    int64_t offset, limit;     /* its window (limit < 0: none) */
    uint32_t nuser_sort;       /* ORDER BY terms (key tie-breakers follow) */
    bool bounded;              /* may feed a window from an index prefix */
    const struct result_set *published; /* the window as published, for
                                           trimming (NULL: never trim) */
    df_batch acc;              /* output of the runs of one delta */
    VEC(struct live_source) sources;
    VEC(struct live_values) values;
    VEC(struct live_partition) partitions;
    VEC(struct table_index *) indexes; /* table indexes the graph reads */

    uint32_t ncols;            /* output columns, hidden ones included */
    uint32_t nvisible;         /* visible output columns */
    const char **names;        /* their names */
    uint32_t nkey;
    uint32_t key[RESULT_MAX_KEY];
    enum ldb_collation keycoll[RESULT_MAX_KEY];
    uint32_t nsort;
    struct result_sort_term sort[RESULT_MAX_SORT];

    enum live_state state;
    int errcode;
    struct eval_error err;     /* the failure, or runtime errors of callbacks */
    struct live_stats stats;
};

struct ldb_live {
    struct live_registry *reg;
    ldb_change_fn fn;
    void *ctx;
    void (*release)(void *);   /* releases owner, which holds the plan */
    void *owner;
    struct plan *plan;         /* the owner's */
    struct live_program *p;
    struct result_set rs;
    struct {                   /* the staged batch's public views */
        ldb_change *out;
        void *rows;
        value *keys;
    } views;
    struct subscription *sub;
    bool ordered;              /* the SELECT has its own ORDER BY: changes
                                  report positions */
    bool pending;              /* an installed batch waits for publication */
    bool closing;              /* closed from a callback: freed when the
                                  outermost callback returns */
    ldb_live *next_pending;
};

struct live_registry {
    struct store *store;
    struct subscription *sub;  /* publication (the queries subscribe to
                                  their commits one by one) */
    VEC(ldb_live *) queries;
    ldb_live *pending_head, *pending_tail;
    bool publishing;           /* on_change callbacks are running */
    uint32_t reading;          /* ldb_live_read scans under way */
};

/* ---- compile.c ------------------------------------------------------------------ */

/*
 * Builds prog->g from prog->plan: rewrites the plan (decorrelation, result
 * keys, result order) and compiles it into operators. err gets the reason
 * of a failure.
 */
int live_compile(struct live_program *prog, struct eval_error *err);

/* ---- source.c ------------------------------------------------------------- */

/* The source of table t in prog, made on first use. */
int live_source_for(struct live_program *prog, struct table *t, struct live_source **out);
/* Pushes every row of every full source and every VALUES node. */
int live_hydrate(struct live_program *prog);
/* Pushes one table delta (from change capture) into prog's inputs, as
 * -old +new, or +old -new when negate. */
struct delta;
int live_push_delta(struct live_program *prog, const struct delta *d, bool negate,
                    bool *touched);
/*
 * The external arrangement over t's storage for a join side that is a
 * scan of t (filters: conditions the rows must also pass), keyed by the
 * table columns cols[0..n) under colls, or LDB_NOTFOUND when no index or
 * primary key serves that key.
 */
int live_arrange_table(struct live_program *prog, df_node *in, struct table *t, const uint32_t *cols,
                       const enum ldb_collation *colls, uint32_t n,
                       const expr *const *filters, uint32_t nfilters, df_node **out);

/* ---- decorrelate.c ------------------------------------------------------- */

/* Replaces every subquery in p's tree by joins; *out is the new tree. */
int live_decorrelate(struct live_program *prog, struct plan *p, struct plan **out,
                     struct eval_error *err);

/* ---- evaluation helpers (compile.c) ------------------------------------------ */

void live_eval_ctx(struct live_program *prog, struct eval_ctx *cx, const value *vals,
                   uint32_t ncols);
/* Sets err (unless already set) and returns code. */
int live_error_out(struct eval_error *err, int code, const char *msg);
/* Records a failure of prog (first one wins); returns code. */
int live_fail(struct live_program *prog, int code, const char *msg);

#endif
