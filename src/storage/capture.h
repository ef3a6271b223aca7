/*
 * capture.h - change capture: consolidated deltas of table changes, and
 * the hooks through which the layers above receive them.
 *
 * A delta lists, per table, the net changes over a stretch of the undo
 * log, keyed by primary key: for each key, the row before the stretch
 * (old) and the row after it (new_row). old == NULL is an insert,
 * new_row == NULL a delete, both set an update (the key may be the same
 * row identity only: a primary key change is a delete of the old key and
 * an insert of the new one). Keys whose net change is nothing are left
 * out: inserted then deleted, or updated back to an identical row
 * (value_identical on every column; 5 -> 5.0 is a change).
 *
 * Order: tables in the order of their first change in the stretch;
 * within a table, keys in the order of their first change.
 *
 * Ownership: a delta owns one reference to every row in it and frees
 * them in delta_free. Deltas handed to hooks are borrowed for the call;
 * retain rows to keep them.
 */
#ifndef LDB_STORAGE_CAPTURE_H
#define LDB_STORAGE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "value/row.h"

struct store;
struct table;
struct table_index;

struct change {
    row *old;                  /* NULL: insert */
    row *new_row;              /* NULL: delete */
};

struct table_delta {
    struct table *table;
    const struct change *changes;
    size_t n;
};

struct delta {
    size_t from, to;           /* the stretch of the log it covers */
    bool schema_changed;       /* the stretch holds DDL (tables or indexes
                                  created or dropped) */
    struct table_delta *tables;
    size_t ntables;
    struct change *changes;    /* all changes, grouped by table */
    size_t nchanges;
};

/* The changes of one table in d, or NULL when it has none. */
const struct table_delta *delta_for_table(const struct delta *d,
                                          const struct table *t);
/* Frees d and releases its rows; NULL is a no-op. */
void delta_free(struct delta *d);

/* ---- subscribers ------------------------------------------------------------- */

/*
 * The layers above (materialized views, live queries) register with the
 * store once and learn everything from its hooks: changes (statement and
 * commit deltas), rollbacks (the deltas given back, then one settled
 * call), publication once a commit is complete, dropped indexes, and
 * whether a table may be dropped. Every hook is optional (NULL).
 */

enum subscriber_kind {
    /*
     * Called at the end of every successful statement with the changes
     * since this subscriber last consumed (materialized views). The hook
     * may write tables: those writes belong to the same statement and
     * transaction, and every statement subscriber (this one included)
     * then receives them as a further delta, until no subscriber has
     * anything new (at most STORE_MAX_ROUNDS rounds, else the statement
     * fails).
     */
    SUB_STATEMENT,
    /* Called at commit with the net change of the transaction since the
     * subscriber joined it (live queries), also when that change is only
     * DDL (schema_changed, no rows): tables and indexes dropped by the
     * transaction are still readable during the hooks and freed after. */
    SUB_COMMIT
};

