/*
 * estimate.c - how many rows a plan produces, as the planner judges it.
 *
 * Statistics are read from storage when a statement is planned, never
 * kept apart, so they cannot go stale: a table's row count is exact
 * (tables keep it on every write); the distinct values of a column are
 * exact for a key or a one-part unique index, and sampled from an ordered
 * index the column leads (index_distinct_estimate: 32 entries by rank,
 * kept until an eighth of the index changed), else from a sample of the
 * table's rows (table_distinct_estimate: exact for small tables); the
 * rows equal to a constant, in a constant range, or
 * NULL are counted exactly in such an index (O(log n) each). Where nothing
 * is known the classic defaults stand in: 1/10 for an equality, 1/3 for a
 * range, 1/16 for a LIKE with a fixed prefix, 1/20 for IS NULL, 1/4 for
 * anything else.
 */
#include "sql/planner_internal.h"

#include "storage/store.h"

#define SEL_EQ 0.1
#define SEL_RANGE (1.0 / 3)
#define SEL_LIKE_PREFIX (1.0 / 16)
#define SEL_NULL 0.05
#define SEL_OTHER 0.25

/* ---- columns back to their tables ---------------------------------------------------- */

/* The scan whose column *col column col of p reads (through filters,
 * column projections, sorts, limits and join sides), or NULL. */
static const struct plan *column_origin(const struct plan *p, uint32_t *col)
{
    for (;;) {
        switch (p->kind) {
        case PLAN_SCAN:
            return p;
        case PLAN_FILTER:
        case PLAN_SORT:
        case PLAN_LIMIT:
        case PLAN_DISTINCT:
            p = p->in;
            break;
        case PLAN_PROJECT: {
            const struct expr *e = p->u.exprs[*col];
            if (e->kind != EXPR_COLUMN)
                return NULL;
            *col = e->u.index;
            p = p->in;
            break;
        }
        case PLAN_JOIN:
            if (*col < p->left->ncols) {
                p = p->left;
            } else if (p->u.join.kind == JOIN_SEMI || p->u.join.kind == JOIN_ANTI) {
                return NULL;
            } else {
                *col -= p->left->ncols;
                p = p->right;
            }
            break;
        default:
            return NULL;
        }
    }
}

/* An ordered index whose first part is column col, compared under coll
 * (any collation when the column holds no text). */
static struct table_index *leading_index(const struct table *t, uint32_t col,
                                         enum ldb_collation coll, bool any_coll)
{
    for (size_t i = 0; i < table_index_count(t); i++) {
        struct table_index *ix = table_index_at(t, i);
        if (ix->kind == INDEX_ORDERED && ix->parts[0].col == col &&
            (any_coll || ix->parts[0].coll == coll))
            return ix;
    }
    return NULL;
}

static double table_distinct(struct table *t, uint32_t col)
{
    const struct schema *sc = table_schema(t);
    if (sc->npk == 1 && sc->pk[0] == col)
        return (double)table_count(t);
    for (size_t i = 0; i < table_index_count(t); i++) {
        const struct table_index *ix = table_index_at(t, i);
        if (ix->unique && ix->nparts == 1 && ix->parts[0].col == col)
            return (double)table_count(t);
    }
    struct table_index *ix = leading_index(t, col, LDB_COLL_BINARY, true);
    return ix ? index_distinct_estimate(ix) : table_distinct_estimate(t, col);
}

double estimate_distinct(const struct plan *p, uint32_t col)
{
    const struct plan *scan = column_origin(p, &col);
    if (!scan)
        return 0;
    double d = table_distinct(scan->u.scan.table, col);
    return d < 1 && d > 0 ? 1 : d;
}

/* ---- selectivity ----------------------------------------------------------------------- */

struct sel_ctx {
    const struct plan *in;
    uint32_t base;
};

/* The table and its column that e (a column reference) reads, if any. */
static const struct plan *origin_of(const struct sel_ctx *s, const struct expr *e, uint32_t *col)
{
    if (e->kind != EXPR_COLUMN || e->u.index < s->base)
        return NULL;
    *col = e->u.index - s->base;
    return *col < s->in->ncols ? column_origin(s->in, col) : NULL;
}

/* The index that counts the column's values as cmp compares them. */
static struct table_index *counting_index(const struct plan *scan, uint32_t col,
                                          const struct expr *cmp)
{
    if (scan->u.scan.not_indexed)
        return NULL;
    const struct table *t = scan->u.scan.table;
    enum col_type type = table_schema(t)->cols[col].type;
    bool no_text = col_type_numeric(type) || type == COL_BOOLEAN;
    return leading_index(t, col, (enum ldb_collation)cmp->coll, no_text);
}

static double fraction(size_t part, const struct table_index *ix)
{
    size_t n = index_count(ix);
    return n ? (double)part / (double)n : 0;
}

