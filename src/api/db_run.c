/*
 * db_run.c - compiling a prepared statement (bind, plan, result column
 * names) and running it: SELECT through the executor one row per step,
 * INSERT/UPDATE/DELETE inside a write statement, EXPLAIN as text rows,
 * transaction control on the store. Schema changes run in the sql layer
 * (ddl_run, inside a write statement opened here) and so do PRAGMAs
 * (pragma_run over the handle's pragma table); this file only gives them
 * the handle's context and reports their errors.
 *
 * Materialized views: CREATE MATERIALIZED VIEW, DROP MATERIALIZED VIEW and
 * EXPLAIN MATERIALIZED VIEW go to db_run_mv (db_mv.c).
 */
#include "api/db_internal.h"

#include "source/source.h"

#include "live/live.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/planner.h"

#include <stdio.h>
#include <string.h>

/* ---- compiling ----------------------------------------------------------------------- */

static void stmt_bind_env(ldb_stmt *s, struct bind_env *env)
{
    env->store = s->db->store;
    env->pa = &s->pa;
    env->err = &s->err;
    env->views = &s->views;
    env->funcs = &s->db->funcs;
    env->live = s->live;
}

void stmt_uncompile(ldb_stmt *s)
{
    for (size_t i = 0; i < s->views.len; i++)
        sql_ast_free(s->views.data[i]);
    vec_free(&s->views);
    plan_arena_free(&s->pa);
    plan_arena_init(&s->pa);
    for (uint32_t i = 0; i < s->ncols; i++)
        mem_free(s->colnames[i]);
    mem_free(s->colnames);
    s->colnames = NULL;
    s->ncols = 0;
    memset(&s->bound, 0, sizeof s->bound);
    s->compiled = false;
}

static int optimize_exprs(plan_arena *pa, struct expr **es, uint32_t n)
{
    int rc = LDB_OK;
    for (uint32_t i = 0; i < n && rc == LDB_OK; i++)
        if (es[i])
            rc = planner_optimize_expr(pa, es[i]);
    return rc;
}

static int optimize_bound(ldb_stmt *s)
{
    bound_stmt *b = &s->bound;
    plan_arena *pa = &s->pa;
    int rc = LDB_OK;
    switch (b->kind) {
    case AST_STMT_SELECT:
        return planner_optimize(pa, &b->u.select);
    case AST_STMT_INSERT:
        if (b->u.insert.source)
            rc = planner_optimize(pa, &b->u.insert.source);
        for (uint32_t i = 0; i < b->u.insert.nupserts && rc == LDB_OK; i++) {
            struct bound_upsert *u = &b->u.insert.upserts[i];
            rc = optimize_exprs(pa, u->set_exprs, u->nset);
            if (rc == LDB_OK)
                rc = optimize_exprs(pa, &u->where, 1);
        }
        return rc;
    case AST_STMT_UPDATE:
        rc = planner_optimize(pa, &b->u.update.rows);
        return rc ? rc : optimize_exprs(pa, b->u.update.set_exprs, b->u.update.nset);
    case AST_STMT_DELETE:
        return planner_optimize(pa, &b->u.delete_.rows);
    default:
        return LDB_OK;
    }
}

static bool binds(enum ast_stmt_kind k)
{
    return k == AST_STMT_SELECT || k == AST_STMT_INSERT || k == AST_STMT_UPDATE ||
           k == AST_STMT_DELETE;
}

/* The statement whose plan runs (EXPLAIN's inner one). */
static const ast_stmt *planned_stmt(const ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    return st->kind == AST_STMT_EXPLAIN ? st->u.explain.stmt : st;
}

static int set_columns(ldb_stmt *s, uint32_t n, const char *const *names)
{
    if (n == 0)
        return LDB_OK;
    if (!(s->colnames = mem_calloc(n, sizeof *s->colnames)))
        return LDB_NOMEM;
    s->ncols = n;
    for (uint32_t i = 0; i < n; i++) {
        const char *name = names[i] ? names[i] : "";
        if (!(s->colnames[i] = mem_strndup(name, strlen(name))))
            return LDB_NOMEM;
    }
    return LDB_OK;
}

static int result_columns(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    static const char *const plan_name[] = { "plan" };
    if (st->kind == AST_STMT_EXPLAIN || st->kind == AST_STMT_EXPLAIN_VIEW)
        return set_columns(s, 1, plan_name);
    if (st->kind == AST_STMT_PRAGMA && pragma_reads(st)) {
        const char *name = st->u.pragma.name.name.str;
        return set_columns(s, 1, &name);
    }
    if (st->kind != AST_STMT_SELECT)
        return LDB_OK;
    const struct plan *p = s->bound.u.select;
    const char **names = mem_alloc((p->ncols + 1) * sizeof *names);
    if (!names)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < p->ncols; i++)
        names[i] = p->cols[i].name;
    int rc = set_columns(s, p->ncols, names);
    mem_free(names);
    return rc;
}

