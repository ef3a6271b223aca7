/*
 * test_durable_crash.c - a durable database survives SIGKILL at any
 * moment, in every PRAGMA synchronous mode: no acknowledged transaction is
 * lost and no transaction is partly there.
 *
 * A forked child opens the database (recovering what the last kill left),
 * runs transactions k = j+1, j+2, ... and writes k to a pipe after each
 * COMMIT returns; the parent SIGKILLs it at a random moment. Transaction
 * k is a pure function of (seed, k): it inserts log(k) and makes random
 * writes (multi-row statements, statements that fail on a UNIQUE or
 * PRIMARY KEY conflict inside and outside the transaction, schema
 * changes, a rolled-back transaction before it), so the parent replays
 * transactions 0..j on an in-memory model database and the recovered
 * state must equal the model's after exactly j transactions, where j = max(k) of log is the
 * last acknowledged k or one more (the commit reached the file, the ack
 * did not reach the pipe); so must the whole store's picture
 * (durable_dump: schema, indexes, rowid counters, hidden columns, and
 * store_check). Each materialized view must also equal its body.
 *
 * The parent checks a copy of the files (closing a database checkpoints
 * it), so the next child recovers the very files the kill left: kills
 * also land in recovery, in the truncation of a torn log tail, in
 * checkpoints (explicit ones, automatic ones by a small
 * checkpoint_threshold, and the one ldb_close makes before the child
 * opens the database again) and in the writing of records of tens of
 * KiB. Time-bounded: about 20 s per mode (LDB_LONG=1:
 * 10x, sanitizers: a third).
 */
#include "durable_util.h"

#include "api/db_internal.h"
#include "storage/store.h"

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

/* The acknowledged transactions' states; log is summarized because it
 * grows with every transaction. */
static const char *const STATE[] = {
    "SELECT count(*), min(k), max(k), sum(k * k), sum(length(note)) FROM log",
    "SELECT * FROM acct",
    "SELECT * FROM xfer",
    "SELECT * FROM note",
    "SELECT * FROM by_grp",
    "SELECT * FROM xj",
    "SELECT * FROM scratch",
    "SELECT * FROM scratch_mv",
    NULL,
};

#define BY_GRP_BODY "SELECT grp, count(*) AS n, sum(bal) AS total FROM acct GROUP BY grp"
#define XJ_BODY                                                                           \
    "SELECT x.id, x.amt, a.grp, a.code FROM xfer x JOIN acct a ON a.id = x.acct"
#define SCRATCH_MV_BODY "SELECT b, count(*) AS n FROM scratch GROUP BY b"

/* Schema changes inside transactions, so that the log replays them too:
 * an index, a table and a view over it that come and go (each may fail:
 * the view needs the table, the table cannot go while the view reads
 * it). */
static const char *const DDL[] = {
    "CREATE INDEX IF NOT EXISTS note_txt ON note(txt)",
    "DROP INDEX IF EXISTS note_txt",
    "CREATE TABLE IF NOT EXISTS scratch(a INTEGER PRIMARY KEY, b INTEGER)",
    "CREATE MATERIALIZED VIEW IF NOT EXISTS scratch_mv AS " SCRATCH_MV_BODY,
    "DROP MATERIALIZED VIEW IF EXISTS scratch_mv",
    "DROP TABLE IF EXISTS scratch",
};

/* Transaction 0: the schema, with log(0). */
static const char *const SCHEMA[] = {
    "BEGIN",
    "CREATE TABLE log(k INTEGER PRIMARY KEY, note TEXT)",
    "CREATE TABLE acct(id INTEGER PRIMARY KEY, grp INTEGER, bal INTEGER, code TEXT UNIQUE)",
    "CREATE INDEX acct_grp ON acct(grp)",
    "CREATE TABLE xfer(id INTEGER PRIMARY KEY, acct INTEGER, amt INTEGER)",
    "CREATE INDEX xfer_acct ON xfer(acct)",
    "CREATE TABLE note(id INTEGER PRIMARY KEY, k INTEGER, txt TEXT)",
    "CREATE MATERIALIZED VIEW by_grp AS " BY_GRP_BODY,
    "CREATE MATERIALIZED VIEW xj AS " XJ_BODY,
    "INSERT INTO log VALUES (0, 'schema')",
    "COMMIT",
};

#define TXN_MAX 24
#define SQL_MAX 200

