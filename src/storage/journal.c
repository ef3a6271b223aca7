/*
 * journal.c - the files of a durable store (journal.h): the lock, the log
 * appended at every commit, checkpoints, and opening with recovery.
 *
 * Invariants, between calls:
 * - the log file holds a valid header of generation gen, then exactly
 *   the records of the transactions committed since the snapshot of
 *   generation gen, ending at wal_end, whose last checksum is chain;
 * - the snapshot file (if any) is generation gen, complete and synced
 *   (unless synchronous = OFF);
 * - wal_stale: a checkpoint replaced the snapshot but could not reset the
 *   log, which still names the old generation (and so is ignored by
 *   recovery): no record may be appended until the reset succeeds;
 * - broken: a failed commit's record could not be taken back out of the
 *   log; no commit is accepted any more (the record's fate is decided by
 *   the next open: whole, or torn and dropped).
 */
#include "storage/journal.h"

#include "base/mem.h"
#include "base/hsort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECKPOINT_CHUNK (1u << 20)
#define DEFAULT_THRESHOLD (16u << 20) /* replaying that much takes about a second */

struct journal {
    char *path, *wal_path, *tmp_path;
    struct file wal;
    uint64_t gen;
    uint64_t wal_end;
    uint32_t chain;
    int sync;            /* 0 OFF, 1 NORMAL, 2 FULL */
    uint64_t threshold;  /* log bytes that trigger a checkpoint; 0: never */
    bool wal_stale;
    bool broken;
    bool keep_files;     /* no checkpoint at close */
    uint64_t retry_at;   /* after a failed automatic checkpoint: log size to retry at */
    char broken_why[200];
    strbuf rec;          /* the record being built, reused */
};

static int io_error(struct store *s, int err, const char *what, const char *path)
{
    return store_error(s, file_code(err), "cannot %s %s: %s", what, path, strerror(err));
}

/* ---- headers ------------------------------------------------------------------------------ */

static void make_header(unsigned char *h, char kind, uint64_t gen)
{
    memset(h, 0, JOURNAL_HEADER);
    memcpy(h, "LIVEDB", 6);
    h[7] = (unsigned char)kind;
    put_u32le(h + 8, JOURNAL_VERSION);
    put_u64le(h + 16, gen);
    put_u32le(h + 28, crc32c(0, h, 28));
}

/* LDB_OK and *gen, or why the header is not one of ours. */
static int check_header(struct store *s, const unsigned char *h, char kind, const char *path,
                        uint64_t *gen)
{
    if (memcmp(h, "LIVEDB", 6) != 0 || h[6] != 0 || h[7] != (unsigned char)kind)
        return store_error(s, LDB_CORRUPT, "%s is not a livedb %s file", path,
                           kind == 'S' ? "database" : "log");
    if (get_u32le(h + 28) != crc32c(0, h, 28))
        return store_error(s, LDB_CORRUPT, "database file is damaged: the header of %s "
                                           "fails its checksum", path);
    uint32_t v = get_u32le(h + 8);
    if (v > JOURNAL_VERSION)
        return store_error(s, LDB_UNSUPPORTED, "%s has file format version %u, newer than "
                                               "this livedb's (%u)", path, v, JOURNAL_VERSION);
    *gen = get_u64le(h + 16);
    return LDB_OK;
}

/* ---- reading whole files -------------------------------------------------------------------- */

/* Maps all of f (*p NULL for an empty file). Mapped, not read: a snapshot
 * is as large as the database, and a copy would cost as much memory again
 * while it is replayed. */
static int map_whole(struct store *s, struct file *f, const char *path,
                     const unsigned char **p, size_t *n)
{
    uint64_t size;
    *p = NULL;
    *n = 0;
    int err = file_size(f, &size);
    if (!err && size > SIZE_MAX)
        err = EFBIG;
    if (!err && size > 0)
        err = file_map(f, (size_t)size, (const void **)p);
    if (err)
        return io_error(s, err, "read", path);
    *n = (size_t)size;
    return LDB_OK;
}

static void unmap_whole(const unsigned char *p, size_t n)
{
    if (p)
        file_unmap(p, n);
}

/* ---- recovery ------------------------------------------------------------------------------- */

