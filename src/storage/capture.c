/*
 * capture.c - consolidating stretches of the undo log into deltas (see
 * capture.h), and pulling them by mark.
 *
 * One pass over the stretch: every row entry touches one or two keys
 * (table, primary key); a hash table from key to slot keeps, per key, the
 * row before its first touch and the row after its last. A slot whose
 * before and after are both absent or identical is no change. Slots are
 * then grouped by table with a counting sort on the table's order of
 * first appearance, keeping first-touch order inside each table.
 */
#include "storage/store_impl.h"

#include "base/hash.h"
#include "base/hmap.h"
#include "base/mem.h"

#include <string.h>

struct slot {
    struct table *t;
    const row *keyrow; /* names the key; borrowed from the log */
    row *first_old;    /* borrowed from the log */
    row *last_new;
    uint32_t tno;      /* the table's order of first appearance */
};

struct builder {
    VEC(struct slot) slots;
    VEC(struct table *) tables;
    hmap map;          /* (table, key) -> slot index */
};

/* hmap probe: a table and a row naming the key. */
struct key_ref {
    const struct builder *b;
    const struct table *t;
    const row *r;
};

static bool key_ref_eq(const void *key, uint64_t val)
{
    const struct key_ref *k = key;
    const struct slot *s = &k->b->slots.data[val];
    return s->t == k->t && table_key_eq(k->t, k->r, s->keyrow);
}

static uint32_t table_number(struct builder *b, struct table *t, int *rc)
{
    for (size_t i = b->tables.len; i-- > 0;)
        if (b->tables.data[i] == t)
            return (uint32_t)i;
    *rc = vec_push(&b->tables, t);
    return (uint32_t)(b->tables.len - 1);
}

/* One touch of key(keyrow) in table t: before o, after n. */
static int touch(struct builder *b, struct table *t, const row *keyrow, row *o, row *n)
{
    uint64_t h = hash_combine(hash_u64((uint64_t)(uintptr_t)t), table_key_hash(t, keyrow));
    struct key_ref k = { b, t, keyrow };
    uint64_t *v;
    bool found;
    int rc = vec_reserve(&b->slots, 1);
    if (rc == LDB_OK)
        rc = hmap_put(&b->map, h, key_ref_eq, &k, &v, &found);
    if (rc != LDB_OK)
        return rc;
    if (found) {
        b->slots.data[*v].last_new = n;
        return LDB_OK;
    }
    uint32_t tno = table_number(b, t, &rc);
    if (rc != LDB_OK) {
        hmap_del(&b->map, v);
        return rc;
    }
    *v = b->slots.len;
    b->slots.data[b->slots.len++] = (struct slot){ t, keyrow, o, n, tno };
    return LDB_OK;
}

static int touch_entry(struct builder *b, const struct undo_entry *e)
{
    switch (e->kind) {
    case UNDO_INSERT:
        return touch(b, e->t, e->new_row, NULL, e->new_row);
    case UNDO_DELETE:
        return touch(b, e->t, e->a.old, e->a.old, NULL);
    case UNDO_UPDATE:
        if (table_key_eq(e->t, e->a.old, e->new_row))
            return touch(b, e->t, e->a.old, e->a.old, e->new_row);
        {
            int rc = touch(b, e->t, e->a.old, e->a.old, NULL);
            return rc ? rc : touch(b, e->t, e->new_row, NULL, e->new_row);
        }
    default:
        return LDB_OK;
    }
}

static bool is_change(const struct slot *s)
{
    if (!s->first_old || !s->last_new)
        return s->first_old || s->last_new;
    return !row_identical(s->first_old, s->last_new);
}

static struct delta *delta_alloc(size_t ntables, size_t nchanges)
{
    struct delta *d = mem_calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->tables = mem_calloc(ntables ? ntables : 1, sizeof *d->tables);
    d->changes = mem_alloc((nchanges ? nchanges : 1) * sizeof *d->changes);
    if (!d->tables || !d->changes) {
        delta_free(d);
        return NULL;
    }
    return d;
}

