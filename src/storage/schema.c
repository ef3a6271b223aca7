/*
 * schema.c - building owned schemas from table definitions, and the type
 * affinity rule (column_coerce). The rule, in short: keep a value whose
 * type the column accepts, convert when the conversion loses nothing and
 * has one reading, reject otherwise. docs/STORAGE.md has the table.
 */
#include "storage/schema.h"

#include "base/mem.h"
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TWO63 9223372036854775808.0

const char *col_type_name(enum col_type t)
{
    switch (t) {
    case COL_ANY: return "ANY";
    case COL_INTEGER: return "INTEGER";
    case COL_REAL: return "REAL";
    case COL_TEXT: return "TEXT";
    case COL_BLOB: return "BLOB";
    case COL_BOOLEAN: return "BOOLEAN";
    case COL_NUMERIC: return "NUMERIC";
    }
    return "?";
}

static unsigned char fold(unsigned char c)
{
    return (c >= 'a' && c <= 'z') ? (unsigned char)(c - 32) : c;
}

/* Case-insensitive search for the upper-case word w in d[0..n). */
static bool decl_has(const char *d, size_t n, const char *w)
{
    size_t k = strlen(w);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && fold((unsigned char)d[i + j]) == (unsigned char)w[j])
            j++;
        if (j == k)
            return true;
    }
    return false;
}

enum col_type col_type_from_decl(const char *decl, size_t n)
{
    while (n > 0 && (*decl == ' ' || *decl == '\t')) {
        decl++;
        n--;
    }
    if (n == 0)
        return COL_ANY;
    if (decl_has(decl, n, "INT"))
        return COL_INTEGER;
    if (decl_has(decl, n, "CHAR") || decl_has(decl, n, "CLOB") ||
        decl_has(decl, n, "TEXT"))
        return COL_TEXT;
    if (decl_has(decl, n, "BLOB"))
        return COL_BLOB;
    if (decl_has(decl, n, "REAL") || decl_has(decl, n, "FLOA") ||
        decl_has(decl, n, "DOUB"))
        return COL_REAL;
    if (decl_has(decl, n, "BOOL"))
        return COL_BOOLEAN;
    if (n == 3 && decl_has(decl, n, "ANY"))
        return COL_ANY;
    return COL_NUMERIC;
}

bool name_eq(const char *a, const char *b)
{
    for (;; a++, b++) {
        if (fold((unsigned char)*a) != fold((unsigned char)*b))
            return false;
        if (!*a)
            return true;
    }
}

int schema_column(const struct schema *sc, const char *name)
{
    for (uint32_t i = 0; i < sc->ncols; i++)
        if (name_eq(sc->cols[i].name, name))
            return (int)i;
    return -1;
}

/* ---- affinity ------------------------------------------------------------ */

/* An exactly integral REAL inside the INTEGER range (-0.0 gives 0). */
static bool real_to_int(double r, int64_t *out)
{
    if (!(r >= -TWO63 && r < TWO63))
        return false; /* also NaN */
    int64_t i = (int64_t)r;
    if ((double)i != r)
        return false;
    *out = i;
    return true;
}

/* TEXT that is exactly one numeric literal, as INTEGER or REAL. */
static bool text_number(const value *v, value *num)
{
    size_t n;
    const char *p = value_bytes(v, &n);
    return value_parse_number(p, n, num);
}

static int to_integer(const value *in, value *out)
{
    int64_t i;
    value num;
    switch (value_type(in)) {
    case LDB_INTEGER:
        *out = *in;
        return LDB_OK;
    case LDB_REAL:
        if (!real_to_int(in->h.u.r, &i))
            return LDB_TYPE;
        *out = value_int(i);
        return LDB_OK;
    case LDB_BOOLEAN:
        *out = value_int(in->h.u.i);
        return LDB_OK;
    case LDB_TEXT:
        if (!text_number(in, &num))
            return LDB_TYPE;
        if (value_type(&num) == LDB_INTEGER) {
            *out = num;
            return LDB_OK;
        }
        return to_integer(&num, out);
    default:
        return LDB_TYPE;
    }
}

static int to_real(const value *in, value *out)
{
    value num;
    switch (value_type(in)) {
    case LDB_INTEGER:
        *out = value_real((double)in->h.u.i);
        return LDB_OK;
    case LDB_REAL:
        *out = *in;
        return LDB_OK;
    case LDB_TEXT:
        if (!text_number(in, &num))
            return LDB_TYPE;
        return to_real(&num, out);
    default:
        return LDB_TYPE;
    }
}

