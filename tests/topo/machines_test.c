/* The fake machines (hwloc XML): devices, NUMA affinity, GPU-NIC pairing and links,
 * and the job orders built on them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/topo/topo.h"
#include "topo_test_util.h"

static tc_topo_node_t *load(const char *path)
{
    tc_topo_node_t *node = calloc(1, sizeof(*node));

    assert_non_null(node);
    if (tc_topo_node_from_xml(path, node) != TC_OK) {
        fail_msg("loading %s: %s", path, tc_last_error());
    }
    assert_int_equal(node->source, TC_TOPO_SRC_XML);
    assert_int_equal(node->hwloc_ok, 1);
    assert_int_equal(node->io_ok, 1);
    return node;
}

static tc_topo_pci_t pci(unsigned bus)
{
    return (tc_topo_pci_t)(bus << 8);
}

static void test_dgx8(void **state)
{
    tc_topo_node_t *n = load(TC_FAKE_DGX8);
    char name[32];
    int g, k;

    (void)state;
    assert_int_equal(n->npackages, 2);
    assert_int_equal(n->nnuma, 2);
    assert_int_equal(n->ncores, 16);
    assert_int_equal(n->npus, 32);
    assert_int_equal(n->cache_size[1], 1 << 20);
    assert_int_equal(n->cache_size[2], 32 << 20);
    assert_int_equal(n->nl3, 2);
    assert_int_equal(n->ngpus, 8);
    assert_int_equal(n->nnics, 9);
    for (g = 0; g < 8; g++) {
        int s = g / 2; /* switch s holds GPUs 2s, 2s+1 and NICs mlx5_2s, mlx5_2s+1 */
        snprintf(name, sizeof(name), "cuda%d", g);
        assert_string_equal(n->gpus[g].name, name);
        assert_int_equal(n->gpus[g].dev_index, g);
        assert_int_equal(n->gpus[g].pci, pci(0x10 + 0x20 * s + (g % 2 ? 3 : 1)));
        assert_int_equal(n->gpus[g].numa, g / 4);
        assert_int_equal(n->gpus[g].package, g / 4);
        assert_int_equal(n->gpus[g].pci_switch, s);
        /* paired with the NIC on its switch, one NIC each */
        assert_int_equal(n->gpus[g].nic, g);
        snprintf(name, sizeof(name), "mlx5_%d", g);
        assert_string_equal(n->nics[g].name, name);
        snprintf(name, sizeof(name), "ibp%ds0", g);
        assert_string_equal(n->nics[g].ifname, name);
        assert_int_equal(n->nics[g].kind, TC_TOPO_NIC_RDMA);
        assert_int_equal(n->nics[g].pci, pci(0x10 + 0x20 * s + (g % 2 ? 4 : 2)));
        assert_int_equal(n->nics[g].numa, g / 4);
        assert_int_equal(n->nics[g].package, g / 4);
        assert_int_equal(n->nics[g].pci_switch, s);
        for (k = 0; k < 8; k++) {
            /* same switch: 2 bridges up each side; same socket: via the package; else SYS */
            int want_link = k / 2 == s       ? TC_TOPO_LINK_PIX
                            : k / 4 == g / 4 ? TC_TOPO_LINK_NODE
                                             : TC_TOPO_LINK_SYS;
            int want_hops = k / 2 == s ? 4 : k / 4 == g / 4 ? 8 : 10;
            if (n->link[g][k] != want_link || n->hops[g][k] != want_hops) {
                fail_msg("gpu %d nic %d: link %s hops %d, expected %s %d", g, k,
                         tc_topo_link_name(n->link[g][k]), n->hops[g][k],
                         tc_topo_link_name(want_link), want_hops);
            }
        }
        /* the management NIC hangs off package 0's host bridge directly */
        assert_int_equal(n->link[g][8], g < 4 ? TC_TOPO_LINK_NODE : TC_TOPO_LINK_SYS);
        assert_int_equal(n->hops[g][8], g < 4 ? 6 : 8);
    }
    assert_string_equal(n->nics[8].name, "eno1");
    assert_string_equal(n->nics[8].ifname, "eno1");
    assert_int_equal(n->nics[8].kind, TC_TOPO_NIC_ETH);
    assert_int_equal(n->nics[8].numa, 0);
    assert_int_equal(n->nics[8].pci_switch, -1);
    free(n);
}

