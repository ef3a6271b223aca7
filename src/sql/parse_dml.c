/*
 * parse_dml.c - INSERT (and REPLACE), UPDATE and DELETE, with their
 * optional WITH prefix, upsert clauses and RETURNING lists.
 *
 * The WITH clause, when there is one, was parsed by the statement
 * dispatcher (it cannot know the statement kind before it), so these
 * functions take it ready-made, together with the statement's start.
 */
#include "sql/parser_internal.h"

bool parse_conflict_action(parser *p, enum ast_conflict *out)
{
    static const struct {
        enum keyword kw;
        enum ast_conflict action;
    } actions[] = {
        { KW_ROLLBACK, AST_CONFLICT_ROLLBACK }, { KW_ABORT, AST_CONFLICT_ABORT },
        { KW_FAIL, AST_CONFLICT_FAIL },         { KW_IGNORE, AST_CONFLICT_IGNORE },
        { KW_REPLACE, AST_CONFLICT_REPLACE },
    };
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        if (accept_kw(p, actions[i].kw)) {
            *out = actions[i].action;
            return true;
        }
    }
    return expected_after(p, "ROLLBACK, ABORT, FAIL, IGNORE or REPLACE") !=
           NULL;
}

/* col = e | (a, b) = e */
static bool parse_assign(parser *p, ast_assign *a)
{
    if (at(p, TK_LPAREN)) {
        a->parenthesized = true;
        if (!parse_name_list(p, &a->cols, "a column name"))
            return false;
    } else {
        ast_name *name = node_alloc(p, sizeof *name);
        if (!name || !parse_name_or_string(p, name, "a column name"))
            return false;
        a->cols.n = 1;
        a->cols.items = name;
    }
    if (!expect(p, TK_EQ, "'=' after the column"))
        return false;
    return (a->value = parse_expr(p)) != NULL;
}

static bool parse_set(parser *p, ast_assign_list *out)
{
    if (!expect_kw(p, KW_SET))
        return false;
    growable g = { 0 };
    do {
        ast_assign *a = grow_push(p, &g, sizeof *a);
        if (!a || !parse_assign(p, a))
            return false;
    } while (accept(p, TK_COMMA));
    out->n = g.n;
    out->items = g.items;
    return true;
}

static bool parse_returning(parser *p, ast_result_list *out)
{
    return !accept_kw(p, KW_RETURNING) || parse_result_list(p, out);
}

static bool parse_where(parser *p, ast_expr **out)
{
    return !accept_kw(p, KW_WHERE) || (*out = parse_expr(p)) != NULL;
}

/* ON CONFLICT [(target) [WHERE e]] DO NOTHING | DO UPDATE SET ... */
static bool parse_upsert(parser *p, ast_upsert *u)
{
    u->off = p->tok.off;
    advance(p); /* ON */
    advance(p); /* CONFLICT */
    if (accept(p, TK_LPAREN)) {
        if (!parse_order_list(p, &u->target) ||
            !expect(p, TK_RPAREN, "',' or ')' to close the conflict target") ||
            !parse_where(p, &u->target_where))
            return false;
    }
    if (!expect_kw(p, KW_DO))
        return false;
    if (accept_kw(p, KW_NOTHING))
        return true;
    if (!accept_kw(p, KW_UPDATE))
        return expected_after(p, "NOTHING or UPDATE") != NULL;
    u->do_update = true;
    return parse_set(p, &u->set) && parse_where(p, &u->where);
}

static bool parse_upserts(parser *p, ast_insert *ins)
{
    growable g = { 0 };
    while (at_kw(p, KW_ON) && tok_is_kw(peek(p, 1), KW_CONFLICT)) {
        ast_upsert *u = grow_push(p, &g, sizeof *u);
        if (!u || !parse_upsert(p, u))
            return false;
    }
    ins->nupsert = g.n;
    ins->upserts = g.items;
    return true;
}

/* [AS alias] after the target table of a DML statement. */
static bool parse_dml_alias(parser *p, ast_name *alias)
{
    return !accept_kw(p, KW_AS) ||
           parse_name_or_string(p, alias, "an alias after AS");
}

static bool parse_insert_source(parser *p, ast_insert *ins)
{
    if (accept_kw(p, KW_DEFAULT))
        return expect_kw(p, KW_VALUES);
    if (!at_query_start(p))
        return expected(p, "VALUES, SELECT or DEFAULT VALUES") != NULL;
    return (ins->source = parse_select(p)) != NULL && parse_upserts(p, ins);
}

ast_stmt *parse_insert(parser *p, ast_with *with, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_INSERT, off);
    if (!st)
        return NULL;
    ast_insert *ins = &st->u.insert;
    if (with)
        ins->with = *with;
    if (accept_kw(p, KW_REPLACE)) {
        ins->or_action = AST_CONFLICT_REPLACE;
    } else {
        advance(p); /* INSERT */
        if (accept_kw(p, KW_OR) &&
            !parse_conflict_action(p, &ins->or_action))
            return NULL;
    }
    if (!expect_kw(p, KW_INTO) ||
        !parse_qname(p, &ins->table, "a table name") ||
        !parse_dml_alias(p, &ins->alias))
        return NULL;
    if (at(p, TK_LPAREN) && !parse_name_list(p, &ins->cols, "a column name"))
        return NULL;
    if (!parse_insert_source(p, ins) || !parse_returning(p, &ins->returning))
        return NULL;
    return st;
}

ast_stmt *parse_update(parser *p, ast_with *with, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_UPDATE, off);
    if (!st)
        return NULL;
    ast_update *up = &st->u.update;
    if (with)
        up->with = *with;
    advance(p); /* UPDATE */
    if (accept_kw(p, KW_OR) && !parse_conflict_action(p, &up->or_action))
        return NULL;
    if (!parse_qname(p, &up->table, "a table name") ||
        !parse_dml_alias(p, &up->alias) || !parse_set(p, &up->set))
        return NULL;
    if (at_kw(p, KW_FROM))
        return unsupported_at(p, &p->tok, "UPDATE ... FROM is not supported");
    if (!parse_where(p, &up->where) || !parse_returning(p, &up->returning))
        return NULL;
    return st;
}

ast_stmt *parse_delete(parser *p, ast_with *with, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_DELETE, off);
    if (!st)
        return NULL;
    ast_delete *del = &st->u.delete_;
    if (with)
        del->with = *with;
    advance(p); /* DELETE */
    if (!expect_kw(p, KW_FROM) ||
        !parse_qname(p, &del->table, "a table name") ||
        !parse_dml_alias(p, &del->alias) || !parse_where(p, &del->where) ||
        !parse_returning(p, &del->returning))
        return NULL;
    return st;
}
