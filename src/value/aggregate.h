/*
 * aggregate.h - SQL aggregate functions with retraction, shared by the
 * incremental reduce operator (src/dataflow) and the one-shot executor,
 * so that a result computed incrementally and one computed from scratch
 * are byte-identical.
 *
 * An aggregate is a definition (struct agg_def: a table of functions over
 * an opaque fixed-size state) plus an instance (agg_inst: one use of it in
 * a query, with its argument collation, DISTINCT and separator). The
 * caller owns the state memory (agg_state_size bytes, 8-byte aligned) and
 * calls agg_init, then agg_step for each input row with its weight (+n
 * adds n copies, -n retracts them; any order is allowed as long as every
 * count is back at zero or above when agg_finalize is called), and
 * agg_destroy once. After a step or merge fails the state may only be
 * destroyed.
 *
 * Results (SQLite's rules, with the exceptions noted):
 * - count(*) counts rows, count(x) non-NULL x: INTEGER.
 * - sum(x): NULL when no non-NULL input; INTEGER when every non-NULL
 *   input is INTEGER or BOOLEAN (0/1) and the exact sum fits in int64,
 *   LDB_RANGE ("integer overflow") when it does not; otherwise REAL.
 * - total(x): REAL, 0.0 when no input. avg(x): REAL or NULL.
 * - sum/total/avg are exact: INTEGER inputs in a 128-bit accumulator,
 *   REAL inputs in an exactsum, and the REAL result is the exact total
 *   rounded once (avg divides that by the count). NaN and infinities
 *   follow exactsum.h. TEXT that is one numeric literal
 *   (value_parse_number) counts as that number; any other TEXT, BLOB,
 *   ARRAY or RECORD counts as REAL 0.0 (so the result is REAL). SQLite
 *   also reads numeric prefixes such as '12abc'; livedb does not.
 * - min(x), max(x): NULL inputs ignored, NULL if none. Order is value_cmp
 *   under the instance collation; among canonically equal values (5 and
 *   5.0, 'a' and 'A' under NOCASE) the least under value_cmp_identity is
 *   the minimum and the greatest the maximum, so the result never depends
 *   on arrival order.
 * - string_agg(x) / group_concat(x): the non-NULL values, each repeated
 *   by its multiplicity, joined by the instance separator (default ",");
 *   TEXT and BLOB contribute their bytes, other types their value_format
 *   text; NULL if no input. The separator is fixed per instance. Arrival
 *   order means nothing under retraction, so the order is a function of
 *   the contributing rows: an ordered instance (agg_inst_set_order) takes
 *   a hidden second argument ARRAY(x, o_1..o_n), and the values come in
 *   the order of (o_1..o_n) under the instance's order terms, then x
 *   (collation, then identity). The SQL layer passes the call's ORDER BY
 *   values followed by the input's unique key, so the order is that of
 *   the input rows' keys unless ORDER BY says otherwise. Without order
 *   terms the values come in ascending value order (collation, then
 *   identity).
 * - array_agg(x): an ARRAY of every x, NULL included, each repeated by
 *   its multiplicity, in string_agg's order (order terms, then x under
 *   the collation, then identity); the empty ARRAY when there is no
 *   input, never NULL. The SQL layer uses it for ARRAY (subquery) only.
 * - DISTINCT (agg_inst.distinct, one-argument aggregates): each canonical
 *   class of argument values (value_eq under the collation) counts once
 *   while its total count is positive, represented by its least member
 *   under value_cmp_identity that has a positive count; for an ordered
 *   instance, by the member whose copy comes first in the order (SQLite's
 *   "first occurrence"), which also places the class in the result.
 *
 * Algebra, for user-defined aggregates (issue 7): AGG_RETRACT says step
 * accepts negative weights (all built-ins do); AGG_MERGE says merge
 * combines two states (partial aggregation). An instance of an aggregate
 * without AGG_RETRACT keeps each state's multiset of argument tuples and
 * recomputes the result from it at finalize (the recompute layer), so
 * agg_step accepts negative weights for every instance: the declaration
 * decides the cost (arithmetic, or the group's values kept), never
 * whether a caller may retract.
 *
 * Ownership: an agg_inst owns its separator and its item pool (the items
 * of ordered multisets, so that min/max/string_agg/DISTINCT do not call
 * malloc per value); states point into the pool, so every state of an
 * instance must be destroyed before agg_inst_free.
 */
#ifndef LDB_VALUE_AGGREGATE_H
#define LDB_VALUE_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"
#include "value/exactsum.h"
#include "value/value.h"

