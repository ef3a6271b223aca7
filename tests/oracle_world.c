/*
 * oracle_world.c - the oracles' two databases and their histories
 * (oracle_gen.h): the schema on both engines, writes bound to the same
 * values on both (their outcomes must agree), transactions, savepoints,
 * failing statements and index DDL (livedb only), with the oracle's hooks
 * called after every statement; and failure reports that replay.
 */
#include "oracle_gen.h"

#include "base/mem.h"

#include <math.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static const char *const schema_sql =
    "CREATE TABLE t1(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL, d TEXT COLLATE NOCASE);\n"
    "CREATE TABLE t2(id INTEGER PRIMARY KEY, t1id INTEGER, x INTEGER, s TEXT COLLATE NOCASE, "
    "f REAL);\n"
    "CREATE TABLE t3(k INTEGER, v INTEGER, w TEXT);\n"
    "CREATE TABLE t4(p INTEGER, q TEXT, n INTEGER, r REAL, PRIMARY KEY(p, q));\n";

/* Indexes (livedb only), created and dropped by the history. */
static const char *const index_defs[][2] = {
    { "i_t1a", "t1(a)" },
    { "i_t1ba", "t1(b, a)" },
    { "i_t1c", "t1(c DESC)" },
    { "i_t1d", "t1(d)" },
    { "i_t1dn", "t1(d DESC NULLS FIRST, id)" },
    { "i_t2t1", "t2(t1id)" },
    { "i_t2h", "t2(t1id) USING HASH" },
    { "i_t2xs", "t2(x, s)" },
    { "i_t2s", "t2(s DESC)" },
    { "i_t2f", "t2(f)" },
    { "i_t3k", "t3(k)" },
    { "i_t3vk", "t3(v DESC, k)" },
    { "i_t4n", "t4(n)" },
    { "i_t4rp", "t4(r, p)" },
};
#define NINDEXES (int)(sizeof index_defs / sizeof index_defs[0])

/* ---- the two databases -------------------------------------------------------------- */

/* sql with each ?N replaced by the value it is bound to. */
static void put_inlined(strbuf *sb, const char *sql, const oval *params, int n)
{
    for (const char *p = sql; *p;) {
        if (*p == '?') {
            char *end;
            long k = strtol(p + 1, &end, 10);
            CHECK(k >= 1 && k <= n);
            oval_sql(sb, &params[k - 1]);
            p = end;
        } else {
            sb_putc(sb, *p++);
        }
    }
}

static void log_stmt(oworld *w, const char *sql, const oval *params, int n)
{
    put_inlined(&w->log, sql, params, n);
    sb_puts(&w->log, ";\n");
}

void ow_log_query(oworld *w, int id, const oquery *q, int64_t offset, int64_t limit)
{
    char *sql = oq_text(q, false, offset, limit);
    sb_printf(&w->log, "-- .live@%d ", id);
    put_inlined(&w->log, sql, q->params, q->nparams);
    sb_putc(&w->log, '\n');
    mem_free(sql);
}

static int run_livedb(oworld *w, const char *sql, const oval *params, int n)
{
    ldb_stmt *st;
    int rc = ldb_prepare(w->ld, sql, -1, &st, NULL);
    CHECKF(rc == LDB_OK && st, "%s: %s", sql, ldb_errmsg(w->ld));
    for (int i = 0; i < n; i++)
        oval_bind_livedb(st, i + 1, &params[i]);
    while ((rc = ldb_step(st)) == LDB_ROW)
        ;
    ldb_finalize(st);
    return rc;
}

static int run_sqlite(oworld *w, const char *sql, const oval *params, int n)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(w->sq, sql, -1, &st, NULL);
    CHECKF(rc == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(w->sq));
    for (int i = 0; i < n; i++)
        oval_bind_sqlite(st, i + 1, &params[i]);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    sqlite3_finalize(st);
    return rc;
}

