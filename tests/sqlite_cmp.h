/*
 * sqlite_cmp.h - results of livedb and of SQLite in one text form, so the
 * tests that hold livedb against SQLite (tests/sql/test_differential.c,
 * the live-query and materialized-view oracles) compare them as strings.
 *
 * A value is "n" (NULL), "i:<int>" (INTEGER, and BOOLEAN as 1/0, SQLite's
 * form), "r:<%.17g>" (REAL, bit for bit) or "t:<bytes>" (TEXT); a row is
 * its values joined by '|'. What SQLite cannot tell apart is rendered
 * alike: -0.0 as 0 (SQLite stores a REAL -0.0 as the integer 0 and reads
 * back 0.0), and NaN as inf (SQLite has no NaN: binding one stores NULL,
 * so the oracles bind +inf in SQLite where livedb gets NaN, and both order
 * it above every number).
 */
#ifndef LDB_TESTS_SQLITE_CMP_H
#define LDB_TESTS_SQLITE_CMP_H

#include "base/strbuf.h"
#include "livedb.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

/* The rows of one statement, or why it failed. */
typedef struct cmp_result {
    int ok;          /* 1: rows below; 0: failed with msg */
    char msg[256];
    int unsupported; /* livedb said LDB_UNSUPPORTED */
    char **rows;     /* mem_alloc'd strings */
    size_t n, cap;
} cmp_result;

void cmp_result_free(cmp_result *r);
/* Takes row's text (the builder is left empty). */
void cmp_result_add(cmp_result *r, strbuf *row);

void cmp_put_real(strbuf *sb, double v);
void cmp_put_sqlite_value(strbuf *sb, sqlite3_stmt *st, int i);
void cmp_put_livedb_value(strbuf *sb, const ldb_row *row, int i);
void cmp_put_livedb_row(strbuf *sb, const ldb_row *row);

/* Steps st to its end, collecting its rows into r (not finalized). */
void cmp_step_sqlite(sqlite3 *db, sqlite3_stmt *st, cmp_result *r);
/* Prepares, runs and finalizes sql (one statement) on either engine. */
void cmp_run_sqlite(sqlite3 *db, const char *sql, cmp_result *r);
void cmp_run_livedb(ldb *db, const char *sql, cmp_result *r);

/* strcmp over two char * (for qsort of rows). */
int cmp_rows(const void *a, const void *b);
/* Same rows: in order, or as bags (sorts both) when !ordered. */
bool cmp_same_rows(cmp_result *a, cmp_result *b, bool ordered);

#endif
