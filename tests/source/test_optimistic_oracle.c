/*
 * test_optimistic_oracle.c - optimistic transactions (livedb.h, the
 * section "optimistic transactions") against a model of the pending layer.
 *
 * Two tables with declared keys, issues(id, owner, status, title, prio)
 * and users(id, name, team, handle UNIQUE); each history makes each one
 * EAGER-sourced
 * (a provider that settles at once; the test writes every sync
 * transaction itself) or local, at least one of each kind over the
 * histories. The model holds the synced rows of each table and the
 * pending transactions in commit order, each a list of mutations (table,
 * key, kind, before, after). The visible state is their fold with the
 * rules of livedb.h: INSERT puts its row, UPDATE puts the columns it
 * changed (after != before) onto the row there now and rejects its whole
 * transaction when there is none (later ones are re-applied over what is
 * left, and may be rejected in turn), DELETE removes the row if any.
 * Case optimistic_oracle keeps every handle NULL; optimistic_unique draws
 * handles from a few values, so re-applied rows collide: then the latest
 * transaction that wrote the re-applied row is rejected, or the other
 * row's when the re-applied one has none (a synced row always wins), and
 * the rest is folded again. A sync transaction is judged by its result
 * (livedb.h: "one atomic write of the table"), not by the rows it
 * replaces within itself. When both colliding rows are re-applied in the
 * same step, the contract does not say which is: the history stops there.
 *
 * Random steps: optimistic transactions of 1-3 SQL writes (INSERT of new
 * or existing keys: the constraint error, then ROLLBACK or carry on;
 * UPDATE and DELETE by key or predicate; a write undone by ROLLBACK TO
 * a savepoint; COMMIT and a nested begin refused; rarely a write to a table
 * without a key, refused at commit), sync upserts and deletes (biased to
 * keys that pending mutations touch), ldb_sync_confirm of the oldest
 * pending transaction with the server's rows equal to its own or not,
 * ldb_optimistic_confirm, ldb_optimistic_reject in any order, resolving
 * an already resolved handle (no effect), a confirming sync transaction
 * that fails or is abandoned (o stays pending), a confirmation or
 * rejection from another thread (applied at ldb_source_poll), plain SQL
 * writes (refused on a table with pending writes, or sourced), and
 * reopening a live query (its hydration reads the visible state).
 *
 * After every step:
 * - each table read with SELECT equals the model's visible state;
 * - each live query (a filter, a join, GROUP BY with count/sum, ORDER BY
 *   ... LIMIT, an ARRAY include, and the two whole tables), rebuilt from
 *   its batches alone, equals the same SQL run one-shot in livedb and in
 *   SQLite over the model's visible state, and got at most one batch;
 * - the whole-table queries got exactly the model's before/after
 *   difference as one batch, and no batch when it is empty (so a
 *   confirmation whose rows equal the optimistic ones publishes nothing);
 * - each materialized view equals its body;
 * - ldb_optimistic_stats: pending transactions, rows under them and
 *   rejections are the model's;
 * - every handle's state is the model's, each resolved transaction was
 *   reported once to the resolution callback, a rejected one has an
 *   error message (one that wrote nothing: CONFIRMED at once, no
 *   callback); every commit's mutations (accessors) equal the
 *   model's net change per key, in first-write order grouped by table.
 *
 * Readings of the contract the model makes (where the words leave a
 * choice): confirming a transaction (ldb_optimistic_confirm, or the rows
 * a confirming sync transaction does not carry) applies its mutations to
 * the synced rows with the re-application rules above. The generator
 * avoids the cases where readings differ: it confirms out of order only
 * a transaction whose keys no earlier pending one touches and whose
 * UPDATEs have a synced row, and it gives no write a net change of
 * nothing (an UPDATE back to the same row gets a fresh title/name). A
 * key's first write is the first statement that changed it (an UPDATE to
 * the values it holds writes nothing).
 *
 * The generator never lets two synced rows collide, nor confirms a
 * transaction whose rows would collide with synced ones.
 *
 * Case optimistic_durable runs the histories on a durable database and
 * adds one step: the database is closed and reopened (cleanly, or from a
 * copy of its files taken while it was open, as a crash leaves them), its
 * sources attached again, its queries reopened, and the pending
 * transactions taken back with ldb_optimistic_pending: nothing the model
 * knows changes, and the checks after the step and every later one hold
 * as if the program had never stopped.
 *
 * LDB_SEED replays a run (the seed is printed), LDB_TRACE=1 prints every
 * action; LDB_LONG=1 runs 20 times as many steps, LDB_TEST_SCALE=k k
 * times as many.
 */
#include "sqlite_cmp.h"
#include "test.h"
#include "test_db.h"

#include "base/strbuf.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 2
#define NKEYS 10
#define NCOLS 5
#define MAXMUT (2 * NKEYS)
#define MAXTX 8192
#define NQ 8
#define NMV 2

/* ---- the model ------------------------------------------------------------------ */

struct mval {
    char k; /* 'n' NULL, 'i' INTEGER, 't' TEXT */
    int64_t i;
    char t[16];
};

struct mrow {
    bool on;
    struct mval v[NCOLS];
};

typedef struct mrow mtable[NKEYS + 1]; /* by key 1..NKEYS */

struct tdef {
    const char *name;
    int ncols;
    const char *cols[NCOLS];
    const char *types; /* 'i' or 't' per column */
};

static const struct tdef tdefs[NT] = {
    { "issues", 5, { "id", "owner", "status", "title", "prio" }, "iitti" },
    { "users", 4, { "id", "name", "team", "handle" }, "itit" },
};

struct mut {
    int tab, key, kind;
    int seq; /* the statement that first wrote the key */
    struct mrow before, after;
};

struct otx {
    ldb_optimistic *h;
    uint64_t id;
    int nmut;
    struct mut mut[MAXMUT];
    int state;    /* the model's LDB_OPTIMISTIC_ */
    int resolved; /* resolution callbacks seen */
    int resolved_as; /* the state the last one said */
    int sends;    /* mutation callbacks seen */
    int in_send;  /* resolve it from the mutation callback: 1 confirm, 2 reject */
    int in_send_rc;
    ldb_optimistic *sent_h; /* the handle the mutation callback got */
    int sent_count;
    int step;     /* the step that committed it */
};

/* A live query and its replica, rebuilt from its batches alone. */
struct lq {
    const char *lsql, *ssql;
    bool ordered;
    int full; /* the whole table full (its batch is checked), or -1 */
    ldb_live *q;
    char **key, **row;
    int n, cap;
    int batches;
    char **chg; /* full: this step's changes as text */
    int nchg, capchg;
    char fail[600];
};

struct world {
    rng r;
    ldb *db;
    sqlite3 *sq;
    bool sourced[NT];
    ldb_source *src[NT];
    mtable synced[NT];
    mtable vis[NT]; /* the model's visible state */
    mtable mid[NT]; /* with has_mid: the state a step published first */
    bool has_mid;
    struct otx *pending[MAXTX];
    int npending;
    struct otx *all[MAXTX];
    int nall;
    struct lq q[NQ];
    bool mv[NMV];
    int step, counter;
    int resolved_now; /* resolution callbacks during this step */
    char fail[600];   /* the first mismatch seen inside a callback */
    bool trace;       /* LDB_TRACE: print every action */
    bool reapplied[NKEYS + 1]; /* users rows this step re-applies */
    bool ambiguous;   /* a collision the contract does not decide */
    bool handles;     /* users get handles (else all NULL: no collisions) */
    char *dir;        /* a durable world's directory, or NULL */
    char path[300];   /* its database */
    int reopens, crashes;
    int rejected_before; /* rejections before the last reopen (stats count since) */
    /* what the history exercised (printed at its end) */
    int n_commit, n_empty, n_rollback, n_refused, n_sync, n_sync_confirm, n_confirm, n_reject,
        n_cascade, n_plain;
};

