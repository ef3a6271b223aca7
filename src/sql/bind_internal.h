/*
 * bind_internal.h - the binder's state, shared by bind.c (statements and
 * DML), bind_query.c (queries: FROM, cores, aggregates, ORDER BY,
 * compounds) and bind_expr.c (expressions, names, subqueries).
 *
 * Scopes. Each SELECT core (and each DML target) binds in a scope: the
 * items of its FROM clause laid out left to right in one "joined row".
 * A scope's parent is the query that lexically encloses it through a
 * subquery expression; derived tables, CTE bodies and views do not see
 * the FROM clause next to them (no LATERAL), so a derived table's scope
 * has the same parent as the query whose FROM holds it.
 *
 * Captures. A scope's sq is the subquery boundary it evaluates in: the
 * EXPR_SUBQUERY being bound, whose captures are evaluated in sq->outer,
 * which is always the scope's parent. A name found k boundaries out is
 * captured once per boundary (inner captures read outer captures), so
 * EXPR_OUTER always reads the innermost boundary's captures.
 *
 * Aggregates. Expressions are bound first as if they read the FROM row;
 * an aggregate call becomes a transient EXPR_CALL of an aggregate
 * function. In an aggregate query the result, HAVING and ORDER BY
 * expressions are then lifted (bind_query.c): group-by expressions and
 * aggregate calls become columns of the AGGREGATE node, and a column that
 * is neither is an error.
 *
 * Shared bodies. A CTE or view is bound once per statement, the first
 * time it is referenced; later references get the same plan, marked
 * shared (plan.h). Its binding cannot depend on the reference: it sees
 * only its own scopes and the CTEs before it.
 *
 * Depth. Every query (subquery, derived table, and CTE or view body
 * where it is bound), join, compound term and expression operator bound
 * inside another is a level: the parser's measure of a query's height
 * (ast_select.height), continued through views and CTEs. So the plan's
 * height and every walk over it (planner, executor, live and view
 * compilers, expression evaluation) stay bounded whatever views and CTEs
 * stack up; past SQL_MAX_DEPTH levels the query is "too complex".
 *
 * Memory: every allocation comes from the plan arena, so an error path
 * frees nothing.
 */
#ifndef LDB_SQL_BIND_INTERNAL_H
#define LDB_SQL_BIND_INTERNAL_H

#include "sql/bind.h"
#include "sql/func.h"
#include "storage/store.h"

#include <stdarg.h>

/* Flags of transient aggregate calls (EXPR_CALL of an aggregate). The
 * call's args are its own arguments, then (AGGCALL_ORDER) its ORDER BY
 * node, then (AGGCALL_FILTER) its FILTER condition. The ORDER BY node is
 * an array() call of the terms, each wrapped in an EXPR_CAST to COL_ANY
 * that carries the term's collation and AGGORD_ flags; it lives only
 * between binding and lifting, where build_agg turns it into the plan's
 * order terms. */
enum {
    AGGCALL_DISTINCT = 0x10,
    AGGCALL_FILTER = 0x20, /* the last arg is the FILTER condition */
    AGGCALL_ORDER = 0x40,  /* the ORDER BY node precedes FILTER */
    AGGORD_DESC = 0x10,    /* flags of an ORDER BY term's wrapper */
    AGGORD_NULLS_FIRST = 0x20
};

/* An aggregate call's own arguments, and its ORDER BY node or NULL. */
uint32_t aggcall_nargs(const struct expr *call);
const struct expr *aggcall_order(const struct expr *call);

struct scope;

/* A subquery expression being bound. */
struct subq {
    struct scope *outer;       /* where captures are evaluated */
    struct expr **captures;
    uint32_t ncaptures, cap;
};

/* An unqualified name that means an expression (a USING column of a
 * RIGHT or FULL join). */
struct name_override {
    uint32_t item, col;
    struct expr *e;            /* reads the joined row */
};

struct scope_item {
    const char *name;          /* alias (explicit or the table's name); may be NULL */
    uint32_t off;              /* of the name, for errors */
    bool explicit_alias;
    const struct plan *plan;   /* its columns */
    uint32_t base;             /* first column in the joined row */
    bool *merged;              /* per column: merged into an earlier item by
                                  USING or NATURAL (unqualified names skip it) */
};

/* One SELECT list entry once expanded (stars become several). */
struct result_col {
    const char *name;
    const char *alias;         /* AS name, or NULL */
    struct expr *e;
    uint32_t off;
};

struct scope {
    struct scope *parent;
    struct subq *sq;           /* NULL at the top level */
    struct scope_item *items;
    uint32_t nitems, items_cap;
    uint32_t width;            /* columns in the joined row */
    struct plan *from;         /* the plan of the joined row */
    struct name_override *overrides;
    uint32_t noverrides, overrides_cap;
    /* SELECT-list aliases usable in WHERE, GROUP BY and HAVING when no
     * column has the name (SQLite). */
    const ast_result_list *aliases;
    bool alias_busy;           /* resolving one now (catches cycles) */
    uint32_t naggs_seen;       /* aggregate calls bound in this scope */
};

