/*
 * source_internal.h - the demand plane's structures, shared by the files
 * of src/source:
 *
 *   registry.c  the registry, the queue, attach/detach, the pump
 *   demand.c    plans, parameters, owners, acquisitions, readiness
 *   request.c   requests: predicate trees, SQL text, accessors
 *   sync.c      sync transactions, receipts, applying them
 *   optimistic.c  optimistic transactions: the pending layer, resolution
 *
 * Demand is kept at three levels (seed 000, "Demand grouping and
 * ownership"):
 *   plan   [source, fixed predicate, key column]: the demand plan identity;
 *   param  one key value of a plan (a root plan has one, without a key),
 *          with the owners that want it and its current acquisition;
 *   owner  one query or child handle wanting one param.
 * An acquisition is an ldb_request: one grouped request per plan and pump
 * round for every param that had none. A param whose last owner retires
 * leaves its acquisition; an acquisition with no param left is released
 * (aborted first if unsettled, then unload_subset, exactly once).
 *
 * Threads: only the fields marked "any thread" are touched without the
 * database's mutex (atomics, or the queue's own mutex).
 */
#ifndef LDB_SOURCE_INTERNAL_H
#define LDB_SOURCE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/hmap.h"
#include "base/ptrmap.h"
#include "base/vec.h"
#include "live/live.h"
#include "source/source.h"
#include "value/value.h"

struct src_param;
struct src_query;

/* ---- requests (request.c) ---- */

struct ldb_pred {
    int kind, op, coll;
    const char *column;         /* the table's column name (borrowed) */
    uint32_t n;                 /* children or values */
    struct ldb_pred *kids;
    value *vals;
};

enum acq_state { ACQ_TENTATIVE, ACQ_ACTIVE, ACQ_OK, ACQ_FAILED };

struct ldb_request {
    atomic_int refs;            /* any thread */
    atomic_int aborted;         /* any thread */
    atomic_int settled;         /* ldb_request_settle was called (any thread) */
    ldb_source *src;
    uint64_t id;
    /* immutable data (owned) */
    struct ldb_pred *pred;      /* NULL: every row */
    char *sql;
    value *params;
    uint32_t nparams;
    /* the core's (mutex) */
    enum acq_state state;
    bool current;               /* the core's acquisition, not yet released */
    bool release_tried;         /* abort/unload done (set before calling) */
    bool in_load;               /* load_subset is running */
    bool participant;           /* made by its source's replay, not yet settled
                                   or released: the replay waits for it */
    bool persisted;             /* a revalidation of persisted rows (demand.c) */
    /* grouped (ldb_request_keys): the IN node of the key set, in pred */
    const struct ldb_pred *keys;
    /* ordered (ldb_request_order) */
    value cursor;               /* a page's: rows after it (owned) */
    bool has_cursor;
    const char *order_col;      /* NULL: unordered */
    bool order_desc;
    int64_t order_limit;        /* -1: every row */
    char *errmsg;               /* FAILED: the provider's message */
    VEC(struct src_param *) params_here; /* params acquired by it (NULL: left) */
    uint32_t nlive;             /* non-NULL entries of params_here */
};

struct strbuf;
void pred_free(struct ldb_pred *p);
void pred_clear(struct ldb_pred *p);
int pred_copy(const struct ldb_pred *src, struct ldb_pred *dst);
int pred_value_copy(const value *v, value *out);
/* The fixed predicate of demand point d (NULL: none). */
int pred_from_demand(const struct live_demand *d, const value *params, uint32_t nparams,
                     struct ldb_pred **out);
/* The identity text of a plan: fixed predicate (values typed, inline), key column. */
int pred_ident(const struct ldb_pred *fixed, int32_t key_col, struct strbuf *sb);

/* A new request for plan pl's params ps[0..n) (the core holds one ref). */
struct src_plan;
int request_new(struct src_plan *pl, struct src_param *const *ps, size_t n, ldb_request **out);
void request_free(ldb_request *r);

/* ---- demand (demand.c) ---- */

struct src_plan {
    ldb_source *src;
    char *ident;                /* canonical text of the fixed part + key */
    uint64_t hash;
    struct ldb_pred *fixed;     /* owned; NULL: no fixed conjunct */
    int32_t key_col;            /* -1: a root plan */
    uint8_t key_coll;
    hmap params;                /* key hash -> struct src_param * */
    VEC(struct src_param *) fresh; /* params with owners and no acquisition */
    bool queued;                /* on the source's fresh-plan list */
    uint32_t nparams;
    int32_t order_col;          /* >= 0: an ordered plan (ordered.c), one per
                                   query: its window loads in pages */
    bool order_desc;
    ldb_live *q;                /* an ordered plan's query */
};

