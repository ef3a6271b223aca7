/*
 * exec_dml.c - INSERT (OR IGNORE / OR REPLACE / ON CONFLICT DO NOTHING |
 * DO UPDATE), UPDATE and DELETE through the storage writes (table.h).
 *
 * Snapshot rule: UPDATE and DELETE first collect every target row (and
 * UPDATE computes every new row) before the first write, and an
 * INSERT ... SELECT that reads its target reads it all first, so a
 * statement never sees its own changes (as in SQLite). The caller wraps
 * the statement in store_stmt_begin/end: any error undoes all of it.
 *
 * Storage failures keep storage's message ("UNIQUE constraint failed:
 * t.a", "cannot store TEXT 'x' in INTEGER column t.a") and its code.
 */
#include "sql/exec_internal.h"

#include "base/hash.h"
#include "base/mem.h"

#include <string.h>

/* Most retries of one write that keeps hitting rows to replace (one per
 * unique constraint of the table, plus the primary key). */
#define REPLACE_ROUNDS(t) (table_index_count(t) + 2)

static int store_failure(struct exec *x, int rc)
{
    if (rc == LDB_NOMEM)
        return exec_nomem(x);
    return exec_error(x, rc, UINT32_MAX, "%s", store_errmsg(x->env.store));
}

/* An operator that only evaluates expressions (DML has no plan node for
 * its SET and DO UPDATE expressions). */
static struct op *evaluator(struct exec *x)
{
    return op_alloc(x, NULL, sizeof(struct op), NULL, 0);
}

static int eval_into(struct op *ev, const struct expr *e, const value *row_vals,
                     uint32_t ncols, value *out)
{
    ev->cx.row = row_vals;
    ev->cx.ncols = ncols;
    value v;
    int rc = expr_eval(e, &ev->cx, &v);
    if (rc == LDB_OK) {
        value_release(out);
        *out = v;
    }
    return rc;
}

static void release_all(value *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        value_release(&v[i]);
}

/* ---- INSERT -------------------------------------------------------------------------- */

struct inserter {
    struct exec *x;
    const struct bound_insert *ins;
    struct table *t;
    struct op *ev;
    value *vals;               /* nvisible values of the row to insert */
    value *pair;               /* existing row ++ excluded row, 2 * ncols */
    value *newvals;            /* DO UPDATE result, nvisible */
    struct dml_result *res;
};

static void note_insert(struct inserter *in, const row *stored)
{
    const struct schema *sc = table_schema(in->t);
    in->res->changes++;
    in->res->inserted = true;
    const value *key = &stored->cols[sc->pk[0]];
    if (sc->rowid_auto && value_type(key) == LDB_INTEGER)
        in->res->last_rowid = key->h.u.i;
}

/* Whether the conflicting row is the one the target names: equal on
 * every target column to the row that was to be inserted. */
static bool target_matches(struct inserter *in, const struct bound_upsert *u, const row *c)
{
    const struct schema *sc = table_schema(in->t);
    for (uint32_t i = 0; i < u->ntarget; i++) {
        const struct column *col = &sc->cols[u->target[i]];
        value v;
        if (column_coerce(col, &in->vals[u->target[i]], &v) != LDB_OK)
            return false;
        bool eq = value_eq(&v, &c->cols[u->target[i]], col->coll);
        value_release(&v);
        if (!eq)
            return false;
    }
    return true;
}

/* The existing row followed by the excluded one, for DO UPDATE. */
static int fill_pair(struct inserter *in, const row *c)
{
    const struct schema *sc = table_schema(in->t);
    uint32_t n = sc->ncols;
    release_all(in->pair, 2 * (size_t)n);
    for (uint32_t i = 0; i < n; i++)
        in->pair[i] = value_copy(&c->cols[i]);
    for (uint32_t i = 0; i < sc->nvisible; i++) {
        int rc = column_coerce(&sc->cols[i], &in->vals[i], &in->pair[n + i]);
        if (rc == LDB_NOMEM)
            return exec_nomem(in->x);
        if (rc != LDB_OK)
            in->pair[n + i] = value_copy(&in->vals[i]);
    }
    return LDB_OK;
}

