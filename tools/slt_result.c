/*
 * slt_result.c - renders query values the way the corpus's expected
 * results were rendered (README "Rendering"), so that the text compared is
 * independent of the engine that produced the values:
 *   NULL            -> "NULL" in any column
 *   I column        -> %lld of the value as an integer: REAL truncates
 *                      toward zero (saturating), TEXT gives its leading
 *                      integer (0 if none), as sqlite3_column_int64 does
 *   R column        -> %.3f as SQLite's printf writes it (below)
 *   T column        -> the text; "" -> "(empty)"; bytes < 0x20 or > 0x7E
 *                      -> '@'; numbers as SQLite turns them into text
 *                      (%lld, and %!.15g for REAL: "1.0", "1.0e+20")
 * BOOLEAN values arrive as integers 1/0 (SQLite's booleans).
 *
 * SQLite's %f differs from the C library's in two ways that the expected
 * files show: it keeps at most 16 significant digits and writes zeros
 * after them (-9223372036854775808.0 is "-9223372036854776000.000"), and
 * it rounds ties away from zero (0.0625 is "0.063", not "0.062").
 * slt_format_real3 does the same with exact arithmetic; its tests compare
 * it with sqlite3_snprintf.
 */
#include "slt.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void slt_result_init(slt_result *r) { memset(r, 0, sizeof *r); }

void slt_result_free(slt_result *r)
{
    free(r->buf);
    free(r->off);
    memset(r, 0, sizeof *r);
}

void slt_result_reset(slt_result *r, const char *types)
{
    r->types = types;
    r->ncol = (int)strlen(types);
    r->len = 0;
    r->nval = 0;
}

const char *slt_value(const slt_result *r, size_t i) { return r->buf + r->off[i]; }

static void die_oom(void)
{
    fputs("slt: out of memory\n", stderr);
    exit(2);
}

/* Room for n more bytes of the current value. */
static char *reserve(slt_result *r, size_t n)
{
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 4096;
        while (cap < r->len + n)
            cap *= 2;
        char *grown = realloc(r->buf, cap);
        if (!grown)
            die_oom();
        r->buf = grown;
        r->cap = cap;
    }
    return r->buf + r->len;
}

/* Records the value of n bytes just written at the end of buf. */
static void commit(slt_result *r, size_t n)
{
    if (r->nval == r->capv) {
        size_t cap = r->capv ? r->capv * 2 : 256;
        size_t *grown = realloc(r->off, cap * sizeof *grown);
        if (!grown)
            die_oom();
        r->off = grown;
        r->capv = cap;
    }
    r->buf[r->len + n] = 0;
    r->off[r->nval++] = r->len;
    r->len += n + 1;
}

static void push(slt_result *r, const char *s, size_t n)
{
    memcpy(reserve(r, n + 1), s, n);
    commit(r, n);
}

static char column_type(const slt_result *r)
{
    return r->ncol > 0 ? r->types[r->nval % (size_t)r->ncol] : 'T';
}

static void push_int(slt_result *r, int64_t v)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    push(r, buf, (size_t)n);
}

/* Rounds the digit string d (no sign, '.' allowed) up by one unit in its
 * last digit; returns 1 if a new leading '1' is needed. */
static int round_up(char *d, size_t n)
{
    for (size_t i = n; i-- > 0;) {
        if (d[i] == '.')
            continue;
        if (d[i] != '9') {
            d[i]++;
            return 0;
        }
        d[i] = '0';
    }
    return 1;
}

/* |v| >= 1e13: keep 16 significant digits (ties away from zero), zeros
 * after them. "%.12f" is exact here: the ulp is at least 2^-9. */
static void format_huge(double v, char *out, size_t size)
{
    char d[400];
    snprintf(d, sizeof d, "%.12f", fabs(v));
    char *dot = strchr(d, '.');
    size_t sig = 0, i = 0;
    for (; d[i] && sig < 16; i++)
        sig += d[i] != '.';
    int next = d[i] == '.' ? d[i + 1] : d[i]; /* the 17th digit */
    int carry = next >= '5' && round_up(d, i);
    for (; d[i]; i++)
        if (d[i] != '.')
            d[i] = '0';
    dot[4] = 0;
    snprintf(out, size, "%s%s%s", v < 0 ? "-" : "", carry ? "1" : "", d);
}