static int load_snapshot(struct store *s, struct journal *j)
{
    struct file f;
    int err = file_open(&f, j->path, false);
    if (err == ENOENT) {
        j->gen = 0; /* a new database: no checkpoint yet */
        return LDB_OK;
    }
    if (err)
        return io_error(s, err, "open", j->path);
    const unsigned char *p;
    size_t n;
    int rc = map_whole(s, &f, j->path, &p, &n);
    file_close(&f);
    if (rc)
        return rc;
    if (n == 0) { /* made empty by someone else: a new database, unless the log says not */
        j->gen = 0;
        return LDB_OK;
    }
    if (n < JOURNAL_HEADER + 12)
        rc = n >= 8 && memcmp(p, "LIVEDB", 6) != 0
                 ? store_error(s, LDB_CORRUPT, "%s is not a livedb database file", j->path)
                 : store_error(s, LDB_CORRUPT, "database file is damaged: %s is cut short",
                               j->path);
    if (rc == LDB_OK)
        rc = check_header(s, p, 'S', j->path, &j->gen);
    size_t body = n - JOURNAL_HEADER - 12;
    if (rc == LDB_OK && (get_u64le(p + n - 12) != body ||
                         get_u32le(p + n - 4) != crc32c(0, p + JOURNAL_HEADER, body)))
        rc = store_error(s, LDB_CORRUPT, "database file is damaged: %s fails its checksum",
                         j->path);
    if (rc == LDB_OK)
        rc = recover_apply(s, p + JOURNAL_HEADER, body);
    unmap_whole(p, n);
    return rc;
}

/* Replays the records of the log in p[0..n); *end is where the valid
 * ones stop. */
static int replay_records(struct store *s, struct journal *j, const unsigned char *p,
                          size_t n, size_t *end)
{
    size_t at = JOURNAL_HEADER;
    uint32_t chain = get_u32le(p + 28);
    while (n - at >= JOURNAL_RECORD_HEAD) {
        uint32_t len = get_u32le(p + at);
        if (len == 0 || len > n - at - JOURNAL_RECORD_HEAD)
            break; /* torn: the rest was never acknowledged */
        uint32_t crc = crc32c(chain, p + at, 4);
        crc = crc32c(crc, p + at + JOURNAL_RECORD_HEAD, len);
        if (crc != get_u32le(p + at + 4))
            break;
        int rc = recover_apply(s, p + at + JOURNAL_RECORD_HEAD, len);
        if (rc)
            return rc;
        chain = crc;
        at += JOURNAL_RECORD_HEAD + len;
    }
    j->chain = chain;
    *end = at;
    return LDB_OK;
}

/*
 * Reads and replays the log; *fresh when it must be (re)started empty at
 * generation gen. A log of at most a header's bytes whose header is not
 * sound is one whose (re)start was cut short: empty. A longer one must
 * have a sound header. A log older than the snapshot is already in it; a
 * newer one means the snapshot it extends is gone.
 */
static int load_log(struct store *s, struct journal *j, bool *fresh)
{
    const unsigned char *p;
    size_t n, end = 0;
    int rc = map_whole(s, &j->wal, j->wal_path, &p, &n);
    if (rc)
        return rc;
    uint64_t gen = 0;
    bool sound = false;
    *fresh = true;
    if (n >= JOURNAL_HEADER) {
        rc = check_header(s, p, 'W', j->wal_path, &gen);
        if (rc == LDB_CORRUPT && n == JOURNAL_HEADER)
            rc = LDB_OK; /* a torn restart: empty */
        else
            sound = rc == LDB_OK;
    }
    if (sound && gen > j->gen)
        rc = store_error(s, LDB_CORRUPT, "database file is damaged: the log %s is newer than "
                                         "the snapshot %s (missing or replaced)",
                         j->wal_path, j->path);
    if (rc == LDB_OK && sound && gen == j->gen) {
        *fresh = false;
        rc = replay_records(s, j, p, n, &end);
        j->wal_end = end;
    }
    unmap_whole(p, n);
    return rc;
}

/* Starts the log over, empty, at generation j->gen. The old records go
 * first, so that a torn header can only be an empty log's. */
