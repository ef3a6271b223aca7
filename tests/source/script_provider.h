/*
 * script_provider.h - a deterministic, scripted source provider for the
 * demand-plane tests (tests/source/).
 *
 * The authoritative rows of one table live in an SQLite database (the
 * caller's, shared by every provider of a test, with the same schema as
 * the livedb table; the primary key is a single INTEGER column, column
 * 0). A request is served by running SELECT * FROM t WHERE <its SQL> in
 * SQLite with its parameters bound, so what the provider delivers is
 * exactly what the request's SQL text asks for.
 *
 * Nothing happens on its own: load_subset only files the request (or
 * fails it, or settles it inside the call, per the provider's mode), and
 * the test drives every write and settlement, in the order it chooses.
 * The provider records every callback, so the tests check the contract's
 * laws on it (sp_check_laws): exactly one unload per request whose
 * load_subset returned LDB_OK, none for the others, abort at most once
 * and only before that unload, and no write by a conforming provider
 * after it saw an abort.
 *
 * Invariant kept for the oracles: every row the provider ever wrote into
 * the cache (the "cached" set) and every authoritative row matching a
 * loaded request is forwarded by the change feed (sp_forward) when the
 * test changes it in SQLite, so a settled request's rows stay current.
 */
#ifndef LDB_TESTS_SCRIPT_PROVIDER_H
#define LDB_TESTS_SCRIPT_PROVIDER_H

#include "livedb.h"
#include "sqlite_cmp.h"
#include "test.h"

#include <sqlite3.h>
#include <stdbool.h>

/* What load_subset does with a new request. */
enum sp_load_mode {
    SP_LOAD_DEFER,  /* file it as pending; the test serves it later */
    SP_LOAD_FAIL,   /* return LDB_ERROR: no load started */
    SP_LOAD_INLINE  /* write every row and settle OK inside the call */
};

/* One request the provider was given, kept until the provider is freed. */
struct sp_req {
    ldb_request *req;  /* referenced while held (see held) */
    uint64_t id;
    int load_rc;       /* what load_subset returned */
    int unloads, aborts;
    int order_abort, order_unload; /* callback sequence numbers (0: none) */
    bool held;         /* the provider still holds its reference */
    bool loaded;       /* load_subset returned LDB_OK and no unload yet */
    bool settled;      /* the provider settled it (once) */
    int settle_rc;
    bool aborted_seen; /* abort was called, or ldb_request_aborted read 1 */
    int writes_after_abort; /* sync transactions it committed after that */
    char *sql;         /* copies, for messages and for the feed */
    int nparams;
    bool ordered;      /* a page (ldb_request_order): the first limit rows */
    char order_col[64];
    int desc;
    int64_t limit;
};

/* A receipt left PENDING by its commit, and whether its request was
 * already aborted then (it must end ABORTED). */
struct sp_receipt {
    ldb_receipt *rc;
    bool must_abort;
};

typedef struct script_provider {
    ldb *db;
    sqlite3 *auth;
    char table[64], pk[64];
    int ncols;
    int mode;                 /* LDB_SOURCE_EAGER or LDB_SOURCE_ON_DEMAND */
    ldb_source *src;
    rng *r;                   /* the test's generator (partial writes) */
    enum sp_load_mode load_mode;
    bool ignore_cancel;       /* non-conforming: keep the reference after
                                 unload and keep writing for the request */
    bool feed_all;            /* forward every change (a superset) */
    bool superset;            /* settles also write some rows not asked for */
    int destroyed;
    int seq;                  /* callback sequence counter */
    struct sp_req **reqs;     /* in the order load_subset saw them */
    int nreqs, capreqs;
    char violation[512];      /* the first law broken inside a callback
                                 (reported by sp_check_laws: a failed CHECK
                                 must not jump out of the library) */
    int64_t *cached;          /* keys ever written into the cache, sorted */
    int ncached, capcached;
    int receipts_applied, receipts_aborted, receipts_failed, receipts_pending;
    struct sp_receipt *pending_receipts; /* receipts seen PENDING */
    int npending_receipts, cappending;
} script_provider;

/* A provider of table (which must exist in both databases), attached in
 * mode. The provider keeps a pointer to r. Returns the attach code; on
 * failure sp->src is NULL and the provider still needs sp_free. */
int sp_init(script_provider *sp, ldb *db, sqlite3 *auth, const char *table, int mode, rng *r);
/* Frees what sp holds (detach or ldb_close first: the callbacks use it);
 * drops the references it still holds. */
void sp_free(script_provider *sp);

/* The request with that id, or NULL. */
struct sp_req *sp_find(script_provider *sp, uint64_t id);
/* The index of a random request that is loaded and not settled, or -1. */
int sp_pick_pending(script_provider *sp);
/* The index of a random request the provider holds that was aborted and
 * that it has not settled (only with ignore_cancel), or -1. */
int sp_pick_zombie(script_provider *sp);
int sp_count_pending(script_provider *sp);

/* Writes up to max rows (a random choice among the request's current
 * matching rows) in one sync transaction of the request. Returns the
 * commit's code; the receipt is checked against the request's state. */
int sp_write_some(script_provider *sp, struct sp_req *q, int max);
/* One transaction of request q (NULL: the change feed) writing the
 * current rows with the given keys (upserts; deletes for keys SQLite no
 * longer has). A conforming provider writes nothing for an aborted
 * request (returns LDB_OK); with ignore_cancel it commits anyway. */
int sp_write_keys(script_provider *sp, struct sp_req *q, const int64_t *pks, int n);
/* Writes all current matching rows of the request in one transaction
 * (parts > 1: spread over that many; with superset, a few other rows
 * too), then settles it LDB_OK. */
int sp_settle_ok(script_provider *sp, struct sp_req *q, int parts);
/* Settles it with code (only: no writes), keeping the provider's books. */
int sp_settle(script_provider *sp, struct sp_req *q, int code, const char *msg);
/* Settles it with an error. */
int sp_settle_fail(script_provider *sp, struct sp_req *q, const char *msg);
/* Drops the reference of a settled or zombie request it still holds
 * after its unload (ignore_cancel). */
void sp_drop(script_provider *sp, struct sp_req *q);

/* The change feed: after the test changed the row with primary key pk in
 * SQLite (inserted, updated or deleted it), forward it when the cache
 * may hold it or a loaded request asks for it (always with feed_all).
 * Returns the commit's code (LDB_OK when nothing was sent). */
int sp_forward(script_provider *sp, int64_t pk);

/* The laws on the recorded callbacks; final: every query is closed (or
 * the source detached), so every loaded request must have been unloaded.
 * Fails the test (CHECKF) with the law's name. */
void sp_check_laws(script_provider *sp, bool final);
/* Receipts seen PENDING must have left that state by now (a dispatch
 * point passed); counts them by their final state. */
void sp_check_receipts(script_provider *sp);

/* A live result (root or child handle) in sqlite_cmp's text form, its
 * LIVE columns left out; in read order. */
void sp_live_rows(ldb_live *q, cmp_result *out);

/* Binds a livedb value to parameter i of st (the request's parameters). */
void sp_bind_value(sqlite3_stmt *st, int i, const ldb_value *v);

#endif
