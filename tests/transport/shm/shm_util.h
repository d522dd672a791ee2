/* shm-specific helpers for the shm tests, over the backend-neutral tests/transport/tp_util.h:
 * shm contexts with options, exact-length addresses, connected pairs that are up. */
#ifndef TCOMMS_TESTS_TRANSPORT_SHM_UTIL_H
#define TCOMMS_TESTS_TRANSPORT_SHM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

/* Bound of every wait in these tests. */
#define SU_WAIT_MS 20000

/* Create an shm context with id @p id, @p secret (NULL: none) and hints "k=v,..." (NULL: none);
 * returns the status (and *ctx_p on success). No cmocka: usable in forked children. */
tc_status_t tc_shmt_ctx_try(uint64_t id, const char *secret, const char *hints,
                            tc_tp_ctx_t **ctx_p);
/* The same, asserting success. */
tc_tp_ctx_t *tc_shmt_ctx_new(uint64_t id, const char *secret, const char *hints);
/* Pack @p ctx's address; asserts that it is exactly TC_TP_SHM_ADDR_LEN bytes. */
size_t tc_shmt_addr(tc_tp_ctx_t *ctx, unsigned char addr[TC_TP_SHM_ADDR_LEN]);

/* Two contexts in this process, ids 0 and 1, connected both ways and up. */
void tc_shmt_pair_open(tp_pair_t *pair, const char *hints);
/* Register @p len bytes at @p buf with pair->ctx[1] (*mem_p) and return the remote key of it
 * that pair->ep[0] reaches it with (packed and unpacked, as a peer would). */
tc_tp_rkey_t *tc_shmt_rkey(tp_pair_t *pair, void *buf, size_t len, tc_tp_mem_t **mem_p);

#endif
