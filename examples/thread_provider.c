/*
 * thread_provider.c - the example provider of thread_provider.h.
 *
 * Threads: load_subset, unload_subset, abort and destroy run on the
 * database's thread (livedb.h: at dispatch points, under its mutex); the
 * workers never take the database's mutex, only the provider's two locks:
 *   mu       the job queue, the loaded-request set, receipts, idle state;
 *   data_mu  the backing rows. A worker holds it from reading rows to
 *            committing the transaction that carries them, so sync
 *            transactions reach the database's queue in the order the
 *            backing rows changed: a page can never overwrite a newer
 *            change sent by the feed.
 * Backing rows are never removed (a delete leaves a tombstone), so a
 * request's pages walk the array by index while changes interleave.
 *
 * A request is the worker's from load_subset (which takes a reference)
 * until it is settled, or dropped after ldb_request_aborted turns 1 (law
 * 6: nothing more is written for it); then the reference goes.
 */
#include "thread_provider.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum job_kind { JOB_LOAD, JOB_FORWARD };

struct job {
    struct job *next;
    enum job_kind kind;
    ldb_request *req;          /* JOB_LOAD: a reference */
    int64_t key;               /* JOB_FORWARD: the changed row's key */
};

struct brow {
    tp_value *v;               /* ncols owned values */
    bool gone;                 /* deleted at the source */
};

struct tp_provider {
    int ncols, key_col, page_rows, page_delay_ms, lat_min, lat_max;
    bool keep_receipts;
    char **columns;
    ldb_source *src;
    pthread_t *threads;
    int nthreads;
    unsigned seed;
    void (*on_request)(void *ctx, const ldb_request *req);
    void *on_request_ctx;
    /* mu */
    pthread_mutex_t mu;
    pthread_cond_t work_cv, idle_cv;
    struct job *head, *tail;
    int running;               /* jobs taken by a worker, not finished */
    bool stop;
    uint64_t *loaded;          /* ids of requests loaded and not unloaded */
    size_t nloaded, capl;
    ldb_receipt **receipts;
    size_t nreceipts, capr;
    tp_stats st;
    /* data_mu */
    pthread_mutex_t data_mu;
    struct brow *rows;
    size_t nrows, caprows;
};

/* ---- values -------------------------------------------------------------------------------- */

static void value_free(tp_value *v)
{
    if (v->type == LDB_TEXT)
        free((char *)v->s);
    *v = TP_NULL;
}

static int value_dup(const tp_value *in, tp_value *out)
{
    *out = *in;
    if (in->type == LDB_TEXT && !(out->s = strdup(in->s ? in->s : ""))) {
        *out = TP_NULL;
        return LDB_NOMEM;
    }
    return LDB_OK;
}

static void row_free(tp_value *v, int n)
{
    for (int i = 0; v && i < n; i++)
        value_free(&v[i]);
    free(v);
}

static tp_value *row_dup(const tp_value *in, int n)
{
    tp_value *v = calloc((size_t)n, sizeof *v);
    for (int i = 0; v && i < n; i++) {
        if (value_dup(&in[i], &v[i])) {
            row_free(v, n);
            return NULL;
        }
    }
    return v;
}

/* ---- predicates ---------------------------------------------------------------------------- */

static int col_index(const tp_provider *p, const char *name)
{
    for (int i = 0; name && i < p->ncols; i++)
        if (strcasecmp(p->columns[i], name) == 0)
            return i;
    return -1;
}

static int type_rank(int t)
{
    return t == LDB_TEXT ? 2 : t == LDB_BLOB ? 3 : t == LDB_NULL ? -1 : 1;
}

static int sign(double d) { return (d > 0) - (d < 0); }

static int text_cmp(const char *a, size_t na, const char *b, size_t nb, int coll)
{
    if (coll == LDB_COLL_RTRIM) {
        while (na && a[na - 1] == ' ')
            na--;
        while (nb && b[nb - 1] == ' ')
            nb--;
    }
    size_t n = na < nb ? na : nb;
    int c = coll == LDB_COLL_NOCASE ? strncasecmp(a, b, n) : memcmp(a, b, n);
    return c ? sign(c) : (na > nb) - (na < nb);
}

