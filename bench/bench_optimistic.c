/*
 * bench_optimistic.c - optimistic transactions (livedb.h, "optimistic
 * transactions") on the "list" and "join" workloads of
 * ../shared/bench/WORKLOADS.md, against a plain UPDATE of the same rows
 * with the same live query open over a local table, in the same run.
 *
 * One database per size: the issues are loaded into a local table
 * (indexes on created, status, assignee) and the baseline is timed; then
 * an EAGER provider that settles at once is attached to issues (the table
 * keeps its rows) and the optimistic cases are timed. One live query is
 * open at a time. Each timed operation changes one issue's title, the row
 * the workload's write names (list: a row in the window, as update_in;
 * join: a random issue, as issue_title), and returns with the live query's
 * callback run:
 *     local        UPDATE issues SET title = ? WHERE id = ? (autocommit)
 *     opt_confirm  ldb_optimistic_begin, that UPDATE, ldb_optimistic_commit,
 *                  then a sync transaction carrying the server's row (equal
 *                  to the optimistic one) with ldb_sync_confirm, applied
 *                  before ldb_sync_commit returns (the home thread)
 *     opt_write    the optimistic part of opt_confirm alone (begin..commit)
 *     opt_reject   the optimistic write, then ldb_optimistic_reject
 *     *_pending100 the same with 100 optimistic transactions pending on
 *                  other keys (not in the window, never the timed key)
 *     opt_insert   list only: an optimistic INSERT of a new open issue that
 *                  enters the top of the window, confirmed by the server's
 *                  equal row (TanStack's anchor case); local.list.insert
 *                  is the same INSERT on the local table
 * Lines (stat: median, p95 in us; changes: live changes per operation):
 *     bench local.<workload>.<case>.<n>.<stat>
 *     bench <workload>.opt_{confirm,write,reject}[_pending100].<n>.<stat>
 *     bench ratio.<workload>.opt_{confirm,reject}_vs_local.<n> <x> x
 *     bench ratio.<workload>.pending100_{confirm,reject}.<n> <x> x   (flat: ~1)
 *     bench opt_vs_tanstack_anchor <x> x
 *     bench {memory,durable}.list.opt_{confirm,write,reject}.10000.<stat>
 *     bench ratio.durable_vs_memory.list.opt_{write,confirm,reject}.10000 <x> x
 * The last (section "durable") runs the list workload at 10k issues twice,
 * in memory and in a durable database (PRAGMA synchronous = NORMAL, so the
 * disk's sync is not timed): what keeping pending transactions in the
 * database's outbox costs an optimistic write, confirmation and rejection.
 * The anchor is TanStack DB's optimistic insert shown in its live list,
 * ~55-58 us; the ratio takes 56 us against list.opt_insert at the first
 * size (the insert and its confirmation, more than TanStack's figure does).
 */
#include "bench_util.h"

#include "livedb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEED 20261130u /* bench_live's: the same issues */
#define PENDING 100
#define WINDOW 50
#define TANSTACK_US 56.0

static const char list_sql[] =
    "SELECT * FROM issues WHERE status = 'open' ORDER BY created DESC LIMIT 50";
static const char join_sql[] =
    "SELECT i.id, i.title, u.name FROM issues i JOIN users u ON u.id = i.assignee";

static void run(ldb *db, const char *sql)
{
    if (ldb_exec(db, sql, NULL, NULL) != LDB_OK)
        bench_die_db(db, sql);
}

/* ---- the database --------------------------------------------------------------- */

/* An issue's columns but id and title: what a sync row repeats. */
struct synced {
    int64_t created;
    int32_t assignee;
    int8_t priority;
    bool open;
};

struct world {
    ldb *db;
    int n;
    ldb_stmt *ins, *upd;
    struct synced *rows;     /* rows[id], 1..n */
    ldb_source *src;         /* NULL while issues is local */
    int64_t window[WINDOW];  /* the list query's rows */
    int64_t pending_key[PENDING];
    bool *pending;           /* pending[id]: a key of pending_key */
    uint64_t rng, title_seq;
    int64_t next_id, next_created; /* inserted issues: new keys, newest */
};

