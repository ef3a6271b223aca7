/*
 * livedb_pg.h - PostgreSQL as a source of livedb tables (library
 * liblivedb-pg, linking libpq; the core library does not depend on it).
 *
 * An ldb_pg connects one livedb database to one PostgreSQL database. The
 * program attaches PostgreSQL tables by name: each becomes a livedb table
 * of the same columns (read from the catalog) fed by a source provider
 * (livedb.h, "sources"), EAGER or ON_DEMAND. Then
 * - every request of an attached table becomes one parameterized SELECT
 *   (predicate, order, limit and cursor translated to PostgreSQL; a
 *   predicate that cannot be translated asks for a superset, which livedb
 *   filters: ldb_pg_explain shows which);
 * - a logical replication stream (pgoutput, a slot and a publication the
 *   adapter creates or is given) applies every PostgreSQL transaction that
 *   touches an attached table as one sync transaction, in commit order.
 *   A change is applied when its row is held locally or matches a current
 *   request; others are ignored. A lost slot or a gap in the stream is a
 *   truncate and replay of every source (livedb.h, ldb_sync_truncate),
 *   never a silent divergence;
 * - ldb_pg_send is a mutation callback (livedb.h, ldb_optimistic_commit):
 *   an optimistic transaction goes upstream as one PostgreSQL transaction,
 *   confirmed when that transaction arrives through the stream, rejected
 *   with the server's message when it fails.
 * docs/ARCHITECTURE.md, "PostgreSQL adapter", gives the consistency
 * argument: a load's rows are applied only once the stream has passed a
 * fence committed after the load's snapshot, and never over a row the
 * stream changed since the load was sent.
 *
 * Types (PostgreSQL -> livedb column): smallint, integer, bigint, oid ->
 * INTEGER; boolean -> INTEGER 0/1; real, double precision, numeric ->
 * REAL (numeric is rounded to a double); text, varchar, char, name,
 * enums, uuid, json, jsonb, date, time, timetz, timestamp, timestamptz,
 * interval, inet, cidr, macaddr -> TEXT (PostgreSQL's text output, with
 * the sessions' TimeZone UTC and DateStyle ISO); bytea -> BLOB; a domain
 * maps as its base type. Any other type (arrays, composites, ranges,
 * money, geometric...) makes ldb_pg_attach fail with LDB_UNSUPPORTED
 * naming the column. Generated columns are not attached (the stream does
 * not carry them).
 *
 * Threads and events. Everything runs on the thread that owns db (its
 * home thread, the one that attached the tables), and never blocks after
 * ldb_pg_open: libpq is used in non-blocking mode. ldb_pg_fd is one file
 * descriptor that is readable whenever the adapter has something to do
 * (a socket is ready, a timer is due, db has queued work); the program
 * polls it and calls ldb_pg_poll, or calls ldb_pg_wait. Neither may be
 * called from a livedb callback (LDB_MISUSE).
 *
 * Connections: one replication connection (the stream), one control
 * connection (fences, optimistic writes, catalog) and cfg.load_connections
 * for loads. When one drops, the adapter reconnects with exponential
 * backoff (50 ms doubling to 5 s); loads in flight are sent again, and
 * the stream resumes from the last transaction applied. Requests still
 * unanswered cfg.fail_after_ms after the server became unreachable fail
 * (the live queries' status turns ERROR with the libpq message; ldb_live_
 * retry asks again). Passwords are never copied into messages.
 */
#ifndef LIVEDB_PG_H
#define LIVEDB_PG_H

#include <stdint.h>

#include "livedb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ldb_pg ldb_pg;

typedef struct ldb_pg_config {
    /* libpq connection string or URI (password, sslmode, ... pass through). */
    const char *conninfo;
    /* The logical replication slot. NULL: a new one named livedb_<random>,
     * dropped by ldb_pg_close (a program that dies leaves it behind, and
     * the server keeps WAL for it until it is dropped). A given name is used as it is when it exists
     * (the stream resumes from it: a gap, when this database does not hold
     * what it confirmed, is a replay) and created when it does not; it is
     * kept by ldb_pg_close. */
    const char *slot;
    /* The publication. NULL: the adapter's own, named as the slot, made
     * when missing and kept or dropped with the slot; tables are added to
     * it as they attach. A given one must exist and publish the attached
     * tables. */
    const char *publication;
    int load_connections;   /* 0: 2 */
    int fail_after_ms;      /* 0: 10000 */
    int rows_per_commit;    /* a load's rows per sync transaction; 0: 4096 */
} ldb_pg_config;

/*
 * Connects (blocking, at most 30 s), checks wal_level = logical, creates
 * the slot and publication as above. *out is the caller's until
 * ldb_pg_close. db must outlive it. LDB_ERROR with ldb_pg_open_error's
 * message (connection refused, authentication, wal_level...),
 * LDB_NOMEM. On failure *out is NULL and nothing is left on the server.
 */
LDB_API int ldb_pg_open(ldb *db, const ldb_pg_config *cfg, ldb_pg **out);
/* Why the last ldb_pg_open of this thread failed (static storage). */
LDB_API const char *ldb_pg_open_error(void);

