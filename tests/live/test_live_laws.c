/*
 * test_live_laws.c - the work, space, publication and error laws of live
 * queries (seed 000 laws 3, 9, 12, 13; the work of N-way joins), window
 * moves, DDL under open queries, callback rules, and allocation failures.
 * Seed 003's window laws are in test_live_window.c.
 */
#include "test.h"
#include "test_db.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "livedb.h"

#include <sqlite3.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

/* ---- a replica of a live result, rebuilt from batches ----------------------- */

#define MAXR 2048
#define RLEN 160

struct replica {
    int n;
    char rows[MAXR][RLEN];
    int batches;
    int changes;
};

static void render(const ldb_row *r, char *out)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < ldb_row_columns(r) && len < RLEN - 1; i++) {
        char buf[64];
        ldb_row_format(r, i, buf, sizeof buf);
        len += (size_t)snprintf(out + len, RLEN - len, "%s%s", i ? "|" : "", buf);
    }
}

static void replica_apply(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q;
    struct replica *rp = ctx;
    rp->batches++;
    rp->changes += (int)n;
    char row[RLEN];
    /* unordered results: positions are -1; rows are found by value */
    for (size_t i = 0; i < n; i++) {
        if (c[i].before && c[i].before_pos == -1) {
            render(c[i].before, row);
            int at = -1;
            for (int k = 0; k < rp->n && at < 0; k++)
                if (strcmp(rp->rows[k], row) == 0)
                    at = k;
            CHECKF(at >= 0, "deleted row %s not found", row);
            memmove(rp->rows[at], rp->rows[at + 1], (size_t)(rp->n - at - 1) * RLEN);
            rp->n--;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (c[i].after && c[i].after_pos == -1) {
            CHECK(rp->n < MAXR);
            render(c[i].after, rp->rows[rp->n++]);
        }
    }
    /* befores by descending position, then afters by ascending position */
    for (size_t pass = 0; pass < n; pass++) {
        int best = -1;
        for (size_t i = 0; i < n; i++)
            if (c[i].before && c[i].before_pos >= 0 &&
                (best < 0 || c[i].before_pos > c[best].before_pos))
                best = (int)i;
        if (best < 0)
            break;
        render(c[best].before, row);
        int64_t p = c[best].before_pos;
        CHECKF(p < rp->n && strcmp(rp->rows[p], row) == 0, "position %lld holds %s, not %s",
               (long long)p, p < rp->n ? rp->rows[p] : "-", row);
        memmove(rp->rows[p], rp->rows[p + 1], (size_t)(rp->n - p - 1) * RLEN);
        rp->n--;
        ((ldb_change *)c)[best].before_pos = -2; /* done */
    }
    for (size_t pass = 0; pass < n; pass++) {
        int best = -1;
        for (size_t i = 0; i < n; i++)
            if (c[i].after && c[i].after_pos >= 0 &&
                (best < 0 || c[i].after_pos < c[best].after_pos))
                best = (int)i;
        if (best < 0)
            break;
        render(c[best].after, row);
        int64_t p = c[best].after_pos;
        CHECK(p <= rp->n && rp->n < MAXR);
        memmove(rp->rows[p + 1], rp->rows[p], (size_t)(rp->n - p) * RLEN);
        snprintf(rp->rows[p], RLEN, "%s", row);
        rp->n++;
        ((ldb_change *)c)[best].after_pos = -2;
    }
}

static int collect(void *ctx, const ldb_row *r)
{
    struct replica *rp = ctx;
    if (rp->n < MAXR)
        render(r, rp->rows[rp->n++]);
    return 0;
}

/* The replica equals the one-shot result of sql, in order. */
static void check_equal(ldb *db, const struct replica *rp, const char *sql)
{
    static struct replica want;
    want.n = 0;
    CHECKF(ldb_exec(db, sql, collect, &want) == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    CHECKF(want.n == rp->n, "%s: %d rows one-shot, %d live", sql, want.n, rp->n);
    for (int i = 0; i < want.n; i++)
        CHECKF(strcmp(want.rows[i], rp->rows[i]) == 0, "%s: row %d %s vs %s", sql, i,
               want.rows[i], rp->rows[i]);
}

static int cmp_rows(const void *a, const void *b) { return strcmp(a, b); }

/* The replica equals the one-shot result of sql as a multiset. */
static void check_same_rows(ldb *db, const struct replica *rp, const char *sql)
{
    static struct replica want, got;
    want.n = 0;
    CHECKF(ldb_exec(db, sql, collect, &want) == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    got = *rp;
    qsort(want.rows, (size_t)want.n, RLEN, cmp_rows);
    qsort(got.rows, (size_t)got.n, RLEN, cmp_rows);
    CHECKF(want.n == got.n, "%s: %d rows one-shot, %d live", sql, want.n, got.n);
    for (int i = 0; i < want.n; i++)
        CHECKF(strcmp(want.rows[i], got.rows[i]) == 0, "%s: row %d %s vs %s", sql, i,
               want.rows[i], got.rows[i]);
}

/* ---- the issues data set ------------------------------------------------------- */

/* issues(id, title, status, priority, created, assignee) with N rows,
 * created unique (a permutation) except every 50th row, which is NULL. */
static ldb *issues_db(int n, uint64_t seed, bool nulls)
{
    rng r;
    rng_seed(&r, seed);
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
    EXEC(db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT, "
                "priority INTEGER, created INTEGER, assignee INTEGER)");
    EXEC(db, "CREATE INDEX issues_created ON issues(created)");
    EXEC(db, "CREATE INDEX issues_assignee ON issues(assignee)");
    EXEC(db, "BEGIN");
    ldb_stmt *u, *s;
    CHECK(ldb_prepare(db, "INSERT INTO users VALUES (?, 'User ' || ?)", -1, &u, NULL) == LDB_OK);
    for (int i = 1; i <= 100; i++) {
        ldb_bind_int64(u, 1, i);
        ldb_bind_int64(u, 2, i);
        CHECK(ldb_step(u) == LDB_DONE);
        ldb_reset(u);
    }
    ldb_finalize(u);
    int *perm = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    CHECK(ldb_prepare(db, "INSERT INTO issues VALUES (?, 'Issue ' || ?, ?, ?, ?, ?)", -1, &s,
                      NULL) == LDB_OK);
    for (int i = 1; i <= n; i++) {
        ldb_bind_int64(s, 1, i);
        ldb_bind_int64(s, 2, i);
        ldb_bind_text(s, 3, rng_chance(&r, 2, 3) ? "open" : "closed", -1);
        ldb_bind_int64(s, 4, rng_range(&r, 0, 9));
        if (nulls && i % 50 == 0)
            ldb_bind_null(s, 5);
        else
            ldb_bind_int64(s, 5, 1000000 + (int64_t)perm[i - 1] * 10);
        ldb_bind_int64(s, 6, rng_range(&r, 1, 120)); /* some assignees have no user */
        CHECK(ldb_step(s) == LDB_DONE);
        ldb_reset(s);
    }
    ldb_finalize(s);
    free(perm);
    EXEC(db, "COMMIT");
    return db;
}

static uint64_t rows_read(ldb_live *q)
{
    ldb_live_stats st;
    ldb_live_stats_get(q, &st);
    return st.rows_read;
}

static uint64_t rows_processed(ldb_live *q)
{
    ldb_live_stats st;
    ldb_live_stats_get(q, &st);
    return st.rows_processed;
}

/* ---- N-way joins: one change reaching every input ----------------------------------- */

/*
 * An N-way join over one table t(id, v) (3 rows, a cycle through v), in
 * several shapes, as a live query and as the body of a materialized
 * view. Each write below touches every input of the join at once. The
 * work of a commit (rows the query's operators consume) must stay within
 * 32 x N x (table rows changed + result rows changed): linear in N (a
 * level is a few operators: a decorrelated EXISTS has about eight). Each
 * join's three overlapping terms, summed unconsolidated, used to double
 * the delta at every level (20-way: 4.9 s and 1.4 GB for one INSERT; 64-way
 * never ended). After every write the live result, the one-shot result
 * and SQLite's must agree, and so must the view.
 */

#define NWAY_MAX 64
#define NWAY_ROWLEN (4 * NWAY_MAX + 8)

struct bag {
    int n;
    char (*r)[NWAY_ROWLEN];
    int64_t changed; /* result rows inserted or deleted by the last batch */
};

#define BAG_MAX 512

static void bag_init(struct bag *b)
{
    b->n = 0;
    b->changed = 0;
    b->r = malloc(sizeof(*b->r) * BAG_MAX);
}

/* Columns are small integers or NULL: "4|N|2". */
static void render_small(const ldb_row *r, char *out)
{
    size_t len = 0;
    for (int i = 0; i < ldb_row_columns(r); i++) {
        if (ldb_row_type(r, i) == LDB_NULL)
            len += (size_t)snprintf(out + len, NWAY_ROWLEN - len, "%sN", i ? "|" : "");
        else
            len += (size_t)snprintf(out + len, NWAY_ROWLEN - len, "%s%lld", i ? "|" : "",
                                    (long long)ldb_row_int64(r, i));
        CHECK(len < NWAY_ROWLEN);
    }
    out[len] = '\0';
}

static void bag_add(struct bag *b, const char *row)
{
    CHECK(b->n < BAG_MAX);
    snprintf(b->r[b->n++], NWAY_ROWLEN, "%s", row);
}

static void bag_apply(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q;
    struct bag *b = ctx;
    char row[NWAY_ROWLEN];
    for (size_t i = 0; i < n; i++) {
        if (!c[i].before)
            continue;
        render_small(c[i].before, row);
        for (int64_t k = 0; k < c[i].before_count; k++) {
            int at = -1;
            for (int j = 0; j < b->n && at < 0; j++)
                if (strcmp(b->r[j], row) == 0)
                    at = j;
            CHECKF(at >= 0, "deleted row %s is not in the replica", row);
            memcpy(b->r[at], b->r[--b->n], NWAY_ROWLEN);
            b->changed++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!c[i].after)
            continue;
        render_small(c[i].after, row);
        for (int64_t k = 0; k < c[i].after_count; k++, b->changed++)
            bag_add(b, row);
    }
}

static int bag_collect(void *ctx, const ldb_row *r)
{
    char row[NWAY_ROWLEN];
    render_small(r, row);
    bag_add(ctx, row);
    return 0;
}

static void sqlite_bag(sqlite3 *s, const char *sql, struct bag *out)
{
    sqlite3_stmt *st;
    CHECKF(sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK, "sqlite: %s",
           sqlite3_errmsg(s));
    out->n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char row[NWAY_ROWLEN];
        size_t len = 0;
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            if (sqlite3_column_type(st, i) == SQLITE_NULL)
                len += (size_t)snprintf(row + len, sizeof row - len, "%sN", i ? "|" : "");
            else
                len += (size_t)snprintf(row + len, sizeof row - len, "%s%lld", i ? "|" : "",
                                        (long long)sqlite3_column_int64(st, i));
        }
        bag_add(out, row);
    }
    CHECKF(rc == SQLITE_DONE, "sqlite: %s", sqlite3_errmsg(s));
    sqlite3_finalize(st);
}

static void bags_equal(struct bag *want, struct bag *got, const char *what, const char *sql)
{
    qsort(want->r, (size_t)want->n, NWAY_ROWLEN, cmp_rows);
    qsort(got->r, (size_t)got->n, NWAY_ROWLEN, cmp_rows);
    CHECKF(want->n == got->n, "%s: %d rows expected, %d\n  %s", what, want->n, got->n, sql);
    for (int i = 0; i < want->n; i++)
        CHECKF(strcmp(want->r[i], got->r[i]) == 0, "%s: row %d %s vs %s\n  %s", what, i,
               want->r[i], got->r[i], sql);
}

enum nway_shape { NWAY_SELF, NWAY_STAR, NWAY_CHAIN, NWAY_LEFT, NWAY_OUTER, NWAY_EXISTS,
                  NWAY_GROUPED };

/* The N-way query of a shape (c0..c(N-1) are unique column names, so the
 * same text can be a view's body). */
static void nway_sql(enum nway_shape shape, int n, strbuf *sb)
{
    static const char *const outer[] = { "JOIN", "LEFT JOIN", "FULL JOIN", "RIGHT JOIN" };
    if (shape == NWAY_EXISTS) {
        /* semi- and anti-joins of t0 (nesting them would overflow
         * SQLite's parser stack): a row with a successor, and not on a
         * 2-cycle, except the self-loops */
        static const char *const conds[] = { "EXISTS (SELECT 1 FROM t t%d WHERE t%d.id = t0.id)",
                                             "EXISTS (SELECT 1 FROM t t%d WHERE t%d.id = t0.v)",
                                             "NOT EXISTS (SELECT 1 FROM t t%d WHERE t%d.id = "
                                             "t0.v AND t%d.v = t0.id AND t0.id <> t0.v)" };
        sb_puts(sb, "SELECT t0.id, t0.v FROM t t0 WHERE ");
        for (int i = 1; i < n; i++) {
            sb_puts(sb, i > 1 ? " AND " : "");
            sb_printf(sb, conds[i % 3], i, i, i);
        }
        return;
    }
    if (shape == NWAY_GROUPED)
        sb_printf(sb, "SELECT t0.id AS k, count(*) AS n, sum(t%d.v) AS s", n - 1);
    else
        sb_puts(sb, "SELECT t0.id AS c0");
    for (int i = 1; i < n && shape != NWAY_GROUPED; i++)
        sb_printf(sb, ", t%d.v AS c%d", i, i);
    sb_puts(sb, " FROM t t0");
    for (int i = 1; i < n; i++) {
        switch (shape) {
        case NWAY_SELF:
        case NWAY_GROUPED: sb_printf(sb, " JOIN t t%d ON t%d.id = t%d.id", i, i, i - 1); break;
        case NWAY_STAR: sb_printf(sb, " JOIN t t%d ON t%d.id = t0.id", i, i); break;
        case NWAY_CHAIN: sb_printf(sb, " JOIN t t%d ON t%d.id = t%d.v", i, i, i - 1); break;
        case NWAY_LEFT: sb_printf(sb, " LEFT JOIN t t%d ON t%d.id = t%d.v", i, i, i - 1); break;
        default:
            sb_printf(sb, " %s t t%d ON t%d.id = t%d.v", outer[i % 4], i, i, i - 1);
            break;
        }
    }
    if (shape == NWAY_GROUPED)
        sb_puts(sb, " GROUP BY t0.id");
}

static void nway_check(ldb *db, sqlite3 *lite, struct bag *live, const char *sql, bool view)
{
    static struct bag want, got;
    if (!want.r) {
        bag_init(&want);
        bag_init(&got);
    }
    sqlite_bag(lite, sql, &want);
    got.n = 0;
    CHECKF(ldb_exec(db, sql, bag_collect, &got) == LDB_OK, "%s", ldb_errmsg(db));
    bags_equal(&want, &got, "one-shot vs SQLite", sql);
    sqlite_bag(lite, sql, &want);
    bags_equal(&want, live, "live vs SQLite", sql);
    if (view) {
        sqlite_bag(lite, sql, &want);
        got.n = 0;
        CHECK(ldb_exec(db, "SELECT * FROM nway", bag_collect, &got) == LDB_OK);
        bags_equal(&want, &got, "view vs SQLite", sql);
    }
}

static void nway_once(enum nway_shape shape, int n)
{
    static const struct {
        const char *sql;
        int64_t rows; /* table rows it changes */
    } writes[] = {
        { "INSERT INTO t VALUES (4, 4)", 1 }, /* joins itself at every level */
        { "UPDATE t SET v = 1 WHERE id = 4", 1 },
        { "INSERT INTO t VALUES (5, 5)", 1 },
        { "UPDATE t SET v = v % 5 + 1", 5 },
        { "DELETE FROM t WHERE id = 4", 1 },
        { "UPDATE t SET id = 9 WHERE id = 5", 1 },
    };
    strbuf sql;
    sb_init(&sql);
    nway_sql(shape, n, &sql);
    CHECK(sb_error(&sql) == LDB_OK);
    const char *setup = "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER);"
                        "INSERT INTO t VALUES (1, 2), (2, 3), (3, 1);";
    ldb *db;
    sqlite3 *lite;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    CHECK(sqlite3_open(":memory:", &lite) == SQLITE_OK);
    EXEC(db, setup);
    CHECK(sqlite3_exec(lite, setup, NULL, NULL, NULL) == SQLITE_OK);
    static struct bag live;
    if (!live.r)
        bag_init(&live);
    live.n = 0;
    ldb_live *q;
    CHECKF(ldb_live_open(db, sb_str(&sql), bag_apply, &live, &q) == LDB_OK, "%s: %s",
           sb_str(&sql), ldb_errmsg(db));
    nway_check(db, lite, &live, sb_str(&sql), false);
    /* a view's key is its body's: at most 32 columns (the 20-way, or the
     * grouped 64-way) */
    bool view = n <= 20 || shape == NWAY_GROUPED || shape == NWAY_EXISTS;
    for (size_t w = 0; w < sizeof writes / sizeof writes[0]; w++) {
        if (w == 1 && view) { /* the view starts after the first write */
            strbuf mv;
            sb_init(&mv);
            sb_printf(&mv, "CREATE MATERIALIZED VIEW nway AS %s", sb_str(&sql));
            EXEC(db, sb_str(&mv));
            sb_free(&mv);
            ldb_mv_stats ms;
            CHECK(ldb_mv_stats_get(db, "nway", &ms) == LDB_OK);
            CHECK_STR(ms.strategy, "dataflow");
        }
        ldb_live_stats before, after;
        ldb_live_stats_get(q, &before);
        live.changed = 0;
        EXEC(db, writes[w].sql);
        CHECK(sqlite3_exec(lite, writes[w].sql, NULL, NULL, NULL) == SQLITE_OK);
        ldb_live_stats_get(q, &after);
        uint64_t work = after.rows_processed - before.rows_processed;
        uint64_t bound = 32 * (uint64_t)n * (uint64_t)(writes[w].rows + live.changed);
        CHECKF(work <= bound, "%d-way shape %d, %s: %llu rows processed, bound %llu", n,
               (int)shape, writes[w].sql, (unsigned long long)work,
               (unsigned long long)bound);
        uint64_t read = after.rows_read - before.rows_read;
        CHECKF(read <= bound, "%d-way shape %d, %s: %llu rows read, bound %llu", n, (int)shape,
               writes[w].sql, (unsigned long long)read, (unsigned long long)bound);
        nway_check(db, lite, &live, sb_str(&sql), view && w >= 1);
    }
    ldb_live_close(q);
    ldb_close(db);
    sqlite3_close(lite);
    sb_free(&sql);
}

static void nway_join_work(void)
{
    static const int sizes[] = { 4, 20, NWAY_MAX };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int shape = NWAY_SELF; shape <= NWAY_GROUPED; shape++)
            if (shape != NWAY_EXISTS || sizes[i] <= 20) /* decorrelating 63 EXISTS is slow */
                nway_once((enum nway_shape)shape, sizes[i]);
}

