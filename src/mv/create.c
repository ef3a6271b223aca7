/*
 * create.c - CREATE MATERIALIZED VIEW and DROP MATERIALIZED VIEW.
 *
 * CREATE parses the statement's text again (the view keeps that parse and
 * the plan bound from it for its whole life), binds the body, refuses
 * what cannot be a view (parameters, no table read, a non-deterministic
 * body unless PRAGMA nondeterministic_schema), plans it, picks the
 * cheapest arm that fits (projection, aggregate, dataflow; the rebuild
 * floor only for what is not a function of the tables), makes the
 * backing table (read-only for users, DDL text = the CREATE statement)
 * and fills it through the arm itself, so the first rows are computed by
 * the same code as every later change.
 *
 * Everything happens inside the caller's write statement: a failure
 * anywhere makes the statement fail, and the store's undo removes the
 * backing table. The view joins the registry last; from then on the
 * store's freeing of the backing table (a rolled-back CREATE, a committed
 * DROP) frees the view.
 */
#include "mv/mv_internal.h"

#include "live/live.h"
#include "live/program.h"
#include "sql/func.h"
#include "sql/parser.h"
#include "sql/planner.h"
#include "sql/sqlvalue.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int fail(struct eval_error *err, int code, uint32_t off, bool has_off, const char *fmt,
                ...) __attribute__((format(printf, 5, 6)));

static int fail(struct eval_error *err, int code, uint32_t off, bool has_off, const char *fmt,
                ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlv_verror(err, code, fmt, ap);
    va_end(ap);
    err->off = off;
    err->has_off = has_off;
    return code;
}

void mv_set_base(struct mv_view *v)
{
    v->base = store_mark(v->reg->store);
}

/* ---- reading the body --------------------------------------------------------------- */

static const ast_create_view *definition(const struct mv_view *v)
{
    return &v->ast->stmt->u.create_view;
}

static int parse(struct mv_view *v, const char *sql, uint32_t len, struct eval_error *err)
{
    sql_error perr;
    int rc = sql_parse(sql, len, &v->ast, &perr);
    if (rc)
        return fail(err, rc, perr.offset, rc != LDB_NOMEM, "%s", perr.msg);
    const ast_stmt *st = v->ast->stmt;
    if (st->kind != AST_STMT_CREATE_VIEW || !st->u.create_view.materialized)
        return fail(err, LDB_MISUSE, 0, false, "not a CREATE MATERIALIZED VIEW statement");
    const char *name = st->u.create_view.name.name.str;
    if (!(v->name = mem_strndup(name, strlen(name))))
        return fail(err, LDB_NOMEM, 0, false, "out of memory");
    return LDB_OK;
}

static int bind(struct mv_view *v, struct plan **out, struct eval_error *err)
{
    const ast_create_view *cv = definition(v);
    struct bind_env env = { v->reg->store, &v->pa, err, &v->views, v->reg->funcs, false,
                            !cv->temp };
    int rc = bind_query(&env, v->ast, cv->select, out);
    if (rc)
        return rc;
    /* the compilers recurse deeper per node than the executor: bounded
     * before they start (the dataflow compiler bounds its size) */
    if (plan_height(*out) > PLAN_HEIGHT_MAX)
        return fail(err, LDB_ERROR, cv->select->off, true,
                    "query too complex for a materialized view: its plan is more than %d "
                    "nodes deep",
                    PLAN_HEIGHT_MAX);
    uint32_t nvis = mv_visible_count(*out);
    if (cv->cols.n && cv->cols.n != nvis)
        return fail(err, LDB_ERROR, cv->name.name.off, true,
                    "expected %u columns for materialized view %s but got %u", cv->cols.n,
                    v->name, nvis);
    if (nvis == 0)
        return fail(err, LDB_ERROR, cv->select->off, true,
                    "materialized view %s has no columns", v->name);
    return LDB_OK;
}

/* What the walk of the body finds. */
struct body_facts {
    struct mv_view *v;
    int rc;
    const char *nondet;       /* a non-deterministic function, or "LIMIT" */
    uint32_t nondet_off;
};