/* One numbered transaction: its statements in order (must_ok: the ones
 * that cannot fail: transaction control and the log row), and what the
 * child does after it: nothing, a checkpoint, or closing the database
 * (which checkpoints) and opening it again. */
struct txn {
    int n;
    bool must_ok[TXN_MAX];
    char sql[TXN_MAX][SQL_MAX];
    enum { AFTER_NOTHING, AFTER_CHECKPOINT, AFTER_REOPEN } after;
};

static void add(struct txn *t, bool must_ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(struct txn *t, bool must_ok, const char *fmt, ...)
{
    CHECK(t->n < TXN_MAX);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->sql[t->n], SQL_MAX, fmt, ap);
    va_end(ap);
    t->must_ok[t->n++] = must_ok;
}

/* A write that may fail (keys and codes are drawn from small ranges so
 * that PRIMARY KEY and UNIQUE conflicts are frequent). */
static void add_write(struct txn *t, rng *r, int64_t k)
{
    int id = (int)rng_range(r, 1, 60), g = (int)rng_below(r, 8), code = (int)rng_below(r, 80);
    int bal = (int)rng_range(r, -50, 100);
    switch (rng_below(r, 14)) {
    case 0: add(t, false, "INSERT INTO acct VALUES (%d, %d, %d, 'c%d')", id, g, bal, code); break;
    case 1:
        add(t, false, "INSERT INTO acct VALUES (%d, %d, %d, 'c%d'), (%d, %d, %d, 'c%d')", id, g,
            bal, code, (int)rng_range(r, 1, 60), g, -bal, (int)rng_below(r, 80));
        break;
    case 2: add(t, false, "UPDATE acct SET bal = bal + %d WHERE id = %d", bal, id); break;
    case 3: add(t, false, "UPDATE acct SET code = 'c%d' WHERE id = %d", code, id); break;
    case 4:
        add(t, false, "UPDATE acct SET grp = %d WHERE id BETWEEN %d AND %d", g, id, id + 5);
        break;
    case 5: add(t, false, "DELETE FROM acct WHERE id = %d", id); break;
    case 6:
        add(t, false, "INSERT INTO xfer VALUES (%d, %d, %d)", (int)rng_range(r, 1, 150), id, bal);
        break;
    case 7: add(t, false, "DELETE FROM xfer WHERE acct = %d", id); break;
    case 8: add(t, false, "UPDATE xfer SET amt = amt + %d WHERE id %% 7 = %d", bal, g % 7); break;
    case 9:
        add(t, false, "INSERT INTO note(k, txt) VALUES (%lld, 'n%d')", (long long)k, code);
        break;
    case 10: add(t, false, "DELETE FROM note WHERE k < %lld", (long long)k - 20); break;
    case 11: add(t, false, "INSERT INTO scratch VALUES (%lld, %d)", (long long)k, g); break;
    case 12: /* now and then a record of tens of KiB: kills tear it mid-write */
        if (rng_chance(r, 1, 4))
            add(t, false, "INSERT INTO note(k, txt) VALUES (%lld, zeroblob(%d))", (long long)k,
                (int)rng_range(r, 4000, 40000));
        break;
    default:
        if (rng_chance(r, 1, 3))
            add(t, false, "%s", DDL[rng_below(r, sizeof DDL / sizeof *DDL)]);
        break;
    }
}

/* Transaction k of the run seeded seed. */
static void txn_make(uint64_t seed, int64_t k, struct txn *t)
{
    t->n = 0;
    t->after = AFTER_NOTHING;
    if (k == 0) {
        for (size_t i = 0; i < sizeof SCHEMA / sizeof *SCHEMA; i++)
            add(t, true, "%s", SCHEMA[i]);
        return;
    }
    rng r;
    rng_seed(&r, seed ^ ((uint64_t)k * 0xD1B54A32D192ED03u));
    if (rng_chance(&r, 1, 6)) { /* rolled back: must leave no trace */
        add(t, true, "BEGIN");
        for (int i = (int)rng_range(&r, 1, 4); i > 0; i--)
            add_write(t, &r, k);
        add(t, true, "ROLLBACK");
    }
    if (rng_chance(&r, 1, 8)) /* fails as a whole outside a transaction */
        add(t, false, "INSERT INTO log VALUES (%lld, 'dup')", (long long)k - 1);
    if (rng_chance(&r, 1, 6)) {
        add(t, true, "INSERT INTO log VALUES (%lld, 'solo')", (long long)k);
    } else {
        add(t, true, "BEGIN");
        add(t, true, "INSERT INTO log VALUES (%lld, 'txn %lld')", (long long)k, (long long)k);
        /* the database stays small, so recovery stays quick */
        add(t, true, "DELETE FROM log WHERE k < %lld", (long long)k - 50);
        for (int i = (int)rng_range(&r, 1, 7); i > 0; i--)
            add_write(t, &r, k);
        add(t, true, "COMMIT");
    }
    t->after = rng_chance(&r, 1, 25) ? AFTER_CHECKPOINT
               : rng_chance(&r, 1, 40) ? AFTER_REOPEN
                                       : AFTER_NOTHING;
}

