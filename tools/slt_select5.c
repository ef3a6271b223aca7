/*
 * slt_select5.c - writes sqllogictest scripts in the shape of SQLite's
 * select5.test (issue 16), with SQLite's answers: 64 tables
 * tN(aN INTEGER, bN INTEGER, xN VARCHAR(40)) of 10 rows, then queries
 * that join 2 to 64 of them in a comma FROM list whose WHERE chains
 * equalities between them (aI = bJ) among constant filters, selecting
 * xN (sometimes aN) columns, rowsort.
 *
 * Everything comes from one seed, so a script is replayed from the seed
 * and the options written in its first comment. Each query draws its
 * tables and their FROM order, splits them into one to three components
 * (more than one: a real cross product), gives each component a shape
 * (chain, star, random tree or cycle, sometimes with extra equalities),
 * and adds constant filters and now and then a condition across two
 * tables that is not an equality. The FROM order is shuffled, or in a
 * quarter of the queries a shuffled order made connected (each table
 * joins one before it), which a planner may keep. Values are mostly permutations of
 * 1..10, so a connected component yields about ten rows; some tables
 * repeat values or hold NULLs, and a few have an index, so neither the
 * data nor the access paths are uniform. The expected values are SQLite's
 * result rendered, ordered and hashed by the runner's own functions
 * (slt_result.c, slt_order_values, slt_md5_values), so the script judges
 * an engine exactly as the runner would judge SQLite on it. A query
 * whose result has more than MAX_ROWS rows (a cross product of large
 * components), or that SQLite cannot answer within SQLITE_LIMIT, is drawn
 * again from the same random stream.
 *
 * The random generator is a self-contained splitmix64: the script must
 * not change when the test harness's generator does.
 */
#include "slt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define NTABLES 64
#define NROWS 10
#define MAX_ROWS 400
#define MAX_REDRAWS 1000
#define HASH_THRESHOLD 8
/* Seconds SQLite may take on a query before it is drawn again: the
 * script is meant for plans that SQLite finds quickly. */
#define SQLITE_LIMIT 1.0

/* ---- text and randomness ---------------------------------------------- */

static void die_oom(void)
{
    fputs("slt_select5: out of memory\n", stderr);
    exit(2);
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_add(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)(n > 0 ? n : 0) + 64) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            die_oom();
        b->p = p;
        b->cap = cap;
    }
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform enough in [0, n) for n far below 2^32. */
static int below(uint64_t *s, int n) { return (int)((next(s) >> 32) % (uint64_t)n); }
static int chance(uint64_t *s, int num, int den) { return below(s, den) < num; }

