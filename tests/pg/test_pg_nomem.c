/*
 * test_pg_nomem.c - the PostgreSQL adapter when allocations fail, against
 * the real server: applying a stream transaction, a load, an optimistic
 * write, ldb_pg_attach and ldb_pg_open, each swept over N = 1, 2, ...:
 * the Nth allocation of the operation fails (mode "once") or every one
 * from the Nth on (mode "from", for at most WINDOW_MS after the first
 * failure: memory that stays short longer only repeats the reconnects),
 * until a run hits no failure. Then failures stop and the system must
 * converge: ldb_pg_sync within 30 s (a live query whose request failed
 * may be ERROR: ldb_live_retry), the local table and every live result
 * equal to PostgreSQL's, and the stream still following it; an optimistic
 * write CONFIRMED exactly when the server has it; a failed open or attach
 * LDB_NOMEM or LDB_ERROR with a message and nothing left behind (local
 * table, slot, publication); and no run leaks.
 *
 * Failures come from malloc/calloc/realloc defined here (forwarding to
 * glibc's __libc_ functions; strdup and libpq allocate through them),
 * counted on the test's main thread only: libpq and the adapter run
 * there; the cancel thread does not. OpenSSL's own allocations are
 * neither failed nor tracked (nm_skipped). Every other allocation of the
 * main thread during a run (fixture, operation, checks, teardown) is
 * tracked in a pointer set and must be freed by the run's end. The
 * calibration run of each sweep (no failure) warms libc's and libpq's
 * one-time caches; GSSAPI encryption is off (PGGSSENCMODE), since
 * libgssapi refreshes a global cache at times of its own.
 *
 * Each run is a forked child, so a crash or a hang is reported with its
 * point and the sweep goes on. Long sweeps are sampled (every N up to
 * FULL_UPTO, then SAMPLES random points; seed printed, LDB_SEED replays)
 * and end after STOP_AFTER failed runs or one slow failed run (a 30 s
 * sync timeout); LDB_LONG=1 runs every N and never stops early.
 * LDB_NOMEM_POINT='N once|from' runs one point (counts depend a little
 * on timing: a point may need a few tries); LDB_NOMEM_TRACE=1 prints
 * where the first failure strikes and a backtrace per leaked block.
 * Under AddressSanitizer malloc cannot be interposed: every case prints
 * "# SKIPPED under ASan" and passes.
 */
#include "pg_util.h"
#include "test.h"
#include "test_db.h"

#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#define NM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NM_ASAN 1
#endif
#endif
#ifndef NM_ASAN
#define NM_ASAN 0
#endif

#if !NM_ASAN
#include <execinfo.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#define WINDOW_MS 100
#define FULL_UPTO 20
#define SAMPLES 40
#define STOP_AFTER 4   /* failed runs that end a sampled sweep */
#define SLOW_MS 10000  /* a failed run this long (ldb_pg_sync timed out) ends it too */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the interposer --------------------------------------------------------- */

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

static _Thread_local bool nm_main;   /* the thread whose allocations may fail */
static _Thread_local bool nm_inside; /* recording a backtrace: plain calls */

static struct {
    bool armed, persistent;
    long count, fail_at, failed;
    int64_t first_fail;
} nm;

static bool nm_trace;

/* With LDB_NOMEM_TRACE: where the first failure of a run strikes. */
static void nm_where_first(void)
{
    if (!nm_trace)
        return;
    void *trace[16];
    nm_inside = true;
    int depth = backtrace(trace, 16);
    printf("#    allocation %ld fails at:\n", nm.count);
    fflush(stdout);
    backtrace_symbols_fd(trace, depth, 1);
    nm_inside = false;
}

/* OpenSSL's own allocations (from libcrypto and libssl) are neither
 * failed nor tracked: libpq's SCRAM makes some 24000 of them per
 * connection, which would drown the adapter's few hundred in a sampled
 * sweep, and its method store caches what a run fetched after a failure
 * inside it. libpq's own allocations around them do fail. */
static struct { uintptr_t lo, hi; } nm_skip[16];
static int nm_nskip;

