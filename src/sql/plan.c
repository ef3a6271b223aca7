/*
 * plan.c - plan memory, shared nodes, the questions the live and
 * materialized-view layers ask of a plan (unique keys, lineage,
 * determinism, height), and EXPLAIN's text form. The walks answer
 * a shared node from its plan_shared record, so each is linear in the
 * DAG.
 */
#include "sql/plan.h"

#include "base/strbuf.h"
#include "sql/func.h"
#include "storage/store.h"

#include <string.h>

/* ---- memory ------------------------------------------------------------------------ */

void plan_arena_init(plan_arena *pa)
{
    arena_init(&pa->a, 8192);
    pa->owned.data = NULL;
    pa->owned.len = pa->owned.cap = 0;
    pa->nsubqueries = 0;
    pa->nshared = 0;
}

void plan_arena_free(plan_arena *pa)
{
    for (size_t i = 0; i < pa->owned.len; i++)
        value_release(&pa->owned.data[i]);
    vec_free(&pa->owned);
    arena_free(&pa->a);
    pa->nsubqueries = 0;
    pa->nshared = 0;
}

void *plan_alloc(plan_arena *pa, size_t n)
{
    return arena_calloc(&pa->a, n);
}

int plan_own_value(plan_arena *pa, const value *v)
{
    if (vec_reserve(&pa->owned, 1))
        return LDB_NOMEM;
    pa->owned.data[pa->owned.len++] = value_copy(v);
    return LDB_OK;
}

struct plan *plan_new(plan_arena *pa, enum plan_kind kind, uint32_t ncols)
{
    struct plan *p = plan_alloc(pa, sizeof *p);
    if (!p)
        return NULL;
    p->kind = kind;
    p->ncols = ncols;
    if (ncols && !(p->cols = plan_alloc(pa, ncols * sizeof *p->cols)))
        return NULL;
    return p;
}

/* ---- unique keys ---------------------------------------------------------------------- */

static bool all_columns(const struct plan *p, uint32_t *key, uint32_t *n)
{
    for (uint32_t i = 0; i < p->ncols; i++)
        key[i] = i;
    *n = p->ncols;
    return true;
}

/* The output column of a PROJECT that passes input column c, or -1. */
static int passthrough(const struct plan *p, uint32_t c)
{
    for (uint32_t i = 0; i < p->ncols; i++)
        if (p->u.exprs[i]->kind == EXPR_COLUMN && p->u.exprs[i]->u.index == c)
            return (int)i;
    return -1;
}

/* Scratch for child keys: on the stack for ordinary widths, so that key
 * inference does not fail for want of memory (a false answer must mean
 * "no key"); only very wide rows use the heap. */
#define KEY_STACK 64

static bool project_key(const struct plan *p, uint32_t *key, uint32_t *n)
{
    uint32_t stack[KEY_STACK], m;
    uint32_t *in = p->in->ncols < KEY_STACK ? stack : mem_alloc((p->in->ncols + 1) * sizeof *in);
    bool ok = in && plan_unique_key(p->in, in, &m);
    for (uint32_t i = 0; ok && i < m; i++) {
        int o = passthrough(p, in[i]);
        ok = o >= 0;
        key[i] = (uint32_t)o;
    }
    *n = ok ? m : 0;
    if (in != stack)
        mem_free(in);
    return ok;
}

bool plan_joined_on_key(const struct plan *j, bool right, const uint32_t *k, uint32_t nk)
{
    return plan_joined_on_cols(j, right, right ? j->right : j->left, k, nk);
}

bool plan_joined_on_cols(const struct plan *j, bool right, const struct plan *side,
                         const uint32_t *k, uint32_t nk)
{
    for (uint32_t i = 0; i < nk; i++) {
        const struct plan_col *col = &side->cols[k[i]];
        bool found = false;
        for (uint32_t x = 0; x < j->u.join.nkeys && !found; x++) {
            const struct join_key *jk = &j->u.join.keys[x];
            const struct expr *e = right ? jk->right : jk->left;
            found = e->kind == EXPR_COLUMN && e->u.index == k[i] &&
                    (jk->coll == LDB_COLL_BINARY || jk->coll == col->coll) &&
                    sql_affinity_is_noop(jk->aff, col->type);
        }
        if (!found)
            return false;
    }
    return true;
}

