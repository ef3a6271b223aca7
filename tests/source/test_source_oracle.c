/*
 * test_source_oracle.c - live queries over sourced tables against SQLite
 * over the authoritative data, under random provider behaviour.
 *
 * Each history makes 2-3 tables t0..t2 (id, k, a, s; s sometimes COLLATE
 * NOCASE), each local (the same rows written to livedb and SQLite), or
 * sourced ON_DEMAND or EAGER by a scripted provider whose truth is the
 * SQLite table (script_provider.h). Random live queries (pushable and
 * non-pushable filters, parameters, explicit collations, joins, LEFT
 * JOIN with filters on the null-extended side, correlated scalar and IN
 * subqueries, UNION, DISTINCT, GROUP BY, ORDER BY ... LIMIT, LIVE (query)
 * children correlated on k or s) are opened and closed while the
 * script settles requests (whole or in parts), fails them, fails
 * load_subset, settles inside load_subset, ignores cancels (writes and
 * settles after the abort), delivers more rows than asked, changes source rows (forwarded by the change
 * feed) and writes local tables, sometimes inside BEGIN ... COMMIT.
 *
 * After every step, for every open query:
 * - law 9 (publication): its rows rebuilt from its batches alone equal
 *   what ldb_live_read shows;
 * - law 10 (readiness): a READY root's handles are READY too;
 * - law 7 (applied settlement): a READY root (checked also inside its
 *   status callback, as READY is reported) and every READY child handle
 *   equal SQLite running the same query (a handle: its child query with
 *   its parent row's k);
 * - law 6 (stale demand): a settle or write of an aborted request changes
 *   no status and no row;
 * and the provider's callback laws (script_provider.c). Every few steps
 * the script settles everything and retries failures: then every query
 * must be READY (law 10). At the end, with every query closed, each
 * ON_DEMAND source has no demand and no live request (law 13), and after
 * detach every loaded request was unloaded exactly once. A rare step
 * detaches a source with its queries open: they turn READY over what the
 * cache held (SQLite drops the rest), and the table is local from then.
 *
 * The seed is printed; LDB_SEED replays a run, LDB_TEST_SCALE=k runs k
 * times as many histories (the CI run is a few seconds).
 */
#include "script_provider.h"
#include "test.h"
#include "test_db.h"

#include "base/strbuf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 3
#define MAXQ 6
#define SQLMAX 1024

enum tmode { T_LOCAL, T_ON_DEMAND, T_EAGER };

struct oq {
    char lsql[SQLMAX];  /* livedb's SQL */
    char ssql[SQLMAX];  /* SQLite's: the same without the LIVE column */
    char csql[SQLMAX];  /* a child's query for SQLite: ?9 its parent's value,
                           ?1..?4 the query's parameters */
    int nparams;
    int64_t params[4];
    bool ordered, child_ordered, has_child;
    bool sourced;       /* it reads a sourced table */
    char **replica;     /* its rows rebuilt from its batches alone (LIVE
                           cells left out), malloc'd strings, any order */
    int nreplica, capreplica;
    ldb_live *q;
    char fail[700];     /* the first mismatch seen inside a callback */
};

struct world {
    rng r;
    ldb *db;
    sqlite3 *auth;
    int nt;
    enum tmode mode[MAXT];
    bool detached[MAXT];  /* sourced once, local since its detach */
    bool nocase[MAXT];
    int64_t next_id[MAXT];
    script_provider sp[MAXT];
    struct oq qs[MAXQ];
    int nq;
    int step;
};

static struct world W;

/* Counters over every history of the run. */
static struct {
    long opened, unsupported, ready_checks, ready_sourced, child_checks, settles, fails, zombies;
    long requests, pushed, grouped;
} N;

/* ---- the step trace: the last steps, printed when a check fails --------------------- */

#define TRACE 40
static char trace[TRACE][200];
static int ntrace;

static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int at = ntrace++ % TRACE;
    int n = snprintf(trace[at], sizeof trace[at], "%4d ", W.step);
    vsnprintf(trace[at] + n, sizeof trace[at] - (size_t)n, fmt, ap);
    va_end(ap);
}

static void dump_trace(void)
{
    printf("#    the last steps (step, action):\n");
    for (int i = ntrace > TRACE ? ntrace - TRACE : 0; i < ntrace; i++)
        printf("#    %s\n", trace[i % TRACE]);
    for (int t = 0; t < W.nt; t++) {
        printf("#    t%d: %s%s%s\n", t, (const char *[]){ "local", "ON_DEMAND", "EAGER" }[W.mode[t]],
               W.detached[t] ? " (detached)" : "", W.nocase[t] ? ", s NOCASE" : "");
        for (int i = 0; (W.mode[t] != T_LOCAL || W.detached[t]) && i < W.sp[t].nreqs; i++) {
            struct sp_req *q = W.sp[t].reqs[i];
            printf("#      request %llu%s%s: %s", (unsigned long long)q->id,
                   q->settled ? " settled" : "", q->loaded ? " loaded" : "", q->sql);
            if (q->ordered)
                printf(" ORDER BY \"%s\"%s LIMIT %lld", q->order_col, q->desc ? " DESC" : "",
                       (long long)q->limit);
            printf("\n");
        }
    }
}

