/*
 * db_ddl.c - statements that change the schema or the transaction state,
 * and PRAGMA: CREATE TABLE [AS SELECT], CREATE INDEX, CREATE VIEW, DROP,
 * REINDEX, BEGIN/COMMIT/ROLLBACK/SAVEPOINT/RELEASE.
 *
 * Schema changes run inside a write statement, so they roll back with a
 * failed statement or transaction like any write. A (non-materialized)
 * view is stored as an empty read-only table whose DDL text is the
 * CREATE VIEW statement and whose columns are the view's: that makes view
 * names share the catalog's namespace, version and transactions for free;
 * the binder expands the text at each use (bind_query.c).
 *
 * Column constraints: PRIMARY KEY, UNIQUE, NOT NULL, DEFAULT (a constant,
 * evaluated once here) and COLLATE are kept; REFERENCES and FOREIGN KEY
 * are accepted and ignored (SQLite's default); CHECK, generated columns,
 * non-default ON CONFLICT clauses, indexes on expressions and partial
 * indexes are LDB_UNSUPPORTED.
 */
#include "api/db_internal.h"

#include "live/live.h"

#include "base/mem.h"
#include "sql/planner.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int unsupported(ldb_stmt *s, uint32_t off, const char *what)
{
    return db_error(s->db, LDB_UNSUPPORTED, s->ast, off, "%s are not supported", what);
}

static int store_failed(ldb_stmt *s, int rc, uint32_t off)
{
    if (rc == LDB_NOMEM || rc == LDB_INTERRUPT) /* not about a place in the text */
        return db_error(s->db, rc, NULL, -1, "%s", ldb_errstr(rc));
    return db_error(s->db, rc, s->ast, off, "%s", store_errmsg(s->db->store));
}

/* A bind environment over a scratch arena (DDL binds, then forgets). */
struct scratch_bind {
    plan_arena pa;
    sql_ast_vec views;
    struct eval_error err;
    struct bind_env env;
};

static void scratch_init(ldb_stmt *s, struct scratch_bind *sb)
{
    memset(sb, 0, sizeof *sb);
    plan_arena_init(&sb->pa);
    sb->env = (struct bind_env){ .store = s->db->store, .pa = &sb->pa, .err = &sb->err,
                                 .views = &sb->views, .funcs = &s->db->funcs };
}

static void scratch_free_bind(struct scratch_bind *sb)
{
    for (size_t i = 0; i < sb->views.len; i++)
        sql_ast_free(sb->views.data[i]);
    vec_free(&sb->views);
    plan_arena_free(&sb->pa);
}

/* ---- CREATE TABLE ------------------------------------------------------------------- */

struct table_build {
    ldb_stmt *s;
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
        return db_error(tb->s->db, LDB_ERROR, tb->s->ast, off,
                        "table %s has more than one primary key", table);
    if (n > SCHEMA_MAX_KEY)
        return db_error(tb->s->db, LDB_ERROR, tb->s->ast, off,
                        "too many primary key columns (at most %d)", SCHEMA_MAX_KEY);
    memcpy(tb->pk, cols, n * sizeof *cols);
    tb->npk = n;
    tb->has_pk = true;
    return LDB_OK;
}

static int column_constraint(struct table_build *tb, uint32_t i, const ast_col_constraint *c,
                             const char *table)
{
    ldb_stmt *s = tb->s;
    struct column_def *d = &tb->cols[i];
    switch (c->kind) {
    case AST_CC_PRIMARY_KEY:
        if (!default_conflict(c->on_conflict))
            return unsupported(s, c->off, "ON CONFLICT clauses on constraints");
        return set_primary_key(tb, &i, 1, c->off, table);
    case AST_CC_NOT_NULL:
        if (!default_conflict(c->on_conflict))
            return unsupported(s, c->off, "ON CONFLICT clauses on constraints");
        d->not_null = true;
        return LDB_OK;
    case AST_CC_UNIQUE:
        if (!default_conflict(c->on_conflict))
            return unsupported(s, c->off, "ON CONFLICT clauses on constraints");
        return add_unique(tb, &i, 1) ? db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory")
                                     : LDB_OK;
    case AST_CC_CHECK:
        return unsupported(s, c->off, "CHECK constraints");
    case AST_CC_GENERATED:
        return unsupported(s, c->off, "generated columns");
    case AST_CC_DEFAULT: {
        value v;
        int rc = bind_constant(&tb->sb.env, s->ast, c->expr, &v);
        if (rc)
            return db_error_from(s->db, s->ast, &tb->sb.err);
        rc = plan_own_value(&tb->sb.pa, &v);
        d->has_default = true;
        d->dflt = v;
        value_release(&v);
        return rc ? db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory") : LDB_OK;
    }
    case AST_CC_COLLATE:
        if (!collation_from_name(c->collation.str, &d->coll))
            return db_error(s->db, LDB_ERROR, s->ast, c->collation.off,
                            "no such collation sequence: %s", c->collation.str);
        return LDB_OK;
    default: /* NULL, REFERENCES */
        return LDB_OK;
    }
}

