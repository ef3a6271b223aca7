/*
 * catalog.c - attaching a PostgreSQL table: its columns, types and primary
 * key from the catalog, the local table made (or checked) to match, the
 * table added to the publication, and the source attached.
 *
 * Attaching is the adapter's one blocking step after ldb_pg_open: it uses
 * a short-lived connection of its own, so the non-blocking connections'
 * protocol states are never interleaved with it.
 */
#include "pg/pg_internal.h"

#include <stdlib.h>
#include <string.h>

static const struct { const char *name; int kind; } type_map[] = {
    { "int2", PGK_INT }, { "int4", PGK_INT }, { "int8", PGK_INT }, { "oid", PGK_INT },
    { "bool", PGK_BOOL }, { "float4", PGK_REAL4 }, { "float8", PGK_REAL },
    { "numeric", PGK_NUMERIC }, { "text", PGK_TEXT }, { "varchar", PGK_TEXT },
    { "name", PGK_TEXT }, { "bpchar", PGK_BPCHAR }, { "bytea", PGK_BYTEA },
    { "uuid", PGK_TEXTCAST }, { "json", PGK_TEXTCAST }, { "jsonb", PGK_TEXTCAST },
    { "date", PGK_TEXTCAST }, { "time", PGK_TEXTCAST }, { "timetz", PGK_TEXTCAST },
    { "timestamp", PGK_TEXTCAST }, { "timestamptz", PGK_TEXTCAST },
    { "interval", PGK_TEXTCAST }, { "inet", PGK_TEXTCAST }, { "cidr", PGK_TEXTCAST },
    { "macaddr", PGK_TEXTCAST },
};

static const char *kind_decl(int kind)
{
    return kind <= PGK_BOOL ? "INTEGER" : kind <= PGK_NUMERIC ? "REAL"
         : kind == PGK_BYTEA ? "BLOB" : "TEXT";
}

/* The kind of a base type (typtype 'e' is an enum), or -1. */
static int type_kind(const char *typname, const char *typtype)
{
    if (typtype[0] == 'e')
        return PGK_TEXTCAST;
    for (size_t i = 0; i < sizeof type_map / sizeof type_map[0]; i++)
        if (strcmp(type_map[i].name, typname) == 0)
            return type_map[i].kind;
    return -1;
}

void pg_table_free(pg_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncols; i++)
        free(t->cols[i].name);
    for (int i = 0; i < t->nreqs; i++)
        ldb_request_unref(t->reqs[i]);
    ldb_finalize(t->get);
    pg_keymap_clear(&t->touched);
    free(t->cols), free(t->pk), free(t->relmap), free(t->reqs);
    free(t->pgname), free(t->nsp), free(t->rel), free(t->local);
    free(t);
}

pg_table *pg_table_by_rel(ldb_pg *pg, const char *nsp, const char *rel)
{
    for (int i = 0; i < pg->ntables; i++)
        if (strcmp(pg->tables[i]->nsp, nsp) == 0 && strcmp(pg->tables[i]->rel, rel) == 0)
            return pg->tables[i];
    return NULL;
}

static PGresult *run(ldb_pg *pg, PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    int st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        pg_set_err(pg, "postgresql: %s", PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                                             ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                                             : PQerrorMessage(c));
        PQclear(r);
        return NULL;
    }
    return r;
}

/* Reads the relation's names, replica identity and key columns. */
static int read_relation(ldb_pg *pg, PGconn *c, const char *name, pg_table *t, char **oid,
                         char **pkey)
{
    const char *params[] = { name };
    PGresult *r = run(pg, c,
        "SELECT c.oid, n.nspname, c.relname, c.relreplident, "
        "(SELECT array_to_string(i.indkey, ' ') FROM pg_index i "
        "  WHERE i.indrelid = c.oid AND i.indisprimary) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')", 1, params);
    if (!r)
        return LDB_ERROR;
    if (PQntuples(r) != 1) {
        PQclear(r);
        pg_set_err(pg, "postgresql table %s does not exist", name);
        return LDB_NOTFOUND;
    }
    int rc = LDB_OK;
    char ident = PQgetvalue(r, 0, 3)[0];
    if (PQgetisnull(r, 0, 4)) {
        pg_set_err(pg, "postgresql table %s has no primary key", name);
        rc = LDB_UNSUPPORTED;
    } else if (ident != 'd' && ident != 'f') {
        pg_set_err(pg, "postgresql table %s: REPLICA IDENTITY must be DEFAULT or FULL", name);
        rc = LDB_UNSUPPORTED;
    }
    t->nsp = strdup(PQgetvalue(r, 0, 1));
    t->rel = strdup(PQgetvalue(r, 0, 2));
    *oid = strdup(PQgetvalue(r, 0, 0));
    *pkey = strdup(PQgetvalue(r, 0, 4));
    PQclear(r);
    if (rc == LDB_OK && (!t->nsp || !t->rel || !*oid || !*pkey))
        rc = LDB_NOMEM;
    return rc;
}

