/*
 * expr.c - walks over bound expressions: structural equality (GROUP BY
 * matching, ORDER BY matching, aggregate deduplication, captures),
 * constancy, the columns an expression reads, and the EXPLAIN text.
 */
#include "sql/expr.h"

#include "base/strbuf.h"
#include "sql/func.h"
#include "sql/plan.h"

#include <string.h>

const char *expr_op_name(enum expr_op op)
{
    static const char *const names[] = {
        [EOP_NEG] = "-",       [EOP_BITNOT] = "~",      [EOP_NOT] = "NOT",
        [EOP_ISNULL] = "IS NULL", [EOP_NOTNULL] = "IS NOT NULL",
        [EOP_ADD] = "+",       [EOP_SUB] = "-",         [EOP_MUL] = "*",
        [EOP_DIV] = "/",       [EOP_MOD] = "%",         [EOP_CONCAT] = "||",
        [EOP_BITAND] = "&",    [EOP_BITOR] = "|",       [EOP_LSHIFT] = "<<",
        [EOP_RSHIFT] = ">>",   [EOP_EQ] = "=",          [EOP_NE] = "!=",
        [EOP_LT] = "<",        [EOP_LE] = "<=",         [EOP_GT] = ">",
        [EOP_GE] = ">=",       [EOP_IS] = "IS",         [EOP_IS_NOT] = "IS NOT",
        [EOP_AND] = "AND",     [EOP_OR] = "OR",         [EOP_LIKE] = "LIKE",
        [EOP_GLOB] = "GLOB",
    };
    return (unsigned)op < sizeof names / sizeof names[0] && names[op] ? names[op] : "?";
}

bool expr_equal(const expr *a, const expr *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind || a->op != b->op || a->nargs != b->nargs ||
        a->flags != b->flags || a->coll != b->coll || a->csrc != b->csrc || a->aff != b->aff)
        return false;
    switch ((enum expr_kind)a->kind) {
    case EXPR_CONST:
        if (a->type != b->type || !value_identical(&a->u.v, &b->u.v))
            return false;
        break;
    case EXPR_COLUMN:
    case EXPR_OUTER:
    case EXPR_PARAM:
    case EXPR_FIELD:
        if (a->u.index != b->u.index)
            return false;
        break;
    case EXPR_CAST:
        if (a->u.cast_to != b->u.cast_to)
            return false;
        break;
    case EXPR_CALL:
        if (a->u.fn != b->u.fn)
            return false;
        break;
    case EXPR_CASE:
        if (a->u.c.has_base != b->u.c.has_base || a->u.c.has_else != b->u.c.has_else ||
            (a->u.c.has_base &&
             memcmp(a->u.c.when_coll, b->u.c.when_coll, (a->nargs - 1 - a->u.c.has_else) / 2)))
            return false;
        break;
    case EXPR_BETWEEN:
        if (a->aff2 != b->aff2 || a->u.coll_hi != b->u.coll_hi)
            return false;
        break;
    case EXPR_SUBQUERY:
        return false; /* distinct nodes are distinct subqueries */
    default:
        break;
    }
    for (uint32_t i = 0; i < a->nargs; i++)
        if (!expr_equal(a->args[i], b->args[i]))
            return false;
    return true;
}

bool expr_is_constant(const expr *e)
{
    switch ((enum expr_kind)e->kind) {
    case EXPR_CONST:
        return true;
    case EXPR_COLUMN:
    case EXPR_OUTER:
    case EXPR_PARAM:
    case EXPR_SUBQUERY:
        return false;
    case EXPR_CALL:
        if (func_is_aggregate(e->u.fn) || !func_is_deterministic(e->u.fn))
            return false;
        break;
    default:
        break;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!expr_is_constant(e->args[i]))
            return false;
    return true;
}

/* ---- printing ------------------------------------------------------------------------ */

struct printer {
    strbuf *sb;
    const char *const *names;
    uint32_t nnames;
};

static void print(struct printer *p, const expr *e);

static void print_args(struct printer *p, const expr *e, uint32_t from, const char *sep)
{
    for (uint32_t i = from; i < e->nargs; i++) {
        if (i > from)
            sb_puts(p->sb, sep);
        print(p, e->args[i]);
    }
}

static void print_value(strbuf *sb, const value *v)
{
    if (value_type(v) == LDB_TEXT) {
        size_t n;
        const char *s = value_bytes(v, &n);
        sb_putc(sb, '\'');
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '\'')
                sb_putc(sb, '\'');
            sb_putc(sb, s[i]);
        }
        sb_putc(sb, '\'');
        return;
    }
    value_format(sb, v);
}

static const char *type_word(enum col_type t)
{
    return col_type_name(t);
}

