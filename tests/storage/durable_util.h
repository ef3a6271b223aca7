/*
 * durable_util.h - shared by the durable-database tests: scratch
 * directories, and a picture of everything a database's storage holds
 * that must survive a reopen.
 *
 * durable_dump writes, per table in catalog order: its name, DDL text,
 * columns (name, type, collation, flags, default), read-only flag and
 * rowid counter; its indexes (name, DDL, kind, parts); then its rows,
 * every column including hidden ones, each value with its type, sorted.
 * Row addresses and hash order do not appear, so a database and its
 * reopened self must give the very same text.
 *
 * For the crash, corruption and fault tests (test_durable_crash.c,
 * _corrupt.c, _faults.c): whole files read, written and compared (a
 * database's files as a crash leaves them), a state as the text of a
 * list of queries (a missing table shows as its error, so states before
 * and after a schema change compare too), and how long to run.
 */
#ifndef LDB_TEST_DURABLE_UTIL_H
#define LDB_TEST_DURABLE_UTIL_H

#include "api/db_internal.h"
#include "base/strbuf.h"
#include "storage/store.h"
#include "test.h"

#include "oracle_known.h"
#include "test_db.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A new empty directory under /tmp (caller frees and removes it). */
static inline char *durable_tmpdir(void)
{
    char *d = strdup("/tmp/ldb_durable_XXXXXX");
    CHECK(d && mkdtemp(d));
    return d;
}

/* Removes dir and the files in it. */
static inline void durable_rmdir(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    free(dir);
}

/* dir/name into buf. */
static inline const char *durable_path(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

static inline int durable_line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void durable_value(strbuf *sb, const value *v)
{
    sb_printf(sb, "%d:", (int)value_type(v));
    value_format(sb, v);
    sb_putc(sb, '|');
}

static inline void durable_rows(strbuf *out, struct table *t)
{
    size_t n = table_count(t), k = 0;
    char **lines = calloc(n + 1, sizeof *lines);
    CHECK(lines);
    struct table_scan sc = table_scan_begin(t);
    for (row *r; (r = table_scan_next(&sc));) {
        strbuf sb;
        sb_init(&sb);
        for (uint32_t i = 0; i < r->ncols; i++)
            durable_value(&sb, &r->cols[i]);
        CHECK(!sb_error(&sb));
        lines[k] = strdup(sb_str(&sb));
        sb_free(&sb);
        k++;
    }
    qsort(lines, k, sizeof *lines, durable_line_cmp);
    for (size_t i = 0; i < k; i++) {
        sb_printf(out, "  %s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
}

static inline void durable_indexes(strbuf *out, const struct table *t)
{
    for (size_t i = 0; i < table_index_count(t); i++) {
        const struct table_index *ix = table_index_at(t, i);
        sb_printf(out, " index %s [%s] kind %d unique %d auto %d:", ix->name,
                  ix->sql ? ix->sql : "-", (int)ix->kind, ix->unique, ix->automatic);
        for (uint32_t k = 0; k < ix->nparts; k++)
            sb_printf(out, " %u/%d/%d/%d", ix->parts[k].col, ix->parts[k].desc,
                      ix->parts[k].nulls_first, (int)ix->parts[k].coll);
        sb_putc(out, '\n');
    }
}

/* Everything the store of db holds (caller frees). */
static inline char *durable_dump(ldb *db)
{
    strbuf out;
    sb_init(&out);
    struct store *s = db->store;
    for (size_t i = 0; i < store_table_count(s); i++) {
        struct table *t = store_table_at(s, i);
        const struct schema *sc = table_schema(t);
        sb_printf(&out, "table %s [%s] readonly %d rowid_max %lld key_nulls %d npk %u:",
                  table_name(t), table_sql(t) ? table_sql(t) : "-", t->readonly,
                  (long long)t->rowid_max, t->key_nulls, sc->npk);
        for (uint32_t k = 0; k < sc->npk; k++)
            sb_printf(&out, " %u", sc->pk[k]);
        sb_putc(&out, '\n');
        for (uint32_t c = 0; c < sc->ncols; c++) {
            const struct column *col = &sc->cols[c];
            sb_printf(&out, " col %s %d %d nn%d h%d d%d ", col->name, (int)col->type,
                      (int)col->coll, col->not_null, col->hidden, col->has_default);
            durable_value(&out, &col->dflt);
            sb_putc(&out, '\n');
        }
        durable_indexes(&out, t);
        durable_rows(&out, t);
    }
    CHECK(!sb_error(&out));
    const char *msg = store_check(s);
    CHECKF(!msg, "store_check: %s", msg);
    size_t len;
    return sb_take(&out, &len);
}

/* Rows of a query as sorted text lines (caller frees). */
static inline char *durable_query(ldb *db, const char *sql)
{
    ldb_stmt *st;
    CHECKF(ldb_prepare(db, sql, -1, &st, NULL) == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    char **lines = NULL;
    size_t n = 0;
    int rc;
    while ((rc = ldb_step(st)) == LDB_ROW) {
        const ldb_row *r = ldb_stmt_row(st);
        strbuf sb;
        sb_init(&sb);
        for (int i = 0; i < ldb_row_columns(r); i++) {
            char buf[4096];
            ldb_row_format(r, i, buf, sizeof buf);
            sb_printf(&sb, "%d:%s|", ldb_row_type(r, i), buf);
        }
        lines = realloc(lines, (n + 1) * sizeof *lines);
        CHECK(lines && !sb_error(&sb));
        lines[n++] = strdup(sb_str(&sb));
        sb_free(&sb);
    }
    CHECKF(rc == LDB_DONE, "%s: %s", sql, ldb_errmsg(db));
    ldb_finalize(st);
    if (n) /* lines is NULL for no rows, and qsort's array must not be */
        qsort(lines, n, sizeof *lines, durable_line_cmp);
    strbuf out;
    sb_init(&out);
    for (size_t i = 0; i < n; i++) {
        sb_printf(&out, "%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    sb_putc(&out, '\0');
    size_t len;
    return sb_take(&out, &len);
}

/* ---- the crash, corruption and fault tests ---------------------------------------------- */

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

/* The state of db as text: for each query, its line and its rows
 * (durable_query), or its error when it does not compile (a table not
 * there). The caller frees it. */
static inline char *dur_state(ldb *db, const char *const *queries)
{
    strbuf out;
    sb_init(&out);
    for (const char *const *q = queries; *q; q++) {
        ldb_stmt *st = NULL;
        sb_printf(&out, "-- %s\n", *q);
        if (ldb_prepare(db, *q, -1, &st, NULL) != LDB_OK) {
            sb_printf(&out, "error: %s\n", ldb_errmsg(db));
            continue;
        }
        ldb_finalize(st);
        char *rows = durable_query(db, *q);
        sb_puts(&out, rows);
        free(rows);
    }
    CHECK(!sb_error(&out));
    size_t len;
    return sb_take(&out, &len);
}

/* Materialized view name holds exactly what its body gives. */
static inline void dur_check_view(ldb *db, const char *name, const char *body)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", name);
    char *want = durable_query(db, body), *got = durable_query(db, sql);
    CHECKF(strcmp(want, got) == 0, "view %s\n  body: %s\n  view: %s", name, want, got);
    free(want);
    free(got);
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
