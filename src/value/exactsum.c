/*
 * exactsum.c - exact fixed-point sums of doubles (see exactsum.h).
 *
 * Representation: limbs l[0..n) hold the two's complement integer
 *     V = sum_i l[i] * 2^(64 * (base + i))
 * in units of 2^-1074; bits below limb 0 are zero and bits above l[n-1]
 * repeat its sign bit. After every change the window is trimmed: no zero
 * limb at the bottom and no top limb that merely repeats the sign of the
 * one below, so n stays as small as the value allows and equal values have
 * equal representations.
 *
 * An addend is at most 192 bits wide (a 128-bit magnitude shifted by up to
 * 63), so it touches at most three limbs; a window one limb wider than
 * both the old value and the addend always holds the sum.
 */
#include "value/exactsum.h"

#include "base/mem.h"
#include "livedb.h"

#include <math.h>
#include <string.h>

#ifndef __SIZEOF_INT128__
#error "exactsum needs a compiler with 128-bit integers"
#endif
__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

/* A view of the limbs of an exactsum or of a scratch copy. */
struct win {
    uint64_t *l;
    int base;
    unsigned n, cap;
};

static inline uint64_t sign_limb(uint64_t top) { return (top >> 63) ? ~(uint64_t)0 : 0; }

static void win_trim(struct win *w)
{
    while (w->n >= 2 && w->l[w->n - 1] == sign_limb(w->l[w->n - 2]))
        w->n--;
    if (w->n == 1 && w->l[0] == 0)
        w->n = 0;
    unsigned z = 0;
    while (z < w->n && w->l[z] == 0)
        z++;
    if (z) {
        memmove(w->l, w->l + z, (w->n - z) * sizeof(uint64_t));
        w->n -= z;
        w->base += (int)z;
    }
}

/* Widens the window to limbs [lo, hi) (a superset of the current one);
 * the caller has checked that hi - lo <= cap. */
static void win_widen(struct win *w, int lo, int hi)
{
    if (w->n == 0) {
        memset(w->l, 0, (size_t)(hi - lo) * sizeof(uint64_t));
    } else {
        unsigned shift = (unsigned)(w->base - lo);
        uint64_t ext = sign_limb(w->l[w->n - 1]);
        memmove(w->l + shift, w->l, w->n * sizeof(uint64_t));
        memset(w->l, 0, shift * sizeof(uint64_t));
        for (unsigned i = shift + w->n; i < (unsigned)(hi - lo); i++)
            w->l[i] = ext;
    }
    w->base = lo;
    w->n = (unsigned)(hi - lo);
}

/* Limbs touched by mag * 2^pos (mag != 0), starting at limb pos / 64. */
static int addend_limbs(u128 mag, unsigned pos)
{
    uint64_t mhi = (uint64_t)(mag >> 64);
    int bits = mhi ? 128 - __builtin_clzll(mhi) : 64 - __builtin_clzll((uint64_t)mag);
    return (bits + (int)(pos % 64) + 63) / 64;
}

/* The window [lo, hi) that can hold the value plus an addend at limbs
 * [at, at + k). */
static void span_for(const struct win *w, int at, int k, int *lo, int *hi)
{
    int top = at + k;
    *lo = at;
    if (w->n) {
        if (w->base < *lo)
            *lo = w->base;
        if (w->base + (int)w->n > top)
            top = w->base + (int)w->n;
    }
    *hi = top + 1;
}

