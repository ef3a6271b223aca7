/*
 * exec_join.c - joins. One operator runs every join kind: it
 * materializes the build side (the planner's choice, build_left),
 * indexes it by the equi-keys when there are any (a hash join; without
 * keys every build row is a candidate: a nested loop), then streams the
 * probe side. When the planner found the build side to be a table
 * looked up by its primary key or an index (plan.h, lookup), nothing is
 * materialized up front: each probe row's keys find its candidates in the
 * table, kept (referenced) while they are paired, since a write between
 * two pulls may change the table and invalidate a cursor. Each
 * candidate pair passes the residual or not; a probe
 * row that matched nothing is NULL-padded at once when its side is
 * preserved, and build rows that matched nothing are padded after the
 * probe side ends when theirs is. Output rows are always left ++ right.
 *
 * Join keys are compared as SQL '=': the key's affinity is applied, NULL
 * never matches, then canonical equality under the key's collation.
 */
#include "sql/exec_internal.h"

#include "base/hash.h"
#include "base/mem.h"
#include "storage/table.h"

#include <inttypes.h>
#include <string.h>

enum join_phase { J_PROBE, J_CANDIDATES, J_UNMATCHED, J_DONE };

struct join_op {
    struct op base;
    struct op *build, *probe;
    bool build_left;
    bool probe_outer, build_outer;
    uint32_t nkeys;
    struct table *lookup;      /* plan.h: the build side looked up by key */
    /* build side */
    VEC(row *) rows;
    value *keys;               /* rows.len * nkeys, affinity applied */
    size_t keys_cap;           /* rows the keys array has room for */
    uint64_t bytes;            /* held by the build side, against
                                  exec_env.join_memory_limit */
    bool *matched;             /* build_outer: matched flags */
    hmap index;                /* key hash -> row position (multimap) */
    bool built;
    /* probe side */
    enum join_phase phase;
    row *cur;                  /* held while its candidates are paired: a
                                  write between two pulls may free the
                                  stored row */
    value *pkeys;              /* nkeys */
    bool pkeys_null;
    uint64_t phash;
    uint32_t pos;
    bool cur_matched;
    size_t unmatched_i;
    row *scratch;              /* the last output row; see pair_row */
};

static const struct expr *key_expr(const struct join_op *j, uint32_t i, bool build)
{
    const struct join_key *k = &j->base.p->u.join.keys[i];
    return build == j->build_left ? k->left : k->right;
}

/* Evaluates the keys of r (build or probe side) into vals; *null when one
 * is NULL; *hash over them. */
static int eval_keys(struct join_op *j, const row *r, bool build, value *vals, bool *null,
                     uint64_t *hash)
{
    uint64_t h = HASH_SEED;
    *null = false;
    for (uint32_t i = 0; i < j->nkeys; i++) {
        const struct join_key *k = &j->base.p->u.join.keys[i];
        int rc = op_eval(&j->base, key_expr(j, i, build), r, &vals[i]);
        if (rc == LDB_OK && (rc = sql_apply_affinity(&vals[i], k->aff)))
            rc = exec_nomem(j->base.x);
        if (rc) {
            while (i-- > 0)
                value_release(&vals[i]);
            return rc;
        }
        *null = *null || value_is_null(&vals[i]);
        h = hash_combine(h, value_hash(&vals[i], k->coll));
    }
    *hash = h;
    return LDB_OK;
}

/* Counts the row against the limit: a row, its key values and its hash
 * entry (a stored row is shared, so this overstates, never understates). */
static int charge(struct join_op *j, const row *r)
{
    uint64_t limit = j->base.x->env.join_memory_limit;
    j->bytes += sizeof(row) + (uint64_t)r->ncols * sizeof(value) + sizeof(row *) +
                j->nkeys * (sizeof(value) + 2 * sizeof(uint64_t));
    if (limit && j->bytes > limit)
        return exec_error(j->base.x, LDB_ERROR, UINT32_MAX,
                          "a hash join's build side needs more than %" PRIu64
                          " bytes (PRAGMA join_memory_limit)",
                          limit);
    return LDB_OK;
}

