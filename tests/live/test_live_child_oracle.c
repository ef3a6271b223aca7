/*
 * test_live_child_oracle.c - child live results (LIVE (query)) against an
 * oracle, their lifecycle by name, and allocation failures.
 *
 * The oracle keeps a mirror of every result of a live query built only
 * from its batches: the root's rows, and per child handle (found by its
 * pointer when a parent batch first shows it, whose callback the parent's
 * callback then sets) its rows, by key and, when the child has an ORDER BY
 * of its own, in order by the batches' positions. The cases: two and
 * three levels, a LIMIT in a child, a non-key nullable correlation (a
 * shared bucket), a NULL-able one, children with a join, a GROUP BY and
 * DISTINCT. After every step of a random history over users / issues /
 * comments (writes of correlation, order and other columns, transactions
 * with savepoints that commit or roll back, index drops that rebuild the
 * queries) it checks:
 *  (a) every handle's mirror is its child query run fresh with the
 *      parent's correlation value bound as ?1;
 *  (b) the root's mirror is the root query run fresh (LIVE columns left
 *      out: every case shows its correlation columns);
 *  (c) ldb_live_read of every result gives its mirror, and names only
 *      active handles, each for the tuple of the row that shows it;
 *  (d) parent rows with equal correlation values show one handle,
 *      distinct values distinct handles (NULL values share one, as
 *      DISTINCT does: its child has no rows);
 *  (e) a handle whose last parent left has no rows and gets no batch again;
 *  (f) a result whose own table the commit did not write gets no batch
 *      (a child-only change does not re-emit the parent), unless its
 *      handle was made or left in that commit; a rollback publishes nothing;
 *  (g) ldb_live_stats child_results is the number of active handles;
 * and that each result gets at most one batch per commit, the root's
 * first, then the handles' by column and activation number, and that a
 * new handle is numbered above every earlier one (live#N).
 *
 * The lifecycle cases (sharing, retirement, reactivation, retained
 * handles, closing the root from a child's callback or under a retained
 * child, ldb_close with retained handles) and the NOMEM sweeps (open, and
 * a commit moving routes) check that memory comes back (mem_live). The
 * bugs it found have regression cases by name: LIVE beside a hidden ORDER
 * BY column, handles under a window, an open over an empty parent, and a
 * commit whose install runs out of memory midway (root and handles are
 * installed all or none).
 *
 * Callbacks record the first thing that went wrong instead of failing
 * inside the library (a CHECK there would jump over its frames).
 * Random cases print their seed; LDB_SEED replays them; LDB_TEST_SCALE=k
 * makes the histories k times longer.
 */
#include "test.h"
#include "test_db.h"
#include "include_rows.h"

#include "base/mem.h"
#include "livedb.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>


static const char schema[] =
    "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, team INTEGER);"
    "CREATE TABLE issues(id INTEGER PRIMARY KEY, assignee INTEGER, status TEXT, "
    " created INTEGER, title TEXT);"
    "CREATE TABLE comments(id INTEGER PRIMARY KEY, issue_id INTEGER, at INTEGER, body TEXT);";

enum { T_USERS = 1, T_ISSUES = 2, T_COMMENTS = 4 };

/* ---- the cases ------------------------------------------------------------------------------- */

#define MAXCOL 3

/* A LIVE column: where its cells are, and its child query run fresh. */
struct col_spec {
    int parent;        /* -1: in the root's rows; else in the rows of that column's handles */
    int cell;          /* its column in those rows */
    int corr;          /* the column of those rows the child reads (bound as ?1) */
    unsigned table;    /* the table the child's rows come from */
    bool ordered;      /* the child has an ORDER BY of its own */
    const char *fresh; /* the child for ?1, its LIVE columns left out */
};

struct case_spec {
    const char *live;
    const char *fresh; /* the root, its LIVE columns left out */
    unsigned table;
    bool ordered;
    int ncols;         /* in the order the query's columns are numbered: parents first */
    struct col_spec col[MAXCOL];
};

static const struct case_spec cases[] = {
    /* users and their issues, by name */
    { "SELECT u.id, u.name, LIVE (SELECT i.id, i.title, i.created FROM issues i "
      "WHERE i.assignee = u.id ORDER BY i.created, i.id) AS issues FROM users u "
      "ORDER BY u.name, u.id",
      "SELECT u.id, u.name FROM users u ORDER BY u.name, u.id", T_USERS, true, 1,
      { { -1, 2, 0, T_ISSUES, true,
          "SELECT i.id, i.title, i.created FROM issues i WHERE i.assignee = ?1 "
          "ORDER BY i.created, i.id" } } },
    /* three levels: issues with their LIVE comments */
    { "SELECT u.id, LIVE (SELECT i.id, i.title, i.created, LIVE (SELECT c.id, c.body, c.at "
      "FROM comments c WHERE c.issue_id = i.id ORDER BY c.at, c.id) AS comments "
      "FROM issues i WHERE i.assignee = u.id ORDER BY i.created, i.id) AS issues "
      "FROM users u ORDER BY u.id",
      "SELECT u.id FROM users u ORDER BY u.id", T_USERS, true, 2,
      { { -1, 1, 0, T_ISSUES, true,
          "SELECT i.id, i.title, i.created FROM issues i WHERE i.assignee = ?1 "
          "ORDER BY i.created, i.id" },
        { 0, 3, 0, T_COMMENTS, true,
          "SELECT c.id, c.body, c.at FROM comments c WHERE c.issue_id = ?1 "
          "ORDER BY c.at, c.id" } } },
    /* a LIMIT and a filter inside the child; an unordered root */
    { "SELECT u.id, u.name, LIVE (SELECT i.id, i.created FROM issues i WHERE i.assignee = u.id "
      "AND i.status <> 'done' ORDER BY i.created, i.id LIMIT 2) AS top FROM users u",
      "SELECT u.id, u.name FROM users u", T_USERS, false, 1,
      { { -1, 2, 0, T_ISSUES, true,
          "SELECT i.id, i.created FROM issues i WHERE i.assignee = ?1 AND i.status <> 'done' "
          "ORDER BY i.created, i.id LIMIT 2" } } },
    /* a non-key, nullable correlation: users of a team share its handle */
    { "SELECT u.id, u.team, LIVE (SELECT x.id, x.name FROM users x WHERE x.team = u.team "
      "ORDER BY x.name, x.id) AS mates FROM users u ORDER BY u.id",
      "SELECT u.id, u.team FROM users u ORDER BY u.id", T_USERS, true, 1,
      { { -1, 2, 1, T_USERS, true,
          "SELECT x.id, x.name FROM users x WHERE x.team = ?1 ORDER BY x.name, x.id" } } },
    /* two LIVE columns: a nullable correlation to an unordered child, and
     * a correlation on the root's key */
    { "SELECT i.id, i.assignee, LIVE (SELECT u.id, u.name FROM users u WHERE u.id = i.assignee) "
      "AS who, LIVE (SELECT c.id, c.body, c.at FROM comments c WHERE c.issue_id = i.id "
      "ORDER BY c.at, c.id) AS comments FROM issues i ORDER BY i.id",
      "SELECT i.id, i.assignee FROM issues i ORDER BY i.id", T_ISSUES, true, 2,
      { { -1, 2, 1, T_USERS, false, "SELECT u.id, u.name FROM users u WHERE u.id = ?1" },
        { -1, 3, 0, T_COMMENTS, true,
          "SELECT c.id, c.body, c.at FROM comments c WHERE c.issue_id = ?1 "
          "ORDER BY c.at, c.id" } } },
    /* children with a join, a GROUP BY and DISTINCT */
    { "SELECT u.id, u.team, LIVE (SELECT c.id, i.title FROM comments c JOIN issues i ON i.id = "
      "c.issue_id WHERE i.assignee = u.id ORDER BY c.id) AS talk, LIVE (SELECT i.status, "
      "count(*) AS n FROM issues i WHERE i.assignee = u.id GROUP BY i.status) AS st, LIVE "
      "(SELECT DISTINCT x.name FROM users x WHERE x.team = u.team) AS names FROM users u "
      "ORDER BY u.id",
      "SELECT u.id, u.team FROM users u ORDER BY u.id", T_USERS, true, 3,
      { { -1, 2, 0, T_ISSUES | T_COMMENTS, true,
          "SELECT c.id, i.title FROM comments c JOIN issues i ON i.id = c.issue_id "
          "WHERE i.assignee = ?1 ORDER BY c.id" },
        { -1, 3, 0, T_ISSUES, false,
          "SELECT i.status, count(*) AS n FROM issues i WHERE i.assignee = ?1 GROUP BY i.status" },
        { -1, 4, 1, T_USERS, false,
          "SELECT DISTINCT x.name FROM users x WHERE x.team = ?1" } } },
    /* a LIMIT in the middle level, whose top rows only show grandchild
     * handles */
    { "SELECT u.id, LIVE (SELECT i.id, i.created, LIVE (SELECT c.id, c.body FROM comments c "
      "WHERE c.issue_id = i.id) AS comments FROM issues i WHERE i.assignee = u.id "
      "ORDER BY i.created, i.id LIMIT 2) AS top FROM users u ORDER BY u.id",
      "SELECT u.id FROM users u ORDER BY u.id", T_USERS, true, 2,
      { { -1, 1, 0, T_ISSUES, true,
          "SELECT i.id, i.created FROM issues i WHERE i.assignee = ?1 "
          "ORDER BY i.created, i.id LIMIT 2" },
        { 0, 2, 0, T_COMMENTS, false,
          "SELECT c.id, c.body FROM comments c WHERE c.issue_id = ?1" } } },
    /* a window over the root: only the rows in it show handles */
    { "SELECT u.id, u.name, LIVE (SELECT i.id, i.title, i.created FROM issues i "
      "WHERE i.assignee = u.id ORDER BY i.created, i.id) AS issues FROM users u "
      "ORDER BY u.name, u.id LIMIT 3",
      "SELECT u.id, u.name FROM users u ORDER BY u.name, u.id LIMIT 3", T_USERS, true, 1,
      { { -1, 2, 0, T_ISSUES, true,
          "SELECT i.id, i.title, i.created FROM issues i WHERE i.assignee = ?1 "
          "ORDER BY i.created, i.id" } } },
};
#define NCASES (sizeof cases / sizeof cases[0])

