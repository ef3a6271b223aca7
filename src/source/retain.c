/*
 * retain.c - query-owned retention (law 11, LDB_SOURCE_RETAIN_OWNED): a
 * loaded row exists exactly while an owner of it remains. Owners are the
 * source's current demand: a param (with owners) whose plan's predicate
 * and key the row matches, or the eager load, which owns every row. A
 * program pins rows by keeping a live query over them open.
 *
 * No per-row owner state is kept: ownership is decided from the demand
 * itself. A sync row nobody owns is not written (an old version of it is
 * deleted); when demand retires, one sweep at the next dispatch point
 * deletes, in one statement, every row no remaining demand owns. Cost:
 * O(rows x plans) per sweep, against O(1) state per row.
 */
#include "source/source_internal.h"

#include "base/interrupt.h"
#include "storage/store.h"
#include "storage/table.h"

#include <string.h>

static const value *column_value(const struct table *t, const value *vals, const char *name)
{
    const struct schema *sc = table_schema(t);
    for (uint32_t i = 0; i < sc->nvisible; i++)
        if (strcmp(sc->cols[i].name, name) == 0)
            return &vals[i];
    return NULL;
}

static bool cmp_holds(int op, int c)
{
    switch (op) {
    case LDB_OP_EQ: return c == 0;
    case LDB_OP_NE: return c != 0;
    case LDB_OP_LT: return c < 0;
    case LDB_OP_LE: return c <= 0;
    case LDB_OP_GT: return c > 0;
    default: return c >= 0;
    }
}

/* Whether the row vals matches p (SQL: a NULL operand matches nothing). */
bool pred_match(const struct ldb_pred *p, const struct table *t, const value *vals)
{
    if (p->kind == LDB_PRED_AND || p->kind == LDB_PRED_OR) {
        for (uint32_t i = 0; i < p->n; i++)
            if (pred_match(&p->kids[i], t, vals) != (p->kind == LDB_PRED_AND))
                return p->kind == LDB_PRED_OR;
        return p->kind == LDB_PRED_AND;
    }
    const value *v = column_value(t, vals, p->column);
    if (!v)
        return false;
    if (p->kind == LDB_PRED_ISNULL || p->kind == LDB_PRED_NOTNULL)
        return value_is_null(v) == (p->kind == LDB_PRED_ISNULL);
    if (value_is_null(v))
        return false;
    for (uint32_t i = 0; i < p->n; i++) {
        if (value_is_null(&p->vals[i]))
            continue;
        int c = value_cmp(v, &p->vals[i], (enum ldb_collation)p->coll);
        if (p->kind == LDB_PRED_IN ? c == 0 : cmp_holds(p->op, c))
            return true;
    }
    return false;
}

static bool plan_owns(const struct src_plan *pl, const struct table *t, const value *vals)
{
    if (pl->nparams == 0 || (pl->fixed && !pred_match(pl->fixed, t, vals)))
        return false;
    if (pl->key_col < 0)
        return true;
    return demand_param_of(pl, &vals[pl->key_col]) != NULL;
}

bool retain_owned(const ldb_source *s, const value *vals)
{
    if (s->all)
        return true; /* the eager load owns every row */
    uint32_t pos = 0;
    uint64_t *slot, hash;
    while ((slot = hmap_next(&s->plans, &pos, &hash)))
        if (plan_owns((const struct src_plan *)(uintptr_t)*slot, s->table, vals))
            return true;
    return false;
}

typedef VEC(row *) row_vec;

/* Deletes rows gone[] (references, released here) of s's table in one
 * statement. */
