/*
 * mv_internal.h - what the materialized-view files share: the registry,
 * a view (its body, its backing table's layout, its maintenance arm and
 * counters), and the functions each file gives the others.
 *
 *   registry.c   the registry and its store hooks (statement, rollback,
 *                settled, index dropped, drop check), lookup, freeing
 *   create.c     CREATE / DROP: parse, bind, checks, strategy, backing
 *   shape.c      which arm a body fits, and the backing layout
 *   write.c      writing rows into a backing table (keyed, no-op suppressed)
 *   arm_*.c      the four maintenance arms
 *   explain.c    EXPLAIN MATERIALIZED VIEW and counters
 *
 * Invariants of a view between statements:
 * - its backing table holds exactly the body's result over the current
 *   tables (a row per key; visible columns first, then hidden ones);
 * - a dataflow arm's program reflects the tables as of log position
 *   base (the committed state when base names an earlier transaction),
 *   unless stale (then it is rebuilt from the tables before its next use)
 *   or pending (a negation pushed by a rollback waits for the store's
 *   settled hook to run it);
 * - the registry's views are in creation order, which is a topological
 *   order: a view can only read views that existed when it was made.
 */
#ifndef LDB_MV_MV_INTERNAL_H
#define LDB_MV_MV_INTERNAL_H

#include "base/ptrmap.h"
#include "base/vec.h"
#include "dataflow/dataflow.h"
#include "mv/mv.h"
#include "sql/bind.h"
#include "storage/store.h"

struct live_program;

enum mv_strategy {
    MV_PROJECTION, /* single table, filter + project: a pure function per row */
    MV_AGGREGATE,  /* single table GROUP BY: stored group rows updated by arithmetic */
    MV_DATAFLOW,   /* everything else: one compiled dataflow program */
    MV_REBUILD     /* the floor: re-evaluate and diff (non-deterministic bodies) */
};

#define MV_MAX_COLS 1024

/* The backing table: visible columns [0, nvis), then hidden ones (key
 * columns the result does not show, an aggregate's kept partials). */
struct mv_layout {
    uint32_t ncols, nvis;
    uint32_t npk;                    /* 0: at most one row (scalar aggregate) */
    uint32_t pk[SCHEMA_MAX_KEY];     /* backing columns of the key */
    const char **names;              /* ncols, in the view's arena */
    enum col_type *types;
    enum ldb_collation *colls;
    bool *hidden;
};

/* Single-table filter + project: backing column i = cols[i](source row). */
struct mv_row_arm {
    struct table *src;
    const expr **preds;
    uint32_t npreds;
    const expr **cols;
};

/* One aggregate of the delta-aggregate arm. */
struct mv_agg_col {
    const struct plan_agg *pa;
    uint32_t arg;                    /* source column, or UINT32_MAX (count(*)) */
    int extreme;                     /* agg_def extreme: -1 min, +1 max, 0 combine */
    uint32_t count_col, sum_col;     /* backing columns of the kept partials */
};

/* Single-table GROUP BY with declared algebra (see arm_agg.c). */
struct mv_agg_arm {
    struct table *src;
    const expr **preds;
    uint32_t npreds;
    uint32_t ngroups;
    uint32_t *gcols;                 /* source column of each group column */
    uint32_t naggs;
    struct mv_agg_col *aggs;
    uint32_t rows_col;               /* backing column of count(*) of the group */
    const expr **out;                /* backing column i over the aggregate row, for
                                        i < nout (the rest are partials) */
    uint32_t nout;
    agg_inst *insts;                 /* for combine and collations */
};

/* The dataflow program and where its output columns go. */
struct mv_prog_arm {
    struct live_program *prog;
    uint32_t *map;                   /* backing column -> program output column */
};

/* The floor: the body with its key columns, run by the one-shot executor. */
struct mv_rebuild_arm {
    struct plan *keyed;
    uint32_t *map;                   /* backing column -> keyed plan column */
    uint64_t epoch;                  /* private write epoch for the executor */
};

struct mv_counters {
    uint64_t changes, written, suppressed, runs, rechecks, resyncs;
};

struct mv_view {
    struct mv_registry *reg;
    char *name;
    struct table *backing;           /* NULL only while being made */
    sql_ast *ast;                    /* own parse of the CREATE statement */
    plan_arena pa;
    sql_ast_vec views;               /* plain views the body expanded */
    struct plan *body;               /* bound and planned, annotations cleared */
    VEC(struct table *) sources;     /* every table the body reads */
    enum mv_strategy strategy;
    char why[400];                   /* the strategy's reason, for EXPLAIN */
    struct mv_layout lay;
    union {
        struct mv_row_arm row;
        struct mv_agg_arm agg;
        struct mv_prog_arm prog;
        struct mv_rebuild_arm rebuild;
    } arm;
    struct mv_counters c;
    struct eval_error err;           /* runtime errors of the body */
    struct store_mark base;          /* dataflow: state reflects the log up to here */
    bool stale;                      /* dataflow: rebuild before the next use */
    bool pending;                    /* dataflow: a pushed negation waits to run */
    size_t dropped_at;               /* log position of an uncommitted DROP */
};

#define MV_NOT_DROPPED SIZE_MAX

struct mv_registry {
    struct store *store;
    const struct func_registry *funcs;
    struct eval_env *env;
    VEC(struct mv_view *) views;     /* creation order */
    struct subscription *sub;        /* while any view exists */
    struct mv_view *dropping;        /* DROP MATERIALIZED VIEW of it under way */
};

/* Visits every node of a plan and every expression in it, subquery plans
 * included, a shared node once; a callback returning false stops the
 * walk. Either may be NULL. */
