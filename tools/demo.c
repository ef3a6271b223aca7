/*
 * demo.c - the main demo. For now it shows the value model: a mixed bag of
 * values sorted by livedb's total order, with their text and JSON forms and
 * which of them are canonically equal. It grows into the live-query demo
 * as the engine grows.
 */
#include "base/strbuf.h"
#include "value/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_values(const void *a, const void *b)
{
    return value_cmp(a, b, LDB_COLL_BINARY);
}

int main(void)
{
    value v[16];
    int n = 0;
    v[n++] = value_real(NAN);
    v[n++] = value_int(9007199254740993LL);
    v[n++] = value_real(9007199254740992.0);
    v[n++] = value_null();
    v[n++] = value_real(-0.0);
    v[n++] = value_int(0);
    v[n++] = value_real(INFINITY);
    v[n++] = value_bool(true);
    v[n++] = value_int(5);
    v[n++] = value_real(5.0);
    if (value_text(&v[n++], "banana", 6) || value_text(&v[n++], "Apple", 5) ||
        value_blob(&v[n++], "\x01\x02", 2)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    qsort(v, (size_t)n, sizeof v[0], cmp_values);
    printf("%-4s %-22s %-22s %s\n", "rank", "text", "json", "type");
    strbuf t = STRBUF_INIT, j = STRBUF_INIT;
    for (int i = 0; i < n; i++) {
        sb_truncate(&t, 0);
        sb_truncate(&j, 0);
        value_format(&t, &v[i]);
        value_format_json(&j, &v[i]);
        static const char *names[] = { "NULL", "BOOLEAN", "INTEGER", "REAL", "TEXT", "BLOB", "ARRAY", "RECORD" };
        const char *eq = (i > 0 && value_eq(&v[i - 1], &v[i], LDB_COLL_BINARY)) ? "  (= previous)" : "";
        printf("%-4d %-22s %-22s %s%s\n", i, sb_str(&t), sb_str(&j), names[value_type(&v[i])], eq);
    }
    sb_free(&t);
    sb_free(&j);
    for (int i = 0; i < n; i++)
        value_release(&v[i]);
    return 0;
}