int stmt_compile(ldb_stmt *s)
{
    uint64_t version = store_schema_version(s->db->store);
    if (s->compiled && s->schema_version == version)
        return LDB_OK;
    stmt_uncompile(s);
    memset(&s->err, 0, sizeof s->err);
    const ast_stmt *st = planned_stmt(s);
    int rc = LDB_OK;
    if (binds(st->kind)) {
        struct bind_env env;
        stmt_bind_env(s, &env);
        rc = bind_statement(&env, s->ast, st, &s->bound);
        if (rc == LDB_OK && (rc = optimize_bound(s)))
            s->err = (struct eval_error){ .code = rc };
    }
    if (rc == LDB_OK && (rc = result_columns(s)))
        s->err = (struct eval_error){ .code = rc };
    if (rc) {
        stmt_uncompile(s);
        return db_error_from(s->db, s->ast, &s->err);
    }
    s->compiled = true;
    s->schema_version = version;
    return LDB_OK;
}

/* ---- running ---------------------------------------------------------------------------- */

/* What a one-shot hash join may hold unless PRAGMA join_memory_limit
 * says otherwise: far above any build side that runs well in memory,
 * below what would take a typical machine's memory. */
#define JOIN_MEMORY_DEFAULT ((uint64_t)1 << 30)

/* PRAGMA join_memory_limit: bytes, 0 for none; a non-number keeps the
 * default. */
static uint64_t join_memory_limit(const ldb *db)
{
    const value *v = pragma_get(&db->pragmas, "join_memory_limit");
    if (v && value_type(v) == LDB_INTEGER && v->h.u.i >= 0)
        return (uint64_t)v->h.u.i;
    return JOIN_MEMORY_DEFAULT;
}

static int new_exec(ldb_stmt *s)
{
    struct exec_env env = { s->db->store, s->params, s->nparams, &s->db->env,
                            &s->db->epoch, s->pa.nsubqueries, join_memory_limit(s->db) };
    memset(&s->err, 0, sizeof s->err);
    if (exec_new(&env, &s->err, &s->exec))
        return db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory");
    return LDB_OK;
}

static int run_dml(ldb_stmt *s)
{
    ldb *db = s->db;
    /* the execution starts after the write's epoch bump: its own scans are current */
    int rc = db_write_begin(db);
    if (rc)
        return rc;
    if ((rc = new_exec(s))) {
        db_write_end(db, rc);
        return rc;
    }
    struct dml_result res = { 0 };
    switch (s->bound.kind) {
    case AST_STMT_INSERT: rc = exec_insert(s->exec, &s->bound.u.insert, &res); break;
    case AST_STMT_UPDATE: rc = exec_update(s->exec, &s->bound.u.update, &res); break;
    default: rc = exec_delete(s->exec, &s->bound.u.delete_, &res); break;
    }
    /* The counters are set before the statement ends, so that live query
     * callbacks (called as its commit completes) read them; a failed end
     * puts them back. */
    struct eval_env before = db->env;
    if (rc == LDB_OK) {
        db->env.changes = res.changes;
        db->env.total_changes += res.changes;
        if (res.inserted)
            db->env.last_insert_rowid = res.last_rowid;
    }
    int end = db_write_end(db, rc);
    if (rc)
        return db_error_from(db, s->ast, &s->err);
    if (end) {
        db->env.changes = before.changes;
        db->env.total_changes = before.total_changes;
        db->env.last_insert_rowid = before.last_insert_rowid;
        return end;
    }
    return LDB_DONE;
}

static int add_text_row(ldb_stmt *s, const char *text, size_t n)
{
    row *r = row_alloc(1);
    if (!r || value_text(&r->cols[0], text, n) || vec_push(&s->out_rows, r)) {
        row_release(r);
        return LDB_NOMEM;
    }
    return LDB_OK;
}

/* One row per line of text. */
static int text_rows(ldb_stmt *s, const char *text)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        if (add_text_row(s, text, n))
            return LDB_NOMEM;
        text += n + (nl != NULL);
    }
    return LDB_OK;
}

/* A plan printed below a heading, indented one level. */
typedef double (*plan_estimate_fn)(const struct plan *);

