/*
 * value.h - typed SQL values: NULL, BOOLEAN, INTEGER, REAL, TEXT, BLOB,
 * ARRAY and RECORD; their total order, canonical equality and hashing.
 *
 * Layout (16 bytes, see docs/VALUES.md for the reasons):
 *   byte 0      type (enum ldb_type)
 *   byte 1      ilen: TEXT/BLOB of up to VALUE_INLINE_MAX bytes are stored
 *               inline in bytes 2..15 and ilen is their length; otherwise
 *               ilen is VALUE_HEAP
 *   bytes 8..15 INTEGER, REAL, BOOLEAN (as 0/1) or a pointer to a
 *               reference-counted heap object (long TEXT/BLOB, ARRAY,
 *               RECORD)
 *
 * Ownership: a value that points to a heap object owns one reference.
 * Copying the struct therefore needs value_copy (which retains); dropping
 * it needs value_release. Values with no heap object (numbers, NULL,
 * inline text) need neither, but calling them is always correct.
 *
 * Two equalities, on purpose:
 * - canonical (value_cmp == 0, value_eq, value_hash): -0.0 = 0, 5 = 5.0,
 *   NaN = NaN, TEXT equal under a collation. Used for ordering, grouping,
 *   joins, routing and keys.
 * - identity (value_identical): same type and same bytes, so 5 and 5.0, or
 *   -0.0 and 0.0, differ. Used where a visible value must not silently
 *   change (consolidating output rows, no-op detection). identical implies
 *   canonical-equal under every collation, so value_hash serves both.
 */
#ifndef LDB_VALUE_VALUE_H
#define LDB_VALUE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "livedb.h"

struct strbuf;

#define VALUE_INLINE_MAX 14
#define VALUE_HEAP 0xFF
/* Longest TEXT/BLOB/ARRAY a value may hold (bytes or items). */
#define VALUE_MAX_LEN 0x7FFFFFFFu

/* Header of every heap object. */
typedef struct vobj {
    uint32_t refs;
    uint32_t len; /* bytes for TEXT/BLOB; items for ARRAY; fields for RECORD */
} vobj;

typedef union value {
    struct {
        uint8_t type;
        uint8_t ilen;
        char data[VALUE_INLINE_MAX];
    } s; /* inline TEXT/BLOB */
    struct {
        uint8_t type;
        uint8_t ilen;
        uint8_t pad[6];
        union {
            int64_t i; /* INTEGER; BOOLEAN as 0/1 */
            double r;  /* REAL */
            vobj *obj; /* heap TEXT/BLOB/ARRAY/RECORD */
        } u;
    } h;
} value;

_Static_assert(sizeof(value) == 16, "value must stay 16 bytes");

/* ---- constructors (never fail unless they allocate) ---------------- */

static inline value value_null(void)
{
    value v = { .h = { .type = LDB_NULL } };
    return v;
}
static inline value value_int(int64_t i)
{
    value v = { .h = { .type = LDB_INTEGER, .u.i = i } };
    return v;
}
static inline value value_real(double r)
{
    value v = { .h = { .type = LDB_REAL, .u.r = r } };
    return v;
}
static inline value value_bool(bool b)
{
    value v = { .h = { .type = LDB_BOOLEAN, .u.i = b ? 1 : 0 } };
    return v;
}

/* Copies n bytes. LDB_NOMEM (out untouched) or LDB_RANGE if n is too big. */
int value_text(value *out, const char *s, size_t n);
int value_blob(value *out, const void *p, size_t n);
/* Both: retain each item (the caller keeps its own references). An array
 * of more than VARRAY_LEAF_MAX items is built as a balanced tree, O(n). */
int value_array(value *out, const value *items, size_t n);
/* names[i] must be TEXT; fields keep the given order. */
int value_record(value *out, const value *names, const value *vals, size_t n);

/* ---- access ----------------------------------------------------------- */

