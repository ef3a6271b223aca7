/*
 * test_durable_faults.c - every failure of a disk-changing call, swept
 * like an allocation failure: for n = 1, 2, ... until a run completes
 * without the hook firing, the n-th call (open-create, write, sync,
 * truncate, rename, directory sync, remove) fails with EIO or ENOSPC,
 * once or from there on (file_fail_at), while a fixed workload runs:
 * open (a fresh database, or an existing one whose log must be replayed
 * and whose torn tail must be cut), DDL, inserts, a materialized view,
 * multi-statement transactions, a checkpoint, more commits, close.
 *
 * The handle runs with the defaults (synchronous FULL; the checkpoint
 * threshold far above the workload, so only the explicit checkpoint
 * runs), and in auto_checkpoint with PRAGMA checkpoint_threshold = 1 (a
 * checkpoint after every commit, whose failures are not reported: the
 * commit stands in the log).
 *
 * Checked on each run:
 * - the call that saw the failure returns an error (LDB_IOERR for EIO,
 *   LDB_FULL for ENOSPC) with a message; no call returns LDB_OK while a
 *   disk call it made failed;
 * - a failed open leaves *out NULL and, after a one-shot failure, the
 *   files byte for byte as they were;
 * - after its first failure the handle either keeps working (later steps
 *   do what they do on the model) or refuses writes (later writes the
 *   model accepts fail, with a message), never both; which one is counted
 *   and printed. A failed COMMIT that leaves its transaction open is
 *   committed again (it must work once the one-shot failure is spent),
 *   else rolled back. Either way the handle reads exactly the model: the
 *   commits that returned LDB_OK;
 * - reopened with the hook off, the database holds exactly the commits
 *   that returned LDB_OK (the model, replayed on an in-memory database),
 *   every materialized view equals its body, and store_check passes. After
 *   a persistent failure it may also hold the one transaction whose COMMIT
 *   failed: its record can be whole in the log while the sync failed and
 *   so did every cleanup meant to cut it off (all later calls fail), and
 *   then the next open decides it, whole or absent - never part of it.
 *
 * sync_levels counts the disk calls of a commit and a checkpoint at each
 * PRAGMA synchronous level (which syncs each level makes).
 */
#include "durable_util.h"

#include "api/db_internal.h"
#include "base/file.h"
#include "storage/store.h"

#define CHECKPOINT NULL /* a step that is ldb_checkpoint, not SQL */
#define MAX_STEPS 20

/* The workload on a fresh database. */
static const char *const FRESH[] = {
    "CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, v TEXT UNIQUE)",
    "CREATE INDEX t_g ON t(g)",
    "INSERT INTO t VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c')",
    "CREATE MATERIALIZED VIEW m AS SELECT g, count(*) AS n, sum(id) AS s FROM t GROUP BY g",
    "BEGIN; INSERT INTO t VALUES (4, 2, 'd'); UPDATE t SET g = 3 WHERE id = 1; "
    "DELETE FROM t WHERE id = 2; COMMIT",
    CHECKPOINT,
    "INSERT INTO t VALUES (5, 3, 'e')",
    "CREATE TABLE u(k INTEGER PRIMARY KEY, t_id INTEGER)",
    "BEGIN; INSERT INTO u VALUES (1, 4), (2, 5); UPDATE t SET v = 'z' WHERE id = 3; COMMIT",
    "UPDATE t SET g = g + 1",
};

/* The workload on the database FRESH made (opened from the files a crash
 * left: its log holds the commits after FRESH's checkpoint, then a torn
 * record). */
static const char *const EXISTING[] = {
    "INSERT INTO t VALUES (10, 1, 'x')",
    "BEGIN; UPDATE t SET g = 9 WHERE id = 10; INSERT INTO u VALUES (3, 10); COMMIT",
    "CREATE INDEX u_t ON u(t_id)",
    CHECKPOINT,
    "DELETE FROM t WHERE g = 9",
    "BEGIN; INSERT INTO t VALUES (11, 4, 'y'); DELETE FROM u WHERE k = 1; COMMIT",
};

