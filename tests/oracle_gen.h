/*
 * oracle_gen.h - what the live-query and materialized-view oracles
 * (tests/live/test_live_sqlite.c, tests/mv/test_mv_sqlite.c) share: two
 * databases, livedb and SQLite, holding the same four tables; random
 * histories of writes, transactions, savepoints and index DDL run on both
 * (oracle_world.c); and random queries that both engines must answer
 * alike (oracle_gen.c).
 *
 * The schema (fixed; the variety is in the data and the queries):
 *   t1(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL, d TEXT COLLATE NOCASE)
 *   t2(id INTEGER PRIMARY KEY, t1id INTEGER, x INTEGER, s TEXT COLLATE NOCASE, f REAL)
 *   t3(k INTEGER, v INTEGER, w TEXT)                -- no key: a hidden rowid
 *   t4(p INTEGER, q TEXT, n INTEGER, r REAL, PRIMARY KEY(p, q))
 * Values are small (joins and groups hit often), with NULLs, case
 * variants under NOCASE, -0.0, and NaN in t2.f.
 *
 * Keeping the comparison exact, by construction (each rule says why):
 * - Typed expressions: no value crosses types, where the engines'
 *   affinity rules differ; values stay small, so no INTEGER overflows.
 * - REALs are multiples of 1/4 and no REAL is divided, so every sum is
 *   exact in any order and avg is one division in both engines; no avg
 *   feeds a sum (a derived table never outputs avg).
 * - NaN (SQLite has none): t2.f is the only column holding it; SQLite
 *   gets +inf where livedb gets NaN (both order it above every number,
 *   both keep it equal to itself) and sqlite_cmp.h renders both as inf;
 *   +inf appears nowhere else. f never meets arithmetic (NaN * 0 is NaN,
 *   inf * 0 is NULL in SQLite; -NaN stays above every number, -inf goes
 *   below): it is read bare, compared, ordered, grouped, joined and
 *   aggregated (count, min, max, sum, total, avg).
 * - -0.0: SQLite stores a REAL -0.0 as 0 and so reads 0.0; the rendering
 *   shows both as 0 (livedb's -0.0 is canonically equal to 0.0, so it
 *   groups, joins and orders the same). No REAL becomes text.
 * - Orders are total over what is shown: every ORDER BY ends with the key
 *   of every FROM item (the primary key; all columns of t3, whose
 *   identical rows are indistinguishable), the group keys of a grouped
 *   query, or every column of a DISTINCT or compound query; a scalar
 *   subquery's ORDER BY ... LIMIT 1 the same way. Windows (LIMIT/OFFSET)
 *   therefore hold the same rows in both engines.
 * - Which of several equal values a result shows: livedb shows the least
 *   under its identity order (SQL.md), SQLite an arbitrary one. So where
 *   a value is chosen among equals under NOCASE (a group key, DISTINCT,
 *   compound queries, min/max, DISTINCT aggregates) a NOCASE text is
 *   shown through lower(), and so is the column of an IN (SELECT
 *   DISTINCT ...), which IN may compare under BINARY; bare columns of
 *   grouped rows are never shown.
 * - string_agg/group_concat joins in a different order in each engine
 *   (SQL.md difference 3): they are compared as multisets of items
 *   (sorted), only as top-level columns, and SQLite runs group_concat.
 * - Aggregate arguments hold no subquery and no outer column (an
 *   aggregate of outer columns belongs to the outer query in SQLite).
 * - Writes: no NULL INTEGER PRIMARY KEY (the engines pick new keys
 *   differently), no NULL in t4's key (SQLite allows it), a key moves only
 *   in single-row UPDATEs, no UPDATE or DELETE reads its own table in a
 *   subquery (SQL.md differences 10), and values fit their column types
 *   (SQL.md: livedb rejects what SQLite would store as text).
 * - Indexes exist only in livedb (the oracle wants SQLite to evaluate from
 *   scratch; no answer may depend on them).
 */
#ifndef LDB_TESTS_ORACLE_GEN_H
#define LDB_TESTS_ORACLE_GEN_H

#include "base/strbuf.h"
#include "livedb.h"
#include "sqlite_cmp.h"
#include "test.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* The types of the generator. OT_FLT is REAL that may be NaN (t2.f). */
enum oty { OT_INT, OT_REAL, OT_TEXT, OT_BOOL, OT_FLT };

/* The schema (oracle_world.c creates it). */
struct otcol {
    const char *name;
    enum oty ty;
    bool nocase;
};

struct otable {
    const char *name;
    int ncols;
    struct otcol cols[5];
    int nkey; /* cols[0..nkey) order the rows totally */
};

#define NTABLES 4
extern const struct otable otables[NTABLES];

/* A bound parameter value (also a value a write binds). */
typedef struct oval {
    enum oty ty;
    bool null;
    bool nan; /* OT_FLT: NaN in livedb, +inf in SQLite */
    int64_t i;
    double d;
    const char *t; /* static text */
} oval;

