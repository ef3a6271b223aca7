/*
 * bind_expr.c - binding expressions: names to columns and captures,
 * operators to typed nodes with their comparison affinity and collation,
 * calls to registry functions, subqueries to EXPR_SUBQUERY nodes with
 * their plans, and constant folding.
 *
 * Static types follow the operands (INTEGER op INTEGER is INTEGER,
 * comparisons are BOOLEAN, ...). Affinity comes only from column
 * references and CAST, as in SQLite; any operator, unary + included,
 * yields an expression without affinity. A BOOLEAN compared with a
 * number is cast to INTEGER here (bind time), so TRUE = 1 holds while the
 * value order keeps BOOLEAN a class of its own.
 *
 * Collations follow SQLite's "Assigning Collating Sequences from SQL"
 * (expr.h, enum coll_src): a column has its own, CAST and unary + keep
 * their operand's, an explicit COLLATE passes up through every operator
 * and call, and nothing else gives one: x || y, a function's or an
 * aggregate's result, CASE and a scalar subquery's value are BINARY, even
 * over a NOCASE column. Each comparison then picks its collation from its
 * two operands (pick_coll); BETWEEN is two comparisons, each picking its
 * own.
 */
#include "sql/bind_internal.h"

#include "base/strbuf.h"
#include "sql/sqlvalue.h"

#include <ctype.h>
#include <string.h>

/* ---- constructors ---------------------------------------------------------------- */

struct expr *ex_new(binder *b, enum expr_kind kind, uint32_t nargs, uint32_t off)
{
    struct expr *e = balloc(b, sizeof *e);
    if (!e)
        return NULL;
    e->kind = (uint8_t)kind;
    e->off = off;
    e->type = COL_ANY;
    e->aff = COL_ANY;
    e->coll = LDB_COLL_BINARY;
    e->nargs = nargs;
    if (nargs && !(e->args = balloc(b, nargs * sizeof *e->args)))
        return NULL;
    return e;
}

void ex_inherit_nondet(struct expr *x)
{
    for (uint32_t i = 0; i < x->nargs; i++)
        x->flags |= x->args[i]->flags & EXPR_NONDET;
}

static enum col_type type_of_value(const value *v)
{
    switch (value_type(v)) {
    case LDB_INTEGER: return COL_INTEGER;
    case LDB_REAL: return COL_REAL;
    case LDB_TEXT: return COL_TEXT;
    case LDB_BLOB: return COL_BLOB;
    case LDB_BOOLEAN: return COL_BOOLEAN;
    default: return COL_ANY;
    }
}

struct expr *ex_const(binder *b, const value *v, uint32_t off)
{
    struct expr *e = ex_new(b, EXPR_CONST, 0, off);
    if (!e)
        return NULL;
    if (value_has_obj(v) && plan_own_value(b->pa, v)) {
        bind_nomem(b);
        return NULL;
    }
    e->u.v = *v;
    e->type = (uint8_t)type_of_value(v);
    return e;
}

struct expr *ex_bool(binder *b, bool v, uint32_t off)
{
    value x = value_bool(v);
    return ex_const(b, &x, off);
}

struct expr *ex_column(binder *b, uint32_t index, const struct plan_col *col,
                       uint32_t off)
{
    struct expr *e = ex_new(b, EXPR_COLUMN, 0, off);
    if (!e)
        return NULL;
    e->u.index = index;
    e->type = (uint8_t)col->type;
    e->aff = (uint8_t)col->aff;
    e->coll = (uint8_t)col->coll;
    e->csrc = COLL_COLUMN;
    return e;
}

enum col_type common_type(enum col_type a, enum col_type b)
{
    if (a == b)
        return a;
    if (a == COL_ANY)
        return b;
    if (b == COL_ANY)
        return a;
    if (col_type_numeric(a) && col_type_numeric(b))
        return (a == COL_REAL || b == COL_REAL) ? COL_REAL : COL_NUMERIC;
    return COL_ANY;
}

static bool is_comparison(enum expr_op op)
{
    return op >= EOP_EQ && op <= EOP_IS_NOT;
}

static bool int_like(enum col_type t)
{
    return t == COL_INTEGER || t == COL_BOOLEAN;
}

static enum col_type arith_type(enum expr_op op, const struct expr *l,
                                const struct expr *r)
{
    enum col_type a = l->type, c = r->type;
    if (op == EOP_CONCAT)
        return COL_TEXT;
    if (op >= EOP_BITAND && op <= EOP_RSHIFT)
        return COL_INTEGER;
    if (op == EOP_MOD)
        return (a == COL_REAL || c == COL_REAL) ? COL_REAL
               : int_like(a) && int_like(c) ? COL_INTEGER : COL_NUMERIC;
    if (int_like(a) && int_like(c))
        return COL_INTEGER;
    if (a == COL_REAL || c == COL_REAL)
        return COL_REAL;
    return COL_NUMERIC;
}

/* The collation of a comparison of l with r: the operand whose collation
 * has the higher rank, the left one at equal rank (SQLite). */
static enum ldb_collation pick_coll(const struct expr *l, const struct expr *r)
{
    return expr_coll(l->csrc >= r->csrc ? l : r);
}

/* An operator or call takes the leftmost explicit COLLATE of its operands
 * args[from, to) (SQLite), unless it has one already. */
static void inherit_collate(struct expr *x, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to && x->csrc != COLL_EXPLICIT; i++)
        if (x->args[i]->csrc == COLL_EXPLICIT) {
            x->coll = x->args[i]->coll;
            x->csrc = COLL_EXPLICIT;
        }
}

