/**
 * @file shm_lane.h
 * @brief Lanes: the small-message slots of an shm pair segment (docs/runtime.md, "small path").
 *
 * Besides its two rings, every pair segment holds one lane per direction:
 * acknowledgement lines written by the lane's reader, then slots of three
 * kinds written by its writer: TC_SHM_LANE_TINY tiny ones of two cache lines,
 * TC_SHM_LANE_SMALL small ones of TC_SHM_LANE_SMALL_SLOT bytes and
 * TC_SHM_LANE_BIG big ones of TC_SHM_LANE_SLOT bytes. A slot is a sequence
 * number, a tag, a length and its payload (up to TC_SHM_LANE_TINY_PAYLOAD,
 * TC_SHM_LANE_SMALL_PAYLOAD or TC_SHM_LANE_PAYLOAD bytes), starting in the
 * sequence number's own cache line (so a payload of up to TC_SHM_LANE_INLINE
 * bytes moves as one line). A message takes a slot of the smallest kind it
 * fits that has one free, else one of a larger kind: tiny messages (a rooted
 * collective's stream, whose root runs ahead of its readers) have
 * TC_SHM_LANE_SLOTS in flight for little memory, larger ones fewer.
 *
 * The protocol, single writer and single reader per lane; the slots are
 * matched by tag, not taken in order, so that messages of several
 * communicators (several threads of one process) never queue behind each
 * other:
 * - the ack lines hold one word per slot, written by the reader: the
 *   generation of the last message it consumed from that slot;
 * - the writer may fill slot i once the reader consumed everything it put
 *   there (ack word i equals the slot's generation); it writes tag, length
 *   and payload, then stores the next generation into the slot's sequence
 *   word with release. It keeps a copy of the ack words and reads the shared
 *   ones (acquire loads, the whole cache line of slot i's word at once) only
 *   when its copy says slot i is still held: the reader writes that line on
 *   every message, so reading it per message moved it between the cores
 *   twice per message; now once per 8 messages of a stream;
 * - the reader finds a message by its tag among the slots whose sequence
 *   word (acquire load) differs from what it consumed, of each kind the slot
 *   after the last one it consumed first (the writer fills each kind in turn), reads
 *   the payload, then stores that generation into ack word i with release.
 * So a writer never overwrites what its reader has not finished reading, at
 * most TC_SHM_LANE_SLOTS messages are in the slots per direction, and a tag must
 * identify one message (the runtime's tags carry a communicator id and a
 * sequence number). No lock, no system call.
 * - A writer whose operation failed withdraws its messages the reader has not
 *   consumed (tc_shm_lane_withdraw): their length becomes TC_SHM_LANE_WITHDRAWN.
 *   A reader that finds one, or sees it withdrawn once it used the payload
 *   (tc_shm_lane_len), consumes it and ends its own operation in error:
 *   both sides then fail, unless the reader had used the message first. The runtime's small-message
 * path is the only user; the rings and their messages are independent of the lanes.
 *
 * - A reader whose slots hold messages it cannot consume yet (operations it has
 *   not issued) while it waits for something else moves them into its own memory
 *   (tc_shm_lane_spill, up to a bound of bytes it sets): the writer, which may
 *   wait for a slot to post what that reader waits for, goes on.
 *   tc_shm_lane_find() looks there first. A message moved is consumed as far as
 *   its writer knows: a later withdrawal misses it.
 *
 * The lane's counters live in the endpoint (one process, one writer and one
 * reader per lane); a context is not thread-safe. Threads of one process that share a lane
 * take turns with tc_shm_lane_trylock() and tc_shm_lane_unlock(), holding it only to look for
 * a slot or a message and to use what they found (or to move messages out), never while
 * waiting.
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

/** @brief Bytes of a slot's header: sequence number, tag, length. */
#define TC_SHM_LANE_HDR 24
/** @brief Largest payload of one (big) slot. */
#define TC_SHM_LANE_PAYLOAD 8192
/** @brief Payload bytes that share the cache line of the sequence number. */
#define TC_SHM_LANE_INLINE (64 - TC_SHM_LANE_HDR)
/** @brief Bytes of a big slot (whole cache lines). */
#define TC_SHM_LANE_SLOT ((size_t)(TC_SHM_LANE_HDR + TC_SHM_LANE_PAYLOAD + 63) / 64 * 64)
/** @brief Tiny slots per lane (slot indices 0 to TC_SHM_LANE_TINY - 1): two cache lines each,
 *  payloads of up to TC_SHM_LANE_TINY_PAYLOAD bytes (up to TC_SHM_LANE_INLINE move as one line).
 *  32 of them cost 4.3 KiB and let the root of a rooted collective run that far ahead: at 4 ranks
 *  on 2 cores, an 8 B broadcast took 0.36-0.47 us without them, 0.29-0.37 with them of one line
 *  (bench/results/2026-12-04-lane-depth.txt); two lines take 64 B messages too
 *  (bench/results/2026-12-04-tiny-lines.txt). */