static void print_case(struct printer *p, const expr *e)
{
    uint32_t k = 0;
    sb_puts(p->sb, "CASE");
    if (e->u.c.has_base) {
        sb_putc(p->sb, ' ');
        print(p, e->args[k++]);
    }
    uint32_t end = e->nargs - e->u.c.has_else;
    for (; k < end; k += 2) {
        sb_puts(p->sb, " WHEN ");
        print(p, e->args[k]);
        sb_puts(p->sb, " THEN ");
        print(p, e->args[k + 1]);
    }
    if (e->u.c.has_else) {
        sb_puts(p->sb, " ELSE ");
        print(p, e->args[e->nargs - 1]);
    }
    sb_puts(p->sb, " END");
}

static void print_subquery(struct printer *p, const expr *e)
{
    static const char *const kinds[] = { "", "EXISTS ", "", "LIVE " };
    if (e->u.sq.kind == SUBQ_IN) {
        print(p, e->args[0]);
        sb_puts(p->sb, " IN ");
    }
    sb_printf(p->sb, "%s(subquery %u", kinds[e->u.sq.kind], e->u.sq.id + 1);
    for (uint32_t i = 0; i < e->u.sq.ncaptures; i++) {
        sb_puts(p->sb, i ? ", " : " capturing ");
        print(p, e->u.sq.captures[i]);
    }
    sb_putc(p->sb, ')');
}

static void print(struct printer *p, const expr *e)
{
    strbuf *sb = p->sb;
    bool neg = (e->flags & EXPR_NEGATED) != 0;
    switch ((enum expr_kind)e->kind) {
    case EXPR_CONST: print_value(sb, &e->u.v); break;
    case EXPR_COLUMN:
        if (p->names && e->u.index < p->nnames && p->names[e->u.index] &&
            p->names[e->u.index][0])
            sb_puts(sb, p->names[e->u.index]);
        else
            sb_printf(sb, "#%u", e->u.index);
        break;
    case EXPR_OUTER: sb_printf(sb, "outer.%u", e->u.index); break;
    case EXPR_PARAM: sb_printf(sb, "?%u", e->u.index); break;
    case EXPR_UNARY:
        sb_putc(sb, '(');
        if (e->op == EOP_ISNULL || e->op == EOP_NOTNULL) {
            print(p, e->args[0]);
            sb_printf(sb, " %s", expr_op_name((enum expr_op)e->op));
        } else {
            sb_puts(sb, expr_op_name((enum expr_op)e->op));
            sb_puts(sb, e->op == EOP_NOT ? " " : "");
            print(p, e->args[0]);
        }
        sb_putc(sb, ')');
        break;
    case EXPR_BINARY:
        sb_putc(sb, '(');
        print(p, e->args[0]);
        sb_printf(sb, " %s ", expr_op_name((enum expr_op)e->op));
        print(p, e->args[1]);
        sb_putc(sb, ')');
        break;
    case EXPR_BETWEEN:
        sb_putc(sb, '(');
        print(p, e->args[0]);
        sb_puts(sb, neg ? " NOT BETWEEN " : " BETWEEN ");
        print(p, e->args[1]);
        sb_puts(sb, " AND ");
        print(p, e->args[2]);
        sb_putc(sb, ')');
        break;
    case EXPR_IN_LIST:
        sb_putc(sb, '(');
        print(p, e->args[0]);
        sb_puts(sb, neg ? " NOT IN (" : " IN (");
        print_args(p, e, 1, ", ");
        sb_puts(sb, "))");
        break;
    case EXPR_LIKE:
        sb_putc(sb, '(');
        print(p, e->args[0]);
        sb_printf(sb, " %s%s ", neg ? "NOT " : "", expr_op_name((enum expr_op)e->op));
        print(p, e->args[1]);
        if (e->nargs == 3) {
            sb_puts(sb, " ESCAPE ");
            print(p, e->args[2]);
        }
        sb_putc(sb, ')');
        break;
    case EXPR_CASE: print_case(p, e); break;
    case EXPR_CAST:
        if (e->u.cast_to == COL_ANY) {
            print(p, e->args[0]);
            break;
        }
        sb_puts(sb, "CAST(");
        print(p, e->args[0]);
        sb_printf(sb, " AS %s)", type_word(e->u.cast_to));
        break;
    case EXPR_CALL:
        sb_printf(sb, "%s(", e->u.fn->name);
        print_args(p, e, 0, ", ");
        sb_putc(sb, ')');
        break;
    case EXPR_SUBQUERY: print_subquery(p, e); break;
    case EXPR_FIELD:
        print(p, e->args[0]);
        sb_printf(sb, "[%u]", e->u.index);
        break;
    }
    if (e->flags & EXPR_COLL_EXPLICIT) {
        static const char *const colls[] = { "BINARY", "NOCASE", "RTRIM" };
        sb_printf(sb, " COLLATE %s", colls[e->coll]);
    }
}

void expr_print(strbuf *sb, const expr *e, const char *const *names, uint32_t nnames)
{
    struct printer p = { sb, names, nnames };
    print(&p, e);
}
