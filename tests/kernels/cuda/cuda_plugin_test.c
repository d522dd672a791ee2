/* The kernels plugin cannot be loaded (TC_CUDA_PLUGIN names a file that does not exist, set by
 * the BUILD file): every CUDA call is TC_ERR_UNSUPPORTED naming the plugin and the place tried,
 * nothing crashes, and the CPU-side argument checks still answer first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/kernels/cuda_emulate.h"
#include "tcomms/kernels/cuda_reduce.h"

static void test_missing_plugin(void **state)
{
    const char *where = NULL;
    float a[4] = {1, 2, 3, 4}, d[4] = {0};
    int count = -1;

    (void)state;
    assert_int_equal(tc_kern_cuda_plugin(&where), 0);
    assert_non_null(where);
#ifdef TC_TEST_HAVE_CUDA
    assert_non_null(strstr(where, "/nonexistent/libtcomms_cuda.so"));
    assert_int_equal(tc_kern_cuda_available(&count), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "tc_kern_cuda_available: the CUDA kernels plugin "
                                            "libtcomms_cuda.so cannot be loaded"));
    assert_non_null(strstr(tc_last_error(), "/nonexistent/libtcomms_cuda.so"));
    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT32, TC_SUM, d, a, a, 4, NULL), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "tc_kern_cuda_reduce: the CUDA kernels plugin"));
    assert_int_equal(tc_kern_cuda_emulate_reduce(TC_FLOAT32, TC_SUM, d, a, a, 4, 0),
                     TC_ERR_UNSUPPORTED);
#else
    assert_non_null(strstr(where, "built without CUDA"));
    assert_int_equal(tc_kern_cuda_available(&count), TC_ERR_UNSUPPORTED);
#endif
    assert_int_equal(count, -1);
    assert_float_equal(d[0], 0, 0);
    /* argument errors are found before the plugin is needed */
    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT32, TC_SUM, NULL, a, a, 4, NULL),
                     TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "dst is NULL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_plugin)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
