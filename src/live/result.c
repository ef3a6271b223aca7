/*
 * result.c - keyed (and ordered) result state of a live query, and the
 * change batches between its states (see result.h).
 *
 * Staging groups the delta by key (sorting its key hashes), folds each key's
 * contributions (the current entry plus the delta rows) and records one
 * change per key whose state differs. Staging never edits anything, so a
 * failed stage leaves the published state whole. Commit first makes
 * every new entry and inserts its copies into the order tree beside the
 * old ones (the only steps that allocate, undone on failure), then
 * retires the old entries, which frees and never allocates; so a failed
 * commit leaves the state whole too. Last, it drops the changes that
 * report nothing (result.h).
 */
#include "live/result.h"

#include "base/hash.h"
#include "base/hsort.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

/* Scratch places and staged changes kept between batches (more is freed
 * after the batch). */
#define RESULT_KEEP_PLACES 1024

/* How many changes or delta entries ahead a pass over a large batch
 * prefetches the rows it will touch (they lie in the heap in no order the
 * batch follows). */
#define STAGE_PREFETCH 8

/* ---- order and keys --------------------------------------------------------- */

static uint64_t key_hash(const struct result_set *rs, const row *r)
{
    uint64_t h = 0x51ed2705a1b3c4d7ull;
    for (uint32_t i = 0; i < rs->nkey; i++)
        h = hash_combine(h, value_hash(&r->cols[rs->key[i]], rs->key_coll[i]));
    return h;
}

static bool key_eq(const struct result_set *rs, const row *a, const row *b)
{
    for (uint32_t i = 0; i < rs->nkey; i++) {
        uint32_t c = rs->key[i];
        if (!value_eq(&a->cols[c], &b->cols[c], rs->key_coll[i]))
            return false;
    }
    return true;
}

static bool key_identical(const struct result_set *rs, const row *a, const row *b)
{
    for (uint32_t i = 0; i < rs->nkey; i++)
        if (!value_identical(&a->cols[rs->key[i]], &b->cols[rs->key[i]]))
            return false;
    return true;
}

static int sort_term_cmp(const struct result_sort_term *t, const value *a, const value *b)
{
    bool na = value_is_null(a), nb = value_is_null(b);
    if (na || nb) {
        if (na && nb)
            return 0;
        /* NULL's place is absolute: first or last whatever the direction */
        return (na ? -1 : 1) * (t->nulls_first ? 1 : -1);
    }
    int c = value_cmp(a, b, t->coll);
    return t->desc ? -c : c;
}

int result_row_cmp(const struct result_set *rs, const row *a, const row *b)
{
    for (uint32_t i = 0; i < rs->nsort; i++) {
        const struct result_sort_term *t = &rs->sort[i];
        int c = sort_term_cmp(t, &a->cols[t->col], &b->cols[t->col]);
        if (c)
            return c;
    }
    for (uint32_t i = 0; i < rs->nkey; i++) {
        uint32_t col = rs->key[i];
        int c = value_cmp(&a->cols[col], &b->cols[col], rs->key_coll[i]);
        if (c)
            return c;
    }
    return 0;
}

/* During a commit a key's old and new entries are both in the tree, and
 * may sort the same: their addresses tell them apart. */
static int copy_cmp(void *ctx, const void *a, const void *b)
{
    const struct result_copy *x = a, *y = b;
    if (x->e != y->e) {
        int c = result_row_cmp(ctx, x->e->r, y->e->r);
        if (c)
            return c;
        return (uintptr_t)x->e < (uintptr_t)y->e ? -1 : 1;
    }
    return x->copy < y->copy ? -1 : x->copy > y->copy;
}

/* ---- a key's state (result_ref, result.h) ------------------------------------------ */

