/*
 * keymap.c - a map from byte strings (encoded primary keys) to uint64,
 * open addressing with linear probing, at most half full. Value 0 means
 * absent, so callers store sequence numbers starting at 1.
 */
#include "pg/pg_internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t key_hash(const char *k, size_t len)
{
    uint64_t h = 1469598103934665603ull;            /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static struct pg_keyslot *key_find(const pg_keymap *m, const char *k, size_t len)
{
    size_t i = key_hash(k, len) & (m->cap - 1);
    for (;; i = (i + 1) & (m->cap - 1)) {
        struct pg_keyslot *s = &m->slots[i];
        if (!s->key || (s->len == len && memcmp(s->key, k, len) == 0))
            return s;
    }
}

static bool keymap_grow(pg_keymap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct pg_keyslot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    pg_keymap bigger = { slots, m->n, cap };
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            *key_find(&bigger, m->slots[i].key, m->slots[i].len) = m->slots[i];
    free(m->slots);
    *m = bigger;
    return true;
}

bool pg_keymap_put(pg_keymap *m, const char *k, size_t len, uint64_t val)
{
    if ((m->n + 1) * 2 > m->cap && !keymap_grow(m))
        return false;
    struct pg_keyslot *s = key_find(m, k, len);
    if (!s->key) {
        char *copy = malloc(len ? len : 1);
        if (!copy)
            return false;
        memcpy(copy, k, len);
        *s = (struct pg_keyslot){ copy, len, 0 };
        m->n++;
    }
    s->val = val;
    return true;
}

uint64_t pg_keymap_get(const pg_keymap *m, const char *k, size_t len)
{
    if (!m->n)
        return 0;
    return key_find(m, k, len)->val;
}

void pg_keymap_clear(pg_keymap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    *m = (pg_keymap){ 0 };
}