/* The cases the oracle runs. */
static size_t oracle_cases(void) { return NCASES; }

/* ---- the oracle's mirrors -------------------------------------------------------------------- */

struct mirror;

struct mlist {
    struct mirror **v;
    size_t n, cap;
};

static void mlist_push(struct mlist *l, struct mirror *m)
{
    if (l->n == l->cap)
        l->v = realloc(l->v, (l->cap = l->cap ? 2 * l->cap : 16) * sizeof *l->v);
    l->v[l->n++] = m;
}

/* A row of a result: its key and visible non-LIVE columns as text, and
 * per LIVE column of its level the handle's mirror and the tuple's text. */
struct mrow {
    char *key, *text;
    struct mirror *cell[MAXCOL];
    char *corr[MAXCOL];
};

struct oracle;

/* One result: the root (level -1) or a child handle of column level. */
struct mirror {
    struct oracle *o;
    int level;
    ldb_live *q;
    uint64_t id;           /* N of live#N */
    int ncols;             /* ldb_live_column_count when it was shown */
    bool held;             /* retained (struct oracle's retain), not yet released */
    char *corr;            /* its tuple, as text */
    int ptype;             /* its tuple's value, bound as ?1 */
    int64_t pint;
    char *ptext;
    struct mrow *rows;
    size_t n, cap;
    bool gone;             /* its last parent left: it gets no batch again */
    bool made_now;         /* shown first in the commit being checked */
    bool reached;          /* a parent row of the last check shows it */
    int batches;           /* in the commit being checked */
    bool failed;           /* its query failed: frozen holds what it read then */
    struct rows frozen;
};

struct oracle {
    const struct case_spec *cs;
    struct mirror root;
    struct mlist active;   /* child handles with parents */
    struct mlist retired;  /* handles that left (all owned by the oracle) */
    struct mlist seq;      /* batches of this commit, in publication order */
    uint64_t max_id;       /* of the handles made before this commit */
    bool retain;           /* retain every handle when it is first shown */
    ldb_stmt *fresh[MAXCOL + 1]; /* the queries run fresh, per level + 1 */
    char err[512];         /* the first thing that went wrong */
};

static void oracle_fail(struct oracle *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void oracle_fail(struct oracle *o, const char *fmt, ...)
{
    if (o->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, sizeof o->err, fmt, ap);
    va_end(ap);
}

static const char *level_sql(const struct mirror *m)
{
    return m->level < 0 ? m->o->cs->live : m->o->cs->col[m->level].fresh;
}

static bool level_ordered(const struct mirror *m)
{
    return m->level < 0 ? m->o->cs->ordered : m->o->cs->col[m->level].ordered;
}

/* Column i of r as text (malloc'd). */
static char *format_col(const ldb_row *r, int i)
{
    size_t n = ldb_row_format(r, i, NULL, 0);
    char *s = malloc(n + 1);
    ldb_row_format(r, i, s, n + 1);
    return s;
}

/* The columns of r that are not LIVE cells, '|'-separated (malloc'd). */
static char *render_plain(const ldb_row *r)
{
    char *s = strdup("");
    bool first = true;
    for (int i = 0; i < ldb_row_columns(r); i++) {
        if (ldb_row_type(r, i) == LDB_LIVE)
            continue;
        char *c = format_col(r, i);
        size_t len = strlen(s);
        s = realloc(s, len + strlen(c) + 2);
        sprintf(s + len, "%s%s", first ? "" : "|", c);
        first = false;
        free(c);
    }
    return s;
}

static struct mirror *find_active(struct oracle *o, int level, const ldb_live *h)
{
    for (size_t i = 0; i < o->active.n; i++)
        if (o->active.v[i]->level == level && o->active.v[i]->q == h)
            return o->active.v[i];
    return NULL;
}

static void on_batch(void *ctx, ldb_live *q, const ldb_change *c, size_t n);

/* A new handle h for tuple corr of column k, shown by row r. */
static struct mirror *make_mirror(struct oracle *o, int k, ldb_live *h, const ldb_row *r,
                                  char *corr)
{
    const struct col_spec *cs = &o->cs->col[k];
    struct mirror *m = calloc(1, sizeof *m);
    m->o = o;
    m->level = k;
    m->q = h;
    m->corr = corr;
    m->made_now = true;
    m->ncols = ldb_live_column_count(h);
    char *cell = format_col(r, cs->cell);
    unsigned long long id = 0;
    if (sscanf(cell, "live#%llu", &id) != 1 || id <= o->max_id)
        oracle_fail(o, "a new handle reads %s after live#%llu", cell,
                    (unsigned long long)o->max_id);
    free(cell);
    m->id = id;
    const ldb_value *v = ldb_row_value(r, cs->corr);
    m->ptype = ldb_value_type(v);
    m->pint = ldb_value_int64(v);
    if (m->ptype == LDB_TEXT)
        m->ptext = format_col(r, cs->corr);
    if (ldb_live_set_callback(h, on_batch, m) != LDB_OK)
        oracle_fail(o, "ldb_live_set_callback of live#%llu failed", id);
    if (o->retain && !(m->held = ldb_live_retain(h) == LDB_OK))
        oracle_fail(o, "ldb_live_retain of live#%llu failed", id);
    mlist_push(&o->active, m);
    return m;
}

/* The mirror of the handle in column k of r (a row of level k's parent);
 * made when may_make and r is the first row to show it. */
static struct mirror *cell_mirror(struct oracle *o, int k, const ldb_row *r, bool may_make)
{
    const struct col_spec *cs = &o->cs->col[k];
    ldb_live *h = ldb_row_live(r, cs->cell);
    if (ldb_row_type(r, cs->cell) != LDB_LIVE || !h) {
        oracle_fail(o, "column %d is not a LIVE cell (type %d)", cs->cell,
                    ldb_row_type(r, cs->cell));
        return NULL;
    }
    char *corr = format_col(r, cs->corr);
    struct mirror *m = find_active(o, k, h);
    if (m && strcmp(m->corr, corr) != 0)
        oracle_fail(o, "live#%llu of tuple %s shown for tuple %s", (unsigned long long)m->id,
                    m->corr, corr);
    if (m || !may_make) {
        if (!m)
            oracle_fail(o, "a deleted row names an unknown handle (tuple %s)", corr);
        free(corr);
        return m;
    }
    return make_mirror(o, k, h, r, corr);
}

static void mrow_free(struct mrow *r)
{
    free(r->key);
    free(r->text);
    for (int k = 0; k < MAXCOL; k++)
        free(r->corr[k]);
}

static struct mrow mrow_make(struct mirror *m, const ldb_row *key, const ldb_row *r)
{
    struct mrow out = { render_from(key, 0), render_plain(r), { NULL }, { NULL } };
    for (int k = 0; k < m->o->cs->ncols; k++)
        if (m->o->cs->col[k].parent == m->level) {
            out.cell[k] = cell_mirror(m->o, k, r, true);
            out.corr[k] = format_col(r, m->o->cs->col[k].corr);
        }
    return out;
}

static long find_key(const struct mirror *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->rows[i].key, key) == 0)
            return (long)i;
    return -1;
}

/* Indexes of the changes with a before (after) row, in the order the
 * batch is replayed: descending before_pos, ascending after_pos. */
static size_t replay_order(const ldb_change *c, size_t n, bool after, size_t *idx)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(after ? c[i].after : c[i].before))
            continue;
        size_t j = len++;
        int64_t p = after ? c[i].after_pos : -c[i].before_pos;
        for (; j > 0; j--) {
            int64_t q = after ? c[idx[j - 1]].after_pos : -c[idx[j - 1]].before_pos;
            if (q <= p)
                break;
            idx[j] = idx[j - 1];
        }
        idx[j] = i;
    }
    return len;
}

