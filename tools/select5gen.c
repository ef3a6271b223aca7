/*
 * select5gen.c - build/select5gen, writes a select5-style sqllogictest
 * script with SQLite's answers (tools/slt_select5.c):
 *
 *   select5gen [--seed N] [--queries N] [--max-tables N] [-o file.test]
 *
 * Without --seed a seed is drawn from the clock; it is printed on stderr
 * with the statistics and written into the script's first comment, and
 * the same options with it write the same script. Default: 200 queries
 * over up to 64 tables, to standard output. Run the script with
 * build/slt (livedb) or build/slt --engine sqlite.
 */
#include "slt.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int usage(void)
{
    fputs("usage: select5gen [--seed N] [--queries N] [--max-tables N] [-o file.test]\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    slt_gen_options o = { .seed = (uint64_t)ts.tv_sec * 1000000007u + (uint64_t)ts.tv_nsec,
                          .nqueries = 200, .max_tables = 64 };
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--seed") == 0)
            o.seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--queries") == 0)
            o.nqueries = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max-tables") == 0)
            o.max_tables = atoi(argv[++i]);
        else if (strcmp(argv[i], "-o") == 0)
            path = argv[++i];
        else
            return usage();
    }
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        perror(path);
        return 2;
    }
    slt_gen_stats st;
    slt_msg msg = { "", 0 };
    int rc = slt_gen_select5(f, &o, &st, &msg);
    if (path && fclose(f) != 0 && rc == 0) {
        snprintf(msg.text, sizeof msg.text, "cannot write %s", path);
        rc = -1;
    }
    fprintf(stderr, "select5gen: seed %" PRIu64 ", %d queries (%d empty, %d cross products, "
                    "up to %d tables, %ld redrawn, %ld of them slow in SQLite)\n",
            o.seed, st.queries, st.empty, st.products, st.max_tables, st.redrawn,
            st.sqlite_slow);
    if (rc != 0) {
        fprintf(stderr, "select5gen: %s\n", msg.text);
        return 1;
    }
    fprintf(stderr, "select5gen: SQLite took %.2f s; its slowest query: line %d, %d tables, "
                    "%.1f ms\n", st.total, st.slowest_line, st.slowest_tables, st.slowest * 1e3);
    return 0;
}
