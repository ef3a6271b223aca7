/*
 * pg_util.c - the PostgreSQL tests' shared utilities (pg_util.h).
 *
 * Rows are collected into a growable array of malloc'd strings; both
 * engines' values go through put_* into one buffer per row, so the two
 * renderings differ only where the types do.
 */
#include "pg_util.h"

#include "test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* PostgreSQL type oids (pg_type.dat); stable across versions. */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_OID 26
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_NUMERIC 1700

/* ---- connection strings -------------------------------------------- */

static void read_conninfo(const char *file, char *buf, size_t size)
{
    const char *dir = getenv("LDB_PG_DIR");
    CHECKF(dir && *dir, "LDB_PG_DIR is not set: run the PostgreSQL tests with make test-pg "
                        "(or tools/pg_cluster.sh start DIR, then LDB_PG_DIR=DIR)");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    CHECKF(f, "cannot read %s: is the cluster started?", path);
    char *line = fgets(buf, (int)size, f);
    fclose(f);
    CHECKF(line, "%s is empty", path);
    buf[strcspn(buf, "\r\n")] = '\0';
}

const char *pgu_conninfo(void)
{
    static char buf[1024];
    if (!buf[0])
        read_conninfo("conninfo", buf, sizeof buf);
    return buf;
}

const char *pgu_admin_conninfo(void)
{
    static char buf[1024];
    if (!buf[0])
        read_conninfo("admin", buf, sizeof buf);
    return buf;
}

/* ---- SQL on the server ------------------------------------------------ */

PGconn *pgu_connect(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    CHECKF(c && PQstatus(c) == CONNECTION_OK, "connecting to PostgreSQL: %s",
           c ? PQerrorMessage(c) : "out of memory");
    return c;
}

static char *vformat(const char *fmt, va_list ap)
{
    char *sql = NULL;
    CHECK(vasprintf(&sql, fmt, ap) >= 0);
    return sql;
}

/* Runs sql (freed here), which must succeed; the caller PQclear's. */
static PGresult *run(PGconn *c, char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
        msg[strcspn(msg, "\n")] = '\0';
        PQclear(r);
        test_fail_(__FILE__, __LINE__, "PostgreSQL: %s: %s", sql, msg);
    }
    free(sql);
    return r;
}

void pgu_exec(PGconn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *sql = vformat(fmt, ap);
    va_end(ap);
    PQclear(run(c, sql));
}

char *pgu_value(PGconn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *sql = vformat(fmt, ap);
    va_end(ap);
    PGresult *r = run(c, sql);
    CHECKF(PQntuples(r) > 0 && PQnfields(r) > 0, "pgu_value: the query returned no row");
    char *v = PQgetisnull(r, 0, 0) ? NULL : strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* ---- the server's state ------------------------------------------------- */

static void restart_command(char *cmd, size_t size)
{
    const char *dir = getenv("LDB_PG_DIR");
    CHECKF(dir && *dir, "LDB_PG_DIR is not set");
    const char *script = "tools/pg_cluster.sh";
    CHECKF(access(script, X_OK) == 0, "%s not found: run the tests from the repository root",
           script);
    snprintf(cmd, size, "%s restart '%s'", script, dir);
}

void pgu_restart_server(void)
{
    char cmd[4200];
    restart_command(cmd, sizeof cmd);
    int rc = system(cmd);
    CHECKF(rc == 0, "%s failed (status %d)", cmd, rc);
}

void pgu_restart_server_polling(ldb_pg *pg)
{
    char cmd[4200];
    restart_command(cmd, sizeof cmd);
    fflush(stdout);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    pid_t done;
    while ((done = waitpid(child, &status, WNOHANG)) == 0)
        ldb_pg_wait(pg, 20);
    CHECKF(done == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "%s failed (status %d)", cmd, status);
}

void pgu_reset(void)
{
    PGconn *a = pgu_connect(pgu_admin_conninfo());
    /* No CASCADE notices, nor warnings about backends that exited meanwhile. */
    pgu_exec(a, "SET client_min_messages = error");
    /* The timeout makes pg_terminate_backend wait for each backend to
     * exit, so the slots they used are inactive before they are dropped. */
    pgu_exec(a, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                "WHERE usename = 'livedb' AND pid <> pg_backend_pid()");
    pgu_exec(a, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots");
    pgu_exec(a, "DO $$ DECLARE p record; BEGIN "
                "FOR p IN SELECT pubname FROM pg_publication LOOP "
                "EXECUTE format('DROP PUBLICATION %%I', p.pubname); END LOOP; END $$");
    pgu_exec(a, "DROP SCHEMA IF EXISTS public CASCADE");
    pgu_exec(a, "CREATE SCHEMA public AUTHORIZATION livedb");
    PQfinish(a);
}

/* ---- canonical rows -------------------------------------------------------- */

typedef struct rows {
    char **v;
    int n, cap;
} rows;

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        CHECK(b->p);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void putf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(buf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && (size_t)n < sizeof tmp);
    put(b, tmp, (size_t)n);
}

static void put_hex(buf *b, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        putf(b, "%02x", p[i]);
}

/* Takes the row's text; b is left empty. */
static void add_row(rows *r, buf *b)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->v = realloc(r->v, (size_t)r->cap * sizeof *r->v);
        CHECK(r->v);
    }
    r->v[r->n++] = b->p ? b->p : strdup("");
    memset(b, 0, sizeof *b);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **finish(rows *r, int *n)
{
    if (r->n)
        qsort(r->v, (size_t)r->n, sizeof *r->v, cmp_str);
    *n = r->n;
    return r->v;
}