/* Numbers become their value_format text: 12, 1.5, 1.0e+20. */
static int number_to_text(const value *in, value *out)
{
    strbuf sb = STRBUF_INIT;
    value_format(&sb, in);
    int rc = sb_error(&sb);
    if (rc == LDB_OK)
        rc = value_text(out, sb_str(&sb), sb.len);
    sb_free(&sb);
    return rc;
}

static int to_text(const value *in, value *out)
{
    switch (value_type(in)) {
    case LDB_TEXT:
        *out = value_copy(in);
        return LDB_OK;
    case LDB_INTEGER:
    case LDB_REAL:
        return number_to_text(in, out);
    default:
        return LDB_TYPE;
    }
}

static int to_boolean(const value *in, value *out)
{
    if (value_type(in) == LDB_BOOLEAN) {
        *out = *in;
        return LDB_OK;
    }
    if (value_type(in) == LDB_INTEGER && (in->h.u.i == 0 || in->h.u.i == 1)) {
        *out = value_bool(in->h.u.i == 1);
        return LDB_OK;
    }
    return LDB_TYPE;
}

static int to_numeric(const value *in, value *out)
{
    switch (value_type(in)) {
    case LDB_INTEGER:
    case LDB_REAL:
        *out = *in;
        return LDB_OK;
    case LDB_BOOLEAN:
        *out = value_int(in->h.u.i);
        return LDB_OK;
    case LDB_TEXT:
        return text_number(in, out) ? LDB_OK : LDB_TYPE;
    default:
        return LDB_TYPE;
    }
}

int column_coerce(const struct column *col, const value *in, value *out)
{
    *out = value_null();
    if (value_is_null(in))
        return LDB_OK;
    int rc = LDB_TYPE;
    switch (col->type) {
    case COL_ANY:
        *out = value_copy(in);
        return LDB_OK;
    case COL_INTEGER: rc = to_integer(in, out); break;
    case COL_REAL: rc = to_real(in, out); break;
    case COL_TEXT: rc = to_text(in, out); break;
    case COL_BOOLEAN: rc = to_boolean(in, out); break;
    case COL_NUMERIC: rc = to_numeric(in, out); break;
    case COL_BLOB:
        if (value_type(in) == LDB_BLOB) {
            *out = value_copy(in);
            rc = LDB_OK;
        }
        break;
    }
    if (rc != LDB_OK)
        *out = value_null();
    return rc;
}

