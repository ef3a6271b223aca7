/*
 * oracle_known.h - livedb bugs that the live-query and materialized-view
 * oracles have found and still run past, one named switch each.
 *
 * A switch set to 1 makes the oracles tolerate that one bug: they relax
 * the one check it breaks, or keep their generator away from the one
 * shape that shows it (each use says which). Every other check stays on.
 * When the fix lands, set the switch to 0 (then delete it and its uses):
 * the oracles must then pass with it off. LDB_ORACLE_STRICT=1 in the
 * environment turns every switch off at run time, to see which bugs are
 * still there without rebuilding.
 *
 * Each bug has a minimized reproduction in the oracle's findings
 * (oracle-findings.md, kept by the lead); the comment here is the short
 * form.
 */
#ifndef LDB_TESTS_ORACLE_KNOWN_H
#define LDB_TESTS_ORACLE_KNOWN_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* An ORDER BY live query publishes "update @p: r -> r" (same row, same
 * position, same count) when only a hidden ORDER BY value of the row
 * changed. Relaxed: the check that no update is a no-op. */
#define KNOWN_UNCHANGED_UPDATE 1

/* true when the oracle runs past bug `on` (a KNOWN_* switch). */
static inline bool known_bug(int on)
{
    const char *strict = getenv("LDB_ORACLE_STRICT");
    return on && !(strict && *strict && strcmp(strict, "0") != 0);
}

#endif
