/*
 * bench_pg.c - the PostgreSQL adapter (include/livedb_pg.h) against a real
 * server, and in the same run the common alternative: a trigger NOTIFYs on
 * every write and a listener re-runs the query in PostgreSQL.
 * make bench-pg starts a throwaway cluster (tools/pg_cluster.sh) and runs
 * this with LDB_PG_DIR naming it; the role's connection string is in
 * $LDB_PG_DIR/conninfo.
 *
 * Tables: lat (10k rows, grp = id % 100, a statement trigger NOTIFYing
 * channel "lat") and items (1.2M rows, grp = id % 12; quick 60k). The
 * PostgreSQL-only baselines run first, before the adapter connects, so the
 * stream never competes with them; then the same work through livedb.
 * Sections (arguments; none: all):
 *   latency  a writer commits N single-row UPDATEs (N = 2000, quick 200)
 *            one at a time to rows of SELECT .. FROM lat WHERE grp = 7
 *            (100 rows). Measured from the writer's commit returning to
 *            (livedb) the live query's change callback, ldb_pg_wait in the
 *            same thread, or (notify) the re-run's result in memory after
 *            the notification arrived. The writer's commit round trip is
 *            in neither.
 *   load     SELECT .. FROM items WHERE grp < 10 (1M of 1.2M rows; quick
 *            50k of 60k): livedb from ldb_live_open until READY over an
 *            ON_DEMAND table, against the same SELECT through plain libpq
 *            into a PGresult.
 *   cpu      a writer thread commits K row changes (K = 20k, quick 2k) in
 *            transactions of 20 UPDATEd rows of SELECT .. FROM lat WHERE
 *            grp < 10 (1000 rows). getrusage of the process (user + sys)
 *            minus the writer thread's own, over the K changes, per
 *            change; the notify baseline re-runs the query once per
 *            notification (one per transaction). The server side is given
 *            too: the CPU of the walsender (livedb) or of the listener's
 *            backend (notify), read from /proc (10 ms ticks).
 * Lines: bench latency.{livedb,notify}.{median,p95} us, ratio.latency.*
 *        x, load.{livedb,libpq} rows/s, cpu.{livedb,notify}.{process,
 *        server} us/change, ratio.cpu.process x.
 */
#include "bench_util.h"

#include "livedb.h"
#include "livedb_pg.h"

#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define LAT_ROWS 10000
#define TXN_ROWS 20
#define WAIT_MS 10000

static const char lat_sql[] = "SELECT id, val, note FROM lat WHERE grp = 7";
static const char cpu_sql[] = "SELECT id, val, note FROM lat WHERE grp < 10";
static const char load_sql[] = "SELECT id, grp, val, pad FROM items WHERE grp < 10";

static char conninfo[1024];

/* ---- PostgreSQL helpers ---------------------------------------------------- */

static void read_conninfo(void)
{
    const char *dir = getenv("LDB_PG_DIR");
    if (!dir)
        bench_die("LDB_PG_DIR", "not set (run make bench-pg)");
    char path[512];
    snprintf(path, sizeof path, "%s/conninfo", dir);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(conninfo, sizeof conninfo, f))
        bench_die(path, "cannot read");
    fclose(f);
    conninfo[strcspn(conninfo, "\n")] = 0;
}

static PGconn *pg_connect(void)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK)
        bench_die("connect", PQerrorMessage(c));
    return c;
}

static void pg_run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        bench_die(sql, PQerrorMessage(c));
    PQclear(r);
}

