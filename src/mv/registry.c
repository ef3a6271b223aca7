/*
 * registry.c - the views of one database and the store hooks that keep
 * them: maintenance at the end of every statement, undo after rollbacks,
 * dropped indexes, and the refusal to drop a table a view needs.
 *
 * While any view exists the registry is one statement subscriber of the
 * store (storage/capture.h), and every hook it needs comes with that one
 * registration: the API layer calls nothing for maintenance. At the end
 * of a statement it receives the changes made since it last consumed and
 * hands them to every view, in REVERSE creation order:
 * a view that reads another view's backing table then applies its other
 * sources' changes while that table still shows the state its dataflow
 * already reflects (a join reads table indexes as they are at the run, so
 * a program must never see a table ahead of the changes it was given).
 * The producers' writes come back as the next round's delta, which the
 * consumers apply in turn: each round is consistent, and the rounds end
 * with every view up to date, producers before consumers.
 *
 * Undo. Backing tables are restored by the undo log like any table; what
 * the registry restores is dataflow state. The store gives back each
 * delta the registry consumed that a rollback undid, newest first, with
 * the tables already restored; a dataflow view that applied it pushes its
 * negation without running, and the settled hook runs it once the
 * rollback is complete, when the tables show exactly the state the
 * negation leads to. A view whose state cannot be recovered that way (a
 * failed graph, a rollback below the point its state was built at) is
 * marked stale and rebuilt from the tables before its next use. A
 * statement hook that fails undoes what this call applied the same way,
 * so the store sees it as not having consumed anything.
 *
 * Life of a view: registered when made; a DROP only marks its table
 * dropped (maintenance skips it) until the drop commits, when the store
 * frees the table and the table's on_free hook frees the view; a rolled
 * back CREATE frees it the same way. The registry unsubscribes when its
 * last view is freed.
 */
#include "mv/mv_internal.h"

#include "base/mem.h"
#include "live/program.h"
#include "sql/parser.h"

#include <stdio.h>
#include <string.h>

/* Live and not dropped: maintained by statements. */
static bool mv_active(const struct mv_view *v) { return v->backing && !v->backing->dropped; }

/* ---- applying and undoing one delta ------------------------------------------------ */

static const struct table_delta *single_source(const struct mv_view *v, const struct delta *d)
{
    return delta_for_table(d, v->sources.data[0]);
}

uint64_t mv_source_changes(const struct mv_view *v, const struct delta *d)
{
    uint64_t n = 0;
    for (size_t i = 0; i < v->sources.len; i++) {
        const struct table_delta *td = delta_for_table(d, v->sources.data[i]);
        n += td ? td->n : 0;
    }
    return n;
}

static int view_apply(struct mv_view *v, const struct delta *d)
{
    if (v->strategy == MV_DATAFLOW && v->stale)
        return mv_prog_resync(v); /* the tables already include d */
    uint64_t n = mv_source_changes(v, d);
    if (n == 0)
        return LDB_OK;
    v->c.runs++;
    v->c.changes += n;
    switch (v->strategy) {
    case MV_PROJECTION: return mv_row_apply(v, single_source(v, d));
    case MV_AGGREGATE: return mv_agg_apply(v, single_source(v, d));
    case MV_DATAFLOW: return mv_prog_apply(v, d);
    case MV_REBUILD: return mv_rebuild_apply(v);
    }
    return LDB_INTERNAL;
}

/*
 * Whether the dataflow of v applied d (and must take it back): its state
 * was built before d, in this transaction or in an earlier one (which
 * committed: a rollback below a base makes the view stale, see
 * on_settled).
 */
static bool applied(const struct mv_view *v, const struct delta *d, struct store_mark now)
{
    if (v->strategy != MV_DATAFLOW || !v->backing || v->stale || d->from >= v->dropped_at)
        return false;
    return v->base.txn != now.txn || v->base.pos <= d->from;
}

/* The statement's message: the view's name, then what failed. */
static int view_failed(struct mv_view *v, int rc)
{
    char msg[sizeof v->err.msg];
    snprintf(msg, sizeof msg, "%s",
             rc == LDB_NOMEM ? "out of memory"
             : v->err.msg[0] ? v->err.msg
                             : store_errmsg(v->reg->store));
    memset(&v->err, 0, sizeof v->err);
    return store_error(v->reg->store, rc, "materialized view %s: %s", v->name, msg);
}

