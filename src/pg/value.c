/*
 * value.c - cells in PostgreSQL's text format: converting them to livedb
 * values (sync transactions, statement parameters), encoding a row's
 * primary key, testing a row against a request's predicate, and writing
 * livedb values as PostgreSQL literals.
 *
 * The predicate test is the stream's filter: it may say yes to a row a
 * request does not want (a superset is always allowed), never no to one
 * it wants. So anything it cannot decide (a TOASTed value the stream did
 * not resend, an unknown column) counts as a match.
 */
#include "pg/pg_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* bytea's hex output "\x0a1b..." into malloc'd bytes (*n); NULL on NOMEM
 * or a malformed value. */
static unsigned char *bytea_decode(const pg_cell *c, int *n)
{
    if (c->len < 2 || c->p[0] != '\\' || c->p[1] != 'x' || (c->len - 2) % 2)
        return NULL;
    *n = (c->len - 2) / 2;
    unsigned char *out = malloc(*n ? (size_t)*n : 1);
    for (int i = 0; out && i < *n; i++) {
        int hi = hexval(c->p[2 + 2 * i]), lo = hexval(c->p[3 + 2 * i]);
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return out;
}

static bool kind_numeric(int kind) { return kind <= PGK_NUMERIC; }

/* A cell's number; libpq's text is NUL-terminated. */
static double cell_double(const pg_cell *c) { return strtod(c->p, NULL); }
static int64_t cell_int(int kind, const pg_cell *c)
{
    return kind == PGK_BOOL ? c->p[0] == 't' : strtoll(c->p, NULL, 10);
}

int pg_cell_sync(ldb_sync *s, int col, int kind, const pg_cell *c)
{
    if (!c->p)
        return ldb_sync_null(s, col);
    switch (kind) {
    case PGK_INT: case PGK_BOOL:
        return ldb_sync_int64(s, col, cell_int(kind, c));
    case PGK_REAL: case PGK_REAL4: case PGK_NUMERIC:
        return ldb_sync_double(s, col, cell_double(c));
    case PGK_BYTEA: {
        int n;
        unsigned char *b = bytea_decode(c, &n);
        if (!b)
            return LDB_NOMEM;
        int rc = ldb_sync_blob(s, col, b, n);
        free(b);
        return rc;
    }
    default:
        return ldb_sync_text(s, col, c->p, c->len);
    }
}

int pg_cell_bind(ldb_stmt *st, int i, int kind, const pg_cell *c)
{
    if (!c->p)
        return ldb_bind_null(st, i);
    switch (kind) {
    case PGK_INT: case PGK_BOOL:
        return ldb_bind_int64(st, i, cell_int(kind, c));
    case PGK_REAL: case PGK_REAL4: case PGK_NUMERIC:
        return ldb_bind_double(st, i, cell_double(c));
    case PGK_BYTEA: {
        int n;
        unsigned char *b = bytea_decode(c, &n);
        if (!b)
            return LDB_NOMEM;
        int rc = ldb_bind_blob(st, i, b, n);
        free(b);
        return rc;
    }
    default:
        return ldb_bind_text(st, i, c->p, c->len);
    }
}

/* ---- the filter ---- */

/* i <=> d, exactly (no rounding of i to a double). */
int pg_int_real_cmp(int64_t i, double d)
{
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    double f = floor(d);
    int64_t fi = (int64_t)f;
    if (i != fi)
        return i < fi ? -1 : 1;
    return f < d ? -1 : 0;               /* i == floor(d) */
}

static int class_of(int ldb_type)
{
    return ldb_type == LDB_INTEGER || ldb_type == LDB_REAL ? 1
         : ldb_type == LDB_TEXT ? 2 : ldb_type == LDB_BLOB ? 3 : 0;
}

static int text_cmp(const char *a, size_t na, const char *b, size_t nb, int coll)
{
    if (coll == LDB_COLL_RTRIM) {
        while (na && a[na - 1] == ' ')
            na--;
        while (nb && b[nb - 1] == ' ')
            nb--;
    }
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        int x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (coll == LDB_COLL_NOCASE) {
            x = x >= 'A' && x <= 'Z' ? x + 32 : x;
            y = y >= 'A' && y <= 'Z' ? y + 32 : y;
        }
        if (x != y)
            return x < y ? -1 : 1;
    }
    return na < nb ? -1 : na > nb;
}

/* Compares a non-NULL cell with a non-NULL value in livedb's order
 * (numbers < text < blob). *known is false when it cannot tell. */