static bool add_source(struct body_facts *f, struct table *t)
{
    for (size_t i = 0; i < f->v->sources.len; i++)
        if (f->v->sources.data[i] == t)
            return true;
    if (vec_push(&f->v->sources, t)) {
        f->rc = LDB_NOMEM;
        return false;
    }
    return true;
}

static bool unordered_limit(const struct plan *p)
{
    const struct plan *in = p->in;
    if (in->kind == PLAN_PROJECT)
        in = in->in;
    return in->kind != PLAN_SORT;
}

static bool facts_node(void *ctx, const struct plan *p)
{
    struct body_facts *f = ctx;
    if (p->kind == PLAN_SCAN)
        return add_source(f, p->u.scan.table);
    if (p->kind == PLAN_LIMIT && unordered_limit(p) && !f->nondet)
        f->nondet = "LIMIT without ORDER BY";
    for (uint32_t i = 0; p->kind == PLAN_AGGREGATE && i < p->u.agg.naggs && !f->nondet; i++) {
        const struct plan_agg *a = &p->u.agg.aggs[i];
        if (!func_is_deterministic(a->fn)) {
            f->nondet = a->fn->name;
            f->nondet_off = a->nargs ? a->args[0]->off : 0;
        }
    }
    return true;
}

static bool facts_expr(void *ctx, const expr *e)
{
    struct body_facts *f = ctx;
    if (e->kind == EXPR_CALL && !func_is_deterministic(e->u.fn) && !f->nondet) {
        f->nondet = e->u.fn->name;
        f->nondet_off = e->off;
    }
    return true;
}

static int check_body(struct mv_view *v, const struct plan *p, const struct mv_options *opt,
                      bool *nondet, struct eval_error *err)
{
    const ast_create_view *cv = definition(v);
    if (v->ast->nparams)
        return fail(err, LDB_ERROR, cv->select->off, true,
                    "the body of a materialized view cannot have parameters");
    struct body_facts f = { v, LDB_OK, NULL, cv->select->off };
    struct mv_walk w = { facts_node, facts_expr, &f, PTRMAP_INIT, LDB_OK };
    if (mv_walk(p, &w))
        f.rc = LDB_NOMEM;
    if (f.rc)
        return fail(err, f.rc, 0, false, "out of memory");
    if (v->sources.len == 0)
        return fail(err, LDB_ERROR, cv->select->off, true,
                    "materialized view %s reads no table: nothing could ever change it "
                    "(use a plain view)", v->name);
    *nondet = f.nondet != NULL;
    if (f.nondet && !opt->nondeterministic_ok)
        return fail(err, LDB_ERROR, f.nondet_off, true,
                    "the body of materialized view %s is not deterministic (%s%s): no "
                    "maintenance can keep it equal to its query; PRAGMA "
                    "nondeterministic_schema = ON allows it", v->name, f.nondet,
                    strchr(f.nondet, ' ') ? "" : "()");
    return LDB_OK;
}

/* ---- choosing the arm ------------------------------------------------------------------- */

static int floor_arm(struct mv_view *v, const struct mv_options *opt, const char *why,
                     struct eval_error *err)
{
    size_t largest = 0;
    struct table *big = NULL;
    for (size_t i = 0; i < v->sources.len; i++) {
        if (table_count(v->sources.data[i]) >= largest) {
            largest = table_count(v->sources.data[i]);
            big = v->sources.data[i];
        }
    }
    if (opt->rebuild_threshold > 0 && largest > (size_t)opt->rebuild_threshold)
        return fail(err, LDB_ERROR, definition(v)->name.name.off, true,
                    "materialized view %s would be re-evaluated in full after every write "
                    "(%s) and %s has %zu rows, more than PRAGMA "
                    "materialized_view_rebuild_row_threshold = %lld: use a plain view",
                    v->name, why, table_name(big), largest, (long long)opt->rebuild_threshold);
    snprintf(v->why, sizeof v->why, "%s: re-evaluated after every write to a source, "
                                    "then only the rows that differ are written", why);
    int rc = mv_rebuild_init(v);
    return rc ? fail(err, rc, 0, false, rc == LDB_NOMEM ? "out of memory"
                                                        : "the result key is too wide")
              : LDB_OK;
}

