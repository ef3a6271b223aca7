/*
 * pg_world.c - the shared issue tracker of the PostgreSQL oracle and
 * fault tests (pg_world.h).
 *
 * The server's contents come from the seed through generate_series
 * formulas, and every later write from w->r, so LDB_SEED replays the same
 * history (the adapter's timing aside).
 */
#include "pg_world.h"

#include "pg_util.h"

#include <stdlib.h>
#include <string.h>

static const char *const statuses[] = {"open", "review", "closed"};
static const char *const teams[] = {"core", "web", "ops"};

/* ---- the server's tables and the attached ones ------------------------------ */

static void create_tables(pw_world *w)
{
    unsigned m1 = (unsigned)rng_range(&w->r, 1, 997) | 1;
    unsigned m2 = (unsigned)rng_range(&w->r, 1, 997) | 1;
    PGconn *c = w->reader;
    pgu_exec(c, "CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL, team text)");
    pgu_exec(c, "CREATE TABLE issues (id int PRIMARY KEY, title text NOT NULL, "
                "status text NOT NULL, priority int CHECK (priority BETWEEN 0 AND 5), owner int)");
    pgu_exec(c, "CREATE TABLE comments (id int PRIMARY KEY, issue_id int NOT NULL, "
                "author int, body text)");
    pgu_exec(c, "INSERT INTO users SELECT g, 'user' || g, "
                "(ARRAY['core','web','ops',NULL])[1 + (g * %u) %% 4] "
                "FROM generate_series(1, %d) g", m1, w->users);
    pgu_exec(c, "INSERT INTO issues SELECT g, 'issue ' || g, "
                "(ARRAY['open','review','closed'])[1 + (g * %u) %% 3], "
                "CASE WHEN (g * %u) %% 7 = 0 THEN NULL ELSE (g * %u) %% 6 END, "
                "CASE WHEN g %% 9 = 0 THEN NULL ELSE 1 + (g * %u) %% %d END "
                "FROM generate_series(1, %d) g", m1, m2, m1, m2, w->users, w->issues);
    pgu_exec(c, "INSERT INTO comments SELECT g, 1 + (g * %u) %% %d, "
                "CASE WHEN g %% 5 = 0 THEN NULL ELSE 1 + g %% %d END, 'c' || g "
                "FROM generate_series(1, %d) g", m2, w->issues, w->users, w->comments);
}

void pw_open(pw_world *w, uint64_t seed, int nw, int users, int issues, int comments)
{
    memset(w, 0, sizeof *w);
    CHECK(nw >= 1 && nw <= PW_MAX_WRITERS);
    rng_seed(&w->r, seed);
    w->nw = nw;
    w->users = users, w->issues = issues, w->comments = comments;
    pgu_reset();
    w->reader = pgu_connect(pgu_conninfo());
    create_tables(w);
    for (int i = 0; i < nw; i++)
        w->w[i] = pgu_connect(pgu_conninfo());
    CHECK_INT(ldb_open(NULL, &w->db), LDB_OK);
    w->pg = pgu_open(w->db, NULL);
    const char *names[3] = {"users", "issues", "comments"};
    for (int t = 0; t < 3; t++) {
        int rc = ldb_pg_attach(w->pg, names[t], NULL, LDB_SOURCE_ON_DEMAND, &w->src[t]);
        CHECKF(rc == LDB_OK, "ldb_pg_attach %s: rc %d: %s", names[t], rc, ldb_pg_errmsg(w->pg));
    }
}

void pw_close(pw_world *w)
{
    for (int i = 0; i < w->nq; i++)
        ldb_live_close(w->qs[i].q);
    ldb_pg_close(w->pg);
    ldb_close(w->db);
    for (int i = 0; i < w->nw; i++)
        PQfinish(w->w[i]);
    PQfinish(w->reader);
    memset(w, 0, sizeof *w);
}

void pw_reconnect_writers(pw_world *w)
{
    for (int i = -1; i < w->nw; i++) {
        PGconn *c = i < 0 ? w->reader : w->w[i];
        /* A terminated backend shows only at the next query. */
        PQclear(PQexec(c, "SELECT 1"));
        if (PQstatus(c) != CONNECTION_OK)
            PQreset(c);
        CHECKF(PQstatus(c) == CONNECTION_OK, "reconnecting: %s", PQerrorMessage(c));
        if (i >= 0)
            w->in_txn[i] = 0;
    }
}

/* ---- live queries ---------------------------------------------------------------- */

