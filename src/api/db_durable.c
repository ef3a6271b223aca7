/*
 * db_durable.c - what a durable database adds to the handle: reopening
 * its materialized views, ldb_checkpoint, and the PRAGMAs synchronous,
 * checkpoint_threshold and wal_checkpoint. The files, the log and
 * recovery are the storage layer's (src/storage/journal.c).
 *
 * Views at open. Storage recovers every table, a materialized view's
 * backing table included, with the committed rows; the mv layer then
 * takes each such table up again (mv_restore). A view whose body names
 * an aggregate the program registers only after ldb_open cannot be
 * maintained yet: it is dormant. Its rows stay readable, but every write
 * to the database is refused (db_dormant_refusal) until a registration
 * lets it be restored, because a write to one of its sources would leave
 * it stale without anyone noticing. Pending optimistic transactions come
 * back from the database's outbox tables (src/source/outbox.c).
 */
#include "api/db_internal.h"

#include "mv/mv.h"
#include "source/source.h"

#include <stdio.h>
#include <string.h>

/* Restores every recovered view not yet maintained, in creation order
 * (producers first), inside one storage statement. Views that fail for
 * want of a registration stay dormant; *rc gets other failures. */
static int restore_views(ldb *db)
{
    int rc = store_stmt_begin(db->store);
    if (rc)
        return db_error(db, rc, NULL, -1, "%s", store_errmsg(db->store));
    db->dormant = 0;
    db->dormant_why[0] = '\0';
    for (size_t i = 0; i < store_table_count(db->store) && rc == LDB_OK; i++) {
        struct table *t = store_table_at(db->store, i);
        if (!table_is_view_store(t) || !table_sql(t) || mv_backing_name(db->mv, t))
            continue;
        struct eval_error err;
        int vrc = mv_restore(db->mv, t, &err);
        if (vrc == LDB_NOTFOUND) /* a plain view's table: its text is CREATE VIEW */
            continue;
        if (vrc == LDB_NOMEM) {
            rc = db_error(db, vrc, NULL, -1, "out of memory");
        } else if (vrc && !db->dormant++) {
            snprintf(db->dormant_why, sizeof db->dormant_why,
                     "materialized view %s cannot be maintained: %s", table_name(t), err.msg);
        }
    }
    int end = store_stmt_end(db->store, rc);
    if (end && !rc)
        rc = db_error(db, end, NULL, -1, "%s", store_errmsg(db->store));
    return rc;
}

/* The views, then the pending optimistic transactions (over the tables
 * as recovered: their rows are already the visible ones). */
int db_durable_open(ldb *db)
{
    if (!store_is_durable(db->store))
        return LDB_OK;
    int rc = restore_views(db);
    char msg[256];
    if (!rc && (rc = src_opt_restore(db->src, msg, sizeof msg)))
        db_error(db, rc, NULL, -1, "%s", msg);
    return rc;
}

const char *db_dormant_refusal(const ldb *db)
{
    return db->dormant ? db->dormant_why : NULL;
}

void db_durable_registered(ldb *db)
{
    if (db->dormant)
        restore_views(db); /* a view still dormant keeps refusing writes */
}

/* A materialized view's table while some view is dormant, outside a
 * transaction (a rollback would bring a view back after its dormancy was
 * counted again), or NULL. */
static struct table *view_to_drop(ldb *db, const char *name)
{
    struct table *t = db->dormant && !store_in_transaction(db->store)
                          ? store_find_table(db->store, name)
                          : NULL;
    return t && table_is_view_store(t) && table_sql(t) && !table_is_view(t) ? t : NULL;
}

/* Dropping a view leaves no view stale, so it is the one write a dormant
 * database takes: the way out for a program that will never register
 * what a view needs (it had a database that refused every write for
 * good). A dormant view's table is dropped here (the store still refuses
 * when a maintained view reads it), a maintained view by drop. */