static inline enum ldb_type value_type(const value *v)
{
    return (enum ldb_type)v->s.type;
}
static inline bool value_is_null(const value *v) { return v->s.type == LDB_NULL; }
static inline bool value_is_number(const value *v)
{
    return v->s.type == LDB_INTEGER || v->s.type == LDB_REAL;
}
static inline bool value_has_obj(const value *v)
{
    return v->s.type >= LDB_TEXT && v->s.ilen == VALUE_HEAP;
}
/* Bytes of a TEXT or BLOB (TEXT is NUL-terminated when on the heap only). */
static inline const char *value_bytes(const value *v, size_t *len)
{
    if (v->s.ilen != VALUE_HEAP) {
        *len = v->s.ilen;
        return v->s.data;
    }
    *len = v->h.u.obj->len;
    return (const char *)(v->h.u.obj + 1);
}
/* ARRAY and RECORD objects keep what a walk over their items would
 * compute, fixed when the object is built (it is immutable): the BINARY
 * hash and the bytes value_mem reports. A row holding an include's array
 * is hashed and measured on every change of the row; without the summary
 * each of those would cost the array's length (docs/VALUES.md). For an
 * ARRAY, hash is the unfinished polynomial hash of its items (array.c),
 * mem leaves out the 16 bytes of the value itself. */
typedef struct vsummary {
    uint64_t hash;
    uint64_t mem;
} vsummary;

/*
 * An ARRAY is a persistent sequence (src/value/array.c): a B-tree whose
 * leaves hold up to VARRAY_LEAF_MAX items and whose inner nodes hold
 * subtrees, each node an immutable reference-counted heap object that
 * versions of an array share. An array of at most VARRAY_LEAF_MAX items
 * is a single leaf: its items lie flat after the header. h.len counts the
 * items under a node, so the value's vobj len is the array's length.
 * Leaf:  varray, then value items[h.len].
 * Inner: varray, then uint64_t pow (B^h.len), then varray *kids[nkids].
 */
typedef struct varray {
    vobj h;
    uint16_t nkids;  /* 0: a leaf */
    uint16_t height; /* 0: a leaf; kids have height - 1 */
    uint32_t pad_;
    vsummary sum;
} varray;

#define VARRAY_LEAF_MAX 8
/* Inner levels an array of VALUE_MAX_LEN items can need, and then some. */
#define VARRAY_MAX_HEIGHT 32

static inline const varray *value_varray(const value *v)
{
    return (const varray *)v->h.u.obj;
}
/* Items of an ARRAY. */
static inline size_t value_len(const value *v) { return v->h.u.obj->len; }
const value *value_item_deep_(const varray *a, size_t i);
/* Item i < value_len of an ARRAY: O(1) for a single leaf, else O(log n). */
static inline const value *value_item(const value *v, size_t i)
{
    const varray *a = value_varray(v);
    return a->nkids ? value_item_deep_(a, i) : (const value *)(a + 1) + i;
}

/* The items of an ARRAY that is a single leaf (at most VARRAY_LEAF_MAX
 * items), contiguous; NULL for a longer one. */
static inline const value *value_leaf_items(const value *v)
{
    const varray *a = value_varray(v);
    return a->nkids ? NULL : (const value *)(a + 1);
}

/* Walks an ARRAY's items in order, O(1) amortized per item, without
 * recursion. The array must outlive the iterator and not change. */
typedef struct value_iter {
    const value *cur, *end; /* the rest of the current leaf */
    unsigned depth;         /* inner nodes on the path */
    const varray *path[VARRAY_MAX_HEIGHT];
    uint16_t pos[VARRAY_MAX_HEIGHT]; /* the kid taken in path[k] */
} value_iter;
void value_iter_init(value_iter *it, const value *v);
const value *value_iter_leaf_(value_iter *it);
/* The next item, or NULL after the last. */
static inline const value *value_iter_next(value_iter *it)
{
    return it->cur != it->end ? it->cur++ : value_iter_leaf_(it);
}

/* New versions of an ARRAY sharing all but O(log n) of its nodes: x
 * inserted before item i (i <= len), or item i (< len) removed. *out is
 * a new reference; arr is unchanged. LDB_NOMEM (nothing changed),
 * LDB_RANGE when the array would grow past VALUE_MAX_LEN bytes. */
int value_array_insert(value *out, const value *arr, size_t i, const value *x);
int value_array_remove(value *out, const value *arr, size_t i);
/* The same with item i (< len) replaced by x: one path copied. */
int value_array_set(value *out, const value *arr, size_t i, const value *x);
/* NULL if the tree of an ARRAY keeps its invariants (fill bounds, equal
 * depth, lengths and summaries of inner nodes), else what is wrong. O(n);
 * for tests. */
