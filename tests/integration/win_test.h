/* What the parts of win_test share: the counters, the checking macros, the
 * pattern the windows are filled with, and the parts themselves (win_test.c
 * runs them; win_test_data.c, win_test_fail.c hold them). */
#ifndef TCOMMS_TESTS_INTEGRATION_WIN_TEST_H
#define TCOMMS_TESTS_INTEGRATION_WIN_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tcomms/tcomms.h"

#define TIMEOUT_MS 30000

extern int rank, size;
extern long checks, failures;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (failures++ < 50) {                                                                     \
            fprintf(stderr, "rank %d: FAIL: ", rank);                                              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* A call that must succeed. */
#define OK(call)                                                                                   \
    do {                                                                                           \
        tc_status_t s_ = (call);                                                                   \
        checks++;                                                                                  \
        if (s_ != TC_OK)                                                                           \
            FAIL("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, tc_status_string(s_),             \
                 tc_last_error());                                                                 \
    } while (0)

/* A call that must fail with @p want and a message holding @p words. */
void expect(tc_status_t got, tc_status_t want, const char *words, const char *what);

/* The shared pseudo-random sequence (xorshift; every rank seeds it alike). */
extern uint64_t rng_state;
uint64_t rnd(void);

/* Byte i of the pattern (a, b). */
unsigned char byte_of(uint64_t a, uint64_t b, uint64_t i);

/* Rank r's window size in the model, counts, order and split parts. */
size_t win_bytes(int r);

/* win_test_data.c */
void test_model(tc_comm_t *comm, uint64_t seed, int rounds);
void test_counts(tc_comm_t *comm, int iters, int allocate);
void test_order(tc_comm_t *comm, int iters, size_t max_bytes);
void test_cross(tc_comm_t *comm, int iters, size_t bytes);
void test_split_shared(tc_comm_t *world);
void test_large(tc_comm_t *comm);

/* win_test_fail.c */
void test_passive(tc_comm_t *comm);
void test_revoke(tc_comm_t *world);
void test_fr(tc_comm_t *comm);
/* @p timeout_mode: --timeout (a fire-and-forget put's own timeout) instead of --abort */
void test_abort(tc_comm_t *comm, int timeout_mode);
void test_kill(tc_comm_t *comm);

#endif
