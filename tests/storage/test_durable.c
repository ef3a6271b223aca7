/*
 * test_durable.c - durable databases (ldb_open(path)): what survives a
 * reopen, exactly; materialized views maintained again; dormant views;
 * the lock and open errors; the PRAGMAs; allocation failure in open,
 * commit and checkpoint; and a seeded random history compared after every
 * reopen with SQLite running the same statements on its own file.
 *
 * The crash, torn-file and disk-fault campaigns are test_durable_crash,
 * test_durable_corrupt and test_durable_faults.
 */
#include "durable_util.h"

#include "base/mem.h"
#include "storage/journal.h"
#include "test_db.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

static ldb *open_at(const char *path)
{
    ldb *db;
    int rc = ldb_open(path, &db);
    CHECKF(rc == LDB_OK, "open %s: %d %s", path, rc, ldb_errmsg(NULL));
    return db;
}

/* Closes db, reopens it, and checks that storage holds the same. */
static ldb *reopen_same(ldb *db, const char *path)
{
    char *before = durable_dump(db);
    ldb_close(db);
    db = open_at(path);
    char *after = durable_dump(db);
    CHECK_STR(after, before);
    free(before);
    free(after);
    return db;
}

static uint64_t file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Every type, odd values included, through the log and a checkpoint. */
static void values_round_trip(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "v.ldb");
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE v(k INTEGER PRIMARY KEY, a ANY, b REAL, c TEXT, d BLOB, e BOOLEAN)");
    EXEC(db, "INSERT INTO v VALUES "
             "(1, NULL, -0.0, '', X'', true), (2, 9223372036854775807, 1e308, 'x', X'00ff00', false),"
             "(-9223372036854775808, -1, 0.1, 'a much longer text than fourteen bytes', "
             "  X'000102030405060708090a0b0c0d0e0f10', NULL),"
             "(3, 'text in ANY', 2.5, 'héllo ☃', X'61', true), (4, 1.5, NULL, NULL, NULL, NULL),"
             "(5, X'dead', -1e-300, 'tab\there', zeroblob(40), false)");
    EXEC(db, "INSERT INTO v(k, b) VALUES (6, 1.0/0.0), (7, -1.0/0.0)");
    EXEC(db, "CREATE MATERIALIZED VIEW agg AS SELECT e, string_agg(c, ',' ORDER BY k) AS cs, "
             "count(*) AS n, sum(k) AS s FROM v GROUP BY e");
    db = reopen_same(db, path); /* the close checkpointed: from the snapshot */
    EXEC(db, "PRAGMA checkpoint_threshold = 0");
    EXEC(db, "UPDATE v SET c = c || '!' WHERE k > 0");
    EXEC(db, "DELETE FROM v WHERE k = 4");
    char wal[320];
    snprintf(wal, sizeof wal, "%s-wal", path);
    /* a handle that dies without closing: the log alone carries them */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        ldb_exec(db, "INSERT INTO v VALUES (8, 'from the child', 8.5, 'c', X'08', true)", NULL,
                 NULL);
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    CHECK(file_bytes(wal) > 32);
    char *before = durable_dump(db);
    /* the child's commit is on disk, not in this handle, whose close
     * must not checkpoint over it */
    store_keep_files(db->store);
    ldb_close(db);
    db = open_at(path);
    char *after = durable_dump(db);
    CHECK(strstr(after, "from the child") != NULL);
    CHECK(strcmp(before, after) != 0);
    free(before);
    free(after);
    char *q = durable_query(db, "SELECT * FROM agg");
    char *body = durable_query(db, "SELECT e, string_agg(c, ',' ORDER BY k), count(*), sum(k) FROM v "
                                   "GROUP BY e");
    CHECK_STR(q, body);
    free(q);
    free(body);
    ldb_close(db);
    CHECK_INT(file_bytes(wal), 32); /* the close checkpointed */
    durable_rmdir(dir);
}

/* ARRAY and RECORD values (a view's include, a user's tables never hold
 * one from SQL) through the codec; a damaged or too deep one is refused. */
