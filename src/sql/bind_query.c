/*
 * bind_query.c - binding queries into plans: FROM clauses (tables, views,
 * CTEs, derived tables, joins with ON, USING and NATURAL), SELECT cores
 * (WHERE, GROUP BY, aggregates, HAVING, the result list), ORDER BY and
 * LIMIT, VALUES, and compound queries.
 *
 * The shape a SELECT core becomes, bottom up:
 *   FROM (SCAN / JOIN tree / one empty row) -> FILTER where
 *   -> [AGGREGATE groups, aggs -> FILTER having]
 *   -> PROJECT results ++ extra ORDER BY keys -> [DISTINCT]
 *   -> [SORT] -> [LIMIT] -> [PROJECT results, when extra keys were added]
 * A compound is SETOP nodes over cores, then SORT and LIMIT over the
 * compound's columns.
 */
#include "sql/bind_internal.h"

#include "base/strbuf.h"

#include <stdio.h>
#include <string.h>

/* ---- scopes ----------------------------------------------------------------------- */

struct scope *scope_new(binder *b, struct scope *parent, struct subq *sq)
{
    struct scope *s = balloc(b, sizeof *s);
    if (s) {
        s->parent = parent;
        s->sq = sq;
    }
    return s;
}

bool scope_add(binder *b, struct scope *s, const char *name, uint32_t off,
               bool explicit_alias, const struct plan *p)
{
    if (name) {
        for (uint32_t i = 0; i < s->nitems; i++)
            if (s->items[i].name && name_eq(s->items[i].name, name)) {
                bind_error(b, LDB_ERROR, off,
                           explicit_alias ? "alias %s is used twice in one FROM clause"
                                          : "table %s appears twice in one FROM clause; "
                                            "give one of them an alias",
                           name);
                return false;
            }
        for (struct scope *up = explicit_alias ? s->parent : NULL; up; up = up->parent)
            for (uint32_t i = 0; i < up->nitems; i++)
                if (up->items[i].name && name_eq(up->items[i].name, name)) {
                    bind_error(b, LDB_ERROR, off,
                               "alias %s shadows the alias of an enclosing query", name);
                    return false;
                }
    }
    struct scope_item it = { name, off, explicit_alias, p, s->width, NULL };
    if (!bpush(b, (void **)&s->items, &s->nitems, &s->items_cap, sizeof it, &it))
        return false;
    s->width += p->ncols;
    return true;
}

/* ---- plan helpers ------------------------------------------------------------------- */

static struct plan *node(binder *b, enum plan_kind kind, uint32_t ncols, struct plan *in)
{
    struct plan *p = plan_new(b->pa, kind, ncols);
    if (!p) {
        bind_nomem(b);
        return NULL;
    }
    p->in = in;
    if (in && ncols && ncols == in->ncols && kind != PLAN_PROJECT && kind != PLAN_AGGREGATE)
        memcpy(p->cols, in->cols, ncols * sizeof *p->cols);
    return p;
}

static struct plan_col col_of(const char *name, const struct expr *e)
{
    struct plan_col c = { name, (enum col_type)e->type, (enum col_type)e->aff, expr_coll(e),
                          false, e->csrc };
    return c;
}

/* The affinity a table column gives as an operand: a column declared
 * without a type (or BLOB) has BLOB affinity, which is an affinity in a
 * comparison (SQLite: TEXT meeting BLOB converts neither side), unlike an
 * expression's none. */
static enum col_type column_affinity(enum col_type t)
{
    return t == COL_BOOLEAN ? COL_ANY : t == COL_ANY ? COL_BLOB : t;
}

struct plan *bind_table_scan(binder *b, struct table *t, const char *alias)
{
    const struct schema *sc = table_schema(t);
    struct plan *p = node(b, PLAN_SCAN, sc->ncols, NULL);
    if (!p)
        return NULL;
    for (uint32_t i = 0; i < sc->ncols; i++) {
        const struct column *c = &sc->cols[i];
        p->cols[i] = (struct plan_col){ c->name, c->type, column_affinity(c->type), c->coll,
                                        c->hidden, COLL_COLUMN };
    }
    p->u.scan.table = t;
    /* a copy: the executor names the table after it may have been dropped */
    if (!alias && !(alias = bstrdup(b, table_name(t), strlen(table_name(t)))))
        return NULL;
    p->u.scan.alias = alias;
    return p;
}

/* A PROJECT that renames p's visible columns (view and CTE column lists). */
static struct plan *rename_columns(binder *b, struct plan *p, const ast_name_list *names,
                                   uint32_t off, const char *what)
{
    if (names->n == 0)
        return p;
    if (names->n != p->ncols) {
        bind_error(b, LDB_ERROR, off, "%s has %u columns but %u column names", what,
                   p->ncols, names->n);
        return NULL;
    }
    for (uint32_t i = 0; i < names->n; i++)
        p->cols[i].name = names->items[i].str;
    return p;
}

/* ---- shared bodies ------------------------------------------------------------------------ */

/* The plan def was bound to before, now shared by one more parent; NULL
 * when def was not bound yet (or out of memory: then b's error is set). */
static struct plan *bound_before(binder *b, const void *def)
{
    for (uint32_t i = 0; i < b->nbodies; i++) {
        struct plan *p = b->bodies[i].plan;
        if (b->bodies[i].def != def)
            continue;
        if (plan_share(b->pa, p)) {
            bind_nomem(b);
            return NULL;
        }
        return p;
    }
    return NULL;
}

static struct plan *remember_body(binder *b, const void *def, struct plan *p)
{
    struct bound_body body = { def, p };
    if (p && !bpush(b, (void **)&b->bodies, &b->nbodies, &b->bodies_cap, sizeof body, &body))
        return NULL;
    return p;
}

/* ---- FROM items ----------------------------------------------------------------------- */

static const ast_cte *find_cte(binder *b, const char *name, struct cte_frame **frame,
                               uint32_t *index)
{
    for (struct cte_frame *f = b->ctes; f; f = f->next)
        for (uint32_t i = f->visible; i-- > 0;)
            if (name_eq(f->with->items[i].name.str, name)) {
                *frame = f;
                *index = i;
                return &f->with->items[i];
            }
    return NULL;
}

/* Binds a query isolated from the surrounding scopes (views, CTEs). */
static struct plan *bind_isolated(binder *b, const ast_select *sel, const sql_ast *src,
                                  struct cte_frame *ctes)
{
    const sql_ast *save_src = b->src;
    struct cte_frame *save_ctes = b->ctes;
    struct scope *save_scope = b->scope;
    bool allow = b->allow_agg, in_args = b->in_agg_args;
    b->src = src;
    b->ctes = ctes;
    b->allow_agg = b->in_agg_args = false;
    struct plan *p = bind_select(b, sel, NULL, NULL);
    b->src = save_src;
    b->ctes = save_ctes;
    b->scope = save_scope;
    b->allow_agg = allow;
    b->in_agg_args = in_args;
    return p;
}

static struct plan *bind_cte_ref(binder *b, struct cte_frame *f, uint32_t i, uint32_t off)
{
    const ast_cte *cte = &f->with->items[i];
    struct plan *p = bound_before(b, cte);
    if (p || b->env->err->code)
        return p;
    struct cte_frame limited = *f;
    limited.visible = i; /* a CTE sees the ones before it */
    p = bind_isolated(b, cte->select, f->src, &limited);
    p = p ? rename_columns(b, p, &cte->cols, off, cte->name.str) : NULL;
    return remember_body(b, cte, p);
}

