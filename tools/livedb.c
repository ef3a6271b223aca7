/*
 * livedb.c - build/livedb, the shell: main, reading input, running SQL.
 *
 *   livedb [-c SQL]... [FILE]
 *
 * Runs FILE (a script of SQL and dot commands; livedb keeps its data in
 * memory, so there is no database file), then each -c text in order, then
 * standard input: with line editing (libedit) when it is a terminal, else
 * as a script. Built without libedit (the Makefile finds no
 * editline/readline.h), the terminal gets a plain prompt and no history. A statement may span lines: input collects until it ends a
 * statement with ';' (ldb_complete, which knows strings, comments and
 * trigger bodies). Lines starting with '.' between statements are dot
 * commands (livedb_cmd.c).
 *
 * Live queries (.live, livedb_live.c) print the batches each statement's
 * commit delivers right after the statement's own output.
 *
 * Errors print the message and, when the engine gives a position
 * (ldb_error_offset), the offending line with a caret under the column.
 * Non-interactive runs stop at the first error and exit with status 1;
 * interactive ones report it and go on.
 */
#include "livedb.h"
#include "livedb_shell.h"

#ifdef LDB_SHELL_LIBEDIT
#include <editline/readline.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct input {
    FILE *f;         /* NULL: the terminal, through readline */
    const char *name; /* for error locations; NULL on the terminal */
    int line;
} input;

typedef struct text_buf {
    char *s;
    size_t len, cap;
} text_buf;

