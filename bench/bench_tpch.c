/*
 * bench_tpch.c - a TPC-H-shaped benchmark (issue 16): the 22 TPC-H queries
 * over the 8 TPC-H tables, livedb against SQLite on the same rows in the
 * same run, each query's results compared between the two.
 *
 * Data: a seeded generator written here from the TPC-H specification's
 * column list and value distributions (clause 4.2.3): table sizes per scale
 * factor, sparse order keys, customers without orders (custkey % 3 == 0),
 * partsupp's four suppliers per part, line items derived from their order
 * (dates, flags, status, total price). The distributions are approximate:
 * comments are random words from a small vocabulary instead of the spec's
 * grammar, addresses random characters, and about 0.5% of suppliers'
 * comments say "Customer ... Complaints" (the spec plants SF * 5). Results
 * are therefore not the official answer sets. Scale 0.1 by default
 * (lineitem ~600k rows), --quick 0.005, --scale X, --seed N.
 *
 * livedb has no DATE type, so dates are ISO text 'YYYY-MM-DD' (text order
 * is date order), the queries' date arithmetic is written as constant
 * literals (date '1998-12-01' - interval '90' day is '1998-09-02') and
 * extract(year from d) is substr(d, 1, 4). Decimals are REAL columns. Both
 * engines get the spec's primary keys and an index on every foreign-key
 * column that does not lead a primary key; SQLite runs without ANALYZE.
 *
 * Queries: the spec's text with its validation substitution parameters,
 * Q11's FRACTION (0.0001 / SF) bound as parameter 1. Other rewrites: Q13's
 * derived-table column list becomes column aliases (SQLite 3.40 lacks it)
 * and Q15's view a CTE.
 *
 * Per query and engine: a warm run, whose rows are compared (row count,
 * then every value in order; numbers within a relative 1e-9, since float
 * sums depend on order), then the median of 3 timed runs (only the warm
 * run when it took over 5 s); a run is prepare + step to the end. Each
 * engine's progress handler stops a run after the cap (60 s; 10 s with
 * --quick). Lines:
 *     bench tpch.qNN.livedb_ms <v> ms     (-1: stopped at the cap)
 *     bench tpch.qNN.sqlite_ms <v> ms
 *     bench tpch.qNN.ratio <x> x          (livedb / SQLite; -1 if stopped)
 *     # tpch qNN does not run: <livedb's error message>
 * then a summary, the slowest ratio and the livedb EXPLAIN QUERY PLAN of
 * its query (--plans: of every query). Arguments q1..q22 run only those
 * queries. The exit status is 1 when a result differs from SQLite's.
 */
#include "bench_util.h"

#include "livedb.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- options ------------------------------------------------------------------ */

static struct {
    double scale;
    uint64_t seed;
    uint64_t cap_ns;
    char **only; /* query names to run (argv), none: all */
    int nonly;
    bool plans; /* --plans: every query's livedb plan, not only the slowest's */
} opt;

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--quick] [--scale X] [--seed N] [--plans] [q1..q22...]\n", prog);
    return 2;
}

/* Returns 0, or 2 after printing the usage. */
static int parse_args(int argc, char **argv)
{
    double scale = 0; /* none given */
    opt.seed = 20261202u;
    opt.only = bench_realloc(NULL, sizeof(char *) * (size_t)argc);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            bench_quick = true;
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc && atof(argv[i + 1]) > 0)
            scale = atof(argv[++i]);
        else if (strcmp(argv[i], "--plans") == 0)
            opt.plans = true;
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            opt.seed = strtoull(argv[++i], NULL, 10);
        else if (argv[i][0] == 'q' && atoi(argv[i] + 1) >= 1 && atoi(argv[i] + 1) <= 22)
            opt.only[opt.nonly++] = argv[i];
        else
            return usage(argv[0]);
    }
    if (scale > 100)
        return usage(argv[0]);
    opt.scale = scale > 0 ? scale : bench_quick ? 0.005 : 0.1;
    opt.cap_ns = (bench_quick ? 10u : 60u) * 1000000000ull;
    return 0;
}

static bool selected(const char *name)
{
    for (int i = 0; i < opt.nonly; i++)
        if (strcmp(opt.only[i], name) == 0)
            return true;
    return opt.nonly == 0;
}

/* ---- the two engines ----------------------------------------------------------- */

struct engines {
    ldb *db;
    sqlite3 *lite;
};

/* A run stops when the clock passes this (both progress handlers read it). */
static uint64_t deadline = UINT64_MAX;

static int past_deadline(void *ctx)
{
    (void)ctx;
    return bench_ns() >= deadline;
}

static void open_engines(struct engines *e)
{
    if (ldb_open(NULL, &e->db) != LDB_OK || sqlite3_open(":memory:", &e->lite) != SQLITE_OK)
        bench_die("open", "cannot open the databases");
    ldb_progress_handler(e->db, 10000, past_deadline, NULL);
    sqlite3_progress_handler(e->lite, 10000, past_deadline, NULL);
}

/* An INSERT prepared on both engines; values are bound column by column
 * and ins_row writes the row. */
struct ins {
    ldb_stmt *ls;
    sqlite3_stmt *ss;
    int col;
    struct engines *e;
};

