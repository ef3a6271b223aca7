/*
 * test_live_child.c - child live results (issue 12, "Child live result"):
 * LIVE (query), the seed's Collection-valued include.
 *
 * The binder accepts LIVE (query) only as a whole result column of a live
 * query's outermost SELECT, or of a LIVE child's; everywhere else it is
 * LDB_UNSUPPORTED with a message naming it and ARRAY (query), at the
 * offset of LIVE, leaving nothing behind; `live` stays an ordinary name.
 * Where it binds, each row's cell is a child live result: the tests here
 * read every batch as a log line "[handle] kind row" (handles numbered as
 * the log first meets them) and check the log of each commit: which
 * handles get batches, in which order, and that a parent is not re-emitted
 * by a child's change. (Oracles and lifecycle: test_live_child_oracle.c.)
 */
#include "test.h"
#include "test_db.h"
#include "include_rows.h"

#include "livedb.h"

#include <stdbool.h>
#include <string.h>

static ldb *child_db(void)
{
    ldb *db = NULL;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT);"
             "CREATE TABLE issues(id INTEGER PRIMARY KEY, assignee INTEGER, title TEXT);"
             "INSERT INTO users VALUES (1, 'ann'), (2, 'bob');"
             "INSERT INTO issues VALUES (10, 1, 'a'), (11, 1, 'b'), (12, 2, 'c');");
    return db;
}

static const char child_sql[] =
    "SELECT u.id, live (SELECT i.title FROM issues i WHERE i.assignee = u.id "
    "ORDER BY i.id) AS issues FROM users u ORDER BY u.id";

/* The refusal names LIVE and ARRAY, says why (because) and points at the
 * LIVE token. */
static void check_refusal(ldb *db, int rc, const char *sql, const char *because)
{
    CHECKF(rc == LDB_UNSUPPORTED, "rc %d: %s", rc, ldb_errmsg(db));
    CHECKF(strstr(ldb_errmsg(db), "LIVE (query)") && strstr(ldb_errmsg(db), "ARRAY (query)") &&
               strstr(ldb_errmsg(db), because),
           "%s", ldb_errmsg(db));
    const char *at = strstr(sql, "live (");
    CHECKF(at && ldb_error_offset(db) == (int)(at - sql), "offset %d", ldb_error_offset(db));
}

static const char elsewhere[] = "allowed only as a result column of a live query's outermost";

static void count_fn(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q, (void)c, (void)n;
    ++*(int *)ctx;
}

static void open_refused(ldb *db, const char *sql, const char *because)
{
    int calls = 0;
    ldb_live *q = (ldb_live *)1;
    check_refusal(db, ldb_live_open(db, sql, count_fn, &calls, &q), sql, because);
    CHECK(q == NULL && calls == 0);
}

/* A one-shot statement, a view and a materialized view have no handle to
 * give: the binder refuses LIVE there. */
static void live_is_refused_outside_live_queries(void)
{
    ldb *db = child_db();
    check_refusal(db, ldb_exec(db, child_sql, NULL, NULL), child_sql, elsewhere);
    /* ldb_prepare takes it, for ldb_live_open_stmt; stepping it refuses */
    ldb_stmt *s = NULL;
    CHECK(ldb_prepare(db, child_sql, -1, &s, NULL) == LDB_OK && s);
    check_refusal(db, ldb_step(s), child_sql, elsewhere);
    check_refusal(db, ldb_step(s), child_sql, elsewhere);
    ldb_live *q = NULL;
    CHECK(ldb_live_open_stmt(s, NULL, NULL, &q) == LDB_OK && q && ldb_live_count(q) == 2);
    ldb_live_close(q);
    ldb_finalize(s);

    static const char mv[] =
        "CREATE MATERIALIZED VIEW v AS SELECT u.id, live (SELECT i.title FROM issues i "
        "WHERE i.assignee = u.id) AS issues FROM users u";
    check_refusal(db, ldb_exec(db, mv, NULL, NULL), mv, elsewhere);
    CHECK_FAILS(db, "SELECT * FROM v", LDB_ERROR);

    static const char nested[] =
        "SELECT u.id FROM users u WHERE EXISTS (SELECT 1 WHERE "
        "live (SELECT 1 FROM issues i WHERE i.assignee = u.id) IS NOT NULL)";
    check_refusal(db, ldb_exec(db, nested, NULL, NULL), nested, elsewhere);

    /* the database is untouched and the same query with ARRAY works */
    EXEC(db, "SELECT u.id, ARRAY (SELECT i.title FROM issues i WHERE i.assignee = u.id) "
             "FROM users u");
    ldb_close(db);
}