static void step_done(ldb *db, ldb_stmt *s)
{
    if (ldb_step(s) != LDB_DONE)
        bench_die_db(db, "step");
    ldb_reset(s);
}

static void insert_issue(void *ctx, const struct bench_issue *r)
{
    struct world *w = ctx;
    ldb_bind_int64(w->ins, 1, r->id);
    ldb_bind_text(w->ins, 2, r->title, -1);
    ldb_bind_text(w->ins, 3, r->status, -1);
    ldb_bind_int64(w->ins, 4, r->priority);
    ldb_bind_int64(w->ins, 5, r->created);
    ldb_bind_int64(w->ins, 6, r->assignee);
    step_done(w->db, w->ins);
    w->rows[r->id] = (struct synced){ r->created, (int32_t)r->assignee, (int8_t)r->priority,
                                      strcmp(r->status, "open") == 0 };
}

static void make_world(struct world *w, int n, const char *path)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    w->next_id = n;
    w->next_created = (int64_t)1 << 60; /* after every generated issue */
    w->rng = SEED ^ 0x0b7;
    w->rows = calloc((size_t)n + 1, sizeof *w->rows);
    w->pending = calloc((size_t)n + 1, sizeof *w->pending);
    if (!w->rows || !w->pending || ldb_open(path, &w->db) != LDB_OK)
        bench_die_db(NULL, "open");
    if (path)
        run(w->db, "PRAGMA synchronous = NORMAL");
    run(w->db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
    run(w->db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT, "
               "priority INTEGER, created INTEGER, assignee INTEGER)");
    run(w->db, "CREATE INDEX issues_created ON issues(created); CREATE INDEX issues_status ON "
               "issues(status); CREATE INDEX issues_assignee ON issues(assignee)");
    run(w->db, "BEGIN");
    if (ldb_prepare(w->db, "INSERT INTO users VALUES (?, ?)", -1, &w->ins, NULL) != LDB_OK)
        bench_die_db(w->db, "prepare");
    char name[32];
    for (int i = 1; i <= BENCH_USERS; i++) {
        snprintf(name, sizeof name, "User %d", i);
        ldb_bind_int64(w->ins, 1, i);
        ldb_bind_text(w->ins, 2, name, -1);
        step_done(w->db, w->ins);
    }
    ldb_finalize(w->ins);
    if (ldb_prepare(w->db, "INSERT INTO issues VALUES (?, ?, ?, ?, ?, ?)", -1, &w->ins, NULL) !=
        LDB_OK)
        bench_die_db(w->db, "prepare");
    bench_issues(n, SEED, insert_issue, w); /* w->ins stays for inserted issues */
    run(w->db, "COMMIT");
    if (ldb_prepare(w->db, "UPDATE issues SET title = ? WHERE id = ?", -1, &w->upd, NULL) !=
        LDB_OK)
        bench_die_db(w->db, "prepare");
}

static void free_world(struct world *w)
{
    ldb_finalize(w->upd);
    ldb_finalize(w->ins);
    ldb_close(w->db);
    free(w->rows);
    free(w->pending);
}

static int load_at_once(void *ctx, ldb_request *req)
{
    (void)ctx;
    return ldb_request_settle(req, LDB_OK, NULL);
}

static void attach_source(struct world *w)
{
    static const ldb_provider eager = { load_at_once, NULL, NULL, NULL };
    if (ldb_source_attach(w->db, "issues", LDB_SOURCE_EAGER, &eager, NULL, &w->src) != LDB_OK)
        bench_die_db(w->db, "ldb_source_attach");
}

static int collect_window(void *ctx, const ldb_row *row)
{
    struct world *w = ctx;
    for (int i = 0; i < WINDOW; i++)
        if (w->window[i] == 0) {
            w->window[i] = ldb_row_int64(row, 0);
            break;
        }
    return 0;
}