void slt_format_real3(double v, char *out, size_t size)
{
    if (v == 0)
        v = 0; /* SQLite writes -0.0 as 0.000 */
    if (isnan(v)) {
        snprintf(out, size, "NaN");
    } else if (isinf(v)) {
        snprintf(out, size, v < 0 ? "-Inf" : "Inf");
    } else if (fabs(v) >= 1e13) {
        format_huge(v, out, size);
    } else if (v * 16 == floor(v * 16) && fmod(v * 16, 2) != 0) {
        /* v = i/16 with i odd: 1000 v lies exactly halfway; the next
         * double away from zero is past the tie and rounds away. */
        snprintf(out, size, "%.3f", nextafter(v, v < 0 ? -INFINITY : INFINITY));
    } else {
        snprintf(out, size, "%.3f", v);
    }
}

/* Whether |v| lies exactly halfway between two 15-digit decimals. The
 * 40 digits printed hold every double's expansion that can be a tie. */
static int tie15(double v)
{
    char d[64];
    snprintf(d, sizeof d, "%.40e", fabs(v));
    if (d[16] != '5')
        return 0;
    for (int i = 17; d[i] != 'e'; i++)
        if (d[i] != '0')
            return 0;
    return 1;
}

void slt_format_real15(double v, char *out, size_t size)
{
    if (isnan(v) || isinf(v)) {
        slt_format_real3(v, out, size);
        return;
    }
    if (v == 0)
        v = 0;
    else if (tie15(v)) /* SQLite rounds ties away from zero */
        v = nextafter(v, v < 0 ? -INFINITY : INFINITY);
    char d[64];
    snprintf(d, sizeof d, "%.15g", v);
    /* SQLite's '!' flag: a '.' is always there ("1.0", "1.0e+20"). */
    char *e = strchr(d, 'e');
    if (strchr(d, '.'))
        snprintf(out, size, "%s", d);
    else if (e)
        snprintf(out, size, "%.*s.0%s", (int)(e - d), d, e);
    else
        snprintf(out, size, "%s.0", d);
}

static void push_real(slt_result *r, double v)
{
    char buf[400];
    slt_format_real3(v, buf, sizeof buf);
    push(r, buf, strlen(buf));
}

/* REAL to INTEGER as SQLite does it: truncation, saturating at the ends
 * of the range, NaN as 0. */
static int64_t real_to_int(double v)
{
    if (isnan(v))
        return 0;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    return (int64_t)v;
}

/* The leading integer of text (after white space and a sign), saturating:
 * sqlite3_column_int64 of a TEXT value. */
static int64_t text_to_int(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    int neg = i < n && s[i] == '-';
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n && isdigit((unsigned char)s[i]); i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        v = v > (limit - d) / 10 ? limit : v * 10 + d;
    }
    return neg ? (int64_t)(0 - v) : (int64_t)v;
}

/* The leading decimal number of text, or 0.0: sqlite3_column_double of a
 * TEXT value. Hex, "inf" and "nan" are not numbers there. */
static double text_to_real(const char *s, size_t n)
{
    char buf[512];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    const char *p = buf;
    while (isspace((unsigned char)*p))
        p++;
    const char *q = p + (*p == '-' || *p == '+');
    if (!isdigit((unsigned char)q[0]) && !(q[0] == '.' && isdigit((unsigned char)q[1])))
        return 0.0;
    if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
        return 0.0;
    return strtod(p, NULL);
}

void slt_put_null(slt_result *r) { push(r, "NULL", 4); }

void slt_put_int(slt_result *r, int64_t v)
{
    if (column_type(r) == 'R')
        push_real(r, (double)v);
    else
        push_int(r, v);
}

void slt_put_real(slt_result *r, double v)
{
    char buf[64];
    switch (column_type(r)) {
    case 'I': push_int(r, real_to_int(v)); break;
    case 'R': push_real(r, v); break;
    default:
        slt_format_real15(v, buf, sizeof buf);
        push(r, buf, strlen(buf));
    }
}

static void push_text(slt_result *r, const char *s, size_t n)
{
    if (n == 0) {
        push(r, "(empty)", 7);
        return;
    }
    char *p = reserve(r, n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        p[i] = c < 0x20 || c > 0x7e ? '@' : (char)c;
    }
    commit(r, n);
}

void slt_put_text(slt_result *r, const char *s, size_t n)
{
    switch (column_type(r)) {
    case 'I': push_int(r, text_to_int(s, n)); break;
    case 'R': push_real(r, text_to_real(s, n)); break;
    default: push_text(r, s, n);
    }
}
