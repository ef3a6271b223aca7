/*
 * test_parser_corpus.c - the parser against SQL nobody here wrote: every
 * statement of SQLite's sqllogictest corpus in ../shared/corpus/ (skipped
 * with a note when that folder is absent).
 *
 * Records that apply to SQLite (no "skipif sqlite", no "onlyif" naming
 * another engine) and are expected to succeed ("statement ok", "query")
 * must parse; each parsed statement must also survive the printer:
 * print -> parse -> print is a fixed point, and the fully parenthesized
 * print of the reparsed tree equals that of the original tree (so the
 * printer drops no parentheses the tree needs). "statement error" records
 * and records for other engines are parsed too and only counted: some of
 * them are errors only for the binder, some are T-SQL.
 *
 * Prints a per-file summary and the parse speed.
 */
#include "test.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/parser.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#define CORPUS_DIR "../shared/corpus/sqllogictest"

/* Under sanitizers (about 6x slower) only every 8th statement takes the
 * round trip, unless LDB_TEST_SCALE asks for more; every statement is
 * still parsed. */
#if defined(__SANITIZE_ADDRESS__)
#define ROUND_TRIP_STRIDE 8
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ROUND_TRIP_STRIDE 8
#endif
#endif
#ifndef ROUND_TRIP_STRIDE
#define ROUND_TRIP_STRIDE 1
#endif

/* ---- file list ------------------------------------------------------------- */

typedef struct paths {
    char **items;
    size_t n, cap;
} paths;

static void paths_add(paths *ps, const char *path)
{
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 64;
        ps->items = realloc(ps->items, ps->cap * sizeof *ps->items);
        CHECK(ps->items != NULL);
    }
    ps->items[ps->n] = strdup(path);
    CHECK(ps->items[ps->n] != NULL);
    ps->n++;
}

static void find_tests(paths *ps, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        size_t n = strlen(de->d_name);
        if (S_ISDIR(st.st_mode))
            find_tests(ps, path);
        else if (n > 5 && strcmp(de->d_name + n - 5, ".test") == 0)
            paths_add(ps, path);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* ---- counters --------------------------------------------------------------- */

typedef struct counts {
    long statements;  /* parsed from records that must succeed */
    long failed;      /* of those, parse failures */
    long round_trips; /* statements checked by print -> parse -> print */
    long err_rejected, err_accepted; /* "statement error" records */
    long other_parsed, other_failed; /* records for other engines */
    long unsupported;                /* UNSUPPORTED nodes */
} counts;

static counts total;
static int reported_failures;

/* ---- one statement ------------------------------------------------------------ */

static char *print_stmt(const ast_stmt *st, unsigned flags)
{
    strbuf sb = STRBUF_INIT;
    ast_stmt_to_sql(&sb, st, flags);
    CHECK(sb_error(&sb) == 0);
    char *s = sb_take(&sb, NULL);
    CHECK(s != NULL);
    return s;
}

static void round_trip(const char *file, const sql_ast *ast, counts *c)
{
    char *canon = print_stmt(ast->stmt, 0);
    char *parens = print_stmt(ast->stmt, AST_SQL_PARENS);
    sql_ast *again;
    sql_error err;
    int rc = sql_parse(canon, strlen(canon), &again, &err);
    CHECKF(rc == LDB_OK, "%s: printed statement does not parse: %s\n  %s\n  "
                         "from: %s",
           file, err.msg, canon, ast->sql);
    char *canon2 = print_stmt(again->stmt, 0);
    char *parens2 = print_stmt(again->stmt, AST_SQL_PARENS);
    CHECKF(strcmp(canon, canon2) == 0, "%s: not a fixed point:\n  %s\n  %s",
           file, canon, canon2);
    CHECKF(strcmp(parens, parens2) == 0, "%s: tree changed:\n  %s\n  %s",
           file, parens, parens2);
    sql_ast_free(again);
    mem_free(canon);
    mem_free(canon2);
    mem_free(parens);
    mem_free(parens2);
    c->round_trips++;
}

static long round_trip_stride(void)
{
    long stride = ROUND_TRIP_STRIDE / test_scale();
    return stride > 1 ? stride : 1;
}

enum record_kind { REC_MUST_PARSE, REC_ERROR, REC_OTHER_ENGINE };

static void parse_record(const char *file, const char *sql, enum record_kind kind,
                         counts *c)
{
    sql_cursor cur;
    sql_cursor_init(&cur, sql, strlen(sql));
    for (;;) {
        sql_ast *ast;
        sql_error err;
        int rc = sql_parse_next(&cur, &ast, &err);
        if (rc != LDB_OK) {
            if (kind == REC_MUST_PARSE) {
                c->failed++;
                if (reported_failures++ < 20)
                    printf("#    %s: %s\n#      %s\n", file, err.msg, sql);
            }
            if (kind == REC_ERROR)
                c->err_rejected++;
            if (kind == REC_OTHER_ENGINE)
                c->other_failed++;
            return;
        }
        if (!ast)
            break;
        if (ast->stmt->kind == AST_STMT_UNSUPPORTED)
            c->unsupported++;
        if (kind == REC_MUST_PARSE) {
            if (c->statements++ % round_trip_stride() == 0)
                round_trip(file, ast, c);
        } else if (kind == REC_OTHER_ENGINE) {
            c->other_parsed++;
        }
        sql_ast_free(ast);
    }
    if (kind == REC_ERROR)
        c->err_accepted++;
}

/* ---- the sqllogictest format ---------------------------------------------------- */

/* Splits buf into lines in place (dropping '\r' and '#' comment lines). */
static char **split_lines(char *buf, size_t len, size_t *nlines)
{
    size_t cap = 1024, n = 0;
    char **lines = malloc(cap * sizeof *lines);
    CHECK(lines != NULL);
    char *p = buf, *end = buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        *stop = '\0';
        if (stop > p && stop[-1] == '\r')
            stop[-1] = '\0';
        if (p[0] != '#') {
            if (n == cap) {
                cap *= 2;
                lines = realloc(lines, cap * sizeof *lines);
                CHECK(lines != NULL);
            }
            lines[n++] = p;
        }
        p = stop + 1;
    }
    *nlines = n;
    return lines;
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return 0;
    return 1;
}

