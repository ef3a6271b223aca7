/*
 * func_text.c - the text and blob scalar functions (SQLite's semantics):
 * lower, upper, length, octet_length, substr, trim family, replace,
 * instr, hex, quote, printf/format, char, unicode, zeroblob, like, glob,
 * concat, concat_ws.
 *
 * Text positions count UTF-8 characters, blob positions bytes. A non-text
 * argument is read in its text form (sqlv_bytes). Results longer than
 * VALUE_MAX_LEN fail with "string or blob too big" rather than allocate.
 */
#include "sql/func.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/sqlvalue.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define NULL_IF_ANY_NULL(a, n)                                                \
    do {                                                                      \
        for (uint32_t i_ = 0; i_ < (n); i_++)                                 \
            if (value_is_null(&(a)[i_])) {                                    \
                *out = value_null();                                          \
                return LDB_OK;                                                \
            }                                                                 \
    } while (0)

/* Finishes a strbuf into a TEXT (or BLOB) result. */
static int sb_result(struct eval_ctx *cx, strbuf *sb, bool blob, value *out)
{
    int rc = sb_error(sb);
    if (rc == LDB_OK && sb->len > VALUE_MAX_LEN)
        rc = sqlv_error(cx->err, LDB_ERROR, "string or blob too big");
    if (rc == LDB_OK)
        rc = blob ? value_blob(out, sb_str(sb), sb->len) : value_text(out, sb_str(sb), sb->len);
    sb_free(sb);
    return rc;
}

static size_t char_count(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* Byte offset of character number k (0-based) of s, or n. */
static size_t char_offset(const char *s, size_t n, int64_t k)
{
    size_t i = 0;
    while (i < n && k > 0) {
        i += utf8_char_len(s + i, n - i);
        k--;
    }
    return i;
}

/* ---- case, length ------------------------------------------------------------------ */

static int change_case(struct eval_ctx *cx, const value *a, value *out, bool upper)
{
    NULL_IF_ANY_NULL(a, 1);
    char buf[64];
    size_t n;
    const char *s = sqlv_bytes(&a[0], buf, &n);
    strbuf sb = STRBUF_INIT;
    sb_put(&sb, s, n);
    for (size_t i = 0; i < sb.len && !sb_error(&sb); i++) {
        unsigned char c = (unsigned char)sb.p[i];
        if (c < 0x80)
            sb.p[i] = (char)(upper ? toupper(c) : tolower(c));
    }
    return sb_result(cx, &sb, false, out);
}

static int fn_lower(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return change_case(cx, a, out, false);
}

static int fn_upper(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return change_case(cx, a, out, true);
}

static int fn_length(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, 1);
    char buf[64];
    size_t len;
    const char *s = sqlv_bytes(&a[0], buf, &len);
    *out = value_int((int64_t)(value_type(&a[0]) == LDB_BLOB ? len : char_count(s, len)));
    return LDB_OK;
}

static int fn_octet_length(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, 1);
    char buf[64];
    size_t len;
    sqlv_bytes(&a[0], buf, &len);
    *out = value_int((int64_t)len);
    return LDB_OK;
}

/* ---- substr ---------------------------------------------------------------------------- */

/* SQLite's substr arithmetic: start p1 (1-based, negative from the end,
 * 0 before the first), length p2 (negative: the characters before). */
static void substr_range(int64_t p1, int64_t p2, bool has_len, int64_t len, int64_t *from,
                         int64_t *count)
{
    bool neg = false;
    if (!has_len)
        p2 = INT64_MAX / 4;
    else if (p2 < 0) {
        neg = true;
        p2 = p2 == INT64_MIN ? INT64_MAX / 4 : -p2;
    }
    if (p1 < 0) {
        p1 = p1 < -(INT64_MAX / 4) ? -(INT64_MAX / 4) : p1;
        p1 += len;
        if (p1 < 0) {
            p2 += p1;
            if (p2 < 0)
                p2 = 0;
            p1 = 0;
        }
    } else if (p1 > 0) {
        p1--;
    } else if (p2 > 0) {
        p2--;
    }
    if (neg) {
        p1 -= p2;
        if (p1 < 0) {
            p2 += p1;
            p1 = 0;
        }
    }
    *from = p1;
    *count = p2;
}