/* ---- law 12: unreachable changes do no work ---------------------------------------- */

static void unreachable_changes(void)
{
    ldb *db = issues_db(1500, test_seed(), false);
    ldb_live *filt, *join, *win;
    static struct replica a, b, c;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&c, 0, sizeof c);
    CHECK(ldb_live_open(db, "SELECT id, title FROM issues WHERE status = 'open'", replica_apply,
                        &a, &filt) == LDB_OK);
    CHECK(ldb_live_open(db, "SELECT i.id, u.name FROM issues i JOIN users u ON u.id = i.assignee",
                        replica_apply, &b, &join) == LDB_OK);
    CHECK(ldb_live_open(db, "SELECT id FROM issues ORDER BY created DESC LIMIT 5", replica_apply,
                        &c, &win) == LDB_OK);
    /* a closed issue changes: the filter stops it (2 rows in: -old +new) */
    uint64_t p0 = rows_processed(filt), r0 = rows_read(filt);
    EXEC(db, "UPDATE issues SET title = 'zzz' WHERE id = (SELECT min(id) FROM issues WHERE "
                "status = 'closed')");
    uint64_t p1 = rows_processed(filt);
    CHECKF(p1 - p0 <= 4, "filter: %llu rows processed", (unsigned long long)(p1 - p0));
    CHECK(rows_read(filt) == r0);
    CHECK_INT(a.batches, 1); /* the initial batch only */
    /* a user nobody is assigned to is renamed: one index lookup, no scan */
    EXEC(db, "INSERT INTO users VALUES (500, 'lonely')");
    uint64_t j0 = rows_read(join), jp0 = rows_processed(join);
    EXEC(db, "UPDATE users SET name = 'still lonely' WHERE id = 500");
    CHECKF(rows_read(join) - j0 <= 2, "join read %llu rows", (unsigned long long)(rows_read(join) - j0));
    CHECKF(rows_processed(join) - jp0 <= 8, "join processed %llu rows",
           (unsigned long long)(rows_processed(join) - jp0));
    CHECK_INT(b.batches, 1);
    /* a row past the window's prefix changes: the window is not touched */
    uint64_t w0 = rows_processed(win);
    EXEC(db, "UPDATE issues SET title = 'old' WHERE created = (SELECT min(created) FROM issues)");
    CHECK_INT(rows_processed(win), w0);
    CHECK_INT(c.batches, 1);
    /* law 13: the join keeps no copy of either table (both served by indexes) */
    ldb_live_stats st;
    ldb_live_stats_get(join, &st);
    CHECKF(st.retained_rows <= 2 * (uint64_t)st.result_rows + 16, "join retains %llu rows for %lld",
           (unsigned long long)st.retained_rows, (long long)st.result_rows);
    ldb_live_close(filt);
    ldb_live_close(join);
    ldb_live_close(win);
    ldb_close(db);
}