static int cell_cmp(int kind, const pg_cell *c, const ldb_value *v, int coll, bool *known)
{
    int cc = kind_numeric(kind) ? 1 : kind == PGK_BYTEA ? 3 : 2;
    int vc = class_of(ldb_value_type(v));
    *known = vc != 0;
    if (cc != vc)
        return cc < vc ? -1 : 1;
    if (cc == 1) {
        bool ci = kind == PGK_INT || kind == PGK_BOOL, vi = ldb_value_type(v) == LDB_INTEGER;
        if (ci && vi) {
            int64_t a = cell_int(kind, c), b = ldb_value_int64(v);
            return a < b ? -1 : a > b;
        }
        if (ci || vi) {                   /* an integer and a real: exactly */
            int64_t i = ci ? cell_int(kind, c) : ldb_value_int64(v);
            double d = ci ? ldb_value_double(v) : cell_double(c);
            if (isnan(d))
                *known = false;
            int r = pg_int_real_cmp(i, d);
            return ci ? r : -r;
        }
        double a = cell_double(c), b = ldb_value_double(v);
        if (isnan(a) || isnan(b))
            *known = false;
        return a < b ? -1 : a > b;
    }
    size_t vn;
    const char *vs = ldb_value_text(v, &vn);
    if (cc == 2)
        return text_cmp(c->p, (size_t)c->len, vs, vn, coll);
    int n;
    unsigned char *b = bytea_decode(c, &n);
    if (!b) {
        *known = false;
        return 0;
    }
    int r = text_cmp((const char *)b, (size_t)n, vs, vn, LDB_COLL_BINARY);
    free(b);
    return r;
}