/* A comparison passes a COLLATE up when it compares under it. */
static uint8_t comparison_csrc(const struct expr *l, const struct expr *r)
{
    return l->csrc == COLL_EXPLICIT || r->csrc == COLL_EXPLICIT ? COLL_EXPLICIT : COLL_NONE;
}

static struct expr *cast_node(binder *b, struct expr *a, enum col_type to, uint32_t off)
{
    struct expr *e = ex_new(b, EXPR_CAST, 1, off);
    if (!e)
        return NULL;
    e->args[0] = a;
    e->u.cast_to = to;
    e->type = (uint8_t)to;
    e->aff = (uint8_t)to;
    e->coll = a->coll;
    e->csrc = a->csrc;
    e->flags = a->flags & EXPR_NONDET;
    return ex_fold(b, e);
}

/* TRUE = 1: a BOOLEAN operand meets a number as 0/1. */
static struct expr *bool_as_number(binder *b, struct expr *x, const struct expr *other)
{
    if (x->type == COL_BOOLEAN && col_type_numeric(other->type))
        return cast_node(b, x, COL_INTEGER, x->off);
    return x;
}

struct expr *ex_unary(binder *b, enum expr_op op, struct expr *a, uint32_t off)
{
    if (!a)
        return NULL;
    struct expr *e = ex_new(b, EXPR_UNARY, 1, off);
    if (!e)
        return NULL;
    e->op = (uint8_t)op;
    e->args[0] = a;
    e->flags = a->flags & EXPR_NONDET;
    switch (op) {
    case EOP_NEG:
        e->type = (uint8_t)(a->type == COL_BOOLEAN ? COL_INTEGER
                            : col_type_numeric(a->type) ? a->type : COL_NUMERIC);
        break;
    case EOP_BITNOT:
        e->type = COL_INTEGER;
        break;
    default:
        e->type = COL_BOOLEAN;
        break;
    }
    inherit_collate(e, 0, 1);
    return ex_fold(b, e);
}

struct expr *ex_binary(binder *b, enum expr_op op, struct expr *l,
                       struct expr *r, uint32_t off)
{
    if (!l || !r)
        return NULL;
    if (is_comparison(op)) {
        if (!(l = bool_as_number(b, l, r)) || !(r = bool_as_number(b, r, l)))
            return NULL;
    }
    struct expr *e = ex_new(b, EXPR_BINARY, 2, off);
    if (!e)
        return NULL;
    e->op = (uint8_t)op;
    e->args[0] = l;
    e->args[1] = r;
    e->flags = (l->flags | r->flags) & EXPR_NONDET;
    if (is_comparison(op)) {
        e->type = COL_BOOLEAN;
        e->aff = (uint8_t)sql_compare_affinity(l->aff, r->aff);
        e->coll = (uint8_t)pick_coll(l, r);
        e->csrc = comparison_csrc(l, r);
        return ex_fold(b, e);
    }
    e->type = (uint8_t)(op == EOP_AND || op == EOP_OR ? COL_BOOLEAN : arith_type(op, l, r));
    inherit_collate(e, 0, 2);
    return ex_fold(b, e);
}

/* ---- folding ----------------------------------------------------------------------- */

struct expr *ex_fold(binder *b, struct expr *e)
{
    if (!e || e->kind == EXPR_CONST || !expr_is_constant(e))
        return e;
    struct eval_error err = { 0 };
    struct eval_ctx cx = { .err = &err };
    value v;
    if (expr_eval(e, &cx, &v) != LDB_OK)
        return e; /* keep it: the error belongs to the rows that reach it */
    struct expr *c = ex_const(b, &v, e->off);
    value_release(&v);
    if (!c)
        return NULL;
    c->type = e->type == COL_BOOLEAN || value_is_null(&c->u.v) ? e->type : c->type;
    c->aff = e->aff;
    c->coll = e->coll;
    c->csrc = e->csrc;
    /* the constant now carries the COLLATE it came with */
    c->flags = e->csrc == COLL_EXPLICIT ? EXPR_COLL_EXPLICIT : 0;
    return c;
}

/* ---- names -------------------------------------------------------------------------- */

static bool item_named(const struct scope_item *it, const ast_name *n)
{
    return it->name && name_eq(it->name, n->str);
}

/* The collation of column col of FROM item p: the column's, but for a
 * compound its leftmost term's (BINARY when that term has none) even
 * where the compound itself compares under a later term's, as in SQLite,
 * which gives a derived table the collations of its first SELECT. */
static enum ldb_collation reference_coll(const struct plan *p, uint32_t col)
{
    while (p->kind == PLAN_SORT || p->kind == PLAN_LIMIT)
        p = p->in;
    while (p->kind == PLAN_SETOP)
        p = p->left;
    return p->cols[col].coll;
}

struct expr *scope_column_expr(binder *b, struct scope *s, uint32_t item,
                               uint32_t col, uint32_t off)
{
    for (uint32_t i = 0; i < s->noverrides; i++)
        if (s->overrides[i].item == item && s->overrides[i].col == col) {
            struct expr *src = s->overrides[i].e, *e = ex_new(b, src->kind, src->nargs, off);
            if (!e)
                return NULL;
            uint32_t n = e->nargs;
            struct expr **args = e->args;
            *e = *src;
            e->args = args;
            e->nargs = n;
            for (uint32_t k = 0; k < n; k++)
                e->args[k] = src->args[k];
            e->off = off;
            return e;
        }
    const struct scope_item *it = &s->items[item];
    struct expr *e = ex_column(b, it->base + col, &it->plan->cols[col], off);
    if (e)
        e->coll = (uint8_t)reference_coll(it->plan, col);
    return e;
}