static int do_update(struct inserter *in, const struct bound_upsert *u, row *c)
{
    const struct schema *sc = table_schema(in->t);
    uint32_t n = sc->ncols;
    int rc = fill_pair(in, c);
    if (rc)
        return rc;
    if (u->where) {
        int t;
        in->ev->cx.row = in->pair;
        in->ev->cx.ncols = 2 * n;
        if ((rc = expr_eval_truth(u->where, &in->ev->cx, &t)))
            return rc;
        if (t != 1)
            return LDB_OK;
    }
    release_all(in->newvals, sc->nvisible);
    for (uint32_t i = 0; i < sc->nvisible; i++)
        in->newvals[i] = value_copy(&c->cols[i]);
    for (uint32_t i = 0; i < u->nset; i++)
        if ((rc = eval_into(in->ev, u->set_exprs[i], in->pair, 2 * n,
                            &in->newvals[u->set_cols[i]])))
            return rc;
    if ((rc = table_update(in->x->env.store, in->t, c, in->newvals, NULL)))
        return store_failure(in->x, rc);
    in->res->changes++;
    return LDB_OK;
}

/* A key conflict on c: the first ON CONFLICT clause that applies. */
static int upsert(struct inserter *in, row *c, int rc)
{
    for (uint32_t i = 0; c && i < in->ins->nupserts; i++) {
        const struct bound_upsert *u = &in->ins->upserts[i];
        if (u->ntarget && !target_matches(in, u, c))
            continue;
        return u->do_update ? do_update(in, u, c) : LDB_OK;
    }
    return store_failure(in->x, rc);
}

static int insert_row(struct inserter *in)
{
    struct store *s = in->x->env.store;
    for (size_t round = 0;; round++) {
        row *out = NULL;
        int rc = table_insert(s, in->t, in->vals, &out);
        if (rc == LDB_OK) {
            note_insert(in, out);
            return LDB_OK;
        }
        if (rc != LDB_CONSTRAINT)
            return store_failure(in->x, rc);
        switch (in->ins->or_action) {
        case AST_CONFLICT_IGNORE:
            return LDB_OK;
        case AST_CONFLICT_REPLACE:
            if (!out || round >= REPLACE_ROUNDS(in->t))
                return store_failure(in->x, rc);
            if ((rc = table_delete(s, in->t, out)))
                return store_failure(in->x, rc);
            in->res->changes++;
            continue;
        default:
            if (in->ins->nupserts)
                return upsert(in, out, rc);
            return store_failure(in->x, rc);
        }
    }
}

/* Fills in->vals from a source row (or defaults only when src is NULL). */
static void fill_values(struct inserter *in, const row *src)
{
    const struct schema *sc = table_schema(in->t);
    release_all(in->vals, sc->nvisible);
    for (uint32_t i = 0; i < sc->nvisible; i++) {
        uint32_t from = in->ins->source_col[i];
        in->vals[i] = value_copy(src && from != UINT32_MAX ? &src->cols[from] : &sc->cols[i].dflt);
    }
}

static int insert_rows(struct inserter *in)
{
    const struct bound_insert *ins = in->ins;
    if (!ins->source) {
        fill_values(in, NULL);
        return insert_row(in);
    }
    struct op *root;
    int rc = exec_open(in->x, ins->source, &root);
    if (rc)
        return rc;
    VEC(row *) snapshot = VEC_INIT;
    row *r;
    while ((rc = exec_next(root, &r)) == LDB_ROW) {
        if (ins->reads_target) {
            if (vec_push(&snapshot, r)) {
                rc = exec_nomem(in->x);
                break;
            }
            row_retain(r);
            continue;
        }
        fill_values(in, r);
        if ((rc = insert_row(in)))
            break;
    }
    if (rc == LDB_DONE)
        rc = LDB_OK;
    for (size_t i = 0; i < snapshot.len && rc == LDB_OK; i++) {
        fill_values(in, snapshot.data[i]);
        rc = insert_row(in);
    }
    for (size_t i = 0; i < snapshot.len; i++)
        row_release(snapshot.data[i]);
    vec_free(&snapshot);
    return rc;
}