/* ---- law 3: batch partition ---------------------------------------------------------- */

static void batch_partition(void)
{
    uint64_t seed = test_seed();
    const char *sql = "SELECT status, count(*), sum(priority), max(created) FROM issues "
                      "GROUP BY status";
    const char *win = "SELECT id, priority FROM issues WHERE status = 'open' ORDER BY created "
                      "DESC LIMIT 7";
    static struct replica ra, rb, wa, wb;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    memset(&wa, 0, sizeof wa);
    memset(&wb, 0, sizeof wb);
    ldb *a = issues_db(500, seed, false), *b = issues_db(500, seed, false);
    ldb_live *qa, *qb, *wqa, *wqb;
    CHECK(ldb_live_open(a, sql, replica_apply, &ra, &qa) == LDB_OK);
    CHECK(ldb_live_open(b, sql, replica_apply, &rb, &qb) == LDB_OK);
    CHECK(ldb_live_open(a, win, replica_apply, &wa, &wqa) == LDB_OK);
    CHECK(ldb_live_open(b, win, replica_apply, &wb, &wqb) == LDB_OK);
    rng r;
    rng_seed(&r, seed);
    EXEC(b, "BEGIN");
    for (int i = 0; i < 200; i++) {
        char stmt[200];
        switch (rng_below(&r, 3)) {
        case 0:
            snprintf(stmt, sizeof stmt, "INSERT INTO issues VALUES (%d, 't', '%s', %d, %d, 1)",
                     1000 + i, rng_chance(&r, 1, 2) ? "open" : "closed", (int)rng_below(&r, 10),
                     2000000 + (int)rng_below(&r, 100000));
            break;
        case 1:
            snprintf(stmt, sizeof stmt, "DELETE FROM issues WHERE id = %d",
                     (int)rng_range(&r, 1, 1200));
            break;
        default:
            snprintf(stmt, sizeof stmt, "UPDATE issues SET status = 'open', priority = %d WHERE id = %d",
                     (int)rng_below(&r, 10), (int)rng_range(&r, 1, 1200));
            break;
        }
        EXEC(a, stmt); /* one commit per statement */
        EXEC(b, stmt); /* all in one transaction */
    }
    int batches_before = rb.batches;
    EXEC(b, "COMMIT");
    CHECK_INT(rb.batches, batches_before + 1); /* one batch for the whole transaction */
    qsort(ra.rows, (size_t)ra.n, RLEN, cmp_rows);
    qsort(rb.rows, (size_t)rb.n, RLEN, cmp_rows);
    CHECK_INT(ra.n, rb.n);
    for (int i = 0; i < ra.n; i++)
        CHECK_STR(ra.rows[i], rb.rows[i]);
    check_same_rows(a, &ra, sql);
    check_equal(b, &wb, "SELECT id, priority FROM issues WHERE status = 'open' ORDER BY "
                        "created DESC, id LIMIT 7");
    CHECK_INT(wa.n, wb.n);
    for (int i = 0; i < wa.n; i++)
        CHECK_STR(wa.rows[i], wb.rows[i]);
    ldb_live_close(qa);
    ldb_live_close(qb);
    ldb_live_close(wqa);
    ldb_live_close(wqb);
    ldb_close(a);
    ldb_close(b);
}

