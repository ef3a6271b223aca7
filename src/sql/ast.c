/*
 * ast.c - operator names and precedence, and the tree walker.
 *
 * The walker visits children in source order (LIMIT before OFFSET) and is
 * recursive; the parser bounds every tree's height (SQL_MAX_DEPTH), which
 * bounds the recursion.
 */
#include "sql/ast.h"

static const struct {
    const char *name;
    enum ast_prec prec;
} op_info[] = {
    [AST_OP_NEG] = { "-", AST_PREC_UNARY },
    [AST_OP_PLUS] = { "+", AST_PREC_UNARY },
    [AST_OP_BITNOT] = { "~", AST_PREC_UNARY },
    [AST_OP_NOT] = { "NOT", AST_PREC_NOT },
    [AST_OP_ISNULL] = { "IS NULL", AST_PREC_EQ },
    [AST_OP_NOTNULL] = { "IS NOT NULL", AST_PREC_EQ },
    [AST_OP_OR] = { "OR", AST_PREC_OR },
    [AST_OP_AND] = { "AND", AST_PREC_AND },
    [AST_OP_EQ] = { "=", AST_PREC_EQ },
    [AST_OP_NE] = { "!=", AST_PREC_EQ },
    [AST_OP_IS] = { "IS", AST_PREC_EQ },
    [AST_OP_IS_NOT] = { "IS NOT", AST_PREC_EQ },
    [AST_OP_LT] = { "<", AST_PREC_CMP },
    [AST_OP_LE] = { "<=", AST_PREC_CMP },
    [AST_OP_GT] = { ">", AST_PREC_CMP },
    [AST_OP_GE] = { ">=", AST_PREC_CMP },
    [AST_OP_BITAND] = { "&", AST_PREC_BIT },
    [AST_OP_BITOR] = { "|", AST_PREC_BIT },
    [AST_OP_LSHIFT] = { "<<", AST_PREC_BIT },
    [AST_OP_RSHIFT] = { ">>", AST_PREC_BIT },
    [AST_OP_ADD] = { "+", AST_PREC_ADD },
    [AST_OP_SUB] = { "-", AST_PREC_ADD },
    [AST_OP_MUL] = { "*", AST_PREC_MUL },
    [AST_OP_DIV] = { "/", AST_PREC_MUL },
    [AST_OP_MOD] = { "%", AST_PREC_MUL },
    [AST_OP_CONCAT] = { "||", AST_PREC_CONCAT },
    [AST_OP_LIKE] = { "LIKE", AST_PREC_EQ },
    [AST_OP_GLOB] = { "GLOB", AST_PREC_EQ },
    [AST_OP_REGEXP] = { "REGEXP", AST_PREC_EQ },
    [AST_OP_MATCH] = { "MATCH", AST_PREC_EQ },
};

const char *ast_op_name(enum ast_op op) { return op_info[op].name; }

enum ast_prec ast_op_prec(enum ast_op op) { return op_info[op].prec; }

/* ---- walking ---------------------------------------------------------------- */

#define WALK(call)                                                            \
    do {                                                                      \
        int walk_rc_ = (call);                                                \
        if (walk_rc_ != AST_WALK_CONTINUE)                                    \
            return walk_rc_;                                                  \
    } while (0)

static int walk_list(ast_visitor *v, const ast_expr_list *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        WALK(ast_walk_expr(v, l->items[i]));
    return AST_WALK_CONTINUE;
}

static int walk_order(ast_visitor *v, const ast_order_list *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        WALK(ast_walk_expr(v, l->items[i].expr));
    return AST_WALK_CONTINUE;
}

static int walk_results(ast_visitor *v, const ast_result_list *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        WALK(ast_walk_expr(v, l->items[i].expr));
    return AST_WALK_CONTINUE;
}

static int walk_select_opt(ast_visitor *v, ast_select *s)
{
    return s ? ast_walk_select(v, s) : AST_WALK_CONTINUE;
}

