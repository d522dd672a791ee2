/* Fuzz the shrink agreement (runtime/include/tcomms/runtime/agree.h): one rank's state machine
 * fed arbitrary messages from its peers, round after round.
 *
 * Input: u8 ranks - 1 (1..64), u8 this rank, u8 failures learnt first (bits of the first
 * eight ranks), then per round and per peer the rank exchanges with, one control byte and the
 * message: control 0: the next msg_len input bytes as they are; 1 or 2: a well-formed SET or
 * DECIDE of this round whose id and set bits come from the input; 3: nothing came (the peer
 * failed). Missing input is nothing.
 *
 * Properties: every round's own message is well formed (kind, round, size, the set it names,
 * zero padding); the known-failed set only grows and those ranks are not exchanged with again;
 * the phase only moves forward; a rank decides its own failed set or adopts a DECIDE; the end
 * of a round fails only with TC_ERR_PROTOCOL (malformed) or TC_ERR_INTERNAL (decisions that
 * differ, which a hostile peer can cause); and nothing is read or written out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/log.h"
#include "tcomms/runtime/agree.h"

#define SET 0x53455431u
#define DECIDE 0x44454331u
#define MAX_ROUNDS 64

static void check_own_msg(const tc_rt_agree_t *a)
{
    uint32_t hdr[4];
    memcpy(hdr, a->msg, 16);
    int last = a->phase == TC_RT_AGREE_LAST;
    if (hdr[0] != (last ? DECIDE : SET) || hdr[1] != a->round || hdr[2] != a->next_id ||
        hdr[3] != (uint32_t)a->size)
        abort();
    const uint8_t *set = last ? a->decided : a->dead;
    for (int r = 0; r < ((a->size + 7) & ~7); r++) {
        int bit = (a->msg[16 + (r >> 3)] >> (r & 7)) & 1;
        if (bit != (r < a->size ? set[r] : 0))
            abort();
    }
    for (int q = 0; q < a->size; q++)
        if (a->to[q] && (q == a->rank || a->dead[q]))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tc_rt_agree_t a;
    if (size < 3)
        return 0;
    tc_log_configure("none");
    int n = data[0] % 64 + 1, rank = data[1] % n;
    if (tc_rt_agree_init(&a, n, rank, 100) != TC_OK)
        abort();
    for (int r = 0; r < 8 && r < n; r++)
        if (data[2] >> r & 1)
            tc_rt_agree_learn(&a, r);
    size_t pos = 3;
    uint8_t *theirs = calloc((size_t)n, a.msg_len); /* exactly n slots: ASan guards the end */
    uint8_t *dead_before = malloc((size_t)n);
    if (theirs == NULL || dead_before == NULL)
        abort();
    for (int round = 0; round < MAX_ROUNDS && a.phase != TC_RT_AGREE_DONE; round++) {
        tc_rt_agree_phase_t phase = a.phase;
        tc_rt_agree_begin(&a);
        check_own_msg(&a);
        memcpy(dead_before, a.dead, (size_t)n);
        memset(theirs, 0, (size_t)n * a.msg_len);
        for (int q = 0; q < n; q++) {
            if (!a.to[q] || pos >= size)
                continue;
            uint8_t *m = theirs + (size_t)q * a.msg_len;
            int ctl = data[pos++] & 3;
            size_t k = size - pos < a.msg_len ? size - pos : a.msg_len;
            if (ctl == 3)
                continue;
            memcpy(m, data + pos, k);
            pos += k;
            if (ctl != 0) {
                uint32_t hdr[4] = {ctl == 1 ? SET : DECIDE, a.round, 0, (uint32_t)n};
                memcpy(&hdr[2], m + 8, 4); /* the id from the input */
                memcpy(m, hdr, 16);
                for (int r = n; r < ((n + 7) & ~7); r++)
                    m[16 + (r >> 3)] &= (uint8_t)~(1u << (r & 7)); /* zero padding */
            }
        }
        tc_status_t st = tc_rt_agree_end(&a, theirs);
        if (st != TC_OK) {
            if (st != TC_ERR_PROTOCOL && st != TC_ERR_INTERNAL)
                abort();
            break;
        }
        for (int q = 0; q < n; q++)
            if (dead_before[q] && !a.dead[q])
                abort(); /* a failure is never forgotten */
        if (a.phase < phase)
            abort();
        if (a.phase != TC_RT_AGREE_DECIDING && phase == TC_RT_AGREE_DECIDING &&
            a.adopted_from < 0 && memcmp(a.decided, a.dead, (size_t)n) != 0)
            abort(); /* decided on its own: its set is the failed set */
        if (a.adopted_from >= 0 && (a.adopted_from == rank || !a.got_decide[a.adopted_from]))
            abort();
    }
    free(theirs);
    free(dead_before);
    tc_rt_agree_free(&a);
    return 0;
}
