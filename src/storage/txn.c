/*
 * txn.c - statements, transactions, savepoints, the undo log and the
 * hooks of change capture (see store.h and capture.h).
 *
 * Frames mark positions in the undo log: one per open savepoint and one
 * for the open statement (the last). Rolling back to a frame undoes the
 * log down to its position. A rollback first records, for subscribers
 * that joined after that position, the changes they started from (the
 * only step that allocates, and one allowed to fail: the subscriber then
 * resynchronises), then undoes, which needs no memory (store_impl.h), then
 * tells subscribers what they saw was undone, newest first, with the
 * tables already restored, then that the rollback is complete (settled).
 * So every rollback completes, out of memory or not. Index trees settle
 * when the transaction ends, committed or undone.
 *
 * Commit is two-phase for subscribers so that a failed prepare cancels
 * the commit with nothing published and the transaction intact; once the
 * transaction has ended, the published hooks run, outside everything.
 *
 * Hook phases: while hooks run, the phase says what they may do (writes
 * only in statement hooks), and unsubscribing only marks a registration,
 * which is freed when the phase ends.
 */
#include "storage/journal.h"
#include "storage/store_impl.h"

#include "base/mem.h"

#include <string.h>

enum hook_phase {
    PHASE_NONE,
    PHASE_STATEMENT, /* statement and index_dropped hooks: writes allowed */
    PHASE_COMMIT,
    PHASE_ROLLBACK,  /* rollback and settled hooks */
    PHASE_PUBLISH,
    PHASE_CHECK      /* check_drop hooks */
};

/* The running hook phase; PHASE_NONE between hooks. */
static enum hook_phase phase(const struct store *s) { return (enum hook_phase)s->hook_phase; }
static void set_phase(struct store *s, enum hook_phase p) { s->hook_phase = (int)p; }

bool store_in_statement(const struct store *s) { return s->stmt_open; }
bool store_in_transaction(const struct store *s) { return s->txn != TXN_NONE; }
bool store_in_explicit_transaction(const struct store *s) { return s->txn == TXN_EXPLICIT; }
size_t store_log_length(const struct store *s) { return s->undo.len; }

void store_enter_internal(struct store *s) { s->internal++; }
void store_leave_internal(struct store *s)
{
    if (s->internal > 0)
        s->internal--;
}

int store_ready_to_change(struct store *s)
{
    if (!s->stmt_open)
        return store_error(s, LDB_MISUSE, "tables change only inside a statement");
    if (phase(s) != PHASE_NONE && phase(s) != PHASE_STATEMENT)
        return store_error(s, LDB_MISUSE,
                           "tables cannot change during commit, rollback, publication or check "
                           "hooks");
    return LDB_OK;
}

/* Transaction control happens between statements and outside hooks. */
static int ready_for_control(struct store *s)
{
    if (s->stmt_open || phase(s) != PHASE_NONE)
        return store_error(s, LDB_MISUSE, "transaction control inside a statement or hook");
    return LDB_OK;
}

/* ---- undo ------------------------------------------------------------------------ */

static void index_vec_remove(struct table *t, size_t pos)
{
    memmove(&t->indexes.data[pos], &t->indexes.data[pos + 1],
            (t->indexes.len - pos - 1) * sizeof *t->indexes.data);
    t->indexes.len--;
}

/* Room is there: the removal this reverses freed it, and everything
 * added after that was undone first. */
static void index_vec_insert(struct table *t, size_t pos, struct table_index *ix)
{
    memmove(&t->indexes.data[pos + 1], &t->indexes.data[pos],
            (t->indexes.len - pos) * sizeof *t->indexes.data);
    t->indexes.data[pos] = ix;
    t->indexes.len++;
}

static int undo_row(struct store *s, struct undo_entry *e)
{
    int rc = LDB_OK;
    switch (e->kind) {
    case UNDO_INSERT:
        table_unlink(e->t, e->new_row);
        store_note_removals(s, e->t);
        row_release(e->new_row);
        e->t->rowid_max = e->a.aux;
        break;
    case UNDO_DELETE:
        rc = table_put_back(e->t, e->a.old);
        break;
    case UNDO_UPDATE:
        rc = table_unrelink(e->t, e->new_row, e->a.old);
        store_note_removals(s, e->t);
        row_release(e->new_row);
        break;
    }
    return rc;
}