/* ---- publication: rollback, no-op commits, reads inside callbacks ------------------- */

struct coherent {
    ldb *db;
    ldb_live *other;
    int64_t other_count_seen;
    int write_rc;
    int calls;
    bool close_self;
};

static void coherent_cb(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)c;
    (void)n;
    struct coherent *co = ctx;
    co->calls++;
    if (co->other)
        co->other_count_seen = ldb_live_count(co->other);
    co->write_rc = ldb_exec(co->db, "INSERT INTO t VALUES (99, 99)", NULL, NULL);
    if (co->close_self)
        ldb_live_close(q);
}

static void publication_rules(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)");
    EXEC(db, "INSERT INTO t VALUES (1, 10), (2, 20)");
    struct coherent co = { db, NULL, 0, 0, 0, false };
    static struct replica all;
    memset(&all, 0, sizeof all);
    ldb_live *q1, *q2;
    CHECK(ldb_live_open(db, "SELECT id, v FROM t ORDER BY id", replica_apply, &all, &q2) ==
          LDB_OK);
    CHECK(ldb_live_open(db, "SELECT count(*) FROM t WHERE v > 5", coherent_cb, &co, &q1) ==
          LDB_OK);
    co.other = q2;
    /* law 9: when q1's callback runs, q2 already shows the same commit */
    EXEC(db, "INSERT INTO t VALUES (3, 30)");
    CHECK_INT(co.calls, 2);
    CHECK_INT(co.other_count_seen, 3);
    CHECK_INT(co.write_rc, LDB_MISUSE); /* no writes from a callback */
    CHECK_INT(all.n, 3);
    /* a rolled-back transaction publishes nothing */
    int b1 = all.batches, c1 = co.calls;
    EXEC(db, "BEGIN; INSERT INTO t VALUES (4, 40); DELETE FROM t WHERE id = 1; ROLLBACK");
    CHECK_INT(all.batches, b1);
    CHECK_INT(co.calls, c1);
    /* a commit that changes no result publishes nothing; an unchanged row
     * is never reported */
    EXEC(db, "UPDATE t SET v = 10 WHERE id = 1");
    CHECK_INT(all.batches, b1);
    EXEC(db, "UPDATE t SET v = v + 1 WHERE id = 1"); /* q1's count stays 3 */
    CHECK_INT(co.calls, c1);
    CHECK_INT(all.batches, b1 + 1);
    /* opening inside a transaction is refused */
    ldb_live *q3;
    EXEC(db, "BEGIN");
    CHECK_INT(ldb_live_open(db, "SELECT * FROM t", NULL, NULL, &q3), LDB_MISUSE);
    EXEC(db, "COMMIT");
    /* a callback may close its own query */
    co.close_self = true;
    EXEC(db, "INSERT INTO t VALUES (5, 50)");
    CHECK_INT(co.calls, c1 + 1);
    EXEC(db, "INSERT INTO t VALUES (6, 60)");
    CHECK_INT(co.calls, c1 + 1);
    check_equal(db, &all, "SELECT id, v FROM t ORDER BY id");
    ldb_live_close(q2);
    ldb_close(db);
}

