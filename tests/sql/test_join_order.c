/*
 * test_join_order.c - join order for many-table queries: comma joins
 * whose equalities sit in WHERE, in a FROM order that crosses unrelated
 * tables (sqllogictest's select5 shape, which nested loops in FROM order
 * turn into cross products of every table), answered in bounded work and
 * equal to SQLite's answer.
 *
 * Each round draws 3-14 small tables and a shape (a chain a.b = next.a, a
 * star of dimension tables around a fact table, or a cycle), shuffles the
 * FROM order, sometimes writes a join with JOIN ... ON, puts a LEFT JOIN
 * in some (outer joins are never reordered across), and adds one-table
 * filters. The progress handler caps the work of each query: a plan with
 * a cross product of the tables cannot finish under it. LDB_SEED replays,
 * LDB_TEST_SCALE multiplies the rounds.
 *
 * Joins whose one side is a table looked up by its primary key (plan.h,
 * lookup) are held against SQLite over keys of every kind: composite,
 * text under a collation, affinity that converts, NULLs, outer joins.
 */
#include "test.h"

#include "base/strbuf.h"
#include "livedb.h"
#include "sqlite_cmp.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 14
/* Work units per query (rows visited, join pairs tried): a few thousand
 * rows per table, far below any cross product of three of them. */
#define WORK_CAP 2000000

struct round {
    rng r;
    int n;
    int order[MAXT];
    strbuf query;
};

static int over_cap(void *ctx)
{
    (void)ctx;
    return 1;
}

static void both_exec(ldb *db, sqlite3 *lite, const char *sql)
{
    if (getenv("LDB_TRACE"))
        fprintf(stderr, "%s;\n", sql);
    int rc = ldb_exec(db, sql, NULL, NULL);
    CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    char *err = NULL;
    CHECKF(sqlite3_exec(lite, sql, NULL, NULL, &err) == SQLITE_OK, "SQLite: %s", err);
}

/* Tables t0..t(n-1)(a, b, v): 5-40 rows of small values (duplicates and
 * NULLs; about one match per join value, so results stay small), some
 * with an index on a. */
static void make_tables(struct round *rd, ldb *db, sqlite3 *lite)
{
    for (int t = 0; t < rd->n; t++) {
        char sql[4096];
        int len = snprintf(sql, sizeof sql, "CREATE TABLE t%d(a INTEGER, b INTEGER, v INTEGER)",
                           t);
        both_exec(db, lite, sql);
        if (rng_chance(&rd->r, 1, 3)) {
            snprintf(sql, sizeof sql, "CREATE INDEX t%d_a ON t%d(a)", t, t);
            both_exec(db, lite, sql);
        }
        int rows = 5 + (int)rng_below(&rd->r, 36);
        len = snprintf(sql, sizeof sql, "INSERT INTO t%d VALUES ", t);
        for (int i = 0; i < rows; i++) {
            int a = (int)rng_below(&rd->r, 26), b = 1 + (int)rng_below(&rd->r, 25);
            char av[8] = "NULL";
            if (a)
                snprintf(av, sizeof av, "%d", a);
            len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(%s, %d, %d)", i ? ", " : "",
                            av, b, (int)rng_below(&rd->r, 100));
        }
        both_exec(db, lite, sql);
    }
}

/* The equality that joins t(i) to the shape: chain and cycle link to
 * i - 1 (and the cycle closes), a star links every table to t0. */
static void shape_conds(struct round *rd, int shape, strbuf *w)
{
    for (int i = 1; i < rd->n; i++)
        sb_printf(w, "%st%d.a = t%d.b", w->len ? " AND " : "", i, shape == 1 ? 0 : i - 1);
    if (shape == 2)
        sb_printf(w, " AND t0.a = t%d.v %% 25", rd->n - 1);
    for (int i = 0; i < rd->n; i++)
        if (rng_chance(&rd->r, 1, 4))
            sb_printf(w, " AND t%d.v %s %d", i, rng_chance(&rd->r, 1, 2) ? "<" : ">",
                      (int)rng_below(&rd->r, 100));
}

/* FROM in a shuffled order; the last table may come as LEFT JOIN on its
 * condition (then kept out of WHERE). */