static int read_columns(ldb_pg *pg, PGconn *c, const char *oid, const char *pkey, pg_table *t)
{
    const char *params[] = { oid };
    PGresult *r = run(pg, c,
        "SELECT a.attnum, a.attname, a.attnotnull, bt.typname, bt.typtype, "
        "format_type(a.atttypid, a.atttypmod), "
        "NOT coalesce((SELECT collisdeterministic FROM pg_collation WHERE oid = a.attcollation), "
        "true) "
        "FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid "
        "JOIN pg_type bt ON bt.oid = CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE ty.oid END "
        "WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped "
        "AND a.attgenerated = '' ORDER BY a.attnum",
        1, params);
    if (!r)
        return LDB_ERROR;
    int n = PQntuples(r), rc = LDB_OK;
    t->cols = calloc((size_t)n, sizeof *t->cols);
    int *attnum = calloc((size_t)n + 1, sizeof *attnum);
    t->pk = calloc((size_t)n + 1, sizeof *t->pk);
    if (!t->cols || !attnum || !t->pk)
        rc = LDB_NOMEM;
    for (int i = 0; rc == LDB_OK && i < n; i++) {
        struct pg_col *col = &t->cols[t->ncols++];
        attnum[i] = atoi(PQgetvalue(r, i, 0));
        col->name = strdup(PQgetvalue(r, i, 1));
        col->notnull = PQgetvalue(r, i, 2)[0] == 't';
        col->nondeterministic = PQgetvalue(r, i, 6)[0] == 't';
        col->kind = type_kind(PQgetvalue(r, i, 3), PQgetvalue(r, i, 4));
        if (!col->name)
            rc = LDB_NOMEM;
        else if (col->kind < 0) {
            pg_set_err(pg, "column \"%s\" of %s has type %s, which livedb-pg does not map",
                       col->name, t->pgname, PQgetvalue(r, i, 5));
            rc = LDB_UNSUPPORTED;
        }
    }
    /* indkey lists attribute numbers, in key order */
    for (const char *k = pkey; rc == LDB_OK && *k; ) {
        int num = (int)strtol(k, (char **)&k, 10), at = -1;
        for (int i = 0; i < n; i++)
            if (attnum[i] == num)
                at = i;
        if (at < 0) {
            pg_set_err(pg, "%s: its primary key is on an expression", t->pgname);
            rc = LDB_UNSUPPORTED;
        } else
            t->pk[t->npk++] = at;
        while (*k == ' ')
            k++;
    }
    free(attnum);
    PQclear(r);
    return rc;
}

/* Publishes the table: our own publication gets it added; a given one
 * must already publish it. */
static int publish(ldb_pg *pg, PGconn *c, pg_table *t)
{
    const char *params[] = { pg->publication, t->nsp, t->rel };
    PGresult *r = run(pg, c,
        "SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 "
        "AND schemaname = $2 AND tablename = $3), "
        "(SELECT pubviaroot FROM pg_publication WHERE pubname = $1), "
        "(SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(quote_ident($2) || '.' "
        "|| quote_ident($3)))", 3, params);
    if (!r)
        return LDB_ERROR;
    int have = PQgetvalue(r, 0, 0)[0] == 't';
    bool root = PQgetvalue(r, 0, 1)[0] == 't', partitioned = PQgetvalue(r, 0, 2)[0] == 't';
    PQclear(r);
    if (partitioned && !root) {
        /* its changes would be named by their leaf partitions */
        pg_set_err(pg, "%s is partitioned: publication %s needs publish_via_partition_root",
                   t->pgname, pg->publication);
        return LDB_UNSUPPORTED;
    }
    if (have)
        return LDB_OK;
    if (!pg->own_publication) {
        pg_set_err(pg, "publication %s does not publish %s", pg->publication, t->pgname);
        return LDB_ERROR;
    }
    pg_buf q = { 0 };
    pg_buf_puts(&q, "ALTER PUBLICATION ");
    pg_buf_ident(&q, pg->publication);
    pg_buf_printf(&q, " ADD TABLE %s", t->pgname);
    if (q.oom) {
        pg_buf_free(&q);
        return LDB_NOMEM;
    }
    r = PQexec(c, q.p);
    pg_buf_free(&q);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        pg_set_err(pg, "postgresql: %s", PQerrorMessage(c));
    t->published = pg_may_have_happened(r);   /* attach_undo drops it */
    PQclear(r);
    return ok ? LDB_OK : LDB_ERROR;
}

