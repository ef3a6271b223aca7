/*
 * test_live_child.c - child live results (issue 12, "Child live result"):
 * LIVE (query), the seed's Collection-valued include.
 *
 * Not built yet: LIVE (query) parses; the binder accepts it only as a
 * whole result column of a live query's outermost SELECT and the live
 * compiler then refuses it; everywhere else the binder refuses it. Both
 * refusals are LDB_UNSUPPORTED with a message naming it and ARRAY (query),
 * at the offset of LIVE, leaving nothing behind; `live` stays an ordinary
 * name and function name.
 */
#include "test.h"
#include "test_db.h"

#include "livedb.h"

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
    ldb_stmt *s = (ldb_stmt *)1;
    check_refusal(db, ldb_prepare(db, child_sql, -1, &s, NULL), child_sql, elsewhere);
    CHECK(s == NULL);

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
          T(live_stays_a_name))
