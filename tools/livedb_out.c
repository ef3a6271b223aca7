/*
 * livedb_out.c - the shell's output modes for a statement's rows:
 *   table  aligned columns in a box with a header (rows are buffered to
 *          measure the widths; numbers align right)
 *   csv    RFC 4180: a header line, fields quoted when they hold a comma,
 *          a quote or a line break; NULL is an empty field
 *   json   an array of objects, one per row, values typed as JSON
 *          (docs/VALUES.md "Text forms": NaN and infinities as strings,
 *          BLOB as "\\x..")
 *   line   one "column = value" line per column, a blank line between rows
 *   list   values separated by '|', no header
 * Values are shown in livedb's text form (ldb_row_format). A live query's
 * rows print one to a line (shell_format_row): a JSON object in json
 * mode, CSV fields in csv mode, else values separated by '|'.
 */
#include "livedb.h"
#include "livedb_shell.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *shell_realloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fputs("livedb: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

/* Column i of row in livedb's text form; the caller frees it. */
static char *cell_text(const ldb_row *row, int i, size_t *len)
{
    char small[64];
    size_t n = ldb_row_format(row, i, small, sizeof small);
    char *s = shell_realloc(NULL, n + 1);
    if (n < sizeof small)
        memcpy(s, small, n + 1);
    else
        ldb_row_format(row, i, s, n + 1);
    *len = n;
    return s;
}

