/* Sizing of pair segments (shm_size.c) against figures worked out by hand, and a real pair
 * whose share of /dev/shm is tiny: it gets the floor geometry, still moves messages of every
 * path whole, and its lanes are reserved only when asked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "transport/shm/src/shm_internal.h"
#include "shm_util.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

#define MIB (1024ull * 1024ull)

static void test_reserve_and_size(void **state)
{
    (void)state;
    /* 2304 header + 2 rings of (2 lines + 32 cells of 64 + 8192) */
    assert_int_equal(tc_shm_geom_reserve(8192, 32), 2304 + 2 * (128 + 32 * 8256));
    assert_int_equal(tc_shm_geom_reserve(1024, 4), 2304 + 2 * (128 + 4 * 1088));
    /* 11264 + 2 lanes of 384 (ack words of 48 slots) + 32 slots of 128 + 12 of 576 + 4 of 8256:
     * 100096, rounded up to 4 KiB pages: 102400 */
    assert_int_equal(tc_shm_geom_seg_size(1024, 4, 4096), 102400);
}

static void test_budget(void **state)
{
    (void)state;
    /* 256 ranks, 32 peers each assumed: 4096 pairs, half the space for rings */
    assert_int_equal(tc_shm_pair_budget(64 * MIB, 256), 64 * MIB / 4096 / 2);
    /* 32 ranks: all 31 peers: 496 pairs */
    assert_int_equal(tc_shm_pair_budget(64 * MIB, 32), 64 * MIB / 496 / 2);
    assert_int_equal(tc_shm_pair_budget(64 * MIB, 2), 32 * MIB);
    assert_int_equal(tc_shm_pair_budget(64 * MIB, 1), 32 * MIB);
    assert_int_equal(tc_shm_pair_budget(64 * MIB, 0), 32 * MIB);
    assert_int_equal(tc_shm_pair_budget(0, 256), 0);
}

static void expect_plan(uint32_t cell, uint32_t ncells, uint64_t budget, int n,
                        const uint32_t (*want)[2])
{
    tc_shm_geom_t plan[TC_SHM_LEVELS];
    memset(plan, 0xa5, sizeof(plan));
    assert_int_equal(tc_shm_geom_plan(cell, ncells, budget, plan), n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(plan[i].cell_size, want[i][0]);
        assert_int_equal(plan[i].ncells, want[i][1]);
        assert_int_equal(plan[i].reserve, tc_shm_geom_reserve(want[i][0], want[i][1]));
    }
}

static void test_plan(void **state)
{
    (void)state;
    static const uint32_t all[4][2] = {{8192, 32}, {8192, 8}, {4096, 4}, {1024, 4}};
    /* plenty of space (2 ranks, 64 MiB): the configured geometry, the rest as fall-backs */
    expect_plan(8192, 32, tc_shm_pair_budget(64 * MIB, 2), 4, all);
    /* exactly the configured reserve fits; one byte less does not */
    expect_plan(8192, 32, 530944, 4, all);
    expect_plan(8192, 32, 530943, 3, all + 1);
    /* 32 ranks in 64 MiB: 67650 bytes a pair: 4 cells of 4096 (35840), then the floor */
    expect_plan(8192, 32, tc_shm_pair_budget(64 * MIB, 32), 2, all + 2);
    /* 256 ranks in 64 MiB (8192 a pair) and no space at all: the floor alone */
    expect_plan(8192, 32, tc_shm_pair_budget(64 * MIB, 256), 1, all + 3);
    expect_plan(8192, 32, 0, 1, all + 3);
    /* configured smaller than the steps: never larger than asked, equal steps dropped */
    static const uint32_t small[3][2] = {{512, 16}, {512, 8}, {512, 4}};
    expect_plan(512, 16, UINT64_MAX, 3, small);
    static const uint32_t tiny[1][2] = {{64, 2}};
    expect_plan(64, 2, UINT64_MAX, 1, tiny);
    /* more cells than configured are never added: 1 MiB cells, 2 of them */
    static const uint32_t big[4][2] = {{1u << 20, 2}, {8192, 2}, {4096, 2}, {1024, 2}};
    expect_plan(1u << 20, 2, UINT64_MAX, 4, big);
}

