/*
 * func.c - the function registry (func_find), the aggregate entries that
 * point at src/value/aggregate.h, and the scalar functions that are not
 * about text: numbers, NULL handling, types, and the non-deterministic
 * ones that read the database's eval_env. Text functions are in
 * func_text.c.
 */
#include "sql/func.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/sqlvalue.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- NULL handling (lazy: later arguments are evaluated only if needed) ------------ */

static int fn_coalesce(struct eval_ctx *cx, const expr *call, value *out)
{
    for (uint32_t i = 0; i < call->nargs; i++) {
        int rc = expr_eval(call->args[i], cx, out);
        if (rc || !value_is_null(out))
            return rc;
    }
    return LDB_OK;
}

static int fn_iif(struct eval_ctx *cx, const expr *call, value *out)
{
    int t;
    int rc = expr_eval_truth(call->args[0], cx, &t);
    if (rc)
        return rc;
    return expr_eval(call->args[t == 1 ? 1 : 2], cx, out);
}

static int fn_nullif(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    int c = 1;
    if (!value_is_null(&a[0]) && !value_is_null(&a[1])) {
        int rc = sqlv_compare(&a[0], &a[1], COL_ANY, LDB_COLL_BINARY, &c);
        if (rc)
            return rc;
    }
    *out = c == 0 ? value_null() : value_copy(&a[0]);
    return LDB_OK;
}

/* ---- numbers ------------------------------------------------------------------------- */

static int fn_abs(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    if (value_is_null(&a[0])) {
        *out = value_null();
        return LDB_OK;
    }
    value x = sqlv_numeric(&a[0]);
    if (value_type(&x) == LDB_REAL || value_type(&a[0]) == LDB_TEXT ||
        value_type(&a[0]) == LDB_BLOB) {
        /* text and blobs give REAL, as in SQLite (abs('-5') is 5.0) */
        *out = value_real(fabs(sqlv_double(&x)));
        return LDB_OK;
    }
    if (x.h.u.i == INT64_MIN)
        return sqlv_error(cx->err, LDB_ERROR, "integer overflow");
    *out = value_int(x.h.u.i < 0 ? -x.h.u.i : x.h.u.i);
    return LDB_OK;
}

/*
 * SQLite's round (3.40): n == 0 rounds half away from zero; otherwise
 * printf("%.*f"), which adds half a unit of the last kept digit plus a
 * tiny relative bias (so that 1.005 rounds to 1.01, as a reader expects),
 * in long double, and then keeps 16 significant digits. We do the same
 * steps on an exact decimal expansion.
 */
static double round_digits(double x, int64_t digits)
{
    digits = digits < 0 ? 0 : digits > 30 ? 30 : digits;
    double ax = fabs(x);
    if (!isfinite(x) || ax >= 4503599627370496.0) /* 2^52: no fraction left */
        return x;
    if (digits == 0) {
        double r = (double)(int64_t)(ax + 0.5);
        return x < 0 ? -r : r;
    }
    long double rounder = 0.5L;
    for (int64_t i = 0; i < digits; i++)
        rounder *= 0.1L;
    int ex;
    frexp(ax, &ex);
    if (digits + (ex - 1) / 3 < 15)
        rounder += (long double)ax * 3e-16L;
    char buf[160];
    snprintf(buf, sizeof buf, "%.*Lf", (int)digits + 24, (long double)ax + rounder);
    int sig = 0;
    for (char *c = buf; *c; c++) {
        if (*c < '0' || *c > '9')
            continue;
        if (sig >= 16)
            *c = '0';
        else if (sig || *c != '0')
            sig++;
    }
    char *dot = strchr(buf, '.');
    if (dot)
        dot[1 + digits] = '\0';
    double r = strtod(buf, NULL);
    return x < 0 ? -r : r;
}

static int fn_round(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    int64_t digits = 0;
    if (value_is_null(&a[0]) || (n == 2 && !sqlv_int64(&a[1], &digits))) {
        *out = value_null();
        return LDB_OK;
    }
    *out = value_real(round_digits(sqlv_double(&a[0]), digits));
    return LDB_OK;
}

static int fn_sign(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    if (value_is_null(&a[0])) {
        *out = value_null();
        return LDB_OK;
    }
    double d = sqlv_double(&a[0]);
    *out = isnan(d) ? value_null() : value_int((d > 0) - (d < 0));
    return LDB_OK;
}

/* Scalar min/max: NULL when any argument is NULL (SQLite). */
static int extreme(const value *a, uint32_t n, value *out, int sign)
{
    uint32_t best = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (value_is_null(&a[i])) {
            *out = value_null();
            return LDB_OK;
        }
        if (i && value_cmp(&a[i], &a[best], LDB_COLL_BINARY) * sign > 0)
            best = i;
    }
    *out = value_copy(&a[best]);
    return LDB_OK;
}

