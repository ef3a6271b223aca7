/*
 * demo.c - livedb's main demo: a small issue tracker whose screens are
 * live queries. It opens four live queries (the newest open issues, open
 * issues per assignee, a join of issues with their users, and a team page:
 * each user with an ARRAY of open issue titles and a child live result of
 * the open issues themselves), applies a few writes, and prints every
 * change batch as it arrives: what changed, the key, the rows before and
 * after, and positions in ordered results. A child live result's batches
 * print under its number (live#N, as its parent row shows it).
 *
 * Its last part shows on-demand sources: a tickets table whose rows live
 * in a provider (examples/thread_provider.c) that answers on a worker
 * thread after a simulated latency. A live query with a LIVE child per
 * user asks for the tickets of the users it shows (one grouped request),
 * and an event loop polls the source queue's fd until the query is READY;
 * then a change made at the source arrives through the provider's feed.
 * Last, optimistic writes: one shows at once, goes "upstream" (the
 * mutation callback prints what a program would send), comes back through
 * the feed and is confirmed without a second batch; another is rejected
 * by the server and vanishes exactly.
 *
 * Its end is a durable database: closed and reopened, its rows and its
 * materialized view are there, and a live query follows them on.
 */
#include "livedb.h"
#include "thread_provider.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void print_row(const ldb_row *r)
{
    char buf[64];
    printf("(");
    for (int i = 0; i < ldb_row_columns(r); i++) {
        ldb_row_format(r, i, buf, sizeof buf);
        printf("%s%s", i ? ", " : "", buf);
    }
    printf(")");
}

/* Batches printed so far: the event loop waits for the feed's. */
static int batches_seen;

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    batches_seen++;
    if (ldb_live_id(q))
        printf("  [%s live#%lld] %zu change%s\n", (const char *)ctx, (long long)ldb_live_id(q),
               n, n == 1 ? "" : "s");
    else
        printf("  [%s] %zu change%s\n", (const char *)ctx, n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        static const char *kinds[] = { "", "insert", "update", "delete" };
        printf("    %-6s key ", kinds[c[i].kind]);
        print_row(c[i].key);
        if (c[i].before) {
            printf("  before ");
            print_row(c[i].before);
            if (c[i].before_pos >= 0)
                printf(" @%lld", (long long)c[i].before_pos);
        }
        if (c[i].after) {
            printf("  after ");
            print_row(c[i].after);
            if (c[i].after_pos >= 0)
                printf(" @%lld", (long long)c[i].after_pos);
        }
        printf("\n");
        /* a child live result this row shows: its batches print too (its
         * first comes later in this same commit) */
        for (int j = 0; c[i].after && j < ldb_row_columns(c[i].after); j++)
            if (ldb_row_live(c[i].after, j))
                ldb_live_set_callback(ldb_row_live(c[i].after, j), on_change, ctx);
    }
}

static void run(ldb *db, const char *sql)
{
    printf("\n> %s\n", sql);
    if (ldb_exec(db, sql, NULL, NULL) != LDB_OK) {
        fprintf(stderr, "error: %s\n", ldb_errmsg(db));
        exit(1);
    }
}

static ldb_live *open_live(ldb *db, const char *name, const char *sql)
{
    ldb_live *q;
    printf("\nlive %s: %s\n", name, sql);
    if (ldb_live_open(db, sql, on_change, (void *)name, &q) != LDB_OK) {
        fprintf(stderr, "error: %s\n", ldb_errmsg(db));
        exit(1);
    }
    return q;
}

/* ---- on-demand sources ---------------------------------------------------------- */

static int tickets_status = -1;

static void on_status(void *ctx, ldb_live *q, int status, const char *msg)
{
    static const char *names[] = { "READY", "LOADING", "ERROR" };
    (void)q;
    printf("  [%s] status %s%s%s\n", (const char *)ctx, names[status], msg ? ": " : "",
           msg ? msg : "");
    tickets_status = status;
}

static void on_request(void *ctx, const ldb_request *req)
{
    (void)ctx;
    printf("  provider: request #%llu WHERE %s", (unsigned long long)ldb_request_id(req),
           ldb_request_sql(req));
    for (int i = 0; i < ldb_request_param_count(req); i++) {
        char buf[32];
        ldb_value_format(ldb_request_param(req, i), buf, sizeof buf);
        printf("%s?%d=%s", i ? ", " : "  with ", i + 1, buf);
    }
    printf("\n");
}

/* The event loop of a program whose provider works on other threads:
 * wait for the source queue's fd, then apply what is queued, until done()
 * (or 5 s pass: the demo fails; it takes ~50 ms). */
static void event_loop(ldb *db, int (*done)(void))
{
    int fd = ldb_source_fd(db);
    time_t start = time(NULL);
    while (!done()) {
        if (time(NULL) - start > 5) {
            fprintf(stderr, "error: the provider did not answer in time\n");
            exit(1);
        }
        struct pollfd pfd = { fd, POLLIN, 0 };
        if (poll(&pfd, 1, 10) > 0)
            ldb_source_poll(db);
    }
}

