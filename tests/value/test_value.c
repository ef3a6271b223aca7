/*
 * test_value.c - laws of the value order, equality and hashing; rows;
 * text and JSON forms; allocation failures in value construction.
 */
#include "test.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "value/row.h"
#include "value/value.h"

#include <math.h>
#include <stdlib.h>

static const enum ldb_collation colls[] = { LDB_COLL_BINARY, LDB_COLL_NOCASE, LDB_COLL_RTRIM };

static int sign(int c) { return (c > 0) - (c < 0); }

/* ---- random value generation -------------------------------------------- */

static const int64_t edge_ints[] = {
    0, 1, -1, 5, 42, 9007199254740992LL, 9007199254740993LL, -9007199254740993LL,
    9007199254740991LL, INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1,
    4611686018427387904LL,
};

static double edge_real(rng *r)
{
    static const double edges[] = {
        0.0, -0.0, 1.0, -1.0, 5.0, 0.5, -0.5, 1e300, -1e300, 1e-300,
        9007199254740992.0, 9007199254740994.0, 9223372036854775808.0,
        -9223372036854775808.0, 9223372036854774784.0, 4611686018427387904.0,
    };
    switch (rng_below(r, 6)) {
    case 0: return NAN;
    case 1: return rng_chance(r, 1, 2) ? INFINITY : -INFINITY;
    case 2: return (double)edge_ints[rng_below(r, sizeof edge_ints / sizeof edge_ints[0])];
    case 3: return edges[rng_below(r, sizeof edges / sizeof edges[0])];
    case 4: return (double)rng_range(r, -20, 20) / 4.0;
    default: {
        uint64_t bits = rng_next(r);
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    }
}

static void random_text_bytes(rng *r, char *buf, size_t *n)
{
    static const char alphabet[] = { 'a', 'A', 'b', 'B', ' ', '\0', 'z', (char)0xC3, (char)0xA9 };
    *n = (size_t)rng_below(r, 20);
    for (size_t i = 0; i < *n; i++)
        buf[i] = alphabet[rng_below(r, sizeof alphabet)];
}

static value random_value(rng *r, int depth)
{
    char buf[32];
    size_t n;
    value v = value_null();
    switch (rng_below(r, depth > 0 ? 9 : 7)) {
    case 0: return value_null();
    case 1: return value_bool(rng_chance(r, 1, 2));
    case 2: return value_int(edge_ints[rng_below(r, sizeof edge_ints / sizeof edge_ints[0])]);
    case 3: return value_int(rng_range(r, -10, 10));
    case 4: return value_real(edge_real(r));
    case 5:
        random_text_bytes(r, buf, &n);
        CHECK(value_text(&v, buf, n) == LDB_OK);
        return v;
    case 6:
        random_text_bytes(r, buf, &n);
        CHECK(value_blob(&v, buf, n) == LDB_OK);
        return v;
    case 7: {
        value items[3];
        size_t k = (size_t)rng_below(r, 4);
        for (size_t i = 0; i < k; i++)
            items[i] = random_value(r, depth - 1);
        CHECK(value_array(&v, items, k) == LDB_OK);
        for (size_t i = 0; i < k; i++)
            value_release(&items[i]);
        return v;
    }
    default: {
        value names[2], vals[2];
        size_t k = (size_t)rng_below(r, 3);
        for (size_t i = 0; i < k; i++) {
            CHECK(value_text(&names[i], i == 0 ? "a" : (rng_chance(r, 1, 2) ? "b" : "c"), 1) == LDB_OK);
            vals[i] = random_value(r, depth - 1);
        }
        CHECK(value_record(&v, names, vals, k) == LDB_OK);
        for (size_t i = 0; i < k; i++) {
            value_release(&names[i]);
            value_release(&vals[i]);
        }
        return v;
    }
    }
}

/* ---- order laws ---------------------------------------------------------- */

#define NV 70

static void order_laws(void)
{
    rng r;
    rng_seed(&r, test_seed());
    int64_t live0 = mem_live();
    for (int round = 0; round < 20 * test_scale(); round++) {
        value v[NV];
        for (int i = 0; i < NV; i++)
            v[i] = random_value(&r, 2);
        for (size_t ci = 0; ci < 3; ci++) {
            enum ldb_collation c = colls[ci];
            int cmp[NV][NV];
            for (int i = 0; i < NV; i++)
                for (int j = 0; j < NV; j++)
                    cmp[i][j] = sign(value_cmp(&v[i], &v[j], c));
            for (int i = 0; i < NV; i++) {
                CHECK(cmp[i][i] == 0);
                for (int j = 0; j < NV; j++) {
                    /* antisymmetry and totality */
                    CHECKF(cmp[i][j] == -cmp[j][i], "antisymmetry %d %d", i, j);
                    /* cmp == 0 iff canonical equality */
                    CHECK((cmp[i][j] == 0) == value_eq(&v[i], &v[j], c));
                    if (cmp[i][j] == 0)
                        CHECKF(value_hash(&v[i], c) == value_hash(&v[j], c),
                               "equal values hash equal (coll %d)", (int)c);
                    if (value_identical(&v[i], &v[j]))
                        for (size_t k = 0; k < 3; k++)
                            CHECK(value_eq(&v[i], &v[j], colls[k]));
                    for (int k = 0; k < NV; k++)
                        if (cmp[i][j] <= 0 && cmp[j][k] <= 0)
                            CHECKF(cmp[i][k] <= 0, "transitivity %d %d %d", i, j, k);
                }
            }
        }
        for (int i = 0; i < NV; i++)
            value_release(&v[i]);
    }
    CHECK_INT(mem_live(), live0);
}

static void exact_numbers(void)
{
    value a = value_int(9007199254740993LL), b = value_real(9007199254740992.0);
    CHECK(value_cmp(&a, &b, LDB_COLL_BINARY) > 0);
    CHECK(!value_eq(&a, &b, LDB_COLL_BINARY));
    a = value_int(INT64_MAX);
    b = value_real(9223372036854775808.0);
    CHECK(value_cmp(&a, &b, LDB_COLL_BINARY) < 0);
    a = value_int(INT64_MIN);
    b = value_real(-9223372036854775808.0);
    CHECK(value_eq(&a, &b, LDB_COLL_BINARY));
    CHECK(value_hash(&a, LDB_COLL_BINARY) == value_hash(&b, LDB_COLL_BINARY));
    a = value_int(5);
    b = value_real(5.0);
    CHECK(value_eq(&a, &b, LDB_COLL_BINARY));
    CHECK(!value_identical(&a, &b));
    CHECK(value_hash(&a, LDB_COLL_BINARY) == value_hash(&b, LDB_COLL_BINARY));
    a = value_real(-0.0);
    b = value_int(0);
    value z = value_real(0.0);
    CHECK(value_eq(&a, &b, LDB_COLL_BINARY) && value_eq(&a, &z, LDB_COLL_BINARY));
    CHECK(!value_identical(&a, &z));
    CHECK(value_hash(&a, LDB_COLL_BINARY) == value_hash(&z, LDB_COLL_BINARY));
    /* NaN: above +inf and every integer, equal to itself */
    value nan = value_real(NAN), inf = value_real(INFINITY), big = value_int(INT64_MAX);
    value nan2 = value_real(-NAN);
    CHECK(value_cmp(&nan, &inf, LDB_COLL_BINARY) > 0);
    CHECK(value_cmp(&nan, &big, LDB_COLL_BINARY) > 0);
    CHECK(value_cmp(&big, &nan, LDB_COLL_BINARY) < 0);
    CHECK(value_eq(&nan, &nan2, LDB_COLL_BINARY) && value_identical(&nan, &nan2));
    /* 2.5 between 2 and 3; -2.5 between -3 and -2 */
    value h = value_real(2.5), i2 = value_int(2), i3 = value_int(3);
    CHECK(value_cmp(&i2, &h, 0) < 0 && value_cmp(&h, &i3, 0) < 0);
    h = value_real(-2.5);
    i2 = value_int(-2);
    i3 = value_int(-3);
    CHECK(value_cmp(&i3, &h, 0) < 0 && value_cmp(&h, &i2, 0) < 0);
}

static void type_classes(void)
{
    value t, bl;
    CHECK(value_text(&t, "", 0) == LDB_OK);
    CHECK(value_blob(&bl, "", 0) == LDB_OK);
    value order[] = { value_null(), value_bool(false), value_bool(true),
                      value_real(-INFINITY), value_int(0), value_real(NAN), t, bl };
    int n = (int)(sizeof order / sizeof order[0]);
    for (int i = 0; i + 1 < n; i++)
        CHECKF(value_cmp(&order[i], &order[i + 1], 0) < 0, "class order at %d", i);
}

static void collations(void)
{
    value a, b, c, d;
    CHECK(value_text(&a, "Hello World, long text", 22) == LDB_OK);
    CHECK(value_text(&b, "hello world, LONG TEXT", 22) == LDB_OK);
    CHECK(value_text(&c, "Hello World, long text   ", 25) == LDB_OK);
    CHECK(value_text(&d, "Hello\0World", 11) == LDB_OK);
    CHECK(!value_eq(&a, &b, LDB_COLL_BINARY));
    CHECK(value_eq(&a, &b, LDB_COLL_NOCASE));
    CHECK(value_hash(&a, LDB_COLL_NOCASE) == value_hash(&b, LDB_COLL_NOCASE));
    CHECK(!value_eq(&a, &c, LDB_COLL_BINARY));
    CHECK(value_eq(&a, &c, LDB_COLL_RTRIM));
    CHECK(value_hash(&a, LDB_COLL_RTRIM) == value_hash(&c, LDB_COLL_RTRIM));
    /* an embedded NUL is a byte like any other */
    value e;
    CHECK(value_text(&e, "Hello", 5) == LDB_OK);
    CHECK(value_cmp(&e, &d, LDB_COLL_BINARY) < 0);
    size_t n;
    CHECK(value_bytes(&d, &n)[5] == '\0' && n == 11);
    value_release(&a);
    value_release(&b);
    value_release(&c);
    value_release(&d);
    value_release(&e);
}

/* ---- formatting --------------------------------------------------------- */

static void check_format(const value *v, const char *text, const char *json)
{
    strbuf sb = STRBUF_INIT;
    value_format(&sb, v);
    CHECK_STR(sb_str(&sb), text);
    sb_truncate(&sb, 0);
    value_format_json(&sb, v);
    CHECK_STR(sb_str(&sb), json);
    sb_free(&sb);
}

static void formats(void)
{
    value v = value_null();
    check_format(&v, "NULL", "null");
    v = value_int(-42);
    check_format(&v, "-42", "-42");
    v = value_real(1.0);
    check_format(&v, "1.0", "1.0");
    v = value_real(0.1);
    check_format(&v, "0.1", "0.1");
    v = value_real(1e20);
    check_format(&v, "1.0e+20", "1.0e+20");
    v = value_real(-0.0);
    check_format(&v, "-0.0", "-0.0");
    v = value_real(NAN);
    check_format(&v, "NaN", "\"NaN\"");
    v = value_real(-INFINITY);
    check_format(&v, "-Inf", "\"-Infinity\"");
    v = value_real(0.30000000000000004);
    check_format(&v, "0.30000000000000004", "0.30000000000000004");
    v = value_bool(true);
    check_format(&v, "true", "true");
    CHECK(value_text(&v, "a\"b\n\x01\xff\xc3\xa9", 8) == LDB_OK);
    check_format(&v, "a\"b\n\x01\xff\xc3\xa9", "\"a\\\"b\\n\\u0001\\ufffd\xc3\xa9\"");
    value_release(&v);
    CHECK(value_blob(&v, "\x0a\xff", 2) == LDB_OK);
    check_format(&v, "X'0AFF'", "\"\\\\x0aff\"");
    value_release(&v);
    value items[2] = { value_int(1), value_null() }, arr;
    CHECK(value_text(&items[1], "x", 1) == LDB_OK);
    CHECK(value_array(&arr, items, 2) == LDB_OK);
    check_format(&arr, "[1,\"x\"]", "[1,\"x\"]");
    value name, rec;
    CHECK(value_text(&name, "k", 1) == LDB_OK);
    CHECK(value_record(&rec, &name, &arr, 1) == LDB_OK);
    check_format(&rec, "{\"k\":[1,\"x\"]}", "{\"k\":[1,\"x\"]}");
    value_release(&items[1]);
    value_release(&arr);
    value_release(&name);
    value_release(&rec);
}

static void parse_numbers(void)
{
    value v;
    CHECK(value_parse_number(" 12 ", 4, &v) && value_type(&v) == LDB_INTEGER && v.h.u.i == 12);
    CHECK(value_parse_number("-7", 2, &v) && v.h.u.i == -7);
    CHECK(value_parse_number("1.5", 3, &v) && value_type(&v) == LDB_REAL && v.h.u.r == 1.5);
    CHECK(value_parse_number("1e3", 3, &v) && value_type(&v) == LDB_REAL && v.h.u.r == 1000.0);
    CHECK(value_parse_number(".5", 2, &v) && v.h.u.r == 0.5);
    CHECK(value_parse_number("9223372036854775808", 19, &v) && value_type(&v) == LDB_REAL);
    CHECK(!value_parse_number("12a", 3, &v));
    CHECK(!value_parse_number("", 0, &v));
    CHECK(!value_parse_number(".", 1, &v));
    CHECK(!value_parse_number("1e", 2, &v));
    CHECK(!value_parse_number("nan", 3, &v));
}

/* ---- rows ---------------------------------------------------------------- */

static void rows(void)
{
    int64_t live0 = mem_live();
    value vals[3] = { value_int(5), value_null(), value_real(-0.0) };
    CHECK(value_text(&vals[1], "a long text value here", 22) == LDB_OK);
    row *a = row_from(vals, 3);
    vals[0] = value_real(5.0);
    row *b = row_from(vals, 3);
    vals[0] = value_int(5);
    row *c = row_from(vals, 3);
    CHECK(a && b && c);
    CHECK(!row_identical(a, b));
    CHECK(row_identical(a, c));
    CHECK(row_hash(a) == row_hash(b)); /* canonical-equal rows hash equal */
    CHECK(row_hash(a) == row_hash(c));
    CHECK(row_cmp(a, b) == 0 && row_cmp(a, c) == 0);
    CHECK(row_mem(a) >= sizeof(row) + 3 * sizeof(value) + 22);
    row_retain(a);
    row_release(a);
    row_release(a);
    row_release(b);
    row_release(c);
    value_release(&vals[1]);
    CHECK_INT(mem_live(), live0);
}

/* ---- allocation failures ------------------------------------------------ */

/* Builds a nested value; every allocation failure must give LDB_NOMEM and
 * leak nothing. */
static int build_nested(value *out)
{
    value t, arr, name, rec;
    int rc = value_text(&t, "a text longer than fourteen bytes", 33);
    if (rc)
        return rc;
    rc = value_array(&arr, &t, 1);
    value_release(&t);
    if (rc)
        return rc;
    rc = value_text(&name, "field name that is long", 23);
    if (rc) {
        value_release(&arr);
        return rc;
    }
    rc = value_record(&rec, &name, &arr, 1);
    value_release(&name);
    value_release(&arr);
    if (rc)
        return rc;
    row *r = row_from(&rec, 1);
    if (!r) {
        value_release(&rec);
        return LDB_NOMEM;
    }
    *out = rec;
    row_release(r);
    return LDB_OK;
}

static void alloc_failures(void)
{
    int64_t live0 = mem_live();
    for (uint64_t n = 1;; n++) {
        value v;
        mem_fail_at(n, 0);
        int rc = build_nested(&v);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        if (!failed) {
            CHECK_INT(rc, LDB_OK);
            value_release(&v);
            CHECK_INT(mem_live(), live0);
            CHECK(n > 4);
            break;
        }
        CHECK_INT(rc, LDB_NOMEM);
        CHECK_INT(mem_live(), live0);
    }
}

/* Formatting a nested value into a caller's buffer never allocates (a
 * live query's callback reads rows while allocations may be failing): the
 * text is the same with every allocation failing, truncated to the buffer
 * and NUL-terminated, and the full length is returned at every size. */
static void format_into_buffer_without_memory(void)
{
    value v;
    CHECK_INT(build_nested(&v), LDB_OK);
    char full[256];
    size_t n = value_format_buf(&v, full, sizeof full);
    CHECK(n > 8 && n < sizeof full && strlen(full) == n);
    mem_fail_at(1, 1);
    for (size_t size = 0; size <= n + 1; size++) {
        char buf[256];
        memset(buf, 'x', sizeof buf);
        CHECK_INT(value_format_buf(&v, size ? buf : NULL, size), n);
        if (size) {
            size_t k = size - 1 < n ? size - 1 : n;
            CHECK(memcmp(buf, full, k) == 0 && buf[k] == '\0');
        }
    }
    CHECK_INT(mem_failed_count(), 0);
    mem_fail_at(0, 0);
    value_release(&v);
}

/* Items are shared by reference, so [x, x] with x = [y, y] ... is a DAG
 * whose unfolded size is 2^depth: two such values built apart compare,
 * hash and test equal through the shared objects (before, comparing them
 * walked all 2^64 leaves, as an include of includes over two rows did). */
static void shared_containers_compare_at_once(void)
{
    value leaf = value_int(7), a, b;
    CHECK_INT(value_array(&a, &leaf, 1), LDB_OK);
    for (int depth = 0; depth < 64; depth++) {
        value two[2] = { a, a }, next;
        CHECK_INT(value_array(&next, two, 2), LDB_OK);
        if (depth == 63)
            CHECK_INT(value_array(&b, two, 2), LDB_OK); /* equal, not the same object */
        value_release(&a);
        a = next;
    }
    CHECK(a.h.u.obj != b.h.u.obj);
    CHECK_INT(value_cmp(&a, &b, LDB_COLL_BINARY), 0);
    CHECK_INT(value_cmp(&a, &b, LDB_COLL_NOCASE), 0);
    CHECK_INT(value_cmp_identity(&a, &b), 0);
    CHECK(value_identical(&a, &b));
    CHECK(value_eq(&a, &b, LDB_COLL_RTRIM));
    CHECK(value_hash(&a, LDB_COLL_BINARY) == value_hash(&b, LDB_COLL_BINARY));
    CHECK(value_mem(&a) == value_mem(&b));
    CHECK(value_mem(&a) == SIZE_MAX); /* 2^64 references to count: saturated, not wrapped */
    value_release(&a);
    value_release(&b);
}

TEST_MAIN(T(order_laws), T(exact_numbers), T(type_classes), T(collations), T(formats),
          T(parse_numbers), T(rows), T(alloc_failures), T(format_into_buffer_without_memory),
          T(shared_containers_compare_at_once))
