/*
 * mem.c - allocator with a failure-injection hook and a live counter.
 *
 * The counters are thread-local so that the hot path pays no atomic
 * operation. mem_live() counts blocks, not bytes: a byte count would need a
 * size header on every block, and tests only need "back to the baseline".
 */
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local uint64_t fail_countdown; /* 0: hook disabled */
static _Thread_local int fail_persistent;
static _Thread_local int fail_tripped;
static _Thread_local uint64_t failed_total;
static _Thread_local uint64_t alloc_total;
static _Thread_local int64_t live_blocks;

/* Returns 1 when this allocation must fail. */
static int should_fail(void)
{
    if (fail_tripped && fail_persistent) {
        failed_total++;
        return 1;
    }
    if (fail_countdown == 0)
        return 0;
    if (--fail_countdown == 0) {
        fail_tripped = 1;
        failed_total++;
        return 1;
    }
    return 0;
}

void *mem_alloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = malloc(n ? n : 1);
    if (p) {
        alloc_total++;
        live_blocks++;
    }
    return p;
}

void *mem_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = mem_alloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *mem_realloc(void *p, size_t n)
{
    if (!p)
        return mem_alloc(n);
    if (should_fail())
        return NULL;
    void *q = realloc(p, n ? n : 1);
    if (q)
        alloc_total++;
    return q;
}

void mem_free(void *p)
{
    if (!p)
        return;
    live_blocks--;
    free(p);
}

char *mem_strndup(const char *s, size_t n)
{
    char *p = mem_alloc(n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void mem_fail_at(uint64_t n, int persistent)
{
    fail_countdown = n;
    fail_persistent = persistent;
    fail_tripped = 0;
    failed_total = 0;
}

uint64_t mem_failed_count(void) { return failed_total; }
uint64_t mem_alloc_count(void) { return alloc_total; }
int64_t mem_live(void) { return live_blocks; }