static int fn_max(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return extreme(a, n, out, 1);
}

static int fn_min(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return extreme(a, n, out, -1);
}

static int fn_typeof(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    static const char *const names[] = { "null", "boolean", "integer", "real",
                                         "text", "blob",    "array",   "record" };
    const char *s = names[value_type(&a[0])];
    return value_text(out, s, strlen(s));
}

static int fn_array(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return value_array(out, a, n);
}

/* ---- non-deterministic ---------------------------------------------------------------- */

static int no_env(struct eval_ctx *cx, const char *name)
{
    return sqlv_error(cx->err, LDB_ERROR, "%s() cannot be evaluated here", name);
}

static uint64_t next_random(struct eval_env *env)
{
    /* xorshift128+ */
    uint64_t s1 = env->rng[0];
    const uint64_t s0 = env->rng[1];
    env->rng[0] = s0;
    s1 ^= s1 << 23;
    env->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return env->rng[1] + s0;
}

static int fn_random(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    if (!cx->env)
        return no_env(cx, "random");
    *out = value_int((int64_t)next_random(cx->env));
    return LDB_OK;
}

static int fn_randomblob(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    int64_t len;
    if (!cx->env)
        return no_env(cx, "randomblob");
    if (!sqlv_int64(&a[0], &len) || len < 1)
        len = 1;
    if (len > VALUE_MAX_LEN)
        return sqlv_error(cx->err, LDB_ERROR, "string or blob too big");
    unsigned char *buf = mem_alloc((size_t)len);
    if (!buf)
        return LDB_NOMEM;
    for (int64_t i = 0; i < len; i++)
        buf[i] = (unsigned char)next_random(cx->env);
    int rc = value_blob(out, buf, (size_t)len);
    mem_free(buf);
    return rc;
}

static int fn_changes(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    if (!cx->env)
        return no_env(cx, "changes");
    *out = value_int(cx->env->changes);
    return LDB_OK;
}

static int fn_total_changes(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    if (!cx->env)
        return no_env(cx, "total_changes");
    *out = value_int(cx->env->total_changes);
    return LDB_OK;
}

static int fn_last_insert_rowid(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    if (!cx->env)
        return no_env(cx, "last_insert_rowid");
    *out = value_int(cx->env->last_insert_rowid);
    return LDB_OK;
}

static int now_text(value *out, const char *fmt)
{
    time_t t = time(NULL);
    struct tm tm;
    char buf[32];
    if (!gmtime_r(&t, &tm))
        return LDB_ERROR;
    size_t len = strftime(buf, sizeof buf, fmt, &tm);
    return value_text(out, buf, len);
}

static int fn_current_date(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return now_text(out, "%Y-%m-%d");
}

static int fn_current_time(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return now_text(out, "%H:%M:%S");
}

static int fn_current_timestamp(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    return now_text(out, "%Y-%m-%d %H:%M:%S");
}
/* Any value as JSON text (value_format_json): SQLite's json() parses
 * text, so this one has its own name. */
static int fn_to_json(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    strbuf sb = STRBUF_INIT;
    value_format_json(&sb, &a[0]);
    int rc = sb_error(&sb);
    if (rc == LDB_OK)
        rc = value_text(out, sb_str(&sb), sb.len);
    sb_free(&sb);
    return rc;
}

/* record(name_1, value_1, ...): the names are TEXT constants the binder
 * gives (ARRAY (subquery) of several columns). */
static int fn_record(struct eval_ctx *cx, const value *a, uint32_t n, value *out)
{
    uint32_t nf = n / 2;
    value *names = mem_alloc(2 * (size_t)nf * sizeof *names);
    if (!names)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < nf; i++) {
        names[i] = a[2 * i]; /* borrowed: value_record retains */
        names[nf + i] = a[2 * i + 1];
    }
    int rc = value_record(out, names, names + nf, nf);
    mem_free(names);
    return rc;
}

/* ---- the registry --------------------------------------------------------------------- */

#define DET FUNC_DETERMINISTIC
#define AGG (FUNC_AGGREGATE | FUNC_DETERMINISTIC)

