/*
 * expr.h - bound expressions: what the binder makes of an AST expression
 * once every name is resolved, and the evaluator that computes them.
 *
 * A bound expression is a tree of struct expr nodes. It refers to:
 * - the columns of the INPUT row of the plan node that holds it
 *   (EXPR_COLUMN, by position; for a JOIN residual the input row is the
 *   left row followed by the right row);
 * - the values captured by the enclosing subquery (EXPR_OUTER, by
 *   position): a correlated subquery lists, in its EXPR_SUBQUERY node, the
 *   outer expressions it depends on ("captures", evaluated in the outer
 *   context once per evaluation of the subquery); inside the subquery,
 *   EXPR_OUTER i reads capture i. A reference two levels out is captured
 *   by the middle subquery and re-captured by the inner one, so EXPR_OUTER
 *   always means "one level out" and a subquery's dependence on its
 *   context is exactly its capture list (what a decorrelator needs);
 * - bound parameters (EXPR_PARAM, 1-based).
 *
 * Every operator node keeps its operands in args[0..nargs); the kind says
 * what they mean (see enum expr_kind). Nodes are immutable after binding
 * and live in the arena of the plan that holds them (plan.h); constants
 * with heap values are owned by that plan's context.
 *
 * Semantics are SQLite's with livedb's deliberate differences (docs/SQL.md
 * "Semantics"): INTEGER overflow is an error, BOOLEAN is a real type
 * (comparisons yield it), comparisons apply SQLite's affinity rule
 * through the node's aff field, x/0 and x%0 are NULL.
 */
#ifndef LDB_SQL_EXPR_H
#define LDB_SQL_EXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/schema.h"
#include "value/value.h"

struct plan;
struct func_def;
struct strbuf;

enum expr_kind {
    EXPR_CONST,    /* u.v */
    EXPR_COLUMN,   /* u.index: input column */
    EXPR_OUTER,    /* u.index: capture of the enclosing subquery */
    EXPR_PARAM,    /* u.index: parameter number, 1-based */
    EXPR_UNARY,    /* op; args[0] */
    EXPR_BINARY,   /* op; args[0], args[1] */
    EXPR_BETWEEN,  /* args: operand, low, high; negated; aff and coll (low),
                      aff2 and u.coll_hi (high) */
    EXPR_IN_LIST,  /* args: operand, items...; negated; aff */
    EXPR_LIKE,     /* op LIKE/GLOB; args: operand, pattern [, escape]; negated */
    EXPR_CASE,     /* args: [base,] when, then, ..., [else]; u.c: has_base,
                      has_else, and with a base the collation of each
                      base = when comparison (aff: their affinity) */
    EXPR_CAST,     /* args[0]; u.cast_to (COL_ANY: unary +, or COLLATE on an
                      operator: the value unchanged, without affinity) */
    EXPR_CALL,     /* u.fn; args */
    EXPR_SUBQUERY, /* u.sq; args: [IN operand] */
    EXPR_FIELD     /* args[0] is an ARRAY; u.index: the element taken */
};

enum expr_op {
    /* unary */
    EOP_NEG,
    EOP_BITNOT,
    EOP_NOT,
    EOP_ISNULL,
    EOP_NOTNULL,
    /* binary */
    EOP_ADD,
    EOP_SUB,
    EOP_MUL,
    EOP_DIV,
    EOP_MOD,
    EOP_CONCAT,
    EOP_BITAND,
    EOP_BITOR,
    EOP_LSHIFT,
    EOP_RSHIFT,
    EOP_EQ,
    EOP_NE,
    EOP_LT,
    EOP_LE,
    EOP_GT,
    EOP_GE,
    EOP_IS,     /* NULL-safe equality */
    EOP_IS_NOT, /* NULL-safe inequality */
    EOP_AND,
    EOP_OR,
    /* pattern matching (EXPR_LIKE) */
    EOP_LIKE,
    EOP_GLOB
};

enum subquery_kind {
    SUBQ_SCALAR, /* first column of the first row, NULL without rows */
    SUBQ_EXISTS, /* BOOLEAN: any row */
    SUBQ_IN,     /* args[0] [NOT] IN (rows of the one-column plan) */
    SUBQ_LIVE    /* LIVE (query): a child live result, bound only as a result
                  * column of a live query's outermost SELECT (bind_env.live);
                  * the one-shot executor never sees it */
};

struct expr_subquery {
    enum subquery_kind kind;
    struct plan *plan;
    struct expr **captures; /* evaluated in the outer context */
    uint32_t ncaptures;
    uint32_t id;            /* 0.. per statement: index of its cache slot */
};

/* Flags of a node. */
enum {
    EXPR_COLL_EXPLICIT = 1, /* the node carries a COLLATE of its own */
    EXPR_NEGATED = 2,       /* NOT BETWEEN, NOT IN, NOT LIKE */
    EXPR_NONDET = 4         /* the subtree calls a non-deterministic function */
};

/*
 * Where an expression's collation comes from, SQLite's order of precedence
 * when two operands meet in a comparison (the left one wins at equal
 * rank): an explicit COLLATE anywhere in it (not inside a subquery, and
 * the leftmost one), else a column's (also through CAST and unary +, and
 * a column of a derived table, view or CTE), else none: BINARY.
 */
enum coll_src {
    COLL_NONE,
    COLL_COLUMN,
    COLL_EXPLICIT
};