static void trace(const struct world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void trace(const struct world *w, const char *fmt, ...)
{
    if (!w->trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("  [%d] ", w->step);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static bool val_eq(const struct mval *a, const struct mval *b)
{
    if (a->k != b->k)
        return false;
    return a->k == 'n' || (a->k == 'i' ? a->i == b->i : strcmp(a->t, b->t) == 0);
}

static bool row_eq(const struct mrow *a, const struct mrow *b, int ncols)
{
    if (a->on != b->on)
        return false;
    for (int c = 0; a->on && c < ncols; c++)
        if (!val_eq(&a->v[c], &b->v[c]))
            return false;
    return true;
}

static struct mval vnull(void);

/* users.handle is UNIQUE (NULLs aside); else *x and *y collide. */
static bool unique_ok_at(mtable *st, int *x, int *y)
{
    for (int a = 1; a <= NKEYS; a++)
        for (int b = a + 1; b <= NKEYS; b++)
            if (st[1][a].on && st[1][b].on && st[1][a].v[3].k == 't' &&
                val_eq(&st[1][a].v[3], &st[1][b].v[3])) {
                *x = a;
                *y = b;
                return false;
            }
    return true;
}

static bool unique_ok(mtable *st)
{
    int a, b;
    return unique_ok_at(st, &a, &b);
}

/* A synced users row whose handle another synced row holds loses it, so
 * the synced rows never collide (what a sync write that collides with
 * synced rows does is not this test's subject). */
static void fix_synced_handle(mtable *synced, int tab, int key, struct mrow *row)
{
    for (int k = 1; tab == 1 && row->on && k <= NKEYS; k++)
        if (k != key && synced[1][k].on && synced[1][k].v[3].k == 't' &&
            val_eq(&synced[1][k].v[3], &row->v[3]))
            row->v[3] = vnull();
}

static struct mval vnull(void) { return (struct mval){ .k = 'n' }; }
static struct mval vint(int64_t i) { return (struct mval){ .k = 'i', .i = i }; }
static struct mval vtext(const char *s)
{
    struct mval v = { .k = 't' };
    snprintf(v.t, sizeof v.t, "%s", s);
    return v;
}

/* sqlite_cmp.h's text form. */
static void put_val(strbuf *sb, const struct mval *v)
{
    if (v->k == 'n')
        sb_puts(sb, "n");
    else if (v->k == 'i')
        sb_printf(sb, "i:%lld", (long long)v->i);
    else
        sb_printf(sb, "t:%s", v->t);
}

static void put_row(strbuf *sb, int tab, const struct mrow *r)
{
    if (!r->on) {
        sb_puts(sb, "(none)");
        return;
    }
    for (int c = 0; c < tdefs[tab].ncols; c++) {
        sb_puts(sb, c ? "|" : "");
        put_val(sb, &r->v[c]);
    }
}

/* The SQL literal of v. */
static void put_sql(strbuf *sb, const struct mval *v)
{
    if (v->k == 'n')
        sb_puts(sb, "NULL");
    else if (v->k == 'i')
        sb_printf(sb, "%lld", (long long)v->i);
    else
        sb_printf(sb, "'%s'", v->t);
}

/* A mutation applied to the row there now (the re-application rules);
 * false when it is an UPDATE and there is none. */
static bool mut_apply(const struct mut *m, struct mrow *r)
{
    if (m->kind == LDB_MUTATION_INSERT) {
        *r = m->after;
    } else if (m->kind == LDB_MUTATION_DELETE) {
        r->on = false;
    } else {
        if (!r->on)
            return false;
        for (int c = 0; c < tdefs[m->tab].ncols; c++)
            if (!val_eq(&m->before.v[c], &m->after.v[c]))
                r->v[c] = m->after.v[c];
    }
    return true;
}

static bool txn_applies(const struct otx *o, mtable *st)
{
    for (int i = 0; i < o->nmut; i++)
        if (o->mut[i].kind == LDB_MUTATION_UPDATE && !st[o->mut[i].tab][o->mut[i].key].on)
            return false;
    return true;
}

static void txn_apply(const struct otx *o, mtable *st)
{
    for (int i = 0; i < o->nmut; i++)
        CHECK(mut_apply(&o->mut[i], &st[o->mut[i].tab][o->mut[i].key]));
}

static void unpend(struct world *w, int at, int state)
{
    for (int m = 0; m < w->pending[at]->nmut; m++) /* its rows are re-applied */
        if (w->pending[at]->mut[m].tab == 1)
            w->reapplied[w->pending[at]->mut[m].key] = true;
    w->pending[at]->state = state;
    memmove(&w->pending[at], &w->pending[at + 1],
            (size_t)(w->npending - at - 1) * sizeof w->pending[0]);
    w->npending--;
}

/* The pending transactions folded over the synced rows in commit order;
 * one that no longer applies (an UPDATE without a row) is rejected. */
static void fold(struct world *w)
{
    memcpy(w->vis, w->synced, sizeof w->vis);
    for (int i = 0; i < w->npending;) {
        if (!txn_applies(w->pending[i], w->vis)) {
            w->n_cascade++;
            trace(w, "model: txn %llu no longer applies", (unsigned long long)w->pending[i]->id);
            unpend(w, i, LDB_OPTIMISTIC_REJECTED);
            continue;
        }
        txn_apply(w->pending[i], w->vis);
        i++;
    }
}

/* The index in pending of the latest transaction that wrote users row
 * key, or -1 when the row is synced. */
static int latest_writer(const struct world *w, int key)
{
    for (int i = w->npending - 1; i >= 0; i--)
        for (int m = 0; m < w->pending[i]->nmut; m++)
            if (w->pending[i]->mut[m].tab == 1 && w->pending[i]->mut[m].key == key)
                return i;
    return -1;
}

/* The visible state. While a re-applied users row collides with another
 * on the UNIQUE handle, the latest transaction that wrote it is
 * rejected, or the other row's when it has none (a synced row wins: the
 * generator never lets two synced rows collide), and the rest is folded
 * again. Which row is "re-applied" when both are is left open by the
 * contract: the history stops there (ambiguous). */
static void refold(struct world *w)
{
    int a, b;
    for (fold(w); !unique_ok_at(w->vis, &a, &b); fold(w)) {
        if (w->reapplied[a] == w->reapplied[b]) {
            trace(w, "model: users %d and %d collide, both or neither re-applied", a, b);
            w->ambiguous = true;
            return;
        }
        if (!w->reapplied[a]) {
            int t = a;
            a = b;
            b = t;
        }
        int at = latest_writer(w, a);
        if (at < 0)
            at = latest_writer(w, b);
        CHECKF(at >= 0, "step %d: model: synced rows %d and %d collide", w->step, a, b);
        w->n_cascade++;
        trace(w, "model: txn %llu rejected (users %d re-applied onto %d)",
              (unsigned long long)w->pending[at]->id, a, b);
        unpend(w, at, LDB_OPTIMISTIC_REJECTED);
    }
}

/* o's mutations become synced (the re-application rules, onto the synced
 * rows), but for the keys of table skip_tab the server carried. */
static void settle_synced(struct world *w, struct otx *o, int skip_tab, const bool *carried)
{
    for (int i = 0; i < o->nmut; i++) {
        const struct mut *m = &o->mut[i];
        if (m->tab == skip_tab && carried[m->key])
            continue;
        CHECKF(mut_apply(m, &w->synced[m->tab][m->key]), "step %d: model: confirmed UPDATE "
               "without a synced row", w->step);
    }
}

/* Confirming o leaves the synced rows without collisions. */
static bool confirm_keeps_unique(const struct world *w, const struct otx *o)
{
    static mtable st[NT];
    memcpy(st, w->synced, sizeof st);
    for (int i = 0; i < o->nmut; i++)
        if (!mut_apply(&o->mut[i], &st[o->mut[i].tab][o->mut[i].key]))
            return false;
    return unique_ok(st);
}

/* The same for a confirmation carried by a sync transaction of table tab
 * with the server's rows for the carried keys. */
static bool sync_confirm_keeps_unique(const struct world *w, const struct otx *o, int tab,
                                      const mtable server, const bool *carried)
{
    static mtable st[NT];
    memcpy(st, w->synced, sizeof st);
    for (int k = 1; k <= NKEYS; k++)
        if (carried[k])
            st[tab][k] = server[k];
    for (int i = 0; i < o->nmut; i++) {
        const struct mut *m = &o->mut[i];
        if (!(m->tab == tab && carried[m->key]) && !mut_apply(m, &st[m->tab][m->key]))
            return false;
    }
    return unique_ok(st);
}

static bool touches(const struct otx *o, int tab, int key)
{
    for (int i = 0; i < o->nmut; i++)
        if (o->mut[i].tab == tab && o->mut[i].key == key)
            return true;
    return false;
}

static bool table_key_pending(const struct world *w, int tab, int key)
{
    for (int i = 0; i < w->npending; i++)
        if (touches(w->pending[i], tab, key))
            return true;
    return false;
}

static bool table_pending(const struct world *w, int tab)
{
    for (int i = 0; i < w->npending; i++)
        for (int m = 0; m < w->pending[i]->nmut; m++)
            if (w->pending[i]->mut[m].tab == tab)
                return true;
    return false;
}

/* ---- random rows --------------------------------------------------------------- */

static const char *const statuses[] = { "open", "closed", "wip" };
static const char *const names[] = { "ann", "bob", "cy", "dee" };

static struct mval rand_col(struct world *w, int tab, int c)
{
    rng *r = &w->r;
    if (rng_chance(r, 1, 10))
        return vnull();
    char buf[16];
    if (tab == 0) {
        switch (c) {
        case 1: return vint(rng_range(r, 1, NKEYS));
        case 2: return vtext(statuses[rng_below(r, 3)]);
        case 3: snprintf(buf, sizeof buf, "x%d", ++w->counter); return vtext(buf);
        default: return vint(rng_range(r, 0, 5));
        }
    }
    if (c == 1)
        return vtext(names[rng_below(r, 4)]);
    if (c == 3) {
        if (!w->handles || rng_chance(r, 1, 3))
            return vnull();
        snprintf(buf, sizeof buf, "h%d", (int)rng_range(r, 1, 9));
        return vtext(buf);
    }
    return vint(rng_range(r, 0, 3));
}

static struct mrow rand_row(struct world *w, int tab, int key)
{
    struct mrow row = { .on = true };
    row.v[0] = vint(key);
    for (int c = 1; c < tdefs[tab].ncols; c++)
        row.v[c] = rand_col(w, tab, c);
    return row;
}

/* ---- live queries and their replicas ------------------------------------------------- */

static void lq_fail(struct lq *l, const char *fmt, ...)
{
    if (l->fail[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->fail, sizeof l->fail, fmt, ap);
    va_end(ap);
}

static char *row_text(const ldb_row *r)
{
    strbuf sb = STRBUF_INIT;
    cmp_put_livedb_row(&sb, r);
    char *s = strdup(sb_str(&sb));
    sb_free(&sb);
    CHECK(s);
    return s;
}

static int lq_find(const struct lq *l, const char *key)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->key[i], key) == 0)
            return i;
    return -1;
}

static void lq_remove(struct lq *l, int at)
{
    free(l->key[at]);
    free(l->row[at]);
    memmove(&l->key[at], &l->key[at + 1], (size_t)(l->n - at - 1) * sizeof(char *));
    memmove(&l->row[at], &l->row[at + 1], (size_t)(l->n - at - 1) * sizeof(char *));
    l->n--;
}

static void lq_insert(struct lq *l, int at, char *key, char *row)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->key = realloc(l->key, (size_t)l->cap * sizeof(char *));
        l->row = realloc(l->row, (size_t)l->cap * sizeof(char *));
    }
    memmove(&l->key[at + 1], &l->key[at], (size_t)(l->n - at) * sizeof(char *));
    memmove(&l->row[at + 1], &l->row[at], (size_t)(l->n - at) * sizeof(char *));
    l->key[at] = key;
    l->row[at] = row;
    l->n++;
}

