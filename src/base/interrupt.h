/*
 * interrupt.h - stopping long work: ldb_interrupt and the progress handler.
 *
 * A database owns one struct intr: the interrupt flag, which ldb_interrupt
 * sets from any thread or from a signal handler (a lock-free atomic and
 * nothing else, so it takes no lock and is async-signal-safe), and the
 * progress handler. Work that can run long (executor operators, live
 * hydration, the pairs a dataflow join visits, index builds) counts its
 * units with intr_tick(): a decrement while nothing is due; every
 * INTR_POLL units, or sooner when the progress handler is due, it reads
 * the flag and calls the handler, and returns LDB_INTERRUPT when the work
 * must stop. The caller then fails like on any error.
 *
 * Which work may be stopped is the API layer's decision: intr_current (per
 * thread) points at the running database's state while a statement's own
 * work runs, and is NULL everywhere else, notably while commit and
 * statement hooks maintain live queries and materialized views, whose
 * failure would outlive the statement. intr_swap sets it and returns the
 * value to restore, so nested statements (a row callback running SQL)
 * nest.
 */
#ifndef LDB_BASE_INTERRUPT_H
#define LDB_BASE_INTERRUPT_H

#include <stdatomic.h>
#include <stdint.h>

#include "livedb.h"

/* Units between two reads of the flag: a few microseconds of work. */
#define INTR_POLL 1024

struct intr {
    atomic_int flag;               /* set by ldb_interrupt, from anywhere */
    int (*progress)(void *ctx);    /* nonzero return: stop */
    void *ctx;
    int64_t period;                /* units between progress calls; 0: none */
    int64_t due;                   /* units until the next progress call */
    int64_t left;                  /* units until the next poll */
    int64_t span;                  /* what left started from */
};

#if defined(__GNUC__) || defined(__clang__)
#define INTR_TLS __attribute__((tls_model("initial-exec"))) /* one load, also in the .so */
#else
#define INTR_TLS
#endif

/* The state of the work this thread runs now, or NULL: not stoppable. */
extern _Thread_local struct intr *intr_current INTR_TLS;

void intr_init(struct intr *in);
/* Sets the progress handler: fn every n units (n < 1 or fn NULL: none). */
void intr_set_progress(struct intr *in, int n, int (*fn)(void *ctx), void *ctx);
/* Makes in the current state and returns the one to restore. */
static inline struct intr *intr_swap(struct intr *in)
{
    struct intr *prev = intr_current;
    intr_current = in;
    return prev;
}
/* The slow path of intr_tick: reads the flag, calls the handler when due. */
int intr_poll(struct intr *in);

/* n units of work done: LDB_OK, or LDB_INTERRUPT when the work must stop. */
static inline int intr_tick_n(int64_t n)
{
    struct intr *in = intr_current;
    if (in && (in->left -= n) <= 0)
        return intr_poll(in);
    return LDB_OK;
}

static inline int intr_tick(void)
{
    return intr_tick_n(1);
}

#endif