enum agg_flags {
    AGG_RETRACT = 1, /* step accepts negative weights */
    AGG_MERGE = 2,   /* merge is provided */
    AGG_COUNT_ONLY = 4, /* combine reads only the count, not the sum */
    AGG_ORDERED = 8     /* the result depends on the order of the inputs:
                           instances may take order terms (string_agg) */
};

/* How element i of an ordered instance's order values compares: SQL
 * ORDER BY with a collation, a direction and a NULL placement. */
struct agg_order_term {
    enum ldb_collation coll;
    bool desc;
    bool nulls_first;
};

/* Private to aggregate.c: how one ordered multiset of an instance
 * compares its items (plain values when norder is 0, else ARRAY(x,
 * o_1..o_n) by the order terms then x, or by x first when value_first). */
struct agg_vms_order {
    enum ldb_collation coll;
    uint32_t norder;
    const struct agg_order_term *order;
    bool value_first;
};

typedef struct agg_inst agg_inst;

struct agg_def {
    const char *name;
    uint32_t nargs; /* argument values per step (0 for count(*)) */
    uint32_t flags; /* enum agg_flags */
    size_t state_size;
    void (*init)(agg_inst *ai, void *st);
    /* Adds weight copies of the argument tuple (retracts if negative). */
    int (*step)(agg_inst *ai, void *st, const value *args, int64_t weight);
    /* st += other; other is unchanged. NULL unless AGG_MERGE. */
    int (*merge)(agg_inst *ai, void *st, const void *other);
    /* The current result (a new reference in *out). */
    int (*finalize)(agg_inst *ai, const void *st, value *out);
    void (*destroy)(agg_inst *ai, void *st);
    /* Heap bytes the state holds beyond state_size, for space counters. */
    size_t (*heap_bytes)(const agg_inst *ai, const void *st);
    /*
     * Declared algebra that materialized views maintain by arithmetic,
     * never by name (issue 7); both optional:
     * combine: when every argument value is an INTEGER (or NULL), the
     *   result is a function of count, the number of non-NULL values (of
     *   rows for count(*)), and sum, their exact sum: *out =
     *   combine(count, sum); LDB_RANGE when it does not fit. count, sum,
     *   total, avg and user aggregates declaring a decomposition.
     * extreme: -1 when the result is the least non-NULL argument under
     *   the instance collation (min), +1 the greatest (max), 0 neither;
     *   an insert can only tighten it, retracting it needs the group's
     *   remaining values.
     */
    int (*combine)(const agg_inst *ai, int64_t count, const isum *sum, value *out);
    int extreme;
};

struct agg_inst {
    const struct agg_def *def;
    enum ldb_collation coll; /* of the argument: order and DISTINCT */
    bool distinct;
    bool recompute; /* def lacks AGG_RETRACT: the recompute layer */
    value sep;  /* string_agg separator */
    pool items; /* multiset items of every state of this instance */
    struct agg_order_term *order; /* owned; norder terms */
    uint32_t norder;
    struct agg_vms_order main_cmp, dist_cmp; /* states; the DISTINCT layer */
};

extern const struct agg_def agg_count_star, agg_count, agg_sum, agg_total,
    agg_avg, agg_min, agg_max, agg_string_agg, agg_array_agg;

/* The built-in of that (lower-case) name: count, sum, total, avg, min,
 * max, string_agg, group_concat; NULL if none. count(*) is agg_count_star. */
const struct agg_def *agg_builtin(const char *name);

/* sep: separator for string_agg (NULL: ","); retained. LDB_MISUSE when
 * distinct is asked of an aggregate that does not take one argument. */
int agg_inst_init(agg_inst *ai, const struct agg_def *def,
                  enum ldb_collation coll, bool distinct, const value *sep);
void agg_inst_free(agg_inst *ai);
/* Makes ai ordered by n terms (copied; n == 0 changes nothing): every
 * step then passes a second argument ARRAY(x, o_1..o_n), where x is the
 * first. Before any state exists. LDB_MISUSE unless the definition is
 * AGG_ORDERED; LDB_NOMEM. */
int agg_inst_set_order(agg_inst *ai, const struct agg_order_term *terms, uint32_t n);
/* Argument values per step: the definition's, plus the order argument. */
uint32_t agg_nargs(const agg_inst *ai);

/* Dispatch through the instance (these add the DISTINCT layer). */
size_t agg_state_size(const agg_inst *ai);
void agg_init(agg_inst *ai, void *st);
int agg_step(agg_inst *ai, void *st, const value *args, int64_t weight);
int agg_merge(agg_inst *ai, void *st, const void *other);
int agg_finalize(agg_inst *ai, const void *st, value *out);
void agg_destroy(agg_inst *ai, void *st);
size_t agg_heap_bytes(const agg_inst *ai, const void *st);

#endif
