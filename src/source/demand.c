/*
 * demand.c - from the live layer's demand to requests, and back to
 * readiness (source_internal.h has the three levels: plan, param, owner).
 *
 * The live layer's hooks only change state here (owners made or retired,
 * params left without owners); every provider call waits for the
 * dispatch point (demand_dispatch), so a hook never runs provider code
 * and a provider callback never sees a half-made change. Ownership rules
 * (seed 000, "Demand grouping and ownership"):
 * - an acquisition is installed (params point at it) before load_subset is
 *   called; a load_subset that fails rolls it back without an unload, and
 *   its params fail (ERROR) until ldb_live_retry;
 * - release_tried is set before abort/unload run, so every acquisition
 *   whose load_subset succeeded gets exactly one release attempt;
 * - a settlement of an acquisition that is no longer current changes
 *   nothing (law 6), and readiness counts only current owners (law 10).
 *
 * Readiness: an owner is covered when its param's acquisition settled OK.
 * A query's status is ERROR if an owner of it (or, for a root, of any of
 * its handles) failed, else LOADING if one is not covered, else READY.
 * Statuses are recomputed for the queries marked dirty and published at
 * the end of a dispatch point, after the batches.
 */
#include "source/source_internal.h"

#include "base/hash.h"
#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/expr.h"
#include "storage/table.h"

#include <stdio.h>

#include <string.h>

static ldb_source *source_of(struct src_registry *r, const struct table *t)
{
    for (size_t i = 0; i < r->sources.len; i++)
        if (r->sources.data[i]->table == t)
            return r->sources.data[i];
    return NULL;
}

static void unhold_all(ldb_source *s);

static void mark_dirty(struct src_registry *r, struct src_query *qs)
{
    if (qs->dirty)
        return;
    qs->dirty = true;
    qs->prev_dirty = NULL;
    qs->next_dirty = r->dirty;
    if (r->dirty)
        r->dirty->prev_dirty = qs;
    r->dirty = qs;
}

void demand_query_dirty(struct src_registry *r, struct src_query *qs) { mark_dirty(r, qs); }

static void param_owners_dirty(struct src_registry *r, struct src_param *p)
{
    for (struct src_owner *o = p->owners; o; o = o->next_in_param)
        mark_dirty(r, o->qs);
}

/* ---- plans and params ------------------------------------------------------------------ */

static bool plan_eq(const void *key, uint64_t val)
{
    return strcmp(key, ((struct src_plan *)(uintptr_t)val)->ident) == 0;
}

void demand_free_plan(struct src_plan *pl)
{
    pred_free(pl->fixed);
    mem_free(pl->ident);
    hmap_free(&pl->params);
    vec_free(&pl->fresh);
    mem_free(pl);
}

/* The plan of point d of q in source s, found or made. */
static int plan_for(ldb_source *s, ldb_live *q, const struct live_demand *d, struct src_plan **out)
{
    if (s->all) { /* EAGER: one request serves every point */
        *out = s->all;
        return LDB_OK;
    }
    uint32_t np;
    const value *params = live_params(q, &np);
    struct ldb_pred *fixed;
    int rc = pred_from_demand(d, params, np, &fixed);
    if (rc)
        return rc;
    strbuf sb;
    sb_init(&sb);
    int32_t key = d->key_col;
    rc = pred_ident(fixed, key, &sb);
    if (d->order_col >= 0) /* its window's own: one per query */
        sb_printf(&sb, "|o%d%c|q%p", (int)d->order_col, d->order_desc ? 'd' : 'a', (void *)q);
    uint64_t h = rc ? 0 : hash_bytes(sb_str(&sb), strlen(sb_str(&sb)), 0);
    uint64_t *slot = rc ? NULL : hmap_get(&s->plans, h, plan_eq, sb_str(&sb));
    if (slot) {
        pred_free(fixed);
        sb_free(&sb);
        *out = (struct src_plan *)(uintptr_t)*slot;
        return LDB_OK;
    }
    struct src_plan *pl = rc ? NULL : mem_calloc(1, sizeof *pl);
    bool found;
    if (!pl || !(pl->ident = sb_take(&sb, NULL)) ||
        hmap_put(&s->plans, h, plan_eq, pl->ident, &slot, &found)) {
        if (pl)
            mem_free(pl->ident);
        mem_free(pl);
        sb_free(&sb);
        pred_free(fixed);
        return LDB_NOMEM;
    }
    sb_free(&sb);
    *slot = (uintptr_t)pl;
    pl->src = s;
    pl->hash = h;
    pl->fixed = fixed;
    pl->key_col = key;
    pl->key_coll = d->key_coll;
    pl->order_col = d->order_col;
    pl->order_desc = d->order_desc;
    pl->q = d->order_col >= 0 ? q : NULL;
    hmap_init(&pl->params);
    *out = pl;
    return LDB_OK;
}