/*
 * Attaches PostgreSQL table pg_table ("name" or "schema.name") as livedb
 * table local (NULL: pg_table's name without its schema) in mode
 * LDB_SOURCE_EAGER or LDB_SOURCE_ON_DEMAND (with LDB_SOURCE_RETAIN_OWNED
 * or'ed in as wished). Reads the columns and primary key from the catalog
 * (blocking); creates the local table, or checks that an existing one
 * has the same column names in the same order. *out is
 * borrowed (livedb.h, ldb_source_attach). LDB_NOTFOUND (no such table),
 * LDB_UNSUPPORTED (a column type, no primary key, REPLICA IDENTITY
 * NOTHING), LDB_ERROR (server error, local table differs), LDB_MISUSE
 * (attached already), LDB_NOMEM; ldb_pg_errmsg says why. A failed
 * attach drops the local table it made and takes the table out of the
 * adapter's publication; only when even that fails (allocations failing
 * throughout) the empty local table stays, and attaching again reuses it.
 */
LDB_API int ldb_pg_attach(ldb_pg *pg, const char *pg_table, const char *local, int mode,
                          ldb_source **out);

/* The event descriptor (see above); owned by pg. */
LDB_API int ldb_pg_fd(ldb_pg *pg);
/* Does everything that is ready without blocking: reads the sockets,
 * applies the stream and loads, sends what is queued, reconnects, runs
 * db's dispatch point (ldb_source_poll). LDB_OK, or LDB_MISUSE inside a
 * callback. */
LDB_API int ldb_pg_poll(ldb_pg *pg);
/* Waits up to timeout_ms (< 0: forever) for ldb_pg_fd, then polls. */
LDB_API int ldb_pg_wait(ldb_pg *pg, int timeout_ms);
/*
 * Quiescence: polls until every request of the attached tables has
 * settled, every optimistic transaction sent has resolved, and the stream
 * has applied everything the server committed before this call (a fence),
 * and every transaction it applied is visible to new snapshots on the
 * server (so a query run there afterwards sees what livedb shows).
 * LDB_OK; LDB_BUSY when timeout_ms passed first.
 */
LDB_API int ldb_pg_sync(ldb_pg *pg, int timeout_ms);

/*
 * The mutation callback for ldb_optimistic_commit with ctx = pg: queues
 * o's mutations of attached tables as one PostgreSQL transaction
 * (INSERT, UPDATE of the changed columns by primary key, DELETE by
 * primary key). Mutations of other tables are refused (o is rejected).
 * The transaction arriving through the stream confirms o
 * (ldb_sync_confirm); a server error (constraint, permission,
 * serialization) rejects it with the server's message; a connection lost
 * before the outcome is known is settled by a fence after reconnecting.
 * After a durable database is reopened, ldb_optimistic_pending(db,
 * ldb_pg_send, pg) sends its pending transactions again. One the server
 * had applied before the program stopped is then applied twice: an
 * INSERT fails on its key and the transaction is rejected, while the
 * rows, as the stream brings them, are the server's (at least once, not
 * exactly once: no idempotency key is kept on the server).
 */
LDB_API void ldb_pg_send(void *pg, ldb_optimistic *o);

#define LDB_PG_CONNECTED 0
#define LDB_PG_RECONNECTING 1
/* The connection state and, when reconnecting, the last error (borrowed,
 * valid until the next ldb_pg_ call). */
LDB_API int ldb_pg_state(ldb_pg *pg, const char **msg);
/* Called on each change of state, from ldb_pg_poll. NULL fn: none. */
typedef void (*ldb_pg_state_fn)(void *ctx, ldb_pg *pg, int state, const char *msg);
LDB_API void ldb_pg_set_state_callback(ldb_pg *pg, ldb_pg_state_fn fn, void *ctx);
/* The last error of an ldb_pg_ call (borrowed). */
LDB_API const char *ldb_pg_errmsg(ldb_pg *pg);

/*
 * The current requests of every attached table: one line per request with
 * the PostgreSQL query it runs, and "superset: ..." naming each condition
 * livedb filters itself. *out is malloc'd (the caller frees it).
 */
LDB_API int ldb_pg_explain(ldb_pg *pg, char **out);

typedef struct ldb_pg_stats {
    uint64_t loads;          /* SELECTs run for requests (with resends) */
    uint64_t rows_loaded;    /* rows they returned */
    uint64_t rows_skipped;   /* loaded rows the stream had changed since */
    uint64_t txns;           /* stream transactions applied */
    uint64_t changes;        /* stream row changes applied */
    uint64_t ignored;        /* stream row changes outside the demand */
    uint64_t fences;         /* fences committed */
    uint64_t writes;         /* optimistic transactions sent */
    uint64_t confirmed;      /* ... confirmed through the stream */
    uint64_t rejected;       /* ... rejected */
    uint64_t reconnects;     /* connections re-established */
    uint64_t replays;        /* truncate + replay (lost slot or gap) */
    uint64_t lsn;            /* end of the last stream transaction applied */
} ldb_pg_stats;
LDB_API void ldb_pg_stats_get(ldb_pg *pg, ldb_pg_stats *out);

/* Detaches every table (they stay as local tables with their rows),
 * closes the connections, drops the slot and publication it created.
 * Optimistic transactions sent and not yet confirmed or rejected stay
 * pending (their outcome is unknown to this database). */
LDB_API void ldb_pg_close(ldb_pg *pg);

#ifdef __cplusplus
}
#endif
#endif