static int nm_find_skip(struct dl_phdr_info *info, size_t size, void *ctx)
{
    if (!strstr(info->dlpi_name, "libcrypto") && !strstr(info->dlpi_name, "libssl"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum && nm_nskip < 16; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            uintptr_t lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            nm_skip[nm_nskip].lo = lo;
            nm_skip[nm_nskip++].hi = lo + info->dlpi_phdr[i].p_memsz;
        }
    return 0;
}

static bool nm_skipped(void *caller)
{
    for (int i = 0; i < nm_nskip; i++)
        if ((uintptr_t)caller >= nm_skip[i].lo && (uintptr_t)caller < nm_skip[i].hi)
            return true;
    return false;
}

/* Whether this allocation fails (main thread only). */
static bool nm_fail_now(void *caller)
{
    if (!nm_main || !nm.armed || nm_inside || nm_skipped(caller))
        return false;
    long n = ++nm.count;
    if (n == nm.fail_at || (nm.persistent && n > nm.fail_at)) {
        int64_t t = now_ms();
        if (!nm.failed) {
            nm.first_fail = t;
            nm_where_first();
        } else if (t - nm.first_fail > WINDOW_MS)
            return false;
        nm.failed++;
        return true;
    }
    return false;
}

/* Live allocations of the main thread while tracking: an open-addressing
 * set (linear probing, backward-shift deletion), locked because another
 * thread may free one (PQfreeCancel on the cancel thread). */
#define NM_BITS 18
#define NM_DEPTH 12
struct nm_slot {
    void *p;
    size_t size;
    long ord;
    int depth;
    void *trace[NM_DEPTH];
};
static struct nm_slot nm_set[1u << NM_BITS];
static atomic_flag nm_lock = ATOMIC_FLAG_INIT;
static atomic_long nm_live;
static bool nm_tracking, nm_overflow;
static long nm_ord;

static size_t nm_home(const void *p)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - NM_BITS));
}

static void nm_acquire(void)
{
    while (atomic_flag_test_and_set_explicit(&nm_lock, memory_order_acquire))
        ;
}

static void nm_release(void) { atomic_flag_clear_explicit(&nm_lock, memory_order_release); }

static void nm_insert(void *p, size_t size)
{
    struct nm_slot s = { .p = p, .size = size, .ord = ++nm_ord };
    if (nm_trace) {
        nm_inside = true;
        s.depth = backtrace(s.trace, NM_DEPTH);
        nm_inside = false;
    }
    size_t mask = (1u << NM_BITS) - 1;
    nm_acquire();
    if (atomic_load(&nm_live) >= (long)(mask / 2)) {
        nm_overflow = true;
    } else {
        size_t i = nm_home(p);
        while (nm_set[i].p)
            i = (i + 1) & mask;
        nm_set[i] = s;
        atomic_fetch_add(&nm_live, 1);
    }
    nm_release();
}

/* Removes p when tracked; whether it was. */
static bool nm_remove(void *p)
{
    if (!p || atomic_load(&nm_live) == 0)
        return false;
    size_t mask = (1u << NM_BITS) - 1;
    nm_acquire();
    size_t i = nm_home(p);
    while (nm_set[i].p && nm_set[i].p != p)
        i = (i + 1) & mask;
    bool found = nm_set[i].p != NULL;
    if (found) {
        atomic_fetch_sub(&nm_live, 1);
        size_t j = i;
        for (;;) {                    /* shift later members of the run back */
            nm_set[i].p = NULL;
            for (;;) {
                j = (j + 1) & mask;
                if (!nm_set[j].p)
                    goto done;
                size_t h = nm_home(nm_set[j].p);
                if (((j - h) & mask) >= ((j - i) & mask))
                    break;
            }
            nm_set[i] = nm_set[j];
            i = j;
        }
    }
done:
    nm_release();
    return found;
}

static void nm_track(void *p, size_t size, void *caller)
{
    if (!p || !nm_main || !nm_tracking || nm_inside)
        return;
    if (!nm_skipped(caller))
        nm_insert(p, size);
}