static int add_build_row(struct join_op *j, row *r)
{
    size_t n = j->rows.len;
    int rc = charge(j, r);
    if (rc)
        return rc;
    if (j->nkeys && n == j->keys_cap) {
        /* room for the keys first: close releases rows.len * nkeys keys */
        size_t cap = n ? n * 2 : 64;
        value *k = mem_realloc(j->keys, cap * j->nkeys * sizeof *k);
        if (!k)
            return exec_nomem(j->base.x);
        j->keys = k;
        j->keys_cap = cap;
    }
    for (uint32_t i = 0; i < j->nkeys; i++)
        j->keys[n * j->nkeys + i] = value_null();
    if (vec_push(&j->rows, r))
        return exec_nomem(j->base.x);
    row_retain(r);
    if (!j->nkeys)
        return LDB_OK;
    bool null;
    uint64_t h;
    rc = eval_keys(j, r, true, j->keys + n * j->nkeys, &null, &h);
    if (rc)
        return rc;
    if (null)
        return LDB_OK; /* kept for outer padding, never matched */
    uint64_t *slot;
    bool found;
    if (hmap_put(&j->index, h, NULL, NULL, &slot, &found))
        return exec_nomem(j->base.x);
    *slot = n;
    return LDB_OK;
}

static int build(struct join_op *j)
{
    row *r;
    int rc;
    if (j->lookup) { /* the table is the build side's index */
        j->built = true;
        return LDB_OK;
    }
    while ((rc = op_next(j->build, &r)) == LDB_ROW)
        if ((rc = add_build_row(j, r)))
            return rc;
    if (rc != LDB_DONE)
        return rc;
    if (j->build_outer && j->rows.len && !(j->matched = mem_calloc(j->rows.len, sizeof(bool))))
        return exec_nomem(j->base.x);
    j->built = true;
    return LDB_OK;
}

/*
 * Output rows borrow their values: copying (retaining) every value of both
 * sides per pair touched each long text's heap object, a cache miss per
 * column per pair. While only the join holds its output row, its values
 * are plain bit copies of values in rows the join keeps alive (the probe
 * row and the build rows). A consumer that kept a reference is given
 * owned values before the join lets go of any source row: settle_pair runs
 * at the start of every pull and at close, before anything is released.
 */
static void settle_pair(struct join_op *j)
{
    row *o = j->scratch;
    if (!o)
        return;
    if (o->refs > 1) {
        for (uint32_t i = 0; i < o->ncols; i++)
            value_retain(&o->cols[i]);
    } else {
        for (uint32_t i = 0; i < o->ncols; i++)
            o->cols[i] = value_null(); /* borrowed: nothing to release */
    }
    row_release(o);
    j->scratch = NULL;
}

/* A row for the next pair: the join's own one when no consumer kept it. */
static row *pair_row(struct join_op *j, uint32_t n)
{
    if (j->scratch && j->scratch->refs == 1) {
        j->scratch->hash = 0;
        return j->scratch;
    }
    settle_pair(j);
    if (!(j->scratch = row_alloc(n)))
        exec_nomem(j->base.x);
    return j->scratch;
}

/* The output row for a pair (either may be NULL: padded). */
static int emit(struct join_op *j, const row *b, const row *pr, row **out)
{
    const row *l = j->build_left ? b : pr, *r = j->build_left ? pr : b;
    const struct plan *p = j->base.p;
    uint32_t nl = p->left->ncols, nr = p->right->ncols;
    row *o = pair_row(j, nl + nr);
    if (!o)
        return LDB_NOMEM;
    if (l)
        memcpy(o->cols, l->cols, nl * sizeof(value));
    else
        for (uint32_t i = 0; i < nl; i++)
            o->cols[i] = value_null();
    if (r)
        memcpy(o->cols + nl, r->cols, nr * sizeof(value));
    else
        for (uint32_t i = 0; i < nr; i++)
            o->cols[nl + i] = value_null();
    *out = o;
    return LDB_ROW;
}