static void lq_note_change(struct lq *l, const ldb_change *c)
{
    strbuf sb = STRBUF_INIT;
    cmp_put_livedb_row(&sb, c->key);
    sb_puts(&sb, c->kind == LDB_CHANGE_INSERT ? " I " : c->kind == LDB_CHANGE_DELETE ? " D " : " U ");
    if (c->before)
        cmp_put_livedb_row(&sb, c->before);
    sb_puts(&sb, " -> ");
    if (c->after)
        cmp_put_livedb_row(&sb, c->after);
    if (l->nchg == l->capchg) {
        l->capchg = l->capchg ? 2 * l->capchg : 16;
        l->chg = realloc(l->chg, (size_t)l->capchg * sizeof(char *));
    }
    l->chg[l->nchg++] = strdup(sb_str(&sb));
    sb_free(&sb);
}

static int by_before_pos_desc(const void *a, const void *b)
{
    const ldb_change *x = *(const ldb_change *const *)a, *y = *(const ldb_change *const *)b;
    return (x->before_pos < y->before_pos) - (x->before_pos > y->before_pos);
}

static int by_after_pos(const void *a, const void *b)
{
    const ldb_change *x = *(const ldb_change *const *)a, *y = *(const ldb_change *const *)b;
    return (x->after_pos > y->after_pos) - (x->after_pos < y->after_pos);
}

/* Removes every before row, then inserts every after row (livedb.h). */
static void lq_replay(struct lq *l, const ldb_change *c, size_t n)
{
    const ldb_change **ord = malloc((n + 1) * sizeof *ord);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].before)
            ord[k++] = &c[i];
    if (l->ordered)
        qsort(ord, k, sizeof *ord, by_before_pos_desc);
    for (size_t i = 0; i < k; i++) {
        char *key = row_text(ord[i]->key), *before = row_text(ord[i]->before);
        int at = l->ordered ? (int)ord[i]->before_pos : lq_find(l, key);
        if (at < 0 || at >= l->n || strcmp(l->key[at], key) != 0)
            lq_fail(l, "%s: change of key %s the replica does not hold", l->lsql, key);
        else if (strcmp(l->row[at], before) != 0)
            lq_fail(l, "%s: before row %s, replica has %s", l->lsql, before, l->row[at]);
        else
            lq_remove(l, at);
        free(key);
        free(before);
    }
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].after)
            ord[k++] = &c[i];
    if (l->ordered)
        qsort(ord, k, sizeof *ord, by_after_pos);
    for (size_t i = 0; i < k; i++) {
        char *key = row_text(ord[i]->key);
        int at = l->ordered ? (int)ord[i]->after_pos : l->n;
        if (lq_find(l, key) >= 0 || at < 0 || at > l->n) {
            lq_fail(l, "%s: insert of key %s the replica holds (or bad position)", l->lsql, key);
            free(key);
            continue;
        }
        lq_insert(l, at, key, row_text(ord[i]->after));
    }
    free(ord);
}

static void on_change(void *ctx, ldb_live *q, const ldb_change *c, size_t n)
{
    struct lq *l = ctx;
    l->batches++;
    for (size_t i = 0; l->full >= 0 && i < n; i++)
        lq_note_change(l, &c[i]);
    lq_replay(l, c, n);
}

static void lq_clear_changes(struct lq *l)
{
    for (int i = 0; i < l->nchg; i++)
        free(l->chg[i]);
    l->nchg = 0;
    l->batches = 0;
}

static void lq_free(struct lq *l)
{
    ldb_live_close(l->q);
    lq_clear_changes(l);
    while (l->n)
        lq_remove(l, l->n - 1);
    free(l->key);
    free(l->row);
    free(l->chg);
}

/* The queries: livedb's SQL, SQLite's, ordered, the whole table. */
static const struct {
    const char *lsql, *ssql;
    bool ordered;
    int full;
} queries[NQ] = {
    { "SELECT id, owner, status, title, prio FROM issues", NULL, false, 0 },
    { "SELECT id, name, team, handle FROM users", NULL, false, 1 },
    { "SELECT id, owner, prio FROM issues WHERE status = 'open' AND prio >= 2", NULL, false, -1 },
    { "SELECT i.id, u.id, i.title, u.name FROM issues i JOIN users u ON u.id = i.owner "
      "WHERE u.team <> 3", NULL, false, -1 },
    { "SELECT owner, count(*), sum(prio) FROM issues GROUP BY owner", NULL, false, -1 },
    { "SELECT id, prio, title FROM issues ORDER BY prio DESC, id LIMIT 4", NULL, true, -1 },
    { "SELECT u.id, u.name, to_json(ARRAY(SELECT i.id FROM issues i WHERE i.owner = u.id "
      "ORDER BY i.id)) FROM users u",
      "SELECT u.id, u.name, (SELECT json_group_array(id) FROM (SELECT i.id AS id FROM issues i "
      "WHERE i.owner = u.id ORDER BY i.id)) FROM users u", false, -1 },
    { "SELECT team, count(*), sum(id) FROM users GROUP BY team", NULL, false, -1 },
};

static const struct {
    const char *name, *body;
} mvs[NMV] = {
    { "mv_open", "SELECT id, owner, prio FROM issues WHERE status = 'open'" },
    { "mv_team", "SELECT team, count(*) AS n FROM users GROUP BY team" },
};

/* Opens query i; its first batch (the hydration over the visible state)
 * fills the replica. */
static void open_query(struct world *w, int i)
{
    struct lq *l = &w->q[i];
    memset(l, 0, sizeof *l);
    l->lsql = queries[i].lsql;
    l->ssql = queries[i].ssql ? queries[i].ssql : queries[i].lsql;
    l->ordered = queries[i].ordered;
    l->full = queries[i].full;
    int rc = ldb_live_open(w->db, l->lsql, on_change, l, &l->q);
    CHECKF(rc == LDB_OK && l->q, "%s: %s", l->lsql, ldb_errmsg(w->db));
    CHECKF(!l->fail[0], "%s", l->fail);
    lq_clear_changes(l);
}

/* A query reopened now, while transactions are pending (not a whole-
 * table one: their batches are checked against the model's difference). */
static void reopen_query(struct world *w)
{
    int i = (int)rng_range(&w->r, 2, NQ - 1);
    lq_free(&w->q[i]);
    open_query(w, i);
}

/* ---- the databases ------------------------------------------------------------------- */

static int settle_at_once(void *ctx, ldb_request *req)
{
    return ldb_request_settle(req, LDB_OK, NULL);
}

static void sq_exec(struct world *w, const char *sql)
{
    char *err = NULL;
    CHECKF(sqlite3_exec(w->sq, sql, NULL, NULL, &err) == SQLITE_OK, "SQLite: %s: %s", sql,
           err ? err : "?");
}

static void sync_put_row(ldb_sync *t, int tab, const struct mrow *r)
{
    for (int c = 0; c < tdefs[tab].ncols; c++) {
        const struct mval *v = &r->v[c];
        int rc = v->k == 'n' ? ldb_sync_null(t, c)
               : v->k == 'i' ? ldb_sync_int64(t, c, v->i)
                             : ldb_sync_text(t, c, v->t, -1);
        CHECK_INT(rc, LDB_OK);
    }
}

/* One sync operation on t: key's row becomes r (r->on: upsert, else delete). */
static void sync_write(ldb_sync *t, int tab, int key, const struct mrow *r)
{
    if (getenv("LDB_TRACE")) {
        strbuf sb = STRBUF_INIT;
        put_row(&sb, tab, r);
        printf("  sync %s %d := %s\n", tdefs[tab].name, key, sb_str(&sb));
        sb_free(&sb);
    }
    if (r->on) {
        sync_put_row(t, tab, r);
        CHECK_INT(ldb_sync_upsert(t), LDB_OK);
    } else {
        CHECK_INT(ldb_sync_int64(t, 0, key), LDB_OK);
        CHECK_INT(ldb_sync_delete(t), LDB_OK);
    }
}

static void sync_commit(struct world *w, ldb_sync *t)
{
    ldb_receipt *rc = NULL;
    int code = ldb_sync_commit(t, &rc);
    CHECKF(code == LDB_OK, "step %d: sync commit: %d (%s)", w->step, code,
           ldb_receipt_error(rc) ? ldb_receipt_error(rc) : "-");
    CHECK_INT(ldb_receipt_state(rc), LDB_RECEIPT_APPLIED);
    ldb_receipt_free(rc);
}

static void on_resolved(void *ctx, ldb_optimistic *o, int state)
{
    struct world *w = ctx;
    w->resolved_now++;
    for (int i = 0; i < w->nall; i++) {
        if (w->all[i]->h != o && w->all[i]->sent_h != o)
            continue;
        w->all[i]->resolved++;
        w->all[i]->resolved_as = state;
        return;
    }
    if (!w->fail[0]) /* (one that wrote nothing gets none: it is not in all[] yet) */
        snprintf(w->fail, sizeof w->fail, "resolution of an unknown handle (state %d)", state);
}