/* The window's rows, and PENDING random keys outside it. */
static void pick_keys(struct world *w, ldb_live *list)
{
    if (ldb_live_read(list, collect_window, w) != LDB_OK || w->window[WINDOW - 1] == 0)
        bench_die_db(w->db, "reading the list window");
    for (int i = 0; i < WINDOW; i++)
        w->pending[w->window[i]] = true; /* excluded while picking */
    for (int i = 0; i < PENDING; i++) {
        int64_t id;
        do
            id = 1 + (int64_t)(bench_rand(&w->rng) % (uint64_t)w->n);
        while (w->pending[id]);
        w->pending[id] = true;
        w->pending_key[i] = id;
    }
    for (int i = 0; i < WINDOW; i++)
        w->pending[w->window[i]] = false;
}

/* ---- one operation of each kind ---------------------------------------------------- */

static void update_title(struct world *w, int64_t id, const char *title)
{
    ldb_bind_text(w->upd, 1, title, -1);
    ldb_bind_int64(w->upd, 2, id);
    step_done(w->db, w->upd);
}

static ldb_optimistic *opt_write(struct world *w, int64_t id, const char *title)
{
    ldb_optimistic *o;
    if (ldb_optimistic_begin(w->db) != LDB_OK)
        bench_die_db(w->db, "ldb_optimistic_begin");
    update_title(w, id, title);
    if (ldb_optimistic_commit(w->db, NULL, NULL, &o) != LDB_OK)
        bench_die_db(w->db, "ldb_optimistic_commit");
    return o;
}

/* The server's version of the row, equal to the optimistic one. */
static void sync_confirm(struct world *w, int64_t id, const char *title, ldb_optimistic *o)
{
    const struct synced *r = &w->rows[id];
    ldb_sync *t;
    if (ldb_sync_begin(w->src, NULL, &t) != LDB_OK)
        bench_die_db(NULL, "ldb_sync_begin");
    if (ldb_sync_int64(t, 0, id) || ldb_sync_text(t, 1, title, -1) ||
        ldb_sync_text(t, 2, r->open ? "open" : "closed", -1) ||
        ldb_sync_int64(t, 3, r->priority) || ldb_sync_int64(t, 4, r->created) ||
        ldb_sync_int64(t, 5, r->assignee) || ldb_sync_update(t) || ldb_sync_confirm(t, o))
        bench_die_db(NULL, "building the sync transaction");
    if (ldb_sync_commit(t, NULL) != LDB_OK)
        bench_die_db(w->db, "ldb_sync_commit");
}

/* A new open issue, newest of all (it enters the list's window). */
static int64_t insert_new(struct world *w, const char *title)
{
    int64_t id = ++w->next_id;
    ldb_bind_int64(w->ins, 1, id);
    ldb_bind_text(w->ins, 2, title, -1);
    ldb_bind_text(w->ins, 3, "open", -1);
    ldb_bind_int64(w->ins, 4, 1);
    ldb_bind_int64(w->ins, 5, ++w->next_created);
    ldb_bind_int64(w->ins, 6, 1);
    step_done(w->db, w->ins);
    return id;
}

static ldb_optimistic *opt_insert(struct world *w, const char *title, int64_t *id)
{
    ldb_optimistic *o;
    if (ldb_optimistic_begin(w->db) != LDB_OK)
        bench_die_db(w->db, "ldb_optimistic_begin");
    *id = insert_new(w, title);
    if (ldb_optimistic_commit(w->db, NULL, NULL, &o) != LDB_OK)
        bench_die_db(w->db, "ldb_optimistic_commit");
    return o;
}