/* CTEs visible at a point: a chain of WITH lists. */
struct cte_frame {
    const ast_with *with;
    uint32_t visible;          /* CTEs of this list visible (earlier ones) */
    const sql_ast *src;        /* the text they were written in */
    struct cte_frame *next;
};

typedef struct binder {
    struct bind_env *env;
    plan_arena *pa;
    struct store *store;
    const sql_ast *src;        /* text of the statement or view being bound */
    struct scope *scope;       /* current scope */
    struct cte_frame *ctes;
    bool allow_agg;            /* aggregate calls allowed here */
    bool in_agg_args;          /* binding an aggregate's arguments */
    uint32_t view_depth;       /* views being expanded */
    uint32_t view_off;         /* position of the outermost view reference */
    const char *view_name;
    uint32_t depth;            /* levels being bound (see Depth) */
    /* A LIVE (query) binds only as a whole result column of a live
     * query's outermost SELECT or of a LIVE child's: live_list is the
     * list being bound where that holds (else NULL), live_ok
     * the result expression being bound from it (pointers into the
     * statement's tree, so a view's or a subquery's LIVE never matches). */
    const ast_result_list *live_list;
    const ast_expr *live_ok;
    struct bound_body *bodies; /* CTE and view bodies bound so far */
    uint32_t nbodies, bodies_cap;
} binder;

/* A CTE (by its ast_cte) or view (by its table) and its bound plan. */
struct bound_body {
    const void *def;
    struct plan *plan;
};

/* ---- errors (bind.c) ---- */
int bind_error(binder *b, int code, uint32_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int bind_nomem(binder *b);

/* ---- depth (bind.c) ---- */
/* One level more (see Depth); false with b's error set past the limit. */
bool bind_enter(binder *b, uint32_t off);
void bind_leave(binder *b);

/* ---- allocation helpers (bind.c) ---- */
void *balloc(binder *b, size_t n);
char *bstrdup(binder *b, const char *s, size_t n);
/* Pushes p onto a growing arena array; false on NOMEM. */
bool bpush(binder *b, void **items, uint32_t *n, uint32_t *cap, size_t size,
           const void *item);

/* ---- expression constructors (bind_expr.c) ---- */
struct expr *ex_new(binder *b, enum expr_kind kind, uint32_t nargs, uint32_t off);
struct expr *ex_const(binder *b, const value *v, uint32_t off);
struct expr *ex_column(binder *b, uint32_t index, const struct plan_col *col,
                       uint32_t off);
struct expr *ex_bool(binder *b, bool v, uint32_t off);
/* Marks x non-deterministic when one of its arguments is. */
void ex_inherit_nondet(struct expr *x);
struct expr *ex_unary(binder *b, enum expr_op op, struct expr *a, uint32_t off);
struct expr *ex_binary(binder *b, enum expr_op op, struct expr *l,
                       struct expr *r, uint32_t off);
/* Folds e when it is constant; returns e or the folded constant. */
struct expr *ex_fold(binder *b, struct expr *e);

/* ---- expressions (bind_expr.c) ---- */
/* Binds e in b->scope. NULL on error (b's error set). */
struct expr *bind_expr(binder *b, const ast_expr *e);
/* The expression for a column of the current scope's joined row. */
struct expr *scope_column_expr(binder *b, struct scope *s, uint32_t item,
                               uint32_t col, uint32_t off);
/* Static type of a column read from a plan column. */
enum col_type common_type(enum col_type a, enum col_type b);

/* ---- queries (bind_query.c) ---- */
/* Binds a whole query in a new scope whose parent is parent and whose
 * boundary is sq. */
struct plan *bind_select(binder *b, const ast_select *sel,
                         struct scope *parent, struct subq *sq);
/* ARRAY (sel): a plan of one row and one column, the ARRAY of sel's rows
 * (each its one column, or a RECORD of its columns). */
struct plan *bind_array_select(binder *b, const ast_select *sel,
                               struct scope *parent, struct subq *sq);
/* PROJECT over q of one column: q's row as a RECORD of its columns. */
struct plan *bind_record_rows(binder *b, struct plan *q, uint32_t off);
/* A scope with no FROM items (VALUES, LIMIT, DML without FROM). */
struct scope *scope_new(binder *b, struct scope *parent, struct subq *sq);
/* Adds an item to s: checks the alias rules. */
bool scope_add(binder *b, struct scope *s, const char *name, uint32_t off,
               bool explicit_alias, const struct plan *p);
/* SCAN of a catalog table. */
struct plan *bind_table_scan(binder *b, struct table *t, const char *alias);
/* The plan of a named relation (CTE, view, table, livedb_schema) in FROM
 * or in "x IN name". NULL on error. */
struct plan *bind_named(binder *b, const ast_qname *q, const char *alias);

/* ---- helpers ---- */
static inline uint32_t expr_off(const ast_expr *e) { return e->off; }
const char *source_text(binder *b, uint32_t off, uint32_t len);

#endif