/* The column positions an order-term list names (PRIMARY KEY, UNIQUE). */
static int constraint_columns(struct table_build *tb, const ast_order_list *l, uint32_t *out)
{
    ldb_stmt *s = tb->s;
    for (uint32_t i = 0; i < l->n; i++) {
        const ast_expr *x = l->items[i].expr;
        if (x->kind == AST_COLLATE)
            x = x->u.collate.operand;
        if (x->kind != AST_COLUMN || x->u.column.table.str)
            return unsupported(s, x->off, "expressions in table constraints");
        uint32_t c = 0;
        while (c < tb->ncols && !name_eq(tb->cols[c].name, x->u.column.column.str))
            c++;
        if (c == tb->ncols)
            return db_error(s->db, LDB_ERROR, s->ast, x->off, "no such column: %s",
                            x->u.column.column.str);
        out[i] = c;
    }
    return LDB_OK;
}

static int table_constraint(struct table_build *tb, const ast_table_constraint *c,
                            const char *table)
{
    ldb_stmt *s = tb->s;
    uint32_t cols[SCHEMA_MAX_KEY];
    switch (c->kind) {
    case AST_TC_CHECK:
        return unsupported(s, c->off, "CHECK constraints");
    case AST_TC_FOREIGN_KEY:
        return LDB_OK;
    default:
        break;
    }
    if (!default_conflict(c->on_conflict))
        return unsupported(s, c->off, "ON CONFLICT clauses on constraints");
    if (c->cols.n > SCHEMA_MAX_KEY)
        return db_error(s->db, LDB_ERROR, s->ast, c->off, "too many columns in a key (at most %d)",
                        SCHEMA_MAX_KEY);
    int rc = constraint_columns(tb, &c->cols, cols);
    if (rc)
        return rc;
    if (c->kind == AST_TC_PRIMARY_KEY)
        return set_primary_key(tb, cols, c->cols.n, c->off, table);
    return add_unique(tb, cols, c->cols.n) ? db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory")
                                           : LDB_OK;
}