static void build_query(struct round *rd, int shape, bool left)
{
    for (int i = 0; i < rd->n; i++)
        rd->order[i] = i;
    for (int i = rd->n - 1; i > 0; i--) {
        int j = (int)rng_below(&rd->r, (uint64_t)i + 1), x = rd->order[i];
        rd->order[i] = rd->order[j];
        rd->order[j] = x;
    }
    strbuf w = STRBUF_INIT;
    shape_conds(rd, shape, &w);
    sb_truncate(&rd->query, 0);
    sb_printf(&rd->query, "SELECT count(*), sum(t0.v), min(t%d.v) FROM ", rd->n - 1);
    for (int i = 0; i < rd->n; i++)
        sb_printf(&rd->query, "%st%d", i ? ", " : "", rd->order[i]);
    if (left)
        sb_printf(&rd->query, " LEFT JOIN t0 AS extra ON extra.a = t%d.b AND extra.v > 50",
                  rd->order[rd->n - 1]);
    sb_printf(&rd->query, " WHERE %s", sb_str(&w));
    sb_free(&w);
}

static void check_query(ldb *db, sqlite3 *lite, const char *sql, uint64_t seed)
{
    cmp_result a = { 0 }, b = { 0 };
    cmp_run_livedb(db, sql, &a);
    cmp_run_sqlite(lite, sql, &b);
    CHECKF(a.ok, "seed %" PRIu64 ": %s: %s", seed, sql, a.msg);
    CHECKF(b.ok, "SQLite: %s: %s", sql, b.msg);
    CHECKF(cmp_same_rows(&a, &b, false), "seed %" PRIu64 ": %s: livedb %s, SQLite %s", seed, sql,
           a.n ? a.rows[0] : "-", b.n ? b.rows[0] : "-");
    cmp_result_free(&a);
    cmp_result_free(&b);
}

static void select5_shapes(void)
{
    uint64_t seed = test_seed();
    int rounds = 40 * test_scale();
    for (int k = 0; k < rounds; k++) {
        struct round rd = { .query = STRBUF_INIT };
        rng_seed(&rd.r, seed + (uint64_t)k);
        rd.n = 3 + (int)rng_below(&rd.r, MAXT - 2);
        ldb *db;
        sqlite3 *lite;
        CHECK_INT(ldb_open(NULL, &db), LDB_OK);
        CHECK_INT(sqlite3_open(":memory:", &lite), SQLITE_OK);
        ldb_progress_handler(db, WORK_CAP, over_cap, NULL);
        make_tables(&rd, db, lite);
        for (int shape = 0; shape < 3; shape++) {
            build_query(&rd, shape, rng_chance(&rd.r, 1, 4));
            check_query(db, lite, sb_str(&rd.query), seed + (uint64_t)k);
        }
        sb_free(&rd.query);
        sqlite3_close(lite);
        ldb_close(db);
    }
}

/* The plan's text (EXPLAIN) of sql. */
static void explain(ldb *db, const char *sql, strbuf *out)
{
    char q[1024];
    snprintf(q, sizeof q, "EXPLAIN %s", sql);
    ldb_stmt *st;
    CHECKF(ldb_prepare(db, q, -1, &st, NULL) == LDB_OK, "%s: %s", q, ldb_errmsg(db));
    while (ldb_step(st) == LDB_ROW) {
        const ldb_row *r = ldb_stmt_row(st);
        char line[256];
        ldb_row_format(r, ldb_row_columns(r) - 1, line, sizeof line);
        sb_printf(out, "%s\n", line);
    }
    ldb_finalize(st);
}

static void writes_between_pulls(ldb *db);

