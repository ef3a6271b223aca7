/*
 * aggregate.c - built-in aggregates and the DISTINCT layer (see
 * aggregate.h for the results they give).
 *
 * min, max, string_agg and DISTINCT keep an ordered multiset of argument
 * values with counts (struct vms), ordered by value_cmp under the
 * instance collation with value_cmp_identity breaking ties, so that items
 * are exactly the identity-distinct values and canonically equal values
 * are neighbours. Deleting the current minimum therefore leaves the next
 * one first. A multiset grows through three forms, so that the common
 * small groups stay small:
 *   - one item inline (no allocation), the form of most groups;
 *   - a sorted array of up to VMS_ARRAY_MAX items (binary search, memmove);
 *   - a counted B+tree (base/btree.h) of items from the instance pool,
 *     O(log n) per change for large groups.
 * It returns to the inline form only when it becomes empty. An item's
 * count may go negative in the middle of a batch (a retraction that
 * arrives before its insertion); finalize reports LDB_INTERNAL if the
 * item it needs is still negative then.
 */
#include "value/aggregate.h"

#include "base/btree.h"
#include "base/mem.h"
#include "base/strbuf.h"
#include "value/exactsum.h"

#include <string.h>

/* ---- ordered multiset of values ----------------------------------------- */

#define VMS_ARRAY_MAX 16
#define VMS_TREE UINT32_MAX

/* key: for an ordered instance, a borrowed copy of the item's element
 * that vcmp compares first (an order value, or x under value_first), so
 * that a tree descent reads the item it compares and not also the ARRAY
 * it points to (in a large group each is a cache miss). */
struct vitem {
    value v;
    int64_t n;
    value key;
};

struct vms {
    uint32_t n;   /* distinct items */
    uint32_t cap; /* 0: inline; VMS_TREE: tree; else array capacity */
    union {
        struct vitem one;
        struct vitem *arr;
        btree *tree;
    } u;
};

/* The value an item is grouped by for DISTINCT: the item itself, or
 * element 0 of an ordered item. */
static const value *item_class(const struct agg_vms_order *k, const value *v)
{
    return k->norder ? value_item(v, 0) : v;
}

/* One ORDER BY term: SQL order with its collation, direction and NULL
 * placement. */
static int term_cmp(const struct agg_order_term *t, const value *a, const value *b)
{
    bool an = value_is_null(a), bn = value_is_null(b);
    if (an || bn)
        return an == bn ? 0 : (an == t->nulls_first ? -1 : 1);
    int c = value_cmp(a, b, t->coll);
    return t->desc ? -c : c;
}

static int order_terms_cmp(const struct agg_vms_order *k, const value *a, const value *b)
{
    for (uint32_t i = 0; i < k->norder; i++) {
        int c = term_cmp(&k->order[i], value_item(a, 1 + i), value_item(b, 1 + i));
        if (c)
            return c;
    }
    return 0;
}

/* Items are plain values (value order under the collation), or for an
 * ordered instance ARRAY(x, o_1..o_n) compared by the order terms then x
 * (value_first: by x first, so that a class of equal x is contiguous).
 * Identity breaks the remaining ties, so items are identity-distinct. */
static int vcmp(const struct agg_vms_order *k, const value *a, const value *b)
{
    if (!k->norder) {
        int c = value_cmp(a, b, k->coll);
        return c ? c : value_cmp_identity(a, b);
    }
    const value *x = value_item(a, 0), *y = value_item(b, 0);
    int c = k->value_first ? value_cmp(x, y, k->coll) : order_terms_cmp(k, a, b);
    if (c == 0)
        c = k->value_first ? order_terms_cmp(k, a, b) : value_cmp(x, y, k->coll);
    return c ? c : value_cmp_identity(a, b);
}

static struct vitem vitem_of(const struct agg_vms_order *k, const value *v, int64_t n)
{
    struct vitem it = { *v, n, value_null() };
    if (k->norder)
        it.key = *value_item(v, k->value_first ? 0 : 1);
    return it;
}

static int tree_cmp(void *ctx, const void *a, const void *b)
{
    const struct agg_vms_order *k = ctx;
    const struct vitem *x = a, *y = b;
    if (k->norder) {
        int c = k->value_first ? value_cmp(&x->key, &y->key, k->coll)
                               : term_cmp(&k->order[0], &x->key, &y->key);
        if (c)
            return c;
    }
    return vcmp(k, &x->v, &y->v);
}

/* Probe order for a canonical class: ignores identity (and the order
 * values), so a GE seek lands on the first member of the class. */
static int tree_class_cmp(void *ctx, const void *probe, const void *item)
{
    const struct agg_vms_order *k = ctx;
    return value_cmp(probe, item_class(k, &((const struct vitem *)item)->v), k->coll);
}

static void vms_init(struct vms *m) { memset(m, 0, sizeof *m); }