static void initial_rows(struct world *w, int tab)
{
    ldb_sync *t = NULL;
    if (w->sourced[tab])
        CHECK_INT(ldb_sync_begin(w->src[tab], NULL, &t), LDB_OK);
    for (int k = 1; k <= NKEYS; k++) {
        if (rng_chance(&w->r, 1, 3))
            continue;
        w->synced[tab][k] = rand_row(w, tab, k);
        fix_synced_handle(w->synced, tab, k, &w->synced[tab][k]);
        if (t) {
            sync_write(t, tab, k, &w->synced[tab][k]);
            continue;
        }
        strbuf sb = STRBUF_INIT;
        sb_printf(&sb, "INSERT INTO %s VALUES(", tdefs[tab].name);
        for (int c = 0; c < tdefs[tab].ncols; c++) {
            sb_puts(&sb, c ? ", " : "");
            put_sql(&sb, &w->synced[tab][k].v[c]);
        }
        sb_puts(&sb, ")");
        EXEC(w->db, sb_str(&sb));
        sb_free(&sb);
    }
    if (t)
        sync_commit(w, t);
}

/* A durable database's files: the snapshot and the log. */
static const char *const db_files[] = { "", "-wal" };

/* Copies from+suffix to to+suffix for each of the files (a missing one
 * stays missing), or removes them (to NULL). */
static void files_copy(const char *from, const char *to)
{
    for (size_t i = 0; i < sizeof db_files / sizeof *db_files; i++) {
        char src[400], dst[400];
        snprintf(src, sizeof src, "%s%s", from, db_files[i]);
        unlink(to ? (snprintf(dst, sizeof dst, "%s%s", to, db_files[i]), dst) : src);
        FILE *in = to ? fopen(src, "rb") : NULL;
        if (!in)
            continue;
        FILE *out = fopen(dst, "wb");
        CHECK(out != NULL);
        char buf[65536];
        for (size_t n; (n = fread(buf, 1, sizeof buf, in)) > 0;)
            CHECK(fwrite(buf, 1, n, out) == n);
        CHECK(fclose(out) == 0);
        fclose(in);
    }
}

static void attach(struct world *w, int tab)
{
    static const ldb_provider p = { .load_subset = settle_at_once };
    CHECKF(ldb_source_attach(w->db, tdefs[tab].name, LDB_SOURCE_EAGER, &p, NULL,
                             &w->src[tab]) == LDB_OK,
           "attach %s: %s", tdefs[tab].name, ldb_errmsg(w->db));
}

/* A durable world's database at w->path; fsync is left out (a crash is
 * a copy of the files, not a power loss). */
static void open_db(struct world *w)
{
    int rc = ldb_open(w->dir ? w->path : NULL, &w->db);
    CHECKF(rc == LDB_OK, "step %d: open %s: %s", w->step, w->dir ? w->path : ":memory:",
           ldb_errmsg(NULL));
    if (w->dir)
        EXEC(w->db, "PRAGMA synchronous = OFF");
}

static void world_open(struct world *w, uint64_t seed, int modes, bool handles, bool durable)
{
    memset(w, 0, sizeof *w);
    w->handles = handles;
    rng_seed(&w->r, seed);
    if (durable) {
        CHECK((w->dir = strdup("/tmp/ldb_oracle_XXXXXX")) && mkdtemp(w->dir));
        snprintf(w->path, sizeof w->path, "%s/a.ldb", w->dir);
    }
    open_db(w);
    CHECK_INT(sqlite3_open(":memory:", &w->sq), SQLITE_OK);
    const char *schema = "CREATE TABLE issues(id INTEGER PRIMARY KEY, owner INTEGER, status TEXT, "
                         "title TEXT, prio INTEGER);"
                         "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, team INTEGER, "
                         "handle TEXT UNIQUE);"
                         "CREATE TABLE notes(x INTEGER)";
    EXEC(w->db, schema);
    sq_exec(w, schema);
    for (int tab = 0; tab < NT; tab++) {
        w->sourced[tab] = modes & (1 << tab);
        if (w->sourced[tab])
            attach(w, tab);
        initial_rows(w, tab);
    }
    for (int i = 0; i < NMV; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "CREATE MATERIALIZED VIEW %s AS %s", mvs[i].name, mvs[i].body);
        EXEC(w->db, sql);
    }
    CHECK_INT(ldb_set_resolved_callback(w->db, on_resolved, w), LDB_OK);
    refold(w);
    for (int i = 0; i < NQ; i++)
        open_query(w, i);
}

static void world_close(struct world *w)
{
    for (int i = 0; i < NQ; i++)
        lq_free(&w->q[i]);
    for (int i = 0; i < w->nall; i++) {
        ldb_optimistic_free(w->all[i]->h);
        free(w->all[i]);
    }
    ldb_close(w->db);
    sqlite3_close(w->sq);
    if (w->dir) {
        files_copy(w->path, NULL);
        CHECK(rmdir(w->dir) == 0);
        free(w->dir);
    }
}

/* ---- checks -------------------------------------------------------------------------- */

/* SQLite's tables become the model's visible state. */
static void sqlite_load(struct world *w)
{
    sq_exec(w, "DELETE FROM issues; DELETE FROM users");
    for (int tab = 0; tab < NT; tab++) {
        for (int k = 1; k <= NKEYS; k++) {
            if (!w->vis[tab][k].on)
                continue;
            strbuf sb = STRBUF_INIT;
            sb_printf(&sb, "INSERT INTO %s VALUES(", tdefs[tab].name);
            for (int c = 0; c < tdefs[tab].ncols; c++) {
                sb_puts(&sb, c ? ", " : "");
                put_sql(&sb, &w->vis[tab][k].v[c]);
            }
            sb_puts(&sb, ")");
            sq_exec(w, sb_str(&sb));
            sb_free(&sb);
        }
    }
}

static void check_rows(struct world *w, const char *what, cmp_result *got, cmp_result *want,
                       bool ordered)
{
    CHECKF(got->ok && want->ok, "step %d: %s: %s%s", w->step, what, got->msg, want->msg);
    if (cmp_same_rows(got, want, ordered))
        return;
    fprintf(stderr, "step %d: %s\n  got:\n", w->step, what);
    for (size_t i = 0; i < got->n; i++)
        fprintf(stderr, "    %s\n", got->rows[i]);
    fprintf(stderr, "  expected:\n");
    for (size_t i = 0; i < want->n; i++)
        fprintf(stderr, "    %s\n", want->rows[i]);
    CHECKF(false, "step %d: %s: results differ (stderr)", w->step, what);
}

/* (a) every table read with SELECT is the model's visible state. */
static void check_tables(struct world *w, mtable *state)
{
    for (int tab = 0; tab < NT; tab++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT * FROM %s ORDER BY id", tdefs[tab].name);
        cmp_result got, want = { .ok = 1 };
        cmp_run_livedb(w->db, sql, &got);
        for (int k = 1; k <= NKEYS; k++) {
            if (!state[tab][k].on)
                continue;
            strbuf sb = STRBUF_INIT;
            put_row(&sb, tab, &state[tab][k]);
            cmp_result_add(&want, &sb);
        }
        check_rows(w, sql, &got, &want, true);
        cmp_result_free(&got);
        cmp_result_free(&want);
    }
}

/* (b) a live query's replica = one-shot livedb = SQLite over the model. */
static void check_query(struct world *w, struct lq *l)
{
    CHECKF(!l->fail[0], "step %d: %s", w->step, l->fail);
    CHECKF(l->batches <= 1 + w->has_mid, "step %d: %s: %d batches in one step", w->step, l->lsql,
           l->batches);
    const char *msg = NULL;
    CHECKF(ldb_live_error(l->q, &msg) == LDB_OK, "step %d: %s: %s", w->step, l->lsql, msg);
    cmp_result rep = { .ok = 1 }, one, sq;
    for (int i = 0; i < l->n; i++) {
        strbuf sb = STRBUF_INIT;
        sb_puts(&sb, l->row[i]);
        cmp_result_add(&rep, &sb);
    }
    cmp_run_livedb(w->db, l->lsql, &one);
    cmp_run_sqlite(w->sq, l->ssql, &sq);
    char what[700];
    snprintf(what, sizeof what, "one-shot vs SQLite over the model: %s", l->lsql);
    check_rows(w, what, &one, &sq, l->ordered);
    snprintf(what, sizeof what, "live replica vs SQLite over the model: %s", l->lsql);
    check_rows(w, what, &rep, &sq, l->ordered);
    cmp_result_free(&rep);
    cmp_result_free(&one);
    cmp_result_free(&sq);
}

static int strp_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The model's difference of table tab from a to z, appended to want;
 * whether there is one. */
static bool model_diff(int tab, mtable *from, mtable *to, char **want, int *n)
{
    int n0 = *n;
    for (int k = 1; k <= NKEYS; k++) {
        const struct mrow *a = &from[tab][k], *b = &to[tab][k];
        if (row_eq(a, b, tdefs[tab].ncols))
            continue;
        strbuf sb = STRBUF_INIT;
        sb_printf(&sb, "i:%d %s ", k, !a->on ? "I" : !b->on ? "D" : "U");
        if (a->on)
            put_row(&sb, tab, a);
        sb_puts(&sb, " -> ");
        if (b->on)
            put_row(&sb, tab, b);
        want[(*n)++] = strdup(sb_str(&sb));
        sb_free(&sb);
    }
    return *n > n0;
}

/* A whole-table query got exactly the model's difference, in one batch
 * (two when the step published a middle state first). */
static void check_diff(struct world *w, struct lq *l, mtable *before)
{
    int tab = l->full, n = 0, batches;
    char *want[2 * NKEYS];
    if (w->has_mid)
        batches = model_diff(tab, before, w->mid, want, &n) + model_diff(tab, w->mid, w->vis, want, &n);
    else
        batches = model_diff(tab, before, w->vis, want, &n);
    qsort(want, (size_t)n, sizeof *want, strp_cmp);
    if (l->nchg) /* chg is NULL for a query reopened with no change yet */
        qsort(l->chg, (size_t)l->nchg, sizeof *l->chg, strp_cmp);
    bool same = n == l->nchg && l->batches == batches;
    for (int i = 0; same && i < n; i++)
        same = strcmp(want[i], l->chg[i]) == 0;
    if (!same) {
        fprintf(stderr, "step %d: %s: %d batches; changes got:\n", w->step, tdefs[tab].name,
                l->batches);
        for (int i = 0; i < l->nchg; i++)
            fprintf(stderr, "    %s\n", l->chg[i]);
        fprintf(stderr, "  expected (%d batches):\n", batches);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "    %s\n", want[i]);
    }
    for (int i = 0; i < n; i++)
        free(want[i]);
    CHECKF(same, "step %d: %s: the published difference is not the model's (stderr)", w->step,
           tdefs[tab].name);
}