static void nested_values(void)
{
    value items[20], names[2], rec;
    for (int i = 0; i < 20; i++)
        items[i] = value_int(i * 1000003);
    CHECK(value_text(&items[7], "a text longer than the inline limit", 35) == LDB_OK);
    value arr;
    CHECK(value_array(&arr, items, 20) == LDB_OK);
    CHECK(value_text(&names[0], "list", 4) == LDB_OK);
    CHECK(value_text(&names[1], "x", 1) == LDB_OK);
    value vals[2] = { arr, value_real(-2.5) };
    CHECK(value_record(&rec, names, vals, 2) == LDB_OK);
    strbuf sb;
    sb_init(&sb);
    enc_value(&sb, &rec);
    CHECK(!sb_error(&sb));
    struct dec d = { (const unsigned char *)sb.p, (const unsigned char *)sb.p + sb.len, false };
    value back;
    CHECK_INT(dec_value(&d, &back), LDB_OK);
    CHECK(d.p == d.end && value_identical(&back, &rec));
    value_release(&back);
    for (size_t cut = 0; cut < sb.len; cut++) { /* every truncation is refused */
        struct dec t = { (const unsigned char *)sb.p, (const unsigned char *)sb.p + cut, false };
        CHECK_INT(dec_value(&t, &back), LDB_CORRUPT);
    }
    sb_free(&sb);
    sb_init(&sb); /* nesting beyond the limit */
    for (int i = 0; i < 100; i++) {
        sb_putc(&sb, LDB_ARRAY);
        enc_varint(&sb, 1);
    }
    sb_putc(&sb, LDB_NULL);
    struct dec deep = { (const unsigned char *)sb.p, (const unsigned char *)sb.p + sb.len, false };
    CHECK_INT(dec_value(&deep, &back), LDB_CORRUPT);
    sb_free(&sb);
    value_release(&rec);
    value_release(&arr);
    for (int i = 0; i < 20; i++)
        value_release(&items[i]);
    value_release(&names[0]);
    value_release(&names[1]);
}

/* Recovery builds an index from the order a snapshot gives, which a
 * damaged snapshot could get wrong: the order is checked, not trusted. */
static void index_order_checked(void)
{
    ldb *db;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER)");
    EXEC(db, "INSERT INTO t VALUES (1, 30), (2, 10), (3, 20), (4, 20)");
    EXEC(db, "CREATE INDEX tv ON t(v)");
    EXEC(db, "CREATE UNIQUE INDEX tk ON t(k)");
    struct table *t = store_find_table(db->store, "t");
    struct table_index *tv = store_find_index(db->store, "tv");
    struct table_index *tk = store_find_index(db->store, "tk");
    row *rows[4];
    for (int64_t k = 1; k <= 4; k++) {
        value key = value_int(k);
        rows[k - 1] = table_lookup(t, &key);
    }
    CHECK_INT(index_build_sorted(tv, rows, 4), LDB_MISUSE); /* not empty */
    /* an empty index of the same definition to build */
    struct index_def def = { "fresh", INDEX_ORDERED, false, tv->parts, tv->nparts, NULL };
    struct table_index ix;
    CHECK(index_init(&ix, t, &def) == LDB_OK);
    CHECK_INT(index_build_sorted(&ix, rows, 4), LDB_ERROR); /* key order, not v's */
    row *dup[4] = { rows[1], rows[2], rows[2], rows[0] };
    CHECK_INT(index_build_sorted(&ix, dup, 4), LDB_ERROR); /* a row twice */
    row *good[4] = { rows[1], rows[2], rows[3], rows[0] };
    CHECK_INT(index_build_sorted(&ix, good, 4), LDB_OK);
    CHECK_INT(index_count(&ix), 4);
    index_destroy(&ix);
    struct index_def udef = { "fresh_u", INDEX_ORDERED, true, tv->parts, tv->nparts, NULL };
    CHECK(index_init(&ix, t, &udef) == LDB_OK);
    CHECK_INT(index_build_sorted(&ix, good, 4), LDB_CONSTRAINT); /* 20 twice */
    index_destroy(&ix);
    (void)tk;
    ldb_close(db);
}

/* Tables, keys, constraints, indexes, views and every arm of
 * materialized views come back as they were made, and keep working. */
