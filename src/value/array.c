/*
 * array.c - ARRAY values as persistent sequences (layout in value.h).
 *
 * An array is a B-tree of immutable, reference-counted nodes: leaves of
 * items, inner nodes of subtrees. An edit copies the nodes on one path
 * (and at most one sibling per level) and shares every other node with
 * the array it was made from, so inserting or removing an item costs
 * O(log n) nodes of bounded size, and two versions of an include's array
 * cost one array plus the copied path.
 *
 * Invariants:
 * - every leaf but a root leaf holds LEAF_MIN..LEAF_MAX items; every inner
 *   node but the root LINK_MIN..LINK_MAX kids (the root at least 2); all
 *   leaves lie at one depth, so height is O(log n) and nothing here
 *   recurses deeper than that (items nested in items are another story:
 *   releasing them recurses as deep as the nesting, as it always did);
 * - a node's summary depends on its items only, never on the shape: hash
 *   is the polynomial H(x_0..x_{n-1}) = sum h(x_i) B^(n-1-i) mod 2^64 of
 *   the items' BINARY hashes h, with B odd; concatenation combines as
 *   H(L R) = H(L) B^|R| + H(R), so an inner node needs its kids' B^len
 *   (kept in inner nodes, computed for leaves) and equal arrays hash alike
 *   however they were built. value_hash finishes H with the length;
 * - mem is the node's bytes plus its kids' or items' value_mem, each
 *   shared object counted once per reference, saturating.
 * Every function that fails with LDB_NOMEM frees what it built and leaves
 * its inputs as they were.
 */
#include "value/value.h"

#include "base/hash.h"
#include "base/mem.h"

#include <string.h>

#define LEAF_MAX VARRAY_LEAF_MAX
#define LEAF_MIN (LEAF_MAX / 2)
#define LINK_MAX 4
#define LINK_MIN (LINK_MAX / 2)
#define POLY_B 0x9e3779b97f4a7c15ull /* odd */
#define H_ARRAY 0x85ebca77c2b2ae63ull

_Static_assert(LEAF_MAX >= LINK_MAX, "a node's entries fit the leaf-sized buffers");

static value *leaf_items(const varray *a) { return (value *)(a + 1); }
static uint64_t *inner_pow(const varray *a) { return (uint64_t *)(a + 1); }
static varray **inner_kids(const varray *a) { return (varray **)(inner_pow(a) + 1); }

static uint64_t pow_b(uint64_t n)
{
    uint64_t r = 1, b = POLY_B;
    for (; n; n >>= 1, b *= b)
        if (n & 1)
            r *= b;
    return r;
}

