/* Ranks as threads of one process whose only inter-rank transport is the ib backend over the
 * emulated HCA (tests/transport/ib/ib_emu.h): each rank creates its communicator with
 * tc_comm_create_from_store() over one in-memory store (its own world), runs a test function,
 * and records its first failure. Waits between the threads are bounded; a failed rank releases
 * the others from the test's barriers. */
#ifndef TCOMMS_TESTS_API_IB_RANKS_H
#define TCOMMS_TESTS_API_IB_RANKS_H

#include <stdint.h>

#include "tcomms/tcomms.h"

#define IBR_MAX_RANKS 8

typedef struct ibr_job ibr_job_t;

/* One rank: its thread's view. */
typedef struct ibr_rank {
    ibr_job_t *job;
    int rank, size;
    tc_comm_t *comm; /* set to NULL by a test function that destroyed it */
    void *arg;       /* the run's argument */
    char error[768]; /* first failure, "" when none */
} ibr_rank_t;

/* What the ranks of a run expect the emulated HCA to have executed (atomically counted). */
typedef struct ibr_expect {
    int64_t writes, write_bytes, reads, read_bytes, fetch_adds, cmp_swaps;
} ibr_expect_t;

typedef int (*ibr_fn)(ibr_rank_t *r);

/* Register the "ib" backend over the emulated HCA (reaching every peer, in place of the
 * built-in) and turn shm and tcp off: call once, from main, before any thread. 0 or -1. */
int ibr_setup(void);

/* Run @p fn on @p size ranks (communicator prefix @p name); 0 when every rank succeeded and
 * each communicator reached its peers over ib only, else -1 with the failures printed.
 * @p want_p (may be NULL) receives what the ranks expected of the HCA. */
int ibr_run(const char *name, int size, ibr_fn fn, void *arg, ibr_expect_t *want_p);

/* A barrier of the test's threads (not of the library): 0, or -1 after 120 s or when another
 * rank failed. */
int ibr_barrier(ibr_rank_t *r);

/* Record the first failure of @p r (printf format) and return -1. */
int ibr_fail(ibr_rank_t *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Add to what the run expects of the HCA (from any rank's thread). */
void ibr_expect_add(ibr_rank_t *r, const ibr_expect_t *e);

/* Check @p cond; else record the failure and return -1 from the calling function. */
#define IBR_CHECK(r, cond, ...)                                                                    \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return ibr_fail((r), __LINE__, __VA_ARGS__);                                           \
    } while (0)

/* A call that must return TC_OK. */
#define IBR_OK(r, call)                                                                            \
    do {                                                                                           \
        tc_status_t ibr_st_ = (call);                                                              \
        if (ibr_st_ != TC_OK)                                                                      \
            return ibr_fail((r), __LINE__, "%s: %s: %s", #call, tc_status_string(ibr_st_),         \
                            tc_last_error());                                                      \
    } while (0)

/* A deterministic generator (xorshift64*) per rank and purpose. */
uint64_t ibr_rand(uint64_t *state);

#endif
