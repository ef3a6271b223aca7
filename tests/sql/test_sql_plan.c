/*
 * test_sql_plan.c - the plan's contract for the layers that consume it
 * (unique keys, lineage, determinism, the expression evaluator used on
 * its own) and seeded property tests of the planner's choices: index
 * access paths, hash versus nested-loop joins and top-k sorts must give
 * the same rows as the plain plans.
 */
#include "test_sql_util.h"

#include "api/db_internal.h"
#include "sql/expr.h"
#include "sql/plan.h"

#include <stdlib.h>

/* ---- plan questions ------------------------------------------------------------------ */

static ldb_stmt *prepare(ldb *db, const char *sql)
{
    ldb_stmt *s = NULL;
    CHECKF(ldb_prepare(db, sql, -1, &s, NULL) == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    return s;
}

/* The unique key of a query's plan as "c0,c1" or "none". */
static const char *key_of(ldb *db, const char *sql)
{
    static char buf[128];
    ldb_stmt *s = prepare(db, sql);
    const struct plan *p = s->bound.u.select;
    uint32_t key[64], n;
    if (!plan_unique_key(p, key, &n)) {
        snprintf(buf, sizeof buf, "none");
    } else {
        buf[0] = '\0';
        for (uint32_t i = 0; i < n; i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%u", i ? "," : "", key[i]);
    }
    ldb_finalize(s);
    return buf;
}

static void unique_keys(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)");
    EXEC(db, "CREATE TABLE u(x, y, PRIMARY KEY (x, y))");
    EXEC(db, "CREATE TABLE r(k INTEGER PRIMARY KEY, v TEXT)");
    CHECK_STR(key_of(db, "SELECT a, id FROM t WHERE a > 1 ORDER BY a LIMIT 5"), "1");
    CHECK_STR(key_of(db, "SELECT a, b FROM t"), "none");
    CHECK_STR(key_of(db, "SELECT y, x, 1 FROM u"), "1,0");
    CHECK_STR(key_of(db, "SELECT t.id, u.x, u.y FROM t, u"), "0,1,2");
    /* N:1: each t row meets at most one r row */
    CHECK_STR(key_of(db, "SELECT t.id, r.v FROM t JOIN r ON t.a = r.k"), "0");
    CHECK_STR(key_of(db, "SELECT t.id, r.v FROM t LEFT JOIN r ON t.a = r.k"), "0");
    CHECK_STR(key_of(db, "SELECT a, count(*) FROM t GROUP BY a"), "0");
    CHECK_STR(key_of(db, "SELECT count(*) FROM t"), "");
    CHECK_STR(key_of(db, "SELECT DISTINCT a, b FROM t"), "0,1");
    CHECK_STR(key_of(db, "SELECT a FROM t UNION SELECT x FROM u"), "0");
    CHECK_STR(key_of(db, "SELECT a FROM t UNION ALL SELECT x FROM u"), "none");
    ldb_close(db);
}

static void lineage_and_determinism(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)");
    EXEC(db, "CREATE TABLE r(k INTEGER PRIMARY KEY, v TEXT)");
    ldb_stmt *s = prepare(db, "SELECT b, a + 1, r.v, id FROM t LEFT JOIN r ON t.a = r.k "
                              "WHERE id > 0");
    const struct plan *p = s->bound.u.select;
    struct table *tab;
    uint32_t col;
    CHECK(plan_lineage(p, 0, &tab, &col) && strcmp(table_name(tab), "t") == 0 && col == 2);
    CHECK(!plan_lineage(p, 1, &tab, &col));
    CHECK(plan_lineage(p, 2, &tab, &col) && strcmp(table_name(tab), "r") == 0 && col == 1);
    CHECK(plan_lineage(p, 3, &tab, &col) && col == 0);
    CHECK(!plan_is_nondeterministic(p));
    ldb_finalize(s);
    s = prepare(db, "SELECT id FROM t WHERE a IN (SELECT k FROM r WHERE random() > 0)");
    CHECK(plan_is_nondeterministic(s->bound.u.select));
    ldb_finalize(s);
    ldb_close(db);
}

