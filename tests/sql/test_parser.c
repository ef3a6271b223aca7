/*
 * test_parser.c - the SQL front end case by case: lexer, every statement
 * and expression form, precedence, parameters, positions, error messages
 * with their line and column, nesting limits, script splitting, the
 * walker, and allocation failures.
 *
 * Most statement cases go through canon(), which parses, prints canonical
 * SQL and also checks that the printed text parses back to the same tree
 * (print -> parse -> print fixed point, same fully parenthesized form).
 */
#include "test.h"

#include "base/mem.h"
#include "base/strbuf.h"
#include "sql/lexer.h"
#include "sql/parser.h"

#include <math.h>
#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------------ */

static sql_ast *parse_ok(const char *sql)
{
    sql_ast *ast;
    sql_error err;
    int rc = sql_parse(sql, strlen(sql), &ast, &err);
    CHECKF(rc == LDB_OK, "parse failed: %s\n  sql: %s", err.msg, sql);
    return ast;
}

static void print_into(char *buf, size_t size, const ast_stmt *st,
                       unsigned flags)
{
    strbuf sb = STRBUF_INIT;
    ast_stmt_to_sql(&sb, st, flags);
    CHECK(sb_error(&sb) == 0);
    CHECKF(sb.len < size, "printed statement too long for the test buffer");
    memcpy(buf, sb_str(&sb), sb.len + 1);
    sb_free(&sb);
}

/* Canonical SQL of a statement, checked to be a fixed point. */
static const char *canon(const char *sql)
{
    static char out[8192];
    char again[8192], parens[8192], parens_again[8192];
    sql_ast *ast = parse_ok(sql);
    print_into(out, sizeof out, ast->stmt, 0);
    print_into(parens, sizeof parens, ast->stmt, AST_SQL_PARENS);
    sql_ast_free(ast);
    ast = parse_ok(out);
    print_into(again, sizeof again, ast->stmt, 0);
    print_into(parens_again, sizeof parens_again, ast->stmt, AST_SQL_PARENS);
    sql_ast_free(ast);
    CHECKF(strcmp(out, again) == 0, "not a fixed point:\n  %s\n  %s", out,
           again);
    CHECKF(strcmp(parens, parens_again) == 0, "tree changed:\n  %s\n  %s",
           parens, parens_again);
    return out;
}

static const ast_expr *first_result(const sql_ast *ast)
{
    CHECK(ast->stmt->kind == AST_STMT_SELECT);
    const ast_body *b = ast->stmt->u.select->body;
    CHECK(b->kind == AST_BODY_SELECT);
    return b->u.select.cols.items[0].expr;
}

/* An expression printed with every operator parenthesized. */
static const char *tree(const char *expr)
{
    static char out[4096];
    char sql[4096];
    snprintf(sql, sizeof sql, "SELECT %s", expr);
    canon(sql);
    sql_ast *ast = parse_ok(sql);
    strbuf sb = STRBUF_INIT;
    ast_expr_to_sql(&sb, first_result(ast), AST_SQL_PARENS);
    CHECK(sb_error(&sb) == 0 && sb.len < sizeof out);
    memcpy(out, sb_str(&sb), sb.len + 1);
    sb_free(&sb);
    sql_ast_free(ast);
    return out;
}

static const char *parse_error(const char *sql)
{
    static sql_error err;
    sql_ast *ast;
    int rc = sql_parse(sql, strlen(sql), &ast, &err);
    CHECKF(rc == LDB_ERROR, "expected an error, got %d for: %s", rc, sql);
    CHECK(ast == NULL && err.code == LDB_ERROR);
    return err.msg;
}

#define CHECK_ERR(sql, msg) CHECK_STR(parse_error(sql), msg)

/* ---- lexer --------------------------------------------------------------------- */

static void lex_all(const char *src, token *toks, int max, int *n)
{
    lexer lx;
    lexer_init(&lx, src, (uint32_t)strlen(src), 0, 1, 0);
    *n = 0;
    do {
        CHECK(*n < max);
        lexer_next(&lx, &toks[*n]);
    } while (toks[(*n)++].kind != TK_EOF);
}

static void lexer_tokens(void)
{
    static const char src[] =
        "SELECT a.b, 'x''y' FROM [t 1] -- c\n /* d\n */ `q` \"r\"\"s\" "
        "x'0A' 12 1.5 .5 1e10 1.5E-3 0x1F 1. ? ?12 :n @m $o || * / % + - << "
        ">> & | < <= > >= = == != <> ~ . , ( ) ;";
    static const uint8_t kinds[] = {
        TK_NAME,    TK_NAME,    TK_DOT,    TK_NAME,   TK_COMMA,   TK_STRING,
        TK_NAME,    TK_QNAME,   TK_QNAME,  TK_QNAME,  TK_BLOB,    TK_INTEGER,
        TK_FLOAT,   TK_FLOAT,   TK_FLOAT,  TK_FLOAT,  TK_INTEGER, TK_FLOAT,
        TK_PARAM,   TK_PARAM,   TK_PARAM,  TK_PARAM,  TK_PARAM,   TK_CONCAT,
        TK_STAR,    TK_SLASH,   TK_PERCENT, TK_PLUS,  TK_MINUS,   TK_LSHIFT,
        TK_RSHIFT,  TK_BITAND,  TK_BITOR,  TK_LT,     TK_LE,      TK_GT,
        TK_GE,      TK_EQ,      TK_EQ,     TK_NE,     TK_NE,      TK_BITNOT,
        TK_DOT,     TK_COMMA,   TK_LPAREN, TK_RPAREN, TK_SEMI,    TK_EOF,
    };
    token t[64];
    int n;
    lex_all(src, t, 64, &n);
    CHECK_INT(n, (int)sizeof kinds);
    for (int i = 0; i < n; i++)
        CHECKF(t[i].kind == kinds[i], "token %d: kind %d, expected %d", i,
               t[i].kind, kinds[i]);
    CHECK_INT(t[0].kw, KW_SELECT);
    CHECK_INT(t[1].kw, KW_NONE);
    CHECK_INT(t[5].off, 12); /* 'x''y' */
    CHECK_INT(t[5].len, 6);
    CHECK_INT(t[9].line, 3); /* "r""s" after the two-line comment */
    CHECK_INT(lex_column(src, t[9].line_off, t[9].off), 9);
    CHECK_INT(t[47].off, sizeof src - 1); /* EOF at the end */
}

static void lexer_keywords(void)
{
    for (int k = 2; k < KW_COUNT_; k++)
        CHECKF(strcmp(kw_name((enum keyword)(k - 1)), kw_name((enum keyword)k)) < 0,
               "keyword table not sorted at %s", kw_name((enum keyword)k));
    for (int k = 1; k < KW_COUNT_; k++) {
        const char *name = kw_name((enum keyword)k);
        CHECK_INT(kw_lookup(name, strlen(name)), k);
        char lower[32];
        size_t n = strlen(name);
        for (size_t i = 0; i <= n; i++)
            lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
        CHECK_INT(kw_lookup(lower, n), k);
    }
    CHECK_INT(kw_lookup("selects", 7), KW_NONE);
    CHECK_INT(kw_lookup("CURRENT_TIMESTAMPS", 18), KW_NONE);
    CHECK(kw_is_reserved(KW_SELECT));
    CHECK(!kw_is_reserved(KW_KEY));
}

static const value *literal_of(const sql_ast *ast)
{
    const ast_expr *e = first_result(ast);
    CHECK(e->kind == AST_LITERAL);
    return &e->u.literal.v;
}

static void check_int_literal(const char *sql, int64_t want)
{
    sql_ast *ast = parse_ok(sql);
    const value *v = literal_of(ast);
    CHECKF(value_type(v) == LDB_INTEGER && v->h.u.i == want,
           "%s: not the INTEGER %lld", sql, (long long)want);
    sql_ast_free(ast);
}

static void check_real_literal(const char *sql, double want)
{
    sql_ast *ast = parse_ok(sql);
    const value *v = literal_of(ast);
    CHECKF(value_type(v) == LDB_REAL && v->h.u.r == want, "%s: not the REAL %g",
           sql, want);
    sql_ast_free(ast);
}

