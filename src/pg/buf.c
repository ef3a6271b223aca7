/*
 * buf.c - the adapter's growing byte buffer, with PostgreSQL quoting.
 *
 * A buffer that failed to grow sets oom and ignores later appends, so a
 * caller builds a whole string and checks once at the end.
 */
#include "pg/pg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool buf_reserve(pg_buf *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->n + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void pg_buf_add(pg_buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void pg_buf_puts(pg_buf *b, const char *s) { pg_buf_add(b, s, strlen(s)); }

void pg_buf_printf(pg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void pg_buf_ident(pg_buf *b, const char *name)
{
    pg_buf_add(b, "\"", 1);
    for (const char *q = name; *q; q++)
        pg_buf_add(b, *q == '"' ? "\"\"" : q, *q == '"' ? 2 : 1);
    pg_buf_add(b, "\"", 1);
}

/* Sessions run with standard_conforming_strings on (conn.c), so a quote
 * is the only character to double. */
void pg_buf_literal(pg_buf *b, const char *s, size_t n)
{
    pg_buf_add(b, "'", 1);
    size_t from = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\'') {
            pg_buf_add(b, s + from, i + 1 - from);
            pg_buf_add(b, "'", 1);
            from = i + 1;
        }
    pg_buf_add(b, s + from, n - from);
    pg_buf_add(b, "'", 1);
}

const char *pg_buf_str(pg_buf *b) { return b->p && !b->oom ? b->p : ""; }

void pg_buf_free(pg_buf *b)
{
    free(b->p);
    *b = (pg_buf){ 0 };
}

/* bytea's hex input form, quoted: '\x0a1b...' */
void pg_buf_bytea(pg_buf *b, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    pg_buf_puts(b, "'\\x");
    for (size_t i = 0; i < n; i++) {
        char two[2] = { hex[(unsigned char)p[i] >> 4], hex[(unsigned char)p[i] & 15] };
        pg_buf_add(b, two, 2);
    }
    pg_buf_puts(b, "'");
}