static void ins_open(struct ins *in, struct engines *e, const char *table, int ncols)
{
    char sql[256];
    int len = snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (?", table);
    for (int i = 1; i < ncols; i++)
        len += snprintf(sql + len, sizeof sql - (size_t)len, ", ?");
    snprintf(sql + len, sizeof sql - (size_t)len, ")");
    in->e = e;
    in->col = 0;
    if (sqlite3_prepare_v2(e->lite, sql, -1, &in->ss, NULL) != SQLITE_OK)
        bench_die(sql, sqlite3_errmsg(e->lite));
    if (ldb_prepare(e->db, sql, -1, &in->ls, NULL) != LDB_OK)
        bench_die(sql, ldb_errmsg(e->db));
}

static void bound(struct ins *in, int lite_rc, int ldb_rc)
{
    if (lite_rc != SQLITE_OK || ldb_rc != LDB_OK)
        bench_die("bind", lite_rc != SQLITE_OK ? sqlite3_errstr(lite_rc) : ldb_errstr(ldb_rc));
    in->col++;
}

static void ins_int(struct ins *in, int64_t v)
{
    bound(in, sqlite3_bind_int64(in->ss, in->col + 1, v), ldb_bind_int64(in->ls, in->col + 1, v));
}

static void ins_real(struct ins *in, double v)
{
    bound(in, sqlite3_bind_double(in->ss, in->col + 1, v),
          ldb_bind_double(in->ls, in->col + 1, v));
}

static void ins_text(struct ins *in, const char *s)
{
    bound(in, sqlite3_bind_text(in->ss, in->col + 1, s, -1, SQLITE_TRANSIENT),
          ldb_bind_text(in->ls, in->col + 1, s, -1));
}

static void ins_row(struct ins *in)
{
    if (sqlite3_step(in->ss) != SQLITE_DONE)
        bench_die("insert", sqlite3_errmsg(in->e->lite));
    sqlite3_reset(in->ss);
    if (ldb_step(in->ls) != LDB_DONE)
        bench_die("insert", ldb_errmsg(in->e->db));
    ldb_reset(in->ls);
    in->col = 0;
}

static void ins_close(struct ins *in)
{
    sqlite3_finalize(in->ss);
    ldb_finalize(in->ls);
}

/* ---- random values ---------------------------------------------------------------- */

static uint64_t rng;

/* Uniform in [lo, hi]. */
static int64_t uniform(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(bench_rand(&rng) % (uint64_t)(hi - lo + 1));
}

/* A uniform amount of cents in [lo, hi], as a decimal. */
static double money(int64_t lo, int64_t hi)
{
    return (double)uniform(lo, hi) / 100.0;
}

static double round2(double v)
{
    return round(v * 100.0) / 100.0;
}

#define PICK(arr) (arr[uniform(0, (int64_t)(sizeof arr / sizeof arr[0]) - 1)])

static const char *const words[] = {
    "furiously", "quickly", "carefully", "blithely", "slyly",    "ironically", "fluffily",
    "deposits",  "requests", "packages", "accounts", "theodolites", "instructions", "foxes",
    "pinto",     "beans",    "ideas",    "platelets", "dependencies", "asymptotes", "dolphins",
    "special",   "pending",  "final",    "regular",  "ironic",   "express",  "bold",
    "even",      "silent",   "unusual",  "careful",  "quick",    "sleep",    "wake",
    "are",       "haggle",   "nag",      "use",      "boost",    "affix",    "detect",
    "integrate", "among",    "after",    "above",    "across",   "against",  "along",
};

/* Random words, lo..hi characters in all, into buf (size > hi). */
static void text_words(char *buf, size_t size, int lo, int hi)
{
    int target = (int)uniform(lo, hi), len = 0;
    buf[0] = 0;
    while (len < target) {
        const char *w = PICK(words);
        int n = snprintf(buf + len, size - (size_t)len, "%s%s", len ? " " : "", w);
        if (len + n > hi) {
            buf[len] = 0; /* drop the word that does not fit */
            break;
        }
        len += n;
    }
}

/* Random letters and digits, lo..hi of them, into buf (size > hi). */
static void text_chars(char *buf, int lo, int hi)
{
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,";
    int n = (int)uniform(lo, hi);
    for (int i = 0; i < n; i++)
        buf[i] = alnum[uniform(0, (int64_t)sizeof alnum - 2)];
    buf[n] = 0;
}

/* 'CC-LLL-LLL-LLLL', CC the nation key + 10. */
static void phone(char *buf, size_t size, int64_t nation)
{
    snprintf(buf, size, "%02d-%03d-%03d-%04d", (int)nation + 10, (int)uniform(100, 999),
             (int)uniform(100, 999), (int)uniform(1000, 9999));
}

/* ---- dates: day numbers from 1992-01-01 and their ISO text --------------------------- */

#define MAX_DAYS (8 * 366)
static char dates[MAX_DAYS][11];
static int ndates;
static int day_end;     /* 1998-12-31, the spec's ENDDATE */
static int day_current; /* 1995-06-17, the spec's CURRENTDATE */

static int day_of(const char *iso)
{
    for (int d = 0; d < ndates; d++)
        if (strcmp(dates[d], iso) == 0)
            return d;
    bench_die("date", iso);
    return -1;
}

static void dates_init(void)
{
    static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    for (int y = 1992; y <= 1999; y++)
        for (int m = 0; m < 12; m++) {
            int leap = m == 1 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
            for (int d = 1; d <= mdays[m] + leap; d++) {
                char iso[32]; /* the compiler cannot bound d, so no [11] */
                snprintf(iso, sizeof iso, "%04d-%02d-%02d", y, m + 1, d);
                memcpy(dates[ndates++], iso, sizeof dates[0]);
            }
        }
    day_end = day_of("1998-12-31");
    day_current = day_of("1995-06-17");
}

/* ---- the tables ------------------------------------------------------------------------ */

struct sizes {
    int64_t supplier, customer, part, orders, clerks;
};

static int64_t at_least(double v, int64_t min)
{
    return v < (double)min ? min : (int64_t)v;
}

static struct sizes sizes_for(double sf)
{
    struct sizes n = {
        .supplier = at_least(sf * 10000, 4), /* partsupp needs 4 distinct suppliers */
        .customer = at_least(sf * 150000, 3),
        .part = at_least(sf * 200000, 1),
        .orders = at_least(sf * 1500000, 1),
        .clerks = at_least(sf * 1000, 1),
    };
    return n;
}

static const char *const schema =
    "CREATE TABLE region(r_regionkey INTEGER PRIMARY KEY, r_name TEXT, r_comment TEXT);"
    "CREATE TABLE nation(n_nationkey INTEGER PRIMARY KEY, n_name TEXT, n_regionkey INTEGER,"
    " n_comment TEXT);"
    "CREATE TABLE supplier(s_suppkey INTEGER PRIMARY KEY, s_name TEXT, s_address TEXT,"
    " s_nationkey INTEGER, s_phone TEXT, s_acctbal REAL, s_comment TEXT);"
    "CREATE TABLE customer(c_custkey INTEGER PRIMARY KEY, c_name TEXT, c_address TEXT,"
    " c_nationkey INTEGER, c_phone TEXT, c_acctbal REAL, c_mktsegment TEXT, c_comment TEXT);"
    "CREATE TABLE part(p_partkey INTEGER PRIMARY KEY, p_name TEXT, p_mfgr TEXT, p_brand TEXT,"
    " p_type TEXT, p_size INTEGER, p_container TEXT, p_retailprice REAL, p_comment TEXT);"
    "CREATE TABLE partsupp(ps_partkey INTEGER, ps_suppkey INTEGER, ps_availqty INTEGER,"
    " ps_supplycost REAL, ps_comment TEXT, PRIMARY KEY (ps_partkey, ps_suppkey));"
    "CREATE TABLE orders(o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER,"
    " o_orderstatus TEXT, o_totalprice REAL, o_orderdate TEXT, o_orderpriority TEXT,"
    " o_clerk TEXT, o_shippriority INTEGER, o_comment TEXT);"
    "CREATE TABLE lineitem(l_orderkey INTEGER, l_partkey INTEGER, l_suppkey INTEGER,"
    " l_linenumber INTEGER, l_quantity REAL, l_extendedprice REAL, l_discount REAL,"
    " l_tax REAL, l_returnflag TEXT, l_linestatus TEXT, l_shipdate TEXT, l_commitdate TEXT,"
    " l_receiptdate TEXT, l_shipinstruct TEXT, l_shipmode TEXT, l_comment TEXT,"
    " PRIMARY KEY (l_orderkey, l_linenumber));";

/* Foreign-key columns not covered by a primary key's leading part. */
static const char *const indexes =
    "CREATE INDEX nation_regionkey ON nation(n_regionkey);"
    "CREATE INDEX supplier_nationkey ON supplier(s_nationkey);"
    "CREATE INDEX customer_nationkey ON customer(c_nationkey);"
    "CREATE INDEX partsupp_suppkey ON partsupp(ps_suppkey);"
    "CREATE INDEX orders_custkey ON orders(o_custkey);"
    "CREATE INDEX lineitem_partkey ON lineitem(l_partkey);"
    "CREATE INDEX lineitem_suppkey ON lineitem(l_suppkey);";

static const char *const region_names[5] = { "AFRICA", "AMERICA", "ASIA", "EUROPE",
                                             "MIDDLE EAST" };

static const struct {
    const char *name;
    int region;
} nations[25] = {
    { "ALGERIA", 0 },    { "ARGENTINA", 1 },    { "BRAZIL", 1 },        { "CANADA", 1 },
    { "EGYPT", 4 },      { "ETHIOPIA", 0 },     { "FRANCE", 3 },        { "GERMANY", 3 },
    { "INDIA", 2 },      { "INDONESIA", 2 },    { "IRAN", 4 },          { "IRAQ", 4 },
    { "JAPAN", 2 },      { "JORDAN", 4 },       { "KENYA", 0 },         { "MOROCCO", 0 },
    { "MOZAMBIQUE", 0 }, { "PERU", 1 },         { "CHINA", 2 },         { "ROMANIA", 3 },
    { "SAUDI ARABIA", 4 }, { "VIETNAM", 2 },    { "RUSSIA", 3 },        { "UNITED KINGDOM", 3 },
    { "UNITED STATES", 1 },
};

static void gen_region_nation(struct engines *e)
{
    char comment[128];
    struct ins in;
    ins_open(&in, e, "region", 3);
    for (int r = 0; r < 5; r++) {
        text_words(comment, sizeof comment, 31, 115);
        ins_int(&in, r);
        ins_text(&in, region_names[r]);
        ins_text(&in, comment);
        ins_row(&in);
    }
    ins_close(&in);
    ins_open(&in, e, "nation", 4);
    for (int n = 0; n < 25; n++) {
        text_words(comment, sizeof comment, 31, 114);
        ins_int(&in, n);
        ins_text(&in, nations[n].name);
        ins_int(&in, nations[n].region);
        ins_text(&in, comment);
        ins_row(&in);
    }
    ins_close(&in);
}

/* A supplier's comment: about 0.5% name complaints, as many recommendations. */
static void supplier_comment(char *buf, size_t size)
{
    int64_t r = uniform(0, 199);
    text_words(buf, size, 25, 60);
    if (r < 2) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, " Customer %s %s", PICK(words),
                 r == 0 ? "Complaints" : "Recommends");
    }
}