/* In a live query, LIVE binds only as a whole result column of the
 * outermost SELECT; anywhere else the binder refuses it. */
static void live_binds_only_as_an_outermost_result_column(void)
{
    ldb *db = child_db();
    open_refused(db, "SELECT u.id FROM users u WHERE EXISTS (SELECT 1 WHERE "
                     "live (SELECT 1 FROM issues i WHERE i.assignee = u.id) IS NOT NULL)",
                 elsewhere);
    open_refused(db, "SELECT u.id, live (SELECT i.title FROM issues i WHERE i.assignee = u.id) "
                     "IS NULL FROM users u",
                 elsewhere);
    open_refused(db, "SELECT x.id FROM (SELECT u.id, live (SELECT i.title FROM issues i "
                     "WHERE i.assignee = u.id) AS c FROM users u) x",
                 elsewhere);
    open_refused(db, "WITH c AS (SELECT u.id, live (SELECT i.title FROM issues i "
                     "WHERE i.assignee = u.id) AS c FROM users u) SELECT id FROM c",
                 elsewhere);
    open_refused(db, "SELECT 1, 2 UNION ALL SELECT u.id, live (SELECT i.title FROM issues i "
                     "WHERE i.assignee = u.id) FROM users u",
                 elsewhere);
    open_refused(db, "SELECT u.id, (SELECT live (SELECT i.title FROM issues i "
                     "WHERE i.assignee = u.id)) FROM users u",
                 elsewhere);
    static const char view[] = "CREATE VIEW w AS SELECT u.id, live (SELECT i.title FROM issues i "
                               "WHERE i.assignee = u.id) AS c FROM users u";
    check_refusal(db, ldb_exec(db, view, NULL, NULL), view, elsewhere);
    ldb_close(db);
}

/* ---- batches as a log ------------------------------------------------------------- */

struct log {
    char text[8192];
};

static void on_batch(void *ctx, ldb_live *q, const ldb_change *c, size_t n);

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One change as "[h] I|U|D columns;" (h: the handle's ldb_live_id, 0
 * for the root; a LIVE cell as h<its id>); every child handle an after
 * row shows gets this callback. */
static char *change_line(void *ctx, ldb_live *q, const ldb_change *c)
{
    const ldb_row *r = c->after ? c->after : c->before;
    char *line = malloc(512);
    size_t len = (size_t)snprintf(line, 512, "[%lld] %c ", (long long)ldb_live_id(q),
                                  "?IUD"[c->kind]);
    for (int j = 0; j < ldb_row_columns(r) && len < 512; j++) {
        ldb_live *h = ldb_row_live(r, j);
        if (h) {
            CHECK(ldb_row_type(r, j) == LDB_LIVE);
            if (c->after)
                ldb_live_set_callback(h, on_batch, ctx);
            len += (size_t)snprintf(line + len, 512 - len, "h%lld ", (long long)ldb_live_id(h));
            continue;
        }
        char buf[64];
        ldb_row_format(r, j, buf, sizeof buf);
        len += (size_t)snprintf(line + len, 512 - len, "%s ", buf);
    }
    if (len < 511)
        strcat(line, ";");
    return line;
}

/* Appends the batch's lines, sorted (the order of a batch's changes is
 * not part of the contract; positions are). */
static void on_batch(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct log *g = ctx;
    char **lines = malloc((n ? n : 1) * sizeof *lines);
    for (size_t i = 0; i < n; i++)
        lines[i] = change_line(ctx, q, &c[i]);
    qsort(lines, n, sizeof *lines, line_cmp);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(g->text);
        snprintf(g->text + len, sizeof g->text - len, "%s", lines[i]);
        free(lines[i]);
    }
    free(lines);
}

static ldb_live *open_logged(ldb *db, const char *sql, struct log *g)
{
    g->text[0] = '\0';
    ldb_live *q = NULL;
    int rc = ldb_live_open(db, sql, on_batch, g, &q);
    CHECKF(rc == LDB_OK && q, "rc %d: %s", rc, ldb_errmsg(db));
    return q;
}

