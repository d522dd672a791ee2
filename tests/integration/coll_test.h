/* What the parts of coll_test share (the test is described in coll_test.c): the run's
 * state, the failure counting, and each part's entry points. */
#ifndef TC_TESTS_INTEGRATION_COLL_TEST_H
#define TC_TESTS_INTEGRATION_COLL_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tcomms/tcomms.h"

#define TIMEOUT_MS 60000
#define GUARD 64 /* guard bytes after every buffer */
#define GUARD_BYTE 0xee
#define FILL_BYTE 0x5a /* what receive buffers hold before an operation */
#define PERIOD 4099    /* reduction inputs repeat with this (prime) period */
#define MAX_STATUS_ERRORS 20

extern int rank, nranks, failures, checks, status_errors, quick;
extern uint64_t salt; /* changes every case: stale data from an earlier case never matches */

#define MAX_PRINTED 200 /* failure lines per rank; more are only counted */

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (failures++ < MAX_PRINTED) {                                                            \
            fprintf(stderr, "rank %d: FAIL: ", rank);                                              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* Tally of wrong elements of one check, with the first one for the message. */
typedef struct {
    size_t wrong, first;
    const char *where;
} tally_t;

/* The reference: inputs, expected reductions and payloads, buffers with guards, calls finished and
 * counted (coll_test_ref.c). */
uint64_t mix(uint64_t x);
uint64_t payload(int src, int dst, size_t j);
void put_payload(unsigned char *b, size_t i, size_t es, uint64_t v);
int has_payload(const unsigned char *b, size_t i, size_t es, uint64_t v);
int64_t red_input(int r, size_t i, tc_dtype_t t, tc_redop_t op);
void red_table(tc_dtype_t t, tc_redop_t op, int n, int64_t *tab);
void put_int(void *b, size_t i, tc_dtype_t t, int64_t v);
int red_matches(const void *b, size_t i, tc_dtype_t t, tc_redop_t op, int64_t combined, int n);
unsigned char *buf_new(size_t bytes, int fill);
int guard_broken(const unsigned char *b, size_t bytes);
void tally(tally_t *w, int ok, size_t i, const char *where);
tc_op_opts_t op_opts(const char *algo, char *hints, size_t cap, int async);
void status_fail(const char *what, tc_status_t st, const char *detail);
tc_status_t finish(tc_status_t st, tc_work_t *work, const char *what);
/* A call's status is @p want (an error with a detail message), else a failure. */
void expect(tc_status_t got, tc_status_t want, const char *what);

/* The matrix and the run (coll_test.c). */
int refused(const char *coll, const char *algo, tc_status_t st, const char *example);
double wall_s(void);

/* The v-variants and point-to-point (coll_test_v.c). */
void v_variants(tc_comm_t *comm);
void point_to_point(tc_comm_t *comm);

/* Receives from any source (coll_test_any.c). */
void any_source(tc_comm_t *comm);

/* Work objects, communicators, argument errors and mismatches (coll_test_comm.c). */
void async_works(tc_comm_t *comm);
void persistent(tc_comm_t *comm, int in_place);
void communicators(tc_comm_t *world);
void bad_arguments(tc_comm_t *comm);
void mismatch(tc_comm_t *comm);

#endif
