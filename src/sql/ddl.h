/*
 * ddl.h - the statements that change the schema, and PRAGMA, run for the
 * API: CREATE TABLE [AS SELECT], CREATE INDEX, CREATE VIEW, DROP TABLE /
 * INDEX / VIEW and REINDEX (ddl.c); the pragma table of a database and
 * PRAGMA name [= value] (pragma.c). Materialized views are the mv layer's.
 *
 * What these statements need of their database comes in a ddl_env, so
 * this layer knows nothing of the handle: the caller opens the write
 * statement around a schema change (so a failure rolls back with it,
 * like any write) and turns the env's eval_error into its own error.
 * Offsets in that error are into the statement's text (ast->sql), as the
 * binder's are.
 */
#ifndef LDB_SQL_DDL_H
#define LDB_SQL_DDL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/vec.h"
#include "sql/ast.h"
#include "sql/expr.h"
#include "sql/parser.h"
#include "value/row.h"

struct store;
struct func_registry;

struct ddl_env {
    struct store *store;
    const struct func_registry *funcs; /* for binding: defaults, AS SELECT, views */
    const value *params;               /* CREATE TABLE AS SELECT's parameters */
    uint32_t nparams;
    struct eval_env *env;              /* what its query's functions read */
    const uint64_t *epoch;             /* the database's write epoch (exec.h) */
    uint64_t join_memory_limit;        /* for CREATE TABLE AS SELECT (exec.h) */
    struct eval_error *err;            /* code, offset and message of a failure */
};

/* Runs a CREATE TABLE / INDEX / VIEW or DROP TABLE / INDEX / VIEW
 * statement inside the write statement the caller opened. LDB_OK, or the
 * error (LDB_ERROR, LDB_UNSUPPORTED, LDB_CONSTRAINT, LDB_NOMEM...) in
 * e->err. */
int ddl_run(const struct ddl_env *e, const sql_ast *ast);

/* REINDEX [name]: indexes are always consistent, so only the name is
 * checked (LDB_OK, or LDB_ERROR in e->err); no write statement needed. */
int ddl_reindex(const struct ddl_env *e, const sql_ast *ast);
/* ANALYZE [table or index]: the planner's statistics are read from
 * storage and refresh themselves once an eighth of a table changed;
 * ANALYZE drops the sampled ones (all tables', or the named one's) so the
 * next plan samples again. */
int ddl_analyze(const struct ddl_env *e, const sql_ast *ast);

/* The value of a constant expression (a DEFAULT, a PRAGMA's value): a new
 * reference in *out, or the error in e->err. */
int ddl_constant(const struct ddl_env *e, const sql_ast *ast, const ast_expr *x, value *out);

/* ---- PRAGMA -------------------------------------------------------------------- */

struct pragma {
    char *name;                /* lower case, owned */
    value v;
};

/* The settings of a database, by case-insensitive name. Zeroed is empty. */
struct pragma_table {
    VEC(struct pragma) items;
};

/* The value of that name, or NULL. Borrowed. */
const value *pragma_get(const struct pragma_table *t, const char *name);
/* Sets a pragma (value copied). LDB_NOMEM leaves the table unchanged. */
int pragma_set(struct pragma_table *t, const char *name, const value *v);
void pragma_table_free(struct pragma_table *t);

/* Whether a PRAGMA statement reads its setting (PRAGMA name) rather than
 * setting it. */
static inline bool pragma_reads(const ast_stmt *st)
{
    return !st->u.pragma.value && !st->u.pragma.word.str;
}

/* Runs PRAGMA name (*out: a one-column row of the value, or NULL when it
 * is not set) or PRAGMA name = value (*out NULL). A value is a constant
 * expression, or a word: ON/TRUE/YES are 1, OFF/FALSE/NO 0, others their
 * text. LDB_OK, or the error in e->err. */
int pragma_run(struct pragma_table *t, const struct ddl_env *e, const sql_ast *ast,
               row **out);

#endif
