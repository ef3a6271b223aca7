/*
 * parser.h - SQL text to syntax trees (ast.h), one statement at a time.
 *
 * The grammar is SQLite's with livedb's additions (materialized views,
 * USING HASH|BTREE indexes, EXPLAIN MATERIALIZED VIEW); docs/SQL.md lists
 * what is accepted, the operator precedence and the error format.
 *
 * Ownership: a successful parse hands the caller one sql_ast that owns the
 * whole tree (an arena), a copy of the statement's text and the literal
 * values; sql_ast_free releases everything in one call. A failed parse
 * leaves nothing behind: no tree, no leak.
 *
 * Errors: every failure fills a caller-provided sql_error with LDB_ERROR
 * (bad SQL) or LDB_NOMEM, the message, and the byte offset, line and column
 * (1-based; columns count UTF-8 characters) of the offending token. The
 * message starts with the position: "line 1, column 15: expected an
 * expression after '+', found ')'".
 */
#ifndef LDB_SQL_PARSER_H
#define LDB_SQL_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "sql/ast.h"

#define SQL_ERRMSG_MAX 256

typedef struct sql_error {
    int code;        /* LDB_OK, LDB_ERROR or LDB_NOMEM */
    bool unsupported; /* LDB_ERROR for valid SQL that livedb does not
                         support (window functions, WITH RECURSIVE, UPDATE
                         ... FROM): the API reports LDB_UNSUPPORTED */
    uint32_t offset; /* byte offset in the text given to the parser */
    uint32_t line, column;
    char msg[SQL_ERRMSG_MAX];
} sql_error;

/* Largest ?NNN (SQLite's default limit). */
#define SQL_MAX_PARAM 32766

typedef struct sql_ast {
    arena arena;   /* owns every node of the tree */
    ast_stmt *stmt;
    /* Copy of the statement's text, NUL-terminated: the bytes
     * [sql_off, sql_off + sql_len) of the parsed input. Node offsets are
     * offsets in that input; sql_ast_text maps them into the copy. */
    const char *sql;
    uint32_t sql_off, sql_len;
    uint32_t line, column; /* of the statement's first byte */
    /* Parameters: numbers run from 1 to nparams; param_names[i] is the
     * name of number i + 1 (":x", "@x", "$x") or NULL. */
    uint32_t nparams;
    const char **param_names;
    ast_expr *owned; /* literals whose values hold heap references */
} sql_ast;

/* A position in a script: the parser's cursor between statements. */
typedef struct sql_cursor {
    const char *text;
    uint32_t len;
    uint32_t offset;   /* where the next statement search starts */
    uint32_t line;     /* line of offset */
    uint32_t line_off; /* start of that line */
} sql_cursor;

/* len must not exceed SQL_MAX_LENGTH (sql_parse_next then fails). */
void sql_cursor_init(sql_cursor *c, const char *text, size_t len);

/*
 * Parses the next statement of a script and moves the cursor past it and
 * its ';'. Empty statements (";;") are skipped; at the end of the script
 * returns LDB_OK with *out = NULL. On error returns LDB_ERROR or
 * LDB_NOMEM, fills *err, sets *out = NULL and leaves the cursor where it
 * was.
 */
int sql_parse_next(sql_cursor *c, sql_ast **out, sql_error *err);

/* Parses text holding exactly one statement (an optional ';' and trailing
 * white space or comments allowed). An empty text is an error. */
int sql_parse(const char *text, size_t len, sql_ast **out, sql_error *err);

void sql_ast_free(sql_ast *ast);

/* Source text at a node offset (inside the statement's copy). */
static inline const char *sql_ast_text(const sql_ast *ast, uint32_t off)
{
    return ast->sql + (off - ast->sql_off);
}

/* Line and column (1-based) of an offset inside the statement, for the
 * binder's errors. */
void sql_ast_locate(const sql_ast *ast, uint32_t off, uint32_t *line,
                    uint32_t *column);

/*
 * Lexical split of a script, without building trees: finds the next
 * non-empty statement at or after the cursor, gives its span
 * [*start, *start + *len) (without the ';') and moves the cursor past it.
 * Returns false at the end of the script. CREATE TRIGGER bodies are kept
 * whole; a lexical error ends the statement at the end of the text (the
 * parser will report it).
 */
bool sql_split_next(sql_cursor *c, uint32_t *start, uint32_t *len);

/* True when the text ends a statement: its last token is a ';' that is not
 * inside a CREATE TRIGGER body (the shell's "is the input complete?"). */
bool sql_is_complete(const char *text, size_t len);

#endif