static int fn_substr(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, n);
    int64_t p1, p2 = 0;
    sqlv_int64(&a[1], &p1);
    if (n == 3)
        sqlv_int64(&a[2], &p2);
    char buf[64];
    size_t len;
    const char *s = sqlv_bytes(&a[0], buf, &len);
    bool blob = value_type(&a[0]) == LDB_BLOB;
    int64_t total = (int64_t)(blob ? len : char_count(s, len)), from, count;
    substr_range(p1, p2, n == 3, total, &from, &count);
    if (from > total)
        from = total;
    if (count > total - from)
        count = total - from;
    size_t b0 = blob ? (size_t)from : char_offset(s, len, from);
    size_t b1 = blob ? (size_t)(from + count) : b0 + char_offset(s + b0, len - b0, count);
    return blob ? value_blob(out, s + b0, b1 - b0) : value_text(out, s + b0, b1 - b0);
}

/* ---- trim, replace, instr ------------------------------------------------------------------ */

static bool in_set(const char *set, size_t nset, const char *c, size_t nc)
{
    for (size_t i = 0; i < nset;) {
        size_t l = utf8_char_len(set + i, nset - i);
        if (l == nc && memcmp(set + i, c, nc) == 0)
            return true;
        i += l;
    }
    return false;
}

/* Length of the last character of s[0..n). */
static size_t last_char_len(const char *s, size_t n)
{
    size_t k = 1;
    while (k < n && k < 4 && ((unsigned char)s[n - k] & 0xC0) == 0x80)
        k++;
    return utf8_char_len(s + n - k, k) == k ? k : 1;
}

static int trim(struct eval_ctx *cx, const value *a, uint32_t n, value *out, bool left,
                bool right)
{
    NULL_IF_ANY_NULL(a, n);
    char buf[64], sbuf[64];
    size_t len, nset = 1;
    const char *s = sqlv_bytes(&a[0], buf, &len), *set = " ";
    if (n == 2)
        set = sqlv_bytes(&a[1], sbuf, &nset);
    size_t b = 0, e = len;
    while (left && b < e) {
        size_t l = utf8_char_len(s + b, e - b);
        if (!in_set(set, nset, s + b, l))
            break;
        b += l;
    }
    while (right && e > b) {
        size_t l = last_char_len(s + b, e - b);
        if (!in_set(set, nset, s + e - l, l))
            break;
        e -= l;
    }
    return value_text(out, s + b, e - b);
}

static int fn_trim(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return trim(cx, a, n, out, true, true);
}

static int fn_ltrim(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return trim(cx, a, n, out, true, false);
}

static int fn_rtrim(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return trim(cx, a, n, out, false, true);
}

static int fn_replace(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, 3);
    char b0[64], b1[64], b2[64];
    size_t ns, nf, nt;
    const char *s = sqlv_bytes(&a[0], b0, &ns), *f = sqlv_bytes(&a[1], b1, &nf),
               *t = sqlv_bytes(&a[2], b2, &nt);
    if (nf == 0)
        return sqlv_to_text(&a[0], out);
    strbuf sb = STRBUF_INIT;
    size_t i = 0;
    while (i < ns && !sb_error(&sb) && sb.len <= VALUE_MAX_LEN) {
        if (i + nf <= ns && memcmp(s + i, f, nf) == 0) {
            sb_put(&sb, t, nt);
            i += nf;
        } else {
            sb_putc(&sb, s[i++]);
        }
    }
    return sb_result(cx, &sb, false, out);
}