static void schema_survives(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "s.ldb");
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL COLLATE NOCASE "
             "UNIQUE, age INTEGER DEFAULT 30, city TEXT)");
    EXEC(db, "CREATE TABLE orders(u INTEGER, n INTEGER, amount REAL, note TEXT DEFAULT 'none', "
             "PRIMARY KEY (u, n), UNIQUE (note, amount))");
    EXEC(db, "CREATE TABLE notes(body TEXT)"); /* hidden rowid */
    EXEC(db, "CREATE INDEX users_age ON users(age DESC NULLS FIRST, city COLLATE RTRIM)");
    EXEC(db, "CREATE INDEX orders_amount ON orders(amount) USING HASH");
    EXEC(db, "CREATE VIEW adults AS SELECT name FROM users WHERE age >= 18");
    EXEC(db, "INSERT INTO users(id, name, age, city) VALUES (1, 'Ann', 40, 'Oslo'), "
             "(2, 'bob', 17, 'Rome'), (3, 'Cy', NULL, NULL)");
    EXEC(db, "INSERT INTO users(name) VALUES ('Dee')");
    EXEC(db, "INSERT INTO orders VALUES (1, 1, 10.5, 'a'), (1, 2, 3, 'b'), (2, 1, 7, 'c')");
    EXEC(db, "INSERT INTO notes VALUES ('one'), ('two'), ('three')");
    EXEC(db, "DELETE FROM notes WHERE body = 'three'");
    EXEC(db, "CREATE MATERIALIZED VIEW by_city AS SELECT city, name FROM users WHERE age > 10");
    EXEC(db, "CREATE MATERIALIZED VIEW totals AS SELECT u, count(*) AS n, sum(amount) AS s, "
             "max(amount) AS top FROM orders GROUP BY u");
    EXEC(db, "CREATE MATERIALIZED VIEW joined AS SELECT users.name, orders.amount FROM users "
             "JOIN orders ON orders.u = users.id");
    EXEC(db, "CREATE MATERIALIZED VIEW over_view AS SELECT name, count(*) AS c FROM joined "
             "GROUP BY name");
    /* a comment inside the statement's text: the parser, not a word match,
     * tells a view's table at reopen */
    EXEC(db, "CREATE /* kept */ MATERIALIZED VIEW by_u AS SELECT u, count(*) AS n FROM orders "
             "GROUP BY u");
    db = reopen_same(db, path);
    /* constraints and defaults still hold */
    CHECK_FAILS(db, "INSERT INTO users(id, name) VALUES (9, 'ANN')", LDB_CONSTRAINT);
    CHECK_FAILS(db, "INSERT INTO users(id) VALUES (10)", LDB_CONSTRAINT);
    CHECK_FAILS(db, "INSERT INTO orders VALUES (1, 1, 0, 'z')", LDB_CONSTRAINT);
    EXEC(db, "INSERT INTO notes VALUES ('four')");
    char *q = durable_query(db, "SELECT rowid, body FROM notes");
    CHECK_STR(q, "2:1|4:one|\n2:2|4:two|\n2:4|4:four|\n"); /* rowid 3 is not reused */
    free(q);
    /* every view maintained again */
    EXEC(db, "INSERT INTO orders(u, n, amount) VALUES (4, 1, 99)");
    EXEC(db, "UPDATE users SET age = 50 WHERE id = 2");
    EXEC(db, "DELETE FROM orders WHERE u = 1 AND n = 1");
    static const char *const pairs[][2] = {
        { "SELECT * FROM by_city", "SELECT city, name FROM users WHERE age > 10" },
        { "SELECT * FROM totals", "SELECT u, count(*), sum(amount), max(amount) FROM orders "
                                  "GROUP BY u" },
        { "SELECT * FROM joined", "SELECT users.name, orders.amount FROM users JOIN orders ON "
                                  "orders.u = users.id" },
        { "SELECT * FROM over_view", "SELECT users.name, count(*) FROM users JOIN orders ON "
                                     "orders.u = users.id GROUP BY users.name" },
        { "SELECT * FROM adults", "SELECT name FROM users WHERE age >= 18" },
        { "SELECT * FROM by_u", "SELECT u, count(*) FROM orders GROUP BY u" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        char *a = durable_query(db, pairs[i][0]), *b = durable_query(db, pairs[i][1]);
        CHECKF(strcmp(a, b) == 0, "%s:\n%s\nbody:\n%s", pairs[i][0], a, b);
        free(a);
        free(b);
    }
    CHECK_FAILS(db, "DROP TABLE orders", LDB_ERROR); /* views read it */
    EXEC(db, "DROP MATERIALIZED VIEW over_view");
    db = reopen_same(db, path);
    CHECK_FAILS(db, "SELECT * FROM over_view", LDB_ERROR);
    ldb_close(db);
    durable_rmdir(dir);
}

/* Only committed work reaches the log: rolled back savepoints and
 * statements leave nothing, DDL inside transactions replays in order. */
static void transactions(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "t.ldb");
    ldb *db = open_at(path);
    EXEC(db, "PRAGMA checkpoint_threshold = 0");
    EXEC(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT UNIQUE)");
    EXEC(db, "BEGIN");
    EXEC(db, "INSERT INTO t VALUES (1, 'a')");
    EXEC(db, "SAVEPOINT s");
    EXEC(db, "INSERT INTO t VALUES (2, 'b')");
    EXEC(db, "CREATE TABLE gone(x)");
    EXEC(db, "ROLLBACK TO s");
    EXEC(db, "INSERT INTO t VALUES (3, 'c')");
    EXEC(db, "RELEASE s");
    EXEC(db, "CREATE TABLE tmp(x INTEGER PRIMARY KEY)");
    EXEC(db, "INSERT INTO tmp VALUES (1)");
    EXEC(db, "DROP TABLE tmp");
    EXEC(db, "CREATE TABLE tmp(y TEXT PRIMARY KEY)");
    EXEC(db, "INSERT INTO tmp VALUES ('again')");
    EXEC(db, "UPDATE t SET k = 10 WHERE k = 1"); /* a key change */
    EXEC(db, "COMMIT");
    CHECK_FAILS(db, "INSERT INTO t VALUES (4, 'c')", LDB_CONSTRAINT);
    EXEC(db, "BEGIN");
    EXEC(db, "DELETE FROM t");
    EXEC(db, "ROLLBACK");
    EXEC(db, "CREATE INDEX tv ON t(v)");
    EXEC(db, "BEGIN");
    EXEC(db, "DROP INDEX tv");
    EXEC(db, "CREATE INDEX tv2 ON t(v DESC)");
    EXEC(db, "COMMIT");
    /* reopen from the log alone (no checkpoint) */
    char *before = durable_dump(db);
    store_keep_files(db->store);
    ldb_close(db);
    db = open_at(path);
    char *after = durable_dump(db);
    CHECK_STR(after, before);
    CHECK(strstr(after, "gone") == NULL && strstr(after, "'b'") == NULL);
    free(before);
    free(after);
    ldb_close(db);
    durable_rmdir(dir);
}

