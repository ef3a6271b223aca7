/*
 * test_mv_udaf.c - user-defined aggregates (ldb_create_aggregate) in
 * one-shot queries, live queries and materialized views, maintained by
 * what each declares:
 *   isum     step + inverse: retracted by arithmetic (dataflow reduce);
 *   product  step only: the group's values are kept and the result
 *            recomputed (the recompute layer of aggregate.h);
 *   mean     step + inverse + decompose(count, sum): a view grouping one
 *            table over an INTEGER column keeps count and sum in its rows
 *            (the aggregate arm), over a REAL column the dataflow arm;
 *   shaky    not declared deterministic: refused by live queries and by
 *            views (unless PRAGMA nondeterministic_schema), wherever the
 *            query calls it.
 * A random history with rollbacks checks every view against its body.
 */
#include "mv_util.h"

#include "base/mem.h"
#include "value/aggregate.h"

#include <math.h>
#include <stdbool.h>

/* ---- the aggregates -------------------------------------------------------------- */

static int calls_inverse, calls_step;

static int isum_step(void *ctx, void *st, const ldb_row *args)
{
    calls_step++;
    if (ldb_row_type(args, 0) != LDB_NULL)
        *(int64_t *)st += ldb_row_int64(args, 0);
    return LDB_OK;
}

static int isum_inverse(void *ctx, void *st, const ldb_row *args)
{
    calls_inverse++;
    if (ldb_row_type(args, 0) != LDB_NULL)
        *(int64_t *)st -= ldb_row_int64(args, 0);
    return LDB_OK;
}

static int isum_final(void *ctx, const void *st, ldb_result *out)
{
    ldb_result_int64(out, *(const int64_t *)st);
    return LDB_OK;
}

/* product of non-NULL values; 1.0 over none; order-free */
struct prod {
    double p;
    int64_t n;
};

static int prod_step(void *ctx, void *st, const ldb_row *args)
{
    struct prod *s = st;
    if (s->n++ == 0)
        s->p = 1.0;
    if (ldb_row_type(args, 0) != LDB_NULL)
        s->p *= ldb_row_double(args, 0);
    return LDB_OK;
}

static int prod_final(void *ctx, const void *st, ldb_result *out)
{
    const struct prod *s = st;
    ldb_result_double(out, s->n ? s->p : 1.0);
    return LDB_OK;
}

/* mean: count and sum (as the pair of partials decompose names) */
struct mean {
    int64_t n;
    double sum;
};

static int mean_step(void *ctx, void *st, const ldb_row *args)
{
    struct mean *m = st;
    if (ldb_row_type(args, 0) != LDB_NULL) {
        m->n++;
        m->sum += ldb_row_double(args, 0);
    }
    return LDB_OK;
}

static int mean_inverse(void *ctx, void *st, const ldb_row *args)
{
    struct mean *m = st;
    if (ldb_row_type(args, 0) != LDB_NULL) {
        m->n--;
        m->sum -= ldb_row_double(args, 0);
    }
    return LDB_OK;
}

static int mean_final(void *ctx, const void *st, ldb_result *out)
{
    const struct mean *m = st;
    if (m->n)
        ldb_result_text(out, m->sum / (double)m->n > 0 ? "up" : "down", -1);
    return LDB_OK;
}

static int decompose_calls;

static int mean_decompose(void *ctx, int64_t count, int64_t sum, ldb_result *out)
{
    decompose_calls++;
    if (count)
        ldb_result_text(out, (double)sum / (double)count > 0 ? "up" : "down", -1);
    return LDB_OK;
}

static int freed;

static void count_free(void *ctx) { freed += *(int *)ctx; }

