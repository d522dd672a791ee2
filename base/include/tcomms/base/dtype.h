/**
 * @file dtype.h
 * @brief Data types and reduction operations shared by every layer.
 */
#ifndef TCOMMS_BASE_DTYPE_H
#define TCOMMS_BASE_DTYPE_H

#include <stddef.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Element types of buffers. */
typedef enum tc_dtype {
    TC_INT8 = 0,   /**< int8_t */
    TC_UINT8,      /**< uint8_t */
    TC_INT32,      /**< int32_t */
    TC_UINT32,     /**< uint32_t */
    TC_INT64,      /**< int64_t */
    TC_UINT64,     /**< uint64_t */
    TC_FLOAT16,    /**< IEEE 754 binary16 */
    TC_BFLOAT16,   /**< bfloat16 */
    TC_FLOAT32,    /**< float */
    TC_FLOAT64,    /**< double */
    TC_DTYPE_COUNT /**< number of types */
} tc_dtype_t;

/** @brief Reduction operations. */
typedef enum tc_redop {
    TC_SUM = 0,    /**< a + b */
    TC_PROD,       /**< a * b */
    TC_MIN,        /**< minimum */
    TC_MAX,        /**< maximum */
    TC_AVG,        /**< sum, then divided by the number of ranks; on integer types the sum is
                        taken in the element type (it wraps as TC_SUM does: uint8 255 and 255
                        give 127) and the division truncates towards zero, as NCCL's avg */
    TC_BAND,       /**< bitwise and (integers) */
    TC_BOR,        /**< bitwise or (integers) */
    TC_BXOR,       /**< bitwise xor (integers) */
    TC_REDOP_COUNT /**< number of ops */
} tc_redop_t;

/**
 * @brief Bytes per element of a type.
 * @param dtype the type.
 * @return the size in bytes, 0 if @p dtype is not a valid type.
 */
size_t tc_dtype_size(tc_dtype_t dtype);

/**
 * @brief The short name of a type.
 * @param dtype the type.
 * @return "float32", ...; "invalid" for a value that is not a type.
 */
const char *tc_dtype_name(tc_dtype_t dtype);

/**
 * @brief The short name of a reduction op.
 * @param op the op.
 * @return "sum", ...; "invalid" for a value that is not an op.
 */
const char *tc_redop_name(tc_redop_t op);

/**
 * @brief Parse a type name ("float32", "f32", "float", "bf16", ...).
 * @param text the name.
 * @param dtype_p receives the type on success.
 * @return TC_OK, or TC_ERR_INVALID_ARG with a detail listing the valid names.
 */
tc_status_t tc_dtype_parse(const char *text, tc_dtype_t *dtype_p);

/**
 * @brief Parse a reduction op name ("sum", "prod", ...).
 * @param text the name.
 * @param op_p receives the op on success.
 * @return TC_OK, or TC_ERR_INVALID_ARG with a detail listing the valid names.
 */
tc_status_t tc_redop_parse(const char *text, tc_redop_t *op_p);

/**
 * @brief Whether an op applies to a type (bitwise ops only on integers).
 * @param op the op.
 * @param dtype the type.
 * @return 1 when it applies, 0 otherwise (also for invalid values).
 */
int tc_redop_valid_for(tc_redop_t op, tc_dtype_t dtype);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_DTYPE_H */