static void apply_removals(struct mirror *m, const ldb_change *c, size_t *idx, size_t len)
{
    struct oracle *o = m->o;
    bool ordered = level_ordered(m);
    for (size_t j = 0; j < len; j++) {
        const ldb_change *ch = &c[idx[j]];
        char *key = render_from(ch->key, 0);
        long at = find_key(m, key);
        if (at < 0 || (ordered && ch->before_pos != at) || (!ordered && ch->before_pos != -1))
            oracle_fail(o, "live#%llu: key %s removed at %" PRId64 ", held at %ld",
                        (unsigned long long)m->id, key, ch->before_pos, at);
        /* the cells of the old row name active handles of its tuples */
        for (int k = 0; k < o->cs->ncols; k++)
            if (o->cs->col[k].parent == m->level)
                cell_mirror(o, k, ch->before, false);
        free(key);
        if (at < 0)
            continue;
        mrow_free(&m->rows[at]);
        memmove(&m->rows[at], &m->rows[at + 1], (m->n - (size_t)at - 1) * sizeof *m->rows);
        m->n--;
    }
}

static void apply_inserts(struct mirror *m, const ldb_change *c, size_t *idx, size_t len)
{
    bool ordered = level_ordered(m);
    for (size_t j = 0; j < len; j++) {
        const ldb_change *ch = &c[idx[j]];
        struct mrow r = mrow_make(m, ch->key, ch->after);
        size_t at = ordered ? (size_t)ch->after_pos : m->n;
        if (find_key(m, r.key) >= 0 || (ordered && (ch->after_pos < 0 || at > m->n)) ||
            (!ordered && ch->after_pos != -1)) {
            oracle_fail(m->o, "live#%llu: key %s inserted at %" PRId64 " of %zu",
                        (unsigned long long)m->id, r.key, ch->after_pos, m->n);
            mrow_free(&r);
            continue;
        }
        if (m->n == m->cap)
            m->rows = realloc(m->rows, (m->cap = m->cap ? 2 * m->cap : 8) * sizeof *m->rows);
        memmove(&m->rows[at + 1], &m->rows[at], (m->n - at) * sizeof *m->rows);
        m->rows[at] = r;
        m->n++;
    }
}

static void check_change_shape(struct mirror *m, const ldb_change *ch)
{
    bool ok = ch->key && (ch->kind == LDB_CHANGE_INSERT   ? !ch->before && ch->after
                          : ch->kind == LDB_CHANGE_DELETE ? ch->before && !ch->after
                          : ch->kind == LDB_CHANGE_UPDATE && ch->before && ch->after) &&
              ch->before_count == (ch->before != NULL) && ch->after_count == (ch->after != NULL);
    if (!ok)
        oracle_fail(m->o, "live#%llu: a change of kind %d with counts %" PRId64 ", %" PRId64,
                    (unsigned long long)m->id, ch->kind, ch->before_count, ch->after_count);
}

