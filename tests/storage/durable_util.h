/*
 * durable_util.h - helpers shared by the durable-storage tests
 * (test_durable_*.c): scratch directories under /tmp, whole files read,
 * written and compared, a database's state as text, and how long to run.
 *
 * A database's state is the text of a list of queries (each query's rows
 * sorted, every value with its type letter, mv_util.h's form), so a
 * durable database compares with an in-memory model by strcmp, and a
 * missing table shows as its error text (a prefix before the schema).
 * Header-only (static inline): each test file is its own binary.
 */
#ifndef LDB_TESTS_DURABLE_UTIL_H
#define LDB_TESTS_DURABLE_UTIL_H

#include "livedb.h"
#include "mv/mv_util.h"
#include "oracle_known.h"
#include "test.h"
#include "test_db.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DUR_PATH 512

/* LDB_LONG=1 runs 10 times longer; the sanitizers' builds run a third of
 * the default (they are some 3-10x slower and `make test-sanitize` runs
 * every test). */
static inline double dur_budget(double seconds)
{
    const char *env = getenv("LDB_LONG");
    if (env && *env && strcmp(env, "0") != 0)
        return seconds * 10;
    return ORACLE_SANITIZED ? seconds / 3 : seconds;
}

static inline double dur_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int dur_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p) == 0 || errno == ENOENT ? 0 : -1;
}