#define TC_SHM_LANE_TINY 32
/** @brief Bytes of a tiny slot. */
#define TC_SHM_LANE_TINY_SLOT ((size_t)128)
/** @brief Largest payload of a tiny slot. */
#define TC_SHM_LANE_TINY_PAYLOAD (TC_SHM_LANE_TINY_SLOT - TC_SHM_LANE_HDR)
/** @brief Small slots per lane (indices TC_SHM_LANE_TINY on). */
#define TC_SHM_LANE_SMALL 12
/** @brief Bytes of a small slot (whole cache lines). */
#define TC_SHM_LANE_SMALL_SLOT ((size_t)576)
/** @brief Largest payload of a small slot. */
#define TC_SHM_LANE_SMALL_PAYLOAD (TC_SHM_LANE_SMALL_SLOT - TC_SHM_LANE_HDR)
/** @brief Big slots per lane (the last indices): messages of more than TC_SHM_LANE_SMALL_PAYLOAD
 *  bytes in flight. */
#define TC_SHM_LANE_BIG 4
/** @brief Slots per lane (messages in flight per direction, at most). */
#define TC_SHM_LANE_SLOTS (TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL + TC_SHM_LANE_BIG)
/** @brief Kinds of slot: tiny, small, big, in this order in the lane. */
#define TC_SHM_LANE_KINDS 3
/** @brief Bytes of the acknowledgement words (whole cache lines). */
#define TC_SHM_LANE_ACK_BYTES ((size_t)(TC_SHM_LANE_SLOTS * 8 + 63) / 64 * 64)
/** @brief Bytes of one lane in the segment: the ack lines and the slots. */
#define TC_SHM_LANE_BYTES                                                                          \
    (TC_SHM_LANE_ACK_BYTES + (size_t)TC_SHM_LANE_TINY * TC_SHM_LANE_TINY_SLOT +                    \
     (size_t)TC_SHM_LANE_SMALL * TC_SHM_LANE_SMALL_SLOT +                                          \
     (size_t)TC_SHM_LANE_BIG * TC_SHM_LANE_SLOT)

/** @brief A slot as it lies in the segment. */
typedef struct tc_shm_lane_slot {
    uint64_t seq; /**< generation of the message held (0: none yet); release-stored last */
    uint64_t tag; /**< the user's identification of the message */
    uint64_t len; /**< payload bytes */
    unsigned char data[TC_SHM_LANE_PAYLOAD];
} tc_shm_lane_slot_t;

