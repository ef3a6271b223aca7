/*
 * recover.c - applying a stream of durable operations (journal.h) to a
 * store while it opens: the snapshot's, then each log record's.
 *
 * No subscriber watches the store yet and nothing can be rolled back to,
 * so rows are linked and unlinked directly (table.h physical changes),
 * without the undo log: a 1M-row snapshot costs no log entries. Catalog
 * operations go through the store's own DDL, in one statement each, so
 * tables and indexes are built exactly as when they were made. A failure
 * leaves a half-recovered store, which the caller throws away.
 *
 * Every decoded definition and row is checked against the tables as they
 * are (the table exists, the key is there, the row fits): a record that
 * verifies its checksum but does not fit is damage all the same
 * (LDB_CORRUPT), never a crash.
 */
#include "storage/journal.h"

#include "base/mem.h"

#include <stdio.h>
#include <string.h>

struct replay {
    struct store *s;
    struct dec d;
    struct table *cur;
    struct table *bulk;        /* between BULK_BEGIN and BULK_END: its rows */
    VEC(row *) rows;           /* ...in the order they came: references until
                                  linked, all at once (then borrowed) */
    bool linked;
};

static int corrupt(struct replay *r, const char *what)
{
    return store_error(r->s, LDB_CORRUPT, "database file is damaged: %s", what);
}

/* A NUL-terminated copy of a string field (caller frees); NULL for a NULL
 * field; *rc LDB_NOMEM when the copy failed. */
static char *dec_cstr(struct dec *d, int *rc)
{
    size_t n;
    const char *s = dec_str(d, &n);
    if (!s)
        return NULL;
    char *c = mem_strndup(s, n);
    if (!c)
        *rc = LDB_NOMEM;
    return c;
}

/* ---- catalog operations ----------------------------------------------------------- */

/* A decoded table definition; arrays sized from the record, which bounds
 * them (every column and constraint takes bytes of it). */
struct table_decl {
    struct table_def def;
    struct column_def *cols;
    bool *hidden;
    char **names;
    uint32_t pk[SCHEMA_MAX_KEY];
    struct unique_def *uniques;
    uint32_t *ucols;           /* nuniques x INDEX_MAX_PARTS */
    char *name, *sql;
    uint64_t flags;
};

static void decl_free(struct table_decl *t)
{
    for (uint32_t i = 0; t->names && i < t->def.ncols; i++) {
        mem_free(t->names[i]);
        value_release(&t->cols[i].dflt);
    }
    mem_free(t->cols);
    mem_free(t->hidden);
    mem_free(t->names);
    mem_free(t->uniques);
    mem_free(t->ucols);
    mem_free(t->name);
    mem_free(t->sql);
}

/* n items of size bytes each, when the record has at least n bytes left. */
static void *dec_array(struct dec *d, uint64_t n, size_t size, int *rc)
{
    if (n > (uint64_t)(d->end - d->p)) {
        d->bad = true;
        return NULL;
    }
    void *p = mem_calloc((size_t)n + 1, size);
    if (!p)
        *rc = LDB_NOMEM;
    return p;
}

static int decode_columns(struct dec *d, struct table_decl *t)
{
    int rc = LDB_OK;
    uint64_t n = dec_varint(d);
    t->cols = dec_array(d, n, sizeof *t->cols, &rc);
    t->hidden = dec_array(d, n, sizeof *t->hidden, &rc);
    t->names = dec_array(d, n, sizeof *t->names, &rc);
    if (rc || !t->cols || !t->hidden || !t->names || n == 0)
        return rc ? rc : LDB_CORRUPT;
    for (uint32_t i = 0; i < n && rc == LDB_OK && !d->bad; i++) {
        struct column_def *c = &t->cols[i];
        t->def.ncols = i + 1;
        c->dflt = value_null();
        c->name = t->names[i] = dec_cstr(d, &rc);
        c->type = (enum col_type)dec_byte(d);
        c->coll = (enum ldb_collation)dec_byte(d);
        uint8_t f = dec_byte(d);
        c->not_null = f & 1;
        t->hidden[i] = f & 2;
        c->has_default = f & 4;
        if (c->has_default && rc == LDB_OK)
            rc = dec_value(d, &c->dflt);
        if (rc == LDB_OK && (!c->name || c->type > COL_NUMERIC || c->coll > LDB_COLL_RTRIM))
            return LDB_CORRUPT;
    }
    return rc ? rc : d->bad ? LDB_CORRUPT : LDB_OK;
}

