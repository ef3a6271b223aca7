/*
 * slt_known.c - the sqllogictest records livedb fails on purpose, each
 * with the reason: a deliberate difference from SQLite (docs/SQL.md,
 * "Differences from SQLite") that the record's expected result cannot
 * accommodate. Keep it short: a failure that is a bug belongs in the
 * engine, not here.
 */
#include "slt.h"

const slt_deviation slt_livedb_deviations[] = {
    { "evidence/slt_lang_aggfunc.test", 480,
      "sum() of integers past 2^63 is the error 'integer overflow' (SQL.md difference 1; "
      "SQLite documents it too, and 3.40 fails this record as well)" },
};

const int slt_livedb_ndeviations =
    (int)(sizeof slt_livedb_deviations / sizeof slt_livedb_deviations[0]);