/* ---- the child ------------------------------------------------------------------ */

/* Exit statuses of a child that stopped by itself (a failure). */
enum { CHILD_OPEN = 10, CHILD_STMT = 11, CHILD_CHECKPOINT = 12, CHILD_PIPE = 13 };

/* The last transaction the database holds; -1: none (no log table). */
static int64_t max_log(ldb *db) { return dur_query_int(db, "SELECT max(k) FROM log"); }

/* Opens the database at the mode and threshold given; exits on failure. */
static ldb *child_open(const char *path, const char *sync, long threshold)
{
    ldb *db = NULL;
    if (ldb_open(path, &db) != LDB_OK) {
        fprintf(stderr, "child: open: %s\n", ldb_errmsg(NULL));
        _exit(CHILD_OPEN);
    }
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA synchronous = %s; PRAGMA checkpoint_threshold = %ld", sync,
             threshold);
    if (ldb_exec(db, sql, NULL, NULL) != LDB_OK)
        _exit(CHILD_STMT);
    static const char *const levels[] = { "OFF", "NORMAL", "FULL" };
    int64_t level = dur_query_int(db, "PRAGMA synchronous");
    if (level < 0 || level > 2 || strcmp(levels[level], sync) != 0) {
        fprintf(stderr, "child: PRAGMA synchronous is %lld, not %s\n", (long long)level, sync);
        _exit(CHILD_STMT);
    }
    return db;
}

static void child_run(const char *path, const char *sync, long threshold, uint64_t seed, int fd)
{
    ldb *db = child_open(path, sync, threshold);
    struct txn t;
    for (int64_t k = max_log(db) + 1;; k++) {
        txn_make(seed, k, &t);
        for (int i = 0; i < t.n; i++) {
            if (ldb_exec(db, t.sql[i], NULL, NULL) != LDB_OK && t.must_ok[i]) {
                fprintf(stderr, "child: %s: %s\n", t.sql[i], ldb_errmsg(db));
                _exit(CHILD_STMT);
            }
        }
        if (write(fd, &k, sizeof k) != (ssize_t)sizeof k)
            _exit(CHILD_PIPE);
        if (t.after == AFTER_CHECKPOINT && ldb_checkpoint(db) != LDB_OK) {
            fprintf(stderr, "child: checkpoint: %s\n", ldb_errmsg(db));
            _exit(CHILD_CHECKPOINT);
        }
        if (t.after == AFTER_REOPEN) {
            ldb_close(db);
            db = child_open(path, sync, threshold);
            if (max_log(db) != k)
                _exit(CHILD_OPEN);
        }
    }
}

/* ---- the parent ------------------------------------------------------------------ */

struct crash_run {
    uint64_t seed;
    const char *sync;
    char *dir, path[DUR_PATH], check_path[DUR_PATH];
    ldb *model;
    int64_t model_k; /* transactions the model has run; -1: none */
    int64_t j;       /* transactions the files hold, as last checked */
    long rounds, unacked_commits, in_open;
};

/* Starts a child on the files, kills it after delay_us, and returns the
 * last k it acknowledged (run->j when none). */
static int64_t crash_round(struct crash_run *run, long threshold, long delay_us)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_run(run->path, run->sync, threshold, run->seed, fds[1]);
    }
    close(fds[1]);
    usleep((useconds_t)delay_us);
    kill(pid, SIGKILL);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
           "the child stopped by itself (status %d, exit %d): see its message above", status,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    int64_t acked = run->j, k;
    ssize_t got;
    while ((got = read(fds[0], &k, sizeof k)) == (ssize_t)sizeof k)
        acked = k;
    CHECKF(got == 0, "a torn acknowledgement on the pipe (%zd bytes)", got);
    close(fds[0]);
    if (acked == run->j)
        run->in_open++;
    return acked;
}

