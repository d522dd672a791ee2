/*
 * The CUDA kernels: dst = a op b for every (type, op) pair, and dst /= divisor.
 *
 * One grid-stride kernel per (type, op). When dst, a and b sit at the same
 * offset modulo 16 bytes, each thread loads and stores 16 bytes at a time
 * (LDG.128), with the few elements before the first 16-byte boundary (head)
 * and after the last (tail) done one by one; pointers at different offsets
 * take the element-by-element loop only (still coalesced). The bodies are
 * __host__ __device__ so that tests can run them on a CPU (cuda_emulate.h).
 *
 * Bit-for-bit agreement with the CPU kernels (kernels/src): float16/bfloat16
 * go through float32 with round to nearest even, and NaNs are converted by
 * hand both ways so that MIN/MAX give the CPU's NaN (the input's payload,
 * quieted). No fast-math: float32 subnormals are kept, division is IEEE.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_dev.h"

namespace tc_kern_cuda
{

#define TC_HD __host__ __device__ __forceinline__

/* 256 threads x 4096 blocks = 1M threads: more than any current GPU keeps
 * resident (an H100/H200 holds 132 x 2048), so big arrays saturate memory
 * while small ones launch just the blocks they need. */
constexpr unsigned kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;
constexpr size_t kVecBytes = 16;

/* ---- bits ------------------------------------------------------------------ */

TC_HD uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

TC_HD float bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

TC_HD bool sign_of(float f)
{
    return (f32_bits(f) >> 31) != 0;
}

TC_HD bool sign_of(double f)
{
    uint64_t x;
    memcpy(&x, &f, sizeof(x));
    return (x >> 63) != 0;
}

/* ---- float16 and bfloat16 <-> float32 ---------------------------------------- */

/* NaNs by hand: widening keeps the payload, narrowing keeps its top bits and
 * sets the quiet bit (what the CPU kernels do; cvt would give a canonical NaN). */