/* Takes t, about to be freed, off the unsettled list. */
static void forget_unsettled(struct store *s, struct table *t)
{
    for (struct table **p = &s->unsettled; *p; p = &(*p)->unsettled_next) {
        if (*p == t) {
            *p = t->unsettled_next;
            return;
        }
    }
}

/* The transaction is over (the log empties): the trees may settle. */
static void settle_tables(struct store *s)
{
    while (s->unsettled) {
        struct table *t = s->unsettled;
        s->unsettled = t->unsettled_next;
        t->unsettled = false;
        t->unsettled_next = NULL;
        table_settle(t);
    }
}

int undo_entry_apply(struct store *s, struct undo_entry *e)
{
    switch (e->kind) {
    case UNDO_INSERT:
    case UNDO_DELETE:
    case UNDO_UPDATE:
        return undo_row(s, e);
    case UNDO_ROWID:
        e->t->rowid_max = e->a.aux;
        return LDB_OK;
    case UNDO_CREATE_TABLE:
        catalog_remove_at(s, e->pos);
        forget_unsettled(s, e->t);
        table_free(e->t);
        break;
    case UNDO_DROP_TABLE:
        catalog_insert_at(s, e->pos, e->t);
        e->t->dropped = false;
        break;
    case UNDO_CREATE_INDEX:
        index_vec_remove(e->t, e->pos);
        index_destroy(e->a.ix);
        mem_free(e->a.ix);
        break;
    case UNDO_DROP_INDEX:
        index_vec_insert(e->t, e->pos, e->a.ix);
        break;
    }
    s->schema_version++;
    return LDB_OK;
}

void undo_entry_commit(struct undo_entry *e)
{
    switch (e->kind) {
    case UNDO_DELETE:
    case UNDO_UPDATE:
        row_release(e->a.old);
        break;
    case UNDO_DROP_TABLE:
        table_free(e->t);
        break;
    case UNDO_DROP_INDEX:
        index_destroy(e->a.ix);
        mem_free(e->a.ix);
        break;
    default:
        break;
    }
}

/* ---- subscriptions ------------------------------------------------------------------ */

static void free_subscription(struct subscription *sub)
{
    for (size_t i = 0; i < sub->consumed.len; i++)
        delta_free(sub->consumed.data[i]);
    vec_free(&sub->consumed);
    delta_free(sub->base_undo);
    mem_free(sub);
}

static void purge_dead(struct store *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->subs.len; i++) {
        if (s->subs.data[i]->dead)
            free_subscription(s->subs.data[i]);
        else
            s->subs.data[k++] = s->subs.data[i];
    }
    s->subs.len = k;
}

int store_subscribe(struct store *s, enum subscriber_kind kind,
                    const struct store_hooks *hooks, void *ctx,
                    struct subscription **out)
{
    if (phase(s) != PHASE_NONE)
        return store_error(s, LDB_MISUSE, "cannot subscribe from inside a hook");
    struct subscription *sub = mem_calloc(1, sizeof *sub);
    if (!sub || vec_push(&s->subs, sub)) {
        mem_free(sub);
        return LDB_NOMEM;
    }
    sub->kind = kind;
    sub->hooks = *hooks;
    sub->ctx = ctx;
    sub->base = sub->seen = s->undo.len;
    *out = sub;
    return LDB_OK;
}

void store_subscription_filter(struct subscription *sub,
                               bool (*wants)(void *ctx, const struct table *t))
{
    sub->wants = wants;
}

void store_unsubscribe(struct store *s, struct subscription *sub)
{
    sub->dead = true;
    if (phase(s) == PHASE_NONE)
        purge_dead(s);
}

/* Forgets the transaction's positions: the log is about to empty. */
static void reset_subscriptions(struct store *s)
{
    for (size_t i = 0; i < s->subs.len; i++) {
        struct subscription *sub = s->subs.data[i];
        for (size_t j = 0; j < sub->consumed.len; j++)
            delta_free(sub->consumed.data[j]);
        sub->consumed.len = 0;
        sub->base = sub->seen = 0;
    }
}