static void on_batch(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct mirror *m = ctx;
    struct oracle *o = m->o;
    if (!m->q && m->level < 0) /* the first batch comes before ldb_live_open returns */
        m->q = q;
    if (q != m->q)
        oracle_fail(o, "a batch of %p reached the mirror of %p", (void *)q, (void *)m->q);
    if (m->gone)
        oracle_fail(o, "live#%llu got a batch after its last parent left",
                    (unsigned long long)m->id);
    if (m->batches++)
        oracle_fail(o, "live#%llu got two batches in one commit", (unsigned long long)m->id);
    mlist_push(&o->seq, m);
    size_t *idx = malloc((n + 1) * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        check_change_shape(m, &c[i]);
    apply_removals(m, c, idx, replay_order(c, n, false, idx));
    apply_inserts(m, c, idx, replay_order(c, n, true, idx));
    free(idx);
}

/* Opens cs's query with its mirrors in o; the result code of
 * ldb_live_open, *out its handle. */
static int oracle_start(struct oracle *o, ldb *db, const struct case_spec *cs, bool retain,
                        ldb_live **out)
{
    memset(o, 0, sizeof *o);
    o->cs = cs;
    o->root.o = o;
    o->root.level = -1;
    o->retain = retain;
    return ldb_live_open(db, cs->live, on_batch, &o->root, out);
}

static void oracle_open(struct oracle *o, ldb *db, const struct case_spec *cs, bool retain)
{
    int rc = oracle_start(o, db, cs, retain, &o->root.q);
    CHECKF(rc == LDB_OK, "%s: %s", cs->live, ldb_errmsg(db));
}

static void mirror_free(struct mirror *m)
{
    for (size_t i = 0; i < m->n; i++)
        mrow_free(&m->rows[i]);
    free(m->rows);
    free(m->corr);
    free(m->ptext);
    rows_free(&m->frozen);
}

/* Frees the mirrors and the statements (before ldb_close; the query
 * itself is the caller's to close). */
static void oracle_free(struct oracle *o)
{
    for (int k = 0; k <= MAXCOL; k++)
        ldb_finalize(o->fresh[k]);
    for (size_t i = 0; i < o->active.n; i++) {
        mirror_free(o->active.v[i]);
        free(o->active.v[i]);
    }
    for (size_t i = 0; i < o->retired.n; i++) {
        mirror_free(o->retired.v[i]);
        free(o->retired.v[i]);
    }
    mirror_free(&o->root);
    free(o->active.v);
    free(o->retired.v);
    free(o->seq.v);
}

/* ---- the checks after a commit --------------------------------------------------------------- */

static struct rows mirror_rows(const struct mirror *m)
{
    struct rows rs = { 0 };
    for (size_t i = 0; i < m->n; i++)
        rows_add(&rs, strdup(m->rows[i].text));
    if (!level_ordered(m))
        rows_sort(&rs);
    return rs;
}

/* Consumes got and want. */
static void check_rows(struct rows got, struct rows want, const struct mirror *m,
                       const char *what, const char *when)
{
    bool same = got.n == want.n;
    for (size_t i = 0; same && i < got.n; i++)
        same = strcmp(got.v[i], want.v[i]) == 0;
    if (!same) {
        fprintf(stderr, "# %s: live#%llu (tuple %s) %s\n#   %s\n", when,
                (unsigned long long)m->id, m->corr ? m->corr : "-", what, level_sql(m));
        for (size_t i = 0; i < got.n || i < want.n; i++)
            fprintf(stderr, "#   %-24s %s\n", i < got.n ? got.v[i] : "",
                    i < want.n ? want.v[i] : "");
    }
    rows_free(&got);
    rows_free(&want);
    CHECKF(same, "%s: live#%llu (tuple %s): %s differs (rows: got, wanted)", when,
           (unsigned long long)m->id, m->corr ? m->corr : "-", what);
}

/* The rows of m's query run fresh, with m's tuple bound as ?1. */
static struct rows fresh_rows(ldb *db, const struct mirror *m)
{
    struct rows want = { 0 };
    const char *sql = m->level < 0 ? m->o->cs->fresh : m->o->cs->col[m->level].fresh;
    ldb_stmt *st = m->o->fresh[m->level + 1];
    if (st)
        CHECK_INT(ldb_reset(st), LDB_OK);
    else
        CHECKF(ldb_prepare(db, sql, -1, &m->o->fresh[m->level + 1], NULL) == LDB_OK &&
                   (st = m->o->fresh[m->level + 1]),
               "%s: %s", sql, ldb_errmsg(db));
    if (m->level >= 0) {
        int rc = m->ptype == LDB_NULL      ? ldb_bind_null(st, 1)
                 : m->ptype == LDB_INTEGER ? ldb_bind_int64(st, 1, m->pint)
                                           : ldb_bind_text(st, 1, m->ptext, -1);
        CHECK_INT(rc, LDB_OK);
    }
    int rc;
    while ((rc = ldb_step(st)) == LDB_ROW)
        rows_add(&want, render_from(ldb_stmt_row(st), 0));
    CHECKF(rc == LDB_DONE, "%s: %s", sql, ldb_errmsg(db));
    if (!level_ordered(m))
        rows_sort(&want);
    return want;
}

/* (a), (b): the mirror is its query run fresh. */
static void check_fresh(ldb *db, const struct mirror *m, const char *when)
{
    check_rows(mirror_rows(m), fresh_rows(db, m), m, "mirror against the query run fresh", when);
}

struct read_ctx {
    struct mirror *m;
    bool cells;        /* check that LIVE cells name active handles */
    struct rows rows;
};

static int read_row(void *ctx, const ldb_row *r)
{
    struct read_ctx *rc = ctx;
    struct oracle *o = rc->m->o;
    rows_add(&rc->rows, render_plain(r));
    for (int k = 0; rc->cells && k < o->cs->ncols; k++)
        if (o->cs->col[k].parent == rc->m->level)
            cell_mirror(o, k, r, false);
    return 0;
}

static struct rows read_rows(struct mirror *m, bool cells)
{
    struct read_ctx rc = { m, cells, { 0 } };
    CHECK_INT(ldb_live_read(m->q, read_row, &rc), LDB_OK);
    CHECK_INT(ldb_live_count(m->q), (int64_t)rc.rows.n);
    if (!level_ordered(m))
        rows_sort(&rc.rows);
    return rc.rows;
}

/* (c): ldb_live_read gives the mirror. */
static void check_read(struct mirror *m, const char *when)
{
    check_rows(read_rows(m, true), mirror_rows(m), m, "ldb_live_read against the mirror", when);
    CHECKF(!m->o->err[0], "%s: %s", when, m->o->err);
}

struct rows_count {
    int rows;
};

static int count_row(void *ctx, const ldb_row *r)
{
    (void)r;
    ((struct rows_count *)ctx)->rows++;
    return 0;
}

/* A handle that reads as empty: no rows, and ncols columns. */
static void check_empty(ldb_live *h, int ncols)
{
    struct rows_count n = { 0 };
    CHECK_INT(ldb_live_read(h, count_row, &n), LDB_OK);
    CHECK_INT(n.rows, 0);
    CHECK_INT(ldb_live_count(h), 0);
    CHECK_INT(ldb_live_column_count(h), ncols);
}

/* Releases a handle the oracle retained (it may be freed). */
static void mirror_release(struct mirror *m)
{
    CHECK(m->held);
    CHECK_INT(ldb_live_release(m->q), LDB_OK);
    m->held = false;
}

/* Marks the handles that rows of m (and of theirs) show. */
static void reach(struct mirror *m)
{
    for (size_t i = 0; i < m->n; i++)
        for (int k = 0; k < MAXCOL; k++) {
            struct mirror *c = m->rows[i].cell[k];
            if (c && !c->reached) {
                c->reached = true;
                reach(c);
            }
        }
}

/* (d): over the rows of every parent of column k, equal tuples show one
 * handle and distinct tuples distinct handles. */
static void check_sharing(struct oracle *o, int k, const char *when)
{
    struct mlist parents = { 0 };
    if (o->cs->col[k].parent < 0)
        mlist_push(&parents, &o->root);
    for (size_t i = 0; i < o->active.n; i++)
        if (o->active.v[i]->level == o->cs->col[k].parent)
            mlist_push(&parents, o->active.v[i]);
    for (size_t a = 0; a < parents.n; a++)
        for (size_t i = 0; i < parents.v[a]->n; i++)
            for (size_t b = a; b < parents.n; b++)
                for (size_t j = 0; j < parents.v[b]->n; j++) {
                    const struct mrow *x = &parents.v[a]->rows[i], *y = &parents.v[b]->rows[j];
                    bool same_tuple = strcmp(x->corr[k], y->corr[k]) == 0;
                    CHECKF(same_tuple == (x->cell[k] == y->cell[k]),
                           "%s: rows %s and %s, tuples %s and %s, show live#%llu and live#%llu",
                           when, x->text, y->text, x->corr[k], y->corr[k],
                           (unsigned long long)(x->cell[k] ? x->cell[k]->id : 0),
                           (unsigned long long)(y->cell[k] ? y->cell[k]->id : 0));
                }
    free(parents.v);
}

static unsigned level_table(const struct mirror *m)
{
    return m->level < 0 ? m->o->cs->table : m->o->cs->col[m->level].table;
}

/* (f) and the publication order: at most one batch per result (counted
 * as they came), the root's first, then by column and activation. */
static void check_batches(struct oracle *o, unsigned written, bool committed, const char *when)
{
    CHECKF(committed || o->seq.n == 0, "%s: a rollback published %zu batches", when, o->seq.n);
    for (size_t i = 0; i < o->seq.n; i++) {
        struct mirror *m = o->seq.v[i];
        bool leaving = m->level >= 0 && !m->reached;
        CHECKF((written & level_table(m)) || m->made_now || leaving,
               "%s: live#%llu (level %d) got a batch though its table was not written", when,
               (unsigned long long)m->id, m->level);
        if (i == 0)
            continue;
        const struct mirror *p = o->seq.v[i - 1];
        CHECKF(m->level >= 0 && (p->level < m->level || (p->level == m->level && p->id < m->id)),
               "%s: live#%llu (column %d) published after live#%llu (column %d)", when,
               (unsigned long long)m->id, m->level, (unsigned long long)p->id, p->level);
    }
}

/* The next commit starts here: its batches are counted from zero. */
static void oracle_settle(struct oracle *o)
{
    o->seq.n = 0;
    o->root.batches = 0;
    for (size_t i = 0; i < o->active.n; i++) {
        struct mirror *m = o->active.v[i];
        m->batches = 0;
        m->made_now = false;
        o->max_id = m->id > o->max_id ? m->id : o->max_id;
    }
    for (size_t i = 0; i < o->retired.n; i++)
        o->max_id = o->retired.v[i]->id > o->max_id ? o->retired.v[i]->id : o->max_id;
}

/* Every check above after one commit (committed) or rollback; written:
 * the tables its statements wrote. */
static void oracle_check(struct oracle *o, ldb *db, unsigned written, bool committed,
                         const char *when)
{
    CHECKF(!o->err[0], "%s: %s: %s", when, o->cs->live, o->err);
    for (size_t i = 0; i < o->active.n; i++)
        o->active.v[i]->reached = false;
    reach(&o->root);
    check_batches(o, written, committed, when);
    /* (e): handles no row shows left, with their rows */
    size_t kept = 0;
    for (size_t i = 0; i < o->active.n; i++) {
        struct mirror *m = o->active.v[i];
        if (m->reached) {
            o->active.v[kept++] = m;
            continue;
        }
        CHECKF(m->n == 0, "%s: live#%llu (tuple %s) lost its last parent but kept %zu rows",
               when, (unsigned long long)m->id, m->corr, m->n);
        m->gone = true;
        mlist_push(&o->retired, m);
    }
    o->active.n = kept;
    for (size_t i = 0; i < o->retired.n; i++) /* retained, they read as empty */
        if (o->retired.v[i]->held)
            check_empty(o->retired.v[i]->q, o->retired.v[i]->ncols);
    check_fresh(db, &o->root, when);
    check_read(&o->root, when);
    for (size_t i = 0; i < o->active.n; i++) {
        check_fresh(db, o->active.v[i], when);
        check_read(o->active.v[i], when);
    }
    for (int k = 0; k < o->cs->ncols; k++)
        check_sharing(o, k, when);
    for (size_t i = 0; i < o->active.n; i++)
        for (size_t j = i + 1; j < o->active.n; j++)
            CHECKF(o->active.v[i]->id != o->active.v[j]->id, "%s: two handles read live#%llu",
                   when, (unsigned long long)o->active.v[i]->id);
    ldb_live_stats st;
    ldb_live_stats_get(o->root.q, &st);
    CHECKF(st.child_results == o->active.n, "%s: %s: child_results %" PRIu64 ", %zu handles",
           when, o->cs->live, st.child_results, o->active.n);
    oracle_settle(o);
}

/* ---- random histories ------------------------------------------------------------------------ */

static const char *pick(rng *r, const char *const *v, size_t n) { return v[rng_below(r, n)]; }

/* A nullable small value: NULL one time in six. */
static void nullable(rng *r, char *buf, size_t size, int lo, int hi)
{
    if (rng_chance(r, 1, 6))
        snprintf(buf, size, "NULL");
    else
        snprintf(buf, size, "%d", (int)rng_range(r, lo, hi));
}

/* One write into sql; returns the table it writes. */
static unsigned random_write(rng *r, char *sql, size_t size)
{
    static const char *const names[] = { "'ann'", "'bob'", "'cy'", "NULL", "'dee'" };
    static const char *const status[] = { "'open'", "'done'", "NULL" };
    static const char *const text[] = { "'a'", "'b'", "'c'", "NULL" };
    char x[16], y[16];
    int u = (int)rng_range(r, 1, 8), i = (int)rng_range(r, 1, 16), c = (int)rng_range(r, 1, 24);
    switch (rng_below(r, 17)) {
    case 0:
        nullable(r, x, sizeof x, 1, 3);
        snprintf(sql, size, "INSERT OR REPLACE INTO users VALUES (%d, %s, %s)", u,
                 pick(r, names, 5), x);
        return T_USERS;
    case 1: snprintf(sql, size, "DELETE FROM users WHERE id = %d", u); return T_USERS;
    case 2:
        snprintf(sql, size, "UPDATE users SET name = %s WHERE id = %d", pick(r, names, 5), u);
        return T_USERS;
    case 3: /* a route move of the team case */
        nullable(r, x, sizeof x, 1, 3);
        snprintf(sql, size, "UPDATE users SET team = %s WHERE id = %d", x, u);
        return T_USERS;
    case 4: /* several buckets retire at once */
        snprintf(sql, size, "DELETE FROM users WHERE team = %d", (int)rng_range(r, 1, 3));
        return T_USERS;
    case 5:
    case 6:
        nullable(r, x, sizeof x, 1, 8);
        snprintf(sql, size, "INSERT OR REPLACE INTO issues VALUES (%d, %s, %s, %d, %s)", i, x,
                 pick(r, status, 3), (int)rng_range(r, 1, 5), pick(r, text, 4));
        return T_ISSUES;
    case 7: snprintf(sql, size, "DELETE FROM issues WHERE id = %d", i); return T_ISSUES;
    case 8: /* a route move */
        nullable(r, x, sizeof x, 1, 8);
        snprintf(sql, size, "UPDATE issues SET assignee = %s WHERE id = %d", x, i);
        return T_ISSUES;
    case 9: /* an order change */
        snprintf(sql, size, "UPDATE issues SET created = %d WHERE id = %d",
                 (int)rng_range(r, 1, 5), i);
        return T_ISSUES;
    case 10: /* a child-only change */
        snprintf(sql, size, "UPDATE issues SET title = %s, status = %s WHERE id = %d",
                 pick(r, text, 4), pick(r, status, 3), i);
        return T_ISSUES;
    case 11: /* a bucket's rows move together */
        nullable(r, x, sizeof x, 1, 8);
        snprintf(sql, size, "UPDATE issues SET assignee = %s WHERE assignee = %d", x,
                 (int)rng_range(r, 1, 8));
        return T_ISSUES;
    case 12:
    case 13:
        nullable(r, y, sizeof y, 1, 16);
        snprintf(sql, size, "INSERT OR REPLACE INTO comments VALUES (%d, %s, %d, %s)", c, y,
                 (int)rng_range(r, 1, 4), pick(r, text, 4));
        return T_COMMENTS;
    case 14: snprintf(sql, size, "DELETE FROM comments WHERE id = %d", c); return T_COMMENTS;
    case 15:
        nullable(r, y, sizeof y, 1, 16);
        snprintf(sql, size, "UPDATE comments SET issue_id = %s WHERE id = %d", y, c);
        return T_COMMENTS;
    default:
        snprintf(sql, size, "UPDATE comments SET at = %d, body = %s WHERE id = %d",
                 (int)rng_range(r, 1, 4), pick(r, text, 4), c);
        return T_COMMENTS;
    }
}

/* Indexes the queries' lookups may read (the worlds open with them),
 * dropped and made again by the histories. */
static const char *const index_ddl[] = {
    "CREATE INDEX IF NOT EXISTS issues_assignee ON issues(assignee)",
    "DROP INDEX IF EXISTS issues_assignee",
    "CREATE INDEX IF NOT EXISTS users_team ON users(team)",
    "DROP INDEX IF EXISTS users_team",
    "CREATE INDEX IF NOT EXISTS comments_issue ON comments(issue_id)",
    "DROP INDEX IF EXISTS comments_issue",
};

/* One step: a write, a change of the indexes (which writes nothing), or
 * a transaction of a few writes, some of them maybe undone by ROLLBACK
 * TO, that commits or rolls back. *written: the tables written; returns
 * whether it committed. */
static bool random_step(ldb *db, rng *r, unsigned *written, char *what, size_t size)
{
    char sql[256];
    *written = 0;
    if (rng_chance(r, 1, 20)) { /* dropping an index a query reads rebuilds it */
        snprintf(what, size, "%s", pick(r, index_ddl, sizeof index_ddl / sizeof index_ddl[0]));
        EXEC(db, what);
        return true;
    }
    if (!rng_chance(r, 1, 3)) {
        *written = random_write(r, sql, sizeof sql);
        EXEC(db, sql);
        snprintf(what, size, "%s", sql);
        return true;
    }
    /* a transaction, opened by BEGIN or a savepoint; an inner savepoint
     * taken before write `inner` is released or rolled back to */
    bool outer = rng_chance(r, 1, 3), undo_inner = rng_chance(r, 1, 2);
    int n = (int)rng_range(r, 1, 5), inner = (int)rng_range(r, 0, n);
    EXEC(db, outer ? "SAVEPOINT sp_out" : "BEGIN");
    for (int k = 0; k <= n; k++) {
        if (k == inner)
            EXEC(db, "SAVEPOINT sp_in");
        if (k == n)
            break;
        *written |= random_write(r, sql, sizeof sql);
        EXEC(db, sql);
    }
    EXEC(db, undo_inner ? "ROLLBACK TO sp_in; RELEASE sp_in" : "RELEASE sp_in");
    bool commit = !rng_chance(r, 1, 4);
    EXEC(db, commit ? (outer ? "RELEASE sp_out" : "COMMIT")
                    : (outer ? "ROLLBACK TO sp_out; RELEASE sp_out" : "ROLLBACK"));
    snprintf(what, size, "a transaction of %d writes (%d to %d %s), the last %s, %s", n, inner,
             n - 1, undo_inner ? "undone" : "kept", sql, commit ? "committed" : "rolled back");
    return commit;
}

static ldb *world_open(rng *r, int writes)
{
    ldb *db = NULL;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, schema);
    for (size_t k = 0; k < sizeof index_ddl / sizeof index_ddl[0]; k += 2)
        EXEC(db, index_ddl[k]);
    char sql[256];
    for (int k = 0; k < writes; k++) {
        random_write(r, sql, sizeof sql);
        EXEC(db, sql);
    }
    return db;
}

