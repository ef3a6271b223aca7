/*
 * ast_print.c - the tree back to canonical SQL (see ast.h).
 *
 * The one property that matters: parsing the output gives the same tree.
 * Parentheses are added exactly where the parser's precedence climbing
 * would otherwise group differently: a left operand needs them when it
 * binds more loosely than its operator, a right operand also when it binds
 * equally (all binary operators are left-associative). Bounds of BETWEEN
 * and operands of LIKE's pattern and ESCAPE, which the parser reads one
 * level above '=', follow the right-operand rule. A '-' before an operand
 * that itself starts with '-' gets a space, since "--" starts a comment.
 *
 * Literals print so that they read back identically: negative INTEGERs
 * (only hex literals make them) in hex, INT64_MIN as -9223372036854775808
 * (which the parser folds), infinity as 1e999.
 */
#include "sql/ast.h"

#include "base/strbuf.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

typedef struct printer {
    strbuf *sb;
    unsigned flags;
} printer;

static void print_expr(printer *pr, const ast_expr *e);
static void print_select(printer *pr, const ast_select *s);

/* ---- names and literals ------------------------------------------------------- */

static void print_quoted(printer *pr, const char *s, size_t n, char quote)
{
    sb_putc(pr->sb, quote);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == quote)
            sb_putc(pr->sb, quote);
        sb_putc(pr->sb, s[i]);
    }
    sb_putc(pr->sb, quote);
}

static void print_name(printer *pr, const ast_name *n)
{
    if (n->quoted)
        print_quoted(pr, n->str, n->len, '"');
    else
        sb_put(pr->sb, n->str, n->len);
}

static void print_qname(printer *pr, const ast_qname *q)
{
    if (q->schema.str) {
        print_name(pr, &q->schema);
        sb_putc(pr->sb, '.');
    }
    print_name(pr, &q->name);
}

static void print_names(printer *pr, const ast_name_list *l)
{
    sb_putc(pr->sb, '(');
    for (uint32_t i = 0; i < l->n; i++) {
        if (i)
            sb_puts(pr->sb, ", ");
        print_name(pr, &l->items[i]);
    }
    sb_putc(pr->sb, ')');
}

static void print_alias(printer *pr, const ast_name *alias)
{
    if (!alias->str)
        return;
    sb_puts(pr->sb, " AS ");
    print_name(pr, alias);
}

static void print_int(printer *pr, int64_t i)
{
    if (i >= 0)
        sb_printf(pr->sb, "%" PRId64, i);
    else if (i == INT64_MIN)
        sb_puts(pr->sb, "-9223372036854775808");
    else
        sb_printf(pr->sb, "0x%016" PRIX64, (uint64_t)i);
}

static void print_literal(printer *pr, const value *v)
{
    size_t n;
    const char *bytes;
    switch (value_type(v)) {
    case LDB_NULL: sb_puts(pr->sb, "NULL"); break;
    case LDB_BOOLEAN: sb_puts(pr->sb, v->h.u.i ? "TRUE" : "FALSE"); break;
    case LDB_INTEGER: print_int(pr, v->h.u.i); break;
    case LDB_REAL:
        if (isinf(v->h.u.r))
            sb_puts(pr->sb, "1e999");
        else
            value_format_real(pr->sb, v->h.u.r);
        break;
    case LDB_TEXT:
        bytes = value_bytes(v, &n);
        print_quoted(pr, bytes, n, '\'');
        break;
    default: /* BLOB: literals are never ARRAY or RECORD */
        bytes = value_bytes(v, &n);
        sb_puts(pr->sb, "X'");
        for (size_t i = 0; i < n; i++)
            sb_printf(pr->sb, "%02X", (unsigned char)bytes[i]);
        sb_putc(pr->sb, '\'');
    }
}

static void print_type(printer *pr, const ast_type *t)
{
    sb_puts(pr->sb, t->name);
    if (!t->nargs)
        return;
    sb_putc(pr->sb, '(');
    sb_puts(pr->sb, t->args[0]);
    if (t->nargs == 2) {
        sb_puts(pr->sb, ", ");
        sb_puts(pr->sb, t->args[1]);
    }
    sb_putc(pr->sb, ')');
}

/* ---- expressions ------------------------------------------------------------------ */