static bool is_rowid_name(const char *name)
{
    return name_eq(name, "rowid") || name_eq(name, "_rowid_") || name_eq(name, "oid");
}

/* rowid, _rowid_ and oid, when no column has the name, mean a table's
 * automatic key: its hidden rowid or its INTEGER PRIMARY KEY (SQLite). */
static int find_rowid_alias(binder *b, struct scope *s, const ast_expr *e, uint32_t *item,
                            uint32_t *col)
{
    const ast_name *tn = &e->u.column.table;
    if (!is_rowid_name(e->u.column.column.str))
        return 0;
    int found = 0;
    for (uint32_t i = 0; i < s->nitems; i++) {
        const struct scope_item *it = &s->items[i];
        if ((tn->str && !item_named(it, tn)) || it->plan->kind != PLAN_SCAN)
            continue;
        const struct schema *sc = table_schema(it->plan->u.scan.table);
        if (!sc->rowid_auto)
            continue;
        if (found) {
            bind_error(b, LDB_ERROR, e->off, "ambiguous column name: %s",
                       e->u.column.column.str);
            return -1;
        }
        found = 1;
        *item = i;
        *col = sc->pk[0];
    }
    return found;
}

/* Finds a column in one scope. 1: found; 0: not here; -1: error. */
static int find_column(binder *b, struct scope *s, const ast_expr *e,
                       uint32_t *item, uint32_t *col)
{
    const ast_name *tn = &e->u.column.table, *cn = &e->u.column.column;
    int found = 0;
    for (uint32_t i = 0; i < s->nitems; i++) {
        const struct scope_item *it = &s->items[i];
        if (tn->str && !item_named(it, tn))
            continue;
        for (uint32_t c = 0; c < it->plan->ncols; c++) {
            const char *name = it->plan->cols[c].name;
            if (!name || !name_eq(name, cn->str) || (!tn->str && it->merged && it->merged[c]))
                continue;
            if (found) {
                bind_error(b, LDB_ERROR, e->off, "ambiguous column name: %s", cn->str);
                return -1;
            }
            found = 1;
            *item = i;
            *col = c;
            break;
        }
        if (tn->str && !found && item_named(it, tn)) {
            /* a qualified name names one item */
            break;
        }
    }
    return found ? found : find_rowid_alias(b, s, e, item, col);
}

static uint32_t add_capture(binder *b, struct subq *sq, struct expr *x)
{
    for (uint32_t i = 0; i < sq->ncaptures; i++)
        if (expr_equal(sq->captures[i], x))
            return i;
    if (!bpush(b, (void **)&sq->captures, &sq->ncaptures, &sq->cap, sizeof x, &x))
        return UINT32_MAX;
    return sq->ncaptures - 1;
}

/* x is an expression of scope target; the same value seen from scope
 * from (target or an ancestor of it through parent links). */
static struct expr *route(binder *b, struct scope *from, struct scope *target,
                          struct expr *x)
{
    if (!x || from == target)
        return x;
    struct subq *sq = from->sq;
    struct expr *inner = route(b, sq->outer, target, x);
    if (!inner)
        return NULL;
    uint32_t idx = add_capture(b, sq, inner);
    if (idx == UINT32_MAX)
        return NULL;
    struct expr *e = ex_new(b, EXPR_OUTER, 0, x->off);
    if (!e)
        return NULL;
    e->u.index = idx;
    e->type = inner->type;
    e->aff = inner->aff;
    e->coll = inner->coll;
    e->csrc = inner->csrc;
    return e;
}

static struct expr *bind_alias_ref(binder *b, const ast_expr *e)
{
    struct scope *s = b->scope;
    const ast_result_list *rl = s->aliases;
    if (!rl || e->u.column.table.str)
        return NULL;
    for (uint32_t i = 0; i < rl->n; i++) {
        const ast_result_col *rc = &rl->items[i];
        if (rc->kind != AST_RESULT_EXPR || !rc->alias.str ||
            !name_eq(rc->alias.str, e->u.column.column.str))
            continue;
        if (s->alias_busy) {
            bind_error(b, LDB_ERROR, e->off, "alias %s refers to itself", rc->alias.str);
            return NULL;
        }
        s->alias_busy = true;
        struct expr *x = bind_expr(b, rc->expr);
        s->alias_busy = false;
        return x;
    }
    return NULL;
}

static struct expr *bind_column_ref(binder *b, const ast_expr *e)
{
    for (struct scope *s = b->scope; s; s = s->parent) {
        uint32_t item = 0, col = 0;
        int r = find_column(b, s, e, &item, &col);
        if (r < 0)
            return NULL;
        if (r > 0)
            return route(b, b->scope, s, scope_column_expr(b, s, item, col, e->off));
    }
    struct expr *x = bind_alias_ref(b, e);
    if (x || b->env->err->code)
        return x;
    const ast_name *tn = &e->u.column.table;
    if (tn->str)
        bind_error(b, LDB_ERROR, e->off, "no such column: %s.%s", tn->str,
                   e->u.column.column.str);
    else
        bind_error(b, LDB_ERROR, e->off, "no such column: %s", e->u.column.column.str);
    return NULL;
}

