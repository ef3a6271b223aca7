/*
 * store_impl.h - the store's private state, shared by store.c (catalog,
 * DDL), write.c (row writes), txn.c (statements, transactions, undo,
 * hooks) and capture.c (deltas). Not for use outside src/storage/.
 *
 * The undo log is the single record of a transaction: rollback walks it
 * backward, and change capture consolidates stretches of it. Invariants:
 * - undo.len == 0 outside a transaction;
 * - each ROW entry owns one reference to its old row (inserts have none);
 *   the new row is owned by the table or by a later entry's old, so every
 *   row an entry names stays alive while the entry does;
 * - DROP entries own the dropped table or index until commit;
 * - frames are in log order: frames[i].undo_pos <= frames[i+1].undo_pos;
 *   a statement frame, if any, is the last one;
 * - a subscription's consumed deltas are contiguous stretches in log
 *   order, all after its base, all at or before its seen position;
 * - rollback never allocates: each write that removes index entries does
 *   it with held deletes, whose trees settle only when the log empties
 *   (tables with such trees are on the unsettled list), so undoing an
 *   entry finds every tree and hash table as roomy as right after the
 *   write (table.c).
 */
#ifndef LDB_STORAGE_STORE_IMPL_H
#define LDB_STORAGE_STORE_IMPL_H

#include "base/vec.h"
#include "storage/store.h"

enum undo_kind {
    UNDO_INSERT,       /* t, aux = rowid_max before, new_row */
    UNDO_DELETE,       /* t, old */
    UNDO_UPDATE,       /* t, old, new_row */
    UNDO_ROWID,        /* t, aux = rowid_max before (an update raised it) */
    UNDO_CREATE_TABLE, /* t, pos = catalog position */
    UNDO_DROP_TABLE,   /* t (owned), pos */
    UNDO_CREATE_INDEX, /* t, ix, pos = position in t->indexes */
    UNDO_DROP_INDEX    /* t, ix (owned), pos */
};

struct undo_entry {
    uint32_t kind;
    uint32_t pos;
    struct table *t;
    union {
        row *old;
        int64_t aux;
        struct table_index *ix;
    } a;
    row *new_row;
};

static inline bool undo_is_row(const struct undo_entry *e)
{
    return e->kind == UNDO_INSERT || e->kind == UNDO_DELETE || e->kind == UNDO_UPDATE;
}

/* DDL: an UNDO_ROWID (an update that moved an INTEGER PRIMARY KEY above
 * rowid_max) is neither a row nor the schema. */
static inline bool undo_is_schema(const struct undo_entry *e)
{
    return e->kind >= UNDO_CREATE_TABLE;
}

struct frame {
    char *name;        /* owned; NULL for the statement frame */
    size_t undo_pos;   /* log length when the frame opened */
};

struct subscription {
    enum subscriber_kind kind;
    struct store_hooks hooks;
    void *ctx;
    size_t base;       /* log position of the state it started from */
    size_t seen;       /* SUB_STATEMENT: log consumed up to here */
    VEC(struct delta *) consumed;
    /* During a rollback below base: the changes it started from that are
     * being undone (NULL if they could not be listed). */
    struct delta *base_undo;
    bool (*wants)(void *ctx, const struct table *t); /* NULL: every table */
    bool dead;         /* unsubscribed while hooks were running */
};

enum txn_state { TXN_NONE, TXN_AUTO, TXN_EXPLICIT };

struct store {
    VEC(struct table *) tables;
    VEC(struct undo_entry) undo;
    VEC(struct frame) frames;
    VEC(struct subscription *) subs;
    enum txn_state txn;
    bool stmt_open;
    bool savepoint_txn;   /* opened by SAVEPOINT: releasing it commits */
    int internal;         /* store_enter_internal depth */
    bool optimistic;      /* store_set_optimistic */
    int hook_phase;       /* the hook phase running (txn.c), 0 if none */
    uint64_t txn_id;
    uint64_t epoch;       /* bumped by every rollback */
    uint64_t schema_version;
    struct table *unsettled; /* tables whose index trees wait for the end of
                                the transaction to settle (a list) */
    struct journal *journal; /* durable files (journal.h), or NULL in memory */
    char errmsg[512];
};

/* Room for one more log entry, so that a write can log after changing
 * the table without a failure in between. */
static inline int store_log_reserve(struct store *s)
{
    return vec_reserve(&s->undo, 1);
}
/* Appends an entry (room reserved). */
static inline void store_log(struct store *s, struct undo_entry e)
{
    s->undo.data[s->undo.len++] = e;
}

/*
 * The checks every change makes first: requires an open statement and no
 * commit in progress. LDB_OK or an error with the message set.
 */
int store_ready_to_change(struct store *s);

/* After a change that removed rows from t: lists t for settling at the
 * end of the transaction if its trees need it. */
static inline void store_note_removals(struct store *s, struct table *t)
{
    if (t->unsettled || !table_unsettled(t))
        return;
    t->unsettled = true;
    t->unsettled_next = s->unsettled;
    s->unsettled = t;
}

/* "t.a, t.b": the columns of a key, for constraint messages. */
void format_key_columns(const struct table *t, const uint32_t *cols, uint32_t n,
                        char *buf, size_t len);

/* Consolidates log entries [from, to) into *out (capture.c). Tables
 * marked dropped are left out when skip_dropped. LDB_NOMEM possible. */
int delta_build(const struct store *s, size_t from, size_t to, bool skip_dropped,
                struct delta **out);

/* Undoes one entry (txn.c), without memory: LDB_OK, or LDB_INTERNAL
 * when the log and the tables disagree (a bug; the entry is undone as
 * far as it goes). */
int undo_entry_apply(struct store *s, struct undo_entry *e);
/* Releases what a committed entry owns. */
void undo_entry_commit(struct undo_entry *e);

/* Tells the subscribers that ix, an index of t, was dropped (txn.c):
 * LDB_OK or the first hook's error. */
int store_notify_index_dropped(struct store *s, struct table *t, struct table_index *ix);

/* Drops the open transaction without undoing or calling hooks, and
 * frees registrations and the log: the first step of store_close. */
void store_abandon_transaction(struct store *s);

/* Catalog edits that undo and DDL share (store.c); none allocate except
 * catalog_add. */
int catalog_add(struct store *s, struct table *t);
void catalog_remove_at(struct store *s, size_t pos);
void catalog_insert_at(struct store *s, size_t pos, struct table *t);

#endif
