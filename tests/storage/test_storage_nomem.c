/*
 * test_storage_nomem.c - allocation-failure sweeps: each write path runs
 * with its 1st, 2nd, ... allocation failing until it succeeds; every
 * failure must return LDB_NOMEM and leave every table and index exactly
 * as before (same row objects, same index orders), and no failure may be
 * swallowed. Paths: insert with indexes, update moving index keys (all of
 * them, or one while the others are re-pointed in place), delete,
 * create index over existing rows, drop index and table, savepoint,
 * statements whose hook writes another table, commit with subscribers.
 * Then a rollback that keeps failing stays pending and finishes later, a
 * rollback of updates that moved no index entry needs no memory, and
 * mem_live returns to its baseline after teardown.
 */
#include "storage_util.h"

#include <stdlib.h>

struct fixture {
    struct store *s;
    struct table *a, *b;
    int64_t next_id;
    struct subscription *mv, *pub;
    int published;       /* commit batches the publisher accepted */
    void *prepared;      /* what prepare allocated */
};

/* ---- a text dump of everything that must not change ---------------------------- */

static int ptr_cmp(const void *x, const void *y)
{
    uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
    return a < b ? -1 : a > b;
}

static void dump_table(strbuf *sb, struct table *t)
{
    size_t n = table_count(t), i = 0;
    uintptr_t *ptrs = malloc((n + 1) * sizeof *ptrs);
    struct table_scan sc = table_scan_begin(t);
    for (row *r; (r = table_scan_next(&sc));)
        ptrs[i++] = (uintptr_t)r;
    qsort(ptrs, n, sizeof *ptrs, ptr_cmp);
    sb_printf(sb, "table %s rows %zu rowid %lld:", t->name, n, (long long)t->rowid_max);
    for (i = 0; i < n; i++)
        sb_printf(sb, " %lx", (unsigned long)ptrs[i]);
    for (size_t k = 0; k < table_index_count(t); k++) {
        const struct table_index *ix = table_index_at(t, k);
        sb_printf(sb, "\n  index %s (%zu):", ix->name, index_count(ix));
        if (ix->kind == INDEX_ORDERED) {
            struct index_cursor c;
            for (bool on = index_first(ix, &c); on; on = index_next(&c))
                sb_printf(sb, " %lx", (unsigned long)(uintptr_t)index_cursor_row(&c));
        }
    }
    sb_putc(sb, '\n');
    free(ptrs);
}

/* Uses mem_alloc (strbuf): call only while no failure is armed. */
static char *dump(struct fixture *f)
{
    strbuf sb = STRBUF_INIT;
    /* Not the schema version: a rolled-back DDL moves it on purpose. */
    sb_printf(&sb, "txn %d log %zu\n", store_in_transaction(f->s), store_log_length(f->s));
    for (size_t i = 0; i < store_table_count(f->s); i++)
        dump_table(&sb, store_table_at(f->s, i));
    char *text = sb_take(&sb, NULL);
    CHECK(text != NULL);
    return text;
}

typedef int (*op_fn)(struct fixture *f);

/* Runs op with allocation n failing, for n = 1, 2, ... until it succeeds. */
static void sweep(struct fixture *f, op_fn op, const char *name)
{
    for (uint64_t n = 1;; n++) {
        char *before = dump(f);
        mem_fail_at(n, 0);
        int rc = op(f);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        if (rc == LDB_OK) {
            CHECKF(failed == 0, "%s: allocation %llu failed but the call succeeded", name,
                   (unsigned long long)n);
            mem_free(before);
            return;
        }
        CHECKF(rc == LDB_NOMEM, "%s: allocation %llu: rc %d (%s)", name, (unsigned long long)n,
               rc, store_errmsg(f->s));
        char *after = dump(f);
        CHECKF(strcmp(before, after) == 0, "%s: allocation %llu changed the state", name,
               (unsigned long long)n);
        const char *err = store_check(f->s);
        CHECKF(err == NULL, "%s: %s", name, err);
        mem_free(before);
        mem_free(after);
    }
}

/* ---- hooks: an MV keeping b = count of a by x % 4, and a publisher ---------------- */

static int bump(struct fixture *f, int64_t g, int delta)
{
    value key = V_I(g);
    row *r = table_lookup(f->b, &key);
    value v[2] = { key, V_I((r ? r->cols[1].h.u.i : 0) + delta) };
    if (!r)
        return table_insert(f->s, f->b, v, NULL);
    return table_update(f->s, f->b, r, v, NULL);
}