static void lookup_joins(void)
{
    static const char *const schema[] = {
        "CREATE TABLE d(id INTEGER PRIMARY KEY, v TEXT)",
        "CREATE TABLE c(a INTEGER, b TEXT, v INTEGER, PRIMARY KEY (a, b))",
        "CREATE TABLE n(k TEXT COLLATE NOCASE PRIMARY KEY, v INTEGER)",
        "CREATE TABLE f(x, y TEXT, z INTEGER, w TEXT)",
        "CREATE INDEX f_z ON f(z DESC, x)",
        "CREATE INDEX f_wn ON f(w COLLATE NOCASE)",
        "INSERT INTO d VALUES (1, 'one'), (2, 'two'), (3, 'three'), (10, 'ten')",
        "INSERT INTO c VALUES (1, 'a', 10), (1, 'b', 11), (2, 'a', 20)",
        "INSERT INTO n VALUES ('Ab', 1), ('cd', 2)",
        "INSERT INTO f VALUES (1, 'a', 1, 'ab'), ('2', 'b', 2, 'CD'), (2.0, 'a', NULL, 'x'), "
        "(NULL, NULL, 10, 'AB'), ('x', 'a', 3, NULL), (10, 'A', 1, 'cd')",
    };
    /* want: whether the plan looks d, c or n up */
    static const struct { const char *sql; bool want; } q[] = {
        { "SELECT f.x, d.v FROM f JOIN d ON d.id = f.z", true },
        { "SELECT f.x, d.v FROM f LEFT JOIN d ON d.id = f.z", true },
        { "SELECT f.x, d.v FROM d RIGHT JOIN f ON d.id = f.z", true },
        { "SELECT f.x, d.v FROM f JOIN d ON d.id = f.x", true },
        { "SELECT f.x, d.v FROM f JOIN d ON d.id = f.y", true },  /* NUMERIC: d.id as stored */
        { "SELECT f.z, n.v FROM f JOIN n ON n.k = f.z", false },  /* NUMERIC would convert n.k */
        { "SELECT f.x, c.v FROM f JOIN c ON c.a = f.z AND c.b = f.y", true },
        { "SELECT f.x, c.v FROM f LEFT JOIN c ON c.b = f.y AND c.a = f.x", true },
        { "SELECT f.x, c.v FROM f JOIN c ON c.a = f.z", true }, /* half c's key: f by f_z */
        { "SELECT f.x, c.v FROM f NOT INDEXED JOIN c ON c.a = f.z", true }, /* c by its key's
                                                     automatic index (a leads it) */
        { "SELECT f.w, n.v FROM f JOIN n ON n.k = f.w", true },  /* NOCASE both */
        { "SELECT f.w, n.v FROM f JOIN n ON n.k = f.w COLLATE BINARY", false },
        { "SELECT f.x, d.v FROM f JOIN d ON d.id = f.z AND d.v <> f.w", true },
        /* by an index of f: a leading part, a hash index, a collated part */
        { "SELECT d.id, f.w FROM d JOIN f ON f.z = d.id", true },
        { "SELECT d.id, f.w FROM d LEFT JOIN f ON f.z = d.id AND f.x = d.id", false }, /* x: no
                                                       affinity, NUMERIC would convert it */
        { "SELECT d.id, f.w FROM d LEFT JOIN f ON f.z = d.id", true },
        { "SELECT c.v, f.x FROM c JOIN f ON f.y = c.b", true },
        { "SELECT n.k, f.z FROM n JOIN f ON n.k = f.w", true },
        { "SELECT n.k, f.z FROM n JOIN f ON f.w = n.k", false }, /* BINARY: f_wn is NOCASE */
        { "SELECT d.id, f.w FROM d JOIN f ON f.x = d.id", true },  /* not f (x: f_z's second
                                                                 part), d by its key */
        /* a filter on d makes it more than a table: hashed */
        { "SELECT f.x, d.v FROM f LEFT JOIN d ON d.id = f.z AND d.v LIKE 't%'", false },
    };
    ldb *db;
    sqlite3 *lite;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    CHECK_INT(sqlite3_open(":memory:", &lite), SQLITE_OK);
    for (size_t i = 0; i < sizeof schema / sizeof *schema; i++)
        both_exec(db, lite, schema[i]);
    /* SQLite has no hash indexes: an ordinary one there */
    CHECK_INT(ldb_exec(db, "CREATE INDEX f_yh ON f(y) USING HASH", NULL, NULL), LDB_OK);
    CHECK_INT(sqlite3_exec(lite, "CREATE INDEX f_yh ON f(y)", NULL, NULL, NULL), SQLITE_OK);
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        check_query(db, lite, q[i].sql, 0);
        strbuf plan = STRBUF_INIT;
        explain(db, q[i].sql, &plan);
        bool looks_up = strstr(sb_str(&plan), "(lookup ") != NULL;
        CHECKF(looks_up == q[i].want, "%s:\n%s", q[i].sql, sb_str(&plan));
        sb_free(&plan);
    }
    writes_between_pulls(db);
    sqlite3_close(lite);
    ldb_close(db);
}

/* A stepped lookup join while the looked-up table changes between two
 * pulls: the statement stops with LDB_ABORT at its next step (what any
 * statement reading a changed table does), touching nothing freed (the
 * candidates it holds are referenced; no cursor is kept). */