/* Log entries kept allocated between transactions (32 bytes each). */
#define LOG_KEEP 4096

/* ---- ending transactions --------------------------------------------------------------- */

static void drop_frames(struct store *s, size_t keep)
{
    while (s->frames.len > keep)
        mem_free(s->frames.data[--s->frames.len].name);
}

/* The transaction is over: the log is empty (committed or undone). */
static void end_transaction(struct store *s)
{
    settle_tables(s);
    for (size_t i = 0; i < s->undo.len; i++)
        undo_entry_commit(&s->undo.data[i]);
    s->undo.len = 0;
    /* A bulk transaction's log would otherwise stay allocated for good. */
    if (s->undo.cap > LOG_KEEP)
        vec_free(&s->undo);
    drop_frames(s, 0);
    reset_subscriptions(s);
    s->txn = TXN_NONE;
    s->stmt_open = false;
    s->savepoint_txn = false;
    s->txn_id++;
}

/* ---- rollback ------------------------------------------------------------------------------ */

static void notify_rollback(struct store *s, size_t target)
{
    set_phase(s, PHASE_ROLLBACK);
    for (size_t i = 0; i < s->subs.len; i++) {
        struct subscription *sub = s->subs.data[i];
        while (sub->consumed.len && vec_last(&sub->consumed)->to > target) {
            struct delta *d = vec_pop(&sub->consumed);
            if (!sub->dead && sub->hooks.rollback)
                sub->hooks.rollback(sub->ctx, s, d);
            delta_free(d);
        }
        if (sub->base > target) {
            if (!sub->dead && sub->hooks.rollback)
                sub->hooks.rollback(sub->ctx, s, sub->base_undo);
            delta_free(sub->base_undo);
            sub->base_undo = NULL;
            sub->base = target;
        }
        if (sub->seen > target)
            sub->seen = target;
    }
    set_phase(s, PHASE_NONE);
    purge_dead(s);
}

/* The rollback is complete: the tables show the restored state. */
static void notify_settled(struct store *s)
{
    set_phase(s, PHASE_ROLLBACK);
    for (size_t i = 0; i < s->subs.len; i++) {
        struct subscription *sub = s->subs.data[i];
        if (!sub->dead && sub->hooks.settled)
            sub->hooks.settled(sub->ctx, s);
    }
    set_phase(s, PHASE_NONE);
    purge_dead(s);
}

/* Undoes the log down to target, then keeps keep_frames frames and ends
 * the transaction if end_txn. Needs no memory, so it completes; returns
 * LDB_INTERNAL (message set) only if the log and the tables disagreed. */
static int rollback_to(struct store *s, size_t target, size_t keep_frames, bool end_txn)
{
    for (size_t i = 0; i < s->subs.len; i++) {
        struct subscription *sub = s->subs.data[i];
        if (sub->base > target && !sub->base_undo && sub->hooks.rollback &&
            delta_build(s, target, sub->base, false, &sub->base_undo) != LDB_OK)
            sub->base_undo = NULL; /* the subscriber resynchronises */
    }
    s->epoch++;
    int rc = LDB_OK;
    while (s->undo.len > target) {
        if (undo_entry_apply(s, &s->undo.data[s->undo.len - 1]) != LDB_OK)
            rc = store_error(s, LDB_INTERNAL, "rollback found a table out of step with its log");
        s->undo.len--;
    }
    notify_rollback(s, target);
    drop_frames(s, keep_frames);
    notify_settled(s);
    if (end_txn)
        end_transaction(s);
    return rc;
}

/* ---- commit ------------------------------------------------------------------------------- */

static bool wants_commit_delta(const struct subscription *sub)
{
    return sub->kind == SUB_COMMIT && !sub->dead && sub->hooks.commit_prepare;
}

/* The commit delta of each commit subscriber; subscribers that started
 * together share one. */
