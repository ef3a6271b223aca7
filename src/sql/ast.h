/*
 * ast.h - the syntax tree of one SQL statement: what the parser builds and
 * what the binder, EXPLAIN and stored view definitions read.
 *
 * Ownership: every node, list and string of a statement lives in the arena
 * of its sql_ast (parser.h) and dies with sql_ast_free. Nodes are plain
 * structs with public fields; later stages read them and may annotate their
 * own side tables, but never free anything.
 *
 * Positions: every node carries `off`, the byte offset of its first token
 * in the text given to the parser (not relative to the statement), and
 * most carry `len`, the bytes up to the end of its last token, so
 * text + off .. text + off + len is its exact source (without enclosing
 * parentheses). sql_ast_locate (parser.h) turns an offset into a line and
 * column for error messages.
 *
 * Shape:
 * - Lists are (n, array) pairs; an empty list has n == 0 and may have a
 *   NULL array. Optional children are NULL when absent; optional names have
 *   str == NULL.
 * - Names keep their original spelling, unescaped, with a flag saying
 *   whether they were quoted; comparing them case-insensitively is the
 *   binder's job.
 * - Parentheses leave no node: (a + b) * c is MUL(ADD(a, b), c). A
 *   parenthesized list of two or more expressions is an AST_ROW.
 * - Literal numbers are never negative: -5 is NEG(5). The exceptions are
 *   hex literals with the top bit set, which wrap to negative INTEGERs
 *   like SQLite's, and -9223372036854775808, which the parser folds into
 *   one INTEGER literal because 9223372036854775808 alone does not fit.
 * - Every expression records `height`, the height of its subtree (a leaf
 *   is 1), and the parser bounds it (SQL_MAX_DEPTH), so recursive walks
 *   over a tree the parser accepted cannot exhaust the stack.
 */
#ifndef LDB_SQL_AST_H
#define LDB_SQL_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "value/value.h"

struct strbuf;

/* Deepest nesting the parser accepts, in parser recursion and in the height
 * of any tree it builds (SQLite's default expression depth limit). */
#define SQL_MAX_DEPTH 1000

typedef struct ast_expr ast_expr;
typedef struct ast_select ast_select;
typedef struct ast_stmt ast_stmt;

/* ---- names and small pieces ------------------------------------------------ */

typedef struct ast_name {
    const char *str; /* NUL-terminated, unescaped; NULL when absent */
    uint32_t len;
    uint32_t off;    /* offset of the name's token */
    bool quoted;     /* written "x", `x`, [x] or 'x' */
} ast_name;

/* [schema.]name */
typedef struct ast_qname {
    ast_name schema; /* absent unless written */
    ast_name name;
} ast_qname;

typedef struct ast_expr_list {
    uint32_t n;
    ast_expr **items;
} ast_expr_list;

typedef struct ast_name_list {
    uint32_t n;
    ast_name *items;
} ast_name_list;

/* A type name as written, e.g. VARCHAR(10), DOUBLE PRECISION. Affinity
 * rules (contains "INT", ...) are the binder's. */
typedef struct ast_type {
    const char *name;    /* words joined by one space; NULL when no type */
    uint32_t off, len;   /* source span of the whole type name */
    uint8_t nargs;       /* 0, 1 or 2 */
    const char *args[2]; /* signed numbers as written: "10", "-3", "+2.5" */
} ast_type;

enum ast_nulls { AST_NULLS_DEFAULT, AST_NULLS_FIRST, AST_NULLS_LAST };

/* ORDER BY term, indexed column, conflict target column. */
typedef struct ast_order_term {
    ast_expr *expr; /* COLLATE appears as an AST_COLLATE node on top */
    bool desc;
    enum ast_nulls nulls;
} ast_order_term;

typedef struct ast_order_list {
    uint32_t n;
    ast_order_term *items;
} ast_order_list;

/* ---- expressions ------------------------------------------------------------ */