void *malloc(size_t n)
{
    if (nm_fail_now(__builtin_return_address(0)))
        return NULL;
    void *p = __libc_malloc(n);
    nm_track(p, n, __builtin_return_address(0));
    return p;
}

void *calloc(size_t n, size_t size)
{
    if (nm_fail_now(__builtin_return_address(0)))
        return NULL;
    void *p = __libc_calloc(n, size);
    nm_track(p, n * size, __builtin_return_address(0));
    return p;
}

void *realloc(void *p, size_t n)
{
    if (n && nm_fail_now(__builtin_return_address(0)))
        return NULL;
    bool tracked = nm_remove(p);
    void *q = __libc_realloc(p, n);
    if (q && (tracked || !p))
        nm_track(q, n, __builtin_return_address(0));
    else if (!q && tracked && n)
        nm_track(p, n, __builtin_return_address(0));   /* glibc's own failure: p stays */
    return q;
}

void free(void *p)
{
    nm_remove(p);
    __libc_free(p);
}

static void nm_arm(long n, bool persistent)
{
    nm.count = 0;
    nm.fail_at = n;
    nm.persistent = persistent;
    nm.failed = 0;
    nm.armed = true;
}

/* Stops failing; how many allocations failed. */
static long nm_disarm(void)
{
    nm.armed = false;
    return nm.failed;
}

/* Prints up to 8 outstanding allocations; how many there are. */
static long nm_report_leaks(void)
{
    long live = atomic_load(&nm_live);
    int shown = 0;
    for (size_t i = 0; live && shown < 8 && i < (1u << NM_BITS); i++) {
        struct nm_slot *s = &nm_set[i];
        if (!s->p)
            continue;
        printf("#    leaked %zu bytes (allocation %ld of the run)\n", s->size, s->ord);
        fflush(stdout);
        if (s->depth)
            backtrace_symbols_fd(s->trace, s->depth, 1);
        shown++;
    }
    return live;
}


/* Where a sweep is (printed when a run fails, crashes or hangs). */
static char point[160];

/* ---- fixture ------------------------------------------------------------------ */

typedef struct fixture {
    ldb *db;
    ldb_pg *pg;
    PGconn *c;          /* another client of the server */
    ldb_live *q;
    const char *sql;    /* q's SELECT (for reopening a failed q) */
    ldb_optimistic *o;
    bool begun;         /* an optimistic transaction is open */
    int64_t mark;       /* what the operation waits for */
} fixture;

#define T_ROWS "SELECT g, g %% 4, 'n' || g FROM generate_series(1, 60) g"
static const char *const t_where = "SELECT * FROM t WHERE grp = 1";
static const char *const acct_where = "SELECT * FROM acct WHERE id < 10";

/* The server's tables as every run starts from (no adapter streams them
 * yet: each run's slot is made after). */
static void server_tables(PGconn *c)
{
    pgu_exec(c, "SET client_min_messages = warning");
    pgu_exec(c, "CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY, grp int, name text)");
    pgu_exec(c, "CREATE TABLE IF NOT EXISTS acct (id int PRIMARY KEY, name text UNIQUE, "
                "qty int CHECK (qty >= 0))");
    pgu_exec(c, "TRUNCATE t, acct");
    pgu_exec(c, "INSERT INTO t " T_ROWS);
    pgu_exec(c, "INSERT INTO acct VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3)");
}

static const ldb_pg_config *config(void)
{
    static ldb_pg_config cfg;
    cfg = (ldb_pg_config){ .conninfo = pgu_conninfo(), .rows_per_commit = 8,
                           .load_connections = 1 };
    return &cfg;
}

static fixture fresh(bool open_pg)
{
    fixture f = { 0 };
    f.c = pgu_connect(pgu_conninfo());
    server_tables(f.c);
    CHECK_INT(ldb_open(NULL, &f.db), LDB_OK);
    if (open_pg)
        f.pg = pgu_open(f.db, config());
    return f;
}

