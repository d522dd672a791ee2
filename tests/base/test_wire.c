/* Little-endian bounded writer and reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/wire.h"

/* The message of the tests: u8, u16, u32, u64, 3 raw bytes = 18 bytes. */
static const uint8_t expected[18] = {0xab,                                           /* u8 */
                                     0x02, 0x01,                                     /* u16 */
                                     0x06, 0x05, 0x04, 0x03,                         /* u32 */
                                     0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07, /* u64 */
                                     'x',  'y',  'z'};

static void test_wire_write(void **state)
{
    uint8_t buf[32];
    tc_wire_writer_t w;

    memset(buf, 0xee, sizeof(buf));
    tc_wire_writer_init(&w, buf, sizeof(buf));
    assert_int_equal(tc_wire_put_u8(&w, 0xab), TC_OK);
    assert_int_equal(tc_wire_put_u16(&w, 0x0102), TC_OK);
    assert_int_equal(tc_wire_put_u32(&w, 0x03040506), TC_OK);
    assert_int_equal(tc_wire_put_u64(&w, 0x0708090a0b0c0d0eull), TC_OK);
    assert_int_equal(tc_wire_put_bytes(&w, "xyz", 3), TC_OK);
    assert_int_equal(tc_wire_put_bytes(&w, NULL, 0), TC_OK);
    assert_int_equal(tc_wire_writer_len(&w), sizeof(expected));
    assert_memory_equal(buf, expected, sizeof(expected));
    assert_int_equal(buf[sizeof(expected)], 0xee); /* nothing past the end */
}

static void test_wire_writer_overflow(void **state)
{
    uint8_t buf[16];
    tc_wire_writer_t w;

    /* each put fails when one byte short and leaves the buffer and position alone */
    static const size_t sizes[] = {1, 2, 4, 8};
    for (size_t s = 0; s < 4; s++) {
        memset(buf, 0xee, sizeof(buf));
        tc_wire_writer_init(&w, buf, 5 + sizes[s] - 1);
        assert_int_equal(tc_wire_put_bytes(&w, "abcde", 5), TC_OK);
        tc_status_t st = sizes[s] == 1   ? tc_wire_put_u8(&w, 1)
                         : sizes[s] == 2 ? tc_wire_put_u16(&w, 1)
                         : sizes[s] == 4 ? tc_wire_put_u32(&w, 1)
                                         : tc_wire_put_u64(&w, 1);
        assert_int_equal(st, TC_ERR_TRUNCATED);
        assert_non_null(strstr(tc_last_error(), "offset 5"));
        assert_int_equal(tc_wire_writer_len(&w), 5);
        for (size_t i = 5; i < sizeof(buf); i++)
            assert_int_equal(buf[i], 0xee);
    }
    tc_wire_writer_init(&w, buf, 4);
    assert_int_equal(tc_wire_put_bytes(&w, "abcde", 5), TC_ERR_TRUNCATED);
    assert_int_equal(tc_wire_writer_len(&w), 0);
    assert_int_equal(tc_wire_put_bytes(&w, "abcd", 4), TC_OK);
    assert_int_equal(tc_wire_put_u8(&w, 0), TC_ERR_TRUNCATED);
}

static void test_wire_read(void **state)
{
    tc_wire_reader_t r;
    uint8_t a, raw[3];
    uint16_t b;
    uint32_t c;
    uint64_t d;
    const void *view;

    tc_wire_reader_init(&r, expected, sizeof(expected));
    assert_int_equal(tc_wire_reader_left(&r), 18);
    assert_int_equal(tc_wire_get_u8(&r, &a), TC_OK);
    assert_int_equal(a, 0xab);
    assert_int_equal(tc_wire_get_u16(&r, &b), TC_OK);
    assert_int_equal(b, 0x0102);
    assert_int_equal(tc_wire_get_u32(&r, &c), TC_OK);
    assert_int_equal(c, 0x03040506);
    assert_int_equal(tc_wire_get_u64(&r, &d), TC_OK);
    assert_true(d == 0x0708090a0b0c0d0eull);
    assert_int_equal(tc_wire_get_bytes(&r, raw, 1), TC_OK);
    assert_int_equal(raw[0], 'x');
    assert_int_equal(tc_wire_get_view(&r, 2, &view), TC_OK);
    assert_ptr_equal(view, expected + 16);
    assert_int_equal(tc_wire_reader_left(&r), 0);
    assert_int_equal(tc_wire_get_u8(&r, &a), TC_ERR_PROTOCOL);
    assert_int_equal(tc_wire_get_bytes(&r, raw, 0), TC_OK);
}