static int decode_keys(struct dec *d, struct table_decl *t)
{
    uint64_t npk = dec_varint(d);
    if (npk > SCHEMA_MAX_KEY)
        return LDB_CORRUPT;
    t->def.npk = (uint32_t)npk;
    for (uint32_t i = 0; i < npk; i++)
        if ((t->pk[i] = (uint32_t)dec_varint(d)) >= t->def.ncols)
            return LDB_CORRUPT;
    int rc = LDB_OK;
    uint64_t nu = dec_varint(d);
    t->uniques = dec_array(d, nu, sizeof *t->uniques, &rc);
    t->ucols = dec_array(d, nu, INDEX_MAX_PARTS * sizeof *t->ucols, &rc);
    if (rc || !t->uniques || !t->ucols)
        return rc ? rc : LDB_CORRUPT;
    t->def.nuniques = (uint32_t)nu;
    for (uint32_t k = 0; k < nu; k++) {
        uint64_t nc = dec_varint(d);
        uint32_t *cols = t->ucols + (size_t)k * INDEX_MAX_PARTS;
        if (nc == 0 || nc > INDEX_MAX_PARTS)
            return LDB_CORRUPT;
        for (uint32_t i = 0; i < nc; i++)
            if ((cols[i] = (uint32_t)dec_varint(d)) >= t->def.ncols)
                return LDB_CORRUPT;
        t->uniques[k] = (struct unique_def){ cols, (uint32_t)nc };
    }
    return d->bad ? LDB_CORRUPT : LDB_OK;
}

/* Runs one catalog change in its own statement (autocommit). */
static int in_statement(struct replay *r, int rc)
{
    return store_stmt_end(r->s, rc);
}

static int create_table(struct replay *r)
{
    struct table_decl decl = { 0 }, *t = &decl;
    int rc = LDB_OK;
    t->name = dec_cstr(&r->d, &rc);
    t->sql = dec_cstr(&r->d, &rc);
    t->flags = dec_varint(&r->d);
    if (rc == LDB_OK)
        rc = decode_columns(&r->d, t);
    if (rc == LDB_OK)
        rc = decode_keys(&r->d, t);
    if (rc == LDB_OK && !t->name)
        rc = LDB_CORRUPT;
    if (rc == LDB_OK && (t->def.npk == 0) != ((t->flags & 8) != 0))
        rc = LDB_CORRUPT;
    struct table *made = NULL;
    if (rc == LDB_OK) {
        t->def = (struct table_def){ t->name, t->cols, t->def.ncols, t->pk, t->def.npk,
                                     t->uniques, t->def.nuniques, t->sql, (t->flags & 4) != 0,
                                     false };
        struct table_opts o = { t->hidden, (t->flags & 2) != 0 };
        if ((rc = store_stmt_begin(r->s)) == LDB_OK)
            rc = in_statement(r, store_create_table_opts(r->s, &t->def, &o, &made));
        if (rc == LDB_OK)
            table_set_readonly(made, (t->flags & 1) != 0);
    }
    decl_free(t);
    if (rc == LDB_CORRUPT || (rc != LDB_OK && rc != LDB_NOMEM))
        return corrupt(r, "a table definition does not decode");
    return rc;
}