/* Retention ends: the rows it held, and their map, go. */
static void persist_end(ldb_source *s)
{
    s->persisted = NULL;
    for (size_t i = 0; i < s->persist.len; i++)
        row_release(s->persist.data[i].row);
    vec_free(&s->persist);
    hmap_free(&s->persist_keys);
}

/* Frees pl when nothing refers to it any more (law 13). */
static void plan_maybe_free(struct src_plan *pl)
{
    ldb_source *s = pl->src;
    if (pl->nparams || pl == s->all || pl->queued)
        return;
    uint64_t *slot = hmap_get(&s->plans, pl->hash, plan_eq, pl->ident);
    if (slot)
        hmap_del(&s->plans, slot);
    if (pl == s->persisted)
        persist_end(s);
    demand_free_plan(pl);
}

struct key_probe {
    const value *key;
    enum ldb_collation coll;
};

/* Keys are told apart by identity: a provider gets exactly the value. */
static bool param_eq(const void *key, uint64_t val)
{
    const value *k = key;
    return value_identical(k, &((struct src_param *)(uintptr_t)val)->key);
}

static uint64_t key_hash(const value *k) { return k ? value_hash(k, LDB_COLL_BINARY) : 0; }

struct src_param *demand_param_of(const struct src_plan *pl, const value *key)
{
    uint64_t *slot = hmap_get(&pl->params, key_hash(key), param_eq, key);
    return slot ? (struct src_param *)(uintptr_t)*slot : NULL;
}

static int plan_fresh(struct src_registry *r, struct src_plan *pl, struct src_param *p)
{
    if (p->fresh)
        return LDB_OK;
    if (vec_push(&pl->fresh, p))
        return LDB_NOMEM;
    if (!pl->queued) {
        if (vec_push(&pl->src->fresh_plans, pl)) {
            pl->fresh.len--;
            return LDB_NOMEM;
        }
        pl->queued = true;
    }
    p->fresh = true;
    r->work = true;
    return LDB_OK;
}

static int param_for(struct src_registry *r, struct src_plan *pl, const value *key,
                     struct src_param **out)
{
    value nul = value_null();
    const value *k = key ? key : &nul;
    uint64_t h = key_hash(k);
    uint64_t *slot = hmap_get(&pl->params, h, param_eq, k);
    if (slot) {
        *out = (struct src_param *)(uintptr_t)*slot;
        return LDB_OK;
    }
    struct src_param *p = mem_calloc(1, sizeof *p);
    bool found;
    if (!p || pred_value_copy(k, &p->key)) {
        mem_free(p);
        return LDB_NOMEM;
    }
    p->plan = pl;
    if (pl->order_col >= 0 && ordered_init(p)) {
        value_release(&p->key);
        mem_free(p);
        return LDB_NOMEM;
    }
    if (hmap_put(&pl->params, h, param_eq, &p->key, &slot, &found) ||
        plan_fresh(r, pl, p)) {
        if (slot && !found)
            hmap_del(&pl->params, slot);
        ordered_free(p);
        value_release(&p->key);
        mem_free(p);
        return LDB_NOMEM;
    }
    *slot = (uintptr_t)p;
    pl->nparams++;
    *out = p;
    return LDB_OK;
}

/* The acquisition lost param slot i; with none left it is released. */
static void acq_leave(struct src_registry *r, ldb_request *req, uint32_t i)
{
    req->params_here.data[i] = NULL;
    if (--req->nlive > 0 || !req->current)
        return;
    req->current = false;
    /* room was reserved when req was made: releases never outnumber the
     * live requests */
    req->src->releases.data[req->src->releases.len++] = req;
    r->work = true;
}

/* An ordered param's settled steps leave (each its one slot). */
static void release_kept(struct src_registry *r, struct src_param *p)
{
    if (!p->ord)
        return;
    while (p->ord->kept.len)
        acq_leave(r, vec_pop(&p->ord->kept), 0);
}

static void vec_remove_ptr(void **data, size_t *len, const void *p)
{
    for (size_t i = 0; i < *len; i++) {
        if (data[i] == p) {
            data[i] = data[--*len];
            return;
        }
    }
}

/* p has no owner left: it goes, and leaves its acquisition. */
static void param_retire(struct src_registry *r, struct src_param *p)
{
    struct src_plan *pl = p->plan;
    uint64_t *slot = hmap_get(&pl->params, key_hash(&p->key), param_eq, &p->key);
    if (slot)
        hmap_del(&pl->params, slot);
    if (p->fresh)
        vec_remove_ptr((void **)pl->fresh.data, &pl->fresh.len, p);
    if (p->acq)
        acq_leave(r, p->acq, p->acq_slot);
    if (pl->src->replay.active)
        r->work = true; /* the replay may wait for nothing else now */
    if (pl->src->retain) { /* its rows may have no owner left (law 11) */
        pl->src->sweep = true;
        r->work = true;
    }
    release_kept(r, p);
    ordered_free(p); /* its query is going: no unhold */
    value_release(&p->key);
    mem_free(p->errmsg);
    mem_free(p);
    pl->nparams--;
    plan_maybe_free(pl);
}