/* CHECKF, with the trace printed first. */
#define OCHECK(cond, ...)                                                                 \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            dump_trace();                                                                 \
            CHECKF(0, __VA_ARGS__);                                                       \
        }                                                                                 \
    } while (0)

/* ---- SQL on both engines --------------------------------------------------------- */

static void auth_exec(const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(W.auth, sql, NULL, NULL, &err);
    CHECKF(rc == SQLITE_OK, "SQLite: %s: %s", sql, err ? err : "?");
}

/* SQLite first: livedb's status callbacks compare with it. */
static void both_exec(const char *sql)
{
    auth_exec(sql);
    EXEC(W.db, sql);
}

static void put_value(char *buf, size_t size, int col)
{
    static const char *const texts[] = { "NULL", "'x'", "'X'", "'y'", "'z'" };
    if (rng_chance(&W.r, 1, 8)) {
        snprintf(buf, size, "NULL");
        return;
    }
    switch (col) {
    case 0: snprintf(buf, size, "%d", (int)rng_below(&W.r, 5)); break;
    case 1: snprintf(buf, size, "%d", (int)rng_below(&W.r, 10)); break;
    default: snprintf(buf, size, "%s", texts[1 + rng_below(&W.r, 4)]); break;
    }
}

/* INSERT of a random row with key id into table t. */
static void row_insert_sql(char *sql, size_t size, int t, int64_t id)
{
    char k[16], a[16], s[16];
    put_value(k, sizeof k, 0);
    put_value(a, sizeof a, 1);
    put_value(s, sizeof s, 2);
    snprintf(sql, size, "INSERT INTO t%d VALUES (%lld, %s, %s, %s)", t, (long long)id, k, a, s);
}

/* A random change of table t's row id (inserted when SQLite has none). */
static void row_change_sql(char *sql, size_t size, int t, int64_t id)
{
    char q[64], v[16];
    snprintf(q, sizeof q, "SELECT 1 FROM t%d WHERE id = %lld", t, (long long)id);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(W.auth, q, -1, &st, NULL) == SQLITE_OK);
    bool exists = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!exists) {
        row_insert_sql(sql, size, t, id);
        return;
    }
    if (rng_chance(&W.r, 1, 3)) {
        snprintf(sql, size, "DELETE FROM t%d WHERE id = %lld", t, (long long)id);
        return;
    }
    int col = (int)rng_below(&W.r, 3);
    put_value(v, sizeof v, col);
    snprintf(sql, size, "UPDATE t%d SET %s = %s WHERE id = %lld", t, (const char *[]){ "k", "a", "s" }[col],
             v, (long long)id);
}

/* ---- schema ------------------------------------------------------------------------ */

static void make_world(uint64_t seed)
{
    memset(&W, 0, sizeof W);
    ntrace = 0;
    rng_seed(&W.r, seed);
    CHECK_INT(ldb_open(NULL, &W.db), LDB_OK);
    CHECK_INT(sqlite3_open(":memory:", &W.auth), SQLITE_OK);
    W.nt = 2 + (int)rng_below(&W.r, 2);
    bool any_demand = false;
    for (int t = 0; t < W.nt; t++) {
        int x = (int)rng_below(&W.r, 5);
        W.mode[t] = x == 0 ? T_LOCAL : x == 4 ? T_EAGER : T_ON_DEMAND;
        if (t == W.nt - 1 && !any_demand)
            W.mode[t] = T_ON_DEMAND;
        any_demand |= W.mode[t] == T_ON_DEMAND;
        W.nocase[t] = rng_chance(&W.r, 1, 3);
        char sql[256];
        snprintf(sql, sizeof sql,
                 "CREATE TABLE t%d(id INTEGER PRIMARY KEY, k INTEGER, a INTEGER, s TEXT%s)", t,
                 W.nocase[t] ? " COLLATE NOCASE" : "");
        both_exec(sql);
        int n = 6 + (int)rng_below(&W.r, 14);
        for (int i = 1; i <= n; i++) {
            row_insert_sql(sql, sizeof sql, t, i);
            if (W.mode[t] == T_LOCAL)
                both_exec(sql);
            else
                auth_exec(sql);
        }
        W.next_id[t] = n + 1;
    }
    for (int t = 0; t < W.nt; t++) {
        if (W.mode[t] == T_LOCAL)
            continue;
        char name[16];
        snprintf(name, sizeof name, "t%d", t);
        int rc = sp_init(&W.sp[t], W.db, W.auth, name,
                         W.mode[t] == T_EAGER ? LDB_SOURCE_EAGER : LDB_SOURCE_ON_DEMAND, &W.r);
        CHECKF(rc == LDB_OK, "attach %s: %s", name, ldb_errmsg(W.db));
        W.sp[t].ignore_cancel = rng_chance(&W.r, 1, 2);
        W.sp[t].superset = rng_chance(&W.r, 1, 2);
    }
    for (int t = 0; t < W.nt; t++)
        note("t%d: %s%s", t, (const char *[]){ "local", "ON_DEMAND", "EAGER" }[W.mode[t]],
             W.nocase[t] ? ", s NOCASE" : "");
}

