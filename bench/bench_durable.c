/*
 * bench_durable.c - livedb's durable databases (snapshot file + log)
 * against SQLite in WAL mode with the same PRAGMA synchronous, on the same
 * rows in the same run. The table is the "issues" table of
 * ../shared/bench/WORKLOADS.md with its "created only" index; files live
 * in a fresh directory under $TMPDIR (else /tmp), removed at the end.
 *
 *   fsync     machine noise: append 100 bytes + fdatasync, in that
 *             directory (judge the FULL latencies by it)
 *   commit    one autocommit single-row INSERT (prepared) at synchronous
 *             FULL and NORMAL: median and p95 in us
 *   load      n rows in one transaction at NORMAL with automatic
 *             checkpoints off in both (rows/s: the commit only logs);
 *             then a checkpoint (ms) and the files' bytes per row after it
 *             (livedb: path + path-wal; SQLite: db + -wal after
 *             wal_checkpoint(TRUNCATE)); then close, and open + SELECT
 *             count(*) + a point lookup (ms, median of 3); then the same
 *             open (once) after a load in a child process that exits
 *             without closing or checkpointing, so that the open replays
 *             the whole log (SQLite: recovers its WAL), with the log's
 *             bytes
 *   batches   n rows in transactions of 1000 rows at NORMAL: rows/s
 *
 * Elsewhere both engines keep their defaults (livedb checkpoints past
 * 16 MiB of log, SQLite past 1000 WAL pages), so SQLite's commits include
 * its automatic checkpoints. All of livedb's operations of a figure run,
 * then all of SQLite's, but for the commits (see COMMIT_BLOCK). Reopens
 * run warm: the files are in the page cache.
 *
 * Output: "bench durable.<case>...", "bench sqlite.durable.<case>..." and
 * "bench ratio.durable.<case>... <livedb/sqlite> x" (for rows/s above 1
 * means livedb is faster; for us, ms and bytes, below 1). n is 1M rows
 * and 2000 commits; --quick: 50k rows and 200 commits.
 */
#include "bench_util.h"

#include "livedb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEED 20261203u
#define REOPENS 3

static char dir[256]; /* the temporary directory */

static int nrows(void) { return bench_quick ? 50000 : 1000000; }
static int ncommits(void) { return bench_quick ? 200 : 2000; }
/* Untimed commits before the timed ones (files created, caches warm). */
static int nwarm(void) { return ncommits() / 10; }

/* ---- files ------------------------------------------------------------------ */

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/livedb-durable-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        bench_die("mkdtemp", strerror(errno));
}

/* Empties the directory (each case starts from no files); with rmdir_too
 * removes it. */
static void clear_dir(bool rmdir_too)
{
    DIR *d = opendir(dir);
    if (!d)
        bench_die(dir, strerror(errno));
    char path[512];
    for (struct dirent *de; (de = readdir(d));) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) != 0)
            bench_die(path, strerror(errno));
    }
    closedir(d);
    if (rmdir_too && rmdir(dir) != 0)
        bench_die(dir, strerror(errno));
}

static uint64_t file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* path-wal: livedb's log, and SQLite's WAL. */
static uint64_t log_bytes(const char *path)
{
    char wal[512];
    snprintf(wal, sizeof wal, "%s-wal", path);
    return file_bytes(wal);
}

/* The snapshot (livedb) or database (SQLite) file and the log. */
static uint64_t db_bytes(const char *path)
{
    return file_bytes(path) + log_bytes(path);
}

/* ---- the two engines behind one interface ----------------------------------- */

struct engine {
    struct bench_engine b; /* first: an engine is a bench_engine */
    char path[400];
};

/* Opens (creating) the engine's database named case_name in dir. */
static void engine_open(struct engine *e, bool sqlite, const char *case_name)
{
    e->b.sqlite = sqlite;
    e->b.db = NULL;
    e->b.lite = NULL;
    snprintf(e->path, sizeof e->path, "%s/%s-%s.db", dir, sqlite ? "sqlite" : "livedb",
             case_name);
    if (sqlite ? sqlite3_open(e->path, &e->b.lite) != SQLITE_OK
               : ldb_open(e->path, &e->b.db) != LDB_OK)
        bench_die(e->path, sqlite ? sqlite3_errmsg(e->b.lite) : ldb_errmsg(NULL));
}

