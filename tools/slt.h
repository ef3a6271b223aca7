/*
 * slt.h - the sqllogictest runner's internal interface, shared by the
 * runner (tools/slt_*.c), its program (tools/slt.c) and its tests.
 *
 * The format is SQLite's sqllogictest (../shared/corpus/sqllogictest/
 * README.md and about.wiki). A script is read whole, split into records,
 * and each record runs on an engine behind struct slt_engine: livedb
 * (the engine under test) or SQLite (which validates the runner itself,
 * since the corpus's expected results are SQLite's).
 */
#ifndef LDB_TOOLS_SLT_H
#define LDB_TOOLS_SLT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- MD5 (RFC 1321), for "N values hashing to <md5>" ----------------- */

typedef struct slt_md5 {
    uint32_t h[4];
    uint64_t nbytes;
    unsigned char block[64];
} slt_md5;

void slt_md5_init(slt_md5 *m);
void slt_md5_update(slt_md5 *m, const void *data, size_t n);
/* Writes 32 lower-case hex digits and a NUL into hex. */
void slt_md5_hex(slt_md5 *m, char hex[33]);

/* ---- query results ----------------------------------------------------- */

/*
 * The rendered values of one query, row-major, each NUL-terminated in
 * one buffer. Engines feed typed values through slt_put_*; the column's
 * type letter (I, R or T) decides the rendering, exactly as the reference
 * runner does, so both engines are judged by the same text.
 */
typedef struct slt_result {
    const char *types; /* one letter per expected column */
    int ncol;          /* strlen(types) */
    char *buf;         /* rendered values, each followed by a NUL */
    size_t len, cap;
    size_t *off;       /* start of value i in buf */
    size_t nval, capv;
} slt_result;

void slt_result_init(slt_result *r);
void slt_result_free(slt_result *r);
/* Empties r and sets the expected column types. */
void slt_result_reset(slt_result *r, const char *types);
const char *slt_value(const slt_result *r, size_t i);

void slt_put_null(slt_result *r);
void slt_put_int(slt_result *r, int64_t v);
void slt_put_real(slt_result *r, double v);
/* TEXT or BLOB bytes. */
void slt_put_text(slt_result *r, const char *s, size_t n);

/* REAL as SQLite's printf writes "%.3f" (R columns) and "%!.15g" (REAL
 * turned into text). */
void slt_format_real3(double v, char *out, size_t size);
void slt_format_real15(double v, char *out, size_t size);

/* The values of res in the order sort mode sort ("nosort", "rowsort" or
 * "valuesort") gives, as pointers into res, in *vals (grown as needed;
 * *cap is its size). Exits on out of memory, as the runner does. */
void slt_order_values(const slt_result *res, const char *sort, const char ***vals,
                      size_t *cap);
/* The md5 of the values, each followed by '\n': the hash of a query's
 * "<n> values hashing to <md5>". */
void slt_md5_values(const char *const *v, size_t n, char hex[33]);

/* ---- engines ----------------------------------------------------------- */

enum slt_rc {
    SLT_OK = 0,
    SLT_ERROR = 1,       /* the engine reported an error */
    SLT_UNSUPPORTED = 2, /* valid SQL the engine does not support */
    SLT_COLUMNS = 3      /* a query returned another number of columns */
};

/* An engine's message for its last error (truncated to fit). */
typedef struct slt_msg {
    char text[256];
    int ncol; /* with SLT_COLUMNS: the number of columns returned */
} slt_msg;

typedef struct slt_engine {
    const char *name;
    /* A new empty database, or NULL (with msg set). */
    void *(*open)(slt_msg *msg);
    void (*close)(void *db);
    /* Runs every ';'-separated statement of sql, stopping at an error. */
    int (*exec)(void *db, const char *sql, slt_msg *msg);
    /* Runs one query and feeds each value to res (res->ncol columns). */
    int (*query)(void *db, const char *sql, slt_result *res, slt_msg *msg);
    /* Optional (NULL: the engine cannot be stopped): from now on, a query
     * still running after seconds (0: no limit) stops with an error. */
    void (*limit)(void *db, double seconds);
} slt_engine;

extern const slt_engine slt_engine_livedb;
extern const slt_engine slt_engine_sqlite;

/* ---- scripts ----------------------------------------------------------- */

/* One record: its kind, conditions, header words and lines (comments
 * dropped). */
enum slt_kind {
    SLT_STATEMENT,
    SLT_QUERY,
    SLT_HASH_THRESHOLD,
    SLT_HALT,
    SLT_UNKNOWN /* anything else, or conditions with no record after them */
};