static void check_bytes_literal(const char *sql, enum ldb_type type,
                                const char *want, size_t n)
{
    sql_ast *ast = parse_ok(sql);
    const value *v = literal_of(ast);
    size_t len;
    const char *bytes = value_bytes(v, &len);
    CHECK(value_type(v) == type);
    CHECK(len == n && memcmp(bytes, want, n) == 0);
    sql_ast_free(ast);
}

static void literals(void)
{
    check_int_literal("SELECT 0", 0);
    check_int_literal("SELECT 0x1F", 31);
    check_int_literal("SELECT 0X00000000000000001f", 31);
    check_int_literal("SELECT 0xFFFFFFFFFFFFFFFF", -1);
    check_int_literal("SELECT 0x8000000000000000", INT64_MIN);
    check_int_literal("SELECT 9223372036854775807", INT64_MAX);
    check_int_literal("SELECT -9223372036854775808", INT64_MIN);
    check_int_literal("SELECT - 09223372036854775808", INT64_MIN);
    check_real_literal("SELECT 9223372036854775808", 9223372036854775808.0);
    check_real_literal("SELECT 1.5", 1.5);
    check_real_literal("SELECT .5", 0.5);
    check_real_literal("SELECT 1.", 1.0);
    check_real_literal("SELECT 1e10", 1e10);
    check_real_literal("SELECT 1.5E-3", 1.5e-3);
    {
        char big[400] = "SELECT 1";
        memset(big + 8, '0', 350);
        big[358] = '\0';
        check_real_literal(big, HUGE_VAL); /* printed as 1e999 */
        CHECK_STR(canon(big), "SELECT 1e999");
    }
    check_bytes_literal("SELECT 'it''s'", LDB_TEXT, "it's", 4);
    check_bytes_literal("SELECT ''", LDB_TEXT, "", 0);
    check_bytes_literal("SELECT 'a longer text that lives on the heap'",
                        LDB_TEXT, "a longer text that lives on the heap", 36);
    check_bytes_literal("SELECT X'0aFF'", LDB_BLOB, "\x0a\xff", 2);
    check_bytes_literal("SELECT x''", LDB_BLOB, "", 0);
    sql_ast *ast = parse_ok("SELECT NULL, TRUE, false, CURRENT_TIMESTAMP");
    const ast_result_list *cols = &ast->stmt->u.select->body->u.select.cols;
    CHECK(value_is_null(&cols->items[0].expr->u.literal.v));
    CHECK(value_type(&cols->items[1].expr->u.literal.v) == LDB_BOOLEAN);
    CHECK(cols->items[2].expr->u.literal.v.h.u.i == 0);
    CHECK(cols->items[3].expr->kind == AST_CURRENT);
    sql_ast_free(ast);
    CHECK_STR(canon("SELECT 0x10, -0x10, 0xFFFFFFFFFFFFFFFF, 'a''b', X'0aff', "
                    "1.50, 1e20, 9223372036854775808"),
              "SELECT 16, -16, 0xFFFFFFFFFFFFFFFF, 'a''b', X'0AFF', 1.5, "
              "1.0e+20, 9.223372036854776e+18");
}

static void identifiers(void)
{
    sql_ast *ast = parse_ok("SELECT \"a\"\"b\", [c d], `e``f`, g.\"h\", key, "
                            "Mixed FROM t");
    const ast_result_list *cols = &ast->stmt->u.select->body->u.select.cols;
    const ast_name *n = &cols->items[0].expr->u.column.column;
    CHECK_STR(n->str, "a\"b");
    CHECK(n->quoted && n->len == 3);
    CHECK_STR(cols->items[1].expr->u.column.column.str, "c d");
    CHECK_STR(cols->items[2].expr->u.column.column.str, "e`f");
    CHECK_STR(cols->items[3].expr->u.column.table.str, "g");
    CHECK(!cols->items[3].expr->u.column.table.quoted);
    CHECK_STR(cols->items[4].expr->u.column.column.str, "key");
    CHECK_STR(cols->items[5].expr->u.column.column.str, "Mixed");
    sql_ast_free(ast);
    CHECK_STR(canon("SELECT \"a\"\"b\", [c d], `e``f`, s.t.c, \"select\" FROM t"),
              "SELECT \"a\"\"b\", \"c d\", \"e`f\", s.t.c, \"select\" FROM t");
    CHECK_ERR("SELECT select", "line 1, column 8: expected an expression after "
                               "'SELECT', found 'select'");
}

static void comments(void)
{
    CHECK_STR(canon("-- leading\nSELECT /* inline */ 1 -- trailing"),
              "SELECT 1");
    CHECK_STR(canon("SELECT 1 /* a ; b */ + 2;  -- done"), "SELECT 1 + 2");
    CHECK_STR(canon("SELECT 1 - -1"), "SELECT 1 - -1");
    CHECK_STR(canon("SELECT 1--1"), "SELECT 1");
}

/* ---- expressions ----------------------------------------------------------------- */

static void precedence(void)
{
    CHECK_STR(tree("1 + 2 * 3"), "1 + (2 * 3)");
    CHECK_STR(tree("(1 + 2) * 3"), "(1 + 2) * 3");
    CHECK_STR(tree("1 - 2 - 3"), "(1 - 2) - 3");
    CHECK_STR(tree("1 - (2 - 3)"), "1 - (2 - 3)");
    CHECK_STR(tree("NOT a = b"), "NOT (a = b)");
    CHECK_STR(tree("a OR b AND c"), "a OR (b AND c)");
    CHECK_STR(tree("- - 1"), "-(-1)");
    CHECK_STR(tree("x IS NOT NULL AND y"), "(x IS NOT NULL) AND y");
    CHECK_STR(tree("a BETWEEN 1 AND 2 AND c"), "(a BETWEEN 1 AND 2) AND c");
    CHECK_STR(tree("a = b IS NULL"), "(a = b) IS NULL");
    CHECK_STR(tree("a < b = c < d"), "(a < b) = (c < d)");
    CHECK_STR(tree("a & b + c"), "a & (b + c)");
    CHECK_STR(tree("a << 1 < 2"), "(a << 1) < 2");
    CHECK_STR(tree("a * b || c"), "a * (b || c)");
    CHECK_STR(tree("-a COLLATE nocase"), "(-a) COLLATE nocase");
    CHECK_STR(tree("-(a COLLATE nocase)"), "-(a COLLATE nocase)");
    CHECK_STR(tree("a + NOT b = c"), "a + (NOT (b = c))");
    CHECK_STR(tree("NOT NOT a"), "NOT (NOT a)");
    CHECK_STR(tree("x IN (1) + 1"), "(x IN (1)) + 1");
    CHECK_STR(tree("a LIKE b || c"), "a LIKE (b || c)");
    CHECK_STR(tree("a NOT LIKE b ESCAPE c = d"),
              "(a NOT LIKE b ESCAPE c) = d");
    CHECK_STR(tree("a = b = c"), "(a = b) = c");
    CHECK_STR(tree("~a & b"), "(~a) & b");
    CHECK_STR(tree("a - -b"), "a - (-b)");
    CHECK_STR(tree("a BETWEEN b + 1 AND c * 2"),
              "a BETWEEN (b + 1) AND (c * 2)");
    CHECK_STR(tree("a NOT BETWEEN 1 AND 2 = TRUE"),
              "(a NOT BETWEEN 1 AND 2) = TRUE");
    CHECK_STR(tree("a IS b IS NOT c"), "(a IS b) IS NOT c");
    CHECK_STR(tree("a OR b OR c AND NOT d"), "(a OR b) OR (c AND (NOT d))");
    CHECK_STR(tree("1 + 2 COLLATE x"), "1 + (2 COLLATE x)");
    CHECK_STR(tree("a % b / c * d"), "((a % b) / c) * d");
    CHECK_STR(tree("a | b & c << d >> e"), "(((a | b) & c) << d) >> e");
}

