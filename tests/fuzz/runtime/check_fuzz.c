/* Fuzz TC_CHECK's comparison of the call descriptions ranks exchange (runtime/src/check.c,
 * tc_rt_check_compare): input byte 0 picks the rank count (1..64), the rest are the ranks'
 * 32-byte descriptions (missing bytes zero).
 *
 * Properties: TC_OK exactly when every description equals rank 0's (all_to_all_v's, op
 * TC_RT_CHECK_OP_PAIRS on both: equal but for their sums, and the ranks' sums agree), else
 * TC_ERR_MISMATCH whose text names the first rank that disagrees and counts them right (or says
 * the pairs' counts disagree); descriptions with values no rank could send are described without
 * reading outside a name table (ASan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/src/check_desc.h"
#include "tcomms/base/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int n = data[0] % 64 + 1, bad = 0, first = -1;
    size_t len = (size_t)n * TC_RT_CHECK_DESC_LEN;
    uint8_t *d = calloc(1, len); /* exactly n descriptions: ASan guards the end */
    char want[64];
    if (d == NULL)
        abort();
    memcpy(d, data + 1, size - 1 < len ? size - 1 : len);
    int32_t op0;
    memcpy(&op0, d + 8, sizeof(op0));
    uint64_t sent = 0, received = 0;
    for (int q = 0; q < n; q++) {
        uint8_t one[TC_RT_CHECK_DESC_LEN];
        uint64_t s, r;
        int32_t op;
        memcpy(one, d + (size_t)q * TC_RT_CHECK_DESC_LEN, sizeof(one));
        memcpy(&op, one + 8, sizeof(op));
        memcpy(&s, one + 16, sizeof(s));
        memcpy(&r, one + 24, sizeof(r));
        sent += s, received += r;
        if (op0 == TC_RT_CHECK_OP_PAIRS && op == TC_RT_CHECK_OP_PAIRS) /* sums compared apart */
            memcpy(one + 16, d + 16, 16);
        if (q == 0 || memcmp(one, d, TC_RT_CHECK_DESC_LEN) == 0)
            continue;
        bad++;
        if (first < 0)
            first = q;
    }
    tc_status_t st = tc_rt_check_compare(d, n, "fuzz", 7);
    int pairs_bad = bad == 0 && op0 == TC_RT_CHECK_OP_PAIRS && sent != received;
    if (pairs_bad && (st != TC_ERR_MISMATCH || !strstr(tc_last_error(), "counts disagree")))
        abort();
    if (bad == 0 && !pairs_bad && st != TC_OK)
        abort();
    if (bad > 0) {
        if (st != TC_ERR_MISMATCH)
            abort();
        snprintf(want, sizeof(want), "'fuzz': %d rank(s) disagree", bad);
        if (strstr(tc_last_error(), want) == NULL)
            abort();
        snprintf(want, sizeof(want), "; rank %d called ", first);
        if (strstr(tc_last_error(), want) == NULL)
            abort();
    }
    free(d);
    return 0;
}
