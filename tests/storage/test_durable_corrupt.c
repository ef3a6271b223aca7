/*
 * test_durable_corrupt.c - opening damaged, foreign, unreachable and busy
 * database files.
 *
 * A database is built with NCOMMITS known commits: commits 1..CKPT, a
 * checkpoint (they are in the snapshot), then commits CKPT+1..NCOMMITS in
 * the log, whose size after each commit is a record boundary; each
 * commit's state is kept, and the files are copied while the database is
 * open (what a crash would leave). Copies of them are then damaged:
 * - the log cut at every boundary and at random offsets opens with
 *   exactly the state of the last whole record below the cut, the log cut
 *   back to that record, and a commit made after that recovery survives
 *   the next recovery (the torn tail is gone, not left between records);
 * - random bits flipped in the log: exactly the state before the record
 *   holding the first flipped bit, or LDB_CORRUPT; the log's header
 *   damaged: LDB_CORRUPT naming the log;
 * - random bits flipped in the snapshot, or the snapshot cut short:
 *   LDB_CORRUPT with a message naming the file, or (a harmless flip) the
 *   exact state;
 * - a newer format version in either file's header: LDB_UNSUPPORTED
 *   naming it (the header layout is assumed from src/storage/journal.c,
 *   see newer_version);
 * - a checkpoint cut short (see checkpoint_interrupted): the last state;
 *   a log whose snapshot is missing: LDB_CORRUPT naming it;
 * - a file that is not a database: LDB_CORRUPT;
 * - a missing or read-only directory: LDB_CANTOPEN;
 * - a second open, from this process or a forked one: LDB_BUSY.
 * After every failed open the files are byte for byte what they were, and
 * *out is NULL.
 */
#include "durable_util.h"

#include "api/db_internal.h"
#include "storage/store.h"

#include <fcntl.h>
#include <sys/wait.h>

#define NCOMMITS 50
#define CKPT 10

static const char *const STATE[] = {
    "SELECT k, length(note), substr(note, 1, 60), substr(note, length(note) - 60) FROM log",
    "SELECT * FROM acct",
    "SELECT * FROM by_grp",
    "SELECT * FROM big",
    NULL,
};

static const char *const SCHEMA =
    "BEGIN;"
    "CREATE TABLE log(k INTEGER PRIMARY KEY, note TEXT);"
    "CREATE TABLE acct(id INTEGER PRIMARY KEY, grp INTEGER, bal INTEGER, code TEXT UNIQUE);"
    "CREATE INDEX acct_grp ON acct(grp);"
    "CREATE MATERIALIZED VIEW by_grp AS "
    "  SELECT grp, count(*) AS n, sum(bal) AS total FROM acct GROUP BY grp;"
    "INSERT INTO log VALUES (1, 'schema');"
    "COMMIT";

/* The built database: its files as a crash leaves them after the last
 * commit (full), the log's size after each commit, and each commit's
 * state. */
struct built {
    uint64_t seed;
    char *dir, path[DUR_PATH], wal[DUR_PATH];
    struct dur_files full;
    uint64_t wal_size[NCOMMITS + 1];
    char *state[NCOMMITS + 1]; /* [1..NCOMMITS] */
};

