/**
 * @file crc32c.h
 * @brief CRC-32C (Castagnoli), the checksum of iSCSI, ext4 and many wire formats.
 */
#ifndef TCOMMS_BASE_CRC32C_H
#define TCOMMS_BASE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Extend @p crc (0 to start) with @p len bytes.
 * tc_crc32c_update(tc_crc32c_update(0, a, n), b, m) is the CRC of a then b.
 * @param crc the CRC so far, 0 to start.
 * @param data the bytes (may be NULL when @p len is 0).
 * @param len how many.
 * @return the CRC including the bytes.
 */
uint32_t tc_crc32c_update(uint32_t crc, const void *data, size_t len);

/**
 * @brief The CRC-32C of a buffer ("123456789" gives 0xE3069283).
 * @param data the bytes (may be NULL when @p len is 0).
 * @param len how many.
 * @return the CRC.
 */
uint32_t tc_crc32c(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_CRC32C_H */
