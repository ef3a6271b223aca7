/*
 * sync.c - sync transactions, the only writes to a source's table, and
 * their receipts.
 *
 * A transaction is built on one thread without any lock: values are
 * copied into the transaction's own rows (text and blobs get private
 * bytes), so it shares nothing with the core until it is queued. Applying
 * it (sync_apply, under the database's mutex, at a dispatch point) is one
 * storage statement in internal mode: column affinity and NOT NULL as in
 * INSERT, rows addressed by primary key, and a row identical to the
 * stored one not written at all, so that a reload of unchanged rows
 * publishes nothing. Any failure undoes the whole statement.
 *
 * A receipt is shared by the program and the core (refs 2 while both hold
 * it); its state moves once from PENDING and is read with an atomic load.
 */
#include "source/source_internal.h"

#include "base/interrupt.h"
#include "base/mem.h"
#include "storage/store.h"
#include "storage/table.h"

#include <stdio.h>
#include <string.h>

struct sync_op {
    uint8_t kind;
    ldb_source *src;           /* the table it writes */
    value *vals;               /* src->ncols values (owned) */
    uint64_t written;          /* rows it changed, once applied */
};

/* A source other than the first that the transaction writes. */
struct sync_member {
    ldb_source *src;
    uint64_t session;          /* its session when joined */
};

struct ldb_receipt {
    atomic_int state;
    atomic_int refs;
    int code;                  /* FAILED: the error code (written before state) */
    char msg[200];             /* FAILED: why (written before state) */
};

struct ldb_sync {
    ldb_source *src;           /* the first source: its queue slot, request */
    ldb_source *to;            /* the source of the row being set */
    VEC(struct sync_member) members;
    ldb_request *req;          /* a reference, or NULL */
    uint32_t ncols;            /* to->ncols */
    value *cur;                /* the row being set (owned values) */
    VEC(struct sync_op) ops;
    ldb_receipt *receipt;      /* the core's reference, or NULL */
    bool truncates;            /* has a SYNC_TRUNCATE: starts a replay */
    VEC(ldb_optimistic *) confirms; /* ldb_sync_confirm (references) */
    uint64_t session;          /* its source's session at begin */
};

/* ---- receipts ------------------------------------------------------------------------- */

