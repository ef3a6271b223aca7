/*
 * compare.c - the total order, canonical equality, identity and hashing of
 * values (the rules are written out in docs/VALUES.md).
 *
 * Invariants the tests hold us to:
 * - value_cmp is a total preorder: antisymmetric, transitive, total;
 * - value_cmp(a, b, c) == 0  <=>  value_eq(a, b, c);
 * - value_eq(a, b, c)  =>  value_hash(a, c) == value_hash(b, c);
 * - value_identical(a, b)  =>  value_eq(a, b, c) for every collation c.
 */
#include "value/value.h"

#include "base/hash.h"

#include <math.h>
#include <string.h>

/* Type classes in sort order; INTEGER and REAL share the number class. */
static inline int type_class(enum ldb_type t)
{
    return t == LDB_REAL ? LDB_INTEGER : (int)t;
}

#define TWO63 9223372036854775808.0 /* 2^63, exact as a double */

int value_cmp_int_real(int64_t i, double r)
{
    if (isnan(r))
        return -1;
    if (r < -TWO63)
        return 1;
    if (r >= TWO63)
        return -1;
    int64_t t = (int64_t)r; /* truncation is exact inside the range */
    if (i != t)
        return i < t ? -1 : 1;
    double frac = r - (double)t; /* exact: r and t share the integer part */
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

static int cmp_real(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) ? (isnan(b) ? 0 : 1) : -1;
    return a < b ? -1 : a > b ? 1 : 0;
}

static int cmp_number(const value *a, const value *b)
{
    if (a->s.type == LDB_INTEGER) {
        if (b->s.type == LDB_INTEGER)
            return a->h.u.i < b->h.u.i ? -1 : a->h.u.i > b->h.u.i;
        return value_cmp_int_real(a->h.u.i, b->h.u.r);
    }
    if (b->s.type == LDB_INTEGER)
        return -value_cmp_int_real(b->h.u.i, a->h.u.r);
    return cmp_real(a->h.u.r, b->h.u.r);
}

