/*
 * bench_storage.c - the storage layer against SQLite, same operations in
 * the same run:
 *   - single-row insert, update of an indexed column (a), update of a
 *     column no index reads (d), delete, each its own autocommit
 *     statement, on a 1M-row table of 6 columns with 0, 1 and 3 secondary
 *     indexes (ns/op median and p95);
 *   - index seek + read 50 rows (all columns) at 10k and 1M rows;
 *   - bytes per row for the 6-column row with 0 and 1 index;
 *   - (livedb only) equality lookup and insert through a hash index
 *     against an ordered index on the same column.
 * SQLite runs in memory with prepared statements (the SQL text is parsed
 * once). Each operation is timed on its own; all of livedb's run, then
 * all of SQLite's (interleaving single operations of two engines makes
 * each start with the other's data in cache, a workload nobody runs); livedb calls the storage API directly (no SQL layer yet), so the
 * comparison is of storage engines plus SQLite's VDBE.
 *
 * Output: "bench storage.<name>", "bench sqlite.<name>", and
 * "bench ratio.<name> <livedb/sqlite> x": below 1 livedb is faster
 * (or smaller, for bytes). --quick uses 100k rows and fewer operations.
 */
#include "bench_util.h"

#include "base/mem.h"
#include "storage/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_SEED 0x2545F4914F6CDD1Du
/* Both engines load the same rows: each load restarts from DATA_SEED. */
static uint64_t rng_state = DATA_SEED;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void must(int rc, const char *what)
{
    if (rc != LDB_OK) {
        fprintf(stderr, "%s: %s\n", what, ldb_errstr(rc));
        exit(1);
    }
}