static void rejections(void)
{
    ldb *db;
    ldb_live *q;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)");
    CHECK_INT(ldb_live_open(db, "SELECT id, random() FROM t", NULL, NULL, &q), LDB_UNSUPPORTED);
    CHECK(strstr(ldb_errmsg(db), "non-deterministic") != NULL);
    CHECK_INT(ldb_live_open(db, "SELECT id FROM t LIMIT 3", NULL, NULL, &q), LDB_UNSUPPORTED);
    CHECK(strstr(ldb_errmsg(db), "ORDER BY") != NULL);
    CHECK_INT(ldb_live_open(db, "INSERT INTO t VALUES (1, 1)", NULL, NULL, &q), LDB_MISUSE);
    CHECK(ldb_live_open(db, "SELECT nope FROM t", NULL, NULL, &q) == LDB_ERROR);
    CHECK(ldb_error_offset(db) == 7);
    ldb_close(db);
}

/* ---- terminal error state ------------------------------------------------------------ */

/* Status callbacks seen: how many, and the last status and message. */
struct status_log {
    int calls, last;
    char msg[128];
};

static void log_status(void *ctx, ldb_live *q, int status, const char *msg)
{
    (void)q;
    struct status_log *l = ctx;
    l->calls++;
    l->last = status;
    snprintf(l->msg, sizeof l->msg, "%s", msg ? msg : "");
}