static int tickets_ready(void) { return tickets_status == LDB_STATUS_READY; }

static int feed_batches_expected;
static int feed_arrived(void) { return batches_seen >= feed_batches_expected; }

/* ---- optimistic writes ------------------------------------------------------------- */

/* The mutation callback: what a program would send to its server. */
static void send_upstream(void *ctx, ldb_optimistic *o)
{
    (void)ctx;
    for (int i = 0; i < ldb_optimistic_count(o); i++) {
        static const char *kinds[] = { "?", "INSERT", "UPDATE", "DELETE" };
        char id[32], status[32];
        int k = ldb_optimistic_kind(o, i);
        ldb_value_format(ldb_optimistic_after(o, i, 0), id, sizeof id);
        ldb_value_format(ldb_optimistic_after(o, i, 3), status, sizeof status);
        printf("  upstream <- #%llu %s %s id=%s status=%s\n",
               (unsigned long long)ldb_optimistic_id(o), kinds[k], ldb_optimistic_table(o, i), id,
               status);
    }
}

static ldb_optimistic *write_optimistically(ldb *db, const char *sql)
{
    ldb_optimistic *o = NULL;
    printf("\noptimistic: %s\n", sql);
    if (ldb_optimistic_begin(db) != LDB_OK || ldb_exec(db, sql, NULL, NULL) != LDB_OK ||
        ldb_optimistic_commit(db, send_upstream, NULL, &o) != LDB_OK) {
        fprintf(stderr, "error: %s\n", ldb_errmsg(db));
        exit(1);
    }
    return o;
}

static void optimistic_writes(ldb *db, tp_provider *p)
{
    ldb_optimistic *o = write_optimistically(
        db, "UPDATE tickets SET status = 'closed' WHERE id = 1");
    printf("at the source: the server applies it; its feed brings the row back\n");
    tp_upsert(p, (tp_value[]){ TP_INT(1), TP_INT(1), TP_TEXT("Login fails"),
                               TP_TEXT("closed") });
    ldb_optimistic_confirm(o);
    int before = batches_seen;
    usleep(50 * 1000);
    ldb_source_poll(db);
    printf("  confirmed (%s): %d batches published\n",
           ldb_optimistic_state(o) == LDB_OPTIMISTIC_CONFIRMED ? "state CONFIRMED" : "pending",
           batches_seen - before);
    ldb_optimistic_free(o);

    o = write_optimistically(db, "UPDATE tickets SET status = 'wontfix' WHERE id = 6");
    printf("the server refuses it\n");
    ldb_optimistic_reject(o, "status wontfix needs a maintainer");
    printf("  state %s: %s\n",
           ldb_optimistic_state(o) == LDB_OPTIMISTIC_REJECTED ? "REJECTED" : "?",
           ldb_optimistic_error(o));
    ldb_optimistic_free(o);
}

static void on_demand_sources(ldb *db)
{
    printf("\n-- on-demand sources: tickets are served by a provider thread\n");
    run(db, "CREATE TABLE tickets(id INTEGER PRIMARY KEY, owner INTEGER, title TEXT, "
            "status TEXT)");
    static const char *const cols[] = { "id", "owner", "title", "status" };
    const tp_value rows[] = {
        TP_INT(1), TP_INT(1), TP_TEXT("Login fails"), TP_TEXT("open"),
        TP_INT(2), TP_INT(2), TP_TEXT("Export to CSV"), TP_TEXT("open"),
        TP_INT(3), TP_INT(3), TP_TEXT("Dark mode"), TP_TEXT("closed"),
        TP_INT(4), TP_INT(1), TP_TEXT("Slow search"), TP_TEXT("open"),
        TP_INT(5), TP_INT(9), TP_TEXT("Not ours"), TP_TEXT("open"),
        TP_INT(6), TP_INT(2), TP_TEXT("Broken link"), TP_TEXT("open"),
        TP_INT(7), TP_INT(3), TP_TEXT("Crash on exit"), TP_TEXT("open"),
    };
    tp_config cfg = { .ncols = 4, .columns = cols, .key_col = 0, .rows = rows, .nrows = 7,
                      .latency_min_ms = 5, .latency_max_ms = 20, .page_rows = 2,
                      .page_delay_ms = 5, .seed = 1, .on_request = on_request };
    tp_provider *p;
    if (tp_new(&cfg, &p) != LDB_OK || tp_attach(p, db, "tickets", LDB_SOURCE_ON_DEMAND, NULL)) {
        fprintf(stderr, "error: attaching the provider: %s\n", ldb_errmsg(db));
        exit(1);
    }
    ldb_live *q = open_live(db, "desk", "SELECT u.name, LIVE(SELECT t.id, t.title, t.status "
                                        "FROM tickets t WHERE t.owner = u.id ORDER BY t.id) "
                                        "AS tickets FROM users u ORDER BY u.name");
    ldb_live_set_status_callback(q, on_status, "desk");
    printf("  [desk] status %s (rows arrive as the provider's pages commit)\n",
           ldb_live_status(q, NULL) == LDB_STATUS_LOADING ? "LOADING" : "not LOADING");
    event_loop(db, tickets_ready);

    printf("\nat the source: ticket 2 closed (the provider's change feed)\n");
    feed_batches_expected = batches_seen + 1;
    tp_upsert(p, (tp_value[]){ TP_INT(2), TP_INT(2), TP_TEXT("Export to CSV"),
                               TP_TEXT("closed") });
    event_loop(db, feed_arrived);
    optimistic_writes(db, p);
    ldb_live_close(q);
}

