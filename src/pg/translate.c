/*
 * translate.c - a request (livedb.h, ldb_request_pred / _order) as one
 * PostgreSQL SELECT over the table's columns.
 *
 * A condition is translated exactly or replaced by TRUE (a superset:
 * livedb filters the rows itself), with the reason appended to `why` for
 * ldb_pg_explain. Exact means PostgreSQL selects the same rows livedb's
 * predicate would, under livedb's comparison rules:
 * - text compares bytewise (BINARY): ranges use COLLATE "C"; equality is
 *   bytewise under any deterministic collation. NOCASE and RTRIM are not
 *   translated;
 * - a column livedb holds as text but PostgreSQL orders otherwise (enums,
 *   dates, uuid, json...) is compared as its text; float4 through its
 *   text, as livedb holds it; boolean as 0/1; char(n) not at all (its
 *   padding compares differently);
 * - values of another type class than the column's (numbers < text <
 *   blob) decide the comparison by class alone.
 */
#include "pg/pg_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct pg_col *col_named(const pg_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return &t->cols[i];
    return NULL;
}

/* The column as PostgreSQL should compare it; NULL when it cannot. */
static bool col_expr(pg_buf *b, const struct pg_col *c, bool ordered)
{
    switch (c->kind) {
    case PGK_BPCHAR:
        return false;
    case PGK_BOOL:
        pg_buf_ident(b, c->name), pg_buf_puts(b, "::int");
        return true;
    case PGK_REAL4:
        pg_buf_ident(b, c->name), pg_buf_puts(b, "::text::float8");
        return true;
    case PGK_NUMERIC:
        pg_buf_ident(b, c->name), pg_buf_puts(b, "::float8");
        return true;
    case PGK_TEXTCAST:
        pg_buf_ident(b, c->name), pg_buf_puts(b, "::text");
        break;
    default:
        pg_buf_ident(b, c->name);
    }
    /* Bytewise, as livedb's BINARY: ranges always; equality too under a
     * nondeterministic collation (which finds 'ABC' = 'abc'). */
    if ((ordered || c->nondeterministic) && (c->kind == PGK_TEXT || c->kind == PGK_TEXTCAST))
        pg_buf_puts(b, " COLLATE \"C\"");
    return true;
}

static int col_class(int kind)
{
    return kind <= PGK_NUMERIC ? 1 : kind == PGK_BYTEA ? 3 : 2;
}

static int value_class(const ldb_value *v)
{
    int t = ldb_value_type(v);
    return t == LDB_INTEGER || t == LDB_REAL ? 1 : t == LDB_TEXT ? 2 : t == LDB_BLOB ? 3 : 0;
}

static const char *op_sql(int op)
{
    static const char *ops[] = { "", "=", "<>", "<", "<=", ">", ">=" };
    return op >= LDB_OP_EQ && op <= LDB_OP_GE ? ops[op] : "=";
}

static bool superset(pg_buf *out, pg_buf *why, const char *what, const char *col)
{
    pg_buf_puts(out, "TRUE");
    pg_buf_printf(why, "%s%s on \"%s\"", why->n ? "; " : "", what, col);
    return false;
}

enum { OPERAND_LITERAL, OPERAND_ALWAYS, OPERAND_NEVER, OPERAND_SUPERSET };

/* How number v compares with a numeric column under livedb's exact rules
 * (an integer and a real are never rounded): the literal to compare with
 * (op may change: x > 2.5 is x > 2), or the outcome for every non-NULL x,
 * or a superset where PostgreSQL would round. */
static int number_operand(int kind, const ldb_value *v, int *op, pg_buf *lit)
{
    bool col_int = kind == PGK_INT || kind == PGK_BOOL;
    if (ldb_value_type(v) == LDB_INTEGER) {
        int64_t i = ldb_value_int64(v);
        if (!col_int && (i > (1LL << 53) || i < -(1LL << 53)))
            return OPERAND_SUPERSET;             /* PostgreSQL makes it a double */
        pg_value_literal(lit, v);
        return OPERAND_LITERAL;
    }
    double d = ldb_value_double(v);
    if (!col_int) {
        pg_value_literal(lit, v);
        return OPERAND_LITERAL;
    }
    if (isnan(d))
        return OPERAND_SUPERSET;
    if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
        return pg_op_holds(*op, d > 0 ? -1 : 1) ? OPERAND_ALWAYS : OPERAND_NEVER;
    double f = floor(d);
    if (f != d) {
        if (*op == LDB_OP_EQ || *op == LDB_OP_NE)
            return *op == LDB_OP_EQ ? OPERAND_NEVER : OPERAND_ALWAYS;
        *op = *op == LDB_OP_LT || *op == LDB_OP_LE ? LDB_OP_LE : LDB_OP_GT;
    }
    pg_buf_printf(lit, "%lld", (long long)(int64_t)f);
    return OPERAND_LITERAL;
}

/* The operand for v against column c (classes decide across classes). */
static int operand(const struct pg_col *c, const ldb_value *v, int *op, pg_buf *lit)
{
    int cc = col_class(c->kind), vc = value_class(v);
    if (vc == 0)
        return OPERAND_NEVER;                    /* NULL compares to nothing */
    if (cc != vc)
        return pg_op_holds(*op, cc < vc ? -1 : 1) ? OPERAND_ALWAYS : OPERAND_NEVER;
    if (cc == 1)
        return number_operand(c->kind, v, op, lit);
    pg_value_literal(lit, v);
    return OPERAND_LITERAL;
}