struct mv_walk {
    bool (*plan)(void *ctx, const struct plan *p);
    bool (*expr)(void *ctx, const expr *e);
    void *ctx;
    ptrmap seen;       /* the walk's own: shared nodes visited */
    int rc;            /* the walk's own: LDB_NOMEM stops it */
};

/* ---- registry.c ---- */

/* Registers v (its backing table made and filled); LDB_NOMEM. */
int mv_register(struct mv_registry *reg, struct mv_view *v);
/* The view of that name whose backing table is not dropped, or NULL. */
struct mv_view *mv_find(const struct mv_registry *reg, const char *name);
void mv_view_free(struct mv_view *v);
/* Sets err from v's body error, prefixed with the view's name. */
int mv_body_error(struct mv_view *v, int rc, struct eval_error *err);
/* Another active view reading v's backing table, or NULL. */
struct mv_view *mv_reader_of(const struct mv_registry *reg, const struct mv_view *v);
/* Rows of d that v's sources changed. */
uint64_t mv_source_changes(const struct mv_view *v, const struct delta *d);

/* ---- create.c ---- */

/* The tables' state now, as a dataflow arm's base. */
void mv_set_base(struct mv_view *v);

/* ---- shape.c ---- */

/* LDB_OK, or LDB_NOMEM when the walk could not finish. */
int mv_walk(const struct plan *p, struct mv_walk *w);
/* Clears access paths, the FILTER predicates they left to the executor,
 * and presorted flags (they name indexes). LDB_NOMEM. */
int mv_clear_annotations(struct plan *p);
/* The body with a root ORDER BY (no LIMIT) removed: a table has no
 * order. NULL on NOMEM. */
struct plan *mv_unordered(plan_arena *pa, struct plan *body);
/* Columns of p before its trailing hidden ones. */
uint32_t mv_visible_count(const struct plan *p);
/* Tries the projection and aggregate arms (strategy, layout and arm set:
 * true) or leaves v for the dataflow arm (false, *why_not may say why).
 * LDB_NOMEM through rc. */
bool mv_shape_row(struct mv_view *v, int *rc);
bool mv_shape_agg(struct mv_view *v, int *rc, const char **why_not);
/* An index of t whose first n parts are the columns gcols (BINARY). */
struct table_index *mv_group_index(struct table *t, const uint32_t *gcols, uint32_t n);
/* Layout from a keyed plan (live_ensure_key): its nvis visible columns,
 * then the key columns that are not visible (hidden), then extra columns
 * left for the arm; map[j] is the keyed plan's column of backing column
 * j. */
int mv_layout_keyed(struct mv_view *v, const struct plan *keyed, uint32_t nvis,
                    const uint32_t *keycols, uint32_t nkey, uint32_t extra, uint32_t *map);
/* Room for ncols columns (the view's arena). */
int mv_layout_alloc(struct mv_view *v, uint32_t ncols);
/* Backing column j: like column col of p (visible: its name, or the
 * CREATE column list's; its type when it passes a table column through),
 * or hidden, named after hint, ANY, BINARY (p NULL). Names are made
 * unique. */
int mv_layout_column(struct mv_view *v, uint32_t j, const struct plan *p, uint32_t col,
                     bool hidden, const char *hint);

/* ---- write.c ---- */

/* Values of a backing row (ncols), key lookups and writes, counted in v. */
row *mv_lookup(struct mv_view *v, const value *vals);
/* Makes the backing row hold vals (insert, or update of the row with the
 * same key), or writes nothing when it already does. */
int mv_put(struct mv_view *v, const value *vals);
/* Deletes the backing row with vals' key, if any. */
int mv_remove(struct mv_view *v, const value *vals);
/*
 * Applies a consolidated batch of result rows (weight +1 new, -1 gone),
 * backing column j being column map[j] of each row: rows of one key
 * become one update.
 */
int mv_write_batch(struct mv_view *v, const df_entry *e, size_t n, const uint32_t *map);
/* Makes the backing table hold exactly rows[0..n) (through map): a keyed
 * diff that writes only what differs. */
int mv_write_all(struct mv_view *v, row *const *rows, size_t n, const uint32_t *map);

/* ---- arms ---- */

int mv_row_apply(struct mv_view *v, const struct table_delta *td);
int mv_agg_apply(struct mv_view *v, const struct table_delta *td);
int mv_agg_init(struct mv_view *v);
void mv_agg_free(struct mv_view *v);
int mv_prog_create(struct mv_view *v, struct eval_error *err);
int mv_prog_fill(struct mv_view *v);
int mv_prog_apply(struct mv_view *v, const struct delta *d);
void mv_prog_unapply(struct mv_view *v, const struct delta *d);
void mv_prog_settle(struct mv_view *v);
int mv_prog_resync(struct mv_view *v);
size_t mv_prog_bytes(const struct mv_view *v);
void mv_prog_free(struct mv_view *v);
int mv_rebuild_init(struct mv_view *v);
int mv_rebuild_apply(struct mv_view *v);

/* Feeds every current row of the source as an insert (first fill). */
int mv_fill_from_source(struct mv_view *v, struct table *src,
                        int (*apply)(struct mv_view *, const struct table_delta *));

/* Whether every predicate holds for r. */
int mv_passes(struct mv_view *v, const expr *const *preds, uint32_t n, const row *r, bool *ok);
/* vals[j] = cols[j] over in (new references; none left on failure). */
int mv_eval_all(struct mv_view *v, const expr *const *cols, uint32_t n, const value *in,
                uint32_t nin, value *vals);

#endif
