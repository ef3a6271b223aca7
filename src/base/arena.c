/*
 * arena.c - chunked bump allocator (see arena.h).
 *
 * Chunks form a singly linked list from newest to oldest. Rewinding frees
 * chunks newer than the mark's chunk; the oldest chunk is kept by
 * arena_reset so that a reused arena does not allocate again.
 *
 * Under AddressSanitizer a chunk is one malloc block to ASan, so a piece
 * read past its end went unseen unless it ended the chunk. There every
 * piece gets a poisoned redzone after it, and free space (never handed
 * out, or rewound) stays poisoned: reading past a piece, or a rewound
 * one, is reported like any heap overflow or use after free.
 */
#include "base/arena.h"

#include "base/mem.h"

#include <stdint.h>
#include <string.h>

#define ARENA_ALIGN 16

/* A poisoned redzone after every piece under ASan (mem.h). */
#define ARENA_REDZONE (MEM_ASAN ? ARENA_ALIGN : 0)

struct arena_chunk {
    struct arena_chunk *prev;
    size_t size; /* usable bytes after the header */
    _Alignas(ARENA_ALIGN) char data[];
};

void arena_init(arena *a, size_t chunk_size)
{
    a->chunk = NULL;
    a->cur = a->end = NULL;
    a->chunk_size = chunk_size ? chunk_size : 4096;
    a->bytes = 0;
}

static void *alloc_slow(arena *a, size_t n)
{
    size_t size = a->chunk_size;
    if (n > size / 4)
        size = n; /* a big piece gets a chunk of its own (then full) */
    struct arena_chunk *c = mem_alloc(sizeof *c + size);
    if (!c)
        return NULL;
    c->size = size;
    c->prev = a->chunk;
    a->chunk = c;
    a->cur = c->data + n;
    a->end = c->data + size;
    a->bytes += size;
    MEM_POISON(c->data, size);
    return c->data;
}

/* A piece of want bytes and its redzone, 16-byte aligned. */
static void *alloc_piece(arena *a, size_t want)
{
    size_t n = (want + ARENA_REDZONE + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (n == 0)
        n = ARENA_ALIGN;
    if ((size_t)(a->end - a->cur) >= n) {
        void *p = a->cur;
        a->cur += n;
        return p;
    }
    return alloc_slow(a, n);
}

void *arena_alloc(arena *a, size_t n)
{
    void *p = alloc_piece(a, n);
    if (p)
        MEM_UNPOISON(p, n);
    return p;
}

void *arena_calloc(arena *a, size_t n)
{
    void *p = arena_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

arena_mark arena_get_mark(const arena *a)
{
    arena_mark m = { a->chunk, a->cur };
    return m;
}

/* Frees chunks from a->chunk back to (not including) stop. */
static void free_chunks_until(arena *a, struct arena_chunk *stop)
{
    struct arena_chunk *c = a->chunk;
    while (c && c != stop) {
        struct arena_chunk *prev = c->prev;
        a->bytes -= c->size;
        MEM_UNPOISON(c->data, c->size); /* the block goes back whole */
        mem_free(c);
        c = prev;
    }
    a->chunk = c;
}

void arena_rewind(arena *a, arena_mark m)
{
    free_chunks_until(a, m.chunk);
    if (!m.chunk) {
        a->cur = a->end = NULL;
        return;
    }
    a->cur = m.cur;
    a->end = m.chunk->data + m.chunk->size;
    MEM_POISON(a->cur, (size_t)(a->end - a->cur));
}

void arena_reset(arena *a)
{
    if (!a->chunk)
        return;
    struct arena_chunk *oldest = a->chunk;
    while (oldest->prev)
        oldest = oldest->prev;
    free_chunks_until(a, oldest);
    a->cur = oldest->data;
    a->end = oldest->data + oldest->size;
    MEM_POISON(a->cur, oldest->size);
}

void arena_free(arena *a)
{
    free_chunks_until(a, NULL);
    a->cur = a->end = NULL;
}
