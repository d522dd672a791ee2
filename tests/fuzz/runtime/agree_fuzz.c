/* Fuzz the shrink agreement (runtime/include/tcomms/runtime/agree.h): one rank's state machine
 * fed arbitrary messages from its neighbours, round after round.
 *
 * Input: u8 ranks - 1 (1..64), u8 this rank, u8 flags (bit 0: the sparse graph r +- 2^k, else
 * all-to-all; bits 1..7: failures learnt first among ranks 1..7), then per round and per
 * neighbour the rank exchanges with, one control byte and the message: control 0: the next
 * bytes as they are (up to the largest message; its length is what was taken); 1 or 2: a
 * well-formed SET or DECIDE of this round whose id, count and ranks come from the input (each
 * rank one input byte above the last); 3: nothing came (the neighbour failed). Missing input
 * is nothing.
 *
 * Properties: every round's own message is well formed (kind, round, id, size, count, the set
 * it names, the end mark); the known-failed set only grows and those ranks are not exchanged
 * with again; the phase only moves forward; a rank decides its own failed set or adopts a
 * DECIDE; the end of a round fails only with TC_ERR_PROTOCOL (malformed), TC_ERR_INTERNAL
 * (decisions that differ, which a hostile peer can cause) or TC_ERR_PEER_FAILED (every
 * neighbour gone, on the sparse graph); and nothing is read or written out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/log.h"
#include "tcomms/runtime/agree.h"

#define SET 0x53455432u
#define DECIDE 0x44454332u
#define END 0x454e4421u
#define MAX_ROUNDS 96

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void check_own_msg(const tc_rt_agree_t *a)
{
    int last = a->phase == TC_RT_AGREE_LAST;
    const tc_rt_rankset_t *set = last ? &a->decided : &a->dead;
    uint32_t kind = last ? DECIDE : SET;
    if (a->msg_len != 24 + 4 * (size_t)set->n || a->msg_len > a->msg_cap || get32(a->msg) != kind ||
        get32(a->msg + 4) != a->round || get32(a->msg + 8) != a->next_id ||
        get32(a->msg + 12) != (uint32_t)a->g.size || get32(a->msg + 16) != (uint32_t)set->n ||
        get32(a->msg + 20 + 4 * (size_t)set->n) != (kind ^ (uint32_t)set->n ^ END))
        abort();
    for (int k = 0; k < set->n; k++)
        if (get32(a->msg + 20 + 4 * (size_t)k) != (uint32_t)set->r[k] ||
            (k > 0 && set->r[k] <= set->r[k - 1]) || set->r[k] >= a->g.size)
            abort();
    for (int i = 0; i < a->npeers; i++) {
        int q = a->peers[i];
        int dead = 0;
        for (int k = 0; k < a->dead.n; k++)
            dead |= a->dead.r[k] == q;
        if (a->to[i] && (q == a->rank || dead))
            abort();
    }
}

/* A well-formed message from the input into @p m; its length. */
static size_t make_msg(const tc_rt_agree_t *a, uint32_t kind, const uint8_t *data, size_t size,
                       size_t *pos, uint8_t *m)
{
    uint32_t id = 0, count = 0;
    if (*pos + 5 <= size) {
        memcpy(&id, data + *pos, 4);
        count = data[*pos + 4] % ((uint32_t)a->g.size + 1);
        *pos += 5;
    }
    uint32_t r = 0, n = 0;
    for (uint32_t k = 0; k < count && *pos < size; k++) {
        r += n ? (uint32_t)data[(*pos)++] % 4 + 1 : (uint32_t)data[(*pos)++] % 4;
        if (r >= (uint32_t)a->g.size)
            break;
        memcpy(m + 20 + 4 * (size_t)n++, &r, 4);
    }
    uint32_t hdr[5] = {kind, a->round, id, (uint32_t)a->g.size, n}, end = kind ^ n ^ END;
    memcpy(m, hdr, 20);
    memcpy(m + 20 + 4 * (size_t)n, &end, 4);
    return 24 + 4 * (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tc_rt_agree_graph_t g;
    tc_rt_agree_t a;
    if (size < 3)
        return 0;
    tc_log_configure("none");
    int n = data[0] % 64 + 1, rank = data[1] % n;
    if (tc_rt_agree_graph(n, data[2] & 1 ? 1 : n, &g) != TC_OK ||
        tc_rt_agree_init(&a, &g, rank, 100) != TC_OK)
        abort();
    for (int r = 1; r < 8 && r < n; r++)
        if (data[2] >> r & 1)
            tc_rt_agree_learn(&a, r);
    size_t pos = 3;
    /* exactly the room a receive has: ASan guards the end of each */
    uint8_t **room = calloc((size_t)a.npeers + 1, sizeof(*room));
    const uint8_t **theirs = calloc((size_t)a.npeers + 1, sizeof(*theirs));
    size_t *lens = calloc((size_t)a.npeers + 1, sizeof(*lens));
    int32_t *dead_before = malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!room || !theirs || !lens || !dead_before)
        abort();
    for (int i = 0; i < a.npeers; i++)
        if (!(room[i] = malloc(a.msg_cap)))
            abort();
    for (int round = 0; round < MAX_ROUNDS && a.phase != TC_RT_AGREE_DONE; round++) {
        tc_rt_agree_phase_t phase = a.phase;
        if (tc_rt_agree_begin(&a) != TC_OK)
            abort();
        check_own_msg(&a);
        int ndead = a.dead.n;
        memcpy(dead_before, a.dead.r, (size_t)ndead * sizeof(int32_t));
        for (int i = 0; i < a.npeers; i++) {
            theirs[i] = NULL;
            lens[i] = 0;
            if (!a.to[i] || pos >= size)
                continue;
            int ctl = data[pos++] & 3;
            if (ctl == 3)
                continue;
            if (ctl == 0) {
                size_t k = size - pos < a.msg_cap ? size - pos : a.msg_cap;
                memcpy(room[i], data + pos, k);
                pos += k;
                lens[i] = k;
            } else {
                lens[i] = make_msg(&a, ctl == 1 ? SET : DECIDE, data, size, &pos, room[i]);
            }
            theirs[i] = room[i];
        }
        tc_status_t st = tc_rt_agree_end(&a, theirs, lens);
        if (st != TC_OK) {
            if (st != TC_ERR_PROTOCOL && st != TC_ERR_INTERNAL &&
                !(st == TC_ERR_PEER_FAILED && g.sparse))
                abort();
            break;
        }
        for (int k = 0; k < ndead; k++) {
            int kept = 0;
            for (int j = 0; j < a.dead.n; j++)
                kept |= a.dead.r[j] == dead_before[k];
            if (!kept)
                abort(); /* a failure is never forgotten */
        }
        if (a.phase < phase)
            abort();
        if (a.phase != TC_RT_AGREE_DECIDING && phase == TC_RT_AGREE_DECIDING &&
            a.adopted_from < 0 &&
            (a.decided.n != a.dead.n ||
             (a.dead.n && memcmp(a.decided.r, a.dead.r, (size_t)a.dead.n * sizeof(int32_t)) != 0)))
            abort(); /* decided on its own: its set is the failed set */
        if (a.adopted_from >= 0) {
            int i = tc_rt_agree_peer_index(&a, a.adopted_from);
            if (a.adopted_from == rank || i < 0 || !a.got_decide[i])
                abort();
        }
    }
    for (int i = 0; i < a.npeers; i++)
        free(room[i]);
    free(room);
    free(theirs);
    free(lens);
    free(dead_before);
    tc_rt_agree_free(&a);
    return 0;
}