static void writes_between_pulls(ldb *db)
{
    ldb_stmt *st;
    CHECK_INT(ldb_prepare(db, "SELECT d.id, f.w, f.z FROM d JOIN f ON f.z = d.id", -1, &st, NULL),
              LDB_OK);
    int rows = 0, rc;
    while ((rc = ldb_step(st)) == LDB_ROW) {
        rows++;
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT INTO f VALUES (%d, 'n', 1, 'w'); DELETE FROM f WHERE x = 1",
                 100 + rows);
        CHECKF(ldb_exec(db, sql, NULL, NULL) == LDB_OK, "%s", ldb_errmsg(db));
    }
    CHECKF(rc == LDB_ABORT && strstr(ldb_errmsg(db), "changed while a statement"), "rc %d: %s",
           rc, ldb_errmsg(db));
    CHECK_INT(rows, 1);
    ldb_finalize(st);
}

/* A join already in a connected order that costs no more than another
 * keeps its plan. */
static void connected_order_kept(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    CHECK_INT(ldb_exec(db, "CREATE TABLE x(a, b); CREATE TABLE y(a, b); CREATE TABLE z(a, b)",
                       NULL, NULL),
              LDB_OK);
    strbuf plan = STRBUF_INIT;
    ldb_stmt *st;
    CHECK_INT(ldb_prepare(db, "EXPLAIN SELECT * FROM x, y, z WHERE x.b = y.a AND y.b = z.a", -1,
                          &st, NULL),
              LDB_OK);
    while (ldb_step(st) == LDB_ROW) {
        const ldb_row *r = ldb_stmt_row(st);
        char line[256];
        ldb_row_format(r, ldb_row_columns(r) - 1, line, sizeof line);
        sb_printf(&plan, "%s\n", line);
    }
    ldb_finalize(st);
    const char *p = sb_str(&plan), *x = strstr(p, "SCAN x"), *y = strstr(p, "SCAN y"),
               *z = strstr(p, "SCAN z"), *proj = strstr(p, "PROJECT");
    CHECKF(x && y && z && x < y && y < z && proj && !strstr(proj + 1, "PROJECT"), "%s", p);
    sb_free(&plan);
    ldb_close(db);
}

/* EXPLAIN QUERY PLAN ends each line with the planner's estimate. */
static void query_plan_estimates(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    CHECK_INT(ldb_exec(db, "CREATE TABLE big(a, b); CREATE TABLE small(a, b)", NULL, NULL), LDB_OK);
    for (int i = 0; i < 40; i++) {
        char sql[80];
        snprintf(sql, sizeof sql, "INSERT INTO big VALUES (%d, %d)%s", i, i % 4,
                 i < 4 ? "; INSERT INTO small VALUES (1, 2)" : "");
        CHECK_INT(ldb_exec(db, sql, NULL, NULL), LDB_OK);
    }
    strbuf plan = STRBUF_INIT;
    explain(db, "SELECT * FROM small, big WHERE small.a = big.b", &plan);
    CHECKF(!strstr(sb_str(&plan), "(~"), "%s", sb_str(&plan)); /* plain EXPLAIN: none */
    sb_truncate(&plan, 0);
    explain(db, "QUERY PLAN SELECT * FROM small, big WHERE small.a = big.b", &plan);
    CHECKF(strstr(sb_str(&plan), "SCAN big (~40 rows)") && strstr(sb_str(&plan), "SCAN small (~4 rows)"),
           "%s", sb_str(&plan));
    sb_free(&plan);
    ldb_close(db);
}


/* ---- derived equalities over mixed types -------------------------------------------------- */

/* Columns of every kind, so that equalities under different affinities
 * and collations meet: only a class compared one way may be made
 * transitive (a.x = b.y AND b.y = c.z giving a.x = c.z, or a constant
 * reaching every column of the class). */
static const char *const mixed_cols[] = { "i", "t", "n", "r", "u" };
static const char *const mixed_vals[] = { "NULL", "1",   "2",    "'1'", "'2'", "'a'",
                                          "'A'",  "1.0", "2.5", "' 1'", "'1.0'" };
#define NVALS (sizeof mixed_vals / sizeof *mixed_vals)
/* the values an INTEGER column accepts (its first 7) and a REAL column
 * (all): livedb refuses text that is no number there, and a fraction in
 * an INTEGER column */
static const int numeric_vals[] = { 0, 1, 2, 3, 4, 7, 10, 8 };