static void runtime_error_is_terminal(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)");
    EXEC(db, "INSERT INTO t VALUES (1, 1)");
    static struct replica rp;
    memset(&rp, 0, sizeof rp);
    ldb_live *q;
    CHECK(ldb_live_open(db, "SELECT id, v * 4611686018427387904 FROM t", replica_apply, &rp,
                        &q) == LDB_OK);
    CHECK_INT(rp.batches, 1);
    struct status_log sl = { 0 };
    CHECK_INT(ldb_live_set_status_callback(q, log_status, &sl), LDB_OK);
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_READY);
    EXEC(db, "INSERT INTO t VALUES (2, 8)"); /* overflows in the projection */
    const char *msg = NULL;
    CHECK_INT(ldb_live_error(q, &msg), LDB_ERROR);
    CHECK(msg && strstr(msg, "overflow"));
    CHECK_INT(rp.batches, 1); /* nothing partial was published */
    /* its status says so too (it will never be ready again), once */
    CHECK_INT(ldb_live_status(q, &msg), LDB_STATUS_ERROR);
    CHECK(msg && strstr(msg, "overflow"));
    CHECK_INT(sl.calls, 1);
    CHECK_INT(sl.last, LDB_STATUS_ERROR);
    CHECK(strstr(sl.msg, "overflow"));
    EXEC(db, "INSERT INTO t VALUES (3, 0)"); /* the writer is not affected */
    CHECK_INT(rp.batches, 1);
    CHECK_INT(sl.calls, 1);
    int64_t n = 0;
    ldb_stmt *s;
    CHECK(ldb_prepare(db, "SELECT count(*) FROM t", -1, &s, NULL) == LDB_OK);
    CHECK(ldb_step(s) == LDB_ROW);
    n = ldb_row_int64(ldb_stmt_row(s), 0);
    ldb_finalize(s);
    CHECK_INT(n, 3);
    ldb_live_close(q);
    ldb_close(db);
}