/* ---- query generation ---------------------------------------------------------------- */

/* Comparisons under a collation that is not their column's: an explicit
 * COLLATE, or a child correlated x.s = y.s under the parent's. */
static bool collations;
/* Windows ordered by a column (loaded in pages); else by an expression. */
static bool pages;

struct gen {
    char *out;
    size_t len, size;
    struct oq *q;       /* where parameters go; NULL: constants only */
};

static void gput(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g->out + g->len, g->size - g->len, fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && g->len + (size_t)n < g->size);
    g->len += (size_t)n;
}

/* An integer operand: a constant, or a new parameter. */
static void operand(struct gen *g, int hi)
{
    int64_t v = (int64_t)rng_below(&W.r, (uint64_t)hi);
    if (g->q && g->q->nparams < 4 && rng_chance(&W.r, 1, 4)) {
        g->q->params[g->q->nparams++] = v;
        gput(g, "?%d", g->q->nparams);
    } else {
        gput(g, "%lld", (long long)v);
    }
}

/* One conjunct over alias x: pushable (column op operand, IN, IS NULL,
 * an OR of those, explicit collations) or not (arithmetic, functions,
 * LIKE, NOT). */
static void atom(struct gen *g, const char *x)
{
    switch (rng_below(&W.r, collations ? 17 : 15)) {
    case 14: gput(g, "%s.s IN ('x', 'Y')", x); break;
    case 15: gput(g, "%s.s = 'X' COLLATE NOCASE", x); break;
    case 16: gput(g, "%s.s > 'X' COLLATE BINARY", x); break;
    case 0: gput(g, "%s.a = ", x); operand(g, 10); break;
    case 1: gput(g, "%s.a <> ", x); operand(g, 10); break;
    case 2: gput(g, "%s.a < ", x); operand(g, 10); break;
    case 3: gput(g, "%s.a >= ", x); operand(g, 10); break;
    case 4:
        gput(g, "%s.k IN (", x); operand(g, 5); gput(g, ", "); operand(g, 5); gput(g, ")");
        break;
    case 5: gput(g, "%s.s IS %sNULL", x, rng_chance(&W.r, 1, 2) ? "NOT " : ""); break;
    case 6: gput(g, "%s.s = '%s'", x, rng_chance(&W.r, 1, 2) ? "x" : "y"); break;
    case 7:
        gput(g, "(%s.a = ", x); operand(g, 10); gput(g, " OR %s.k = ", x); operand(g, 5); gput(g, ")");
        break;
    case 8: gput(g, "%s.a BETWEEN 2 AND 6", x); break;
    case 9: gput(g, "%s.a + %s.k > ", x, x); operand(g, 10); break;
    case 10: gput(g, "abs(%s.a - 4) < 3", x); break;
    case 11: gput(g, "%s.s LIKE 'x%%'", x); break;
    case 12: gput(g, "NOT (%s.k = 1)", x); break;
    default: gput(g, "coalesce(%s.a, 0) < ", x); operand(g, 10); break;
    }
}

static void pred(struct gen *g, const char *x, int max)
{
    int n = (int)rng_below(&W.r, (uint64_t)max + 1);
    if (n == 0) {
        gput(g, "1 = 1");
        return;
    }
    for (int i = 0; i < n; i++) {
        gput(g, i ? " AND " : "");
        atom(g, x);
    }
}

/* Builds q's livedb SQL, and SQLite's in parallel (they differ only by
 * the LIVE column), over random tables. */
