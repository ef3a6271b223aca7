/*
 * store.c - the store object: open/close, the error message, the catalog
 * of tables and indexes, and DDL (see store.h).
 *
 * The catalog is an array in creation order searched linearly by name:
 * catalogs are small and names are resolved once per statement by the
 * SQL layer. DDL is logged like row writes: dropped tables and indexes
 * leave the catalog at once but stay allocated, owned by their log entry,
 * until commit; a rollback puts them back at their old positions (which
 * cannot need memory: the array never shrinks and later additions are
 * undone first).
 */
#include "storage/journal.h"
#include "storage/store_impl.h"

#include "base/interrupt.h"
#include "base/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int store_open(struct store **out)
{
    struct store *s = mem_calloc(1, sizeof *s);
    if (!s)
        return LDB_NOMEM;
    *out = s;
    return LDB_OK;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    if (s->txn != TXN_NONE) /* the tables show uncommitted writes: the log has the truth */
        store_keep_files(s);
    store_abandon_transaction(s);
    journal_close(s);
    for (size_t i = 0; i < s->tables.len; i++)
        table_free(s->tables.data[i]);
    vec_free(&s->tables);
    mem_free(s);
}

const char *store_errmsg(const struct store *s) { return s->errmsg; }

int store_error(struct store *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
    va_end(ap);
    return rc;
}

uint64_t store_schema_version(const struct store *s) { return s->schema_version; }

/* ---- catalog ---------------------------------------------------------------- */

size_t store_table_count(const struct store *s) { return s->tables.len; }
struct table *store_table_at(const struct store *s, size_t i) { return s->tables.data[i]; }

struct table *store_find_table(const struct store *s, const char *name)
{
    for (size_t i = 0; i < s->tables.len; i++)
        if (name_eq(s->tables.data[i]->name, name))
            return s->tables.data[i];
    return NULL;
}

struct table_index *store_find_index(const struct store *s, const char *name)
{
    for (size_t i = 0; i < s->tables.len; i++) {
        const struct table *t = s->tables.data[i];
        for (size_t j = 0; j < t->indexes.len; j++)
            if (name_eq(t->indexes.data[j]->name, name))
                return t->indexes.data[j];
    }
    return NULL;
}

int catalog_add(struct store *s, struct table *t) { return vec_push(&s->tables, t); }

void catalog_remove_at(struct store *s, size_t pos)
{
    memmove(&s->tables.data[pos], &s->tables.data[pos + 1],
            (s->tables.len - pos - 1) * sizeof *s->tables.data);
    s->tables.len--;
}

void catalog_insert_at(struct store *s, size_t pos, struct table *t)
{
    memmove(&s->tables.data[pos + 1], &s->tables.data[pos],
            (s->tables.len - pos) * sizeof *s->tables.data);
    s->tables.data[pos] = t;
    s->tables.len++;
}

static int name_free(struct store *s, const char *name)
{
    if (store_find_table(s, name))
        return store_error(s, LDB_ERROR, "table %s already exists", name);
    if (store_find_index(s, name))
        return store_error(s, LDB_ERROR, "there is already an index named %s", name);
    return LDB_OK;
}

static char *dup_opt(const char *str, bool *failed)
{
    if (!str)
        return NULL;
    char *d = mem_strndup(str, strlen(str));
    *failed |= d == NULL;
    return d;
}

void format_key_columns(const struct table *t, const uint32_t *cols, uint32_t n,
                        char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && at < len; i++) {
        int k = snprintf(buf + at, len - at, "%s%s.%s", i ? ", " : "", t->name,
                         t->schema.cols[cols[i]].name);
        at += k > 0 ? (size_t)k : 0;
    }
}

/* ---- tables ------------------------------------------------------------------- */

static int check_uniques(struct store *s, const struct table_def *def)
{
    for (uint32_t k = 0; k < def->nuniques; k++) {
        const struct unique_def *u = &def->uniques[k];
        if (u->ncols == 0 || u->ncols > INDEX_MAX_PARTS)
            return store_error(s, LDB_ERROR, "UNIQUE constraint %u of %s has %u columns",
                               k + 1, def->name, u->ncols);
        for (uint32_t i = 0; i < u->ncols; i++)
            if (u->cols[i] >= def->ncols)
                return store_error(s, LDB_MISUSE, "UNIQUE column %u out of range in %s",
                                   u->cols[i], def->name);
    }
    return LDB_OK;
}