/* ---- owners and queries ---------------------------------------------------------------- */

static void owner_retire(struct src_registry *r, struct src_owner *o)
{
    struct src_param *p = o->param;
    if (o->prev_in_param)
        o->prev_in_param->next_in_param = o->next_in_param;
    else
        p->owners = o->next_in_param;
    if (o->next_in_param)
        o->next_in_param->prev_in_param = o->prev_in_param;
    mem_free(o);
    if (--p->nowners == 0)
        param_retire(r, p);
}

static int owner_add(struct src_query *qs, struct src_param *p)
{
    struct src_owner *o = mem_calloc(1, sizeof *o);
    if (!o)
        return LDB_NOMEM;
    o->qs = qs;
    o->param = p;
    o->next_in_q = qs->owners;
    qs->owners = o;
    o->next_in_param = p->owners;
    if (p->owners)
        p->owners->prev_in_param = o;
    p->owners = o;
    p->nowners++;
    return LDB_OK;
}

static void query_unlink_dirty(struct src_registry *r, struct src_query *qs)
{
    if (!qs->dirty)
        return;
    if (qs->prev_dirty)
        qs->prev_dirty->next_dirty = qs->next_dirty;
    else
        r->dirty = qs->next_dirty;
    if (qs->next_dirty)
        qs->next_dirty->prev_dirty = qs->prev_dirty;
    qs->dirty = false;
}

static void query_free(struct src_registry *r, struct src_query *qs)
{
    while (qs->owners) {
        struct src_owner *o = qs->owners;
        qs->owners = o->next_in_q;
        owner_retire(r, o);
    }
    for (struct src_query *k = qs->kids; k; k = k->next_kid)
        k->root = NULL; /* their root went first: they answer for themselves */
    if (qs->root && qs->root != qs) {
        struct src_query *root = qs->root;
        if (qs->prev_kid)
            qs->prev_kid->next_kid = qs->next_kid;
        else
            root->kids = qs->next_kid;
        if (qs->next_kid)
            qs->next_kid->prev_kid = qs->prev_kid;
        mark_dirty(r, root);
    }
    query_unlink_dirty(r, qs);
    live_set_demand_state(qs->q, NULL);
    mem_free(qs);
}

/* q's state, made on first use (a root's may come from its first handle). */
static struct src_query *query_state(ldb_live *q)
{
    struct src_query *qs = live_demand_state(q);
    if (qs)
        return qs;
    if (!(qs = mem_calloc(1, sizeof *qs)))
        return NULL;
    qs->q = q;
    qs->root = qs;
    live_set_demand_state(q, qs);
    return qs;
}

static int query_owners(struct src_registry *r, struct src_query *qs, ldb_live *q)
{
    uint32_t n;
    const struct live_demand *d = live_demands(q, &n);
    for (uint32_t i = 0; i < n; i++) {
        ldb_source *s = source_of(r, d[i].table);
        if (!s)
            continue; /* its source was detached while the query stays open */
        struct src_plan *pl;
        struct src_param *p;
        int rc = plan_for(s, q, &d[i], &pl);
        if (!rc) {
            const value *key = pl->key_col >= 0 ? live_demand_key(q, &d[i]) : NULL;
            value conv = value_null();
            if (key && (rc = pred_value_copy(key, &conv)) == LDB_OK)
                rc = sql_apply_affinity(&conv, (enum col_type)d[i].key_aff);
            if (!rc)
                rc = param_for(r, pl, key ? &conv : NULL, &p);
            value_release(&conv);
            if (!rc && (rc = owner_add(qs, p)) && p->nowners == 0)
                param_retire(r, p);
            if (rc)
                plan_maybe_free(pl);
        }
        if (rc)
            return rc;
    }
    return LDB_OK;
}

static int on_opened(void *ctx, ldb_live *q)
{
    struct src_registry *r = ctx;
    ldb_live *root = live_root(q);
    struct src_query *rs = query_state(root);
    struct src_query *qs = rs && q != root ? query_state(q) : rs;
    if (!qs) {
        if (rs && !rs->owners && !rs->kids)
            query_free(r, rs);
        return LDB_NOMEM;
    }
    if (q != root) {
        qs->root = rs;
        qs->next_kid = rs->kids;
        if (rs->kids)
            rs->kids->prev_kid = qs;
        rs->kids = qs;
    }
    int rc = query_owners(r, qs, q);
    if (rc) { /* its owners so far, and it (a root's state made here goes
                 with its query: live_demand_gone sees it) */
        query_free(r, qs);
        return rc;
    }
    mark_dirty(r, qs);
    return LDB_OK;
}

