/*
 * sqlvalue.c - SQLite's value conversions, CAST, arithmetic and the
 * comparison rule (sqlvalue.h). Pure functions of their inputs: no state,
 * no allocation except for results that are long strings.
 */
#include "sql/sqlvalue.h"

#include "base/strbuf.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TWO63 9223372036854775808.0

int sqlv_verror(struct eval_error *err, int code, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    err->code = code;
    return code;
}

int sqlv_error(struct eval_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlv_verror(err, code, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- text to number ------------------------------------------------------------ */

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Length of the numeric prefix of p[0..n) (sign, digits, fraction,
 * exponent); 0 when there is no digit. *is_int: no '.' and no exponent. */
static size_t numeric_prefix(const char *p, size_t n, bool *is_int)
{
    size_t i = 0, digits = 0;
    *is_int = true;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        i++;
    while (i < n && isdigit((unsigned char)p[i]))
        i++, digits++;
    if (i < n && p[i] == '.') {
        size_t j = i + 1;
        while (j < n && isdigit((unsigned char)p[j]))
            j++, digits++;
        if (digits == 0)
            return 0;
        *is_int = false;
        i = j;
    }
    if (digits == 0)
        return 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (p[j] == '+' || p[j] == '-'))
            j++;
        size_t e = j;
        while (j < n && isdigit((unsigned char)p[j]))
            j++;
        if (j > e) {
            *is_int = false;
            i = j;
        }
    }
    return i;
}

/* Digits (with sign) as int64; false on overflow. */
static bool parse_int(const char *p, size_t n, int64_t *out)
{
    bool neg = false;
    size_t i = 0;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    uint64_t acc = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)(p[i] - '0');
        if (acc > (UINT64_MAX - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    if (neg ? acc > (uint64_t)INT64_MAX + 1 : acc > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
    return true;
}

/* strtod over exactly p[0..n), a validated decimal literal. */
static double parse_real(const char *p, size_t n)
{
    char small[128];
    if (n < sizeof small) {
        memcpy(small, p, n);
        small[n] = '\0';
        return strtod(small, NULL);
    }
    /* A literal this long has more digits than a double can use: keep
     * the sign, integer digits as an exponent, and 40 mantissa digits. */
    char buf[128];
    size_t k = 0, i = 0;
    int64_t exp10 = 0;
    bool seen_point = false;
    if (p[i] == '+' || p[i] == '-')
        buf[k++] = p[i++];
    for (; i < n && (isdigit((unsigned char)p[i]) || p[i] == '.'); i++) {
        if (p[i] == '.') {
            seen_point = true;
            continue;
        }
        if (k < 60) {
            buf[k++] = p[i];
            exp10 -= seen_point;
        } else if (!seen_point) {
            exp10++;
        }
    }
    if (i < n)
        exp10 += strtoll(p + i + 1, NULL, 10);
    snprintf(buf + k, sizeof buf - k, "e%lld", (long long)exp10);
    return strtod(buf, NULL);
}

static value prefix_number(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    bool is_int;
    size_t len = numeric_prefix(s + i, n - i, &is_int);
    if (len == 0)
        return value_int(0);
    int64_t v;
    if (is_int && parse_int(s + i, len, &v))
        return value_int(v);
    return value_real(parse_real(s + i, len));
}

value sqlv_numeric(const value *v)
{
    size_t n;
    const char *p;
    switch (value_type(v)) {
    case LDB_INTEGER:
    case LDB_REAL:
    case LDB_NULL:
        return *v;
    case LDB_BOOLEAN:
        return value_int(v->h.u.i);
    case LDB_TEXT:
    case LDB_BLOB:
        p = value_bytes(v, &n);
        return prefix_number(p, n);
    default:
        return value_int(0);
    }
}

static int64_t real_to_int64(double r)
{
    if (isnan(r))
        return 0;
    if (r >= TWO63)
        return INT64_MAX;
    if (r < -TWO63)
        return INT64_MIN;
    return (int64_t)r;
}

bool sqlv_int64(const value *v, int64_t *out)
{
    if (value_is_null(v))
        return false;
    value num = sqlv_numeric(v);
    *out = value_type(&num) == LDB_REAL ? real_to_int64(num.h.u.r) : num.h.u.i;
    return true;
}

double sqlv_double(const value *v)
{
    value num = sqlv_numeric(v);
    switch (value_type(&num)) {
    case LDB_INTEGER: return (double)num.h.u.i;
    case LDB_REAL: return num.h.u.r;
    default: return 0.0;
    }
}

/* ---- text forms ---------------------------------------------------------------- */

int sqlv_to_text(const value *v, value *out)
{
    size_t n;
    const char *p;
    switch (value_type(v)) {
    case LDB_TEXT:
        *out = value_copy(v);
        return LDB_OK;
    case LDB_BLOB:
        p = value_bytes(v, &n);
        return value_text(out, p, n);
    default: {
        strbuf sb = STRBUF_INIT;
        value_format(&sb, v);
        int rc = sb_error(&sb);
        if (rc == LDB_OK)
            rc = value_text(out, sb_str(&sb), sb.len);
        sb_free(&sb);
        return rc;
    }
    }
}

const char *sqlv_bytes(const value *v, char *buf, size_t *len)
{
    switch (value_type(v)) {
    case LDB_TEXT:
    case LDB_BLOB:
        return value_bytes(v, len);
    case LDB_INTEGER:
        *len = (size_t)snprintf(buf, 64, "%lld", (long long)v->h.u.i);
        return buf;
    case LDB_BOOLEAN:
        *len = (size_t)snprintf(buf, 64, "%s", v->h.u.i ? "true" : "false");
        return buf;
    case LDB_REAL: {
        strbuf sb = STRBUF_INIT;
        value_format_real(&sb, v->h.u.r);
        *len = (size_t)snprintf(buf, 64, "%s", sb_error(&sb) ? "?" : sb_str(&sb));
        sb_free(&sb);
        return buf;
    }
    default:
        *len = 0;
        return buf;
    }
}

/* ---- CAST ------------------------------------------------------------------------- */

/* CAST text AS INTEGER: SQLite reads only the integer prefix and
 * saturates ('1e3' is 1, '99999999999999999999' is INT64_MAX). */
static value text_to_integer(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    size_t start = i;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    while (i < n && isdigit((unsigned char)s[i]))
        i++;
    int64_t v;
    if (i == start || !isdigit((unsigned char)s[i - 1]))
        return value_int(0);
    if (parse_int(s + start, i - start, &v))
        return value_int(v);
    return value_int(s[start] == '-' ? INT64_MIN : INT64_MAX);
}

/* CAST text AS NUMERIC: an integral prefix that fits becomes INTEGER
 * ('3.0' is 3), anything else REAL. */
static value text_to_numeric(const char *s, size_t n)
{
    value num = prefix_number(s, n);
    if (value_type(&num) == LDB_REAL) {
        double r = num.h.u.r;
        if (r > -TWO63 && r < TWO63 && r == (double)(int64_t)r)
            return value_int((int64_t)r);
    }
    return num;
}

static bool word_is(const char *p, size_t n, const char *w)
{
    size_t k = strlen(w);
    if (n != k)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)p[i]) != w[i])
            return false;
    return true;
}

