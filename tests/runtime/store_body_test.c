/*
 * The bodies of the store's frames after joining, taken apart by the pure functions of
 * runtime/src/boot_store_body.c: well-formed bodies give their fields, every malformed one is
 * refused with the text the store logs (the same as before they were factored out of the
 * store's and the client's I/O loops).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "runtime/src/boot_store.h"
#include "tcomms/base/status.h"
#include "tcomms/runtime/bootstrap.h"

static size_t le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return (size_t)n;
}

static void expect_error(tc_status_t rc, const char *text)
{
    assert_int_equal(rc, TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_last_error(), text));
}

static void test_put(void **state)
{
    (void)state;
    uint8_t b[64];
    tc_bs_put_t p;
    size_t n = le(b, 3, 2);
    memcpy(b + n, "abc", 3);
    n += 3;
    n += le(b + n, 4, 4);
    memcpy(b + n, "wxyz", 4);
    n += 4;
    assert_int_equal(tc_boot_store_put_parse(b, n, &p), TC_OK);
    assert_int_equal(p.klen, 3);
    assert_memory_equal(p.key, "abc", 3);
    assert_int_equal(p.vlen, 4);
    assert_memory_equal(p.val, "wxyz", 4);
    expect_error(tc_boot_store_put_parse(b, n + 1, &p),
                 "malformed PUT of key 'abc' (body 14 bytes)");
    expect_error(tc_boot_store_put_parse(b, n - 1, &p),
                 "malformed PUT of key 'abc' (body 12 bytes)");
    expect_error(tc_boot_store_put_parse(b, 1, &p), "malformed key (length 1..255 expected)");
    b[3] = '\0';
    expect_error(tc_boot_store_put_parse(b, n, &p), "key with a NUL byte");
    le(b, 0, 2);
    expect_error(tc_boot_store_put_parse(b, n, &p), "malformed key (length 1..255 expected)");
    le(b, 256, 2);
    expect_error(tc_boot_store_put_parse(b, n, &p), "malformed key (length 1..255 expected)");
    /* a value above the limit, even if the bytes were there */
    n = le(b, 1, 2);
    b[n++] = 'k';
    n += le(b + n, TC_BS_MAX_VALUE + 1, 4);
    expect_error(tc_boot_store_put_parse(b, n, &p), "malformed PUT of key 'k' (body 7 bytes)");
    /* an empty value */
    n = le(b, 1, 2);
    b[n++] = 'k';
    n += le(b + n, 0, 4);
    assert_int_equal(tc_boot_store_put_parse(b, n, &p), TC_OK);
    assert_int_equal(p.vlen, 0);
}

static void test_fence_get(void **state)
{
    (void)state;
    uint8_t b[64];
    tc_bs_fence_t f;
    tc_bs_get_t g;
    size_t n = le(b, 9, 8);
    n += le(b + n, 2, 8);
    n += le(b + n, TC_BS_WAIT_FOREVER, 4);
    assert_int_equal(tc_boot_store_fence_parse(b, n, &f), TC_OK);
    assert_true(f.req == 9 && f.seq == 2 && f.wait_ms == TC_BS_WAIT_FOREVER);
    expect_error(tc_boot_store_fence_parse(b, n - 1, &f), "FENCE body of 19 bytes, expected 20");
    expect_error(tc_boot_store_fence_parse(b, n + 1, &f), "FENCE body of 21 bytes, expected 20");

    n = le(b, 77, 8);
    n += le(b + n, 3, 4);
    n += le(b + n, 2, 2);
    memcpy(b + n, "ky", 2);
    n += 2;
    assert_int_equal(tc_boot_store_get_parse(b, n, &g), TC_OK);
    assert_true(g.req == 77 && g.rank == 3 && g.klen == 2 && memcmp(g.key, "ky", 2) == 0);
    expect_error(tc_boot_store_get_parse(b, n + 2, &g), "GET with 2 trailing bytes");
    expect_error(tc_boot_store_get_parse(b, 11, &g), "GET body of 11 bytes is too short");
    expect_error(tc_boot_store_get_parse(b, n - 1, &g), "malformed key (length 1..255 expected)");
}