/* The evaluator on its own: a row of values, a capture, a parameter. */
static void evaluator_alone(void)
{
    ldb *db = sqlt_open();
    EXEC(db, "CREATE TABLE t(a INTEGER, b TEXT)");
    ldb_stmt *s = prepare(db, "SELECT a * 2 + ?1, b || 'x' FROM t WHERE a > 1");
    const struct plan *p = s->bound.u.select;
    CHECK(p->kind == PLAN_PROJECT);
    value vals[3] = { value_int(20), value_null(), value_null() };
    value params[1] = { value_int(2) };
    struct eval_error err = { 0 };
    struct eval_ctx cx = { .row = vals, .ncols = 3, .params = params, .nparams = 1, .err = &err };
    value out;
    CHECK(expr_eval(p->u.exprs[0], &cx, &out) == LDB_OK);
    CHECK(value_type(&out) == LDB_INTEGER && out.h.u.i == 42);
    CHECK(expr_eval(p->u.exprs[1], &cx, &out) == LDB_OK && value_is_null(&out));
    vals[0] = value_int(INT64_MAX);
    CHECK(expr_eval(p->u.exprs[0], &cx, &out) == LDB_ERROR);
    CHECK_STR(err.msg, "integer overflow");
    CHECK(err.has_off && err.off == 7);
    ldb_finalize(s);
    ldb_close(db);
}

/* ---- property tests ------------------------------------------------------------------- */

static void fill_random(ldb *db, rng *r, int rows)
{
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL)");
    EXEC(db, "CREATE TABLE u(id INTEGER PRIMARY KEY, a INTEGER, d TEXT)");
    EXEC(db, "CREATE INDEX ta ON t(a)");
    EXEC(db, "CREATE INDEX tba ON t(b, a)");
    EXEC(db, "CREATE INDEX tc ON t(c DESC)");
    EXEC(db, "CREATE INDEX tbh ON t(b) USING HASH");
    EXEC(db, "CREATE INDEX ua ON u(a)");
    static const char *const words[] = { "'x'", "'y'", "'z'", "'X'", "NULL" };
    char sql[256], a[16], c[16];
    EXEC(db, "BEGIN");
    for (int i = 0; i < rows; i++) {
        snprintf(a, sizeof a, "%d", (int)rng_below(r, 20));
        snprintf(c, sizeof c, "%.1f", 1.5 * (i % 7));
        snprintf(sql, sizeof sql, "INSERT INTO t VALUES (%d, %s, %s, %s)", i,
                 rng_chance(r, 1, 8) ? "NULL" : a, words[rng_below(r, 5)],
                 rng_chance(r, 1, 8) ? "NULL" : c);
        EXEC(db, sql);
        snprintf(a, sizeof a, "%d", (int)rng_below(r, 25));
        snprintf(sql, sizeof sql, "INSERT INTO u VALUES (%d, %s, 'd%d')", i,
                 rng_chance(r, 1, 6) ? "NULL" : a, i % 3);
        EXEC(db, sql);
    }
    EXEC(db, "COMMIT");
}

static void random_predicate(rng *r, char *out, size_t size)
{
    static const char *const ops[] = { "=", "<", "<=", ">", ">=" };
    char one[3][96];
    for (int k = 0; k < 3; k++) {
        int v = (int)rng_below(r, 22), w = v + (int)rng_below(r, 6);
        switch (rng_below(r, 7)) {
        case 0: snprintf(one[k], sizeof one[k], "a %s %d", ops[rng_below(r, 5)], v); break;
        case 1: snprintf(one[k], sizeof one[k], "a BETWEEN %d AND %d", v, w); break;
        case 2: snprintf(one[k], sizeof one[k], "b = '%c'", "xyzX"[rng_below(r, 4)]); break;
        case 3: snprintf(one[k], sizeof one[k], "c %s %d.5", ops[rng_below(r, 5)], v % 9); break;
        case 4: snprintf(one[k], sizeof one[k], "id = %d", v * 3); break;
        case 5: snprintf(one[k], sizeof one[k], "a = '%d'", v); break;
        default: snprintf(one[k], sizeof one[k], "a IS NULL"); break;
        }
    }
    switch (rng_below(r, 3)) {
    case 0: snprintf(out, size, "%s", one[0]); break;
    case 1: snprintf(out, size, "%s AND %s", one[0], one[1]); break;
    default: snprintf(out, size, "(%s AND %s) OR %s", one[0], one[1], one[2]); break;
    }
}