static int mv_hook(void *ctx, struct store *s, const struct delta *d)
{
    struct fixture *f = ctx;
    const struct table_delta *td = delta_for_table(d, f->a);
    int rc = LDB_OK;
    store_enter_internal(s);
    for (size_t i = 0; td && i < td->n && rc == LDB_OK; i++) {
        const struct change *c = &td->changes[i];
        if (c->old && !value_is_null(&c->old->cols[1]))
            rc = bump(f, c->old->cols[1].h.u.i % 4, -1);
        if (rc == LDB_OK && c->new_row && !value_is_null(&c->new_row->cols[1]))
            rc = bump(f, c->new_row->cols[1].h.u.i % 4, +1);
    }
    store_leave_internal(s);
    return rc;
}

static int pub_prepare(void *ctx, struct store *s, const struct delta *d)
{
    struct fixture *f = ctx;
    f->prepared = mem_alloc(d->nchanges * sizeof(row *));
    return f->prepared ? LDB_OK : store_error(s, LDB_NOMEM, "out of memory");
}

static void pub_finish(void *ctx, struct store *s, bool committed)
{
    (void)s;
    struct fixture *f = ctx;
    f->published += committed;
    mem_free(f->prepared);
    f->prepared = NULL;
}

static const struct store_hooks mv_hooks = { mv_hook, NULL, NULL, NULL };
static const struct store_hooks pub_hooks = { NULL, pub_prepare, pub_finish, NULL };

/* ---- fixture ----------------------------------------------------------------------------- */

/* a(id INTEGER PRIMARY KEY, x INTEGER, y TEXT, u INTEGER UNIQUE) with
 * indexes on x, (y DESC, x) and a hash on x; b(g, n) maintained by mv. */
static void setup(struct fixture *f, int rows)
{
    memset(f, 0, sizeof *f);
    CHECK(store_open(&f->s) == LDB_OK);
    struct column_def ca[4] = { COL("id", COL_INTEGER), COL("x", COL_INTEGER),
                                COL("y", COL_TEXT), COL("u", COL_INTEGER) };
    static const uint32_t pk[1] = { 0 }, ucols[1] = { 3 };
    struct unique_def u = { ucols, 1 };
    struct table_def da = { "a", ca, 4, pk, 1, &u, 1, NULL };
    CHECK(store_stmt_begin(f->s) == LDB_OK);
    CHECK(store_create_table(f->s, &da, &f->a) == LDB_OK);
    CHECK(store_stmt_end(f->s, LDB_OK) == LDB_OK);
    struct column_def cb[2] = { COL("g", COL_INTEGER), COL("n", COL_INTEGER) };
    f->b = make_table(f->s, "b", cb, 2, pk, 1);
    CHECK(store_stmt_begin(f->s) == LDB_OK);
    for (int i = 0; i < rows; i++) {
        char y[8];
        snprintf(y, sizeof y, "y%d", i % 17);
        value v[4] = { V_I(i), V_I(i * 7 % 101), V_T(y), V_I(i) };
        CHECK(table_insert(f->s, f->a, v, NULL) == LDB_OK);
    }
    CHECK(store_stmt_end(f->s, LDB_OK) == LDB_OK);
    f->next_id = rows;
    struct key_part px = PART(1, false);
    make_index(f->s, f->a, "ix_x", INDEX_ORDERED, false, &px, 1);
    struct key_part pyx[2] = { PART(2, true), PART(1, false) };
    make_index(f->s, f->a, "ix_yx", INDEX_ORDERED, false, pyx, 2);
    make_index(f->s, f->a, "hx", INDEX_HASH, false, &px, 1);
    CHECK(store_subscribe(f->s, SUB_STATEMENT, &mv_hooks, f, &f->mv) == LDB_OK);
    CHECK(store_subscribe(f->s, SUB_COMMIT, &pub_hooks, f, &f->pub) == LDB_OK);
}

static void teardown(struct fixture *f)
{
    CHECK(store_check(f->s) == NULL);
    store_close(f->s);
}

/* ---- the operations ------------------------------------------------------------------------ */

static int in_statement(struct fixture *f, int (*body)(struct fixture *f))
{
    int rc = store_stmt_begin(f->s);
    if (rc != LDB_OK)
        return rc;
    return store_stmt_end(f->s, body(f));
}