static void test_notify(void **state)
{
    (void)state;
    uint8_t b[16];
    tc_bs_notice_t v;
    le(b, TC_BOOT_EV_REVOKE, 4);
    le(b + 4, 2, 4);
    le(b + 8, 5, 4);
    assert_int_equal(tc_boot_store_notify_parse(b, 12, 4, 2, &v), TC_OK);
    assert_true(v.kind == TC_BOOT_EV_REVOKE && v.rank == 2 && v.comm_id == 5 && v.from == 2);
    expect_error(tc_boot_store_notify_parse(b, 12, 4, 1, &v),
                 "NOTIFY: a revoke on behalf of rank 2");
    expect_error(tc_boot_store_notify_parse(b, 11, 4, 2, &v),
                 "NOTIFY body of 11 bytes, expected 12");
    expect_error(tc_boot_store_notify_parse(b, 12, 2, 2, &v), "NOTIFY about rank 2 of 2");
    le(b, TC_BOOT_EV_PROC_FAILED, 4);
    expect_error(tc_boot_store_notify_parse(b, 12, 4, 1, &v),
                 "NOTIFY: rank 2 failed, with comm id 5 (another rank, id 0 expected, or 1");
    le(b + 8, 2, 4);
    expect_error(tc_boot_store_notify_parse(b, 12, 4, 1, &v),
                 "NOTIFY: rank 2 failed, with comm id 2 (another rank, id 0 expected, or 1");
    le(b + 8, 1, 4); /* found silent (heartbeats) */
    assert_int_equal(tc_boot_store_notify_parse(b, 12, 4, 1, &v), TC_OK);
    assert_true(v.kind == TC_BOOT_EV_PROC_FAILED && v.rank == 2 && v.comm_id == 1 && v.from == 1);
    le(b + 8, 0, 4);
    assert_int_equal(tc_boot_store_notify_parse(b, 12, 4, 1, &v), TC_OK);
    expect_error(tc_boot_store_notify_parse(b, 12, 4, 2, &v),
                 "NOTIFY: rank 2 failed, with comm id 0 (another rank, id 0 expected, or 1");
    le(b, 9, 4);
    expect_error(tc_boot_store_notify_parse(b, 12, 4, 1, &v), "NOTIFY of unknown kind 9");
}

static void test_reply_event(void **state)
{
    (void)state;
    uint8_t b[32];
    tc_bs_reply_t r;
    tc_bs_notice_t v;
    size_t n = le(b, 5, 8);
    n += le(b + n, (uint32_t)(int32_t)TC_ERR_NOT_FOUND, 4);
    n += le(b + n, 3, 4);
    memcpy(b + n, "abc", 3);
    n += 3;
    assert_int_equal(tc_boot_store_reply_parse(b, n, &r), 1);
    assert_true(r.req == 5 && r.status == TC_ERR_NOT_FOUND && r.len == 3 && r.left == 3);
    assert_memory_equal(r.data, "abc", 3);
    assert_int_equal(tc_boot_store_reply_parse(b, n - 1, &r), 0);
    assert_true(r.len == 3 && r.left == 2);
    le(b + 8, (uint32_t)(int32_t)TC_ERR_NO_MEMORY, 4);
    assert_int_equal(tc_boot_store_reply_parse(b, n, &r), 0); /* not a status the store sends */
    assert_int_equal(r.status, TC_ERR_NO_MEMORY);
    assert_int_equal(tc_boot_store_reply_parse(b, 10, &r), 0);

    le(b, TC_BOOT_EV_PROC_FAILED, 4);
    le(b + 4, 3, 4);
    le(b + 8, 0, 4);
    le(b + 12, 1, 4);
    assert_int_equal(tc_boot_store_event_parse(b, 16, 4, &v), 1);
    assert_true(v.kind == TC_BOOT_EV_PROC_FAILED && v.rank == 3 && v.comm_id == 0 && v.from == 1);
    assert_int_equal(tc_boot_store_event_parse(b, 16, 3, &v), 0);
    assert_int_equal(tc_boot_store_event_parse(b, 15, 4, &v), 0);
    le(b + 12, 4, 4);
    assert_int_equal(tc_boot_store_event_parse(b, 16, 4, &v), 0);
    assert_int_equal(v.from, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put),
        cmocka_unit_test(test_fence_get),
        cmocka_unit_test(test_notify),
        cmocka_unit_test(test_reply_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