bool table_is_view(const struct table *t)
{
    const char *sql = table_sql(t);
    if (!sql || strncasecmp(sql, "CREATE", 6) != 0)
        return false;
    const char *p = sql + 6;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (strncasecmp(p, "TEMP", 4) == 0) {
        p += strncasecmp(p, "TEMPORARY", 9) == 0 ? 9 : 4;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
    }
    return strncasecmp(p, "VIEW", 4) == 0;
}

#define MAX_VIEW_DEPTH 64

static struct plan *bind_view(binder *b, struct table *t, uint32_t off)
{
    struct plan *shared = bound_before(b, t);
    if (shared || b->env->err->code)
        return shared;
    if (b->view_depth >= MAX_VIEW_DEPTH) {
        bind_error(b, LDB_ERROR, off, "view %s is circularly defined or nested too deeply",
                   table_name(t));
        return NULL;
    }
    sql_ast *ast;
    sql_error perr;
    const char *sql = table_sql(t);
    int rc = sql_parse(sql, strlen(sql), &ast, &perr);
    if (rc != LDB_OK) {
        bind_error(b, rc, off, "%s", rc == LDB_NOMEM ? "out of memory" : perr.msg);
        return NULL;
    }
    if (vec_push(b->env->views, ast)) {
        sql_ast_free(ast);
        bind_nomem(b);
        return NULL;
    }
    if (b->view_depth++ == 0) {
        b->view_off = off;
        b->view_name = table_name(t);
    }
    struct plan *p = bind_isolated(b, ast->stmt->u.create_view.select, ast, NULL);
    b->view_depth--;
    if (!p)
        return NULL;
    const struct schema *sc = table_schema(t);
    if (p->ncols != sc->nvisible) {
        bind_error(b, LDB_ERROR, off, "view %s has %u columns but its query now returns %u",
                   table_name(t), sc->nvisible, p->ncols);
        return NULL;
    }
    for (uint32_t i = 0; i < p->ncols; i++)
        p->cols[i].name = sc->cols[i].name;
    return remember_body(b, t, p);
}

static bool check_index_hint(binder *b, const ast_from *f, struct table *t, struct plan *p)
{
    if (f->indexed == AST_NOT_INDEXED)
        p->u.scan.not_indexed = true;
    if (f->indexed != AST_INDEXED_BY)
        return true;
    struct table_index *ix = store_find_index(b->store, f->index.str);
    if (!ix || ix->table != t) {
        bind_error(b, LDB_ERROR, f->index.off, "no such index: %s", f->index.str);
        return false;
    }
    return true;
}

/* ---- the catalog as a table ---------------------------------------------------------- */

static bool is_schema_name(const char *name)
{
    return name_eq(name, "livedb_schema") || name_eq(name, "sqlite_schema") ||
           name_eq(name, "sqlite_master");
}

static bool schema_cell(binder *b, struct plan *p, uint32_t r, uint32_t c, const char *text)
{
    value v = value_null();
    if (text && value_text(&v, text, strlen(text))) {
        bind_nomem(b);
        return false;
    }
    struct expr *e = ex_const(b, &v, 0);
    value_release(&v);
    if (!e)
        return false;
    e->type = COL_TEXT;
    p->u.values.cells[(size_t)r * 4 + c] = e;
    return true;
}

static bool schema_row(binder *b, struct plan *p, uint32_t r, const char *type,
                       const char *name, const char *table, const char *sql)
{
    return schema_cell(b, p, r, 0, type) && schema_cell(b, p, r, 1, name) &&
           schema_cell(b, p, r, 2, table) && schema_cell(b, p, r, 3, sql);
}

/* livedb_schema (alias sqlite_schema, sqlite_master): one row per table,
 * view and index, (type, name, tbl_name, sql), as of binding. */
static struct plan *schema_table(binder *b)
{
    size_t n = 0, nt = store_table_count(b->store);
    for (size_t i = 0; i < nt; i++)
        n += 1 + table_index_count(store_table_at(b->store, i));
    struct plan *p = node(b, PLAN_VALUES, 4, NULL);
    if (!p || !(p->u.values.cells = balloc(b, (n * 4 + 1) * sizeof(struct expr *))))
        return NULL;
    static const char *const names[] = { "type", "name", "tbl_name", "sql" };
    for (uint32_t c = 0; c < 4; c++)
        p->cols[c] = (struct plan_col){ names[c], COL_TEXT, COL_TEXT, LDB_COLL_BINARY, false,
                                        COLL_NONE };
    uint32_t r = 0;
    for (size_t i = 0; i < nt; i++) {
        struct table *t = store_table_at(b->store, i);
        if (!schema_row(b, p, r++, table_is_view(t) ? "view" : "table", table_name(t),
                        table_name(t), table_sql(t)))
            return NULL;
        for (size_t k = 0; k < table_index_count(t); k++) {
            const struct table_index *ix = table_index_at(t, k);
            if (!schema_row(b, p, r++, "index", ix->name, table_name(t), ix->sql))
                return NULL;
        }
    }
    p->u.values.nrows = r;
    return p;
}

/* The plan of a named relation: a CTE, a view, a table or the catalog. */
struct plan *bind_named(binder *b, const ast_qname *q, const char *alias)
{
    const char *name = q->name.str;
    struct cte_frame *frame;
    uint32_t ci;
    if (!q->schema.str && find_cte(b, name, &frame, &ci))
        return bind_cte_ref(b, frame, ci, q->name.off);
    struct table *t = store_find_table(b->store, name);
    if (!t && is_schema_name(name))
        return schema_table(b);
    if (!t) {
        bind_error(b, LDB_ERROR, q->name.off, "no such table: %s", name);
        return NULL;
    }
    if (t->temp && b->env->lasting) {
        bind_error(b, LDB_ERROR, q->name.off, "a view that is not TEMP cannot read TEMP %s %s",
                   table_is_view(t) ? "view" : "table", name);
        return NULL;
    }
    if (table_is_view(t))
        return bind_view(b, t, q->name.off);
    return bind_table_scan(b, t, alias ? alias : name);
}

static struct plan *bind_from_table(binder *b, struct scope *s, const ast_from *f)
{
    const ast_qname *q = &f->u.table;
    struct plan *p = bind_named(b, q, f->alias.str);
    if (!p)
        return NULL;
    if (p->kind == PLAN_SCAN && !check_index_hint(b, f, p->u.scan.table, p))
        return NULL;
    bool explicit_alias = f->alias.str != NULL;
    if (!scope_add(b, s, explicit_alias ? f->alias.str : q->name.str,
                   explicit_alias ? f->alias.off : q->name.off, explicit_alias, p))
        return NULL;
    return p;
}

static struct plan *bind_from(binder *b, struct scope *s, const ast_from *f);

/* Copy of e with every input column shifted down by delta; columns below
 * delta are outside the join (an error). */
static struct expr *shift_columns(binder *b, struct expr *e, uint32_t delta)
{
    if (!e || delta == 0)
        return e;
    struct expr *x = balloc(b, sizeof *x);
    if (!x)
        return NULL;
    *x = *e;
    if (e->kind == EXPR_COLUMN) {
        if (e->u.index < delta) {
            bind_error(b, LDB_ERROR, e->off,
                       "an ON clause may only use the tables of its own join");
            return NULL;
        }
        x->u.index -= delta;
        return x;
    }
    if (e->nargs && !(x->args = balloc(b, e->nargs * sizeof *x->args)))
        return NULL;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!(x->args[i] = shift_columns(b, e->args[i], delta)))
            return NULL;
    if (e->kind == EXPR_SUBQUERY && e->u.sq.ncaptures) {
        if (!(x->u.sq.captures = balloc(b, e->u.sq.ncaptures * sizeof *x->u.sq.captures)))
            return NULL;
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            if (!(x->u.sq.captures[i] = shift_columns(b, e->u.sq.captures[i], delta)))
                return NULL;
    }
    return x;
}

