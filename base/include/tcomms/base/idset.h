/**
 * @file idset.h
 * @brief A set of 32-bit ids kept as sorted, disjoint ranges (not thread-safe): small when
 * the ids in it are mostly contiguous, as free ids are.
 */
#ifndef TCOMMS_BASE_IDSET_H
#define TCOMMS_BASE_IDSET_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief One range of ids, both ends included. */
typedef struct tc_idset_range {
    uint32_t lo, hi;
} tc_idset_range_t;

/** @brief A set of ids; zero-initialised it is empty. */
typedef struct tc_idset {
    tc_idset_range_t *r; /**< sorted, disjoint, never adjacent */
    size_t n, cap;
} tc_idset_t;

/**
 * @brief A set holding every id from @p lo to @p hi (none when lo > hi).
 * @return TC_OK or TC_ERR_NO_MEMORY (the set empty).
 */
tc_status_t tc_idset_init(tc_idset_t *set, uint32_t lo, uint32_t hi);

/** @brief Free the memory; the set is empty and reusable afterwards. */
void tc_idset_free(tc_idset_t *set);

/** @brief Whether @p id is in the set. */
int tc_idset_has(const tc_idset_t *set, uint32_t id);

/**
 * @brief The smallest id of the set at or above @p from.
 * @return 1 with it in @p *id_p, or 0 when there is none.
 */
int tc_idset_first(const tc_idset_t *set, uint32_t from, uint32_t *id_p);

/**
 * @brief Remove @p id.
 * @return TC_OK, TC_ERR_INVALID_STATE when it is not in the set, TC_ERR_NO_MEMORY (the set
 * unchanged) when splitting a range needs room.
 */
tc_status_t tc_idset_take(tc_idset_t *set, uint32_t id);

/**
 * @brief Add @p id (merged with the ranges beside it).
 * @return TC_OK, TC_ERR_INVALID_STATE when it is in the set already, TC_ERR_NO_MEMORY (the
 * set unchanged).
 */
tc_status_t tc_idset_give(tc_idset_t *set, uint32_t id);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_IDSET_H */