/* Removes dir and everything under it (a test's scratch directory). */
static inline void dur_rmtree(const char *dir)
{
    nftw(dir, dur_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Every scratch directory made, removed at exit too: a failed CHECK
 * leaves its case without cleaning up (the seed replays it). Forked
 * children leave with _exit, which skips this. */
#define DUR_MAX_DIRS 64
static char dur_dirs[DUR_MAX_DIRS][DUR_PATH];
static int dur_ndirs;

static inline void dur_rm_all(void)
{
    for (int i = 0; i < dur_ndirs; i++)
        dur_rmtree(dur_dirs[i]);
}

/* A new empty directory /tmp/livedb-<tag>-XXXXXX, named into dir. */
static inline void dur_mkdtemp(char dir[DUR_PATH], const char *tag)
{
    snprintf(dir, DUR_PATH, "/tmp/livedb-%s-XXXXXX", tag);
    CHECKF(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
    CHECK(dur_ndirs < DUR_MAX_DIRS);
    if (dur_ndirs == 0)
        atexit(dur_rm_all);
    memcpy(dur_dirs[dur_ndirs++], dir, DUR_PATH);
}

/* dir/name into out. */
static inline void dur_join(char out[DUR_PATH], const char *dir, const char *name)
{
    int n = snprintf(out, DUR_PATH, "%s/%s", dir, name);
    CHECKF(n > 0 && n < DUR_PATH, "path too long: %s/%s", dir, name);
}

/* path with suffix appended ("-wal", ".tmp"). */
static inline void dur_suffix(char out[DUR_PATH], const char *path, const char *suffix)
{
    int n = snprintf(out, DUR_PATH, "%s%s", path, suffix);
    CHECKF(n > 0 && n < DUR_PATH, "path too long: %s%s", path, suffix);
}

/* A whole file's bytes (malloc'd), or exists false. */
struct dur_bytes {
    bool exists;
    size_t n;
    unsigned char *p;
};

static inline struct dur_bytes dur_read(const char *path)
{
    struct dur_bytes b = { false, 0, NULL };
    FILE *f = fopen(path, "rb");
    if (!f) {
        CHECKF(errno == ENOENT, "fopen %s: %s", path, strerror(errno));
        return b;
    }
    b.exists = true;
    size_t cap = 4096;
    b.p = malloc(cap);
    for (size_t got; (got = fread(b.p + b.n, 1, cap - b.n, f)) > 0;) {
        b.n += got;
        if (b.n == cap)
            b.p = realloc(b.p, cap *= 2);
    }
    CHECKF(!ferror(f), "read %s", path);
    fclose(f);
    return b;
}

static inline void dur_bytes_free(struct dur_bytes *b)
{
    free(b->p);
    b->p = NULL;
}

/* Writes exactly b to path (absent b: path removed). */
static inline void dur_write(const char *path, const struct dur_bytes *b)
{
    if (!b->exists) {
        CHECKF(remove(path) == 0 || errno == ENOENT, "remove %s: %s", path, strerror(errno));
        return;
    }
    FILE *f = fopen(path, "wb");
    CHECKF(f != NULL, "fopen %s: %s", path, strerror(errno));
    CHECKF(fwrite(b->p, 1, b->n, f) == b->n && fclose(f) == 0, "write %s", path);
}

static inline bool dur_bytes_eq(const struct dur_bytes *a, const struct dur_bytes *b)
{
    return a->exists == b->exists && a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

static inline uint64_t dur_size(const char *path)
{
    struct stat st;
    CHECKF(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
    return (uint64_t)st.st_size;
}

/* The files of the database at path: the snapshot, the log, and the
 * checkpoint's temporary file. */
#define DUR_NFILES 3
static const char *const dur_file_suffix[DUR_NFILES] = { "", "-wal", ".tmp" };

struct dur_files {
    struct dur_bytes f[DUR_NFILES];
};

static inline struct dur_files dur_files_read(const char *path)
{
    struct dur_files fs;
    char p[DUR_PATH];
    for (int i = 0; i < DUR_NFILES; i++) {
        dur_suffix(p, path, dur_file_suffix[i]);
        fs.f[i] = dur_read(p);
    }
    return fs;
}

static inline void dur_files_write(const char *path, const struct dur_files *fs)
{
    char p[DUR_PATH];
    for (int i = 0; i < DUR_NFILES; i++) {
        dur_suffix(p, path, dur_file_suffix[i]);
        dur_write(p, &fs->f[i]);
    }
}

static inline void dur_files_free(struct dur_files *fs)
{
    for (int i = 0; i < DUR_NFILES; i++)
        dur_bytes_free(&fs->f[i]);
}

/* Fails the test unless the files at path are byte for byte fs. */
static inline void dur_files_check_same(const char *path, const struct dur_files *fs,
                                        const char *what)
{
    struct dur_files now = dur_files_read(path);
    for (int i = 0; i < DUR_NFILES; i++) {
        bool same = dur_bytes_eq(&fs->f[i], &now.f[i]);
        CHECKF(same, "%s: %s%s changed (%s, %zu bytes -> %s, %zu bytes)", what, path,
               dur_file_suffix[i], fs->f[i].exists ? "present" : "absent", fs->f[i].n,
               now.f[i].exists ? "present" : "absent", now.f[i].n);
    }
    dur_files_free(&now);
}

/* The state of db as text: for each query, its line and its rows (sorted,
 * typed; an error's text when it fails). The caller frees it. */
static inline char *dur_state(ldb *db, const char *const *queries)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    for (const char *const *q = queries; *q; q++)
        fprintf(f, "-- %s\n%s", *q, Q(db, *q));
    fclose(f);
    return text;
}

/* The value of a one-row, one-column query; -1 when it fails, gives no
 * row or gives NULL (no test CHECK: forked children call it too). */
static inline int64_t dur_query_int(ldb *db, const char *sql)
{
    ldb_stmt *s = NULL;
    int64_t v = -1;
    if (ldb_prepare(db, sql, -1, &s, NULL) != LDB_OK)
        return -1;
    if (ldb_step(s) == LDB_ROW && ldb_row_type(ldb_stmt_row(s), 0) != LDB_NULL)
        v = ldb_row_int64(ldb_stmt_row(s), 0);
    ldb_finalize(s);
    return v;
}

/* Opens the durable database at path, which must work, with PRAGMA
 * synchronous = sync and checkpoint_threshold = threshold. */
static inline ldb *dur_open(const char *path, const char *sync, long threshold)
{
    ldb *db = NULL;
    int rc = ldb_open(path, &db);
    CHECKF(rc == LDB_OK, "open %s: rc %d: %s", path, rc, ldb_errmsg(NULL));
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", sync);
    EXEC(db, sql);
    snprintf(sql, sizeof sql, "PRAGMA checkpoint_threshold = %ld", threshold);
    EXEC(db, sql);
    return db;
}

#endif
