/*
 * test_live_oracle.c - live queries against the one-shot executor.
 *
 * Random transactions (inserts, updates, deletes, multi-statement
 * transactions, rollbacks, savepoints, failing statements) over data with
 * NULLs, duplicates, NaN, -0.0 and ties. Every open live query keeps a
 * replica rebuilt only from its change batches (starting empty: the
 * initial result is the first batch). After every transaction each
 * replica must equal the one-shot result of the same SQL, in order for
 * ORDER BY queries (whose orders here are total), and equal what
 * ldb_live_read returns. Batch positions are checked as they are applied.
 */
#include "test.h"
#include "test_db.h"

#include "base/mem.h"
#include "livedb.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

/* ---- rendering rows ------------------------------------------------------- */

#define MAXROWS 4096
#define ROWLEN 256

/* A row as text, each value with its type letter. A row too long for
 * ROWLEN fails the test: cut text could make two different rows equal. */
static void render(const ldb_row *r, char *out)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < ldb_row_columns(r); i++) {
        len += (size_t)snprintf(out + len, ROWLEN - len, "%s%c:", i ? "|" : "",
                                "NBIRTXAC"[ldb_row_type(r, i)]);
        if (len < ROWLEN)
            len += ldb_row_format(r, i, out + len, ROWLEN - len);
        CHECKF(len < ROWLEN, "a row longer than %d bytes: %s...", ROWLEN, out);
    }
}

struct rows {
    int n;
    char (*r)[ROWLEN];
};

static void rows_init(struct rows *rs)
{
    rs->n = 0;
    rs->r = malloc(sizeof(*rs->r) * MAXROWS);
}

static void rows_free(struct rows *rs) { free(rs->r); }

/* Collects rows; more than MAXROWS stops the statement (LDB_ABORT, which
 * the callers check), never a silently shorter result. */
static int collect(void *ctx, const ldb_row *row)
{
    struct rows *rs = ctx;
    if (rs->n == MAXROWS)
        return 1;
    render(row, rs->r[rs->n++]);
    return 0;
}

static int cmp_text(const void *a, const void *b) { return strcmp(a, b); }

/* ---- a live query and its replica -------------------------------------------- */

struct lq {
    const char *sql;
    bool ordered;
    ldb_live *q;
    struct rows replica;
    int batches;
};

static void remove_at(struct rows *rs, int64_t pos)
{
    memmove(rs->r[pos], rs->r[pos + 1], (size_t)(rs->n - pos - 1) * ROWLEN);
    rs->n--;
}

static void insert_at(struct rows *rs, int64_t pos, const char *row)
{
    memmove(rs->r[pos + 1], rs->r[pos], (size_t)(rs->n - pos) * ROWLEN);
    snprintf(rs->r[pos], ROWLEN, "%s", row);
    rs->n++;
}

static int find_row(const struct rows *rs, const char *row)
{
    for (int i = 0; i < rs->n; i++)
        if (strcmp(rs->r[i], row) == 0)
            return i;
    return -1;
}

static void check_counts(const ldb_change *c)
{
    CHECK(c->kind >= LDB_CHANGE_INSERT && c->kind <= LDB_CHANGE_DELETE);
    CHECK((c->before != NULL) == (c->kind != LDB_CHANGE_INSERT));
    CHECK((c->after != NULL) == (c->kind != LDB_CHANGE_DELETE));
    CHECK(!c->before || c->before_count >= 1);
    CHECK(!c->after || c->after_count >= 1);
    CHECK(c->key != NULL);
}

/* Copies of the batch's other rows before c's position, on the before
 * side (or the after side). */
static int64_t others_before(const ldb_change *c, const ldb_change *all, size_t n, bool after)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const ldb_change *d = &all[i];
        if (d == c)
            continue;
        if (after && d->after && d->after_pos < c->after_pos)
            k += d->after_count;
        if (!after && d->before && d->before_pos < c->before_pos)
            k += d->before_count;
    }
    return k;
}