enum ast_expr_kind {
    AST_LITERAL,   /* u.literal */
    AST_CURRENT,   /* u.current: CURRENT_DATE / _TIME / _TIMESTAMP */
    AST_COLUMN,    /* u.column: [[schema.]table.]column */
    AST_PARAM,     /* u.param */
    AST_UNARY,     /* u.unary */
    AST_BINARY,    /* u.binary */
    AST_COLLATE,   /* u.collate: operand COLLATE name */
    AST_BETWEEN,   /* u.between */
    AST_IN_LIST,   /* u.in: operand [NOT] IN (list); the list may be empty */
    AST_IN_SELECT, /* u.in: operand [NOT] IN (select) */
    AST_IN_TABLE,  /* u.in: operand [NOT] IN [schema.]table */
    AST_LIKE,      /* u.like: LIKE, GLOB, REGEXP, MATCH */
    AST_CASE,      /* u.case_ */
    AST_CAST,      /* u.cast */
    AST_CALL,      /* u.call: function or aggregate call */
    AST_EXISTS,    /* u.subquery: EXISTS (select); NOT EXISTS is NOT(EXISTS) */
    AST_SUBQUERY,  /* u.subquery: scalar (select) */
    AST_ARRAY,     /* u.subquery: ARRAY (select), every row as one value */
    AST_LIVE,      /* u.subquery: LIVE (select), a child live result */
    AST_ROW        /* u.row: (a, b, ...) with two or more items */
};

/* Precedence levels, loosest first (docs/SQL.md has the table). Binary
 * operators are left-associative within a level. */
enum ast_prec {
    AST_PREC_OR = 1,
    AST_PREC_AND,
    AST_PREC_NOT,     /* prefix NOT */
    AST_PREC_EQ,      /* = != IS IN LIKE BETWEEN ISNULL ... */
    AST_PREC_CMP,     /* < <= > >= */
    AST_PREC_BIT,     /* & | << >> */
    AST_PREC_ADD,     /* + - */
    AST_PREC_MUL,     /* * / % */
    AST_PREC_CONCAT,  /* || */
    AST_PREC_COLLATE, /* postfix COLLATE */
    AST_PREC_UNARY,   /* prefix - + ~ */
    AST_PREC_PRIMARY
};

/* Operators of AST_UNARY, AST_BINARY and AST_LIKE nodes. */
enum ast_op {
    /* unary */
    AST_OP_NEG,
    AST_OP_PLUS,
    AST_OP_BITNOT,
    AST_OP_NOT,
    AST_OP_ISNULL,  /* x IS NULL, x ISNULL */
    AST_OP_NOTNULL, /* x IS NOT NULL, x NOTNULL, x NOT NULL */
    /* binary */
    AST_OP_OR,
    AST_OP_AND,
    AST_OP_EQ,     /* = and == */
    AST_OP_NE,     /* != and <> */
    AST_OP_IS,     /* IS, IS NOT DISTINCT FROM */
    AST_OP_IS_NOT, /* IS NOT, IS DISTINCT FROM */
    AST_OP_LT,
    AST_OP_LE,
    AST_OP_GT,
    AST_OP_GE,
    AST_OP_BITAND,
    AST_OP_BITOR,
    AST_OP_LSHIFT,
    AST_OP_RSHIFT,
    AST_OP_ADD,
    AST_OP_SUB,
    AST_OP_MUL,
    AST_OP_DIV,
    AST_OP_MOD,
    AST_OP_CONCAT,
    /* pattern matching (AST_LIKE) */
    AST_OP_LIKE,
    AST_OP_GLOB,
    AST_OP_REGEXP,
    AST_OP_MATCH
};

enum ast_current { AST_CURRENT_DATE, AST_CURRENT_TIME, AST_CURRENT_TIMESTAMP };

typedef struct ast_when {
    ast_expr *when, *then;
} ast_when;