/* What an ordered param's next request asks (ordered.c). */
enum ord_step {
    ORD_PAGE,                   /* the first `limit` rows after cov (or from
                                   the start without cov) */
    ORD_TIE,                    /* every row whose order value is tie */
    ORD_FULL                    /* every row (the retry after a failure) */
};

struct src_order {
    enum ord_step step;
    bool has_cov;               /* the prefix up to cov (inclusive) is loaded */
    bool all;                   /* ...or everything is: a page brought nothing */
    value cov;                  /* owned */
    value tie;                  /* ORD_TIE: the value (owned) */
    int64_t limit;              /* ORD_PAGE */
    int64_t had;                /* ORD_PAGE: rows after cov before it */
    bool done;                  /* the window's rows are all loaded */
    bool holding;               /* it holds its query until done */
    bool recheck;               /* a write may have emptied part of the window */
    bool txn_hold;              /* held while a sync transaction applies */
    /* settled steps, kept acquired while the window lives: a provider
     * that feeds changes of what its loaded requests ask for keeps
     * feeding the window (released when it goes, or by a FULL) */
    VEC(ldb_request *) kept;
};

struct src_owner {
    struct src_query *qs;
    struct src_param *param;
    struct src_owner *next_in_q;
    struct src_owner *prev_in_param, *next_in_param;
};

/* A row held by persisted retention (ldb_source.persist). */
struct persist_row {
    row *row;                   /* the row at attach (a reference) */
    uint32_t next;              /* the next one of its param, + 1 (0: none) */
    bool revalidated;           /* a sync write of its key came since */
};

struct src_param {
    struct src_plan *plan;
    value key;                  /* owned; NULL for a root plan */
    ldb_request *acq;           /* current acquisition, or NULL */
    uint32_t acq_slot;          /* its index in acq->params_here */
    bool failed;                /* its last acquisition failed: until retry */
    bool fresh;                 /* in plan->fresh */
    char *errmsg;               /* failed: why (owned) */
    uint32_t nowners;
    struct src_owner *owners;
    struct src_order *ord;      /* an ordered plan's param (owned), or NULL */
    uint32_t persist_first;     /* persisted plan: its first persist row, + 1 */
};

struct src_query {
    ldb_live *q;
    struct src_query *root;     /* the root query's (itself for a root) */
    struct src_query *next_kid, *prev_kid, *kids; /* a root's handles */
    struct src_owner *owners;
    uint32_t uncovered, failed; /* its own owners (valid when not dirty) */
    const char *errmsg;         /* borrowed from a failed param */
    bool dirty;                 /* on the registry's dirty list (intrusive:
                                   marking one never fails) */
    struct src_query *prev_dirty, *next_dirty;
};

/* ---- the source, the registry ---- */

struct ldb_source {
    struct src_registry *reg;
    struct table *table;
    char *name;                 /* owned copy: any thread reads it */
    uint32_t ncols;             /* declared columns (any thread) */
    int mode;
    ldb_provider p;
    void *ctx;
    pthread_t home;             /* the thread that attached it */
    hmap plans;                 /* ident hash -> struct src_plan * */
    VEC(struct src_plan *) fresh_plans;
    VEC(ldb_request *) releases; /* acquisitions left by every param */
    ldb_request *eager;         /* EAGER: the request for every row */
    struct src_plan *all;       /* EAGER: the plan every point maps to */
    /* Persisted retention (law 11): the rows the table held at attach,
     * owned through a plan on the first key column (one param per value;
     * for a composite key its request is a superset) until their
     * revalidation settles. Each such row is in persist (a reference),
     * found by primary key through persist_keys and listed under its param;
     * a sync write of its key marks it revalidated. At the param's
     * settlement an unmarked one is gone at the source: its row goes to
     * persist_gone (a reference), deleted at the next pump (retain.c). */
    struct src_plan *persisted;
    hmap persist_keys;          /* table key hash -> index in persist */
    VEC(struct persist_row) persist;
    VEC(row *) persist_gone;
    bool persist_retry;         /* its request could not be made: next dispatch */
    struct {                    /* a truncate's replay (law 9) */
        bool active;
        uint32_t pending;       /* participants */
        VEC(ldb_live *) held;   /* root queries held until it succeeds */
    } replay;
    atomic_uint_fast64_t queued; /* items in the queue (any thread) */
    atomic_bool detached;       /* any thread */
    atomic_uint_fast64_t session; /* ldb_source_stop/start (any thread) */
    bool stopped;
    bool retain;                /* LDB_SOURCE_RETAIN_OWNED (retain.c) */
    bool sweep;                 /* demand retired: unowned rows to delete */
    ldb_source_stats st;
};