/* (c) every materialized view equals its body, and SQLite's. */
static void check_mvs(struct world *w)
{
    for (int i = 0; i < NMV; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", mvs[i].name);
        cmp_result mv, body, sq;
        cmp_run_livedb(w->db, sql, &mv);
        cmp_run_livedb(w->db, mvs[i].body, &body);
        cmp_run_sqlite(w->sq, mvs[i].body, &sq);
        check_rows(w, mvs[i].body, &body, &sq, false);
        check_rows(w, sql, &mv, &sq, false);
        cmp_result_free(&mv);
        cmp_result_free(&body);
        cmp_result_free(&sq);
    }
}

/* Handles' states, resolution callbacks (once each, this step's count). */
static void check_handles(struct world *w, int resolved_before)
{
    CHECKF(!w->fail[0], "step %d: %s", w->step, w->fail);
    int resolved = 0;
    for (int i = 0; i < w->nall; i++) {
        struct otx *o = w->all[i];
        CHECKF(ldb_optimistic_state(o->h) == o->state, "step %d: txn %llu (step %d) state %d, "
               "model says %d", w->step, (unsigned long long)o->id, o->step,
               ldb_optimistic_state(o->h), o->state);
        bool done = o->state != LDB_OPTIMISTIC_PENDING && o->nmut; /* empty: no callback */
        CHECKF(o->resolved == done, "step %d: txn %llu (step %d): %d resolution callbacks",
               w->step, (unsigned long long)o->id, o->step, o->resolved);
        if (done)
            CHECKF(o->resolved_as == o->state, "step %d: txn %llu resolved as %d, model says %d",
                   w->step, (unsigned long long)o->id, o->resolved_as, o->state);
        if (o->state == LDB_OPTIMISTIC_REJECTED)
            CHECKF(ldb_optimistic_error(o->h) != NULL, "step %d: rejected txn %llu has no error",
                   w->step, (unsigned long long)o->id);
        resolved += done;
    }
    CHECK_INT(w->resolved_now, resolved - resolved_before);
}

/* The pending layer's counters: transactions pending, keys under them,
 * rejections so far. */
static void check_stats(struct world *w)
{
    ldb_optimistic_stats st;
    ldb_optimistic_stats_get(w->db, &st);
    bool under[NT][NKEYS + 1] = { { 0 } };
    int rows = 0, rejected = 0;
    for (int i = 0; i < w->npending; i++)
        for (int m = 0; m < w->pending[i]->nmut; m++) {
            const struct mut *u = &w->pending[i]->mut[m];
            rows += !under[u->tab][u->key];
            under[u->tab][u->key] = true;
        }
    for (int i = 0; i < w->nall; i++)
        rejected += w->all[i]->state == LDB_OPTIMISTIC_REJECTED;
    rejected -= w->rejected_before;
    CHECKF(st.pending == (uint64_t)w->npending && st.rows == (uint64_t)rows &&
               st.rejected == (uint64_t)rejected,
           "step %d: stats pending %llu rows %llu rejected %llu, model %d %d %d", w->step,
           (unsigned long long)st.pending, (unsigned long long)st.rows,
           (unsigned long long)st.rejected, w->npending, rows, rejected);
}

static void check_all(struct world *w, mtable *before, int resolved_before)
{
    sqlite_load(w);
    check_tables(w, w->vis);
    for (int i = 0; i < NQ; i++) {
        check_query(w, &w->q[i]);
        if (w->q[i].full >= 0)
            check_diff(w, &w->q[i], before);
    }
    check_mvs(w);
    check_handles(w, resolved_before);
    check_stats(w);
}

/* ---- optimistic transactions ----------------------------------------------------------- */

/* The transaction being written: its working state and first writes. */
struct tb {
    mtable orig[NT], cur[NT];
    int first[NT][NKEYS + 1]; /* statement that first wrote the key, 0: none */
    int tabfirst[NT];
    int seq;
};

static void tb_touch(struct tb *b, int tab, int key)
{
    if (!b->first[tab][key])
        b->first[tab][key] = b->seq;
    if (!b->tabfirst[tab])
        b->tabfirst[tab] = b->seq;
}

/* Runs sql inside the transaction; returns its code. */
static int run(struct world *w, const char *sql)
{
    trace(w, "%s", sql);
    return ldb_exec(w->db, sql, NULL, NULL);
}

static void write_insert(struct world *w, struct tb *b, int tab, strbuf *sb, int *want)
{
    int k = (int)rng_range(&w->r, 1, NKEYS);
    struct mrow row = rand_row(w, tab, k);
    sb_printf(sb, "INSERT INTO %s VALUES(", tdefs[tab].name);
    for (int c = 0; c < tdefs[tab].ncols; c++) {
        sb_puts(sb, c ? ", " : "");
        put_sql(sb, &row.v[c]);
    }
    sb_puts(sb, ")");
    if (b->cur[tab][k].on) {
        *want = LDB_CONSTRAINT;
        return;
    }
    tb_touch(b, tab, k);
    b->cur[tab][k] = row;
}

static void write_update_key(struct world *w, struct tb *b, int tab, strbuf *sb)
{
    int k = (int)rng_range(&w->r, 1, NKEYS);
    struct mrow *r = &b->cur[tab][k];
    struct mrow row = *r;
    sb_printf(sb, "UPDATE %s SET ", tdefs[tab].name);
    int n = (int)rng_range(&w->r, 1, 2);
    for (int i = 0; i < n; i++) {
        int c = (int)rng_range(&w->r, 1, tdefs[tab].ncols - 1);
        row.v[c] = rand_col(w, tab, c);
        sb_printf(sb, "%s%s = ", i ? ", " : "", tdefs[tab].cols[c]);
        put_sql(sb, &row.v[c]);
    }
    sb_printf(sb, " WHERE id = %d", k);
    if (!row_eq(r, &row, tdefs[tab].ncols)) { /* a write of the same values changes nothing */
        tb_touch(b, tab, k);
        *r = row;
    }
}

/* UPDATE by a predicate; the new value always differs from the old. */
static void write_update_pred(struct world *w, struct tb *b, int tab, strbuf *sb)
{
    int col = tab == 0 ? 4 : 2;
    int n = (int)rng_range(&w->r, 0, 3);
    bool by_status = tab == 0 && rng_chance(&w->r, 1, 2);
    const char *st = statuses[rng_below(&w->r, 3)];
    if (by_status)
        sb_printf(sb, "UPDATE issues SET prio = coalesce(prio, 0) + 1 WHERE status = '%s'", st);
    else if (tab == 0)
        sb_printf(sb, "UPDATE issues SET prio = coalesce(prio, 0) + 1 WHERE owner = %d", n + 1);
    else
        sb_printf(sb, "UPDATE users SET team = coalesce(team, 0) + 1 WHERE team = %d", n);
    for (int k = 1; k <= NKEYS; k++) {
        struct mrow *r = &b->cur[tab][k];
        const struct mval *p = &r->v[by_status ? 2 : 1 + (tab == 0 ? 0 : 1)];
        bool hit = r->on && (by_status ? p->k == 't' && strcmp(p->t, st) == 0
                                       : p->k == 'i' && p->i == (tab == 0 ? n + 1 : n));
        if (!hit)
            continue;
        tb_touch(b, tab, k);
        r->v[col] = vint((r->v[col].k == 'i' ? r->v[col].i : 0) + 1);
    }
}

static void write_delete(struct world *w, struct tb *b, int tab, strbuf *sb)
{
    int k = (int)rng_range(&w->r, 1, NKEYS), n = (int)rng_range(&w->r, 1, 4);
    bool by_key = rng_chance(&w->r, 2, 3);
    int col = tab == 0 ? 4 : 2;
    if (by_key)
        sb_printf(sb, "DELETE FROM %s WHERE id = %d", tdefs[tab].name, k);
    else
        sb_printf(sb, "DELETE FROM %s WHERE %s > %d", tdefs[tab].name, tdefs[tab].cols[col], n);
    for (int key = 1; key <= NKEYS; key++) {
        struct mrow *r = &b->cur[tab][key];
        bool hit = r->on && (by_key ? key == k : r->v[col].k == 'i' && r->v[col].i > n);
        if (!hit)
            continue;
        tb_touch(b, tab, key);
        r->on = false;
    }
}

/* One random write of table tab (runs it; the model follows). Returns
 * the code it got. */
static int random_write(struct world *w, struct tb *b, int tab)
{
    strbuf sb = STRBUF_INIT;
    int want = LDB_OK, kind = (int)rng_below(&w->r, 10);
    struct tb *saved = malloc(sizeof *saved);
    CHECK(saved);
    *saved = *b;
    b->seq++;
    if (kind < 3)
        write_insert(w, b, tab, &sb, &want);
    else if (kind < 6)
        write_update_key(w, b, tab, &sb);
    else if (kind < 8)
        write_update_pred(w, b, tab, &sb);
    else
        write_delete(w, b, tab, &sb);
    if (want == LDB_OK && !unique_ok(b->cur)) { /* the statement fails, undone */
        want = LDB_CONSTRAINT;
        saved->seq = b->seq;
        *b = *saved;
    }
    free(saved);
    int rc = run(w, sb_str(&sb));
    CHECKF(rc == want, "step %d: %s: rc %d (%s), wanted %d", w->step, sb_str(&sb), rc,
           ldb_errmsg(w->db), want);
    sb_free(&sb);
    return rc;
}