static void operators(void)
{
    CHECK_STR(canon("SELECT a <> b, a == b, a ISNULL, a NOTNULL, a NOT NULL, "
                    "a IS DISTINCT FROM b, a IS NOT DISTINCT FROM b, a IS NULL, "
                    "a IS NOT NULL, a IS (NULL)"),
              "SELECT a != b, a = b, a IS NULL, a IS NOT NULL, a IS NOT NULL, "
              "a IS NOT b, a IS b, a IS NULL, a IS NOT NULL, a IS NULL");
    CHECK_STR(canon("SELECT a LIKE 'x%', a NOT GLOB 'y*', a REGEXP b, a MATCH b, "
                    "a LIKE b ESCAPE '\\'"),
              "SELECT a LIKE 'x%', a NOT GLOB 'y*', a REGEXP b, a MATCH b, "
              "a LIKE b ESCAPE '\\'");
    CHECK_STR(canon("SELECT x IN (1, 2), x NOT IN (), x IN (SELECT y FROM t), "
                    "x NOT IN t, x IN main.t"),
              "SELECT x IN (1, 2), x NOT IN (), x IN (SELECT y FROM t), "
              "x NOT IN t, x IN main.t");
    CHECK_STR(canon("SELECT a COLLATE NOCASE, b COLLATE 'rtrim', ~ a, + a"),
              "SELECT a COLLATE NOCASE, b COLLATE \"rtrim\", ~a, +a");
}

static void expression_forms(void)
{
    CHECK_STR(canon("SELECT CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END, "
                    "CASE x WHEN 1 THEN 'a' END"),
              "SELECT CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END, "
              "CASE x WHEN 1 THEN 'a' END");
    CHECK_STR(canon("SELECT CAST(a AS INTEGER), CAST(b AS varchar(10)), "
                    "CAST(c AS DOUBLE  PRECISION), CAST(d AS DECIMAL(10,-2)), "
                    "cast(e as unsigned big int)"),
              "SELECT CAST(a AS INTEGER), CAST(b AS varchar(10)), "
              "CAST(c AS DOUBLE PRECISION), CAST(d AS DECIMAL(10, -2)), "
              "CAST(e AS unsigned big int)");
    CHECK_STR(canon("SELECT count(*), count(DISTINCT x), count(ALL x), f(), "
                    "string_agg(x, ',' ORDER BY y DESC, z), "
                    "sum(x) FILTER (WHERE x > 0), \"quoted f\"(1), "
                    "replace(a, 'b', 'c'), like(a, b), glob(a, b)"),
              "SELECT count(*), count(DISTINCT x), count(x), f(), "
              "string_agg(x, ',' ORDER BY y DESC, z), "
              "sum(x) FILTER (WHERE x > 0), \"quoted f\"(1), "
              "replace(a, 'b', 'c'), like(a, b), glob(a, b)");
    CHECK_STR(canon("SELECT EXISTS (SELECT 1), NOT EXISTS(SELECT 2 FROM t), "
                    "(SELECT max(a) FROM t), (a, b) = (1, 2), (((a)))"),
              "SELECT EXISTS (SELECT 1), NOT EXISTS (SELECT 2 FROM t), "
              "(SELECT max(a) FROM t), (a, b) = (1, 2), a");
    CHECK_STR(canon("SELECT array (SELECT a FROM t), LIVE(VALUES (1)), live(1), array(2)"),
              "SELECT ARRAY(SELECT a FROM t), LIVE(VALUES (1)), live(1), array(2)");
    CHECK_STR(canon("SELECT ?, ?5, :a, @b, $c"), "SELECT ?1, ?5, :a, @b, $c");
    CHECK_STR(canon("SELECT CURRENT_DATE, CURRENT_TIME, current_timestamp"),
              "SELECT CURRENT_DATE, CURRENT_TIME, CURRENT_TIMESTAMP");
    CHECK_STR(canon("SELECT cast, filter, over, key.x FROM t"),
              "SELECT cast, filter, over, key.x FROM t");
}

/* ---- parameters and the walker -------------------------------------------------- */

struct param_log {
    ast_visitor v;
    uint32_t numbers[16];
    int n;
};

static int log_param(ast_visitor *v, ast_expr *e)
{
    struct param_log *log = (struct param_log *)v;
    if (e->kind == AST_PARAM && log->n < 16)
        log->numbers[log->n++] = e->u.param.number;
    return AST_WALK_CONTINUE;
}

static void parameters(void)
{
    sql_ast *ast =
        parse_ok("SELECT ?, ?5, :a, ? FROM t WHERE x = :a AND y = @a AND "
                 "z IN ($b, ?2, ?)");
    struct param_log log = { { log_param, NULL }, { 0 }, 0 };
    CHECK_INT(ast_walk_stmt(&log.v, ast->stmt), 0);
    static const uint32_t want[] = { 1, 5, 6, 7, 6, 8, 9, 2, 10 };
    CHECK_INT(log.n, 9);
    for (int i = 0; i < 9; i++)
        CHECK_INT(log.numbers[i], want[i]);
    CHECK_INT(ast->nparams, 10);
    CHECK_STR(ast->param_names[5], ":a");
    CHECK_STR(ast->param_names[7], "@a");
    CHECK_STR(ast->param_names[8], "$b");
    CHECK(ast->param_names[0] == NULL && ast->param_names[4] == NULL);
    sql_ast_free(ast);

    ast = parse_ok("SELECT ?32766, ?5");
    CHECK_INT(ast->nparams, 32766);
    sql_ast_free(ast);
    ast = parse_ok("SELECT 1");
    CHECK_INT(ast->nparams, 0);
    sql_ast_free(ast);
    CHECK_ERR("SELECT ?0", "line 1, column 8: parameter number must be between "
                           "1 and 32766");
    CHECK_ERR("SELECT ?32767", "line 1, column 8: parameter number must be "
                               "between 1 and 32766");
    CHECK_ERR("SELECT ?32766, ?", "line 1, column 16: too many parameters "
                                  "(the limit is 32766)");
    CHECK_ERR("SELECT :", "line 1, column 8: expected a parameter name after ':'");
}

struct walk_count {
    ast_visitor v;
    int exprs, selects, stop_at;
};

static int count_expr(ast_visitor *v, ast_expr *e)
{
    struct walk_count *c = (struct walk_count *)v;
    (void)e;
    return ++c->exprs == c->stop_at ? 42 : AST_WALK_CONTINUE;
}

static int count_select(ast_visitor *v, ast_select *s)
{
    struct walk_count *c = (struct walk_count *)v;
    (void)s;
    return c->selects++ > 0 ? AST_WALK_SKIP : AST_WALK_CONTINUE;
}

static void walker(void)
{
    sql_ast *ast = parse_ok(
        "WITH c AS (SELECT 1) SELECT a + 1, (SELECT b FROM u WHERE b > 2) "
        "FROM t JOIN (SELECT 3) ON t.x = 4 WHERE EXISTS (SELECT 5) "
        "ORDER BY a LIMIT 6 OFFSET 7");
    struct walk_count c = { { count_expr, NULL }, 0, 0, 0 };
    CHECK_INT(ast_walk_stmt(&c.v, ast->stmt), 0);
    /* 1 | a+1 a 1 | sub b b>2 b 2 | 3 | t.x=4 t.x 4 | exists 5 | a 6 7 */
    CHECK_INT(c.exprs, 18);
    struct walk_count skip = { { count_expr, count_select }, 0, 0, 0 };
    CHECK_INT(ast_walk_stmt(&skip.v, ast->stmt), 0);
    CHECK_INT(skip.exprs, 11); /* nested queries' insides skipped */
    struct walk_count stop = { { count_expr, NULL }, 0, 0, 3 };
    CHECK_INT(ast_walk_stmt(&stop.v, ast->stmt), 42);
    CHECK_INT(stop.exprs, 3);
    sql_ast_free(ast);

    ast = parse_ok("CREATE TABLE t (a INT DEFAULT (1 + 2) CHECK (a > 0), "
                   "CHECK (a < 9))");
    struct walk_count ddl = { { count_expr, NULL }, 0, 0, 0 };
    CHECK_INT(ast_walk_stmt(&ddl.v, ast->stmt), 0);
    CHECK_INT(ddl.exprs, 9);
    sql_ast_free(ast);
}

