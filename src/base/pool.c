/*
 * pool.c - fixed-size object pool (see pool.h).
 */
#include "base/pool.h"

#include "base/mem.h"

struct pool_chunk {
    struct pool_chunk *next;
    size_t pad; /* keeps items 16-byte aligned */
};

void pool_init(pool *p, size_t item_size)
{
    size_t s = item_size < sizeof(void *) ? sizeof(void *) : item_size;
    *p = (pool){ .item_size = (s + 7) & ~(size_t)7 };
}

void *pool_get(pool *p)
{
    if (p->free_list) {
        void *it = p->free_list;
        p->free_list = *(void **)it;
        p->live++;
        return it;
    }
    if (p->fresh + p->item_size > p->fresh_end) {
        size_t n = POOL_CHUNK_BYTES;
        if (n < sizeof(struct pool_chunk) + p->item_size)
            n = sizeof(struct pool_chunk) + p->item_size;
        struct pool_chunk *c = mem_alloc(n);
        if (!c)
            return NULL;
        c->next = p->chunks;
        p->chunks = c;
        p->bytes += n;
        p->fresh = (char *)(c + 1);
        p->fresh_end = (char *)c + n;
    }
    void *it = p->fresh;
    p->fresh += p->item_size;
    p->live++;
    return it;
}

void pool_put(pool *p, void *item)
{
    *(void **)item = p->free_list;
    p->free_list = item;
    p->live--;
}

void pool_free(pool *p)
{
    struct pool_chunk *c = p->chunks;
    while (c) {
        struct pool_chunk *next = c->next;
        mem_free(c);
        c = next;
    }
    pool_init(p, p->item_size);
}