static int cast_to_boolean(const value *v, value *out, struct eval_error *err)
{
    size_t n;
    const char *p;
    switch (value_type(v)) {
    case LDB_BOOLEAN:
        *out = *v;
        return LDB_OK;
    case LDB_INTEGER:
        *out = value_bool(v->h.u.i != 0);
        return LDB_OK;
    case LDB_REAL:
        *out = value_bool(v->h.u.r != 0.0);
        return LDB_OK;
    case LDB_TEXT:
        p = value_bytes(v, &n);
        while (n && is_space((unsigned char)*p))
            p++, n--;
        while (n && is_space((unsigned char)p[n - 1]))
            n--;
        if (word_is(p, n, "true") || word_is(p, n, "1")) {
            *out = value_bool(true);
            return LDB_OK;
        }
        if (word_is(p, n, "false") || word_is(p, n, "0")) {
            *out = value_bool(false);
            return LDB_OK;
        }
        break;
    default:
        break;
    }
    char buf[64];
    size_t len;
    const char *t = sqlv_bytes(v, buf, &len);
    return sqlv_error(err, LDB_ERROR, "cannot cast '%.*s' to BOOLEAN",
                      (int)(len > 40 ? 40 : len), t);
}

static int cast_number(const value *v, enum col_type to, value *out)
{
    size_t n;
    const char *p = NULL;
    value num;
    if (value_type(v) == LDB_TEXT || value_type(v) == LDB_BLOB)
        p = value_bytes(v, &n);
    switch (to) {
    case COL_INTEGER:
        if (p)
            num = text_to_integer(p, n);
        else
            num = sqlv_numeric(v);
        if (value_type(&num) == LDB_REAL)
            num = value_int(real_to_int64(num.h.u.r));
        break;
    case COL_REAL:
        num = p ? prefix_number(p, n) : sqlv_numeric(v);
        if (value_type(&num) == LDB_INTEGER)
            num = value_real((double)num.h.u.i);
        break;
    default: /* NUMERIC */
        num = p ? text_to_numeric(p, n) : sqlv_numeric(v);
        break;
    }
    *out = num;
    return LDB_OK;
}