static int fn_instr(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, 2);
    char b0[64], b1[64];
    size_t ns, nf;
    const char *s = sqlv_bytes(&a[0], b0, &ns), *f = sqlv_bytes(&a[1], b1, &nf);
    bool blob = value_type(&a[0]) == LDB_BLOB && value_type(&a[1]) == LDB_BLOB;
    int64_t pos = 0;
    for (size_t i = 0; i + nf <= ns; i += blob ? 1 : utf8_char_len(s + i, ns - i)) {
        if (memcmp(s + i, f, nf) == 0) {
            pos = (int64_t)(blob ? i : char_count(s, i)) + 1;
            break;
        }
    }
    *out = value_int(pos);
    return LDB_OK;
}

/* ---- hex, quote, char, unicode, zeroblob ------------------------------------------------------ */

static void put_hex(strbuf *sb, const char *s, size_t n)
{
    static const char digits[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        sb_putc(sb, digits[c >> 4]);
        sb_putc(sb, digits[c & 15]);
    }
}

static int fn_hex(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    char buf[64];
    size_t len = 0;
    const char *s = value_is_null(&a[0]) ? "" : sqlv_bytes(&a[0], buf, &len);
    strbuf sb = STRBUF_INIT;
    put_hex(&sb, s, len);
    return sb_result(cx, &sb, false, out);
}

/* s with every q doubled, inside q's when enclose. */
static void put_escaped(strbuf *sb, const char *s, size_t n, char q, bool enclose)
{
    if (enclose)
        sb_putc(sb, q);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == q)
            sb_putc(sb, q);
        sb_putc(sb, s[i]);
    }
    if (enclose)
        sb_putc(sb, q);
}

static void put_sql_literal(strbuf *sb, const value *v)
{
    size_t n;
    const char *s;
    switch (value_type(v)) {
    case LDB_NULL: sb_puts(sb, "NULL"); break;
    case LDB_BOOLEAN: sb_puts(sb, v->h.u.i ? "TRUE" : "FALSE"); break;
    case LDB_TEXT:
        s = value_bytes(v, &n);
        put_escaped(sb, s, n, '\'', true);
        break;
    case LDB_BLOB:
        s = value_bytes(v, &n);
        sb_puts(sb, "X'");
        put_hex(sb, s, n);
        sb_putc(sb, '\'');
        break;
    default: value_format(sb, v); break;
    }
}

static int fn_quote(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    strbuf sb = STRBUF_INIT;
    put_sql_literal(&sb, &a[0]);
    return sb_result(cx, &sb, false, out);
}

static void put_utf8(strbuf *sb, uint32_t cp)
{
    if (cp > 0x10FFFF)
        cp = 0xFFFD;
    if (cp < 0x80) {
        sb_putc(sb, (char)cp);
    } else if (cp < 0x800) {
        sb_putc(sb, (char)(0xC0 | (cp >> 6)));
        sb_putc(sb, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        sb_putc(sb, (char)(0xE0 | (cp >> 12)));
        sb_putc(sb, (char)(0x80 | ((cp >> 6) & 0x3F)));
        sb_putc(sb, (char)(0x80 | (cp & 0x3F)));
    } else {
        sb_putc(sb, (char)(0xF0 | (cp >> 18)));
        sb_putc(sb, (char)(0x80 | ((cp >> 12) & 0x3F)));
        sb_putc(sb, (char)(0x80 | ((cp >> 6) & 0x3F)));
        sb_putc(sb, (char)(0x80 | (cp & 0x3F)));
    }
}

static int fn_char(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    strbuf sb = STRBUF_INIT;
    for (uint32_t i = 0; i < n; i++) {
        int64_t cp = 0;
        sqlv_int64(&a[i], &cp);
        put_utf8(&sb, cp < 0 ? 0xFFFD : (uint32_t)(cp > 0x10FFFF ? 0xFFFD : cp));
    }
    return sb_result(cx, &sb, false, out);
}

static int fn_unicode(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, 1);
    char buf[64];
    size_t len;
    const unsigned char *s = (const unsigned char *)sqlv_bytes(&a[0], buf, &len);
    if (len == 0) {
        *out = value_null();
        return LDB_OK;
    }
    size_t l = utf8_char_len((const char *)s, len);
    uint32_t cp = l == 1 ? s[0] : (uint32_t)(s[0] & (0x7F >> l));
    for (size_t i = 1; i < l; i++)
        cp = (cp << 6) | (s[i] & 0x3F);
    *out = value_int(cp);
    return LDB_OK;
}