/* ---- windows move; DDL under open queries ------------------------------------------- */

static void window_moves(void)
{
    ldb *db = issues_db(2000, test_seed(), true);
    static struct replica rp;
    memset(&rp, 0, sizeof rp);
    ldb_live *q;
    CHECK(ldb_live_open(db, "SELECT id, created FROM issues WHERE status = 'open' ORDER BY "
                            "created DESC LIMIT 10",
                        replica_apply, &rp, &q) == LDB_OK);
    static const int64_t moves[][2] = { { 5, 10 }, { 5, 20 }, { 100, 3 }, { 0, 1 }, { 1990, 50 },
                                        { 0, 10 } };
    for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
        int b = rp.batches;
        CHECK(ldb_live_set_window(q, moves[i][0], moves[i][1]) == LDB_OK);
        CHECK(rp.batches <= b + 1); /* one batch per move */
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT id, created FROM issues WHERE status = 'open' ORDER BY created DESC, "
                 "id LIMIT %lld OFFSET %lld",
                 (long long)moves[i][1], (long long)moves[i][0]);
        check_equal(db, &rp, sql);
        EXEC(db, "DELETE FROM issues WHERE id = (SELECT min(id) FROM issues WHERE status = 'open')");
        check_equal(db, &rp, sql);
    }
    ldb_live *plain;
    CHECK(ldb_live_open(db, "SELECT id FROM issues", NULL, NULL, &plain) == LDB_OK);
    CHECK_INT(ldb_live_set_window(plain, 0, 5), LDB_MISUSE);
    ldb_live_close(plain);
    /* the index the window reads is dropped: the query goes on */
    EXEC(db, "DROP INDEX issues_created");
    EXEC(db, "DELETE FROM issues WHERE id = (SELECT min(id) FROM issues WHERE status = 'open')");
    CHECK(ldb_live_error(q, NULL) == LDB_OK);
    check_equal(db, &rp, "SELECT id, created FROM issues WHERE status = 'open' ORDER BY created "
                         "DESC, id LIMIT 10");
    /* the table is dropped: the query ends in an error, saying why */
    struct status_log sl = { 0 };
    CHECK_INT(ldb_live_set_status_callback(q, log_status, &sl), LDB_OK);
    EXEC(db, "DROP TABLE issues");
    const char *msg;
    CHECK_INT(ldb_live_error(q, &msg), LDB_ERROR);
    CHECK(msg && strstr(msg, "dropped"));
    CHECK_INT(ldb_live_status(q, NULL), LDB_STATUS_ERROR);
    CHECK_INT(sl.calls, 1);
    CHECK(strstr(sl.msg, "dropped"));
    ldb_live_close(q);
    ldb_close(db);
}

/* ---- bound parameters ------------------------------------------------------------------ */

static void parameters(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, s TEXT)");
    EXEC(db, "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'a')");
    ldb_stmt *s;
    CHECK(ldb_prepare(db, "SELECT id, v FROM t WHERE v > ?1 AND s = :s ORDER BY v DESC LIMIT ?3",
                      -1, &s, NULL) == LDB_OK);
    CHECK_INT(ldb_bind_parameter_count(s), 3);
    CHECK(ldb_bind_int64(s, 1, 5) == LDB_OK);
    CHECK(ldb_bind_text(s, ldb_bind_parameter_index(s, ":s"), "a", -1) == LDB_OK);
    CHECK(ldb_bind_int64(s, 3, 1) == LDB_OK);
    static struct replica rp;
    memset(&rp, 0, sizeof rp);
    ldb_live *q;
    CHECK(ldb_live_open_stmt(s, replica_apply, &rp, &q) == LDB_OK);
    /* the query keeps its own copies: the statement can change or go */
    CHECK(ldb_bind_int64(s, 1, 1000) == LDB_OK);
    ldb_finalize(s);
    CHECK_INT(rp.n, 1);
    CHECK_STR(rp.rows[0], "3|30");
    EXEC(db, "INSERT INTO t VALUES (4, 40, 'a'), (5, 50, 'b')");
    CHECK_INT(rp.n, 1);
    CHECK_STR(rp.rows[0], "4|40");
    EXEC(db, "DELETE FROM t WHERE id = 4");
    CHECK_STR(rp.rows[0], "3|30");
    ldb_live_close(q);
    ldb_close(db);
}

