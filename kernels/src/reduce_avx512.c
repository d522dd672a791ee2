/*
 * The AVX-512 loops (used when the CPU has AVX-512 F and BW): integers
 * vectorised by the compiler from generic.h, floats and halves with
 * intrinsics (simd_tmpl.h) and mask registers.
 */
#include "kern_internal.h"

#ifdef TC_KERN_HAVE_X86
#include <immintrin.h>

#include "generic.h"
#include "simd_tmpl.h"

#define TC_T_ATTR __attribute__((target("avx512f,avx512bw")))

/* bfloat16 pairs in 32-bit lanes: the even element shifted up, the odd one in place. */
TC_T_ATTR static inline __m512 tc_kern_avx512_bf16_even(__m512i x)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
}

TC_T_ATTR static inline __m512 tc_kern_avx512_bf16_odd(__m512i x)
{
    return _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}

/* v rounded to bfloat16 in the top 16 bits of each lane, as tc_kern_f32_to_bf16:
 * to nearest even by x + 0x7fff + lsb; a NaN keeps its top bits, made quiet. */
TC_T_ATTR static inline __m512i tc_kern_avx512_bf16_round(__m512 v)
{
    __m512i x = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));

    return _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r,
                                   _mm512_or_si512(x, _mm512_set1_epi32(0x00400000)));
}

/* Even results into the low 16 bits of each lane, odd into the high: one blend. */
TC_T_ATTR static inline __m512i tc_kern_avx512_bf16_pack(__m512 even, __m512 odd)
{
    return _mm512_mask_blend_epi16((__mmask32)0xaaaaaaaau,
                                   _mm512_srli_epi32(tc_kern_avx512_bf16_round(even), 16),
                                   tc_kern_avx512_bf16_round(odd));
}

/* Bitwise OR / AND of floats (AVX-512 F has them on integers only). */
#define TC_KERN_OR_PS(x, y)                                                                        \
    _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_castps_si512(y)))
#define TC_KERN_AND_PS(x, y)                                                                       \
    _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_castps_si512(y)))
#define TC_KERN_OR_PD(x, y)                                                                        \
    _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(x), _mm512_castpd_si512(y)))
#define TC_KERN_AND_PD(x, y)                                                                       \
    _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), _mm512_castpd_si512(y)))

/* IEEE 754-2019 minimum / maximum, as in reduce_avx2.c. */
TC_T_ATTR static inline __m512 tc_kern_avx512_min_ps(__m512 x, __m512 y)
{
    __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_LT_OQ), y, x);
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_EQ_OQ), r, TC_KERN_OR_PS(x, y));
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), r, y);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x);
}

TC_T_ATTR static inline __m512 tc_kern_avx512_max_ps(__m512 x, __m512 y)
{
    __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_GT_OQ), y, x);
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_EQ_OQ), r, TC_KERN_AND_PS(x, y));
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), r, y);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x);
}

TC_T_ATTR static inline __m512d tc_kern_avx512_min_pd(__m512d x, __m512d y)
{
    __m512d r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, y, _CMP_LT_OQ), y, x);
    r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, y, _CMP_EQ_OQ), r, TC_KERN_OR_PD(x, y));
    r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(y, y, _CMP_UNORD_Q), r, y);
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), r, x);
}

TC_T_ATTR static inline __m512d tc_kern_avx512_max_pd(__m512d x, __m512d y)
{
    __m512d r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, y, _CMP_GT_OQ), y, x);
    r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, y, _CMP_EQ_OQ), r, TC_KERN_AND_PD(x, y));
    r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(y, y, _CMP_UNORD_Q), r, y);
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), r, x);
}

#define TC_T_VF __m512
#define TC_T_NF 16
#define TC_T_VD __m512d
#define TC_T_ND 8
#define TC_T_LDF(p) _mm512_loadu_ps(p)
#define TC_T_STF(p, v) _mm512_storeu_ps(p, v)
#define TC_T_LDD(p) _mm512_loadu_pd(p)
#define TC_T_STD(p, v) _mm512_storeu_pd(p, v)
#define TC_T_LD_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define TC_T_ST_F16(p, v)                                                                          \
    _mm256_storeu_si256((__m256i *)(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))
#define TC_T_NTF(p, v) _mm512_stream_ps(p, v)
#define TC_T_NTD(p, v) _mm512_stream_pd(p, v)
#define TC_T_NT_F16(p, v)                                                                          \
    _mm256_stream_si256((__m256i *)(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))
#define TC_T_VI __m512i
#define TC_T_LDI(p) _mm512_loadu_si512((const void *)(p))
#define TC_T_STI(p, v) _mm512_storeu_si512((void *)(p), v)
#define TC_T_NTI(p, v) _mm512_stream_si512((void *)(p), v)
#define TC_T_BF16_EVEN(x) tc_kern_avx512_bf16_even(x)
#define TC_T_BF16_ODD(x) tc_kern_avx512_bf16_odd(x)
#define TC_T_BF16_PACK(e, o) tc_kern_avx512_bf16_pack(e, o)
#define TC_T_BF16_PACK_ARITH(e, o) tc_kern_avx512_bf16_pack(e, o)
#define TC_T_SFENCE() _mm_sfence()
#define TC_T_SUMF _mm512_add_ps
#define TC_T_PRODF _mm512_mul_ps
#define TC_T_MINF tc_kern_avx512_min_ps
#define TC_T_MAXF tc_kern_avx512_max_ps
#define TC_T_SUMD _mm512_add_pd
#define TC_T_PRODD _mm512_mul_pd
#define TC_T_MIND tc_kern_avx512_min_pd
#define TC_T_MAXD tc_kern_avx512_max_pd

TC_KERN_GEN_INT(__attribute__((target("avx512f,avx512bw"))), avx512)
TC_T_GEN_ALL(avx512)

const tc_kern_table_t tc_kern_table_avx512 = TC_KERN_TABLE(avx512);

#endif /* TC_KERN_HAVE_X86 */
