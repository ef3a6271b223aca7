/*
 * eval.c - the expression evaluator (expr_eval): one recursive walk over
 * a bound tree, with three-valued logic, SQLite's comparison affinity,
 * short-circuit AND/OR/CASE/COALESCE, and subqueries handed to the
 * runner in the context.
 *
 * The evaluator owns no state: everything it reads comes through the
 * eval_ctx, so the executor, the binder's constant folding and the live
 * layer's dataflow callbacks all call it the same way. Every value it
 * returns is a new reference; every intermediate is released on every
 * path. Recursion depth is the tree height, which the parser bounds.
 */
#include "sql/func.h"
#include "sql/plan.h"
#include "sql/sqlvalue.h"

#include "base/mem.h"

#include <stdio.h>
#include <string.h>

/* Records the position of a failure (the innermost node wins) and makes
 * sure a message exists. */
static int fail(struct eval_ctx *cx, const expr *e, int rc)
{
    struct eval_error *err = cx->err;
    if (!err->code) {
        err->code = rc;
        snprintf(err->msg, sizeof err->msg, "%s",
                 rc == LDB_NOMEM ? "out of memory" : ldb_errstr(rc));
    }
    if (!err->has_off) {
        err->off = e->off;
        err->has_off = true;
    }
    return rc;
}

int sql_truth(const value *v)
{
    switch (value_type(v)) {
    case LDB_NULL: return -1;
    case LDB_BOOLEAN:
    case LDB_INTEGER: return v->h.u.i != 0;
    case LDB_REAL: return v->h.u.r != 0.0;
    case LDB_TEXT:
    case LDB_BLOB: {
        value n = sqlv_numeric(v);
        return value_type(&n) == LDB_INTEGER ? n.h.u.i != 0 : n.h.u.r != 0.0;
    }
    default: return 0;
    }
}

static value truth_value(int t)
{
    return t < 0 ? value_null() : value_bool(t != 0);
}

/* ---- comparisons ------------------------------------------------------------------ */

static int compare_result(enum expr_op op, int c)
{
    switch (op) {
    case EOP_EQ: case EOP_IS: return c == 0;
    case EOP_NE: case EOP_IS_NOT: return c != 0;
    case EOP_LT: return c < 0;
    case EOP_LE: return c <= 0;
    case EOP_GT: return c > 0;
    default: return c >= 0;
    }
}

static int eval_compare(const expr *e, struct eval_ctx *cx, const value *l, const value *r,
                        value *out)
{
    enum expr_op op = (enum expr_op)e->op;
    bool ln = value_is_null(l), rn = value_is_null(r);
    if (ln || rn) {
        if (op == EOP_IS || op == EOP_IS_NOT)
            *out = value_bool((ln && rn) == (op == EOP_IS));
        else
            *out = value_null();
        return LDB_OK;
    }
    int c, rc = sqlv_compare(l, r, (enum col_type)e->aff, (enum ldb_collation)e->coll, &c);
    if (rc)
        return fail(cx, e, rc);
    *out = value_bool(compare_result(op, c));
    return LDB_OK;
}

/* ---- logic ---------------------------------------------------------------------------- */

/* AND / OR as a truth value, the right side only when it matters. */
static int logic_truth(const expr *e, struct eval_ctx *cx, int *t)
{
    bool is_and = e->op == EOP_AND;
    int a, b, rc = expr_eval_truth(e->args[0], cx, &a);
    if (rc)
        return rc;
    if (a == (is_and ? 0 : 1)) {
        *t = !is_and;
        return LDB_OK;
    }
    if ((rc = expr_eval_truth(e->args[1], cx, &b)))
        return rc;
    if (b == (is_and ? 0 : 1))
        *t = !is_and;
    else
        *t = (a < 0 || b < 0) ? -1 : is_and;
    return LDB_OK;
}

static int eval_logic(const expr *e, struct eval_ctx *cx, value *out)
{
    int t, rc = logic_truth(e, cx, &t);
    if (rc == LDB_OK)
        *out = truth_value(t);
    return rc;
}

