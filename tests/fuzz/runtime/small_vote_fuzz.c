/* Fuzz the small-message path's vote (runtime/src/small.c, tc_rt_small_tally): the 24-byte
 * records every rank of a communicator sends (small.h: free, need, ok). Input byte 0 picks the
 * rank count (1..64), the rest are the records (missing bytes zero).
 *
 * Properties: TC_ERR_PROTOCOL exactly when some ok is neither 0 nor 1, naming the first such
 * rank, with the outputs untouched; otherwise go = every ok is 1 and half the needs' sum
 * (saturating at 2^64 - 1) is at most the least free, as computed here with 128-bit sums. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/src/small.h"
#include "tcomms/base/log.h"
#include "tcomms/base/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int n = data[0] % TC_RT_SMALL_RANKS + 1, bad = -1, all = 1;
    size_t len = (size_t)n * sizeof(tc_rt_small_vote_t);
    tc_rt_small_vote_t *v = calloc((size_t)n, sizeof(*v)); /* exactly n: ASan guards the end */
    if (v == NULL)
        abort();
    memcpy(v, data + 1, size - 1 < len ? size - 1 : len);
    unsigned __int128 sum = 0;
    uint64_t least = UINT64_MAX;
    for (int q = 0; q < n; q++) {
        if (v[q].ok > 1 && bad < 0)
            bad = q;
        all &= v[q].ok == 1;
        sum += v[q].need;
        least = v[q].free < least ? v[q].free : least;
    }
    uint64_t need = (sum > UINT64_MAX ? UINT64_MAX : (uint64_t)sum) / 2;
    int go = 7;
    uint64_t got_need = 7, got_free = 7;
    tc_status_t st = tc_rt_small_tally(v, n, &go, &got_need, &got_free);
    if (bad >= 0) {
        char want[48];
        snprintf(want, sizeof(want), "rank %d sent %u", bad, v[bad].ok);
        if (st != TC_ERR_PROTOCOL || !strstr(tc_last_error(), want) || go != 7 || got_need != 7 ||
            got_free != 7)
            abort();
    } else if (st != TC_OK || go != (all && need <= least) || got_need != need ||
               got_free != least) {
        abort();
    }
    free(v);
    return 0;
}