static int fn_zeroblob(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    int64_t len = 0;
    sqlv_int64(&a[0], &len);
    if (len < 0)
        len = 0;
    if (len > VALUE_MAX_LEN)
        return sqlv_error(cx->err, LDB_ERROR, "string or blob too big");
    char *z = mem_calloc(1, (size_t)len + 1);
    if (!z)
        return LDB_NOMEM;
    int rc = value_blob(out, z, (size_t)len);
    mem_free(z);
    return rc;
}

/* ---- like, glob, concat ------------------------------------------------------------------------ */

static int fn_like(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, n);
    char b0[64], b1[64], b2[64];
    size_t np, ns, ne = 0;
    const char *p = sqlv_bytes(&a[0], b0, &np), *s = sqlv_bytes(&a[1], b1, &ns);
    const char *e = n == 3 ? sqlv_bytes(&a[2], b2, &ne) : NULL;
    if (e && (ne == 0 || utf8_char_len(e, ne) != ne))
        return sqlv_error(cx->err, LDB_ERROR, "ESCAPE expression must be a single character");
    *out = value_bool(sql_like(p, np, s, ns, e, ne));
    return LDB_OK;
}

static int fn_glob(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, 2);
    char b0[64], b1[64];
    size_t np, ns;
    const char *p = sqlv_bytes(&a[0], b0, &np), *s = sqlv_bytes(&a[1], b1, &ns);
    *out = value_bool(sql_glob(p, np, s, ns));
    return LDB_OK;
}

static int concat_from(struct eval_ctx *cx, const value *a, uint32_t from, uint32_t n,
                       const char *sep, size_t nsep, value *out)
{
    strbuf sb = STRBUF_INIT;
    bool first = true;
    for (uint32_t i = from; i < n; i++) {
        if (value_is_null(&a[i]))
            continue;
        char buf[64];
        size_t len;
        const char *s = sqlv_bytes(&a[i], buf, &len);
        if (!first)
            sb_put(&sb, sep, nsep);
        sb_put(&sb, s, len);
        first = false;
    }
    return sb_result(cx, &sb, false, out);
}

static int fn_concat(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return concat_from(cx, a, 0, n, "", 0, out);
}

static int fn_concat_ws(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    NULL_IF_ANY_NULL(a, 1);
    char buf[64];
    size_t nsep;
    const char *sep = sqlv_bytes(&a[0], buf, &nsep);
    return concat_from(cx, a, 1, n, sep, nsep, out);
}

/* ---- printf ------------------------------------------------------------------------------------- */

/* Widths and precisions are clamped, so no format can ask for gigabytes. */
#define PRINTF_MAX_WIDTH 100000

struct spec {
    char flags[8];
    int width, prec; /* -1: not given */
    char conv;
};

/* A width or precision, clamped; *negative when a '*' argument was below
 * zero (a width then left-justifies, as in SQLite). */
static int spec_number(const char **f, const value *a, uint32_t n, uint32_t *k, bool *negative)
{
    int64_t v = 0;
    if (**f == '*') {
        (*f)++;
        if (*k < n)
            sqlv_int64(&a[(*k)++], &v);
    } else {
        while (isdigit((unsigned char)**f) && v <= PRINTF_MAX_WIDTH)
            v = v * 10 + (*(*f)++ - '0');
        while (isdigit((unsigned char)**f))
            (*f)++;
    }
    *negative = v < 0;
    /* the magnitude in uint64: -INT64_MIN does not fit in int64 */
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    return (int)(m > PRINTF_MAX_WIDTH ? PRINTF_MAX_WIDTH : m);
}

