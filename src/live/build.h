/*
 * build.h - constructing and rewriting logical plans and bound expressions
 * for the live-query compiler's plan-to-plan passes (keys, decorrelation,
 * join-key extraction).
 *
 * Everything is allocated in the query's plan_arena (plan.h), so rewritten
 * trees share unchanged subtrees with the original freely and nothing is
 * freed one by one. Constructors return NULL on LDB_NOMEM; callers check
 * once per built tree with the BUILD_OK idiom (a NULL anywhere gives a
 * NULL result).
 */
#ifndef LDB_LIVE_BUILD_H
#define LDB_LIVE_BUILD_H

#include "sql/func.h"
#include "sql/plan.h"

/* ---- expressions ------------------------------------------------------------ */

expr *xb_column(plan_arena *pa, uint32_t col, const struct plan_col *meta);
expr *xb_const(plan_arena *pa, const value *v);
expr *xb_bool(plan_arena *pa, bool b);
expr *xb_unary(plan_arena *pa, enum expr_op op, expr *a);
expr *xb_binary(plan_arena *pa, enum expr_op op, expr *a, expr *b);
/* ARRAY(args...): never NULL; equal arrays are equal capture tuples. */
expr *xb_array(plan_arena *pa, expr **args, uint32_t n);
/* Element i of an ARRAY expression. */
expr *xb_field(plan_arena *pa, expr *array, uint32_t i);
/* CASE WHEN c[0] THEN v[0] ... ELSE dflt END. */
expr *xb_case(plan_arena *pa, expr **conds, expr **vals, uint32_t n, expr *dflt);

/*
 * Rewrites expression references while copying: column c becomes
 * col(ctx, c) (an expression built by the callback), capture j (EXPR_OUTER)
 * becomes outer(ctx, j) when outer is not NULL (else it stays). Subquery
 * bodies are not entered (they have their own columns), but their
 * captures and IN operands are rewritten.
 */
struct xb_remap {
    expr *(*col)(void *ctx, uint32_t c);
    expr *(*outer)(void *ctx, uint32_t j);
    void *ctx;
};
expr *xb_rewrite(plan_arena *pa, const expr *e, const struct xb_remap *m);
/* Shifts column references by delta (a common remap); in, when not
 * NULL, is the plan e reads: column c's reference gets in's column c's
 * type, affinity and collation. */
expr *xb_shift(plan_arena *pa, const expr *e, const struct plan *in, int64_t delta);
/* A join residual over left ++ right (nl left columns), rewritten for a
 * join whose left side gained lx columns at its end: references to the
 * right side move past them; both is the new join's input. */
expr *xb_residual_past(plan_arena *pa, const expr *e, const struct plan *both, uint32_t nl,
                       uint32_t lx);

/* True when e (not entering subquery bodies) contains a subquery. */
bool xb_has_subquery(const expr *e);
/* True when e reads a capture (EXPR_OUTER), including through the
 * captures of nested subqueries. */
bool xb_reads_outer(const expr *e);
/* True when plan p (or any subquery inside it) reads EXPR_OUTER of the
 * context p is evaluated in. */
bool pb_reads_outer(const struct plan *p);

/* ---- plans ---------------------------------------------------------------------- */

/* PROJECT over in; names/meta of column i come from meta[i] when given,
 * else from the expression (a column keeps its input's name). */
struct plan *pb_project(plan_arena *pa, struct plan *in, expr **exprs, uint32_t n,
                        const struct plan_col *meta);
/* PROJECT keeping columns [0, n) of in (drops the rest). */
struct plan *pb_prefix(plan_arena *pa, struct plan *in, uint32_t n);
struct plan *pb_filter(plan_arena *pa, struct plan *in, expr *pred);
struct plan *pb_distinct(plan_arena *pa, struct plan *in);
/* JOIN of kind with keys (left exprs over left, right over right) and a
 * residual over left ++ right. */
struct plan *pb_join(plan_arena *pa, enum join_kind kind, struct plan *left,
                     struct plan *right, struct join_key *keys, uint32_t nkeys,
                     expr *residual);
struct plan *pb_aggregate(plan_arena *pa, struct plan *in, expr **groups,
                          uint32_t ngroups, struct plan_agg *aggs, uint32_t naggs);

/* Room for max(room, 1) items of size bytes, the first n copied from src
 * (which may be NULL when n is 0: an empty list of a plan node). NULL on
 * LDB_NOMEM. */
void *pb_array(plan_arena *pa, const void *src, size_t n, size_t room, size_t size);

/* Copies the output columns' metadata of p into dst[0..p->ncols). */
void pb_copy_cols(struct plan_col *dst, const struct plan *p);

#endif
