/*
 * schema.h - table schemas as the storage layer keeps them, and the type
 * affinity rule that decides what a column accepts.
 *
 * The SQL layer describes a table with a struct table_def (borrowed
 * strings and values, valid only for the call); the store turns it into a
 * struct schema that it owns. Invariants of a built schema:
 * - column names are unique (ASCII case-insensitive);
 * - every table has a primary key: the declared one, or a hidden INTEGER
 *   column named "rowid" appended after the declared columns (so declared
 *   columns keep their positions and SELECT * is cols[0..nvisible));
 * - primary key columns are NOT NULL; an insert that gives NULL for an
 *   auto-rowid key (the hidden rowid, or a single INTEGER PRIMARY KEY)
 *   gets the next rowid instead;
 * - defaults are constants already converted to their column's type.
 *
 * Affinity (docs/STORAGE.md has the full table): a value is stored as is
 * when the column accepts its type, converted when the conversion is
 * lossless and unambiguous (TEXT '12' -> INTEGER 12 in an INTEGER column),
 * and rejected with LDB_TYPE otherwise.
 */
#ifndef LDB_STORAGE_SCHEMA_H
#define LDB_STORAGE_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

#include "value/value.h"

/* Declared column types. ANY accepts everything unchanged; NUMERIC is the
 * SQLite catch-all for numeric declarations (DECIMAL(10,2), ...). */
enum col_type {
    COL_ANY = 0,
    COL_INTEGER,
    COL_REAL,
    COL_TEXT,
    COL_BLOB,
    COL_BOOLEAN,
    COL_NUMERIC
};

/* Upper-case name of a column type ("INTEGER", ...); never NULL. */
const char *col_type_name(enum col_type t);

/*
 * The column type for a declared type name, by SQLite's substring rules
 * plus BOOLEAN: contains "INT" -> INTEGER; "CHAR", "CLOB" or "TEXT" ->
 * TEXT; "BLOB" -> BLOB; "REAL", "FLOA" or "DOUB" -> REAL; "BOOL" ->
 * BOOLEAN; empty (no declared type) or "ANY" -> ANY; anything else ->
 * NUMERIC. Case-insensitive; decl need not be NUL-terminated.
 */
enum col_type col_type_from_decl(const char *decl, size_t n);

/* Most columns in a primary key or an index key. */
#define SCHEMA_MAX_KEY 32

/* ---- what the SQL layer passes to CREATE TABLE ------------------------ */

struct column_def {
    const char *name;          /* borrowed, NUL-terminated */
    enum col_type type;
    enum ldb_collation coll;   /* for TEXT comparisons and keys */
    bool not_null;
    bool has_default;
    value dflt;                /* constant; borrowed; converted at create */
};

/* A UNIQUE constraint: positions of its columns in the column list. */
struct unique_def {
    const uint32_t *cols;
    uint32_t ncols;
};

struct table_def {
    const char *name;                 /* borrowed */
    const struct column_def *cols;
    uint32_t ncols;
    const uint32_t *pk;               /* PRIMARY KEY column positions */
    uint32_t npk;                     /* 0: hidden rowid */
    const struct unique_def *uniques; /* each becomes a unique index */
    uint32_t nuniques;
    const char *sql;                  /* DDL text kept for .schema; may be NULL */
    bool key_index;                   /* a key of several columns also gets an
                                         automatic ordered index, so that its
                                         leading columns can be sought */
    bool temp;                        /* TEMP: never written to a durable
                                         database's files */
};

/* ---- what the store keeps ------------------------------------------------ */

struct column {
    char *name;            /* owned */
    enum col_type type;
    enum ldb_collation coll;
    bool not_null;
    bool hidden;           /* not part of SELECT *: the automatic rowid, or
                              a layer's own column (store_create_table_opts) */
    bool has_default;
    value dflt;            /* owned; NULL when there is no default */
};

struct schema {
    struct column *cols;   /* ncols entries, hidden rowid last if any */
    uint32_t ncols;        /* all columns, hidden included */
    uint32_t nvisible;     /* declared columns: values a write supplies */
    uint32_t *pk;          /* primary key column positions, in key order */
    uint32_t npk;
    /* The key is one INTEGER column whose NULL asks for the next rowid
     * (hidden rowid, or a declared INTEGER PRIMARY KEY). */
    bool rowid_auto;
};

/*
 * Builds an owned schema from def (def is only read). On failure returns
 * LDB_ERROR (invalid definition: duplicate or unknown column, bad default;
 * a message naming the table and column is written to err), LDB_MISUSE or
 * LDB_NOMEM, and *sc holds nothing to free.
 */
int schema_build(struct schema *sc, const struct table_def *def, char *err,
                 size_t errlen);
void schema_free(struct schema *sc);

/*
 * Converts in to the type col accepts, into *out (which then owns its
 * value). NULL passes unchanged (NOT NULL is checked by the caller).
 * Returns LDB_OK, LDB_TYPE (the value is not accepted; *out is NULL) or
 * LDB_NOMEM. in is borrowed.
 */
int column_coerce(const struct column *col, const value *in, value *out);

/* Writes "TEXT 'abc'", "REAL 1.5", "BLOB X'00ff'"... into buf (always
 * NUL-terminated, long values cut with "..."): the value part of a type
 * error message. */
void format_value_for_error(const value *v, char *buf, size_t n);

/* Position of the column with this name (ASCII case-insensitive), or -1. */
int schema_column(const struct schema *sc, const char *name);

/* True when a and b are equal as SQL identifiers (ASCII case folding). */
bool name_eq(const char *a, const char *b);

/* Bytes held by the schema (names, defaults, arrays). */
size_t schema_bytes(const struct schema *sc);

#endif