static void print_under(strbuf *sb, const char *heading, const struct plan *p,
                        plan_estimate_fn est)
{
    sb_printf(sb, "%s\n", heading);
    strbuf inner = STRBUF_INIT;
    plan_print(&inner, p, est);
    const char *t = sb_str(&inner);
    while (*t) {
        const char *nl = strchr(t, '\n');
        size_t n = nl ? (size_t)(nl - t) + 1 : strlen(t);
        sb_puts(sb, "  ");
        sb_put(sb, t, n);
        t += n;
    }
    if (sb_error(&inner))
        sb->err = LDB_NOMEM;
    sb_free(&inner);
}

static void explain_text(ldb_stmt *s, strbuf *sb)
{
    const ast_stmt *st = planned_stmt(s);
    const bound_stmt *b = &s->bound;
    /* EXPLAIN QUERY PLAN adds the planner's estimates */
    plan_estimate_fn est = s->ast->stmt->u.explain.query_plan ? planner_estimate : NULL;
    char head[300];
    switch (st->kind) {
    case AST_STMT_SELECT:
        plan_print(sb, b->u.select, est);
        return;
    case AST_STMT_INSERT:
        snprintf(head, sizeof head, "INSERT INTO %s", table_name(b->u.insert.table));
        if (b->u.insert.source)
            print_under(sb, head, b->u.insert.source, est);
        else
            sb_printf(sb, "%s DEFAULT VALUES\n", head);
        return;
    case AST_STMT_UPDATE:
        snprintf(head, sizeof head, "UPDATE %s", table_name(b->u.update.table));
        print_under(sb, head, b->u.update.rows, est);
        return;
    case AST_STMT_DELETE:
        snprintf(head, sizeof head, "DELETE FROM %s", table_name(b->u.delete_.table));
        print_under(sb, head, b->u.delete_.rows, est);
        return;
    default:
        ast_stmt_to_sql(sb, st, 0);
        return;
    }
}

static int run_explain(ldb_stmt *s)
{
    strbuf sb = STRBUF_INIT;
    explain_text(s, &sb);
    int rc = sb_error(&sb);
    if (rc == LDB_OK)
        rc = text_rows(s, sb_str(&sb));
    sb_free(&sb);
    return rc ? db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory") : LDB_OK;
}

static bool is_materialized_view(const ast_stmt *st)
{
    return st->kind == AST_STMT_EXPLAIN_VIEW ||
           (st->kind == AST_STMT_CREATE_VIEW && st->u.create_view.materialized) ||
           (st->kind == AST_STMT_DROP && st->u.drop.object == AST_OBJ_MATERIALIZED_VIEW);
}

/* ---- schema changes, PRAGMA, transactions ------------------------------------------------ */

static struct ddl_env ddl_env(ldb_stmt *s, struct eval_error *err)
{
    memset(err, 0, sizeof *err);
    return (struct ddl_env){ s->db->store, &s->db->funcs, s->params, s->nparams,
                             &s->db->env, &s->db->epoch, join_memory_limit(s->db), err };
}

static int run_ddl(ldb_stmt *s)
{
    struct eval_error err;
    struct ddl_env e = ddl_env(s, &err);
    if (s->ast->stmt->kind == AST_STMT_REINDEX)
        return ddl_reindex(&e, s->ast) ? db_error_from(s->db, s->ast, &err) : LDB_DONE;
    if (s->ast->stmt->kind == AST_STMT_ANALYZE)
        return ddl_analyze(&e, s->ast) ? db_error_from(s->db, s->ast, &err) : LDB_DONE;
    int rc = db_write_begin(s->db);
    if (rc)
        return rc;
    if ((rc = ddl_run(&e, s->ast)))
        db_error_from(s->db, s->ast, &err);
    int end = db_write_end(s->db, rc);
    return rc ? rc : end ? end : LDB_DONE;
}

static int run_pragma(ldb_stmt *s)
{
    ldb *db = s->db;
    if (!pragma_reads(s->ast->stmt) && live_in_callback(db->live))
        return db_error(db, LDB_MISUSE, NULL, -1, "a live query callback cannot change a PRAGMA");
    bool handled;
    int rc = db_durable_pragma(s, &handled);
    if (handled)
        return rc ? rc : pragma_reads(s->ast->stmt) ? LDB_OK : LDB_DONE;
    struct eval_error err;
    struct ddl_env e = ddl_env(s, &err);
    row *r;
    if (pragma_run(&db->pragmas, &e, s->ast, &r))
        return db_error_from(db, s->ast, &err);
    if (!r)
        return pragma_reads(s->ast->stmt) ? LDB_OK : LDB_DONE;
    if (vec_push(&s->out_rows, r)) {
        row_release(r);
        return db_error(db, LDB_NOMEM, NULL, -1, "out of memory");
    }
    return LDB_OK;
}

