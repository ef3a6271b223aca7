/*
 * registry.c - a database's sources, the queue that brings their sync
 * transactions and settlements to the core, and the dispatch point.
 *
 * The queue is the only structure shared between threads: a FIFO under
 * its own mutex (never the database's), and an eventfd that is readable
 * while it holds items, so a program's event loop knows when to call
 * ldb_source_poll. One FIFO for the whole database keeps each source's
 * items in the order they were made, which is what law 7 needs: a
 * settlement is handled after every transaction queued before it.
 *
 * src_pump runs to a fixed point: apply what is queued (each transaction
 * is one commit that every live query publishes), make and release the
 * requests that demand changes ask for, publish statuses (whose callbacks
 * may close queries, which releases demand), and again. Provider code
 * runs only here, never inside a storage hook or a live-layer hook.
 */
#include "source/source_internal.h"

#include "base/mem.h"
#include "mv/mv.h"
#include "storage/table.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Rounds of one pump before it leaves the rest to the next dispatch
 * point: a provider that settles and re-demands forever cannot hang a
 * call (the queue's fd stays readable). */
#define PUMP_MAX_ROUNDS 10000

int src_registry_new(const struct src_env *env, struct src_registry **out)
{
    *out = NULL;
    struct src_registry *r = mem_calloc(1, sizeof *r);
    if (!r)
        return LDB_NOMEM;
    if (pthread_mutex_init(&r->qmu, NULL)) {
        mem_free(r);
        return LDB_NOMEM;
    }
    r->env = *env;
    r->fd = -1;
    atomic_init(&r->nqueued, 0);
    struct live_demand_hooks h;
    demand_hooks(r, &h);
    live_set_demand_hooks(env->live, &h);
    *out = r;
    return LDB_OK;
}

static void item_free(struct src_item *it)
{
    ldb_optimistic_free(it->opt);
    if (it->txn)
        sync_drop(it->txn, LDB_RECEIPT_ABORTED);
    ldb_request_unref(it->req);
    mem_free(it->msg);
    mem_free(it);
}

static struct src_item *queue_take(struct src_registry *r);

void src_registry_free(struct src_registry *r)
{
    if (!r)
        return;
    while (r->sources.len)
        src_detach(vec_last(&r->sources));
    vec_free(&r->sources);
    /* resolutions queued and never applied (from other threads): they
     * lapse, and a durable database keeps their transactions pending */
    for (struct src_item *it = queue_take(r), *next; it; it = next) {
        next = it->next;
        item_free(it);
    }
    opt_free(r);
    if (r->fd >= 0)
        close(r->fd);
    pthread_mutex_destroy(&r->qmu);
    mem_free(r);
}

/* ---- the queue (any thread) ------------------------------------------------------------- */

static void signal_fd(struct src_registry *r)
{
    if (r->fd >= 0 && !r->signaled) {
        uint64_t one = 1;
        ssize_t n;
        do
            n = write(r->fd, &one, sizeof one);
        while (n < 0 && errno == EINTR);
        r->signaled = n == (ssize_t)sizeof one;
    }
}

static void queue_append(struct src_registry *r, struct src_item *it)
{
    pthread_mutex_lock(&r->qmu);
    if (r->tail)
        r->tail->next = it;
    else
        r->head = it;
    r->tail = it;
    atomic_fetch_add(&r->nqueued, 1);
    if (it->src)
        atomic_fetch_add(&it->src->queued, 1);
    signal_fd(r);
    pthread_mutex_unlock(&r->qmu);
}

int queue_push(struct src_registry *r, struct src_item *it)
{
    /* read before it is queued: the core may apply and free it at once */
    pthread_t home = it->src ? it->src->home : it->opt->home;
    queue_append(r, it);
    if (pthread_equal(pthread_self(), home)) {
        /* the end of this outermost call is a dispatch point */
        r->env.lock(r->env.ctx);
        r->env.unlock(r->env.ctx);
    }
    return LDB_OK;
}

static struct src_item *queue_take(struct src_registry *r)
{
    pthread_mutex_lock(&r->qmu);
    struct src_item *list = r->head;
    r->head = r->tail = NULL;
    atomic_store(&r->nqueued, 0);
    if (r->signaled) {
        uint64_t v;
        ssize_t n;
        do
            n = read(r->fd, &v, sizeof v);
        while (n < 0 && errno == EINTR);
        r->signaled = false;
    }
    pthread_mutex_unlock(&r->qmu);
    return list;
}

int src_fd(struct src_registry *r)
{
    pthread_mutex_lock(&r->qmu);
    if (r->fd < 0) {
        r->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->head)
            signal_fd(r);
    }
    int fd = r->fd;
    pthread_mutex_unlock(&r->qmu);
    return fd;
}