static enum ast_prec expr_prec(const ast_expr *e)
{
    switch ((enum ast_expr_kind)e->kind) {
    case AST_LITERAL:
        return value_type(&e->u.literal.v) == LDB_INTEGER &&
                       e->u.literal.v.h.u.i == INT64_MIN
                   ? AST_PREC_UNARY
                   : AST_PREC_PRIMARY;
    case AST_UNARY: return ast_op_prec(e->u.unary.op);
    case AST_BINARY: return ast_op_prec(e->u.binary.op);
    case AST_COLLATE: return AST_PREC_COLLATE;
    case AST_BETWEEN:
    case AST_IN_LIST:
    case AST_IN_SELECT:
    case AST_IN_TABLE:
    case AST_LIKE: return AST_PREC_EQ;
    default: return AST_PREC_PRIMARY;
    }
}

static bool needs_parens(const printer *pr, const ast_expr *e,
                         enum ast_prec min)
{
    enum ast_prec prec = expr_prec(e);
    return prec < min ||
           ((pr->flags & AST_SQL_PARENS) && prec < AST_PREC_PRIMARY);
}

/* An operand that binds at least at level min, parenthesized if not. */
static void print_operand(printer *pr, const ast_expr *e, enum ast_prec min)
{
    if (!needs_parens(pr, e, min)) {
        print_expr(pr, e);
        return;
    }
    sb_putc(pr->sb, '(');
    print_expr(pr, e);
    sb_putc(pr->sb, ')');
}

static bool starts_with_minus(const ast_expr *e)
{
    if (e->kind == AST_UNARY)
        return e->u.unary.op == AST_OP_NEG;
    return e->kind == AST_LITERAL && expr_prec(e) == AST_PREC_UNARY;
}

static void print_list(printer *pr, const ast_expr_list *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        if (i)
            sb_puts(pr->sb, ", ");
        print_expr(pr, l->items[i]);
    }
}

static void print_order(printer *pr, const ast_order_list *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        const ast_order_term *t = &l->items[i];
        if (i)
            sb_puts(pr->sb, ", ");
        print_expr(pr, t->expr);
        if (t->desc)
            sb_puts(pr->sb, " DESC");
        if (t->nulls != AST_NULLS_DEFAULT)
            sb_puts(pr->sb, t->nulls == AST_NULLS_FIRST ? " NULLS FIRST"
                                                        : " NULLS LAST");
    }
}

static void print_unary(printer *pr, const ast_expr *e)
{
    const ast_expr *x = e->u.unary.operand;
    switch (e->u.unary.op) {
    case AST_OP_ISNULL:
    case AST_OP_NOTNULL:
        print_operand(pr, x, AST_PREC_EQ);
        sb_putc(pr->sb, ' ');
        sb_puts(pr->sb, ast_op_name(e->u.unary.op));
        return;
    case AST_OP_NOT:
        sb_puts(pr->sb, "NOT ");
        print_operand(pr, x, AST_PREC_NOT);
        return;
    default:
        sb_puts(pr->sb, ast_op_name(e->u.unary.op));
        if (e->u.unary.op == AST_OP_NEG &&
            !needs_parens(pr, x, AST_PREC_UNARY) && starts_with_minus(x))
            sb_putc(pr->sb, ' ');
        print_operand(pr, x, AST_PREC_UNARY);
    }
}

static void print_binary(printer *pr, const ast_expr *e)
{
    enum ast_prec prec = ast_op_prec(e->u.binary.op);
    print_operand(pr, e->u.binary.left, prec);
    sb_printf(pr->sb, " %s ", ast_op_name(e->u.binary.op));
    print_operand(pr, e->u.binary.right, prec + 1);
}

static void print_negated(printer *pr, bool negated, const char *op)
{
    sb_puts(pr->sb, negated ? " NOT " : " ");
    sb_puts(pr->sb, op);
    sb_putc(pr->sb, ' ');
}

static void print_in(printer *pr, const ast_expr *e)
{
    print_operand(pr, e->u.in.operand, AST_PREC_EQ);
    print_negated(pr, e->u.in.negated, "IN");
    if (e->kind == AST_IN_TABLE) {
        print_qname(pr, &e->u.in.table);
        return;
    }
    sb_putc(pr->sb, '(');
    if (e->kind == AST_IN_SELECT)
        print_select(pr, e->u.in.select);
    else
        print_list(pr, &e->u.in.list);
    sb_putc(pr->sb, ')');
}

static void print_like(printer *pr, const ast_expr *e)
{
    print_operand(pr, e->u.like.operand, AST_PREC_EQ);
    print_negated(pr, e->u.like.negated, ast_op_name(e->u.like.op));
    print_operand(pr, e->u.like.pattern, AST_PREC_EQ + 1);
    if (e->u.like.escape) {
        sb_puts(pr->sb, " ESCAPE ");
        print_operand(pr, e->u.like.escape, AST_PREC_EQ + 1);
    }
}

