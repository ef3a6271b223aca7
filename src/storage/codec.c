/*
 * codec.c - the byte form of durable storage's operations (journal.h):
 * checksums, varints, values, table and index definitions, rows.
 *
 * Values: a type byte, then INTEGER as a zigzag varint, REAL as its 8
 * bytes, BOOLEAN as one byte, TEXT/BLOB as a length varint and the bytes,
 * ARRAY as a count and its items, RECORD as a count and name/value
 * pairs. Nesting is bounded on decode, so a damaged file cannot recurse
 * without limit. Decoding never trusts a length: it is checked against
 * the bytes left before anything is allocated.
 */
#include "storage/journal.h"

#include "base/mem.h"

#include <pthread.h>
#include <string.h>

/* ---- crc32c (Castagnoli), table-driven --------------------------------------- */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

/* Eight bytes per step (slicing by 8): the snapshot checksums every byte. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = buf;
    crc = ~crc;
    while (n >= 8) {
        uint64_t w = get_u64le(p) ^ crc;
        crc = crc_table[7][w & 0xFF] ^ crc_table[6][(w >> 8) & 0xFF] ^
              crc_table[5][(w >> 16) & 0xFF] ^ crc_table[4][(w >> 24) & 0xFF] ^
              crc_table[3][(w >> 32) & 0xFF] ^ crc_table[2][(w >> 40) & 0xFF] ^
              crc_table[1][(w >> 48) & 0xFF] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

void put_u32le(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

void put_u64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t get_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t get_u64le(const unsigned char *p)
{
    return (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32;
}

/* ---- encoding ------------------------------------------------------------------ */

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

void enc_varint(strbuf *sb, uint64_t v)
{
    unsigned char b[10];
    sb_put(sb, b, (size_t)(put_varint(b, v) - b));
}

void enc_str(strbuf *sb, const char *s)
{
    if (!s) {
        enc_varint(sb, 0);
        return;
    }
    size_t n = strlen(s);
    enc_varint(sb, n + 1);
    sb_put(sb, s, n);
}

/* Room one scalar value's encoding may take (0: an ARRAY or a RECORD). */
static size_t scalar_room(const value *v)
{
    size_t n;
    switch (value_type(v)) {
    case LDB_INTEGER: return 11;
    case LDB_REAL: return 9;
    case LDB_TEXT:
    case LDB_BLOB: value_bytes(v, &n); return 11 + n;
    case LDB_ARRAY:
    case LDB_RECORD: return 0;
    default: return 2;
    }
}

/* Writes scalar v at p, which has scalar_room(v) bytes; returns the end. */
static unsigned char *put_scalar(unsigned char *p, const value *v)
{
    enum ldb_type t = value_type(v);
    *p++ = (unsigned char)t;
    switch (t) {
    case LDB_INTEGER: {
        uint64_t u = (uint64_t)v->h.u.i;
        return put_varint(p, (u << 1) ^ (uint64_t)-(int64_t)(u >> 63));
    }
    case LDB_REAL: {
        uint64_t u;
        memcpy(&u, &v->h.u.r, 8);
        put_u64le(p, u);
        return p + 8;
    }
    case LDB_BOOLEAN: *p++ = (unsigned char)v->h.u.i; return p;
    case LDB_TEXT:
    case LDB_BLOB: {
        size_t n;
        const char *s = value_bytes(v, &n);
        p = put_varint(p, n);
        memcpy(p, s, n);
        return p + n;
    }
    default: return p;
    }
}

/* Scalars vals[0..n) in room reserved once; false when one is not a
 * scalar (nothing written). */
static bool put_scalars(strbuf *sb, const value *vals, uint32_t n)
{
    size_t room = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t r = scalar_room(&vals[i]);
        if (!r)
            return false;
        room += r;
    }
    unsigned char *p = (unsigned char *)sb_extend(sb, room);
    if (!p)
        return true; /* the error is the builder's */
    for (uint32_t i = 0; i < n; i++)
        p = put_scalar(p, &vals[i]);
    sb_truncate(sb, (size_t)((char *)p - sb->p));
    return true;
}

void enc_value(strbuf *sb, const value *v)
{
    if (put_scalars(sb, v, 1))
        return;
    enum ldb_type t = value_type(v);
    sb_putc(sb, (char)t);
    switch (t) {
    case LDB_ARRAY: {
        enc_varint(sb, value_len(v));
        value_iter it;
        value_iter_init(&it, v);
        for (const value *x; (x = value_iter_next(&it));)
            enc_value(sb, x);
        break;
    }
    case LDB_RECORD:
        enc_varint(sb, value_nfields(v));
        for (size_t i = 0; i < value_nfields(v); i++) {
            enc_value(sb, value_field_name(v, i));
            enc_value(sb, value_field(v, i));
        }
        break;
    default: break; /* NULL: the type byte alone */
    }
}

