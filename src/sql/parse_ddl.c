/*
 * parse_ddl.c - CREATE TABLE / INDEX / VIEW / MATERIALIZED VIEW, the
 * recognised-but-unsupported CREATE TRIGGER and CREATE VIRTUAL TABLE, and
 * DROP.
 *
 * Column and table constraints are kept whole in the tree, CHECK and
 * REFERENCES included, so that the binder decides what it supports and can
 * point at the clause it rejects. MATCH and DEFERRABLE clauses of foreign
 * keys are accepted and dropped, as SQLite ignores them too.
 */
#include "sql/parser_internal.h"

#include "livedb.h"

/* IF NOT EXISTS (IF is also a name, so it needs the lookahead). */
static bool parse_if_not_exists(parser *p, bool *out)
{
    if (!at_kw(p, KW_IF) || !tok_is_kw(peek(p, 1), KW_NOT))
        return true;
    advance(p);
    advance(p);
    *out = true;
    return expect_kw(p, KW_EXISTS);
}

static bool parse_on_conflict(parser *p, enum ast_conflict *out)
{
    if (!at_kw(p, KW_ON))
        return true;
    advance(p);
    return expect_kw(p, KW_CONFLICT) && parse_conflict_action(p, out);
}

/* ---- foreign keys ----------------------------------------------------------------- */

static bool parse_fk_action(parser *p, enum ast_fk_action *out)
{
    if (accept_kw(p, KW_SET)) {
        if (accept_kw(p, KW_NULL))
            *out = AST_FK_SET_NULL;
        else if (accept_kw(p, KW_DEFAULT))
            *out = AST_FK_SET_DEFAULT;
        else
            return expected_after(p, "NULL or DEFAULT") != NULL;
    } else if (accept_kw(p, KW_CASCADE)) {
        *out = AST_FK_CASCADE;
    } else if (accept_kw(p, KW_RESTRICT)) {
        *out = AST_FK_RESTRICT;
    } else if (accept_kw(p, KW_NO)) {
        *out = AST_FK_NO_ACTION;
        return expect_kw(p, KW_ACTION);
    } else {
        return expected_after(p, "SET NULL, SET DEFAULT, CASCADE, RESTRICT "
                                 "or NO ACTION") != NULL;
    }
    return true;
}

/* ON DELETE/UPDATE actions and MATCH clauses, in any order. */
static bool parse_fk_clauses(parser *p, ast_foreign_key *fk)
{
    for (;;) {
        if (accept_kw(p, KW_MATCH)) { /* MATCH FULL, SIMPLE, PARTIAL */
            if (!at(p, TK_NAME))
                return expected_after(p, "a name") != NULL;
            advance(p);
        } else if (accept_kw(p, KW_ON)) {
            enum ast_fk_action *action = at_kw(p, KW_DELETE)   ? &fk->on_delete
                                         : at_kw(p, KW_UPDATE) ? &fk->on_update
                                                               : NULL;
            if (!action)
                return expected_after(p, "DELETE or UPDATE") != NULL;
            advance(p);
            if (!parse_fk_action(p, action))
                return false;
        } else {
            return true;
        }
    }
}

/* [NOT] DEFERRABLE [INITIALLY DEFERRED | INITIALLY IMMEDIATE] */
static bool parse_deferrable(parser *p)
{
    if (at_kw(p, KW_NOT) && tok_is_kw(peek(p, 1), KW_DEFERRABLE))
        advance(p);
    if (!accept_kw(p, KW_DEFERRABLE))
        return true;
    if (!accept_kw(p, KW_INITIALLY))
        return true;
    if (accept_kw(p, KW_DEFERRED) || accept_kw(p, KW_IMMEDIATE))
        return true;
    return expected_after(p, "DEFERRED or IMMEDIATE") != NULL;
}

