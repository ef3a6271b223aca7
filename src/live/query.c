/*
 * query.c - the life of a live query: open (compile and hydrate), commit
 * (run the graph on the transaction's net change and install the new
 * result), flush (call the callbacks), windows, reads, close.
 *
 * Commit is two-phase (storage/capture.h): commit_prepare runs the graph
 * and stages the result's changes; commit_finish installs them and queues
 * the query for publication. Callbacks run only in live_flush, after the
 * store has finished the commit and every query has installed its new
 * result, so a callback reading any live query sees the same commit
 * (law 9). A query whose graph fails stops there, in a terminal state; a
 * failure never cancels the commit.
 */
#include "live/live_internal.h"

#include "base/mem.h"
#include "live/window.h"
#include "storage/capture.h"
#include "storage/store.h"

#include <stdio.h>
#include <string.h>

/* ---- registry ------------------------------------------------------------------- */

int live_registry_new(struct store *st, struct live_registry **out)
{
    struct live_registry *reg = mem_calloc(1, sizeof *reg);
    if (!reg)
        return LDB_NOMEM;
    reg->store = st;
    *out = reg;
    return LDB_OK;
}

static void query_free(ldb_live *q);

void live_registry_free(struct live_registry *reg)
{
    if (!reg)
        return;
    while (reg->queries.len)
        query_free(reg->queries.data[reg->queries.len - 1]);
    vec_free(&reg->queries);
    mem_free(reg);
}

static void registry_remove(struct live_registry *reg, ldb_live *q)
{
    for (size_t i = 0; i < reg->queries.len; i++) {
        if (reg->queries.data[i] == q) {
            reg->queries.data[i] = vec_last(&reg->queries);
            reg->queries.len--;
            return;
        }
    }
}

/* ---- graph runs ------------------------------------------------------------------- */

static void count_run(ldb_live *q)
{
    struct df_counters c;
    df_graph_counters(q->g, &c);
    q->stats.rows_processed = c.rows_in;
    q->stats.runs++;
}

/* One graph run; its output joins the commit's accumulated output. */
static int run_once(ldb_live *q)
{
    int rc = df_run(q->g);
    if (rc)
        return rc;
    count_run(q);
    size_t n;
    const df_entry *d = df_output_delta(q->out, &n);
    for (size_t i = 0; i < n; i++)
        if ((rc = df_batch_push(&q->acc, d[i].r, d[i].w)))
            return rc;
    return LDB_OK;
}

/* Runs until no window loader wants more rows. */
static int run_to_settle(ldb_live *q)
{
    int rc = run_once(q);
    for (bool again = !rc; again && !rc;) {
        again = false;
        for (size_t i = 0; !rc && i < q->sources.len; i++) {
            bool pushed = false;
            if (q->sources.data[i].loader)
                rc = window_loader_settle(q->sources.data[i].loader, &pushed);
            again |= pushed;
        }
        if (again && !rc)
            rc = run_once(q);
    }
    return rc;
}

/* Runs the graph (and any window refills) and stages the result changes. */
static int run_and_stage(ldb_live *q)
{
    int rc = run_to_settle(q);
    if (!rc)
        rc = df_batch_consolidate(&q->acc);
    if (!rc)
        rc = result_stage(&q->rs, q->acc.e, q->acc.len);
    df_batch_clear(&q->acc);
    if (rc == LDB_CONSTRAINT)
        return live_fail(q, rc, "two different rows have the same result key");
    if (rc)
        return live_fail(q, rc, rc == LDB_NOMEM ? "out of memory" : q->err.msg);
    return LDB_OK;
}

/* After a result is installed: windows unload rows far past them. The
 * runs this takes must not change the result. */
