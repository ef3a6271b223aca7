/*
 * exactsum.h - exact sums of doubles and of 64-bit integers, with
 * retraction.
 *
 * exactsum holds the exact value of a sum of finite doubles (each added
 * with an integer weight, negative weights retracting) as a two's
 * complement fixed-point integer in units of 2^-1074, the smallest
 * subnormal. Every finite double is an integer multiple of that unit, so
 * adding and subtracting is integer arithmetic and loses nothing.
 * exactsum_value rounds the exact value once, to nearest with ties to
 * even. The result is therefore a function of the multiset of surviving
 * inputs alone: any order of additions and retractions gives the same
 * bits as a from-scratch sum of what remains.
 *
 * Only the window of 64-bit limbs that holds nonzero bits is stored; it
 * starts inline (EXACTSUM_INLINE limbs, enough for values of similar
 * magnitude) and moves to a heap array of the largest possible window on
 * the first add that needs more. The whole range (2^-1074 .. 2^1024 times
 * up to 2^63 inputs) fits in EXACTSUM_MAX limbs, so no sum can overflow.
 *
 * Infinities and NaN are counted (with weights) apart from the finite
 * part: any NaN, or both infinities, give NaN; one infinity gives it.
 * An exactly zero sum is +0.0 (the exact sum has no sign of zero).
 *
 * isum is a 128-bit two's complement integer for INTEGER sums: the exact
 * result of up to 2^63 products of int64 values and int64 weights, so a
 * retraction in any order never corrupts a result that fits in int64.
 *
 * Ownership: an exactsum owns its heap array; exactsum_free frees it.
 */
#ifndef LDB_VALUE_EXACTSUM_H
#define LDB_VALUE_EXACTSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXACTSUM_INLINE 3
#define EXACTSUM_MAX 36

typedef struct isum {
    uint64_t lo;
    int64_t hi;
} isum;

typedef struct exactsum {
    int16_t base;    /* limb index of limb[0]: it holds bits 64*base .. */
    uint8_t n;       /* limbs in use; 0 means the finite part is zero */
    uint8_t on_heap; /* limbs are in heap (EXACTSUM_MAX of them) */
    int64_t pinf, ninf, nan; /* weighted counts of +inf, -inf and NaN */
    union {
        uint64_t in[EXACTSUM_INLINE];
        uint64_t *heap;
    } l;
} exactsum;

void exactsum_init(exactsum *s);
void exactsum_free(exactsum *s);
/* Adds weight * x exactly. LDB_NOMEM (sum unchanged) when the window must
 * move to the heap and cannot. */
int exactsum_add(exactsum *s, double x, int64_t weight);
/* Adds another sum (its finite part and its counts). */
int exactsum_merge(exactsum *s, const exactsum *other);
/* The sum, correctly rounded. */
double exactsum_value(const exactsum *s);
/* The correctly rounded value of s + i, rounded once. */
double exactsum_value_plus(const exactsum *s, const isum *i);
/* Heap bytes held (0 while inline). */
size_t exactsum_heap_bytes(const exactsum *s);

static inline void isum_init(isum *a)
{
    a->lo = 0;
    a->hi = 0;
}
/* a += v * weight (exact unless |sum| passes 2^127). */
void isum_add(isum *a, int64_t v, int64_t weight);
void isum_merge(isum *a, const isum *b);
/* True and *out set when the sum fits in int64. */
bool isum_to_int64(const isum *a, int64_t *out);

#endif