/* An automatic index over cols: ascending, column collations. The one of
 * UNIQUE constraint k is unique; the one of the primary key (k ==
 * UINT32_MAX) is not, since the key's own hash already refuses
 * duplicates (and says so as a key violation). */
static int add_automatic_index(struct store *s, struct table *t, const uint32_t *cols,
                               uint32_t ncols, uint32_t k)
{
    struct key_part parts[INDEX_MAX_PARTS];
    for (uint32_t i = 0; i < ncols; i++)
        parts[i] = (struct key_part){ cols[i], false, key_part_default_nulls_first(false),
                                      t->schema.cols[cols[i]].coll };
    size_t len = strlen(t->name) + 32; /* a long table name must not be cut */
    char *name = mem_alloc(len);
    if (!name)
        return LDB_NOMEM;
    if (k == UINT32_MAX)
        snprintf(name, len, "autoindex_%s_key", t->name);
    else
        snprintf(name, len, "autoindex_%s_%u", t->name, k + 1);
    int rc = name_free(s, name);
    if (rc != LDB_OK) {
        mem_free(name);
        return rc;
    }
    struct index_def d = { name, INDEX_ORDERED, k != UINT32_MAX, parts, ncols, NULL };
    struct table_index *ix = mem_alloc(sizeof *ix);
    if (!ix || vec_push(&t->indexes, ix)) {
        mem_free(ix);
        mem_free(name);
        return LDB_NOMEM;
    }
    rc = index_init(ix, t, &d);
    mem_free(name);
    if (rc != LDB_OK) {
        t->indexes.len--;
        mem_free(ix);
        return rc;
    }
    ix->automatic = true;
    return LDB_OK;
}

/* Declared columns marked hidden; a declared key that may hold NULL. */
static void apply_opts(struct schema *sc, const struct table_def *def,
                       const struct table_opts *o)
{
    for (uint32_t i = 0; o->hidden && i < def->ncols; i++)
        sc->cols[i].hidden |= o->hidden[i];
    if (!o->key_nulls || def->npk == 0)
        return;
    sc->rowid_auto = false;
    for (uint32_t i = 0; i < sc->npk; i++)
        sc->cols[sc->pk[i]].not_null = def->cols[sc->pk[i]].not_null;
}

static int new_table(struct store *s, const struct table_def *def,
                     const struct table_opts *opts, struct table **out)
{
    struct table *t = mem_calloc(1, sizeof *t);
    if (!t)
        return LDB_NOMEM;
    int rc = schema_build(&t->schema, def, s->errmsg, sizeof s->errmsg);
    if (rc != LDB_OK) {
        mem_free(t);
        return rc;
    }
    if (opts)
        apply_opts(&t->schema, def, opts);
    t->key_nulls = opts && opts->key_nulls;
    t->temp = def->temp;
    bool failed = false;
    t->name = dup_opt(def->name, &failed);
    t->sql = dup_opt(def->sql, &failed);
    t->store = s;
    hmap_init(&t->rows);
    rc = failed ? LDB_NOMEM : LDB_OK;
    for (uint32_t k = 0; k < def->nuniques && rc == LDB_OK; k++)
        rc = add_automatic_index(s, t, def->uniques[k].cols, def->uniques[k].ncols, k);
    if (rc == LDB_OK && def->key_index && def->npk > 1 && def->npk <= INDEX_MAX_PARTS)
        rc = add_automatic_index(s, t, t->schema.pk, t->schema.npk, UINT32_MAX);
    if (rc != LDB_OK) {
        table_free(t);
        return rc;
    }
    *out = t;
    return LDB_OK;
}

int store_create_table(struct store *s, const struct table_def *def, struct table **out)
{
    return store_create_table_opts(s, def, NULL, out);
}