/* The unmerged column called name among items [lo, hi): 1 found, 0 none,
 * -1 ambiguous. */
static int find_using_column(struct scope *s, uint32_t lo, uint32_t hi, const char *name,
                             uint32_t *item, uint32_t *col)
{
    int found = 0;
    for (uint32_t i = lo; i < hi; i++) {
        const struct scope_item *it = &s->items[i];
        for (uint32_t c = 0; c < it->plan->ncols; c++) {
            if (it->plan->cols[c].hidden || (it->merged && it->merged[c]) ||
                !name_eq(it->plan->cols[c].name, name))
                continue;
            if (found)
                return -1;
            found = 1;
            *item = i;
            *col = c;
        }
    }
    return found;
}

static bool mark_merged(binder *b, struct scope *s, uint32_t item, uint32_t col)
{
    struct scope_item *it = &s->items[item];
    if (!it->merged && !(it->merged = balloc(b, it->plan->ncols * sizeof(bool))))
        return false;
    it->merged[col] = true;
    return true;
}

/* The unqualified meaning of a USING column after a RIGHT or FULL join. */
static bool add_override(binder *b, struct scope *s, uint32_t li, uint32_t lc,
                         struct expr *l, struct expr *r, enum ast_join_kind kind)
{
    struct expr *e = r;
    if (kind == AST_JOIN_FULL) {
        e = ex_new(b, EXPR_CALL, 2, l->off);
        if (!e)
            return false;
        e->u.fn = func_find("coalesce", 2, NULL);
        e->args[0] = l;
        e->args[1] = r;
        e->type = (uint8_t)common_type(l->type, r->type);
    }
    struct name_override o = { li, lc, e };
    return bpush(b, (void **)&s->overrides, &s->noverrides, &s->overrides_cap, sizeof o, &o);
}

/* USING (names): the equalities, ANDed, reading the joined row. */
static struct expr *bind_using(binder *b, struct scope *s, const ast_name_list *names,
                               uint32_t left_lo, uint32_t right_lo,
                               enum ast_join_kind kind, uint32_t off)
{
    struct expr *cond = NULL;
    for (uint32_t k = 0; k < names->n; k++) {
        const ast_name *n = &names->items[k];
        uint32_t li, lc, ri, rc;
        if (find_using_column(s, left_lo, right_lo, n->str, &li, &lc) != 1 ||
            find_using_column(s, right_lo, s->nitems, n->str, &ri, &rc) != 1) {
            bind_error(b, LDB_ERROR, n->off,
                       "cannot join using column %s - column not present in both tables",
                       n->str);
            return NULL;
        }
        struct expr *l = scope_column_expr(b, s, li, lc, n->off);
        struct expr *r = scope_column_expr(b, s, ri, rc, n->off);
        struct expr *eq = ex_binary(b, EOP_EQ, l, r, n->off);
        if (!eq || !mark_merged(b, s, ri, rc))
            return NULL;
        if ((kind == AST_JOIN_RIGHT || kind == AST_JOIN_FULL) &&
            !add_override(b, s, li, lc, l, r, kind))
            return NULL;
        cond = cond ? ex_binary(b, EOP_AND, cond, eq, off) : eq;
        if (!cond)
            return NULL;
    }
    return cond;
}

/* NATURAL: the visible column names both sides have. */
static bool natural_names(binder *b, struct scope *s, uint32_t left_lo, uint32_t right_lo,
                          ast_name_list *out)
{
    out->n = 0;
    uint32_t cap = 0;
    for (uint32_t i = right_lo; i < s->nitems; i++) {
        const struct plan *p = s->items[i].plan;
        for (uint32_t c = 0; c < p->ncols; c++) {
            uint32_t li, lc;
            if (p->cols[c].hidden ||
                find_using_column(s, left_lo, right_lo, p->cols[c].name, &li, &lc) != 1)
                continue;
            ast_name n = { p->cols[c].name, (uint32_t)strlen(p->cols[c].name), 0, false };
            if (!bpush(b, (void **)&out->items, &out->n, &cap, sizeof n, &n))
                return false;
        }
    }
    return true;
}

static enum join_kind join_kind_of(enum ast_join_kind k)
{
    switch (k) {
    case AST_JOIN_LEFT: return JOIN_LEFT;
    case AST_JOIN_RIGHT: return JOIN_RIGHT;
    case AST_JOIN_FULL: return JOIN_FULL;
    default: return JOIN_INNER;
    }
}

static struct plan *bind_join(binder *b, struct scope *s, const ast_from *f)
{
    uint32_t left_lo = s->nitems, base = s->width;
    if (!bind_enter(b, f->off))
        return NULL;
    struct plan *l = bind_from(b, s, f->u.join.left);
    uint32_t right_lo = s->nitems;
    struct plan *r = l ? bind_from(b, s, f->u.join.right) : NULL;
    bind_leave(b);
    if (!r)
        return NULL;
    struct plan *j = node(b, PLAN_JOIN, l->ncols + r->ncols, NULL);
    if (!j)
        return NULL;
    j->left = l;
    j->right = r;
    memcpy(j->cols, l->cols, l->ncols * sizeof *j->cols);
    memcpy(j->cols + l->ncols, r->cols, r->ncols * sizeof *j->cols);
    enum ast_join_kind ak = f->u.join.kind;
    j->u.join.kind = join_kind_of(ak);
    ast_name_list natural = { 0, NULL };
    const ast_name_list *using_cols = &f->u.join.using_cols;
    if (f->u.join.natural) {
        if (!natural_names(b, s, left_lo, right_lo, &natural))
            return NULL;
        using_cols = &natural;
    }
    struct expr *cond = NULL;
    struct scope *save = b->scope;
    b->scope = s;
    if (using_cols->n)
        cond = bind_using(b, s, using_cols, left_lo, right_lo, ak, f->off);
    else if (f->u.join.on)
        cond = bind_expr(b, f->u.join.on);
    b->scope = save;
    if ((using_cols->n || f->u.join.on) && !cond)
        return NULL;
    if (cond && !(cond = shift_columns(b, cond, base)))
        return NULL;
    j->u.join.residual = cond;
    if (!cond && j->u.join.kind == JOIN_INNER)
        j->u.join.kind = JOIN_CROSS;
    return j;
}

static struct plan *bind_from(binder *b, struct scope *s, const ast_from *f)
{
    switch (f->kind) {
    case AST_FROM_TABLE:
        return bind_from_table(b, s, f);
    case AST_FROM_SUBQUERY: {
        struct plan *p = bind_select(b, f->u.subquery, s->parent, s->sq);
        if (!p || !scope_add(b, s, f->alias.str, f->alias.off, f->alias.str != NULL, p))
            return NULL;
        return p;
    }
    case AST_FROM_JOIN:
        return bind_join(b, s, f);
    }
    return NULL;
}

/* One row of no columns: the input of a SELECT without FROM. */
static struct plan *one_row(binder *b)
{
    struct plan *p = node(b, PLAN_VALUES, 0, NULL);
    if (p)
        p->u.values.nrows = 1;
    return p;
}

/* ---- result lists ------------------------------------------------------------------------ */

struct results {
    struct result_col *cols;
    uint32_t n, cap;
};

static bool add_result(binder *b, struct results *r, const char *name, const char *alias,
                       struct expr *e, uint32_t off)
{
    struct result_col rc = { name, alias, e, off };
    return e && bpush(b, (void **)&r->cols, &r->n, &r->cap, sizeof rc, &rc);
}