static void shuffle(uint64_t *s, int *v, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = below(s, i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ---- the generator -------------------------------------------------------- */

typedef struct gen {
    uint64_t s;
    FILE *f;
    int line; /* lines written so far */
    void *lite;
    slt_msg *msg;
    slt_result res;
    const char **vals;
    size_t capvals;
    slt_gen_stats *st;
    char perm[NTABLES + 1][2]; /* column a/b of table t is a permutation */
} gen;

/* Writes a record and a blank line after it; counts the lines. */
static int emit(gen *g, const sbuf *b)
{
    for (size_t i = 0; i < b->len; i++)
        g->line += b->p[i] == '\n';
    g->line++;
    if (fwrite(b->p, 1, b->len, g->f) != b->len || fputc('\n', g->f) == EOF) {
        snprintf(g->msg->text, sizeof g->msg->text, "cannot write the script");
        return -1;
    }
    return 0;
}

/* Runs sql on SQLite and writes it as a "statement ok" record. */
static int statement(gen *g, const char *sql)
{
    if (slt_engine_sqlite.exec(g->lite, sql, g->msg) != SLT_OK)
        return -1;
    sbuf b = { 0 };
    sb_add(&b, "statement ok\n%s\n", sql);
    g->st->records++;
    int rc = emit(g, &b);
    free(b.p);
    return rc;
}

/* A table's column of NROWS values: mostly a permutation of 1..NROWS;
 * else values drawn with repeats, or from 1..3 only (a join on it fans
 * out), or a permutation with a NULL or two. */
static int column_values(gen *g, char vals[NROWS][8])
{
    int v[NROWS];
    int kind = below(&g->s, 10);
    for (int i = 0; i < NROWS; i++)
        v[i] = kind == 7 ? 1 + below(&g->s, NROWS) : kind == 8 ? 1 + below(&g->s, 3) : i + 1;
    shuffle(&g->s, v, NROWS);
    int nulls = kind == 9 ? 1 + below(&g->s, 2) : 0;
    for (int i = 0; i < NROWS; i++)
        snprintf(vals[i], sizeof vals[i], "%d", v[i]);
    for (int i = 0; i < nulls; i++)
        snprintf(vals[below(&g->s, NROWS)], sizeof vals[0], "NULL");
    return kind < 7;
}

static int make_tables(gen *g)
{
    for (int t = 1; t <= NTABLES; t++) {
        char sql[1024], a[NROWS][8], b[NROWS][8];
        snprintf(sql, sizeof sql,
                 "CREATE TABLE t%d(a%d INTEGER, b%d INTEGER, x%d VARCHAR(40))", t, t, t, t);
        if (statement(g, sql) < 0)
            return -1;
        g->perm[t][0] = (char)column_values(g, a);
        g->perm[t][1] = (char)column_values(g, b);
        for (int r = 0; r < NROWS; r++) {
            snprintf(sql, sizeof sql, "INSERT INTO t%d VALUES(%s,%s,'table t%d row %d')", t,
                     a[r], b[r], t, r + 1);
            if (statement(g, sql) < 0)
                return -1;
        }
        if (chance(&g->s, 1, 6)) {
            char col = chance(&g->s, 1, 2) ? 'a' : 'b';
            snprintf(sql, sizeof sql, "CREATE INDEX t%d_%c ON t%d(%c%d)", t, col, t, col, t);
            if (statement(g, sql) < 0)
                return -1;
        }
    }
    return 0;
}

/* One query being drawn. */
typedef struct query {
    int n;               /* tables */
    int tab[NTABLES];    /* their numbers, in FROM order */
    int comp[NTABLES];   /* component of tab[i] */
    int ncomp;
    char *conj[4 * NTABLES]; /* WHERE conjuncts */
    int nconj;
    int edge[2 * NTABLES][2]; /* the equalities' tables */
    int nedge;
    char types[16];
    sbuf sql;
} query;

static void add_conj(query *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_conj(query *q, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (q->nconj == (int)(sizeof q->conj / sizeof q->conj[0]))
        return; /* not reached: a query has fewer conditions */
    if (!(q->conj[q->nconj++] = strdup(text)))
        die_oom();
}

static char ab(gen *g) { return chance(&g->s, 1, 2) ? 'a' : 'b'; }

/* Column c of table t, or in a query of many tables mostly its other
 * column if only that one is a permutation: every equality on a column
 * with gaps loses rows, and a long chain of them would leave nothing. */
static char join_column(gen *g, const query *q, int t, char c)
{
    char other = c == 'a' ? 'b' : 'a';
    if (q->n > 8 && !g->perm[t][c - 'a'] && g->perm[t][other - 'a'] && chance(&g->s, 9, 10))
        return other;
    return c;
}

/* An equality between tables u and v, sides and columns drawn. */
static void equality(gen *g, query *q, int u, int v)
{
    if (chance(&g->s, 1, 2)) {
        int t = u;
        u = v;
        v = t;
    }
    char cu = ab(g), cv = ab(g);
    if (cu == cv && chance(&g->s, 3, 4)) /* select5 mostly pairs aI with bJ */
        cv = cu == 'a' ? 'b' : 'a';
    cu = join_column(g, q, u, cu);
    cv = join_column(g, q, v, cv);
    add_conj(q, "%c%d = %c%d", cu, u, cv, v);
    if (q->nedge < (int)(sizeof q->edge / sizeof q->edge[0])) {
        q->edge[q->nedge][0] = u;
        q->edge[q->nedge++][1] = v;
    }
}

/* A filter on table t alone. */
static void constant_filter(gen *g, query *q, int t)
{
    int c = 1 + below(&g->s, NROWS);
    char col = ab(g);
    switch (below(&g->s, 8)) {
    case 0: case 1: add_conj(q, "%c%d = %d", col, t, c); break;
    case 2:
        add_conj(q, "%c%d IN (%d,%d,%d)", col, t, c, 1 + below(&g->s, NROWS),
                 1 + below(&g->s, NROWS));
        break;
    case 3: add_conj(q, "%c%d BETWEEN %d AND %d", col, t, c, c + below(&g->s, 4)); break;
    case 4: add_conj(q, "%c%d %s %d", col, t, chance(&g->s, 1, 2) ? "<" : ">=", c); break;
    case 5: add_conj(q, "x%d = 'table t%d row %d'", t, t, c); break;
    case 6: add_conj(q, "(a%d = %d OR b%d = %d)", t, c, t, 1 + below(&g->s, NROWS)); break;
    default: add_conj(q, "%c%d IS NOT NULL", col, t); break;
    }
}

/* A condition on two tables that no equi-join can use. */
static void cross_condition(gen *g, query *q, int u, int v)
{
    switch (below(&g->s, 3)) {
    case 0: add_conj(q, "%c%d < %c%d", ab(g), u, ab(g), v); break;
    case 1: add_conj(q, "%c%d + %c%d = %d", ab(g), u, ab(g), v, 2 + below(&g->s, 19)); break;
    default: add_conj(q, "%c%d <> %c%d", ab(g), u, ab(g), v); break;
    }
}

/* Joins the m tables of one component (members, in a drawn order). */
static void connect(gen *g, query *q, const int *members, int m)
{
    enum { CHAIN, STAR, TREE, CYCLE };
    /* Chains and trees most, cycles least: closing a cycle keeps about a
     * tenth of the rows, and empty results test little. */
    static const int weights[] = { CHAIN, CHAIN, CHAIN, STAR, STAR, TREE, TREE, TREE, CYCLE };
    int shape = weights[below(&g->s, 9)];
    if (shape == CYCLE && m < 3)
        shape = CHAIN;
    for (int i = 1; i < m; i++) {
        int parent = shape == STAR ? 0 : shape == TREE ? below(&g->s, i) : i - 1;
        equality(g, q, members[parent], members[i]);
    }
    if (shape == CYCLE)
        equality(g, q, members[m - 1], members[0]);
    if (m >= 3 && chance(&g->s, 1, 8)) {
        int extra = 1 + below(&g->s, 2);
        for (int e = 0; e < extra; e++) {
            int u = below(&g->s, m), v = below(&g->s, m);
            if (u != v)
                equality(g, q, members[u], members[v]);
        }
    }
}

/* Tables in a query: mostly few, a quarter 9-20, a quarter up to max. */
static int draw_size(gen *g, int max)
{
    int n;
    switch (below(&g->s, 4)) {
    case 0: case 1: n = 2 + below(&g->s, 7); break;
    case 2: n = 9 + below(&g->s, 12); break;
    default: n = 21 + below(&g->s, NTABLES - 20); break;
    }
    return n < max ? n : max;
}

/* Reorders from (a shuffled order) so that every table but the first of
 * each component has an equality with a table before it: an order with
 * no cross product before the last component, which a planner may keep
 * as it is written. */
static void connected_order(const query *q, int *from)
{
    int out[NTABLES], n = 0;
    char placed[NTABLES + 1] = { 0 };
    while (n < q->n) {
        int grew = 0;
        for (int i = 0; i < q->n && !grew; i++) {
            int t = from[i];
            for (int e = 0; !placed[t] && e < q->nedge && n > 0; e++) {
                int u = q->edge[e][0], v = q->edge[e][1];
                if ((u == t && placed[v]) || (v == t && placed[u])) {
                    out[n++] = t;
                    placed[t] = 1;
                    grew = 1;
                }
            }
        }
        /* Nothing connects: the next component starts with the first
         * table left. */
        for (int i = 0; i < q->n && !grew; i++) {
            if (!placed[from[i]]) {
                out[n++] = from[i];
                placed[from[i]] = 1;
                grew = 1;
            }
        }
    }
    memcpy(from, out, (size_t)n * sizeof out[0]);
}

static void draw_query(gen *g, query *q, int max_tables)
{
    int all[NTABLES];
    for (int i = 0; i < NTABLES; i++)
        all[i] = i + 1;
    shuffle(&g->s, all, NTABLES);
    q->n = draw_size(g, max_tables);
    memcpy(q->tab, all, (size_t)q->n * sizeof q->tab[0]);
    q->ncomp = 1;
    if (q->n >= 2 && chance(&g->s, 1, 5))
        q->ncomp = q->n >= 3 && chance(&g->s, 1, 4) ? 3 : 2;
    /* The first ncomp tables found the components; the rest join one. */
    for (int i = 0; i < q->n; i++)
        q->comp[i] = i < q->ncomp ? i : below(&g->s, q->ncomp);
    for (int c = 0; c < q->ncomp; c++) {
        int members[NTABLES], m = 0;
        for (int i = 0; i < q->n; i++)
            if (q->comp[i] == c)
                members[m++] = q->tab[i];
        shuffle(&g->s, members, m);
        connect(g, q, members, m);
        /* Components of a cross product are filtered more often, so the
         * product stays small enough to be checked. */
        int filters = chance(&g->s, q->ncomp > 1 ? 3 : 1, 4) ? 1 + chance(&g->s, 1, 4) : 0;
        for (int f = 0; f < filters; f++)
            constant_filter(g, q, members[below(&g->s, m)]);
    }
    if (q->n >= 2 && chance(&g->s, 1, 6)) {
        int u = below(&g->s, q->n), v = (u + 1 + below(&g->s, q->n - 1)) % q->n;
        cross_condition(g, q, q->tab[u], q->tab[v]);
    }

    /* Result columns: mostly xN of 1-4 tables, now and then aN. */
    int ncol = 1 + below(&g->s, q->n < 4 ? q->n : 4);
    if (chance(&g->s, 1, 10))
        ncol = 1 + below(&g->s, q->n < 12 ? q->n : 12);
    sb_add(&q->sql, "SELECT ");
    for (int i = 0; i < ncol; i++) {
        int t = q->tab[below(&g->s, q->n)];
        int num = chance(&g->s, 1, 8);
        q->types[i] = num ? 'I' : 'T';
        sb_add(&q->sql, "%s%c%d", i ? ", " : "", num ? 'a' : 'x', t);
    }
    q->types[ncol] = 0;

    /* FROM in a shuffled order, conjuncts shuffled too. */
    int from[NTABLES];
    memcpy(from, q->tab, (size_t)q->n * sizeof from[0]);
    shuffle(&g->s, from, q->n);
    if (chance(&g->s, 1, 4))
        connected_order(q, from);
    sb_add(&q->sql, "\n  FROM ");
    for (int i = 0; i < q->n; i++)
        sb_add(&q->sql, "%st%d", i ? "," : "", from[i]);
    for (int i = q->nconj - 1; i > 0; i--) {
        int j = below(&g->s, i + 1);
        char *t = q->conj[i];
        q->conj[i] = q->conj[j];
        q->conj[j] = t;
    }
    for (int i = 0; i < q->nconj; i++)
        sb_add(&q->sql, "\n %s %s", i ? "  AND" : "WHERE", q->conj[i]);
}

static void query_free(query *q)
{
    for (int i = 0; i < q->nconj; i++)
        free(q->conj[i]);
    free(q->sql.p);
}

/* Draws queries until one has at most MAX_ROWS rows in SQLite; writes it
 * with SQLite's answer. */
static int one_query(gen *g, int max_tables)
{
    for (int tries = 0; tries < MAX_REDRAWS; tries++) {
        query q;
        memset(&q, 0, sizeof q);
        draw_query(g, &q, max_tables);
        slt_result_reset(&g->res, q.types);
        double start = slt_now();
        int rc = slt_engine_sqlite.query(g->lite, q.sql.p, &g->res, g->msg);
        double took = slt_now() - start;
        size_t nrow = g->res.nval / (size_t)g->res.ncol;
        if (rc != SLT_OK && took < SQLITE_LIMIT) {
            query_free(&q);
            return -1;
        }
        if (rc != SLT_OK || nrow > MAX_ROWS) {
            query_free(&q);
            g->st->redrawn++;
            g->st->sqlite_slow += rc != SLT_OK;
            continue;
        }
        slt_order_values(&g->res, "rowsort", &g->vals, &g->capvals);
        sbuf b = { 0 };
        sb_add(&b, "query %s rowsort\n%s\n----\n", q.types, q.sql.p);
        if (g->res.nval > HASH_THRESHOLD) {
            char md5[33];
            slt_md5_values(g->vals, g->res.nval, md5);
            sb_add(&b, "%zu values hashing to %s\n", g->res.nval, md5);
        } else {
            for (size_t i = 0; i < g->res.nval; i++)
                sb_add(&b, "%s\n", g->vals[i]);
        }
        slt_gen_stats *st = g->st;
        if (took > st->slowest || !st->slowest_line) {
            st->slowest = took;
            st->slowest_line = g->line + 1;
            st->slowest_tables = q.n;
        }
        st->queries++;
        st->records++;
        st->total += took;
        st->empty += nrow == 0;
        st->products += q.ncomp > 1;
        st->max_tables = q.n > st->max_tables ? q.n : st->max_tables;
        query_free(&q);
        rc = emit(g, &b);
        free(b.p);
        return rc;
    }
    snprintf(g->msg->text, sizeof g->msg->text,
             "no query with at most %d rows that SQLite answers in %.1f s in %d draws",
             MAX_ROWS, SQLITE_LIMIT, MAX_REDRAWS);
    return -1;
}

int slt_gen_select5(FILE *f, const slt_gen_options *o, slt_gen_stats *st, slt_msg *msg)
{
    memset(st, 0, sizeof *st);
    gen g = { .s = o->seed, .f = f, .msg = msg, .st = st };
    int max_tables = o->max_tables < 2 ? 2 : o->max_tables > NTABLES ? NTABLES : o->max_tables;
    g.lite = slt_engine_sqlite.open(msg);
    if (!g.lite)
        return -1;
    slt_engine_sqlite.limit(g.lite, SQLITE_LIMIT);
    slt_result_init(&g.res);
    sbuf head = { 0 };
    sb_add(&head, "# select5-style joins, generated with SQLite's answers by\n"
                  "#   select5gen --seed %llu --queries %d --max-tables %d\n"
                  "hash-threshold %d\n",
           (unsigned long long)o->seed, o->nqueries, max_tables, HASH_THRESHOLD);
    int rc = emit(&g, &head);
    free(head.p);
    if (rc == 0)
        rc = make_tables(&g);
    for (int i = 0; rc == 0 && i < o->nqueries; i++)
        rc = one_query(&g, max_tables);
    if (rc == 0 && fflush(f) != 0) {
        snprintf(msg->text, sizeof msg->text, "cannot write the script");
        rc = -1;
    }
    slt_engine_sqlite.close(g.lite);
    slt_result_free(&g.res);
    free(g.vals);
    return rc;
}