/* REFERENCES table [(cols)] clauses */
static bool parse_references(parser *p, ast_foreign_key *fk)
{
    if (!expect_kw(p, KW_REFERENCES) ||
        !parse_name_or_string(p, &fk->table, "a table name after REFERENCES"))
        return false;
    if (at(p, TK_LPAREN) && !parse_name_list(p, &fk->cols, "a column name"))
        return false;
    return parse_fk_clauses(p, fk) && parse_deferrable(p);
}

/* ---- column definitions ------------------------------------------------------------- */

/* DEFAULT value: a literal, a signed number or a parenthesized expression. */
static ast_expr *parse_default(parser *p)
{
    if (accept(p, TK_LPAREN)) {
        ast_expr *e = parse_expr(p);
        return e && expect(p, TK_RPAREN, "')' to close the DEFAULT value")
                   ? e
                   : NULL;
    }
    if (at(p, TK_PLUS) || at(p, TK_MINUS))
        return parse_signed_number(p);
    if (at_literal(p))
        return parse_literal(p);
    return expected_after(p, "a literal, a signed number or a parenthesized "
                             "expression");
}

static ast_expr *parse_paren_expr(parser *p, const char *what)
{
    if (!expect(p, TK_LPAREN, what))
        return NULL;
    ast_expr *e = parse_expr(p);
    return e && expect(p, TK_RPAREN, "')'") ? e : NULL;
}

static bool parse_primary_key_cc(parser *p, ast_col_constraint *c)
{
    if (!expect_kw(p, KW_KEY))
        return false;
    c->kind = AST_CC_PRIMARY_KEY;
    if (accept_kw(p, KW_DESC))
        c->desc = true;
    else
        accept_kw(p, KW_ASC);
    if (!parse_on_conflict(p, &c->on_conflict))
        return false;
    c->autoincrement = accept_kw(p, KW_AUTOINCREMENT);
    return true;
}

/* [GENERATED ALWAYS] AS (expr) [STORED | VIRTUAL] */
static bool parse_generated_cc(parser *p, ast_col_constraint *c)
{
    c->kind = AST_CC_GENERATED;
    if (accept_kw(p, KW_GENERATED) && !expect_kw(p, KW_ALWAYS))
        return false;
    if (!expect_kw(p, KW_AS) ||
        !(c->expr = parse_paren_expr(p, "'(' after AS")))
        return false;
    if (accept_kw(p, KW_STORED))
        c->stored = true;
    else
        accept_kw(p, KW_VIRTUAL);
    return true;
}

static bool parse_col_constraint_body(parser *p, ast_col_constraint *c)
{
    switch (p->tok.kw) {
    case KW_PRIMARY: advance(p); return parse_primary_key_cc(p, c);
    case KW_NOT:
        advance(p);
        c->kind = AST_CC_NOT_NULL;
        return expect_kw(p, KW_NULL) && parse_on_conflict(p, &c->on_conflict);
    case KW_NULL:
        advance(p);
        c->kind = AST_CC_NULL;
        return parse_on_conflict(p, &c->on_conflict);
    case KW_UNIQUE:
        advance(p);
        c->kind = AST_CC_UNIQUE;
        return parse_on_conflict(p, &c->on_conflict);
    case KW_CHECK:
        advance(p);
        c->kind = AST_CC_CHECK;
        return (c->expr = parse_paren_expr(p, "'(' after CHECK")) != NULL;
    case KW_DEFAULT:
        advance(p);
        c->kind = AST_CC_DEFAULT;
        return (c->expr = parse_default(p)) != NULL;
    case KW_COLLATE:
        advance(p);
        c->kind = AST_CC_COLLATE;
        return parse_name_or_string(p, &c->collation,
                                    "a collation name after COLLATE");
    case KW_REFERENCES:
        c->kind = AST_CC_REFERENCES;
        return parse_references(p, &c->fk);
    case KW_GENERATED:
    case KW_AS: return parse_generated_cc(p, c);
    default: return expected(p, "a column constraint") != NULL;
    }
}