static void must_sql(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

/* Prints median and p95 of t[0..n) for both engines and their ratios. */
static void report(const char *name, double *ours, double *theirs, size_t n)
{
    char buf[160];
    double om = bench_quantile(ours, n, 0.5), op = bench_quantile(ours, n, 0.95);
    double tm = bench_quantile(theirs, n, 0.5), tp = bench_quantile(theirs, n, 0.95);
    snprintf(buf, sizeof buf, "storage.%s.median", name);
    bench_print(buf, om, "ns");
    snprintf(buf, sizeof buf, "storage.%s.p95", name);
    bench_print(buf, op, "ns");
    snprintf(buf, sizeof buf, "sqlite.%s.median", name);
    bench_print(buf, tm, "ns");
    snprintf(buf, sizeof buf, "sqlite.%s.p95", name);
    bench_print(buf, tp, "ns");
    snprintf(buf, sizeof buf, "ratio.%s.median", name);
    bench_print(buf, om / tm, "x");
    snprintf(buf, sizeof buf, "ratio.%s.p95", name);
    bench_print(buf, op / tp, "x");
}

static void report_one(const char *name, double ours, double theirs, const char *unit)
{
    char buf[160];
    snprintf(buf, sizeof buf, "storage.%s", name);
    bench_print(buf, ours, unit);
    snprintf(buf, sizeof buf, "sqlite.%s", name);
    bench_print(buf, theirs, unit);
    snprintf(buf, sizeof buf, "ratio.%s", name);
    bench_print(buf, ours / theirs, "x");
}

/* ---- the row: (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, c TEXT,
 *               d REAL, e TEXT) ------------------------------------------------- */

struct gen {
    int64_t id, a, b;
    char c[16];
    double d;
};

static void gen_row(struct gen *g, int64_t id)
{
    g->id = id;
    g->a = (int64_t)(rnd() % 1000000000);
    g->b = (int64_t)(rnd() % 1000);
    snprintf(g->c, sizeof g->c, "name%06d", (int)(rnd() % 100000));
    g->d = (double)id * 0.5;
}

/* ---- livedb ------------------------------------------------------------------------ */

struct ours {
    struct store *s;
    struct table *t;
    struct table_index *ia;
};

static void ours_values(const struct gen *g, value *v)
{
    v[0] = value_int(g->id);
    v[1] = value_int(g->a);
    v[2] = value_int(g->b);
    must(value_text(&v[3], g->c, strlen(g->c)), "text");
    v[4] = value_real(g->d);
    must(value_text(&v[5], "open", 4), "text");
}

static struct table_index *ours_index_kind(struct ours *o, const char *name, uint32_t col,
                                           enum index_kind kind)
{
    struct key_part p = { col, false, true, LDB_COLL_BINARY };
    struct index_def d = { name, kind, false, &p, 1, NULL };
    struct table_index *ix;
    must(store_stmt_begin(o->s), "begin");
    must(store_create_index(o->s, o->t, &d, &ix), store_errmsg(o->s));
    must(store_stmt_end(o->s, LDB_OK), "end");
    return ix;
}

static void ours_index(struct ours *o, const char *name, uint32_t col)
{
    struct key_part p = { col, false, true, LDB_COLL_BINARY };
    struct index_def d = { name, INDEX_ORDERED, false, &p, 1, NULL };
    struct table_index *ix;
    must(store_stmt_begin(o->s), "begin");
    must(store_create_index(o->s, o->t, &d, &ix), store_errmsg(o->s));
    must(store_stmt_end(o->s, LDB_OK), "end");
    if (col == 1)
        o->ia = ix;
}

/* Loads n rows in one statement, then creates nidx indexes. */
static void ours_open(struct ours *o, size_t n, int nidx)
{
    must(store_open(&o->s), "open");
    struct column_def cols[6] = {
        { "id", COL_INTEGER, LDB_COLL_BINARY, false, false, { { 0 } } },
        { "a", COL_INTEGER, LDB_COLL_BINARY, false, false, { { 0 } } },
        { "b", COL_INTEGER, LDB_COLL_BINARY, false, false, { { 0 } } },
        { "c", COL_TEXT, LDB_COLL_BINARY, false, false, { { 0 } } },
        { "d", COL_REAL, LDB_COLL_BINARY, false, false, { { 0 } } },
        { "e", COL_TEXT, LDB_COLL_BINARY, false, false, { { 0 } } },
    };
    static const uint32_t pk[1] = { 0 };
    struct table_def def = { "t", cols, 6, pk, 1, NULL, 0, NULL, false, false };
    must(store_stmt_begin(o->s), "begin");
    must(store_create_table(o->s, &def, &o->t), store_errmsg(o->s));
    rng_state = DATA_SEED;
    for (size_t i = 0; i < n; i++) {
        struct gen g;
        value v[6];
        gen_row(&g, (int64_t)i);
        ours_values(&g, v);
        must(table_insert(o->s, o->t, v, NULL), store_errmsg(o->s));
    }
    must(store_stmt_end(o->s, LDB_OK), "end");
    if (nidx >= 1)
        ours_index(o, "ia", 1);
    if (nidx >= 3) {
        ours_index(o, "ib", 2);
        ours_index(o, "ic", 3);
    }
}

static void ours_insert(struct ours *o, int64_t id)
{
    struct gen g;
    value v[6];
    gen_row(&g, id);
    ours_values(&g, v);
    must(store_stmt_begin(o->s), "begin");
    must(store_stmt_end(o->s, table_insert(o->s, o->t, v, NULL)), store_errmsg(o->s));
}

/* Sets column col (1: a, indexed when there are indexes; 4: d, never
 * indexed) of row id to v. */
static void ours_update(struct ours *o, int64_t id, uint32_t col, value v)
{
    value key = value_int(id);
    must(store_stmt_begin(o->s), "begin");
    row *r = table_lookup(o->t, &key);
    int rc = LDB_OK;
    if (r) {
        value vals[6];
        memcpy(vals, r->cols, sizeof vals);
        vals[col] = v;
        rc = table_update(o->s, o->t, r, vals, NULL);
    }
    must(store_stmt_end(o->s, rc), store_errmsg(o->s));
}

static void ours_delete(struct ours *o, int64_t id)
{
    value key = value_int(id);
    must(store_stmt_begin(o->s), "begin");
    row *r = table_lookup(o->t, &key);
    must(store_stmt_end(o->s, r ? table_delete(o->s, o->t, r) : LDB_OK), store_errmsg(o->s));
}

/* Reads 50 rows from the first a >= key, touching every column. */
static int64_t ours_seek50(struct ours *o, int64_t key)
{
    struct order_spec sp;
    struct order_cursor c;
    order_spec_init(o->ia, false, &sp);
    value k = value_int(key);
    int64_t sum = 0;
    int n = 0;
    for (bool on = order_seek_key(o->ia, &sp, &k, 1, false, &c); on && n < 50;
         on = order_next(&c), n++) {
        const row *r = order_row(&c);
        size_t len;
        sum += r->cols[0].h.u.i + r->cols[1].h.u.i + r->cols[2].h.u.i;
        value_bytes(&r->cols[3], &len);
        sum += (int64_t)len + (int64_t)r->cols[4].h.u.r;
        value_bytes(&r->cols[5], &len);
        sum += (int64_t)len;
    }
    return sum;
}

/* ---- SQLite ------------------------------------------------------------------------- */

struct theirs {
    sqlite3 *db;
    sqlite3_stmt *ins, *upd, *upd_d, *del, *seek;
};

static void sql_exec(sqlite3 *db, const char *sql)
{
    must_sql(db, sqlite3_exec(db, sql, NULL, NULL, NULL), sql);
}

static void bind_row(sqlite3_stmt *st, const struct gen *g)
{
    sqlite3_bind_int64(st, 1, g->id);
    sqlite3_bind_int64(st, 2, g->a);
    sqlite3_bind_int64(st, 3, g->b);
    sqlite3_bind_text(st, 4, g->c, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 5, g->d);
    sqlite3_bind_text(st, 6, "open", 4, SQLITE_STATIC);
}

static void run_stmt(sqlite3 *db, sqlite3_stmt *st)
{
    must_sql(db, sqlite3_step(st), "step");
    sqlite3_reset(st);
}

static void theirs_open(struct theirs *x, size_t n, int nidx)
{
    must_sql(NULL, sqlite3_open(":memory:", &x->db), "sqlite open");
    sql_exec(x->db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, c TEXT, "
                    "d REAL, e TEXT)");
    sqlite3_prepare_v2(x->db, "INSERT INTO t VALUES(?,?,?,?,?,?)", -1, &x->ins, NULL);
    sqlite3_prepare_v2(x->db, "UPDATE t SET a = ? WHERE id = ?", -1, &x->upd, NULL);
    sqlite3_prepare_v2(x->db, "UPDATE t SET d = ? WHERE id = ?", -1, &x->upd_d, NULL);
    sqlite3_prepare_v2(x->db, "DELETE FROM t WHERE id = ?", -1, &x->del, NULL);
    sql_exec(x->db, "BEGIN");
    rng_state = DATA_SEED;
    for (size_t i = 0; i < n; i++) {
        struct gen g;
        gen_row(&g, (int64_t)i);
        bind_row(x->ins, &g);
        run_stmt(x->db, x->ins);
    }
    sql_exec(x->db, "COMMIT");
    if (nidx >= 1)
        sql_exec(x->db, "CREATE INDEX ia ON t(a)");
    if (nidx >= 3)
        sql_exec(x->db, "CREATE INDEX ib ON t(b); CREATE INDEX ic ON t(c)");
    x->seek = NULL;
    if (nidx >= 1)
        sqlite3_prepare_v2(x->db, "SELECT id, a, b, c, d, e FROM t WHERE a >= ? ORDER BY a "
                                  "LIMIT 50", -1, &x->seek, NULL);
}

static void theirs_close(struct theirs *x)
{
    sqlite3_finalize(x->ins);
    sqlite3_finalize(x->upd);
    sqlite3_finalize(x->upd_d);
    sqlite3_finalize(x->del);
    sqlite3_finalize(x->seek);
    sqlite3_close(x->db);
}

static void theirs_insert(struct theirs *x, int64_t id)
{
    struct gen g;
    gen_row(&g, id);
    bind_row(x->ins, &g);
    run_stmt(x->db, x->ins);
}

static void theirs_update_a(struct theirs *x, int64_t id, int64_t a)
{
    sqlite3_bind_int64(x->upd, 1, a);
    sqlite3_bind_int64(x->upd, 2, id);
    run_stmt(x->db, x->upd);
}

static void theirs_update_d(struct theirs *x, int64_t id, double d)
{
    sqlite3_bind_double(x->upd_d, 1, d);
    sqlite3_bind_int64(x->upd_d, 2, id);
    run_stmt(x->db, x->upd_d);
}

static void theirs_delete(struct theirs *x, int64_t id)
{
    sqlite3_bind_int64(x->del, 1, id);
    run_stmt(x->db, x->del);
}

static int64_t theirs_seek50(struct theirs *x, int64_t key)
{
    int64_t sum = 0;
    sqlite3_bind_int64(x->seek, 1, key);
    while (sqlite3_step(x->seek) == SQLITE_ROW) {
        sum += sqlite3_column_int64(x->seek, 0) + sqlite3_column_int64(x->seek, 1) +
               sqlite3_column_int64(x->seek, 2);
        sum += sqlite3_column_bytes(x->seek, 3) + (int64_t)sqlite3_column_double(x->seek, 4);
        sum += sqlite3_column_bytes(x->seek, 5);
    }
    sqlite3_reset(x->seek);
    return sum;
}

/* ---- the measurements ------------------------------------------------------------------ */

static size_t nrows(void) { return bench_quick ? 100000 : 1000000; }
static size_t nops(void) { return bench_quick ? 3000 : 30000; }

static const char *size_label(size_t n)
{
    return n >= 1000000 ? "1m" : n >= 100000 ? "100k" : "10k";
}

enum op_kind { OP_INSERT, OP_UPDATE, OP_UPDATE_UNINDEXED, OP_DELETE };

/* One write of one engine; an update draws the new value. */
static void one_write(struct ours *o, struct theirs *x, enum op_kind kind, int64_t id, bool livedb)
{
    int64_t a = kind == OP_UPDATE || kind == OP_UPDATE_UNINDEXED
                    ? (int64_t)(rnd() % 1000000000) : 0;
    switch (kind) {
    case OP_INSERT:
        livedb ? ours_insert(o, id) : theirs_insert(x, id);
        break;
    case OP_UPDATE:
        livedb ? ours_update(o, id, 1, value_int(a)) : theirs_update_a(x, id, a);
        break;
    case OP_UPDATE_UNINDEXED:
        livedb ? ours_update(o, id, 4, value_real((double)a * 0.25))
               : theirs_update_d(x, id, (double)a * 0.25);
        break;
    case OP_DELETE:
        livedb ? ours_delete(o, id) : theirs_delete(x, id);
        break;
    }
}

/* Times k operations of one kind, each on its own: all of livedb's, then
 * all of SQLite's, so that neither engine runs with the other's working
 * set in its caches. */
static void time_writes(struct ours *o, struct theirs *x, enum op_kind kind, int nidx, size_t n)
{
    size_t k = nops();
    double *t[2] = { malloc(k * sizeof(double)), malloc(k * sizeof(double)) };
    int64_t *ids = malloc(k * sizeof *ids);
    for (size_t i = 0; i < k; i++)
        ids[i] = kind == OP_INSERT ? (int64_t)(n + i) : (int64_t)(rnd() % n);
    for (int engine = 0; engine < 2; engine++) {
        for (size_t i = 0; i < k; i++) {
            uint64_t t0 = bench_ns();
            one_write(o, x, kind, ids[i], engine == 0);
            t[engine][i] = (double)(bench_ns() - t0);
        }
    }
    static const char *const names[] = { "insert", "update_indexed", "update_unindexed",
                                         "delete" };
    char name[64];
    snprintf(name, sizeof name, "%s.idx%d.%s", names[kind], nidx, size_label(n));
    report(name, t[0], t[1], k);
    free(t[0]);
    free(t[1]);
    free(ids);
}

static void writes(int nidx)
{
    size_t n = nrows();
    struct ours o = { 0 };
    struct theirs x;
    ours_open(&o, n, nidx);
    theirs_open(&x, n, nidx);
    time_writes(&o, &x, OP_INSERT, nidx, n);
    time_writes(&o, &x, OP_UPDATE, nidx, n);
    time_writes(&o, &x, OP_UPDATE_UNINDEXED, nidx, n);
    time_writes(&o, &x, OP_DELETE, nidx, n);
    store_close(o.s);
    theirs_close(&x);
}

static void seeks(size_t n)
{
    struct ours o = { 0 };
    struct theirs x;
    ours_open(&o, n, 1);
    theirs_open(&x, n, 1);
    size_t k = bench_quick ? 2000 : 20000;
    double *t_ours = malloc(k * sizeof *t_ours), *t_theirs = malloc(k * sizeof *t_theirs);
    int64_t check_ours = 0, check_theirs = 0;
    int64_t *keys = malloc(k * sizeof *keys);
    for (size_t i = 0; i < k; i++)
        keys[i] = (int64_t)(rnd() % 1000000000);
    for (size_t i = 0; i < k; i++) {
        uint64_t t0 = bench_ns();
        check_ours += ours_seek50(&o, keys[i]);
        t_ours[i] = (double)(bench_ns() - t0);
    }
    for (size_t i = 0; i < k; i++) {
        uint64_t t0 = bench_ns();
        check_theirs += theirs_seek50(&x, keys[i]);
        t_theirs[i] = (double)(bench_ns() - t0);
    }
    free(keys);
    if (check_ours != check_theirs) {
        fprintf(stderr, "seek: livedb and SQLite read different rows\n");
        exit(1);
    }
    char name[64];
    snprintf(name, sizeof name, "seek50.%s", size_label(n));
    report(name, t_ours, t_theirs, k);
    free(t_ours);
    free(t_theirs);
    store_close(o.s);
    theirs_close(&x);
}

/* Heap bytes per row after loading n rows (and the index), measured
 * from the allocator for both; the accounted figure is printed too. */
static void bytes_per_row(int nidx)
{
    size_t n = nrows();
    size_t h0 = bench_heap_bytes();
    struct ours o = { 0 };
    ours_open(&o, n, nidx);
    double ours = (double)(bench_heap_bytes() - h0) / (double)n;
    size_t acc = table_bytes(o.t);
    for (size_t i = 0; i < table_index_count(o.t); i++)
        acc += index_bytes(table_index_at(o.t, i));
    store_close(o.s);
    sqlite3_int64 m0 = sqlite3_memory_used();
    struct theirs x;
    theirs_open(&x, n, nidx);
    double theirs = (double)(sqlite3_memory_used() - m0) / (double)n;
    theirs_close(&x);
    char name[64];
    snprintf(name, sizeof name, "bytes_per_row.idx%d", nidx);
    report_one(name, ours, theirs, "B");
    snprintf(name, sizeof name, "storage.bytes_per_row_accounted.idx%d", nidx);
    bench_print(name, (double)acc / (double)n, "B");
}

/* Equality lookups and inserts through a hash index and through an
 * ordered one on the same column (a, nearly unique), livedb only: the
 * figures that decide when USING HASH pays. */
static void hash_vs_ordered(void)
{
    size_t n = nrows(), k = nops();
    double *t = malloc(k * sizeof *t);
    static const enum index_kind kinds[2] = { INDEX_HASH, INDEX_ORDERED };
    static const char *const names[2] = { "hash", "ordered" };
    for (int i = 0; i < 2; i++) {
        struct ours o = { 0 };
        ours_open(&o, n, 0);
        struct table_index *ix = ours_index_kind(&o, "ka", 1, kinds[i]);
        value *keys = malloc(k * sizeof *keys); /* keys that exist, as in joins */
        for (size_t j = 0; j < k; j++) {
            value id = value_int((int64_t)(rnd() % n));
            keys[j] = table_lookup(o.t, &id)->cols[1];
        }
        for (size_t j = 0; j < k; j++) {
            value key = keys[j];
            struct index_lookup it;
            uint64_t t0 = bench_ns();
            for (row *r = index_lookup_first(ix, &key, 1, &it); r; r = index_lookup_next(&it))
                continue;
            t[j] = (double)(bench_ns() - t0);
        }
        char name[64];
        snprintf(name, sizeof name, "storage.eq_lookup.%s.%s.median", names[i], size_label(n));
        bench_print(name, bench_quantile(t, k, 0.5), "ns");
        free(keys);
        for (size_t j = 0; j < k; j++) {
            uint64_t t0 = bench_ns();
            ours_insert(&o, (int64_t)(n + j));
            t[j] = (double)(bench_ns() - t0);
        }
        snprintf(name, sizeof name, "storage.insert.%s_idx1.%s.median", names[i], size_label(n));
        bench_print(name, bench_quantile(t, k, 0.5), "ns");
        snprintf(name, sizeof name, "storage.bytes_per_entry.%s", names[i]);
        bench_print(name, (double)index_bytes(ix) / (double)index_count(ix), "B");
        store_close(o.s);
    }
    free(t);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1);
    if (bench_selected(argc, argv, "writes")) {
        writes(0);
        writes(1);
        writes(3);
    }
    if (bench_selected(argc, argv, "seek")) {
        seeks(10000);
        seeks(nrows());
    }
    if (bench_selected(argc, argv, "hash"))
        hash_vs_ordered();
    if (bench_selected(argc, argv, "bytes")) {
        bytes_per_row(0);
        bytes_per_row(1);
    }
    return 0;
}