static int reset_log(struct store *s, struct journal *j)
{
    unsigned char h[JOURNAL_HEADER];
    make_header(h, 'W', j->gen);
    int err = file_truncate(&j->wal, JOURNAL_HEADER);
    if (!err)
        err = file_write_at(&j->wal, h, JOURNAL_HEADER, 0);
    if (!err && j->sync)
        err = file_sync(&j->wal);
    if (err) {
        j->wal_stale = true;
        return io_error(s, err, "write", j->wal_path);
    }
    j->wal_stale = false;
    j->retry_at = 0;
    j->wal_end = JOURNAL_HEADER;
    j->chain = get_u32le(h + 28);
    return LDB_OK;
}

/* The files are named after the file path resolves to: two paths to one
 * database (a symbolic link) must find the same log, and so its lock. */
static int set_paths(struct journal *j, const char *path)
{
    char *real = file_resolve(path);
    if (real)
        path = real;
    size_t n = strlen(path);
    j->path = mem_strndup(path, n);
    j->wal_path = mem_alloc(n + 5);
    j->tmp_path = mem_alloc(n + 5);
    if (!j->path || !j->wal_path || !j->tmp_path) {
        free(real);
        return LDB_NOMEM;
    }
    snprintf(j->wal_path, n + 5, "%s-wal", path);
    snprintf(j->tmp_path, n + 5, "%s.tmp", path);
    free(real);
    return LDB_OK;
}

static void journal_free(struct journal *j)
{
    if (!j)
        return;
    file_close(&j->wal);
    sb_free(&j->rec);
    mem_free(j->path);
    mem_free(j->wal_path);
    mem_free(j->tmp_path);
    mem_free(j);
}

/* Opens (making it if need be) and locks the log; *made when this call
 * made it, so that a failed open removes it again. Only a log this call
 * locked is its own to remove: another open may have made it first. And
 * the lock must be on the file the path names: an open that fails
 * removes the log it made before it lets the lock go, so the file
 * locked next may be gone; then the path is opened again. */
static int open_log(struct store *s, struct journal *j, bool *made)
{
    for (int tries = 0;; tries++) {
        *made = !file_exists(j->wal_path);
        int err = file_open(&j->wal, j->wal_path, true);
        if (!err)
            err = file_lock(&j->wal);
        if (err)
            *made = false;
        if (err == EWOULDBLOCK)
            return store_error(s, LDB_BUSY, "database %s is open in another handle", j->path);
        if (err)
            return io_error(s, err, "open", j->wal_path);
        if (file_is_at(&j->wal, j->wal_path))
            return LDB_OK;
        file_close(&j->wal);
        if (tries == 8) /* removed under us again and again */
            return store_error(s, LDB_BUSY, "database %s is being opened by another handle",
                               j->path);
    }
}

int journal_open(struct store *s, const char *path)
{
    struct journal *j = mem_calloc(1, sizeof *j);
    if (!j || set_paths(j, path)) {
        journal_free(j);
        return store_error(s, LDB_NOMEM, "out of memory");
    }
    j->wal.fd = -1;
    j->sync = 2;
    j->threshold = DEFAULT_THRESHOLD;
    sb_init(&j->rec);
    bool made = false, fresh = false;
    int rc = open_log(s, j, &made);
    if (rc == LDB_OK)
        rc = load_snapshot(s, j);
    if (rc == LDB_OK)
        rc = load_log(s, j, &fresh);
    if (rc == LDB_OK && fresh)
        rc = reset_log(s, j);
    if (rc == LDB_OK && made && file_sync_dir(j->wal_path))
        rc = io_error(s, errno, "sync the directory of", j->wal_path);
    uint64_t size;
    if (rc == LDB_OK && !file_size(&j->wal, &size) && size > j->wal_end) {
        int err = file_truncate(&j->wal, j->wal_end); /* drop a torn tail */
        if (err)
            rc = io_error(s, err, "truncate", j->wal_path);
    }
    if (rc) {
        if (made)
            file_remove(j->wal_path);
        journal_free(j);
        return rc;
    }
    s->journal = j;
    return LDB_OK;
}

void journal_close(struct store *s)
{
    struct journal *j = s->journal;
    if (!j)
        return;
    if (j->wal_end > JOURNAL_HEADER && !j->broken && !j->keep_files)
        journal_checkpoint(s); /* best effort: the log keeps everything */
    journal_free(j);
    s->journal = NULL;
}

/* ---- commits --------------------------------------------------------------------------------- */

