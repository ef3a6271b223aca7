/*
 * test_storage_basic.c - tables, keys, affinity, constraint messages, the
 * catalog, transactions and savepoints, read-only tables: each rule of
 * docs/STORAGE.md on small hand-made cases.
 */
#include "storage_util.h"

static struct store *open_store(void)
{
    struct store *s;
    CHECK(store_open(&s) == LDB_OK);
    return s;
}

/* t(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL) */
static struct table *people(struct store *s)
{
    struct column_def cols[3] = { COL("id", COL_INTEGER), COL("name", COL_TEXT),
                                  COL("score", COL_REAL) };
    cols[1].not_null = true;
    static const uint32_t pk[1] = { 0 };
    return make_table(s, "t", cols, 3, pk, 1);
}

static void keys_and_lookup(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    value v[3] = { V_I(7), V_T("ann"), V_R(1.5) };
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    v[0] = V_I(3);
    v[1] = V_T("bob");
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK_INT(table_count(t), 2);
    value k = V_I(7);
    row *r = table_lookup(t, &k);
    value ann = V_T("ann");
    CHECK(r && value_identical(&r->cols[1], &ann));
    k = V_R(3.0); /* canonical equality: 3.0 finds 3 */
    CHECK(table_lookup(t, &k) != NULL);
    k = V_I(99);
    CHECK(table_lookup(t, &k) == NULL);

    /* NULL for an INTEGER PRIMARY KEY: max + 1. */
    v[0] = V_N();
    v[1] = V_T("cy");
    CHECK(store_stmt_begin(s) == LDB_OK);
    row *out;
    CHECK(table_insert(s, t, v, &out) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    k = V_I(8);
    CHECK(table_lookup(t, &k) != NULL);

    /* Duplicate key: message and the conflicting row. */
    v[0] = V_I(3);
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(table_insert(s, t, v, &out) == LDB_CONSTRAINT);
    CHECK_STR(store_errmsg(s), "UNIQUE constraint failed: t.id");
    k = V_I(3);
    CHECK(out == table_lookup(t, &k));
    CHECK(store_stmt_end(s, LDB_CONSTRAINT) == LDB_CONSTRAINT);
    CHECK_INT(table_count(t), 3);

    /* NOT NULL. */
    v[0] = V_I(10);
    v[1] = V_N();
    CHECK(stmt_insert(s, t, v) == LDB_CONSTRAINT);
    CHECK_STR(store_errmsg(s), "NOT NULL constraint failed: t.name");

    /* Update changing the key, then delete. */
    CHECK(store_stmt_begin(s) == LDB_OK);
    k = V_I(3);
    row *old = table_lookup(t, &k);
    value nv[3] = { V_I(30), V_T("bob"), V_R(2) };
    CHECK(table_update(s, t, old, nv, &out) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK(table_lookup(t, &k) == NULL);
    k = V_I(30);
    CHECK(table_lookup(t, &k) == out);
    CHECK(value_type(&out->cols[2]) == LDB_REAL); /* 2 converted to 2.0 */
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(table_delete(s, t, out) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK_INT(table_count(t), 2);
    CHECK(store_check(s) == NULL);

    /* Writes outside a statement are refused. */
    CHECK(table_insert(s, t, v, NULL) == LDB_MISUSE);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

static void hidden_rowid(void)
{
    struct store *s = open_store();
    struct column_def cols[2] = { COL("a", COL_ANY), COL("rowid", COL_TEXT) };
    struct table *t = make_table(s, "h", cols, 2, NULL, 0);
    const struct schema *sc = table_schema(t);
    CHECK_INT(sc->ncols, 3);
    CHECK_INT(sc->nvisible, 2);
    CHECK(sc->cols[2].hidden);
    CHECK_STR(sc->cols[2].name, "_rowid_"); /* "rowid" is declared */
    CHECK_INT(sc->pk[0], 2);
    value v[2] = { V_I(1), V_T("x") };
    for (int i = 0; i < 3; i++)
        CHECK(stmt_insert(s, t, v) == LDB_OK);
    /* Rowids 1..3; deleting the last does not reuse it. */
    value k = V_I(3);
    row *r = table_lookup(t, &k);
    CHECK(r != NULL);
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(table_delete(s, t, r) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    k = V_I(4);
    CHECK(table_lookup(t, &k) != NULL);
    /* A rolled-back insert gives its rowid back. */
    CHECK(store_begin(s) == LDB_OK);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK(store_rollback(s) == LDB_OK);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    k = V_I(5);
    CHECK(table_lookup(t, &k) != NULL);
    CHECK(store_check(s) == NULL);
    store_close(s);
}

/* ---- affinity ------------------------------------------------------------------ */

struct affinity_case {
    enum col_type type;
    value in;
    int rc;
    const char *out; /* value_format of the stored value, or NULL */
    enum ldb_type out_type;
};

static void check_affinity_case(const struct affinity_case *c)
{
    struct column col = { (char *)"c", c->type, LDB_COLL_BINARY, false, false, false, { { 0 } } };
    value out;
    int rc = column_coerce(&col, &c->in, &out);
    CHECK_INT(rc, c->rc);
    if (rc != LDB_OK)
        return;
    strbuf sb = STRBUF_INIT;
    value_format(&sb, &out);
    CHECK_STR(sb_str(&sb), c->out);
    CHECK_INT(value_type(&out), c->out_type);
    sb_free(&sb);
    value_release(&out);
}

static void affinity(void)
{
    const struct affinity_case cases[] = {
        { COL_INTEGER, V_I(5), LDB_OK, "5", LDB_INTEGER },
        { COL_INTEGER, V_R(5.0), LDB_OK, "5", LDB_INTEGER },
        { COL_INTEGER, V_R(-0.0), LDB_OK, "0", LDB_INTEGER },
        { COL_INTEGER, V_R(5.5), LDB_TYPE, NULL, 0 },
        { COL_INTEGER, V_R(1e300), LDB_TYPE, NULL, 0 },
        { COL_INTEGER, V_T("12"), LDB_OK, "12", LDB_INTEGER },
        { COL_INTEGER, V_T(" 12 "), LDB_OK, "12", LDB_INTEGER },
        { COL_INTEGER, V_T("1e3"), LDB_OK, "1000", LDB_INTEGER },
        { COL_INTEGER, V_T("1.5"), LDB_TYPE, NULL, 0 },
        { COL_INTEGER, V_T("abc"), LDB_TYPE, NULL, 0 },
        { COL_INTEGER, V_T("0x10"), LDB_TYPE, NULL, 0 },
        { COL_INTEGER, V_B(true), LDB_OK, "1", LDB_INTEGER },
        { COL_INTEGER, V_N(), LDB_OK, "NULL", LDB_NULL },
        { COL_REAL, V_I(3), LDB_OK, "3.0", LDB_REAL },
        { COL_REAL, V_T("2.5"), LDB_OK, "2.5", LDB_REAL },
        { COL_REAL, V_T("7"), LDB_OK, "7.0", LDB_REAL },
        { COL_REAL, V_T("x"), LDB_TYPE, NULL, 0 },
        { COL_REAL, V_B(false), LDB_TYPE, NULL, 0 },
        { COL_TEXT, V_T("abc"), LDB_OK, "abc", LDB_TEXT },
        { COL_TEXT, V_I(42), LDB_OK, "42", LDB_TEXT },
        { COL_TEXT, V_R(0.5), LDB_OK, "0.5", LDB_TEXT },
        { COL_TEXT, V_R(2), LDB_OK, "2.0", LDB_TEXT },
        { COL_TEXT, V_B(true), LDB_TYPE, NULL, 0 },
        { COL_BOOLEAN, V_B(true), LDB_OK, "true", LDB_BOOLEAN },
        { COL_BOOLEAN, V_I(0), LDB_OK, "false", LDB_BOOLEAN },
        { COL_BOOLEAN, V_I(2), LDB_TYPE, NULL, 0 },
        { COL_BOOLEAN, V_T("true"), LDB_TYPE, NULL, 0 },
        { COL_BLOB, V_T("x"), LDB_TYPE, NULL, 0 },
        { COL_NUMERIC, V_T("12"), LDB_OK, "12", LDB_INTEGER },
        { COL_NUMERIC, V_T("1.25"), LDB_OK, "1.25", LDB_REAL },
        { COL_NUMERIC, V_R(3.0), LDB_OK, "3.0", LDB_REAL },
        { COL_NUMERIC, V_T("ten"), LDB_TYPE, NULL, 0 },
        { COL_NUMERIC, V_B(true), LDB_OK, "1", LDB_INTEGER },
        { COL_ANY, V_T("12"), LDB_OK, "12", LDB_TEXT },
        { COL_ANY, V_B(false), LDB_OK, "false", LDB_BOOLEAN },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_affinity_case(&cases[i]);

    value blob;
    CHECK(value_blob(&blob, "\x01\x02", 2) == LDB_OK);
    struct affinity_case b[] = { { COL_BLOB, blob, LDB_OK, "X'0102'", LDB_BLOB },
                                 { COL_TEXT, blob, LDB_TYPE, NULL, 0 } };
    check_affinity_case(&b[0]);
    check_affinity_case(&b[1]);

    CHECK(col_type_from_decl("VARCHAR(20)", 11) == COL_TEXT);
    CHECK(col_type_from_decl("bigint", 6) == COL_INTEGER);
    CHECK(col_type_from_decl("DOUBLE PRECISION", 16) == COL_REAL);
    CHECK(col_type_from_decl("boolean", 7) == COL_BOOLEAN);
    CHECK(col_type_from_decl("", 0) == COL_ANY);
    CHECK(col_type_from_decl("DECIMAL(10,2)", 13) == COL_NUMERIC);
    CHECK(col_type_from_decl("blob", 4) == COL_BLOB);
}

static void type_error_messages(void)
{
    struct store *s = open_store();
    struct table *t = people(s);
    value v[3] = { V_T("abc"), V_T("x"), V_N() };
    CHECK(stmt_insert(s, t, v) == LDB_TYPE);
    CHECK_STR(store_errmsg(s), "cannot store TEXT 'abc' in INTEGER column t.id");
    v[0] = V_I(1);
    v[2] = V_T("much more than forty characters of text in a real column");
    CHECK(stmt_insert(s, t, v) == LDB_TYPE);
    CHECK_STR(store_errmsg(s), "cannot store TEXT 'much more than forty characters of text ...' "
                               "in REAL column t.score");
    value_release(&v[2]);
    CHECK_INT(table_count(t), 0);
    store_close(s);
}

/* ---- unique indexes and constraints --------------------------------------------------- */

static void unique_constraints(void)
{
    struct store *s = open_store();
    struct column_def cols[3] = { COL("a", COL_INTEGER), COL("b", COL_TEXT), COL("c", COL_TEXT) };
    cols[2].coll = LDB_COLL_NOCASE;
    static const uint32_t ub[2] = { 1, 2 };
    struct unique_def u[1] = { { ub, 2 } };
    static const uint32_t pk[1] = { 0 };
    struct table_def def = { "u", cols, 3, pk, 1, u, 1, "CREATE TABLE u(...)", false, false };
    struct table *t;
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_create_table(s, &def, &t) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK_STR(table_sql(t), "CREATE TABLE u(...)");
    CHECK_INT(table_index_count(t), 1);
    struct table_index *ix = table_index_at(t, 0);
    CHECK(ix->unique && ix->automatic);
    CHECK(store_find_index(s, "AUTOINDEX_U_1") == ix);

    value v[3] = { V_I(1), V_T("x"), V_T("Yes") };
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    v[0] = V_I(2);
    v[2] = V_T("yes"); /* NOCASE column: equal */
    CHECK(stmt_insert(s, t, v) == LDB_CONSTRAINT);
    CHECK_STR(store_errmsg(s), "UNIQUE constraint failed: u.b, u.c");
    v[1] = V_N(); /* NULLs are distinct */
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    v[0] = V_I(3);
    CHECK(stmt_insert(s, t, v) == LDB_OK);

    /* An update that keeps its own unique key is no conflict. */
    CHECK(store_stmt_begin(s) == LDB_OK);
    value k = V_I(1);
    row *r = table_lookup(t, &k), *out;
    value nv[3] = { V_I(1), V_T("x"), V_T("YES") };
    CHECK(table_update(s, t, r, nv, &out) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);

    /* A unique index over duplicates cannot be created. */
    struct key_part p = PART(2, false);
    p.coll = LDB_COLL_NOCASE;
    struct index_def d = { "uc", INDEX_ORDERED, true, &p, 1, NULL };
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_create_index(s, t, &d, NULL) == LDB_CONSTRAINT);
    CHECK_STR(store_errmsg(s), "UNIQUE constraint failed: u.c");
    CHECK(store_stmt_end(s, LDB_CONSTRAINT) == LDB_CONSTRAINT);
    CHECK_INT(table_index_count(t), 1);

    /* The automatic index cannot be dropped. */
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_drop_index(s, ix) == LDB_ERROR);
    CHECK(store_stmt_end(s, LDB_ERROR) == LDB_ERROR);

    /* Hash unique index. */
    struct key_part hp = PART(0, false);
    struct table_index *hx = make_index(s, t, "ha", INDEX_HASH, true, &hp, 1);
    v[0] = V_I(3);
    v[1] = V_T("new");
    v[2] = V_T("new");
    CHECK(stmt_insert(s, t, v) == LDB_CONSTRAINT);
    struct index_lookup it;
    value key = V_I(2);
    row *found = index_lookup_first(hx, &key, 1, &it);
    CHECK(found && index_lookup_next(&it) == NULL);
    CHECK(store_check(s) == NULL);
    store_close(s);
}

/* ---- catalog and DDL in transactions --------------------------------------------------- */

static void catalog(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    CHECK(store_find_table(s, "T") == t);
    struct column_def cols[1] = { COL("x", COL_ANY) };
    struct table_def def = { "t", cols, 1, NULL, 0, NULL, 0, NULL, false, false };
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_create_table(s, &def, NULL) == LDB_ERROR);
    CHECK_STR(store_errmsg(s), "table t already exists");
    struct column_def dup[2] = { COL("x", COL_ANY), COL("X", COL_ANY) };
    struct table_def def2 = { "d", dup, 2, NULL, 0, NULL, 0, NULL, false, false };
    CHECK(store_create_table(s, &def2, NULL) == LDB_ERROR);
    CHECK_STR(store_errmsg(s), "duplicate column name: X");
    CHECK(store_stmt_end(s, LDB_ERROR) == LDB_ERROR);

    /* Create, fill, index and drop inside a transaction; roll back. */
    uint64_t version = store_schema_version(s);
    CHECK(store_begin(s) == LDB_OK);
    def.name = "n";
    struct table *n;
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_create_table(s, &def, &n) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    value v[3] = { V_I(1), V_T("a"), V_N() };
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    struct key_part p = PART(1, false);
    make_index(s, t, "tn", INDEX_ORDERED, false, &p, 1);
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_drop_table(s, t) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK(store_find_table(s, "t") == NULL);
    CHECK(store_find_index(s, "tn") == NULL);
    CHECK(store_rollback(s) == LDB_OK);
    CHECK(store_find_table(s, "n") == NULL);
    CHECK(store_find_table(s, "t") == t);
    CHECK_INT(table_count(t), 0);
    CHECK_INT(table_index_count(t), 0);
    CHECK(store_schema_version(s) > version);
    CHECK(store_check(s) == NULL);

    /* Drop committed. */
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_drop_table(s, t) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK_INT(store_table_count(s), 0);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

static void readonly_tables(void)
{
    struct store *s = open_store();
    struct table *t = people(s);
    table_set_readonly(t, true);
    value v[3] = { V_I(1), V_T("a"), V_N() };
    CHECK(stmt_insert(s, t, v) == LDB_ERROR);
    CHECK_STR(store_errmsg(s), "table t may not be modified");
    store_enter_internal(s);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    store_leave_internal(s);
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_drop_table(s, t) == LDB_ERROR);
    CHECK(store_stmt_end(s, LDB_ERROR) == LDB_ERROR);
    CHECK_INT(table_count(t), 1);
    store_close(s);
}

/* ---- transactions ------------------------------------------------------------------- */

static int64_t count_rows(struct table *t) { return (int64_t)table_count(t); }

static void savepoints(void)
{
    struct store *s = open_store();
    struct table *t = people(s);
    value v[3] = { V_I(1), V_T("a"), V_N() };
    CHECK(store_commit(s) == LDB_ERROR);
    CHECK_STR(store_errmsg(s), "cannot commit - no transaction is active");
    CHECK(store_begin(s) == LDB_OK);
    CHECK(store_begin(s) == LDB_ERROR);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK(store_savepoint(s, "a") == LDB_OK);
    v[0] = V_I(2);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK(store_savepoint(s, "b") == LDB_OK);
    v[0] = V_I(3);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK(store_rollback_to(s, "A") == LDB_OK); /* case-insensitive; keeps a */
    CHECK_INT(count_rows(t), 1);
    CHECK(store_release(s, "b") == LDB_ERROR);
    CHECK_STR(store_errmsg(s), "no such savepoint: b");
    v[0] = V_I(4);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK(store_rollback_to(s, "a") == LDB_OK); /* still there */
    CHECK_INT(count_rows(t), 1);
    CHECK(store_release(s, "a") == LDB_OK);
    CHECK(store_in_transaction(s));
    CHECK(store_commit(s) == LDB_OK);
    CHECK(!store_in_transaction(s));

    /* SAVEPOINT outside a transaction starts one; releasing it commits. */
    CHECK(store_savepoint(s, "x") == LDB_OK);
    CHECK(store_in_explicit_transaction(s));
    v[0] = V_I(5);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK(store_release(s, "x") == LDB_OK);
    CHECK(!store_in_transaction(s));
    CHECK_INT(count_rows(t), 2);

    /* A statement that fails part-way leaves no trace. */
    CHECK(store_begin(s) == LDB_OK);
    CHECK(store_stmt_begin(s) == LDB_OK);
    v[0] = V_I(6);
    CHECK(table_insert(s, t, v, NULL) == LDB_OK);
    v[0] = V_I(1);
    CHECK(table_insert(s, t, v, NULL) == LDB_CONSTRAINT);
    CHECK(store_stmt_end(s, LDB_CONSTRAINT) == LDB_CONSTRAINT);
    CHECK_INT(count_rows(t), 2);
    CHECK(store_in_transaction(s));
    CHECK(store_commit(s) == LDB_OK);
    CHECK(store_check(s) == NULL);
    store_close(s);
}

/* ---- change capture API ------------------------------------------------------------- */

static int self_removals;

static int unsubscribe_self(void *ctx, struct store *st, const struct delta *d)
{
    (void)d;
    self_removals++;
    store_unsubscribe(st, *(struct subscription **)ctx);
    return LDB_OK;
}

/* Writes one more row on every call: never settles. */
static int endless(void *ctx, struct store *st, const struct delta *d)
{
    (void)d;
    struct table *t = ctx;
    value v[3] = { V_N(), V_T("more"), V_N() };
    return table_insert(st, t, v, NULL);
}

static void capture_api(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    CHECK_INT(schema_column(table_schema(t), "NAME"), 1);
    CHECK_INT(schema_column(table_schema(t), "nope"), -1);

    /* Pull by mark: insert then update = insert of the final row. */
    CHECK(store_begin(s) == LDB_OK);
    struct store_mark m = store_mark(s);
    value v[3] = { V_I(1), V_T("a"), V_N() };
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK(store_stmt_begin(s) == LDB_OK);
    value k = V_I(1);
    value nv[3] = { V_I(1), V_T("b"), V_R(1) };
    row *out;
    CHECK(table_update(s, t, table_lookup(t, &k), nv, &out) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    struct delta *d;
    CHECK(store_changes_since(s, m, &d) == LDB_OK);
    CHECK_INT(d->nchanges, 1);
    const struct table_delta *td = delta_for_table(d, t);
    CHECK(td && td->n == 1 && !td->changes[0].old && td->changes[0].new_row == out);
    delta_free(d);
    CHECK(store_log_bytes(s) > 0);
    CHECK(store_savepoint(s, "p") == LDB_OK);
    CHECK(store_rollback_to(s, "p") == LDB_OK);
    CHECK(store_changes_since(s, m, &d) == LDB_MISUSE); /* stale after ROLLBACK TO */
    CHECK(store_commit(s) == LDB_OK);

    /* Accounting. */
    CHECK(table_bytes(t) > table_count(t) * sizeof(row));
    struct key_part p = PART(1, false);
    struct table_index *ix = make_index(s, t, "n", INDEX_ORDERED, false, &p, 1);
    CHECK(index_bytes(ix) > 0);
    struct index_cursor c;
    CHECK(index_seek_row(ix, out, IX_GE, &c) && index_cursor_row(&c) == out);
    CHECK(!index_seek_row(ix, out, IX_GT, &c));

    /* A hook may unsubscribe itself. */
    struct subscription *sub;
    static const struct store_hooks self_hooks = { .statement = unsubscribe_self };
    CHECK(store_subscribe(s, SUB_STATEMENT, &self_hooks, &sub, &sub) == LDB_OK);
    v[0] = V_I(2);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    v[0] = V_I(3);
    CHECK(stmt_insert(s, t, v) == LDB_OK);
    CHECK_INT(self_removals, 1);

    /* A hook that always writes fails its statement after the round limit. */
    static const struct store_hooks endless_hooks = { .statement = endless };
    CHECK(store_subscribe(s, SUB_STATEMENT, &endless_hooks, t, &sub) == LDB_OK);
    size_t before = table_count(t);
    v[0] = V_I(4);
    CHECK(stmt_insert(s, t, v) == LDB_ERROR);
    CHECK_STR(store_errmsg(s), "statement hooks did not settle after 64 rounds");
    CHECK_INT(table_count(t), before);
    store_unsubscribe(s, sub);
    CHECK(store_check(s) == NULL);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

/* ---- the hooks beyond deltas: settled, published, index_dropped, check_drop ---- */

/* A subscriber that logs which hooks ran, one letter each (s statement,
 * r rollback, z settled, p prepare, f finish, P published, x index
 * dropped, c check drop), and what the store showed then. */
struct recorder {
    char log[256];
    struct table *t;              /* counted at settled */
    size_t rows_at_settle;
    struct store_mark mark_at_settle;
    bool txn_at_publish, stmt_at_publish;
    int write_rc, begin_rc, subscribe_rc; /* tried from published */
    struct table *dropped_of;
    struct table_index *dropped;
    bool dropped_listed;          /* still in its table's index list */
    int index_rc;                 /* what index_dropped returns */
    struct table *write_to;       /* index_dropped writes a row here */
    int64_t writes;
    const struct table *refuse;   /* check_drop refuses it */
    int check_write_rc;           /* a write tried from check_drop */
    struct subscription *sub;
    bool unsubscribe_at_publish;
};

static void note(struct recorder *r, char c)
{
    size_t n = strlen(r->log);
    if (n + 1 < sizeof r->log) {
        r->log[n] = c;
        r->log[n + 1] = '\0';
    }
}

static int rec_statement(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    (void)d;
    note(ctx, 's');
    return LDB_OK;
}

static void rec_rollback(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    (void)d;
    note(ctx, 'r');
}

static void rec_settled(void *ctx, struct store *s)
{
    struct recorder *r = ctx;
    note(r, 'z');
    r->rows_at_settle = r->t ? table_count(r->t) : 0;
    r->mark_at_settle = store_mark(s);
}

static int rec_prepare(void *ctx, struct store *s, const struct delta *d)
{
    (void)s;
    (void)d;
    note(ctx, 'p');
    return LDB_OK;
}

static void rec_finish(void *ctx, struct store *s, bool committed)
{
    (void)s;
    note(ctx, committed ? 'f' : '!');
}

static void rec_published(void *ctx, struct store *s)
{
    struct recorder *r = ctx;
    note(r, 'P');
    r->txn_at_publish = store_in_transaction(s);
    r->stmt_at_publish = store_in_statement(s);
    value v[3] = { V_I(99), V_T("p"), V_N() };
    r->write_rc = r->t ? table_insert(s, r->t, v, NULL) : LDB_OK;
    r->begin_rc = store_stmt_begin(s);
    struct subscription *sub;
    static const struct store_hooks none = { .settled = NULL };
    r->subscribe_rc = store_subscribe(s, SUB_COMMIT, &none, r, &sub);
    if (r->unsubscribe_at_publish) {
        store_unsubscribe(s, r->sub);
        r->sub = NULL;
    }
}

static int rec_index_dropped(void *ctx, struct store *s, struct table *t, struct table_index *ix)
{
    struct recorder *r = ctx;
    note(r, 'x');
    r->dropped_of = t;
    r->dropped = ix;
    r->dropped_listed = false;
    for (size_t i = 0; i < table_index_count(t); i++)
        r->dropped_listed |= table_index_at(t, i) == ix;
    if (r->write_to) {
        value v[3] = { V_I(70 + ++r->writes), V_T("ix"), V_N() };
        int rc = table_insert(s, r->write_to, v, NULL);
        if (rc)
            return rc;
    }
    return r->index_rc ? store_error(s, r->index_rc, "index hook failed") : LDB_OK;
}

static int rec_check_drop(void *ctx, struct store *s, struct table *t)
{
    struct recorder *r = ctx;
    note(r, 'c');
    value v[3] = { V_I(88), V_T("c"), V_N() };
    r->check_write_rc = r->t ? table_insert(s, r->t, v, NULL) : LDB_OK;
    if (t == r->refuse)
        return store_error(s, LDB_ERROR, "%s is needed", table_name(t));
    return LDB_OK;
}

static const struct store_hooks rec_hooks = {
    .statement = rec_statement,
    .commit_prepare = rec_prepare,
    .commit_finish = rec_finish,
    .rollback = rec_rollback,
    .settled = rec_settled,
    .published = rec_published,
    .index_dropped = rec_index_dropped,
    .check_drop = rec_check_drop,
};

static void recorder_start(struct recorder *r)
{
    r->log[0] = '\0';
}

/* One insert of key k as its own statement that ends with end_rc. */
static int insert_ending(struct store *s, struct table *t, int64_t k, int end_rc)
{
    value v[3] = { V_I(k), V_T("n"), V_N() };
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(table_insert(s, t, v, NULL) == LDB_OK);
    return store_stmt_end(s, end_rc);
}

/* settled: once per rollback (failed statement, ROLLBACK TO, ROLLBACK),
 * after the rollback hooks, with the tables restored and the mark at the
 * rolled back transaction's target; never after a commit. */
static void hook_settled(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    static struct recorder stmt_rec, commit_rec;
    memset(&stmt_rec, 0, sizeof stmt_rec);
    memset(&commit_rec, 0, sizeof commit_rec);
    stmt_rec.t = commit_rec.t = t;
    static const struct store_hooks commit_only = { .settled = rec_settled };
    struct subscription *a, *b;
    CHECK(store_subscribe(s, SUB_STATEMENT, &rec_hooks, &stmt_rec, &a) == LDB_OK);
    CHECK(store_subscribe(s, SUB_COMMIT, &commit_only, &commit_rec, &b) == LDB_OK);

    CHECK(insert_ending(s, t, 1, LDB_OK) == LDB_OK);
    CHECK_STR(stmt_rec.log, "sP");
    /* a failed statement: nothing consumed, one settle with the row gone */
    recorder_start(&stmt_rec);
    CHECK(insert_ending(s, t, 2, LDB_CONSTRAINT) == LDB_CONSTRAINT);
    CHECK_STR(stmt_rec.log, "z");
    CHECK_STR(commit_rec.log, "z");
    CHECK_INT(stmt_rec.rows_at_settle, 1);

    /* ROLLBACK TO: the deltas after the savepoint come back, then settled */
    CHECK(store_begin(s) == LDB_OK);
    struct store_mark begin = store_mark(s);
    CHECK(insert_ending(s, t, 3, LDB_OK) == LDB_OK);
    CHECK(store_savepoint(s, "p") == LDB_OK);
    struct store_mark at_p = store_mark(s);
    CHECK(insert_ending(s, t, 4, LDB_OK) == LDB_OK);
    CHECK(insert_ending(s, t, 5, LDB_OK) == LDB_OK);
    recorder_start(&stmt_rec);
    CHECK(store_rollback_to(s, "p") == LDB_OK);
    CHECK_STR(stmt_rec.log, "rrz");
    CHECK_INT(stmt_rec.rows_at_settle, 2);
    CHECK_INT(stmt_rec.mark_at_settle.txn, at_p.txn);
    CHECK_INT(stmt_rec.mark_at_settle.pos, at_p.pos);
    /* ROLLBACK: the rest comes back; settled before the transaction ends */
    recorder_start(&stmt_rec);
    CHECK(store_rollback(s) == LDB_OK);
    CHECK_STR(stmt_rec.log, "rz");
    CHECK_INT(stmt_rec.rows_at_settle, 1);
    CHECK_INT(stmt_rec.mark_at_settle.txn, begin.txn);
    CHECK_INT(stmt_rec.mark_at_settle.pos, 0);
    CHECK(!store_in_transaction(s));
    /* commits and releases settle nothing */
    recorder_start(&stmt_rec);
    recorder_start(&commit_rec);
    CHECK(store_savepoint(s, "q") == LDB_OK);
    CHECK(insert_ending(s, t, 6, LDB_OK) == LDB_OK);
    CHECK(store_release(s, "q") == LDB_OK);
    CHECK_STR(stmt_rec.log, "sP");
    CHECK_STR(commit_rec.log, "");
    store_unsubscribe(s, a);
    store_unsubscribe(s, b);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

/* published: once per commit, after commit_finish, with the store out of
 * the statement and the transaction; no writes, no transaction control,
 * no subscribing from there; unsubscribing is allowed. */
static void hook_published(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    static struct recorder r, quitter;
    memset(&r, 0, sizeof r);
    memset(&quitter, 0, sizeof quitter);
    r.t = t;
    CHECK(store_subscribe(s, SUB_COMMIT, &rec_hooks, &r, &r.sub) == LDB_OK);
    quitter.unsubscribe_at_publish = true;
    static const struct store_hooks publish_only = { .published = rec_published };
    CHECK(store_subscribe(s, SUB_COMMIT, &publish_only, &quitter, &quitter.sub) == LDB_OK);
    /* the subscriber after the one that leaves is still called */
    static struct recorder last;
    memset(&last, 0, sizeof last);
    struct subscription *c;
    CHECK(store_subscribe(s, SUB_COMMIT, &publish_only, &last, &c) == LDB_OK);

    CHECK(insert_ending(s, t, 1, LDB_OK) == LDB_OK);
    CHECK_STR(r.log, "pfP");
    CHECK_STR(quitter.log, "P");
    CHECK_STR(last.log, "P");
    CHECK(quitter.sub == NULL);
    CHECK(!r.txn_at_publish && !r.stmt_at_publish);
    CHECK_INT(r.write_rc, LDB_MISUSE);
    CHECK_INT(r.begin_rc, LDB_MISUSE);
    CHECK_INT(r.subscribe_rc, LDB_MISUSE);
    CHECK_INT(table_count(t), 1);
    /* a failed statement and a rollback publish nothing */
    recorder_start(&r);
    CHECK(insert_ending(s, t, 2, LDB_ERROR) == LDB_ERROR);
    CHECK(store_begin(s) == LDB_OK);
    CHECK(insert_ending(s, t, 2, LDB_OK) == LDB_OK);
    CHECK(store_rollback(s) == LDB_OK);
    CHECK_STR(r.log, "zz");
    /* an explicit transaction publishes at COMMIT only, also with no change */
    recorder_start(&r);
    recorder_start(&last);
    CHECK(store_begin(s) == LDB_OK);
    CHECK(insert_ending(s, t, 2, LDB_OK) == LDB_OK);
    CHECK(insert_ending(s, t, 3, LDB_OK) == LDB_OK);
    CHECK_STR(r.log, "");
    CHECK(store_commit(s) == LDB_OK);
    CHECK_STR(r.log, "pfP");
    CHECK(store_begin(s) == LDB_OK);
    CHECK(store_commit(s) == LDB_OK);
    CHECK_STR(r.log, "pfPP");
    CHECK_STR(last.log, "PP");
    store_unsubscribe(s, r.sub);
    store_unsubscribe(s, c);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

/* index_dropped: DROP INDEX (not the drop of a table) tells the
 * subscribers inside the statement, which may write; an error fails the
 * statement, whose rollback brings the index back. */
static void hook_index_dropped(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    struct key_part p = PART(1, false), q = PART(2, false);
    struct table_index *by_name = make_index(s, t, "by_name", INDEX_ORDERED, false, &p, 1);
    make_index(s, t, "by_score", INDEX_HASH, false, &q, 1);
    static struct recorder r;
    memset(&r, 0, sizeof r);
    r.write_to = t;
    struct subscription *sub;
    CHECK(store_subscribe(s, SUB_STATEMENT, &rec_hooks, &r, &sub) == LDB_OK);

    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_drop_index(s, by_name) == LDB_OK);
    CHECK_STR(r.log, "x");
    CHECK(r.dropped == by_name && r.dropped_of == t && !r.dropped_listed);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK(store_find_index(s, "by_name") == NULL);
    CHECK_INT(table_count(t), 1); /* the hook's write belongs to the statement */
    CHECK_STR(r.log, "xsP");

    /* a failing hook: the statement fails and the index comes back */
    recorder_start(&r);
    r.index_rc = LDB_NOMEM;
    struct table_index *by_score = store_find_index(s, "by_score");
    CHECK(store_stmt_begin(s) == LDB_OK);
    int rc = store_drop_index(s, by_score);
    CHECK_INT(rc, LDB_NOMEM);
    CHECK_STR(store_errmsg(s), "index hook failed");
    CHECK_INT(store_stmt_end(s, rc), LDB_NOMEM);
    CHECK(store_find_index(s, "by_score") == by_score);
    CHECK_INT(table_count(t), 1); /* and the hook's write is undone */
    CHECK_STR(r.log, "xz");

    /* dropping the table drops its indexes without telling */
    recorder_start(&r);
    r.index_rc = LDB_OK;
    r.write_to = NULL;
    CHECK(store_stmt_begin(s) == LDB_OK);
    CHECK(store_drop_table(s, t) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK_STR(r.log, "cP");
    store_unsubscribe(s, sub);
    CHECK(store_check(s) == NULL);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

/* check_drop: asked before a drop changes anything; a refusal stops it
 * with the subscriber's message; no writes from there. */
static void hook_check_drop(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    struct column_def cols[1] = { COL("x", COL_INTEGER) };
    struct table *other = make_table(s, "other", cols, 1, NULL, 0);
    static struct recorder r;
    memset(&r, 0, sizeof r);
    r.t = other;
    r.refuse = t;
    struct subscription *sub;
    CHECK(store_subscribe(s, SUB_STATEMENT, &rec_hooks, &r, &sub) == LDB_OK);

    CHECK_INT(store_check_drop(s, t), LDB_ERROR);
    CHECK_STR(store_errmsg(s), "t is needed");
    CHECK(store_stmt_begin(s) == LDB_OK);
    size_t len = store_log_length(s);
    CHECK_INT(store_drop_table(s, t), LDB_ERROR);
    CHECK_STR(store_errmsg(s), "t is needed");
    CHECK_INT(store_log_length(s), len);
    CHECK(store_find_table(s, "t") == t && !t->dropped);
    CHECK_INT(r.check_write_rc, LDB_MISUSE);
    /* the refusal comes before storage's own checks */
    table_set_readonly(t, true);
    CHECK_INT(store_drop_table(s, t), LDB_ERROR);
    CHECK_STR(store_errmsg(s), "t is needed");
    table_set_readonly(t, false);
    CHECK(store_drop_table(s, other) == LDB_OK);
    CHECK(store_stmt_end(s, LDB_OK) == LDB_OK);
    CHECK_STR(r.log, "ccccP");
    CHECK(store_find_table(s, "other") == NULL);
    CHECK_INT(table_count(t), 0);
    store_unsubscribe(s, sub);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

/* Recovery's batch link (table_link_unindexed): every row in, or with a
 * key twice (among the rows or with a stored one) none, the rows still
 * the caller's. Enough rows that the batch is sorted over several slots. */
static void link_unindexed_all_or_nothing(void)
{
    int64_t live = mem_live();
    struct store *s = open_store();
    struct table *t = people(s);
    enum { N = 3000 };
    row *rows[N];
    for (int i = 0; i < N; i++) {
        value v[3] = { V_I(i), V_T("x"), V_R(i) };
        CHECK((rows[i] = row_from(v, 3)) != NULL);
    }
    value dup[3] = { V_I(17), V_T("dup"), V_N() };
    row *extra = row_from(dup, 3), *conflict;
    row *last = rows[N - 1];
    rows[N - 1] = extra; /* key 17 twice; the last row's own is left out */
    CHECK_INT(table_link_unindexed(t, rows, N, &conflict), LDB_CONSTRAINT);
    CHECK(conflict == extra || conflict->cols[0].h.u.i == 17);
    CHECK_INT(table_count(t), 0);
    value k = V_I(5);
    CHECK(table_lookup(t, &k) == NULL);
    CHECK_INT(table_link_unindexed(t, rows, N - 1, &conflict), LDB_OK);
    CHECK_INT(table_count(t), N - 1);
    for (int i = 0; i < N - 1; i++) {
        k = V_I(i);
        CHECK(table_lookup(t, &k) == rows[i]);
    }
    CHECK_INT(table_link_unindexed(t, &extra, 1, &conflict), LDB_CONSTRAINT); /* stored */
    CHECK(conflict == rows[17]);
    row_release(extra);
    row_release(last);
    store_close(s);
    CHECK_INT(mem_live(), live);
}

TEST_MAIN(T(keys_and_lookup), T(link_unindexed_all_or_nothing), T(hidden_rowid), T(affinity), T(type_error_messages),
          T(unique_constraints), T(catalog), T(readonly_tables), T(savepoints),
          T(capture_api), T(hook_settled), T(hook_published), T(hook_index_dropped),
          T(hook_check_drop))
