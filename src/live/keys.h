/*
 * keys.h - result keys for live queries (keys.c).
 */
#ifndef LDB_LIVE_KEYS_H
#define LDB_LIVE_KEYS_H

#include "sql/plan.h"

#define KEYED_MAX 64

/* A plan whose output carries a unique key in cols[0..n). */
struct keyed {
    struct plan *plan;
    uint32_t n;
    uint32_t cols[KEYED_MAX];
};

/*
 * Rewrites p (new nodes in pa; p itself is not changed) so that its
 * output has a unique key; hidden key columns are appended after p's
 * columns, so readers of p's columns read the same positions. n == 0
 * means at most one row (a scalar aggregate). LDB_UNSUPPORTED when the
 * key would be too wide; LDB_NOMEM.
 */
int live_ensure_key(plan_arena *pa, struct plan *p, struct keyed *k);

#endif