/* SQL's order of a against b (numbers < text < blobs); *known 0 when
 * either is NULL. */
static int compare(const tp_value *a, const ldb_value *b, int coll, bool *known)
{
    int tb = ldb_value_type(b);
    *known = a->type != LDB_NULL && tb != LDB_NULL;
    if (!*known)
        return 0;
    int ra = type_rank(a->type), rb = type_rank(tb);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (ra == 2) {
        size_t nb;
        const char *sb = ldb_value_text(b, &nb);
        return text_cmp(a->s, strlen(a->s), sb, nb, coll);
    }
    if (a->type == LDB_INTEGER && tb == LDB_INTEGER) {
        int64_t x = a->i, y = ldb_value_int64(b);
        return (x > y) - (x < y);
    }
    double x = a->type == LDB_INTEGER ? (double)a->i : a->d;
    return sign(x - ldb_value_double(b));
}

static bool op_holds(int op, int c)
{
    switch (op) {
    case LDB_OP_EQ: return c == 0;
    case LDB_OP_NE: return c != 0;
    case LDB_OP_LT: return c < 0;
    case LDB_OP_LE: return c <= 0;
    case LDB_OP_GT: return c > 0;
    default: return c >= 0;
    }
}

/* A leaf over a column the provider does not know matches (a superset
 * is always allowed; fewer rows never). */
static bool leaf_match(const tp_provider *p, const ldb_pred *pr, const tp_value *vals)
{
    int col = col_index(p, ldb_pred_column(pr));
    if (col < 0)
        return true;
    const tp_value *v = &vals[col];
    bool known;
    switch (ldb_pred_kind(pr)) {
    case LDB_PRED_ISNULL: return v->type == LDB_NULL;
    case LDB_PRED_NOTNULL: return v->type != LDB_NULL;
    case LDB_PRED_CMP: {
        int c = compare(v, ldb_pred_value(pr, 0), ldb_pred_collation(pr), &known);
        return known && op_holds(ldb_pred_op(pr), c);
    }
    default: /* IN */
        for (int i = 0; i < ldb_pred_count(pr); i++)
            if (compare(v, ldb_pred_value(pr, i), ldb_pred_collation(pr), &known) == 0 && known)
                return true;
        return false;
    }
}

/* No NOT in a request's tree, so a NULL comparison can count as false. */
int tp_pred_match(const tp_provider *p, const ldb_pred *pr, const tp_value *vals)
{
    if (!pr)
        return 1;
    int kind = ldb_pred_kind(pr);
    if (kind != LDB_PRED_AND && kind != LDB_PRED_OR)
        return leaf_match(p, pr, vals);
    bool any = kind == LDB_PRED_AND;
    for (int i = 0; i < ldb_pred_count(pr); i++)
        if ((bool)tp_pred_match(p, ldb_pred_child(pr, i), vals) != any)
            return !any;
    return any;
}

/* ---- sync transactions (worker side) ------------------------------------------------------- */

static int set_value(ldb_sync *t, int col, const tp_value *v)
{
    switch (v->type) {
    case LDB_INTEGER: return ldb_sync_int64(t, col, v->i);
    case LDB_REAL: return ldb_sync_double(t, col, v->d);
    case LDB_TEXT: return ldb_sync_text(t, col, v->s, -1);
    default: return ldb_sync_null(t, col);
    }
}

static int put_row(tp_provider *p, ldb_sync *t, const struct brow *r)
{
    int rc = LDB_OK;
    if (r->gone) {
        rc = set_value(t, p->key_col, &r->v[p->key_col]);
        return rc ? rc : ldb_sync_delete(t);
    }
    for (int c = 0; !rc && c < p->ncols; c++)
        rc = set_value(t, c, &r->v[c]);
    return rc ? rc : ldb_sync_upsert(t);
}