bool ow_both(oworld *w, const char *sql, const oval *params, int n)
{
    size_t at = w->log.len;
    log_stmt(w, sql, params, n);
    w->statements++;
    int lrc = run_livedb(w, sql, params, n);
    if (lrc != LDB_DONE) { /* the log stays a script that runs to its end */
        strbuf line = STRBUF_INIT;
        sb_puts(&line, sb_str(&w->log) + at);
        sb_truncate(&w->log, at);
        sb_printf(&w->log, "-- failed: %s", sb_str(&line));
        sb_free(&line);
    }
    char lmsg[256];
    snprintf(lmsg, sizeof lmsg, "%s", ldb_errmsg(w->ld));
    int src = run_sqlite(w, sql, params, n);
    bool lok = lrc == LDB_DONE, sok = src == SQLITE_DONE;
    if (lok != sok || (!lok && lrc != LDB_CONSTRAINT)) {
        ow_report_history(w);
        CHECKF(0, "history seed %llu: the engines disagree on the last statement: livedb %s "
               "(%d: %s), SQLite %s (%s)",
               (unsigned long long)w->seed, lok ? "ok" : "failed", lrc, lmsg,
               sok ? "ok" : "failed", sqlite3_errmsg(w->sq));
    }
    w->failed += !lok;
    return lok;
}

/* A statement only livedb runs (index DDL). */
static void livedb_only(oworld *w, const char *sql)
{
    sb_printf(&w->log, "%s;\n", sql);
    w->statements++;
    w->ddl = true;
    int rc = ldb_exec(w->ld, sql, NULL, NULL);
    CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(w->ld));
}

static void index_ddl(oworld *w)
{
    int i = og_pick(&w->r, NINDEXES);
    char sql[128];
    if (og_chance(&w->r, 1, 2))
        snprintf(sql, sizeof sql, "CREATE INDEX IF NOT EXISTS %s ON %s", index_defs[i][0],
                 index_defs[i][1]);
    else
        snprintf(sql, sizeof sql, "DROP INDEX IF EXISTS %s", index_defs[i][0]);
    livedb_only(w, sql);
}

/* ---- writes --------------------------------------------------------------------------- */

typedef struct owrite {
    char sql[320];
    oval p[24];
    int n;
} owrite;

static void add(owrite *wr, oval v) { wr->p[wr->n++] = v; }

/* Rows for t1/t2/t3/t4 with the key from the small ranges (collisions
 * happen and must fail, or be ignored or replaced, in both). */
static void row_values(rng *r, int keys, int table, owrite *wr)
{
    const struct otable *t = &otables[table];
    for (int c = 0; c < t->ncols; c++) {
        if (c == 0 && table < 2)
            add(wr, oval_int(rng_range(r, 1, keys)));
        else if (table == 3 && c == 0)
            add(wr, oval_int(rng_range(r, 0, 4)));
        else if (table == 3 && c == 1)
            add(wr, oval_random(r, OT_TEXT, false));
        else if (table == 1 && c == 1)
            add(wr, og_chance(r, 1, 8) ? oval_random(r, OT_INT, true)
                                    : oval_int(rng_range(r, 0, keys + 1)));
        else
            add(wr, oval_random(r, t->cols[c].ty, true));
    }
}

static void gen_insert(rng *r, int keys, int table, owrite *wr)
{
    static const char *const verbs[] = { "INSERT", "INSERT OR IGNORE", "INSERT OR REPLACE" };
    const struct otable *t = &otables[table];
    size_t len = (size_t)snprintf(wr->sql, sizeof wr->sql, "%s INTO %s VALUES ",
                                  verbs[table == 3 ? 1 + og_pick(r, 2) : og_pick(r, 3)], t->name);
    int rows = 1 + og_pick(r, 3);
    for (int i = 0; i < rows; i++) {
        len += (size_t)snprintf(wr->sql + len, sizeof wr->sql - len, "%s(", i ? ", " : "");
        for (int c = 0; c < t->ncols; c++)
            len += (size_t)snprintf(wr->sql + len, sizeof wr->sql - len, "%s?%d", c ? ", " : "",
                                    wr->n + c + 1);
        len += (size_t)snprintf(wr->sql + len, sizeof wr->sql - len, ")");
        row_values(r, keys, table, wr);
    }
}

