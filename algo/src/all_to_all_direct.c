/*
 * All-to-all, pairwise and linear (direct): rank r sends block q of its
 * input to rank q and receives block r of every rank into block q of recv.
 * pairwise: at step k = 1..p-1 send to r+k and receive from r-k (one
 * partner per step, no hot spot); linear: in rank order.
 * Cost = (p-1) alpha + (p-1) n beta (n = count, the block).
 * The messages touch disjoint blocks: no dependencies.
 *
 * all_to_all_v (a2a_counts set): the same order with per-pair blocks; a pair
 * with 0 elements exchanges no message (both sides read the same matrix
 * entry, so they agree), which keeps sparse exchanges cheap. Cost: the
 * busiest rank's non-empty messages and elements.
 */
#include <stdlib.h>
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_TO_ALL, pairwise, all_to_all_pairwise, tc_algo_applies_not_in_place, 10);
TC_ALGO_DEFINE(ALL_TO_ALL, linear, all_to_all_linear, tc_algo_applies_not_in_place, 20);

/* Rank r's blocks: to q at soff[q] (len scnt(q)), from q at roff[q] (rcnt(q)). */
typedef struct tc_a2a_blocks {
    const tc_algo_args_t *args;
    uint64_t *soff, *roff; /* v: [p] each; uniform: NULL */
} tc_a2a_blocks_t;

static uint64_t tc_a2a_scnt(const tc_a2a_blocks_t *b, int q)
{
    return b->soff == NULL ? b->args->count : tc_algo_a2av_count(b->args, b->args->rank, q);
}

static uint64_t tc_a2a_rcnt(const tc_a2a_blocks_t *b, int q)
{
    return b->roff == NULL ? b->args->count : tc_algo_a2av_count(b->args, q, b->args->rank);
}

static uint64_t tc_a2a_soff(const tc_a2a_blocks_t *b, int q)
{
    return b->soff == NULL ? (uint64_t)q * b->args->count : b->soff[q];
}

static uint64_t tc_a2a_roff(const tc_a2a_blocks_t *b, int q)
{
    return b->roff == NULL ? (uint64_t)q * b->args->count : b->roff[q];
}

static tc_status_t tc_algo_a2a_steps(const tc_a2a_blocks_t *b, tc_sched_t *sched, int pairwise)
{
    const int p = b->args->nranks, r = b->args->rank;
    uint64_t n;
    int k, q;

    if ((n = tc_a2a_scnt(b, r)) > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, tc_a2a_soff(b, r),
                                 TC_BUF_RECV, tc_a2a_roff(b, r), n, TC_STEP_NO_DEP, TC_STEP_NO_DEP,
                                 NULL));
    }
    for (k = 1; k < p; k++) {
        q = pairwise ? (r + k) % p : (k <= r ? k - 1 : k);
        if ((n = tc_a2a_scnt(b, q)) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, q, TC_BUF_SEND, tc_a2a_soff(b, q),
                                     TC_BUF_RECV, 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
        q = pairwise ? tc_algo_mod(r - k, p) : q;
        if ((n = tc_a2a_rcnt(b, q)) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, q, TC_BUF_RECV, 0, TC_BUF_RECV,
                                     tc_a2a_roff(b, q), n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
    }
    return TC_OK;
}

static tc_status_t tc_algo_a2a_direct(const tc_algo_args_t *args, tc_sched_t *sched, int pairwise)
{
    tc_a2a_blocks_t b = {args, NULL, NULL};
    tc_status_t status;

    TC_ALGO_TRY(tc_algo_args_check(args, "all_to_all"));
    TC_ALGO_TRY(tc_algo_applies_not_in_place(args));
    if (args->a2a_counts == NULL) {
        return args->count == 0 ? TC_OK : tc_algo_a2a_steps(&b, sched, pairwise);
    }
    b.soff = malloc(2 * (size_t)args->nranks * sizeof(uint64_t));
    if (b.soff == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "all_to_all_v: no memory for %d offsets",
                            2 * args->nranks);
    }
    b.roff = b.soff + args->nranks;
    status = tc_algo_a2av_offsets(args, args->rank, b.soff, b.roff, NULL, NULL);
    if (status == TC_OK) {
        status = tc_algo_a2a_steps(&b, sched, pairwise);
    }
    free(b.soff);
    return status;
}

tc_status_t tc_algo_all_to_all_pairwise(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_algo_a2a_direct(args, sched, 1);
}

tc_status_t tc_algo_all_to_all_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_algo_a2a_direct(args, sched, 0);
}

static uint64_t tc_a2a_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* v: the busiest rank's non-empty messages (sent or received) and elements. */
static void tc_algo_a2av_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    uint64_t smsgs, rmsgs, selems, relems, c, rounds = 0, elems = 0;
    int r, q;

    for (r = 0; r < p; r++) {
        smsgs = rmsgs = selems = relems = 0;
        for (q = 0; q < p; q++) {
            if (q == r) {
                continue;
            }
            if ((c = tc_algo_a2av_count(args, r, q)) > 0) {
                smsgs++;
                selems = tc_a2a_sat_add(selems, c);
            }
            if ((c = tc_algo_a2av_count(args, q, r)) > 0) {
                rmsgs++;
                relems = tc_a2a_sat_add(relems, c);
            }
        }
        cost->max_send_msgs = smsgs > cost->max_send_msgs ? smsgs : cost->max_send_msgs;
        cost->max_send_elems = selems > cost->max_send_elems ? selems : cost->max_send_elems;
        rounds = smsgs > rounds ? smsgs : rounds;
        rounds = rmsgs > rounds ? rmsgs : rounds;
        elems = selems > elems ? selems : elems;
        elems = relems > elems ? relems : elems;
    }
    cost->rounds = (double)rounds;
    cost->elems = (double)elems;
}

void tc_algo_all_to_all_pairwise_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    if (args->a2a_counts != NULL) {
        tc_algo_a2av_cost(args, cost);
        return;
    }
    if (args->count == 0 || args->nranks == 1) {
        return;
    }
    cost->rounds = args->nranks - 1;
    cost->overlap = args->nranks - 2; /* no message waits for another */
    cost->link_share = tc_algo_node_share_all(args);
    cost->elems = (double)(args->nranks - 1) * (double)args->count;
    cost->max_send_msgs = (uint64_t)(args->nranks - 1);
    cost->max_send_elems = cost->max_send_msgs * args->count;
}

void tc_algo_all_to_all_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_all_to_all_pairwise_cost(args, cost);
}