int store_create_table_opts(struct store *s, const struct table_def *def,
                            const struct table_opts *opts, struct table **out)
{
    int rc = store_ready_to_change(s);
    if (rc == LDB_OK && !def->name)
        rc = store_error(s, LDB_MISUSE, "table definition without a name");
    if (rc == LDB_OK)
        rc = name_free(s, def->name);
    if (rc == LDB_OK)
        rc = check_uniques(s, def);
    if (rc == LDB_OK && store_log_reserve(s))
        rc = LDB_NOMEM;
    struct table *t = NULL;
    if (rc == LDB_OK)
        rc = new_table(s, def, opts, &t);
    if (rc == LDB_OK && catalog_add(s, t)) {
        table_free(t);
        rc = LDB_NOMEM;
    }
    if (rc == LDB_NOMEM)
        return store_error(s, rc, "out of memory");
    if (rc != LDB_OK)
        return rc;
    store_log(s, (struct undo_entry){ .kind = UNDO_CREATE_TABLE,
                                      .pos = (uint32_t)(s->tables.len - 1), .t = t });
    s->schema_version++;
    if (out)
        *out = t;
    return LDB_OK;
}

static size_t catalog_position(const struct store *s, const struct table *t)
{
    size_t i = 0;
    while (s->tables.data[i] != t)
        i++;
    return i;
}

int store_check_writable(struct store *s, struct table *t)
{
    if (t->dropped)
        return store_error(s, LDB_MISUSE, "table %s was dropped", t->name);
    if (s->internal)
        return LDB_OK;
    if (t->readonly && t->loading != TABLE_LOCAL && !s->optimistic)
        return store_error(s, LDB_ERROR,
                           "cannot modify table %s: a source loads it; write it in an "
                           "optimistic transaction, or with its sync transactions",
                           t->name);
    if (table_is_view_store(t))
        return store_error(s, LDB_ERROR, "table %s may not be modified", t->name);
    if (t->pending && !s->optimistic)
        return store_error(s, LDB_ERROR,
                           "cannot modify table %s outside an optimistic transaction while "
                           "optimistic writes to it are pending",
                           t->name);
    return LDB_OK;
}

void store_set_optimistic(struct store *s, bool on) { s->optimistic = on; }

int store_drop_table(struct store *s, struct table *t)
{
    int rc = store_ready_to_change(s);
    if (rc == LDB_OK)
        rc = store_check_drop(s, t);
    if (rc == LDB_OK)
        rc = store_check_writable(s, t);
    if (rc != LDB_OK)
        return rc;
    if (store_log_reserve(s))
        return store_error(s, LDB_NOMEM, "out of memory");
    size_t pos = catalog_position(s, t);
    catalog_remove_at(s, pos);
    t->dropped = true;
    store_log(s, (struct undo_entry){ .kind = UNDO_DROP_TABLE, .pos = (uint32_t)pos, .t = t });
    s->schema_version++;
    return LDB_OK;
}

/* ---- indexes -------------------------------------------------------------------- */

static int check_index_def(struct store *s, const struct table *t, const struct index_def *def)
{
    if (!def->name)
        return store_error(s, LDB_MISUSE, "index definition without a name");
    if (def->nparts == 0 || def->nparts > INDEX_MAX_PARTS)
        return store_error(s, LDB_ERROR, "index %s must have 1 to %d columns", def->name,
                           INDEX_MAX_PARTS);
    for (uint32_t i = 0; i < def->nparts; i++)
        if (def->parts[i].col >= t->schema.ncols)
            return store_error(s, LDB_ERROR, "index %s: column %u out of range in %s",
                               def->name, def->parts[i].col, t->name);
    if (def->kind != INDEX_ORDERED && def->kind != INDEX_HASH)
        return store_error(s, LDB_MISUSE, "index %s: unknown kind", def->name);
    return name_free(s, def->name);
}

/* Fills ix from the table's rows. */
static int fill_index(struct store *s, struct table *t, struct table_index *ix)
{
    size_t n = table_count(t), i = 0;
    row **rows = mem_alloc((n ? n : 1) * sizeof *rows);
    if (!rows)
        return LDB_NOMEM;
    struct table_scan sc = table_scan_begin(t);
    for (row *r; (r = table_scan_next(&sc));)
        rows[i++] = r;
    row *conflict = NULL;
    int rc = intr_tick_n((int64_t)n); /* ldb_interrupt stops a long CREATE INDEX */
    if (rc == LDB_OK)
        rc = index_build(ix, rows, n, &conflict);
    mem_free(rows);
    if (rc == LDB_CONSTRAINT) {
        uint32_t cols[INDEX_MAX_PARTS];
        char buf[400];
        for (uint32_t k = 0; k < ix->nparts; k++)
            cols[k] = ix->parts[k].col;
        format_key_columns(t, cols, ix->nparts, buf, sizeof buf);
        return store_error(s, rc, "UNIQUE constraint failed: %s", buf);
    }
    return rc;
}