static void gen_update(rng *r, int keys, int table, owrite *wr)
{
    switch (table * 10 + og_pick(r, 6)) {
    case 0:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t1 SET a = ?1 WHERE id = ?2");
        add(wr, oval_random(r, OT_INT, true));
        add(wr, oval_int(rng_range(r, 1, keys)));
        break;
    case 1:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t1 SET b = ?1, d = ?2 WHERE a = ?3");
        add(wr, oval_random(r, OT_TEXT, true));
        add(wr, oval_random(r, OT_TEXT, true));
        add(wr, oval_random(r, OT_INT, false));
        break;
    case 2:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t1 SET c = ?1 WHERE id %% 3 = ?2");
        add(wr, oval_random(r, OT_REAL, true));
        add(wr, oval_int(rng_range(r, 0, 2)));
        break;
    case 3:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t1 SET a = a + 1 WHERE d = ?1");
        add(wr, oval_random(r, OT_TEXT, false));
        break;
    case 4: /* a key moves (one row: SQL.md differences 10) */
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t1 SET id = ?1 WHERE id = ?2");
        add(wr, oval_int(rng_range(r, 1, keys)));
        add(wr, oval_int(rng_range(r, 1, keys)));
        break;
    case 5: /* changes nothing */
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t1 SET a = a, c = c WHERE a >= ?1");
        add(wr, oval_random(r, OT_INT, false));
        break;
    case 10:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t2 SET x = ?1, s = ?2 WHERE id = ?3");
        add(wr, oval_random(r, OT_INT, true));
        add(wr, oval_random(r, OT_TEXT, true));
        add(wr, oval_int(rng_range(r, 1, keys)));
        break;
    case 11:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t2 SET f = ?1 WHERE id %% 4 = ?2");
        add(wr, oval_random(r, OT_FLT, true));
        add(wr, oval_int(rng_range(r, 0, 3)));
        break;
    case 12:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t2 SET t1id = ?1 WHERE id = ?2");
        add(wr, oval_int(rng_range(r, 0, keys + 1)));
        add(wr, oval_int(rng_range(r, 1, keys)));
        break;
    case 13:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t2 SET x = x - 1 WHERE s = ?1 OR f = ?2");
        add(wr, oval_random(r, OT_TEXT, false));
        add(wr, oval_random(r, OT_FLT, false));
        break;
    case 14:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t2 SET id = ?1 WHERE id = ?2");
        add(wr, oval_int(rng_range(r, 1, keys)));
        add(wr, oval_int(rng_range(r, 1, keys)));
        break;
    case 15:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t2 SET s = s, f = f WHERE x <= ?1");
        add(wr, oval_random(r, OT_INT, false));
        break;
    case 20: case 21:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t3 SET v = v + 1 WHERE k = ?1");
        add(wr, oval_random(r, OT_INT, false));
        break;
    case 22: case 23:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t3 SET w = ?1 WHERE v = ?2");
        add(wr, oval_random(r, OT_TEXT, true));
        add(wr, oval_random(r, OT_INT, false));
        break;
    case 24: case 25:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t3 SET k = ?1 WHERE w = ?2");
        add(wr, oval_random(r, OT_INT, true));
        add(wr, oval_random(r, OT_TEXT, false));
        break;
    case 30: case 31: case 32:
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t4 SET n = ?1, r = ?2 WHERE p = ?3");
        add(wr, oval_random(r, OT_INT, true));
        add(wr, oval_random(r, OT_REAL, true));
        add(wr, oval_int(rng_range(r, 0, 4)));
        break;
    default: /* a key moves */
        snprintf(wr->sql, sizeof wr->sql, "UPDATE t4 SET q = ?1 WHERE p = ?2 AND q = ?3");
        add(wr, oval_random(r, OT_TEXT, false));
        add(wr, oval_int(rng_range(r, 0, 4)));
        add(wr, oval_random(r, OT_TEXT, false));
        break;
    }
}

static void gen_delete(rng *r, int keys, int table, owrite *wr)
{
    static const char *const forms[4][3] = {
        { "DELETE FROM t1 WHERE id = ?1", "DELETE FROM t1 WHERE a = ?1",
          "DELETE FROM t1 WHERE b IS NULL AND a > ?1" },
        { "DELETE FROM t2 WHERE id = ?1", "DELETE FROM t2 WHERE t1id = ?1",
          "DELETE FROM t2 WHERE f >= ?1" },
        { "DELETE FROM t3 WHERE k = ?1", "DELETE FROM t3 WHERE v > ?1",
          "DELETE FROM t3 WHERE k IS NULL OR v = ?1" },
        { "DELETE FROM t4 WHERE p = ?1", "DELETE FROM t4 WHERE n = ?1",
          "DELETE FROM t4 WHERE r IS NULL AND n < ?1" },
    };
    int k = og_pick(r, 3);
    snprintf(wr->sql, sizeof wr->sql, "%s", forms[table][k]);
    if (table == 1 && k == 2)
        add(wr, oval_random(r, OT_FLT, false));
    else if (k == 0 && table < 2)
        add(wr, oval_int(rng_range(r, 1, keys)));
    else
        add(wr, oval_random(r, OT_INT, false));
}

