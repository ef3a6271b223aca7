/*
 * window.h - bounded ordered input for ORDER BY ... LIMIT live queries
 * (seed 003: the rows law and the work law).
 *
 * When the window's order is served by an ordered index of the table that
 * drives the query (the leftmost scan, reached through filters,
 * projections and left-preserving joins only), the graph is not fed the
 * whole table. A loader keeps the table's rows up to a boundary position
 * in index order loaded (the "prefix" L; whole tie groups when the index
 * serves only part of the ORDER BY): after every run, if the top-k holds
 * fewer than offset + limit rows, it reads the next rows after the
 * boundary from the index; a commit's changes are forwarded only when
 * they touch L. Rows past the boundary cannot be in the window because L
 * already has enough rows that sort before them. When rows entering L
 * may have put more than offset + limit rows past the window, trimming
 * moves the boundary back towards the last window row and unloads the
 * rows past it.
 *
 * Work per change (seed 003), every row read from the index counted: a
 * refill reads the rows the window lacks (plus those its filters reject
 * on the way), at most one tie group and one row past it; trimming reads
 * at most what is left of 2 * (offset + limit) + 1 after the change's
 * other reads, so a large trim (after the window shrinks) is spread over
 * several changes. Space: the loaded prefix, about 2 * (offset + limit)
 * rows plus one tie group (and the rows filters reject).
 */
#ifndef LDB_LIVE_WINDOW_H
#define LDB_LIVE_WINDOW_H

#include <stdbool.h>

#include "live/live_internal.h"

struct window_loader;
struct table_delta;

/* Decides, for the rewritten root plan, whether its window can be fed by
 * a loader, and if so makes the bounded source. Called before the plan's
 * operators are compiled (a bounded table gets no index arrangements). */
int live_window_plan(struct live_program *prog, const struct plan *root);

/* Forwards the changes of the driving table that touch the prefix. */
int window_loader_push(struct window_loader *ld, const struct table_delta *td);
/* After a run: loads more rows if the window is short; *pushed says
 * whether another run is needed. */
int window_loader_settle(struct window_loader *ld, bool *pushed);
/* At the end of every change, once its result is installed: unloads rows
 * past the window, within the change's budget; *pushed as above. */
int window_loader_trim(struct window_loader *ld, bool *pushed);
/* The window moved: the prefix must cover offset + limit rows. */
void window_loader_resize(struct window_loader *ld, int64_t offset, int64_t limit);
void window_loader_free(struct window_loader *ld);

/* The table and column the result's window is ordered by first (its
 * first ORDER BY term, a column of a scan the window's rows come from
 * through filters and projections only), with that term's direction,
 * NULL placement and collation; NULL when there is no such window. */
struct table *live_window_order(const struct live_program *prog, uint32_t *col, bool *desc,
                                bool *nulls_first, enum ldb_collation *coll);

#endif