static void make_mixed_tables(rng *r, int n, ldb *db, sqlite3 *lite)
{
    for (int t = 0; t < n; t++) {
        char sql[2048];
        snprintf(sql, sizeof sql,
                 "CREATE TABLE m%d(i INTEGER, t TEXT, n TEXT COLLATE NOCASE, r REAL, u)", t);
        both_exec(db, lite, sql);
        for (int k = 0; k < 2; k++)
            if (rng_chance(r, 1, 2)) {
                const char *c = mixed_cols[rng_below(r, 5)];
                snprintf(sql, sizeof sql, "CREATE INDEX m%d_%d ON m%d(%s%s)", t, k, t, c,
                         rng_chance(r, 1, 3) ? " COLLATE NOCASE" : "");
                both_exec(db, lite, sql);
            }
        int len = snprintf(sql, sizeof sql, "INSERT INTO m%d VALUES ", t);
        int rows = 3 + (int)rng_below(r, 10);
        for (int i = 0; i < rows; i++) {
            len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(", i ? ", " : "");
            for (int c = 0; c < 5; c++) {
                size_t v = c == 0   ? (size_t)numeric_vals[rng_below(r, 7)]
                           : c == 3 ? (size_t)numeric_vals[rng_below(r, 8)]
                                    : rng_below(r, NVALS);
                len += snprintf(sql + len, sizeof sql - (size_t)len, "%s%s", c ? ", " : "",
                                mixed_vals[v]);
            }
            len += snprintf(sql + len, sizeof sql - (size_t)len, ")");
        }
        both_exec(db, lite, sql);
    }
}

static void mixed_column(rng *r, int n, strbuf *q)
{
    sb_printf(q, "m%d.%s", (int)rng_below(r, (uint64_t)n), mixed_cols[rng_below(r, 5)]);
}

static void mixed_equality(rng *r, int n, strbuf *q)
{
    const char *c = mixed_cols[rng_below(r, 5)];
    int a = (int)rng_below(r, (uint64_t)n), b = (int)rng_below(r, (uint64_t)n);
    sb_printf(q, "m%d.%s = m%d.%s", a, c, b,
              rng_chance(r, 1, 2) ? c : mixed_cols[rng_below(r, 5)]);
}

static void mixed_comparison(rng *r, int n, strbuf *q)
{
    mixed_column(r, n, q);
    static const char *const ops[] = { "=", "<", ">=" };
    sb_printf(q, " %s %s", ops[rng_below(r, 3)], mixed_vals[1 + rng_below(r, NVALS - 1)]);
}

/* (e AND x) OR (e AND y) [OR e]: an equality every branch repeats, which
 * the planner takes out of the OR. */
static void mixed_or(rng *r, int n, strbuf *q)
{
    strbuf e = STRBUF_INIT;
    mixed_equality(r, n, &e);
    int branches = 2 + (int)rng_below(r, 2);
    sb_printf(q, "(");
    for (int b = 0; b < branches; b++) {
        sb_printf(q, "%s(%s", b ? " OR " : "", sb_str(&e));
        if (b < 2 || rng_chance(r, 1, 2)) {
            sb_printf(q, " AND ");
            mixed_comparison(r, n, q);
        }
        sb_printf(q, ")");
    }
    sb_printf(q, ")");
    sb_free(&e);
}

/* Chains of equalities between random columns (often one column name,
 * so classes form), constants on some, ranges, ORs with a common term. */
static void mixed_where(rng *r, int n, strbuf *q)
{
    int nconds = 2 + (int)rng_below(r, (uint64_t)n * 2);
    for (int k = 0; k < nconds; k++) {
        sb_printf(q, "%s", k ? " AND " : " WHERE ");
        int kind = (int)rng_below(r, 7);
        if (kind <= 3)
            mixed_equality(r, n, q);
        else if (kind <= 5)
            mixed_comparison(r, n, q);
        else
            mixed_or(r, n, q);
    }
}

static void derived_equalities(void)
{
    uint64_t seed = test_seed();
    int rounds = 400 * test_scale();
    for (int k = 0; k < rounds; k++) {
        rng r;
        rng_seed(&r, seed + (uint64_t)k);
        int n = 2 + (int)rng_below(&r, 5);
        ldb *db;
        sqlite3 *lite;
        CHECK_INT(ldb_open(NULL, &db), LDB_OK);
        CHECK_INT(sqlite3_open(":memory:", &lite), SQLITE_OK);
        make_mixed_tables(&r, n, db, lite);
        for (int qn = 0; qn < 4; qn++) {
            strbuf q = STRBUF_INIT;
            sb_printf(&q, "SELECT ");
            for (int c = 0; c < 3; c++) {
                sb_printf(&q, "%s", c ? ", " : "");
                mixed_column(&r, n, &q);
            }
            sb_printf(&q, " FROM ");
            int first = (int)rng_below(&r, (uint64_t)n);
            for (int t = 0; t < n; t++)
                sb_printf(&q, "%sm%d", t ? ", " : "", (first + t) % n);
            if (rng_chance(&r, 1, 4))
                sb_printf(&q, " LEFT JOIN m0 AS o ON o.u = m%d.u AND o.i = 1", first);
            mixed_where(&r, n, &q);
            check_query(db, lite, sb_str(&q), seed + (uint64_t)k);
            sb_free(&q);
        }
        sqlite3_close(lite);
        ldb_close(db);
    }
}

/* PRAGMA join_memory_limit bounds a hash join's build side: past it the
 * statement fails with a clear error and leaves nothing behind; a join
 * that looks its side up builds nothing; 0 lifts the bound. */
static void join_memory_limit(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    CHECK_INT(ldb_exec(db,
                       "CREATE TABLE a(x INTEGER PRIMARY KEY, y INTEGER);"
                       "CREATE TABLE b(x INTEGER, y INTEGER)",
                       NULL, NULL),
              LDB_OK);
    for (int i = 0; i < 200; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT INTO a VALUES (%d, %d); INSERT INTO b VALUES (%d, %d)", i,
                 i % 7, i, i % 5);
        CHECK_INT(ldb_exec(db, sql, NULL, NULL), LDB_OK);
    }
    static const char hashed[] = "SELECT count(*) FROM a, b WHERE a.y = b.y";
    cmp_result r = { 0 };
    CHECK_INT(ldb_exec(db, "PRAGMA join_memory_limit = 4096", NULL, NULL), LDB_OK);
    CHECK_INT(ldb_exec(db, hashed, NULL, NULL), LDB_ERROR);
    CHECKF(strstr(ldb_errmsg(db), "join_memory_limit"), "%s", ldb_errmsg(db));
    CHECK_INT(ldb_exec(db, "CREATE TABLE c AS SELECT a.x FROM a, b WHERE a.y = b.y", NULL, NULL),
              LDB_ERROR);
    CHECK_INT(ldb_exec(db, "SELECT * FROM c", NULL, NULL), LDB_ERROR); /* not created */
    cmp_run_livedb(db, "SELECT count(*) FROM b JOIN a ON a.x = b.x", &r); /* looked up */
    CHECKF(r.ok && r.n == 1 && strcmp(r.rows[0], "i:200") == 0, "%s", r.ok ? r.rows[0] : r.msg);
    cmp_result_free(&r);
    CHECK_INT(ldb_exec(db, "PRAGMA join_memory_limit = 0", NULL, NULL), LDB_OK);
    cmp_run_livedb(db, hashed, &r);
    /* 200 * 200 pairs, y values 0..6 against 0..4 */
    int want = 0;
    for (int i = 0; i < 200; i++)
        for (int k = 0; k < 200; k++)
            want += i % 7 == k % 5;
    char w[32];
    snprintf(w, sizeof w, "i:%d", want);
    CHECKF(r.ok && r.n == 1 && strcmp(r.rows[0], w) == 0, "%s, want %s", r.ok ? r.rows[0] : r.msg,
           w);
    cmp_result_free(&r);
    ldb_close(db);
}