int ldb_request_settle(ldb_request *req, int rc, const char *msg)
{
    if (!req)
        return LDB_MISUSE;
    if (atomic_exchange(&req->settled, 1))
        return LDB_MISUSE;
    struct src_item *it = mem_calloc(1, sizeof *it);
    char *copy = msg ? mem_strndup(msg, strlen(msg)) : NULL;
    if (!it || (msg && !copy)) {
        mem_free(it);
        mem_free(copy);
        atomic_store(&req->settled, 0);
        return LDB_NOMEM;
    }
    ldb_request_ref(req);
    it->src = req->src;
    it->req = req;
    it->rc = rc;
    it->msg = copy;
    return queue_push(req->src->reg, it);
}

/* ---- the dispatch point ------------------------------------------------------------------ */

bool src_pump_wanted(const struct src_registry *r)
{
    return atomic_load(&r->nqueued) > 0 || r->work || r->dirty != NULL;
}

bool src_in_provider(const struct src_registry *r) { return r->in_provider > 0; }
void provider_enter(struct src_registry *r) { r->in_provider++; }
void provider_leave(struct src_registry *r) { r->in_provider--; }

/* Applies the queued items in order; returns whether there were any. */
static bool drain(struct src_registry *r)
{
    struct src_item *it = queue_take(r);
    bool any = it != NULL;
    while (it) {
        struct src_item *next = it->next;
        it->next = NULL;
        if (it->src)
            atomic_fetch_sub(&it->src->queued, 1);
        if (it->txn) {
            sync_apply(r, it->txn);
            it->txn = NULL;
        } else if (it->opt) {
            int rc = opt_resolve(r, it);
            if (rc == LDB_NOMEM || rc == LDB_IOERR || rc == LDB_FULL) {
                queue_append(r, it); /* tried again at the next round, not lost */
                it = next;
                continue;
            }
        } else {
            demand_settle(r, it->req, it->rc, it->msg);
        }
        item_free(it);
        it = next;
    }
    return any;
}

void src_pump(struct src_registry *r)
{
    if (r->pumping)
        return;
    r->pumping = true;
    for (int round = 0; round < PUMP_MAX_ROUNDS && src_pump_wanted(r); round++) {
        drain(r);
        ordered_recheck(r);
        demand_dispatch(r);
        retain_sweep(r);
        retain_sweep_persisted(r);
        demand_replay_check(r); /* replacements publish before their statuses */
        demand_publish_statuses(r);
        live_free_closed(r->env.live); /* queries closed by callbacks release demand */
    }
    r->pumping = false;
}

/* ---- attach and detach -------------------------------------------------------------------- */

ldb_source *src_of_table(const struct src_registry *r, const struct table *t)
{
    for (size_t i = 0; i < r->sources.len; i++)
        if (r->sources.data[i]->table == t)
            return r->sources.data[i];
    return NULL;
}

int src_attach(struct src_registry *r, struct table *t, int mode, const ldb_provider *p,
               void *ctx, ldb_source **out, char *msg, size_t msglen)
{
    *out = NULL;
    const char *why = NULL;
    if (!p || !p->load_subset)
        why = "a provider needs load_subset";
    else if ((mode & ~LDB_SOURCE_RETAIN_OWNED) != LDB_SOURCE_EAGER &&
             (mode & ~LDB_SOURCE_RETAIN_OWNED) != LDB_SOURCE_ON_DEMAND)
        why = "the mode must be LDB_SOURCE_EAGER or LDB_SOURCE_ON_DEMAND, maybe with "
              "LDB_SOURCE_RETAIN_OWNED";
    else if (src_of_table(r, t))
        why = "the table already has a source";
    else if (t->readonly)
        why = "the table is a materialized view's";
    else if ((mode & ~LDB_SOURCE_RETAIN_OWNED) == LDB_SOURCE_ON_DEMAND &&
             mv_reads_table(r->env.mv, t))
        why = "a materialized view reads it (and cannot read an ON_DEMAND table)";
    else if (!table_declared_key(t))
        why = "the table has no declared PRIMARY KEY (sync writes address rows by it)";
    if (why) {
        snprintf(msg, msglen, "cannot attach a source to table %s: %s", table_name(t), why);
        return LDB_MISUSE;
    }
    ldb_source *s = mem_calloc(1, sizeof *s);
    if (!s || !(s->name = mem_strndup(table_name(t), strlen(table_name(t)))) ||
        vec_reserve(&r->sources, 1)) {
        if (s)
            mem_free(s->name);
        mem_free(s);
        snprintf(msg, msglen, "out of memory");
        return LDB_NOMEM;
    }
    s->reg = r;
    s->table = t;
    s->ncols = table_schema(t)->nvisible;
    s->retain = (mode & LDB_SOURCE_RETAIN_OWNED) != 0;
    s->mode = mode & ~LDB_SOURCE_RETAIN_OWNED;
    s->p = *p;
    s->ctx = ctx;
    s->home = pthread_self();
    hmap_init(&s->plans);
    atomic_init(&s->queued, 0);
    atomic_init(&s->detached, false);
    atomic_init(&s->session, 1);
    if (s->mode == LDB_SOURCE_EAGER && demand_eager(s)) {
        mem_free(s->name);
        mem_free(s);
        snprintf(msg, msglen, "out of memory");
        return LDB_NOMEM;
    }
    if (demand_persisted(s)) { /* rows the table already holds (law 11) */
        demand_detach(s);
        hmap_free(&s->plans);
        vec_free(&s->fresh_plans);
        vec_free(&s->releases);
        mem_free(s->name);
        mem_free(s);
        snprintf(msg, msglen, "out of memory");
        return LDB_NOMEM;
    }
    r->sources.data[r->sources.len++] = s;
    table_set_readonly(t, true);
    table_set_loading(t, s->mode == LDB_SOURCE_EAGER ? TABLE_EAGER : TABLE_ON_DEMAND);
    *out = s;
    return LDB_OK;
}

