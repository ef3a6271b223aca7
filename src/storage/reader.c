/*
 * reader.c - R-order reads over an ordered index (see reader.h).
 *
 * Model. A "group at level L" is the stretch of index entries equal on
 * parts 0..L-1 (level 0: the whole index; level m: a tie group). Inside a
 * group at level L < m, the entries whose part L is NULL form one child
 * group at one end of it (the index's null place); the rest, the
 * "non-null part", is a run of child groups in the index's value order.
 * The R order of a group is its NULL child at the requested place and the
 * non-null part walked in the walk direction, each child in its own R
 * order recursively; a tie group is read by primary key.
 *
 * Part L is "moved" when the requested NULL place differs from where the
 * walk meets the NULL child. If no part below L is moved, the R order of
 * any child of a level-L group is its plain walk (apart from tie order),
 * so: a group at level L is one run if part L is not moved either, else
 * two runs (NULL child, non-null part). locate() descends levels until it
 * reaches such a group and returns the run holding a given R rank.
 *
 * Everything is computed from counts (btree_count_below with prefix
 * probes) and ranks, so no step depends on the data's size beyond the
 * O(log n) of a count. Tie order against the walk is handled inside runs
 * by the cursor (near/far ends of the current tie group).
 */
#include "storage/reader.h"

#include "storage/table.h"

#include <string.h>

/* ---- the requested order against the index ---------------------------------- */

static bool walk_meets_nulls_first(const struct table_index *ix,
                                   const struct order_spec *sp, uint32_t part)
{
    return sp->reverse ? !ix->parts[part].nulls_first : ix->parts[part].nulls_first;
}

static bool moved(const struct table_index *ix, const struct order_spec *sp, uint32_t part)
{
    return walk_meets_nulls_first(ix, sp, part) != sp->nulls_first[part];
}

/* No part after `part` is moved. */
static bool regular_below(const struct table_index *ix, const struct order_spec *sp,
                          uint32_t part)
{
    for (uint32_t j = part + 1; j < ix->nparts; j++)
        if (moved(ix, sp, j))
            return false;
    return true;
}

static bool nothing_moved(const struct table_index *ix, const struct order_spec *sp)
{
    return !moved(ix, sp, 0) && regular_below(ix, sp, 0);
}

void order_spec_init(const struct table_index *ix, bool reverse, struct order_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->reverse = reverse;
    for (uint32_t i = 0; i < ix->nparts; i++)
        spec->nulls_first[i] = walk_meets_nulls_first(ix, spec, i);
}

/* Collation matters only for columns that can hold TEXT. */
static bool text_capable(enum col_type t)
{
    return t == COL_TEXT || t == COL_ANY;
}

int order_spec_for(const struct table_index *ix, const struct order_term *terms,
                   uint32_t n, struct order_spec *spec)
{
    if (ix->kind != INDEX_ORDERED || n == 0 || n > ix->nparts)
        return LDB_NOTFOUND;
    bool reverse = terms[0].desc != ix->parts[0].desc;
    for (uint32_t i = 0; i < n; i++) {
        const struct key_part *p = &ix->parts[i];
        enum col_type type = ix->table->schema.cols[p->col].type;
        if (terms[i].col != p->col || (terms[i].desc != p->desc) != reverse)
            return LDB_NOTFOUND;
        if (text_capable(type) && terms[i].coll != p->coll)
            return LDB_NOTFOUND;
    }
    order_spec_init(ix, reverse, spec);
    for (uint32_t i = 0; i < n; i++)
        spec->nulls_first[i] = terms[i].nulls_first;
    return LDB_OK;
}

/* ---- groups ------------------------------------------------------------------- */

/* Entries in index order whose first n parts are below (or up to) key. */
static size_t count_key(const struct table_index *ix, const value *key, uint32_t n,
                        bool or_equal)
{
    return index_count_below(ix, key, n, or_equal);
}