static char *dup_result(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

static void compare(ldb *db, const char *a, const char *b)
{
    char *ra = dup_result(Q(db, a));
    const char *rb = Q(db, b);
    CHECKF(strcmp(ra, rb) == 0, "%s\n  gave %s\n%s\n  gave %s", a, ra, b, rb);
    CHECKF(strncmp(ra, "error", 5) != 0, "%s: %s", a, ra);
    free(ra);
}

static void access_paths_agree(void)
{
    rng r;
    rng_seed(&r, test_seed());
    ldb *db = sqlt_open();
    fill_random(db, &r, 300);
    char pred[512], a[1024], b[1024];
    for (int i = 0; i < 300 * test_scale(); i++) {
        random_predicate(&r, pred, sizeof pred);
        snprintf(a, sizeof a, "SELECT id FROM t WHERE %s ORDER BY id", pred);
        snprintf(b, sizeof b, "SELECT id FROM t NOT INDEXED WHERE %s ORDER BY id", pred);
        compare(db, a, b);
    }
    ldb_close(db);
}

static void joins_agree(void)
{
    rng r;
    rng_seed(&r, test_seed());
    ldb *db = sqlt_open();
    fill_random(db, &r, 120);
    static const char *const kinds[] = { "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN" };
    char a[512], b[512];
    for (int i = 0; i < 60 * test_scale(); i++) {
        const char *k = kinds[rng_below(&r, 4)];
        int lim = (int)rng_below(&r, 20);
        /* the same condition as an equi-key (hash join) and hidden in an
         * OR (nested loop) */
        snprintf(a, sizeof a, "SELECT t.id, u.id FROM t %s u ON t.a = u.a AND u.id > %d "
                              "ORDER BY 1, 2", k, lim);
        snprintf(b, sizeof b, "SELECT t.id, u.id FROM t %s u ON (t.a = u.a OR t.a IS NULL AND 0) "
                              "AND u.id > %d ORDER BY 1, 2", k, lim);
        compare(db, a, b);
    }
    ldb_close(db);
}

/* Lines [off, off + lim) of a result. */
static void slice(const char *all, int off, int lim, char *out, size_t size)
{
    const char *p = all;
    for (int i = 0; i < off && *p; i++)
        p = strchr(p, '\n') + 1;
    const char *e = p;
    for (int i = 0; i < lim && *e; i++)
        e = strchr(e, '\n') + 1;
    snprintf(out, size, "%.*s", (int)(e - p), p);
}

static void topk_agrees(void)
{
    rng r;
    rng_seed(&r, test_seed());
    ldb *db = sqlt_open();
    fill_random(db, &r, 200);
    static const char *const orders[] = { "a, id", "a DESC, b, id", "c NULLS LAST, id DESC",
                                          "b COLLATE NOCASE, c DESC, id", "a DESC NULLS FIRST, id" };
    char q[256], want[4096];
    for (int i = 0; i < 100 * test_scale(); i++) {
        const char *o = orders[rng_below(&r, 5)];
        int lim = (int)rng_below(&r, 30), off = (int)rng_below(&r, 20);
        snprintf(q, sizeof q, "SELECT id FROM t NOT INDEXED ORDER BY %s", o);
        slice(Q(db, q), off, lim, want, sizeof want);
        snprintf(q, sizeof q, "SELECT id FROM t ORDER BY %s LIMIT %d OFFSET %d", o, lim, off);
        CHECK_STR(Q(db, q), want);
    }
    ldb_close(db);
}

TEST_MAIN(T(unique_keys), T(lineage_and_determinism), T(evaluator_alone), T(access_paths_agree),
          T(joins_agree), T(topk_agrees))
