/*
 * pg_internal.h - the PostgreSQL adapter's shared structures (livedb_pg.h
 * is its public face). It uses only livedb.h and libpq.
 *
 * One ldb_pg owns: the attached tables (pg_table), three kinds of
 * connections (pg_conn: the stream, the control connection, the load
 * connections), the loads (pg_load, one per request being answered), the
 * control jobs (fences and optimistic writes) and one epoll descriptor
 * with a timerfd that together make ldb_pg_fd.
 *
 * Invariants the consistency argument rests on (docs/ARCHITECTURE.md):
 * - feed_seq counts the stream transactions applied; a table's touched map
 *   holds, per primary key, the feed_seq of the last transaction that
 *   changed it while some load was outstanding;
 * - a load's rows are applied only once fence_seen >= its fence, and a row
 *   whose key was touched after the load was sent (seq_sent) is skipped;
 * - stream changes are applied when the key is held locally or the new row
 *   matches a current request of its table, so every held row follows the
 *   server.
 * Everything runs on the database's home thread; provider callbacks may
 * re-enter (load_subset from inside a sync commit), so loads are freed
 * only at the end of ldb_pg_poll.
 */
#ifndef LDB_PG_INTERNAL_H
#define LDB_PG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "livedb.h"
#include "livedb_pg.h"

/* ---- column kinds (PostgreSQL type -> livedb value) ---- */
enum pg_kind {
    PGK_INT,      /* int2 int4 int8 oid */
    PGK_BOOL,     /* bool -> 0/1 */
    PGK_REAL,     /* float8 */
    PGK_REAL4,    /* float4: compared through its text, as livedb holds it */
    PGK_NUMERIC,  /* numeric -> double */
    PGK_TEXT,     /* text varchar name: compared as text */
    PGK_BPCHAR,   /* char(n): padded; comparisons not translated */
    PGK_TEXTCAST, /* enums, uuid, json, dates...: compared as their text */
    PGK_BYTEA
};

struct pg_col {
    char *name;
    int kind;
    bool notnull;
    bool nondeterministic;   /* its collation is (ICU, case-insensitive...) */
};

