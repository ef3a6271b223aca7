/*
 * ddl.c - the statements that change the schema (ddl.h): CREATE TABLE
 * [AS SELECT], CREATE INDEX, CREATE VIEW, DROP, REINDEX.
 *
 * They run inside the write statement the API opened, so they roll back
 * with a failed statement or transaction like any write. A
 * (non-materialized) view is stored as an empty read-only table whose DDL
 * text is the CREATE VIEW statement and whose columns are the view's:
 * that makes view names share the catalog's namespace, version and
 * transactions for free; the binder expands the text at each use
 * (bind_query.c).
 *
 * Column constraints: PRIMARY KEY, UNIQUE, NOT NULL, DEFAULT (a constant,
 * evaluated once here) and COLLATE are kept; REFERENCES and FOREIGN KEY
 * are accepted and ignored (SQLite's default); CHECK, generated columns,
 * non-default ON CONFLICT clauses, indexes on expressions and partial
 * indexes are LDB_UNSUPPORTED.
 */
#include "sql/ddl.h"

#include "base/mem.h"
#include "sql/bind.h"
#include "sql/exec.h"
#include "sql/planner.h"
#include "sql/sqlvalue.h"
#include "storage/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NO_OFF UINT32_MAX

/* Records a failure at off (NO_OFF: none) in e->err; returns code. */
static int fail(const struct ddl_env *e, int code, uint32_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(const struct ddl_env *e, int code, uint32_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlv_verror(e->err, code, fmt, ap);
    va_end(ap);
    e->err->has_off = off != NO_OFF;
    e->err->off = off;
    return code;
}

static int nomem(const struct ddl_env *e)
{
    return fail(e, LDB_NOMEM, NO_OFF, "out of memory");
}

static int unsupported(const struct ddl_env *e, uint32_t off, const char *what)
{
    return fail(e, LDB_UNSUPPORTED, off, "%s are not supported", what);
}

static int store_failed(const struct ddl_env *e, int rc, uint32_t off)
{
    if (rc == LDB_NOMEM || rc == LDB_INTERRUPT) /* not about a place in the text */
        return fail(e, rc, NO_OFF, "%s", ldb_errstr(rc));
    return fail(e, rc, off, "%s", store_errmsg(e->store));
}

/* A bind environment over a scratch arena (DDL binds, then forgets). */
struct scratch_bind {
    plan_arena pa;
    sql_ast_vec views;
    struct bind_env env;
};

static void scratch_init(const struct ddl_env *e, struct scratch_bind *sb)
{
    memset(sb, 0, sizeof *sb);
    plan_arena_init(&sb->pa);
    sb->env = (struct bind_env){ .store = e->store, .pa = &sb->pa, .err = e->err,
                                 .views = &sb->views, .funcs = e->funcs };
}

static void scratch_free_bind(struct scratch_bind *sb)
{
    for (size_t i = 0; i < sb->views.len; i++)
        sql_ast_free(sb->views.data[i]);
    vec_free(&sb->views);
    plan_arena_free(&sb->pa);
}

int ddl_constant(const struct ddl_env *e, const sql_ast *ast, const ast_expr *x, value *out)
{
    struct scratch_bind sb;
    scratch_init(e, &sb);
    int rc = bind_constant(&sb.env, ast, x, out);
    scratch_free_bind(&sb);
    return rc;
}

/* ---- CREATE TABLE ------------------------------------------------------------------- */

struct table_build {
    const struct ddl_env *e;
    const sql_ast *ast;
    struct scratch_bind sb;
    struct column_def *cols;
    uint32_t ncols;
    uint32_t pk[SCHEMA_MAX_KEY];
    uint32_t npk;
    bool has_pk;
    uint32_t *unique_len;      /* columns of each UNIQUE constraint */
    uint32_t *unique_cols;     /* their columns, one constraint after another */
    uint32_t nuniques, nunique_cols;
};

static bool default_conflict(enum ast_conflict c)
{
    return c == AST_CONFLICT_NONE || c == AST_CONFLICT_ABORT;
}

static int add_unique(struct table_build *tb, const uint32_t *cols, uint32_t n)
{
    uint32_t *len = mem_realloc(tb->unique_len, (tb->nuniques + 1) * sizeof *len);
    if (!len)
        return LDB_NOMEM;
    tb->unique_len = len;
    uint32_t *c = mem_realloc(tb->unique_cols, (tb->nunique_cols + n) * sizeof *c);
    if (!c)
        return LDB_NOMEM;
    tb->unique_cols = c;
    memcpy(c + tb->nunique_cols, cols, n * sizeof *c);
    len[tb->nuniques++] = n;
    tb->nunique_cols += n;
    return LDB_OK;
}

static int set_primary_key(struct table_build *tb, const uint32_t *cols, uint32_t n,
                           uint32_t off, const char *table)
{
    if (tb->has_pk)
        return fail(tb->e, LDB_ERROR, off, "table %s has more than one primary key", table);
    if (n > SCHEMA_MAX_KEY)
        return fail(tb->e, LDB_ERROR, off, "too many primary key columns (at most %d)",
                    SCHEMA_MAX_KEY);
    memcpy(tb->pk, cols, n * sizeof *cols);
    tb->npk = n;
    tb->has_pk = true;
    return LDB_OK;
}

static int column_constraint(struct table_build *tb, uint32_t i, const ast_col_constraint *c,
                             const char *table)
{
    const struct ddl_env *e = tb->e;
    struct column_def *d = &tb->cols[i];
    switch (c->kind) {
    case AST_CC_PRIMARY_KEY:
        if (!default_conflict(c->on_conflict))
            return unsupported(e, c->off, "ON CONFLICT clauses on constraints");
        return set_primary_key(tb, &i, 1, c->off, table);
    case AST_CC_NOT_NULL:
        if (!default_conflict(c->on_conflict))
            return unsupported(e, c->off, "ON CONFLICT clauses on constraints");
        d->not_null = true;
        return LDB_OK;
    case AST_CC_UNIQUE:
        if (!default_conflict(c->on_conflict))
            return unsupported(e, c->off, "ON CONFLICT clauses on constraints");
        return add_unique(tb, &i, 1) ? nomem(e) : LDB_OK;
    case AST_CC_CHECK:
        return unsupported(e, c->off, "CHECK constraints");
    case AST_CC_GENERATED:
        return unsupported(e, c->off, "generated columns");
    case AST_CC_DEFAULT: {
        value v;
        int rc = ddl_constant(e, tb->ast, c->expr, &v);
        if (rc)
            return rc;
        rc = plan_own_value(&tb->sb.pa, &v);
        d->has_default = true;
        d->dflt = v;
        value_release(&v);
        return rc ? nomem(e) : LDB_OK;
    }
    case AST_CC_COLLATE:
        if (!collation_from_name(c->collation.str, &d->coll))
            return fail(e, LDB_ERROR, c->collation.off, "no such collation sequence: %s",
                        c->collation.str);
        return LDB_OK;
    default: /* NULL, REFERENCES */
        return LDB_OK;
    }
}

/* The column positions an order-term list names (PRIMARY KEY, UNIQUE). */
static int constraint_columns(struct table_build *tb, const ast_order_list *l, uint32_t *out)
{
    for (uint32_t i = 0; i < l->n; i++) {
        const ast_expr *x = l->items[i].expr;
        if (x->kind == AST_COLLATE)
            x = x->u.collate.operand;
        if (x->kind != AST_COLUMN || x->u.column.table.str)
            return unsupported(tb->e, x->off, "expressions in table constraints");
        uint32_t c = 0;
        while (c < tb->ncols && !name_eq(tb->cols[c].name, x->u.column.column.str))
            c++;
        if (c == tb->ncols)
            return fail(tb->e, LDB_ERROR, x->off, "no such column: %s", x->u.column.column.str);
        out[i] = c;
    }
    return LDB_OK;
}

static int table_constraint(struct table_build *tb, const ast_table_constraint *c,
                            const char *table)
{
    const struct ddl_env *e = tb->e;
    uint32_t cols[SCHEMA_MAX_KEY];
    switch (c->kind) {
    case AST_TC_CHECK:
        return unsupported(e, c->off, "CHECK constraints");
    case AST_TC_FOREIGN_KEY:
        return LDB_OK;
    default:
        break;
    }
    if (!default_conflict(c->on_conflict))
        return unsupported(e, c->off, "ON CONFLICT clauses on constraints");
    if (c->cols.n > SCHEMA_MAX_KEY)
        return fail(e, LDB_ERROR, c->off, "too many columns in a key (at most %d)",
                    SCHEMA_MAX_KEY);
    int rc = constraint_columns(tb, &c->cols, cols);
    if (rc)
        return rc;
    if (c->kind == AST_TC_PRIMARY_KEY)
        return set_primary_key(tb, cols, c->cols.n, c->off, table);
    return add_unique(tb, cols, c->cols.n) ? nomem(e) : LDB_OK;
}

static int describe_columns(struct table_build *tb, const ast_create_table *ct)
{
    tb->ncols = ct->ncols;
    if (!(tb->cols = mem_calloc(ct->ncols + 1, sizeof *tb->cols)))
        return nomem(tb->e);
    const char *table = ct->name.name.str;
    for (uint32_t i = 0; i < ct->ncols; i++) {
        const ast_column_def *cd = &ct->cols[i];
        struct column_def *d = &tb->cols[i];
        d->name = cd->name.str;
        d->type = cd->type.name ? col_type_from_decl(cd->type.name, strlen(cd->type.name))
                                : COL_ANY;
        d->coll = LDB_COLL_BINARY;
        d->dflt = value_null();
    }
    for (uint32_t i = 0; i < ct->ncols; i++)
        for (uint32_t k = 0; k < ct->cols[i].ncons; k++) {
            int rc = column_constraint(tb, i, &ct->cols[i].cons[k], table);
            if (rc)
                return rc;
        }
    for (uint32_t k = 0; k < ct->ncons; k++) {
        int rc = table_constraint(tb, &ct->cons[k], table);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int create_described(struct table_build *tb, const char *name, bool temp,
                            struct table **out)
{
    struct unique_def *uniques = mem_calloc(tb->nuniques + 1, sizeof *uniques);
    if (!uniques)
        return nomem(tb->e);
    for (uint32_t i = 0, at = 0; i < tb->nuniques; at += tb->unique_len[i++])
        uniques[i] = (struct unique_def){ tb->unique_cols + at, tb->unique_len[i] };
    struct table_def def = { name, tb->cols, tb->ncols, tb->pk, tb->npk,
                             uniques, tb->nuniques, tb->ast->sql, true, temp };
    int rc = store_create_table(tb->e->store, &def, out);
    mem_free(uniques);
    return rc ? store_failed(tb->e, rc, tb->ast->stmt->off) : LDB_OK;
}

static void table_build_free(struct table_build *tb)
{
    mem_free(tb->cols);
    mem_free(tb->unique_len);
    mem_free(tb->unique_cols);
    scratch_free_bind(&tb->sb);
}

/* Runs a bound query and inserts its rows into t (CREATE TABLE AS). */
static int fill_from_query(struct table_build *tb, const struct plan *p, struct table *t)
{
    const struct ddl_env *e = tb->e;
    struct exec_env env = { e->store, e->params, e->nparams, e->env, e->epoch,
                            tb->sb.pa.nsubqueries, e->join_memory_limit };
    struct exec *x;
    if (exec_new(&env, e->err, &x))
        return nomem(e);
    struct op *root;
    row *r;
    int rc = exec_open(x, p, &root);
    while (rc == LDB_OK && (rc = exec_next(root, &r)) == LDB_ROW)
        if ((rc = table_insert(e->store, t, r->cols, NULL)))
            rc = store_failed(e, rc, tb->ast->stmt->off);
    if (rc == LDB_DONE)
        rc = LDB_OK;
    else if (rc && !e->err->code)
        rc = fail(e, rc, NO_OFF, "%s", ldb_errstr(rc));
    exec_free(x);
    return rc;
}

/* Result column names made unique the way SQLite does ("a", "a:1"). */
static int unique_names(const struct plan *p, const ast_name_list *given, char ***out)
{
    char **names = mem_calloc(p->ncols + 1, sizeof *names);
    if (!names)
        return LDB_NOMEM;
    for (uint32_t i = 0; i < p->ncols; i++) {
        const char *base = given->n ? given->items[i].str : p->cols[i].name;
        base = base ? base : "";
        char buf[600];
        snprintf(buf, sizeof buf, "%s", base);
        for (uint32_t k = 1;; k++) {
            uint32_t j = 0;
            while (j < i && !name_eq(names[j], buf))
                j++;
            if (j == i)
                break;
            snprintf(buf, sizeof buf, "%.500s:%u", base, k);
        }
        if (!(names[i] = mem_strndup(buf, strlen(buf)))) {
            while (i-- > 0)
                mem_free(names[i]);
            mem_free(names);
            return LDB_NOMEM;
        }
    }
    *out = names;
    return LDB_OK;
}

static void free_names(char **names, uint32_t n)
{
    for (uint32_t i = 0; names && i < n; i++)
        mem_free(names[i]);
    mem_free(names);
}

/* Columns for a table shaped like a query's result (CREATE TABLE AS, views). */
static int describe_query(struct table_build *tb, const struct plan *p,
                          const ast_name_list *given, char ***names)
{
    int rc = unique_names(p, given, names);
    if (rc == LDB_OK) {
        tb->ncols = p->ncols; /* names to free from here on */
        if (!(tb->cols = mem_calloc(p->ncols + 1, sizeof *tb->cols)))
            rc = LDB_NOMEM;
    }
    if (rc)
        return nomem(tb->e);
    for (uint32_t i = 0; i < p->ncols; i++)
        tb->cols[i] = (struct column_def){ (*names)[i], p->cols[i].type, p->cols[i].coll,
                                           false, false, value_null() };
    return LDB_OK;
}

static bool name_taken(struct store *store, const char *name)
{
    return store_find_table(store, name) || store_find_index(store, name);
}

static void table_build_init(struct table_build *tb, const struct ddl_env *e, const sql_ast *ast)
{
    memset(tb, 0, sizeof *tb);
    tb->e = e;
    tb->ast = ast;
    scratch_init(e, &tb->sb);
}

static int create_table(const struct ddl_env *e, const sql_ast *ast)
{
    const ast_create_table *ct = &ast->stmt->u.create_table;
    if (ct->if_not_exists && name_taken(e->store, ct->name.name.str))
        return LDB_OK;
    struct table_build tb;
    table_build_init(&tb, e, ast);
    char **names = NULL;
    struct plan *p = NULL;
    struct table *t;
    int rc = LDB_OK;
    if (ct->as_select) {
        if ((rc = bind_query(&tb.sb.env, ast, ct->as_select, &p)) == LDB_OK &&
            (rc = planner_optimize(&tb.sb.pa, &p)))
            rc = fail(e, rc, NO_OFF, "%s", ldb_errstr(rc));
        if (rc == LDB_OK)
            rc = describe_query(&tb, p, &(ast_name_list){ 0, NULL }, &names);
    } else {
        rc = describe_columns(&tb, ct);
    }
    if (rc == LDB_OK)
        rc = create_described(&tb, ct->name.name.str, ct->temp, &t);
    if (rc == LDB_OK && p)
        rc = fill_from_query(&tb, p, t);
    free_names(names, tb.ncols);
    table_build_free(&tb);
    return rc;
}

/* ---- CREATE VIEW ------------------------------------------------------------------------- */

static int create_view(const struct ddl_env *e, const sql_ast *ast)
{
    const ast_create_view *cv = &ast->stmt->u.create_view;
    if (cv->if_not_exists && name_taken(e->store, cv->name.name.str))
        return LDB_OK;
    struct table_build tb;
    table_build_init(&tb, e, ast);
    char **names = NULL;
    struct plan *p;
    struct table *t;
    tb.sb.env.lasting = !cv->temp;
    int rc = bind_query(&tb.sb.env, ast, cv->select, &p);
    if (rc == LDB_OK && cv->cols.n && cv->cols.n != p->ncols)
        rc = fail(e, LDB_ERROR, cv->name.name.off, "expected %u columns for view %s but got %u",
                  cv->cols.n, cv->name.name.str, p->ncols);
    if (rc == LDB_OK)
        rc = describe_query(&tb, p, &cv->cols, &names);
    if (rc == LDB_OK && (rc = create_described(&tb, cv->name.name.str, cv->temp, &t)) == LDB_OK)
        table_set_readonly(t, true);
    free_names(names, tb.ncols);
    table_build_free(&tb);
    return rc;
}

/* ---- CREATE INDEX ------------------------------------------------------------------------- */

static int index_part(const struct ddl_env *e, struct table *t, const ast_order_term *ot,
                      struct key_part *kp)
{
    const ast_expr *x = ot->expr;
    const struct schema *sc = table_schema(t);
    bool has_coll = false;
    if (x->kind == AST_COLLATE) {
        if (!collation_from_name(x->u.collate.collation.str, &kp->coll))
            return fail(e, LDB_ERROR, x->u.collate.collation.off,
                        "no such collation sequence: %s", x->u.collate.collation.str);
        has_coll = true;
        x = x->u.collate.operand;
    }
    if (x->kind != AST_COLUMN || x->u.column.table.str)
        return unsupported(e, x->off, "indexes on expressions");
    int c = schema_column(sc, x->u.column.column.str);
    if (c < 0)
        return fail(e, LDB_ERROR, x->off, "no such column: %s", x->u.column.column.str);
    kp->col = (uint32_t)c;
    kp->desc = ot->desc;
    kp->nulls_first = ot->nulls == AST_NULLS_DEFAULT ? key_part_default_nulls_first(ot->desc)
                                                     : ot->nulls == AST_NULLS_FIRST;
    if (!has_coll)
        kp->coll = sc->cols[c].coll;
    return LDB_OK;
}

static int create_index(const struct ddl_env *e, const sql_ast *ast)
{
    const ast_create_index *ci = &ast->stmt->u.create_index;
    if (ci->if_not_exists && name_taken(e->store, ci->name.name.str))
        return LDB_OK;
    if (ci->where)
        return unsupported(e, ci->where->off, "partial indexes");
    struct table *t = store_find_table(e->store, ci->table.str);
    if (!t || table_is_view(t))
        return fail(e, LDB_ERROR, ci->table.off, "no such table: %s", ci->table.str);
    if (ci->unique && table_is_view_store(t) && !table_sql(t))
        /* a layer's own table without a body (the optimistic outbox): a
         * constraint it does not know would refuse its writes */
        return fail(e, LDB_ERROR, ci->table.off, "cannot create a UNIQUE index on %s", t->name);
    if (ci->cols.n > INDEX_MAX_PARTS)
        return fail(e, LDB_ERROR, ci->table.off, "too many columns in an index (at most %d)",
                    INDEX_MAX_PARTS);
    struct key_part parts[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < ci->cols.n; i++) {
        int rc = index_part(e, t, &ci->cols.items[i], &parts[i]);
        if (rc)
            return rc;
    }
    struct index_def def = { ci->name.name.str,
                             ci->using_ == AST_USING_HASH ? INDEX_HASH : INDEX_ORDERED,
                             ci->unique, parts, ci->cols.n, ast->sql };
    int rc = store_create_index(e->store, t, &def, NULL);
    return rc ? store_failed(e, rc, ast->stmt->off) : LDB_OK;
}

/* ---- DROP and REINDEX ---------------------------------------------------------------------- */

static int drop(const struct ddl_env *e, const sql_ast *ast)
{
    const ast_stmt *st = ast->stmt;
    const ast_name *n = &st->u.drop.name.name;
    bool if_exists = st->u.drop.if_exists;
    int rc;
    switch (st->u.drop.object) {
    case AST_OBJ_INDEX: {
        struct table_index *ix = store_find_index(e->store, n->str);
        if (!ix)
            return if_exists ? LDB_OK : fail(e, LDB_ERROR, n->off, "no such index: %s", n->str);
        rc = store_drop_index(e->store, ix); /* subscribers rebuild what read it */
        return rc ? store_failed(e, rc, n->off) : LDB_OK;
    }
    case AST_OBJ_TRIGGER:
        return unsupported(e, st->off, "triggers");
    default:
        break;
    }
    bool want_view = st->u.drop.object == AST_OBJ_VIEW;
    struct table *t = store_find_table(e->store, n->str);
    if (!t)
        return if_exists ? LDB_OK
                         : fail(e, LDB_ERROR, n->off, "no such %s: %s",
                                want_view ? "view" : "table", n->str);
    /* the subscribers' refusal (a materialized view needs t) comes first:
     * it names what to drop instead */
    if ((rc = store_check_drop(e->store, t)))
        return store_failed(e, rc, n->off);
    if (table_is_view(t) != want_view)
        return fail(e, LDB_ERROR, n->off, "use DROP %s to delete %s %s",
                    want_view ? "TABLE" : "VIEW", want_view ? "table" : "view", n->str);
    if (want_view)
        store_enter_internal(e->store);
    rc = store_drop_table(e->store, t);
    if (want_view)
        store_leave_internal(e->store);
    return rc ? store_failed(e, rc, n->off) : LDB_OK;
}

int ddl_reindex(const struct ddl_env *e, const sql_ast *ast)
{
    const ast_name *n = &ast->stmt->u.target.name;
    if (!n->str || store_find_index(e->store, n->str) || store_find_table(e->store, n->str))
        return LDB_OK; /* indexes are always consistent: nothing to rebuild */
    return fail(e, LDB_ERROR, n->off, "unable to identify the object to be reindexed: %s",
                n->str);
}

int ddl_analyze(const struct ddl_env *e, const sql_ast *ast)
{
    const ast_name *n = &ast->stmt->u.target.name;
    if (!n->str) {
        for (size_t i = 0; i < store_table_count(e->store); i++)
            table_forget_statistics(store_table_at(e->store, i));
        return LDB_OK;
    }
    struct table_index *ix = store_find_index(e->store, n->str);
    struct table *t = ix ? ix->table : store_find_table(e->store, n->str);
    if (!t)
        return fail(e, LDB_ERROR, n->off, "no such table or index: %s", n->str);
    table_forget_statistics(t);
    return LDB_OK;
}

int ddl_run(const struct ddl_env *e, const sql_ast *ast)
{
    const ast_stmt *st = ast->stmt;
    switch (st->kind) {
    case AST_STMT_CREATE_TABLE: return create_table(e, ast);
    case AST_STMT_CREATE_INDEX: return create_index(e, ast);
    case AST_STMT_CREATE_VIEW: return create_view(e, ast);
    case AST_STMT_DROP: return drop(e, ast);
    default: return fail(e, LDB_INTERNAL, st->off, "unexpected statement");
    }
}

