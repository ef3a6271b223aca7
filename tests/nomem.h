/*
 * nomem.h - allocation-failure sweeps, shared by the storage, SQL and
 * materialized-view tests.
 *
 * nomem_store_dump pictures everything a store holds, as text, without
 * the library's allocator (the text is the test's own malloc), so that it
 * can be taken while every allocation of the library fails: each table in
 * catalog order with its row objects (addresses, sorted) and automatic-key
 * counter, found again by primary key; each ordered index walked forward
 * and backward, entries found again by a seek and a count (descents
 * through the shapes held deletes leave until the transaction ends); each
 * hash index's entries found by lookup; then store_check. Undo restores
 * the very row objects, so equal dumps mean equal state.
 *
 * nomem_sweep runs one SQL statement, after a prelude, with the 1st, 2nd,
 * ... allocation failing, once or from there on, until it runs without a
 * failure, when it must return want (LDB_OK, or its own error such as a
 * UNIQUE conflict). A run that fails must return LDB_NOMEM (or want) and,
 * while allocations still fail, leave the store as the dump before the
 * statement showed; then, failures off, the test's SQL snapshot must be
 * unchanged too. Every run then passes the test's after hook and leaks
 * nothing once the database is closed.
 */
#ifndef LDB_TEST_NOMEM_H
#define LDB_TEST_NOMEM_H

#include "api/db_internal.h"
#include "base/mem.h"
#include "storage/store.h"
#include "test.h"
#include "test_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int nomem_addr_cmp(const void *x, const void *y)
{
    uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
    return a < b ? -1 : a > b;
}

/* Every row of the table is in the hash index under its key. */
static inline void nomem_check_hash_index(const struct table_index *ix)
{
    struct table_scan sc = table_scan_begin(ix->table);
    for (row *r; (r = table_scan_next(&sc));) {
        value key[INDEX_MAX_PARTS];
        for (uint32_t i = 0; i < ix->nparts; i++)
            key[i] = r->cols[ix->parts[i].col];
        struct index_lookup it;
        bool found = false;
        for (row *e = index_lookup_first(ix, key, ix->nparts, &it); e; e = index_lookup_next(&it))
            found |= e == r;
        CHECKF(found, "hash index %s misses a row", ix->name);
    }
}

/* The entries in index order; some 64 of them, spread evenly, found
 * again by a seek to their row and counted at their rank; the backward
 * walk meets them all in reverse. */
static inline void nomem_dump_ordered(FILE *f, const struct table_index *ix)
{
    size_t n = index_count(ix), rank = 0, stride = n / 64 + 1;
    row **seen = malloc((n + 1) * sizeof *seen);
    struct index_cursor c, s;
    for (bool on = index_first(ix, &c); on; on = index_next(&c), rank++) {
        row *r = index_cursor_row(&c);
        CHECKF(rank < n && index_cursor_rank(&c) == rank, "index %s: rank %zu", ix->name, rank);
        seen[rank] = r;
        fprintf(f, " %lx", (unsigned long)(uintptr_t)r);
        if (rank % stride != 0)
            continue;
        CHECKF(index_seek_row(ix, r, IX_GE, &s) && index_cursor_row(&s) == r &&
                   index_cursor_rank(&s) == rank,
               "index %s: seek to entry %zu", ix->name, rank);
        CHECKF(index_count_below_row(ix, r, false) == rank, "index %s: count below entry %zu",
               ix->name, rank);
    }
    CHECKF(rank == n, "index %s: %zu entries walked of %zu", ix->name, rank, n);
    for (bool on = index_last(ix, &c); on; on = index_prev(&c))
        CHECKF(rank > 0 && index_cursor_row(&c) == seen[--rank], "index %s: backward walk",
               ix->name);
    CHECKF(rank == 0, "index %s: backward walk ended early", ix->name);
    free(seen);
}