/* Binary search in the array form: index of v or where it would go. */
static uint32_t arr_search(const struct agg_vms_order *k, const struct vms *m, const value *v,
                           bool *found)
{
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        int c = vcmp(k, &m->u.arr[mid].v, v);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* Moves a full array into a tree of pool items, then adds v. */
static int arr_to_tree(agg_inst *ai, const struct agg_vms_order *ko, struct vms *m,
                       const value *v, int64_t w)
{
    btree *t = mem_alloc(sizeof *t);
    if (!t)
        return LDB_NOMEM;
    btree_init(t, tree_cmp, (void *)ko);
    void *items[VMS_ARRAY_MAX + 1];
    uint32_t k = 0;
    for (; k < m->n; k++) {
        struct vitem *it = pool_get(&ai->items);
        if (!it)
            goto fail;
        *it = m->u.arr[k];
        items[k] = it;
    }
    if (btree_bulk_load(t, items, k))
        goto fail;
    struct vitem *it = pool_get(&ai->items);
    if (!it)
        goto fail_loaded;
    *it = vitem_of(ko, v, w);
    if (btree_insert(t, it, NULL)) {
        pool_put(&ai->items, it);
        goto fail_loaded;
    }
    value_retain(v);
    mem_free(m->u.arr);
    m->u.tree = t;
    m->cap = VMS_TREE;
    m->n++;
    return LDB_OK;
fail_loaded:
    btree_free(t);
fail:
    while (k > 0)
        pool_put(&ai->items, items[--k]);
    mem_free(t);
    return LDB_NOMEM;
}

static int arr_add(agg_inst *ai, const struct agg_vms_order *k, struct vms *m, const value *v,
                   int64_t w)
{
    bool found;
    uint32_t i = arr_search(k, m, v, &found);
    if (found) {
        struct vitem *it = &m->u.arr[i];
        if ((it->n += w) == 0) {
            value_release(&it->v);
            memmove(it, it + 1, (m->n - i - 1) * sizeof *it);
            if (--m->n == 0) {
                mem_free(m->u.arr);
                vms_init(m);
            }
        }
        return LDB_OK;
    }
    if (m->n == m->cap) {
        if (m->cap == VMS_ARRAY_MAX)
            return arr_to_tree(ai, k, m, v, w);
        struct vitem *na = mem_realloc(m->u.arr, 2 * m->cap * sizeof *na);
        if (!na)
            return LDB_NOMEM;
        m->u.arr = na;
        m->cap *= 2;
    }
    memmove(&m->u.arr[i + 1], &m->u.arr[i], (m->n - i) * sizeof m->u.arr[0]);
    m->u.arr[i] = vitem_of(k, v, w);
    value_retain(v);
    m->n++;
    return LDB_OK;
}

/* An item deleted from m's tree: its value and slot go back, and an
 * emptied tree becomes the empty multiset. */
static void tree_item_gone(agg_inst *ai, struct vms *m, struct vitem *it)
{
    value_release(&it->v);
    pool_put(&ai->items, it);
    if (--m->n == 0) {
        btree_free(m->u.tree);
        mem_free(m->u.tree);
        vms_init(m);
    }
}

/* One descent: insert a fresh item, or learn the existing one. */
static int tree_add(agg_inst *ai, struct vms *m, const value *v, int64_t w)
{
    struct vitem *it = pool_get(&ai->items), *old;
    if (!it)
        return LDB_NOMEM;
    *it = vitem_of(m->u.tree->ctx, v, w);
    if (btree_insert(m->u.tree, it, (void **)&old)) {
        pool_put(&ai->items, it);
        return LDB_NOMEM;
    }
    if (!old) {
        value_retain(v);
        m->n++;
        return LDB_OK;
    }
    pool_put(&ai->items, it);
    if ((old->n += w) == 0) {
        btree_delete(m->u.tree, old);
        tree_item_gone(ai, m, old);
    }
    return LDB_OK;
}

/* Adds w to the count of v (inserting or deleting the item as needed). */
static int vms_add(agg_inst *ai, const struct agg_vms_order *k, struct vms *m, const value *v,
                   int64_t w)
{
    if (w == 0)
        return LDB_OK;
    if (m->cap == VMS_TREE)
        return tree_add(ai, m, v, w);
    if (m->cap)
        return arr_add(ai, k, m, v, w);
    if (m->n == 0) {
        m->u.one = vitem_of(k, v, w);
        value_retain(v);
        m->n = 1;
        return LDB_OK;
    }
    if (vcmp(k, &m->u.one.v, v) == 0) {
        if ((m->u.one.n += w) == 0) {
            value_release(&m->u.one.v);
            vms_init(m);
        }
        return LDB_OK;
    }
    struct vitem *arr = mem_alloc(2 * sizeof *arr);
    if (!arr)
        return LDB_NOMEM;
    arr[0] = m->u.one;
    m->u.arr = arr;
    m->cap = 2;
    return arr_add(ai, k, m, v, w);
}

static void vms_free(agg_inst *ai, struct vms *m)
{
    if (m->cap == VMS_TREE) {
        btree_cursor c;
        for (bool on = btree_first(m->u.tree, &c); on; on = btree_next(&c)) {
            struct vitem *it = btree_cursor_item(&c);
            value_release(&it->v);
            pool_put(&ai->items, it);
        }
        btree_free(m->u.tree);
        mem_free(m->u.tree);
    } else if (m->cap) {
        for (uint32_t i = 0; i < m->n; i++)
            value_release(&m->u.arr[i].v);
        mem_free(m->u.arr);
    } else if (m->n) {
        value_release(&m->u.one.v);
    }
    vms_init(m);
}

static size_t vms_heap_bytes(const struct vms *m)
{
    if (m->cap == VMS_TREE)
        return sizeof(btree) + btree_bytes(m->u.tree) + m->n * sizeof(struct vitem);
    return m->cap * sizeof(struct vitem);
}

/* In-order iteration. */
struct vms_iter {
    const struct vms *m;
    uint32_t i;
    btree_cursor c;
};

static const struct vitem *iter_item(struct vms_iter *it, bool on)
{
    if (it->m->cap == VMS_TREE)
        return on ? btree_cursor_item(&it->c) : NULL;
    if (it->i >= it->m->n)
        return NULL;
    return it->m->cap ? &it->m->u.arr[it->i] : &it->m->u.one;
}

static const struct vitem *vms_first(struct vms_iter *it, const struct vms *m)
{
    it->m = m;
    it->i = 0;
    return iter_item(it, m->cap == VMS_TREE && btree_first(m->u.tree, &it->c));
}

static const struct vitem *vms_next(struct vms_iter *it)
{
    it->i++;
    return iter_item(it, it->m->cap == VMS_TREE && btree_next(&it->c));
}

/* The first item canonically equal to v, or the first item after it. */
static const struct vitem *vms_seek_class(const struct agg_vms_order *k, struct vms_iter *it,
                                          const struct vms *m, const value *v)
{
    it->m = m;
    it->i = 0;
    if (m->cap == VMS_TREE)
        return iter_item(it, btree_seek(m->u.tree, tree_class_cmp, v, BT_GE, &it->c));
    while (it->i < m->n && value_cmp(item_class(k, &iter_item(it, false)->v), v, k->coll) < 0)
        it->i++;
    return iter_item(it, false);
}

static const struct vitem *vms_last(const struct vms *m)
{
    if (m->n == 0)
        return NULL;
    if (m->cap == VMS_TREE) {
        btree_cursor c;
        btree_last(m->u.tree, &c);
        return btree_cursor_item(&c);
    }
    return m->cap ? &m->u.arr[m->n - 1] : &m->u.one;
}

static int vms_merge(agg_inst *ai, const struct agg_vms_order *k, struct vms *m,
                     const struct vms *other)
{
    struct vms_iter it;
    for (const struct vitem *x = vms_first(&it, other); x; x = vms_next(&it)) {
        int rc = vms_add(ai, k, m, &x->v, x->n);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

/* ---- count ---------------------------------------------------------------- */

static void count_init(agg_inst *ai, void *st) { *(int64_t *)st = 0; }

static int count_star_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    *(int64_t *)st += w;
    return LDB_OK;
}

static int count_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    if (!value_is_null(&args[0]))
        *(int64_t *)st += w;
    return LDB_OK;
}

static int count_merge(agg_inst *ai, void *st, const void *other)
{
    *(int64_t *)st += *(const int64_t *)other;
    return LDB_OK;
}

static int count_finalize(agg_inst *ai, const void *st, value *out)
{
    int64_t n = *(const int64_t *)st;
    if (n < 0)
        return LDB_INTERNAL;
    *out = value_int(n);
    return LDB_OK;
}

static void no_destroy(agg_inst *ai, void *st) {}
static size_t no_heap(const agg_inst *ai, const void *st) { return 0; }

static int count_combine(const agg_inst *ai, int64_t count, const isum *sum, value *out)
{
    *out = value_int(count);
    return LDB_OK;
}

const struct agg_def agg_count_star = {
    "count", 0, AGG_RETRACT | AGG_MERGE | AGG_COUNT_ONLY, sizeof(int64_t), count_init,
    count_star_step, count_merge, count_finalize, no_destroy, no_heap, count_combine, 0,
};

const struct agg_def agg_count = {
    "count", 1, AGG_RETRACT | AGG_MERGE | AGG_COUNT_ONLY, sizeof(int64_t), count_init,
    count_step, count_merge, count_finalize, no_destroy, no_heap, count_combine, 0,
};

/* ---- sum, total, avg ------------------------------------------------------ */

struct sum_state {
    int64_t count; /* non-NULL inputs */
    int64_t nreal; /* inputs that were not INTEGER/BOOLEAN: result is REAL */
    isum ints;
    exactsum reals;
};

static void sum_init(agg_inst *ai, void *st)
{
    struct sum_state *s = st;
    s->count = s->nreal = 0;
    isum_init(&s->ints);
    exactsum_init(&s->reals);
}

/* Adds w copies of the number v (INTEGER or REAL) to s. */
static int sum_number(struct sum_state *s, const value *v, int64_t w)
{
    if (value_type(v) == LDB_REAL) {
        int rc = exactsum_add(&s->reals, v->h.u.r, w);
        if (rc)
            return rc;
        s->nreal += w;
    } else {
        isum_add(&s->ints, v->h.u.i, w);
    }
    return LDB_OK;
}

static int sum_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    struct sum_state *s = st;
    const value *v = &args[0];
    int rc = LDB_OK;
    switch (value_type(v)) {
    case LDB_NULL:
        return LDB_OK;
    case LDB_INTEGER:
    case LDB_BOOLEAN:
    case LDB_REAL:
        rc = sum_number(s, v, w);
        break;
    case LDB_TEXT: {
        size_t n;
        const char *p = value_bytes(v, &n);
        value num;
        if (value_parse_number(p, n, &num))
            rc = sum_number(s, &num, w);
        else
            s->nreal += w;
        break;
    }
    default:
        s->nreal += w;
        break;
    }
    if (rc == LDB_OK)
        s->count += w;
    return rc;
}

