/*
 * test_live_sqlite.c - live queries against SQLite: an oracle that owes
 * nothing to livedb's own executor.
 *
 * Random live queries (tests/oracle_gen.h: joins of every kind,
 * aggregates with string_agg and min/max, DISTINCT, compound queries,
 * ORDER BY ... LIMIT/OFFSET windows led by indexed columns, several
 * subqueries, derived tables and CTEs, NOCASE, NULL/NaN/-0.0, bound
 * parameters through ldb_live_open_stmt) stay open while random histories
 * run on livedb and on SQLite alike: writes, transactions, savepoints,
 * rollbacks, failing statements, index DDL (livedb only), window moves
 * (ldb_live_set_window) and queries closed and opened mid-history.
 *
 * Each query keeps a replica built ONLY from its change batches, applied
 * by livedb.h's replay rule (remove every before row by descending
 * before_pos, insert every after row by ascending after_pos; by key when
 * unordered). After every commit the replica must equal SQLite's answer
 * to the same query (with the current window) evaluated from scratch, in
 * order when the query is ordered, and ldb_live_read must equal the
 * replica. The batches must have the promised shape:
 * - none for a statement inside a transaction, a rollback, a failed
 *   statement or a commit that leaves the result unchanged (a batch whose
 *   replay leaves the replica exactly as it was is a no-op batch);
 * - at most one per commit; never empty;
 * - kinds agree with before/after rows and counts (0 for the missing
 *   side, at least 1 otherwise); keys unique in the batch; a delete or
 *   update names a key the replica holds, byte for byte as it was
 *   inserted, with its row, count and position; an insert a key it does
 *   not hold;
 * - positions only for ordered queries (-1 otherwise, and -1 for the
 *   missing side); an update changes its row, its count or its place
 *   among the rows the batch does not name.
 *
 * LDB_SEED replays a run (each history prints its own seed too);
 * LDB_TEST_SCALE=k runs k times as many histories; LDB_ORACLE_LOG=file
 * saves the failing history as a script. Known livedb bugs run past
 * (tests/oracle_known.h): every KNOWN_* switch there.
 */
#include "oracle_gen.h"
#include "oracle_known.h"

#include "base/mem.h"

#include <stdlib.h>

#define OPEN_QUERIES 12  /* live queries open at once */
#define STEPS 80         /* history steps */
/* per unit of LDB_TEST_SCALE: about 10 s of CPU at -O2; the sanitizer
 * build is 12 times slower, so it runs a quarter */
#define HISTORIES (ORACLE_SANITIZED ? 40 : 150)

/* A result row as the replica holds it. */
typedef struct entry {
    char *key;   /* exact text of the key (type letters, every byte) */
    char *exact; /* exact text of the row: identity (5 vs 5.0, -0.0) */
    char *norm;  /* the row in sqlite_cmp.h's form, normalized */
    int64_t count;
} entry;

typedef struct lq {
    int id;
    oquery q;
    ldb_live *live;
    int64_t offset, limit;    /* the window now */
    entry *e;
    size_t n, cap;
    int batches;              /* batches since the last check */
    cmp_result last;          /* SQLite's rows at the last check */
    char *last_exact;         /* the replica then */
    oworld *w;
} lq;

typedef struct totals {
    long histories, opened, commits, batches, changes, windows, rows;
    long changed; /* checks where SQLite's result had changed */
} totals;

typedef struct oracle {
    oworld *w;
    lq q[OPEN_QUERIES];
    totals *t;
} oracle;

/* ---- exact text ----------------------------------------------------------------- */

static void put_exact(strbuf *sb, const ldb_row *row)
{
    for (int i = 0; i < ldb_row_columns(row); i++) {
        char buf[128];
        size_t len = ldb_row_format(row, i, buf, sizeof buf);
        sb_printf(sb, "%s%c:", i ? "|" : "", "NBIRTXAC"[ldb_row_type(row, i)]);
        if (len < sizeof buf) {
            sb_puts(sb, buf);
        } else {
            char *big = malloc(len + 1);
            CHECK(big);
            ldb_row_format(row, i, big, len + 1);
            sb_puts(sb, big);
            free(big);
        }
    }
}