/** @brief Both lanes of a pair, as this side sees them. */
typedef struct tc_tp_shm_lane {
    unsigned char *tx;                   /**< our slots (we write, the peer reads) */
    const uint64_t *tx_acked;            /**< per slot: generation the peer consumed */
    const unsigned char *rx;             /**< the peer's slots */
    uint64_t *rx_acked;                  /**< per slot: generation we consumed (we write) */
    uint64_t tx_gen[TC_SHM_LANE_SLOTS];  /**< per slot: generation we last wrote */
    uint64_t tx_seen[TC_SHM_LANE_SLOTS]; /**< per slot: ack word as we last read it */
    uint64_t rx_done[TC_SHM_LANE_SLOTS]; /**< per slot: generation we last consumed */
    unsigned next[TC_SHM_LANE_KINDS]; /**< per kind: the slot tried first (its place in the kind) */
    unsigned rx_next[TC_SHM_LANE_KINDS]; /**< per kind: the slot looked at first (its index) */
    int busy; /**< atomic: 1 while a thread uses the counters (tc_shm_lane_trylock) */
    struct tc_shm_lane_spilled *spilled; /**< messages moved out of the slots (tc_shm_lane_spill) */
    size_t spilled_bytes;                /**< their payloads' bytes */
    unsigned spilled_count;              /**< how many */
    unsigned
        spill_refusals; /**< tc_shm_lane_spill calls that stopped short (a caller says so once) */
} tc_tp_shm_lane_t;

/**
 * @brief The lanes of the shm endpoint @p ep, for its owner's small-message path.
 * @return TC_ERR_INVALID_ARG for an endpoint of another backend,
 *         TC_ERR_INVALID_STATE while it is not connected yet,
 *         the endpoint's failure once it failed.
 */
tc_status_t tc_tp_shm_ep_lane(tc_tp_ep_t *ep, tc_tp_shm_lane_t **lane_p);

/**
 * @brief What tc_tp_shm_ep_lane() would reserve of /dev/shm for @p ep, and what is free there.
 * @param ep a connected shm endpoint.
 * @param cost_p bytes its lanes would take (0 once they are reserved).
 * @param free_p bytes free in /dev/shm now.
 * @return TC_ERR_INVALID_ARG for an endpoint of another backend (or NULL outputs),
 *         TC_ERR_INVALID_STATE while it is not connected yet, the endpoint's failure once it
 *         failed, TC_ERR_NO_RESOURCE when /dev/shm cannot be looked at.
 */
tc_status_t tc_tp_shm_ep_lane_cost(const tc_tp_ep_t *ep, uint64_t *cost_p, uint64_t *free_p);

/** @brief Point @p lane at two lane areas of TC_SHM_LANE_BYTES (ours, the peer's); counters 0. */
static inline void tc_shm_lane_init(tc_tp_shm_lane_t *lane, unsigned char *tx_area,
                                    unsigned char *rx_area)
{
    lane->tx = tx_area + TC_SHM_LANE_ACK_BYTES;
    lane->tx_acked = (const uint64_t *)(void *)tx_area;
    lane->rx = rx_area + TC_SHM_LANE_ACK_BYTES;
    lane->rx_acked = (uint64_t *)(void *)rx_area;
    for (int i = 0; i < TC_SHM_LANE_SLOTS; i++)
        lane->tx_gen[i] = lane->tx_seen[i] = lane->rx_done[i] = 0;
    lane->next[0] = lane->next[1] = lane->next[2] = 0;
    lane->rx_next[0] = 0;
    lane->rx_next[1] = TC_SHM_LANE_TINY;
    lane->rx_next[2] = TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL;
    lane->busy = 0;
    lane->spilled = NULL;
    lane->spilled_bytes = 0;
    lane->spilled_count = 0;
    lane->spill_refusals = 0;
}

/** @brief Take the lane's counters for this thread if no other has them: 1 when taken. No
 *  system call; a thread that gets 0 looks again later (the holder only looks, copies or
 *  moves messages out). */
static inline int tc_shm_lane_trylock(tc_tp_shm_lane_t *lane)
{
    return __atomic_load_n(&lane->busy, __ATOMIC_RELAXED) == 0 &&
           __atomic_exchange_n(&lane->busy, 1, __ATOMIC_ACQUIRE) == 0;
}

