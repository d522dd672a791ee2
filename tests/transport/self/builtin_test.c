/* tc_tp_register_builtin(): every backend of the build is found by name with the peers it
 * reaches; twice is harmless. */
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

static void test_register(void **state)
{
    assert_null(tc_tp_lookup("shm"));
    assert_int_equal(tc_tp_register_builtin(), TC_OK);
    assert_int_equal(tc_tp_register_builtin(), TC_OK);
    assert_ptr_equal(tc_tp_lookup("self"), &tc_tp_self_ops);
    assert_ptr_equal(tc_tp_lookup("shm"), &tc_tp_shm_ops);
    assert_ptr_equal(tc_tp_lookup("tcp"), &tc_tp_tcp_ops);
    assert_null(tc_tp_lookup("nonesuch"));
    assert_non_null(strstr(tc_last_error(), "self, shm, tcp"));
    /* each with the peers it reaches, which the runtime chooses by */
    const tc_tp_ops_t *ops[8];
    tc_tp_reach_t reach[8];
    int n = tc_tp_registered(ops, reach, 8);
    assert_true(n >= 3 && n <= 8);
    for (int i = 0; i < n; i++) {
        tc_tp_reach_t want = ops[i] == &tc_tp_self_ops  ? TC_TP_REACH_SELF
                             : ops[i] == &tc_tp_shm_ops ? TC_TP_REACH_NODE
                             : ops[i] == &tc_tp_tcp_ops ? TC_TP_REACH_ANY
                                                        : TC_TP_REACH_REMOTE; /* ib */
        assert_int_equal(reach[i], want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_register)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