static int eval_binary(const expr *e, struct eval_ctx *cx, value *out)
{
    if (e->op == EOP_AND || e->op == EOP_OR)
        return eval_logic(e, cx, out);
    value l, r;
    int rc = expr_eval(e->args[0], cx, &l);
    if (rc)
        return rc;
    if ((rc = expr_eval(e->args[1], cx, &r))) {
        value_release(&l);
        return rc;
    }
    switch (e->op) {
    case EOP_EQ: case EOP_NE: case EOP_LT: case EOP_LE:
    case EOP_GT: case EOP_GE: case EOP_IS: case EOP_IS_NOT:
        rc = eval_compare(e, cx, &l, &r, out);
        break;
    case EOP_CONCAT:
        if (value_is_null(&l) || value_is_null(&r))
            *out = value_null();
        else if ((rc = sqlv_concat(&l, &r, out)))
            rc = fail(cx, e, rc == LDB_RANGE ? sqlv_error(cx->err, LDB_ERROR,
                                                         "string or blob too big")
                                             : rc);
        break;
    default:
        if ((rc = sqlv_arith((enum expr_op)e->op, &l, &r, out, cx->err)))
            rc = fail(cx, e, rc);
        break;
    }
    value_release(&l);
    value_release(&r);
    return rc;
}

static int eval_unary(const expr *e, struct eval_ctx *cx, value *out)
{
    value a;
    int rc = expr_eval(e->args[0], cx, &a);
    if (rc)
        return rc;
    switch (e->op) {
    case EOP_NEG:
        if ((rc = sqlv_negate(&a, out, cx->err)))
            rc = fail(cx, e, rc);
        break;
    case EOP_BITNOT:
        rc = sqlv_bitnot(&a, out);
        break;
    case EOP_NOT: {
        int t = sql_truth(&a);
        *out = t < 0 ? value_null() : value_bool(!t);
        break;
    }
    case EOP_ISNULL:
        *out = value_bool(value_is_null(&a));
        break;
    default: /* EOP_NOTNULL */
        *out = value_bool(!value_is_null(&a));
        break;
    }
    value_release(&a);
    return rc;
}

/* ---- BETWEEN, IN, LIKE, CASE ------------------------------------------------------------ */

/* The truth of x >= v (low) or x <= v. */
static int bound_cmp(const expr *e, struct eval_ctx *cx, const value *x, const value *v,
                     enum col_type aff, enum ldb_collation coll, bool low, int *t)
{
    int c, rc;
    if (value_is_null(v))
        *t = -1;
    else if ((rc = sqlv_compare(x, v, aff, coll, &c)))
        return fail(cx, e, rc);
    else
        *t = low ? c >= 0 : c <= 0;
    return LDB_OK;
}

/* The truth of x OP bound (OP a comparison) with bound evaluated here. */
static int bound_truth(const expr *e, struct eval_ctx *cx, const value *x, const expr *bound,
                       enum col_type aff, enum ldb_collation coll, bool low, int *t)
{
    value v;
    int rc = expr_eval(bound, cx, &v);
    if (rc == LDB_OK)
        rc = bound_cmp(e, cx, x, &v, aff, coll, low, t);
    value_release(&v);
    return rc;
}

/* BETWEEN's truth from its two bounds' truths. */
static int between_result(const expr *e, int lo, int hi)
{
    int t = lo == 0 || hi == 0 ? 0 : (lo < 0 || hi < 0) ? -1 : 1;
    return e->flags & EXPR_NEGATED && t >= 0 ? !t : t;
}

static int eval_between(const expr *e, struct eval_ctx *cx, value *out)
{
    value x;
    int rc = expr_eval(e->args[0], cx, &x);
    if (rc)
        return rc;
    int lo = -1, hi = -1;
    if (value_is_null(&x)) {
        *out = value_null();
        value_release(&x);
        return LDB_OK;
    }
    rc = bound_truth(e, cx, &x, e->args[1], (enum col_type)e->aff, (enum ldb_collation)e->coll,
                     true, &lo);
    if (rc == LDB_OK && lo != 0)
        rc = bound_truth(e, cx, &x, e->args[2], (enum col_type)e->aff2,
                         (enum ldb_collation)e->u.coll_hi, false, &hi);
    value_release(&x);
    if (rc)
        return rc;
    *out = truth_value(between_result(e, lo, hi));
    return LDB_OK;
}