/* An update changes something: a value (identity: 5 -> 5.0 and -0.0 ->
 * 0.0 are changes), the count, or its place among the rows the batch does
 * not name; "an unchanged row is never reported" (livedb.h). The same
 * position may be a new place when rows around it moved. */
static void check_real_update(const struct lq *l, const ldb_change *c, const ldb_change *all,
                              size_t n)
{
    char before[ROWLEN], after[ROWLEN];
    render(c->before, before);
    render(c->after, after);
    CHECKF(strcmp(before, after) != 0 || c->before_count != c->after_count ||
               c->before_pos - others_before(c, all, n, false) !=
                   c->after_pos - others_before(c, all, n, true),
           "%s: update of an unchanged row %s (count %lld, position %lld)", l->sql, before,
           (long long)c->before_count, (long long)c->before_pos);
}

/* Ordered: remove befores by descending before_pos, then insert afters by
 * ascending after_pos; each position must hold the row it names. */
static void apply_ordered(struct lq *l, const ldb_change *c, size_t n)
{
    char row[ROWLEN];
    bool done[512] = { false };
    CHECK(n <= 512);
    for (;;) {
        int best = -1;
        for (size_t i = 0; i < n; i++)
            if (c[i].before && !done[i] && (best < 0 || c[i].before_pos > c[best].before_pos))
                best = (int)i;
        if (best < 0)
            break;
        done[best] = true;
        render(c[best].before, row);
        for (int64_t k = 0; k < c[best].before_count; k++) {
            int64_t pos = c[best].before_pos + (c[best].before_count - 1 - k);
            CHECKF(pos >= 0 && pos < l->replica.n, "%s: before_pos %lld of %d", l->sql,
                   (long long)pos, l->replica.n);
            CHECKF(strcmp(l->replica.r[pos], row) == 0, "%s: row at %lld is %s, batch says %s",
                   l->sql, (long long)pos, l->replica.r[pos], row);
            remove_at(&l->replica, pos);
        }
    }
    memset(done, 0, sizeof done);
    for (;;) {
        int best = -1;
        for (size_t i = 0; i < n; i++)
            if (c[i].after && !done[i] && (best < 0 || c[i].after_pos < c[best].after_pos))
                best = (int)i;
        if (best < 0)
            break;
        done[best] = true;
        render(c[best].after, row);
        for (int64_t k = 0; k < c[best].after_count; k++) {
            int64_t pos = c[best].after_pos + k;
            CHECKF(pos >= 0 && pos <= l->replica.n, "%s: after_pos %lld of %d", l->sql,
                   (long long)pos, l->replica.n);
            insert_at(&l->replica, pos, row);
        }
    }
}

static void apply_unordered(struct lq *l, const ldb_change *c, size_t n)
{
    char row[ROWLEN];
    for (size_t i = 0; i < n; i++) {
        CHECK(c[i].before_pos == -1 && c[i].after_pos == -1);
        if (!c[i].before)
            continue;
        render(c[i].before, row);
        for (int64_t k = 0; k < c[i].before_count; k++) {
            int at = find_row(&l->replica, row);
            CHECKF(at >= 0, "%s: deleted row %s is not in the replica", l->sql, row);
            remove_at(&l->replica, at);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!c[i].after)
            continue;
        render(c[i].after, row);
        for (int64_t k = 0; k < c[i].after_count; k++) {
            CHECK(l->replica.n < MAXROWS);
            snprintf(l->replica.r[l->replica.n++], ROWLEN, "%s", row);
        }
    }
}

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct lq *l = ctx;
    (void)q;
    CHECKF(n > 0, "%s: empty batch published", l->sql);
    l->batches++;
    for (size_t i = 0; i < n; i++) {
        check_counts(&c[i]);
        if (c[i].kind == LDB_CHANGE_UPDATE)
            check_real_update(l, &c[i], c, n);
    }
    if (l->ordered)
        apply_ordered(l, c, n);
    else
        apply_unordered(l, c, n);
}

/* ---- comparing ------------------------------------------------------------------ */