/* Runs sql and checks the log of its commit. */
static void expect(ldb *db, struct log *g, const char *sql, const char *want)
{
    g->text[0] = '\0';
    EXEC(db, sql);
    CHECKF(strcmp(g->text, want) == 0, "%s\n got:  %s\n want: %s", sql, g->text, want);
}

static ldb *tracker(void)
{
    ldb *db = NULL;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, team INTEGER);"
             "CREATE TABLE issues(id INTEGER PRIMARY KEY, assignee INTEGER, title TEXT);"
             "CREATE TABLE comments(id INTEGER PRIMARY KEY, issue INTEGER, body TEXT);"
             "INSERT INTO users VALUES (1, 'ann', 1), (2, 'bob', 1);"
             "INSERT INTO issues VALUES (10, 1, 'a'), (11, 1, 'b'), (12, 2, 'c');"
             "INSERT INTO comments VALUES (100, 10, 'x'), (101, 10, 'y');");
    return db;
}

/* A child change goes to its handle only; a route move deletes from one
 * handle and inserts into another without touching the parent; the last
 * parent leaving retracts the handle's rows; a reactivated bucket gets a
 * new handle. */
static void child_batches_follow_buckets(void)
{
    ldb *db = tracker();
    struct log g;
    ldb_live *q = open_logged(db, child_sql, &g);
    CHECKF(strcmp(g.text, "[0] I 1 h2 ;[0] I 2 h1 ;[1] I c ;[2] I a ;[2] I b ;") == 0, "%s", g.text);
    expect(db, &g, "UPDATE issues SET title = 'b' WHERE id = 10", "[2] U b ;");
    expect(db, &g, "UPDATE issues SET assignee = 1 WHERE id = 12", "[1] D c ;[2] I c ;");
    expect(db, &g, "UPDATE users SET name = 'anne' WHERE id = 1", "");
    /* bob's handle stays (bob still refers to it), empty */
    expect(db, &g, "INSERT INTO issues VALUES (13, 2, 'd')", "[1] I d ;");
    /* the last parent leaves: its rows go in a last batch */
    expect(db, &g, "DELETE FROM users WHERE id = 1", "[0] D 1 h2 ;[2] D b ;[2] D b ;[2] D c ;");
    /* back again: a new handle with the bucket's rows */
    expect(db, &g, "INSERT INTO users VALUES (1, 'ann', 1)", "[0] I 1 h3 ;[3] I b ;[3] I b ;[3] I c ;");
    ldb_live_stats st;
    ldb_live_stats_get(q, &st);
    CHECK(st.child_results == 2 && st.result_rows == 2);
    ldb_live_close(q);
    ldb_close(db);
}

/* Parents with equal correlation values share one handle; a parent whose
 * value changes gets the other bucket's handle, and the old one retires
 * only when its last parent leaves. */
static void equal_values_share_a_handle(void)
{
    ldb *db = tracker();
    EXEC(db, "UPDATE users SET team = 2 WHERE id = 2; INSERT INTO users VALUES (3, 'cy', 1)");
    struct log g;
    ldb_live *q = open_logged(db, "SELECT u.id, LIVE (SELECT v.name FROM users v WHERE v.team = u.team "
                                  "ORDER BY v.name) AS mates FROM users u ORDER BY u.id", &g);
    CHECKF(strcmp(g.text, "[0] I 1 h2 ;[0] I 2 h1 ;[0] I 3 h2 ;[1] I bob ;[2] I ann ;[2] I cy ;") == 0, "%s", g.text);
    expect(db, &g, "UPDATE users SET team = 2 WHERE id = 3", "[0] U 3 h1 ;[1] I cy ;[2] D cy ;");
    /* the last parent of team 1 leaves: its handle's last batch */
    expect(db, &g, "UPDATE users SET team = 2 WHERE id = 1", "[0] U 1 h1 ;[1] I ann ;[2] D ann ;");
    ldb_live_stats st;
    ldb_live_stats_get(q, &st);
    CHECK(st.child_results == 1);
    ldb_live_close(q);
    ldb_close(db);
}

/* LIVE nests: an issue's comments are a grandchild handle, whose changes
 * reach only it, also when the issue moves to another user. */