/* Makes the local table, or checks that one of that name has our columns
 * in our order. */
static int local_table(ldb_pg *pg, pg_table *t)
{
    pg_buf q = { 0 };
    pg_buf_puts(&q, "SELECT * FROM ");
    pg_buf_ident(&q, t->local);
    ldb_stmt *st = NULL;
    int rc = q.oom ? LDB_NOMEM : ldb_prepare(pg->db, pg_buf_str(&q), -1, &st, NULL);
    if (rc == LDB_OK) {
        bool same = ldb_column_count(st) == t->ncols;
        for (int i = 0; same && i < t->ncols; i++)
            same = strcmp(ldb_column_name(st, i), t->cols[i].name) == 0;
        ldb_finalize(st);
        pg_buf_free(&q);
        if (!same)
            pg_set_err(pg, "local table %s exists with other columns than %s", t->local,
                       t->pgname);
        return same ? LDB_OK : LDB_ERROR;
    }
    q.n = 0;
    pg_buf_puts(&q, "CREATE TABLE ");
    pg_buf_ident(&q, t->local);
    pg_buf_puts(&q, " (");
    for (int i = 0; i < t->ncols; i++) {
        pg_buf_ident(&q, t->cols[i].name);
        pg_buf_printf(&q, " %s%s, ", kind_decl(t->cols[i].kind), t->cols[i].notnull ? " NOT NULL" : "");
    }
    pg_buf_puts(&q, "PRIMARY KEY (");
    for (int i = 0; i < t->npk; i++) {
        if (i)
            pg_buf_puts(&q, ", ");
        pg_buf_ident(&q, t->cols[t->pk[i]].name);
    }
    pg_buf_puts(&q, "))");
    rc = q.oom ? LDB_NOMEM : ldb_exec(pg->db, pg_buf_str(&q), NULL, NULL);
    if (rc && rc != LDB_NOMEM)
        pg_set_err(pg, "creating local table %s: %s", t->local, ldb_errmsg(pg->db));
    t->created = rc == LDB_OK;
    pg_buf_free(&q);
    return rc;
}

/* The statement reading a local row by key. */
static int prepare_get(ldb_pg *pg, pg_table *t)
{
    pg_buf q = { 0 };
    pg_buf_puts(&q, "SELECT * FROM ");
    pg_buf_ident(&q, t->local);
    for (int i = 0; i < t->npk; i++) {
        pg_buf_puts(&q, i ? " AND " : " WHERE ");
        pg_buf_ident(&q, t->cols[t->pk[i]].name);
        pg_buf_printf(&q, " = ?%d", i + 1);
    }
    int rc = q.oom ? LDB_NOMEM : ldb_prepare(pg->db, pg_buf_str(&q), -1, &t->get, NULL);
    pg_buf_free(&q);
    return rc;
}

static int add_table(ldb_pg *pg, pg_table *t)
{
    pg_table **more = realloc(pg->tables, (size_t)(pg->ntables + 1) * sizeof *more);
    if (!more)
        return LDB_NOMEM;
    pg->tables = more;
    pg->tables[pg->ntables++] = t;
    return LDB_OK;
}

/* The stream names a relation by its oid and sends its columns in attnum
 * order, as we read them: until a relation message says otherwise (after
 * an ALTER TABLE), stream column i is our column i. A relation message
 * sent before the table was attached is never sent again, so this must
 * not wait for one. */
static int stream_columns(pg_table *t, const char *oid)
{
    t->relid = (uint32_t)strtoul(oid, NULL, 10);
    t->relmap = malloc(((size_t)t->ncols + 1) * sizeof *t->relmap);
    if (!t->relmap)
        return LDB_NOMEM;
    for (int i = 0; i < t->ncols; i++)
        t->relmap[i] = i;
    t->relmap_n = t->ncols;
    return LDB_OK;
}

static int describe(ldb_pg *pg, PGconn *c, const char *pg_table_name, pg_table *t)
{
    char *oid = NULL, *pkey = NULL;
    int rc = read_relation(pg, c, pg_table_name, t, &oid, &pkey);
    if (rc == LDB_OK) {
        pg_buf q = { 0 };
        pg_buf_ident(&q, t->nsp);
        pg_buf_puts(&q, ".");
        pg_buf_ident(&q, t->rel);
        if (q.oom)
            pg_buf_free(&q);
        t->pgname = q.p;
        rc = t->pgname ? read_columns(pg, c, oid, pkey, t) : LDB_NOMEM;
        if (rc == LDB_OK)
            rc = stream_columns(t, oid);
    }
    free(oid), free(pkey);
    return rc;
}