/* ---- optimistic transactions (optimistic.c) ---- */

/* The public handle: one allocation shared by the program and the core
 * (refs); immutable after commit but for state (and msg, written once
 * before state). */
struct opt_pubmut {
    int kind;                   /* LDB_MUTATION_* */
    uint32_t ncols;
    const char *table;          /* owned copy */
    value *before, *after;      /* ncols private copies each, or NULL */
};

struct ldb_optimistic {
    atomic_int refs;            /* any thread */
    atomic_int state;           /* any thread */
    atomic_bool orphan;         /* its database closed (any thread) */
    uint64_t id;
    struct src_registry *reg;
    pthread_t home;             /* the committing thread */
    char *msg;                  /* REJECTED: why (owned) */
    uint32_t nmut;
    struct opt_pubmut *muts;    /* owned */
    struct opt_txn *txn;        /* the core's record while pending (mutex) */
};

enum opt_fate { OPT_KEEP, OPT_CONFIRM, OPT_REJECT };

struct opt_key;
struct opt_mut {
    struct opt_txn *txn;
    struct opt_key *key;
    uint8_t kind;               /* LDB_MUTATION_* */
    row *before, *after;        /* references, or NULL */
};

struct opt_txn {
    ldb_optimistic *h;          /* the core's reference */
    struct opt_txn *prev, *next; /* the pending list, in commit order */
    uint32_t nmut;
    struct opt_mut *muts;       /* owned */
    uint8_t fate;               /* enum opt_fate: decided in the step */
    bool outboxed;              /* outbox_commit wrote it (not yet committed) */
    char *why;                  /* OPT_REJECT: the message (owned) */
};

/* One overlaid row: a key some pending transaction wrote. */
struct opt_table;
struct opt_key {
    struct opt_table *ot;
    row *keyrow;                /* a row with the key (a reference) */
    row *base;                  /* the synced row (a reference), or NULL */
    bool unknown;               /* a truncate voided the base: taken to be
                                   the first mutation's before-row */
    VEC(struct opt_mut *) chain; /* pending mutations, commit order */
    /* a step's proposal, installed when its statement commits */
    bool linked;                /* counted in table.pending (a commit wrote it);
                                   else parked by the step (opt_park) or made
                                   by a commit not installed yet */
    bool touched, queued, synced, nset, nunknown;
    row *nbase;
    int64_t kid;                /* its row in the outbox's keys (outbox.c), or 0 */
};

struct opt_table {
    struct table *t;
    hmap keys;                  /* key hash -> struct opt_key * */
};

struct opt_row;
struct opt_layer {
    VEC(struct opt_table *) tables;
    struct opt_txn *head, *tail;
    uint64_t next_id;
    /* a step (sync transaction or resolution) */
    VEC(struct opt_key *) touched;
    VEC(struct opt_key *) work; /* keys to recompute, FIFO from work_at */
    size_t work_at;
    VEC(struct opt_txn *) fated;
    VEC(ldb_optimistic *) notify; /* resolved, to report (references) */
    VEC(value) scratch;         /* recomputed rows' values (borrowed) */
    VEC(struct opt_row) rows;   /* a round's rows to insert (optimistic.c) */
    ldb_resolved_fn resolved;
    void *resolved_ctx;
    ldb_optimistic_stats st;    /* pending and rows kept current */
    int64_t next_kid;           /* the outbox's last key id (outbox.c) */
};

/* A queued item: a sync transaction, a settlement, or a resolution. */
struct ldb_sync;
struct src_item {
    struct src_item *next;
    ldb_source *src;            /* NULL for a resolution */
    struct ldb_sync *txn;       /* a commit, or NULL */
    ldb_request *req;           /* a settlement: its request (a ref) */
    ldb_optimistic *opt;        /* a resolution: its handle (a ref) */
    int rc;                     /* a settlement's code; a resolution's fate */
    char *msg;
};

struct src_registry {
    struct src_env env;
    VEC(ldb_source *) sources;
    ptrmap queries;             /* ldb_live * -> struct src_query * */
    struct src_query *dirty;    /* statuses to recompute (src_query.next_dirty) */
    uint64_t next_id;
    uint32_t in_provider;
    bool pumping;
    bool work;                  /* demand to request or release */
    /* the queue (any thread, under qmu) */
    pthread_mutex_t qmu;
    struct src_item *head, *tail;
    atomic_uint_fast64_t nqueued;
    int fd;                     /* eventfd, or -1 */
    struct opt_layer opt;
    bool signaled;
};