/* A write undone by ROLLBACK TO a savepoint: not part of the net change
 * (nor of the order of first writes). */
static void undone_write(struct world *w, struct tb *b)
{
    struct tb *saved = malloc(sizeof *saved);
    CHECK(saved);
    *saved = *b;
    CHECK_INT(run(w, "SAVEPOINT s"), LDB_OK);
    random_write(w, b, (int)rng_below(&w->r, NT));
    CHECK_INT(run(w, "ROLLBACK TO s"), LDB_OK);
    CHECK_INT(run(w, "RELEASE s"), LDB_OK);
    int seq = b->seq;
    *b = *saved;
    b->seq = seq;
    free(saved);
}

/* A key whose net change would be nothing gets a fresh title/name. */
static void avoid_noop(struct world *w, struct tb *b)
{
    for (int tab = 0; tab < NT; tab++) {
        for (int k = 1; k <= NKEYS; k++) {
            if (!b->first[tab][k] || !b->orig[tab][k].on ||
                !row_eq(&b->orig[tab][k], &b->cur[tab][k], tdefs[tab].ncols))
                continue;
            int c = tab == 0 ? 3 : 1;
            char sql[128];
            snprintf(sql, sizeof sql, "UPDATE %s SET %s = 'b%d' WHERE id = %d", tdefs[tab].name,
                     tdefs[tab].cols[c], ++w->counter, k);
            CHECKF(run(w, sql) == LDB_OK, "step %d: %s: %s", w->step, sql, ldb_errmsg(w->db));
            char text[16];
            snprintf(text, sizeof text, "b%d", w->counter);
            b->cur[tab][k].v[c] = vtext(text);
        }
    }
}

/* The model's mutations of the transaction: one per key with a net
 * change, by table (in order of first write), then by first write. */
static struct otx *tb_mutations(struct world *w, struct tb *b)
{
    struct otx *o = calloc(1, sizeof *o);
    CHECK(o);
    o->step = w->step;
    for (int s = 1; s <= b->seq; s++) {
        for (int tab = 0; tab < NT; tab++) {
            if (b->tabfirst[tab] != s)
                continue;
            for (int s2 = 1; s2 <= b->seq; s2++) {
                for (int k = 1; k <= NKEYS; k++) {
                    const struct mrow *a = &b->orig[tab][k], *z = &b->cur[tab][k];
                    if (b->first[tab][k] != s2 || (!a->on && !z->on))
                        continue;
                    struct mut *m = &o->mut[o->nmut++];
                    m->tab = tab;
                    m->key = k;
                    m->seq = s2;
                    m->kind = !a->on ? LDB_MUTATION_INSERT
                            : !z->on ? LDB_MUTATION_DELETE : LDB_MUTATION_UPDATE;
                    m->before = *a;
                    m->after = *z;
                }
            }
        }
    }
    return o;
}

static void put_value(strbuf *sb, const ldb_value *v)
{
    size_t len = 0;
    const char *t;
    switch (ldb_value_type(v)) {
    case LDB_NULL: sb_puts(sb, "n"); break;
    case LDB_INTEGER: sb_printf(sb, "i:%lld", (long long)ldb_value_int64(v)); break;
    case LDB_TEXT:
        t = ldb_value_text(v, &len);
        sb_puts(sb, "t:");
        sb_put(sb, t, len);
        break;
    default: sb_printf(sb, "?type %d", ldb_value_type(v)); break;
    }
}

/* Handle mutation i as "table key kind before -> after". */
static char *handle_mut(const ldb_optimistic *h, int i)
{
    strbuf sb = STRBUF_INIT;
    int kind = ldb_optimistic_kind(h, i), n = ldb_optimistic_columns(h, i);
    sb_printf(&sb, "%s %d ", ldb_optimistic_table(h, i), kind);
    for (int c = 0; kind != LDB_MUTATION_INSERT && c < n; c++) {
        sb_puts(&sb, c ? "|" : "");
        put_value(&sb, ldb_optimistic_before(h, i, c));
    }
    sb_puts(&sb, " -> ");
    for (int c = 0; kind != LDB_MUTATION_DELETE && c < n; c++) {
        sb_puts(&sb, c ? "|" : "");
        put_value(&sb, ldb_optimistic_after(h, i, c));
    }
    char *s = strdup(sb_str(&sb));
    sb_free(&sb);
    return s;
}

