/*
 * plan.h - the logical plan: the tree the binder builds from a query, the
 * planner annotates with access paths, the one-shot executor runs, and the
 * live-query and materialized-view layers compile into dataflow graphs.
 *
 * A plan is a tree of nodes. Every node has an output schema: a column
 * count and, per column, a name, a static type (the declared type of a
 * column that passes a table column through, else the inferred type), an
 * affinity (as an operand of a comparison) and a collation. Expressions
 * in a node (expr.h) read the node's INPUT row by position:
 *
 *   node       input row of its expressions   output row
 *   SCAN       -                               the table's columns, hidden
 *                                              rowid last when there is one
 *   VALUES     - (constants, params, captures)  nrows rows of ncols cells
 *   FILTER     input                           input, rows where pred true
 *   PROJECT    input                           exprs
 *   JOIN       keys: own side; residual: left ++ right
 *                                              left ++ right (SEMI/ANTI: left)
 *   AGGREGATE  input                           group values ++ aggregate results
 *   DISTINCT   -                               input without duplicate rows
 *   SORT       input                           input, ordered by keys
 *   LIMIT      - (limit/offset are constants, params or captures)
 *                                              input, cut
 *   SETOP      -                               left's columns
 *
 * Conventions the consumers rely on:
 * - Aggregate calls never appear in expressions: a node above an
 *   AGGREGATE reads its results as columns.
 * - Subqueries are expressions (EXPR_SUBQUERY) holding their own plan and
 *   the list of outer values they capture; the executor runs them, the live
 *   compiler decorrelates them.
 * - Equality for grouping, DISTINCT, set operations and join keys is SQL
 *   '=' on non-NULL values: apply the recorded affinity to both sides
 *   (sql_apply_affinity), then value_eq under the collation. NULL keys
 *   never join; NULLs group together.
 * - Annotations made by the planner for the executor (access paths,
 *   build side, presorted) may be ignored by any other consumer: the
 *   logical meaning of the tree does not depend on them.
 *
 * Sharing: a plan is a DAG. The body of a CTE or view is bound once and
 * every reference to it is the same node, marked by its plan_shared
 * record (below), so a query that reads a CTE twice, through CTEs that
 * read theirs twice, stays linear in its text. Below a shared node
 * nothing depends on where it is referenced: its body reads no capture,
 * and rewrites of the tree (planner.h) do not reach into it from above.
 * Walks visit a shared node once (the executor runs it once per
 * execution and keeps its rows; the live and materialized-view compilers
 * make one dataflow subgraph of it).
 *
 * Ownership: nodes, expressions and names live in a plan_arena, normally
 * one per prepared statement; plan_arena_free releases everything,
 * including the heap values held by constants.
 */
#ifndef LDB_SQL_PLAN_H
#define LDB_SQL_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/vec.h"
#include "sql/expr.h"
#include "storage/reader.h"

struct table;
struct table_index;
struct agg_order_term;
struct func_def;
struct strbuf;

enum plan_kind {
    PLAN_SCAN,
    PLAN_VALUES,
    PLAN_FILTER,
    PLAN_PROJECT,
    PLAN_JOIN,
    PLAN_AGGREGATE,
    PLAN_DISTINCT,
    PLAN_SORT,
    PLAN_LIMIT,
    PLAN_SETOP
};

struct plan_col {
    const char *name;
    enum col_type type;       /* static type; COL_ANY when unknown */
    enum col_type aff;        /* affinity as a comparison operand; COL_ANY: none */
    enum ldb_collation coll;
    bool hidden;              /* left out of SELECT * (the hidden rowid) */
    uint8_t csrc;             /* enum coll_src of coll in the query that makes
                                 the column (a compound's terms, IN); a
                                 reference from an enclosing query reads it
                                 as a column's (COLL_COLUMN) */
};

/* ---- SCAN access paths (planner annotations) ----------------------------------- */

enum access_kind {
    ACCESS_FULL,    /* every row, in the table's scan order */
    ACCESS_KEY,     /* primary key equality: eq[0..npk) */
    ACCESS_INDEX,   /* index: equality on parts [0, neq), optional range on
                       part neq, rows in index order */
    ACCESS_ORDERED  /* the whole ordered index read in the order spec */
};

/*
 * Probes read no column (constants, parameters, captures, uncorrelated
 * subqueries); the executor evaluates them when the scan opens and
 * applies the comparison's affinity (aff[i] for eq[i], aff[neq] for the
 * range) before seeking. A NULL probe matches nothing; a range never
 * includes NULLs. An access path returns exactly the rows that satisfy
 * the conjuncts it was made from; the FILTER above the scan keeps its
 * whole predicate (the logical meaning) and records, as its exec_pred
 * annotation, what is left for the executor to test.
 */