static void encode_entry(struct store *s, const struct undo_entry *e,
                         const struct table **cur)
{
    strbuf *sb = &s->journal->rec;
    switch (e->kind) {
    case UNDO_INSERT:
        enc_table(sb, e->t, cur);
        enc_row(sb, OP_INSERT, e->t, NULL, e->new_row);
        break;
    case UNDO_DELETE:
        enc_table(sb, e->t, cur);
        enc_row(sb, OP_DELETE, e->t, e->a.old, NULL);
        break;
    case UNDO_UPDATE:
        enc_table(sb, e->t, cur);
        enc_row(sb, OP_UPDATE, e->t, e->a.old, e->new_row);
        break;
    case UNDO_CREATE_TABLE: enc_create_table(sb, e->t); *cur = NULL; break;
    case UNDO_DROP_TABLE:
        sb_putc(sb, OP_DROP_TABLE);
        enc_str(sb, e->t->name);
        *cur = NULL;
        break;
    case UNDO_CREATE_INDEX: enc_create_index(sb, e->a.ix); break;
    case UNDO_DROP_INDEX:
        sb_putc(sb, OP_DROP_INDEX);
        enc_str(sb, e->a.ix->name);
        break;
    default: break; /* UNDO_ROWID: the table's rowid_max goes at the end */
    }
}

/* The open transaction's log as one record in j->rec (after its head);
 * LDB_NOMEM. */
static int encode_transaction(struct store *s, struct journal *j)
{
    VEC(struct table *) touched = VEC_INIT; /* a few tables: searched */
    const struct table *cur = NULL;
    int rc = LDB_OK;
    if (sb_error(&j->rec)) /* a builder that failed takes nothing more: a new one */
        sb_free(&j->rec);
    sb_truncate(&j->rec, 0);
    sb_put(&j->rec, "\0\0\0\0\0\0\0\0", JOURNAL_RECORD_HEAD);
    for (size_t i = 0; i < s->undo.len && rc == LDB_OK; i++) {
        const struct undo_entry *e = &s->undo.data[i];
        if (e->t && e->t->temp)
            continue; /* TEMP tables, their rows and indexes are not logged */
        encode_entry(s, e, &cur);
        bool rowid = e->kind == UNDO_INSERT || e->kind == UNDO_UPDATE || e->kind == UNDO_ROWID;
        size_t k = touched.len;
        while (rowid && k > 0 && touched.data[k - 1] != e->t)
            k--;
        if (rowid && k == 0)
            rc = vec_push(&touched, e->t);
    }
    for (size_t i = 0; i < touched.len && rc == LDB_OK; i++) {
        if (touched.data[i]->dropped)
            continue;
        enc_table(&j->rec, touched.data[i], &cur);
        enc_rowid(&j->rec, touched.data[i]);
    }
    vec_free(&touched);
    return rc ? LDB_NOMEM : sb_error(&j->rec);
}

/* Takes a failed record back out of the log. */
static void take_back(struct journal *j, int why)
{
    int err = file_truncate(&j->wal, j->wal_end);
    if (!err && j->sync)
        err = file_sync(&j->wal);
    if (err) {
        j->broken = true;
        snprintf(j->broken_why, sizeof j->broken_why, "%s", strerror(why));
    }
}

int journal_commit(struct store *s)
{
    struct journal *j = s->journal;
    if (!j || s->undo.len == 0)
        return LDB_OK;
    if (j->broken)
        return store_error(s, LDB_IOERR, "database %s refuses writes after a failed commit "
                                         "(%s): close and reopen it", j->path, j->broken_why);
    int rc = j->wal_stale ? reset_log(s, j) : LDB_OK;
    if (rc)
        return rc;
    if ((rc = encode_transaction(s, j)))
        return store_error(s, rc, "out of memory");
    if (j->rec.len == JOURNAL_RECORD_HEAD)
        return LDB_OK; /* it wrote TEMP tables only */
    unsigned char *p = (unsigned char *)j->rec.p;
    size_t len = j->rec.len - JOURNAL_RECORD_HEAD;
    if (len > UINT32_MAX)
        return store_error(s, LDB_ERROR, "transaction too large for the log (%zu bytes)", len);
    put_u32le(p, (uint32_t)len);
    uint32_t crc = crc32c(crc32c(j->chain, p, 4), p + JOURNAL_RECORD_HEAD, len);
    put_u32le(p + 4, crc);
    int err = file_write_at(&j->wal, p, j->rec.len, j->wal_end);
    if (!err && j->sync == 2)
        err = file_sync(&j->wal);
    if (err) {
        take_back(j, err);
        return io_error(s, err, "write", j->wal_path);
    }
    j->wal_end += j->rec.len;
    j->chain = crc;
    if (j->rec.cap > CHECKPOINT_CHUNK) /* a bulk record's buffer is not kept */
        sb_free(&j->rec);
    return LDB_OK;
}