static long long pg_int(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        bench_die(sql, PQerrorMessage(c));
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void update_lat(PGconn *c, long long id)
{
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE lat SET val = val + 1 WHERE id = %lld", id);
    pg_run(c, sql);
}

/* Waits for one notification on c (any channel: c listens to one). */
static void wait_notify(PGconn *c)
{
    for (;;) {
        if (!PQconsumeInput(c))
            bench_die("LISTEN", PQerrorMessage(c));
        PGnotify *n = PQnotifies(c);
        if (n) {
            PQfreemem(n);
            return;
        }
        struct pollfd pfd = { PQsocket(c), POLLIN, 0 };
        if (poll(&pfd, 1, WAIT_MS) == 0)
            bench_die("LISTEN", "no notification in 10 s");
    }
}

static void drain_notify(PGconn *c)
{
    PGnotify *n;
    PQconsumeInput(c);
    while ((n = PQnotifies(c)) != NULL)
        PQfreemem(n);
}

/* Re-runs a prepared query and reads every value, as a program refreshing
 * its copy of the result would; returns the rows. */
static int rerun(PGconn *c, const char *stmt)
{
    PGresult *r = PQexecPrepared(c, stmt, 0, NULL, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        bench_die(stmt, PQerrorMessage(c));
    size_t bytes = 0;
    int rows = PQntuples(r);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < PQnfields(r); j++)
            bytes += strlen(PQgetvalue(r, i, j));
    PQclear(r);
    return bytes ? rows : 0;
}

static void prepare(PGconn *c, const char *name, const char *sql)
{
    PGresult *r = PQprepare(c, name, sql, 0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        bench_die(sql, PQerrorMessage(c));
    PQclear(r);
}

/* CPU time of a server process in microseconds (utime + stime of
 * /proc/pid/stat, in clock ticks); -1 when unreadable. */
static double proc_cpu_us(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_us(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* ---- schema and data ----------------------------------------------------------- */

static void create_lat(PGconn *c)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE TABLE lat (id bigint PRIMARY KEY, grp int NOT NULL, val bigint NOT NULL,"
             " note text NOT NULL);"
             "INSERT INTO lat SELECT i, i %% 100, 0, 'note ' || i"
             " FROM generate_series(1, %d) i;"
             "CREATE INDEX ON lat (grp); ANALYZE lat;",
             LAT_ROWS);
    pg_run(c, sql);
    pg_run(c, "CREATE FUNCTION lat_notify() RETURNS trigger LANGUAGE plpgsql AS"
              " $$ BEGIN PERFORM pg_notify('lat', ''); RETURN NULL; END $$;"
              "CREATE TRIGGER lat_notify AFTER INSERT OR UPDATE OR DELETE ON lat"
              " FOR EACH STATEMENT EXECUTE FUNCTION lat_notify()");
}

static void create_items(PGconn *c, int total)
{
    char sql[512];
    uint64_t t0 = bench_ns();
    snprintf(sql, sizeof sql,
             "CREATE TABLE items (id bigint PRIMARY KEY, grp int NOT NULL, val bigint NOT NULL,"
             " pad text NOT NULL);"
             "INSERT INTO items SELECT i, i %% 12, i * 7, 'item ' || i"
             " FROM generate_series(1, %d) i;"
             "ANALYZE items;",
             total);
    pg_run(c, sql);
    printf("# items: %d rows filled in %.1f s\n", total, (double)(bench_ns() - t0) / 1e9);
}

/* ---- the writer ------------------------------------------------------------------- */

/* The k-th of the 1000 rows with grp < 10 (id 0 does not exist: 10000 is
 * the first one's stand-in). */
static long long cpu_row(int k)
{
    long long id = (long long)(k / 10) * 100 + k % 10;
    return id ? id : LAT_ROWS;
}

struct writer {
    PGconn *conn;
    int txns;
    double cpu_us;   /* the thread's own CPU, taken at its end */
};

/* Commits txns transactions of TXN_ROWS distinct rows of cpu_sql each
 * (37 is prime to 1000: the rows of one transaction differ). */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    char sql[1024];
    for (int t = 0; t < w->txns; t++) {
        int n = snprintf(sql, sizeof sql, "UPDATE lat SET val = val + 1 WHERE id IN (");
        for (int m = 0; m < TXN_ROWS; m++)
            n += snprintf(sql + n, sizeof sql - (size_t)n, "%s%lld", m ? "," : "",
                          cpu_row((t * 7 + m * 37) % 1000));
        snprintf(sql + n, sizeof sql - (size_t)n, ")");
        pg_run(w->conn, sql);
    }
    w->cpu_us = self_cpu_us(RUSAGE_THREAD);
    return NULL;
}

static void writer_start(struct writer *w, pthread_t *th, PGconn *c, int txns)
{
    w->conn = c;
    w->txns = txns;
    w->cpu_us = 0;
    if (pthread_create(th, NULL, writer_main, w) != 0)
        bench_die("pthread_create", "failed");
}

/* ---- figures ---------------------------------------------------------------------- */

struct figures {
    double lat_livedb[2], lat_notify[2];   /* median, p95 (us) */
    double cpu_livedb[2], cpu_notify[2];   /* process, server (us/change) */
};

static long long lat_id(uint64_t *rng)
{
    return 7 + 100 * (long long)(bench_rand(rng) % (LAT_ROWS / 100));
}

/* Commits one single-row UPDATE on w; returns when its commit returned,
 * and the round trip in *rt_us. */
static uint64_t timed_update(PGconn *w, uint64_t *rng, double *rt_us)
{
    uint64_t t0 = bench_ns();
    update_lat(w, lat_id(rng));
    uint64_t t1 = bench_ns();
    *rt_us = (double)(t1 - t0) / 1e3;
    return t1;
}

static void print_latency(const char *who, double *us, double *rt, int n, double *out)
{
    char name[64];
    printf("# %s: the writer's commit round trip (before the measured span): median %.0f us\n",
           who, bench_quantile(rt, (size_t)n, 0.5));
    out[0] = bench_quantile(us, (size_t)n, 0.5);
    out[1] = bench_quantile(us, (size_t)n, 0.95);
    snprintf(name, sizeof name, "latency.%s.median", who);
    bench_print(name, out[0], "us");
    snprintf(name, sizeof name, "latency.%s.p95", who);
    bench_print(name, out[1], "us");
}

static void notify_latency(PGconn *w, PGconn *l, int n, struct figures *f)
{
    double *us = bench_realloc(NULL, sizeof(double) * 2 * (size_t)n), *rt = us + n;
    uint64_t rng = 1;
    prepare(l, "lat_q", lat_sql);
    pg_run(l, "LISTEN lat");
    for (int i = 0; i < n; i++) {
        uint64_t t1 = timed_update(w, &rng, &rt[i]);
        wait_notify(l);
        if (rerun(l, "lat_q") != LAT_ROWS / 100)
            bench_die("notify latency", "the re-run lost rows");
        us[i] = (double)(bench_ns() - t1) / 1e3;
    }
    pg_run(l, "UNLISTEN lat");
    drain_notify(l);
    print_latency("notify", us, rt, n, f->lat_notify);
    free(us);
}

static void notify_cpu(PGconn *w, PGconn *l, int txns, struct figures *f)
{
    struct writer wr;
    pthread_t th;
    prepare(l, "cpu_q", cpu_sql);
    pg_run(l, "LISTEN lat");
    long backend = PQbackendPID(l);
    double server0 = proc_cpu_us(backend), cpu0 = self_cpu_us(RUSAGE_SELF);
    uint64_t t0 = bench_ns();
    writer_start(&wr, &th, w, txns);
    for (int t = 0; t < txns; t++) {
        wait_notify(l);
        if (rerun(l, "cpu_q") != 1000)
            bench_die("notify cpu", "the re-run lost rows");
    }
    pthread_join(th, NULL);
    double changes = (double)txns * TXN_ROWS;
    f->cpu_notify[0] = (self_cpu_us(RUSAGE_SELF) - cpu0 - wr.cpu_us) / changes;
    f->cpu_notify[1] = server0 < 0 ? -1 : (proc_cpu_us(backend) - server0) / changes;
    printf("# notify: %d transactions of %d rows, %d re-runs of 1000 rows, %.2f s\n", txns,
           TXN_ROWS, txns, (double)(bench_ns() - t0) / 1e9);
    pg_run(l, "UNLISTEN lat");
    drain_notify(l);
    bench_print("cpu.notify.process", f->cpu_notify[0], "us/change");
    if (f->cpu_notify[1] >= 0)
        bench_print("cpu.notify.server", f->cpu_notify[1], "us/change");
}

static void libpq_load(PGconn *c, int subset)
{
    uint64_t t0 = bench_ns();
    PGresult *r = PQexec(c, load_sql);
    double s = (double)(bench_ns() - t0) / 1e9;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != subset)
        bench_die(load_sql, PQerrorMessage(c));
    PQclear(r);
    bench_print("load.libpq", subset / s, "rows/s");
}

/* ---- livedb ----------------------------------------------------------------------- */

static uint64_t changed_ns;   /* when the last change batch arrived */
static uint64_t changes_seen;

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    changed_ns = bench_ns();
    changes_seen += n;
}