/* The estimate on the line of a node whose text starts with what. */
static double estimate_of(const char *plan, const char *what)
{
    const char *at = strstr(plan, what);
    const char *est = at ? strstr(at, "(~") : NULL;
    return est ? atof(est + 2) : -1;
}

/* Statistics read at planning time: an indexed column's constant and
 * range counted exactly, distinct values sampled (a foreign-key join as
 * large as its referencing side; a self-join on k as n * n / distinct),
 * and both following the data after writes. */
static void statistics_follow_data(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    CHECK_INT(ldb_exec(db,
                       "CREATE TABLE d(id INTEGER PRIMARY KEY, v INTEGER);"
                       "CREATE TABLE f(id INTEGER PRIMARY KEY, k INTEGER, w INTEGER);"
                       "CREATE INDEX f_k ON f(k); CREATE INDEX f_w ON f(w)",
                       NULL, NULL),
              LDB_OK);
    for (int i = 0; i < 2000; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "INSERT INTO f VALUES (%d, %d, %d)", i, i % 50, i);
        CHECK_INT(ldb_exec(db, sql, NULL, NULL), LDB_OK);
        snprintf(sql, sizeof sql, "INSERT INTO d VALUES (%d, %d)", i, i);
        CHECK_INT(i >= 50 || ldb_exec(db, sql, NULL, NULL) == LDB_OK, 1);
    }
    strbuf plan = STRBUF_INIT;
    explain(db, "QUERY PLAN SELECT * FROM f WHERE k = 7", &plan);
    CHECKF(estimate_of(sb_str(&plan), "FILTER") == 40, "%s", sb_str(&plan));
    sb_truncate(&plan, 0);
    explain(db, "QUERY PLAN SELECT * FROM f WHERE w < 300", &plan);
    CHECKF(estimate_of(sb_str(&plan), "FILTER") == 300, "%s", sb_str(&plan));
    sb_truncate(&plan, 0);
    explain(db, "QUERY PLAN SELECT * FROM f JOIN d ON d.id = f.k", &plan);
    double j = estimate_of(sb_str(&plan), "INNER JOIN");
    CHECKF(j >= 1500 && j <= 2500, "%s", sb_str(&plan));
    sb_truncate(&plan, 0);
    explain(db, "QUERY PLAN SELECT * FROM f AS a JOIN f AS b ON a.k = b.k", &plan);
    j = estimate_of(sb_str(&plan), "INNER JOIN");
    CHECKF(j >= 60000 && j <= 100000, "%s", sb_str(&plan)); /* 2000 * 2000 / 50 */
    sb_truncate(&plan, 0);
    /* an ordered index is sought per probe row only while that costs less
     * than hashing its table */
    explain(db, "SELECT * FROM d JOIN f ON f.w = d.v", &plan);
    CHECKF(strstr(sb_str(&plan), "lookup right by INDEX f_w"), "%s", sb_str(&plan));
    sb_truncate(&plan, 0);
    explain(db, "SELECT * FROM f AS a JOIN f AS b ON b.w = a.id + 0", &plan);
    CHECKF(!strstr(sb_str(&plan), "lookup") && strstr(sb_str(&plan), "hash"), "%s",
           sb_str(&plan));
    sb_truncate(&plan, 0);
    /* every k becomes 7: the count follows at once, the sample once an
     * eighth of the index changed */
    CHECK_INT(ldb_exec(db, "UPDATE f SET k = 7", NULL, NULL), LDB_OK);
    explain(db, "QUERY PLAN SELECT * FROM f WHERE k = 7", &plan);
    CHECKF(estimate_of(sb_str(&plan), "FILTER") == 2000, "%s", sb_str(&plan));
    sb_truncate(&plan, 0);
    explain(db, "QUERY PLAN SELECT * FROM f AS a JOIN f AS b ON a.k = b.k", &plan);
    j = estimate_of(sb_str(&plan), "INNER JOIN");
    CHECKF(j >= 3000000, "%s", sb_str(&plan)); /* one distinct value */
    sb_truncate(&plan, 0);
    /* a tenth of d changes: the sample is kept until ANALYZE drops it */
    static const char self[] = "QUERY PLAN SELECT * FROM d AS a JOIN d AS b ON a.v = b.v";
    explain(db, self, &plan);
    CHECKF(estimate_of(sb_str(&plan), "INNER JOIN") == 50, "%s", sb_str(&plan));
    sb_truncate(&plan, 0);
    CHECK_INT(ldb_exec(db, "UPDATE d SET v = 1 WHERE id < 5", NULL, NULL), LDB_OK);
    explain(db, self, &plan);
    CHECKF(estimate_of(sb_str(&plan), "INNER JOIN") == 50, "%s", sb_str(&plan));
    sb_truncate(&plan, 0);
    CHECK_INT(ldb_exec(db, "ANALYZE d", NULL, NULL), LDB_OK);
    explain(db, self, &plan);
    CHECKF(estimate_of(sb_str(&plan), "INNER JOIN") == 54, "%s", sb_str(&plan)); /* 2500 / 46 */
    CHECK_INT(ldb_exec(db, "ANALYZE; ANALYZE f_k", NULL, NULL), LDB_OK);
    CHECK_INT(ldb_exec(db, "ANALYZE nothing", NULL, NULL), LDB_ERROR);
    CHECKF(strstr(ldb_errmsg(db), "no such table or index: nothing"), "%s", ldb_errmsg(db));
    sb_free(&plan);
    ldb_close(db);
}

