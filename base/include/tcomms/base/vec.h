/**
 * @file vec.h
 * @brief A growable array of fixed-size elements (not thread-safe).
 */
#ifndef TCOMMS_BASE_VEC_H
#define TCOMMS_BASE_VEC_H

#include <stddef.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A growable array; zero-initialised by tc_vec_init(). */
typedef struct tc_vec {
    void *data;       /**< elements, contiguous */
    size_t elem_size; /**< bytes per element */
    size_t size;      /**< elements in use */
    size_t capacity;  /**< elements allocated */
} tc_vec_t;

/**
 * @brief An empty vector; allocates nothing.
 * @param vec the vector.
 * @param elem_size bytes per element (> 0, else every push fails).
 */
void tc_vec_init(tc_vec_t *vec, size_t elem_size);

/**
 * @brief Make room for at least @p capacity elements.
 * @param vec the vector.
 * @param capacity elements; a value below the current capacity changes nothing.
 * @return TC_OK, TC_ERR_NO_MEMORY (the vector unchanged), TC_ERR_INVALID_ARG (element size 0).
 */
tc_status_t tc_vec_reserve(tc_vec_t *vec, size_t capacity);

/**
 * @brief Append a copy of one element (the capacity grows geometrically).
 * @param vec the vector.
 * @param elem elem_size bytes to copy.
 * @return TC_OK, TC_ERR_NO_MEMORY (the vector unchanged), TC_ERR_INVALID_ARG (element size 0).
 */
tc_status_t tc_vec_push(tc_vec_t *vec, const void *elem);

/**
 * @brief Remove the last element.
 * @param vec the vector.
 * @param elem_p receives a copy of it; may be NULL.
 * @return TC_OK, or TC_ERR_INVALID_STATE when the vector is empty.
 */
tc_status_t tc_vec_pop(tc_vec_t *vec, void *elem_p);

/**
 * @brief The element at an index.
 * @param vec the vector.
 * @param index position from 0.
 * @return a pointer valid until the vector next grows, or NULL when out of range.
 */
void *tc_vec_at(const tc_vec_t *vec, size_t index);

/**
 * @brief Number of elements.
 * @param vec the vector.
 * @return the count.
 */
size_t tc_vec_size(const tc_vec_t *vec);

/**
 * @brief Remove every element (keeps the memory).
 * @param vec the vector.
 */
void tc_vec_clear(tc_vec_t *vec);

/**
 * @brief Free the memory; the vector is empty and reusable afterwards.
 * @param vec the vector.
 */
void tc_vec_free(tc_vec_t *vec);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_VEC_H */
