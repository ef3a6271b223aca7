/*
 * hmap.c - linear-probing hash table with tombstones (see hmap.h).
 */
#include "base/hmap.h"

#include "base/mem.h"
#include "livedb.h"

#include <string.h>

#define HMAP_EMPTY 0
#define HMAP_TOMB 1
#define HMAP_MIN_CAP 8

static inline uint64_t fix_hash(uint64_t h) { return h < 2 ? h + 2 : h; }

void hmap_free(hmap *m)
{
    mem_free(m->slots);
    hmap_init(m);
}

void hmap_clear(hmap *m)
{
    if (m->slots)
        memset(m->slots, 0, ((size_t)m->mask + 1) * sizeof(hslot));
    m->count = m->tombs = 0;
}

/* Rebuilds into a table of new_cap slots, dropping tombstones. */
static int rehash(hmap *m, uint32_t new_cap)
{
    hslot *ns = mem_calloc(new_cap, sizeof(hslot));
    if (!ns)
        return LDB_NOMEM;
    uint32_t nmask = new_cap - 1;
    if (m->slots) {
        for (uint32_t i = 0; i <= m->mask; i++) {
            hslot *s = &m->slots[i];
            if (s->hash < 2)
                continue;
            uint32_t j = (uint32_t)s->hash & nmask;
            while (ns[j].hash != HMAP_EMPTY)
                j = (j + 1) & nmask;
            ns[j] = *s;
        }
        mem_free(m->slots);
    }
    m->slots = ns;
    m->mask = nmask;
    m->tombs = 0;
    return LDB_OK;
}

/* Whether hmap_reserve(m, n) rehashes, and into how many slots. */
static bool reserve_rehashes(const hmap *m, uint32_t n, uint64_t *new_cap)
{
    uint64_t cap = m->slots ? (uint64_t)m->mask + 1 : 0;
    uint64_t need_live = (uint64_t)m->count + n;
    *new_cap = cap;
    if (cap && (need_live + m->tombs) * 4 <= cap * 3)
        return false;
    *new_cap = cap ? cap : HMAP_MIN_CAP;
    while (need_live * 4 > *new_cap * 3)
        *new_cap *= 2;
    /* Dropping tombstones at the same size leaves room for as many more
     * as the table is short of its limit: none to speak of when live
     * entries fill more than half of it, and a table that churns there
     * (delete one, insert another) would rehash every few writes. */
    if (*new_cap == cap && need_live * 2 > cap)
        *new_cap *= 2;
    return true;
}

int hmap_reserve(hmap *m, uint32_t n)
{
    uint64_t new_cap;
    if (!reserve_rehashes(m, n, &new_cap))
        return LDB_OK;
    if (new_cap > ((uint64_t)1 << 31))
        return LDB_NOMEM;
    return rehash(m, (uint32_t)new_cap);
}

uint32_t hmap_mask_after(const hmap *m, uint32_t n)
{
    uint64_t cap;
    reserve_rehashes(m, n, &cap);
    return cap > ((uint64_t)1 << 31) ? m->mask : (uint32_t)(cap - 1);
}

uint64_t *hmap_get(const hmap *m, uint64_t hash, hmap_eq_fn eq, const void *key)
{
    if (!m->slots)
        return NULL;
    hash = fix_hash(hash);
    for (uint32_t i = (uint32_t)hash & m->mask;; i = (i + 1) & m->mask) {
        hslot *s = &m->slots[i];
        if (s->hash == HMAP_EMPTY)
            return NULL;
        if (s->hash == hash && (!eq || eq(key, s->val)))
            return &s->val;
    }
}

/*
 * Drops every tombstone without allocating. Starting just after an empty
 * slot s, each slot in probe order is emptied (a tombstone) or its entry
 * re-placed at the first empty slot from its home. No probe run crossed
 * s, so an entry's home lies between s and its slot: it lands there or
 * earlier, among slots already done, which stay a valid table.
 */
static void purge_tombstones(hmap *m)
{
    uint32_t s = 0;
    while (m->slots[s].hash != HMAP_EMPTY)
        s++;
    for (uint32_t k = 1; k <= m->mask; k++) {
        hslot *slot = &m->slots[(s + k) & m->mask];
        if (slot->hash < 2) {
            slot->hash = HMAP_EMPTY;
            continue;
        }
        hslot e = *slot;
        slot->hash = HMAP_EMPTY;
        uint32_t i = (uint32_t)e.hash & m->mask;
        while (m->slots[i].hash != HMAP_EMPTY)
            i = (i + 1) & m->mask;
        m->slots[i] = e;
    }
    m->tombs = 0;
}

/* Takes the first free slot of hash's probe run for a new entry (room
 * there). */
static uint64_t *place(hmap *m, uint64_t hash)
{
    hash = fix_hash(hash);
    uint32_t i = (uint32_t)hash & m->mask;
    while (m->slots[i].hash >= 2)
        i = (i + 1) & m->mask;
    if (m->slots[i].hash == HMAP_TOMB)
        m->tombs--;
    m->slots[i].hash = hash;
    m->slots[i].val = 0;
    m->count++;
    return &m->slots[i].val;
}

uint64_t *hmap_put_back(hmap *m, uint64_t hash)
{
    if (((uint64_t)m->count + 1 + m->tombs) * 4 > ((uint64_t)m->mask + 1) * 3)
        purge_tombstones(m);
    return place(m, hash);
}

int hmap_put(hmap *m, uint64_t hash, hmap_eq_fn eq, const void *key,
             uint64_t **val, bool *found)
{
    if (eq) {
        uint64_t *v = hmap_get(m, hash, eq, key);
        if (v) {
            *val = v;
            *found = true;
            return LDB_OK;
        }
    }
    int rc = hmap_reserve(m, 1);
    if (rc)
        return rc;
    *val = place(m, hash);
    *found = false;
    return LDB_OK;
}

void hmap_del(hmap *m, uint64_t *val)
{
    hslot *s = (hslot *)((char *)val - offsetof(hslot, val));
    uint32_t i = (uint32_t)(s - m->slots);
    /* A slot followed by an empty one can become empty itself: no probe
     * sequence passes through it. This keeps tombstones rare. */
    if (m->slots[(i + 1) & m->mask].hash == HMAP_EMPTY) {
        s->hash = HMAP_EMPTY;
        /* Earlier tombstones that now end a run can be emptied too. */
        uint32_t j = (i - 1) & m->mask;
        while (m->slots[j].hash == HMAP_TOMB) {
            m->slots[j].hash = HMAP_EMPTY;
            m->tombs--;
            j = (j - 1) & m->mask;
        }
    } else {
        s->hash = HMAP_TOMB;
        m->tombs++;
    }
    m->count--;
}

uint64_t *hmap_next(const hmap *m, uint32_t *pos, uint64_t *hash)
{
    if (!m->slots)
        return NULL;
    for (uint32_t i = *pos; i <= m->mask; i++) {
        if (m->slots[i].hash >= 2) {
            *pos = i + 1;
            if (hash)
                *hash = m->slots[i].hash;
            return &m->slots[i].val;
        }
    }
    *pos = m->mask + 1;
    return NULL;
}

uint64_t *hmap_probe(const hmap *m, uint64_t hash, uint32_t *pos)
{
    if (!m->slots)
        return NULL;
    hash = fix_hash(hash);
    uint32_t i = *pos == UINT32_MAX ? (uint32_t)hash & m->mask : (*pos + 1) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        hslot *s = &m->slots[i];
        if (s->hash == HMAP_EMPTY)
            return NULL;
        if (s->hash == hash) {
            *pos = i;
            return &s->val;
        }
    }
}