/* ---- live queries and views take the same order --------------------------------------------- */

static int collect_row(void *ctx, const ldb_row *row)
{
    strbuf sb = STRBUF_INIT;
    cmp_put_livedb_row(&sb, row);
    cmp_result_add(ctx, &sb);
    sb_free(&sb);
    return 0;
}

/* One random write to a random table, in both engines. */
static void random_write(struct round *rd, ldb *db, sqlite3 *lite)
{
    char sql[160];
    int t = (int)rng_below(&rd->r, (uint64_t)rd->n), a = (int)rng_below(&rd->r, 26);
    int b = 1 + (int)rng_below(&rd->r, 25), v = (int)rng_below(&rd->r, 100);
    switch (rng_below(&rd->r, 3)) {
    case 0: snprintf(sql, sizeof sql, "INSERT INTO t%d VALUES (%d, %d, %d)", t, a, b, v); break;
    case 1: snprintf(sql, sizeof sql, "UPDATE t%d SET a = %d WHERE b = %d", t, a, b); break;
    default: snprintf(sql, sizeof sql, "DELETE FROM t%d WHERE v < %d AND b = %d", t, v, b); break;
    }
    both_exec(db, lite, sql);
}

/* A live query and a materialized view over a select5-shaped join in a
 * scrambled FROM order (planned into a new order, with the PROJECT that
 * restores the columns) stay equal to SQLite's answer after every write. */
