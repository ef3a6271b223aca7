/*
 * lexer.c - bytes to tokens (see lexer.h), keyword lookup, and decoding of
 * literal tokens.
 *
 * The lexer validates every literal completely when it reads it (quotes
 * closed, blob digits even and hex, hex integers within 64 bits, numbers
 * not run into letters), so the decoders below can assume well-formed
 * input and the parser reports lexical errors at the token's start.
 *
 * Character classes follow SQLite: identifiers are ASCII letters, digits,
 * '_' and '$' plus every byte >= 0x80 (so UTF-8 names work without
 * decoding); white space is ASCII space, tab, newline, carriage return,
 * form feed and vertical tab.
 */
#include "sql/lexer.h"

#include "base/arena.h"

#include <stdlib.h>
#include <string.h>

/* ---- keywords ------------------------------------------------------------ */

struct kw_entry {
    const char *name;
    bool reserved;
};

#define KW_TABLE_(name, res) { #name, KW_RES_##res },
#define KW_RES_R true
#define KW_RES_N false
static const struct kw_entry keywords[KW_COUNT_] = {
    { "", false }, /* KW_NONE */
    SQL_KEYWORDS(KW_TABLE_)
};
#undef KW_TABLE_
#undef KW_RES_R
#undef KW_RES_N

/* Longest keyword: CURRENT_TIMESTAMP. */
#define KW_MAX_LEN 17

/* Compares an upper-case word with a keyword, like strcmp. */
static int kw_cmp(const char *up, size_t len, const char *kw)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char a = (unsigned char)up[i], b = (unsigned char)kw[i];
        if (a != b)
            return a < b ? -1 : 1;
    }
    return kw[len] ? -1 : 0;
}

enum keyword kw_lookup(const char *word, size_t len)
{
    if (len > KW_MAX_LEN || len < 2)
        return KW_NONE;
    char up[KW_MAX_LEN];
    for (size_t i = 0; i < len; i++) {
        char c = word[i];
        up[i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    int lo = 1, hi = KW_COUNT_ - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = kw_cmp(up, len, keywords[mid].name);
        if (c == 0)
            return (enum keyword)mid;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return KW_NONE;
}

bool kw_is_reserved(enum keyword kw) { return keywords[kw].reserved; }

const char *kw_name(enum keyword kw) { return keywords[kw].name; }

/* ---- character classes ----------------------------------------------------- */

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}
static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static bool is_id_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c >= 0x80;
}
static bool is_id_char(unsigned char c)
{
    return is_id_start(c) || is_digit(c) || c == '$';
}
static int hex_val(unsigned char c)
{
    if (is_digit(c))
        return c - '0';
    return (c | 0x20) - 'a' + 10;
}

uint32_t lex_column(const char *src, uint32_t line_off, uint32_t off)
{
    uint32_t col = 1;
    for (uint32_t i = line_off; i < off; i++)
        if (((unsigned char)src[i] & 0xC0) != 0x80)
            col++;
    return col;
}

/* ---- the scanner ------------------------------------------------------------- */

void lexer_init(lexer *lx, const char *src, uint32_t len, uint32_t pos,
                uint32_t line, uint32_t line_off)
{
    lx->src = src;
    lx->len = len;
    lx->pos = pos;
    lx->line = line;
    lx->line_off = line_off;
    lx->err = NULL;
}

static unsigned char at(const lexer *lx, uint32_t i)
{
    return i < lx->len ? (unsigned char)lx->src[i] : 0;
}

/* Advances over one byte, keeping the line count. */
static void step(lexer *lx)
{
    if (lx->src[lx->pos] == '\n') {
        lx->line++;
        lx->line_off = lx->pos + 1;
    }
    lx->pos++;
}

/* Skips to just after the next `close` (doubled closes are escapes when
 * `doubled`); false at end of input. */