static int sum_merge(agg_inst *ai, void *st, const void *other)
{
    struct sum_state *s = st;
    const struct sum_state *o = other;
    int rc = exactsum_merge(&s->reals, &o->reals);
    if (rc)
        return rc;
    isum_merge(&s->ints, &o->ints);
    s->count += o->count;
    s->nreal += o->nreal;
    return LDB_OK;
}

static int sum_finalize(agg_inst *ai, const void *st, value *out)
{
    const struct sum_state *s = st;
    if (s->count < 0 || s->nreal < 0)
        return LDB_INTERNAL;
    if (s->count == 0) {
        *out = value_null();
        return LDB_OK;
    }
    if (s->nreal == 0) {
        int64_t i;
        if (!isum_to_int64(&s->ints, &i))
            return LDB_RANGE;
        *out = value_int(i);
        return LDB_OK;
    }
    *out = value_real(exactsum_value_plus(&s->reals, &s->ints));
    return LDB_OK;
}

static int total_finalize(agg_inst *ai, const void *st, value *out)
{
    const struct sum_state *s = st;
    if (s->count < 0 || s->nreal < 0)
        return LDB_INTERNAL;
    *out = value_real(s->count ? exactsum_value_plus(&s->reals, &s->ints) : 0.0);
    return LDB_OK;
}

