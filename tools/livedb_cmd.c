/*
 * livedb_cmd.c - the shell's dot commands, one table entry each (a later
 * command such as ".live" is one more entry), and the record of the schema
 * that .tables and .schema print.
 *
 * The public API has no catalog reader yet, so the shell keeps the
 * CREATE statements it ran itself: each statement that succeeded is parsed
 * (src/sql/parser.h) and CREATE TABLE/INDEX/VIEW add their text, DROP
 * removes it (with a table's indexes). Objects created by a transaction
 * that is then rolled back stay listed: a known limit until the engine
 * exposes its catalog.
 */
#include "livedb.h"
#include "livedb_shell.h"

#include "sql/parser.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ARGS 8

typedef struct dot_command {
    const char *name;
    const char *args;
    const char *help;
    int min_args, max_args;
    int (*run)(shell *sh, int argc, char **argv);
} dot_command;

static const dot_command commands[];

/* ---- schema record ------------------------------------------------------------ */

static char *copy_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) {
        fputs("livedb: out of memory\n", stderr);
        exit(2);
    }
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static int find_object(const shell *sh, const char *name)
{
    for (int i = 0; i < sh->nobjs; i++)
        if (strcasecmp(sh->objs[i].name, name) == 0)
            return i;
    return -1;
}

static void add_object(shell *sh, const ast_name *name, const ast_name *table, bool is_table,
                       const char *sql, size_t len)
{
    char *n = copy_n(name->str, name->len);
    if (find_object(sh, n) >= 0) { /* IF NOT EXISTS on an existing name */
        free(n);
        return;
    }
    if (sh->nobjs == sh->capobjs) {
        sh->capobjs = sh->capobjs ? sh->capobjs * 2 : 16;
        sh->objs = realloc(sh->objs, (size_t)sh->capobjs * sizeof *sh->objs);
        if (!sh->objs) {
            fputs("livedb: out of memory\n", stderr);
            exit(2);
        }
    }
    sh->objs[sh->nobjs++] = (shell_object){
        .name = n,
        .table = table ? copy_n(table->str, table->len) : NULL,
        .sql = copy_n(sql, len),
        .is_table = is_table,
    };
}

static void remove_object(shell *sh, int i)
{
    free(sh->objs[i].name);
    free(sh->objs[i].table);
    free(sh->objs[i].sql);
    memmove(sh->objs + i, sh->objs + i + 1, (size_t)(sh->nobjs - i - 1) * sizeof *sh->objs);
    sh->nobjs--;
}

/* DROP name: the object, and a table's indexes with it. */
static void drop_object(shell *sh, const ast_name *name)
{
    char *n = copy_n(name->str, name->len);
    for (int i = sh->nobjs - 1; i >= 0; i--)
        if (strcasecmp(sh->objs[i].name, n) == 0 ||
            (sh->objs[i].table && strcasecmp(sh->objs[i].table, n) == 0))
            remove_object(sh, i);
    free(n);
}

void shell_note_statement(shell *sh, const char *sql, size_t len)
{
    sql_ast *ast;
    sql_error err;
    if (sql_parse(sql, len, &ast, &err) != LDB_OK)
        return;
    const ast_stmt *s = ast->stmt;
    const char *text = sql + s->off;
    switch (s->kind) {
    case AST_STMT_CREATE_TABLE:
        add_object(sh, &s->u.create_table.name.name, NULL, true, text, s->len);
        break;
    case AST_STMT_CREATE_VIEW:
        add_object(sh, &s->u.create_view.name.name, NULL, true, text, s->len);
        break;
    case AST_STMT_CREATE_INDEX:
        add_object(sh, &s->u.create_index.name.name, &s->u.create_index.table, false, text,
                   s->len);
        break;
    case AST_STMT_DROP:
        drop_object(sh, &s->u.drop.name.name);
        break;
    default:
        break;
    }
    sql_ast_free(ast);
}

void shell_free_objects(shell *sh)
{
    while (sh->nobjs)
        remove_object(sh, sh->nobjs - 1);
    free(sh->objs);
    sh->objs = NULL;
    sh->capobjs = 0;
}

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

static int cmp_objects(const void *a, const void *b)
{
    return strcmp((*(const shell_object *const *)a)->name, (*(const shell_object *const *)b)->name);
}

static int cmd_tables(shell *sh, int argc, char **argv)
{
    const shell_object **list = malloc(((size_t)sh->nobjs + 1) * sizeof *list);
    int n = 0;
    if (!list)
        return 1;
    for (int i = 0; i < sh->nobjs; i++)
        if (sh->objs[i].is_table)
            list[n++] = &sh->objs[i];
    qsort(list, (size_t)n, sizeof *list, cmp_objects);
    for (int i = 0; i < n; i++)
        printf("%s\n", list[i]->name);
    free(list);
    return 0;
}

static int cmd_schema(shell *sh, int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : NULL;
    if (name && find_object(sh, name) < 0) {
        fprintf(stderr, "Error: no such table, index or view: %s\n", name);
        return 1;
    }
    for (int i = 0; i < sh->nobjs; i++) {
        const shell_object *o = &sh->objs[i];
        if (!name || strcasecmp(o->name, name) == 0 ||
            (o->table && strcasecmp(o->table, name) == 0))
            printf("%s;\n", o->sql);
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

static int cmd_quit(shell *sh, int argc, char **argv)
{
    sh->quit = true;
    return 0;
}

static const dot_command commands[] = {
    { "help", "", "show this list", 0, 0, cmd_help },
    { "mode", "[MODE]", "output mode: table, csv, json, line or list", 0, 1, cmd_mode },
    { "tables", "", "list tables and views", 0, 0, cmd_tables },
    { "schema", "[NAME]", "show CREATE statements (of NAME and its indexes)", 0, 1, cmd_schema },
    { "timer", "on|off", "show the time each statement takes", 1, 1, cmd_timer },
    { "read", "FILE", "run the SQL and dot commands in FILE", 1, 1, cmd_read },
    { "quit", "", "leave the shell", 0, 0, cmd_quit },
    { "exit", "", "leave the shell", 0, 0, cmd_quit },
    { NULL, NULL, NULL, 0, 0, NULL },
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

int shell_dot_command(shell *sh, const char *line)
{
    char *copy = copy_n(line + 1, strlen(line + 1)), *argv[MAX_ARGS + 1];
    int argc = split_args(copy, argv), rc = 1;
    const dot_command *c = commands;
    while (c->name && (argc == 0 || strcmp(c->name, argv[0]) != 0))
        c++;
    fflush(stdout);
    if (!c->name)
        fprintf(stderr, "Error: unknown command '.%s' (.help lists them)\n", argc ? argv[0] : "");
    else if (argc - 1 < c->min_args || argc - 1 > c->max_args)
        fprintf(stderr, "Error: usage: .%s %s\n", c->name, c->args);
    else
        rc = c->run(sh, argc, argv);
    free(copy);
    return rc;
}