static int dataflow_arm(struct mv_view *v, const struct mv_options *opt, const char *why_not,
                        struct eval_error *err)
{
    struct eval_error e;
    memset(&e, 0, sizeof e);
    int rc = mv_prog_create(v, &e);
    if (rc == LDB_UNSUPPORTED) {
        char why[300];
        snprintf(why, sizeof why, "the dataflow compiler cannot take it (%.250s)", e.msg);
        return floor_arm(v, opt, why, err);
    }
    if (rc)
        return fail(err, rc, 0, false, "%s", rc == LDB_NOMEM ? "out of memory" : e.msg);
    snprintf(v->why, sizeof v->why, "%.100s: one dataflow program over %zu table%s, read "
             "through indexes where one serves", why_not ? why_not : "a general body",
             v->sources.len, v->sources.len == 1 ? "" : "s");
    return LDB_OK;
}

/* Every arm lays the backing table out by the body's key, which must
 * fit a table's primary key. */
static int check_key(struct mv_view *v, struct eval_error *err)
{
    struct keyed k;
    int rc = live_ensure_key(&v->pa, v->body, &k);
    if (rc == LDB_NOMEM)
        return fail(err, rc, 0, false, "out of memory");
    if (rc == LDB_UNSUPPORTED || k.n > SCHEMA_MAX_KEY)
        return fail(err, LDB_UNSUPPORTED, definition(v)->select->off, true,
                    "materialized view %s cannot be kept: its rows need more than %d key "
                    "columns to be told apart, the limit of a table's primary key (%s)",
                    v->name, SCHEMA_MAX_KEY, LIVE_KEY_WHY);
    return rc;
}

static int choose(struct mv_view *v, bool nondet, const struct mv_options *opt,
                  struct eval_error *err)
{
    int krc = check_key(v, err);
    if (krc)
        return krc;
    if (nondet)
        return floor_arm(v, opt, "its body is not deterministic", err);
    int rc = LDB_OK;
    const char *why_not = NULL;
    if (!opt->cheap_arms)
        return dataflow_arm(v, opt, "PRAGMA materialized_view_cheap_arms is OFF", err);
    if (mv_shape_row(v, &rc) || rc)
        return rc ? fail(err, rc, 0, false, "out of memory") : LDB_OK;
    if (mv_shape_agg(v, &rc, &why_not) || rc)
        return rc ? fail(err, rc, 0, false, "out of memory") : mv_agg_init(v);
    char buf[120];
    if (why_not)
        snprintf(buf, sizeof buf, "grouped, but %s", why_not);
    return dataflow_arm(v, opt, why_not ? buf : NULL, err);
}

/* ---- the backing table -------------------------------------------------------------------- */

static int make_backing(struct mv_view *v, struct eval_error *err)
{
    const struct mv_layout *l = &v->lay;
    struct column_def *cols = mem_calloc(l->ncols + 1, sizeof *cols);
    if (!cols)
        return fail(err, LDB_NOMEM, 0, false, "out of memory");
    for (uint32_t j = 0; j < l->ncols; j++) {
        cols[j].name = l->names[j];
        cols[j].type = l->types[j];
        cols[j].coll = l->colls[j];
        cols[j].dflt = value_null();
    }
    struct table_def def = { v->name, cols, l->ncols, l->pk, l->npk, NULL, 0,
                             v->ast->sql, false, definition(v)->temp };
    struct table_opts o = { l->hidden, true };
    int rc = store_create_table_opts(v->reg->store, &def, &o, &v->backing);
    mem_free(cols);
    if (rc)
        return fail(err, rc, definition(v)->name.name.off, rc != LDB_NOMEM, "%s",
                    rc == LDB_NOMEM ? "out of memory" : store_errmsg(v->reg->store));
    table_set_readonly(v->backing, true);
    return LDB_OK;
}

