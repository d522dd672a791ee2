/* The shrink agreement as a state machine (see agree.h; the argument for its
 * correctness is in docs/fault_tolerance.md).
 *
 * A message: u32 kind, u32 round, u32 next free communicator id, u32 size;
 * then one bit per rank (set: failed), padding bits zero. */
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/status.h"
#include "tcomms/runtime/agree.h"

enum { MSG_NONE = 0, MSG_SET = 0x53455431u, MSG_DECIDE = 0x44454331u }; /* "SET1", "DEC1" */

#define MSG_HDR 16

static int bit_get(const uint8_t *bits, int r)
{
    return (bits[r >> 3] >> (r & 7)) & 1;
}

/* Whether the bits of @p bits equal the bytes of @p set (n ranks). */
static int same_set(const uint8_t *bits, const uint8_t *set, int n)
{
    for (int r = 0; r < n; r++)
        if (bit_get(bits, r) != set[r])
            return 0;
    return 1;
}

tc_status_t tc_rt_agree_init(tc_rt_agree_t *a, int size, int rank, uint32_t next_id)
{
    memset(a, 0, sizeof(*a));
    if (size < 1 || rank < 0 || rank >= size)
        return tc_error_set(TC_ERR_INVALID_ARG, "agreement: rank %d of %d", rank, size);
    a->size = size;
    a->rank = rank;
    a->msg_len = MSG_HDR + ((size_t)size + 7) / 8;
    a->next_id = next_id;
    a->adopted_from = -1;
    a->dead = calloc((size_t)size, 4);
    a->msg = malloc(a->msg_len);
    if (!a->dead || !a->msg) {
        tc_rt_agree_free(a);
        return tc_error_set(TC_ERR_NO_MEMORY, "agreement state for %d ranks", size);
    }
    a->decided = a->dead + size;
    a->got_decide = a->decided + size;
    a->to = a->got_decide + size;
    return TC_OK;
}

void tc_rt_agree_free(tc_rt_agree_t *a)
{
    free(a->dead);
    free(a->msg);
    a->dead = a->decided = a->got_decide = a->to = a->msg = NULL;
}

int tc_rt_agree_learn(tc_rt_agree_t *a, int r)
{
    if (r < 0 || r >= a->size || r == a->rank || a->dead[r])
        return 0;
    a->dead[r] = 1;
    a->learnt++;
    return 1;
}

static void msg_write(tc_rt_agree_t *a, uint32_t kind, const uint8_t *set)
{
    uint32_t hdr[4] = {kind, a->round, a->next_id, (uint32_t)a->size};
    memset(a->msg, 0, a->msg_len);
    memcpy(a->msg, hdr, MSG_HDR);
    for (int r = 0; r < a->size; r++)
        if (set[r])
            a->msg[MSG_HDR + (r >> 3)] |= (uint8_t)(1u << (r & 7));
}

void tc_rt_agree_begin(tc_rt_agree_t *a)
{
    a->round++;
    a->learnt = 0;
    int last = a->phase == TC_RT_AGREE_LAST;
    for (int q = 0; q < a->size; q++)
        a->to[q] = q != a->rank && !a->dead[q] && (!last || (!a->decided[q] && !a->got_decide[q]));
    msg_write(a, last ? MSG_DECIDE : MSG_SET, last ? a->decided : a->dead);
}

/* Peer @p q's message: its kind (MSG_NONE: none came), or an error naming
 * the peer when it is malformed. */
static tc_status_t msg_check(const tc_rt_agree_t *a, const uint8_t *m, int q, uint32_t *kind_p)
{
    uint32_t hdr[4];
    memcpy(hdr, m, MSG_HDR);
    *kind_p = hdr[0];
    int n = a->size, pad_ok = 1;
    if (hdr[0] == MSG_NONE) {
        for (size_t i = 0; i < a->msg_len; i++)
            pad_ok &= m[i] == 0;
        if (pad_ok)
            return TC_OK;
    }
    for (int r = n; r < ((n + 7) & ~7); r++)
        pad_ok &= !bit_get(m + MSG_HDR, r);
    if ((hdr[0] != MSG_SET && hdr[0] != MSG_DECIDE) || hdr[1] != a->round ||
        hdr[3] != (uint32_t)n || !pad_ok)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "rank %d sent a malformed agreement message in round %u "
                            "(kind 0x%08x, round %u, size %u; want round %u, size %d)",
                            q, a->round, hdr[0], hdr[1], hdr[3], a->round, n);
    return TC_OK;
}