static int on_statement(void *ctx, struct store *s, const struct delta *d)
{
    struct mv_registry *reg = ctx;
    size_t n = reg->views.len;
    for (size_t i = n; i-- > 0;) {
        struct mv_view *v = reg->views.data[i];
        if (!mv_active(v))
            continue;
        int rc = view_apply(v, d);
        if (rc == LDB_OK)
            continue;
        rc = view_failed(v, rc);
        struct store_mark now = store_mark(s);
        for (size_t k = i + 1; k < n; k++)
            if (mv_active(reg->views.data[k]) && applied(reg->views.data[k], d, now))
                mv_prog_unapply(reg->views.data[k], d);
        return rc;
    }
    return LDB_OK;
}

static void on_rollback(void *ctx, struct store *s, const struct delta *undone)
{
    struct mv_registry *reg = ctx;
    if (!undone)
        return; /* changes from before the registry joined: no view saw them */
    struct store_mark now = store_mark(s);
    for (size_t i = 0; i < reg->views.len; i++)
        if (applied(reg->views.data[i], undone, now))
            mv_prog_unapply(reg->views.data[i], undone);
}

/* Only changes of tables some view reads reach the registry: a write to
 * any other table (a backing table nobody reads included) costs no delta. */
static bool wants(void *ctx, const struct table *t)
{
    const struct mv_registry *reg = ctx;
    for (size_t i = 0; i < reg->views.len; i++) {
        const struct mv_view *v = reg->views.data[i];
        for (size_t k = 0; k < v->sources.len; k++)
            if (v->sources.data[k] == t)
                return true;
    }
    return false;
}

/* ---- settling after rollbacks ------------------------------------------------- */

/*
 * The rollback is complete (the transaction it ended, if it ended one, is
 * still the store's mark). A dataflow view whose state was built at a
 * log position the rollback went below no longer matches any state of
 * the tables: it is rebuilt before its next use. The others run the
 * negations on_rollback pushed, and a rolled back DROP is forgotten.
 */
static void on_settled(void *ctx, struct store *s)
{
    struct mv_registry *reg = ctx;
    struct store_mark now = store_mark(s);
    for (size_t i = 0; i < reg->views.len; i++) {
        struct mv_view *v = reg->views.data[i];
        if (v->strategy != MV_DATAFLOW)
            continue;
        if (v->base.txn == now.txn && now.pos < v->base.pos)
            v->stale = true;
        if (v->pending)
            mv_prog_settle(v);
        if (v->dropped_at != MV_NOT_DROPPED && !v->backing->dropped)
            v->dropped_at = MV_NOT_DROPPED;
    }
}

/* ---- registering and freeing ------------------------------------------------------------ */

static void registry_remove(struct mv_registry *reg, struct mv_view *v)
{
    for (size_t i = 0; i < reg->views.len; i++) {
        if (reg->views.data[i] == v) {
            memmove(&reg->views.data[i], &reg->views.data[i + 1],
                    (reg->views.len - i - 1) * sizeof *reg->views.data);
            reg->views.len--;
            return;
        }
    }
}

/* The store frees the backing table: the view goes with it, and the
 * registry's subscription with the last view. */
static void on_table_free(void *ctx)
{
    struct mv_view *v = ctx;
    struct mv_registry *reg = v->reg;
    registry_remove(reg, v);
    v->backing = NULL;
    mv_view_free(v);
    if (reg->views.len == 0 && reg->sub) {
        store_unsubscribe(reg->store, reg->sub);
        reg->sub = NULL;
    }
}

static int on_index_dropped(void *ctx, struct store *s, struct table *t, struct table_index *ix);
static int on_check_drop(void *ctx, struct store *s, struct table *t);

static const struct store_hooks mv_hooks = {
    .statement = on_statement,
    .rollback = on_rollback,
    .settled = on_settled,
    .index_dropped = on_index_dropped,
    .check_drop = on_check_drop,
};

int mv_register(struct mv_registry *reg, struct mv_view *v)
{
    if (vec_reserve(&reg->views, 1))
        return LDB_NOMEM;
    if (!reg->sub) {
        int rc = store_subscribe(reg->store, SUB_STATEMENT, &mv_hooks, reg, &reg->sub);
        if (rc)
            return rc;
        store_subscription_filter(reg->sub, wants);
    }
    reg->views.data[reg->views.len++] = v;
    table_set_on_free(v->backing, on_table_free, v);
    return LDB_OK;
}

void mv_view_free(struct mv_view *v)
{
    if (!v)
        return;
    if (v->backing)
        table_set_on_free(v->backing, NULL, NULL);
    switch (v->strategy) {
    case MV_DATAFLOW: mv_prog_free(v); break;
    case MV_AGGREGATE: mv_agg_free(v); break;
    default: break;
    }
    for (size_t i = 0; i < v->views.len; i++)
        sql_ast_free(v->views.data[i]);
    vec_free(&v->views);
    vec_free(&v->sources);
    plan_arena_free(&v->pa);
    sql_ast_free(v->ast);
    mem_free(v->name);
    mem_free(v);
}

