/*
 * parser_internal.h - the parser's state and the helpers shared by the
 * files that make up the recursive-descent parser:
 *
 *   parser.c        token cursor, errors, limits, names, entry points,
 *                   statement dispatch and the small statements
 *   parse_expr.c    expressions (precedence climbing)
 *   parse_select.c  queries: WITH, compounds, SELECT cores, FROM, ORDER BY
 *   parse_dml.c     INSERT, UPDATE, DELETE
 *   parse_ddl.c     CREATE and DROP
 *
 * Conventions (all parse_* functions):
 * - The current token is p->tok; a function starts at its first token and
 *   returns with p->tok just after what it consumed.
 * - Functions that build a node return it, or NULL on error; functions
 *   that fill a caller's struct return bool (false on error). The first
 *   error is recorded in p and is sticky: later errors are ignored, so the
 *   report always names the leftmost problem the parser reached.
 * - All memory comes from the statement's arena, so an error path frees
 *   nothing; only literal values with heap objects are chained into
 *   ast->owned as soon as they exist.
 * - Recursion goes through enter()/leave(), which bound it by
 *   SQL_MAX_DEPTH; every finished expression passes through
 *   expr_finish(), which bounds the tree height the same way.
 */
#ifndef LDB_SQL_PARSER_INTERNAL_H
#define LDB_SQL_PARSER_INTERNAL_H

#include "base/hmap.h"
#include "sql/lexer.h"
#include "sql/parser.h"

typedef struct parser {
    lexer lx;
    token tok;         /* current token */
    token ahead[2];    /* tokens read past tok (peek) */
    int nahead;
    token prev;        /* the last consumed token */
    uint32_t prev_end; /* its end offset */
    sql_ast *ast;
    arena *a;
    sql_error *err;
    int rc;            /* first error (sticky), LDB_OK until then */
    unsigned depth;    /* current recursion depth */
    uint32_t height;   /* tallest subtree finished in the current query */
    uint32_t chain;    /* compound terms and joins in the current query */
    hmap param_index;  /* named parameter -> number */
    uint32_t param_cap;
} parser;

/* A list under construction, in the arena (doubling; the old arrays stay
 * in the arena until the statement is freed, which costs at most 2x). */
typedef struct growable {
    void *items;
    uint32_t n, cap;
} growable;

/* ---- tokens (parser.c) ---- */
void advance(parser *p);
const token *peek(parser *p, int k); /* k = 1: the token after p->tok */
static inline bool at(const parser *p, enum tok_kind k)
{
    return p->tok.kind == k;
}
static inline bool at_kw(const parser *p, enum keyword kw)
{
    return p->tok.kind == TK_NAME && p->tok.kw == kw;
}
static inline bool tok_is_kw(const token *t, enum keyword kw)
{
    return t->kind == TK_NAME && t->kw == kw;
}
bool accept(parser *p, enum tok_kind k);
bool accept_kw(parser *p, enum keyword kw);
/* Consume the token or fail with "expected <what>, found ...". */
bool expect(parser *p, enum tok_kind k, const char *what);
bool expect_kw(parser *p, enum keyword kw);
/* A token usable as a name: identifier, quoted identifier or non-reserved
 * keyword. */
bool tok_is_name(const token *t);

/* ---- errors and limits ---- */
/* Records an error at token t (first error wins); returns NULL. */
void *error_at(parser *p, const token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* error_at for valid SQL that livedb does not support (sql_error.unsupported). */
void *unsupported_at(parser *p, const token *t, const char *what);
/* "expected <what>, found <current token>"; returns NULL. */
void *expected(parser *p, const char *what);
/* "expected <what> after '<last consumed token>', found ..." */
void *expected_after(parser *p, const char *what);
void *out_of_memory(parser *p);
bool enter(parser *p);
static inline void leave(parser *p) { p->depth--; }

/* ---- memory ---- */
void *node_alloc(parser *p, size_t size); /* zeroed */
void *grow_push(parser *p, growable *g, size_t size); /* new zeroed slot */
char *arena_copy(parser *p, const char *s, size_t n);

/* ---- names ---- */
/* Consumes the current token, whatever its kind, as a name: a word
 * (keywords included), a quoted identifier or a string. */
bool take_name(parser *p, ast_name *out);
/* Consumes a name token (identifier, quoted identifier, non-reserved
 * keyword) into *out, or fails with "expected <what>". */
bool parse_name(parser *p, ast_name *out, const char *what);
/* The same, also accepting a 'string' where SQLite takes one as a name. */
bool parse_name_or_string(parser *p, ast_name *out, const char *what);
bool parse_qname(parser *p, ast_qname *out, const char *what);
/* ( name, ... ) */
bool parse_name_list(parser *p, ast_name_list *out, const char *what);
/* Optional alias: AS name, or a bare name/string when one follows. */
bool parse_alias(parser *p, ast_name *out);

/* ---- expressions (parse_expr.c) ---- */
ast_expr *parse_expr(parser *p);
/* Expression whose loosest operator binds at least as tightly as the
 * given precedence level (see parse_expr.c). */
ast_expr *parse_expr_above(parser *p, int level);
bool parse_expr_list(parser *p, ast_expr_list *out);
/* + or - and a number, or a bare number (DEFAULT, PRAGMA). */
ast_expr *parse_signed_number(parser *p);
/* A literal token (number, string, blob, NULL, TRUE, FALSE, CURRENT_*). */
ast_expr *parse_literal(parser *p);
bool at_literal(const parser *p);
bool parse_type(parser *p, ast_type *out);
/* Sets the length and height of a finished expression and checks the
 * height limit; returns e or NULL. */
ast_expr *expr_finish(parser *p, ast_expr *e, uint32_t child_height);
ast_expr *expr_new(parser *p, enum ast_expr_kind kind, uint32_t off);

/* ---- queries (parse_select.c) ---- */
/* True when the current token can start a query (SELECT, VALUES, WITH). */
bool at_query_start(const parser *p);
ast_select *parse_select(parser *p);
/* A query after a WITH clause that was already parsed. */
ast_select *parse_select_with(parser *p, ast_with *with, uint32_t off);
bool parse_with(parser *p, ast_with *out);
bool parse_order_list(parser *p, ast_order_list *out);
bool parse_result_list(parser *p, ast_result_list *out);

/* ---- statements ---- */
/* ROLLBACK | ABORT | FAIL | IGNORE | REPLACE, after OR or ON CONFLICT. */
bool parse_conflict_action(parser *p, enum ast_conflict *out);
ast_stmt *stmt_new(parser *p, enum ast_stmt_kind kind, uint32_t off);
ast_stmt *parse_insert(parser *p, ast_with *with, uint32_t off);
ast_stmt *parse_update(parser *p, ast_with *with, uint32_t off);
ast_stmt *parse_delete(parser *p, ast_with *with, uint32_t off);
ast_stmt *parse_create(parser *p);
ast_stmt *parse_drop(parser *p);
/* Skips to the end of the statement (';' or end of input, honouring
 * CREATE TRIGGER bodies when in_trigger). */
void skip_statement(parser *p, bool in_trigger);

#endif
