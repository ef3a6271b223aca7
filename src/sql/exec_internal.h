/*
 * exec_internal.h - what the executor's files share: the operator base,
 * the execution state, scratch rows and row comparison helpers.
 *
 *   exec.c       framework, subquery runner, scan, values, filter,
 *                project, limit
 *   exec_join.c  hash and nested-loop joins of every kind
 *   exec_agg.c   hash aggregation, DISTINCT, set operations
 *   exec_sort.c  sort and top-k
 *   exec_dml.c   INSERT (with upserts), UPDATE, DELETE
 *
 * Operators are allocated once per execution from the exec's arena; open
 * acquires their run state (heap) and close releases it, so a correlated
 * subquery's tree is rewound by closing and opening it again without
 * allocating new operators. close is idempotent.
 */
#ifndef LDB_SQL_EXEC_INTERNAL_H
#define LDB_SQL_EXEC_INTERNAL_H

#include "base/arena.h"
#include "base/hmap.h"
#include "base/interrupt.h"
#include "base/vec.h"
#include "sql/exec.h"
#include "sql/sqlvalue.h"
#include "storage/store.h"

struct op {
    const struct plan *p;
    struct exec *x;
    struct eval_ctx cx;        /* row/ncols set before each evaluation */
    int (*open)(struct op *o);
    int (*next)(struct op *o, row **out);
    void (*close)(struct op *o);
    struct op *in, *left, *right;
    struct op *all_next;       /* every operator of the exec, for cleanup */
    bool is_open;
};

/* Cached state of one subquery expression (by expr_subquery.id). */
struct subq_state {
    struct op *root;           /* built on first use */
    value *captures;           /* the values its EXPR_OUTERs read */
    uint32_t ncaptures;
    bool cached;               /* uncorrelated and already computed */
    value result;              /* SCALAR, EXISTS */
    /* uncorrelated IN: the set of (affinity-applied) values */
    hmap set;
    VEC(value) set_values;
    bool set_has_null;
};

/* The rows of a shared plan node (a CTE or view body with several
 * parents), computed once per execution by its own operator tree and
 * read by one reader operator per parent. Shared bodies read no
 * captures, so the rows are the same wherever they are read. */
struct shared_rows {
    const struct plan *p;
    struct op *root;
    VEC(row *) rows;           /* retained */
    bool filled;
    struct shared_rows *next;
};

struct exec {
    struct exec_env env;
    struct eval_error *err;
    arena a;                   /* operators */
    struct op *all;            /* every operator built */
    struct subq_state *subs;   /* env.nsubqueries entries */
    struct shared_rows *shared; /* per shared node met */
    uint64_t epoch;            /* *env.epoch when the exec started */
};

/* Allocates and links an operator of size bytes (zeroed). */
struct op *op_alloc(struct exec *x, const struct plan *p, size_t size,
                    const value *outer, uint32_t nouter);
/* Builds the operator tree of p; outer is what EXPR_OUTER reads. A shared
 * node becomes a reader of the rows its own tree computes once. */
struct op *op_build(struct exec *x, const struct plan *p, const value *outer,
                    uint32_t nouter);
int op_open(struct op *o);
void op_close(struct op *o);

/* Records a code that carries no message of its own (LDB_NOMEM,
 * LDB_INTERRUPT) as the exec's error, with ldb_errstr's text; returns it. */
int exec_fail(struct exec *x, int code);

/* Units of work for ldb_interrupt and the progress handler (intr_tick, a
 * decrement while nothing is due) are counted where rows come from: the
 * leaves (scan, VALUES, a shared body's reader), the join's candidate
 * pairs and the sort's passes; every other operator only pulls those. */
static inline int op_next(struct op *o, row **out)
{
    return o->next(o, out);
}

static inline int op_tick(struct op *o)
{
    return intr_tick() ? exec_fail(o->x, LDB_INTERRUPT) : LDB_OK;
}

/* Evaluates e on r (the first ncols columns). */
static inline int op_eval(struct op *o, const struct expr *e, const row *r, value *out)
{
    o->cx.row = r ? r->cols : NULL;
    o->cx.ncols = r ? r->ncols : 0;
    return expr_eval(e, &o->cx, out);
}

static inline int op_truth(struct op *o, const struct expr *e, const row *r, int *t)
{
    o->cx.row = r ? r->cols : NULL;
    o->cx.ncols = r ? r->ncols : 0;
    return expr_eval_truth(e, &o->cx, t);
}

/*
 * A row of n columns the operator may fill: *slot when only the operator
 * holds it (its values released), else a new one. NULL on NOMEM (the
 * exec's error is set).
 */
row *scratch_row(struct op *o, row **slot, uint32_t n);

/* Releases *slot. */
static inline void scratch_free(row **slot)
{
    row_release(*slot);
    *slot = NULL;
}

int exec_nomem(struct exec *x);

/* Hash and equality of the first n columns of rows under the plan's
 * column collations (canonical equality: DISTINCT, set operations). */
uint64_t rows_hash(const row *r, const struct plan_col *cols, uint32_t n);
bool rows_equal(const row *a, const row *b, const struct plan_col *cols, uint32_t n);
/* Order of values for ORDER BY: NULL placement, direction, collation. */
int sort_cmp(const value *a, const value *b, bool desc, bool nulls_first,
             enum ldb_collation coll);

/* Stable merge sort of n elements of size bytes (exec_sort.c); each pass
 * over the elements counts as work (interrupt.h). LDB_NOMEM or
 * LDB_INTERRUPT, the elements then in some order. */
int msort(void *base, size_t n, size_t size, int (*cmp)(void *ctx, const void *a, const void *b),
          void *ctx);

/* Operator constructors of the other files. */
struct op *op_join(struct exec *x, const struct plan *p, const value *outer, uint32_t nouter);
struct op *op_aggregate(struct exec *x, const struct plan *p, const value *outer,
                        uint32_t nouter);
struct op *op_distinct(struct exec *x, const struct plan *p, const value *outer,
                       uint32_t nouter);
struct op *op_setop(struct exec *x, const struct plan *p, const value *outer, uint32_t nouter);
struct op *op_sort(struct exec *x, const struct plan *p, const value *outer, uint32_t nouter);
/* Lets a SORT keep only its first k rows (LIMIT above it). */
void op_sort_limit(struct op *sort, uint64_t k);

#endif
