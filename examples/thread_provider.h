/*
 * thread_provider.h - an example source provider (livedb.h "sources") that
 * serves one table from worker threads, as a provider for a remote
 * service would: requests are answered after a simulated latency, in
 * pages of rows (one sync transaction each), and changes made at the
 * source are forwarded as sync transactions without a request (a change
 * feed).
 *
 * The provider's truth is an in-memory array of rows given by the program
 * (tp_config.rows) and changed by tp_upsert/tp_delete. Each worker
 * evaluates a request's predicate tree (ldb_request_pred) against it, so
 * the example doubles as a reference for evaluating one.
 *
 * Lifetime: tp_attach hands the provider to the database; it is freed by
 * its destroy callback (ldb_source_detach or ldb_close), which stops and
 * joins the workers. The other functions may be called from any thread
 * until then.
 */
#ifndef LDB_EXAMPLES_THREAD_PROVIDER_H
#define LDB_EXAMPLES_THREAD_PROVIDER_H

#include <stdint.h>

#include "livedb.h"

/* A column value of a backing row: LDB_NULL, LDB_INTEGER, LDB_REAL or
 * LDB_TEXT (s NUL-terminated; copied by the provider). */
typedef struct tp_value {
    int type;
    int64_t i;
    double d;
    const char *s;
} tp_value;

#define TP_NULL ((tp_value){ LDB_NULL, 0, 0, NULL })
#define TP_INT(v) ((tp_value){ LDB_INTEGER, (v), 0, NULL })
#define TP_REAL(v) ((tp_value){ LDB_REAL, 0, (v), NULL })
#define TP_TEXT(v) ((tp_value){ LDB_TEXT, 0, 0, (v) })

typedef struct tp_config {
    int ncols;                  /* the table's declared columns, in order */
    const char *const *columns; /* their names, as the table declares them */
    int key_col;                /* the INTEGER PRIMARY KEY column */
    const tp_value *rows;       /* nrows * ncols initial values (copied) */
    int nrows;
    int threads;                /* workers; 0: 1 */
    int latency_min_ms;         /* before a request's first page */
    int latency_max_ms;
    int page_rows;              /* rows per sync transaction; 0: 100 */
    int page_delay_ms;          /* between two pages of a request */
    int keep_receipts;          /* keep every commit's receipt (tp_receipts) */
    unsigned seed;              /* the latencies' random stream */
    /* optional: told of each request in load_subset (the database's
     * thread, a provider callback's rules), e.g. to log it */
    void (*on_request)(void *ctx, const ldb_request *req);
    void *on_request_ctx;
} tp_config;

typedef struct tp_provider tp_provider;

/* Counters (totals since tp_new). */
typedef struct tp_stats {
    uint64_t loads;          /* load_subset calls */
    uint64_t unloads;        /* unload_subset calls */
    uint64_t bad_unloads;    /* unloads of a request not loaded, or twice */
    uint64_t aborts;         /* abort calls */
    uint64_t settled;        /* requests settled OK */
    uint64_t stopped;        /* requests left unsettled after an abort */
    uint64_t txns;           /* sync transactions committed */
    uint64_t rows;           /* rows written in them */
} tp_stats;

/* A provider over cfg (copied), its workers started. LDB_NOMEM, LDB_MISUSE
 * for a bad configuration. */
int tp_new(const tp_config *cfg, tp_provider **out);
/* Attaches p to table (ldb_source_attach); p is the database's from now
 * on, also when this fails (then it is freed at once). */
int tp_attach(tp_provider *p, ldb *db, const char *table, int mode, ldb_source **out);
/* A change at the source: the row with vals' key is inserted or replaced
 * (tp_upsert) or deleted (tp_delete: only the key column is read), and a
 * worker forwards it as a sync transaction with no request. */
int tp_upsert(tp_provider *p, const tp_value *vals);
int tp_delete(tp_provider *p, int64_t key);
/* Blocks until no job is queued or running (every load settled or stopped
 * and every change forwarded, as far as the provider goes). */
void tp_wait_idle(tp_provider *p);
void tp_stats_get(tp_provider *p, tp_stats *out);
/* With keep_receipts: how many kept receipts are in each state
 * (counts[LDB_RECEIPT_PENDING..LDB_RECEIPT_FAILED]). */
void tp_receipts(tp_provider *p, uint64_t counts[4]);
/* Calls fn for each backing row (the source's truth), under the
 * provider's data lock: fn must not call tp_ functions. */
void tp_each_row(tp_provider *p, void (*fn)(void *ctx, const tp_value *vals), void *ctx);
/* Whether backing row vals matches request predicate pred (NULL: every
 * row), with SQL's comparison rules (NULL matches nothing). */
int tp_pred_match(const tp_provider *p, const ldb_pred *pred, const tp_value *vals);

#endif