/* ---- queries ------------------------------------------------------------------------ */

static void select_forms(void)
{
    CHECK_STR(canon("select distinct a, t.*, *, b AS x, c y, d 'z' from t"),
              "SELECT DISTINCT a, t.*, *, b AS x, c AS y, d AS \"z\" FROM t");
    CHECK_STR(canon("SELECT ALL a FROM s.t AS u WHERE a > 1 GROUP BY a, b "
                    "HAVING count(*) > 1 ORDER BY a DESC, b COLLATE nocase ASC "
                    "NULLS LAST, c NULLS FIRST LIMIT 10 OFFSET 5"),
              "SELECT a FROM s.t AS u WHERE a > 1 GROUP BY a, b HAVING "
              "count(*) > 1 ORDER BY a DESC, b COLLATE nocase NULLS LAST, "
              "c NULLS FIRST LIMIT 10 OFFSET 5");
    CHECK_STR(canon("SELECT a FROM t LIMIT 5, 10"),
              "SELECT a FROM t LIMIT 10 OFFSET 5");
    CHECK_STR(canon("SELECT 1"), "SELECT 1");
    CHECK_STR(canon("VALUES (1, 'a'), (2, 'b')"), "VALUES (1, 'a'), (2, 'b')");
    CHECK_STR(canon("SELECT * FROM (VALUES (1)) AS v"),
              "SELECT * FROM (VALUES (1)) AS v");
    CHECK_STR(canon("SELECT * FROM t INDEXED BY i, u NOT INDEXED"),
              "SELECT * FROM t INDEXED BY i, u NOT INDEXED");
}

static void joins(void)
{
    CHECK_STR(canon("SELECT * FROM a, b JOIN c ON a.x = c.x INNER JOIN d USING "
                    "(x, y) LEFT OUTER JOIN e ON 1 RIGHT JOIN f ON 1 FULL OUTER "
                    "JOIN g ON 1 CROSS JOIN h NATURAL JOIN i NATURAL LEFT JOIN j"),
              "SELECT * FROM a, b JOIN c ON a.x = c.x JOIN d USING (x, y) "
              "LEFT JOIN e ON 1 RIGHT JOIN f ON 1 FULL JOIN g ON 1 CROSS JOIN h "
              "NATURAL JOIN i NATURAL LEFT JOIN j");
    CHECK_STR(canon("SELECT * FROM a JOIN (b JOIN c ON b.x = c.x) ON a.y = b.y"),
              "SELECT * FROM a JOIN (b JOIN c ON b.x = c.x) ON a.y = b.y");
    CHECK_STR(canon("SELECT * FROM (a JOIN b) JOIN c, (t) AS u, (SELECT 1) s"),
              "SELECT * FROM a JOIN b JOIN c, t AS u, (SELECT 1) AS s");
    sql_ast *ast = parse_ok("SELECT * FROM a LEFT JOIN b ON a.x = b.x, c");
    const ast_from *f = ast->stmt->u.select->body->u.select.from;
    CHECK(f->kind == AST_FROM_JOIN && f->u.join.kind == AST_JOIN_COMMA);
    CHECK(f->u.join.left->kind == AST_FROM_JOIN);
    CHECK(f->u.join.left->u.join.kind == AST_JOIN_LEFT);
    CHECK_STR(f->u.join.right->u.table.name.str, "c");
    sql_ast_free(ast);
    CHECK_ERR("SELECT * FROM a NATURAL JOIN b ON 1",
              "line 1, column 32: a NATURAL join cannot have an ON or USING "
              "clause");
    CHECK_ERR("SELECT * FROM a LEFT INNER JOIN b",
              "line 1, column 22: expected 'JOIN', found 'INNER'");
    CHECK_ERR("SELECT * FROM (a JOIN b) AS x",
              "line 1, column 26: a parenthesized join cannot have an alias");
    CHECK_ERR("SELECT * FROM f(1)",
              "line 1, column 16: table-valued functions are not supported");
}

static void compounds(void)
{
    CHECK_STR(canon("SELECT 1 UNION SELECT 2 UNION ALL SELECT 3 INTERSECT "
                    "VALUES (4) EXCEPT SELECT 5 ORDER BY 1 LIMIT 2"),
              "SELECT 1 UNION SELECT 2 UNION ALL SELECT 3 INTERSECT VALUES (4) "
              "EXCEPT SELECT 5 ORDER BY 1 LIMIT 2");
    sql_ast *ast = parse_ok("SELECT 1 UNION SELECT 2 EXCEPT SELECT 3");
    const ast_body *b = ast->stmt->u.select->body;
    CHECK(b->kind == AST_BODY_COMPOUND && b->u.compound.op == AST_EXCEPT);
    CHECK(b->u.compound.left->kind == AST_BODY_COMPOUND);
    CHECK(b->u.compound.left->u.compound.op == AST_UNION);
    CHECK(b->u.compound.right->kind == AST_BODY_SELECT);
    sql_ast_free(ast);
    CHECK_ERR("SELECT 1 ORDER BY 1 UNION SELECT 2",
              "line 1, column 21: ORDER BY and LIMIT must come after the last "
              "SELECT of a compound query");
    CHECK_ERR("VALUES (1, 2), (3)",
              "line 1, column 16: all VALUES rows must have the same number "
              "of values");
}

static void with_clauses(void)
{
    CHECK_STR(canon("WITH a AS (SELECT 1), b(x, y) AS (SELECT 2, 3) SELECT * "
                    "FROM a, b"),
              "WITH a AS (SELECT 1), b (x, y) AS (SELECT 2, 3) SELECT * FROM "
              "a, b");
    CHECK_STR(canon("SELECT (WITH c AS (SELECT 1) SELECT * FROM c)"),
              "SELECT (WITH c AS (SELECT 1) SELECT * FROM c)");
    CHECK_STR(canon("WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c"),
              "WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c");
    CHECK_STR(canon("WITH c AS (SELECT 1) DELETE FROM t WHERE x IN c"),
              "WITH c AS (SELECT 1) DELETE FROM t WHERE x IN c");
    CHECK_STR(canon("WITH c AS (SELECT 1) UPDATE t SET x = (SELECT * FROM c)"),
              "WITH c AS (SELECT 1) UPDATE t SET x = (SELECT * FROM c)");
    CHECK_ERR("WITH RECURSIVE c AS (SELECT 1) SELECT 1",
              "line 1, column 6: recursive CTEs are not supported");
}

/* ---- DML ------------------------------------------------------------------------------ */