static bool join_key(const struct plan *p, uint32_t *key, uint32_t *n)
{
    const struct plan *l = p->left, *r = p->right;
    uint32_t stack[2 * KEY_STACK], nl = 0, nr = 0;
    uint32_t *lk = l->ncols + r->ncols + 2 <= 2 * KEY_STACK
                       ? stack
                       : mem_alloc((l->ncols + r->ncols + 2) * sizeof *lk);
    if (!lk)
        return false;
    uint32_t *rk = lk + l->ncols + 1;
    bool hl = plan_unique_key(l, lk, &nl), hr = plan_unique_key(r, rk, &nr), ok = true;
    enum join_kind kind = p->u.join.kind;
    if (kind == JOIN_SEMI || kind == JOIN_ANTI) {
        ok = hl;
        memcpy(key, lk, nl * sizeof *key);
        *n = nl;
    } else if (hl && hr && kind != JOIN_FULL && kind != JOIN_RIGHT &&
               plan_joined_on_key(p, true, rk, nr)) {
        memcpy(key, lk, nl * sizeof *key); /* N:1 */
        *n = nl;
    } else if (hl && hr && kind != JOIN_FULL && kind != JOIN_LEFT &&
               plan_joined_on_key(p, false, lk, nl)) {
        for (uint32_t i = 0; i < nr; i++)
            key[i] = l->ncols + rk[i];
        *n = nr;
    } else if (hl && hr) {
        memcpy(key, lk, nl * sizeof *key);
        for (uint32_t i = 0; i < nr; i++)
            key[nl + i] = l->ncols + rk[i];
        *n = nl + nr;
    } else {
        ok = false;
    }
    if (lk != stack)
        mem_free(lk);
    return ok;
}

/* plan_unique_key of p itself, even when p is shared. */
static bool node_unique_key(const struct plan *p, uint32_t *key, uint32_t *n)
{
    *n = 0;
    switch (p->kind) {
    case PLAN_SCAN: {
        const struct schema *sc = table_schema(p->u.scan.table);
        memcpy(key, sc->pk, sc->npk * sizeof *key);
        *n = sc->npk;
        return true;
    }
    case PLAN_VALUES:
        return p->u.values.nrows <= 1;
    case PLAN_FILTER:
    case PLAN_SORT:
    case PLAN_LIMIT:
        return plan_unique_key(p->in, key, n);
    case PLAN_PROJECT:
        return project_key(p, key, n);
    case PLAN_JOIN:
        return join_key(p, key, n);
    case PLAN_AGGREGATE:
        for (uint32_t i = 0; i < p->u.agg.ngroups; i++)
            key[i] = i;
        *n = p->u.agg.ngroups;
        return true;
    case PLAN_DISTINCT:
        return all_columns(p, key, n);
    case PLAN_SETOP:
        return p->u.setop != SETOP_UNION_ALL && all_columns(p, key, n);
    }
    return false;
}

bool plan_unique_key(const struct plan *p, uint32_t *key, uint32_t *n)
{
    if (!p->shared)
        return node_unique_key(p, key, n);
    memcpy(key, p->shared->key, p->shared->nkey * sizeof *key);
    *n = p->shared->nkey;
    return p->shared->has_key;
}

/* ---- lineage and determinism ------------------------------------------------------------- */

bool plan_lineage(const struct plan *p, uint32_t col, struct table **table,
                  uint32_t *table_col)
{
    if (col >= p->ncols)
        return false;
    switch (p->kind) {
    case PLAN_SCAN:
        *table = p->u.scan.table;
        *table_col = col;
        return true;
    case PLAN_FILTER:
    case PLAN_SORT:
    case PLAN_LIMIT:
    case PLAN_DISTINCT:
        return plan_lineage(p->in, col, table, table_col);
    case PLAN_PROJECT: {
        const struct expr *e = p->u.exprs[col];
        return e->kind == EXPR_COLUMN && plan_lineage(p->in, e->u.index, table, table_col);
    }
    case PLAN_JOIN:
        if (col < p->left->ncols)
            return plan_lineage(p->left, col, table, table_col);
        return p->u.join.kind != JOIN_SEMI && p->u.join.kind != JOIN_ANTI &&
               plan_lineage(p->right, col - p->left->ncols, table, table_col);
    case PLAN_AGGREGATE: {
        if (col >= p->u.agg.ngroups)
            return false;
        const struct expr *e = p->u.agg.groups[col];
        return e->kind == EXPR_COLUMN && plan_lineage(p->in, e->u.index, table, table_col);
    }
    default:
        return false;
    }
}

