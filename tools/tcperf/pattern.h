/* Test data for tcperf's check: every rank's input is a function of (rank,
 * index) whose reduction over the ranks is known exactly. */
#ifndef TCPERF_PATTERN_H
#define TCPERF_PATTERN_H

#include <stddef.h>

#include "tcomms/tcomms.h"

/* Fill buf with rank's input for op. */
void tcperf_fill(void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int rank);

/* Count elements of buf that differ from the reduction of every rank's input. */
size_t tcperf_check(const void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int nranks);

#endif