/* Flags of a table definition. */
enum { TF_READONLY = 1, TF_KEY_NULLS = 2, TF_KEY_INDEX = 4, TF_ROWID = 8 };
/* Flags of a column. */
enum { CF_NOT_NULL = 1, CF_HIDDEN = 2, CF_DEFAULT = 4 };

static bool hidden_rowid(const struct table *t)
{
    return t->schema.pk[0] >= t->schema.nvisible;
}

void enc_create_table(strbuf *sb, const struct table *t)
{
    const struct schema *sc = &t->schema;
    sb_putc(sb, OP_CREATE_TABLE);
    enc_str(sb, t->name);
    enc_str(sb, t->sql);
    bool key_index = false;
    for (size_t i = 0; i < t->indexes.len; i++)
        key_index |= t->indexes.data[i]->automatic && !t->indexes.data[i]->unique;
    /* read-only is kept for views' tables; a source's hold on a table is
     * the program's to make again after a reopen */
    enc_varint(sb, (table_is_view_store(t) ? TF_READONLY : 0) |
                       (t->key_nulls ? TF_KEY_NULLS : 0) | (key_index ? TF_KEY_INDEX : 0) |
                       (hidden_rowid(t) ? TF_ROWID : 0));
    enc_varint(sb, sc->nvisible);
    for (uint32_t i = 0; i < sc->nvisible; i++) {
        const struct column *c = &sc->cols[i];
        enc_str(sb, c->name);
        sb_putc(sb, (char)c->type);
        sb_putc(sb, (char)c->coll);
        sb_putc(sb, (char)((c->not_null ? CF_NOT_NULL : 0) | (c->hidden ? CF_HIDDEN : 0) |
                           (c->has_default ? CF_DEFAULT : 0)));
        if (c->has_default)
            enc_value(sb, &c->dflt);
    }
    uint32_t npk = hidden_rowid(t) ? 0 : sc->npk;
    enc_varint(sb, npk);
    for (uint32_t i = 0; i < npk; i++)
        enc_varint(sb, sc->pk[i]);
    size_t nuniques = 0;
    for (size_t i = 0; i < t->indexes.len; i++)
        nuniques += t->indexes.data[i]->automatic && t->indexes.data[i]->unique;
    enc_varint(sb, nuniques);
    for (size_t i = 0; i < t->indexes.len; i++) {
        const struct table_index *ix = t->indexes.data[i];
        if (!ix->automatic || !ix->unique)
            continue;
        enc_varint(sb, ix->nparts);
        for (uint32_t k = 0; k < ix->nparts; k++)
            enc_varint(sb, ix->parts[k].col);
    }
}

void enc_create_index(strbuf *sb, const struct table_index *ix)
{
    sb_putc(sb, OP_CREATE_INDEX);
    enc_str(sb, ix->table->name);
    enc_str(sb, ix->name);
    enc_str(sb, ix->sql);
    sb_putc(sb, (char)ix->kind);
    sb_putc(sb, (char)ix->unique);
    enc_varint(sb, ix->nparts);
    for (uint32_t k = 0; k < ix->nparts; k++) {
        const struct key_part *p = &ix->parts[k];
        enc_varint(sb, p->col);
        sb_putc(sb, (char)(p->desc | p->nulls_first << 1));
        sb_putc(sb, (char)p->coll);
    }
}

void enc_table(strbuf *sb, const struct table *t, const struct table **cur)
{
    if (*cur == t)
        return;
    sb_putc(sb, OP_TABLE);
    enc_str(sb, t->name);
    *cur = t;
}

static void enc_key(strbuf *sb, const struct table *t, const row *r)
{
    for (uint32_t i = 0; i < t->schema.npk; i++)
        enc_value(sb, &r->cols[t->schema.pk[i]]);
}

void enc_row(strbuf *sb, enum journal_op op, const struct table *t, const row *old,
             const row *new_row)
{
    sb_putc(sb, (char)op);
    if (old)
        enc_key(sb, t, old);
    if (new_row && !put_scalars(sb, new_row->cols, new_row->ncols))
        for (uint32_t i = 0; i < new_row->ncols; i++)
            enc_value(sb, &new_row->cols[i]);
}

