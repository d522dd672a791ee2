/* Internal: what a public communicator handle holds. */
#ifndef TC_API_IMPL_H
#define TC_API_IMPL_H

#include "tcomms/runtime/comm.h"
#include "tcomms/tcomms.h"

#define TC_COMM_MAGIC 0x7463636f6d6d0001ull

struct tc_comm {
    uint64_t magic;     /* TC_COMM_MAGIC while alive */
    tc_rt_comm_t *rt;
};

/* Check a communicator handle; sets the detail naming @p fn. */
tc_status_t tc_api_check_comm(const tc_comm_t *comm, const char *fn);

/* Parse per-operation options into hints and a timeout. */
tc_status_t tc_api_op_opts(const tc_op_opts_t *opts, const char *fn, tc_hints_t *hints,
                           int64_t *timeout_ms_p);

#endif
