/*
 * pool.c - fixed-size object pool (see pool.h).
 *
 * Under AddressSanitizer every item not handed out (fresh or put back) is
 * poisoned, so using an item after pool_put is reported like a use after
 * free; the free-list link is read only after unpoisoning.
 */
#include "base/pool.h"

#include "base/mem.h"

struct pool_chunk {
    struct pool_chunk *next;
    size_t bytes; /* of this chunk (also keeps items 16-byte aligned) */
};

void pool_init(pool *p, size_t item_size)
{
    size_t s = item_size < sizeof(void *) ? sizeof(void *) : item_size;
    *p = (pool){ .item_size = (s + 7) & ~(size_t)7 };
}

/* The next chunk: four items first, then as many bytes as the pool has,
 * up to POOL_CHUNK_BYTES (a pool of a few items stays small: a result set
 * per child live result has two). */
static size_t chunk_bytes(const pool *p)
{
    size_t min = sizeof(struct pool_chunk) + p->item_size;
    size_t n = p->bytes ? p->bytes : sizeof(struct pool_chunk) + 4 * p->item_size;
    n = n < POOL_CHUNK_BYTES ? n : POOL_CHUNK_BYTES;
    return n < min ? min : n;
}

void *pool_get(pool *p)
{
    if (p->free_list) {
        void *it = p->free_list;
        MEM_UNPOISON(it, p->item_size);
        p->free_list = *(void **)it;
        p->live++;
        return it;
    }
    if (!p->fresh || p->item_size > (size_t)(p->fresh_end - p->fresh)) {
        size_t n = chunk_bytes(p);
        struct pool_chunk *c = mem_alloc(n);
        if (!c)
            return NULL;
        c->next = p->chunks;
        c->bytes = n;
        p->chunks = c;
        p->bytes += n;
        p->fresh = (char *)(c + 1);
        p->fresh_end = (char *)c + n;
        MEM_POISON(p->fresh, (size_t)(p->fresh_end - p->fresh));
    }
    void *it = p->fresh;
    MEM_UNPOISON(it, p->item_size);
    p->fresh += p->item_size;
    p->live++;
    return it;
}

void pool_put(pool *p, void *item)
{
    *(void **)item = p->free_list;
    p->free_list = item;
    p->live--;
    MEM_POISON(item, p->item_size);
}

void pool_free(pool *p)
{
    struct pool_chunk *c = p->chunks;
    while (c) {
        struct pool_chunk *next = c->next;
        MEM_UNPOISON(c, c->bytes); /* the block goes back whole */
        mem_free(c);
        c = next;
    }
    pool_init(p, p->item_size);
}
