/*
 * parse_select.c - queries: WITH, compound bodies, SELECT cores, VALUES,
 * FROM clauses with joins, ORDER BY and LIMIT.
 *
 * A query's height (ast_select.height) bounds every recursive walk below
 * it: 1 + the tallest expression or nested query it contains + the number
 * of compound terms and joins, whose trees are built by loops and so are
 * as deep as they are long. p->height and p->chain accumulate those while
 * a query is parsed and are saved and restored around nested queries.
 */
#include "sql/parser_internal.h"

#include "livedb.h"

bool at_query_start(const parser *p)
{
    return at_kw(p, KW_SELECT) || at_kw(p, KW_VALUES) || at_kw(p, KW_WITH);
}

/* One more compound term or join in the current query. */
static bool bump_chain(parser *p)
{
    if (++p->chain + p->height < SQL_MAX_DEPTH)
        return true;
    error_at(p, &p->tok, "query too complex: more than %d levels of nesting, "
                         "compound terms or joins", SQL_MAX_DEPTH);
    return false;
}

/* ---- ORDER BY, LIMIT, result columns ------------------------------------------- */

static bool parse_order_term(parser *p, ast_order_term *t)
{
    if (!(t->expr = parse_expr(p)))
        return false;
    if (accept_kw(p, KW_DESC))
        t->desc = true;
    else
        accept_kw(p, KW_ASC);
    if (accept_kw(p, KW_NULLS)) {
        if (accept_kw(p, KW_FIRST))
            t->nulls = AST_NULLS_FIRST;
        else if (accept_kw(p, KW_LAST))
            t->nulls = AST_NULLS_LAST;
        else
            return expected(p, "FIRST or LAST after NULLS") != NULL;
    }
    return true;
}

bool parse_order_list(parser *p, ast_order_list *out)
{
    growable g = { 0 };
    do {
        ast_order_term *t = grow_push(p, &g, sizeof *t);
        if (!t || !parse_order_term(p, t))
            return false;
    } while (accept(p, TK_COMMA));
    out->n = g.n;
    out->items = g.items;
    return true;
}

static bool parse_limit(parser *p, ast_select *s)
{
    if (!(s->limit = parse_expr(p)))
        return false;
    if (accept_kw(p, KW_OFFSET))
        return (s->offset = parse_expr(p)) != NULL;
    if (accept(p, TK_COMMA)) { /* LIMIT offset, count */
        s->offset = s->limit;
        return (s->limit = parse_expr(p)) != NULL;
    }
    return true;
}

static bool at_table_star(parser *p)
{
    return tok_is_name(&p->tok) && peek(p, 1)->kind == TK_DOT &&
           peek(p, 2)->kind == TK_STAR;
}

static bool parse_result_col(parser *p, ast_result_col *c)
{
    c->off = p->tok.off;
    if (accept(p, TK_STAR)) {
        c->kind = AST_RESULT_STAR;
    } else if (at_table_star(p)) {
        c->kind = AST_RESULT_TABLE_STAR;
        if (!parse_name(p, &c->table, "a table name"))
            return false;
        advance(p); /* . */
        advance(p); /* * */
    } else {
        c->kind = AST_RESULT_EXPR;
        if (!(c->expr = parse_expr(p)))
            return false;
        c->len = p->prev_end - c->off;
        return parse_alias(p, &c->alias);
    }
    c->len = p->prev_end - c->off;
    return true;
}

bool parse_result_list(parser *p, ast_result_list *out)
{
    growable g = { 0 };
    do {
        ast_result_col *c = grow_push(p, &g, sizeof *c);
        if (!c || !parse_result_col(p, c))
            return false;
    } while (accept(p, TK_COMMA));
    out->n = g.n;
    out->items = g.items;
    return true;
}

/* ---- FROM ------------------------------------------------------------------------ */

static ast_from *parse_join_chain(parser *p);

static ast_from *from_new(parser *p, enum ast_from_kind kind, uint32_t off)
{
    ast_from *f = node_alloc(p, sizeof *f);
    if (f) {
        f->kind = kind;
        f->off = off;
    }
    return f;
}