static void on_gone(void *ctx, ldb_live *q)
{
    struct src_registry *r = ctx;
    struct src_query *qs = live_demand_state(q);
    if (qs)
        query_free(r, qs);
    for (size_t i = 0; i < r->sources.len; i++) {
        ldb_source *s = r->sources.data[i];
        vec_remove_ptr((void **)s->replay.held.data, &s->replay.held.len, q);
    }
}

static void on_window_moved(void *ctx, ldb_live *q) { ordered_window_moved(ctx, q); }

void demand_hooks(struct src_registry *r, struct live_demand_hooks *h)
{
    *h = (struct live_demand_hooks){ .ctx = r, .opened = on_opened, .gone = on_gone,
                                     .window_moved = on_window_moved };
}

/* ---- requests and releases ------------------------------------------------------------- */

static void param_fail(struct src_registry *r, struct src_param *p, const char *msg)
{
    if (p->ord)
        ordered_failed(p);
    p->failed = true;
    mem_free(p->errmsg);
    p->errmsg = mem_strndup(msg, strlen(msg));
    param_owners_dirty(r, p);
}

void demand_param_failed(struct src_registry *r, struct src_param *p, const char *msg)
{
    param_fail(r, p, msg);
}

int demand_param_fresh(struct src_registry *r, struct src_param *p)
{
    return plan_fresh(r, p->plan, p);
}

/* One grouped request for every fresh param of pl. */
static void plan_request(struct src_registry *r, struct src_plan *pl)
{
    ldb_source *s = pl->src;
    size_t n = pl->fresh.len;
    ldb_request *req = NULL;
    if (vec_reserve(&s->releases, s->st.requests_live + 1 - s->releases.len) ||
        request_new(pl, pl->fresh.data, n, &req)) {
        if (pl == s->persisted) { /* no owner to retry it: the next dispatch does */
            s->persist_retry = true;
            r->work = true;
            return;
        }
        for (size_t i = 0; i < n; i++)
            param_fail(r, pl->fresh.data[i], "out of memory");
        for (size_t i = 0; i < n; i++)
            pl->fresh.data[i]->fresh = false;
        pl->fresh.len = 0;
        return;
    }
    req->id = ++r->next_id;
    req->current = true;
    req->state = ACQ_TENTATIVE;
    req->persisted = pl == s->persisted;
    for (size_t i = 0; i < n; i++) { /* reserved by request_new */
        struct src_param *p = pl->fresh.data[i];
        if (p->ord) /* its window publishes once, when all of it is loaded */
            ordered_hold(p);
        p->fresh = false;
        p->acq = req;
        p->acq_slot = (uint32_t)i;
        req->params_here.data[req->params_here.len++] = p;
        param_owners_dirty(r, p);
    }
    req->nlive = (uint32_t)n;
    pl->fresh.len = 0;
    s->st.requests++;
    s->st.requests_live++;
    req->in_load = true;
    provider_enter(r);
    int rc = s->p.load_subset(s->ctx, req);
    provider_leave(r);
    req->in_load = false;
    if (rc == LDB_OK) {
        if (req->state == ACQ_TENTATIVE)
            req->state = ACQ_ACTIVE;
        if (s->replay.active) { /* the replay's publication waits for it */
            req->participant = true;
            s->replay.pending++;
        }
        return;
    }
    /* no acquisition: roll the owners' params back, no unload */
    char msg[96];
    snprintf(msg, sizeof msg, "load_subset of table %s failed: %s", s->name, ldb_errstr(rc));
    req->release_tried = true;
    req->current = false;
    for (size_t i = 0; i < req->params_here.len; i++) {
        struct src_param *p = req->params_here.data[i];
        if (!p)
            continue;
        p->acq = NULL;
        param_fail(r, p, msg);
    }
    s->st.requests_live--;
    ldb_request_unref(req);
}

/* A replay stops waiting for req: it settled, or was released. */
static void participant_done(ldb_request *req)
{
    if (req->participant) {
        req->participant = false;
        req->src->replay.pending--;
    }
}

/* The one release attempt of an acquisition: abort if unsettled, unload. */
static void acq_release(struct src_registry *r, ldb_request *req)
{
    ldb_source *s = req->src;
    if (req->release_tried)
        return;
    participant_done(req);
    req->release_tried = true;
    req->current = false;
    bool unsettled = req->state == ACQ_TENTATIVE || req->state == ACQ_ACTIVE;
    provider_enter(r);
    if (unsettled) {
        atomic_store_explicit(&req->aborted, 1, memory_order_release);
        if (s->p.abort)
            s->p.abort(s->ctx, req);
    }
    if (s->p.unload_subset)
        s->p.unload_subset(s->ctx, req);
    provider_leave(r);
    s->st.requests_live--;
    ldb_request_unref(req);
}

