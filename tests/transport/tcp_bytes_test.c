/* The TCP backend's wire integers (tcp_bytes.h) are little-endian whatever the host, at any
 * alignment: the bytes are compared with a layout written out by hand, not with the helpers'
 * own inverse (a pair of helpers that both swapped would agree with each other and with every
 * peer built the same way, and still break the wire format). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/tcp/tcp_bytes.h"

static void test_layout(void **state)
{
    (void)state;
    unsigned char buf[1 + 8 + 4 + 2];
    memset(buf, 0xee, sizeof(buf));
    unsigned char *p = buf + 1; /* odd address: no alignment assumed */
    tc_tcp_put_u64(p, 0x0807060504030201ull);
    tc_tcp_put_u32(p + 8, 0x0c0b0a09u);
    tc_tcp_put_u16(p + 12, 0x0e0du);
    const unsigned char want[] = {0xee, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(tc_tcp_get_u64(p), 0x0807060504030201ull);
    assert_int_equal(tc_tcp_get_u32(p + 8), 0x0c0b0a09u);
    assert_int_equal(tc_tcp_get_u16(p + 12), 0x0e0du);
}

static void test_extremes(void **state)
{
    (void)state;
    unsigned char b[8];
    const uint64_t v64[] = {0, 1, 0x80ull << 56, UINT64_MAX, 0x00ff00ff00ff00ffull};
    for (size_t i = 0; i < sizeof(v64) / sizeof(v64[0]); i++) {
        tc_tcp_put_u64(b, v64[i]);
        for (int k = 0; k < 8; k++)
            assert_int_equal(b[k], (unsigned char)(v64[i] >> (8 * k)));
        assert_int_equal(tc_tcp_get_u64(b), v64[i]);
    }
    tc_tcp_put_u32(b, UINT32_MAX - 1);
    assert_int_equal(b[0], 0xfe);
    assert_int_equal(b[3], 0xff);
    assert_int_equal(tc_tcp_get_u32(b), UINT32_MAX - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
