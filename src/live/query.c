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

#include "base/interrupt.h"
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

/* ---- applying ---------------------------------------------------------------------- */

/* Stages the program's accumulated output as the result's next changes. */
static int stage(ldb_live *q)
{
    struct live_program *prog = q->p;
    int rc = result_stage(&q->rs, prog->acc.e, prog->acc.len);
    df_batch_clear(&prog->acc);
    if (rc == LDB_CONSTRAINT)
        return live_fail(prog, rc, "two different rows have the same result key");
    if (rc)
        return live_fail(prog, rc, rc == LDB_NOMEM ? "out of memory" : NULL);
    return LDB_OK;
}

/* After a result is installed: the window's prefix shrinks if it grew. */
static void trim_windows(ldb_live *q)
{
    q->p->published = &q->rs;
    struct intr *scope = intr_swap(NULL); /* an interrupt must not fail an open query */
    live_program_trim(q->p);
    intr_swap(scope);
}

/* Adds every current result row with weight -1 (the result's negation). */
static int negate_visit(void *ctx, row *r, int64_t pos)
{
    (void)pos;
    return df_batch_push(ctx, r, -1);
}

/*
 * An index the graph reads was dropped: compile the plan again against
 * the current schema, hydrate from the tables as they are now (this
 * commit included), and stage the difference to the published result
 * (normally nothing).
 */
static void rebuild(ldb_live *q)
{
    struct live_program *old = q->p, *prog;
    struct eval_error err = { 0 };
    int rc = live_program_new(q->plan, old->params, old->nparams, true, &prog, &err);
    if (rc) {
        live_fail(old, rc, err.msg);
        return;
    }
    rc = live_program_hydrate(prog);
    if (!rc)
        rc = result_scan(&q->rs, negate_visit, &prog->acc);
    if (!rc)
        rc = df_batch_consolidate(&prog->acc);
    if (rc) {
        live_fail(old, rc, prog->state != LIVE_OK ? prog->err.msg : NULL);
        live_program_free(prog);
        return;
    }
    q->p = prog;
    live_program_free(old);
    stage(q);
}

/* ---- commit hooks ------------------------------------------------------------------ */