static void print_between(printer *pr, const ast_expr *e)
{
    print_operand(pr, e->u.between.operand, AST_PREC_EQ);
    print_negated(pr, e->u.between.negated, "BETWEEN");
    print_operand(pr, e->u.between.low, AST_PREC_EQ + 1);
    sb_puts(pr->sb, " AND ");
    print_operand(pr, e->u.between.high, AST_PREC_EQ + 1);
}

static void print_case(printer *pr, const ast_expr *e)
{
    sb_puts(pr->sb, "CASE");
    if (e->u.case_.base) {
        sb_putc(pr->sb, ' ');
        print_expr(pr, e->u.case_.base);
    }
    for (uint32_t i = 0; i < e->u.case_.nwhen; i++) {
        sb_puts(pr->sb, " WHEN ");
        print_expr(pr, e->u.case_.whens[i].when);
        sb_puts(pr->sb, " THEN ");
        print_expr(pr, e->u.case_.whens[i].then);
    }
    if (e->u.case_.else_expr) {
        sb_puts(pr->sb, " ELSE ");
        print_expr(pr, e->u.case_.else_expr);
    }
    sb_puts(pr->sb, " END");
}

static void print_call(printer *pr, const ast_expr *e)
{
    print_name(pr, &e->u.call.name);
    sb_putc(pr->sb, '(');
    if (e->u.call.star)
        sb_putc(pr->sb, '*');
    if (e->u.call.distinct)
        sb_puts(pr->sb, "DISTINCT ");
    print_list(pr, &e->u.call.args);
    if (e->u.call.order_by.n) {
        sb_puts(pr->sb, " ORDER BY ");
        print_order(pr, &e->u.call.order_by);
    }
    sb_putc(pr->sb, ')');
    if (e->u.call.filter) {
        sb_puts(pr->sb, " FILTER (WHERE ");
        print_expr(pr, e->u.call.filter);
        sb_putc(pr->sb, ')');
    }
}

static void print_column(printer *pr, const ast_expr *e)
{
    if (e->u.column.schema.str) {
        print_name(pr, &e->u.column.schema);
        sb_putc(pr->sb, '.');
    }
    if (e->u.column.table.str) {
        print_name(pr, &e->u.column.table);
        sb_putc(pr->sb, '.');
    }
    print_name(pr, &e->u.column.column);
}

static void print_subquery(printer *pr, const char *prefix,
                           const ast_select *s)
{
    sb_puts(pr->sb, prefix);
    sb_putc(pr->sb, '(');
    print_select(pr, s);
    sb_putc(pr->sb, ')');
}

static void print_expr(printer *pr, const ast_expr *e)
{
    static const char *const current[] = { "CURRENT_DATE", "CURRENT_TIME",
                                           "CURRENT_TIMESTAMP" };
    switch ((enum ast_expr_kind)e->kind) {
    case AST_LITERAL: print_literal(pr, &e->u.literal.v); return;
    case AST_CURRENT: sb_puts(pr->sb, current[e->u.current]); return;
    case AST_COLUMN: print_column(pr, e); return;
    case AST_PARAM:
        if (e->u.param.name.str)
            print_name(pr, &e->u.param.name);
        else
            sb_printf(pr->sb, "?%" PRIu32, e->u.param.number);
        return;
    case AST_UNARY: print_unary(pr, e); return;
    case AST_BINARY: print_binary(pr, e); return;
    case AST_COLLATE:
        print_operand(pr, e->u.collate.operand, AST_PREC_COLLATE);
        sb_puts(pr->sb, " COLLATE ");
        print_name(pr, &e->u.collate.collation);
        return;
    case AST_BETWEEN: print_between(pr, e); return;
    case AST_IN_LIST:
    case AST_IN_SELECT:
    case AST_IN_TABLE: print_in(pr, e); return;
    case AST_LIKE: print_like(pr, e); return;
    case AST_CASE: print_case(pr, e); return;
    case AST_CAST:
        sb_puts(pr->sb, "CAST(");
        print_expr(pr, e->u.cast.operand);
        sb_puts(pr->sb, " AS ");
        print_type(pr, &e->u.cast.type);
        sb_putc(pr->sb, ')');
        return;
    case AST_CALL: print_call(pr, e); return;
    case AST_EXISTS: print_subquery(pr, "EXISTS ", e->u.subquery.select); return;
    case AST_SUBQUERY: print_subquery(pr, "", e->u.subquery.select); return;
    case AST_ARRAY: print_subquery(pr, "ARRAY", e->u.subquery.select); return;
    case AST_LIVE: print_subquery(pr, "LIVE", e->u.subquery.select); return;
    case AST_ROW:
        sb_putc(pr->sb, '(');
        print_list(pr, &e->u.row);
        sb_putc(pr->sb, ')');
        return;
    }
}