/*
 * The message cut at every length: reading it field by field fails with
 * TC_ERR_PROTOCOL at the first field that does not fit, without writing the
 * output or moving the position; every field before it reads correctly.
 */
static void test_wire_reader_truncation(void **state)
{
    static const size_t ends[] = {1, 3, 7, 15, 18}; /* offset after each field */

    for (size_t len = 0; len < sizeof(expected); len++) {
        /* copy to an exactly sized heap-free buffer so ASan would see an over-read */
        uint8_t msg[sizeof(expected)];
        tc_wire_reader_t r;
        uint8_t a = 0x55, raw[3] = {0x55, 0x55, 0x55};
        uint16_t b = 0x5555;
        uint32_t c = 0x55555555;
        uint64_t d = 0x5555555555555555ull;
        tc_status_t st[5];
        size_t fail_at = 0;

        memcpy(msg, expected, len);
        tc_wire_reader_init(&r, msg, len);
        st[0] = tc_wire_get_u8(&r, &a);
        st[1] = st[0] == TC_OK ? tc_wire_get_u16(&r, &b) : TC_ERR_PROTOCOL;
        st[2] = st[1] == TC_OK ? tc_wire_get_u32(&r, &c) : TC_ERR_PROTOCOL;
        st[3] = st[2] == TC_OK ? tc_wire_get_u64(&r, &d) : TC_ERR_PROTOCOL;
        st[4] = st[3] == TC_OK ? tc_wire_get_bytes(&r, raw, 3) : TC_ERR_PROTOCOL;
        while (fail_at < 5 && ends[fail_at] <= len)
            fail_at++;
        assert_true(fail_at < 5);
        for (size_t f = 0; f < 5; f++)
            assert_int_equal(st[f], f < fail_at ? TC_OK : TC_ERR_PROTOCOL);
        assert_non_null(strstr(tc_last_error(), "truncated"));
        /* position stops at the end of the last good field */
        assert_int_equal(tc_wire_reader_left(&r), len - (fail_at == 0 ? 0 : ends[fail_at - 1]));
        assert_int_equal(a, fail_at > 0 ? 0xab : 0x55);
        assert_int_equal(b, fail_at > 1 ? 0x0102 : 0x5555);
        assert_int_equal(c, fail_at > 2 ? 0x03040506 : 0x55555555);
        assert_true(d == (fail_at > 3 ? 0x0708090a0b0c0d0eull : 0x5555555555555555ull));
        assert_int_equal(raw[0], 0x55);
    }
}

static void test_wire_hostile_lengths(void **state)
{
    uint8_t msg[4] = {1, 2, 3, 4}, out[8];
    tc_wire_reader_t r;
    const void *view = NULL;

    tc_wire_reader_init(&r, msg, sizeof(msg));
    assert_int_equal(tc_wire_get_bytes(&r, out, 5), TC_ERR_PROTOCOL);
    assert_int_equal(tc_wire_get_view(&r, SIZE_MAX, &view), TC_ERR_PROTOCOL);
    assert_null(view);
    assert_int_equal(tc_wire_get_bytes(&r, out, 2), TC_OK);
    assert_int_equal(tc_wire_get_view(&r, SIZE_MAX - 1, &view), TC_ERR_PROTOCOL);
    assert_int_equal(tc_wire_reader_left(&r), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_write),
        cmocka_unit_test(test_wire_writer_overflow),
        cmocka_unit_test(test_wire_read),
        cmocka_unit_test(test_wire_reader_truncation),
        cmocka_unit_test(test_wire_hostile_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
