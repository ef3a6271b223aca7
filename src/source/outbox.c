/*
 * outbox.c - the pending layer of a durable database, kept in the
 * database itself.
 *
 * A pending optimistic transaction must outlive the process that made it:
 * after a crash or a close its rows are still what the tables show, so
 * the program must still be able to send, confirm or reject it, and a
 * rejection must still bring back the synced rows. A durable database
 * therefore keeps the layer of optimistic.c in two tables of its own,
 * written by the same storage statements that change the layer, so that
 * they are logged, checkpointed and recovered atomically with the rows
 * they explain:
 *
 *   livedb_outbox_keys (kid, tbl, keyrow, base, unknown): an overlaid key
 *       of table tbl: a row with the key, its synced row (NULL: none) and
 *       whether a truncate voided that;
 *   livedb_outbox (id, seq, kid, kind, before, after): mutation seq of
 *       pending transaction id, on key kid (seq counts the mutations the
 *       outbox keeps, so that a reopened transaction, which has only
 *       those, finds its rows by its own mutations' positions);
 *   livedb_outbox_ids (name, last): the last transaction id given
 *       ('transaction'), so that ids stay unique across reopens.
 *
 * Rows are ARRAYs of their table's declared columns. The tables are a
 * layer's own (read-only to users, like a materialized view's backing
 * table), made by the first optimistic commit of a durable database, in
 * its transaction. Invariant between steps: the keys table holds exactly
 * the overlaid keys with a chain (kid, base, unknown as the layer has
 * them) and the mutations table exactly the pending transactions'
 * mutations (but those of TEMP tables, which end with the handle). In-memory
 * databases have no outbox.
 */
#include "source/source_internal.h"

#include "base/mem.h"
#include "storage/store.h"
#include "storage/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTBOX_KEYS "livedb_outbox_keys"
#define OUTBOX_MUTS "livedb_outbox"
#define OUTBOX_IDS "livedb_outbox_ids"
#define LAST_TXN "transaction"
/* Not a name SQL makes (a savepoint name is an identifier). */
#define OUTBOX_SAVEPOINT "\x01outbox"

enum { K_KID, K_TBL, K_KEYROW, K_BASE, K_UNKNOWN, K_NCOLS };
enum { M_ID, M_SEQ, M_KID, M_KIND, M_BEFORE, M_AFTER, M_NCOLS };
enum { I_NAME, I_LAST, I_NCOLS };

static bool durable(const struct src_registry *r) { return store_is_durable(r->env.store); }

static struct table *outbox_table(const struct src_registry *r, const char *name)
{
    struct table *t = store_find_table(r->env.store, name);
    return t && table_is_view_store(t) && !table_sql(t) ? t : NULL;
}

static int make_table(struct src_registry *r, const char *name, const struct column_def *cols,
                      uint32_t ncols, const uint32_t *pk, uint32_t npk)
{
    struct table_def def = { .name = name, .cols = cols, .ncols = ncols, .pk = pk, .npk = npk };
    struct table *t;
    int rc = store_create_table(r->env.store, &def, &t);
    if (!rc)
        table_set_readonly(t, true);
    return rc;
}

