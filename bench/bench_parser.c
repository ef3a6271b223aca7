/*
 * bench_parser.c - SQL front-end speed: statements parsed per second and
 * bytes per second for three mixes, and the canonical printer's speed:
 *   - select: corpus-style queries (joins, subqueries, CASE, IN, BETWEEN);
 *   - insert: INSERT ... VALUES with 10 rows of 7 values;
 *   - script: a 1000-statement script split and parsed with sql_parse_next.
 * Each figure is the best of 5 rounds, to keep scheduler noise out.
 */
#include "bench_util.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "livedb.h"
#include "sql/parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const selects[] = {
    "SELECT pk, col0 FROM tab0 WHERE (col3 > 34 AND col0 < 58 OR col4 IN "
    "(3, 5, 7) AND col1 BETWEEN 2.5 AND 9.5) ORDER BY 1 DESC",
    "SELECT DISTINCT - 32 * + col2 + - CAST ( NULL AS INTEGER ) AS col1 FROM "
    "tab1 AS cor0 CROSS JOIN tab2 WHERE NOT NULL IS NOT NULL",
    "SELECT CASE WHEN a < b - 3 THEN 111 WHEN a <= b THEN 222 ELSE 333 END, "
    "(SELECT count(*) FROM t1 AS x WHERE x.b < t1.b) FROM t1 WHERE EXISTS "
    "(SELECT 1 FROM t1 AS x WHERE x.b < t1.b)",
    "SELECT a.x, b.y, sum(c.z) FROM a JOIN b ON a.id = b.a_id LEFT JOIN c "
    "USING (id) WHERE a.k = ? AND b.s LIKE 'x%' GROUP BY a.x, b.y HAVING "
    "count(*) > 1 ORDER BY 3 DESC LIMIT 50",
};

static void must(int rc, const sql_error *err)
{
    if (rc != LDB_OK) {
        fprintf(stderr, "parse failed: %s\n", err->msg);
        exit(1);
    }
}

/* Parses every statement of texts, rounds times; returns the best
 * seconds per round. */
static double time_parse(const char *const *texts, size_t n, long rounds)
{
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_ns();
        for (long k = 0; k < rounds; k++) {
            for (size_t i = 0; i < n; i++) {
                sql_ast *ast;
                sql_error err;
                must(sql_parse(texts[i], strlen(texts[i]), &ast, &err), &err);
                sql_ast_free(ast);
            }
        }
        double s = (double)(bench_ns() - t0) * 1e-9;
        if (s < best)
            best = s;
    }
    return best;
}

static void report(const char *name, double secs, long stmts, size_t bytes)
{
    char label[64];
    snprintf(label, sizeof label, "parse_%s_stmts_per_s", name);
    bench_print(label, (double)stmts / secs, "stmt/s");
    snprintf(label, sizeof label, "parse_%s_mb_per_s", name);
    bench_print(label, (double)bytes / secs / 1e6, "MB/s");
}

static void bench_selects(long rounds)
{
    size_t n = sizeof selects / sizeof selects[0], bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(selects[i]);
    double s = time_parse(selects, n, rounds);
    report("select", s, rounds * (long)n, bytes * (size_t)rounds);
}

static char *make_insert(void)
{
    strbuf sb = STRBUF_INIT;
    sb_puts(&sb, "INSERT INTO tab0 VALUES ");
    for (int r = 0; r < 10; r++)
        sb_printf(&sb, "%s(%d, 6, 10.76, 'ukzkf', 3, 62.36, 'hqyxa')",
                  r ? ", " : "", r);
    return sb_take(&sb, NULL);
}

static void bench_inserts(long rounds)
{
    char *insert = make_insert();
    const char *texts[1] = { insert };
    double s = time_parse(texts, 1, rounds);
    report("insert", s, rounds, strlen(insert) * (size_t)rounds);
    mem_free(insert);
}

static void bench_script(long rounds)
{
    strbuf sb = STRBUF_INIT;
    for (int i = 0; i < 1000; i++)
        sb_printf(&sb, "%s;\n", selects[i % 4]);
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_ns();
        for (long k = 0; k < rounds; k++) {
            sql_cursor cur;
            sql_cursor_init(&cur, sb.p, sb.len);
            sql_ast *ast;
            sql_error err;
            for (;;) {
                must(sql_parse_next(&cur, &ast, &err), &err);
                if (!ast)
                    break;
                sql_ast_free(ast);
            }
        }
        double s = (double)(bench_ns() - t0) * 1e-9;
        if (s < best)
            best = s;
    }
    report("script", best, rounds * 1000, sb.len * (size_t)rounds);
    sb_free(&sb);
}

static void bench_print_sql(long rounds)
{
    size_t n = sizeof selects / sizeof selects[0];
    sql_ast *asts[sizeof selects / sizeof selects[0]];
    for (size_t i = 0; i < n; i++) {
        sql_error err;
        must(sql_parse(selects[i], strlen(selects[i]), &asts[i], &err), &err);
    }
    strbuf sb = STRBUF_INIT;
    uint64_t t0 = bench_ns();
    for (long k = 0; k < rounds; k++) {
        for (size_t i = 0; i < n; i++) {
            sb_truncate(&sb, 0);
            ast_stmt_to_sql(&sb, asts[i]->stmt, 0);
        }
    }
    double s = (double)(bench_ns() - t0) * 1e-9;
    bench_print("print_select_stmts_per_s", (double)rounds * (double)n / s,
                "stmt/s");
    sb_free(&sb);
    for (size_t i = 0; i < n; i++)
        sql_ast_free(asts[i]);
}

int main(int argc, char **argv)
{
    int rc = bench_init(argc, argv);
    if (rc)
        return rc;
    long rounds = bench_quick ? 2000 : 50000;
    if (bench_selected(argc, argv, "select"))
        bench_selects(rounds);
    if (bench_selected(argc, argv, "insert"))
        bench_inserts(rounds);
    if (bench_selected(argc, argv, "script"))
        bench_script(rounds / 100);
    if (bench_selected(argc, argv, "print"))
        bench_print_sql(rounds);
    return 0;
}
