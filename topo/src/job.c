/* The layout of a job: which node each rank is on, local ranks, node leaders, the
 * GPU and NIC of each rank, and ring and tree orders that follow nodes and switches. */
#include <stdlib.h>
#include <string.h>

#include "tcomms/topo/topo.h"

typedef struct tc_topo_pair {
    uint64_t id;
    int rank;
} tc_topo_pair_t;

static int tc_topo_pair_cmp(const void *pa, const void *pb)
{
    const tc_topo_pair_t *a = pa, *b = pb;

    if (a->id != b->id) {
        return a->id < b->id ? -1 : 1;
    }
    return a->rank < b->rank ? -1 : (a->rank > b->rank);
}

/* Node of each rank, local ranks, leaders (the orders are added by tc_topo_job_orders). */
static tc_status_t tc_topo_job_layout(const uint64_t *node_ids, int nranks, tc_topo_job_t *job_p)
{
    tc_topo_job_t job;
    tc_topo_pair_t *pairs = NULL;
    int *group_of_rank = NULL, *group_node = NULL;
    int i, g, ngroups = 0, node;
    size_t n;

    if (node_ids == NULL || job_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_job_build: %s is NULL",
                            node_ids == NULL ? "node_ids" : "job_p");
    }
    if (nranks < 1) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_job_build: nranks %d (must be >= 1)",
                            nranks);
    }
    memset(&job, 0, sizeof(job));
    n = (size_t)nranks;
    pairs = malloc(n * sizeof(*pairs));
    group_of_rank = malloc(n * sizeof(int));
    group_node = malloc(n * sizeof(int));
    job.rank_node = malloc(n * sizeof(int));
    job.local_rank = malloc(n * sizeof(int));
    job.local_size = malloc(n * sizeof(int));
    if (pairs == NULL || group_of_rank == NULL || group_node == NULL || job.rank_node == NULL ||
        job.local_rank == NULL || job.local_size == NULL) {
        goto nomem;
    }

    /* Group the ranks by id; within a group, ranks ascend: local rank = position. */
    for (i = 0; i < nranks; i++) {
        pairs[i].id = node_ids[i];
        pairs[i].rank = i;
    }
    qsort(pairs, n, sizeof(*pairs), tc_topo_pair_cmp);
    for (i = 0; i < nranks; i++) {
        if (i == 0 || pairs[i].id != pairs[i - 1].id) {
            ngroups++;
            job.local_rank[pairs[i].rank] = 0;
        } else {
            job.local_rank[pairs[i].rank] = job.local_rank[pairs[i - 1].rank] + 1;
        }
        group_of_rank[pairs[i].rank] = ngroups - 1;
    }

    /* Number the groups (nodes) by their lowest rank: scan ranks in order. */
    job.node_leader = malloc((size_t)ngroups * sizeof(int));
    job.node_size = calloc((size_t)ngroups, sizeof(int));
    job.node_ids = malloc((size_t)ngroups * sizeof(uint64_t));
    if (job.node_leader == NULL || job.node_size == NULL || job.node_ids == NULL) {
        goto nomem;
    }
    for (g = 0; g < ngroups; g++) {
        group_node[g] = -1;
    }
    for (i = 0, node = 0; i < nranks; i++) {
        g = group_of_rank[i];
        if (group_node[g] < 0) {
            group_node[g] = node;
            job.node_leader[node] = i;
            job.node_ids[node] = node_ids[i];
            node++;
        }
        job.rank_node[i] = group_node[g];
        job.node_size[group_node[g]]++;
    }
    for (i = 0; i < nranks; i++) {
        job.local_size[i] = job.node_size[job.rank_node[i]];
    }
    job.nranks = nranks;
    job.nnodes = ngroups;
    free(group_node);
    free(group_of_rank);
    free(pairs);
    *job_p = job;
    return TC_OK;

nomem:
    tc_topo_job_free(&job);
    free(group_node);
    free(group_of_rank);
    free(pairs);
    return tc_error_set(TC_ERR_NO_MEMORY, "tc_topo_job_build: no memory for %d ranks", nranks);
}

void tc_topo_job_free(tc_topo_job_t *job)
{
    if (job == NULL) {
        return;
    }
    free(job->tree_parent);
    free(job->ring_pos);
    free(job->ring);
    free(job->rank_nic);
    free(job->rank_gpu);
    free(job->node_ids);
    free(job->node_size);
    free(job->node_leader);
    free(job->local_size);
    free(job->local_rank);
    free(job->rank_node);
    memset(job, 0, sizeof(*job));
}