static ldb_live_stats stats_of(ldb_live *q)
{
    ldb_live_stats st;
    ldb_live_stats_get(q, &st);
    return st;
}

/* A random history of steps commits and rollbacks from seed, with every
 * check after each, over the queries of cs[0..n). */
static void run_history(const struct case_spec *cs, size_t n, uint64_t seed, int steps,
                        bool retain)
{
    rng r;
    rng_seed(&r, seed);
    ldb *db = world_open(&r, 40);
    struct oracle *o = calloc(n, sizeof *o);
    for (size_t k = 0; k < n; k++) {
        oracle_open(&o[k], db, &cs[k], retain);
        oracle_check(&o[k], db, T_USERS | T_ISSUES | T_COMMENTS, true, "open");
    }
    size_t handles = 0, retired = 0, rebuilt = 0;
    for (int s = 0; s < steps; s++) {
        char what[400], when[480];
        unsigned written;
        uint64_t read0 = 0;
        for (size_t k = 0; k < n; k++)
            read0 += stats_of(o[k].root.q).rows_read;
        bool committed = random_step(db, &r, &written, what, sizeof what);
        snprintf(when, sizeof when, "step %d (%s)", s, what);
        for (size_t k = 0; k < n; k++) {
            oracle_check(&o[k], db, written, committed, when);
            handles += o[k].active.n;
            read0 -= stats_of(o[k].root.q).rows_read;
        }
        rebuilt += !written && committed && read0; /* a rebuild read the tables again */
    }
    for (size_t k = 0; k < n; k++) {
        retired += o[k].retired.n;
        ldb_live_close(o[k].root.q);
        for (size_t i = 0; retain && i < o[k].active.n + o[k].retired.n; i++) {
            struct mirror *m = i < o[k].active.n ? o[k].active.v[i]
                                                 : o[k].retired.v[i - o[k].active.n];
            check_empty(m->q, 0); /* detached */
            mirror_release(m);
        }
        oracle_free(&o[k]);
    }
    free(o);
    printf("#    %d steps: %zu handles checked, %zu retired, %zu index drops rebuilt "
           "queries\n", steps, handles, retired, rebuilt);
    CHECK(handles > 0 && retired > 0);
    ldb_close(db);
}

static void child_results_match_fresh_queries(void)
{
    run_history(cases, oracle_cases(), test_seed(), 400 * test_scale(), false);
}

/* The same with every handle retained from its first showing: those that
 * left read as empty (their columns kept) and get no batch; once the root
 * is closed all read as empty with no columns, until released. */
static void retained_handles_through_random_histories(void)
{
    int64_t live0 = mem_live();
    run_history(cases, oracle_cases(), test_seed(), 200 * test_scale(), true);
    CHECK_INT(mem_live(), live0);
}

/* A select list whose LIVE column sits beside an ORDER BY column it does
 * not show, and a LIVE child ordered so that holds a LIVE column: both
 * were refused (LDB_UNSUPPORTED); they run the oracle. */
static const struct case_spec hidden_order_cases[] = {
    { "SELECT u.id, LIVE (SELECT i.id, i.title FROM issues i WHERE i.assignee = u.id "
      "ORDER BY i.id) AS issues FROM users u ORDER BY u.name, u.id",
      "SELECT u.id FROM users u ORDER BY u.name, u.id", T_USERS, true, 1,
      { { -1, 1, 0, T_ISSUES, true,
          "SELECT i.id, i.title FROM issues i WHERE i.assignee = ?1 ORDER BY i.id" } } },
    { "SELECT u.id, LIVE (SELECT i.id, LIVE (SELECT c.id, c.body FROM comments c "
      "WHERE c.issue_id = i.id ORDER BY c.id) AS comments FROM issues i "
      "WHERE i.assignee = u.id ORDER BY i.created, i.id) AS issues FROM users u ORDER BY u.id",
      "SELECT u.id FROM users u ORDER BY u.id", T_USERS, true, 2,
      { { -1, 1, 0, T_ISSUES, true,
          "SELECT i.id FROM issues i WHERE i.assignee = ?1 ORDER BY i.created, i.id" },
        { 0, 1, 0, T_COMMENTS, true,
          "SELECT c.id, c.body FROM comments c WHERE c.issue_id = ?1 ORDER BY c.id" } } },
};
#define NHIDDEN (sizeof hidden_order_cases / sizeof hidden_order_cases[0])