/* The server's copy of an inserted issue, confirming o. */
static void sync_confirm_insert(struct world *w, int64_t id, const char *title,
                                ldb_optimistic *o)
{
    ldb_sync *t;
    if (ldb_sync_begin(w->src, NULL, &t) != LDB_OK)
        bench_die_db(NULL, "ldb_sync_begin");
    if (ldb_sync_int64(t, 0, id) || ldb_sync_text(t, 1, title, -1) ||
        ldb_sync_text(t, 2, "open", -1) || ldb_sync_int64(t, 3, 1) ||
        ldb_sync_int64(t, 4, w->next_created) || ldb_sync_int64(t, 5, 1) ||
        ldb_sync_insert(t) || ldb_sync_confirm(t, o))
        bench_die_db(NULL, "building the sync transaction");
    if (ldb_sync_commit(t, NULL) != LDB_OK)
        bench_die_db(w->db, "ldb_sync_commit");
}

/* ---- timing ------------------------------------------------------------------------ */

enum op { LOCAL, CONFIRM, REJECT, LOCAL_INSERT, INSERT_CONFIRM };

struct stats {
    double median, p95, changes;
    double write_median, write_p95; /* CONFIRM: the optimistic write alone */
};

static int64_t next_key(struct world *w, bool list, int i)
{
    if (list)
        return w->window[i % WINDOW];
    int64_t id;
    do
        id = 1 + (int64_t)(bench_rand(&w->rng) % (uint64_t)w->n);
    while (w->pending[id]);
    return id;
}

static struct stats time_ops(struct world *w, enum op op, bool list, int reps)
{
    int warm = reps / 10;
    double *total = malloc(sizeof(double) * (size_t)reps * 2), *write = total + reps;
    if (!total)
        bench_die_db(NULL, "out of memory");
    uint64_t changes0 = 0;
    char title[32];
    for (int i = 0; i < warm + reps; i++) {
        if (i == warm)
            changes0 = bench_changes_seen;
        int64_t id = next_key(w, list, i);
        snprintf(title, sizeof title, "T%llu", (unsigned long long)++w->title_seq);
        ldb_optimistic *o = NULL;
        uint64_t t0 = bench_ns(), t1;
        if (op == LOCAL) {
            update_title(w, id, title);
            t1 = bench_ns();
        } else if (op == LOCAL_INSERT) {
            insert_new(w, title);
            t1 = bench_ns();
        } else if (op == INSERT_CONFIRM) {
            o = opt_insert(w, title, &id);
            t1 = bench_ns();
            sync_confirm_insert(w, id, title, o);
        } else {
            o = opt_write(w, id, title);
            t1 = bench_ns();
            if (op == CONFIRM)
                sync_confirm(w, id, title, o);
            else if (ldb_optimistic_reject(o, "bench") != LDB_OK)
                bench_die_db(NULL, "ldb_optimistic_reject");
        }
        uint64_t t2 = bench_ns();
        if (i >= warm) {
            total[i - warm] = (double)(t2 - t0) / 1000.0;
            write[i - warm] = (double)(t1 - t0) / 1000.0;
        }
        if (o) {
            int want = op == REJECT ? LDB_OPTIMISTIC_REJECTED : LDB_OPTIMISTIC_CONFIRMED;
            if (ldb_optimistic_state(o) != want) {
                const char *why = ldb_optimistic_error(o);
                fprintf(stderr, "bench_optimistic: issue %lld: state %d, not %d (%s)\n",
                        (long long)id, ldb_optimistic_state(o), want, why ? why : "-");
                exit(1);
            }
            ldb_optimistic_free(o);
        }
    }
    struct stats st = { bench_quantile(total, (size_t)reps, 0.5),
                        bench_quantile(total, (size_t)reps, 0.95),
                        (double)(bench_changes_seen - changes0) / reps,
                        bench_quantile(write, (size_t)reps, 0.5),
                        bench_quantile(write, (size_t)reps, 0.95) };
    free(total);
    if (st.changes == 0)
        bench_die_db(w->db, "the live query saw no change");
    return st;
}