/** @brief Give the counters taken by tc_shm_lane_trylock() back. */
static inline void tc_shm_lane_unlock(tc_tp_shm_lane_t *lane)
{
    __atomic_store_n(&lane->busy, 0, __ATOMIC_RELEASE);
}

/** @brief The kind of slot @p i: 0 tiny, 1 small, 2 big. */
static inline unsigned tc_shm_lane_kind(unsigned i)
{
    return i < TC_SHM_LANE_TINY ? 0 : i < TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL ? 1 : 2;
}

/** @brief The index of the first slot of kind @p k. */
static inline unsigned tc_shm_lane_first(unsigned k)
{
    return k == 0 ? 0 : k == 1 ? TC_SHM_LANE_TINY : TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL;
}

/** @brief The largest payload of slot @p i (of its kind). */
static inline uint64_t tc_shm_lane_payload(unsigned i)
{
    unsigned k = tc_shm_lane_kind(i);
    return k == 0   ? TC_SHM_LANE_TINY_PAYLOAD
           : k == 1 ? TC_SHM_LANE_SMALL_PAYLOAD
                    : TC_SHM_LANE_PAYLOAD;
}

/** @brief The slots of kind @p k. */
static inline unsigned tc_shm_lane_count(unsigned k)
{
    return k == 0 ? TC_SHM_LANE_TINY : k == 1 ? TC_SHM_LANE_SMALL : TC_SHM_LANE_BIG;
}

/* Offsets from the first slot of the first small and the first big slot. */
#define TC_SHM_LANE_SMALL_OFF ((size_t)TC_SHM_LANE_TINY * TC_SHM_LANE_TINY_SLOT)
#define TC_SHM_LANE_BIG_OFF                                                                        \
    (TC_SHM_LANE_SMALL_OFF + (size_t)TC_SHM_LANE_SMALL * TC_SHM_LANE_SMALL_SLOT)

/** @brief Offset of slot @p i from the first slot: the tiny ones, the small ones, the big ones. */
static inline size_t tc_shm_lane_off(unsigned i)
{
    if (i < TC_SHM_LANE_TINY)
        return (size_t)i * TC_SHM_LANE_TINY_SLOT;
    if (i < TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL)
        return TC_SHM_LANE_SMALL_OFF + (size_t)(i - TC_SHM_LANE_TINY) * TC_SHM_LANE_SMALL_SLOT;
    return TC_SHM_LANE_BIG_OFF +
           (size_t)(i - TC_SHM_LANE_TINY - TC_SHM_LANE_SMALL) * TC_SHM_LANE_SLOT;
}

/** @brief The index of the slot at offset @p off from the first slot. */
static inline unsigned tc_shm_lane_index(size_t off)
{
    if (off < TC_SHM_LANE_SMALL_OFF)
        return (unsigned)(off / TC_SHM_LANE_TINY_SLOT);
    if (off < TC_SHM_LANE_BIG_OFF)
        return TC_SHM_LANE_TINY +
               (unsigned)((off - TC_SHM_LANE_SMALL_OFF) / TC_SHM_LANE_SMALL_SLOT);
    return TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL +
           (unsigned)((off - TC_SHM_LANE_BIG_OFF) / TC_SHM_LANE_SLOT);
}

/** @brief The slot after @p i among the slots of its kind, in turn. */
static inline unsigned tc_shm_lane_after(unsigned i)
{
    unsigned k = tc_shm_lane_kind(i), first = tc_shm_lane_first(k);
    unsigned at = i - first + 1; /* a compare, not a division: this runs for every message */
    return first + (at == tc_shm_lane_count(k) ? 0 : at);
}

