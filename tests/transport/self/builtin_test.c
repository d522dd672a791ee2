/* tc_tp_register_builtin(): every backend of the build is found by name, twice is harmless. */
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
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_register)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
