/*
 * ptrmap.c - pointer-keyed map (see ptrmap.h): the hmap holds positions
 * into the entry array, and the hash is a bijection of the address.
 */
#include "base/ptrmap.h"

#include "base/hash.h"
#include "livedb.h"

struct probe {
    const ptrmap *m;
    const void *key;
};

static bool same_key(const void *probe, uint64_t pos)
{
    const struct probe *p = probe;
    return p->m->ents.data[pos].key == p->key;
}

static uint64_t key_hash(const void *key)
{
    return hash_u64((uint64_t)(uintptr_t)key);
}

void ptrmap_free(ptrmap *m)
{
    hmap_free(&m->idx);
    vec_free(&m->ents);
}

uint64_t *ptrmap_get(const ptrmap *m, const void *key)
{
    struct probe p = { m, key };
    uint64_t *pos = hmap_get(&m->idx, key_hash(key), same_key, &p);
    return pos ? &m->ents.data[*pos].val : NULL;
}

int ptrmap_put(ptrmap *m, const void *key, uint64_t val)
{
    if (vec_reserve(&m->ents, 1))
        return LDB_NOMEM;
    struct probe p = { m, key };
    uint64_t *pos;
    bool found;
    if (hmap_put(&m->idx, key_hash(key), same_key, &p, &pos, &found))
        return LDB_NOMEM;
    if (!found) {
        *pos = m->ents.len;
        m->ents.data[m->ents.len++].key = key;
    }
    m->ents.data[*pos].val = val;
    return LDB_OK;
}
