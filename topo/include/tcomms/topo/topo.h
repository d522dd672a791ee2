/**
 * @file topo.h
 * @brief What this node is made of, and where every rank of a job sits.
 *
 * A node is identified by a 64-bit id: a hash of its hostname and of its
 * boot id (/proc/sys/kernel/random/boot_id), so two containers with the
 * same hostname on different machines, or one machine before and after a
 * reboot, get different ids. Ranks exchange their ids (the caller moves
 * them: PMIx, a store, ...) and tc_topo_job_build() turns the array into
 * the job's layout.
 */
#ifndef TCOMMS_TOPO_TOPO_H
#define TCOMMS_TOPO_TOPO_H

#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Longest hostname kept, with its terminating NUL. */
#define TC_TOPO_HOSTNAME_MAX 256

/** @brief This node. */
typedef struct tc_topo_node {
    char hostname[TC_TOPO_HOSTNAME_MAX]; /**< gethostname(), NUL-terminated */
    uint64_t node_id;                    /**< tc_topo_node_id(hostname, boot id) */
    int has_boot_id;                     /**< whether the boot id was readable */
    int hwloc_ok;                        /**< whether hwloc described the machine */
    int npackages;                       /**< CPU packages (sockets); 0 when unknown */
    int nnuma;                           /**< NUMA nodes; 0 when unknown */
    int ncores;                          /**< cores; 0 when unknown */
    int npus;                            /**< processing units (hardware threads), >= 1 */
} tc_topo_node_t;

/**
 * @brief The id of a node: a 64-bit hash (FNV-1a) of the hostname and the
 *        boot id.
 * @param hostname the hostname (not NULL).
 * @param boot_id the boot id text, or NULL when unknown.
 * @return the id, never 0.
 */
uint64_t tc_topo_node_id(const char *hostname, const char *boot_id);

/**
 * @brief Describe this node.
 *
 * When hwloc cannot load the topology, a warning is logged and the picture
 * is smaller (hwloc_ok = 0, only npus, from sysconf): this is not an error.
 * The hwloc environment (HWLOC_SYNTHETIC, HWLOC_XMLFILE) is honoured.
 * @param node_p receives the description.
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL; TC_ERR_SYSTEM if the hostname
 *         cannot be read.
 */
tc_status_t tc_topo_node_probe(tc_topo_node_t *node_p);

/** @brief Where the ranks of a job sit. Arrays are owned by the job. */
typedef struct tc_topo_job {
    int nranks;         /**< ranks in the job */
    int nnodes;         /**< distinct nodes */
    int *rank_node;     /**< [nranks] node index of each rank (0..nnodes-1) */
    int *local_rank;    /**< [nranks] rank among the ranks of its node (by rank order) */
    int *local_size;    /**< [nranks] number of ranks on the node of each rank */
    int *node_leader;   /**< [nnodes] lowest rank of each node */
    int *node_size;     /**< [nnodes] ranks on each node */
    uint64_t *node_ids; /**< [nnodes] the id of each node */
} tc_topo_job_t;

/**
 * @brief Build the layout of a job from the node id of every rank.
 *
 * Nodes are numbered in the order of their lowest rank: rank 0 is on node 0,
 * and node k's leader is smaller than node k+1's. O(nranks log nranks).
 * @param node_ids the node id of each rank.
 * @param nranks number of ranks (>= 1).
 * @param job_p receives the layout; free it with tc_topo_job_free().
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL or nranks < 1; TC_ERR_NO_MEMORY.
 */
tc_status_t tc_topo_job_build(const uint64_t *node_ids, int nranks, tc_topo_job_t *job_p);

/**
 * @brief Free the arrays of a job (NULL or an already freed job is fine).
 * @param job the job.
 */
void tc_topo_job_free(tc_topo_job_t *job);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TOPO_TOPO_H */