/* No published row may show a rolled-back value; child handles get the
 * same check as they appear. */
static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q;
    pw_world *w = ctx;
    for (size_t i = 0; i < n; i++) {
        const ldb_row *r = c[i].after;
        for (int j = 0; r && j < ldb_row_columns(r); j++) {
            size_t len = 0;
            const char *t = ldb_row_type(r, j) == LDB_TEXT ? ldb_row_text(r, j, &len) : NULL;
            if (t && len >= 3 && memcmp(t, "rb-", 3) == 0 && !w->trace[0])
                snprintf(w->trace, sizeof w->trace, "%.*s", (int)len, t);
            if (ldb_row_type(r, j) == LDB_LIVE)
                ldb_live_set_callback(ldb_row_live(r, j), on_change, w);
        }
    }
}

static void render_window(pw_query *q)
{
    snprintf(q->sql, sizeof q->sql, q->tsql, "", q->lim, q->off);
    snprintf(q->shot, sizeof q->shot, "%s", q->sql);
    snprintf(q->pg, sizeof q->pg, q->tpg, " NULLS FIRST", q->lim, q->off);
}

void pw_reopen(pw_world *w, pw_query *q)
{
    ldb_live_close(q->q);
    q->q = NULL;
    int rc = ldb_live_open(w->db, q->sql, on_change, w, &q->q);
    CHECKF(rc == LDB_OK && q->q, "ldb_live_open %s: %s", q->name, ldb_errmsg(w->db));
}

void pw_add(pw_world *w, const char *name, int kind, const char *sql, const char *shot,
            const char *pg, const char *child)
{
    CHECK(w->nq < PW_MAX_QUERIES);
    pw_query *q = &w->qs[w->nq++];
    memset(q, 0, sizeof *q);
    q->name = name;
    q->kind = kind;
    if (kind == PW_WINDOW) {
        q->tsql = sql, q->tpg = pg;
        q->lim = 10;
        render_window(q);
    } else {
        snprintf(q->sql, sizeof q->sql, "%s", sql);
        snprintf(q->shot, sizeof q->shot, "%s", shot ? shot : sql);
        snprintf(q->pg, sizeof q->pg, "%s", pg ? pg : sql);
        snprintf(q->child, sizeof q->child, "%s", child ? child : "");
    }
    pw_reopen(w, q);
}

void pw_move_window(pw_world *w, pw_query *q, int off, int lim)
{
    (void)w;
    CHECK(q->kind == PW_WINDOW);
    q->off = off, q->lim = lim;
    render_window(q);
    CHECK_INT(ldb_live_set_window(q->q, off, lim), LDB_OK);
}

/* ---- writers ------------------------------------------------------------------------ */

/* An id of part p in 1..*count, or a new one (then *count grows). */
static int pick_id(pw_world *w, int p, int *count, int fresh)
{
    if (fresh) {
        int id = *count + 1;
        while (id % PW_PARTS != p)
            id++;
        return *count = id;
    }
    int id = p + PW_PARTS * (int)rng_below(&w->r, (uint64_t)(*count / PW_PARTS + 1));
    return id ? id : PW_PARTS;
}

static void text_value(pw_world *w, int i, const char *pre, char *out, size_t size)
{
    snprintf(out, size, "%s%s%u", w->doomed[i] ? "rb-" : "", pre,
             (unsigned)rng_below(&w->r, 100000));
}

static void nullable_int(pw_world *w, int lo, int hi, char *out, size_t size)
{
    if (rng_chance(&w->r, 1, 8))
        snprintf(out, size, "NULL");
    else
        snprintf(out, size, "%d", (int)rng_range(&w->r, lo, hi));
}

/* Issues: updates that move rows across every filter; inserts and
 * deletes unless move_only. */