static int avg_finalize(agg_inst *ai, const void *st, value *out)
{
    const struct sum_state *s = st;
    if (s->count < 0 || s->nreal < 0)
        return LDB_INTERNAL;
    if (s->count == 0)
        *out = value_null();
    else
        *out = value_real(exactsum_value_plus(&s->reals, &s->ints) / (double)s->count);
    return LDB_OK;
}

static void sum_destroy(agg_inst *ai, void *st)
{
    exactsum_free(&((struct sum_state *)st)->reals);
}

static size_t sum_heap(const agg_inst *ai, const void *st)
{
    return exactsum_heap_bytes(&((const struct sum_state *)st)->reals);
}

/* The combines read a sum_state made of INTEGER inputs only: the same
 * finalize code, so the results are bit for bit those of stepping. */
static struct sum_state integer_state(int64_t count, const isum *sum)
{
    struct sum_state s = { count, 0, *sum, { 0 } };
    exactsum_init(&s.reals);
    return s;
}

static int sum_combine(const agg_inst *ai, int64_t count, const isum *sum, value *out)
{
    struct sum_state s = integer_state(count, sum);
    return sum_finalize(NULL, &s, out);
}

/* An INTEGER total that fits in 64 bits converts to the correctly rounded
 * double exactly as exactsum_value_plus rounds it (to nearest, ties to
 * even): the common case skips the exact-sum machinery. */
static bool small_total(int64_t count, const isum *sum, double *out)
{
    int64_t i;
    if (count <= 0 || !isum_to_int64(sum, &i))
        return false;
    *out = (double)i;
    return true;
}

static int total_combine(const agg_inst *ai, int64_t count, const isum *sum, value *out)
{
    double t;
    if (small_total(count, sum, &t)) {
        *out = value_real(t);
        return LDB_OK;
    }
    struct sum_state s = integer_state(count, sum);
    return total_finalize(NULL, &s, out);
}

static int avg_combine(const agg_inst *ai, int64_t count, const isum *sum, value *out)
{
    double t;
    if (small_total(count, sum, &t)) {
        *out = value_real(t / (double)count);
        return LDB_OK;
    }
    struct sum_state s = integer_state(count, sum);
    return avg_finalize(NULL, &s, out);
}

const struct agg_def agg_sum = {
    "sum", 1, AGG_RETRACT | AGG_MERGE, sizeof(struct sum_state), sum_init,
    sum_step, sum_merge, sum_finalize, sum_destroy, sum_heap, sum_combine, 0,
};

const struct agg_def agg_total = {
    "total", 1, AGG_RETRACT | AGG_MERGE, sizeof(struct sum_state), sum_init,
    sum_step, sum_merge, total_finalize, sum_destroy, sum_heap, total_combine, 0,
};

const struct agg_def agg_avg = {
    "avg", 1, AGG_RETRACT | AGG_MERGE, sizeof(struct sum_state), sum_init,
    sum_step, sum_merge, avg_finalize, sum_destroy, sum_heap, avg_combine, 0,
};

/* ---- min, max, string_agg ------------------------------------------------- */

static void vms_agg_init(agg_inst *ai, void *st) { vms_init(st); }

static int vms_agg_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    if (value_is_null(&args[0]))
        return LDB_OK;
    return vms_add(ai, &ai->main_cmp, st, &args[ai->norder ? 1 : 0], w);
}

static int vms_agg_merge(agg_inst *ai, void *st, const void *other)
{
    return vms_merge(ai, &ai->main_cmp, st, other);
}

static void vms_agg_destroy(agg_inst *ai, void *st) { vms_free(ai, st); }

static size_t vms_agg_heap(const agg_inst *ai, const void *st) { return vms_heap_bytes(st); }

static int extreme_result(const struct vitem *it, value *out)
{
    if (!it) {
        *out = value_null();
        return LDB_OK;
    }
    if (it->n < 0)
        return LDB_INTERNAL;
    *out = value_copy(&it->v);
    return LDB_OK;
}

