/*
 * test_mv_oracle.c - the maintenance-equivalence harness: materialized
 * views of every body shape against their bodies evaluated from scratch.
 *
 * A zoo of views (filter + project, expressions, bags, GROUP BY with
 * every aggregate, HAVING, scalar aggregates, 1:1, fanning, LEFT, FULL and
 * three-table joins, DISTINCT, UNION, UNION ALL, EXCEPT, INTERSECT,
 * correlated and EXISTS/IN subqueries, ORDER BY ... LIMIT, views over
 * views three deep) lives over three tables. A random history of
 * statements (multi-row inserts, updates of keys and non-keys, deletes,
 * statements that fail part-way, transactions, savepoints with ROLLBACK TO
 * and RELEASE, ROLLBACK, index creation and drops, a view dropped and
 * rolled back) runs, and after every statement and every transaction
 * statement each view's SELECT * must equal its body's rows, byte for
 * byte (values rendered with their types), as multisets.
 */
#include "mv_util.h"

#include <stdbool.h>

static const char *schema =
    "CREATE TABLE t1(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER, r REAL, s TEXT COLLATE NOCASE);"
    "CREATE INDEX t1_gx ON t1(g, x);"
    "CREATE TABLE t2(k INTEGER PRIMARY KEY, t1id INTEGER, v INTEGER, s TEXT);"
    "CREATE INDEX t2_t1 ON t2(t1id) USING HASH;"
    "CREATE TABLE t3(k INTEGER, w INTEGER);";


struct view {
    const char *name, *body;
};

static const struct view zoo[] = {
    { "v_proj", "SELECT id, x, s FROM t1 WHERE x > 3" },
    { "v_expr", "SELECT id, x * 2 + 1 AS e, upper(s) AS u, r / 2 AS h, coalesce(s, 'none') AS c "
                "FROM t1 WHERE g IS NOT NULL" },
    { "v_bag", "SELECT g, s FROM t1" },
    { "v_aggd", "SELECT g, count(*) AS n, count(x) AS nx, sum(x) AS sx, avg(x) AS ax, "
                "total(x) AS tx, min(x) AS mn, max(x) AS mx FROM t1 GROUP BY g" },
    { "v_aggw", "SELECT sum(x) * 2 AS s2, g FROM t1 WHERE s IS NOT NULL GROUP BY g" },
    { "v_aggall", "SELECT g, s, count(*) AS n, sum(r) AS sr, total(r) AS tr, avg(r) AS ar, "
                  "min(s) AS ms, max(r) AS mr, group_concat(s) AS gc, count(DISTINCT x) AS dx "
                  "FROM t1 GROUP BY g, s" },
    { "v_having", "SELECT g, sum(x) AS sx FROM t1 GROUP BY g HAVING count(*) > 1" },
    { "v_scalar", "SELECT count(*) AS n, sum(x) AS sx, max(r) AS mr FROM t1" },
    { "v_scalard", "SELECT count(*) AS n, sum(x) AS sx, avg(x) AS ax FROM t1 WHERE x > 0" },
    { "v_join11", "SELECT t2.k, t2.v, t1.s AS s1 FROM t2 JOIN t1 ON t1.id = t2.t1id" },
    { "v_fan", "SELECT t1.id, t1.g, t2.k FROM t1 JOIN t2 ON t2.t1id = t1.id WHERE t2.v > 0" },
    { "v_left", "SELECT t1.id, t2.v FROM t1 LEFT JOIN t2 ON t2.t1id = t1.id" },
    { "v_full", "SELECT t1.id AS a, t3.w FROM t1 FULL JOIN t3 ON t3.k = t1.g" },
    { "v_three", "SELECT t1.id, t2.k, t3.w FROM t1 JOIN t2 ON t2.t1id = t1.id "
                 "JOIN t3 ON t3.k = t2.v" },
    { "v_distinct", "SELECT DISTINCT g, s FROM t1" },
    { "v_union", "SELECT g FROM t1 UNION SELECT k FROM t3" },
    { "v_unionall", "SELECT g, x FROM t1 UNION ALL SELECT v, t1id FROM t2" },
    { "v_except", "SELECT g FROM t1 EXCEPT SELECT k FROM t3" },
    { "v_intersect", "SELECT g FROM t1 INTERSECT SELECT v FROM t2" },
    { "v_corr", "SELECT id, (SELECT count(*) FROM t2 WHERE t2.t1id = t1.id) AS n FROM t1" },
    { "v_exists", "SELECT id FROM t1 WHERE EXISTS "
                  "(SELECT 1 FROM t2 WHERE t2.t1id = t1.id AND t2.v > 2)" },
    { "v_corrtop", "SELECT id, (SELECT k FROM t2 WHERE t2.t1id = t1.id ORDER BY v DESC, k "
                   "LIMIT 1) AS top FROM t1" },
    { "v_in", "SELECT k FROM t2 WHERE v IN (SELECT g FROM t1 WHERE x > 0)" },
    { "v_topk", "SELECT id, x FROM t1 ORDER BY x DESC, id LIMIT 4" },
    { "m1", "SELECT g, sum(x) AS sx, count(*) AS c FROM t1 GROUP BY g" },
    { "m2", "SELECT m1.g, m1.sx, t3.w FROM m1 JOIN t3 ON t3.k = m1.g" },
    { "m3", "SELECT count(*) AS n, sum(w) AS sw, max(sx) AS mx FROM m2" },
    { "m4", "SELECT g, c FROM m1 WHERE c > 1" },
    { "m5", "SELECT c, count(*) AS k FROM m1 GROUP BY c" },
    { "m6", "SELECT id, g, x FROM t1 WHERE x IS NOT NULL" },
    { "m7", "SELECT g, count(*) AS n, sum(x) AS sx, max(x) AS mx FROM m6 GROUP BY g" },
    { "m8", "SELECT m7.g, m7.n, v_aggd.ax FROM m7 LEFT JOIN v_aggd ON v_aggd.g = m7.g" },
};