static uint64_t node_pow(const varray *a)
{
    return a->nkids ? *inner_pow(a) : pow_b(a->h.len);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static varray *node_alloc(size_t extra, uint32_t len, uint16_t nkids, uint16_t height)
{
    varray *a = mem_alloc(sizeof *a + extra);
    if (!a)
        return NULL;
    a->h.refs = 1;
    a->h.len = len;
    a->nkids = nkids;
    a->height = height;
    a->pad_ = 0;
    return a;
}

/* A leaf of copies of items[0..n), n <= LEAF_MAX. */
static varray *leaf_new(const value *items, size_t n)
{
    varray *a = node_alloc(n * sizeof(value), (uint32_t)n, 0, 0);
    if (!a)
        return NULL;
    value *dst = leaf_items(a);
    uint64_t h = 0, mem = sizeof *a + n * sizeof(value);
    for (size_t i = 0; i < n; i++) {
        dst[i] = value_copy(&items[i]);
        h = h * POLY_B + value_hash(&items[i], LDB_COLL_BINARY);
        mem = add_sat(mem, value_mem(&items[i]) - sizeof(value));
    }
    a->sum.hash = h;
    a->sum.mem = mem;
    return a;
}

/* An inner node holding a new reference to each of kids[0..n). */
static varray *inner_new(varray *const *kids, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += kids[i]->h.len;
    varray *a = node_alloc(sizeof(uint64_t) + n * sizeof(varray *), (uint32_t)len,
                           (uint16_t)n, (uint16_t)(kids[0]->height + 1));
    if (!a)
        return NULL;
    uint64_t h = 0, pow = 1, mem = sizeof *a + sizeof(uint64_t) + n * sizeof(varray *);
    for (size_t i = 0; i < n; i++) {
        uint64_t p = node_pow(kids[i]);
        h = h * p + kids[i]->sum.hash;
        pow *= p;
        mem = add_sat(mem, kids[i]->sum.mem);
        kids[i]->h.refs++;
        inner_kids(a)[i] = kids[i];
    }
    *inner_pow(a) = pow;
    a->sum.hash = h;
    a->sum.mem = mem;
    return a;
}

static void node_release(varray *a)
{
    if (a && --a->h.refs == 0)
        value_array_free_(a);
}

void value_array_free_(varray *a)
{
    if (a->nkids) {
        for (uint16_t i = 0; i < a->nkids; i++)
            node_release(inner_kids(a)[i]);
    } else {
        for (uint32_t i = 0; i < a->h.len; i++)
            value_release(&leaf_items(a)[i]);
    }
    mem_free(a);
}

static value array_value(varray *a)
{
    value v;
    memset(&v, 0, sizeof v);
    v.s.type = LDB_ARRAY;
    v.s.ilen = VALUE_HEAP;
    v.h.u.obj = &a->h;
    return v;
}

/* ---- building ------------------------------------------------------------ */

/* Entries of one node under construction: items of a leaf or kids of an
 * inner node, borrowed. */
struct entries {
    bool leaf;
    size_t n;
    union {
        value items[2 * LEAF_MAX];
        varray *kids[2 * LEAF_MAX];
    } u;
};

static varray *node_of(const struct entries *e, size_t from, size_t n)
{
    return e->leaf ? leaf_new(e->u.items + from, n) : inner_new(e->u.kids + from, n);
}

/* One node of e's entries, or two halves when they overflow a node. */
static int nodes_of(const struct entries *e, varray **a, varray **b)
{
    size_t max = e->leaf ? LEAF_MAX : LINK_MAX;
    size_t half = e->n <= max ? e->n : e->n / 2;
    *b = NULL;
    if (!(*a = node_of(e, 0, half)))
        return LDB_NOMEM;
    if (half < e->n && !(*b = node_of(e, half, e->n - half))) {
        node_release(*a);
        return LDB_NOMEM;
    }
    return LDB_OK;
}

/* Appends the entries of node a (borrowed). */
static void entries_add(struct entries *e, const varray *a)
{
    if (e->leaf)
        memcpy(e->u.items + e->n, leaf_items(a), a->h.len * sizeof(value));
    else
        memcpy(e->u.kids + e->n, inner_kids(a), a->nkids * sizeof(varray *));
    e->n += e->leaf ? a->h.len : a->nkids;
}

/* Builds the level above nodes[0..n) in place: ceil(n / LINK_MAX) inner
 * nodes, their sizes spread evenly so that each holds LINK_MIN or more. */
static int build_level(varray **nodes, size_t *n)
{
    size_t groups = (*n + LINK_MAX - 1) / LINK_MAX, from = 0;
    for (size_t g = 0; g < groups; g++) {
        size_t to = (g + 1) * *n / groups;
        varray *p = inner_new(nodes + from, to - from);
        if (!p) {
            for (size_t k = 0; k < g; k++)
                node_release(nodes[k]);
            for (size_t k = from; k < *n; k++)
                node_release(nodes[k]);
            return LDB_NOMEM;
        }
        for (size_t k = from; k < to; k++)
            node_release(nodes[k]);
        nodes[g] = p;
        from = to;
    }
    *n = groups;
    return LDB_OK;
}

/* The leaves of items[0..n), spread evenly; then the levels above. */
static int build_tree(varray **root, const value *items, size_t n)
{
    size_t count = (n + LEAF_MAX - 1) / LEAF_MAX, from = 0;
    varray **nodes = mem_alloc(count * sizeof *nodes);
    if (!nodes)
        return LDB_NOMEM;
    for (size_t i = 0; i < count; i++) {
        size_t to = (i + 1) * n / count;
        if (!(nodes[i] = leaf_new(items + from, to - from))) {
            while (i > 0)
                node_release(nodes[--i]);
            mem_free(nodes);
            return LDB_NOMEM;
        }
        from = to;
    }
    while (count > 1) {
        if (build_level(nodes, &count)) {
            mem_free(nodes);
            return LDB_NOMEM;
        }
    }
    *root = nodes[0];
    mem_free(nodes);
    return LDB_OK;
}

int value_array(value *out, const value *items, size_t n)
{
    if (n > VALUE_MAX_LEN / sizeof(value))
        return LDB_RANGE;
    varray *root;
    if (n <= LEAF_MAX)
        root = leaf_new(items, n);
    else if (build_tree(&root, items, n))
        root = NULL;
    if (!root)
        return LDB_NOMEM;
    *out = array_value(root);
    return LDB_OK;
}

/* ---- reading ------------------------------------------------------------- */

/* The kid of inner node a holding index *i (<= its length when at_end),
 * *i made relative to it. */
static uint16_t kid_at(const varray *a, size_t *i, bool at_end)
{
    varray *const *kids = inner_kids(a);
    uint16_t k = 0;
    while (k + 1 < a->nkids && (*i > kids[k]->h.len || (!at_end && *i == kids[k]->h.len)))
        *i -= kids[k++]->h.len;
    return k;
}

const value *value_item_deep_(const varray *a, size_t i)
{
    while (a->nkids)
        a = inner_kids(a)[kid_at(a, &i, false)];
    return &leaf_items(a)[i];
}

static void iter_descend(value_iter *it, const varray *a)
{
    while (a->nkids) {
        it->path[it->depth] = a;
        it->pos[it->depth++] = 0;
        a = inner_kids(a)[0];
    }
    it->cur = leaf_items(a);
    it->end = it->cur + a->h.len;
}

void value_iter_init(value_iter *it, const value *v)
{
    it->depth = 0;
    iter_descend(it, value_varray(v));
}

const value *value_iter_leaf_(value_iter *it)
{
    while (it->depth > 0) {
        unsigned d = it->depth - 1;
        if (it->pos[d] + 1 < it->path[d]->nkids) {
            const varray *kid = inner_kids(it->path[d])[++it->pos[d]];
            iter_descend(it, kid);
            if (it->cur != it->end)
                return it->cur++;
            continue;
        }
        it->depth = d;
    }
    return NULL;
}

uint64_t value_array_hash_(const value *v, enum ldb_collation coll)
{
    uint64_t h = value_varray(v)->sum.hash;
    if (coll != LDB_COLL_BINARY) {
        value_iter it;
        value_iter_init(&it, v);
        h = 0;
        for (const value *x; (x = value_iter_next(&it));)
            h = h * POLY_B + value_hash(x, coll);
    }
    return hash_combine(H_ARRAY ^ value_len(v), h);
}

/* ---- editing ------------------------------------------------------------- */

/* The kids of inner node a with its nrep kids from k on replaced by x
 * and y (y may be NULL), borrowed. */
static void replace_kids(struct entries *e, const varray *a, uint16_t k, uint16_t nrep,
                         varray *x, varray *y)
{
    varray *const *kids = inner_kids(a);
    e->leaf = false;
    memcpy(e->u.kids, kids, k * sizeof *kids);
    e->n = k;
    e->u.kids[e->n++] = x;
    if (y)
        e->u.kids[e->n++] = y;
    memcpy(e->u.kids + e->n, kids + k + nrep, (a->nkids - k - nrep) * sizeof *kids);
    e->n += a->nkids - k - nrep;
}

/* Node a with x inserted before index i: *na, plus *nb when it split. */
static int node_insert(const varray *a, size_t i, const value *x, varray **na, varray **nb)
{
    struct entries e;
    if (!a->nkids) {
        e.leaf = true;
        e.n = a->h.len + 1;
        memcpy(e.u.items, leaf_items(a), i * sizeof(value));
        e.u.items[i] = *x;
        memcpy(e.u.items + i + 1, leaf_items(a) + i, (a->h.len - i) * sizeof(value));
        return nodes_of(&e, na, nb);
    }
    uint16_t k = kid_at(a, &i, true);
    varray *sa, *sb;
    int rc = node_insert(inner_kids(a)[k], i, x, &sa, &sb);
    if (rc)
        return rc;
    replace_kids(&e, a, k, 1, sa, sb);
    rc = nodes_of(&e, na, nb);
    node_release(sa);
    node_release(sb);
    return rc;
}

static bool underfull(const varray *a)
{
    return a->nkids ? a->nkids < LINK_MIN : a->h.len < LEAF_MIN;
}

/* Node a with item i removed, as *na; a kid that falls below its minimum
 * takes entries from a neighbour, or merges with it. */
static int node_remove(const varray *a, size_t i, varray **na)
{
    struct entries e;
    if (!a->nkids) {
        e.leaf = true;
        e.n = a->h.len - 1;
        memcpy(e.u.items, leaf_items(a), i * sizeof(value));
        memcpy(e.u.items + i, leaf_items(a) + i + 1, (e.n - i) * sizeof(value));
        *na = leaf_new(e.u.items, e.n);
        return *na ? LDB_OK : LDB_NOMEM;
    }
    uint16_t k = kid_at(a, &i, false);
    varray *sub, *pa, *pb = NULL;
    int rc = node_remove(inner_kids(a)[k], i, &sub);
    if (rc)
        return rc;
    if (!underfull(sub)) {
        replace_kids(&e, a, k, 1, sub, NULL);
        *na = inner_new(e.u.kids, e.n);
        node_release(sub);
        return *na ? LDB_OK : LDB_NOMEM;
    }
    /* the root keeps two kids or more, so a neighbour exists */
    uint16_t left = k > 0 ? k - 1 : k;
    const varray *l = left == k ? sub : inner_kids(a)[left];
    const varray *r = left == k ? inner_kids(a)[k + 1] : sub;
    e.leaf = !sub->nkids;
    e.n = 0;
    entries_add(&e, l);
    entries_add(&e, r);
    rc = nodes_of(&e, &pa, &pb);
    node_release(sub);
    if (rc)
        return rc;
    replace_kids(&e, a, left, 2, pa, pb);
    *na = inner_new(e.u.kids, e.n);
    node_release(pa);
    node_release(pb);
    return *na ? LDB_OK : LDB_NOMEM;
}

/* Node a with item i replaced by x: one path, no change of shape. */
static int node_set(const varray *a, size_t i, const value *x, varray **na)
{
    struct entries e;
    if (!a->nkids) {
        memcpy(e.u.items, leaf_items(a), a->h.len * sizeof(value));
        e.u.items[i] = *x;
        *na = leaf_new(e.u.items, a->h.len);
        return *na ? LDB_OK : LDB_NOMEM;
    }
    uint16_t k = kid_at(a, &i, false);
    varray *sub;
    int rc = node_set(inner_kids(a)[k], i, x, &sub);
    if (rc)
        return rc;
    replace_kids(&e, a, k, 1, sub, NULL);
    *na = inner_new(e.u.kids, e.n);
    node_release(sub);
    return *na ? LDB_OK : LDB_NOMEM;
}

int value_array_set(value *out, const value *arr, size_t i, const value *x)
{
    varray *na;
    int rc = node_set(value_varray(arr), i, x, &na);
    if (rc)
        return rc;
    *out = array_value(na);
    return LDB_OK;
}

int value_array_insert(value *out, const value *arr, size_t i, const value *x)
{
    const varray *a = value_varray(arr);
    if (a->h.len + (size_t)1 > VALUE_MAX_LEN / sizeof(value))
        return LDB_RANGE;
    varray *na, *nb;
    int rc = node_insert(a, i, x, &na, &nb);
    if (rc)
        return rc;
    if (nb) {
        varray *kids[2] = { na, nb };
        varray *root = inner_new(kids, 2);
        node_release(na);
        node_release(nb);
        if (!root)
            return LDB_NOMEM;
        na = root;
    }
    *out = array_value(na);
    return LDB_OK;
}

int value_array_remove(value *out, const value *arr, size_t i)
{
    varray *na;
    int rc = node_remove(value_varray(arr), i, &na);
    if (rc)
        return rc;
    /* a root left with one kid gives way to it */
    if (na->nkids == 1) {
        varray *kid = inner_kids(na)[0];
        kid->h.refs++;
        node_release(na);
        na = kid;
    }
    *out = array_value(na);
    return LDB_OK;
}

/* ---- verification -------------------------------------------------------- */

/* Checks node a of the given height against the invariants; bounded says
 * whether it must hold its minimum (not the root). */
static const char *check_node(const varray *a, unsigned height, bool bounded)
{
    if (a->height != height)
        return "leaves at different depths";
    if (!a->nkids && (a->h.len > LEAF_MAX || (bounded && a->h.len < LEAF_MIN)))
        return "leaf out of its bounds";
    if (a->nkids && (a->nkids > LINK_MAX || a->nkids < (bounded ? LINK_MIN : 2)))
        return "inner node out of its bounds";
    varray *const *kids = inner_kids(a);
    for (uint16_t i = 0; i < a->nkids; i++) {
        const char *err = check_node(kids[i], height - 1, true);
        if (err)
            return err;
    }
    varray *copy = a->nkids ? inner_new(kids, a->nkids) : leaf_new(leaf_items(a), a->h.len);
    if (!copy)
        return NULL; /* nothing to compare with */
    bool same = copy->h.len == a->h.len && copy->sum.hash == a->sum.hash &&
                copy->sum.mem == a->sum.mem && node_pow(copy) == node_pow(a);
    node_release(copy);
    return same ? NULL : "a node's length or summary differs from its items'";
}

const char *value_array_check(const value *v)
{
    const varray *a = value_varray(v);
    if (a->height >= VARRAY_MAX_HEIGHT)
        return "too high";
    return check_node(a, a->height, false);
}
