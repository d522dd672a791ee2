/**
 * @file shm_lane.h
 * @brief Lanes: the small-message slots of an shm pair segment (docs/runtime.md, "small path").
 *
 * Besides its two rings, every pair segment holds one lane per direction: a
 * line of acknowledgements written by the lane's reader, then
 * TC_SHM_LANE_SLOTS slots of TC_SHM_LANE_SLOT bytes written by its writer.
 * A slot is a sequence number, a tag, a length and up to TC_SHM_LANE_PAYLOAD
 * bytes of payload, starting in the sequence number's own cache line (so a
 * payload of up to TC_SHM_LANE_INLINE bytes moves as one line).
 *
 * The protocol, single writer and single reader per lane:
 * - message k (k = 1, 2, ...) goes into slot (k - 1) % TC_SHM_LANE_SLOTS;
 * - the writer may fill that slot once the reader acknowledged message
 *   k - TC_SHM_LANE_SLOTS (acquire load of the ack word), writes tag, length
 *   and payload, then stores k into the slot's sequence word with release;
 * - the reader waits until the slot's sequence word (acquire load) is k,
 *   reads the payload, then stores k into the ack word with release.
 * So a writer never overwrites what its reader has not finished reading, and
 * at most TC_SHM_LANE_SLOTS messages are in flight per direction. No lock,
 * no system call. The runtime's small-message path is the only user; the
 * rings and their messages are independent of the lanes.
 *
 * The lane's counters live in the endpoint (one process, one writer and one
 * reader per lane); a context is not thread-safe, neither is a lane.
 */
#ifndef TCOMMS_TRANSPORT_SHM_LANE_H
#define TCOMMS_TRANSPORT_SHM_LANE_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Slots per lane (messages in flight per direction). */
#define TC_SHM_LANE_SLOTS 4
/** @brief Bytes of a slot's header: sequence number, tag, length. */
#define TC_SHM_LANE_HDR 24
/** @brief Largest payload of one slot. */
#define TC_SHM_LANE_PAYLOAD 8192
/** @brief Payload bytes that share the cache line of the sequence number. */
#define TC_SHM_LANE_INLINE (64 - TC_SHM_LANE_HDR)
/** @brief Bytes of a slot (whole cache lines). */
#define TC_SHM_LANE_SLOT ((size_t)(TC_SHM_LANE_HDR + TC_SHM_LANE_PAYLOAD + 63) / 64 * 64)
/** @brief Bytes of one lane in the segment: the ack line and the slots. */
#define TC_SHM_LANE_BYTES (64 + (size_t)TC_SHM_LANE_SLOTS * TC_SHM_LANE_SLOT)

/** @brief A slot as it lies in the segment. */
typedef struct tc_shm_lane_slot {
    uint64_t seq; /**< message number held (0: none yet); release-stored last */
    uint64_t tag; /**< the user's identification of the message */
    uint64_t len; /**< payload bytes */
    unsigned char data[TC_SHM_LANE_PAYLOAD];
} tc_shm_lane_slot_t;

/** @brief Both lanes of a pair, as this side sees them. */
typedef struct tc_tp_shm_lane {
    unsigned char *tx;        /**< our slots (we write, the peer reads) */
    const uint64_t *tx_acked; /**< messages of ours the peer has read (it writes) */
    const unsigned char *rx;  /**< the peer's slots */
    uint64_t *rx_acked;       /**< messages of the peer's we have read (we write) */
    uint64_t sent;            /**< messages written into tx */
    uint64_t acked;           /**< last value read from *tx_acked */
    uint64_t recvd;           /**< messages read from rx */
} tc_tp_shm_lane_t;

/**
 * @brief The lanes of the shm endpoint @p ep, for its owner's small-message path.
 * @return TC_ERR_INVALID_ARG for an endpoint of another backend,
 *         TC_ERR_INVALID_STATE while it is not connected yet,
 *         the endpoint's failure once it failed.
 */
tc_status_t tc_tp_shm_ep_lane(tc_tp_ep_t *ep, tc_tp_shm_lane_t **lane_p);

/** @brief Point @p lane at two lane areas of TC_SHM_LANE_BYTES (ours, the peer's); counters 0. */
static inline void tc_shm_lane_init(tc_tp_shm_lane_t *lane, unsigned char *tx_area,
                                    unsigned char *rx_area)
{
    lane->tx = tx_area + 64;
    lane->tx_acked = (const uint64_t *)(void *)tx_area;
    lane->rx = rx_area + 64;
    lane->rx_acked = (uint64_t *)(void *)rx_area;
    lane->sent = lane->acked = lane->recvd = 0;
}

/** @brief The slot the next message goes to, or NULL while the reader holds it (all slots full). */
static inline tc_shm_lane_slot_t *tc_shm_lane_tx_slot(tc_tp_shm_lane_t *lane)
{
    if (lane->sent - lane->acked >= TC_SHM_LANE_SLOTS) {
        lane->acked = __atomic_load_n(lane->tx_acked, __ATOMIC_ACQUIRE);
        if (lane->sent - lane->acked >= TC_SHM_LANE_SLOTS)
            return NULL;
    }
    return (tc_shm_lane_slot_t *)(void *)(lane->tx + (size_t)(lane->sent % TC_SHM_LANE_SLOTS) *
                                                         TC_SHM_LANE_SLOT);
}

/** @brief Publish the slot tc_shm_lane_tx_slot() gave, its payload written: @p len bytes. */
static inline void tc_shm_lane_post(tc_tp_shm_lane_t *lane, tc_shm_lane_slot_t *slot, uint64_t tag,
                                    uint64_t len)
{
    slot->tag = tag;
    slot->len = len;
    __atomic_store_n(&slot->seq, ++lane->sent, __ATOMIC_RELEASE);
}

/** @brief The peer's next message once it is there, else NULL. Check tag and len before use. */
static inline const tc_shm_lane_slot_t *tc_shm_lane_peek(const tc_tp_shm_lane_t *lane)
{
    const tc_shm_lane_slot_t *slot =
        (const tc_shm_lane_slot_t *)(const void *)(lane->rx +
                                                   (size_t)(lane->recvd % TC_SHM_LANE_SLOTS) *
                                                       TC_SHM_LANE_SLOT);
    if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != lane->recvd + 1)
        return NULL;
    return slot;
}

/** @brief Done with the message tc_shm_lane_peek() gave: its slot may be reused. */
static inline void tc_shm_lane_release(tc_tp_shm_lane_t *lane)
{
    __atomic_store_n(lane->rx_acked, ++lane->recvd, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_SHM_LANE_H */