static void attach(fixture *f, const char *table)
{
    ldb_source *s = NULL;
    int rc = ldb_pg_attach(f->pg, table, NULL, LDB_SOURCE_ON_DEMAND, &s);
    CHECKF(rc == LDB_OK && s, "attach %s: rc %d: %s", table, rc, ldb_pg_errmsg(f->pg));
}

static void open_live(fixture *f, const char *sql)
{
    f->sql = sql;
    int rc = ldb_live_open(f->db, sql, NULL, NULL, &f->q);
    CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(f->db));
}

static void teardown(fixture *f)
{
    if (f->o)
        ldb_optimistic_free(f->o);
    if (f->q)
        ldb_live_close(f->q);
    ldb_pg_close(f->pg);
    ldb_close(f->db);
    PQfinish(f->c);
}

static int64_t pg_int(PGconn *c, const char *sql)
{
    char *v = pgu_value(c, "%s", sql);
    CHECK(v);
    int64_t x = strtoll(v, NULL, 10);
    free(v);
    return x;
}

static int64_t txns(fixture *f)
{
    ldb_pg_stats s;
    ldb_pg_stats_get(f->pg, &s);
    return (int64_t)s.txns;
}

/* Polls (armed) until done or, after a failure, a little while: bounded. */
static void poll_until(fixture *f, bool (*done)(fixture *))
{
    int64_t t0 = now_ms();
    while (!done(f) && now_ms() - t0 < 3000) {
        if (nm.failed && now_ms() - nm.first_fail > WINDOW_MS + 20)
            break;
        ldb_pg_wait(f->pg, 5);
    }
}

/* What the adapter holds, for a run whose live query is not READY. */
static void print_adapter(fixture *f)
{
    ldb_pg_stats s;
    ldb_pg_stats_get(f->pg, &s);
    printf("#    adapter: loads %llu, rows loaded %llu, fences %llu, reconnects %llu, "
           "replays %llu\n", (unsigned long long)s.loads, (unsigned long long)s.rows_loaded,
           (unsigned long long)s.fences, (unsigned long long)s.reconnects,
           (unsigned long long)s.replays);
    char *ex = NULL;
    if (ldb_pg_explain(f->pg, &ex) == LDB_OK)
        printf("#    requests:\n%s", ex);
    free(ex);
}

/* Quiescent within 30 s, a failed request asked again, the live result
 * equal to the server's. Out of memory while a commit maintains a query
 * fails the query, loudly (livedb.h, ldb_live_error): it is reopened, as
 * a program would, and must then be right. */
static void converge(fixture *f, const char *pg_sql)
{
    int rc = ldb_pg_sync(f->pg, 30000);
    CHECKF(rc == LDB_OK, "ldb_pg_sync after the failures: rc %d: %s", rc, ldb_pg_errmsg(f->pg));
    const char *msg = NULL;
    if (f->q && ldb_live_error(f->q, &msg) != LDB_OK) {
        CHECKF(f->sql, "a failed query (%s) without its SELECT", msg ? msg : "");
        ldb_live_close(f->q);
        f->q = NULL;
        open_live(f, f->sql);
        rc = ldb_pg_sync(f->pg, 30000);
        CHECKF(rc == LDB_OK, "ldb_pg_sync after reopening: rc %d: %s", rc, ldb_pg_errmsg(f->pg));
    }
    if (ldb_live_status(f->q, &msg) == LDB_STATUS_ERROR) {
        CHECK_INT(ldb_live_retry(f->q), LDB_OK);
        rc = ldb_pg_sync(f->pg, 30000);
        CHECKF(rc == LDB_OK, "ldb_pg_sync after retry: rc %d: %s", rc, ldb_pg_errmsg(f->pg));
    }
    int st = ldb_live_status(f->q, &msg);
    if (st != LDB_STATUS_READY)
        print_adapter(f);
    CHECKF(st == LDB_STATUS_READY, "status %d (%s) after ldb_pg_sync returned LDB_OK", st,
           msg ? msg : "");
    int na, nb, nt;
    char **a = pgu_rows_live(f->q, &na), **b = pgu_rows_pg(f->c, pg_sql, &nb);
    char **t = pgu_rows_ldb(f->db, pg_sql, &nt);
    /* Which one differs: the local table (the adapter lost a change) or
     * only the live result (the core did). */
    int table_same = pgu_rows_equal(t, nt, b, nb, "local table");
    int same = pgu_rows_equal(a, na, b, nb, "live result");
    pgu_rows_free(a, na);
    pgu_rows_free(b, nb);
    pgu_rows_free(t, nt);
    CHECKF(same && table_same, "%s differs from PostgreSQL's %s",
           table_same ? "the live result (not the table)" : "the local table", pg_sql);
}

