/*
 * slt.c - build/slt, the sqllogictest runner's command line:
 *
 *   slt [--engine livedb|sqlite] [-v] [--failures N] [--limit S] file.test...
 *
 * Prints "<file>: N passed, N failed, N skipped" per file, then a total
 * line; exits 1 if any record failed, 2 on a usage or file error. On
 * livedb, the records of tools/slt_known.c are known deviations: each
 * prints "KNOWN file:line: reason" and is counted apart, not as failed
 * (but fails if it passes). -v adds
 * the reasons of unsupported records, most frequent first. --failures N
 * prints at most N failures per file in full (default 10; -1: all).
 * Each file's line ends with its slowest query's line and time; --limit S
 * fails every query that takes over S seconds (and stops it on livedb).
 */
#include "slt.h"

#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fputs("usage: slt [--engine livedb|sqlite] [-v] [--failures N] [--limit S] "
          "file.test...\n", stderr);
    return 2;
}

static void print_counts(const char *name, const slt_counts *c)
{
    printf("%s: %ld passed, %ld failed, %ld skipped", name, c->passed, c->failed,
           c->skipped_cond + c->skipped_unsupported);
    if (c->skipped_unsupported)
        printf(" (%ld unsupported)", c->skipped_unsupported);
    if (c->deviations)
        printf(", %ld known deviations", c->deviations);
    if (c->slowest_line)
        printf("; slowest query: line %d, %.1f ms", c->slowest_line, c->slowest * 1e3);
    printf("\n");
}

/* Parses the options; returns the index of the first file, or -1. */
static int parse_args(int argc, char **argv, slt_options *o)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            o->verbose = 1;
        } else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) {
            const char *e = argv[++i];
            if (strcmp(e, "livedb") == 0)
                o->engine = &slt_engine_livedb;
            else if (strcmp(e, "sqlite") == 0)
                o->engine = &slt_engine_sqlite;
            else
                return -1;
        } else if (strcmp(argv[i], "--failures") == 0 && i + 1 < argc) {
            o->max_reports = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            o->query_limit = atof(argv[++i]);
        } else {
            return -1;
        }
    }
    return i < argc ? i : -1;
}

int main(int argc, char **argv)
{
    slt_options o = { .engine = &slt_engine_livedb, .max_reports = 10, .out = stdout };
    int first = parse_args(argc, argv, &o);
    if (first < 0)
        return usage();
    if (o.engine == &slt_engine_livedb) {
        o.known = slt_livedb_deviations;
        o.nknown = slt_livedb_ndeviations;
    }
    if (o.max_reports < 0)
        o.max_reports = 1 << 30;
    slt_counts total = { 0 };
    const char *slowest_file = NULL;
    int bad_file = 0;
    for (int i = first; i < argc; i++) {
        slt_counts c = { 0 };
        if (slt_run_file(argv[i], &o, &c) < 0) {
            bad_file = 1;
            continue;
        }
        print_counts(argv[i], &c);
        fflush(stdout);
        total.passed += c.passed;
        total.failed += c.failed;
        total.skipped_cond += c.skipped_cond;
        total.skipped_unsupported += c.skipped_unsupported;
        total.deviations += c.deviations;
        if (c.slowest_line && (!slowest_file || c.slowest > total.slowest)) {
            total.slowest = c.slowest;
            total.slowest_line = c.slowest_line;
            slowest_file = argv[i];
        }
    }
    printf("skipped: %ld by skipif/onlyif, %ld unsupported by %s\n",
           total.skipped_cond, total.skipped_unsupported, o.engine->name);
    if (o.verbose && o.nreasons) {
        printf("unsupported, by reason:\n");
        slt_print_reasons(&o, stdout);
    }
    int line = total.slowest_line;
    total.slowest_line = 0; /* a line of one file: printed with its name */
    print_counts("total", &total);
    if (slowest_file)
        printf("slowest query: %s:%d, %.1f ms\n", slowest_file, line, total.slowest * 1e3);
    slt_options_free(&o);
    return bad_file ? 2 : total.failed ? 1 : 0;
}