/* ---- operators ------------------------------------------------------------------------ */

static enum expr_op binary_op(enum ast_op op)
{
    switch (op) {
    case AST_OP_OR: return EOP_OR;
    case AST_OP_AND: return EOP_AND;
    case AST_OP_EQ: return EOP_EQ;
    case AST_OP_NE: return EOP_NE;
    case AST_OP_IS: return EOP_IS;
    case AST_OP_IS_NOT: return EOP_IS_NOT;
    case AST_OP_LT: return EOP_LT;
    case AST_OP_LE: return EOP_LE;
    case AST_OP_GT: return EOP_GT;
    case AST_OP_GE: return EOP_GE;
    case AST_OP_BITAND: return EOP_BITAND;
    case AST_OP_BITOR: return EOP_BITOR;
    case AST_OP_LSHIFT: return EOP_LSHIFT;
    case AST_OP_RSHIFT: return EOP_RSHIFT;
    case AST_OP_ADD: return EOP_ADD;
    case AST_OP_SUB: return EOP_SUB;
    case AST_OP_MUL: return EOP_MUL;
    case AST_OP_DIV: return EOP_DIV;
    case AST_OP_MOD: return EOP_MOD;
    default: return EOP_CONCAT;
    }
}

static struct expr *bind_unary(binder *b, const ast_expr *e)
{
    struct expr *a = bind_expr(b, e->u.unary.operand);
    if (!a)
        return NULL;
    switch (e->u.unary.op) {
    case AST_OP_PLUS:
        /* a no-op that drops affinity (SQLite) */
        if (a->kind == EXPR_CONST || a->aff == COL_ANY)
            return a;
        {
            struct expr *c = ex_new(b, EXPR_CAST, 1, e->off);
            if (!c)
                return NULL;
            c->args[0] = a;
            c->u.cast_to = COL_ANY;
            c->type = a->type;
            c->coll = a->coll;
            c->csrc = a->csrc;
            c->flags = a->flags & EXPR_NONDET;
            return c;
        }
    case AST_OP_NEG: return ex_unary(b, EOP_NEG, a, e->off);
    case AST_OP_BITNOT: return ex_unary(b, EOP_BITNOT, a, e->off);
    case AST_OP_NOT: return ex_unary(b, EOP_NOT, a, e->off);
    case AST_OP_ISNULL: return ex_unary(b, EOP_ISNULL, a, e->off);
    default: return ex_unary(b, EOP_NOTNULL, a, e->off);
    }
}

static struct expr *bind_binary(binder *b, const ast_expr *e)
{
    struct expr *l = bind_expr(b, e->u.binary.left);
    struct expr *r = l ? bind_expr(b, e->u.binary.right) : NULL;
    return ex_binary(b, binary_op(e->u.binary.op), l, r, e->off);
}

bool collation_from_name(const char *name, enum ldb_collation *out)
{
    if (name_eq(name, "binary"))
        *out = LDB_COLL_BINARY;
    else if (name_eq(name, "nocase"))
        *out = LDB_COLL_NOCASE;
    else if (name_eq(name, "rtrim"))
        *out = LDB_COLL_RTRIM;
    else
        return false;
    return true;
}

static struct expr *bind_collate(binder *b, const ast_expr *e)
{
    enum ldb_collation c;
    if (!collation_from_name(e->u.collate.collation.str, &c)) {
        bind_error(b, LDB_ERROR, e->u.collate.collation.off, "no such collation sequence: %s",
                   e->u.collate.collation.str);
        return NULL;
    }
    struct expr *a = bind_expr(b, e->u.collate.operand);
    if (!a)
        return NULL;
    if (a->kind != EXPR_CONST && a->kind != EXPR_COLUMN && a->kind != EXPR_OUTER &&
        !(a->flags & EXPR_COLL_EXPLICIT)) {
        /* a shared node may not be retagged: wrap it */
        struct expr *w = ex_new(b, EXPR_CAST, 1, e->off);
        if (!w)
            return NULL;
        w->args[0] = a;
        w->u.cast_to = COL_ANY;
        w->type = a->type;
        w->aff = a->aff;
        w->flags = a->flags & EXPR_NONDET;
        a = w;
    }
    a->coll = (uint8_t)c;
    a->csrc = COLL_EXPLICIT;
    a->flags |= EXPR_COLL_EXPLICIT;
    return a;
}

static struct expr *bind_between(binder *b, const ast_expr *e)
{
    struct expr *x = bind_expr(b, e->u.between.operand);
    struct expr *lo = x ? bind_expr(b, e->u.between.low) : NULL;
    struct expr *hi = lo ? bind_expr(b, e->u.between.high) : NULL;
    if (!hi)
        return NULL;
    if (!(lo = bool_as_number(b, lo, x)) || !(hi = bool_as_number(b, hi, x)) ||
        !(x = bool_as_number(b, x, lo)))
        return NULL;
    struct expr *n = ex_new(b, EXPR_BETWEEN, 3, e->off);
    if (!n)
        return NULL;
    n->args[0] = x;
    n->args[1] = lo;
    n->args[2] = hi;
    n->type = COL_BOOLEAN;
    /* x >= lo AND x <= hi, each comparison with its own affinity and
     * collation (SQLite) */
    n->aff = (uint8_t)sql_compare_affinity(x->aff, lo->aff);
    n->aff2 = (uint8_t)sql_compare_affinity(x->aff, hi->aff);
    n->coll = (uint8_t)pick_coll(x, lo);
    n->u.coll_hi = (uint8_t)pick_coll(x, hi);
    n->csrc = comparison_csrc(x, lo);
    n->flags = ((x->flags | lo->flags | hi->flags) & EXPR_NONDET) |
               (e->u.between.negated ? EXPR_NEGATED : 0);
    return ex_fold(b, n);
}

