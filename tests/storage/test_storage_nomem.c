/*
 * test_storage_nomem.c - allocation-failure sweeps: each write path runs
 * with its 1st, 2nd, ... allocation failing (once, and from there on)
 * until it succeeds; every failure must return LDB_NOMEM and leave every
 * table and index exactly as before (same row objects, same index
 * orders, read while allocations still fail: tests/nomem.h), and no
 * failure may be swallowed. Paths: insert with indexes, update moving
 * index keys (all of them, or one while the others are re-pointed in
 * place), delete, create index over existing rows, drop index and table,
 * savepoint, statements whose hook writes another table, commit with
 * subscribers. Then rollbacks need no memory at all: ROLLBACK, ROLLBACK
 * TO and failed statements after transactions of many shapes, and
 * scripted transactions swept with every allocation from the n-th on
 * failing, where each rollback must still restore its savepoint exactly.
 * mem_live returns to its baseline after teardown.
 */
#include "nomem.h"
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

/* Everything that must not change (free it); allocates nothing from the
 * library, so it can be taken while allocations fail. */
static char *dump(struct fixture *f)
{
    char *tables = nomem_store_dump(f->s);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    /* Not the schema version: a rolled-back DDL moves it on purpose. */
    fprintf(out, "log %zu\n%s", store_log_length(f->s), tables);
    fclose(out);
    free(tables);
    return text;
}

typedef int (*op_fn)(struct fixture *f);

/* Runs op with allocation n failing (persistent: and every later one),
 * for n = 1, 2, ... until it succeeds. */