static void live_beside_a_hidden_order_column(void)
{
    run_history(hidden_order_cases, NHIDDEN, test_seed(), 100 * test_scale(), false);
}

/* Opening over empty tables staged no handle: that sorted an empty list
 * (qsort(NULL, 0), stopped by UBSan under make test-sanitize). */
static void opens_over_an_empty_parent(void)
{
    ldb *db = NULL;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, schema);
    static struct oracle o;
    oracle_open(&o, db, &cases[0], false);
    oracle_check(&o, db, T_USERS | T_ISSUES, true, "open");
    EXEC(db, "INSERT INTO issues VALUES (1, 1, 'open', 1, 'a')");
    oracle_check(&o, db, T_ISSUES, true, "an issue");
    EXEC(db, "INSERT INTO users VALUES (1, 'ann', 1)");
    oracle_check(&o, db, T_USERS, true, "a user");
    CHECK_INT(o.active.n, 1);
    ldb_live_close(o.root.q);
    oracle_free(&o);
    ldb_close(db);
}

/* ---- lifecycle, by name ---------------------------------------------------------------------- */

/* Users share a handle per team; teams 1 and 2 have issues. */
static const struct case_spec team_case = {
    "SELECT u.id, u.team, LIVE (SELECT i.id, i.title FROM issues i WHERE i.assignee = u.team "
    "ORDER BY i.id) AS issues FROM users u ORDER BY u.id",
    "SELECT u.id, u.team FROM users u ORDER BY u.id", T_USERS, true, 1,
    { { -1, 2, 1, T_ISSUES, true,
        "SELECT i.id, i.title FROM issues i WHERE i.assignee = ?1 ORDER BY i.id" } }
};

static ldb *team_open(void)
{
    ldb *db = NULL;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, schema);
    EXEC(db, "INSERT INTO users VALUES (1, 'ann', 1), (2, 'bob', 1), (3, 'cy', 2);"
             "INSERT INTO issues VALUES (1, 1, 'open', 1, 'a'), (2, 1, 'open', 2, 'b'),"
             " (3, 2, 'open', 3, 'c'), (4, 2, 'open', 4, 'd')");
    return db;
}

/* The handle the root row of user id shows. */
static struct mirror *handle_of(struct oracle *o, int id)
{
    char key[16];
    snprintf(key, sizeof key, "%d", id);
    long at = find_key(&o->root, key);
    CHECKF(at >= 0, "no user %d", id);
    return o->root.rows[at].cell[0];
}

/* The lifecycle cases' database, opened under the team case and checked,
 * and its end: everything closed and the memory back. */
static ldb *team_begin(struct oracle *o, int64_t *live0)
{
    *live0 = mem_live();
    ldb *db = team_open();
    oracle_open(o, db, &team_case, false);
    oracle_check(o, db, T_USERS | T_ISSUES, true, "open");
    return db;
}

static void team_end(struct oracle *o, ldb *db, struct mlist *seq, int64_t live0)
{
    ldb_live_close(o->root.q);
    oracle_free(o);
    free(seq->v);
    ldb_close(db);
    CHECK_INT(mem_live(), live0);
}

/* Runs sql (a write of users or issues) and checks the oracle; the
 * batches it published, in order, are left in *seq (caller frees). */
static void team_step(struct oracle *o, ldb *db, const char *sql, struct mlist *seq)
{
    EXEC(db, sql);
    seq->n = 0;
    for (size_t i = 0; i < o->seq.n; i++)
        mlist_push(seq, o->seq.v[i]);
    oracle_check(o, db, T_USERS | T_ISSUES, true, sql);
}

static void equal_correlation_values_share_one_handle(void)
{
    static struct oracle o;
    struct mlist seq = { 0 };
    int64_t live0;
    ldb *db = team_begin(&o, &live0);
    struct mirror *t1 = handle_of(&o, 1), *t2 = handle_of(&o, 3);
    CHECK(handle_of(&o, 2) == t1 && t1 != t2 && t1->q != t2->q);
    CHECK_INT(t1->n, 2);
    CHECK_INT(t2->n, 2);
    ldb_live_stats st;
    ldb_live_stats_get(o.root.q, &st);
    CHECK_INT(st.child_results, 2);
    /* a child-only change: one batch, to the one handle, none to the parent */
    team_step(&o, db, "UPDATE issues SET title = 'z' WHERE id = 1", &seq);
    CHECK(seq.n == 1 && seq.v[0] == t1);
    /* a parent joining a bucket gets its handle; the parent batch only */
    team_step(&o, db, "INSERT INTO users VALUES (4, 'dee', 2)", &seq);
    CHECK(handle_of(&o, 4) == t2);
    CHECK(seq.n == 1 && seq.v[0] == &o.root);
    /* an equal value written again: nothing changes */
    team_step(&o, db, "UPDATE users SET team = 2 WHERE id = 4", &seq);
    CHECK_INT(seq.n, 0);
    team_end(&o, db, &seq, live0);
}

static void last_parent_leaving_retracts_the_rows(void)
{
    static struct oracle o;
    struct mlist seq = { 0 };
    int64_t live0;
    ldb *db = team_begin(&o, &live0);
    struct mirror *t2 = handle_of(&o, 3);
    /* the last parent of team 2 moves: the parent row gets team 1's
     * handle, and team 2's handle one last batch deleting its rows */
    team_step(&o, db, "UPDATE users SET team = 1 WHERE id = 3", &seq);
    CHECK(handle_of(&o, 3) == handle_of(&o, 1));
    CHECK(seq.n == 2 && seq.v[0] == &o.root && seq.v[1] == t2);
    CHECK(t2->gone && t2->n == 0);
    /* team 2's rows change: no batch to the departed handle (oracle: a
     * batch to it fails the check), nor to anyone */
    team_step(&o, db, "UPDATE issues SET title = 'y' WHERE assignee = 2", &seq);
    CHECK_INT(seq.n, 0);
    team_step(&o, db, "INSERT INTO issues VALUES (5, 2, 'open', 5, 'e')", &seq);
    CHECK_INT(seq.n, 0);
    /* a delete of the last parent retracts too */
    team_step(&o, db, "DELETE FROM users WHERE team = 1", &seq);
    CHECK_INT(o.active.n, 0);
    CHECK(seq.n == 2 && seq.v[0] == &o.root && seq.v[1]->gone && seq.v[1]->n == 0);
    team_end(&o, db, &seq, live0);
}

static void reactivation_gets_a_new_handle(void)
{
    static struct oracle o;
    struct mlist seq = { 0 };
    int64_t live0;
    ldb *db = team_begin(&o, &live0);
    struct mirror *old = handle_of(&o, 3);
    team_step(&o, db, "DELETE FROM users WHERE id = 3", &seq);
    CHECK(old->gone);
    /* a later commit brings team 2 back: a new handle, numbered above
     * every earlier one, its rows as its first batch after the parent's */
    team_step(&o, db, "INSERT INTO users VALUES (3, 'cy', 2)", &seq);
    struct mirror *now = handle_of(&o, 3);
    CHECK(now != old && now->id > old->id && now->n == 2);
    CHECK(seq.n == 2 && seq.v[0] == &o.root && seq.v[1] == now);
    /* leaving and coming back within one commit keeps the handle */
    team_step(&o, db, "BEGIN; DELETE FROM users WHERE id = 3; INSERT INTO users VALUES "
                      "(3, 'cy', 2); COMMIT", &seq);
    CHECK(handle_of(&o, 3) == now);
    team_step(&o, db, "BEGIN; UPDATE users SET team = 1 WHERE id = 3; UPDATE users SET team = 2 "
                      "WHERE id = 3; COMMIT", &seq);
    CHECK(handle_of(&o, 3) == now && seq.n == 0);
    team_end(&o, db, &seq, live0);
}