/* Applies a skipif/onlyif line; true when it excludes the record. */
static int excluded_by(const char *line)
{
    char word[16], db[32];
    if (sscanf(line, "%15s %31s", word, db) != 2)
        return 0;
    if (strcmp(word, "skipif") == 0)
        return strcmp(db, "sqlite") == 0;
    if (strcmp(word, "onlyif") == 0)
        return strcmp(db, "sqlite") != 0;
    return 0;
}

static int is_condition(const char *line)
{
    return strncmp(line, "skipif ", 7) == 0 || strncmp(line, "onlyif ", 7) == 0;
}

/* Runs the record in lines[from, to); returns 0 to stop the file (halt). */
static int run_record(const char *file, char **lines, size_t from, size_t to,
                      counts *c, strbuf *sql)
{
    int skip = 0;
    while (from < to && is_condition(lines[from]))
        skip |= excluded_by(lines[from++]);
    if (from == to)
        return 1;
    const char *head = lines[from];
    if (strncmp(head, "halt", 4) == 0)
        return skip;
    int is_query = strncmp(head, "query", 5) == 0;
    int is_error = strncmp(head, "statement error", 15) == 0;
    if (!is_query && strncmp(head, "statement", 9) != 0)
        return 1;
    sb_truncate(sql, 0);
    for (size_t i = from + 1; i < to && strcmp(lines[i], "----") != 0; i++) {
        sb_puts(sql, lines[i]);
        sb_putc(sql, '\n');
    }
    CHECK(sb_error(sql) == 0);
    enum record_kind kind = skip ? REC_OTHER_ENGINE
                            : is_error ? REC_ERROR
                                       : REC_MUST_PARSE;
    parse_record(file, sb_str(sql), kind, c);
    return 1;
}