/* And the stream still follows the server afterwards. */
static void converge_and_follow(fixture *f, const char *pg_sql, const char *change)
{
    converge(f, pg_sql);
    pgu_exec(f->c, "%s", change);
    converge(f, pg_sql);
}

static void check_server_leftovers(int slots, int pubs)
{
    PGconn *a = pgu_connect(pgu_admin_conninfo());
    CHECK_INT(pg_int(a, "SELECT count(*) FROM pg_replication_slots"), slots);
    CHECK_INT(pg_int(a, "SELECT count(*) FROM pg_publication"), pubs);
    PQfinish(a);
}

/* ---- the operations -------------------------------------------------------------- */

typedef struct sweep_op {
    const char *name;
    void (*prepare)(fixture *f);   /* not armed */
    int (*run)(fixture *f);        /* armed: the operation */
    void (*check)(fixture *f, int rc);
} sweep_op;

/* (a) A multi-row transaction of another client: held rows change, rows
 * come into and leave the query, one is deleted. */
static void stream_prepare(fixture *f)
{
    *f = fresh(true);
    attach(f, "t");
    open_live(f, t_where);
    pgu_sync(f->pg);
    f->mark = txns(f);
    pgu_exec(f->c, "BEGIN; UPDATE t SET name = name || '!' WHERE grp = 1 AND id < 30; "
                   "UPDATE t SET grp = 1 WHERE id IN (2, 6, 44); UPDATE t SET grp = 3 "
                   "WHERE id = 9; DELETE FROM t WHERE id IN (13, 14); "
                   "INSERT INTO t VALUES (100, 1, 'new'), (101, 2, 'other'); COMMIT");
}

static bool stream_applied(fixture *f) { return txns(f) > f->mark; }

static int stream_run(fixture *f)
{
    poll_until(f, stream_applied);
    return LDB_OK;
}

static void stream_check(fixture *f, int rc)
{
    converge_and_follow(f, t_where, "UPDATE t SET grp = 1 WHERE id IN (3, 100)");
}

/* (b) A load of a filtered query, in chunks of 8 rows. */
static void load_prepare(fixture *f)
{
    *f = fresh(true);
    attach(f, "t");
}

static bool load_settled(fixture *f)
{
    return !f->q || ldb_live_status(f->q, NULL) != LDB_STATUS_LOADING;
}

static int load_run(fixture *f)
{
    f->sql = t_where;
    int rc = ldb_live_open(f->db, t_where, NULL, NULL, &f->q);
    if (rc == LDB_OK)
        poll_until(f, load_settled);
    return rc;
}

static void load_check(fixture *f, int rc)
{
    if (rc != LDB_OK) {
        CHECKF(rc == LDB_NOMEM && !f->q, "ldb_live_open: rc %d, q %p", rc, (void *)f->q);
        open_live(f, t_where);
    }
    converge_and_follow(f, t_where, "UPDATE t SET grp = 1 WHERE id = 3");
}

/* (c) An optimistic write sent upstream, confirmed through the stream. */
static void write_prepare(fixture *f)
{
    *f = fresh(true);
    attach(f, "acct");
    open_live(f, acct_where);
    pgu_sync(f->pg);
}

static bool write_resolved(fixture *f)
{
    return !f->o || ldb_optimistic_state(f->o) != LDB_OPTIMISTIC_PENDING;
}