static void trim_windows(ldb_live *q)
{
    bool any = false;
    int rc = LDB_OK;
    for (size_t i = 0; !rc && i < q->sources.len; i++) {
        bool pushed = false;
        if (q->sources.data[i].loader)
            rc = window_loader_trim(q->sources.data[i].loader, &pushed);
        any |= pushed;
    }
    if (!rc && any)
        rc = run_to_settle(q);
    if (!rc && any && q->acc.len && !(rc = df_batch_consolidate(&q->acc)) && q->acc.len)
        rc = LDB_INTERNAL; /* unloaded rows were in the window */
    df_batch_clear(&q->acc);
    if (rc)
        live_fail(q, rc, rc == LDB_INTERNAL ? "window trim changed the result" : NULL);
}

/* ---- commit hooks ------------------------------------------------------------------ */

static int on_commit_prepare(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    ldb_live *q = ctx;
    if (q->state != LIVE_OK || q->closing)
        return LDB_OK;
    bool touched;
    int rc = live_push_delta(q, d, &touched);
    if (rc)
        live_fail(q, rc, NULL);
    else if (touched)
        run_and_stage(q);
    return LDB_OK; /* a query's failure never cancels the commit */
}

static void enqueue(struct live_registry *reg, ldb_live *q)
{
    if (q->pending)
        return;
    q->pending = true;
    q->next_pending = NULL;
    if (reg->pending_tail)
        reg->pending_tail->next_pending = q;
    else
        reg->pending_head = q;
    reg->pending_tail = q;
}

static void on_commit_finish(void *ctx, struct store *s, bool committed)
{
    (void)s;
    ldb_live *q = ctx;
    size_t n;
    result_changes(&q->rs, &n);
    if (q->state != LIVE_OK || n == 0)
        return;
    if (!committed) {
        /* the graph advanced for a commit that did not happen */
        result_discard(&q->rs);
        live_fail(q, LDB_ERROR, "the commit this query prepared for was cancelled");
        return;
    }
    if (result_commit(&q->rs)) {
        result_discard(&q->rs);
        live_fail(q, LDB_NOMEM, "out of memory");
        return;
    }
    enqueue(q->reg, q);
    trim_windows(q);
}

static void on_rollback(void *ctx, struct store *s, const struct delta *undone)
{
    /* Live queries consume only committed changes (and cannot be opened
     * inside a transaction), so a rollback never undoes anything they saw. */
    (void)ctx;
    (void)s;
    (void)undone;
}

static const struct store_hooks live_hooks = {
    NULL, on_commit_prepare, on_commit_finish, on_rollback,
};

/* ---- publication ---------------------------------------------------------------------- */

/* One change's rows as public views: key, before, after. */
struct change_views {
    struct ldb_row key, before, after;
    value keyvals[RESULT_MAX_KEY];
};

static void key_view(const ldb_live *q, const row *r, struct change_views *v)
{
    for (uint32_t i = 0; i < q->rs.nkey; i++)
        v->keyvals[i] = r->cols[q->rs.key[i]];
    v->key.vals = v->keyvals;
    v->key.n = q->rs.nkey;
}

static void publish(ldb_live *q)
{
    size_t n;
    const struct result_change *chs = result_changes(&q->rs, &n);
    if (n == 0 || !q->fn || q->state != LIVE_OK)
        return;
    ldb_change *out = mem_alloc(n * sizeof *out);
    struct change_views *views = mem_alloc(n * sizeof *views);
    if (!out || !views) {
        mem_free(out);
        mem_free(views);
        live_fail(q, LDB_NOMEM, "out of memory while publishing");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct result_change *c = &chs[i];
        struct change_views *v = &views[i];
        key_view(q, c->after ? c->after : c->before, v);
        v->before = (struct ldb_row){ c->before ? c->before->cols : NULL, q->nvisible };
        v->after = (struct ldb_row){ c->after ? c->after->cols : NULL, q->nvisible };
        out[i] = (ldb_change){
            .kind = c->kind == RESULT_INSERT   ? LDB_CHANGE_INSERT
                    : c->kind == RESULT_DELETE ? LDB_CHANGE_DELETE
                                               : LDB_CHANGE_UPDATE,
            .key = &v->key,
            .before = c->before ? &v->before : NULL,
            .after = c->after ? &v->after : NULL,
            .before_count = c->before_mult,
            .after_count = c->after_mult,
            .before_pos = c->before_pos,
            .after_pos = c->after_pos,
        };
    }
    q->fn(q->ctx, q, out, n);
    mem_free(out);
    mem_free(views);
}

