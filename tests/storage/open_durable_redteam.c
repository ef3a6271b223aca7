/*
 * open_durable_redteam.c - NOT BUILT (the Makefile builds tests named
 * test_*.c): two defects of durable databases found by red-teaming that
 * have no small fix. Each case asserts the behaviour a fix should give
 * and fails today; rename the file to test_open_durable_redteam.c to run
 * them.
 *
 * temp_tables_do_not_persist: CREATE TEMP TABLE / TEMP VIEW are accepted
 * (docs/SQL.md) and, in a durable database, logged and checkpointed like
 * any table, so they come back at the next ldb_open, where a program's
 * usual "CREATE TEMP TABLE scratch" then fails ("already exists"). In
 * SQLite they end with the connection. A fix keeps TEMP objects out of
 * the log and the snapshot, and refuses a lasting view (plain or
 * materialized) over a TEMP object, as SQLite does, since it could not be
 * bound again after a reopen.
 *
 * pending_optimistic_writes: the tables hold the visible state, pending
 * optimistic writes included, and the log records it as committed. After
 * a reopen (a crash, or a close while a mutation is unconfirmed) the
 * pending writes are ordinary rows: the layer that could take them back
 * (bases and chains) is gone, so a rejection the upstream sends later
 * can never undo them. A fix logs the synced state (the bases) for
 * overlaid keys (what the case asserts), or persists the pending layer.
 */
#include "durable_util.h"

static ldb *open_at(const char *path)
{
    ldb *db;
    int rc = ldb_open(path, &db);
    CHECKF(rc == LDB_OK, "open %s: %d %s", path, rc, ldb_errmsg(NULL));
    return db;
}

static void temp_tables_do_not_persist(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "temp.ldb");
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE kept(a)");
    EXEC(db, "CREATE TEMP TABLE scratch(a)");
    EXEC(db, "INSERT INTO scratch VALUES (1)");
    EXEC(db, "CREATE TEMP VIEW scratch_view AS SELECT a FROM scratch");
    CHECK_FAILS(db, "CREATE VIEW lasting AS SELECT a FROM scratch", LDB_ERROR);
    ldb_close(db);
    db = open_at(path);
    CHECK_FAILS(db, "SELECT * FROM scratch", LDB_ERROR);
    CHECK_FAILS(db, "SELECT * FROM scratch_view", LDB_ERROR);
    EXEC(db, "SELECT * FROM kept");
    EXEC(db, "CREATE TEMP TABLE scratch(a)"); /* the program's next run */
    ldb_close(db);
    durable_rmdir(dir);
}

static void pending_optimistic_writes(void)
{
    char *dir = durable_tmpdir(), path[300];
    durable_path(path, sizeof path, dir, "opt.ldb");
    ldb *db = open_at(path);
    EXEC(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)");
    EXEC(db, "INSERT INTO t VALUES (1, 'synced')");
    CHECK_INT(ldb_optimistic_begin(db), LDB_OK);
    EXEC(db, "UPDATE t SET v = 'pending' WHERE k = 1");
    EXEC(db, "INSERT INTO t VALUES (2, 'pending')");
    ldb_optimistic *o = NULL;
    CHECK_INT(ldb_optimistic_commit(db, NULL, NULL, &o), LDB_OK);
    CHECK_INT(ldb_optimistic_state(o), LDB_OPTIMISTIC_PENDING);
    store_keep_files(db->store); /* a crash while the mutation is unconfirmed */
    ldb_close(db);
    ldb_optimistic_free(o);
    db = open_at(path);
    char *rows = durable_query(db, "SELECT k, v FROM t");
    CHECK_STR(rows, "2:1|4:synced|\n"); /* today: 1 'pending' and 2 'pending' */
    free(rows);
    ldb_close(db);
    durable_rmdir(dir);
}

TEST_MAIN(T(temp_tables_do_not_persist), T(pending_optimistic_writes))