static int write_run(fixture *f)
{
    int rc = ldb_optimistic_begin(f->db);
    if (rc)
        return rc;
    f->begun = true;
    rc = ldb_exec(f->db, "INSERT INTO acct VALUES (5, 'five', 5); "
                         "UPDATE acct SET qty = 7 WHERE id = 1; DELETE FROM acct WHERE id = 2",
                  NULL, NULL);
    if (rc == LDB_OK)
        rc = ldb_optimistic_commit(f->db, ldb_pg_send, f->pg, &f->o);
    if (rc)
        return rc;
    f->begun = false;
    poll_until(f, write_resolved);
    return LDB_OK;
}

static void write_check(fixture *f, int rc)
{
    if (rc != LDB_OK) {
        CHECKF(rc == LDB_NOMEM && !f->o, "optimistic write: rc %d: %s", rc, ldb_errmsg(f->db));
        if (f->begun)
            EXEC(f->db, "ROLLBACK");
    }
    converge(f, acct_where);
    int state = f->o ? ldb_optimistic_state(f->o) : LDB_OPTIMISTIC_REJECTED;
    CHECKF(state != LDB_OPTIMISTIC_PENDING, "the write is still pending after ldb_pg_sync");
    int64_t parts = pg_int(f->c, "SELECT (SELECT count(*) FROM acct WHERE id = 5) + "
                                 "(SELECT count(*) FROM acct WHERE id = 1 AND qty = 7) + "
                                 "(SELECT count(*) FROM acct WHERE id = 2) * -1 + 1");
    CHECKF(parts == 0 || parts == 3, "the write is half on the server (%lld of 3 parts)",
           (long long)parts);
    CHECKF((parts == 3) == (state == LDB_OPTIMISTIC_CONFIRMED),
           "the write is %s but the server %s it (%s)",
           state == LDB_OPTIMISTIC_CONFIRMED ? "CONFIRMED" : "REJECTED",
           parts == 3 ? "has" : "has not", f->o && ldb_optimistic_error(f->o)
                                               ? ldb_optimistic_error(f->o) : "no message");
    pgu_exec(f->c, "UPDATE acct SET qty = qty + 1 WHERE id = 3");
    converge(f, acct_where);
}

/* (d) ldb_pg_attach: fails whole or works. */
static void attach_prepare(fixture *f) { *f = fresh(true); }

static int attach_run(fixture *f)
{
    ldb_source *s = (ldb_source *)f;
    int rc = ldb_pg_attach(f->pg, "t", NULL, LDB_SOURCE_ON_DEMAND, &s);
    if (rc != LDB_OK && s)
        return -1000;     /* *out not cleared */
    return rc;
}

static void attach_check(fixture *f, int rc)
{
    CHECKF(rc == LDB_OK || rc == LDB_NOMEM || rc == LDB_ERROR, "ldb_pg_attach: rc %d: %s", rc,
           ldb_pg_errmsg(f->pg));
    if (rc != LDB_OK) {
        const char *msg = ldb_pg_errmsg(f->pg);
        CHECKF(msg && *msg, "ldb_pg_attach failed (rc %d) without a message", rc);
        ldb_stmt *st = NULL;
        int prc = ldb_prepare(f->db, "SELECT * FROM t", -1, &st, NULL);
        int step = prc == LDB_OK ? ldb_step(st) : LDB_DONE;
        ldb_finalize(st);
        /* Under persistent failure even dropping the table it made can
         * fail: then the empty table, of the server's columns, stays, and
         * attaching again reuses it (livedb_pg.h). A single failure
         * leaves nothing. */
        CHECKF(prc != LDB_OK || (nm.persistent && step == LDB_DONE),
               "a failed ldb_pg_attach (rc %d: %s) left local table t", rc, msg);
        attach(f, "t");
    }
    check_server_leftovers(1, 1);
    open_live(f, t_where);
    converge_and_follow(f, t_where, "UPDATE t SET grp = 1 WHERE id = 3");
}

/* (e) ldb_pg_open: fails leaving nothing, or works. */
static void open_prepare(fixture *f) { *f = fresh(false); }