/* V += (neg ? -1 : 1) * mag * 2^pos; the window must already span it. */
static void win_add(struct win *w, bool neg, u128 mag, unsigned pos)
{
    unsigned sh = pos % 64;
    uint64_t mlo = (uint64_t)mag, mhi = (uint64_t)(mag >> 64);
    uint64_t a[3];
    a[0] = mlo << sh;
    a[1] = sh ? (mlo >> (64 - sh)) | (mhi << sh) : mhi;
    a[2] = sh ? mhi >> (64 - sh) : 0;
    uint64_t ext = 0;
    if (neg) {
        unsigned carry = 1;
        for (int i = 0; i < 3; i++) {
            a[i] = ~a[i] + carry;
            carry = carry && a[i] == 0;
        }
        ext = ~(uint64_t)0;
    }
    unsigned start = (unsigned)((int)(pos / 64) - w->base);
    unsigned carry = 0;
    for (unsigned i = start; i < w->n; i++) {
        uint64_t x = i - start < 3 ? a[i - start] : ext;
        uint64_t s = w->l[i] + x;
        unsigned c1 = s < x;
        uint64_t t = s + carry;
        carry = c1 | (t < s);
        w->l[i] = t;
    }
    win_trim(w);
}

static struct win view(exactsum *s)
{
    return (struct win){ s->on_heap ? s->l.heap : s->l.in, s->base, s->n,
                         s->on_heap ? EXACTSUM_MAX : EXACTSUM_INLINE };
}

static void store(exactsum *s, const struct win *w)
{
    s->base = (int16_t)w->base;
    s->n = (uint8_t)w->n;
}

/* Adds +-mag * 2^pos to s, moving it to the heap first if needed. */
static int add_fixed(exactsum *s, bool neg, u128 mag, unsigned pos)
{
    if (mag == 0)
        return LDB_OK;
    struct win w = view(s);
    int lo, hi;
    span_for(&w, (int)(pos / 64), addend_limbs(mag, pos), &lo, &hi);
    if (hi - lo > (int)w.cap) {
        uint64_t *heap = mem_alloc(EXACTSUM_MAX * sizeof(uint64_t));
        if (!heap)
            return LDB_NOMEM;
        memcpy(heap, s->l.in, w.n * sizeof(uint64_t));
        s->l.heap = heap;
        s->on_heap = 1;
        w = view(s);
    }
    win_widen(&w, lo, hi);
    win_add(&w, neg, mag, pos);
    store(s, &w);
    return LDB_OK;
}

void exactsum_init(exactsum *s) { memset(s, 0, sizeof *s); }

void exactsum_free(exactsum *s)
{
    if (s->on_heap)
        mem_free(s->l.heap);
    exactsum_init(s);
}

size_t exactsum_heap_bytes(const exactsum *s)
{
    return s->on_heap ? EXACTSUM_MAX * sizeof(uint64_t) : 0;
}

static inline uint64_t uabs64(int64_t v) { return v < 0 ? 0 - (uint64_t)v : (uint64_t)v; }

int exactsum_add(exactsum *s, double x, int64_t weight)
{
    if (weight == 0 || x == 0)
        return LDB_OK;
    if (isnan(x)) {
        s->nan += weight;
        return LDB_OK;
    }
    if (isinf(x)) {
        if (x > 0)
            s->pinf += weight;
        else
            s->ninf += weight;
        return LDB_OK;
    }
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    unsigned biased = (unsigned)(bits >> 52) & 0x7ff;
    uint64_t m = bits & (((uint64_t)1 << 52) - 1);
    unsigned pos = 0;
    if (biased) {
        m |= (uint64_t)1 << 52;
        pos = biased - 1;
    }
    bool neg = (bits >> 63) != (weight < 0);
    return add_fixed(s, neg, (u128)m * uabs64(weight), pos);
}

int exactsum_merge(exactsum *s, const exactsum *other)
{
    const uint64_t *ol = other->on_heap ? other->l.heap : other->l.in;
    for (unsigned i = 0; i < other->n; i++) {
        unsigned pos = 64u * (unsigned)(other->base + (int)i);
        uint64_t limb = ol[i];
        int rc;
        if (i + 1 < other->n || !(limb >> 63))
            rc = add_fixed(s, false, limb, pos);
        else
            rc = add_fixed(s, true, uabs64((int64_t)limb), pos);
        if (rc)
            return rc;
    }
    s->pinf += other->pinf;
    s->ninf += other->ninf;
    s->nan += other->nan;
    return LDB_OK;
}

/* ---- rounding ------------------------------------------------------------ */