static void dml(void)
{
    CHECK_STR(canon("INSERT INTO t VALUES (1, 'a'), (2, NULL)"),
              "INSERT INTO t VALUES (1, 'a'), (2, NULL)");
    CHECK_STR(canon("insert or ignore into s.t as x (a, b) select a, b from u"),
              "INSERT OR IGNORE INTO s.t AS x (a, b) SELECT a, b FROM u");
    CHECK_STR(canon("REPLACE INTO t DEFAULT VALUES"),
              "INSERT OR REPLACE INTO t DEFAULT VALUES");
    CHECK_STR(canon("INSERT OR ROLLBACK INTO t VALUES (1)"),
              "INSERT OR ROLLBACK INTO t VALUES (1)");
    CHECK_STR(canon("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING"),
              "INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING");
    CHECK_STR(canon("INSERT INTO t (k, v) VALUES (1, 2) ON CONFLICT (k) WHERE "
                    "k > 0 DO UPDATE SET v = excluded.v, (a, b) = (1, 2) WHERE "
                    "t.v < excluded.v ON CONFLICT DO NOTHING RETURNING *, k"),
              "INSERT INTO t (k, v) VALUES (1, 2) ON CONFLICT (k) WHERE k > 0 "
              "DO UPDATE SET v = excluded.v, (a, b) = (1, 2) WHERE "
              "t.v < excluded.v ON CONFLICT DO NOTHING RETURNING *, k");
    CHECK_STR(canon("INSERT INTO t SELECT * FROM u ON CONFLICT DO NOTHING"),
              "INSERT INTO t SELECT * FROM u ON CONFLICT DO NOTHING");
    CHECK_STR(canon("INSERT INTO t SELECT * FROM u, v ON CONFLICT DO NOTHING"),
              "INSERT INTO t SELECT * FROM u, v ON CONFLICT DO NOTHING");
    CHECK_STR(canon("UPDATE OR FAIL t AS x SET a = 1, b = b + 1 WHERE c "
                    "RETURNING a AS z"),
              "UPDATE OR FAIL t AS x SET a = 1, b = b + 1 WHERE c RETURNING a "
              "AS z");
    CHECK_STR(canon("DELETE FROM s.t AS x WHERE a = 1 RETURNING *"),
              "DELETE FROM s.t AS x WHERE a = 1 RETURNING *");
    CHECK_STR(canon("DELETE FROM t"), "DELETE FROM t");
    CHECK_ERR("INSERT INTO t", "line 1, column 14: expected VALUES, SELECT or "
                               "DEFAULT VALUES, found end of input");
    CHECK_ERR("INSERT OR WHATEVER INTO t VALUES (1)",
              "line 1, column 11: expected ROLLBACK, ABORT, FAIL, IGNORE or "
              "REPLACE after 'OR', found 'WHATEVER'");
    CHECK_ERR("UPDATE t SET a = 1 FROM u",
              "line 1, column 20: UPDATE ... FROM is not supported");
    CHECK_ERR("UPDATE t SET a 1", "line 1, column 16: expected '=' after the "
                                  "column, found '1'");
}

/* ---- DDL ------------------------------------------------------------------------------ */

static void create_table(void)
{
    CHECK_STR(canon("CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(10) NOT "
                    "NULL, c DOUBLE PRECISION DEFAULT 1.5, d UNSIGNED BIG INT "
                    "UNIQUE, e)"),
              "CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(10) NOT NULL, "
              "c DOUBLE PRECISION DEFAULT 1.5, d UNSIGNED BIG INT UNIQUE, e)");
    CHECK_STR(canon("create temp table if not exists s.t (a int constraint pk "
                    "primary key desc on conflict replace autoincrement, "
                    "b text null collate nocase check (length(b) < 5) "
                    "references u (x) on delete cascade on update set null "
                    "match full deferrable initially deferred, "
                    "c default -5, d default +1, e default 'x', f default (1 + "
                    "2), g default current_timestamp, h default null, "
                    "i generated always as (a * 2) stored, j as (a) virtual, "
                    "k default -9223372036854775808, l default (-a))"),
              "CREATE TEMP TABLE IF NOT EXISTS s.t (a int CONSTRAINT pk "
              "PRIMARY KEY DESC ON CONFLICT REPLACE AUTOINCREMENT, b text "
              "NULL COLLATE nocase CHECK (length(b) < 5) REFERENCES u (x) ON "
              "DELETE CASCADE ON UPDATE SET NULL, c DEFAULT -5, d DEFAULT +1, "
              "e DEFAULT 'x', f DEFAULT (1 + 2), g DEFAULT CURRENT_TIMESTAMP, "
              "h DEFAULT NULL, i GENERATED ALWAYS AS (a * 2) STORED, "
              "j GENERATED ALWAYS AS (a), k DEFAULT -9223372036854775808, "
              "l DEFAULT (-a))");
    CHECK_STR(canon("CREATE TABLE t (a, b, c, PRIMARY KEY (a, b DESC) ON "
                    "CONFLICT IGNORE, CONSTRAINT u UNIQUE (c COLLATE nocase) "
                    "CHECK (a > b), FOREIGN KEY (a, b) REFERENCES p (x, y) ON "
                    "DELETE NO ACTION ON UPDATE RESTRICT) WITHOUT ROWID, STRICT"),
              "CREATE TABLE t (a, b, c, PRIMARY KEY (a, b DESC) ON CONFLICT "
              "IGNORE, CONSTRAINT u UNIQUE (c COLLATE nocase), CHECK (a > b), "
              "FOREIGN KEY (a, b) REFERENCES p (x, y) ON DELETE NO ACTION ON "
              "UPDATE RESTRICT) WITHOUT ROWID, STRICT");
    CHECK_STR(canon("CREATE TABLE t AS SELECT * FROM u"),
              "CREATE TABLE t AS SELECT * FROM u");
    CHECK_STR(canon("CREATE TABLE \"key\" (key KEY, [if] int, replace)"),
              "CREATE TABLE \"key\" (key KEY, \"if\" int, replace)");
    sql_ast *ast = parse_ok("CREATE TABLE t (x DECIMAL(10, 2) DEFAULT 0)");
    const ast_column_def *col = &ast->stmt->u.create_table.cols[0];
    CHECK_STR(col->type.name, "DECIMAL");
    CHECK_INT(col->type.nargs, 2);
    CHECK_STR(col->type.args[1], "2");
    CHECK_INT(col->type.off, 18);
    CHECK_INT(col->type.len, 14);
    CHECK_INT(col->cons[0].kind, AST_CC_DEFAULT);
    sql_ast_free(ast);
    CHECK_ERR("CREATE TABLE t ()", "line 1, column 17: expected a column "
                                   "name, found ')'");
    CHECK_ERR("CREATE TABLE t (PRIMARY KEY (a))",
              "line 1, column 17: expected a column definition, found "
              "'PRIMARY'");
    CHECK_ERR("CREATE TABLE t (a DEFAULT b)",
              "line 1, column 27: expected a literal, a signed number or a "
              "parenthesized expression after 'DEFAULT', found 'b'");
    CHECK_ERR("CREATE TABLE t (a, CHECK (a),)",
              "line 1, column 30: expected a table constraint, found ')'");
    CHECK_ERR("CREATE TABLE t (a INT(1, 2, 3))",
              "line 1, column 29: expected ')' after two type arguments, "
              "found '3'");
}

static void create_other(void)
{
    CHECK_STR(canon("CREATE UNIQUE INDEX IF NOT EXISTS s.i ON t (a, b DESC, "
                    "lower(c) COLLATE nocase ASC NULLS LAST) USING HASH WHERE "
                    "a > 0"),
              "CREATE UNIQUE INDEX IF NOT EXISTS s.i ON t (a, b DESC, lower(c) "
              "COLLATE nocase NULLS LAST) USING HASH WHERE a > 0");
    CHECK_STR(canon("CREATE INDEX i ON t (a) USING BTREE"),
              "CREATE INDEX i ON t (a) USING BTREE");
    CHECK_STR(canon("CREATE VIEW v AS SELECT 1"), "CREATE VIEW v AS SELECT 1");
    CHECK_STR(canon("CREATE TEMPORARY VIEW IF NOT EXISTS v (a, b) AS SELECT 1, "
                    "2"),
              "CREATE TEMP VIEW IF NOT EXISTS v (a, b) AS SELECT 1, 2");
    CHECK_STR(canon("CREATE MATERIALIZED VIEW IF NOT EXISTS m AS SELECT a, "
                    "count(*) FROM t GROUP BY a"),
              "CREATE MATERIALIZED VIEW IF NOT EXISTS m AS SELECT a, count(*) "
              "FROM t GROUP BY a");
    CHECK_STR(canon("DROP TABLE t"), "DROP TABLE t");
    CHECK_STR(canon("drop index if exists s.i"), "DROP INDEX IF EXISTS s.i");
    CHECK_STR(canon("DROP VIEW v"), "DROP VIEW v");
    CHECK_STR(canon("DROP MATERIALIZED VIEW IF EXISTS m"),
              "DROP MATERIALIZED VIEW IF EXISTS m");
    CHECK_STR(canon("DROP TRIGGER tr"), "DROP TRIGGER tr");
    CHECK_ERR("CREATE INDEX i ON t (a) USING GIST",
              "line 1, column 31: expected HASH or BTREE after 'USING', found "
              "'GIST'");
    CHECK_ERR("CREATE TEMP INDEX i ON t (a)",
              "line 1, column 13: expected TABLE, VIEW or TRIGGER after "
              "'TEMP', found 'INDEX'");
    CHECK_ERR("CREATE VIEW v AS INSERT INTO t VALUES (1)",
              "line 1, column 18: expected a query after 'AS', found 'INSERT'");
}

