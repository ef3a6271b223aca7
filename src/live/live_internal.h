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
#include "base/hmap.h"
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

/* Where the columns of an output's rows are: visible columns, hidden
 * order values, hidden key columns. */
struct live_layout {
    uint32_t ncols;            /* hidden ones included */
    uint32_t nvisible;
    const char **names;        /* of the visible columns */
    uint32_t nkey;
    uint32_t key[RESULT_MAX_KEY];
    enum ldb_collation keycoll[RESULT_MAX_KEY];
    uint32_t nsort;
    struct result_sort_term sort[RESULT_MAX_SORT];
};

#define LIVE_ROOT UINT32_MAX

/*
 * A LIVE (query) column (issue 12, the seed's Collection-valued include).
 * Its parent output (the root, or another child) carries in column cell
 * the capture tuple of the child (an ARRAY, decorrelation's domain
 * column); the graph has two more outputs for it: dom, the distinct
 * tuples of the parent's rows (the active buckets), and rows, the child's
 * rows for every active tuple, laid out as lay says with the tuple
 * appended (column lay.ncols). The facade (child.c) keeps one child live
 * result per active tuple.
 */
struct live_child {
    const struct plan *bound;  /* the LIVE subquery's plan as bound */
    struct plan *plan;         /* assembled: PROJECT(visible ++ order ++ key) */
    uint32_t parent;           /* LIVE_ROOT or the parent's index */
    uint32_t cell;             /* the parent's column holding the tuple */
    struct plan *dom, *rows;   /* set by decorrelation */
    df_node *dom_out, *rows_out;
    df_batch dom_acc, rows_acc; /* output of the runs of one delta */
    struct live_layout lay;
};

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

    struct live_layout lay;    /* of the output rows */
    VEC(struct live_child) children; /* LIVE (query) columns, parents first */
    VEC(struct live_demand) demands; /* scans of loading tables (demand.c) */

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
        value *cells;          /* rows with LIVE cells: before and after
                                  rows' visible columns, handles filled */
    } views;
    struct subscription *sub;
    bool ordered;              /* the SELECT has its own ORDER BY: changes
                                  report positions */
    bool pending;              /* an installed batch waits for publication */
    bool closing;              /* closed from a callback: freed when the
                                  outermost callback returns */
    ldb_live *next_pending;
    size_t reg_pos;            /* its index in reg->queries */
    ldb_live *next_closed;     /* in reg->closed */

    /* a root query with LIVE (query) columns (else NULL): */
    struct live_buckets *buckets;

    /* a child live result (LIVE (query)); see child.c */
    bool is_child;
    bool leaving;              /* its bucket retired: its last batch is staged */
    bool gone;                 /* its bucket retired and that was published:
                                  it gets no batch again */
    bool touched;              /* in its root's buckets->touched */
    uint32_t child;            /* its index in the program's children */
    uint32_t retains;          /* ldb_live_retain minus ldb_live_release */
    ldb_live *root;            /* its query; NULL once that is closed */
    uint64_t id;               /* activation number within its query, from 1 */
    row *dom;                  /* the domain row that activated it (its tuple) */

    /* demand and readiness (demand.c) */
    bool demanding;            /* the hooks' opened(q) succeeded, gone(q) not
                                  yet called */
    void *dstate;              /* the source layer's (live_demand_state) */
    uint32_t holds;            /* live_hold minus live_unhold: while > 0 its
                                  commits stay private (consolidated) */
    int status;                /* LDB_STATUS_* */
    int notified;              /* the status its callback last got */
    char *status_msg;          /* owned, or NULL */
    ldb_status_fn sfn;
    void *sctx;
};

/* A child row of a commit with the handle of its tuple. */
struct live_routed {
    ldb_live *h;
    df_entry e;
};

/* The child live results of one root query, per LIVE column. */
struct live_buckets {
    hmap *active;              /* per child: tuple hash -> ldb_live * */
    VEC(ldb_live *) touched;   /* handles with a staged batch, publication order */
    VEC(struct live_routed) routed; /* a column's rows while staging */
    VEC(df_entry) scratch;     /* one handle's rows while staging */
    uint64_t next_id;
};