int store_create_index(struct store *s, struct table *t, const struct index_def *def,
                       struct table_index **out)
{
    int rc = store_ready_to_change(s);
    if (rc == LDB_OK && t->dropped)
        rc = store_error(s, LDB_MISUSE, "table %s was dropped", t->name);
    if (rc == LDB_OK)
        rc = check_index_def(s, t, def);
    if (rc != LDB_OK)
        return rc;
    struct table_index *ix = mem_alloc(sizeof *ix);
    if (!ix || store_log_reserve(s) || vec_reserve(&t->indexes, 1) ||
        index_init(ix, t, def) != LDB_OK) {
        mem_free(ix);
        return store_error(s, LDB_NOMEM, "out of memory");
    }
    rc = fill_index(s, t, ix);
    if (rc != LDB_OK) {
        index_destroy(ix);
        mem_free(ix);
        if (rc == LDB_NOMEM || rc == LDB_INTERRUPT) /* no message of their own */
            return store_error(s, rc, "%s", ldb_errstr(rc));
        return rc;
    }
    t->indexes.data[t->indexes.len++] = ix;
    store_log(s, (struct undo_entry){ .kind = UNDO_CREATE_INDEX,
                                      .pos = (uint32_t)(t->indexes.len - 1), .t = t,
                                      .a.ix = ix });
    s->schema_version++;
    if (out)
        *out = ix;
    return LDB_OK;
}

int store_drop_index(struct store *s, struct table_index *ix)
{
    int rc = store_ready_to_change(s);
    if (rc != LDB_OK)
        return rc;
    if (ix->table->dropped)
        return store_error(s, LDB_MISUSE, "table %s was dropped", ix->table->name);
    if (ix->automatic)
        return store_error(s, LDB_ERROR, "index associated with UNIQUE or PRIMARY KEY "
                                         "constraint cannot be dropped");
    if (store_log_reserve(s))
        return store_error(s, LDB_NOMEM, "out of memory");
    struct table *t = ix->table;
    size_t pos = 0;
    while (t->indexes.data[pos] != ix)
        pos++;
    memmove(&t->indexes.data[pos], &t->indexes.data[pos + 1],
            (t->indexes.len - pos - 1) * sizeof *t->indexes.data);
    t->indexes.len--;
    store_log(s, (struct undo_entry){ .kind = UNDO_DROP_INDEX, .pos = (uint32_t)pos, .t = t,
                                      .a.ix = ix });
    s->schema_version++;
    return store_notify_index_dropped(s, t, ix);
}

/* ---- accounting and checks ----------------------------------------------------------- */

static size_t delta_bytes(const struct delta *d)
{
    return d ? sizeof *d + d->ntables * sizeof *d->tables + d->nchanges * sizeof *d->changes : 0;
}

size_t store_log_bytes(const struct store *s)
{
    size_t n = s->undo.cap * sizeof *s->undo.data + s->frames.cap * sizeof *s->frames.data;
    for (size_t i = 0; i < s->subs.len; i++) {
        const struct subscription *sub = s->subs.data[i];
        n += sizeof *sub + sub->consumed.cap * sizeof *sub->consumed.data;
        for (size_t j = 0; j < sub->consumed.len; j++)
            n += delta_bytes(sub->consumed.data[j]);
    }
    return n;
}

const char *store_check(const struct store *s)
{
    for (size_t i = 0; i < s->tables.len; i++) {
        const struct table *t = s->tables.data[i];
        if (t->dropped || t->store != s)
            return "catalog holds a dropped or foreign table";
        for (size_t j = 0; j < t->indexes.len; j++)
            if (t->indexes.data[j]->table != t)
                return "index attached to the wrong table";
        const char *err = table_check(t);
        if (err)
            return err;
    }
    return NULL;
}