static int fill(struct mv_view *v, struct eval_error *err)
{
    int rc;
    switch (v->strategy) {
    case MV_PROJECTION: rc = mv_fill_from_source(v, v->arm.row.src, mv_row_apply); break;
    case MV_AGGREGATE: rc = mv_fill_from_source(v, v->arm.agg.src, mv_agg_apply); break;
    case MV_DATAFLOW: rc = mv_prog_fill(v); break;
    default: rc = mv_rebuild_apply(v); break;
    }
    if (rc)
        return mv_body_error(v, rc, err);
    memset(&v->c, 0, sizeof v->c);
    mv_set_base(v);
    return LDB_OK;
}

static bool name_taken(const struct mv_registry *reg, const char *name)
{
    return store_find_table(reg->store, name) || store_find_index(reg->store, name);
}

/* Binds, checks and plans the body into v->body, then chooses its arm. */
static int plan_body(struct mv_view *v, const struct mv_options *opt, struct eval_error *err)
{
    struct plan *p;
    bool nondet;
    int rc = bind(v, &p, err);
    struct table *od = rc ? NULL : live_plan_on_demand_table(p);
    if (od) /* its contents would be whatever the live queries loaded */
        return fail(err, LDB_UNSUPPORTED, definition(v)->select->off, true,
                    "a materialized view cannot read on-demand table %s", table_name(od));
    if (rc == LDB_OK)
        rc = check_body(v, p, opt, &nondet, err);
    if (rc == LDB_OK && ((rc = planner_optimize(&v->pa, &p)) || (rc = mv_clear_annotations(p))))
        return fail(err, rc, 0, false, "out of memory");
    if (rc)
        return rc;
    if (!(v->body = mv_unordered(&v->pa, p)))
        return fail(err, LDB_NOMEM, 0, false, "out of memory");
    return choose(v, nondet, opt, err);
}

static int build(struct mv_view *v, const struct mv_options *opt, struct eval_error *err)
{
    int rc;
    if ((rc = plan_body(v, opt, err)) || (rc = make_backing(v, err)) || (rc = fill(v, err)))
        return rc;
    if ((rc = mv_register(v->reg, v)))
        return fail(err, rc, 0, false, "%s",
                    rc == LDB_NOMEM ? "out of memory" : store_errmsg(v->reg->store));
    return LDB_OK;
}

/* A new view of reg parsed from sql[0..len) (caller frees, mv_view_free,
 * also on failure when *out is set). */
static int view_parse(struct mv_registry *reg, const char *sql, uint32_t len,
                      struct eval_error *err, struct mv_view **out)
{
    struct mv_view *v = *out = mem_calloc(1, sizeof *v);
    if (!v)
        return fail(err, LDB_NOMEM, 0, false, "out of memory");
    v->reg = reg;
    v->dropped_at = MV_NOT_DROPPED;
    plan_arena_init(&v->pa);
    return parse(v, sql, len, err);
}

int mv_create(struct mv_registry *reg, const char *sql, uint32_t len,
              const struct mv_options *opt, struct eval_error *err)
{
    memset(err, 0, sizeof *err);
    struct mv_view *v;
    int rc = view_parse(reg, sql, len, err, &v);
    if (!v)
        return rc;
    if (rc == LDB_OK && name_taken(reg, v->name)) {
        if (!definition(v)->if_not_exists)
            rc = fail(err, LDB_ERROR, definition(v)->name.name.off, true,
                      "table %s already exists", v->name);
        mv_view_free(v);
        return rc;
    }
    if (rc == LDB_OK)
        rc = build(v, opt, err);
    if (rc) {
        v->backing = NULL; /* the statement's rollback removes it */
        mv_view_free(v);
    }
    return rc;
}

/* ---- reopening a durable database ------------------------------------------------------ */

/* Whether the recovered table is laid out as the arm chosen now lays out
 * a backing table (the arm depends on settings of the creating handle). */