static int run_txn(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    struct store *store = s->db->store;
    int rc;
    if (live_in_callback(s->db->live))
        return db_error(s->db, LDB_MISUSE, NULL, -1,
                        "a live query callback cannot control transactions");
    if (src_in_provider(s->db->src))
        return db_error(s->db, LDB_MISUSE, NULL, -1,
                        "a source provider callback cannot control transactions");
    if (db_mutation_refusal(s->db))
        return db_error(s->db, LDB_MISUSE, NULL, -1, "%s", db_mutation_refusal(s->db));
    if (s->db->optimistic && (st->kind == AST_STMT_COMMIT || st->kind == AST_STMT_BEGIN))
        return db_error(s->db, LDB_MISUSE, s->ast, st->off,
                        "an optimistic transaction is open: commit it with "
                        "ldb_optimistic_commit, or ROLLBACK");
    s->db->epoch++;
    struct intr *scope = intr_swap(NULL); /* a commit's hooks must not fail halfway */
    switch (st->kind) {
    case AST_STMT_BEGIN: rc = store_begin(store); break;
    case AST_STMT_COMMIT: rc = store_commit(store); break;
    case AST_STMT_ROLLBACK:
        rc = st->u.rollback_to.str ? store_rollback_to(store, st->u.rollback_to.str)
                                   : store_rollback(store);
        break;
    case AST_STMT_SAVEPOINT: rc = store_savepoint(store, st->u.savepoint.str); break;
    default: rc = store_release(store, st->u.savepoint.str); break;
    }
    intr_swap(scope);
    if (s->db->optimistic && !store_in_transaction(store)) { /* rolled back */
        s->db->optimistic = false;
        store_set_optimistic(store, false);
    }
    if (rc == LDB_NOMEM || rc == LDB_INTERRUPT) /* not about a place in the text */
        return db_error(s->db, rc, NULL, -1, "%s", ldb_errstr(rc));
    return rc ? db_error(s->db, rc, s->ast, st->off, "%s", store_errmsg(store)) : LDB_DONE;
}

int stmt_start(ldb_stmt *s)
{
    int rc = stmt_compile(s);
    if (rc)
        return rc;
    const ast_stmt *st = s->ast->stmt;
    if (is_materialized_view(st))
        return db_run_mv(s);
    switch (st->kind) {
    case AST_STMT_SELECT:
        if ((rc = new_exec(s)))
            return rc;
        if ((rc = exec_open(s->exec, s->bound.u.select, &s->root)))
            return db_error_from(s->db, s->ast, &s->err);
        return LDB_OK;
    case AST_STMT_INSERT:
    case AST_STMT_UPDATE:
    case AST_STMT_DELETE:
        return run_dml(s);
    case AST_STMT_EXPLAIN:
        return run_explain(s);
    case AST_STMT_PRAGMA:
        return run_pragma(s);
    case AST_STMT_BEGIN:
    case AST_STMT_COMMIT:
    case AST_STMT_ROLLBACK:
    case AST_STMT_SAVEPOINT:
    case AST_STMT_RELEASE:
        return run_txn(s);
    case AST_STMT_UNSUPPORTED:
        return db_error(s->db, LDB_UNSUPPORTED, s->ast, st->off, "%s is not supported",
                        st->u.unsupported.what);
    default:
        return run_ddl(s);
    }
}

static void drop_current(ldb_stmt *s)
{
    row_release(s->cur);
    s->cur = NULL;
}

int stmt_next(ldb_stmt *s)
{
    /* the row handed out is held until the next step, so that a caller
     * that writes in between (which may free the stored row) can still
     * read it; released before pulling, so the producer may reuse it */
    drop_current(s);
    row *r = NULL;
    int rc;
    if (s->root) {
        if ((rc = exec_next(s->root, &r)) != LDB_ROW)
            return rc == LDB_DONE ? rc : db_error_from(s->db, s->ast, &s->err);
    } else if (s->out_i < s->out_rows.len) {
        r = s->out_rows.data[s->out_i++];
    } else {
        return LDB_DONE;
    }
    s->cur = row_retain(r);
    s->row.vals = r->cols;
    s->row.n = s->ncols < r->ncols ? s->ncols : r->ncols;
    return LDB_ROW;
}

void stmt_finish(ldb_stmt *s)
{
    if (s->state == ST_RUNNING)
        db_active_leave(s->db);
    exec_free(s->exec);
    s->exec = NULL;
    s->root = NULL;
    for (size_t i = 0; i < s->out_rows.len; i++)
        row_release(s->out_rows.data[i]);
    vec_free(&s->out_rows);
    s->out_i = 0;
    drop_current(s);
    s->state = ST_READY;
}