static char *model_mut(const struct mut *m)
{
    strbuf sb = STRBUF_INIT;
    sb_printf(&sb, "%s %d ", tdefs[m->tab].name, m->kind);
    if (m->kind != LDB_MUTATION_INSERT)
        put_row(&sb, m->tab, &m->before);
    sb_puts(&sb, " -> ");
    if (m->kind != LDB_MUTATION_DELETE)
        put_row(&sb, m->tab, &m->after);
    char *s = strdup(sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* The accessors show the model's mutations; the order is the model's
 * but for keys first written by the same statement (any order). */
static void check_mutations(struct world *w, struct otx *o)
{
    CHECKF(ldb_optimistic_count(o->h) == o->nmut, "step %d: %d mutations, model has %d",
           w->step, ldb_optimistic_count(o->h), o->nmut);
    bool used[MAXMUT] = { 0 };
    for (int i = 0; i < o->nmut; i++) {
        char *got = handle_mut(o->h, i);
        int j = i;
        while (j > 0 && o->mut[j - 1].seq == o->mut[i].seq && o->mut[j - 1].tab == o->mut[i].tab)
            j--;
        bool found = false;
        for (; !found && j < o->nmut && o->mut[j].seq == o->mut[i].seq &&
               o->mut[j].tab == o->mut[i].tab; j++) {
            char *want = model_mut(&o->mut[j]);
            found = !used[j] && strcmp(got, want) == 0;
            used[j] |= found;
            free(want);
        }
        char *want = model_mut(&o->mut[i]);
        CHECKF(found, "step %d: mutation %d is %s; model (this place): %s", w->step, i, got, want);
        free(want);
        free(got);
    }
}

static void on_send(void *ctx, ldb_optimistic *o)
{
    struct otx *t = ctx;
    t->sends++;
    t->sent_count = ldb_optimistic_count(o);
    t->sent_h = o;
    if (t->in_send) /* applied when the commit returns */
        t->in_send_rc = t->in_send == 1 ? ldb_optimistic_confirm(o)
                                        : ldb_optimistic_reject(o, "refused at once");
}

/* Whether confirming o (about to commit) changes nothing visible and
 * the readings agree: no pending transaction touches its keys, and its
 * UPDATEs have synced rows. */
static bool confirmable_at_once(const struct world *w, const struct otx *o)
{
    for (int i = 0; i < o->nmut; i++) {
        const struct mut *m = &o->mut[i];
        if (m->kind == LDB_MUTATION_UPDATE && !w->synced[m->tab][m->key].on)
            return false;
        for (int e = 0; e < w->npending; e++)
            if (touches(w->pending[e], m->tab, m->key))
                return false;
    }
    return confirm_keeps_unique(w, o);
}

/* The model after a resolution made inside the mutation callback. */
static void resolved_in_send(struct world *w, struct otx *o)
{
    CHECK_INT(o->in_send_rc, LDB_OK);
    bool none[NKEYS + 1] = { 0 };
    if (o->in_send == 1) {
        settle_synced(w, o, -1, none);
        unpend(w, w->npending - 1, LDB_OPTIMISTIC_CONFIRMED);
        w->n_confirm++;
    } else {
        memcpy(w->mid, w->vis, sizeof w->mid);
        w->has_mid = true;
        unpend(w, w->npending - 1, LDB_OPTIMISTIC_REJECTED);
        w->n_reject++;
        CHECK_STR(ldb_optimistic_error(o->h), "refused at once");
    }
    refold(w);
}

/* A write inside the transaction to a table without a key, or DDL: the
 * commit is refused and the transaction stays open. */
static void refused_commit(struct world *w)
{
    const char *sql = rng_chance(&w->r, 1, 2) ? "INSERT INTO notes VALUES(1)"
                                                : "CREATE TABLE scratch(x INTEGER)";
    CHECKF(run(w, sql) == LDB_OK, "step %d: %s: %s", w->step, sql, ldb_errmsg(w->db));
    ldb_optimistic *h = NULL;
    int rc = ldb_optimistic_commit(w->db, NULL, NULL, &h);
    CHECKF(rc == LDB_ERROR, "step %d: commit after %s: rc %d, wanted LDB_ERROR", w->step, sql, rc);
    w->n_refused++;
}

static void step_optimistic(struct world *w)
{
    struct tb *b = calloc(1, sizeof *b);
    CHECK(b);
    memcpy(b->orig, w->vis, sizeof b->orig);
    memcpy(b->cur, w->vis, sizeof b->cur);
    CHECK_INT(ldb_optimistic_begin(w->db), LDB_OK);
    if (rng_chance(&w->r, 1, 8)) { /* refused inside it, which stays open */
        CHECK_INT(ldb_optimistic_begin(w->db), LDB_MISUSE);
        CHECK_INT(run(w, "COMMIT"), LDB_MISUSE);
    }
    int n = (int)rng_range(&w->r, 1, 3);
    for (int i = 0; i < n; i++) {
        if (rng_chance(&w->r, 1, 8)) {
            undone_write(w, b);
            continue;
        }
        int rc = random_write(w, b, (int)rng_below(&w->r, NT));
        if (rc != LDB_OK && rng_chance(&w->r, 1, 2))
            goto rollback;
    }
    avoid_noop(w, b);
    check_tables(w, b->cur); /* reads inside see the writes */
    if (rng_chance(&w->r, 1, 12)) {
        refused_commit(w);
        goto rollback;
    }
    struct otx *o = tb_mutations(w, b);
    if (o->nmut && rng_chance(&w->r, 1, 10))
        o->in_send = confirmable_at_once(w, o) && rng_chance(&w->r, 1, 2) ? 1 : 2;
    w->all[w->nall++] = o;
    int rc = ldb_optimistic_commit(w->db, on_send, o, &o->h);
    CHECKF(rc == LDB_OK, "step %d: commit: rc %d: %s", w->step, rc, ldb_errmsg(w->db));
    o->id = ldb_optimistic_id(o->h);
    trace(w, "committed txn %llu: %d mutations%s", (unsigned long long)o->id, o->nmut,
          o->in_send == 1 ? ", confirmed in send" : o->in_send == 2 ? ", rejected in send" : "");
    CHECK(w->nall == 1 || o->id > w->all[w->nall - 2]->id);
    CHECK(o->sent_h == o->h);
    CHECK_INT(o->sends, 1);
    CHECK_INT(o->sent_count, o->nmut);
    check_mutations(w, o);
    o->state = o->nmut ? LDB_OPTIMISTIC_PENDING : LDB_OPTIMISTIC_CONFIRMED;
    w->n_commit++;
    w->n_empty += !o->nmut;
    if (o->nmut)
        w->pending[w->npending++] = o;
    refold(w);
    if (o->in_send)
        resolved_in_send(w, o);
    free(b);
    return;
rollback:
    w->n_rollback++;
    CHECK_INT(run(w, "ROLLBACK"), LDB_OK);
    free(b);
}

/* ---- sync writes and resolutions --------------------------------------------------------- */

static int pick_sourced(struct world *w)
{
    int tab = (int)rng_below(&w->r, NT);
    if (!w->sourced[tab])
        tab = 1 - tab;
    return w->sourced[tab] ? tab : -1;
}

/* A key, half the time one that a pending mutation of tab touches. */
static int pick_key(struct world *w, int tab)
{
    if (w->npending && rng_chance(&w->r, 1, 2)) {
        struct otx *o = w->pending[rng_below(&w->r, (uint64_t)w->npending)];
        for (int i = 0; i < o->nmut; i++)
            if (o->mut[i].tab == tab && rng_chance(&w->r, 1, 2))
                return o->mut[i].key;
    }
    return (int)rng_range(&w->r, 1, NKEYS);
}

static void step_sync(struct world *w)
{
    int tab = pick_sourced(w);
    if (tab < 0)
        return;
    ldb_sync *t = NULL;
    CHECK_INT(ldb_sync_begin(w->src[tab], NULL, &t), LDB_OK);
    int n = (int)rng_range(&w->r, 1, 3);
    for (int i = 0; i < n; i++) {
        int k = pick_key(w, tab);
        struct mrow row = rng_chance(&w->r, 2, 5) ? (struct mrow){ 0 } : rand_row(w, tab, k);
        fix_synced_handle(w->synced, tab, k, &row);
        sync_write(t, tab, k, &row);
        w->synced[tab][k] = row;
        w->reapplied[k] |= tab == 1;
    }
    sync_commit(w, t);
    w->n_sync++;
    refold(w);
}

/* A server's version of a row (no handle: it collides with nothing). */
static struct mrow server_row(struct world *w, int tab, int key)
{
    struct mrow row = rand_row(w, tab, key);
    if (tab == 1)
        row.v[3] = vnull();
    return row;
}

/* The oldest pending transaction confirmed by a sync transaction whose
 * rows are its own (nothing to publish) or the server's own versions. */
static void step_sync_confirm(struct world *w)
{
    int tab = pick_sourced(w);
    if (tab < 0 || !w->npending)
        return;
    struct otx *o = w->pending[0];
    bool equal = rng_chance(&w->r, 1, 2);
    bool carried[NKEYS + 1] = { 0 };
    ldb_sync *t = NULL;
    CHECK_INT(ldb_sync_begin(w->src[tab], NULL, &t), LDB_OK);
    trace(w, "sync confirm txn %llu (%s rows)", (unsigned long long)o->id, equal ? "equal" : "other");
    CHECK_INT(ldb_sync_confirm(t, o->h), LDB_OK);
    mtable server;
    memcpy(server, w->synced[tab], sizeof server);
    for (int i = 0; i < o->nmut; i++) {
        const struct mut *m = &o->mut[i];
        if (m->tab != tab || rng_chance(&w->r, 1, 4))
            continue;
        CHECK(mut_apply(m, &server[m->key]));
        if (!equal && rng_chance(&w->r, 1, 2))
            server[m->key] = rng_chance(&w->r, 1, 3) ? (struct mrow){ 0 } : server_row(w, tab, m->key);
        carried[m->key] = true;
    }
    if (!equal && rng_chance(&w->r, 1, 2)) {
        int k = pick_key(w, tab);
        if (!carried[k])
            server[k] = server_row(w, tab, k);
        carried[k] = true;
    }
    if (!sync_confirm_keeps_unique(w, o, tab, server, carried)) {
        trace(w, "  (abandoned: the synced rows would collide)");
        ldb_sync_abandon(t);
        return;
    }
    for (int k = 1; k <= NKEYS; k++) {
        if (!carried[k])
            continue;
        sync_write(t, tab, k, &server[k]);
        w->synced[tab][k] = server[k];
        w->reapplied[k] |= tab == 1;
    }
    settle_synced(w, o, tab, carried);
    sync_commit(w, t);
    unpend(w, 0, LDB_OPTIMISTIC_CONFIRMED);
    w->n_sync_confirm++;
    static mtable before[NT];
    memcpy(before, w->vis, sizeof before);
    refold(w);
    for (int tb = 0; equal && tb < NT; tb++) /* so nothing may be published */
        for (int k = 1; k <= NKEYS; k++)
            CHECK(row_eq(&before[tb][k], &w->vis[tb][k], tdefs[tb].ncols));
}

/* A pending transaction the readings agree on confirming: the oldest, or
 * one whose keys no earlier one touches and whose UPDATEs have synced
 * rows; -1: none. */
static int pick_confirmable(struct world *w)
{
    if (!w->npending)
        return -1;
    int at = (int)rng_below(&w->r, (uint64_t)w->npending);
    const struct otx *o = w->pending[at];
    bool agreed = true;
    for (int i = 0; i < o->nmut; i++) {
        const struct mut *m = &o->mut[i];
        if (m->kind == LDB_MUTATION_UPDATE && !w->synced[m->tab][m->key].on)
            agreed = false;
        for (int e = 0; e < at; e++)
            if (touches(w->pending[e], m->tab, m->key))
                agreed = false;
    }
    if (agreed && confirm_keeps_unique(w, o))
        return at;
    return confirm_keeps_unique(w, w->pending[0]) ? 0 : -1;
}

static void step_confirm(struct world *w)
{
    int at = pick_confirmable(w);
    if (at < 0)
        return;
    struct otx *o = w->pending[at];
    bool none[NKEYS + 1] = { 0 };
    trace(w, "confirm txn %llu", (unsigned long long)o->id);
    CHECK_INT(ldb_optimistic_confirm(o->h), LDB_OK);
    settle_synced(w, o, -1, none);
    unpend(w, at, LDB_OPTIMISTIC_CONFIRMED);
    w->n_confirm++;
    refold(w);
}

static void step_reject(struct world *w)
{
    if (!w->npending)
        return;
    /* biased to older ones: their later transactions may cascade */
    int at = (int)rng_below(&w->r, (uint64_t)w->npending);
    if (rng_chance(&w->r, 1, 2))
        at = (int)rng_below(&w->r, (uint64_t)at + 1);
    struct otx *o = w->pending[at];
    char msg[64];
    snprintf(msg, sizeof msg, "server said no to %llu", (unsigned long long)o->id);
    trace(w, "reject txn %llu", (unsigned long long)o->id);
    CHECK_INT(ldb_optimistic_reject(o->h, msg), LDB_OK);
    unpend(w, at, LDB_OPTIMISTIC_REJECTED);
    w->n_reject++;
    refold(w);
    CHECK_STR(ldb_optimistic_error(o->h), msg);
}

/* A sync transaction confirming o that is abandoned, or fails (an insert
 * of a synced key no pending write touches, with other values): o stays
 * pending and nothing is published. */
static void step_sync_confirm_fails(struct world *w)
{
    int tab = pick_sourced(w);
    if (tab < 0 || !w->npending)
        return;
    struct otx *o = w->pending[rng_below(&w->r, (uint64_t)w->npending)];
    ldb_sync *t = NULL;
    CHECK_INT(ldb_sync_begin(w->src[tab], NULL, &t), LDB_OK);
    CHECK_INT(ldb_sync_confirm(t, o->h), LDB_OK);
    int k = 1;
    while (k <= NKEYS && (!w->synced[tab][k].on || w->vis[tab][k].on != true ||
                          !row_eq(&w->synced[tab][k], &w->vis[tab][k], tdefs[tab].ncols) ||
                          table_key_pending(w, tab, k)))
        k++;
    if (k > NKEYS || rng_chance(&w->r, 1, 3)) {
        ldb_sync_abandon(t);
        return;
    }
    struct mrow row = w->synced[tab][k];
    row.v[tab == 0 ? 4 : 2] = vint(1000 + w->counter++);
    sync_put_row(t, tab, &row);
    CHECK_INT(ldb_sync_insert(t), LDB_OK);
    ldb_receipt *rc = NULL;
    int code = ldb_sync_commit(t, &rc);
    CHECKF(code != LDB_OK, "step %d: a sync insert over key %d of %s with other values "
           "succeeded", w->step, k, tdefs[tab].name);
    CHECK_INT(ldb_receipt_state(rc), LDB_RECEIPT_FAILED);
    ldb_receipt_free(rc);
}

struct resolver {
    ldb_optimistic *h;
    bool reject;
    int rc;
};

static void *resolve_thread(void *arg)
{
    struct resolver *r = arg;
    r->rc = r->reject ? ldb_optimistic_reject(r->h, "from a thread") : ldb_optimistic_confirm(r->h);
    return NULL;
}

/* A resolution made on another thread waits for the next dispatch point
 * (ldb_source_poll here). */
static void step_thread_resolve(struct world *w)
{
    int at = pick_confirmable(w);
    if (at < 0)
        return;
    struct otx *o = w->pending[at];
    struct resolver r = { o->h, rng_chance(&w->r, 1, 2), -1 };
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, resolve_thread, &r), 0);
    CHECK_INT(pthread_join(th, NULL), 0);
    CHECK_INT(r.rc, LDB_OK);
    CHECK_INT(ldb_optimistic_state(o->h), LDB_OPTIMISTIC_PENDING);
    for (int i = 0; i < NQ; i++)
        CHECK_INT(w->q[i].batches, 0);
    CHECK_INT(ldb_source_poll(w->db), LDB_OK);
    bool none[NKEYS + 1] = { 0 };
    if (!r.reject)
        settle_synced(w, o, -1, none);
    unpend(w, at, r.reject ? LDB_OPTIMISTIC_REJECTED : LDB_OPTIMISTIC_CONFIRMED);
    refold(w);
}