/* A pair told the node has 1M ranks: its share of any /dev/shm is below the floor. */
static void test_floor_pair(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_local_ranks=1048576");
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < 2; i++) {
        void *base;
        size_t len;
        assert_int_equal(tc_tp_shm_ep_segment(p.ep[i], &base, &len), TC_OK);
        assert_int_equal(len, tc_shm_geom_seg_size(1024, 4, page));
        const tc_shm_seg_hdr_t *h = base;
        assert_int_equal(h->cell_size, 1024);
        assert_int_equal(h->ncells, 4);
    }
    /* the creator (id 0) counts the header and rings, not yet the lanes */
    tc_shm_ctx_t *c0 = (tc_shm_ctx_t *)p.ctx[0];
    size_t rings = (tc_shm_geom_reserve(1024, 4) + page - 1) / page * page;
    assert_int_equal(c0->shm_bytes, rings);
    assert_int_equal(c0->nsegs, 1);
    assert_int_equal(((tc_shm_ctx_t *)p.ctx[1])->shm_bytes, 0);
    /* eager, pipelined or single copy, and a burst that wraps the 4 cells many times */
    static const size_t lens[] = {0, 1, 1024, 1025, 4096, 100000, 3u << 20};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        unsigned char *src = malloc(lens[k] + 1);
        assert_non_null(src);
        tc_tpt_fill(src, lens[k], 7 + k);
        /* above a cell the send waits for the receive: post that first */
        tc_tpt_transfer(&p, (int)(k % 2), 100 + k, src, lens[k], 7 + k,
                        lens[k] > 1024 || k % 3 == 0);
        free(src);
    }
    static const size_t burst[] = {10, 1000, 1024, 2000, 50, 9000, 1, 0, 700, 1023, 77, 5000};
    tc_tpt_many_in_flight(&p, 12, burst, 5);
    /* the lanes: reserved on the first ask, counted once, by the creator */
    tc_tp_shm_lane_t *lane;
    assert_int_equal(tc_tp_shm_ep_lane(p.ep[1], &lane), TC_OK);
    assert_int_equal(tc_tp_shm_ep_lane(p.ep[0], &lane), TC_OK);
    assert_int_equal(tc_tp_shm_ep_lane(p.ep[0], &lane), TC_OK);
    assert_int_equal(c0->shm_bytes, tc_shm_geom_seg_size(1024, 4, page));
    tc_tp_ep_close(p.ep[0]);
    p.ep[0] = NULL;
    assert_int_equal(c0->shm_bytes, 0);
    assert_int_equal(c0->nsegs, 0);
    tc_tpt_pair_close(&p);
}

/* What a creator leaves in /dev/shm before the opener comes: the final size at once, with the
 * header and rings reserved (charged) and the lanes not. */
static void test_creator_reserves_rings_only(void **state)
{
    (void)state;
    tc_tp_ctx_t *c0 = tc_shmt_ctx_new(0, NULL, NULL), *c1 = tc_shmt_ctx_new(1, NULL, NULL);
    unsigned char addr[TC_TP_SHM_ADDR_LEN];
    tc_shmt_addr(c1, addr);
    tc_tp_ep_t *ep = NULL;
    assert_int_equal(tc_tp_ep_connect(c0, 1, addr, sizeof(addr), &ep), TC_OK);
    const tc_shm_ep_t *e = (const tc_shm_ep_t *)ep;
    int fd = shm_open(e->name, O_RDONLY, 0);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    close(fd);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal((size_t)st.st_size, tc_shm_geom_seg_size(e->cell_size, e->ncells, page));
    uint64_t charged = (uint64_t)st.st_blocks * 512;
    assert_true(charged >= tc_shm_geom_reserve(e->cell_size, e->ncells));
    assert_true(charged < tc_shm_geom_reserve(e->cell_size, e->ncells) + TC_SHM_LANE_BYTES);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(c0);
    tc_tp_ctx_destroy(c1);
}

/* The default pair on a machine with room keeps the configured geometry. */
static void test_default_pair(void **state)
{
    (void)state;
    uint64_t avail = 0;
    assert_int_equal(tc_shm_free_bytes(&avail), TC_OK);
    if (avail < 64 * MIB)
        skip();
    tp_pair_t p;
    tc_shmt_pair_open(&p, NULL);
    void *base;
    size_t len;
    assert_int_equal(tc_tp_shm_ep_segment(p.ep[0], &base, &len), TC_OK);
    const tc_shm_seg_hdr_t *h = base;
    assert_int_equal(h->cell_size, 8192);
    assert_int_equal(h->ncells, 32);
    tc_tpt_pair_close(&p);
}

/* What the context's pre-flight says when even the floor does not fit. */
static void test_preflight_message(void **state)
{
    (void)state;
    assert_int_equal(tc_shm_preflight((size_t)1 << 62, 1024, 4), TC_ERR_NO_RESOURCE);
    const char *e = tc_last_error();
    assert_non_null(strstr(e, "/dev/shm has"));
    assert_non_null(strstr(e, "MiB free"));
    assert_non_null(strstr(e, "4 cells of 1024 bytes"));
    assert_non_null(strstr(e, "--shm-size"));
    assert_int_equal(tc_shm_preflight(4096, 1024, 4), TC_OK);
}

static void test_bad_hint(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_shmt_ctx_try(0, NULL, "shm_local_ranks=0", &ctx), TC_ERR_CONFIG);
    assert_int_equal(tc_shmt_ctx_try(0, NULL, "shm_local_ranks=many", &ctx), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "shm_local_ranks"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_and_size),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_floor_pair),
        cmocka_unit_test(test_creator_reserves_rings_only),
        cmocka_unit_test(test_default_pair),
        cmocka_unit_test(test_bad_hint),
        cmocka_unit_test(test_preflight_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