static int negated_truth(const expr *e, int t)
{
    return (e->flags & EXPR_NEGATED) && t >= 0 ? !t : t;
}

static int eval_in_list(const expr *e, struct eval_ctx *cx, value *out)
{
    value x;
    int rc = expr_eval(e->args[0], cx, &x);
    if (rc)
        return rc;
    if (value_is_null(&x)) {
        *out = value_null(); /* the list is never empty here */
        return LDB_OK;
    }
    bool found = false, has_null = false;
    for (uint32_t i = 1; i < e->nargs && !found && rc == LDB_OK; i++) {
        value v;
        if ((rc = expr_eval(e->args[i], cx, &v)))
            break;
        int c = 1;
        if (value_is_null(&v))
            has_null = true;
        else if ((rc = sqlv_compare(&x, &v, (enum col_type)e->aff,
                                    (enum ldb_collation)e->coll, &c)))
            rc = fail(cx, e, rc);
        found = c == 0;
        value_release(&v);
    }
    value_release(&x);
    if (rc)
        return rc;
    *out = truth_value(negated_truth(e, found ? 1 : has_null ? -1 : 0));
    return LDB_OK;
}

/* Evaluates the LIKE operands; false in *null when one is NULL. */
static int eval_like(const expr *e, struct eval_ctx *cx, value *out)
{
    value v[3] = { value_null(), value_null(), value_null() };
    int rc = LDB_OK;
    bool null = false;
    for (uint32_t i = 0; i < e->nargs && rc == LDB_OK && !null; i++) {
        rc = expr_eval(e->args[i], cx, &v[i]);
        null = rc == LDB_OK && value_is_null(&v[i]);
    }
    if (rc == LDB_OK && null) {
        *out = value_null();
    } else if (rc == LDB_OK) {
        char b0[64], b1[64], b2[64];
        size_t n0, n1, n2 = 0;
        const char *s = sqlv_bytes(&v[0], b0, &n0), *pat = sqlv_bytes(&v[1], b1, &n1);
        const char *esc = e->nargs == 3 ? sqlv_bytes(&v[2], b2, &n2) : NULL;
        if (esc && (n2 == 0 || utf8_char_len(esc, n2) != n2)) {
            rc = fail(cx, e, sqlv_error(cx->err, LDB_ERROR,
                                        "ESCAPE expression must be a single character"));
        } else {
            bool m = e->op == EOP_LIKE ? sql_like(pat, n1, s, n0, esc, n2)
                                       : sql_glob(pat, n1, s, n0);
            *out = truth_value(negated_truth(e, m));
        }
    }
    for (int i = 0; i < 3; i++)
        value_release(&v[i]);
    return rc;
}

static int eval_case(const expr *e, struct eval_ctx *cx, value *out)
{
    uint32_t k = 0, nwhen = (e->nargs - e->u.c.has_base - e->u.c.has_else) / 2;
    value base = value_null();
    int rc = LDB_OK;
    if (e->u.c.has_base && (rc = expr_eval(e->args[k++], cx, &base)))
        return rc;
    const expr *chosen = e->u.c.has_else ? e->args[e->nargs - 1] : NULL;
    for (uint32_t i = 0; i < nwhen && rc == LDB_OK; i++, k += 2) {
        int t = 0;
        if (!e->u.c.has_base) {
            rc = expr_eval_truth(e->args[k], cx, &t);
        } else if (!value_is_null(&base)) {
            value w;
            if ((rc = expr_eval(e->args[k], cx, &w)))
                break;
            int c = 1;
            if (!value_is_null(&w) &&
                (rc = sqlv_compare(&base, &w, (enum col_type)e->aff,
                                   (enum ldb_collation)e->u.c.when_coll[i], &c)))
                rc = fail(cx, e, rc);
            value_release(&w);
            t = c == 0;
        }
        if (rc == LDB_OK && t == 1) {
            chosen = e->args[k + 1];
            break;
        }
    }
    value_release(&base);
    if (rc)
        return rc;
    if (!chosen) {
        *out = value_null();
        return LDB_OK;
    }
    return expr_eval(chosen, cx, out);
}