static void compare(ldb *db, struct lq *l)
{
    const char *msg;
    int err = ldb_live_error(l->q, &msg);
    CHECKF(err == LDB_OK, "%s: live query failed: %s", l->sql, msg ? msg : "");
    /* allocated once: a megabyte per compare made the sanitizer build
     * spend minutes poisoning fresh memory */
    static struct rows want, read;
    if (!want.r) {
        rows_init(&want);
        rows_init(&read);
        CHECK(want.r && read.r);
    }
    want.n = read.n = 0;
    int rc = ldb_exec(db, l->sql, collect, &want);
    CHECKF(rc == LDB_OK, "%s: one-shot failed: %s", l->sql, ldb_errmsg(db));
    CHECK(ldb_live_read(l->q, collect, &read) == LDB_OK);
    CHECK_INT(ldb_live_count(l->q), read.n);
    struct rows got = l->replica;
    if (!l->ordered) {
        qsort(want.r, (size_t)want.n, ROWLEN, cmp_text);
        qsort(read.r, (size_t)read.n, ROWLEN, cmp_text);
        qsort(got.r, (size_t)got.n, ROWLEN, cmp_text);
    }
    int n = want.n > got.n ? want.n : got.n;
    for (int i = 0; i < n; i++) {
        const char *w = i < want.n ? want.r[i] : "(none)";
        const char *g = i < got.n ? got.r[i] : "(none)";
        const char *r = i < read.n ? read.r[i] : "(none)";
        CHECKF(strcmp(w, g) == 0, "%s\n  row %d: one-shot %s, replica %s (%d vs %d rows)",
               l->sql, i, w, g, want.n, got.n);
        CHECKF(strcmp(w, r) == 0, "%s\n  row %d: one-shot %s, ldb_live_read %s", l->sql, i, w,
               r);
    }
}

/* ---- data and history ------------------------------------------------------------- */

static const char *schema =
    "CREATE TABLE t1(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);"
    "CREATE INDEX t1a ON t1(a);"
    "CREATE INDEX t1c ON t1(c DESC);"
    "CREATE TABLE t2(id INTEGER PRIMARY KEY, t1id INTEGER, x INTEGER, s TEXT COLLATE NOCASE);"
    "CREATE INDEX t2t1 ON t2(t1id);"
    "CREATE TABLE t3(k INTEGER, v INTEGER);";

static void bind_random_value(rng *r, ldb_stmt *s, int i, char kind)
{
    /* 'k': an integer that is rarely NULL (a NULL makes NOT IN empty) */
    if (rng_chance(r, 1, kind == 'k' ? 25 : 6)) {
        ldb_bind_null(s, i);
        return;
    }
    static const char *texts[] = { "x", "y", "Y", "z", "x ", "" };
    static const double reals[] = { 0.0, -0.0, 1.5, 2.0, -1.0, 1e300 };
    switch (kind) {
    case 'i':
    case 'k': ldb_bind_int64(s, i, rng_range(r, -3, 5)); break;
    case 't': ldb_bind_text(s, i, texts[rng_below(r, 6)], -1); break;
    default:
        if (rng_chance(r, 1, 8))
            ldb_bind_double(s, i, NAN);
        else
            ldb_bind_double(s, i, reals[rng_below(r, 6)]);
        break;
    }
}

/* Runs one statement with random values for its parameters. */
static void run_random(ldb *db, rng *r, const char *sql, const char *kinds)
{
    ldb_stmt *s;
    CHECKF(ldb_prepare(db, sql, -1, &s, NULL) == LDB_OK, "%s: %s", sql, ldb_errmsg(db));
    for (int i = 0; kinds[i]; i++)
        bind_random_value(r, s, i + 1, kinds[i]);
    int rc;
    while ((rc = ldb_step(s)) == LDB_ROW)
        ;
    /* constraint failures are part of the game; anything else is not */
    CHECKF(rc == LDB_DONE || rc == LDB_CONSTRAINT, "%s: %d %s", sql, rc, ldb_errmsg(db));
    ldb_finalize(s);
}