static void live_nests(void)
{
    ldb *db = tracker();
    struct log g;
    ldb_live *q = open_logged(db,
        "SELECT u.id, LIVE (SELECT i.id, LIVE (SELECT c.body FROM comments c "
        "WHERE c.issue = i.id ORDER BY c.body) AS cs FROM issues i WHERE i.assignee = u.id "
        "ORDER BY i.id) AS issues FROM users u WHERE u.id = 1", &g);
    CHECKF(strcmp(g.text, "[0] I 1 h1 ;[1] I 10 h2 ;[1] I 11 h3 ;[2] I x ;[2] I y ;") == 0,
           "%s", g.text);
    expect(db, &g, "UPDATE comments SET body = 'a' WHERE id = 101", "[2] U a ;");
    expect(db, &g, "INSERT INTO comments VALUES (102, 11, 'z')", "[3] I z ;");
    /* the issue leaves: so does its comments' handle, with its rows */
    expect(db, &g, "UPDATE issues SET assignee = 2 WHERE id = 11", "[1] D 11 h3 ;[3] D z ;");
    expect(db, &g, "INSERT INTO comments VALUES (103, 11, 'w')", "");
    ldb_live_close(q);
    ldb_close(db);
}

/* Under ORDER BY ... LIMIT the handles are those of the rows in the
 * window: moving it retires and makes handles; an index dropped under
 * the query (a rebuild) keeps them. */
static void handles_follow_the_window(void)
{
    ldb *db = tracker();
    EXEC(db, "CREATE INDEX users_name ON users(name); INSERT INTO users VALUES (3, 'cy', 1)");
    struct log g;
    ldb_live *q = open_logged(db, "SELECT u.id, LIVE (SELECT i.id FROM issues i WHERE i.assignee = u.id "
                                  "ORDER BY i.id) AS issues FROM users u ORDER BY u.name LIMIT 1", &g);
    CHECK(strcmp(g.text, "[0] I 1 h1 ;[1] I 10 ;[1] I 11 ;") == 0);
    g.text[0] = '\0';
    CHECK(ldb_live_set_window(q, 1, 1) == LDB_OK);
    CHECKF(strcmp(g.text, "[0] D 1 h1 ;[0] I 2 h2 ;[1] D 10 ;[1] D 11 ;[2] I 12 ;") == 0, "%s", g.text);
    ldb_live_stats st;
    ldb_live_stats_get(q, &st);
    CHECK(st.child_results == 1);
    expect(db, &g, "DROP INDEX users_name", "");
    expect(db, &g, "INSERT INTO issues VALUES (13, 2, 'n')", "[2] I 13 ;");
    ldb_live_close(q);
    ldb_close(db);
}

/* Grouped parents, SELECT *, and a child with LIMIT per bucket. */
static void other_shapes(void)
{
    ldb *db = tracker();
    struct log g;
    ldb_live *q = open_logged(db, "SELECT u.team, count(*) AS n, LIVE (SELECT v.id FROM users v "
                                  "WHERE v.team = u.team ORDER BY v.id) AS ids FROM users u GROUP BY u.team", &g);
    CHECK(strcmp(g.text, "[0] I 1 2 h1 ;[1] I 1 ;[1] I 2 ;") == 0);
    expect(db, &g, "UPDATE users SET team = 3 WHERE id = 2",
           "[0] I 3 1 h2 ;[0] U 1 1 h1 ;[1] D 2 ;[2] I 2 ;");
    ldb_live_close(q);
    q = open_logged(db, "SELECT *, LIVE (SELECT i.title FROM issues i WHERE i.assignee = u.id "
                        "ORDER BY i.title DESC LIMIT 1) AS top FROM users u WHERE u.id = 1", &g);
    CHECKF(strcmp(g.text, "[0] I 1 ann 1 h1 ;[1] I b ;") == 0, "%s", g.text);
    expect(db, &g, "UPDATE issues SET title = 'c' WHERE id = 10", "[1] D b ;[1] I c ;");
    ldb_live_close(q);
    ldb_close(db);
}

/* ---- law 9: every result of a commit is installed before any callback ------------- */

struct coherent {
    ldb_live *root;
    int root_calls, child_calls;
    int64_t seen_in_root;  /* rows of user 1's handle, read in the root's callback */
    int64_t seen_in_child; /* root rows, read in a child's callback */
};

