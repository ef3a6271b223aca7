/*
 * livedb_shell.h - what the shell's files share: the shell's state, the
 * output modes (livedb_out.c), the dot commands (livedb_cmd.c), and
 * running SQL (livedb.c).
 */
#ifndef LDB_TOOLS_LIVEDB_SHELL_H
#define LDB_TOOLS_LIVEDB_SHELL_H

#include "livedb.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum shell_mode { MODE_TABLE, MODE_CSV, MODE_JSON, MODE_LINE, MODE_LIST };

typedef struct shell {
    ldb *db;
    enum shell_mode mode;
    bool timer;
    bool interactive;
    bool quit;
    int depth; /* .read nesting */
} shell;

/* Runs a complete SQL text (one or more statements), printing results in
 * the current mode; errors are printed with a caret under the offending
 * column. where names the input ("<file>:<line>") or is NULL. Returns 0
 * or 1 on error. */
int shell_run_sql(shell *sh, const char *sql, const char *where, int first_line);
/* Runs a file of SQL and dot commands; returns the number of errors (it
 * stops at the first unless interactive). */
int shell_run_file(shell *sh, const char *path);

/* Prints the rows of a prepared statement; returns the last ldb_step
 * code (LDB_DONE on success). */
int shell_print_rows(shell *sh, ldb_stmt *st);

/* Runs a dot command line (".mode csv"); returns 0 or 1 on error. */
int shell_dot_command(shell *sh, const char *line);

#endif
