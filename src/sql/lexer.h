/*
 * lexer.h - SQL tokens and the keyword table.
 *
 * The lexer turns bytes into tokens one at a time, on demand; it never
 * allocates. A token is a kind, a keyword id and a byte range of the source
 * (offset and length) plus the line it starts on, so that any later stage
 * can point at it. Decoding a token's value (unescaping a string, reading a
 * number) is done by the lex_* helpers below, after the lexer has already
 * checked that the token is well formed: a token of kind TK_STRING,
 * TK_BLOB, TK_INTEGER or TK_FLOAT always decodes without error.
 *
 * Invariants:
 * - Tokens cover the source in order; off + len never exceeds the length.
 * - A lexical error yields one TK_ERROR token whose range is the offending
 *   text (from the opening quote of an unterminated string, say) and whose
 *   message is lexer.err; the lexer then stays at end of input.
 * - Keywords are recognised case-insensitively; every bare word is TK_NAME
 *   and carries its keyword id (KW_NONE for a plain identifier), because
 *   most keywords may also be used as names (see kw_is_reserved).
 */
#ifndef LDB_SQL_LEXER_H
#define LDB_SQL_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arena;

enum tok_kind {
    TK_EOF,
    TK_ERROR,
    TK_NAME,    /* bare word: identifier or keyword (see token.kw) */
    TK_QNAME,   /* quoted identifier: "x", `x` or [x] */
    TK_STRING,  /* 'text' */
    TK_BLOB,    /* X'0aff' */
    TK_INTEGER, /* 123 or 0x7F */
    TK_FLOAT,   /* 1.5, .5, 1e10 */
    TK_PARAM,   /* ?, ?NNN, :name, @name, $name */
    TK_SEMI,
    TK_LPAREN,
    TK_RPAREN,
    TK_COMMA,
    TK_DOT,
    TK_STAR,
    TK_SLASH,
    TK_PERCENT,
    TK_PLUS,
    TK_MINUS,
    TK_CONCAT, /* || */
    TK_LSHIFT,
    TK_RSHIFT,
    TK_BITAND,
    TK_BITOR,
    TK_BITNOT, /* ~ */
    TK_LT,
    TK_LE,
    TK_GT,
    TK_GE,
    TK_EQ, /* = or == */
    TK_NE  /* != or <> */
};

/*
 * Keywords, in alphabetical order (kw_lookup searches the table by
 * bisection; a test checks the order). R marks reserved words, which are
 * never accepted as bare identifiers; N marks keywords that also serve as
 * names where a name is expected (SQLite's "fallback" keywords, plus the
 * few livedb adds).
 */
#define SQL_KEYWORDS(X)                                                       \
    X(ABORT, N) X(ACTION, N) X(ADD, R) X(AFTER, N) X(ALL, R) X(ALTER, R)      \
    X(ALWAYS, N) X(ANALYZE, N) X(AND, R) X(AS, R) X(ASC, N) X(ATTACH, N)      \
    X(AUTOINCREMENT, R) X(BEFORE, N) X(BEGIN, N) X(BETWEEN, R) X(BTREE, N)    \
    X(BY, N) X(CASCADE, N) X(CASE, R) X(CAST, N) X(CHECK, R) X(COLLATE, R)    \
    X(COLUMN, N) X(COMMIT, R) X(CONFLICT, N) X(CONSTRAINT, R) X(CREATE, R)    \
    X(CROSS, R) X(CURRENT_DATE, N) X(CURRENT_TIME, N)                         \
    X(CURRENT_TIMESTAMP, N) X(DATABASE, N) X(DEFAULT, R) X(DEFERRABLE, R)     \
    X(DEFERRED, N) X(DELETE, R) X(DESC, N) X(DETACH, N) X(DISTINCT, R)        \
    X(DO, N) X(DROP, R) X(EACH, N) X(ELSE, R) X(END, N) X(ESCAPE, R)          \
    X(EXCEPT, R) X(EXCLUSIVE, N) X(EXISTS, R) X(EXPLAIN, N) X(FAIL, N)        \
    X(FALSE, N) X(FILTER, N) X(FIRST, N) X(FOR, N) X(FOREIGN, R) X(FROM, R)   \
    X(FULL, R) X(GENERATED, N) X(GLOB, R) X(GROUP, R) X(HASH, N)              \
    X(HAVING, R) X(IF, N) X(IGNORE, N) X(IMMEDIATE, N) X(IN, R) X(INDEX, R)   \
    X(INDEXED, R) X(INITIALLY, N) X(INNER, R) X(INSERT, R) X(INSTEAD, N)      \
    X(INTERSECT, R) X(INTO, R) X(IS, R) X(ISNULL, R) X(JOIN, R) X(KEY, N)     \
    X(LAST, N) X(LEFT, R) X(LIKE, R) X(LIMIT, R) X(MATCH, R)                  \
    X(MATERIALIZED, N) X(NATURAL, R) X(NO, N) X(NOT, R) X(NOTHING, N)         \
    X(NOTNULL, R) X(NULL, R) X(NULLS, N) X(OF, N) X(OFFSET, N) X(ON, R)       \
    X(OR, R) X(ORDER, R) X(OUTER, R) X(OVER, N) X(PLAN, N) X(PRAGMA, N)       \
    X(PRIMARY, R) X(QUERY, N) X(RAISE, N) X(RECURSIVE, N) X(REFERENCES, R)    \
    X(REGEXP, R) X(REINDEX, N) X(RELEASE, N) X(RENAME, N) X(REPLACE, N)       \
    X(RESTRICT, N) X(RETURNING, R) X(RIGHT, R) X(ROLLBACK, R) X(ROW, N)       \
    X(ROWID, N) X(SAVEPOINT, N) X(SELECT, R) X(SET, R) X(STORED, N)           \
    X(STRICT, N) X(TABLE, R) X(TEMP, N) X(TEMPORARY, N) X(THEN, R) X(TO, R)   \
    X(TRANSACTION, R) X(TRIGGER, N) X(TRUE, N) X(UNION, R) X(UNIQUE, R)       \
    X(UPDATE, R) X(USING, R) X(VACUUM, N) X(VALUES, R) X(VIEW, N)             \
    X(VIRTUAL, N) X(WHEN, R) X(WHERE, R) X(WINDOW, N) X(WITH, N)              \
    X(WITHOUT, N)

