/* Internal: what public communicator and work handles hold. */
#ifndef TC_API_IMPL_H
#define TC_API_IMPL_H

#include "tcomms/runtime/comm.h"
#include "tcomms/tcomms.h"

#define TC_COMM_MAGIC 0x7463636f6d6d0001ull
#define TC_WORK_MAGIC 0x7463776f726b0001ull
#define TC_COMM_DEAD 0x7463636f6d6dDEADull /* destroyed (handles.c) */
#define TC_WORK_DEAD 0x7463776f726bDEADull

/* A user's hook, called through the runtime's. */
typedef struct tc_api_hook {
    tc_comm_t *comm;
    tc_hook_fn fn;
    void *arg;
} tc_api_hook_t;

struct tc_comm {
    uint64_t magic; /* TC_COMM_MAGIC while alive */
    tc_rt_comm_t *rt;
    tc_api_hook_t hooks[TC_RT_HOOKS];
    int nhooks;
    int in_batch;       /* between tc_batch_begin and tc_batch_end */
    tc_rt_p2p_t *batch; /* the sends and receives recorded */
    int batch_n, batch_cap;
    tc_comm_t *next_free; /* once destroyed: the list of retired handles */
};

struct tc_work {
    uint64_t magic; /* TC_WORK_MAGIC while alive */
    tc_rt_work_t *rt;
    tc_work_t *next_free; /* once freed: the list of retired handles */
};

/* handles.c: handles are retired, never freed, so that a call on a destroyed
 * one is refused rather than reading freed memory. */
tc_comm_t *tc_api_comm_alloc(void);
void tc_api_comm_retire(tc_comm_t *comm);
tc_work_t *tc_api_work_alloc(void);
void tc_api_work_retire(tc_work_t *work);

/* Check a communicator handle (and, for the second, that no batch is being
 * recorded); sets the detail naming @p fn. */
tc_status_t tc_api_check_comm(const tc_comm_t *comm, const char *fn);
tc_status_t tc_api_check_not_batching(const tc_comm_t *comm, const char *fn);

/* Whether @p opts carries hints to parse. */
int tc_api_opts_have_hints(const tc_op_opts_t *opts);

/* Parse per-operation options into hints, a timeout and the runtime flags;
 * checks that asynchronous calls have somewhere to put their work. @p hints
 * may be NULL when tc_api_opts_have_hints() says there are none. */
tc_status_t tc_api_op_opts(const tc_op_opts_t *opts, const char *fn, tc_hints_t *hints,
                           int64_t *timeout_ms_p, int *flags_p, tc_work_t **work_p);

/* Wrap a runtime work into a handle (allocated before issuing, so issuing
 * never fails after the fact). */
tc_status_t tc_api_work_new(const char *fn, tc_work_t **work_p);
void tc_api_work_drop(tc_work_t *work);

#endif