/* ---- the expressions of a node -------------------------------------------------------- */

static bool each_expr(struct expr *const *es, uint32_t n, plan_expr_fn fn, void *ctx)
{
    for (uint32_t i = 0; i < n; i++)
        if (es[i] && fn(ctx, es[i]))
            return true;
    return false;
}

bool plan_node_exprs(const struct plan *p, plan_expr_fn fn, void *ctx)
{
    switch (p->kind) {
    case PLAN_SCAN: {
        const struct access_path *a = &p->u.scan.access;
        return each_expr(a->eq, a->neq, fn, ctx) || each_expr(&a->lo, 1, fn, ctx) ||
               each_expr(&a->hi, 1, fn, ctx);
    }
    case PLAN_VALUES: return each_expr(p->u.values.cells, p->u.values.nrows * p->ncols, fn, ctx);
    case PLAN_FILTER: return each_expr(&p->u.pred, 1, fn, ctx);
    case PLAN_PROJECT: return each_expr(p->u.exprs, p->ncols, fn, ctx);
    case PLAN_JOIN:
        if (each_expr(&p->u.join.residual, 1, fn, ctx))
            return true;
        for (uint32_t i = 0; i < p->u.join.nkeys; i++)
            if (each_expr(&p->u.join.keys[i].left, 1, fn, ctx) ||
                each_expr(&p->u.join.keys[i].right, 1, fn, ctx))
                return true;
        return false;
    case PLAN_AGGREGATE:
        if (each_expr(p->u.agg.groups, p->u.agg.ngroups, fn, ctx))
            return true;
        for (uint32_t i = 0; i < p->u.agg.naggs; i++)
            if (each_expr(p->u.agg.aggs[i].args, p->u.agg.aggs[i].nargs, fn, ctx) ||
                each_expr(&p->u.agg.aggs[i].filter, 1, fn, ctx))
                return true;
        return false;
    case PLAN_SORT:
        for (uint32_t i = 0; i < p->u.sort.nkeys; i++)
            if (each_expr(&p->u.sort.keys[i].e, 1, fn, ctx))
                return true;
        return false;
    case PLAN_LIMIT:
        return each_expr(&p->u.limit.limit, 1, fn, ctx) ||
               each_expr(&p->u.limit.offset, 1, fn, ctx);
    default:
        return false;
    }
}

/* ---- determinism ---------------------------------------------------------------------- */

static bool expr_nondet(void *ctx, const struct expr *e)
{
    (void)ctx;
    return (e->flags & EXPR_NONDET) != 0;
}

/* plan_is_nondeterministic of p itself, even when p is shared. */
static bool node_nondet(const struct plan *p)
{
    bool nd = plan_node_exprs(p, expr_nondet, NULL);
    for (uint32_t i = 0; p->kind == PLAN_AGGREGATE && i < p->u.agg.naggs && !nd; i++)
        nd = !func_is_deterministic(p->u.agg.aggs[i].fn);
    return nd || plan_is_nondeterministic(p->in) || plan_is_nondeterministic(p->left) ||
           plan_is_nondeterministic(p->right);
}

bool plan_is_nondeterministic(const struct plan *p)
{
    if (!p)
        return false;
    return p->shared ? p->shared->nondet : node_nondet(p);
}

/* ---- shared nodes and height ---------------------------------------------------------------- */

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

static uint32_t expr_height(const struct expr *e)
{
    uint32_t h = e->kind == EXPR_SUBQUERY ? plan_height(e->u.sq.plan) : 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        h = max_u32(h, expr_height(e->args[i]));
    if (e->kind == EXPR_SUBQUERY)
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            h = max_u32(h, expr_height(e->u.sq.captures[i]));
    return h;
}