static const char *type_word(enum ldb_type t)
{
    static const char *const names[] = { "NULL", "BOOLEAN", "INTEGER", "REAL",
                                         "TEXT", "BLOB", "ARRAY", "RECORD" };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

void format_value_for_error(const value *v, char *buf, size_t n)
{
    enum { SHOW = 40 };
    strbuf sb = STRBUF_INIT;
    value_format(&sb, v);
    const char *text = sb_error(&sb) ? "?" : sb_str(&sb);
    size_t len = sb_error(&sb) ? 1 : sb.len;
    const char *quote = value_type(v) == LDB_TEXT ? "'" : "";
    int show = len > SHOW ? SHOW : (int)len;
    snprintf(buf, n, "%s %s%.*s%s%s", type_word(value_type(v)), quote, show,
             text, len > SHOW ? "..." : "", quote);
    sb_free(&sb);
}

/* ---- building -------------------------------------------------------------- */

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

void schema_free(struct schema *sc)
{
    for (uint32_t i = 0; i < sc->ncols; i++) {
        mem_free(sc->cols[i].name);
        value_release(&sc->cols[i].dflt);
    }
    mem_free(sc->cols);
    mem_free(sc->pk);
    memset(sc, 0, sizeof *sc);
}

static int check_columns(const struct table_def *def, char *err, size_t errlen)
{
    if (!def->name || def->ncols == 0 || !def->cols)
        return fail(err, errlen, LDB_MISUSE, "table definition without name or columns");
    for (uint32_t i = 0; i < def->ncols; i++) {
        if (!def->cols[i].name)
            return fail(err, errlen, LDB_MISUSE, "column %u of %s has no name", i, def->name);
        for (uint32_t j = 0; j < i; j++)
            if (name_eq(def->cols[i].name, def->cols[j].name))
                return fail(err, errlen, LDB_ERROR, "duplicate column name: %s",
                            def->cols[i].name);
    }
    if (def->npk > SCHEMA_MAX_KEY)
        return fail(err, errlen, LDB_ERROR, "too many primary key columns in %s (at most %d)",
                    def->name, SCHEMA_MAX_KEY);
    for (uint32_t i = 0; i < def->npk; i++) {
        if (def->pk[i] >= def->ncols)
            return fail(err, errlen, LDB_MISUSE, "primary key column %u out of range in %s",
                        def->pk[i], def->name);
        for (uint32_t j = 0; j < i; j++)
            if (def->pk[i] == def->pk[j])
                return fail(err, errlen, LDB_ERROR, "column %s appears twice in the primary key of %s",
                            def->cols[def->pk[i]].name, def->name);
    }
    return LDB_OK;
}

/* The hidden key takes the first of SQLite's rowid names not declared. */
static const char *hidden_rowid_name(const struct table_def *def)
{
    static const char *const names[] = { "rowid", "_rowid_", "oid" };
    for (size_t k = 0; k < 3; k++) {
        uint32_t i = 0;
        while (i < def->ncols && !name_eq(def->cols[i].name, names[k]))
            i++;
        if (i == def->ncols)
            return names[k];
    }
    return "_livedb_rowid_";
}

static int copy_column(struct column *c, const struct column_def *d,
                       const char *table, char *err, size_t errlen)
{
    c->name = mem_strndup(d->name, strlen(d->name));
    if (!c->name)
        return LDB_NOMEM;
    c->type = d->type;
    c->coll = d->coll;
    c->not_null = d->not_null;
    c->has_default = d->has_default;
    if (!d->has_default)
        return LDB_OK;
    int rc = column_coerce(c, &d->dflt, &c->dflt);
    if (rc == LDB_TYPE) {
        char desc[96];
        format_value_for_error(&d->dflt, desc, sizeof desc);
        return fail(err, errlen, LDB_ERROR, "default of column %s.%s: cannot store %s in %s column",
                    table, d->name, desc, col_type_name(d->type));
    }
    return rc;
}

static int build_key(struct schema *sc, const struct table_def *def)
{
    sc->npk = def->npk ? def->npk : 1;
    sc->pk = mem_alloc(sc->npk * sizeof *sc->pk);
    if (!sc->pk)
        return LDB_NOMEM;
    if (def->npk == 0) {
        sc->pk[0] = def->ncols;
        sc->rowid_auto = true;
        return LDB_OK;
    }
    memcpy(sc->pk, def->pk, def->npk * sizeof *sc->pk);
    sc->rowid_auto = def->npk == 1 && def->cols[def->pk[0]].type == COL_INTEGER;
    /* An automatic key is filled before NOT NULL is checked. */
    for (uint32_t i = 0; i < def->npk; i++)
        sc->cols[def->pk[i]].not_null = true;
    return LDB_OK;
}

int schema_build(struct schema *sc, const struct table_def *def, char *err,
                 size_t errlen)
{
    memset(sc, 0, sizeof *sc);
    int rc = check_columns(def, err, errlen);
    if (rc)
        return rc;
    uint32_t n = def->ncols + (def->npk == 0);
    sc->cols = mem_calloc(n, sizeof *sc->cols);
    if (!sc->cols)
        return LDB_NOMEM;
    sc->nvisible = def->ncols;
    for (uint32_t i = 0; i < def->ncols && rc == LDB_OK; i++, sc->ncols++)
        rc = copy_column(&sc->cols[i], &def->cols[i], def->name, err, errlen);
    if (rc == LDB_OK && def->npk == 0) {
        struct column *c = &sc->cols[sc->ncols];
        const char *name = hidden_rowid_name(def);
        c->name = mem_strndup(name, strlen(name));
        rc = c->name ? LDB_OK : LDB_NOMEM;
        c->type = COL_INTEGER;
        c->hidden = true;
        c->not_null = true;
        sc->ncols++;
    }
    if (rc == LDB_OK)
        rc = build_key(sc, def);
    if (rc != LDB_OK)
        schema_free(sc);
    return rc;
}

size_t schema_bytes(const struct schema *sc)
{
    size_t n = sc->ncols * sizeof(struct column) + sc->npk * sizeof(uint32_t);
    for (uint32_t i = 0; i < sc->ncols; i++)
        n += strlen(sc->cols[i].name) + 1 + value_mem(&sc->cols[i].dflt) - sizeof(value);
    return n;
}
