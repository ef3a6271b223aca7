/*
 * bench_include.c - issue 12's benchmark of nested results: 1,000 users,
 * each with its issues ordered by created, as an ARRAY or as a child live
 * result (LIVE), kept live while single writes change the issues and the
 * users.
 *
 * Four passes over one database per size: the ARRAY include query, the
 * LIVE include query (its callback follows every child handle), the flat
 * join of the same users and issues (the baseline: what a program keeps
 * live today and groups itself), and no live query at all (what the write
 * costs the engine alone). Each timed operation is one autocommit write;
 * the live query's callback has run by the time it returns. The write
 * kinds run as separate loops, so one kind's freed memory is not billed
 * to the next. Lines:
 *     bench <pass>.<n>.open_ms | .open_first_ms | .hydrate_rows_per_s | .result_rows
 *     bench <pass>.<n>.bytes_per_cell | .heap_bytes_per_cell
 *     bench <pass>.<kind>.<n>.median | .p95  <us>     (pass: include, live, flat, base)
 *     bench <pass>.<kind>.<n>.changes <changes per write>
 *     bench ratio.include_flat.<kind>.<n> <x>        include median / flat median
 *     bench ratio.live_flat.<kind>.<n> <x>           live median / flat median
 *     bench ratio.anchor.update_title.<n> <x>        include median / TanStack DB's
 *     bench ratio.anchor.live_update_title.<n> <x>   live median / TanStack DB's
 *     bench growth.<pass>.<kind> <x>                 median at the largest size / at 10k
 * open_ms is the median of 5 opens (1 at 1M), hydrate_rows_per_s the
 * users and issues it reads per second. bytes_per_cell is the query's
 * retained_bytes (ldb_live_stats) over the 1,000 parent rows (the
 * include's active cells; the flat query's too, so the two compare);
 * heap_bytes_per_cell is the growth of the allocator's in-use bytes
 * (glibc mallinfo2) across the last open, over the same 1,000.
 * Anchor (issue 12): TanStack DB 0.15.2 takes 131 us (10k) and 318 us
 * (100k) per child title update with an array include, 193 / 227 us with
 * a Collection-valued one; the target is <= 3 us at every size.
 */
#include "bench_util.h"

#include "livedb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 20261212u
#define USERS 1000
#define CREATED0 1700000000000LL

static const char include_sql[] =
    "SELECT u.id, u.name, ARRAY(SELECT i.id, i.title FROM issues i WHERE i.assignee = u.id "
    "ORDER BY i.created) AS issues FROM users u";
static const char live_sql[] =
    "SELECT u.id, u.name, LIVE(SELECT i.id, i.title FROM issues i WHERE i.assignee = u.id "
    "ORDER BY i.created) AS issues FROM users u";
static const char flat_sql[] =
    "SELECT u.id, u.name, i.id, i.title FROM users u JOIN issues i ON i.assignee = u.id";

enum pass { INCLUDE, LIVE, FLAT, BASE, NPASSES };
static const char *const pass_names[NPASSES] = { "include", "live", "flat", "base" };
static const char *const pass_sql[NPASSES] = { include_sql, live_sql, flat_sql, NULL };

enum kind { TITLE, MOVE, INSERT, DELETE, RENAME, NKINDS };
static const char *const kind_names[NKINDS] = { "update_title", "move", "insert", "delete",
                                                "rename_user" };

/* TanStack DB 0.15.2, one child's title (issue 12): array include and
 * Collection-valued include. */
static const struct {
    int n;
    double us, live_us;
} anchors[] = { { 10000, 131, 193 }, { 100000, 318, 227 } };

static uint64_t rng_state;

static uint64_t next_rand(void)
{
    return bench_rand(&rng_state);
}

static void run(ldb *db, const char *sql)
{
    if (ldb_exec(db, sql, NULL, NULL) != LDB_OK)
        bench_die_db(db, sql);
}

static ldb_stmt *prepare(ldb *db, const char *sql)
{
    ldb_stmt *s = NULL;
    if (ldb_prepare(db, sql, -1, &s, NULL) != LDB_OK)
        bench_die_db(db, sql);
    return s;
}

static void step_done(ldb *db, ldb_stmt *s)
{
    if (ldb_step(s) != LDB_DONE)
        bench_die_db(db, "step");
    ldb_reset(s);
}

/* ---- data: 1,000 users, n issues on random users, created a permutation ---- */

struct world {
    ldb *db;
    int n;
    int64_t next_id;  /* ids above n are the inserted children */
    int *assignee;    /* assignee[id] for the n original issues */
};

static void load_users(ldb *db)
{
    ldb_stmt *s = prepare(db, "INSERT INTO users VALUES (?, ?)");
    char name[32];
    for (int i = 1; i <= USERS; i++) {
        snprintf(name, sizeof name, "User %d", i);
        ldb_bind_int64(s, 1, i);
        ldb_bind_text(s, 2, name, -1);
        step_done(db, s);
    }
    ldb_finalize(s);
}