/* Display width: UTF-8 characters (continuation bytes do not count). */
static size_t width_of(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static bool is_number(int type) { return type == LDB_INTEGER || type == LDB_REAL; }

/* ---- table ---------------------------------------------------------------- */

typedef struct table_buf {
    int ncol;
    size_t nrows;
    char **cells;   /* row-major, header row first */
    bool *right;    /* right-aligned cells */
    size_t *widths; /* per column */
} table_buf;

static void table_add(table_buf *t, size_t row, int col, char *text, bool right)
{
    size_t k = row * (size_t)t->ncol + (size_t)col;
    t->cells[k] = text;
    t->right[k] = right;
    size_t w = width_of(text);
    if (w > t->widths[col])
        t->widths[col] = w;
}

static void table_rule(FILE *f, const table_buf *t)
{
    for (int c = 0; c < t->ncol; c++) {
        fputc('+', f);
        for (size_t k = 0; k < t->widths[c] + 2; k++)
            fputc('-', f);
    }
    fputs("+\n", f);
}

static void table_row(FILE *f, const table_buf *t, size_t row)
{
    for (int c = 0; c < t->ncol; c++) {
        size_t k = row * (size_t)t->ncol + (size_t)c;
        size_t pad = t->widths[c] - width_of(t->cells[k]);
        fputs("| ", f);
        if (t->right[k])
            fprintf(f, "%*s%s ", (int)pad, "", t->cells[k]);
        else
            fprintf(f, "%s%*s ", t->cells[k], (int)pad, "");
    }
    fputs("|\n", f);
}

static int print_table(ldb_stmt *st, int ncol)
{
    table_buf t = { ncol, 1, NULL, NULL, NULL };
    size_t cap = 16;
    t.cells = shell_realloc(NULL, cap * (size_t)ncol * sizeof *t.cells);
    t.right = shell_realloc(NULL, cap * (size_t)ncol * sizeof *t.right);
    t.widths = shell_realloc(NULL, (size_t)ncol * sizeof *t.widths);
    memset(t.widths, 0, (size_t)ncol * sizeof *t.widths);
    for (int c = 0; c < ncol; c++)
        table_add(&t, 0, c, strdup(ldb_column_name(st, c)), false);
    int rc;
    while ((rc = ldb_step(st)) == LDB_ROW) {
        if (t.nrows == cap) {
            cap *= 2;
            t.cells = shell_realloc(t.cells, cap * (size_t)ncol * sizeof *t.cells);
            t.right = shell_realloc(t.right, cap * (size_t)ncol * sizeof *t.right);
        }
        const ldb_row *row = ldb_stmt_row(st);
        for (int c = 0; c < ncol; c++) {
            size_t len;
            table_add(&t, t.nrows, c, cell_text(row, c, &len), is_number(ldb_row_type(row, c)));
        }
        t.nrows++;
    }
    table_rule(stdout, &t);
    table_row(stdout, &t, 0);
    table_rule(stdout, &t);
    for (size_t r = 1; r < t.nrows; r++)
        table_row(stdout, &t, r);
    if (t.nrows > 1)
        table_rule(stdout, &t);
    for (size_t k = 0; k < t.nrows * (size_t)ncol; k++)
        free(t.cells[k]);
    free(t.cells);
    free(t.right);
    free(t.widths);
    return rc;
}

/* ---- csv, list, line ---------------------------------------------------------- */

static void csv_field(FILE *f, const char *s, size_t n)
{
    if (strcspn(s, ",\"\r\n") == n) {
        fwrite(s, 1, n, f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            fputc('"', f);
        fputc(s[i], f);
    }
    fputc('"', f);
}

static int print_csv(ldb_stmt *st, int ncol)
{
    for (int c = 0; c < ncol; c++) {
        const char *name = ldb_column_name(st, c);
        if (c)
            putchar(',');
        csv_field(stdout, name, strlen(name));
    }
    putchar('\n');
    int rc;
    while ((rc = ldb_step(st)) == LDB_ROW) {
        const ldb_row *row = ldb_stmt_row(st);
        for (int c = 0; c < ncol; c++) {
            if (c)
                putchar(',');
            if (ldb_row_type(row, c) == LDB_NULL)
                continue;
            size_t len;
            char *s = cell_text(row, c, &len);
            csv_field(stdout, s, len);
            free(s);
        }
        putchar('\n');
    }
    return rc;
}

static int print_list(ldb_stmt *st, int ncol)
{
    int rc;
    while ((rc = ldb_step(st)) == LDB_ROW) {
        const ldb_row *row = ldb_stmt_row(st);
        for (int c = 0; c < ncol; c++) {
            size_t len;
            char *s = cell_text(row, c, &len);
            printf("%s%s", c ? "|" : "", s);
            free(s);
        }
        putchar('\n');
    }
    return rc;
}

static int print_lines(ldb_stmt *st, int ncol)
{
    int w = 0, rc;
    for (int c = 0; c < ncol; c++) {
        int n = (int)width_of(ldb_column_name(st, c));
        w = n > w ? n : w;
    }
    for (int r = 0; (rc = ldb_step(st)) == LDB_ROW; r++) {
        const ldb_row *row = ldb_stmt_row(st);
        if (r)
            putchar('\n');
        for (int c = 0; c < ncol; c++) {
            const char *name = ldb_column_name(st, c);
            size_t len;
            char *s = cell_text(row, c, &len);
            printf("%*s%s = %s\n", w - (int)width_of(name), "", name, s);
            free(s);
        }
    }
    return rc;
}

/* ---- json ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2
               : s[0] >= 0xE0 && s[0] < 0xF0 ? 3 : s[0] >= 0xF0 && s[0] < 0xF5 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* A JSON string; invalid UTF-8 bytes become U+FFFD. */
static void json_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = utf8_len((const unsigned char *)s + i, n - i);
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else if (k == 0)
            fputs("\\ufffd", f);
        else
            fwrite(s + i, 1, k, f);
        i += k ? k : 1;
    }
    fputc('"', f);
}