static int walk_case(ast_visitor *v, ast_expr *e)
{
    WALK(ast_walk_expr(v, e->u.case_.base));
    for (uint32_t i = 0; i < e->u.case_.nwhen; i++) {
        WALK(ast_walk_expr(v, e->u.case_.whens[i].when));
        WALK(ast_walk_expr(v, e->u.case_.whens[i].then));
    }
    return ast_walk_expr(v, e->u.case_.else_expr);
}

static int walk_children(ast_visitor *v, ast_expr *e)
{
    switch ((enum ast_expr_kind)e->kind) {
    case AST_UNARY: return ast_walk_expr(v, e->u.unary.operand);
    case AST_BINARY:
        WALK(ast_walk_expr(v, e->u.binary.left));
        return ast_walk_expr(v, e->u.binary.right);
    case AST_COLLATE: return ast_walk_expr(v, e->u.collate.operand);
    case AST_BETWEEN:
        WALK(ast_walk_expr(v, e->u.between.operand));
        WALK(ast_walk_expr(v, e->u.between.low));
        return ast_walk_expr(v, e->u.between.high);
    case AST_IN_LIST:
    case AST_IN_SELECT:
    case AST_IN_TABLE:
        WALK(ast_walk_expr(v, e->u.in.operand));
        WALK(walk_list(v, &e->u.in.list));
        return walk_select_opt(v, e->u.in.select);
    case AST_LIKE:
        WALK(ast_walk_expr(v, e->u.like.operand));
        WALK(ast_walk_expr(v, e->u.like.pattern));
        return ast_walk_expr(v, e->u.like.escape);
    case AST_CASE: return walk_case(v, e);
    case AST_CAST: return ast_walk_expr(v, e->u.cast.operand);
    case AST_CALL:
        WALK(walk_list(v, &e->u.call.args));
        WALK(walk_order(v, &e->u.call.order_by));
        return ast_walk_expr(v, e->u.call.filter);
    case AST_EXISTS:
    case AST_ARRAY:
    case AST_LIVE:
    case AST_SUBQUERY: return ast_walk_select(v, e->u.subquery.select);
    case AST_ROW: return walk_list(v, &e->u.row);
    case AST_LITERAL:
    case AST_CURRENT:
    case AST_COLUMN:
    case AST_PARAM: return AST_WALK_CONTINUE;
    }
    return AST_WALK_CONTINUE;
}

int ast_walk_expr(ast_visitor *v, ast_expr *e)
{
    if (!e)
        return AST_WALK_CONTINUE;
    if (v->expr) {
        int rc = v->expr(v, e);
        if (rc == AST_WALK_SKIP)
            return AST_WALK_CONTINUE;
        if (rc != AST_WALK_CONTINUE)
            return rc;
    }
    return walk_children(v, e);
}

static int walk_from(ast_visitor *v, ast_from *f)
{
    if (!f)
        return AST_WALK_CONTINUE;
    switch (f->kind) {
    case AST_FROM_TABLE: return AST_WALK_CONTINUE;
    case AST_FROM_SUBQUERY: return ast_walk_select(v, f->u.subquery);
    case AST_FROM_JOIN:
        WALK(walk_from(v, f->u.join.left));
        WALK(walk_from(v, f->u.join.right));
        return ast_walk_expr(v, f->u.join.on);
    }
    return AST_WALK_CONTINUE;
}

static int walk_body(ast_visitor *v, ast_body *b)
{
    switch (b->kind) {
    case AST_BODY_SELECT: {
        ast_select_core *c = &b->u.select;
        WALK(walk_results(v, &c->cols));
        WALK(walk_from(v, c->from));
        WALK(ast_walk_expr(v, c->where));
        WALK(walk_list(v, &c->group_by));
        return ast_walk_expr(v, c->having);
    }
    case AST_BODY_VALUES:
        for (uint32_t i = 0; i < b->u.values.nrows; i++)
            WALK(walk_list(v, &b->u.values.rows[i]));
        return AST_WALK_CONTINUE;
    case AST_BODY_COMPOUND:
        WALK(walk_body(v, b->u.compound.left));
        return walk_body(v, b->u.compound.right);
    }
    return AST_WALK_CONTINUE;
}

