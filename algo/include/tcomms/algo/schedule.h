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
 * the k-th receiving step (RECV, RECV_REDUCE or RECV_REDUCE_SRC) of that peer
 * from the sender, with equal counts.
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
    /** receive count elements from peer, dst[dst_off...] = buf[off...] op them:
     *  the local operand has its own source (out of place, the user's send
     *  buffer), so no copy into dst comes first. buf[off...] must be dst's
     *  range exactly or not overlap it. */
    TC_STEP_RECV_REDUCE_SRC,
} tc_step_kind_t;

/** @brief The last valid ::tc_step_kind_t. */
#define TC_STEP_KIND_LAST TC_STEP_RECV_REDUCE_SRC

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
    uint8_t kind;    /**< tc_step_kind_t */
    uint8_t buf;     /**< source buffer (SEND, COPY, REDUCE, RECV_REDUCE_SRC) */
    uint8_t dst_buf; /**< destination buffer (every kind but SEND) */
    uint8_t pad;
    int32_t peer;     /**< the other rank (SEND, RECV, RECV_REDUCE, RECV_REDUCE_SRC) */
    uint64_t off;     /**< element offset in buf */
    uint64_t dst_off; /**< element offset in dst_buf */
    uint64_t count;   /**< elements */
    uint32_t dep[2];  /**< indices of earlier steps this one waits for, or TC_STEP_NO_DEP */
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
    /** elements of TC_BUF_SEND, TC_BUF_RECV, TC_BUF_SCRATCH every step stays
     *  within (set by tc_algo_build; the executor bounds-checks against it) */
    uint64_t buf_count[3];
    uint32_t nsteps;  /**< steps used */
    uint32_t cap;     /**< steps allocated */
    tc_step_t *steps; /**< the steps */
} tc_sched_t;

/**
 * @brief Arguments every generator receives.
 *
 * The first six fields are the original positional layout (the runtime
 * initialises them positionally); every later field defaults to 0 / NULL,
 * meaning "auto" or "not used".
 *
 * Buffer conventions (elements; "block q" = counts[q] elements at displs[q]
 * when counts is set, else count elements at q * count):
 *  - all_reduce:     send count, recv count; recv[i] = sum over ranks of send[i].
 *  - reduce:         as all_reduce, but only the root's recv is defined.
 *  - broadcast:      root's send count -> every rank's recv count (non-roots
 *                    have no send buffer: size 0).
 *  - all_gather(v):  send = my block's length; recv = all blocks; block q of
 *                    recv = rank q's send.
 *  - reduce_scatter(v): send = all blocks; recv = my block's length; recv[i] =
 *                    sum over ranks of their send block[rank][i].
 *  - all_to_all:     send p*count, recv p*count; block q of my recv = block
 *                    rank of q's send (counts/displs are not supported).
 *  - all_to_all_v:   all_to_all with a2a_counts set (MPI_Alltoallv): rank r
 *                    sends a2a_counts[r*p+q] elements at a2a_sdispls[r*p+q]
 *                    of its send to rank q, which receives them at
 *                    a2a_rdispls[q*p+r] of its recv; send = max over q of
 *                    sdispl + count, recv = max over q of rdispl + count;
 *                    gaps between blocks are no output (left alone).
 *  - gather:         send count; root's recv p*count (others: 0); block q of
 *                    root's recv = rank q's send.
 *  - scatter:        root's send p*count (others: 0); recv count; my recv =
 *                    block rank of the root's send.
 *  - barrier:        no data (count is ignored); messages carry 0 elements.
 * In place (send buffer == receive buffer) a schedule must not name
 * TC_BUF_SEND; the input is already in the one buffer, called TC_BUF_RECV,
 * at the offset MPI/NCCL document: all_gather(v) and gather (root): at
 * block rank; reduce_scatter(v): the buffer holds the whole input and the
 * result is left at block rank; scatter (root): the buffer holds the whole
 * input and the root's block stays where it is; every other collective: at
 * offset 0. tc_algo_layout() computes all of this.
 */
