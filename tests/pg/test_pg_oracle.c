/*
 * test_pg_oracle.c - the PostgreSQL adapter against PostgreSQL itself
 * (issue 15, "Oracles"): live queries over ON_DEMAND tables (a filter, a
 * join, aggregates, an ORDER BY ... LIMIT window, an include of each
 * issue's comments) while separate connections write at random
 * (autocommit, multi-row transactions left open across others' commits,
 * rollbacks) and livedb writes optimistically. At each quiescence
 * (ldb_pg_sync) every result equals the same query in PostgreSQL, and so
 * does the same one-shot SELECT over the local tables, whose every row is
 * the server's.
 *
 * Seeded (LDB_SEED replays the writes); CI-bounded to 1000 rounds or 40 s,
 * whichever comes first; LDB_LONG=1 runs ten times as many (400 s at most).
 */
#include "pg_util.h"
#include "pg_world.h"
#include "test.h"

#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void add_queries(pw_world *w)
{
    pw_add(w, "filter", PW_PLAIN,
           "SELECT id, title, status, priority, owner FROM issues "
           "WHERE status = 'open' AND priority >= 2", NULL, NULL, NULL);
    pw_add(w, "join", PW_PLAIN,
           "SELECT i.id, i.title, u.name, u.team FROM issues i JOIN users u ON u.id = i.owner "
           "WHERE i.status = 'review'", NULL, NULL, NULL);
    pw_add(w, "aggregate", PW_PLAIN,
           "SELECT status, priority, count(*), sum(owner), max(title) FROM issues "
           "WHERE status <> 'closed' GROUP BY status, priority", NULL, NULL, NULL);
    pw_add(w, "window", PW_WINDOW,
           "SELECT id, title, priority FROM issues WHERE status <> 'closed' "
           "ORDER BY priority%s, id LIMIT %d OFFSET %d", NULL,
           "SELECT id, title, priority FROM issues WHERE status <> 'closed' "
           "ORDER BY priority%s, id LIMIT %d OFFSET %d", NULL);
    pw_add(w, "include", PW_INCLUDE,
           "SELECT i.id, i.title, LIVE (SELECT c.id, c.author, c.body FROM comments c "
           "WHERE c.issue_id = i.id) FROM issues i WHERE i.priority = 5",
           "SELECT i.id, i.title FROM issues i WHERE i.priority = 5",
           "SELECT i.id, i.title FROM issues i WHERE i.priority = 5",
           "SELECT c.issue_id, c.id, c.author, c.body FROM comments c "
           "JOIN issues i ON c.issue_id = i.id WHERE i.priority = 5");
    pw_add(w, "team", PW_PLAIN,
           "SELECT id, name FROM users WHERE team IN ('core', 'ops') OR team IS NULL", NULL,
           NULL, NULL);
    pw_add(w, "authors", PW_PLAIN,
           "SELECT author, count(*), max(body) FROM comments WHERE author <= 8 GROUP BY author",
           NULL, NULL, NULL);
    pw_add(w, "owner", PW_PLAIN,
           "SELECT id, status, priority FROM issues WHERE owner = 1 OR priority IS NULL", NULL,
           NULL, NULL);
}

/* The churned query asks for another owner's issues (new demand loaded
 * while writers write). */
static void churn_owner(pw_world *w, pw_query *q)
{
    int owner = (int)rng_range(&w->r, 1, w->users);
    snprintf(q->sql, sizeof q->sql,
             "SELECT id, status, priority FROM issues WHERE owner = %d OR priority IS NULL", owner);
    snprintf(q->shot, sizeof q->shot, "%s", q->sql);
    snprintf(q->pg, sizeof q->pg, "%s", q->sql);
    pw_reopen(w, q);
}

/* Query changes made before a round, so their loads race the writes. */
static void change_queries(pw_world *w)
{
    if (rng_chance(&w->r, 1, 3))
        pw_move_window(w, &w->qs[3], (int)rng_range(&w->r, 0, 40), (int)rng_range(&w->r, 1, 20));
    if (rng_chance(&w->r, 1, 4))
        churn_owner(w, &w->qs[7]);
    if (rng_chance(&w->r, 1, 6))
        pw_reopen(w, &w->qs[rng_below(&w->r, (uint64_t)w->nq)]);
}

/* ---- optimistic writes (part PW_OPT of the keys) --------------------------- */

struct opt {
    ldb_optimistic *o;
    int bad;     /* breaks the server's CHECK (priority 0..5): rejected */
};

static struct opt optimistic_write(pw_world *w, int *next_issue)
{
    struct opt r = {NULL, rng_chance(&w->r, 1, 5)};
    int prio = r.bad ? 9 : (int)rng_range(&w->r, 0, 5);
    int id = PW_OPT + PW_PARTS * (int)rng_below(&w->r, (uint64_t)(w->issues / PW_PARTS + 1));
    char sql[256];
    switch (rng_below(&w->r, 3)) {
    case 0:
        snprintf(sql, sizeof sql, "UPDATE issues SET priority = %d, status = 'review' "
                                  "WHERE id = %d", prio, id);
        break;
    case 1:
        *next_issue += PW_PARTS;
        snprintf(sql, sizeof sql, "INSERT INTO issues VALUES (%d, 'opt%d', 'open', %d, 1)",
                 *next_issue, *next_issue, prio);
        break;
    default:
        r.bad = 0;
        snprintf(sql, sizeof sql, "DELETE FROM issues WHERE id = %d", id);
    }
    CHECK_INT(ldb_optimistic_begin(w->db), LDB_OK);
    int rc = ldb_exec(w->db, sql, NULL, NULL);
    CHECKF(rc == LDB_OK, "%s: %s", sql, ldb_errmsg(w->db));
    CHECK_INT(ldb_optimistic_commit(w->db, ldb_pg_send, w->pg, &r.o), LDB_OK);
    return r;
}