static void model_advance(struct crash_run *run, int64_t to)
{
    struct txn t;
    for (; run->model_k < to; run->model_k++) {
        txn_make(run->seed, run->model_k + 1, &t);
        for (int i = 0; i < t.n; i++) {
            int rc = ldb_exec(run->model, t.sql[i], NULL, NULL);
            CHECKF(rc == LDB_OK || !t.must_ok[i], "model: %s: %s", t.sql[i],
                   ldb_errmsg(run->model));
        }
    }
}

/* Opens a copy of the files the kill left and checks them against the
 * model; returns the transactions they hold. */
static int64_t crash_check(struct crash_run *run, int64_t acked)
{
    struct dur_files fs = dur_files_read(run->path);
    dur_files_write(run->check_path, &fs);
    dur_files_free(&fs);
    ldb *db = dur_open(run->check_path, "FULL", 0);
    int64_t j = max_log(db);
    CHECKF(j == acked || j == acked + 1,
           "round %ld: the recovered database holds transactions 0..%lld; the child "
           "acknowledged 0..%lld", run->rounds, (long long)j, (long long)acked);
    run->unacked_commits += j > acked;
    model_advance(run, j);
    char *want = dur_state(run->model, STATE), *got = dur_state(db, STATE);
    CHECKF(strcmp(want, got) == 0,
           "round %ld: recovered state is not the state after transactions 0..%lld "
           "(acknowledged 0..%lld)\n-- want:\n%s\n-- got:\n%s", run->rounds, (long long)j,
           (long long)acked, want, got);
    free(want);
    free(got);
    /* the whole store too (durable_dump, with store_check): schema, rowid
     * counters, indexes, hidden columns */
    want = durable_dump(run->model);
    got = durable_dump(db);
    CHECKF(strcmp(want, got) == 0, "round %ld: the recovered store differs from the model's "
           "after transactions 0..%lld\n-- want:\n%s\n-- got:\n%s", run->rounds, (long long)j,
           want, got);
    free(want);
    free(got);
    ldb_mv_stats st;
    if (j >= 0) {
        dur_check_view(db, "by_grp", BY_GRP_BODY);
        dur_check_view(db, "xj", XJ_BODY);
    }
    if (ldb_mv_stats_get(db, "scratch_mv", &st) == LDB_OK)
        dur_check_view(db, "scratch_mv", SCRATCH_MV_BODY);
    ldb_close(db);
    return j;
}

static void crash_mode(const char *sync)
{
    struct crash_run run = { .seed = test_seed(), .sync = sync, .model_k = -1, .j = -1 };
    rng r;
    rng_seed(&r, run.seed);
    run.dir = durable_tmpdir();
    durable_path(run.path, DUR_PATH, run.dir, "db");
    durable_path(run.check_path, DUR_PATH, run.dir, "check");
    CHECK(ldb_open(NULL, &run.model) == LDB_OK);
    static const long thresholds[] = { 0, 512, 4096, 65536 };
    double end = dur_now() + dur_budget(20);
    for (; dur_now() < end || run.rounds < 20; run.rounds++) {
        long threshold = thresholds[rng_below(&r, 4)];
        /* mostly up to 40 ms; one round in 5 dies within the first ms,
         * in or right after the recovery */
        long delay = rng_chance(&r, 1, 5) ? (long)rng_below(&r, 1000)
                                          : (long)rng_below(&r, 40000);
        int64_t acked = crash_round(&run, threshold, delay);
        run.j = crash_check(&run, acked);
    }
    printf("#    synchronous=%s: %ld kills, %lld transactions, %ld kills before the first "
           "ack, %ld commits on disk but not acknowledged\n", sync, run.rounds,
           (long long)run.j, run.in_open, run.unacked_commits);
    ldb_close(run.model);
    durable_rmdir(run.dir);
}

static void crash_sync_full(void) { crash_mode("FULL"); }
static void crash_sync_normal(void) { crash_mode("NORMAL"); }
static void crash_sync_off(void) { crash_mode("OFF"); }

TEST_MAIN(T(crash_sync_full), T(crash_sync_normal), T(crash_sync_off))