static bool expand_star(binder *b, struct scope *s, const ast_result_col *rc, struct results *r)
{
    bool any = false;
    for (uint32_t i = 0; i < s->nitems; i++) {
        const struct scope_item *it = &s->items[i];
        if (rc->kind == AST_RESULT_TABLE_STAR && !(it->name && name_eq(it->name, rc->table.str)))
            continue;
        any = true;
        for (uint32_t c = 0; c < it->plan->ncols; c++) {
            if (it->plan->cols[c].hidden ||
                (rc->kind == AST_RESULT_STAR && it->merged && it->merged[c]))
                continue;
            struct expr *e = rc->kind == AST_RESULT_STAR
                                 ? scope_column_expr(b, s, i, c, rc->off)
                                 : ex_column(b, it->base + c, &it->plan->cols[c], rc->off);
            if (!add_result(b, r, it->plan->cols[c].name, NULL, e, rc->off))
                return false;
        }
    }
    if (!any) {
        if (rc->kind == AST_RESULT_STAR)
            bind_error(b, LDB_ERROR, rc->off, "no tables specified");
        else
            bind_error(b, LDB_ERROR, rc->table.off, "no such table: %s", rc->table.str);
        return false;
    }
    return true;
}

const char *source_text(binder *b, uint32_t off, uint32_t len)
{
    return bstrdup(b, sql_ast_text(b->src, off), len);
}

/* SQLite's result names: the alias, a column's own name, else the text. */
static const char *result_name(binder *b, const ast_result_col *rc, const struct expr *e,
                               const struct plan *from)
{
    if (rc->alias.str)
        return rc->alias.str;
    const ast_expr *x = rc->expr;
    if (x->kind == AST_COLUMN) {
        if (e->kind == EXPR_COLUMN && from && e->u.index < from->ncols)
            return from->cols[e->u.index].name;
        return x->u.column.column.str;
    }
    return source_text(b, rc->off, rc->len);
}

static bool bind_results(binder *b, struct scope *s, const ast_result_list *l,
                         struct results *r)
{
    for (uint32_t i = 0; i < l->n; i++) {
        const ast_result_col *rc = &l->items[i];
        if (rc->kind != AST_RESULT_EXPR) {
            if (!expand_star(b, s, rc, r))
                return false;
            continue;
        }
        if (rc->expr->kind == AST_ROW) {
            bind_error(b, LDB_UNSUPPORTED, rc->expr->off, "row values are not supported");
            return false;
        }
        b->live_ok = l == b->live_list ? rc->expr : NULL;
        struct expr *e = bind_expr(b, rc->expr);
        b->live_ok = NULL;
        if (!e)
            return false;
        const char *name = result_name(b, rc, e, s->from);
        if (!add_result(b, r, name, rc->alias.str, e, rc->off))
            return false;
    }
    return true;
}

/* ---- aggregates ----------------------------------------------------------------------------- */

/*
 * Bare columns (a FROM column outside any aggregate and not grouped) take
 * their values from one row of the group, as in SQLite, chosen by a rule
 * that depends only on the group's rows: when the query has exactly one
 * min() or max() aggregate, the row that gave that minimum or maximum
 * (SQLite's rule; when its argument is NULL in every row, the least or
 * greatest row); otherwise the least row under the value order. Both are
 * one extra min/max aggregate over array(key, bare columns...), so they
 * run on aggregate.h like every aggregate, incrementally too. Each bare
 * reference becomes element i of that aggregate's result (EXPR_FIELD).
 */
struct aggs {
    struct expr **groups;
    uint32_t ngroups;
    struct expr **calls;         /* distinct aggregate calls seen */
    uint32_t ncalls, cap;
    const struct plan *from;     /* the FROM row's columns */
    uint32_t *bare;              /* FROM columns used bare */
    uint32_t nbare, bare_cap;
    struct expr **fields;        /* EXPR_FIELD nodes made for them */
    uint32_t nfields, fields_cap;
};

static struct expr *lift(binder *b, struct aggs *a, struct expr *e);

static struct expr *lift_column(binder *b, const struct expr *e, uint32_t index)
{
    struct expr *c = ex_new(b, EXPR_COLUMN, 0, e->off);
    if (!c)
        return NULL;
    c->u.index = index;
    c->type = e->type;
    c->aff = e->aff;
    c->coll = e->coll;
    c->csrc = e->csrc;
    c->flags = e->flags & EXPR_COLL_EXPLICIT;
    return c;
}

static struct expr *lift_call(binder *b, struct aggs *a, struct expr *e)
{
    uint32_t k = 0;
    while (k < a->ncalls && !expr_equal(a->calls[k], e))
        k++;
    if (k == a->ncalls &&
        !bpush(b, (void **)&a->calls, &a->ncalls, &a->cap, sizeof e, &e))
        return NULL;
    return lift_column(b, e, a->ngroups + k);
}

static struct expr *lift_args(binder *b, struct aggs *a, struct expr *e)
{
    struct expr *x = balloc(b, sizeof *x);
    if (!x)
        return NULL;
    *x = *e;
    if (e->nargs && !(x->args = balloc(b, e->nargs * sizeof *x->args)))
        return NULL;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!(x->args[i] = lift(b, a, e->args[i])))
            return NULL;
    if (e->kind == EXPR_SUBQUERY && e->u.sq.ncaptures) {
        if (!(x->u.sq.captures = balloc(b, e->u.sq.ncaptures * sizeof *x->u.sq.captures)))
            return NULL;
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            if (!(x->u.sq.captures[i] = lift(b, a, e->u.sq.captures[i])))
                return NULL;
    }
    return x;
}

/* A bare column: element k of the bare-column aggregate, patched once
 * every aggregate is known (finish_bare). */
static struct expr *lift_bare(binder *b, struct aggs *a, const struct expr *e)
{
    uint32_t k = 0;
    while (k < a->nbare && a->bare[k] != e->u.index)
        k++;
    if (k == a->nbare &&
        !bpush(b, (void **)&a->bare, &a->nbare, &a->bare_cap, sizeof *a->bare, &e->u.index))
        return NULL;
    struct expr *f = ex_new(b, EXPR_FIELD, 1, e->off);
    struct expr *c = f ? lift_column(b, e, 0) : NULL;
    if (!c || !bpush(b, (void **)&a->fields, &a->nfields, &a->fields_cap, sizeof f, &f))
        return NULL;
    f->args[0] = c;
    f->u.index = k;
    f->type = e->type;
    f->aff = e->aff;
    f->coll = e->coll;
    f->csrc = e->csrc;
    return f;
}

/* e read the FROM row; the same expression reading the AGGREGATE row. */
static struct expr *lift(binder *b, struct aggs *a, struct expr *e)
{
    for (uint32_t i = 0; i < a->ngroups; i++)
        if (expr_equal(e, a->groups[i]))
            return lift_column(b, e, i);
    switch ((enum expr_kind)e->kind) {
    case EXPR_CALL:
        if (func_is_aggregate(e->u.fn))
            return lift_call(b, a, e);
        return lift_args(b, a, e);
    case EXPR_COLUMN:
        return lift_bare(b, a, e);
    case EXPR_CONST:
    case EXPR_PARAM:
    case EXPR_OUTER:
        return e;
    default:
        return lift_args(b, a, e);
    }
}

/* The terms of an ordered aggregate: the call's ORDER BY terms, then the
 * input's unique key (when known), so that equal ORDER BY values keep the
 * order of the rows' keys. The hidden argument ARRAY(x, terms...) goes
 * after x. */