typedef struct tc_topo_ring_key {
    int node;
    unsigned sw; /* switch of the rank's device; none (-1) sorts last */
    int gpu;
    int rank;
} tc_topo_ring_key_t;

static int tc_topo_ring_cmp(const void *pa, const void *pb)
{
    const tc_topo_ring_key_t *a = pa, *b = pb;

    if (a->node != b->node) {
        return a->node < b->node ? -1 : 1;
    }
    if (a->sw != b->sw) {
        return a->sw < b->sw ? -1 : 1;
    }
    if (a->gpu != b->gpu) {
        return a->gpu < b->gpu ? -1 : 1;
    }
    return a->rank < b->rank ? -1 : (a->rank > b->rank);
}

/* The NIC of a rank on a node without GPUs: round robin over the RDMA NICs, else all. */
static int tc_topo_cpu_nic(const tc_topo_node_t *node, int local_rank)
{
    int n, nrdma = 0, k;

    for (n = 0; n < node->nnics; n++) {
        nrdma += node->nics[n].kind == TC_TOPO_NIC_RDMA;
    }
    if (nrdma == 0) {
        return node->nnics > 0 ? local_rank % node->nnics : -1;
    }
    k = local_rank % nrdma;
    for (n = 0; n < node->nnics; n++) {
        if (node->nics[n].kind == TC_TOPO_NIC_RDMA && k-- == 0) {
            return n;
        }
    }
    return -1;
}

/* GPU, NIC, ring and tree of every rank; @p nodes may be NULL (ids only). */
static tc_status_t tc_topo_job_orders(tc_topo_job_t *job, const tc_topo_node_t *nodes)
{
    size_t n = (size_t)job->nranks;
    tc_topo_ring_key_t *keys = malloc(n * sizeof(*keys));
    int *head_pos = malloc((size_t)job->nnodes * sizeof(int));
    int r, i, k;

    job->rank_gpu = malloc(n * sizeof(int));
    job->rank_nic = malloc(n * sizeof(int));
    job->ring = malloc(n * sizeof(int));
    job->ring_pos = malloc(n * sizeof(int));
    job->tree_parent = malloc(n * sizeof(int));
    if (keys == NULL || head_pos == NULL || job->rank_gpu == NULL || job->rank_nic == NULL ||
        job->ring == NULL || job->ring_pos == NULL || job->tree_parent == NULL) {
        free(head_pos);
        free(keys);
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_topo_job_build: no memory for %d ranks",
                            job->nranks);
    }
    for (r = 0; r < job->nranks; r++) {
        const tc_topo_node_t *node =
            nodes != NULL ? &nodes[job->node_leader[job->rank_node[r]]] : NULL;
        int gpu = -1, nic = -1, sw = -1;

        if (node != NULL && node->ngpus > 0) {
            gpu = job->local_rank[r] % node->ngpus;
            nic = node->gpus[gpu].nic;
            sw = node->gpus[gpu].pci_switch;
        } else if (node != NULL) {
            nic = tc_topo_cpu_nic(node, job->local_rank[r]);
            sw = nic >= 0 ? node->nics[nic].pci_switch : -1;
        }
        job->rank_gpu[r] = gpu;
        job->rank_nic[r] = nic;
        keys[r].node = job->rank_node[r];
        keys[r].sw = (unsigned)sw;
        keys[r].gpu = gpu;
        keys[r].rank = r;
    }
    qsort(keys, n, sizeof(*keys), tc_topo_ring_cmp);
    for (i = 0; i < job->nranks; i++) {
        job->ring[i] = keys[i].rank;
        job->ring_pos[keys[i].rank] = i;
        if (i == 0 || keys[i].node != keys[i - 1].node) {
            head_pos[keys[i].node] = i;
        }
    }
    /* a chain inside each node, a binary tree over the nodes' first ranks */
    for (i = 0; i < job->nranks; i++) {
        r = job->ring[i];
        k = job->rank_node[r];
        if (i != head_pos[k]) {
            /* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign): i > 0, head_pos[k] <= i */
            job->tree_parent[r] = job->ring[i - 1];
        } else {
            job->tree_parent[r] = k == 0 ? -1 : job->ring[head_pos[(k - 1) / 2]];
        }
    }
    job->tree_root = job->ring[0];
    free(head_pos);
    free(keys);
    return TC_OK;
}