static int create_index(struct replay *r)
{
    int rc = LDB_OK;
    char *tname = dec_cstr(&r->d, &rc), *name = dec_cstr(&r->d, &rc);
    char *sql = dec_cstr(&r->d, &rc);
    struct key_part parts[INDEX_MAX_PARTS];
    struct index_def def = { name, (enum index_kind)dec_byte(&r->d), dec_byte(&r->d) != 0,
                             parts, (uint32_t)dec_varint(&r->d), sql };
    struct table *t = tname ? store_find_table(r->s, tname) : NULL;
    if (rc == LDB_OK && (!t || !name || def.nparts == 0 || def.nparts > INDEX_MAX_PARTS))
        rc = LDB_CORRUPT;
    for (uint32_t k = 0; rc == LDB_OK && k < def.nparts; k++) {
        parts[k].col = (uint32_t)dec_varint(&r->d);
        uint8_t f = dec_byte(&r->d);
        parts[k].desc = f & 1;
        parts[k].nulls_first = (f & 2) != 0;
        parts[k].coll = (enum ldb_collation)dec_byte(&r->d);
        if (parts[k].coll > LDB_COLL_RTRIM)
            rc = LDB_CORRUPT;
    }
    if (rc == LDB_OK && r->d.bad)
        rc = LDB_CORRUPT;
    if (rc == LDB_OK && (rc = store_stmt_begin(r->s)) == LDB_OK)
        rc = in_statement(r, store_create_index(r->s, t, &def, NULL));
    mem_free(tname);
    mem_free(name);
    mem_free(sql);
    if (rc != LDB_OK && rc != LDB_NOMEM)
        return corrupt(r, "an index definition does not decode or fit its table");
    return rc;
}

static int drop(struct replay *r, bool table)
{
    int rc = LDB_OK;
    char *name = dec_cstr(&r->d, &rc);
    struct table *t = table && name ? store_find_table(r->s, name) : NULL;
    struct table_index *ix = !table && name ? store_find_index(r->s, name) : NULL;
    mem_free(name);
    if (rc)
        return rc;
    if (!t && !ix)
        return corrupt(r, "a dropped table or index does not exist");
    if (t == r->cur)
        r->cur = NULL;
    if ((rc = store_stmt_begin(r->s)) != LDB_OK)
        return rc;
    store_enter_internal(r->s);
    rc = table ? store_drop_table(r->s, t) : store_drop_index(r->s, ix);
    store_leave_internal(r->s);
    rc = in_statement(r, rc);
    return rc == LDB_OK || rc == LDB_NOMEM ? rc : corrupt(r, "a drop does not apply");
}

static int set_table(struct replay *r)
{
    int rc = LDB_OK;
    char *name = dec_cstr(&r->d, &rc);
    r->cur = name ? store_find_table(r->s, name) : NULL;
    mem_free(name);
    if (rc)
        return rc;
    return r->cur ? LDB_OK : corrupt(r, "rows of a table that does not exist");
}

/* ---- row operations ---------------------------------------------------------------- */

/* The current row whose key is encoded next. */
static int find_row(struct replay *r, row **out)
{
    const struct schema *sc = &r->cur->schema;
    value key[SCHEMA_MAX_KEY] = { 0 };
    int rc = LDB_OK;
    uint32_t got = 0;
    for (; got < sc->npk && rc == LDB_OK; got++)
        rc = dec_value(&r->d, &key[got]);
    *out = rc == LDB_OK ? table_lookup(r->cur, key) : NULL;
    for (uint32_t i = 0; i < got; i++)
        value_release(&key[i]);
    if (rc == LDB_OK && !*out)
        return corrupt(r, "a row to change is not there");
    return rc == LDB_CORRUPT ? corrupt(r, "a key does not decode") : rc;
}

static int decode_row(struct replay *r, row **out)
{
    uint32_t n = r->cur->schema.ncols;
    row *x = row_alloc(n);
    if (!x)
        return LDB_NOMEM;
    int rc = LDB_OK;
    for (uint32_t i = 0; i < n && rc == LDB_OK; i++)
        rc = dec_value(&r->d, &x->cols[i]);
    if (rc) {
        row_release(x);
        return rc == LDB_CORRUPT ? corrupt(r, "a row does not decode") : rc;
    }
    *out = x;
    return LDB_OK;
}