/* Peer @p q's message of the round, its kind (MSG_NONE: none came) and id. */
static tc_status_t msg_read(const tc_rt_agree_t *a, const uint8_t *theirs, int q,
                            const uint8_t **m_p, uint32_t *kind_p, uint32_t *id_p)
{
    const uint8_t *m = theirs + (size_t)q * a->msg_len;
    tc_status_t st = msg_check(a, m, q, kind_p);
    memcpy(id_p, m + 8, 4);
    *m_p = m;
    return st;
}

/* The last round: only DECIDE messages are compared (SETs come from ranks
 * still deciding, which adopt this rank's DECIDE). */
static tc_status_t end_last(tc_rt_agree_t *a, const uint8_t *theirs)
{
    for (int q = 0; q < a->size; q++) {
        const uint8_t *m;
        uint32_t kind, id;
        tc_status_t st;
        if (!a->to[q])
            continue;
        if ((st = msg_read(a, theirs, q, &m, &kind, &id)) != TC_OK)
            return st;
        if (kind == MSG_DECIDE && (id != a->next_id || !same_set(m + MSG_HDR, a->decided, a->size)))
            return tc_error_set(TC_ERR_INTERNAL,
                                "rank %d decided a different set from this rank's in round %u", q,
                                a->round);
    }
    a->phase = TC_RT_AGREE_DONE;
    return TC_OK;
}

tc_status_t tc_rt_agree_end(tc_rt_agree_t *a, const uint8_t *theirs)
{
    if (a->phase == TC_RT_AGREE_LAST)
        return end_last(a, theirs);
    int n = a->size, same = 1;
    uint32_t round_id = a->next_id;
    for (int q = 0; q < n; q++) {
        const uint8_t *m;
        uint32_t kind, id;
        tc_status_t st;
        if (!a->to[q])
            continue;
        if ((st = msg_read(a, theirs, q, &m, &kind, &id)) != TC_OK)
            return st;
        if (kind == MSG_NONE) { /* lost in the round */
            a->dead[q] = 1;
            same = 0;
            continue;
        }
        if (kind == MSG_DECIDE) {
            a->got_decide[q] = 1;
            if (a->adopted_from < 0) {
                a->adopted_from = q;
                a->next_id = id;
                for (int r = 0; r < n; r++)
                    a->decided[r] = (uint8_t)bit_get(m + MSG_HDR, r);
            } else if (id != a->next_id || !same_set(m + MSG_HDR, a->decided, n)) {
                return tc_error_set(TC_ERR_INTERNAL,
                                    "ranks %d and %d sent different decisions in round %u",
                                    a->adopted_from, q, a->round);
            }
            continue;
        }
        if (id > round_id)
            round_id = id;
        /* compared with the set this rank sent, then merged (this rank too,
         * when another counts it as failed: the caller finds itself outside) */
        same &= memcmp(m + MSG_HDR, a->msg + MSG_HDR, a->msg_len - MSG_HDR) == 0;
        for (int r = 0; r < n; r++)
            a->dead[r] |= (uint8_t)bit_get(m + MSG_HDR, r);
    }
    if (a->adopted_from >= 0) {
        a->phase = TC_RT_AGREE_LAST;
    } else {
        a->next_id = round_id;
        if (same && a->learnt == 0) { /* a failure learnt during the round also defers */
            memcpy(a->decided, a->dead, (size_t)n);
            a->phase = TC_RT_AGREE_LAST;
        }
    }
    return TC_OK;
}
