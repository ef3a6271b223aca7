/*
 * test_differential.c - livedb against SQLite on random schemas, data and
 * queries, over the features whose semantics the two share (SQL.md).
 *
 * Each round draws 2-4 tables (INTEGER, REAL and TEXT columns, some with an
 * INTEGER PRIMARY KEY, some indexes), fills them with small values, NULLs
 * and duplicates, loads the same script into both engines, then runs
 * random queries and random INSERT/UPDATE/DELETE statements on both,
 * comparing query results, statement outcomes and whole tables.
 *
 * Keeping the comparison exact: the generator is typed (every expression
 * is INTEGER, REAL, TEXT or boolean by construction) so that no value
 * crosses types where SQLite's affinity rules and livedb's differ; values
 * stay small so no INTEGER overflows; REALs are multiples of 1/4 and REAL
 * expressions never divide, so every sum is exact in any order and avg is
 * one rounding in both engines: REALs are compared bit for bit (-0.0 as
 * 0.0, which SQLite does not keep apart). Booleans are compared as 1/0
 * (SQLite's form): the text form of tests/sqlite_cmp.h. Results are compared as sorted bags, or as lists under
 * an ORDER BY of every output column (identical rows tie, so the order is
 * total). Integer division and modulo by zero give NULL in both.
 *
 * A mismatch prints the round's seed, its schema and data as a script,
 * the statement, and both results: enough to replay and minimize it.
 * LDB_SEED replays a run; LDB_TEST_SCALE multiplies the rounds.
 *
 * The random schemas have no collations; a fixed table of cases
 * (collations(), at the end) covers them, through live queries and
 * materialized views too.
 */
#include "test.h"

#include "base/strbuf.h"
#include "livedb.h"
#include "sqlite_cmp.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>

#define ROUNDS 120
#define QUERIES_PER_ROUND 150
#define WRITES_PER_ROUND 40
#define MAX_TABLES 4
#define MAX_COLS 5
#define MAX_REPORTS 5

enum ty { TY_INT, TY_REAL, TY_TEXT, TY_BOOL };

#define NAME_SIZE 16

typedef struct col {
    char name[NAME_SIZE];
    enum ty ty;
} col;

typedef struct table {
    char name[NAME_SIZE];
    int ncol;
    col cols[MAX_COLS];
    bool pk; /* cols[0] is an INTEGER PRIMARY KEY */
} table;

/* A FROM item visible to expressions: its alias and table. */
typedef struct scope scope;
struct scope {
    int n;
    char alias[MAX_TABLES][NAME_SIZE];
    const table *t[MAX_TABLES];
    const scope *outer; /* for correlated subqueries */
};

typedef struct gen {
    rng r;
    int ntab;
    table tabs[MAX_TABLES];
    int next_alias; /* aliases are unique in a whole statement */
    int sub_depth;
    const table *avoid; /* the table an UPDATE or DELETE writes: subqueries
                           skip it */
    bool no_avg;        /* a value a write stores: no avg() (see gen_write) */
} gen;

static const char *const texts[] = { "a", "b", "B", "ab", "abc", "", "ba", "z" };

static int pick(gen *g, int n) { return (int)rng_below(&g->r, (uint64_t)n); }
static bool chance(gen *g, unsigned num, unsigned den) { return rng_chance(&g->r, num, den); }

/* A table for a FROM item (never g->avoid). */
static const table *pick_table(gen *g)
{
    const table *t;
    do
        t = &g->tabs[pick(g, g->ntab)];
    while (t == g->avoid);
    return t;
}

/* ---- schema and data -------------------------------------------------------- */

static void gen_schema(gen *g, strbuf *ddl)
{
    g->ntab = 2 + pick(g, 3);
    for (int i = 0; i < g->ntab; i++) {
        table *t = &g->tabs[i];
        snprintf(t->name, sizeof t->name, "t%d", i);
        t->ncol = 2 + pick(g, MAX_COLS - 1);
        t->pk = chance(g, 1, 2);
        sb_printf(ddl, "CREATE TABLE %s(", t->name);
        for (int c = 0; c < t->ncol; c++) {
            col *k = &t->cols[c];
            snprintf(k->name, sizeof k->name, "c%d", c);
            k->ty = c == 0 && t->pk ? TY_INT : (enum ty)pick(g, 3);
            static const char *const names[] = { "INTEGER", "REAL", "TEXT" };
            sb_printf(ddl, "%s%s %s%s", c ? ", " : "", k->name, names[k->ty],
                      c == 0 && t->pk ? " PRIMARY KEY" : "");
        }
        sb_puts(ddl, ");\n");
        for (int c = t->pk; c < t->ncol; c++)
            if (chance(g, 1, 3))
                sb_printf(ddl, "CREATE INDEX %s_%s ON %s(%s);\n", t->name, t->cols[c].name,
                          t->name, t->cols[c].name);
    }
}

static void literal(gen *g, enum ty ty, strbuf *sb)
{
    switch (ty) {
    case TY_INT: sb_printf(sb, "%d", (int)rng_range(&g->r, -5, 12)); break;
    case TY_REAL: sb_printf(sb, "%.2f", (double)rng_range(&g->r, -20, 40) / 4); break;
    default: sb_printf(sb, "'%s'", texts[pick(g, 8)]);
    }
}

/* One row of values for t; the primary key is drawn from a small range, so
 * some inserts collide (and must fail in both engines). */
static void gen_row(gen *g, const table *t, strbuf *sb)
{
    sb_putc(sb, '(');
    for (int c = 0; c < t->ncol; c++) {
        if (c)
            sb_puts(sb, ", ");
        if (c == 0 && t->pk)
            sb_printf(sb, "%d", (int)rng_range(&g->r, 1, 60));
        else if (chance(g, 1, 6))
            sb_puts(sb, "NULL");
        else
            literal(g, t->cols[c].ty, sb);
    }
    sb_putc(sb, ')');
}

/* Rows one statement each (a colliding key just fails that one). */
static void gen_data(gen *g, strbuf *sb)
{
    for (int i = 0; i < g->ntab; i++) {
        int n = pick(g, 21);
        for (int k = 0; k < n; k++) {
            sb_printf(sb, "INSERT INTO %s VALUES ", g->tabs[i].name);
            gen_row(g, &g->tabs[i], sb);
            sb_puts(sb, ";\n");
        }
    }
}

