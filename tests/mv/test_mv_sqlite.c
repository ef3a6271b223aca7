/*
 * test_mv_sqlite.c - materialized views against SQLite: an oracle that
 * owes nothing to livedb's own executor.
 *
 * Random view bodies (tests/oracle_gen.h: the live-query oracle's
 * queries without parameters, plus bodies shaped for the projection and
 * aggregate arms, some made again with PRAGMA
 * materialized_view_cheap_arms = OFF) are kept by livedb while random
 * histories run on livedb and SQLite alike: writes, transactions,
 * savepoints, rollbacks, failing statements and index DDL (livedb only).
 * Views are also replaced, dropped inside a transaction that rolls back,
 * and created inside one that rolls back. After EVERY statement, inside
 * transactions too, each view's SELECT * must equal, as a bag, SQLite
 * evaluating the view's body over its own copy of the tables.
 *
 * LDB_SEED replays a run (each history prints its own seed too);
 * LDB_TEST_SCALE=k runs k times as many histories; LDB_ORACLE_LOG=file
 * saves the failing history as a script. Known livedb bugs run past:
 * the KNOWN_* switches of tests/oracle_known.h that shape the generator.
 */
#include "oracle_gen.h"
#include "oracle_known.h"

#include "base/mem.h"

#define VIEWS 8       /* generated bodies */
#define SIMPLE 3      /* cheap-arm bodies, each with a dataflow twin */
#define NVIEWS (VIEWS + 2 * SIMPLE)
#define STEPS 60      /* history steps */
/* per unit of LDB_TEST_SCALE: about 20 s of CPU at -O2; the sanitizer
 * build is 5 times slower, so it runs a quarter */
#define HISTORIES (ORACLE_SANITIZED ? 20 : 80)

typedef struct view {
    char name[16];
    oquery q;
    bool dropped; /* inside a transaction that will roll back */
} view;

typedef struct totals {
    long histories, views, checks, rows, replaced;
    long arms[4]; /* projection, aggregate, dataflow, rebuild */
} totals;

typedef struct oracle {
    oworld *w;
    view v[NVIEWS];
    int next; /* names views uniquely */
    totals *t;
} oracle;

/* ---- checking ------------------------------------------------------------------------ */

static void print_rows(const char *who, const cmp_result *r)
{
    printf("#   %s: %zu rows\n", who, r->n);
    for (size_t i = 0; i < r->n && i < 25; i++)
        printf("#     %s\n", r->rows[i]);
}

static void check_view(oracle *o, view *v)
{
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", v->name);
    cmp_result got, want;
    cmp_run_livedb(o->w->ld, sql, &got);
    for (size_t i = 0; i < got.n; i++)
        oq_normalize(&v->q, &got.rows[i]);
    ow_sqlite_rows(o->w, &v->q, v->q.offset, v->q.limit, &want);
    o->t->checks++;
    o->t->rows += (long)want.n;
    if (!got.ok || !cmp_same_rows(&want, &got, false)) {
        ow_report_history(o->w);
        char *body = oq_text(&v->q, false, v->q.offset, v->q.limit);
        printf("# view %s AS %s\n", v->name, body);
        mem_free(body);
        print_rows("SQLite", &want);
        if (got.ok)
            print_rows(v->name, &got);
        CHECKF(0, "history seed %llu: view %s differs from its body on SQLite%s%s",
               (unsigned long long)o->w->seed, v->name, got.ok ? "" : ": ", got.msg);
    }
    cmp_result_free(&got);
    cmp_result_free(&want);
}

static void check_all(oracle *o)
{
    for (int i = 0; i < NVIEWS; i++)
        if (!o->v[i].dropped)
            check_view(o, &o->v[i]);
}

/* ---- creating and dropping ---------------------------------------------------------- */

static void count_arm(oracle *o, const char *name)
{
    ldb_mv_stats st;
    CHECK_INT(ldb_mv_stats_get(o->w->ld, name, &st), LDB_OK);
    static const char *const arms[] = { "projection", "aggregate", "dataflow", "rebuild" };
    for (int i = 0; i < 4; i++)
        if (strcmp(st.strategy, arms[i]) == 0)
            o->t->arms[i]++;
}

/* CREATE MATERIALIZED VIEW name AS body (livedb only: SQLite evaluates
 * the body itself), with or without the cheap arms. */