static bool tr_cmp(const pg_table *t, const ldb_pred *p, pg_buf *out, pg_buf *why)
{
    const struct pg_col *c = col_named(t, ldb_pred_column(p));
    if (!c)
        return superset(out, why, "unknown column", ldb_pred_column(p));
    int kind = ldb_pred_kind(p), op = kind == LDB_PRED_IN ? LDB_OP_EQ : ldb_pred_op(p);
    bool ranged = op != LDB_OP_EQ && op != LDB_OP_NE;
    if (col_class(c->kind) == 2 && ldb_pred_collation(p) != LDB_COLL_BINARY)
        return superset(out, why, ldb_pred_collation(p) == LDB_COLL_NOCASE
                                      ? "NOCASE comparison" : "RTRIM comparison", c->name);
    pg_buf e = { 0 }, lit = { 0 };
    if (!col_expr(&e, c, ranged)) {
        pg_buf_free(&e);
        return superset(out, why, "char(n) comparison", c->name);
    }
    pg_buf lits = { 0 };
    int n = 0, how = OPERAND_NEVER;
    for (int i = 0; i < ldb_pred_count(p) && how != OPERAND_SUPERSET; i++) {
        lit.n = 0;
        how = operand(c, ldb_pred_value(p, i), &op, &lit);
        if (how == OPERAND_LITERAL)
            pg_buf_printf(&lits, n++ ? ", %s" : "%s", pg_buf_str(&lit));
    }
    bool exact = how != OPERAND_SUPERSET;
    if (!exact)
        superset(out, why, "integer/real comparison PostgreSQL would round", c->name);
    else if (n && kind == LDB_PRED_IN)
        pg_buf_printf(out, "%s IN (%s)", pg_buf_str(&e), pg_buf_str(&lits));
    else if (n)
        pg_buf_printf(out, "%s %s %s", pg_buf_str(&e), op_sql(op), pg_buf_str(&lits));
    else if (how == OPERAND_ALWAYS)              /* a CMP only: IN is equality */
        pg_buf_printf(out, "%s IS NOT NULL", pg_buf_str(&e));
    else
        pg_buf_puts(out, "FALSE");
    out->oom |= lits.oom || lit.oom;
    pg_buf_free(&lits);
    pg_buf_free(&e);
    pg_buf_free(&lit);
    return exact;
}

static bool tr_pred(const pg_table *t, const ldb_pred *p, pg_buf *out, pg_buf *why)
{
    int kind = ldb_pred_kind(p);
    if (kind == LDB_PRED_ISNULL || kind == LDB_PRED_NOTNULL) {
        const struct pg_col *c = col_named(t, ldb_pred_column(p));
        if (!c)
            return superset(out, why, "unknown column", ldb_pred_column(p));
        pg_buf_ident(out, c->name);
        pg_buf_puts(out, kind == LDB_PRED_ISNULL ? " IS NULL" : " IS NOT NULL");
        return true;
    }
    if (kind == LDB_PRED_CMP || kind == LDB_PRED_IN)
        return tr_cmp(t, p, out, why);
    /* AND keeps what translates; an OR with an untranslated branch is
     * TRUE as a whole. */
    bool and = kind == LDB_PRED_AND, exact = true;
    size_t start = out->n;
    pg_buf_puts(out, "(");
    for (int i = 0; i < ldb_pred_count(p); i++) {
        if (i)
            pg_buf_puts(out, and ? " AND " : " OR ");
        exact &= tr_pred(t, ldb_pred_child(p, i), out, why);
    }
    pg_buf_puts(out, ")");
    if (!and && !exact) {
        out->n = start;
        pg_buf_puts(out, "TRUE");
    }
    return exact || and;
}

void pg_select_from(const pg_table *t, pg_buf *q)
{
    pg_buf_puts(q, "SELECT ");
    for (int i = 0; i < t->ncols; i++) {
        if (i)
            pg_buf_puts(q, ", ");
        pg_buf_ident(q, t->cols[i].name);
    }
    pg_buf_printf(q, " FROM %s WHERE ", t->pgname);
}

char *pg_translate_request(const pg_table *t, ldb_request *r, pg_buf *why)
{
    pg_buf q = { 0 };
    pg_select_from(t, &q);
    const ldb_pred *p = ldb_request_pred(r);
    size_t exact = why->n;
    if (p)
        tr_pred(t, p, &q, why);
    else
        pg_buf_puts(&q, "TRUE");
    const char *column;
    int desc;
    int64_t limit;
    /* A page's LIMIT counts matching rows: over a superset PostgreSQL's
     * first n rows may hold fewer, so the whole superset is loaded. */
    if (ldb_request_order(r, &column, &desc, &limit) && why->n != exact)
        pg_buf_puts(why, "; order and limit dropped");
    else if (ldb_request_order(r, &column, &desc, &limit)) {
        const struct pg_col *c = col_named(t, column);
        pg_buf e = { 0 };
        if (c && col_expr(&e, c, true))
            pg_buf_printf(&q, " ORDER BY %s %s LIMIT %lld", pg_buf_str(&e),
                          desc ? "DESC NULLS LAST" : "ASC NULLS FIRST", (long long)limit);
        else
            superset(&e, why, "order not translated", column);
        pg_buf_free(&e);
    }
    if (q.oom) {
        pg_buf_free(&q);
        return NULL;
    }
    return q.p;
}