/* ---- expressions ------------------------------------------------------------ */

static void gen_expr(gen *g, const scope *sc, enum ty ty, int depth, strbuf *sb);
static void gen_query(gen *g, const scope *outer, int ncols, const enum ty *tys, strbuf *sb,
                      bool top);

/* A column of type ty from sc (or an outer scope); false if none. */
static bool column(gen *g, const scope *sc, enum ty ty, strbuf *sb)
{
    const scope *s = sc->outer && chance(g, 1, 3) ? sc->outer : sc;
    for (int tries = 0; tries < 8; tries++) {
        int i = pick(g, s->n);
        const table *t = s->t[i];
        int c = pick(g, t->ncol);
        if (t->cols[c].ty == ty) {
            sb_printf(sb, "%s.%s", s->alias[i], t->cols[c].name);
            return true;
        }
    }
    return false;
}

static void new_alias(gen *g, char out[NAME_SIZE])
{
    snprintf(out, NAME_SIZE, "a%d", g->next_alias++);
}

/* (SELECT agg(...) FROM t AS aN [WHERE ...]): one row, type ty. */
static void scalar_subquery(gen *g, const scope *sc, enum ty ty, strbuf *sb)
{
    scope in = { 1, { "" }, { pick_table(g) }, sc };
    new_alias(g, in.alias[0]);
    g->sub_depth++;
    static const char *const int_aggs[] = { "count", "min", "max", "sum" };
    static const char *const real_aggs[] = { "avg", "total", "min", "max", "sum" };
    sb_puts(sb, "(SELECT ");
    if (ty == TY_INT && chance(g, 1, 4)) {
        sb_puts(sb, "count(*)");
    } else {
        enum ty arg = ty;
        const char *agg = ty == TY_INT ? int_aggs[pick(g, 4)]
                        : ty == TY_REAL ? real_aggs[g->no_avg + pick(g, 5 - g->no_avg)]
                        : (chance(g, 1, 2) ? "min" : "max");
        if (ty == TY_REAL && (strcmp(agg, "avg") == 0 || strcmp(agg, "total") == 0))
            arg = chance(g, 1, 2) ? TY_INT : TY_REAL;
        if (strcmp(agg, "count") == 0)
            arg = (enum ty)pick(g, 3);
        sb_printf(sb, "%s(", agg);
        scope only = in;
        only.outer = NULL;
        int depth = g->sub_depth;
        g->sub_depth = 2; /* no subquery in the argument: see aggregate() */
        gen_expr(g, &only, arg, 1, sb);
        g->sub_depth = depth;
        sb_putc(sb, ')');
    }
    sb_printf(sb, " FROM %s AS %s", in.t[0]->name, in.alias[0]);
    if (chance(g, 3, 4)) {
        sb_puts(sb, " WHERE ");
        gen_expr(g, &in, TY_BOOL, 2, sb);
    }
    sb_putc(sb, ')');
    g->sub_depth--;
}

