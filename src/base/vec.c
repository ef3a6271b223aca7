/*
 * vec.c - the one out-of-line piece of vec.h: growing the buffer.
 *
 * The data pointer is read and written through memcpy so that any T* can
 * be passed as void* without breaking strict aliasing.
 */
#include "base/vec.h"

#include "livedb.h"

#include <stdint.h>
#include <string.h>

int vec_grow_(void *dataptr, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 4;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return LDB_NOMEM;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem)
        return LDB_NOMEM;
    void *old;
    memcpy(&old, dataptr, sizeof old);
    void *p = mem_realloc(old, ncap * elem);
    if (!p)
        return LDB_NOMEM;
    memcpy(dataptr, &p, sizeof p);
    *cap = ncap;
    return LDB_OK;
}