/* Counting sort of the changed slots by table; end[t] becomes the end of
 * table t's changes in d->changes. */
static void group_by_table(const struct builder *b, struct delta *d, size_t *end)
{
    size_t nt = b->tables.len;
    for (size_t i = 0; i < b->slots.len; i++)
        if (is_change(&b->slots.data[i]))
            end[b->slots.data[i].tno + 1]++;
    for (size_t i = 0; i < nt; i++)
        end[i + 1] += end[i];
    for (size_t i = 0; i < b->slots.len; i++) {
        const struct slot *s = &b->slots.data[i];
        if (!is_change(s))
            continue;
        struct change *c = &d->changes[end[s->tno]++];
        c->old = s->first_old ? row_retain(s->first_old) : NULL;
        c->new_row = s->last_new ? row_retain(s->last_new) : NULL;
        d->nchanges++;
    }
}

static struct delta *assemble(struct builder *b, size_t from, size_t to)
{
    size_t nt = b->tables.len;
    struct delta *d = delta_alloc(nt, b->slots.len);
    size_t *end = mem_calloc(nt + 1, sizeof *end);
    if (!d || !end) {
        mem_free(end);
        delta_free(d);
        return NULL;
    }
    group_by_table(b, d, end);
    for (size_t i = 0, at = 0; i < nt; i++) {
        if (end[i] > at)
            d->tables[d->ntables++] =
                (struct table_delta){ b->tables.data[i], d->changes + at, end[i] - at };
        at = end[i];
    }
    d->from = from;
    d->to = to;
    mem_free(end);
    return d;
}

int delta_build(const struct store *s, size_t from, size_t to, bool skip_dropped,
                struct delta **out)
{
    struct builder b = { VEC_INIT, VEC_INIT, HMAP_INIT };
    int rc = LDB_OK;
    for (size_t i = from; i < to && rc == LDB_OK; i++) {
        const struct undo_entry *e = &s->undo.data[i];
        if (!(skip_dropped && e->t && e->t->dropped))
            rc = touch_entry(&b, e);
    }
    *out = rc == LDB_OK ? assemble(&b, from, to) : NULL;
    if (rc == LDB_OK && !*out)
        rc = LDB_NOMEM;
    for (size_t i = from; rc == LDB_OK && i < to && !(*out)->schema_changed; i++)
        (*out)->schema_changed = undo_is_schema(&s->undo.data[i]);
    vec_free(&b.slots);
    vec_free(&b.tables);
    hmap_free(&b.map);
    return rc;
}

const struct table_delta *delta_for_table(const struct delta *d, const struct table *t)
{
    for (size_t i = 0; i < d->ntables; i++)
        if (d->tables[i].table == t)
            return &d->tables[i];
    return NULL;
}

void delta_free(struct delta *d)
{
    if (!d)
        return;
    for (size_t i = 0; d->changes && i < d->nchanges; i++) {
        row_release(d->changes[i].old);
        row_release(d->changes[i].new_row);
    }
    mem_free(d->changes);
    mem_free(d->tables);
    mem_free(d);
}

struct store_mark store_mark(const struct store *s)
{
    struct store_mark m = { s->txn_id, s->epoch, s->undo.len };
    return m;
}

int store_txn_changes(struct store *s, struct delta **out)
{
    *out = NULL;
    if (!store_in_transaction(s))
        return store_error(s, LDB_MISUSE, "no open transaction");
    return delta_build(s, 0, s->undo.len, false, out);
}

int store_changes_since(struct store *s, struct store_mark mark, struct delta **out)
{
    *out = NULL;
    if (mark.txn != s->txn_id || mark.epoch != s->epoch || mark.pos > s->undo.len)
        return store_error(s, LDB_MISUSE, "stale change mark");
    return delta_build(s, mark.pos, s->undo.len, false, out);
}
