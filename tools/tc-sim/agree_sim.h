/* The shrink agreement's state machine (runtime/include/tcomms/runtime/agree.h)
 * run for every rank of a job over a simulated network with crashes: used by
 * tc-scale-sim for its figures and by tests/runtime/agree_scale_test.c to
 * check it at up to 131072 ranks.
 *
 * The network is synchronous rounds: in each, every rank taking part gets the
 * message of each neighbour that sends to it. A crash happens in a round,
 * during the rank's sends: each neighbour gets its message with probability
 * 1/2. Failures are learnt through the exchange (a message that does not
 * come) and, for each rank with probability 1/2, from outside (the failure
 * detector's verdict) at the end of the crash's round or at the start of one
 * of the 4 after it. A rank dead before the start is known to each other
 * rank with probability 1/2. Everything random comes from the seed. */
#ifndef TCOMMS_TOOLS_AGREE_SIM_H
#define TCOMMS_TOOLS_AGREE_SIM_H

#include <stdint.h>

typedef struct agree_sim_params {
    int ranks;        /* job size */
    int dense_max;    /* all-to-all up to this size (as TC_SHRINK_DENSE_MAX) */
    int predead;      /* ranks dead before the agreement */
    int crashes;      /* ranks crashing during it */
    int crash_rounds; /* crashes fall in rounds 1..crash_rounds (0: the failure-free length) */
    int cluster;      /* 1: the failures are the ranks nearest rank 0 (breadth first), not random */
    uint64_t seed;
} agree_sim_params_t;

typedef struct agree_sim_result {
    int rounds;               /* until the last survivor finished */
    int diameter, window;     /* the graph's */
    int peers_max;            /* neighbours of a rank, at most */
    int survivors, cut_off;   /* finished; said they are cut off */
    int decided;              /* ranks in the decided set */
    int dead_left_in;         /* ranks that died but are not in it (died after the decision) */
    uint64_t msgs_max;        /* messages one rank sent, at most */
    uint64_t bytes_max;       /* bytes one rank sent, at most */
    double msgs_mean;         /* per surviving rank */
    double bytes_mean;        /* per surviving rank */
    uint64_t rounds_msgs_max; /* messages one rank sent in one round, at most */
    char violation[256];      /* empty when every check held */
} agree_sim_result_t;

/* Run one scenario. Returns 0, or -1 (out of memory, bad parameters; the
 * reason in violation). The checks: every survivor finishes, with no error,
 * within (failures + 2) x (window + diameter + 2) + 1 rounds; all with the
 * same set and id; the set holds only ranks that died; no live rank waits
 * for a live one that does not send to it; a rank says it is cut off only
 * when every neighbour died. */
int agree_sim_run(const agree_sim_params_t *p, agree_sim_result_t *res);

#endif
