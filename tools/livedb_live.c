/*
 * livedb_live.c - the shell's live queries: `.live SELECT ...` opens one
 * (numbered 1, 2, ... in the order opened) and prints its columns and
 * initial result, `.live` lists them, `.unlive N` closes one, `.window N
 * OFFSET LIMIT` moves the window of an ORDER BY ... LIMIT query. All are
 * closed at exit (shell_live_close_all).
 *
 * The change callback formats each batch as it arrives (its rows are
 * borrowed for the call) into sh->live_out; shell_live_flush prints what
 * collected after every statement and dot command, so the batches of a
 * commit follow the statement's own output. One line per change, with
 * the query's id, the kind, the positions (ordered queries only) and the
 * rows, formatted as livedb_out.c formats a live query's rows:
 *
 *   [1] insert @0: 3|c
 *   [1] update @2 -> @0: 2|b -> 2|a
 *   [1] delete @1: 1|x
 *
 * A child live result (a LIVE (query) column) shows in its parent's rows
 * as live#7 and prints its own batches with the query's id and its own
 * (query 1, child 7), after its parent's, in the same format:
 *
 *   [1] insert @0: 1|ann|live#7
 *   [1.7] insert @0: 10|fix the build
 *
 * A row with N copies (a bag result, N != 1) is followed by " (xN)". In
 * json mode every line is a JSON object instead. A batch's changes print
 * by position (a delete before an insert at the same position), else by
 * key, so the output never depends on the engine's internal order. When a
 * query falls into its terminal error state, the next flush says so once.
 */
#include "livedb.h"
#include "livedb_shell.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct shell_live {
    shell *sh;
    int id;
    char *sql;        /* as typed, without a trailing ';' */
    ldb_live *q;
    bool moved;       /* .window moved it to offset, limit */
    int64_t offset, limit;
    bool error_shown; /* its terminal error was printed */
};

/* Where batches collect until the next flush. */
static FILE *live_stream(shell *sh)
{
    if (!sh->live_out)
        sh->live_out = open_memstream(&sh->live_text, &sh->live_len);
    if (!sh->live_out) {
        fputs("livedb: out of memory\n", stderr);
        exit(2);
    }
    return sh->live_out;
}

/* ---- printing order ------------------------------------------------------------ */

/* Type classes in livedb's order (docs/VALUES.md), numbers together. */
static int type_class(int type) { return type == LDB_REAL ? LDB_INTEGER : type; }

static int sign(double d) { return (d > 0) - (d < 0); }

static int bytes_cmp(const ldb_row *a, const ldb_row *b, int i)
{
    size_t la, lb;
    const char *pa = ldb_row_text(a, i, &la), *pb = ldb_row_text(b, i, &lb);
    size_t n = la < lb ? la : lb;
    int c = n ? memcmp(pa, pb, n) : 0;
    return c ? c : (la > lb) - (la < lb);
}

static int text_form_cmp(const ldb_row *a, const ldb_row *b, int i)
{
    char x[256], y[256];
    ldb_row_format(a, i, x, sizeof x);
    ldb_row_format(b, i, y, sizeof y);
    return strcmp(x, y);
}

/* A total order of column i's values, only to print changes stably. */
static int value_cmp(const ldb_row *a, const ldb_row *b, int i)
{
    int ta = ldb_row_type(a, i), tb = ldb_row_type(b, i);
    if (type_class(ta) != type_class(tb))
        return type_class(ta) < type_class(tb) ? -1 : 1;
    switch (type_class(ta)) {
    case LDB_NULL: return 0;
    case LDB_BOOLEAN: return sign((double)(ldb_row_int64(a, i) - ldb_row_int64(b, i)));
    case LDB_INTEGER:
        if (ta == LDB_INTEGER && tb == LDB_INTEGER) {
            int64_t x = ldb_row_int64(a, i), y = ldb_row_int64(b, i);
            return (x > y) - (x < y);
        }
        return sign(ldb_row_double(a, i) - ldb_row_double(b, i));
    case LDB_TEXT:
    case LDB_BLOB: return bytes_cmp(a, b, i);
    default: return text_form_cmp(a, b, i);
    }
}

