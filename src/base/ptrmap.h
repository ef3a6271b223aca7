/*
 * ptrmap.h - a map from pointers to 64-bit payloads, for walks over plans
 * that are DAGs: a node reached along several paths is looked up, not
 * walked again (memoized results, visited sets), in O(1).
 *
 * Keys are compared by address only. Entries are never removed; a
 * payload pointer from ptrmap_get is valid until the next ptrmap_put.
 * Invariant: an allocation failure (LDB_NOMEM) leaves the map unchanged.
 */
#ifndef LDB_BASE_PTRMAP_H
#define LDB_BASE_PTRMAP_H

#include <stdint.h>

#include "base/hmap.h"
#include "base/vec.h"

struct ptrmap_ent {
    const void *key;
    uint64_t val;
};

typedef struct ptrmap {
    hmap idx;                       /* hash of key -> position in ents */
    VEC(struct ptrmap_ent) ents;
} ptrmap;

#define PTRMAP_INIT { HMAP_INIT, VEC_INIT }

void ptrmap_free(ptrmap *m);
/* The payload of key, or NULL when key is not in the map. */
uint64_t *ptrmap_get(const ptrmap *m, const void *key);
/* Sets the payload of key (adding key when it is new). LDB_NOMEM. */
int ptrmap_put(ptrmap *m, const void *key, uint64_t val);

/* The same with pointer payloads. */
static inline void *ptrmap_get_ptr(const ptrmap *m, const void *key)
{
    uint64_t *v = ptrmap_get(m, key);
    return v ? (void *)(uintptr_t)*v : NULL;
}

static inline int ptrmap_put_ptr(ptrmap *m, const void *key, const void *val)
{
    return ptrmap_put(m, key, (uint64_t)(uintptr_t)val);
}

#endif