int sqlv_cast(const value *v, enum col_type to, value *out,
              struct eval_error *err)
{
    size_t n;
    const char *p;
    if (value_is_null(v)) {
        *out = value_null();
        return LDB_OK;
    }
    switch (to) {
    case COL_INTEGER:
    case COL_REAL:
    case COL_NUMERIC:
        return cast_number(v, to, out);
    case COL_TEXT:
        return sqlv_to_text(v, out);
    case COL_BLOB:
        if (value_type(v) == LDB_BLOB) {
            *out = value_copy(v);
            return LDB_OK;
        }
        if (value_type(v) == LDB_TEXT) {
            p = value_bytes(v, &n);
            return value_blob(out, p, n);
        }
        {
            char buf[64];
            p = sqlv_bytes(v, buf, &n);
            return value_blob(out, p, n);
        }
    case COL_BOOLEAN:
        return cast_to_boolean(v, out, err);
    case COL_ANY:
        break;
    }
    *out = value_copy(v);
    return LDB_OK;
}

/* ---- arithmetic ---------------------------------------------------------------------- */

static int overflow(struct eval_error *err)
{
    return sqlv_error(err, LDB_ERROR, "integer overflow");
}

static int int_arith(enum expr_op op, int64_t a, int64_t b, value *out,
                     struct eval_error *err)
{
    int64_t r;
    switch (op) {
    case EOP_ADD:
        if (__builtin_add_overflow(a, b, &r))
            return overflow(err);
        break;
    case EOP_SUB:
        if (__builtin_sub_overflow(a, b, &r))
            return overflow(err);
        break;
    case EOP_MUL:
        if (__builtin_mul_overflow(a, b, &r))
            return overflow(err);
        break;
    case EOP_DIV:
        if (b == 0) {
            *out = value_null();
            return LDB_OK;
        }
        if (a == INT64_MIN && b == -1)
            return overflow(err);
        r = a / b;
        break;
    default: /* EOP_MOD */
        if (b == 0) {
            *out = value_null();
            return LDB_OK;
        }
        r = b == -1 ? 0 : a % b;
        break;
    }
    *out = value_int(r);
    return LDB_OK;
}

static double as_double(const value *num)
{
    return value_type(num) == LDB_INTEGER ? (double)num->h.u.i : num->h.u.r;
}

static int real_arith(enum expr_op op, double a, double b, value *out)
{
    double r;
    switch (op) {
    case EOP_ADD: r = a + b; break;
    case EOP_SUB: r = a - b; break;
    case EOP_MUL: r = a * b; break;
    default: /* EOP_DIV */
        if (b == 0.0) {
            *out = value_null();
            return LDB_OK;
        }
        r = a / b;
        break;
    }
    *out = value_real(r);
    return LDB_OK;
}

/* SQLite's shifts: a negative count shifts the other way; 64 or more
 * bits shift everything out. */
static int64_t shift_left(int64_t a, int64_t n)
{
    if (n < 0)
        return n <= -64 ? (a < 0 ? -1 : 0) : a >> (-n);
    return n >= 64 ? 0 : (int64_t)((uint64_t)a << n);
}

static int64_t as_int64(const value *num)
{
    return value_type(num) == LDB_INTEGER ? num->h.u.i : real_to_int64(num->h.u.r);
}

static int bit_arith(enum expr_op op, const value *x, const value *y, value *out)
{
    int64_t a = as_int64(x), b = as_int64(y), r;
    switch (op) {
    case EOP_BITAND: r = a & b; break;
    case EOP_BITOR: r = a | b; break;
    case EOP_LSHIFT: r = shift_left(a, b); break;
    default: /* EOP_RSHIFT */
        r = b == INT64_MIN ? 0 : shift_left(a, -b);
        break;
    }
    *out = value_int(r);
    return LDB_OK;
}

/* % converts both sides to INTEGER (SQLite) and gives REAL when either
 * side was REAL. */
static int mod_arith(const value *x, const value *y, value *out, struct eval_error *err)
{
    int rc = int_arith(EOP_MOD, as_int64(x), as_int64(y), out, err);
    if (rc == LDB_OK && value_type(out) == LDB_INTEGER &&
        (value_type(x) == LDB_REAL || value_type(y) == LDB_REAL))
        *out = value_real((double)out->h.u.i);
    return rc;
}