static int row_cmp(const ldb_row *a, const ldb_row *b)
{
    int na = ldb_row_columns(a), nb = ldb_row_columns(b);
    for (int i = 0; i < na && i < nb; i++) {
        int c = value_cmp(a, b, i);
        if (c)
            return c;
    }
    return (na > nb) - (na < nb);
}

/* The position a change is printed at: before for a delete, else after
 * (-1 for unordered queries). */
static int64_t change_pos(const ldb_change *c)
{
    return c->kind == LDB_CHANGE_DELETE ? c->before_pos : c->after_pos;
}

static int change_cmp(const void *pa, const void *pb)
{
    const ldb_change *a = *(const ldb_change *const *)pa, *b = *(const ldb_change *const *)pb;
    int64_t x = change_pos(a), y = change_pos(b);
    if (x != y)
        return x < y ? -1 : 1;
    bool da = a->kind == LDB_CHANGE_DELETE, db = b->kind == LDB_CHANGE_DELETE;
    if (da != db)
        return da ? -1 : 1;
    return row_cmp(a->key, b->key);
}

/* ---- printing a batch ------------------------------------------------------------ */

static const char *kind_name(int kind)
{
    return kind == LDB_CHANGE_INSERT ? "insert" : kind == LDB_CHANGE_UPDATE ? "update" : "delete";
}

static void print_positions(FILE *f, const ldb_change *c)
{
    if (c->before && c->after && c->before_pos >= 0 && c->before_pos != c->after_pos)
        fprintf(f, " @%" PRId64 " -> @%" PRId64, c->before_pos, c->after_pos);
    else if (change_pos(c) >= 0)
        fprintf(f, " @%" PRId64, change_pos(c));
}

static void print_side(const shell *sh, FILE *f, ldb_live *q, const ldb_row *row, int64_t count)
{
    shell_format_row(sh, f, q, row);
    if (count != 1)
        fprintf(f, " (x%" PRId64 ")", count);
}

static void print_change_text(const shell_live *e, FILE *f, ldb_live *q, const ldb_change *c)
{
    if (ldb_live_id(q))
        fprintf(f, "[%d.%lld] %s", e->id, (long long)ldb_live_id(q), kind_name(c->kind));
    else
        fprintf(f, "[%d] %s", e->id, kind_name(c->kind));
    print_positions(f, c);
    fputs(": ", f);
    if (c->before)
        print_side(e->sh, f, q, c->before, c->before_count);
    if (c->before && c->after)
        fputs(" -> ", f);
    if (c->after)
        print_side(e->sh, f, q, c->after, c->after_count);
    fputc('\n', f);
}

/* ,"before_pos":P,"before_count":N,"before":{...} (side "before" or
 * "after"; the position when ordered, the count when not 1). */
static void json_side(const shell *sh, FILE *f, ldb_live *q, const char *side,
                      const ldb_row *row, int64_t pos, int64_t count)
{
    if (!row)
        return;
    if (pos >= 0)
        fprintf(f, ",\"%s_pos\":%" PRId64, side, pos);
    if (count != 1)
        fprintf(f, ",\"%s_count\":%" PRId64, side, count);
    fprintf(f, ",\"%s\":", side);
    shell_format_row(sh, f, q, row);
}

static void print_change_json(const shell_live *e, FILE *f, ldb_live *q, const ldb_change *c)
{
    fprintf(f, "{\"live\":%d", e->id);
    if (ldb_live_id(q))
        fprintf(f, ",\"child\":%lld", (long long)ldb_live_id(q));
    fprintf(f, ",\"change\":\"%s\"", kind_name(c->kind));
    json_side(e->sh, f, q, "before", c->before, c->before_pos, c->before_count);
    json_side(e->sh, f, q, "after", c->after, c->after_pos, c->after_count);
    fputs("}\n", f);
}

static void on_batch(void *ctx, ldb_live *q, const ldb_change *changes, size_t n);

/* The child live results a batch shows print their batches too (their
 * first one follows in the same commit). */