/* The type a PostgreSQL column is rendered by: a domain's base type. */
static Oid render_type(PGconn *c, Oid t)
{
    switch (t) {
    case OID_BOOL: case OID_BYTEA: case OID_INT8: case OID_INT2: case OID_INT4:
    case OID_OID: case OID_FLOAT4: case OID_FLOAT8: case OID_NUMERIC:
        return t;
    }
    char *base = pgu_value(c, "SELECT CASE WHEN typtype = 'd' THEN typbasetype ELSE oid END "
                              "FROM pg_type WHERE oid = %u", (unsigned)t);
    Oid b = base ? (Oid)strtoul(base, NULL, 10) : t;
    free(base);
    return b == t ? t : render_type(c, b);
}

static void put_pg_value(buf *b, Oid type, const char *v)
{
    switch (type) {
    case OID_INT2: case OID_INT4: case OID_INT8: case OID_OID:
        putf(b, "%lld", strtoll(v, NULL, 10));
        break;
    case OID_FLOAT4: case OID_FLOAT8: case OID_NUMERIC:
        putf(b, "%.15g", strtod(v, NULL));
        break;
    case OID_BOOL:
        put(b, v[0] == 't' ? "1" : "0", 1);
        break;
    case OID_BYTEA: {
        size_t n = 0;
        unsigned char *raw = PQunescapeBytea((const unsigned char *)v, &n);
        CHECK(raw);
        put_hex(b, raw, n);
        PQfreemem(raw);
        break;
    }
    default:
        put(b, v, strlen(v));
    }
}

char **pgu_rows_pg(PGconn *c, const char *sql, int *n)
{
    PGresult *res = run(c, strdup(sql));
    int cols = PQnfields(res);
    Oid types[64];
    CHECKF(cols <= 64, "pgu_rows_pg: more than 64 columns");
    for (int j = 0; j < cols; j++)
        types[j] = render_type(c, PQftype(res, j));
    rows r = {0};
    buf b = {0};
    for (int i = 0; i < PQntuples(res); i++) {
        for (int j = 0; j < cols; j++) {
            if (j)
                put(&b, "|", 1);
            if (PQgetisnull(res, i, j))
                put(&b, "NULL", 4);
            else
                put_pg_value(&b, types[j], PQgetvalue(res, i, j));
        }
        add_row(&r, &b);
    }
    PQclear(res);
    return finish(&r, n);
}

static void put_ldb_value(buf *b, const ldb_row *row, int i)
{
    size_t len = 0;
    const char *t;
    switch (ldb_row_type(row, i)) {
    case LDB_NULL:
        put(b, "NULL", 4);
        break;
    case LDB_BOOLEAN:
    case LDB_INTEGER:
        putf(b, "%lld", (long long)ldb_row_int64(row, i));
        break;
    case LDB_REAL:
        putf(b, "%.15g", ldb_row_double(row, i));
        break;
    case LDB_TEXT:
        t = ldb_row_text(row, i, &len);
        put(b, t, len);
        break;
    case LDB_BLOB:
        t = ldb_row_text(row, i, &len);
        put_hex(b, (const unsigned char *)t, len);
        break;
    default: {
        size_t need = ldb_row_format(row, i, NULL, 0);
        char *tmp = malloc(need + 1);
        CHECK(tmp);
        ldb_row_format(row, i, tmp, need + 1);
        put(b, tmp, need);
        free(tmp);
    }
    }
}

static int collect_ldb_row(void *ctx, const ldb_row *row)
{
    buf b = {0};
    for (int i = 0; i < ldb_row_columns(row); i++) {
        if (i)
            put(&b, "|", 1);
        put_ldb_value(&b, row, i);
    }
    add_row(ctx, &b);
    return 0;
}

char **pgu_rows_ldb(ldb *db, const char *sql, int *n)
{
    rows r = {0};
    int rc = ldb_exec(db, sql, collect_ldb_row, &r);
    CHECKF(rc == LDB_OK, "livedb: %s: %s", sql, ldb_errmsg(db));
    return finish(&r, n);
}

char **pgu_rows_live(ldb_live *q, int *n)
{
    rows r = {0};
    CHECK_INT(ldb_live_read(q, collect_ldb_row, &r), LDB_OK);
    return finish(&r, n);
}

void pgu_rows_free(char **r, int n)
{
    for (int i = 0; i < n; i++)
        free(r[i]);
    free(r);
}

int pgu_rows_equal(char **a, int na, char **b, int nb, const char *what)
{
    int i = 0;
    while (i < na && i < nb && strcmp(a[i], b[i]) == 0)
        i++;
    if (i == na && i == nb)
        return 1;
    printf("#    %s: %d rows vs %d rows; first difference at sorted row %d: \"%s\" vs \"%s\"\n",
           what, na, nb, i, i < na ? a[i] : "(none)", i < nb ? b[i] : "(none)");
    fflush(stdout);
    return 0;
}

/* ---- the adapter -------------------------------------------------------------- */

ldb_pg *pgu_open(ldb *db, const ldb_pg_config *cfg)
{
    ldb_pg_config def = {.conninfo = pgu_conninfo()};
    ldb_pg *pg = NULL;
    int rc = ldb_pg_open(db, cfg ? cfg : &def, &pg);
    CHECKF(rc == LDB_OK && pg, "ldb_pg_open: rc %d: %s", rc, ldb_pg_open_error());
    return pg;
}

void pgu_sync(ldb_pg *pg)
{
    int rc = ldb_pg_sync(pg, 10000);
    CHECKF(rc == LDB_OK, "ldb_pg_sync: rc %d: %s", rc, ldb_pg_errmsg(pg));
}