static ldb *open_db(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    static int one = 1;
    ldb_aggregate isum_agg = { sizeof(int64_t), LDB_DETERMINISTIC, &one, isum_step, isum_inverse,
                           NULL, isum_final, NULL, NULL, count_free };
    ldb_aggregate product = { sizeof(struct prod), LDB_DETERMINISTIC, NULL, prod_step, NULL,
                              NULL, prod_final, NULL, NULL, NULL };
    ldb_aggregate mean = { sizeof(struct mean), LDB_DETERMINISTIC, NULL, mean_step, mean_inverse,
                           NULL, mean_final, NULL, mean_decompose, NULL };
    ldb_aggregate shaky = product;
    shaky.flags = 0;
    CHECK(ldb_create_aggregate(db, "isum", 1, &isum_agg) == LDB_OK);
    CHECK(ldb_create_aggregate(db, "Product", 1, &product) == LDB_OK);
    CHECK(ldb_create_aggregate(db, "mean", 1, &mean) == LDB_OK);
    CHECK(ldb_create_aggregate(db, "shaky", 1, &shaky) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER, r REAL)");
    return db;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void registration(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    ldb_aggregate bad = { 8, 0, NULL, NULL, NULL, NULL, isum_final, NULL, NULL, NULL };
    CHECK_INT(ldb_create_aggregate(db, "f", 1, &bad), LDB_MISUSE);
    bad.step = isum_step;
    CHECK_INT(ldb_create_aggregate(db, "f", -1, &bad), LDB_MISUSE);
    bad.decompose = mean_decompose;
    CHECK_INT(ldb_create_aggregate(db, "f", 2, &bad), LDB_MISUSE);
    ldb_close(db);
    freed = 0;
    db = open_db();
    ldb_close(db);
    CHECK_INT(freed, 1); /* ctx_free at close */
}

static void one_shot(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 1, 2, 0.5), (2, 1, 3, 4.0), (3, 2, NULL, NULL)");
    CHECK_ROWS(db, "SELECT g, isum(x), product(x), mean(x) FROM t GROUP BY g",
               "I:1|I:5|R:6.0|T:up\nI:2|I:0|R:1.0|N:NULL\n");
    CHECK_ROWS(db, "SELECT PRODUCT(r) FROM t", "R:2.0\n");
    CHECK_ERROR(db, "SELECT product(x, x) FROM t", "wrong number of arguments");
    ldb_close(db);
}

static void live_queries(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 1, 2, 0.5), (2, 1, 3, 4.0)");
    ldb_live *q;
    CHECK(ldb_live_open(db, "SELECT g, product(x) AS p, isum(x) AS s FROM t GROUP BY g", NULL,
                        NULL, &q) == LDB_OK);
    EXEC(db, "DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (3, 1, 5, 1.0)");
    static struct mvt_rows rows;
    memset(&rows, 0, sizeof rows);
    CHECK(ldb_live_read(q, mvt_collect, &rows) == LDB_OK);
    CHECK_INT(rows.n, 1);
    CHECK_STR(rows.r[0], "I:1|R:10.0|I:7");
    ldb_live_close(q);
    ldb_close(db);
}

static void strategies_from_declarations(void)
{
    ldb *db = open_db();
    EXEC(db, "CREATE MATERIALIZED VIEW vi AS SELECT g, isum(x) AS s FROM t GROUP BY g;"
             "CREATE MATERIALIZED VIEW vp AS SELECT g, product(x) AS p FROM t GROUP BY g;"
             "CREATE MATERIALIZED VIEW vm AS SELECT g, mean(x) AS m FROM t GROUP BY g;"
             "CREATE MATERIALIZED VIEW vr AS SELECT g, mean(r) AS m FROM t GROUP BY g");
    CHECK_STR(mvt_strategy(db, "vi"), "dataflow");
    CHECK_STR(mvt_strategy(db, "vp"), "dataflow");
    CHECK_STR(mvt_strategy(db, "vm"), "aggregate");
    CHECK_STR(mvt_strategy(db, "vr"), "dataflow");
    CHECK_ERROR(db, "CREATE MATERIALIZED VIEW vs AS SELECT g, shaky(x) FROM t GROUP BY g",
                "not deterministic (shaky())");
    /* retraction: inverse for isum, recompute for product, decompose for vm */
    EXEC(db, "INSERT INTO t VALUES (1, 1, 2, 1.0), (2, 1, 3, -4.0)");
    calls_inverse = decompose_calls = 0;
    EXEC(db, "DELETE FROM t WHERE id = 1");
    CHECK(calls_inverse > 0);
    CHECK(decompose_calls > 0);
    CHECK_ROWS(db, "SELECT * FROM vp", "I:1|R:3.0\n");
    CHECK_ROWS(db, "SELECT * FROM vm", "I:1|T:up\n");
    ldb_close(db);
}