struct access_path {
    enum access_kind kind;
    struct table_index *index;   /* ACCESS_INDEX, ACCESS_ORDERED */
    uint32_t neq;
    struct expr **eq;            /* neq probes, in key part order */
    struct expr *lo, *hi;        /* range on part neq (ascending), or NULL */
    bool lo_incl, hi_incl;
    uint8_t aff[INDEX_MAX_PARTS + 1]; /* enum col_type, per probe */
    struct order_spec spec;      /* ACCESS_ORDERED */
};

/* ---- JOIN ------------------------------------------------------------------------ */

enum join_kind {
    JOIN_INNER,
    JOIN_LEFT,
    JOIN_RIGHT,
    JOIN_FULL,
    JOIN_CROSS, /* no condition (keys and residual empty) */
    JOIN_SEMI,  /* left rows with a match; output is the left row.
                   Not produced by the binder: for decorrelating layers */
    JOIN_ANTI   /* left rows without a match; likewise */
};

/* left = right, where left reads only the left row and right only the
 * right row. SQL '=': NULL never matches. */
struct join_key {
    struct expr *left, *right;
    enum col_type aff;           /* applied to both values before value_eq */
    enum ldb_collation coll;
};

/* ---- AGGREGATE -------------------------------------------------------------------- */

/*
 * An ordered aggregate (string_agg) has norder > 0: its last argument is
 * the hidden order argument ARRAY(x, o_1..o_n) of its first argument and
 * its order values (the call's ORDER BY terms, then the input's unique
 * key), and order[i] says how o_(i+1) compares (aggregate.h,
 * agg_inst_set_order). Without a known key and without ORDER BY, norder
 * is 0 and the values come in value order.
 */
struct plan_agg {
    const struct func_def *fn;   /* fn->agg is the aggregate.h definition */
    struct expr **args;          /* fn->agg->nargs arguments, then the
                                    order argument when norder > 0 */
    uint32_t nargs;
    bool distinct;
    struct expr *filter;         /* FILTER (WHERE ...), or NULL */
    enum ldb_collation coll;     /* of the argument: min/max order, DISTINCT */
    value sep;                   /* string_agg separator; NULL: "," */
    struct agg_order_term *order;
    uint32_t norder;
};

/* ---- SORT ----------------------------------------------------------------------------- */

struct sort_key {
    struct expr *e;
    bool desc;
    bool nulls_first;            /* resolved: NULL lowest unless NULLS given */
    enum ldb_collation coll;
};

/* UNION, INTERSECT and EXCEPT remove duplicates (SQL set semantics);
 * UNION ALL keeps them. */
enum setop_kind {
    SETOP_UNION_ALL,
    SETOP_UNION,
    SETOP_INTERSECT,
    SETOP_EXCEPT
};

/* ---- nodes ------------------------------------------------------------------------------ */

/*
 * What is known of a shared node (a CTE or view body with several
 * parents), computed once when it becomes shared, so that walks stop at
 * it. The planner's fields are its annotations.
 */
struct plan_shared {
    uint32_t id;                 /* 1, 2, ... per arena, for EXPLAIN */
    bool nondet;                 /* plan_is_nondeterministic */
    bool has_key;                /* plan_unique_key: answer and key */
    uint32_t nkey;
    uint32_t *key;
    uint32_t height;             /* plan_height of the body */
    bool planned;                /* planner: the body is optimized */
    bool estimated;              /* planner: estimate is known */
    double estimate;             /* planner: rows, roughly */
};

struct plan {
    enum plan_kind kind;
    uint32_t ncols;
    struct plan_col *cols;
    struct plan *in;             /* FILTER PROJECT AGGREGATE DISTINCT SORT LIMIT */
    struct plan *left, *right;   /* JOIN SETOP */
    struct plan_shared *shared;  /* NULL unless the node has several parents */
    /* FILTER, executor annotation: when exec_pred_set, the executor tests
     * exec_pred (NULL: nothing) instead of pred, because the input scan's
     * access path already guarantees the rest. */
    struct expr *exec_pred;
    bool exec_pred_set;
    union {
        struct {
            struct table *table;
            const char *alias;       /* FROM name, for EXPLAIN and errors (never
                                        borrowed from the table) */
            bool not_indexed;        /* NOT INDEXED: read without indexes */
            struct access_path access;
        } scan;
        struct {
            uint32_t nrows;
            struct expr **cells;     /* nrows * ncols, row-major */
        } values;
        struct expr *pred;           /* FILTER */
        struct expr **exprs;         /* PROJECT: ncols expressions */
        struct {
            enum join_kind kind;
            uint32_t nkeys;
            struct join_key *keys;
            struct expr *residual;   /* over left ++ right, or NULL */
            bool build_left;         /* executor: hash the left input */
            struct table *lookup;    /* executor, or NULL: the build side is a
                                        full scan of this table, looked up by
                                        its primary key, or by lookup_index
                                        when set (key i is part lookup_part[i];
                                        the keys are its first nkeys parts),
                                        instead of hashed */
            struct table_index *lookup_index;
            uint32_t *lookup_part;
        } join;
        struct {
            uint32_t ngroups;
            struct expr **groups;
            uint32_t naggs;
            struct plan_agg *aggs;
        } agg;
        struct {
            uint32_t nkeys;
            struct sort_key *keys;
            bool presorted;          /* executor: the input is in order */
        } sort;
        struct {
            struct expr *limit;      /* NULL: none */
            struct expr *offset;     /* NULL: 0 */
        } limit;
        enum setop_kind setop;
    } u;
};

