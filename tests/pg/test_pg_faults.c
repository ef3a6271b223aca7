/*
 * test_pg_faults.c - the PostgreSQL adapter through faults (issue 15,
 * "Oracles"): while writers keep writing, the adapter's backends are
 * terminated (all, the walsender only, the others only), the server
 * restarts, and the replication slot is dropped (a replay). After each,
 * ldb_pg_sync settles and every live result equals PostgreSQL's.
 *
 * No partial replay is ever visible: writers only move issues between
 * statuses and priorities (never insert or delete one), so every batch of
 * a live count(*) over issues, and every state of a live count per
 * status rebuilt from its batches, totals the number of issues, through
 * reconnections and replays. An optimistic write in flight when the
 * connection dies ends CONFIRMED exactly when the server has it.
 *
 * Seeded (LDB_SEED replays the writes and the order of the faults).
 */
#include "pg_util.h"
#include "pg_world.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ISSUES 200

/* ---- the totals that must never change ------------------------------------------ */

struct totals {
    int armed;           /* after the first settled load */
    int64_t count;       /* the count(*) query's last row */
    int64_t per[3];      /* the per-status query rebuilt from batches */
    char bad[200];       /* the first wrong total seen */
};

static int status_index(const ldb_row *r)
{
    size_t len = 0;
    const char *s = ldb_row_text(r, 0, &len);
    static const char *const names[3] = {"open", "review", "closed"};
    for (int i = 0; s && i < 3; i++)
        if (len == strlen(names[i]) && memcmp(s, names[i], len) == 0)
            return i;
    return -1;
}

static void on_count(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q;
    struct totals *t = ctx;
    for (size_t i = 0; i < n; i++)
        if (c[i].after)
            t->count = ldb_row_int64(c[i].after, 0);
    if (t->armed && t->count != ISSUES && !t->bad[0])
        snprintf(t->bad, sizeof t->bad, "count(*) showed %lld", (long long)t->count);
}

static void on_per_status(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    (void)q;
    struct totals *t = ctx;
    for (size_t i = 0; i < n; i++) {
        if (c[i].before && status_index(c[i].before) >= 0)
            t->per[status_index(c[i].before)] -= ldb_row_int64(c[i].before, 1);
        if (c[i].after && status_index(c[i].after) >= 0)
            t->per[status_index(c[i].after)] += ldb_row_int64(c[i].after, 1);
    }
    int64_t sum = t->per[0] + t->per[1] + t->per[2];
    if (t->armed && sum != ISSUES && !t->bad[0])
        snprintf(t->bad, sizeof t->bad, "the per-status counts summed to %lld", (long long)sum);
}

/* ---- faults ----------------------------------------------------------------------- */

enum { F_KILL_ALL, F_KILL_WALSENDER, F_KILL_OTHERS, F_RESTART, F_DROP_SLOT, F_KINDS };
static const char *const fault_names[F_KINDS] = {
    "terminate every backend", "terminate the walsender", "terminate the other backends",
    "restart the server", "drop the slot"};