static bool layout_matches(const struct mv_view *v, const struct table *t)
{
    const struct mv_layout *l = &v->lay;
    const struct schema *sc = table_schema(t);
    if (sc->nvisible != l->ncols)
        return false;
    for (uint32_t j = 0; j < l->ncols; j++)
        if (!name_eq(sc->cols[j].name, l->names[j]) || sc->cols[j].type != l->types[j] ||
            sc->cols[j].hidden != (l->hidden && l->hidden[j]))
            return false;
    return true;
}

/* build() for a view whose backing table and rows were recovered: the
 * same arm, no fill (the rows are the committed ones); a dataflow
 * program is marked stale, so that it is built from the tables before
 * its first use. */
static int adopt(struct mv_view *v, struct table *backing, const struct mv_options *opt,
                 struct eval_error *err, bool *mismatch)
{
    int rc = plan_body(v, opt, err);
    if (rc)
        return rc;
    if ((*mismatch = !layout_matches(v, backing)))
        return fail(err, LDB_ERROR, 0, false, "materialized view %s: its stored table no "
                    "longer matches its definition", v->name);
    v->backing = backing;
    v->stale = v->strategy == MV_DATAFLOW;
    mv_set_base(v);
    if ((rc = mv_register(v->reg, v)))
        return fail(err, rc, 0, false, "%s",
                    rc == LDB_NOMEM ? "out of memory" : store_errmsg(v->reg->store));
    return LDB_OK;
}

static int restore_with(struct mv_registry *reg, struct table *backing, bool cheap_arms,
                        struct eval_error *err, bool *mismatch)
{
    *mismatch = false;
    /* It was admitted when made: no refusal of a setting applies again. */
    struct mv_options opt = { true, cheap_arms, 0 };
    struct mv_view *v;
    const char *sql = table_sql(backing);
    int rc = view_parse(reg, sql, (uint32_t)strlen(sql), err, &v);
    if (!v)
        return rc;
    if (rc == LDB_MISUSE) /* parse: not a CREATE MATERIALIZED VIEW */
        rc = LDB_NOTFOUND;
    if (rc == LDB_OK)
        rc = adopt(v, backing, &opt, err, mismatch);
    if (rc) {
        v->backing = NULL; /* the table stays the store's */
        mv_view_free(v);
    }
    return rc;
}

int mv_restore(struct mv_registry *reg, struct table *backing, struct eval_error *err)
{
    memset(err, 0, sizeof *err);
    bool mismatch;
    int rc = restore_with(reg, backing, true, err, &mismatch);
    if (mismatch) /* made with materialized_view_cheap_arms OFF */
        rc = restore_with(reg, backing, false, err, &mismatch);
    return rc;
}

/* ---- DROP ------------------------------------------------------------------------------------ */

int mv_drop(struct mv_registry *reg, const char *name, bool if_exists, struct eval_error *err)
{
    memset(err, 0, sizeof *err);
    struct mv_view *v = mv_find(reg, name);
    if (!v) {
        if (store_find_table(reg->store, name))
            return fail(err, LDB_ERROR, 0, false,
                        "%s is not a materialized view: use DROP TABLE or DROP VIEW", name);
        return if_exists ? LDB_OK
                         : fail(err, LDB_ERROR, 0, false, "no such materialized view: %s", name);
    }
    struct mv_view *reader = mv_reader_of(reg, v);
    if (reader)
        return fail(err, LDB_ERROR, 0, false,
                    "cannot drop materialized view %s: materialized view %s reads it",
                    v->name, reader->name);
    size_t at = store_log_length(reg->store);
    store_enter_internal(reg->store);
    reg->dropping = v; /* the store asks the registry (on_check_drop) */
    int rc = store_drop_table(reg->store, v->backing);
    reg->dropping = NULL;
    store_leave_internal(reg->store);
    if (rc)
        return fail(err, rc, 0, false, "%s",
                    rc == LDB_NOMEM ? "out of memory" : store_errmsg(reg->store));
    v->dropped_at = at;
    return LDB_OK;
}