static void wait_until(ldb_pg *pg, int (*done)(void *), void *ctx, const char *what)
{
    uint64_t deadline = bench_ns() + (uint64_t)WAIT_MS * 1000000u * 12;
    while (!done(ctx)) {
        if (bench_ns() > deadline)
            bench_die(what, "timed out");
        if (ldb_pg_wait(pg, 100) != LDB_OK)
            bench_die(what, ldb_pg_errmsg(pg));
    }
}

static int is_ready(void *q)
{
    const char *msg;
    int st = ldb_live_status(q, &msg);
    if (st == LDB_STATUS_ERROR)
        bench_die("live query", msg ? msg : "status ERROR");
    return st == LDB_STATUS_READY;
}

static int seen_more(void *before)
{
    return changes_seen > *(uint64_t *)before;
}

static ldb_live *open_ready(ldb *db, ldb_pg *pg, const char *sql, ldb_change_fn fn)
{
    ldb_live *q;
    if (ldb_live_open(db, sql, fn, NULL, &q) != LDB_OK)
        bench_die_db(db, sql);
    wait_until(pg, is_ready, q, sql);
    if (ldb_pg_sync(pg, WAIT_MS) != LDB_OK)
        bench_die("ldb_pg_sync", ldb_pg_errmsg(pg));
    return q;
}