static int link_row(struct replay *r, row *old)
{
    row *x = NULL, *conflict;
    int where, rc = decode_row(r, &x);
    if (rc)
        return rc;
    if (!old && r->bulk == r->cur) {
        if ((rc = vec_reserve(&r->rows, 1)) == LDB_OK) {
            r->rows.data[r->rows.len++] = x; /* linked with the others */
            return LDB_OK;
        }
    } else {
        rc = old ? table_relink(r->cur, old, x, &conflict, &where)
                 : table_link(r->cur, x, &conflict, &where);
    }
    if (rc) {
        row_release(x);
        return rc == LDB_NOMEM ? rc : corrupt(r, "a row conflicts with a stored one");
    }
    row_release(old); /* the table's reference to it came back */
    return LDB_OK;
}

static int row_op(struct replay *r, uint8_t op)
{
    if (!r->cur)
        return corrupt(r, "a row operation names no table");
    row *old = NULL;
    int rc = op == OP_INSERT ? LDB_OK : find_row(r, &old);
    if (rc)
        return rc;
    if (op == OP_DELETE) {
        table_unlink(r->cur, old);
        row_release(old);
        return LDB_OK;
    }
    return link_row(r, old);
}

static int set_rowid(struct replay *r)
{
    value v;
    int rc = dec_value(&r->d, &v);
    if (rc == LDB_OK && value_type(&v) != LDB_INTEGER)
        rc = LDB_CORRUPT;
    if (rc == LDB_OK)
        r->cur->rowid_max = v.h.u.i;
    value_release(&v);
    return rc == LDB_CORRUPT ? corrupt(r, "a rowid does not decode") : rc;
}

/* ---- bulk loads (snapshots) --------------------------------------------------------- */

static int bulk_begin(struct replay *r)
{
    if (!r->cur || r->bulk || table_count(r->cur) != 0)
        return corrupt(r, "a bulk load of a table that is not empty");
    r->bulk = r->cur;
    r->rows.len = 0;
    r->linked = false;
    return LDB_OK;
}

/* The bulk's rows into its key table, once they all came (before the
 * first index is built). */
static int bulk_link(struct replay *r)
{
    if (r->linked)
        return LDB_OK;
    row *conflict;
    int rc = table_link_unindexed(r->bulk, r->rows.data, r->rows.len, &conflict);
    if (rc)
        return rc == LDB_NOMEM ? rc : corrupt(r, "a row conflicts with a stored one");
    r->linked = true;
    return LDB_OK;
}

/* The bulk's rows not linked (a failed load): the replay's to release. */
static void bulk_drop(struct replay *r)
{
    for (size_t i = 0; r->bulk && !r->linked && i < r->rows.len; i++)
        row_release(r->rows.data[i]);
    r->rows.len = 0;
}

/* The index at the position that follows, if it is the bulk table's and
 * still empty. */
static struct table_index *bulk_index(struct replay *r, int *rc)
{
    uint64_t i = dec_varint(&r->d);
    struct table *t = r->bulk;
    *rc = LDB_OK;
    if (!t || i >= t->indexes.len || index_count(t->indexes.data[i]) != 0)
        return NULL;
    *rc = bulk_link(r);
    return *rc ? NULL : t->indexes.data[i];
}

/* Builds an ordered index from the bulk's rows in their order (mode 0) or
 * in the order of the ordinals that follow (mode 1). */