/* ---- calls and subqueries ------------------------------------------------------------------ */

#define SMALL_ARGS 8

/* Evaluates n expressions into vals (which has room). */
static int eval_list(struct expr *const *es, uint32_t n, struct eval_ctx *cx, value *vals)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = expr_eval(es[i], cx, &vals[i]);
        if (rc) {
            while (i-- > 0)
                value_release(&vals[i]);
            return rc;
        }
    }
    return LDB_OK;
}

static void release_list(value *vals, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        value_release(&vals[i]);
}

static int eval_call(const expr *e, struct eval_ctx *cx, value *out)
{
    const struct func_def *fn = e->u.fn;
    if (func_is_aggregate(fn))
        return fail(cx, e, sqlv_error(cx->err, LDB_INTERNAL,
                                      "aggregate %s() evaluated as a scalar", fn->name));
    if (fn->flags & FUNC_LAZY) {
        int rc = fn->lazy(cx, e, out);
        return rc ? fail(cx, e, rc) : LDB_OK;
    }
    value small[SMALL_ARGS], *args = small;
    if (e->nargs > SMALL_ARGS && !(args = mem_alloc(e->nargs * sizeof *args)))
        return fail(cx, e, LDB_NOMEM);
    int rc = eval_list(e->args, e->nargs, cx, args);
    if (rc == LDB_OK) {
        if ((rc = fn->scalar(cx, args, e->nargs, out)))
            rc = fail(cx, e, rc);
        release_list(args, e->nargs);
    }
    if (args != small)
        mem_free(args);
    return rc;
}

static int eval_subquery(const expr *e, struct eval_ctx *cx, value *out)
{
    if (!cx->sub.run)
        return fail(cx, e, sqlv_error(cx->err, LDB_INTERNAL,
                                      "a subquery cannot be evaluated here"));
    uint32_t n = e->u.sq.ncaptures;
    value small[SMALL_ARGS], *caps = small, operand = value_null();
    if (n > SMALL_ARGS && !(caps = mem_alloc(n * sizeof *caps)))
        return fail(cx, e, LDB_NOMEM);
    int rc = eval_list(e->u.sq.captures, n, cx, caps);
    if (rc == LDB_OK && e->u.sq.kind == SUBQ_IN && (rc = expr_eval(e->args[0], cx, &operand)))
        release_list(caps, n);
    if (rc == LDB_OK) {
        rc = cx->sub.run(cx->sub.ctx, cx, e, caps, &operand, out);
        if (rc)
            rc = fail(cx, e, rc);
        release_list(caps, n);
        value_release(&operand);
    }
    if (caps != small)
        mem_free(caps);
    return rc;
}

static int eval_field(const expr *e, struct eval_ctx *cx, value *out)
{
    value a;
    int rc = expr_eval(e->args[0], cx, &a);
    if (rc)
        return rc;
    bool in = value_type(&a) == LDB_ARRAY && e->u.index < value_len(&a);
    *out = in ? value_copy(value_item(&a, e->u.index)) : value_null();
    value_release(&a);
    return LDB_OK;
}

static int read_slot(const expr *e, struct eval_ctx *cx, const value *vals, uint32_t n,
                     uint32_t i, value *out)
{
    if (i >= n)
        return fail(cx, e, sqlv_error(cx->err, LDB_INTERNAL,
                                      "expression reads slot %u of %u", i, n));
    *out = value_copy(&vals[i]);
    return LDB_OK;
}

