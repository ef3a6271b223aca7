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
 */
#ifndef LDB_TEST_DURABLE_UTIL_H
#define LDB_TEST_DURABLE_UTIL_H

#include "api/db_internal.h"
#include "base/strbuf.h"
#include "storage/store.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#endif