/* Whether a[0..n) and b[0..n) are identical (value_identical). */
static inline bool same_vals(const value *a, const value *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!value_identical(&a[i], &b[i]))
            return false;
    return true;
}

/* registry.c */
int queue_push(struct src_registry *r, struct src_item *it);
/* The source of table t, or NULL. */
ldb_source *src_of_table(const struct src_registry *r, const struct table *t);
void provider_enter(struct src_registry *r);
void provider_leave(struct src_registry *r);

/* demand.c */
void demand_hooks(struct src_registry *r, struct live_demand_hooks *h);
/* Requests every fresh param, releases every left acquisition; returns
 * whether it did anything. */
bool demand_dispatch(struct src_registry *r);
/* A settlement of req (drained from the queue). */
void demand_settle(struct src_registry *r, ldb_request *req, int rc, const char *msg);
/* Recomputes the dirty queries' statuses and calls their callbacks. */
void demand_publish_statuses(struct src_registry *r);
/* Detach: every acquisition of s released, its plans freed. */
void demand_detach(ldb_source *s);
/* Stop: the same, and the queries its demand served fail terminally. */
int demand_stop(ldb_source *s);
void demand_free_plan(struct src_plan *pl);
/* The EAGER source's one request. */
int demand_eager(ldb_source *s);
/* Persisted retention for the rows t holds at attach, under query-owned
 * retention: a param for each value of the first key column, owned by the
 * retention, requested (grouped) at the next pump. LDB_NOMEM leaves
 * nothing. */
int demand_persisted(ldb_source *s);
/* A sync write of s applied to the row with primary key key[0..npk) (key
 * order): the source has spoken for it, so a revalidation that settles
 * later does not delete it (whichever request or feed the write came
 * from: a write after the revalidation's snapshot is newer than it). */
void demand_revalidated(ldb_source *s, const value *key);
/* A truncate of s is about to apply: hold every query its demand serves. */
int demand_replay_hold(ldb_source *s);
/* It applied: every logical demand of s is acquired again. */
void demand_replay_start(ldb_source *s);
/* It failed to apply: the holds it took end (nothing changed). */
void demand_replay_cancel(ldb_source *s);
/* Ends replays whose participants all settled (publishing their
 * replacements), or whose demand is all gone. */
void demand_replay_check(struct src_registry *r);

/* For ordered.c: a query's status to recompute; p to request next; p
 * failed with msg (ERROR until a retry). */
void demand_query_dirty(struct src_registry *r, struct src_query *qs);
int demand_param_fresh(struct src_registry *r, struct src_param *p);
void demand_param_failed(struct src_registry *r, struct src_param *p, const char *msg);
/* The param of pl whose key is identical to key, or NULL. */
struct src_param *demand_param_of(const struct src_plan *pl, const value *key);

/* ordered.c */
/* The ordered state of a new param of an ordered plan. */
int ordered_init(struct src_param *p);
void ordered_free(struct src_param *p);
/* The cursor/tie part of p's next request (NULL: none), added to the
 * plan's fixed predicate; and its order. */
int ordered_pred(const struct src_param *p, struct ldb_pred **out);
/* p is about to be requested: its query is held until done. */
void ordered_hold(struct src_param *p);
/* p's request settled OK: the next step, or done. */
void ordered_settled(struct src_registry *r, struct src_param *p);
/* p failed: the next request will be authoritative (ORD_FULL). */
void ordered_failed(struct src_param *p);
/* Whether p's demand is covered (readiness). */
bool ordered_covered(const struct src_param *p);
/* The window of q grew, or writes changed s: done params re-check. */
void ordered_window_moved(struct src_registry *r, ldb_live *q);
void ordered_source_wrote(ldb_source *s);
/* Runs the re-checks the above asked for. */
void ordered_recheck(struct src_registry *r);
/* Around applying a sync transaction of s: its windows are held, so a
 * write that empties part of one publishes only with its repair. */
void ordered_txn_begin(ldb_source *s);
void ordered_txn_end(ldb_source *s);
/* An ordered window of s that holds its query, or NULL. */
struct src_param *ordered_holding(const ldb_source *s);