static int build_commit_deltas(struct store *s, struct delta **deltas)
{
    for (size_t i = 0; i < s->subs.len; i++) {
        struct subscription *sub = s->subs.data[i];
        deltas[i] = NULL;
        if (!wants_commit_delta(sub) || sub->base == s->undo.len)
            continue;
        for (size_t j = 0; j < i && !deltas[i]; j++)
            if (deltas[j] && deltas[j]->from == sub->base)
                deltas[i] = deltas[j];
        if (!deltas[i] && delta_build(s, sub->base, s->undo.len, true, &deltas[i]) != LDB_OK)
            return LDB_NOMEM;
    }
    return LDB_OK;
}

static void free_commit_deltas(struct store *s, struct delta **deltas)
{
    for (size_t i = 0; i < s->subs.len; i++) {
        bool shared = false;
        for (size_t j = 0; j < i && !shared; j++)
            shared = deltas[j] == deltas[i];
        if (!shared)
            delta_free(deltas[i]);
    }
    mem_free(deltas);
}

static bool wants_commit(const struct subscription *sub, const struct delta *d)
{
    return d && (d->nchanges > 0 || d->schema_changed) && sub->hooks.commit_prepare;
}

static int run_commit_hooks(struct store *s, struct delta **deltas)
{
    int rc = LDB_OK;
    size_t i = 0;
    set_phase(s, PHASE_COMMIT);
    for (; i < s->subs.len && rc == LDB_OK; i++) {
        struct subscription *sub = s->subs.data[i];
        if (wants_commit(sub, deltas[i]))
            rc = sub->hooks.commit_prepare(sub->ctx, s, deltas[i]);
    }
    /* On failure, subscribers before the failing one (i - 1) prepared. */
    size_t prepared = rc == LDB_OK ? s->subs.len : i - 1;
    if (rc == LDB_OK) /* the last thing that can fail: the log on disk */
        rc = journal_commit(s);
    for (size_t j = 0; j < prepared; j++) {
        struct subscription *sub = s->subs.data[j];
        if (wants_commit(sub, deltas[j]) && sub->hooks.commit_finish)
            sub->hooks.commit_finish(sub->ctx, s, rc == LDB_OK);
    }
    set_phase(s, PHASE_NONE);
    return rc;
}

/* The commit is complete and the store out of it: publication. */
static void notify_published(struct store *s)
{
    set_phase(s, PHASE_PUBLISH);
    for (size_t i = 0; i < s->subs.len; i++) {
        struct subscription *sub = s->subs.data[i];
        if (!sub->dead && sub->hooks.published)
            sub->hooks.published(sub->ctx, s);
    }
    set_phase(s, PHASE_NONE);
    purge_dead(s);
}

static int commit_transaction(struct store *s)
{
    bool any = false;
    for (size_t i = 0; i < s->subs.len && !any; i++)
        any = wants_commit_delta(s->subs.data[i]);
    if (any) {
        struct delta **deltas = mem_calloc(s->subs.len, sizeof *deltas);
        if (!deltas)
            return store_error(s, LDB_NOMEM, "out of memory");
        int rc = build_commit_deltas(s, deltas);
        if (rc == LDB_OK)
            rc = run_commit_hooks(s, deltas);
        else
            store_error(s, rc, "out of memory");
        free_commit_deltas(s, deltas);
        purge_dead(s);
        if (rc != LDB_OK)
            return rc;
    } else {
        int rc = journal_commit(s);
        if (rc != LDB_OK)
            return rc;
    }
    end_transaction(s);
    journal_after_commit(s);
    notify_published(s);
    return LDB_OK;
}

/* ---- statements ----------------------------------------------------------------------------- */

int store_stmt_begin(struct store *s)
{
    int rc = ready_for_control(s);
    if (rc != LDB_OK)
        return rc;
    if (vec_reserve(&s->frames, 1))
        return store_error(s, LDB_NOMEM, "out of memory");
    if (s->txn == TXN_NONE)
        s->txn = TXN_AUTO;
    s->frames.data[s->frames.len++] = (struct frame){ NULL, s->undo.len };
    s->stmt_open = true;
    return LDB_OK;
}