static void sweep(struct fixture *f, op_fn op, const char *name, int persistent)
{
    for (uint64_t n = 1;; n++) {
        char *before = dump(f);
        mem_fail_at(n, persistent);
        int rc = op(f);
        uint64_t failed = mem_failed_count();
        char *after = rc != LDB_OK ? dump(f) : NULL;
        mem_fail_at(0, 0);
        if (rc == LDB_OK) {
            CHECKF(failed == 0, "%s: allocation %llu failed but the call succeeded", name,
                   (unsigned long long)n);
            free(before);
            return;
        }
        CHECKF(rc == LDB_NOMEM, "%s: allocation %llu: rc %d (%s)", name, (unsigned long long)n,
               rc, store_errmsg(f->s));
        CHECKF(strcmp(before, after) == 0, "%s: allocation %llu changed the state", name,
               (unsigned long long)n);
        free(before);
        free(after);
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

static const struct store_hooks mv_hooks = { .statement = mv_hook };
static const struct store_hooks pub_hooks = { .commit_prepare = pub_prepare,
                                              .commit_finish = pub_finish };

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
    struct table_def da = { "a", ca, 4, pk, 1, &u, 1, NULL, false, false };
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
    struct table_def d = { "c", c, 2, NULL, 0, &ud, 1, "CREATE TABLE c(p TEXT, q UNIQUE)", false, false };
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
    for (int persistent = 0; persistent < 2; persistent++) {
        int64_t live = mem_live();
        struct fixture f;
        setup(&f, 300);
        sweep(&f, op_insert, "insert", persistent);
        sweep(&f, op_insert, "insert again", persistent);
        sweep(&f, op_update, "update", persistent);
        sweep(&f, op_rekey, "update of the primary key", persistent);
        sweep(&f, op_update_y, "update moving one index entry of four", persistent);
        sweep(&f, op_delete, "delete", persistent);
        sweep(&f, op_many, "statement of many writes", persistent);
        sweep(&f, op_create_index, "create index", persistent);
        sweep(&f, op_create_hash, "create hash index", persistent);
        sweep(&f, op_drop_index, "drop index", persistent);
        sweep(&f, op_create_table, "create table", persistent);
        sweep(&f, op_drop_table, "drop table", persistent);
        CHECK(f.published > 0);
        teardown(&f);
        CHECK_INT(mem_live(), live);
    }
}

static void transaction_paths(void)
{
    for (int persistent = 0; persistent < 2; persistent++) {
        int64_t live = mem_live();
        struct fixture f;
        setup(&f, 200);
        CHECK(store_begin(f.s) == LDB_OK);
        sweep(&f, op_savepoint, "savepoint", persistent);
        sweep(&f, op_many, "statement in a transaction", persistent);
        sweep(&f, op_create_index, "create index in a transaction", persistent);
        sweep(&f, op_insert, "insert in a transaction", persistent);
        int published = f.published;
        sweep(&f, op_commit, "commit with subscribers", persistent);
        CHECK_INT(f.published, published + 1);
        CHECK(!store_in_transaction(f.s));
        /* Savepoint that opens a transaction, released (a commit). */
        sweep(&f, op_savepoint, "savepoint opening a transaction", persistent);
        sweep(&f, op_update, "update under a savepoint", persistent);
        CHECK(store_release(f.s, "sp") == LDB_OK);
        teardown(&f);
        CHECK_INT(mem_live(), live);
    }
}

/* ---- rollback needs no memory ------------------------------------------------------------- */

/* Deletes the rows with ids from, from + step, ... below to. */
static int delete_ids(struct fixture *f, int64_t from, int64_t to, int64_t step)
{
    int rc = LDB_OK;
    for (int64_t id = from; id < to && rc == LDB_OK; id += step) {
        value key = V_I(id);
        row *r = table_lookup(f->a, &key);
        if (r)
            rc = table_delete(f->s, f->a, r);
    }
    return rc;
}

/* Updates rows: x (moves ix_x, ix_yx and hx entries), y only (moves
 * ix_yx), or the primary key (moves every entry), by what. */
enum upd { UPD_X, UPD_Y, UPD_KEY };
static int update_ids(struct fixture *f, int64_t from, int64_t to, int64_t step, enum upd what)
{
    int rc = LDB_OK;
    for (int64_t id = from; id < to && rc == LDB_OK; id += step) {
        value key = V_I(id);
        row *r = table_lookup(f->a, &key);
        if (!r)
            continue;
        value v[4] = { r->cols[0], r->cols[1], r->cols[2], r->cols[3] };
        if (what == UPD_X)
            v[1] = V_I(r->cols[1].h.u.i + 1000 + id % 7);
        else if (what == UPD_Y)
            v[2] = V_T(id % 2 ? "yy" : "a");
        else
            v[0] = V_I(id + 100000);
        rc = table_update(f->s, f->a, r, v, NULL);
    }
    return rc;
}

static int insert_rows(struct fixture *f, int count)
{
    int rc = LDB_OK;
    for (int i = 0; i < count && rc == LDB_OK; i++) {
        int64_t id = f->next_id++;
        value v[4] = { V_I(id), V_I(id % 13), V_T("ins"), V_I(id) };
        rc = table_insert(f->s, f->a, v, NULL);
    }
    return rc;
}

/* The shapes: each one statement body. */
static int shape_delete_half(struct fixture *f) { return delete_ids(f, 0, 400, 2); }
static int shape_delete_range(struct fixture *f) { return delete_ids(f, 40, 330, 1); }
static int shape_move_x(struct fixture *f) { return update_ids(f, 0, 400, 3, UPD_X); }
static int shape_move_y(struct fixture *f) { return update_ids(f, 100, 400, 1, UPD_Y); }
static int shape_rekey(struct fixture *f) { return update_ids(f, 0, 200, 5, UPD_KEY); }
static int shape_insert(struct fixture *f) { return insert_rows(f, 100); }
static int shape_mixed(struct fixture *f)
{
    int rc = insert_rows(f, 50);
    if (rc == LDB_OK)
        rc = delete_ids(f, 0, 400, 3);
    if (rc == LDB_OK)
        rc = update_ids(f, 1, 400, 4, UPD_X);
    if (rc == LDB_OK)
        rc = delete_ids(f, 380, 460, 1);
    return rc;
}
/* A statement that writes, then fails on a duplicate u value (row 5's,
 * which no shape deletes or changes). */
static int shape_conflict(struct fixture *f)
{
    int rc = delete_ids(f, 200, 260, 1);
    value v[4] = { V_I(f->next_id++), V_I(1), V_T("dup"), V_I(5) };
    return rc == LDB_OK ? table_insert(f->s, f->a, v, NULL) : rc;
}
static int shape_create_index(struct fixture *f)
{
    int rc = store_find_index(f->s, "ix_yu") ? LDB_OK : create_index_body(f);
    return rc == LDB_OK ? delete_ids(f, 0, 400, 4) : rc;
}

static op_fn const shapes[] = { shape_delete_half, shape_delete_range, shape_move_x,
                                shape_move_y,      shape_rekey,        shape_insert,
                                shape_mixed,       shape_create_index };
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Calls fn with every allocation failing: it must succeed without trying. */
static void without_memory(int rc_want, int (*fn)(struct store *s, const char *arg),
                           struct store *s, const char *arg)
{
    mem_fail_at(1, 1);
    int rc = fn(s, arg);
    uint64_t failed = mem_failed_count();
    mem_fail_at(0, 0);
    CHECKF(rc == rc_want, "rc %d (%s)", rc, store_errmsg(s));
    CHECK_INT(failed, 0);
}
static int do_rollback(struct store *s, const char *arg) { (void)arg; return store_rollback(s); }
static int do_rollback_to(struct store *s, const char *arg) { return store_rollback_to(s, arg); }
static int do_fail_statement(struct store *s, const char *arg)
{
    (void)arg;
    return store_stmt_end(s, LDB_ERROR);
}

/* After every pair of shapes, in a transaction: a failed statement,
 * ROLLBACK TO and ROLLBACK, each with every allocation failing, each
 * restoring its point exactly. */
static void rollback_without_memory(void)
{
    for (size_t i = 0; i < NSHAPES; i++) {
        for (size_t j = 0; j < NSHAPES; j++) {
            int64_t live = mem_live();
            struct fixture f;
            setup(&f, 400);
            char *start = dump(&f);
            CHECK(store_begin(f.s) == LDB_OK);
            CHECK(in_statement(&f, shapes[i]) == LDB_OK);
            CHECK(store_savepoint(f.s, "s") == LDB_OK);
            char *at_s = dump(&f);
            CHECK(store_stmt_begin(f.s) == LDB_OK);
            shapes[j](&f);
            without_memory(LDB_ERROR, do_fail_statement, f.s, NULL);
            char *now = dump(&f);
            CHECK_STR(now, at_s);
            free(now);
            CHECK(in_statement(&f, shapes[j]) == LDB_OK);
            CHECK(in_statement(&f, shapes[(i + j) % NSHAPES]) == LDB_OK);
            without_memory(LDB_OK, do_rollback_to, f.s, "s");
            now = dump(&f);
            CHECK_STR(now, at_s);
            free(now);
            CHECK(in_statement(&f, shapes[j]) == LDB_OK);
            without_memory(LDB_OK, do_rollback, f.s, NULL);
            now = dump(&f);
            CHECK_STR(now, start);
            free(now);
            free(start);
            free(at_s);
            teardown(&f);
            CHECK_INT(mem_live(), live);
        }
    }
}

/* Without ix_yx no index reads y: updates of y move no index entry, so
 * undoing them re-points entries in place. */
static void rollback_in_place(void)
{
    int64_t live = mem_live();
    struct fixture f;
    setup(&f, 400);
    CHECK(in_statement(&f, drop_index_yx_body) == LDB_OK);
    char *before = dump(&f);
    CHECK(store_begin(f.s) == LDB_OK);
    CHECK(in_statement(&f, shape_move_y) == LDB_OK);
    without_memory(LDB_OK, do_rollback, f.s, NULL);
    char *after = dump(&f);
    CHECK_STR(after, before);
    free(before);
    free(after);
    teardown(&f);
    CHECK_INT(mem_live(), live);
}

/* ---- scripted transactions under persistent failure ----------------------------------------- */

enum step_kind { ST_STMT, ST_SAVEPOINT, ST_ROLLBACK_TO, ST_ROLLBACK, ST_COMMIT };
struct step {
    enum step_kind kind;
    op_fn body;          /* ST_STMT */
    int want;            /* ST_STMT: its result without failures */
    const char *name;    /* savepoints */
};

/* Runs the steps from BEGIN with allocation n and every later one
 * failing: each failed step leaves the state as it was, each rollback
 * succeeds and restores its point. Returns whether an allocation failed. */
static bool run_script(const struct step *steps, size_t nsteps, uint64_t n)
{
    struct fixture f;
    setup(&f, 200);
    char *start = dump(&f), *saved[2] = { NULL, NULL };
    mem_fail_at(n, 1);
    CHECK(store_begin(f.s) == LDB_OK);
    char *before = dump(&f);
    for (size_t i = 0; i < nsteps && store_in_transaction(f.s); i++) {
        const struct step *st = &steps[i];
        int k = st->name && st->name[0] == 'b';
        int rc = LDB_OK;
        switch (st->kind) {
        case ST_STMT:
            rc = in_statement(&f, st->body);
            CHECKF(rc == st->want || rc == LDB_NOMEM, "step %zu: rc %d", i, rc);
            break;
        case ST_SAVEPOINT:
            rc = store_savepoint(f.s, st->name);
            CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "step %zu: rc %d", i, rc);
            if (rc == LDB_OK) {
                free(saved[k]);
                saved[k] = dump(&f);
            }
            break;
        case ST_ROLLBACK_TO:
            rc = store_rollback_to(f.s, st->name);
            CHECKF(rc == (saved[k] ? LDB_OK : LDB_ERROR), "step %zu: rc %d (%s)", i, rc,
                   store_errmsg(f.s));
            break;
        case ST_ROLLBACK:
            rc = store_rollback(f.s);
            CHECK_INT(rc, LDB_OK);
            break;
        case ST_COMMIT:
            rc = store_commit(f.s);
            CHECKF(rc == LDB_OK || rc == LDB_NOMEM, "step %zu: rc %d", i, rc);
            break;
        }
        char *after = dump(&f);
        if (st->kind == ST_ROLLBACK)
            CHECKF(strcmp(after, start) == 0, "step %zu: ROLLBACK at allocation %llu", i,
                   (unsigned long long)n);
        else if (st->kind == ST_ROLLBACK_TO && saved[k])
            CHECKF(strcmp(after, saved[k]) == 0, "step %zu: ROLLBACK TO at allocation %llu", i,
                   (unsigned long long)n);
        else if (rc != LDB_OK)
            CHECKF(strcmp(after, before) == 0, "step %zu: failed at allocation %llu and changed "
                   "the state", i, (unsigned long long)n);
        free(before);
        before = after;
    }
    free(before);
    bool failed = mem_failed_count() > 0;
    mem_fail_at(0, 0);
    if (store_in_transaction(f.s)) {
        CHECK(store_rollback(f.s) == LDB_OK);
        char *end = dump(&f);
        CHECK_STR(end, start);
        free(end);
    }
    free(start);
    free(saved[0]);
    free(saved[1]);
    teardown(&f);
    return failed;
}