/* ---- queries ------------------------------------------------------------------------ */

static void print_results(printer *pr, const ast_result_list *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        const ast_result_col *c = &l->items[i];
        if (i)
            sb_puts(pr->sb, ", ");
        if (c->kind == AST_RESULT_STAR) {
            sb_putc(pr->sb, '*');
        } else if (c->kind == AST_RESULT_TABLE_STAR) {
            print_name(pr, &c->table);
            sb_puts(pr->sb, ".*");
        } else {
            print_expr(pr, c->expr);
            print_alias(pr, &c->alias);
        }
    }
}

static void print_join_op(printer *pr, const ast_from *j)
{
    static const char *const kinds[] = {
        [AST_JOIN_INNER] = "JOIN ",       [AST_JOIN_CROSS] = "CROSS JOIN ",
        [AST_JOIN_LEFT] = "LEFT JOIN ",   [AST_JOIN_RIGHT] = "RIGHT JOIN ",
        [AST_JOIN_FULL] = "FULL JOIN ",
    };
    if (j->u.join.kind == AST_JOIN_COMMA) {
        sb_puts(pr->sb, ", ");
        return;
    }
    sb_puts(pr->sb, j->u.join.natural ? " NATURAL " : " ");
    sb_puts(pr->sb, kinds[j->u.join.kind]);
}

static void print_from(printer *pr, const ast_from *f)
{
    switch (f->kind) {
    case AST_FROM_TABLE:
        print_qname(pr, &f->u.table);
        print_alias(pr, &f->alias);
        if (f->indexed == AST_NOT_INDEXED)
            sb_puts(pr->sb, " NOT INDEXED");
        if (f->indexed == AST_INDEXED_BY) {
            sb_puts(pr->sb, " INDEXED BY ");
            print_name(pr, &f->index);
        }
        return;
    case AST_FROM_SUBQUERY:
        print_subquery(pr, "", f->u.subquery);
        break;
    case AST_FROM_JOIN:
        print_from(pr, f->u.join.left);
        print_join_op(pr, f);
        if (f->u.join.right->kind == AST_FROM_JOIN) {
            sb_putc(pr->sb, '(');
            print_from(pr, f->u.join.right);
            sb_putc(pr->sb, ')');
        } else {
            print_from(pr, f->u.join.right);
        }
        if (f->u.join.on) {
            sb_puts(pr->sb, " ON ");
            print_expr(pr, f->u.join.on);
        }
        if (f->u.join.using_cols.n) {
            sb_puts(pr->sb, " USING ");
            print_names(pr, &f->u.join.using_cols);
        }
        return;
    }
    print_alias(pr, &f->alias);
}

static void print_core(printer *pr, const ast_select_core *c)
{
    sb_puts(pr->sb, c->distinct ? "SELECT DISTINCT " : "SELECT ");
    print_results(pr, &c->cols);
    if (c->from) {
        sb_puts(pr->sb, " FROM ");
        print_from(pr, c->from);
    }
    if (c->where) {
        sb_puts(pr->sb, " WHERE ");
        print_expr(pr, c->where);
    }
    if (c->group_by.n) {
        sb_puts(pr->sb, " GROUP BY ");
        print_list(pr, &c->group_by);
    }
    if (c->having) {
        sb_puts(pr->sb, " HAVING ");
        print_expr(pr, c->having);
    }
}

static void print_body(printer *pr, const ast_body *b)
{
    static const char *const ops[] = {
        [AST_UNION] = " UNION ", [AST_UNION_ALL] = " UNION ALL ",
        [AST_INTERSECT] = " INTERSECT ", [AST_EXCEPT] = " EXCEPT ",
    };
    switch (b->kind) {
    case AST_BODY_SELECT: print_core(pr, &b->u.select); return;
    case AST_BODY_VALUES:
        sb_puts(pr->sb, "VALUES ");
        for (uint32_t i = 0; i < b->u.values.nrows; i++) {
            sb_puts(pr->sb, i ? ", (" : "(");
            print_list(pr, &b->u.values.rows[i]);
            sb_putc(pr->sb, ')');
        }
        return;
    case AST_BODY_COMPOUND:
        print_body(pr, b->u.compound.left);
        sb_puts(pr->sb, ops[b->u.compound.op]);
        print_body(pr, b->u.compound.right);
        return;
    }
}