static void gen_query(struct oq *q)
{
    memset(q, 0, sizeof *q);
    int t = (int)rng_below(&W.r, (uint64_t)W.nt), u = (int)rng_below(&W.r, (uint64_t)W.nt);
    char where[400], cwhere[300];
    struct gen gw = { where, 0, sizeof where, q };
    pred(&gw, "x", 2);
    char w2[200];
    struct gen g2 = { w2, 0, sizeof w2, q };
    switch (rng_below(&W.r, 10)) {
    case 0:
        snprintf(q->lsql, SQLMAX, "SELECT x.id, x.k, x.a, x.s FROM t%d x WHERE %s", t, where);
        break;
    case 5: /* the filter on the null-extended side stays above the join */
        pred(&g2, "y", 2);
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.id, y.id, x.a, y.s FROM t%d x LEFT JOIN t%d y ON x.k = y.k "
                 "WHERE %s AND %s",
                 t, u, where, w2);
        break;
    case 6:
        pred(&g2, "y", 1);
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.id, (SELECT count(*) FROM t%d y WHERE y.k = x.k AND %s) AS n "
                 "FROM t%d x WHERE %s",
                 u, w2, t, where);
        break;
    case 7:
        pred(&g2, "y", 1);
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.id, x.a FROM t%d x WHERE %s AND x.k %sIN (SELECT y.k FROM t%d y "
                 "WHERE y.k IS NOT NULL AND %s)",
                 t, where, rng_chance(&W.r, 1, 3) ? "NOT " : "", u, w2);
        break;
    case 8:
        pred(&g2, "y", 1);
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.k, x.a FROM t%d x WHERE %s UNION SELECT y.k, y.a FROM t%d y WHERE %s",
                 t, where, u, w2);
        break;
    case 9:
        snprintf(q->lsql, SQLMAX, "SELECT DISTINCT x.k, x.a %% 3 FROM t%d x WHERE %s", t, where);
        break;
    case 1: {
        pred(&g2, "y", 1);
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.id, y.id, x.a, y.s FROM t%d x JOIN t%d y ON x.k = y.k WHERE %s AND %s",
                 t, u, where, w2);
        break;
    }
    case 2:
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.k, count(*), sum(x.a), count(x.s) FROM t%d x WHERE %s GROUP BY x.k", t,
                 where);
        break;
    case 3:
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.id, x.a, x.s FROM t%d x WHERE %s ORDER BY %s, x.id LIMIT %d", t, where,
                 !pages ? "x.a + 0" : rng_chance(&W.r, 1, 3) ? "x.s" : "x.a",
                 1 + (int)rng_below(&W.r, 5));
        q->ordered = true;
        break;
    default: {
        struct gen gc = { cwhere, 0, sizeof cwhere, q };
        pred(&gc, "y", 1);
        const char *corder = "";
        if (rng_chance(&W.r, 1, 3)) {
            corder = " ORDER BY y.a, y.id LIMIT 2";
            q->child_ordered = true;
        }
        /* The correlation: on k, or on s either way round (the left
         * operand's collation decides; SQLite's child query keeps it on
         * the parent's value). */
        int form = (int)rng_below(&W.r, collations ? 4 : 3);
        const char *col = form < 2 ? "k" : "s";
        char corr[64], scorr[64];
        if (form < 3) {
            snprintf(corr, sizeof corr, "y.%s = x.%s", col, col);
            snprintf(scorr, sizeof scorr, "y.%s = ?9", col);
        } else {
            snprintf(corr, sizeof corr, "x.s = y.s");
            snprintf(scorr, sizeof scorr, "?9 COLLATE %s = y.s", W.nocase[t] ? "NOCASE" : "BINARY");
        }
        snprintf(q->lsql, SQLMAX,
                 "SELECT x.id, x.%s, LIVE (SELECT y.id, y.a, y.s FROM t%d y WHERE %s AND %s%s) "
                 "AS kids FROM t%d x WHERE %s",
                 col, u, corr, cwhere, corder, t, where);
        snprintf(q->ssql, SQLMAX, "SELECT x.id, x.%s FROM t%d x WHERE %s", col, t, where);
        snprintf(q->csql, SQLMAX, "SELECT y.id, y.a, y.s FROM t%d y WHERE %s AND %s%s", u, scorr,
                 cwhere, corder);
        q->has_child = true;
        return;
    }
    }
    snprintf(q->ssql, SQLMAX, "%s", q->lsql);
}

/* ---- comparison ------------------------------------------------------------------------ */

/* SQLite's rows of sql with params bound (child: ?9 = the parent's
 * value). */
static void sqlite_rows(const char *sql, const int64_t *params, int n, const ldb_value *k,
                        cmp_result *out)
{
    sqlite3_stmt *st;
    CHECKF(sqlite3_prepare_v2(W.auth, sql, -1, &st, NULL) == SQLITE_OK, "SQLite: %s: %s", sql,
           sqlite3_errmsg(W.auth));
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, params[i]);
    if (k)
        sp_bind_value(st, 9, k);
    cmp_step_sqlite(W.auth, st, out);
    sqlite3_finalize(st);
    CHECKF(out->ok, "SQLite: %s: %s", sql, out->msg);
}

/* Whether live result h equals SQLite's; the first difference in why. */
static bool same_as_sqlite(ldb_live *h, const char *sql, const int64_t *params, int n,
                           const ldb_value *k, bool ordered, char *why, size_t size)
{
    cmp_result a, b;
    sp_live_rows(h, &a);
    sqlite_rows(sql, params, n, k, &b);
    bool same = cmp_same_rows(&a, &b, ordered);
    if (!same) {
        size_t i = 0;
        while (i < a.n && i < b.n && strcmp(a.rows[i], b.rows[i]) == 0)
            i++;
        snprintf(why, size, "%zu rows vs SQLite's %zu; first difference at %zu: livedb %s, SQLite %s",
                 a.n, b.n, i, i < a.n ? a.rows[i] : "(none)", i < b.n ? b.rows[i] : "(none)");
    }
    cmp_result_free(&a);
    cmp_result_free(&b);
    return same;
}

struct child_visit {
    struct oq *q;
    bool root_ready;
    char why[600];
    int checked;
};

