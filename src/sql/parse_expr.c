/*
 * parse_expr.c - expressions, by precedence climbing.
 *
 * parse_expr_above(level) parses a prefix expression (parse_unary) and then
 * applies infix and postfix operators while their level is at least
 * `level`; a left-associative operator parses its right operand one level
 * higher. The levels are SQLite's (enum ast_prec, docs/SQL.md), including
 * its quirks: prefix NOT takes everything above NOT as its operand even
 * after a tighter operator (a + NOT b = c is a + (NOT (b = c))), and the
 * EQ-level postfix forms (IN, BETWEEN, LIKE, ISNULL, ...) leave the loop
 * free to apply tighter operators to their result, as SQLite's LALR
 * grammar does ((x IN (1)) + 1).
 *
 * Every node leaves through expr_finish, which records its source length
 * and height and enforces SQL_MAX_DEPTH on the height.
 */
#include "sql/parser_internal.h"

#include <strings.h>

#include "base/hash.h"
#include "livedb.h"

#include <string.h>

/* ---- nodes --------------------------------------------------------------------- */

ast_expr *expr_new(parser *p, enum ast_expr_kind kind, uint32_t off)
{
    ast_expr *e = node_alloc(p, sizeof *e);
    if (e) {
        e->kind = (uint8_t)kind;
        e->off = off;
    }
    return e;
}

ast_expr *expr_finish(parser *p, ast_expr *e, uint32_t child_height)
{
    uint32_t h = child_height + 1;
    if (h > SQL_MAX_DEPTH)
        return error_at(p, &p->tok, "expression nested too deeply (the "
                                    "limit is %d levels)", SQL_MAX_DEPTH);
    e->len = p->prev_end - e->off;
    e->height = (uint16_t)h;
    if (h > p->height)
        p->height = h;
    return e;
}

static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

static uint32_t list_height(const ast_expr_list *l)
{
    uint32_t h = 0;
    for (uint32_t i = 0; i < l->n; i++)
        h = max_u32(h, l->items[i]->height);
    return h;
}

static ast_expr *make_unary(parser *p, enum ast_op op, ast_expr *operand,
                            uint32_t off)
{
    ast_expr *e = expr_new(p, AST_UNARY, off);
    if (!e)
        return NULL;
    e->u.unary.op = op;
    e->u.unary.operand = operand;
    return expr_finish(p, e, operand->height);
}

static ast_expr *make_binary(parser *p, enum ast_op op, ast_expr *l,
                             ast_expr *r)
{
    ast_expr *e = expr_new(p, AST_BINARY, l->off);
    if (!e)
        return NULL;
    e->u.binary.op = op;
    e->u.binary.left = l;
    e->u.binary.right = r;
    return expr_finish(p, e, max_u32(l->height, r->height));
}

bool parse_expr_list(parser *p, ast_expr_list *out)
{
    growable g = { 0 };
    do {
        ast_expr **slot = grow_push(p, &g, sizeof *slot);
        if (!slot || !(*slot = parse_expr(p)))
            return false;
    } while (accept(p, TK_COMMA));
    out->n = g.n;
    out->items = g.items;
    return true;
}

/* ---- literals -------------------------------------------------------------------- */

/* Stores a decoded TEXT/BLOB value; heap values join the owned chain. */
static ast_expr *literal_bytes(parser *p, ast_expr *e, bool blob,
                               const char *bytes, uint32_t n)
{
    int rc = blob ? value_blob(&e->u.literal.v, bytes, n)
                  : value_text(&e->u.literal.v, bytes, n);
    if (rc == LDB_NOMEM)
        return out_of_memory(p);
    if (rc != LDB_OK)
        return error_at(p, &p->prev, "literal is too long");
    if (value_has_obj(&e->u.literal.v)) {
        e->u.literal.next_owned = p->ast->owned;
        p->ast->owned = e;
    }
    return e;
}

