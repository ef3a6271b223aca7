/*
 * demo_pg.c - livedb over PostgreSQL (include/livedb_pg.h): make demo-pg
 * starts a throwaway cluster (tools/pg_cluster.sh) and runs this with
 * LDB_PG_DIR naming it ($LDB_PG_DIR/conninfo holds the connection string).
 *
 * It fills an issue tracker in PostgreSQL (1000 users, 100k issues, 300k
 * comments, with generate_series), attaches the three tables ON_DEMAND and
 * opens two live queries: one user's open issues, each with its comments
 * as a LIVE child (an include), and the newest open issues (an ORDER BY
 * ... LIMIT window). It prints readiness, what livedb asked PostgreSQL
 * for, and the first results; then every change batch as it arrives,
 * while another PostgreSQL connection commits, an optimistic write shows
 * at once and is confirmed through the stream, and another is rejected
 * by a CHECK constraint of the server. Every wait is bounded: the demo
 * fails rather than hangs.
 */
#include "livedb.h"
#include "livedb_pg.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define USER 42
#define WAIT_MS 10000

static const char mine_sql[] =
    "SELECT i.id, i.title, i.priority,"
    " LIVE (SELECT c.id, u.name AS author, c.body FROM comments c"
    " JOIN users u ON u.id = c.author WHERE c.issue_id = i.id ORDER BY c.id) AS comments"
    " FROM issues i WHERE i.assignee = 42 AND i.status = 'open'"
    " ORDER BY i.priority DESC, i.id";
static const char newest_sql[] =
    "SELECT id, title, priority, created FROM issues WHERE status = 'open'"
    " ORDER BY created DESC LIMIT 5";

static const char schema_sql[] =
    "CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL);"
    "CREATE TABLE issues (id int PRIMARY KEY, title text NOT NULL,"
    " status text NOT NULL CHECK (status IN ('open', 'closed')),"
    " priority int NOT NULL CHECK (priority BETWEEN 0 AND 9),"
    " assignee int NOT NULL REFERENCES users, created timestamptz NOT NULL);"
    "CREATE TABLE comments (id int PRIMARY KEY, issue_id int NOT NULL REFERENCES issues,"
    " author int NOT NULL REFERENCES users, body text NOT NULL);"
    "INSERT INTO users SELECT i, 'user' || i FROM generate_series(1, 1000) i;"
    /* user 1 + i % 1000 has issues i, i + 1000, ...: priorities vary among them */
    /* created: a permutation of 100k minutes (48271 is prime to 100000) */
    "INSERT INTO issues SELECT i, 'Issue ' || i,"
    " CASE WHEN i % 3 = 0 THEN 'closed' ELSE 'open' END, i / 1000 % 10, 1 + i % 1000,"
    " timestamptz '2026-01-01 00:00:00+00' + (i::bigint * 48271 % 100000) * interval '1 minute'"
    " FROM generate_series(1, 100000) i;"
    "INSERT INTO comments SELECT i, 1 + i % 100000, 1 + (i * 7 + i / 100000 * 331) % 1000, 'comment ' || i"
    " FROM generate_series(1, 300000) i;"
    "CREATE INDEX ON issues (assignee); CREATE INDEX ON issues (created);"
    "CREATE INDEX ON comments (issue_id);"
    "ANALYZE users; ANALYZE issues; ANALYZE comments";

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "demo_pg: %s: %s\n", what, msg);
    exit(1);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- printing ----------------------------------------------------------------------- */

/* When the last thing the batches answer happened (a commit, an open). */
static double mark_ms;
static int quiet = 1;   /* during the first load: the results print once READY */
static int batches;

static void print_row(const ldb_row *r)
{
    char buf[48];
    printf("(");
    for (int i = 0; i < ldb_row_columns(r); i++) {
        ldb_row_format(r, i, buf, sizeof buf);
        printf("%s%s", i ? ", " : "", buf);
    }
    printf(")");
}

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n);

/* Every child live result a row shows prints its batches too (its first
 * comes later in the same commit). */
static void follow_children(const ldb_row *r, const char *label)
{
    for (int j = 0; r && j < ldb_row_columns(r); j++)
        if (ldb_row_live(r, j))
            ldb_live_set_callback(ldb_row_live(r, j), on_change, (void *)label);
}

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    static const char *kinds[] = { "", "insert", "update", "delete" };
    batches++;
    for (size_t i = 0; i < n; i++)
        follow_children(c[i].after, ctx);
    if (quiet)
        return;
    if (ldb_live_id(q))
        printf("  [%s live#%lld]", (const char *)ctx, (long long)ldb_live_id(q));
    else
        printf("  [%s]", (const char *)ctx);
    printf(" %zu change%s, %.1f ms after\n", n, n == 1 ? "" : "s", now_ms() - mark_ms);
    for (size_t i = 0; i < n; i++) {
        printf("    %-6s ", kinds[c[i].kind]);
        print_row(c[i].after ? c[i].after : c[i].before);
        if (c[i].before_pos >= 0 || c[i].after_pos >= 0)
            printf("  @%lld -> @%lld", (long long)c[i].before_pos, (long long)c[i].after_pos);
        printf("\n");
    }
}