#define NVIEWS (sizeof zoo / sizeof zoo[0])

/* Bodies the cheap arms take, made again as "df_<name>" with PRAGMA
 * materialized_view_cheap_arms = OFF: the dataflow arm on the same
 * history. */
static const char *const twins[] = { "v_proj", "v_expr", "v_bag", "v_aggd", "v_aggw",
                                     "v_scalard", "m4" };

#define NTWINS (sizeof twins / sizeof twins[0])

static const char *body_of(const char *name)
{
    for (size_t i = 0; i < NVIEWS; i++)
        if (strcmp(zoo[i].name, name) == 0)
            return zoo[i].body;
    return NULL;
}

struct world {
    ldb *db;
    rng r;
    bool v_proj_dropped;
    const char *last; /* the statement just run, for messages */
};

static void check_one(struct world *w, const char *name, const char *body)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", name);
    static char want[MVT_ROWS * 32];
    snprintf(want, sizeof want, "%s", Q(w->db, body));
    const char *got = Q(w->db, sql);
    CHECKF(strcmp(want, got) == 0, "after %s\n  view %s = %s\n  body:\n%s  view:\n%s",
           w->last, name, body, want, got);
}

static void check_all(struct world *w)
{
    for (size_t i = 0; i < NVIEWS; i++)
        if (!w->v_proj_dropped || strcmp(zoo[i].name, "v_proj") != 0)
            check_one(w, zoo[i].name, zoo[i].body);
    for (size_t i = 0; i < NTWINS; i++) {
        char name[64];
        snprintf(name, sizeof name, "df_%s", twins[i]);
        check_one(w, name, body_of(twins[i]));
    }
}

/* ---- statements ---------------------------------------------------------------- */

static void ival(rng *r, char *buf, size_t n, int lo, int hi)
{
    if (rng_chance(r, 1, 7))
        snprintf(buf, n, "NULL");
    else
        snprintf(buf, n, "%d", (int)rng_range(r, lo, hi));
}

static void rval(rng *r, char *buf, size_t n)
{
    static const char *reals[] = { "0.0", "-0.0", "1.5", "2.0", "-1.25", "1e300", "NULL" };
    snprintf(buf, n, "%s", reals[rng_below(r, 7)]);
}

static void sval(rng *r, char *buf, size_t n)
{
    static const char *texts[] = { "'a'", "'b'", "'B'", "'c '", "''", "NULL" };
    snprintf(buf, n, "%s", texts[rng_below(r, 6)]);
}

static void t1_row(rng *r, char *buf, size_t n, int id)
{
    char g[16], x[16], rr[16], s[16];
    ival(r, g, sizeof g, 0, 4);
    ival(r, x, sizeof x, -5, 9);
    rval(r, rr, sizeof rr);
    sval(r, s, sizeof s);
    snprintf(buf, n, "(%d, %s, %s, %s, %s)", id, g, x, rr, s);
}

