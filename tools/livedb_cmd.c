/*
 * livedb_cmd.c - the shell's dot commands, one table entry each (the live
 * query commands .live, .unlive and .window are in livedb_live.c). A
 * command's words are split on spaces ('quoted' words keep theirs), except
 * for a command that takes the rest of the line as one argument (.live
 * SELECT ...). After every command the live queries' batches are printed
 * (shell_live_flush). .tables and .schema read
 * the engine's catalog, the livedb_schema table (type, name, tbl_name,
 * sql), so they show what the database holds, rolled-back DDL included
 * correctly.
 */
#include "livedb.h"
#include "livedb_shell.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 8

typedef struct dot_command {
    const char *name;
    const char *args;
    const char *help;
    int min_args, max_args;
    bool rest; /* the text after the name is one argument, unsplit */
    int (*run)(shell *sh, int argc, char **argv);
} dot_command;

static const dot_command commands[];

/* ---- commands ------------------------------------------------------------------- */

static int cmd_help(shell *sh, int argc, char **argv)
{
    for (const dot_command *c = commands; c->name; c++) {
        char usage[64];
        snprintf(usage, sizeof usage, ".%s %s", c->name, c->args);
        printf("%-24s %s\n", usage, c->help);
    }
    return 0;
}

static int cmd_mode(shell *sh, int argc, char **argv)
{
    static const char *const names[] = { "table", "csv", "json", "line", "list" };
    if (argc == 1) {
        printf("current output mode: %s\n", names[sh->mode]);
        return 0;
    }
    for (int i = 0; i < 5; i++) {
        if (strcmp(argv[1], names[i]) == 0) {
            sh->mode = (enum shell_mode)i;
            return 0;
        }
    }
    fprintf(stderr, "Error: unknown mode '%s' (table, csv, json, line or list)\n", argv[1]);
    return 1;
}

/* Runs a catalog query (with name bound to ?1 when not NULL) and prints
 * its first column, one line per row, followed by suffix. Sets *rows.
 * Returns 0, or 1 after printing the engine's error. */
static int print_catalog(shell *sh, const char *sql, const char *name, const char *suffix,
                         int *rows)
{
    ldb_stmt *st;
    *rows = 0;
    int rc = ldb_prepare(sh->db, sql, -1, &st, NULL);
    if (rc == LDB_OK && name)
        rc = ldb_bind_text(st, 1, name, -1);
    while (rc == LDB_OK && (rc = ldb_step(st)) == LDB_ROW) {
        size_t len;
        const char *text = ldb_row_text(ldb_stmt_row(st), 0, &len);
        printf("%.*s%s\n", text ? (int)len : 0, text ? text : "", suffix);
        ++*rows;
        rc = LDB_OK;
    }
    if (rc != LDB_DONE)
        fprintf(stderr, "Error: %s\n", ldb_errmsg(sh->db));
    ldb_finalize(st);
    return rc != LDB_DONE;
}

static int cmd_tables(shell *sh, int argc, char **argv)
{
    int rows;
    /* tables without SQL are a layer's own (a durable database's outbox) */
    return print_catalog(sh,
                         "SELECT name FROM livedb_schema WHERE type <> 'index' AND sql IS NOT "
                         "NULL ORDER BY name",
                         NULL, "", &rows);
}

/* Every CREATE statement, or those of NAME and of the indexes on it. */
static int cmd_schema(shell *sh, int argc, char **argv)
{
    int rows;
    if (argc == 1)
        return print_catalog(sh, "SELECT sql FROM livedb_schema WHERE sql IS NOT NULL", NULL,
                             ";", &rows);
    /* automatic indexes (of keys and UNIQUE) have no SQL of their own */
    if (print_catalog(sh,
                      "SELECT sql FROM livedb_schema WHERE sql IS NOT NULL AND "
                      "(lower(name) = lower(?1) OR lower(tbl_name) = lower(?1))",
                      argv[1], ";", &rows))
        return 1;
    if (rows == 0) {
        fprintf(stderr, "Error: no such table, index or view: %s\n", argv[1]);
        return 1;
    }
    return 0;
}

static int cmd_timer(shell *sh, int argc, char **argv)
{
    if (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0) {
        fprintf(stderr, "Error: .timer takes on or off\n");
        return 1;
    }
    sh->timer = strcmp(argv[1], "on") == 0;
    return 0;
}

static int cmd_read(shell *sh, int argc, char **argv) { return shell_run_file(sh, argv[1]) > 0; }

/* Closes the database (its live queries first) and opens FILE instead;
 * the old one stays open if FILE cannot be. */