/* Resolving a resolved handle again changes nothing. */
static void step_resolve_again(struct world *w)
{
    for (int i = 0; i < w->nall; i++) {
        struct otx *o = w->all[(i + w->step) % w->nall];
        if (o->state == LDB_OPTIMISTIC_PENDING)
            continue;
        int rc = rng_chance(&w->r, 1, 2) ? ldb_optimistic_confirm(o->h)
                                          : ldb_optimistic_reject(o->h, "late");
        CHECK_INT(rc, LDB_OK);
        return;
    }
}

/* A plain SQL write: refused on a sourced table or one with pending
 * writes; else it changes the synced rows. */
static void step_plain_write(struct world *w)
{
    int tab = (int)rng_below(&w->r, NT);
    struct tb *b = calloc(1, sizeof *b);
    CHECK(b);
    memcpy(b->cur, w->vis, sizeof b->cur);
    bool refused = w->sourced[tab] || table_pending(w, tab);
    int k = (int)rng_range(&w->r, 1, NKEYS);
    for (int i = 0; i < NKEYS && !w->vis[tab][k].on; i++)
        k = k % NKEYS + 1;
    char sql[96];
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE id = %d", tdefs[tab].name, k);
    if (refused) {
        int rc = run(w, sql);
        CHECKF(rc == LDB_ERROR, "step %d: %s (sourced %d, pending %d): rc %d, wanted LDB_ERROR",
               w->step, sql, w->sourced[tab], table_pending(w, tab), rc);
    } else if (random_write(w, b, tab) == LDB_OK) {
        w->n_plain++;
        memcpy(w->synced[tab], b->cur[tab], sizeof w->synced[tab]);
        refold(w);
    }
    free(b);
}

/* ---- a durable world reopens -------------------------------------------------------------- */

static void take_back(void *ctx, ldb_optimistic *o)
{
    struct world *w = ctx;
    for (int i = 0; i < w->npending; i++) {
        struct otx *t = w->pending[i];
        if (t->id != ldb_optimistic_id(o))
            continue;
        CHECKF(t->sent_h == NULL, "step %d: txn %llu handed back twice", w->step,
               (unsigned long long)t->id);
        ldb_optimistic_ref(o);
        t->sent_h = o; /* marks it taken back; its handle below */
        t->sent_count = i;
        return;
    }
    CHECKF(false, "step %d: txn %llu came back, and the model has it resolved", w->step,
           (unsigned long long)ldb_optimistic_id(o));
}

/* Every pending transaction came back once, in commit order, with its
 * mutations; its new handle replaces the old one (orphaned by the close). */
static void take_back_all(struct world *w)
{
    for (int i = 0; i < w->npending; i++)
        w->pending[i]->sent_h = NULL;
    CHECK_INT(ldb_optimistic_pending(w->db, take_back, w), LDB_OK);
    for (int i = 0; i < w->npending; i++) {
        struct otx *t = w->pending[i];
        CHECKF(t->sent_h != NULL, "step %d: pending txn %llu did not come back", w->step,
               (unsigned long long)t->id);
        CHECKF(t->sent_count == i, "step %d: txn %llu came back out of order", w->step,
               (unsigned long long)t->id);
        ldb_optimistic_free(t->h);
        t->h = t->sent_h;
        t->sent_h = NULL; /* no stale pointer can match a later handle */
        CHECK_INT(ldb_optimistic_state(t->h), LDB_OPTIMISTIC_PENDING);
        check_mutations(w, t);
    }
}

static void step_reopen(struct world *w)
{
    bool crash = rng_chance(&w->r, 1, 2);
    trace(w, "reopen (%s)", crash ? "crash" : "close");
    for (int i = 0; i < NQ; i++)
        lq_free(&w->q[i]);
    if (crash) { /* the files as they are now, under another name */
        char next[300];
        snprintf(next, sizeof next, "%s/%s", w->dir, w->crashes % 2 ? "a.ldb" : "b.ldb");
        files_copy(w->path, next);
        ldb_close(w->db);
        files_copy(w->path, NULL);
        snprintf(w->path, sizeof w->path, "%s", next);
        w->crashes++;
    } else {
        ldb_close(w->db);
    }
    w->reopens++;
    w->rejected_before = 0;
    for (int i = 0; i < w->nall; i++)
        w->rejected_before += w->all[i]->state == LDB_OPTIMISTIC_REJECTED;
    open_db(w);
    for (int tab = 0; tab < NT; tab++)
        if (w->sourced[tab])
            attach(w, tab);
    CHECK_INT(ldb_set_resolved_callback(w->db, on_resolved, w), LDB_OK);
    CHECK_INT(ldb_source_poll(w->db), LDB_OK);
    take_back_all(w);
    for (int i = 0; i < NQ; i++)
        open_query(w, i);
}

/* ---- the history ------------------------------------------------------------------------ */

static void one_step(struct world *w)
{
    if (w->dir && rng_chance(&w->r, 1, 20)) {
        step_reopen(w);
        return;
    }
    int roll = (int)rng_below(&w->r, 100);
    if (w->npending < 3 && roll >= 58 && roll < 90 && rng_chance(&w->r, 1, 2))
        roll = 0; /* let the pending layer grow deeper before resolving it */
    if (roll < 36)
        step_optimistic(w);
    else if (roll < 58)
        step_sync(w);
    else if (roll < 68)
        step_sync_confirm(w);
    else if (roll < 76)
        step_confirm(w);
    else if (roll < 90)
        step_reject(w);
    else if (roll < 91)
        step_resolve_again(w);
    else if (roll < 92)
        step_sync_confirm_fails(w);
    else if (roll < 93)
        step_thread_resolve(w);
    else if (roll < 97)
        step_plain_write(w);
    else
        reopen_query(w);
}

static void history(uint64_t seed, int modes, int steps, bool handles, bool durable)
{
    struct world *w = calloc(1, sizeof *w);
    CHECK(w);
    world_open(w, seed, modes, handles, durable);
    w->trace = getenv("LDB_TRACE") != NULL;
    static mtable before[NT];
    for (w->step = 1; w->step <= steps; w->step++) {
        memcpy(before, w->vis, sizeof before);
        int resolved_before = 0;
        for (int i = 0; i < w->nall; i++)
            resolved_before += w->all[i]->state != LDB_OPTIMISTIC_PENDING && w->all[i]->nmut;
        for (int i = 0; i < NQ; i++)
            lq_clear_changes(&w->q[i]);
        w->resolved_now = 0;
        w->has_mid = false;
        memset(w->reapplied, 0, sizeof w->reapplied);
        one_step(w);
        if (w->ambiguous) {
            printf("#      stopped at step %d: a collision of two re-applied rows\n", w->step);
            break;
        }
        check_all(w, before, resolved_before);
        if (w->nall >= MAXTX - 1)
            break;
    }
    printf("#      %d commits (%d empty), %d rollbacks, %d refused commits, %d sync writes, "
           "%d sync confirms, %d confirms, %d rejects, %d rejected on re-application, %d plain writes\n",
           w->n_commit, w->n_empty, w->n_rollback, w->n_refused, w->n_sync, w->n_sync_confirm,
           w->n_confirm, w->n_reject, w->n_cascade, w->n_plain);
    if (w->dir)
        printf("#      %d reopens (%d from a crash's files)\n", w->reopens, w->crashes);
    world_close(w);
    free(w);
}

static void histories(bool handles, bool durable)
{
    uint64_t seed = test_seed();
    int steps = 600 * test_scale() * (getenv("LDB_LONG") ? 20 : 1);
    /* modes: bit t set = table t sourced (issues only, users only, both) */
    static const int modes[] = { 1, 2, 3 };
    for (int i = 0; i < 3; i++) {
        uint64_t hs = seed * 3 + (uint64_t)i;
        printf("#    history %d: issues %s, users %s (history seed %llu)\n", i,
               modes[i] & 1 ? "sourced" : "local", modes[i] & 2 ? "sourced" : "local",
               (unsigned long long)hs);
        fflush(stdout);
        history(hs, modes[i], steps, handles, durable);
    }
}

/* Every handle NULL: no UNIQUE collision. */
static void optimistic_oracle(void) { histories(false, false); }

/* Handles drawn from a few values: re-applied rows collide. */
static void optimistic_unique(void) { histories(true, false); }

/* On a durable database that closes and reopens (or crashes) meanwhile,
 * without collisions (long histories) and with them. */
static void optimistic_durable(void)
{
    histories(false, true);
    histories(true, true);
}

TEST_MAIN(T(optimistic_oracle), T(optimistic_unique), T(optimistic_durable))