#define NFRESH (int)(sizeof FRESH / sizeof *FRESH)
#define NEXISTING (int)(sizeof EXISTING / sizeof *EXISTING)

static const char *const STATE[] = {
    "SELECT * FROM t",
    "SELECT * FROM m",
    "SELECT * FROM u",
    NULL,
};

#define M_BODY "SELECT g, count(*) AS n, sum(id) AS s FROM t GROUP BY g"

struct sweep {
    bool existing;
    int persistent, err;
    char *dir, path[DUR_PATH];
    struct dur_files template; /* the existing database's files */
    bool auto_ckpt; /* a checkpoint after every commit */
    const char *steps[MAX_STEPS];
    int nsteps;
    /* totals over the sweep, printed */
    int runs, failed_opens, kept_working, refused, commit_retried, rollback_needed;
    int failing_txn_kept;
    char refusal[160];
};

/* A step on db: ldb_checkpoint or ldb_exec. */
static int run_step(ldb *db, const char *sql)
{
    return sql == CHECKPOINT ? ldb_checkpoint(db) : ldb_exec(db, sql, NULL, NULL);
}

/* An in-memory database holding the state the workload starts from, then
 * the steps ok[0..nok-1] of it. */
static ldb *model_of(const struct sweep *s, const int *ok, int nok)
{
    ldb *m = NULL;
    CHECK(ldb_open(NULL, &m) == LDB_OK);
    for (int i = 0; s->existing && i < NFRESH; i++)
        if (FRESH[i] != CHECKPOINT)
            EXEC(m, FRESH[i]);
    for (int i = 0; i < nok; i++)
        if (s->steps[ok[i]] != CHECKPOINT)
            EXEC(m, s->steps[ok[i]]);
    return m;
}

/* The files the run starts from: none, or the existing database's. */
static void sweep_setup_files(const struct sweep *s)
{
    if (s->existing) {
        dur_files_write(s->path, &s->template);
        return;
    }
    struct dur_files none = { { { false, 0, NULL }, { false, 0, NULL }, { false, 0, NULL } } };
    dur_files_write(s->path, &none);
}

/* What one run's handle did. */
struct run {
    int ok[MAX_STEPS], nok; /* steps that returned LDB_OK */
    int failing;            /* the step whose failure came first, or -1 */
    bool refusing;          /* a later step failed that the model accepts */
    bool later_ok;          /* a later step changed the state */
};

/* The model's result for step i after the steps ok[0..nok-1]. */
static int model_rc(const struct sweep *s, const int *ok, int nok, int i)
{
    if (s->steps[i] == CHECKPOINT)
        return LDB_OK;
    ldb *m = model_of(s, ok, nok);
    int rc = ldb_exec(m, s->steps[i], NULL, NULL);
    ldb_close(m);
    return rc;
}

/* A step failed on db (the hook's failure, or later): classifies it. A
 * later step the model accepts is a refusal; one the model fails the
 * same way (a table whose CREATE failed) is only SQL. */
static void step_failed(struct sweep *s, ldb *db, struct run *r, int i, int rc, bool fired,
                        uint64_t n)
{
    const char *sql = s->steps[i] ? s->steps[i] : "ldb_checkpoint";
    const char *msg = ldb_errmsg(db);
    CHECKF(msg && *msg, "%s: rc %d without a message", sql, rc);
    if (r->failing < 0) {
        CHECKF(fired, "%s: rc %d (%s) with no disk call failing", sql, rc, msg);
        CHECKF(rc == file_code(s->err), "%s: disk call %llu failing with %s: rc %d (%s), "
               "wanted %d", sql, (unsigned long long)n, strerror(s->err), rc, msg,
               file_code(s->err));
        r->failing = i;
        /* A failed COMMIT may leave its transaction open: then COMMIT
         * again (with the hook spent, it must now work), and after a
         * persistent failure ROLLBACK. Counted. */
        if (ldb_exec(db, "COMMIT", NULL, NULL) == LDB_OK) {
            s->commit_retried++;
            r->ok[r->nok++] = i;
        } else {
            s->rollback_needed += ldb_exec(db, "ROLLBACK", NULL, NULL) == LDB_OK;
        }
        return;
    }
    int mrc = model_rc(s, r->ok, r->nok, i);
    if (mrc != rc && !r->refusing) {
        r->refusing = true;
        snprintf(s->refusal, sizeof s->refusal, "%s", msg);
    }
    ldb_exec(db, "ROLLBACK", NULL, NULL); /* a BEGIN whose next statement failed */
}