void journal_after_commit(struct store *s)
{
    struct journal *j = s->journal;
    if (!j || !j->threshold || j->broken || j->wal_end - JOURNAL_HEADER < j->threshold ||
        j->wal_end < j->retry_at)
        return;
    /* a failure (a full disk) is tried again only after as much log more:
     * each commit past the threshold must not pay a whole snapshot */
    if (journal_checkpoint(s) != LDB_OK)
        j->retry_at = j->wal_end + j->threshold;
}

/* ---- checkpoints --------------------------------------------------------------------------- */

struct snap_writer {
    struct file f;
    uint64_t at;
    uint32_t crc;
    uint64_t body;
    strbuf sb;
    int err;
};

static void snap_flush(struct snap_writer *w, bool all)
{
    if (w->err || (!all && w->sb.len < CHECKPOINT_CHUNK) || w->sb.len == 0)
        return;
    w->crc = crc32c(w->crc, w->sb.p, w->sb.len);
    w->err = file_write_at(&w->f, w->sb.p, w->sb.len, w->at);
    w->at += w->sb.len;
    w->body += w->sb.len;
    sb_truncate(&w->sb, 0);
}

static struct table_index *lead_index(const struct table *t)
{
    for (size_t i = 0; i < t->indexes.len; i++)
        if (t->indexes.data[i]->kind == INDEX_ORDERED)
            return t->indexes.data[i];
    return NULL;
}

/* The lead order's ordinal of each row, for the other ordered indexes:
 * (row address, ordinal) pairs sorted by address, merged with each
 * index's (row address, position) pairs sorted the same way. Sequential
 * radix passes instead of a hash lookup, a cache miss, per row. Keys are
 * addresses less the lowest, over 8 (rows are aligned), so that the sort
 * passes only over the bits they use. */
struct snap_order {
    struct hkey *lead, *tmp;    /* n pairs each (lead: sorted, after snap_rows) */
    size_t n;
    uintptr_t base;
    unsigned bits;
};

static void snap_row(struct snap_writer *w, struct table *t, row *r, struct snap_order *ord,
                     uint64_t i)
{
    enc_row(&w->sb, OP_INSERT, t, NULL, r);
    if (ord)
        ord->lead[i] = (struct hkey){ (uintptr_t)r, i };
    snap_flush(w, false);
}

static uint64_t order_key(const struct snap_order *ord, const row *r)
{
    return ((uintptr_t)r - ord->base) >> 3;
}

/* Sorts the lead pairs by address (after snap_rows filled them). */
static void order_sort_lead(struct snap_order *ord)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t i = 0; i < ord->n; i++) {
        lo = ord->lead[i].hash < lo ? ord->lead[i].hash : lo;
        hi = ord->lead[i].hash > hi ? ord->lead[i].hash : hi;
    }
    ord->base = ord->n ? lo : 0;
    uint64_t span = ord->n ? (hi - lo) >> 3 : 0;
    ord->bits = 1;
    while (ord->bits < 61 && span >> ord->bits)
        ord->bits++;
    for (size_t i = 0; i < ord->n; i++)
        ord->lead[i].hash = order_key(ord, (const row *)(uintptr_t)ord->lead[i].hash);
    struct hkey *sorted = hsort_field(ord->lead, ord->tmp, ord->n, 0, ord->bits);
    if (sorted != ord->lead) { /* keep lead as the sorted one */
        ord->tmp = ord->lead;
        ord->lead = sorted;
    }
}

/* The rows, in the lead index's order (or the table's); ord (when other
 * ordered indexes need it) gets each one's ordinal. */