enum keyword {
    KW_NONE = 0,
#define KW_ENUM_(name, res) KW_##name,
    SQL_KEYWORDS(KW_ENUM_)
#undef KW_ENUM_
    KW_COUNT_
};

typedef struct token {
    uint8_t kind;      /* enum tok_kind */
    uint16_t kw;       /* enum keyword for TK_NAME, else KW_NONE */
    uint32_t off, len; /* byte range in the source */
    uint32_t line;     /* 1-based line of the first byte */
    uint32_t line_off; /* offset of the first byte of that line */
} token;

typedef struct lexer {
    const char *src;
    uint32_t len;
    uint32_t pos;      /* next byte to read */
    uint32_t line;     /* line of pos */
    uint32_t line_off; /* offset where that line starts */
    const char *err;   /* message of the last TK_ERROR (static text) */
} lexer;

/* SQL texts longer than this are refused before lexing. */
#define SQL_MAX_LENGTH 1000000000u

/* Starts at offset `pos`, which lies on line `line` starting at line_off. */
void lexer_init(lexer *lx, const char *src, uint32_t len, uint32_t pos,
                uint32_t line, uint32_t line_off);
/* Reads the next token, skipping white space and comments. */
void lexer_next(lexer *lx, token *t);

/* KW_NONE when the word is not a keyword. */
enum keyword kw_lookup(const char *word, size_t len);
bool kw_is_reserved(enum keyword kw);
/* Upper-case spelling, e.g. "SELECT". */
const char *kw_name(enum keyword kw);

/* 1-based column of byte `off` on a line starting at line_off, counted in
 * UTF-8 characters (continuation bytes do not count). */
uint32_t lex_column(const char *src, uint32_t line_off, uint32_t off);

/*
 * Decoding. The source range must be a token of the named kind that the
 * lexer accepted. Results live in the arena; NULL means out of memory.
 */
/* Unescaped contents of a TK_STRING or TK_QNAME token, NUL-terminated;
 * *n gets its length. */
char *lex_unquote(struct arena *a, const char *tok, uint32_t len, uint32_t *n);
/* Bytes of a TK_BLOB token; *n gets their count. */
char *lex_blob(struct arena *a, const char *tok, uint32_t len, uint32_t *n);

/* A TK_INTEGER or TK_FLOAT token: INTEGER when it is an integer that fits
 * in 64 bits (hex literals wrap to negative like SQLite), else REAL. */
typedef struct lex_number {
    bool is_int;
    int64_t i;
    double r;
} lex_number;
/* Returns false only when out of memory (long literals need a copy). */
bool lex_decode_number(struct arena *a, const char *tok, uint32_t len,
                       lex_number *out);

#endif