struct store_hooks {
    /*
     * SUB_STATEMENT. Return LDB_OK when d is consumed. Any other code fails
     * the statement (set the message with store_error); the hook must then
     * have left its own state as before the call: it has not consumed d.
     */
    int (*statement)(void *ctx, struct store *s, const struct delta *d);
    /*
     * SUB_COMMIT, phase one: do everything that can fail (apply d to
     * private state, prepare the publication). Any error cancels the
     * commit: every subscriber that prepared gets commit_finish(false),
     * and the transaction stays open with its changes. No table writes.
     */
    int (*commit_prepare)(void *ctx, struct store *s, const struct delta *d);
    /* SUB_COMMIT, phase two: committed says whether to publish (true) or
     * to drop what prepare did (false). Cannot fail. No table writes. */
    void (*commit_finish)(void *ctx, struct store *s, bool committed);
    /*
     * Both kinds: changes this subscriber had seen were rolled back (by
     * ROLLBACK, ROLLBACK TO or a failed statement). It receives each
     * delta it consumed, newest first, and must apply its negation; the
     * tables are already restored when it is called. A subscriber that
     * joined inside a transaction also receives, last, the changes made
     * before it joined that were rolled back (its starting state), or
     * undone == NULL when they could not be listed for lack of memory:
     * it must then resynchronise from the tables. Cannot fail; no writes.
     */
    void (*rollback)(void *ctx, struct store *s, const struct delta *undone);
    /*
     * Both kinds: a rollback (of a failed statement, ROLLBACK or ROLLBACK
     * TO) is complete: every rollback hook has run and the tables show the
     * restored state. Called once per rollback, before a rollback that
     * ends the transaction ends it, so store_mark still names the rolled
     * back transaction, at the position rolled back to. The place to redo
     * private state against the restored tables (a dataflow run). Cannot
     * fail; no writes.
     */
    void (*settled)(void *ctx, struct store *s);
    /*
     * Both kinds: a commit is complete and the store is out of every
     * statement, transaction and hook: the place to publish what
     * commit_finish installed (callbacks that may read tables). Called
     * once per commit (store_stmt_end in autocommit, store_commit, the
     * store_release that commits), in subscription order. Reading and
     * store_unsubscribe are allowed; writes, transaction control and
     * store_subscribe get LDB_MISUSE.
     */
    void (*published)(void *ctx, struct store *s);
    /*
     * Both kinds: store_drop_index dropped ix, an index of t (not through
     * the drop of t), inside the open statement: ix is out of t's index
     * list and stays allocated until the drop commits. The hook may write
     * tables (the writes belong to the statement). An error (message set
     * with store_error) is returned by store_drop_index with the drop
     * done: the caller fails the statement, whose rollback undoes it.
     */
    int (*index_dropped)(void *ctx, struct store *s, struct table *t, struct table_index *ix);
    /*
     * Both kinds: may t be dropped (store_drop_table, store_check_drop)?
     * LDB_OK, or a refusal (LDB_ERROR, message set with store_error) that
     * stops the drop before anything changes. No writes.
     */
    int (*check_drop)(void *ctx, struct store *s, struct table *t);
};

/* A registration; freed by store_unsubscribe or store_close. */
struct subscription;

/* Most hook rounds in one statement end (a cycle of views never settles). */
#define STORE_MAX_ROUNDS 64

/*
 * Registers hooks (copied) with ctx. The subscriber's starting state is
 * the tables as they are now, including the open transaction's changes.
 * LDB_NOMEM possible. Not allowed from inside a hook (LDB_MISUSE).
 */
int store_subscribe(struct store *s, enum subscriber_kind kind,
                    const struct store_hooks *hooks, void *ctx,
                    struct subscription **out);
/* Removes a registration; no hook of it is called afterwards. Allowed
 * from inside any hook, including its own. */
void store_unsubscribe(struct store *s, struct subscription *sub);
/*
 * SUB_STATEMENT: wants(ctx, t) says whether the subscriber cares about
 * changes of table t (NULL: every table). A stretch of the log that
 * changed no table it cares about is passed over without building a
 * delta or calling its hook, and so is never given back by a rollback.
 * wants must not call the store.
 */
void store_subscription_filter(struct subscription *sub,
                               bool (*wants)(void *ctx, const struct table *t));

/* ---- pulling changes ---------------------------------------------------------- */

/*
 * A position in the open transaction's change log. A mark goes stale at
 * commit, rollback, and any ROLLBACK TO (even to a later savepoint).
 */
struct store_mark {
    uint64_t txn;
    uint64_t epoch;
    size_t pos;
};
struct store_mark store_mark(const struct store *s);
/* The consolidated changes of the open transaction so far (caller owns
 * *out, delta_free). LDB_MISUSE outside a transaction, LDB_NOMEM. */
int store_txn_changes(struct store *s, struct delta **out);
/*
 * The consolidated changes made since mark (caller owns *out, delta_free).
 * LDB_MISUSE for a stale mark, LDB_NOMEM.
 */
int store_changes_since(struct store *s, struct store_mark mark,
                        struct delta **out);

#endif