void live_flush(struct live_registry *reg)
{
    if (!reg || reg->publishing)
        return;
    reg->publishing = true;
    while (reg->pending_head) {
        ldb_live *q = reg->pending_head;
        reg->pending_head = q->next_pending;
        if (!reg->pending_head)
            reg->pending_tail = NULL;
        q->pending = false;
        if (!q->closing)
            publish(q);
        result_discard(&q->rs);
    }
    reg->publishing = false;
    /* queries closed from callbacks */
    for (size_t i = reg->queries.len; i-- > 0;) {
        ldb_live *q = reg->queries.data[i];
        if (q->closing)
            query_free(q);
    }
}

bool live_publishing(const struct live_registry *reg) { return reg->publishing; }

/* ---- open and close -------------------------------------------------------------------- */

static void query_free(ldb_live *q)
{
    struct live_registry *reg = q->reg;
    if (q->sub)
        store_unsubscribe(reg->store, q->sub);
    registry_remove(reg, q);
    if (q->pending) {
        /* unlink from the pending list */
        ldb_live **pp = &reg->pending_head, *prev = NULL;
        while (*pp && *pp != q) {
            prev = *pp;
            pp = &(*pp)->next_pending;
        }
        if (*pp)
            *pp = q->next_pending;
        if (reg->pending_tail == q)
            reg->pending_tail = prev;
    }
    for (size_t i = 0; i < q->sources.len; i++)
        window_loader_free(q->sources.data[i].loader);
    df_graph_free(q->g);
    result_free(&q->rs);
    df_batch_free(&q->acc);
    vec_free(&q->sources);
    vec_free(&q->values);
    vec_free(&q->partitions);
    for (uint32_t i = 0; i < q->nparams; i++)
        value_release(&q->params[i]);
    mem_free(q->params);
    arena_free(&q->cba);
    plan_arena_free(&q->pa);
    if (q->release)
        q->release(q->owner);
    mem_free(q);
}

void live_close(ldb_live *q)
{
    if (!q)
        return;
    if (q->reg->publishing) {
        q->closing = true; /* freed when the flush ends */
        return;
    }
    query_free(q);
}

static int copy_params(ldb_live *q, const value *params, uint32_t n)
{
    if (!n)
        return LDB_OK;
    q->params = mem_calloc(n, sizeof *q->params);
    if (!q->params)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        q->params[i] = value_copy(&params[i]);
    q->nparams = n;
    return LDB_OK;
}

/* Compiles, subscribes and hydrates; the initial result stays staged as
 * the first batch (all inserts), published by live_open. */
static int start(ldb_live *q, struct eval_error *err)
{
    int rc = live_compile(q, err);
    if (!rc)
        rc = store_subscribe(q->reg->store, SUB_COMMIT, &live_hooks, q, &q->sub);
    if (!rc)
        rc = live_hydrate(q);
    if (!rc)
        rc = run_and_stage(q);
    if (!rc && q->state != LIVE_OK)
        rc = q->errcode;
    if (!rc)
        rc = result_commit(&q->rs);
    if (rc)
        result_discard(&q->rs);
    if (rc && err->code == LDB_OK) {
        err->code = rc;
        snprintf(err->msg, sizeof err->msg, "%s",
                 q->state != LIVE_OK ? q->err.msg : ldb_errstr(rc));
    }
    return rc;
}