/* The three tables, made if missing (in the open statement). */
static int outbox_tables(struct src_registry *r, struct table **keys, struct table **muts,
                         struct table **ids)
{
    static const struct column_def kc[K_NCOLS] = {
        { .name = "kid", .type = COL_INTEGER, .not_null = true },
        { .name = "tbl", .type = COL_TEXT, .not_null = true },
        { .name = "keyrow", .type = COL_ANY, .not_null = true },
        { .name = "base", .type = COL_ANY },
        { .name = "unknown", .type = COL_INTEGER, .not_null = true },
    };
    static const struct column_def mc[M_NCOLS] = {
        { .name = "id", .type = COL_INTEGER, .not_null = true },
        { .name = "seq", .type = COL_INTEGER, .not_null = true },
        { .name = "kid", .type = COL_INTEGER, .not_null = true },
        { .name = "kind", .type = COL_INTEGER, .not_null = true },
        { .name = "before", .type = COL_ANY },
        { .name = "after", .type = COL_ANY },
    };
    static const struct column_def ic[I_NCOLS] = {
        { .name = "name", .type = COL_TEXT, .not_null = true },
        { .name = "last", .type = COL_INTEGER, .not_null = true },
    };
    static const uint32_t kpk[] = { K_KID }, mpk[] = { M_ID, M_SEQ }, ipk[] = { I_NAME };
    int rc = LDB_OK;
    if (!outbox_table(r, OUTBOX_KEYS))
        rc = make_table(r, OUTBOX_KEYS, kc, K_NCOLS, kpk, 1);
    if (!rc && !outbox_table(r, OUTBOX_MUTS))
        rc = make_table(r, OUTBOX_MUTS, mc, M_NCOLS, mpk, 2);
    if (!rc && !outbox_table(r, OUTBOX_IDS))
        rc = make_table(r, OUTBOX_IDS, ic, I_NCOLS, ipk, 1);
    *keys = outbox_table(r, OUTBOX_KEYS);
    *muts = outbox_table(r, OUTBOX_MUTS);
    *ids = outbox_table(r, OUTBOX_IDS);
    if (!rc && (!*keys || !*muts || !*ids))
        rc = store_error(r->env.store, LDB_ERROR, "a table named %s, %s or %s is in the way",
                         OUTBOX_KEYS, OUTBOX_MUTS, OUTBOX_IDS);
    return rc;
}

static value last_txn_name(void)
{
    value v;
    value_text(&v, LAST_TXN, strlen(LAST_TXN)); /* inline: never allocates */
    return v;
}

/* The last transaction id given, as the ids table says (0: none). */
static int64_t last_txn(const struct table *ids)
{
    value name = last_txn_name();
    const row *w = ids ? table_lookup(ids, &name) : NULL;
    return w ? w->cols[I_LAST].h.u.i : 0;
}

static int set_last_txn(struct src_registry *r, struct table *ids, uint64_t id)
{
    value v[I_NCOLS] = { last_txn_name(), value_int((int64_t)id) };
    row *w = table_lookup(ids, &v[I_NAME]);
    return w ? table_update(r->env.store, ids, w, v, NULL)
             : table_insert(r->env.store, ids, v, NULL);
}

/* The declared columns of w as an ARRAY (NULL for no row). */
static int row_array(const row *w, const struct table *t, value *out)
{
    *out = value_null();
    return w ? value_array(out, w->cols, table_schema(t)->nvisible) : LDB_OK;
}

static int put_key(struct src_registry *r, struct table *keys, const struct opt_key *k)
{
    value v[K_NCOLS];
    const char *name = table_name(k->ot->t);
    v[K_KID] = value_int(k->kid);
    v[K_UNKNOWN] = value_int(k->unknown);
    v[K_KEYROW] = v[K_BASE] = v[K_TBL] = value_null();
    int rc = value_text(&v[K_TBL], name, strlen(name));
    if (!rc)
        rc = row_array(k->keyrow, k->ot->t, &v[K_KEYROW]);
    if (!rc)
        rc = row_array(k->base, k->ot->t, &v[K_BASE]);
    if (!rc)
        rc = table_insert(r->env.store, keys, v, NULL);
    for (int i = 0; i < K_NCOLS; i++)
        value_release(&v[i]);
    return rc;
}

static int put_mut(struct src_registry *r, struct table *muts, uint64_t id, uint32_t seq,
                   const struct opt_mut *m)
{
    value v[M_NCOLS];
    v[M_ID] = value_int((int64_t)id);
    v[M_SEQ] = value_int(seq);
    v[M_KID] = value_int(m->key->kid);
    v[M_KIND] = value_int(m->kind);
    v[M_BEFORE] = v[M_AFTER] = value_null();
    int rc = row_array(m->before, m->key->ot->t, &v[M_BEFORE]);
    if (!rc)
        rc = row_array(m->after, m->key->ot->t, &v[M_AFTER]);
    if (!rc)
        rc = table_insert(r->env.store, muts, v, NULL);
    value_release(&v[M_BEFORE]);
    value_release(&v[M_AFTER]);
    return rc;
}

