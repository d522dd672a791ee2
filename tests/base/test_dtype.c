/* Data type and reduction-op names, sizes and parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/dtype.h"

static const struct {
    tc_dtype_t dtype;
    const char *name;
    size_t size;
    int integer;
} dtypes[] = {
    {TC_INT8, "int8", sizeof(int8_t), 1},         {TC_UINT8, "uint8", sizeof(uint8_t), 1},
    {TC_INT32, "int32", sizeof(int32_t), 1},      {TC_UINT32, "uint32", sizeof(uint32_t), 1},
    {TC_INT64, "int64", sizeof(int64_t), 1},      {TC_UINT64, "uint64", sizeof(uint64_t), 1},
    {TC_FLOAT16, "float16", sizeof(uint16_t), 0}, {TC_BFLOAT16, "bfloat16", sizeof(uint16_t), 0},
    {TC_FLOAT32, "float32", sizeof(float), 0},    {TC_FLOAT64, "float64", sizeof(double), 0},
};
#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

static void test_dtype_sizes_names(void **state)
{
    assert_int_equal(NDTYPES, TC_DTYPE_COUNT);
    for (size_t i = 0; i < NDTYPES; i++) {
        assert_int_equal(tc_dtype_size(dtypes[i].dtype), dtypes[i].size);
        assert_string_equal(tc_dtype_name(dtypes[i].dtype), dtypes[i].name);
    }
    assert_int_equal(tc_dtype_size(TC_DTYPE_COUNT), 0);
    assert_int_equal(tc_dtype_size((tc_dtype_t)-1), 0);
    assert_int_equal(tc_dtype_size((tc_dtype_t)1000), 0);
    assert_string_equal(tc_dtype_name(TC_DTYPE_COUNT), "invalid");
    assert_string_equal(tc_dtype_name((tc_dtype_t)-1), "invalid");
}

static void test_dtype_parse(void **state)
{
    static const struct {
        const char *text;
        tc_dtype_t dtype;
    } aliases[] = {
        {"f32", TC_FLOAT32},     {"float", TC_FLOAT32}, {"FP32", TC_FLOAT32},
        {"Float32", TC_FLOAT32}, {"bf16", TC_BFLOAT16}, {"fp16", TC_FLOAT16},
        {"half", TC_FLOAT16},    {"f16", TC_FLOAT16},   {"double", TC_FLOAT64},
        {"f64", TC_FLOAT64},     {"i32", TC_INT32},     {"int", TC_INT32},
        {"u32", TC_UINT32},      {"i64", TC_INT64},     {"u64", TC_UINT64},
        {"i8", TC_INT8},         {"u8", TC_UINT8},      {"uint8_t", TC_UINT8},
    };
    tc_dtype_t d;

    for (size_t i = 0; i < NDTYPES; i++) {
        d = TC_DTYPE_COUNT;
        assert_int_equal(tc_dtype_parse(dtypes[i].name, &d), TC_OK);
        assert_int_equal(d, dtypes[i].dtype);
    }
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        d = TC_DTYPE_COUNT;
        assert_int_equal(tc_dtype_parse(aliases[i].text, &d), TC_OK);
        assert_int_equal(d, aliases[i].dtype);
    }
    d = TC_INT8;
    assert_int_equal(tc_dtype_parse("float128", &d), TC_ERR_INVALID_ARG);
    assert_int_equal(d, TC_INT8);
    assert_non_null(strstr(tc_last_error(), "\"float128\""));
    for (size_t i = 0; i < NDTYPES; i++)
        assert_non_null(strstr(tc_last_error(), dtypes[i].name));
    assert_non_null(strstr(tc_last_error(), "bf16"));
    assert_int_equal(tc_dtype_parse("", &d), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_dtype_parse("float32 ", &d), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_dtype_parse(NULL, &d), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_dtype_parse("f32", NULL), TC_ERR_INVALID_ARG);
}

static const char *const redop_names[] = {"sum", "prod", "min", "max",
                                          "avg", "band", "bor", "bxor"};

static void test_redop(void **state)
{
    tc_redop_t op;

    assert_int_equal(sizeof(redop_names) / sizeof(redop_names[0]), TC_REDOP_COUNT);
    for (int i = 0; i < TC_REDOP_COUNT; i++) {
        assert_string_equal(tc_redop_name((tc_redop_t)i), redop_names[i]);
        op = TC_REDOP_COUNT;
        assert_int_equal(tc_redop_parse(redop_names[i], &op), TC_OK);
        assert_int_equal(op, i);
    }
    assert_string_equal(tc_redop_name(TC_REDOP_COUNT), "invalid");
    assert_string_equal(tc_redop_name((tc_redop_t)-1), "invalid");
    assert_int_equal(tc_redop_parse("SUM", &op), TC_OK);
    assert_int_equal(op, TC_SUM);
    op = TC_MAX;
    assert_int_equal(tc_redop_parse("mean", &op), TC_ERR_INVALID_ARG);
    assert_int_equal(op, TC_MAX);
    assert_non_null(strstr(tc_last_error(), "\"mean\""));
    for (int i = 0; i < TC_REDOP_COUNT; i++)
        assert_non_null(strstr(tc_last_error(), redop_names[i]));
    assert_int_equal(tc_redop_parse(NULL, &op), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_redop_parse("sum", NULL), TC_ERR_INVALID_ARG);
}

static void test_redop_valid_for(void **state)
{
    for (size_t i = 0; i < NDTYPES; i++) {
        for (int op = 0; op < TC_REDOP_COUNT; op++) {
            int bitwise = op == TC_BAND || op == TC_BOR || op == TC_BXOR;
            int want = bitwise ? dtypes[i].integer : 1;
            assert_int_equal(tc_redop_valid_for((tc_redop_t)op, dtypes[i].dtype), want);
        }
    }
    assert_int_equal(tc_redop_valid_for(TC_REDOP_COUNT, TC_INT32), 0);
    assert_int_equal(tc_redop_valid_for((tc_redop_t)-1, TC_INT32), 0);
    assert_int_equal(tc_redop_valid_for(TC_SUM, TC_DTYPE_COUNT), 0);
    assert_int_equal(tc_redop_valid_for(TC_SUM, (tc_dtype_t)-1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_sizes_names),
        cmocka_unit_test(test_dtype_parse),
        cmocka_unit_test(test_redop),
        cmocka_unit_test(test_redop_valid_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