static void on_status(void *ctx, ldb_live *q, int status, const char *msg)
{
    static const char *names[] = { "READY", "LOADING", "ERROR" };
    printf("  [%s] %s after %.0f ms%s%s (%lld rows)\n", (const char *)ctx, names[status],
           now_ms() - mark_ms, msg ? ": " : "", msg ? msg : "", (long long)ldb_live_count(q));
}

static void on_resolved(void *ctx, ldb_optimistic *o, int state)
{
    printf("  optimistic #%llu %s, %.1f ms after commit%s%s\n",
           (unsigned long long)ldb_optimistic_id(o),
           state == LDB_OPTIMISTIC_CONFIRMED ? "CONFIRMED through the stream" : "REJECTED",
           now_ms() - mark_ms, state == LDB_OPTIMISTIC_REJECTED ? ": " : "",
           state == LDB_OPTIMISTIC_REJECTED ? ldb_optimistic_error(o) : "");
}

static int print_child_row(void *ctx, const ldb_row *r)
{
    printf("        ");
    print_row(r);
    printf("\n");
    return 0;
}

static int print_issue(void *ctx, const ldb_row *r)
{
    int *left = ctx;
    if ((*left)-- <= 0)
        return 0;
    printf("    ");
    print_row(r);
    printf("\n");
    for (int j = 0; j < ldb_row_columns(r); j++)
        if (ldb_row_live(r, j))
            ldb_live_read(ldb_row_live(r, j), print_child_row, NULL);
    return 0;
}

static void print_result(const char *label, ldb_live *q, int rows)
{
    printf("\n%s: %lld rows, the first %d:\n", label, (long long)ldb_live_count(q), rows);
    ldb_live_read(q, print_issue, &rows);
}

/* The requests livedb made, as PostgreSQL queries (long lines cut). */
static void print_explain(ldb_pg *pg)
{
    char *text;
    if (ldb_pg_explain(pg, &text) != LDB_OK)
        die("ldb_pg_explain", ldb_pg_errmsg(pg));
    printf("\nwhat livedb asked PostgreSQL for (ldb_pg_explain):\n");
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        printf("  %.150s%s\n", line, strlen(line) > 150 ? " ..." : "");
    free(text);
}

/* ---- PostgreSQL and waiting ----------------------------------------------------- */

static char *read_conninfo(void)
{
    static char buf[1024];
    const char *dir = getenv("LDB_PG_DIR");
    if (!dir)
        die("LDB_PG_DIR", "not set (run make demo-pg)");
    char path[512];
    snprintf(path, sizeof path, "%s/conninfo", dir);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, sizeof buf, f))
        die(path, "cannot read");
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    return buf;
}

static void pg_run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        die(sql, PQerrorMessage(c));
    PQclear(r);
}

static int is_ready(ldb_live *q)
{
    return ldb_live_status(q, NULL) == LDB_STATUS_READY;
}

static void wait_ready(ldb_pg *pg, ldb_live *a, ldb_live *b)
{
    double deadline = now_ms() + 2 * WAIT_MS;
    while (!is_ready(a) || !is_ready(b)) {
        if (now_ms() > deadline)
            die("live queries", "not READY after 20 s");
        ldb_pg_wait(pg, 100);
    }
}

/* Waits for the first batch, then until the stream has applied all the
 * server committed (ldb_pg_sync), printing batches as they come. */
static void settle(ldb_pg *pg)
{
    int seen = batches;
    double deadline = now_ms() + WAIT_MS;
    while (batches == seen && now_ms() < deadline)
        ldb_pg_wait(pg, 100);
    if (batches == seen)
        die("stream", "no change arrived in 10 s");
    if (ldb_pg_sync(pg, WAIT_MS) != LDB_OK)
        die("ldb_pg_sync", ldb_pg_errmsg(pg));
}

static void other_commits(ldb_pg *pg, PGconn *other, const char *sql)
{
    printf("\nanother connection commits: %s\n", sql);
    pg_run(other, sql);
    mark_ms = now_ms();
    settle(pg);
}

/* ---- optimistic writes ------------------------------------------------------------ */

static void optimistic(ldb *db, ldb_pg *pg, const char *sql)
{
    ldb_optimistic *o;
    printf("\noptimistic write: %s\n", sql);
    mark_ms = now_ms();
    if (ldb_optimistic_begin(db) != LDB_OK || ldb_exec(db, sql, NULL, NULL) != LDB_OK ||
        ldb_optimistic_commit(db, ldb_pg_send, pg, &o) != LDB_OK)
        die(sql, ldb_errmsg(db));
    printf("  (ldb_optimistic_commit returned after %.2f ms; the batches above are the write"
           " shown at once, pending)\n", now_ms() - mark_ms);
    double deadline = now_ms() + WAIT_MS;
    while (ldb_optimistic_state(o) == LDB_OPTIMISTIC_PENDING && now_ms() < deadline)
        ldb_pg_wait(pg, 100);
    if (ldb_optimistic_state(o) == LDB_OPTIMISTIC_PENDING)
        die(sql, "still pending after 10 s");
    ldb_optimistic_free(o);
}