struct ast_expr {
    uint8_t kind;    /* enum ast_expr_kind */
    uint16_t height; /* of this subtree; a leaf is 1 */
    uint32_t off, len;
    union {
        /* NULL, BOOLEAN, INTEGER, REAL, TEXT or BLOB. A TEXT/BLOB too long
         * to be inline holds a reference that sql_ast_free releases; the
         * binder takes its own with value_copy. */
        struct {
            value v;
            ast_expr *next_owned; /* chain of literals holding a reference */
        } literal;
        enum ast_current current;
        struct {
            ast_name schema, table, column; /* schema, table may be absent */
        } column;
        /*
         * Parameters are numbered per statement like SQLite: ? takes the
         * largest number so far plus one, ?NNN is NNN, and a named one
         * (:x, @x, $x; the prefix is part of the name) takes the next
         * number on its first use and keeps it. sql_ast.param_names maps
         * numbers back to names.
         */
        struct {
            uint32_t number; /* 1-based */
            ast_name name;   /* absent for ? and ?NNN */
        } param;
        struct {
            enum ast_op op;
            ast_expr *operand;
        } unary;
        struct {
            enum ast_op op;
            ast_expr *left, *right;
        } binary;
        struct {
            ast_expr *operand;
            ast_name collation;
        } collate;
        struct {
            bool negated;
            ast_expr *operand, *low, *high;
        } between;
        struct {
            bool negated;
            ast_expr *operand;
            ast_expr_list list; /* AST_IN_LIST */
            ast_select *select; /* AST_IN_SELECT */
            ast_qname table;    /* AST_IN_TABLE */
        } in;
        struct {
            enum ast_op op; /* AST_OP_LIKE .. AST_OP_MATCH */
            bool negated;
            ast_expr *operand, *pattern, *escape; /* escape may be NULL */
        } like;
        struct {
            ast_expr *base; /* CASE base WHEN ...; NULL for searched CASE */
            uint32_t nwhen;
            ast_when *whens;
            ast_expr *else_expr; /* may be NULL */
        } case_;
        struct {
            ast_expr *operand;
            ast_type type;
        } cast;
        struct {
            ast_name name;
            bool star;     /* f(*) */
            bool distinct; /* f(DISTINCT x) */
            ast_expr_list args;
            ast_order_list order_by; /* f(x ORDER BY y) */
            ast_expr *filter;        /* FILTER (WHERE e), or NULL */
        } call;
        struct {
            ast_select *select;
        } subquery;
        ast_expr_list row;
    } u;
};

/* ---- queries ------------------------------------------------------------------ */

enum ast_result_kind {
    AST_RESULT_EXPR,      /* expr [AS alias] */
    AST_RESULT_STAR,      /* * */
    AST_RESULT_TABLE_STAR /* table.* */
};

typedef struct ast_result_col {
    enum ast_result_kind kind;
    ast_expr *expr; /* AST_RESULT_EXPR */
    ast_name table; /* AST_RESULT_TABLE_STAR */
    ast_name alias; /* AST_RESULT_EXPR, may be absent */
    /* Source span of the expression as written, parentheses included:
     * SQLite names an unaliased result column after this text. */
    uint32_t off, len;
} ast_result_col;

typedef struct ast_result_list {
    uint32_t n;
    ast_result_col *items;
} ast_result_list;

enum ast_from_kind { AST_FROM_TABLE, AST_FROM_SUBQUERY, AST_FROM_JOIN };

/* Index hint of a table in FROM. */
enum ast_indexed {
    AST_INDEXED_DEFAULT,
    AST_INDEXED_BY, /* INDEXED BY name: use this index */
    AST_NOT_INDEXED /* NOT INDEXED: use no index */
};

enum ast_join_kind {
    AST_JOIN_COMMA, /* a, b */
    AST_JOIN_INNER, /* a JOIN b, a INNER JOIN b */
    AST_JOIN_CROSS,
    AST_JOIN_LEFT,
    AST_JOIN_RIGHT,
    AST_JOIN_FULL
};

/* FROM clause: a left-deep tree of joins over tables and subqueries. A
 * parenthesized join appears as a join in a right operand. */
typedef struct ast_from ast_from;
struct ast_from {
    enum ast_from_kind kind;
    uint32_t off, len;
    ast_name alias; /* TABLE and SUBQUERY; may be absent */
    enum ast_indexed indexed; /* TABLE */
    ast_name index;           /* TABLE with INDEXED BY */
    union {
        ast_qname table;
        ast_select *subquery;
        struct {
            enum ast_join_kind kind;
            bool natural;
            ast_from *left, *right;
            ast_expr *on;             /* may be NULL */
            ast_name_list using_cols; /* USING (a, b) */
        } join;
    } u;
};

