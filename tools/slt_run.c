/*
 * slt_run.c - runs the records of one sqllogictest script on an engine
 * and judges them (README "Format"): statements must succeed or fail as
 * stated; a query's values are rendered (slt_result.c), sorted as its sort
 * mode says, and compared line by line with the expected values, or, past
 * the hash threshold, as "<n> values hashing to <md5>"; a labelled query's
 * md5 must equal that of every other query with the label, including
 * skipped ones, whose expected values stand in for their result.
 *
 * Counting: a statement or query that runs is passed or failed; one that a
 * skipif/onlyif excludes, or that the engine rejects as unsupported, is
 * skipped (the latter with its reason tallied). Control records (halt,
 * hash-threshold) are not counted. A malformed record is a failure. A
 * record on the options' list of known deviations that fails counts as a
 * deviation, printed with its reason; any other outcome of a listed
 * record, and a listed record the file does not have, is a failure.
 *
 * Every query is timed (the slowest is kept in the counts); with a
 * query limit, a query slower than it fails whatever its result, and an
 * engine that can be stopped is told the limit, so a runaway query ends.
 */
#include "slt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_HASH_THRESHOLD 8
#define LABEL_BUCKETS 4096

typedef struct label {
    struct label *next;
    char md5[33];
    int line; /* where the label was first seen */
    char name[];
} label;

typedef struct run {
    const char *path;
    slt_options *o;
    slt_counts *c;
    void *db;
    int threshold;
    int reports; /* failures printed in full so far */
    const slt_deviation *known; /* the current record's entry, or NULL */
    char *met;   /* per entry of o->known: met in this file */
    slt_result res;
    const char **vals; /* the values in comparison order */
    size_t capvals;
    label *labels[LABEL_BUCKETS];
} run;

