/* Growable string buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/sbuf.h"

static void test_sbuf_append(void **state)
{
    tc_sbuf_t sb;
    char *ref = malloc(200000);
    size_t ref_len = 0;

    assert_non_null(ref);
    tc_sbuf_init(&sb);
    assert_string_equal(tc_sbuf_str(&sb), "");
    assert_int_equal(tc_sbuf_len(&sb), 0);
    for (int i = 0; i < 10000; i++) {
        char piece[64];
        int n = snprintf(piece, sizeof(piece), "item %d=%x;", i, i * 31);
        switch (i % 3) {
        case 0:
            assert_int_equal(tc_sbuf_appendf(&sb, "item %d=%x;", i, i * 31), TC_OK);
            break;
        case 1:
            assert_int_equal(tc_sbuf_append(&sb, piece), TC_OK);
            break;
        default:
            assert_int_equal(tc_sbuf_append_n(&sb, piece, (size_t)n), TC_OK);
        }
        memcpy(ref + ref_len, piece, (size_t)n);
        ref_len += (size_t)n;
    }
    ref[ref_len] = '\0';
    assert_int_equal(tc_sbuf_len(&sb), ref_len);
    assert_string_equal(tc_sbuf_str(&sb), ref);
    assert_int_equal(strlen(tc_sbuf_str(&sb)), ref_len);
    /* append_n copies exactly n bytes, even from a longer string */
    tc_sbuf_clear(&sb);
    assert_string_equal(tc_sbuf_str(&sb), "");
    assert_int_equal(tc_sbuf_append_n(&sb, "abcdef", 3), TC_OK);
    assert_int_equal(tc_sbuf_append(&sb, ""), TC_OK);
    assert_int_equal(tc_sbuf_appendf(&sb, "%s", ""), TC_OK);
    assert_string_equal(tc_sbuf_str(&sb), "abc");
    tc_sbuf_free(&sb);
    assert_string_equal(tc_sbuf_str(&sb), "");
    assert_int_equal(tc_sbuf_len(&sb), 0);
    tc_sbuf_clear(&sb); /* on an empty buffer: fine */
    free(ref);
}

static void test_sbuf_json(void **state)
{
    tc_sbuf_t sb;

    tc_sbuf_init(&sb);
    assert_int_equal(tc_sbuf_append(&sb, "{\"k\":"), TC_OK);
    assert_int_equal(tc_sbuf_append_json_string(&sb, "a\"b\\c\nd\te\rf\x01g/h"), TC_OK);
    assert_int_equal(tc_sbuf_append(&sb, "}"), TC_OK);
    assert_string_equal(tc_sbuf_str(&sb), "{\"k\":\"a\\\"b\\\\c\\nd\\te\\rf\\u0001g/h\"}");
    tc_sbuf_clear(&sb);
    assert_int_equal(tc_sbuf_append_json_string(&sb, ""), TC_OK);
    assert_string_equal(tc_sbuf_str(&sb), "\"\"");
    tc_sbuf_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sbuf_append),
        cmocka_unit_test(test_sbuf_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