/* A group at level L split into its NULL child and its non-null part. */
struct split {
    size_t nlo, nhi;  /* NULL child (index ranks) */
    size_t plo, phi;  /* non-null part */
};

/* key[0..L) names the group [lo, hi); key[L] is overwritten. */
static void split_group(const struct table_index *ix, value *key, uint32_t L,
                        size_t lo, size_t hi, struct split *s)
{
    key[L] = value_null();
    s->nlo = count_key(ix, key, L + 1, false);
    s->nhi = count_key(ix, key, L + 1, true);
    if (ix->parts[L].nulls_first) {
        s->plo = s->nhi;
        s->phi = hi;
    } else {
        s->plo = lo;
        s->phi = s->nlo;
    }
}

/* R offsets of the NULL child and of the non-null part inside a group. */
static size_t null_offset(const struct order_spec *sp, uint32_t L, const struct split *s)
{
    return sp->nulls_first[L] ? 0 : s->phi - s->plo;
}
static size_t part_offset(const struct order_spec *sp, uint32_t L, const struct split *s)
{
    return sp->nulls_first[L] ? s->nhi - s->nlo : 0;
}

/* ---- locating runs ------------------------------------------------------------- */

struct run {
    size_t lo, hi, start;
};

static void locate(const struct table_index *ix, const struct order_spec *sp,
                   size_t r, struct run *run)
{
    value key[INDEX_MAX_PARTS];
    size_t lo = 0, hi = index_count(ix), base = 0;
    for (uint32_t L = 0;; L++) {
        bool deep = L < ix->nparts && regular_below(ix, sp, L);
        if (L == ix->nparts || (deep && !moved(ix, sp, L))) {
            *run = (struct run){ lo, hi, base };
            return;
        }
        struct split s;
        split_group(ix, key, L, lo, hi, &s);
        size_t rel = r - base, noff = null_offset(sp, L, &s);
        if (rel >= noff && rel < noff + (s.nhi - s.nlo)) {
            base += noff;
            lo = s.nlo;
            hi = s.nhi;
            if (deep) {
                *run = (struct run){ lo, hi, base };
                return;
            }
            continue; /* key[L] is NULL: the child is named */
        }
        size_t poff = part_offset(sp, L, &s);
        base += poff;
        if (deep) {
            *run = (struct run){ s.plo, s.phi, base };
            return;
        }
        /* Deeper parts are moved: find the child holding rank r. */
        rel -= poff;
        size_t x = sp->reverse ? s.phi - 1 - rel : s.plo + rel;
        struct index_cursor c;
        index_at(ix, x, &c);
        key[L] = index_cursor_row(&c)->cols[ix->parts[L].col];
        lo = count_key(ix, key, L + 1, false);
        hi = count_key(ix, key, L + 1, true);
        base += sp->reverse ? s.phi - hi : lo - s.plo;
    }
}

/* ---- cursor moves ---------------------------------------------------------------- */

static bool walk_fwd(const struct order_cursor *c, btree_cursor *bc)
{
    return c->spec.reverse ? btree_prev(bc) : btree_next(bc);
}
static bool walk_back(const struct order_cursor *c, btree_cursor *bc)
{
    return c->spec.reverse ? btree_next(bc) : btree_prev(bc);
}

static bool same_key(const struct table_index *ix, const btree_cursor *a, const btree_cursor *b)
{
    return index_key_cmp(ix, btree_cursor_item(a), btree_cursor_item(b), ix->nparts) == 0;
}

static bool off(struct order_cursor *c)
{
    c->on = false;
    return false;
}

/* The tie group (index ranks) of the entry at index rank p. */
static void tie_group(const struct table_index *ix, size_t p, size_t *tlo, size_t *thi)
{
    value key[INDEX_MAX_PARTS];
    struct index_cursor ic;
    index_at(ix, p, &ic);
    const row *r = index_cursor_row(&ic);
    for (uint32_t i = 0; i < ix->nparts; i++)
        key[i] = r->cols[ix->parts[i].col];
    *tlo = count_key(ix, key, ix->nparts, false);
    *thi = count_key(ix, key, ix->nparts, true);
}

