/*
 * db_source.c - the sources API of livedb.h that runs under the
 * database's mutex (attach, detach, poll, statuses), and the dispatch
 * point: db_unlock calls db_dispatch when the outermost call on the
 * database ends, so the demand plane (src/source) runs provider code and
 * applies queued sync transactions only between whole calls, never inside
 * a statement, an explicit transaction or a callback. The lock-free half
 * (requests, sync transactions, receipts) is in src/source itself.
 */
#include "api/db_internal.h"

#include "live/live.h"
#include "source/source.h"
#include "storage/table.h"

#include <string.h>

static void env_lock(void *ctx) { db_lock(ctx); }
static void env_unlock(void *ctx) { db_unlock(ctx); }
static void env_wrote(void *ctx) { ((ldb *)ctx)->epoch++; }

int db_sources_open(ldb *db)
{
    struct src_env env = { db->store, db->live, db->mv, db, env_lock, env_unlock, env_wrote };
    return src_registry_new(&env, &db->src);
}

/* Whether the dispatch point may run now. While a view is dormant its
 * queue waits (a confirmation or rejection would write tables it reads). */
static bool can_dispatch(ldb *db)
{
    return db->nactive == 0 && !store_in_transaction(db->store) &&
           !live_in_callback(db->live) && !src_in_provider(db->src) && !db_dormant_refusal(db);
}

bool db_dispatch_wanted(const ldb *db) { return db->src && src_pump_wanted(db->src); }

void db_dispatch(ldb *db)
{
    if (can_dispatch(db))
        src_pump(db->src);
}

const char *db_in_callback(ldb *db)
{
    if (db_mutation_refusal(db))
        return db_mutation_refusal(db);
    if (src_in_provider(db->src))
        return "not allowed inside a source provider callback";
    if (live_in_callback(db->live))
        return "not allowed inside a live query callback";
    return NULL;
}

/* Why a call that changes sources or demand cannot run now, or NULL. */
static const char *busy(ldb *db)
{
    const char *why = db_in_callback(db);
    if (!why && store_in_transaction(db->store))
        why = "not allowed inside a transaction";
    return why;
}

int ldb_source_attach(ldb *db, const char *table, int mode, const ldb_provider *p, void *ctx,
                      ldb_source **out)
{
    if (!db || !out)
        return LDB_MISUSE;
    *out = NULL;
    db_lock(db);
    db_clear_error(db);
    const char *why = busy(db);
    struct table *t = table ? store_find_table(db->store, table) : NULL;
    int rc;
    if (why) {
        rc = db_error(db, LDB_MISUSE, NULL, -1, "ldb_source_attach: %s", why);
    } else if (!t) {
        rc = db_error(db, table ? LDB_NOTFOUND : LDB_MISUSE, NULL, -1, "no such table: %s",
                      table ? table : "(NULL)");
    } else if (db_dormant_refusal(db)) { /* its sync writes would leave the view stale */
        rc = db_error(db, LDB_ERROR, NULL, -1, "%s; register it before attaching a source",
                      db_dormant_refusal(db));
    } else {
        char msg[256];
        rc = src_attach(db->src, t, mode, p, ctx, out, msg, sizeof msg);
        if (rc)
            db_error(db, rc, NULL, -1, "%s", msg);
    }
    db_unlock(db);
    return rc;
}

/* The calls that change sources or demand, run where they may run. */
enum src_call { CALL_DETACH, CALL_STOP, CALL_START, CALL_RETRY };

static int guarded(ldb *db, enum src_call c, void *target)
{
    static const char *const names[] = { "ldb_source_detach", "ldb_source_stop",
                                         "ldb_source_start", "ldb_live_retry" };
    db_lock(db);
    db_clear_error(db);
    const char *why = busy(db);
    int rc = LDB_OK;
    if (why)
        rc = db_error(db, LDB_MISUSE, NULL, -1, "%s: %s", names[c], why);
    else if (c == CALL_DETACH)
        src_detach(target);
    else if (c == CALL_RETRY)
        src_retry(db->src, target);
    else if ((rc = c == CALL_STOP ? src_stop(target) : src_start(target)))
        db_error(db, rc, NULL, -1, "out of memory");
    db_unlock(db);
    return rc;
}

static ldb *source_db(ldb_source *s) { return src_registry_user(src_registry_of(s)); }

int ldb_source_detach(ldb_source *s) { return s ? guarded(source_db(s), CALL_DETACH, s) : LDB_MISUSE; }
int ldb_source_stop(ldb_source *s) { return s ? guarded(source_db(s), CALL_STOP, s) : LDB_MISUSE; }
int ldb_source_start(ldb_source *s) { return s ? guarded(source_db(s), CALL_START, s) : LDB_MISUSE; }

const char *ldb_source_table(ldb_source *s) { return s ? src_table_name(s) : NULL; }

int ldb_source_fd(ldb *db)
{
    if (!db)
        return -1;
    db_lock(db);
    int fd = src_fd(db->src);
    db_unlock(db);
    return fd;
}

int ldb_source_poll(ldb *db)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    int rc = LDB_OK;
    if (db_mutation_refusal(db))
        rc = db_error(db, LDB_MISUSE, NULL, -1, "ldb_source_poll: %s", db_mutation_refusal(db));
    else if (db_dormant_refusal(db))
        rc = db_error(db, LDB_ERROR, NULL, -1, "ldb_source_poll: %s; register it first",
                      db_dormant_refusal(db));
    else if (db->depth > 1 || !can_dispatch(db))
        rc = db_error(db, LDB_MISUSE, NULL, -1,
                      "ldb_source_poll: not allowed inside a callback, a transaction or a "
                      "running statement");
    else
        src_pump(db->src);
    db_unlock(db);
    return rc;
}

void ldb_source_stats_get(ldb_source *s, ldb_source_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    ldb *db = source_db(s);
    db_lock(db);
    src_stats(s, out);
    db_unlock(db);
}

/* ---- readiness of live queries ------------------------------------------------------------- */

int ldb_live_status(ldb_live *q, const char **msg)
{
    if (msg)
        *msg = NULL;
    if (!q)
        return LDB_MISUSE;
    ldb *db = live_db(q);
    db_lock(db);
    int st = live_status(q, msg);
    db_unlock(db);
    return st;
}

int ldb_live_set_status_callback(ldb_live *q, ldb_status_fn fn, void *ctx)
{
    if (!q)
        return LDB_MISUSE;
    ldb *db = live_db(q);
    db_lock(db);
    live_set_status_callback(q, fn, ctx);
    db_unlock(db);
    return LDB_OK;
}

int ldb_live_retry(ldb_live *q) { return q ? guarded(live_db(q), CALL_RETRY, q) : LDB_MISUSE; }
