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
/* Both: retain each item (the caller keeps its own references). */
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
/* Items of an ARRAY. */
static inline const value *value_items(const value *v, size_t *n)
{
    *n = v->h.u.obj->len;
    return (const value *)(v->h.u.obj + 1);
}
/* ARRAY and RECORD objects end with what a walk over their items would
 * compute, fixed when the object is built (it is immutable): the BINARY
 * hash and the bytes value_mem reports. A row holding an include's array
 * is hashed and measured on every change of the row; without the summary
 * each of those would cost the array's length (docs/VALUES.md). */
typedef struct vsummary {
    uint64_t hash;
    uint64_t mem;
} vsummary;
static inline const vsummary *value_summary(const value *v)
{
    size_t n = v->h.u.obj->len * (v->s.type == LDB_RECORD ? 2u : 1u);
    return (const vsummary *)((const value *)(v->h.u.obj + 1) + n);
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