static ast_expr *literal_from_token(parser *p, ast_expr *e, const token *t)
{
    const char *s = p->lx.src + t->off;
    uint32_t n;
    switch (t->kind) {
    case TK_STRING: {
        char *text = lex_unquote(p->a, s, t->len, &n);
        return text ? literal_bytes(p, e, false, text, n) : out_of_memory(p);
    }
    case TK_BLOB: {
        char *bytes = lex_blob(p->a, s, t->len, &n);
        return bytes ? literal_bytes(p, e, true, bytes, n) : out_of_memory(p);
    }
    default: {
        lex_number num;
        if (!lex_decode_number(p->a, s, t->len, &num))
            return out_of_memory(p);
        e->u.literal.v = num.is_int ? value_int(num.i) : value_real(num.r);
        return e;
    }
    }
}

bool at_literal(const parser *p)
{
    switch (p->tok.kind) {
    case TK_INTEGER:
    case TK_FLOAT:
    case TK_STRING:
    case TK_BLOB: return true;
    case TK_NAME:
        switch (p->tok.kw) {
        case KW_NULL:
        case KW_TRUE:
        case KW_FALSE:
        case KW_CURRENT_DATE:
        case KW_CURRENT_TIME:
        case KW_CURRENT_TIMESTAMP: return true;
        default: return false;
        }
    default: return false;
    }
}

static ast_expr *parse_current(parser *p, enum ast_current which)
{
    ast_expr *e = expr_new(p, AST_CURRENT, p->tok.off);
    if (!e)
        return NULL;
    e->u.current = which;
    advance(p);
    return expr_finish(p, e, 0);
}

ast_expr *parse_literal(parser *p)
{
    if (at_kw(p, KW_CURRENT_DATE))
        return parse_current(p, AST_CURRENT_DATE);
    if (at_kw(p, KW_CURRENT_TIME))
        return parse_current(p, AST_CURRENT_TIME);
    if (at_kw(p, KW_CURRENT_TIMESTAMP))
        return parse_current(p, AST_CURRENT_TIMESTAMP);
    ast_expr *e = expr_new(p, AST_LITERAL, p->tok.off);
    if (!e)
        return NULL;
    token t = p->tok;
    advance(p);
    if (tok_is_kw(&t, KW_NULL))
        e->u.literal.v = value_null();
    else if (tok_is_kw(&t, KW_TRUE) || tok_is_kw(&t, KW_FALSE))
        e->u.literal.v = value_bool(tok_is_kw(&t, KW_TRUE));
    else if (!literal_from_token(p, e, &t))
        return NULL;
    return expr_finish(p, e, 0);
}

/* True for the decimal integer token 9223372036854775808 (2^63), which
 * only exists as the operand of a minus. */
static bool is_two_to_63(const parser *p, const token *t)
{
    static const char digits[] = "9223372036854775808";
    if (t->kind != TK_INTEGER)
        return false;
    const char *s = p->lx.src + t->off;
    uint32_t n = t->len;
    while (n > 1 && *s == '0') {
        s++;
        n--;
    }
    return n == sizeof digits - 1 && memcmp(s, digits, n) == 0;
}

/* At a '-' directly followed by 2^63: the literal INT64_MIN. */
static ast_expr *parse_int64_min(parser *p)
{
    ast_expr *e = expr_new(p, AST_LITERAL, p->tok.off);
    if (!e)
        return NULL;
    advance(p); /* - */
    advance(p); /* 9223372036854775808 */
    e->u.literal.v = value_int(INT64_MIN);
    return expr_finish(p, e, 0);
}

ast_expr *parse_signed_number(parser *p)
{
    if (at(p, TK_MINUS) && is_two_to_63(p, peek(p, 1)))
        return parse_int64_min(p);
    uint32_t off = p->tok.off;
    bool minus = at(p, TK_MINUS), sign = minus || at(p, TK_PLUS);
    if (sign)
        advance(p);
    if (!at(p, TK_INTEGER) && !at(p, TK_FLOAT))
        return sign ? expected_after(p, "a number") : expected(p, "a number");
    ast_expr *num = parse_literal(p);
    if (!num || !sign)
        return num;
    return make_unary(p, minus ? AST_OP_NEG : AST_OP_PLUS, num, off);
}

/* ---- parameters ------------------------------------------------------------------ */

struct param_key {
    const char *name;
    uint32_t len;
    const char *const *names;
};

static bool param_eq(const void *key, uint64_t val)
{
    const struct param_key *k = key;
    const char *name = k->names[val - 1];
    return strlen(name) == k->len && memcmp(name, k->name, k->len) == 0;
}

