/* Growable array of fixed-size elements. */
#include "tcomms/base/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tc_vec_init(tc_vec_t *vec, size_t elem_size)
{
    vec->data = NULL;
    vec->elem_size = elem_size;
    vec->size = 0;
    vec->capacity = 0;
}

tc_status_t tc_vec_reserve(tc_vec_t *vec, size_t capacity)
{
    void *data;

    if (vec->elem_size == 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_vec_reserve: element size is 0");
    if (capacity <= vec->capacity)
        return TC_OK;
    if (capacity > SIZE_MAX / vec->elem_size)
        return tc_error_set(TC_ERR_NO_MEMORY,
                            "tc_vec_reserve: %zu elements of %zu bytes overflow size_t", capacity,
                            vec->elem_size);
    data = realloc(vec->data, capacity * vec->elem_size);
    if (data == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_vec_reserve: realloc of %zu bytes failed",
                            capacity * vec->elem_size);
    vec->data = data;
    vec->capacity = capacity;
    return TC_OK;
}

tc_status_t tc_vec_push(tc_vec_t *vec, const void *elem)
{
    if (vec->size == vec->capacity) {
        size_t want = vec->capacity < 8 ? 8 : vec->capacity * 2;
        tc_status_t st;

        if (want < vec->capacity) /* doubling overflowed */
            want = vec->capacity + 1;
        st = tc_vec_reserve(vec, want);
        if (st != TC_OK)
            return st;
    }
    memcpy((char *)vec->data + vec->size * vec->elem_size, elem, vec->elem_size);
    vec->size++;
    return TC_OK;
}

tc_status_t tc_vec_pop(tc_vec_t *vec, void *elem_p)
{
    if (vec->size == 0)
        return tc_error_set(TC_ERR_INVALID_STATE, "tc_vec_pop: the vector is empty");
    vec->size--;
    if (elem_p != NULL)
        memcpy(elem_p, (char *)vec->data + vec->size * vec->elem_size, vec->elem_size);
    return TC_OK;
}

void *tc_vec_at(const tc_vec_t *vec, size_t index)
{
    if (index >= vec->size)
        return NULL;
    return (char *)vec->data + index * vec->elem_size;
}

size_t tc_vec_size(const tc_vec_t *vec)
{
    return vec->size;
}

void tc_vec_clear(tc_vec_t *vec)
{
    vec->size = 0;
}

void tc_vec_free(tc_vec_t *vec)
{
    free(vec->data);
    vec->data = NULL;
    vec->size = 0;
    vec->capacity = 0;
}