static void unsupported(void)
{
    const char *trigger =
        "CREATE TRIGGER IF NOT EXISTS s.tr AFTER UPDATE OF a ON t FOR EACH "
        "ROW WHEN new.a > 0 BEGIN UPDATE u SET x = CASE WHEN 1 THEN 2 END; "
        "DELETE FROM v; END";
    sql_ast *ast = parse_ok(trigger);
    CHECK(ast->stmt->kind == AST_STMT_UNSUPPORTED);
    CHECK_STR(ast->stmt->u.unsupported.what, "CREATE TRIGGER");
    CHECK_STR(ast->stmt->u.unsupported.name.schema.str, "s");
    CHECK_STR(ast->stmt->u.unsupported.name.name.str, "tr");
    CHECK_INT(ast->stmt->len, strlen(trigger));
    sql_ast_free(ast);
    CHECK_STR(canon(trigger), "CREATE TRIGGER s.tr BEGIN END");
    CHECK_STR(canon("CREATE TEMP TRIGGER tr DELETE ON t BEGIN SELECT 1; END;"),
              "CREATE TRIGGER tr BEGIN END");
    CHECK_STR(canon("ATTACH DATABASE 'x.db' AS x"), "ATTACH");
    CHECK_STR(canon("DETACH x"), "DETACH");
    CHECK_STR(canon("VACUUM"), "VACUUM");
    CHECK_STR(canon("ALTER TABLE t ADD COLUMN c"), "ALTER TABLE t");
    CHECK_STR(canon("CREATE VIRTUAL TABLE v USING fts5(a, b)"),
              "CREATE VIRTUAL TABLE v");
    CHECK_ERR("CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1;",
              "line 1, column 52: expected END to close the trigger body, "
              "found end of input");
}

/* ---- other statements ---------------------------------------------------------------- */

static void transactions(void)
{
    CHECK_STR(canon("BEGIN"), "BEGIN");
    CHECK_STR(canon("begin deferred transaction"), "BEGIN DEFERRED");
    CHECK_STR(canon("BEGIN IMMEDIATE"), "BEGIN IMMEDIATE");
    CHECK_STR(canon("BEGIN EXCLUSIVE TRANSACTION"), "BEGIN EXCLUSIVE");
    CHECK_STR(canon("COMMIT TRANSACTION"), "COMMIT");
    CHECK_STR(canon("END"), "COMMIT");
    CHECK_STR(canon("ROLLBACK"), "ROLLBACK");
    CHECK_STR(canon("ROLLBACK TRANSACTION TO SAVEPOINT sp"), "ROLLBACK TO sp");
    CHECK_STR(canon("ROLLBACK TO sp"), "ROLLBACK TO sp");
    CHECK_STR(canon("SAVEPOINT sp"), "SAVEPOINT sp");
    CHECK_STR(canon("RELEASE SAVEPOINT sp"), "RELEASE sp");
    CHECK_STR(canon("RELEASE \"s p\""), "RELEASE \"s p\"");
    CHECK_ERR("SAVEPOINT", "line 1, column 10: expected a savepoint name, "
                           "found end of input");
}

static void misc_statements(void)
{
    CHECK_STR(canon("EXPLAIN SELECT 1"), "EXPLAIN SELECT 1");
    CHECK_STR(canon("EXPLAIN QUERY PLAN DELETE FROM t"),
              "EXPLAIN QUERY PLAN DELETE FROM t");
    CHECK_STR(canon("EXPLAIN MATERIALIZED VIEW s.m"),
              "EXPLAIN MATERIALIZED VIEW s.m");
    sql_ast *ast = parse_ok("EXPLAIN QUERY PLAN SELECT 1");
    CHECK(ast->stmt->kind == AST_STMT_EXPLAIN);
    CHECK(ast->stmt->u.explain.query_plan);
    CHECK(ast->stmt->u.explain.stmt->kind == AST_STMT_SELECT);
    sql_ast_free(ast);
    CHECK_STR(canon("PRAGMA cache_size"), "PRAGMA cache_size");
    CHECK_STR(canon("PRAGMA main.cache_size = -2000"),
              "PRAGMA main.cache_size = -2000");
    CHECK_STR(canon("PRAGMA foreign_keys = ON"), "PRAGMA foreign_keys = ON");
    CHECK_STR(canon("PRAGMA table_info(t)"), "PRAGMA table_info = t");
    CHECK_STR(canon("PRAGMA encoding = 'UTF-8'"), "PRAGMA encoding = 'UTF-8'");
    CHECK_STR(canon("REINDEX"), "REINDEX");
    CHECK_STR(canon("REINDEX s.i"), "REINDEX s.i");
    CHECK_STR(canon("ANALYZE"), "ANALYZE");
    CHECK_STR(canon("analyze t"), "ANALYZE t");
    CHECK_ERR("EXPLAIN EXPLAIN SELECT 1",
              "line 1, column 9: expected a statement to explain, found "
              "'EXPLAIN'");
    CHECK_ERR("FROB t", "line 1, column 1: expected a statement, found 'FROB'");
}

/* ---- positions --------------------------------------------------------------------------- */

static uint32_t offset_of(const char *sql, const char *part)
{
    const char *at = strstr(sql, part);
    CHECK(at != NULL);
    return (uint32_t)(at - sql);
}

static void positions(void)
{
    const char *sql = "SELECT a +\n  b AS x, (c) * 2, d FROM t";
    sql_ast *ast = parse_ok(sql);
    const ast_result_list *cols = &ast->stmt->u.select->body->u.select.cols;
    const ast_expr *sum = cols->items[0].expr;
    CHECK_INT(sum->off, 7);
    CHECK_INT(sum->len, strlen("a +\n  b"));
    CHECK_INT(cols->items[0].len, sum->len); /* without the alias */
    CHECK_INT(cols->items[0].alias.off, offset_of(sql, "x,"));
    const ast_expr *b = sum->u.binary.right;
    uint32_t line, col;
    sql_ast_locate(ast, b->off, &line, &col);
    CHECK_INT(line, 2);
    CHECK_INT(col, 3);
    /* A result column's span keeps the parentheses, its tree does not. */
    CHECK_INT(cols->items[1].off, offset_of(sql, "(c)"));
    CHECK_INT(cols->items[1].len, strlen("(c) * 2"));
    CHECK(strncmp(sql_ast_text(ast, cols->items[1].off), "(c) * 2", 7) == 0);
    const ast_expr *c = cols->items[1].expr->u.binary.left;
    CHECK_INT(c->off, offset_of(sql, "c)"));
    CHECK_INT(c->len, 1);
    CHECK_INT(sum->height, 2);
    CHECK_INT(ast->stmt->off, 0);
    CHECK_INT(ast->stmt->len, strlen(sql));
    sql_ast_free(ast);
}