/* Makes param_names cover number n. */
static bool reserve_params(parser *p, uint32_t n)
{
    sql_ast *ast = p->ast;
    if (n > ast->nparams)
        ast->nparams = n;
    if (n <= p->param_cap)
        return true;
    uint32_t cap = p->param_cap ? p->param_cap : 8;
    while (cap < n)
        cap *= 2;
    const char **names = arena_calloc(p->a, cap * sizeof *names);
    if (!names)
        return out_of_memory(p) != NULL;
    if (p->param_cap)
        memcpy(names, ast->param_names, p->param_cap * sizeof *names);
    ast->param_names = names;
    p->param_cap = cap;
    return true;
}

/* ?NNN: the explicit number, or 0 after an error. */
static uint32_t explicit_param_number(parser *p, const token *t)
{
    uint32_t n = 0;
    for (uint32_t i = 1; i < t->len && n <= SQL_MAX_PARAM; i++)
        n = n * 10 + (uint32_t)(p->lx.src[t->off + i] - '0');
    if (n < 1 || n > SQL_MAX_PARAM) {
        error_at(p, t, "parameter number must be between 1 and %d",
                 SQL_MAX_PARAM);
        return 0;
    }
    return n;
}

/* Number of a named parameter: its earlier number, or the next one. */
static uint32_t named_param_number(parser *p, const ast_name *name)
{
    struct param_key key = { name->str, name->len, p->ast->param_names };
    uint64_t hash = hash_bytes(name->str, name->len, HASH_SEED);
    uint64_t *slot = hmap_get(&p->param_index, hash, param_eq, &key);
    if (slot)
        return (uint32_t)*slot;
    uint32_t n = p->ast->nparams + 1;
    if (!reserve_params(p, n))
        return 0;
    p->ast->param_names[n - 1] = name->str;
    key.names = p->ast->param_names;
    bool found;
    if (hmap_put(&p->param_index, hash, param_eq, &key, &slot, &found) !=
        LDB_OK) {
        out_of_memory(p);
        return 0;
    }
    *slot = n;
    return n;
}

static ast_expr *parse_param(parser *p)
{
    token t = p->tok;
    ast_expr *e = expr_new(p, AST_PARAM, t.off);
    if (!e)
        return NULL;
    advance(p);
    const char *s = p->lx.src + t.off;
    uint32_t n;
    if (s[0] != '?') {
        e->u.param.name.off = t.off;
        e->u.param.name.len = t.len;
        e->u.param.name.str = arena_copy(p, s, t.len);
        if (!e->u.param.name.str)
            return NULL;
        n = named_param_number(p, &e->u.param.name);
    } else if (t.len > 1) {
        n = explicit_param_number(p, &t);
        if (n && !reserve_params(p, n))
            n = 0;
    } else if (p->ast->nparams >= SQL_MAX_PARAM) {
        error_at(p, &t, "too many parameters (the limit is %d)",
                 SQL_MAX_PARAM);
        n = 0;
    } else {
        n = p->ast->nparams + 1;
        if (!reserve_params(p, n))
            n = 0;
    }
    if (n == 0)
        return NULL;
    e->u.param.number = n;
    return expr_finish(p, e, 0);
}

/* ---- primary expressions ------------------------------------------------------- */

/* [schema.]table.]column, starting at a name. */
static ast_expr *parse_column_ref(parser *p)
{
    ast_expr *e = expr_new(p, AST_COLUMN, p->tok.off);
    if (!e || !parse_name(p, &e->u.column.column, "a column name"))
        return NULL;
    if (accept(p, TK_DOT)) {
        e->u.column.table = e->u.column.column;
        if (!parse_name(p, &e->u.column.column, "a column name after '.'"))
            return NULL;
        if (accept(p, TK_DOT)) {
            e->u.column.schema = e->u.column.table;
            e->u.column.table = e->u.column.column;
            if (!parse_name(p, &e->u.column.column,
                            "a column name after '.'"))
                return NULL;
        }
    }
    return expr_finish(p, e, 0);
}