/* Opens the existing database at e->path again. */
static void engine_reopen(struct engine *e)
{
    if (e->b.sqlite ? sqlite3_open_v2(e->path, &e->b.lite, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK
                  : ldb_open(e->path, &e->b.db) != LDB_OK)
        bench_die(e->path, e->b.sqlite ? sqlite3_errmsg(e->b.lite) : ldb_errmsg(NULL));
}

static void engine_close(struct engine *e)
{
    if (e->b.sqlite && sqlite3_close(e->b.lite) != SQLITE_OK)
        bench_die("sqlite close", sqlite3_errmsg(e->b.lite));
    ldb_close(e->b.db);
    e->b.db = NULL;
    e->b.lite = NULL;
}

/* WAL mode for SQLite (livedb always logs) and a page cache that holds
 * the whole database, as livedb does (the default 2 MB would make
 * SQLite's loads read pages back); then the durability setting and the
 * issues table. */
static void engine_setup(struct engine *e, const char *synchronous)
{
    char sql[64];
    if (e->b.sqlite)
        bench_run(&e->b, "PRAGMA journal_mode = WAL; PRAGMA cache_size = -1048576");
    snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", synchronous);
    bench_run(&e->b, sql);
    bench_run(&e->b, "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT, "
           "priority INTEGER, created INTEGER, assignee INTEGER)");
    bench_run(&e->b, "CREATE INDEX issues_created ON issues(created)");
}

/* Only ldb_checkpoint, wal_checkpoint, or closing the database write a
 * checkpoint from now on. */
static void no_auto_checkpoint(struct engine *e)
{
    bench_run(&e->b, e->b.sqlite ? "PRAGMA wal_autocheckpoint = 0" : "PRAGMA checkpoint_threshold = 0");
}

/* Writes a checkpoint: afterwards the snapshot (db file) holds everything
 * and the log is empty. */
static void engine_checkpoint(struct engine *e)
{
    if (e->b.sqlite)
        bench_run(&e->b, "PRAGMA wal_checkpoint(TRUNCATE)");
    else if (ldb_checkpoint(e->b.db) != LDB_OK)
        bench_die("ldb_checkpoint", ldb_errmsg(e->b.db));
}

/* Steps s once, expecting a row (want_row) or the end; then resets it
 * unless a row is to be read. */
static void step(struct bench_stmt *s, bool want_row)
{
    int rc = s->e->sqlite ? sqlite3_step(s->ss) : ldb_step(s->ls);
    bool row = s->e->sqlite ? rc == SQLITE_ROW : rc == LDB_ROW;
    bool done = s->e->sqlite ? rc == SQLITE_DONE : rc == LDB_DONE;
    if (want_row ? !row : !done)
        bench_die("step", s->e->sqlite ? sqlite3_errmsg(s->e->lite) : ldb_errmsg(s->e->db));
    if (!want_row && (s->e->sqlite ? sqlite3_reset(s->ss) != SQLITE_OK
                                   : ldb_reset(s->ls) != LDB_OK))
        bench_die("reset", bench_engine_name(s->e));
}

static int64_t column_int(struct bench_stmt *s, int i)
{
    return s->e->sqlite ? sqlite3_column_int64(s->ss, i)
                        : ldb_row_int64(ldb_stmt_row(s->ls), i);
}

/* ---- figures ------------------------------------------------------------------- */

static void print3(const char *name, double ours, double theirs, const char *unit)
{
    char buf[160];
    snprintf(buf, sizeof buf, "durable.%s", name);
    bench_print(buf, ours, unit);
    snprintf(buf, sizeof buf, "sqlite.durable.%s", name);
    bench_print(buf, theirs, unit);
    snprintf(buf, sizeof buf, "ratio.durable.%s", name);
    bench_print(buf, ours / theirs, "x");
}

/* ---- machine noise: append + fdatasync -------------------------------------------- */

static void fsync_baseline(void)
{
    char path[512], buf[100];
    snprintf(path, sizeof path, "%s/fsync-probe", dir);
    memset(buf, 'x', sizeof buf);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        bench_die(path, strerror(errno));
    int n = ncommits();
    double *t = bench_realloc(NULL, (size_t)n * sizeof *t);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = bench_ns();
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || fdatasync(fd) != 0)
            bench_die(path, strerror(errno));
        t[i] = (double)(bench_ns() - t0) / 1e3;
    }
    close(fd);
    bench_print("machine.append_fdatasync_100b.median", bench_quantile(t, (size_t)n, 0.5), "us");
    bench_print("machine.append_fdatasync_100b.p95", bench_quantile(t, (size_t)n, 0.95), "us");
    free(t);
    clear_dir(false);
}

/* ---- the rows ------------------------------------------------------------------- */

/* The issues, generated once before any timing (both engines insert the
 * same rows; making them is not part of a load). */
struct issue {
    int64_t id, priority, created, assignee;
    const char *status;
    char title[24];
};
static struct issue *issues;

static void keep_issue(void *ctx, const struct bench_issue *r)
{
    struct issue *v = ctx;
    struct issue *it = &v[r->id - 1];
    *it = (struct issue){ r->id, r->priority, r->created, r->assignee, r->status, "" };
    snprintf(it->title, sizeof it->title, "%s", r->title);
}

