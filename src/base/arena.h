/*
 * arena.h - bump allocator for per-statement and per-batch memory.
 *
 * Memory comes from a list of chunks; arena_alloc hands out 16-byte aligned
 * pieces and nothing is freed until arena_rewind/arena_reset/arena_free.
 * A mark taken with arena_mark lets a caller undo everything allocated
 * after it (e.g. a failed statement), keeping the chunks for reuse.
 *
 * Ownership: the arena owns all its memory; pointers into it die with the
 * rewind/reset/free that covers them.
 */
#ifndef LDB_BASE_ARENA_H
#define LDB_BASE_ARENA_H

#include <stddef.h>

struct arena_chunk;

typedef struct arena {
    struct arena_chunk *chunk; /* current chunk (newest), or NULL */
    char *cur, *end;           /* free space in the current chunk */
    size_t chunk_size;         /* default size of new chunks */
    size_t bytes;              /* total bytes held in chunks */
} arena;

typedef struct arena_mark {
    struct arena_chunk *chunk;
    char *cur;
} arena_mark;

void arena_init(arena *a, size_t chunk_size);
/* NULL on allocation failure; the arena is unchanged then. */
void *arena_alloc(arena *a, size_t n);
void *arena_calloc(arena *a, size_t n);
char *arena_strndup(arena *a, const char *s, size_t n);
arena_mark arena_get_mark(const arena *a);
/* Frees everything allocated after the mark (chunks after it go back). */
void arena_rewind(arena *a, arena_mark m);
/* Empties the arena but keeps its first chunk for reuse. */
void arena_reset(arena *a);
void arena_free(arena *a);

#endif