static void write_issue(pw_world *w, int i, PGconn *c)
{
    char t[64], p[16], o[16];
    text_value(w, i, "t", t, sizeof t);
    nullable_int(w, 0, 5, p, sizeof p);
    nullable_int(w, 1, w->users, o, sizeof o);
    const char *st = statuses[rng_below(&w->r, 3)];
    int op = (int)rng_below(&w->r, w->move_only ? 3 : 5);
    if (op == 0) {
        pgu_exec(c, "UPDATE issues SET status = '%s', priority = %s WHERE id = %d", st, p,
                 pick_id(w, i, &w->issues, 0));
    } else if (op == 1) {
        pgu_exec(c, "UPDATE issues SET title = '%s', owner = %s%s WHERE id = %d", t, o,
                 rng_chance(&w->r, 1, 2) ? ", status = 'open'" : "", pick_id(w, i, &w->issues, 0));
    } else if (op == 2) {
        int a = pick_id(w, i, &w->issues, 0);
        pgu_exec(c, "UPDATE issues SET priority = %s, status = '%s' "
                    "WHERE id %% %d = %d AND id BETWEEN %d AND %d",
                 p, st, PW_PARTS, i, a, a + 40);
    } else if (op == 3) {
        pgu_exec(c, "INSERT INTO issues VALUES (%d, '%s', '%s', %s, %s)",
                 pick_id(w, i, &w->issues, 1), t, st, p, o);
    } else {
        pgu_exec(c, "DELETE FROM issues WHERE id = %d", pick_id(w, i, &w->issues, 0));
    }
}

/* Comments: inserts, body changes, moves between issues, deletes. */
static void write_comment(pw_world *w, int i, PGconn *c)
{
    char b[64], a[16];
    text_value(w, i, "b", b, sizeof b);
    nullable_int(w, 1, w->users, a, sizeof a);
    int issue = (int)rng_range(&w->r, 1, w->issues);
    switch (rng_below(&w->r, 5)) {
    case 0:
        pgu_exec(c, "INSERT INTO comments VALUES (%d, %d, %s, '%s')",
                 pick_id(w, i, &w->comments, 1), issue, a, b);
        break;
    case 1:
        pgu_exec(c, "UPDATE comments SET body = '%s', author = %s WHERE id = %d", b, a,
                 pick_id(w, i, &w->comments, 0));
        break;
    case 2:
        pgu_exec(c, "UPDATE comments SET issue_id = %d WHERE id = %d", issue,
                 pick_id(w, i, &w->comments, 0));
        break;
    case 3:
        pgu_exec(c, "DELETE FROM comments WHERE id = %d", pick_id(w, i, &w->comments, 0));
        break;
    default:
        pgu_exec(c, "DELETE FROM comments WHERE id %% %d = %d AND issue_id = %d", PW_PARTS, i,
                 issue);
    }
}

static void write_user(pw_world *w, int i, PGconn *c)
{
    char n[64];
    text_value(w, i, "u", n, sizeof n);
    const char *team = rng_chance(&w->r, 1, 5) ? "NULL" : teams[rng_below(&w->r, 3)];
    const char *q = strcmp(team, "NULL") ? "'" : "";
    if (rng_chance(&w->r, 1, 4))
        pgu_exec(c, "INSERT INTO users VALUES (%d, '%s', %s%s%s)", pick_id(w, i, &w->users, 1), n,
                 q, team, q);
    else
        pgu_exec(c, "UPDATE users SET name = '%s', team = %s%s%s WHERE id = %d", n, q, team, q,
                 pick_id(w, i, &w->users, 0));
}

static void end_txn(pw_world *w, int i)
{
    pgu_exec(w->w[i], w->doomed[i] ? "ROLLBACK" : "COMMIT");
    if (w->doomed[i])
        w->rollbacks++;
    else
        w->commits++;
    w->in_txn[i] = w->doomed[i] = 0;
}

static void poll_adapter(pw_world *w)
{
    int rc = ldb_pg_poll(w->pg);
    CHECKF(rc == LDB_OK, "ldb_pg_poll: rc %d: %s", rc, ldb_pg_errmsg(w->pg));
}

void pw_round(pw_world *w, int steps, int poll_pct)
{
    for (int s = 0; s < steps; s++) {
        int i = (int)rng_below(&w->r, (uint64_t)w->nw);
        if (!w->in_txn[i] && rng_chance(&w->r, 1, 3)) {
            pgu_exec(w->w[i], "BEGIN");
            w->in_txn[i] = 1;
            w->doomed[i] = rng_chance(&w->r, 1, 4);
        }
        unsigned what = (unsigned)rng_below(&w->r, 10);
        if (what < 5)
            write_issue(w, i, w->w[i]);
        else if (what < 8)
            write_comment(w, i, w->w[i]);
        else
            write_user(w, i, w->w[i]);
        if (!w->in_txn[i])
            w->commits++;
        else if (rng_chance(&w->r, 1, 3))
            end_txn(w, i);
        if (rng_chance(&w->r, (unsigned)poll_pct, 100))
            poll_adapter(w);
    }
    /* End the open ones in a random order (commit order != begin order). */
    int order[PW_MAX_WRITERS];
    for (int i = 0; i < w->nw; i++) {
        int j = (int)rng_below(&w->r, (uint64_t)i + 1);
        order[i] = order[j];
        order[j] = i;
    }
    for (int i = 0; i < w->nw; i++)
        if (w->in_txn[order[i]])
            end_txn(w, order[i]);
    for (int i = 0; i < w->nw; i++)
        CHECK(!w->in_txn[i]);
}