static void test_pcie4(void **state)
{
    tc_topo_node_t *n = load(TC_FAKE_PCIE4);
    int g;

    (void)state;
    assert_int_equal(n->npackages, 1);
    assert_int_equal(n->nnuma, 1);
    assert_int_equal(n->ncores, 8);
    assert_int_equal(n->npus, 16);
    assert_int_equal(n->ngpus, 4);
    assert_int_equal(n->nnics, 1);
    assert_string_equal(n->nics[0].name, "mlx5_0");
    assert_string_equal(n->nics[0].ifname, "enp19s0");
    assert_int_equal(n->nics[0].kind, TC_TOPO_NIC_RDMA);
    assert_int_equal(n->nics[0].numa, 0);
    assert_int_equal(n->nics[0].pci_switch, 0);
    for (g = 0; g < 4; g++) {
        assert_int_equal(n->gpus[g].dev_index, g);
        assert_int_equal(n->gpus[g].numa, 0);
        assert_int_equal(n->gpus[g].package, 0);
        assert_int_equal(n->gpus[g].pci_switch, g / 2);
        assert_int_equal(n->gpus[g].nic, 0); /* the only NIC, shared */
        /* GPUs 0, 1 share the NIC's switch; 2, 3 are on another host bridge */
        assert_int_equal(n->link[g][0], g < 2 ? TC_TOPO_LINK_PIX : TC_TOPO_LINK_NODE);
        assert_int_equal(n->hops[g][0], g < 2 ? 4 : 8);
    }
    free(n);
}

static void test_cpu2s(void **state)
{
    tc_topo_node_t *n = load(TC_FAKE_CPU2S);

    (void)state;
    assert_int_equal(n->npackages, 2);
    assert_int_equal(n->nnuma, 2);
    assert_int_equal(n->ncores, 8);
    assert_int_equal(n->npus, 16);
    assert_int_equal(n->ngpus, 0);
    assert_int_equal(n->nnics, 1);
    assert_string_equal(n->nics[0].name, "ens1f0");
    assert_int_equal(n->nics[0].kind, TC_TOPO_NIC_ETH);
    assert_int_equal(n->nics[0].numa, 1);
    assert_int_equal(n->nics[0].package, 1);
    assert_int_equal(n->nics[0].pci_switch, -1);
    free(n);
}

/* Structural checks of the tree against its definition, with the children query. */
static void check_tree(const tc_topo_job_t *job)
{
    int r, i, cross = 0, kids[64], nk, c;

    assert_int_equal(job->tree_root, job->ring[0]);
    assert_int_equal(job->tree_parent[job->tree_root], -1);
    for (r = 0; r < job->nranks; r++) {
        int steps = 0, p = r;
        while (p != job->tree_root) { /* reaches the root, no cycle */
            p = job->tree_parent[p];
            assert_true(p >= 0 && p < job->nranks);
            assert_true(++steps <= job->nranks);
        }
        if (r != job->tree_root && !tc_topo_job_same_node(job, r, job->tree_parent[r])) {
            cross++;
            /* only a node's first rank in the ring crosses nodes */
            assert_true(job->ring_pos[r] == 0 ||
                        job->rank_node[job->ring[job->ring_pos[r] - 1]] != job->rank_node[r]);
        }
        nk = tc_topo_job_tree_children(job, r, kids, 64);
        for (i = 0, c = 0; i < job->nranks; i++) {
            c += job->tree_parent[i] == r;
        }
        assert_int_equal(nk, c);
        for (i = 0; i < nk; i++) {
            assert_int_equal(job->tree_parent[kids[i]], r);
        }
    }
    assert_int_equal(cross, job->nnodes - 1);
    for (i = 0; i < job->nranks; i++) {
        assert_int_equal(job->ring_pos[job->ring[i]], i);
    }
}