static void live_and_view_orders(void)
{
    uint64_t seed = test_seed();
    int rounds = 30 * test_scale();
    for (int k = 0; k < rounds; k++) {
        struct round rd = { .query = STRBUF_INIT };
        rng_seed(&rd.r, seed + (uint64_t)k);
        rd.n = 3 + (int)rng_below(&rd.r, 6);
        ldb *db;
        sqlite3 *lite;
        CHECK_INT(ldb_open(NULL, &db), LDB_OK);
        CHECK_INT(sqlite3_open(":memory:", &lite), SQLITE_OK);
        make_tables(&rd, db, lite);
        build_query(&rd, (int)rng_below(&rd.r, 3), false);
        ldb_live *q;
        CHECKF(ldb_live_open(db, sb_str(&rd.query), NULL, NULL, &q) == LDB_OK, "%s: %s",
               sb_str(&rd.query), ldb_errmsg(db));
        strbuf mv = STRBUF_INIT;
        sb_printf(&mv, "CREATE MATERIALIZED VIEW mv AS %s", sb_str(&rd.query));
        CHECKF(ldb_exec(db, sb_str(&mv), NULL, NULL) == LDB_OK, "%s", ldb_errmsg(db));
        for (int w = 0; w < 30; w++) {
            random_write(&rd, db, lite);
            cmp_result live = { .ok = 1 }, view = { 0 }, want = { 0 };
            CHECK_INT(ldb_live_read(q, collect_row, &live), LDB_OK);
            cmp_run_livedb(db, "SELECT * FROM mv", &view);
            cmp_run_sqlite(lite, sb_str(&rd.query), &want);
            CHECKF(cmp_same_rows(&live, &want, false), "seed %" PRIu64 " write %d: %s: live %s, SQLite %s",
                   seed + (uint64_t)k, w, sb_str(&rd.query), live.n ? live.rows[0] : "-",
                   want.n ? want.rows[0] : "-");
            CHECKF(cmp_same_rows(&view, &want, false), "seed %" PRIu64 " write %d: view %s",
                   seed + (uint64_t)k, w, view.n ? view.rows[0] : "-");
            cmp_result_free(&live);
            cmp_result_free(&view);
            cmp_result_free(&want);
        }
        ldb_live_close(q);
        sb_free(&mv);
        sb_free(&rd.query);
        sqlite3_close(lite);
        ldb_close(db);
    }
}

TEST_MAIN(T(select5_shapes), T(live_and_view_orders), T(statistics_follow_data), T(join_memory_limit), T(derived_equalities), T(lookup_joins), T(connected_order_kept), T(query_plan_estimates))
