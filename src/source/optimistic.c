/*
 * optimistic.c - optimistic transactions: the pending layer over the
 * synced state, and its resolution (livedb.h, "optimistic transactions").
 *
 * The tables hold the visible state, so every read, live query and view
 * sees it with no change to the read paths. Beside them the layer keeps,
 * for every key some pending transaction wrote (an overlaid key), the
 * synced row (base) and the chain of pending mutations on it in commit
 * order. Invariant between steps: the stored row of an overlaid key is
 * the fold of its chain over its base (recompute below), and every
 * overlaid key has a non-empty chain; a key nobody overlays is synced as
 * stored.
 *
 * A step (a sync transaction, a confirmation or a rejection) runs in one
 * storage statement: it proposes new bases (sync writes of overlaid keys,
 * confirmed mutations folded in) and fates (confirm, reject), recomputes
 * the keys it touched (a worklist: a rejection queues every key of its
 * transaction, so cascades cost what they touch), and writes the
 * difference to the tables in rounds of two phases: first the stored rows
 * that change are removed, then the new ones inserted, so UNIQUE values
 * may move between rows within a step. A synced write that collides with
 * a stored row joins the step the same way (opt_park), so a sync
 * transaction is judged on its result. The proposal is installed only
 * when the statement commits; a failure forgets it, so the layer and the
 * tables stay as they were.
 *
 * Handles are shared with the program (refs) and hold private copies of
 * the mutations' values, so any thread may read or free them.
 */
#include "source/source_internal.h"

#include "base/interrupt.h"
#include "base/mem.h"
#include "storage/store.h"
#include "storage/table.h"

#include <stdio.h>
#include <string.h>

/* ---- handles (any thread) ------------------------------------------------------------ */

static void pubmut_free(struct opt_pubmut *m)
{
    for (uint32_t c = 0; c < m->ncols; c++) {
        if (m->before)
            value_release(&m->before[c]);
        if (m->after)
            value_release(&m->after[c]);
    }
    mem_free(m->before);
    mem_free(m->after);
    mem_free((char *)m->table);
}