/* sb's text, taken (mem_alloc'd; "" when nothing was appended). */
static char *take_text(strbuf *sb)
{
    if (!sb->len) {
        sb_putc(sb, 'x'); /* gets the builder a buffer */
        sb_truncate(sb, 0);
    }
    CHECK(!sb_error(sb));
    return sb_take(sb, NULL);
}

static char *exact_text(const ldb_row *row)
{
    strbuf sb = STRBUF_INIT;
    put_exact(&sb, row);
    return take_text(&sb);
}

static char *norm_text(const lq *l, const ldb_row *row)
{
    strbuf sb = STRBUF_INIT;
    cmp_put_livedb_row(&sb, row);
    char *t = take_text(&sb);
    oq_normalize(&l->q, &t);
    return t;
}

/* ---- the replica ------------------------------------------------------------------- */

static void entry_free(entry *e)
{
    mem_free(e->key);
    mem_free(e->exact);
    mem_free(e->norm);
}

static void replica_clear(lq *l)
{
    for (size_t i = 0; i < l->n; i++)
        entry_free(&l->e[i]);
    mem_free(l->e);
    l->e = NULL;
    l->n = l->cap = 0;
}

/* The entry whose key text is key (livedb.h: a row keeps the key bytes
 * it was inserted with), -1 when none. */
static int64_t find_key(const lq *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->e[i].key, key) == 0)
            return (int64_t)i;
    return -1;
}

/* The position of entry i: the copies before it. */
static int64_t position_of(const lq *l, size_t i)
{
    int64_t pos = 0;
    for (size_t k = 0; k < i; k++)
        pos += l->e[k].count;
    return pos;
}

/* The entry index where position pos starts, or -1 if pos falls inside
 * an entry's copies or past the end. */
static int64_t index_at(const lq *l, int64_t pos)
{
    int64_t at = 0;
    for (size_t i = 0; i <= l->n; i++) {
        if (at == pos)
            return (int64_t)i;
        if (i < l->n)
            at += l->e[i].count;
    }
    return -1;
}

static void replica_insert(lq *l, size_t at, entry e)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->e = mem_realloc(l->e, l->cap * sizeof *l->e);
        CHECK(l->e);
    }
    memmove(&l->e[at + 1], &l->e[at], (l->n - at) * sizeof *l->e);
    l->e[at] = e;
    l->n++;
}

static void replica_remove(lq *l, size_t at)
{
    entry_free(&l->e[at]);
    memmove(&l->e[at], &l->e[at + 1], (l->n - at - 1) * sizeof *l->e);
    l->n--;
}

/* The replica as exact text: in order when ordered, sorted lines else. */
static char *replica_exact(const lq *l)
{
    char **lines = malloc((l->n + 1) * sizeof *lines);
    CHECK(lines);
    for (size_t i = 0; i < l->n; i++) {
        strbuf sb = STRBUF_INIT;
        sb_printf(&sb, "%s => %s x%lld", l->e[i].key, l->e[i].exact, (long long)l->e[i].count);
        lines[i] = sb_take(&sb, NULL);
        CHECK(lines[i]);
    }
    if (!l->q.ordered)
        qsort(lines, l->n, sizeof *lines, cmp_rows);
    strbuf all = STRBUF_INIT;
    for (size_t i = 0; i < l->n; i++) {
        sb_printf(&all, "%s\n", lines[i]);
        mem_free(lines[i]);
    }
    free(lines);
    return take_text(&all);
}

/* ---- applying a batch --------------------------------------------------------------- */

static void fail_batch(const lq *l, const char *what, size_t i, const ldb_change *c)
{
    char *key = exact_text(c->key);
    oq_report(&l->q, l->offset, l->limit);
    ow_report_history(l->w);
    CHECKF(0, "history seed %llu, query %d: change %zu (kind %d, key %s, counts %lld/%lld, "
           "positions %lld/%lld): %s",
           (unsigned long long)l->w->seed, l->id, i, c->kind, key, (long long)c->before_count,
           (long long)c->after_count, (long long)c->before_pos, (long long)c->after_pos, what);
}

/* Copies of the batch's other rows before c's position, on the before
 * side (or the after side). */
