/* CRC-32C against published check values and a bit-by-bit reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/crc32c.h"

/* Independent reference: one bit at a time, reflected polynomial 0x82F63B78. */
static uint32_t ref_crc32c(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;

    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void test_crc32c_check_values(void **state)
{
    uint8_t buf[32];

    assert_int_equal(tc_crc32c("123456789", 9), 0xe3069283u);
    assert_int_equal(tc_crc32c("", 0), 0);
    assert_int_equal(tc_crc32c(NULL, 0), 0);
    /* RFC 3720 (iSCSI) B.4 test vectors */
    memset(buf, 0, sizeof(buf));
    assert_int_equal(tc_crc32c(buf, 32), 0x8a9136aau);
    memset(buf, 0xff, sizeof(buf));
    assert_int_equal(tc_crc32c(buf, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(tc_crc32c(buf, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(tc_crc32c(buf, 32), 0x113fdb5cu);
}

static void test_crc32c_reference_and_incremental(void **state)
{
    static uint8_t buf[4096];
    uint64_t s = 0x853c49e6748fea9bull;

    for (size_t i = 0; i < sizeof(buf); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(s >> 56);
    }
    for (size_t n = 0; n <= 300; n++)
        assert_int_equal(tc_crc32c(buf, n), ref_crc32c(buf, n));
    assert_int_equal(tc_crc32c(buf, sizeof(buf)), ref_crc32c(buf, sizeof(buf)));
    /* split anywhere: the update of the first part extended with the second */
    for (size_t cut = 0; cut <= 1000; cut += 7) {
        uint32_t c = tc_crc32c_update(0, buf, cut);
        c = tc_crc32c_update(c, buf + cut, 1000 - cut);
        assert_int_equal(c, tc_crc32c(buf, 1000));
    }
    /* a one-bit change changes the CRC */
    buf[100] ^= 0x10;
    assert_int_not_equal(tc_crc32c(buf, 1000), ref_crc32c(buf, 1000) ^ 1);
    assert_int_equal(tc_crc32c(buf, 1000), ref_crc32c(buf, 1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_check_values),
        cmocka_unit_test(test_crc32c_reference_and_incremental),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
