/*
 * hsort.c - radix sort of (hash, index) pairs by a field of the hash (see
 * hsort.h). Passes of equal width, at most 11 bits: a 2048-entry count
 * table stays in L1.
 */
#include "base/hsort.h"

#include <string.h>

#define HSORT_MAX_DIGIT 11

static uint64_t field_of(uint64_t h, unsigned lo, uint64_t mask) { return (h >> lo) & mask; }

struct hkey *hsort_field(struct hkey *keys, struct hkey *tmp, size_t n, unsigned lo,
                         unsigned bits)
{
    unsigned passes = (bits + HSORT_MAX_DIGIT - 1) / HSORT_MAX_DIGIT;
    unsigned digit = (bits + passes - 1) / passes;
    size_t count[1 << HSORT_MAX_DIGIT];
    for (unsigned p = 0; p < passes; p++) {
        unsigned shift = lo + p * digit;
        unsigned width = p + 1 < passes ? digit : bits - p * digit;
        uint64_t mask = ((uint64_t)1 << width) - 1;
        memset(count, 0, ((size_t)1 << width) * sizeof count[0]);
        for (size_t i = 0; i < n; i++)
            count[field_of(keys[i].hash, shift, mask)]++;
        size_t sum = 0;
        for (size_t d = 0; d < ((size_t)1 << width); d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[field_of(keys[i].hash, shift, mask)]++] = keys[i];
        struct hkey *t = keys;
        keys = tmp;
        tmp = t;
    }
    return keys;
}

void hsort_runs(struct hkey *keys, size_t n, unsigned lo, unsigned bits)
{
    uint64_t mask = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    for (size_t i = 0; i < n;) {
        uint64_t f = field_of(keys[i].hash, lo, mask);
        size_t j = i + 1;
        while (j < n && field_of(keys[j].hash, lo, mask) == f)
            j++;
        for (size_t a = i + 1; a < j; a++) { /* insertion sort: runs are short */
            struct hkey x = keys[a];
            size_t b = a;
            while (b > i && keys[b - 1].hash > x.hash) {
                keys[b] = keys[b - 1];
                b--;
            }
            keys[b] = x;
        }
        i = j;
    }
}