int sqlv_arith(enum expr_op op, const value *a, const value *b, value *out,
               struct eval_error *err)
{
    if (value_is_null(a) || value_is_null(b)) {
        *out = value_null();
        return LDB_OK;
    }
    value x = sqlv_numeric(a), y = sqlv_numeric(b);
    if (op >= EOP_BITAND && op <= EOP_RSHIFT)
        return bit_arith(op, &x, &y, out);
    if (op == EOP_MOD)
        return mod_arith(&x, &y, out, err);
    if (value_type(&x) == LDB_INTEGER && value_type(&y) == LDB_INTEGER)
        return int_arith(op, x.h.u.i, y.h.u.i, out, err);
    return real_arith(op, as_double(&x), as_double(&y), out);
}

int sqlv_negate(const value *a, value *out, struct eval_error *err)
{
    if (value_is_null(a)) {
        *out = value_null();
        return LDB_OK;
    }
    value x = sqlv_numeric(a);
    if (value_type(&x) == LDB_REAL) {
        *out = value_real(-x.h.u.r);
        return LDB_OK;
    }
    if (x.h.u.i == INT64_MIN)
        return overflow(err);
    *out = value_int(-x.h.u.i);
    return LDB_OK;
}

int sqlv_bitnot(const value *a, value *out)
{
    if (value_is_null(a)) {
        *out = value_null();
        return LDB_OK;
    }
    value x = sqlv_numeric(a);
    *out = value_int(~as_int64(&x));
    return LDB_OK;
}

int sqlv_concat(const value *a, const value *b, value *out)
{
    char ba[64], bb[64];
    size_t na, nb;
    const char *pa = sqlv_bytes(a, ba, &na), *pb = sqlv_bytes(b, bb, &nb);
    if (na + nb > VALUE_MAX_LEN)
        return LDB_RANGE;
    if (na + nb <= VALUE_INLINE_MAX) {
        char buf[VALUE_INLINE_MAX];
        memcpy(buf, pa, na);
        memcpy(buf + na, pb, nb);
        return value_text(out, buf, na + nb);
    }
    strbuf sb = STRBUF_INIT;
    sb_put(&sb, pa, na);
    sb_put(&sb, pb, nb);
    int rc = sb_error(&sb);
    if (rc == LDB_OK)
        rc = value_text(out, sb.p, sb.len);
    sb_free(&sb);
    return rc;
}

/* ---- comparison ---------------------------------------------------------------------- */

enum col_type sql_compare_affinity(enum col_type a, enum col_type b)
{
    if (col_type_numeric(a) || col_type_numeric(b))
        return COL_NUMERIC;
    if ((a == COL_TEXT && b != COL_BLOB) || (b == COL_TEXT && a != COL_BLOB))
        return COL_TEXT;
    return COL_ANY;
}

bool sql_affinity_is_noop(enum col_type aff, enum col_type coltype)
{
    if (aff == COL_ANY || aff == COL_BLOB)
        return true;
    if (col_type_numeric(aff))
        return col_type_numeric(coltype) || coltype == COL_BOOLEAN;
    if (aff == COL_TEXT)
        return coltype == COL_TEXT;
    return false;
}

int sql_apply_affinity(value *v, enum col_type aff)
{
    size_t n;
    const char *p;
    value num;
    if (col_type_numeric(aff)) {
        if (value_type(v) != LDB_TEXT)
            return LDB_OK;
        p = value_bytes(v, &n);
        if (value_parse_number(p, n, &num)) {
            value_release(v);
            *v = num;
        }
        return LDB_OK;
    }
    if (aff == COL_TEXT && value_is_number(v)) {
        value t;
        int rc = sqlv_to_text(v, &t);
        if (rc)
            return rc;
        *v = t;
    }
    return LDB_OK;
}

int sqlv_compare(const value *a, const value *b, enum col_type aff,
                 enum ldb_collation coll, int *cmp)
{
    bool same = value_type(a) == value_type(b);
    if (aff == COL_ANY || (same && value_type(a) != LDB_TEXT) ||
        (same && aff == COL_TEXT)) {
        *cmp = value_cmp(a, b, coll);
        return LDB_OK;
    }
    value x = value_copy(a), y = value_copy(b);
    int rc = sql_apply_affinity(&x, aff);
    if (rc == LDB_OK)
        rc = sql_apply_affinity(&y, aff);
    if (rc == LDB_OK)
        *cmp = value_cmp(&x, &y, coll);
    value_release(&x);
    value_release(&y);
    return rc;
}
