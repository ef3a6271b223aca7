/*
 * test_slt_corpus.c - runs SQLite's sqllogictest corpus on livedb through
 * the runner (tools/slt_*.c) and requires that no record fail. Records
 * livedb rejects as unsupported are skipped, and the reasons are printed
 * with their counts; records for other engines (skipif/onlyif) are
 * skipped as every runner does. The few records livedb fails on purpose
 * (tools/slt_known.c) are known deviations: printed with their reason and
 * counted apart; one that passes, or is not found, is a failure.
 *
 * One case per part of the corpus; each prints a line per file,
 *   # <file>: N passed, N failed, N skipped (N unsupported), N known deviations
 * and the first failures of each file. The corpus lives outside the
 * repository, in ../shared/corpus/sqllogictest (LDB_SLT_CORPUS overrides
 * the path); without it every case prints a SKIPPED line and passes,
 * unless LDB_REQUIRE_CORPUS=1 (set by .ci/run), which makes a missing
 * corpus fail every case. Each part runs in
 * a child process, so a crash is reported as such. Under sanitizers
 * only the evidence files and select1 run (LDB_SLT_FULL=1 runs all).
 */
#include "test.h"

#include "slt.h"
#include "slt_child.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MAX_FILES 256

static const char *corpus_dir(void)
{
    const char *env = getenv("LDB_SLT_CORPUS");
    return env && *env ? env : "../shared/corpus/sqllogictest";
}

/* CI sets LDB_REQUIRE_CORPUS=1: there a missing corpus is a failure, not
 * a run of zero records that passes. */
static int corpus_required(void)
{
    const char *env = getenv("LDB_REQUIRE_CORPUS");
    return env && *env && strcmp(env, "0") != 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the .test files in dir (and its subfolders, if recurse) whose
 * names start with prefix to files. */
static void find_tests(const char *dir, const char *prefix, int recurse, char **files,
                       int *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && *n < MAX_FILES) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        size_t len = strlen(e->d_name);
        if (S_ISDIR(st.st_mode) && recurse)
            find_tests(path, prefix, recurse, files, n);
        else if (len > 5 && strcmp(e->d_name + len - 5, ".test") == 0 &&
                 strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            files[(*n)++] = strdup(path);
    }
    closedir(d);
}

/* Runs files on livedb, printing a line per file (with the first
 * failures) and the unsupported reasons; returns the totals. A file that
 * cannot be read counts as a failed record. */
static slt_counts run_files(const char *root, char **files, int n)
{
    slt_options o = { .engine = &slt_engine_livedb, .max_reports = 3, .out = stdout,
                      .known = slt_livedb_deviations, .nknown = slt_livedb_ndeviations };
    slt_counts total = { 0 };
    for (int i = 0; i < n; i++) {
        slt_counts c = { 0 };
        if (slt_run_file(files[i], &o, &c) < 0)
            c.failed++;
        printf("#    %s: %ld passed, %ld failed, %ld skipped (%ld unsupported), "
               "%ld known deviations\n",
               files[i] + strlen(root) + 1, c.passed, c.failed,
               c.skipped_cond + c.skipped_unsupported, c.skipped_unsupported, c.deviations);
        fflush(stdout);
        total.passed += c.passed;
        total.failed += c.failed;
        total.skipped_unsupported += c.skipped_unsupported;
        total.deviations += c.deviations;
    }
    if (o.nreasons) {
        printf("#    unsupported, by reason:\n");
        slt_print_reasons(&o, stdout);
    }
    fflush(stdout);
    slt_options_free(&o);
    return total;
}

struct part {
    const char *root;
    char **files;
    int n;
};

static slt_counts run_part_child(void *ctx)
{
    const struct part *p = ctx;
    return run_files(p->root, p->files, p->n);
}

/* Runs the files of one part (a folder, or the files named prefix* in
 * the corpus folder itself) in a child process, so that a crash still
 * leaves the other parts' counts, and checks that no record failed. */
static void run_part(const char *sub, const char *prefix, int under_sanitizers)
{
    const char *root = corpus_dir();
    struct stat st;
    if (stat(root, &st) != 0) {
        CHECKF(!corpus_required(), "corpus not found at %s (LDB_REQUIRE_CORPUS is set)", root);
        printf("#    SKIPPED: corpus not found at %s; NOTHING WAS TESTED "
               "(LDB_REQUIRE_CORPUS=1 makes this a failure)\n", root);
        return;
    }
    if (SANITIZED && !under_sanitizers && !getenv("LDB_SLT_FULL")) {
        printf("#    skipped under sanitizers (LDB_SLT_FULL=1 runs it)\n");
        return;
    }
    char dir[1024], *files[MAX_FILES];
    int n = 0;
    snprintf(dir, sizeof dir, "%s%s%s", root, *sub ? "/" : "", sub);
    find_tests(dir, prefix, *sub != 0, files, &n);
    qsort(files, (size_t)n, sizeof files[0], cmp_names);
    CHECKF(n > 0, "no .test files in %s", dir);
    struct part p = { root, files, n };
    slt_counts total;
    int rc = slt_run_in_child(run_part_child, &p, &total);
    for (int i = 0; i < n; i++)
        free(files[i]);
    CHECKF(rc <= 0, "livedb crashed (signal %d) in the file after the last listed", rc);
    CHECKF(rc == 0, "the runner failed in %s", dir);
    CHECKF(total.failed == 0, "%ld records failed, %ld passed, %ld unsupported", total.failed,
           total.passed, total.skipped_unsupported);
    if (total.deviations)
        printf("#    %ld known deviations (tools/slt_known.c), not counted as failures\n",
               total.deviations);
}

static void evidence(void) { run_part("evidence", "", 1); }
static void select1(void) { run_part("", "select1", 1); }
static void select2(void) { run_part("", "select2", 0); }
static void select3(void) { run_part("", "select3", 0); }
static void select4(void) { run_part("", "select4", 0); }
static void index_between(void) { run_part("index/between", "", 0); }
static void index_delete(void) { run_part("index/delete", "", 0); }
static void index_orderby(void) { run_part("index/orderby", "", 0); }
static void index_view(void) { run_part("index/view", "", 0); }
static void random_aggregates(void) { run_part("random/aggregates", "", 0); }
static void random_expr(void) { run_part("random/expr", "", 0); }
static void random_groupby(void) { run_part("random/groupby", "", 0); }
static void random_select(void) { run_part("random/select", "", 0); }

TEST_MAIN(T(evidence), T(select1), T(select2), T(select3), T(select4), T(index_between), T(index_delete),
          T(index_orderby), T(index_view), T(random_aggregates), T(random_expr),
          T(random_groupby), T(random_select))