/* 16 ranks round robin over two DGX nodes. */
static void test_job_two_dgx(void **state)
{
    tc_topo_node_t *dgx = load(TC_FAKE_DGX8);
    tc_topo_node_t *nodes = calloc(16, sizeof(*nodes));
    const int ring[16] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
    tc_topo_job_t job;
    int r;

    (void)state;
    assert_non_null(nodes);
    for (r = 0; r < 16; r++) {
        nodes[r] = *dgx;
        snprintf(nodes[r].hostname, sizeof(nodes[r].hostname), "dgx%d", r % 2);
        nodes[r].node_id = 1000 + (uint64_t)(r % 2);
    }
    assert_int_equal(tc_topo_job_build_nodes(nodes, 16, &job), TC_OK);
    assert_int_equal(job.nnodes, 2);
    for (r = 0; r < 16; r++) {
        assert_int_equal(job.rank_node[r], r % 2);
        assert_int_equal(job.local_rank[r], r / 2);
        assert_int_equal(job.rank_gpu[r], r / 2);
        assert_int_equal(job.rank_nic[r], r / 2); /* mlx5_k next to cuda k */
        assert_int_equal(job.ring[r], ring[r]);
        assert_int_equal(tc_topo_job_same_node(&job, r, (r + 2) % 16), 1);
        assert_int_equal(tc_topo_job_same_node(&job, r, (r + 1) % 16), 0);
    }
    assert_int_equal(job.tree_parent[0], -1);
    assert_int_equal(job.tree_parent[1], 0); /* node 1's first rank below node 0's */
    assert_int_equal(job.tree_parent[2], 0); /* chains inside the nodes */
    assert_int_equal(job.tree_parent[15], 13);
    check_tree(&job);
    assert_int_equal(tc_topo_job_same_node(&job, 0, 16), 0);
    assert_int_equal(tc_topo_job_same_node(&job, -1, 0), 0);
    tc_topo_job_free(&job);
    free(nodes);
    free(dgx);
}