static double equality(const struct sel_ctx *s, const struct expr *col, const struct expr *other,
                       const struct expr *cmp)
{
    uint32_t c, oc;
    const struct plan *scan = origin_of(s, col, &c);
    if (!scan)
        return SEL_EQ;
    struct table_index *ix;
    if (other->kind == EXPR_CONST && (ix = counting_index(scan, c, cmp)))
        return fraction(index_count_eq(ix, &other->u.v, 1), ix);
    double d = table_distinct(scan->u.scan.table, c);
    const struct plan *oscan = origin_of(s, other, &oc);
    if (oscan) {
        double od = table_distinct(oscan->u.scan.table, oc);
        d = d > od ? d : od;
    }
    return d >= 1 ? 1 / d : SEL_EQ;
}

/* Rows of the column's index on the given side of v. */
static size_t below(const struct table_index *ix, const value *v, bool or_equal)
{
    return index_count_below(ix, v, 1, or_equal);
}

static double range(const struct sel_ctx *s, const struct expr *col, enum expr_op op,
                    const struct expr *probe, const struct expr *cmp)
{
    uint32_t c;
    const struct plan *scan = origin_of(s, col, &c);
    struct table_index *ix;
    if (!scan || probe->kind != EXPR_CONST || value_is_null(&probe->u.v) ||
        !(ix = counting_index(scan, c, cmp)) || ix->parts[0].desc)
        return SEL_RANGE;
    value null = value_null();
    size_t nulls = index_count_eq(ix, &null, 1), n = index_count(ix);
    bool nulls_first = ix->parts[0].nulls_first;
    size_t lt = below(ix, &probe->u.v, op == EOP_LE || op == EOP_GT);
    if (nulls_first)
        lt = lt > nulls ? lt - nulls : 0;
    size_t nonnull = n - nulls;
    size_t hit = op == EOP_LT || op == EOP_LE ? lt : nonnull - (lt < nonnull ? lt : nonnull);
    return fraction(hit, ix);
}

static double is_null(const struct sel_ctx *s, const struct expr *e)
{
    uint32_t c;
    const struct plan *scan = origin_of(s, e, &c);
    struct table_index *ix;
    if (scan && table_schema(scan->u.scan.table)->cols[c].not_null)
        return 0;
    if (!scan || !(ix = counting_index(scan, c, e))) /* NULL sorts the same under any collation */
        return SEL_NULL;
    value null = value_null();
    return fraction(index_count_eq(ix, &null, 1), ix);
}

static double conjunct(const struct sel_ctx *s, const struct expr *e);

static double comparison(const struct sel_ctx *s, const struct expr *e)
{
    static const enum expr_op flip[] = { [EOP_LT] = EOP_GT, [EOP_LE] = EOP_GE,
                                         [EOP_GT] = EOP_LT, [EOP_GE] = EOP_LE };
    const struct expr *a = e->args[0], *b = e->args[1];
    enum expr_op op = (enum expr_op)e->op;
    switch (op) {
    case EOP_AND: return conjunct(s, a) * conjunct(s, b);
    case EOP_OR: {
        double x = conjunct(s, a), y = conjunct(s, b);
        return x + y - x * y;
    }
    case EOP_EQ:
    case EOP_IS:
        return a->kind == EXPR_COLUMN ? equality(s, a, b, e) : equality(s, b, a, e);
    case EOP_NE:
    case EOP_IS_NOT:
        return 1 - (a->kind == EXPR_COLUMN ? equality(s, a, b, e) : equality(s, b, a, e));
    case EOP_LT:
    case EOP_LE:
    case EOP_GT:
    case EOP_GE:
        return a->kind == EXPR_COLUMN ? range(s, a, op, b, e) : range(s, b, flip[op], a, e);
    default:
        return SEL_OTHER;
    }
}

static double between(const struct sel_ctx *s, const struct expr *e)
{
    const struct expr *x = e->args[0];
    double lo = range(s, x, EOP_GE, e->args[1], e), hi = range(s, x, EOP_LE, e->args[2], e);
    double in = lo == SEL_RANGE || hi == SEL_RANGE ? SEL_RANGE * SEL_RANGE * 2 : lo + hi - 1;
    in = in < 0 ? 0 : in;
    return e->flags & EXPR_NEGATED ? 1 - in : in;
}

static double in_list(const struct sel_ctx *s, const struct expr *e)
{
    double sum = 0;
    for (uint32_t i = 1; i < e->nargs; i++)
        sum += equality(s, e->args[0], e->args[i], e);
    sum = sum > 1 ? 1 : sum;
    return e->flags & EXPR_NEGATED ? 1 - sum : sum;
}

/* A LIKE whose pattern is a constant text not starting with a wildcard. */
static double like(const struct expr *e)
{
    const struct expr *p = e->args[1];
    double sel = SEL_OTHER;
    if (p->kind == EXPR_CONST && value_type(&p->u.v) == LDB_TEXT) {
        size_t len;
        const char *txt = value_bytes(&p->u.v, &len);
        char c = len ? txt[0] : 0;
        if (c != '%' && c != '_' && c != '*' && c != '?' && c != '[')
            sel = SEL_LIKE_PREFIX;
    }
    return e->flags & EXPR_NEGATED ? 1 - sel : sel;
}