/* Rows an existing local table held before the attach came from an
 * earlier session; the stream may have passed changes to them since
 * (it skips tables not attached), so they are void (law 9): truncated
 * through the source, and loaded again as demand asks. */
static bool void_old_rows(pg_table *t)
{
    ldb_stmt *st;
    pg_buf q = { 0 };
    pg_buf_puts(&q, "SELECT 1 FROM ");
    pg_buf_ident(&q, t->local);
    pg_buf_puts(&q, " LIMIT 1");
    int rc = q.oom ? LDB_NOMEM : ldb_prepare(t->pg->db, q.p, -1, &st, NULL);
    pg_buf_free(&q);
    if (rc)
        return false;
    rc = ldb_step(st);
    ldb_finalize(st);
    if (rc == LDB_DONE)
        return true;
    ldb_sync *s;
    if (rc != LDB_ROW || ldb_sync_begin(t->src, NULL, &s))
        return false;
    if (ldb_sync_truncate(s)) {
        ldb_sync_abandon(s);
        return false;
    }
    return ldb_sync_commit(s, NULL) == LDB_OK;
}

/* A failed attach leaves the database and the server as they were: the
 * table it added to our publication leaves it, the local table it made is
 * dropped. */
static void attach_undo(ldb_pg *pg, PGconn *c, pg_table *t, int rc)
{
    if (rc == LDB_NOMEM)
        pg_set_err(pg, "out of memory");
    pg_buf q = { 0 };
    if (t->published) {
        pg_buf_puts(&q, "ALTER PUBLICATION ");
        pg_buf_ident(&q, pg->publication);
        pg_buf_printf(&q, " DROP TABLE %s", t->pgname);
        if (!q.oom)
            PQclear(PQexec(c, q.p));
    }
    if (t->created) {
        q.n = 0;
        pg_buf_puts(&q, "DROP TABLE ");
        pg_buf_ident(&q, t->local);
        if (!q.oom)
            ldb_exec(pg->db, q.p, NULL, NULL);
    }
    pg_buf_free(&q);
}

int pg_table_attach(ldb_pg *pg, const char *pg_table_name, const char *local, int mode,
                 ldb_source **out)
{
    static const ldb_provider provider = { pg_load_subset_cb, pg_unload_subset_cb, pg_abort_cb, NULL };
    pg_table *t = calloc(1, sizeof *t);
    if (!t) {
        pg_set_err(pg, "out of memory");
        return LDB_NOMEM;
    }
    t->pg = pg;
    PGconn *c = PQconnectdb(pg->conninfo);
    PQsetNoticeProcessor(c, pg_notice_ignore, NULL);
    int rc = PQstatus(c) == CONNECTION_OK ? LDB_OK : LDB_ERROR;
    if (rc)
        pg_set_err(pg, "postgresql: %s", PQerrorMessage(c));
    if (rc == LDB_OK)
        rc = describe(pg, c, pg_table_name, t);
    if (rc == LDB_OK) {
        const char *dot = strrchr(pg_table_name, '.');
        t->local = strdup(local ? local : dot ? dot + 1 : pg_table_name);
        rc = t->local ? LDB_OK : LDB_NOMEM;
    }
    for (int i = 0; rc == LDB_OK && i < pg->ntables; i++)
        if (strcmp(pg->tables[i]->pgname, t->pgname) == 0) {
            pg_set_err(pg, "%s is attached already", t->pgname);
            rc = LDB_MISUSE;
        }
    if (rc == LDB_OK)
        rc = local_table(pg, t);
    if (rc == LDB_OK)
        rc = publish(pg, c, t);
    if (rc == LDB_OK)
        rc = prepare_get(pg, t);
    if (rc == LDB_OK)
        rc = add_table(pg, t);
    if (rc == LDB_OK) {
        rc = ldb_source_attach(pg->db, t->local, mode, &provider, t, &t->src);
        if (rc)
            pg_set_err(pg, "%s", ldb_errmsg(pg->db));
        if (rc)
            pg->ntables--;
    }
    if (rc == LDB_OK && !void_old_rows(t)) {
        ldb_source_detach(t->src);
        pg->ntables--;
        rc = LDB_NOMEM;
    }
    if (rc)
        attach_undo(pg, c, t, rc);
    PQfinish(c);
    if (rc) {
        pg_table_free(t);
        return rc;
    }
    *out = t->src;
    return LDB_OK;
}