static void gen_insert(rng *r, char *sql, size_t n)
{
    int table = (int)rng_below(r, 3), rows = (int)rng_range(r, 1, 3);
    size_t len = 0;
    if (table == 0)
        len = (size_t)snprintf(sql, n, "INSERT OR IGNORE INTO t1 VALUES ");
    else if (table == 1)
        len = (size_t)snprintf(sql, n, "INSERT OR IGNORE INTO t2 VALUES ");
    else
        len = (size_t)snprintf(sql, n, "INSERT INTO t3 VALUES ");
    for (int i = 0; i < rows; i++) {
        char row[96], a[16], b[16], c[16];
        if (table == 0) {
            t1_row(r, row, sizeof row, (int)rng_range(r, 1, 30));
        } else if (table == 1) {
            ival(r, a, sizeof a, 1, 30);
            ival(r, b, sizeof b, -2, 5);
            sval(r, c, sizeof c);
            snprintf(row, sizeof row, "(%d, %s, %s, %s)", (int)rng_range(r, 1, 40), a, b, c);
        } else {
            ival(r, a, sizeof a, 0, 5);
            ival(r, b, sizeof b, -3, 9);
            snprintf(row, sizeof row, "(%s, %s)", a, b);
        }
        len += (size_t)snprintf(sql + len, n - len, "%s%s", i ? ", " : "", row);
    }
}

static void gen_update(rng *r, char *sql, size_t n)
{
    char a[16], b[16];
    ival(r, a, sizeof a, -5, 9);
    switch (rng_below(r, 9)) {
    case 0: snprintf(sql, n, "UPDATE t1 SET x = %s WHERE id = %d", a, (int)rng_range(r, 1, 30)); break;
    case 1: snprintf(sql, n, "UPDATE t1 SET g = (g + 1) %% 5 WHERE id %% 3 = %d", (int)rng_below(r, 3)); break;
    case 2: sval(r, b, sizeof b); snprintf(sql, n, "UPDATE t1 SET s = %s WHERE g = %d", b, (int)rng_below(r, 5)); break;
    case 3: rval(r, b, sizeof b); snprintf(sql, n, "UPDATE t1 SET r = %s WHERE x > %d", b, (int)rng_range(r, -5, 9)); break;
    case 4: snprintf(sql, n, "UPDATE OR IGNORE t1 SET id = id + 31 WHERE id = %d", (int)rng_range(r, 1, 30)); break;
    case 5: snprintf(sql, n, "UPDATE t2 SET v = %s WHERE k %% 4 = %d", a, (int)rng_below(r, 4)); break;
    case 6: snprintf(sql, n, "UPDATE t2 SET t1id = %d WHERE k = %d", (int)rng_range(r, 1, 30), (int)rng_range(r, 1, 40)); break;
    case 7: snprintf(sql, n, "UPDATE t3 SET w = w + 1 WHERE k = %d", (int)rng_below(r, 6)); break;
    default: snprintf(sql, n, "UPDATE t1 SET x = x + 1 WHERE g = %d", (int)rng_below(r, 5)); break;
    }
}

static void gen_delete(rng *r, char *sql, size_t n)
{
    switch (rng_below(r, 4)) {
    case 0: snprintf(sql, n, "DELETE FROM t1 WHERE id = %d", (int)rng_range(r, 1, 61)); break;
    case 1: snprintf(sql, n, "DELETE FROM t1 WHERE x > %d", (int)rng_range(r, 5, 9)); break;
    case 2: snprintf(sql, n, "DELETE FROM t2 WHERE t1id = %d", (int)rng_range(r, 1, 30)); break;
    default: snprintf(sql, n, "DELETE FROM t3 WHERE w < %d", (int)rng_range(r, -3, 3)); break;
    }
}

/* A statement that fails after writing: its second row hits a key the
 * first one made. */
static void gen_failing(rng *r, char *sql, size_t n)
{
    char a[96], b[96];
    int id = (int)rng_range(r, 100, 140);
    t1_row(r, a, sizeof a, id);
    t1_row(r, b, sizeof b, id);
    snprintf(sql, n, "INSERT INTO t1 VALUES %s, %s", a, b);
}

static void run(struct world *w, const char *sql, bool must_fail)
{
    w->last = sql;
    int rc = ldb_exec(w->db, sql, NULL, NULL);
    if (must_fail)
        CHECKF(rc != LDB_OK, "%s: should have failed", sql);
    else
        CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(w->db));
    check_all(w);
}

static void random_statement(struct world *w)
{
    char sql[600];
    int k = (int)rng_below(&w->r, 20);
    if (k < 7)
        gen_insert(&w->r, sql, sizeof sql);
    else if (k < 13)
        gen_update(&w->r, sql, sizeof sql);
    else if (k < 17)
        gen_delete(&w->r, sql, sizeof sql);
    else {
        gen_failing(&w->r, sql, sizeof sql);
        run(w, sql, true);
        return;
    }
    run(w, sql, false);
}