static void snap_rows(struct snap_writer *w, struct table *t, struct snap_order *ord)
{
    struct table_index *lead = lead_index(t);
    uint64_t i = 0;
    if (lead) {
        struct index_cursor c;
        for (bool on = index_first(lead, &c); on && !w->err && !sb_error(&w->sb);
             on = index_next(&c))
            snap_row(w, t, index_cursor_row(&c), ord, i++);
    } else {
        struct table_scan sc = table_scan_begin(t);
        for (row *r; (r = table_scan_next(&sc)) && !w->err && !sb_error(&w->sb);)
            snap_row(w, t, r, ord, i++);
    }
    if (ord && !w->err && !sb_error(&w->sb))
        order_sort_lead(ord);
}

/* The lead ordinals of ix's rows, in ix's order, into out (ix's rows are
 * some of the lead's: a partial index has fewer). */
static int index_ordinals(struct table_index *ix, struct snap_order *ord, uint64_t *out,
                          size_t *m)
{
    struct hkey *pairs = mem_alloc((ord->n ? ord->n : 1) * sizeof *pairs);
    if (!pairs)
        return LDB_NOMEM;
    size_t n = 0;
    struct index_cursor c;
    for (bool on = index_first(ix, &c); on && n < ord->n; on = index_next(&c), n++)
        pairs[n] = (struct hkey){ order_key(ord, index_cursor_row(&c)), n };
    struct hkey *sorted = hsort_field(pairs, ord->tmp, n, 0, ord->bits);
    int rc = LDB_OK;
    for (size_t i = 0, j = 0; i < n && !rc; i++) {
        while (j < ord->n && ord->lead[j].hash < sorted[i].hash)
            j++;
        if (j == ord->n || ord->lead[j].hash != sorted[i].hash)
            rc = LDB_CORRUPT; /* a row of ix that the table does not hold */
        else
            out[sorted[i].idx] = ord->lead[j].idx;
    }
    *m = n;
    mem_free(pairs);
    return rc;
}

static void snap_index(struct snap_writer *w, struct table_index *ix, size_t pos, bool lead,
                       struct snap_order *ord)
{
    sb_putc(&w->sb, ix->kind == INDEX_ORDERED ? OP_INDEX_ORDER : OP_INDEX_FILL);
    enc_varint(&w->sb, pos);
    if (ix->kind != INDEX_ORDERED)
        return;
    sb_putc(&w->sb, lead ? 0 : 1);
    if (lead)
        return;
    uint64_t *ords = mem_alloc((ord->n ? ord->n : 1) * sizeof *ords);
    size_t m = 0;
    int rc = ords ? index_ordinals(ix, ord, ords, &m) : LDB_NOMEM;
    if (rc)
        w->sb.err = LDB_NOMEM; /* (a corrupt index cannot be: the store's own) */
    for (size_t i = 0; !rc && i < m && !w->err && !sb_error(&w->sb); i++) {
        enc_varint(&w->sb, ords[i]);
        snap_flush(w, false);
    }
    mem_free(ords);
}

static void snap_table(struct snap_writer *w, struct table *t)
{
    const struct table *cur = NULL;
    struct table_index *lead = lead_index(t);
    size_t nordered = 0;
    enc_create_table(&w->sb, t);
    for (size_t i = 0; i < t->indexes.len; i++) {
        nordered += t->indexes.data[i]->kind == INDEX_ORDERED;
        if (!t->indexes.data[i]->automatic)
            enc_create_index(&w->sb, t->indexes.data[i]);
    }
    enc_table(&w->sb, t, &cur);
    enc_rowid(&w->sb, t);
    sb_putc(&w->sb, OP_BULK_BEGIN);
    struct snap_order ord = { NULL, NULL, table_count(t), 0, 0 };
    if (nordered > 1) {
        size_t bytes = (ord.n ? ord.n : 1) * sizeof(struct hkey);
        ord.lead = mem_alloc(bytes);
        ord.tmp = mem_alloc(bytes);
        if (!ord.lead || !ord.tmp)
            w->sb.err = LDB_NOMEM;
    }
    if (!sb_error(&w->sb))
        snap_rows(w, t, nordered > 1 ? &ord : NULL);
    for (size_t i = 0; i < t->indexes.len && !w->err && !sb_error(&w->sb); i++)
        snap_index(w, t->indexes.data[i], i, t->indexes.data[i] == lead, &ord);
    sb_putc(&w->sb, OP_BULK_END);
    mem_free(ord.lead);
    mem_free(ord.tmp);
}

