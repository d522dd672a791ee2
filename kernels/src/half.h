/* float16 and bfloat16 <-> float32, by bit manipulation (round to nearest even). */
#ifndef TCOMMS_KERNELS_SRC_HALF_H
#define TCOMMS_KERNELS_SRC_HALF_H

#include <stdint.h>
#include <string.h>

static inline float tc_kern_bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

static inline uint32_t tc_kern_f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

static inline float tc_kern_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

    if (e == 0x1f) {
        return tc_kern_bits_f32(sign | 0x7f800000u | (m << 13)); /* inf, NaN keeps payload */
    }
    if (e != 0) {
        return tc_kern_bits_f32(sign | ((e + 112u) << 23) | (m << 13)); /* rebias 15 -> 127 */
    }
    if (m == 0) {
        return tc_kern_bits_f32(sign);
    }
    /* subnormal m * 2^-24: normalise so the leading 1 is the implicit bit */
    e = 113;
    while (!(m & 0x400u)) {
        m <<= 1;
        e--;
    }
    return tc_kern_bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
}

/* Round the low `s` bits of m away, to nearest even (1 <= s <= 24). */
static inline uint32_t tc_kern_rne_shift(uint32_t m, uint32_t s)
{
    uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);

    return q + (rem > half || (rem == half && (q & 1u)));
}

static inline uint16_t tc_kern_f32_to_f16(float f)
{
    uint32_t x = tc_kern_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu, e;

    if (ax >= 0x7f800000u) { /* inf, or NaN kept quiet with the top of its payload */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
    }
    if (ax >= 0x477ff000u) { /* >= 65520 rounds past the largest half (65504) */
        return (uint16_t)(sign | 0x7c00u);
    }
    e = ax >> 23;
    if (e >= 113) { /* normal half: |f| >= 2^-14; a carry out of the mantissa bumps e */
        return (uint16_t)(sign | tc_kern_rne_shift(((e - 112u) << 23) | (ax & 0x7fffffu), 13));
    }
    if (e < 102) { /* below 2^-25: rounds to zero */
        return (uint16_t)sign;
    }
    /* subnormal half: units of 2^-24 */
    return (uint16_t)(sign | tc_kern_rne_shift((ax & 0x7fffffu) | 0x800000u, 126u - e));
}

static inline float tc_kern_bf16_to_f32(uint16_t h)
{
    return tc_kern_bits_f32((uint32_t)h << 16);
}

static inline uint16_t tc_kern_f32_to_bf16(float f)
{
    uint32_t x = tc_kern_f32_bits(f);

    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((x >> 16) | 0x40u); /* NaN: keep it a (quiet) NaN */
    }
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif /* TCOMMS_KERNELS_SRC_HALF_H */