static void ddl(struct world *w)
{
    static const char *const forms[] = {
        "CREATE INDEX IF NOT EXISTS t1_x ON t1(x)", "DROP INDEX IF EXISTS t1_x",
        "DROP INDEX IF EXISTS t2_t1", "CREATE INDEX IF NOT EXISTS t2_t1 ON t2(t1id) USING HASH",
        "DROP INDEX IF EXISTS t1_gx", "CREATE INDEX IF NOT EXISTS t1_gx ON t1(g, x)",
    };
    run(w, forms[rng_below(&w->r, 6)], false);
}

/* A transaction, with a savepoint (sometimes dropping a view inside it)
 * rolled back to or released; a transaction that still has the view
 * dropped at its end rolls back, so that the zoo stays whole. */
static void transaction(struct world *w)
{
    run(w, "BEGIN", false);
    bool sp = false, dropped_in_sp = false;
    int n = (int)rng_range(&w->r, 1, 6);
    for (int i = 0; i < n; i++) {
        if (!sp && rng_chance(&w->r, 1, 3)) {
            run(w, "SAVEPOINT sp", false);
            sp = true;
            if (!w->v_proj_dropped && rng_chance(&w->r, 1, 4)) {
                w->v_proj_dropped = dropped_in_sp = true;
                run(w, "DROP MATERIALIZED VIEW v_proj", false);
            }
        }
        random_statement(w);
        if (sp && rng_chance(&w->r, 1, 3)) {
            bool back = rng_chance(&w->r, 1, 2);
            if (back && dropped_in_sp)
                w->v_proj_dropped = false;
            run(w, back ? "ROLLBACK TO sp" : "RELEASE sp", false);
            sp = dropped_in_sp = false;
        }
    }
    bool commit = rng_chance(&w->r, 1, 2) && !w->v_proj_dropped;
    w->v_proj_dropped = false;
    run(w, commit ? "COMMIT" : "ROLLBACK", false);
}

static void setup(struct world *w)
{
    CHECK(ldb_open(NULL, &w->db) == LDB_OK);
    CHECK(ldb_exec(w->db, schema, NULL, NULL) == LDB_OK);
    for (int i = 1; i <= 12; i++) {
        char sql[200];
        t1_row(&w->r, sql, sizeof sql, i);
        char ins[240];
        snprintf(ins, sizeof ins, "INSERT INTO t1 VALUES %s", sql);
        CHECK(ldb_exec(w->db, ins, NULL, NULL) == LDB_OK);
    }
    for (size_t i = 0; i < NVIEWS; i++) {
        char sql[600];
        snprintf(sql, sizeof sql, "CREATE MATERIALIZED VIEW %s AS %s", zoo[i].name, zoo[i].body);
        CHECKF(ldb_exec(w->db, sql, NULL, NULL) == LDB_OK, "%s: %s", sql, ldb_errmsg(w->db));
        if (strcmp(zoo[i].name, "m6") == 0) /* m7 then takes the aggregate arm, max included */
            EXEC(w->db, "CREATE INDEX m6_g ON m6(g)");
    }
    CHECK_STR(mvt_strategy(w->db, "m7"), "aggregate");
    CHECK_STR(mvt_strategy(w->db, "v_corrtop"), "dataflow"); /* not the rebuild floor */
    EXEC(w->db, "PRAGMA materialized_view_cheap_arms = OFF");
    for (size_t i = 0; i < NTWINS; i++) {
        char sql[600], name[64];
        snprintf(name, sizeof name, "df_%s", twins[i]);
        snprintf(sql, sizeof sql, "CREATE MATERIALIZED VIEW %s AS %s", name, body_of(twins[i]));
        EXEC(w->db, sql);
        CHECK_STR(mvt_strategy(w->db, name), "dataflow");
    }
    EXEC(w->db, "PRAGMA materialized_view_cheap_arms = ON");
    w->last = "setup";
    check_all(w);
}

static void history(uint64_t seed, int steps)
{
    struct world w;
    memset(&w, 0, sizeof w);
    rng_seed(&w.r, seed);
    setup(&w);
    for (int i = 0; i < steps; i++) {
        int k = (int)rng_below(&w.r, 10);
        if (k < 6)
            random_statement(&w);
        else if (k < 9)
            transaction(&w);
        else
            ddl(&w);
    }
    ldb_close(w.db);
}

static void oracle_histories(void)
{
    uint64_t seed = test_seed();
    int runs = 4 * test_scale();
    for (int i = 0; i < runs; i++)
        history(seed + (uint64_t)i, 100);
}

TEST_MAIN(T(oracle_histories))