static void parse_spec(const char **f, struct spec *sp, const value *a, uint32_t n,
                       uint32_t *k)
{
    size_t nf = 0;
    while (**f && strchr("-+ 0#", **f)) {
        if (nf + 1 < sizeof sp->flags)
            sp->flags[nf++] = **f;
        (*f)++;
    }
    while (**f == '!' || **f == ',')
        (*f)++;
    bool negative = false;
    sp->width = (isdigit((unsigned char)**f) || **f == '*') ? spec_number(f, a, n, k, &negative)
                                                           : -1;
    if (negative && nf + 1 < sizeof sp->flags)
        sp->flags[nf++] = '-';
    sp->flags[nf] = '\0';
    sp->prec = -1;
    if (**f == '.') {
        (*f)++;
        sp->prec = spec_number(f, a, n, k, &negative);
    }
    while (**f == 'l' || **f == 'h')
        (*f)++;
    sp->conv = **f;
    if (**f)
        (*f)++;
}

/* Builds a C format for one conversion with the given length modifier. */
static void c_format(char *out, size_t size, const struct spec *sp, const char *mod, char conv)
{
    int k = snprintf(out, size, "%%%s", sp->flags);
    if (sp->width >= 0)
        k += snprintf(out + k, size - (size_t)k, "%d", sp->width);
    if (sp->prec >= 0)
        k += snprintf(out + k, size - (size_t)k, ".%d", sp->prec);
    snprintf(out + k, size - (size_t)k, "%s%c", mod, conv);
}

static void put_padded(strbuf *sb, const struct spec *sp, const char *s, size_t n)
{
    size_t w = sp->width > 0 ? (size_t)sp->width : 0;
    bool left = strchr(sp->flags, '-') != NULL;
    for (size_t i = n; !left && i < w; i++)
        sb_putc(sb, ' ');
    sb_put(sb, s, n);
    for (size_t i = n; left && i < w; i++)
        sb_putc(sb, ' ');
}

static void printf_string(strbuf *sb, const struct spec *sp, const value *v)
{
    char buf[64];
    size_t n = 0;
    const char *s = value_is_null(v) ? "" : sqlv_bytes(v, buf, &n);
    if (sp->conv == 'c') {
        n = n ? utf8_char_len(s, n) : 0;
    } else if (sp->prec >= 0) {
        n = char_offset(s, n, sp->prec);
    }
    if (sp->conv == 'q' || sp->conv == 'Q' || sp->conv == 'w') {
        strbuf q = STRBUF_INIT;
        if (sp->conv == 'Q' && value_is_null(v))
            sb_puts(&q, "NULL");
        else
            put_escaped(&q, s, n, sp->conv == 'w' ? '"' : '\'', sp->conv == 'Q');
        if (sb_error(&q))
            sb->err = LDB_NOMEM;
        else
            put_padded(sb, sp, sb_str(&q), q.len);
        sb_free(&q);
        return;
    }
    put_padded(sb, sp, s, n);
}

static void printf_one(strbuf *sb, const struct spec *sp, const value *v)
{
    char fmt[48];
    int64_t i = 0;
    switch (sp->conv) {
    case 'd': case 'i':
        sqlv_int64(v, &i);
        c_format(fmt, sizeof fmt, sp, "ll", 'd');
        sb_printf(sb, fmt, (long long)i);
        break;
    case 'u': case 'x': case 'X': case 'o':
        sqlv_int64(v, &i);
        c_format(fmt, sizeof fmt, sp, "ll", sp->conv);
        sb_printf(sb, fmt, (unsigned long long)i);
        break;
    case 'f': case 'e': case 'E': case 'g': case 'G':
        c_format(fmt, sizeof fmt, sp, "", sp->conv);
        sb_printf(sb, fmt, value_is_null(v) ? 0.0 : sqlv_double(v));
        break;
    default:
        printf_string(sb, sp, v);
        break;
    }
}