/* Puts near and far on the ends, in walk order, of the tie group of the
 * entry at index rank p, by counts: a group may hold any number of
 * entries (every NULL of a column), so it is never walked. */
static void enter_group(struct order_cursor *c, size_t p, size_t *tlo, size_t *thi)
{
    tie_group(c->ix, p, tlo, thi);
    btree_at(&c->ix->tree, c->spec.reverse ? *thi - 1 : *tlo, &c->near);
    btree_at(&c->ix->tree, c->spec.reverse ? *tlo : *thi - 1, &c->far);
}

/* Puts the cursor on R rank r (r < count). */
static bool position(struct order_cursor *c, size_t r)
{
    const struct table_index *ix = c->ix;
    struct run run;
    locate(ix, &c->spec, r, &run);
    c->run_lo = run.lo;
    c->run_hi = run.hi;
    c->run_start = run.start;
    c->rank = r;
    c->on = true;
    size_t o = r - run.start;
    size_t p = c->spec.reverse ? run.hi - 1 - o : run.lo + o;
    if (!c->tie_rev)
        return btree_at(&ix->tree, p, &c->cur);
    size_t tlo, thi;
    enter_group(c, p, &tlo, &thi);
    btree_at(&ix->tree, tlo + thi - 1 - p, &c->cur);
    return true;
}

static bool start(const struct table_index *ix, const struct order_spec *spec,
                  struct order_cursor *c, size_t r)
{
    c->ix = ix;
    c->spec = *spec;
    c->tie_rev = spec->ties_desc != spec->reverse;
    if (ix->kind != INDEX_ORDERED || r >= index_count(ix))
        return off(c);
    return position(c, r);
}

bool order_first(const struct table_index *ix, const struct order_spec *spec,
                 struct order_cursor *c)
{
    return start(ix, spec, c, 0);
}

bool order_last(const struct table_index *ix, const struct order_spec *spec,
                struct order_cursor *c)
{
    size_t n = index_count(ix);
    return start(ix, spec, c, n ? n - 1 : 0);
}

bool order_at(const struct table_index *ix, const struct order_spec *spec,
              size_t rank, struct order_cursor *c)
{
    return start(ix, spec, c, rank);
}

static size_t run_end(const struct order_cursor *c)
{
    return c->run_start + (c->run_hi - c->run_lo);
}

/* Entries of a tie group walked before its ends are found by counts
 * instead: small groups cost their size, large ones O(log n). */
#define GROUP_WALK 4

/* The far end (in the direction step walks) of the tie group that starts
 * at from: walked while short, else counted. */
static void group_end(struct order_cursor *c, const btree_cursor *from,
                      bool (*step)(const struct order_cursor *, btree_cursor *), btree_cursor *end)
{
    btree_cursor probe = *from;
    *end = *from;
    for (int n = 0; step(c, &probe) && same_key(c->ix, &probe, from); n++) {
        if (n == GROUP_WALK) {
            size_t tlo, thi;
            bool up = (step == walk_fwd) != c->spec.reverse; /* toward higher ranks */
            tie_group(c->ix, btree_cursor_rank(from), &tlo, &thi);
            btree_at(&c->ix->tree, up ? thi - 1 : tlo, end);
            return;
        }
        *end = probe;
    }
}

/* tie_rev, forward: the next tie group in walk order starts after far. */
static void enter_next_group(struct order_cursor *c)
{
    btree_cursor near = c->far, far;
    walk_fwd(c, &near);
    group_end(c, &near, walk_fwd, &far);
    c->near = near;
    c->far = far;
    c->cur = far;
}

/* tie_rev, backward: the previous tie group ends before near. */
static void enter_prev_group(struct order_cursor *c)
{
    btree_cursor far = c->near, near;
    walk_back(c, &far);
    group_end(c, &far, walk_back, &near);
    c->near = near;
    c->far = far;
    c->cur = near;
}