static int64_t others_before(const ldb_change *c, const ldb_change *all, size_t n, bool after)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const ldb_change *d = &all[i];
        if (d == c)
            continue;
        if (after && d->after && d->after_pos < c->after_pos)
            k += d->after_count;
        if (!after && d->before && d->before_pos < c->before_pos)
            k += d->before_count;
    }
    return k;
}

/* An update whose row and count stay the same, and whose place among the
 * rows the batch does not name stays too (livedb.h: a row is reported
 * when "its place among the rows that stay changed"): the same position
 * may be a new place when rows around it moved. */
static bool noop_update(const ldb_change *c, const ldb_change *all, size_t n)
{
    if (c->kind != LDB_CHANGE_UPDATE || !c->before || !c->after)
        return false;
    char *b = exact_text(c->before), *a = exact_text(c->after);
    bool same = strcmp(a, b) == 0 && c->before_count == c->after_count &&
                c->before_pos - others_before(c, all, n, false) ==
                    c->after_pos - others_before(c, all, n, true);
    mem_free(a);
    mem_free(b);
    return same;
}

/* The shape of change i of the batch all[0..n), before it is applied. */
static void check_change(const lq *l, size_t i, const ldb_change *all, size_t n)
{
    const ldb_change *c = &all[i];
    bool has_before = c->kind != LDB_CHANGE_INSERT, has_after = c->kind != LDB_CHANGE_DELETE;
    if (c->kind < LDB_CHANGE_INSERT || c->kind > LDB_CHANGE_DELETE)
        fail_batch(l, "unknown kind", i, c);
    if (!c->key || (c->before != NULL) != has_before || (c->after != NULL) != has_after)
        fail_batch(l, "rows do not match the kind", i, c);
    if ((has_before ? c->before_count < 1 : c->before_count != 0) ||
        (has_after ? c->after_count < 1 : c->after_count != 0))
        fail_batch(l, "counts do not match the kind", i, c);
    if (!l->q.ordered && (c->before_pos != -1 || c->after_pos != -1))
        fail_batch(l, "a position in a batch of an unordered query", i, c);
    if (l->q.ordered && ((has_before ? c->before_pos < 0 : c->before_pos != -1) ||
                         (has_after ? c->after_pos < 0 : c->after_pos != -1)))
        fail_batch(l, "positions do not match the kind", i, c);
    if (noop_update(c, all, n))
        fail_batch(l, "an update that changes nothing", i, c);
}

typedef struct pending {
    size_t i;       /* index in the batch */
    int64_t pos;
} pending;

static int by_pos_desc(const void *a, const void *b)
{
    int64_t x = ((const pending *)a)->pos, y = ((const pending *)b)->pos;
    return (x < y) - (x > y);
}

static int by_pos_asc(const void *a, const void *b) { return -by_pos_desc(a, b); }