int db_drop_while_dormant(ldb_stmt *s, int (*drop)(ldb_stmt *), bool *handled)
{
    ldb *db = s->db;
    const ast_stmt *st = s->ast->stmt;
    struct table *t = view_to_drop(db, st->u.drop.name.name.str);
    *handled = t != NULL;
    if (!t)
        return LDB_OK;
    bool maintained = mv_backing_name(db->mv, t) != NULL;
    uint32_t dormant = db->dormant;
    db->dormant = 0;
    int rc = db_write_begin(db);
    db->dormant = dormant;
    if (rc)
        return rc;
    if (maintained) {
        rc = drop(s);
    } else {
        store_enter_internal(db->store);
        rc = store_drop_table(db->store, t);
        store_leave_internal(db->store);
        if (rc)
            db_error(db, rc, s->ast, st->u.drop.name.name.off, "%s", store_errmsg(db->store));
    }
    int end = db_write_end(db, rc);
    if (!rc && !end)
        restore_views(db); /* counts the views still dormant */
    return rc ? rc : end;
}

int ldb_checkpoint(ldb *db)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    db_clear_error(db);
    int rc;
    const char *why = db_in_callback(db);
    if (why)
        rc = db_error(db, LDB_MISUSE, NULL, -1, "%s", why);
    else if (store_in_transaction(db->store))
        rc = db_error(db, LDB_MISUSE, NULL, -1, "cannot checkpoint inside a transaction");
    else if ((rc = store_checkpoint(db->store)))
        db_error(db, rc, NULL, -1, "%s", store_errmsg(db->store));
    db_unlock(db);
    return rc;
}

/* ---- PRAGMAs ---------------------------------------------------------------------------- */

static int pragma_row(ldb_stmt *s, int64_t n)
{
    value v = value_int(n);
    row *r = row_from(&v, 1);
    if (!r || vec_push(&s->out_rows, r)) {
        row_release(r);
        return db_error(s->db, LDB_NOMEM, NULL, -1, "out of memory");
    }
    return LDB_OK;
}

/* The synchronous level a PRAGMA value names (0..2), or -1. */
static int sync_level(const ast_stmt *st)
{
    static const char *const names[] = { "off", "normal", "full" };
    const ast_name *w = &st->u.pragma.word;
    if (w->str)
        for (int i = 0; i < 3; i++)
            if (strcasecmp(w->str, names[i]) == 0)
                return i;
    const ast_expr *x = st->u.pragma.value;
    if (x && x->kind == AST_LITERAL && value_type(&x->u.literal.v) == LDB_INTEGER &&
        x->u.literal.v.h.u.i >= 0 && x->u.literal.v.h.u.i <= 2)
        return (int)x->u.literal.v.h.u.i;
    return -1;
}

static int threshold(const ast_stmt *st, int64_t *out)
{
    const ast_expr *x = st->u.pragma.value;
    if (!x || x->kind != AST_LITERAL || value_type(&x->u.literal.v) != LDB_INTEGER ||
        x->u.literal.v.h.u.i < 0)
        return -1;
    *out = x->u.literal.v.h.u.i;
    return 0;
}

int db_durable_pragma(ldb_stmt *s, bool *handled)
{
    const ast_stmt *st = s->ast->stmt;
    const char *name = st->u.pragma.name.name.str;
    ldb *db = s->db;
    bool reads = pragma_reads(st);
    int64_t n;
    *handled = true;
    if (strcasecmp(name, "synchronous") == 0) {
        if (reads)
            return pragma_row(s, store_sync_mode(db->store));
        int level = sync_level(st);
        if (level < 0)
            return db_error(db, LDB_ERROR, s->ast, st->u.pragma.name.name.off,
                            "PRAGMA synchronous takes OFF, NORMAL, FULL or 0, 1, 2");
        store_set_sync(db->store, level);
        return LDB_OK;
    }
    if (strcasecmp(name, "checkpoint_threshold") == 0) {
        if (reads)
            return pragma_row(s, (int64_t)store_checkpoint_threshold(db->store));
        if (threshold(st, &n))
            return db_error(db, LDB_ERROR, s->ast, st->u.pragma.name.name.off,
                            "PRAGMA checkpoint_threshold takes a number of bytes (0: never)");
        store_set_checkpoint_threshold(db->store, (uint64_t)n);
        return LDB_OK;
    }
    if (strcasecmp(name, "wal_checkpoint") == 0) /* reads no setting: not refused before */
        return ldb_checkpoint(db);
    *handled = false;
    return LDB_OK;
}