static void gen_supplier(struct engines *e, const struct sizes *n)
{
    char name[32], address[48], ph[24], comment[128];
    struct ins in;
    ins_open(&in, e, "supplier", 7);
    for (int64_t k = 1; k <= n->supplier; k++) {
        int64_t nation = uniform(0, 24);
        snprintf(name, sizeof name, "Supplier#%09lld", (long long)k);
        text_chars(address, 10, 40);
        phone(ph, sizeof ph, nation);
        supplier_comment(comment, sizeof comment);
        ins_int(&in, k);
        ins_text(&in, name);
        ins_text(&in, address);
        ins_int(&in, nation);
        ins_text(&in, ph);
        ins_real(&in, money(-99999, 999999));
        ins_text(&in, comment);
        ins_row(&in);
    }
    ins_close(&in);
}

static void gen_customer(struct engines *e, const struct sizes *n)
{
    static const char *const segments[] = { "AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY",
                                            "HOUSEHOLD" };
    char name[32], address[48], ph[24], comment[128];
    struct ins in;
    ins_open(&in, e, "customer", 8);
    for (int64_t k = 1; k <= n->customer; k++) {
        int64_t nation = uniform(0, 24);
        snprintf(name, sizeof name, "Customer#%09lld", (long long)k);
        text_chars(address, 10, 40);
        phone(ph, sizeof ph, nation);
        text_words(comment, sizeof comment, 29, 116);
        ins_int(&in, k);
        ins_text(&in, name);
        ins_text(&in, address);
        ins_int(&in, nation);
        ins_text(&in, ph);
        ins_real(&in, money(-99999, 999999));
        ins_text(&in, PICK(segments));
        ins_text(&in, comment);
        ins_row(&in);
    }
    ins_close(&in);
}

static const char *const colors[] = {
    "almond",    "antique",   "aquamarine", "azure",     "beige",     "bisque",    "black",
    "blanched",  "blue",      "blush",      "brown",     "burlywood", "burnished", "chartreuse",
    "chiffon",   "chocolate", "coral",      "cornflower", "cornsilk", "cream",     "cyan",
    "dark",      "deep",      "dim",        "dodger",    "drab",      "firebrick", "floral",
    "forest",    "frosted",   "gainsboro",  "ghost",     "goldenrod", "green",     "grey",
    "honeydew",  "hot",       "indian",     "ivory",     "khaki",     "lace",      "lavender",
    "lawn",      "lemon",     "light",      "lime",      "linen",     "magenta",   "maroon",
    "medium",    "metallic",  "midnight",   "mint",      "misty",     "moccasin",  "navajo",
    "navy",      "olive",     "orange",     "orchid",    "pale",      "papaya",    "peach",
    "peru",      "pink",      "plum",       "powder",    "puff",      "purple",    "red",
    "rose",      "rosy",      "royal",      "saddle",    "salmon",    "sandy",     "seashell",
    "sienna",    "sky",       "slate",      "smoke",     "snow",      "spring",    "steel",
    "tan",       "thistle",   "tomato",     "turquoise", "violet",    "wheat",     "white",
    "yellow",
};