static void print_stats(const char *prefix, const char *wl, const char *name, int n,
                        const struct stats *st, bool with_write)
{
    char line[160];
    snprintf(line, sizeof line, "%s%s.%s.%d.median", prefix, wl, name, n);
    bench_print(line, st->median, "us");
    snprintf(line, sizeof line, "%s%s.%s.%d.p95", prefix, wl, name, n);
    bench_print(line, st->p95, "us");
    snprintf(line, sizeof line, "%s%s.%s.%d.changes", prefix, wl, name, n);
    bench_print(line, st->changes, "changes");
    if (!with_write)
        return;
    snprintf(line, sizeof line, "%s%s.opt_write.%d.median", prefix, wl, n);
    bench_print(line, st->write_median, "us");
    snprintf(line, sizeof line, "%s%s.opt_write.%d.p95", prefix, wl, n);
    bench_print(line, st->write_p95, "us");
}

static void print_ratio(const char *wl, const char *name, int n, double x)
{
    char line[160];
    snprintf(line, sizeof line, "ratio.%s.%s.%d", wl, name, n);
    bench_print(line, x, "x");
}

/* ---- the workloads ------------------------------------------------------------------- */

struct workload {
    const char *name, *sql, *local_case;
    bool list;
    struct stats local, local_insert; /* local_insert: list only */
};

static ldb_live *open_query(struct world *w, const struct workload *wl)
{
    ldb_live *q;
    if (ldb_live_open(w->db, wl->sql, bench_count_changes, NULL, &q) != LDB_OK)
        bench_die_db(w->db, wl->sql);
    if (ldb_live_status(q, NULL) != LDB_STATUS_READY)
        bench_die_db(w->db, "live query not READY");
    return q;
}

static void close_query(ldb_live *q)
{
    const char *msg = NULL;
    if (ldb_live_error(q, &msg) != LDB_OK) {
        fprintf(stderr, "bench_optimistic: live query failed: %s\n", msg ? msg : "?");
        exit(1);
    }
    ldb_live_close(q);
}

static void optimistic_cases(struct world *w, const struct workload *wl, int reps,
                             double *anchor)
{
    ldb_live *q = open_query(w, wl);
    int64_t rows = ldb_live_count(q);
    struct stats confirm = time_ops(w, CONFIRM, wl->list, reps);
    struct stats reject = time_ops(w, REJECT, wl->list, reps);
    ldb_optimistic *held[PENDING];
    char title[32];
    for (int i = 0; i < PENDING; i++) {
        snprintf(title, sizeof title, "P%d", i);
        held[i] = opt_write(w, w->pending_key[i], title);
    }
    struct stats confirm_p = time_ops(w, CONFIRM, wl->list, reps);
    struct stats reject_p = time_ops(w, REJECT, wl->list, reps);
    for (int i = 0; i < PENDING; i++) {
        if (ldb_optimistic_state(held[i]) != LDB_OPTIMISTIC_PENDING)
            bench_die_db(w->db, "a pending transaction resolved by itself");
        if (ldb_optimistic_reject(held[i], "bench cleanup") != LDB_OK)
            bench_die_db(NULL, "ldb_optimistic_reject");
        ldb_optimistic_free(held[i]);
    }
    if (ldb_live_count(q) != rows)
        bench_die_db(w->db, "the live result changed size");
    close_query(q);

    int n = w->n;
    print_stats("", wl->name, "opt_confirm", n, &confirm, true);
    print_stats("", wl->name, "opt_reject", n, &reject, false);
    print_stats("", wl->name, "opt_confirm_pending100", n, &confirm_p, false);
    print_stats("", wl->name, "opt_reject_pending100", n, &reject_p, false);
    print_ratio(wl->name, "opt_confirm_vs_local", n, confirm.median / wl->local.median);
    print_ratio(wl->name, "opt_reject_vs_local", n, reject.median / wl->local.median);
    print_ratio(wl->name, "pending100_confirm", n, confirm_p.median / confirm.median);
    print_ratio(wl->name, "pending100_reject", n, reject_p.median / reject.median);
    if (wl->list) {
        ldb_live *lq = open_query(w, wl);
        struct stats ins = time_ops(w, INSERT_CONFIRM, true, reps);
        close_query(lq);
        print_stats("", wl->name, "opt_insert", n, &ins, true);
        print_ratio(wl->name, "opt_insert_vs_local", n, ins.median / wl->local_insert.median);
        if (*anchor == 0)
            *anchor = ins.median;
    }
}

