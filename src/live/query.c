/*
 * query.c - the life of a live query: open (compile and hydrate), commit
 * (run the graph on the transaction's net change and install the new
 * result), publication (call the callbacks), windows, reads, close.
 *
 * Each query is a commit subscriber of the store (storage/capture.h), and
 * the registry subscribes once for publication. Commit is two-phase:
 * commit_prepare runs the graph and stages the result's changes;
 * commit_finish installs them and queues the query for publication. The
 * callbacks run only in the registry's published hook, which the store
 * calls once the commit is complete and it is out of every statement and
 * hook, so every query has installed its new result by then and a
 * callback reading any live query sees the same commit (law 9). A query
 * whose graph fails stops there, in a terminal state; a failure never
 * cancels the commit.
 *
 * Callbacks (on_change, and ldb_live_read's row function) run while the
 * registry is publishing or reading: then nothing may change a result
 * (writes, window moves and opens are refused by the API or here), and a
 * query closed from a callback is only marked, and freed when the
 * outermost callback has returned.
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

static void on_published(void *ctx, struct store *s);

static const struct store_hooks registry_hooks = { .published = on_published };

int live_registry_new(struct store *st, void *user, struct live_registry **out)
{
    struct live_registry *reg = mem_calloc(1, sizeof *reg);
    if (!reg)
        return LDB_NOMEM;
    reg->store = st;
    reg->user = user;
    int rc = store_subscribe(st, SUB_COMMIT, &registry_hooks, reg, &reg->sub);
    if (rc) {
        mem_free(reg);
        return rc;
    }
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
    store_unsubscribe(reg->store, reg->sub);
    mem_free(reg);
}

int live_registry_add(struct live_registry *reg, ldb_live *q)
{
    int rc = vec_reserve(&reg->queries, 1);
    if (rc)
        return rc;
    q->reg_pos = reg->queries.len;
    reg->queries.data[reg->queries.len++] = q;
    return LDB_OK;
}

void live_registry_remove(struct live_registry *reg, ldb_live *q)
{
    size_t i = q->reg_pos;
    if (i >= reg->queries.len || reg->queries.data[i] != q)
        return;
    reg->queries.data[i] = vec_last(&reg->queries);
    reg->queries.data[i]->reg_pos = i;
    reg->queries.len--;
}

/* ---- applying ---------------------------------------------------------------------- */

/* One change's rows as public views: key, before, after. */
struct change_views {
    struct ldb_row key, before, after;
};

void live_batch_drop(ldb_live *q)
{
    result_discard(&q->rs);
    mem_free(q->views.out); /* the block of all four */
    memset(&q->views, 0, sizeof q->views);
}

/* The memory the public views of n changes need, taken when they are
 * staged, so that publishing a result once installed cannot fail: one
 * block (changes, their row views, key values, cell rows). A child's
 * callback may be set during the publication that shows it, so a
 * child's views are always reserved. */
/* Key columns side by side in the row: a change's key view points into
 * its named row, and the block needs no key values. */
static bool key_in_row(const ldb_live *q)
{
    for (uint32_t i = 1; i < q->rs.nkey; i++)
        if (q->rs.key[i] != q->rs.key[0] + i)
            return false;
    return q->rs.nkey > 0;
}

int live_views_reserve(ldb_live *q, size_t n)
{
    if (n == 0 || (!q->fn && !q->is_child))
        return LDB_OK;
    size_t ncells = live_has_cells(q) ? 2 * n * live_layout_of(q)->nvisible : 0;
    size_t out = n * sizeof(ldb_change), rows = n * sizeof(struct change_views);
    size_t keys = key_in_row(q) ? 0 : n * q->rs.nkey * sizeof(value);
    size_t cells = ncells * sizeof(value);
    _Static_assert(sizeof(ldb_change) % _Alignof(value) == 0 &&
                       sizeof(struct change_views) % _Alignof(value) == 0,
                   "views are laid out back to back");
    char *block = mem_alloc(out + rows + keys + cells);
    if (!block)
        return LDB_NOMEM;
    q->views.out = (ldb_change *)block;
    q->views.rows = block + out;
    q->views.keys = (value *)(block + out + rows);
    q->views.cells = ncells ? (value *)(block + out + rows + keys) : NULL;
    return LDB_OK;
}