/* FILTER (WHERE e) and OVER after a call's ')'. */
static bool parse_call_suffix(parser *p, ast_expr *e)
{
    if (at_kw(p, KW_FILTER) && peek(p, 1)->kind == TK_LPAREN) {
        advance(p);
        advance(p);
        if (!expect_kw(p, KW_WHERE) || !(e->u.call.filter = parse_expr(p)) ||
            !expect(p, TK_RPAREN, "')' after the FILTER condition"))
            return false;
    }
    if (at_kw(p, KW_OVER)) {
        const token *next = peek(p, 1);
        if (next->kind == TK_LPAREN || tok_is_name(next)) {
            unsupported_at(p, &p->tok, "window functions are not supported");
            return false;
        }
    }
    return true;
}

static bool parse_call_args(parser *p, ast_expr *e)
{
    if (accept(p, TK_STAR)) {
        e->u.call.star = true;
        return true;
    }
    if (at(p, TK_RPAREN))
        return true;
    if (accept_kw(p, KW_DISTINCT))
        e->u.call.distinct = true;
    else
        accept_kw(p, KW_ALL);
    if (!parse_expr_list(p, &e->u.call.args))
        return false;
    if (at_kw(p, KW_ORDER)) {
        advance(p);
        if (!expect_kw(p, KW_BY) ||
            !parse_order_list(p, &e->u.call.order_by))
            return false;
    }
    return true;
}

/* name ( args ) [FILTER (WHERE e)] */
static ast_expr *parse_call(parser *p)
{
    ast_expr *e = expr_new(p, AST_CALL, p->tok.off);
    if (!e || !take_name(p, &e->u.call.name))
        return NULL;
    advance(p); /* ( */
    if (!parse_call_args(p, e) ||
        !expect(p, TK_RPAREN, "')' to close the argument list") ||
        !parse_call_suffix(p, e))
        return NULL;
    uint32_t h = max_u32(list_height(&e->u.call.args),
                         e->u.call.filter ? e->u.call.filter->height : 0);
    for (uint32_t i = 0; i < e->u.call.order_by.n; i++)
        h = max_u32(h, e->u.call.order_by.items[i].expr->height);
    return expr_finish(p, e, h);
}

static ast_expr *parse_subquery_expr(parser *p, enum ast_expr_kind kind,
                                     uint32_t off)
{
    ast_expr *e = expr_new(p, kind, off);
    if (!e || !(e->u.subquery.select = parse_select(p)) ||
        !expect(p, TK_RPAREN, "')' to close the subquery"))
        return NULL;
    return expr_finish(p, e, e->u.subquery.select->height);
}

/* ( expr ), ( expr, expr, ... ) or ( select ). */
static ast_expr *parse_paren(parser *p)
{
    uint32_t off = p->tok.off;
    advance(p); /* ( */
    if (at_query_start(p))
        return parse_subquery_expr(p, AST_SUBQUERY, off);
    ast_expr_list list;
    if (!parse_expr_list(p, &list) ||
        !expect(p, TK_RPAREN, "',' or ')'"))
        return NULL;
    if (list.n == 1)
        return list.items[0];
    ast_expr *e = expr_new(p, AST_ROW, off);
    if (!e)
        return NULL;
    e->u.row = list;
    return expr_finish(p, e, list_height(&list));
}

static ast_expr *parse_exists(parser *p)
{
    uint32_t off = p->tok.off;
    advance(p); /* EXISTS */
    if (!expect(p, TK_LPAREN, "'(' after EXISTS"))
        return NULL;
    if (!at_query_start(p))
        return expected(p, "a subquery after 'EXISTS ('");
    return parse_subquery_expr(p, AST_EXISTS, off);
}

static bool parse_case_whens(parser *p, ast_expr *e)
{
    growable g = { 0 };
    while (accept_kw(p, KW_WHEN)) {
        ast_when *w = grow_push(p, &g, sizeof *w);
        if (!w || !(w->when = parse_expr(p)) || !expect_kw(p, KW_THEN) ||
            !(w->then = parse_expr(p)))
            return false;
    }
    if (g.n == 0)
        return expected(p, "WHEN") != NULL;
    e->u.case_.nwhen = g.n;
    e->u.case_.whens = g.items;
    return true;
}