/* Five distinct colour words. */
static void part_name(char *buf, size_t size)
{
    int pick[5];
    size_t len = 0;
    for (int i = 0; i < 5; i++) {
        bool again;
        do {
            pick[i] = (int)uniform(0, (int64_t)(sizeof colors / sizeof colors[0]) - 1);
            again = false;
            for (int j = 0; j < i; j++)
                again |= pick[j] == pick[i];
        } while (again);
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", colors[pick[i]]);
    }
}

static double retail_price(int64_t partkey)
{
    return (double)(90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000)) / 100.0;
}

static void part_type(char *buf, size_t size)
{
    static const char *const s1[] = { "STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY",
                                      "PROMO" };
    static const char *const s2[] = { "ANODIZED", "BURNISHED", "PLATED", "POLISHED",
                                      "BRUSHED" };
    static const char *const s3[] = { "TIN", "NICKEL", "BRASS", "STEEL", "COPPER" };
    snprintf(buf, size, "%s %s %s", PICK(s1), PICK(s2), PICK(s3));
}

static void part_container(char *buf, size_t size)
{
    static const char *const c1[] = { "SM", "LG", "MED", "JUMBO", "WRAP" };
    static const char *const c2[] = { "CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN",
                                      "DRUM" };
    snprintf(buf, size, "%s %s", PICK(c1), PICK(c2));
}

static void gen_part(struct engines *e, const struct sizes *n)
{
    char name[64], mfgr[32], brand[16], type[32], container[16], comment[32];
    struct ins in;
    ins_open(&in, e, "part", 9);
    for (int64_t k = 1; k <= n->part; k++) {
        int m = (int)uniform(1, 5);
        part_name(name, sizeof name);
        snprintf(mfgr, sizeof mfgr, "Manufacturer#%d", m);
        snprintf(brand, sizeof brand, "Brand#%d%d", m, (int)uniform(1, 5));
        part_type(type, sizeof type);
        part_container(container, sizeof container);
        text_words(comment, sizeof comment, 5, 22);
        ins_int(&in, k);
        ins_text(&in, name);
        ins_text(&in, mfgr);
        ins_text(&in, brand);
        ins_text(&in, type);
        ins_int(&in, uniform(1, 50));
        ins_text(&in, container);
        ins_real(&in, retail_price(k));
        ins_text(&in, comment);
        ins_row(&in);
    }
    ins_close(&in);
}

/* The spec's i-th (0..3) supplier of a part. Its formula repeats a
 * supplier when there are few (scale < 0.01); the next free key replaces a
 * repeat. */
static int64_t part_supplier(int64_t partkey, int64_t i, int64_t nsupp)
{
    int64_t keys[4];
    for (int64_t k = 0; k <= i; k++) {
        keys[k] = (partkey + k * (nsupp / 4 + (partkey - 1) / nsupp)) % nsupp;
        for (int64_t j = 0; j < k; j++)
            if (keys[j] == keys[k]) {
                keys[k] = (keys[k] + 1) % nsupp;
                j = -1; /* check the new key against all */
            }
    }
    return keys[i] + 1;
}

static void gen_partsupp(struct engines *e, const struct sizes *n)
{
    char comment[200];
    struct ins in;
    ins_open(&in, e, "partsupp", 5);
    for (int64_t k = 1; k <= n->part; k++)
        for (int i = 0; i < 4; i++) {
            text_words(comment, sizeof comment, 49, 198);
            ins_int(&in, k);
            ins_int(&in, part_supplier(k, i, n->supplier));
            ins_int(&in, uniform(1, 9999));
            ins_real(&in, money(100, 100000));
            ins_text(&in, comment);
            ins_row(&in);
        }
    ins_close(&in);
}

struct line {
    int64_t partkey, suppkey;
    double quantity, price, discount, tax;
    int ship, commit, receipt;
    const char *returnflag, *linestatus, *instruct, *mode;
};

static void make_line(struct line *l, int orderdate, const struct sizes *n)
{
    static const char *const instructs[] = { "DELIVER IN PERSON", "COLLECT COD", "NONE",
                                             "TAKE BACK RETURN" };
    static const char *const modes[] = { "REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL",
                                         "FOB" };
    l->partkey = uniform(1, n->part);
    l->suppkey = part_supplier(l->partkey, uniform(0, 3), n->supplier);
    l->quantity = (double)uniform(1, 50);
    l->price = round2(l->quantity * retail_price(l->partkey));
    l->discount = money(0, 10);
    l->tax = money(0, 8);
    l->ship = orderdate + (int)uniform(1, 121);
    l->commit = orderdate + (int)uniform(30, 90);
    l->receipt = l->ship + (int)uniform(1, 30);
    l->returnflag = l->receipt <= day_current ? (uniform(0, 1) ? "R" : "A") : "N";
    l->linestatus = l->ship > day_current ? "O" : "F";
    l->instruct = PICK(instructs);
    l->mode = PICK(modes);
}

static void insert_line(struct ins *in, int64_t orderkey, int number, const struct line *l)
{
    char comment[48];
    text_words(comment, sizeof comment, 10, 43);
    ins_int(in, orderkey);
    ins_int(in, l->partkey);
    ins_int(in, l->suppkey);
    ins_int(in, number);
    ins_real(in, l->quantity);
    ins_real(in, l->price);
    ins_real(in, l->discount);
    ins_real(in, l->tax);
    ins_text(in, l->returnflag);
    ins_text(in, l->linestatus);
    ins_text(in, dates[l->ship]);
    ins_text(in, dates[l->commit]);
    ins_text(in, dates[l->receipt]);
    ins_text(in, l->instruct);
    ins_text(in, l->mode);
    ins_text(in, comment);
    ins_row(in);
}

/* Order i (0-based) and its 1..7 line items; the order's status and total
 * price come from its lines. */