/** @brief Slot @p i of our side (@p tx) or of the peer's. */
static inline tc_shm_lane_slot_t *tc_shm_lane_slot(const tc_tp_shm_lane_t *lane, int tx, unsigned i)
{
    const unsigned char *base = tx ? lane->tx : lane->rx;
    return (tc_shm_lane_slot_t *)(void *)(uintptr_t)(base + tc_shm_lane_off(i));
}

/** @brief Ack words per cache line: read together. */
#define TC_SHM_LANE_ACKS_PER_LINE 8u

/* Whether the reader consumed what we last put in slot @p i: from our copy of its ack word,
 * refreshed (with the rest of that word's cache line) only when the copy says no and the line
 * was not refreshed already in this search (bit of *fresh_p). */
static inline int tc_shm_lane_tx_free(tc_tp_shm_lane_t *lane, unsigned i, unsigned *fresh_p)
{
    if (lane->tx_seen[i] == lane->tx_gen[i])
        return 1;
    unsigned line = i / TC_SHM_LANE_ACKS_PER_LINE;
    if (!(*fresh_p & (1u << line))) {
        *fresh_p |= 1u << line;
        unsigned j0 = line * TC_SHM_LANE_ACKS_PER_LINE;
        for (unsigned j = j0; j < j0 + TC_SHM_LANE_ACKS_PER_LINE && j < TC_SHM_LANE_SLOTS; j++)
            lane->tx_seen[j] = __atomic_load_n(&lane->tx_acked[j], __ATOMIC_ACQUIRE);
    }
    return lane->tx_seen[i] == lane->tx_gen[i];
}

/* The first free slot of @p n slots from @p first, starting at @p from; or NULL. */
static inline tc_shm_lane_slot_t *tc_shm_lane_free_of(tc_tp_shm_lane_t *lane, unsigned first,
                                                      unsigned n, unsigned from)
{
    unsigned fresh = 0;
    for (unsigned k = 0; k < n; k++) {
        unsigned i = first + (from + k) % n;
        if (tc_shm_lane_tx_free(lane, i, &fresh))
            return tc_shm_lane_slot(lane, 1, i);
    }
    return NULL;
}

/** @brief A free slot for the next message of @p len bytes (of the smallest kind it fits that
 *  has one free), or NULL while the reader holds every slot it could take. */
static inline tc_shm_lane_slot_t *tc_shm_lane_tx_slot(tc_tp_shm_lane_t *lane, size_t len)
{
    tc_shm_lane_slot_t *slot = NULL;
    if (len <= TC_SHM_LANE_TINY_PAYLOAD)
        slot = tc_shm_lane_free_of(lane, 0, TC_SHM_LANE_TINY, lane->next[0]);
    if (!slot && len <= TC_SHM_LANE_SMALL_PAYLOAD)
        slot = tc_shm_lane_free_of(lane, TC_SHM_LANE_TINY, TC_SHM_LANE_SMALL, lane->next[1]);
    return slot ? slot
                : tc_shm_lane_free_of(lane, TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL, TC_SHM_LANE_BIG,
                                      lane->next[2]);
}

/** @brief Publish the slot tc_shm_lane_tx_slot() gave, its payload written: @p len bytes. */
static inline void tc_shm_lane_post(tc_tp_shm_lane_t *lane, tc_shm_lane_slot_t *slot, uint64_t tag,
                                    uint64_t len)
{
    unsigned i = tc_shm_lane_index((size_t)((unsigned char *)slot - lane->tx));
    slot->tag = tag;
    slot->len = len;
    unsigned k = tc_shm_lane_kind(i);
    lane->next[k] = tc_shm_lane_after(i) - tc_shm_lane_first(k);
    __atomic_store_n(&slot->seq, ++lane->tx_gen[i], __ATOMIC_RELEASE);
}

/** @brief A slot's length once its writer withdrew the message. */
#define TC_SHM_LANE_WITHDRAWN UINT64_MAX

/** @brief Withdraw our messages tagged @p tag that the reader has not consumed (their operation
 *  failed here): returns how many. Under the lane's lock. */