/* A view over a user aggregate: readable at once, writes refused until
 * the program registers the aggregate, then maintained. */
static int sumsq_step(void *ctx, void *state, const ldb_row *args)
{
    (void)ctx;
    int64_t x = ldb_row_int64(args, 0);
    *(int64_t *)state += x * x;
    return LDB_OK;
}
static int sumsq_final(void *ctx, const void *state, ldb_result *out)
{
    (void)ctx;
    ldb_result_int64(out, *(const int64_t *)state);
    return LDB_OK;
}
static const ldb_aggregate sumsq = { .flags = LDB_DETERMINISTIC, .state_size = sizeof(int64_t), .step = sumsq_step,
                                     .finalize = sumsq_final };

static int never_settle(void *ctx, ldb_request *req)
{
    (void)ctx, (void)req;
    return LDB_OK;
}

struct pending {
    ldb_optimistic *h;
    int n;
};

static void take_pending(void *ctx, ldb_optimistic *o)
{
    struct pending *p = ctx;
    ldb_optimistic_ref(o);
    p->h = o;
    p->n++;
}

static void dormant_view(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "d.ldb");
    ldb *db = open_at(path);
    CHECK_INT(ldb_create_aggregate(db, "sumsq", 1, &sumsq), LDB_OK);
    EXEC(db, "CREATE TABLE x(g INTEGER, v INTEGER, PRIMARY KEY (g, v))");
    EXEC(db, "INSERT INTO x VALUES (1, 2), (1, 3), (2, 4)");
    EXEC(db, "CREATE MATERIALIZED VIEW sq AS SELECT g, sumsq(v) AS s FROM x GROUP BY g");
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK); /* pending at the close */
    EXEC(db, "INSERT INTO x VALUES (3, 1)");
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, NULL), LDB_OK);
    ldb_close(db);
    db = open_at(path);
    char *q = durable_query(db, "SELECT * FROM sq");
    CHECK_STR(q, "2:1|2:13|\n2:2|2:16|\n2:3|2:1|\n");
    free(q);
    CHECK_FAILS(db, "INSERT INTO x VALUES (2, 5)", LDB_ERROR);
    CHECKF(strstr(ldb_errmsg(db), "materialized view sq") != NULL, "%s", ldb_errmsg(db));
    /* nor may a source's sync writes or a pending transaction's
     * resolution change x meanwhile: attach is refused, and the
     * resolution waits */
    static const ldb_provider none = { .load_subset = never_settle };
    ldb_source *src;
    CHECK_INT(ldb_source_attach(db, "x", LDB_SOURCE_EAGER, &none, NULL, &src), LDB_ERROR);
    CHECKF(strstr(ldb_errmsg(db), "materialized view sq") != NULL, "%s", ldb_errmsg(db));
    struct pending p = { .n = 0 };
    CHECK_INT(ldb_optimistic_pending(db, take_pending, &p), LDB_OK);
    CHECK_INT(p.n, 1);
    CHECK_INT(ldb_optimistic_reject(p.h, "undo"), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_ERROR);
    CHECK_INT(ldb_optimistic_state(p.h), LDB_OPTIMISTIC_PENDING);
    CHECK_INT(dur_query_int(db, "SELECT count(*) FROM x"), 4);
    CHECK_INT(ldb_create_aggregate(db, "sumsq", 1, &sumsq), LDB_OK);
    CHECK_INT(ldb_source_poll(db), LDB_OK); /* the rejection applies now */
    CHECK_INT(ldb_optimistic_state(p.h), LDB_OPTIMISTIC_REJECTED);
    ldb_optimistic_free(p.h);
    EXEC(db, "INSERT INTO x VALUES (2, 5)");
    q = durable_query(db, "SELECT * FROM sq");
    CHECK_STR(q, "2:1|2:13|\n2:2|2:41|\n");
    free(q);
    ldb_close(db);
    durable_rmdir(dir);
}

/* No limit of the format cuts a valid schema: 1500 columns, a 600-byte
 * table name, 40 UNIQUE constraints. */