static ast_from *parse_from_subquery(parser *p, uint32_t off)
{
    ast_from *f = from_new(p, AST_FROM_SUBQUERY, off);
    if (!f || !(f->u.subquery = parse_select(p)) ||
        !expect(p, TK_RPAREN, "')' to close the subquery"))
        return NULL;
    f->len = p->prev_end - off;
    return parse_alias(p, &f->alias) ? f : NULL;
}

static bool at_alias(const parser *p)
{
    return at_kw(p, KW_AS) || tok_is_name(&p->tok) || at(p, TK_STRING);
}

/* ( join ) or ( table-or-subquery ) [alias] */
static ast_from *parse_from_paren(parser *p)
{
    uint32_t off = p->tok.off;
    advance(p); /* ( */
    if (at_query_start(p))
        return parse_from_subquery(p, off);
    if (!enter(p))
        return NULL;
    ast_from *inner = parse_join_chain(p);
    leave(p);
    if (!inner || !expect(p, TK_RPAREN, "')' to close the join"))
        return NULL;
    if (!at_alias(p))
        return inner;
    if (inner->kind == AST_FROM_JOIN || inner->alias.str)
        return error_at(p, &p->tok, "a parenthesized join cannot have an "
                                    "alias");
    return parse_alias(p, &inner->alias) ? inner : NULL;
}

/* INDEXED BY name | NOT INDEXED */
static bool parse_indexed(parser *p, ast_from *f)
{
    if (accept_kw(p, KW_INDEXED)) {
        f->indexed = AST_INDEXED_BY;
        return expect_kw(p, KW_BY) &&
               parse_name_or_string(p, &f->index, "an index name");
    }
    if (at_kw(p, KW_NOT) && tok_is_kw(peek(p, 1), KW_INDEXED)) {
        advance(p);
        advance(p);
        f->indexed = AST_NOT_INDEXED;
    }
    return true;
}

static ast_from *parse_from_item(parser *p)
{
    if (at(p, TK_LPAREN))
        return parse_from_paren(p);
    ast_from *f = from_new(p, AST_FROM_TABLE, p->tok.off);
    if (!f || !parse_qname(p, &f->u.table, "a table name"))
        return NULL;
    if (at(p, TK_LPAREN))
        return error_at(p, &p->tok, "table-valued functions are not "
                                    "supported");
    f->len = p->prev_end - f->off;
    return parse_alias(p, &f->alias) && parse_indexed(p, f) ? f : NULL;
}

static bool at_join(const parser *p)
{
    if (at(p, TK_COMMA))
        return true;
    switch (at(p, TK_NAME) ? p->tok.kw : KW_NONE) {
    case KW_JOIN:
    case KW_NATURAL:
    case KW_LEFT:
    case KW_RIGHT:
    case KW_FULL:
    case KW_INNER:
    case KW_CROSS: return true;
    default: return false;
    }
}

/* , | [NATURAL] [LEFT [OUTER] | RIGHT [OUTER] | FULL [OUTER] | INNER |
 * CROSS] JOIN */
static bool parse_join_op(parser *p, ast_from *j)
{
    if (accept(p, TK_COMMA)) {
        j->u.join.kind = AST_JOIN_COMMA;
        return true;
    }
    j->u.join.natural = accept_kw(p, KW_NATURAL);
    j->u.join.kind = AST_JOIN_INNER;
    if (accept_kw(p, KW_LEFT))
        j->u.join.kind = AST_JOIN_LEFT;
    else if (accept_kw(p, KW_RIGHT))
        j->u.join.kind = AST_JOIN_RIGHT;
    else if (accept_kw(p, KW_FULL))
        j->u.join.kind = AST_JOIN_FULL;
    else if (accept_kw(p, KW_CROSS))
        j->u.join.kind = AST_JOIN_CROSS;
    else
        accept_kw(p, KW_INNER);
    if (j->u.join.kind >= AST_JOIN_LEFT)
        accept_kw(p, KW_OUTER);
    return expect_kw(p, KW_JOIN);
}

