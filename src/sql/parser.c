/*
 * parser.c - the parser's core: token cursor with lookahead, errors and
 * nesting limits, arena helpers, names, the statement dispatcher and the
 * small statements (transactions, EXPLAIN, PRAGMA, REINDEX, ANALYZE, unsupported
 * ones), and the public entry points of parser.h.
 *
 * Invariants: p->tok is always a real token (TK_EOF at the end); a
 * TK_ERROR token records its lexical error the moment it becomes current,
 * and because the lexer stops after an error every later token is TK_EOF,
 * so no parse loop can spin on it.
 */
#include "sql/parser_internal.h"

#include "livedb.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- tokens ----------------------------------------------------------------- */

void advance(parser *p)
{
    p->prev = p->tok;
    p->prev_end = p->tok.off + p->tok.len;
    if (p->nahead > 0) {
        p->tok = p->ahead[0];
        p->ahead[0] = p->ahead[1];
        p->nahead--;
    } else {
        lexer_next(&p->lx, &p->tok);
    }
    if (p->tok.kind == TK_ERROR)
        error_at(p, &p->tok, "%s", p->lx.err);
}

const token *peek(parser *p, int k)
{
    while (p->nahead < k)
        lexer_next(&p->lx, &p->ahead[p->nahead++]);
    return &p->ahead[k - 1];
}

bool accept(parser *p, enum tok_kind k)
{
    if (!at(p, k))
        return false;
    advance(p);
    return true;
}

bool accept_kw(parser *p, enum keyword kw)
{
    if (!at_kw(p, kw))
        return false;
    advance(p);
    return true;
}

bool expect(parser *p, enum tok_kind k, const char *what)
{
    if (accept(p, k))
        return true;
    expected(p, what);
    return false;
}

bool expect_kw(parser *p, enum keyword kw)
{
    if (accept_kw(p, kw))
        return true;
    char what[40];
    snprintf(what, sizeof what, "'%s'", kw_name(kw));
    expected(p, what);
    return false;
}

bool tok_is_name(const token *t)
{
    return t->kind == TK_QNAME ||
           (t->kind == TK_NAME && !kw_is_reserved((enum keyword)t->kw));
}

/* ---- errors -------------------------------------------------------------------- */

void *error_at(parser *p, const token *t, const char *fmt, ...)
{
    if (p->rc != LDB_OK)
        return NULL;
    p->rc = LDB_ERROR;
    sql_error *e = p->err;
    e->code = LDB_ERROR;
    e->offset = t->off;
    e->line = t->line;
    e->column = lex_column(p->lx.src, t->line_off, t->off);
    int n = snprintf(e->msg, sizeof e->msg, "line %u, column %u: ", e->line,
                     e->column);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg + n, sizeof e->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return NULL;
}

void *unsupported_at(parser *p, const token *t, const char *what)
{
    if (p->rc == LDB_OK) {
        error_at(p, t, "%s", what);
        p->err->unsupported = true;
    }
    return NULL;
}

/* How a token is named in "found ...": its text, quoted and shortened
 * (a string shows its contents, which already are in quotes). */
static void describe(const parser *p, const token *t, char *buf, size_t size)
{
    if (t->kind == TK_EOF) {
        snprintf(buf, size, "end of input");
        return;
    }
    const char *s = p->lx.src + t->off;
    uint32_t len = t->len;
    bool string = t->kind == TK_STRING;
    if (string) {
        s++;
        len -= 2;
    }
    uint32_t n = 0;
    while (n < len && n < 32 && s[n] != '\n')
        n++;
    snprintf(buf, size, "%s'%.*s%s'", string ? "the string " : "", (int)n, s,
             n < len ? "..." : "");
}

void *expected(parser *p, const char *what)
{
    char found[64];
    describe(p, &p->tok, found, sizeof found);
    return error_at(p, &p->tok, "expected %s, found %s", what, found);
}

void *expected_after(parser *p, const char *what)
{
    char found[64], after[64];
    describe(p, &p->tok, found, sizeof found);
    describe(p, &p->prev, after, sizeof after);
    return error_at(p, &p->tok, "expected %s after %s, found %s", what, after,
                    found);
}