static int fn_printf(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    if (value_is_null(&a[0])) {
        *out = value_null();
        return LDB_OK;
    }
    char buf[64];
    size_t flen;
    const char *fs = sqlv_bytes(&a[0], buf, &flen);
    char *f0 = mem_strndup(fs, flen);
    if (!f0)
        return LDB_NOMEM;
    strbuf sb = STRBUF_INIT;
    uint32_t k = 1;
    static const value null_value = { .h = { .type = LDB_NULL } };
    for (const char *f = f0; *f && !sb_error(&sb) && sb.len <= VALUE_MAX_LEN;) {
        if (*f != '%') {
            sb_putc(&sb, *f++);
            continue;
        }
        f++;
        struct spec sp;
        parse_spec(&f, &sp, a, n, &k);
        if (sp.conv == '%') {
            sb_putc(&sb, '%');
        } else if (sp.conv && strchr("diuxXofeEgGsczqQw", sp.conv)) {
            printf_one(&sb, &sp, k < n ? &a[k] : &null_value);
            k++;
        }
    }
    mem_free(f0);
    return sb_result(cx, &sb, false, out);
}

#define DET FUNC_DETERMINISTIC

const struct func_def func_text_defs[] = {
    { "lower", 1, 1, DET, COL_TEXT, fn_lower, NULL, NULL },
    { "upper", 1, 1, DET, COL_TEXT, fn_upper, NULL, NULL },
    { "length", 1, 1, DET, COL_INTEGER, fn_length, NULL, NULL },
    { "octet_length", 1, 1, DET, COL_INTEGER, fn_octet_length, NULL, NULL },
    /* a BLOB argument gives a BLOB */
    { "substr", 2, 3, DET, COL_ANY, fn_substr, NULL, NULL },
    { "substring", 2, 3, DET, COL_ANY, fn_substr, NULL, NULL },
    { "trim", 1, 2, DET, COL_TEXT, fn_trim, NULL, NULL },
    { "ltrim", 1, 2, DET, COL_TEXT, fn_ltrim, NULL, NULL },
    { "rtrim", 1, 2, DET, COL_TEXT, fn_rtrim, NULL, NULL },
    { "replace", 3, 3, DET, COL_TEXT, fn_replace, NULL, NULL },
    { "instr", 2, 2, DET, COL_INTEGER, fn_instr, NULL, NULL },
    { "hex", 1, 1, DET, COL_TEXT, fn_hex, NULL, NULL },
    { "quote", 1, 1, DET, COL_TEXT, fn_quote, NULL, NULL },
    { "printf", 1, -1, DET, COL_TEXT, fn_printf, NULL, NULL },
    { "format", 1, -1, DET, COL_TEXT, fn_printf, NULL, NULL },
    { "char", 0, -1, DET, COL_TEXT, fn_char, NULL, NULL },
    { "unicode", 1, 1, DET, COL_INTEGER, fn_unicode, NULL, NULL },
    { "zeroblob", 1, 1, DET, COL_BLOB, fn_zeroblob, NULL, NULL },
    { "like", 2, 3, DET, COL_BOOLEAN, fn_like, NULL, NULL },
    { "glob", 2, 2, DET, COL_BOOLEAN, fn_glob, NULL, NULL },
    { "concat", 1, -1, DET, COL_TEXT, fn_concat, NULL, NULL },
    { "concat_ws", 2, -1, DET, COL_TEXT, fn_concat_ws, NULL, NULL },
};

const uint32_t func_text_count = sizeof func_text_defs / sizeof func_text_defs[0];