tc_status_t tc_topo_job_build(const uint64_t *node_ids, int nranks, tc_topo_job_t *job_p)
{
    tc_topo_job_t job;
    tc_status_t st;

    /* a NULL job_p is reported by the layout */
    if ((st = tc_topo_job_layout(node_ids, nranks, job_p != NULL ? &job : NULL)) != TC_OK) {
        return st;
    }
    if ((st = tc_topo_job_orders(&job, NULL)) != TC_OK) {
        tc_topo_job_free(&job);
        return st;
    }
    *job_p = job;
    return TC_OK;
}

tc_status_t tc_topo_job_build_nodes(const tc_topo_node_t *nodes, int nranks, tc_topo_job_t *job_p)
{
    tc_topo_job_t job;
    uint64_t *ids;
    tc_status_t st;
    int r, g;

    if (nodes == NULL || job_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_job_build_nodes: %s is NULL",
                            nodes == NULL ? "nodes" : "job_p");
    }
    if (nranks < 1) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_job_build_nodes: nranks %d (must be >= 1)",
                            nranks);
    }
    for (r = 0; r < nranks; r++) {
        const tc_topo_node_t *node = &nodes[r];
        if (node->ngpus < 0 || node->ngpus > TC_TOPO_MAX_GPUS || node->nnics < 0 ||
            node->nnics > TC_TOPO_MAX_NICS) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "tc_topo_job_build_nodes: rank %d: %d GPUs "
                                "and %d NICs (at most %d and %d)",
                                r, node->ngpus, node->nnics, TC_TOPO_MAX_GPUS, TC_TOPO_MAX_NICS);
        }
        for (g = 0; g < node->ngpus; g++) {
            if (node->gpus[g].nic < -1 || node->gpus[g].nic >= node->nnics) {
                return tc_error_set(TC_ERR_INVALID_ARG,
                                    "tc_topo_job_build_nodes: rank %d: "
                                    "GPU %d is paired with NIC %d of %d",
                                    r, g, node->gpus[g].nic, node->nnics);
            }
        }
    }
    if ((ids = malloc((size_t)nranks * sizeof(*ids))) == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_topo_job_build_nodes: no memory for %d ranks",
                            nranks);
    }
    for (r = 0; r < nranks; r++) {
        ids[r] = nodes[r].node_id;
    }
    st = tc_topo_job_layout(ids, nranks, &job);
    free(ids);
    if (st != TC_OK) {
        return st;
    }
    if ((st = tc_topo_job_orders(&job, nodes)) != TC_OK) {
        tc_topo_job_free(&job);
        return st;
    }
    *job_p = job;
    return TC_OK;
}

int tc_topo_job_same_node(const tc_topo_job_t *job, int a, int b)
{
    if (job == NULL || job->rank_node == NULL || a < 0 || b < 0 || a >= job->nranks ||
        b >= job->nranks) {
        return 0;
    }
    return job->rank_node[a] == job->rank_node[b];
}

int tc_topo_job_tree_children(const tc_topo_job_t *job, int rank, int *children, int max)
{
    int count = 0, pos, k, c, j, head, child_node;

    if (job == NULL || job->ring == NULL || rank < 0 || rank >= job->nranks) {
        return -1;
    }
    pos = job->ring_pos[rank];
    k = job->rank_node[rank];
    /* the next rank of the chain inside the node */
    if (pos + 1 < job->nranks && job->rank_node[job->ring[pos + 1]] == k) {
        if (count < max) {
            children[count] = job->ring[pos + 1];
        }
        count++;
    }
    /* the first ranks of nodes 2k+1 and 2k+2, when this rank is its node's first */
    if (pos == 0 || job->rank_node[job->ring[pos - 1]] != k) {
        for (c = 1; c <= 2; c++) {
            child_node = 2 * k + c;
            if (child_node >= job->nnodes) {
                break;
            }
            /* nodes are contiguous in the ring, in node order */
            for (head = 0, j = 0; j < child_node; j++) {
                head += job->node_size[j];
            }
            if (count < max) {
                children[count] = job->ring[head];
            }
            count++;
        }
    }
    return count;
}