void *out_of_memory(parser *p)
{
    if (p->rc == LDB_OK) {
        p->rc = LDB_NOMEM;
        p->err->code = LDB_NOMEM;
        p->err->offset = p->tok.off;
        p->err->line = p->tok.line;
        p->err->column = lex_column(p->lx.src, p->tok.line_off, p->tok.off);
        snprintf(p->err->msg, sizeof p->err->msg, "out of memory");
    }
    return NULL;
}

bool enter(parser *p)
{
    if (++p->depth <= SQL_MAX_DEPTH)
        return true;
    p->depth--;
    error_at(p, &p->tok, "nested too deeply (the limit is %d levels)",
             SQL_MAX_DEPTH);
    return false;
}

/* ---- memory ----------------------------------------------------------------------- */

void *node_alloc(parser *p, size_t size)
{
    void *n = arena_calloc(p->a, size);
    return n ? n : out_of_memory(p);
}

void *grow_push(parser *p, growable *g, size_t size)
{
    if (g->n == g->cap) {
        uint32_t cap = g->cap ? g->cap * 2 : 4;
        char *items = arena_alloc(p->a, (size_t)cap * size);
        if (!items)
            return out_of_memory(p);
        if (g->n)
            memcpy(items, g->items, (size_t)g->n * size);
        g->items = items;
        g->cap = cap;
    }
    char *slot = (char *)g->items + (size_t)g->n++ * size;
    memset(slot, 0, size);
    return slot;
}

char *arena_copy(parser *p, const char *s, size_t n)
{
    char *c = arena_strndup(p->a, s, n);
    return c ? c : out_of_memory(p);
}

/* ---- names --------------------------------------------------------------------------- */

bool take_name(parser *p, ast_name *out)
{
    const char *s = p->lx.src + p->tok.off;
    out->off = p->tok.off;
    out->quoted = p->tok.kind != TK_NAME;
    if (out->quoted)
        out->str = lex_unquote(p->a, s, p->tok.len, &out->len);
    else {
        out->str = arena_strndup(p->a, s, p->tok.len);
        out->len = p->tok.len;
    }
    if (!out->str)
        return out_of_memory(p) != NULL;
    advance(p);
    return true;
}

bool parse_name(parser *p, ast_name *out, const char *what)
{
    if (!tok_is_name(&p->tok))
        return expected(p, what) != NULL;
    return take_name(p, out);
}

bool parse_name_or_string(parser *p, ast_name *out, const char *what)
{
    if (!tok_is_name(&p->tok) && !at(p, TK_STRING))
        return expected(p, what) != NULL;
    return take_name(p, out);
}

bool parse_qname(parser *p, ast_qname *out, const char *what)
{
    memset(out, 0, sizeof *out);
    if (!parse_name_or_string(p, &out->name, what))
        return false;
    if (!accept(p, TK_DOT))
        return true;
    out->schema = out->name;
    return parse_name_or_string(p, &out->name, "a name after '.'");
}

bool parse_name_list(parser *p, ast_name_list *out, const char *what)
{
    growable g = { 0 };
    if (!expect(p, TK_LPAREN, "'('"))
        return false;
    do {
        ast_name *slot = grow_push(p, &g, sizeof *slot);
        if (!slot || !parse_name_or_string(p, slot, what))
            return false;
    } while (accept(p, TK_COMMA));
    if (!expect(p, TK_RPAREN, "',' or ')'"))
        return false;
    out->n = g.n;
    out->items = g.items;
    return true;
}

bool parse_alias(parser *p, ast_name *out)
{
    if (accept_kw(p, KW_AS))
        return parse_name_or_string(p, out, "an alias after AS");
    if (tok_is_name(&p->tok) || at(p, TK_STRING))
        return take_name(p, out);
    return true;
}

/* ---- small statements -------------------------------------------------------------------- */

ast_stmt *stmt_new(parser *p, enum ast_stmt_kind kind, uint32_t off)
{
    ast_stmt *st = node_alloc(p, sizeof *st);
    if (st) {
        st->kind = kind;
        st->off = off;
    }
    return st;
}

static ast_stmt *parse_begin(parser *p, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_BEGIN, off);
    if (!st)
        return NULL;
    advance(p); /* BEGIN */
    if (accept_kw(p, KW_DEFERRED))
        st->u.begin = AST_BEGIN_DEFERRED;
    else if (accept_kw(p, KW_IMMEDIATE))
        st->u.begin = AST_BEGIN_IMMEDIATE;
    else if (accept_kw(p, KW_EXCLUSIVE))
        st->u.begin = AST_BEGIN_EXCLUSIVE;
    accept_kw(p, KW_TRANSACTION);
    return st;
}