static bool max_expr_height(void *ctx, const struct expr *e)
{
    uint32_t *h = ctx;
    *h = max_u32(*h, expr_height(e));
    return false;
}

/* plan_height of p itself, even when p is shared. */
static uint32_t node_height(const struct plan *p)
{
    uint32_t h = 0;
    plan_node_exprs(p, max_expr_height, &h);
    h = max_u32(h, plan_height(p->in));
    h = max_u32(h, max_u32(plan_height(p->left), plan_height(p->right)));
    return h + 1;
}

uint32_t plan_height(const struct plan *p)
{
    if (!p)
        return 0;
    return p->shared ? p->shared->height : node_height(p);
}

int plan_share(plan_arena *pa, struct plan *p)
{
    if (p->shared)
        return LDB_OK;
    struct plan_shared *sh = plan_alloc(pa, sizeof *sh);
    if (!sh || !(sh->key = plan_alloc(pa, (p->ncols + 1) * sizeof *sh->key)))
        return LDB_NOMEM;
    sh->id = ++pa->nshared;
    sh->nondet = node_nondet(p);
    sh->has_key = node_unique_key(p, sh->key, &sh->nkey);
    sh->height = node_height(p);
    p->shared = sh;
    return LDB_OK;
}

/* ---- EXPLAIN ---------------------------------------------------------------------------------- */

/* The printer: subqueries met on the lines being printed wait in subs,
 * a stack shared by the whole walk, so the recursion's frames stay small
 * (plans are as high as the binder's depth limit allows). */
struct explain {
    strbuf *sb;
    double (*est)(const struct plan *);
    VEC(const struct expr *) subs;
    VEC(uint32_t) printed;     /* ids of the shared nodes printed */
};

static void collect_subqueries(struct explain *x, const struct expr *e)
{
    if (!e)
        return;
    if (e->kind == EXPR_SUBQUERY && vec_push(&x->subs, e))
        x->sb->err = LDB_NOMEM;
    for (uint32_t i = 0; i < e->nargs; i++)
        collect_subqueries(x, e->args[i]);
    if (e->kind == EXPR_SUBQUERY)
        for (uint32_t i = 0; i < e->u.sq.ncaptures; i++)
            collect_subqueries(x, e->u.sq.captures[i]);
}

static const char **names_of(const struct plan *p, const char **buf, uint32_t cap)
{
    for (uint32_t i = 0; p && i < p->ncols && i < cap; i++)
        buf[i] = p->cols[i].name;
    return buf;
}

#define NAMES_MAX 256

static void put_expr(struct explain *x, const struct expr *e, const struct plan *in)
{
    const char *buf[NAMES_MAX];
    uint32_t n = in ? (in->ncols < NAMES_MAX ? in->ncols : NAMES_MAX) : 0;
    expr_print(x->sb, e, names_of(in, buf, n), n);
    collect_subqueries(x, e);
}

/* Names of a join's left ++ right row. */
static void put_join_expr(struct explain *x, const struct expr *e, const struct plan *j)
{
    const char *buf[NAMES_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < j->left->ncols && n < NAMES_MAX; i++)
        buf[n++] = j->left->cols[i].name;
    for (uint32_t i = 0; i < j->right->ncols && n < NAMES_MAX; i++)
        buf[n++] = j->right->cols[i].name;
    expr_print(x->sb, e, buf, n);
    collect_subqueries(x, e);
}

