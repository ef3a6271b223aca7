/*
 * value.c - construction, release and memory accounting of values.
 *
 * Heap objects: a vobj header followed by the payload (bytes plus a NUL for
 * TEXT/BLOB, name/value pairs for RECORD then a vsummary of them; ARRAY
 * objects are array.c's nodes). An object is immutable once built; refs
 * counts the values pointing at it.
 */
#include "value/value.h"

#include "base/mem.h"

#include <string.h>

static vobj *obj_new(size_t payload, uint32_t len)
{
    vobj *o = mem_alloc(sizeof(vobj) + payload);
    if (!o)
        return NULL;
    o->refs = 1;
    o->len = len;
    return o;
}

static int bytes_value(value *out, enum ldb_type type, const void *p, size_t n)
{
    if (n > VALUE_MAX_LEN)
        return LDB_RANGE;
    value v;
    memset(&v, 0, sizeof v);
    v.s.type = (uint8_t)type;
    if (n <= VALUE_INLINE_MAX) {
        v.s.ilen = (uint8_t)n;
        if (n)
            memcpy(v.s.data, p, n);
        *out = v;
        return LDB_OK;
    }
    vobj *o = obj_new(n + 1, (uint32_t)n);
    if (!o)
        return LDB_NOMEM;
    memcpy(o + 1, p, n);
    ((char *)(o + 1))[n] = '\0';
    v.s.ilen = VALUE_HEAP;
    v.h.u.obj = o;
    *out = v;
    return LDB_OK;
}

int value_text(value *out, const char *s, size_t n)
{
    return bytes_value(out, LDB_TEXT, s, n);
}

int value_blob(value *out, const void *p, size_t n)
{
    return bytes_value(out, LDB_BLOB, p, n);
}

static value obj_value(enum ldb_type type, vobj *o)
{
    value v;
    memset(&v, 0, sizeof v);
    v.s.type = (uint8_t)type;
    v.s.ilen = VALUE_HEAP;
    v.h.u.obj = o;
    return v;
}

/* Fills the summary of a just-built RECORD v whose n item slots
 * are items: each item's own summary makes this linear in n, not in the
 * nested size. */
static void summarize(value *v, const value *items, size_t n)
{
    vsummary *sum = (vsummary *)value_summary(v);
    /* items shared by reference count once per reference, so a DAG of
     * depth 64 would wrap: saturate */
    uint64_t mem = sizeof(value) + sizeof(vobj) + sizeof(vsummary);
    for (size_t i = 0; i < n; i++) {
        uint64_t m = value_mem(&items[i]);
        mem = m > UINT64_MAX - mem ? UINT64_MAX : mem + m;
    }
    sum->mem = mem;
    sum->hash = value_hash_items(v, LDB_COLL_BINARY);
}

int value_record(value *out, const value *names, const value *vals, size_t n)
{
    if (n > VALUE_MAX_LEN / (2 * sizeof(value)))
        return LDB_RANGE;
    for (size_t i = 0; i < n; i++)
        if (value_type(&names[i]) != LDB_TEXT)
            return LDB_TYPE;
    vobj *o = obj_new(2 * n * sizeof(value) + sizeof(vsummary), (uint32_t)n);
    if (!o)
        return LDB_NOMEM;
    value *dst = (value *)(o + 1);
    for (size_t i = 0; i < n; i++) {
        dst[2 * i] = value_copy(&names[i]);
        dst[2 * i + 1] = value_copy(&vals[i]);
    }
    *out = obj_value(LDB_RECORD, o);
    summarize(out, dst, 2 * n);
    return LDB_OK;
}

void value_free_obj_(value *v)
{
    vobj *o = v->h.u.obj;
    if (v->s.type == LDB_ARRAY) {
        value_array_free_((varray *)o);
        return;
    }
    size_t n = v->s.type == LDB_RECORD ? 2 * (size_t)o->len : 0;
    value *items = (value *)(o + 1);
    for (size_t i = 0; i < n; i++)
        value_release(&items[i]);
    mem_free(o);
}

size_t value_mem(const value *v)
{
    size_t n = sizeof(value);
    if (!value_has_obj(v))
        return n;
    const vobj *o = v->h.u.obj;
    switch (value_type(v)) {
    case LDB_TEXT:
    case LDB_BLOB:
        return n + sizeof(vobj) + o->len + 1;
    case LDB_ARRAY: {
        uint64_t m = value_summary(v)->mem; /* saturated: stays so */
        return m > SIZE_MAX - n ? SIZE_MAX : (size_t)m + n;
    }
    case LDB_RECORD:
        return (size_t)value_summary(v)->mem;
    default:
        return n;
    }
}