static int insert_body(struct fixture *f)
{
    value v[4] = { V_I(f->next_id), V_I(f->next_id % 101), V_T("new"), V_I(f->next_id) };
    return table_insert(f->s, f->a, v, NULL);
}
static int op_insert(struct fixture *f)
{
    int rc = in_statement(f, insert_body);
    f->next_id += rc == LDB_OK;
    return rc;
}

static int update_body(struct fixture *f)
{
    value key = V_I(5);
    row *r = table_lookup(f->a, &key);
    value v[4] = { V_I(5), V_I(r->cols[1].h.u.i + 13), V_T("moved"), V_I(-5) };
    return table_update(f->s, f->a, r, v, NULL);
}
static int op_update(struct fixture *f) { return in_statement(f, update_body); }

/* An update that changes the primary key too. */
static int rekey_body(struct fixture *f)
{
    value key = V_I(6);
    row *r = table_lookup(f->a, &key);
    value v[4] = { V_I(100006), r->cols[1], V_T("rekeyed"), r->cols[3] };
    return table_update(f->s, f->a, r, v, NULL);
}
static int op_rekey(struct fixture *f) { return in_statement(f, rekey_body); }

/* An update of y alone: ix_yx moves its entry, ix_x, hx and u's index
 * re-point theirs in place. */
static int update_y_body(struct fixture *f)
{
    value key = V_I(8);
    row *r = table_lookup(f->a, &key);
    value v[4] = { r->cols[0], r->cols[1], V_T("y only"), r->cols[3] };
    return table_update(f->s, f->a, r, v, NULL);
}
static int op_update_y(struct fixture *f) { return in_statement(f, update_y_body); }

static int delete_body(struct fixture *f)
{
    value key = V_I(7);
    return table_delete(f->s, f->a, table_lookup(f->a, &key));
}
static int op_delete(struct fixture *f) { return in_statement(f, delete_body); }

/* Several writes in one statement: a failure anywhere undoes them all. */
static int many_body(struct fixture *f)
{
    int rc = LDB_OK;
    for (int64_t id = 20; id < 40 && rc == LDB_OK; id++) {
        value key = V_I(id);
        row *r = table_lookup(f->a, &key);
        if (id % 3 == 0) {
            rc = table_delete(f->s, f->a, r);
        } else {
            value v[4] = { V_I(id), V_I(id * 31 % 97), V_T("many"), V_I(id + 5000) };
            rc = table_update(f->s, f->a, r, v, NULL);
        }
    }
    return rc;
}
static int op_many(struct fixture *f) { return in_statement(f, many_body); }

static int create_index_body(struct fixture *f)
{
    struct key_part p[2] = { PART(2, false), PART(3, true) };
    struct index_def d = { "ix_yu", INDEX_ORDERED, true, p, 2, NULL };
    return store_create_index(f->s, f->a, &d, NULL);
}
static int op_create_index(struct fixture *f) { return in_statement(f, create_index_body); }

static int create_hash_body(struct fixture *f)
{
    struct key_part p = PART(3, false);
    struct index_def d = { "hu", INDEX_HASH, true, &p, 1, NULL };
    return store_create_index(f->s, f->a, &d, NULL);
}
static int op_create_hash(struct fixture *f) { return in_statement(f, create_hash_body); }

static int drop_index_body(struct fixture *f)
{
    return store_drop_index(f->s, store_find_index(f->s, "ix_yu"));
}
static int op_drop_index(struct fixture *f) { return in_statement(f, drop_index_body); }

static int drop_index_yx_body(struct fixture *f)
{
    return store_drop_index(f->s, store_find_index(f->s, "ix_yx"));
}

static int create_table_body(struct fixture *f)
{
    struct column_def c[2] = { COL("p", COL_TEXT), COL("q", COL_ANY) };
    static const uint32_t u[1] = { 1 };
    struct unique_def ud = { u, 1 };
    struct table_def d = { "c", c, 2, NULL, 0, &ud, 1, "CREATE TABLE c(p TEXT, q UNIQUE)" };
    return store_create_table(f->s, &d, NULL);
}
static int op_create_table(struct fixture *f) { return in_statement(f, create_table_body); }

static int drop_table_body(struct fixture *f)
{
    return store_drop_table(f->s, store_find_table(f->s, "c"));
}
static int op_drop_table(struct fixture *f) { return in_statement(f, drop_table_body); }

static int op_savepoint(struct fixture *f) { return store_savepoint(f->s, "sp"); }
static int op_commit(struct fixture *f) { return store_commit(f->s); }

/* ---- the sweeps ----------------------------------------------------------------------------- */