/* For each row of a child query's root: its handle's status and rows. */
static int visit_child(void *ctx, const ldb_row *r)
{
    struct child_visit *v = ctx;
    if (v->why[0])
        return 0;
    ldb_live *h = ldb_row_live(r, 2);
    if (!h) {
        snprintf(v->why, sizeof v->why, "a row without its LIVE handle");
        return 0;
    }
    int st = ldb_live_status(h, NULL);
    if (v->root_ready && st != LDB_STATUS_READY) {
        snprintf(v->why, sizeof v->why, "law 10: the root is READY but handle live#%lld is %d",
                 (long long)ldb_live_id(h), st);
        return 0;
    }
    if (st != LDB_STATUS_READY)
        return 0;
    char why[500];
    if (!same_as_sqlite(h, v->q->csql, v->q->params, v->q->nparams, ldb_row_value(r, 1),
                        v->q->child_ordered, why,
                        sizeof why)) {
        char k[32];
        ldb_row_format(r, 1, k, sizeof k);
        snprintf(v->why, sizeof v->why, "law 7: READY handle live#%lld (parent value %s): %s",
                 (long long)ldb_live_id(h), k, why);
    }
    v->checked++;
    return 0;
}

/* ---- the replica: what the batches say ------------------------------------------------ */

static char *render_row(const ldb_row *r)
{
    strbuf sb = STRBUF_INIT;
    for (int i = 0, shown = 0; i < ldb_row_columns(r); i++) {
        if (ldb_row_type(r, i) == LDB_LIVE)
            continue;
        sb_puts(&sb, shown++ ? "|" : "");
        cmp_put_livedb_value(&sb, r, i);
    }
    char *text = strdup(sb_error(&sb) ? "?" : sb_str(&sb));
    sb_free(&sb);
    return text;
}

static void on_change(void *ctx, ldb_live *h, const ldb_change *c, size_t n)
{
    struct oq *q = ctx;
    for (size_t i = 0; i < n; i++) {
        if (c[i].before) {
            char *row = render_row(c[i].before);
            for (int64_t k = 0; k < c[i].before_count; k++) {
                int at = 0;
                while (at < q->nreplica && strcmp(q->replica[at], row) != 0)
                    at++;
                if (at == q->nreplica) {
                    if (!q->fail[0])
                        snprintf(q->fail, sizeof q->fail,
                                 "law 9: a batch deletes or updates %s, which is not in the result",
                                 row);
                    break;
                }
                free(q->replica[at]);
                q->replica[at] = q->replica[--q->nreplica];
            }
            free(row);
        }
        for (int64_t k = 0; c[i].after && k < c[i].after_count; k++) {
            if (q->nreplica == q->capreplica) {
                q->capreplica = q->capreplica ? 2 * q->capreplica : 16;
                q->replica = realloc(q->replica, (size_t)q->capreplica * sizeof *q->replica);
            }
            q->replica[q->nreplica++] = render_row(c[i].after);
        }
    }
}

static void replica_free(struct oq *q)
{
    for (int i = 0; i < q->nreplica; i++)
        free(q->replica[i]);
    free(q->replica);
    q->replica = NULL;
    q->nreplica = q->capreplica = 0;
}

/* The batches so far add up to what ldb_live_read shows (law 9: reads and
 * events observe the same result). */
static bool replica_same(struct oq *q, char *why, size_t size)
{
    cmp_result a;
    sp_live_rows(q->q, &a);
    bool same = a.n == (size_t)q->nreplica;
    if (same && a.n > 1) {
        qsort(a.rows, a.n, sizeof *a.rows, cmp_rows);
        qsort(q->replica, (size_t)q->nreplica, sizeof *q->replica, cmp_rows);
        for (size_t i = 0; same && i < a.n; i++)
            same = strcmp(a.rows[i], q->replica[i]) == 0;
    }
    if (!same)
        snprintf(why, size, "law 9: its batches add up to %d rows, ldb_live_read shows %zu (or other rows)",
                 q->nreplica, a.n);
    cmp_result_free(&a);
    return same;
}

/* The query's checks (see the file's comment); returns the first broken
 * one in why (empty: none). Used inside status callbacks too. */
static void check_query(struct oq *q, char *why, size_t size)
{
    why[0] = '\0';
    const char *msg = NULL;
    int err = ldb_live_error(q->q, &msg);
    if (err != LDB_OK) {
        snprintf(why, size, "the query failed: %d %s", err, msg ? msg : "");
        return;
    }
    if (!replica_same(q, why, size))
        return;
    int st = ldb_live_status(q->q, NULL);
    if (st == LDB_STATUS_READY) {
        char w[500];
        N.ready_checks++;
        N.ready_sourced += q->sourced;
        if (!same_as_sqlite(q->q, q->ssql, q->params, q->nparams, NULL, q->ordered, w, sizeof w)) {
            snprintf(why, size, "law 7: READY root: %s", w);
            return;
        }
    }
    if (q->has_child) {
        struct child_visit v = { q, st == LDB_STATUS_READY, "", 0 };
        CHECK_INT(ldb_live_read(q->q, visit_child, &v), LDB_OK);
        N.child_checks += v.checked;
        snprintf(why, size, "%s", v.why);
    }
}

static void on_status(void *ctx, ldb_live *h, int status, const char *msg)
{
    struct oq *q = ctx;
    if (status != LDB_STATUS_READY || q->fail[0])
        return;
    char why[600];
    check_query(q, why, sizeof why);
    if (why[0])
        snprintf(q->fail, sizeof q->fail, "in its READY callback: %s", why);
}