static void livedb_latency(ldb *db, ldb_pg *pg, PGconn *w, int n, struct figures *f)
{
    ldb_live *q = open_ready(db, pg, lat_sql, on_change);
    double *us = bench_realloc(NULL, sizeof(double) * 2 * (size_t)n), *rt = us + n;
    uint64_t rng = 1;
    for (int i = 0; i < n; i++) {
        uint64_t before = changes_seen;
        uint64_t t1 = timed_update(w, &rng, &rt[i]);
        wait_until(pg, seen_more, &before, "livedb latency");
        us[i] = (double)(changed_ns - t1) / 1e3;
    }
    ldb_live_close(q);
    print_latency("livedb", us, rt, n, f->lat_livedb);
    free(us);
}

static void livedb_load(ldb *db, ldb_pg *pg, int subset)
{
    ldb_pg_stats st;
    ldb_pg_stats_get(pg, &st);
    uint64_t loads0 = st.loads, t0 = bench_ns();
    ldb_live *q;
    if (ldb_live_open(db, load_sql, NULL, NULL, &q) != LDB_OK)
        bench_die_db(db, load_sql);
    wait_until(pg, is_ready, q, load_sql);
    double s = (double)(bench_ns() - t0) / 1e9;
    if (ldb_live_count(q) != subset)
        bench_die("load", "the live query does not show the whole subset");
    ldb_pg_stats_get(pg, &st);
    printf("# livedb: %d rows READY in %.2f s (%llu SELECTs)\n", subset, s,
           (unsigned long long)(st.loads - loads0));
    bench_print("load.livedb", subset / s, "rows/s");
    ldb_live_close(q);
}

