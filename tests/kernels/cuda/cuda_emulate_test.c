/*
 * The CUDA kernels' code run on the host (cuda_emulate.h) against the
 * independent reference: every (type, op) pair, lengths 0..70 and 1<<20 + 3,
 * misaligned and in-place pointers, grids small enough that each thread
 * loops. This runs without a GPU; the GPU test runs the same matrix on a
 * device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "matrix.h"
#include "tcomms/kernels/cuda_emulate.h"

static unsigned emu_max_blocks; /* 0: the grid a launch would use */
static int emu_have_kernels;    /* 0 when built without CUDA */

static void *emu_alloc(size_t bytes)
{
    void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);

    assert_non_null(p);
    return p;
}

static void emu_release(void *p)
{
    free(p);
}

static void emu_copy(void *to, const void *from, size_t bytes)
{
    memcpy(to, from, bytes);
}

static void emu_get(void *here, const void *there, size_t bytes)
{
    memcpy(here, there, bytes);
}

static tc_status_t emu_reduce(tc_dtype_t t, tc_redop_t op, void *d, const void *a, const void *b,
                              size_t n)
{
    return tc_kern_cuda_emulate_reduce(t, op, d, a, b, n, emu_max_blocks);
}

static tc_status_t emu_scale(tc_dtype_t t, void *d, size_t n, int divisor)
{
    return tc_kern_cuda_emulate_scale_div(t, d, n, divisor, emu_max_blocks);
}

static void emu_sync(void) {}

static const mx_target_t emu_target = {
    .name = "emulated",
    .alloc = emu_alloc,
    .release = emu_release,
    .put = emu_copy,
    .get = emu_get,
    .reduce = emu_reduce,
    .scale = emu_scale,
    .sync = emu_sync,
};

/* Without the toolkit the kernels do not exist: check that it says so, then skip. */
static int emu_setup(void **state)
{
    float x = 1.0f;
    tc_status_t st = tc_kern_cuda_emulate_reduce(TC_FLOAT32, TC_SUM, &x, &x, &x, 1, 0);

    if (st == TC_ERR_UNSUPPORTED && strstr(tc_last_error(), "built without CUDA") != NULL) {
        print_message("skipping: %s\n", tc_last_error());
        return 0;
    }
    assert_int_equal(st, TC_OK);
    assert_true(x == 2.0f);
    emu_have_kernels = 1;
    return 0;
}

static void test_small(void **state)
{
    if (!emu_have_kernels) {
        skip();
    }
    emu_max_blocks = 0;
    mx_run_small(&emu_target);
}

static void test_large(void **state)
{
    if (!emu_have_kernels) {
        skip();
    }
    emu_max_blocks = 0;
    mx_run_large(&emu_target, (1u << 20) + 3);
}

/* Three blocks of 256 threads for a million elements: every thread loops. */
static void test_grid_stride(void **state)
{
    static const struct {
        tc_dtype_t t;
        tc_redop_t op;
    } pairs[] = {{TC_INT8, TC_SUM},    {TC_UINT8, TC_BXOR},   {TC_INT32, TC_PROD},
                 {TC_FLOAT16, TC_MAX}, {TC_BFLOAT16, TC_AVG}, {TC_FLOAT32, TC_SUM},
                 {TC_FLOAT64, TC_MIN}, {TC_UINT64, TC_AVG}};

    if (!emu_have_kernels) {
        skip();
    }
    emu_max_blocks = 3;
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        mx_run_one(&emu_target, pairs[i].t, pairs[i].op, (1u << 20) + 3);
    }
    emu_max_blocks = 0;
}

static void test_scale(void **state)
{
    if (!emu_have_kernels) {
        skip();
    }
    emu_max_blocks = 0;
    mx_run_scale(&emu_target, (1u << 20) + 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_grid_stride),
        cmocka_unit_test(test_scale),
    };
    return cmocka_run_group_tests(tests, emu_setup, NULL);
}