static int open_run(fixture *f)
{
    f->pg = (ldb_pg *)f;
    int rc = ldb_pg_open(f->db, config(), &f->pg);
    if (rc != LDB_OK && f->pg) {
        f->pg = NULL;
        return -1000;     /* *out not cleared */
    }
    return rc;
}

static void open_check(fixture *f, int rc)
{
    CHECKF(rc == LDB_OK || rc == LDB_NOMEM || rc == LDB_ERROR, "ldb_pg_open: rc %d: %s", rc,
           ldb_pg_open_error());
    if (rc != LDB_OK) {
        const char *msg = ldb_pg_open_error();
        CHECKF(msg && *msg, "ldb_pg_open failed (rc %d) without a message", rc);
        check_server_leftovers(0, 0);
        f->pg = pgu_open(f->db, config());
    }
    check_server_leftovers(1, 1);
    attach(f, "t");
    open_live(f, t_where);
    converge_and_follow(f, t_where, "UPDATE t SET grp = 1 WHERE id = 3");
}

/* ---- the sweep --------------------------------------------------------------------- */

#define RUN_HIT 1      /* an allocation failed */
#define RUN_FAILED 2   /* a check failed */

/* One run at point n, in a child process: its RUN_ bits. Everything the
 * main thread allocates from the fixture to its teardown must be freed. */
static int run_child(const sweep_op *op, long n, bool persistent)
{
    static int hit;
    hit = 0;
    if (setjmp(test_jmp_)) {
        printf("#    at %s\n", point);
        return hit | RUN_FAILED;
    }
    nm_tracking = true;
    fixture f = { 0 };
    op->prepare(&f);
    nm_arm(n, persistent);
    int rc = op->run(&f);
    hit = nm_disarm() > 0 ? RUN_HIT : 0;
    op->check(&f, rc);
    teardown(&f);
    nm_tracking = false;
    CHECKF(!nm_overflow, "more live allocations than the tracking set holds");
    long leaked = nm_report_leaks();
    CHECKF(leaked == 0, "%ld allocations made during the run are not freed", leaked);
    return hit;
}

/* Runs point n in a child, so that a crash or a hang is reported with its
 * point and the sweep goes on; whether an allocation failed. A run that
 * fails counts in *bad (its output is shown for the first few) and the
 * server is cleaned after it (a crashed run leaves its slot). */
static bool run_point(const sweep_op *op, long n, bool persistent, int *bad, bool *slow)
{
    snprintf(point, sizeof point, "%s, N=%ld, mode %s (replay: LDB_NOMEM_POINT='%ld %s' %s)",
             op->name, n, persistent ? "from" : "once", n, persistent ? "from" : "once",
             op->name);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (*bad >= 4 && !freopen("/dev/null", "w", stdout))
            _exit(RUN_FAILED);
        int code = run_child(op, n, persistent);
        fflush(stdout);
        _exit(code);
    }
    int status = 0;
    int64_t t0 = now_ms();
    pid_t done;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() - t0 < 120000) {
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    const char *what = NULL;
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        what = "hangs (killed after 120 s)";
    } else if (WIFSIGNALED(status)) {
        what = strsignal(WTERMSIG(status));
    } else if (!WIFEXITED(status) || (WEXITSTATUS(status) & ~(RUN_HIT | RUN_FAILED))) {
        what = "exited abnormally";
    }
    bool failed = what || (WEXITSTATUS(status) & RUN_FAILED);
    *slow = now_ms() - t0 > SLOW_MS;
    if (failed) {
        if (what)
            printf("FAIL %s: %s\n", point, what);
        else if (*bad >= 4)
            printf("#    also failed: %s\n", point);
        fflush(stdout);
        ++*bad;
        pgu_reset();
    }
    return what || (WEXITSTATUS(status) & RUN_HIT);
}

/* The allocations the operation makes when none fails (also warms the
 * one-time caches before tracking starts). */
static long calibrate(const sweep_op *op)
{
    snprintf(point, sizeof point, "%s, calibration", op->name);
    fixture f = { 0 };
    op->prepare(&f);
    nm_arm(0, false);
    int rc = op->run(&f);
    long count = nm.count;
    nm_disarm();
    CHECKF(rc == LDB_OK, "%s without failures: rc %d", op->name, rc);
    op->check(&f, rc);
    teardown(&f);
    return count;
}