static void gen_order(struct ins *oin, struct ins *lin, const struct sizes *n, int64_t i)
{
    static const char *const priorities[] = { "1-URGENT", "2-HIGH", "3-MEDIUM",
                                              "4-NOT SPECIFIED", "5-LOW" };
    int64_t key = i / 8 * 32 + i % 8 + 1, cust;
    do
        cust = uniform(1, n->customer);
    while (cust % 3 == 0);
    int orderdate = (int)uniform(0, day_end - 151), nlines = (int)uniform(1, 7), nf = 0;
    struct line lines[7];
    double total = 0;
    for (int k = 0; k < nlines; k++) {
        make_line(&lines[k], orderdate, n);
        total += lines[k].price * (1 + lines[k].tax) * (1 - lines[k].discount);
        nf += lines[k].linestatus[0] == 'F';
    }
    char clerk[32], comment[96];
    snprintf(clerk, sizeof clerk, "Clerk#%09lld", (long long)uniform(1, n->clerks));
    text_words(comment, sizeof comment, 19, 78);
    ins_int(oin, key);
    ins_int(oin, cust);
    ins_text(oin, nf == nlines ? "F" : nf == 0 ? "O" : "P");
    ins_real(oin, round2(total));
    ins_text(oin, dates[orderdate]);
    ins_text(oin, PICK(priorities));
    ins_text(oin, clerk);
    ins_int(oin, 0);
    ins_text(oin, comment);
    ins_row(oin);
    for (int k = 0; k < nlines; k++)
        insert_line(lin, key, k + 1, &lines[k]);
}

static void gen_orders(struct engines *e, const struct sizes *n)
{
    struct ins oin, lin;
    ins_open(&oin, e, "orders", 9);
    ins_open(&lin, e, "lineitem", 16);
    for (int64_t i = 0; i < n->orders; i++)
        gen_order(&oin, &lin, n, i);
    ins_close(&oin);
    ins_close(&lin);
}

static void load(struct engines *e)
{
    struct sizes n = sizes_for(opt.scale);
    rng = opt.seed;
    bench_exec_both(e->db, e->lite, schema);
    bench_exec_both(e->db, e->lite, "BEGIN");
    gen_region_nation(e);
    gen_supplier(e, &n);
    gen_customer(e, &n);
    gen_part(e, &n);
    gen_partsupp(e, &n);
    gen_orders(e, &n);
    bench_exec_both(e->db, e->lite, "COMMIT");
    bench_exec_both(e->db, e->lite, indexes);
}

/* ---- the queries ---------------------------------------------------------------------- */