static double conjunct(const struct sel_ctx *s, const struct expr *e)
{
    switch (e->kind) {
    case EXPR_BINARY: return comparison(s, e);
    case EXPR_UNARY:
        if (e->op == EOP_NOT)
            return 1 - conjunct(s, e->args[0]);
        if (e->op == EOP_ISNULL)
            return is_null(s, e->args[0]);
        if (e->op == EOP_NOTNULL)
            return 1 - is_null(s, e->args[0]);
        return SEL_OTHER;
    case EXPR_BETWEEN: return between(s, e);
    case EXPR_IN_LIST: return in_list(s, e);
    case EXPR_LIKE: return like(e);
    case EXPR_CONST: return value_is_null(&e->u.v) ? 0 : 1;
    default: return SEL_OTHER;
    }
}

double estimate_selectivity(const struct plan *in, const struct expr *pred, uint32_t base)
{
    struct sel_ctx s = { in, base };
    double sel = conjunct(&s, pred);
    return sel < 0 ? 0 : sel > 1 ? 1 : sel;
}

/* ---- rows ------------------------------------------------------------------------------ */

static double node_rows(const struct plan *p);

double estimate_rows(const struct plan *p)
{
    struct plan_shared *sh = p->shared;
    if (!sh)
        return node_rows(p);
    if (!sh->estimated) {
        sh->estimate = node_rows(p);
        sh->estimated = true;
    }
    return sh->estimate;
}

/* The fraction of the cross product an equi-join keeps: per key, one over
 * the larger distinct count of its two columns (a key column holding every
 * value of the other side's); without counts, the smaller input's rows,
 * which makes a foreign-key join as large as its larger input. */
static double join_selectivity(const struct plan *j, double l, double r)
{
    double sel = 1;
    for (uint32_t k = 0; k < j->u.join.nkeys; k++) {
        const struct expr *kl = j->u.join.keys[k].left, *kr = j->u.join.keys[k].right;
        double dl = kl->kind == EXPR_COLUMN ? estimate_distinct(j->left, kl->u.index) : 0;
        double dr = kr->kind == EXPR_COLUMN ? estimate_distinct(j->right, kr->u.index) : 0;
        double d = dl > dr ? dl : dr;
        if (d < 1)
            d = l < r ? l : r;
        sel /= d < 1 ? 1 : d;
    }
    if (j->u.join.residual)
        sel *= estimate_selectivity(j, j->u.join.residual, 0);
    return sel;
}

/* Rows an index read returns: counted in an ordered index when its
 * probes are constants, else at most one for a whole unique key, else
 * the defaults per equality and range. */
static double index_rows(const struct access_path *a, double n)
{
    const struct table_index *ix = a->index;
    bool counted = ix->kind == INDEX_ORDERED && a->neq > 0;
    value key[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < a->neq && counted; i++) {
        counted = a->eq[i]->kind == EXPR_CONST;
        if (counted)
            key[i] = a->eq[i]->u.v;
    }
    double rows = n;
    if (counted)
        rows = (double)index_count_eq(ix, key, a->neq);
    else if (ix->unique && a->neq == ix->nparts)
        rows = n < 1 ? n : 1;
    else
        for (uint32_t i = 0; i < a->neq; i++)
            rows *= SEL_EQ;
    return a->lo || a->hi ? rows * SEL_RANGE : rows;
}

static double scan_rows(const struct plan *p)
{
    double n = (double)table_count(p->u.scan.table);
    switch (p->u.scan.access.kind) {
    case ACCESS_KEY: return n < 1 ? n : 1;
    case ACCESS_INDEX: return index_rows(&p->u.scan.access, n);
    default: return n;
    }
}

static double node_rows(const struct plan *p)
{
    switch (p->kind) {
    case PLAN_SCAN: return scan_rows(p);
    case PLAN_VALUES: return p->u.values.nrows;
    case PLAN_FILTER: {
        const struct plan *in = p->in;
        double n = in->kind == PLAN_SCAN ? (double)table_count(in->u.scan.table)
                                         : estimate_rows(in);
        return n * estimate_selectivity(in, p->u.pred, 0);
    }
    case PLAN_JOIN: {
        double l = estimate_rows(p->left), r = estimate_rows(p->right);
        switch (p->u.join.kind) {
        case JOIN_CROSS: return l * r;
        case JOIN_SEMI:
        case JOIN_ANTI: return l / 2;
        default: break;
        }
        double n = l * r * join_selectivity(p, l, r);
        if (p->u.join.kind == JOIN_LEFT || p->u.join.kind == JOIN_FULL)
            n = n < l ? l : n;
        if (p->u.join.kind == JOIN_RIGHT || p->u.join.kind == JOIN_FULL)
            n = n < r ? r : n;
        return n;
    }
    case PLAN_AGGREGATE: return p->u.agg.ngroups ? estimate_rows(p->in) / 2 + 1 : 1;
    case PLAN_SETOP: return estimate_rows(p->left) + estimate_rows(p->right);
    default: return p->in ? estimate_rows(p->in) : 1;
    }
}