static ast_stmt *parse_commit(parser *p, uint32_t off)
{
    advance(p); /* COMMIT or END */
    accept_kw(p, KW_TRANSACTION);
    return stmt_new(p, AST_STMT_COMMIT, off);
}

static ast_stmt *parse_rollback(parser *p, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_ROLLBACK, off);
    if (!st)
        return NULL;
    advance(p); /* ROLLBACK */
    accept_kw(p, KW_TRANSACTION);
    if (!accept_kw(p, KW_TO))
        return st;
    accept_kw(p, KW_SAVEPOINT);
    return parse_name(p, &st->u.rollback_to, "a savepoint name") ? st : NULL;
}

static ast_stmt *parse_savepoint(parser *p, uint32_t off, bool release)
{
    ast_stmt *st =
        stmt_new(p, release ? AST_STMT_RELEASE : AST_STMT_SAVEPOINT, off);
    if (!st)
        return NULL;
    advance(p); /* SAVEPOINT or RELEASE */
    if (release)
        accept_kw(p, KW_SAVEPOINT);
    return parse_name(p, &st->u.savepoint, "a savepoint name") ? st : NULL;
}

static bool parse_pragma_value(parser *p, ast_stmt *st)
{
    if (at(p, TK_STRING) || at(p, TK_INTEGER) || at(p, TK_FLOAT) ||
        at(p, TK_PLUS) || at(p, TK_MINUS)) {
        st->u.pragma.value =
            at(p, TK_STRING) ? parse_literal(p) : parse_signed_number(p);
        return st->u.pragma.value != NULL;
    }
    if (at(p, TK_NAME) || at(p, TK_QNAME)) /* keywords too: = ON */
        return take_name(p, &st->u.pragma.word);
    return expected(p, "a pragma value") != NULL;
}

static ast_stmt *parse_pragma(parser *p, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_PRAGMA, off);
    if (!st)
        return NULL;
    advance(p); /* PRAGMA */
    if (!parse_qname(p, &st->u.pragma.name, "a pragma name"))
        return NULL;
    if (accept(p, TK_EQ))
        return parse_pragma_value(p, st) ? st : NULL;
    if (accept(p, TK_LPAREN)) {
        if (!parse_pragma_value(p, st) || !expect(p, TK_RPAREN, "')'"))
            return NULL;
    }
    return st;
}

/* REINDEX [name] and ANALYZE [name]. */
static ast_stmt *parse_targeted(parser *p, uint32_t off, enum ast_stmt_kind kind)
{
    ast_stmt *st = stmt_new(p, kind, off);
    if (!st)
        return NULL;
    advance(p); /* REINDEX or ANALYZE */
    if (tok_is_name(&p->tok) || at(p, TK_STRING))
        if (!parse_qname(p, &st->u.target, "an index or table name"))
            return NULL;
    return st;
}

static ast_stmt *parse_statement(parser *p);

static ast_stmt *parse_explain(parser *p, uint32_t off)
{
    advance(p); /* EXPLAIN */
    if (accept_kw(p, KW_MATERIALIZED)) {
        ast_stmt *st = stmt_new(p, AST_STMT_EXPLAIN_VIEW, off);
        if (!st || !expect_kw(p, KW_VIEW) ||
            !parse_qname(p, &st->u.explain_view, "a materialized view name"))
            return NULL;
        return st;
    }
    ast_stmt *st = stmt_new(p, AST_STMT_EXPLAIN, off);
    if (!st)
        return NULL;
    if (accept_kw(p, KW_QUERY)) {
        if (!expect_kw(p, KW_PLAN))
            return NULL;
        st->u.explain.query_plan = true;
    }
    if (at_kw(p, KW_EXPLAIN))
        return expected(p, "a statement to explain");
    st->u.explain.stmt = parse_statement(p);
    return st->u.explain.stmt ? st : NULL;
}

/* Statements that are recognised so that the caller can say "not
 * supported" with a position, and skipped up to their end. */
static ast_stmt *parse_unsupported(parser *p, uint32_t off, const char *what)
{
    ast_stmt *st = stmt_new(p, AST_STMT_UNSUPPORTED, off);
    if (!st)
        return NULL;
    st->u.unsupported.what = what;
    skip_statement(p, false);
    return st;
}

