/* A lane's messages moved out of its slots by their reader (shm_lane.h, tc_shm_lane_spill):
 * a list in this process's memory, each message as it lay in its slot but only its payload's
 * bytes long. Messages are found by tag, so their order does not matter. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/shm_lane.h"

struct tc_shm_lane_spilled {
    struct tc_shm_lane_spilled *next;
    size_t bytes;            /* of data: what spilled_bytes counts for it */
    tc_shm_lane_slot_t slot; /* of its data, only the message's bytes are allocated */
};

static struct tc_shm_lane_spilled *spilled_of(const tc_shm_lane_slot_t *slot)
{
    return (struct tc_shm_lane_spilled *)(void *)((uintptr_t)slot -
                                                  offsetof(struct tc_shm_lane_spilled, slot));
}

/* Move the message in slot @p i, if there is one (*moved_p counted). */
static tc_status_t spill_one(tc_tp_shm_lane_t *lane, unsigned i, size_t cap, unsigned cap_count,
                             int *moved_p)
{
    const tc_shm_lane_slot_t *slot = tc_shm_lane_pending(lane, i);
    if (!slot)
        return TC_OK;
    /* the writer may withdraw it meanwhile: what is read here is what moves */
    uint64_t len = tc_shm_lane_len(slot);
    uint64_t bytes = len == TC_SHM_LANE_WITHDRAWN ? 0 : len;
    if (bytes > tc_shm_lane_payload(i))
        return TC_OK; /* left for its reader to refuse */
    if (lane->spilled_bytes + bytes > cap || lane->spilled_count >= cap_count)
        return TC_ERR_NO_RESOURCE;
    struct tc_shm_lane_spilled *m =
        malloc(offsetof(struct tc_shm_lane_spilled, slot.data) + (size_t)bytes);
    if (!m)
        return TC_ERR_NO_MEMORY;
    m->slot.seq = slot->seq;
    m->slot.tag = slot->tag;
    m->slot.len = len;
    m->bytes = (size_t)bytes;
    memcpy(m->slot.data, slot->data, (size_t)bytes);
    if (tc_shm_lane_len(slot) == TC_SHM_LANE_WITHDRAWN)
        m->slot.len = TC_SHM_LANE_WITHDRAWN; /* withdrawn while copied */
    m->next = lane->spilled;
    lane->spilled = m;
    lane->spilled_bytes += bytes;
    lane->spilled_count++;
    tc_shm_lane_release(lane, slot);
    (*moved_p)++;
    return TC_OK;
}

tc_status_t tc_shm_lane_spill(tc_tp_shm_lane_t *lane, size_t cap, unsigned cap_count, int *moved_p)
{
    int moved = 0;
    tc_status_t st = TC_OK;
    for (unsigned k = TC_SHM_LANE_KINDS; k-- > 0 && st == TC_OK;) { /* big ones first */
        /* in the writer's order, from the slot its next message takes: where the reader looks
         * next (rx_next) stays right */
        unsigned first = tc_shm_lane_first(k), n = tc_shm_lane_count(k);
        unsigned from = lane->rx_next[k] - first;
        for (unsigned j = 0; j < n && st == TC_OK; j++)
            st = spill_one(lane, first + (from + j) % n, cap, cap_count, &moved);
    }
    if (moved_p)
        *moved_p = moved;
    lane->spill_refusals += st != TC_OK;
    return st;
}

const tc_shm_lane_slot_t *tc_shm_lane_spilled_find(const tc_tp_shm_lane_t *lane, uint64_t tag)
{
    for (const struct tc_shm_lane_spilled *m = lane->spilled; m; m = m->next)
        if (m->slot.tag == tag)
            return &m->slot;
    return NULL;
}

const tc_shm_lane_slot_t *tc_shm_lane_spilled_next(const tc_tp_shm_lane_t *lane,
                                                   const tc_shm_lane_slot_t *slot)
{
    const struct tc_shm_lane_spilled *m = slot ? spilled_of(slot)->next : lane->spilled;
    return m ? &m->slot : NULL;
}

void tc_shm_lane_spilled_release(tc_tp_shm_lane_t *lane, const tc_shm_lane_slot_t *slot)
{
    struct tc_shm_lane_spilled *m = spilled_of(slot);
    for (struct tc_shm_lane_spilled **pp = &lane->spilled; *pp; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            lane->spilled_bytes -= m->bytes;
            lane->spilled_count--;
            free(m);
            return;
        }
    }
}

void tc_shm_lane_spilled_free(tc_tp_shm_lane_t *lane)
{
    while (lane->spilled) {
        struct tc_shm_lane_spilled *m = lane->spilled;
        lane->spilled = m->next;
        free(m);
    }
    lane->spilled_bytes = 0;
    lane->spilled_count = 0;
}
