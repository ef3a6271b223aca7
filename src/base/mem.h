/*
 * mem.h - the one allocator interface of livedb.
 *
 * Every heap allocation in the library goes through mem_alloc/mem_realloc/
 * mem_free, so that a test can make the N-th allocation fail and prove that
 * the caller returns LDB_NOMEM and leaves its state as it was.
 *
 * Invariants:
 * - mem_alloc(0) returns a unique non-NULL pointer (like malloc(1)), so a
 *   NULL return always means "out of memory".
 * - mem_free(NULL) is a no-op.
 * - The failure hook and the live-allocation counter are per thread: a
 *   database handle is used by one thread at a time, and tests on different
 *   threads do not disturb each other.
 */
#ifndef LDB_BASE_MEM_H
#define LDB_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>

void *mem_alloc(size_t n);
void *mem_calloc(size_t count, size_t size); /* zeroed; NULL on overflow */
/* On failure returns NULL and leaves p untouched (still owned by caller). */
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
/* Owned copy of n bytes plus a terminating NUL. */
char *mem_strndup(const char *s, size_t n);

/* ---- sub-allocators under AddressSanitizer ------------------------------ */

/* An arena chunk or a pool chunk is one block to ASan, so a read past a
 * piece carved from it, or of a piece handed back, goes unseen. Under ASan
 * the sub-allocators poison what they have not handed out (MEM_ASAN is 1
 * there, and MEM_POISON / MEM_UNPOISON mark bytes); elsewhere these are
 * no-ops. */
#if defined(__SANITIZE_ADDRESS__)
#define MEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEM_ASAN 1
#endif
#endif
#ifdef MEM_ASAN
#include <sanitizer/asan_interface.h>
#define MEM_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MEM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MEM_ASAN 0
#define MEM_POISON(p, n) ((void)(p), (void)(n))
#define MEM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- test hooks ------------------------------------------------------ */

/*
 * Make the n-th allocation from now fail (n = 1: the very next one).
 * With persistent != 0 every allocation after it fails too.
 * n = 0 disables the hook.
 */
void mem_fail_at(uint64_t n, int persistent);
/* Number of allocations that failed because of the hook since it was set. */
uint64_t mem_failed_count(void);
/* Allocations made (successful) by this thread since start. */
uint64_t mem_alloc_count(void);
/* Live allocations of this thread: allocated and not yet freed. */
int64_t mem_live(void);

#endif