static void follow_children(shell_live *e, const ldb_change *changes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int c = 0; changes[i].after && c < ldb_row_columns(changes[i].after); c++)
            if (ldb_row_live(changes[i].after, c))
                ldb_live_set_callback(ldb_row_live(changes[i].after, c), on_batch, e);
}

/* The change callback (of a query and of its child live results): formats
 * the batch now, its rows are borrowed. */
static void on_batch(void *ctx, ldb_live *q, const ldb_change *changes, size_t n)
{
    shell_live *e = ctx;
    follow_children(e, changes, n);
    const ldb_change **order = shell_realloc(NULL, n * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = &changes[i];
    qsort(order, n, sizeof *order, change_cmp);
    FILE *f = live_stream(e->sh);
    for (size_t i = 0; i < n; i++) {
        if (e->sh->mode == MODE_JSON)
            print_change_json(e, f, q, order[i]);
        else
            print_change_text(e, f, q, order[i]);
    }
    free(order);
}

/* Says once that e fell into its terminal error state. */
static void note_error(shell_live *e)
{
    const char *msg = NULL;
    if (e->error_shown || ldb_live_error(e->q, &msg) == LDB_OK)
        return;
    e->error_shown = true;
    FILE *f = live_stream(e->sh);
    if (e->sh->mode == MODE_JSON) {
        fprintf(f, "{\"live\":%d,\"error\":", e->id);
        shell_format_text(e->sh, f, msg ? msg : "error");
        fputs("}\n", f);
    } else {
        fprintf(f, "[%d] error: %s\n", e->id, msg ? msg : "error");
    }
}

void shell_live_flush(shell *sh)
{
    for (size_t i = 0; i < sh->nlive; i++)
        note_error(sh->live[i]);
    if (!sh->live_out)
        return;
    fclose(sh->live_out);
    sh->live_out = NULL;
    fwrite(sh->live_text, 1, sh->live_len, stdout);
    free(sh->live_text);
    sh->live_text = NULL;
    sh->live_len = 0;
}

/* ---- opening, listing, closing --------------------------------------------------- */

/* Whether nothing but blanks, ';' and comments follows the statement. */
static bool nothing_after(shell *sh, const char *tail)
{
    ldb_stmt *next = NULL;
    int rc = tail ? ldb_prepare(sh->db, tail, -1, &next, NULL) : LDB_OK;
    ldb_finalize(next);
    return rc == LDB_OK && !next;
}

static shell_live *new_entry(shell *sh, const char *sql)
{
    shell_live *e = shell_realloc(NULL, sizeof *e);
    memset(e, 0, sizeof *e);
    e->sh = sh;
    e->id = sh->last_live_id + 1;
    size_t n = strlen(sql);
    while (n > 0 && (sql[n - 1] == ';' || sql[n - 1] == ' ' || sql[n - 1] == '\t'))
        n--;
    e->sql = shell_realloc(NULL, n + 1);
    memcpy(e->sql, sql, n);
    e->sql[n] = 0;
    return e;
}

static void free_entry(shell_live *e)
{
    ldb_live_close(e->q);
    free(e->sql);
    free(e);
}

static void add_entry(shell *sh, shell_live *e)
{
    if (sh->nlive == sh->live_cap) {
        sh->live_cap = sh->live_cap ? 2 * sh->live_cap : 4;
        sh->live = shell_realloc(sh->live, sh->live_cap * sizeof *sh->live);
    }
    sh->live[sh->nlive++] = e;
    sh->last_live_id = e->id;
}

/* Prints "live N: columns" and queues the initial result, which the
 * callback gets before ldb_live_open_stmt returns. */
static int open_live(shell *sh, const char *sql)
{
    ldb_stmt *st;
    const char *tail = NULL;
    if (ldb_prepare(sh->db, sql, -1, &st, &tail) != LDB_OK)
        return shell_report_error(sh, sql, sql, NULL, 0);
    if (!st || !nothing_after(sh, tail)) {
        ldb_finalize(st);
        fprintf(stderr, "Error: .live takes one SELECT\n");
        return 1;
    }
    shell_live *e = new_entry(sh, sql);
    int rc = ldb_live_open_stmt(st, on_batch, e, &e->q);
    ldb_finalize(st);
    if (rc != LDB_OK) {
        free_entry(e);
        return shell_report_error(sh, sql, sql, NULL, 0);
    }
    add_entry(sh, e);
    if (sh->mode == MODE_JSON)
        printf("{\"live\":%d,\"columns\":", e->id);
    else
        printf("live %d: ", e->id);
    shell_format_columns(sh, stdout, e->q);
    puts(sh->mode == MODE_JSON ? "}" : "");
    return 0;
}

/* One line per open query: [N] SQL -- rows (and moved window), or its
 * error. */
static void list_live(shell *sh)
{
    for (size_t i = 0; i < sh->nlive; i++) {
        const shell_live *e = sh->live[i];
        const char *msg = NULL;
        printf("[%d] %s -- ", e->id, e->sql);
        if (ldb_live_error(e->q, &msg) != LDB_OK) {
            printf("error: %s\n", msg ? msg : "error");
            continue;
        }
        int64_t rows = ldb_live_count(e->q);
        printf("%" PRId64 " row%s", rows, rows == 1 ? "" : "s");
        if (e->moved)
            printf(", window OFFSET %" PRId64 " LIMIT %" PRId64, e->offset, e->limit);
        putchar('\n');
    }
}

int shell_cmd_live(shell *sh, int argc, char **argv)
{
    if (argc == 1) {
        list_live(sh);
        return 0;
    }
    return open_live(sh, argv[1]);
}

static bool parse_int64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return false;
    *out = v;
    return true;
}