static void retained_handle_outlives_its_bucket(void)
{
    int64_t live0 = mem_live();
    ldb *db = team_open();
    static struct oracle o;
    struct mlist seq = { 0 };
    oracle_open(&o, db, &team_case, true); /* the parent callback retains every handle */
    oracle_check(&o, db, T_USERS | T_ISSUES, true, "open");
    struct mirror *t2 = handle_of(&o, 3);
    ldb_live *h = t2->q;
    CHECK_INT(ldb_live_column_count(h), 2);
    CHECK_STR(ldb_live_column_name(h, 1), "title");
    team_step(&o, db, "UPDATE users SET team = 1 WHERE id = 3", &seq);
    CHECK(t2->gone && seq.n == 2 && seq.v[1] == t2);
    /* it stays readable and empty, and gets no batch (the oracle fails a
     * batch to a departed handle) */
    check_empty(h, 2);
    team_step(&o, db, "INSERT INTO issues VALUES (5, 2, 'open', 5, 'e')", &seq);
    team_step(&o, db, "UPDATE issues SET title = 'q' WHERE assignee = 2", &seq);
    CHECK_INT(seq.n, 0);
    /* team 2 comes back: a new handle, not the retained one */
    team_step(&o, db, "UPDATE users SET team = 2 WHERE id = 1", &seq);
    CHECK(handle_of(&o, 1) != t2 && handle_of(&o, 1)->q != h && handle_of(&o, 1)->n == 3);
    check_empty(h, 2);
    /* calls that do not apply to a child, or to a root */
    CHECK_INT(ldb_live_set_window(h, 0, 1), LDB_MISUSE);
    ldb_live_close(h); /* a no-op */
    check_empty(h, 2);
    CHECK_INT(ldb_live_retain(o.root.q), LDB_MISUSE);
    CHECK_INT(ldb_live_retain(NULL), LDB_MISUSE);
    CHECK_INT(ldb_live_release(NULL), LDB_MISUSE);
    /* releasing frees it; active handles stay after their release */
    mirror_release(t2);
    for (size_t i = 0; i < o.active.n; i++) {
        mirror_release(o.active.v[i]);
        CHECK_INT(ldb_live_release(o.active.v[i]->q), LDB_MISUSE);
    }
    team_step(&o, db, "UPDATE issues SET title = 'r' WHERE id = 1", &seq);
    CHECK_INT(seq.n, 1);
    team_end(&o, db, &seq, live0);
}

/* Callbacks that close the root from a child's batch. */
struct closer {
    ldb_live *root;
    bool armed;        /* the next child batch closes the root */
    int root_batches, child_batches;
};

static void closer_child(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q, (void)c, (void)n;
    struct closer *cl = ctx;
    cl->child_batches++;
    if (cl->armed) {
        cl->armed = false;
        ldb_live_close(cl->root);
    }
}

static void closer_root(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct closer *cl = ctx;
    cl->root = q;
    cl->root_batches++;
    for (size_t i = 0; i < n; i++)
        if (c[i].after)
            ldb_live_set_callback(ldb_row_live(c[i].after, 2), closer_child, cl);
}

static void closing_the_root_from_a_child_callback(void)
{
    int64_t live0 = mem_live();
    ldb *db = team_open();
    struct closer cl = { 0 };
    ldb_live *q;
    CHECK_INT(ldb_live_open(db, team_case.live, closer_root, &cl, &q), LDB_OK);
    CHECK(q == cl.root && cl.root_batches == 1 && cl.child_batches == 2);
    /* one commit gives both handles a batch: the first closes the root,
     * the second is not published */
    cl.armed = true;
    EXEC(db, "UPDATE issues SET title = 'n'");
    CHECK_INT(cl.child_batches, 3);
    CHECK_INT(cl.root_batches, 1);
    EXEC(db, "UPDATE issues SET title = 'm'; INSERT INTO users VALUES (7, 'x', 3)");
    CHECK_INT(cl.child_batches, 3);
    CHECK_INT(cl.root_batches, 1);
    /* closed during the first batch, by a new handle's first batch:
     * ldb_live_open gives no query */
    struct closer early = { .armed = true };
    q = (ldb_live *)&early;
    CHECK_INT(ldb_live_open(db, team_case.live, closer_root, &early, &q), LDB_OK);
    CHECK(q == NULL && early.root_batches == 1 && early.child_batches == 1);
    EXEC(db, "UPDATE issues SET title = 'l'");
    CHECK_INT(early.child_batches, 1);
    ldb_close(db);
    CHECK_INT(mem_live(), live0);
}

static void closing_the_root_while_holding_a_child(void)
{
    int64_t live0 = mem_live();
    ldb *db = team_open();
    static struct oracle o;
    oracle_open(&o, db, &team_case, true);
    oracle_check(&o, db, T_USERS | T_ISSUES, true, "open");
    struct mirror *t1 = handle_of(&o, 1), *t2 = handle_of(&o, 3);
    ldb_live_close(o.root.q);
    /* detached: empty, no columns, no batches, until released */
    check_empty(t1->q, 0);
    check_empty(t2->q, 0);
    CHECK(ldb_live_column_name(t1->q, 0) == NULL);
    EXEC(db, "UPDATE issues SET title = 'k'; DELETE FROM users");
    CHECK_INT(o.seq.n, 0);
    mirror_release(t1);
    check_empty(t2->q, 0);
    mirror_release(t2);
    oracle_free(&o);
    ldb_close(db);
    CHECK_INT(mem_live(), live0);
}

static void closing_the_database_with_retained_handles(void)
{
    int64_t live0 = mem_live();
    ldb *db = team_open();
    static struct oracle o[2];
    struct mlist seq = { 0 };
    oracle_open(&o[0], db, &team_case, true);
    oracle_open(&o[1], db, &cases[1], true); /* three levels */
    oracle_check(&o[0], db, T_USERS | T_ISSUES, true, "open");
    oracle_check(&o[1], db, T_USERS | T_ISSUES, true, "open");
    team_step(&o[0], db, "UPDATE users SET team = 1 WHERE id = 3", &seq); /* one retires */
    CHECK(o[0].retired.n == 1 && o[0].active.n == 1);
    ldb_live_close(o[1].root.q); /* its handles detached, still retained */
    oracle_free(&o[0]);          /* the test's mirrors and statements */
    oracle_free(&o[1]);
    ldb_close(db);               /* frees the query and every handle */
    CHECK_INT(mem_live(), live0);
    free(seq.v);
}

/* ---- allocation failures --------------------------------------------------------------------- */

static const char sweep_data[] =
    "INSERT INTO users VALUES (1, 'ann', 1), (2, 'bob', 1), (3, 'cy', 2), (4, 'dee', NULL);"
    "INSERT INTO issues VALUES (1, 1, 'open', 1, 'a'), (2, 1, 'done', 2, 'b'),"
    " (3, 2, 'open', 3, 'c'), (4, 3, 'open', 1, 'd'), (5, NULL, 'open', 2, 'e');"
    "INSERT INTO comments VALUES (1, 1, 1, 'x'), (2, 1, 2, 'y'), (3, 3, 1, 'z'), (4, 4, 1, 'w')";

static ldb *sweep_open(void)
{
    ldb *db = NULL;
    CHECK(ldb_open(NULL, &db) == LDB_OK);
    EXEC(db, schema);
    EXEC(db, "CREATE INDEX issues_assignee ON issues(assignee)");
    EXEC(db, sweep_data);
    return db;
}

/* Fails the n-th allocation of ldb_live_open (once, then from there on)
 * for n = 1, 2, ... until it succeeds: every failure is LDB_NOMEM, no
 * query, no callback, memory back to where it was. */
static void open_nomem_sweep(void)
{
    for (size_t k = 0; k < oracle_cases(); k++)
        for (int persistent = 0; persistent < 2; persistent++) {
            ldb *db = sweep_open();
            static struct oracle o;
            oracle_open(&o, db, &cases[k], false); /* warms the registry */
            ldb_live_close(o.root.q);
            oracle_free(&o);
            int64_t live0 = mem_live();
            uint64_t n;
            for (n = 1;; n++) {
                ldb_live *q = (ldb_live *)&o;
                mem_fail_at(n, persistent);
                int rc = oracle_start(&o, db, &cases[k], false, &q);
                uint64_t failed = mem_failed_count();
                mem_fail_at(0, 0);
                if (!failed) {
                    CHECK_INT(rc, LDB_OK);
                    oracle_check(&o, db, T_USERS | T_ISSUES | T_COMMENTS, true, "open");
                    ldb_live_close(q);
                    oracle_free(&o);
                    break;
                }
                CHECKF(rc == LDB_NOMEM && q == NULL, "%s: allocation %llu: rc %d (%s)",
                       cases[k].live, (unsigned long long)n, rc, ldb_errmsg(db));
                CHECKF(o.seq.n == 0 && o.active.n == 0, "allocation %llu: %zu batches",
                       (unsigned long long)n, o.seq.n);
                oracle_free(&o);
                CHECKF(mem_live() == live0, "%s: allocation %llu: %lld blocks left",
                       cases[k].live, (unsigned long long)n, (long long)(mem_live() - live0));
            }
            CHECK(n > 10);
            ldb_close(db);
        }
}

/* Route moves, activations and retirements for every case in one
 * commit, which also rebuilds the queries that read the index. */
static const char sweep_commit[] =
    "BEGIN;"
    "DROP INDEX issues_assignee;"                        /* rebuilds the queries reading it */
    "DELETE FROM users WHERE id = 3;"                    /* retires buckets */
    "INSERT INTO users VALUES (5, 'eve', 3);"            /* activates */
    "UPDATE users SET team = 4 WHERE id = 2;"            /* a team route move */
    "UPDATE issues SET assignee = 2 WHERE id = 1;"       /* an issue's route move */
    "UPDATE comments SET issue_id = 3 WHERE id = 1;"     /* a comment's */
    "INSERT INTO issues VALUES (6, 5, 'open', 1, 'f');"
    "COMMIT";

