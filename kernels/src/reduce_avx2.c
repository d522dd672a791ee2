/*
 * The AVX2 loops (used when the CPU has AVX2 and F16C): integers vectorised
 * by the compiler from generic.h, floats and halves with intrinsics
 * (simd_tmpl.h), float16 converted by F16C, bfloat16 by shifts and masks.
 */
#include "kern_internal.h"

#ifdef TC_KERN_HAVE_X86
#include <immintrin.h>

#include "generic.h"
#include "simd_tmpl.h"

#define TC_T_ATTR __attribute__((target("avx2,f16c")))

/* bfloat16 pairs in 32-bit lanes: the even element shifted up, the odd one in place. */
TC_T_ATTR static inline __m256 tc_kern_avx2_bf16_even(__m256i x)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
}

TC_T_ATTR static inline __m256 tc_kern_avx2_bf16_odd(__m256i x)
{
    return _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000u)));
}

/* v rounded to bfloat16 in the top 16 bits of each lane, as tc_kern_f32_to_bf16:
 * to nearest even. x + 0x8000 rounds half up; the one case where that is wrong
 * is an exact tie with an even bfloat16 (low 17 bits 0x08000), which must go
 * down: subtract 1 there (the compare gives -1). No shift, so the adds and
 * compares spread over more execution ports than x + 0x7fff + lsb would.
 * (A NaN may turn into infinity here.) */
TC_T_ATTR static inline __m256i tc_kern_avx2_bf16_round(__m256 v)
{
    __m256i x = _mm256_castps_si256(v);
    __m256i tie = _mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x1ffff)),
                                     _mm256_set1_epi32(0x8000));

    return _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x8000)), tie);
}

/* As above, with NaNs kept: their top bits, made quiet. */
TC_T_ATTR static __m256i tc_kern_avx2_bf16_round_nan(__m256 v)
{
    __m256i qnan = _mm256_or_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x00400000));

    return _mm256_blendv_epi8(tc_kern_avx2_bf16_round(v), qnan,
                              _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

/* Even results into the low 16 bits of each lane, odd into the high: one blend.
 * NaNs are rare: one test for both, and the careful rounding only then. */
TC_T_ATTR static inline __m256i tc_kern_avx2_bf16_pack(__m256 even, __m256 odd)
{
    __m256 nan = _mm256_cmp_ps(even, odd, _CMP_UNORD_Q);

    if (__builtin_expect(!_mm256_testz_ps(nan, nan), 0)) {
        return _mm256_blend_epi16(_mm256_srli_epi32(tc_kern_avx2_bf16_round_nan(even), 16),
                                  tc_kern_avx2_bf16_round_nan(odd), 0xaa);
    }
    return _mm256_blend_epi16(_mm256_srli_epi32(tc_kern_avx2_bf16_round(even), 16),
                              tc_kern_avx2_bf16_round(odd), 0xaa);
}

/* The pack for sum and prod. Their NaN results are an input NaN made quiet or
 * the default NaN, and every input came from a bfloat16, so a NaN's low 16 bits
 * are zero and its quiet bit is set: plain rounding keeps it exact, and the NaN
 * test of tc_kern_avx2_bf16_pack is not needed. (min/max can return an input
 * NaN as it is, signalling, hence the careful pack.) */
TC_T_ATTR static inline __m256i tc_kern_avx2_bf16_pack_arith(__m256 even, __m256 odd)
{
    return _mm256_blend_epi16(_mm256_srli_epi32(tc_kern_avx2_bf16_round(even), 16),
                              tc_kern_avx2_bf16_round(odd), 0xaa);
}

/* IEEE 754-2019 minimum: NaN of a, then NaN of b, then the smaller; equal: OR of
 * the bits (-0 wins over +0, identical otherwise). */
TC_T_ATTR static inline __m256 tc_kern_avx2_min_ps(__m256 x, __m256 y)
{
    __m256 r = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, y, _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, _mm256_or_ps(x, y), _mm256_cmp_ps(x, y, _CMP_EQ_OQ));
    r = _mm256_blendv_ps(r, y, _mm256_cmp_ps(y, y, _CMP_UNORD_Q));
    return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* maximum: as minimum, with the AND of equal bits (+0 wins over -0). */
TC_T_ATTR static inline __m256 tc_kern_avx2_max_ps(__m256 x, __m256 y)
{
    __m256 r = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, y, _CMP_GT_OQ));
    r = _mm256_blendv_ps(r, _mm256_and_ps(x, y), _mm256_cmp_ps(x, y, _CMP_EQ_OQ));
    r = _mm256_blendv_ps(r, y, _mm256_cmp_ps(y, y, _CMP_UNORD_Q));
    return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

