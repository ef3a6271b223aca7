/*
 * pg_util.h - what every PostgreSQL adapter test shares: the throwaway
 * cluster's connection strings (tools/pg_cluster.sh writes them into
 * $LDB_PG_DIR, which make test-pg sets), SQL run straight on the server,
 * a clean server state per test case, and one text form for the rows of
 * a PostgreSQL query, a livedb query and a live query, so results compare
 * as sorted string arrays.
 *
 * Canonical form: a row is its values joined by '|'; NULL is "NULL",
 * integers are decimal, reals %.15g, text is its bytes, a blob lower-case
 * hex. PostgreSQL values are rendered by their column's type as the
 * adapter maps them (livedb_pg.h): int2/4/8 and oid as integers,
 * float4/8 and numeric as reals (strtod, then %.15g), bool t/f as 1/0,
 * bytea as hex without its "\x", everything else as PostgreSQL's text
 * output; a domain as its base type.
 *
 * Every function here CHECKs (tests/test.h) what it relies on, so a
 * failure ends the test case with the server's message.
 */
#ifndef LDB_TESTS_PG_UTIL_H
#define LDB_TESTS_PG_UTIL_H

#include <libpq-fe.h>

#include "livedb.h"
#include "livedb_pg.h"

/* Role livedb's connection string ($LDB_PG_DIR/conninfo) and the
 * superuser's ($LDB_PG_DIR/admin); static storage. */
const char *pgu_conninfo(void);
const char *pgu_admin_conninfo(void);

/* A connection (the caller PQfinish'es it), checked to be OK. */
PGconn *pgu_connect(const char *conninfo);
/* Runs printf-formatted SQL, which must succeed. */
void pgu_exec(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The first cell of printf-formatted SQL's first row, malloc'd (the
 * caller frees it); NULL for SQL NULL. The query must return a row. */
char *pgu_value(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Stops and starts the cluster (same port): every connection drops. A
 * fast shutdown waits for each walsender's client to take the last WAL:
 * while an adapter of this thread streams, use the _polling form, which
 * keeps calling ldb_pg_wait(pg) meanwhile (else the shutdown waits for
 * wal_sender_timeout, 60 s). */
void pgu_restart_server(void);
void pgu_restart_server_polling(ldb_pg *pg);
/* A clean server, as each test case wants it first: other backends of
 * role livedb terminated, every replication slot and publication
 * dropped, schema public dropped and made again, owned by livedb. */
void pgu_reset(void);

/* Rows in canonical form, sorted (pgu_rows_free them). */
char **pgu_rows_pg(PGconn *c, const char *sql, int *n);
char **pgu_rows_ldb(ldb *db, const char *sql, int *n);
/* A live query's current result. */
char **pgu_rows_live(ldb_live *q, int *n);
void pgu_rows_free(char **r, int n);
/* 1 when a and b hold the same rows; else prints what (a label), both
 * sizes and the first difference, and returns 0. */
int pgu_rows_equal(char **a, int na, char **b, int nb, const char *what);

/* ldb_pg_open with cfg (NULL: role livedb, every other field default),
 * checked to succeed. */
ldb_pg *pgu_open(ldb *db, const ldb_pg_config *cfg);
/* ldb_pg_sync within 10 s, checked to succeed. */
void pgu_sync(ldb_pg *pg);

#endif