static void random_write(ldb *db, rng *r)
{
    char sql[256];
    switch (rng_below(r, 9)) {
    case 0:
    case 1:
        snprintf(sql, sizeof sql, "INSERT INTO t1 VALUES (%d, ?, ?, ?)", (int)rng_range(r, 1, 30));
        run_random(db, r, sql, "itr");
        break;
    case 2:
        snprintf(sql, sizeof sql, "INSERT INTO t2 VALUES (%d, %d, ?, ?)", (int)rng_range(r, 1, 30),
                 (int)rng_range(r, 0, 31));
        run_random(db, r, sql, "it");
        break;
    case 3:
        run_random(db, r, "INSERT INTO t3 VALUES (?, ?)", "ki");
        break;
    case 4:
        snprintf(sql, sizeof sql, "UPDATE t1 SET a = ?, c = ? WHERE id %% 7 = %d",
                 (int)rng_range(r, 0, 6));
        run_random(db, r, sql, "ir");
        break;
    case 5:
        snprintf(sql, sizeof sql, "UPDATE t2 SET t1id = %d, s = ? WHERE id = %d",
                 (int)rng_range(r, 0, 31), (int)rng_range(r, 1, 30));
        run_random(db, r, sql, "t");
        break;
    case 6:
        snprintf(sql, sizeof sql, "DELETE FROM t1 WHERE id = %d", (int)rng_range(r, 1, 30));
        run_random(db, r, sql, "");
        break;
    case 7:
        snprintf(sql, sizeof sql, "DELETE FROM t2 WHERE x = %d", (int)rng_range(r, -3, 5));
        run_random(db, r, sql, "");
        break;
    default:
        snprintf(sql, sizeof sql, "UPDATE t3 SET v = v + 1 WHERE k = %d", (int)rng_range(r, -3, 5));
        run_random(db, r, sql, "");
        break;
    }
}

/* One transaction: autocommitted statements, or BEGIN ... COMMIT/ROLLBACK
 * with savepoints. */
static void random_transaction(ldb *db, rng *r)
{
    int kind = (int)rng_below(r, 4);
    if (kind == 0) {
        random_write(db, r);
        return;
    }
    EXEC(db, "BEGIN");
    int n = (int)rng_range(r, 1, 5);
    for (int i = 0; i < n; i++) {
        if (rng_chance(r, 1, 5)) {
            EXEC(db, "SAVEPOINT sp");
            random_write(db, r);
            if (rng_chance(r, 1, 2))
                EXEC(db, "ROLLBACK TO sp"); /* keeps sp open */
            EXEC(db, "RELEASE sp");
        } else {
            random_write(db, r);
        }
    }
    EXEC(db, kind == 3 ? "ROLLBACK" : "COMMIT");
}

/* ---- the queries ------------------------------------------------------------------- */

struct qspec {
    const char *sql;
    bool ordered;
};