static int min_finalize(agg_inst *ai, const void *st, value *out)
{
    struct vms_iter it;
    return extreme_result(vms_first(&it, st), out);
}

static int max_finalize(agg_inst *ai, const void *st, value *out)
{
    return extreme_result(vms_last(st), out);
}

static void put_text(strbuf *sb, const value *v)
{
    if (value_type(v) == LDB_TEXT || value_type(v) == LDB_BLOB) {
        size_t n;
        const char *p = value_bytes(v, &n);
        sb_put(sb, p, n);
    } else {
        value_format(sb, v);
    }
}

static int string_agg_finalize(agg_inst *ai, const void *st, value *out)
{
    const struct vms *m = st;
    if (m->n == 0) {
        *out = value_null();
        return LDB_OK;
    }
    strbuf sb = STRBUF_INIT;
    struct vms_iter it;
    bool first = true;
    for (const struct vitem *x = vms_first(&it, m); x; x = vms_next(&it)) {
        if (x->n < 0) {
            sb_free(&sb);
            return LDB_INTERNAL;
        }
        for (int64_t k = 0; k < x->n; k++) {
            if (!first)
                put_text(&sb, &ai->sep);
            first = false;
            put_text(&sb, item_class(&ai->main_cmp, &x->v));
        }
    }
    int rc = sb_error(&sb);
    if (rc == LDB_OK)
        rc = value_text(out, sb_str(&sb), sb.len);
    sb_free(&sb);
    return rc;
}

/* ---- array_agg ------------------------------------------------------------ */
/*
 * The state keeps, next to its multiset, the ARRAY it finalizes to (NULL
 * while unknown) and nodd, the number of items whose count is not 1.
 * While nodd is 0 every item is in the array once, at its rank in the
 * multiset (the order is total, so the rank is well defined), and a step
 * that adds an item or drops one makes the same edit to the array at that
 * rank: O(log b), sharing the rest with the previous version, which the
 * previous output still holds. Finalize then returns the array, O(1). Any
 * other step (a count going to 2, or below zero inside a batch) forgets
 * the array, and so does every step before the first finalize: finalize
 * builds it from the multiset, O(b), and keeps it. So loading b rows
 * costs O(b), not b path copies, and rows repeated in a bucket (bag
 * input without a key) cost O(b) per change, as before.
 */
struct array_state {
    struct vms m;
    value arr;
    uint64_t nodd;
    size_t removed; /* 1 + the rank of a removal not yet made to arr, or 0 */
};

/* The rank of v among the distinct items of m (where it is or would
 * go), and its item, NULL when absent. */
static size_t vms_locate(const struct agg_vms_order *k, struct vms *m, const value *v,
                         struct vitem **at)
{
    *at = NULL;
    if (m->cap == VMS_TREE) {
        struct vitem probe = vitem_of(k, v, 0);
        btree_cursor c;
        if (!btree_seek(m->u.tree, tree_cmp, &probe, BT_GE, &c))
            return btree_count(m->u.tree);
        struct vitem *it = btree_cursor_item(&c);
        if (vcmp(k, &it->v, v) == 0)
            *at = it;
        return btree_cursor_rank(&c);
    }
    if (m->cap) {
        bool found;
        uint32_t i = arr_search(k, m, v, &found);
        if (found)
            *at = &m->u.arr[i];
        return i;
    }
    if (m->n == 0)
        return 0;
    int c = vcmp(k, &m->u.one.v, v);
    if (c == 0)
        *at = &m->u.one;
    return c < 0;
}

/* vms_add on a tree whose place for v vms_locate found: no second
 * descent. */
static int tree_add_at(agg_inst *ai, struct vms *m, const value *v, int64_t w, size_t rank,
                       struct vitem *at)
{
    if (!at) {
        struct vitem *it = pool_get(&ai->items);
        if (!it)
            return LDB_NOMEM;
        *it = vitem_of(m->u.tree->ctx, v, w);
        if (btree_insert_rank(m->u.tree, rank, it)) {
            pool_put(&ai->items, it);
            return LDB_NOMEM;
        }
        value_retain(v);
        m->n++;
        return LDB_OK;
    }
    if ((at->n += w) != 0)
        return LDB_OK;
    btree_delete_rank(m->u.tree, rank);
    tree_item_gone(ai, m, at);
    return LDB_OK;
}

static void array_agg_init(agg_inst *ai, void *st)
{
    struct array_state *s = st;
    vms_init(&s->m);
    s->arr = value_null();
    s->nodd = 0;
    s->removed = 0;
}

static bool odd_count(int64_t n) { return n != 0 && n != 1; }

/* s's array and pending removal after the edit that inserts x at rank
 * (x NULL: removes the item at rank), in *arr (a new reference) and
 * *removed; s is unchanged. A removal waits for the next edit: an update
 * of a row that keeps its place retracts the old item and adds the new
 * one at the same rank, and the two become one replace, one path copied
 * instead of two. */