static int col_index(const pg_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

bool pg_op_holds(int op, int cmp)
{
    switch (op) {
    case LDB_OP_EQ: return cmp == 0;
    case LDB_OP_NE: return cmp != 0;
    case LDB_OP_LT: return cmp < 0;
    case LDB_OP_LE: return cmp <= 0;
    case LDB_OP_GT: return cmp > 0;
    default: return cmp >= 0;
    }
}

bool pg_cell_matches(const pg_table *t, const pg_cell *row, const ldb_pred *p)
{
    if (!p)
        return true;
    int kind = ldb_pred_kind(p), n = ldb_pred_count(p);
    if (kind == LDB_PRED_AND || kind == LDB_PRED_OR) {
        for (int i = 0; i < n; i++)
            if (pg_cell_matches(t, row, ldb_pred_child(p, i)) != (kind == LDB_PRED_AND))
                return kind == LDB_PRED_OR;
        return kind == LDB_PRED_AND;
    }
    int col = col_index(t, ldb_pred_column(p));
    if (col < 0 || row[col].unchanged)
        return true;
    const pg_cell *c = &row[col];
    if (kind == LDB_PRED_ISNULL || kind == LDB_PRED_NOTNULL)
        return (c->p == NULL) == (kind == LDB_PRED_ISNULL);
    if (!c->p)
        return false;
    int coll = ldb_pred_collation(p);
    for (int i = 0; i < n; i++) {
        const ldb_value *v = ldb_pred_value(p, i);
        if (ldb_value_type(v) == LDB_NULL)
            continue;
        bool known;
        int cmp = cell_cmp(t->cols[col].kind, c, v, coll, &known);
        if (!known || pg_op_holds(kind == LDB_PRED_IN ? LDB_OP_EQ : ldb_pred_op(p), cmp))
            return true;
    }
    return false;
}

/* ---- literals ---- */

/* v as a typed PostgreSQL literal, compared with a column of the same
 * type class (the caller checked). */
void pg_value_literal(pg_buf *b, const ldb_value *v)
{
    size_t n;
    const char *s;
    switch (ldb_value_type(v)) {
    case LDB_INTEGER:
        pg_buf_printf(b, "%lld", (long long)ldb_value_int64(v));
        break;
    case LDB_REAL: {
        double d = ldb_value_double(v);
        if (isnan(d))
            pg_buf_puts(b, "'NaN'::float8");
        else if (isinf(d))
            pg_buf_puts(b, d > 0 ? "'Infinity'::float8" : "'-Infinity'::float8");
        else
            pg_buf_printf(b, "'%.17g'::float8", d);
        break;
    }
    case LDB_TEXT:
        s = ldb_value_text(v, &n);
        pg_buf_literal(b, s, n);
        break;
    case LDB_BLOB:
        s = ldb_value_text(v, &n);
        pg_buf_bytea(b, s, n);
        pg_buf_puts(b, "::bytea");
        break;
    default:
        pg_buf_puts(b, "NULL");
    }
}

/* ---- keys and the local table ---- */

/* Keys are encoded by value, so that the stream's text and a livedb value
 * of the same key agree: a number as an int64 when it is one exactly,
 * else as a double; text and blobs as their bytes. */
static void key_number(pg_buf *key, double d, int64_t i, bool is_int)
{
    if (!is_int && d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        i = (int64_t)d, is_int = true;
    pg_buf_add(key, is_int ? "i" : "d", 1);
    if (is_int)
        pg_buf_add(key, (const char *)&i, sizeof i);
    else
        pg_buf_add(key, (const char *)&d, sizeof d);
}

static void key_bytes(pg_buf *key, const char *p, size_t n)
{
    pg_buf_add(key, "s", 1);
    pg_buf_add(key, (const char *)&n, sizeof n);
    pg_buf_add(key, p, n);
}

size_t pg_row_key(const pg_table *t, const pg_cell *row, pg_buf *key)
{
    key->n = 0;
    for (int i = 0; i < t->npk; i++) {
        const pg_cell *c = &row[t->pk[i]];
        int kind = t->cols[t->pk[i]].kind;
        if (!c->p) {
            pg_buf_add(key, "n", 1);
        } else if (kind == PGK_INT || kind == PGK_BOOL) {
            key_number(key, 0, cell_int(kind, c), true);
        } else if (kind_numeric(kind)) {
            key_number(key, cell_double(c), 0, false);
        } else if (kind == PGK_BYTEA) {
            int n = 0;
            unsigned char *b = bytea_decode(c, &n);
            if (!b)
                key->oom = true;
            else
                key_bytes(key, (const char *)b, (size_t)n);
            free(b);
        } else {
            key_bytes(key, c->p, (size_t)c->len);
        }
    }
    return key->n;
}

size_t pg_value_key(const pg_table *t, const ldb_value *const *vals, pg_buf *key)
{
    key->n = 0;
    for (int i = 0; i < t->npk; i++) {
        const ldb_value *v = vals[i];
        size_t n;
        const char *p;
        switch (v ? ldb_value_type(v) : LDB_NULL) {
        case LDB_NULL: pg_buf_add(key, "n", 1); break;
        case LDB_INTEGER: key_number(key, 0, ldb_value_int64(v), true); break;
        case LDB_REAL: key_number(key, ldb_value_double(v), 0, false); break;
        default:
            p = ldb_value_text(v, &n);
            key_bytes(key, p, n);
        }
    }
    return key->n;
}

static int get_bind(pg_table *t, const pg_cell *row)
{
    ldb_reset(t->get);
    for (int i = 0; i < t->npk; i++) {
        int rc = pg_cell_bind(t->get, i + 1, t->cols[t->pk[i]].kind, &row[t->pk[i]]);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

int pg_row_held(pg_table *t, const pg_cell *row)
{
    int rc = get_bind(t, row);
    if (rc)
        return -rc;
    rc = ldb_step(t->get);
    ldb_reset(t->get);
    return rc == LDB_ROW ? 1 : rc == LDB_DONE ? 0 : -rc;
}

/* Sets s's columns from the local row of row's key (for the columns the
 * stream left unchanged). 1 when the row is held, 0 when not. */
int pg_row_read(pg_table *t, const pg_cell *row, ldb_sync *s)
{
    int rc = get_bind(t, row);
    if (rc)
        return -rc;
    rc = ldb_step(t->get);
    if (rc != LDB_ROW) {
        ldb_reset(t->get);
        return rc == LDB_DONE ? 0 : -rc;
    }
    const ldb_row *r = ldb_stmt_row(t->get);
    for (int i = 0; i < t->ncols && rc == LDB_ROW; i++) {
        if (!row[i].unchanged)
            continue;
        size_t n;
        const char *p;
        switch (ldb_row_type(r, i)) {
        case LDB_NULL: rc = ldb_sync_null(s, i) ? -1 : LDB_ROW; break;
        case LDB_INTEGER: rc = ldb_sync_int64(s, i, ldb_row_int64(r, i)) ? -1 : LDB_ROW; break;
        case LDB_REAL: rc = ldb_sync_double(s, i, ldb_row_double(r, i)) ? -1 : LDB_ROW; break;
        case LDB_BLOB:
            p = ldb_row_text(r, i, &n);
            rc = ldb_sync_blob(s, i, p, (int)n) ? -1 : LDB_ROW;
            break;
        default:
            p = ldb_row_text(r, i, &n);
            rc = ldb_sync_text(s, i, p, (int)n) ? -1 : LDB_ROW;
        }
    }
    ldb_reset(t->get);
    return rc == LDB_ROW ? 1 : -LDB_NOMEM;
}