/* Runs the steps on db with the hook set; checks each result, and that
 * db always reads as the model (kept step by step). */
static void run_steps(struct sweep *s, ldb *db, struct run *r, uint64_t n)
{
    ldb *model = model_of(s, NULL, 0);
    char *before = dur_state(db, STATE);
    for (int i = 0; i < s->nsteps; i++) {
        uint64_t failed0 = file_failed_count();
        int nok = r->nok, rc = run_step(db, s->steps[i]);
        bool fired = file_failed_count() > failed0;
        const char *sql = s->steps[i] ? s->steps[i] : "ldb_checkpoint";
        if (rc == LDB_OK) {
            /* an automatic checkpoint's failure is not the commit's: it
             * stands, and the log keeps it (journal_after_commit) */
            CHECKF(!fired || s->auto_ckpt, "%s: LDB_OK although disk call %llu failed", sql,
                   (unsigned long long)n);
            r->ok[r->nok++] = i;
        } else {
            step_failed(s, db, r, i, rc, fired, n);
        }
        if (r->nok > nok && s->steps[i] != CHECKPOINT)
            EXEC(model, s->steps[i]);
        char *want = dur_state(model, STATE), *after = dur_state(db, STATE);
        CHECKF(strcmp(want, after) == 0, "%s (disk call %llu failing): not the model's state\n"
               "-- want:\n%s\n-- got:\n%s", sql, (unsigned long long)n, want, after);
        free(want);
        /* a write that changed nothing (an UPDATE of an empty table)
         * commits nothing, and proves nothing about refusing */
        r->later_ok |= rc == LDB_OK && r->failing >= 0 && strcmp(before, after) != 0;
        free(before);
        before = after;
    }
    free(before);
    ldb_close(model);
    CHECKF(!(r->refusing && r->later_ok), "after a failure at step %d (disk call %llu) the "
           "handle both refused and accepted later writes", r->failing, (unsigned long long)n);
}

/* Reopens with the hook off: the state is the model's (or, after a
 * persistent failure, the model's plus the failing transaction). */
static void check_reopen(struct sweep *s, const struct run *r, uint64_t n)
{
    ldb *db = NULL;
    int rc = ldb_open(s->path, &db);
    CHECKF(rc == LDB_OK, "reopen after disk call %llu failed: rc %d: %s",
           (unsigned long long)n, rc, ldb_errmsg(NULL));
    ldb *model = model_of(s, r->ok, r->nok);
    char *want = dur_state(model, STATE), *got = dur_state(db, STATE);
    ldb_close(model);
    if (strcmp(want, got) != 0 && s->persistent && r->failing >= 0 &&
        s->steps[r->failing] != CHECKPOINT) {
        int ok[MAX_STEPS + 1];
        memcpy(ok, r->ok, sizeof r->ok);
        ok[r->nok] = r->failing;
        model = model_of(s, ok, r->nok + 1);
        free(want);
        want = dur_state(model, STATE);
        ldb_close(model);
        s->failing_txn_kept += strcmp(want, got) == 0;
    }
    CHECKF(strcmp(want, got) == 0, "reopened after disk call %llu failed%s (%s): not the state "
           "of the commits that returned LDB_OK\n-- want:\n%s\n-- got:\n%s",
           (unsigned long long)n, s->persistent ? " and every later one" : "",
           strerror(s->err), want, got);
    free(want);
    free(got);
    if (strstr(got = dur_state(db, STATE), "error: ") == NULL)
        dur_check_view(db, "m", M_BODY);
    free(got);
    const char *err = store_check(db->store);
    CHECKF(err == NULL, "store_check: %s", err);
    ldb_close(db);
}