static void gen_int(gen *g, const scope *sc, int depth, strbuf *sb)
{
    int k = depth <= 0 ? pick(g, 2) : pick(g, 11);
    if (k == 0 && column(g, sc, TY_INT, sb))
        return;
    if (k <= 1) {
        literal(g, TY_INT, sb);
        return;
    }
    static const char *const ops[] = { "+", "-", "*", "/", "%" };
    switch (k) {
    case 2: case 3: case 4:
        sb_putc(sb, '(');
        gen_int(g, sc, depth - 1, sb);
        sb_printf(sb, " %s ", ops[pick(g, 5)]);
        gen_int(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    case 5: /* "-(", as "--" would start a comment */
        sb_puts(sb, "-(");
        gen_int(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    case 6:
        sb_puts(sb, "abs(");
        gen_int(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    case 7:
        sb_puts(sb, "length(");
        gen_expr(g, sc, TY_TEXT, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    default:
        gen_expr(g, sc, TY_INT, depth, sb); /* CASE, COALESCE, subquery */
    }
}

static void gen_real(gen *g, const scope *sc, int depth, strbuf *sb)
{
    int k = depth <= 0 ? pick(g, 2) : pick(g, 8);
    if (k == 0 && column(g, sc, TY_REAL, sb))
        return;
    if (k <= 1) {
        literal(g, TY_REAL, sb);
        return;
    }
    static const char *const ops[] = { "+", "-", "*" };
    switch (k) {
    case 2: case 3:
        sb_putc(sb, '(');
        gen_real(g, sc, depth - 1, sb);
        sb_printf(sb, " %s ", ops[pick(g, 3)]);
        if (chance(g, 1, 3))
            gen_int(g, sc, depth - 1, sb);
        else
            gen_real(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    case 4:
        sb_puts(sb, "-(");
        gen_real(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    default:
        gen_expr(g, sc, TY_REAL, depth, sb);
    }
}

static void gen_text(gen *g, const scope *sc, int depth, strbuf *sb)
{
    int k = depth <= 0 ? pick(g, 2) : pick(g, 7);
    if (k == 0 && column(g, sc, TY_TEXT, sb))
        return;
    if (k <= 1) {
        literal(g, TY_TEXT, sb);
        return;
    }
    switch (k) {
    case 2:
        sb_putc(sb, '(');
        gen_text(g, sc, depth - 1, sb);
        sb_puts(sb, " || ");
        gen_text(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    case 3:
        sb_puts(sb, chance(g, 1, 2) ? "upper(" : "lower(");
        gen_text(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    default:
        gen_expr(g, sc, TY_TEXT, depth, sb);
    }
}

static enum ty value_type(gen *g) { return (enum ty)pick(g, 3); }

static void gen_bool(gen *g, const scope *sc, int depth, strbuf *sb)
{
    static const char *const cmps[] = { "=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT" };
    enum ty ty = value_type(g);
    int k = depth <= 0 ? pick(g, 2) : pick(g, 12);
    switch (k) {
    case 0: case 1: case 2:
        gen_expr(g, sc, ty, depth - 1, sb);
        sb_printf(sb, " %s ", cmps[pick(g, 8)]);
        gen_expr(g, sc, ty, depth - 1, sb);
        return;
    case 3:
        gen_expr(g, sc, ty, depth - 1, sb);
        sb_puts(sb, chance(g, 1, 2) ? " IS NULL" : " IS NOT NULL");
        return;
    case 4:
        gen_expr(g, sc, ty, depth - 1, sb);
        sb_puts(sb, chance(g, 1, 3) ? " NOT BETWEEN " : " BETWEEN ");
        gen_expr(g, sc, ty, depth - 1, sb);
        sb_puts(sb, " AND ");
        gen_expr(g, sc, ty, depth - 1, sb);
        return;
    case 5: {
        gen_expr(g, sc, ty, depth - 1, sb);
        sb_puts(sb, chance(g, 1, 3) ? " NOT IN (" : " IN (");
        int n = pick(g, 4);
        for (int i = 0; i < n; i++) {
            if (i)
                sb_puts(sb, ", ");
            if (chance(g, 1, 8))
                sb_puts(sb, "NULL");
            else
                literal(g, ty, sb);
        }
        sb_putc(sb, ')');
        return;
    }
    case 6:
        if (g->sub_depth < 2) {
            gen_expr(g, sc, ty, depth - 1, sb);
            sb_puts(sb, chance(g, 1, 3) ? " NOT IN (" : " IN (");
            gen_query(g, sc, 1, &ty, sb, false);
            sb_putc(sb, ')');
            return;
        }
        break;
    case 7:
        if (g->sub_depth < 2) {
            sb_puts(sb, chance(g, 1, 3) ? "NOT EXISTS (" : "EXISTS (");
            gen_query(g, sc, 1, &ty, sb, false);
            sb_putc(sb, ')');
            return;
        }
        break;
    case 8:
        sb_puts(sb, "NOT (");
        gen_bool(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    default:
        sb_putc(sb, '(');
        gen_bool(g, sc, depth - 1, sb);
        sb_puts(sb, chance(g, 1, 2) ? " AND " : " OR ");
        gen_bool(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    }
    gen_expr(g, sc, ty, 0, sb);
    sb_puts(sb, " IS NULL");
}

/* Any expression of type ty, including the forms shared by all types:
 * CASE, COALESCE, NULL and scalar subqueries. */
static void gen_expr(gen *g, const scope *sc, enum ty ty, int depth, strbuf *sb)
{
    if (ty == TY_BOOL) {
        gen_bool(g, sc, depth, sb);
        return;
    }
    int k = depth <= 0 ? 9 : pick(g, 12);
    switch (k) {
    case 0:
        sb_puts(sb, "CASE WHEN ");
        gen_bool(g, sc, depth - 1, sb);
        sb_puts(sb, " THEN ");
        gen_expr(g, sc, ty, depth - 1, sb);
        if (chance(g, 2, 3)) {
            sb_puts(sb, " ELSE ");
            gen_expr(g, sc, ty, depth - 1, sb);
        }
        sb_puts(sb, " END");
        return;
    case 1:
        sb_puts(sb, "COALESCE(");
        gen_expr(g, sc, ty, depth - 1, sb);
        sb_puts(sb, ", ");
        gen_expr(g, sc, ty, depth - 1, sb);
        sb_putc(sb, ')');
        return;
    case 2:
        if (g->sub_depth < 2) {
            scalar_subquery(g, sc, ty, sb);
            return;
        }
        break;
    case 3:
        if (chance(g, 1, 3)) {
            sb_puts(sb, "NULL");
            return;
        }
        break;
    default:
        break;
    }
    int d = k == 9 ? 0 : depth;
    if (ty == TY_INT)
        gen_int(g, sc, d, sb);
    else if (ty == TY_REAL)
        gen_real(g, sc, d, sb);
    else
        gen_text(g, sc, d, sb);
}

/* ---- queries ---------------------------------------------------------------- */

/* A scope of the single item i of sc. */
static scope single(const scope *sc, int i)
{
    scope one = { 1, { "" }, { sc->t[i] }, NULL };
    memcpy(one.alias[0], sc->alias[i], sizeof one.alias[0]);
    return one;
}

/* A column of l and one of r for an ON clause: the same type when the
 * tables have one in common. Returns the type of the right one. */
static enum ty join_columns(gen *g, const scope *l, const scope *r, strbuf *lc, strbuf *rc)
{
    for (int tries = 0; tries < 16; tries++) {
        enum ty ty = value_type(g);
        sb_truncate(lc, 0);
        sb_truncate(rc, 0);
        if (column(g, l, ty, lc) && column(g, r, ty, rc))
            return ty;
    }
    sb_truncate(lc, 0);
    sb_truncate(rc, 0);
    const table *lt = l->t[0], *rt = r->t[0];
    sb_printf(lc, "%s.%s", l->alias[0], lt->cols[0].name);
    sb_printf(rc, "%s.%s", r->alias[0], rt->cols[0].name);
    return lt->cols[0].ty == rt->cols[0].ty ? lt->cols[0].ty : TY_BOOL;
}

/* ON left.x = right.y [AND (a condition on both OR left.x IS NULL)].
 * Every AND term of an ON clause has a column: SQLite 3.40 drops every
 * row of "a JOIN b ON <constant false term> RIGHT JOIN c ON ..." (a bug
 * of its RIGHT JOIN, fixed later), which would read as a livedb error. */
static void join_condition(gen *g, const scope *sc, int left, int right, strbuf *sb)
{
    scope l = single(sc, left), r = single(sc, right), both = l;
    both.n = 2;
    both.t[1] = r.t[0];
    memcpy(both.alias[1], r.alias[0], sizeof both.alias[1]);
    strbuf lc = STRBUF_INIT, rc = STRBUF_INIT;
    enum ty ty = join_columns(g, &l, &r, &lc, &rc);
    if (ty == TY_BOOL) /* no common type */
        sb_printf(sb, " ON %s IS NOT NULL AND %s IS NOT NULL", sb_str(&lc), sb_str(&rc));
    else
        sb_printf(sb, " ON %s = %s", sb_str(&lc), sb_str(&rc));
    if (chance(g, 1, 4)) {
        sb_puts(sb, " AND (");
        gen_bool(g, &both, 1, sb);
        sb_printf(sb, " OR %s IS NULL)", sb_str(&lc));
    }
    sb_free(&lc);
    sb_free(&rc);
}

/* FROM: 1-3 tables joined by comma, CROSS, INNER, LEFT, RIGHT or FULL
 * joins; fills sc. Returns true when there is a LEFT JOIN. */
static bool gen_from(gen *g, scope *sc, int max_items, strbuf *sb)
{
    static const char *const joins[] = { ", ", " CROSS JOIN ", " JOIN ", " LEFT JOIN ",
                                         " RIGHT JOIN ", " FULL JOIN ", " INNER JOIN " };
    int n = 1 + pick(g, max_items);
    bool left = false;
    sc->n = 0;
    sb_puts(sb, " FROM ");
    for (int i = 0; i < n; i++) {
        int j = i == 0 ? -1 : pick(g, 7);
        if (i)
            sb_puts(sb, joins[j]);
        sc->t[i] = pick_table(g);
        new_alias(g, sc->alias[i]);
        sc->n = i + 1;
        sb_printf(sb, "%s AS %s", sc->t[i]->name, sc->alias[i]);
        if (j >= 2)
            join_condition(g, sc, pick(g, i), i, sb);
        left = left || j == 3;
    }
    return left;
}

/* ORDER BY every column, then LIMIT [OFFSET] if limit. */
static void order_by_all(gen *g, int ncols, bool limit, strbuf *sb)
{
    sb_puts(sb, " ORDER BY ");
    for (int i = 0; i < ncols; i++)
        sb_printf(sb, "%s%d%s", i ? ", " : "", i + 1, chance(g, 1, 3) ? " DESC" : "");
    if (limit && chance(g, 2, 3)) {
        sb_printf(sb, " LIMIT %d", pick(g, 12));
        if (chance(g, 1, 2))
            sb_printf(sb, " OFFSET %d", pick(g, 5));
    }
}

/* The aggregate call itself (see aggregate). */
static void aggregate_call(gen *g, const scope *sc, enum ty ty, strbuf *sb)
{
    scope local = *sc;
    local.outer = NULL;
    if (ty == TY_INT) {
        int k = pick(g, 5);
        if (k == 0) {
            sb_puts(sb, "count(*)");
            return;
        }
        static const char *const f[] = { "", "count(", "count(DISTINCT ", "sum(", "max(" };
        sb_puts(sb, f[k]);
        gen_expr(g, &local, k <= 2 ? value_type(g) : TY_INT, 1, sb);
    } else if (ty == TY_REAL) {
        static const char *const f[] = { "avg(", "total(", "sum(", "min(", "avg(DISTINCT " };
        int k = pick(g, 5);
        sb_puts(sb, f[k]);
        gen_expr(g, &local, k == 2 || k == 3 || chance(g, 1, 2) ? TY_REAL : TY_INT, 1, sb);
    } else {
        sb_puts(sb, chance(g, 1, 2) ? "min(" : "max(");
        gen_expr(g, &local, TY_TEXT, 1, sb);
    }
    sb_putc(sb, ')');
}

/* An aggregate of type ty over the rows of sc. Its argument has no
 * subquery: an avg() there is not a multiple of 1/4, and summing such
 * values depends on the order (SQLite adds in scan order, livedb
 * exactly). */
static void aggregate(gen *g, const scope *sc, enum ty ty, strbuf *sb)
{
    int depth = g->sub_depth;
    g->sub_depth = 2;
    aggregate_call(g, sc, ty, sb);
    g->sub_depth = depth;
}

/* A GROUP BY key: with a column of its own (a constant integer would
 * mean a column number) and no outer column (SQLite cannot resolve those
 * there). It may hold a scalar subquery correlated to the grouped rows
 * unless subqueries is false. */
static void gen_key(gen *g, const scope *sc, enum ty ty, bool subqueries, strbuf *key)
{
    scope local = *sc;
    local.outer = NULL;
    int depth = g->sub_depth;
    if (!subqueries)
        g->sub_depth = 2;
    for (;;) {
        sb_init(key);
        gen_expr(g, &local, ty, 1, key);
        if (strstr(sb_str(key), ".c")) /* a column: aN.cM */
            break;
        sb_free(key);
    }
    g->sub_depth = depth;
}

/* SELECT ... GROUP BY: the first k columns are the keys. */
static void gen_grouped(gen *g, const scope *outer, int ncols, const enum ty *tys, strbuf *sb,
                        bool top)
{
    scope sc = { 0, { "" }, { NULL }, outer };
    strbuf from = STRBUF_INIT, keys[MAX_COLS];
    gen_from(g, &sc, 2, &from);
    int nkeys = pick(g, ncols + 1);
    /* No subquery in a key when a key is REAL: SQLite 3.40 evaluates a
     * subquery key again for the result, on the group's stored columns,
     * and an index probe in it by an outer REAL column converts that
     * column in place (4.0 becomes 4), so a REAL key reading the column
     * shows an INTEGER. */
    bool sub_keys = true;
    for (int i = 0; i < nkeys; i++)
        sub_keys = sub_keys && tys[i] != TY_REAL;
    sb_puts(sb, "SELECT ");
    for (int i = 0; i < ncols; i++) {
        if (i)
            sb_puts(sb, ", ");
        if (i < nkeys) {
            gen_key(g, &sc, tys[i], sub_keys, &keys[i]);
            sb_puts(sb, sb_str(&keys[i]));
        } else {
            aggregate(g, &sc, tys[i], sb);
        }
    }
    sb_puts(sb, sb_str(&from));
    if (chance(g, 1, 2)) {
        sb_puts(sb, " WHERE ");
        gen_bool(g, &sc, 2, sb);
    }
    if (nkeys > 0) {
        sb_puts(sb, " GROUP BY ");
        for (int i = 0; i < nkeys; i++) {
            sb_printf(sb, "%s%s", i ? ", " : "", sb_str(&keys[i]));
            sb_free(&keys[i]);
        }
        if (chance(g, 1, 3)) {
            sb_puts(sb, " HAVING ");
            aggregate(g, &sc, TY_INT, sb);
            sb_printf(sb, " %s %d", chance(g, 1, 2) ? ">" : "<=", pick(g, 4));
        }
    }
    sb_free(&from);
    if (top && chance(g, 1, 3))
        order_by_all(g, ncols, true, sb);
}

static void gen_simple(gen *g, const scope *outer, int ncols, const enum ty *tys, strbuf *sb,
                       bool top)
{
    scope sc = { 0, { "" }, { NULL }, outer };
    strbuf from = STRBUF_INIT;
    bool left = gen_from(g, &sc, top ? 3 : 2, &from);
    sb_puts(sb, chance(g, 1, 4) ? "SELECT DISTINCT " : "SELECT ");
    for (int i = 0; i < ncols; i++) {
        if (i)
            sb_puts(sb, ", ");
        gen_expr(g, &sc, tys[i], 2, sb);
    }
    sb_puts(sb, sb_str(&from));
    sb_free(&from);
    if (chance(g, 3, 4)) {
        sb_puts(sb, " WHERE ");
        gen_bool(g, &sc, 3, sb);
    }
    /* No LIMIT over a LEFT JOIN: SQLite 3.40 loses rows under ORDER BY
     * ... LIMIT when it leaves out a LEFT JOIN that cannot change the
     * result (right side joined on its primary key, read nowhere else)
     * and reads a later table in the ORDER BY's order. With a(x INTEGER
     * PRIMARY KEY) holding 2 rows, b(y INTEGER PRIMARY KEY) none and
     * c(k INTEGER PRIMARY KEY, v, z, w) indexed on z holding 'b' and four
     * 'a', "SELECT c.z FROM a LEFT JOIN b ON a.x = b.y, c ORDER BY 1
     * DESC LIMIT 8" shows one 'b', not two. */
    if (top && chance(g, 1, 3))
        order_by_all(g, ncols, !left, sb);
}

/* A query with ncols columns of types tys; subqueries (top false) are
 * not compound, so that their ORDER BY questions never arise. */
static void gen_query(gen *g, const scope *outer, int ncols, const enum ty *tys, strbuf *sb,
                      bool top)
{
    g->sub_depth += !top;
    int k = pick(g, top ? 6 : 4);
    if (k >= 4) {
        static const char *const ops[] = { " UNION ", " UNION ALL ", " INTERSECT ", " EXCEPT " };
        gen_simple(g, outer, ncols, tys, sb, false);
        sb_puts(sb, ops[pick(g, 4)]);
        if (chance(g, 1, 2))
            gen_grouped(g, outer, ncols, tys, sb, false);
        else
            gen_simple(g, outer, ncols, tys, sb, false);
        if (chance(g, 1, 3))
            order_by_all(g, ncols, true, sb);
    } else if (k == 3) {
        gen_grouped(g, outer, ncols, tys, sb, top);
    } else {
        gen_simple(g, outer, ncols, tys, sb, top);
    }
    g->sub_depth -= !top;
}

/* ---- running on both engines -------------------------------------------------- */

typedef struct round {
    gen g;
    uint64_t seed;
    const char *script; /* schema and data, for reports */
    sqlite3 *sq;
    ldb *ld;
    long queries, writes, mismatches, unsupported, rejected, rows;
    strbuf log; /* the writes run so far in the round */
} round;

static void print_rows(const char *who, const cmp_result *r)
{
    if (!r->ok) {
        printf("#   %s: error: %s\n", who, r->msg);
        return;
    }
    printf("#   %s: %zu rows\n", who, r->n);
    for (size_t i = 0; i < r->n && i < 20; i++)
        printf("#     %s\n", r->rows[i]);
}

/* Prints title and text (if any), each line as a "#   " comment. */
static void print_lines(const char *title, const char *text)
{
    if (!*text)
        return;
    printf("# %s\n", title);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("#   %.*s\n", n, p);
        p += n + (nl != NULL);
    }
}

/* Mismatches still to print in the running case. */
static int reports_left;

static void mismatch(round *rd, const char *what, const char *sql, const cmp_result *s,
                     const cmp_result *l)
{
    rd->mismatches++;
    if (reports_left <= 0)
        return;
    reports_left--;
    printf("# MISMATCH (%s) in the round with seed %llu;\n", what,
           (unsigned long long)rd->seed);
    print_lines("schema and data:", rd->script);
    print_lines("writes run before the statement:", sb_str(&rd->log));
    printf("# statement:\n#   %s;\n", sql);
    print_rows("sqlite", s);
    print_rows("livedb", l);
}

/* Runs a query on both and compares. */
static void check_query(round *rd, const char *sql, bool ordered)
{
    cmp_result s, l;
    cmp_run_sqlite(rd->sq, sql, &s);
    cmp_run_livedb(rd->ld, sql, &l);
    rd->queries++;
    rd->rows += (long)s.n;
    if (!s.ok) {
        rd->rejected++; /* not a query both engines must run */
        if (getenv("LDB_DIFF_SHOW_REJECTED"))
            printf("# rejected by SQLite (%s): %s\n", s.msg, sql);
    } else if (l.unsupported) {
        rd->unsupported++;
        mismatch(rd, "livedb: unsupported", sql, &s, &l);
    } else if (!l.ok || !cmp_same_rows(&s, &l, ordered)) {
        mismatch(rd, ordered ? "ordered result" : "result bag", sql, &s, &l);
    }
    cmp_result_free(&s);
    cmp_result_free(&l);
}

/* ---- writes ----------------------------------------------------------------------- */

/* The values a write stores come from no avg(): REALs stay multiples of
 * 1/4 (or products of them), so that a later sum over them is exact in
 * any order (avg's quotient is not; SQLite adds in scan order). */
static void gen_stored(gen *g, const scope *sc, enum ty ty, int depth, strbuf *sb)
{
    g->no_avg = true;
    gen_expr(g, sc, ty, depth, sb);
    g->no_avg = false;
}

static void gen_write(gen *g, strbuf *sb)
{
    const table *t = &g->tabs[pick(g, g->ntab)];
    scope sc = { 1, { "" }, { t }, NULL };
    memcpy(sc.alias[0], t->name, sizeof t->name);
    int k = pick(g, 5);
    if (k == 0) {
        sb_printf(sb, "INSERT INTO %s VALUES ", t->name);
        int n = 1 + pick(g, 3);
        for (int i = 0; i < n; i++) {
            sb_puts(sb, i ? ", " : "");
            gen_row(g, t, sb);
        }
    } else if (k == 1) {
        const table *src = &g->tabs[pick(g, g->ntab)];
        scope ss = { 1, { "" }, { src }, NULL };
        new_alias(g, ss.alias[0]);
        sb_printf(sb, "INSERT INTO %s SELECT ", t->name);
        for (int c = 0; c < t->ncol; c++) {
            sb_puts(sb, c ? ", " : "");
            if (c == 0 && t->pk) { /* a key, never NULL */
                sb_puts(sb, "COALESCE(");
                gen_expr(g, &ss, TY_INT, 1, sb);
                sb_printf(sb, ", %d) + %d", pick(g, 50), 20 + pick(g, 40));
            } else {
                gen_stored(g, &ss, t->cols[c].ty, 1, sb);
            }
        }
        sb_printf(sb, " FROM %s AS %s WHERE ", src->name, ss.alias[0]);
        gen_bool(g, &ss, 2, sb);
    } else if (k <= 3) {
        /* SQLite evaluates SET row by row, so a subquery on the table being
         * updated sees the rows already changed; livedb (like the SQL
         * standard) evaluates on the table as it was. */
        g->avoid = t;
        /* Not the primary key: livedb checks keys at the end of the
         * statement, SQLite row by row, so SQLite refuses some updates
         * livedb makes (SQL.md, differences, 10). */
        int c = t->pk + pick(g, t->ncol - t->pk);
        sb_printf(sb, "UPDATE %s SET %s = ", t->name, t->cols[c].name);
        gen_stored(g, &sc, t->cols[c].ty, 2, sb);
        if (chance(g, 3, 4)) {
            sb_puts(sb, " WHERE ");
            gen_bool(g, &sc, 2, sb);
        }
        g->avoid = NULL;
    } else {
        /* SQLite runs a subquery of the WHERE when it first needs it, which
         * may be after it deleted some rows, and then sees them gone; livedb
         * finds every target row first (SQL.md, UPDATE and DELETE). */
        g->avoid = t;
        sb_printf(sb, "DELETE FROM %s WHERE ", t->name);
        gen_bool(g, &sc, 2, sb);
        g->avoid = NULL;
    }
}

/* Runs a write on both engines: both must accept it or both refuse it,
 * and then hold the same tables. Returns false at the first difference
 * (the round stops there: every later check would differ too). */
static bool check_write(round *rd, const char *sql)
{
    char *err = NULL;
    int s_ok = sqlite3_exec(rd->sq, sql, NULL, NULL, &err) == SQLITE_OK;
    int rc = ldb_exec(rd->ld, sql, NULL, NULL);
    rd->writes++;
    bool same = true;
    if (rc == LDB_UNSUPPORTED) {
        rd->unsupported++;
        same = false;
    } else if (s_ok != (rc == LDB_OK)) {
        cmp_result s = { .ok = s_ok }, l = { .ok = rc == LDB_OK };
        snprintf(s.msg, sizeof s.msg, "%s", err ? err : "");
        snprintf(l.msg, sizeof l.msg, "%s", ldb_errmsg(rd->ld));
        mismatch(rd, "statement outcome", sql, &s, &l);
        same = false;
    }
    sqlite3_free(err);
    for (int i = 0; i < rd->g.ntab && same; i++) {
        char q[64];
        snprintf(q, sizeof q, "SELECT * FROM %s", rd->g.tabs[i].name);
        cmp_result a, b;
        cmp_run_sqlite(rd->sq, q, &a);
        cmp_run_livedb(rd->ld, q, &b);
        if (!b.ok || !cmp_same_rows(&a, &b, false)) {
            char what[64];
            snprintf(what, sizeof what, "contents of %s after the statement",
                     rd->g.tabs[i].name);
            mismatch(rd, what, sql, &a, &b);
            same = false;
        }
        cmp_result_free(&a);
        cmp_result_free(&b);
    }
    sb_printf(&rd->log, "%s;\n", sql);
    return same;
}

/* ---- rounds ------------------------------------------------------------------------- */

static void open_round(round *rd, uint64_t seed)
{
    memset(rd, 0, sizeof *rd);
    rd->seed = seed;
    rng_seed(&rd->g.r, seed);
    strbuf script = STRBUF_INIT;
    gen_schema(&rd->g, &script);
    gen_data(&rd->g, &script);
    CHECK(!sb_error(&script));
    rd->script = sb_take(&script, NULL);
    CHECK(sqlite3_open(":memory:", &rd->sq) == SQLITE_OK);
    CHECK(ldb_open(NULL, &rd->ld) == LDB_OK);
    /* Statement by statement: a colliding key fails alone in both. */
    const char *p = rd->script;
    while (*p) {
        const char *nl = strchr(p, '\n');
        char *stmt = strndup(p, (size_t)(nl - p));
        int s_ok = sqlite3_exec(rd->sq, stmt, NULL, NULL, NULL) == SQLITE_OK;
        int l_ok = ldb_exec(rd->ld, stmt, NULL, NULL) == LDB_OK;
        CHECKF(s_ok == l_ok, "seed %llu: '%s': sqlite %s, livedb %s (%s)",
               (unsigned long long)seed, stmt, s_ok ? "ok" : "error", l_ok ? "ok" : "error",
               ldb_errmsg(rd->ld));
        free(stmt);
        p = nl + 1;
    }
}

static void close_round(round *rd)
{
    sb_free(&rd->log);
    sqlite3_close(rd->sq);
    ldb_close(rd->ld);
    free((char *)rd->script);
}

static bool is_ordered(const char *sql)
{
    /* Only a top-level ORDER BY of every column is generated; subqueries
     * never carry one. */
    return strstr(sql, " ORDER BY ") != NULL;
}

typedef struct totals {
    long queries, writes, mismatches, unsupported, rejected, rows;
} totals;

static void run_round(uint64_t seed, totals *t, bool writes)
{
    round rd;
    open_round(&rd, seed);
    for (int i = 0; i < (writes ? WRITES_PER_ROUND : QUERIES_PER_ROUND); i++) {
        strbuf sql = STRBUF_INIT;
        rd.g.next_alias = 0;
        if (writes) {
            gen_write(&rd.g, &sql);
            if (!check_write(&rd, sb_str(&sql)))
                i = WRITES_PER_ROUND; /* stop the round at its first difference */
        } else {
            enum ty tys[3];
            int ncols = 1 + pick(&rd.g, 3);
            for (int c = 0; c < ncols; c++)
                tys[c] = value_type(&rd.g);
            gen_query(&rd.g, NULL, ncols, tys, &sql, true);
            check_query(&rd, sb_str(&sql), is_ordered(sb_str(&sql)));
        }
        CHECK(!sb_error(&sql));
        sb_free(&sql);
    }
    t->queries += rd.queries;
    t->writes += rd.writes;
    t->mismatches += rd.mismatches;
    t->unsupported += rd.unsupported;
    t->rejected += rd.rejected;
    t->rows += rd.rows;
    close_round(&rd);
}

static void run_rounds(bool writes)
{
    rng r;
    rng_seed(&r, test_seed());
    totals t = { 0, 0, 0, 0, 0, 0 };
    reports_left = MAX_REPORTS;
    int rounds = ROUNDS * test_scale();
    for (int i = 0; i < rounds; i++)
        run_round(rng_next(&r), &t, writes);
    if (writes)
        printf("#    %ld writes compared, tables checked after each: %ld mismatches "
               "(%ld unsupported)\n",
               t.writes, t.mismatches, t.unsupported);
    else
        printf("#    %ld queries compared (%ld rows; %ld rejected by SQLite): %ld mismatches "
               "(%ld unsupported)\n",
               t.queries, t.rows, t.rejected, t.mismatches, t.unsupported);
    CHECKF(t.mismatches == 0, "%ld of %ld statements differ from SQLite", t.mismatches,
           t.queries + t.writes);
}

/* Random queries over random schemas and data. */
static void queries(void) { run_rounds(false); }
/* Random INSERT/UPDATE/DELETE statements, tables compared after each. */
static void writes(void) { run_rounds(true); }

/* ---- collations: fixed cases -------------------------------------------------------- */

/*
 * Which collation each shape of expression has, against SQLite's answer
 * at run time, over NOCASE and RTRIM columns: a column keeps its own
 * (also through CAST, unary + and a derived table's plain column), an
 * explicit COLLATE passes up through operators, and nothing else gives
 * one (x || y, function and aggregate results, CASE, a scalar subquery);
 * BETWEEN is two comparisons choosing apart. Each case runs one-shot, as
 * a live query and as a materialized view, then again after each write.
 * Grouped or deduplicated NOCASE columns are counted, not shown: of the
 * values equal under NOCASE, livedb shows the least and SQLite the first
 * (SQL.md, aggregate queries).
 */
static const char *const coll_setup =
    "CREATE TABLE t(id INTEGER PRIMARY KEY, x TEXT COLLATE NOCASE, y TEXT, "
    "r TEXT COLLATE RTRIM);"
    "CREATE TABLE u(id INTEGER PRIMARY KEY, x TEXT COLLATE NOCASE, y TEXT);"
    "INSERT INTO t VALUES (1, 'a', 'b', 'p'), (2, 'A', 'b', 'p '), (3, 'B', 'a', 'P'), "
    "(4, 'b', 'A', 'q'), (5, 'c', 'C', 'p  ');"
    "INSERT INTO u VALUES (1, 'a', 'A'), (5, 'B', 'b');"
    "CREATE VIEW vk AS SELECT id, x || y AS k, x FROM t;";

static const char *const coll_writes[] = {
    "INSERT INTO t VALUES (6, 'Ab', '', 'q '), (7, 'AB', 'x', 'P'), (8, 'C', 'c', 'Q')",
    "UPDATE t SET y = 'B' WHERE id = 1",
    "DELETE FROM t WHERE id = 2",
    "INSERT INTO u VALUES (7, 'ab', 'AB'), (8, 'c', 'C')",
};

static const struct coll_case {
    const char *sql;
    bool ordered;
} coll_cases[] = {
    /* WHERE */
    { "SELECT id FROM t WHERE x || y = 'AB'", false },
    { "SELECT id FROM t WHERE y || (x COLLATE NOCASE) = 'BA'", false },
    { "SELECT id FROM t WHERE 'BA' = y || (x COLLATE NOCASE)", false },
    { "SELECT id FROM t WHERE lower(x COLLATE NOCASE) = 'B'", false },
    { "SELECT id FROM t WHERE +x = 'B'", false },
    { "SELECT id FROM t WHERE CAST(x AS TEXT) = 'B'", false },
    { "SELECT id FROM t WHERE r || '' = 'p'", false },
    { "SELECT id FROM t WHERE y || '' = x", false },
    { "SELECT id FROM t WHERE upper(y) = x", false },
    { "SELECT id FROM t WHERE CASE WHEN id > 0 THEN x END = 'B'", false },
    { "SELECT id FROM t WHERE CASE 'b' WHEN x THEN 1 END", false },
    { "SELECT id FROM t WHERE x || '' IN ('B', 'zz')", false },
    { "SELECT id FROM t WHERE y IN ('B' COLLATE NOCASE)", false },
    /* BETWEEN: x >= a AND x <= b, each comparison with its own collation */
    { "SELECT id FROM t WHERE y || '' BETWEEN x AND 'B'", false },
    { "SELECT id FROM t WHERE y || '' BETWEEN 'A' AND x", false },
    { "SELECT id FROM t WHERE y || '' NOT BETWEEN x AND 'B'", false },
    { "SELECT id FROM t WHERE r || '' BETWEEN 'p' AND r", false },
    { "SELECT id FROM t WHERE x BETWEEN 'a' AND y", false },
    /* GROUP BY and HAVING */
    { "SELECT x || y, count(*) FROM t GROUP BY x || y", false },
    { "SELECT r || '', count(*) FROM t GROUP BY 1", false },
    { "SELECT count(*) FROM t GROUP BY CAST(x AS TEXT)", false },
    { "SELECT count(*) FROM t GROUP BY +r", false },
    { "SELECT CASE WHEN id > 0 THEN x END AS k, count(*) FROM t GROUP BY k", false },
    { "SELECT y || '', count(*) FROM t GROUP BY y || '', x HAVING y || '' = x", false },
    { "SELECT count(*) FROM t GROUP BY (SELECT u.x FROM t AS u WHERE u.id = t.id)", false },
    /* DISTINCT and aggregates */
    { "SELECT DISTINCT x || y FROM t", false },
    { "SELECT DISTINCT r || '' FROM t", false },
    { "SELECT count(*) FROM (SELECT DISTINCT y || (x COLLATE NOCASE) FROM t)", false },
    { "SELECT count(DISTINCT x || y), max(x || ''), min(r || '') FROM t", false },
    /* ORDER BY */
    { "SELECT x || y, id FROM t ORDER BY x || y, id", true },
    { "SELECT id FROM t ORDER BY +x, id", true },
    { "SELECT id FROM t ORDER BY CAST(x AS TEXT) DESC, id", true },
    { "SELECT id FROM t ORDER BY r || '', id", true },
    { "SELECT id, x || '' AS k FROM t ORDER BY k, id", true },
    /* scalar subqueries */
    { "SELECT id FROM t WHERE (SELECT u.x FROM u WHERE u.id = 5) = 'b'", false },
    { "SELECT id FROM t WHERE (SELECT u.x FROM t AS u WHERE u.id = t.id) = 'b'", false },
    { "SELECT id FROM t WHERE 'b' = (SELECT u.x FROM t AS u WHERE u.id = t.id)", false },
    { "SELECT id FROM t WHERE (SELECT u.x FROM t AS u WHERE u.id = t.id) = y", false },
    /* IN (subquery) and correlation */
    { "SELECT id FROM t WHERE y IN (SELECT x FROM u)", false },
    { "SELECT id FROM t WHERE y || '' IN (SELECT x FROM u)", false },
    { "SELECT id FROM t WHERE 'b' IN (SELECT x || '' FROM u)", false },
    { "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.y || '' = t.x)", false },
    { "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.y = t.x)", false },
    /* derived tables, CTEs, views */
    { "SELECT id FROM (SELECT id, x || y AS k FROM t) WHERE k = 'AB'", false },
    { "SELECT id FROM (SELECT id, x AS k FROM t) WHERE k = 'B'", false },
    { "SELECT id FROM (SELECT id, x COLLATE BINARY AS k FROM t) WHERE k = 'B'", false },
    { "SELECT id FROM (SELECT id, (x COLLATE NOCASE) || y AS k FROM t) WHERE k = 'AB'", false },
    { "SELECT k, count(*) FROM (SELECT x || '' AS k FROM t) GROUP BY k", false },
    { "SELECT count(*) FROM (SELECT max(x) AS m FROM t) WHERE m = 'c'", false },
    { "SELECT d.id, t.id FROM (SELECT id, y || '' AS k FROM t) AS d JOIN t ON d.k = t.x", false },
    { "SELECT d.id, t.id FROM (SELECT id, y || '' AS k FROM t) AS d JOIN t ON t.x = d.k", false },
    { "WITH c AS (SELECT x || y AS k FROM t) SELECT DISTINCT k FROM c", false },
    { "SELECT id FROM vk WHERE k = 'AB'", false },
    { "SELECT id FROM vk WHERE x = 'B'", false },
    /* compound queries: the leftmost term with a collation decides */
    { "SELECT x || '' FROM t UNION SELECT y FROM t", false },
    { "SELECT x || '' FROM t INTERSECT SELECT y FROM t", false },
    { "SELECT count(*) FROM (SELECT y || '' FROM t EXCEPT SELECT x FROM t)", false },
    { "SELECT count(*) FROM (SELECT x || '' AS k FROM t UNION SELECT x FROM t) "
      "WHERE k = 'A'", false },
    { "SELECT count(*) FROM t FULL JOIN u USING (x) WHERE x = 'a'", false },
};

/* The rows of a live query or of a view, in the form of sqlite_cmp.h. */
static int coll_collect(void *ctx, const ldb_row *row)
{
    strbuf sb = STRBUF_INIT;
    cmp_put_livedb_row(&sb, row);
    cmp_result_add(ctx, &sb);
    return 0;
}

/* Compares what livedb gave (how: one-shot, live query, view) with
 * SQLite's rows s; prints both when they differ (the first few times). */
static bool coll_same(const struct coll_case *c, const char *how, const char *after,
                      cmp_result *s, cmp_result *l)
{
    bool same = l->ok && cmp_same_rows(s, l, c->ordered);
    if (!same && reports_left-- > 0) {
        printf("# MISMATCH (%s, %s): %s;\n", how, after, c->sql);
        print_rows("sqlite", s);
        print_rows("livedb", l);
    }
    cmp_result_free(l);
    return same;
}

static int coll_case_run(const struct coll_case *c)
{
    sqlite3 *sq;
    ldb *db;
    CHECK(sqlite3_open(":memory:", &sq) == SQLITE_OK);
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    CHECK(sqlite3_exec(sq, coll_setup, NULL, NULL, NULL) == SQLITE_OK);
    CHECK_INT(ldb_exec(db, coll_setup, NULL, NULL), LDB_OK);
    ldb_live *q = NULL;
    CHECKF(ldb_live_open(db, c->sql, NULL, NULL, &q) == LDB_OK, "live %s: %s", c->sql,
           ldb_errmsg(db));
    char *mv = sqlite3_mprintf("CREATE MATERIALIZED VIEW cv AS %s", c->sql);
    CHECKF(ldb_exec(db, mv, NULL, NULL) == LDB_OK, "%s: %s", mv, ldb_errmsg(db));
    sqlite3_free(mv);
    int differ = 0;
    size_t nwrites = sizeof coll_writes / sizeof coll_writes[0];
    for (size_t w = 0; w <= nwrites; w++) {
        const char *after = w ? coll_writes[w - 1] : "before any write";
        if (w) {
            CHECK(sqlite3_exec(sq, coll_writes[w - 1], NULL, NULL, NULL) == SQLITE_OK);
            CHECK_INT(ldb_exec(db, coll_writes[w - 1], NULL, NULL), LDB_OK);
        }
        cmp_result s, l;
        cmp_run_sqlite(sq, c->sql, &s);
        CHECKF(s.ok, "sqlite: %s: %s", c->sql, s.msg);
        cmp_run_livedb(db, c->sql, &l);
        differ += !coll_same(c, "one-shot", after, &s, &l);
        memset(&l, 0, sizeof l);
        l.ok = ldb_live_read(q, coll_collect, &l) == LDB_OK && ldb_live_error(q, NULL) == LDB_OK;
        differ += !coll_same(c, "live query", after, &s, &l);
        cmp_run_livedb(db, "SELECT * FROM cv", &l);
        struct coll_case bag = { c->sql, false }; /* a table has no order */
        differ += !coll_same(&bag, "materialized view", after, &s, &l);
        cmp_result_free(&s);
    }
    ldb_live_close(q);
    ldb_close(db);
    sqlite3_close(sq);
    return differ;
}

static void collations(void)
{
    size_t n = sizeof coll_cases / sizeof coll_cases[0];
    int differ = 0;
    reports_left = MAX_REPORTS;
    for (size_t i = 0; i < n; i++)
        differ += coll_case_run(&coll_cases[i]);
    printf("#    %zu collation cases, %d results differ from SQLite\n", n, differ);
    CHECKF(differ == 0, "%d results differ from SQLite", differ);
}

TEST_MAIN(T(queries), T(writes), T(collations))
