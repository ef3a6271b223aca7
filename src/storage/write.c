/*
 * write.c - the logged row writes the SQL layer calls: insert, update,
 * delete (see table.h). Each builds the new row (affinity, defaults of
 * hidden columns, automatic rowid), checks NOT NULL, changes the table
 * through table.c (atomic) and appends one undo entry, for which room is
 * reserved first so that nothing can fail after the table changed. A
 * write that removed index entries lists its table for settling at the
 * end of the transaction (store_note_removals).
 */
#include "storage/store_impl.h"

#include <stdio.h>

static int check_write(struct store *s, struct table *t)
{
    int rc = store_ready_to_change(s);
    return rc != LDB_OK ? rc : store_check_writable(s, t);
}

static int type_error(struct store *s, const struct table *t, uint32_t col, const value *v)
{
    char desc[96];
    format_value_for_error(v, desc, sizeof desc);
    const struct column *c = &t->schema.cols[col];
    return store_error(s, LDB_TYPE, "cannot store %s in %s column %s.%s", desc,
                       col_type_name(c->type), t->name, c->name);
}

/* Fills r's declared columns from vals, converted to their types. */
static int fill_visible(struct store *s, const struct table *t, row *r, const value *vals)
{
    for (uint32_t i = 0; i < t->schema.nvisible; i++) {
        int rc = column_coerce(&t->schema.cols[i], &vals[i], &r->cols[i]);
        if (rc == LDB_TYPE)
            return type_error(s, t, i, &vals[i]);
        if (rc != LDB_OK)
            return store_error(s, rc, "out of memory");
    }
    return LDB_OK;
}

static int check_not_null(struct store *s, const struct table *t, const row *r)
{
    for (uint32_t i = 0; i < t->schema.ncols; i++) {
        const struct column *c = &t->schema.cols[i];
        if (c->not_null && value_is_null(&r->cols[i]))
            return store_error(s, LDB_CONSTRAINT, "NOT NULL constraint failed: %s.%s",
                               t->name, c->name);
    }
    return LDB_OK;
}

/* An automatic key left NULL gets rowid_max + 1. */
static int assign_rowid(struct store *s, struct table *t, row *r)
{
    value *key = &r->cols[t->schema.pk[0]];
    if (!t->schema.rowid_auto || !value_is_null(key))
        return LDB_OK;
    if (t->rowid_max == INT64_MAX)
        return store_error(s, LDB_ERROR, "no rowid left in %s", t->name);
    *key = value_int(t->rowid_max + 1);
    return LDB_OK;
}

/* The largest automatic key after storing r. */
static int64_t raised_rowid(const struct table *t, const row *r)
{
    const value *key = &r->cols[t->schema.pk[0]];
    if (t->schema.rowid_auto && value_type(key) == LDB_INTEGER && key->h.u.i > t->rowid_max)
        return key->h.u.i;
    return t->rowid_max;
}

static int link_error(struct store *s, const struct table *t, int rc, int where)
{
    if (rc != LDB_CONSTRAINT)
        return store_error(s, rc, rc == LDB_NOMEM ? "out of memory" : "internal error in %s",
                           t->name);
    uint32_t cols[INDEX_MAX_PARTS];
    const uint32_t *key = t->schema.pk;
    uint32_t n = t->schema.npk;
    if (where >= 0) {
        const struct table_index *ix = t->indexes.data[where];
        for (uint32_t k = 0; k < ix->nparts; k++)
            cols[k] = ix->parts[k].col;
        key = cols;
        n = ix->nparts;
    }
    char buf[400];
    format_key_columns(t, key, n, buf, sizeof buf);
    return store_error(s, rc, "UNIQUE constraint failed: %s", buf);
}

/* A new row for t with the declared columns from vals and the hidden
 * ones from like (or NULL). */
static int make_row(struct store *s, struct table *t, const value *vals, const row *like,
                    row **out)
{
    row *r = row_alloc(t->schema.ncols);
    if (!r)
        return store_error(s, LDB_NOMEM, "out of memory");
    int rc = fill_visible(s, t, r, vals);
    for (uint32_t i = t->schema.nvisible; like && i < t->schema.ncols; i++)
        r->cols[i] = value_copy(&like->cols[i]);
    if (rc != LDB_OK) {
        row_release(r);
        return rc;
    }
    *out = r;
    return LDB_OK;
}

int table_insert(struct store *s, struct table *t, const value *vals, row **out)
{
    row *dummy;
    out = out ? out : &dummy;
    *out = NULL;
    int rc = check_write(s, t);
    if (rc == LDB_OK && store_log_reserve(s))
        rc = store_error(s, LDB_NOMEM, "out of memory");
    row *r = NULL;
    if (rc == LDB_OK)
        rc = make_row(s, t, vals, NULL, &r);
    if (rc == LDB_OK)
        rc = assign_rowid(s, t, r);
    if (rc == LDB_OK)
        rc = check_not_null(s, t, r);
    int where;
    if (rc == LDB_OK && (rc = table_link(t, r, out, &where)) != LDB_OK)
        rc = link_error(s, t, rc, where);
    if (rc != LDB_OK) {
        row_release(r);
        return rc;
    }
    store_log(s, (struct undo_entry){ .kind = UNDO_INSERT, .t = t, .a.aux = t->rowid_max,
                                      .new_row = r });
    t->rowid_max = raised_rowid(t, r);
    *out = r;
    return LDB_OK;
}

static int check_current(struct store *s, struct table *t, const row *old)
{
    if (table_lookup_row(t, old) != old)
        return store_error(s, LDB_MISUSE, "row is not a current row of %s", t->name);
    return LDB_OK;
}

int table_update(struct store *s, struct table *t, row *old, const value *vals, row **out)
{
    row *dummy;
    out = out ? out : &dummy;
    *out = NULL;
    int rc = check_write(s, t);
    if (rc == LDB_OK)
        rc = check_current(s, t, old);
    if (rc == LDB_OK && vec_reserve(&s->undo, 2))
        rc = store_error(s, LDB_NOMEM, "out of memory");
    row *r = NULL;
    if (rc == LDB_OK)
        rc = make_row(s, t, vals, old, &r);
    if (rc == LDB_OK)
        rc = check_not_null(s, t, r);
    if (rc == LDB_OK && row_identical(old, r)) {
        row_release(r);
        *out = old;
        return LDB_OK;
    }
    int where;
    if (rc == LDB_OK && (rc = table_relink(t, old, r, out, &where)) != LDB_OK)
        rc = link_error(s, t, rc, where);
    if (rc != LDB_OK) {
        row_release(r);
        return rc;
    }
    store_note_removals(s, t);
    store_log(s, (struct undo_entry){ .kind = UNDO_UPDATE, .t = t, .a.old = old, .new_row = r });
    int64_t raised = raised_rowid(t, r);
    if (raised != t->rowid_max) {
        store_log(s, (struct undo_entry){ .kind = UNDO_ROWID, .t = t, .a.aux = t->rowid_max });
        t->rowid_max = raised;
    }
    *out = r;
    return LDB_OK;
}

int table_delete(struct store *s, struct table *t, row *old)
{
    int rc = check_write(s, t);
    if (rc == LDB_OK)
        rc = check_current(s, t, old);
    if (rc == LDB_OK && store_log_reserve(s))
        rc = store_error(s, LDB_NOMEM, "out of memory");
    if (rc != LDB_OK)
        return rc;
    table_unlink(t, old);
    store_note_removals(s, t);
    store_log(s, (struct undo_entry){ .kind = UNDO_DELETE, .t = t, .a.old = old });
    return LDB_OK;
}
