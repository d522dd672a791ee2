/**
 * @file schedule.h
 * @brief Collective algorithms as data: a schedule of steps for one rank.
 *
 * A schedule never touches a network. It says, for one rank, what to send,
 * receive, reduce and copy, in element units (the executor multiplies by the
 * element size), and which earlier steps each step waits for.
 *
 * Matching rule the executor relies on and the verifier checks: between two
 * ranks, the k-th send step of the sender (in step order) to a peer matches
 * the k-th receiving step (RECV or RECV_REDUCE) of that peer from the sender,
 * with equal counts.
 */
#ifndef TCOMMS_ALGO_SCHEDULE_H
#define TCOMMS_ALGO_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Collectives. */
typedef enum tc_coll {
    TC_COLL_ALL_REDUCE = 0,
    TC_COLL_REDUCE,
    TC_COLL_BROADCAST,
    TC_COLL_ALL_GATHER,
    TC_COLL_REDUCE_SCATTER,
    TC_COLL_ALL_TO_ALL,
    TC_COLL_GATHER,
    TC_COLL_SCATTER,
    TC_COLL_BARRIER,
    TC_COLL_COUNT
} tc_coll_t;

/** @brief "all_reduce", ... */
const char *tc_coll_name(tc_coll_t coll);

/** @brief What a step does. */
typedef enum tc_step_kind {
    TC_STEP_SEND = 0,    /**< send buf[off, off+count) to peer */
    TC_STEP_RECV,        /**< receive count elements from peer into dst[dst_off...] */
    TC_STEP_RECV_REDUCE, /**< receive count elements from peer, dst[dst_off...] op= them */
    TC_STEP_COPY,        /**< dst[dst_off...] = buf[off...] (local) */
    TC_STEP_REDUCE,      /**< dst[dst_off...] op= buf[off...] (local) */
} tc_step_kind_t;

/** @brief The buffers a step names. */
typedef enum tc_buf {
    TC_BUF_SEND = 0, /**< the user's input buffer */
    TC_BUF_RECV,     /**< the user's output buffer */
    TC_BUF_SCRATCH,  /**< executor-owned scratch of sched->scratch_count elements */
} tc_buf_t;

/** @brief No dependency. */
#define TC_STEP_NO_DEP UINT32_MAX

/** @brief One step of a schedule. */
typedef struct tc_step {
    uint8_t kind;      /**< tc_step_kind_t */
    uint8_t buf;       /**< source buffer (SEND, COPY, REDUCE) */
    uint8_t dst_buf;   /**< destination buffer (RECV, RECV_REDUCE, COPY, REDUCE) */
    uint8_t pad;
    int32_t peer;      /**< the other rank (SEND, RECV, RECV_REDUCE) */
    uint64_t off;      /**< element offset in buf */
    uint64_t dst_off;  /**< element offset in dst_buf */
    uint64_t count;    /**< elements */
    uint32_t dep[2];   /**< indices of earlier steps this one waits for, or TC_STEP_NO_DEP */
} tc_step_t;

/** @brief A schedule for one rank. */
typedef struct tc_sched {
    tc_coll_t coll;         /**< the collective */
    const char *algo;       /**< algorithm name (static string) */
    int nranks;             /**< ranks in the group */
    int rank;               /**< this rank */
    int root;               /**< root for rooted collectives, else -1 */
    uint64_t count;         /**< elements per rank's input, as passed by the caller */
    uint64_t scratch_count; /**< elements of scratch the executor must provide */
    int in_place;           /**< the schedule assumes send buffer == receive buffer */
    uint32_t nsteps;        /**< steps used */
    uint32_t cap;           /**< steps allocated */
    tc_step_t *steps;       /**< the steps */
} tc_sched_t;

/** @brief Arguments every generator receives. */
typedef struct tc_algo_args {
    tc_coll_t coll;
    int nranks;
    int rank;
    int root;          /**< -1 when not rooted */
    uint64_t count;    /**< elements (all-reduce: per rank; the whole vector) */
    int in_place;
} tc_algo_args_t;

/** @brief Start an empty schedule for @p args (no allocation yet). */
void tc_sched_init(tc_sched_t *sched, const tc_algo_args_t *args, const char *algo);

/**
 * @brief Append a step; @p index_p (may be NULL) receives its index.
 * @return TC_ERR_NO_MEMORY, or TC_ERR_INVALID_ARG for a dependency on a step
 *         that does not exist yet.
 */
tc_status_t tc_sched_add(tc_sched_t *sched, const tc_step_t *step, uint32_t *index_p);

/** @brief Free the steps. */
void tc_sched_free(tc_sched_t *sched);

/** @brief A generator: fills an initialised schedule for one rank. */
typedef tc_status_t (*tc_algo_gen_fn)(const tc_algo_args_t *args, tc_sched_t *sched);

/** @brief A registered algorithm. */
typedef struct tc_algo_desc {
    const char *name;     /**< "ring", ... */
    tc_coll_t coll;       /**< the collective it implements */
    tc_algo_gen_fn gen;   /**< its generator */
} tc_algo_desc_t;

/**
 * @brief Build the schedule of @p args->rank with algorithm @p algo (NULL:
 *        the default for the collective).
 * @return TC_ERR_NOT_FOUND listing the valid names for an unknown algorithm.
 */
tc_status_t tc_algo_build(const tc_algo_args_t *args, const char *algo, tc_sched_t *sched);

/**
 * @brief Execute the schedules of every rank symbolically and prove the result.
 *
 * Checks that every send has its matching receive (no deadlock given the
 * dependencies), that no step reads or writes outside its buffer, and that
 * every output element holds exactly the right contributions, once each.
 * @return TC_OK, or TC_ERR_INTERNAL with the first problem in the detail.
 */
tc_status_t tc_algo_verify(const tc_algo_args_t *args, const char *algo);

/**
 * @brief tc_algo_verify() for any generator, registered or not (tests, new
 *        algorithms under development).
 *
 * The verifier models the strictest transport: a send and its matching
 * receive complete together, once both have their dependencies done, so a
 * schedule that passes cannot deadlock on a transport that buffers less.
 * It also rejects two steps of one rank that touch overlapping elements, one
 * of them writing, unless one depends (transitively) on the other.
 * @return TC_OK; TC_ERR_INTERNAL with the first problem in the detail
 *         ("missing the contribution of rank 3", "unmatched send",
 *         "deadlock", "out of bounds", "race", ...); TC_ERR_UNSUPPORTED for
 *         a collective the verifier has no rule for; TC_ERR_INVALID_ARG for
 *         bad @p args or a NULL @p gen; TC_ERR_NO_MEMORY; or the status of a
 *         failing generator.
 * @param args the collective; args->rank is ignored (every rank is built).
 * @param gen the generator to prove.
 */
tc_status_t tc_algo_verify_with(const tc_algo_args_t *args, tc_algo_gen_fn gen);

/**
 * @brief The registry: every algorithm of every collective.
 * @param count_p receives the number of entries.
 * @return a static table, never NULL.
 */
const tc_algo_desc_t *tc_algo_table(size_t *count_p);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_ALGO_SCHEDULE_H */