static int cmd_open(shell *sh, int argc, char **argv)
{
    ldb *db;
    const char *path = argc > 1 ? argv[1] : NULL;
    if (ldb_open(path, &db) != LDB_OK) {
        fprintf(stderr, "Error: %s\n", ldb_errmsg(NULL));
        return 1;
    }
    shell_live_close_all(sh);
    ldb_close(sh->db);
    sh->db = db;
    return 0;
}

static int cmd_checkpoint(shell *sh, int argc, char **argv)
{
    if (ldb_checkpoint(sh->db) == LDB_OK)
        return 0;
    fprintf(stderr, "Error: %s\n", ldb_errmsg(sh->db));
    return 1;
}

static int cmd_quit(shell *sh, int argc, char **argv)
{
    sh->quit = true;
    return 0;
}

static const dot_command commands[] = {
    { "help", "", "show this list", 0, 0, false, cmd_help },
    { "mode", "[MODE]", "output mode: table, csv, json, line or list", 0, 1, false, cmd_mode },
    { "tables", "", "list tables and views", 0, 0, false, cmd_tables },
    { "schema", "[NAME]", "show CREATE statements (of NAME and its indexes)", 0, 1, false,
      cmd_schema },
    { "timer", "on|off", "show the time each statement takes", 1, 1, false, cmd_timer },
    { "read", "FILE", "run the SQL and dot commands in FILE", 1, 1, false, cmd_read },
    { "open", "[FILE]", "close this database and open durable database FILE (none: a new "
      "one in memory)", 0, 1, false, cmd_open },
    { "checkpoint", "", "write a checkpoint of a durable database now", 0, 0, false,
      cmd_checkpoint },
    { "live", "[SELECT ...]", "list live queries, or open one: changes print at each "
      "commit", 0, 1, true, shell_cmd_live },
    { "unlive", "N", "close live query N", 1, 1, false, shell_cmd_unlive },
    { "window", "N OFFSET LIMIT", "move live query N's ORDER BY ... LIMIT window "
      "(LIMIT -1: none)", 3, 3, false, shell_cmd_window },
    { "quit", "", "leave the shell", 0, 0, false, cmd_quit },
    { "exit", "", "leave the shell", 0, 0, false, cmd_quit },
    { NULL, NULL, NULL, 0, 0, false, NULL },
};

/* Splits line into words in place; 'quoted' and "quoted" words keep
 * their spaces. Returns the number of words. */
static int split_args(char *line, char **argv)
{
    int argc = 0;
    char *p = line;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || argc == MAX_ARGS)
            return argc;
        char q = *p == '\'' || *p == '"' ? *p++ : 0;
        argv[argc++] = p;
        while (*p && (q ? *p != q : !isspace((unsigned char)*p)))
            p++;
        if (*p)
            *p++ = 0;
    }
}

/* For a command taking the rest of the line: the name and the rest
 * (trimmed; no word when it is empty). Returns the number of words. */
static int split_rest(char *line, char **argv)
{
    char *p = line + strspn(line, " \t");
    argv[0] = p;
    p += strcspn(p, " \t");
    if (*p)
        *p++ = 0;
    p += strspn(p, " \t");
    char *end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1]))
        *--end = 0;
    argv[1] = p;
    return *p ? 2 : 1;
}

/* The command named by the n bytes at name, or NULL. */
static const dot_command *find_command(const char *name, size_t n)
{
    for (const dot_command *c = commands; c->name; c++)
        if (strlen(c->name) == n && strncmp(c->name, name, n) == 0)
            return c;
    return NULL;
}

/* Splits line into argv as its command wants; sets *cmd (NULL when
 * unknown). Returns the number of words. */
static int split_command(char *line, char **argv, const dot_command **cmd)
{
    const char *name = line + strspn(line, " \t");
    *cmd = find_command(name, strcspn(name, " \t"));
    if (*cmd && (*cmd)->rest)
        return split_rest(line, argv);
    int argc = split_args(line, argv);
    *cmd = argc ? find_command(argv[0], strlen(argv[0])) : NULL;
    return argc;
}

int shell_dot_command(shell *sh, const char *line)
{
    char *copy = strdup(line + 1), *argv[MAX_ARGS + 1];
    if (!copy) {
        fputs("livedb: out of memory\n", stderr);
        exit(2);
    }
    const dot_command *c;
    int argc = split_command(copy, argv, &c), rc = 1;
    fflush(stdout);
    if (!c)
        fprintf(stderr, "Error: unknown command '.%s' (.help lists them)\n", argc ? argv[0] : "");
    else if (argc - 1 < c->min_args || argc - 1 > c->max_args)
        fprintf(stderr, "Error: usage: .%s %s\n", c->name, c->args);
    else
        rc = c->run(sh, argc, argv);
    free(copy);
    shell_live_flush(sh);
    return rc;
}