/* After ldb_pg_sync every write resolved, rejected exactly when the
 * server refuses it (one without mutations confirms at once). */
static void check_optimistic(struct opt *ops, int n)
{
    for (int i = 0; i < n; i++) {
        int st = ldb_optimistic_state(ops[i].o);
        int want = ops[i].bad && ldb_optimistic_count(ops[i].o) > 0 ? LDB_OPTIMISTIC_REJECTED
                                                                    : LDB_OPTIMISTIC_CONFIRMED;
        CHECKF(st == want, "optimistic write %d: state %d, expected %d (%s)", i, st, want,
               st == LDB_OPTIMISTIC_REJECTED ? ldb_optimistic_error(ops[i].o) : "");
        ldb_optimistic_free(ops[i].o);
    }
}

static void oracle(void)
{
    uint64_t seed = test_seed();
    int lng = getenv("LDB_LONG") && atoi(getenv("LDB_LONG")) > 0;
    int rounds = 1000 * test_scale() * (lng ? 10 : 1);
    double budget = lng ? 400 : 40, t0 = now_s();
    pw_world w;
    pw_open(&w, seed, 3, 40, 400, 1200);
    add_queries(&w);
    int next_issue = 1000000 + PW_OPT, round = 0;
    for (; round < rounds && now_s() - t0 < budget; round++) {
        struct opt ops[2];
        int nops = (int)rng_below(&w.r, 3);
        for (int i = 0; i < nops; i++)
            ops[i] = optimistic_write(&w, &next_issue);
        snprintf(w.where, sizeof w.where, "round %d", round);
        change_queries(&w);
        pw_round(&w, (int)rng_range(&w.r, 1, 14), 30);
        int rc = ldb_pg_sync(w.pg, 30000);
        CHECKF(rc == LDB_OK, "round %d: ldb_pg_sync: rc %d: %s", round, rc, ldb_pg_errmsg(w.pg));
        check_optimistic(ops, nops);
        pw_check(&w);
    }
    ldb_pg_stats st;
    ldb_pg_stats_get(w.pg, &st);
    printf("#   %d rounds in %.1f s: %llu commits, %llu rollbacks; adapter: %llu loads, "
           "%llu rows loaded, %llu txns, %llu changes, %llu ignored, %llu confirmed, "
           "%llu rejected, %llu replays\n", round, now_s() - t0,
           (unsigned long long)w.commits, (unsigned long long)w.rollbacks,
           (unsigned long long)st.loads, (unsigned long long)st.rows_loaded,
           (unsigned long long)st.txns, (unsigned long long)st.changes,
           (unsigned long long)st.ignored, (unsigned long long)st.confirmed,
           (unsigned long long)st.rejected, (unsigned long long)st.replays);
    CHECKF(round >= 5, "only %d rounds in the time budget", round);
    CHECK(st.txns > 0 && st.loads > 0 && w.rollbacks > 0);
    pw_close(&w);
}

/* One server transaction changes a row twice: first into a query's filter
 * (the row is not held yet, but now matches), then out of it. The second
 * change must follow the first, though the first is not in the table yet
 * when the second is judged. Then the reverse (out, then back in). */
static void same_row_twice_in_one_txn(void)
{
    uint64_t seed = test_seed();
    pw_world w;
    pw_open(&w, seed, 1, 10, 40, 10);
    pw_add(&w, "open", PW_PLAIN, "SELECT id, title, status FROM issues WHERE status = 'open'",
           NULL, NULL, NULL);
    CHECK_INT(ldb_pg_sync(w.pg, 30000), LDB_OK);
    char *id = pgu_value(w.reader, "SELECT min(id) FROM issues WHERE status <> 'open'");
    pgu_exec(w.w[0], "BEGIN");
    pgu_exec(w.w[0], "UPDATE issues SET status = 'open', title = 'in' WHERE id = %s", id);
    pgu_exec(w.w[0], "UPDATE issues SET status = 'closed', title = 'out' WHERE id = %s", id);
    pgu_exec(w.w[0], "COMMIT");
    CHECK_INT(ldb_pg_sync(w.pg, 30000), LDB_OK);
    snprintf(w.where, sizeof w.where, "in and out of the filter, issue %s", id);
    pw_check(&w);
    pgu_exec(w.w[0], "BEGIN");
    pgu_exec(w.w[0], "UPDATE issues SET status = 'open', title = 'in' WHERE id = %s", id);
    pgu_exec(w.w[0], "UPDATE issues SET status = 'review', title = 'out' WHERE id = %s", id);
    pgu_exec(w.w[0], "UPDATE issues SET status = 'open', title = 'in again' WHERE id = %s", id);
    pgu_exec(w.w[0], "COMMIT");
    CHECK_INT(ldb_pg_sync(w.pg, 30000), LDB_OK);
    snprintf(w.where, sizeof w.where, "in, out and in again, issue %s", id);
    pw_check(&w);
    free(id);
    pw_close(&w);
}

TEST_MAIN(T(same_row_twice_in_one_txn), T(oracle))