void enc_rowid(strbuf *sb, const struct table *t)
{
    value v = value_int(t->rowid_max);
    sb_putc(sb, OP_ROWID);
    enc_value(sb, &v);
}

/* ---- decoding ------------------------------------------------------------------- */

uint8_t dec_byte(struct dec *d)
{
    if (d->p >= d->end) {
        d->bad = true;
        return 0;
    }
    return *d->p++;
}

uint64_t dec_varint(struct dec *d)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b = dec_byte(d);
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return v;
    }
    d->bad = true;
    return 0;
}

/* A length that the bytes left can hold (items take at least one byte). */
static size_t dec_len(struct dec *d)
{
    uint64_t n = dec_varint(d);
    if (n > (uint64_t)(d->end - d->p) || n > VALUE_MAX_LEN) {
        d->bad = true;
        return 0;
    }
    return (size_t)n;
}

const char *dec_str(struct dec *d, size_t *len)
{
    uint64_t n = dec_varint(d);
    *len = 0;
    if (n == 0)
        return NULL;
    if (n - 1 > (uint64_t)(d->end - d->p)) {
        d->bad = true;
        return NULL;
    }
    const char *s = (const char *)d->p;
    d->p += n - 1;
    *len = (size_t)(n - 1);
    return s;
}

#define DEC_MAX_DEPTH 64

static int dec_value_at(struct dec *d, value *out, int depth);

static int dec_items(struct dec *d, value *out, bool record, int depth)
{
    size_t n = dec_len(d), per = record ? 2 : 1;
    value *items = mem_calloc(n * per + 1, sizeof *items);
    if (!items)
        return LDB_NOMEM;
    int rc = LDB_OK;
    size_t got = 0;
    for (; got < n * per && rc == LDB_OK; got++)
        rc = dec_value_at(d, &items[got], depth + 1);
    if (rc == LDB_OK && record) {
        value *names = mem_alloc((n + 1) * sizeof *names), *vals = mem_alloc((n + 1) * sizeof *vals);
        for (size_t i = 0; names && vals && i < n; i++) {
            names[i] = items[2 * i];
            vals[i] = items[2 * i + 1];
            if (value_type(&names[i]) != LDB_TEXT)
                d->bad = true;
        }
        rc = !names || !vals ? LDB_NOMEM : d->bad ? LDB_CORRUPT : value_record(out, names, vals, n);
        mem_free(names);
        mem_free(vals);
    } else if (rc == LDB_OK) {
        rc = value_array(out, items, n);
    }
    for (size_t i = 0; i < got; i++)
        value_release(&items[i]);
    mem_free(items);
    return rc;
}

static int dec_value_at(struct dec *d, value *out, int depth)
{
    *out = value_null();
    uint8_t t = dec_byte(d);
    switch (t) {
    case LDB_NULL: break;
    case LDB_INTEGER: {
        uint64_t u = dec_varint(d);
        *out = value_int((int64_t)((u >> 1) ^ (uint64_t)-(int64_t)(u & 1)));
        break;
    }
    case LDB_REAL: {
        if (d->end - d->p < 8) {
            d->bad = true;
            break;
        }
        uint64_t u = get_u64le(d->p);
        double r;
        memcpy(&r, &u, 8);
        d->p += 8;
        *out = value_real(r);
        break;
    }
    case LDB_BOOLEAN: {
        uint8_t b = dec_byte(d);
        d->bad |= b > 1;
        *out = value_bool(b);
        break;
    }
    case LDB_TEXT:
    case LDB_BLOB: {
        size_t n = dec_len(d);
        if (d->bad)
            break;
        int rc = t == LDB_TEXT ? value_text(out, (const char *)d->p, n)
                               : value_blob(out, d->p, n);
        d->p += n;
        if (rc)
            return rc == LDB_NOMEM ? rc : LDB_CORRUPT;
        break;
    }
    case LDB_ARRAY:
    case LDB_RECORD:
        if (depth >= DEC_MAX_DEPTH) {
            d->bad = true;
            break;
        }
        return d->bad ? LDB_CORRUPT : dec_items(d, out, t == LDB_RECORD, depth);
    default: d->bad = true;
    }
    return d->bad ? LDB_CORRUPT : LDB_OK;
}

int dec_value(struct dec *d, value *out)
{
    int rc = dec_value_at(d, out, 0);
    if (rc)
        value_release(out);
    return rc;
}