static void check_all(const char *when)
{
    for (int i = 0; i < W.nq; i++) {
        struct oq *q = &W.qs[i];
        char why[600];
        OCHECK(!q->fail[0], "step %d (%s): %s: %s", W.step, when, q->lsql, q->fail);
        check_query(q, why, sizeof why);
        OCHECK(!why[0], "step %d (%s): %s: %s", W.step, when, q->lsql, why);
    }
    for (int t = 0; t < W.nt; t++)
        if (W.mode[t] != T_LOCAL) {
            sp_check_laws(&W.sp[t], false);
            sp_check_receipts(&W.sp[t]);
        }
}

/* Statuses and row counts of every query and handle, as text (law 6:
 * what a stale settle must not change). */
static int picture_row(void *ctx, const ldb_row *r)
{
    FILE *f = ctx;
    for (int i = 0; i < ldb_row_columns(r); i++) {
        ldb_live *h = ldb_row_live(r, i);
        if (h)
            fprintf(f, " h%lld:%d/%lld", (long long)ldb_live_id(h), ldb_live_status(h, NULL),
                    (long long)ldb_live_count(h));
    }
    return 0;
}

static char *picture(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (int i = 0; i < W.nq; i++) {
        fprintf(f, "q%d:%d/%lld", i, ldb_live_status(W.qs[i].q, NULL),
                (long long)ldb_live_count(W.qs[i].q));
        ldb_live_read(W.qs[i].q, picture_row, f);
        fputc('\n', f);
    }
    fclose(f);
    return text;
}

/* ---- steps ----------------------------------------------------------------------------- */

static void open_query(void)
{
    struct oq *q = &W.qs[W.nq];
    gen_query(q);
    ldb_stmt *st;
    int rc = ldb_prepare(W.db, q->lsql, -1, &st, NULL);
    CHECKF(rc == LDB_OK, "%s: rc %d: %s", q->lsql, rc, ldb_errmsg(W.db));
    for (int i = 0; i < q->nparams; i++)
        CHECK_INT(ldb_bind_int64(st, i + 1, q->params[i]), LDB_OK);
    rc = ldb_live_open_stmt(st, on_change, q, &q->q);
    ldb_finalize(st);
    if (rc != LDB_OK)
        replica_free(q);
    if (rc == LDB_UNSUPPORTED) {
        N.unsupported++;
        return;
    }
    CHECKF(rc == LDB_OK && q->q, "%s: rc %d: %s", q->lsql, rc, ldb_errmsg(W.db));
    CHECK_INT(ldb_live_set_status_callback(q->q, on_status, q), LDB_OK);
    for (const char *p = q->lsql; (p = strstr(p, " t")); p++)
        if (p[2] >= '0' && p[2] < '0' + W.nt && W.mode[p[2] - '0'] != T_LOCAL)
            q->sourced = true;
    note("open q%d: %s (status %d)", W.nq, q->lsql, ldb_live_status(q->q, NULL));
    W.nq++;
    N.opened++;
}

static void close_query(int i)
{
    note("close q%d", i);
    ldb_live_close(W.qs[i].q);
    replica_free(&W.qs[i]);
    W.qs[i] = W.qs[--W.nq];
    if (W.qs[i].q && i < W.nq) /* the callback's ctx moved with it */
        CHECK_INT(ldb_live_set_status_callback(W.qs[i].q, on_status, &W.qs[i]), LDB_OK);
    if (W.qs[i].q && i < W.nq)
        CHECK_INT(ldb_live_set_callback(W.qs[i].q, on_change, &W.qs[i]), LDB_OK);
}

static int pick_source(void)
{
    int n = 0, at[MAXT];
    for (int t = 0; t < W.nt; t++)
        if (W.mode[t] != T_LOCAL)
            at[n++] = t;
    return n ? at[rng_below(&W.r, (uint64_t)n)] : -1;
}

static void source_change(int t)
{
    char sql[256];
    int64_t id = 1 + (int64_t)rng_below(&W.r, (uint64_t)W.next_id[t] + 2);
    row_change_sql(sql, sizeof sql, t, id);
    auth_exec(sql);
    if (id >= W.next_id[t])
        W.next_id[t] = id + 1;
    note("source: %s", sql);
    CHECK_INT(sp_forward(&W.sp[t], id), LDB_OK);
}

static void local_change(void)
{
    int n = 0, at[MAXT];
    for (int t = 0; t < W.nt; t++)
        if (W.mode[t] == T_LOCAL)
            at[n++] = t;
    if (!n)
        return;
    int t = at[rng_below(&W.r, (uint64_t)n)];
    char sql[256];
    int64_t id = 1 + (int64_t)rng_below(&W.r, (uint64_t)W.next_id[t] + 2);
    row_change_sql(sql, sizeof sql, t, id);
    note("local: %s", sql);
    both_exec(sql);
    if (id >= W.next_id[t])
        W.next_id[t] = id + 1;
}