static uint64_t wal_size_now(const char *wal)
{
    struct stat st;
    return stat(wal, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Commit i (> 1): log(i) with a note of random length (records of
 * varied sizes, some over 4 KiB), and writes that cannot fail. Commits 30
 * and 40 also change the schema. */
static void commit_random(ldb *db, rng *r, int i)
{
    char note[6000];
    size_t len = rng_chance(r, 1, 8) ? 4500 + rng_below(r, 1000) : rng_below(r, 300);
    for (size_t c = 0; c < len; c++)
        note[c] = (char)('a' + rng_below(r, 26));
    note[len] = '\0';
    char sql[6200];
    snprintf(sql, sizeof sql, "BEGIN; INSERT INTO log VALUES (%d, '%s')", i, note);
    EXEC(db, sql);
    snprintf(sql, sizeof sql, "INSERT INTO acct VALUES (%d, %d, %d, 'c%d')", i,
             (int)rng_below(r, 5), (int)rng_range(r, -9, 9), i);
    EXEC(db, sql);
    snprintf(sql, sizeof sql, "UPDATE acct SET bal = bal + %d WHERE id %% 4 = %d",
             (int)rng_range(r, 1, 5), (int)rng_below(r, 4));
    EXEC(db, sql);
    if (rng_chance(r, 1, 3)) {
        snprintf(sql, sizeof sql, "DELETE FROM acct WHERE id = %d", (int)rng_range(r, 2, i));
        EXEC(db, sql);
    }
    if (i == 30)
        EXEC(db, "CREATE INDEX acct_bal ON acct(bal)");
    if (i == 40)
        EXEC(db, "CREATE MATERIALIZED VIEW big AS SELECT id, code FROM acct WHERE bal > 3");
    EXEC(db, "COMMIT");
}

/* The one built database (static: a failed case's is freed by the next
 * build, and is not a leak meanwhile). */
static struct built built_db;

static void built_free(struct built *b);

static struct built *build(void)
{
    struct built *b = &built_db;
    if (b->dir)
        built_free(b);
    b->seed = test_seed();
    rng r;
    rng_seed(&r, b->seed);
    b->dir = durable_tmpdir();
    durable_path(b->path, DUR_PATH, b->dir, "db");
    dur_suffix(b->wal, b->path, "-wal");
    ldb *db = dur_open(b->path, "FULL", 0);
    EXEC(db, SCHEMA);
    for (int i = 1; i <= NCOMMITS; i++) {
        if (i > 1)
            commit_random(db, &r, i);
        if (i == CKPT)
            CHECKF(ldb_checkpoint(db) == LDB_OK, "checkpoint: %s", ldb_errmsg(db));
        b->state[i] = dur_state(db, STATE);
        b->wal_size[i] = wal_size_now(b->wal);
        CHECKF(i <= CKPT || b->wal_size[i] > b->wal_size[i - 1],
               "commit %d did not grow the log (%llu bytes)", i,
               (unsigned long long)b->wal_size[i]);
    }
    b->full = dur_files_read(b->path);
    ldb_close(db);
    return b;
}

static void built_free(struct built *b)
{
    dur_files_free(&b->full);
    for (int i = 1; i <= NCOMMITS; i++)
        free(b->state[i]);
    durable_rmdir(b->dir);
    memset(b, 0, sizeof *b);
}

/* The last commit whose record ends at or before byte off of the log
 * (CKPT when off is inside the log's header). */
static int last_whole(const struct built *b, uint64_t off)
{
    int i = CKPT;
    while (i < NCOMMITS && b->wal_size[i + 1] <= off)
        i++;
    return i;
}

/* db holds commits 1..i, and passes store_check. */
static void check_state(const struct built *b, ldb *db, int i, const char *what)
{
    char *got = dur_state(db, STATE);
    CHECKF(strcmp(got, b->state[i]) == 0, "%s: not the state after commit %d:\n-- want:\n%s\n"
           "-- got:\n%s", what, i, b->state[i], got);
    free(got);
    const char *err = store_check(db->store);
    CHECKF(err == NULL, "%s: store_check: %s", what, err);
}

/* Opens the files at b->path, which must work and hold commits 1..i. */
static ldb *open_expect(const struct built *b, int i, const char *what)
{
    ldb *db = NULL;
    int rc = ldb_open(b->path, &db);
    CHECKF(rc == LDB_OK, "%s: open: rc %d: %s", what, rc, ldb_errmsg(NULL));
    check_state(b, db, i, what);
    return db;
}

/* ldb_open of path into *db; when it fails, *db must be NULL, there must
 * be a message, and the files must be as they were. */
static int open_try(const char *path, ldb **db, const char *what)
{
    struct dur_files before = dur_files_read(path);
    *db = (ldb *)&before; /* not NULL: a failed open must clear it */
    int rc = ldb_open(path, db);
    if (rc != LDB_OK) {
        CHECKF(*db == NULL, "%s: *out is not NULL after a failed open", what);
        const char *msg = ldb_errmsg(NULL);
        CHECKF(msg && *msg && strcmp(msg, ldb_errstr(LDB_OK)) != 0, "%s: no message", what);
        dur_files_check_same(path, &before, what);
    }
    dur_files_free(&before);
    return rc;
}

/* ldb_open of path fails with code (see open_try); returns the message. */
static const char *open_fails(const char *path, int code, const char *what)
{
    ldb *db = NULL;
    int rc = open_try(path, &db, what);
    if (rc == LDB_OK)
        ldb_close(db);
    CHECKF(rc == code, "%s: open: rc %d (%s), wanted %d (%s)", what, rc,
           rc ? ldb_errmsg(NULL) : "opened", code, ldb_errstr(code));
    return ldb_errmsg(NULL);
}

/* After the recovery of a cut log (db holds commits 1..i), one more
 * commit must survive a crash (files copied while open) and the next
 * recovery: the torn tail is gone, not left in front of the new record. */
static void commit_after_recovery(const struct built *b, ldb *db, int i, const char *what)
{
    EXEC(db, "INSERT INTO log VALUES (1000, 'after recovery')");
    struct dur_files crash = dur_files_read(b->path);
    ldb_close(db);
    dur_files_write(b->path, &crash);
    dur_files_free(&crash);
    db = NULL;
    int rc = ldb_open(b->path, &db);
    CHECKF(rc == LDB_OK, "%s, then a commit: open: rc %d: %s", what, rc, ldb_errmsg(NULL));
    CHECKF(dur_query_int(db, "SELECT count(*) FROM log WHERE k = 1000") == 1,
           "%s: the commit made after recovering it is lost", what);
    EXEC(db, "DELETE FROM log WHERE k = 1000");
    char *got = dur_state(db, STATE);
    CHECKF(strcmp(got, b->state[i]) == 0, "%s, then a commit: not the state after commit %d "
           "and that commit:\n-- want:\n%s\n-- got:\n%s", what, i, b->state[i], got);
    free(got);
    ldb_close(db);
}

/* Recovery cut the log back to its last whole record, commit i's. */
static void check_log_cut_back(const struct built *b, int i, const char *what)
{
    uint64_t size = dur_size(b->wal);
    CHECKF(size == b->wal_size[i], "%s: after recovery the log has %llu bytes, not the %llu "
           "of its records up to commit %d", what, (unsigned long long)size,
           (unsigned long long)b->wal_size[i], i);
}

/* The full files with the log cut at off. */
static void write_cut_log(const struct built *b, uint64_t off)
{
    struct dur_files fs = b->full;
    CHECK(off <= fs.f[1].n);
    fs.f[1].n = (size_t)off;
    dur_files_write(b->path, &fs);
}

static void cut_log_at(const struct built *b, uint64_t off)
{
    char what[96];
    snprintf(what, sizeof what, "log cut at byte %llu", (unsigned long long)off);
    write_cut_log(b, off);
    int i = last_whole(b, off);
    ldb *db = open_expect(b, i, what);
    check_log_cut_back(b, i, what);
    commit_after_recovery(b, db, i, what);
}

static void log_cut(void)
{
    struct built *b = build();
    CHECK(b->full.f[1].exists && b->full.f[1].n == b->wal_size[NCOMMITS]);
    for (int i = CKPT; i <= NCOMMITS; i++) {
        cut_log_at(b, b->wal_size[i]);
        if (b->wal_size[i] > 0)
            cut_log_at(b, b->wal_size[i] - 1);
    }
    rng r;
    rng_seed(&r, b->seed + 1);
    for (int t = 0; t < 100 * test_scale(); t++)
        cut_log_at(b, rng_below(&r, b->wal_size[NCOMMITS]));
    /* no log at all */
    struct dur_files fs = b->full;
    fs.f[1].exists = false;
    dur_files_write(b->path, &fs);
    ldb_close(open_expect(b, CKPT, "no log file"));
    built_free(b);
}

/* Flips 1-3 random bits of b; returns the lowest offset flipped. */
static uint64_t flip_bits(rng *r, struct dur_bytes *b, int *nflips)
{
    uint64_t first = UINT64_MAX;
    *nflips = (int)rng_range(r, 1, 3);
    for (int f = 0; f < *nflips; f++) {
        uint64_t off = rng_below(r, b->n);
        first = off < first ? off : first;
        b->p[off] ^= (unsigned char)(1u << rng_below(r, 8));
    }
    return first;
}

/* Bits flipped in the log: exactly the state before the record holding
 * the first flipped bit (in the header: the snapshot's state), and a
 * commit after it survives; or LDB_CORRUPT. */
static void log_bitflip(void)
{
    struct built *b = build();
    rng r;
    rng_seed(&r, b->seed + 2);
    struct dur_bytes *wal = &b->full.f[1];
    unsigned char *orig = malloc(wal->n);
    memcpy(orig, wal->p, wal->n);
    int opened = 0, corrupt = 0;
    for (int t = 0; t < 200 * test_scale(); t++) {
        int nflips;
        uint64_t first = flip_bits(&r, wal, &nflips);
        dur_files_write(b->path, &b->full);
        memcpy(wal->p, orig, wal->n);
        char what[96];
        snprintf(what, sizeof what, "%d bits flipped in the log, the first at byte %llu", nflips,
                 (unsigned long long)first);
        ldb *db = NULL;
        int rc = open_try(b->path, &db, what);
        if (rc == LDB_OK) {
            int i = last_whole(b, first);
            check_state(b, db, i, what);
            check_log_cut_back(b, i, what);
            commit_after_recovery(b, db, i, what);
            opened++;
        } else {
            CHECKF(rc == LDB_CORRUPT, "%s: open: rc %d (%s), wanted a prefix or LDB_CORRUPT", what,
                   rc, ldb_errmsg(NULL));
            corrupt++;
        }
    }
    printf("#    log bit flips: %d opened with the prefix before the flip, %d LDB_CORRUPT\n",
           opened, corrupt);
    free(orig);
    built_free(b);
}

/* The snapshot damaged (bits flipped or cut short), the log intact:
 * LDB_CORRUPT with a message, or the exact state. */
static void snapshot_damaged(void)
{
    struct built *b = build();
    rng r;
    rng_seed(&r, b->seed + 3);
    struct dur_bytes *snap = &b->full.f[0];
    CHECK(snap->exists && snap->n > 0);
    unsigned char *orig = malloc(snap->n);
    memcpy(orig, snap->p, snap->n);
    size_t size = snap->n;
    int harmless = 0, corrupt = 0;
    const char *sample = NULL;
    for (int t = 0; t < 200 * test_scale(); t++) {
        char what[96];
        if (t % 2) {
            int nflips;
            uint64_t first = flip_bits(&r, snap, &nflips);
            snprintf(what, sizeof what, "%d bits flipped in the snapshot, the first at byte %llu",
                     nflips, (unsigned long long)first);
        } else {
            snap->n = (size_t)rng_below(&r, size);
            snprintf(what, sizeof what, "the snapshot cut at byte %zu of %zu", snap->n, size);
        }
        dur_files_write(b->path, &b->full);
        memcpy(snap->p, orig, size);
        snap->n = size;
        ldb *db = NULL;
        int rc = open_try(b->path, &db, what);
        if (rc == LDB_OK) {
            check_state(b, db, NCOMMITS, what);
            ldb_close(db);
            harmless++;
        } else {
            CHECKF(rc == LDB_CORRUPT, "%s: open: rc %d (%s), wanted LDB_CORRUPT", what, rc,
                   ldb_errmsg(NULL));
            CHECKF(strstr(ldb_errmsg(NULL), b->path) != NULL, "%s: the message \"%s\" does not "
                   "name the file", what, ldb_errmsg(NULL));
            if (!sample)
                sample = strdup(ldb_errmsg(NULL));
            corrupt++;
        }
    }
    printf("#    snapshot damage: %d LDB_CORRUPT (e.g. \"%s\"), %d harmless\n", corrupt,
           sample ? sample : "", harmless);
    free((void *)sample);
    free(orig);
    built_free(b);
}

/* The format version, bumped. The header layout is the one
 * src/storage/journal.c writes (an assumption of this test, checked
 * below as far as it can be): both files start with 32 bytes, "LIVEDB",
 * a zero byte, the kind ('S' snapshot, 'W' log), the version as a
 * little-endian u32 at byte 8, the generation at 16, and the CRC-32C
 * (Castagnoli, reflected, initial and final xor ~0) of bytes 0..27 at
 * 28, which the test recomputes so that only the version is wrong. */
#define HDR_SIZE 32
#define HDR_VERSION 8
#define HDR_CRC 28

static uint32_t test_crc32c(const unsigned char *p, size_t n)
{
    uint32_t crc = ~0u;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The version in the header of b (a file of that kind), checked against
 * the assumed layout. */
static uint32_t hdr_version(const struct dur_bytes *b, char kind)
{
    CHECKF(b->exists && b->n >= HDR_SIZE && memcmp(b->p, "LIVEDB\0", 7) == 0 &&
               b->p[7] == (unsigned char)kind,
           "the %c file does not start with the assumed header", kind);
    CHECKF(get_le32(b->p + HDR_CRC) == test_crc32c(b->p, HDR_CRC),
           "the %c file's header checksum is not the assumed CRC-32C of bytes 0..27", kind);
    return get_le32(b->p + HDR_VERSION);
}

static void set_version(struct dur_bytes *b, uint32_t version)
{
    put_le32(b->p + HDR_VERSION, version);
    put_le32(b->p + HDR_CRC, test_crc32c(b->p, HDR_CRC));
}

/* Either file with the next format version: LDB_UNSUPPORTED naming it. */
static void newer_version(void)
{
    struct built *b = build();
    for (int file = 0; file < 2; file++) {
        struct dur_bytes *f = &b->full.f[file];
        uint32_t v = hdr_version(f, file ? 'W' : 'S');
        CHECKF(v >= 1 && v < 1000, "an unlikely format version %u", v);
        set_version(f, v + 1);
        dur_files_write(b->path, &b->full);
        set_version(f, v);
        char want[32], what[64];
        snprintf(want, sizeof want, "version %u", v + 1);
        snprintf(what, sizeof what, "the %s of format version %u", file ? "log" : "snapshot",
                 v + 1);
        const char *msg = open_fails(b->path, LDB_UNSUPPORTED, what);
        CHECKF(strstr(msg, want) != NULL, "%s: the message \"%s\" does not name %s", what, msg,
               want);
        dur_files_write(b->path, &b->full); /* the header rewritten as it was opens */
        ldb_close(open_expect(b, NCOMMITS, "the version set back"));
    }
    built_free(b);
}

/* The log's header damaged while records follow it: LDB_CORRUPT, and the
 * message names the log. */
static void log_header_damaged(void)
{
    struct built *b = build();
    struct dur_bytes *wal = &b->full.f[1];
    CHECK(wal->n > HDR_SIZE);
    wal->p[HDR_SIZE / 2] ^= 0x10;
    dur_files_write(b->path, &b->full);
    wal->p[HDR_SIZE / 2] ^= 0x10;
    const char *msg = open_fails(b->path, LDB_CORRUPT, "the log's header damaged");
    CHECKF(strstr(msg, b->wal) != NULL, "the log's header damaged: the message \"%s\" does not "
           "name %s", msg, b->wal);
    built_free(b);
}

/* The files a checkpoint leaves when a crash interrupts it (the full
 * files: commits 1..CKPT in the snapshot, the rest in the log): the new
 * snapshot, or garbage, still in path.tmp; the new snapshot renamed over
 * path with the log not yet started over (its records are in the
 * snapshot: replaying them again would be wrong). Each opens with the
 * last commit's state. */
static void checkpoint_interrupted(void)
{
    struct built *b = build();
    dur_files_write(b->path, &b->full);
    ldb *db = open_expect(b, NCOMMITS, "the full files");
    CHECKF(ldb_checkpoint(db) == LDB_OK, "checkpoint: %s", ldb_errmsg(db));
    struct dur_bytes next = dur_read(b->path);
    ldb_close(db);

    struct dur_files fs = b->full;
    fs.f[2] = next;
    dur_files_write(b->path, &fs);
    ldb_close(open_expect(b, NCOMMITS, "the new snapshot left in path.tmp"));

    unsigned char junk[1000];
    memset(junk, 'x', sizeof junk);
    fs.f[2] = (struct dur_bytes){ true, sizeof junk, junk };
    dur_files_write(b->path, &fs);
    ldb_close(open_expect(b, NCOMMITS, "garbage left in path.tmp"));

    fs = b->full;
    fs.f[0] = next;
    dur_files_write(b->path, &fs);
    db = open_expect(b, NCOMMITS, "the new snapshot in place, the old log not started over");
    commit_after_recovery(b, db, NCOMMITS, "the new snapshot and the old log");
    dur_bytes_free(&next);
    built_free(b);
}

/* A log that follows a checkpoint, whose snapshot is missing:
 * LDB_CORRUPT, naming the snapshot. */
static void snapshot_missing(void)
{
    struct built *b = build();
    struct dur_files fs = b->full;
    fs.f[0].exists = false;
    dur_files_write(b->path, &fs);
    const char *msg = open_fails(b->path, LDB_CORRUPT, "the snapshot missing, the log there");
    CHECKF(strstr(msg, b->path) != NULL, "the snapshot missing: the message \"%s\" does not "
           "name %s", msg, b->path);
    built_free(b);
}

/* A file that is not a database at path, with no log: LDB_CORRUPT. */
static void foreign_file(void)
{
    char *dir = durable_tmpdir(), path[DUR_PATH];
    durable_path(path, DUR_PATH, dir, "db");
    static char text[8192];
    for (size_t n = 0; n + 48 < sizeof text; n += 47)
        memcpy(text + n, "This is not a livedb database, only some text.\n", 47);
    struct dur_bytes b = { true, strlen(text), (unsigned char *)text };
    dur_write(path, &b);
    const char *msg = open_fails(path, LDB_CORRUPT, "a text file");
    CHECKF(strstr(msg, path) != NULL, "a text file: the message \"%s\" does not name it", msg);
    static unsigned char zeros[4096];
    b = (struct dur_bytes){ true, sizeof zeros, zeros };
    dur_write(path, &b);
    open_fails(path, LDB_CORRUPT, "a file of zeros");
    CHECK(remove(path) == 0 && mkdir(path, 0755) == 0);
    CHECKF(ldb_open(path, &(ldb *){ NULL }) == LDB_CANTOPEN, "a directory at path: %s",
           ldb_errmsg(NULL));
    durable_rmdir(dir);
}

static void missing_dir(void)
{
    char *dir = durable_tmpdir(), path[DUR_PATH];
    durable_path(path, DUR_PATH, dir, "no/such/dir/db");
    open_fails(path, LDB_CANTOPEN, "a directory that does not exist");
    durable_rmdir(dir);
}

/* A directory the process may not write: LDB_CANTOPEN. Root writes into
 * a mode 0555 directory anyway, so there that case is skipped (and said
 * so); /sys, where creating a file fails for root too (EACCES, or EROFS
 * where it is mounted read-only), is tried either way. */
static void readonly_dir(void)
{
    char *dir = durable_tmpdir(), path[DUR_PATH];
    durable_path(path, DUR_PATH, dir, "db");
    CHECK(chmod(dir, 0555) == 0);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) {
        open_fails(path, LDB_CANTOPEN, "a read-only directory");
    } else {
        close(fd);
        CHECK(remove(path) == 0);
        printf("#    skipped: a mode 0555 directory (uid %d writes into it anyway)\n",
               (int)geteuid());
    }
    CHECK(chmod(dir, 0755) == 0);
    durable_rmdir(dir);
    snprintf(path, sizeof path, "/sys/livedb-test-%d.db", (int)getpid());
    fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    CHECKF(fd < 0, "created %s", path);
    if (errno != EACCES && errno != EROFS) {
        printf("#    skipped: /sys (creating a file there fails with %s)\n", strerror(errno));
        return;
    }
    open_fails(path, LDB_CANTOPEN, "a directory where no file can be made (/sys)");
}

/* A second open of an open database: LDB_BUSY, from this process (also
 * by another spelling of the path) and from a forked one; the first
 * handle keeps working, and once it is closed the path opens again. */
static void busy(void)
{
    char *dir = durable_tmpdir(), path[DUR_PATH], alias[DUR_PATH];
    durable_path(path, DUR_PATH, dir, "db");
    durable_path(alias, DUR_PATH, dir, "./db");
    ldb *db = dur_open(path, "FULL", 0);
    EXEC(db, "CREATE TABLE t(a INTEGER PRIMARY KEY)");
    open_fails(path, LDB_BUSY, "a second open in the same process");
    open_fails(alias, LDB_BUSY, "a second open by another spelling of the path");
    struct dur_files before = dur_files_read(path);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        ldb *other = NULL;
        int rc = ldb_open(path, &other);
        _exit(rc == LDB_OK ? 100 : other != NULL ? 101 : rc);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    CHECKF(WEXITSTATUS(status) == LDB_BUSY, "an open from another process: exit %d, wanted "
           "LDB_BUSY (%d; 100: it opened, 101: failed with *out set)", WEXITSTATUS(status),
           LDB_BUSY);
    dur_files_check_same(path, &before, "an open from another process");
    dur_files_free(&before);
    EXEC(db, "INSERT INTO t VALUES (1)");
    ldb_close(db);
    db = dur_open(path, "FULL", 0);
    char *rows = durable_query(db, "SELECT * FROM t");
    CHECK_STR(rows, "2:1|\n");
    free(rows);
    ldb_close(db);
    durable_rmdir(dir);
}

TEST_MAIN(T(log_cut), T(log_bitflip), T(snapshot_damaged), T(newer_version),
          T(log_header_damaged), T(checkpoint_interrupted), T(snapshot_missing),
          T(foreign_file), T(missing_dir), T(readonly_dir), T(busy))