static bool skip_quoted(lexer *lx, char close, bool doubled)
{
    step(lx); /* the opening quote */
    while (lx->pos < lx->len) {
        char c = lx->src[lx->pos];
        step(lx);
        if (c != close)
            continue;
        if (doubled && at(lx, lx->pos) == (unsigned char)close) {
            step(lx);
            continue;
        }
        return true;
    }
    return false;
}

/* Skips white space and comments; false for an unterminated block comment
 * (then pos is at its start). */
static bool skip_blank(lexer *lx)
{
    for (;;) {
        unsigned char c = at(lx, lx->pos);
        if (lx->pos < lx->len && is_space(c)) {
            step(lx);
        } else if (c == '-' && at(lx, lx->pos + 1) == '-') {
            while (lx->pos < lx->len && lx->src[lx->pos] != '\n')
                lx->pos++;
        } else if (c == '/' && at(lx, lx->pos + 1) == '*') {
            lexer saved = *lx;
            lx->pos += 2;
            while (lx->pos < lx->len &&
                   !(lx->src[lx->pos] == '*' && at(lx, lx->pos + 1) == '/'))
                step(lx);
            if (lx->pos >= lx->len) {
                *lx = saved;
                return false;
            }
            lx->pos += 2;
        } else {
            return true;
        }
    }
}

/* Makes t a TK_ERROR covering [t->off, lx->pos) and stops the lexer. */
static void fail(lexer *lx, token *t, const char *msg)
{
    t->kind = TK_ERROR;
    if (lx->pos <= t->off)
        lx->pos = t->off + 1 <= lx->len ? t->off + 1 : lx->len;
    t->len = lx->pos - t->off;
    lx->err = msg;
    lx->pos = lx->len;
}

static void scan_digits(lexer *lx)
{
    while (is_digit(at(lx, lx->pos)))
        lx->pos++;
}

static void scan_hex_number(lexer *lx, token *t)
{
    lx->pos += 2; /* 0x */
    uint32_t start = lx->pos;
    while (at(lx, lx->pos) == '0')
        lx->pos++;
    uint32_t significant = lx->pos;
    while (is_hex(at(lx, lx->pos)))
        lx->pos++;
    if (lx->pos == start || is_id_char(at(lx, lx->pos))) {
        while (is_id_char(at(lx, lx->pos)))
            lx->pos++;
        fail(lx, t, "malformed hex literal");
    } else if (lx->pos - significant > 16) {
        fail(lx, t, "hex literal is too large (more than 64 bits)");
    } else {
        t->kind = TK_INTEGER;
    }
}

static void scan_number(lexer *lx, token *t)
{
    if (at(lx, lx->pos) == '0' && (at(lx, lx->pos + 1) | 0x20) == 'x') {
        scan_hex_number(lx, t);
        return;
    }
    t->kind = TK_INTEGER;
    scan_digits(lx);
    if (at(lx, lx->pos) == '.') {
        t->kind = TK_FLOAT;
        lx->pos++;
        scan_digits(lx);
    }
    unsigned char c = at(lx, lx->pos);
    if (c == 'e' || c == 'E') {
        uint32_t exp = lx->pos + 1;
        if (at(lx, exp) == '+' || at(lx, exp) == '-')
            exp++;
        if (is_digit(at(lx, exp))) {
            t->kind = TK_FLOAT;
            lx->pos = exp;
            scan_digits(lx);
        }
    }
    if (is_id_char(at(lx, lx->pos))) {
        while (is_id_char(at(lx, lx->pos)))
            lx->pos++;
        fail(lx, t, "malformed number");
    }
}

static void scan_blob(lexer *lx, token *t)
{
    lx->pos++; /* X */
    uint32_t open = lx->pos;
    if (!skip_quoted(lx, '\'', false)) {
        fail(lx, t, "unterminated blob literal");
        return;
    }
    uint32_t ndigits = lx->pos - open - 2;
    for (uint32_t i = open + 1; i < lx->pos - 1; i++) {
        if (!is_hex((unsigned char)lx->src[i])) {
            fail(lx, t, "blob literal contains a character that is not a "
                        "hex digit");
            return;
        }
    }
    if (ndigits % 2) {
        fail(lx, t, "blob literal has an odd number of hex digits");
        return;
    }
    t->kind = TK_BLOB;
}

