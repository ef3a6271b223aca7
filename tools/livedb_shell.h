/*
 * livedb_shell.h - what the shell's files share: the shell's state, the
 * output modes (livedb_out.c), the dot commands (livedb_cmd.c), live
 * queries (livedb_live.c), and running SQL (livedb.c).
 */
#ifndef LDB_TOOLS_LIVEDB_SHELL_H
#define LDB_TOOLS_LIVEDB_SHELL_H

#include "livedb.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum shell_mode { MODE_TABLE, MODE_CSV, MODE_JSON, MODE_LINE, MODE_LIST };

typedef struct shell_live shell_live; /* one open live query (livedb_live.c) */

typedef struct shell {
    ldb *db;
    enum shell_mode mode;
    bool timer;
    bool interactive;
    bool quit;
    int depth; /* .read nesting */
    shell_live **live; /* open live queries, by ascending id */
    size_t nlive, live_cap;
    int last_live_id;
    FILE *live_out;    /* batches not printed yet, or NULL: an open_memstream */
    char *live_text;   /* writing into live_text, live_len */
    size_t live_len;
} shell;

/* Runs a complete SQL text (one or more statements), printing results in
 * the current mode; errors are printed with a caret under the offending
 * column. where names the input ("<file>:<line>") or is NULL. Returns 0
 * or 1 on error. */
int shell_run_sql(shell *sh, const char *sql, const char *where, int first_line);
/* Prints the engine's last error for the statement starting at stmt in
 * text (text began at line first_line of where, which may be NULL), with
 * a caret under the offending column when the error has one. Returns 1. */
int shell_report_error(shell *sh, const char *text, const char *stmt, const char *where,
                       int first_line);
/* Runs a file of SQL and dot commands; returns the number of errors (it
 * stops at the first unless interactive). */
int shell_run_file(shell *sh, const char *path);

/* Prints the rows of a prepared statement; returns the last ldb_step
 * code (LDB_DONE on success). */
int shell_print_rows(shell *sh, ldb_stmt *st);
/* realloc that ends the process (exit 2) when memory runs out: the
 * shell has nothing to fall back on. n may be 0. */
void *shell_realloc(void *p, size_t n);

/* Prints the columns of live query q (json: an array of names; csv: CSV
 * fields; else names separated by '|'), or one of its rows (json: an
 * object; csv: CSV fields; else values separated by '|'), without a
 * newline. */
void shell_format_columns(const shell *sh, FILE *f, ldb_live *q);
void shell_format_row(const shell *sh, FILE *f, ldb_live *q, const ldb_row *row);
/* Prints s: as a JSON string in json mode, else as is. */
void shell_format_text(const shell *sh, FILE *f, const char *s);

/* Runs a dot command line (".mode csv"); returns 0 or 1 on error. */
int shell_dot_command(shell *sh, const char *line);

/* The live query commands: .live [SELECT ...] opens one or lists them,
 * .unlive N closes one, .window N OFFSET LIMIT moves a window. Return 0
 * or 1 on error. */
int shell_cmd_live(shell *sh, int argc, char **argv);
int shell_cmd_unlive(shell *sh, int argc, char **argv);
int shell_cmd_window(shell *sh, int argc, char **argv);
/* Prints the batches the live queries received since the last call, and
 * the errors that ended any of them; called after every statement and dot
 * command. */
void shell_live_flush(shell *sh);
/* Closes every live query (at exit). */
void shell_live_close_all(shell *sh);

#endif