static void put_access(struct explain *x, const struct plan *p)
{
    const struct access_path *a = &p->u.scan.access;
    const struct table *t = p->u.scan.table;
    strbuf *sb = x->sb;
    sb_printf(sb, "SCAN %s", table_name(t));
    if (p->u.scan.alias && strcmp(p->u.scan.alias, table_name(t)) != 0)
        sb_printf(sb, " AS %s", p->u.scan.alias);
    if (a->kind == ACCESS_FULL)
        return;
    if (a->kind == ACCESS_KEY)
        sb_puts(sb, " USING PRIMARY KEY (");
    else
        sb_printf(sb, " USING %sINDEX %s (", a->kind == ACCESS_ORDERED ? "ORDERED " : "",
                  a->index->name);
    const struct schema *sc = table_schema(t);
    bool first = true;
    for (uint32_t i = 0; i < a->neq; i++) {
        uint32_t col = a->kind == ACCESS_KEY ? sc->pk[i] : a->index->parts[i].col;
        sb_printf(sb, "%s%s = ", first ? "" : " AND ", sc->cols[col].name);
        put_expr(x, a->eq[i], NULL);
        first = false;
    }
    if (a->kind == ACCESS_INDEX && (a->lo || a->hi)) {
        const char *name = sc->cols[a->index->parts[a->neq].col].name;
        if (a->lo) {
            sb_printf(sb, "%s%s %s ", first ? "" : " AND ", name, a->lo_incl ? ">=" : ">");
            put_expr(x, a->lo, NULL);
            first = false;
        }
        if (a->hi) {
            sb_printf(sb, "%s%s %s ", first ? "" : " AND ", name, a->hi_incl ? "<=" : "<");
            put_expr(x, a->hi, NULL);
        }
    }
    if (a->kind == ACCESS_ORDERED)
        sb_puts(sb, a->spec.reverse ? "backward" : "forward");
    sb_putc(sb, ')');
}

static const char *join_name(enum join_kind k)
{
    static const char *const names[] = { "INNER JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN",
                                         "CROSS JOIN", "SEMI JOIN", "ANTI JOIN" };
    return names[k];
}

static void put_join(struct explain *x, const struct plan *p)
{
    strbuf *sb = x->sb;
    sb_puts(sb, join_name(p->u.join.kind));
    for (uint32_t i = 0; i < p->u.join.nkeys; i++) {
        sb_puts(sb, i ? " AND " : " ON ");
        put_expr(x, p->u.join.keys[i].left, p->left);
        sb_puts(sb, " = ");
        put_expr(x, p->u.join.keys[i].right, p->right);
    }
    if (p->u.join.residual) {
        sb_puts(sb, p->u.join.nkeys ? " FILTER " : " ON ");
        put_join_expr(x, p->u.join.residual, p);
    }
    if (p->u.join.lookup && p->u.join.lookup_index)
        sb_printf(sb, " (lookup %s by INDEX %s)", p->u.join.build_left ? "left" : "right",
                  p->u.join.lookup_index->name);
    else if (p->u.join.lookup)
        sb_printf(sb, " (lookup %s by primary key)", p->u.join.build_left ? "left" : "right");
    else if (p->u.join.nkeys)
        sb_printf(sb, " (hash %s)", p->u.join.build_left ? "left" : "right");
}

static void put_aggregate(struct explain *x, const struct plan *p)
{
    strbuf *sb = x->sb;
    sb_puts(sb, "AGGREGATE");
    for (uint32_t i = 0; i < p->u.agg.ngroups; i++) {
        sb_puts(sb, i ? ", " : " GROUP BY ");
        put_expr(x, p->u.agg.groups[i], p->in);
    }
    for (uint32_t i = 0; i < p->u.agg.naggs; i++) {
        const struct plan_agg *a = &p->u.agg.aggs[i];
        sb_printf(sb, "%s%s(%s", i ? ", " : ": ", a->fn->name, a->distinct ? "DISTINCT " : "");
        if (a->fn->agg == &agg_count_star)
            sb_putc(sb, '*');
        for (uint32_t k = 0; k < a->nargs; k++) {
            if (k)
                sb_puts(sb, ", ");
            put_expr(x, a->args[k], p->in);
        }
        sb_putc(sb, ')');
        if (a->filter) {
            sb_puts(sb, " FILTER (WHERE ");
            put_expr(x, a->filter, p->in);
            sb_putc(sb, ')');
        }
    }
}

