/* Little-endian bounded writer and reader. */
#include "tcomms/base/wire.h"

#include <string.h>

void tc_wire_writer_init(tc_wire_writer_t *w, void *buf, size_t capacity)
{
    w->buf = buf;
    w->capacity = capacity;
    w->pos = 0;
}

static tc_status_t tc_wire_room(const tc_wire_writer_t *w, size_t n, const char *what)
{
    if (n > w->capacity - w->pos)
        return tc_error_set(TC_ERR_TRUNCATED,
                            "wire writer: %s of %zu bytes at offset %zu does not fit in %zu bytes",
                            what, n, w->pos, w->capacity);
    return TC_OK;
}

/* Store @p n low-order bytes of @p v, least significant first. */
static tc_status_t tc_wire_put_le(tc_wire_writer_t *w, uint64_t v, size_t n, const char *what)
{
    tc_status_t st = tc_wire_room(w, n, what);

    if (st != TC_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        w->buf[w->pos + i] = (uint8_t)(v >> (8 * i));
    w->pos += n;
    return TC_OK;
}

tc_status_t tc_wire_put_u8(tc_wire_writer_t *w, uint8_t v)
{
    return tc_wire_put_le(w, v, 1, "u8");
}

tc_status_t tc_wire_put_u16(tc_wire_writer_t *w, uint16_t v)
{
    return tc_wire_put_le(w, v, 2, "u16");
}

tc_status_t tc_wire_put_u32(tc_wire_writer_t *w, uint32_t v)
{
    return tc_wire_put_le(w, v, 4, "u32");
}

tc_status_t tc_wire_put_u64(tc_wire_writer_t *w, uint64_t v)
{
    return tc_wire_put_le(w, v, 8, "u64");
}

tc_status_t tc_wire_put_bytes(tc_wire_writer_t *w, const void *data, size_t len)
{
    tc_status_t st = tc_wire_room(w, len, "bytes");

    if (st != TC_OK)
        return st;
    if (len > 0)
        memcpy(w->buf + w->pos, data, len);
    w->pos += len;
    return TC_OK;
}

size_t tc_wire_writer_len(const tc_wire_writer_t *w)
{
    return w->pos;
}

void tc_wire_reader_init(tc_wire_reader_t *r, const void *buf, size_t len)
{
    r->buf = buf;
    r->len = len;
    r->pos = 0;
}

static tc_status_t tc_wire_need(const tc_wire_reader_t *r, size_t n, const char *what)
{
    if (n > r->len - r->pos)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "wire reader: truncated message: %s of %zu bytes at offset %zu, only "
                            "%zu of %zu bytes left",
                            what, n, r->pos, r->len - r->pos, r->len);
    return TC_OK;
}

static tc_status_t tc_wire_get_le(tc_wire_reader_t *r, size_t n, const char *what, uint64_t *v_p)
{
    tc_status_t st = tc_wire_need(r, n, what);
    uint64_t v = 0;

    if (st != TC_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->buf[r->pos + i] << (8 * i);
    r->pos += n;
    *v_p = v;
    return TC_OK;
}

tc_status_t tc_wire_get_u8(tc_wire_reader_t *r, uint8_t *v_p)
{
    uint64_t v;
    tc_status_t st = tc_wire_get_le(r, 1, "u8", &v);

    if (st == TC_OK)
        *v_p = (uint8_t)v;
    return st;
}

tc_status_t tc_wire_get_u16(tc_wire_reader_t *r, uint16_t *v_p)
{
    uint64_t v;
    tc_status_t st = tc_wire_get_le(r, 2, "u16", &v);

    if (st == TC_OK)
        *v_p = (uint16_t)v;
    return st;
}

tc_status_t tc_wire_get_u32(tc_wire_reader_t *r, uint32_t *v_p)
{
    uint64_t v;
    tc_status_t st = tc_wire_get_le(r, 4, "u32", &v);

    if (st == TC_OK)
        *v_p = (uint32_t)v;
    return st;
}

tc_status_t tc_wire_get_u64(tc_wire_reader_t *r, uint64_t *v_p)
{
    return tc_wire_get_le(r, 8, "u64", v_p);
}

tc_status_t tc_wire_get_bytes(tc_wire_reader_t *r, void *out, size_t len)
{
    tc_status_t st = tc_wire_need(r, len, "bytes");

    if (st != TC_OK)
        return st;
    if (len > 0)
        memcpy(out, r->buf + r->pos, len);
    r->pos += len;
    return TC_OK;
}

tc_status_t tc_wire_get_view(tc_wire_reader_t *r, size_t len, const void **data_p)
{
    tc_status_t st = tc_wire_need(r, len, "view");

    if (st != TC_OK)
        return st;
    *data_p = r->buf + r->pos;
    r->pos += len;
    return TC_OK;
}

size_t tc_wire_reader_left(const tc_wire_reader_t *r)
{
    return r->len - r->pos;
}
