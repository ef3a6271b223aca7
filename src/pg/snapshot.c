/*
 * snapshot.c - which stream transactions a load's snapshot sees.
 *
 * PostgreSQL streams a transaction's commit before new snapshots see it:
 * visibility follows the WAL flush and, under synchronous replication,
 * the standbys' acknowledgement. So a transaction the stream applied
 * before a load was sent may still be invisible to the load's snapshot,
 * whose rows are then older than the local ones. The stream therefore
 * keeps the xids of the transactions it applied ("unproven") until some
 * snapshot is seen to include them (snapshots only ever see more): a load
 * whose snapshot misses one applied before it was sent runs again a
 * little later. Transactions applied after a load was sent are the touched
 * map's business (load.c).
 *
 * Xids are compared as PostgreSQL does with 32-bit ones (modulo 2^32,
 * valid within 2^31 of each other): pgoutput gives 32-bit xids,
 * pg_current_snapshot full ones, of which the low 32 bits are kept.
 */
#include "pg/pg_internal.h"

#include <stdlib.h>
#include <string.h>

static bool xid_precedes(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

void pg_snapshot_free(pg_snapshot *s)
{
    free(s->xip);
    *s = (pg_snapshot){ 0 };
}

/* "xmin:xmax:xip1,xip2,..." */
bool pg_snapshot_parse(const char *text, pg_snapshot *s)
{
    pg_snapshot_free(s);
    char *end;
    s->xmin = (uint32_t)strtoull(text, &end, 10);
    if (*end != ':')
        return false;
    s->xmax = (uint32_t)strtoull(end + 1, &end, 10);
    if (*end != ':')
        return false;
    const char *p = end + 1;
    int n = *p ? 1 : 0;
    for (const char *q = p; *q; q++)
        n += *q == ',';
    s->xip = calloc((size_t)n + 1, sizeof *s->xip);
    if (!s->xip)
        return false;
    while (*p) {
        s->xip[s->nxip++] = (uint32_t)strtoull(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p)
            return false;
    }
    s->valid = true;
    return true;
}

bool pg_snapshot_sees(const pg_snapshot *s, uint32_t xid)
{
    if (xid_precedes(xid, s->xmin))
        return true;
    if (!xid_precedes(xid, s->xmax))
        return false;
    for (int i = 0; i < s->nxip; i++)
        if (s->xip[i] == xid)
            return false;
    return true;
}

bool pg_unproven_add(ldb_pg *pg, uint32_t xid, uint64_t seq)
{
    if (pg->nunproven == pg->capunproven) {
        int cap = pg->capunproven ? pg->capunproven * 2 : 64;
        struct pg_unproven *more = realloc(pg->unproven, (size_t)cap * sizeof *more);
        if (!more)
            return false;
        pg->unproven = more;
        pg->capunproven = cap;
    }
    pg->unproven[pg->nunproven++] = (struct pg_unproven){ xid, seq };
    /* A fence's snapshot proves them: ask for one now and then when
     * no load comes by to do it. */
    if (pg->nunproven % 256 == 0)
        pg_fence_want(pg);
    return true;
}

bool pg_unproven_missed(const ldb_pg *pg, const pg_snapshot *s, uint64_t seq_sent)
{
    for (int i = 0; i < pg->nunproven; i++)
        if (pg->unproven[i].seq <= seq_sent && !pg_snapshot_sees(s, pg->unproven[i].xid))
            return true;
    return false;
}

/* Forgets the xids s sees. Only safe while no other load waits for its
 * own snapshot's check (an older snapshot may miss what s sees). */
void pg_unproven_prune(ldb_pg *pg, const pg_snapshot *s, const pg_load *self)
{
    for (pg_load *l = pg->loads; l; l = l->next)
        if (l != self && l->state == LOAD_DECLARING)
            return;
    int n = 0;
    for (int i = 0; i < pg->nunproven; i++)
        if (!pg_snapshot_sees(s, pg->unproven[i].xid))
            pg->unproven[n++] = pg->unproven[i];
    pg->nunproven = n;
}