static void scan_param(lexer *lx, token *t)
{
    unsigned char c = at(lx, lx->pos++);
    if (c == '?') {
        scan_digits(lx);
        t->kind = TK_PARAM;
        return;
    }
    uint32_t start = lx->pos;
    while (is_id_char(at(lx, lx->pos)))
        lx->pos++;
    if (lx->pos == start) {
        fail(lx, t, c == ':' ? "expected a parameter name after ':'"
                    : c == '@' ? "expected a parameter name after '@'"
                               : "expected a parameter name after '$'");
        return;
    }
    t->kind = TK_PARAM;
}

static void scan_word(lexer *lx, token *t)
{
    while (is_id_char(at(lx, lx->pos)))
        lx->pos++;
    t->kind = TK_NAME;
    t->kw = (uint16_t)kw_lookup(lx->src + t->off, lx->pos - t->off);
}

static void scan_quoted(lexer *lx, token *t, enum tok_kind kind, char close,
                        bool doubled, const char *unterminated)
{
    if (!skip_quoted(lx, close, doubled)) {
        fail(lx, t, unterminated);
        return;
    }
    t->kind = (uint8_t)kind;
}

/* Operators and punctuation; false for an unknown character. */
static bool scan_operator(lexer *lx, token *t)
{
    char c1 = (char)at(lx, lx->pos + 1);
    uint8_t kind;
    uint32_t n = 1;
    switch (lx->src[lx->pos]) {
    case ';': kind = TK_SEMI; break;
    case '(': kind = TK_LPAREN; break;
    case ')': kind = TK_RPAREN; break;
    case ',': kind = TK_COMMA; break;
    case '.': kind = TK_DOT; break;
    case '*': kind = TK_STAR; break;
    case '/': kind = TK_SLASH; break;
    case '%': kind = TK_PERCENT; break;
    case '+': kind = TK_PLUS; break;
    case '-': kind = TK_MINUS; break;
    case '&': kind = TK_BITAND; break;
    case '~': kind = TK_BITNOT; break;
    case '|':
        kind = c1 == '|' ? TK_CONCAT : TK_BITOR;
        n = c1 == '|' ? 2 : 1;
        break;
    case '=':
        kind = TK_EQ;
        n = c1 == '=' ? 2 : 1;
        break;
    case '!':
        if (c1 != '=')
            return false;
        kind = TK_NE;
        n = 2;
        break;
    case '<':
        kind = c1 == '=' ? TK_LE : c1 == '>' ? TK_NE : c1 == '<' ? TK_LSHIFT : TK_LT;
        n = kind == TK_LT ? 1 : 2;
        break;
    case '>':
        kind = c1 == '=' ? TK_GE : c1 == '>' ? TK_RSHIFT : TK_GT;
        n = kind == TK_GT ? 1 : 2;
        break;
    default: return false;
    }
    lx->pos += n;
    t->kind = kind;
    return true;
}

static void scan_token(lexer *lx, token *t)
{
    unsigned char c = at(lx, lx->pos), c1 = at(lx, lx->pos + 1);
    if (is_digit(c) || (c == '.' && is_digit(c1)))
        scan_number(lx, t);
    else if ((c == 'x' || c == 'X') && c1 == '\'')
        scan_blob(lx, t);
    else if (is_id_start(c))
        scan_word(lx, t);
    else if (c == '\'')
        scan_quoted(lx, t, TK_STRING, '\'', true,
                    "unterminated string literal");
    else if (c == '"')
        scan_quoted(lx, t, TK_QNAME, '"', true,
                    "unterminated quoted identifier");
    else if (c == '`')
        scan_quoted(lx, t, TK_QNAME, '`', true,
                    "unterminated quoted identifier");
    else if (c == '[')
        scan_quoted(lx, t, TK_QNAME, ']', false,
                    "unterminated quoted identifier");
    else if (c == '?' || c == ':' || c == '@' || c == '$')
        scan_param(lx, t);
    else if (!scan_operator(lx, t)) {
        lx->pos++;
        fail(lx, t, "unrecognized character");
    }
}

