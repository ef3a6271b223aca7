/*
 * program.c - a compiled query as a unit that live queries and
 * materialized views share (program.h): make it from a plan, feed it the
 * tables' rows and changes, run it, and read its consolidated output.
 *
 * One application of a delta may take several graph runs: a window fed
 * from an index prefix (window.c) may ask for more rows after a run, and
 * the next run must see them before anything is published. The outputs of
 * those runs accumulate in prog->acc, consolidated at the end, so that
 * the owner always gets the net change of the whole application.
 */
#include "live/live_internal.h"

#include "base/mem.h"
#include "live/window.h"
#include "storage/table.h"

#include <stdio.h>
#include <string.h>

int live_program_new(struct plan *plan, const value *params, uint32_t nparams, bool bounded,
                     struct live_program **out, struct eval_error *err)
{
    *out = NULL;
    struct live_program *prog = mem_calloc(1, sizeof *prog);
    if (!prog)
        return live_error_out(err, LDB_NOMEM, "out of memory");
    plan_arena_init(&prog->pa);
    arena_init(&prog->cba, 4096);
    prog->plan = plan;
    prog->limit = -1;
    prog->bounded = bounded;
    int rc = LDB_OK;
    if (nparams) {
        prog->params = mem_calloc(nparams, sizeof *prog->params);
        if (!prog->params)
            rc = LDB_NOMEM;
        for (uint32_t i = 0; !rc && i < nparams; i++)
            prog->params[i] = value_copy(&params[i]);
        prog->nparams = rc ? 0 : nparams;
    }
    if (!rc)
        rc = live_compile(prog, err);
    if (!rc && (rc = live_demand_plan(prog)))
        live_error_out(err, rc, ldb_errstr(rc));
    if (rc) {
        if (err->code == LDB_OK)
            live_error_out(err, rc, ldb_errstr(rc));
        live_program_free(prog);
        return rc;
    }
    *out = prog;
    return LDB_OK;
}

void live_program_free(struct live_program *prog)
{
    if (!prog)
        return;
    for (size_t i = 0; i < prog->sources.len; i++)
        window_loader_free(prog->sources.data[i].loader);
    df_graph_free(prog->g);
    df_batch_free(&prog->acc);
    for (size_t i = 0; i < prog->children.len; i++) {
        df_batch_free(&prog->children.data[i].dom_acc);
        df_batch_free(&prog->children.data[i].rows_acc);
    }
    vec_free(&prog->children);
    vec_free(&prog->demands);
    vec_free(&prog->sources);
    vec_free(&prog->values);
    vec_free(&prog->partitions);
    vec_free(&prog->indexes);
    for (uint32_t i = 0; i < prog->nparams; i++)
        value_release(&prog->params[i]);
    mem_free(prog->params);
    arena_free(&prog->cba);
    plan_arena_free(&prog->pa);
    mem_free(prog);
}

/* ---- runs ------------------------------------------------------------------------- */

/* One graph run; its outputs join the accumulated outputs. */
static int run_once(struct live_program *prog)
{
    int rc = df_run(prog->g);
    if (rc)
        return rc;
    prog->stats.runs++;
    rc = df_output_take(prog->out, &prog->acc);
    for (size_t i = 0; !rc && i < prog->children.len; i++) {
        struct live_child *ch = &prog->children.data[i];
        rc = df_output_take(ch->dom_out, &ch->dom_acc);
        if (!rc)
            rc = df_output_take(ch->rows_out, &ch->rows_acc);
    }
    df_clear_deltas(prog->g);
    return rc;
}

static int consolidate_all(struct live_program *prog)
{
    int rc = df_batch_consolidate(&prog->acc);
    for (size_t i = 0; !rc && i < prog->children.len; i++) {
        rc = df_batch_consolidate(&prog->children.data[i].dom_acc);
        if (!rc)
            rc = df_batch_consolidate(&prog->children.data[i].rows_acc);
    }
    return rc;
}

/* Runs until no window loader wants more rows; consolidates the output
 * (several: runs before this one left output too). */
static int run_to_settle(struct live_program *prog, bool several)
{
    int rc = run_once(prog);
    for (bool again = !rc; again && !rc;) {
        again = false;
        for (size_t i = 0; !rc && i < prog->sources.len; i++) {
            bool pushed = false;
            if (prog->sources.data[i].loader)
                rc = window_loader_settle(prog->sources.data[i].loader, &pushed);
            again |= pushed;
        }
        if (again && !rc) {
            rc = run_once(prog);
            several = true;
        }
    }
    if (!rc && several)
        rc = consolidate_all(prog);
    return rc;
}

/* Every failure is the program's end: its graph state is no longer known. */
static int failed(struct live_program *prog, int rc)
{
    return live_fail(prog, rc, rc == LDB_NOMEM ? "out of memory" : prog->err.msg);
}

int live_program_consolidate(struct live_program *prog)
{
    int rc = consolidate_all(prog);
    return rc ? failed(prog, rc) : LDB_OK;
}

int live_program_run(struct live_program *prog)
{
    if (prog->state != LIVE_OK)
        return prog->errcode;
    int rc = run_to_settle(prog, false);
    return rc ? failed(prog, rc) : LDB_OK;
}