static ast_expr *parse_case(parser *p)
{
    ast_expr *e = expr_new(p, AST_CASE, p->tok.off);
    if (!e)
        return NULL;
    advance(p); /* CASE */
    if (!at_kw(p, KW_WHEN) && !(e->u.case_.base = parse_expr(p)))
        return NULL;
    if (!parse_case_whens(p, e))
        return NULL;
    if (accept_kw(p, KW_ELSE) && !(e->u.case_.else_expr = parse_expr(p)))
        return NULL;
    if (!expect_kw(p, KW_END))
        return NULL;
    uint32_t h = e->u.case_.base ? e->u.case_.base->height : 0;
    for (uint32_t i = 0; i < e->u.case_.nwhen; i++)
        h = max_u32(h, max_u32(e->u.case_.whens[i].when->height,
                               e->u.case_.whens[i].then->height));
    if (e->u.case_.else_expr)
        h = max_u32(h, e->u.case_.else_expr->height);
    return expr_finish(p, e, h);
}

static ast_expr *parse_cast(parser *p)
{
    ast_expr *e = expr_new(p, AST_CAST, p->tok.off);
    if (!e)
        return NULL;
    advance(p); /* CAST */
    advance(p); /* ( */
    if (!(e->u.cast.operand = parse_expr(p)) || !expect_kw(p, KW_AS))
        return NULL;
    if (!parse_type(p, &e->u.cast.type))
        return NULL;
    if (!e->u.cast.type.name)
        return expected_after(p, "a type name");
    if (!expect(p, TK_RPAREN, "')' to close CAST"))
        return NULL;
    return expr_finish(p, e, e->u.cast.operand->height);
}

/* ARRAY (query) and LIVE (query): the name (not a keyword: array(1, 2)
 * stays a call) followed by a parenthesized query: true, with the kind
 * of node it starts in *kind. */
static bool at_named_subquery(parser *p, enum ast_expr_kind *kind)
{
    static const struct {
        const char *word;
        enum ast_expr_kind kind;
    } words[] = { { "array", AST_ARRAY }, { "live", AST_LIVE } };
    const token *q = peek(p, 2);
    if (peek(p, 1)->kind != TK_LPAREN || q->kind != TK_NAME ||
        !(q->kw == KW_SELECT || q->kw == KW_VALUES || q->kw == KW_WITH))
        return false;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (p->tok.len == strlen(words[i].word) &&
            strncasecmp(p->lx.src + p->tok.off, words[i].word, p->tok.len) == 0) {
            *kind = words[i].kind;
            return true;
        }
    return false;
}

static ast_expr *parse_named_subquery(parser *p, enum ast_expr_kind kind)
{
    uint32_t off = p->tok.off;
    advance(p); /* the name */
    advance(p); /* ( */
    return parse_subquery_expr(p, kind, off);
}

/* Keywords that start a primary expression of their own. */
static ast_expr *parse_keyword_primary(parser *p)
{
    bool call = peek(p, 1)->kind == TK_LPAREN;
    switch (p->tok.kw) {
    case KW_CASE: return parse_case(p);
    case KW_EXISTS: return parse_exists(p);
    case KW_CAST:
        if (call)
            return parse_cast(p);
        break;
    case KW_LIKE:
    case KW_GLOB:
    case KW_REGEXP:
    case KW_MATCH:
        if (call) /* like(a, b) is an ordinary function */
            return parse_call(p);
        break;
    default:
        if (at_literal(p))
            return parse_literal(p);
    }
    if (!tok_is_name(&p->tok))
        return expected_after(p, "an expression");
    enum ast_expr_kind named;
    if (call && at_named_subquery(p, &named))
        return parse_named_subquery(p, named);
    return call ? parse_call(p) : parse_column_ref(p);
}

static ast_expr *parse_primary(parser *p)
{
    switch (p->tok.kind) {
    case TK_INTEGER:
    case TK_FLOAT:
    case TK_STRING:
    case TK_BLOB: return parse_literal(p);
    case TK_PARAM: return parse_param(p);
    case TK_LPAREN: return parse_paren(p);
    case TK_QNAME:
        return peek(p, 1)->kind == TK_LPAREN ? parse_call(p)
                                             : parse_column_ref(p);
    case TK_NAME: return parse_keyword_primary(p);
    default: return expected_after(p, "an expression");
    }
}

/* ---- prefix operators ------------------------------------------------------------- */

static ast_expr *parse_unary(parser *p);