#define SLT_MAX_WORDS 6

typedef struct slt_record {
    enum slt_kind kind;
    int line;        /* line number of the record's header */
    int skip;        /* a skipif/onlyif excludes the engine "sqlite" */
    const char *word[SLT_MAX_WORDS]; /* header words, NULL after the last */
    char **lines;    /* lines[0] is the header */
    int nlines;
    /* statement and query: the SQL is lines[1 .. sql_end); a query's
     * expected values are lines[results .. nlines). */
    int sql_end, results;
} slt_record;

/* A whole script, read into memory and split into records. */
typedef struct slt_script {
    char *text;
    char **lines; /* every line, '\r' stripped, NUL-terminated in text */
    int nlines;
    slt_record *recs;
    int nrecs;
} slt_script;

/* Reads path and splits it; returns 0, or -1 with errno set. */
int slt_script_load(slt_script *s, const char *path);
/* Splits text (taken over: freed by slt_script_free). Returns 0 or -1. */
int slt_script_parse(slt_script *s, char *text);
void slt_script_free(slt_script *s);
/* The SQL of a statement or query record, lines joined with '\n'; the
 * caller frees it. */
char *slt_record_sql(const slt_record *r);

/* Seconds on the monotonic clock, for timing queries and limits. */
double slt_now(void);

/* ---- running ------------------------------------------------------------ */

/* Reasons for unsupported records, tallied across files. */
typedef struct slt_reason {
    char text[80];
    long count;
} slt_reason;

typedef struct slt_counts {
    long passed, failed;
    long skipped_cond;        /* excluded by skipif/onlyif */
    long skipped_unsupported; /* the engine said "not supported" */
    long deviations;          /* listed known deviations that failed */
    double slowest;           /* seconds of the slowest query run */
    int slowest_line;         /* its record's line (0: no query ran) */
} slt_counts;

/*
 * A record the engine is known to fail on purpose, with the reason
 * (printed whenever it is met). file is the path below the corpus
 * folder; line is the record's header line. A listed record that fails
 * counts as a deviation, not a failure; one that passes, is skipped, or
 * is never met in its file is a failure, so the list cannot go stale.
 */
typedef struct slt_deviation {
    const char *file;
    int line;
    const char *reason;
} slt_deviation;

/* livedb's known deviations (tools/slt_known.c). */
extern const slt_deviation slt_livedb_deviations[];
extern const int slt_livedb_ndeviations;

typedef struct slt_options {
    const slt_engine *engine;
    int verbose;        /* print the unsupported reasons (tools/slt.c) */
    int max_reports;    /* failures printed in full per file */
    FILE *out;          /* failure reports */
    slt_reason *reasons; /* tally of unsupported reasons (grows) */
    int nreasons, capreasons;
    const slt_deviation *known; /* known deviations of the engine */
    int nknown;
    /* Seconds a query may take (0: any time): a slower one fails, and an
     * engine with a limit function is stopped soon after. */
    double query_limit;
} slt_options;

/* Runs one script on a fresh database; adds to *c. Returns 0, or -1 when
 * the file or the database could not be opened (message printed). */
int slt_run_file(const char *path, slt_options *o, slt_counts *c);
void slt_options_free(slt_options *o);
/* Prints the reasons, most frequent first. */
void slt_print_reasons(const slt_options *o, FILE *f);

/* ---- generated scripts (tools/slt_select5.c) ---------------------------- */

typedef struct slt_gen_options {
    uint64_t seed;
    int nqueries;
    int max_tables; /* most tables a query joins, 2..64 */
} slt_gen_options;

typedef struct slt_gen_stats {
    int records;        /* statements and queries */
    int queries;
    int empty;          /* queries whose result is empty */
    int products;       /* queries with a cross product of components */
    int max_tables;     /* most tables a written query joins */
    long redrawn;       /* queries drawn again: too many rows or too slow */
    long sqlite_slow;   /* of which SQLite took too long */
    double total;       /* seconds SQLite took for the written queries */
    double slowest;     /* SQLite's slowest query, seconds */
    int slowest_line;   /* its record's line */
    int slowest_tables; /* and its tables */
} slt_gen_stats;

/* Writes a select5-style script (the 64 tables, then o->nqueries queries
 * with SQLite's answers) to f. Returns 0, or -1 with msg set. */
int slt_gen_select5(FILE *f, const slt_gen_options *o, slt_gen_stats *st, slt_msg *msg);

#endif