/* Log entries [from, to) change a row of a table sub wants. */
static bool wanted_changes(const struct store *s, const struct subscription *sub, size_t from,
                           size_t to)
{
    for (size_t i = from; i < to; i++) {
        const struct undo_entry *e = &s->undo.data[i];
        if (undo_is_row(e) && (!sub->wants || sub->wants(sub->ctx, e->t)))
            return true;
    }
    return false;
}

/* Gives sub the changes since it last consumed; *called says whether
 * its hook ran. */
static int deliver_statement(struct store *s, struct subscription *sub, bool *called)
{
    size_t to = s->undo.len;
    struct delta *d;
    *called = false;
    if (!wanted_changes(s, sub, sub->seen, to)) {
        sub->seen = to;
        return LDB_OK;
    }
    if (delta_build(s, sub->seen, to, false, &d) != LDB_OK ||
        vec_reserve(&sub->consumed, 1)) {
        delta_free(d);
        return store_error(s, LDB_NOMEM, "out of memory");
    }
    if (d->nchanges == 0) {
        delta_free(d);
        sub->seen = to;
        return LDB_OK;
    }
    set_phase(s, PHASE_STATEMENT);
    int rc = sub->hooks.statement(sub->ctx, s, d);
    set_phase(s, PHASE_NONE);
    if (rc != LDB_OK) {
        delta_free(d);
        return rc;
    }
    sub->consumed.data[sub->consumed.len++] = d;
    sub->seen = to;
    *called = true;
    return LDB_OK;
}

static int one_round(struct store *s, bool *any)
{
    *any = false;
    for (size_t i = 0; i < s->subs.len; i++) {
        struct subscription *sub = s->subs.data[i];
        if (sub->kind != SUB_STATEMENT || sub->dead || !sub->hooks.statement ||
            sub->seen >= s->undo.len)
            continue;
        bool called;
        int rc = deliver_statement(s, sub, &called);
        if (rc != LDB_OK)
            return rc;
        *any |= called;
    }
    return LDB_OK;
}

static int run_statement_hooks(struct store *s)
{
    for (int round = 0;; round++) {
        bool any;
        int rc = one_round(s, &any);
        purge_dead(s);
        if (rc != LDB_OK || !any)
            return rc;
        if (round + 1 >= STORE_MAX_ROUNDS)
            return store_error(s, LDB_ERROR, "statement hooks did not settle after %d rounds",
                               STORE_MAX_ROUNDS);
    }
}

int store_stmt_end(struct store *s, int rc)
{
    if (!s->stmt_open || phase(s) != PHASE_NONE)
        return store_error(s, LDB_MISUSE, "no statement to end");
    size_t start = vec_last(&s->frames).undo_pos;
    if (rc == LDB_OK)
        rc = run_statement_hooks(s);
    if (rc == LDB_OK && s->txn == TXN_AUTO) {
        s->stmt_open = false;
        rc = commit_transaction(s);
        if (rc == LDB_OK)
            return LDB_OK;
        s->stmt_open = true;
    }
    if (rc == LDB_OK) {
        drop_frames(s, s->frames.len - 1);
        s->stmt_open = false;
        return LDB_OK;
    }
    bool end_txn = s->txn == TXN_AUTO;
    s->stmt_open = false;
    int undo_rc = rollback_to(s, start, s->frames.len - 1, end_txn);
    return undo_rc != LDB_OK ? undo_rc : rc;
}

/* ---- transactions and savepoints ------------------------------------------------------------- */

int store_begin(struct store *s)
{
    int rc = ready_for_control(s);
    if (rc != LDB_OK)
        return rc;
    if (s->txn != TXN_NONE)
        return store_error(s, LDB_ERROR, "cannot start a transaction within a transaction");
    s->txn = TXN_EXPLICIT;
    s->savepoint_txn = false;
    return LDB_OK;
}

int store_commit(struct store *s)
{
    int rc = ready_for_control(s);
    if (rc != LDB_OK)
        return rc;
    if (s->txn == TXN_NONE)
        return store_error(s, LDB_ERROR, "cannot commit - no transaction is active");
    return commit_transaction(s);
}