/* The adapter's backends: role livedb's but for the test's own. */
static int terminate(pw_world *w, PGconn *a, const char *which)
{
    char mine[128];
    int len = snprintf(mine, sizeof mine, "%d", PQbackendPID(w->reader));
    for (int i = 0; i < w->nw; i++)
        len += snprintf(mine + len, sizeof mine - (size_t)len, ",%d", PQbackendPID(w->w[i]));
    char *n = pgu_value(a, "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                           "WHERE usename = 'livedb' AND pid NOT IN (%s) AND %s", mine, which);
    int killed = atoi(n);
    free(n);
    return killed;
}

static void drop_slot(pw_world *w, PGconn *a)
{
    char *slot = pgu_value(a, "SELECT slot_name FROM pg_replication_slots");
    CHECKF(slot, "no replication slot");
    /* The adapter cannot reconnect in between: nothing polls it. */
    CHECKF(terminate(w, a, "backend_type = 'walsender'") == 1, "no walsender to terminate");
    pgu_exec(a, "SELECT pg_drop_replication_slot('%s')", slot);
    free(slot);
}

static void inject(pw_world *w, int kind)
{
    if (kind == F_RESTART) {
        pgu_restart_server_polling(w->pg);
        pw_reconnect_writers(w);
        return;
    }
    PGconn *a = pgu_connect(pgu_admin_conninfo());
    if (kind == F_KILL_ALL)
        CHECKF(terminate(w, a, "TRUE") >= 2, "fewer than 2 adapter backends to terminate");
    else if (kind == F_KILL_WALSENDER)
        CHECK_INT(terminate(w, a, "backend_type = 'walsender'"), 1);
    else if (kind == F_KILL_OTHERS)
        CHECKF(terminate(w, a, "backend_type <> 'walsender'") >= 1, "no control/load backends");
    else
        drop_slot(w, a);
    PQfinish(a);
}

/* ---- an optimistic write in flight ------------------------------------------------- */

static ldb_optimistic *write_in_flight(pw_world *w, int n, int *id)
{
    *id = PW_OPT + PW_PARTS * (int)rng_range(&w->r, 0, ISSUES / PW_PARTS - 1);
    CHECK_INT(ldb_optimistic_begin(w->db), LDB_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE issues SET title = 'opt-%d' WHERE id = %d", n, *id);
    CHECKF(ldb_exec(w->db, sql, NULL, NULL) == LDB_OK, "%s", ldb_errmsg(w->db));
    ldb_optimistic *o = NULL;
    CHECK_INT(ldb_optimistic_commit(w->db, ldb_pg_send, w->pg, &o), LDB_OK);
    CHECK_INT(ldb_optimistic_count(o), 1);
    return o;
}

/* Resolved, and confirmed exactly when the server has the title. */
static void check_in_flight(pw_world *w, ldb_optimistic *o, int n, int id)
{
    int st = ldb_optimistic_state(o);
    char *title = pgu_value(w->reader, "SELECT title FROM issues WHERE id = %d", id);
    char want[32];
    snprintf(want, sizeof want, "opt-%d", n);
    int there = title && strcmp(title, want) == 0;
    free(title);
    CHECKF(st != LDB_OPTIMISTIC_PENDING, "the write in flight is still pending");
    CHECKF((st == LDB_OPTIMISTIC_CONFIRMED) == there, "the write in flight is %s, the server %s it",
           st == LDB_OPTIMISTIC_CONFIRMED ? "confirmed" : "rejected", there ? "has" : "has not");
    ldb_optimistic_free(o);
}

/* ---- the test ---------------------------------------------------------------------- */

static void check_totals(pw_world *w, ldb_live *count, ldb_live *per, struct totals *t)
{
    CHECKF(!t->bad[0], "a partial state was visible: %s", t->bad);
    int nl, np;
    char **l = pgu_rows_live(count, &nl);
    char **p = pgu_rows_pg(w->reader, "SELECT count(*) FROM issues", &np);
    int ok = pgu_rows_equal(l, nl, p, np, "count(*)");
    pgu_rows_free(l, nl);
    pgu_rows_free(p, np);
    CHECK(ok);
    l = pgu_rows_live(per, &nl);
    p = pgu_rows_pg(w->reader, "SELECT status, count(*) FROM issues GROUP BY status", &np);
    ok = pgu_rows_equal(l, nl, p, np, "count per status");
    pgu_rows_free(l, nl);
    pgu_rows_free(p, np);
    CHECK(ok);
}

static void add_queries(pw_world *w)
{
    pw_add(w, "filter", PW_PLAIN,
           "SELECT id, title, status, priority FROM issues WHERE status = 'open' AND priority >= 2",
           NULL, NULL, NULL);
    pw_add(w, "join", PW_PLAIN,
           "SELECT i.id, i.title, u.name FROM issues i JOIN users u ON u.id = i.owner "
           "WHERE i.status = 'review'", NULL, NULL, NULL);
    pw_add(w, "include", PW_INCLUDE,
           "SELECT i.id, i.title, LIVE (SELECT c.id, c.body FROM comments c "
           "WHERE c.issue_id = i.id) FROM issues i WHERE i.priority = 5",
           "SELECT i.id, i.title FROM issues i WHERE i.priority = 5",
           "SELECT i.id, i.title FROM issues i WHERE i.priority = 5",
           "SELECT c.issue_id, c.id, c.body FROM comments c "
           "JOIN issues i ON c.issue_id = i.id WHERE i.priority = 5");
}

static void faults(void)
{
    uint64_t seed = test_seed();
    pw_world w;
    pw_open(&w, seed, 2, 20, ISSUES, 400);
    w.move_only = 1;
    add_queries(&w);
    struct totals t = {0};
    ldb_live *count = NULL, *per = NULL;
    CHECK_INT(ldb_live_open(w.db, "SELECT count(*) FROM issues", on_count, &t, &count), LDB_OK);
    CHECK_INT(ldb_live_open(w.db, "SELECT status, count(*) FROM issues GROUP BY status",
                            on_per_status, &t, &per), LDB_OK);
    CHECK_INT(ldb_pg_sync(w.pg, 60000), LDB_OK);
    check_totals(&w, count, per, &t);
    t.armed = 1;

    time_t t0 = time(NULL);
    int cycles = 6 * F_KINDS * test_scale(), done = 0;
    for (int n = 0; n < cycles && time(NULL) - t0 < 75; n++, done++) {
        int kind = (int)rng_below(&w.r, F_KINDS);
        if (n < F_KINDS)
            kind = (int)((n + seed) % F_KINDS);   /* each kind at least once */
        ldb_pg_stats before, after;
        ldb_pg_stats_get(w.pg, &before);
        pw_round(&w, (int)rng_range(&w.r, 1, 8), 50);
        int id = 0;
        ldb_optimistic *o = write_in_flight(&w, n, &id);
        if (rng_chance(&w.r, 1, 2))
            CHECK_INT(ldb_pg_poll(w.pg), LDB_OK);   /* maybe sent, maybe not */
        snprintf(w.where, sizeof w.where, "fault %d: %s", n, fault_names[kind]);
        inject(&w, kind);
        for (int r = (int)rng_range(&w.r, 2, 5); r > 0; r--) {
            pw_round(&w, (int)rng_range(&w.r, 1, 6), 50);
            CHECK_INT(ldb_pg_wait(w.pg, 30), LDB_OK);
        }
        int rc = ldb_pg_sync(w.pg, 60000);
        if (rc != LDB_OK)
            pw_print_requests(&w);
        CHECKF(rc == LDB_OK, "after %s: ldb_pg_sync: rc %d: %s", fault_names[kind], rc,
               ldb_pg_errmsg(w.pg));
        ldb_pg_stats_get(w.pg, &after);
        if (kind == F_DROP_SLOT)
            CHECKF(after.replays > before.replays, "a dropped slot was not replayed");
        else
            CHECKF(after.reconnects > before.reconnects, "%s: no reconnection", fault_names[kind]);
        check_in_flight(&w, o, n, id);
        check_totals(&w, count, per, &t);
        pw_check(&w);
    }
    ldb_pg_stats st;
    ldb_pg_stats_get(w.pg, &st);
    printf("#   %d faults in %lld s: %llu reconnects, %llu replays, %llu confirmed, "
           "%llu rejected, %llu txns\n", done, (long long)(time(NULL) - t0),
           (unsigned long long)st.reconnects, (unsigned long long)st.replays,
           (unsigned long long)st.confirmed, (unsigned long long)st.rejected,
           (unsigned long long)st.txns);
    CHECKF(done >= F_KINDS, "only %d faults in the time budget", done);
    ldb_live_close(count);
    ldb_live_close(per);
    pw_close(&w);
}

/* A load in flight when its backend is terminated is sent again (the
 * header's promise), not failed: the query turns READY with the server's
 * rows. A writer's lock holds the load's command on the server until the
 * terminate lands. */
static void load_in_flight_terminated(void)
{
    uint64_t seed = test_seed();
    pw_world w;
    pw_open(&w, seed, 1, 20, ISSUES, 100);
    PGconn *a = pgu_connect(pgu_admin_conninfo());
    for (int n = 0; n < 4; n++) {
        snprintf(w.where, sizeof w.where, "load %d", n);
        pgu_exec(w.w[0], "BEGIN");
        pgu_exec(w.w[0], "LOCK TABLE issues IN ACCESS EXCLUSIVE MODE");
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT id, title, owner FROM issues WHERE owner = %d", n + 1);
        pw_add(&w, "owner", PW_PLAIN, sql, NULL, NULL, NULL);
        char *waiting = NULL;
        for (int i = 0; i < 200 && !waiting; i++) {
            CHECK_INT(ldb_pg_wait(w.pg, 10), LDB_OK);
            waiting = pgu_value(a, "SELECT max(pid) FROM pg_stat_activity WHERE usename = 'livedb' "
                                   "AND wait_event_type = 'Lock'");
        }
        CHECKF(waiting, "no load waits for the lock");
        free(waiting);
        CHECK(terminate(&w, a, "wait_event_type = 'Lock'") == 1);
        pgu_exec(w.w[0], "ROLLBACK");
        int rc = ldb_pg_sync(w.pg, 60000);
        CHECKF(rc == LDB_OK, "ldb_pg_sync: rc %d: %s", rc, ldb_pg_errmsg(w.pg));
        pw_check(&w);
        ldb_live_close(w.qs[--w.nq].q);
    }
    PQfinish(a);
    pw_close(&w);
}

/* ldb_pg_sync called at once after the slot is dropped: its fence, and an
 * optimistic write sent meanwhile, may commit before the stream has made
 * a new slot (so no slot decodes them); the replay must still end in
 * quiescence, the write resolved as the server has it. */
static void sync_right_after_slot_drop(void)
{
    uint64_t seed = test_seed();
    pw_world w;
    pw_open(&w, seed, 1, 20, ISSUES, 100);
    pw_add(&w, "all", PW_PLAIN, "SELECT id, title, status FROM issues", NULL, NULL, NULL);
    CHECK_INT(ldb_pg_sync(w.pg, 30000), LDB_OK);
    PGconn *a = pgu_connect(pgu_admin_conninfo());
    for (int n = 0; n < 3; n++) {
        snprintf(w.where, sizeof w.where, "drop %d", n);
        drop_slot(&w, a);
        int id = 0;
        ldb_optimistic *o = write_in_flight(&w, n, &id);
        pw_round(&w, 3, 0);
        int rc = ldb_pg_sync(w.pg, 20000);
        if (rc != LDB_OK)
            pw_print_requests(&w);
        CHECKF(rc == LDB_OK, "ldb_pg_sync after drop %d: rc %d: %s", n, rc, ldb_pg_errmsg(w.pg));
        check_in_flight(&w, o, n, id);
        pw_check(&w);
    }
    PQfinish(a);
    pw_close(&w);
}

TEST_MAIN(T(load_in_flight_terminated), T(sync_right_after_slot_drop), T(faults))