int expr_eval(const expr *e, struct eval_ctx *cx, value *out)
{
    *out = value_null();
    switch ((enum expr_kind)e->kind) {
    case EXPR_CONST:
        *out = value_copy(&e->u.v);
        return LDB_OK;
    case EXPR_COLUMN:
        return read_slot(e, cx, cx->row, cx->ncols, e->u.index, out);
    case EXPR_OUTER:
        return read_slot(e, cx, cx->outer, cx->nouter, e->u.index, out);
    case EXPR_PARAM:
        /* an unbound parameter is NULL (SQLite) */
        if (e->u.index >= 1 && e->u.index <= cx->nparams)
            *out = value_copy(&cx->params[e->u.index - 1]);
        return LDB_OK;
    case EXPR_UNARY: return eval_unary(e, cx, out);
    case EXPR_BINARY: return eval_binary(e, cx, out);
    case EXPR_BETWEEN: return eval_between(e, cx, out);
    case EXPR_IN_LIST: return eval_in_list(e, cx, out);
    case EXPR_LIKE: return eval_like(e, cx, out);
    case EXPR_CASE: return eval_case(e, cx, out);
    case EXPR_CAST: {
        value a;
        int rc = expr_eval(e->args[0], cx, &a);
        if (rc)
            return rc;
        rc = sqlv_cast(&a, e->u.cast_to, out, cx->err);
        value_release(&a);
        return rc ? fail(cx, e, rc) : LDB_OK;
    }
    case EXPR_CALL: return eval_call(e, cx, out);
    case EXPR_SUBQUERY: return eval_subquery(e, cx, out);
    case EXPR_FIELD: return eval_field(e, cx, out);
    }
    return fail(cx, e, LDB_INTERNAL);
}

/* The value of a leaf without copying it, or NULL for any other node. */
static const value *peek(const expr *e, const struct eval_ctx *cx)
{
    switch ((enum expr_kind)e->kind) {
    case EXPR_CONST: return &e->u.v;
    case EXPR_COLUMN: return e->u.index < cx->ncols ? &cx->row[e->u.index] : NULL;
    case EXPR_OUTER: return e->u.index < cx->nouter ? &cx->outer[e->u.index] : NULL;
    default: return NULL;
    }
}

/* A comparison of two leaves, the commonest condition, without copies:
 * false when e is not one. */
static bool leaf_compare(const expr *e, struct eval_ctx *cx, int *truth, int *rc)
{
    if (e->kind != EXPR_BINARY || e->op < EOP_EQ || e->op > EOP_GE)
        return false;
    const value *l = peek(e->args[0], cx), *r = peek(e->args[1], cx);
    if (!l || !r)
        return false;
    int c;
    *rc = LDB_OK;
    if (value_is_null(l) || value_is_null(r))
        *truth = -1;
    else if (value_type(l) == LDB_INTEGER && value_type(r) == LDB_INTEGER)
        *truth = compare_result((enum expr_op)e->op, (l->h.u.i > r->h.u.i) - (l->h.u.i < r->h.u.i));
    else if ((*rc = sqlv_compare(l, r, (enum col_type)e->aff, (enum ldb_collation)e->coll, &c)))
        *rc = fail(cx, e, *rc);
    else
        *truth = compare_result((enum expr_op)e->op, c);
    return true;
}

/* BETWEEN over three leaves (a column between constants: range filters)
 * without copies: false when e is not one. */
static bool leaf_between(const expr *e, struct eval_ctx *cx, int *truth, int *rc)
{
    if (e->kind != EXPR_BETWEEN)
        return false;
    const value *x = peek(e->args[0], cx), *lo = peek(e->args[1], cx),
                *hi = peek(e->args[2], cx);
    if (!x || !lo || !hi)
        return false;
    int tl = -1, th = -1;
    *rc = LDB_OK;
    if (value_is_null(x)) {
        *truth = -1;
        return true;
    }
    *rc = bound_cmp(e, cx, x, lo, (enum col_type)e->aff, (enum ldb_collation)e->coll, true, &tl);
    if (*rc == LDB_OK && tl != 0)
        *rc = bound_cmp(e, cx, x, hi, (enum col_type)e->aff2, (enum ldb_collation)e->u.coll_hi,
                        false, &th);
    if (*rc == LDB_OK)
        *truth = between_result(e, tl, th);
    return true;
}

int expr_eval_truth(const expr *e, struct eval_ctx *cx, int *truth)
{
    int rc;
    if (leaf_compare(e, cx, truth, &rc) || leaf_between(e, cx, truth, &rc))
        return rc;
    if (e->kind == EXPR_BINARY && (e->op == EOP_AND || e->op == EOP_OR))
        return logic_truth(e, cx, truth);
    value v;
    if ((rc = expr_eval(e, cx, &v)))
        return rc;
    *truth = sql_truth(&v);
    value_release(&v);
    return LDB_OK;
}
