/*
 * strbuf.c - string builder (see strbuf.h).
 */
#include "base/strbuf.h"

#include "base/mem.h"
#include "livedb.h"

#include <stdio.h>
#include <string.h>

void sb_init(strbuf *sb)
{
    sb->p = NULL;
    sb->len = sb->cap = 0;
    sb->err = LDB_OK;
    sb->fixed = 0;
}

void sb_init_fixed(strbuf *sb, char *buf, size_t cap)
{
    sb->p = buf;
    sb->len = 0;
    sb->cap = cap;
    sb->err = LDB_OK;
    sb->fixed = 1;
    if (cap)
        buf[0] = '\0';
}

/* Bytes a fixed builder can still store before its terminator. */
static size_t fixed_room(const strbuf *sb)
{
    return sb->len + 1 < sb->cap ? sb->cap - sb->len - 1 : 0;
}

/* Ensures room for n more bytes plus the terminator. */
static int sb_room(strbuf *sb, size_t n)
{
    if (sb->err)
        return 0;
    if (sb->len + n + 1 <= sb->cap)
        return 1;
    size_t ncap = sb->cap ? sb->cap : 32;
    while (ncap < sb->len + n + 1) {
        if (ncap > SIZE_MAX / 2) {
            sb->err = LDB_NOMEM;
            return 0;
        }
        ncap *= 2;
    }
    char *np = mem_realloc(sb->p, ncap);
    if (!np) {
        sb->err = LDB_NOMEM;
        return 0;
    }
    sb->p = np;
    sb->cap = ncap;
    return 1;
}

void sb_put(strbuf *sb, const void *data, size_t n)
{
    if (sb->fixed) {
        size_t k = fixed_room(sb) < n ? fixed_room(sb) : n;
        if (k) {
            memcpy(sb->p + sb->len, data, k);
            sb->p[sb->len + k] = '\0';
        }
        sb->len += n;
        return;
    }
    if (!sb_room(sb, n))
        return;
    if (n)
        memcpy(sb->p + sb->len, data, n);
    sb->len += n;
    sb->p[sb->len] = '\0';
}

void sb_puts(strbuf *sb, const char *s) { sb_put(sb, s, strlen(s)); }

void sb_putc(strbuf *sb, char c) { sb_put(sb, &c, 1); }

void sb_vprintf(strbuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char tmp[128];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sb_put(sb, tmp, (size_t)n);
        return;
    }
    if (sb->fixed) {
        if (fixed_room(sb))
            vsnprintf(sb->p + sb->len, fixed_room(sb) + 1, fmt, ap);
        sb->len += (size_t)n;
        return;
    }
    if (!sb_room(sb, (size_t)n))
        return;
    vsnprintf(sb->p + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

char *sb_extend(strbuf *sb, size_t n)
{
    if (sb->fixed && !sb->err)
        sb->err = LDB_NOMEM;
    if (sb->fixed || !sb_room(sb, n))
        return NULL;
    char *at = sb->p + sb->len;
    sb->len += n;
    sb->p[sb->len] = '\0';
    return at;
}

void sb_truncate(strbuf *sb, size_t len)
{
    if (len < sb->len) {
        sb->len = len;
        if (len < sb->cap)
            sb->p[len] = '\0';
    }
}

const char *sb_str(const strbuf *sb) { return sb->p ? sb->p : ""; }

char *sb_take(strbuf *sb, size_t *len)
{
    if (sb->err) {
        sb_free(sb);
        return NULL;
    }
    if (!sb->p && !sb_room(sb, 0))
        return NULL;
    if (sb->len == 0)
        sb->p[0] = '\0';
    char *p = sb->p;
    if (len)
        *len = sb->len;
    sb_init(sb);
    return p;
}

void sb_free(strbuf *sb)
{
    if (!sb->fixed)
        mem_free(sb->p);
    sb_init(sb);
}