static void print_with(printer *pr, const ast_with *w)
{
    for (uint32_t i = 0; i < w->n; i++) {
        const ast_cte *c = &w->items[i];
        sb_puts(pr->sb, i ? ", " : "WITH ");
        print_name(pr, &c->name);
        if (c->cols.n) {
            sb_putc(pr->sb, ' ');
            print_names(pr, &c->cols);
        }
        print_subquery(pr, " AS ", c->select);
    }
    if (w->n)
        sb_putc(pr->sb, ' ');
}

static void print_select(printer *pr, const ast_select *s)
{
    print_with(pr, &s->with);
    print_body(pr, s->body);
    if (s->order_by.n) {
        sb_puts(pr->sb, " ORDER BY ");
        print_order(pr, &s->order_by);
    }
    if (s->limit) {
        sb_puts(pr->sb, " LIMIT ");
        print_expr(pr, s->limit);
    }
    if (s->offset) {
        sb_puts(pr->sb, " OFFSET ");
        print_expr(pr, s->offset);
    }
}

/* ---- DML --------------------------------------------------------------------------- */

static const char *const conflict_names[] = {
    [AST_CONFLICT_NONE] = "",          [AST_CONFLICT_ROLLBACK] = "ROLLBACK",
    [AST_CONFLICT_ABORT] = "ABORT",    [AST_CONFLICT_FAIL] = "FAIL",
    [AST_CONFLICT_IGNORE] = "IGNORE",  [AST_CONFLICT_REPLACE] = "REPLACE",
};

static void print_or_action(printer *pr, enum ast_conflict c)
{
    if (c != AST_CONFLICT_NONE)
        sb_printf(pr->sb, " OR %s", conflict_names[c]);
}

static void print_where(printer *pr, const ast_expr *where)
{
    if (!where)
        return;
    sb_puts(pr->sb, " WHERE ");
    print_expr(pr, where);
}

static void print_returning(printer *pr, const ast_result_list *l)
{
    if (!l->n)
        return;
    sb_puts(pr->sb, " RETURNING ");
    print_results(pr, l);
}

static void print_assigns(printer *pr, const ast_assign_list *l)
{
    sb_puts(pr->sb, " SET ");
    for (uint32_t i = 0; i < l->n; i++) {
        const ast_assign *a = &l->items[i];
        if (i)
            sb_puts(pr->sb, ", ");
        if (a->parenthesized)
            print_names(pr, &a->cols);
        else
            print_name(pr, &a->cols.items[0]);
        sb_puts(pr->sb, " = ");
        print_expr(pr, a->value);
    }
}

static void print_upsert(printer *pr, const ast_upsert *u)
{
    sb_puts(pr->sb, " ON CONFLICT");
    if (u->target.n) {
        sb_puts(pr->sb, " (");
        print_order(pr, &u->target);
        sb_putc(pr->sb, ')');
        print_where(pr, u->target_where);
    }
    if (!u->do_update) {
        sb_puts(pr->sb, " DO NOTHING");
        return;
    }
    sb_puts(pr->sb, " DO UPDATE");
    print_assigns(pr, &u->set);
    print_where(pr, u->where);
}

static void print_insert(printer *pr, const ast_insert *ins)
{
    print_with(pr, &ins->with);
    sb_puts(pr->sb, "INSERT");
    print_or_action(pr, ins->or_action);
    sb_puts(pr->sb, " INTO ");
    print_qname(pr, &ins->table);
    print_alias(pr, &ins->alias);
    if (ins->cols.n) {
        sb_putc(pr->sb, ' ');
        print_names(pr, &ins->cols);
    }
    if (ins->source) {
        sb_putc(pr->sb, ' ');
        print_select(pr, ins->source);
    } else {
        sb_puts(pr->sb, " DEFAULT VALUES");
    }
    for (uint32_t i = 0; i < ins->nupsert; i++)
        print_upsert(pr, &ins->upserts[i]);
    print_returning(pr, &ins->returning);
}

static void print_update(printer *pr, const ast_update *up)
{
    print_with(pr, &up->with);
    sb_puts(pr->sb, "UPDATE");
    print_or_action(pr, up->or_action);
    sb_putc(pr->sb, ' ');
    print_qname(pr, &up->table);
    print_alias(pr, &up->alias);
    print_assigns(pr, &up->set);
    print_where(pr, up->where);
    print_returning(pr, &up->returning);
}

