/* The node geometry a world communicator lets the hierarchical algorithms
 * assume, agreed by every rank.
 *
 * The hierarchical schedules take nodes of L consecutive ranks, the last node
 * holding fewer at most. Each rank knows only its own node (the launcher's
 * local rank and local size): with nodes of 3, 2 and 1 ranks, rank 0 alone
 * would take L = 3 and rank 5 L = 1, and their schedules would not match (a
 * hang until the timeout). So the ranks agree first, by one all-reduce (MAX)
 * of four numbers over a flat algorithm, and every rank derives the same L
 * from the result, or 0 (flat algorithms only) when the nodes are not such
 * blocks. Runs only when the job spans nodes (a rank whose local size is the
 * job's size knows every rank is on its node, and so do all the others), where it notes whether
 * the node runs more ranks than it has cores instead. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "comms.h"
#include "tcomms/base/log.h"

/* The flat algorithm the agreement itself runs with (any rank count). */
#define COMM_NODES_ALGO "recursive_doubling"

enum { NODES_FULL_MAX, NODES_FULL_NEG_MIN, NODES_LAST, NODES_MISPLACED, NODES_N };

/* This rank's contribution: its block [start, start + local_size). A full
 * block (not the job's last) must start at a multiple of its size. */
static void nodes_mine(int rank, int size, int local_rank, int local_size, int64_t *v)
{
    int64_t start = (int64_t)rank - local_rank, end = start + local_size;
    int full = end < size;
    v[NODES_FULL_MAX] = full ? local_size : 0;
    v[NODES_FULL_NEG_MIN] = full ? -(int64_t)local_size : INT64_MIN;
    v[NODES_LAST] = end == size ? local_size : 0;
    v[NODES_MISPLACED] = local_rank < 0 || local_rank >= local_size || start < 0 || end > size ||
                         (full && start % local_size != 0);
}

/* L from the reduced numbers (the same on every rank), or 0. */
static int nodes_geometry(const int64_t *v, int size, const char **why_p)
{
    int64_t l = v[NODES_FULL_MAX], last = v[NODES_LAST];
    if (v[NODES_MISPLACED]) {
        *why_p = "the nodes are not consecutive blocks of one size";
        return 0;
    }
    if (l == 0) {
        *why_p = "one node";
        return size;
    }
    if (-v[NODES_FULL_NEG_MIN] != l) {
        *why_p = "nodes hold different numbers of ranks";
        return 0;
    }
    if (last == 0 || last > l || (size - last) % l != 0) {
        *why_p = "the last node holds more ranks than the others";
        return 0;
    }
    *why_p = last == l ? "equal nodes" : "equal nodes, the last holding fewer";
    return (int)l;
}

/* A one-node job's ranks per core, when they outnumber the machine's online cores (else 0), for
 * the algorithms' selection (tc_algo_args_t.oversub). Every rank must select alike: the online
 * count is the machine's, the same in every rank, where the cores a rank may use (its cgroup
 * quota, its cpuset: the progress policy's count, progress.c) may differ from rank to rank. */
static double nodes_oversub(int local_size)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 && local_size > online ? (double)local_size / (double)online : 0.0;
}

tc_status_t tc_rt_comm_agree_nodes(tc_rt_comm_t *comm)
{
    tc_boot_t *boot = comm->world->boot;
    comm->ranks_per_node = comm->world->ranks_per_node = boot->local_size;
    if (boot->local_size >= comm->size) {
        comm->world->oversub = nodes_oversub(boot->local_size);
        if (comm->world->oversub > 0)
            tc_log_info(TC_SUBSYS_RUNTIME,
                        "comm '%s': %d ranks on this node's %ld cores: selection counts %.2f ranks "
                        "per core",
                        comm->name, boot->local_size, sysconf(_SC_NPROCESSORS_ONLN),
                        comm->world->oversub);
        return TC_OK;
    }
    int64_t mine[NODES_N], all[NODES_N] = {0}; /* all: written by the all-reduce */
    nodes_mine(comm->rank, comm->size, boot->local_rank, boot->local_size, mine);
    tc_hints_t hints;
    tc_hints_init(&hints);
    tc_status_t st = tc_hints_set(&hints, "algo", COMM_NODES_ALGO);
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_REDUCE,
                         .sendbuf = mine,
                         .recvbuf = all,
                         .count = NODES_N,
                         .dtype = TC_INT64,
                         .op = TC_MAX,
                         .root = -1,
                         .hints = &hints};
    comm->ranks_per_node = 0; /* the agreement itself runs flat */
    if (st == TC_OK)
        st = tc_rt_coll_run(comm, &call);
    tc_hints_free(&hints);
    if (st != TC_OK) {
        tc_error_prefix("agreeing on the ranks of each node: ");
        return st;
    }
    const char *why = "";
    comm->ranks_per_node = nodes_geometry(all, comm->size, &why);
    comm->world->ranks_per_node = comm->ranks_per_node;
    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': %d ranks, %d on this node (local rank %d): %s, %s",
                comm->name, comm->size, boot->local_size, boot->local_rank, why,
                comm->ranks_per_node > 0 ? "hierarchical algorithms may run"
                                         : "hierarchical algorithms off");
    return TC_OK;
}
