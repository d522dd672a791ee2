/* The layout of a job: which node each rank is on, local ranks, node leaders. */
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

tc_status_t tc_topo_job_build(const uint64_t *node_ids, int nranks, tc_topo_job_t *job_p)
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
    free(job->node_ids);
    free(job->node_size);
    free(job->node_leader);
    free(job->local_size);
    free(job->local_rank);
    free(job->rank_node);
    memset(job, 0, sizeof(*job));
}
