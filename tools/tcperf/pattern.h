/* Test data for tcperf's check (-c 1): every rank's input is a function of
 * (rank, index) whose result after the collective is known exactly, so each
 * rank can check every element it holds without trusting the library. */
#ifndef TCPERF_PATTERN_H
#define TCPERF_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/tcomms.h"

/* Reductions. Fill buf with rank's input for op at global indices
 * [first, first + count). */
void tcperf_fill(void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int rank,
                 size_t first);

/* Count elements of buf that differ from the reduction over ranks 0..nranks-1
 * of their inputs at global indices [first, first + count). */
size_t tcperf_check(const void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int nranks,
                    size_t first);

/* Data movement: element i of the block rank src sends to rank dst (dst 0
 * when every rank gets the same block), as raw bytes of an element of
 * esize bytes; seq makes every operation's data different. */
void tcperf_fill_block(void *buf, size_t count, size_t esize, int src, int dst, uint64_t seq);

/* Count elements of buf that differ from tcperf_fill_block's. */
size_t tcperf_check_block(const void *buf, size_t count, size_t esize, int src, int dst,
                          uint64_t seq);

#endif