/* Settles, fails or partly writes a pending request of source t. */
static void serve(int t)
{
    script_provider *sp = &W.sp[t];
    int i = sp_pick_pending(sp);
    if (i < 0)
        return;
    struct sp_req *q = sp->reqs[i];
    int how = (int)rng_below(&W.r, 6);
    note("t%d request %llu (%s): %s", t, (unsigned long long)q->id, q->sql,
         how == 0 ? "partial write" : how == 1 ? "fail" : "settle");
    switch (how) {
    case 0: CHECK_INT(sp_write_some(sp, q, 3), LDB_OK); break;
    case 1:
        if (rng_chance(&W.r, 1, 2))
            CHECK_INT(sp_write_some(sp, q, 3), LDB_OK);
        CHECK_INT(sp_settle_fail(sp, q, "scripted failure"), LDB_OK);
        N.fails++;
        break;
    default:
        CHECK_INT(sp_settle_ok(sp, q, 1 + (int)rng_below(&W.r, 3)), LDB_OK);
        N.settles++;
        break;
    }
}

/* A write or settle of an aborted request the provider ignored the
 * cancel of: nothing may change (law 6). */
static void zombie(int t)
{
    script_provider *sp = &W.sp[t];
    int i = sp_pick_zombie(sp);
    if (i < 0)
        return;
    char *before = picture();
    note("t%d aborted request %llu: write or settle", t, (unsigned long long)sp->reqs[i]->id);
    if (rng_chance(&W.r, 1, 2))
        CHECK_INT(sp_write_some(sp, sp->reqs[i], 3), LDB_OK);
    else
        CHECK_INT(sp_settle_ok(sp, sp->reqs[i], 2), LDB_OK);
    char *after = picture();
    OCHECK(strcmp(before, after) == 0,
           "step %d: law 6: a write or settle of aborted request %llu (%s) changed:\n%s---\n%s",
           W.step, (unsigned long long)sp->reqs[i]->id, sp->reqs[i]->sql, before, after);
    free(before);
    free(after);
    N.zombies++;
}

/* Detaches source t with its queries open: every request is unloaded
 * once and its queries turn READY over a local table that holds what
 * the cache held; SQLite drops the rows the cache never got. */
static void detach_source(int t)
{
    note("detach t%d", t);
    /* SQLite first: the READY callbacks of the detach compare with it */
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT id FROM t%d", t);
    cmp_result ids;
    cmp_run_livedb(W.db, sql, &ids);
    CHECK(ids.ok);
    auth_exec("CREATE TEMP TABLE kept(id INTEGER PRIMARY KEY)");
    for (size_t i = 0; i < ids.n; i++) {
        char ins[64];
        snprintf(ins, sizeof ins, "INSERT INTO kept VALUES (%s)", ids.rows[i] + 2); /* "i:<id>" */
        auth_exec(ins);
    }
    cmp_result_free(&ids);
    snprintf(sql, sizeof sql, "DELETE FROM t%d WHERE id NOT IN (SELECT id FROM kept)", t);
    auth_exec(sql);
    auth_exec("DROP TABLE kept");
    W.mode[t] = T_LOCAL;
    W.detached[t] = true;
    CHECK_INT(ldb_source_detach(W.sp[t].src), LDB_OK);
    W.sp[t].src = NULL;
    CHECK_INT(W.sp[t].destroyed, 1);
    sp_check_receipts(&W.sp[t]);
    sp_check_laws(&W.sp[t], true);
}

static void retry_errors(void)
{
    for (int i = 0; i < W.nq; i++)
        if (ldb_live_status(W.qs[i].q, NULL) == LDB_STATUS_ERROR && (note("retry q%d", i), 1))
            CHECK_INT(ldb_live_retry(W.qs[i].q), LDB_OK);
}

/* Settles everything and retries every failure until nothing is
 * pending: then every query must be READY (law 10). */
static void drain(void)
{
    note("settle everything");
    for (int t = 0; t < W.nt; t++)
        W.sp[t].load_mode = SP_LOAD_DEFER;
    for (int round = 0; round < 8; round++) {
        retry_errors();
        bool any = false;
        for (int t = 0; t < W.nt; t++) {
            if (W.mode[t] == T_LOCAL)
                continue;
            for (int i; (i = sp_pick_pending(&W.sp[t])) >= 0; any = true)
                CHECK_INT(sp_settle_ok(&W.sp[t], W.sp[t].reqs[i], 1), LDB_OK);
        }
        if (!any)
            break;
    }
    for (int i = 0; i < W.nq; i++) {
        const char *msg = NULL;
        int st = ldb_live_status(W.qs[i].q, &msg);
        OCHECK(st == LDB_STATUS_READY,
               "step %d: law 10: every request settled, but %s is %s (%s)", W.step, W.qs[i].lsql,
               st == LDB_STATUS_LOADING ? "LOADING" : "ERROR", msg ? msg : "");
    }
    check_all("after settling everything");
}

/* Local writes and a source change inside one explicit transaction: the
 * feed's commit is parked until COMMIT. */