static struct expr *unsupported_row(binder *b, const ast_expr *e)
{
    bind_error(b, LDB_UNSUPPORTED, e->off, "row values are not supported");
    return NULL;
}

static struct expr *bind_in_list(binder *b, const ast_expr *e)
{
    const ast_expr_list *l = &e->u.in.list;
    if (e->u.in.operand->kind == AST_ROW)
        return unsupported_row(b, e->u.in.operand);
    struct expr *x = bind_expr(b, e->u.in.operand);
    if (!x)
        return NULL;
    if (l->n == 0) /* x IN () is false even for NULL x (SQLite) */
        return ex_bool(b, e->u.in.negated, e->off);
    struct expr *n = ex_new(b, EXPR_IN_LIST, l->n + 1, e->off);
    if (!n)
        return NULL;
    n->args[0] = x;
    enum col_type aff = sql_compare_affinity(x->aff, COL_ANY);
    uint8_t flags = x->flags & EXPR_NONDET;
    for (uint32_t i = 0; i < l->n; i++) {
        if (l->items[i]->kind == AST_ROW)
            return unsupported_row(b, l->items[i]);
        struct expr *it = bind_expr(b, l->items[i]);
        if (!it || !(it = bool_as_number(b, it, x)))
            return NULL;
        n->args[i + 1] = it;
        flags |= it->flags & EXPR_NONDET;
    }
    n->type = COL_BOOLEAN;
    n->aff = (uint8_t)aff;
    /* the operand's collation alone, but SQLite reads x IN (constant) as
     * x = +constant, whose COLLATE counts */
    const struct expr *only = l->n == 1 && expr_is_constant(n->args[1]) ? n->args[1] : x;
    n->coll = (uint8_t)pick_coll(x, only);
    n->csrc = comparison_csrc(x, only);
    n->flags = flags | (e->u.in.negated ? EXPR_NEGATED : 0);
    return ex_fold(b, n);
}

static struct expr *bind_like(binder *b, const ast_expr *e)
{
    enum ast_op op = e->u.like.op;
    if (op == AST_OP_REGEXP || op == AST_OP_MATCH) {
        bind_error(b, LDB_UNSUPPORTED, e->off, "%s is not supported", ast_op_name(op));
        return NULL;
    }
    if (op == AST_OP_GLOB && e->u.like.escape) {
        bind_error(b, LDB_ERROR, e->u.like.escape->off, "ESCAPE is not allowed with GLOB");
        return NULL;
    }
    uint32_t n = e->u.like.escape ? 3 : 2;
    struct expr *x = ex_new(b, EXPR_LIKE, n, e->off);
    if (!x || !(x->args[0] = bind_expr(b, e->u.like.operand)) ||
        !(x->args[1] = bind_expr(b, e->u.like.pattern)) ||
        (n == 3 && !(x->args[2] = bind_expr(b, e->u.like.escape))))
        return NULL;
    x->op = op == AST_OP_LIKE ? EOP_LIKE : EOP_GLOB;
    x->type = COL_BOOLEAN;
    ex_inherit_nondet(x);
    /* SQLite's like(pattern, x [, escape]): the pattern's COLLATE first */
    inherit_collate(x, 1, 2);
    inherit_collate(x, 0, n);
    if (e->u.like.negated)
        x->flags |= EXPR_NEGATED;
    return ex_fold(b, x);
}

static struct expr *bind_case(binder *b, const ast_expr *e)
{
    bool has_base = e->u.case_.base != NULL, has_else = e->u.case_.else_expr != NULL;
    uint32_t n = has_base + 2 * e->u.case_.nwhen + has_else;
    struct expr *x = ex_new(b, EXPR_CASE, n, e->off);
    if (!x)
        return NULL;
    x->u.c.has_base = has_base;
    x->u.c.has_else = has_else;
    uint32_t k = 0;
    struct expr *base = NULL;
    uint8_t *when_coll = NULL;
    if (has_base && (!(base = x->args[k++] = bind_expr(b, e->u.case_.base)) ||
                     !(when_coll = balloc(b, e->u.case_.nwhen))))
        return NULL;
    x->u.c.when_coll = when_coll;
    enum col_type type = COL_ANY, aff = base ? base->aff : COL_ANY;
    bool typed = false;
    for (uint32_t i = 0; i < e->u.case_.nwhen; i++) {
        struct expr *w = bind_expr(b, e->u.case_.whens[i].when);
        struct expr *t = w ? bind_expr(b, e->u.case_.whens[i].then) : NULL;
        if (!t)
            return NULL;
        x->args[k++] = w;
        x->args[k++] = t;
        if (base) {
            aff = sql_compare_affinity(aff, w->aff);
            when_coll[i] = (uint8_t)pick_coll(base, w); /* base = w, for each WHEN */
        }
        type = typed ? common_type(type, t->type) : t->type;
        typed = true;
    }
    if (has_else) {
        struct expr *el = bind_expr(b, e->u.case_.else_expr);
        if (!el)
            return NULL;
        x->args[k++] = el;
        type = common_type(type, el->type);
    }
    ex_inherit_nondet(x);
    x->type = (uint8_t)type;
    x->aff = (uint8_t)(base ? aff : COL_ANY);
    inherit_collate(x, 0, n);
    return ex_fold(b, x);
}