static bool ref_bare(result_ref x) { return !(x & 1); }
static struct result_entry *ref_entry(result_ref x)
{
    return (struct result_entry *)(uintptr_t)(x & ~(result_ref)1);
}
static result_ref entry_ref(struct result_entry *e) { return (result_ref)(uintptr_t)e | 1; }
static result_ref bare_ref(row *r) { return (result_ref)(uintptr_t)r; }
static row *ref_row(result_ref x) { return ref_bare(x) ? (row *)(uintptr_t)x : ref_entry(x)->r; }
static int64_t ref_mult(result_ref x) { return ref_bare(x) ? 1 : ref_entry(x)->mult; }
static row *ref_named(result_ref x) { return ref_bare(x) ? NULL : ref_entry(x)->named; }

/* ---- lifecycle -------------------------------------------------------------------- */

int result_init(struct result_set *rs, const uint32_t *key,
                const enum ldb_collation *colls, uint32_t nkey,
                const struct result_sort_term *sort, uint32_t nsort, uint32_t nvisible,
                bool positions)
{
    if (nkey > RESULT_MAX_KEY || nsort > RESULT_MAX_SORT)
        return LDB_RANGE;
    memset(rs, 0, sizeof *rs);
    size_t kb = nkey * (sizeof *rs->key + sizeof *rs->key_coll);
    char *block = mem_alloc(kb + nsort * sizeof *sort + 1);
    if (!block)
        return LDB_NOMEM;
    _Static_assert(_Alignof(struct result_sort_term) <= _Alignof(uint32_t), "sort terms follow keys");
    rs->key = (uint32_t *)block;
    rs->key_coll = (enum ldb_collation *)(rs->key + nkey);
    rs->sort = (struct result_sort_term *)(block + kb);
    rs->nkey = nkey;
    if (nkey) {
        memcpy(rs->key, key, nkey * sizeof *key);
        memcpy(rs->key_coll, colls, nkey * sizeof *colls);
    }
    rs->nsort = nsort;
    if (nsort)
        memcpy(rs->sort, sort, nsort * sizeof *sort);
    rs->ordered = nsort > 0;
    rs->positions = positions && rs->ordered;
    rs->nvisible = nvisible;
    hmap_init(&rs->by_key);
    btree_init(&rs->order, copy_cmp, rs);
    pool_init(&rs->entries, rs->ordered ? sizeof(struct result_ordered_entry)
                                        : sizeof(struct result_entry));
    pool_init(&rs->copies, sizeof(struct result_copy));
    return LDB_OK;
}

void result_free(struct result_set *rs)
{
    result_discard(rs);
    vec_free(&rs->staged);
    vec_free(&rs->places);
    uint32_t pos = 0;
    uint64_t *v;
    while ((v = hmap_next(&rs->by_key, &pos, NULL)) != NULL) {
        row_release(ref_row(*v));
        row_release(ref_named(*v));
    }
    hmap_free(&rs->by_key);
    btree_free(&rs->order);
    pool_free(&rs->entries);
    pool_free(&rs->copies);
    mem_free(rs->key);
    rs->key = NULL;
}

/* ---- staging -------------------------------------------------------------------------- */

struct key_probe {
    const struct result_set *rs;
    const row *r;
};

static bool entry_matches(const void *key, uint64_t val)
{
    const struct key_probe *p = key;
    return key_eq(p->rs, ref_row(val), p->r);
}

/* by_key's slot for r's key (hash h), or NULL. */
static uint64_t *key_slot(const struct result_set *rs, const row *r, uint64_t h)
{
    struct key_probe p = { rs, r };
    return hmap_get(&rs->by_key, h, entry_matches, &p);
}

/* Where an ordered result's entry keeps its first copy. */
static struct result_copy **first_copy(struct result_entry *e)
{
    return &((struct result_ordered_entry *)e)->first;
}

/* Rank of the entry's first copy in the order tree (ordered results,
 * whose states are all entries). */
static int64_t entry_position(const struct result_set *rs, result_ref x)
{
    struct result_copy *first = *first_copy(ref_entry(x));
    size_t rank = first ? btree_rank_of(&rs->order, first) : SIZE_MAX;
    return rank == SIZE_MAX ? -1 : (int64_t)rank;
}