static int delete_rows(struct src_registry *r, ldb_source *s, row_vec *gone, int rc)
{
    struct store *st = r->env.store;
    if (!rc && gone->len && !(rc = store_stmt_begin(st))) {
        store_enter_internal(st);
        for (size_t i = 0; !rc && i < gone->len; i++)
            rc = table_delete(st, s->table, gone->data[i]);
        store_leave_internal(st);
        struct intr *scope = intr_swap(NULL);
        int end = store_stmt_end(st, rc);
        intr_swap(scope);
        rc = rc ? rc : end;
        r->env.wrote(r->env.ctx);
        if (!rc)
            s->st.rows_written += gone->len;
    }
    for (size_t i = 0; i < gone->len; i++)
        row_release(gone->data[i]);
    vec_free(gone);
    return rc;
}

/* Deletes every row no demand owns, in one statement. */
static int sweep(struct src_registry *r, ldb_source *s)
{
    row_vec gone = VEC_INIT;
    int rc = LDB_OK;
    struct table_scan sc = table_scan_begin(s->table);
    for (row *w; !rc && (w = table_scan_next(&sc));)
        if (!retain_owned(s, w->cols) && !opt_find(r, s->table, w->cols) &&
            !(rc = vec_push(&gone, w)))
            row_retain(w);
    return delete_rows(r, s, &gone, rc);
}

/* The synced rows of overlaid keys that a revalidation did not bring
 * back, deleted beneath their pending writes as a sync delete would be:
 * one step (a pending UPDATE over such a row is rejected, and no
 * rejection can bring the row back). */
struct beneath {
    ldb_source *s;
    const row_vec *keys;
};

static int propose_deletes(struct src_registry *r, void *ctx, char *msg, size_t n)
{
    const struct beneath *b = ctx;
    int rc = LDB_OK;
    for (size_t i = 0; !rc && i < b->keys->len; i++) {
        struct opt_key *k = opt_find(r, b->s->table, b->keys->data[i]->cols);
        if (k)
            rc = opt_sync_write(r, k, SYNC_DELETE, b->keys->data[i]->cols, msg, n);
    }
    return rc;
}

static int delete_beneath(struct src_registry *r, ldb_source *s, const row_vec *keys)
{
    struct beneath b = { s, keys };
    return keys->len ? opt_step(r, propose_deletes, &b) : LDB_OK;
}

/* Deletes the rows whose keys a revalidation did not bring back; under
 * pending optimistic writes, their synced rows. */
static int sweep_persisted(struct src_registry *r, ldb_source *s)
{
    row_vec gone = VEC_INIT, beneath = VEC_INIT;
    int rc = LDB_OK;
    for (size_t i = 0; i < s->persist_gone.len && !rc; i++) {
        row *w = table_lookup_row(s->table, s->persist_gone.data[i]);
        row_vec *v = w && opt_find(r, s->table, w->cols) ? &beneath : &gone;
        if (w && !(rc = vec_push(v, w)))
            row_retain(w);
    }
    if (!rc)
        rc = delete_beneath(r, s, &beneath);
    for (size_t i = 0; i < beneath.len; i++)
        row_release(beneath.data[i]);
    vec_free(&beneath);
    rc = delete_rows(r, s, &gone, rc);
    if (rc != LDB_NOMEM) { /* NOMEM: tried again at the next pump */
        for (size_t i = 0; i < s->persist_gone.len; i++)
            row_release(s->persist_gone.data[i]);
        s->persist_gone.len = 0;
    }
    return rc;
}

bool retain_sweep_persisted(struct src_registry *r)
{
    bool did = false;
    for (size_t i = 0; i < r->sources.len; i++) {
        ldb_source *s = r->sources.data[i];
        if (s->persist_gone.len) {
            if (sweep_persisted(r, s) == LDB_NOMEM)
                r->work = true;
            did = true;
        }
    }
    return did;
}

bool retain_sweep(struct src_registry *r)
{
    bool did = false;
    for (size_t i = 0; i < r->sources.len; i++) {
        ldb_source *s = r->sources.data[i];
        if (!s->sweep)
            continue;
        /* out of memory: the rows stay until the next retirement sweeps */
        s->sweep = false;
        sweep(r, s);
        did = true;
    }
    return did;
}