/* Writes the snapshot of generation gen to the temporary file. */
static int write_snapshot(struct store *s, struct journal *j, uint64_t gen)
{
    struct snap_writer w = { { -1 }, JOURNAL_HEADER, 0, 0, STRBUF_INIT, 0 };
    unsigned char h[JOURNAL_HEADER], tail[12];
    make_header(h, 'S', gen);
    w.err = file_open(&w.f, j->tmp_path, true);
    if (!w.err)
        w.err = file_truncate(&w.f, 0);
    if (!w.err)
        w.err = file_write_at(&w.f, h, JOURNAL_HEADER, 0);
    for (size_t i = 0; i < s->tables.len && !w.err && !sb_error(&w.sb); i++)
        if (!s->tables.data[i]->temp) /* TEMP tables end with the handle */
            snap_table(&w, s->tables.data[i]);
    snap_flush(&w, true);
    int rc = sb_error(&w.sb) ? store_error(s, LDB_NOMEM, "out of memory") : LDB_OK;
    put_u64le(tail, w.body);
    put_u32le(tail + 8, w.crc);
    if (!rc && !w.err)
        w.err = file_write_at(&w.f, tail, sizeof tail, w.at);
    if (!rc && !w.err && j->sync)
        w.err = file_sync(&w.f);
    if (!rc && w.err)
        rc = io_error(s, w.err, "write", j->tmp_path);
    file_close(&w.f);
    sb_free(&w.sb);
    return rc;
}

int journal_checkpoint(struct store *s)
{
    struct journal *j = s->journal;
    if (!j)
        return LDB_OK;
    if (s->txn != TXN_NONE)
        return store_error(s, LDB_MISUSE, "cannot checkpoint inside a transaction");
    if (j->broken)
        return store_error(s, LDB_IOERR, "database %s refuses writes after a failed commit "
                                         "(%s): close and reopen it", j->path, j->broken_why);
    if (j->gen > 0 && j->wal_end == JOURNAL_HEADER && !j->wal_stale)
        return LDB_OK; /* the snapshot holds everything already */
    int rc = write_snapshot(s, j, j->gen + 1);
    int err = rc ? 0 : file_rename(j->tmp_path, j->path);
    if (rc || err) {
        file_remove(j->tmp_path);
        return rc ? rc : io_error(s, err, "replace", j->path);
    }
    /* The snapshot in place holds everything: the log is history now,
     * and appending to it (of the old generation) would lose records. */
    j->gen++;
    err = j->sync ? file_sync_dir(j->path) : 0;
    rc = reset_log(s, j);
    return err ? io_error(s, err, "sync the directory of", j->path) : rc;
}

/* ---- the store's face (store.h) ------------------------------------------------------------ */

int store_open_file(const char *path, struct store **out, char *err, size_t errlen)
{
    struct store *s;
    *out = NULL;
    if (!*path) { /* no file: open("") fails, but "-wal" would be made */
        snprintf(err, errlen, "cannot open a database at an empty path");
        return LDB_CANTOPEN;
    }
    if (store_open(&s)) {
        snprintf(err, errlen, "out of memory");
        return LDB_NOMEM;
    }
    int rc = journal_open(s, path);
    if (rc) {
        snprintf(err, errlen, "%s", store_errmsg(s));
        store_close(s);
        return rc;
    }
    store_error(s, LDB_OK, "%s", "");
    *out = s;
    return LDB_OK;
}

int store_checkpoint(struct store *s) { return journal_checkpoint(s); }

bool store_is_durable(const struct store *s) { return s->journal != NULL; }

void store_keep_files(struct store *s)
{
    if (s->journal)
        s->journal->keep_files = true;
}

void store_set_sync(struct store *s, int mode)
{
    if (s->journal)
        s->journal->sync = mode < 0 ? 0 : mode > 2 ? 2 : mode;
}

int store_sync_mode(const struct store *s) { return s->journal ? s->journal->sync : 0; }

void store_set_checkpoint_threshold(struct store *s, uint64_t bytes)
{
    if (s->journal)
        s->journal->threshold = bytes;
}

uint64_t store_checkpoint_threshold(const struct store *s)
{
    return s->journal ? s->journal->threshold : 0;
}

uint64_t store_log_file_bytes(const struct store *s)
{
    return s->journal ? s->journal->wal_end : 0;
}