/* A durable database: written, closed, reopened with its rows, index and
 * materialized view; a live query opened after the reopen hydrates from
 * the recovered tables and follows the next write. */
static void durable_restart(void)
{
    char dir[] = "/tmp/livedb-demo-XXXXXX", path[64];
    if (!mkdtemp(dir))
        return;
    snprintf(path, sizeof path, "%s/tracker.ldb", dir);
    printf("\n== a durable database: tracker.ldb (in a temporary directory)\n");
    ldb *db;
    if (ldb_open(path, &db) != LDB_OK) {
        printf("cannot open: %s\n", ldb_errmsg(NULL));
        return;
    }
    run(db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT)");
    run(db, "CREATE MATERIALIZED VIEW per_status AS SELECT status, count(*) AS n "
            "FROM issues GROUP BY status");
    run(db, "INSERT INTO issues VALUES (1, 'Crash on save', 'open'), (2, 'Slow start', "
            "'closed'), (3, 'Leak in cache', 'open')");
    ldb_close(db);
    printf("  closed; reopening\n");
    if (ldb_open(path, &db) != LDB_OK) {
        printf("cannot reopen: %s\n", ldb_errmsg(NULL));
        return;
    }
    ldb_live *q = open_live(db, "per_status", "SELECT status, n FROM per_status");
    run(db, "UPDATE issues SET status = 'closed' WHERE id = 3");
    ldb_live_close(q);
    ldb_close(db);
    char wal[80];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    ldb *db;
    if (ldb_open(NULL, &db) != LDB_OK)
        return 1;
    run(db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
    run(db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT, "
            "priority INTEGER, created INTEGER, assignee INTEGER)");
    run(db, "CREATE INDEX issues_created ON issues(created)");
    run(db, "INSERT INTO users VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Edsger')");
    run(db, "INSERT INTO issues VALUES "
            "(1, 'Crash on save', 'open', 3, 100, 1), (2, 'Slow start', 'open', 1, 110, 2),"
            "(3, 'Typo in help', 'closed', 0, 120, 3), (4, 'Leak in cache', 'open', 2, 130, 1),"
            "(5, 'Bad default', 'open', 1, 140, 3)");

    ldb_live *newest = open_live(db, "newest", "SELECT id, title FROM issues WHERE status = "
                                               "'open' ORDER BY created DESC LIMIT 3");
    ldb_live *load = open_live(db, "load", "SELECT assignee, count(*), max(priority) FROM "
                                           "issues WHERE status = 'open' GROUP BY assignee");
    ldb_live *board = open_live(db, "board", "SELECT i.title, u.name FROM issues i JOIN users u "
                                             "ON u.id = i.assignee WHERE i.priority >= 2");
    ldb_live *team = open_live(db, "team", "SELECT u.name, ARRAY(SELECT i.title FROM issues i "
                                           "WHERE i.assignee = u.id AND i.status = 'open' "
                                           "ORDER BY i.created) AS titles, LIVE(SELECT i.id, "
                                           "i.priority FROM issues i WHERE i.assignee = u.id AND "
                                           "i.status = 'open' ORDER BY i.created) AS open "
                                           "FROM users u ORDER BY u.name");

    run(db, "INSERT INTO issues VALUES (6, 'Wrong timezone', 'open', 2, 150, 2)");
    run(db, "UPDATE issues SET status = 'closed' WHERE id = 5");
    run(db, "UPDATE users SET name = 'Ada L.' WHERE id = 1");
    run(db, "BEGIN; UPDATE issues SET priority = 0 WHERE id = 4; "
            "DELETE FROM issues WHERE id = 6; ROLLBACK");
    printf("  (rolled back: nothing published)\n");
    run(db, "BEGIN; UPDATE issues SET priority = 3 WHERE id = 2; "
            "INSERT INTO issues VALUES (7, 'Docs', 'open', 0, 90, 3); COMMIT");
    run(db, "UPDATE issues SET title = 'Typo in the help' WHERE id = 3");
    printf("  (a closed issue's title: no query changes, nothing published)\n");

    printf("\nwindow of 'newest' moved to OFFSET 1 LIMIT 2\n");
    ldb_live_set_window(newest, 1, 2);

    ldb_live_close(newest);
    ldb_live_close(load);
    ldb_live_close(board);
    ldb_live_close(team);

    on_demand_sources(db);
    ldb_close(db);
    durable_restart();
    return 0;
}