TC_T_ATTR static inline __m256d tc_kern_avx2_min_pd(__m256d x, __m256d y)
{
    __m256d r = _mm256_blendv_pd(y, x, _mm256_cmp_pd(x, y, _CMP_LT_OQ));
    r = _mm256_blendv_pd(r, _mm256_or_pd(x, y), _mm256_cmp_pd(x, y, _CMP_EQ_OQ));
    r = _mm256_blendv_pd(r, y, _mm256_cmp_pd(y, y, _CMP_UNORD_Q));
    return _mm256_blendv_pd(r, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
}

TC_T_ATTR static inline __m256d tc_kern_avx2_max_pd(__m256d x, __m256d y)
{
    __m256d r = _mm256_blendv_pd(y, x, _mm256_cmp_pd(x, y, _CMP_GT_OQ));
    r = _mm256_blendv_pd(r, _mm256_and_pd(x, y), _mm256_cmp_pd(x, y, _CMP_EQ_OQ));
    r = _mm256_blendv_pd(r, y, _mm256_cmp_pd(y, y, _CMP_UNORD_Q));
    return _mm256_blendv_pd(r, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
}

#define TC_T_VF __m256
#define TC_T_NF 8
#define TC_T_VD __m256d
#define TC_T_ND 4
#define TC_T_LDF(p) _mm256_loadu_ps(p)
#define TC_T_STF(p, v) _mm256_storeu_ps(p, v)
#define TC_T_LDD(p) _mm256_loadu_pd(p)
#define TC_T_STD(p, v) _mm256_storeu_pd(p, v)
#define TC_T_LD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define TC_T_ST_F16(p, v)                                                                          \
    _mm_storeu_si128((__m128i *)(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))
#define TC_T_NTF(p, v) _mm256_stream_ps(p, v)
#define TC_T_NTD(p, v) _mm256_stream_pd(p, v)
#define TC_T_NT_F16(p, v)                                                                          \
    _mm_stream_si128((__m128i *)(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))
#define TC_T_VI __m256i
#define TC_T_LDI(p) _mm256_loadu_si256((const __m256i *)(p))
#define TC_T_STI(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define TC_T_NTI(p, v) _mm256_stream_si256((__m256i *)(p), v)
#define TC_T_BF16_EVEN(x) tc_kern_avx2_bf16_even(x)
#define TC_T_BF16_ODD(x) tc_kern_avx2_bf16_odd(x)
#define TC_T_BF16_PACK(e, o) tc_kern_avx2_bf16_pack(e, o)
#define TC_T_BF16_PACK_ARITH(e, o) tc_kern_avx2_bf16_pack_arith(e, o)
#define TC_T_SFENCE() _mm_sfence()
#define TC_T_SUMF _mm256_add_ps
#define TC_T_PRODF _mm256_mul_ps
#define TC_T_MINF tc_kern_avx2_min_ps
#define TC_T_MAXF tc_kern_avx2_max_ps
#define TC_T_SUMD _mm256_add_pd
#define TC_T_PRODD _mm256_mul_pd
#define TC_T_MIND tc_kern_avx2_min_pd
#define TC_T_MAXD tc_kern_avx2_max_pd

TC_KERN_GEN_INT(__attribute__((target("avx2"))), avx2)
TC_T_GEN_ALL(avx2)

const tc_kern_table_t tc_kern_table_avx2 = TC_KERN_TABLE(avx2);

#endif /* TC_KERN_HAVE_X86 */