/* One SELECT ... FROM ... WHERE ... GROUP BY ... HAVING. */
typedef struct ast_select_core {
    bool distinct;
    ast_result_list cols;
    ast_from *from; /* NULL without FROM */
    ast_expr *where;
    ast_expr_list group_by;
    ast_expr *having;
} ast_select_core;

enum ast_body_kind { AST_BODY_SELECT, AST_BODY_VALUES, AST_BODY_COMPOUND };

enum ast_setop { AST_UNION, AST_UNION_ALL, AST_INTERSECT, AST_EXCEPT };

/* The body of a query: a left-deep tree of set operations (all of one
 * precedence, left-associative, like SQLite) over SELECT cores and VALUES
 * lists. */
typedef struct ast_body ast_body;
struct ast_body {
    enum ast_body_kind kind;
    uint32_t off, len;
    union {
        ast_select_core select;
        struct {
            uint32_t nrows;
            ast_expr_list *rows; /* every row has the same length */
        } values;
        struct {
            enum ast_setop op;
            ast_body *left, *right;
        } compound;
    } u;
};

typedef struct ast_cte {
    ast_name name;
    ast_name_list cols; /* may be empty */
    ast_select *select;
} ast_cte;

typedef struct ast_with {
    uint32_t n;
    ast_cte *items;
} ast_with;

/* A whole query: [WITH ...] body [ORDER BY ...] [LIMIT ... [OFFSET ...]].
 * ORDER BY and LIMIT apply to the whole compound. */
struct ast_select {
    uint32_t off, len;
    uint16_t height; /* bounds every walk below this query */
    ast_with with;
    ast_body *body;
    ast_order_list order_by;
    ast_expr *limit;  /* NULL without LIMIT */
    ast_expr *offset; /* NULL without OFFSET; LIMIT a, b has offset a */
};

/* ---- statements ---------------------------------------------------------------- */

enum ast_stmt_kind {
    AST_STMT_SELECT,
    AST_STMT_INSERT,
    AST_STMT_UPDATE,
    AST_STMT_DELETE,
    AST_STMT_CREATE_TABLE,
    AST_STMT_CREATE_INDEX,
    AST_STMT_CREATE_VIEW, /* also MATERIALIZED */
    AST_STMT_DROP,
    AST_STMT_BEGIN,
    AST_STMT_COMMIT,
    AST_STMT_ROLLBACK,
    AST_STMT_SAVEPOINT,
    AST_STMT_RELEASE,
    AST_STMT_EXPLAIN,
    AST_STMT_EXPLAIN_VIEW, /* EXPLAIN MATERIALIZED VIEW name */
    AST_STMT_PRAGMA,
    AST_STMT_REINDEX,
    AST_STMT_ANALYZE,
    AST_STMT_UNSUPPORTED /* recognised and skipped; see u.unsupported */
};

/* INSERT OR x / UPDATE OR x / ON CONFLICT x of a constraint. */
enum ast_conflict {
    AST_CONFLICT_NONE,
    AST_CONFLICT_ROLLBACK,
    AST_CONFLICT_ABORT,
    AST_CONFLICT_FAIL,
    AST_CONFLICT_IGNORE,
    AST_CONFLICT_REPLACE
};

/* SET col = expr, or SET (a, b) = expr (a row or a subquery). */
typedef struct ast_assign {
    ast_name_list cols; /* one name unless the parenthesized form */
    bool parenthesized;
    ast_expr *value;
} ast_assign;

typedef struct ast_assign_list {
    uint32_t n;
    ast_assign *items;
} ast_assign_list;

/* ON CONFLICT [(target) [WHERE e]] DO NOTHING | DO UPDATE SET ... [WHERE e].
 * Inside DO UPDATE, excluded.col is an ordinary qualified column. */
typedef struct ast_upsert {
    uint32_t off;
    ast_order_list target; /* may be empty */
    ast_expr *target_where;
    bool do_update;
    ast_assign_list set;
    ast_expr *where;
} ast_upsert;

typedef struct ast_insert {
    ast_with with;
    enum ast_conflict or_action; /* REPLACE INTO is OR REPLACE */
    ast_qname table;
    ast_name alias;
    ast_name_list cols;
    ast_select *source; /* VALUES or a query; NULL for DEFAULT VALUES */
    uint32_t nupsert;
    ast_upsert *upserts;
    ast_result_list returning;
} ast_insert;

