/*
 * The CUDA kernels on a GPU against the independent reference: the matrix of
 * the emulation test (every (type, op) pair, lengths 0..70 and 1<<20 + 3,
 * misaligned and in-place pointers) plus arrays big enough that every thread
 * of the largest grid loops, on a stream of the test's own.
 *
 * Without a device (or built without CUDA) the tests skip, after checking
 * that tc_kern_cuda_available() says why with TC_ERR_UNSUPPORTED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "matrix.h"
#include "tcomms/kernels/cuda_reduce.h"

#ifdef TC_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>

static cudaStream_t gpu_stream;

static void gpu_check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fail_msg("%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    }
}

static void *gpu_alloc(size_t bytes)
{
    void *p = NULL;

    gpu_check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
}

static void gpu_release(void *p)
{
    gpu_check(cudaFree(p), "cudaFree");
}

/* Stream-ordered: the kernels launched after it on gpu_stream see the data. */
static void gpu_put(void *there, const void *here, size_t bytes)
{
    gpu_check(cudaMemcpyAsync(there, here, bytes, cudaMemcpyHostToDevice, gpu_stream),
              "cudaMemcpyAsync to the device");
}

static void gpu_get(void *here, const void *there, size_t bytes)
{
    gpu_check(cudaMemcpyAsync(here, there, bytes, cudaMemcpyDeviceToHost, gpu_stream),
              "cudaMemcpyAsync to the host");
    gpu_check(cudaStreamSynchronize(gpu_stream), "cudaStreamSynchronize after a copy");
}

static tc_status_t gpu_reduce(tc_dtype_t t, tc_redop_t op, void *d, const void *a, const void *b,
                              size_t n)
{
    return tc_kern_cuda_reduce(t, op, d, a, b, n, gpu_stream);
}

static tc_status_t gpu_scale(tc_dtype_t t, void *d, size_t n, int divisor)
{
    return tc_kern_cuda_scale_div(t, d, n, divisor, gpu_stream);
}

/* Errors of the kernels' execution (an illegal address) surface here. */
static void gpu_sync(void)
{
    gpu_check(cudaStreamSynchronize(gpu_stream), "cudaStreamSynchronize after the kernels");
}

static const mx_target_t gpu_target = {
    .name = "gpu",
    .alloc = gpu_alloc,
    .release = gpu_release,
    .put = gpu_put,
    .get = gpu_get,
    .reduce = gpu_reduce,
    .scale = gpu_scale,
    .sync = gpu_sync,
};
#endif

static int gpu_have; /* a device to run on */

static int gpu_setup(void **state)
{
    int count = -7;
    tc_status_t st = tc_kern_cuda_available(&count);
    const char *msg = tc_last_error();

    if (st != TC_OK) {
        assert_int_equal(st, TC_ERR_UNSUPPORTED);
        assert_int_equal(count, -7); /* untouched on failure */
        if (strncmp(msg, "no CUDA device: ", 16) != 0 || strlen(msg) < 20) {
            assert_non_null(strstr(msg, "built without CUDA"));
        }
        print_message("skipping the GPU tests: %s\n", msg);
        return 0;
    }
    assert_true(count >= 1);
#ifdef TC_TEST_HAVE_CUDA
    gpu_check(cudaStreamCreateWithFlags(&gpu_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    gpu_have = 1;
    print_message("%d CUDA device(s); testing on device 0\n", count);
    return 0;
#else
    fail_msg("tc_kern_cuda_available found %d device(s) in a build without CUDA", count);
    return -1;
#endif
}

static int gpu_teardown(void **state)
{
#ifdef TC_TEST_HAVE_CUDA
    if (gpu_have) {
        gpu_check(cudaStreamDestroy(gpu_stream), "cudaStreamDestroy");
    }
#endif
    return 0;
}

static void test_small(void **state)
{
    if (!gpu_have) {
        skip();
    }
#ifdef TC_TEST_HAVE_CUDA
    mx_run_small(&gpu_target);
#endif
}

static void test_large(void **state)
{
    if (!gpu_have) {
        skip();
    }
#ifdef TC_TEST_HAVE_CUDA
    mx_run_large(&gpu_target, (1u << 20) + 3);
#endif
}

/* More elements than 4096 blocks x 256 threads x one 16-byte vector each. */
static void test_huge(void **state)
{
    if (!gpu_have) {
        skip();
    }
#ifdef TC_TEST_HAVE_CUDA
    mx_run_one(&gpu_target, TC_UINT8, TC_BXOR, (33u << 20) + 5);
    mx_run_one(&gpu_target, TC_BFLOAT16, TC_AVG, (17u << 20) + 1);
    mx_run_one(&gpu_target, TC_FLOAT32, TC_SUM, (9u << 20) + 3);
    mx_run_one(&gpu_target, TC_FLOAT64, TC_MAX, (5u << 20) + 7);
    mx_run_one(&gpu_target, TC_INT64, TC_PROD, (5u << 20) + 1);
#endif
}

static void test_scale(void **state)
{
    if (!gpu_have) {
        skip();
    }
#ifdef TC_TEST_HAVE_CUDA
    mx_run_scale(&gpu_target, (1u << 20) + 3);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_huge),
        cmocka_unit_test(test_scale),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