/* Commits t, keeping its receipt if asked; counts it. */
static int commit(tp_provider *p, ldb_sync *t, uint64_t nrows)
{
    ldb_receipt *rec = NULL;
    int rc = ldb_sync_commit(t, p->keep_receipts ? &rec : NULL);
    pthread_mutex_lock(&p->mu);
    if (rec && p->nreceipts == p->capr) {
        size_t cap = p->capr ? 2 * p->capr : 64;
        ldb_receipt **grown = realloc(p->receipts, cap * sizeof *grown);
        if (grown) {
            p->receipts = grown;
            p->capr = cap;
        }
    }
    if (rec && p->nreceipts < p->capr)
        p->receipts[p->nreceipts++] = rec;
    else
        ldb_receipt_free(rec);
    if (rc == LDB_OK) {
        p->st.txns++;
        p->st.rows += nrows;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static void sleep_ms(int ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* One page of req's rows from backing index *pos on; *pos moves past
 * them. Returns LDB_DONE when the rows ran out. */
static int send_page(tp_provider *p, ldb_request *req, size_t *pos)
{
    ldb_sync *t;
    int rc = ldb_sync_begin(p->src, req, &t);
    if (rc)
        return rc;
    const ldb_pred *pred = ldb_request_pred(req);
    uint64_t n = 0;
    pthread_mutex_lock(&p->data_mu);
    for (; *pos < p->nrows && n < (uint64_t)p->page_rows && !rc; (*pos)++) {
        const struct brow *r = &p->rows[*pos];
        if (!r->gone && tp_pred_match(p, pred, r->v)) {
            rc = put_row(p, t, r);
            n++;
        }
    }
    bool done = *pos == p->nrows;
    if (rc || n == 0)
        ldb_sync_abandon(t);
    else
        rc = commit(p, t, n);
    pthread_mutex_unlock(&p->data_mu);
    return rc ? rc : done ? LDB_DONE : LDB_OK;
}

/* Waits ms, cut short when req is aborted (a detach joins the workers). */
static void wait_for(ldb_request *req, int ms)
{
    for (int i = 0; i < ms && !ldb_request_aborted(req); i++)
        sleep_ms(1);
}

static void serve(tp_provider *p, ldb_request *req, unsigned *seed)
{
    int span = p->lat_max - p->lat_min;
    wait_for(req, p->lat_min + (span > 0 ? (int)(rand_r(seed) % (unsigned)(span + 1)) : 0));
    size_t pos = 0;
    int rc = LDB_OK;
    for (bool first = true; rc == LDB_OK && !ldb_request_aborted(req); first = false) {
        if (!first)
            wait_for(req, p->page_delay_ms);
        rc = send_page(p, req, &pos);
    }
    bool stopped = ldb_request_aborted(req);
    if (!stopped)
        ldb_request_settle(req, rc == LDB_DONE ? LDB_OK : rc, NULL);
    pthread_mutex_lock(&p->mu);
    if (stopped)
        p->st.stopped++;
    else if (rc == LDB_DONE)
        p->st.settled++;
    pthread_mutex_unlock(&p->mu);
}

static struct brow *find_row(tp_provider *p, int64_t key)
{
    for (size_t i = 0; i < p->nrows; i++)
        if (p->rows[i].v[p->key_col].i == key)
            return &p->rows[i];
    return NULL;
}

/* Sends the row's current state (the feed): the last forward of a key
 * always carries its latest change. */
static void forward(tp_provider *p, int64_t key)
{
    ldb_sync *t;
    if (ldb_sync_begin(p->src, NULL, &t))
        return;
    pthread_mutex_lock(&p->data_mu);
    struct brow *r = find_row(p, key);
    if (r && put_row(p, t, r) == LDB_OK)
        commit(p, t, 1);
    else
        ldb_sync_abandon(t);
    pthread_mutex_unlock(&p->data_mu);
}

/* ---- workers ------------------------------------------------------------------------------- */

static void job_free(struct job *j)
{
    ldb_request_unref(j->req);
    free(j);
}

static void *worker(void *arg)
{
    tp_provider *p = arg;
    pthread_mutex_lock(&p->mu);
    unsigned seed = p->seed++;
    for (;;) {
        while (!p->stop && !p->head)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stop)
            break;
        struct job *j = p->head;
        if (!(p->head = j->next))
            p->tail = NULL;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        if (j->kind == JOB_LOAD)
            serve(p, j->req, &seed);
        else
            forward(p, j->key);
        job_free(j);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0 && !p->head)
            pthread_cond_broadcast(&p->idle_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int push_job(tp_provider *p, enum job_kind kind, ldb_request *req, int64_t key)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return LDB_NOMEM;
    j->kind = kind;
    j->req = req;
    j->key = key;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    return LDB_OK;
}

void tp_wait_idle(tp_provider *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->head || p->running)
        pthread_cond_wait(&p->idle_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* ---- provider callbacks (the database's thread) -------------------------------------------- */

static int on_load(void *ctx, ldb_request *req)
{
    tp_provider *p = ctx;
    if (p->on_request)
        p->on_request(p->on_request_ctx, req);
    pthread_mutex_lock(&p->mu);
    if (p->nloaded == p->capl) {
        size_t cap = p->capl ? 2 * p->capl : 16;
        uint64_t *grown = realloc(p->loaded, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&p->mu);
            return LDB_NOMEM;
        }
        p->loaded = grown;
        p->capl = cap;
    }
    p->loaded[p->nloaded++] = ldb_request_id(req);
    p->st.loads++;
    pthread_mutex_unlock(&p->mu);
    ldb_request_ref(req);
    if (push_job(p, JOB_LOAD, req, 0) == LDB_OK)
        return LDB_OK;
    ldb_request_unref(req);
    pthread_mutex_lock(&p->mu);
    p->nloaded--; /* no unload follows a failed load */
    pthread_mutex_unlock(&p->mu);
    return LDB_NOMEM;
}

/* The worker sees the abort through ldb_request_aborted; this only counts. */
static void on_abort(void *ctx, ldb_request *req)
{
    tp_provider *p = ctx;
    (void)req;
    pthread_mutex_lock(&p->mu);
    p->st.aborts++;
    pthread_mutex_unlock(&p->mu);
}

static void on_unload(void *ctx, ldb_request *req)
{
    tp_provider *p = ctx;
    uint64_t id = ldb_request_id(req);
    pthread_mutex_lock(&p->mu);
    p->st.unloads++;
    size_t i = 0;
    while (i < p->nloaded && p->loaded[i] != id)
        i++;
    if (i == p->nloaded)
        p->st.bad_unloads++;
    else
        p->loaded[i] = p->loaded[--p->nloaded];
    pthread_mutex_unlock(&p->mu);
}

static void provider_free(tp_provider *p)
{
    for (size_t i = 0; i < p->nrows; i++)
        row_free(p->rows[i].v, p->ncols);
    free(p->rows);
    for (int i = 0; p->columns && i < p->ncols; i++)
        free(p->columns[i]);
    free(p->columns);
    for (size_t i = 0; i < p->nreceipts; i++)
        ldb_receipt_free(p->receipts[i]);
    free(p->receipts);
    free(p->loaded);
    free(p->threads);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->idle_cv);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->data_mu);
    free(p);
}

/* Stops the workers (a request being served finishes its page first),
 * drops the jobs left, frees p. */
static void on_destroy(void *ctx)
{
    tp_provider *p = ctx;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    while (p->head) {
        struct job *j = p->head;
        p->head = j->next;
        job_free(j);
    }
    provider_free(p);
}

/* ---- the program's side -------------------------------------------------------------------- */

static int add_row(tp_provider *p, const tp_value *vals)
{
    if (p->nrows == p->caprows) {
        size_t cap = p->caprows ? 2 * p->caprows : 64;
        struct brow *grown = realloc(p->rows, cap * sizeof *grown);
        if (!grown)
            return LDB_NOMEM;
        p->rows = grown;
        p->caprows = cap;
    }
    tp_value *v = row_dup(vals, p->ncols);
    if (!v)
        return LDB_NOMEM;
    p->rows[p->nrows++] = (struct brow){ v, false };
    return LDB_OK;
}

static int configure(tp_provider *p, const tp_config *cfg)
{
    p->ncols = cfg->ncols;
    p->key_col = cfg->key_col;
    p->page_rows = cfg->page_rows > 0 ? cfg->page_rows : 100;
    p->page_delay_ms = cfg->page_delay_ms;
    p->lat_min = cfg->latency_min_ms;
    p->lat_max = cfg->latency_max_ms;
    p->keep_receipts = cfg->keep_receipts != 0;
    p->seed = cfg->seed;
    p->on_request = cfg->on_request;
    p->on_request_ctx = cfg->on_request_ctx;
    p->nthreads = cfg->threads > 0 ? cfg->threads : 1;
    if (!(p->columns = calloc((size_t)p->ncols, sizeof *p->columns)) ||
        !(p->threads = calloc((size_t)p->nthreads, sizeof *p->threads)))
        return LDB_NOMEM;
    for (int i = 0; i < p->ncols; i++)
        if (!(p->columns[i] = strdup(cfg->columns[i])))
            return LDB_NOMEM;
    for (int i = 0; i < cfg->nrows; i++)
        if (add_row(p, &cfg->rows[(size_t)i * (size_t)p->ncols]))
            return LDB_NOMEM;
    return LDB_OK;
}

int tp_new(const tp_config *cfg, tp_provider **out)
{
    *out = NULL;
    if (!cfg || cfg->ncols <= 0 || !cfg->columns || cfg->key_col < 0 ||
        cfg->key_col >= cfg->ncols || cfg->latency_max_ms < cfg->latency_min_ms)
        return LDB_MISUSE;
    tp_provider *p = calloc(1, sizeof *p);
    if (!p)
        return LDB_NOMEM;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->data_mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->idle_cv, NULL);
    int started = 0;
    int rc = configure(p, cfg);
    while (!rc && started < p->nthreads)
        if ((rc = pthread_create(&p->threads[started], NULL, worker, p) ? LDB_NOMEM : LDB_OK) == 0)
            started++;
    if (rc) {
        p->nthreads = started;
        on_destroy(p);
        return rc;
    }
    *out = p;
    return LDB_OK;
}

int tp_attach(tp_provider *p, ldb *db, const char *table, int mode, ldb_source **out)
{
    static const ldb_provider ops = { on_load, on_unload, on_abort, on_destroy };
    /* p->src is set before any job can exist: the first load_subset runs
     * at the dispatch point that ends this call */
    int rc = ldb_source_attach(db, table, mode, &ops, p, &p->src);
    if (rc)
        on_destroy(p);
    else if (out)
        *out = p->src;
    return rc;
}

int tp_upsert(tp_provider *p, const tp_value *vals)
{
    int64_t key = vals[p->key_col].i;
    pthread_mutex_lock(&p->data_mu);
    struct brow *r = find_row(p, key);
    int rc = LDB_OK;
    tp_value *v = r ? row_dup(vals, p->ncols) : NULL;
    if (r && v) {
        row_free(r->v, p->ncols);
        *r = (struct brow){ v, false };
    } else if (r) {
        rc = LDB_NOMEM;
    } else {
        rc = add_row(p, vals);
    }
    pthread_mutex_unlock(&p->data_mu);
    return rc ? rc : push_job(p, JOB_FORWARD, NULL, key);
}

int tp_delete(tp_provider *p, int64_t key)
{
    pthread_mutex_lock(&p->data_mu);
    struct brow *r = find_row(p, key);
    if (r)
        r->gone = true;
    pthread_mutex_unlock(&p->data_mu);
    return r ? push_job(p, JOB_FORWARD, NULL, key) : LDB_NOTFOUND;
}

void tp_stats_get(tp_provider *p, tp_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    pthread_mutex_unlock(&p->mu);
}

void tp_receipts(tp_provider *p, uint64_t counts[4])
{
    memset(counts, 0, 4 * sizeof *counts);
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nreceipts; i++)
        counts[ldb_receipt_state(p->receipts[i]) & 3]++;
    pthread_mutex_unlock(&p->mu);
}

void tp_each_row(tp_provider *p, void (*fn)(void *ctx, const tp_value *vals), void *ctx)
{
    pthread_mutex_lock(&p->data_mu);
    for (size_t i = 0; i < p->nrows; i++)
        if (!p->rows[i].gone)
            fn(ctx, p->rows[i].v);
    pthread_mutex_unlock(&p->data_mu);
}