static int index_order(struct replay *r)
{
    int rc;
    struct table_index *ix = bulk_index(r, &rc);
    uint8_t mode = dec_byte(&r->d);
    if (rc)
        return rc;
    if (!ix || ix->kind != INDEX_ORDERED || mode > 1)
        return corrupt(r, "an index order names no index of the table");
    size_t n = r->rows.len;
    row **order = r->rows.data;
    if (mode == 1 && !(order = mem_alloc((n ? n : 1) * sizeof *order)))
        return LDB_NOMEM;
    for (size_t i = 0; mode == 1 && i < n; i++) {
        uint64_t k = dec_varint(&r->d);
        order[i] = k < n ? r->rows.data[k] : r->rows.data[0];
        r->d.bad |= k >= n;
    }
    rc = r->d.bad ? LDB_CORRUPT : index_build_sorted(ix, order, n);
    if (mode == 1)
        mem_free(order);
    if (rc == LDB_NOMEM)
        return rc;
    return rc ? corrupt(r, "an index's order is not its rows' order") : LDB_OK;
}

static int index_fill(struct replay *r)
{
    int rc;
    struct table_index *ix = bulk_index(r, &rc);
    if (rc)
        return rc;
    if (!ix || ix->kind != INDEX_HASH)
        return corrupt(r, "an index fill names no hash index of the table");
    row *conflict;
    rc = index_build(ix, r->rows.data, r->rows.len, &conflict);
    if (rc == LDB_NOMEM)
        return rc;
    return rc ? corrupt(r, "a hash index does not fit its rows") : LDB_OK;
}

static int bulk_end(struct replay *r)
{
    struct table *t = r->bulk;
    if (!t)
        return corrupt(r, "a bulk load ends that did not begin");
    int rc = bulk_link(r); /* a table without indexes */
    if (rc)
        return rc;
    for (size_t i = 0; i < t->indexes.len; i++)
        if (index_count(t->indexes.data[i]) != table_count(t))
            return corrupt(r, "an index was not rebuilt");
    r->bulk = NULL;
    return LDB_OK;
}

static int one_op(struct replay *r)
{
    uint8_t op = dec_byte(&r->d);
    switch (op) {
    case OP_TABLE: return set_table(r);
    case OP_CREATE_TABLE: return create_table(r);
    case OP_DROP_TABLE: return drop(r, true);
    case OP_CREATE_INDEX: return create_index(r);
    case OP_DROP_INDEX: return drop(r, false);
    case OP_INSERT:
    case OP_DELETE:
    case OP_UPDATE: return row_op(r, op);
    case OP_BULK_BEGIN: return bulk_begin(r);
    case OP_INDEX_ORDER: return index_order(r);
    case OP_INDEX_FILL: return index_fill(r);
    case OP_BULK_END: return bulk_end(r);
    case OP_ROWID:
        if (!r->cur)
            return corrupt(r, "a rowid names no table");
        return set_rowid(r);
    default: return corrupt(r, "an unknown operation");
    }
}

/* Removals leave index trees to settle (table.h); no undo can come. */
static void settle_all(struct store *s)
{
    for (size_t i = 0; i < s->tables.len; i++)
        if (table_unsettled(s->tables.data[i]))
            table_settle(s->tables.data[i]);
}

int recover_apply(struct store *s, const unsigned char *p, size_t n)
{
    struct replay r = { s, { p, p + n, false }, NULL, NULL, VEC_INIT, false };
    int rc = LDB_OK;
    while (rc == LDB_OK && r.d.p < r.d.end) {
        uint8_t op = *r.d.p;
        if (r.bulk && op != OP_INSERT && op != OP_INDEX_ORDER && op != OP_INDEX_FILL &&
            op != OP_BULK_END)
            rc = corrupt(&r, "a bulk load is cut by another operation");
        else
            rc = one_op(&r);
        if (rc == LDB_OK && r.d.bad)
            rc = corrupt(&r, "an operation runs past its record");
    }
    if (rc == LDB_OK && r.bulk)
        rc = corrupt(&r, "a bulk load does not end");
    bulk_drop(&r);
    vec_free(&r.rows);
    settle_all(s);
    if (rc == LDB_NOMEM)
        store_error(s, rc, "out of memory");
    return rc;
}
