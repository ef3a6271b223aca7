/*
 * test_sql_regress.c - regressions of the SQL engine found by review:
 * LIMIT/OFFSET arithmetic at the int64 edges; schema changes and writes
 * while a statement is part-way through its rows (no stale table, index
 * or row is ever read again); the nesting limit counting views, CTEs and
 * derived tables; CTEs and views bound once and shared by their
 * references; and interrupting a running statement (ldb_interrupt, the
 * progress handler, a signal handler).
 */
#include "test_sql_util.h"

/* ---- LIMIT and OFFSET ------------------------------------------------------------- */

static void limit_offset_edges(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(x INTEGER PRIMARY KEY, y)");
    EXEC(db, "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)");
    /* offset + limit overflowed int64 and ended the scan at once */
    CHECK_ROWS(db, "SELECT x FROM t ORDER BY x LIMIT 9223372036854775807 OFFSET 1", "2\n3\n");
    CHECK_ROWS(db, "SELECT count(*) FROM (SELECT x FROM t LIMIT 9223372036854775807 OFFSET 1)",
               "2\n");
    CHECK_ROWS(db, "SELECT x FROM t ORDER BY y DESC LIMIT 9223372036854775807 OFFSET 2", "1\n");
    CHECK_ROWS(db, "SELECT x FROM t ORDER BY y LIMIT 9223372036854775806 OFFSET 9223372036854775807",
               "");
    CHECK_ROWS(db, "SELECT x FROM t ORDER BY x LIMIT -1 OFFSET 9223372036854775807", "");
    CHECK_ROWS(db, "SELECT x FROM t ORDER BY x LIMIT 2.0 OFFSET '1'", "2\n3\n");
    /* a REAL past int64 is not an integer (its conversion was undefined) */
    CHECK_ERROR(db, "SELECT x FROM t LIMIT 1e19", "line 1, column 23: LIMIT and OFFSET must be integers");
    CHECK_ERROR(db, "SELECT x FROM t LIMIT 9223372036854775808.0",
                "line 1, column 23: LIMIT and OFFSET must be integers");
    ldb_close(db);
}

/* ---- writes and schema changes while a statement is running ---------------------- */

/* Steps s once, then runs sql on the side, then steps again: the reading
 * statement must stop with LDB_ABORT, and run again after a reset. */
static int step_around(ldb *db, const char *query, const char *between)
{
    ldb_stmt *s;
    CHECK(ldb_prepare(db, query, -1, &s, NULL) == LDB_OK);
    CHECK_INT(ldb_step(s), LDB_ROW);
    EXEC(db, between);
    int rc = ldb_step(s);
    while (rc == LDB_ROW)
        rc = ldb_step(s);
    ldb_finalize(s);
    return rc;
}

static void setup_pair(ldb *db)
{
    EXEC(db, "DROP TABLE IF EXISTS big; DROP TABLE IF EXISTS small");
    EXEC(db, "CREATE TABLE big(id INTEGER PRIMARY KEY, k, v); CREATE TABLE small(k, w)");
    EXEC(db, "CREATE INDEX big_v ON big(v)");
    EXEC(db, "INSERT INTO big VALUES (1, 1, 10), (2, 1, 20), (3, 1, 30), (4, 2, 40)");
    EXEC(db, "INSERT INTO small VALUES (1, 'a'), (1, 'b'), (1, 'c'), (2, 'd')");
}

static void drop_while_reading(void)
{
    ldb *db = sqlt_open();
    static const char *const reads[] = {
        "SELECT id FROM big",
        "SELECT id FROM big WHERE v > 5",                      /* index range */
        "SELECT id FROM big ORDER BY v",                       /* ordered index read */
        "SELECT big.id, small.w FROM big JOIN small ON big.k = small.k",
        "SELECT big.id, small.w FROM small JOIN big ON big.k = small.k",
        "SELECT big.id, small.w FROM big LEFT JOIN small ON big.k = small.k",
        /* the subquery's scan is opened again per outer row */
        "SELECT (SELECT count(*) FROM big WHERE big.k = s.k) FROM (SELECT k FROM small ORDER BY w) s",
        "SELECT v FROM bigv",
    };
    static const char *const changes[] = {
        "DROP TABLE big", "DROP TABLE small", "DROP INDEX big_v", "CREATE INDEX big_k ON big(k)",
        "DELETE FROM big", "DELETE FROM small", "UPDATE big SET k = 2", "DROP VIEW bigv",
    };
    for (size_t q = 0; q < sizeof reads / sizeof *reads; q++)
        for (size_t c = 0; c < sizeof changes / sizeof *changes; c++) {
            setup_pair(db);
            EXEC(db, "DROP VIEW IF EXISTS bigv; CREATE VIEW bigv AS SELECT v FROM big");
            int rc = step_around(db, reads[q], changes[c]);
            /* every change above bumps the write epoch: the reader stops,
             * unless everything it still reads was already in memory */
            CHECKF(rc == LDB_ABORT || rc == LDB_DONE, "%s / %s: %d %s", reads[q], changes[c], rc,
                   ldb_errmsg(db));
        }
    /* a scan that still had rows to read stops with a clear message */
    setup_pair(db);
    CHECK_INT(step_around(db, "SELECT id FROM big", "DROP TABLE big"), LDB_ABORT);
    setup_pair(db);
    ldb_stmt *s;
    CHECK(ldb_prepare(db, "SELECT id FROM big", -1, &s, NULL) == LDB_OK);
    CHECK_INT(ldb_step(s), LDB_ROW);
    EXEC(db, "DROP TABLE big");
    CHECK_INT(ldb_step(s), LDB_ABORT);
    CHECK_STR(ldb_errmsg(db), "table big was changed while a statement was reading it");
    /* reset and stepped again, the statement is bound again */
    CHECK_INT(ldb_reset(s), LDB_OK);
    CHECK_INT(ldb_step(s), LDB_ERROR);
    CHECK_STR(ldb_errmsg(db), "line 1, column 16: no such table: big");
    ldb_finalize(s);
    ldb_close(db);
}

static ldb *cb_db;
static const char *cb_sql;
static int cb_rows;
static char cb_seen[256];

/* Writes with cb_sql at the first row, then reads the row it was given. */
static int write_in_callback(void *ctx, const ldb_row *r)
{
    (void)ctx;
    if (cb_rows++ == 0)
        CHECK(ldb_exec(cb_db, cb_sql, NULL, NULL) == LDB_OK);
    size_t n = strlen(cb_seen);
    ldb_row_format(r, 0, cb_seen + n, sizeof cb_seen - n);
    return 0;
}

static void write_from_row_callback(void)
{
    ldb *db = cb_db = sqlt_open();
    static const char *const writes[] = { "DROP TABLE big", "DELETE FROM big", "DROP TABLE small" };
    for (size_t i = 0; i < sizeof writes / sizeof *writes; i++) {
        setup_pair(db);
        cb_sql = writes[i];
        cb_rows = 0;
        cb_seen[0] = '\0';
        /* the row handed to the callback stays readable after the write */
        int rc = ldb_exec(db, "SELECT big.v || small.w FROM big JOIN small ON big.k = small.k "
                              "WHERE big.id = 1", write_in_callback, NULL);
        CHECKF(rc == LDB_ABORT, "%s: %d %s", writes[i], rc, ldb_errmsg(db));
        CHECK_INT(cb_rows, 1);
        CHECK(strlen(cb_seen) == 3 && strncmp(cb_seen, "10", 2) == 0);
    }
    ldb_close(db);
}

TEST_MAIN(T(limit_offset_edges), T(drop_while_reading), T(write_from_row_callback))