typedef struct ast_update {
    ast_with with;
    enum ast_conflict or_action;
    ast_qname table;
    ast_name alias;
    ast_assign_list set;
    ast_expr *where;
    ast_result_list returning;
} ast_update;

typedef struct ast_delete {
    ast_with with;
    ast_qname table;
    ast_name alias;
    ast_expr *where;
    ast_result_list returning;
} ast_delete;

enum ast_fk_action {
    AST_FK_DEFAULT, /* not given */
    AST_FK_SET_NULL,
    AST_FK_SET_DEFAULT,
    AST_FK_CASCADE,
    AST_FK_RESTRICT,
    AST_FK_NO_ACTION
};

/* REFERENCES table [(cols)] [ON DELETE a] [ON UPDATE a]. MATCH and
 * DEFERRABLE clauses are accepted and not kept (SQLite ignores them). */
typedef struct ast_foreign_key {
    ast_name table;
    ast_name_list cols;
    enum ast_fk_action on_delete, on_update;
} ast_foreign_key;

enum ast_col_constraint_kind {
    AST_CC_PRIMARY_KEY,
    AST_CC_NOT_NULL,
    AST_CC_NULL,
    AST_CC_UNIQUE,
    AST_CC_CHECK,
    AST_CC_DEFAULT,
    AST_CC_COLLATE,
    AST_CC_REFERENCES,
    AST_CC_GENERATED /* [GENERATED ALWAYS] AS (expr) [STORED | VIRTUAL] */
};

typedef struct ast_col_constraint {
    enum ast_col_constraint_kind kind;
    uint32_t off;
    ast_name name;                 /* CONSTRAINT name, may be absent */
    enum ast_conflict on_conflict; /* PRIMARY KEY, NOT NULL, UNIQUE */
    bool desc;                     /* PRIMARY KEY DESC */
    bool autoincrement;            /* PRIMARY KEY */
    bool stored;                   /* GENERATED ... STORED */
    /* CHECK, GENERATED: the expression. DEFAULT: a literal, a signed
     * number (NEG/PLUS of a literal), CURRENT_* or any expression that was
     * written in parentheses. */
    ast_expr *expr;
    ast_name collation;            /* COLLATE */
    ast_foreign_key fk;            /* REFERENCES */
} ast_col_constraint;

typedef struct ast_column_def {
    ast_name name;
    ast_type type; /* type.name NULL when no type is given */
    uint32_t ncons;
    ast_col_constraint *cons;
} ast_column_def;

enum ast_table_constraint_kind {
    AST_TC_PRIMARY_KEY,
    AST_TC_UNIQUE,
    AST_TC_CHECK,
    AST_TC_FOREIGN_KEY
};

typedef struct ast_table_constraint {
    enum ast_table_constraint_kind kind;
    uint32_t off;
    ast_name name;                 /* CONSTRAINT name, may be absent */
    ast_order_list cols;           /* PRIMARY KEY, UNIQUE */
    bool autoincrement;            /* PRIMARY KEY (x AUTOINCREMENT) */
    enum ast_conflict on_conflict; /* PRIMARY KEY, UNIQUE */
    ast_expr *check;               /* CHECK */
    ast_name_list fk_cols;         /* FOREIGN KEY (cols) */
    ast_foreign_key fk;            /* FOREIGN KEY ... REFERENCES */
} ast_table_constraint;

typedef struct ast_create_table {
    bool temp, if_not_exists;
    ast_qname name;
    uint32_t ncols;
    ast_column_def *cols;
    uint32_t ncons;
    ast_table_constraint *cons;
    bool without_rowid, strict; /* table options */
    ast_select *as_select;      /* CREATE TABLE ... AS select: no columns */
} ast_create_table;

enum ast_index_using { AST_USING_DEFAULT, AST_USING_BTREE, AST_USING_HASH };

typedef struct ast_create_index {
    bool unique, if_not_exists;
    ast_qname name;
    ast_name table;
    ast_order_list cols; /* expressions, usually plain columns */
    enum ast_index_using using_;
    ast_expr *where; /* partial index */
} ast_create_index;

typedef struct ast_create_view {
    bool temp, materialized, if_not_exists;
    ast_qname name;
    ast_name_list cols; /* may be empty */
    ast_select *select;
} ast_create_view;