static inline int tc_shm_lane_withdraw(tc_tp_shm_lane_t *lane, uint64_t tag)
{
    int n = 0;
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++) {
        tc_shm_lane_slot_t *slot = tc_shm_lane_slot(lane, 1, i);
        if (lane->tx_gen[i] != 0 && slot->tag == tag &&
            __atomic_load_n(&lane->tx_acked[i], __ATOMIC_ACQUIRE) != lane->tx_gen[i]) {
            __atomic_store_n(&slot->len, TC_SHM_LANE_WITHDRAWN, __ATOMIC_SEQ_CST);
            n++;
        }
    }
    return n;
}

/** @brief The length of the peer's message in @p slot, TC_SHM_LANE_WITHDRAWN once withdrawn
 *  (an acquire load: looked at again after the payload was used, a withdrawal then is seen). */
static inline uint64_t tc_shm_lane_len(const tc_shm_lane_slot_t *slot)
{
    return __atomic_load_n(&slot->len, __ATOMIC_ACQUIRE);
}

/** @brief The peer's message in slot @p i if it holds one not yet consumed, else NULL. */
static inline const tc_shm_lane_slot_t *tc_shm_lane_pending(const tc_tp_shm_lane_t *lane,
                                                            unsigned i)
{
    const tc_shm_lane_slot_t *slot = tc_shm_lane_slot(lane, 0, i);
    if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == lane->rx_done[i])
        return NULL;
    return slot;
}

/**
 * @brief Move the peer's messages not consumed yet out of the slots into memory of this
 * process, and free their slots: for a reader that waits while its slots may hold messages of
 * operations it has not issued. Each kind's slots are taken in the order the writer fills them,
 * from the next one a stream's message takes, the big ones first (a writer of a big message waits
 * for those). A message whose length exceeds its slot's payload
 * (a writer that breaks the protocol) stays where it is. Under the lane's lock.
 * @param cap the most payload bytes moved messages may hold together (spilled_bytes).
 * @param cap_count the most messages moved may be (spilled_count): every look walks them.
 * @param moved_p how many moved (may be NULL).
 * @return TC_OK; TC_ERR_NO_RESOURCE when the next one would pass a cap, TC_ERR_NO_MEMORY when
 *         it could not be allocated (it and the rest stay in their slots).
 */
TC_MUST_USE tc_status_t tc_shm_lane_spill(tc_tp_shm_lane_t *lane, size_t cap, unsigned cap_count,
                                          int *moved_p);

/** @brief The moved message tagged @p tag (tc_shm_lane_spill), or NULL. */
const tc_shm_lane_slot_t *tc_shm_lane_spilled_find(const tc_tp_shm_lane_t *lane, uint64_t tag);

/** @brief The moved message after @p slot (NULL: the first one), or NULL: for a walk that may
 *  release what it walked past (take the next one first). */
const tc_shm_lane_slot_t *tc_shm_lane_spilled_next(const tc_tp_shm_lane_t *lane,
                                                   const tc_shm_lane_slot_t *slot);

/** @brief Free a moved message (tc_shm_lane_release() of one). */
void tc_shm_lane_spilled_release(tc_tp_shm_lane_t *lane, const tc_shm_lane_slot_t *slot);

/** @brief Free every moved message (the endpoint's end). */
void tc_shm_lane_spilled_free(tc_tp_shm_lane_t *lane);

/** @brief Whether the peer may be waiting for a slot: every big slot holds a message not
 *  consumed yet (a writer finds no slot only then). */
static inline int tc_shm_lane_rx_full(const tc_tp_shm_lane_t *lane)
{
    for (unsigned i = TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL; i < TC_SHM_LANE_SLOTS; i++)
        if (!tc_shm_lane_pending(lane, i))
            return 0;
    return 1;
}

/** @brief The sum of the generations of the peer's slots @p from to @p to - 1: it changes
 *  whenever the peer writes a message into one (acquire loads of the segment only). */
