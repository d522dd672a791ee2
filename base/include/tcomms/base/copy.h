/**
 * @file copy.h
 * @brief Bulk copies of the data path: memcpy, except where the C library's copy is slow.
 *
 * On AMD processors the C library (glibc 2.36 here) copies 4 KiB to a few hundred KiB with
 * `rep movsb`, which runs at about 3 GB/s there when the destination is 1 to 31 bytes ahead of
 * the source modulo 4 KiB (a buffer from malloc, 16 bytes into its page, against a page-aligned
 * window), against 40-90 GB/s otherwise (docs/kernels.md, "Copies"). tc_copy takes such copies
 * (1 to 63 bytes ahead, for margin) through a loop of 64-byte moves; every other copy is
 * memcpy. TC_COPY=auto (the loop on AMD and Hygon processors), libc or loop.
 */
#ifndef TCOMMS_BASE_COPY_H
#define TCOMMS_BASE_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/** @brief Copy @p n bytes from @p src to @p dst; the ranges must not overlap. */
static inline void tc_copy(void *dst, const void *src, size_t n)
{
    if (n < TC_COPY_LOOP_MIN || n > TC_COPY_LOOP_MAX ||
        !tc_copy_near_ahead((uintptr_t)dst, (uintptr_t)src))
        memcpy(dst, src, n);
    else
        tc_copy_mid(dst, src, n);
}

/** @brief As tc_copy, or memmove when the ranges overlap. */
static inline void tc_copy_any(void *dst, const void *src, size_t n)
{
    const char *d = (const char *)dst, *s = (const char *)src;
    if (d < s + n && s < d + n)
        memmove(dst, src, n);
    else
        tc_copy(dst, src, n);
}

/** @brief 1 when tc_copy takes misaligned mid-size copies through its loop (TC_COPY). */
int tc_copy_loop_on(void);

#ifdef __cplusplus
}
#endif

#endif