static void apply_batch(lq *l, const ldb_change *c, size_t n)
{
    char **keys = malloc(n * sizeof *keys);
    pending *rm = malloc(n * sizeof *rm), *add = malloc(n * sizeof *add);
    CHECK(keys && rm && add);
    size_t nrm = 0, nadd = 0;
    for (size_t i = 0; i < n; i++) {
        check_change(l, i, c, n);
        keys[i] = exact_text(c[i].key);
        if (c[i].before)
            rm[nrm++] = (pending){ i, c[i].before_pos };
        if (c[i].after)
            add[nadd++] = (pending){ i, c[i].after_pos };
    }
    char **sorted = malloc(n * sizeof *sorted);
    CHECK(sorted);
    memcpy(sorted, keys, n * sizeof *keys);
    qsort(sorted, n, sizeof *sorted, cmp_rows);
    for (size_t i = 1; i < n; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            fail_batch(l, "two changes of one key in a batch", i, &c[i]);
    free(sorted);
    qsort(rm, nrm, sizeof *rm, by_pos_desc);
    for (size_t k = 0; k < nrm; k++) {
        const ldb_change *ch = &c[rm[k].i];
        int64_t at = find_key(l, keys[rm[k].i]);
        if (at < 0)
            fail_batch(l, "a delete or update of a key the replica does not hold", rm[k].i, ch);
        char *exact = exact_text(ch->before);
        bool same = strcmp(exact, l->e[at].exact) == 0;
        mem_free(exact);
        if (!same)
            fail_batch(l, "the before row is not the replica's row", rm[k].i, ch);
        if (ch->before_count != l->e[at].count)
            fail_batch(l, "before_count is not the replica's count", rm[k].i, ch);
        if (l->q.ordered && position_of(l, (size_t)at) != ch->before_pos)
            fail_batch(l, "before_pos is not the row's position", rm[k].i, ch);
        replica_remove(l, (size_t)at);
    }
    qsort(add, nadd, sizeof *add, by_pos_asc);
    for (size_t k = 0; k < nadd; k++) {
        const ldb_change *ch = &c[add[k].i];
        if (find_key(l, keys[add[k].i]) >= 0)
            fail_batch(l, "an insert of a key the replica holds", add[k].i, ch);
        entry e = { keys[add[k].i], exact_text(ch->after), norm_text(l, ch->after),
                    ch->after_count };
        keys[add[k].i] = NULL;
        int64_t at = l->q.ordered ? index_at(l, ch->after_pos) : (int64_t)l->n;
        if (at < 0)
            fail_batch(l, "after_pos is not a place between rows", add[k].i, ch);
        replica_insert(l, (size_t)at, e);
    }
    for (size_t i = 0; i < n; i++)
        mem_free(keys[i]);
    free(keys);
    free(rm);
    free(add);
}

/* LDB_ORACLE_TRACE=1: every batch, for diagnosing a failure. */
static void trace_batch(const lq *l, const ldb_change *c, size_t n)
{
    static const char *const kinds[] = { "?", "insert", "update", "delete" };
    for (size_t i = 0; i < n; i++) {
        char *key = exact_text(c[i].key);
        char *b = c[i].before ? exact_text(c[i].before) : NULL;
        char *a = c[i].after ? exact_text(c[i].after) : NULL;
        printf("#    query %d: %s key %s: %s @%lld x%lld -> %s @%lld x%lld\n", l->id,
               kinds[c[i].kind & 3], key, b ? b : "-", (long long)c[i].before_pos,
               (long long)c[i].before_count, a ? a : "-", (long long)c[i].after_pos,
               (long long)c[i].after_count);
        mem_free(key);
        mem_free(b);
        mem_free(a);
    }
}

static void on_batch(void *ctx, ldb_live *q, const ldb_change *changes, size_t n)
{
    lq *l = ctx;
    (void)q;
    if (n == 0) {
        oq_report(&l->q, l->offset, l->limit);
        CHECKF(0, "history seed %llu, query %d: an empty batch", (unsigned long long)l->w->seed,
               l->id);
    }
    l->batches++;
    if (getenv("LDB_ORACLE_TRACE"))
        trace_batch(l, changes, n);
    apply_batch(l, changes, n);
}

/* ---- checks --------------------------------------------------------------------------- */

static void print_rows(const char *who, char **rows, size_t n)
{
    printf("#   %s: %zu rows\n", who, n);
    for (size_t i = 0; i < n && i < 25; i++)
        printf("#     %s\n", rows[i]);
}

/* Adds text as a row of r. */
static void add_text(cmp_result *r, const char *text)
{
    strbuf sb = STRBUF_INIT;
    sb_puts(&sb, text);
    if (!sb.len)
        sb_putc(&sb, '\0'); /* cmp_result_add takes a buffer */
    cmp_result_add(r, &sb);
}

static int collect_exact(void *ctx, const ldb_row *row)
{
    char *t = exact_text(row);
    add_text(ctx, t);
    mem_free(t);
    return 0;
}

/* ldb_live_read and ldb_live_count agree with the replica. */
static void check_read(lq *l)
{
    cmp_result read;
    memset(&read, 0, sizeof read);
    CHECK_INT(ldb_live_read(l->live, collect_exact, &read), LDB_OK);
    cmp_result rep;
    memset(&rep, 0, sizeof rep);
    for (size_t i = 0; i < l->n; i++)
        for (int64_t k = 0; k < l->e[i].count; k++)
            add_text(&rep, l->e[i].exact);
    CHECK_INT(ldb_live_count(l->live), (int64_t)rep.n);
    if (!cmp_same_rows(&rep, &read, l->q.ordered)) {
        oq_report(&l->q, l->offset, l->limit);
        print_rows("replica", rep.rows, rep.n);
        print_rows("ldb_live_read", read.rows, read.n);
        CHECKF(0, "history seed %llu, query %d: ldb_live_read differs from the batches",
               (unsigned long long)l->w->seed, l->id);
    }
    cmp_result_free(&read);
    cmp_result_free(&rep);
}

/* After a commit (or a window move, or an open): the replica equals
 * SQLite's rows; at most one batch came, and only if something changed. */
static void check_commit(lq *l, totals *t)
{
    const char *msg = NULL;
    int err = ldb_live_error(l->live, &msg);
    if (err != LDB_OK) {
        oq_report(&l->q, l->offset, l->limit);
        ow_report_history(l->w);
        CHECKF(0, "history seed %llu, query %d: the live query failed: %d %s",
               (unsigned long long)l->w->seed, l->id, err, msg ? msg : "");
    }
    int batches = l->batches;
    l->batches = 0;
    t->commits++;
    t->batches += batches;
    cmp_result want;
    ow_sqlite_rows(l->w, &l->q, l->offset, l->limit, &want);
    cmp_result got;
    memset(&got, 0, sizeof got);
    for (size_t i = 0; i < l->n; i++)
        for (int64_t k = 0; k < l->e[i].count; k++)
            add_text(&got, l->e[i].norm);
    t->rows += (long)want.n;
    if (batches > 1 || !cmp_same_rows(&want, &got, l->q.ordered)) {
        ow_report_history(l->w);
        oq_report(&l->q, l->offset, l->limit);
        print_rows("SQLite", want.rows, want.n);
        print_rows("replica", got.rows, got.n);
        CHECKF(0, "history seed %llu, query %d: %s", (unsigned long long)l->w->seed, l->id,
               batches > 1 ? "several batches for one commit"
                           : "the replica differs from SQLite");
    }
    bool changed = !cmp_same_rows(&l->last, &want, l->q.ordered);
    t->changed += changed;
    char *exact = replica_exact(l);
    if (batches && !changed && l->last_exact && strcmp(exact, l->last_exact) == 0) {
        ow_report_history(l->w);
        oq_report(&l->q, l->offset, l->limit);
        CHECKF(0, "history seed %llu, query %d: a batch for a commit that changed nothing",
               (unsigned long long)l->w->seed, l->id);
    }
    check_read(l);
    cmp_result_free(&got);
    cmp_result_free(&l->last);
    l->last = want;
    mem_free(l->last_exact);
    l->last_exact = exact;
}

static void check_quiet(lq *l, const char *when)
{
    if (l->batches) {
        ow_report_history(l->w);
        oq_report(&l->q, l->offset, l->limit);
        CHECKF(0, "history seed %llu, query %d: a batch for %s", (unsigned long long)l->w->seed,
               l->id, when);
    }
}

/* ---- opening and closing ----------------------------------------------------------- */

static void close_query(lq *l)
{
    ldb_live_close(l->live);
    l->live = NULL;
    replica_clear(l);
    cmp_result_free(&l->last);
    mem_free(l->last_exact);
    l->last_exact = NULL;
    oq_free(&l->q);
}

static void open_query(oracle *o, lq *l, int id)
{
    ogen_opts opts = { .mv = false,
                       .big = o->w->big };
    memset(l, 0, sizeof *l);
    l->id = id;
    l->w = o->w;
    oq_generate(&o->w->r, &opts, &l->q);
    l->offset = l->q.offset;
    l->limit = l->q.limit;
    char *sql = oq_text(&l->q, false, l->offset, l->limit);
    if (getenv("LDB_VERBOSE")) {
        printf("#    query %d: %s\n", id, sql);
        fflush(stdout);
    }
    int rc;
    if (l->q.nparams || rng_chance(&o->w->r, 1, 3)) {
        ldb_stmt *st;
        rc = ldb_prepare(o->w->ld, sql, -1, &st, NULL);
        if (rc == LDB_OK) {
            oq_bind_livedb(&l->q, st);
            rc = ldb_live_open_stmt(st, on_batch, l, &l->live);
            ldb_finalize(st);
        }
    } else {
        rc = ldb_live_open(o->w->ld, sql, on_batch, l, &l->live);
    }
    if (rc != LDB_OK) {
        oq_report(&l->q, l->offset, l->limit);
        CHECKF(0, "history seed %llu: ldb_live_open: %d %s", (unsigned long long)o->w->seed, rc,
               ldb_errmsg(o->w->ld));
    }
    mem_free(sql);
    ow_log_query(o->w, id, &l->q, l->offset, l->limit);
    o->t->opened++;
    check_commit(l, o->t); /* the first batch: the initial result, all inserts */
}

/* ---- the history's hooks ---------------------------------------------------------------- */

/* ldb_live_set_window must refuse (LDB_MISUSE) and publish nothing. */
static void refused_window(lq *l, const char *why)
{
    int rc = ldb_live_set_window(l->live, 1, 2);
    if (rc != LDB_MISUSE) {
        ow_report_history(l->w);
        oq_report(&l->q, l->offset, l->limit);
        CHECKF(0, "history seed %llu, query %d: ldb_live_set_window %s: %d, wanted LDB_MISUSE",
               (unsigned long long)l->w->seed, l->id, why, rc);
    }
    check_quiet(l, "a refused window move");
}

static void after(void *ctx, oworld *w, enum ow_point p)
{
    oracle *o = ctx;
    for (int i = 0; i < OPEN_QUERIES; i++) {
        lq *l = &o->q[i];
        if (p == OW_COMMITTED) {
            check_commit(l, o->t);
            continue;
        }
        check_quiet(l, p == OW_IN_TXN ? "a statement inside a transaction"
                                      : "a rollback or a failed statement");
        if (p == OW_IN_TXN && rng_chance(&w->r, 1, 40))
            refused_window(l, "inside a transaction");
    }
}

/* Between transactions: move a window, or replace a query. */
static void between(void *ctx, oworld *w)
{
    oracle *o = ctx;
    lq *l = &o->q[rng_below(&w->r, OPEN_QUERIES)];
    if (rng_chance(&w->r, 1, 4)) {
        sb_printf(&w->log, "-- .close %d\n", l->id);
        int id = l->id + OPEN_QUERIES;
        close_query(l);
        open_query(o, l, id);
        return;
    }
    if (!l->q.window) {
        refused_window(l, "a query without ORDER BY ... LIMIT");
        return;
    }
    l->offset = rng_chance(&w->r, 1, 3) ? 0 : (int64_t)rng_below(&w->r, 6);
    l->limit = rng_chance(&w->r, 1, 8) ? -1 : (int64_t)rng_below(&w->r, 9);
    sb_printf(&w->log, "-- .window %d %lld %lld\n", l->id,
              (long long)l->offset, (long long)l->limit);
    CHECK_INT(ldb_live_set_window(l->live, l->offset, l->limit), LDB_OK);
    o->t->windows++;
    check_commit(l, o->t);
}

static void history(uint64_t seed, totals *t)
{
    oworld w;
    ow_open(&w, seed);
    oracle o = { &w, { { 0 } }, t };
    for (int i = 0; i < OPEN_QUERIES; i++)
        open_query(&o, &o.q[i], i);
    ow_hooks h = { &o, after, between };
    for (int s = 0; s < STEPS; s++)
        ow_step(&w, &h);
    for (int i = 0; i < OPEN_QUERIES; i++)
        close_query(&o.q[i]);
    t->histories++;
    ow_close(&w);
}

static void live_queries_match_sqlite(void)
{
    uint64_t seed = test_seed();
    totals t;
    memset(&t, 0, sizeof t);
    int n = HISTORIES * test_scale();
    for (int i = 0; i < n; i++)
        history(seed + (uint64_t)i, &t);
    printf("#    %ld histories, %ld queries opened, %ld commits checked (%ld rows, %ld changed "
           "results), %ld batches, %ld window moves\n",
           t.histories, t.opened, t.commits, t.rows, t.changed, t.batches, t.windows);
    CHECK(t.batches > t.histories * OPEN_QUERIES); /* the histories moved the queries */
}

TEST_MAIN(T(live_queries_match_sqlite))
