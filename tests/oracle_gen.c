/*
 * oracle_gen.c - the oracles' schema, values and query generator
 * (oracle_gen.h says what is generated and why it keeps the engines
 * comparable; oracle_world.c runs the histories).
 *
 * Generated text carries a reason with every shape it leaves out; the
 * oracle never leaves a shape out to hide a livedb bug except through a
 * KNOWN_* switch (oracle_known.h), passed in as ogen_opts.
 */
#include "oracle_gen.h"

#include "base/mem.h"
#include "oracle_known.h"

#include <math.h>
#include <stdlib.h>

/* ---- the schema ------------------------------------------------------------ */

const struct otable otables[NTABLES] = {
    { "t1", 5, { { "id", OT_INT, 0 }, { "a", OT_INT, 0 }, { "b", OT_TEXT, 0 }, { "c", OT_REAL, 0 },
                 { "d", OT_TEXT, 1 } }, 1 },
    { "t2", 5, { { "id", OT_INT, 0 }, { "t1id", OT_INT, 0 }, { "x", OT_INT, 0 },
                 { "s", OT_TEXT, 1 }, { "f", OT_FLT, 0 } }, 1 },
    /* no key: all three columns order it (identical rows look alike) */
    { "t3", 3, { { "k", OT_INT, 0 }, { "v", OT_INT, 0 }, { "w", OT_TEXT, 0 } }, 3 },
    { "t4", 4, { { "p", OT_INT, 0 }, { "q", OT_TEXT, 0 }, { "n", OT_INT, 0 }, { "r", OT_REAL, 0 } },
      2 },
};


/* ---- values ------------------------------------------------------------------ */

static const char *const texts[] = { "a", "b", "B", "ab", "A b", "", "ba" };
#define NTEXTS 7
static const double reals[] = { -1.5, -0.25, 0.0, -0.0, 0.25, 1.0, 1.5, 2.5, 3.0 };
#define NREALS 9

int og_pick(rng *r, int n) { return (int)rng_below(r, (uint64_t)n); }
bool og_chance(rng *r, unsigned num, unsigned den) { return rng_chance(r, num, den); }

oval oval_random(rng *r, enum oty ty, bool nullable)
{
    oval v;
    memset(&v, 0, sizeof v);
    v.ty = ty;
    if (nullable && og_chance(r, 1, 7)) {
        v.null = true;
        return v;
    }
    switch (ty) {
    case OT_INT: v.i = rng_range(r, -2, 6); break;
    case OT_TEXT: v.t = texts[og_pick(r, NTEXTS)]; break;
    case OT_FLT:
        if (og_chance(r, 1, 6)) {
            v.nan = true;
            break;
        }
        v.d = reals[og_pick(r, NREALS)];
        break;
    case OT_BOOL: v.i = og_pick(r, 2); break;
    default: v.d = reals[og_pick(r, NREALS)]; break;
    }
    return v;
}

oval oval_int(int64_t i)
{
    oval v;
    memset(&v, 0, sizeof v);
    v.ty = OT_INT;
    v.i = i;
    return v;
}

/* The value as SQL text (for logs and reports): NaN cannot be written,
 * so it shows as a comment. */
void oval_sql(strbuf *sb, const oval *v)
{
    if (v->null)
        sb_puts(sb, "NULL");
    else if (v->nan)
        sb_puts(sb, "/*NaN*/NULL");
    else if (v->ty == OT_INT)
        sb_printf(sb, "%lld", (long long)v->i);
    else if (v->ty == OT_TEXT)
        sb_printf(sb, "'%s'", v->t);
    else if (v->ty == OT_BOOL)
        sb_puts(sb, v->i ? "TRUE" : "FALSE");
    else if (v->d == 0 && signbit(v->d))
        sb_puts(sb, "-0.0");
    else
        sb_printf(sb, "%.2f", v->d);
}

void oval_bind_livedb(ldb_stmt *st, int i, const oval *v)
{
    int rc;
    if (v->null)
        rc = ldb_bind_null(st, i);
    else if (v->nan)
        rc = ldb_bind_double(st, i, NAN);
    else if (v->ty == OT_INT)
        rc = ldb_bind_int64(st, i, v->i);
    else if (v->ty == OT_TEXT)
        rc = ldb_bind_text(st, i, v->t, -1);
    else if (v->ty == OT_BOOL)
        rc = ldb_bind_bool(st, i, (int)v->i);
    else
        rc = ldb_bind_double(st, i, v->d);
    CHECK_INT(rc, LDB_OK);
}

void oval_bind_sqlite(sqlite3_stmt *st, int i, const oval *v)
{
    int rc;
    if (v->null)
        rc = sqlite3_bind_null(st, i);
    else if (v->nan)
        rc = sqlite3_bind_double(st, i, INFINITY);
    else if (v->ty == OT_INT || v->ty == OT_BOOL)
        rc = sqlite3_bind_int64(st, i, v->i);
    else if (v->ty == OT_TEXT)
        rc = sqlite3_bind_text(st, i, v->t, -1, SQLITE_STATIC);
    else
        rc = sqlite3_bind_double(st, i, v->d);
    CHECK_INT(rc, SQLITE_OK);
}

/* Parameters whose text the generator dropped (a retried GROUP BY key)
 * are numbered past the statement's last one: not bound. */
void oq_bind_livedb(const oquery *q, ldb_stmt *st)
{
    int n = ldb_bind_parameter_count(st);
    for (int i = 0; i < q->nparams && i < n; i++)
        oval_bind_livedb(st, i + 1, &q->params[i]);
}

void oq_bind_sqlite(const oquery *q, sqlite3_stmt *st)
{
    int n = sqlite3_bind_parameter_count(st);
    for (int i = 0; i < q->nparams && i < n; i++)
        oval_bind_sqlite(st, i + 1, &q->params[i]);
}

/* ---- the query generator: scopes -------------------------------------------- */

typedef struct ocol {
    char ref[40]; /* alias.column */
    enum oty ty;
    int coll;     /* E_NOCASE for a NOCASE column, else 0 */
} ocol;

#define SCOPE_MAX 32

/* The columns an expression may use; outer is the enclosing query's. */
typedef struct oscope {
    int n;
    ocol c[SCOPE_MAX];
    const struct oscope *outer;
} oscope;

typedef struct ogen {
    rng *r;
    const ogen_opts *o;
    oquery *q;
    strbuf with;  /* the top query's CTEs */
    int alias;    /* next alias number: unique in the statement */
    int depth;    /* subquery nesting: 0 in the top query */
    int subs;     /* subqueries in the statement */
    bool no_sub;  /* no subquery here (aggregate arguments) */
    bool no_avg;  /* no avg here (a derived table: see oracle_gen.h) */
    bool in_derived; /* inside a derived table: no derived table in it */
    bool cond;    /* generating a WHERE/ON/HAVING condition's own AND/OR/NOT
                     tree, outside any value expression */
} ogen;

/* Expression flags. */
#define E_COL 1    /* reads a column */
#define E_NOCASE 2 /* its collation is NOCASE (a bare NOCASE column; any
                      operator or call over it has none, as in SQLite) */

static int gpick(ogen *g, int n) { return og_pick(g->r, n); }
static bool gchance(ogen *g, unsigned num, unsigned den) { return og_chance(g->r, num, den); }

static void scope_add(oscope *sc, const char *alias, const char *col, enum oty ty, int coll)
{
    CHECK(sc->n < SCOPE_MAX);
    ocol *c = &sc->c[sc->n++];
    snprintf(c->ref, sizeof c->ref, "%s.%s", alias, col);
    c->ty = ty;
    c->coll = coll;
}

static void scope_add_table(oscope *sc, const struct otable *t, const char *alias)
{
    for (int i = 0; i < t->ncols; i++)
        scope_add(sc, alias, t->cols[i].name, t->cols[i].ty, t->cols[i].nocase ? E_NOCASE : 0);
}

/* Appends t's key columns (as alias.col) to keys. */
static void table_keys(const struct otable *t, const char *alias, strbuf *keys)
{
    for (int i = 0; i < t->nkey; i++)
        sb_printf(keys, "%s%s.%s", keys->len ? ", " : "", alias, t->cols[i].name);
}

static const ocol *scope_pick(ogen *g, const oscope *sc, enum oty ty)
{
    int idx[SCOPE_MAX], n = 0;
    for (int i = 0; i < sc->n; i++)
        if (sc->c[i].ty == ty)
            idx[n++] = i;
    return n ? &sc->c[idx[gpick(g, n)]] : NULL;
}

/* A column of type ty: of sc, or (one time in three) of an outer scope. */
static const ocol *pick_col(ogen *g, const oscope *sc, enum oty ty)
{
    const oscope *s = sc;
    while (s->outer && gchance(g, 1, 3))
        s = s->outer;
    const ocol *c = scope_pick(g, s, ty);
    return c ? c : scope_pick(g, sc, ty);
}