struct F16 {
    static TC_HD float to(uint16_t h)
    {
        if ((h & 0x7fffu) > 0x7c00u) {
            return bits_f32(((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u |
                            ((uint32_t)(h & 0x3ffu) << 13));
        }
        __half_raw r;
        r.x = h;
        return __half2float(__half(r));
    }
    static TC_HD uint16_t from(float f)
    {
        uint32_t x = f32_bits(f);

        if ((x & 0x7fffffffu) > 0x7f800000u) {
            return (uint16_t)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
        }
        return __half_raw(__float2half_rn(f)).x; /* overflow gives infinity */
    }
};

struct BF16 {
    static TC_HD float to(uint16_t h)
    {
        return bits_f32((uint32_t)h << 16);
    }
    static TC_HD uint16_t from(float f)
    {
        uint32_t x = f32_bits(f);

        if ((x & 0x7fffffffu) > 0x7f800000u) {
            return (uint16_t)((x >> 16) | 0x40u);
        }
        /* Add just under half of the dropped part, plus one if the kept part is
         * odd: carries exactly when rounding to nearest even goes up. */
        return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
};

/* ---- element operations ---------------------------------------------------------- */

/* Integers: SUM and PROD wrap, computed in the unsigned type U. */
template <class T, class U> struct IntSum {
    static TC_HD T apply(T x, T y)
    {
        return (T)((U)x + (U)y);
    }
};
template <class T, class U> struct IntProd {
    static TC_HD T apply(T x, T y)
    {
        return (T)((U)x * (U)y);
    }
};
template <class T> struct IntMin {
    static TC_HD T apply(T x, T y)
    {
        return y < x ? y : x;
    }
};
template <class T> struct IntMax {
    static TC_HD T apply(T x, T y)
    {
        return y > x ? y : x;
    }
};
template <class T> struct BitAnd {
    static TC_HD T apply(T x, T y)
    {
        return (T)(x & y);
    }
};
template <class T> struct BitOr {
    static TC_HD T apply(T x, T y)
    {
        return (T)(x | y);
    }
};
template <class T> struct BitXor {
    static TC_HD T apply(T x, T y)
    {
        return (T)(x ^ y);
    }
};

template <class T> struct FSum {
    static TC_HD T apply(T x, T y)
    {
        return x + y;
    }
};
template <class T> struct FProd {
    static TC_HD T apply(T x, T y)
    {
        return x * y;
    }
};
/* IEEE 754-2019 minimum/maximum: a NaN wins (x's when both are), -0 < +0. */
template <class T> struct FMin {
    static TC_HD T apply(T x, T y)
    {
        if (x != x || x < y) {
            return x;
        }
        if (y != y || y < x) {
            return y;
        }
        return sign_of(x) ? x : y; /* equal: only the sign of a zero can differ */
    }
};
template <class T> struct FMax {
    static TC_HD T apply(T x, T y)
    {
        if (x != x || x > y) {
            return x;
        }
        if (y != y || y > x) {
            return y;
        }
        return sign_of(x) ? y : x;
    }
};

/* float16/bfloat16 (C) stored as uint16_t, computed in float32 with F. */
template <class C, class F> struct HalfOp {
    static TC_HD uint16_t apply(uint16_t x, uint16_t y)
    {
        return C::from(F::apply(C::to(x), C::to(y)));
    }
};

/* Division by the number of ranks: D is the type the division is done in. */
template <class T, class D> struct Div {
    D d;
    TC_HD T operator()(T x) const
    {
        return (T)(x / d);
    }
};
template <class C> struct HalfDiv {
    float d;
    TC_HD uint16_t operator()(uint16_t x) const
    {
        return C::from(C::to(x) / d);
    }
};

/* ---- bodies: head, 16-byte vectors, tail ------------------------------------------ */

template <class T> TC_HD void load_vec(T (&v)[kVecBytes / sizeof(T)], const T *p)
{
#ifdef __CUDA_ARCH__
    const uint4 u = *reinterpret_cast<const uint4 *>(p);
    memcpy(v, &u, kVecBytes);
#else
    memcpy(v, p, kVecBytes);
#endif
}

template <class T> TC_HD void store_vec(T *p, const T (&v)[kVecBytes / sizeof(T)])
{
#ifdef __CUDA_ARCH__
    uint4 u;
    memcpy(&u, v, kVecBytes);
    *reinterpret_cast<uint4 *>(p) = u;
#else
    memcpy(p, v, kVecBytes);
#endif
}

/* Elements [0, head) one by one, then nvec vectors, then the rest one by one;
 * thread tid of `stride` takes every stride-th item of each part. */
template <class T, class Op>
TC_HD void reduce_body(T *d, const T *a, const T *b, size_t n, size_t head, size_t nvec, size_t tid,
                       size_t stride)
{
    constexpr size_t V = kVecBytes / sizeof(T);

    for (size_t i = tid; i < head; i += stride) {
        d[i] = Op::apply(a[i], b[i]);
    }
    for (size_t i = tid; i < nvec; i += stride) {
        T x[V], y[V];
        load_vec(x, a + head + i * V);
        load_vec(y, b + head + i * V);
        for (size_t k = 0; k < V; k++) {
            x[k] = Op::apply(x[k], y[k]);
        }
        store_vec(d + head + i * V, x);
    }
    for (size_t i = head + nvec * V + tid; i < n; i += stride) {
        d[i] = Op::apply(a[i], b[i]);
    }
}

template <class T, class F>
TC_HD void scale_body(T *d, size_t n, size_t head, size_t nvec, F f, size_t tid, size_t stride)
{
    constexpr size_t V = kVecBytes / sizeof(T);

    for (size_t i = tid; i < head; i += stride) {
        d[i] = f(d[i]);
    }
    for (size_t i = tid; i < nvec; i += stride) {
        T x[V];
        load_vec(x, d + head + i * V);
        for (size_t k = 0; k < V; k++) {
            x[k] = f(x[k]);
        }
        store_vec(d + head + i * V, x);
    }
    for (size_t i = head + nvec * V + tid; i < n; i += stride) {
        d[i] = f(d[i]);
    }
}

template <class T, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(T *d, const T *a, const T *b, size_t n, size_t head, size_t nvec)
{
    reduce_body<T, Op>(d, a, b, n, head, nvec, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                       (size_t)gridDim.x * blockDim.x);
}

template <class T, class F>
__global__ void __launch_bounds__(kThreads)
    scale_kernel(T *d, size_t n, size_t head, size_t nvec, F f)
{
    scale_body<T, F>(d, n, head, nvec, f, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                     (size_t)gridDim.x * blockDim.x);
}

/* ---- launch plan ------------------------------------------------------------------- */

struct Plan {
    size_t head;     /* elements before the first 16-byte boundary (n: no vectors) */
    size_t nvec;     /* 16-byte vectors after them */
    unsigned blocks; /* of kThreads threads */
};

/* b may be NULL (scale). max_blocks 0: no limit beyond kMaxBlocks. */
template <class T>
Plan make_plan(const void *d, const void *a, const void *b, size_t n, unsigned max_blocks)
{
    const size_t V = kVecBytes / sizeof(T);
    const uintptr_t off = (uintptr_t)d % kVecBytes;
    Plan p;
    size_t work, blocks;

    if ((uintptr_t)a % kVecBytes == off && (b == NULL || (uintptr_t)b % kVecBytes == off)) {
        p.head = (kVecBytes - off) % kVecBytes / sizeof(T); /* pointers are element-aligned */
        if (p.head > n) {
            p.head = n;
        }
        p.nvec = (n - p.head) / V;
    } else {
        p.head = n;
        p.nvec = 0;
    }
    work = p.head > p.nvec ? p.head : p.nvec; /* the tail has fewer than V <= 16 items */
    if (work < V) {
        work = V;
    }
    blocks = (work + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks) {
        blocks = kMaxBlocks;
    }
    if (max_blocks != 0 && blocks > max_blocks) {
        blocks = max_blocks;
    }
    p.blocks = (unsigned)blocks;
    return p;
}

/* ---- CUDA errors ---------------------------------------------------------------------- */

bool tc_no_device_error(cudaError_t e)
{
    return e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice ||
           e == cudaErrorStubLibrary || e == cudaErrorDevicesUnavailable ||
           e == cudaErrorSystemDriverMismatch || e == cudaErrorSystemNotReady ||
           e == cudaErrorCompatNotSupportedOnDevice;
}

/* The status and detail for CUDA error e met by fn while doing `what`. */
tc_status_t tc_cuda_error(cudaError_t e, const char *fn, const char *what)
{
    if (tc_no_device_error(e)) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "%s: no CUDA device: %s (%s, %s)", fn,
                            cudaGetErrorString(e), cudaGetErrorName(e), what);
    }
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "%s: %s: %s (%s; the kernels are built for sm_80 and sm_90 "
                            "with compute_90 PTX)",
                            fn, what, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    return tc_error_set(TC_ERR_SYSTEM, "%s: %s: %s (%s)", fn, what, cudaGetErrorString(e),
                        cudaGetErrorName(e));
}

/* After a launch: TC_OK, or the launch's error naming the kernel. */
tc_status_t tc_launch_status(const char *fn, const char *kernel, tc_dtype_t dtype, const char *op,
                             size_t n, const Plan &p)
{
    cudaError_t e = cudaGetLastError();
    char what[160];

    if (e == cudaSuccess) {
        return TC_OK;
    }
    snprintf(what, sizeof(what), "launching kernel %s<%s%s%s> (n = %zu, %u x %u threads)", kernel,
             tc_dtype_name(dtype), op[0] != '\0' ? "," : "", op, n, p.blocks, kThreads);
    return tc_cuda_error(e, fn, what);
}

/* For the emulation: a device faults on a misaligned 16-byte access, a CPU
 * does not, so check that the plan only makes aligned ones. */
tc_status_t tc_check_plan(const char *fn, const Plan &p, size_t esize, const void *d, const void *a,
                          const void *b)
{
    const uintptr_t off = (uintptr_t)(p.head * esize);

    if (p.nvec > 0 &&
        (((uintptr_t)d + off) % kVecBytes != 0 || ((uintptr_t)a + off) % kVecBytes != 0 ||
         (b != NULL && ((uintptr_t)b + off) % kVecBytes != 0))) {
        return tc_error_set(TC_ERR_INTERNAL,
                            "%s: the plan (head %zu, %zu vectors) makes misaligned 16-byte "
                            "accesses for dst %p a %p b %p",
                            fn, p.head, p.nvec, d, a, b);
    }
    return TC_OK;
}

/* ---- runners: what to do with the (type, op) the dispatch picks --------------------------- */

struct ReduceLaunch {
    tc_dtype_t dtype;
    tc_redop_t op;
    void *d;
    const void *a, *b;
    size_t n;
    cudaStream_t stream;