static bool order_agg(binder *b, const struct expr *call, const struct plan *in,
                      struct plan_agg *out)
{
    const struct expr *o = aggcall_order(call);
    uint32_t nby = o ? o->nargs : 0, nkey = 0;
    uint32_t *key = balloc(b, (in->ncols + 1) * sizeof *key);
    if (!key)
        return false;
    if (!plan_unique_key(in, key, &nkey))
        nkey = 0;
    uint32_t n = nby + nkey;
    if (n == 0)
        return true;
    struct expr *arr = ex_new(b, EXPR_CALL, 1 + n, call->off);
    struct expr **args = balloc(b, 2 * sizeof *args);
    if (!arr || !args || !(out->order = balloc(b, n * sizeof *out->order)))
        return false;
    arr->u.fn = func_find("array", 1 + n, NULL);
    arr->args[0] = args[0] = call->args[0];
    for (uint32_t i = 0; i < n; i++) {
        struct agg_order_term *t = &out->order[i];
        if (i < nby) {
            const struct expr *w = o->args[i];
            arr->args[1 + i] = w->args[0];
            *t = (struct agg_order_term){ (enum ldb_collation)w->coll,
                                          (w->flags & AGGORD_DESC) != 0,
                                          (w->flags & AGGORD_NULLS_FIRST) != 0 };
        } else {
            const struct plan_col *c = &in->cols[key[i - nby]];
            if (!(arr->args[1 + i] = ex_column(b, key[i - nby], c, call->off)))
                return false;
            *t = (struct agg_order_term){ c->coll, false, true };
        }
    }
    ex_inherit_nondet(arr);
    args[1] = arr;
    out->args = args;
    out->nargs = 2;
    out->norder = n;
    return true;
}

static bool build_agg(binder *b, const struct expr *call, const struct plan *in,
                      struct plan_agg *out)
{
    const struct func_def *fn = call->u.fn;
    uint32_t nargs = aggcall_nargs(call);
    out->fn = fn;
    out->distinct = (call->flags & AGGCALL_DISTINCT) != 0;
    out->filter = (call->flags & AGGCALL_FILTER) ? call->args[call->nargs - 1] : NULL;
    out->nargs = fn->agg->nargs;
    out->args = call->args;
    out->coll = nargs ? expr_coll(call->args[0]) : LDB_COLL_BINARY;
    out->sep = value_null();
    if (fn->agg == &agg_string_agg && nargs == 2)
        out->sep = call->args[1]->u.v;
    return !(fn->agg->flags & AGG_ORDERED) || order_agg(b, call, in, out);
}

/* The text of e over the columns of p, as a column name (EXPLAIN). */
static const char *name_of(binder *b, const struct expr *e, const struct plan *p)
{
    const char **names = balloc(b, (p->ncols + 1) * sizeof *names);
    if (!names)
        return NULL;
    for (uint32_t i = 0; i < p->ncols; i++)
        names[i] = p->cols[i].name;
    strbuf sb = STRBUF_INIT;
    if (e->kind == EXPR_CALL && func_is_aggregate(e->u.fn)) {
        /* an aggregate call still carries its binder flags and FILTER */
        uint32_t n = aggcall_nargs(e);
        sb_printf(&sb, "%s(%s", e->u.fn->name, (e->flags & AGGCALL_DISTINCT) ? "DISTINCT " : "");
        if (e->u.fn->agg == &agg_count_star)
            sb_putc(&sb, '*');
        for (uint32_t i = 0; i < n; i++) {
            if (i)
                sb_puts(&sb, ", ");
            expr_print(&sb, e->args[i], names, p->ncols);
        }
        sb_putc(&sb, ')');
    } else {
        expr_print(&sb, e, names, p->ncols);
    }
    const char *s = sb_error(&sb) ? NULL : bstrdup(b, sb_str(&sb), sb.len);
    sb_free(&sb);
    if (!s)
        bind_nomem(b);
    return s;
}

static struct plan *aggregate_node(binder *b, struct aggs *a, struct plan *in)
{
    struct plan *p = node(b, PLAN_AGGREGATE, a->ngroups + a->ncalls, in);
    if (!p || (a->ncalls && !(p->u.agg.aggs = balloc(b, a->ncalls * sizeof *p->u.agg.aggs))))
        return NULL;
    p->u.agg.groups = a->groups;
    p->u.agg.ngroups = a->ngroups;
    p->u.agg.naggs = a->ncalls;
    for (uint32_t i = 0; i < a->ngroups + a->ncalls; i++) {
        const struct expr *e = i < a->ngroups ? a->groups[i] : a->calls[i - a->ngroups];
        const char *name = name_of(b, e, in);
        if (!name)
            return NULL;
        p->cols[i] = col_of(name, e);
    }
    for (uint32_t i = 0; i < a->ncalls; i++)
        if (!build_agg(b, a->calls[i], in, &p->u.agg.aggs[i]))
            return NULL;
    return p;
}

/* ---- ORDER BY ---------------------------------------------------------------------------------- */

struct order_item {
    uint32_t col;                /* result column, or UINT32_MAX for extra */
    struct expr *e;              /* extra: bound expression */
    bool desc, nulls_first;
    bool has_coll;
    enum ldb_collation coll;
};

/* Peels COLLATE off an ORDER BY term. */
static const ast_expr *peel_collate(binder *b, const ast_expr *x, struct order_item *it)
{
    if (x->kind != AST_COLLATE)
        return x;
    if (!collation_from_name(x->u.collate.collation.str, &it->coll)) {
        bind_error(b, LDB_ERROR, x->u.collate.collation.off, "no such collation sequence: %s",
                   x->u.collate.collation.str);
        return NULL;
    }
    it->has_coll = true;
    return x->u.collate.operand;
}

static bool is_int_literal(const ast_expr *x, int64_t *k)
{
    if (x->kind != AST_LITERAL || value_type(&x->u.literal.v) != LDB_INTEGER)
        return false;
    *k = x->u.literal.v.h.u.i;
    return true;
}

static const char *ordinal(uint32_t i)
{
    static const char *const names[] = { "1st", "2nd", "3rd" };
    return i < 3 ? names[i] : "";
}

/* A term naming a result column by number or by name; false with no
 * error when it does neither. */
static bool order_by_position(binder *b, const ast_expr *x, uint32_t term,
                              const struct plan_col *cols, uint32_t ncols,
                              const char *const *aliases, struct order_item *it)
{
    int64_t k;
    if (is_int_literal(x, &k)) {
        if (k < 1 || k > (int64_t)ncols) {
            bind_error(b, LDB_ERROR, x->off,
                       "%s%sORDER BY term out of range - should be between 1 and %u",
                       ordinal(term), term < 3 ? " " : "", ncols);
            return false;
        }
        it->col = (uint32_t)(k - 1);
        return true;
    }
    if (x->kind != AST_COLUMN || x->u.column.table.str)
        return false;
    for (uint32_t i = 0; i < ncols; i++) {
        const char *n = aliases ? aliases[i] : cols[i].name;
        if (n && name_eq(n, x->u.column.column.str)) {
            it->col = i;
            return true;
        }
    }
    return false;
}

static bool order_terms(binder *b, const ast_order_list *ol, struct order_item **out)
{
    *out = ol->n ? balloc(b, ol->n * sizeof **out) : NULL;
    if (ol->n && !*out)
        return false;
    for (uint32_t i = 0; i < ol->n; i++) {
        struct order_item *it = &(*out)[i];
        it->col = UINT32_MAX;
        it->desc = ol->items[i].desc;
        it->nulls_first = ol->items[i].nulls == AST_NULLS_DEFAULT
                              ? !it->desc
                              : ol->items[i].nulls == AST_NULLS_FIRST;
    }
    return true;
}