static ast_expr *parse_prefix(parser *p, enum ast_op op)
{
    uint32_t off = p->tok.off;
    advance(p);
    if (!enter(p))
        return NULL;
    /* NOT takes everything above it: NOT a = b is NOT (a = b). */
    ast_expr *operand = op == AST_OP_NOT ? parse_expr_above(p, AST_PREC_EQ)
                                         : parse_unary(p);
    leave(p);
    return operand ? make_unary(p, op, operand, off) : NULL;
}

static ast_expr *parse_unary(parser *p)
{
    switch (p->tok.kind) {
    case TK_MINUS:
        if (is_two_to_63(p, peek(p, 1)))
            return parse_int64_min(p);
        return parse_prefix(p, AST_OP_NEG);
    case TK_PLUS: return parse_prefix(p, AST_OP_PLUS);
    case TK_BITNOT: return parse_prefix(p, AST_OP_BITNOT);
    case TK_NAME:
        if (p->tok.kw == KW_NOT)
            return parse_prefix(p, AST_OP_NOT);
        return parse_primary(p);
    default: return parse_primary(p);
    }
}

/* ---- infix and postfix operators --------------------------------------------------- */

/* Binary operator of a token, or false. */
static bool binary_op(const token *t, enum ast_op *op)
{
    static const enum ast_op by_token[] = {
        [TK_CONCAT] = AST_OP_CONCAT, [TK_STAR] = AST_OP_MUL,
        [TK_SLASH] = AST_OP_DIV,     [TK_PERCENT] = AST_OP_MOD,
        [TK_PLUS] = AST_OP_ADD,      [TK_MINUS] = AST_OP_SUB,
        [TK_BITAND] = AST_OP_BITAND, [TK_BITOR] = AST_OP_BITOR,
        [TK_LSHIFT] = AST_OP_LSHIFT, [TK_RSHIFT] = AST_OP_RSHIFT,
        [TK_LT] = AST_OP_LT,         [TK_LE] = AST_OP_LE,
        [TK_GT] = AST_OP_GT,         [TK_GE] = AST_OP_GE,
        [TK_EQ] = AST_OP_EQ,         [TK_NE] = AST_OP_NE,
    };
    if (t->kind == TK_NAME && (t->kw == KW_AND || t->kw == KW_OR)) {
        *op = t->kw == KW_AND ? AST_OP_AND : AST_OP_OR;
        return true;
    }
    /* 0 (AST_OP_NEG) marks tokens that are not binary operators. */
    if (t->kind >= sizeof by_token / sizeof by_token[0] ||
        by_token[t->kind] == 0)
        return false;
    *op = by_token[t->kind];
    return true;
}

/* Pattern operator keyword (LIKE, GLOB, REGEXP, MATCH), or false. */
static bool like_op(const token *t, enum ast_op *op)
{
    if (t->kind != TK_NAME)
        return false;
    switch (t->kw) {
    case KW_LIKE: *op = AST_OP_LIKE; return true;
    case KW_GLOB: *op = AST_OP_GLOB; return true;
    case KW_REGEXP: *op = AST_OP_REGEXP; return true;
    case KW_MATCH: *op = AST_OP_MATCH; return true;
    default: return false;
    }
}

/* Keywords that may follow NOT as an infix operator. */
static bool negatable(const token *t)
{
    enum ast_op op;
    return like_op(t, &op) || tok_is_kw(t, KW_BETWEEN) ||
           tok_is_kw(t, KW_IN) || tok_is_kw(t, KW_NULL);
}

/* Level of the infix or postfix operator at the current token, or 0. */
static int infix_level(parser *p)
{
    enum ast_op op;
    if (binary_op(&p->tok, &op))
        return (int)ast_op_prec(op);
    if (!at(p, TK_NAME))
        return 0;
    switch (p->tok.kw) {
    case KW_COLLATE: return AST_PREC_COLLATE;
    case KW_IS:
    case KW_IN:
    case KW_BETWEEN:
    case KW_ISNULL:
    case KW_NOTNULL:
    case KW_LIKE:
    case KW_GLOB:
    case KW_REGEXP:
    case KW_MATCH: return AST_PREC_EQ;
    case KW_NOT: return negatable(peek(p, 1)) ? AST_PREC_EQ : 0;
    default: return 0;
    }
}