    template <class T, class Op> tc_status_t run() const
    {
        const Plan p = make_plan<T>(d, a, b, n, 0);

        reduce_kernel<T, Op><<<p.blocks, kThreads, 0, stream>>>((T *)d, (const T *)a, (const T *)b,
                                                                n, p.head, p.nvec);
        return tc_launch_status("tc_kern_cuda_reduce", "reduce", dtype, tc_redop_name(op), n, p);
    }
};

struct ReduceEmulate {
    void *d;
    const void *a, *b;
    size_t n;
    unsigned max_blocks;

    template <class T, class Op> tc_status_t run() const
    {
        const Plan p = make_plan<T>(d, a, b, n, max_blocks);
        const size_t stride = (size_t)p.blocks * kThreads;
        const tc_status_t st = tc_check_plan("tc_kern_cuda_emulate_reduce", p, sizeof(T), d, a, b);

        if (st != TC_OK) {
            return st;
        }
        for (size_t tid = 0; tid < stride; tid++) {
            reduce_body<T, Op>((T *)d, (const T *)a, (const T *)b, n, p.head, p.nvec, tid, stride);
        }
        return TC_OK;
    }
};

struct ScaleLaunch {
    tc_dtype_t dtype;
    void *d;
    size_t n;
    cudaStream_t stream;