static void receipt_unref(ldb_receipt *r)
{
    if (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        mem_free(r);
}

static void receipt_done(ldb_receipt *r, int state, int code, const char *msg)
{
    if (!r)
        return;
    r->code = code;
    if (msg)
        snprintf(r->msg, sizeof r->msg, "%s", msg);
    atomic_store_explicit(&r->state, state, memory_order_release);
}

int ldb_receipt_state(const ldb_receipt *r)
{
    return r ? atomic_load_explicit(&r->state, memory_order_acquire) : LDB_RECEIPT_ABORTED;
}

const char *ldb_receipt_error(const ldb_receipt *r)
{
    return ldb_receipt_state(r) == LDB_RECEIPT_FAILED ? r->msg : NULL;
}

void ldb_receipt_free(ldb_receipt *r) { receipt_unref(r); }

/* ---- building ------------------------------------------------------------------------------ */

static void free_row(value *vals, uint32_t n)
{
    for (uint32_t i = 0; vals && i < n; i++)
        value_release(&vals[i]);
    mem_free(vals);
}

static void sync_free(ldb_sync *t)
{
    free_row(t->cur, t->ncols);
    for (size_t i = 0; i < t->ops.len; i++)
        free_row(t->ops.data[i].vals, t->ops.data[i].src->ncols);
    vec_free(&t->ops);
    vec_free(&t->members);
    for (size_t i = 0; i < t->confirms.len; i++)
        ldb_optimistic_free(t->confirms.data[i]);
    vec_free(&t->confirms);
    ldb_request_unref(t->req);
    receipt_unref(t->receipt);
    mem_free(t);
}

int ldb_sync_begin(ldb_source *s, ldb_request *req, ldb_sync **out)
{
    if (!out)
        return LDB_MISUSE;
    *out = NULL;
    if (!s || (req && req->src != s))
        return LDB_MISUSE;
    ldb_sync *t = mem_calloc(1, sizeof *t);
    if (!t || !(t->cur = mem_calloc(s->ncols, sizeof *t->cur))) {
        mem_free(t);
        return LDB_NOMEM;
    }
    t->src = t->to = s;
    t->ncols = s->ncols;
    t->session = atomic_load(&s->session);
    if (req) {
        ldb_request_ref(req);
        t->req = req;
    }
    *out = t;
    return LDB_OK;
}

/* A failed call changes nothing: the program may repeat it. */
static int set(ldb_sync *t, int col, int rc, value v)
{
    if (!t || col < 0 || (uint32_t)col >= t->ncols) {
        value_release(&v);
        return t ? LDB_RANGE : LDB_MISUSE;
    }
    if (rc)
        return rc;
    value_release(&t->cur[col]);
    t->cur[col] = v;
    return LDB_OK;
}

int ldb_sync_null(ldb_sync *t, int col) { return set(t, col, LDB_OK, value_null()); }
int ldb_sync_int64(ldb_sync *t, int col, int64_t v) { return set(t, col, LDB_OK, value_int(v)); }
int ldb_sync_double(ldb_sync *t, int col, double v) { return set(t, col, LDB_OK, value_real(v)); }

int ldb_sync_text(ldb_sync *t, int col, const char *s, int n)
{
    value v = value_null();
    int rc = s ? value_text(&v, s, n < 0 ? strlen(s) : (size_t)n) : LDB_OK;
    return set(t, col, rc, v);
}

int ldb_sync_blob(ldb_sync *t, int col, const void *p, int n)
{
    value v = value_null();
    int rc = p && n >= 0 ? value_blob(&v, p, (size_t)n) : LDB_OK;
    return set(t, col, rc, v);
}

static int add_op(ldb_sync *t, enum sync_kind kind)
{
    if (!t)
        return LDB_MISUSE;
    value *fresh = mem_calloc(t->ncols, sizeof *fresh);
    if (!fresh || vec_push(&t->ops, ((struct sync_op){ (uint8_t)kind, t->to, t->cur, 0 }))) {
        mem_free(fresh);
        return LDB_NOMEM;
    }
    t->cur = fresh;
    return LDB_OK;
}

int ldb_sync_insert(ldb_sync *t) { return add_op(t, SYNC_INSERT); }
int ldb_sync_upsert(ldb_sync *t) { return add_op(t, SYNC_UPSERT); }
int ldb_sync_update(ldb_sync *t) { return add_op(t, SYNC_UPDATE); }
int ldb_sync_delete(ldb_sync *t) { return add_op(t, SYNC_DELETE); }

static bool member(const ldb_sync *t, const ldb_source *s)
{
    for (size_t i = 0; i < t->members.len; i++)
        if (t->members.data[i].src == s)
            return true;
    return s == t->src;
}

int ldb_sync_source(ldb_sync *t, ldb_source *s)
{
    if (!t || !s || s->reg != t->src->reg)
        return LDB_MISUSE;
    if (s == t->to)
        return LDB_OK;
    value *fresh = mem_calloc(s->ncols, sizeof *fresh);
    if (!fresh || (!member(t, s) &&
                   vec_push(&t->members, ((struct sync_member){ s, atomic_load(&s->session) })))) {
        mem_free(fresh);
        return LDB_NOMEM;
    }
    free_row(t->cur, t->ncols);
    t->cur = fresh;
    t->to = s;
    t->ncols = s->ncols;
    return LDB_OK;
}

int ldb_sync_truncate(ldb_sync *t)
{
    if (t && t->to != t->src)
        return LDB_MISUSE; /* a replay belongs to the transaction's first source */
    int rc = add_op(t, SYNC_TRUNCATE);
    if (!rc)
        t->truncates = true;
    return rc;
}

int ldb_sync_confirm(ldb_sync *t, ldb_optimistic *o)
{
    /* a handle of another database (its step would unlink that one's
     * transaction from this one's layer), or of a closed one */
    if (!t || !o || o->reg != t->src->reg || atomic_load(&o->orphan))
        return LDB_MISUSE;
    if (vec_push(&t->confirms, o))
        return LDB_NOMEM;
    ldb_optimistic_ref(o);
    return LDB_OK;
}

void ldb_sync_abandon(ldb_sync *t)
{
    if (t)
        sync_free(t);
}

int ldb_sync_commit(ldb_sync *t, ldb_receipt **receipt)
{
    if (receipt)
        *receipt = NULL;
    if (!t)
        return LDB_MISUSE;
    /* the caller's reference (dropped here if it wants no receipt) and
     * the transaction's */
    ldb_receipt *rec = mem_calloc(1, sizeof *rec);
    struct src_item *it = mem_calloc(1, sizeof *it);
    if (!it || !rec) {
        mem_free(it);
        mem_free(rec);
        sync_free(t);
        return LDB_NOMEM;
    }
    atomic_init(&rec->state, LDB_RECEIPT_PENDING);
    atomic_init(&rec->refs, 2);
    t->receipt = rec;
    it->src = t->src;
    it->txn = t;
    int rc = queue_push(t->src->reg, it);
    /* applied before returning when made on the home thread outside callbacks */
    if (rc == LDB_OK && ldb_receipt_state(rec) == LDB_RECEIPT_FAILED)
        rc = rec->code;
    if (receipt)
        *receipt = rec;
    else
        receipt_unref(rec);
    return rc;
}

/* ---- applying ------------------------------------------------------------------------------ */

static int fail(struct store *st, char *msg, size_t n, int rc, const char *text)
{
    snprintf(msg, n, "%s", text ? text : store_errmsg(st));
    return rc;
}

/* The op's values converted as the table's columns take them. */
static int coerce(const struct table *tab, const value *in, value *out, char *msg, size_t n)
{
    const struct schema *sc = table_schema(tab);
    for (uint32_t i = 0; i < sc->nvisible; i++) {
        int rc = column_coerce(&sc->cols[i], &in[i], &out[i]);
        if (rc) {
            char v[64];
            format_value_for_error(&in[i], v, sizeof v);
            snprintf(msg, n, "table %s, column %s: %s is not accepted", tab->name,
                     sc->cols[i].name, v);
            return rc;
        }
    }
    return LDB_OK;
}

/* Deletes every row of the table (a truncate), but for the rows under
 * pending optimistic writes: their synced versions become unknown. */
static int delete_all(ldb_source *s, uint64_t *written, char *msg, size_t n)
{
    struct table *tab = s->table;
    VEC(row *) rows = VEC_INIT;
    int rc = vec_reserve(&rows, table_count(tab));
    if (!rc)
        rc = opt_truncate(s->reg, tab);
    struct table_scan sc = table_scan_begin(tab);
    for (row *r; !rc && (r = table_scan_next(&sc));) {
        if (opt_find(s->reg, tab, r->cols))
            continue;
        row_retain(r);
        rows.data[rows.len++] = r;
    }
    for (size_t i = 0; !rc && i < rows.len; i++)
        rc = table_delete(s->reg->env.store, tab, rows.data[i]);
    for (size_t i = 0; i < rows.len; i++)
        row_release(rows.data[i]);
    vec_free(&rows);
    if (rc)
        return fail(s->reg->env.store, msg, n, rc, rc == LDB_NOMEM ? "out of memory" : NULL);
    *written += rows.len;
    return LDB_OK;
}

/* Inserts vals, or updates old to them (op's row). A UNIQUE collision is
 * judged on the whole transaction's result (opt_park), not row by row:
 * the transaction is one atomic write, and the row it collides with may
 * change later in it (or be an optimistic row, which a synced one beats). */
static int write_row(struct src_registry *r, struct table *tab, row *old, const value *vals,
                     int op, char *msg, size_t n)
{
    struct store *st = r->env.store;
    row *conflict = NULL;
    int rc = old ? table_update(st, tab, old, vals, &conflict)
                 : table_insert(st, tab, vals, &conflict);
    if (rc == LDB_CONSTRAINT && conflict)
        return opt_park(r, tab, old, vals, op, msg, n);
    return rc ? fail(st, msg, n, rc, NULL) : LDB_OK;
}

static int apply_op(ldb_source *s, struct sync_op *op, value *vals, uint64_t *written,
                    char *msg, size_t n)
{
    struct table *tab = s->table;
    struct store *st = s->reg->env.store;
    const struct schema *sc = table_schema(tab);
    if (op->kind == SYNC_TRUNCATE)
        return delete_all(s, written, msg, n);
    int rc = coerce(tab, op->vals, vals, msg, n);
    if (rc)
        return rc;
    value key[SCHEMA_MAX_KEY];
    for (uint32_t i = 0; i < sc->npk; i++)
        key[i] = vals[sc->pk[i]];
    demand_revalidated(s, key);
    struct opt_key *k = opt_find(s->reg, tab, vals);
    if (k) /* under pending optimistic writes: the synced row changes beneath */
        return opt_sync_write(s->reg, k, op->kind, vals, msg, n);
    row *old = table_lookup(tab, key);
    if (op->kind != SYNC_DELETE && s->retain && !retain_owned(s, vals)) {
        /* law 11: no demand owns it, so it is not kept (nor its old version) */
        if (old && (rc = table_delete(st, tab, old)))
            return fail(st, msg, n, rc, NULL);
        *written += old != NULL;
        return LDB_OK;
    }
    if (op->kind == SYNC_DELETE && !old)
        return LDB_OK;
    if (op->kind == SYNC_DELETE && (rc = table_delete(st, tab, old)))
        rc = fail(st, msg, n, rc, NULL);
    else if (op->kind == SYNC_DELETE)
        rc = LDB_OK;
    else if (old && same_vals(old->cols, vals, sc->nvisible))
        return LDB_OK; /* identical: nothing to write */
    else if (old && op->kind == SYNC_INSERT)
        return fail(st, msg, n, LDB_CONSTRAINT,
                    "a sync insert conflicts with a different stored row of the same key");
    else if (op->kind == SYNC_UPDATE && !old)
        return LDB_OK; /* not loaded here: nothing to update */
    else
        rc = write_row(s->reg, tab, old, vals, op->kind, msg, n);
    if (!rc)
        ++*written;
    return rc;
}

static int apply_ops(ldb_sync *t, uint64_t *written, char *msg, size_t n)
{
    uint32_t most = t->src->ncols;
    for (size_t i = 0; i < t->members.len; i++)
        most = t->members.data[i].src->ncols > most ? t->members.data[i].src->ncols : most;
    value *vals = mem_calloc(most, sizeof *vals);
    if (!vals)
        return fail(NULL, msg, n, LDB_NOMEM, "out of memory");
    int rc = LDB_OK;
    for (size_t i = 0; !rc && i < t->ops.len; i++) {
        struct sync_op *op = &t->ops.data[i];
        rc = apply_op(op->src, op, vals, &op->written, msg, n);
        *written += op->written;
        for (uint32_t c = 0; c < op->src->ncols; c++) {
            value_release(&vals[c]);
            vals[c] = value_null();
        }
    }
    mem_free(vals);
    return rc;
}

/* Each source the transaction writes: its first, then the others. */
static ldb_source *source_at(const ldb_sync *t, size_t i)
{
    return i == 0 ? t->src : i <= t->members.len ? t->members.data[i - 1].src : NULL;
}

/* Whether a source it writes went away or began a new session since. */
static bool members_gone(const ldb_sync *t)
{
    for (size_t i = 0; i < t->members.len; i++) {
        const struct sync_member *m = &t->members.data[i];
        if (atomic_load(&m->src->detached) || m->session != atomic_load(&m->src->session))
            return true;
    }
    return false;
}

bool sync_writes(const ldb_sync *t, const ldb_source *s) { return member(t, s); }

void sync_drop(ldb_sync *t, int state)
{
    t->src->st.txns_aborted++;
    receipt_done(t->receipt, state, LDB_NOMEM, state == LDB_RECEIPT_FAILED ? "out of memory" : NULL);
    sync_free(t);
}

/* Whether t's request still establishes anything: a transaction of an
 * aborted or released request is dropped (law 6). */
static bool request_live(const ldb_sync *t)
{
    return !t->req || (t->req->current && !ldb_request_aborted(t->req));
}

/* The transaction's one storage statement: its rows, its confirmations,
 * the visible rows recomputed over them. */
static int apply_statement(struct src_registry *r, ldb_sync *t, char *msg, size_t n,
                           uint64_t *written)
{
    struct store *st = r->env.store;
    int rc = store_stmt_begin(st);
    if (rc)
        return fail(st, msg, n, rc, NULL);
    store_enter_internal(st);
    rc = apply_ops(t, written, msg, n);
    for (size_t i = 0; !rc && i < t->confirms.len; i++)
        if ((rc = opt_mark(r, t->confirms.data[i], OPT_CONFIRM, NULL)))
            snprintf(msg, n, "out of memory");
    if (!rc) /* the visible rows over what changed beneath them */
        rc = opt_settle(r, msg, n);
    store_leave_internal(st);
    struct intr *scope = intr_swap(NULL); /* maintenance must not stop halfway */
    int end = store_stmt_end(st, rc);
    intr_swap(scope);
    if (!rc && end)
        rc = fail(st, msg, n, end, NULL);
    opt_step_end(r, rc == LDB_OK);
    r->env.wrote(r->env.ctx);
    return rc;
}

void sync_apply(struct src_registry *r, ldb_sync *t)
{
    ldb_source *s = t->src;
    if (atomic_load(&s->detached) || t->session != atomic_load(&s->session) ||
        members_gone(t) || !request_live(t)) {
        sync_drop(t, LDB_RECEIPT_ABORTED);
        return;
    }
    char msg[200] = "";
    uint64_t written = 0;
    /* a truncate's deletes and the rows after it stay private (law 9) */
    bool started = t->truncates && !s->replay.active;
    if (t->truncates && demand_replay_hold(s)) {
        s->st.txns_aborted++;
        receipt_done(t->receipt, LDB_RECEIPT_FAILED, LDB_NOMEM, "out of memory");
        sync_free(t);
        return;
    }
    for (size_t i = 0; source_at(t, i); i++)
        ordered_txn_begin(source_at(t, i));
    int rc = apply_statement(r, t, msg, sizeof msg, &written);
    for (size_t i = 0; !rc && written && source_at(t, i); i++)
        ordered_source_wrote(source_at(t, i)); /* a window's prefix may have lost rows */
    if (t->truncates) {
        if (!rc)
            demand_replay_start(s); /* every logical demand acquired again */
        else if (started)
            demand_replay_cancel(s);
    }
    for (size_t i = 0; source_at(t, i); i++)
        ordered_txn_end(source_at(t, i));
    if (rc) {
        s->st.txns_aborted++;
        receipt_done(t->receipt, LDB_RECEIPT_FAILED, rc, msg[0] ? msg : ldb_errstr(rc));
    } else {
        s->st.txns_applied++;
        for (size_t i = 0; i < t->ops.len; i++)
            t->ops.data[i].src->st.rows_written += t->ops.data[i].written;
        receipt_done(t->receipt, LDB_RECEIPT_APPLIED, LDB_OK, NULL);
    }
    sync_free(t);
    opt_notify(r);
}