static void json_value(FILE *f, const ldb_row *row, int c)
{
    size_t len;
    const char *p;
    switch (ldb_row_type(row, c)) {
    case LDB_NULL: fputs("null", f); return;
    case LDB_BOOLEAN: fputs(ldb_row_int64(row, c) ? "true" : "false", f); return;
    case LDB_LIVE: fprintf(f, "{\"live\":%lld}", (long long)ldb_live_id(ldb_row_live(row, c))); return;
    case LDB_TEXT:
        p = ldb_row_text(row, c, &len);
        json_string(f, p, len);
        return;
    case LDB_BLOB:
        p = ldb_row_text(row, c, &len);
        fputs("\"\\\\x", f);
        for (size_t i = 0; i < len; i++)
            fprintf(f, "%02x", (unsigned char)p[i]);
        fputc('"', f);
        return;
    default: break;
    }
    char *s = cell_text(row, c, &len);
    if (strcmp(s, "NaN") == 0 || strcmp(s, "Inf") == 0 || strcmp(s, "-Inf") == 0)
        fprintf(f, "\"%s\"",
                strcmp(s, "NaN") == 0 ? "NaN" : s[0] == '-' ? "-Infinity" : "Infinity");
    else
        fputs(s, f); /* numbers, and ARRAY/RECORD already in JSON form */
    free(s);
}

static int print_json(ldb_stmt *st, int ncol)
{
    int rc, r = 0;
    putchar('[');
    for (; (rc = ldb_step(st)) == LDB_ROW; r++) {
        const ldb_row *row = ldb_stmt_row(st);
        fputs(r ? ",\n{" : "{", stdout);
        for (int c = 0; c < ncol; c++) {
            const char *name = ldb_column_name(st, c);
            if (c)
                putchar(',');
            json_string(stdout, name, strlen(name));
            putchar(':');
            json_value(stdout, row, c);
        }
        putchar('}');
    }
    puts("]");
    return rc;
}

int shell_print_rows(shell *sh, ldb_stmt *st)
{
    int ncol = ldb_column_count(st);
    if (ncol == 0)
        return ldb_step(st);
    switch (sh->mode) {
    case MODE_TABLE: return print_table(st, ncol);
    case MODE_CSV: return print_csv(st, ncol);
    case MODE_JSON: return print_json(st, ncol);
    case MODE_LINE: return print_lines(st, ncol);
    default: return print_list(st, ncol);
    }
}

/* ---- one row on a line (live query batches) ------------------------------------ */

void shell_format_columns(const shell *sh, FILE *f, ldb_live *q)
{
    int ncol = ldb_live_column_count(q);
    if (sh->mode == MODE_JSON)
        fputc('[', f);
    for (int c = 0; c < ncol; c++) {
        const char *name = ldb_live_column_name(q, c);
        if (c)
            fputc(sh->mode == MODE_JSON || sh->mode == MODE_CSV ? ',' : '|', f);
        if (sh->mode == MODE_JSON)
            json_string(f, name, strlen(name));
        else if (sh->mode == MODE_CSV)
            csv_field(f, name, strlen(name));
        else
            fputs(name, f);
    }
    if (sh->mode == MODE_JSON)
        fputc(']', f);
}

static void format_json_row(FILE *f, ldb_live *q, const ldb_row *row)
{
    fputc('{', f);
    for (int c = 0; c < ldb_live_column_count(q); c++) {
        const char *name = ldb_live_column_name(q, c);
        if (c)
            fputc(',', f);
        json_string(f, name, strlen(name));
        fputc(':', f);
        json_value(f, row, c);
    }
    fputc('}', f);
}

void shell_format_row(const shell *sh, FILE *f, ldb_live *q, const ldb_row *row)
{
    if (sh->mode == MODE_JSON) {
        format_json_row(f, q, row);
        return;
    }
    bool csv = sh->mode == MODE_CSV;
    for (int c = 0; c < ldb_live_column_count(q); c++) {
        if (c)
            fputc(csv ? ',' : '|', f);
        if (csv && ldb_row_type(row, c) == LDB_NULL)
            continue;
        size_t len;
        char *s = cell_text(row, c, &len);
        if (csv)
            csv_field(f, s, len);
        else
            fwrite(s, 1, len, f);
        free(s);
    }
}

void shell_format_text(const shell *sh, FILE *f, const char *s)
{
    if (sh->mode == MODE_JSON)
        json_string(f, s, strlen(s));
    else
        fputs(s, f);
}