/* The contributions of one key: distinct rows with summed weights. */
struct contrib {
    row *r;
    int64_t w;
};

static void add_contrib(struct contrib *cs, size_t *n, row *r, int64_t w)
{
    for (size_t i = 0; i < *n; i++) {
        if (row_identical(cs[i].r, r)) {
            cs[i].w += w;
            return;
        }
    }
    cs[*n].r = r;
    cs[*n].w = w;
    (*n)++;
}

/* Folds the contributions into the key's new state (*r, *m; *m == 0:
 * gone). */
static int fold_contribs(const struct contrib *cs, size_t n, row **r, int64_t *m)
{
    *r = NULL;
    *m = 0;
    for (size_t i = 0; i < n; i++) {
        if (cs[i].w < 0)
            return LDB_INTERNAL;
        if (cs[i].w == 0)
            continue;
        if (*r)
            return LDB_CONSTRAINT; /* two different rows under one key */
        *r = cs[i].r;
        *m = cs[i].w;
    }
    return LDB_OK;
}

static bool visible_identical(const struct result_set *rs, const row *a, const row *b)
{
    for (uint32_t i = 0; i < rs->nvisible; i++)
        if (!value_identical(&a->cols[i], &b->cols[i]))
            return false;
    return true;
}

/* An update that changed only hidden columns. */
static bool hidden_only(const struct result_set *rs, const struct result_change *ch)
{
    return ch->kind == RESULT_UPDATE && ch->before_mult == ch->after_mult &&
           visible_identical(rs, ch->before, ch->after);
}

static void release_rows(struct result_change *ch)
{
    row_release(ch->before);
    row_release(ch->after);
    row_release(ch->named);
}

static int stage_change(struct result_set *rs, result_ref e, row *nr, int64_t nm,
                        uint64_t h)
{
    struct result_change ch;
    memset(&ch, 0, sizeof ch);
    ch.hash = h;
    ch.entry = e;
    ch.before_pos = ch.after_pos = -1;
    if (e) {
        row *er = ref_row(e), *en = ref_named(e);
        if (nr && nm == ref_mult(e) && row_identical(er, nr))
            return LDB_OK; /* nothing visible changed */
        ch.before = row_retain(er);
        ch.before_mult = ref_mult(e);
        ch.named = row_retain(en ? en : er);
        if (rs->ordered)
            ch.before_pos = entry_position(rs, e);
    }
    if (nr) {
        ch.after = row_retain(nr);
        ch.after_mult = nm;
        ch.after_bytes = row_mem(nr);
        if (!e)
            ch.named = row_retain(nr);
    }
    if (!e && !nr)
        return LDB_OK;
    ch.kind = !e ? RESULT_INSERT : !nr ? RESULT_DELETE : RESULT_UPDATE;
    ch.quiet = hidden_only(rs, &ch); /* maybe: commit decides */
    rs->nquiet += ch.quiet;
    if (vec_push(&rs->staged, ch)) {
        release_rows(&ch);
        return LDB_NOMEM;
    }
    return LDB_OK;
}

static int stage_group(struct result_set *rs, const df_entry *delta, const size_t *idx,
                       size_t n, uint64_t h, struct contrib *scratch)
{
    const row *first = delta[idx[0]].r;
    /* an empty result (a hydration) has no entry to find */
    uint64_t *slot = hmap_count(&rs->by_key) ? key_slot(rs, first, h) : NULL;
    result_ref e = slot ? *slot : 0;
    size_t nc = 0;
    if (e)
        add_contrib(scratch, &nc, ref_row(e), ref_mult(e));
    for (size_t i = 0; i < n; i++)
        add_contrib(scratch, &nc, delta[idx[i]].r, delta[idx[i]].w);
    row *nr;
    int64_t nm;
    int rc = fold_contribs(scratch, nc, &nr, &nm);
    if (rc)
        return rc;
    return stage_change(rs, e, nr, nm, h);
}