static ldb_live *open_live(ldb *db, const char *label, const char *sql)
{
    ldb_live *q;
    printf("\nlive %s: %s\n", label, sql);
    if (ldb_live_open(db, sql, on_change, (void *)label, &q) != LDB_OK)
        die(sql, ldb_errmsg(db));
    ldb_live_set_status_callback(q, on_status, (void *)label);
    return q;
}

static void print_stats(ldb_pg *pg, ldb_source *issues)
{
    ldb_pg_stats st;
    ldb_source_stats ss;
    ldb_pg_stats_get(pg, &st);
    ldb_source_stats_get(issues, &ss);
    printf("\nlivedb holds %llu of 100000 issues; adapter: %llu SELECTs (%llu rows),"
           " %llu stream transactions (%llu changes applied, %llu outside the demand"
           " ignored), %llu optimistic writes (%llu confirmed, %llu rejected)\n",
           (unsigned long long)ss.rows, (unsigned long long)st.loads,
           (unsigned long long)st.rows_loaded, (unsigned long long)st.txns,
           (unsigned long long)st.changes, (unsigned long long)st.ignored,
           (unsigned long long)st.writes, (unsigned long long)st.confirmed,
           (unsigned long long)st.rejected);
}

static PGconn *fill(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK)
        die("connect", PQerrorMessage(c));
    double t0 = now_ms();
    pg_run(c, schema_sql);
    printf("PostgreSQL %d: 1000 users, 100000 issues, 300000 comments filled in %.1f s\n",
           PQserverVersion(c) / 10000, (now_ms() - t0) / 1e3);
    return c;
}

static ldb_pg *attach_all(ldb *db, const char *conninfo, ldb_source **issues)
{
    ldb_pg_config cfg = { .conninfo = conninfo };
    ldb_pg *pg;
    ldb_source *s;
    if (ldb_pg_open(db, &cfg, &pg) != LDB_OK)
        die("ldb_pg_open", ldb_pg_open_error());
    if (ldb_pg_attach(pg, "users", NULL, LDB_SOURCE_ON_DEMAND, &s) != LDB_OK ||
        ldb_pg_attach(pg, "issues", NULL, LDB_SOURCE_ON_DEMAND, issues) != LDB_OK ||
        ldb_pg_attach(pg, "comments", NULL, LDB_SOURCE_ON_DEMAND, &s) != LDB_OK)
        die("ldb_pg_attach", ldb_pg_errmsg(pg));
    printf("attached users, issues, comments ON_DEMAND (nothing loaded yet)\n");
    return pg;
}

int main(void)
{
    const char *conninfo = read_conninfo();
    double start = now_ms();
    PGconn *other = fill(conninfo);
    ldb *db;
    ldb_source *issues;
    if (ldb_open(NULL, &db) != LDB_OK)
        die("ldb_open", "failed");
    ldb_pg *pg = attach_all(db, conninfo, &issues);
    ldb_set_resolved_callback(db, on_resolved, NULL);

    mark_ms = now_ms();
    ldb_live *mine = open_live(db, "mine", mine_sql);
    ldb_live *newest = open_live(db, "newest", newest_sql);
    wait_ready(pg, mine, newest);
    print_explain(pg);
    print_result("mine (user 42's open issues, each with its comments)", mine, 4);
    print_result("newest (open issues by created)", newest, 5);
    print_stats(pg, issues);
    quiet = 0;

    other_commits(pg, other,
                  "INSERT INTO issues VALUES (100001, 'Login page is slow', 'open', 9, 42, now())");
    other_commits(pg, other,
                  "INSERT INTO comments VALUES (300001, 100001, 7, 'I see 3 s on every login')");
    other_commits(pg, other, "UPDATE issues SET status = 'closed' WHERE id = 100001");
    other_commits(pg, other, "UPDATE issues SET status = 'open' WHERE id = 100001");
    optimistic(db, pg, "UPDATE issues SET title = 'Login takes 3 s', priority = 8 WHERE id = 100001");
    optimistic(db, pg, "UPDATE issues SET priority = 10 WHERE id = 100001");
    if (ldb_pg_sync(pg, WAIT_MS) != LDB_OK)
        die("ldb_pg_sync", ldb_pg_errmsg(pg));
    print_result("mine at the end", mine, 2);
    print_stats(pg, issues);

    ldb_live_close(mine);
    ldb_live_close(newest);
    ldb_pg_close(pg);
    ldb_close(db);
    PQfinish(other);
    printf("\ndone in %.1f s\n", (now_ms() - start) / 1e3);
    return 0;
}
