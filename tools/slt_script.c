/*
 * slt_script.c - reads a sqllogictest script and splits it into records,
 * following the corpus README: lines lose a trailing '\r'; lines starting
 * with '#' are dropped before anything else (so they neither separate
 * records nor reach the SQL); records are separated by lines that are all
 * white space; skipif/onlyif lines prefix a record, any text after the
 * engine name being a comment. The runner calls itself "sqlite", since
 * the expected results follow SQLite's semantics.
 */
#include "slt.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s == 0;
}

/* Splits text into NUL-terminated lines in place. */
static int split_lines(slt_script *s)
{
    int cap = 1024;
    s->lines = malloc((size_t)cap * sizeof *s->lines);
    if (!s->lines)
        return -1;
    for (char *p = s->text; *p;) {
        char *nl = strchr(p, '\n');
        if (s->nlines == cap) {
            char **grown = realloc(s->lines, (size_t)cap * 2 * sizeof *grown);
            if (!grown)
                return -1;
            s->lines = grown;
            cap *= 2;
        }
        s->lines[s->nlines++] = p;
        char *end = nl ? nl : p + strlen(p);
        if (end > p && end[-1] == '\r')
            end[-1] = 0;
        if (!nl)
            break;
        *nl = 0;
        p = nl + 1;
    }
    return 0;
}

/* Splits line into at most SLT_MAX_WORDS - 1 words, in place. */
static void split_words(char *line, const char **word)
{
    int n = 0;
    char *p = line;
    while (n < SLT_MAX_WORDS - 1) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        word[n++] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p)
            *p++ = 0;
    }
    word[n] = NULL;
}

/* Consumes the skipif/onlyif lines at the start of r. */
static void read_conditions(slt_record *r)
{
    while (r->nlines > 0) {
        int skipif = strncmp(r->lines[0], "skipif", 6) == 0;
        int onlyif = strncmp(r->lines[0], "onlyif", 6) == 0;
        if ((!skipif && !onlyif) || !isspace((unsigned char)r->lines[0][6]))
            return;
        const char *w[SLT_MAX_WORDS];
        split_words(r->lines[0], w);
        int names_us = w[1] && strcmp(w[1], "sqlite") == 0;
        if (skipif ? names_us : !names_us)
            r->skip = 1;
        r->lines++;
        r->nlines--;
        r->line++;
    }
}

static void classify(slt_record *r)
{
    r->kind = SLT_UNKNOWN;
    if (r->nlines == 0)
        return;
    split_words(r->lines[0], r->word);
    const char *w = r->word[0] ? r->word[0] : "";
    r->sql_end = r->results = r->nlines;
    if (strcmp(w, "statement") == 0) {
        r->kind = SLT_STATEMENT;
    } else if (strcmp(w, "query") == 0) {
        r->kind = SLT_QUERY;
        for (int i = 1; i < r->nlines; i++) {
            if (strcmp(r->lines[i], "----") == 0) {
                r->sql_end = i;
                r->results = i + 1;
                break;
            }
        }
    } else if (strcmp(w, "hash-threshold") == 0) {
        r->kind = SLT_HASH_THRESHOLD;
    } else if (strcmp(w, "halt") == 0) {
        r->kind = SLT_HALT;
    }
}

/* Builds the records from the kept (non-comment) lines; kept[i] is NULL
 * where a blank line separated records. */
static int build_records(slt_script *s, char **kept, int *lineno, int nkept)
{
    int cap = 0;
    for (int i = 0; i < nkept;) {
        if (!kept[i]) {
            i++;
            continue;
        }
        int j = i;
        while (j < nkept && kept[j])
            j++;
        if (s->nrecs == cap) {
            cap = cap ? cap * 2 : 256;
            slt_record *grown = realloc(s->recs, (size_t)cap * sizeof *grown);
            if (!grown)
                return -1;
            s->recs = grown;
        }
        slt_record *r = &s->recs[s->nrecs++];
        memset(r, 0, sizeof *r);
        r->lines = kept + i;
        r->nlines = j - i;
        r->line = lineno[i];
        read_conditions(r);
        if (r->nlines > 0)
            r->line = lineno[i + (int)(r->lines - (kept + i))];
        classify(r);
        i = j;
    }
    return 0;
}

int slt_script_parse(slt_script *s, char *text)
{
    memset(s, 0, sizeof *s);
    s->text = text;
    if (split_lines(s) < 0)
        return -1;
    /* kept holds the record lines; it stays alive as the records' lines. */
    char **kept = malloc(((size_t)s->nlines + 1) * sizeof *kept);
    int *lineno = malloc(((size_t)s->nlines + 1) * sizeof *lineno);
    if (!kept || !lineno) {
        free(kept);
        free(lineno);
        return -1;
    }
    int nkept = 0;
    for (int i = 0; i < s->nlines; i++) {
        if (s->lines[i][0] == '#')
            continue;
        lineno[nkept] = i + 1;
        kept[nkept++] = is_blank(s->lines[i]) ? NULL : s->lines[i];
    }
    free(s->lines);
    s->lines = kept;
    s->nlines = nkept;
    int rc = build_records(s, kept, lineno, nkept);
    free(lineno);
    return rc;
}

int slt_script_load(slt_script *s, const char *path)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    while (text) {
        len += fread(text + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        char *grown = realloc(text, cap * 2);
        if (!grown) {
            free(text);
            text = NULL;
            break;
        }
        text = grown;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!text || err) {
        free(text);
        errno = err ? EIO : ENOMEM;
        return -1;
    }
    text[len] = 0;
    if (slt_script_parse(s, text) < 0) {
        slt_script_free(s);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void slt_script_free(slt_script *s)
{
    free(s->text);
    free(s->lines);
    free(s->recs);
    memset(s, 0, sizeof *s);
}

char *slt_record_sql(const slt_record *r)
{
    size_t n = 1;
    for (int i = 1; i < r->sql_end; i++)
        n += strlen(r->lines[i]) + 1;
    char *sql = malloc(n), *p = sql;
    if (!sql)
        return NULL;
    for (int i = 1; i < r->sql_end; i++) {
        size_t k = strlen(r->lines[i]);
        if (i > 1)
            *p++ = '\n';
        memcpy(p, r->lines[i], k);
        p += k;
    }
    *p = 0;
    return sql;
}