static int walk_with(ast_visitor *v, const ast_with *w)
{
    for (uint32_t i = 0; i < w->n; i++)
        WALK(ast_walk_select(v, w->items[i].select));
    return AST_WALK_CONTINUE;
}

int ast_walk_select(ast_visitor *v, ast_select *s)
{
    if (v->select) {
        int rc = v->select(v, s);
        if (rc == AST_WALK_SKIP)
            return AST_WALK_CONTINUE;
        if (rc != AST_WALK_CONTINUE)
            return rc;
    }
    WALK(walk_with(v, &s->with));
    WALK(walk_body(v, s->body));
    WALK(walk_order(v, &s->order_by));
    WALK(ast_walk_expr(v, s->limit));
    return ast_walk_expr(v, s->offset);
}

static int walk_assigns(ast_visitor *v, const ast_assign_list *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        WALK(ast_walk_expr(v, l->items[i].value));
    return AST_WALK_CONTINUE;
}

static int walk_insert(ast_visitor *v, ast_insert *ins)
{
    WALK(walk_with(v, &ins->with));
    WALK(walk_select_opt(v, ins->source));
    for (uint32_t i = 0; i < ins->nupsert; i++) {
        ast_upsert *u = &ins->upserts[i];
        WALK(walk_order(v, &u->target));
        WALK(ast_walk_expr(v, u->target_where));
        WALK(walk_assigns(v, &u->set));
        WALK(ast_walk_expr(v, u->where));
    }
    return walk_results(v, &ins->returning);
}

static int walk_create_table(ast_visitor *v, ast_create_table *ct)
{
    for (uint32_t i = 0; i < ct->ncols; i++)
        for (uint32_t k = 0; k < ct->cols[i].ncons; k++)
            WALK(ast_walk_expr(v, ct->cols[i].cons[k].expr));
    for (uint32_t i = 0; i < ct->ncons; i++) {
        WALK(walk_order(v, &ct->cons[i].cols));
        WALK(ast_walk_expr(v, ct->cons[i].check));
    }
    return walk_select_opt(v, ct->as_select);
}

int ast_walk_stmt(ast_visitor *v, ast_stmt *st)
{
    switch (st->kind) {
    case AST_STMT_SELECT: return ast_walk_select(v, st->u.select);
    case AST_STMT_INSERT: return walk_insert(v, &st->u.insert);
    case AST_STMT_UPDATE:
        WALK(walk_with(v, &st->u.update.with));
        WALK(walk_assigns(v, &st->u.update.set));
        WALK(ast_walk_expr(v, st->u.update.where));
        return walk_results(v, &st->u.update.returning);
    case AST_STMT_DELETE:
        WALK(walk_with(v, &st->u.delete_.with));
        WALK(ast_walk_expr(v, st->u.delete_.where));
        return walk_results(v, &st->u.delete_.returning);
    case AST_STMT_CREATE_TABLE: return walk_create_table(v, &st->u.create_table);
    case AST_STMT_CREATE_INDEX:
        WALK(walk_order(v, &st->u.create_index.cols));
        return ast_walk_expr(v, st->u.create_index.where);
    case AST_STMT_CREATE_VIEW: return ast_walk_select(v, st->u.create_view.select);
    case AST_STMT_EXPLAIN: return ast_walk_stmt(v, st->u.explain.stmt);
    case AST_STMT_PRAGMA: return ast_walk_expr(v, st->u.pragma.value);
    default: return AST_WALK_CONTINUE;
    }
}
