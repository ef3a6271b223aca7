/*
 * hash.h - the 64-bit hash used by every hash table and every cached row
 * hash in livedb.
 *
 * The core step is a "folded multiply": the 128-bit product of two 64-bit
 * words, high half xor low half. It mixes well, costs one multiply per
 * 8 bytes, and needs no tables. hash_u64 is a bijective finalizer, so
 * distinct integers never collide.
 */
#ifndef LDB_BASE_HASH_H
#define LDB_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_SEED 0x2d358dccaa6c78a5ull

static inline uint64_t hash_fold_mul(uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
    /* Portable 64x64->128 multiply from 32-bit halves. */
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    uint64_t lo = (mid << 32) | (uint32_t)ll;
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return lo ^ hi;
#endif
}

/* Bijective 64-bit mix (distinct inputs give distinct outputs). */
static inline uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    return x;
}

/* Combine a running hash with one more 64-bit word. */
static inline uint64_t hash_combine(uint64_t h, uint64_t w)
{
    return hash_fold_mul(h ^ 0xa0761d6478bd642full, w ^ 0xe7037ed1a0b428dbull);
}

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);

#endif