/* A user-defined aggregate not declared deterministic makes the query
 * non-deterministic wherever it is called: a live query refuses it as it
 * refuses random(), a view unless PRAGMA nondeterministic_schema admits
 * it (then rebuilt after every write). The same shapes over a declared
 * one are kept. */
static void nondeterministic_declarations(void)
{
    ldb *db = open_db();
    EXEC(db, "INSERT INTO t VALUES (1, 1, 2, 0.5), (2, 1, 3, 4.0), (3, 2, 6, 1.0)");
    static const char *const shapes[] = {
        "SELECT g, %s(x) AS a FROM t GROUP BY g",
        "SELECT %s(x) AS a FROM t",
        "SELECT g FROM t GROUP BY g HAVING %s(x) > 1",
        "SELECT g, a FROM (SELECT g, %s(x) AS a FROM t GROUP BY g) WHERE a > 0",
        "SELECT id FROM t WHERE x IN (SELECT %s(x) FROM t GROUP BY g)",
        "SELECT id, (SELECT %s(u.x) FROM t AS u WHERE u.g = t.g) AS a FROM t",
        "SELECT g AS a FROM t UNION SELECT %s(x) FROM t",
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        char shaky[200], steady[200], view[300];
        snprintf(shaky, sizeof shaky, shapes[i], "shaky");
        snprintf(steady, sizeof steady, shapes[i], "product");
        ldb_live *q = NULL;
        int rc = ldb_live_open(db, shaky, NULL, NULL, &q);
        CHECKF(rc == LDB_UNSUPPORTED && q == NULL &&
                   strstr(ldb_errmsg(db), "non-deterministic function"),
               "%s: rc %d (%s)", shaky, rc, ldb_errmsg(db));
        rc = ldb_live_open(db, steady, NULL, NULL, &q);
        CHECKF(rc == LDB_OK, "%s: rc %d (%s)", steady, rc, ldb_errmsg(db));
        ldb_live_close(q);
        snprintf(view, sizeof view, "CREATE MATERIALIZED VIEW n%zu AS %s", i, shaky);
        CHECK_ERROR(db, view, "not deterministic (shaky())");
        snprintf(view, sizeof view, "CREATE MATERIALIZED VIEW d%zu AS %s", i, steady);
        EXEC(db, view);
    }
    /* a built-in aggregate ordered by a non-deterministic key */
    ldb_live *q = NULL;
    CHECK_INT(ldb_live_open(db, "SELECT string_agg(x, ',' ORDER BY random()) FROM t", NULL,
                            NULL, &q), LDB_UNSUPPORTED);
    CHECK(q == NULL);
    EXEC(db, "PRAGMA nondeterministic_schema = ON");
    const char *body = "SELECT id, (SELECT shaky(u.x) FROM t AS u WHERE u.g = t.g) AS a FROM t";
    char view[200];
    snprintf(view, sizeof view, "CREATE MATERIALIZED VIEW s AS %s", body);
    EXEC(db, view);
    CHECK_STR(mvt_strategy(db, "s"), "rebuild");
    CHECK_ROWS(db, "SELECT * FROM s", "I:1|R:6.0\nI:2|R:6.0\nI:3|R:6.0\n");
    EXEC(db, "INSERT INTO t VALUES (4, 2, 5, NULL); DELETE FROM t WHERE id = 1");
    mvt_check_view(db, "s", body);
    CHECK_ROWS(db, "SELECT * FROM s", "I:2|R:3.0\nI:3|R:30.0\nI:4|R:30.0\n");
    /* the pragma admits views, never live queries */
    CHECK_INT(ldb_live_open(db, body, NULL, NULL, &q), LDB_UNSUPPORTED);
    CHECK(q == NULL);
    EXEC(db, "PRAGMA nondeterministic_schema = OFF");
    CHECK_ERROR(db, "CREATE MATERIALIZED VIEW s2 AS SELECT shaky(x) FROM t",
                "nondeterministic_schema = ON allows it");
    ldb_close(db);
}