const char *value_array_check(const value *v);
/* For compare.c and value.c: an ARRAY's hash under coll (BINARY reads the
 * summary), and the end of a node's last reference. */
uint64_t value_array_hash_(const value *v, enum ldb_collation coll);
void value_array_free_(varray *a);

static inline const vsummary *value_summary(const value *v)
{
    if (v->s.type == LDB_ARRAY)
        return &value_varray(v)->sum;
    return (const vsummary *)((const value *)(v->h.u.obj + 1) + 2 * v->h.u.obj->len);
}
/* The hash of an ARRAY or RECORD computed from its items (value_hash
 * reads the summary instead when coll is BINARY). */
uint64_t value_hash_items(const value *v, enum ldb_collation coll);
/* Field i of a RECORD: name (TEXT) and value. */
static inline const value *value_field_name(const value *v, size_t i)
{
    return (const value *)(v->h.u.obj + 1) + 2 * i;
}
static inline const value *value_field(const value *v, size_t i)
{
    return (const value *)(v->h.u.obj + 1) + 2 * i + 1;
}
static inline size_t value_nfields(const value *v) { return v->h.u.obj->len; }

/* ---- ownership -------------------------------------------------------- */

void value_free_obj_(value *v);
static inline void value_retain(const value *v)
{
    if (value_has_obj(v))
        v->h.u.obj->refs++;
}
static inline void value_release(value *v)
{
    if (value_has_obj(v) && --v->h.u.obj->refs == 0)
        value_free_obj_(v);
    v->s.type = LDB_NULL;
    v->s.ilen = 0;
}
static inline value value_copy(const value *v)
{
    value_retain(v);
    return *v;
}
/* Memory held by a value: 16 + its heap object (counted whole even if
 * shared). */
size_t value_mem(const value *v);

/* ---- order, equality, hashing ------------------------------------------ */

/* Not a SQL collation: under it value_cmp is value_cmp_identity, value_eq
 * is value_identical, and value_hash hashes as under BINARY. The live
 * layer keys decorrelation's capture tuples with it: a subquery may show
 * the outer values it reads, so 5 and 5.0, -0.0 and 0.0, 'a' and 'A' must
 * be different tuples. */
#define VALUE_COLL_IDENTITY ((enum ldb_collation)3)

/* Total order (-1, 0, 1). See docs/VALUES.md. cmp == 0 iff value_eq. */
int value_cmp(const value *a, const value *b, enum ldb_collation coll);
/* Canonical equality under a collation. */
bool value_eq(const value *a, const value *b, enum ldb_collation coll);
/* Same type and same bytes (NaN payloads are all one NaN). */
bool value_identical(const value *a, const value *b);
/* A strict total order whose equality is value_identical: value_cmp
 * (BINARY), ties broken by identity (INTEGER before REAL, -0.0 before 0.0).
 * For choosing deterministic representatives among canonically equal
 * values, never by arrival order. */
int value_cmp_identity(const value *a, const value *b);
/* Hash consistent with value_eq under coll. */
uint64_t value_hash(const value *v, enum ldb_collation coll);
/* Exact comparison of an INTEGER with a REAL (NaN above everything). */
int value_cmp_int_real(int64_t i, double r);

/* ---- conversions -------------------------------------------------------- */

/*
 * Parses text that is exactly one numeric literal (optional surrounding
 * spaces, optional sign, digits, '.', exponent; also "inf"/"nan" are NOT
 * accepted). Integers that fit int64 become INTEGER, others REAL.
 * Returns false if the text is not such a literal.
 */
bool value_parse_number(const char *s, size_t n, value *out);

/* ---- serialization ------------------------------------------------------ */

/* Text form for the shell and tests: NULL, 12, 1.5, 1.0e+20, text as is,
 * X'0aff', true/false, nested values in JSON form. */
void value_format(struct strbuf *sb, const value *v);
/* JSON: arrays/records as arrays/objects, BLOB as "\x0aff", NaN and
 * infinities as the strings "NaN", "Infinity", "-Infinity". */
void value_format_json(struct strbuf *sb, const value *v);
/* value_format into buf (truncated to size, NUL-terminated) without
 * allocating for scalar types; returns the full length, like snprintf. */
size_t value_format_buf(const value *v, char *buf, size_t size);
/* The REAL text form alone (shortest round-trip digits). */
void value_format_real(struct strbuf *sb, double r);

#endif
