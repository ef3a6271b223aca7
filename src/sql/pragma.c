/*
 * pragma.c - a database's PRAGMA settings and the PRAGMA statement
 * (ddl.h).
 *
 * A setting is a name and a value, nothing more: the layers that obey a
 * setting (materialized views read nondeterministic_schema and their two
 * pragmas) read it when they act, so setting one never fails halfway.
 * Names are kept in lower case and compared case-insensitively.
 */
#include "sql/ddl.h"

#include "base/mem.h"
#include "sql/sqlvalue.h"

#include <ctype.h>
#include <string.h>

static struct pragma *find(const struct pragma_table *t, const char *name)
{
    for (size_t i = 0; i < t->items.len; i++)
        if (name_eq(t->items.data[i].name, name))
            return &t->items.data[i];
    return NULL;
}

const value *pragma_get(const struct pragma_table *t, const char *name)
{
    const struct pragma *p = find(t, name);
    return p ? &p->v : NULL;
}

int pragma_set(struct pragma_table *t, const char *name, const value *v)
{
    struct pragma *p = find(t, name);
    if (p) {
        value_release(&p->v);
        p->v = value_copy(v);
        return LDB_OK;
    }
    struct pragma np = { mem_strndup(name, strlen(name)), value_copy(v) };
    if (!np.name || vec_push(&t->items, np)) {
        mem_free(np.name);
        value_release(&np.v);
        return LDB_NOMEM;
    }
    for (char *c = np.name; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return LDB_OK;
}

void pragma_table_free(struct pragma_table *t)
{
    for (size_t i = 0; i < t->items.len; i++) {
        mem_free(t->items.data[i].name);
        value_release(&t->items.data[i].v);
    }
    vec_free(&t->items);
}

/* ON/TRUE/YES are 1, OFF/FALSE/NO are 0, other words their text. */
static int word_value(const ast_name *w, value *out)
{
    static const char *const yes[] = { "on", "true", "yes" }, *const no[] = { "off", "false", "no" };
    for (int i = 0; i < 3; i++) {
        if (name_eq(w->str, yes[i])) {
            *out = value_int(1);
            return LDB_OK;
        }
        if (name_eq(w->str, no[i])) {
            *out = value_int(0);
            return LDB_OK;
        }
    }
    return value_text(out, w->str, w->len);
}

static int nomem(const struct ddl_env *e)
{
    *e->err = (struct eval_error){ 0 };
    return sqlv_error(e->err, LDB_NOMEM, "out of memory");
}

int pragma_run(struct pragma_table *t, const struct ddl_env *e, const sql_ast *ast, row **out)
{
    const ast_stmt *st = ast->stmt;
    const char *name = st->u.pragma.name.name.str;
    *out = NULL;
    if (pragma_reads(st)) {
        const value *v = pragma_get(t, name);
        if (v && !(*out = row_from(v, 1)))
            return nomem(e);
        return LDB_OK;
    }
    value v;
    int rc;
    if (st->u.pragma.value) {
        if ((rc = ddl_constant(e, ast, st->u.pragma.value, &v)))
            return rc;
    } else if (word_value(&st->u.pragma.word, &v)) {
        return nomem(e);
    }
    rc = pragma_set(t, name, &v);
    value_release(&v);
    return rc ? nomem(e) : LDB_OK;
}