static int commit_rows(struct src_registry *r, struct opt_txn *x, uint64_t id)
{
    struct table *keys, *muts, *ids;
    int rc = outbox_tables(r, &keys, &muts, &ids);
    if (!rc)
        rc = set_last_txn(r, ids, id);
    for (uint32_t i = 0, seq = 0; !rc && i < x->nmut; i++) {
        struct opt_key *k = x->muts[i].key;
        if (k->ot->t->temp)
            continue; /* its table ends with the handle, and so does the mutation */
        if (!k->kid) { /* a key x overlays first */
            k->kid = ++r->opt.next_kid;
            rc = put_key(r, keys, k);
        }
        if (!rc)
            rc = put_mut(r, muts, id, seq++, &x->muts[i]);
    }
    return rc;
}

int outbox_commit(struct src_registry *r, struct opt_txn *x, uint64_t id, char *msg, size_t n)
{
    if (!durable(r))
        return LDB_OK; /* (one that wrote nothing too: its id is given) */
    struct store *st = r->env.store;
    int rc = store_savepoint(st, OUTBOX_SAVEPOINT);
    if (rc) {
        snprintf(msg, n, "out of memory");
        return rc;
    }
    if (!(rc = store_stmt_begin(st))) {
        store_enter_internal(st);
        rc = commit_rows(r, x, id);
        store_leave_internal(st);
        int end = store_stmt_end(st, rc);
        rc = rc ? rc : end;
    }
    if (rc) {
        snprintf(msg, n, "%s", rc == LDB_NOMEM ? "out of memory" : store_errmsg(st));
        outbox_cancel(r);
        for (uint32_t i = 0; i < x->nmut; i++)
            if (x->muts[i].key->chain.len == 0)
                x->muts[i].key->kid = 0; /* made for x: never written */
        return rc;
    }
    x->outboxed = true;
    return LDB_OK;
}

void outbox_cancel(struct src_registry *r)
{
    struct store *st = r->env.store;
    if (store_rollback_to(st, OUTBOX_SAVEPOINT) == LDB_OK)
        store_release(st, OUTBOX_SAVEPOINT);
}

/* ---- a step ------------------------------------------------------------------------------ */

static bool keeps_chain(const struct opt_key *k)
{
    for (size_t i = 0; i < k->chain.len; i++)
        if (k->chain.data[i]->txn->fate == OPT_KEEP)
            return true;
    return false;
}

/* Key k as the step leaves it: gone with its chain, or its new base. */
static int step_key(struct src_registry *r, struct table *keys, struct opt_key *k)
{
    value kid = value_int(k->kid);
    row *w = table_lookup(keys, &kid);
    if (!w)
        return store_error(r->env.store, LDB_CORRUPT, "the outbox lost key %lld",
                           (long long)k->kid);
    if (!keeps_chain(k))
        return table_delete(r->env.store, keys, w);
    if (!k->nset)
        return LDB_OK;
    value v[K_NCOLS];
    memcpy(v, w->cols, sizeof v); /* borrowed: only base and unknown change */
    v[K_UNKNOWN] = value_int(k->nunknown);
    value base;
    int rc = row_array(k->nbase, k->ot->t, &base);
    v[K_BASE] = base;
    if (!rc)
        rc = table_update(r->env.store, keys, w, v, NULL);
    value_release(&base);
    return rc;
}