static const char *const queries[22] = {
    /* Q1: pricing summary report */
    "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,"
    " sum(l_extendedprice) AS sum_base_price,"
    " sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,"
    " sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,"
    " avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price,"
    " avg(l_discount) AS avg_disc, count(*) AS count_order"
    " FROM lineitem WHERE l_shipdate <= '1998-09-02'"
    " GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus",
    /* Q2: minimum cost supplier */
    "SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment"
    " FROM part, supplier, partsupp, nation, region"
    " WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size = 15"
    " AND p_type LIKE '%BRASS' AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey"
    " AND r_name = 'EUROPE' AND ps_supplycost = (SELECT min(ps_supplycost)"
    " FROM partsupp, supplier, nation, region WHERE p_partkey = ps_partkey"
    " AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey"
    " AND n_regionkey = r_regionkey AND r_name = 'EUROPE')"
    " ORDER BY s_acctbal DESC, n_name, s_name, p_partkey LIMIT 100",
    /* Q3: shipping priority */
    "SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate,"
    " o_shippriority FROM customer, orders, lineitem"
    " WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey"
    " AND o_orderdate < '1995-03-15' AND l_shipdate > '1995-03-15'"
    " GROUP BY l_orderkey, o_orderdate, o_shippriority ORDER BY revenue DESC, o_orderdate"
    " LIMIT 10",
    /* Q4: order priority checking */
    "SELECT o_orderpriority, count(*) AS order_count FROM orders"
    " WHERE o_orderdate >= '1993-07-01' AND o_orderdate < '1993-10-01'"
    " AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey"
    " AND l_commitdate < l_receiptdate)"
    " GROUP BY o_orderpriority ORDER BY o_orderpriority",
    /* Q5: local supplier volume */
    "SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue"
    " FROM customer, orders, lineitem, supplier, nation, region"
    " WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey"
    " AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey"
    " AND n_regionkey = r_regionkey AND r_name = 'ASIA'"
    " AND o_orderdate >= '1994-01-01' AND o_orderdate < '1995-01-01'"
    " GROUP BY n_name ORDER BY revenue DESC",
    /* Q6: forecasting revenue change */
    "SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem"
    " WHERE l_shipdate >= '1994-01-01' AND l_shipdate < '1995-01-01'"
    " AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    /* Q7: volume shipping */
    "SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue"
    " FROM (SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation,"
    " substr(l_shipdate, 1, 4) AS l_year, l_extendedprice * (1 - l_discount) AS volume"
    " FROM supplier, lineitem, orders, customer, nation n1, nation n2"
    " WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey"
    " AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey"
    " AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY')"
    " OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE'))"
    " AND l_shipdate BETWEEN '1995-01-01' AND '1996-12-31') AS shipping"
    " GROUP BY supp_nation, cust_nation, l_year ORDER BY supp_nation, cust_nation, l_year",
    /* Q8: national market share */
    "SELECT o_year, sum(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / sum(volume)"
    " AS mkt_share FROM (SELECT substr(o_orderdate, 1, 4) AS o_year,"
    " l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation"
    " FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region"
    " WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey"
    " AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey"
    " AND n1.n_regionkey = r_regionkey AND r_name = 'AMERICA'"
    " AND s_nationkey = n2.n_nationkey"
    " AND o_orderdate BETWEEN '1995-01-01' AND '1996-12-31'"
    " AND p_type = 'ECONOMY ANODIZED STEEL') AS all_nations"
    " GROUP BY o_year ORDER BY o_year",
    /* Q9: product type profit measure */
    "SELECT nation, o_year, sum(amount) AS sum_profit"
    " FROM (SELECT n_name AS nation, substr(o_orderdate, 1, 4) AS o_year,"
    " l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount"
    " FROM part, supplier, lineitem, partsupp, orders, nation"
    " WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey"
    " AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey"
    " AND p_name LIKE '%green%') AS profit"
    " GROUP BY nation, o_year ORDER BY nation, o_year DESC",
    /* Q10: returned item reporting */
    "SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue,"
    " c_acctbal, n_name, c_address, c_phone, c_comment"
    " FROM customer, orders, lineitem, nation"
    " WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey"
    " AND o_orderdate >= '1993-10-01' AND o_orderdate < '1994-01-01'"
    " AND l_returnflag = 'R' AND c_nationkey = n_nationkey"
    " GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment"
    " ORDER BY revenue DESC LIMIT 20",
    /* Q11: important stock identification (?1 = FRACTION) */
    "SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value"
    " FROM partsupp, supplier, nation"
    " WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY'"
    " GROUP BY ps_partkey HAVING sum(ps_supplycost * ps_availqty) >"
    " (SELECT sum(ps_supplycost * ps_availqty) * ?1 FROM partsupp, supplier, nation"
    " WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY')"
    " ORDER BY value DESC",
    /* Q12: shipping modes and order priority */
    "SELECT l_shipmode, sum(CASE WHEN o_orderpriority = '1-URGENT'"
    " OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count,"
    " sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH'"
    " THEN 1 ELSE 0 END) AS low_line_count FROM orders, lineitem"
    " WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP')"
    " AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate"
    " AND l_receiptdate >= '1994-01-01' AND l_receiptdate < '1995-01-01'"
    " GROUP BY l_shipmode ORDER BY l_shipmode",
    /* Q13: customer distribution */
    "SELECT c_count, count(*) AS custdist"
    " FROM (SELECT c_custkey, count(o_orderkey) AS c_count"
    " FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey"
    " AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) AS c_orders"
    " GROUP BY c_count ORDER BY custdist DESC, c_count DESC",
    /* Q14: promotion effect */
    "SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%'"
    " THEN l_extendedprice * (1 - l_discount) ELSE 0 END)"
    " / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue FROM lineitem, part"
    " WHERE l_partkey = p_partkey AND l_shipdate >= '1995-09-01'"
    " AND l_shipdate < '1995-10-01'",
    /* Q15: top supplier (the view revenue0 as a CTE) */
    "WITH revenue0 (supplier_no, total_revenue) AS (SELECT l_suppkey,"
    " sum(l_extendedprice * (1 - l_discount)) FROM lineitem"
    " WHERE l_shipdate >= '1996-01-01' AND l_shipdate < '1996-04-01' GROUP BY l_suppkey)"
    " SELECT s_suppkey, s_name, s_address, s_phone, total_revenue FROM supplier, revenue0"
    " WHERE s_suppkey = supplier_no"
    " AND total_revenue = (SELECT max(total_revenue) FROM revenue0) ORDER BY s_suppkey",
    /* Q16: parts/supplier relationship */
    "SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt"
    " FROM partsupp, part WHERE p_partkey = ps_partkey AND p_brand <> 'Brand#45'"
    " AND p_type NOT LIKE 'MEDIUM POLISHED%' AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9)"
    " AND ps_suppkey NOT IN (SELECT s_suppkey FROM supplier"
    " WHERE s_comment LIKE '%Customer%Complaints%')"
    " GROUP BY p_brand, p_type, p_size ORDER BY supplier_cnt DESC, p_brand, p_type, p_size",
    /* Q17: small-quantity-order revenue */
    "SELECT sum(l_extendedprice) / 7.0 AS avg_yearly FROM lineitem, part"
    " WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container = 'MED BOX'"
    " AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem"
    " WHERE l_partkey = p_partkey)",
    /* Q18: large volume customer */
    "SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)"
    " FROM customer, orders, lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem"
    " GROUP BY l_orderkey HAVING sum(l_quantity) > 300)"
    " AND c_custkey = o_custkey AND o_orderkey = l_orderkey"
    " GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice"
    " ORDER BY o_totalprice DESC, o_orderdate LIMIT 100",
    /* Q19: discounted revenue */
    "SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue FROM lineitem, part"
    " WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12'"
    " AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')"
    " AND l_quantity >= 1 AND l_quantity <= 1 + 10 AND p_size BETWEEN 1 AND 5"
    " AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')"
    " OR (p_partkey = l_partkey AND p_brand = 'Brand#23'"
    " AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')"
    " AND l_quantity >= 10 AND l_quantity <= 10 + 10 AND p_size BETWEEN 1 AND 10"
    " AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')"
    " OR (p_partkey = l_partkey AND p_brand = 'Brand#34'"
    " AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')"
    " AND l_quantity >= 20 AND l_quantity <= 20 + 10 AND p_size BETWEEN 1 AND 15"
    " AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')",
    /* Q20: potential part promotion */
    "SELECT s_name, s_address FROM supplier, nation WHERE s_suppkey IN"
    " (SELECT ps_suppkey FROM partsupp WHERE ps_partkey IN"
    " (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%')"
    " AND ps_availqty > (SELECT 0.5 * sum(l_quantity) FROM lineitem"
    " WHERE l_partkey = ps_partkey AND l_suppkey = ps_suppkey"
    " AND l_shipdate >= '1994-01-01' AND l_shipdate < '1995-01-01'))"
    " AND s_nationkey = n_nationkey AND n_name = 'CANADA' ORDER BY s_name",
    /* Q21: suppliers who kept orders waiting */
    "SELECT s_name, count(*) AS numwait FROM supplier, lineitem l1, orders, nation"
    " WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey"
    " AND o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate"
    " AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey"
    " AND l2.l_suppkey <> l1.l_suppkey)"
    " AND NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey"
    " AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate)"
    " AND s_nationkey = n_nationkey AND n_name = 'SAUDI ARABIA'"
    " GROUP BY s_name ORDER BY numwait DESC, s_name LIMIT 100",
    /* Q22: global sales opportunity */
    "SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal"
    " FROM (SELECT substr(c_phone, 1, 2) AS cntrycode, c_acctbal FROM customer"
    " WHERE substr(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17')"
    " AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_acctbal > 0.00"
    " AND substr(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17'))"
    " AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey)) AS custsale"
    " GROUP BY cntrycode ORDER BY cntrycode",
};

/* ---- results ---------------------------------------------------------------------------- */

enum cell_kind { CELL_NULL, CELL_NUMBER, CELL_TEXT };