/* ON e | USING (cols); ON CONFLICT belongs to an INSERT, not to us. */
static bool parse_join_constraint(parser *p, ast_from *j)
{
    bool on = at_kw(p, KW_ON) && !tok_is_kw(peek(p, 1), KW_CONFLICT);
    if (!on && !at_kw(p, KW_USING))
        return true;
    if (j->u.join.natural)
        return error_at(p, &p->tok, "a NATURAL join cannot have an ON or "
                                    "USING clause") != NULL;
    if (accept_kw(p, KW_USING))
        return parse_name_list(p, &j->u.join.using_cols, "a column name");
    advance(p); /* ON */
    return (j->u.join.on = parse_expr(p)) != NULL;
}

static ast_from *parse_join_chain(parser *p)
{
    ast_from *left = parse_from_item(p);
    while (left && at_join(p)) {
        ast_from *j = from_new(p, AST_FROM_JOIN, left->off);
        if (!j || !bump_chain(p) || !parse_join_op(p, j))
            return NULL;
        j->u.join.left = left;
        if (!(j->u.join.right = parse_from_item(p)) ||
            !parse_join_constraint(p, j))
            return NULL;
        j->len = p->prev_end - j->off;
        left = j;
    }
    return left;
}

/* ---- SELECT cores and VALUES ----------------------------------------------------- */

static ast_body *body_new(parser *p, enum ast_body_kind kind, uint32_t off)
{
    ast_body *b = node_alloc(p, sizeof *b);
    if (b) {
        b->kind = kind;
        b->off = off;
    }
    return b;
}

static bool parse_core_clauses(parser *p, ast_select_core *c)
{
    if (accept_kw(p, KW_FROM) && !(c->from = parse_join_chain(p)))
        return false;
    if (accept_kw(p, KW_WHERE) && !(c->where = parse_expr(p)))
        return false;
    if (accept_kw(p, KW_GROUP)) {
        if (!expect_kw(p, KW_BY) || !parse_expr_list(p, &c->group_by))
            return false;
    }
    if (accept_kw(p, KW_HAVING) && !(c->having = parse_expr(p)))
        return false;
    return true;
}

static ast_body *parse_core(parser *p)
{
    ast_body *b = body_new(p, AST_BODY_SELECT, p->tok.off);
    if (!b)
        return NULL;
    advance(p); /* SELECT */
    ast_select_core *c = &b->u.select;
    if (accept_kw(p, KW_DISTINCT))
        c->distinct = true;
    else
        accept_kw(p, KW_ALL);
    if (!parse_result_list(p, &c->cols) || !parse_core_clauses(p, c))
        return NULL;
    b->len = p->prev_end - b->off;
    return b;
}

static ast_body *parse_values(parser *p)
{
    ast_body *b = body_new(p, AST_BODY_VALUES, p->tok.off);
    if (!b)
        return NULL;
    advance(p); /* VALUES */
    growable g = { 0 };
    do {
        token open = p->tok;
        ast_expr_list *row = grow_push(p, &g, sizeof *row);
        if (!row || !expect(p, TK_LPAREN, "'(' to start a row of VALUES") ||
            !parse_expr_list(p, row) ||
            !expect(p, TK_RPAREN, "',' or ')' to close the row"))
            return NULL;
        if (row->n != ((ast_expr_list *)g.items)[0].n)
            return error_at(p, &open, "all VALUES rows must have the same "
                                      "number of values");
    } while (accept(p, TK_COMMA));
    b->u.values.nrows = g.n;
    b->u.values.rows = g.items;
    b->len = p->prev_end - b->off;
    return b;
}

static ast_body *parse_arm(parser *p)
{
    if (at_kw(p, KW_SELECT))
        return parse_core(p);
    if (at_kw(p, KW_VALUES))
        return parse_values(p);
    return expected_after(p, "SELECT or VALUES");
}

/* UNION [ALL], INTERSECT or EXCEPT at the current token. */
static bool setop_at(const parser *p, enum ast_setop *op)
{
    if (at_kw(p, KW_UNION))
        *op = AST_UNION;
    else if (at_kw(p, KW_INTERSECT))
        *op = AST_INTERSECT;
    else if (at_kw(p, KW_EXCEPT))
        *op = AST_EXCEPT;
    else
        return false;
    return true;
}

