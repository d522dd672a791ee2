/* TC_CHECK's descriptions of a collective call, as ranks exchange them (check.c): 32 bytes each,
 * host order (the ranks of a job run one build): i32 collective, i32 type (-1: none), i32 op
 * (-1: none; TC_RT_CHECK_OP_PAIRS below), i32 root (-1: none), u64 count, u64 hash of the
 * v-counts (0: none). What another
 * rank sent is untrusted: any bytes are compared and described without harm. */
#ifndef TC_RUNTIME_CHECK_DESC_H
#define TC_RUNTIME_CHECK_DESC_H

#include <stdint.h>

#include "tcomms/base/status.h"

#define TC_RT_CHECK_DESC_LEN 32
/* The op of an all_to_all_v's description: its count and hash are what the rank sends and
 * receives, weighed by pair, and the ranks' sums of the two must be equal. */
#define TC_RT_CHECK_OP_PAIRS (-2)

/**
 * Compare the @p size descriptions at @p descs (rank q's at q * TC_RT_CHECK_DESC_LEN) with rank
 * 0's: TC_OK when all are equal, else TC_ERR_MISMATCH with a text naming up to four ranks that
 * disagree and what each called (@p comm_name and @p seq, the collective's number, in it).
 */
TC_MUST_USE tc_status_t tc_rt_check_compare(const void *descs, int size, const char *comm_name,
                                            uint64_t seq);

#endif