static bool source_dispatch(struct src_registry *r, ldb_source *s)
{
    bool did = false;
    struct src_plan *kept = s->persisted;
    if (s->persist_retry && kept && kept->fresh.len && !kept->queued &&
        !vec_push(&s->fresh_plans, kept)) {
        kept->queued = true;
        s->persist_retry = false;
    }
    /* old leases go before new ones are made (a replay replaces them in
     * that order; the provider may reuse what they held) */
    while (s->releases.len) {
        acq_release(r, vec_pop(&s->releases));
        did = true;
    }
    while (s->fresh_plans.len) {
        struct src_plan *pl = vec_pop(&s->fresh_plans);
        pl->queued = false;
        if (pl->fresh.len) {
            plan_request(r, pl);
            did = true;
        }
        plan_maybe_free(pl);
    }
    return did;
}

bool demand_dispatch(struct src_registry *r)
{
    if (!r->work)
        return false;
    r->work = false;
    bool did = false;
    for (size_t i = 0; i < r->sources.len; i++)
        if (!r->sources.data[i]->stopped) /* its demand waits for a new session */
            did |= source_dispatch(r, r->sources.data[i]);
    return did;
}

/* ---- settlements ----------------------------------------------------------------------- */

/*
 * A revalidation settled: each persisted row it did not bring back is
 * gone at the source (deleted at the next pump), and persisted retention
 * of its keys ends. A row the list has no room for stays (retention
 * ends all the same): a stale row, never a lost one.
 */
static void revalidation_settled(struct src_registry *r, ldb_request *req)
{
    ldb_source *s = req->src;
    for (size_t i = 0; i < req->params_here.len; i++) {
        struct src_param *p = req->params_here.data[i];
        if (!p)
            continue;
        for (uint32_t at = p->persist_first; at; at = s->persist.data[at - 1].next) {
            struct persist_row *pr = &s->persist.data[at - 1];
            if (!pr->revalidated && !vec_push(&s->persist_gone, pr->row))
                row_retain(pr->row);
        }
        p->nowners = 0;
        param_retire(r, p);
    }
    r->work = true;
}

void demand_settle(struct src_registry *r, ldb_request *req, int rc, const char *msg)
{
    ldb_source *s = req->src;
    s->st.settles++;
    participant_done(req);
    if (!req->current || req->state == ACQ_OK || req->state == ACQ_FAILED)
        return; /* obsolete (law 6): released, or failed to start */
    if (rc == LDB_OK && req->persisted) {
        req->state = ACQ_OK;
        revalidation_settled(r, req);
        return;
    }
    if (rc == LDB_OK) {
        req->state = ACQ_OK;
        for (size_t i = 0; i < req->params_here.len; i++) {
            struct src_param *p = req->params_here.data[i];
            if (!p)
                continue;
            param_owners_dirty(r, p);
            if (p->ord) { /* one step of its chain: the next one, or done */
                bool full = p->ord->step == ORD_FULL;
                p->acq = NULL;
                if (full) /* it replaces every step before it */
                    release_kept(r, p);
                if (vec_push(&p->ord->kept, req))
                    acq_leave(r, req, (uint32_t)i); /* NOMEM: loaded, not fed */
                ordered_settled(r, p);
            }
        }
        return;
    }
    req->state = ACQ_FAILED;
    char buf[160];
    if (!msg) {
        snprintf(buf, sizeof buf, "loading table %s failed: %s", s->name, ldb_errstr(rc));
        msg = buf;
    }
    for (size_t i = 0; i < req->params_here.len; i++) {
        struct src_param *p = req->params_here.data[i];
        if (!p)
            continue;
        p->acq = NULL;
        param_fail(r, p, msg);
        acq_leave(r, req, (uint32_t)i); /* the last one releases it: one unload */
    }
}

/* ---- readiness ------------------------------------------------------------------------------ */

static void query_count(struct src_query *qs)
{
    qs->uncovered = qs->failed = 0;
    qs->errmsg = NULL;
    for (struct src_owner *o = qs->owners; o; o = o->next_in_q) {
        struct src_param *p = o->param;
        if (p->failed) {
            if (!qs->failed++)
                qs->errmsg = p->errmsg;
        } else if (p->ord ? !ordered_covered(p) : !p->acq || p->acq->state != ACQ_OK) {
            qs->uncovered++;
        }
    }
}

static int status_of(uint32_t uncovered, uint32_t failed)
{
    return failed ? LDB_STATUS_ERROR : uncovered ? LDB_STATUS_LOADING : LDB_STATUS_READY;
}