static void make_issues(void)
{
    int n = nrows() > nwarm() + ncommits() ? nrows() : nwarm() + ncommits();
    issues = bench_realloc(NULL, (size_t)n * sizeof *issues);
    bench_issues(n, SEED, keep_issue, issues);
}

static struct bench_stmt prepare_insert(struct engine *e)
{
    return bench_prepare(&e->b, "INSERT INTO issues VALUES (?, ?, ?, ?, ?, ?)");
}

/* Inserts issue i (0-based) with s. */
static void insert_issue(struct bench_stmt *s, int i)
{
    const struct issue *r = &issues[i];
    bench_bind_int(s, 1, r->id);
    bench_bind_text(s, 2, r->title);
    bench_bind_text(s, 3, r->status);
    bench_bind_int(s, 4, r->priority);
    bench_bind_int(s, 5, r->created);
    bench_bind_int(s, 6, r->assignee);
    step(s, false);
}

/* ---- commit latency ------------------------------------------------------------- */

/* Commits one engine makes before the other takes its turn. The engines
 * alternate in blocks, not one after the other: the disk is shared with
 * other programs and slows down in bursts, which would otherwise land on
 * one engine. */
#define COMMIT_BLOCK 50

/* Times the autocommit inserts of issues [from, to) into t (us each). */
static void commit_block(struct bench_stmt *ins, int from, int to, double *t)
{
    for (int i = from; i < to; i++) {
        uint64_t t0 = bench_ns();
        insert_issue(ins, nwarm() + i);
        t[i] = (double)(bench_ns() - t0) / 1e3;
    }
}

/* ncommits() autocommit inserts into a fresh database of each engine,
 * after nwarm() untimed ones. */
static void commit_latency(const char *synchronous, const char *label)
{
    struct engine e[2];
    struct bench_stmt ins[2];
    double *t[2];
    int n = ncommits();
    for (int k = 0; k < 2; k++) {
        engine_open(&e[k], k == 1, "commit");
        engine_setup(&e[k], synchronous);
        ins[k] = prepare_insert(&e[k]);
        t[k] = bench_realloc(NULL, (size_t)n * sizeof *t[k]);
        for (int i = 0; i < nwarm(); i++)
            insert_issue(&ins[k], i);
    }
    for (int from = 0; from < n; from += COMMIT_BLOCK)
        for (int k = 0; k < 2; k++)
            commit_block(&ins[k], from, from + COMMIT_BLOCK < n ? from + COMMIT_BLOCK : n, t[k]);
    char name[64];
    snprintf(name, sizeof name, "commit_%s.median", label);
    print3(name, bench_quantile(t[0], (size_t)n, 0.5), bench_quantile(t[1], (size_t)n, 0.5),
           "us");
    snprintf(name, sizeof name, "commit_%s.p95", label);
    print3(name, bench_quantile(t[0], (size_t)n, 0.95), bench_quantile(t[1], (size_t)n, 0.95),
           "us");
    for (int k = 0; k < 2; k++) {
        bench_finalize(&ins[k]);
        engine_close(&e[k]);
        free(t[k]);
    }
    clear_dir(false);
}

/* ---- bulk load ------------------------------------------------------------------- */

/* Inserts the first n issues in transactions of batch rows; returns
 * rows/s. */
static double load(struct engine *e, int n, int batch)
{
    struct bench_stmt ins = prepare_insert(e);
    uint64_t t0 = bench_ns();
    bench_run(&e->b, "BEGIN");
    for (int i = 0; i < n; i++) {
        insert_issue(&ins, i);
        if ((i + 1) % batch == 0 && i + 1 < n) {
            bench_run(&e->b, "COMMIT");
            bench_run(&e->b, "BEGIN");
        }
    }
    bench_run(&e->b, "COMMIT");
    double s = (double)(bench_ns() - t0) / 1e9;
    bench_finalize(&ins);
    return n / s;
}

static double load_fresh(bool sqlite, int batch)
{
    struct engine e;
    engine_open(&e, sqlite, "batches");
    engine_setup(&e, "NORMAL");
    double rate = load(&e, nrows(), batch);
    engine_close(&e);
    clear_dir(false);
    return rate;
}

static void bulk_batches(void)
{
    char name[64];
    snprintf(name, sizeof name, "bulk_batch1000.%d", nrows());
    print3(name, load_fresh(false, 1000), load_fresh(true, 1000), "rows/s");
}

/* ---- reopen ---------------------------------------------------------------------- */

/* ms to open e->path, count the issues and look one up by key; checks
 * both answers. Leaves e closed. */
