/**
 * @file copy.h
 * @brief Bulk copies of the data path: memcpy, except where the C library's copy is slow.
 *
 * On AMD processors the C library (glibc 2.36 here) copies 4 KiB to a few hundred KiB with
 * `rep movsb`, which runs at about 3 GB/s there when the destination is 1 to 31 bytes ahead of
 * the source modulo 4 KiB (a buffer from malloc, 16 bytes into its page, against a page-aligned
 * window), against 40-90 GB/s otherwise (docs/kernels.md, "Copies"). tc_copy takes such copies
 * (1 to 63 bytes ahead, for margin) through a loop of 64-byte moves; every other copy is
 * memcpy, and copies of at most 16 bytes are inline. TC_COPY=auto (the loop on AMD and Hygon
 * processors), libc or loop.
 */
#ifndef TCOMMS_BASE_COPY_H
#define TCOMMS_BASE_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Copies below this many bytes are always memcpy (the C library's vector path). */
#define TC_COPY_LOOP_MIN 4096u
/** @brief Nor above this: the C library's own loop (and its non-temporal stores) takes over. */
#define TC_COPY_LOOP_MAX (1u << 20)

/** @brief Whether @p dst is 1 to 63 bytes ahead of @p src modulo 4 KiB: the distances at which
 * the C library's (and the kernel's) `rep movsb` is slow where the loop is on. */
static inline int tc_copy_near_ahead(uintptr_t dst, uintptr_t src)
{
    return ((dst - src) & 4095) - 1 < 63;
}

/** @brief Copy of a size the loop may take (out of line). */
void tc_copy_mid(void *dst, const void *src, size_t n);

/** @brief Copies up to this many bytes are inline (no call into the C library: an 8-byte
 * window put or small message costs less than the call would). */
#define TC_COPY_SMALL_MAX 16u

/** @brief Copy @p n <= TC_COPY_SMALL_MAX bytes: every load before any store, so the ranges may
 * overlap. Two words that overlap in the middle cover every size of their class. */
static inline void tc_copy_small(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n > 0) {
        unsigned char a = s[0], b = s[n / 2], c = s[n - 1];
        d[0] = a;
        d[n / 2] = b;
        d[n - 1] = c;
    }
}

/** @brief Copy @p n bytes from @p src to @p dst; the ranges must not overlap. */
static inline __attribute__((always_inline)) void tc_copy(void *dst, const void *src, size_t n)
{
    if (n <= TC_COPY_SMALL_MAX)
        tc_copy_small(dst, src, n);
    else if (n < TC_COPY_LOOP_MIN || n > TC_COPY_LOOP_MAX ||
             !tc_copy_near_ahead((uintptr_t)dst, (uintptr_t)src))
        memcpy(dst, src, n);
    else
        tc_copy_mid(dst, src, n);
}

/** @brief As tc_copy, or memmove when the ranges overlap. */
static inline __attribute__((always_inline)) void tc_copy_any(void *dst, const void *src, size_t n)
{
    const char *d = (const char *)dst, *s = (const char *)src;
    if (n <= TC_COPY_SMALL_MAX)
        tc_copy_small(dst, src, n);
    else if (d < s + n && s < d + n)
        memmove(dst, src, n);
    else
        tc_copy(dst, src, n);
}

/** @brief 1 when tc_copy takes misaligned mid-size copies through its loop (TC_COPY; read on
 *  the first call unless tc_copy_config() read it, a bad value then logged and ignored). */
int tc_copy_loop_on(void);

/** @brief Read TC_COPY (auto, libc, loop) now: TC_ERR_CONFIG naming a bad value (a
 *  communicator's creation calls it, so that a typo fails there). */
tc_status_t tc_copy_config(void);

#ifdef __cplusplus
}
#endif

#endif