/* Takes s's items out of the queue, and transactions that also write
 * s's table (they are dropped: ABORTED). */
static void queue_forget(struct src_registry *r, ldb_source *s)
{
    struct src_item *mine = NULL, **tail = &mine;
    pthread_mutex_lock(&r->qmu);
    struct src_item **pp = &r->head;
    r->tail = NULL;
    while (*pp) {
        struct src_item *it = *pp;
        if (it->src == s || (it->txn && sync_writes(it->txn, s))) {
            *pp = it->next;
            it->next = NULL;
            *tail = it;
            tail = &it->next;
            atomic_fetch_sub(&r->nqueued, 1);
        } else {
            r->tail = it;
            pp = &it->next;
        }
    }
    pthread_mutex_unlock(&r->qmu);
    while (mine) {
        struct src_item *next = mine->next;
        atomic_fetch_sub(&mine->src->queued, 1);
        item_free(mine);
        mine = next;
    }
}

void src_detach(ldb_source *s)
{
    struct src_registry *r = s->reg;
    atomic_store(&s->detached, true);
    demand_detach(s);
    if (s->p.destroy) { /* the provider's threads stop using s here */
        provider_enter(r);
        s->p.destroy(s->ctx);
        provider_leave(r);
    }
    queue_forget(r, s);
    table_set_readonly(s->table, false);
    table_set_loading(s->table, TABLE_LOCAL);
    for (size_t i = 0; i < r->sources.len; i++) {
        if (r->sources.data[i] == s) {
            r->sources.data[i] = vec_last(&r->sources);
            r->sources.len--;
            break;
        }
    }
    hmap_free(&s->plans);
    vec_free(&s->fresh_plans);
    vec_free(&s->releases);
    for (size_t i = 0; i < s->persist_gone.len; i++)
        row_release(s->persist_gone.data[i]);
    vec_free(&s->persist_gone);
    mem_free(s->name);
    mem_free(s);
}

int src_stop(ldb_source *s)
{
    if (s->stopped)
        return LDB_OK;
    int rc = demand_stop(s);
    if (rc)
        return rc;
    s->stopped = true;
    atomic_fetch_add(&s->session, 1); /* transactions begun before are dropped */
    queue_forget(s->reg, s);
    return LDB_OK;
}

int src_start(ldb_source *s)
{
    if (!s->stopped)
        return LDB_OK;
    if (s->mode == LDB_SOURCE_EAGER && !s->all && demand_eager(s))
        return LDB_NOMEM;
    s->stopped = false;
    atomic_fetch_add(&s->session, 1);
    s->reg->work = true; /* demand made while stopped is requested now */
    return LDB_OK;
}

const char *src_table_name(const ldb_source *s) { return s->name; }
struct src_registry *src_registry_of(const ldb_source *s) { return s->reg; }
void *src_registry_user(const struct src_registry *r) { return r->env.ctx; }

void src_stats(const ldb_source *s, ldb_source_stats *out)
{
    *out = s->st;
    out->queued = atomic_load(&s->queued);
    out->rows = table_count(s->table);
    out->demands = s->all ? s->all->nparams : 0;
    uint32_t pos = 0;
    uint64_t *slot, hash;
    while ((slot = hmap_next(&s->plans, &pos, &hash)))
        out->demands += ((struct src_plan *)(uintptr_t)*slot)->nparams;
}