static struct plan *sort_node(binder *b, struct plan *in, const struct order_item *items,
                              uint32_t n)
{
    struct plan *p = node(b, PLAN_SORT, in->ncols, in);
    if (!p || !(p->u.sort.keys = balloc(b, n * sizeof *p->u.sort.keys)))
        return NULL;
    p->u.sort.nkeys = n;
    for (uint32_t i = 0; i < n; i++) {
        struct sort_key *k = &p->u.sort.keys[i];
        if (!(k->e = ex_column(b, items[i].col, &in->cols[items[i].col], 0)))
            return NULL;
        k->desc = items[i].desc;
        k->nulls_first = items[i].nulls_first;
        k->coll = items[i].has_coll ? items[i].coll : in->cols[items[i].col].coll;
    }
    return p;
}

/* LIMIT and OFFSET read no row: bound in an empty scope beside the query. */
static struct plan *limit_node(binder *b, struct plan *in, const ast_select *sel,
                               struct scope *parent, struct subq *sq)
{
    if (!sel->limit)
        return in;
    struct scope *s = scope_new(b, parent, sq);
    if (!s)
        return NULL;
    struct scope *save = b->scope;
    bool allow = b->allow_agg;
    b->scope = s;
    b->allow_agg = false;
    struct expr *lim = bind_expr(b, sel->limit);
    struct expr *off = lim && sel->offset ? bind_expr(b, sel->offset) : NULL;
    b->scope = save;
    b->allow_agg = allow;
    if (!lim || (sel->offset && !off))
        return NULL;
    struct plan *p = node(b, PLAN_LIMIT, in->ncols, in);
    if (!p)
        return NULL;
    p->u.limit.limit = lim;
    p->u.limit.offset = off;
    return p;
}

static struct plan *project_node(binder *b, struct plan *in, struct expr **exprs,
                                 const char *const *names, uint32_t n)
{
    struct plan *p = node(b, PLAN_PROJECT, n, in);
    if (!p || (n && !(p->u.exprs = balloc(b, n * sizeof *p->u.exprs))))
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        p->u.exprs[i] = exprs[i];
        p->cols[i] = col_of(names[i], exprs[i]);
    }
    return p;
}

/* The first n columns of in. */
static struct plan *trim_node(binder *b, struct plan *in, uint32_t n)
{
    struct expr **exprs = balloc(b, n * sizeof *exprs);
    const char **names = balloc(b, n * sizeof *names);
    if (!exprs || !names)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!(exprs[i] = ex_column(b, i, &in->cols[i], 0)))
            return NULL;
        exprs[i]->csrc = in->cols[i].csrc; /* the same result column */
        names[i] = in->cols[i].name;
    }
    return project_node(b, in, exprs, names, n);
}

/* ---- SELECT core ----------------------------------------------------------------------------------- */

struct core {
    struct scope *s;
    struct results r;
    struct aggs a;
    struct expr *having;
    struct order_item *order;
    uint32_t norder;
    uint32_t nextra;
};

static bool has_aggregate(const struct expr *e)
{
    if (e->kind == EXPR_CALL && func_is_aggregate(e->u.fn))
        return true;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (has_aggregate(e->args[i]))
            return true;
    return false;
}

static bool bind_group_by(binder *b, struct core *c, const ast_select_core *sc)
{
    const ast_expr_list *g = &sc->group_by;
    c->a.ngroups = g->n;
    if (g->n && !(c->a.groups = balloc(b, g->n * sizeof *c->a.groups)))
        return false;
    for (uint32_t i = 0; i < g->n; i++) {
        int64_t k;
        if (is_int_literal(g->items[i], &k)) {
            if (k < 1 || k > (int64_t)c->r.n) {
                bind_error(b, LDB_ERROR, g->items[i]->off,
                           "GROUP BY term out of range - should be between 1 and %u", c->r.n);
                return false;
            }
            c->a.groups[i] = c->r.cols[k - 1].e;
            continue;
        }
        if (g->items[i]->kind == AST_ROW) {
            bind_error(b, LDB_UNSUPPORTED, g->items[i]->off, "row values are not supported");
            return false;
        }
        if (!(c->a.groups[i] = bind_expr(b, g->items[i])))
            return false;
    }
    for (uint32_t i = 0; i < g->n; i++)
        if (has_aggregate(c->a.groups[i])) {
            bind_error(b, LDB_ERROR, c->a.groups[i]->off,
                       "aggregate functions are not allowed in the GROUP BY clause");
            return false;
        }
    return true;
}

static bool bind_core_order(binder *b, struct core *c, const ast_order_list *ol)
{
    if (!order_terms(b, ol, &c->order))
        return false;
    c->norder = ol->n;
    const char **aliases = balloc(b, (c->r.n + 1) * sizeof *aliases);
    struct plan_col *cols = balloc(b, (c->r.n + 1) * sizeof *cols);
    if (!aliases || !cols)
        return false;
    for (uint32_t i = 0; i < c->r.n; i++)
        aliases[i] = c->r.cols[i].alias;
    for (uint32_t i = 0; i < ol->n; i++) {
        struct order_item *it = &c->order[i];
        const ast_expr *x = peel_collate(b, ol->items[i].expr, it);
        if (!x)
            return false;
        if (order_by_position(b, x, i, cols, c->r.n, aliases, it))
            continue;
        if (b->env->err->code)
            return false;
        if (!(it->e = bind_expr(b, x)))
            return false;
        for (uint32_t k = 0; k < c->r.n && it->col == UINT32_MAX; k++)
            if (expr_equal(it->e, c->r.cols[k].e))
                it->col = k;
        if (it->col == UINT32_MAX)
            c->nextra++;
    }
    return true;
}

/* The one min() or max() call that decides the bare columns' row, or NULL. */
static const struct expr *deciding_extreme(const struct aggs *a)
{
    const struct expr *found = NULL;
    for (uint32_t i = 0; i < a->ncalls; i++) {
        const struct agg_def *d = a->calls[i]->u.fn->agg;
        if (d != &agg_min && d != &agg_max)
            continue;
        if (found || (a->calls[i]->flags & AGGCALL_FILTER))
            return NULL;
        found = a->calls[i];
    }
    return found;
}

/* The aggregate behind the bare columns (see struct aggs). */
static bool finish_bare(binder *b, struct aggs *a)
{
    if (!a->nbare)
        return true;
    const struct expr *ext = deciding_extreme(a);
    /* with a deciding min(x) the array leads with (x IS NULL, x): rows
     * with a value first, then the least x (max: x IS NOT NULL, x, under
     * max), so a group whose x is all NULL still yields one of its rows */
    uint32_t lead = ext ? 2 : 0, off = a->fields[0]->off;
    struct expr *arr = ex_new(b, EXPR_CALL, lead + a->nbare, off);
    struct expr *call = ex_new(b, EXPR_CALL, 1, off);
    if (!arr || !call)
        return false;
    arr->u.fn = func_find("array", lead + a->nbare, NULL);
    if (ext) {
        bool is_max = ext->u.fn->agg == &agg_max;
        if (!(arr->args[0] = ex_unary(b, is_max ? EOP_NOTNULL : EOP_ISNULL, ext->args[0], off)))
            return false;
        arr->args[1] = ext->args[0];
    }
    for (uint32_t i = 0; i < a->nbare; i++)
        if (!(arr->args[lead + i] = ex_column(b, a->bare[i], &a->from->cols[a->bare[i]], off)))
            return false;
    call->args[0] = arr;
    call->u.fn = ext ? ext->u.fn : func_find("min", 1, NULL);
    call->coll = ext ? ext->coll : LDB_COLL_BINARY;
    uint32_t col = a->ngroups + a->ncalls;
    if (!bpush(b, (void **)&a->calls, &a->ncalls, &a->cap, sizeof call, &call))
        return false;
    for (uint32_t i = 0; i < a->nfields; i++) {
        a->fields[i]->args[0]->u.index = col;
        a->fields[i]->u.index += lead;
    }
    return true;
}