static void print_delete(printer *pr, const ast_delete *del)
{
    print_with(pr, &del->with);
    sb_puts(pr->sb, "DELETE FROM ");
    print_qname(pr, &del->table);
    print_alias(pr, &del->alias);
    print_where(pr, del->where);
    print_returning(pr, &del->returning);
}

/* ---- DDL --------------------------------------------------------------------------- */

static void print_on_conflict(printer *pr, enum ast_conflict c)
{
    if (c != AST_CONFLICT_NONE)
        sb_printf(pr->sb, " ON CONFLICT %s", conflict_names[c]);
}

static void print_fk(printer *pr, const ast_foreign_key *fk)
{
    static const char *const actions[] = {
        [AST_FK_DEFAULT] = "",           [AST_FK_SET_NULL] = "SET NULL",
        [AST_FK_SET_DEFAULT] = "SET DEFAULT", [AST_FK_CASCADE] = "CASCADE",
        [AST_FK_RESTRICT] = "RESTRICT",  [AST_FK_NO_ACTION] = "NO ACTION",
    };
    sb_puts(pr->sb, "REFERENCES ");
    print_name(pr, &fk->table);
    if (fk->cols.n) {
        sb_putc(pr->sb, ' ');
        print_names(pr, &fk->cols);
    }
    if (fk->on_delete != AST_FK_DEFAULT)
        sb_printf(pr->sb, " ON DELETE %s", actions[fk->on_delete]);
    if (fk->on_update != AST_FK_DEFAULT)
        sb_printf(pr->sb, " ON UPDATE %s", actions[fk->on_update]);
}

/* + or - directly before a number literal, as parse_signed_number reads. */
static bool is_signed_number(const ast_expr *e)
{
    if (e->kind != AST_UNARY ||
        (e->u.unary.op != AST_OP_NEG && e->u.unary.op != AST_OP_PLUS))
        return false;
    const ast_expr *x = e->u.unary.operand;
    return x->kind == AST_LITERAL && value_is_number(&x->u.literal.v) &&
           expr_prec(x) == AST_PREC_PRIMARY;
}

/* A DEFAULT value prints bare when the parser reads it back bare: a
 * literal or a signed number; anything else in parentheses. */
static void print_default(printer *pr, const ast_expr *e)
{
    bool bare = e->kind == AST_LITERAL || e->kind == AST_CURRENT ||
                is_signed_number(e);
    if (!bare)
        sb_putc(pr->sb, '(');
    print_expr(pr, e);
    if (!bare)
        sb_putc(pr->sb, ')');
}

static void print_col_constraint(printer *pr, const ast_col_constraint *c)
{
    if (c->name.str) {
        sb_puts(pr->sb, " CONSTRAINT ");
        print_name(pr, &c->name);
    }
    switch (c->kind) {
    case AST_CC_PRIMARY_KEY:
        sb_puts(pr->sb, c->desc ? " PRIMARY KEY DESC" : " PRIMARY KEY");
        print_on_conflict(pr, c->on_conflict);
        if (c->autoincrement)
            sb_puts(pr->sb, " AUTOINCREMENT");
        return;
    case AST_CC_NOT_NULL:
    case AST_CC_NULL:
    case AST_CC_UNIQUE:
        sb_puts(pr->sb, c->kind == AST_CC_NOT_NULL ? " NOT NULL"
                        : c->kind == AST_CC_NULL   ? " NULL"
                                                   : " UNIQUE");
        print_on_conflict(pr, c->on_conflict);
        return;
    case AST_CC_CHECK:
        sb_puts(pr->sb, " CHECK (");
        print_expr(pr, c->expr);
        sb_putc(pr->sb, ')');
        return;
    case AST_CC_DEFAULT:
        sb_puts(pr->sb, " DEFAULT ");
        print_default(pr, c->expr);
        return;
    case AST_CC_COLLATE:
        sb_puts(pr->sb, " COLLATE ");
        print_name(pr, &c->collation);
        return;
    case AST_CC_REFERENCES:
        sb_putc(pr->sb, ' ');
        print_fk(pr, &c->fk);
        return;
    case AST_CC_GENERATED:
        sb_puts(pr->sb, " GENERATED ALWAYS AS (");
        print_expr(pr, c->expr);
        sb_puts(pr->sb, c->stored ? ") STORED" : ")");
        return;
    }
}

