/* tcperf's one-sided mode: --coll put|get|put_signal over a window (rma.c). */
#ifndef TCPERF_RMA_H
#define TCPERF_RMA_H

#include <stdint.h>

#include "pattern.h"
#include "tcomms/tcomms.h"

typedef enum { TCPERF_PUT, TCPERF_GET, TCPERF_PUT_SIGNAL } tcperf_rma_op_t;

typedef struct {
    tcperf_rma_op_t op;
    uint64_t min_bytes, max_bytes, step_bytes;
    int factor, iters, warmup, check, async;
    int burst;  /* operations per bandwidth iteration (-B) */
    int create; /* tc_win_create over malloc'd memory instead of tc_win_allocate */
} tcperf_rma_opts_t;

/* The sweep of one operation (collective over @p comm); adds the wrong
 * elements to *wrong_total_p. Returns 0, or 2 after an error. */
int tcperf_rma(tc_comm_t *comm, const tcperf_rma_opts_t *o, double *wrong_total_p);

#endif