struct cell {
    enum cell_kind kind;
    double num;
    char *text;
};

struct result {
    size_t rows, ncols, n, cap;
    struct cell *cells;
};

static void result_add(struct result *r, enum cell_kind kind, double num, const char *text,
                       size_t len)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->cells = bench_realloc(r->cells, r->cap * sizeof *r->cells);
    }
    struct cell *c = &r->cells[r->n++];
    c->kind = kind;
    c->num = num;
    c->text = NULL;
    if (kind == CELL_TEXT) {
        c->text = bench_realloc(NULL, len + 1);
        memcpy(c->text, text, len);
        c->text[len] = 0;
    }
}

static void result_free(struct result *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->cells[i].text);
    free(r->cells);
    memset(r, 0, sizeof *r);
}

static void capture_livedb(struct result *r, const ldb_row *row)
{
    int n = ldb_row_columns(row);
    r->ncols = (size_t)n;
    r->rows++;
    for (int i = 0; i < n; i++) {
        int t = ldb_row_type(row, i);
        size_t len = 0;
        if (t == LDB_NULL) {
            result_add(r, CELL_NULL, 0, NULL, 0);
        } else if (t == LDB_INTEGER || t == LDB_REAL || t == LDB_BOOLEAN) {
            result_add(r, CELL_NUMBER, ldb_row_double(row, i), NULL, 0);
        } else if (t == LDB_TEXT) {
            const char *s = ldb_row_text(row, i, &len);
            result_add(r, CELL_TEXT, 0, s, len);
        } else {
            char buf[256];
            len = ldb_row_format(row, i, buf, sizeof buf);
            result_add(r, CELL_TEXT, 0, buf, len < sizeof buf ? len : sizeof buf - 1);
        }
    }
}

static void capture_sqlite(struct result *r, sqlite3_stmt *st)
{
    int n = sqlite3_column_count(st);
    r->ncols = (size_t)n;
    r->rows++;
    for (int i = 0; i < n; i++) {
        int t = sqlite3_column_type(st, i);
        if (t == SQLITE_NULL)
            result_add(r, CELL_NULL, 0, NULL, 0);
        else if (t == SQLITE_INTEGER || t == SQLITE_FLOAT)
            result_add(r, CELL_NUMBER, sqlite3_column_double(st, i), NULL, 0);
        else
            result_add(r, CELL_TEXT, 0, (const char *)sqlite3_column_text(st, i),
                       (size_t)sqlite3_column_bytes(st, i));
    }
}

static bool cell_eq(const struct cell *a, const struct cell *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == CELL_TEXT)
        return strcmp(a->text, b->text) == 0;
    double scale = fmax(1.0, fmax(fabs(a->num), fabs(b->num)));
    return fabs(a->num - b->num) <= 1e-9 * scale;
}

static void cell_format(const struct cell *c, char *buf, size_t size)
{
    if (c->kind == CELL_NULL)
        snprintf(buf, size, "NULL");
    else if (c->kind == CELL_NUMBER)
        snprintf(buf, size, "%.17g", c->num);
    else
        snprintf(buf, size, "'%s'", c->text);
}

/* Prints the first difference loudly; returns whether the results agree. */
static bool results_agree(const char *name, const struct result *live, const struct result *lite)
{
    if (live->rows != lite->rows || (live->rows && live->ncols != lite->ncols)) {
        printf("# MISMATCH tpch %s: livedb %zu rows x %zu columns, SQLite %zu x %zu\n", name,
               live->rows, live->ncols, lite->rows, lite->ncols);
        return false;
    }
    for (size_t i = 0; i < live->n; i++) {
        if (cell_eq(&live->cells[i], &lite->cells[i]))
            continue;
        char a[160], b[160];
        cell_format(&live->cells[i], a, sizeof a);
        cell_format(&lite->cells[i], b, sizeof b);
        printf("# MISMATCH tpch %s: row %zu column %zu: livedb %s, SQLite %s\n", name,
               i / live->ncols + 1, i % live->ncols + 1, a, b);
        return false;
    }
    return true;
}

/* ---- running ------------------------------------------------------------------------------ */

enum outcome { RUN_OK, RUN_STOPPED, RUN_ERROR };

struct run {
    enum outcome how;
    double ms;
    char err[512];
};

/* Q11's FRACTION. */
static double fraction(void)
{
    return 0.0001 / opt.scale;
}

static struct run run_livedb(ldb *db, const char *sql, struct result *out)
{
    struct run r = { RUN_OK, 0, "" };
    uint64_t t0 = bench_ns();
    deadline = t0 + opt.cap_ns;
    ldb_stmt *st = NULL;
    int rc = ldb_prepare(db, sql, -1, &st, NULL);
    if (rc == LDB_OK) {
        if (ldb_bind_parameter_count(st) > 0)
            ldb_bind_double(st, 1, fraction());
        while ((rc = ldb_step(st)) == LDB_ROW)
            if (out)
                capture_livedb(out, ldb_stmt_row(st));
    }
    r.ms = (double)(bench_ns() - t0) / 1e6;
    deadline = UINT64_MAX;
    if (rc == LDB_INTERRUPT)
        r.how = RUN_STOPPED;
    else if (rc != LDB_DONE && rc != LDB_OK)
        r.how = RUN_ERROR;
    snprintf(r.err, sizeof r.err, "%s", r.how == RUN_ERROR ? ldb_errmsg(db) : "");
    if (st)
        ldb_finalize(st);
    return r;
}

static struct run run_sqlite(sqlite3 *lite, const char *sql, struct result *out)
{
    struct run r = { RUN_OK, 0, "" };
    uint64_t t0 = bench_ns();
    deadline = t0 + opt.cap_ns;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(lite, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        if (sqlite3_bind_parameter_count(st) > 0)
            sqlite3_bind_double(st, 1, fraction());
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            if (out)
                capture_sqlite(out, st);
    }
    r.ms = (double)(bench_ns() - t0) / 1e6;
    deadline = UINT64_MAX;
    if (rc == SQLITE_INTERRUPT)
        r.how = RUN_STOPPED;
    else if (rc != SQLITE_DONE)
        r.how = RUN_ERROR;
    snprintf(r.err, sizeof r.err, "%s", r.how == RUN_ERROR ? sqlite3_errmsg(lite) : "");
    sqlite3_finalize(st);
    return r;
}