static void sweep_mode(const sweep_op *op, bool persistent, long total, rng *r, bool full)
{
    long runs = 0, hits = 0, n = 1;
    int64_t t0 = now_ms();
    int sampled = 0, bad = 0;
    for (;;) {
        bool slow = false;
        bool hit = run_point(op, n, persistent, &bad, &slow);
        runs++;
        hits += hit;
        if (!hit)
            break;
        if ((bad >= STOP_AFTER || (bad && slow)) && !full) {
            printf("#    %s, mode %s: stopped after %d failed runs%s (LDB_LONG=1 goes on)\n",
                   op->name, persistent ? "from" : "once", bad,
                   slow ? ", the last one slow" : "");
            break;
        }
        if (full || n < FULL_UPTO)
            n++;
        else if (sampled < SAMPLES && n < total) {
            sampled++;
            long span = total - n;
            n += 1 + (long)rng_below(r, (uint64_t)(2 * span / (SAMPLES - sampled + 2) + 1));
        } else {
            n = n < total ? total : n + 1;
        }
        if (n >= total + 1000) {
            printf("#    %s keeps failing past N=%ld\n", op->name, n);
            bad++;
            break;
        }
    }
    printf("#    %s, mode %s: %ld allocations, %ld runs (%ld hit a failure, %d failed), %.1f s\n",
           op->name, persistent ? "from" : "once", total, runs, hits, bad,
           (double)(now_ms() - t0) / 1000.0);
    fflush(stdout);
    if (bad)
        test_failed_ = 1;
}

static void sweep(const sweep_op *op)
{
    nm_main = true;
    nm_trace = getenv("LDB_NOMEM_TRACE") != NULL;
    /* libgssapi keeps a mechanism cache it refreshes now and then: its
     * allocations would show as leaks of whichever run refreshed it. */
    setenv("PGGSSENCMODE", "disable", 1);
    nm_nskip = 0;
    dl_iterate_phdr(nm_find_skip, NULL);
    pgu_reset();
    const char *only = getenv("LDB_NOMEM_POINT");   /* "N once" or "N from" */
    long total = calibrate(op);
    if (only) {
        long n = strtol(only, NULL, 10);
        bool persistent = strstr(only, "from") != NULL;
        int bad = 0;
        bool slow;
        bool hit = run_point(op, n, persistent, &bad, &slow);
        if (bad)
            test_failed_ = 1;
        printf("#    %s, N=%ld, mode %s: %s\n", op->name, n, persistent ? "from" : "once",
               hit ? "failed an allocation" : "no failure");
        return;
    }
    rng r;
    rng_seed(&r, test_seed());
    const char *lg = getenv("LDB_LONG");
    bool full = lg && *lg && strcmp(lg, "0") != 0;
    sweep_mode(op, false, total, &r, full);
    sweep_mode(op, true, total, &r, full);
}

#define SWEEP(fn, label, prep, body, chk)                                   \
    static void fn(void)                                                      \
    {                                                                         \
        static const sweep_op op = { label, prep, body, chk };                \
        sweep(&op);                                                           \
    }

#else /* NM_ASAN */

#define SWEEP(fn, label, prep, body, chk)                                   \
    static void fn(void)                                                      \
    {                                                                         \
        printf("# SKIPPED under ASan: %s (malloc cannot be interposed)\n", label); \
    }

#endif

SWEEP(nomem_stream, "nomem_stream", stream_prepare, stream_run, stream_check)
SWEEP(nomem_load, "nomem_load", load_prepare, load_run, load_check)
SWEEP(nomem_write, "nomem_write", write_prepare, write_run, write_check)
SWEEP(nomem_attach, "nomem_attach", attach_prepare, attach_run, attach_check)
SWEEP(nomem_open, "nomem_open", open_prepare, open_run, open_check)

TEST_MAIN(T(nomem_stream), T(nomem_load), T(nomem_write), T(nomem_attach), T(nomem_open))