static struct expr *bind_cast(binder *b, const ast_expr *e)
{
    struct expr *a = bind_expr(b, e->u.cast.operand);
    if (!a)
        return NULL;
    const char *tn = e->u.cast.type.name;
    enum col_type to = col_type_from_decl(tn, strlen(tn));
    return cast_node(b, a, to, e->off);
}

/* ---- calls ---------------------------------------------------------------------------- */

static const char *lower_name(binder *b, const ast_name *n)
{
    char *s = balloc(b, n->len + 1);
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < n->len; i++)
        s[i] = (char)tolower((unsigned char)n->str[i]);
    s[n->len] = '\0';
    return s;
}

static bool bind_args(binder *b, const ast_expr_list *l, struct expr *x, uint32_t from)
{
    for (uint32_t i = 0; i < l->n; i++) {
        if (l->items[i]->kind == AST_ROW) {
            unsupported_row(b, l->items[i]);
            return false;
        }
        if (!(x->args[from + i] = bind_expr(b, l->items[i])))
            return false;
        x->flags |= x->args[from + i]->flags & EXPR_NONDET;
    }
    return true;
}

/* An ORDER BY term of an aggregate call, in its wrapper (bind_internal.h). */
static struct expr *bind_order_term(binder *b, const ast_order_term *t)
{
    struct expr *w = ex_new(b, EXPR_CAST, 1, t->expr->off);
    if (!w || !(w->args[0] = bind_expr(b, t->expr)))
        return NULL;
    w->u.cast_to = COL_ANY;
    w->type = w->args[0]->type;
    w->coll = expr_coll(w->args[0]);
    bool nulls_first = t->nulls == AST_NULLS_DEFAULT ? !t->desc : t->nulls == AST_NULLS_FIRST;
    w->flags = (w->args[0]->flags & EXPR_NONDET) | (t->desc ? AGGORD_DESC : 0) |
               (nulls_first ? AGGORD_NULLS_FIRST : 0);
    return w;
}

/* The ORDER BY node of an aggregate call (bind_internal.h). */
static struct expr *bind_agg_order(binder *b, const ast_order_list *ol, uint32_t off)
{
    struct expr *o = ex_new(b, EXPR_CALL, ol->n, off);
    if (!o || !(o->u.fn = func_find("array", ol->n, NULL)))
        return NULL;
    for (uint32_t i = 0; i < ol->n; i++) {
        if (!(o->args[i] = bind_order_term(b, &ol->items[i])))
            return NULL;
        o->flags |= o->args[i]->flags & EXPR_NONDET;
    }
    return o;
}

uint32_t aggcall_nargs(const struct expr *call)
{
    return call->nargs - ((call->flags & AGGCALL_FILTER) != 0) -
           ((call->flags & AGGCALL_ORDER) != 0);
}

const struct expr *aggcall_order(const struct expr *call)
{
    return (call->flags & AGGCALL_ORDER) ? call->args[aggcall_nargs(call)] : NULL;
}

static struct expr *bind_aggregate(binder *b, const ast_expr *e, const struct func_def *fn,
                                   const char *name)
{
    if (!b->allow_agg || b->in_agg_args) {
        bind_error(b, LDB_ERROR, e->off, "misuse of aggregate function %s()", name);
        return NULL;
    }
    const ast_order_list *ol = &e->u.call.order_by;
    if (ol->n && !(fn->agg->flags & AGG_ORDERED)) {
        bind_error(b, LDB_UNSUPPORTED, ol->items[0].expr->off,
                   "ORDER BY inside a call of %s() is not supported (only string_agg and "
                   "group_concat take one)", name);
        return NULL;
    }
    if (e->u.call.distinct && (e->u.call.args.n != 1 || e->u.call.star)) {
        bind_error(b, LDB_ERROR, e->off, "DISTINCT aggregates must have exactly one argument");
        return NULL;
    }
    uint32_t n = e->u.call.args.n + (ol->n != 0) + (e->u.call.filter != NULL);
    struct expr *x = ex_new(b, EXPR_CALL, n, e->off);
    if (!x)
        return NULL;
    x->u.fn = fn;
    b->in_agg_args = true;
    bool ok = bind_args(b, &e->u.call.args, x, 0) &&
              (!ol->n || (x->args[e->u.call.args.n] = bind_agg_order(b, ol, e->off))) &&
              (!e->u.call.filter || (x->args[n - 1] = bind_expr(b, e->u.call.filter)));
    b->in_agg_args = false;
    if (!ok)
        return NULL;
    if (fn->agg == &agg_string_agg && e->u.call.args.n == 2 && x->args[1]->kind != EXPR_CONST) {
        bind_error(b, LDB_UNSUPPORTED, x->args[1]->off,
                   "the separator of %s() must be a constant", name);
        return NULL;
    }
    x->flags |= (e->u.call.distinct ? AGGCALL_DISTINCT : 0) |
                (e->u.call.filter ? AGGCALL_FILTER : 0) | (ol->n ? AGGCALL_ORDER : 0);
    if (fn->type != COL_ANY)
        x->type = (uint8_t)fn->type;
    else if (e->u.call.args.n)
        x->type = x->args[0]->type;
    if (fn->agg == &agg_min || fn->agg == &agg_max)
        x->aff = x->args[0]->aff; /* SQLite: min/max keep their argument's affinity */
    inherit_collate(x, 0, e->u.call.args.n);
    b->scope->naggs_seen++;
    return x;
}