/* ---- the check ---------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* a (taken) equals pg_sql's rows on the server. */
static void against_pg(pw_world *w, char **a, int na, const char *pg_sql, const char *what,
                       const char *name)
{
    int nb;
    char **b = pgu_rows_pg(w->reader, pg_sql, &nb);
    int ok = pgu_rows_equal(a, na, b, nb, what);
    pgu_rows_free(a, na);
    pgu_rows_free(b, nb);
    CHECKF(ok, "%s: %s differs from PostgreSQL (%s)", name, what, w->where);
}

/* Every row livedb holds is the server's row of that key. */
static void check_local_rows(pw_world *w)
{
    const char *names[3] = {"users", "issues", "comments"};
    for (int t = 0; t < 3; t++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", names[t]);
        int nl, np;
        char **l = pgu_rows_ldb(w->db, sql, &nl);
        char **p = pgu_rows_pg(w->reader, sql, &np);
        char bad[256] = "";
        for (int i = 0; i < nl && !bad[0]; i++)
            if (!bsearch(&l[i], p, (size_t)np, sizeof *p, cmp_str))
                snprintf(bad, sizeof bad, "%s", l[i]);
        pgu_rows_free(l, nl);
        pgu_rows_free(p, np);
        if (bad[0]) {           /* the server's row of that key, and the adapter's counters */
            char q[160];
            snprintf(q, sizeof q, "SELECT * FROM %s WHERE id = %lld", names[t], atoll(bad));
            char *srv = pgu_value(w->reader, "SELECT count(*) FROM (%s) x", q);
            ldb_pg_stats st;
            ldb_pg_stats_get(w->pg, &st);
            fprintf(stderr, "#    server rows of that key: %s; adapter: %llu txns, %llu changes, "
                    "%llu ignored, %llu loads, %llu skipped, %llu replays, %llu writes "
                    "(%llu confirmed, %llu rejected)\n", srv ? srv : "?",
                    (unsigned long long)st.txns, (unsigned long long)st.changes,
                    (unsigned long long)st.ignored, (unsigned long long)st.loads,
                    (unsigned long long)st.rows_skipped, (unsigned long long)st.replays,
                    (unsigned long long)st.writes, (unsigned long long)st.confirmed,
                    (unsigned long long)st.rejected);
            free(srv);
        }
        CHECKF(!bad[0], "local %s row \"%s\" is not the server's (%s)", names[t], bad, w->where);
    }
}

struct ids {
    int64_t v[4096];
    int n;
};

static int collect_id(void *ctx, const ldb_row *r)
{
    struct ids *ids = ctx;
    if (ids->n < 4096)
        ids->v[ids->n++] = ldb_row_int64(r, 0);
    return 0;
}

static void check_window_order(pw_world *w, pw_query *q)
{
    struct ids got = {.n = 0};
    CHECK_INT(ldb_live_read(q->q, collect_id, &got), LDB_OK);
    PGresult *res = PQexec(w->reader, q->pg);
    CHECKF(PQresultStatus(res) == PGRES_TUPLES_OK, "%s", PQerrorMessage(w->reader));
    int n = PQntuples(res), bad = -1;
    for (int i = 0; i < n && i < got.n && bad < 0; i++)
        if (got.v[i] != strtoll(PQgetvalue(res, i, 0), NULL, 10))
            bad = i;
    PQclear(res);
    CHECKF(n == got.n && bad < 0, "%s: window order differs at %d (%d vs %d rows)", q->name, bad,
           got.n, n);
}

/* An include's children: each root row's handle, retained while read. */
struct children {
    int64_t id[4096];
    ldb_live *h[4096];
    int n, col;
};

static int collect_child(void *ctx, const ldb_row *r)
{
    struct children *ch = ctx;
    ldb_live *h = ldb_row_live(r, ch->col);
    if (ch->n < 4096 && h && ldb_live_retain(h) == LDB_OK) {
        ch->id[ch->n] = ldb_row_int64(r, 0);
        ch->h[ch->n++] = h;
    }
    return 0;
}

