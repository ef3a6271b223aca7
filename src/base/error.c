/*
 * error.c - English text for result codes.
 */
#include "livedb.h"

const char *ldb_errstr(int rc)
{
    switch (rc) {
    case LDB_OK: return "not an error";
    case LDB_ERROR: return "SQL error or failure";
    case LDB_NOMEM: return "out of memory";
    case LDB_CONSTRAINT: return "constraint failed";
    case LDB_MISUSE: return "API misuse";
    case LDB_RANGE: return "value out of range";
    case LDB_TYPE: return "wrong type";
    case LDB_NOTFOUND: return "not found";
    case LDB_ABORT: return "aborted by callback";
    case LDB_INTERNAL: return "internal error";
    case LDB_UNSUPPORTED: return "not supported";
    case LDB_INTERRUPT: return "interrupted";
    case LDB_BUSY: return "busy: timed out, or the database is open elsewhere";
    case LDB_IOERR: return "disk I/O error";
    case LDB_CORRUPT: return "database file is damaged";
    case LDB_FULL: return "disk is full";
    case LDB_CANTOPEN: return "cannot open the database file";
    case LDB_ROW: return "row ready";
    case LDB_DONE: return "statement done";
    default: return "unknown result code";
    }
}