bool ow_write(oworld *w)
{
    owrite wr;
    memset(&wr, 0, sizeof wr);
    int table = og_pick(&w->r, 4), k = og_pick(&w->r, 10);
    if (k < 4)
        gen_insert(&w->r, w->keys, table, &wr);
    else if (k < 8)
        gen_update(&w->r, w->keys, table, &wr);
    else
        gen_delete(&w->r, w->keys, table, &wr);
    return ow_both(w, wr.sql, wr.p, wr.n);
}

/* ---- histories ------------------------------------------------------------------------ */

void ow_open(oworld *w, uint64_t seed)
{
#ifdef __GLIBC__
    /* SQLite's temporary b-trees (a sorter, DISTINCT) free their pages
     * after every statement; glibc's default trim gives them back to the
     * kernel each time, a quarter of the oracles' time in brk() */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    memset(w, 0, sizeof w[0]);
    w->seed = seed;
    rng_seed(&w->r, seed);
    CHECK(ldb_open(NULL, &w->ld) == LDB_OK);
    CHECK(sqlite3_open(":memory:", &w->sq) == SQLITE_OK);
    sb_puts(&w->log, schema_sql);
    CHECKF(ldb_exec(w->ld, schema_sql, NULL, NULL) == LDB_OK, "%s", ldb_errmsg(w->ld));
    CHECK(sqlite3_exec(w->sq, schema_sql, NULL, NULL, NULL) == SQLITE_OK);
    for (int i = 0; i < NINDEXES; i++)
        if (og_chance(&w->r, 1, 3))
            index_ddl(w);
    /* one history in three has big tables: windows then read a prefix of
     * an index, which refills and trims (seed 003) */
    bool big = og_chance(&w->r, 1, 3);
    w->big = big;
    w->keys = big ? 300 : 24;
    int rows = big ? 150 + og_pick(&w->r, 100) : 15 + og_pick(&w->r, 25);
    for (int i = 0; i < rows; i++) {
        owrite wr;
        memset(&wr, 0, sizeof wr);
        gen_insert(&w->r, w->keys, big ? i % 2 : i % 4, &wr);
        ow_both(w, wr.sql, wr.p, wr.n);
    }
}

void ow_close(oworld *w)
{
    ldb_close(w->ld);
    sqlite3_close(w->sq);
    sb_free(&w->log);
}

static void after(oworld *w, const ow_hooks *h, enum ow_point p)
{
    if (h->after)
        h->after(h->ctx, w, p);
    if (p != OW_IN_TXN)
        w->ddl = false;
}

static void control(oworld *w, const ow_hooks *h, const char *sql, enum ow_point p)
{
    CHECK(ow_both(w, sql, NULL, 0));
    after(w, h, p);
}

/* Writes inside a transaction, with savepoints and index DDL. */
static void transaction_body(oworld *w, const ow_hooks *h, int depth)
{
    int n = 1 + og_pick(&w->r, 4);
    for (int i = 0; i < n; i++) {
        int k = og_pick(&w->r, 10);
        if (k < 7) {
            ow_write(w);
            after(w, h, OW_IN_TXN);
        } else if (k < 9 && depth < 2) {
            char sp[32];
            snprintf(sp, sizeof sp, "SAVEPOINT s%d", depth);
            control(w, h, sp, OW_IN_TXN);
            transaction_body(w, h, depth + 1);
            if (og_chance(&w->r, 1, 2)) {
                snprintf(sp, sizeof sp, "ROLLBACK TO s%d", depth);
                control(w, h, sp, OW_IN_TXN);
            }
            if (og_chance(&w->r, 2, 3)) {
                snprintf(sp, sizeof sp, "RELEASE s%d", depth);
                control(w, h, sp, OW_IN_TXN);
            }
        } else {
            index_ddl(w);
            after(w, h, OW_IN_TXN);
        }
    }
}