static void write_paths(void)
{
    int64_t live = mem_live();
    struct fixture f;
    setup(&f, 300);
    sweep(&f, op_insert, "insert");
    sweep(&f, op_insert, "insert again");
    sweep(&f, op_update, "update");
    sweep(&f, op_rekey, "update of the primary key");
    sweep(&f, op_update_y, "update moving one index entry of four");
    sweep(&f, op_delete, "delete");
    sweep(&f, op_many, "statement of many writes");
    sweep(&f, op_create_index, "create index");
    sweep(&f, op_create_hash, "create hash index");
    sweep(&f, op_drop_index, "drop index");
    sweep(&f, op_create_table, "create table");
    sweep(&f, op_drop_table, "drop table");
    CHECK(f.published > 0);
    teardown(&f);
    CHECK_INT(mem_live(), live);
}

static void transaction_paths(void)
{
    int64_t live = mem_live();
    struct fixture f;
    setup(&f, 200);
    CHECK(store_begin(f.s) == LDB_OK);
    sweep(&f, op_savepoint, "savepoint");
    sweep(&f, op_many, "statement in a transaction");
    sweep(&f, op_create_index, "create index in a transaction");
    sweep(&f, op_insert, "insert in a transaction");
    int published = f.published;
    sweep(&f, op_commit, "commit with subscribers");
    CHECK_INT(f.published, published + 1);
    CHECK(!store_in_transaction(f.s));
    /* Savepoint that opens a transaction, released (a commit). */
    sweep(&f, op_savepoint, "savepoint opening a transaction");
    sweep(&f, op_update, "update under a savepoint");
    CHECK(store_release(f.s, "sp") == LDB_OK);
    teardown(&f);
    CHECK_INT(mem_live(), live);
}

/* A rollback that cannot get memory stays pending, then finishes. */
static void pending_rollback(void)
{
    int64_t live = mem_live();
    struct fixture f;
    setup(&f, 400);
    char *before = dump(&f);
    CHECK(store_begin(f.s) == LDB_OK);
    CHECK(store_stmt_begin(f.s) == LDB_OK);
    for (int64_t id = 0; id < 400; id += 2) {
        value key = V_I(id);
        CHECK(table_delete(f.s, f.a, table_lookup(f.a, &key)) == LDB_OK);
    }
    CHECK(store_stmt_end(f.s, LDB_OK) == LDB_OK);
    mem_fail_at(1, 1);
    int rc = store_rollback(f.s);
    mem_fail_at(0, 0);
    CHECK(rc == LDB_NOMEM);
    CHECK(store_check(f.s) == NULL); /* a consistent earlier state */
    /* The next call finishes the rollback first. */
    CHECK(store_begin(f.s) == LDB_OK);
    CHECK(store_rollback(f.s) == LDB_OK);
    char *after = dump(&f);
    CHECK_STR(after, before);
    mem_free(before);
    mem_free(after);
    teardown(&f);
    CHECK_INT(mem_live(), live);
}

/* Without ix_yx no index reads y: updates of y move no index entry, so
 * undoing them re-points entries in place and needs no memory at all. */
static void rollback_in_place(void)
{
    int64_t live = mem_live();
    struct fixture f;
    setup(&f, 400);
    CHECK(in_statement(&f, drop_index_yx_body) == LDB_OK);
    char *before = dump(&f);
    CHECK(store_begin(f.s) == LDB_OK);
    CHECK(store_stmt_begin(f.s) == LDB_OK);
    for (int64_t id = 0; id < 400; id += 2) {
        value key = V_I(id);
        row *r = table_lookup(f.a, &key);
        value v[4] = { r->cols[0], r->cols[1], V_T("y only"), r->cols[3] };
        CHECK(table_update(f.s, f.a, r, v, NULL) == LDB_OK);
    }
    CHECK(store_stmt_end(f.s, LDB_OK) == LDB_OK);
    mem_fail_at(1, 1);
    int rc = store_rollback(f.s);
    uint64_t failed = mem_failed_count();
    mem_fail_at(0, 0);
    CHECK_INT(rc, LDB_OK);
    CHECK_INT(failed, 0);
    char *after = dump(&f);
    CHECK_STR(after, before);
    CHECK(store_check(f.s) == NULL);
    mem_free(before);
    mem_free(after);
    teardown(&f);
    CHECK_INT(mem_live(), live);
}

TEST_MAIN(T(write_paths), T(transaction_paths), T(pending_rollback), T(rollback_in_place))
