/*
 * pool.h - fixed-size object pool.
 *
 * For structures that hold many small items of one size (multiset items,
 * top-k entries) and must not call malloc once per item. Items come from
 * chunks that double up to POOL_CHUNK_BYTES; a freed item goes on a free list and is
 * reused by the next pool_get. Chunks are returned only by pool_free, so a
 * pool's footprint is its high-water mark.
 *
 * Ownership: the pool owns every chunk; an item belongs to whoever got it
 * until pool_put. pool_free releases everything, items still out included.
 */
#ifndef LDB_BASE_POOL_H
#define LDB_BASE_POOL_H

#include <stddef.h>

#define POOL_CHUNK_BYTES 4096

struct pool_chunk;

typedef struct pool {
    size_t item_size;          /* rounded up to a multiple of 8 */
    void *free_list;           /* first free item, or NULL */
    struct pool_chunk *chunks; /* newest first */
    char *fresh, *fresh_end;   /* never-used items in the newest chunk */
    size_t bytes;              /* bytes in chunks */
    size_t live;               /* items handed out and not put back */
} pool;

void pool_init(pool *p, size_t item_size);
/* An uninitialized item, or NULL when a new chunk cannot be allocated. */
void *pool_get(pool *p);
void pool_put(pool *p, void *item);
void pool_free(pool *p);

#endif