static void scripts(void)
{
    const char *script = "  SELECT 1;;\n\n-- comment\n CREATE TABLE t(a)  ;"
                         "  /* x */ ;\nSELECT 'é', 2";
    sql_cursor cur;
    sql_cursor_init(&cur, script, strlen(script));
    sql_ast *ast;
    sql_error err;
    CHECK_INT(sql_parse_next(&cur, &ast, &err), LDB_OK);
    CHECK_STR(ast->sql, "SELECT 1");
    CHECK_INT(ast->sql_off, 2);
    CHECK_INT(ast->line, 1);
    CHECK_INT(ast->column, 3);
    sql_ast_free(ast);
    CHECK_INT(sql_parse_next(&cur, &ast, &err), LDB_OK);
    CHECK(ast->stmt->kind == AST_STMT_CREATE_TABLE);
    CHECK_STR(ast->sql, "CREATE TABLE t(a)");
    CHECK_INT(ast->line, 4);
    CHECK_INT(ast->column, 2);
    sql_ast_free(ast);
    CHECK_INT(sql_parse_next(&cur, &ast, &err), LDB_OK);
    CHECK_INT(ast->line, 5);
    uint32_t line, col;
    const ast_expr *two = ast->stmt->u.select->body->u.select.cols.items[1].expr;
    sql_ast_locate(ast, two->off, &line, &col);
    CHECK_INT(line, 5);
    CHECK_INT(col, 13); /* é is one character */
    sql_ast_free(ast);
    CHECK_INT(sql_parse_next(&cur, &ast, &err), LDB_OK);
    CHECK(ast == NULL);
    CHECK_INT(cur.offset, strlen(script));
    CHECK_INT(sql_parse_next(&cur, &ast, &err), LDB_OK);
    CHECK(ast == NULL);

    /* An error leaves the cursor at the failed statement. */
    const char *bad = "SELECT 1; SELECT (2; SELECT 3";
    sql_cursor_init(&cur, bad, strlen(bad));
    CHECK_INT(sql_parse_next(&cur, &ast, &err), LDB_OK);
    sql_ast_free(ast);
    uint32_t before = cur.offset;
    CHECK_INT(sql_parse_next(&cur, &ast, &err), LDB_ERROR);
    CHECK(ast == NULL);
    CHECK_INT(cur.offset, before);
    CHECK_STR(err.msg, "line 1, column 20: expected ',' or ')', found ';'");
    CHECK_INT(err.offset, 19);
    CHECK_INT(err.line, 1);
    CHECK_INT(err.column, 20);
}

static void splitting(void)
{
    const char *script =
        "SELECT 'a;b'; -- c;\n;CREATE TEMP TRIGGER t AFTER INSERT ON x BEGIN "
        "SELECT CASE WHEN 1 THEN 2 END; DELETE FROM y; END ; SELECT 3 -- end";
    static const char *const want[] = {
        "SELECT 'a;b'",
        "CREATE TEMP TRIGGER t AFTER INSERT ON x BEGIN SELECT CASE WHEN 1 "
        "THEN 2 END; DELETE FROM y; END",
        "SELECT 3",
    };
    sql_cursor cur;
    sql_cursor_init(&cur, script, strlen(script));
    uint32_t start, len;
    for (int i = 0; i < 3; i++) {
        CHECK(sql_split_next(&cur, &start, &len));
        CHECK_INT(len, strlen(want[i]));
        CHECK(strncmp(script + start, want[i], len) == 0);
    }
    CHECK(!sql_split_next(&cur, &start, &len));

    const char *unterminated = "SELECT 1; SELECT 'abc";
    sql_cursor_init(&cur, unterminated, strlen(unterminated));
    CHECK(sql_split_next(&cur, &start, &len));
    CHECK(sql_split_next(&cur, &start, &len));
    CHECK_INT(start, 10);
    CHECK_INT(len, 11);
    CHECK(!sql_split_next(&cur, &start, &len));

    CHECK(sql_is_complete("SELECT 1;", 9));
    CHECK(sql_is_complete("SELECT 1; -- done\n", 18));
    CHECK(!sql_is_complete("SELECT 1", 8));
    CHECK(!sql_is_complete("SELECT 1; SELECT", 16));
    CHECK(!sql_is_complete("SELECT ';", 9));
    CHECK(!sql_is_complete("SELECT 1 -- ;", 13));
    CHECK(!sql_is_complete("", 0));
    const char *trig = "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1;";
    CHECK(!sql_is_complete(trig, strlen(trig)));
    const char *trig_end = "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; "
                           "END;";
    CHECK(sql_is_complete(trig_end, strlen(trig_end)));
}

/* ---- errors ------------------------------------------------------------------------------- */

static void errors(void)
{
    CHECK_ERR("SELECT 1 + )", "line 1, column 12: expected an expression after "
                              "'+', found ')'");
    CHECK_ERR("SELECT a,\n  b +\n\n 'abc", "line 4, column 2: unterminated "
                                          "string literal");
    CHECK_ERR("SELECT 1 /* comment", "line 1, column 10: unterminated block "
                                     "comment");
    CHECK_ERR("SELECT \"abc", "line 1, column 8: unterminated quoted "
                              "identifier");
    CHECK_ERR("SELECT [abc", "line 1, column 8: unterminated quoted identifier");
    CHECK_ERR("SELECT X'0aF'", "line 1, column 8: blob literal has an odd "
                               "number of hex digits");
    CHECK_ERR("SELECT X'0G'", "line 1, column 8: blob literal contains a "
                              "character that is not a hex digit");
    CHECK_ERR("SELECT x'00", "line 1, column 8: unterminated blob literal");
    CHECK_ERR("SELECT 0x1FFFFFFFFFFFFFFFF", "line 1, column 8: hex literal is "
                                            "too large (more than 64 bits)");
    CHECK_ERR("SELECT 0x", "line 1, column 8: malformed hex literal");
    CHECK_ERR("SELECT 12abc", "line 1, column 8: malformed number");
    CHECK_ERR("SELECT 1e", "line 1, column 8: malformed number");
    CHECK_ERR("SELECT 1 ^ 2", "line 1, column 10: unrecognized character");
    CHECK_ERR("SELECT (1", "line 1, column 10: expected ',' or ')', found end "
                           "of input");
    CHECK_ERR("SELECT 1)", "line 1, column 9: expected end of statement, found "
                           "')'");
    CHECK_ERR("SELECT 1 2", "line 1, column 10: expected end of statement, "
                            "found '2'");
    CHECK_ERR("SELECT", "line 1, column 7: expected an expression after "
                        "'SELECT', found end of input");
    CHECK_ERR("SELECT 1 FROM t WHERE", "line 1, column 22: expected an "
                                       "expression after 'WHERE', found end "
                                       "of input");
    CHECK_ERR("", "line 1, column 1: expected a statement, found end of input");
    CHECK_ERR(" ;; ", "line 1, column 5: expected a statement, found end of "
                      "input");
    CHECK_ERR("SELECT 1; SELECT 2", "line 1, column 11: expected end of input "
                                    "after the statement, found a second "
                                    "statement");
    CHECK_ERR("SELECT 'é', +", "line 1, column 14: expected an expression after "
                               "'+', found end of input");
    CHECK_ERR("SELECT f(x) OVER (PARTITION BY y)",
              "line 1, column 13: window functions are not supported");
    CHECK_ERR("SELECT CASE END", "line 1, column 16: expected WHEN, found end "
                                 "of input"); /* END is also a name */
    CHECK_ERR("SELECT CASE a END", "line 1, column 15: expected WHEN, found "
                                   "'END'");
    CHECK_ERR("SELECT CAST(a AS)", "line 1, column 17: expected a type name "
                                   "after 'AS', found ')'");
    CHECK_ERR("SELECT a BETWEEN 1 OR 2", "line 1, column 20: expected 'AND', "
                                         "found 'OR'");
    CHECK_ERR("SELECT a IN", "line 1, column 12: expected '(' or a table name "
                             "after 'IN', found end of input");
    CHECK_ERR("SELECT * FROM t WHERE a = 'unterminated\nstring",
              "line 1, column 27: unterminated string literal");
    CHECK_ERR("SELECT 1 FROM t ORDER a", "line 1, column 23: expected 'BY', "
                                         "found 'a'");
}

/* Long tokens are cut in messages. */
static void error_token_excerpt(void)
{
    CHECK_STR(parse_error("SELECT 1 IN 'abcdefghijklmnopqrstuvwxyz0123456789'"),
              "line 1, column 13: expected '(' or a table name after 'IN', "
              "found the string 'abcdefghijklmnopqrstuvwxyz012345...'");
    CHECK_STR(parse_error("SELECT 1 IN 'it''s'"),
              "line 1, column 13: expected '(' or a table name after 'IN', "
              "found the string 'it''s'");
    CHECK_STR(parse_error("SELECT abcdefghijklmnopqrstuvwxyz0123456789 +"),
              "line 1, column 46: expected an expression after "
              "'+', found end of input");
    CHECK_STR(parse_error("SELECT 1 FROM t x abcdefghijklmnopqrstuvwxyz0123456789"),
              "line 1, column 19: expected end of statement, found "
              "'abcdefghijklmnopqrstuvwxyz012345...'");
    CHECK_STR(parse_error("SELECT 1 FROM t WHERE 'multi\nline' 2"),
              "line 2, column 7: expected end of statement, found '2'");
    CHECK_STR(parse_error("SELECT 1 FROM t x 'multi\nline'"),
              "line 1, column 19: expected end of statement, found the "
              "string 'multi...'");
}

