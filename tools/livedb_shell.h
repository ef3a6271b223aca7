/*
 * livedb_shell.h - what the shell's files share: the shell's state, the
 * output modes (livedb_out.c), the dot commands and the record of the
 * schema (livedb_cmd.c), and running SQL (livedb.c).
 */
#ifndef LDB_TOOLS_LIVEDB_SHELL_H
#define LDB_TOOLS_LIVEDB_SHELL_H

#include "livedb.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum shell_mode { MODE_TABLE, MODE_CSV, MODE_JSON, MODE_LINE, MODE_LIST };

/* A schema object created by a statement the shell ran (for .schema and
 * .tables; the public API has no catalog reader). */
typedef struct shell_object {
    char *name;  /* table, index or view */
    char *table; /* for an index: its table; else NULL */
    char *sql;   /* the CREATE statement as written */
    bool is_table;
} shell_object;

typedef struct shell {
    ldb *db;
    enum shell_mode mode;
    bool timer;
    bool interactive;
    bool quit;
    int depth; /* .read nesting */
    shell_object *objs;
    int nobjs, capobjs;
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
/* Records the schema effect of a statement that succeeded. */
void shell_note_statement(shell *sh, const char *sql, size_t len);
void shell_free_objects(shell *sh);

#endif