static void new_alias(ogen *g, char out[16]) { snprintf(out, 16, "a%d", g->alias++); }

static const struct otable *pick_table(ogen *g) { return &otables[gpick(g, NTABLES)]; }

/* ---- expressions ------------------------------------------------------------- */

static int gen(ogen *g, const oscope *sc, enum oty ty, int depth, strbuf *sb);
static int gen_value(ogen *g, const oscope *sc, enum oty ty, int depth, strbuf *sb);
static void scalar_subquery(ogen *g, const oscope *sc, enum oty ty, strbuf *sb);
static void exists_subquery(ogen *g, const oscope *sc, strbuf *sb);
static void in_subquery(ogen *g, const oscope *sc, enum oty ty, strbuf *sb);

static bool can_sub(const ogen *g)
{
    return !g->no_sub && g->depth < 2 && g->subs < 4;
}

static void literal(ogen *g, enum oty ty, strbuf *sb)
{
    oval v = oval_random(g->r, ty == OT_FLT ? OT_REAL : ty, false);
    oval_sql(sb, &v);
}

/* A parameter (?N) of type ty, or a literal in a view body. */
static void param(ogen *g, enum oty ty, strbuf *sb)
{
    if (g->o->mv || g->q->nparams == OQ_MAXPARAMS) {
        literal(g, ty, sb);
        return;
    }
    g->q->params[g->q->nparams++] = oval_random(g->r, ty, true);
    sb_printf(sb, "?%d", g->q->nparams);
}

/* A column of type ty, else a literal. */
static int column_or_literal(ogen *g, const oscope *sc, enum oty ty, strbuf *sb)
{
    const ocol *c = pick_col(g, sc, ty);
    if (!c) {
        literal(g, ty, sb);
        return 0;
    }
    sb_puts(sb, c->ref);
    return E_COL | c->coll;
}

/* The forms every type shares: CASE, COALESCE, NULL, a scalar subquery.
 * Returns -1 when k names none of them. */
