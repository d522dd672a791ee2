/**
 * @file watch.h
 * @brief Who watches whom (heartbeats), and whether a peer's verdict is
 *        believed: pure functions, no I/O.
 *
 * Each rank exchanges heartbeats with a few peers, its watch neighbours,
 * chosen by rank arithmetic alone (no lookup per peer, nothing that grows
 * with the world): rank r is joined to r +- 1, r +- L and r +- (L + 1)
 * (mod n), where L is the number of ranks per node, and by chords to
 * 2r and 2r + 1 (mod n) (and so to the ranks whose chords reach r). The
 * graph is symmetric (a neighbour watches back), has at most
 * TC_RT_WATCH_MAX edges per rank, and a diameter of at most
 * ceil(log2 n) + 1 hops (the chords: a verdict crosses 100,000 ranks in 18).
 * When ranks are placed on nodes in blocks of L (torchrun's
 * RANK = node * L + LOCAL_RANK, Slurm's block distribution) and every node
 * has L ranks, every rank of a job on two nodes or more is watched by at
 * least two ranks of other nodes (by every one there is, when fewer), so a
 * whole node that vanishes has all its ranks watched from outside.
 *
 * A rank that finds a neighbour silent tells its own neighbours (the verdict
 * spreads along the graph) and the bootstrap's channel (rank 0's store,
 * PMIx events). tc_rt_watch_judge() decides whether a verdict that arrives
 * is believed: not from a rank already failed here (the side of a cut that
 * this rank gave up on cannot convict it), not about this rank, and, for a
 * silence (not a process seen gone), not about a neighbour heard from within
 * the last two periods.
 *
 * Tested by tests/runtime/watch_test.c; used by runtime/src/heartbeat.c.
 */
#ifndef TCOMMS_RUNTIME_WATCH_H
#define TCOMMS_RUNTIME_WATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Most watch neighbours of one rank. */
#define TC_RT_WATCH_MAX 12

/**
 * @brief The watch neighbours of @p rank in a job of @p size ranks placed
 *        @p local_size to a node.
 * @param peers_p receives them, ascending, without @p rank and without repeats
 * @return how many (0 to TC_RT_WATCH_MAX); 0 for a bad argument
 */
int tc_rt_watch_peers(int size, int local_size, int rank, int peers_p[TC_RT_WATCH_MAX]);

/** @brief What to do with a verdict "rank @c accused failed" that arrives. */
typedef enum tc_rt_watch_judgement {
    TC_RT_WATCH_ACCEPT = 0,     /**< record the failure and pass it on */
    TC_RT_WATCH_KNOWN,          /**< already recorded: drop it */
    TC_RT_WATCH_ABOUT_SELF,     /**< it accuses this rank: drop it, say so */
    TC_RT_WATCH_ACCUSER_FAILED, /**< its sender is failed here: drop it */
    TC_RT_WATCH_ACCUSED_HEARD,  /**< found silent, but this rank heard it lately: drop it */
    TC_RT_WATCH_BAD,            /**< a rank out of range */
} tc_rt_watch_judgement_t;

/** @brief What the judging rank knows about one verdict. */
typedef struct tc_rt_watch_case {
    int size;              /**< ranks in the job */
    int self;              /**< the judging rank */
    int accused;           /**< the rank said to have failed */
    int accuser;           /**< the rank that sent the verdict; -1 when unknown */
    int silent;            /**< found silent (heartbeats); else seen dead (its process gone) */
    int accused_known;     /**< the accused is already failed here */
    int accuser_failed;    /**< the accuser is failed here */
    int accused_watched;   /**< the accused is a watch neighbour of the judging rank */
    uint64_t heard_ago_ns; /**< since the judging rank last heard the accused (if watched) */
    uint64_t period_ns;    /**< the heartbeat period */
} tc_rt_watch_case_t;

/** @brief Judge one verdict (see the file's comment). */
tc_rt_watch_judgement_t tc_rt_watch_judge(const tc_rt_watch_case_t *c);

/** @brief "tcvd": the first word of every verdict on the wire. */
#define TC_RT_VERDICT_MAGIC 0x74637664u

/** @brief A verdict on the wire: "world rank @c rank (pid, host) failed", sent
 *         by a watch neighbour (whose rank the receiver knows from the endpoint). */
typedef struct tc_rt_verdict_msg {
    uint32_t magic; /**< TC_RT_VERDICT_MAGIC */
    int32_t rank;   /**< the failed world rank */
    int32_t pid;    /**< its pid, -1 when unknown */
    int32_t silent; /**< found silent by its watchers (else seen dead) */
    char host[64];  /**< its host, NUL-terminated */
} tc_rt_verdict_msg_t;

/** @brief Whether @p bytes received from a peer are a well-formed verdict for a
 *         job of @p size ranks: the exact size, the magic, a rank in range and a
 *         NUL-terminated host. The bytes come from another process: a receiver
 *         takes nothing else. */
int tc_rt_verdict_valid(const tc_rt_verdict_msg_t *m, size_t bytes, int size);

#ifdef __cplusplus
}
#endif

#endif