static bool keys_match(const struct join_op *j, size_t at)
{
    const value *bk = j->keys + at * j->nkeys;
    for (uint32_t i = 0; i < j->nkeys; i++)
        if (!value_eq(&bk[i], &j->pkeys[i], j->base.p->u.join.keys[i].coll))
            return false;
    return true;
}

/* The next build row that may pair with the current probe row, or -1. */
static int64_t next_candidate(struct join_op *j)
{
    if (!j->nkeys)
        return j->pos < j->rows.len ? (int64_t)j->pos++ : -1;
    if (j->pkeys_null)
        return -1;
    uint64_t *v;
    while ((v = hmap_probe(&j->index, j->phash, &j->pos)))
        if (keys_match(j, *v))
            return (int64_t)*v;
    return -1;
}

/* The build row that may pair with the current probe row next (NULL:
 * none left), and its position among the materialized ones (-1 for a
 * looked-up row). */
static const row *next_pair(struct join_op *j, int64_t *at)
{
    *at = -1;
    if (j->lookup)
        return j->pos < j->rows.len ? j->rows.data[j->pos++] : NULL;
    *at = next_candidate(j);
    return *at >= 0 ? j->rows.data[*at] : NULL;
}

static void drop_matches(struct join_op *j)
{
    for (size_t i = 0; i < j->rows.len; i++)
        row_release(j->rows.data[i]);
    vec_clear(&j->rows);
}

/* The current probe row's candidates, looked up (j->rows, referenced). */
static int look_up(struct join_op *j)
{
    drop_matches(j);
    if (j->pkeys_null)
        return LDB_OK;
    const struct plan *p = j->base.p;
    value key[SCHEMA_MAX_KEY];
    for (uint32_t i = 0; i < j->nkeys; i++)
        key[p->u.join.lookup_part[i]] = j->pkeys[i];
    const struct table_index *ix = p->u.join.lookup_index;
    if (!ix) {
        row *r = table_lookup(j->lookup, key);
        if (r && vec_push(&j->rows, r))
            return exec_nomem(j->base.x);
        if (r)
            row_retain(r);
        return LDB_OK;
    }
    struct index_lookup it;
    for (row *r = index_lookup_first(ix, key, j->nkeys, &it); r; r = index_lookup_next(&it)) {
        if (vec_push(&j->rows, r))
            return exec_nomem(j->base.x);
        row_retain(r);
    }
    return LDB_OK;
}

static void release_probe_row(struct join_op *j)
{
    row_release(j->cur);
    j->cur = NULL;
}

static int start_probe_row(struct join_op *j)
{
    for (uint32_t i = 0; i < j->nkeys; i++)
        value_release(&j->pkeys[i]);
    int rc = j->nkeys ? eval_keys(j, j->cur, false, j->pkeys, &j->pkeys_null, &j->phash)
                      : LDB_OK;
    return rc || !j->lookup ? rc : look_up(j);
}

static int candidates(struct join_op *j, row **out)
{
    int64_t at;
    for (const row *b; (b = next_pair(j, &at));) {
        /* a pair the residual rejects is work too (a cross join's) */
        int rc = op_tick(&j->base);
        if (rc)
            return rc;
        rc = emit(j, b, j->cur, out);
        if (rc != LDB_ROW)
            return rc;
        const struct expr *res = j->base.p->u.join.residual;
        int t = 1;
        if (res && (rc = op_truth(&j->base, res, *out, &t)))
            return rc;
        if (t != 1)
            continue;
        j->cur_matched = true;
        if (j->matched && at >= 0)
            j->matched[at] = true;
        return LDB_ROW;
    }
    j->phase = J_PROBE;
    if (j->probe_outer && !j->cur_matched)
        return emit(j, NULL, j->cur, out);
    return LDB_DONE; /* this probe row is finished */
}

