/* What the files of small_test share (small_test.c: the modes of the collectives, timeouts
 * and failures; small_test_setup.c: the modes of the path's set-up; small_test_order.c: the
 * order in which its works post; small_test_close.c: endpoints closed under the lanes). */
#ifndef TC_TESTS_SMALL_TEST_H
#define TC_TESTS_SMALL_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "tcomms/tcomms.h"

extern int rank, nranks, checks, failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            if (failures++ < 20) {                                                                 \
                fprintf(stderr, "rank %d: FAIL: ", rank);                                          \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fprintf(stderr, "\n");                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static inline void ok(tc_status_t st, const char *what)
{
    EXPECT(st == TC_OK, "%s: %s: %s", what, tc_status_string(st), tc_last_error());
}

/* How a call is made: blocking without a work object, blocking with one (returned finished),
 * or asynchronous and waited for. The path serves all three alike, so ranks may differ. */
enum { BLOCKING, BLOCKING_WORK, ASYNC, STYLES };

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One 8-byte all-reduce made in @p style, with @p timeout_ms (0: the communicator's): its end,
 * and its error's text in why (small_test.c). */
extern char why[512];
tc_status_t allreduce_as(tc_comm_t *comm, double *x, double *y, int64_t timeout_ms, int style);

/* small_test_setup.c */
void first_mode(tc_comm_t *comm, int off);
void first_blocking_mode(tc_comm_t *world);
void abort_mode(tc_comm_t *comm);
/* small_test_order.c */
void order_mode(tc_comm_t *comm);
void unissued_mode(tc_comm_t *comm);
void unissued_threads_mode(tc_comm_t *comm);
void unissued_pairs_mode(tc_comm_t *comm, int busy);
void unissued_cap_mode(tc_comm_t *comm);
/* small_test_close.c: the close modes (@p mode "close..."); 0 for an unknown one */
int close_mode(tc_comm_t *comm, const char *mode);

#endif