/* Uniform in [0, n) / true with probability num/den. */
int og_pick(rng *r, int n);
bool og_chance(rng *r, unsigned num, unsigned den);
/* A value of the data's domain for type ty (NULL 1 in 7 if nullable). */
oval oval_random(rng *r, enum oty ty, bool nullable);
oval oval_int(int64_t i);
/* The value as SQL text, for logs (NaN cannot be written: a comment). */
void oval_sql(strbuf *sb, const oval *v);
/* Binds v as parameter i: NaN is +inf for SQLite (see above). */
void oval_bind_livedb(ldb_stmt *st, int i, const oval *v);
void oval_bind_sqlite(sqlite3_stmt *st, int i, const oval *v);

#define OQ_MAXCOLS 6
#define OQ_MAXPARAMS 32

/* A generated query. */
typedef struct oquery {
    char *sql; /* livedb's text without the window (mem_alloc'd) */
    int ncols;
    enum oty tys[OQ_MAXCOLS];
    char list_sep[OQ_MAXCOLS]; /* nonzero: a string_agg column, compared as
                                  the multiset of its items */
    bool ordered;              /* a top-level ORDER BY, total over the rows */
    bool window;               /* ORDER BY ... LIMIT: offset and limit apply */
    int64_t offset, limit;     /* the window the query is opened with */
    int nparams;               /* ?1 .. ?nparams */
    oval params[OQ_MAXPARAMS];
} oquery;

/* Which rules of oracle_known.h and which shapes a generator follows. */
typedef struct ogen_opts {
    bool mv;            /* a materialized-view body: no parameters */
    bool big;           /* over big tables: only windows fed from an index
                           prefix, joined by key (small results) */
} ogen_opts;

void oq_generate(rng *r, const ogen_opts *o, oquery *q);
/* A body for a materialized view's cheap arms: one table filtered and
 * projected, or grouped by plain columns with count/sum/avg/min/max. */
void oq_generate_simple(rng *r, oquery *q);
void oq_free(oquery *q);
/* The text for an engine: SQLite's names string_agg group_concat; a
 * window query gets LIMIT limit OFFSET offset. mem_alloc'd. */
char *oq_text(const oquery *q, bool sqlite, int64_t offset, int64_t limit);
/* Puts the string_agg columns of a rendered row (sqlite_cmp.h's form) in
 * item order, in place (the text is replaced; mem_alloc'd). */
void oq_normalize(const oquery *q, char **row);
/* Binds q's parameters to a livedb statement / a SQLite statement. */
void oq_bind_livedb(const oquery *q, ldb_stmt *st);
void oq_bind_sqlite(const oquery *q, sqlite3_stmt *st);

/* ---- the two databases and their history ---------------------------------- */

typedef struct oworld {
    uint64_t seed;
    rng r;
    ldb *ld;
    sqlite3 *sq;
    strbuf log;     /* the history so far, as a script (values inlined) */
    int keys;       /* primary keys of t1 and t2 are drawn in 1..keys */
    bool big;       /* t1 and t2 hold hundreds of rows (queries: ogen_opts.big) */
    bool in_txn;    /* inside BEGIN ... */
    bool ddl;       /* index DDL since the last commit or rollback (the
                       hooks see it; cleared after them) */
    int savepoints; /* open savepoints (inside in_txn) */
    long statements, failed;
} oworld;

/* Where a history step leaves the databases, for the oracle's checks. */
enum ow_point {
    OW_IN_TXN,     /* a statement ran inside a transaction: nothing committed */
    OW_COMMITTED,  /* a commit: an autocommitted statement, COMMIT, RELEASE of
                      the outer savepoint, or autocommitted DDL */
    OW_ROLLED_BACK /* ROLLBACK, or an autocommitted statement that failed */
};

typedef struct ow_hooks {
    void *ctx;
    /* After every statement of the history, with what it left. */
    void (*after)(void *ctx, oworld *w, enum ow_point point);
    /* An extra step the oracle may take between transactions (live
     * queries: window moves, reopening queries); NULL for none. */
    void (*between)(void *ctx, oworld *w);
} ow_hooks;

/* Opens both databases: schema, random data, livedb's first indexes. */
void ow_open(oworld *w, uint64_t seed);
void ow_close(oworld *w);
/* One random step: a write, a transaction, or index DDL. */
void ow_step(oworld *w, const ow_hooks *h);
/* One random write on both engines; returns whether it succeeded. */
bool ow_write(oworld *w);
/* Runs sql (with params) on both engines; both must succeed or both fail
 * (else the test fails). Returns whether it succeeded. */
bool ow_both(oworld *w, const char *sql, const oval *params, int n);
/* q's rows on SQLite now (normalized). */
void ow_sqlite_rows(oworld *w, const oquery *q, int64_t offset, int64_t limit, cmp_result *r);
/* Prints the end of the history (and writes all of it to the file named
 * by LDB_ORACLE_LOG, when set), for a failure report. */
void ow_report_history(const oworld *w);
/* Notes in the history that q was opened as live query id, as the
 * comment "-- .live@id SQL" (parameters inlined). The oracles note window
 * moves and closes as "-- .window id offset limit" and "-- .close id". */
void ow_log_query(oworld *w, int id, const oquery *q, int64_t offset, int64_t limit);
/* Prints q's text and parameters. */
void oq_report(const oquery *q, int64_t offset, int64_t limit);

#endif