static bool at_col_constraint(const parser *p)
{
    switch (at(p, TK_NAME) ? p->tok.kw : KW_NONE) {
    case KW_CONSTRAINT:
    case KW_PRIMARY:
    case KW_NOT:
    case KW_NULL:
    case KW_UNIQUE:
    case KW_CHECK:
    case KW_DEFAULT:
    case KW_COLLATE:
    case KW_REFERENCES:
    case KW_GENERATED:
    case KW_AS: return true;
    default: return false;
    }
}

static bool parse_col_constraint(parser *p, ast_col_constraint *c)
{
    c->off = p->tok.off;
    if (accept_kw(p, KW_CONSTRAINT) &&
        !parse_name_or_string(p, &c->name, "a constraint name"))
        return false;
    return parse_col_constraint_body(p, c);
}

static bool parse_column_def(parser *p, ast_column_def *col)
{
    if (!parse_name_or_string(p, &col->name, "a column name") ||
        !parse_type(p, &col->type))
        return false;
    growable g = { 0 };
    while (at_col_constraint(p)) {
        ast_col_constraint *c = grow_push(p, &g, sizeof *c);
        if (!c || !parse_col_constraint(p, c))
            return false;
    }
    col->ncons = g.n;
    col->cons = g.items;
    return true;
}

/* ---- table constraints ---------------------------------------------------------------- */

static bool at_table_constraint(const parser *p)
{
    return at_kw(p, KW_CONSTRAINT) || at_kw(p, KW_PRIMARY) ||
           at_kw(p, KW_UNIQUE) || at_kw(p, KW_CHECK) || at_kw(p, KW_FOREIGN);
}

/* ( indexed columns [AUTOINCREMENT] ) [ON CONFLICT x] */
static bool parse_key_columns(parser *p, ast_table_constraint *c)
{
    if (!expect(p, TK_LPAREN, "'('") || !parse_order_list(p, &c->cols))
        return false;
    if (c->kind == AST_TC_PRIMARY_KEY)
        c->autoincrement = accept_kw(p, KW_AUTOINCREMENT);
    return expect(p, TK_RPAREN, "',' or ')'") &&
           parse_on_conflict(p, &c->on_conflict);
}

static bool parse_table_constraint(parser *p, ast_table_constraint *c)
{
    c->off = p->tok.off;
    if (accept_kw(p, KW_CONSTRAINT) &&
        !parse_name_or_string(p, &c->name, "a constraint name"))
        return false;
    if (accept_kw(p, KW_PRIMARY)) {
        c->kind = AST_TC_PRIMARY_KEY;
        return expect_kw(p, KW_KEY) && parse_key_columns(p, c);
    }
    if (accept_kw(p, KW_UNIQUE)) {
        c->kind = AST_TC_UNIQUE;
        return parse_key_columns(p, c);
    }
    if (accept_kw(p, KW_CHECK)) {
        c->kind = AST_TC_CHECK;
        return (c->check = parse_paren_expr(p, "'(' after CHECK")) != NULL;
    }
    if (accept_kw(p, KW_FOREIGN)) {
        c->kind = AST_TC_FOREIGN_KEY;
        return expect_kw(p, KW_KEY) &&
               parse_name_list(p, &c->fk_cols, "a column name") &&
               parse_references(p, &c->fk);
    }
    return expected_after(p, "PRIMARY KEY, UNIQUE, CHECK or FOREIGN KEY") !=
           NULL;
}

/* ---- CREATE TABLE ----------------------------------------------------------------------- */

static bool parse_columns(parser *p, ast_create_table *ct)
{
    growable g = { 0 };
    do {
        if (at_table_constraint(p))
            break;
        ast_column_def *col = grow_push(p, &g, sizeof *col);
        if (!col || !parse_column_def(p, col))
            return false;
    } while (accept(p, TK_COMMA));
    if (g.n == 0)
        return expected(p, "a column definition") != NULL;
    ct->ncols = g.n;
    ct->cols = g.items;
    return true;
}