static int array_edit(const struct array_state *s, size_t rank, const value *x, value *arr,
                      size_t *removed)
{
    *removed = 0;
    if (x && s->removed == rank + 1) {
        /* an update of columns the array does not show keeps the very
         * array, so that the group's output is seen unchanged at once */
        if (value_identical(value_item(&s->arr, rank), x)) {
            *arr = value_copy(&s->arr);
            return LDB_OK;
        }
        return value_array_set(arr, &s->arr, rank, x);
    }
    value cur = value_copy(&s->arr);
    int rc = LDB_OK;
    if (s->removed) {
        rc = value_array_remove(arr, &s->arr, s->removed - 1);
        value_release(&cur);
        if (rc)
            return rc;
        cur = *arr;
    }
    if (!x) {
        *arr = cur;
        *removed = rank + 1;
        return LDB_OK;
    }
    rc = value_array_insert(arr, &cur, rank, x);
    value_release(&cur);
    return rc;
}

/* Adds w copies of item to s, editing its array when it is known and
 * stays a list of distinct items. */
static int array_add(agg_inst *ai, struct array_state *s, const value *item, int64_t w)
{
    if (w == 0)
        return LDB_OK;
    const struct agg_vms_order *k = &ai->main_cmp;
    struct vitem *at;
    size_t rank = vms_locate(k, &s->m, item, &at);
    int64_t old = at ? at->n : 0;
    uint64_t nodd = s->nodd - odd_count(old) + odd_count(old + w);
    value arr = value_null();
    size_t removed = 0;
    if (value_type(&s->arr) == LDB_ARRAY && s->nodd == 0 && nodd == 0) {
        /* counts 0 and 1 only: the item comes or goes */
        int rc = array_edit(s, rank, old ? NULL : item_class(k, item), &arr, &removed);
        if (rc == LDB_NOMEM)
            return rc;
        /* LDB_RANGE: the array stays unknown; finalize reports it */
    }
    int rc = s->m.cap == VMS_TREE ? tree_add_at(ai, &s->m, item, w, rank, at)
                                  : vms_add(ai, k, &s->m, item, w);
    if (rc) {
        value_release(&arr);
        return rc;
    }
    value_release(&s->arr);
    s->arr = arr;
    s->nodd = nodd;
    s->removed = removed;
    return LDB_OK;
}

/* NULL elements count: an array keeps every row. */
static int array_agg_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    return array_add(ai, st, &args[ai->norder ? 1 : 0], w);
}

