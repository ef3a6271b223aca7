/*
 * explain.c - EXPLAIN MATERIALIZED VIEW and the counters behind it: what
 * the backing table looks like (visible and hidden columns, the key), the
 * arm chosen at CREATE and why, the tables read, the state maintenance
 * keeps beyond the backing table, the counters, and the planned body.
 */
#include "mv/mv_internal.h"

#include "base/strbuf.h"

#include <stdio.h>
#include <string.h>

static const char *strategy_name(enum mv_strategy s)
{
    switch (s) {
    case MV_PROJECTION: return "projection";
    case MV_AGGREGATE: return "aggregate";
    case MV_DATAFLOW: return "dataflow";
    case MV_REBUILD: return "rebuild";
    }
    return "?";
}

static size_t retained_bytes(const struct mv_view *v)
{
    return v->strategy == MV_DATAFLOW ? mv_prog_bytes(v) : 0;
}

static void columns(strbuf *sb, const struct mv_view *v, bool hidden)
{
    bool first = true;
    for (uint32_t j = 0; j < v->lay.ncols; j++) {
        if (v->lay.hidden[j] != hidden)
            continue;
        sb_printf(sb, "%s%s", first ? "" : ", ", v->lay.names[j]);
        first = false;
    }
    if (first)
        sb_puts(sb, "none");
}

static void key(strbuf *sb, const struct mv_view *v)
{
    if (v->lay.npk == 0) {
        sb_puts(sb, "none (at most one row)");
        return;
    }
    for (uint32_t i = 0; i < v->lay.npk; i++)
        sb_printf(sb, "%s%s", i ? ", " : "", v->lay.names[v->lay.pk[i]]);
}

static void describe(strbuf *sb, const struct mv_view *v)
{
    sb_printf(sb, "materialized view %s\n", v->name);
    sb_printf(sb, "strategy: %s\n", strategy_name(v->strategy));
    sb_printf(sb, "why: %s\n", v->why);
    sb_puts(sb, "columns: ");
    columns(sb, v, false);
    sb_puts(sb, "\nhidden columns: ");
    columns(sb, v, true);
    sb_puts(sb, "\nkey: ");
    key(sb, v);
    sb_puts(sb, "\nsources:");
    for (size_t i = 0; i < v->sources.len; i++)
        sb_printf(sb, "%s %s", i ? "," : "", table_name(v->sources.data[i]));
    sb_printf(sb, "\nstate beyond the backing table: %zu bytes\n", retained_bytes(v));
    sb_printf(sb,
              "counters: changes %llu, written %llu, suppressed %llu, runs %llu, "
              "rechecks %llu, resyncs %llu\n",
              (unsigned long long)v->c.changes, (unsigned long long)v->c.written,
              (unsigned long long)v->c.suppressed, (unsigned long long)v->c.runs,
              (unsigned long long)v->c.rechecks, (unsigned long long)v->c.resyncs);
    sb_puts(sb, "body:\n");
    strbuf plan = STRBUF_INIT;
    plan_print(&plan, v->body, NULL);
    for (const char *t = sb_str(&plan); *t;) {
        const char *nl = strchr(t, '\n');
        size_t n = nl ? (size_t)(nl - t) + 1 : strlen(t);
        sb_puts(sb, "  ");
        sb_put(sb, t, n);
        t += n;
    }
    if (sb_error(&plan))
        sb->err = LDB_NOMEM;
    sb_free(&plan);
}

int mv_explain(struct mv_registry *reg, const char *name, strbuf *out, struct eval_error *err)
{
    memset(err, 0, sizeof *err);
    const struct mv_view *v = mv_find(reg, name);
    if (!v) {
        err->code = LDB_ERROR;
        snprintf(err->msg, sizeof err->msg, "no such materialized view: %s", name);
        return LDB_ERROR;
    }
    describe(out, v);
    return sb_error(out);
}

int mv_stats(struct mv_registry *reg, const char *name, struct mv_stats *out)
{
    memset(out, 0, sizeof *out);
    const struct mv_view *v = mv_find(reg, name);
    if (!v)
        return LDB_NOTFOUND;
    out->strategy = strategy_name(v->strategy);
    out->changes = v->c.changes;
    out->written = v->c.written;
    out->suppressed = v->c.suppressed;
    out->runs = v->c.runs;
    out->rechecks = v->c.rechecks;
    out->resyncs = v->c.resyncs;
    out->retained_bytes = retained_bytes(v);
    out->rows = (int64_t)table_count(v->backing);
    return LDB_OK;
}
