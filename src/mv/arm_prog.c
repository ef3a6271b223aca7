/*
 * arm_prog.c - the dataflow arm: the body compiled by the live layer into
 * one dataflow program (live/program.h), for every shape the cheaper
 * arms do not take: joins of any kind and number (through table indexes
 * where one serves, not private copies), DISTINCT, set operations,
 * HAVING, scalar aggregates, subqueries (decorrelated into joins), ORDER
 * BY ... LIMIT, views over views.
 *
 * Per statement round the program consumes the delta of the tables it
 * reads and its consolidated output (rows -1 gone, +1 new, keyed) is
 * written into the backing table; a change that leaves every result row
 * identical gives an empty output and writes nothing.
 *
 * The program is the one piece of maintenance state outside the tables,
 * so it is what rollbacks must restore (registry.c): a negation pushed
 * and run once the store says the rollback is complete (unapply, settle),
 * or a rebuild from
 * the tables (resync) when that is not possible. A failed run leaves the
 * program unusable: the view is then stale and resyncs before its next
 * use, comparing a fresh program's result with the backing table.
 */
#include "mv/mv_internal.h"

#include "base/mem.h"
#include "live/program.h"

#include <stdio.h>
#include <string.h>

/* Backing layout from the program's output: visible columns, then its
 * key columns that are not visible. */
static int prog_layout(struct mv_view *v, const struct live_program_layout *out, uint32_t *map)
{
    uint32_t nvis = out->nvisible, nhid = 0;
    if (out->nkey > SCHEMA_MAX_KEY)
        return LDB_UNSUPPORTED;
    for (uint32_t i = 0; i < out->nkey; i++)
        nhid += out->key[i] >= nvis;
    int rc = mv_layout_alloc(v, nvis + nhid);
    struct mv_layout *l = &v->lay;
    l->nvis = nvis;
    for (uint32_t j = 0; j < nvis && rc == LDB_OK; j++) {
        map[j] = j;
        rc = mv_layout_column(v, j, v->body, j, false, NULL);
    }
    uint32_t at = nvis;
    for (uint32_t i = 0; i < out->nkey && rc == LDB_OK; i++) {
        if (out->key[i] < nvis) {
            l->pk[i] = out->key[i];
            continue;
        }
        map[at] = out->key[i];
        l->pk[i] = at;
        rc = mv_layout_column(v, at, NULL, 0, true, "_key");
        l->colls[at++] = out->keycoll[i];
    }
    l->npk = out->nkey;
    return rc;
}

int mv_prog_create(struct mv_view *v, struct eval_error *err)
{
    struct live_program *prog;
    int rc = live_program_new(v->body, NULL, 0, false, &prog, err);
    if (rc)
        return rc;
    struct live_program_layout out;
    live_program_layout(prog, &out);
    uint32_t *map = plan_alloc(&v->pa, (out.ncols + 1) * sizeof *map);
    rc = map ? prog_layout(v, &out, map) : LDB_NOMEM;
    if (rc) {
        live_program_free(prog);
        err->code = rc;
        snprintf(err->msg, sizeof err->msg, "%s",
                 rc == LDB_NOMEM ? "out of memory" : "the result key is too wide");
        return rc;
    }
    v->arm.prog = (struct mv_prog_arm){ prog, map };
    v->strategy = MV_DATAFLOW;
    return LDB_OK;
}

/* Writes the program's accumulated output into the backing table. */
static int write_output(struct mv_view *v, struct live_program *prog)
{
    df_batch *out = live_program_output(prog);
    int rc = mv_write_batch(v, out->e, out->len, v->arm.prog.map);
    df_batch_clear(out);
    return rc;
}

int mv_prog_fill(struct mv_view *v)
{
    struct live_program *prog = v->arm.prog.prog;
    int rc = live_program_hydrate(prog);
    if (rc) /* the program's message, not the store's last one */
        snprintf(v->err.msg, sizeof v->err.msg, "%s", live_program_errmsg(prog));
    return rc ? rc : write_output(v, prog);
}

int mv_prog_apply(struct mv_view *v, const struct delta *d)
{
    struct live_program *prog = v->arm.prog.prog;
    bool touched;
    int rc = live_program_apply(prog, d, &touched);
    if (rc) {
        snprintf(v->err.msg, sizeof v->err.msg, "%s", live_program_errmsg(prog));
        v->stale = true;
        return rc;
    }
    if (live_program_output(prog)->len == 0)
        v->c.suppressed += mv_source_changes(v, d);
    if ((rc = write_output(v, prog)))
        mv_prog_unapply(v, d); /* the store will not give d back */
    return rc;
}

void mv_prog_unapply(struct mv_view *v, const struct delta *d)
{
    bool touched;
    if (live_program_push_negated(v->arm.prog.prog, d, &touched))
        v->stale = true;
    else if (touched)
        v->pending = true;
}

void mv_prog_settle(struct mv_view *v)
{
    struct live_program *prog = v->arm.prog.prog;
    v->pending = false;
    if (!v->stale && live_program_run(prog))
        v->stale = true;
    df_batch_clear(live_program_output(prog)); /* the undo log already restored the table */
}

/* The fresh program's whole result as rows (borrowed from its batch). */
static int result_rows(struct mv_view *v, const df_batch *b, row ***out)
{
    row **rows = mem_alloc((b->len ? b->len : 1) * sizeof *rows);
    if (!rows)
        return LDB_NOMEM;
    for (size_t i = 0; i < b->len; i++) {
        if (b->e[i].w != 1) {
            mem_free(rows);
            return store_error(v->reg->store, LDB_INTERNAL,
                               "the body gave two copies of a row under one key");
        }
        rows[i] = b->e[i].r;
    }
    *out = rows;
    return LDB_OK;
}

int mv_prog_resync(struct mv_view *v)
{
    struct live_program *fresh;
    struct eval_error e;
    memset(&e, 0, sizeof e);
    int rc = live_program_new(v->body, NULL, 0, false, &fresh, &e);
    if (rc == LDB_OK && (rc = live_program_hydrate(fresh)))
        snprintf(v->err.msg, sizeof v->err.msg, "%s", live_program_errmsg(fresh));
    row **rows = NULL;
    df_batch *out = rc == LDB_OK ? live_program_output(fresh) : NULL;
    if (rc == LDB_OK && (rc = result_rows(v, out, &rows)) == LDB_OK)
        rc = mv_write_all(v, rows, out->len, v->arm.prog.map);
    mem_free(rows);
    if (rc) {
        live_program_free(fresh);
        return rc;
    }
    df_batch_clear(out);
    live_program_free(v->arm.prog.prog);
    v->arm.prog.prog = fresh;
    v->stale = v->pending = false;
    v->c.resyncs++;
    mv_set_base(v);
    return LDB_OK;
}

size_t mv_prog_bytes(const struct mv_view *v)
{
    struct df_counters c;
    live_program_counters(v->arm.prog.prog, &c);
    return c.retained_bytes;
}

void mv_prog_free(struct mv_view *v)
{
    live_program_free(v->arm.prog.prog);
    v->arm.prog.prog = NULL;
}