/* 8 ranks on one 4-GPU box: two ranks per GPU; ring neighbours share GPU, then switch. */
static void test_job_pcie4_switch_order(void **state)
{
    tc_topo_node_t *box = load(TC_FAKE_PCIE4);
    tc_topo_node_t *nodes = calloc(8, sizeof(*nodes));
    const int ring[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    const int parent[8] = {-1, 4, 5, 6, 0, 1, 2, 3};
    tc_topo_job_t job;
    int r, kids[4];

    (void)state;
    for (r = 0; r < 8; r++) {
        nodes[r] = *box;
    }
    assert_int_equal(tc_topo_job_build_nodes(nodes, 8, &job), TC_OK);
    assert_int_equal(job.nnodes, 1);
    for (r = 0; r < 8; r++) {
        assert_int_equal(job.rank_gpu[r], r % 4);
        assert_int_equal(job.rank_nic[r], 0);
        assert_int_equal(job.ring[r], ring[r]);
        assert_int_equal(job.tree_parent[r], parent[r]);
    }
    assert_int_equal(tc_topo_job_tree_children(&job, 0, kids, 4), 1);
    assert_int_equal(kids[0], 4);
    assert_int_equal(tc_topo_job_tree_children(&job, 7, kids, 4), 0);
    assert_int_equal(tc_topo_job_tree_children(&job, 8, kids, 4), -1);
    check_tree(&job);
    tc_topo_job_free(&job);
    free(nodes);
    free(box);
}

/* Three different machines, blocked placement: DGX (ranks 0-3), CPU (4-5), PCIe box (6-8). */
static void test_job_mixed(void **state)
{
    tc_topo_node_t *dgx = load(TC_FAKE_DGX8), *cpu = load(TC_FAKE_CPU2S);
    tc_topo_node_t *box = load(TC_FAKE_PCIE4);
    tc_topo_node_t *nodes = calloc(9, sizeof(*nodes));
    const int gpu[9] = {0, 1, 2, 3, -1, -1, 0, 1, 2};
    const int nic[9] = {0, 1, 2, 3, 0, 0, 0, 0, 0};
    const int parent[9] = {-1, 0, 1, 2, 0, 4, 0, 6, 7};
    tc_topo_job_t job;
    int r, kids[8];

    (void)state;
    for (r = 0; r < 9; r++) {
        nodes[r] = r < 4 ? *dgx : r < 6 ? *cpu : *box;
        nodes[r].node_id = r < 4 ? 7 : r < 6 ? 8 : 9;
    }
    assert_int_equal(tc_topo_job_build_nodes(nodes, 9, &job), TC_OK);
    assert_int_equal(job.nnodes, 3);
    for (r = 0; r < 9; r++) {
        assert_int_equal(job.rank_gpu[r], gpu[r]);
        assert_int_equal(job.rank_nic[r], nic[r]);
        assert_int_equal(job.ring[r], r);
        assert_int_equal(job.tree_parent[r], parent[r]);
    }
    /* the root: its chain successor, then the first ranks of nodes 1 and 2 */
    assert_int_equal(tc_topo_job_tree_children(&job, 0, kids, 8), 3);
    assert_int_equal(kids[0], 1);
    assert_int_equal(kids[1], 4);
    assert_int_equal(kids[2], 6);
    assert_int_equal(tc_topo_job_tree_children(&job, 0, kids, 1), 3); /* count beyond max */
    check_tree(&job);
    tc_topo_job_free(&job);

    /* a node whose GPU points at a NIC it does not have is refused */
    nodes[6].gpus[1].nic = 5;
    assert_int_equal(tc_topo_job_build_nodes(nodes, 9, &job), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "rank 6: GPU 1 is paired with NIC 5 of 1"));
    assert_int_equal(tc_topo_job_build_nodes(NULL, 9, &job), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_topo_job_build_nodes(nodes, 0, &job), TC_ERR_INVALID_ARG);
    free(nodes);
    free(box);
    free(cpu);
    free(dgx);
}

/* Ids only: no GPU or NIC, the ring groups nodes, a larger random layout. */
static void test_job_ids_orders(void **state)
{
    enum { N = 300 };
    static uint64_t ids[N];
    uint64_t s = 99;
    tc_topo_job_t job;
    int i, k, seen[N];

    (void)state;
    for (i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = 1 + (s >> 33) % 23;
    }
    assert_int_equal(tc_topo_job_build(ids, N, &job), TC_OK);
    memset(seen, 0, sizeof(seen));
    for (i = 0; i < N; i++) {
        assert_int_equal(job.rank_gpu[i], -1);
        assert_int_equal(job.rank_nic[i], -1);
        seen[job.ring[i]]++;
        /* nodes in order, ranks ascending inside a node */
        if (i > 0) {
            k = job.rank_node[job.ring[i - 1]];
            assert_true(k < job.rank_node[job.ring[i]] ||
                        (k == job.rank_node[job.ring[i]] && job.ring[i - 1] < job.ring[i]));
        }
    }
    for (i = 0; i < N; i++) {
        assert_int_equal(seen[i], 1);
    }
    check_tree(&job);
    tc_topo_job_free(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx8),
        cmocka_unit_test(test_pcie4),
        cmocka_unit_test(test_cpu2s),
        cmocka_unit_test(test_job_two_dgx),
        cmocka_unit_test(test_job_pcie4_switch_order),
        cmocka_unit_test(test_job_mixed),
        cmocka_unit_test(test_job_ids_orders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