/* Bit at absolute position pos of a nonnegative window. */
static inline unsigned bit_at(const uint64_t *m, int base, long pos)
{
    long rel = pos - 64L * base;
    return rel < 0 ? 0 : (unsigned)(m[rel / 64] >> (rel % 64)) & 1;
}

/* Whether any bit below absolute position pos is set. */
static bool any_below(const uint64_t *m, int base, long pos)
{
    long rel = pos - 64L * base;
    if (rel <= 0)
        return false;
    for (long i = 0; i < rel / 64; i++)
        if (m[i])
            return true;
    return rel % 64 && (m[rel / 64] & (((uint64_t)1 << (rel % 64)) - 1));
}

/* The value of a window, correctly rounded to nearest, ties to even. */
static double win_round(const struct win *w)
{
    if (w->n == 0)
        return 0.0;
    uint64_t m[EXACTSUM_MAX];
    bool neg = w->l[w->n - 1] >> 63;
    unsigned carry = 1;
    for (unsigned i = 0; i < w->n; i++) {
        m[i] = neg ? ~w->l[i] + carry : w->l[i];
        if (neg)
            carry = carry && m[i] == 0;
    }
    int h = (int)w->n - 1;
    while (h >= 0 && m[h] == 0)
        h--;
    if (h < 0)
        return 0.0;
    long top = 64L * (w->base + h) + 63 - __builtin_clzll(m[h]);
    double r;
    if (top < 53) {
        /* Below 2^-1021 every value of 53 bits is exact: base is 0 here. */
        r = ldexp((double)m[0], -1074);
    } else {
        uint64_t q = 0;
        for (long p = top; p > top - 53; p--)
            q = (q << 1) | bit_at(m, w->base, p);
        unsigned half = bit_at(m, w->base, top - 53);
        if (half && ((q & 1) || any_below(m, w->base, top - 53)))
            q++;
        r = ldexp((double)q, (int)(top - 52 - 1074));
    }
    return neg ? -r : r;
}

static double special_or(const exactsum *s, double finite)
{
    if (s->nan > 0 || (s->pinf > 0 && s->ninf > 0))
        return NAN;
    if (s->pinf > 0)
        return INFINITY;
    if (s->ninf > 0)
        return -INFINITY;
    return finite;
}

double exactsum_value(const exactsum *s)
{
    struct win w = view((exactsum *)s);
    return special_or(s, win_round(&w));
}

double exactsum_value_plus(const exactsum *s, const isum *i)
{
    uint64_t buf[EXACTSUM_MAX];
    const uint64_t *l = s->on_heap ? s->l.heap : s->l.in;
    memcpy(buf, l, s->n * sizeof(uint64_t));
    struct win w = { buf, s->base, s->n, EXACTSUM_MAX };
    i128 v = (i128)(((u128)(uint64_t)i->hi << 64) | i->lo);
    if (v != 0) {
        u128 mag = v < 0 ? -(u128)v : (u128)v;
        int lo, hi;
        span_for(&w, 1074 / 64, addend_limbs(mag, 1074), &lo, &hi);
        win_widen(&w, lo, hi);
        win_add(&w, v < 0, mag, 1074);
    }
    return special_or(s, win_round(&w));
}

/* ---- 128-bit integer sums ------------------------------------------------ */

static inline u128 isum_get(const isum *a) { return ((u128)(uint64_t)a->hi << 64) | a->lo; }

static inline void isum_set(isum *a, u128 v)
{
    a->lo = (uint64_t)v;
    a->hi = (int64_t)(uint64_t)(v >> 64);
}

void isum_add(isum *a, int64_t v, int64_t weight)
{
    isum_set(a, isum_get(a) + (u128)((i128)v * weight));
}

void isum_merge(isum *a, const isum *b) { isum_set(a, isum_get(a) + isum_get(b)); }

bool isum_to_int64(const isum *a, int64_t *out)
{
    if (a->hi != ((int64_t)a->lo >> 63))
        return false;
    *out = (int64_t)a->lo;
    return true;
}