static void wide_schema(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "w.ldb");
    ldb *db = open_at(path);
    strbuf sb;
    sb_init(&sb);
    char name[601];
    memset(name, 'n', 600);
    name[600] = '\0';
    sb_printf(&sb, "CREATE TABLE %s(k INTEGER PRIMARY KEY", name);
    for (int i = 0; i < 1500; i++)
        sb_printf(&sb, ", c%d INTEGER%s", i, i < 40 ? " UNIQUE" : "");
    sb_puts(&sb, ")");
    EXEC(db, sb_str(&sb));
    sb_truncate(&sb, 0);
    sb_printf(&sb, "INSERT INTO %s(k, c0, c1499) VALUES (1, 2, 3)", name);
    EXEC(db, sb_str(&sb));
    db = reopen_same(db, path); /* from the snapshot */
    EXEC(db, "PRAGMA checkpoint_threshold = 0");
    sb_truncate(&sb, 0);
    sb_printf(&sb, "UPDATE %s SET c1 = 5", name);
    EXEC(db, sb_str(&sb));
    char *before = durable_dump(db);
    store_keep_files(db->store);
    ldb_close(db);
    db = open_at(path); /* from the log */
    char *after = durable_dump(db);
    CHECK_STR(after, before);
    free(before);
    free(after);
    sb_free(&sb);
    ldb_close(db);
    durable_rmdir(dir);
}

/* Closing inside a transaction keeps only what was committed; a lost
 * snapshot under a log that extends it is damage, not an empty database. */
static void close_and_lost_files(void)
{
    char *dir = durable_tmpdir(), path[300], wal[320];
    durable_path(path, sizeof path, dir, "l.ldb");
    snprintf(wal, sizeof wal, "%s-wal", path);
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE t(k INTEGER PRIMARY KEY)");
    EXEC(db, "INSERT INTO t VALUES (1)");
    EXEC(db, "BEGIN");
    EXEC(db, "INSERT INTO t VALUES (2)");
    ldb_close(db);
    db = open_at(path);
    char *q = durable_query(db, "SELECT k FROM t");
    CHECK_STR(q, "2:1|\n");
    free(q);
    CHECK_INT(ldb_checkpoint(db), LDB_OK);
    EXEC(db, "INSERT INTO t VALUES (3)");
    store_keep_files(db->store);
    ldb_close(db);
    CHECK(unlink(path) == 0); /* the snapshot the log extends */
    ldb *db2 = NULL;
    CHECK_INT(ldb_open(path, &db2), LDB_CORRUPT);
    CHECKF(strstr(ldb_errmsg(NULL), "newer than the snapshot") != NULL, "%s", ldb_errmsg(NULL));
    FILE *f = fopen(path, "w"); /* made empty by someone: the same */
    CHECK(f);
    fclose(f);
    CHECK_INT(ldb_open(path, &db2), LDB_CORRUPT);
    CHECK(unlink(wal) == 0); /* both gone: a new database */
    db = open_at(path);
    CHECK_INT(store_table_count(db->store), 0);
    ldb_close(db);
    durable_rmdir(dir);
}

/* A provider that answers every request at once with rows 1..3. */
static int three_rows(void *ctx, ldb_request *req)
{
    ldb_source *src = *(ldb_source **)ctx;
    ldb_sync *t;
    CHECK(ldb_sync_begin(src, req, &t) == LDB_OK);
    for (int k = 1; k <= 3; k++) {
        ldb_sync_int64(t, 0, k);
        ldb_sync_text(t, 1, k == 2 ? "two" : "other", -1);
        CHECK(ldb_sync_upsert(t) == LDB_OK);
    }
    CHECK(ldb_sync_commit(t, NULL) == LDB_OK);
    return ldb_request_settle(req, LDB_OK, NULL);
}

static void nop_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)ctx, (void)q, (void)c, (void)n;
}

/* A source's rows persist like any table's; after a reopen they are
 * visible at once, and the table is the program's to attach again. */
static void sourced_rows(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "src.ldb");
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE remote(id INTEGER PRIMARY KEY, name TEXT)");
    ldb_source *src = NULL;
    ldb_provider p = { .load_subset = three_rows };
    CHECK(ldb_source_attach(db, "remote", LDB_SOURCE_ON_DEMAND, &p, &src, &src) == LDB_OK);
    ldb_live *q;
    CHECK(ldb_live_open(db, "SELECT * FROM remote WHERE id < 10", nop_change, NULL, &q) ==
          LDB_OK);
    CHECK(ldb_source_poll(db) == LDB_OK);
    CHECK_INT(ldb_live_count(q), 3);
    CHECK_INT(ldb_checkpoint(db), LDB_OK); /* while attached */
    ldb_live_close(q);
    ldb_close(db);
    db = open_at(path);
    char *rows = durable_query(db, "SELECT * FROM remote");
    CHECK_STR(rows, "2:1|4:other|\n2:2|4:two|\n2:3|4:other|\n");
    free(rows);
    EXEC(db, "UPDATE remote SET name = 'local' WHERE id = 1"); /* a plain table again */
    CHECK(ldb_source_attach(db, "remote", LDB_SOURCE_ON_DEMAND, &p, &src, &src) == LDB_OK);
    CHECK_FAILS(db, "DELETE FROM remote", LDB_ERROR);
    ldb_close(db);
    durable_rmdir(dir);
}

