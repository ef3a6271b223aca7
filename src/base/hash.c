/*
 * hash.c - byte-string hashing (see hash.h for the design).
 */
#include "base/hash.h"

#include <string.h>

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Reads 0..8 bytes into a word, zero-padded; n is mixed in separately. */
static inline uint64_t load_tail(const unsigned char *p, size_t n)
{
    uint64_t w = 0;
    memcpy(&w, p, n);
    return w;
}

uint64_t hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed ^ hash_fold_mul(seed ^ 0x8ebc6af09c88c6e3ull, (uint64_t)n ^ 0x589965cc75374cc3ull);
    size_t i = n;
    while (i > 16) {
        h = hash_fold_mul(load64(p) ^ 0xa0761d6478bd642full ^ h,
                          load64(p + 8) ^ 0xe7037ed1a0b428dbull);
        p += 16;
        i -= 16;
    }
    uint64_t a, b;
    if (i > 8) {
        a = load64(p);
        b = load_tail(p + 8, i - 8);
    } else {
        a = load_tail(p, i);
        b = 0;
    }
    h = hash_fold_mul(a ^ 0xa0761d6478bd642full ^ h, b ^ 0xe7037ed1a0b428dbull);
    return hash_fold_mul(h ^ 0x1d8e4e27c47d124full, (uint64_t)n ^ 0xe7037ed1a0b428dbull);
}