/* Table constraints follow the columns; commas between them are optional,
 * as in SQLite. */
static bool parse_table_constraints(parser *p, ast_create_table *ct)
{
    growable g = { 0 };
    while (at_table_constraint(p)) {
        ast_table_constraint *c = grow_push(p, &g, sizeof *c);
        if (!c || !parse_table_constraint(p, c))
            return false;
        if (accept(p, TK_COMMA) && !at_table_constraint(p))
            return expected(p, "a table constraint") != NULL;
    }
    ct->ncons = g.n;
    ct->cons = g.items;
    return true;
}

/* WITHOUT ROWID, STRICT, comma-separated. */
static bool parse_table_options(parser *p, ast_create_table *ct)
{
    if (!at_kw(p, KW_WITHOUT) && !at_kw(p, KW_STRICT))
        return true;
    do {
        if (accept_kw(p, KW_STRICT))
            ct->strict = true;
        else if (accept_kw(p, KW_WITHOUT) && expect_kw(p, KW_ROWID))
            ct->without_rowid = true;
        else
            return expected(p, "WITHOUT ROWID or STRICT") != NULL;
    } while (accept(p, TK_COMMA));
    return true;
}

static ast_stmt *parse_create_table(parser *p, uint32_t off, bool temp)
{
    ast_stmt *st = stmt_new(p, AST_STMT_CREATE_TABLE, off);
    if (!st)
        return NULL;
    ast_create_table *ct = &st->u.create_table;
    ct->temp = temp;
    advance(p); /* TABLE */
    if (!parse_if_not_exists(p, &ct->if_not_exists) ||
        !parse_qname(p, &ct->name, "a table name"))
        return NULL;
    if (accept_kw(p, KW_AS)) {
        if (!at_query_start(p))
            return expected_after(p, "a query");
        return (ct->as_select = parse_select(p)) ? st : NULL;
    }
    if (!expect(p, TK_LPAREN, "'(' or AS after the table name") ||
        !parse_columns(p, ct) || !parse_table_constraints(p, ct) ||
        !expect(p, TK_RPAREN, "',' or ')'") || !parse_table_options(p, ct))
        return NULL;
    return st;
}

/* ---- CREATE INDEX, VIEW, TRIGGER ------------------------------------------------------ */

static ast_stmt *parse_create_index(parser *p, uint32_t off, bool unique)
{
    ast_stmt *st = stmt_new(p, AST_STMT_CREATE_INDEX, off);
    if (!st)
        return NULL;
    ast_create_index *ci = &st->u.create_index;
    ci->unique = unique;
    if (!expect_kw(p, KW_INDEX) ||
        !parse_if_not_exists(p, &ci->if_not_exists) ||
        !parse_qname(p, &ci->name, "an index name") || !expect_kw(p, KW_ON) ||
        !parse_name_or_string(p, &ci->table, "a table name") ||
        !expect(p, TK_LPAREN, "'(' after the table name") ||
        !parse_order_list(p, &ci->cols) || !expect(p, TK_RPAREN, "',' or ')'"))
        return NULL;
    if (accept_kw(p, KW_USING)) {
        if (accept_kw(p, KW_HASH))
            ci->using_ = AST_USING_HASH;
        else if (accept_kw(p, KW_BTREE))
            ci->using_ = AST_USING_BTREE;
        else
            return expected_after(p, "HASH or BTREE");
    }
    if (accept_kw(p, KW_WHERE) && !(ci->where = parse_expr(p)))
        return NULL;
    return st;
}