/* One handle per file; clear errors for what cannot be opened. */
static void open_errors(void)
{
    char *dir = durable_tmpdir(), path[300], other[300];
    durable_path(path, sizeof path, dir, "e.ldb");
    ldb *db = open_at(path), *db2 = NULL;
    CHECK_INT(ldb_open(path, &db2), LDB_BUSY);
    CHECK(db2 == NULL);
    CHECKF(strstr(ldb_errmsg(NULL), "open in another handle") != NULL, "%s", ldb_errmsg(NULL));
    pid_t pid = fork();
    if (pid == 0) {
        ldb *c;
        _exit(ldb_open(path, &c) == LDB_BUSY ? 0 : 1);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXEC(db, "BEGIN");
    CHECK_INT(ldb_checkpoint(db), LDB_MISUSE);
    EXEC(db, "ROLLBACK");
    CHECK_INT(ldb_checkpoint(db), LDB_OK);
    ldb_close(db);
    CHECK_INT(ldb_open(durable_path(other, sizeof other, dir, "no/such/dir.ldb"), &db2),
              LDB_CANTOPEN);
    CHECKF(strstr(ldb_errmsg(NULL), "No such file") != NULL, "%s", ldb_errmsg(NULL));
    FILE *f = fopen(durable_path(other, sizeof other, dir, "text.ldb"), "w");
    CHECK(f);
    fputs("this is not a database, just some text that is long enough\n", f);
    fclose(f);
    CHECK_INT(ldb_open(other, &db2), LDB_CORRUPT);
    CHECKF(strstr(ldb_errmsg(NULL), "not a livedb database") != NULL, "%s", ldb_errmsg(NULL));
    CHECK_INT(ldb_open(dir, &db2), LDB_CANTOPEN); /* a directory */
    CHECK(ldb_open(":memory:", &db2) == LDB_OK);
    CHECK_STR(ldb_errmsg(NULL), "not an error"); /* this open did not fail */
    CHECK_INT(ldb_checkpoint(db2), LDB_OK);
    ldb_close(db2);
    durable_rmdir(dir);
}

static void pragmas(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "p.ldb");
    ldb *db = open_at(path);
    char *q = durable_query(db, "PRAGMA synchronous");
    CHECK_STR(q, "2:2|\n");
    free(q);
    static const char *const set[] = { "OFF", "normal", "2", "0", "1" };
    static const char *const want[] = { "2:0|\n", "2:1|\n", "2:2|\n", "2:0|\n", "2:1|\n" };
    for (int i = 0; i < 5; i++) {
        char sql[80];
        snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", set[i]);
        EXEC(db, sql);
        q = durable_query(db, "PRAGMA synchronous");
        CHECK_STR(q, want[i]);
        free(q);
    }
    CHECK_FAILS(db, "PRAGMA synchronous = 3", LDB_ERROR);
    CHECK_FAILS(db, "PRAGMA synchronous = extra", LDB_ERROR);
    CHECK_FAILS(db, "PRAGMA checkpoint_threshold = 'x'", LDB_ERROR);
    /* a small threshold checkpoints as the log grows */
    EXEC(db, "PRAGMA checkpoint_threshold = 2000");
    EXEC(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    char wal[320];
    snprintf(wal, sizeof wal, "%s-wal", path);
    uint64_t most = 0;
    for (int i = 0; i < 200; i++) {
        char sql[120];
        snprintf(sql, sizeof sql, "INSERT INTO t VALUES (%d, 'row number %d')", i, i);
        EXEC(db, sql);
        most = file_bytes(wal) > most ? file_bytes(wal) : most;
    }
    CHECKF(most < 2200, "log grew to %llu", (unsigned long long)most);
    EXEC(db, "PRAGMA wal_checkpoint");
    CHECK_INT(file_bytes(wal), 32);
    db = reopen_same(db, path);
    ldb_close(db);
    durable_rmdir(dir);
}

/* ---- allocation failure ------------------------------------------------------------ */

/* A database with a snapshot and a log to replay, its dump in *want. */
static void nomem_fixture(const char *path, char **want)
{
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE a(k INTEGER PRIMARY KEY, v TEXT, w REAL)");
    EXEC(db, "CREATE INDEX av ON a(v)");
    EXEC(db, "INSERT INTO a VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, 'a long text value "
             "here', 3)");
    EXEC(db, "CREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS n FROM a GROUP BY v");
    CHECK_INT(ldb_checkpoint(db), LDB_OK);
    EXEC(db, "UPDATE a SET v = 'uno' WHERE k = 1");
    EXEC(db, "CREATE TABLE b(x TEXT PRIMARY KEY)");
    EXEC(db, "INSERT INTO b VALUES ('p'), ('q')");
    *want = durable_dump(db);
    store_keep_files(db->store);
    ldb_close(db);
}

static void nomem_open(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "n.ldb");
    char *want;
    nomem_fixture(path, &want);
    int64_t live = mem_live();
    int done = 0;
    for (uint64_t n = 1; !done && n < 100000; n++) {
        for (int persistent = 0; persistent < 2; persistent++) {
            ldb *db = NULL;
            mem_fail_at(n, persistent);
            int rc = ldb_open(path, &db);
            uint64_t failed = mem_failed_count();
            mem_fail_at(0, 0);
            if (rc == LDB_OK) {
                char *got = durable_dump(db);
                CHECK_STR(got, want);
                free(got);
                store_keep_files(db->store);
                ldb_close(db);
                done = failed == 0;
                continue;
            }
            CHECKF(rc == LDB_NOMEM, "n %llu: rc %d %s", (unsigned long long)n, rc,
                   ldb_errmsg(NULL));
            CHECK(db == NULL);
            CHECK_INT(mem_live(), live);
        }
    }
    CHECK(done);
    ldb *db = open_at(path); /* the files were left as they were */
    char *got = durable_dump(db);
    CHECK_STR(got, want);
    free(got);
    free(want);
    ldb_close(db);
    durable_rmdir(dir);
}