/* One run with disk call n failing; returns whether the hook fired. */
static bool sweep_run(struct sweep *s, uint64_t n)
{
    sweep_setup_files(s);
    struct dur_files before = dur_files_read(s->path);
    struct run r = { .failing = -1 };
    file_fail_at(n, s->persistent, s->err);
    ldb *db = NULL;
    int rc = ldb_open(s->path, &db);
    bool fired = file_failed_count() > 0;
    if (rc != LDB_OK) {
        file_fail_at(0, 0, 0);
        CHECKF(fired, "open failed with no disk call failing: rc %d (%s)", rc, ldb_errmsg(NULL));
        CHECKF(rc == file_code(s->err), "open, disk call %llu failing with %s: rc %d (%s)",
               (unsigned long long)n, strerror(s->err), rc, ldb_errmsg(NULL));
        CHECKF(db == NULL, "*out is not NULL after a failed open");
        if (!s->persistent)
            dur_files_check_same(s->path, &before, "a failed open");
        s->failed_opens++;
    } else {
        run_steps(s, db, &r, n);
        ldb_close(db);
        s->kept_working += r.failing >= 0 && r.later_ok;
        s->refused += r.refusing;
        fired = file_failed_count() > 0;
    }
    file_fail_at(0, 0, 0);
    dur_files_free(&before);
    check_reopen(s, &r, n);
    s->runs++;
    return fired;
}

/* The existing database: FRESH's files as a crash leaves them (copied
 * while open, so the log holds what followed the checkpoint), with a torn
 * record (bytes of a record cut short) at the end of the log. */
static void make_template(struct sweep *s)
{
    ldb *db = dur_open(s->path, "FULL", 0);
    for (int i = 0; i < NFRESH; i++)
        CHECKF(run_step(db, FRESH[i]) == LDB_OK, "%s: %s", FRESH[i] ? FRESH[i] : "checkpoint",
               ldb_errmsg(db));
    char wal[DUR_PATH];
    dur_suffix(wal, s->path, "-wal");
    uint64_t wal0 = dur_size(wal);
    EXEC(db, "INSERT INTO t VALUES (99, 99, 'torn')");
    s->template = dur_files_read(s->path);
    ldb_close(db);
    struct dur_bytes *log = &s->template.f[1];
    CHECKF(log->n > wal0, "the log did not grow (%zu bytes)", log->n);
    log->n = (size_t)(wal0 + (log->n - wal0) / 2); /* the last record, torn */
}

static void sweep(bool existing, bool auto_ckpt, int persistent, int err)
{
    struct sweep s = { .existing = existing, .auto_ckpt = auto_ckpt, .persistent = persistent,
                       .err = err };
    file_fail_at(0, 0, 0); /* a failed case may have left it set */
    s.dir = durable_tmpdir();
    durable_path(s.path, DUR_PATH, s.dir, "db");
    if (existing)
        make_template(&s);
    if (auto_ckpt)
        s.steps[s.nsteps++] = "PRAGMA checkpoint_threshold = 1";
    for (int i = 0; i < (existing ? NEXISTING : NFRESH); i++)
        s.steps[s.nsteps++] = existing ? EXISTING[i] : FRESH[i];
    uint64_t n = 1;
    while (sweep_run(&s, n))
        n++;
    /* the workload makes dozens of disk calls: a sweep that stops early
     * tested nothing */
    CHECKF(n > 10, "the hook stopped firing at disk call %llu", (unsigned long long)n);
    /* one line per sweep: the handle's behaviour after a failure */
    printf("#    %s%s %s %s: %llu calls, %d failed opens, then %d kept working, %d refused; "
           "COMMIT left open %d (redone %d); failed txn kept %d\n",
           existing ? "existing" : "fresh", auto_ckpt ? "+auto" : "",
           persistent ? "persistent" : "once", err == EIO ? "EIO" : "ENOSPC",
           (unsigned long long)n - 1, s.failed_opens, s.kept_working, s.refused,
           s.commit_retried + s.rollback_needed, s.commit_retried, s.failing_txn_kept);
    if (s.refused && persistent && err == EIO && !existing && !auto_ckpt)
        printf("#    a refusal: %s\n", s.refusal);
    if (existing)
        dur_files_free(&s.template);
    durable_rmdir(s.dir);
}