static int describe_columns(struct table_build *tb, const ast_create_table *ct)
{
    tb->ncols = ct->ncols;
    if (!(tb->cols = mem_calloc(ct->ncols + 1, sizeof *tb->cols)))
        return db_error(tb->s->db, LDB_NOMEM, NULL, -1, "out of memory");
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

static int create_described(struct table_build *tb, const char *name, struct table **out)
{
    struct unique_def *uniques = mem_calloc(tb->nuniques + 1, sizeof *uniques);
    if (!uniques)
        return db_error(tb->s->db, LDB_NOMEM, NULL, -1, "out of memory");
    for (uint32_t i = 0, at = 0; i < tb->nuniques; at += tb->unique_len[i++])
        uniques[i] = (struct unique_def){ tb->unique_cols + at, tb->unique_len[i] };
    struct table_def def = { name, tb->cols, tb->ncols, tb->pk, tb->npk,
                             uniques, tb->nuniques, tb->s->ast->sql };
    int rc = store_create_table(tb->s->db->store, &def, out);
    mem_free(uniques);
    return rc ? store_failed(tb->s, rc, tb->s->ast->stmt->off) : LDB_OK;
}

static void table_build_free(struct table_build *tb)
{
    mem_free(tb->cols);
    mem_free(tb->unique_len);
    mem_free(tb->unique_cols);
    scratch_free_bind(&tb->sb);
}

/* Runs a bound query and inserts its rows into t (CREATE TABLE AS). */
static int fill_from_query(ldb_stmt *s, struct scratch_bind *sb, const struct plan *p,
                           struct table *t)
{
    struct exec_env env = { s->db->store, s->params, s->nparams, &s->db->env,
                            &s->db->epoch, sb->pa.nsubqueries };
    struct exec *x;
    if (exec_new(&env, &sb->err, &x))
        return db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory");
    struct op *root;
    row *r;
    int rc = exec_open(x, p, &root);
    while (rc == LDB_OK && (rc = exec_next(root, &r)) == LDB_ROW)
        if ((rc = table_insert(s->db->store, t, r->cols, NULL)))
            rc = store_failed(s, rc, s->ast->stmt->off);
    if (rc == LDB_DONE)
        rc = LDB_OK;
    else if (rc && sb->err.code)
        rc = db_error_from(s->db, s->ast, &sb->err);
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
        return db_error(tb->s->db, LDB_NOMEM, NULL, -1, "out of memory");
    for (uint32_t i = 0; i < p->ncols; i++)
        tb->cols[i] = (struct column_def){ (*names)[i], p->cols[i].type, p->cols[i].coll,
                                           false, false, value_null() };
    return LDB_OK;
}

static bool name_taken(ldb *db, const char *name)
{
    return store_find_table(db->store, name) || store_find_index(db->store, name);
}

static int create_table(ldb_stmt *s)
{
    const ast_create_table *ct = &s->ast->stmt->u.create_table;
    if (ct->if_not_exists && name_taken(s->db, ct->name.name.str))
        return LDB_OK;
    struct table_build tb;
    memset(&tb, 0, sizeof tb);
    tb.s = s;
    scratch_init(s, &tb.sb);
    char **names = NULL;
    struct plan *p = NULL;
    struct table *t;
    int rc = LDB_OK;
    if (ct->as_select) {
        if ((rc = bind_query(&tb.sb.env, s->ast, ct->as_select, &p)) ||
            (rc = planner_optimize(&tb.sb.pa, &p)))
            rc = db_error_from(s->db, s->ast, &tb.sb.err);
        else
            rc = describe_query(&tb, p, &(ast_name_list){ 0, NULL }, &names);
    } else {
        rc = describe_columns(&tb, ct);
    }
    if (rc == LDB_OK)
        rc = create_described(&tb, ct->name.name.str, &t);
    if (rc == LDB_OK && p)
        rc = fill_from_query(s, &tb.sb, p, t);
    free_names(names, tb.ncols);
    table_build_free(&tb);
    return rc;
}

/* ---- CREATE VIEW ------------------------------------------------------------------------- */

static int create_view(ldb_stmt *s)
{
    const ast_create_view *cv = &s->ast->stmt->u.create_view;
    if (cv->if_not_exists && name_taken(s->db, cv->name.name.str))
        return LDB_OK;
    struct table_build tb;
    memset(&tb, 0, sizeof tb);
    tb.s = s;
    scratch_init(s, &tb.sb);
    char **names = NULL;
    struct plan *p;
    struct table *t;
    int rc = bind_query(&tb.sb.env, s->ast, cv->select, &p);
    if (rc)
        rc = db_error_from(s->db, s->ast, &tb.sb.err);
    else if (cv->cols.n && cv->cols.n != p->ncols)
        rc = db_error(s->db, LDB_ERROR, s->ast, cv->name.name.off,
                      "expected %u columns for view %s but got %u", cv->cols.n,
                      cv->name.name.str, p->ncols);
    if (rc == LDB_OK)
        rc = describe_query(&tb, p, &cv->cols, &names);
    if (rc == LDB_OK && (rc = create_described(&tb, cv->name.name.str, &t)) == LDB_OK)
        table_set_readonly(t, true);
    free_names(names, tb.ncols);
    table_build_free(&tb);
    return rc;
}

/* ---- CREATE INDEX ------------------------------------------------------------------------- */

static int index_part(ldb_stmt *s, struct table *t, const ast_order_term *ot,
                      struct key_part *kp)
{
    const ast_expr *x = ot->expr;
    const struct schema *sc = table_schema(t);
    bool has_coll = false;
    if (x->kind == AST_COLLATE) {
        if (!collation_from_name(x->u.collate.collation.str, &kp->coll))
            return db_error(s->db, LDB_ERROR, s->ast, x->u.collate.collation.off,
                            "no such collation sequence: %s", x->u.collate.collation.str);
        has_coll = true;
        x = x->u.collate.operand;
    }
    if (x->kind != AST_COLUMN || x->u.column.table.str)
        return unsupported(s, x->off, "indexes on expressions");
    int c = schema_column(sc, x->u.column.column.str);
    if (c < 0)
        return db_error(s->db, LDB_ERROR, s->ast, x->off, "no such column: %s",
                        x->u.column.column.str);
    kp->col = (uint32_t)c;
    kp->desc = ot->desc;
    kp->nulls_first = ot->nulls == AST_NULLS_DEFAULT ? key_part_default_nulls_first(ot->desc)
                                                     : ot->nulls == AST_NULLS_FIRST;
    if (!has_coll)
        kp->coll = sc->cols[c].coll;
    return LDB_OK;
}

static int create_index(ldb_stmt *s)
{
    const ast_create_index *ci = &s->ast->stmt->u.create_index;
    ldb *db = s->db;
    if (ci->if_not_exists && name_taken(db, ci->name.name.str))
        return LDB_OK;
    if (ci->where)
        return unsupported(s, ci->where->off, "partial indexes");
    struct table *t = store_find_table(db->store, ci->table.str);
    if (!t || table_is_view(t))
        return db_error(db, LDB_ERROR, s->ast, ci->table.off, "no such table: %s",
                        ci->table.str);
    if (ci->cols.n > INDEX_MAX_PARTS)
        return db_error(db, LDB_ERROR, s->ast, ci->table.off,
                        "too many columns in an index (at most %d)", INDEX_MAX_PARTS);
    struct key_part parts[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < ci->cols.n; i++) {
        int rc = index_part(s, t, &ci->cols.items[i], &parts[i]);
        if (rc)
            return rc;
    }
    struct index_def def = { ci->name.name.str,
                             ci->using_ == AST_USING_HASH ? INDEX_HASH : INDEX_ORDERED,
                             ci->unique, parts, ci->cols.n, s->ast->sql };
    int rc = store_create_index(db->store, t, &def, NULL);
    return rc ? store_failed(s, rc, s->ast->stmt->off) : LDB_OK;
}

/* ---- DROP and REINDEX ---------------------------------------------------------------------- */

static int drop(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    ldb *db = s->db;
    const ast_name *n = &st->u.drop.name.name;
    bool if_exists = st->u.drop.if_exists;
    int rc;
    switch (st->u.drop.object) {
    case AST_OBJ_INDEX: {
        struct table_index *ix = store_find_index(db->store, n->str);
        if (!ix)
            return if_exists ? LDB_OK
                             : db_error(db, LDB_ERROR, s->ast, n->off, "no such index: %s", n->str);
        rc = store_drop_index(db->store, ix); /* subscribers rebuild what read it */
        return rc ? store_failed(s, rc, n->off) : LDB_OK;
    }
    case AST_OBJ_TRIGGER:
        return unsupported(s, st->off, "triggers");
    default:
        break;
    }
    bool want_view = st->u.drop.object == AST_OBJ_VIEW;
    struct table *t = store_find_table(db->store, n->str);
    if (!t)
        return if_exists ? LDB_OK
                         : db_error(db, LDB_ERROR, s->ast, n->off, "no such %s: %s",
                                    want_view ? "view" : "table", n->str);
    /* the subscribers' refusal (a materialized view needs t) comes first:
     * it names what to drop instead */
    if ((rc = store_check_drop(db->store, t)))
        return store_failed(s, rc, n->off);
    if (table_is_view(t) != want_view)
        return db_error(db, LDB_ERROR, s->ast, n->off, "use DROP %s to delete %s %s",
                        want_view ? "TABLE" : "VIEW", want_view ? "table" : "view", n->str);
    if (want_view)
        store_enter_internal(db->store);
    rc = store_drop_table(db->store, t);
    if (want_view)
        store_leave_internal(db->store);
    return rc ? store_failed(s, rc, n->off) : LDB_OK;
}

static int reindex(ldb_stmt *s)
{
    const ast_name *n = &s->ast->stmt->u.reindex.name;
    if (!n->str || store_find_index(s->db->store, n->str) || store_find_table(s->db->store, n->str))
        return LDB_DONE; /* indexes are always consistent: nothing to rebuild */
    return db_error(s->db, LDB_ERROR, s->ast, n->off,
                    "unable to identify the object to be reindexed: %s", n->str);
}

int db_run_ddl(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    if (st->kind == AST_STMT_REINDEX)
        return reindex(s);
    int rc = db_write_begin(s->db);
    if (rc)
        return rc;
    switch (st->kind) {
    case AST_STMT_CREATE_TABLE: rc = create_table(s); break;
    case AST_STMT_CREATE_INDEX: rc = create_index(s); break;
    case AST_STMT_CREATE_VIEW: rc = create_view(s); break;
    case AST_STMT_DROP: rc = drop(s); break;
    default:
        rc = db_error(s->db, LDB_INTERNAL, s->ast, st->off, "unexpected statement");
        break;
    }
    int end = db_write_end(s->db, rc);
    return rc ? rc : end ? end : LDB_DONE;
}

/* ---- transactions --------------------------------------------------------------------------- */

int db_run_txn(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    struct store *store = s->db->store;
    int rc;
    if (live_in_callback(s->db->live))
        return db_error(s->db, LDB_MISUSE, NULL, -1,
                        "a live query callback cannot control transactions");
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
    return rc ? store_failed(s, rc, st->off) : LDB_DONE;
}

/* ---- PRAGMA -------------------------------------------------------------------------------------- */

static struct pragma *find_pragma(const ldb *db, const char *name)
{
    for (size_t i = 0; i < db->pragmas.len; i++)
        if (name_eq(db->pragmas.data[i].name, name))
            return &db->pragmas.data[i];
    return NULL;
}

const value *db_pragma_get(const ldb *db, const char *name)
{
    const struct pragma *p = find_pragma(db, name);
    return p ? &p->v : NULL;
}

int db_pragma_set(ldb *db, const char *name, const value *v)
{
    struct pragma *p = find_pragma(db, name);
    if (p) {
        value_release(&p->v);
        p->v = value_copy(v);
        return LDB_OK;
    }
    struct pragma np = { mem_strndup(name, strlen(name)), value_copy(v) };
    if (!np.name || vec_push(&db->pragmas, np)) {
        mem_free(np.name);
        value_release(&np.v);
        return LDB_NOMEM;
    }
    for (char *c = np.name; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return LDB_OK;
}

/* ON/TRUE/YES are 1, OFF/FALSE/NO are 0, other words their text. */
static int word_value(const ast_name *w, value *out)
{
    static const char *const yes[] = { "on", "true", "yes" }, *const no[] = { "off", "false", "no" };
    for (int i = 0; i < 3; i++) {
        if (name_eq(w->str, yes[i])) {
            *out = value_int(1);
            return LDB_OK;
        }
        if (name_eq(w->str, no[i])) {
            *out = value_int(0);
            return LDB_OK;
        }
    }
    return value_text(out, w->str, w->len);
}

int db_run_pragma(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    const char *name = st->u.pragma.name.name.str;
    ldb *db = s->db;
    if (!st->u.pragma.value && !st->u.pragma.word.str) {
        const value *v = db_pragma_get(db, name);
        row *r = v ? row_from(v, 1) : NULL;
        if (v && (!r || vec_push(&s->out_rows, r))) {
            row_release(r);
            return db_error(db, LDB_NOMEM, NULL, -1, "out of memory");
        }
        return LDB_OK;
    }
    if (live_in_callback(db->live))
        return db_error(db, LDB_MISUSE, NULL, -1,
                        "a live query callback cannot change a PRAGMA");
    value v;
    int rc;
    if (st->u.pragma.value) {
        struct scratch_bind sb;
        scratch_init(s, &sb);
        rc = bind_constant(&sb.env, s->ast, st->u.pragma.value, &v);
        if (rc)
            rc = db_error_from(db, s->ast, &sb.err);
        scratch_free_bind(&sb);
    } else if ((rc = word_value(&st->u.pragma.word, &v))) {
        rc = db_error(db, rc, NULL, -1, "out of memory");
    }
    if (rc)
        return rc;
    rc = db_pragma_set(db, name, &v);
    value_release(&v);
    return rc ? db_error(db, rc, NULL, -1, "out of memory") : LDB_DONE;
}