int store_rollback(struct store *s)
{
    int rc = ready_for_control(s);
    if (rc != LDB_OK)
        return rc;
    if (s->txn == TXN_NONE)
        return store_error(s, LDB_ERROR, "cannot rollback - no transaction is active");
    return rollback_to(s, 0, 0, true);
}

int store_savepoint(struct store *s, const char *name)
{
    int rc = ready_for_control(s);
    if (rc != LDB_OK)
        return rc;
    char *copy = mem_strndup(name, strlen(name));
    if (!copy || vec_reserve(&s->frames, 1)) {
        mem_free(copy);
        return store_error(s, LDB_NOMEM, "out of memory");
    }
    if (s->txn == TXN_NONE) {
        s->txn = TXN_EXPLICIT;
        s->savepoint_txn = true;
    }
    s->frames.data[s->frames.len++] = (struct frame){ copy, s->undo.len };
    return LDB_OK;
}

/* Position of the newest savepoint with this name, or -1 (error set). */
static long find_savepoint(struct store *s, const char *name)
{
    for (size_t i = s->frames.len; i-- > 0;)
        if (s->frames.data[i].name && name_eq(s->frames.data[i].name, name))
            return (long)i;
    store_error(s, LDB_ERROR, "no such savepoint: %s", name);
    return -1;
}

int store_release(struct store *s, const char *name)
{
    int rc = ready_for_control(s);
    if (rc != LDB_OK)
        return rc;
    long i = find_savepoint(s, name);
    if (i < 0)
        return LDB_ERROR;
    if (i == 0 && s->savepoint_txn)
        return commit_transaction(s);
    drop_frames(s, (size_t)i);
    return LDB_OK;
}

int store_rollback_to(struct store *s, const char *name)
{
    int rc = ready_for_control(s);
    if (rc != LDB_OK)
        return rc;
    long i = find_savepoint(s, name);
    if (i < 0)
        return LDB_ERROR;
    return rollback_to(s, s->frames.data[i].undo_pos, (size_t)i + 1, false);
}

/* ---- DDL hooks ------------------------------------------------------------------------------ */

/* Runs the hooks in phase p (the caller may itself run inside a hook's
 * phase, which is restored). */
static enum hook_phase enter_phase(struct store *s, enum hook_phase p)
{
    enum hook_phase outer = phase(s);
    set_phase(s, p);
    return outer;
}

static void leave_phase(struct store *s, enum hook_phase outer)
{
    set_phase(s, outer);
    if (outer == PHASE_NONE)
        purge_dead(s);
}

int store_check_drop(struct store *s, struct table *t)
{
    enum hook_phase outer = enter_phase(s, PHASE_CHECK);
    int rc = LDB_OK;
    for (size_t i = 0; i < s->subs.len && rc == LDB_OK; i++) {
        struct subscription *sub = s->subs.data[i];
        if (!sub->dead && sub->hooks.check_drop)
            rc = sub->hooks.check_drop(sub->ctx, s, t);
    }
    leave_phase(s, outer);
    return rc;
}

int store_notify_index_dropped(struct store *s, struct table *t, struct table_index *ix)
{
    enum hook_phase outer = enter_phase(s, PHASE_STATEMENT);
    int rc = LDB_OK;
    for (size_t i = 0; i < s->subs.len && rc == LDB_OK; i++) {
        struct subscription *sub = s->subs.data[i];
        if (!sub->dead && sub->hooks.index_dropped)
            rc = sub->hooks.index_dropped(sub->ctx, s, t, ix);
    }
    leave_phase(s, outer);
    return rc;
}

/* ---- teardown ------------------------------------------------------------------------------ */

/* Used by store_close: the open transaction's changes are abandoned
 * without hooks; tables are freed right after, so nothing is undone. */
void store_abandon_transaction(struct store *s)
{
    end_transaction(s);
    for (size_t i = 0; i < s->subs.len; i++)
        free_subscription(s->subs.data[i]);
    vec_free(&s->subs);
    vec_free(&s->undo);
    vec_free(&s->frames);
}
