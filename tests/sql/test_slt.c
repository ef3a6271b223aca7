/*
 * test_slt.c - tests of the sqllogictest runner itself (tools/slt_*.c):
 * MD5 against RFC 1321's test suite, value rendering against SQLite's own
 * printf, record splitting, and whole scripts run on SQLite (whose results
 * are known) where every kind of record passes, every kind of mismatch is
 * caught, and "unsupported" records are skipped with their reasons.
 */
#include "test.h"

#include "slt.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

static const char *md5_of(const char *s)
{
    static char hex[33];
    slt_md5 m;
    slt_md5_init(&m);
    slt_md5_update(&m, s, strlen(s));
    slt_md5_hex(&m, hex);
    return hex;
}

/* RFC 1321, appendix A.5. */
static void md5_rfc_vectors(void)
{
    CHECK_STR(md5_of(""), "d41d8cd98f00b204e9800998ecf8427e");
    CHECK_STR(md5_of("a"), "0cc175b9c0f1b6a831c399e269772661");
    CHECK_STR(md5_of("abc"), "900150983cd24fb0d6963f7d28e17f72");
    CHECK_STR(md5_of("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
    CHECK_STR(md5_of("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
    CHECK_STR(md5_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
              "d174ab98d277d9f5a5611c2c9f419d9f");
    CHECK_STR(md5_of("1234567890123456789012345678901234567890"
                     "1234567890123456789012345678901234567890"),
              "57edf4a22be3c955ac49da2e2107b67a");
}

/* Feeding a message in random pieces gives the digest of the whole, for
 * lengths around the 56- and 64-byte padding boundaries. */
static void md5_chunked(void)
{
    rng r;
    rng_seed(&r, test_seed());
    unsigned char msg[300];
    for (int len = 0; len < (int)sizeof msg; len++) {
        for (int i = 0; i < len; i++)
            msg[i] = (unsigned char)rng_next(&r);
        char whole[33], pieces[33];
        slt_md5 m;
        slt_md5_init(&m);
        slt_md5_update(&m, msg, (size_t)len);
        slt_md5_hex(&m, whole);
        slt_md5_init(&m);
        for (int at = 0; at < len;) {
            int k = (int)rng_range(&r, 0, len - at);
            slt_md5_update(&m, msg + at, (size_t)k);
            at += k;
        }
        slt_md5_hex(&m, pieces);
        CHECKF(strcmp(whole, pieces) == 0, "length %d", len);
    }
}

static void check_real3(double v, const char *want)
{
    char got[400];
    slt_format_real3(v, got, sizeof got);
    CHECKF(strcmp(got, want) == 0, "%.17g: got %s, want %s", v, got, want);
}

/* The corpus's own huge values (16 significant digits, then zeros), ties
 * away from zero, and -0.0. */
static void real_format_fixed(void)
{
    check_real3(-9223372036854775808.0, "-9223372036854776000.000");
    check_real3(-18446744073709551616.0, "-18446744073709550000.000");
    check_real3(99999999999999999999.0, "100000000000000000000.000");
    check_real3(12345678901234.5, "12345678901234.500");
    check_real3(0.0625, "0.063");
    check_real3(-0.0625, "-0.063");
    check_real3(2.5, "2.500");
    check_real3(-0.0, "0.000");
    check_real3(1.0 / 3, "0.333");
    check_real3(INFINITY, "Inf");
    char got[64];
    slt_format_real15(1.0, got, sizeof got);
    CHECK_STR(got, "1.0");
    slt_format_real15(1e20, got, sizeof got);
    CHECK_STR(got, "1.0e+20");
    slt_format_real15(0.1, got, sizeof got);
    CHECK_STR(got, "0.1");
}

/* Whether v lies within SQLite's rounding fudge of a tie at 3 decimals:
 * its printf adds about 3e-16 * v before rounding, so that values which
 * merely print as ties round up, where exact rounding may go down. */
static int near_tie(double v)
{
    double x = fabs(v) * 1000, f = x - floor(x);
    return fabs(f - 0.5) <= x * 1e-15 + 1e-9;
}

/* Whether v is within long double noise of a tie at 15 significant
 * digits: SQLite computes those digits in long double arithmetic, whose
 * error reaches the 18th digit. */
static int near_tie15(double v)
{
    char d[64];
    snprintf(d, sizeof d, "%.30e", fabs(v));
    return strncmp(d + 16, "499", 3) == 0 || strncmp(d + 16, "500", 3) == 0;
}

static double random_real(rng *r)
{
    switch (rng_below(r, 4)) {
    case 0: return (double)rng_range(r, -100000, 100000) / 16;
    case 1: return (double)rng_range(r, -1000000, 1000000) / (double)rng_range(r, 1, 999);
    case 2: return ldexp((double)rng_range(r, -1000000, 1000000), (int)rng_range(r, -40, 20));
    default: return (double)rng_range(r, -9999999999999, 9999999999999) / 1000;
    }
}

/* Below 1e13, where 16 significant digits cover 3 decimals, the result
 * is exactly SQLite's. */
static void real_format_matches_sqlite(void)
{
    rng r;
    rng_seed(&r, test_seed());
    CHECK(sqlite3_initialize() == SQLITE_OK);
    for (int i = 0; i < 200000 * test_scale(); i++) {
        double v = random_real(&r);
        char mine[400], theirs[400];
        slt_format_real3(v, mine, sizeof mine);
        sqlite3_snprintf(sizeof theirs, theirs, "%.3f", v);
        CHECKF(near_tie(v) || strcmp(mine, theirs) == 0, "%.17g: %s != %s", v, mine, theirs);
        slt_format_real15(v, mine, sizeof mine);
        sqlite3_snprintf(sizeof theirs, theirs, "%!.15g", v);
        CHECKF(near_tie15(v) || strcmp(mine, theirs) == 0, "%.17g: %s != %s", v, mine,
               theirs);
    }
}

/* Each type rendered under each column letter. */
static void render_rules(void)
{
    slt_result res;
    slt_result_init(&res);
    slt_result_reset(&res, "IRT");
    slt_put_null(&res);
    slt_put_null(&res);
    slt_put_null(&res);
    slt_put_real(&res, -2.7);
    slt_put_int(&res, 5);
    slt_put_text(&res, "", 0);
    slt_put_text(&res, " 12abc", 6);
    slt_put_text(&res, "1.5e1x", 6);
    slt_put_text(&res, "a\tb\x80", 4);
    slt_put_real(&res, 1e300);
    slt_put_text(&res, "abc", 3);
    slt_put_real(&res, 2.0);
    slt_put_int(&res, -9);
    slt_put_real(&res, NAN);
    slt_put_int(&res, 7);
    const char *want[] = { "NULL", "NULL", "NULL", "-2", "5.000", "(empty)",
                           "12", "15.000", "a@b@", "9223372036854775807", "0.000",
                           "2.0", "-9", "NaN", "7" };
    CHECK_INT(res.nval, 15);
    for (int i = 0; i < 15; i++)
        CHECKF(strcmp(slt_value(&res, (size_t)i), want[i]) == 0, "value %d: %s != %s", i,
               slt_value(&res, (size_t)i), want[i]);
    slt_result_free(&res);
}

/* Comments vanish without separating records, conditions are read,
 * '\r' is dropped, and each record knows its line and its SQL. */
static void script_split(void)
{
    char *text = strdup("# header\n"
                        "hash-threshold 3\n"
                        "\n\n"
                        "skipif mysql # comment\n"
                        "onlyif sqlite\n"
                        "statement ok\r\n"
                        "CREATE TABLE t(a)\n"
                        "# inside\n"
                        "\n"
                        "skipif sqlite\n"
                        "query II rowsort label-1\n"
                        "SELECT 1,\n"
                        "  2\n"
                        "----\n"
                        "1\n"
                        "2\n"
                        "   \n"
                        "onlyif mssql\n"
                        "halt\n"
                        "\n"
                        "bogus record\n");
    slt_script s;
    CHECK(slt_script_parse(&s, text) == 0);
    CHECK_INT(s.nrecs, 5);
    CHECK_INT(s.recs[0].kind, SLT_HASH_THRESHOLD);
    CHECK_STR(s.recs[0].word[1], "3");
    CHECK_INT(s.recs[0].line, 2);
    const slt_record *st = &s.recs[1];
    CHECK_INT(st->kind, SLT_STATEMENT);
    CHECK_INT(st->skip, 0);
    CHECK_INT(st->line, 7);
    CHECK_STR(st->word[1], "ok");
    char *sql = slt_record_sql(st);
    CHECK_STR(sql, "CREATE TABLE t(a)");
    free(sql);
    const slt_record *q = &s.recs[2];
    CHECK_INT(q->kind, SLT_QUERY);
    CHECK_INT(q->skip, 1);
    CHECK_STR(q->word[1], "II");
    CHECK_STR(q->word[2], "rowsort");
    CHECK_STR(q->word[3], "label-1");
    sql = slt_record_sql(q);
    CHECK_STR(sql, "SELECT 1,\n  2");
    free(sql);
    CHECK_INT(q->nlines - q->results, 2);
    CHECK_INT(s.recs[3].kind, SLT_HALT);
    CHECK_INT(s.recs[3].skip, 1);
    CHECK_INT(s.recs[4].kind, SLT_UNKNOWN);
    CHECK_INT(s.recs[4].line, 22);
    slt_script_free(&s);
}

/* ---- whole scripts ---------------------------------------------------- */

/* Runs script (written to a temporary file) on engine; failure reports
 * go to report (NUL-terminated, truncated to size). */
static slt_counts run_script(const slt_engine *engine, const char *script, slt_options *o,
                             char *report, size_t size)
{
    char path[] = "/tmp/ldb_slt_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, script, strlen(script)) == (ssize_t)strlen(script));
    close(fd);
    FILE *out = tmpfile();
    CHECK(out);
    o->engine = engine;
    o->out = out;
    o->max_reports = 100;
    slt_counts c = { 0 };
    int rc = slt_run_file(path, o, &c);
    unlink(path);
    rewind(out);
    size_t n = fread(report, 1, size - 1, out);
    report[n] = 0;
    fclose(out);
    CHECK_INT(rc, 0);
    return c;
}

static const char passing_script[] =
    "hash-threshold 0\n"
    "\n"
    "statement ok\n"
    "CREATE TABLE t(a INTEGER, b TEXT, c REAL)\n"
    "\n"
    "statement ok\n"
    "INSERT INTO t VALUES(3, 'x', 1.5); INSERT INTO t VALUES(1, '', NULL);\n"
    "INSERT INTO t VALUES(2, 'z', -0.25)\n"
    "\n"
    "statement error\n"
    "INSERT INTO nowhere VALUES(1)\n"
    "\n"
    "query ITR rowsort\n"
    "SELECT a, b, c FROM t\n"
    "----\n"
    "1\n(empty)\nNULL\n2\nz\n-0.250\n3\nx\n1.500\n"
    "\n"
    "query I nosort\n"
    "SELECT a FROM t ORDER BY a DESC\n"
    "----\n"
    "3\n2\n1\n"
    "\n"
    "query IT valuesort\n"
    "SELECT a, b FROM t WHERE a > 1\n"
    "----\n"
    "2\n3\nx\nz\n"
    "\n"
    "query I nosort\n"
    "SELECT a FROM t WHERE a > 100\n"
    "\n"
    "hash-threshold 2\n"
    "\n"
    "query I rowsort label-all\n"
    "SELECT a FROM t\n"
    "----\n"
    "3 values hashing to c0710d6b4f15dfa88f600b0e6b624077\n"
    "\n"
    "skipif sqlite\n"
    "query I rowsort label-all\n"
    "SELECT this is not sql\n"
    "----\n"
    "3 values hashing to c0710d6b4f15dfa88f600b0e6b624077\n"
    "\n"
    "onlyif sqlite\n"
    "query I rowsort label-all\n"
    "SELECT a + 0 FROM t\n"
    "----\n"
    "3 values hashing to c0710d6b4f15dfa88f600b0e6b624077\n"
    "\n"
    "onlyif mysql\n"
    "halt\n"
    "\n"
    "query I nosort\n"
    "SELECT count(*) FROM t\n"
    "----\n"
    "3\n"
    "\n"
    "halt\n"
    "\n"
    "query I nosort\n"
    "SELECT 'never run'\n";

/* Every kind of record passes; conditional records are skipped; halt
 * stops the file. The hash is md5("1\n2\n3\n"). */
static void script_passes(void)
{
    CHECK_STR(md5_of("1\n2\n3\n"), "c0710d6b4f15dfa88f600b0e6b624077");
    char report[4096];
    slt_options o = { 0 };
    slt_counts c = run_script(&slt_engine_sqlite, passing_script, &o, report, sizeof report);
    CHECKF(c.failed == 0, "%s", report);
    CHECK_INT(c.passed, 10);
    CHECK_INT(c.skipped_cond, 1);
    CHECK_INT(c.skipped_unsupported, 0);
    slt_options_free(&o);
}

static const char failing_script[] =
    "statement ok\n"
    "CREATE TABLE t(a INTEGER)\n"
    "\n"
    "statement ok\n"
    "INSERT INTO t VALUES(1); INSERT INTO t VALUES(2)\n"
    "\n"
    "statement ok\n"
    "INSERT INTO nowhere VALUES(1)\n"
    "\n"
    "statement error\n"
    "INSERT INTO t VALUES(3)\n"
    "\n"
    "query I rowsort\n"
    "SELECT a FROM t\n"
    "----\n"
    "1\n2\n4\n"
    "\n"
    "query I rowsort\n"
    "SELECT a FROM t\n"
    "----\n"
    "1\n2\n"
    "\n"
    "query I nosort\n"
    "SELECT a FROM t ORDER BY a DESC\n"
    "----\n"
    "1\n2\n3\n"
    "\n"
    "query II rowsort\n"
    "SELECT a FROM t\n"
    "----\n"
    "1\n2\n3\n"
    "\n"
    "query I rowsort\n"
    "SELECT nothing FROM t\n"
    "\n"
    "hash-threshold 1\n"
    "\n"
    "query I rowsort\n"
    "SELECT a FROM t\n"
    "----\n"
    "3 values hashing to 00000000000000000000000000000000\n"
    "\n"
    "query I rowsort label-x\n"
    "SELECT a FROM t\n"
    "----\n"
    "3 values hashing to c0710d6b4f15dfa88f600b0e6b624077\n"
    "\n"
    "query I rowsort label-x\n"
    "SELECT a FROM t WHERE a < 3\n"
    "----\n"
    "2 values hashing to d8a3cc1b5ed1b1ea8b3d5dc4b8b7c5f0\n"
    "\n"
    "query I sideways\n"
    "SELECT 1\n"
    "\n"
    "frobnicate\n";

/* Each record of failing_script fails in its own way, and the report
 * names the file and line of each. */
static void script_failures_caught(void)
{
    char report[16384];
    slt_options o = { 0 };
    slt_counts c = run_script(&slt_engine_sqlite, failing_script, &o, report, sizeof report);
    CHECKF(c.failed == 11, "%ld failed:\n%s", c.failed, report);
    CHECK_INT(c.passed, 3);
    static const char *const expect[] = {
        ":7: statement failed: no such table: nowhere",
        ":10: statement succeeded, but an error was expected",
        ":13: wrong result", ":20: wrong number of values", ":26: wrong result",
        ":33: wrong number of columns: expected 2, got 1", ":40: query failed",
        ":45: wrong result", ":55: wrong result", ":60: unknown sort mode 'sideways'",
        ":63: unknown record type 'frobnicate'",
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        CHECKF(strstr(report, expect[i]), "no '%s' in:\n%s", expect[i], report);
    slt_options_free(&o);
}

/* A label whose queries disagree fails even when each result matches
 * its own expected block. */
static void label_mismatch(void)
{
    const char *script = "query I nosort label-y\n"
                         "SELECT 1\n"
                         "----\n"
                         "1\n"
                         "\n"
                         "query I nosort label-y\n"
                         "SELECT 2\n"
                         "----\n"
                         "2\n";
    char report[4096];
    slt_options o = { 0 };
    slt_counts c = run_script(&slt_engine_sqlite, script, &o, report, sizeof report);
    CHECK_INT(c.passed, 1);
    CHECK_INT(c.failed, 1);
    CHECKF(strstr(report, ":6: label label-y: result differs from line 1"), "%s", report);
    slt_options_free(&o);
}

/* An engine that rejects triggers as unsupported, else SQLite. */
static int picky_exec(void *db, const char *sql, slt_msg *msg)
{
    if (strstr(sql, "TRIGGER")) {
        snprintf(msg->text, sizeof msg->text, "line 1, column 8: triggers are not supported");
        return SLT_UNSUPPORTED;
    }
    return slt_engine_sqlite.exec(db, sql, msg);
}

static int picky_query(void *db, const char *sql, slt_result *res, slt_msg *msg)
{
    if (strstr(sql, "group_concat")) {
        snprintf(msg->text, sizeof msg->text, "line 1, column 8: group_concat is not supported");
        return SLT_UNSUPPORTED;
    }
    return slt_engine_sqlite.query(db, sql, res, msg);
}

/* Unsupported records are skipped, never passed, and their reasons are
 * tallied without the position prefix; a skipped labelled query still
 * lends its expected hash to the label. */
static void unsupported_skipped(void)
{
    slt_engine picky = slt_engine_sqlite;
    picky.exec = picky_exec;
    picky.query = picky_query;
    const char *script = "statement ok\n"
                         "CREATE TRIGGER r AFTER INSERT ON t BEGIN SELECT 1; END\n"
                         "\n"
                         "statement error\n"
                         "CREATE TRIGGER r AFTER INSERT ON t BEGIN SELECT 1; END\n"
                         "\n"
                         "query T nosort label-z\n"
                         "SELECT group_concat('a')\n"
                         "----\n"
                         "b\n"
                         "\n"
                         "query T nosort label-z\n"
                         "SELECT 'a'\n"
                         "----\n"
                         "a\n";
    char report[4096];
    slt_options o = { 0 };
    slt_counts c = run_script(&picky, script, &o, report, sizeof report);
    CHECK_INT(c.passed, 0);
    CHECK_INT(c.skipped_unsupported, 3);
    CHECK_INT(c.failed, 1); /* label-z: 'a' differs from the stored 'b' */
    CHECK_INT(o.nreasons, 2);
    CHECK_STR(o.reasons[0].text, "triggers are not supported");
    CHECK_INT(o.reasons[0].count, 2);
    CHECK_STR(o.reasons[1].text, "group_concat is not supported");
    slt_options_free(&o);
}

/* Known deviations: a listed record that fails is counted apart and
 * printed with its reason; a listed record that passes or is skipped, and
 * an entry that names no record of its file, are failures. */
static void known_deviations(void)
{
    char dir[] = "/tmp/ldb_slt_known_XXXXXX", path[64];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/k.test", dir);
    const char *script = "query I nosort\n"      /* 1: fails */
                         "SELECT 1\n"
                         "----\n"
                         "2\n"
                         "\n"
                         "query I nosort\n"      /* 6: passes */
                         "SELECT 1\n"
                         "----\n"
                         "1\n"
                         "\n"
                         "skipif sqlite\n"
                         "statement ok\n"        /* 12: skipped */
                         "SELECT 1\n"
                         "\n"
                         "query I nosort\n"      /* 15: fails, not listed */
                         "SELECT 3\n"
                         "----\n"
                         "4\n";
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(script, f) >= 0 && fclose(f) == 0);
    const slt_deviation known[] = {
        { "k.test", 1, "reason one" },   { "k.test", 6, "reason six" },
        { "k.test", 12, "reason twelve" }, { "k.test", 9, "no record" },
        { "other/k.test", 15, "another file" },
    };
    FILE *out = tmpfile();
    CHECK(out);
    slt_options o = { .engine = &slt_engine_sqlite, .out = out, .max_reports = 100,
                      .known = known, .nknown = 5 };
    slt_counts c = { 0 };
    CHECK_INT(slt_run_file(path, &o, &c), 0);
    char report[4096];
    rewind(out);
    report[fread(report, 1, sizeof report - 1, out)] = 0;
    fclose(out);
    unlink(path);
    rmdir(dir);
    CHECK_INT(c.deviations, 1);
    CHECK_INT(c.passed, 0);
    CHECK_INT(c.skipped_cond, 0);
    CHECKF(c.failed == 4, "%ld failed:\n%s", c.failed, report);
    static const char *const expect[] = {
        "KNOWN", "k.test:1: reason one\n",
        ":6: listed as a known deviation (reason six), but it passed",
        ":12: listed as a known deviation (reason twelve), but skipif/onlyif excluded it",
        ":9: listed as a known deviation, but no record starts there", ":15: wrong result",
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        CHECKF(strstr(report, expect[i]), "no '%s' in:\n%s", expect[i], report);
    slt_options_free(&o);
}

/* With a query limit, a query slower than it fails as too slow and is
 * stopped soon after (here a product of 10^10 rows, which would run for
 * hours), on both engines; the next query runs; the slowest is kept. */
static void query_limit(void)
{
    char script[4096];
    int len = snprintf(script, sizeof script,
                       "statement ok\n"
                       "CREATE TABLE t(a INTEGER)\n"
                       "\n"
                       "statement ok\n"
                       "INSERT INTO t VALUES(0)");
    for (int i = 1; i < 100; i++)
        len += snprintf(script + len, sizeof script - (size_t)len, ",(%d)", i);
    snprintf(script + len, sizeof script - (size_t)len,
             "\n\n"
             "query I nosort\n"                                  /* line 7 */
             "SELECT count(*) FROM t AS a, t AS b, t AS c, t AS d, t AS e\n"
             "----\n"
             "10000000000\n"
             "\n"
             "query I nosort\n"
             "SELECT count(*) FROM t\n"
             "----\n"
             "100\n");
    const slt_engine *engines[] = { &slt_engine_sqlite, &slt_engine_livedb };
    for (int e = 0; e < 2; e++) {
        slt_options o = { .query_limit = 0.2 };
        char report[2048];
        double start = slt_now();
        slt_counts c = run_script(engines[e], script, &o, report, sizeof report);
        double took = slt_now() - start;
        CHECKF(c.passed == 3 && c.failed == 1, "%s: %ld passed, %ld failed", engines[e]->name,
               c.passed, c.failed);
        CHECKF(strstr(report, ":7: too slow: ") != NULL, "%s: %s", engines[e]->name, report);
        CHECK_INT(c.slowest_line, 7);
        CHECK(c.slowest >= 0.2);
        CHECKF(took < 5, "%s ran %.1f s", engines[e]->name, took);
        slt_options_free(&o);
    }
}

TEST_MAIN(T(md5_rfc_vectors), T(md5_chunked), T(real_format_fixed),
          T(real_format_matches_sqlite), T(render_rules), T(script_split),
          T(script_passes), T(script_failures_caught), T(label_mismatch),
          T(unsupported_skipped), T(known_deviations), T(query_limit))