static ast_stmt *parse_alter(parser *p, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_UNSUPPORTED, off);
    if (!st)
        return NULL;
    st->u.unsupported.what = "ALTER TABLE";
    advance(p); /* ALTER */
    if (!expect_kw(p, KW_TABLE) ||
        !parse_qname(p, &st->u.unsupported.name, "a table name"))
        return NULL;
    skip_statement(p, false);
    return st;
}

static ast_stmt *parse_with_statement(parser *p, uint32_t off)
{
    ast_with with;
    if (!parse_with(p, &with))
        return NULL;
    if (at_kw(p, KW_INSERT) || at_kw(p, KW_REPLACE))
        return parse_insert(p, &with, off);
    if (at_kw(p, KW_UPDATE))
        return parse_update(p, &with, off);
    if (at_kw(p, KW_DELETE))
        return parse_delete(p, &with, off);
    ast_stmt *st = stmt_new(p, AST_STMT_SELECT, off);
    if (!st)
        return NULL;
    st->u.select = parse_select_with(p, &with, off);
    return st->u.select ? st : NULL;
}

static ast_stmt *parse_query_statement(parser *p, uint32_t off)
{
    ast_stmt *st = stmt_new(p, AST_STMT_SELECT, off);
    if (!st)
        return NULL;
    st->u.select = parse_select(p);
    return st->u.select ? st : NULL;
}

static ast_stmt *parse_statement(parser *p)
{
    uint32_t off = p->tok.off;
    switch (at(p, TK_NAME) ? p->tok.kw : KW_NONE) {
    case KW_SELECT:
    case KW_VALUES: return parse_query_statement(p, off);
    case KW_WITH: return parse_with_statement(p, off);
    case KW_INSERT:
    case KW_REPLACE: return parse_insert(p, NULL, off);
    case KW_UPDATE: return parse_update(p, NULL, off);
    case KW_DELETE: return parse_delete(p, NULL, off);
    case KW_CREATE: return parse_create(p);
    case KW_DROP: return parse_drop(p);
    case KW_BEGIN: return parse_begin(p, off);
    case KW_COMMIT:
    case KW_END: return parse_commit(p, off);
    case KW_ROLLBACK: return parse_rollback(p, off);
    case KW_SAVEPOINT: return parse_savepoint(p, off, false);
    case KW_RELEASE: return parse_savepoint(p, off, true);
    case KW_EXPLAIN: return parse_explain(p, off);
    case KW_PRAGMA: return parse_pragma(p, off);
    case KW_REINDEX: return parse_targeted(p, off, AST_STMT_REINDEX);
    case KW_ALTER: return parse_alter(p, off);
    case KW_ATTACH: return parse_unsupported(p, off, "ATTACH");
    case KW_DETACH: return parse_unsupported(p, off, "DETACH");
    case KW_ANALYZE: return parse_targeted(p, off, AST_STMT_ANALYZE);
    case KW_VACUUM: return parse_unsupported(p, off, "VACUUM");
    default: return expected(p, "a statement");
    }
}

/* ---- statement ends ------------------------------------------------------------------ */

/*
 * A CREATE TRIGGER body runs from BEGIN to the END that closes it; the
 * statements inside end with ';', and CASE ... END pairs nest. Fed one
 * token at a time, says when the body is closed.
 */
typedef struct body_tracker {
    bool begun;
    uint32_t depth;
} body_tracker;

static bool body_closed_by(body_tracker *b, const token *t)
{
    if (!b->begun) {
        if (tok_is_kw(t, KW_BEGIN)) {
            b->begun = true;
            b->depth = 1;
        }
        return false;
    }
    if (tok_is_kw(t, KW_CASE))
        b->depth++;
    else if (tok_is_kw(t, KW_END))
        return --b->depth == 0;
    return false;
}

void skip_statement(parser *p, bool in_trigger)
{
    body_tracker body = { false, 0 };
    while (!at(p, TK_EOF) && p->rc == LDB_OK) {
        if (in_trigger) {
            bool closed = body_closed_by(&body, &p->tok);
            advance(p);
            if (closed)
                return;
            continue;
        }
        if (at(p, TK_SEMI))
            return;
        advance(p);
    }
    if (in_trigger)
        expected(p, "END to close the trigger body");
}

