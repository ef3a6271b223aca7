/*
 * window.h - bounded ordered input for ORDER BY ... LIMIT live queries
 * (seed 003: the rows law and the work law).
 *
 * When the window's order is served by an ordered index of the table that
 * drives the query (the leftmost scan, reached through filters,
 * projections and left-preserving joins only), the graph is not fed the
 * whole table. A loader keeps the table's rows up to a boundary position
 * in index order loaded (the "prefix" L): after every run, if the top-k
 * holds fewer than offset + limit rows, it reads the next rows after the
 * boundary from the index; a commit's changes are forwarded only when
 * they touch L. Rows past the boundary cannot be in the window because L
 * already has enough rows that sort before them. When inserts have grown
 * L well past the window, trimming moves the boundary back to the last
 * window row and unloads the rest.
 *
 * Work: a change reads at most the rows that refill the window (one per
 * row that left it, plus the rows the filter rejects on the way, plus the
 * boundary's tie group when the index serves only a prefix of the ORDER
 * BY); trimming reads the rows it unloads. Space: the loaded prefix, at
 * most about 2 * (offset + limit) rows plus one tie group.
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
/* After a published result is installed: unloads rows far past the
 * window; *pushed as above. */
int window_loader_trim(struct window_loader *ld, bool *pushed);
/* The window moved: the prefix must cover offset + limit rows. */
void window_loader_resize(struct window_loader *ld, int64_t offset, int64_t limit);
void window_loader_free(struct window_loader *ld);

#endif