static const char sweep_after[] =
    "BEGIN; INSERT INTO issues VALUES (7, 1, 'open', 1, 'g'); UPDATE users SET team = 1 "
    "WHERE id = 4; UPDATE comments SET body = 'v'; COMMIT";

static int64_t sweep_checksum(ldb *db)
{
    ldb_stmt *st;
    CHECK(ldb_prepare(db, "SELECT (SELECT sum(id * 7 + coalesce(team, 0)) FROM users) * 1000000"
                          " + (SELECT sum(id * 5 + coalesce(assignee, 0)) FROM issues) * 1000"
                          " + (SELECT sum(id * 3 + issue_id) FROM comments)",
                      -1, &st, NULL) == LDB_OK);
    CHECK_INT(ldb_step(st), LDB_ROW);
    int64_t v = ldb_row_int64(ldb_stmt_row(st), 0);
    ldb_finalize(st);
    return v;
}

/* A failed query: it published nothing in the commit that failed it or
 * later, its handles report its error, and its results read as last
 * published (the mirrors), and the same later (an install that ran out of
 * memory midway left the root and earlier handles installed: found by
 * the commit sweep). */
static void check_failed_query(struct oracle *o, ldb *db, const char *when)
{
    CHECKF(o->seq.n == 0, "%s: %s: a failed query published %zu batches", when, o->cs->live,
           o->seq.n);
    CHECKF(!o->err[0], "%s: %s", when, o->err);
    for (size_t i = 0; i <= o->active.n; i++) {
        struct mirror *m = i < o->active.n ? o->active.v[i] : &o->root;
        CHECK_INT(ldb_live_error(m->q, NULL), LDB_NOMEM);
        struct rows got = read_rows(m, false), mine = mirror_rows(m);
        if (m->failed) { /* frozen since */
            rows_free(&mine);
            for (size_t r = 0; r < m->frozen.n; r++)
                rows_add(&mine, strdup(m->frozen.v[r]));
        }
        for (size_t r = 0; !m->failed && r < got.n; r++)
            rows_add(&m->frozen, strdup(got.v[r]));
        m->failed = true;
        check_rows(got, mine, m, "a failed query's read against its last published result",
                   when);
    }
}

/* One run of the sweep below over case cs: the commit with allocation n
 * failing (from there on when persistent); whether an allocation failed.
 * *failed_queries counts the runs that failed the query. */
static bool commit_with_failure(const struct case_spec *cs, uint64_t n, bool persistent,
                                int *failed_queries)
{
    static struct oracle o;
    int64_t live0 = mem_live();
    ldb *db = sweep_open();
    int64_t sum0 = sweep_checksum(db);
    oracle_open(&o, db, cs, persistent); /* retained handles too */
    CHECKF(!o.err[0], "open: %s", o.err); /* opens are checked elsewhere: batches only */
    oracle_settle(&o);
    mem_fail_at(n, persistent);
    int rc = ldb_exec(db, sweep_commit, NULL, NULL);
    uint64_t failed = mem_failed_count();
    mem_fail_at(0, 0);
    char when[64];
    snprintf(when, sizeof when, "allocation %llu%s", (unsigned long long)n,
             persistent ? " on" : "");
    CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "%s: rc %d (%s)", when, rc, ldb_errmsg(db));
    if (rc != LDB_OK) {
        ldb_exec(db, "ROLLBACK", NULL, NULL); /* when the script stopped inside */
        CHECK_INT(sweep_checksum(db), sum0);
    }
    bool ok = ldb_live_error(o.root.q, NULL) == LDB_OK;
    if (ok) {
        oracle_check(&o, db, T_USERS | T_ISSUES | T_COMMENTS, rc == LDB_OK, when);
    } else {
        CHECK_INT(ldb_live_error(o.root.q, NULL), LDB_NOMEM);
        ++*failed_queries;
        check_failed_query(&o, db, when);
    }
    EXEC(db, sweep_after);
    if (ok)
        oracle_check(&o, db, T_USERS | T_ISSUES | T_COMMENTS, true, "after");
    else
        check_failed_query(&o, db, "after");
    ldb_live_close(o.root.q);
    oracle_free(&o);
    ldb_close(db); /* frees the retained handles too */
    CHECKF(mem_live() == live0, "%s: %lld blocks leaked", when, (long long)(mem_live() - live0));
    return failed > 0;
}

/*
 * The commit above with allocation n failing, n = 1, 2, ... until nothing
 * fails, once and from there on, for each case alone: it fails with
 * LDB_NOMEM and changes nothing (no batch), or it commits and the query
 * is right (the oracle) or failed with LDB_NOMEM, publishing nothing then
 * or later. Memory comes back at ldb_close. Persistent failures run the
 * first two cases only (two and three levels), to keep the sanitizer run
 * short.
 */
static void commit_nomem_sweep(void)
{
    for (int persistent = 0; persistent < 2; persistent++) {
        uint64_t runs = 0;
        int failed_queries = 0;
        for (size_t k = 0; k < (persistent ? 2 : oracle_cases()); k++) {
            uint64_t n = 1;
            while (commit_with_failure(&cases[k], n, persistent, &failed_queries))
                n++;
            runs += n;
        }
        printf("#    %llu runs%s, %d failed the query\n", (unsigned long long)runs,
               persistent ? " (persistent failures)" : "", failed_queries);
        CHECK(failed_queries > 0);
    }
}

/* Windows whose rows outside them held handles: a row entering the window
 * showed a handle with rows never published. The query, the data, the
 * write that brings a row into the window. */
static const struct window_repro {
    struct case_spec cs;
    const char *data, *write;
} window_repros[] = {
    { { "SELECT u.id, LIVE (SELECT i.id FROM issues i WHERE i.assignee = u.id ORDER BY i.id) "
        "AS issues FROM users u ORDER BY u.id LIMIT 1",
        "SELECT u.id FROM users u ORDER BY u.id LIMIT 1", T_USERS, true, 1,
        { { -1, 1, 0, T_ISSUES, true,
            "SELECT i.id FROM issues i WHERE i.assignee = ?1 ORDER BY i.id" } } },
      "INSERT INTO users VALUES (1, 'ann', 1), (2, 'bob', 1);"
      "INSERT INTO issues VALUES (10, 2, 'open', 1, 'a'), (11, 2, 'open', 1, 'b')",
      "DELETE FROM users WHERE id = 1" },
    { { "SELECT u.id, LIVE (SELECT i.id, LIVE (SELECT c.id FROM comments c WHERE c.issue_id = "
        "i.id) AS comments FROM issues i WHERE i.assignee = u.id ORDER BY i.id LIMIT 1) AS "
        "issues FROM users u",
        "SELECT u.id FROM users u", T_USERS, false, 2,
        { { -1, 1, 0, T_ISSUES, true,
            "SELECT i.id FROM issues i WHERE i.assignee = ?1 ORDER BY i.id LIMIT 1" },
          { 0, 1, 0, T_COMMENTS, false,
            "SELECT c.id FROM comments c WHERE c.issue_id = ?1" } } },
      "INSERT INTO users VALUES (1, 'ann', 1);"
      "INSERT INTO issues VALUES (10, 1, 'open', 1, 'a'), (11, 1, 'open', 1, 'b');"
      "INSERT INTO comments VALUES (100, 11, 1, 'x')",
      "DELETE FROM issues WHERE id = 10" },
};

static void window_shows_its_handles_with_their_rows(void)
{
    for (size_t k = 0; k < sizeof window_repros / sizeof window_repros[0]; k++) {
        const struct window_repro *w = &window_repros[k];
        ldb *db = NULL;
        CHECK(ldb_open(NULL, &db) == LDB_OK);
        EXEC(db, schema);
        EXEC(db, w->data);
        static struct oracle o;
        oracle_open(&o, db, &w->cs, false);
        oracle_check(&o, db, T_USERS | T_ISSUES | T_COMMENTS, true, "open");
        EXEC(db, w->write);
        oracle_check(&o, db, T_USERS | T_ISSUES, true, w->write);
        ldb_live_close(o.root.q);
        oracle_free(&o);
        ldb_close(db);
    }
}

TEST_MAIN(T(child_results_match_fresh_queries), T(retained_handles_through_random_histories),
          T(live_beside_a_hidden_order_column), T(opens_over_an_empty_parent),
          T(equal_correlation_values_share_one_handle), T(last_parent_leaving_retracts_the_rows),
          T(reactivation_gets_a_new_handle), T(retained_handle_outlives_its_bucket),
          T(closing_the_root_from_a_child_callback), T(closing_the_root_while_holding_a_child),
          T(closing_the_database_with_retained_handles), T(open_nomem_sweep),
          T(commit_nomem_sweep), T(window_shows_its_handles_with_their_rows))
