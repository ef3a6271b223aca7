/*
 * planner_internal.h - what the planner's files share (planner.c: pushdown,
 * keys, access paths, lookups; estimate.c: statistics and row estimates;
 * join_order.c: the order of inner joins). Nothing outside src/sql/planner*.c,
 * estimate.c and join_order.c includes it. Every rewrite allocates in the
 * plan's arena; a failed allocation sets pl->rc and the walk stops.
 */
#ifndef LDB_SQL_PLANNER_INTERNAL_H
#define LDB_SQL_PLANNER_INTERNAL_H

#include "sql/planner.h"

typedef struct planner {
    plan_arena *pa;
    int rc;
    const struct plan *fresh; /* the last join chain join_reorder made */
} planner;

/* Conjuncts of a predicate, in a growing array (in the arena). */
struct conj {
    struct expr **items;
    uint32_t n, cap;
};

void *planner_alloc(planner *pl, size_t n);
/* Columns read: 0 none, 1 only < split, 2 only >= split, 3 both. */
int expr_sides(const struct expr *e, uint32_t split);
/* e with every column index lowered by delta (a copy). */
struct expr *expr_shift(planner *pl, const struct expr *e, uint32_t delta);
struct expr *expr_and(planner *pl, struct expr *a, struct expr *b);
void conj_append(planner *pl, struct conj *c, struct expr *e);
/* Appends the conjuncts of e (its AND operands, recursively). */
void conj_split(planner *pl, struct expr *e, struct conj *c);
struct expr *conj_join(planner *pl, struct conj *c);
/* pred into a FILTER over *slot, merged with a FILTER already there. */
void plan_add_filter(planner *pl, struct plan **slot, struct expr *pred);

/* A seek in an ordered index costs about this many hash probes (a B-tree
 * descent against one slot): a join looks a table up by such an index
 * only while its probes cost less than hashing the table (planner.c), and
 * join_order.c prices the step the same way. */
#define SEEK_COST 3

/* ---- estimate.c ---- */

/* Rows p produces (a shared node's estimate is computed once). */
double estimate_rows(const struct plan *p);
/* The fraction of in's rows for which pred holds; pred's column c reads
 * column c - base of in. */
double estimate_selectivity(const struct plan *in, const struct expr *pred, uint32_t base);
/* Distinct values in column col of p's table, 0 when unknown (p a scan,
 * perhaps under filters). */
double estimate_distinct(const struct plan *p, uint32_t col);

/* ---- join_order.c ---- */

/* *slot is a FILTER over inner joins, or inner joins: orders them (see
 * join_order.c). */
void join_reorder(planner *pl, struct plan **slot);

#endif