static int count_row(void *ctx, const ldb_row *r)
{
    (void)r;
    ++*(int64_t *)ctx;
    return 0;
}

static void coherent_child(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct coherent *k = ctx;
    (void)q, (void)c, (void)n;
    k->child_calls++;
    k->seen_in_child = 0;
    if (!k->root) /* the open's first batches: the query is not returned yet */
        return;
    int rc = ldb_live_read(k->root, count_row, &k->seen_in_child);
    CHECKF(rc == LDB_OK, "rc %d", rc);
}

static void coherent_root(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct coherent *k = ctx;
    (void)q;
    k->root_calls++;
    for (size_t i = 0; i < n; i++) {
        const ldb_row *r = c[i].after;
        ldb_live *h = r ? ldb_row_live(r, 1) : NULL;
        if (!h)
            continue;
        CHECK(ldb_live_set_callback(h, coherent_child, k) == LDB_OK);
        k->seen_in_root = 0;
        CHECK(ldb_live_read(h, count_row, &k->seen_in_root) == LDB_OK);
    }
}

/* One commit that adds a user with two issues: the root's callback reads
 * the new user's handle already filled, and the handle's callback reads
 * the root with the new user in it. */
static void callbacks_read_the_whole_commit(void)
{
    ldb *db = tracker();
    struct coherent k = { 0 };
    CHECK(ldb_live_open(db, "SELECT u.id, LIVE (SELECT i.id FROM issues i WHERE i.assignee = u.id) "
                            "AS issues FROM users u", coherent_root, &k, &k.root) == LDB_OK);
    CHECK(k.root_calls == 1 && k.child_calls == 2);
    k.root_calls = k.child_calls = 0;
    EXEC(db, "BEGIN; INSERT INTO users VALUES (3, 'cy', 1); INSERT INTO issues VALUES (20, 3, 'p'),"
             " (21, 3, 'q'); COMMIT");
    CHECK(k.root_calls == 1 && k.child_calls == 1);
    CHECK_INT(k.seen_in_root, 2);
    CHECK_INT(k.seen_in_child, 3);
    ldb_live_close(k.root);
    ldb_close(db);
}

/* ---- laws 1 and 3: renamed aliases, split and atomic delivery ---------------------- */

struct render {
    char *s;
    size_t len, cap;
};

static void put(struct render *o, const char *t)
{
    size_t n = strlen(t);
    while (o->len + n + 1 > o->cap)
        o->s = realloc(o->s, o->cap = o->cap ? 2 * o->cap : 256);
    memcpy(o->s + o->len, t, n + 1);
    o->len += n;
}

static void render_live(struct render *o, ldb_live *q);

/* A row as text, a LIVE cell as its handle's rows in braces. */
static int render_row(void *ctx, const ldb_row *r)
{
    struct render *o = ctx;
    for (int j = 0; j < ldb_row_columns(r); j++) {
        if (ldb_row_live(r, j)) {
            put(o, "{");
            render_live(o, ldb_row_live(r, j));
            put(o, "}");
        } else {
            char buf[64];
            ldb_row_format(r, j, buf, sizeof buf);
            put(o, buf);
        }
        put(o, ",");
    }
    put(o, ";");
    return 0;
}

static void render_live(struct render *o, ldb_live *q)
{
    CHECK(ldb_live_read(q, render_row, o) == LDB_OK);
}

/* The nested result of q (ORDER BY everywhere, so reads are in order). */
static char *nested(ldb_live *q)
{
    struct render o = { 0 };
    put(&o, "");
    render_live(&o, q);
    return o.s;
}

static const char *const law_writes[] = {
    "INSERT INTO users VALUES (3, 'cy', 2)",
    "INSERT INTO issues VALUES (20, 3, 'p'), (21, 3, 'q')",
    "UPDATE issues SET assignee = 3 WHERE id = 10",
    "INSERT INTO comments VALUES (102, 20, 'hi'), (103, 10, 'yo')",
    "DELETE FROM users WHERE id = 2",
    "UPDATE issues SET title = 'zz' WHERE id = 11",
    "UPDATE users SET id = 7 WHERE id = 1",
    "DELETE FROM comments WHERE id = 100",
};