/* True when tokens t0, t1, t2 begin a CREATE [TEMP] TRIGGER statement. */
static bool starts_trigger(const token *t0, const token *t1, const token *t2)
{
    if (!tok_is_kw(t0, KW_CREATE))
        return false;
    if (tok_is_kw(t1, KW_TEMP) || tok_is_kw(t1, KW_TEMPORARY))
        return tok_is_kw(t2, KW_TRIGGER);
    return tok_is_kw(t1, KW_TRIGGER);
}

/* ---- entry points ---------------------------------------------------------------------- */

void sql_cursor_init(sql_cursor *c, const char *text, size_t len)
{
    c->text = text;
    c->len = len > SQL_MAX_LENGTH ? SQL_MAX_LENGTH + 1u : (uint32_t)len;
    c->offset = 0;
    c->line = 1;
    c->line_off = 0;
}

static void error_clear(sql_error *err)
{
    err->code = LDB_OK;
    err->unsupported = false;
    err->offset = err->line = err->column = 0;
    err->msg[0] = '\0';
}

static sql_ast *ast_new(void)
{
    arena a;
    arena_init(&a, 4096);
    sql_ast *ast = arena_calloc(&a, sizeof *ast);
    if (!ast) {
        arena_free(&a);
        return NULL;
    }
    ast->arena = a;
    return ast;
}

void sql_ast_free(sql_ast *ast)
{
    if (!ast)
        return;
    for (ast_expr *e = ast->owned; e; e = e->u.literal.next_owned)
        value_release(&e->u.literal.v);
    arena a = ast->arena;
    arena_free(&a);
}

static void parser_init(parser *p, const sql_cursor *c, sql_error *err)
{
    memset(p, 0, sizeof *p);
    lexer_init(&p->lx, c->text, c->len, c->offset, c->line, c->line_off);
    /* Until the first advance, errors point at the cursor. */
    p->tok.off = c->offset;
    p->tok.line = c->line;
    p->tok.line_off = c->line_off;
    p->err = err;
    hmap_init(&p->param_index);
}

/* Moves the cursor to just after token t. */
static void cursor_after(sql_cursor *c, const token *t)
{
    c->offset = t->off + t->len;
    c->line = t->line;
    c->line_off = t->line_off;
}

/* Skips empty statements; true when a statement follows. */
static bool skip_empty(parser *p, sql_cursor *c)
{
    advance(p);
    while (at(p, TK_SEMI)) {
        cursor_after(c, &p->tok);
        advance(p);
    }
    if (at(p, TK_EOF))
        cursor_after(c, &p->tok);
    return !at(p, TK_EOF) && p->rc == LDB_OK;
}

/* Copies the statement's text into the arena and records where it was. */
static bool keep_text(parser *p, const sql_cursor *c)
{
    sql_ast *ast = p->ast;
    ast_stmt *st = ast->stmt;
    ast->sql = arena_copy(p, c->text + st->off, st->len);
    if (!ast->sql)
        return false;
    ast->sql_off = st->off;
    ast->sql_len = st->len;
    return true;
}

/* Parses one statement with p->tok at its first token. */
static int parse_one(parser *p, const sql_cursor *c)
{
    token first = p->tok;
    p->ast = ast_new();
    if (!p->ast) {
        out_of_memory(p);
        return p->rc;
    }
    p->a = &p->ast->arena;
    ast_stmt *st = parse_statement(p);
    if (st && p->rc == LDB_OK) {
        st->len = p->prev_end - st->off;
        p->ast->stmt = st;
        if (!at(p, TK_SEMI) && !at(p, TK_EOF))
            expected(p, "end of statement");
    }
    if (p->rc == LDB_OK && keep_text(p, c)) {
        p->ast->line = first.line;
        p->ast->column = lex_column(c->text, first.line_off, first.off);
    }
    return p->rc;
}