static void run_size(int n, int reps, bool want[2], double *anchor)
{
    struct workload wls[2] = {
        { .name = "list", .sql = list_sql, .local_case = "update_in", .list = true },
        { .name = "join", .sql = join_sql, .local_case = "issue_title", .list = false },
    };
    struct world w;
    make_world(&w, n, NULL);
    ldb_live *list = open_query(&w, &wls[0]);
    pick_keys(&w, list);
    close_query(list);
    for (int i = 0; i < 2; i++) {
        if (!want[i])
            continue;
        ldb_live *q = open_query(&w, &wls[i]);
        wls[i].local = time_ops(&w, LOCAL, wls[i].list, reps);
        if (wls[i].list) {
            wls[i].local_insert = time_ops(&w, LOCAL_INSERT, true, reps);
            char sql[80]; /* the window's rows are the generated ones again */
            snprintf(sql, sizeof sql, "DELETE FROM issues WHERE id > %d", n);
            run(w.db, sql);
        }
        close_query(q);
        print_stats("local.", wls[i].name, wls[i].local_case, n, &wls[i].local, false);
        if (wls[i].list)
            print_stats("local.", wls[i].name, "insert", n, &wls[i].local_insert, false);
    }
    attach_source(&w);
    for (int i = 0; i < 2; i++)
        if (want[i])
            optimistic_cases(&w, &wls[i], reps, anchor);
    free_world(&w);
}

/* The list workload's optimistic cases in memory and durable. */
static void durable_compare(int reps)
{
    enum { N = 10000 };
    char dir[] = "/tmp/ldb_bench_opt_XXXXXX", path[64];
    if (!mkdtemp(dir))
        bench_die_db(NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/b.ldb", dir);
    struct workload wl = { .name = "list", .sql = list_sql, .list = true };
    struct stats st[2][2];
    for (int d = 0; d < 2; d++) {
        struct world w;
        make_world(&w, N, d ? path : NULL);
        ldb_live *q = open_query(&w, &wl);
        pick_keys(&w, q);
        attach_source(&w);
        st[d][0] = time_ops(&w, CONFIRM, true, reps);
        st[d][1] = time_ops(&w, REJECT, true, reps);
        close_query(q);
        free_world(&w);
        print_stats(d ? "durable." : "memory.", "list", "opt_confirm", N, &st[d][0], true);
        print_stats(d ? "durable." : "memory.", "list", "opt_reject", N, &st[d][1], false);
    }
    bench_print("ratio.durable_vs_memory.list.opt_write.10000",
                st[1][0].write_median / st[0][0].write_median, "x");
    bench_print("ratio.durable_vs_memory.list.opt_confirm.10000", st[1][0].median / st[0][0].median,
                "x");
    bench_print("ratio.durable_vs_memory.list.opt_reject.10000", st[1][1].median / st[0][1].median,
                "x");
    char files[2][80];
    snprintf(files[0], sizeof files[0], "%s", path);
    snprintf(files[1], sizeof files[1], "%s-wal", path);
    for (int i = 0; i < 2; i++)
        unlink(files[i]);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    printf("# bench_optimistic: list and join workloads, seed %u\n", SEED);
    bool want[2] = { bench_selected(argc, argv, "list"), bench_selected(argc, argv, "join") };
    int sizes[] = { 10000, 1000000 };
    int nsizes = bench_quick ? 1 : 2, reps = bench_quick ? 300 : 2000;
    double anchor = 0;
    for (int s = 0; s < nsizes; s++)
        run_size(sizes[s], reps, want, &anchor);
    if (anchor > 0)
        bench_print("opt_vs_tanstack_anchor", anchor / TANSTACK_US, "x");
    if (bench_selected(argc, argv, "durable"))
        durable_compare(reps);
    return 0;
}