static int join_next(struct op *o, row **out)
{
    struct join_op *j = (struct join_op *)o;
    int rc;
    settle_pair(j);
    if (!j->built && (rc = build(j)))
        return rc;
    for (;;) {
        switch (j->phase) {
        case J_PROBE:
            /* released before the pull, so the probe side may reuse its row */
            release_probe_row(j);
            if ((rc = op_next(j->probe, &j->cur)) == LDB_DONE) {
                j->cur = NULL;
                j->phase = j->build_outer ? J_UNMATCHED : J_DONE;
                continue;
            }
            if (rc != LDB_ROW) {
                j->cur = NULL;
                return rc;
            }
            row_retain(j->cur);
            if ((rc = start_probe_row(j)))
                return rc;
            j->cur_matched = false;
            j->pos = j->nkeys && !j->lookup ? UINT32_MAX : 0;
            j->phase = J_CANDIDATES;
            continue;
        case J_CANDIDATES:
            if ((rc = candidates(j, out)) != LDB_DONE)
                return rc;
            continue;
        case J_UNMATCHED:
            while (j->unmatched_i < j->rows.len) {
                size_t i = j->unmatched_i++;
                if (!j->matched[i])
                    return emit(j, j->rows.data[i], NULL, out);
            }
            j->phase = J_DONE;
            continue;
        case J_DONE:
            return LDB_DONE;
        }
    }
}

static int join_open(struct op *o)
{
    struct join_op *j = (struct join_op *)o;
    /* the children exist only after the constructor ran */
    j->build = j->build_left ? o->left : o->right;
    j->probe = j->build_left ? o->right : o->left;
    j->built = false;
    j->phase = J_PROBE;
    j->unmatched_i = 0;
    if (j->nkeys && !(j->pkeys = mem_calloc(j->nkeys, sizeof *j->pkeys)))
        return exec_nomem(o->x);
    return LDB_OK;
}

static void join_close(struct op *o)
{
    struct join_op *j = (struct join_op *)o;
    settle_pair(j); /* while the rows it borrows from are held */
    for (size_t i = 0; i < j->rows.len; i++) {
        row_release(j->rows.data[i]);
        for (uint32_t k = 0; j->keys && k < j->nkeys; k++)
            value_release(&j->keys[i * j->nkeys + k]);
    }
    vec_free(&j->rows);
    mem_free(j->keys);
    j->keys = NULL;
    j->keys_cap = 0;
    j->bytes = 0;
    mem_free(j->matched);
    j->matched = NULL;
    hmap_free(&j->index);
    for (uint32_t k = 0; j->pkeys && k < j->nkeys; k++)
        value_release(&j->pkeys[k]);
    mem_free(j->pkeys);
    j->pkeys = NULL;
    release_probe_row(j);
}

static bool preserves(enum join_kind k, bool left)
{
    return k == JOIN_FULL || k == (left ? JOIN_LEFT : JOIN_RIGHT);
}

struct op *op_join(struct exec *x, const struct plan *p, const value *outer, uint32_t nouter)
{
    struct join_op *j = (struct join_op *)op_alloc(x, p, sizeof *j, outer, nouter);
    if (!j)
        return NULL;
    enum join_kind k = p->u.join.kind;
    j->nkeys = p->u.join.nkeys;
    /* without keys the right side is the inner loop */
    j->build_left = j->nkeys && p->u.join.build_left;
    j->lookup = p->u.join.lookup;
    j->probe_outer = preserves(k, !j->build_left);
    j->build_outer = preserves(k, j->build_left);
    j->base.open = join_open;
    j->base.next = join_next;
    j->base.close = join_close;
    return &j->base;
}