static void run_file(const char *path, counts *c)
{
    size_t len, nlines;
    char *buf = read_file(path, &len);
    char **lines = split_lines(buf, len, &nlines);
    strbuf sql = STRBUF_INIT;
    const char *file = path + strlen(CORPUS_DIR) + 1;
    size_t i = 0;
    while (i < nlines) {
        while (i < nlines && blank(lines[i]))
            i++;
        size_t start = i;
        while (i < nlines && !blank(lines[i]))
            i++;
        if (start < i && !run_record(file, lines, start, i, c, &sql))
            break;
    }
    sb_free(&sql);
    free(lines);
    free(buf);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void corpus(void)
{
    DIR *d = opendir(CORPUS_DIR);
    if (!d) {
        printf("#    %s not found: corpus test skipped\n", CORPUS_DIR);
        return;
    }
    closedir(d);
    paths ps = { 0 };
    find_tests(&ps, CORPUS_DIR);
    qsort(ps.items, ps.n, sizeof *ps.items, cmp_str);
    int64_t live = mem_live();
    double t0 = now();
    for (size_t i = 0; i < ps.n; i++) {
        counts c = { 0 };
        run_file(ps.items[i], &c);
        printf("#    %-40s %6ld parsed, %ld failed; statement error: %ld "
               "rejected, %ld accepted; other engines: %ld parsed, %ld not\n",
               ps.items[i] + strlen(CORPUS_DIR) + 1, c.statements, c.failed,
               c.err_rejected, c.err_accepted, c.other_parsed, c.other_failed);
        total.statements += c.statements;
        total.failed += c.failed;
        total.round_trips += c.round_trips;
        total.err_rejected += c.err_rejected;
        total.err_accepted += c.err_accepted;
        total.other_parsed += c.other_parsed;
        total.other_failed += c.other_failed;
        total.unsupported += c.unsupported;
        free(ps.items[i]);
    }
    double secs = now() - t0;
    free(ps.items);
    printf("#    total: %ld statements parsed, %ld failed, %ld round trips, "
           "%ld unsupported statements; %.2f s (parse + 2 prints + reparse "
           "+ 2 prints each)\n",
           total.statements, total.failed, total.round_trips,
           total.unsupported, secs);
    CHECK(mem_live() == live);
    CHECK(total.statements > 0);
    CHECK_INT(total.failed, 0);
}

/* Parse speed alone, over a statement mix taken from the corpus style. */
static void speed(void)
{
    static const char *const stmts[] = {
        "SELECT pk, col0 FROM tab0 WHERE (col3 > 34 AND col0 < 58 OR col4 "
        "IN (3,5,7) AND col1 BETWEEN 2.5 AND 9.5) ORDER BY 1 DESC",
        "SELECT DISTINCT - 32 * + col2 + - CAST ( NULL AS INTEGER ) AS col1 "
        "FROM tab1 AS cor0 CROSS JOIN tab2 WHERE NOT NULL IS NOT NULL",
        "INSERT INTO tab0 VALUES(0,6,10.76,'ukzkf',3,62.36,'hqyxa')",
        "SELECT CASE WHEN a<b-3 THEN 111 WHEN a<=b THEN 222 ELSE 333 END, "
        "(SELECT count(*) FROM t1 AS x WHERE x.b<t1.b) FROM t1 WHERE "
        "EXISTS(SELECT 1 FROM t1 AS x WHERE x.b<t1.b)",
        "CREATE TABLE tab0(pk INTEGER PRIMARY KEY, col0 INTEGER, col1 FLOAT, "
        "col2 TEXT, col3 INTEGER, col4 FLOAT, col5 TEXT)",
    };
    enum { NSTMT = sizeof stmts / sizeof stmts[0] };
    size_t lens[NSTMT];
    for (int i = 0; i < NSTMT; i++)
        lens[i] = strlen(stmts[i]);
    long n = 20000L * test_scale();
    double t0 = now();
    for (long i = 0; i < n; i++) {
        sql_ast *ast;
        sql_error err;
        CHECK(sql_parse(stmts[i % NSTMT], lens[i % NSTMT], &ast, &err) ==
              LDB_OK);
        sql_ast_free(ast);
    }
    double secs = now() - t0;
    printf("#    parse speed: %.0f statements/s (%ld statements of ~120 "
           "bytes)\n",
           (double)n / secs, n);
}

TEST_MAIN(T(corpus), T(speed))