int mv_registry_new(struct store *st, const struct func_registry *funcs, struct eval_env *env,
                    struct mv_registry **out)
{
    struct mv_registry *reg = mem_calloc(1, sizeof *reg);
    if (!reg)
        return LDB_NOMEM;
    reg->store = st;
    reg->funcs = funcs;
    reg->env = env;
    *out = reg;
    return LDB_OK;
}

void mv_registry_free(struct mv_registry *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->views.len; i++)
        mv_view_free(reg->views.data[i]);
    vec_free(&reg->views);
    if (reg->sub)
        store_unsubscribe(reg->store, reg->sub);
    mem_free(reg);
}

/* ---- lookups and guards ------------------------------------------------------------------ */

struct mv_view *mv_find(const struct mv_registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->views.len; i++) {
        struct mv_view *v = reg->views.data[i];
        if (mv_active(v) && name_eq(v->name, name))
            return v;
    }
    return NULL;
}

const char *mv_backing_name(const struct mv_registry *reg, const struct table *t)
{
    for (size_t i = 0; reg && i < reg->views.len; i++)
        if (reg->views.data[i]->backing == t)
            return reg->views.data[i]->name;
    return NULL;
}

static bool reads(const struct mv_view *v, const struct table *t)
{
    for (size_t i = 0; i < v->sources.len; i++)
        if (v->sources.data[i] == t)
            return true;
    return false;
}

/* Whether v's body expands the plain view t. Its rows come from t's
 * tables (reads), but its text names t: a durable database binds that
 * text again at every open, and without t the view could not be
 * maintained (every write refused), or would follow a new t's body. */
static bool expands(const struct mv_view *v, const struct table *t)
{
    for (size_t i = 0; i < v->views.len; i++)
        if (name_eq(v->views.data[i]->stmt->u.create_view.name.name.str, table_name(t)))
            return true;
    return false;
}

/* DROP TABLE / DROP VIEW (and DROP MATERIALIZED VIEW, reg->dropping):
 * a backing table goes only with its view, a source or a plain view its
 * body names only without its readers. */
static int on_check_drop(void *ctx, struct store *s, struct table *t)
{
    struct mv_registry *reg = ctx;
    for (size_t i = 0; i < reg->views.len; i++) {
        struct mv_view *v = reg->views.data[i];
        if (!mv_active(v))
            continue;
        if (v->backing == t && v != reg->dropping)
            return store_error(s, LDB_ERROR,
                               "%s is a materialized view: use DROP MATERIALIZED VIEW %s",
                               v->name, v->name);
        if (reads(v, t) || expands(v, t))
            return store_error(s, LDB_ERROR, "cannot drop %s: materialized view %s reads it",
                               table_name(t), v->name);
    }
    return LDB_OK;
}

bool mv_reads_table(const struct mv_registry *reg, const struct table *t)
{
    for (size_t i = 0; i < reg->views.len; i++)
        if (mv_active(reg->views.data[i]) && reads(reg->views.data[i], t))
            return true;
    return false;
}

/* The first active view other than v that reads v's backing table. */
struct mv_view *mv_reader_of(const struct mv_registry *reg, const struct mv_view *v)
{
    for (size_t i = 0; i < reg->views.len; i++) {
        struct mv_view *w = reg->views.data[i];
        if (w != v && mv_active(w) && reads(w, v->backing))
            return w;
    }
    return NULL;
}

/* Views whose dataflow reads the dropped index rebuild their state
 * without it, inside the dropping statement (the other arms look indexes
 * up when they use them). */
static int on_index_dropped(void *ctx, struct store *s, struct table *t, struct table_index *ix)
{
    struct mv_registry *reg = ctx;
    (void)s;
    for (size_t i = 0; i < reg->views.len; i++) {
        struct mv_view *v = reg->views.data[i];
        if (!mv_active(v) || v->strategy != MV_DATAFLOW || !reads(v, t) ||
            (!v->stale && !live_program_reads_index(v->arm.prog.prog, ix)))
            continue;
        int rc = mv_prog_resync(v);
        if (rc)
            return view_failed(v, rc);
    }
    return LDB_OK;
}

int mv_body_error(struct mv_view *v, int rc, struct eval_error *err)
{
    err->code = rc;
    err->has_off = false;
    const char *msg = rc == LDB_NOMEM ? "out of memory"
                      : v->err.msg[0]  ? v->err.msg
                                       : store_errmsg(v->reg->store);
    snprintf(err->msg, sizeof err->msg, "materialized view %.60s: %.160s", v->name,
             msg[0] ? msg : ldb_errstr(rc));
    memset(&v->err, 0, sizeof v->err); /* reported: not a later failure's */
    return rc;
}