enum ast_object {
    AST_OBJ_TABLE,
    AST_OBJ_INDEX,
    AST_OBJ_VIEW,
    AST_OBJ_MATERIALIZED_VIEW,
    AST_OBJ_TRIGGER
};

enum ast_begin_mode {
    AST_BEGIN_DEFAULT,
    AST_BEGIN_DEFERRED,
    AST_BEGIN_IMMEDIATE,
    AST_BEGIN_EXCLUSIVE
};

struct ast_stmt {
    enum ast_stmt_kind kind;
    uint32_t off, len; /* the whole statement, without its ';' */
    union {
        ast_select *select;
        ast_insert insert;
        ast_update update;
        ast_delete delete_;
        ast_create_table create_table;
        ast_create_index create_index;
        ast_create_view create_view;
        struct {
            enum ast_object object;
            bool if_exists;
            ast_qname name;
        } drop;
        enum ast_begin_mode begin;
        ast_name rollback_to; /* ROLLBACK TO name; absent for ROLLBACK */
        ast_name savepoint;   /* SAVEPOINT name, RELEASE name */
        struct {
            bool query_plan;
            ast_stmt *stmt;
        } explain;
        ast_qname explain_view;
        /* PRAGMA name, PRAGMA name = value, PRAGMA name(value). A value is
         * either an expression (a string or a signed number) or a word
         * (a name or keyword such as ON). */
        struct {
            ast_qname name;
            ast_expr *value;
            ast_name word;
        } pragma;
        ast_qname target; /* REINDEX, ANALYZE: name absent for the bare statement */
        /* A statement livedb recognises but does not run: what names it
         * ("CREATE TRIGGER", "ATTACH", ...); name is the object's name
         * when the statement has one. */
        struct {
            const char *what;
            ast_qname name;
        } unsupported;
    } u;
};

/* ---- printing ------------------------------------------------------------------------ */

/*
 * Canonical SQL: upper-case keywords, one space between tokens, only the
 * parentheses precedence needs, names quoted with "..." exactly when they
 * were quoted. Parsing the output gives the same tree again (positions
 * aside), so the text serves EXPLAIN, stored view definitions and tests.
 * Forms with synonyms print one way: != for <>, IS NOT for IS DISTINCT
 * FROM, INSERT OR REPLACE for REPLACE, LIMIT b OFFSET a for LIMIT a, b, and
 * parameters ? as ?N.
 *
 * AST_SQL_PARENS puts every operator expression below the top in
 * parentheses, which makes the tree shape visible (tests use it to check
 * precedence).
 *
 * Errors: out of memory is left in the strbuf (sb_error).
 */
enum { AST_SQL_PARENS = 1 };

void ast_expr_to_sql(struct strbuf *sb, const ast_expr *e, unsigned flags);
void ast_select_to_sql(struct strbuf *sb, const ast_select *s,
                       unsigned flags);
void ast_stmt_to_sql(struct strbuf *sb, const ast_stmt *st, unsigned flags);

/* SQL text of an operator ("+", "IS NOT", "LIKE", ...). */
const char *ast_op_name(enum ast_op op);
/* Precedence level of an operator. */
enum ast_prec ast_op_prec(enum ast_op op);

/* ---- walking -------------------------------------------------------------------------- */

/*
 * Pre-order walk in source order over every expression and (sub)query
 * reachable from a node, descending into subqueries, CTEs, derived tables,
 * DDL defaults and checks. Each callback (either may be NULL) returns
 * AST_WALK_CONTINUE, AST_WALK_SKIP (do not visit this node's children), or
 * any other value, which stops the walk and is returned from it.
 */
enum { AST_WALK_CONTINUE = 0, AST_WALK_SKIP = -1 };

typedef struct ast_visitor ast_visitor;
struct ast_visitor {
    int (*expr)(ast_visitor *v, ast_expr *e);
    int (*select)(ast_visitor *v, ast_select *s);
};

int ast_walk_expr(ast_visitor *v, ast_expr *e);
int ast_walk_select(ast_visitor *v, ast_select *s);
int ast_walk_stmt(ast_visitor *v, ast_stmt *st);

#endif
