/*
 * db_aggregate.c - user-defined aggregates (ldb_create_aggregate): a
 * program's callbacks behind the same struct agg_def the built-ins use,
 * so the one-shot executor, live queries and materialized views run them
 * through one code path.
 *
 * The declaration becomes the agg_def's algebra, never a name:
 *   inverse    -> AGG_RETRACT: a negative weight calls inverse; without
 *                 it the instance's recompute layer keeps the group's
 *                 tuples (value/aggregate.h);
 *   merge      -> AGG_MERGE;
 *   decompose  -> agg_def.combine: the materialized-view aggregate arm
 *                 keeps count and sum and calls it.
 *
 * Registrations live until the database closes (a compiled statement or
 * a view may hold one), in db->funcs; the newest of a name wins.
 */
#include "api/db_internal.h"

#include "base/mem.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

struct udaf {
    struct func_def fn;        /* what db->funcs points at */
    struct agg_def agg;
    ldb_aggregate user;
    char *name;                /* lower case */
    ldb *db;                   /* its calls count in db->in_aggregate */
};

struct ldb_result {
    value v;
};

static const struct udaf *udaf_of(const agg_inst *ai)
{
    return (const struct udaf *)((const char *)ai->def - offsetof(struct udaf, agg));
}

/* ---- results -------------------------------------------------------------------- */

static void result_set(ldb_result *r, value v)
{
    value_release(&r->v);
    r->v = v;
}

void ldb_result_null(ldb_result *r) { result_set(r, value_null()); }
void ldb_result_int64(ldb_result *r, int64_t v) { result_set(r, value_int(v)); }
void ldb_result_double(ldb_result *r, double v) { result_set(r, value_real(v)); }
void ldb_result_bool(ldb_result *r, int v) { result_set(r, value_bool(v != 0)); }

int ldb_result_text(ldb_result *r, const char *s, int n)
{
    value v;
    int rc = value_text(&v, s, n < 0 ? strlen(s) : (size_t)n);
    if (rc == LDB_OK)
        result_set(r, v);
    return rc;
}

int ldb_result_blob(ldb_result *r, const void *p, int n)
{
    value v;
    int rc = value_blob(&v, p, n < 0 ? 0 : (size_t)n);
    if (rc == LDB_OK)
        result_set(r, v);
    return rc;
}

/* ---- the agg_def callbacks ------------------------------------------------------------ */

static void u_init(agg_inst *ai, void *st) { memset(st, 0, ai->def->state_size); }

static int u_step(agg_inst *ai, void *st, const value *args, int64_t w)
{
    const struct udaf *u = udaf_of(ai);
    struct ldb_row tuple = { args, u->agg.nargs };
    int (*fn)(void *, void *, const ldb_row *) = w > 0 ? u->user.step : u->user.inverse;
    int rc = fn ? LDB_OK : LDB_MISUSE;
    u->db->in_aggregate++;
    for (int64_t k = w > 0 ? w : -w; k > 0 && rc == LDB_OK; k--)
        rc = fn(u->user.ctx, st, &tuple);
    u->db->in_aggregate--;
    return rc;
}

static int u_merge(agg_inst *ai, void *st, const void *other)
{
    const struct udaf *u = udaf_of(ai);
    u->db->in_aggregate++;
    int rc = u->user.merge(u->user.ctx, st, other);
    u->db->in_aggregate--;
    return rc;
}

static int u_finalize(agg_inst *ai, const void *st, value *out)
{
    const struct udaf *u = udaf_of(ai);
    ldb_result r = { value_null() };
    u->db->in_aggregate++;
    int rc = u->user.finalize(u->user.ctx, st, &r);
    u->db->in_aggregate--;
    if (rc) {
        value_release(&r.v);
        return rc;
    }
    *out = r.v;
    return LDB_OK;
}

static void u_destroy(agg_inst *ai, void *st)
{
    const struct udaf *u = udaf_of(ai);
    if (!u->user.destroy)
        return;
    u->db->in_aggregate++;
    u->user.destroy(u->user.ctx, st);
    u->db->in_aggregate--;
}

static size_t u_heap(const agg_inst *ai, const void *st) { return 0; }

static int u_combine(const agg_inst *ai, int64_t count, const isum *sum, value *out)
{
    const struct udaf *u = udaf_of(ai);
    int64_t s;
    if (!isum_to_int64(sum, &s))
        return LDB_RANGE;
    ldb_result r = { value_null() };
    u->db->in_aggregate++;
    int rc = u->user.decompose(u->user.ctx, count, s, &r);
    u->db->in_aggregate--;
    if (rc) {
        value_release(&r.v);
        return rc;
    }
    *out = r.v;
    return LDB_OK;
}

/* ---- registration ------------------------------------------------------------------ */

static bool valid(const char *name, int nargs, const ldb_aggregate *d)
{
    return name && *name && d && d->step && d->finalize && nargs >= 0 && nargs <= 100 &&
           (!d->decompose || nargs == 1);
}

static void fill_defs(struct udaf *u, int nargs)
{
    const ldb_aggregate *d = &u->user;
    u->agg = (struct agg_def){
        .name = u->name, .nargs = (uint32_t)nargs,
        .flags = (d->inverse ? AGG_RETRACT : 0) | (d->merge ? AGG_MERGE : 0),
        .state_size = d->state_size, .init = u_init, .step = u_step,
        .merge = d->merge ? u_merge : NULL, .finalize = u_finalize, .destroy = u_destroy,
        .heap_bytes = u_heap, .combine = d->decompose ? u_combine : NULL, .extreme = 0,
    };
    u->fn = (struct func_def){
        .name = u->name, .min_args = (int16_t)nargs, .max_args = (int16_t)nargs,
        .flags = FUNC_AGGREGATE | (d->flags & LDB_DETERMINISTIC ? FUNC_DETERMINISTIC : 0),
        .type = COL_ANY, .agg = &u->agg,
    };
}

static int create_aggregate(ldb *db, const char *name, int nargs, const ldb_aggregate *def)
{
    db_clear_error(db);
    if (!valid(name, nargs, def))
        return db_error(db, LDB_MISUSE, NULL, -1,
                        "an aggregate needs a name, step and finalize, 0 to 100 arguments, "
                        "and exactly one argument to declare decompose");
    struct udaf *u = mem_calloc(1, sizeof *u);
    char *lower = mem_strndup(name, strlen(name));
    if (!u || !lower || vec_reserve(&db->funcs.defs, 1)) {
        mem_free(u);
        mem_free(lower);
        return db_error(db, LDB_NOMEM, NULL, -1, "out of memory");
    }
    for (char *c = lower; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    u->name = lower;
    u->db = db;
    u->user = *def;
    fill_defs(u, nargs);
    db->funcs.defs.data[db->funcs.defs.len++] = &u->fn;
    db_durable_registered(db);
    return LDB_OK;
}

int ldb_create_aggregate(ldb *db, const char *name, int nargs, const ldb_aggregate *def)
{
    if (!db)
        return LDB_MISUSE;
    db_lock(db);
    int rc = create_aggregate(db, name, nargs, def);
    db_unlock(db);
    return rc;
}

void db_funcs_free(ldb *db)
{
    for (size_t i = 0; i < db->funcs.defs.len; i++) {
        struct udaf *u = (struct udaf *)(uintptr_t)db->funcs.defs.data[i];
        if (u->user.ctx_free)
            u->user.ctx_free(u->user.ctx);
        mem_free(u->name);
        mem_free(u);
    }
    vec_free(&db->funcs.defs);
}
