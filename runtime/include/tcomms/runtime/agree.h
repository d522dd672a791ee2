/**
 * @file agree.h
 * @brief The agreement of tc_rt_comm_shrink() as a state machine with no I/O.
 *
 * The survivors of a communicator agree on the set of failed ranks, while
 * more ranks may fail. The protocol runs in rounds; in each a rank exchanges
 * one message with each peer it names in @c to (sends one, receives one), and
 * a message that does not come means its sender failed. Early-deciding
 * flooding: a rank still deciding sends SET (its set, its lowest unused
 * communicator id); it decides when every message of a round is a SET equal
 * to its own and it learnt of no failure in the round; it adopts V when a
 * message of the round is DECIDE(V); else it merges and goes on. After
 * deciding or adopting it does one last round, sending DECIDE to each peer
 * it believes alive that has not sent it a DECIDE. docs/fault_tolerance.md
 * explains why every survivor ends with the same set.
 *
 * The caller (runtime/src/shrink.c) moves the messages;
 * tests/runtime/agree_protocol_test.c drives many instances over a simulated
 * network with failures placed everywhere.
 *
 * Use: tc_rt_agree_learn() for every failure known so far, then per round
 * tc_rt_agree_begin(), the exchange (failures learnt meanwhile through
 * tc_rt_agree_learn()), tc_rt_agree_end(); until the phase is
 * TC_RT_AGREE_DONE. The result is in @c decided and @c next_id.
 */
#ifndef TCOMMS_RUNTIME_AGREE_H
#define TCOMMS_RUNTIME_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Where a rank is in the agreement. */
typedef enum {
    TC_RT_AGREE_DECIDING, /**< sending SET each round */
    TC_RT_AGREE_LAST,     /**< decided; the next round is the last (DECIDE) */
    TC_RT_AGREE_DONE      /**< finished: @c decided holds the result */
} tc_rt_agree_phase_t;

/** @brief One rank's state. */
typedef struct tc_rt_agree {
    int size;                  /**< ranks of the communicator */
    int rank;                  /**< this rank */
    size_t msg_len;            /**< bytes of every message */
    uint32_t round;            /**< the round begun last (from 1) */
    uint32_t next_id;          /**< lowest unused communicator id known; the result's id */
    tc_rt_agree_phase_t phase; /**< see tc_rt_agree_phase_t */
    int adopted_from;          /**< the rank whose DECIDE was adopted, or -1 */
    int learnt;                /**< failures learnt since the round began */
    uint8_t *dead;             /**< per rank: known failed (this rank's set) */
    uint8_t *decided;          /**< per rank: in the decided set (phase LAST, DONE) */
    uint8_t *got_decide;       /**< per rank: sent this rank a DECIDE */
    uint8_t *to;               /**< per rank: exchange with it this round */
    uint8_t *msg;              /**< this round's message to send (msg_len bytes) */
} tc_rt_agree_t;

/** @brief Set up for @p size ranks; @p next_id is this process's lowest unused id. */
tc_status_t tc_rt_agree_init(tc_rt_agree_t *a, int size, int rank, uint32_t next_id);
void tc_rt_agree_free(tc_rt_agree_t *a);

/** @brief Rank @p r failed (learnt outside the exchange); 1 when it is news. */
int tc_rt_agree_learn(tc_rt_agree_t *a, int r);

/** @brief Begin the next round: fills @c to and @c msg. */
void tc_rt_agree_begin(tc_rt_agree_t *a);

/**
 * @brief End the round with the messages received.
 * @param theirs @c size slots of @c msg_len bytes, slot q from rank q; a slot
 *        of zeros means nothing came (rank q failed). Only slots with @c to set
 *        are read.
 * @return TC_ERR_PROTOCOL naming the rank of a malformed message;
 *         TC_ERR_INTERNAL if two decisions differ (a broken protocol).
 */
tc_status_t tc_rt_agree_end(tc_rt_agree_t *a, const uint8_t *theirs);

#ifdef __cplusplus
}
#endif

#endif