/* A commit or a checkpoint that runs out of memory changes nothing, on
 * disk or in the handle. */
static void nomem_commit_and_checkpoint(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "c.ldb");
    char *want;
    nomem_fixture(path, &want);
    free(want);
    ldb *db = open_at(path);
    int done = 0;
    for (uint64_t n = 1; !done && n < 100000; n++) {
        char *before = durable_dump(db);
        mem_fail_at(n, 1);
        int rc = ldb_exec(db, "INSERT INTO a VALUES (100, 'new', 0)", NULL, NULL);
        int crc = rc == LDB_OK ? ldb_checkpoint(db) : LDB_NOMEM;
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "n %llu: %d %s", (unsigned long long)n, rc,
               ldb_errmsg(db));
        CHECKF(crc == LDB_OK || crc == LDB_NOMEM, "n %llu: %d %s", (unsigned long long)n, crc,
               ldb_errmsg(db));
        char *now = durable_dump(db);
        if (rc == LDB_NOMEM)
            CHECK_STR(now, before);
        /* whatever happened, the files hold what the handle holds */
        store_keep_files(db->store);
        ldb_close(db);
        db = open_at(path);
        char *reopened = durable_dump(db);
        CHECK_STR(reopened, now);
        free(before);
        free(now);
        free(reopened);
        if (rc == LDB_OK)
            EXEC(db, "DELETE FROM a WHERE k = 100");
        done = failed == 0;
    }
    CHECK(done);
    ldb_close(db);
    durable_rmdir(dir);
}

/* ---- a random history against SQLite ---------------------------------------------------- */

struct twin {
    ldb *db;
    sqlite3 *lite;
    const char *path, *lite_path;
};

static void both(struct twin *w, const char *sql, bool may_fail)
{
    int a = ldb_exec(w->db, sql, NULL, NULL);
    char *err = NULL;
    int b = sqlite3_exec(w->lite, sql, NULL, NULL, &err);
    sqlite3_free(err);
    CHECKF((a == LDB_OK) == (b == SQLITE_OK), "%s: livedb %d (%s), sqlite %d", sql, a,
           ldb_errmsg(w->db), b);
    CHECKF(may_fail || a == LDB_OK, "%s: %s", sql, ldb_errmsg(w->db));
}

static char *lite_query(sqlite3 *lite, const char *sql)
{
    ldb *tmp;
    CHECK(ldb_open(NULL, &tmp) == LDB_OK);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(lite, sql, -1, &st, NULL) == SQLITE_OK);
    EXEC(tmp, "CREATE TABLE r(a, b, c, d)");
    ldb_stmt *ins;
    CHECK(ldb_prepare(tmp, "INSERT INTO r VALUES (?, ?, ?, ?)", -1, &ins, NULL) == LDB_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < 4; i++) {
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_INTEGER: ldb_bind_int64(ins, i + 1, sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: ldb_bind_double(ins, i + 1, sqlite3_column_double(st, i)); break;
            case SQLITE_TEXT:
                ldb_bind_text(ins, i + 1, (const char *)sqlite3_column_text(st, i),
                              sqlite3_column_bytes(st, i));
                break;
            default: ldb_bind_null(ins, i + 1);
            }
        }
        CHECK(ldb_step(ins) == LDB_DONE);
        ldb_reset(ins);
    }
    sqlite3_finalize(st);
    ldb_finalize(ins);
    char *out = durable_query(tmp, "SELECT * FROM r");
    ldb_close(tmp);
    return out;
}