/* Out of memory ends the run: no report could be trusted after it. */
static void *must_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("slt: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

/* ---- labels ------------------------------------------------------------- */

static unsigned label_bucket(const char *name)
{
    unsigned h = 2166136261u;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    return h % LABEL_BUCKETS;
}

/* Checks md5 against the label's first md5 (recording it on first use).
 * Returns the line of the disagreeing first use, or 0 when they agree. */
static int label_check(run *R, const char *name, const char *md5, int line)
{
    label **head = &R->labels[label_bucket(name)];
    for (label *l = *head; l; l = l->next)
        if (strcmp(l->name, name) == 0)
            return strcmp(l->md5, md5) == 0 ? 0 : l->line;
    size_t n = strlen(name);
    label *l = must_alloc(sizeof *l + n + 1);
    memcpy(l->name, name, n + 1);
    memcpy(l->md5, md5, 33);
    l->line = line;
    l->next = *head;
    *head = l;
    return 0;
}

static void labels_free(run *R)
{
    for (int i = 0; i < LABEL_BUCKETS; i++) {
        while (R->labels[i]) {
            label *l = R->labels[i];
            R->labels[i] = l->next;
            free(l);
        }
    }
}

/* ---- reporting ------------------------------------------------------------ */

static void tally_reason(slt_options *o, const char *msg)
{
    /* "line 1, column 8: window functions ..." -> "window functions ..." */
    const char *colon = strstr(msg, ": ");
    if (strncmp(msg, "line ", 5) == 0 && colon)
        msg = colon + 2;
    char text[sizeof o->reasons[0].text];
    snprintf(text, sizeof text, "%s", msg);
    for (int i = 0; i < o->nreasons; i++) {
        if (strcmp(o->reasons[i].text, text) == 0) {
            o->reasons[i].count++;
            return;
        }
    }
    if (o->nreasons == o->capreasons) {
        int cap = o->capreasons ? o->capreasons * 2 : 32;
        slt_reason *grown = realloc(o->reasons, (size_t)cap * sizeof *grown);
        if (!grown)
            return;
        o->reasons = grown;
        o->capreasons = cap;
    }
    slt_reason *r = &o->reasons[o->nreasons++];
    memcpy(r->text, text, sizeof text);
    r->count = 1;
}

/* Prints up to 4 lines of the record's SQL, indented. */
static void print_sql(FILE *f, const slt_record *r)
{
    int end = r->sql_end < 5 ? r->sql_end : 5;
    for (int i = 1; i < end; i++)
        fprintf(f, "    %.200s\n", r->lines[i]);
    if (r->sql_end > end)
        fprintf(f, "    ...\n");
}

/* Prints "<what>: v1 | v2 | ..." for the first few of n strings. */
static void print_values(FILE *f, const char *what, const char *const *v, size_t n)
{
    fprintf(f, "  %-8s (%zu): ", what, n);
    for (size_t i = 0; i < n && i < 12; i++)
        fprintf(f, "%s%.60s", i ? " | " : "", v[i]);
    fprintf(f, "%s\n", n > 12 ? " | ..." : "");
}

/* Counts a failure; the first few per file are printed with the
 * record's SQL. */
static int report(run *R, const slt_record *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int report(run *R, const slt_record *r, const char *fmt, ...)
{
    FILE *f = R->o->out;
    if (R->known) {
        R->c->deviations++;
        fprintf(f, "KNOWN %s:%d: %s\n", R->path, r->line, R->known->reason);
        return 0;
    }
    R->c->failed++;
    if (R->reports >= R->o->max_reports)
        return 0;
    R->reports++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(f, "FAIL %s:%d: ", R->path, r->line);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
    print_sql(f, r);
    return 1;
}

/* A record that did not fail: passed, or skipped (how says which). A
 * listed known deviation must fail, so here it is a failure. */
static void not_failed(run *R, const slt_record *r, long *count, const char *how)
{
    if (!R->known) {
        (*count)++;
        return;
    }
    const slt_deviation *k = R->known;
    R->known = NULL;
    report(R, r, "listed as a known deviation (%s), but %s: take it off the list",
           k->reason, how);
}

/* Whether path names the corpus file file (a path below the corpus). */
static int is_file(const char *path, const char *file)
{
    size_t n = strlen(path), m = strlen(file);
    return n >= m && strcmp(path + n - m, file) == 0 && (n == m || path[n - m - 1] == '/');
}

/* Looks a statement or query record up in the known deviations. */
static void find_known(run *R, const slt_record *r)
{
    R->known = NULL;
    if (r->kind != SLT_STATEMENT && r->kind != SLT_QUERY)
        return;
    for (int i = 0; i < R->o->nknown; i++) {
        const slt_deviation *k = &R->o->known[i];
        if (k->line == r->line && is_file(R->path, k->file)) {
            R->known = k;
            R->met[i] = 1;
        }
    }
}

/* Every entry naming this file must have been met. */
static void check_known_met(run *R)
{
    R->known = NULL;
    for (int i = 0; i < R->o->nknown; i++) {
        const slt_deviation *k = &R->o->known[i];
        if (R->met[i] || !is_file(R->path, k->file))
            continue;
        R->c->failed++;
        fprintf(R->o->out, "FAIL %s:%d: listed as a known deviation, but no record starts there\n",
                R->path, k->line);
    }
}

/* ---- statements ------------------------------------------------------------- */

static void run_statement(run *R, const slt_record *r)
{
    const char *mode = r->word[1] ? r->word[1] : "";
    int expect_error = strcmp(mode, "error") == 0;
    if (!expect_error && strcmp(mode, "ok") != 0) {
        report(R, r, "malformed statement record: '%s'", mode);
        return;
    }
    char *sql = slt_record_sql(r);
    slt_msg msg = { "", 0 };
    int rc = sql ? R->o->engine->exec(R->db, sql, &msg) : SLT_ERROR;
    free(sql);
    if (rc == SLT_UNSUPPORTED) {
        not_failed(R, r, &R->c->skipped_unsupported, "it was unsupported");
        tally_reason(R->o, msg.text);
    } else if (expect_error ? rc != SLT_OK : rc == SLT_OK) {
        not_failed(R, r, &R->c->passed, "it passed");
    } else if (expect_error) {
        report(R, r, "statement succeeded, but an error was expected");
    } else {
        report(R, r, "statement failed: %s", msg.text);
    }
}

/* ---- queries ------------------------------------------------------------------ */

double slt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const slt_result *sort_ctx;

static int cmp_rows(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    size_t n = (size_t)sort_ctx->ncol;
    for (size_t k = 0; k < n; k++) {
        int c = strcmp(slt_value(sort_ctx, i * n + k), slt_value(sort_ctx, j * n + k));
        if (c)
            return c;
    }
    return 0;
}

static int cmp_strs(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void slt_order_values(const slt_result *res, const char *sort, const char ***vals,
                      size_t *cap)
{
    if (res->nval > *cap) {
        free(*vals);
        *cap = res->nval * 2;
        *vals = must_alloc(*cap * sizeof **vals);
    }
    const char **v = *vals;
    size_t ncol = (size_t)res->ncol, nrow = res->nval / ncol;
    if (strcmp(sort, "rowsort") == 0 && nrow > 1) {
        size_t *rows = must_alloc(nrow * sizeof *rows);
        for (size_t i = 0; i < nrow; i++)
            rows[i] = i;
        sort_ctx = res;
        qsort(rows, nrow, sizeof *rows, cmp_rows);
        for (size_t i = 0; i < nrow; i++)
            for (size_t k = 0; k < ncol; k++)
                v[i * ncol + k] = slt_value(res, rows[i] * ncol + k);
        free(rows);
        return;
    }
    for (size_t i = 0; i < res->nval; i++)
        v[i] = slt_value(res, i);
    if (strcmp(sort, "valuesort") == 0)
        qsort(v, res->nval, sizeof *v, cmp_strs);
}

void slt_md5_values(const char *const *v, size_t n, char hex[33])
{
    slt_md5 m;
    slt_md5_init(&m);
    for (size_t i = 0; i < n; i++) {
        slt_md5_update(&m, v[i], strlen(v[i]));
        slt_md5_update(&m, "\n", 1);
    }
    slt_md5_hex(&m, hex);
}

/* The md5 of a record's expected values: the hash of a hashed block, or
 * the hash of the listed values. */
static void expected_md5(const slt_record *r, char hex[33])
{
    int n = r->nlines - r->results;
    const char *p = n == 1 ? strstr(r->lines[r->results], " values hashing to ") : NULL;
    if (p && strlen(p + 19) == 32) {
        memcpy(hex, p + 19, 33);
        return;
    }
    slt_md5_values((const char *const *)r->lines + r->results, (size_t)n, hex);
}

/* Compares the ordered values with the expected block; 1 when equal. */
static int matches(run *R, const slt_record *r, const char *md5, char *hashline,
                   size_t hashsize)
{
    size_t n = R->res.nval;
    int nexp = r->nlines - r->results;
    const char *const *exp = (const char *const *)r->lines + r->results;
    if (R->threshold > 0 && n > (size_t)R->threshold) {
        snprintf(hashline, hashsize, "%zu values hashing to %s", n, md5);
        return nexp == 1 && strcmp(exp[0], hashline) == 0;
    }
    hashline[0] = 0;
    if ((size_t)nexp != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(exp[i], R->vals[i]) != 0)
            return 0;
    return 1;
}

static void report_mismatch(run *R, const slt_record *r, const char *hashline)
{
    const char *why = r->nlines - r->results == (int)R->res.nval || hashline[0]
                          ? "wrong result" : "wrong number of values";
    if (!report(R, r, "%s", why))
        return;
    FILE *f = R->o->out;
    print_values(f, "expected", (const char *const *)r->lines + r->results,
                 (size_t)(r->nlines - r->results));
    if (hashline[0])
        fprintf(f, "  got: %s\n", hashline);
    print_values(f, "got", R->vals, R->res.nval);
}

/* Whether the query header is well formed; reports it if not. */
static int query_header_ok(run *R, const slt_record *r)
{
    const char *types = r->word[1], *sort = r->word[2];
    if (!types || !*types) {
        report(R, r, "malformed query record: no column types");
        return 0;
    }
    if (sort && strcmp(sort, "nosort") != 0 && strcmp(sort, "rowsort") != 0 &&
        strcmp(sort, "valuesort") != 0) {
        report(R, r, "unknown sort mode '%s'", sort);
        return 0;
    }
    return 1;
}

static void skip_query(run *R, const slt_record *r)
{
    const char *lab = r->word[1] && r->word[2] ? r->word[3] : NULL;
    if (lab) {
        char md5[33];
        expected_md5(r, md5);
        label_check(R, lab, md5, r->line);
    }
}

static int query_failed(run *R, const slt_record *r, int rc, const slt_msg *msg)
{
    switch (rc) {
    case SLT_OK: return 0;
    case SLT_UNSUPPORTED:
        not_failed(R, r, &R->c->skipped_unsupported, "it was unsupported");
        tally_reason(R->o, msg->text);
        skip_query(R, r);
        return 1;
    case SLT_COLUMNS:
        report(R, r, "wrong number of columns: expected %d, got %d", R->res.ncol,
               msg->ncol);
        return 1;
    default:
        report(R, r, "query failed: %s", msg->text);
        return 1;
    }
}

static void run_query(run *R, const slt_record *r)
{
    if (!query_header_ok(R, r))
        return;
    const char *sort = r->word[2] ? r->word[2] : "nosort";
    const char *lab = r->word[2] ? r->word[3] : NULL;
    char *sql = slt_record_sql(r);
    slt_msg msg = { "", 0 };
    slt_result_reset(&R->res, r->word[1]);
    double start = slt_now();
    int rc = sql ? R->o->engine->query(R->db, sql, &R->res, &msg) : SLT_ERROR;
    double took = slt_now() - start;
    free(sql);
    if (took > R->c->slowest || !R->c->slowest_line) {
        R->c->slowest = took;
        R->c->slowest_line = r->line;
    }
    if (R->o->query_limit > 0 && took > R->o->query_limit) {
        report(R, r, "too slow: %.3f s, the limit is %.3f s (%s)", took, R->o->query_limit,
               rc == SLT_OK ? "it finished" : msg.text);
        return;
    }
    if (query_failed(R, r, rc, &msg))
        return;
    slt_order_values(&R->res, sort, &R->vals, &R->capvals);
    char md5[33], hashline[96];
    slt_md5_values(R->vals, R->res.nval, md5);
    if (!matches(R, r, md5, hashline, sizeof hashline)) {
        report_mismatch(R, r, hashline);
        return;
    }
    int first = lab ? label_check(R, lab, md5, r->line) : 0;
    if (first) {
        report(R, r, "label %s: result differs from line %d", lab, first);
        return;
    }
    not_failed(R, r, &R->c->passed, "it passed");
}

/* ---- files ----------------------------------------------------------------- */

/* Runs one record; returns 0 to go on, 1 at a halt. */
static int run_record(run *R, const slt_record *r)
{
    find_known(R, r);
    switch (r->kind) {
    case SLT_HALT:
        return !r->skip;
    case SLT_HASH_THRESHOLD:
        if (!r->skip)
            R->threshold = r->word[1] ? atoi(r->word[1]) : 0;
        return 0;
    case SLT_STATEMENT:
    case SLT_QUERY:
        if (r->skip) {
            not_failed(R, r, &R->c->skipped_cond, "skipif/onlyif excluded it");
            if (r->kind == SLT_QUERY)
                skip_query(R, r);
        } else if (r->kind == SLT_STATEMENT) {
            run_statement(R, r);
        } else {
            run_query(R, r);
        }
        return 0;
    default:
        if (!r->skip)
            report(R, r, "unknown record type '%s'", r->word[0] ? r->word[0] : "");
        return 0;
    }
}

int slt_run_file(const char *path, slt_options *o, slt_counts *c)
{
    slt_script s;
    if (slt_script_load(&s, path) < 0) {
        fprintf(stderr, "slt: %s: %s\n", path, strerror(errno));
        return -1;
    }
    run *R = calloc(1, sizeof *R);
    slt_msg msg = { "", 0 };
    void *db = R ? o->engine->open(&msg) : NULL;
    if (!db) {
        fprintf(stderr, "slt: %s: cannot open a %s database: %s\n", path,
                o->engine->name, R ? msg.text : "out of memory");
        free(R);
        slt_script_free(&s);
        return -1;
    }
    *R = (run){ .path = path, .o = o, .c = c, .db = db,
                .threshold = DEFAULT_HASH_THRESHOLD, .met = calloc((size_t)o->nknown + 1, 1) };
    slt_result_init(&R->res);
    if (o->query_limit > 0 && o->engine->limit)
        o->engine->limit(db, o->query_limit);
    for (int i = 0; R->met && i < s.nrecs && !run_record(R, &s.recs[i]); i++)
        ;
    if (R->met)
        check_known_met(R);
    else
        c->failed++; /* out of memory: the file did not run */
    o->engine->close(db);
    labels_free(R);
    slt_result_free(&R->res);
    free(R->vals);
    free(R->met);
    free(R);
    slt_script_free(&s);
    return 0;
}

void slt_options_free(slt_options *o)
{
    free(o->reasons);
    o->reasons = NULL;
    o->nreasons = o->capreasons = 0;
}

static int cmp_reasons(const void *a, const void *b)
{
    const slt_reason *x = a, *y = b;
    return (y->count > x->count) - (y->count < x->count);
}

void slt_print_reasons(const slt_options *o, FILE *f)
{
    qsort(o->reasons, (size_t)o->nreasons, sizeof *o->reasons, cmp_reasons);
    for (int i = 0; i < o->nreasons; i++)
        fprintf(f, "  %7ld  %s\n", o->reasons[i].count, o->reasons[i].text);
}
