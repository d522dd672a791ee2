/* Growable string buffer. */
#include "tcomms/base/sbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tc_sbuf_init(tc_sbuf_t *sb)
{
    sb->data = NULL;
    sb->len = 0;
    sb->capacity = 0;
}

/* Room for @p extra more bytes of text plus the NUL. */
static tc_status_t tc_sbuf_grow(tc_sbuf_t *sb, size_t extra)
{
    size_t need, capacity;
    char *data;

    if (extra > SIZE_MAX - sb->len - 1)
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_sbuf: %zu + %zu bytes overflow size_t", sb->len,
                            extra);
    need = sb->len + extra + 1;
    if (need <= sb->capacity)
        return TC_OK;
    capacity = sb->capacity < 64 ? 64 : sb->capacity;
    while (capacity < need)
        capacity = capacity > SIZE_MAX / 2 ? need : capacity * 2;
    data = realloc(sb->data, capacity);
    if (data == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_sbuf: realloc of %zu bytes failed", capacity);
    sb->data = data;
    sb->capacity = capacity;
    return TC_OK;
}

tc_status_t tc_sbuf_append_n(tc_sbuf_t *sb, const char *text, size_t len)
{
    tc_status_t st = tc_sbuf_grow(sb, len);

    if (st != TC_OK)
        return st;
    memcpy(sb->data + sb->len, text, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
    return TC_OK;
}

tc_status_t tc_sbuf_append(tc_sbuf_t *sb, const char *text)
{
    return tc_sbuf_append_n(sb, text, strlen(text));
}

tc_status_t tc_sbuf_vappendf(tc_sbuf_t *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    tc_status_t st;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_sbuf_appendf: bad format \"%s\"", fmt);
    st = tc_sbuf_grow(sb, (size_t)n);
    if (st != TC_OK)
        return st;
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
    return TC_OK;
}

tc_status_t tc_sbuf_appendf(tc_sbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    tc_status_t st;

    va_start(ap, fmt);
    st = tc_sbuf_vappendf(sb, fmt, ap);
    va_end(ap);
    return st;
}

tc_status_t tc_sbuf_append_json_string(tc_sbuf_t *sb, const char *text)
{
    size_t old_len = sb->len;
    tc_status_t st = tc_sbuf_append_n(sb, "\"", 1);

    for (const unsigned char *p = (const unsigned char *)text; st == TC_OK && *p != '\0'; p++) {
        switch (*p) {
        case '"':
            st = tc_sbuf_append_n(sb, "\\\"", 2);
            break;
        case '\\':
            st = tc_sbuf_append_n(sb, "\\\\", 2);
            break;
        case '\n':
            st = tc_sbuf_append_n(sb, "\\n", 2);
            break;
        case '\r':
            st = tc_sbuf_append_n(sb, "\\r", 2);
            break;
        case '\t':
            st = tc_sbuf_append_n(sb, "\\t", 2);
            break;
        default:
            if (*p < 0x20)
                st = tc_sbuf_appendf(sb, "\\u%04x", *p);
            else
                st = tc_sbuf_append_n(sb, (const char *)p, 1);
        }
    }
    if (st == TC_OK)
        st = tc_sbuf_append_n(sb, "\"", 1);
    if (st != TC_OK && sb->data != NULL) {
        /* keep the previous contents on failure */
        sb->len = old_len;
        sb->data[old_len] = '\0';
    }
    return st;
}

const char *tc_sbuf_str(const tc_sbuf_t *sb)
{
    return sb->data != NULL ? sb->data : "";
}

size_t tc_sbuf_len(const tc_sbuf_t *sb)
{
    return sb->len;
}

void tc_sbuf_clear(tc_sbuf_t *sb)
{
    sb->len = 0;
    if (sb->data != NULL)
        sb->data[0] = '\0';
}

void tc_sbuf_free(tc_sbuf_t *sb)
{
    free(sb->data);
    tc_sbuf_init(sb);
}
