/*
 * test_slt_select5.c - issue 16: select5-style scripts, generated with
 * SQLite's answers (tools/slt_select5.c: 64 tables of 10 rows, comma
 * joins of 2 to 64 of them with equalities and filters in WHERE), run on
 * livedb through the sqllogictest runner. Every record must pass, no
 * query may take longer than QUERY_LIMIT (the runner stops it then), and
 * the whole file must run within FILE_LIMIT, measured around the child
 * process that runs it. Those bounds are the target of the planner's join
 * ordering: SQLite answers each of these queries in milliseconds.
 *
 * fixed_seed writes the same script every run; random_seed draws a seed
 * (printed; LDB_SEED replays it) and writes QUERIES queries from it. The
 * script is written to a temporary folder, removed when the case passes
 * and kept, with its path printed, when it fails; build/select5gen with
 * the printed options writes it again. LDB_LONG=1 runs LONG_QUERIES
 * queries per case; under sanitizers a few, with the bounds relaxed.
 */
#include "test.h"

#include "slt.h"
#include "slt_child.h"

#include <stdlib.h>

#define FIXED_SEED 20261202
#define QUERIES 2000
#define LONG_QUERIES 10000
#define SANITIZED_QUERIES 300
/* Seconds; under sanitizers SLOWDOWN times as many. */
#define QUERY_LIMIT 2.0
#define FILE_LIMIT 30.0
#define SLOWDOWN 10

static int long_run(void)
{
    const char *env = getenv("LDB_LONG");
    return env && *env && strcmp(env, "0") != 0;
}

struct job {
    const char *path;
    double query_limit;
};

static slt_counts run_script(void *ctx)
{
    const struct job *j = ctx;
    slt_options o = { .engine = &slt_engine_livedb, .max_reports = 10, .out = stdout,
                      .query_limit = j->query_limit };
    slt_counts c = { 0 };
    if (slt_run_file(j->path, &o, &c) < 0)
        c.failed++;
    slt_options_free(&o);
    return c;
}

/* Writes the script of seed, runs it on livedb and checks the bounds. */
static void run_seed(uint64_t seed)
{
    int nqueries = SANITIZED ? SANITIZED_QUERIES : long_run() ? LONG_QUERIES : QUERIES;
    double slow = SANITIZED ? SLOWDOWN : 1;
    struct job j = { NULL, QUERY_LIMIT * slow };
    double file_limit = FILE_LIMIT * slow * (nqueries > QUERIES ? nqueries / QUERIES : 1);

    char dir[] = "/tmp/ldb_select5_XXXXXX", path[64];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/select5.test", dir);
    FILE *f = fopen(path, "w");
    CHECKF(f, "cannot create %s", path);
    slt_gen_options go = { .seed = seed, .nqueries = nqueries, .max_tables = 64 };
    slt_gen_stats gs;
    slt_msg msg = { "", 0 };
    int rc = slt_gen_select5(f, &go, &gs, &msg);
    CHECK(fclose(f) == 0);
    CHECKF(rc == 0, "generating %s: %s", path, msg.text);
    printf("#    %s: select5gen --seed %llu --queries %d: %d empty, %d cross products, up to %d "
           "tables\n#    SQLite: queries in %.2f s; slowest: line %d (%d tables), %.1f ms\n",
           path, (unsigned long long)seed, nqueries, gs.empty, gs.products, gs.max_tables,
           gs.total, gs.slowest_line, gs.slowest_tables, gs.slowest * 1e3);

    j.path = path;
    slt_counts c;
    double start = slt_now();
    rc = slt_run_in_child(run_script, &j, &c);
    double took = slt_now() - start;
    CHECKF(rc <= 0, "livedb crashed (signal %d) on %s", rc, path);
    CHECKF(rc == 0, "the runner failed on %s", path);
    printf("#    livedb: %ld passed, %ld failed, the file in %.2f s; slowest query: line %d, "
           "%.1f ms\n",
           c.passed, c.failed, took, c.slowest_line, c.slowest * 1e3);
    CHECKF(c.failed == 0, "%ld of %ld records failed (script kept: %s)", c.failed,
           c.failed + c.passed, path);
    CHECKF(c.skipped_unsupported == 0, "%ld records unsupported (script kept: %s)",
           c.skipped_unsupported, path);
    CHECKF(c.passed == gs.records,
           "%ld records passed, not every one (script kept: %s)", c.passed, path);
    CHECKF(took <= file_limit, "the script took %.1f s, over %.0f s (script kept: %s)", took,
           file_limit, path);
    CHECK(remove(path) == 0 && remove(dir) == 0);
}

static void fixed_seed(void) { run_seed(FIXED_SEED); }
static void random_seed(void) { run_seed(test_seed()); }

TEST_MAIN(T(fixed_seed), T(random_seed))
