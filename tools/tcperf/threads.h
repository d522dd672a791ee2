/* tcperf's threads mode: --threads T (threads.c). */
#ifndef TCPERF_THREADS_H
#define TCPERF_THREADS_H

#include <stdint.h>

#include "tcomms/tcomms.h"

typedef struct {
    int threads; /* threads, each on its own duplicate of the communicator */
    uint64_t min_bytes, max_bytes, step_bytes;
    int factor, iters, warmup, check, async;
    tc_dtype_t dtype;
    tc_redop_t op;
} tcperf_threads_opts_t;

/* The all-reduce sweep of o->threads threads at once, each on its own
 * communicator dup'd from @p comm; rank 0 prints one row per size: each
 * thread's latency and the aggregate rate. Adds the wrong elements to
 * *wrong_total_p. Returns 0, or 2 after an error. */
int tcperf_threads(tc_comm_t *comm, const tcperf_threads_opts_t *o, double *wrong_total_p);

#endif
