/* A shrink's communicator ids (runtime/src/comm_ids.c): held from the top of the range down, a
 * retired one held again, a move to the agreed id or, when it is taken here, to a deeper one
 * near this rank's lowest; and near exhaustion, when the agreed id is among the splits' ids
 * (below comm_id_high), no fallback shallower than it: the rank holds none, so every member
 * fails with TC_ERR_NO_RESOURCE instead of one member using another id than the others. Ranks
 * are one world each here: the agreements between them are shrink.c's, tested by run_fault.sh
 * and comm_ids_test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/src/comms.h"
#include "runtime/src/world.h"
#include "tcomms/base/status.h"
#include "tcomms/runtime/bootstrap.h"

#define MAX TC_RT_COMM_ID_MAX
#define NONE_DEPTH (MAX + 1) /* what a rank holding no id proposes */

static tc_boot_t boot;
static tc_rt_world_t world;

static int setup(void **state)
{
    (void)state;
    memset(&boot, 0, sizeof(boot));
    memset(&world, 0, sizeof(world));
    world.boot = &boot;
    assert_int_equal(tc_rt_ids_init(&world), TC_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tc_rt_ids_free(&world);
    return 0;
}

static uint32_t id_of(uint32_t depth)
{
    uint32_t id = 0;
    assert_int_equal(tc_rt_ids_shrink_id(depth, &id), TC_OK);
    return id;
}

static void test_hold_from_the_top(void **state)
{
    (void)state;
    uint32_t a = tc_rt_ids_shrink_hold(&world), b = tc_rt_ids_shrink_hold(&world);
    assert_int_equal(id_of(a), MAX);
    assert_int_equal(id_of(b), MAX - 1);
    assert_int_equal(world.comm_id_top, MAX - 1);
    tc_rt_ids_shrink_drop(&world, a); /* retired: the next shrink reuses it */
    assert_int_equal(id_of(tc_rt_ids_shrink_hold(&world)), MAX);
    assert_int_equal(id_of(tc_rt_ids_shrink_hold(&world)), MAX - 2);
}

static void test_move_to_the_agreed_id(void **state)
{
    (void)state;
    uint32_t held = tc_rt_ids_shrink_hold(&world); /* MAX */
    uint32_t agreed = 5;                            /* another member's, deeper: free here */
    assert_int_equal(tc_rt_ids_shrink_move(&world, held, agreed), agreed);
    assert_int_equal(world.comm_id_top, MAX - 4);
    assert_int_equal(tc_rt_ids_shrink_hold(&world), 1); /* MAX was given back */
    assert_int_equal(tc_rt_ids_shrink_move(&world, agreed, agreed), agreed); /* kept */
}

static void test_move_below_when_taken(void **state)
{
    (void)state;
    uint32_t other = tc_rt_ids_shrink_hold(&world); /* another thread's shrink holds MAX */
    uint32_t held = tc_rt_ids_shrink_hold(&world);  /* MAX - 1 */
    /* the agreed id is MAX, taken here: a deeper one, one of the 32 below comm_id_top */
    uint32_t top = world.comm_id_top;
    uint32_t moved = tc_rt_ids_shrink_move(&world, held, other);
    assert_int_not_equal(moved, NONE_DEPTH);
    uint32_t id = id_of(moved);
    assert_true(id < top && id >= top - 32);
    assert_int_equal(world.comm_id_top, id);
    /* it is reserved: no other shrink gets it */
    for (int i = 0; i < 40; i++)
        assert_int_not_equal(id_of(tc_rt_ids_shrink_hold(&world)), id);
}

static void test_no_shallower_fallback_near_exhaustion(void **state)
{
    (void)state;
    /* splits and dups took every id below MAX - 100 here */
    world.comm_id_high = MAX - 100;
    uint32_t held = tc_rt_ids_shrink_hold(&world); /* MAX */
    /* the agreement chose MAX - 200 (free on a member whose splits took fewer ids): among the
     * splits' ids here. The only ids this rank could hold lie above it (shallower): it holds
     * none, and proposing "none" makes the next agreement fail every member. */
    uint32_t moved = tc_rt_ids_shrink_move(&world, held, MAX + 1 - (MAX - 200));
    assert_int_equal(moved, NONE_DEPTH);
    uint32_t id = 1;
    assert_int_equal(tc_rt_ids_shrink_id(moved, &id), TC_ERR_NO_RESOURCE);
    assert_int_equal(id, 0);
    tc_error_clear();
    /* it gave back what it held: the next shrink holds MAX again */
    assert_int_equal(id_of(tc_rt_ids_shrink_hold(&world)), MAX);
}

static void test_all_used(void **state)
{
    (void)state;
    world.comm_id_high = MAX - 1; /* MAX - 1 and MAX are free, nothing else */
    uint32_t a = tc_rt_ids_shrink_hold(&world), b = tc_rt_ids_shrink_hold(&world);
    assert_int_equal(id_of(a), MAX);
    assert_int_equal(id_of(b), MAX - 1);
    assert_int_equal(tc_rt_ids_shrink_hold(&world), NONE_DEPTH);
    /* a move with nothing deeper free holds none either */
    assert_int_equal(tc_rt_ids_shrink_move(&world, b, a), NONE_DEPTH);
    tc_rt_ids_shrink_drop(&world, NONE_DEPTH); /* holding none: nothing to give back */
    assert_int_equal(id_of(tc_rt_ids_shrink_hold(&world)), MAX - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hold_from_the_top, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_to_the_agreed_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_below_when_taken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_shallower_fallback_near_exhaustion, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_all_used, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