#define TAKEN UINT64_MAX

/*
 * Groups the delta by key without a table: its (key hash, index) pairs
 * are sorted by the slot the hash takes in by_key once that has room for
 * every entry, then by full hash, so one key's entries are adjacent (in
 * delta order) and the keys come in slot order: the lookups of existing
 * entries and the insertion of new ones then walk by_key instead of
 * missing the cache once per entry, and so does nothing else.
 */
static int stage_sorted(struct result_set *rs, const df_entry *delta, size_t n,
                        struct hkey *keys)
{
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct hkey){ key_hash(rs, delta[i].r), i };
    uint32_t mask = hmap_mask_after(&rs->by_key, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n);
    unsigned bits = 1; /* a small batch sorts on fewer bits: cheaper passes */
    while (bits < 32 && ((mask >> bits) & 1) && ((size_t)1 << bits) < 4 * n)
        bits++;
    struct hkey *k = hsort_field(keys, keys + n, n, 0, bits);
    hsort_runs(k, n, 0, bits);
    /* a key's entries and contributions: at most a run of equal hashes */
    size_t most = 1;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && k[j].hash == k[i].hash; j++)
            ;
        most = j - i > most ? j - i : most;
    }
    size_t *members = mem_alloc(most * sizeof *members);
    struct contrib *scratch = mem_alloc((most + 1) * sizeof *scratch);
    int rc = members && scratch ? LDB_OK : LDB_NOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        /* the delta is now read out of order: its entries and then their
         * rows (retained for the change) are prefetched some keys ahead */
        if (i + 2 * STAGE_PREFETCH < n && k[i + 2 * STAGE_PREFETCH].idx != TAKEN)
            __builtin_prefetch(&delta[k[i + 2 * STAGE_PREFETCH].idx]);
        if (i + STAGE_PREFETCH < n && k[i + STAGE_PREFETCH].idx != TAKEN)
            __builtin_prefetch(delta[k[i + STAGE_PREFETCH].idx].r, 1);
        if (k[i].idx == TAKEN)
            continue;
        size_t m = 0;
        members[m++] = k[i].idx;
        /* other keys with the same full hash are rare: compare in the run */
        for (size_t j = i + 1; j < n && k[j].hash == k[i].hash; j++) {
            if (k[j].idx != TAKEN && key_eq(rs, delta[k[i].idx].r, delta[k[j].idx].r)) {
                members[m++] = k[j].idx;
                k[j].idx = TAKEN;
            }
        }
        rc = stage_group(rs, delta, members, m, k[i].hash, scratch);
    }
    mem_free(members);
    mem_free(scratch);
    return rc;
}

int result_stage(struct result_set *rs, const df_entry *delta, size_t n)
{
    result_discard(rs);
    if (n == 0)
        return LDB_OK;
    struct hkey *keys = mem_alloc(2 * n * sizeof *keys);
    int rc = keys ? LDB_OK : LDB_NOMEM;
    if (!rc && vec_reserve(&rs->staged, n))
        rc = LDB_NOMEM;
    if (!rc)
        rc = stage_sorted(rs, delta, n, keys);
    mem_free(keys);
    /* commit sorts the befores and the afters of the batch here */
    if (!rc && rs->positions && rs->nquiet)
        rc = vec_reserve(&rs->places, 2 * rs->staged.len) ? LDB_NOMEM : LDB_OK;
    if (rc)
        result_discard(rs);
    return rc;
}

/* ---- commit ------------------------------------------------------------------------------ */

static void remove_copies(struct result_set *rs, struct result_entry *e, int64_t n)
{
    for (int64_t c = 0; rs->ordered && c < n; c++) {
        struct result_copy probe = { e, c };
        struct result_copy *item = btree_delete(&rs->order, &probe);
        if (item)
            pool_put(&rs->copies, item);
        if (c == 0)
            *first_copy(e) = NULL;
    }
}