    template <class T, class F> tc_status_t run(F f) const
    {
        const Plan p = make_plan<T>(d, d, NULL, n, 0);

        scale_kernel<T, F><<<p.blocks, kThreads, 0, stream>>>((T *)d, n, p.head, p.nvec, f);
        return tc_launch_status("tc_kern_cuda_scale_div", "scale_div", dtype, "", n, p);
    }
};

struct ScaleEmulate {
    void *d;
    size_t n;
    unsigned max_blocks;

    template <class T, class F> tc_status_t run(F f) const
    {
        const Plan p = make_plan<T>(d, d, NULL, n, max_blocks);
        const size_t stride = (size_t)p.blocks * kThreads;
        const tc_status_t st =
            tc_check_plan("tc_kern_cuda_emulate_scale_div", p, sizeof(T), d, d, NULL);

        if (st != TC_OK) {
            return st;
        }
        for (size_t tid = 0; tid < stride; tid++) {
            scale_body<T, F>((T *)d, n, p.head, p.nvec, f, tid, stride);
        }
        return TC_OK;
    }
};

/* ---- dispatch on (type, op) ---------------------------------------------------------------- */

tc_status_t tc_no_kernel(const char *what, tc_dtype_t dtype, int op)
{
    return tc_error_set(TC_ERR_INTERNAL, "%s: no kernel for %s op %d (checked before)", what,
                        tc_dtype_name(dtype), op);
}

template <class T, class U, class R>
tc_status_t int_ops(tc_dtype_t dtype, tc_redop_t op, const R &r)
{
    switch (op) {
    case TC_SUM:
    case TC_AVG:
        return r.template run<T, IntSum<T, U>>();
    case TC_PROD:
        return r.template run<T, IntProd<T, U>>();
    case TC_MIN:
        return r.template run<T, IntMin<T>>();
    case TC_MAX:
        return r.template run<T, IntMax<T>>();
    case TC_BAND:
        return r.template run<T, BitAnd<T>>();
    case TC_BOR:
        return r.template run<T, BitOr<T>>();
    case TC_BXOR:
        return r.template run<T, BitXor<T>>();
    default:
        return tc_no_kernel("reduce", dtype, (int)op);
    }
}

template <class T, class R> tc_status_t float_ops(tc_dtype_t dtype, tc_redop_t op, const R &r)
{
    switch (op) {
    case TC_SUM:
    case TC_AVG:
        return r.template run<T, FSum<T>>();
    case TC_PROD:
        return r.template run<T, FProd<T>>();
    case TC_MIN:
        return r.template run<T, FMin<T>>();
    case TC_MAX:
        return r.template run<T, FMax<T>>();
    default:
        return tc_no_kernel("reduce", dtype, (int)op);
    }
}

template <class C, class R> tc_status_t half_ops(tc_dtype_t dtype, tc_redop_t op, const R &r)
{
    switch (op) {
    case TC_SUM:
    case TC_AVG:
        return r.template run<uint16_t, HalfOp<C, FSum<float>>>();
    case TC_PROD:
        return r.template run<uint16_t, HalfOp<C, FProd<float>>>();
    case TC_MIN:
        return r.template run<uint16_t, HalfOp<C, FMin<float>>>();
    case TC_MAX:
        return r.template run<uint16_t, HalfOp<C, FMax<float>>>();
    default:
        return tc_no_kernel("reduce", dtype, (int)op);
    }
}

template <class R> tc_status_t dispatch_reduce(tc_dtype_t dtype, tc_redop_t op, const R &r)
{
    switch (dtype) {
    case TC_INT8:
        return int_ops<int8_t, uint8_t>(dtype, op, r);
    case TC_UINT8:
        return int_ops<uint8_t, uint8_t>(dtype, op, r); /* promoted to int: 255 * 255 fits */
    case TC_INT32:
        return int_ops<int32_t, uint32_t>(dtype, op, r);
    case TC_UINT32:
        return int_ops<uint32_t, uint32_t>(dtype, op, r);
    case TC_INT64:
        return int_ops<int64_t, uint64_t>(dtype, op, r);
    case TC_UINT64:
        return int_ops<uint64_t, uint64_t>(dtype, op, r);
    case TC_FLOAT16:
        return half_ops<F16>(dtype, op, r);
    case TC_BFLOAT16:
        return half_ops<BF16>(dtype, op, r);
    case TC_FLOAT32:
        return float_ops<float>(dtype, op, r);
    case TC_FLOAT64:
        return float_ops<double>(dtype, op, r);
    default:
        return tc_no_kernel("reduce", dtype, (int)op);
    }
}

/* Integer division truncates towards zero; divisor >= 2 here, so no overflow. */
template <class R> tc_status_t dispatch_scale(tc_dtype_t dtype, int divisor, const R &r)
{
    switch (dtype) {
    case TC_INT8:
        return r.template run<int8_t>(Div<int8_t, int>{divisor});
    case TC_UINT8:
        return r.template run<uint8_t>(Div<uint8_t, int>{divisor});
    case TC_INT32:
        return r.template run<int32_t>(Div<int32_t, int32_t>{divisor});
    case TC_UINT32:
        return r.template run<uint32_t>(Div<uint32_t, uint32_t>{(uint32_t)divisor});
    case TC_INT64:
        return r.template run<int64_t>(Div<int64_t, int64_t>{divisor});
    case TC_UINT64:
        return r.template run<uint64_t>(Div<uint64_t, uint64_t>{(uint64_t)divisor});
    case TC_FLOAT16:
        return r.template run<uint16_t>(HalfDiv<F16>{(float)divisor});
    case TC_BFLOAT16:
        return r.template run<uint16_t>(HalfDiv<BF16>{(float)divisor});
    case TC_FLOAT32:
        return r.template run<float>(Div<float, float>{(float)divisor});
    case TC_FLOAT64:
        return r.template run<double>(Div<double, double>{(double)divisor});
    default:
        return tc_no_kernel("scale_div", dtype, -1);
    }
}

} // namespace tc_kern_cuda