/* A growing byte buffer (the adapter's strbuf; malloc-owned data). */
typedef struct pg_buf {
    char *p;
    size_t n, cap;
    bool oom;
} pg_buf;
void pg_buf_add(pg_buf *b, const char *s, size_t n);
void pg_buf_puts(pg_buf *b, const char *s);
void pg_buf_printf(pg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pg_buf_ident(pg_buf *b, const char *name);      /* "quoted" */
void pg_buf_literal(pg_buf *b, const char *s, size_t n); /* 'quoted' */
void pg_buf_bytea(pg_buf *b, const char *p, size_t n);   /* '\x..' */
const char *pg_buf_str(pg_buf *b);                  /* NUL-terminated ("" when empty) */
void pg_buf_free(pg_buf *b);

/* A map from byte strings to uint64 (open addressing; keys owned). */
typedef struct pg_keymap {
    struct pg_keyslot { char *key; size_t len; uint64_t val; } *slots;
    size_t n, cap;
} pg_keymap;
bool pg_keymap_put(pg_keymap *m, const char *k, size_t len, uint64_t val); /* false: NOMEM */
uint64_t pg_keymap_get(const pg_keymap *m, const char *k, size_t len);     /* 0: absent */
void pg_keymap_clear(pg_keymap *m);

/* A cell of a row in PostgreSQL's text format (NULL p: SQL NULL;
 * unchanged: a TOASTed value the stream did not resend). */
typedef struct pg_cell {
    const char *p;
    int len;
    bool unchanged;
} pg_cell;

struct pg_load;

/* A snapshot as pg_current_snapshot() gives it (32-bit xids). */
typedef struct pg_snapshot {
    uint32_t xmin, xmax;
    uint32_t *xip;
    int nxip;
    bool valid;
} pg_snapshot;

typedef struct pg_table {
    struct ldb_pg *pg;
    char *pgname;        /* "schema"."name", quoted */
    char *nsp, *rel;     /* unquoted, as the stream's relation messages say */
    char *local;
    ldb_source *src;
    int ncols;
    struct pg_col *cols;
    int npk;
    int *pk;             /* column indexes of the primary key, in key order */
    uint32_t relid;      /* the table's oid: the stream's relation id */
    int *relmap;         /* stream column i -> our column, or -1 */
    int relmap_n;
    pg_keymap touched;   /* key -> feed_seq of its last stream change */
    uint64_t truncated;  /* feed_seq of its last truncate (stream or replay) */
    bool created, published; /* attach made the local table / added it to ours */
    ldb_stmt *get;       /* SELECT * FROM local WHERE pk = ... */
    ldb_request **reqs;  /* current requests (references), for the filter */
    int nreqs, capreqs;
} pg_table;

/* ---- connections ---- */
enum pg_role { ROLE_FEED, ROLE_CONTROL, ROLE_WRITER, ROLE_LOAD };
enum pg_cstate { CONN_DOWN, CONN_CONNECTING, CONN_SETUP, CONN_IDLE, CONN_BUSY };

typedef struct pg_conn {
    struct ldb_pg *pg;
    int role;
    int state;
    PGconn *c;
    int fd;              /* registered in the epoll set, or -1 */
    int backoff_ms;
    int64_t retry_at;    /* CONN_DOWN: when to try again */
    int64_t down_since;  /* 0 while up */
    struct pg_load *load;/* ROLE_LOAD: the load it runs */
    int step;            /* the role's own protocol step */
} pg_conn;

/* ---- loads ---- */
enum pg_lstate { LOAD_QUEUED, LOAD_DECLARING, LOAD_FETCHING, LOAD_CLOSING, LOAD_DONE };

typedef struct pg_load {
    struct pg_load *next;  /* in pg->loads */
    pg_table *t;
    ldb_request *req;      /* a reference; NULL for an internal refetch */
    char *sql;             /* the SELECT */
    int state;
    bool aborted, failed, dead, cancelled;
    pg_conn *conn;
    uint64_t seq_sent;     /* feed_seq when the load was sent */
    uint64_t fence;        /* the fence its rows wait for (0: none yet) */
    PGresult **held;       /* fetched chunks waiting for the fence */
    int nheld, capheld;
    bool fetched_all;
    bool settled;          /* its request was settled OK */
    bool retry;            /* run it again (a snapshot missing an applied
                              transaction, a lost session, out of memory) */
    bool unsettled;        /* its settlement could not be queued yet */
    int settle_rc;
    char settle_msg[300];
    int64_t not_before;    /* queued again: not sent before this time */
    pg_snapshot snap;      /* its cursor's snapshot */
} pg_load;

/* ---- control jobs: fences and optimistic writes ---- */
typedef struct pg_write {
    struct pg_write *next;
    ldb_optimistic *o;     /* a reference */
    uint64_t id;
    char *sql;             /* built at send time */
    int state;             /* WRITE_QUEUED, _SENT, _UNKNOWN, _DONE */
    uint64_t fence;        /* _UNKNOWN: settled by this fence */
    int pid;               /* the backend it was sent to */
    uint64_t xid;          /* its transaction (0: not known) */
    uint64_t replays;      /* stats.replays when it was sent */
} pg_write;
enum { WRITE_QUEUED, WRITE_SENT, WRITE_UNKNOWN, WRITE_DONE };

struct ldb_pg {
    ldb *db;
    char *conninfo;
    char *slot, *publication;
    bool own_publication;  /* we add tables to it (made when missing) */
    bool drop_at_close;    /* slot (and own publication) named by us */
    bool made_publication; /* ldb_pg_open made it (undone if open fails) */
    PGconn *setup;         /* open's blocking connection, until open is done */
    char tag[40];          /* our fences' and writes' message prefix */
    int fail_after_ms, rows_per_commit;
    pg_table **tables;
    int ntables;
    pg_conn feed, control, writer;
    pg_conn *loadc;
    int nloadc;
    pg_load *loads;        /* every load not yet freed */
    pg_write *writes;      /* in send order */
    pg_write *ending;      /* the write whose old backend the control connection ends */
    pg_write *asking;      /* the write whose pg_xact_status it asks */
    ldb_optimistic *unsent[64]; /* rejections that could not be queued yet */
    int nunsent;
    uint64_t write_ids;
    /* fences: fence_next is the number the next fence sent gets; a fence
     * is in flight on the control connection when fence_inflight != 0. */
    uint64_t fence_next, fence_inflight, fence_seen;
    bool fence_wanted;
    /* the stream */
    uint64_t feed_seq;
    struct pg_unproven { uint32_t xid; uint64_t seq; } *unproven;
    int nunproven, capunproven; /* applied transactions no snapshot is known to see */
    uint64_t applied_lsn;  /* end of the last transaction applied */
    int64_t status_at;     /* next standby status update */
    bool replay_needed;
    struct pg_txn *txn;    /* the transaction being received */
    int epfd, timerfd;
    int state;             /* LDB_PG_CONNECTED / RECONNECTING */
    char state_msg[256];
    ldb_pg_state_fn state_fn;
    void *state_ctx;
    int polling;           /* inside ldb_pg_poll (re-entry guard) */
    bool closing;          /* ldb_pg_close: connections are not restarted */
    char err[512];
    ldb_pg_stats stats;
};

/* conn.c */
int64_t pg_now_ms(void);
void pg_conn_init(ldb_pg *pg, pg_conn *c, int role);
void pg_conn_start(pg_conn *c);               /* begin connecting (non-blocking) */
void pg_conn_drop(pg_conn *c, const char *why);/* close; schedule a reconnect */
void pg_conn_drive(pg_conn *c);               /* advance a connecting conn */
void pg_conn_watch(pg_conn *c, bool write);   /* (re)register its socket */
void pg_conn_close(pg_conn *c);               /* close for good */
const char *pg_conn_error(pg_conn *c);        /* libpq's message, trimmed */
void pg_update_state(ldb_pg *pg);
void pg_notice_ignore(void *arg, const char *message);
/* A statement that changes the server and did not answer OK may still
 * have happened: only an error the server sent (it carries a SQLSTATE)
 * says it did not. A lost answer (no memory for it, a dropped connection)
 * must be undone as if it had happened. */
bool pg_may_have_happened(const PGresult *r);
void pg_set_err(ldb_pg *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* catalog.c */
int pg_table_attach(ldb_pg *pg, const char *pg_table, const char *local, int mode, ldb_source **out);
void pg_table_free(pg_table *t);
pg_table *pg_table_by_rel(ldb_pg *pg, const char *nsp, const char *rel);

/* value.c: cells in PostgreSQL's text format */
int pg_cell_sync(ldb_sync *s, int col, int kind, const pg_cell *c);
int pg_cell_bind(ldb_stmt *st, int i, int kind, const pg_cell *c);
bool pg_op_holds(int op, int cmp);   /* LDB_OP_x over a comparison's sign */
bool pg_cell_matches(const pg_table *t, const pg_cell *row, const ldb_pred *p);
void pg_value_literal(pg_buf *b, const ldb_value *v);
size_t pg_row_key(const pg_table *t, const pg_cell *row, pg_buf *key);
size_t pg_value_key(const pg_table *t, const ldb_value *const *pk_vals, pg_buf *key);
int pg_int_real_cmp(int64_t i, double d);
int pg_row_held(pg_table *t, const pg_cell *row);   /* 1 held, 0 not, <0 error */
int pg_row_read(pg_table *t, const pg_cell *key, ldb_sync *s); /* 1: set from the local row */

/* translate.c */
void pg_select_from(const pg_table *t, pg_buf *q);   /* SELECT <columns> FROM t WHERE */
char *pg_translate_request(const pg_table *t, ldb_request *r, pg_buf *why);

/* load.c */
int pg_load_subset_cb(void *ctx, ldb_request *req);
void pg_unload_subset_cb(void *ctx, ldb_request *req);
void pg_abort_cb(void *ctx, ldb_request *req);
int pg_load_refetch(pg_table *t, const pg_cell *row);
void pg_loads_dispatch(ldb_pg *pg);
void pg_load_conn_result(pg_conn *c);
void pg_load_conn_lost(pg_conn *c);
void pg_loads_fence_seen(ldb_pg *pg);
void pg_loads_fail_all(ldb_pg *pg, const char *why);
void pg_loads_reap(ldb_pg *pg);
bool pg_loads_idle(ldb_pg *pg);
uint64_t pg_fence_want(ldb_pg *pg);

/* snapshot.c */
void pg_snapshot_free(pg_snapshot *s);
bool pg_snapshot_parse(const char *text, pg_snapshot *s);
bool pg_snapshot_sees(const pg_snapshot *s, uint32_t xid);
bool pg_unproven_add(ldb_pg *pg, uint32_t xid, uint64_t seq);
bool pg_unproven_missed(const ldb_pg *pg, const pg_snapshot *s, uint64_t seq_sent);
void pg_unproven_prune(ldb_pg *pg, const pg_snapshot *s, const struct pg_load *self);
int64_t pg_loads_due(ldb_pg *pg);   /* the earliest not_before of a queued load */

/* feed.c */
void pg_feed_setup(pg_conn *c);
void pg_feed_input(pg_conn *c);
void pg_feed_status(ldb_pg *pg, bool force);
void pg_feed_lost(ldb_pg *pg);

/* control.c */
void pg_control_setup(pg_conn *c);
void pg_control_kick(ldb_pg *pg);
void pg_control_result(pg_conn *c);
void pg_control_lost(pg_conn *c);
void pg_writer_result(pg_conn *c);
void pg_writer_lost(pg_conn *c);
void pg_writes_replayed(ldb_pg *pg);
void pg_writes_retry_rejects(ldb_pg *pg);
int pg_write_confirmed(ldb_pg *pg, uint64_t id, ldb_sync *t, const pg_keymap *carried,
                       struct pg_write **out);
void pg_write_settled(ldb_pg *pg, struct pg_write *w);
void pg_writes_fence_seen(ldb_pg *pg);
bool pg_writes_idle(ldb_pg *pg);
void pg_writes_free(ldb_pg *pg, bool all);

#endif
