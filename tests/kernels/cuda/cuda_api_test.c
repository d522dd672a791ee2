/*
 * The entry points of the CUDA kernels without a device: every refusal has
 * its status and a precise detail, and happens before any device call (so
 * these run on any machine); without a device the launch says so clearly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/kernels/cuda_emulate.h"
#include "tcomms/kernels/cuda_reduce.h"

/* Addresses never dereferenced: a refused call must not touch them. */
#define BOGUS(addr) ((void *)(uintptr_t)(addr))
/* A stream that would crash the CUDA runtime if a refused call used it. */
#define BOGUS_STREAM BOGUS(0xdead0)

static void assert_detail(const char *needle)
{
    const char *msg = tc_last_error();

    if (strstr(msg, needle) == NULL) {
        fail_msg("the detail \"%s\" does not contain \"%s\"", msg, needle);
    }
}

/* A bitwise op on a float type is refused as unsupported, naming the pair, before any device. */
static void test_unsupported_pairs(void **state)
{
    static const tc_dtype_t floats[] = {TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64};
    static const tc_redop_t bitwise[] = {TC_BAND, TC_BOR, TC_BXOR};
    char expect[96];

    for (size_t i = 0; i < sizeof(floats) / sizeof(floats[0]); i++) {
        for (size_t j = 0; j < sizeof(bitwise) / sizeof(bitwise[0]); j++) {
            snprintf(expect, sizeof(expect), "op %s does not apply to %s",
                     tc_redop_name(bitwise[j]), tc_dtype_name(floats[i]));
            assert_int_equal(tc_kern_cuda_reduce(floats[i], bitwise[j], BOGUS(0x10000),
                                                 BOGUS(0x20000), BOGUS(0x30000), 64, BOGUS_STREAM),
                             TC_ERR_UNSUPPORTED);
            assert_detail(expect);
            assert_detail("tc_kern_cuda_reduce");
            assert_null(strstr(tc_last_error(), "CUDA device"));
            assert_null(strstr(tc_last_error(), "without CUDA"));
            /* also with n == 0: the pair is wrong whatever the length */
            assert_int_equal(
                tc_kern_cuda_reduce(floats[i], bitwise[j], NULL, NULL, NULL, 0, BOGUS_STREAM),
                TC_ERR_UNSUPPORTED);
            assert_detail(expect);
            assert_int_equal(tc_kern_cuda_emulate_reduce(floats[i], bitwise[j], BOGUS(0x10000),
                                                         BOGUS(0x20000), BOGUS(0x30000), 64, 0),
                             TC_ERR_UNSUPPORTED);
            assert_detail(expect);
            assert_detail("tc_kern_cuda_emulate_reduce");
        }
    }
}