static void buf_append(text_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->s = realloc(b->s, cap);
        if (!b->s) {
            fputs("livedb: out of memory\n", stderr);
            exit(2);
        }
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- errors ------------------------------------------------------------------- */

/* Prints the line of text holding byte pos, and a caret under it; tabs
 * are copied so that the caret lines up. */
static void print_caret(const char *text, size_t pos)
{
    size_t start = pos, end = pos;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    while (text[end] && text[end] != '\n')
        end++;
    fprintf(stderr, "  %.*s\n  ", (int)(end - start), text + start);
    for (size_t i = start; i < pos; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((c & 0xC0) != 0x80)
            fputc(c == '\t' ? '\t' : ' ', stderr);
    }
    fputs("^\n", stderr);
}

int shell_report_error(shell *sh, const char *text, const char *stmt, const char *where,
                       int first_line)
{
    int off = ldb_error_offset(sh->db);
    size_t pos = (size_t)(stmt - text) + (size_t)(off > 0 ? off : 0);
    if (off < 0 || pos > strlen(text))
        pos = (size_t)(stmt - text);
    fflush(stdout); /* results before the error, in order */
    int line = first_line;
    for (size_t i = 0; i < pos; i++)
        line += text[i] == '\n';
    if (where)
        fprintf(stderr, "Error: %s:%d: %s\n", where, line, ldb_errmsg(sh->db));
    else
        fprintf(stderr, "Error: %s\n", ldb_errmsg(sh->db));
    if (off >= 0 && (size_t)(stmt - text) + (size_t)off <= strlen(text))
        print_caret(text, pos);
    return 1;
}

int shell_run_sql(shell *sh, const char *sql, const char *where, int first_line)
{
    const char *p = sql;
    while (*p) {
        ldb_stmt *st;
        const char *tail = NULL;
        double t0 = now_ms();
        if (ldb_prepare(sh->db, p, -1, &st, &tail) != LDB_OK)
            return shell_report_error(sh, sql, p, where, first_line);
        if (!st)
            return 0;
        int rc = shell_print_rows(sh, st);
        shell_live_flush(sh); /* the batches of its commit, after its rows */
        if (rc != LDB_DONE) {
            shell_report_error(sh, sql, p, where, first_line);
            ldb_finalize(st);
            return 1;
        }
        ldb_finalize(st);
        if (sh->timer)
            printf("Run Time: %.3f ms\n", now_ms() - t0);
        if (!tail || tail <= p)
            break;
        p = tail;
    }
    return 0;
}

/* ---- input ------------------------------------------------------------------------ */

#ifndef LDB_SHELL_LIBEDIT
static void add_history(const char *line) { (void)line; }
#endif

/* The next line without its newline (the caller frees it), or NULL. */
static char *next_line(input *in, bool continued)
{
    const char *prompt = continued ? "   ...> " : "livedb> ";
#ifdef LDB_SHELL_LIBEDIT
    if (!in->f)
        return readline(prompt);
#endif
    FILE *f = in->f;
    if (!f) {
        fputs(prompt, stdout);
        fflush(stdout);
        f = stdin;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    if (n < 0) {
        free(line);
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n')
        line[--n] = 0;
    if (n > 0 && line[n - 1] == '\r')
        line[--n] = 0;
    return line;
}

static bool blank(const char *s)
{
    return s[strspn(s, " \t\r\n\f\v")] == 0;
}

/* Runs collected SQL; returns 1 on error. */
static int flush_sql(shell *sh, input *in, text_buf *sql, int first_line)
{
    if (!in->f && sql->len > 1) {
        sql->s[sql->len - 1] = 0; /* history without the last newline */
        add_history(sql->s);
        sql->s[sql->len - 1] = '\n';
    }
    int err = shell_run_sql(sh, sql->s, in->name, first_line);
    sql->len = 0;
    sql->s[0] = 0;
    return err;
}

/* Reads and runs in to its end (or a .quit); returns the number of
 * errors. Stops at the first unless the shell is interactive. */
static int run_input(shell *sh, input *in)
{
    text_buf sql = { NULL, 0, 0 };
    int errors = 0, first_line = 0;
    char *line;
    while (!sh->quit && (!errors || sh->interactive) &&
           (line = next_line(in, sql.len > 0)) != NULL) {
        in->line++;
        const char *t = line + strspn(line, " \t");
        if (sql.len == 0 && *t == '.') {
            if (!in->f)
                add_history(line);
            errors += shell_dot_command(sh, t);
        } else if (sql.len > 0 || !blank(line)) {
            if (sql.len == 0)
                first_line = in->line;
            buf_append(&sql, line, strlen(line));
            buf_append(&sql, "\n", 1);
            if (ldb_complete(sql.s))
                errors += flush_sql(sh, in, &sql, first_line);
        }
        free(line);
    }
    if (sql.len > 0 && !sh->quit && (!errors || sh->interactive))
        errors += flush_sql(sh, in, &sql, first_line);
    free(sql.s);
    return errors;
}

int shell_run_file(shell *sh, const char *path)
{
    if (sh->depth >= 16) {
        fprintf(stderr, "Error: .read nested too deeply at %s\n", path);
        return 1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "Error: cannot open %s\n", path);
        return 1;
    }
    input in = { f, path, 0 };
    sh->depth++;
    int errors = run_input(sh, &in);
    sh->depth--;
    fclose(f);
    return errors;
}

/* A -c text: SQL or dot commands, line by line like a script. */
static int run_text(shell *sh, const char *text)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    if (!f)
        return 1;
    input in = { f, "-c", 0 };
    int errors = run_input(sh, &in);
    fclose(f);
    return errors;
}

static int usage(FILE *f)
{
    fputs("usage: livedb [-f SCRIPT]... [-c SQL]... [DATABASE]\n"
          "  DATABASE   a durable database file (made if missing); without it,\n"
          "             a database in memory\n"
          "  -f SCRIPT  run a file of SQL and dot commands first; may be repeated\n"
          "  -c SQL     run SQL (or a dot command), then exit; may be repeated\n"
          "With neither -c nor a terminal, standard input is run as a script.\n"
          "Exits with status 1 after an error (except interactively).\n",
          f);
    return f == stderr ? 2 : 0;
}

/* Reads the arguments: the -c texts into cmds, the -f files into files,
 * DATABASE into *path. Returns -1 to go on, or the exit status (after
 * --help or a usage error). */
static int parse_args(int argc, char **argv, const char **cmds, int *ncmds, const char **files,
                      int *nfiles, const char **path)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            cmds[(*ncmds)++] = argv[++i];
        else if (strcmp(argv[i], "-f") == 0 && i + 1 < argc)
            files[(*nfiles)++] = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return usage(stdout);
        else if (argv[i][0] == '-' || *path)
            return usage(stderr);
        else
            *path = argv[i];
    }
    return -1;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    const char **cmds = calloc((size_t)argc, sizeof *cmds);
    const char **files = calloc((size_t)argc, sizeof *files);
    int ncmds = 0, nfiles = 0;
    int status = cmds && files ? parse_args(argc, argv, cmds, &ncmds, files, &nfiles, &path) : 2;
    shell sh = { .mode = MODE_TABLE };
    if (status < 0 && ldb_open(path, &sh.db) != LDB_OK) {
        fprintf(stderr, "livedb: %s\n", ldb_errmsg(NULL));
        status = 1;
    }
    if (status >= 0) {
        free(cmds);
        free(files);
        return status;
    }
    sh.interactive = ncmds == 0 && isatty(0);
    int errors = 0;
    for (int i = 0; i < nfiles && !sh.quit && (!errors || sh.interactive); i++)
        errors += shell_run_file(&sh, files[i]);
    for (int i = 0; i < ncmds && !sh.quit && (!errors || sh.interactive); i++)
        errors += run_text(&sh, cmds[i]);
    if (ncmds == 0 && !sh.quit && (!errors || sh.interactive)) {
        if (sh.interactive)
            printf("livedb %s; .help for help, .quit to leave\n", LDB_VERSION);
        input in = { sh.interactive ? NULL : stdin, sh.interactive ? NULL : "stdin", 0 };
        errors += run_input(&sh, &in);
    }
    shell_live_close_all(&sh);
    ldb_close(sh.db);
    free(cmds);
    free(files);
    return errors && !sh.interactive ? 1 : 0;
}