static int on_commit_prepare(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    ldb_live *q = ctx;
    if (q->p->state != LIVE_OK || q->closing)
        return LDB_OK;
    if (d->schema_changed) {
        int rc = live_program_check_schema(q->p, &q->p->err);
        if (rc == LDB_NOTFOUND)
            rebuild(q); /* the rebuilt program has this commit's rows */
        else if (rc)
            live_fail(q->p, rc, q->p->err.msg);
        if (rc)
            return LDB_OK;
    }
    bool touched;
    if (live_program_apply(q->p, d, &touched) == LDB_OK && touched)
        stage(q);
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
    if (q->p->state != LIVE_OK || n == 0)
        return;
    if (!committed) {
        /* the graph advanced for a commit that did not happen */
        result_discard(&q->rs);
        live_fail(q->p, LDB_ERROR, "the commit this query prepared for was cancelled");
        return;
    }
    if (result_commit(&q->rs)) {
        result_discard(&q->rs);
        live_fail(q->p, LDB_NOMEM, "out of memory");
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
};

static void publish(ldb_live *q)
{
    size_t n;
    const struct result_change *chs = result_changes(&q->rs, &n);
    if (n == 0 || !q->fn || q->p->state != LIVE_OK)
        return;
    uint32_t nkey = q->rs.nkey;
    ldb_change *out = mem_alloc(n * sizeof *out);
    struct change_views *views = mem_alloc(n * sizeof *views);
    value *keys = mem_alloc((n * nkey + 1) * sizeof *keys);
    if (!out || !views || !keys) {
        mem_free(out);
        mem_free(views);
        mem_free(keys);
        live_fail(q->p, LDB_NOMEM, "out of memory while publishing");
        return;
    }
    uint32_t nvis = q->p->nvisible;
    for (size_t i = 0; i < n; i++) {
        const struct result_change *c = &chs[i];
        struct change_views *v = &views[i];
        const row *r = c->after ? c->after : c->before;
        value *k = keys + i * nkey;
        for (uint32_t j = 0; j < nkey; j++)
            k[j] = r->cols[q->rs.key[j]]; /* borrowed views, no references */
        v->key = (struct ldb_row){ k, nkey };
        v->before = (struct ldb_row){ c->before ? c->before->cols : NULL, nvis };
        v->after = (struct ldb_row){ c->after ? c->after->cols : NULL, nvis };
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
    mem_free(keys);
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
    live_program_free(q->p);
    result_free(&q->rs);
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

/* Compiles, subscribes and hydrates; the initial result is staged as the
 * first batch (all inserts). */
static int start(ldb_live *q, const value *params, uint32_t nparams, struct eval_error *err)
{
    int rc = live_program_new(q->plan, params, nparams, true, &q->p, err);
    if (rc)
        return rc;
    struct live_program *prog = q->p;
    rc = result_init(&q->rs, prog->key, prog->keycoll, prog->nkey, prog->sort, prog->nsort);
    if (!rc)
        rc = store_subscribe(q->reg->store, SUB_COMMIT, &live_hooks, q, &q->sub);
    if (!rc)
        rc = live_program_hydrate(prog);
    if (!rc)
        rc = stage(q);
    if (!rc)
        rc = result_commit(&q->rs);
    if (rc) {
        result_discard(&q->rs);
        live_error_out(err, rc, prog->state != LIVE_OK ? prog->err.msg : ldb_errstr(rc));
    }
    return rc;
}

int live_open(struct live_registry *reg, struct plan *plan, const value *params,
              uint32_t nparams, void (*release)(void *owner), void *owner,
              ldb_change_fn fn, void *ctx, ldb_live **out, struct eval_error *err)
{
    *out = NULL;
    int rc = LDB_OK;
    if (store_in_explicit_transaction(reg->store))
        rc = live_error_out(err, LDB_MISUSE,
                            "a live query cannot be opened inside a transaction");
    else if (reg->publishing)
        rc = live_error_out(err, LDB_MISUSE,
                            "a live query cannot be opened from a live query callback");
    ldb_live *q = rc ? NULL : mem_calloc(1, sizeof *q);
    if (!rc && (!q || vec_reserve(&reg->queries, 1))) {
        mem_free(q);
        q = NULL;
        rc = live_error_out(err, LDB_NOMEM, "out of memory");
    }
    if (rc) {
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
    reg->queries.data[reg->queries.len++] = q;
    if ((rc = start(q, params, nparams, err))) {
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
    struct ldb_row view = { r->cols, rc->q->p->nvisible };
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
    const struct live_program *prog = q->p;
    if (msg)
        *msg = prog->state == LIVE_OK ? NULL : prog->err.msg;
    return prog->state == LIVE_OK ? LDB_OK : prog->errcode;
}

void live_stats(const ldb_live *q, struct live_stats *out)
{
    const struct live_program *prog = q->p;
    *out = prog->stats;
    struct df_counters c;
    df_graph_counters(prog->g, &c);
    out->rows_processed = c.rows_in;
    out->retained_rows = c.retained_rows + (size_t)q->rs.rows;
    out->retained_bytes = c.retained_bytes + result_bytes(&q->rs);
    out->result_rows = q->rs.rows;
}

uint32_t live_columns(const ldb_live *q) { return q->p->nvisible; }

const char *live_column_name(const ldb_live *q, uint32_t i)
{
    return i < q->p->nvisible ? q->p->names[i] : NULL;
}

/* ---- windows ----------------------------------------------------------------------------------- */

int live_set_window(ldb_live *q, int64_t offset, int64_t limit)
{
    struct live_program *prog = q->p;
    if (!prog->window)
        return LDB_MISUSE;
    if (store_in_explicit_transaction(q->reg->store) || q->reg->publishing)
        return LDB_MISUSE;
    if (prog->state != LIVE_OK)
        return prog->errcode;
    if (offset < 0)
        offset = 0;
    if (limit < 0)
        limit = DF_NO_LIMIT;
    int rc = df_topk_set_window(prog->window, offset, limit);
    if (rc)
        return live_fail(prog, rc, NULL);
    for (size_t i = 0; i < prog->sources.len; i++)
        if (prog->sources.data[i].loader)
            window_loader_resize(prog->sources.data[i].loader, offset, limit);
    prog->offset = offset;
    prog->limit = limit;
    if ((rc = live_program_run(prog)) || (rc = stage(q)))
        return rc;
    if (result_commit(&q->rs)) {
        result_discard(&q->rs);
        return live_fail(prog, LDB_NOMEM, "out of memory");
    }
    enqueue(q->reg, q);
    trim_windows(q);
    live_flush(q->reg);
    return prog->state == LIVE_OK ? LDB_OK : prog->errcode;
}
