/*
 * vec.h - growable arrays.
 *
 *     VEC(int) v = VEC_INIT;
 *     if (vec_push(&v, 42)) return LDB_NOMEM;
 *     ... v.data[i], v.len ...
 *     vec_free(&v);
 *
 * Growth doubles the capacity. A failed push or reserve returns LDB_NOMEM
 * and leaves the array as it was. The array owns data; vec_free frees it.
 */
#ifndef LDB_BASE_VEC_H
#define LDB_BASE_VEC_H

#include <stddef.h>

#include "base/mem.h"
#include "livedb.h"

#define VEC(T)                                                                \
    struct {                                                                  \
        T *data;                                                              \
        size_t len, cap;                                                      \
    }
#define VEC_INIT { NULL, 0, 0 }

/* Grows *data (a T* stored at dataptr) to hold at least need elements. */
int vec_grow_(void *dataptr, size_t *cap, size_t need, size_t elem);

#define vec_reserve(v, n)                                                     \
    ((v)->len + (n) <= (v)->cap                                               \
         ? 0                                                                  \
         : vec_grow_(&(v)->data, &(v)->cap, (v)->len + (n),                   \
                     sizeof *(v)->data))

#define vec_push(v, x)                                                        \
    (vec_reserve(v, 1) ? LDB_NOMEM : ((v)->data[(v)->len++] = (x), 0))

#define vec_pop(v) ((v)->data[--(v)->len])
#define vec_last(v) ((v)->data[(v)->len - 1])
#define vec_clear(v) ((v)->len = 0)
#define vec_free(v)                                                           \
    (mem_free((v)->data), (v)->data = NULL, (v)->len = (v)->cap = 0)

#endif