void demand_publish_statuses(struct src_registry *r)
{
    /* a handle's change changes its root's status too */
    for (struct src_query *qs = r->dirty; qs; qs = qs->next_dirty)
        if (qs->root && qs->root != qs)
            mark_dirty(r, qs->root); /* at the head: not walked again here */
    for (struct src_query *qs = r->dirty; qs; qs = qs->next_dirty)
        query_count(qs);
    struct src_query *list = r->dirty;
    for (struct src_query *qs = list; qs; qs = qs->next_dirty) {
        uint32_t unc = qs->uncovered, fail = qs->failed;
        const char *msg = qs->errmsg;
        if (qs->root == qs) {
            for (struct src_query *k = qs->kids; k; k = k->next_kid) {
                if (!msg && k->failed)
                    msg = k->errmsg;
                unc += k->uncovered;
                fail += k->failed;
            }
        }
        const char *failed_msg;
        if (live_error(qs->q, &failed_msg) != LDB_OK) /* a failed query stays so */
            live_set_status(qs->q, LDB_STATUS_ERROR, failed_msg);
        else
            live_set_status(qs->q, status_of(unc, fail), fail ? msg : NULL);
    }
    /* callbacks last, every status set; they cannot change demand (a close
     * waits for live_free_closed), so the list stays as it is */
    r->dirty = NULL;
    for (struct src_query *qs = list, *next; qs; qs = next) {
        next = qs->next_dirty;
        qs->dirty = false;
        qs->prev_dirty = qs->next_dirty = NULL;
        live_notify_status(qs->q);
    }
}

/* ---- retry, eager, detach ------------------------------------------------------------------- */

static void query_retry(struct src_registry *r, struct src_query *qs)
{
    for (struct src_owner *o = qs->owners; o; o = o->next_in_q) {
        struct src_param *p = o->param;
        if (!p->failed)
            continue;
        if (plan_fresh(r, p->plan, p))
            return; /* NOMEM: stays failed; a later retry asks again */
        p->failed = false;
        param_owners_dirty(r, p);
    }
}

void src_retry(struct src_registry *r, ldb_live *q)
{
    struct src_query *qs = live_demand_state(q);
    if (!qs)
        return;
    query_retry(r, qs);
    for (struct src_query *k = qs->root == qs ? qs->kids : NULL; k; k = k->next_kid)
        query_retry(r, k);
}

int demand_eager(ldb_source *s)
{
    struct src_plan *pl = mem_calloc(1, sizeof *pl);
    if (!pl)
        return LDB_NOMEM;
    pl->src = s;
    pl->key_col = -1;
    pl->order_col = -1;
    hmap_init(&pl->params);
    s->all = pl;
    struct src_param *p;
    int rc = param_for(s->reg, pl, NULL, &p);
    if (rc) {
        s->all = NULL;
        demand_free_plan(pl);
        return rc;
    }
    p->nowners = 1; /* the source itself owns the eager load */
    return LDB_OK;
}

/* ---- persisted retention (law 11) ------------------------------------------------------ */

/* Not an identity pred_ident makes: no query's plan can be this one. */
#define PERSISTED_IDENT "\x01persisted"

static void plan_drop_params(struct src_registry *r, struct src_plan *pl);

/* Lists row w under the param of its first key column's value. Room in
 * persist and persist_keys is reserved. */
static int persist_row_add(ldb_source *s, struct src_plan *pl, row *w)
{
    struct src_param *p;
    int rc = param_for(s->reg, pl, &w->cols[pl->key_col], &p);
    if (rc)
        return rc;
    p->nowners = 1; /* the retention owns it, as the source owns an eager load */
    if ((rc = plan_fresh(s->reg, pl, p)))
        return rc;
    uint32_t i = (uint32_t)s->persist.len++;
    s->persist.data[i] = (struct persist_row){ row_retain(w), p->persist_first, false };
    p->persist_first = i + 1;
    uint64_t *slot;
    bool found;
    hmap_put(&s->persist_keys, table_key_hash(s->table, w), NULL, NULL, &slot, &found);
    *slot = i;
    return LDB_OK;
}