/* ---- allocation failures ---------------------------------------------------------------- */

static void open_nomem(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER); CREATE INDEX tv ON t(v);"
                "CREATE TABLE u(id INTEGER PRIMARY KEY, t INTEGER);"
                "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3); INSERT INTO u VALUES (1, 1), (2, 3)");
    const char *sql = "SELECT t.id, (SELECT count(*) FROM u WHERE u.t = t.id) FROM t "
                      "WHERE EXISTS (SELECT 1 FROM u WHERE u.t = t.id) ORDER BY v DESC LIMIT 2";
    ldb_live *warm; /* the registry keeps the capacity its first query needed */
    CHECK(ldb_live_open(db, sql, NULL, NULL, &warm) == LDB_OK);
    ldb_live_close(warm);
    int64_t live0 = mem_live();
    for (uint64_t n = 1;; n++) {
        ldb_live *q = NULL;
        mem_fail_at(n, 0);
        int rc = ldb_live_open(db, sql, NULL, NULL, &q);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        if (!failed) {
            CHECK_INT(rc, LDB_OK);
            ldb_live_close(q);
            break;
        }
        CHECKF(rc == LDB_NOMEM, "allocation %llu: %d %s", (unsigned long long)n, rc,
               ldb_errmsg(db));
        CHECK(q == NULL);
        CHECK_INT(mem_live(), live0);
    }
    CHECK_INT(mem_live(), live0);
    ldb_close(db);
}

/* A write with live queries open: each failing allocation either fails
 * the write (database unchanged) or leaves each query right or failed. */
static void write_nomem(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, g INTEGER);"
                "CREATE INDEX tv ON t(v);"
                "INSERT INTO t VALUES (1, 1, 1), (2, 2, 1), (3, 3, 2)");
    static const char *sqls[] = { "SELECT g, count(*), sum(v) FROM t GROUP BY g",
                                  "SELECT id FROM t ORDER BY v DESC LIMIT 2",
                                  "SELECT a.id, b.id FROM t a JOIN t b ON a.g = b.g" };
    static const char *ordered[] = { "SELECT g, count(*), sum(v) FROM t GROUP BY g",
                                     "SELECT id FROM t ORDER BY v DESC, id LIMIT 2",
                                     "SELECT a.id, b.id FROM t a JOIN t b ON a.g = b.g ORDER BY 1, 2" };
    for (uint64_t n = 1; n < 100000; n++) {
        static struct replica rps[3];
        ldb_live *qs[3];
        struct status_log sl[3] = { { 0 } };
        for (int i = 0; i < 3; i++) {
            memset(&rps[i], 0, sizeof rps[i]);
            CHECK(ldb_live_open(db, sqls[i], replica_apply, &rps[i], &qs[i]) == LDB_OK);
            CHECK_INT(ldb_live_set_status_callback(qs[i], log_status, &sl[i]), LDB_OK);
        }
        mem_fail_at(n, 0);
        int rc = ldb_exec(db, "INSERT INTO t VALUES (10, 0, 2), (11, 9, 3)", NULL, NULL);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        int64_t count = -1;
        ldb_stmt *s;
        CHECK(ldb_prepare(db, "SELECT count(*) FROM t", -1, &s, NULL) == LDB_OK);
        CHECK(ldb_step(s) == LDB_ROW);
        count = ldb_row_int64(ldb_stmt_row(s), 0);
        ldb_finalize(s);
        if (rc == LDB_NOMEM)
            CHECK_INT(count, 3); /* the write left no trace */
        else
            CHECKF(rc == LDB_OK && count == 5, "allocation %llu: rc %d count %lld",
                   (unsigned long long)n, rc, (long long)count);
        for (int i = 0; i < 3; i++) {
            if (ldb_live_error(qs[i], NULL) == LDB_OK) {
                if (i == 1)
                    check_equal(db, &rps[i], ordered[i]);
                else
                    check_same_rows(db, &rps[i], ordered[i]);
                CHECK_INT(ldb_live_status(qs[i], NULL), LDB_STATUS_READY);
                CHECK_INT(sl[i].calls, 0);
            } else {
                CHECK_INT(ldb_live_error(qs[i], NULL), LDB_NOMEM);
                CHECK_INT(ldb_live_status(qs[i], NULL), LDB_STATUS_ERROR);
                /* told at once when the write committed; at the next
                 * commit when it was cancelled (no publication) */
                CHECK_INT(sl[i].calls, rc == LDB_OK ? 1 : 0);
            }
            ldb_live_close(qs[i]);
        }
        if (rc == LDB_OK)
            EXEC(db, "DELETE FROM t WHERE id >= 10");
        if (!failed)
            break;
    }
    ldb_close(db);
}

TEST_MAIN(T(nway_join_work), T(unreachable_changes), T(batch_partition),
          T(publication_rules), T(rejections), T(runtime_error_is_terminal), T(window_moves),
          T(parameters),
          T(open_nomem), T(write_nomem))