/* The index in sh->live of the query numbered arg, or -1 after an error. */
static long find_live(shell *sh, const char *arg)
{
    int64_t id;
    if (parse_int64(arg, &id))
        for (size_t i = 0; i < sh->nlive; i++)
            if (sh->live[i]->id == id)
                return (long)i;
    fprintf(stderr, "Error: no live query %s (.live lists them)\n", arg);
    return -1;
}

int shell_cmd_unlive(shell *sh, int argc, char **argv)
{
    long i = find_live(sh, argv[1]);
    if (i < 0)
        return 1;
    free_entry(sh->live[i]);
    memmove(sh->live + i, sh->live + i + 1, (sh->nlive - (size_t)i - 1) * sizeof *sh->live);
    sh->nlive--;
    return 0;
}

static int window_error(shell_live *e, int rc)
{
    const char *msg = NULL;
    if (rc == LDB_MISUSE)
        fprintf(stderr, "Error: cannot move the window of live query %d: it needs ORDER BY ... "
                        "LIMIT, outside a transaction\n", e->id);
    else if (ldb_live_error(e->q, &msg) != LDB_OK)
        fprintf(stderr, "Error: live query %d: %s\n", e->id, msg ? msg : ldb_errstr(rc));
    else
        fprintf(stderr, "Error: live query %d: %s\n", e->id, ldb_errstr(rc));
    return 1;
}

int shell_cmd_window(shell *sh, int argc, char **argv)
{
    int64_t offset, limit;
    long i = find_live(sh, argv[1]);
    if (i < 0)
        return 1;
    if (!parse_int64(argv[2], &offset) || offset < 0 || !parse_int64(argv[3], &limit)) {
        fprintf(stderr, "Error: .window takes N OFFSET LIMIT: OFFSET >= 0, LIMIT -1 for none\n");
        return 1;
    }
    shell_live *e = sh->live[i];
    int rc = ldb_live_set_window(e->q, offset, limit);
    if (rc != LDB_OK)
        return window_error(e, rc);
    e->moved = true;
    e->offset = offset;
    e->limit = limit < 0 ? -1 : limit;
    return 0;
}

void shell_live_close_all(shell *sh)
{
    shell_live_flush(sh);
    for (size_t i = 0; i < sh->nlive; i++)
        free_entry(sh->live[i]);
    free(sh->live);
    sh->live = NULL;
    sh->nlive = sh->live_cap = 0;
}