static int add_copies(struct result_set *rs, struct result_entry *e)
{
    for (int64_t c = 0; rs->ordered && c < e->mult; c++) {
        struct result_copy *item = pool_get(&rs->copies);
        if (!item) {
            remove_copies(rs, e, c);
            return LDB_NOMEM;
        }
        item->e = e;
        item->copy = c;
        if (c == 0)
            *first_copy(e) = item;
        void *existing;
        int rc = btree_insert(&rs->order, item, &existing);
        if (rc) {
            pool_put(&rs->copies, item);
            remove_copies(rs, e, c);
            return rc;
        }
    }
    return LDB_OK;
}

/* The row whose key bytes readers got for a change's after row, when
 * they are not the row's own; else NULL. */
static row *after_named(const struct result_set *rs, const struct result_change *ch)
{
    return ch->named == ch->after || key_identical(rs, ch->named, ch->after) ? NULL
                                                                            : ch->named;
}

/* Whether the after row alone is the key's new state (result_ref). */
static bool bare_after(const struct result_set *rs, const struct result_change *ch)
{
    return !rs->ordered && ch->after_mult == 1 && !after_named(rs, ch);
}

/* The new state of a change: the bare row, or an entry and its copies in
 * the order tree; none for an update that keeps the row's place, count
 * and kind of state (say a title change under ORDER BY created): the
 * state then takes the row where it is. */
static int make_next(struct result_set *rs, struct result_change *ch)
{
    bool bare = bare_after(rs, ch);
    ch->in_place = ch->entry && ref_mult(ch->entry) == ch->after_mult &&
                   ref_bare(ch->entry) == bare &&
                   (!rs->ordered || result_row_cmp(rs, ref_row(ch->entry), ch->after) == 0);
    if (ch->in_place)
        return LDB_OK;
    if (bare) {
        ch->next = bare_ref(row_retain(ch->after));
        return LDB_OK;
    }
    struct result_entry *e = pool_get(&rs->entries);
    if (!e)
        return LDB_NOMEM;
    e->r = ch->after;
    e->named = after_named(rs, ch);
    e->mult = ch->after_mult;
    if (rs->ordered)
        *first_copy(e) = NULL;
    int rc = add_copies(rs, e);
    if (rc) {
        pool_put(&rs->entries, e);
        return rc;
    }
    row_retain(e->r);
    if (e->named)
        row_retain(e->named);
    ch->next = entry_ref(e);
    return LDB_OK;
}

/* The bytes of a state's rows. */
static size_t ref_row_bytes(result_ref x)
{
    row *named = ref_named(x);
    return row_mem(ref_row(x)) + (named ? row_mem(named) : 0);
}

/* The same for the state that holds a change's after row. */
static size_t after_row_bytes(const struct result_change *ch, const row *named)
{
    return ch->after_bytes + (named ? row_mem(named) : 0);
}

/* Releases a state's rows and entry (not its by_key slot). */
static void drop_ref(struct result_set *rs, result_ref x)
{
    row_release(ref_row(x));
    if (ref_bare(x))
        return;
    struct result_entry *e = ref_entry(x);
    remove_copies(rs, e, e->mult);
    row_release(e->named);
    pool_put(&rs->entries, e);
}

static void free_state(struct result_set *rs, result_ref x)
{
    rs->rows -= ref_mult(x);
    rs->row_bytes -= ref_row_bytes(x);
    drop_ref(rs, x);
}

/* Undoes make_next for the first n changes. */
static void unmake_next(struct result_set *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct result_change *ch = &rs->staged.data[i];
        if (ch->next)
            drop_ref(rs, ch->next);
        ch->next = 0;
    }
}