static void put_node(struct explain *x, const struct plan *p)
{
    strbuf *sb = x->sb;
    static const char *const setops[] = { "UNION ALL", "UNION", "INTERSECT", "EXCEPT" };
    switch (p->kind) {
    case PLAN_SCAN: put_access(x, p); break;
    case PLAN_VALUES: sb_printf(sb, "VALUES %u row%s", p->u.values.nrows,
                                p->u.values.nrows == 1 ? "" : "s"); break;
    case PLAN_FILTER:
        sb_puts(sb, "FILTER ");
        put_expr(x, p->u.pred, p->in);
        if (p->exec_pred_set && !p->exec_pred) {
            sb_puts(sb, " (by the index)");
        } else if (p->exec_pred_set) {
            sb_puts(sb, " (after the index: ");
            put_expr(x, p->exec_pred, p->in);
            sb_putc(sb, ')');
        }
        break;
    case PLAN_PROJECT:
        sb_puts(sb, "PROJECT");
        for (uint32_t i = 0; i < p->ncols; i++) {
            sb_puts(sb, i ? ", " : " ");
            put_expr(x, p->u.exprs[i], p->in);
        }
        break;
    case PLAN_JOIN: put_join(x, p); break;
    case PLAN_AGGREGATE: put_aggregate(x, p); break;
    case PLAN_DISTINCT: sb_puts(sb, "DISTINCT"); break;
    case PLAN_SORT:
        sb_puts(sb, "SORT");
        for (uint32_t i = 0; i < p->u.sort.nkeys; i++) {
            const struct sort_key *k = &p->u.sort.keys[i];
            sb_puts(sb, i ? ", " : " ");
            put_expr(x, k->e, p->in);
            if (k->desc)
                sb_puts(sb, " DESC");
            if (k->nulls_first == k->desc)
                sb_puts(sb, k->nulls_first ? " NULLS FIRST" : " NULLS LAST");
        }
        if (p->u.sort.presorted)
            sb_puts(sb, " (input already in order)");
        break;
    case PLAN_LIMIT:
        sb_puts(sb, "LIMIT ");
        put_expr(x, p->u.limit.limit, NULL);
        if (p->u.limit.offset) {
            sb_puts(sb, " OFFSET ");
            put_expr(x, p->u.limit.offset, NULL);
        }
        break;
    case PLAN_SETOP: sb_puts(sb, setops[p->u.setop]); break;
    }
}

/* Whether shared node sh was printed; records it when not. */
static bool printed_before(struct explain *x, const struct plan_shared *sh)
{
    for (size_t i = 0; i < x->printed.len; i++)
        if (x->printed.data[i] == sh->id)
            return true;
    if (vec_push(&x->printed, sh->id))
        x->sb->err = LDB_NOMEM;
    return false;
}

static __attribute__((noinline)) void print_line(struct explain *x, const struct plan *p,
                                                 unsigned depth)
{
    strbuf *sb = x->sb;
    for (unsigned i = 0; i < depth; i++)
        sb_puts(sb, "  ");
    if (p->shared)
        sb_printf(sb, "SHARED %u: ", p->shared->id);
    put_node(x, p);
    if (x->est)
        sb_printf(sb, " (~%.0f rows)", x->est(p));
    sb_putc(sb, '\n');
}

static void print_tree(struct explain *x, const struct plan *p, unsigned depth)
{
    if (p->shared && printed_before(x, p->shared)) {
        for (unsigned i = 0; i < depth; i++)
            sb_puts(x->sb, "  ");
        sb_printf(x->sb, "SHARED %u (above)\n", p->shared->id);
        return;
    }
    size_t first = x->subs.len;
    print_line(x, p, depth);
    size_t end = x->subs.len;
    for (size_t i = first; i < end; i++) {
        const struct expr *sq = x->subs.data[i];
        for (unsigned k = 0; k <= depth; k++)
            sb_puts(x->sb, "  ");
        sb_printf(x->sb, "subquery %u:\n", sq->u.sq.id + 1);
        print_tree(x, sq->u.sq.plan, depth + 2);
    }
    x->subs.len = first;
    if (p->in)
        print_tree(x, p->in, depth + 1);
    if (p->left)
        print_tree(x, p->left, depth + 1);
    if (p->right)
        print_tree(x, p->right, depth + 1);
}

void plan_print(strbuf *sb, const struct plan *p, double (*est)(const struct plan *))
{
    struct explain x = { sb, est, VEC_INIT, VEC_INIT };
    print_tree(&x, p, 0);
    vec_free(&x.subs);
    vec_free(&x.printed);
}
