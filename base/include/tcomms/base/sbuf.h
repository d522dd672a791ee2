/**
 * @file sbuf.h
 * @brief A growable, always NUL-terminated string buffer (messages, JSON).
 *
 * On an allocation failure the buffer keeps its previous contents.
 */
#ifndef TCOMMS_BASE_SBUF_H
#define TCOMMS_BASE_SBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A string buffer; zero-initialised by tc_sbuf_init(). */
typedef struct tc_sbuf {
    char *data;      /**< the text, NUL-terminated (NULL until the first append) */
    size_t len;      /**< bytes of text, without the NUL */
    size_t capacity; /**< bytes allocated */
} tc_sbuf_t;

/**
 * @brief An empty buffer; allocates nothing.
 * @param sb the buffer.
 */
void tc_sbuf_init(tc_sbuf_t *sb);

/**
 * @brief Append bytes.
 * @param sb the buffer.
 * @param text the bytes.
 * @param len how many.
 * @return TC_OK, or TC_ERR_NO_MEMORY (the buffer unchanged).
 */
tc_status_t tc_sbuf_append_n(tc_sbuf_t *sb, const char *text, size_t len);

/**
 * @brief Append a NUL-terminated string.
 * @param sb the buffer.
 * @param text the string.
 * @return TC_OK, or TC_ERR_NO_MEMORY (the buffer unchanged).
 */
tc_status_t tc_sbuf_append(tc_sbuf_t *sb, const char *text);

/**
 * @brief Append printf-style.
 * @param sb the buffer.
 * @param fmt the format, then its arguments.
 * @return TC_OK, TC_ERR_NO_MEMORY or TC_ERR_INVALID_ARG (the buffer unchanged).
 */
tc_status_t tc_sbuf_appendf(tc_sbuf_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/**
 * @brief Append printf-style from a va_list.
 * @param sb the buffer.
 * @param fmt the format.
 * @param ap its arguments.
 * @return TC_OK, TC_ERR_NO_MEMORY or TC_ERR_INVALID_ARG (the buffer unchanged).
 */
tc_status_t tc_sbuf_vappendf(tc_sbuf_t *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/**
 * @brief Append a string as a quoted, escaped JSON string.
 * @param sb the buffer.
 * @param text the string (bytes >= 0x80 are copied as they are).
 * @return TC_OK, or TC_ERR_NO_MEMORY (the buffer unchanged).
 */
tc_status_t tc_sbuf_append_json_string(tc_sbuf_t *sb, const char *text);

/**
 * @brief The text.
 * @param sb the buffer.
 * @return the text, "" when empty; valid until the next change.
 */
const char *tc_sbuf_str(const tc_sbuf_t *sb);

/**
 * @brief Bytes of text.
 * @param sb the buffer.
 * @return the length without the NUL.
 */
size_t tc_sbuf_len(const tc_sbuf_t *sb);

/**
 * @brief Empty the text (keeps the memory).
 * @param sb the buffer.
 */
void tc_sbuf_clear(tc_sbuf_t *sb);

/**
 * @brief Free the memory; the buffer is empty and reusable afterwards.
 * @param sb the buffer.
 */
void tc_sbuf_free(tc_sbuf_t *sb);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_SBUF_H */