static const char nested_sql[] =
    "SELECT u.id, u.name, LIVE (SELECT i.id, i.title, LIVE (SELECT c.body FROM comments c "
    "WHERE c.issue = i.id ORDER BY c.body) AS cs FROM issues i WHERE i.assignee = u.id "
    "ORDER BY i.title, i.id) AS issues FROM users u ORDER BY u.id";
static const char renamed_sql[] =
    "SELECT p.id, p.name, LIVE (SELECT t.id, t.title, LIVE (SELECT n.body FROM comments n "
    "WHERE n.issue = t.id ORDER BY n.body) AS cs FROM issues t WHERE t.assignee = p.id "
    "ORDER BY t.title, t.id) AS issues FROM users p ORDER BY p.id";

/* The state after the writes, kept live across them (one commit each, or
 * one transaction), and the same query opened fresh at the end. */
static char *after_writes(const char *sql, bool atomic, char **fresh)
{
    ldb *db = tracker();
    ldb_live *q = NULL;
    CHECK(ldb_live_open(db, sql, NULL, NULL, &q) == LDB_OK);
    if (atomic)
        EXEC(db, "BEGIN");
    for (size_t i = 0; i < sizeof law_writes / sizeof *law_writes; i++)
        EXEC(db, law_writes[i]);
    if (atomic)
        EXEC(db, "COMMIT");
    char *got = nested(q);
    ldb_live *f = NULL;
    CHECK(ldb_live_open(db, sql, NULL, NULL, &f) == LDB_OK);
    *fresh = nested(f);
    ldb_live_close(f);
    ldb_live_close(q);
    ldb_close(db);
    return got;
}

/* Law 3: split and atomic delivery of the same writes converge, to what a
 * fresh query gives; law 1: renaming every alias changes nothing shown. */
static void laws_1_and_3(void)
{
    char *fresh_split, *fresh_atomic, *fresh_renamed;
    char *split = after_writes(nested_sql, false, &fresh_split);
    char *atomic = after_writes(nested_sql, true, &fresh_atomic);
    char *renamed = after_writes(renamed_sql, false, &fresh_renamed);
    CHECKF(strcmp(split, fresh_split) == 0, "%s\n%s", split, fresh_split);
    CHECKF(strcmp(atomic, split) == 0, "%s\n%s", atomic, split);
    CHECKF(strcmp(renamed, split) == 0, "%s\n%s", renamed, split);
    CHECKF(strstr(split, "7,ann,{10,") == NULL && strstr(split, "{hi,;}") != NULL, "%s", split);
    free(split), free(atomic), free(renamed);
    free(fresh_split), free(fresh_atomic), free(fresh_renamed);
}

static int first_int(void *ctx, const ldb_row *r)
{
    *(int64_t *)ctx = ldb_row_int64(r, 0);
    return 0;
}

static void live_stays_a_name(void)
{
    ldb *db = child_db();
    EXEC(db, "CREATE TABLE live(live INTEGER)");
    EXEC(db, "INSERT INTO live VALUES (7)");
    int64_t got = 0;
    CHECK(ldb_exec(db, "SELECT live.live FROM live", first_int, &got) == LDB_OK && got == 7);
    /* a call of a function named live, even with a subquery argument */
    CHECK_FAILS(db, "SELECT live(1)", LDB_ERROR);
    CHECK(strstr(ldb_errmsg(db), "no such function"));
    CHECK_FAILS(db, "SELECT live((SELECT 1))", LDB_ERROR);
    CHECK(strstr(ldb_errmsg(db), "no such function"));
    /* any case, VALUES and WITH queries too */
    CHECK_FAILS(db, "SELECT LiVe (VALUES (1))", LDB_UNSUPPORTED);
    CHECK_FAILS(db, "SELECT LIVE (WITH c AS (SELECT 1) SELECT * FROM c)", LDB_UNSUPPORTED);
    ldb_close(db);
}

TEST_MAIN(T(live_is_refused_outside_live_queries),
          T(live_binds_only_as_an_outermost_result_column),
          T(live_stays_a_name), T(child_batches_follow_buckets),
          T(equal_values_share_a_handle), T(live_nests), T(handles_follow_the_window),
          T(other_shapes), T(callbacks_read_the_whole_commit),
          T(laws_1_and_3))
