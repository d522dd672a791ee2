/* Messages that arrive before their receive: an eager one is kept in a record of a cell's size
 * that the context reuses, so a steady stream of them allocates nothing after the first; a
 * burst of more than the context keeps allocates only the excess again; records of larger
 * (pipelined) messages are freed, never kept; every message arrives whole and in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/shm/src/shm_internal.h"
#include "shm_util.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

static void test_reuse(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_cells=64");
    tc_shm_ctx_t *rx = (tc_shm_ctx_t *)p.ctx[1];

    tc_tpt_unexpected_burst(&p, 1, 100, 1, SU_WAIT_MS);
    uint64_t base = rx->unexp_allocs;
    assert_int_equal(base, 1);
    for (int i = 0; i < 200; i++) /* one at a time: the same record each time */
        tc_tpt_unexpected_burst(&p, 1, 1 + (size_t)(i * 37) % 8192, 2 + (uint64_t)i, SU_WAIT_MS);
    assert_int_equal(rx->unexp_allocs, base);

    /* 24 in flight: the context keeps 16, so a second burst allocates 8 again */
    tc_tpt_unexpected_burst(&p, 24, 512, 300, SU_WAIT_MS);
    uint64_t after_first = rx->unexp_allocs;
    assert_int_equal(after_first, 24);
    assert_int_equal(rx->nunexp_free, TC_SHM_UNEXP_KEEP);
    tc_tpt_unexpected_burst(&p, 24, 512, 301, SU_WAIT_MS);
    assert_int_equal(rx->unexp_allocs - after_first, 24 - TC_SHM_UNEXP_KEEP);

    /* pipelined (larger than a cell, single copy off): allocated each time, never kept */
    tc_tpt_pair_close(&p);
    tc_shmt_pair_open(&p, "shm_cma=0");
    rx = (tc_shm_ctx_t *)p.ctx[1];
    for (int i = 0; i < 3; i++)
        tc_tpt_unexpected_burst(&p, 1, 3 * 8192 + 5, 400 + (uint64_t)i, SU_WAIT_MS);
    assert_int_equal(rx->unexp_allocs, 3);
    assert_int_equal(rx->nunexp_free, 0);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
