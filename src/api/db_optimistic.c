/*
 * db_optimistic.c - optimistic transactions as the program opens and
 * commits them (livedb.h, "optimistic transactions"). The transaction is
 * an ordinary storage transaction in optimistic mode (sourced tables and
 * tables with pending rows writable); at commit its net change becomes
 * the pending record (src/source/optimistic.c), prepared before storage
 * commits so that every failure leaves the transaction open and unchanged.
 * The mutation callback runs after the commit with db->in_mutation set:
 * everything that could start loads, wait for readiness or write refuses
 * (db_mutation_refusal).
 */
#include "api/db_internal.h"

#include "source/source.h"

#include <string.h>

static const char *why_not_begin(ldb *db)
{
    const char *why = db_in_callback(db);
    if (!why && store_in_transaction(db->store))
        why = "a transaction is already open";
    return why;
}

int ldb_optimistic_begin(ldb *db)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    db_clear_error(db);
    const char *why = why_not_begin(db);
    int rc = why ? db_error(db, LDB_MISUSE, NULL, -1, "ldb_optimistic_begin: %s", why)
                 : store_begin(db->store);
    if (!why && rc)
        db_error(db, rc, NULL, -1, "%s", store_errmsg(db->store));
    if (!rc) {
        db->optimistic = true;
        store_set_optimistic(db->store, true);
        db->epoch++;
    }
    db_unlock(db);
    return rc;
}

static const char *why_not_commit(ldb *db)
{
    const char *why = db_in_callback(db);
    if (!why && !db->optimistic)
        why = "no optimistic transaction is open";
    if (!why && db->nactive)
        why = "a statement is still running";
    return why;
}

/* Commits the storage transaction; the record goes in or is dropped. */
static int commit(ldb *db, ldb_optimistic **h)
{
    char msg[256];
    struct opt_txn *x;
    int rc = src_opt_prepare(db->src, &x, msg, sizeof msg);
    if (rc)
        return db_error(db, rc, NULL, -1, "%s", msg);
    db->epoch++;
    struct intr *scope = intr_swap(NULL); /* a commit's hooks must not fail halfway */
    store_set_optimistic(db->store, false);
    rc = store_commit(db->store);
    intr_swap(scope);
    if (rc) {
        store_set_optimistic(db->store, true);
        src_opt_cancel(db->src, x);
        return db_error(db, rc, NULL, -1, "%s", store_errmsg(db->store));
    }
    db->optimistic = false;
    *h = src_opt_install(db->src, x);
    return LDB_OK;
}

int ldb_optimistic_commit(ldb *db, ldb_mutation_fn send, void *ctx, ldb_optimistic **out)
{
    if (out)
        *out = NULL;
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    db_clear_error(db);
    const char *why = why_not_commit(db);
    ldb_optimistic *h = NULL;
    int rc = why ? db_error(db, LDB_MISUSE, NULL, -1, "ldb_optimistic_commit: %s", why)
                 : commit(db, &h);
    if (!rc && send) {
        db->in_mutation++;
        send(ctx, h);
        db->in_mutation--;
    }
    if (out)
        *out = h;
    else
        ldb_optimistic_free(h);
    db_unlock(db); /* a dispatch point: resolutions made by send apply now */
    return rc;
}

int ldb_optimistic_pending(ldb *db, ldb_mutation_fn send, void *ctx)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    db_clear_error(db);
    const char *why = send ? db_in_callback(db) : "send is NULL";
    ldb_optimistic **hs = NULL;
    size_t n = 0;
    int rc = why ? db_error(db, LDB_MISUSE, NULL, -1, "ldb_optimistic_pending: %s", why)
                 : src_opt_pending(db->src, &hs, &n);
    if (rc == LDB_NOMEM)
        db_error(db, rc, NULL, -1, "out of memory");
    db->in_mutation++;
    for (size_t i = 0; i < n; i++)
        send(ctx, hs[i]);
    db->in_mutation--;
    for (size_t i = 0; i < n; i++)
        ldb_optimistic_free(hs[i]);
    mem_free(hs);
    db_unlock(db); /* a dispatch point: resolutions made by send apply now */
    return rc;
}

int ldb_set_resolved_callback(ldb *db, ldb_resolved_fn fn, void *ctx)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    src_set_resolved_callback(db->src, fn, ctx);
    db_unlock(db);
    return LDB_OK;
}

void ldb_optimistic_stats_get(ldb *db, ldb_optimistic_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!db)
        return;
    db_lock(db);
    src_opt_stats(db->src, out);
    db_unlock(db);
}
