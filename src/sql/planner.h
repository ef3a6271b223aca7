/*
 * planner.h - rewrites a bound plan into the plan that runs: ORs' common
 * conjuncts factored out, predicates pushed down to the inputs that can
 * test them, equi-join keys split out of join conditions, trees of inner
 * joins put in the order the cost model finds cheapest with equalities
 * derived through equal columns (join_order.c, from the statistics of
 * estimate.c), access paths chosen for scans, sorts served by ordered
 * index reads, hash-join build sides picked (or a table looked up by its
 * primary key or an index instead of hashed). Every rewrite keeps the
 * plan's logical meaning; the annotations (access paths, presorted,
 * build_left) only tell the executor how to run it.
 *
 * Access path rule, in order of preference: equality on the whole primary
 * key; equality on every part of a unique index; the index with the most
 * leading parts fixed by equality, a range on the next ascending part
 * counting half a part; a range alone; else a full scan. A SORT over a
 * full scan of one table whose ORDER BY an ordered index serves (same
 * leading columns, all directions equal or all opposite, same collation)
 * reads that index in order instead of sorting.
 */
#ifndef LDB_SQL_PLANNER_H
#define LDB_SQL_PLANNER_H

#include "sql/plan.h"

/* Rewrites *root and every subquery plan inside it. LDB_OK or LDB_NOMEM
 * (the plan is then unusable and must be freed with its arena). */
int planner_optimize(plan_arena *pa, struct plan **root);
/* Plans the subqueries inside an expression that is not part of a plan
 * (the SET and ON CONFLICT expressions of data-changing statements). */
int planner_optimize_expr(plan_arena *pa, struct expr *e);
/* The rows p is estimated to produce, as the planner judged them
 * (estimate.c): for EXPLAIN QUERY PLAN. */
double planner_estimate(const struct plan *p);

#endif