static void test_bad_reduce_args(void **state)
{
    assert_int_equal(tc_kern_cuda_reduce(TC_DTYPE_COUNT, TC_SUM, BOGUS(0x1000), BOGUS(0x2000),
                                         BOGUS(0x3000), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("unknown dtype 10");
    assert_int_equal(tc_kern_cuda_reduce((tc_dtype_t)-1, TC_SUM, BOGUS(0x1000), BOGUS(0x2000),
                                         BOGUS(0x3000), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("unknown dtype -1");
    assert_int_equal(tc_kern_cuda_reduce(TC_INT32, TC_REDOP_COUNT, BOGUS(0x1000), BOGUS(0x2000),
                                         BOGUS(0x3000), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("unknown op 8");

    assert_int_equal(
        tc_kern_cuda_reduce(TC_INT32, TC_SUM, NULL, BOGUS(0x2000), BOGUS(0x3000), 4, BOGUS_STREAM),
        TC_ERR_INVALID_ARG);
    assert_detail("dst is NULL with n = 4");
    assert_int_equal(
        tc_kern_cuda_reduce(TC_INT32, TC_SUM, BOGUS(0x1000), NULL, BOGUS(0x3000), 4, BOGUS_STREAM),
        TC_ERR_INVALID_ARG);
    assert_detail("a is NULL with n = 4");
    assert_int_equal(
        tc_kern_cuda_reduce(TC_INT32, TC_SUM, BOGUS(0x1000), BOGUS(0x2000), NULL, 4, BOGUS_STREAM),
        TC_ERR_INVALID_ARG);
    assert_detail("b is NULL with n = 4");

    /* GPUs need natural alignment; one byte off is refused, naming the pointer */
    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT32, TC_SUM, BOGUS(0x1000), BOGUS(0x2002),
                                         BOGUS(0x3000), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("a 0x2002 is not aligned to the 4-byte float32 element");
    assert_int_equal(tc_kern_cuda_reduce(TC_INT64, TC_MAX, BOGUS(0x1004), BOGUS(0x2000),
                                         BOGUS(0x3000), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("dst 0x1004 is not aligned to the 8-byte int64 element");
    assert_int_equal(tc_kern_cuda_reduce(TC_BFLOAT16, TC_MIN, BOGUS(0x1000), BOGUS(0x2000),
                                         BOGUS(0x3001), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("b 0x3001 is not aligned to the 2-byte bfloat16 element");

    /* partial overlap of dst with an operand (equality is in-place use, allowed) */
    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT32, TC_SUM, BOGUS(0x1000), BOGUS(0x1004),
                                         BOGUS(0x3000), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("dst 0x1000 overlaps a 0x1004");
    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT32, TC_SUM, BOGUS(0x1010), BOGUS(0x2000),
                                         BOGUS(0x1004), 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("dst 0x1010 overlaps b 0x1004");

    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT64, TC_SUM, BOGUS(0x1000), BOGUS(0x2000),
                                         BOGUS(0x3000), SIZE_MAX / 4, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("elements of float64 overflow");

    /* n == 0 is a no-op: NULL pointers and a bogus stream are never used */
    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT32, TC_SUM, NULL, NULL, NULL, 0, BOGUS_STREAM),
                     TC_OK);
    assert_int_equal(tc_kern_cuda_emulate_reduce(TC_UINT8, TC_BXOR, NULL, NULL, NULL, 0, 0), TC_OK);
}

static void test_bad_scale_args(void **state)
{
    assert_int_equal(tc_kern_cuda_scale_div(TC_DTYPE_COUNT, BOGUS(0x1000), 4, 2, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("tc_kern_cuda_scale_div: unknown dtype 10");
    assert_int_equal(tc_kern_cuda_scale_div(TC_FLOAT32, BOGUS(0x1000), 4, 0, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("divisor 0 (must be >= 1");
    assert_int_equal(tc_kern_cuda_scale_div(TC_INT32, BOGUS(0x1000), 4, -3, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("divisor -3");
    assert_int_equal(tc_kern_cuda_scale_div(TC_INT32, NULL, 4, 2, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("dst is NULL with n = 4");
    assert_int_equal(tc_kern_cuda_scale_div(TC_FLOAT16, BOGUS(0x1001), 4, 2, BOGUS_STREAM),
                     TC_ERR_INVALID_ARG);
    assert_detail("dst 0x1001 is not aligned to the 2-byte float16 element");
    assert_int_equal(tc_kern_cuda_emulate_scale_div(TC_FLOAT32, BOGUS(0x1000), 4, 0, 0),
                     TC_ERR_INVALID_ARG);
    assert_detail("tc_kern_cuda_emulate_scale_div: divisor 0");

    /* nothing to do: no device call */
    assert_int_equal(tc_kern_cuda_scale_div(TC_FLOAT32, NULL, 0, 4, BOGUS_STREAM), TC_OK);
    assert_int_equal(tc_kern_cuda_scale_div(TC_FLOAT32, BOGUS(0x1000), 4, 1, BOGUS_STREAM), TC_OK);
}

/* Returns 1 when a device is present; otherwise checks how its absence is reported. */
static int check_available(void)
{
    int count = -7;
    tc_status_t st = tc_kern_cuda_available(&count);
    const char *msg = tc_last_error();

    if (st == TC_OK) {
        assert_true(count >= 1);
        assert_int_equal(tc_kern_cuda_available(NULL), TC_OK);
        return 1;
    }
    assert_int_equal(st, TC_ERR_UNSUPPORTED);
    assert_int_equal(count, -7); /* set only on success */
    if (strstr(msg, "built without CUDA") == NULL) {
        /* "no CUDA device: " then CUDA's own text, e.g. "CUDA driver version is insufficient" */
        assert_int_equal(strncmp(msg, "no CUDA device: ", 16), 0);
        assert_true(strlen(msg) > 24);
        assert_detail("cudaGetDeviceCount");
    }
    assert_int_equal(tc_kern_cuda_available(NULL), TC_ERR_UNSUPPORTED);
    return 0;
}

/* The plugin named by TC_CUDA_PLUGIN (the BUILD file) is the one loaded. */
static void test_plugin_loaded(void **state)
{
    const char *where = NULL;
    int loaded = tc_kern_cuda_plugin(&where);

    assert_non_null(where);
#ifdef TC_TEST_HAVE_CUDA
    assert_int_equal(loaded, 1);
    assert_non_null(getenv("TC_CUDA_PLUGIN"));
    assert_string_equal(where, getenv("TC_CUDA_PLUGIN"));
#else
    assert_int_equal(loaded, 0);
    assert_non_null(strstr(where, "built without CUDA"));
#endif
}

static void test_available(void **state)
{
    print_message("tc_kern_cuda_available: %s\n",
                  check_available() ? "a device is present" : tc_last_error());
}

/* Without a device a valid call fails clearly, naming the kernel, and writes nothing. */
static void test_launch_without_device(void **state)
{
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, d[8];

    if (check_available()) {
        skip(); /* the GPU test covers this machine */
    }
    memset(d, 0x5a, sizeof(d));
    assert_int_equal(tc_kern_cuda_reduce(TC_FLOAT32, TC_SUM, d, a, a, 8, NULL), TC_ERR_UNSUPPORTED);
    if (strstr(tc_last_error(), "built without CUDA") == NULL) {
        assert_detail("tc_kern_cuda_reduce: no CUDA device: ");
        assert_detail("kernel reduce<float32,sum>");
    }
    assert_int_equal(tc_kern_cuda_scale_div(TC_INT64, d, 4, 3, NULL), TC_ERR_UNSUPPORTED);
    if (strstr(tc_last_error(), "built without CUDA") == NULL) {
        assert_detail("tc_kern_cuda_scale_div: no CUDA device: ");
        assert_detail("kernel scale_div<int64>");
    }
    for (size_t i = 0; i < sizeof(d); i++) {
        assert_int_equal(((unsigned char *)d)[i], 0x5a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsupported_pairs),     cmocka_unit_test(test_bad_reduce_args),
        cmocka_unit_test(test_bad_scale_args),        cmocka_unit_test(test_plugin_loaded),
        cmocka_unit_test(test_available),
        cmocka_unit_test(test_launch_without_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