static void handle_unref(ldb_optimistic *h)
{
    if (!h || atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (uint32_t i = 0; i < h->nmut; i++)
        pubmut_free(&h->muts[i]);
    mem_free(h->muts);
    mem_free(h->msg);
    mem_free(h);
}

void ldb_optimistic_ref(ldb_optimistic *o)
{
    if (o)
        atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

void ldb_optimistic_free(ldb_optimistic *o) { handle_unref(o); }

int ldb_optimistic_state(const ldb_optimistic *o)
{
    return o ? atomic_load_explicit(&o->state, memory_order_acquire) : LDB_OPTIMISTIC_REJECTED;
}

const char *ldb_optimistic_error(const ldb_optimistic *o)
{
    return ldb_optimistic_state(o) == LDB_OPTIMISTIC_REJECTED && o ? o->msg : NULL;
}

uint64_t ldb_optimistic_id(const ldb_optimistic *o) { return o ? o->id : 0; }
int ldb_optimistic_count(const ldb_optimistic *o) { return o ? (int)o->nmut : 0; }

static const struct opt_pubmut *pubmut(const ldb_optimistic *o, int i)
{
    return o && i >= 0 && (uint32_t)i < o->nmut ? &o->muts[i] : NULL;
}

int ldb_optimistic_kind(const ldb_optimistic *o, int i)
{
    const struct opt_pubmut *m = pubmut(o, i);
    return m ? m->kind : 0;
}

const char *ldb_optimistic_table(const ldb_optimistic *o, int i)
{
    const struct opt_pubmut *m = pubmut(o, i);
    return m ? m->table : NULL;
}

int ldb_optimistic_columns(const ldb_optimistic *o, int i)
{
    const struct opt_pubmut *m = pubmut(o, i);
    return m ? (int)m->ncols : 0;
}

static const ldb_value *pubmut_value(const ldb_optimistic *o, int i, int col, bool after)
{
    const struct opt_pubmut *m = pubmut(o, i);
    const value *vals = m ? (after ? m->after : m->before) : NULL;
    if (!vals || col < 0 || (uint32_t)col >= m->ncols)
        return NULL;
    return (const ldb_value *)&vals[col];
}

const ldb_value *ldb_optimistic_before(const ldb_optimistic *o, int i, int col)
{
    return pubmut_value(o, i, col, false);
}

const ldb_value *ldb_optimistic_after(const ldb_optimistic *o, int i, int col)
{
    return pubmut_value(o, i, col, true);
}

/* A resolution joins the queue, in order with the sources' items. */
static int resolve_later(ldb_optimistic *o, enum opt_fate fate, const char *msg)
{
    if (!o || atomic_load(&o->orphan))
        return LDB_MISUSE;
    if (ldb_optimistic_state(o) != LDB_OPTIMISTIC_PENDING)
        return LDB_OK; /* resolved: the core has let go of it */
    struct src_item *it = mem_calloc(1, sizeof *it);
    char *copy = msg ? mem_strndup(msg, strlen(msg)) : NULL;
    if (!it || (msg && !copy)) {
        mem_free(it);
        mem_free(copy);
        return LDB_NOMEM;
    }
    ldb_optimistic_ref(o);
    it->opt = o;
    it->rc = (int)fate;
    it->msg = copy;
    return queue_push(o->reg, it);
}

int ldb_optimistic_confirm(ldb_optimistic *o) { return resolve_later(o, OPT_CONFIRM, NULL); }

int ldb_optimistic_reject(ldb_optimistic *o, const char *msg)
{
    return resolve_later(o, OPT_REJECT, msg ? msg : "rejected");
}

/* ---- overlaid keys --------------------------------------------------------------------- */

static struct opt_table *find_table(const struct src_registry *r, const struct table *t)
{
    for (size_t i = 0; i < r->opt.tables.len; i++)
        if (r->opt.tables.data[i]->t == t)
            return r->opt.tables.data[i];
    return NULL;
}

struct key_probe {
    const struct table *t;
    const value *key;
};

static bool key_eq(const void *probe, uint64_t val)
{
    const struct key_probe *p = probe;
    const struct opt_key *k = (const struct opt_key *)(uintptr_t)val;
    return table_key_matches(p->t, p->key, k->keyrow);
}

/* The key values of the row cols (declared columns, key order). */
static void key_of(const struct table *t, const value *cols, value *key)
{
    const struct schema *sc = table_schema(t);
    for (uint32_t i = 0; i < sc->npk; i++)
        key[i] = cols[sc->pk[i]];
}

static uint64_t *key_slot(const struct opt_table *ot, const value *cols)
{
    value key[SCHEMA_MAX_KEY];
    key_of(ot->t, cols, key);
    struct key_probe p = { ot->t, key };
    return hmap_get(&ot->keys, table_key_hash_of(ot->t, key), key_eq, &p);
}

struct opt_key *opt_find(const struct src_registry *r, const struct table *t, const value *cols)
{
    const struct opt_table *ot = find_table(r, t);
    if (!ot || hmap_count(&ot->keys) == 0)
        return NULL;
    uint64_t *v = key_slot(ot, cols);
    return v ? (struct opt_key *)(uintptr_t)*v : NULL;
}

static void key_free(struct opt_key *k)
{
    if (!k)
        return;
    row_release(k->keyrow);
    row_release(k->base);
    row_release(k->nbase);
    vec_free(&k->chain);
    mem_free(k);
}

/* Removes k (its chain is empty) from its table's map. */
static void key_remove(struct src_registry *r, struct opt_key *k)
{
    uint64_t *v = key_slot(k->ot, k->keyrow->cols);
    hmap_del(&k->ot->keys, v);
    if (k->linked) {
        k->ot->t->pending--;
        r->opt.st.rows--;
    }
    key_free(k);
}

/* ---- committing an optimistic transaction ---------------------------------------------- */

static int copy_vals(const row *r, uint32_t n, value **out)
{
    *out = NULL;
    if (!r)
        return LDB_OK;
    value *v = mem_calloc(n, sizeof *v);
    if (!v)
        return LDB_NOMEM;
    *out = v;
    for (uint32_t c = 0; c < n; c++)
        if (pred_value_copy(&r->cols[c], &v[c]))
            return LDB_NOMEM;
    return LDB_OK;
}

static int mutation_kind(const struct change *c)
{
    return !c->old ? LDB_MUTATION_INSERT : !c->new_row ? LDB_MUTATION_DELETE : LDB_MUTATION_UPDATE;
}

/* The public copy of mutation m of table t. */
static int pubmut_fill(struct opt_pubmut *pm, const struct table *t, const struct change *c)
{
    const char *name = table_name(t);
    pm->kind = mutation_kind(c);
    pm->ncols = table_schema(t)->nvisible;
    if (!(pm->table = mem_strndup(name, strlen(name))))
        return LDB_NOMEM;
    int rc = copy_vals(c->old, pm->ncols, &pm->before);
    return rc ? rc : copy_vals(c->new_row, pm->ncols, &pm->after);
}

static int table_of(struct src_registry *r, struct table *t, struct opt_table **out)
{
    if ((*out = find_table(r, t)))
        return LDB_OK;
    struct opt_table *ot = mem_calloc(1, sizeof *ot);
    if (!ot || vec_push(&r->opt.tables, ot)) {
        mem_free(ot);
        return LDB_NOMEM;
    }
    ot->t = t;
    *out = ot;
    return LDB_OK;
}

/* The key of t with the primary key of cols, with room for one more
 * mutation in its chain; made (*made, keyrow and base still to set)
 * when nobody overlays it yet. The key is hashed once. */
static int key_get(struct src_registry *r, struct table *t, const value *cols,
                   struct opt_key **out, bool *made)
{
    struct opt_table *ot;
    int rc = table_of(r, t, &ot);
    if (rc)
        return rc;
    value key[SCHEMA_MAX_KEY];
    key_of(t, cols, key);
    struct key_probe p = { t, key };
    uint64_t h = table_key_hash_of(t, key);
    uint64_t *v = hmap_get(&ot->keys, h, key_eq, &p);
    if ((*made = !v)) {
        struct opt_key *k = mem_calloc(1, sizeof *k);
        bool found;
        if (!k || vec_reserve(&k->chain, 1) || hmap_put(&ot->keys, h, key_eq, &p, &v, &found)) {
            key_free(k);
            return LDB_NOMEM;
        }
        k->ot = ot;
        *v = (uint64_t)(uintptr_t)k;
    }
    *out = (struct opt_key *)(uintptr_t)*v;
    return *made || !vec_reserve(&(*out)->chain, 1) ? LDB_OK : LDB_NOMEM;
}

/* The key change c writes (made, with an empty chain, when not overlaid
 * yet: its base is the row before c, synced as it was not overlaid). */
static int key_for(struct src_registry *r, struct table *t, const struct change *c,
                   struct opt_key **out)
{
    row *any = c->new_row ? c->new_row : c->old;
    bool made;
    int rc = key_get(r, t, any->cols, out, &made);
    if (!rc && made) {
        (*out)->keyrow = row_retain(any);
        (*out)->base = c->old ? row_retain(c->old) : NULL;
    }
    return rc;
}

static void txn_free(struct opt_txn *x)
{
    for (uint32_t i = 0; i < x->nmut; i++) {
        row_release(x->muts[i].before);
        row_release(x->muts[i].after);
    }
    mem_free(x->muts);
    mem_free(x->why);
    mem_free(x);
}

void src_opt_cancel(struct src_registry *r, struct opt_txn *x)
{
    if (!x)
        return;
    if (x->outboxed)
        outbox_cancel(r);
    for (uint32_t i = 0; i < x->nmut; i++)
        if (x->muts[i].key && x->muts[i].key->chain.len == 0)
            key_remove(r, x->muts[i].key); /* made for x alone */
    handle_unref(x->h);
    txn_free(x);
}

static int prepare_change(struct src_registry *r, struct opt_txn *x, struct table *t,
                          const struct change *c)
{
    struct opt_mut *m = &x->muts[x->nmut];
    struct opt_pubmut *pm = &x->h->muts[x->h->nmut++];
    int rc = pubmut_fill(pm, t, c);
    if (!rc)
        rc = key_for(r, t, c, &m->key);
    if (rc)
        return rc;
    x->nmut++;
    m->txn = x;
    m->kind = (uint8_t)mutation_kind(c);
    m->before = c->old ? row_retain(c->old) : NULL;
    m->after = c->new_row ? row_retain(c->new_row) : NULL;
    return LDB_OK;
}

static int check_delta(const struct delta *d, char *msg, size_t n)
{
    if (d->schema_changed) {
        snprintf(msg, n, "an optimistic transaction cannot change the schema");
        return LDB_ERROR;
    }
    for (size_t i = 0; i < d->ntables; i++) {
        const struct table *t = d->tables[i].table;
        if (!table_is_view_store(t) && !table_declared_key(t)) {
            snprintf(msg, n,
                     "an optimistic transaction can write only tables with a declared "
                     "PRIMARY KEY: %s has none",
                     table_name(t));
            return LDB_ERROR;
        }
    }
    return LDB_OK;
}

static int prepare_all(struct src_registry *r, struct opt_txn *x, const struct delta *d)
{
    size_t n = 0;
    for (size_t i = 0; i < d->ntables; i++)
        n += table_is_view_store(d->tables[i].table) ? 0 : d->tables[i].n;
    x->h->muts = mem_calloc(n ? n : 1, sizeof *x->h->muts);
    x->muts = mem_calloc(n ? n : 1, sizeof *x->muts);
    if (!x->h->muts || !x->muts)
        return LDB_NOMEM;
    for (size_t i = 0; i < d->ntables; i++) {
        const struct table_delta *td = &d->tables[i];
        for (size_t j = 0; !table_is_view_store(td->table) && j < td->n; j++) {
            int rc = prepare_change(r, x, td->table, &td->changes[j]);
            if (rc)
                return rc;
        }
    }
    return LDB_OK;
}

/* A pending transaction's record and its handle (one reference, the
 * core's), or NULL. */
static struct opt_txn *txn_new(struct src_registry *r)
{
    struct opt_txn *x = mem_calloc(1, sizeof *x);
    ldb_optimistic *h = mem_calloc(1, sizeof *h);
    if (!x || !h) {
        mem_free(x);
        mem_free(h);
        return NULL;
    }
    atomic_init(&h->refs, 1);
    atomic_init(&h->state, LDB_OPTIMISTIC_PENDING);
    atomic_init(&h->orphan, false);
    h->reg = r;
    h->home = pthread_self();
    x->h = h;
    return x;
}

int src_opt_prepare(struct src_registry *r, struct opt_txn **out, char *msg, size_t n)
{
    *out = NULL;
    struct delta *d = NULL;
    int rc = store_txn_changes(r->env.store, &d);
    if (rc) {
        snprintf(msg, n, "%s", rc == LDB_NOMEM ? "out of memory" : store_errmsg(r->env.store));
        return rc;
    }
    if ((rc = check_delta(d, msg, n))) {
        delta_free(d);
        return rc;
    }
    struct opt_txn *x = txn_new(r);
    if (!x) {
        delta_free(d);
        snprintf(msg, n, "out of memory");
        return LDB_NOMEM;
    }
    rc = prepare_all(r, x, d);
    delta_free(d);
    if (rc)
        snprintf(msg, n, "out of memory");
    else /* the id src_opt_install gives it */
        rc = outbox_commit(r, x, r->opt.next_id + 1, msg, n);
    if (rc) {
        src_opt_cancel(r, x);
        return rc;
    }
    *out = x;
    return LDB_OK;
}

/* Rows of t changed outside its sync transactions: its ordered windows
 * re-check (an optimistic delete may leave one short of rows). */
static void table_wrote(struct src_registry *r, const struct table *t, const struct table **last)
{
    if (t == *last)
        return;
    *last = t;
    ldb_source *s = src_of_table(r, t);
    if (s)
        ordered_source_wrote(s);
}

ldb_optimistic *src_opt_install(struct src_registry *r, struct opt_txn *x)
{
    ldb_optimistic *h = x->h;
    h->id = ++r->opt.next_id;
    if (x->nmut == 0) { /* nothing to wait for */
        atomic_store(&h->state, LDB_OPTIMISTIC_CONFIRMED);
        txn_free(x);
        return h;
    }
    atomic_fetch_add(&h->refs, 1); /* the core's, and the program's */
    h->txn = x;
    r->opt.st.pending++;
    x->prev = r->opt.tail;
    if (r->opt.tail)
        r->opt.tail->next = x;
    else
        r->opt.head = x;
    r->opt.tail = x;
    const struct table *last = NULL;
    for (uint32_t i = 0; i < x->nmut; i++) {
        struct opt_key *k = x->muts[i].key;
        table_wrote(r, k->ot->t, &last);
        if (!k->linked) {
            k->linked = true;
            k->ot->t->pending++;
            r->opt.st.rows++;
        }
        k->chain.data[k->chain.len++] = &x->muts[i]; /* room reserved */
    }
    return h;
}

void src_opt_stats(const struct src_registry *r, ldb_optimistic_stats *out) { *out = r->opt.st; }

void src_set_resolved_callback(struct src_registry *r, ldb_resolved_fn fn, void *ctx)
{
    r->opt.resolved = fn;
    r->opt.resolved_ctx = ctx;
}

/* ---- a step's proposal ------------------------------------------------------------------ */

static int queue_key(struct src_registry *r, struct opt_key *k)
{
    struct opt_layer *L = &r->opt;
    if (!k->touched) {
        if (vec_push(&L->touched, k))
            return LDB_NOMEM;
        k->touched = true;
    }
    if (!k->queued) {
        if (vec_push(&L->work, k))
            return LDB_NOMEM;
        k->queued = true;
    }
    return LDB_OK;
}

static row *cur_base(const struct opt_key *k, bool *unknown)
{
    *unknown = k->nset ? k->nunknown : k->unknown;
    return k->nset ? k->nbase : k->base;
}

/* Proposes base (a reference passed in, or NULL) for k. */
static void propose(struct opt_key *k, row *base, bool unknown)
{
    row_release(k->nbase);
    k->nbase = base;
    k->nunknown = unknown;
    k->nset = true;
}

int opt_sync_write(struct src_registry *r, struct opt_key *k, int op, const value *vals,
                   char *msg, size_t n)
{
    uint32_t nv = table_schema(k->ot->t)->nvisible;
    bool unknown;
    row *cur = cur_base(k, &unknown);
    if (op == SYNC_UPDATE && !cur)
        return LDB_OK; /* not loaded here: nothing to update */
    if (op == SYNC_INSERT && cur && !same_vals(cur->cols, vals, nv)) {
        snprintf(msg, n, "a sync insert conflicts with a different synced row of the same key");
        return LDB_CONSTRAINT;
    }
    row *next = NULL;
    if (op != SYNC_DELETE && !(next = row_from(vals, nv))) {
        snprintf(msg, n, "out of memory");
        return LDB_NOMEM;
    }
    int rc = queue_key(r, k);
    if (rc) {
        row_release(next);
        snprintf(msg, n, "out of memory");
        return rc;
    }
    propose(k, next, false);
    k->synced = true;
    return LDB_OK;
}

int opt_truncate(struct src_registry *r, const struct table *t)
{
    struct opt_table *ot = find_table(r, t);
    if (!ot)
        return LDB_OK;
    uint32_t pos = 0;
    for (uint64_t *v; (v = hmap_next(&ot->keys, &pos, NULL));) {
        struct opt_key *k = (struct opt_key *)(uintptr_t)*v;
        int rc = queue_key(r, k);
        if (rc)
            return rc;
        propose(k, NULL, true);
        k->synced = false;
    }
    return LDB_OK;
}

/* The values of update m put onto cur (in buf, borrowed): the columns
 * m changed, the rest as cur has them. */
static void merge_update(const struct opt_mut *m, const value *cur, value *buf, uint32_t nv)
{
    for (uint32_t c = 0; c < nv; c++)
        buf[c] = value_identical(&m->before->cols[c], &m->after->cols[c]) ? cur[c]
                                                                         : m->after->cols[c];
}

/* The synced row once m is accepted as written over base (a new
 * reference, NULL for no row); LDB_NOMEM. */
static int fold_accepted(const struct opt_mut *m, row *base, bool unknown, value *buf,
                         uint32_t nv, row **out)
{
    *out = NULL;
    if (m->kind == LDB_MUTATION_DELETE)
        return LDB_OK;
    if (m->kind == LDB_MUTATION_INSERT || !base || unknown ||
        same_vals(base->cols, m->before->cols, nv)) {
        *out = row_retain(m->after);
        return LDB_OK;
    }
    merge_update(m, base->cols, buf, nv);
    return (*out = row_from(buf, nv)) ? LDB_OK : LDB_NOMEM;
}

static int scratch(struct src_registry *r, const struct table *t, value **buf)
{
    uint32_t nv = table_schema(t)->nvisible;
    if (vec_reserve(&r->opt.scratch, nv))
        return LDB_NOMEM;
    *buf = r->opt.scratch.data;
    return LDB_OK;
}

static int mark_confirm(struct src_registry *r, struct opt_txn *x)
{
    for (uint32_t i = 0; i < x->nmut; i++) {
        struct opt_mut *m = &x->muts[i];
        struct opt_key *k = m->key;
        int rc = queue_key(r, k);
        if (rc)
            return rc;
        if (k->synced)
            continue; /* the server's own version came with the step */
        value *buf;
        bool unknown;
        row *base = cur_base(k, &unknown), *next;
        if ((rc = scratch(r, k->ot->t, &buf)) ||
            (rc = fold_accepted(m, base, unknown, buf, table_schema(k->ot->t)->nvisible, &next)))
            return rc;
        propose(k, next, false);
    }
    return LDB_OK;
}

int opt_mark(struct src_registry *r, ldb_optimistic *h, enum opt_fate fate, const char *why)
{
    struct opt_txn *x = h->txn;
    if (!x || x->fate != OPT_KEEP)
        return LDB_OK; /* resolved already, or in this step */
    struct opt_layer *L = &r->opt;
    /* room for every transaction the step resolves, for the install */
    if (vec_reserve(&L->fated, 1) || vec_reserve(&L->notify, L->fated.len + 1))
        return LDB_NOMEM;
    if (fate == OPT_REJECT && !(x->why = mem_strndup(why, strlen(why))))
        return LDB_NOMEM;
    L->fated.data[L->fated.len++] = x;
    x->fate = (uint8_t)fate;
    if (fate == OPT_CONFIRM)
        return mark_confirm(r, x);
    for (uint32_t i = 0; i < x->nmut; i++) {
        int rc = queue_key(r, x->muts[i].key);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

/* ---- recomputing the visible rows ------------------------------------------------------ */

static int fail_nomem(char *msg, size_t n)
{
    snprintf(msg, n, "out of memory");
    return LDB_NOMEM;
}

static int reject(struct src_registry *r, struct opt_txn *x, const char *fmt, const char *what)
{
    char why[400];
    snprintf(why, sizeof why, fmt, what);
    return opt_mark(r, x->h, OPT_REJECT, why);
}

/* The last mutation on k still pending in this step, or NULL. */
static struct opt_mut *last_kept(const struct opt_key *k)
{
    for (size_t i = k->chain.len; i-- > 0;)
        if (k->chain.data[i]->txn->fate == OPT_KEEP)
            return k->chain.data[i];
    return NULL;
}

/*
 * The visible row of k: its kept chain folded over its (proposed) base,
 * in buf (values borrowed from rows the step keeps alive). *present says
 * whether there is a row. An update that finds no row rejects its
 * transaction: *rejected, and k is queued again with the others.
 */
static int fold_visible(struct src_registry *r, struct opt_key *k, value *buf, bool *present,
                        bool *rejected)
{
    uint32_t nv = table_schema(k->ot->t)->nvisible;
    bool unknown;
    const row *start = cur_base(k, &unknown);
    struct opt_mut *first = NULL;
    for (size_t i = 0; !first && i < k->chain.len; i++)
        if (k->chain.data[i]->txn->fate == OPT_KEEP)
            first = k->chain.data[i];
    if (unknown) /* as if the synced row were what the first write saw */
        start = first ? first->before : NULL;
    if ((*present = start != NULL))
        memcpy(buf, start->cols, nv * sizeof *buf);
    for (size_t i = 0; i < k->chain.len; i++) {
        const struct opt_mut *m = k->chain.data[i];
        if (m->txn->fate != OPT_KEEP)
            continue;
        if (m->kind == LDB_MUTATION_DELETE) {
            *present = false;
        } else if (m->kind == LDB_MUTATION_INSERT) {
            memcpy(buf, m->after->cols, nv * sizeof *buf);
            *present = true;
        } else if (!*present) {
            *rejected = true;
            return reject(r, m->txn, "the row it updates in table %s no longer exists",
                          table_name(k->ot->t));
        } else {
            merge_update(m, buf, buf, nv);
        }
    }
    return LDB_OK;
}

/* A row of k to insert in phase B: its values' place in the step's
 * buffer. */
struct opt_row {
    struct opt_key *k;
    size_t at;
};

/* Phase A for k: its visible row folded into vals; the stored row
 * removed when it is to change, so phase B's inserts meet only the rows
 * that stay (a swap of UNIQUE values within a step is no conflict). */
static int settle_fold(struct src_registry *r, struct opt_key *k, value *vals, bool *insert,
                       char *msg, size_t n)
{
    struct table *t = k->ot->t;
    bool present, rejected = false;
    *insert = false;
    r->opt.st.recomputed++;
    int rc = fold_visible(r, k, vals, &present, &rejected);
    if (rc || rejected)
        return rc ? fail_nomem(msg, n) : LDB_OK;
    row *stored = table_lookup_row(t, k->keyrow);
    if (stored && present && same_vals(stored->cols, vals, table_schema(t)->nvisible))
        return LDB_OK;
    if (stored && (rc = table_delete(r->env.store, t, stored)))
        return fail_nomem(msg, n);
    *insert = present;
    return LDB_OK;
}

/*
 * Phase B's insert of k's row collided (UNIQUE) with conflict. When the
 * other row is queued (a rejection in this round changed it), k waits for
 * the next round. Else the latest transaction behind k's row loses, or
 * the one behind the other row (a synced row always wins), and k is
 * recomputed again. Two synced rows that collide fail the step.
 */
static int settle_conflict(struct src_registry *r, struct opt_key *k, const row *conflict,
                           char *msg, size_t n)
{
    char what[300];
    snprintf(what, sizeof what, "%s", store_errmsg(r->env.store));
    struct opt_key *other = conflict ? opt_find(r, k->ot->t, conflict->cols) : NULL;
    if (other && other->queued)
        return queue_key(r, k) ? fail_nomem(msg, n) : LDB_OK;
    struct opt_mut *m = last_kept(k);
    if (!m && other)
        m = last_kept(other);
    if (!m) {
        snprintf(msg, n, "%s", what);
        return LDB_CONSTRAINT;
    }
    int rc = reject(r, m->txn, "re-applied over the synced state it breaks a constraint: %s",
                    what);
    if (!rc)
        rc = queue_key(r, k);
    return rc ? fail_nomem(msg, n) : LDB_OK;
}

/* Recomputes one round of queued keys: phase A folds and removes, phase
 * B inserts. */
static int settle_round(struct src_registry *r, size_t from, size_t to, char *msg, size_t n)
{
    struct opt_layer *L = &r->opt;
    size_t need = 0;
    for (size_t i = from; i < to; i++)
        need += table_schema(L->work.data[i]->ot->t)->nvisible;
    vec_clear(&L->rows);
    if (vec_reserve(&L->scratch, need) || vec_reserve(&L->rows, to - from))
        return fail_nomem(msg, n);
    size_t at = 0;
    for (size_t i = from; i < to; i++) {
        struct opt_key *k = L->work.data[i];
        bool insert;
        k->queued = false;
        int rc = settle_fold(r, k, L->scratch.data + at, &insert, msg, n);
        if (rc)
            return rc;
        if (insert)
            L->rows.data[L->rows.len++] = (struct opt_row){ k, at };
        at += table_schema(k->ot->t)->nvisible;
    }
    for (size_t i = 0; i < L->rows.len; i++) {
        struct opt_row *w = &L->rows.data[i];
        row *conflict = NULL;
        int rc = table_insert(r->env.store, w->k->ot->t, L->scratch.data + w->at, &conflict);
        if (rc == LDB_CONSTRAINT)
            rc = settle_conflict(r, w->k, conflict, msg, n);
        else if (rc)
            snprintf(msg, n, "%s", store_errmsg(r->env.store));
        if (rc)
            return rc;
    }
    return LDB_OK;
}

int opt_settle(struct src_registry *r, char *msg, size_t n)
{
    struct opt_layer *L = &r->opt;
    while (L->work_at < L->work.len) {
        size_t from = L->work_at, to = L->work.len;
        L->work_at = to;
        int rc = settle_round(r, from, to, msg, n);
        if (rc)
            return rc;
    }
    return outbox_step(r, msg, n); /* the step as a durable database keeps it */
}

int opt_park(struct src_registry *r, struct table *t, row *old, const value *vals, int op,
             char *msg, size_t n)
{
    row *keyrow = old ? row_retain(old) : row_from(vals, table_schema(t)->nvisible);
    struct opt_key *k;
    bool made;
    if (!keyrow || key_get(r, t, vals, &k, &made)) {
        row_release(keyrow);
        return fail_nomem(msg, n);
    }
    if (made) { /* always: a key nobody overlays is parked */
        k->keyrow = keyrow;
        k->base = old ? row_retain(old) : NULL; /* not overlaid: stored = synced */
    } else {
        row_release(keyrow);
    }
    int rc = queue_key(r, k);
    if (rc) {
        if (!k->touched && !k->chain.len) /* else the step's end removes it */
            key_remove(r, k);
        return fail_nomem(msg, n);
    }
    return opt_sync_write(r, k, op, vals, msg, n);
}

/* ---- installing or forgetting a step ----------------------------------------------------- */

static void drop_fated(struct opt_key *k)
{
    size_t w = 0;
    for (size_t i = 0; i < k->chain.len; i++)
        if (k->chain.data[i]->txn->fate == OPT_KEEP)
            k->chain.data[w++] = k->chain.data[i];
    k->chain.len = w;
}

static void resolve_txn(struct src_registry *r, struct opt_txn *x)
{
    struct opt_layer *L = &r->opt;
    if (x->prev)
        x->prev->next = x->next;
    else
        L->head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        L->tail = x->prev;
    ldb_optimistic *h = x->h;
    h->txn = NULL;
    L->st.pending--;
    if (x->fate == OPT_REJECT) {
        L->st.rejected++;
        h->msg = x->why;
        x->why = NULL;
    } else {
        L->st.confirmed++;
    }
    atomic_store_explicit(&h->state,
                          x->fate == OPT_REJECT ? LDB_OPTIMISTIC_REJECTED
                                                : LDB_OPTIMISTIC_CONFIRMED,
                          memory_order_release);
    L->notify.data[L->notify.len++] = h; /* room reserved by opt_mark */
    txn_free(x);
}

void opt_step_end(struct src_registry *r, bool ok)
{
    struct opt_layer *L = &r->opt;
    const struct table *last = NULL;
    for (size_t i = 0; i < L->touched.len; i++) {
        struct opt_key *k = L->touched.data[i];
        if (ok)
            table_wrote(r, k->ot->t, &last);
        if (ok && k->nset) {
            row_release(k->base);
            k->base = k->nbase;
            k->unknown = k->nunknown;
        } else {
            row_release(k->nbase);
        }
        k->nbase = NULL;
        k->nset = k->touched = k->queued = k->synced = false;
        if (ok)
            drop_fated(k);
    }
    for (size_t i = 0; i < L->fated.len; i++) {
        struct opt_txn *x = L->fated.data[i];
        if (ok) {
            resolve_txn(r, x);
        } else {
            x->fate = OPT_KEEP;
            mem_free(x->why);
            x->why = NULL;
        }
    }
    for (size_t i = 0; i < L->touched.len; i++) /* parked keys go either way */
        if (L->touched.data[i]->chain.len == 0 && (ok || !L->touched.data[i]->linked))
            key_remove(r, L->touched.data[i]);
    vec_clear(&L->fated);
    vec_clear(&L->touched);
    vec_clear(&L->work);
    L->work_at = 0;
}

void opt_notify(struct src_registry *r)
{
    struct opt_layer *L = &r->opt;
    for (size_t i = 0; i < L->notify.len; i++) {
        ldb_optimistic *h = L->notify.data[i];
        if (L->resolved) {
            provider_enter(r);
            L->resolved(L->resolved_ctx, h, ldb_optimistic_state(h));
            provider_leave(r);
        }
        handle_unref(h);
    }
    vec_clear(&L->notify);
}

/* ---- resolutions from the queue, and closing ------------------------------------------- */

int opt_step(struct src_registry *r, opt_propose_fn proposal, void *ctx)
{
    struct store *st = r->env.store;
    char msg[200];
    int rc = store_stmt_begin(st);
    if (rc)
        return rc;
    store_enter_internal(st);
    rc = proposal(r, ctx, msg, sizeof msg);
    if (!rc)
        rc = opt_settle(r, msg, sizeof msg);
    store_leave_internal(st);
    struct intr *scope = intr_swap(NULL); /* maintenance must not stop halfway */
    int end = store_stmt_end(st, rc);
    intr_swap(scope);
    r->env.wrote(r->env.ctx);
    opt_step_end(r, !rc && !end);
    opt_notify(r);
    return rc ? rc : end;
}

static int mark_item(struct src_registry *r, void *ctx, char *msg, size_t n)
{
    (void)msg, (void)n;
    struct src_item *it = ctx;
    return opt_mark(r, it->opt, (enum opt_fate)it->rc, it->msg);
}

int opt_resolve(struct src_registry *r, struct src_item *it)
{
    if (!it->opt->txn)
        return LDB_OK; /* resolved meanwhile */
    return opt_step(r, mark_item, it);
}

/* ---- a durable database reopened (outbox.c) ---------------------------------------------- */

int src_opt_restore(struct src_registry *r, char *msg, size_t n)
{
    return outbox_restore(r, msg, n);
}

int src_opt_pending(struct src_registry *r, ldb_optimistic ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!r->opt.head)
        return LDB_OK;
    ldb_optimistic **hs = mem_calloc(r->opt.st.pending, sizeof *hs);
    if (!hs)
        return LDB_NOMEM;
    for (struct opt_txn *x = r->opt.head; x; x = x->next) {
        ldb_optimistic_ref(x->h);
        hs[(*n)++] = x->h;
    }
    *out = hs;
    return LDB_OK;
}

int opt_restore_key(struct src_registry *r, struct table *t, row *keyrow, row *base,
                    bool unknown, int64_t kid, struct opt_key **out)
{
    bool made;
    int rc = key_get(r, t, keyrow->cols, out, &made);
    if (!rc && !made)
        rc = LDB_CORRUPT; /* two rows of the outbox for one key */
    if (rc) {
        row_release(keyrow);
        row_release(base);
        return rc;
    }
    (*out)->keyrow = keyrow;
    (*out)->base = base;
    (*out)->unknown = unknown;
    (*out)->kid = kid;
    return LDB_OK;
}

static int restored_pubmut(struct opt_pubmut *pm, const struct opt_restored_mut *m)
{
    struct change c = { m->before, m->after };
    return pubmut_fill(pm, m->key->ot->t, &c);
}

int opt_restore_txn(struct src_registry *r, uint64_t id, struct opt_restored_mut *muts,
                    uint32_t n)
{
    struct opt_txn *x = txn_new(r);
    int rc = x ? LDB_OK : LDB_NOMEM;
    if (x) {
        x->h->muts = mem_calloc(n, sizeof *x->h->muts);
        x->muts = mem_calloc(n, sizeof *x->muts);
        rc = x->h->muts && x->muts ? LDB_OK : LDB_NOMEM;
    }
    if (x && x->muts) { /* x owns the rows from here */
        for (uint32_t i = 0; i < n; i++)
            x->muts[i] = (struct opt_mut){ x, muts[i].key, (uint8_t)muts[i].kind,
                                           muts[i].before, muts[i].after };
        x->nmut = n;
    } else {
        for (uint32_t i = 0; i < n; i++) {
            row_release(muts[i].before);
            row_release(muts[i].after);
        }
    }
    for (uint32_t i = 0; !rc && i < n; i++) {
        rc = vec_reserve(&muts[i].key->chain, 1);
        if (!rc)
            rc = restored_pubmut(&x->h->muts[x->h->nmut++], &muts[i]);
    }
    if (rc) {
        if (x) {
            ldb_optimistic *h = x->h;
            txn_free(x);
            handle_unref(h);
        }
        return rc;
    }
    uint64_t next = r->opt.next_id;
    r->opt.next_id = id - 1;
    ldb_optimistic *mine = src_opt_install(r, x); /* the id it gives is id */
    r->opt.next_id = next > id ? next : id;
    handle_unref(mine); /* the program's reference: none here */
    return LDB_OK;
}

void opt_free(struct src_registry *r)
{
    struct opt_layer *L = &r->opt;
    while (L->head) {
        struct opt_txn *x = L->head;
        L->head = x->next;
        x->h->txn = NULL;
        atomic_store(&x->h->orphan, true);
        handle_unref(x->h);
        txn_free(x);
    }
    for (size_t i = 0; i < L->tables.len; i++) {
        struct opt_table *ot = L->tables.data[i];
        uint32_t pos = 0;
        for (uint64_t *v; (v = hmap_next(&ot->keys, &pos, NULL));)
            key_free((struct opt_key *)(uintptr_t)*v);
        hmap_free(&ot->keys);
        mem_free(ot);
    }
    vec_free(&L->tables);
    vec_free(&L->touched);
    vec_free(&L->work);
    vec_free(&L->fated);
    vec_free(&L->notify);
    vec_free(&L->scratch);
    vec_free(&L->rows);
}