static inline unsigned char fold(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static size_t rtrim_len(const char *p, size_t n)
{
    while (n > 0 && p[n - 1] == ' ')
        n--;
    return n;
}

static int cmp_binary(const char *a, size_t na, const char *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

static int cmp_text(const value *a, const value *b, enum ldb_collation coll)
{
    size_t na, nb;
    const char *pa = value_bytes(a, &na), *pb = value_bytes(b, &nb);
    if (coll == LDB_COLL_RTRIM)
        return cmp_binary(pa, rtrim_len(pa, na), pb, rtrim_len(pb, nb));
    if (coll != LDB_COLL_NOCASE)
        return cmp_binary(pa, na, pb, nb);
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = fold((unsigned char)pa[i]), y = fold((unsigned char)pb[i]);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return na < nb ? -1 : na > nb;
}

/* Containers share items by reference, so a value can be a DAG whose
 * unfolded size is exponential in its depth (an array of two references
 * to one array of two references ...): the same object compares equal
 * without a walk. */
static int cmp_array(const value *a, const value *b, enum ldb_collation coll)
{
    if (a->h.u.obj == b->h.u.obj)
        return 0;
    value_iter ia, ib;
    value_iter_init(&ia, a);
    value_iter_init(&ib, b);
    for (;;) {
        const value *x = value_iter_next(&ia), *y = value_iter_next(&ib);
        if (!x || !y)
            return x ? 1 : y ? -1 : 0;
        int c = value_cmp(x, y, coll);
        if (c)
            return c;
    }
}

/* Records: field by field (name, then value); a prefix sorts first. */
static int cmp_record(const value *a, const value *b, enum ldb_collation coll)
{
    if (a->h.u.obj == b->h.u.obj)
        return 0;
    size_t na = value_nfields(a), nb = value_nfields(b);
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        int c = cmp_text(value_field_name(a, i), value_field_name(b, i), LDB_COLL_BINARY);
        if (!c)
            c = value_cmp(value_field(a, i), value_field(b, i), coll);
        if (c)
            return c;
    }
    return na < nb ? -1 : na > nb;
}

int value_cmp(const value *a, const value *b, enum ldb_collation coll)
{
    if (coll == VALUE_COLL_IDENTITY)
        return value_cmp_identity(a, b);
    int ca = type_class(value_type(a)), cb = type_class(value_type(b));
    if (ca != cb)
        return ca < cb ? -1 : 1;
    switch (value_type(a)) {
    case LDB_NULL:
        return 0;
    case LDB_BOOLEAN:
    case LDB_LIVE: /* a published row's child handle (live.h): by its payload */
        return a->h.u.i < b->h.u.i ? -1 : a->h.u.i > b->h.u.i;
    case LDB_INTEGER:
    case LDB_REAL:
        return cmp_number(a, b);
    case LDB_TEXT:
        return cmp_text(a, b, coll);
    case LDB_BLOB:
        return cmp_text(a, b, LDB_COLL_BINARY);
    case LDB_ARRAY:
        return cmp_array(a, b, coll);
    case LDB_RECORD:
        return cmp_record(a, b, coll);
    }
    return 0;
}

bool value_eq(const value *a, const value *b, enum ldb_collation coll)
{
    if (coll == VALUE_COLL_IDENTITY)
        return value_identical(a, b);
    if (a->s.type == LDB_TEXT && b->s.type == LDB_TEXT && coll == LDB_COLL_BINARY) {
        size_t na, nb;
        const char *pa = value_bytes(a, &na), *pb = value_bytes(b, &nb);
        return na == nb && memcmp(pa, pb, na) == 0;
    }
    if (a->s.type == LDB_INTEGER && b->s.type == LDB_INTEGER)
        return a->h.u.i == b->h.u.i;
    if (a->s.type == b->s.type && (a->s.type == LDB_ARRAY || a->s.type == LDB_RECORD)) {
        /* an include's array is compared whenever its row is looked up:
         * the kept hashes settle most inequalities without the items */
        if (a->h.u.obj == b->h.u.obj)
            return true;
        if (coll == LDB_COLL_BINARY && value_summary(a)->hash != value_summary(b)->hash)
            return false;
    }
    return value_cmp(a, b, coll) == 0;
}

static bool identical_array(const value *a, const value *b)
{
    if (a->h.u.obj == b->h.u.obj)
        return true;
    if (value_len(a) != value_len(b) || value_summary(a)->hash != value_summary(b)->hash)
        return false;
    value_iter ia, ib;
    value_iter_init(&ia, a);
    value_iter_init(&ib, b);
    for (const value *x; (x = value_iter_next(&ia));)
        if (!value_identical(x, value_iter_next(&ib)))
            return false;
    return true;
}

bool value_identical(const value *a, const value *b)
{
    if (a->s.type != b->s.type)
        return false;
    switch (value_type(a)) {
    case LDB_NULL:
        return true;
    case LDB_BOOLEAN:
    case LDB_INTEGER:
    case LDB_LIVE:
        return a->h.u.i == b->h.u.i;
    case LDB_REAL:
        if (isnan(a->h.u.r) || isnan(b->h.u.r))
            return isnan(a->h.u.r) && isnan(b->h.u.r);
        return memcmp(&a->h.u.r, &b->h.u.r, sizeof(double)) == 0;
    case LDB_TEXT:
    case LDB_BLOB: {
        size_t na, nb;
        const char *pa = value_bytes(a, &na), *pb = value_bytes(b, &nb);
        return na == nb && memcmp(pa, pb, na) == 0;
    }
    case LDB_ARRAY:
        return identical_array(a, b);
    case LDB_RECORD: {
        if (a->h.u.obj == b->h.u.obj)
            return true;
        size_t n = a->h.u.obj->len;
        if (n != b->h.u.obj->len || value_summary(a)->hash != value_summary(b)->hash)
            return false;
        for (size_t i = 0; i < n; i++)
            if (!value_identical(value_field_name(a, i), value_field_name(b, i)) ||
                !value_identical(value_field(a, i), value_field(b, i)))
                return false;
        return true;
    }
    }
    return false;
}

/* a and b are value_cmp-equal, so they have the same length. */
static int tiebreak_array(const value *a, const value *b)
{
    if (a->h.u.obj == b->h.u.obj)
        return 0;
    value_iter ia, ib;
    value_iter_init(&ia, a);
    value_iter_init(&ib, b);
    for (const value *x; (x = value_iter_next(&ia));) {
        int c = value_cmp_identity(x, value_iter_next(&ib));
        if (c)
            return c;
    }
    return 0;
}

/* Orders values that value_cmp (BINARY) calls equal: INTEGER before REAL,
 * -0.0 before 0.0, containers element by element. */
static int identity_tiebreak(const value *a, const value *b)
{
    if (a->s.type != b->s.type)
        return a->s.type < b->s.type ? -1 : 1;
    switch (value_type(a)) {
    case LDB_REAL: {
        int sa = signbit(a->h.u.r) && !isnan(a->h.u.r);
        int sb = signbit(b->h.u.r) && !isnan(b->h.u.r);
        return sb - sa;
    }
    case LDB_ARRAY:
        return tiebreak_array(a, b);
    case LDB_RECORD: {
        if (a->h.u.obj == b->h.u.obj)
            return 0;
        for (size_t i = 0; i < value_nfields(a); i++) {
            int c = value_cmp_identity(value_field(a, i), value_field(b, i));
            if (c)
                return c;
        }
        return 0;
    }
    default:
        return 0;
    }
}

int value_cmp_identity(const value *a, const value *b)
{
    int c = value_cmp(a, b, LDB_COLL_BINARY);
    return c ? c : identity_tiebreak(a, b);
}

/* ---- hashing ------------------------------------------------------------ */

#define H_NULL 0x5bd1e9955bd1e995ull
#define H_BOOL 0x27d4eb2f165667c5ull
#define H_NUM 0x9e3779b97f4a7c15ull
#define H_NAN 0x94d049bb133111ebull
#define H_TEXT 0xc2b2ae3d27d4eb4full
#define H_BLOB 0x165667b19e3779f9ull
#define H_RECORD 0xff51afd7ed558ccdull

static inline uint64_t hash_int(int64_t i) { return hash_u64((uint64_t)i ^ H_NUM); }

/* A REAL equal to some INTEGER hashes as that INTEGER. */
static uint64_t hash_real(double r)
{
    if (isnan(r))
        return H_NAN;
    if (r >= -TWO63 && r < TWO63) {
        int64_t t = (int64_t)r;
        if ((double)t == r)
            return hash_int(t);
    }
    uint64_t bits;
    memcpy(&bits, &r, sizeof bits);
    return hash_u64(bits ^ H_NAN);
}

/* NOCASE: hash the folded bytes, in fixed-size chunks so that no
 * allocation is needed; equal folded strings chunk identically. */
static uint64_t hash_nocase(const char *p, size_t n)
{
    unsigned char buf[64];
    uint64_t h = H_TEXT;
    if (n == 0)
        return hash_bytes(p, 0, h);
    do {
        size_t k = n < sizeof buf ? n : sizeof buf;
        for (size_t i = 0; i < k; i++)
            buf[i] = fold((unsigned char)p[i]);
        h = hash_bytes(buf, k, h);
        p += k;
        n -= k;
    } while (n > 0);
    return h;
}

static uint64_t hash_text(const value *v, enum ldb_collation coll)
{
    size_t n;
    const char *p = value_bytes(v, &n);
    if (coll == LDB_COLL_NOCASE)
        return hash_nocase(p, n);
    if (coll == LDB_COLL_RTRIM)
        n = rtrim_len(p, n);
    return hash_bytes(p, n, H_TEXT);
}

uint64_t value_hash_items(const value *v, enum ldb_collation coll)
{
    if (coll == VALUE_COLL_IDENTITY)
        coll = LDB_COLL_BINARY;
    if (value_type(v) == LDB_ARRAY)
        return value_array_hash_(v, coll);
    size_t n = value_nfields(v);
    uint64_t h = H_RECORD ^ n;
    for (size_t i = 0; i < n; i++) {
        h = hash_combine(h, value_hash(value_field_name(v, i), LDB_COLL_BINARY));
        h = hash_combine(h, value_hash(value_field(v, i), coll));
    }
    return h;
}

uint64_t value_hash(const value *v, enum ldb_collation coll)
{
    if (coll == VALUE_COLL_IDENTITY) /* identical values are BINARY-equal */
        coll = LDB_COLL_BINARY;
    switch (value_type(v)) {
    case LDB_NULL:
        return H_NULL;
    case LDB_BOOLEAN:
    case LDB_LIVE:
        return hash_u64((uint64_t)v->h.u.i ^ H_BOOL);
    case LDB_INTEGER:
        return hash_int(v->h.u.i);
    case LDB_REAL:
        return hash_real(v->h.u.r);
    case LDB_TEXT:
        return hash_text(v, coll);
    case LDB_BLOB: {
        size_t n;
        const char *p = value_bytes(v, &n);
        return hash_bytes(p, n, H_BLOB);
    }
    case LDB_ARRAY:
        return value_array_hash_(v, coll);
    case LDB_RECORD:
        return coll == LDB_COLL_BINARY ? value_summary(v)->hash : value_hash_items(v, coll);
    }
    return 0;
}
