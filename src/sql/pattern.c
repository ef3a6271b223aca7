/*
 * pattern.c - LIKE and GLOB matching.
 *
 * Both matchers walk pattern and text together and, on a mismatch, return
 * to the last wildcard that matches any run ('%' or '*') and let it take
 * one more character. With a single kind of run wildcard that greedy
 * backtrack is complete, and the work is bounded by O(pattern * text):
 * no recursion, no exponential patterns. Characters are UTF-8 sequences;
 * '_' and '?' take one character. LIKE folds ASCII letters only (as
 * SQLite does without ICU).
 */
#include "sql/func.h"

#include <string.h>

size_t utf8_char_len(const char *p, size_t n)
{
    unsigned char c = (unsigned char)p[0];
    size_t len = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (len > n)
        return 1;
    for (size_t i = 1; i < len; i++)
        if (((unsigned char)p[i] & 0xC0) != 0x80)
            return 1;
    return len;
}

static unsigned char fold(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static bool same_char(const char *a, size_t na, const char *b, size_t nb, bool nocase)
{
    if (na != nb)
        return false;
    if (na == 1 && nocase)
        return fold((unsigned char)*a) == fold((unsigned char)*b);
    return memcmp(a, b, na) == 0;
}

/* ---- LIKE ------------------------------------------------------------------------ */

enum elem_kind { EL_LITERAL, EL_ONE, EL_RUN, EL_CLASS, EL_BAD };

struct elem {
    enum elem_kind kind;
    const char *p; /* literal bytes, or the class body */
    size_t n;      /* literal length, or class body length */
    size_t next;   /* pattern offset after the element */
};

static struct elem like_elem(const char *pat, size_t np, size_t pi,
                             const char *esc, size_t nesc)
{
    struct elem e = { EL_LITERAL, pat + pi, utf8_char_len(pat + pi, np - pi), 0 };
    e.next = pi + e.n;
    if (esc && same_char(e.p, e.n, esc, nesc, false)) {
        if (e.next >= np) {
            e.kind = EL_BAD;
            return e;
        }
        e.p = pat + e.next;
        e.n = utf8_char_len(e.p, np - e.next);
        e.next += e.n;
        return e;
    }
    if (e.n == 1 && *e.p == '%')
        e.kind = EL_RUN;
    else if (e.n == 1 && *e.p == '_')
        e.kind = EL_ONE;
    return e;
}

bool sql_like(const char *pat, size_t np, const char *s, size_t ns,
              const char *esc, size_t nesc)
{
    size_t pi = 0, si = 0;
    size_t star_p = SIZE_MAX, star_s = 0;
    while (si < ns) {
        if (pi < np) {
            struct elem e = like_elem(pat, np, pi, esc, nesc);
            if (e.kind == EL_BAD)
                return false;
            if (e.kind == EL_RUN) {
                star_p = pi = e.next;
                star_s = si;
                continue;
            }
            size_t cn = utf8_char_len(s + si, ns - si);
            if (e.kind == EL_ONE || same_char(e.p, e.n, s + si, cn, true)) {
                pi = e.next;
                si += cn;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        star_s += utf8_char_len(s + star_s, ns - star_s);
        si = star_s;
    }
    while (pi < np) {
        struct elem e = like_elem(pat, np, pi, esc, nesc);
        if (e.kind != EL_RUN)
            return false;
        pi = e.next;
    }
    return true;
}

/* ---- GLOB ------------------------------------------------------------------------ */

static uint32_t decode(const char *p, size_t n)
{
    unsigned char c = (unsigned char)p[0];
    if (n == 1)
        return c;
    uint32_t cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++)
        cp = (cp << 6) | ((unsigned char)p[i] & 0x3F);
    return cp;
}

/* [...] element: body between '[' and the closing ']' (a ']' right after
 * '[' or '[^' belongs to the set). */
static struct elem glob_class(const char *pat, size_t np, size_t pi)
{
    struct elem e = { EL_CLASS, pat + pi + 1, 0, 0 };
    size_t i = pi + 1;
    if (i < np && pat[i] == '^')
        i++;
    if (i < np && pat[i] == ']')
        i++;
    while (i < np && pat[i] != ']')
        i++;
    if (i >= np) {
        e.kind = EL_BAD;
        return e;
    }
    e.n = i - (pi + 1);
    e.next = i + 1;
    return e;
}

static struct elem glob_elem(const char *pat, size_t np, size_t pi)
{
    struct elem e = { EL_LITERAL, pat + pi, utf8_char_len(pat + pi, np - pi), 0 };
    e.next = pi + e.n;
    if (e.n == 1 && *e.p == '*')
        e.kind = EL_RUN;
    else if (e.n == 1 && *e.p == '?')
        e.kind = EL_ONE;
    else if (e.n == 1 && *e.p == '[')
        return glob_class(pat, np, pi);
    return e;
}

/* Whether c is in the class body ("^" negates; "a-z" is a range; a '-'
 * at the end is literal). */
static bool class_has(const struct elem *e, uint32_t c)
{
    const char *p = e->p;
    size_t n = e->n, i = 0;
    bool negate = n > 0 && p[0] == '^';
    bool found = false;
    for (i = negate; i < n;) {
        size_t l = utf8_char_len(p + i, n - i);
        uint32_t lo = decode(p + i, l), hi = lo;
        i += l;
        if (i + 1 < n && p[i] == '-') {
            size_t l2 = utf8_char_len(p + i + 1, n - i - 1);
            hi = decode(p + i + 1, l2);
            i += 1 + l2;
        }
        if (c >= lo && c <= hi)
            found = true;
    }
    return found != negate;
}

bool sql_glob(const char *pat, size_t np, const char *s, size_t ns)
{
    size_t pi = 0, si = 0;
    size_t star_p = SIZE_MAX, star_s = 0;
    while (si < ns) {
        if (pi < np) {
            struct elem e = glob_elem(pat, np, pi);
            if (e.kind == EL_BAD)
                return false;
            if (e.kind == EL_RUN) {
                star_p = pi = e.next;
                star_s = si;
                continue;
            }
            size_t cn = utf8_char_len(s + si, ns - si);
            bool ok = e.kind == EL_ONE ||
                      (e.kind == EL_CLASS ? class_has(&e, decode(s + si, cn))
                                          : same_char(e.p, e.n, s + si, cn, false));
            if (ok) {
                pi = e.next;
                si += cn;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        star_s += utf8_char_len(s + star_s, ns - star_s);
        si = star_s;
    }
    while (pi < np && pat[pi] == '*')
        pi++;
    return pi == np;
}