int demand_persisted(ldb_source *s)
{
    const struct schema *sc = table_schema(s->table);
    size_t n = table_count(s->table);
    if (!s->retain || n == 0)
        return LDB_OK;
    if (n > UINT32_MAX - 1)
        return LDB_NOMEM;
    struct src_plan *pl = mem_calloc(1, sizeof *pl);
    uint64_t *slot;
    bool found;
    if (!pl || !(pl->ident = mem_strndup(PERSISTED_IDENT, strlen(PERSISTED_IDENT)))) {
        mem_free(pl);
        return LDB_NOMEM;
    }
    pl->src = s;
    pl->hash = hash_bytes(pl->ident, strlen(pl->ident), 0);
    pl->key_col = (int32_t)sc->pk[0]; /* a superset of a composite key's rows */
    pl->key_coll = (uint8_t)sc->cols[sc->pk[0]].coll;
    pl->order_col = -1;
    hmap_init(&pl->params);
    int rc = hmap_put(&s->plans, pl->hash, plan_eq, pl->ident, &slot, &found);
    if (rc) {
        demand_free_plan(pl);
        return rc;
    }
    *slot = (uintptr_t)pl;
    s->persisted = pl;
    hmap_init(&s->persist_keys);
    if (vec_reserve(&s->persist, n) || hmap_reserve(&s->persist_keys, (uint32_t)n))
        rc = LDB_NOMEM;
    struct table_scan sc_rows = table_scan_begin(s->table);
    for (row *w; rc == LDB_OK && (w = table_scan_next(&sc_rows));)
        rc = persist_row_add(s, pl, w);
    if (rc) {
        plan_drop_params(s->reg, pl);
        vec_clear(&pl->fresh);
        if (pl->queued)
            s->fresh_plans.len--; /* it was pushed last, by this call */
        hmap_del(&s->plans, hmap_get(&s->plans, pl->hash, plan_eq, pl->ident));
        demand_free_plan(pl);
        persist_end(s);
    }
    return rc;
}

struct persist_probe {
    const ldb_source *s;
    const value *key;
};

static bool persist_eq(const void *probe, uint64_t val)
{
    const struct persist_probe *pp = probe;
    return table_key_matches(pp->s->table, pp->key, pp->s->persist.data[val].row);
}

void demand_revalidated(ldb_source *s, const value *key)
{
    if (!s->persisted)
        return;
    struct persist_probe pp = { s, key };
    uint64_t *slot = hmap_get(&s->persist_keys, table_key_hash_of(s->table, key), persist_eq, &pp);
    if (slot)
        s->persist.data[*slot].revalidated = true;
}

struct roots_ctx {
    VEC(ldb_live *) roots;
    int rc;
};

static void collect_roots(struct src_param *p, void *ctx)
{
    struct roots_ctx *c = ctx;
    for (struct src_owner *o = p->owners; o && !c->rc; o = o->next_in_param) {
        ldb_live *q = (o->qs->root ? o->qs->root : o->qs)->q;
        bool have = false;
        for (size_t i = 0; i < c->roots.len && !have; i++)
            have = c->roots.data[i] == q;
        if (!have)
            c->rc = vec_push(&c->roots, q);
    }
}

static void each_param(ldb_source *s, void (*fn)(struct src_param *p, void *ctx), void *ctx);

int demand_stop(ldb_source *s)
{
    struct roots_ctx c = { VEC_INIT, LDB_OK };
    each_param(s, collect_roots, &c);
    if (c.rc) {
        vec_free(&c.roots);
        return c.rc;
    }
    demand_detach(s);
    char msg[160];
    snprintf(msg, sizeof msg, "source of table %s stopped", s->name);
    for (size_t i = 0; i < c.roots.len; i++)
        live_terminate(c.roots.data[i], msg);
    vec_free(&c.roots);
    return LDB_OK;
}

/* Frees pl's params with their owners (their queries' status is then
 * recomputed), leaving their acquisitions. Allocates nothing. */
static void plan_drop_params(struct src_registry *r, struct src_plan *pl)
{
    uint32_t pos = 0;
    uint64_t *slot, hash;
    while ((slot = hmap_next(&pl->params, &pos, &hash))) {
        struct src_param *p = (struct src_param *)(uintptr_t)*slot;
        while (p->owners) {
            struct src_owner *o = p->owners;
            mark_dirty(r, o->qs);
            struct src_owner **pp = &o->qs->owners; /* out of its query's list */
            while (*pp != o)
                pp = &(*pp)->next_in_q;
            *pp = o->next_in_q;
            p->owners = o->next_in_param;
            mem_free(o);
        }
        if (p->acq)
            acq_leave(r, p->acq, p->acq_slot);
        release_kept(r, p);
        ordered_free(p);
        value_release(&p->key);
        mem_free(p->errmsg);
        mem_free(p);
    }
    hmap_clear(&pl->params);
    pl->nparams = 0;
}