/* Result list, extra ORDER BY keys and HAVING, lifted when aggregating. */
static bool lift_all(binder *b, struct core *c)
{
    for (uint32_t i = 0; i < c->r.n; i++)
        if (!(c->r.cols[i].e = lift(b, &c->a, c->r.cols[i].e)))
            return false;
    for (uint32_t i = 0; i < c->norder; i++)
        if (c->order[i].col == UINT32_MAX && !(c->order[i].e = lift(b, &c->a, c->order[i].e)))
            return false;
    if (c->having && !(c->having = lift(b, &c->a, c->having)))
        return false;
    return finish_bare(b, &c->a);
}

static struct plan *filter_node(binder *b, struct plan *in, struct expr *pred)
{
    if (!pred)
        return in;
    struct plan *p = node(b, PLAN_FILTER, in->ncols, in);
    if (p)
        p->u.pred = pred;
    return p;
}

/* PROJECT results ++ extra keys, DISTINCT, SORT. */
static struct plan *finish_core(binder *b, struct core *c, struct plan *in, bool distinct)
{
    uint32_t n = c->r.n + c->nextra;
    struct expr **exprs = balloc(b, (n + 1) * sizeof *exprs);
    const char **names = balloc(b, (n + 1) * sizeof *names);
    if (!exprs || !names)
        return NULL;
    for (uint32_t i = 0; i < c->r.n; i++) {
        exprs[i] = c->r.cols[i].e;
        names[i] = c->r.cols[i].name;
    }
    uint32_t k = c->r.n;
    for (uint32_t i = 0; i < c->norder; i++)
        if (c->order[i].col == UINT32_MAX) {
            exprs[k] = c->order[i].e;
            names[k] = "";
            c->order[i].col = k++;
        }
    struct plan *p = project_node(b, in, exprs, names, n);
    if (p && distinct) {
        if (c->nextra) {
            bind_error(b, LDB_UNSUPPORTED, c->order[0].e ? c->order[0].e->off : 0,
                       "ORDER BY terms of a SELECT DISTINCT must appear in its result list");
            return NULL;
        }
        p = node(b, PLAN_DISTINCT, p->ncols, p);
    }
    if (p && c->norder)
        p = sort_node(b, p, c->order, c->norder);
    return p;
}

/* A SELECT core with its ORDER BY (ol is NULL inside a compound). *nres is
 * the number of result columns; columns after them are extra sort keys. */
static struct plan *bind_core(binder *b, const ast_select_core *sc, const ast_order_list *ol,
                              struct scope *parent, struct subq *sq, uint32_t *nres)
{
    struct core c;
    memset(&c, 0, sizeof c);
    if (!(c.s = scope_new(b, parent, sq)))
        return NULL;
    struct plan *from = sc->from ? bind_from(b, c.s, sc->from) : one_row(b);
    if (!from)
        return NULL;
    c.s->from = from;
    c.a.from = from;
    b->scope = c.s;
    c.s->aliases = &sc->cols;
    struct expr *where = NULL;
    if (sc->where && !(where = bind_expr(b, sc->where)))
        return NULL;
    bool allow = b->allow_agg;
    b->allow_agg = true;
    bool ok = bind_results(b, c.s, &sc->cols, &c.r);
    b->allow_agg = false;
    ok = ok && bind_group_by(b, &c, sc);
    b->allow_agg = true;
    ok = ok && (!sc->having || (c.having = bind_expr(b, sc->having)));
    ok = ok && (!ol || bind_core_order(b, &c, ol));
    b->allow_agg = allow;
    if (!ok)
        return NULL;
    struct plan *p = filter_node(b, from, where);
    if (p && (c.a.ngroups || c.s->naggs_seen || c.having)) {
        if (!lift_all(b, &c) || !(p = aggregate_node(b, &c.a, p)))
            return NULL;
        p = filter_node(b, p, c.having);
    }
    *nres = c.r.n;
    return p ? finish_core(b, &c, p, sc->distinct) : NULL;
}

/* ---- VALUES and compounds ----------------------------------------------------------------------------------- */

static struct plan *bind_values(binder *b, const ast_body *body, struct scope *parent,
                                struct subq *sq)
{
    uint32_t nrows = body->u.values.nrows, ncols = body->u.values.rows[0].n;
    struct scope *s = scope_new(b, parent, sq);
    struct plan *p = s ? node(b, PLAN_VALUES, ncols, NULL) : NULL;
    if (!p || !(p->u.values.cells = balloc(b, (size_t)nrows * ncols * sizeof(struct expr *))))
        return NULL;
    p->u.values.nrows = nrows;
    b->scope = s;
    for (uint32_t r = 0; r < nrows; r++)
        for (uint32_t c = 0; c < ncols; c++) {
            const ast_expr *x = body->u.values.rows[r].items[c];
            struct expr *e = x->kind == AST_ROW ? NULL : bind_expr(b, x);
            if (!e) {
                if (x->kind == AST_ROW)
                    bind_error(b, LDB_UNSUPPORTED, x->off, "row values are not supported");
                return NULL;
            }
            p->u.values.cells[(size_t)r * ncols + c] = e;
            struct plan_col *pc = &p->cols[c];
            pc->type = r ? common_type(pc->type, (enum col_type)e->type) : e->type;
            if (pc->csrc == COLL_NONE) { /* rows are a compound's terms */
                pc->coll = expr_coll(e);
                pc->csrc = e->csrc;
            }
        }
    for (uint32_t c = 0; c < ncols; c++) {
        char name[24];
        snprintf(name, sizeof name, "column%u", c + 1);
        if (!(p->cols[c].name = bstrdup(b, name, strlen(name))))
            return NULL;
    }
    return p;
}

static enum setop_kind setop_of(enum ast_setop op)
{
    switch (op) {
    case AST_UNION: return SETOP_UNION;
    case AST_UNION_ALL: return SETOP_UNION_ALL;
    case AST_INTERSECT: return SETOP_INTERSECT;
    default: return SETOP_EXCEPT;
    }
}

static struct plan *bind_body(binder *b, const ast_body *body, struct scope *parent,
                              struct subq *sq)
{
    struct scope *save = b->scope;
    struct plan *p = NULL;
    switch (body->kind) {
    case AST_BODY_SELECT: {
        uint32_t nres;
        p = bind_core(b, &body->u.select, NULL, parent, sq, &nres);
        break;
    }
    case AST_BODY_VALUES:
        p = bind_values(b, body, parent, sq);
        break;
    case AST_BODY_COMPOUND: {
        if (!bind_enter(b, body->off))
            break;
        struct plan *l = bind_body(b, body->u.compound.left, parent, sq);
        struct plan *r = l ? bind_body(b, body->u.compound.right, parent, sq) : NULL;
        bind_leave(b);
        if (!r)
            break;
        if (l->ncols != r->ncols) {
            bind_error(b, LDB_ERROR, body->u.compound.right->off,
                       "SELECTs to the left and right of %s do not have the same number "
                       "of result columns",
                       body->u.compound.op == AST_UNION       ? "UNION"
                       : body->u.compound.op == AST_UNION_ALL ? "UNION ALL"
                       : body->u.compound.op == AST_INTERSECT ? "INTERSECT"
                                                              : "EXCEPT");
            break;
        }
        if (!(p = node(b, PLAN_SETOP, l->ncols, NULL)))
            break;
        p->left = l;
        p->right = r;
        p->u.setop = setop_of(body->u.compound.op);
        for (uint32_t i = 0; i < l->ncols; i++) {
            /* the collation of the leftmost term that has one (SQLite) */
            p->cols[i] = l->cols[i].csrc != COLL_NONE ? l->cols[i] : r->cols[i];
            p->cols[i].name = l->cols[i].name;
            p->cols[i].hidden = l->cols[i].hidden;
            p->cols[i].type = common_type(l->cols[i].type, r->cols[i].type);
            p->cols[i].aff = l->cols[i].aff == r->cols[i].aff ? l->cols[i].aff : COL_ANY;
        }
        break;
    }
    }
    b->scope = save;
    return p;
}

