/*
 * arm_rebuild.c - the floor: the body is evaluated from scratch by the
 * one-shot executor at the end of every statement that changed a table it
 * reads, and the backing table is made equal to the result by a keyed
 * diff (only rows that differ are written, so consumers and live queries
 * see a minimal change).
 *
 * Bodies land here when their result is not a function of the tables
 * (random(), CURRENT_TIMESTAMP, LIMIT without ORDER BY), admitted by
 * PRAGMA nondeterministic_schema, or when the dataflow compiler refuses
 * them (a correlated scalar subquery not provably single-row). Every
 * other body is maintained incrementally by another arm. Because
 * a rebuild costs the whole body per statement, CREATE refuses it when a
 * source holds more rows than PRAGMA
 * materialized_view_rebuild_row_threshold (seed 004).
 *
 * The body runs with the planner's annotations cleared (plain scans that
 * test every FILTER's whole predicate), so the view keeps no pointer to
 * an index that may be dropped.
 */
#include "mv/mv_internal.h"

#include "live/program.h"
#include "sql/exec.h"

#include <stdio.h>

int mv_rebuild_init(struct mv_view *v)
{
    struct keyed k;
    int rc = live_ensure_key(&v->pa, v->body, &k);
    if (rc)
        return rc;
    uint32_t *map = plan_alloc(&v->pa, (k.plan->ncols + 1) * sizeof *map);
    if (!map)
        return LDB_NOMEM;
    if ((rc = mv_layout_keyed(v, k.plan, mv_visible_count(v->body), k.cols, k.n, 0, map)))
        return rc;
    v->arm.rebuild = (struct mv_rebuild_arm){ k.plan, map, 0 };
    v->strategy = MV_REBUILD;
    return LDB_OK;
}

typedef VEC(row *) row_vec;

static int run_body(struct mv_view *v, row_vec *rows)
{
    struct mv_rebuild_arm *a = &v->arm.rebuild;
    struct exec_env env = { v->reg->store, NULL, 0, v->reg->env, &a->epoch, v->pa.nsubqueries, 0 };
    struct exec *x;
    if (exec_new(&env, &v->err, &x))
        return LDB_NOMEM;
    struct op *root;
    row *r;
    int rc = exec_open(x, a->keyed, &root);
    while (rc == LDB_OK && (rc = exec_next(root, &r)) == LDB_ROW) {
        row *copy = row_from(r->cols, a->keyed->ncols);
        rc = copy && !vec_push(rows, copy) ? LDB_OK : LDB_NOMEM;
        if (rc)
            row_release(copy);
    }
    exec_free(x);
    return rc == LDB_DONE ? LDB_OK : rc;
}

int mv_rebuild_apply(struct mv_view *v)
{
    row_vec rows = VEC_INIT;
    int rc = run_body(v, &rows);
    if (rc == LDB_OK)
        rc = mv_write_all(v, rows.data, rows.len, v->arm.rebuild.map);
    for (size_t i = 0; i < rows.len; i++)
        row_release(rows.data[i]);
    vec_free(&rows);
    return rc;
}