void lexer_next(lexer *lx, token *t)
{
    t->kw = KW_NONE;
    bool closed = skip_blank(lx);
    t->off = lx->pos;
    t->line = lx->line;
    t->line_off = lx->line_off;
    if (!closed) {
        lx->pos = lx->len;
        t->len = lx->pos - t->off;
        t->kind = TK_ERROR;
        lx->err = "unterminated block comment";
        return;
    }
    if (lx->pos >= lx->len) {
        t->kind = TK_EOF;
        t->len = 0;
        return;
    }
    scan_token(lx, t);
    if (t->kind != TK_ERROR)
        t->len = lx->pos - t->off;
}

/* ---- decoding ------------------------------------------------------------------- */

char *lex_unquote(arena *a, const char *tok, uint32_t len, uint32_t *n)
{
    char close = tok[0] == '[' ? ']' : tok[0];
    bool doubled = tok[0] != '[';
    char *out = arena_alloc(a, len); /* the quotes make room for the NUL */
    if (!out)
        return NULL;
    uint32_t k = 0;
    for (uint32_t i = 1; i + 1 < len; i++) {
        out[k++] = tok[i];
        if (doubled && tok[i] == close)
            i++; /* the second quote of an escaped pair */
    }
    out[k] = '\0';
    *n = k;
    return out;
}

char *lex_blob(arena *a, const char *tok, uint32_t len, uint32_t *n)
{
    uint32_t count = (len - 3) / 2; /* X'...' */
    char *out = arena_alloc(a, count ? count : 1);
    if (!out)
        return NULL;
    for (uint32_t i = 0; i < count; i++)
        out[i] = (char)(hex_val((unsigned char)tok[2 + 2 * i]) << 4 |
                        hex_val((unsigned char)tok[3 + 2 * i]));
    *n = count;
    return out;
}

static void decode_hex(const char *tok, uint32_t len, lex_number *out)
{
    uint64_t u = 0;
    for (uint32_t i = 2; i < len; i++)
        u = u << 4 | (uint64_t)hex_val((unsigned char)tok[i]);
    out->is_int = true;
    out->i = (int64_t)u; /* two's complement wrap, like SQLite */
}

/* Decimal digits only: false when the value does not fit in int64. */
static bool decode_decimal_int(const char *tok, uint32_t len, int64_t *out)
{
    uint64_t u = 0;
    for (uint32_t i = 0; i < len; i++) {
        uint64_t d = (uint64_t)(tok[i] - '0');
        if (u > (UINT64_MAX - d) / 10)
            return false;
        u = u * 10 + d;
    }
    if (u > (uint64_t)INT64_MAX)
        return false;
    *out = (int64_t)u;
    return true;
}

bool lex_decode_number(arena *a, const char *tok, uint32_t len,
                       lex_number *out)
{
    if (len > 2 && tok[0] == '0' && (tok[1] | 0x20) == 'x') {
        decode_hex(tok, len, out);
        return true;
    }
    bool all_digits = true;
    for (uint32_t i = 0; i < len && all_digits; i++)
        all_digits = is_digit((unsigned char)tok[i]);
    out->is_int = all_digits && decode_decimal_int(tok, len, &out->i);
    if (out->is_int)
        return true;
    char small[64];
    char *buf = len < sizeof small ? small : arena_alloc(a, len + 1);
    if (!buf)
        return false;
    memcpy(buf, tok, len);
    buf[len] = '\0';
    out->r = strtod(buf, NULL);
    return true;
}
