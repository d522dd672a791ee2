/* Linking a work to the world's running list (runtime/src/work_progress.c, tc_rt_work_link):
 * breaking a communicator ends only the works linked at that moment, so a work linked later to
 * a broken communicator must end at once with the communicator's status and reason (it would
 * otherwise wait for the failed rank until its deadline); a tolerant work (the shrink's
 * agreement) runs on, and a work of a usable communicator is linked and running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/src/comms.h"
#include "runtime/src/work.h"
#include "runtime/src/world.h"
#include "tcomms/base/status.h"

static tc_rt_world_t world;
static tc_rt_comm_t comm;

static int setup(void **state)
{
    (void)state;
    memset(&world, 0, sizeof(world));
    memset(&comm, 0, sizeof(comm));
    comm.world = &world;
    snprintf(comm.name, sizeof(comm.name), "%s", "link-test");
    return 0;
}

static void work_init(tc_rt_work_t *w, int tolerant)
{
    memset(w, 0, sizeof(*w));
    w->comm = &comm;
    w->tolerant = tolerant;
    w->failed_peer = -1;
    w->result = TC_INPROGRESS;
    tc_rt_work_set_state(w, TC_RT_WORK_RUNNING);
}

static void break_comm(void)
{
    comm.broken = TC_ERR_PEER_FAILED;
    snprintf(comm.broken_why, sizeof(comm.broken_why), "%s",
             "rank 3 (host n2, pid 4242) failed: connection reset");
}

static void test_usable_comm_links(void **state)
{
    (void)state;
    tc_rt_work_t a, b;
    work_init(&a, 0);
    work_init(&b, 0);
    assert_true(tc_rt_work_link(&a));
    assert_true(tc_rt_work_link(&b));
    assert_ptr_equal(world.active, &b);
    assert_ptr_equal(b.next, &a);
    assert_int_equal(tc_rt_work_get_state(&a), TC_RT_WORK_RUNNING);
    tc_rt_work_unlink(&b);
    tc_rt_work_unlink(&a);
    assert_null(world.active);
}

static void test_broken_comm_ends_work(void **state)
{
    (void)state;
    break_comm();
    tc_rt_work_t w;
    work_init(&w, 0);
    assert_false(tc_rt_work_link(&w));
    assert_int_equal(tc_rt_work_get_state(&w), TC_RT_WORK_DONE);
    assert_int_equal(w.result, TC_ERR_PEER_FAILED);
    assert_string_equal(w.error, comm.broken_why);
    assert_null(world.active); /* ended: off the list again */

    comm.broken = TC_ERR_REVOKED; /* the communicator's status, whichever it is */
    work_init(&w, 0);
    assert_false(tc_rt_work_link(&w));
    assert_int_equal(w.result, TC_ERR_REVOKED);
    assert_null(world.active);
}

static void test_tolerant_work_runs_on(void **state)
{
    (void)state;
    break_comm();
    tc_rt_work_t w;
    work_init(&w, 1);
    assert_true(tc_rt_work_link(&w));
    assert_int_equal(tc_rt_work_get_state(&w), TC_RT_WORK_RUNNING);
    assert_ptr_equal(world.active, &w);
    tc_rt_work_unlink(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_usable_comm_links, setup),
        cmocka_unit_test_setup(test_broken_comm_ends_work, setup),
        cmocka_unit_test_setup(test_tolerant_work_runs_on, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