/* ---- memory -------------------------------------------------------------------------------- */

typedef struct plan_arena {
    arena a;
    VEC(value) owned;            /* heap values held by constants */
    uint32_t nsubqueries;        /* subquery ids handed out */
    uint32_t nshared;            /* shared nodes marked */
} plan_arena;

void plan_arena_init(plan_arena *pa);
void plan_arena_free(plan_arena *pa);
/* Zeroed memory from the arena; NULL on NOMEM. */
void *plan_alloc(plan_arena *pa, size_t n);
/* Keeps a reference to v (value_copy) until the arena is freed. */
int plan_own_value(plan_arena *pa, const value *v);

/* A node of kind with ncols zeroed columns; NULL on NOMEM. */
struct plan *plan_new(plan_arena *pa, enum plan_kind kind, uint32_t ncols);

/* Marks p, a complete body that gets another parent, as shared (once;
 * later calls do nothing). LDB_NOMEM. */
int plan_share(plan_arena *pa, struct plan *p);

/* The nodes on the longest path from p to a leaf, a subquery's plan
 * counting as below the node that uses it: how deep a recursive walk
 * over p goes. */
uint32_t plan_height(const struct plan *p);

/* What the live-query and materialized-view compilers take: their
 * recursion costs more stack per node than the executor's. */
#define PLAN_HEIGHT_MAX 1000

/* ---- walking ------------------------------------------------------------------------------------ */

typedef bool (*plan_expr_fn)(void *ctx, const struct expr *e);

/* Calls fn on each expression of node p itself, not its inputs' (those
 * it evaluates, access-path probes and join keys included), until fn
 * returns true; returns whether it did. */
bool plan_node_exprs(const struct plan *p, plan_expr_fn fn, void *ctx);

/* ---- what the live and MV layers ask --------------------------------------------------------- */

/*
 * A set of output columns that is a unique key of p's result, when one
 * is known: key[0..*n) (key has room for p->ncols). Returns false when
 * none is known (UNION ALL, a projection that drops a key column...). An
 * empty key (*n == 0) means at most one row (a scalar aggregate).
 * Rules: SCAN the primary key; FILTER SORT LIMIT the input's; PROJECT the
 * input's when every key column passes through; JOIN both sides' keys,
 * or one side's alone when the other side is joined on its whole key
 * (N:1); SEMI/ANTI the left's; AGGREGATE the group columns; DISTINCT and
 * UNION/INTERSECT/EXCEPT all columns.
 */
bool plan_unique_key(const struct plan *p, uint32_t *key, uint32_t *n);

/*
 * True when every column of a key k[0..nk) of join j's right (or left)
 * side is a plain-column join key under a collation no coarser than the
 * column's and an affinity that leaves its stored values as they are: a
 * row of the other side then meets at most one row of that side (a
 * NOCASE key over a BINARY column meets 'a' and 'A'; a TEXT affinity
 * over an untyped column meets a text '1' and an integer 1).
 */
bool plan_joined_on_key(const struct plan *j, bool right, const uint32_t *k, uint32_t nk);
/* The same, with the key columns' metadata read from side, a plan whose
 * columns start with those of j's side (it may add hidden ones past
 * them, as a live query's keyed rewrite does). */
bool plan_joined_on_cols(const struct plan *j, bool right, const struct plan *side,
                         const uint32_t *k, uint32_t nk);

/*
 * Lineage: true when output column col of p is a base table column
 * passed through unchanged (possibly NULL-padded by an outer join), with
 * the table and its column position.
 */
bool plan_lineage(const struct plan *p, uint32_t col, struct table **table,
                  uint32_t *table_col);

/* True when some function called anywhere in the plan (subqueries
 * included) is not deterministic: a scalar call, or an aggregate whose
 * func_def lacks FUNC_DETERMINISTIC (a user-defined aggregate registered
 * without LDB_DETERMINISTIC). */
bool plan_is_nondeterministic(const struct plan *p);

/* EXPLAIN: one line per node, children indented by two spaces, access
 * paths and annotations included; subquery plans follow the node that
 * uses them. A shared node is printed in full once, as "SHARED n: ...",
 * and as "SHARED n (above)" where it is met again. Out of memory is left
 * in the strbuf. est (may be NULL): each line ends with "(~N rows)", its
 * node's estimated rows (EXPLAIN QUERY PLAN). */
void plan_print(struct strbuf *sb, const struct plan *p, double (*est)(const struct plan *));

#endif
