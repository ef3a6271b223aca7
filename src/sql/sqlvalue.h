/*
 * sqlvalue.h - the SQL meaning of values: SQLite's conversions between
 * text and numbers, CAST, arithmetic with overflow detection, and the
 * comparison rule. Shared by the evaluator (eval.c), the scalar functions
 * (func*.c) and the executor, so that one rule exists for each question.
 *
 * Conventions: inputs are borrowed; outputs are new references. Functions
 * that can fail return a result code and describe the failure in the
 * given eval_error (the caller adds the source position).
 */
#ifndef LDB_SQL_SQLVALUE_H
#define LDB_SQL_SQLVALUE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sql/expr.h"

/* A value as an operand of arithmetic: numbers as they are, BOOLEAN as
 * 0/1, TEXT and BLOB by SQLite's reading of their numeric prefix after
 * white space ('12abc' is 12, '1e2x' is 100.0, 'abc' is 0; INTEGER when
 * the prefix is an integer that fits), NULL stays NULL. Never allocates. */
value sqlv_numeric(const value *v);

/* A value as an integer argument (substr, round, LIMIT ...): REAL
 * truncates toward zero (saturating), text by prefix. False for NULL. */
bool sqlv_int64(const value *v, int64_t *out);

/* A value as a double (NULL gives 0.0). */
double sqlv_double(const value *v);

/*
 * The text form of a value for string functions and ||: TEXT as is,
 * numbers as value_format writes them, BOOLEAN as true/false, BLOB bytes
 * as they are. NULL must be handled by the caller. *out is TEXT.
 */
int sqlv_to_text(const value *v, value *out);

/* Bytes of TEXT or BLOB, or of the text form of another value, written
 * into buf (size at least 64) when the value is not a string. */
const char *sqlv_bytes(const value *v, char *buf, size_t *len);

/*
 * CAST(v AS to). SQLite's rules: text is read by its numeric prefix
 * ('12abc' AS INTEGER is 12), REAL to INTEGER truncates and saturates,
 * NUMERIC keeps INTEGER, makes integral text an INTEGER and keeps REAL.
 * BOOLEAN: numbers are true when non-zero, text must be true/false/1/0
 * (else LDB_ERROR). COL_ANY returns v unchanged.
 */
int sqlv_cast(const value *v, enum col_type to, value *out,
              struct eval_error *err);

/*
 * Binary arithmetic and bit operators (EOP_ADD .. EOP_RSHIFT, not
 * CONCAT). NULL operands give NULL, x/0 and x%0 give NULL, INTEGER
 * overflow is LDB_ERROR "integer overflow".
 */
int sqlv_arith(enum expr_op op, const value *a, const value *b, value *out,
               struct eval_error *err);

/* Unary minus and ~. */
int sqlv_negate(const value *a, value *out, struct eval_error *err);
int sqlv_bitnot(const value *a, value *out);

/* a || b for non-NULL values. */
int sqlv_concat(const value *a, const value *b, value *out);

/*
 * The SQL comparison of two non-NULL values: affinity aff is applied to
 * both (sql_apply_affinity), then value_cmp under coll. *cmp is -1, 0, 1.
 * LDB_NOMEM possible.
 */
int sqlv_compare(const value *a, const value *b, enum col_type aff,
                 enum ldb_collation coll, int *cmp);

/* Sets an error message (printf format) and returns code; the position
 * is left as it was. sqlv_verror takes the arguments as a va_list. */
int sqlv_error(struct eval_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int sqlv_verror(struct eval_error *err, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
