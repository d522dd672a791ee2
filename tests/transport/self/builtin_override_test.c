/* tc_tp_register_builtin() after the caller registered its own table under a built-in's name
 * ("shm" here, reaching every peer): the caller's table stays in its place with its reach, the
 * built-in of that name is not registered, the other built-ins are; twice is harmless. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

static tc_tp_ops_t my_shm;

static void test_override(void **state)
{
    (void)state;
    my_shm = tc_tp_shm_ops; /* same name, another table */
    assert_int_equal(tc_tp_register_reach(&my_shm, TC_TP_REACH_ANY), TC_OK);
    assert_int_equal(tc_tp_register_builtin(), TC_OK);
    assert_int_equal(tc_tp_register_builtin(), TC_OK);
    assert_ptr_equal(tc_tp_lookup("shm"), &my_shm);
    assert_ptr_equal(tc_tp_lookup("self"), &tc_tp_self_ops);
    assert_ptr_equal(tc_tp_lookup("tcp"), &tc_tp_tcp_ops);

    const tc_tp_ops_t *ops[8];
    tc_tp_reach_t reach[8];
    int n = tc_tp_registered(ops, reach, 8);
    assert_true(n >= 3 && n <= 8);
    int mine = 0;
    for (int i = 0; i < n; i++) {
        assert_ptr_not_equal(ops[i], &tc_tp_shm_ops); /* the built-in stayed out */
        if (ops[i] == &my_shm) {
            mine++;
            assert_int_equal(i, 0);
            assert_int_equal(reach[i], TC_TP_REACH_ANY);
        }
    }
    assert_int_equal(mine, 1);
    /* the built-in itself can no longer be registered under the taken name */
    assert_int_equal(tc_tp_register_reach(&tc_tp_shm_ops, TC_TP_REACH_NODE), TC_ERR_INVALID_STATE);
    assert_non_null(strstr(tc_last_error(), "'shm' is already registered"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_override)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
