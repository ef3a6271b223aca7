/*
 * test_source_threads.c - the demand plane under concurrency: the example
 * provider (examples/thread_provider.c) with 4 worker threads commits
 * sync transactions and settles requests while a feeder thread changes
 * rows at the source and the main thread polls the queue's fd, writes a
 * local parent table and opens and closes live queries over the on-demand
 * table (plain, with pushed-down predicates, and with LIVE children).
 *
 * After the work stops and the queue drains, it checks the contract's
 * end state: every receipt is APPLIED or ABORTED (none stuck PENDING, none
 * FAILED); each open query's result equals a one-shot SELECT of the same
 * rows, and a plain query's equals the source's truth (a READY subset is
 * complete and current); no request was unloaded twice or without a load,
 * every loaded one is unloaded once everything is closed; and the source's
 * demands and live requests are back to zero (law 13). Run under TSan by
 * make test-tsan. Worker threads never CHECK: the main thread does.
 */
#include "test_db.h"
#include "thread_provider.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define NKEYS 400
#define NGROUPS 20
#define MAXQ 6

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- row sets as sorted text lines ------------------------------------------------------ */

struct lines {
    char **v;
    size_t n, cap;
};

static void lines_add(struct lines *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void lines_free(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Columns [from, n) of r as "a|b|c" after prefix. */
static void row_text(const ldb_row *r, int from, const char *prefix, char *out, size_t size)
{
    size_t len = (size_t)snprintf(out, size, "%s", prefix);
    for (int i = from; i < ldb_row_columns(r) && len < size; i++) {
        if (ldb_row_type(r, i) == LDB_LIVE)
            continue;
        char buf[64];
        ldb_row_format(r, i, buf, sizeof buf);
        len += (size_t)snprintf(out + len, size - len, "%s%s", len ? "|" : "", buf);
    }
}

static int add_row(void *ctx, const ldb_row *r)
{
    char buf[256];
    row_text(r, 0, "", buf, sizeof buf);
    lines_add(ctx, buf);
    return 0;
}

struct child_ctx {
    struct lines *out;
    const char *prefix;
};

static int add_child_row(void *ctx, const ldb_row *r)
{
    struct child_ctx *c = ctx;
    char buf[256];
    row_text(r, 0, c->prefix, buf, sizeof buf);
    lines_add(c->out, buf);
    return 0;
}

/* A root row: its own columns, or one line per row of its LIVE child,
 * prefixed by them (the rows a join of parent and child gives). */
static int add_parent_row(void *ctx, const ldb_row *r)
{
    char prefix[128];
    row_text(r, 0, "", prefix, sizeof prefix);
    for (int i = 0; i < ldb_row_columns(r); i++) {
        if (ldb_row_type(r, i) == LDB_LIVE) {
            struct child_ctx c = { ctx, prefix };
            ldb_live_read(ldb_row_live(r, i), add_child_row, &c);
        }
    }
    return 0;
}

static void check_same(struct lines *a, struct lines *b, const char *what)
{
    qsort(a->v, a->n, sizeof *a->v, cmp_str);
    qsort(b->v, b->n, sizeof *b->v, cmp_str);
    CHECKF(a->n == b->n, "%s: %zu rows, wanted %zu", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        CHECKF(strcmp(a->v[i], b->v[i]) == 0, "%s: row %s, wanted %s", what, a->v[i], b->v[i]);
}

/* ---- the workload ---------------------------------------------------------------------- */

struct query {
    ldb_live *q;
    int kind;                   /* 0 plain, 1 pushed IN/range, 2 LIVE children */
    int grp;
    char sql[256], oneshot[256];
};

struct feeder {
    tp_provider *p;
    atomic_bool stop;
    unsigned seed;
    atomic_int errors;
};

/* Changes at the source: upserts over existing and new keys, deletes. */
static void *feed(void *arg)
{
    struct feeder *f = arg;
    static const char *const words[] = { "a", "b", "c", "d" };
    while (!atomic_load(&f->stop)) {
        int64_t id = rand_r(&f->seed) % (NKEYS + 50);
        int64_t v = rand_r(&f->seed) % 100;
        int rc;
        if (rand_r(&f->seed) % 5 == 0) {
            rc = tp_delete(f->p, id);
            if (rc == LDB_NOTFOUND)
                rc = LDB_OK;
        } else {
            tp_value row[4] = { TP_INT(id), TP_INT(rand_r(&f->seed) % NGROUPS), TP_INT(v),
                                TP_TEXT(words[v % 4]) };
            rc = tp_upsert(f->p, row);
        }
        if (rc)
            atomic_fetch_add(&f->errors, 1);
        struct timespec ts = { 0, 200000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void open_query(ldb *db, rng *r, struct query *qq)
{
    qq->kind = (int)rng_below(r, 3);
    qq->grp = (int)rng_below(r, NGROUPS);
    int k2 = (int)rng_below(r, NGROUPS), x = (int)rng_below(r, 100);
    switch (qq->kind) {
    case 0:
        snprintf(qq->sql, sizeof qq->sql, "SELECT id, grp, v, s FROM t WHERE grp = %d", qq->grp);
        memcpy(qq->oneshot, qq->sql, sizeof qq->sql);
        break;
    case 1:
        snprintf(qq->sql, sizeof qq->sql,
                 "SELECT id, v FROM t WHERE grp IN (%d, %d) AND (v > %d OR s IS NULL)", qq->grp,
                 k2, x);
        memcpy(qq->oneshot, qq->sql, sizeof qq->sql);
        break;
    default:
        snprintf(qq->sql, sizeof qq->sql,
                 "SELECT g.id, LIVE(SELECT t.id, t.v FROM t WHERE t.grp = g.id) FROM g "
                 "WHERE g.id < %d",
                 qq->grp + 5);
        snprintf(qq->oneshot, sizeof qq->oneshot,
                 "SELECT g.id, t.id, t.v FROM g JOIN t ON t.grp = g.id WHERE g.id < %d",
                 qq->grp + 5);
    }
    int rc = ldb_live_open(db, qq->sql, NULL, NULL, &qq->q);
    CHECKF(rc == LDB_OK, "%s: %s", qq->sql, ldb_errmsg(db));
}

static void poll_once(ldb *db, int fd, int timeout_ms)
{
    struct pollfd pfd = { fd, POLLIN, 0 };
    if (poll(&pfd, 1, timeout_ms) > 0)
        CHECK_INT(ldb_source_poll(db), LDB_OK);
}

static void local_write(ldb *db, rng *r)
{
    char sql[96];
    int id = 10 + (int)rng_below(r, NGROUPS);
    if (rng_chance(r, 1, 2))
        snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO g VALUES (%d)", id);
    else
        snprintf(sql, sizeof sql, "DELETE FROM g WHERE id = %d", id);
    EXEC(db, sql);
}

/* Applies everything until the provider is idle, the queue is empty and
 * every open query is READY. */
static void drain(ldb *db, tp_provider *p, ldb_source *src, struct query *qs)
{
    uint64_t deadline = now_ms() + 20000;
    for (;;) {
        tp_wait_idle(p);
        CHECK_INT(ldb_source_poll(db), LDB_OK);
        ldb_source_stats st;
        ldb_source_stats_get(src, &st);
        bool ready = st.queued == 0;
        for (int i = 0; i < MAXQ && ready; i++)
            if (qs[i].q)
                ready = ldb_live_status(qs[i].q, NULL) == LDB_STATUS_READY;
        if (ready)
            return;
        CHECKF(now_ms() < deadline, "the queue did not drain");
    }
}

struct truth {
    struct lines *out;
    int grp;
};

static void truth_row(void *ctx, const tp_value *v)
{
    struct truth *t = ctx;
    if (v[1].i != t->grp)
        return;
    char buf[128];
    snprintf(buf, sizeof buf, "%lld|%lld|%lld|%s", (long long)v[0].i, (long long)v[1].i,
             (long long)v[2].i, v[3].s);
    lines_add(t->out, buf);
}

static void check_query(ldb *db, tp_provider *p, struct query *qq)
{
    struct lines live = { 0 }, shot = { 0 };
    CHECK_INT(ldb_live_error(qq->q, NULL), LDB_OK);
    CHECK_INT(ldb_live_read(qq->q, qq->kind == 2 ? add_parent_row : add_row, &live), LDB_OK);
    CHECK_INT(ldb_exec(db, qq->oneshot, add_row, &shot), LDB_OK);
    check_same(&live, &shot, qq->sql);
    if (qq->kind == 0) { /* the cache holds the source's truth for a READY subset */
        lines_free(&shot);
        struct truth t = { &shot, qq->grp };
        tp_each_row(p, truth_row, &t);
        check_same(&live, &shot, "against the source");
    }
    lines_free(&live);
    lines_free(&shot);
}

static tp_provider *make_provider(ldb *db, ldb_source **src, int mode, int latency_ms)
{
    static const char *const cols[] = { "id", "grp", "v", "s" };
    static const char *const words[] = { "a", "b", "c", "d" };
    tp_value *rows = calloc(NKEYS * 4, sizeof *rows);
    for (int i = 0; i < NKEYS; i++) {
        rows[i * 4] = TP_INT(i);
        rows[i * 4 + 1] = TP_INT(i % NGROUPS);
        rows[i * 4 + 2] = TP_INT(i % 97);
        rows[i * 4 + 3] = TP_TEXT(words[i % 4]);
    }
    tp_config cfg = { .ncols = 4, .columns = cols, .key_col = 0, .rows = rows, .nrows = NKEYS,
                      .threads = 4, .latency_min_ms = latency_ms, .latency_max_ms = latency_ms + 3, .page_rows = 7,
                      .keep_receipts = 1, .seed = (unsigned)test_seed() };
    tp_provider *p;
    CHECK_INT(tp_new(&cfg, &p), LDB_OK);
    free(rows);
    CHECK_INT(tp_attach(p, db, "t", mode, src), LDB_OK);
    return p;
}

static void stress(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, v INTEGER, s TEXT)");
    EXEC(db, "CREATE TABLE g(id INTEGER PRIMARY KEY)");
    EXEC(db, "INSERT INTO g VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)");
    ldb_source *src;
    tp_provider *p = make_provider(db, &src, LDB_SOURCE_ON_DEMAND, 0);
    int fd = ldb_source_fd(db);
    CHECK(fd >= 0);

    rng r;
    rng_seed(&r, test_seed());
    struct feeder f = { .p = p, .seed = (unsigned)test_seed() };
    atomic_init(&f.stop, false);
    atomic_init(&f.errors, 0);
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, feed, &f), 0);

    struct query qs[MAXQ] = { 0 };
    uint64_t end = now_ms() + 1000 * (uint64_t)test_scale();
    int opened = 0;
    while (now_ms() < end) {
        struct query *qq = &qs[rng_below(&r, MAXQ)];
        if (!qq->q) {
            open_query(db, &r, qq);
            opened++;
        } else if (rng_chance(&r, 1, 3)) {
            ldb_live_close(qq->q);
            qq->q = NULL;
        }
        if (rng_chance(&r, 1, 4))
            local_write(db, &r);
        poll_once(db, fd, 1);
    }
    atomic_store(&f.stop, true);
    pthread_join(th, NULL);
    CHECK_INT(atomic_load(&f.errors), 0);
    CHECK(opened > 10);

    drain(db, p, src, qs);
    uint64_t rc[4];
    tp_receipts(p, rc);
    CHECKF(rc[LDB_RECEIPT_PENDING] == 0 && rc[LDB_RECEIPT_FAILED] == 0,
           "receipts: %llu pending, %llu failed", (unsigned long long)rc[0],
           (unsigned long long)rc[3]);
    CHECK(rc[LDB_RECEIPT_APPLIED] > 0);
    for (int i = 0; i < MAXQ; i++)
        if (qs[i].q)
            check_query(db, p, &qs[i]);

    for (int i = 0; i < MAXQ; i++)
        ldb_live_close(qs[i].q);
    CHECK_INT(ldb_source_poll(db), LDB_OK);
    tp_stats ts;
    tp_stats_get(p, &ts);
    CHECK_INT(ts.bad_unloads, 0);
    CHECK_INT(ts.unloads, ts.loads);
    ldb_source_stats st;
    ldb_source_stats_get(src, &st);
    CHECK_INT(st.demands, 0);
    CHECK_INT(st.requests_live, 0);
    CHECK_INT(st.requests, ts.loads);
    printf("# %d queries, %llu requests (%llu aborted, %llu stopped), %llu txns, "
           "receipts %llu applied %llu aborted\n",
           opened, (unsigned long long)ts.loads, (unsigned long long)ts.aborts,
           (unsigned long long)ts.stopped, (unsigned long long)ts.txns,
           (unsigned long long)rc[LDB_RECEIPT_APPLIED], (unsigned long long)rc[LDB_RECEIPT_ABORTED]);
    ldb_close(db);
}

/* ldb_close with a live query still open and a provider still loading:
 * the queries release their demand, the requests are aborted and
 * unloaded, destroy joins the workers. Regression (under ASan/TSan):
 * src_registry_free reset the live registry's hooks after ldb_close had
 * freed that registry, a write after free on every close. */
static void close_while_loading(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, v INTEGER, s TEXT)");
    ldb_source *src;
    make_provider(db, &src, LDB_SOURCE_ON_DEMAND, 10000); /* cut short by the abort */
    ldb_live *q;
    CHECK_INT(ldb_live_open(db, "SELECT id, v FROM t WHERE grp = 3", NULL, NULL, &q), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_LOADING);
    ldb_close(db);
}

/* An EAGER source detached halfway through its load: the workers stop
 * (destroy joins them, their queued transactions are dropped), the query
 * turns READY over the rows that arrived, and the table is local again. */
static void detach_while_loading(void)
{
    ldb *db;
    CHECK_INT(ldb_open(NULL, &db), LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, v INTEGER, s TEXT)");
    ldb_source *src;
    tp_provider *p = make_provider(db, &src, LDB_SOURCE_EAGER, 0);
    ldb_live *q;
    CHECK_INT(ldb_live_open(db, "SELECT grp, count(*) FROM t GROUP BY grp", NULL, NULL, &q),
              LDB_OK);
    int fd = ldb_source_fd(db);
    for (int i = 0; i < 3; i++)
        poll_once(db, fd, 5);
    CHECK_INT(ldb_source_detach(src), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    EXEC(db, "INSERT INTO t VALUES (100000, 1, 1, 'local')");
    struct lines live = { 0 }, shot = { 0 };
    CHECK_INT(ldb_live_read(q, add_row, &live), LDB_OK);
    CHECK_INT(ldb_exec(db, "SELECT grp, count(*) FROM t GROUP BY grp", add_row, &shot), LDB_OK);
    check_same(&live, &shot, "after detach");
    lines_free(&live);
    lines_free(&shot);
    (void)p; /* freed by the detach */
    ldb_live_close(q);
    ldb_close(db);
}

TEST_MAIN(T(stress), T(close_while_loading), T(detach_while_loading))