/* ORDER BY of a compound or VALUES: by position or output column name. */
static struct plan *order_compound(binder *b, struct plan *p, const ast_order_list *ol)
{
    struct order_item *items;
    if (!order_terms(b, ol, &items))
        return NULL;
    for (uint32_t i = 0; i < ol->n; i++) {
        const ast_expr *x = peel_collate(b, ol->items[i].expr, &items[i]);
        if (!x)
            return NULL;
        if (order_by_position(b, x, i, p->cols, p->ncols, NULL, &items[i]))
            continue;
        if (!b->env->err->code)
            bind_error(b, LDB_ERROR, x->off,
                       "%s%sORDER BY term does not match any column in the result set",
                       ordinal(i), i < 3 ? " " : "");
        return NULL;
    }
    return sort_node(b, p, items, ol->n);
}

/* A query's WITH, body, ORDER BY and LIMIT. With keep_extra, columns
 * after the *keep_extra result columns (ORDER BY values) are kept. */
static struct plan *bind_query_levels(binder *b, const ast_select *sel, struct scope *parent,
                                      struct subq *sq, uint32_t *keep_extra)
{
    struct cte_frame frame = { &sel->with, sel->with.n, b->src, b->ctes };
    struct cte_frame *save_ctes = b->ctes;
    struct scope *save_scope = b->scope;
    if (sel->with.n)
        b->ctes = &frame;
    struct plan *p;
    const ast_body *body = sel->body;
    if (body->kind == AST_BODY_SELECT) {
        uint32_t nres = 0;
        p = bind_core(b, &body->u.select, &sel->order_by, parent, sq, &nres);
        p = p ? limit_node(b, p, sel, parent, sq) : NULL;
        if (keep_extra)
            *keep_extra = nres;
        else if (p && nres < p->ncols)
            p = trim_node(b, p, nres);
    } else {
        p = bind_body(b, body, parent, sq);
        if (p && sel->order_by.n)
            p = order_compound(b, p, &sel->order_by);
        p = p ? limit_node(b, p, sel, parent, sq) : NULL;
        if (p && keep_extra)
            *keep_extra = p->ncols;
    }
    b->ctes = save_ctes;
    b->scope = save_scope;
    return p;
}

struct plan *bind_select(binder *b, const ast_select *sel, struct scope *parent,
                         struct subq *sq)
{
    if (!bind_enter(b, sel->off))
        return NULL;
    struct plan *p = bind_query_levels(b, sel, parent, sq, NULL);
    bind_leave(b);
    return p;
}

/* ---- ARRAY (query) ----------------------------------------------------------------------------- */

/* One row of q as one value: its only result column, or a RECORD of its
 * nres result columns named as the query names them. */
static struct expr *array_element(binder *b, const struct plan *q, uint32_t nres, uint32_t off)
{
    if (nres == 1)
        return ex_column(b, 0, &q->cols[0], off);
    struct expr *r = ex_new(b, EXPR_CALL, 2 * nres, off);
    if (!r)
        return NULL;
    r->u.fn = &func_record;
    for (uint32_t i = 0; i < nres; i++) {
        const char *name = q->cols[i].name ? q->cols[i].name : "";
        value v;
        if (value_text(&v, name, strlen(name))) {
            bind_nomem(b);
            return NULL;
        }
        r->args[2 * i] = ex_const(b, &v, off);
        value_release(&v);
        if (!r->args[2 * i] || !(r->args[2 * i + 1] = ex_column(b, i, &q->cols[i], off)))
            return NULL;
    }
    ex_inherit_nondet(r);
    return r;
}

/* A scalar subquery of several columns: each row as one RECORD. */
struct plan *bind_record_rows(binder *b, struct plan *q, uint32_t off)
{
    struct expr *x = array_element(b, q, q->ncols, off);
    const char *name = "record";
    return x ? project_node(b, q, &x, &name, 1) : NULL;
}

/* array_agg(x) over in, ordered by the query's ORDER BY (sort, or none)
 * and then by x itself: the hidden argument ARRAY(x, keys...). */
static bool array_agg_call(binder *b, const struct plan *sort, struct plan *in, struct expr *x,
                           struct plan_agg *a, uint32_t off)
{
    uint32_t n = sort ? sort->u.sort.nkeys : 0;
    a->fn = &func_array_agg;
    a->coll = LDB_COLL_BINARY;
    a->sep = value_null();
    a->nargs = n ? 2 : 1;
    if (!(a->args = balloc(b, 2 * sizeof *a->args)))
        return false;
    a->args[0] = x;
    if (n == 0)
        return true;
    struct expr *arr = ex_new(b, EXPR_CALL, 1 + n, off);
    if (!arr || !(a->order = balloc(b, n * sizeof *a->order)))
        return false;
    arr->u.fn = func_find("array", 1 + n, NULL);
    arr->args[0] = x;
    for (uint32_t i = 0; i < n; i++) {
        const struct sort_key *k = &sort->u.sort.keys[i];
        uint32_t c = k->e->u.index; /* sort keys are columns (sort_node) */
        if (!(arr->args[1 + i] = ex_column(b, c, &in->cols[c], off)))
            return false;
        a->order[i] = (struct agg_order_term){ k->coll, k->desc, k->nulls_first };
    }
    ex_inherit_nondet(arr);
    a->args[1] = arr;
    a->norder = n;
    return true;
}

/*
 * ARRAY (query): one scalar AGGREGATE of array_agg over the query's rows,
 * so every consumer gets it from what it already does with aggregates
 * (the executor per outer row, the live compiler per capture tuple by
 * decorrelation, with [] for a tuple without rows). The query's own SORT
 * goes (the aggregate orders); under a LIMIT it stays, as the LIMIT's.
 */
struct plan *bind_array_select(binder *b, const ast_select *sel, struct scope *parent,
                               struct subq *sq)
{
    if (!bind_enter(b, sel->off))
        return NULL;
    uint32_t nres = 0;
    struct plan *q = bind_query_levels(b, sel, parent, sq, &nres);
    bind_leave(b);
    if (!q)
        return NULL;
    const struct plan *sort = q->kind == PLAN_SORT ? q
                              : (q->kind == PLAN_LIMIT && q->in->kind == PLAN_SORT) ? q->in
                                                                                   : NULL;
    struct plan *in = q->kind == PLAN_SORT ? q->in : q;
    struct expr *x = array_element(b, in, nres, sel->off);
    struct plan *p = x ? node(b, PLAN_AGGREGATE, 1, in) : NULL;
    if (!p || !(p->u.agg.aggs = balloc(b, sizeof *p->u.agg.aggs)) ||
        !array_agg_call(b, sort, in, x, p->u.agg.aggs, sel->off))
        return NULL;
    p->u.agg.naggs = 1;
    p->cols[0] = (struct plan_col){ "array", COL_ANY, COL_ANY, LDB_COLL_BINARY, false,
                                    COLL_NONE };
    return p;
}
