/**
 * @file agree.h
 * @brief The agreement of tc_rt_comm_shrink() as a state machine with no I/O.
 *
 * The survivors of a communicator agree on the set of failed ranks, while
 * more ranks may fail. The protocol runs in rounds; in each a rank exchanges
 * one message with each neighbour it names in @c to (sends one, receives
 * one), and a message that does not come means its sender failed.
 * Early-deciding flooding over a fixed graph: a rank still deciding sends SET
 * (the failed ranks it knows, its communicator id proposal); it merges
 * what it receives; it decides when @c window rounds in a row were quiet
 * (every message a SET equal to its own, set and id, and no failure learnt);
 * it adopts V when a message of the round is DECIDE(V). After deciding or
 * adopting it does one last round, sending DECIDE to each neighbour it
 * believes alive that has not sent it a DECIDE.
 *
 * The graph: every rank a neighbour of every other (window 1) up to a size,
 * above it rank r's neighbours are r ± 2^k mod size (at most 2 log2 size),
 * and the window is 2d − 1 for d, the graph's diameter plus 2: a decision
 * then reaches every rank before it could decide anything else, as long as
 * the surviving ranks stay within d hops of each other.
 * docs/fault_tolerance.md gives the argument for both.
 *
 * State and messages grow with the neighbours and the failed ranks, not with
 * the size: a set is a sorted list of ranks. Only a receive's room, which
 * must hold the largest message, is 4 bytes per rank of the size.
 *
 * The caller (runtime/src/shrink.c) moves the messages;
 * tests/runtime/agree_protocol_test.c drives every rank over a simulated
 * network with failures placed everywhere, tests/runtime/agree_scale_test.c
 * up to 131072 ranks.
 *
 * Use: tc_rt_agree_graph() once, tc_rt_agree_init() per rank,
 * tc_rt_agree_learn() for every failure known so far, then per round
 * tc_rt_agree_begin(), the exchange (failures learnt meanwhile through
 * tc_rt_agree_learn()), tc_rt_agree_end(); until the phase is
 * TC_RT_AGREE_DONE. The result: tc_rt_agree_failed() and @c next_id.
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
    TC_RT_AGREE_DONE      /**< finished: the decided set is final */
} tc_rt_agree_phase_t;

/** @brief The exchange graph, the same on every rank. */
typedef struct tc_rt_agree_graph {
    int size;     /**< ranks */
    int sparse;   /**< 0: all-to-all; 1: r ± 2^k */
    int diameter; /**< of the graph (1 when all-to-all) */
    int window;   /**< quiet rounds before deciding */
} tc_rt_agree_graph_t;

/** @brief A set of ranks: sorted, without repeats. */
typedef struct tc_rt_rankset {
    int n;      /**< ranks in it */
    int cap;    /**< room */
    int32_t *r; /**< the ranks, ascending */
} tc_rt_rankset_t;

/** @brief One rank's state. */
typedef struct tc_rt_agree {
    tc_rt_agree_graph_t g;     /**< the graph */
    int rank;                  /**< this rank */
    int npeers;                /**< neighbours */
    uint32_t round;            /**< the round begun last (from 1) */
    uint32_t next_id;          /**< the largest id proposal known (the shrink's id's depth
                                     below the top, comm_ids.c); the result's */
    tc_rt_agree_phase_t phase; /**< see tc_rt_agree_phase_t */
    int adopted_from;          /**< the rank whose DECIDE was adopted, or -1 */
    int learnt;                /**< failures learnt since the last round ended */
    int quiet;                 /**< quiet rounds in a row */
    int oom;                   /**< a set could not grow */
    int32_t *peers;            /**< the neighbours, ascending */
    uint8_t *to;               /**< per neighbour: exchange with it this round */
    uint8_t *got_decide;       /**< per neighbour: sent this rank a DECIDE */
    tc_rt_rankset_t dead;      /**< known failed (this rank's set) */
    tc_rt_rankset_t decided;   /**< the decided set (phase LAST, DONE) */
    size_t msg_len;            /**< bytes of this round's message */
    size_t msg_cap;            /**< bytes of the largest message (a receive's room) */
    size_t msg_room;           /**< bytes allocated at @c msg */
    uint8_t *msg;              /**< this round's message to send */
} tc_rt_agree_t;

/**
 * @brief The graph for @p size ranks: all-to-all up to @p dense_max ranks,
 *        else r ± 2^k (its diameter found by a search: O(size log size) time).
 */
tc_status_t tc_rt_agree_graph(int size, int dense_max, tc_rt_agree_graph_t *g);

/** @brief Set up one rank; @p next_id is this process's id proposal (the largest is kept). */
tc_status_t tc_rt_agree_init(tc_rt_agree_t *a, const tc_rt_agree_graph_t *g, int rank,
                             uint32_t next_id);
void tc_rt_agree_free(tc_rt_agree_t *a);

/**
 * @brief Rank @p r failed (learnt outside the exchange); 1 when it is news.
 *        Out of memory, the next tc_rt_agree_end() says so.
 */
int tc_rt_agree_learn(tc_rt_agree_t *a, int r);

/** @brief Begin the next round: fills @c to and @c msg (TC_ERR_NO_MEMORY). */
tc_status_t tc_rt_agree_begin(tc_rt_agree_t *a);

/**
 * @brief End the round with the messages received.
 * @param theirs per neighbour (index into @c peers): its message, or NULL
 *        when nothing came (it failed). Only those with @c to set are read.
 * @param lens   per neighbour: the bytes received at theirs[i] (a message
 *        whose count says another length is malformed).
 * @return TC_ERR_PROTOCOL naming the rank of a malformed message;
 *         TC_ERR_INTERNAL if two decisions differ (a broken protocol or
 *         graph); TC_ERR_PEER_FAILED when every neighbour failed before a
 *         decision (this rank is cut off); TC_ERR_NO_MEMORY.
 */
tc_status_t tc_rt_agree_end(tc_rt_agree_t *a, const uint8_t *const *theirs, const size_t *lens);

/** @brief Whether rank @p r is in the decided set. */
int tc_rt_agree_failed(const tc_rt_agree_t *a, int r);

/** @brief The index of rank @p r among the neighbours, or -1. */
int tc_rt_agree_peer_index(const tc_rt_agree_t *a, int r);

#ifdef __cplusplus
}
#endif

#endif