static void history(void)
{
    ldb *db = open_db();
    static const char *const bodies[][2] = {
        { "h1", "SELECT g, isum(x) AS s, product(x) AS p, mean(x) AS m FROM t GROUP BY g" },
        { "h2", "SELECT g, mean(x) AS m, count(*) AS n FROM t GROUP BY g" },
        { "h3", "SELECT product(r) AS p, isum(x) AS s FROM t" },
        { "h4", "SELECT g, product(DISTINCT x) AS p FROM t GROUP BY g" },
    };
    for (size_t i = 0; i < 4; i++) {
        char sql[300];
        snprintf(sql, sizeof sql, "CREATE MATERIALIZED VIEW %s AS %s", bodies[i][0],
                 bodies[i][1]);
        EXEC(db, sql);
    }
    rng r;
    rng_seed(&r, test_seed());
    for (int k = 0; k < 200 * test_scale(); k++) {
        char sql[200];
        int id = (int)rng_range(&r, 1, 12);
        switch (rng_below(&r, 5)) {
        case 0:
            snprintf(sql, sizeof sql, "DELETE FROM t WHERE id = %d", id);
            break;
        case 1:
            snprintf(sql, sizeof sql, "BEGIN; UPDATE t SET x = x - 1 WHERE g = %d; ROLLBACK",
                     (int)rng_below(&r, 3));
            break;
        default:
            snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO t VALUES (%d, %d, %d, %d.5)", id,
                     (int)rng_below(&r, 3), (int)rng_range(&r, -3, 3), (int)rng_range(&r, -2, 2));
            break;
        }
        EXEC(db, sql);
        for (size_t i = 0; i < 4; i++)
            mvt_check_view(db, bodies[i][0], bodies[i][1]);
    }
    ldb_close(db);
}

/* The recompute layer on its own: an aggregate without AGG_RETRACT
 * accepts retractions through its instance. */
static void first_init(agg_inst *ai, void *st) { *(int64_t *)st = INT64_MIN; }

static int first_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    if (w < 0)
        return LDB_MISUSE; /* never asked to retract */
    if (*(int64_t *)st == INT64_MIN)
        *(int64_t *)st = args[0].h.u.i;
    return LDB_OK;
}

static int first_final(agg_inst *ai, const void *st, value *out)
{
    int64_t v = *(const int64_t *)st;
    *out = v == INT64_MIN ? value_null() : value_int(v);
    return LDB_OK;
}

static void no_destroy(agg_inst *ai, void *st) {}
static size_t no_heap(const agg_inst *ai, const void *st) { return 0; }

static void recompute_layer(void)
{
    static const struct agg_def first = { "first", 1, 0, sizeof(int64_t), first_init,
                                          first_step, NULL, first_final, no_destroy, no_heap,
                                          NULL, 0 };
    agg_inst ai;
    CHECK(agg_inst_init(&ai, &first, LDB_COLL_BINARY, false, NULL) == LDB_OK);
    CHECK(ai.recompute);
    void *st = mem_alloc(agg_state_size(&ai));
    agg_init(&ai, st);
    value v5 = value_int(5), v2 = value_int(2), out;
    CHECK(agg_step(&ai, st, &v5, 2) == LDB_OK);
    CHECK(agg_step(&ai, st, &v2, 1) == LDB_OK);
    CHECK(agg_finalize(&ai, st, &out) == LDB_OK);
    CHECK_INT(out.h.u.i, 2); /* value order: the least first */
    CHECK(agg_step(&ai, st, &v2, -1) == LDB_OK);
    CHECK(agg_finalize(&ai, st, &out) == LDB_OK);
    CHECK_INT(out.h.u.i, 5);
    CHECK(agg_step(&ai, st, &v5, -2) == LDB_OK);
    CHECK(agg_finalize(&ai, st, &out) == LDB_OK);
    CHECK(value_is_null(&out));
    agg_destroy(&ai, st);
    mem_free(st);
    agg_inst_free(&ai);
}

TEST_MAIN(T(registration), T(one_shot), T(live_queries), T(strategies_from_declarations),
          T(nondeterministic_declarations), T(history), T(recompute_layer))