int sql_parse_next(sql_cursor *c, sql_ast **out, sql_error *err)
{
    *out = NULL;
    error_clear(err);
    parser p;
    parser_init(&p, c, err);
    if (c->len > SQL_MAX_LENGTH) {
        error_at(&p, &p.tok, "the SQL text is too long (the limit is %u "
                             "bytes)", SQL_MAX_LENGTH);
        return LDB_ERROR;
    }
    sql_cursor start = *c;
    if (!skip_empty(&p, c)) {
        hmap_free(&p.param_index);
        if (p.rc != LDB_OK)
            *c = start;
        return p.rc;
    }
    int rc = parse_one(&p, c);
    hmap_free(&p.param_index);
    if (rc != LDB_OK) {
        sql_ast_free(p.ast);
        *c = start;
        return rc;
    }
    cursor_after(c, &p.tok); /* the ';' or the end */
    *out = p.ast;
    return LDB_OK;
}

int sql_parse(const char *text, size_t len, sql_ast **out, sql_error *err)
{
    sql_cursor c;
    sql_cursor_init(&c, text, len);
    int rc = sql_parse_next(&c, out, err);
    if (rc != LDB_OK)
        return rc;
    parser p;
    parser_init(&p, &c, err);
    if (!*out) {
        advance(&p);
        expected(&p, "a statement");
        return LDB_ERROR;
    }
    if (skip_empty(&p, &c) || p.rc != LDB_OK) {
        error_at(&p, &p.tok, "expected end of input after the statement, "
                             "found a second statement");
        sql_ast_free(*out);
        *out = NULL;
        return LDB_ERROR;
    }
    return LDB_OK;
}

void sql_ast_locate(const sql_ast *ast, uint32_t off, uint32_t *line,
                    uint32_t *column)
{
    uint32_t l = ast->line, col = ast->column;
    uint32_t end = off - ast->sql_off;
    for (uint32_t i = 0; i < end && i < ast->sql_len; i++) {
        unsigned char ch = (unsigned char)ast->sql[i];
        if (ch == '\n') {
            l++;
            col = 1;
        } else if ((ch & 0xC0) != 0x80) {
            col++;
        }
    }
    *line = l;
    *column = col;
}

/* ---- lexical split ----------------------------------------------------------------------- */

/* Reads the statement that starts at token t (not a ';' or the end):
 * returns the end offset of its last token and leaves t at the ';' that
 * ends it, or at the end of input (TK_EOF, or TK_ERROR after a lexical
 * error, in which case the statement runs to the end of the text). */
static uint32_t scan_statement(lexer *lx, token *t)
{
    token t1, t2;
    lexer saved = *lx;
    lexer_next(lx, &t1);
    lexer_next(lx, &t2);
    *lx = saved;
    bool trigger = starts_trigger(t, &t1, &t2);
    body_tracker body = { false, 0 };
    uint32_t end = t->off + t->len;
    while (t->kind != TK_EOF && t->kind != TK_ERROR) {
        bool in_body = trigger && body.begun && body.depth > 0;
        if (t->kind == TK_SEMI && !in_body)
            break;
        if (trigger)
            body_closed_by(&body, t);
        end = t->off + t->len;
        lexer_next(lx, t);
    }
    return t->kind == TK_ERROR ? lx->len : end;
}

/* sql_split_next, also saying whether a ';' ended the statement. */
static bool split_one(sql_cursor *c, uint32_t *start, uint32_t *len,
                      bool *terminated)
{
    lexer lx;
    lexer_init(&lx, c->text, c->len, c->offset, c->line, c->line_off);
    token t;
    do
        lexer_next(&lx, &t);
    while (t.kind == TK_SEMI);
    if (t.kind == TK_EOF) {
        cursor_after(c, &t);
        return false;
    }
    *start = t.off;
    if (t.kind == TK_ERROR) { /* e.g. an unterminated comment */
        *len = c->len - t.off;
    } else {
        uint32_t first = t.off;
        *len = scan_statement(&lx, &t) - first;
    }
    *terminated = t.kind == TK_SEMI;
    if (t.kind == TK_ERROR)
        c->offset = c->len;
    else
        cursor_after(c, &t);
    return true;
}

bool sql_split_next(sql_cursor *c, uint32_t *start, uint32_t *len)
{
    bool terminated;
    return split_one(c, start, len, &terminated);
}

bool sql_is_complete(const char *text, size_t len)
{
    sql_cursor c;
    sql_cursor_init(&c, text, len);
    if (c.len > SQL_MAX_LENGTH)
        return false;
    bool complete = false, terminated;
    uint32_t start, n;
    while (split_one(&c, &start, &n, &terminated))
        complete = terminated;
    return complete;
}