static int array_agg_merge(agg_inst *ai, void *st, const void *other)
{
    struct vms_iter it;
    for (const struct vitem *x = vms_first(&it, other); x; x = vms_next(&it)) {
        int rc = array_add(ai, st, &x->v, x->n);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

/* The ARRAY of m's items, each repeated by its count. */
static int array_build(agg_inst *ai, const struct vms *m, value *out)
{
    struct vms_iter it;
    size_t n = 0;
    for (const struct vitem *x = vms_first(&it, m); x; x = vms_next(&it)) {
        if (x->n < 0 || (uint64_t)x->n > VALUE_MAX_LEN - n)
            return x->n < 0 ? LDB_INTERNAL : LDB_RANGE;
        n += (size_t)x->n;
    }
    value *items = mem_alloc(n * sizeof *items);
    if (!items)
        return LDB_NOMEM;
    size_t k = 0;
    for (const struct vitem *x = vms_first(&it, m); x; x = vms_next(&it))
        for (int64_t c = 0; c < x->n; c++)
            items[k++] = *item_class(&ai->main_cmp, &x->v); /* borrowed */
    int rc = value_array(out, items, n);
    mem_free(items);
    return rc;
}

static int array_agg_finalize(agg_inst *ai, const void *st, value *out)
{
    /* the kept array is a cache of the multiset: filling it changes no
     * result, and the state is the caller's writable memory */
    struct array_state *s = (struct array_state *)st;
    if (value_type(&s->arr) != LDB_ARRAY) {
        int rc = array_build(ai, &s->m, &s->arr);
        if (rc)
            return rc;
    } else if (s->removed) {
        value arr;
        int rc = value_array_remove(&arr, &s->arr, s->removed - 1);
        if (rc)
            return rc;
        value_release(&s->arr);
        s->arr = arr;
        s->removed = 0;
    }
    *out = value_copy(&s->arr);
    return LDB_OK;
}

static void array_agg_destroy(agg_inst *ai, void *st)
{
    struct array_state *s = st;
    vms_free(ai, &s->m);
    value_release(&s->arr);
}

/* The kept array is not counted: it is the array the group's output row
 * holds (value_mem counts it there). */
static size_t array_agg_heap(const agg_inst *ai, const void *st)
{
    return vms_heap_bytes(&((const struct array_state *)st)->m);
}

const struct agg_def agg_min = {
    "min", 1, AGG_RETRACT | AGG_MERGE, sizeof(struct vms), vms_agg_init,
    vms_agg_step, vms_agg_merge, min_finalize, vms_agg_destroy, vms_agg_heap, NULL, -1,
};

const struct agg_def agg_max = {
    "max", 1, AGG_RETRACT | AGG_MERGE, sizeof(struct vms), vms_agg_init,
    vms_agg_step, vms_agg_merge, max_finalize, vms_agg_destroy, vms_agg_heap, NULL, 1,
};

const struct agg_def agg_string_agg = {
    "string_agg", 1, AGG_RETRACT | AGG_MERGE | AGG_ORDERED, sizeof(struct vms), vms_agg_init,
    vms_agg_step, vms_agg_merge, string_agg_finalize, vms_agg_destroy, vms_agg_heap, NULL, 0,
};

const struct agg_def agg_array_agg = {
    "array_agg", 1, AGG_RETRACT | AGG_MERGE | AGG_ORDERED, sizeof(struct array_state),
    array_agg_init, array_agg_step, array_agg_merge, array_agg_finalize, array_agg_destroy,
    array_agg_heap, NULL, 0,
};

const struct agg_def *agg_builtin(const char *name)
{
    static const struct {
        const char *name;
        const struct agg_def *def;
    } table[] = {
        { "count", &agg_count },   { "sum", &agg_sum },
        { "total", &agg_total },   { "avg", &agg_avg },
        { "min", &agg_min },       { "max", &agg_max },
        { "string_agg", &agg_string_agg }, { "group_concat", &agg_string_agg },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].def;
    return NULL;
}

/* ---- instances, the DISTINCT layer and the recompute layer ---------------------- */
/*
 * A DISTINCT state is a multiset of argument values followed by the inner
 * aggregate's state. The inner state always holds exactly one copy of the
 * representative of each contributing class, because every change
 * retracts the class's old representative and adds its new one whenever
 * they differ.
 *
 * An aggregate declared without AGG_RETRACT gets the recompute layer
 * instead: its state is only the multiset of argument tuples (one value,
 * or an ARRAY of them for other argument counts), and finalize steps a
 * fresh inner state with every tuple, in value order, then finalizes it.
 * Retraction is then a count going down, so every caller (the incremental
 * reduce included) may retract, at the cost of keeping the group's values
 * and of a recomputation per finalize; the value order makes one-shot and
 * incremental results identical. With DISTINCT it steps each class's
 * representative once.
 */

static size_t inner_offset(void) { return (sizeof(struct vms) + 7) & ~(size_t)7; }

static void *inner_of(const agg_inst *ai, void *st)
{
    return ai->distinct ? (char *)st + inner_offset() : st;
}

/* The multiset key of an argument tuple (a new reference). */
static int tuple_value(const agg_inst *ai, const value *args, value *out)
{
    if (ai->def->nargs == 1) {
        *out = value_copy(&args[0]);
        return LDB_OK;
    }
    return value_array(out, args, ai->def->nargs);
}

static int recompute_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    if (w == 0 || (ai->distinct && value_is_null(&args[0])))
        return LDB_OK;
    value t;
    int rc = tuple_value(ai, args, &t);
    if (rc == LDB_OK)
        rc = vms_add(ai, &ai->main_cmp, st, &t, w);
    value_release(&t);
    return rc;
}

/* The argument values of a multiset key (tuple_value): contiguous in the
 * tuple when it is one leaf, else copied (borrowed) into buf. */
static const value *tuple_args(const agg_inst *ai, const value *t, value *buf)
{
    if (ai->def->nargs == 1)
        return t;
    const value *items = value_leaf_items(t);
    if (items)
        return items;
    value_iter it;
    value_iter_init(&it, t);
    for (size_t i = 0; (items = value_iter_next(&it)); i++)
        buf[i] = *items;
    return buf;
}

/* Steps inner with every tuple of m (each class's representative once
 * under DISTINCT); buf holds nargs values. */
static int recompute_feed(agg_inst *ai, const struct vms *m, void *inner, value *buf)
{
    struct vms_iter it;
    const value *class_first = NULL;
    bool class_done = false;
    for (const struct vitem *x = vms_first(&it, m); x; x = vms_next(&it)) {
        if (x->n < 0)
            return LDB_INTERNAL;
        if (ai->distinct) {
            if (!class_first || value_cmp(class_first, &x->v, ai->coll) != 0) {
                class_first = &x->v;
                class_done = false;
            }
            if (class_done || x->n == 0)
                continue;
            class_done = true;
        }
        int64_t w = ai->distinct ? 1 : x->n;
        int rc = w ? ai->def->step(ai, inner, tuple_args(ai, &x->v, buf), w) : LDB_OK;
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int recompute_finalize(agg_inst *ai, const struct vms *m, value *out)
{
    size_t off = (ai->def->state_size + 15) & ~(size_t)15;
    void *inner = mem_alloc(off + ai->def->nargs * sizeof(value));
    if (!inner)
        return LDB_NOMEM;
    ai->def->init(ai, inner);
    int rc = recompute_feed(ai, m, inner, (value *)((char *)inner + off));
    if (rc == LDB_OK)
        rc = ai->def->finalize(ai, inner, out);
    ai->def->destroy(ai, inner);
    mem_free(inner);
    return rc;
}

int agg_inst_init(agg_inst *ai, const struct agg_def *def, enum ldb_collation coll,
                  bool distinct, const value *sep)
{
    if (distinct && def->nargs != 1)
        return LDB_MISUSE;
    ai->def = def;
    ai->coll = coll;
    ai->distinct = distinct;
    ai->recompute = !(def->flags & AGG_RETRACT);
    if (sep) {
        ai->sep = value_copy(sep);
    } else {
        ai->sep = value_null();
        value_text(&ai->sep, ",", 1); /* inline: cannot fail */
    }
    pool_init(&ai->items, sizeof(struct vitem));
    ai->order = NULL;
    ai->norder = 0;
    ai->main_cmp = (struct agg_vms_order){ coll, 0, NULL, false };
    ai->dist_cmp = ai->main_cmp;
    return LDB_OK;
}

int agg_inst_set_order(agg_inst *ai, const struct agg_order_term *terms, uint32_t n)
{
    if (n == 0)
        return LDB_OK;
    if (!(ai->def->flags & AGG_ORDERED) || ai->norder)
        return LDB_MISUSE;
    if (!(ai->order = mem_alloc(n * sizeof *terms)))
        return LDB_NOMEM;
    memcpy(ai->order, terms, n * sizeof *terms);
    ai->norder = n;
    ai->main_cmp = (struct agg_vms_order){ ai->coll, n, ai->order, false };
    ai->dist_cmp = (struct agg_vms_order){ ai->coll, n, ai->order, true };
    return LDB_OK;
}

void agg_inst_free(agg_inst *ai)
{
    value_release(&ai->sep);
    pool_free(&ai->items);
    mem_free(ai->order);
}

uint32_t agg_nargs(const agg_inst *ai)
{
    return ai->def->nargs + (ai->norder ? 1 : 0);
}

size_t agg_state_size(const agg_inst *ai)
{
    if (ai->recompute)
        return inner_offset();
    return (ai->distinct ? inner_offset() : 0) + ai->def->state_size;
}

void agg_init(agg_inst *ai, void *st)
{
    if (ai->distinct || ai->recompute)
        vms_init(st);
    if (!ai->recompute)
        ai->def->init(ai, inner_of(ai, st));
}

/* Whether the class of value v contributes (total count > 0) and, if
 * so, its representative: the least member with a positive count (for
 * an ordered instance, the copy that comes first in the order). */
static bool class_rep(agg_inst *ai, const struct vms *m, const value *v, value *rep)
{
    const struct agg_vms_order *k = &ai->dist_cmp;
    struct vms_iter it;
    int64_t total = 0;
    const value *least = NULL;
    for (const struct vitem *x = vms_seek_class(k, &it, m, v);
         x && value_cmp(item_class(k, &x->v), v, ai->coll) == 0; x = vms_next(&it)) {
        total += x->n;
        if (!least && x->n > 0)
            least = &x->v;
    }
    if (total <= 0)
        return false;
    *rep = value_copy(least);
    return true;
}

/* Steps the inner aggregate with a class representative (an item of
 * the DISTINCT multiset: the argument, or for an ordered instance the
 * argument and its order values). */
static int step_rep(agg_inst *ai, void *inner, const value *rep, int64_t w)
{
    const value args[2] = { *item_class(&ai->dist_cmp, rep), *rep };
    return ai->def->step(ai, inner, args, w);
}

static int distinct_step(agg_inst *ai, void *st, const value *item, int64_t w)
{
    const value *v = item_class(&ai->dist_cmp, item);
    if (value_is_null(v) || w == 0)
        return LDB_OK;
    value old_rep, new_rep;
    bool had = class_rep(ai, st, v, &old_rep);
    int rc = vms_add(ai, &ai->dist_cmp, st, item, w);
    bool has = rc == LDB_OK && class_rep(ai, st, v, &new_rep);
    void *inner = inner_of(ai, st);
    if (rc == LDB_OK && had && has && value_identical(&old_rep, &new_rep)) {
        had = has = false; /* nothing changes for the inner aggregate */
        value_release(&old_rep);
        value_release(&new_rep);
    }
    if (had) {
        if (rc == LDB_OK)
            rc = step_rep(ai, inner, &old_rep, -1);
        value_release(&old_rep);
    }
    if (has) {
        if (rc == LDB_OK)
            rc = step_rep(ai, inner, &new_rep, 1);
        value_release(&new_rep);
    }
    return rc;
}

int agg_step(agg_inst *ai, void *st, const value *args, int64_t weight)
{
    if (ai->recompute)
        return recompute_step(ai, st, args, weight);
    if (ai->distinct)
        return value_is_null(&args[0])
                   ? LDB_OK
                   : distinct_step(ai, st, &args[ai->norder ? 1 : 0], weight);
    return ai->def->step(ai, st, args, weight);
}

int agg_merge(agg_inst *ai, void *st, const void *other)
{
    if (ai->recompute)
        return vms_merge(ai, &ai->main_cmp, st, other);
    if (!ai->distinct)
        return ai->def->merge ? ai->def->merge(ai, st, other) : LDB_MISUSE;
    struct vms_iter it;
    for (const struct vitem *x = vms_first(&it, other); x; x = vms_next(&it)) {
        int rc = distinct_step(ai, st, &x->v, x->n);
        if (rc)
            return rc;
    }
    return LDB_OK;
}

int agg_finalize(agg_inst *ai, const void *st, value *out)
{
    if (ai->recompute)
        return recompute_finalize(ai, st, out);
    return ai->def->finalize(ai, inner_of(ai, (void *)st), out);
}

void agg_destroy(agg_inst *ai, void *st)
{
    if (ai->distinct || ai->recompute)
        vms_free(ai, st);
    if (!ai->recompute)
        ai->def->destroy(ai, inner_of(ai, st));
}

size_t agg_heap_bytes(const agg_inst *ai, const void *st)
{
    if (ai->recompute)
        return vms_heap_bytes(st);
    size_t n = ai->def->heap_bytes(ai, inner_of(ai, (void *)st));
    return ai->distinct ? n + vms_heap_bytes(st) : n;
}
