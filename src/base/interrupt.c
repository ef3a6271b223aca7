/*
 * interrupt.c - the interrupt flag's poll and the progress handler's
 * schedule (interrupt.h).
 */
#include "base/interrupt.h"

#include <stdbool.h>

_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
               "ldb_interrupt needs a lock-free atomic int to be async-signal-safe");

_Thread_local struct intr *intr_current INTR_TLS;

static void schedule(struct intr *in)
{
    in->span = in->progress && in->due < INTR_POLL ? in->due : INTR_POLL;
    in->left = in->span;
}

void intr_init(struct intr *in)
{
    atomic_init(&in->flag, 0);
    intr_set_progress(in, 0, NULL, NULL);
}

void intr_set_progress(struct intr *in, int n, int (*fn)(void *ctx), void *ctx)
{
    bool on = n > 0 && fn;
    in->progress = on ? fn : NULL;
    in->ctx = on ? ctx : NULL;
    in->period = on ? n : 0;
    in->due = in->period;
    schedule(in);
}

int intr_poll(struct intr *in)
{
    int64_t done = in->span - in->left;
    int rc = LDB_OK;
    if (atomic_load_explicit(&in->flag, memory_order_relaxed)) {
        rc = LDB_INTERRUPT;
    } else if (in->progress && (in->due -= done) <= 0) {
        in->due = in->period;
        if (in->progress(in->ctx))
            rc = LDB_INTERRUPT;
    }
    schedule(in);
    return rc;
}