static struct expr *bind_call(binder *b, const ast_expr *e)
{
    const char *name = lower_name(b, &e->u.call.name);
    if (!name)
        return NULL;
    uint32_t nargs = e->u.call.args.n;
    const struct func_def *fn;
    bool known = false;
    if (e->u.call.star) {
        if (strcmp(name, "count") != 0 || nargs) {
            bind_error(b, LDB_ERROR, e->off, "%s(*) is not a valid call", name);
            return NULL;
        }
        if (e->u.call.distinct) {
            bind_error(b, LDB_ERROR, e->off, "count(DISTINCT *) is not valid");
            return NULL;
        }
        fn = &func_count_star;
    } else if (!(fn = func_registry_find(b->env->funcs, name, nargs, &known)) &&
               !(fn = func_find(name, nargs, known ? NULL : &known))) {
        if (known)
            bind_error(b, LDB_ERROR, e->off, "wrong number of arguments to function %s()", name);
        else
            bind_error(b, LDB_ERROR, e->off, "no such function: %s", name);
        return NULL;
    }
    if (func_is_aggregate(fn))
        return bind_aggregate(b, e, fn, name);
    if (e->u.call.distinct || e->u.call.filter || e->u.call.order_by.n) {
        bind_error(b, LDB_ERROR, e->off,
                   "DISTINCT, FILTER and ORDER BY apply only to aggregate functions, "
                   "and %s() is not one", name);
        return NULL;
    }
    struct expr *x = ex_new(b, EXPR_CALL, nargs, e->off);
    if (!x || !bind_args(b, &e->u.call.args, x, 0))
        return NULL;
    x->u.fn = fn;
    inherit_collate(x, 0, nargs);
    if (!func_is_deterministic(fn))
        x->flags |= EXPR_NONDET;
    enum col_type type = fn->type;
    if (fn->flags & FUNC_TYPE_OF_ARGS) {
        type = nargs ? x->args[0]->type : COL_ANY;
        for (uint32_t i = 1; i < nargs; i++)
            type = common_type(type, x->args[i]->type);
        if ((fn->flags & FUNC_NUMERIC) && !col_type_numeric(type))
            type = COL_NUMERIC;
    }
    x->type = (uint8_t)type;
    return ex_fold(b, x);
}

static struct expr *bind_current(binder *b, const ast_expr *e)
{
    static const char *const names[] = { "current_date", "current_time", "current_timestamp" };
    const struct func_def *fn = func_find(names[e->u.current], 0, NULL);
    struct expr *x = ex_new(b, EXPR_CALL, 0, e->off);
    if (!x)
        return NULL;
    x->u.fn = fn;
    x->type = COL_TEXT;
    x->flags = EXPR_NONDET;
    return x;
}

/* ---- subqueries ------------------------------------------------------------------------ */

/* operand IN (subquery whose one column is col): the comparison of the
 * operand with the subquery's result expression, whose collation col
 * records with its source. */
static void in_subquery_compare(struct expr *in, struct expr *operand, const struct plan_col *col)
{
    struct expr rhs = { .coll = (uint8_t)col->coll, .csrc = (uint8_t)col->csrc };
    in->args[0] = operand;
    in->flags |= operand->flags & EXPR_NONDET;
    in->aff = (uint8_t)sql_compare_affinity(operand->aff, col->aff);
    in->coll = (uint8_t)pick_coll(operand, &rhs);
    in->csrc = operand->csrc == COLL_EXPLICIT ? COLL_EXPLICIT : COLL_NONE;
}

static struct expr *bind_subquery(binder *b, const ast_select *sel, enum subquery_kind kind,
                                  struct expr *operand, bool array, uint32_t off)
{
    struct subq *sq = balloc(b, sizeof *sq);
    if (!sq)
        return NULL;
    sq->outer = b->scope;
    bool allow = b->allow_agg, in_args = b->in_agg_args;
    b->allow_agg = b->in_agg_args = false;
    /* a LIVE child's own select list may hold LIVE columns (nesting) */
    const ast_result_list *live_list = b->live_list;
    b->live_list = kind == SUBQ_LIVE && sel->body->kind == AST_BODY_SELECT
                       ? &sel->body->u.select.cols
                       : NULL;
    struct plan *p = array ? bind_array_select(b, sel, b->scope, sq)
                           : bind_select(b, sel, b->scope, sq);
    b->live_list = live_list;
    b->allow_agg = allow;
    b->in_agg_args = in_args;
    if (!p)
        return NULL;
    if (kind == SUBQ_SCALAR && p->ncols > 1 && !(p = bind_record_rows(b, p, off)))
        return NULL;
    if (kind != SUBQ_EXISTS && kind != SUBQ_LIVE && p->ncols != 1) {
        bind_error(b, LDB_ERROR, off, "sub-select returns %u columns - expected 1", p->ncols);
        return NULL;
    }
    struct expr *x = ex_new(b, EXPR_SUBQUERY, operand ? 1 : 0, off);
    if (!x)
        return NULL;
    x->u.sq.kind = kind;
    x->u.sq.plan = p;
    x->u.sq.captures = sq->captures;
    x->u.sq.ncaptures = sq->ncaptures;
    x->u.sq.id = b->pa->nsubqueries++;
    if (plan_is_nondeterministic(p))
        x->flags |= EXPR_NONDET;
    for (uint32_t i = 0; i < sq->ncaptures; i++)
        x->flags |= sq->captures[i]->flags & EXPR_NONDET;
    /* a scalar subquery's value has no collation (SQLite); a LIVE cell is
     * the bucket's correlation values, not a column of the child */
    x->type = (uint8_t)(kind == SUBQ_SCALAR ? p->cols[0].type
                        : kind == SUBQ_LIVE ? COL_ANY
                                            : COL_BOOLEAN);
    if (kind == SUBQ_SCALAR)
        x->aff = (uint8_t)p->cols[0].aff;
    if (operand)
        in_subquery_compare(x, operand, &p->cols[0]);
    return x;
}