struct live_registry {
    struct store *store;
    struct subscription *sub;  /* publication (the queries subscribe to
                                  their commits one by one) */
    VEC(ldb_live *) queries;   /* roots and child live results */
    void *user;                /* given to live_registry_new */
    ldb_live *pending_head, *pending_tail;
    ldb_live *closed;          /* closed, to free once no callback runs */
    bool publishing;           /* on_change callbacks are running */
    struct live_demand_hooks dhooks; /* src/source's, or zeros */
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
/* Pushes every row of every full source and every VALUES node, calling
 * run(prog) after every LIVE_HYDRATE_CHUNK table rows, so that the graph
 * consumes them while they are still in cache. */
#define LIVE_HYDRATE_CHUNK 1024
int live_hydrate(struct live_program *prog, int (*run)(struct live_program *prog));
/* Pushes one table delta (from change capture) into prog's inputs, as
 * -old +new, or +old -new when negate; when run is not NULL, calls it
 * after every LIVE_HYDRATE_CHUNK changes, as live_hydrate does (a large
 * commit goes through the graph the way a hydration does). */
struct delta;
int live_push_delta(struct live_program *prog, const struct delta *d, bool negate,
                    bool *touched, int (*run)(struct live_program *prog));
/*
 * The external arrangement over t's storage for a join side that is a
 * scan of t (filters: conditions the rows must also pass), keyed by the
 * table columns cols[0..n) under colls, or LDB_NOTFOUND when no index or
 * primary key serves that key.
 */
int live_arrange_table(struct live_program *prog, df_node *in, struct table *t, const uint32_t *cols,
                       const enum ldb_collation *colls, uint32_t n,
                       const expr *const *filters, uint32_t nfilters, df_node **out);

/* ---- demand.c ------------------------------------------------------------------ */

/* Finds prog's demand points (after compiling). */
int live_demand_plan(struct live_program *prog);
/* Tells the hooks q's demand exists (if q has any) / is gone (once). */
int live_demand_open(ldb_live *q);
void live_demand_gone(ldb_live *q);

/* ---- child.c ------------------------------------------------------------------- */

/* Makes q->buckets when q's program has LIVE columns. */
int live_children_init(ldb_live *q);
/* Stages the program's child outputs into the child live results
 * (activations, retirements, rows); LDB_NOMEM, LDB_CONSTRAINT,
 * LDB_INTERNAL fail the query. */
int live_children_stage(ldb_live *q);
/* Installs what live_children_stage staged, in two steps as result.h
 * does: prepare (LDB_NOMEM leaves every handle as it was), finish. */
int live_children_prepare(ldb_live *q);
void live_children_finish(ldb_live *q);
/* Whether an installed commit gives a child a batch or retires one. */
bool live_children_have_batches(const ldb_live *q);
/* Drops what was staged (the commit did not happen, or the query failed). */
void live_children_discard(ldb_live *q);
/* Calls the touched handles' callbacks (after q's own), then releases the
 * handles whose bucket retired. */
void live_children_publish(ldb_live *q);
/* Pushes the negation of every active handle's rows and tuple into prog's
 * child outputs (a rebuild: the new program's hydration minus this). */
int live_children_negate(ldb_live *q, struct live_program *prog);
/* Adds the active handles of q (a root), their rows and bytes to out. */
void live_children_stats(const ldb_live *q, struct live_stats *out);
/* At q's close: frees its handles, or detaches the retained ones. */
void live_children_free(ldb_live *q);
/* Frees a child handle (gone or detached, not retained). */
void live_child_free(ldb_live *h);

/* ---- query.c (for child.c) --------------------------------------------------- */

/* Reserves the public views of q's staged batch of n changes. */
int live_views_reserve(ldb_live *q, size_t n);
/* Drops q's staged or installed batch and its views. */
void live_batch_drop(ldb_live *q);
/* Calls q's callback with its installed batch. */
void live_publish_batch(ldb_live *q);
/* Marks q closed: freed once no callback runs. */
void live_mark_closed(ldb_live *q);
/* Adds q to / removes it from the registry's list. */
int live_registry_add(struct live_registry *reg, ldb_live *q);
void live_registry_remove(struct live_registry *reg, ldb_live *q);
/* The layout of q's rows (root or child). */
const struct live_layout *live_layout_of(const ldb_live *q);
/* The handles that the LIVE cells of row r (of q's output) refer to, as
 * public cell values in dst[0..nvisible) (the other columns copied). */
void live_cells_fill(const ldb_live *q, const row *r, value *dst);
/* Whether q's rows have LIVE cells. */
bool live_has_cells(const ldb_live *q);

/* ---- decorrelate.c ------------------------------------------------------- */

/* Replaces every subquery in p's tree by joins; *out is the new tree. */
int live_decorrelate(struct live_program *prog, struct plan *p, struct plan **out,
                     struct eval_error *err);

/* ---- program.c ----------------------------------------------------------------- */

/* Whether a run left output (root or children) not yet read. */
/* Consolidates the output accumulated by several applications. */
int live_program_consolidate(struct live_program *prog);
bool live_program_has_output(const struct live_program *prog);
void live_program_clear_output(struct live_program *prog);

/* ---- evaluation helpers (compile.c) ------------------------------------------ */

void live_eval_ctx(struct live_program *prog, struct eval_ctx *cx, const value *vals,
                   uint32_t ncols);
/* Sets err (unless already set) and returns code. */
int live_error_out(struct eval_error *err, int code, const char *msg);
/* Records a failure of prog (first one wins); returns code. */
int live_fail(struct live_program *prog, int code, const char *msg);

#endif