static void print_table_constraint(printer *pr, const ast_table_constraint *c)
{
    if (c->name.str) {
        sb_puts(pr->sb, "CONSTRAINT ");
        print_name(pr, &c->name);
        sb_putc(pr->sb, ' ');
    }
    switch (c->kind) {
    case AST_TC_PRIMARY_KEY:
    case AST_TC_UNIQUE:
        sb_puts(pr->sb, c->kind == AST_TC_UNIQUE ? "UNIQUE (" : "PRIMARY KEY (");
        print_order(pr, &c->cols);
        sb_puts(pr->sb, c->autoincrement ? " AUTOINCREMENT)" : ")");
        print_on_conflict(pr, c->on_conflict);
        return;
    case AST_TC_CHECK:
        sb_puts(pr->sb, "CHECK (");
        print_expr(pr, c->check);
        sb_putc(pr->sb, ')');
        return;
    case AST_TC_FOREIGN_KEY:
        sb_puts(pr->sb, "FOREIGN KEY ");
        print_names(pr, &c->fk_cols);
        sb_putc(pr->sb, ' ');
        print_fk(pr, &c->fk);
        return;
    }
}

static void print_column_def(printer *pr, const ast_column_def *col)
{
    print_name(pr, &col->name);
    if (col->type.name) {
        sb_putc(pr->sb, ' ');
        print_type(pr, &col->type);
    }
    for (uint32_t i = 0; i < col->ncons; i++)
        print_col_constraint(pr, &col->cons[i]);
}

static void print_create_table(printer *pr, const ast_create_table *ct)
{
    sb_puts(pr->sb, ct->temp ? "CREATE TEMP TABLE " : "CREATE TABLE ");
    if (ct->if_not_exists)
        sb_puts(pr->sb, "IF NOT EXISTS ");
    print_qname(pr, &ct->name);
    if (ct->as_select) {
        sb_puts(pr->sb, " AS ");
        print_select(pr, ct->as_select);
        return;
    }
    sb_puts(pr->sb, " (");
    for (uint32_t i = 0; i < ct->ncols; i++) {
        if (i)
            sb_puts(pr->sb, ", ");
        print_column_def(pr, &ct->cols[i]);
    }
    for (uint32_t i = 0; i < ct->ncons; i++) {
        sb_puts(pr->sb, ", ");
        print_table_constraint(pr, &ct->cons[i]);
    }
    sb_putc(pr->sb, ')');
    if (ct->without_rowid)
        sb_puts(pr->sb, " WITHOUT ROWID");
    if (ct->strict)
        sb_puts(pr->sb, ct->without_rowid ? ", STRICT" : " STRICT");
}

static void print_create_index(printer *pr, const ast_create_index *ci)
{
    sb_puts(pr->sb, ci->unique ? "CREATE UNIQUE INDEX " : "CREATE INDEX ");
    if (ci->if_not_exists)
        sb_puts(pr->sb, "IF NOT EXISTS ");
    print_qname(pr, &ci->name);
    sb_puts(pr->sb, " ON ");
    print_name(pr, &ci->table);
    sb_puts(pr->sb, " (");
    print_order(pr, &ci->cols);
    sb_putc(pr->sb, ')');
    if (ci->using_ != AST_USING_DEFAULT)
        sb_puts(pr->sb, ci->using_ == AST_USING_HASH ? " USING HASH"
                                                     : " USING BTREE");
    print_where(pr, ci->where);
}

static void print_create_view(printer *pr, const ast_create_view *cv)
{
    sb_puts(pr->sb, cv->temp ? "CREATE TEMP " : "CREATE ");
    sb_puts(pr->sb, cv->materialized ? "MATERIALIZED VIEW " : "VIEW ");
    if (cv->if_not_exists)
        sb_puts(pr->sb, "IF NOT EXISTS ");
    print_qname(pr, &cv->name);
    if (cv->cols.n) {
        sb_putc(pr->sb, ' ');
        print_names(pr, &cv->cols);
    }
    sb_puts(pr->sb, " AS ");
    print_select(pr, cv->select);
}

/* ---- other statements ----------------------------------------------------------------- */

static void print_drop(printer *pr, const ast_stmt *st)
{
    static const char *const objects[] = {
        [AST_OBJ_TABLE] = "TABLE", [AST_OBJ_INDEX] = "INDEX",
        [AST_OBJ_VIEW] = "VIEW",   [AST_OBJ_MATERIALIZED_VIEW] = "MATERIALIZED VIEW",
        [AST_OBJ_TRIGGER] = "TRIGGER",
    };
    sb_printf(pr->sb, "DROP %s ", objects[st->u.drop.object]);
    if (st->u.drop.if_exists)
        sb_puts(pr->sb, "IF EXISTS ");
    print_qname(pr, &st->u.drop.name);
}

