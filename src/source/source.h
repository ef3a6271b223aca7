/*
 * source.h - the demand plane: tables loaded by a provider (livedb.h,
 * "sources"), the requests live queries' demand turns into, sync
 * transactions, readiness. The API layer owns one src_registry per
 * database and calls it from exactly one dispatch point, src_pump, when
 * its outermost call on the database ends (and from ldb_source_poll).
 *
 * The ldb_request_*, ldb_pred_*, ldb_sync_* and ldb_receipt_* functions of
 * livedb.h are defined in this layer (request.c, sync.c): they take no
 * database lock and may run on any thread. Everything else here runs with
 * the database's mutex held.
 */
#ifndef LDB_SOURCE_SOURCE_H
#define LDB_SOURCE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "livedb.h"

struct store;
struct table;
struct live_registry;
struct mv_registry;
struct src_registry;

/* What the API gives the registry. lock/unlock take and release the
 * database's mutex (unlock at depth 0 is a dispatch point); wrote is
 * called after each applied write statement. */
struct src_env {
    struct store *store;
    struct live_registry *live;
    struct mv_registry *mv;
    void *ctx;
    void (*lock)(void *ctx);
    void (*unlock)(void *ctx);
    void (*wrote)(void *ctx);
};

int src_registry_new(const struct src_env *env, struct src_registry **out);
/* Detaches every source (ldb_close, after the live registry is freed: no
 * query is left to call the demand hooks). */
void src_registry_free(struct src_registry *r);

/* Whether a dispatch point has work: queued items, or demand to request
 * or release. Cheap; any moment the mutex is held. */
bool src_pump_wanted(const struct src_registry *r);
/* The dispatch point: the caller holds the mutex, and no statement,
 * explicit transaction or callback is under way. */
void src_pump(struct src_registry *r);
/* True while a provider callback runs (the API refuses what providers may
 * not do). */
bool src_in_provider(const struct src_registry *r);
/* The queue's file descriptor (made on first use; -1 on failure). */
int src_fd(struct src_registry *r);

/* ldb_source_attach on table t; msg gets the reason of a failure. */
int src_attach(struct src_registry *r, struct table *t, int mode, const ldb_provider *p,
               void *ctx, ldb_source **out, char *msg, size_t msglen);
void src_detach(ldb_source *s);
/* ldb_source_stop / ldb_source_start. */
int src_stop(ldb_source *s);
int src_start(ldb_source *s);
const char *src_table_name(const ldb_source *s);
struct src_registry *src_registry_of(const ldb_source *s);
/* The env's ctx (the API's database). */
void *src_registry_user(const struct src_registry *r);
void src_stats(const ldb_source *s, ldb_source_stats *out);
/* ldb_live_retry: new requests for q's (a root's whole tree's) failed demand. */
void src_retry(struct src_registry *r, ldb_live *q);

/* Optimistic transactions (optimistic.c). The API opens the transaction
 * (store_set_optimistic) and, at ldb_optimistic_commit, before storage
 * commits: src_opt_prepare records its net change as mutations (LDB_ERROR
 * with msg for DDL or a table without a declared key; LDB_NOMEM), then
 * src_opt_install once the store committed (returns the program's
 * reference) or src_opt_cancel if it did not. */
struct opt_txn;
int src_opt_prepare(struct src_registry *r, struct opt_txn **out, char *msg, size_t n);
ldb_optimistic *src_opt_install(struct src_registry *r, struct opt_txn *x);
void src_opt_cancel(struct src_registry *r, struct opt_txn *x);
void src_set_resolved_callback(struct src_registry *r, ldb_resolved_fn fn, void *ctx);
void src_opt_stats(const struct src_registry *r, ldb_optimistic_stats *out);
/* A durable database reopened: its pending transactions, as its outbox
 * tables keep them, pending again (outbox.c). LDB_CORRUPT or LDB_NOMEM
 * with msg; the registry is then to be freed. */
int src_opt_restore(struct src_registry *r, char *msg, size_t n);
/* The pending transactions in commit order: *out (owned by the caller,
 * mem_free) holds a reference to each (ldb_optimistic_free). */
int src_opt_pending(struct src_registry *r, ldb_optimistic ***out, size_t *n);

#endif