void ow_step(oworld *w, const ow_hooks *h)
{
    int k = og_pick(&w->r, 20);
    if (h->between && og_chance(&w->r, 1, 4))
        h->between(h->ctx, w);
    if (k < 7) {
        bool ok = ow_write(w);
        after(w, h, ok ? OW_COMMITTED : OW_ROLLED_BACK);
    } else if (k < 13) {
        control(w, h, "BEGIN", OW_IN_TXN);
        w->in_txn = true;
        transaction_body(w, h, 0);
        w->in_txn = false;
        if (og_chance(&w->r, 2, 3))
            control(w, h, "COMMIT", OW_COMMITTED);
        else
            control(w, h, "ROLLBACK", OW_ROLLED_BACK);
    } else if (k < 15) {
        /* SAVEPOINT outside BEGIN starts the transaction; its RELEASE
         * commits it */
        control(w, h, "SAVEPOINT outer_sp", OW_IN_TXN);
        w->in_txn = true;
        transaction_body(w, h, 1);
        if (og_chance(&w->r, 1, 3))
            control(w, h, "ROLLBACK TO outer_sp", OW_IN_TXN);
        w->in_txn = false;
        control(w, h, "RELEASE outer_sp", OW_COMMITTED);
    } else if (k < 16) {
        /* a transaction whose writes cancel out, or change nothing */
        control(w, h, "BEGIN", OW_IN_TXN);
        w->in_txn = true;
        oval p[5] = { oval_int(90 + og_pick(&w->r, 5)), oval_random(&w->r, OT_INT, true),
                      oval_random(&w->r, OT_TEXT, true), oval_random(&w->r, OT_REAL, true),
                      oval_random(&w->r, OT_TEXT, true) };
        ow_both(w, "INSERT INTO t1 VALUES (?1, ?2, ?3, ?4, ?5)", p, 5);
        after(w, h, OW_IN_TXN);
        ow_both(w, "UPDATE t2 SET x = x WHERE id > ?2", p, 2);
        after(w, h, OW_IN_TXN);
        ow_both(w, "DELETE FROM t1 WHERE id = ?1", p, 1);
        after(w, h, OW_IN_TXN);
        w->in_txn = false;
        control(w, h, "COMMIT", OW_COMMITTED);
    } else if (k < 18) {
        index_ddl(w);
        after(w, h, OW_COMMITTED);
    } else {
        /* fails at its second row, after writing the first */
        oval p[10];
        for (int i = 0; i < 10; i++)
            p[i] = oval_random(&w->r, otables[0].cols[i % 5].ty, true);
        p[0] = p[5] = oval_int(40 + og_pick(&w->r, 5));
        CHECK(!ow_both(w, "INSERT INTO t1 VALUES (?1, ?2, ?3, ?4, ?5), (?6, ?7, ?8, ?9, ?10)",
                       p, 10));
        after(w, h, OW_ROLLED_BACK);
    }
}

void ow_sqlite_rows(oworld *w, const oquery *q, int64_t offset, int64_t limit, cmp_result *r)
{
    char *sql = oq_text(q, true, offset, limit);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(w->sq, sql, -1, &st, NULL);
    CHECKF(rc == SQLITE_OK, "SQLite rejects %s: %s", sql, sqlite3_errmsg(w->sq));
    oq_bind_sqlite(q, st);
    cmp_step_sqlite(w->sq, st, r);
    sqlite3_finalize(st);
    CHECKF(r->ok, "SQLite fails %s: %s", sql, r->msg);
    for (size_t i = 0; i < r->n; i++)
        oq_normalize(q, &r->rows[i]);
    mem_free(sql);
}

void ow_report_history(const oworld *w)
{
    const char *text = sb_str(&w->log);
    const char *path = getenv("LDB_ORACLE_LOG");
    if (path && *path) {
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(text, f);
            fclose(f);
            printf("# the whole history is in %s\n", path);
        }
    }
    int lines = 0;
    const char *start = text + strlen(text);
    while (start > text && lines < 41)
        if (*--start == '\n')
            lines++;
    printf("# history seed %llu (replay: LDB_SEED=%llu; LDB_ORACLE_LOG=file saves the whole "
           "history), its last statements:\n",
           (unsigned long long)w->seed, (unsigned long long)w->seed);
    for (const char *p = start + (start > text); *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("#   %.*s\n", n, p);
        p += n + (nl != NULL);
    }
}

void oq_report(const oquery *q, int64_t offset, int64_t limit)
{
    char *sql = oq_text(q, false, offset, limit);
    printf("# query: %s\n", sql);
    mem_free(sql);
    if (q->nparams) {
        strbuf sb = STRBUF_INIT;
        for (int i = 0; i < q->nparams; i++) {
            sb_printf(&sb, "%s?%d = ", i ? ", " : "", i + 1);
            oval_sql(&sb, &q->params[i]);
        }
        printf("# parameters: %s\n", sb_str(&sb));
        sb_free(&sb);
    }
}