static inline uint64_t tc_shm_lane_rx_gens(const tc_tp_shm_lane_t *lane, unsigned from,
                                           unsigned to)
{
    uint64_t sum = 0;
    for (unsigned i = from; i < to; i++)
        sum += __atomic_load_n(&tc_shm_lane_slot(lane, 0, i)->seq, __ATOMIC_ACQUIRE);
    return sum;
}

/** @brief tc_shm_lane_rx_gens() of the big slots. */
static inline uint64_t tc_shm_lane_big_gens(const tc_tp_shm_lane_t *lane)
{
    return tc_shm_lane_rx_gens(lane, TC_SHM_LANE_TINY + TC_SHM_LANE_SMALL, TC_SHM_LANE_SLOTS);
}

/** @brief The peer's message tagged @p tag if it was moved out of the slots or is in one of the
 *  slots a stream's next message takes (of each kind, the slot after the last one consumed),
 *  else NULL: three loads, for waiting. Only tc_shm_lane_find() sees a message of interleaved
 *  streams elsewhere. */
static inline const tc_shm_lane_slot_t *tc_shm_lane_find_next(const tc_tp_shm_lane_t *lane,
                                                              uint64_t tag)
{
    if (__builtin_expect(lane->spilled != NULL, 0)) {
        const tc_shm_lane_slot_t *moved = tc_shm_lane_spilled_find(lane, tag);
        if (moved)
            return moved;
    }
    for (unsigned k = 0; k < TC_SHM_LANE_KINDS; k++) {
        const tc_shm_lane_slot_t *slot = tc_shm_lane_pending(lane, lane->rx_next[k]);
        if (slot && slot->tag == tag)
            return slot;
    }
    return NULL;
}

/** @brief The peer's message tagged @p tag once it is there, else NULL. Check len before use.
 *  The slots a stream's next message takes are looked at first. */
static inline const tc_shm_lane_slot_t *tc_shm_lane_find(const tc_tp_shm_lane_t *lane, uint64_t tag)
{
    const tc_shm_lane_slot_t *slot = tc_shm_lane_find_next(lane, tag);
    if (slot)
        return slot;
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++) {
        slot = tc_shm_lane_pending(lane, i);
        if (slot && slot->tag == tag)
            return slot;
    }
    return NULL;
}

/**
 * @brief A value that changes whenever the peer writes a message into its
 * slots (@p rx) or consumes one of ours (else): the sum of those slots'
 * generations. It reads only the segment, with acquire loads, so a thread
 * may watch it without the lock that guards the lane's counters; what
 * changed is then found under that lock.
 */
static inline uint64_t tc_shm_lane_watch(const tc_tp_shm_lane_t *lane, int rx)
{
    if (rx)
        return tc_shm_lane_rx_gens(lane, 0, TC_SHM_LANE_SLOTS);
    uint64_t sum = 0;
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++)
        sum += __atomic_load_n(&lane->tx_acked[i], __ATOMIC_ACQUIRE);
    return sum;
}

/** @brief Done with a message tc_shm_lane_find() or _pending() gave: its slot may be reused. */
static inline void tc_shm_lane_release(tc_tp_shm_lane_t *lane, const tc_shm_lane_slot_t *slot)
{
    if ((uintptr_t)slot - (uintptr_t)lane->rx >= TC_SHM_LANE_BYTES - TC_SHM_LANE_ACK_BYTES) {
        tc_shm_lane_spilled_release(lane, slot);
        return;
    }
    unsigned i = tc_shm_lane_index((size_t)((const unsigned char *)slot - lane->rx));
    lane->rx_done[i] = slot->seq;
    lane->rx_next[tc_shm_lane_kind(i)] = tc_shm_lane_after(i);
    __atomic_store_n(&lane->rx_acked[i], lane->rx_done[i], __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_SHM_LANE_H */