static void create_view(oracle *o, view *v, bool cheap)
{
    char *body = oq_text(&v->q, false, v->q.offset, v->q.limit);
    strbuf sql = STRBUF_INIT;
    if (!cheap)
        sb_puts(&sql, "PRAGMA materialized_view_cheap_arms = OFF; ");
    sb_printf(&sql, "CREATE MATERIALIZED VIEW %s AS %s", v->name, body);
    if (!cheap)
        sb_puts(&sql, "; PRAGMA materialized_view_cheap_arms = ON");
    sb_printf(&o->w->log, "%s;\n", sb_str(&sql));
    int rc = ldb_exec(o->w->ld, sb_str(&sql), NULL, NULL);
    if (rc != LDB_OK) {
        ow_report_history(o->w);
        CHECKF(0, "history seed %llu: %s: %d %s", (unsigned long long)o->w->seed, sb_str(&sql),
               rc, ldb_errmsg(o->w->ld));
    }
    sb_free(&sql);
    mem_free(body);
    v->dropped = false;
    o->t->views++;
    count_arm(o, v->name);
}

static void new_view(oracle *o, view *v, int kind)
{
    snprintf(v->name, sizeof v->name, "mv%d", o->next++);
    if (kind == 0) {
        ogen_opts opts = { .mv = true,
                           .big = o->w->big };
        oq_generate(&o->w->r, &opts, &v->q);
    } else {
        oq_generate_simple(&o->w->r, &v->q);
    }
    create_view(o, v, kind != 2);
}

static void drop_view(oracle *o, view *v)
{
    char sql[64];
    snprintf(sql, sizeof sql, "DROP MATERIALIZED VIEW %s", v->name);
    sb_printf(&o->w->log, "%s;\n", sql);
    int rc = ldb_exec(o->w->ld, sql, NULL, NULL);
    CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(o->w->ld));
}

static int kind_of(int i) { return i < VIEWS ? 0 : 1 + (i - VIEWS) % 2; }

/* ---- the history's hooks ---------------------------------------------------------------- */

static void after(void *ctx, oworld *w, enum ow_point p)
{
    (void)w;
    (void)p;
    check_all(ctx);
}

/* Between transactions: replace a view; drop one inside a transaction
 * that rolls back (it must come back as it was); create one inside a
 * transaction that rolls back (it must be gone). */
static void between(void *ctx, oworld *w)
{
    oracle *o = ctx;
    int i = (int)rng_below(&w->r, NVIEWS), k = (int)rng_below(&w->r, 4);
    view *v = &o->v[i];
    if (k == 0) {
        drop_view(o, v);
        oq_free(&v->q);
        new_view(o, v, kind_of(i));
        o->t->replaced++;
        check_all(o);
    } else if (k == 1) {
        CHECK(ow_both(w, "BEGIN", NULL, 0));
        drop_view(o, v);
        v->dropped = true;
        check_all(o);
        ow_write(w);
        check_all(o);
        CHECK(ow_both(w, "ROLLBACK", NULL, 0));
        v->dropped = false;
        check_all(o);
    } else if (k == 2) {
        view extra;
        memset(&extra, 0, sizeof extra);
        CHECK(ow_both(w, "BEGIN", NULL, 0));
        new_view(o, &extra, 0);
        check_view(o, &extra);
        ow_write(w);
        check_view(o, &extra);
        check_all(o);
        CHECK(ow_both(w, "ROLLBACK", NULL, 0));
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", extra.name);
        CHECK_INT(ldb_exec(w->ld, sql, NULL, NULL), LDB_ERROR); /* no such table */
        oq_free(&extra.q);
        check_all(o);
    }
}

static void history(uint64_t seed, totals *t)
{
    oworld w;
    ow_open(&w, seed);
    static oracle o;
    memset(&o, 0, sizeof o);
    o.w = &w;
    o.t = t;
    for (int i = 0; i < NVIEWS; i++)
        new_view(&o, &o.v[i], kind_of(i));
    check_all(&o);
    ow_hooks h = { &o, after, between };
    for (int s = 0; s < STEPS; s++)
        ow_step(&w, &h);
    for (int i = 0; i < NVIEWS; i++)
        oq_free(&o.v[i].q);
    t->histories++;
    ow_close(&w);
}

static void views_match_sqlite(void)
{
    uint64_t seed = test_seed();
    totals t;
    memset(&t, 0, sizeof t);
    int n = HISTORIES * test_scale();
    for (int i = 0; i < n; i++)
        history(seed + (uint64_t)i, &t);
    printf("#    %ld histories, %ld views (%ld projection, %ld aggregate, %ld dataflow, %ld "
           "rebuild; %ld replaced), %ld checks (%ld rows)\n",
           t.histories, t.views, t.arms[0], t.arms[1], t.arms[2], t.arms[3], t.replaced,
           t.checks, t.rows);
    CHECK(t.arms[0] > 0 && t.arms[1] > 0 && t.arms[2] > 0); /* every incremental arm ran */
}

TEST_MAIN(T(views_match_sqlite))
