/*
 * hsort.h - sorting (hash, index) pairs by bits of the hash, for batches
 * too large to group through a hash table without a cache miss per entry.
 *
 * An LSD radix sort on a field of `bits` bits starting at bit `lo` (at
 * most 11 bits a pass) puts entries whose field is equal next to each
 * other in a few sequential passes; with a field of about log2(n) bits
 * the runs of equal fields are short, and hsort_runs orders each run by
 * the full hash, so equal hashes end up adjacent. Stable: equal fields
 * keep their input order.
 */
#ifndef LDB_BASE_HSORT_H
#define LDB_BASE_HSORT_H

#include <stddef.h>
#include <stdint.h>

struct hkey {
    uint64_t hash;
    uint64_t idx;
};

/* Sorts keys[0..n) by (hash >> lo) & (2^bits - 1), 0 < bits <= 64 - lo,
 * using tmp (n entries) as the second buffer; returns the buffer that
 * holds the result. */
struct hkey *hsort_field(struct hkey *keys, struct hkey *tmp, size_t n, unsigned lo,
                         unsigned bits);
/* After hsort_field: orders every run of equal fields by the full hash. */
void hsort_runs(struct hkey *keys, size_t n, unsigned lo, unsigned bits);

#endif