static inline void nomem_dump_table(FILE *f, struct table *t)
{
    size_t n = table_count(t), i = 0;
    uintptr_t *rows = malloc((n + 1) * sizeof *rows);
    struct table_scan sc = table_scan_begin(t);
    for (row *r; (r = table_scan_next(&sc));) {
        CHECKF(i < n && table_lookup_row(t, r) == r, "table %s: row not found by its key",
               t->name);
        rows[i++] = (uintptr_t)r;
    }
    CHECKF(i == n, "table %s: %zu rows scanned of %zu", t->name, i, n);
    qsort(rows, n, sizeof *rows, nomem_addr_cmp);
    fprintf(f, "table %s rows %zu rowid %lld:", t->name, n, (long long)t->rowid_max);
    for (i = 0; i < n; i++)
        fprintf(f, " %lx", (unsigned long)rows[i]);
    free(rows);
    for (size_t k = 0; k < table_index_count(t); k++) {
        const struct table_index *ix = table_index_at(t, k);
        fprintf(f, "\n  index %s (%zu):", ix->name, index_count(ix));
        if (ix->kind == INDEX_ORDERED)
            nomem_dump_ordered(f, ix);
        else
            nomem_check_hash_index(ix);
    }
    fputc('\n', f);
}

/* The picture described above; the caller frees it (free). */
static inline char *nomem_store_dump(struct store *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    fprintf(f, "transaction %d\n", store_in_transaction(s));
    for (size_t i = 0; i < store_table_count(s); i++)
        nomem_dump_table(f, store_table_at(s, i));
    fclose(f);
    const char *err = store_check(s);
    CHECKF(err == NULL, "store_check: %s", err);
    return text;
}

/* ---- the SQL sweep ------------------------------------------------------------ */

struct nomem_sql {
    ldb *(*open)(void);         /* a new database with the test's tables */
    char *(*snapshot)(ldb *db); /* what the statement may change, read by SQL
                                   (malloc'd) */
    void (*after)(ldb *db);     /* more checks, failures off; NULL: none */
};

static inline void nomem_sweep(const struct nomem_sql *t, const char *prelude, const char *sql,
                               int want, int persistent)
{
    for (uint64_t n = 1;; n++) {
        int64_t live0 = mem_live();
        ldb *db = t->open();
        if (prelude)
            EXEC(db, prelude);
        char *before = t->snapshot(db);
        char *store_before = nomem_store_dump(db->store);
        mem_fail_at(n, persistent);
        int rc = ldb_exec(db, sql, NULL, NULL);
        bool failed = mem_failed_count() > 0;
        char *store_after = rc != LDB_OK ? nomem_store_dump(db->store) : NULL;
        mem_fail_at(0, 0);
        CHECKF(failed ? rc == LDB_OK || rc == LDB_NOMEM || rc == want : rc == want,
               "%s: allocation %llu: rc %d (%s)", sql, (unsigned long long)n, rc, ldb_errmsg(db));
        if (rc != LDB_OK) {
            CHECKF(strcmp(store_before, store_after) == 0,
                   "%s: allocation %llu%s: the store changed:\n%s\n%s", sql,
                   (unsigned long long)n, persistent ? " on" : "", store_before, store_after);
            char *after = t->snapshot(db);
            CHECKF(strcmp(before, after) == 0, "%s: allocation %llu changed the database:\n%s\n%s",
                   sql, (unsigned long long)n, before, after);
            free(after);
        }
        free(before);
        free(store_before);
        free(store_after);
        if (t->after)
            t->after(db);
        ldb_close(db);
        CHECKF(mem_live() == live0, "%s: allocation %llu: %lld blocks leaked", sql,
               (unsigned long long)n, (long long)(mem_live() - live0));
        if (!failed)
            return;
    }
}

/* The sweep with single failures, then with persistent ones. */
static inline void nomem_sweep_both(const struct nomem_sql *t, const char *prelude,
                                    const char *sql, int want)
{
    nomem_sweep(t, prelude, sql, want, 0);
    nomem_sweep(t, prelude, sql, want, 1);
}

#endif
