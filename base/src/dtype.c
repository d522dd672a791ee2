/* Data type and reduction-op names, sizes and parsing. */
#include "tcomms/base/dtype.h"

#include <strings.h>

static const struct {
    const char *name;
    size_t size;
    int is_integer;
    const char *aliases[5]; /* NULL-terminated */
} tc_dtype_table[TC_DTYPE_COUNT] = {
    [TC_INT8] = {"int8", 1, 1, {"i8", "int8_t", "char", NULL}},
    [TC_UINT8] = {"uint8", 1, 1, {"u8", "uint8_t", "byte", NULL}},
    [TC_INT32] = {"int32", 4, 1, {"i32", "int32_t", "int", NULL}},
    [TC_UINT32] = {"uint32", 4, 1, {"u32", "uint32_t", "uint", NULL}},
    [TC_INT64] = {"int64", 8, 1, {"i64", "int64_t", "long", NULL}},
    [TC_UINT64] = {"uint64", 8, 1, {"u64", "uint64_t", "ulong", NULL}},
    [TC_FLOAT16] = {"float16", 2, 0, {"f16", "fp16", "half", NULL}},
    [TC_BFLOAT16] = {"bfloat16", 2, 0, {"bf16", NULL}},
    [TC_FLOAT32] = {"float32", 4, 0, {"f32", "fp32", "float", NULL}},
    [TC_FLOAT64] = {"float64", 8, 0, {"f64", "fp64", "double", NULL}},
};

static const struct {
    const char *name;
    const char *alias;
} tc_redop_table[TC_REDOP_COUNT] = {
    [TC_SUM] = {"sum", NULL}, [TC_PROD] = {"prod", "product"}, [TC_MIN] = {"min", NULL},
    [TC_MAX] = {"max", NULL}, [TC_AVG] = {"avg", "average"},   [TC_BAND] = {"band", NULL},
    [TC_BOR] = {"bor", NULL}, [TC_BXOR] = {"bxor", NULL},
};

static int tc_dtype_valid(tc_dtype_t dtype)
{
    return (int)dtype >= 0 && dtype < TC_DTYPE_COUNT;
}

size_t tc_dtype_size(tc_dtype_t dtype)
{
    return tc_dtype_valid(dtype) ? tc_dtype_table[dtype].size : 0;
}

const char *tc_dtype_name(tc_dtype_t dtype)
{
    return tc_dtype_valid(dtype) ? tc_dtype_table[dtype].name : "invalid";
}

const char *tc_redop_name(tc_redop_t op)
{
    return ((int)op >= 0 && op < TC_REDOP_COUNT) ? tc_redop_table[op].name : "invalid";
}

tc_status_t tc_dtype_parse(const char *text, tc_dtype_t *dtype_p)
{
    if (text == NULL || dtype_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_dtype_parse: NULL %s",
                            text == NULL ? "text" : "dtype_p");
    for (int i = 0; i < TC_DTYPE_COUNT; i++) {
        if (strcasecmp(text, tc_dtype_table[i].name) == 0) {
            *dtype_p = (tc_dtype_t)i;
            return TC_OK;
        }
        for (int a = 0; tc_dtype_table[i].aliases[a] != NULL; a++) {
            if (strcasecmp(text, tc_dtype_table[i].aliases[a]) == 0) {
                *dtype_p = (tc_dtype_t)i;
                return TC_OK;
            }
        }
    }
    return tc_error_set(TC_ERR_INVALID_ARG,
                        "unknown data type \"%s\" (accepted: int8, uint8, int32, uint32, int64, "
                        "uint64, float16, bfloat16, float32, float64; aliases i8, u8, i32, u32, "
                        "i64, u64, f16/fp16/half, bf16, f32/fp32/float, f64/fp64/double)",
                        text);
}

tc_status_t tc_redop_parse(const char *text, tc_redop_t *op_p)
{
    if (text == NULL || op_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_redop_parse: NULL %s",
                            text == NULL ? "text" : "op_p");
    for (int i = 0; i < TC_REDOP_COUNT; i++) {
        if (strcasecmp(text, tc_redop_table[i].name) == 0 ||
            (tc_redop_table[i].alias != NULL && strcasecmp(text, tc_redop_table[i].alias) == 0)) {
            *op_p = (tc_redop_t)i;
            return TC_OK;
        }
    }
    return tc_error_set(TC_ERR_INVALID_ARG,
                        "unknown reduction op \"%s\" (accepted: sum, prod, min, max, avg, band, "
                        "bor, bxor)",
                        text);
}

int tc_redop_valid_for(tc_redop_t op, tc_dtype_t dtype)
{
    if ((int)op < 0 || op >= TC_REDOP_COUNT || !tc_dtype_valid(dtype))
        return 0;
    if (op == TC_BAND || op == TC_BOR || op == TC_BXOR)
        return tc_dtype_table[dtype].is_integer;
    return 1;
}