static ast_expr *parse_collate(parser *p, ast_expr *left)
{
    advance(p); /* COLLATE */
    ast_expr *e = expr_new(p, AST_COLLATE, left->off);
    if (!e)
        return NULL;
    e->u.collate.operand = left;
    if (!parse_name_or_string(p, &e->u.collate.collation,
                              "a collation name after COLLATE"))
        return NULL;
    return expr_finish(p, e, left->height);
}

/* IS [NOT] [DISTINCT FROM] right; IS NULL becomes a postfix node. */
static ast_expr *parse_is(parser *p, ast_expr *left)
{
    advance(p); /* IS */
    bool negated = accept_kw(p, KW_NOT);
    if (accept_kw(p, KW_DISTINCT)) {
        if (!expect_kw(p, KW_FROM))
            return NULL;
        negated = !negated;
    }
    ast_expr *right = parse_expr_above(p, AST_PREC_EQ + 1);
    if (!right)
        return NULL;
    if (right->kind == AST_LITERAL && value_is_null(&right->u.literal.v))
        return make_unary(p, negated ? AST_OP_NOTNULL : AST_OP_ISNULL, left,
                          left->off);
    return make_binary(p, negated ? AST_OP_IS_NOT : AST_OP_IS, left, right);
}

static ast_expr *parse_between(parser *p, ast_expr *left, bool negated)
{
    advance(p); /* BETWEEN */
    ast_expr *e = expr_new(p, AST_BETWEEN, left->off);
    if (!e)
        return NULL;
    e->u.between.negated = negated;
    e->u.between.operand = left;
    /* The low bound stops at AND, so it takes nothing looser than = */
    if (!(e->u.between.low = parse_expr_above(p, AST_PREC_EQ)) ||
        !expect_kw(p, KW_AND) ||
        !(e->u.between.high = parse_expr_above(p, AST_PREC_EQ + 1)))
        return NULL;
    return expr_finish(p, e,
                       max_u32(left->height,
                               max_u32(e->u.between.low->height,
                                       e->u.between.high->height)));
}

static ast_expr *parse_in_paren(parser *p, ast_expr *e)
{
    advance(p); /* ( */
    if (at_query_start(p)) {
        e->kind = AST_IN_SELECT;
        if (!(e->u.in.select = parse_select(p)))
            return NULL;
    } else if (!at(p, TK_RPAREN) && !parse_expr_list(p, &e->u.in.list)) {
        return NULL;
    }
    if (!expect(p, TK_RPAREN, "',' or ')' to close the IN list"))
        return NULL;
    uint32_t h = e->kind == AST_IN_SELECT ? e->u.in.select->height
                                          : list_height(&e->u.in.list);
    return expr_finish(p, e, max_u32(e->u.in.operand->height, h));
}

static ast_expr *parse_in(parser *p, ast_expr *left, bool negated)
{
    advance(p); /* IN */
    ast_expr *e = expr_new(p, AST_IN_LIST, left->off);
    if (!e)
        return NULL;
    e->u.in.negated = negated;
    e->u.in.operand = left;
    if (at(p, TK_LPAREN))
        return parse_in_paren(p, e);
    e->kind = AST_IN_TABLE;
    if (!tok_is_name(&p->tok))
        return expected_after(p, "'(' or a table name");
    if (!parse_qname(p, &e->u.in.table, "a table name"))
        return NULL;
    return expr_finish(p, e, left->height);
}

static ast_expr *parse_like(parser *p, ast_expr *left, bool negated)
{
    ast_expr *e = expr_new(p, AST_LIKE, left->off);
    if (!e)
        return NULL;
    like_op(&p->tok, &e->u.like.op);
    advance(p);
    e->u.like.negated = negated;
    e->u.like.operand = left;
    if (!(e->u.like.pattern = parse_expr_above(p, AST_PREC_EQ + 1)))
        return NULL;
    uint32_t h = max_u32(left->height, e->u.like.pattern->height);
    if (accept_kw(p, KW_ESCAPE)) {
        if (!(e->u.like.escape = parse_expr_above(p, AST_PREC_EQ + 1)))
            return NULL;
        h = max_u32(h, e->u.like.escape->height);
    }
    return expr_finish(p, e, h);
}