static void fresh_once(void)
{
    sweep(false, false, 0, EIO);
    sweep(false, false, 0, ENOSPC);
}
static void fresh_persistent(void)
{
    sweep(false, false, 1, EIO);
    sweep(false, false, 1, ENOSPC);
}
static void existing_once(void)
{
    sweep(true, false, 0, EIO);
    sweep(true, false, 0, ENOSPC);
}
static void existing_persistent(void)
{
    sweep(true, false, 1, EIO);
    sweep(true, false, 1, ENOSPC);
}
/* PRAGMA checkpoint_threshold = 1: every commit is followed by a
 * checkpoint whose failures are not reported. */
static void auto_checkpoint(void)
{
    for (int existing = 0; existing < 2; existing++)
        for (int persistent = 0; persistent < 2; persistent++) {
            sweep(existing, true, persistent, EIO);
            sweep(existing, true, persistent, ENOSPC);
        }
}

/* Disk calls (file_call_count) of one commit and of one checkpoint at
 * each PRAGMA synchronous level: FULL syncs the log at COMMIT, NORMAL
 * and OFF do not; FULL and NORMAL sync a checkpoint, OFF does not. So a
 * FULL commit makes one call more than a NORMAL one (its sync), NORMAL
 * and OFF commits make the same calls, and an OFF checkpoint makes fewer
 * than a NORMAL one, which makes as many as a FULL one. */
static void sync_levels(void)
{
    static const char *const levels[] = { "OFF", "NORMAL", "FULL" };
    uint64_t commit[3], ckpt[3];
    char *dir = durable_tmpdir(), path[DUR_PATH];
    durable_path(path, DUR_PATH, dir, "db");
    for (int level = 0; level < 3; level++) {
        ldb *db = dur_open(path, levels[level], 0);
        EXEC(db, "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v TEXT)");
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT INTO t VALUES (%d, 'level %s')", level, levels[level]);
        uint64_t n0 = file_call_count();
        EXEC(db, sql);
        uint64_t n1 = file_call_count();
        CHECKF(ldb_checkpoint(db) == LDB_OK, "checkpoint: %s", ldb_errmsg(db));
        commit[level] = n1 - n0;
        ckpt[level] = file_call_count() - n1;
        ldb_close(db);
    }
    printf("#    disk calls of a commit: OFF %llu, NORMAL %llu, FULL %llu; of a checkpoint: "
           "OFF %llu, NORMAL %llu, FULL %llu\n", (unsigned long long)commit[0],
           (unsigned long long)commit[1], (unsigned long long)commit[2],
           (unsigned long long)ckpt[0], (unsigned long long)ckpt[1], (unsigned long long)ckpt[2]);
    CHECK(commit[0] >= 1);
    CHECK_INT(commit[1], commit[0]);
    CHECK_INT(commit[2], commit[1] + 1);
    CHECK(ckpt[0] < ckpt[1]);
    CHECK_INT(ckpt[2], ckpt[1]);
    durable_rmdir(dir);
}

TEST_MAIN(T(fresh_once), T(fresh_persistent), T(existing_once), T(existing_persistent),
          T(auto_checkpoint), T(sync_levels))
