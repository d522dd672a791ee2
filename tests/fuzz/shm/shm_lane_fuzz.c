/* Fuzz the lane reader (tcomms/transport/shm_lane.h) against slots a peer writes at will: the
 * input is records of 6 bytes, each either a write of the peer (slot, generation, tag, length,
 * fill byte) or a step of the reader: find a tag and release it, or move the slots' messages
 * out (tc_shm_lane_spill, no bound) and check what moved.
 *
 * Properties: a message found carries the tag asked for and is pending or moved; the reader
 * reads at most its kind's payload of a slot (ASan: the lane area is exactly TC_SHM_LANE_BYTES);
 * a move takes every pending message except those whose length exceeds their slot's payload,
 * each with its tag, length and bytes as the slot held them, and frees their slots; a released
 * message is found no more (in a slot: unless the peer wrote it again); a lane is full exactly
 * when its big slots are all pending. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/transport/shm_lane.h"

#define TAGS 8

static unsigned char *g_area[2]; /* ours (unused by the reader), the peer's */

/* Slot @p i as the peer writes it. */
static tc_shm_lane_slot_t *peer_slot(unsigned i)
{
    return (tc_shm_lane_slot_t *)(void *)(g_area[1] + TC_SHM_LANE_ACK_BYTES + tc_shm_lane_off(i));
}

static void peer_write(const uint8_t *r)
{
    unsigned i = r[1] % TC_SHM_LANE_SLOTS;
    tc_shm_lane_slot_t *slot = peer_slot(i);
    uint64_t len = (uint64_t)r[3] | (uint64_t)r[4] << 8 | (uint64_t)(r[0] & 0x3) << 16;
    if (r[0] & 0x4)
        len = TC_SHM_LANE_WITHDRAWN;
    slot->tag = r[2] % TAGS;
    slot->len = len;
    memset(slot->data, r[5], (size_t)(len < tc_shm_lane_payload(i) ? len : tc_shm_lane_payload(i)));
    slot->seq = r[2] >> 3; /* small generations: sometimes what the reader consumed already */
}

/* The reader reads a message as the runtime does: its length, then that many bytes of it,
 * bounded by the largest payload (the runtime asks for at most that). */
static void reader_use(const tc_shm_lane_slot_t *m)
{
    uint64_t len = tc_shm_lane_len(m);
    volatile unsigned char sum = 0;
    if (len <= TC_SHM_LANE_PAYLOAD)
        for (uint64_t b = 0; b < len; b += 64)
            sum ^= m->data[b];
    (void)sum;
}

static void reader_find(tc_tp_shm_lane_t *lane, uint64_t tag)
{
    const tc_shm_lane_slot_t *m = tc_shm_lane_find(lane, tag);
    if (!m)
        return;
    if (m->tag != tag)
        abort();
    reader_use(m);
    int moved = tc_shm_lane_spilled_find(lane, tag) == m;
    tc_shm_lane_release(lane, m);
    /* a released message is found no more: in the slots it is consumed (the peer wrote no
     * other since), a moved one is gone (another moved with the same tag may remain) */
    if (!moved && tc_shm_lane_find(lane, tag) == m)
        abort();
    for (const tc_shm_lane_slot_t *x = tc_shm_lane_spilled_next(lane, NULL); moved && x;
         x = tc_shm_lane_spilled_next(lane, x))
        if (x == m)
            abort();
}

static void reader_spill(tc_tp_shm_lane_t *lane)
{
    static tc_shm_lane_slot_t before[TC_SHM_LANE_SLOTS]; /* headers and first bytes */
    int pending[TC_SHM_LANE_SLOTS], want = 0, stays = 0;
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++) {
        const tc_shm_lane_slot_t *s = tc_shm_lane_pending(lane, i);
        pending[i] = s != NULL;
        if (!s)
            continue;
        memcpy(&before[i], s, TC_SHM_LANE_HDR + 8);
        uint64_t len = s->len;
        if (len != TC_SHM_LANE_WITHDRAWN && len > tc_shm_lane_payload(i))
            stays++;
        else
            want++;
    }
    int full = 1;
    for (unsigned i = TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL; i < TC_SHM_LANE_SLOTS; i++)
        full &= pending[i];
    if (tc_shm_lane_rx_full(lane) != full)
        abort();
    const tc_shm_lane_slot_t *head = tc_shm_lane_spilled_next(lane, NULL);
    int moved = -1;
    if (tc_shm_lane_spill(lane, SIZE_MAX, UINT_MAX, &moved) != TC_OK || moved != want)
        abort();
    int left = 0;
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++)
        left += tc_shm_lane_pending(lane, i) != NULL;
    if (left != stays)
        abort();
    /* the new ones come first in the list, each as its slot held it */
    int seen = 0;
    for (const tc_shm_lane_slot_t *m = tc_shm_lane_spilled_next(lane, NULL); m && m != head;
         m = tc_shm_lane_spilled_next(lane, m)) {
        int match = 0;
        for (unsigned i = 0; i < TC_SHM_LANE_SLOTS && !match; i++) {
            uint64_t len = before[i].len;
            size_t cmp = len == TC_SHM_LANE_WITHDRAWN ? 0 : len < 8 ? (size_t)len : 8;
            match = pending[i] && before[i].tag == m->tag && before[i].len == m->len &&
                    memcmp(before[i].data, m->data, cmp) == 0;
        }
        if (!match)
            abort();
        reader_use(m);
        seen++;
    }
    if (seen != moved)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_area[0]) {
        for (int i = 0; i < 2; i++)
            if (posix_memalign((void **)&g_area[i], 64, TC_SHM_LANE_BYTES) != 0)
                abort();
    }
    memset(g_area[0], 0, TC_SHM_LANE_BYTES);
    memset(g_area[1], 0, TC_SHM_LANE_BYTES);
    tc_tp_shm_lane_t lane;
    tc_shm_lane_init(&lane, g_area[0], g_area[1]);
    for (size_t at = 0; at + 6 <= size; at += 6) {
        const uint8_t *r = data + at;
        switch (r[0] >> 6) {
        case 0:
        case 1:
            peer_write(r);
            break;
        case 2:
            reader_find(&lane, r[1] % TAGS);
            break;
        default:
            reader_spill(&lane);
            break;
        }
    }
    /* everything moved is released, found by its tag */
    for (uint64_t t = 0; t < TAGS; t++)
        while (tc_shm_lane_spilled_find(&lane, t))
            tc_shm_lane_release(&lane, tc_shm_lane_spilled_find(&lane, t));
    if (tc_shm_lane_spilled_next(&lane, NULL))
        abort();
    tc_shm_lane_spilled_free(&lane);
    return 0;
}