/* ---- limits --------------------------------------------------------------------------------- */

static char *repeat(const char *prefix, const char *unit, int n,
                    const char *suffix)
{
    size_t lp = strlen(prefix), lu = strlen(unit), ls = strlen(suffix);
    char *s = malloc(lp + lu * (size_t)n + ls + 1);
    CHECK(s != NULL);
    memcpy(s, prefix, lp);
    for (int i = 0; i < n; i++)
        memcpy(s + lp + lu * (size_t)i, unit, lu);
    memcpy(s + lp + lu * (size_t)n, suffix, ls + 1);
    return s;
}

static void check_too_deep(const char *prefix, const char *unit, int n,
                           const char *suffix, const char *msg_part)
{
    char *sql = repeat(prefix, unit, n, suffix);
    int64_t live = mem_live();
    const char *msg = parse_error(sql);
    CHECKF(strstr(msg, msg_part) != NULL, "unexpected message: %s", msg);
    CHECK(mem_live() == live);
    free(sql);
}

static void nesting_limits(void)
{
    check_too_deep("SELECT ", "(", 100000, "1", "nested too deeply");
    check_too_deep("SELECT ", "- ", 100000, "1", "nested too deeply");
    check_too_deep("SELECT ", "NOT ", 100000, "1", "nested too deeply");
    check_too_deep("SELECT 1", " + 1", 100000, "", "expression nested too "
                                                   "deeply");
    check_too_deep("SELECT 1", " AND 1", 5000, "", "expression nested too "
                                                   "deeply");
    check_too_deep("SELECT ", "(SELECT ", 100000, "1", "nested too deeply");
    check_too_deep("SELECT ", "CASE WHEN 1 THEN ", 100000, "1",
                   "nested too deeply");
    check_too_deep("SELECT ", "f(", 100000, "1", "nested too deeply");
    check_too_deep("SELECT * FROM ", "(", 100000, "t", "nested too deeply");
    check_too_deep("SELECT 1", " UNION SELECT 1", 100000, "", "query too "
                                                              "complex");
    check_too_deep("SELECT * FROM t", ", t", 100000, "", "query too complex");
    check_too_deep("SELECT 1 FROM t WHERE x IN ", "(SELECT 1 FROM t WHERE x IN ",
                   100000, "t", "nested too deeply");
    /* 1000 levels in total is the limit, counted across subqueries. */
    check_too_deep("SELECT ", "(SELECT 1 + ", 600, "1", "too");

    /* Just under the limits is fine. */
    char *sql = repeat("SELECT ", "(", 900, "1");
    size_t n = strlen(sql);
    char *closed = malloc(n + 901);
    CHECK(closed != NULL);
    memcpy(closed, sql, n);
    memset(closed + n, ')', 900);
    closed[n + 900] = '\0';
    sql_ast *ast = parse_ok(closed);
    sql_ast_free(ast);
    free(closed);
    free(sql);
    sql = repeat("SELECT 1", " + 1", 990, "");
    ast = parse_ok(sql);
    CHECK_INT(first_result(ast)->height, 991);
    sql_ast_free(ast);
    free(sql);
    sql = repeat("SELECT 1", " UNION SELECT 2", 500, "");
    ast = parse_ok(sql);
    sql_ast_free(ast);
    free(sql);
}

/* ---- allocation failures ----------------------------------------------------------------- */

static const char *const rich_statements[] = {
    "WITH c(x) AS (SELECT 1) SELECT DISTINCT a + ?, :n, 'a long text literal "
    "on the heap', X'00112233445566778899AABBCCDDEEFF', count(*) FILTER "
    "(WHERE b), CASE WHEN a THEN 1 ELSE 2 END, CAST(a AS DECIMAL(10, 2)) "
    "FROM t AS u LEFT JOIN (SELECT * FROM v) w ON u.a = w.a, c WHERE a IN "
    "(1, 2, 3) AND b BETWEEN 1 AND 2 AND EXISTS (SELECT 1) GROUP BY a "
    "HAVING count(*) > 1 UNION ALL VALUES (1, 2, 3, 4, 5, 6, 7, 8) ORDER BY "
    "1 DESC LIMIT 10 OFFSET :n",
    "INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y') ON CONFLICT (a) DO UPDATE "
    "SET b = excluded.b WHERE t.b != excluded.b RETURNING *",
    "CREATE TABLE IF NOT EXISTS t (a INTEGER PRIMARY KEY, b VARCHAR(10) NOT "
    "NULL DEFAULT 'a long default text value' CHECK (length(b) > 0), c "
    "REFERENCES u (x) ON DELETE CASCADE, UNIQUE (b, c), FOREIGN KEY (c) "
    "REFERENCES u (y))",
    "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END",
};

static void sweep_failures(const char *sql, int persistent)
{
    int64_t live = mem_live();
    for (uint64_t n = 1;; n++) {
        sql_ast *ast = (sql_ast *)1;
        sql_error err;
        mem_fail_at(n, persistent);
        int rc = sql_parse(sql, strlen(sql), &ast, &err);
        uint64_t failed = mem_failed_count();
        mem_fail_at(0, 0);
        if (rc == LDB_OK) {
            CHECK(failed == 0);
            strbuf sb = STRBUF_INIT;
            ast_stmt_to_sql(&sb, ast->stmt, 0);
            CHECK(sb_error(&sb) == 0);
            sb_free(&sb);
            sql_ast_free(ast);
            CHECK(mem_live() == live);
            return;
        }
        CHECKF(rc == LDB_NOMEM, "allocation %llu: rc %d (%s)",
               (unsigned long long)n, rc, err.msg);
        CHECK(ast == NULL);
        CHECK(err.code == LDB_NOMEM);
        CHECK_STR(err.msg, "out of memory");
        CHECKF(mem_live() == live, "allocation %llu: leak", (unsigned long long)n);
    }
}

static void allocation_failures(void)
{
    for (size_t i = 0; i < sizeof rich_statements / sizeof *rich_statements; i++) {
        sweep_failures(rich_statements[i], 0);
        sweep_failures(rich_statements[i], 1);
    }
    /* The printer reports out of memory through the strbuf. */
    sql_ast *ast = parse_ok(rich_statements[0]);
    int64_t live = mem_live();
    strbuf sb = STRBUF_INIT;
    mem_fail_at(1, 1);
    ast_stmt_to_sql(&sb, ast->stmt, 0);
    mem_fail_at(0, 0);
    CHECK(sb_error(&sb) == LDB_NOMEM);
    sb_free(&sb);
    CHECK(mem_live() == live);
    sql_ast_free(ast);
}

static void no_leaks_on_errors(void)
{
    static const char *const bad[] = {
        "SELECT 'a long text literal on the heap', :a, ?3 +",
        "SELECT X'00112233445566778899AABBCCDDEEFF' FROM",
        "INSERT INTO t VALUES ('a long text literal on the heap', 1), (2)",
        "CREATE TABLE t (a DEFAULT 'a long text literal on the heap' CHECK",
    };
    int64_t live = mem_live();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        parse_error(bad[i]);
        CHECK(mem_live() == live);
    }
}

TEST_MAIN(T(lexer_tokens), T(lexer_keywords), T(literals), T(identifiers),
          T(comments), T(precedence), T(operators), T(expression_forms),
          T(parameters), T(walker), T(select_forms), T(joins), T(compounds),
          T(with_clauses), T(dml), T(create_table), T(create_other),
          T(unsupported), T(transactions), T(misc_statements), T(positions),
          T(scripts), T(splitting), T(errors), T(error_token_excerpt),
          T(nesting_limits), T(allocation_failures), T(no_leaks_on_errors))