static ast_stmt *parse_create_view(parser *p, uint32_t off, bool temp,
                                   bool materialized)
{
    ast_stmt *st = stmt_new(p, AST_STMT_CREATE_VIEW, off);
    if (!st)
        return NULL;
    ast_create_view *cv = &st->u.create_view;
    cv->temp = temp;
    cv->materialized = materialized;
    if (!expect_kw(p, KW_VIEW) ||
        !parse_if_not_exists(p, &cv->if_not_exists) ||
        !parse_qname(p, &cv->name, "a view name"))
        return NULL;
    if (at(p, TK_LPAREN) && !parse_name_list(p, &cv->cols, "a column name"))
        return NULL;
    if (!expect_kw(p, KW_AS))
        return NULL;
    if (!at_query_start(p))
        return expected_after(p, "a query");
    return (cv->select = parse_select(p)) ? st : NULL;
}

/* Unsupported statements that still name an object: the name is kept so
 * that the caller can mention it. */
static ast_stmt *parse_unsupported_create(parser *p, uint32_t off,
                                          const char *what, bool trigger)
{
    ast_stmt *st = stmt_new(p, AST_STMT_UNSUPPORTED, off);
    if (!st)
        return NULL;
    st->u.unsupported.what = what;
    bool ignored = false;
    if (!parse_if_not_exists(p, &ignored) ||
        !parse_qname(p, &st->u.unsupported.name, "a name"))
        return NULL;
    skip_statement(p, trigger);
    return p->rc == LDB_OK ? st : NULL;
}

ast_stmt *parse_create(parser *p)
{
    uint32_t off = p->tok.off;
    advance(p); /* CREATE */
    bool temp = accept_kw(p, KW_TEMP) || accept_kw(p, KW_TEMPORARY);
    if (!temp && accept_kw(p, KW_UNIQUE))
        return parse_create_index(p, off, true);
    if (!temp && at_kw(p, KW_INDEX))
        return parse_create_index(p, off, false);
    if (at_kw(p, KW_TABLE))
        return parse_create_table(p, off, temp);
    if (at_kw(p, KW_VIEW))
        return parse_create_view(p, off, temp, false);
    if (accept_kw(p, KW_MATERIALIZED))
        return parse_create_view(p, off, temp, true);
    if (accept_kw(p, KW_TRIGGER))
        return parse_unsupported_create(p, off, "CREATE TRIGGER", true);
    if (!temp && accept_kw(p, KW_VIRTUAL)) {
        if (!expect_kw(p, KW_TABLE))
            return NULL;
        return parse_unsupported_create(p, off, "CREATE VIRTUAL TABLE", false);
    }
    return expected_after(p, temp ? "TABLE, VIEW or TRIGGER"
                                  : "TABLE, INDEX, VIEW, MATERIALIZED VIEW or "
                                    "TRIGGER");
}

/* ---- DROP ------------------------------------------------------------------------------ */

static bool parse_drop_object(parser *p, enum ast_object *out)
{
    if (accept_kw(p, KW_TABLE))
        *out = AST_OBJ_TABLE;
    else if (accept_kw(p, KW_INDEX))
        *out = AST_OBJ_INDEX;
    else if (accept_kw(p, KW_VIEW))
        *out = AST_OBJ_VIEW;
    else if (accept_kw(p, KW_TRIGGER))
        *out = AST_OBJ_TRIGGER;
    else if (accept_kw(p, KW_MATERIALIZED)) {
        *out = AST_OBJ_MATERIALIZED_VIEW;
        return expect_kw(p, KW_VIEW);
    } else
        return expected_after(p, "TABLE, INDEX, VIEW, MATERIALIZED VIEW or "
                                 "TRIGGER") != NULL;
    return true;
}

ast_stmt *parse_drop(parser *p)
{
    ast_stmt *st = stmt_new(p, AST_STMT_DROP, p->tok.off);
    if (!st)
        return NULL;
    advance(p); /* DROP */
    if (!parse_drop_object(p, &st->u.drop.object))
        return NULL;
    if (at_kw(p, KW_IF) && tok_is_kw(peek(p, 1), KW_EXISTS)) {
        advance(p);
        advance(p);
        st->u.drop.if_exists = true;
    }
    return parse_qname(p, &st->u.drop.name, "a name") ? st : NULL;
}