static void load_issues(struct world *w)
{
    int n = w->n, *perm = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_rand() % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    ldb_stmt *s = prepare(w->db, "INSERT INTO issues VALUES (?, ?, 'open', ?, ?)");
    char title[32];
    for (int i = 1; i <= n; i++) {
        w->assignee[i] = 1 + (int)(next_rand() % USERS);
        snprintf(title, sizeof title, "Issue %d", i);
        ldb_bind_int64(s, 1, i);
        ldb_bind_text(s, 2, title, -1);
        ldb_bind_int64(s, 3, CREATED0 + (int64_t)perm[i - 1] * 60000);
        ldb_bind_int64(s, 4, w->assignee[i]);
        step_done(w->db, s);
    }
    ldb_finalize(s);
    free(perm);
}

static struct world make_world(int n)
{
    struct world w = { NULL, n, n + 1, calloc((size_t)n + 1, sizeof(int)) };
    if (ldb_open(NULL, &w.db) != LDB_OK)
        bench_die_db(NULL, "open");
    run(w.db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
    run(w.db, "CREATE TABLE issues(id INTEGER PRIMARY KEY, title TEXT, status TEXT, "
              "created INTEGER, assignee INTEGER)");
    run(w.db, "CREATE INDEX issues_assignee ON issues(assignee)");
    rng_state = SEED;
    run(w.db, "BEGIN");
    load_users(w.db);
    load_issues(&w);
    run(w.db, "COMMIT");
    return w;
}

/* ---- timing ------------------------------------------------------------------ */

struct stats {
    double median, p95, changes;
};

/* Times reps writes of one kind after reps/10 untimed ones; write(w, i)
 * binds and steps write i. */
static struct stats time_writes(struct world *w, int reps, ldb_stmt *s,
                                void (*write)(struct world *, ldb_stmt *, int))
{
    int warm = reps / 10;
    double *v = malloc(sizeof(double) * (size_t)reps);
    uint64_t changes0 = 0;
    for (int i = 0; i < warm + reps; i++) {
        if (i == warm)
            changes0 = bench_changes_seen;
        uint64_t t0 = bench_ns();
        write(w, s, i);
        if (i >= warm)
            v[i - warm] = (double)(bench_ns() - t0) / 1000.0;
    }
    struct stats st = { bench_quantile(v, (size_t)reps, 0.5),
                        bench_quantile(v, (size_t)reps, 0.95),
                        (double)(bench_changes_seen - changes0) / reps };
    free(v);
    return st;
}

static int64_t random_issue(struct world *w)
{
    return 1 + (int64_t)(next_rand() % (uint64_t)w->n);
}

static void write_title(struct world *w, ldb_stmt *s, int i)
{
    char title[32];
    snprintf(title, sizeof title, "T%d", i);
    ldb_bind_text(s, 1, title, -1);
    ldb_bind_int64(s, 2, random_issue(w));
    step_done(w->db, s);
}

/* The issue goes to a user other than its own. */
static void write_move(struct world *w, ldb_stmt *s, int i)
{
    int64_t id = random_issue(w);
    int to = 1 + (int)((w->assignee[id] + next_rand() % (USERS - 1)) % USERS);
    w->assignee[id] = to;
    ldb_bind_int64(s, 1, to);
    ldb_bind_int64(s, 2, id);
    step_done(w->db, s);
}

/* A new issue on a random user, at a random place in its array. */
static void write_insert(struct world *w, ldb_stmt *s, int i)
{
    ldb_bind_int64(s, 1, w->next_id++);
    ldb_bind_int64(s, 2, CREATED0 + (int64_t)(next_rand() % (uint64_t)w->n) * 60000 + 1);
    ldb_bind_int64(s, 3, 1 + (int64_t)(next_rand() % USERS));
    step_done(w->db, s);
}

/* Deletes the children the insert loop added, oldest first, so every
 * size keeps its issues per user. */
static void write_delete(struct world *w, ldb_stmt *s, int i)
{
    ldb_bind_int64(s, 1, w->n + 1 + i);
    step_done(w->db, s);
}

static void write_rename(struct world *w, ldb_stmt *s, int i)
{
    char name[32];
    snprintf(name, sizeof name, "N%d", i);
    ldb_bind_text(s, 1, name, -1);
    ldb_bind_int64(s, 2, 1 + (int64_t)(next_rand() % USERS));
    step_done(w->db, s);
}

static const struct {
    const char *sql;
    void (*write)(struct world *, ldb_stmt *, int);
} kinds[NKINDS] = {
    { "UPDATE issues SET title = ? WHERE id = ?", write_title },
    { "UPDATE issues SET assignee = ? WHERE id = ?", write_move },
    { "INSERT INTO issues VALUES (?, 'new', 'open', ?, ?)", write_insert },
    { "DELETE FROM issues WHERE id = ?", write_delete },
    { "UPDATE users SET name = ? WHERE id = ?", write_rename },
};

/* ---- one pass: open the query (or none), time every kind ------------------------ */

/* bench_print with the figure's name formatted from fmt. */
static void figure(double value, const char *unit, const char *fmt, ...)
{
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    bench_print(name, value, unit);
}

/* Counts the changes of a query and of every child live result it shows
 * (each gets this callback as soon as a batch shows it). */
static void count_and_follow(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    bench_count_changes(ctx, q, c, n);
    for (size_t i = 0; i < n; i++)
        for (int j = 0; c[i].after && j < ldb_row_columns(c[i].after); j++)
            if (ldb_row_live(c[i].after, j))
                ldb_live_set_callback(ldb_row_live(c[i].after, j), count_and_follow, ctx);
}

/* Opens the pass's query opens times and keeps the last. The figure is
 * the median (one hydration is at the mercy of a busy machine); the
 * first, which also pays for growing the process's heap, is shown too. */
static ldb_live *open_query(struct world *w, enum pass p, int opens)
{
    const char *name = pass_names[p];
    double ms[5];
    size_t heap0 = 0;
    ldb_live *q = NULL;
    for (int i = 0; i < opens; i++) {
        ldb_live_close(q);
        heap0 = bench_heap_bytes();
        uint64_t t0 = bench_ns();
        if (ldb_live_open(w->db, pass_sql[p], count_and_follow, NULL, &q) != LDB_OK)
            bench_die_db(w->db, name);
        ms[i] = (double)(bench_ns() - t0) / 1e6;
    }
    double heap = (double)bench_heap_bytes() - (double)heap0;
    double med = bench_quantile(ms, opens, 0.5);
    ldb_live_stats st;
    ldb_live_stats_get(q, &st);
    figure(med, "ms", "%s.%d.open_ms", name, w->n);
    figure(ms[0], "ms", "%s.%d.open_first_ms", name, w->n);
    figure((double)(USERS + w->n) / med * 1e3, "rows/s", "%s.%d.hydrate_rows_per_s", name, w->n);
    figure((double)st.result_rows, "rows", "%s.%d.result_rows", name, w->n);
    figure((double)st.retained_bytes / USERS, "bytes", "%s.%d.bytes_per_cell", name, w->n);
    figure(heap / USERS, "bytes", "%s.%d.heap_bytes_per_cell", name, w->n);
    return q;
}

static void run_pass(struct world *w, enum pass p, int reps, double med[NKINDS])
{
    ldb_live *q = p == BASE ? NULL : open_query(w, p, w->n < 1000000 ? 5 : 1);
    rng_state = SEED ^ (uint64_t)(p + 1);
    for (int k = 0; k < NKINDS; k++) {
        ldb_stmt *s = prepare(w->db, kinds[k].sql);
        struct stats st = time_writes(w, reps, s, kinds[k].write);
        ldb_finalize(s);
        const char *pn = pass_names[p], *kn = kind_names[k];
        figure(st.median, "us", "%s.%s.%d.median", pn, kn, w->n);
        figure(st.p95, "us", "%s.%s.%d.p95", pn, kn, w->n);
        if (q)
            figure(st.changes, "changes", "%s.%s.%d.changes", pn, kn, w->n);
        med[k] = st.median;
    }
    w->next_id = w->n + 1; /* the delete loop removed every inserted child */
    if (q && ldb_live_error(q, NULL) != LDB_OK)
        bench_die_db(w->db, "live query failed");
    ldb_live_close(q);
}

static void run_size(int n, int reps, double med[NPASSES][NKINDS])
{
    printf("# %d users x %d issues, %d writes per kind\n", USERS, n, reps);
    struct world w = make_world(n);
    for (int p = 0; p < NPASSES; p++)
        run_pass(&w, (enum pass)p, reps, med[p]);
    for (int k = 0; k < NKINDS; k++)
    {
        figure(med[INCLUDE][k] / med[FLAT][k], "x", "ratio.include_flat.%s.%d", kind_names[k],
               n);
        figure(med[LIVE][k] / med[FLAT][k], "x", "ratio.live_flat.%s.%d", kind_names[k], n);
    }
    for (size_t a = 0; a < sizeof anchors / sizeof anchors[0]; a++) {
        if (anchors[a].n != n)
            continue;
        figure(anchors[a].us, "us", "anchor.update_title.%d", n);
        figure(med[INCLUDE][TITLE] / anchors[a].us, "x", "ratio.anchor.update_title.%d", n);
        figure(anchors[a].live_us, "us", "anchor.live_update_title.%d", n);
        figure(med[LIVE][TITLE] / anchors[a].live_us, "x", "ratio.anchor.live_update_title.%d",
               n);
    }
    ldb_close(w.db);
    free(w.assignee);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    static const int sizes[] = { 10000, 100000, 1000000 };
    int nsizes = bench_quick ? 1 : 3, reps = bench_quick ? 300 : 2000;
    static double med[3][NPASSES][NKINDS];
    printf("# bench_include: nested ARRAY and LIVE includes vs flat join, seed %u\n", SEED);
    for (int s = 0; s < nsizes; s++)
        run_size(sizes[s], reps, med[s]);
    for (int p = 0; p < NPASSES && nsizes > 1; p++)
        for (int k = 0; k < NKINDS; k++)
            figure(med[nsizes - 1][p][k] / med[0][p][k], "x", "growth.%s.%s", pass_names[p],
                   kind_names[k]);
    return 0;
}
