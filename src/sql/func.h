/*
 * func.h - the one registry of SQL functions, scalar and aggregate.
 *
 * Every function is an entry with its name, argument count range, static
 * result type and flags; FUNC_DETERMINISTIC is the flag the live-query and
 * materialized-view layers read to reject queries whose result could
 * change without a write (random(), changes(), CURRENT_TIMESTAMP...).
 * Aggregates point at their src/value/aggregate.h definition, which both
 * the one-shot executor and the dataflow reduce operator run.
 *
 * Names are looked up case-insensitively. One name may have several
 * entries that differ in argument count: min(x) is the aggregate,
 * min(x, y, ...) the scalar.
 */
#ifndef LDB_SQL_FUNC_H
#define LDB_SQL_FUNC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/vec.h"
#include "sql/expr.h"
#include "value/aggregate.h"

enum func_flags {
    FUNC_DETERMINISTIC = 1,
    FUNC_AGGREGATE = 2,
    FUNC_LAZY = 4,       /* arguments evaluated on demand (coalesce, iif) */
    FUNC_TYPE_OF_ARGS = 8, /* static result type: common type of the args */
    FUNC_NUMERIC = 16      /* with FUNC_TYPE_OF_ARGS: NUMERIC unless that
                              type is a numeric one (abs('x') is 0.0) */
};

/* A scalar implementation: args are evaluated (borrowed), *out gets a new
 * reference. Errors go to cx->err (the evaluator adds the position). */
typedef int (*func_scalar_fn)(struct eval_ctx *cx, const value *args,
                              uint32_t nargs, value *out);

/* Lazy scalars evaluate their own arguments (call->args). */
typedef int (*func_lazy_fn)(struct eval_ctx *cx, const expr *call, value *out);

struct func_def {
    const char *name;       /* lower case */
    int16_t min_args;
    int16_t max_args;       /* -1: no limit */
    uint16_t flags;         /* enum func_flags */
    enum col_type type;     /* static result type (COL_ANY: unknown) */
    func_scalar_fn scalar;  /* scalar functions */
    func_lazy_fn lazy;      /* FUNC_LAZY */
    const struct agg_def *agg; /* FUNC_AGGREGATE; count(*) is func_count_star */
};

/*
 * The function called name with nargs arguments, or NULL. *name_known
 * (optional) tells a wrong argument count from an unknown name.
 */
const struct func_def *func_find(const char *name, uint32_t nargs,
                                 bool *name_known);

/* count(*). */
extern const struct func_def func_count_star;
/* Not callable by name, only built by the binder for ARRAY (subquery):
 * array_agg(x) (aggregate.h) and record(name_1, value_1, ...). */
extern const struct func_def func_array_agg, func_record;

/*
 * Functions registered on one database (ldb_create_aggregate). The binder
 * searches them before the built-ins, so a registered name overrides a
 * built-in of the same name and argument count (as in SQLite), and the
 * newest registration of a name wins. The registry borrows its entries
 * from whoever registered them.
 */
struct func_registry {
    VEC(const struct func_def *) defs;
};

/* Like func_find, in r only (r may be NULL). */
const struct func_def *func_registry_find(const struct func_registry *r, const char *name,
                                          uint32_t nargs, bool *name_known);

static inline bool func_is_aggregate(const struct func_def *f)
{
    return (f->flags & FUNC_AGGREGATE) != 0;
}
static inline bool func_is_deterministic(const struct func_def *f)
{
    return (f->flags & FUNC_DETERMINISTIC) != 0;
}

/* The functions of each file, for the registry (func.c). */
extern const struct func_def func_text_defs[];
extern const uint32_t func_text_count;

/* Pattern matching (pattern.c). LIKE folds ASCII case; esc is the escape
 * character (its UTF-8 bytes), or NULL. GLOB is case-sensitive with *, ?,
 * [...] and [^...]. Work is O(len(pattern) * len(text)). */
bool sql_like(const char *pat, size_t np, const char *s, size_t ns,
              const char *esc, size_t nesc);
bool sql_glob(const char *pat, size_t np, const char *s, size_t ns);

/* Bytes of the UTF-8 character starting at p (1 for invalid bytes). */
size_t utf8_char_len(const char *p, size_t n);

#endif