static void transaction(void)
{
    int t = pick_source();
    note("BEGIN");
    EXEC(W.db, "BEGIN");
    local_change();
    if (t >= 0)
        source_change(t);
    local_change();
    note("COMMIT");
    EXEC(W.db, "COMMIT");
}

static void one_step(void)
{
    for (int t = 0; t < W.nt; t++) {
        unsigned x = (unsigned)rng_below(&W.r, 20);
        W.sp[t].load_mode = x == 0 ? SP_LOAD_FAIL : x < 3 ? SP_LOAD_INLINE : SP_LOAD_DEFER;
        if (x < 3)
            note("t%d load_subset will %s", t, x == 0 ? "fail" : "settle inline");
    }
    int t = pick_source();
    if (t >= 0 && rng_chance(&W.r, 1, 200)) {
        detach_source(t);
        return;
    }
    switch (rng_below(&W.r, 14)) {
    case 0:
    case 1:
        if (W.nq < MAXQ)
            open_query();
        break;
    case 2:
        if (W.nq)
            close_query((int)rng_below(&W.r, (uint64_t)W.nq));
        break;
    case 3:
    case 4:
    case 5:
    case 6:
        if (t >= 0)
            serve(t);
        break;
    case 7:
    case 8:
        if (t >= 0)
            source_change(t);
        break;
    case 9: local_change(); break;
    case 10:
        if (t >= 0)
            zombie(t);
        break;
    case 11: transaction(); break;
    case 12: retry_errors(); break;
    default:
        if (t >= 0) /* a change the source makes that no request asks for */
            W.sp[t].feed_all = rng_chance(&W.r, 1, 4);
        break;
    }
}

static void end_world(void)
{
    while (W.nq)
        close_query(W.nq - 1);
    for (int t = 0; t < W.nt; t++) {
        if (W.mode[t] == T_LOCAL)
            continue;
        ldb_source_stats s;
        ldb_source_stats_get(W.sp[t].src, &s);
        bool eager = W.mode[t] == T_EAGER;
        CHECKF(s.demands <= (eager ? 1u : 0u) && s.requests_live <= (eager ? 1u : 0u) &&
                   s.queued == 0,
               "law 13: t%d with every query closed: demands %llu, live requests %llu, queued %llu",
               t, (unsigned long long)s.demands, (unsigned long long)s.requests_live,
               (unsigned long long)s.queued);
        sp_check_laws(&W.sp[t], eager ? false : true);
    }
    for (int t = 0; t < W.nt; t++)
        if (W.mode[t] != T_LOCAL && rng_chance(&W.r, 1, 2)) {
            CHECK_INT(ldb_source_detach(W.sp[t].src), LDB_OK);
            CHECK_INT(W.sp[t].destroyed, 1);
            sp_check_laws(&W.sp[t], true);
        }
    ldb_close(W.db);
    for (int t = 0; t < W.nt; t++)
        for (int i = 0; (W.mode[t] != T_LOCAL || W.detached[t]) && i < W.sp[t].nreqs; i++) {
            N.requests++;
            N.pushed += strcmp(W.sp[t].reqs[i]->sql, "TRUE") != 0;
            N.grouped += strstr(W.sp[t].reqs[i]->sql, " IN (") != NULL;
        }
    for (int t = 0; t < W.nt; t++)
        if (W.mode[t] != T_LOCAL || W.detached[t]) {
            CHECK_INT(W.sp[t].destroyed, 1);
            sp_check_laws(&W.sp[t], true);
            sp_free(&W.sp[t]);
        }
    sqlite3_close(W.auth);
}

static void run_history(uint64_t seed, int steps)
{
    make_world(seed);
    for (W.step = 0; W.step < steps; W.step++) {
        one_step();
        check_all("after the step");
        if (W.step % 25 == 24)
            drain();
    }
    drain();
    end_world();
}

static void histories(int n, int steps)
{
    memset(&N, 0, sizeof N);
    uint64_t seed = test_seed();
    for (int h = 0; h < n; h++)
        run_history(seed + (uint64_t)h, steps);
    printf("#    %d histories: %ld queries opened (%ld unsupported); READY results compared: %ld "
           "roots (%ld over sources), %ld handles; %ld requests (%ld with a predicate, %ld with "
           "IN); %ld settles, %ld failures, %ld stale writes/settles\n",
           n, N.opened, N.unsupported, N.ready_checks, N.ready_sourced, N.child_checks,
           N.requests, N.pushed, N.grouped, N.settles, N.fails, N.zombies);
}

static void source_oracle(void)
{
    collations = pages = false;
    histories(100 * test_scale(), 150);
}

/* The same with comparisons under other collations than their columns'
 * (a request must carry them, or ask for more). */
static void source_oracle_collations(void)
{
    collations = true;
    pages = false;
    histories(50 * test_scale(), 150);
}

/* The same with windows ordered by a column, which load in pages
 * (window_keeps_demand in test_source_basic). */
static void source_oracle_windows(void)
{
    collations = false;
    pages = true;
    histories(50 * test_scale(), 150);
}

TEST_MAIN(T(source_oracle), T(source_oracle_collations), T(source_oracle_windows))
