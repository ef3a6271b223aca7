/*
 * strbuf.h - a growable byte string builder.
 *
 * Errors are sticky: after a failed allocation every later append is a
 * no-op and sb_error() returns LDB_NOMEM, so callers check once at the end.
 * The buffer is always NUL-terminated once anything was appended.
 * Ownership: the builder owns its buffer until sb_take hands it over.
 *
 * A fixed builder (sb_init_fixed) writes into the caller's buffer instead
 * and never allocates: what does not fit is dropped, len still counts it
 * (the full length, as snprintf returns), the buffer stays NUL-terminated,
 * and sb_take is not for it. Formatting for a caller's buffer then cannot
 * fail for want of memory.
 */
#ifndef LDB_BASE_STRBUF_H
#define LDB_BASE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
    char *p;
    size_t len, cap;
    int err;   /* LDB_OK or LDB_NOMEM */
    int fixed; /* p is the caller's, of cap bytes */
} strbuf;

#define STRBUF_INIT { NULL, 0, 0, 0, 0 }

void sb_init(strbuf *sb);
void sb_init_fixed(strbuf *sb, char *buf, size_t cap);
void sb_put(strbuf *sb, const void *data, size_t n);
void sb_puts(strbuf *sb, const char *s);
void sb_putc(strbuf *sb, char c);
void sb_printf(strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *sb, const char *fmt, va_list ap);
/* Drops the last n bytes (n <= len). */
void sb_truncate(strbuf *sb, size_t len);
/* n more bytes at the end of a growable builder, for the caller to write
 * in place (then sb_truncate to what it wrote): one room check for many
 * small appends. NULL after a failed allocation, or for a fixed builder
 * (whose appends may not be written in place; an error then too). */
char *sb_extend(strbuf *sb, size_t n);
static inline int sb_error(const strbuf *sb) { return sb->err; }
/* The contents ("" when empty); borrowed, valid until the next append. */
const char *sb_str(const strbuf *sb);
/* Hands the buffer to the caller (mem_free it); NULL on error. The builder
 * is empty afterwards. */
char *sb_take(strbuf *sb, size_t *len);
void sb_free(strbuf *sb);

#endif
