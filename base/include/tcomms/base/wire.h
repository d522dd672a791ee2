/**
 * @file wire.h
 * @brief Little-endian encoding into a bounded writer and out of a bounded reader.
 *
 * Bytes from a peer are untrusted: the reader never reads past its end and
 * reports a short message as TC_ERR_PROTOCOL. A writer that runs out of room
 * reports TC_ERR_TRUNCATED. After an error the position is unchanged.
 */
#ifndef TCOMMS_BASE_WIRE_H
#define TCOMMS_BASE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Writes into a caller-owned buffer. */
typedef struct tc_wire_writer {
    uint8_t *buf;    /**< the buffer */
    size_t capacity; /**< its size */
    size_t pos;      /**< bytes written */
} tc_wire_writer_t;

/** @brief Reads from a caller-owned buffer. */
typedef struct tc_wire_reader {
    const uint8_t *buf; /**< the bytes */
    size_t len;         /**< how many */
    size_t pos;         /**< bytes consumed */
} tc_wire_reader_t;

/**
 * @brief A writer over a buffer.
 * @param w the writer.
 * @param buf the buffer.
 * @param capacity its size in bytes.
 */
void tc_wire_writer_init(tc_wire_writer_t *w, void *buf, size_t capacity);

/**
 * @brief Write a 8-bit unsigned integer, least significant byte first.
 * @param w the writer.
 * @param v the value.
 * @return TC_OK, or TC_ERR_TRUNCATED when it does not fit (nothing written).
 */
tc_status_t tc_wire_put_u8(tc_wire_writer_t *w, uint8_t v);

/**
 * @brief Write a 16-bit unsigned integer, least significant byte first.
 * @param w the writer.
 * @param v the value.
 * @return TC_OK, or TC_ERR_TRUNCATED when it does not fit (nothing written).
 */
tc_status_t tc_wire_put_u16(tc_wire_writer_t *w, uint16_t v);

/**
 * @brief Write a 32-bit unsigned integer, least significant byte first.
 * @param w the writer.
 * @param v the value.
 * @return TC_OK, or TC_ERR_TRUNCATED when it does not fit (nothing written).
 */
tc_status_t tc_wire_put_u32(tc_wire_writer_t *w, uint32_t v);

/**
 * @brief Write a 64-bit unsigned integer, least significant byte first.
 * @param w the writer.
 * @param v the value.
 * @return TC_OK, or TC_ERR_TRUNCATED when it does not fit (nothing written).
 */
tc_status_t tc_wire_put_u64(tc_wire_writer_t *w, uint64_t v);

/**
 * @brief Write raw bytes.
 * @param w the writer.
 * @param data the bytes (may be NULL when @p len is 0).
 * @param len how many.
 * @return TC_OK, or TC_ERR_TRUNCATED when they do not fit (nothing written).
 */
tc_status_t tc_wire_put_bytes(tc_wire_writer_t *w, const void *data, size_t len);

/**
 * @brief Bytes written so far.
 * @param w the writer.
 * @return the count.
 */
size_t tc_wire_writer_len(const tc_wire_writer_t *w);

/**
 * @brief A reader over received bytes.
 * @param r the reader.
 * @param buf the bytes.
 * @param len how many.
 */
void tc_wire_reader_init(tc_wire_reader_t *r, const void *buf, size_t len);

/**
 * @brief Read a 8-bit unsigned integer, least significant byte first.
 * @param r the reader.
 * @param v_p receives the value on success.
 * @return TC_OK, or TC_ERR_PROTOCOL when the message is too short (nothing consumed).
 */
tc_status_t tc_wire_get_u8(tc_wire_reader_t *r, uint8_t *v_p);

/**
 * @brief Read a 16-bit unsigned integer, least significant byte first.
 * @param r the reader.
 * @param v_p receives the value on success.
 * @return TC_OK, or TC_ERR_PROTOCOL when the message is too short (nothing consumed).
 */
tc_status_t tc_wire_get_u16(tc_wire_reader_t *r, uint16_t *v_p);

/**
 * @brief Read a 32-bit unsigned integer, least significant byte first.
 * @param r the reader.
 * @param v_p receives the value on success.
 * @return TC_OK, or TC_ERR_PROTOCOL when the message is too short (nothing consumed).
 */
tc_status_t tc_wire_get_u32(tc_wire_reader_t *r, uint32_t *v_p);

/**
 * @brief Read a 64-bit unsigned integer, least significant byte first.
 * @param r the reader.
 * @param v_p receives the value on success.
 * @return TC_OK, or TC_ERR_PROTOCOL when the message is too short (nothing consumed).
 */
tc_status_t tc_wire_get_u64(tc_wire_reader_t *r, uint64_t *v_p);

/**
 * @brief Copy raw bytes out.
 * @param r the reader.
 * @param out where to copy them.
 * @param len how many.
 * @return TC_OK, or TC_ERR_PROTOCOL when the message is too short (nothing consumed).
 */
tc_status_t tc_wire_get_bytes(tc_wire_reader_t *r, void *out, size_t len);

/**
 * @brief Point at the next bytes without copying, and consume them.
 * @param r the reader.
 * @param len how many.
 * @param data_p receives a pointer into the reader's buffer on success.
 * @return TC_OK, or TC_ERR_PROTOCOL when the message is too short (nothing consumed).
 */
tc_status_t tc_wire_get_view(tc_wire_reader_t *r, size_t len, const void **data_p);

/**
 * @brief Bytes not yet consumed.
 * @param r the reader.
 * @return the count.
 */
size_t tc_wire_reader_left(const tc_wire_reader_t *r);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_WIRE_H */