int live_open(struct live_registry *reg, struct plan *plan, const value *params,
              uint32_t nparams, void (*release)(void *owner), void *owner,
              ldb_change_fn fn, void *ctx, ldb_live **out, struct eval_error *err)
{
    *out = NULL;
    int rc = LDB_OK;
    if (store_in_explicit_transaction(reg->store)) {
        rc = LDB_MISUSE;
        snprintf(err->msg, sizeof err->msg,
                 "a live query cannot be opened inside a transaction");
    } else if (reg->publishing) {
        rc = LDB_MISUSE;
        snprintf(err->msg, sizeof err->msg,
                 "a live query cannot be opened from a live query callback");
    }
    ldb_live *q = rc ? NULL : mem_calloc(1, sizeof *q);
    if (!rc && (!q || vec_reserve(&reg->queries, 1))) {
        mem_free(q);
        q = NULL;
        rc = LDB_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
    }
    if (rc) {
        err->code = rc;
        if (release)
            release(owner);
        return rc;
    }
    q->reg = reg;
    q->fn = fn;
    q->ctx = ctx;
    q->plan = plan;
    q->release = release;
    q->owner = owner;
    q->limit = -1;
    plan_arena_init(&q->pa);
    arena_init(&q->cba, 4096);
    reg->queries.data[reg->queries.len++] = q;
    rc = copy_params(q, params, nparams);
    if (!rc)
        rc = start(q, err);
    if (rc) {
        query_free(q);
        return rc;
    }
    *out = q;
    enqueue(reg, q);
    trim_windows(q);
    live_flush(reg);
    return LDB_OK;
}

/* ---- reading ------------------------------------------------------------------------------- */

struct read_ctx {
    const ldb_live *q;
    ldb_row_fn fn;
    void *ctx;
};

static int read_visit(void *ctx, row *r, int64_t pos)
{
    (void)pos;
    struct read_ctx *rc = ctx;
    struct ldb_row view = { r->cols, rc->q->nvisible };
    return rc->fn(rc->ctx, &view) ? LDB_ABORT : LDB_OK;
}

int live_read(ldb_live *q, ldb_row_fn fn, void *ctx)
{
    struct read_ctx rc = { q, fn, ctx };
    return result_scan(&q->rs, read_visit, &rc);
}

int64_t live_count(const ldb_live *q) { return q->rs.rows; }

int live_error(const ldb_live *q, const char **msg)
{
    if (msg)
        *msg = q->state == LIVE_OK ? NULL : q->err.msg;
    return q->state == LIVE_OK ? LDB_OK : q->errcode;
}

void live_stats(const ldb_live *q, struct live_stats *out)
{
    *out = q->stats;
    struct df_counters c;
    if (q->g) {
        df_graph_counters(q->g, &c);
        out->rows_processed = c.rows_in;
        out->retained_rows = c.retained_rows + (size_t)q->rs.rows;
        out->retained_bytes = c.retained_bytes + result_bytes(&q->rs);
    }
    out->result_rows = q->rs.rows;
}

uint32_t live_columns(const ldb_live *q) { return q->nvisible; }

const char *live_column_name(const ldb_live *q, uint32_t i)
{
    return i < q->nvisible ? q->names[i] : NULL;
}

/* ---- windows ----------------------------------------------------------------------------------- */

int live_set_window(ldb_live *q, int64_t offset, int64_t limit)
{
    if (!q->window)
        return LDB_MISUSE;
    if (store_in_explicit_transaction(q->reg->store) || q->reg->publishing)
        return LDB_MISUSE;
    if (q->state != LIVE_OK)
        return q->errcode;
    if (offset < 0)
        offset = 0;
    if (limit < 0)
        limit = DF_NO_LIMIT;
    int rc = df_topk_set_window(q->window, offset, limit);
    if (rc)
        return live_fail(q, rc, NULL);
    for (size_t i = 0; i < q->sources.len; i++)
        if (q->sources.data[i].loader)
            window_loader_resize(q->sources.data[i].loader, offset, limit);
    q->offset = offset;
    q->limit = limit;
    if ((rc = run_and_stage(q)))
        return rc;
    if (result_commit(&q->rs)) {
        result_discard(&q->rs);
        return live_fail(q, LDB_NOMEM, "out of memory");
    }
    enqueue(q->reg, q);
    trim_windows(q);
    live_flush(q->reg);
    return q->state == LIVE_OK ? LDB_OK : q->errcode;
}