static struct run run_engine(struct engines *e, bool lite, const char *sql, struct result *out)
{
    return lite ? run_sqlite(e->lite, sql, out) : run_livedb(e->db, sql, out);
}

/* Times sql on both engines: a warm run each (rows into live and lite),
 * then 3 rounds alternating the engines, so that a change in the machine's
 * load hits both; an engine whose warm run failed or took over 5 s is not
 * run again and keeps the warm run's time. ms becomes the median. */
static void time_query(struct engines *e, const char *sql, struct run out[2],
                       struct result res[2])
{
    double ms[2][3];
    bool again[2];
    for (int k = 0; k < 2; k++) {
        out[k] = run_engine(e, k, sql, &res[k]);
        again[k] = out[k].how == RUN_OK && out[k].ms <= 5000;
        if (k == 0 && out[0].how == RUN_ERROR)
            return; /* livedb cannot run it: nothing to compare */
    }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++)
            if (again[k])
                ms[k][i] = run_engine(e, k, sql, NULL).ms;
    for (int k = 0; k < 2; k++)
        if (again[k])
            out[k].ms = bench_quantile(ms[k], 3, 0.5);
}

static struct {
    int ran, not_run, stopped, mismatches;
    int slowest;          /* query index, -1 for none */
    double slowest_ratio; /* a stopped query counts as cap / SQLite's time */
    bool slowest_stopped;
    int timed;            /* queries with a ratio (both engines finished) */
    double log_ratios;    /* over those, for the geometric mean */
} sum = { .slowest = -1 };

static void print_lines(const char *name, double live_ms, double lite_ms, double ratio)
{
    char line[64];
    snprintf(line, sizeof line, "tpch.%s.livedb_ms", name);
    bench_print(line, live_ms, "ms");
    snprintf(line, sizeof line, "tpch.%s.sqlite_ms", name);
    bench_print(line, lite_ms, "ms");
    snprintf(line, sizeof line, "tpch.%s.ratio", name);
    bench_print(line, ratio, "x");
}

static void print_plan(ldb *db, const char *sql)
{
    char text[8192];
    snprintf(text, sizeof text, "EXPLAIN QUERY PLAN %s", sql);
    ldb_stmt *st;
    if (ldb_prepare(db, text, -1, &st, NULL) != LDB_OK) {
        printf("# (no plan: %s)\n", ldb_errmsg(db));
        return;
    }
    while (ldb_step(st) == LDB_ROW) {
        const ldb_row *row = ldb_stmt_row(st);
        ldb_row_format(row, ldb_row_columns(row) - 1, text, sizeof text);
        printf("#   %s\n", text);
    }
    ldb_finalize(st);
}

static void bench_query(struct engines *e, int q)
{
    char name[8];
    snprintf(name, sizeof name, "q%d", q + 1);
    if (!selected(name))
        return;
    struct result res[2] = { { 0 }, { 0 } };
    struct run runs[2];
    time_query(e, queries[q], runs, res);
    struct run lv = runs[0], ls = runs[1];
    if (lv.how == RUN_ERROR) {
        printf("# tpch %s does not run: %s\n", name, lv.err);
        fflush(stdout);
        sum.not_run++;
        result_free(&res[0]);
        return;
    }
    if (ls.how == RUN_ERROR)
        bench_die(queries[q], ls.err);
    if (lv.how == RUN_OK && ls.how == RUN_OK && !results_agree(name, &res[0], &res[1]))
        sum.mismatches++;
    bool stopped = lv.how == RUN_STOPPED;
    double ratio = !stopped && ls.how == RUN_OK ? lv.ms / ls.ms : -1;
    if (stopped) {
        printf("# tpch %s: livedb stopped after %.0f s\n", name, (double)opt.cap_ns / 1e9);
        sum.stopped++;
    } else {
        sum.ran++;
    }
    if (ratio > 0) {
        sum.timed++;
        sum.log_ratios += log(ratio);
    }
    print_lines(name, stopped ? -1 : lv.ms, ls.how == RUN_OK ? ls.ms : -1, ratio);
    if (opt.plans)
        print_plan(e->db, queries[q]);
    double eff = stopped && ls.how == RUN_OK ? (double)opt.cap_ns / 1e6 / ls.ms : ratio;
    if (eff > sum.slowest_ratio || sum.slowest < 0) {
        sum.slowest = q;
        sum.slowest_ratio = eff;
        sum.slowest_stopped = stopped;
    }
    result_free(&res[0]);
    result_free(&res[1]);
}

static void print_summary(struct engines *e)
{
    printf("# %d ran, %d do not run, %d stopped at the cap, %d results differ\n", sum.ran,
           sum.not_run, sum.stopped, sum.mismatches);
    bench_print("tpch.ran", sum.ran, "queries");
    bench_print("tpch.not_run", sum.not_run, "queries");
    bench_print("tpch.stopped", sum.stopped, "queries");
    bench_print("tpch.mismatches", sum.mismatches, "queries");
    if (sum.timed)
        bench_print("tpch.geomean_ratio", exp(sum.log_ratios / sum.timed), "x");
    if (sum.slowest < 0)
        return;
    bench_print("tpch.slowest_ratio", sum.slowest_ratio, "x");
    printf("# slowest ratio: q%d%s; its livedb plan:\n", sum.slowest + 1,
           sum.slowest_stopped ? " (stopped at the cap: the ratio is a lower bound)" : "");
    print_plan(e->db, queries[sum.slowest]);
}

int main(int argc, char **argv)
{
    int rc = parse_args(argc, argv);
    if (rc)
        return rc;
    dates_init();
    struct engines e;
    open_engines(&e);
    struct sizes n = sizes_for(opt.scale);
    printf("# bench_tpch: scale %g, seed %llu, cap %.0f s per run\n", opt.scale,
           (unsigned long long)opt.seed, (double)opt.cap_ns / 1e9);
    uint64_t t0 = bench_ns();
    load(&e);
    printf("# loaded %lld parts, %lld suppliers, %lld customers, %lld orders in %.1f s"
           " (both engines)\n",
           (long long)n.part, (long long)n.supplier, (long long)n.customer,
           (long long)n.orders, (double)(bench_ns() - t0) / 1e9);
    fflush(stdout);
    for (int q = 0; q < 22; q++)
        bench_query(&e, q);
    print_summary(&e);
    ldb_close(e.db);
    sqlite3_close(e.lite);
    free(opt.only);
    return sum.mismatches ? 1 : 0;
}
