/*
 * format.c - values to text (shell, tests) and to JSON; text to number.
 *
 * REAL text is the shortest decimal that reads back to the same double,
 * always with a '.' or an exponent so it cannot be mistaken for an
 * INTEGER (1.0, 1.0e+20, 0.1). JSON output is always valid JSON: invalid
 * UTF-8 in TEXT becomes U+FFFD, and NaN/infinities become strings.
 */
#include "value/value.h"

#include "base/strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes r's text form into out (at least 40 bytes); returns its length. */
static size_t format_real_buf(double r, char *out)
{
    if (isnan(r))
        return (size_t)snprintf(out, 40, "NaN");
    if (isinf(r))
        return (size_t)snprintf(out, 40, "%s", r < 0 ? "-Inf" : "Inf");
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, r);
        if (strtod(buf, NULL) == r)
            break;
    }
    char *e = strchr(buf, 'e');
    if (strchr(buf, '.'))
        return (size_t)snprintf(out, 40, "%s", buf);
    if (!e)
        return (size_t)snprintf(out, 40, "%s.0", buf);
    /* "1e+20" -> "1.0e+20" */
    return (size_t)snprintf(out, 40, "%.*s.0%s", (int)(e - buf), buf, e);
}

void value_format_real(strbuf *sb, double r)
{
    char buf[40];
    size_t n = format_real_buf(r, buf);
    sb_put(sb, buf, n);
}

/* Copies n bytes into buf (truncated to size, NUL-terminated). */
static void copy_out(char *buf, size_t size, const char *p, size_t n)
{
    if (!size)
        return;
    size_t k = n < size - 1 ? n : size - 1;
    memcpy(buf, p, k);
    buf[k] = '\0';
}

size_t value_format_buf(const value *v, char *buf, size_t size)
{
    char tmp[40];
    size_t n;
    const char *p;
    switch (value_type(v)) {
    case LDB_NULL: p = "NULL"; n = 4; break;
    case LDB_BOOLEAN:
        p = v->h.u.i ? "true" : "false";
        n = strlen(p);
        break;
    case LDB_INTEGER:
        n = (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)v->h.u.i);
        p = tmp;
        break;
    case LDB_REAL:
        n = format_real_buf(v->h.u.r, tmp);
        p = tmp;
        break;
    case LDB_TEXT:
        p = value_bytes(v, &n);
        break;
    default: {
        /* BLOB, ARRAY and RECORD: straight into buf, never allocating, so
         * a reader cannot fail for want of memory */
        strbuf sb;
        sb_init_fixed(&sb, buf, size);
        value_format(&sb, v);
        return sb.len;
    }
    }
    copy_out(buf, size, p, n);
    return n;
}

/* Upper case in SQL literals (X'0AFF', as SQLite prints them), lower case
 * in JSON ("\\x0aff", as the shell and PostgreSQL's bytea print them). */
static void format_hex(strbuf *sb, const char *p, size_t n, bool upper)
{
    const char *hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        char two[2] = { hex[c >> 4], hex[c & 15] };
        sb_put(sb, two, 2);
    }
}