typedef struct expr {
    uint8_t kind;     /* enum expr_kind */
    uint8_t op;       /* enum expr_op, for UNARY, BINARY, LIKE */
    uint8_t type;     /* enum col_type: static type of the result (ANY: unknown) */
    uint8_t aff;      /* enum col_type: affinity of the expression as an
                         operand (column, CAST), or for a comparison node the
                         affinity applied to both operands (ANY: none) */
    uint8_t aff2;     /* BETWEEN: affinity of the high comparison */
    uint8_t coll;     /* enum ldb_collation: for a comparison (IN too) the one
                         it compares under (BETWEEN: its low bound's), else
                         the result's (BINARY when csrc is COLL_NONE) */
    uint8_t flags;
    uint8_t csrc;     /* enum coll_src of coll; for a comparison COLL_EXPLICIT
                         when coll is an operand's COLLATE, which then passes
                         up as SQLite's does (a COLLATE only in BETWEEN's high
                         bound, in a list of several IN items or in IN's
                         subquery does not: the result is a BOOLEAN anyway),
                         else COLL_NONE */
    uint32_t off;     /* source offset, for runtime error positions */
    uint32_t nargs;
    struct expr **args;
    union {
        value v;
        uint32_t index;
        enum col_type cast_to;
        const struct func_def *fn;
        struct expr_subquery sq;
        uint8_t coll_hi;  /* BETWEEN: collation of the high comparison */
        struct {
            bool has_base, has_else;
            const uint8_t *when_coll; /* with a base: per WHEN */
        } c;
    } u;
} expr;

/* The collation e gives as a value (not the one it compares under). */
static inline enum ldb_collation expr_coll(const expr *e)
{
    return e->csrc == COLL_NONE ? LDB_COLL_BINARY : (enum ldb_collation)e->coll;
}

/* ---- evaluation ------------------------------------------------------------------ */

/* A runtime error: code (LDB_OK when none), source offset, message. */
struct eval_error {
    int code;
    uint32_t off;
    bool has_off;
    char msg[256];
};

/* The database-wide state that non-deterministic functions read. */
struct eval_env {
    uint64_t rng[2];           /* random(), randomblob() */
    int64_t changes;           /* rows changed by the last DML statement */
    int64_t total_changes;
    int64_t last_insert_rowid;
};

struct eval_ctx;

/*
 * How subqueries are evaluated: the executor supplies a runner; a caller
 * that has no subqueries in its expressions (the live layer decorrelates
 * them) leaves it NULL, and meeting one is then LDB_INTERNAL. For
 * SUBQ_IN, operand is the evaluated left operand (it may be SQL NULL:
 * NULL IN (no rows) is false, NULL IN (some rows) is NULL).
 */
struct subquery_runner {
    int (*run)(void *ctx, struct eval_ctx *cx, const struct expr *e,
               const value *captures, const value *operand, value *out);
    void *ctx;
};

struct eval_ctx {
    const value *row;          /* input row, ncols values */
    uint32_t ncols;
    const value *outer;        /* captures of the enclosing subquery */
    uint32_t nouter;
    const value *params;       /* params[i - 1] is parameter i */
    uint32_t nparams;
    struct subquery_runner sub;
    struct eval_env *env;      /* may be NULL: non-deterministic calls fail */
    struct eval_error *err;    /* where runtime errors go (never NULL) */
};

/*
 * Evaluates e against cx. On LDB_OK *out holds a new reference (release
 * it). On failure returns the code (LDB_ERROR for SQL runtime errors such
 * as integer overflow, LDB_NOMEM, ...), fills cx->err, and *out is NULL.
 */
int expr_eval(const expr *e, struct eval_ctx *cx, value *out);

/*
 * Evaluates e as a condition (WHERE, ON, HAVING, CASE WHEN): *truth is
 * 1 (true), 0 (false) or -1 (NULL). Numbers are true when non-zero, text
 * is read as a number (SQLite's rule).
 */
int expr_eval_truth(const expr *e, struct eval_ctx *cx, int *truth);

/* ---- value semantics shared by the evaluator, planner and executor ----------------- */

/* The truth of a value: 1, 0, or -1 for NULL. */
int sql_truth(const value *v);

/*
 * Converts v in place for a comparison under affinity aff (COL_NUMERIC,
 * COL_INTEGER, COL_REAL: numeric-looking TEXT becomes a number; COL_TEXT:
 * numbers become TEXT; others: nothing), so that after conversion
 * value_cmp is the SQL comparison and value_eq is SQL '='. Used for hash
 * keys too (join keys, IN sets). LDB_NOMEM possible (number to text).
 */
int sql_apply_affinity(value *v, enum col_type aff);

/* The affinity applied to both operands of a comparison between
 * expressions of affinities a and b (SQLite's rule). */
enum col_type sql_compare_affinity(enum col_type a, enum col_type b);

/* True when applying affinity aff to a value stored in a column of type
 * coltype never changes it (a stored column already has its form), so
 * that distinct stored values stay distinct under a comparison with that
 * affinity. */
bool sql_affinity_is_noop(enum col_type aff, enum col_type coltype);

/* True for the affinities that count as numeric. */
static inline bool col_type_numeric(enum col_type t)
{
    return t == COL_INTEGER || t == COL_REAL || t == COL_NUMERIC;
}

/* ---- tree utilities -------------------------------------------------------------- */

/* Structural equality (same kinds, operators, constants by identity,
 * columns, functions; subqueries only when they are the same node). */
bool expr_equal(const expr *a, const expr *b);

/* True when the tree reads no input column, capture or parameter and
 * calls nothing non-deterministic or a subquery: it can be folded. */
bool expr_is_constant(const expr *e);

/* Canonical text of a bound expression for EXPLAIN (columns as #i or by
 * the names given). Errors are left in the strbuf. */
void expr_print(struct strbuf *sb, const expr *e, const char *const *names,
                uint32_t nnames);

/* Operator text ("+", "IS NOT", ...). */
const char *expr_op_name(enum expr_op op);

#endif