static const struct func_def core_defs[] = {
    { "coalesce", 2, -1, DET | FUNC_LAZY | FUNC_TYPE_OF_ARGS, COL_ANY, NULL, fn_coalesce, NULL },
    { "ifnull", 2, 2, DET | FUNC_LAZY | FUNC_TYPE_OF_ARGS, COL_ANY, NULL, fn_coalesce, NULL },
    { "iif", 3, 3, DET | FUNC_LAZY, COL_ANY, NULL, fn_iif, NULL },
    { "nullif", 2, 2, DET, COL_ANY, fn_nullif, NULL, NULL },
    { "abs", 1, 1, DET | FUNC_TYPE_OF_ARGS | FUNC_NUMERIC, COL_ANY, fn_abs, NULL, NULL },
    { "round", 1, 2, DET, COL_REAL, fn_round, NULL, NULL },
    { "sign", 1, 1, DET, COL_INTEGER, fn_sign, NULL, NULL },
    { "max", 2, -1, DET | FUNC_TYPE_OF_ARGS, COL_ANY, fn_max, NULL, NULL },
    { "min", 2, -1, DET | FUNC_TYPE_OF_ARGS, COL_ANY, fn_min, NULL, NULL },
    { "typeof", 1, 1, DET, COL_TEXT, fn_typeof, NULL, NULL },
    { "array", 0, -1, DET, COL_ANY, fn_array, NULL, NULL },
    { "to_json", 1, 1, DET, COL_TEXT, fn_to_json, NULL, NULL },
    { "random", 0, 0, 0, COL_INTEGER, fn_random, NULL, NULL },
    { "randomblob", 1, 1, 0, COL_BLOB, fn_randomblob, NULL, NULL },
    { "changes", 0, 0, 0, COL_INTEGER, fn_changes, NULL, NULL },
    { "total_changes", 0, 0, 0, COL_INTEGER, fn_total_changes, NULL, NULL },
    { "last_insert_rowid", 0, 0, 0, COL_INTEGER, fn_last_insert_rowid, NULL, NULL },
    { "current_date", 0, 0, 0, COL_TEXT, fn_current_date, NULL, NULL },
    { "current_time", 0, 0, 0, COL_TEXT, fn_current_time, NULL, NULL },
    { "current_timestamp", 0, 0, 0, COL_TEXT, fn_current_timestamp, NULL, NULL },
    /* aggregates */
    { "count", 0, 0, AGG, COL_INTEGER, NULL, NULL, &agg_count_star },
    { "count", 1, 1, AGG, COL_INTEGER, NULL, NULL, &agg_count },
    { "sum", 1, 1, AGG, COL_ANY, NULL, NULL, &agg_sum },
    { "total", 1, 1, AGG, COL_REAL, NULL, NULL, &agg_total },
    { "avg", 1, 1, AGG, COL_REAL, NULL, NULL, &agg_avg },
    { "min", 1, 1, AGG, COL_ANY, NULL, NULL, &agg_min },
    { "max", 1, 1, AGG, COL_ANY, NULL, NULL, &agg_max },
    { "group_concat", 1, 2, AGG, COL_TEXT, NULL, NULL, &agg_string_agg },
    { "string_agg", 2, 2, AGG, COL_TEXT, NULL, NULL, &agg_string_agg },
};

const struct func_def func_array_agg = { "array_agg", 1, 1, AGG, COL_ANY, NULL, NULL,
                                         &agg_array_agg };
const struct func_def func_record = { "record", 2, -1, DET, COL_ANY, fn_record, NULL, NULL };

const struct func_def func_count_star = { "count", 0, 0, AGG, COL_INTEGER, NULL, NULL,
                                          &agg_count_star };

static const struct func_def *search(const struct func_def *defs, uint32_t n,
                                     const char *name, uint32_t nargs, bool *known)
{
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(defs[i].name, name) != 0)
            continue;
        *known = true;
        if (nargs >= (uint32_t)defs[i].min_args &&
            (defs[i].max_args < 0 || nargs <= (uint32_t)defs[i].max_args))
            return &defs[i];
    }
    return NULL;
}

const struct func_def *func_registry_find(const struct func_registry *r, const char *name,
                                          uint32_t nargs, bool *name_known)
{
    for (size_t i = r ? r->defs.len : 0; i-- > 0;) {
        const struct func_def *f = r->defs.data[i];
        if (strcmp(f->name, name) != 0)
            continue;
        *name_known = true;
        if (nargs >= (uint32_t)f->min_args && (f->max_args < 0 || nargs <= (uint32_t)f->max_args))
            return f;
    }
    return NULL;
}

const struct func_def *func_find(const char *name, uint32_t nargs, bool *name_known)
{
    bool known = false;
    const struct func_def *f =
        search(core_defs, sizeof core_defs / sizeof core_defs[0], name, nargs, &known);
    if (!f)
        f = search(func_text_defs, func_text_count, name, nargs, &known);
    if (name_known)
        *name_known = known;
    return f;
}
