/*
 * slt_md5.c - MD5 (RFC 1321) for sqllogictest result hashes, written from
 * the RFC's description: 64-byte blocks, four rounds of sixteen steps,
 * little-endian words, the bit length appended after a 0x80 pad byte.
 * The 64 additive constants are floor(2^32 * |sin(i + 1)|), computed once
 * (a double holds sin exactly enough for these 32 bits; the tests check the
 * RFC's own test vectors, which would catch any wrong constant).
 */
#include "slt.h"

#include <math.h>
#include <string.h>

static uint32_t md5_k[64];
static int md5_k_ready;

static const unsigned char md5_shift[4][4] = {
    { 7, 12, 17, 22 }, { 5, 9, 14, 20 }, { 4, 11, 16, 23 }, { 6, 10, 15, 21 }
};

static void md5_constants(void)
{
    for (int i = 0; i < 64; i++)
        md5_k[i] = (uint32_t)floor(fabs(sin((double)(i + 1))) * 4294967296.0);
    md5_k_ready = 1;
}

static uint32_t rotl32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

/* The round function and message word of step i. */
static uint32_t md5_mix(int i, uint32_t b, uint32_t c, uint32_t d, int *word)
{
    switch (i / 16) {
    case 0: *word = i; return (b & c) | (~b & d);
    case 1: *word = (5 * i + 1) % 16; return (b & d) | (c & ~d);
    case 2: *word = (3 * i + 5) % 16; return b ^ c ^ d;
    default: *word = (7 * i) % 16; return c ^ (b | ~d);
    }
}

static void md5_block(uint32_t h[4], const unsigned char *p)
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
               (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (int i = 0; i < 64; i++) {
        int w;
        uint32_t f = md5_mix(i, b, c, d, &w);
        uint32_t t = d;
        d = c;
        c = b;
        b = b + rotl32(a + f + md5_k[i] + x[w], md5_shift[i / 16][i % 4]);
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

void slt_md5_init(slt_md5 *m)
{
    if (!md5_k_ready)
        md5_constants();
    m->h[0] = 0x67452301u;
    m->h[1] = 0xefcdab89u;
    m->h[2] = 0x98badcfeu;
    m->h[3] = 0x10325476u;
    m->nbytes = 0;
}

void slt_md5_update(slt_md5 *m, const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t used = (size_t)(m->nbytes % 64);
    m->nbytes += n;
    if (used) {
        size_t take = 64 - used < n ? 64 - used : n;
        memcpy(m->block + used, p, take);
        p += take;
        n -= take;
        if (used + take < 64)
            return;
        md5_block(m->h, m->block);
    }
    for (; n >= 64; p += 64, n -= 64)
        md5_block(m->h, p);
    memcpy(m->block, p, n);
}

void slt_md5_hex(slt_md5 *m, char hex[33])
{
    uint64_t bits = m->nbytes * 8;
    unsigned char pad[72] = { 0x80 };
    size_t used = (size_t)(m->nbytes % 64);
    size_t npad = (used < 56 ? 56 : 120) - used;
    for (int i = 0; i < 8; i++)
        pad[npad + (size_t)i] = (unsigned char)(bits >> (8 * i));
    slt_md5_update(m, pad, npad + 8);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        unsigned byte = (m->h[i / 4] >> (8 * (i % 4))) & 0xff;
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
    hex[32] = 0;
}