static void compare(struct twin *w, uint64_t step)
{
    static const char *const qs[] = { "SELECT id, grp, val, txt FROM items",
                                      "SELECT grp, n, total, NULL FROM by_grp" };
    static const char *const lq[] = { "SELECT id, grp, val, txt FROM items",
                                      "SELECT grp, count(*), sum(val), NULL FROM items "
                                      "GROUP BY grp" };
    for (int i = 0; i < 2; i++) {
        char *a = durable_query(w->db, qs[i]), *b = lite_query(w->lite, lq[i]);
        CHECKF(strcmp(a, b) == 0, "step %llu, %s:\nlivedb:\n%s\nsqlite:\n%s",
               (unsigned long long)step, qs[i], a, b);
        free(a);
        free(b);
    }
}

static void random_statement(struct twin *w, rng *r)
{
    char sql[300];
    int64_t id = rng_range(r, 1, 60), g = rng_range(r, 0, 5);
    switch (rng_below(r, 6)) {
    case 0:
    case 1:
        snprintf(sql, sizeof sql, "INSERT INTO items VALUES (%lld, %lld, %lld, 'text %lld')",
                 (long long)id, (long long)g, (long long)rng_range(r, -100, 100),
                 (long long)rng_below(r, 1000));
        both(w, sql, true);
        break;
    case 2:
        snprintf(sql, sizeof sql, "UPDATE items SET val = val + %lld, grp = %lld WHERE id %% 7 = %lld",
                 (long long)rng_range(r, -5, 5), (long long)g, (long long)rng_below(r, 7));
        both(w, sql, false);
        break;
    case 3:
        snprintf(sql, sizeof sql, "DELETE FROM items WHERE id BETWEEN %lld AND %lld",
                 (long long)id, (long long)id + 3);
        both(w, sql, false);
        break;
    case 4:
        snprintf(sql, sizeof sql, "UPDATE items SET id = id + 100 WHERE id = %lld", (long long)id);
        both(w, sql, true);
        break;
    default:
        both(w, "BEGIN", false);
        for (int k = 0; k < 3; k++) {
            snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO items VALUES (%lld, %lld, %d, NULL)",
                     (long long)rng_range(r, 1, 200), (long long)g, k);
            both(w, sql, false);
        }
        both(w, rng_chance(r, 1, 3) ? "ROLLBACK" : "COMMIT", false);
    }
}

static void random_history(void)
{
    uint64_t seed = test_seed();
    rng r;
    rng_seed(&r, seed);
    char *dir = durable_tmpdir(), path[300], lite_path[300];
    struct twin w = { NULL, NULL, durable_path(path, sizeof path, dir, "h.ldb"),
                      durable_path(lite_path, sizeof lite_path, dir, "h.sqlite") };
    w.db = open_at(path);
    CHECK(sqlite3_open(lite_path, &w.lite) == SQLITE_OK);
    both(&w, "CREATE TABLE items(id INTEGER PRIMARY KEY, grp INTEGER, val INTEGER, txt TEXT)",
         false);
    EXEC(w.db, "CREATE MATERIALIZED VIEW by_grp AS SELECT grp, count(*) AS n, sum(val) AS total "
               "FROM items GROUP BY grp");
    EXEC(w.db, "PRAGMA checkpoint_threshold = 3000");
    int steps = 400 * test_scale();
    for (int i = 0; i < steps; i++) {
        random_statement(&w, &r);
        if (rng_chance(&r, 1, 25)) {
            if (rng_chance(&r, 1, 2))
                store_keep_files(w.db->store); /* as if the program had died */
            ldb_close(w.db);
            w.db = open_at(path);
            sqlite3_close(w.lite);
            CHECK(sqlite3_open(lite_path, &w.lite) == SQLITE_OK);
            compare(&w, (uint64_t)i);
        } else if (rng_chance(&r, 1, 40)) {
            CHECK_INT(ldb_checkpoint(w.db), LDB_OK);
        }
    }
    compare(&w, (uint64_t)steps);
    char *rows = durable_query(w.db, "SELECT count(*) FROM items");
    printf("#    random_history: %s", rows); /* the history kept rows */
    CHECK(strcmp(rows, "2:0|\n") != 0);
    free(rows);
    ldb_close(w.db);
    sqlite3_close(w.lite);
    durable_rmdir(dir);
}

TEST_MAIN(T(values_round_trip), T(nested_values), T(index_order_checked), T(schema_survives), T(transactions), T(dormant_view), T(wide_schema), T(close_and_lost_files), T(sourced_rows),
          T(open_errors), T(pragmas), T(nomem_open), T(nomem_commit_and_checkpoint),
          T(random_history))
