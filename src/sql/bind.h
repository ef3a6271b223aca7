/*
 * bind.h - the binder: from a parsed statement (ast.h) to bound
 * statements whose queries are logical plans (plan.h) and whose
 * expressions are bound (expr.h).
 *
 * The binder resolves every name against the catalog and the query's
 * scopes, applies the alias rules (an explicit FROM alias is unique in its
 * scope and may not repeat an alias visible from an enclosing query;
 * implicit aliases, a table's own name, may), infers static types and
 * affinities, folds constant subexpressions, expands views, CTEs and
 * derived tables inline, and rejects what livedb cannot run: LDB_ERROR for
 * bad SQL, LDB_UNSUPPORTED for valid SQL that livedb does not support.
 * Every error carries the byte offset of the offending node.
 *
 * Ownership: everything bound lives in the caller's plan_arena. The view
 * definitions the binder parses to expand views are appended to
 * env->views and must outlive the plan (their names are shared); the
 * caller frees them with the plan.
 */
#ifndef LDB_SQL_BIND_H
#define LDB_SQL_BIND_H

#include <stdbool.h>
#include <stdint.h>

#include "base/vec.h"
#include "sql/ast.h"
#include "sql/parser.h"
#include "sql/plan.h"

struct store;
struct table;
struct func_registry;

typedef VEC(sql_ast *) sql_ast_vec;

struct bind_env {
    struct store *store;
    plan_arena *pa;
    struct eval_error *err;   /* code, offset and message of a failure */
    sql_ast_vec *views;       /* parsed view definitions, kept with the plan */
    const struct func_registry *funcs; /* registered functions, or NULL */
    bool live;                /* a live query's statement: LIVE (query) may be a
                               * result column of its outermost SELECT */
    bool lasting;             /* a view that is not TEMP: it may read no TEMP
                               * table or view (gone when the handle closes) */
};

/* ON CONFLICT ... DO NOTHING | DO UPDATE of an INSERT. Expressions of
 * DO UPDATE read the existing row (all table columns) followed by the
 * row that was to be inserted ("excluded", all table columns). */
struct bound_upsert {
    uint32_t ntarget;          /* 0: any conflict */
    uint32_t *target;          /* table columns of the conflict target */
    bool do_update;
    uint32_t nset;
    uint32_t *set_cols;        /* table columns assigned */
    struct expr **set_exprs;
    struct expr *where;        /* DO UPDATE ... WHERE, or NULL */
};

struct bound_insert {
    struct table *table;
    struct plan *source;       /* rows to insert; NULL for DEFAULT VALUES */
    /* For each declared column, the source column that fills it, or
     * UINT32_MAX when the column takes its default. */
    uint32_t *source_col;
    enum ast_conflict or_action;
    uint32_t nupserts;
    struct bound_upsert *upserts;
    bool reads_target;         /* the source reads the target table */
};

/* UPDATE and DELETE: rows is SCAN(table) with the WHERE filter above; the
 * executor collects every row first, so the statement sees the table as
 * it was before it ran. SET expressions read the old row. */
struct bound_update {
    struct table *table;
    struct plan *rows;
    uint32_t nset;
    uint32_t *set_cols;
    struct expr **set_exprs;
    enum ast_conflict or_action;
};

struct bound_delete {
    struct table *table;
    struct plan *rows;
};

typedef struct bound_stmt {
    enum ast_stmt_kind kind;   /* SELECT, INSERT, UPDATE, DELETE */
    union {
        struct plan *select;
        struct bound_insert insert;
        struct bound_update update;
        struct bound_delete delete_;
    } u;
} bound_stmt;

/* Binds a SELECT, INSERT, UPDATE or DELETE statement of ast. */
int bind_statement(struct bind_env *env, const sql_ast *ast,
                   const ast_stmt *st, bound_stmt *out);

/* Binds a query (CREATE VIEW, CREATE TABLE AS): the plan whose output
 * columns are the query's result columns. */
int bind_query(struct bind_env *env, const sql_ast *ast,
               const ast_select *sel, struct plan **out);

/* A constant expression with no FROM (DEFAULT values): bound and folded;
 * LDB_ERROR when it reads columns or is not constant. */
int bind_constant(struct bind_env *env, const sql_ast *ast,
                  const ast_expr *e, value *out);

/* True when a table of the catalog is a view definition (its DDL text is
 * a CREATE VIEW). */
bool table_is_view(const struct table *t);

/* The collation named (BINARY, NOCASE, RTRIM, case-insensitive); false
 * when there is none. */
bool collation_from_name(const char *name, enum ldb_collation *out);

#endif