/* The stream's CPU in the server: every walsender's. */
static double walsender_cpu_us(PGconn *c)
{
    PGresult *r = PQexec(c, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsender'");
    double sum = PQntuples(r) ? 0 : -1;
    for (int i = 0; i < PQntuples(r) && sum >= 0; i++) {
        double v = proc_cpu_us(atol(PQgetvalue(r, i, 0)));
        sum = v < 0 ? -1 : sum + v;
    }
    PQclear(r);
    return sum;
}

struct applied { ldb_pg *pg; uint64_t target; };

static int applied_all(void *ctx)
{
    struct applied *a = ctx;
    ldb_pg_stats st;
    ldb_pg_stats_get(a->pg, &st);
    return st.changes >= a->target;
}

static void livedb_cpu(ldb *db, ldb_pg *pg, PGconn *w, PGconn *probe, int txns,
                       struct figures *f)
{
    ldb_live *q = open_ready(db, pg, cpu_sql, on_change);
    ldb_pg_stats st;
    ldb_pg_stats_get(pg, &st);
    struct applied a = { pg, st.changes + (uint64_t)txns * TXN_ROWS };
    struct writer wr;
    pthread_t th;
    double server0 = walsender_cpu_us(probe), cpu0 = self_cpu_us(RUSAGE_SELF);
    uint64_t t0 = bench_ns();
    writer_start(&wr, &th, w, txns);
    wait_until(pg, applied_all, &a, "livedb cpu");
    pthread_join(th, NULL);
    double changes = (double)txns * TXN_ROWS, s = (double)(bench_ns() - t0) / 1e9;
    f->cpu_livedb[0] = (self_cpu_us(RUSAGE_SELF) - cpu0 - wr.cpu_us) / changes;
    double server1 = walsender_cpu_us(probe);
    f->cpu_livedb[1] = server0 < 0 || server1 < 0 ? -1 : (server1 - server0) / changes;
    printf("# livedb: %d transactions of %d rows applied in %.2f s (%.0f changes/s)\n", txns,
           TXN_ROWS, s, changes / s);
    bench_print("cpu.livedb.process", f->cpu_livedb[0], "us/change");
    if (f->cpu_livedb[1] >= 0)
        bench_print("cpu.livedb.server", f->cpu_livedb[1], "us/change");
    /* the result converged: the same sum as the server's */
    long long pg_sum = pg_int(probe, "SELECT sum(val) FROM lat WHERE grp < 10");
    ldb_stmt *s1;
    if (ldb_prepare(db, "SELECT sum(val) FROM lat WHERE grp < 10", -1, &s1, NULL) != LDB_OK ||
        ldb_step(s1) != LDB_ROW)
        bench_die_db(db, "sum");
    if (ldb_row_int64(ldb_stmt_row(s1), 0) != pg_sum)
        bench_die("livedb cpu", "the live table differs from the server's after the stream");
    ldb_finalize(s1);
    ldb_live_close(q);
}

static void print_ratios(const struct figures *f, bool lat, bool cpu)
{
    if (lat && f->lat_livedb[0] > 0) {
        bench_print("ratio.latency.median.notify_vs_livedb", f->lat_notify[0] / f->lat_livedb[0],
                    "x");
        bench_print("ratio.latency.p95.notify_vs_livedb", f->lat_notify[1] / f->lat_livedb[1],
                    "x");
    }
    if (cpu && f->cpu_livedb[0] > 0)
        bench_print("ratio.cpu.process.notify_vs_livedb", f->cpu_notify[0] / f->cpu_livedb[0],
                    "x");
    if (cpu && f->cpu_livedb[1] > 0 && f->cpu_notify[1] >= 0)
        bench_print("ratio.cpu.server.notify_vs_livedb", f->cpu_notify[1] / f->cpu_livedb[1],
                    "x");
}

static ldb_pg *adapter_open(ldb *db, bool items)
{
    ldb_pg_config cfg = { .conninfo = conninfo };
    ldb_pg *pg;
    ldb_source *src;
    if (ldb_pg_open(db, &cfg, &pg) != LDB_OK)
        bench_die("ldb_pg_open", ldb_pg_open_error());
    if (ldb_pg_attach(pg, "lat", NULL, LDB_SOURCE_ON_DEMAND, &src) != LDB_OK ||
        (items && ldb_pg_attach(pg, "items", NULL, LDB_SOURCE_ON_DEMAND, &src) != LDB_OK))
        bench_die("ldb_pg_attach", ldb_pg_errmsg(pg));
    return pg;
}

int main(int argc, char **argv)
{
    if (bench_init(argc, argv))
        return 2;
    bool lat = bench_selected(argc, argv, "latency"), load = bench_selected(argc, argv, "load"),
         cpu = bench_selected(argc, argv, "cpu");
    int n = bench_quick ? 200 : 2000, subset = bench_quick ? 50000 : 1000000;
    int txns = (bench_quick ? 2000 : 20000) / TXN_ROWS;
    struct figures f;
    memset(&f, 0, sizeof f);
    read_conninfo();
    PGconn *w = pg_connect(), *l = pg_connect();
    create_lat(w);
    if (load)
        create_items(w, subset / 10 * 12);
    printf("# PostgreSQL %d; N = %d, load %d of %d rows, K = %d changes\n",
           PQserverVersion(w) / 10000, n, subset, subset / 10 * 12, txns * TXN_ROWS);

    if (lat)
        notify_latency(w, l, n, &f);
    if (load)
        libpq_load(l, subset);
    if (cpu)
        notify_cpu(w, l, txns, &f);

    ldb *db;
    if (ldb_open(NULL, &db) != LDB_OK)
        bench_die("ldb_open", "failed");
    ldb_pg *pg = adapter_open(db, load);
    if (lat)
        livedb_latency(db, pg, w, n, &f);
    if (load)
        livedb_load(db, pg, subset);
    if (cpu)
        livedb_cpu(db, pg, w, l, txns, &f);
    print_ratios(&f, lat, cpu);

    ldb_pg_close(pg);
    ldb_close(db);
    PQfinish(l);
    PQfinish(w);
    return 0;
}