void demand_detach(ldb_source *s)
{
    struct src_registry *r = s->reg;
    /* windows first, one at a time: their publication's callbacks may
     * close queries, which changes the plans */
    for (struct src_param *p; (p = ordered_holding(s));) {
        p->ord->holding = false;
        live_unhold(p->plan->q);
    }
    /* every owner of s's params goes; their queries turn READY */
    uint32_t pos = 0;
    uint64_t *slot, hash;
    while ((slot = hmap_next(&s->plans, &pos, &hash))) {
        struct src_plan *pl = (struct src_plan *)(uintptr_t)*slot;
        plan_drop_params(r, pl);
        vec_clear(&pl->fresh);
        pl->queued = false;
        demand_free_plan(pl);
    }
    hmap_clear(&s->plans);
    persist_end(s); /* its plan went with the others: retention ends */
    if (s->all) {
        plan_drop_params(r, s->all);
        demand_free_plan(s->all);
        s->all = NULL;
    }
    s->fresh_plans.len = 0;
    while (s->releases.len)
        acq_release(r, vec_pop(&s->releases));
    s->replay.active = false; /* the table turns local with what it holds */
    unhold_all(s);
    vec_free(&s->replay.held);
}

/* ---- truncate and replay (law 9) ------------------------------------------------------------ */

/* Calls fn on every param of s (its plans', and the eager one). */
static void each_param(ldb_source *s, void (*fn)(struct src_param *p, void *ctx), void *ctx)
{
    uint32_t pos = 0;
    uint64_t *slot, hash;
    while ((slot = hmap_next(&s->plans, &pos, &hash))) {
        struct src_plan *pl = (struct src_plan *)(uintptr_t)*slot;
        uint32_t ppos = 0;
        uint64_t *ps;
        while ((ps = hmap_next(&pl->params, &ppos, &hash)))
            fn((struct src_param *)(uintptr_t)*ps, ctx);
    }
    if (s->all) {
        uint32_t ppos = 0;
        uint64_t *ps;
        while ((ps = hmap_next(&s->all->params, &ppos, &hash)))
            fn((struct src_param *)(uintptr_t)*ps, ctx);
    }
}

struct hold_ctx {
    ldb_source *s;
    int rc;
};

static void hold_owners(struct src_param *p, void *ctx)
{
    struct hold_ctx *h = ctx;
    for (struct src_owner *o = p->owners; o && !h->rc; o = o->next_in_param) {
        struct src_query *qs = o->qs->root ? o->qs->root : o->qs;
        ldb_live *q = qs->q;
        bool have = false;
        for (size_t i = 0; i < h->s->replay.held.len && !have; i++)
            have = h->s->replay.held.data[i] == q;
        if (have)
            continue;
        if ((h->rc = vec_push(&h->s->replay.held, q)))
            return;
        live_hold(q);
    }
}

static void unhold_all(ldb_source *s)
{
    /* one at a time: a callback may close another held query (on_gone) */
    while (s->replay.held.len)
        live_unhold(vec_pop(&s->replay.held));
}

int demand_replay_hold(ldb_source *s)
{
    if (s->replay.active)
        return LDB_OK; /* an unfinished replay holds them already */
    struct hold_ctx h = { s, LDB_OK };
    each_param(s, hold_owners, &h);
    if (h.rc)
        unhold_all(s); /* nothing was consumed while held: no batch */
    return h.rc;
}

void demand_replay_cancel(ldb_source *s)
{
    if (!s->replay.active)
        unhold_all(s);
}

static void reacquire(struct src_param *p, void *ctx)
{
    struct src_registry *r = ctx;
    if (p->acq) {
        ldb_request *old = p->acq;
        p->acq = NULL;
        acq_leave(r, old, p->acq_slot); /* released: it aborts if unsettled */
    }
    p->failed = false;
    mem_free(p->errmsg);
    p->errmsg = NULL;
    release_kept(r, p);
    if (p->ord) { /* the boundary is void: from the start again */
        p->ord->has_cov = p->ord->all = p->ord->done = false;
        p->ord->step = ORD_PAGE;
        p->ord->limit = live_window_need(p->plan->q);
    }
    if (plan_fresh(r, p->plan, p))
        param_fail(r, p, "out of memory");
    param_owners_dirty(r, p);
}

void demand_replay_start(ldb_source *s)
{
    s->replay.active = true;
    each_param(s, reacquire, s->reg);
}

static void count_params(struct src_param *p, void *ctx)
{
    uint32_t *n = ctx;
    n[0]++;
    n[1] += p->failed;
}


static void replay_end(ldb_source *s)
{
    s->replay.active = false;
    unhold_all(s);
}

void demand_replay_check(struct src_registry *r)
{
    for (size_t i = 0; i < r->sources.len; i++) {
        ldb_source *s = r->sources.data[i];
        if (!s->replay.active || s->replay.pending || s->fresh_plans.len)
            continue;
        uint32_t n[2] = { 0, 0 }; /* params, failed ones */
        each_param(s, count_params, n);
        /* every param settled OK: success. A failed param keeps the holds
         * (ERROR) until a retry succeeds or its owners retire, which
         * removes it: a failure scoped to demand that is gone stops gating. */
        if (n[1] == 0)
            replay_end(s);
    }
}