static const struct qspec specs[] = {
    { "SELECT * FROM t1", false },
    { "SELECT id, a + 1, b || '!' FROM t1 WHERE a > 0 OR b IS NULL", false },
    { "SELECT b FROM t1 WHERE c >= 1.5", false },
    { "SELECT t1.id, t2.id, t2.x FROM t1 JOIN t2 ON t2.t1id = t1.id", false },
    { "SELECT t1.id, t2.s FROM t1 LEFT JOIN t2 ON t2.t1id = t1.id AND t2.x > 0", false },
    { "SELECT t1.b, t2.s FROM t1 RIGHT JOIN t2 ON t1.a = t2.x", false },
    { "SELECT t1.id, t2.id FROM t1 FULL JOIN t2 ON t1.a = t2.x", false },
    { "SELECT t1.id, t3.v FROM t1 CROSS JOIN t3 WHERE t3.k = t1.a", false },
    { "SELECT a, count(*), sum(c), min(b), max(c), avg(a), total(a) FROM t1 GROUP BY a", false },
    { "SELECT s, count(DISTINCT x), group_concat(x) FROM t2 GROUP BY s HAVING count(*) > 1", false },
    { "SELECT count(*), sum(a), min(c), max(b) FROM t1", false },
    { "SELECT t1id, group_concat(DISTINCT s ORDER BY x DESC), string_agg(x, ';') FROM t2 "
      "GROUP BY t1id",
      false },
    { "SELECT group_concat(t1.b || t2.s), group_concat(DISTINCT t1.a) FROM t1 JOIN t2 ON "
      "t2.t1id = t1.id",
      false },
    { "SELECT DISTINCT a, b FROM t1", false },
    { "SELECT k FROM t3", false },
    { "SELECT a FROM t1 UNION SELECT x FROM t2", false },
    { "SELECT a FROM t1 UNION ALL SELECT k FROM t3", false },
    { "SELECT a FROM t1 INTERSECT SELECT x FROM t2", false },
    { "SELECT a FROM t1 EXCEPT SELECT k FROM t3", false },
    { "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.t1id = t1.id)", false },
    { "SELECT id FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.x = t1.a)", false },
    { "SELECT id, a IN (SELECT x FROM t2) FROM t1", false },
    { "SELECT id FROM t1 WHERE a NOT IN (SELECT k FROM t3)", false },
    { "SELECT id, b NOT IN (SELECT s FROM t2 WHERE t2.x = t1.a) FROM t1", false },
    { "SELECT id, (SELECT count(*) FROM t2 WHERE t2.t1id = t1.id) FROM t1", false },
    { "SELECT id, (SELECT max(x) FROM t2 WHERE t2.x < t1.a) FROM t1", false },
    { "WITH big AS (SELECT * FROM t1 WHERE a > 1) SELECT big.id, t2.x FROM big JOIN t2 ON "
      "t2.t1id = big.id",
      false },
    { "SELECT q.a, q.n FROM (SELECT a, count(*) AS n FROM t1 GROUP BY a) AS q WHERE q.n > 1",
      false },
    { "SELECT id, a FROM t1 ORDER BY a, id", true },
    { "SELECT id, a FROM t1 ORDER BY a DESC NULLS FIRST, id LIMIT 5", true },
    { "SELECT id, c FROM t1 ORDER BY c DESC, id LIMIT 4 OFFSET 2", true },
    { "SELECT id, b, a FROM t1 ORDER BY b NULLS LAST, a, id LIMIT 6", true },
    { "SELECT t1.id, t2.id FROM t1 JOIN t2 ON t2.t1id = t1.id ORDER BY t1.a, t1.id, t2.id "
      "LIMIT 5",
      true },
    { "SELECT a, count(*) FROM t1 GROUP BY a ORDER BY count(*) DESC, a LIMIT 3", true },
    { "SELECT id FROM t1 WHERE a >= 2 ORDER BY a DESC, id LIMIT 3", true },
    /* nesting, subqueries in every clause */
    { "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.t1id = t1.id AND EXISTS "
      "(SELECT 1 FROM t3 WHERE t3.k = t2.x AND t3.v > t1.a))",
      false },
    { "SELECT id, EXISTS (SELECT 1 FROM t3 WHERE t3.k = t1.a) FROM t1", false },
    { "SELECT a, count(*) FROM t1 GROUP BY a HAVING count(*) > (SELECT count(*) FROM t3 WHERE "
      "t3.k = t1.a)",
      false },
    { "SELECT id, CASE WHEN a > 2 THEN (SELECT sum(v) FROM t3 WHERE t3.k = t1.a) ELSE -1 END "
      "FROM t1",
      false },
    { "SELECT id FROM t1 WHERE c > (SELECT avg(x) FROM t2 WHERE t2.t1id = t1.id)", false },
    { "SELECT id, (SELECT s FROM t2 WHERE t2.t1id = t1.id ORDER BY x DESC, id LIMIT 1) FROM t1",
      false },
    { "SELECT q.id, q.n, q.sx FROM (SELECT t1.id, count(t2.id) AS n, sum(t2.x) AS sx FROM t1 "
      "LEFT JOIN t2 ON t2.t1id = t1.id GROUP BY t1.id) AS q WHERE q.n <> 1",
      false },
    { "WITH g AS (SELECT a, count(*) AS n FROM t1 GROUP BY a) SELECT x.a, y.a FROM g x JOIN g y "
      "ON x.n = y.n AND x.a < y.a",
      false },
    /* joins */
    { "SELECT t1.id, t2.id, t3.v FROM t1 JOIN t2 ON t2.t1id = t1.id JOIN t3 ON t3.k = t2.x",
      false },
    { "SELECT t1.id FROM t1 LEFT JOIN t2 ON t2.t1id = t1.id WHERE t2.id IS NULL", false },
    { "SELECT x.id, y.id FROM t1 x JOIN t1 y ON x.a = y.a AND x.id < y.id", false },
    /* expressions, grouping, filters */
    { "SELECT id FROM t1 WHERE a IN (1, 3, 5) OR b LIKE 'y%' OR c BETWEEN 0.5 AND 2.5", false },
    { "SELECT a % 3, count(*), sum(c) FROM t1 GROUP BY a % 3", false },
    { "SELECT t1id, count(*) FILTER (WHERE x > 0), sum(x) FILTER (WHERE s IS NOT NULL) FROM t2 "
      "GROUP BY t1id",
      false },
    { "SELECT 1, 'constant'", false },
    /* ordered windows over set operations, DISTINCT and subqueries */
    { "SELECT a FROM t1 UNION SELECT x FROM t2 ORDER BY 1 DESC LIMIT 4", true },
    { "SELECT DISTINCT a FROM t1 ORDER BY a LIMIT 3 OFFSET 1", true },
    { "SELECT id, (SELECT count(*) FROM t2 WHERE t2.t1id = t1.id) AS n FROM t1 ORDER BY n DESC, "
      "id LIMIT 5",
      true },
};