static double reopen_ms(struct engine *e)
{
    int n = nrows();
    uint64_t t0 = bench_ns();
    engine_reopen(e);
    struct bench_stmt count = bench_prepare(&e->b, "SELECT count(*) FROM issues");
    step(&count, true);
    int64_t rows = column_int(&count, 0);
    struct bench_stmt get = bench_prepare(&e->b, "SELECT id, priority FROM issues WHERE id = ?");
    bench_bind_int(&get, 1, n / 2 + 1);
    step(&get, true);
    int64_t id = column_int(&get, 0);
    double ms = (double)(bench_ns() - t0) / 1e6;
    if (rows != n || id != n / 2 + 1) {
        fprintf(stderr, "%s after reopen: %lld rows (want %d), lookup found id %lld\n",
                bench_engine_name(&e->b), (long long)rows, n, (long long)id);
        exit(1);
    }
    bench_finalize(&count);
    bench_finalize(&get);
    engine_close(e);
    return ms;
}

struct loaded {
    double one_txn_rows_s, checkpoint_ms, bytes_per_row, reopen_ms;
};

/* Loads n rows in one transaction, checkpoints, measures the files,
 * closes and reopens (the median of REOPENS: one open is one sample, on a
 * machine shared with others). */
static struct loaded load_and_reopen(bool sqlite)
{
    struct loaded r;
    struct engine e;
    engine_open(&e, sqlite, "load");
    no_auto_checkpoint(&e);
    engine_setup(&e, "NORMAL");
    r.one_txn_rows_s = load(&e, nrows(), nrows());
    uint64_t t0 = bench_ns();
    engine_checkpoint(&e);
    r.checkpoint_ms = (double)(bench_ns() - t0) / 1e6;
    r.bytes_per_row = (double)db_bytes(e.path) / nrows();
    engine_close(&e);
    double ms[REOPENS];
    for (int i = 0; i < REOPENS; i++)
        ms[i] = reopen_ms(&e);
    r.reopen_ms = bench_quantile(ms, REOPENS, 0.5);
    clear_dir(false);
    return r;
}

/* A child process loads the rows and exits without closing: nothing
 * checkpoints, and the next open must replay the whole log. Returns the
 * bytes of the log the child left. */
static uint64_t load_in_child(struct engine *e)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        bench_die("fork", strerror(errno));
    if (pid == 0) {
        struct engine c;
        engine_open(&c, e->b.sqlite, "replay");
        no_auto_checkpoint(&c);
        engine_setup(&c, "NORMAL");
        load(&c, nrows(), nrows());
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_die("load in a child process", bench_engine_name(&e->b));
    snprintf(e->path, sizeof e->path, "%s/%s-replay.db", dir, e->b.sqlite ? "sqlite" : "livedb");
    return log_bytes(e->path);
}

static void replay(double *ms, double *logged, bool sqlite)
{
    struct engine e = { { sqlite, NULL, NULL }, "" };
    *logged = (double)load_in_child(&e);
    *ms = reopen_ms(&e);
    clear_dir(false);
}

static void load_reopen(void)
{
    struct loaded o = load_and_reopen(false), t = load_and_reopen(true);
    int n = nrows();
    char name[64];
    snprintf(name, sizeof name, "bulk_one_txn.%d", n);
    print3(name, o.one_txn_rows_s, t.one_txn_rows_s, "rows/s");
    snprintf(name, sizeof name, "checkpoint.%d.ms", n);
    print3(name, o.checkpoint_ms, t.checkpoint_ms, "ms");
    snprintf(name, sizeof name, "file.%d.bytes_per_row", n);
    print3(name, o.bytes_per_row, t.bytes_per_row, "B");
    snprintf(name, sizeof name, "reopen_checkpointed.%d.open_ms", n);
    print3(name, o.reopen_ms, t.reopen_ms, "ms");
    double oms, obytes, tms, tbytes;
    replay(&oms, &obytes, false);
    replay(&tms, &tbytes, true);
    snprintf(name, sizeof name, "reopen_replay.%d.open_ms", n);
    print3(name, oms, tms, "ms");
    snprintf(name, sizeof name, "reopen_replay.%d.log_bytes", n);
    print3(name, obytes, tbytes, "B");
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    make_dir();
    printf("# bench_durable: issues rows, seed %u, files in %s\n", SEED, dir);
    make_issues();
    if (bench_selected(argc, argv, "fsync"))
        fsync_baseline();
    if (bench_selected(argc, argv, "commit")) {
        commit_latency("FULL", "full");
        commit_latency("NORMAL", "normal");
    }
    if (bench_selected(argc, argv, "load"))
        load_reopen();
    if (bench_selected(argc, argv, "batches"))
        bulk_batches();
    clear_dir(true);
    free(issues);
    return 0;
}