/* An in-place change: the state takes the after row. */
static void replace_row(struct result_set *rs, struct result_change *ch)
{
    rs->row_bytes -= ref_row_bytes(ch->entry);
    row_retain(ch->after);
    if (ref_bare(ch->entry)) {
        uint64_t *v = key_slot(rs, ch->after, ch->hash);
        row_release(ref_row(*v));
        *v = ch->entry = bare_ref(ch->after);
        rs->row_bytes += ch->after_bytes;
        return;
    }
    struct result_entry *e = ref_entry(ch->entry);
    row *named = key_identical(rs, ch->named, ch->after) ? NULL : ch->named;
    if (named)
        row_retain(named);
    row_release(e->r);
    row_release(e->named);
    e->r = ch->after;
    e->named = named;
    rs->row_bytes += after_row_bytes(ch, named);
}

/* Puts the new state where the old one was (never allocates: a new key's
 * slot was reserved). */
static void retire_entry(struct result_set *rs, struct result_change *ch)
{
    if (ch->in_place) {
        replace_row(rs, ch);
        return;
    }
    uint64_t *v = NULL;
    if (ch->entry) {
        v = key_slot(rs, ref_row(ch->entry), ch->hash);
        free_state(rs, ch->entry);
    }
    if (ch->next) {
        if (!v) {
            struct key_probe p = { rs, ch->after };
            bool found;
            hmap_put(&rs->by_key, ch->hash, entry_matches, &p, &v, &found);
        }
        *v = ch->next;
        rs->rows += ref_mult(ch->next);
        rs->row_bytes += after_row_bytes(ch, ref_named(ch->next));
    } else if (v) {
        hmap_del(&rs->by_key, v);
    }
    ch->entry = ch->next;
    ch->next = 0;
}

