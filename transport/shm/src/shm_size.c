/* How big a pair segment is: the geometries a creator tries, from the configured one down to a
 * floor, and which fits the share of /dev/shm one pair may take. Pure, for unit tests. */
#include "shm_internal.h"

/* Peers a rank is assumed to talk to when sharing /dev/shm out: the lazily connected
 * algorithms reach about 2 log2(n) of them; a small communicator's lanes reach all. */
#define TC_SHM_PEERS_ASSUMED 32

/* The smaller geometries, in order: each at most the one before (and the configured one). */
static const struct {
    uint32_t cell_size, ncells;
} tc_shm_steps[TC_SHM_LEVELS - 1] = {{8192, 8}, {4096, 4}, {1024, 4}};

size_t tc_shm_geom_reserve(uint32_t cell_size, uint32_t ncells)
{
    size_t ring = (size_t)2 * TC_SHM_LINE + (size_t)ncells * (TC_SHM_CELL_HDR + cell_size);
    return TC_SHM_HDR_SIZE + 2 * ring;
}

size_t tc_shm_geom_seg_size(uint32_t cell_size, uint32_t ncells, size_t page)
{
    size_t size = tc_shm_geom_reserve(cell_size, ncells) + 2 * TC_SHM_LANE_BYTES;
    return (size + page - 1) / page * page;
}

uint64_t tc_shm_pair_budget(uint64_t free_bytes, uint32_t local_ranks)
{
    uint64_t l = local_ranks > 0 ? local_ranks : 1;
    uint64_t peers = l - 1 < TC_SHM_PEERS_ASSUMED ? l - 1 : TC_SHM_PEERS_ASSUMED;
    uint64_t pairs = l * peers / 2;
    if (pairs == 0)
        pairs = 1;
    /* half for the rings; the rest stays for the lanes (reserved on first use) and windows */
    return free_bytes / pairs / 2;
}

int tc_shm_geom_plan(uint32_t cell_size, uint32_t ncells, uint64_t budget, tc_shm_geom_t *out)
{
    tc_shm_geom_t all[TC_SHM_LEVELS];
    int n = 0;
    all[n++] = (tc_shm_geom_t){cell_size, ncells, tc_shm_geom_reserve(cell_size, ncells)};
    for (int i = 0; i < TC_SHM_LEVELS - 1; i++) {
        uint32_t c = tc_shm_steps[i].cell_size < cell_size ? tc_shm_steps[i].cell_size : cell_size;
        uint32_t k = tc_shm_steps[i].ncells < ncells ? tc_shm_steps[i].ncells : ncells;
        size_t r = tc_shm_geom_reserve(c, k);
        if (r < all[n - 1].reserve)
            all[n++] = (tc_shm_geom_t){c, k, r};
    }
    /* the largest that fits the budget first, then the smaller ones; the floor always */
    int first = 0;
    while (first < n - 1 && all[first].reserve > budget)
        first++;
    for (int i = first; i < n; i++)
        out[i - first] = all[i];
    return n - first;
}