static int step_txn(struct src_registry *r, struct table *muts, const struct opt_txn *x)
{
    for (uint32_t i = 0, seq = 0; i < x->nmut; i++) {
        if (!x->muts[i].key->kid)
            continue; /* a TEMP table's: not in the outbox */
        value key[2] = { value_int((int64_t)x->h->id), value_int(seq++) };
        row *w = table_lookup(muts, key);
        int rc = w ? table_delete(r->env.store, muts, w)
                   : store_error(r->env.store, LDB_CORRUPT, "the outbox lost transaction %llu",
                                 (unsigned long long)x->h->id);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

int outbox_step(struct src_registry *r, char *msg, size_t n)
{
    const struct opt_layer *L = &r->opt;
    if (!durable(r) || (L->touched.len == 0 && L->fated.len == 0))
        return LDB_OK;
    struct table *keys = outbox_table(r, OUTBOX_KEYS), *muts = outbox_table(r, OUTBOX_MUTS);
    int rc = LDB_OK;
    for (size_t i = 0; !rc && i < L->touched.len; i++)
        if (L->touched.data[i]->kid)
            rc = keys ? step_key(r, keys, L->touched.data[i]) : LDB_CORRUPT;
    for (size_t i = 0; !rc && i < L->fated.len; i++)
        rc = muts ? step_txn(r, muts, L->fated.data[i]) : LDB_CORRUPT;
    if (rc)
        snprintf(msg, n, "%s", rc == LDB_NOMEM ? "out of memory" : store_errmsg(r->env.store));
    return rc;
}

/* ---- reopening --------------------------------------------------------------------------- */

/* A row of t from an ARRAY of its declared columns (NULL for NULL). */
static int array_row(const value *v, const struct table *t, row **out)
{
    *out = NULL;
    if (v->h.type == LDB_NULL)
        return LDB_OK;
    uint32_t nv = table_schema(t)->nvisible;
    if (v->h.type != LDB_ARRAY || value_len(v) != nv)
        return LDB_CORRUPT;
    row *w = row_alloc(nv);
    if (!w)
        return LDB_NOMEM;
    value_iter it;
    value_iter_init(&it, v);
    for (uint32_t c = 0; c < nv; c++)
        w->cols[c] = value_copy(value_iter_next(&it));
    *out = w;
    return LDB_OK;
}

struct kid_map {
    int64_t kid;
    struct opt_key *k;
};

static int kid_cmp(const void *a, const void *b)
{
    int64_t x = ((const struct kid_map *)a)->kid, y = ((const struct kid_map *)b)->kid;
    return x < y ? -1 : x > y;
}

static int restore_key(struct src_registry *r, const row *w, struct kid_map *out)
{
    size_t len;
    const char *bytes = value_bytes(&w->cols[K_TBL], &len);
    char *name = w->cols[K_TBL].h.type == LDB_TEXT ? mem_strndup(bytes, len) : NULL;
    struct table *t = name ? store_find_table(r->env.store, name) : NULL;
    if (!name && w->cols[K_TBL].h.type == LDB_TEXT)
        return LDB_NOMEM;
    mem_free(name);
    if (!t || table_is_view_store(t) || !table_declared_key(t))
        return LDB_CORRUPT;
    row *keyrow, *base;
    int rc = array_row(&w->cols[K_KEYROW], t, &keyrow);
    if (!rc && !keyrow)
        rc = LDB_CORRUPT;
    if (rc)
        return rc;
    if ((rc = array_row(&w->cols[K_BASE], t, &base))) {
        row_release(keyrow);
        return rc;
    }
    out->kid = w->cols[K_KID].h.u.i;
    if (out->kid > r->opt.next_kid)
        r->opt.next_kid = out->kid;
    return opt_restore_key(r, t, keyrow, base, w->cols[K_UNKNOWN].h.u.i != 0, out->kid, &out->k);
}

static int restore_keys(struct src_registry *r, struct table *keys, struct kid_map *map)
{
    size_t n = 0;
    struct table_scan sc = table_scan_begin(keys);
    int rc = LDB_OK;
    for (row *w; !rc && (w = table_scan_next(&sc));)
        rc = restore_key(r, w, &map[n++]);
    qsort(map, n, sizeof *map, kid_cmp);
    return rc;
}

static int mut_cmp(const void *a, const void *b)
{
    const row *x = *(row *const *)a, *y = *(row *const *)b;
    for (int c = M_ID; c <= M_SEQ; c++)
        if (x->cols[c].h.u.i != y->cols[c].h.u.i)
            return x->cols[c].h.u.i < y->cols[c].h.u.i ? -1 : 1;
    return 0;
}

/* Transaction of rows ws[0..n) (its mutations in seq order). */
static int restore_txn(struct src_registry *r, row **ws, uint32_t n, const struct kid_map *map,
                       size_t nkeys, struct opt_restored_mut *muts)
{
    int rc = LDB_OK;
    uint32_t i = 0;
    for (; !rc && i < n; i++) {
        struct kid_map probe = { ws[i]->cols[M_KID].h.u.i, NULL };
        const struct kid_map *km = bsearch(&probe, map, nkeys, sizeof *map, kid_cmp);
        int64_t kind = ws[i]->cols[M_KIND].h.u.i;
        muts[i] = (struct opt_restored_mut){ km ? km->k : NULL, (int)kind, NULL, NULL };
        bool in_order = i == 0 || ws[i]->cols[M_SEQ].h.u.i > ws[i - 1]->cols[M_SEQ].h.u.i;
        if (!km || !in_order || kind < LDB_MUTATION_INSERT || kind > LDB_MUTATION_DELETE)
            rc = LDB_CORRUPT;
        if (!rc)
            rc = array_row(&ws[i]->cols[M_BEFORE], km->k->ot->t, &muts[i].before);
        if (!rc)
            rc = array_row(&ws[i]->cols[M_AFTER], km->k->ot->t, &muts[i].after);
        if (!rc && (kind == LDB_MUTATION_INSERT) != !muts[i].before)
            rc = LDB_CORRUPT;
    }
    for (uint32_t j = i; j < n; j++) /* never filled */
        muts[j] = (struct opt_restored_mut){ NULL, 0, NULL, NULL };
    if (rc) {
        for (uint32_t j = 0; j < n; j++) {
            row_release(muts[j].before);
            row_release(muts[j].after);
        }
        return rc;
    }
    return opt_restore_txn(r, (uint64_t)ws[0]->cols[M_ID].h.u.i, muts, n);
}

static int restore_txns(struct src_registry *r, struct table *muts, const struct kid_map *map,
                        size_t nkeys)
{
    size_t n = table_count(muts);
    row **ws = mem_calloc(n ? n : 1, sizeof *ws);
    struct opt_restored_mut *rm = mem_calloc(n ? n : 1, sizeof *rm);
    int rc = ws && rm ? LDB_OK : LDB_NOMEM;
    struct table_scan sc = table_scan_begin(muts);
    for (size_t i = 0; !rc && i < n; i++)
        ws[i] = table_scan_next(&sc);
    if (!rc)
        qsort(ws, n, sizeof *ws, mut_cmp);
    for (size_t at = 0, end; !rc && at < n; at = end) {
        for (end = at + 1; end < n && ws[end]->cols[M_ID].h.u.i == ws[at]->cols[M_ID].h.u.i;)
            end++;
        rc = restore_txn(r, ws + at, (uint32_t)(end - at), map, nkeys, rm);
    }
    mem_free(ws);
    mem_free(rm);
    return rc;
}

int outbox_restore(struct src_registry *r, char *msg, size_t n)
{
    struct table *keys = outbox_table(r, OUTBOX_KEYS), *muts = outbox_table(r, OUTBOX_MUTS);
    int64_t last = durable(r) ? last_txn(outbox_table(r, OUTBOX_IDS)) : 0;
    if (last > 0)
        r->opt.next_id = (uint64_t)last; /* the pending ones' ids are below it */
    if (!durable(r) || !keys || !muts || table_count(muts) == 0)
        return LDB_OK;
    size_t nkeys = table_count(keys);
    struct kid_map *map = mem_calloc(nkeys ? nkeys : 1, sizeof *map);
    int rc = map ? restore_keys(r, keys, map) : LDB_NOMEM;
    if (!rc)
        rc = restore_txns(r, muts, map, nkeys);
    for (size_t i = 0; !rc && map && i < nkeys; i++)
        if (map[i].k->chain.len == 0) /* every kept key has a pending mutation */
            rc = LDB_CORRUPT;
    mem_free(map);
    if (rc == LDB_CORRUPT)
        snprintf(msg, n, "the pending optimistic transactions (%s) do not fit the tables",
                 OUTBOX_MUTS);
    else if (rc)
        snprintf(msg, n, "out of memory");
    return rc;
}
