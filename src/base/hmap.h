/*
 * hmap.h - the open-addressing hash table used everywhere in livedb.
 *
 * A slot holds a full 64-bit hash and a 64-bit payload (a pointer, an index
 * into the caller's own array, or an integer). The table never hashes: the
 * caller computes the hash once and passes it in, and supplies an equality
 * callback that is called only for slots whose full hash matches, so a
 * lookup costs one probe sequence and usually one comparison.
 *
 * Layout: power-of-two capacity, linear probing, tombstones on delete.
 * Hash values 0 and 1 mark empty and deleted slots; real hashes that fall
 * on them are remapped (hmap_fix_hash), which the caller never sees.
 * Growth keeps (live + tombstones) <= 3/4 of capacity; a rehash that is
 * needed only because of tombstones keeps the capacity if live entries
 * fill at most half of it, and doubles it otherwise, so that any rehash
 * is followed by at least capacity / 4 writes without one.
 *
 * Invariant: an allocation failure (LDB_NOMEM) leaves the table unchanged.
 */
#ifndef LDB_BASE_HMAP_H
#define LDB_BASE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hslot {
    uint64_t hash; /* 0 empty, 1 tombstone, otherwise the (fixed) hash */
    uint64_t val;
} hslot;

typedef struct hmap {
    hslot *slots;  /* NULL until the first insert */
    uint32_t mask; /* capacity - 1 */
    uint32_t count; /* live entries */
    uint32_t tombs; /* tombstones */
} hmap;

/* Equality of the caller's probe key and a stored payload. */
typedef bool (*hmap_eq_fn)(const void *key, uint64_t val);

#define HMAP_INIT { NULL, 0, 0, 0 }

static inline void hmap_init(hmap *m)
{
    m->slots = NULL;
    m->mask = m->count = m->tombs = 0;
}
void hmap_free(hmap *m);
/* Removes every entry, keeping the allocation. */
void hmap_clear(hmap *m);
/* Makes room for n more entries so that the next n puts cannot fail. */
int hmap_reserve(hmap *m, uint32_t n);
/* The mask (slot of a hash: hash & mask) the table has after a
 * successful hmap_reserve(m, n): callers with many entries to put sort
 * them by slot so that the puts walk the table. */
uint32_t hmap_mask_after(const hmap *m, uint32_t n);

/* Pointer to the payload of the entry equal to key, or NULL. */
uint64_t *hmap_get(const hmap *m, uint64_t hash, hmap_eq_fn eq, const void *key);

/*
 * Finds the entry equal to key or makes a new one. On LDB_OK *val points to
 * its payload (for a new entry the caller must fill it) and *found says
 * which. eq may be NULL to always insert (multimap use).
 */
int hmap_put(hmap *m, uint64_t hash, hmap_eq_fn eq, const void *key,
             uint64_t **val, bool *found);

/* Removes the entry whose payload pointer came from get/put/next. */
void hmap_del(hmap *m, uint64_t *val);

/*
 * hmap_put with eq NULL (always a new entry), for putting back an entry
 * that was deleted, when the table holds no more entries than it did
 * then: the count it returns to was within the load limit then, and the
 * capacity never shrinks. So room is there, except for tombstones, which
 * it clears in place first when they are in the way. Never allocates.
 * Entries may move: earlier payload pointers are void.
 */
uint64_t *hmap_put_back(hmap *m, uint64_t hash);

/*
 * Iteration: start with *pos = 0; each call returns the next live payload
 * (and its hash in *hash if not NULL) or NULL at the end. Deleting the
 * returned entry during iteration is allowed; inserting is not.
 */
uint64_t *hmap_next(const hmap *m, uint32_t *pos, uint64_t *hash);

/*
 * Multimap probing: visits every entry with this hash, starting with
 * *pos = UINT32_MAX. Returns NULL at the end.
 */
uint64_t *hmap_probe(const hmap *m, uint64_t hash, uint32_t *pos);

static inline uint32_t hmap_count(const hmap *m) { return m->count; }
/* Bytes the table itself holds (for space counters). */
static inline size_t hmap_bytes(const hmap *m)
{
    return m->slots ? ((size_t)m->mask + 1) * sizeof(hslot) : 0;
}

#endif