int exec_insert(struct exec *x, const struct bound_insert *ins, struct dml_result *res)
{
    memset(res, 0, sizeof *res);
    int wrc = store_check_writable(x->env.store, ins->table);
    if (wrc)
        return store_failure(x, wrc);
    const struct schema *sc = table_schema(ins->table);
    struct inserter in = { x, ins, ins->table, evaluator(x), NULL, NULL, NULL, res };
    in.vals = mem_calloc(sc->nvisible, sizeof *in.vals);
    in.pair = mem_calloc(2 * (size_t)sc->ncols, sizeof *in.pair);
    in.newvals = mem_calloc(sc->nvisible, sizeof *in.newvals);
    int rc = in.ev && in.vals && in.pair && in.newvals ? insert_rows(&in) : exec_nomem(x);
    if (in.vals)
        release_all(in.vals, sc->nvisible);
    if (in.pair)
        release_all(in.pair, 2 * (size_t)sc->ncols);
    if (in.newvals)
        release_all(in.newvals, sc->nvisible);
    mem_free(in.vals);
    mem_free(in.pair);
    mem_free(in.newvals);
    return rc;
}

/* ---- UPDATE and DELETE -------------------------------------------------------------------- */

typedef VEC(row *) row_vec;

/* Every row the plan yields (stored rows, retained). */
static int collect_rows(struct exec *x, const struct plan *p, row_vec *rows)
{
    struct op *root;
    int rc = exec_open(x, p, &root);
    row *r;
    while (rc == LDB_OK && (rc = exec_next(root, &r)) == LDB_ROW) {
        if (vec_push(rows, r))
            return exec_nomem(x);
        row_retain(r);
        rc = LDB_OK;
    }
    return rc == LDB_DONE ? LDB_OK : rc;
}

static void release_rows(row_vec *rows)
{
    for (size_t i = 0; i < rows->len; i++)
        row_release(rows->data[i]);
    vec_free(rows);
}

/* The new declared values of every collected row, row after row. */
static int compute_updates(struct exec *x, const struct bound_update *up, const row_vec *rows,
                           value *newvals)
{
    uint32_t nv = table_schema(up->table)->nvisible;
    struct op *ev = evaluator(x);
    if (!ev)
        return LDB_NOMEM;
    for (size_t i = 0; i < rows->len; i++) {
        const row *old = rows->data[i];
        value *nvals = newvals + i * nv;
        for (uint32_t c = 0; c < nv; c++)
            nvals[c] = value_copy(&old->cols[c]);
        for (uint32_t k = 0; k < up->nset; k++) {
            int rc = eval_into(ev, up->set_exprs[k], old->cols, old->ncols,
                               &nvals[up->set_cols[k]]);
            if (rc)
                return rc;
        }
    }
    return LDB_OK;
}

/*
 * Rows are updated one at a time and every write checks its constraints,
 * so "UPDATE t SET id = id + 1" would fail whenever a row meets the old
 * version of a row the statement has yet to change. Such a row waits
 * (UPDATE_WAIT) and is retried after the others; only rows that keep
 * waiting on each other (a cycle, like swapping two keys) fail.
 */
enum { UPDATE_WAIT = -1 };

struct updater {
    struct exec *x;
    const struct bound_update *up;
    row_vec rows;
    value *newvals;            /* rows.len * nvisible */
    uint32_t nv;
    hmap pending;              /* row address hash -> position: rows not yet updated */
    struct dml_result *res;
};

static uint64_t *pending_slot(const struct updater *u, const row *r)
{
    uint64_t h = hash_u64((uint64_t)(uintptr_t)r);
    uint32_t pos = UINT32_MAX;
    for (uint64_t *v = hmap_probe(&u->pending, h, &pos); v; v = hmap_probe(&u->pending, h, &pos))
        if (u->rows.data[*v] == r)
            return v;
    return NULL;
}