static void sweep_script(const struct step *steps, size_t nsteps)
{
    int64_t live = mem_live();
    for (uint64_t n = 1; run_script(steps, nsteps, n); n++)
        CHECK_INT(mem_live(), live);
    CHECK_INT(mem_live(), live);
}

static void scripts(void)
{
    static const struct step rollbacks[] = {
        { ST_STMT, shape_delete_range, LDB_OK, NULL },
        { ST_SAVEPOINT, NULL, 0, "a" },
        { ST_STMT, shape_move_x, LDB_OK, NULL },
        { ST_STMT, shape_insert, LDB_OK, NULL },
        { ST_SAVEPOINT, NULL, 0, "b" },
        { ST_STMT, shape_rekey, LDB_OK, NULL },
        { ST_STMT, shape_conflict, LDB_CONSTRAINT, NULL },
        { ST_STMT, shape_move_y, LDB_OK, NULL },
        { ST_ROLLBACK_TO, NULL, 0, "b" },
        { ST_STMT, shape_mixed, LDB_OK, NULL },
        { ST_ROLLBACK_TO, NULL, 0, "a" },
        { ST_STMT, shape_delete_half, LDB_OK, NULL },
        { ST_ROLLBACK, NULL, 0, NULL },
    };
    static const struct step commits[] = {
        { ST_STMT, shape_delete_half, LDB_OK, NULL },
        { ST_SAVEPOINT, NULL, 0, "a" },
        { ST_STMT, shape_create_index, LDB_OK, NULL },
        { ST_STMT, shape_conflict, LDB_CONSTRAINT, NULL },
        { ST_ROLLBACK_TO, NULL, 0, "a" },
        { ST_STMT, shape_mixed, LDB_OK, NULL },
        { ST_COMMIT, NULL, 0, NULL },
    };
    sweep_script(rollbacks, sizeof rollbacks / sizeof rollbacks[0]);
    sweep_script(commits, sizeof commits / sizeof commits[0]);
}

TEST_MAIN(T(write_paths), T(transaction_paths), T(rollback_without_memory), T(rollback_in_place),
          T(scripts))