static ast_body *parse_body(parser *p)
{
    ast_body *left = parse_arm(p);
    enum ast_setop op;
    while (left && setop_at(p, &op)) {
        advance(p);
        if (op == AST_UNION && accept_kw(p, KW_ALL))
            op = AST_UNION_ALL;
        ast_body *b = body_new(p, AST_BODY_COMPOUND, left->off);
        if (!b || !bump_chain(p))
            return NULL;
        b->u.compound.op = op;
        b->u.compound.left = left;
        if (!(b->u.compound.right = parse_arm(p)))
            return NULL;
        b->len = p->prev_end - b->off;
        left = b;
    }
    return left;
}

/* ---- whole queries ----------------------------------------------------------------- */

static bool parse_cte(parser *p, ast_cte *cte)
{
    if (!parse_name_or_string(p, &cte->name, "a name for the WITH query"))
        return false;
    if (at(p, TK_LPAREN) &&
        !parse_name_list(p, &cte->cols, "a column name"))
        return false;
    if (!expect_kw(p, KW_AS) ||
        !expect(p, TK_LPAREN, "'(' to start the WITH query"))
        return false;
    if (!at_query_start(p))
        return expected_after(p, "a query") != NULL;
    return (cte->select = parse_select(p)) != NULL &&
           expect(p, TK_RPAREN, "')' to close the WITH query");
}

bool parse_with(parser *p, ast_with *out)
{
    advance(p); /* WITH */
    if (at_kw(p, KW_RECURSIVE))
        return unsupported_at(p, &p->tok, "recursive CTEs are not supported") != NULL;
    growable g = { 0 };
    do {
        ast_cte *cte = grow_push(p, &g, sizeof *cte);
        if (!cte || !parse_cte(p, cte))
            return false;
    } while (accept(p, TK_COMMA));
    out->n = g.n;
    out->items = g.items;
    return true;
}

static bool parse_query_tail(parser *p, ast_select *s)
{
    if (accept_kw(p, KW_ORDER)) {
        if (!expect_kw(p, KW_BY) || !parse_order_list(p, &s->order_by))
            return false;
    }
    if (accept_kw(p, KW_LIMIT) && !parse_limit(p, s))
        return false;
    enum ast_setop op;
    if (setop_at(p, &op))
        return error_at(p, &p->tok, "ORDER BY and LIMIT must come after the "
                                    "last SELECT of a compound query") !=
               NULL;
    return true;
}

/* Parses the body and tail; the caller manages the height bookkeeping. */
static ast_select *parse_query(parser *p, ast_with *with, uint32_t off)
{
    ast_select *s = node_alloc(p, sizeof *s);
    if (!s)
        return NULL;
    s->off = off;
    s->with = *with;
    for (uint32_t i = 0; i < with->n; i++)
        if (with->items[i].select->height > p->height)
            p->height = with->items[i].select->height;
    if (!(s->body = parse_body(p)) || !parse_query_tail(p, s))
        return NULL;
    s->len = p->prev_end - off;
    uint32_t h = 1 + p->height + p->chain;
    if (h > SQL_MAX_DEPTH)
        return error_at(p, &p->tok, "query too complex: more than %d levels "
                                    "of nesting, compound terms or joins",
                        SQL_MAX_DEPTH);
    s->height = (uint16_t)h;
    return s;
}

ast_select *parse_select_with(parser *p, ast_with *with, uint32_t off)
{
    if (!enter(p))
        return NULL;
    uint32_t outer_height = p->height, outer_chain = p->chain;
    p->height = p->chain = 0;
    ast_select *s = parse_query(p, with, off);
    leave(p);
    p->chain = outer_chain;
    p->height = outer_height;
    if (s && s->height > p->height)
        p->height = s->height;
    return s;
}

ast_select *parse_select(parser *p)
{
    uint32_t off = p->tok.off;
    ast_with with = { 0, NULL };
    if (at_kw(p, KW_WITH) && !parse_with(p, &with))
        return NULL;
    return parse_select_with(p, &with, off);
}