static int place_cmp(const void *a, const void *b)
{
    const struct result_place *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Sorts places[0..n) by position and counts the copies through each. */
static void sort_places(struct result_place *places, size_t n)
{
    qsort(places, n, sizeof *places, place_cmp);
    int64_t through = 0;
    for (size_t i = 0; i < n; i++)
        places[i].through = through += places[i].mult;
}

/* Copies of the batch's rows (sorted places[0..n)) lying before pos. */
static int64_t batch_copies_before(const struct result_place *places, size_t n, int64_t pos)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (places[mid].pos < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? places[lo - 1].through : 0;
}

/*
 * Marks quiet the hidden-only updates that need not be reported: a
 * reader who replays the rest of the batch keeps such a row where it
 * was, so it must have as many unchanged rows before it after the batch
 * as before, and the quiet rows must keep their order among themselves.
 */
static void find_quiet(struct result_set *rs)
{
    size_t n = rs->staged.len;
    if (!rs->positions || !rs->nquiet)
        return;
    struct result_place *before = rs->places.data, *after = before + n;
    size_t nb = 0, na = 0;
    for (size_t i = 0; i < n; i++) {
        const struct result_change *ch = &rs->staged.data[i];
        if (ch->before)
            before[nb++] = (struct result_place){ ch->before_pos, ch->before_mult, 0, i };
        if (ch->after)
            after[na++] = (struct result_place){ ch->after_pos, ch->after_mult, 0, i };
    }
    sort_places(before, nb);
    sort_places(after, na);
    int64_t last_after = -1;
    for (size_t k = 0; k < nb; k++) {
        struct result_change *ch = &rs->staged.data[before[k].change];
        if (!ch->quiet)
            continue;
        int64_t stay_before = ch->before_pos - batch_copies_before(before, nb, ch->before_pos);
        int64_t stay_after = ch->after_pos - batch_copies_before(after, na, ch->after_pos);
        ch->quiet = stay_before == stay_after && ch->after_pos > last_after;
        if (ch->quiet)
            last_after = ch->after_pos;
    }
}

/* Drops the changes that report nothing; positions become -1 when the
 * result reports none. */
static void drop_quiet(struct result_set *rs)
{
    find_quiet(rs);
    size_t kept = 0;
    for (size_t i = 0; i < rs->staged.len; i++) {
        struct result_change *ch = &rs->staged.data[i];
        if (ch->quiet) {
            release_rows(ch);
            continue;
        }
        if (!rs->positions)
            ch->before_pos = ch->after_pos = -1;
        rs->staged.data[kept++] = *ch;
    }
    rs->staged.len = kept;
    rs->nquiet = 0;
    if (rs->places.cap > RESULT_KEEP_PLACES) /* one big batch is no reason to keep it */
        vec_free(&rs->places);
}

int result_prepare(struct result_set *rs)
{
    size_t n = rs->staged.len, inserts = 0;
    for (size_t i = 0; i < n; i++)
        inserts += rs->staged.data[i].kind == RESULT_INSERT;
    if (inserts > UINT32_MAX || hmap_reserve(&rs->by_key, (uint32_t)inserts))
        return LDB_NOMEM;
    for (size_t i = 0; i < n; i++) {
        struct result_change *ch = &rs->staged.data[i];
        if (i + STAGE_PREFETCH < n && rs->staged.data[i + STAGE_PREFETCH].after)
            __builtin_prefetch(rs->staged.data[i + STAGE_PREFETCH].after, 1); /* retained */
        int rc = ch->after ? make_next(rs, ch) : LDB_OK;
        if (rc) {
            unmake_next(rs, i);
            return rc;
        }
    }
    return LDB_OK;
}

void result_unprepare(struct result_set *rs) { unmake_next(rs, rs->staged.len); }

void result_finish(struct result_set *rs)
{
    size_t n = rs->staged.len;
    /* new keys first, into the reserved slots */
    for (size_t i = 0; i < n; i++)
        if (rs->staged.data[i].kind == RESULT_INSERT)
            retire_entry(rs, &rs->staged.data[i]);
    for (size_t i = 0; i < n; i++)
        if (rs->staged.data[i].kind != RESULT_INSERT)
            retire_entry(rs, &rs->staged.data[i]);
    for (size_t i = 0; rs->ordered && i < n; i++) {
        struct result_change *ch = &rs->staged.data[i];
        if (ch->after)
            ch->after_pos = entry_position(rs, ch->entry);
    }
    drop_quiet(rs);
}

int result_commit(struct result_set *rs)
{
    int rc = result_prepare(rs);
    if (!rc)
        result_finish(rs);
    return rc;
}

void result_discard(struct result_set *rs)
{
    rs->nquiet = 0;
    for (size_t i = 0; i < rs->staged.len; i++) {
        if (i + STAGE_PREFETCH < rs->staged.len) {
            const struct result_change *ahead = &rs->staged.data[i + STAGE_PREFETCH];
            if (ahead->after)
                __builtin_prefetch(ahead->after, 1);
            if (ahead->before)
                __builtin_prefetch(ahead->before, 1);
        }
        release_rows(&rs->staged.data[i]);
    }
    vec_clear(&rs->staged);
    if (rs->staged.cap > RESULT_KEEP_PLACES) /* a hydration's is no reason to keep it */
        vec_free(&rs->staged);
}

/* ---- reading -------------------------------------------------------------------------------- */

int result_scan(const struct result_set *rs, result_visit_fn fn, void *ctx)
{
    if (rs->ordered) {
        btree_cursor c;
        for (bool on = btree_first(&rs->order, &c); on; on = btree_next(&c)) {
            const struct result_copy *item = btree_cursor_item(&c);
            int rc = fn(ctx, item->e->r, (int64_t)btree_cursor_rank(&c));
            if (rc)
                return rc;
        }
        return LDB_OK;
    }
    uint32_t pos = 0;
    uint64_t *v;
    int64_t n = 0;
    while ((v = hmap_next(&rs->by_key, &pos, NULL)) != NULL) {
        for (int64_t c = 0; c < ref_mult(*v); c++) {
            int rc = fn(ctx, ref_row(*v), n++);
            if (rc)
                return rc;
        }
    }
    return LDB_OK;
}

size_t result_bytes(const struct result_set *rs)
{
    return rs->row_bytes + hmap_bytes(&rs->by_key) + btree_bytes(&rs->order) +
           rs->entries.bytes + rs->copies.bytes;
}