static int gen_shared(ogen *g, const oscope *sc, enum oty ty, int depth, int k, strbuf *sb)
{
    int f = 0;
    switch (k) {
    case 0:
        sb_puts(sb, "CASE WHEN ");
        f |= gen(g, sc, OT_BOOL, depth - 1, sb);
        sb_puts(sb, " THEN ");
        f |= gen(g, sc, ty, depth - 1, sb);
        if (gchance(g, 2, 3)) {
            sb_puts(sb, " ELSE ");
            f |= gen(g, sc, ty, depth - 1, sb);
        }
        sb_puts(sb, " END");
        return f & E_COL;
    case 1:
        sb_puts(sb, "COALESCE(");
        f |= gen(g, sc, ty, depth - 1, sb);
        sb_puts(sb, ", ");
        f |= gen(g, sc, ty, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 2:
        if (gchance(g, 1, 3)) {
            sb_puts(sb, "NULL");
            return 0;
        }
        return column_or_literal(g, sc, ty, sb);
    case 3:
        if (!can_sub(g))
            return column_or_literal(g, sc, ty, sb);
        scalar_subquery(g, sc, ty, sb);
        return E_COL;
    default:
        return -1;
    }
}

static int gen_int(ogen *g, const oscope *sc, int depth, strbuf *sb)
{
    int k = depth <= 0 ? 4 + gpick(g, 3) : gpick(g, 14), f;
    int shared = gen_shared(g, sc, OT_INT, depth, k, sb);
    if (shared >= 0)
        return shared;
    static const char *const ops[] = { "+", "-", "*", "/", "%" };
    switch (k) {
    case 4: case 5: return column_or_literal(g, sc, OT_INT, sb);
    case 6:
        if (gchance(g, 1, 2))
            literal(g, OT_INT, sb);
        else
            param(g, OT_INT, sb);
        return 0;
    case 7: case 8: case 9:
        sb_putc(sb, '(');
        f = gen_int(g, sc, depth - 1, sb);
        sb_printf(sb, " %s ", ops[gpick(g, 5)]);
        f |= gen_int(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 10:
        sb_puts(sb, "-(");
        f = gen_int(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 11:
        sb_puts(sb, "abs(");
        f = gen_int(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 12:
        sb_puts(sb, "length(");
        f = gen(g, sc, OT_TEXT, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    default:
        sb_puts(sb, "iif(");
        f = gen(g, sc, OT_BOOL, depth - 1, sb);
        sb_puts(sb, ", ");
        f |= gen_int(g, sc, depth - 1, sb);
        sb_puts(sb, ", ");
        f |= gen_int(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    }
}

static int gen_real(ogen *g, const oscope *sc, int depth, strbuf *sb)
{
    int k = depth <= 0 ? 4 + gpick(g, 3) : gpick(g, 12), f;
    int shared = gen_shared(g, sc, OT_REAL, depth, k, sb);
    if (shared >= 0)
        return shared;
    static const char *const ops[] = { "+", "-", "*" };
    switch (k) {
    case 4: case 5: return column_or_literal(g, sc, OT_REAL, sb);
    case 6:
        if (gchance(g, 1, 2))
            literal(g, OT_REAL, sb);
        else
            param(g, OT_REAL, sb);
        return 0;
    case 7: case 8:
        sb_putc(sb, '(');
        f = gen_real(g, sc, depth - 1, sb);
        sb_printf(sb, " %s ", ops[gpick(g, 3)]);
        f |= gchance(g, 1, 3) ? gen_int(g, sc, depth - 1, sb) : gen_real(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 9:
        sb_puts(sb, "-(");
        f = gen_real(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 10:
        sb_puts(sb, "abs(");
        f = gen_real(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    default:
        sb_puts(sb, "CAST(");
        f = gen_int(g, sc, depth - 1, sb);
        sb_puts(sb, " AS REAL)");
        return f & E_COL;
    }
}

static int gen_text(ogen *g, const oscope *sc, int depth, strbuf *sb)
{
    int k = depth <= 0 ? 4 + gpick(g, 3) : gpick(g, 13), f;
    int shared = gen_shared(g, sc, OT_TEXT, depth, k, sb);
    if (shared >= 0)
        return shared;
    switch (k) {
    case 4: case 5: return column_or_literal(g, sc, OT_TEXT, sb);
    case 6:
        if (gchance(g, 1, 2))
            literal(g, OT_TEXT, sb);
        else
            param(g, OT_TEXT, sb);
        return 0;
    case 7: case 8:
        sb_putc(sb, '(');
        f = gen_text(g, sc, depth - 1, sb);
        sb_puts(sb, " || ");
        f |= gen_text(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 9:
        sb_puts(sb, gchance(g, 1, 2) ? "upper(" : "lower(");
        f = gen_text(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 10:
        sb_puts(sb, "substr(");
        f = gen_text(g, sc, depth - 1, sb);
        sb_printf(sb, ", %d, %d)", 1 + gpick(g, 2), 1 + gpick(g, 2));
        return f & E_COL;
    case 11:
        sb_puts(sb, "CAST(");
        f = gen_int(g, sc, depth - 1, sb);
        sb_puts(sb, " AS TEXT)");
        return f & E_COL;
    default:
        sb_puts(sb, "replace(");
        f = gen_text(g, sc, depth - 1, sb);
        sb_puts(sb, ", 'a', 'x')");
        return f & E_COL;
    }
}

/* NaN-capable REAL: t2.f bare, REAL literals and parameters, and forms
 * without arithmetic (oracle_gen.h). */
static int gen_flt(ogen *g, const oscope *sc, int depth, strbuf *sb)
{
    int k = depth <= 0 ? 4 + gpick(g, 3) : gpick(g, 7);
    int shared = gen_shared(g, sc, OT_FLT, depth, k, sb);
    if (shared >= 0)
        return shared;
    if (k == 6 && gchance(g, 1, 2)) {
        param(g, OT_FLT, sb);
        return 0;
    }
    return column_or_literal(g, sc, OT_FLT, sb);
}

static enum oty value_type(ogen *g)
{
    static const enum oty tys[] = { OT_INT, OT_INT, OT_REAL, OT_TEXT, OT_TEXT, OT_FLT };
    return tys[gpick(g, 6)];
}

/* The left operand of a condition: one that reads a column, when a few
 * tries find one (a condition over constants never changes). */
static int gen_operand(ogen *g, const oscope *sc, enum oty ty, int depth, strbuf *sb)
{
    strbuf e = STRBUF_INIT;
    int f = 0;
    for (int tries = 0; tries < 3; tries++) {
        sb_truncate(&e, 0);
        f = gen(g, sc, ty, depth, &e);
        if (f & E_COL)
            break;
    }
    sb_puts(sb, sb_str(&e));
    sb_free(&e);
    return f;
}

static int gen_bool(ogen *g, const oscope *sc, int depth, strbuf *sb)
{
    static const char *const cmps[] = { "=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT" };
    enum oty ty = value_type(g);
    int k = depth <= 0 ? gpick(g, 3) : gpick(g, 16), f;
    switch (k) {
    case 0: case 1: case 2: case 3: {
        int op = gpick(g, 8);
        f = gen_operand(g, sc, ty, depth - 1, sb);
        sb_printf(sb, " %s ", cmps[op]);
        if (ty == OT_TEXT && g->cond && gchance(g, 1, 5)) { /* the right operand's wins */
            sb_putc(sb, '(');
            f |= gen(g, sc, ty, depth - 1, sb);
            sb_puts(sb, gchance(g, 1, 2) ? ") COLLATE NOCASE" : ") COLLATE BINARY");
        } else {
            f |= gen(g, sc, ty, depth - 1, sb);
        }
        return f & E_COL;
    }
    case 4:
        f = gen_operand(g, sc, ty, depth - 1, sb);
        sb_puts(sb, gchance(g, 1, 2) ? " IS NULL" : " IS NOT NULL");
        return f & E_COL;
    case 5:
        f = gen_operand(g, sc, ty, depth - 1, sb);
        sb_puts(sb, gchance(g, 1, 3) ? " NOT BETWEEN " : " BETWEEN ");
        f |= gen(g, sc, ty, depth - 1, sb);
        sb_puts(sb, " AND ");
        f |= gen(g, sc, ty, depth - 1, sb);
        return f & E_COL;
    case 6: {
        f = gen_operand(g, sc, ty, depth - 1, sb);
        sb_puts(sb, gchance(g, 1, 3) ? " NOT IN (" : " IN (");
        int n = gpick(g, 4);
        for (int i = 0; i < n; i++) {
            sb_puts(sb, i ? ", " : "");
            if (gchance(g, 1, 8))
                sb_puts(sb, "NULL");
            else
                literal(g, ty, sb);
        }
        sb_putc(sb, ')');
        return f & E_COL;
    }
    case 7: {
        if (!can_sub(g))
            break;
        f = gen_operand(g, sc, ty, depth - 1, sb);
        in_subquery(g, sc, ty, sb);
        return f & E_COL;
    }
    case 8:
        if (!can_sub(g))
            break;
        exists_subquery(g, sc, sb);
        return E_COL;
    case 9:
        sb_puts(sb, "NOT (");
        f = gen_bool(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 10: case 11: case 12:
        sb_putc(sb, '(');
        f = gen_bool(g, sc, depth - 1, sb);
        sb_puts(sb, gchance(g, 1, 2) ? " AND " : " OR ");
        f |= gen_bool(g, sc, depth - 1, sb);
        sb_putc(sb, ')');
        return f & E_COL;
    case 13: {
        static const char *const pats[] = { "'a%'", "'%b'", "'_'", "'B%'", "'%A b%'" };
        f = gen_operand(g, sc, OT_TEXT, depth - 1, sb);
        sb_printf(sb, "%s LIKE %s", gchance(g, 1, 4) ? " NOT" : "", pats[gpick(g, 5)]);
        return f & E_COL;
    }
    case 14: {
        const ocol *c = pick_col(g, sc, OT_BOOL); /* a boolean column of a derived table */
        if (c) {
            sb_puts(sb, c->ref);
            return E_COL;
        }
        break;
    }
    default:
        break;
    }
    f = gen(g, sc, ty, 0, sb);
    sb_puts(sb, " IS NULL");
    return f & E_COL;
}

/* A WHERE, ON or HAVING condition: the only place an explicit COLLATE
 * goes. SQLite gives a CASE, a function or an operator the collation of
 * an explicit COLLATE anywhere inside it (CASE WHEN a <= b COLLATE NOCASE
 * THEN x END compares as NOCASE); livedb takes COLLATE from the operands
 * of a comparison only (SQL.md "Collations"). */
static int gen_condition(ogen *g, const oscope *sc, int depth, strbuf *sb)
{
    bool cond = g->cond;
    g->cond = true;
    int f = gen_bool(g, sc, depth, sb);
    g->cond = cond;
    return f;
}

static int gen(ogen *g, const oscope *sc, enum oty ty, int depth, strbuf *sb)
{
    if (ty != OT_BOOL || !g->cond)
        return gen_value(g, sc, ty, depth, sb);
    /* a boolean operand of a comparison is a value again */
    g->cond = false;
    int f = gen_value(g, sc, ty, depth, sb);
    g->cond = true;
    return f;
}

static int gen_value(ogen *g, const oscope *sc, enum oty ty, int depth, strbuf *sb)
{
    bool cond = g->cond;
    if (ty != OT_BOOL)
        g->cond = false;
    int f;
    switch (ty) {
    case OT_INT: f = gen_int(g, sc, depth, sb); break;
    case OT_REAL: f = gen_real(g, sc, depth, sb); break;
    case OT_TEXT: f = gen_text(g, sc, depth, sb); break;
    case OT_FLT: f = gen_flt(g, sc, depth, sb); break;
    default: f = gen_bool(g, sc, depth, sb); break;
    }
    g->cond = cond;
    return f;
}

/* An expression whose value may be chosen among NOCASE-equal ones (a
 * group key, a DISTINCT or compound column, a min/max argument): a bare
 * NOCASE column is shown through lower() (oracle_gen.h). */
static int gen_shown(ogen *g, const oscope *sc, enum oty ty, int depth, strbuf *sb)
{
    strbuf e = STRBUF_INIT;
    int f = gen(g, sc, ty, depth, &e);
    if (f & E_NOCASE)
        sb_printf(sb, "lower(%s)", sb_str(&e));
    else
        sb_puts(sb, sb_str(&e));
    sb_free(&e);
    return f & E_COL;
}

/* ---- subqueries ----------------------------------------------------------------- */

/* A local scope over one table t with alias, nested in outer. */
static void table_scope(oscope *sc, const struct otable *t, const char *alias, const oscope *outer)
{
    sc->n = 0;
    sc->outer = outer;
    scope_add_table(sc, t, alias);
}

/* inner.col = outer.col of one type (an enclosing query's column, one or
 * two levels out), when the scopes share a type; false otherwise. */
static bool correlation(ogen *g, const oscope *in, strbuf *sb)
{
    const ocol *pairs[2 * SCOPE_MAX * SCOPE_MAX][2];
    int n = 0;
    for (int i = 0; i < in->n; i++) {
        int levels = 0;
        for (const oscope *o = in->outer; o && levels < 2; o = o->outer, levels++)
            for (int k = 0; k < o->n; k++)
                if (o->c[k].ty == in->c[i].ty && in->c[i].ty != OT_BOOL) {
                    pairs[n][0] = &in->c[i];
                    pairs[n][1] = &o->c[k];
                    n++;
                }
    }
    if (n == 0)
        return false;
    int k = gpick(g, n), swap = gpick(g, 2);
    sb_printf(sb, "%s = %s", pairs[k][swap]->ref, pairs[k][!swap]->ref);
    return true;
}

/* WHERE for a subquery over in: a correlation and/or a condition. */
static void sub_where(ogen *g, const oscope *in, bool correlate, strbuf *sb)
{
    strbuf c = STRBUF_INIT;
    bool corr = correlate && correlation(g, in, &c);
    bool cond = !corr || gchance(g, 1, 2);
    if (!corr && !cond) {
        sb_free(&c);
        return;
    }
    sb_puts(sb, " WHERE ");
    if (corr)
        sb_puts(sb, sb_str(&c));
    if (corr && cond)
        sb_puts(sb, " AND ");
    if (cond)
        gen_condition(g, in, 1, sb);
    sb_free(&c);
}

/* ORDER BY terms of sc's columns, then keys: a total order. */
static void total_order(ogen *g, const oscope *sc, const char *keys, strbuf *sb)
{
    sb_puts(sb, " ORDER BY ");
    int n = gpick(g, 3);
    for (int i = 0; i < n; i++) {
        const ocol *c = &sc->c[gpick(g, sc->n)];
        sb_printf(sb, "%s%s", c->ref, gchance(g, 1, 2) ? " DESC, " : ", ");
    }
    sb_puts(sb, keys);
}

/* An aggregate's argument: no subquery, no outer column (oracle_gen.h). */
static int agg_arg(ogen *g, const oscope *sc, enum oty ty, bool shown, strbuf *sb)
{
    oscope local = *sc;
    local.outer = NULL;
    bool no_sub = g->no_sub;
    g->no_sub = true;
    int f = shown ? gen_shown(g, &local, ty, 1, sb) : gen(g, &local, ty, 1, sb);
    g->no_sub = no_sub;
    return f;
}

/* A one-row aggregate of type ty for a scalar subquery. */
static void sub_aggregate(ogen *g, const oscope *in, enum oty ty, strbuf *sb)
{
    switch (ty) {
    case OT_INT:
        switch (gpick(g, 4)) {
        case 0: sb_puts(sb, "count(*)"); return;
        case 1: sb_puts(sb, "count("); agg_arg(g, in, value_type(g), false, sb); break;
        case 2: sb_puts(sb, "sum("); agg_arg(g, in, OT_INT, false, sb); break;
        default:
            sb_puts(sb, gchance(g, 1, 2) ? "min(" : "max(");
            agg_arg(g, in, OT_INT, false, sb);
        }
        break;
    case OT_REAL: {
        static const char *const f[] = { "avg(", "total(", "sum(", "min(", "max(" };
        int k = g->no_avg ? 1 + gpick(g, 4) : gpick(g, 5);
        sb_puts(sb, f[k]);
        agg_arg(g, in, k < 2 && gchance(g, 1, 2) ? OT_INT : OT_REAL, false, sb);
        break;
    }
    case OT_TEXT:
        sb_puts(sb, gchance(g, 1, 2) ? "min(" : "max(");
        agg_arg(g, in, OT_TEXT, true, sb);
        break;
    default:
        sb_puts(sb, gchance(g, 1, 2) ? "min(" : "max(");
        agg_arg(g, in, OT_FLT, false, sb);
        break;
    }
    sb_putc(sb, ')');
}

/* A scalar subquery that livedb can prove single-row: an aggregate, an
 * ORDER BY ... LIMIT 1 under a total order, or a lookup by primary key. */
static void scalar_subquery(ogen *g, const oscope *sc, enum oty ty, strbuf *sb)
{
    const struct otable *t = pick_table(g);
    char alias[16];
    new_alias(g, alias);
    oscope in;
    table_scope(&in, t, alias, sc);
    g->depth++;
    g->subs++;
    int form = gpick(g, 3);
    const ocol *outer_key = form == 2 ? pick_col(g, sc, OT_INT) : NULL;
    if (form == 2 && !outer_key)
        form = 0;
    sb_puts(sb, "(SELECT ");
    if (form == 0) {
        sub_aggregate(g, &in, ty, sb);
        sb_printf(sb, " FROM %s AS %s", t->name, alias);
        sub_where(g, &in, gchance(g, 3, 4), sb);
    } else if (form == 1) {
        gen(g, &in, ty, 1, sb);
        sb_printf(sb, " FROM %s AS %s", t->name, alias);
        sub_where(g, &in, gchance(g, 3, 4), sb);
        strbuf keys = STRBUF_INIT;
        table_keys(t, alias, &keys);
        total_order(g, &in, sb_str(&keys), sb);
        sb_free(&keys);
        sb_puts(sb, " LIMIT 1");
    } else {
        /* by primary key: t1 or t2, keyed by an INTEGER of the outer row */
        const struct otable *kt = &otables[gpick(g, 2)];
        in.n = 0;
        scope_add_table(&in, kt, alias);
        gen(g, &in, ty, 1, sb);
        sb_printf(sb, " FROM %s AS %s WHERE %s.id = ", kt->name, alias, alias);
        /* an INTEGER column of the outer row */
        sb_puts(sb, outer_key->ref);
    }
    sb_putc(sb, ')');
    g->depth--;
}

static void exists_subquery(ogen *g, const oscope *sc, strbuf *sb)
{
    const struct otable *t = pick_table(g);
    char alias[16];
    new_alias(g, alias);
    oscope in;
    table_scope(&in, t, alias, sc);
    g->depth++;
    g->subs++;
    sb_printf(sb, "%sEXISTS (SELECT 1 FROM %s AS %s", gchance(g, 1, 3) ? "NOT " : "", t->name,
              alias);
    if (gchance(g, 1, 4)) { /* a join inside */
        const struct otable *u = pick_table(g);
        char ua[16];
        new_alias(g, ua);
        int before = in.n;
        scope_add_table(&in, u, ua);
        sb_printf(sb, " JOIN %s AS %s ON ", u->name, ua);
        const ocol *r = &in.c[before + gpick(g, u->ncols)];
        oscope left = in;
        left.n = before;
        left.outer = NULL;
        const ocol *l = scope_pick(g, &left, r->ty);
        if (l)
            sb_printf(sb, "%s = %s", l->ref, r->ref);
        else
            sb_printf(sb, "%s IS NOT NULL", r->ref);
    }
    sub_where(g, &in, gchance(g, 4, 5), sb);
    sb_putc(sb, ')');
    g->depth--;
}

static void in_subquery(ogen *g, const oscope *sc, enum oty ty, strbuf *sb)
{
    const struct otable *t = pick_table(g);
    char alias[16];
    new_alias(g, alias);
    oscope in;
    table_scope(&in, t, alias, sc);
    g->depth++;
    g->subs++;
    bool not = gchance(g, 1, 3), distinct = gchance(g, 1, 4);
    sb_printf(sb, "%s IN (SELECT %s", not ? " NOT" : "", distinct ? "DISTINCT " : "");
    oscope local = in;
    local.outer = NULL;
    /* its collation decides IN's; but the member of a NOCASE class that
     * DISTINCT keeps is each engine's own, and IN may compare it under
     * BINARY ('b' IN (SELECT DISTINCT s ...) with 'B' and 'b' in s) */
    if (distinct)
        gen_shown(g, &local, ty, 1, sb);
    else
        gen(g, &local, ty, 1, sb);
    sb_printf(sb, " FROM %s AS %s", t->name, alias);
    sub_where(g, &in, gchance(g, 1, 2), sb);
    sb_putc(sb, ')');
    g->depth--;
}

/* ---- FROM ------------------------------------------------------------------------- */

/* What a FROM clause gives its query. */
typedef struct ofrom {
    oscope sc;
    strbuf keys;                   /* its rows' key, for a total ORDER BY */
    const struct otable *first;    /* the first item, when a table */
    char first_alias[16];
    int items;
} ofrom;

static void gen_grouped_body(ogen *g, const oscope *outer, int ncols, const enum oty *tys,
                             const char *const *names, strbuf *sb, strbuf *order_keys);

/* A derived table over one table: a projection that keeps the table's
 * key (sometimes a window of it), a GROUP BY, or a DISTINCT. Its columns
 * c0.. join sc under alias; its key goes to keys. */
static void gen_derived(ogen *g, const char *alias, strbuf *sb, oscope *sc, strbuf *keys)
{
    const struct otable *t = pick_table(g);
    char in_alias[16];
    new_alias(g, in_alias);
    oscope in;
    table_scope(&in, t, in_alias, NULL);
    bool no_avg = g->no_avg;
    g->no_avg = true;
    g->in_derived = true;
    int form = gpick(g, 3);
    if (form == 0) {
        sb_puts(sb, "SELECT ");
        int n = 0;
        for (int i = 0; i < t->nkey; i++, n++) {
            sb_printf(sb, "%s%s.%s AS c%d", n ? ", " : "", in_alias, t->cols[i].name, n);
            char col[16];
            snprintf(col, sizeof col, "c%d", n);
            scope_add(sc, alias, col, t->cols[i].ty, t->cols[i].nocase ? E_NOCASE : 0);
            sb_printf(keys, "%s%s.%s", keys->len ? ", " : "", alias, col);
        }
        int extra = 1 + gpick(g, 2);
        for (int i = 0; i < extra; i++, n++) {
            static const enum oty tys[] = { OT_INT, OT_REAL, OT_TEXT, OT_BOOL, OT_FLT };
            enum oty ty = tys[gpick(g, 5)];
            sb_puts(sb, ", ");
            int f = gen(g, &in, ty, 1, sb);
            sb_printf(sb, " AS c%d", n);
            char col[16];
            snprintf(col, sizeof col, "c%d", n);
            scope_add(sc, alias, col, ty, f & E_NOCASE);
        }
        sb_printf(sb, " FROM %s AS %s", t->name, in_alias);
        if (gchance(g, 1, 2)) {
            sb_puts(sb, " WHERE ");
            gen_condition(g, &in, 1, sb);
        }
        if (gchance(g, 1, 4)) {
            strbuf tk = STRBUF_INIT;
            table_keys(t, in_alias, &tk);
            total_order(g, &in, sb_str(&tk), sb);
            sb_free(&tk);
            sb_printf(sb, " LIMIT %d", 1 + gpick(g, 6));
            if (gchance(g, 1, 2))
                sb_printf(sb, " OFFSET %d", gpick(g, 3));
        }
    } else if (form == 1) {
        enum oty tys[3];
        const char *names[3] = { "c0", "c1", "c2" };
        int ncols = 2 + gpick(g, 2);
        for (int i = 0; i < ncols; i++) {
            static const enum oty vt[] = { OT_INT, OT_REAL, OT_TEXT, OT_FLT };
            tys[i] = vt[gpick(g, 4)];
        }
        strbuf body = STRBUF_INIT, okeys = STRBUF_INIT;
        gen_grouped_body(g, NULL, ncols, tys, names, &body, &okeys);
        sb_puts(sb, sb_str(&body));
        for (int i = 0; i < ncols; i++)
            scope_add(sc, alias, names[i], tys[i], 0);
        /* the group keys are the first columns; okeys counts them */
        int nkeys = (int)strtol(sb_str(&okeys), NULL, 10);
        for (int i = 0; i < (nkeys ? nkeys : ncols); i++)
            sb_printf(keys, "%s%s.c%d", keys->len ? ", " : "", alias, i);
        sb_free(&body);
        sb_free(&okeys);
    } else {
        int ncols = 1 + gpick(g, 2);
        sb_puts(sb, "SELECT DISTINCT ");
        for (int i = 0; i < ncols; i++) {
            static const enum oty tys[] = { OT_INT, OT_REAL, OT_TEXT, OT_FLT };
            enum oty ty = tys[gpick(g, 4)];
            sb_puts(sb, i ? ", " : "");
            gen_shown(g, &in, ty, 1, sb);
            sb_printf(sb, " AS c%d", i);
            char col[16];
            snprintf(col, sizeof col, "c%d", i);
            scope_add(sc, alias, col, ty, 0);
            sb_printf(keys, "%s%s.%s", keys->len ? ", " : "", alias, col);
        }
        sb_printf(sb, " FROM %s AS %s", t->name, in_alias);
        if (gchance(g, 1, 2)) {
            sb_puts(sb, " WHERE ");
            gen_condition(g, &in, 1, sb);
        }
    }
    g->no_avg = no_avg;
    g->in_derived = false;
}

/* One FROM item: a table, or (at the top) a derived table or CTE. */
static void from_item(ogen *g, ofrom *fr, bool derived_ok, strbuf *sb)
{
    char alias[16];
    new_alias(g, alias);
    if (derived_ok && !g->in_derived && g->depth == 0 && gchance(g, 1, 5)) {
        strbuf body = STRBUF_INIT;
        gen_derived(g, alias, &body, &fr->sc, &fr->keys);
        if (gchance(g, 1, 3)) {
            sb_printf(&g->with, "%s%s_cte AS (%s)", g->with.len ? ", " : "WITH ", alias,
                      sb_str(&body));
            sb_printf(sb, "%s_cte AS %s", alias, alias);
        } else {
            sb_printf(sb, "(%s) AS %s", sb_str(&body), alias);
        }
        sb_free(&body);
        return;
    }
    const struct otable *t = pick_table(g);
    if (fr->items == 0) {
        fr->first = t;
        memcpy(fr->first_alias, alias, sizeof alias);
    }
    scope_add_table(&fr->sc, t, alias);
    table_keys(t, alias, &fr->keys);
    sb_printf(sb, "%s AS %s", t->name, alias);
}

/* An equality between a column of the item that starts at column `from`
 * and an earlier column of the same type. */
static bool join_equality(ogen *g, const ofrom *fr, int from, strbuf *sb)
{
    for (int tries = 0; tries < 12; tries++) {
        const ocol *r = &fr->sc.c[from + gpick(g, fr->sc.n - from)];
        if (r->ty == OT_BOOL)
            continue;
        oscope left = fr->sc;
        left.n = from;
        left.outer = NULL;
        const ocol *l = scope_pick(g, &left, r->ty);
        if (l) {
            sb_printf(sb, "%s = %s", l->ref, r->ref);
            return true;
        }
    }
    return false;
}

/* FROM with 1..max_items items joined by every kind of join. Every ON
 * term reads a column: SQLite 3.40 loses the rows of "a JOIN b ON <a
 * constant false term> RIGHT JOIN c ..." (a bug fixed later; see
 * tests/sql/test_differential.c). Comma and CROSS joins past the second
 * item get an equality in WHERE (where), to keep results small. */
static void gen_from(ogen *g, ofrom *fr, int max_items, bool derived_ok, strbuf *sb,
                     strbuf *where)
{
    static const char *const joins[] = { ", ", " CROSS JOIN ", " JOIN ", " LEFT JOIN ",
                                         " RIGHT JOIN ", " FULL JOIN ", " INNER JOIN ",
                                         " LEFT JOIN " };
    memset(fr, 0, sizeof *fr);
    int n = 1 + gpick(g, max_items);
    sb_puts(sb, " FROM ");
    for (int i = 0; i < n; i++) {
        int j = i == 0 ? -1 : gpick(g, 8);
        if (i)
            sb_puts(sb, joins[j]);
        int from = fr->sc.n;
        from_item(g, fr, derived_ok, sb);
        fr->items++;
        if (j >= 2) {
            sb_puts(sb, " ON ");
            if (!join_equality(g, fr, from, sb))
                sb_printf(sb, "%s IS NOT NULL", fr->sc.c[from].ref);
            if (gchance(g, 1, 4)) {
                oscope both = fr->sc;
                both.outer = NULL;
                bool no_sub = g->no_sub;
                g->no_sub = true; /* no subquery in ON */
                sb_puts(sb, " AND (");
                gen_condition(g, &both, 1, sb);
                sb_printf(sb, " OR %s IS NULL)", fr->sc.c[from].ref);
                g->no_sub = no_sub;
            }
        } else if (i >= 2) {
            strbuf eq = STRBUF_INIT;
            if (join_equality(g, fr, from, &eq))
                sb_printf(where, "%s%s", where->len ? " AND " : "", sb_str(&eq));
            sb_free(&eq);
        }
    }
}

/* " WHERE " + where's conjuncts and (sometimes) a random condition. */
static void gen_where(ogen *g, const oscope *sc, strbuf *where, unsigned chance_num,
                      unsigned chance_den, strbuf *sb)
{
    bool cond = gchance(g, chance_num, chance_den);
    if (!where->len && !cond)
        return;
    sb_puts(sb, " WHERE ");
    sb_puts(sb, sb_str(where));
    if (where->len && cond)
        sb_puts(sb, " AND ");
    if (cond) {
        sb_putc(sb, '(');
        gen_condition(g, sc, 3, sb);
        sb_putc(sb, ')');
    }
}

/* ---- queries -------------------------------------------------------------------- */

static void order_term_suffix(ogen *g, strbuf *sb)
{
    if (gchance(g, 1, 2))
        sb_puts(sb, " DESC");
    if (gchance(g, 1, 4))
        sb_puts(sb, gchance(g, 1, 2) ? " NULLS FIRST" : " NULLS LAST");
}

/* The aggregate call of a top-level output of type ty (a string_agg
 * column sets *sep). */
static void top_aggregate(ogen *g, const oscope *sc, enum oty ty, bool list_ok, char *sep,
                          strbuf *sb)
{
    strbuf call = STRBUF_INIT;
    *sep = 0;
    switch (ty) {
    case OT_INT:
        switch (gpick(g, 6)) {
        case 0: sb_puts(&call, "count(*)"); break;
        case 1:
            sb_puts(&call, "count(");
            agg_arg(g, sc, value_type(g), false, &call);
            sb_putc(&call, ')');
            break;
        case 2:
            sb_puts(&call, "count(DISTINCT ");
            agg_arg(g, sc, value_type(g), true, &call);
            sb_putc(&call, ')');
            break;
        case 3:
            sb_puts(&call, "sum(");
            agg_arg(g, sc, OT_INT, false, &call);
            sb_putc(&call, ')');
            break;
        default:
            sb_puts(&call, gchance(g, 1, 2) ? "min(" : "max(");
            agg_arg(g, sc, OT_INT, false, &call);
            sb_putc(&call, ')');
        }
        break;
    case OT_REAL: {
        static const char *const f[] = { "avg(", "total(", "sum(", "min(", "max(" };
        int k = g->no_avg ? 1 + gpick(g, 4) : gpick(g, 5);
        sb_puts(&call, f[k]);
        agg_arg(g, sc, k < 2 && gchance(g, 1, 2) ? OT_INT : OT_REAL, false, &call);
        sb_putc(&call, ')');
        break;
    }
    case OT_FLT: {
        static const char *const f[] = { "min(", "max(", "sum(", "total(", "avg(" };
        sb_puts(&call, f[g->no_avg ? gpick(g, 4) : gpick(g, 5)]);
        agg_arg(g, sc, OT_FLT, false, &call);
        sb_putc(&call, ')');
        break;
    }
    default:
        if (list_ok && gchance(g, 1, 2)) {
            int k = gpick(g, 3);
            *sep = gchance(g, 1, 2) ? ',' : ';';
            enum oty at = gchance(g, 1, 3) ? OT_INT : OT_TEXT;
            if (k == 0) {
                sb_puts(&call, "string_agg(");
                agg_arg(g, sc, at, false, &call);
                sb_printf(&call, ", '%c')", *sep);
            } else if (k == 1) {
                sb_puts(&call, "group_concat(");
                agg_arg(g, sc, at, false, &call);
                sb_printf(&call, ", '%c')", *sep);
            } else {
                *sep = ',';
                sb_puts(&call, "group_concat(DISTINCT ");
                agg_arg(g, sc, at, true, &call);
                sb_putc(&call, ')');
            }
        } else {
            sb_puts(&call, gchance(g, 1, 2) ? "min(" : "max(");
            agg_arg(g, sc, OT_TEXT, true, &call);
            sb_putc(&call, ')');
        }
        break;
    }
    if (gchance(g, 1, 6)) {
        oscope local = *sc;
        local.outer = NULL;
        bool no_sub = g->no_sub;
        g->no_sub = true;
        sb_puts(&call, " FILTER (WHERE ");
        gen_bool(g, &local, 1, &call);
        sb_putc(&call, ')');
        g->no_sub = no_sub;
    }
    if (!*sep && ty == OT_INT && gchance(g, 1, 5))
        sb_printf(sb, "(%s + %d)", sb_str(&call), gpick(g, 3));
    else if (!*sep && ty != OT_FLT && gchance(g, 1, 6)) {
        sb_printf(sb, "COALESCE(%s, ", sb_str(&call));
        literal(g, ty, sb);
        sb_putc(sb, ')');
    } else {
        sb_puts(sb, sb_str(&call));
    }
    sb_free(&call);
}

/* A GROUP BY key over sc: reads a column (a constant integer would be a
 * column number), no outer column (SQLite cannot resolve one there);
 * may hold a scalar subquery correlated to the grouped rows unless
 * subqueries is false. */
static int gen_key(ogen *g, const oscope *sc, enum oty ty, bool subqueries, strbuf *key)
{
    oscope local = *sc;
    local.outer = NULL;
    bool no_sub = g->no_sub;
    g->no_sub = no_sub || !subqueries;
    int f;
    do {
        sb_truncate(key, 0);
        f = gen(g, &local, ty, gchance(g, 1, 2) ? 0 : 1, key);
    } while (!(f & E_COL));
    g->no_sub = no_sub;
    return f;
}

/* SELECT k1, .., agg, .. FROM .. [WHERE] GROUP BY k1, .. [HAVING]: the
 * first columns are the group keys (maybe none: a scalar aggregate).
 * order_keys gets the number of keys, then a space and the ORDER BY list
 * that orders the groups totally (the key expressions). */
static void gen_grouped_body(ogen *g, const oscope *outer, int ncols, const enum oty *tys,
                             const char *const *names, strbuf *sb, strbuf *order_keys)
{
    ofrom fr;
    strbuf from = STRBUF_INIT, where = STRBUF_INIT, keys[OQ_MAXCOLS];
    gen_from(g, &fr, 2, true, &from, &where);
    fr.sc.outer = outer;
    int nkeys = gpick(g, ncols + 1);
    if (nkeys == ncols && gchance(g, 1, 2))
        nkeys--;
    /* No subquery in a key when a key is REAL: SQLite 3.40 evaluates a
     * subquery key again for the result, and an index probe there
     * converts an outer REAL column in place (see test_differential.c). */
    bool sub_keys = gchance(g, 1, 4);
    for (int i = 0; i < nkeys; i++)
        sub_keys = sub_keys && tys[i] != OT_REAL && tys[i] != OT_FLT;
    sb_puts(sb, "SELECT ");
    sb_printf(order_keys, "%d ", nkeys);
    for (int i = 0; i < ncols; i++) {
        sb_puts(sb, i ? ", " : "");
        char sep = 0;
        if (i < nkeys) {
            sb_init(&keys[i]);
            int f = gen_key(g, &fr.sc, tys[i], sub_keys, &keys[i]);
            if (f & E_NOCASE)
                sb_printf(sb, "lower(%s)", sb_str(&keys[i]));
            else
                sb_puts(sb, sb_str(&keys[i]));
            sb_printf(order_keys, "%s%s", i ? ", " : "", sb_str(&keys[i]));
        } else {
            top_aggregate(g, &fr.sc, tys[i], false, &sep, sb);
        }
        if (names)
            sb_printf(sb, " AS %s", names[i]);
    }
    sb_puts(sb, sb_str(&from));
    gen_where(g, &fr.sc, &where, 1, 2, sb);
    if (nkeys) {
        sb_puts(sb, " GROUP BY ");
        for (int i = 0; i < nkeys; i++)
            sb_printf(sb, "%s%s", i ? ", " : "", sb_str(&keys[i]));
        if (gchance(g, 1, 3)) {
            char sep;
            sb_puts(sb, " HAVING ");
            top_aggregate(g, &fr.sc, OT_INT, false, &sep, sb);
            sb_printf(sb, " %s %d", gchance(g, 1, 2) ? ">" : "<=", gpick(g, 3));
        }
        for (int i = 0; i < nkeys; i++)
            sb_free(&keys[i]);
    }
    sb_free(&from);
    sb_free(&where);
    sb_free(&fr.keys);
}

/* ---- top-level queries -------------------------------------------------------------- */

static const char *const out_names[OQ_MAXCOLS] = { "o0", "o1", "o2", "o3", "o4", "o5" };

static void random_types(ogen *g, int n, enum oty *tys, bool bools)
{
    static const enum oty all[] = { OT_INT, OT_INT, OT_REAL, OT_TEXT, OT_TEXT, OT_FLT, OT_BOOL };
    for (int i = 0; i < n; i++)
        tys[i] = all[gpick(g, bools ? 7 : 6)];
}

static void window_of(ogen *g, oquery *q)
{
    q->window = true;
    q->offset = gchance(g, 1, 2) ? 0 : gpick(g, 5);
    q->limit = gchance(g, 1, 8) ? -1 : gpick(g, 9);
}

/* SELECT [DISTINCT] ... FROM 1-3 items [WHERE] [ORDER BY ... [LIMIT]]. */
static void gen_plain(ogen *g, oquery *q, bool ordered_ok, strbuf *sb)
{
    ofrom fr;
    strbuf from = STRBUF_INIT, where = STRBUF_INIT;
    gen_from(g, &fr, 3, true, &from, &where);
    bool distinct = gchance(g, 1, 6);
    q->ncols = 1 + gpick(g, 4);
    random_types(g, q->ncols, q->tys, true);
    sb_puts(sb, distinct ? "SELECT DISTINCT " : "SELECT ");
    for (int i = 0; i < q->ncols; i++) {
        sb_puts(sb, i ? ", " : "");
        if (distinct)
            gen_shown(g, &fr.sc, q->tys[i], 2, sb);
        else
            gen(g, &fr.sc, q->tys[i], 2, sb);
        sb_printf(sb, " AS %s", out_names[i]);
    }
    sb_puts(sb, sb_str(&from));
    gen_where(g, &fr.sc, &where, 3, 4, sb);
    if (ordered_ok && gchance(g, 1, 2)) {
        q->ordered = true;
        sb_puts(sb, " ORDER BY ");
        if (distinct) {
            for (int i = 0; i < q->ncols; i++) {
                sb_printf(sb, "%s%d", i ? ", " : "", i + 1);
                order_term_suffix(g, sb);
            }
        } else {
            /* a leading column of the first table: an index may serve a
             * prefix of the order, with ties at the window's boundary */
            if (fr.first && gchance(g, 2, 3)) {
                const struct otable *t = fr.first;
                strbuf term = STRBUF_INIT;
                sb_printf(&term, "%s.%s", fr.first_alias, t->cols[gpick(g, t->ncols)].name);
                order_term_suffix(g, &term);
                sb_puts(sb, sb_str(&term));
                sb_puts(sb, ", ");
                sb_free(&term);
            }
            int n = gpick(g, 2);
            for (int i = 0; i < n; i++) {
                enum oty ty = value_type(g);
                bool no_sub = g->no_sub;
                g->no_sub = true;
                bool collate = ty == OT_TEXT && gchance(g, 1, 4);
                strbuf term = STRBUF_INIT; /* with a column: a constant is a column number */
                while (!(gen(g, &fr.sc, ty, 1, &term) & E_COL))
                    sb_truncate(&term, 0);
                sb_printf(sb, collate ? "(%s) COLLATE NOCASE" : "%s", sb_str(&term));
                sb_free(&term);
                g->no_sub = no_sub;
                order_term_suffix(g, sb);
                sb_puts(sb, ", ");
            }
            sb_puts(sb, sb_str(&fr.keys));
        }
        if (gchance(g, 2, 3))
            window_of(g, q);
    }
    sb_free(&from);
    sb_free(&where);
    sb_free(&fr.keys);
}

/* Index parts a window can be led by: table, then the ORDER BY terms an
 * index of index_defs serves (its leading parts, in its direction or all
 * reversed). */
static const char *const window_leads[][3] = {
    { "t1", "a", "" },      { "t1", "b", "a" },     { "t1", "c DESC", "" },
    { "t1", "d", "" },      { "t1", "d DESC NULLS FIRST", "id" },
    { "t2", "t1id", "" },   { "t2", "x", "s" },     { "t2", "s DESC", "" },
    { "t2", "f", "" },      { "t3", "k", "" },      { "t3", "v DESC", "k" },
};
#define NLEADS (int)(sizeof window_leads / sizeof window_leads[0])

/* Reverses an ORDER BY term: ASC <-> DESC, and the NULL placement with it. */
static void reversed_term(const char *term, strbuf *sb)
{
    char col[32];
    sscanf(term, "%31s", col);
    bool desc = strstr(term, "DESC") != NULL;
    bool nulls_first = strstr(term, "NULLS FIRST") || (!desc && !strstr(term, "NULLS LAST"));
    sb_printf(sb, "%s%s NULLS %s", col, desc ? "" : " DESC", nulls_first ? "LAST" : "FIRST");
}

/* A window fed from an index prefix (seed 003): the driving table read
 * once, joined only to its right by joins that keep its rows, filtered
 * without subqueries; ORDER BY the leading parts of one of its indexes
 * (in the index's direction or all reversed; sometimes only the first
 * part), then other terms, then the keys, so ties of the served prefix
 * fall on the window's boundary. */
static void gen_index_window(ogen *g, oquery *q, strbuf *sb)
{
    const char *const *lead = window_leads[gpick(g, NLEADS)];
    const struct otable *t = &otables[lead[0][1] - '1'];
    ofrom fr;
    memset(&fr, 0, sizeof fr);
    strcpy(fr.first_alias, "a0");
    scope_add_table(&fr.sc, t, "a0");
    table_keys(t, "a0", &fr.keys);
    strbuf from = STRBUF_INIT;
    sb_printf(&from, " FROM %s AS a0", t->name);
    g->alias = 1;
    if (gchance(g, 1, 2)) {
        /* a lookup by t1's or t2's key: one row per driving row at most,
         * so big tables stay small results */
        const struct otable *u = &otables[gpick(g, 2)];
        scope_add_table(&fr.sc, u, "a1");
        table_keys(u, "a1", &fr.keys);
        const ocol *c = scope_pick(g, &fr.sc, OT_INT);
        sb_printf(&from, "%s %s AS a1 ON a1.id = %s", gchance(g, 1, 2) ? " LEFT JOIN" : " JOIN",
                  u->name, c->ref);
        g->alias = 2;
    }
    q->ncols = 1 + gpick(g, 3);
    random_types(g, q->ncols, q->tys, true);
    g->no_sub = true; /* the driving table is scanned once */
    sb_puts(sb, "SELECT ");
    for (int i = 0; i < q->ncols; i++) {
        sb_puts(sb, i ? ", " : "");
        gen(g, &fr.sc, q->tys[i], 1, sb);
        sb_printf(sb, " AS %s", out_names[i]);
    }
    sb_puts(sb, sb_str(&from));
    if (gchance(g, 1, 2)) {
        sb_puts(sb, " WHERE ");
        gen_condition(g, &fr.sc, 2, sb);
    }
    bool reverse = gchance(g, 1, 3);
    int parts = lead[2][0] && gchance(g, 2, 3) ? 2 : 1;
    sb_puts(sb, " ORDER BY ");
    for (int i = 0; i < parts; i++) {
        strbuf term = STRBUF_INIT, spelled = STRBUF_INIT;
        sb_printf(&term, "a0.%s", lead[1 + i]);
        if (reverse)
            reversed_term(sb_str(&term), &spelled);
        else
            sb_puts(&spelled, sb_str(&term));
        sb_puts(sb, sb_str(&spelled));
        sb_puts(sb, ", ");
        sb_free(&term);
        sb_free(&spelled);
    }
    if (gchance(g, 1, 2)) {
        const ocol *c = &fr.sc.c[gpick(g, fr.sc.n)];
        sb_printf(sb, "%s%s, ", c->ref, gchance(g, 1, 2) ? " DESC" : "");
    }
    sb_puts(sb, sb_str(&fr.keys));
    q->ordered = true;
    window_of(g, q);
    if (q->limit < 0)
        q->limit = 1 + gpick(g, 8);
    g->no_sub = false;
    sb_free(&from);
    sb_free(&fr.keys);
}

static void gen_grouped(ogen *g, oquery *q, bool ordered_ok, strbuf *sb)
{
    q->ncols = 1 + gpick(g, 4);
    static const enum oty vt[] = { OT_INT, OT_INT, OT_REAL, OT_TEXT, OT_TEXT, OT_FLT };
    for (int i = 0; i < q->ncols; i++)
        q->tys[i] = vt[gpick(g, 6)];
    strbuf body = STRBUF_INIT, okeys = STRBUF_INIT;
    gen_grouped_body(g, NULL, q->ncols, q->tys, out_names, &body, &okeys);
    sb_puts(sb, sb_str(&body));
    char *rest;
    int nkeys = (int)strtol(sb_str(&okeys), &rest, 10);
    if (nkeys && ordered_ok && gchance(g, 1, 2)) {
        q->ordered = true;
        sb_puts(sb, " ORDER BY ");
        if (nkeys < q->ncols && gchance(g, 1, 2)) {
            sb_printf(sb, "%d", nkeys + 1 + gpick(g, q->ncols - nkeys));
            order_term_suffix(g, sb);
            sb_puts(sb, ", ");
        }
        sb_puts(sb, rest + 1);
        if (gchance(g, 2, 3))
            window_of(g, q);
    }
    sb_free(&body);
    sb_free(&okeys);
}

/* A grouped query whose aggregate columns include string_agg lists:
 * made separately so the list columns are known. */
static void gen_lists(ogen *g, oquery *q, strbuf *sb)
{
    ofrom fr;
    strbuf from = STRBUF_INIT, where = STRBUF_INIT, key = STRBUF_INIT;
    g->no_sub = false;
    gen_from(g, &fr, 2, true, &from, &where);
    static const enum oty kt[] = { OT_INT, OT_TEXT };
    enum oty kty = kt[gpick(g, 2)];
    bool grouped = gchance(g, 3, 4);
    int f = grouped ? gen_key(g, &fr.sc, kty, false, &key) : 0;
    q->ncols = grouped + 1 + gpick(g, 2);
    sb_puts(sb, "SELECT ");
    for (int i = 0; i < q->ncols; i++) {
        sb_puts(sb, i ? ", " : "");
        if (grouped && i == 0) {
            q->tys[0] = kty;
            sb_printf(sb, (f & E_NOCASE) ? "lower(%s)" : "%s", sb_str(&key));
        } else {
            q->tys[i] = gchance(g, 3, 4) ? OT_TEXT : OT_INT;
            top_aggregate(g, &fr.sc, q->tys[i], true, &q->list_sep[i], sb);
        }
        sb_printf(sb, " AS %s", out_names[i]);
    }
    sb_puts(sb, sb_str(&from));
    gen_where(g, &fr.sc, &where, 1, 2, sb);
    if (grouped)
        sb_printf(sb, " GROUP BY %s", sb_str(&key));
    sb_free(&from);
    sb_free(&where);
    sb_free(&key);
    g->no_sub = false;
    sb_free(&fr.keys);
}

/* arm op arm [op arm] [ORDER BY every column [LIMIT]]: text columns never
 * NOCASE (the rows of a compound are chosen among equals). */
static void gen_compound(ogen *g, oquery *q, bool ordered_ok, strbuf *sb)
{
    static const char *const ops[] = { " UNION ", " UNION ALL ", " INTERSECT ", " EXCEPT " };
    q->ncols = 1 + gpick(g, 3);
    random_types(g, q->ncols, q->tys, false);
    int arms = 2 + gchance(g, 1, 4);
    for (int a = 0; a < arms; a++) {
        if (a)
            sb_puts(sb, ops[gpick(g, 4)]);
        if (gchance(g, 1, 3)) {
            strbuf okeys = STRBUF_INIT;
            gen_grouped_body(g, NULL, q->ncols, q->tys, a ? NULL : out_names, sb, &okeys);
            sb_free(&okeys);
            continue;
        }
        ofrom fr;
        strbuf from = STRBUF_INIT, where = STRBUF_INIT;
        gen_from(g, &fr, 2, false, &from, &where);
        sb_puts(sb, "SELECT ");
        for (int i = 0; i < q->ncols; i++) {
            sb_puts(sb, i ? ", " : "");
            gen_shown(g, &fr.sc, q->tys[i], 2, sb);
            if (!a)
                sb_printf(sb, " AS %s", out_names[i]);
        }
        sb_puts(sb, sb_str(&from));
        gen_where(g, &fr.sc, &where, 2, 3, sb);
        sb_free(&from);
        sb_free(&where);
        sb_free(&fr.keys);
    }
    if (ordered_ok && gchance(g, 1, 2)) {
        q->ordered = true;
        sb_puts(sb, " ORDER BY ");
        for (int i = 0; i < q->ncols; i++) {
            sb_printf(sb, "%s%d", i ? ", " : "", i + 1);
            order_term_suffix(g, sb);
        }
        if (gchance(g, 2, 3))
            window_of(g, q);
    }
}

void oq_generate(rng *r, const ogen_opts *o, oquery *q)
{
    memset(q, 0, sizeof *q);
    ogen g;
    memset(&g, 0, sizeof g);
    g.r = r;
    g.o = o;
    g.q = q;
    strbuf body = STRBUF_INIT;
    int k = o->big ? 0 : og_pick(r, 20);
    if (k < 3)
        gen_index_window(&g, q, &body);
    else if (k < 9)
        gen_plain(&g, q, true, &body);
    else if (k < 14)
        gen_grouped(&g, q, true, &body);
    else if (k < 16)
        gen_lists(&g, q, &body);
    else
        gen_compound(&g, q, true, &body);
    strbuf all = STRBUF_INIT;
    if (g.with.len)
        sb_printf(&all, "%s ", sb_str(&g.with));
    sb_puts(&all, sb_str(&body));
    CHECK(!sb_error(&all));
    q->sql = sb_take(&all, NULL);
    sb_free(&body);
    sb_free(&g.with);
}

/* Group columns the aggregate arm takes: equal values are identical
 * bytes (INTEGER, BINARY TEXT), so not c, d, s, f, r. */
static const char *const plain_group_cols[][2] = {
    { "t1", "a" }, { "t1", "b" }, { "t2", "t1id" }, { "t2", "x" }, { "t3", "k" },
    { "t3", "v" }, { "t3", "w" }, { "t4", "p" }, { "t4", "q" }, { "t4", "n" },
};

/* The INTEGER columns of table t other than its key (arguments of the
 * aggregate arm's sum/avg/count). */
static const char *int_column(rng *r, const struct otable *t)
{
    const char *cols[5];
    int n = 0;
    for (int i = 0; i < t->ncols; i++)
        if (t->cols[i].ty == OT_INT && i >= (t->nkey == 1 ? 1 : 0))
            cols[n++] = t->cols[i].name;
    return cols[og_pick(r, n)];
}

void oq_generate_simple(rng *r, oquery *q)
{
    ogen_opts o = { .mv = true };
    memset(q, 0, sizeof *q);
    ogen g;
    memset(&g, 0, sizeof g);
    g.r = r;
    g.o = &o;
    g.q = q;
    g.no_sub = true;
    strbuf sb = STRBUF_INIT;
    if (og_pick(r, 2) == 0) {
        /* projection: one table, a filter, columns and expressions */
        const struct otable *t = &otables[og_pick(r, NTABLES)];
        oscope sc = { 0, { { "", 0, 0 } }, NULL };
        scope_add_table(&sc, t, "a0");
        q->ncols = 1 + og_pick(r, 3);
        random_types(&g, q->ncols, q->tys, true);
        sb_puts(&sb, "SELECT ");
        for (int i = 0; i < q->ncols; i++) {
            sb_puts(&sb, i ? ", " : "");
            gen(&g, &sc, q->tys[i], 1, &sb);
            sb_printf(&sb, " AS %s", out_names[i]);
        }
        sb_printf(&sb, " FROM %s AS a0", t->name);
        if (og_chance(r, 2, 3)) {
            sb_puts(&sb, " WHERE ");
            gen_condition(&g, &sc, 2, &sb);
        }
    } else {
        /* GROUP BY plain columns (or none) with count, sum, avg, min, max */
        int k = og_pick(r, 10);
        const char *table = plain_group_cols[k][0];
        const struct otable *t = &otables[table[1] - '1'];
        int nkeys = og_pick(r, 3), n = 0;
        const char *keys[2];
        for (int i = 0; i < nkeys && i < 2; i++) {
            int c;
            do
                c = og_pick(r, 10);
            while (strcmp(plain_group_cols[c][0], table) != 0);
            keys[n++] = plain_group_cols[c][1];
            if (n == 2 && strcmp(keys[0], keys[1]) == 0)
                n--;
        }
        sb_puts(&sb, "SELECT ");
        for (int i = 0; i < n; i++) {
            sb_printf(&sb, "%sa0.%s AS %s", i ? ", " : "", keys[i], out_names[q->ncols]);
            q->tys[q->ncols++] = strcmp(keys[i], "b") == 0 || strcmp(keys[i], "w") == 0 ||
                                         strcmp(keys[i], "q") == 0
                                     ? OT_TEXT
                                     : OT_INT;
        }
        static const char *const aggs[] = { "count(*)", "sum(a0.%s)", "avg(a0.%s)",
                                            "count(a0.%s)", "min(a0.%s)", "max(a0.%s)",
                                            "total(a0.%s)" };
        int naggs = 1 + og_pick(r, 3);
        for (int i = 0; i < naggs && q->ncols < OQ_MAXCOLS; i++) {
            int a = og_pick(r, 7);
            char call[64];
            snprintf(call, sizeof call, aggs[a], int_column(r, t));
            sb_printf(&sb, "%s%s AS %s", q->ncols ? ", " : "", call, out_names[q->ncols]);
            q->tys[q->ncols++] = a == 2 || a == 6 ? OT_REAL : OT_INT;
        }
        sb_printf(&sb, " FROM %s AS a0", t->name);
        if (og_chance(r, 1, 3)) {
            oscope sc = { 0, { { "", 0, 0 } }, NULL };
            scope_add_table(&sc, t, "a0");
            sb_puts(&sb, " WHERE ");
            gen_condition(&g, &sc, 1, &sb);
        }
        for (int i = 0; i < n; i++)
            sb_printf(&sb, "%sa0.%s", i ? ", " : " GROUP BY ", keys[i]);
    }
    CHECK(!sb_error(&sb));
    q->sql = sb_take(&sb, NULL);
}

void oq_free(oquery *q)
{
    mem_free(q->sql);
    q->sql = NULL;
}

char *oq_text(const oquery *q, bool sqlite, int64_t offset, int64_t limit)
{
    strbuf sb = STRBUF_INIT;
    const char *p = q->sql;
    for (const char *m; sqlite && (m = strstr(p, "string_agg(")); p = m + 11) {
        sb_put(&sb, p, (size_t)(m - p));
        sb_puts(&sb, "group_concat(");
    }
    sb_puts(&sb, p);
    if (q->window)
        sb_printf(&sb, " LIMIT %lld OFFSET %lld", (long long)limit, (long long)offset);
    CHECK(!sb_error(&sb));
    return sb_take(&sb, NULL);
}

static int cmp_items(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the items of one "t:a,b,c" value (in place: same length). */
static void sort_items(char *v, size_t len, char sep)
{
    if (len < 2 || v[0] != 't')
        return;
    char *text = v + 2;
    size_t tlen = len - 2, n = 0;
    char *copy = malloc(tlen + 1), **items = malloc((tlen + 1) * sizeof *items);
    CHECK(copy && items);
    memcpy(copy, text, tlen);
    copy[tlen] = '\0';
    for (char *s = copy;;) {
        items[n++] = s;
        char *e = strchr(s, sep);
        if (!e)
            break;
        *e = '\0';
        s = e + 1;
    }
    qsort(items, n, sizeof *items, cmp_items);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(items[i]);
        if (i)
            text[at++] = sep;
        memcpy(text + at, items[i], l);
        at += l;
    }
    free(copy);
    free(items);
}

void oq_normalize(const oquery *q, char **row)
{
    bool any = false;
    for (int i = 0; i < q->ncols; i++)
        any = any || q->list_sep[i];
    if (!any)
        return;
    /* values are separated by '|', which no value here contains */
    char *p = *row;
    for (int i = 0; i < q->ncols && p; i++) {
        char *end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (q->list_sep[i])
            sort_items(p, len, q->list_sep[i]);
        p = end ? end + 1 : NULL;
    }
}