/* The EQ-level keyword forms, after an optional NOT. */
static ast_expr *parse_keyword_infix(parser *p, ast_expr *left)
{
    bool negated = accept_kw(p, KW_NOT);
    switch (p->tok.kw) {
    case KW_NULL: /* x NOT NULL */
        advance(p);
        return make_unary(p, AST_OP_NOTNULL, left, left->off);
    case KW_ISNULL:
    case KW_NOTNULL: {
        enum ast_op op = at_kw(p, KW_ISNULL) ? AST_OP_ISNULL : AST_OP_NOTNULL;
        advance(p);
        return make_unary(p, op, left, left->off);
    }
    case KW_IS: return parse_is(p, left);
    case KW_BETWEEN: return parse_between(p, left, negated);
    case KW_IN: return parse_in(p, left, negated);
    default: return parse_like(p, left, negated);
    }
}

static ast_expr *parse_infix(parser *p, ast_expr *left, int level)
{
    enum ast_op op;
    if (binary_op(&p->tok, &op)) {
        advance(p);
        ast_expr *right = parse_expr_above(p, level + 1);
        return right ? make_binary(p, op, left, right) : NULL;
    }
    if (at_kw(p, KW_COLLATE))
        return parse_collate(p, left);
    return parse_keyword_infix(p, left);
}

ast_expr *parse_expr_above(parser *p, int level)
{
    if (!enter(p))
        return NULL;
    ast_expr *left = parse_unary(p);
    while (left) {
        int l = infix_level(p);
        if (l == 0 || l < level)
            break;
        left = parse_infix(p, left, l);
    }
    leave(p);
    return left;
}

ast_expr *parse_expr(parser *p) { return parse_expr_above(p, AST_PREC_OR); }

/* ---- type names -------------------------------------------------------------------- */

/* A signed number as written, for type arguments: "10", "-3", "+2.5". */
static const char *parse_type_arg(parser *p)
{
    char sign = at(p, TK_MINUS) ? '-' : at(p, TK_PLUS) ? '+' : 0;
    if (sign)
        advance(p);
    if (!at(p, TK_INTEGER) && !at(p, TK_FLOAT))
        return expected(p, "a number in the type's arguments");
    char *s = node_alloc(p, p->tok.len + 2);
    if (!s)
        return NULL;
    char *w = s;
    if (sign)
        *w++ = sign;
    memcpy(w, p->lx.src + p->tok.off, p->tok.len);
    advance(p);
    return s;
}

static bool parse_type_args(parser *p, ast_type *t)
{
    advance(p); /* ( */
    do {
        if (t->nargs == 2)
            return expected(p, "')' after two type arguments") != NULL;
        if (!(t->args[t->nargs++] = parse_type_arg(p)))
            return false;
    } while (accept(p, TK_COMMA));
    return expect(p, TK_RPAREN, "')' to close the type's arguments");
}

/* A word of a type name: any name except GENERATED ALWAYS, which starts a
 * generated column. */
static bool at_type_word(parser *p)
{
    if (!at(p, TK_NAME) || kw_is_reserved((enum keyword)p->tok.kw))
        return false;
    return !(at_kw(p, KW_GENERATED) && tok_is_kw(peek(p, 1), KW_ALWAYS));
}

/* The words' source ranges joined by single spaces. */
static const char *join_words(parser *p, const growable *words)
{
    const token *w = words->items;
    size_t len = words->n - 1;
    for (uint32_t i = 0; i < words->n; i++)
        len += w[i].len;
    char *s = node_alloc(p, len + 1);
    if (!s)
        return NULL;
    char *at = s;
    for (uint32_t i = 0; i < words->n; i++) {
        if (i)
            *at++ = ' ';
        memcpy(at, p->lx.src + w[i].off, w[i].len);
        at += w[i].len;
    }
    return s;
}

bool parse_type(parser *p, ast_type *out)
{
    memset(out, 0, sizeof *out);
    out->off = p->tok.off;
    growable words = { 0 };
    while (at_type_word(p)) {
        token *w = grow_push(p, &words, sizeof *w);
        if (!w)
            return false;
        *w = p->tok;
        advance(p);
    }
    if (words.n == 0)
        return true;
    if (!(out->name = join_words(p, &words)))
        return false;
    if (at(p, TK_LPAREN) && !parse_type_args(p, out))
        return false;
    out->len = p->prev_end - out->off;
    return true;
}