void value_format(strbuf *sb, const value *v)
{
    size_t n;
    const char *p;
    switch (value_type(v)) {
    case LDB_NULL:
        sb_puts(sb, "NULL");
        break;
    case LDB_BOOLEAN:
        sb_puts(sb, v->h.u.i ? "true" : "false");
        break;
    case LDB_INTEGER:
        sb_printf(sb, "%lld", (long long)v->h.u.i);
        break;
    case LDB_REAL:
        value_format_real(sb, v->h.u.r);
        break;
    case LDB_TEXT:
        p = value_bytes(v, &n);
        sb_put(sb, p, n);
        break;
    case LDB_BLOB:
        p = value_bytes(v, &n);
        sb_puts(sb, "X'");
        format_hex(sb, p, n, true);
        sb_putc(sb, '\'');
        break;
    case LDB_ARRAY:
    case LDB_RECORD:
        value_format_json(sb, v);
        break;
    case LDB_LIVE: /* only the API formats a child handle (with its number) */
        sb_puts(sb, "live");
        break;
    }
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    unsigned cp = c & (0x7Fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static void json_string(strbuf *sb, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    sb_putc(sb, '"');
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            size_t j = i;
            while (j < n && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\')
                j++;
            sb_put(sb, s + i, j - i);
            i = j;
            continue;
        }
        switch (c) {
        case '"': sb_puts(sb, "\\\""); i++; continue;
        case '\\': sb_puts(sb, "\\\\"); i++; continue;
        case '\n': sb_puts(sb, "\\n"); i++; continue;
        case '\r': sb_puts(sb, "\\r"); i++; continue;
        case '\t': sb_puts(sb, "\\t"); i++; continue;
        case '\b': sb_puts(sb, "\\b"); i++; continue;
        case '\f': sb_puts(sb, "\\f"); i++; continue;
        default: break;
        }
        if (c < 0x20) {
            sb_printf(sb, "\\u%04x", c);
            i++;
            continue;
        }
        size_t len = utf8_seq(p + i, n - i);
        if (len == 0) {
            sb_puts(sb, "\\ufffd");
            i++;
        } else {
            sb_put(sb, s + i, len);
            i += len;
        }
    }
    sb_putc(sb, '"');
}

void value_format_json(strbuf *sb, const value *v)
{
    size_t n;
    const char *p;
    switch (value_type(v)) {
    case LDB_NULL:
        sb_puts(sb, "null");
        break;
    case LDB_LIVE:
        sb_puts(sb, "\"live\"");
        break;
    case LDB_BOOLEAN:
        sb_puts(sb, v->h.u.i ? "true" : "false");
        break;
    case LDB_INTEGER:
        sb_printf(sb, "%lld", (long long)v->h.u.i);
        break;
    case LDB_REAL:
        if (isnan(v->h.u.r))
            sb_puts(sb, "\"NaN\"");
        else if (isinf(v->h.u.r))
            sb_puts(sb, v->h.u.r < 0 ? "\"-Infinity\"" : "\"Infinity\"");
        else
            value_format_real(sb, v->h.u.r);
        break;
    case LDB_TEXT:
        p = value_bytes(v, &n);
        json_string(sb, p, n);
        break;
    case LDB_BLOB:
        p = value_bytes(v, &n);
        sb_puts(sb, "\"\\\\x");
        format_hex(sb, p, n, false);
        sb_putc(sb, '"');
        break;
    case LDB_ARRAY: {
        value_iter it;
        value_iter_init(&it, v);
        sb_putc(sb, '[');
        for (const value *x = value_iter_next(&it); x;) {
            value_format_json(sb, x);
            if ((x = value_iter_next(&it)))
                sb_putc(sb, ',');
        }
        sb_putc(sb, ']');
        break;
    }
    case LDB_RECORD:
        n = value_nfields(v);
        sb_putc(sb, '{');
        for (size_t i = 0; i < n; i++) {
            size_t kn;
            const char *k = value_bytes(value_field_name(v, i), &kn);
            if (i)
                sb_putc(sb, ',');
            json_string(sb, k, kn);
            sb_putc(sb, ':');
            value_format_json(sb, value_field(v, i));
        }
        sb_putc(sb, '}');
        break;
    }
}

/* ---- text to number ---------------------------------------------------- */

/* Scans one numeric literal; returns its end or NULL; *is_int says if it
 * has neither '.' nor an exponent. */
static const char *scan_number(const char *p, const char *end, bool *is_int)
{
    *is_int = true;
    if (p < end && (*p == '+' || *p == '-'))
        p++;
    const char *digits = p;
    while (p < end && isdigit((unsigned char)*p))
        p++;
    size_t nint = (size_t)(p - digits);
    size_t nfrac = 0;
    if (p < end && *p == '.') {
        *is_int = false;
        p++;
        const char *f = p;
        while (p < end && isdigit((unsigned char)*p))
            p++;
        nfrac = (size_t)(p - f);
    }
    if (nint + nfrac == 0)
        return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = false;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const char *e = p;
        while (p < end && isdigit((unsigned char)*p))
            p++;
        if (p == e)
            return NULL;
    }
    return p;
}

bool value_parse_number(const char *s, size_t n, value *out)
{
    const char *p = s, *end = s + n;
    while (p < end && isspace((unsigned char)*p))
        p++;
    while (end > p && isspace((unsigned char)end[-1]))
        end--;
    bool is_int;
    const char *stop = scan_number(p, end, &is_int);
    if (!stop || stop != end)
        return false;
    char buf[512];
    size_t len = (size_t)(end - p);
    if (len >= sizeof buf)
        return false; /* documented limit on literal length */
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (is_int) {
        errno = 0;
        long long ll = strtoll(buf, NULL, 10);
        if (errno == 0) {
            *out = value_int(ll);
            return true;
        }
    }
    *out = value_real(strtod(buf, NULL));
    return true;
}