/* retain.c */
bool pred_match(const struct ldb_pred *p, const struct table *t, const value *vals);
/* Whether some demand of s owns the row vals (law 11). */
bool retain_owned(const ldb_source *s, const value *vals);
/* Deletes the rows no demand owns any more, per source that needs it. */
bool retain_sweep(struct src_registry *r);
/* Deletes the persisted rows their revalidation did not bring back. */
bool retain_sweep_persisted(struct src_registry *r);

/* sync.c */
/* Applies (or drops) a queued transaction; frees it. */
void sync_apply(struct src_registry *r, struct ldb_sync *t);
void sync_drop(struct ldb_sync *t, int state);
/* Whether t writes s's table (its first source or another). */
bool sync_writes(const struct ldb_sync *t, const ldb_source *s);

enum sync_kind { SYNC_INSERT, SYNC_UPSERT, SYNC_UPDATE, SYNC_DELETE, SYNC_TRUNCATE };

/* optimistic.c: a step is a sync transaction or a resolution, applied in
 * one storage statement (internal mode): opt_sync_write, opt_truncate and
 * opt_mark propose; opt_settle recomputes the visible rows and writes them;
 * opt_step_end installs (ok) or forgets the proposal, then opt_notify
 * reports what resolved. */
struct opt_key *opt_find(const struct src_registry *r, const struct table *t,
                         const value *cols);
/* A sync write (op: the sync kind, vals coerced) of an overlaid key k. */
int opt_sync_write(struct src_registry *r, struct opt_key *k, int op, const value *vals,
                   char *msg, size_t n);
/* A truncate of t: overlaid rows' bases become unknown (the truncate
 * leaves their stored rows to the recomputation). */
int opt_truncate(struct src_registry *r, const struct table *t);
int opt_mark(struct src_registry *r, ldb_optimistic *h, enum opt_fate fate, const char *why);
/* A synced write (op, vals) of a key nobody overlays, whose stored row is
 * old, collided with an optimistic row: the key joins the step as an
 * overlaid key with no chain, and the collision is judged on the step's
 * result when opt_settle writes the rows (a synced row always wins). */
int opt_park(struct src_registry *r, struct table *t, row *old, const value *vals, int op,
             char *msg, size_t n);
int opt_settle(struct src_registry *r, char *msg, size_t n);
void opt_step_end(struct src_registry *r, bool ok);
void opt_notify(struct src_registry *r);
/* A queued resolution (item from the queue); LDB_NOMEM: queue it again. */
int opt_resolve(struct src_registry *r, struct src_item *it);
/* A step of its own: proposal(r, ctx, msg, n) (opt_sync_write, opt_mark...)
 * then the recomputation, in one internal storage statement; installed
 * or forgotten as it went, and what resolved reported. */
typedef int (*opt_propose_fn)(struct src_registry *r, void *ctx, char *msg, size_t n);
int opt_step(struct src_registry *r, opt_propose_fn proposal, void *ctx);
/* Reopening a durable database's pending layer (outbox.c): the overlaid
 * key of t with keyrow's key, made with base and unknown (references
 * passed in either way); LDB_CORRUPT if t has it already. */
int opt_restore_key(struct src_registry *r, struct table *t, row *keyrow, row *base,
                    bool unknown, int64_t kid, struct opt_key **out);
/* A pending transaction id of n mutations (their rows: references
 * passed in either way), appended to the pending list in commit order. */
struct opt_restored_mut {
    struct opt_key *key;
    int kind;                   /* LDB_MUTATION_* */
    row *before, *after;
};
int opt_restore_txn(struct src_registry *r, uint64_t id, struct opt_restored_mut *muts,
                    uint32_t n);

/* outbox.c: in a durable database the pending layer is kept in two
 * tables of the database itself, written in the statements that change
 * it, so that it is committed, logged and recovered with the rows it
 * explains. outbox_commit: x's mutations and its new keys, in the open
 * transaction (a savepoint the caller rolls back if storage does not
 * commit). outbox_step: at the end of a step's recomputation, the bases
 * it proposes and the transactions it resolves. outbox_restore: at open.
 * In-memory databases have no outbox (all three do nothing). */
int outbox_commit(struct src_registry *r, struct opt_txn *x, uint64_t id, char *msg, size_t n);
/* Storage did not commit x: its outbox rows (and tables) go. */
void outbox_cancel(struct src_registry *r);
int outbox_step(struct src_registry *r, char *msg, size_t n);
int outbox_restore(struct src_registry *r, char *msg, size_t n);
/* The registry closes: pending transactions are dropped, handles orphaned. */
void opt_free(struct src_registry *r);

#endif