#define NQUERIES (int)(sizeof specs / sizeof specs[0])

static struct lq queries[NQUERIES];
static int total_batches[NQUERIES];

static void run_history(uint64_t seed, int steps)
{
    rng r;
    rng_seed(&r, seed);
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, schema);
    for (int i = 0; i < 20; i++)
        random_write(db, &r);
    for (int i = 0; i < NQUERIES; i++) {
        struct lq *l = &queries[i];
        memset(l, 0, sizeof *l);
        l->sql = specs[i].sql;
        l->ordered = specs[i].ordered;
        rows_init(&l->replica);
        l->batches = 0;
        int rc = ldb_live_open(db, l->sql, on_change, l, &l->q);
        CHECKF(rc == LDB_OK, "open %s: %s", l->sql, ldb_errmsg(db));
        compare(db, l);
    }
    for (int s = 0; s < steps; s++) {
        random_transaction(db, &r);
        for (int i = 0; i < NQUERIES; i++)
            compare(db, &queries[i]);
    }
    for (int i = 0; i < NQUERIES; i++) {
        total_batches[i] += queries[i].batches;
        if (getenv("LDB_VERBOSE"))
            printf("#    %4d batches, %3d rows: %s\n", queries[i].batches, queries[i].replica.n,
                   queries[i].sql);
        ldb_live_close(queries[i].q);
        rows_free(&queries[i].replica);
    }
    ldb_close(db);
}

static void oracle_random_histories(void)
{
    uint64_t seed = test_seed();
    int64_t live0 = mem_live();
    memset(total_batches, 0, sizeof total_batches);
    int histories = 4 * test_scale();
    for (int h = 0; h < histories; h++)
        run_history(seed + (uint64_t)h, 150);
    /* the histories must have moved every query, else they test nothing */
    for (int i = 0; i < NQUERIES; i++) {
        if (!strstr(specs[i].sql, "FROM")) /* reads no table: one batch, its first */
            CHECKF(total_batches[i] == histories, "%s: %d batches", specs[i].sql,
                   total_batches[i]);
        else
            CHECKF(total_batches[i] > histories, "%s: only %d batches", specs[i].sql,
                   total_batches[i]);
    }
    CHECK_INT(mem_live(), live0);
}

TEST_MAIN(T(oracle_random_histories))