/* Root rows without their last (LIVE) column, and "parent id|child row"
 * for every child row, against the same in PostgreSQL. */
static void check_include(pw_world *w, pw_query *q)
{
    int nl;
    char **l = pgu_rows_live(q->q, &nl);
    for (int i = 0; i < nl; i++) {
        char *bar = strrchr(l[i], '|');
        CHECK(bar && strncmp(bar, "|live#", 6) == 0);
        *bar = '\0';
    }
    if (nl)
        qsort(l, (size_t)nl, sizeof *l, cmp_str);
    against_pg(w, l, nl, q->pg, "the include's root rows", q->name);

    struct children *ch = calloc(1, sizeof *ch);
    CHECK(ch);
    ch->col = ldb_live_column_count(q->q) - 1;
    CHECK_INT(ldb_live_read(q->q, collect_child, ch), LDB_OK);
    CHECK_INT(ch->n, nl);
    char **all = NULL;
    int na = 0;
    for (int i = 0; i < ch->n; i++) {
        int nc;
        char **c = pgu_rows_live(ch->h[i], &nc);
        all = realloc(all, (size_t)(na + nc + 1) * sizeof *all);
        for (int j = 0; j < nc; j++)
            CHECK(asprintf(&all[na++], "%lld|%s", (long long)ch->id[i], c[j]) > 0);
        pgu_rows_free(c, nc);
        ldb_live_release(ch->h[i]);
    }
    free(ch);
    if (na)
        qsort(all, (size_t)na, sizeof *all, cmp_str);
    against_pg(w, all, na, q->child, "the include's children", q->name);
    char **shot = pgu_rows_ldb(w->db, q->child, &nl);
    against_pg(w, shot, nl, q->child, "the children's one-shot over the local tables", q->name);
}

/* What the adapter is asked for, when a query is not READY. */
void pw_print_requests(pw_world *w)
{
    const char *msg = NULL;
    int state = ldb_pg_state(w->pg, &msg);
    ldb_pg_stats st;
    ldb_pg_stats_get(w->pg, &st);
    printf("#    adapter: state %d (%s), %llu fences, %llu writes, %llu confirmed, %llu rejected, "
           "%llu reconnects, %llu replays, lsn %llx\n", state, msg ? msg : "",
           (unsigned long long)st.fences, (unsigned long long)st.writes,
           (unsigned long long)st.confirmed, (unsigned long long)st.rejected,
           (unsigned long long)st.reconnects, (unsigned long long)st.replays,
           (unsigned long long)st.lsn);
    char *ex = NULL;
    if (ldb_pg_explain(w->pg, &ex) == LDB_OK && ex)
        printf("#    ldb_pg_explain:\n%s\n", ex);
    free(ex);
    for (int t = 0; t < 3; t++) {
        ldb_source_stats ss;
        ldb_source_stats_get(w->src[t], &ss);
        printf("#    %s: %llu demands, %llu live requests, %llu queued, %llu requests, "
               "%llu settles\n", ldb_source_table(w->src[t]), (unsigned long long)ss.demands,
               (unsigned long long)ss.requests_live, (unsigned long long)ss.queued,
               (unsigned long long)ss.requests, (unsigned long long)ss.settles);
    }
}

void pw_check(pw_world *w)
{
    CHECKF(!w->trace[0], "a live query showed the rolled-back value \"%s\"", w->trace);
    check_local_rows(w);   /* first: a wrong row explains a wrong result */
    for (int i = 0; i < w->nq; i++) {
        pw_query *q = &w->qs[i];
        const char *msg = NULL;
        CHECKF(ldb_live_error(q->q, &msg) == LDB_OK, "%s: %s", q->name, msg);
        int st = ldb_live_status(q->q, &msg);
        if (st != LDB_STATUS_READY)
            pw_print_requests(w);
        CHECKF(st == LDB_STATUS_READY, "%s: status %d after ldb_pg_sync (%s): %s", q->name, st,
               w->where, msg ? msg : "");
        int nl;
        char **l;
        if (q->kind == PW_INCLUDE) {
            check_include(w, q);
        } else {
            l = pgu_rows_live(q->q, &nl);
            against_pg(w, l, nl, q->pg, "the live result", q->name);
        }
        if (q->kind == PW_WINDOW)
            check_window_order(w, q);
        l = pgu_rows_ldb(w->db, q->shot, &nl);
        against_pg(w, l, nl, q->pg, "the one-shot over the local tables", q->name);
    }
}