using namespace tc_kern_cuda;

/* ---- the entry points of cuda_dev.h ------------------------------------------------------------
 */

extern "C" tc_status_t tc_kern_cuda_dev_count(int *count_p)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);

    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* reported here: do not leave it to the next launch */
        if (tc_no_device_error(e)) {
            return tc_error_set(TC_ERR_UNSUPPORTED,
                                "no CUDA device: %s (%s from cudaGetDeviceCount)",
                                cudaGetErrorString(e), cudaGetErrorName(e));
        }
        return tc_cuda_error(e, "tc_kern_cuda_available", "cudaGetDeviceCount");
    }
    if (count < 1) {
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "no CUDA device: cudaGetDeviceCount found none (CUDA_VISIBLE_DEVICES "
                            "may hide them)");
    }
    *count_p = count;
    return TC_OK;
}

extern "C" tc_status_t tc_kern_cuda_dev_set_device(int device)
{
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tc_cuda_error(e, "tc_kern_cuda_set_device", "cudaSetDevice");
    }
    return TC_OK;
}

extern "C" tc_status_t tc_kern_cuda_dev_memcpy(void *dst, const void *src, size_t bytes)
{
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tc_cuda_error(e, "tc_kern_cuda_memcpy", "cudaMemcpy");
    }
    return TC_OK;
}

extern "C" tc_status_t tc_kern_cuda_dev_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst,
                                               const void *a, const void *b, size_t n, void *stream)
{
    return dispatch_reduce(dtype, op, ReduceLaunch{dtype, op, dst, a, b, n, (cudaStream_t)stream});
}

extern "C" tc_status_t tc_kern_cuda_dev_scale_div(tc_dtype_t dtype, void *dst, size_t n,
                                                  int divisor, void *stream)
{
    return dispatch_scale(dtype, divisor, ScaleLaunch{dtype, dst, n, (cudaStream_t)stream});
}

extern "C" tc_status_t tc_kern_cuda_dev_emulate_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst,
                                                       const void *a, const void *b, size_t n,
                                                       unsigned max_blocks)
{
    return dispatch_reduce(dtype, op, ReduceEmulate{dst, a, b, n, max_blocks});
}

extern "C" tc_status_t tc_kern_cuda_dev_emulate_scale_div(tc_dtype_t dtype, void *dst, size_t n,
                                                          int divisor, unsigned max_blocks)
{
    return dispatch_scale(dtype, divisor, ScaleEmulate{dst, n, max_blocks});
}