static int update_row(struct updater *u, size_t i, bool may_wait)
{
    struct exec *x = u->x;
    const struct bound_update *up = u->up;
    struct store *s = x->env.store;
    row *old = u->rows.data[i];
    const value *vals = u->newvals + i * u->nv;
    if (table_lookup_row(up->table, old) != old)
        return LDB_OK; /* replaced away by an earlier row of this statement */
    for (size_t round = 0;; round++) {
        row *conflict = NULL;
        int rc = table_update(s, up->table, old, vals, &conflict);
        if (rc == LDB_OK) {
            u->res->changes++;
            return LDB_OK;
        }
        if (rc != LDB_CONSTRAINT)
            return store_failure(x, rc);
        if (up->or_action == AST_CONFLICT_IGNORE)
            return LDB_OK;
        if (up->or_action != AST_CONFLICT_REPLACE) {
            if (may_wait && conflict && conflict != old && pending_slot(u, conflict))
                return UPDATE_WAIT;
            return store_failure(x, rc);
        }
        if (!conflict || conflict == old || round >= REPLACE_ROUNDS(up->table))
            return store_failure(x, rc);
        if ((rc = table_delete(s, up->table, conflict)))
            return store_failure(x, rc);
    }
}

static int index_pending(struct updater *u)
{
    if (hmap_reserve(&u->pending, (uint32_t)u->rows.len))
        return exec_nomem(u->x);
    for (size_t i = 0; i < u->rows.len; i++) {
        uint64_t *slot;
        bool found;
        hmap_put(&u->pending, hash_u64((uint64_t)(uintptr_t)u->rows.data[i]), NULL, NULL,
                 &slot, &found);
        *slot = i;
    }
    return LDB_OK;
}

/* Updates every row, retrying those that wait on others. */
static int apply_updates(struct updater *u)
{
    size_t n = u->rows.len;
    size_t *queue = mem_alloc((n + 1) * sizeof *queue);
    int rc = queue ? index_pending(u) : exec_nomem(u->x);
    for (size_t i = 0; i < n; i++)
        if (queue)
            queue[i] = i;
    while (rc == LDB_OK && n > 0) {
        size_t waiting = 0;
        for (size_t k = 0; k < n && rc == LDB_OK; k++) {
            size_t i = queue[k];
            if ((rc = update_row(u, i, true)) == UPDATE_WAIT) {
                queue[waiting++] = i;
                rc = LDB_OK;
            } else if (rc == LDB_OK) {
                hmap_del(&u->pending, pending_slot(u, u->rows.data[i]));
            }
        }
        if (rc == LDB_OK && waiting == n) /* a cycle: report its first conflict */
            rc = update_row(u, queue[0], false);
        n = waiting;
    }
    mem_free(queue);
    return rc;
}

int exec_update(struct exec *x, const struct bound_update *up, struct dml_result *res)
{
    memset(res, 0, sizeof *res);
    int wrc = store_check_writable(x->env.store, up->table);
    if (wrc)
        return store_failure(x, wrc);
    struct updater u = { x, up, VEC_INIT, NULL, table_schema(up->table)->nvisible,
                         HMAP_INIT, res };
    int rc = collect_rows(x, up->rows, &u.rows);
    if (rc == LDB_OK && u.rows.len &&
        !(u.newvals = mem_calloc(u.rows.len * u.nv, sizeof *u.newvals)))
        rc = exec_nomem(x);
    if (rc == LDB_OK && u.rows.len)
        rc = compute_updates(x, up, &u.rows, u.newvals);
    if (rc == LDB_OK)
        rc = apply_updates(&u);
    if (u.newvals)
        release_all(u.newvals, u.rows.len * u.nv);
    mem_free(u.newvals);
    hmap_free(&u.pending);
    release_rows(&u.rows);
    return rc;
}

int exec_delete(struct exec *x, const struct bound_delete *del, struct dml_result *res)
{
    memset(res, 0, sizeof *res);
    int wrc = store_check_writable(x->env.store, del->table);
    if (wrc)
        return store_failure(x, wrc);
    row_vec rows = VEC_INIT;
    int rc = collect_rows(x, del->rows, &rows);
    for (size_t i = 0; i < rows.len && rc == LDB_OK; i++) {
        if (table_lookup_row(del->table, rows.data[i]) != rows.data[i])
            continue;
        if ((rc = table_delete(x->env.store, del->table, rows.data[i])))
            rc = store_failure(x, rc);
        else
            res->changes++;
    }
    release_rows(&rows);
    return rc;
}