typedef struct tc_algo_args {
    tc_coll_t coll;
    int nranks;
    int rank;
    int root;       /**< -1 when not rooted (anything else is TC_ERR_INVALID_ARG) */
    uint64_t count; /**< elements (all-reduce: per rank; the whole vector; see above) */
    int in_place;   /**< 0 or 1 (see below) */
    /** v-variants (all_gather, reduce_scatter): [nranks] elements of each
     *  rank's block, the same on every rank; NULL: count each. */
    const uint64_t *counts;
    /** [nranks] offset of each block in the gathered / scattered buffer;
     *  NULL: packed (prefix sums of counts). Only read when counts is set.
     *  Blocks with elements must not overlap (TC_ERR_INVALID_ARG from build
     *  and verify). */
    const uint64_t *displs;
    /** pipelining: elements per message for pipelined algorithms (trees,
     *  chains); 0: auto (TC_ALGO_PIPELINE_CHUNKS chunks, see cost.c). */
    uint64_t chunk_count;
    /** hierarchical: ranks per node, nodes holding consecutive ranks (the
     *  last node may hold fewer); 0: one node. */
    int ranks_per_node;
    /** all_to_all_v (all_to_all only; counts, displs unset; count must be 0):
     *  [nranks * nranks] row-major, a2a_counts[q * nranks + r] = elements
     *  rank q sends to rank r (= what r receives from q: one matrix, so the
     *  two sides always agree). A generator for rank r reads only row r and
     *  column r. A pair with 0 elements exchanges no message. In place is
     *  not supported (TC_ERR_UNSUPPORTED: the layer has no staging; the
     *  caller stages). NULL: the uniform all_to_all of count. */
    const uint64_t *a2a_counts;
    /** [nranks * nranks] rank q's send displacements: a2a_sdispls[q * nranks
     *  + r] = offset in q's send of its block to r; NULL: packed (prefix
     *  sums of row q of a2a_counts). Only read when a2a_counts is set. */
    const uint64_t *a2a_sdispls;
    /** [nranks * nranks] rank r's receive displacements: a2a_rdispls[r *
     *  nranks + q] = offset in r's recv of the block from q; NULL: packed
     *  (prefix sums of column r). The receive blocks of a rank must not
     *  overlap (the verifier rejects that with TC_ERR_INVALID_ARG). */
    const uint64_t *a2a_rdispls;
    /** ranks per core when a job within one node runs more ranks than the
     *  machine has cores (the runtime's count, the same on every rank); 0 or
     *  up to 1: not oversubscribed. The model then charges each round a
     *  scheduling hop and shares the cores among the ranks' copies and
     *  reductions (tc_algo_model_time). Selection only: schedules ignore it. */
    double oversub;
} tc_algo_args_t;

/** @brief Where a rank's input and output live (see tc_algo_args_t). */
typedef struct tc_algo_layout {
    uint64_t buf_count[2]; /**< elements of TC_BUF_SEND and TC_BUF_RECV (in place: send = 0) */
    int in_buf;            /**< buffer of the input (TC_BUF_SEND, or TC_BUF_RECV in place) */
    uint64_t in_off;       /**< offset of the input in in_buf */
    uint64_t in_count;     /**< elements of input */
    uint64_t out_off;      /**< offset of the output in TC_BUF_RECV */
    uint64_t out_count;    /**< elements of output (0 where undefined: reduce non-root) */
} tc_algo_layout_t;

/**
 * @brief The buffer layout of @p args->rank for @p args.
 * @return TC_ERR_INVALID_ARG for NULL pointers, bad args or v-arrays whose
 *         sums overflow.
 */
tc_status_t tc_algo_layout(const tc_algo_args_t *args, tc_algo_layout_t *layout);

/** @brief Block q of a gathered/scattered buffer: offset and length (0 for
 *         NULL @p args or q outside [0, nranks)). */
uint64_t tc_algo_block_off(const tc_algo_args_t *args, int q);
uint64_t tc_algo_block_len(const tc_algo_args_t *args, int q);

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

/**
 * @brief What an algorithm costs, in the alpha-beta-gamma model.
 *
 * rounds and elems are along the critical path (the time is about
 * rounds alpha + elems * size beta + red_elems * size gamma); the max_* are
 * the largest per-rank totals, which the verifier checks exactly.
 */
typedef struct tc_algo_cost {
    double rounds;    /**< messages on the critical path */
    double elems;     /**< elements on the critical path */
    double red_elems; /**< elements reduced (or copied locally) on the critical path */
    /** of the rounds, those a rank posts back to back without waiting for
     *  the one before (a linear root's sends or receives): each costs the
     *  per-message overhead o instead of a latency alpha */
    double overlap;
    /** across nodes: how many of a node's ranks move their bytes over the
     *  node's link at once, averaged over the elems (0 or 1: one; see
     *  tc_algo_node_share()); multiplies the beta term */
    double link_share;
    uint64_t max_send_msgs;  /**< most messages one rank sends */
    uint64_t max_send_elems; /**< most elements one rank sends */
} tc_algo_cost_t;

/** @brief The cost formula of an algorithm for @p args (all ranks). */
typedef void (*tc_algo_cost_fn)(const tc_algo_args_t *args, tc_algo_cost_t *cost);