bool order_next(struct order_cursor *c)
{
    if (!c->on || c->rank + 1 >= index_count(c->ix))
        return off(c);
    if (c->rank + 1 >= run_end(c))
        return position(c, c->rank + 1);
    c->rank++;
    if (!c->tie_rev)
        return walk_fwd(c, &c->cur);
    if (btree_cursor_rank(&c->cur) != btree_cursor_rank(&c->near))
        return walk_back(c, &c->cur);
    enter_next_group(c);
    return true;
}

bool order_prev(struct order_cursor *c)
{
    if (!c->on || c->rank == 0)
        return off(c);
    if (c->rank - 1 < c->run_start)
        return position(c, c->rank - 1);
    c->rank--;
    if (!c->tie_rev)
        return walk_back(c, &c->cur);
    if (btree_cursor_rank(&c->cur) != btree_cursor_rank(&c->far))
        return walk_fwd(c, &c->cur);
    enter_prev_group(c);
    return true;
}

/* ---- ranks of positions ---------------------------------------------------------- */

/*
 * Rows R-before the probe key[0..n) (+ the row pk when n == nparts);
 * with or_equal, rows R-before or equal to it. The probe need not exist.
 */
static size_t count_before(const struct table_index *ix, const struct order_spec *sp,
                           const value *probe, uint32_t n, const row *pk, bool or_equal)
{
    size_t total = index_count(ix);
    bool tie_rev = sp->ties_desc != sp->reverse;
    if (nothing_moved(ix, sp) && (!tie_rev || !pk)) {
        size_t below = pk ? index_count_below_row(ix, pk, sp->reverse ? !or_equal : or_equal)
                          : count_key(ix, probe, n, sp->reverse ? !or_equal : or_equal);
        return sp->reverse ? total - below : below;
    }
    value key[INDEX_MAX_PARTS];
    memcpy(key, probe, n * sizeof *key);
    size_t lo = 0, hi = total, base = 0;
    for (uint32_t L = 0;; L++) {
        if (L == n) {
            if (!pk)
                return base + (or_equal ? hi - lo : 0);
            size_t lt = index_count_below_row(ix, pk, false);
            size_t le = index_count_below_row(ix, pk, true);
            if (!sp->ties_desc)
                return base + (or_equal ? le : lt) - lo;
            return base + hi - (or_equal ? lt : le);
        }
        struct split s;
        value v = key[L];
        split_group(ix, key, L, lo, hi, &s);
        key[L] = v;
        if (value_is_null(&v)) {
            base += null_offset(sp, L, &s);
            lo = s.nlo;
            hi = s.nhi;
            continue;
        }
        lo = count_key(ix, key, L + 1, false);
        hi = count_key(ix, key, L + 1, true);
        base += part_offset(sp, L, &s) + (sp->reverse ? s.phi - hi : lo - s.plo);
        if (lo == hi)
            return base;
    }
}

size_t order_count_before_row(const struct table_index *ix,
                              const struct order_spec *spec, const row *r)
{
    value key[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < ix->nparts; i++)
        key[i] = r->cols[ix->parts[i].col];
    return count_before(ix, spec, key, ix->nparts, r, false);
}

size_t order_count_before_key(const struct table_index *ix,
                              const struct order_spec *spec, const value *key,
                              uint32_t n, bool or_equal)
{
    return count_before(ix, spec, key, n, NULL, or_equal);
}

bool order_seek_row(const struct table_index *ix, const struct order_spec *spec,
                    const row *r, bool after, struct order_cursor *c)
{
    value key[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < ix->nparts; i++)
        key[i] = r->cols[ix->parts[i].col];
    return start(ix, spec, c, count_before(ix, spec, key, ix->nparts, r, after));
}

bool order_seek_key(const struct table_index *ix, const struct order_spec *spec,
                    const value *key, uint32_t n, bool after, struct order_cursor *c)
{
    return start(ix, spec, c, count_before(ix, spec, key, n, NULL, after));
}
