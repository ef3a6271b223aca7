/*
 * pg_world.h - the issue tracker the PostgreSQL oracle and fault tests
 * share: its schema and seeded contents on the server, the tables
 * attached ON_DEMAND, random writers on separate libpq connections, live
 * queries over the tables and the check that each equals PostgreSQL.
 *
 * Writers never wait for each other: writer w (0..nw-1) writes only keys
 * k with k % PW_PARTS == w, and part PW_OPT (the last) belongs to the
 * optimistic writes livedb sends, so concurrent transactions (each writer
 * may hold one open while others commit) take no row lock another one
 * needs, and the single-threaded test never blocks on itself.
 *
 * A rolled-back transaction writes titles and bodies starting "rb-"; the
 * live queries' change callbacks fail the test if one ever shows such a
 * value (ROLLBACK leaves no trace).
 */
#ifndef LDB_TESTS_PG_WORLD_H
#define LDB_TESTS_PG_WORLD_H

#include <libpq-fe.h>

#include "livedb.h"
#include "livedb_pg.h"
#include "test.h"

#define PW_PARTS 4
#define PW_OPT (PW_PARTS - 1)
#define PW_MAX_WRITERS PW_OPT
#define PW_MAX_QUERIES 8

enum { PW_PLAIN, PW_WINDOW, PW_INCLUDE };

typedef struct pw_query {
    const char *name;
    int kind;
    const char *tsql, *tpg; /* PW_WINDOW: the templates of sql/shot and pg */
    char sql[600];       /* livedb (the live query's text) */
    char shot[600];      /* the same one-shot in livedb (no LIVE column) */
    char pg[600];        /* the same in PostgreSQL */
    char child[600];     /* PW_INCLUDE: parent id | child row, both engines */
    int off, lim;        /* PW_WINDOW */
    ldb_live *q;
} pw_query;

typedef struct pw_world {
    rng r;
    ldb *db;
    ldb_pg *pg;
    ldb_source *src[3];  /* users, issues, comments */
    int nw;
    PGconn *reader;      /* the checks' connection */
    PGconn *w[PW_MAX_WRITERS];
    int in_txn[PW_MAX_WRITERS];
    int doomed[PW_MAX_WRITERS];   /* the open transaction will roll back */
    int move_only;       /* issues are only updated (their count is fixed) */
    int users, issues, comments;  /* ids handed out so far, per table */
    int nq;
    pw_query qs[PW_MAX_QUERIES];
    char where[96];      /* what the test just did, for failure messages */
    char trace[256];     /* the first "rb-" value a callback saw */
    uint64_t commits, rollbacks;
} pw_world;

/* Resets the server, creates and fills the tables (sizes per table),
 * opens db and the adapter, attaches the tables ON_DEMAND and connects
 * nw writers. */
void pw_open(pw_world *w, uint64_t seed, int nw, int users, int issues, int comments);
/* Closes queries, writers, the adapter and db. */
void pw_close(pw_world *w);

/* Adds a query (kind PW_PLAIN/PW_WINDOW/PW_INCLUDE; for a window, sql and
 * pg hold "%s" for the ORDER BY's suffix and "%d %d" for LIMIT/OFFSET)
 * and opens it. */
void pw_add(pw_world *w, const char *name, int kind, const char *sql, const char *shot,
            const char *pg, const char *child);
void pw_reopen(pw_world *w, pw_query *q);
void pw_move_window(pw_world *w, pw_query *q, int off, int lim);

/* steps random writes, spread over the writers, some in transactions
 * left open across others' commits, with ldb_pg_poll between them with
 * probability poll_pct percent; every transaction ends by the return. */
void pw_round(pw_world *w, int steps, int poll_pct);
/* PQreset the reader and every writer whose connection is bad (after a
 * restart or a terminated backend). */
void pw_reconnect_writers(pw_world *w);

/* Every query READY and equal to PostgreSQL (live rows, the one-shot
 * over the local tables, the window's order, each include child), and
 * every local row is the server's row of that key. */
void pw_check(pw_world *w);

/* Prints the adapter's requests (ldb_pg_explain) and the sources'
 * counters: what a query that is not READY waits for. */
void pw_print_requests(pw_world *w);

#endif
