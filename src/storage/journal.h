/*
 * journal.h - durable storage's private face inside src/storage: the
 * encoding of catalog and row operations (codec.c), the log and the
 * snapshot files (journal.c), and recovery (recover.c). Not for use
 * outside src/storage/; the layers above see store_open_file,
 * store_checkpoint and the settings in store.h.
 *
 * Files of a durable store at path P (docs/ARCHITECTURE.md, "Durability"):
 *   P       the snapshot of the last checkpoint: header, a stream of
 *           operations that rebuilds every table and index, a trailer
 *           checksum. Replaced whole: written to P.tmp, synced, renamed.
 *   P-wal   the log: header (naming the snapshot generation it extends),
 *           then one record per committed transaction: u32 length, u32
 *           checksum (crc32c chained from the previous record's, so a
 *           record from an older log or a shuffled one never verifies),
 *           then the transaction's operations.
 * Both headers carry a magic, the format version and the generation; a
 * log whose generation is older than the snapshot's is already in it.
 *
 * Operations (one byte, then fields; integers as varints, strings as a
 * length + 1 varint, 0 for NULL, then the bytes):
 *   TABLE name                  following row operations address it
 *   CREATE_TABLE definition     (codec.c: columns, key, constraints, flags)
 *   DROP_TABLE name
 *   CREATE_INDEX table definition
 *   DROP_INDEX name
 *   INSERT row                  every column, hidden ones included
 *   DELETE key                  the primary key's values
 *   UPDATE key row
 *   ROWID n                     the table's rowid_max
 * and, in snapshots, a table's rows in bulk, so that recovery builds each
 * index once over all rows instead of inserting row by row:
 *   BULK_BEGIN                  following INSERTs skip the indexes
 *   INDEX_ORDER i 0             ordered index i (its position in the
 *                               table's list) in the rows' own order
 *   INDEX_ORDER i 1 ordinals    ...or in this order of the bulk's rows
 *   INDEX_FILL i                hash index i, from the rows
 *   BULK_END                    every index of the table must be whole
 * A snapshot lists a table's rows in the order of its first ordered index,
 * so its build needs no sort; others are given as ordinals, checked in
 * O(n) (index_build_sorted), never trusted.
 */
#ifndef LDB_STORAGE_JOURNAL_H
#define LDB_STORAGE_JOURNAL_H

#include "base/file.h"
#include "base/strbuf.h"
#include "storage/store_impl.h"

#define JOURNAL_VERSION 1u
#define JOURNAL_HEADER 32u   /* bytes of either file's header */
#define JOURNAL_RECORD_HEAD 8u

enum journal_op {
    OP_TABLE = 1,
    OP_CREATE_TABLE,
    OP_DROP_TABLE,
    OP_CREATE_INDEX,
    OP_DROP_INDEX,
    OP_INSERT,
    OP_DELETE,
    OP_UPDATE,
    OP_ROWID,
    OP_BULK_BEGIN,
    OP_INDEX_ORDER,
    OP_INDEX_FILL,
    OP_BULK_END
};

/* ---- checksums and integers (codec.c) --------------------------------------- */

uint32_t crc32c(uint32_t crc, const void *p, size_t n);
void put_u32le(unsigned char *p, uint32_t v);
void put_u64le(unsigned char *p, uint64_t v);
uint32_t get_u32le(const unsigned char *p);
uint64_t get_u64le(const unsigned char *p);

/* ---- encoding (codec.c): appends to sb, whose error is sticky ----------------- */

void enc_varint(strbuf *sb, uint64_t v);
void enc_str(strbuf *sb, const char *s);
void enc_value(strbuf *sb, const value *v);
/* OP_CREATE_TABLE with t's definition (as created: declared columns,
 * key, UNIQUE constraints, options, read-only flag). */
void enc_create_table(strbuf *sb, const struct table *t);
void enc_create_index(strbuf *sb, const struct table_index *ix);
/* OP_TABLE name, when t is not already the current table *cur. */
void enc_table(strbuf *sb, const struct table *t, const struct table **cur);
void enc_row(strbuf *sb, enum journal_op op, const struct table *t, const row *old,
             const row *new_row);
/* OP_ROWID with t's rowid_max. */
void enc_rowid(strbuf *sb, const struct table *t);

/* ---- decoding (codec.c) -------------------------------------------------------- */

/* A cursor over bytes; a read past the end or a malformed field sets bad
 * (and reads zeros), so that callers check once per operation. */
struct dec {
    const unsigned char *p, *end;
    bool bad;
};
uint64_t dec_varint(struct dec *d);
uint8_t dec_byte(struct dec *d);
/* A string field: a pointer into the buffer (not NUL-terminated) and its
 * length; NULL for a NULL field. */
const char *dec_str(struct dec *d, size_t *len);
/* A value (owned by the caller): LDB_NOMEM, or LDB_CORRUPT (bad set). */
int dec_value(struct dec *d, value *out);

/* ---- recovery (recover.c) -------------------------------------------------------- */

/* Applies one stream of operations (a snapshot body or a log record) to s,
 * which no subscriber watches yet. LDB_CORRUPT (message set) for an
 * operation that does not decode or does not fit the tables; LDB_NOMEM. */
int recover_apply(struct store *s, const unsigned char *p, size_t n);

/* ---- the files (journal.c) --------------------------------------------------------- */

struct journal;

/* Locks, recovers into s (empty, unsubscribed) and attaches the journal
 * to s. On failure s may hold part of the recovered state (the caller
 * closes it) and the files are unchanged. */
int journal_open(struct store *s, const char *path);
/* At commit (txn.c), after every subscriber prepared: appends the open
 * transaction's log as one record and syncs it as the mode says. On
 * failure nothing of it stays in the log (or the journal refuses every
 * later commit, when even taking it back failed). */
int journal_commit(struct store *s);
/* After a commit completed: a checkpoint when the log outgrew its
 * threshold (failures leave the log as it is and are not reported: the
 * commit stands and the next commit tries again). */
void journal_after_commit(struct store *s);
int journal_checkpoint(struct store *s);
void journal_close(struct store *s);

#endif