static void print_pragma(printer *pr, const ast_stmt *st)
{
    sb_puts(pr->sb, "PRAGMA ");
    print_qname(pr, &st->u.pragma.name);
    if (st->u.pragma.value) {
        sb_puts(pr->sb, " = ");
        print_expr(pr, st->u.pragma.value);
    } else if (st->u.pragma.word.str) {
        sb_puts(pr->sb, " = ");
        print_name(pr, &st->u.pragma.word);
    }
}

/* Unsupported statements print what is known of them; a trigger gets an
 * empty body so that the text still parses as the same node. */
static void print_unsupported(printer *pr, const ast_stmt *st)
{
    sb_puts(pr->sb, st->u.unsupported.what);
    if (st->u.unsupported.name.name.str) {
        sb_putc(pr->sb, ' ');
        print_qname(pr, &st->u.unsupported.name);
    }
    if (strcmp(st->u.unsupported.what, "CREATE TRIGGER") == 0)
        sb_puts(pr->sb, " BEGIN END");
}

static void print_stmt(printer *pr, const ast_stmt *st)
{
    static const char *const begin_modes[] = {
        [AST_BEGIN_DEFAULT] = "BEGIN", [AST_BEGIN_DEFERRED] = "BEGIN DEFERRED",
        [AST_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
        [AST_BEGIN_EXCLUSIVE] = "BEGIN EXCLUSIVE",
    };
    switch (st->kind) {
    case AST_STMT_SELECT: print_select(pr, st->u.select); return;
    case AST_STMT_INSERT: print_insert(pr, &st->u.insert); return;
    case AST_STMT_UPDATE: print_update(pr, &st->u.update); return;
    case AST_STMT_DELETE: print_delete(pr, &st->u.delete_); return;
    case AST_STMT_CREATE_TABLE: print_create_table(pr, &st->u.create_table); return;
    case AST_STMT_CREATE_INDEX: print_create_index(pr, &st->u.create_index); return;
    case AST_STMT_CREATE_VIEW: print_create_view(pr, &st->u.create_view); return;
    case AST_STMT_DROP: print_drop(pr, st); return;
    case AST_STMT_BEGIN: sb_puts(pr->sb, begin_modes[st->u.begin]); return;
    case AST_STMT_COMMIT: sb_puts(pr->sb, "COMMIT"); return;
    case AST_STMT_ROLLBACK:
        sb_puts(pr->sb, "ROLLBACK");
        if (st->u.rollback_to.str) {
            sb_puts(pr->sb, " TO ");
            print_name(pr, &st->u.rollback_to);
        }
        return;
    case AST_STMT_SAVEPOINT:
    case AST_STMT_RELEASE:
        sb_puts(pr->sb, st->kind == AST_STMT_SAVEPOINT ? "SAVEPOINT "
                                                       : "RELEASE ");
        print_name(pr, &st->u.savepoint);
        return;
    case AST_STMT_EXPLAIN:
        sb_puts(pr->sb, st->u.explain.query_plan ? "EXPLAIN QUERY PLAN "
                                                 : "EXPLAIN ");
        print_stmt(pr, st->u.explain.stmt);
        return;
    case AST_STMT_EXPLAIN_VIEW:
        sb_puts(pr->sb, "EXPLAIN MATERIALIZED VIEW ");
        print_qname(pr, &st->u.explain_view);
        return;
    case AST_STMT_PRAGMA: print_pragma(pr, st); return;
    case AST_STMT_REINDEX:
    case AST_STMT_ANALYZE:
        sb_puts(pr->sb, st->kind == AST_STMT_REINDEX ? "REINDEX" : "ANALYZE");
        if (st->u.target.name.str) {
            sb_putc(pr->sb, ' ');
            print_qname(pr, &st->u.target);
        }
        return;
    case AST_STMT_UNSUPPORTED: print_unsupported(pr, st); return;
    }
}

/* ---- entry points ------------------------------------------------------------------ */

void ast_expr_to_sql(strbuf *sb, const ast_expr *e, unsigned flags)
{
    printer pr = { sb, flags };
    print_expr(&pr, e);
}

void ast_select_to_sql(strbuf *sb, const ast_select *s, unsigned flags)
{
    printer pr = { sb, flags };
    print_select(&pr, s);
}

void ast_stmt_to_sql(strbuf *sb, const ast_stmt *st, unsigned flags)
{
    printer pr = { sb, flags };
    print_stmt(&pr, st);
}