static struct expr *bind_in_select(binder *b, const ast_expr *e)
{
    if (e->u.in.operand->kind == AST_ROW)
        return unsupported_row(b, e->u.in.operand);
    struct expr *x = bind_expr(b, e->u.in.operand);
    struct expr *s = x ? bind_subquery(b, e->u.in.select, SUBQ_IN, x, false, e->off) : NULL;
    if (!s)
        return NULL;
    return e->u.in.negated ? ex_unary(b, EOP_NOT, s, e->off) : s;
}

/* x IN name: the named relation's single column as a subquery. */
static struct expr *bind_in_table(binder *b, const ast_expr *e)
{
    struct expr *x = bind_expr(b, e->u.in.operand);
    struct plan *rel = x ? bind_named(b, &e->u.in.table, NULL) : NULL;
    if (!rel)
        return NULL;
    uint32_t visible = 0, col = 0;
    for (uint32_t i = 0; i < rel->ncols; i++)
        if (!rel->cols[i].hidden)
            visible++, col = i;
    if (visible != 1) {
        bind_error(b, LDB_ERROR, e->off, "sub-select returns %u columns - expected 1", visible);
        return NULL;
    }
    struct plan *p = plan_new(b->pa, PLAN_PROJECT, 1);
    if (!p || !(p->u.exprs = balloc(b, sizeof *p->u.exprs)) ||
        !(p->u.exprs[0] = ex_column(b, col, &rel->cols[col], e->off))) {
        bind_nomem(b);
        return NULL;
    }
    p->in = rel;
    p->cols[0] = rel->cols[col];
    p->cols[0].hidden = false;
    p->cols[0].csrc = COLL_COLUMN;
    struct expr *s = ex_new(b, EXPR_SUBQUERY, 1, e->off);
    if (!s)
        return NULL;
    s->u.sq.kind = SUBQ_IN;
    s->u.sq.plan = p;
    s->u.sq.id = b->pa->nsubqueries++;
    s->type = COL_BOOLEAN;
    in_subquery_compare(s, x, &p->cols[0]);
    return e->u.in.negated ? ex_unary(b, EOP_NOT, s, e->off) : s;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

static struct expr *bind_node(binder *b, const ast_expr *e)
{
    switch ((enum ast_expr_kind)e->kind) {
    case AST_LITERAL: return ex_const(b, &e->u.literal.v, e->off);
    case AST_CURRENT: return bind_current(b, e);
    case AST_COLUMN: return bind_column_ref(b, e);
    case AST_PARAM: {
        struct expr *x = ex_new(b, EXPR_PARAM, 0, e->off);
        if (x)
            x->u.index = e->u.param.number;
        return x;
    }
    case AST_UNARY: return bind_unary(b, e);
    case AST_BINARY: return bind_binary(b, e);
    case AST_COLLATE: return bind_collate(b, e);
    case AST_BETWEEN: return bind_between(b, e);
    case AST_IN_LIST: return bind_in_list(b, e);
    case AST_IN_SELECT: return bind_in_select(b, e);
    case AST_IN_TABLE: return bind_in_table(b, e);
    case AST_LIKE: return bind_like(b, e);
    case AST_CASE: return bind_case(b, e);
    case AST_CAST: return bind_cast(b, e);
    case AST_CALL: return bind_call(b, e);
    case AST_EXISTS:
        return bind_subquery(b, e->u.subquery.select, SUBQ_EXISTS, NULL, false, e->off);
    case AST_SUBQUERY:
        return bind_subquery(b, e->u.subquery.select, SUBQ_SCALAR, NULL, false, e->off);
    case AST_ARRAY:
        return bind_subquery(b, e->u.subquery.select, SUBQ_SCALAR, NULL, true, e->off);
    case AST_LIVE:
        /* The seed's Collection-valued include: a handle per active bucket,
         * which only a live query has to give. Elsewhere refused, not
         * approximated: an ARRAY would re-emit the parent on every child
         * change. */
        if (e == b->live_ok)
            return bind_subquery(b, e->u.subquery.select, SUBQ_LIVE, NULL, false, e->off);
        bind_error(b, LDB_UNSUPPORTED, e->off,
                   "LIVE (query), a child live result, is allowed only as a result column "
                   "of a live query's outermost SELECT (or of a LIVE child's); ARRAY "
                   "(query) gives the child's rows as a value");
        return NULL;
    case AST_ROW: return unsupported_row(b, e);
    }
    bind_error(b, LDB_INTERNAL, e->off, "unknown expression kind %d", e->kind);
    return NULL;
}

struct expr *bind_expr(binder *b, const ast_expr *e)
{
    if (!bind_enter(b, e->off))
        return NULL;
    struct expr *x = bind_node(b, e);
    bind_leave(b);
    return x;
}
