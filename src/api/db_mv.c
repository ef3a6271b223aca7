/*
 * db_mv.c - the materialized-view statements and API: CREATE / DROP /
 * EXPLAIN MATERIALIZED VIEW run here (from db_run.c), inside a write
 * statement for the first two, and ldb_mv_stats_get reads a view's
 * counters. The layer itself is src/mv; this file only passes it the
 * statement text, the PRAGMA settings and the errors back.
 */
#include "api/db_internal.h"

#include "base/strbuf.h"
#include "mv/mv.h"

#include <string.h>

/* PRAGMA nondeterministic_schema, materialized_view_cheap_arms and
 * materialized_view_rebuild_row_threshold. */
static struct mv_options options(const ldb *db)
{
    struct mv_options o = { false, true, MV_DEFAULT_REBUILD_THRESHOLD };
    const value *nd = pragma_get(&db->pragmas, "nondeterministic_schema");
    const value *ca = pragma_get(&db->pragmas, "materialized_view_cheap_arms");
    const value *th = pragma_get(&db->pragmas, "materialized_view_rebuild_row_threshold");
    o.nondeterministic_ok = nd && sql_truth(nd) == 1;
    o.cheap_arms = !ca || sql_truth(ca) != 0;
    if (th && value_type(th) == LDB_INTEGER)
        o.rebuild_threshold = th->h.u.i;
    return o;
}

/* An error of the layer, positioned in the statement when it has an offset
 * (offsets count from the statement's first byte). */
static int mv_failed(ldb_stmt *s, const struct eval_error *err)
{
    struct eval_error e = *err;
    if (e.has_off)
        e.off += s->ast->sql_off;
    return db_error_from(s->db, s->ast, &e);
}

static int create(ldb_stmt *s)
{
    struct mv_options opt = options(s->db);
    struct eval_error err;
    int rc = mv_create(s->db->mv, s->ast->sql, s->ast->sql_len, &opt, &err);
    return rc ? mv_failed(s, &err) : LDB_OK;
}

static int drop(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    struct eval_error err;
    int rc = mv_drop(s->db->mv, st->u.drop.name.name.str, st->u.drop.if_exists, &err);
    if (rc && !err.has_off) {
        err.has_off = true;
        err.off = st->u.drop.name.name.off - s->ast->sql_off;
    }
    return rc ? mv_failed(s, &err) : LDB_OK;
}

/* One text row per line, like EXPLAIN. */
static int explain(ldb_stmt *s)
{
    const char *name = s->ast->stmt->u.explain_view.name.str;
    strbuf sb = STRBUF_INIT;
    struct eval_error err;
    int rc = mv_explain(s->db->mv, name, &sb, &err);
    for (const char *t = sb_str(&sb); rc == LDB_OK && *t;) {
        const char *nl = strchr(t, '\n');
        size_t n = nl ? (size_t)(nl - t) : strlen(t);
        row *r = row_alloc(1);
        if (!r || value_text(&r->cols[0], t, n) || vec_push(&s->out_rows, r)) {
            row_release(r);
            rc = LDB_NOMEM;
        }
        t += n + (nl != NULL);
    }
    sb_free(&sb);
    if (rc == LDB_NOMEM)
        return db_error(s->db, rc, NULL, -1, "out of memory");
    return rc ? db_error(s->db, rc, s->ast, s->ast->stmt->off, "%s", err.msg) : LDB_OK;
}

int db_run_mv(ldb_stmt *s)
{
    const ast_stmt *st = s->ast->stmt;
    if (st->kind == AST_STMT_EXPLAIN_VIEW)
        return explain(s);
    bool handled = false;
    int rc = st->kind == AST_STMT_DROP ? db_drop_while_dormant(s, drop, &handled) : LDB_OK;
    if (handled)
        return rc ? rc : LDB_DONE;
    rc = db_write_begin(s->db);
    if (rc)
        return rc;
    rc = st->kind == AST_STMT_DROP ? drop(s) : create(s);
    int end = db_write_end(s->db, rc);
    return rc ? rc : end ? end : LDB_DONE;
}

int ldb_mv_stats_get(ldb *db, const char *name, ldb_mv_stats *out)
{
    if (!db || !name || !out)
        return LDB_MISUSE;
    struct mv_stats st;
    db_lock(db);
    int rc = mv_stats(db->mv, name, &st);
    db_unlock(db);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    *out = (ldb_mv_stats){ st.strategy, st.changes, st.written, st.suppressed, st.runs,
                           st.rechecks, st.resyncs, st.retained_bytes, st.rows };
    return LDB_OK;
}