/** @brief A registered algorithm. */
typedef struct tc_algo_desc {
    const char *name;   /**< "ring", ... */
    tc_coll_t coll;     /**< the collective it implements */
    tc_algo_gen_fn gen; /**< its generator */
    tc_algo_cost_fn
        cost; /**< its cost formula; NULL: not modelled (never selected automatically) */
    /** whether it applies to @p args (NULL: always); on "no" it sets the
     *  error detail with the reason and returns TC_ERR_UNSUPPORTED */
    tc_status_t (*applies)(const tc_algo_args_t *args);
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

/** @brief How much the verifier checks. */
typedef enum tc_algo_verify_mode {
    TC_ALGO_VERIFY_FULL = 0, /**< every rank: schedules, matching, races, execution, result */
    /** sampled ranks and their peers: their schedules, matching of every
     *  message they exchange, races and cost on them (see verify.c); then
     *  sampled output elements of the sampled ranks traced back through the
     *  schedules of the ranks they depend on (see verify_flow.c) */
    TC_ALGO_VERIFY_SAMPLE,
} tc_algo_verify_mode_t;

/** @brief Options of tc_algo_verify_ex(); zero-initialise for defaults. */
typedef struct tc_algo_verify_opts {
    tc_algo_verify_mode_t mode;
    int nsample;         /**< SAMPLE: ranks to sample (0: 8), plus ranks 0, p-1 and the root */
    uint64_t seed;       /**< SAMPLE: the random sample's seed */
    size_t elem_size;    /**< bytes per element for the time model (0: 1) */
    int skip_cost_check; /**< do not compare with the cost formula */
    /** SAMPLE: output elements per sampled rank whose message flow is traced
     *  back to the inputs (0: 8; negative: no flow trace) */
    int flow_elems;
    /** SAMPLE: schedule steps the flow trace may generate, rebuilds included
     *  (0: 2^24; UINT64_MAX: no limit); elements whose trace needs more are
     *  reported as cut, not failed */
    uint64_t flow_budget;
    /** SAMPLE: rotational symmetry in the flow trace (see verify_sym.c), for
     *  ring-type schedules whose linear-depth traces the budget cuts:
     *  TC_ALGO_FLOW_SYM_OFF (0), TC_ALGO_FLOW_SYM_CUT or TC_ALGO_FLOW_SYM_ALL */
    int flow_symmetry;
} tc_algo_verify_opts_t;

/** @brief flow_symmetry: never; the trace builds every rank it goes through. */
#define TC_ALGO_FLOW_SYM_OFF 0
/**
 * @brief flow_symmetry: an element the exact trace would cut is traced through
 *        rank 0's schedule rotated by r in place of rank r's, when every checked
 *        rank (the sampled ranks, 1, 2, p/2, p/2+1 and random others) has
 *        exactly rank 0's schedule rotated. Ranks neither checked nor on the
 *        exact trace are then assumed, not proven, to be rotations: such
 *        elements are counted apart (flow_elems_sym).
 */
#define TC_ALGO_FLOW_SYM_CUT 1
/** @brief flow_symmetry: every element so when the check holds (tests). */
#define TC_ALGO_FLOW_SYM_ALL 2

/** @brief What the verifier measured. */
typedef struct tc_algo_verify_report {
    int ranks_checked;       /**< ranks whose schedules were built and checked */
    uint64_t total_steps;    /**< steps of those ranks */
    uint32_t max_steps;      /**< most steps of one rank */
    uint64_t max_send_msgs;  /**< most messages one rank sends */
    uint64_t max_send_elems; /**< most elements one rank sends */
    uint64_t max_recv_elems; /**< most elements one rank receives */
    uint64_t max_red_elems;  /**< most elements one rank reduces */
    int executed;            /**< whether the schedules were executed (FULL) */
    double model_time_s;     /**< FULL: modelled completion time (cost.c parameters) */
    tc_algo_cost_t formula;  /**< the algorithm's cost formula (zero when none) */
    /* SAMPLE, the flow trace (verify_flow.c) */
    uint64_t flow_elems_proven; /**< sampled output elements proven from the inputs */
    uint64_t flow_elems_cut;    /**< sampled output elements whose trace hit flow_budget */
    uint64_t flow_ranks_built;  /**< schedules generated by the trace (rebuilds included) */
    uint64_t flow_steps_built;  /**< steps of those schedules */
    uint64_t flow_hops;         /**< steps the trace went back through */
    /** flow_symmetry: elements proven through rank 0's schedule rotated (not
     *  counted in flow_elems_proven): exact only if every rank is a rotation of
     *  rank 0, which was checked on flow_sym_checked ranks */
    uint64_t flow_elems_sym;
    /** flow_symmetry: 0 not needed; 1 held on the flow_sym_checked ranks; -1
     *  not applicable (collective, uneven blocks); -2 rank flow_sym_rank's step
     *  flow_sym_step differs from rank 0's rotated (no element traced so) */
    int flow_sym_state;
    int flow_sym_checked; /**< ranks compared with rank 0's schedule rotated */
    int flow_sym_rank;
    uint32_t flow_sym_step;
} tc_algo_verify_report_t;

/**
 * @brief tc_algo_verify() with options and a report; @p algo may be NULL
 *        (the default algorithm) and @p gen, when not NULL, replaces the
 *        registered generator (the cost formula is then not checked).
 * @param report may be NULL; filled on TC_OK and on a verification failure.
 */
tc_status_t tc_algo_verify_ex(const tc_algo_args_t *args, const char *algo, tc_algo_gen_fn gen,
                              const tc_algo_verify_opts_t *opts, tc_algo_verify_report_t *report);

/** @brief Link parameters of the cost model (microseconds, microseconds per byte). */
typedef struct tc_algo_model {
    double alpha_us[2]; /**< latency per message: [0] same node, [1] across nodes */
    double beta_us[2];  /**< time per byte on the wire: [0] same node, [1] across nodes */
    double gamma_us;    /**< time per byte reduced */
    /** per-message overhead: what one more message of a burst adds (LogP's
     *  o; the latency of a burst's messages overlaps, this does not) */
    double o_us;
} tc_algo_model_t;

/**
 * @brief The model's parameters: defaults, overridden by TC_ALGO_ALPHA_INTRA_US,
 *        TC_ALGO_ALPHA_INTER_US, TC_ALGO_BETA_INTRA_US, TC_ALGO_BETA_INTER_US,
 *        TC_ALGO_GAMMA_US, TC_ALGO_OVERHEAD_US (docs/tuning.md).
 * @return TC_ERR_CONFIG for a malformed variable; TC_ERR_INVALID_ARG for a
 *         NULL @p model.
 */
tc_status_t tc_algo_model_get(tc_algo_model_t *model);

/**
 * @brief Modelled time in seconds of @p cost for a job of @p args with
 *        elements of @p elem_size bytes: across nodes when ranks_per_node
 *        is set and smaller than nranks, else within a node. With alpha,
 *        beta of that class:
 *        (rounds - overlap) alpha + overlap min(o, alpha)
 *        + elems size beta share + red_elems size gamma,
 *        share = max(1, link_share) across nodes, 1 within a node. Within a
 *        node whose ranks outnumber its cores (args->oversub > 1), alpha
 *        gains TC_ALGO_SCHED_HOP_US (a round's messages wait for their
 *        receivers to be scheduled) and beta and gamma are multiplied by
 *        args->oversub (the ranks copy and reduce on fewer cores).
 *        HUGE_VAL (never the cheapest) when a pointer is NULL.
 */
double tc_algo_model_time(const tc_algo_model_t *model, const tc_algo_args_t *args,
                          const tc_algo_cost_t *cost, size_t elem_size);

/** @brief What a round costs more on an oversubscribed node (us): a receiver
 *         that is not running waits for a time slice. About what a dependent
 *         hop costs among 4 ranks on the 2 cores of the AMD VM where broadcast,
 *         all_gather and reduce_scatter of 64 KiB-1 MiB ran fastest as chosen
 *         with it (bench/results/2026-12-06-oversub.txt). */
#define TC_ALGO_SCHED_HOP_US 20.0

/**
 * @brief How many ranks of the fullest node exchange with a rank on another
 *        node in a step where rank r's partner is (r + @p dist) mod nranks
 *        (@p xor_partner 0) or r XOR @p dist (1; partners >= nranks
 *        ignored), for ranks_per_node consecutive ranks per node; at least 1
 *        (the step's bytes then cost one link's time). 1 within one node
 *        and for NULL @p args.
 */
double tc_algo_node_share(const tc_algo_args_t *args, int dist, int xor_partner);

/**
 * @brief The same for an algorithm where every rank sends an equal block to
 *        every other rank at once: the ranks_per_node x (nranks -
 *        ranks_per_node) blocks leaving the fullest node over the nranks - 1
 *        a rank sends, at least 1 (1 for NULL @p args).
 */
double tc_algo_node_share_all(const tc_algo_args_t *args);

/**
 * @brief Choose the algorithm for @p args: @p hint (the per-operation
 *        "algo=" hint) if not NULL, else TC_ALGO_<COLLECTIVE> (e.g.
 *        TC_ALGO_ALL_REDUCE) if set, else the cheapest applicable algorithm in
 *        the model for @p elem_size-byte elements. Logs the choice at info.
 * @param name_p receives the static name.
 * @return TC_ERR_NOT_FOUND (unknown name) or TC_ERR_UNSUPPORTED (name not
 *         applicable, or no algorithm), with the valid names in the detail.
 */
tc_status_t tc_algo_select(const tc_algo_args_t *args, size_t elem_size, const char *hint,
                           const char **name_p);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_ALGO_SCHEDULE_H */