int live_program_set_window(struct live_program *prog, int64_t offset, int64_t limit)
{
    if (prog->state != LIVE_OK)
        return prog->errcode;
    int rc = df_topk_set_window(prog->window, offset, limit);
    if (rc)
        return failed(prog, rc);
    for (size_t i = 0; i < prog->sources.len; i++)
        if (prog->sources.data[i].loader)
            window_loader_resize(prog->sources.data[i].loader, offset, limit);
    prog->offset = offset;
    prog->limit = limit;
    return LDB_OK;
}

/* A hydration runs the graph on each chunk of table rows as it is read
 * (a batch of a million rows would be out of cache again before the
 * first operator saw it), then settles. */
int live_program_hydrate(struct live_program *prog)
{
    if (prog->state != LIVE_OK)
        return prog->errcode;
    uint64_t runs = prog->stats.runs;
    int rc = live_hydrate(prog, run_once);
    if (!rc)
        rc = run_to_settle(prog, prog->stats.runs > runs);
    return rc ? failed(prog, rc) : LDB_OK;
}

int live_program_apply(struct live_program *prog, const struct delta *d, bool *touched)
{
    *touched = false;
    if (prog->state != LIVE_OK)
        return prog->errcode;
    uint64_t runs = prog->stats.runs;
    int rc = live_push_delta(prog, d, false, touched, run_once);
    if (!rc && *touched)
        rc = run_to_settle(prog, prog->stats.runs > runs);
    return rc ? failed(prog, rc) : LDB_OK;
}

int live_program_push_negated(struct live_program *prog, const struct delta *d, bool *touched)
{
    *touched = false;
    if (prog->state != LIVE_OK)
        return prog->errcode;
    int rc = live_push_delta(prog, d, true, touched, NULL);
    return rc ? failed(prog, rc) : LDB_OK;
}

bool live_program_has_output(const struct live_program *prog)
{
    bool any = prog->acc.len > 0;
    for (size_t i = 0; !any && i < prog->children.len; i++)
        any = prog->children.data[i].dom_acc.len || prog->children.data[i].rows_acc.len;
    return any;
}

void live_program_clear_output(struct live_program *prog)
{
    df_batch_clear(&prog->acc);
    for (size_t i = 0; i < prog->children.len; i++) {
        df_batch_clear(&prog->children.data[i].dom_acc);
        df_batch_clear(&prog->children.data[i].rows_acc);
    }
}

int live_program_trim(struct live_program *prog)
{
    if (prog->state != LIVE_OK)
        return prog->errcode;
    bool any = false;
    int rc = LDB_OK;
    for (size_t i = 0; !rc && i < prog->sources.len; i++) {
        bool pushed = false;
        if (prog->sources.data[i].loader)
            rc = window_loader_trim(prog->sources.data[i].loader, &pushed);
        any |= pushed;
    }
    if (!rc && any)
        rc = run_to_settle(prog, false);
    if (!rc && live_program_has_output(prog))
        rc = LDB_INTERNAL; /* the unloaded rows were not past the window */
    live_program_clear_output(prog);
    if (rc == LDB_INTERNAL)
        return live_fail(prog, rc, "a window trim changed the result");
    return rc ? failed(prog, rc) : LDB_OK;
}

static bool index_exists(const struct table_index *ix)
{
    const struct table *t = ix->table;
    for (size_t i = 0; i < table_index_count(t); i++)
        if (table_index_at(t, i) == ix)
            return true;
    return false;
}

int live_program_check_schema(const struct live_program *prog, struct eval_error *err)
{
    for (size_t i = 0; i < prog->sources.len; i++) {
        const struct table *t = prog->sources.data[i].table;
        if (t->dropped) {
            char msg[200];
            snprintf(msg, sizeof msg, "table %s was dropped", table_name(t));
            return live_error_out(err, LDB_ERROR, msg);
        }
    }
    for (size_t i = 0; i < prog->indexes.len; i++)
        if (!index_exists(prog->indexes.data[i]))
            return LDB_NOTFOUND;
    return LDB_OK;
}

bool live_program_reads_index(const struct live_program *prog, const struct table_index *ix)
{
    for (size_t i = 0; i < prog->indexes.len; i++)
        if (prog->indexes.data[i] == ix)
            return true;
    return false;
}

/* ---- reading a program ----------------------------------------------------------- */

void live_program_layout(const struct live_program *prog, struct live_program_layout *out)
{
    *out = (struct live_program_layout){ prog->lay.ncols, prog->lay.nvisible, prog->lay.nkey,
                                         prog->lay.key, prog->lay.keycoll };
}

df_batch *live_program_output(struct live_program *prog) { return &prog->acc; }

const char *live_program_errmsg(const struct live_program *prog) { return prog->err.msg; }

void live_program_counters(const struct live_program *prog, struct df_counters *out)
{
    df_graph_counters(prog->g, out);
}

int live_error_out(struct eval_error *err, int code, const char *msg)
{
    if (err->code == LDB_OK) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return code;
}