/* Stages the program's accumulated output as the result's next changes. */
static int stage(ldb_live *q)
{
    struct live_program *prog = q->p;
    live_batch_drop(q);
    int rc = result_stage(&q->rs, prog->acc.e, prog->acc.len);
    if (!rc)
        rc = live_views_reserve(q, q->rs.staged.len);
    if (!rc)
        rc = live_children_stage(q);
    live_program_clear_output(prog); /* the root's and the children's, read */
    if (rc) {
        live_batch_drop(q);
        live_children_discard(q);
        return live_fail(prog, rc, rc == LDB_NOMEM       ? "out of memory"
                                   : rc == LDB_CONSTRAINT ? "two different rows have the same result key"
                                                          : NULL);
    }
    return LDB_OK;
}

/* After a result is installed (and, but at open, published: a failure
 * here fails the query, whose last published result must then be the
 * one installed): the window's prefix shrinks if it grew. */
static int trim_windows(ldb_live *q)
{
    q->p->published = &q->rs;
    struct intr *scope = intr_swap(NULL); /* an interrupt must not fail an open query */
    int rc = live_program_trim(q->p);
    intr_swap(scope);
    return rc;
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
    if (old->window && prog->window) /* the window as ldb_live_set_window left it */
        rc = live_program_set_window(prog, old->offset, old->limit);
    if (!rc)
        rc = live_program_hydrate(prog);
    if (!rc)
        rc = result_scan(&q->rs, negate_visit, &prog->acc);
    if (!rc)
        rc = df_batch_consolidate(&prog->acc);
    if (!rc)
        rc = live_children_negate(q, prog);
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

static void enqueue(struct live_registry *reg, ldb_live *q);

static int on_commit_prepare(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    ldb_live *q = ctx;
    if (q->p->state != LIVE_OK || q->closing)
        return LDB_OK;
    int rc = d->schema_changed ? live_program_check_schema(q->p, &q->p->err) : LDB_OK;
    bool touched;
    if (rc == LDB_NOTFOUND)
        rebuild(q); /* the rebuilt program has this commit's rows */
    else if (rc)
        live_fail(q->p, rc, q->p->err.msg);
    else if (live_program_apply(q->p, d, &touched) == LDB_OK && touched) {
        if (q->holds) /* private until the hold ends: one net change */
            live_program_consolidate(q->p);
        else
            stage(q);
    }
    if (q->p->state != LIVE_OK)
        enqueue(q->reg, q); /* its status callback learns it at publication */
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

/* Installs the staged changes of the root and of every touched handle,
 * all or none: a failure leaves them as they were and the query failed
 * (its graph is already past that result). */
static int install(ldb_live *q)
{
    int rc = result_prepare(&q->rs);
    if (!rc && (rc = live_children_prepare(q)))
        result_unprepare(&q->rs);
    if (rc) { /* root and handles as they were: the last published result */
        live_batch_drop(q);
        live_children_discard(q);
        return live_fail(q->p, LDB_NOMEM, "out of memory");
    }
    result_finish(&q->rs);
    live_children_finish(q);
    return LDB_OK;
}

/* Whether an installed commit has anything to publish (or retire). */
static bool has_batches(const ldb_live *q)
{
    size_t n;
    result_changes(&q->rs, &n);
    return n > 0 || live_children_have_batches(q);
}

static void on_commit_finish(void *ctx, struct store *s, bool committed)
{
    (void)s;
    ldb_live *q = ctx;
    if (q->p->state != LIVE_OK)
        return;
    if (!has_batches(q)) {
        if (committed && !q->holds)
            trim_windows(q); /* rows may have entered a window's prefix past it */
        return;
    }
    if (!committed) {
        /* the graph advanced for a commit that did not happen */
        live_batch_drop(q);
        live_children_discard(q);
        live_fail(q->p, LDB_ERROR, "the commit this query prepared for was cancelled");
        return;
    }
    if (install(q) == LDB_OK) {
        if (has_batches(q)) {
            enqueue(q->reg, q); /* trimmed once published */
            return;
        }
        trim_windows(q);
    }
    live_batch_drop(q); /* nothing to report, or the query failed */
    if (q->p->state != LIVE_OK)
        enqueue(q->reg, q); /* for its status callback */
}

/* No rollback hook: live queries consume only committed changes (and
 * cannot be opened inside a transaction), so a rollback never undoes
 * anything they saw. */
static const struct store_hooks live_hooks = {
    .commit_prepare = on_commit_prepare,
    .commit_finish = on_commit_finish,
};

/* ---- publication ---------------------------------------------------------------------- */

/* A row's public view: its visible columns, or a copy of them with its
 * LIVE cells made handles (at cells, when the rows have any). */
static struct ldb_row row_view(const ldb_live *q, const row *r, uint32_t nvis, value *cells)
{
    if (!r)
        return (struct ldb_row){ NULL, nvis };
    if (!cells)
        return (struct ldb_row){ r->cols, nvis };
    live_cells_fill(q, r, cells);
    return (struct ldb_row){ cells, nvis };
}

void live_publish_batch(ldb_live *q)
{
    size_t n;
    const struct result_change *chs = result_changes(&q->rs, &n);
    if (n == 0 || !q->fn)
        return;
    uint32_t nkey = q->rs.nkey;
    ldb_change *out = q->views.out;
    struct change_views *views = q->views.rows;
    value *keys = q->views.keys;
    uint32_t nvis = live_layout_of(q)->nvisible;
    value *cells = q->views.cells;
    bool in_row = key_in_row(q);
    for (size_t i = 0; i < n; i++) {
        const struct result_change *c = &chs[i];
        struct change_views *v = &views[i];
        if (in_row) {
            v->key = (struct ldb_row){ c->named->cols + q->rs.key[0], nkey };
        } else {
            value *k = keys + i * nkey;
            for (uint32_t j = 0; j < nkey; j++)
                k[j] = c->named->cols[q->rs.key[j]]; /* borrowed views, no references */
            v->key = (struct ldb_row){ k, nkey };
        }
        v->before = row_view(q, c->before, nvis, cells ? cells + 2 * i * nvis : NULL);
        v->after = row_view(q, c->after, nvis, cells ? cells + (2 * i + 1) * nvis : NULL);
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
}

static bool in_callback(const struct live_registry *reg)
{
    return reg->publishing || reg->reading;
}

/* Frees the queries closed from callbacks, once none is running. */
static void free_closed(struct live_registry *reg)
{
    if (in_callback(reg))
        return;
    while (reg->closed) {
        ldb_live *q = reg->closed;
        reg->closed = q->next_closed;
        query_free(q);
    }
}

void live_mark_closed(ldb_live *q)
{
    if (q->closing)
        return;
    q->closing = true;
    q->next_closed = q->reg->closed;
    q->reg->closed = q;
}

/* The commit is complete: the batches it installed are published, in
 * the order the queries installed them. */
static void on_published(void *ctx, struct store *s)
{
    (void)s;
    struct live_registry *reg = ctx;
    if (in_callback(reg))
        return; /* a callback cannot commit: nothing can be pending */
    reg->publishing = true;
    while (reg->pending_head) {
        ldb_live *q = reg->pending_head;
        reg->pending_head = q->next_pending;
        if (!reg->pending_head)
            reg->pending_tail = NULL;
        q->pending = false;
        if (q->p->state != LIVE_OK) { /* failed in a commit: for its status callback */
            live_batch_drop(q);
            live_notify_status(q);
            continue;
        }
        if (!q->closing)
            live_publish_batch(q);
        live_batch_drop(q);
        live_children_publish(q);
        if (!q->closing && trim_windows(q))
            live_notify_status(q);
    }
    reg->publishing = false;
    free_closed(reg);
}

bool live_in_callback(const struct live_registry *reg) { return in_callback(reg); }

/*
 * Publishes q's installed batch at once (an open or a window move, when
 * nothing else is pending). Returns LDB_OK, LDB_ABORT when the callback
 * closed q (q is freed), or the error that failed q.
 */
static int deliver(ldb_live *q)
{
    struct live_registry *reg = q->reg;
    reg->publishing = true;
    if (q->p->state == LIVE_OK)
        live_publish_batch(q);
    live_batch_drop(q);
    live_children_publish(q);
    reg->publishing = false;
    int rc = q->closing ? LDB_ABORT : trim_windows(q);
    if (rc && rc != LDB_ABORT)
        live_notify_status(q);
    free_closed(reg);
    return rc;
}

/* ---- open and close -------------------------------------------------------------------- */

static void query_free(ldb_live *q)
{
    struct live_registry *reg = q->reg;
    if (q->is_child) {
        live_child_free(q);
        return;
    }
    if (q->sub)
        store_unsubscribe(reg->store, q->sub);
    live_children_free(q); /* their demand is gone before the root's */
    live_demand_gone(q);
    live_registry_remove(reg, q);
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
    live_batch_drop(q);
    result_free(&q->rs);
    if (q->release)
        q->release(q->owner);
    mem_free(q->status_msg);
    mem_free(q);
}

void live_close(ldb_live *q)
{
    if (!q || q->is_child)
        return;
    if (in_callback(q->reg)) {
        live_mark_closed(q); /* freed when the outermost callback returns */
        return;
    }
    query_free(q);
}

/* Compiles, subscribes and hydrates; the initial result is installed as
 * the first batch (all inserts). */
static int start(ldb_live *q, const value *params, uint32_t nparams, struct eval_error *err)
{
    int rc = live_program_new(q->plan, params, nparams, true, &q->p, err);
    if (rc)
        return rc;
    struct live_program *prog = q->p;
    const struct live_layout *lay = &prog->lay;
    rc = result_init(&q->rs, lay->key, lay->keycoll, lay->nkey, lay->sort, lay->nsort,
                     lay->nvisible, q->ordered);
    if (!rc)
        rc = live_children_init(q);
    if (!rc)
        rc = store_subscribe(q->reg->store, SUB_COMMIT, &live_hooks, q, &q->sub);
    if (!rc)
        rc = live_program_hydrate(prog);
    if (!rc)
        rc = stage(q);
    if (!rc)
        rc = install(q);
    if (!rc) /* before anything is published: a failure leaves nothing */
        rc = trim_windows(q);
    if (!rc)
        rc = live_demand_open(q);
    if (rc) {
        live_batch_drop(q);
        live_error_out(err, rc, prog->state != LIVE_OK ? prog->err.msg : ldb_errstr(rc));
    }
    return rc;
}

int live_open(struct live_registry *reg, struct plan *plan, bool ordered, const value *params,
              uint32_t nparams, void (*release)(void *owner), void *owner,
              ldb_change_fn fn, void *ctx, ldb_live **out, struct eval_error *err)
{
    *out = NULL;
    int rc = LDB_OK;
    if (store_in_explicit_transaction(reg->store))
        rc = live_error_out(err, LDB_MISUSE,
                            "a live query cannot be opened inside a transaction");
    else if (in_callback(reg))
        rc = live_error_out(err, LDB_MISUSE,
                            "a live query cannot be opened from inside a live query callback");
    ldb_live *q = rc ? NULL : mem_calloc(1, sizeof *q);
    if (!rc && (!q || live_registry_add(reg, q))) {
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
    q->ordered = ordered;
    q->release = release;
    q->owner = owner;
    if ((rc = start(q, params, nparams, err))) {
        query_free(q);
        return rc;
    }
    rc = deliver(q);
    if (rc == LDB_ABORT) /* closed by its first callback */
        return LDB_OK;
    if (rc) {
        live_error_out(err, rc, q->p->err.msg);
        query_free(q);
        return rc;
    }
    *out = q;
    return LDB_OK;
}

/* ---- reading ------------------------------------------------------------------------------- */

struct read_ctx {
    const ldb_live *q;
    ldb_row_fn fn;
    void *ctx;
    uint32_t nvis;
    value *cells; /* rows with LIVE cells: one row's view */
};

static int read_visit(void *ctx, row *r, int64_t pos)
{
    (void)pos;
    struct read_ctx *rc = ctx;
    struct ldb_row view = row_view(rc->q, r, rc->nvis, rc->cells);
    return rc->fn(rc->ctx, &view) ? LDB_ABORT : LDB_OK;
}

/* A child that left its bucket has no rows; once its query is closed,
 * no layout either. */
static bool detached(const ldb_live *q) { return q->is_child && (!q->root || q->gone); }

/* The program that computes q's rows (a child's: its root's). */
static const struct live_program *program_of(const ldb_live *q)
{
    return q->is_child ? (q->root ? q->root->p : NULL) : q->p;
}

int live_read(ldb_live *q, ldb_row_fn fn, void *ctx)
{
    if (detached(q))
        return LDB_OK;
    struct read_ctx rc = { q, fn, ctx, live_layout_of(q)->nvisible, NULL };
    if (live_has_cells(q) && !(rc.cells = mem_alloc((rc.nvis + 1) * sizeof *rc.cells)))
        return LDB_NOMEM;
    struct live_registry *reg = q->reg;
    reg->reading++; /* the scan's result must not change under it */
    int code = result_scan(&q->rs, read_visit, &rc);
    reg->reading--;
    mem_free(rc.cells);
    free_closed(reg);
    return code;
}

void live_free_closed(struct live_registry *reg) { free_closed(reg); }

/* ---- holds (a source replay's publication barrier) ----------------------------------------- */

void live_terminate(ldb_live *q, const char *msg)
{
    if (q->p->state == LIVE_OK)
        live_fail(q->p, LDB_ERROR, msg);
}

void live_hold(ldb_live *q) { q->holds++; }

void live_unhold(ldb_live *q)
{
    if (q->holds == 0 || --q->holds > 0 || q->closing || q->p->state != LIVE_OK)
        return;
    if (!live_program_has_output(q->p))
        return; /* the replacement equals the last published result */
    if (stage(q) || install(q))
        return; /* the query failed: its last published result stays */
    if (has_batches(q))
        deliver(q); /* one batch: the last public result to the replacement */
    else
        live_batch_drop(q);
}

int64_t live_count(const ldb_live *q) { return detached(q) ? 0 : q->rs.rows; }

int live_error(const ldb_live *q, const char **msg)
{
    const struct live_program *prog = program_of(q);
    bool ok = !prog || prog->state == LIVE_OK;
    if (msg)
        *msg = ok ? NULL : prog->err.msg;
    return ok ? LDB_OK : prog->errcode;
}

void live_stats(const ldb_live *q, struct live_stats *out)
{
    const struct live_program *prog = program_of(q);
    memset(out, 0, sizeof *out);
    if (!prog)
        return;
    *out = prog->stats;
    struct df_counters c;
    df_graph_counters(prog->g, &c);
    out->rows_processed = c.rows_in;
    out->retained_rows = q->is_child ? 0 : c.retained_rows;
    out->retained_bytes = q->is_child ? 0 : c.retained_bytes;
    out->retained_rows += detached(q) ? 0 : (size_t)q->rs.rows;
    out->retained_bytes += detached(q) ? 0 : result_bytes(&q->rs);
    out->result_rows = live_count(q);
    if (!q->is_child)
        live_children_stats(q, out);
}

void *live_owner(const ldb_live *q) { return q->owner; }

void *live_db(const ldb_live *q) { return q->reg->user; }

uint32_t live_columns(const ldb_live *q)
{
    const struct live_layout *lay = q->is_child && !q->root ? NULL : live_layout_of(q);
    return lay ? lay->nvisible : 0;
}

const char *live_column_name(const ldb_live *q, uint32_t i)
{
    return i < live_columns(q) ? live_layout_of(q)->names[i] : NULL;
}

/* ---- child handles ------------------------------------------------------------------------- */

bool live_is_child(const ldb_live *q) { return q->is_child; }

uint64_t live_child_id(const ldb_live *q) { return q->id; }

int live_retain(ldb_live *q)
{
    if (!q->is_child || q->retains == UINT32_MAX)
        return LDB_MISUSE;
    q->retains++;
    return LDB_OK;
}

int live_release(ldb_live *q)
{
    if (!q->is_child || q->retains == 0)
        return LDB_MISUSE;
    if (--q->retains == 0 && detached(q)) {
        live_mark_closed(q);
        free_closed(q->reg);
    }
    return LDB_OK;
}

void live_set_callback(ldb_live *q, ldb_change_fn fn, void *ctx)
{
    q->fn = fn;
    q->ctx = ctx;
}

/* ---- windows ----------------------------------------------------------------------------------- */

int live_set_window(ldb_live *q, int64_t offset, int64_t limit, struct eval_error *err)
{
    struct live_program *prog = q->p;
    if (q->is_child || !prog->window || !q->ordered)
        return live_error_out(err, LDB_MISUSE,
                              "only a query with ORDER BY ... LIMIT has a window to move");
    if (store_in_explicit_transaction(q->reg->store))
        return live_error_out(err, LDB_MISUSE, "a window cannot move inside a transaction");
    if (in_callback(q->reg))
        return live_error_out(err, LDB_MISUSE,
                              "a window cannot move from inside a live query callback");
    if (prog->state != LIVE_OK)
        return live_error_out(err, prog->errcode, prog->err.msg);
    int rc = live_program_set_window(prog, offset < 0 ? 0 : offset, limit < 0 ? DF_NO_LIMIT : limit);
    if (!rc)
        rc = live_program_run(prog);
    if (!rc && q->reg->dhooks.window_moved)
        q->reg->dhooks.window_moved(q->reg->dhooks.ctx, q);
    if (!rc && q->holds) /* published with what the hold waits for */
        return live_program_consolidate(prog) ? live_error_out(err, prog->errcode, prog->err.msg)
                                              : LDB_OK;
    if (!rc)
        rc = stage(q);
    if (!rc)
        rc = install(q);
    if (!rc)
        rc = deliver(q);
    if (rc == LDB_ABORT) /* closed by its callback */
        return LDB_OK;
    return rc ? live_error_out(err, rc, prog->err.msg) : LDB_OK;
}
