/* Public collectives: argument checks, then the runtime. */
#include <stdint.h>

#include "api_impl.h"
#include "tcomms/base/config.h"

tc_status_t tc_api_op_opts(const tc_op_opts_t *opts, const char *fn, tc_hints_t *hints,
                           int64_t *timeout_ms_p)
{
    *timeout_ms_p = 0;
    if (!opts)
        return TC_OK;
    if (opts->size < sizeof(tc_op_opts_t))
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: opts->size is %u, expected %zu (initialise "
                            "with TC_OP_OPTS_INIT)", fn, opts->size, sizeof(tc_op_opts_t));
    *timeout_ms_p = opts->timeout_ms;
    if (opts->hints) {
        tc_status_t st = tc_hints_parse(hints, opts->hints);
        if (st != TC_OK) {
            tc_error_prefix("%s: opts->hints: ", fn);
            return st;
        }
    }
    return TC_OK;
}

/* Checks shared by reducing collectives: type, op, count, buffers. */
static tc_status_t check_reduce_args(const char *fn, const void *sendbuf, const void *recvbuf,
                                     size_t count, tc_dtype_t dtype, tc_redop_t op)
{
    if ((unsigned)dtype >= TC_DTYPE_COUNT)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: dtype %d is not a tc_dtype_t", fn,
                            (int)dtype);
    if ((unsigned)op >= TC_REDOP_COUNT)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: op %d is not a tc_redop_t", fn, (int)op);
    if (!tc_redop_valid_for(op, dtype))
        return tc_error_set(TC_ERR_UNSUPPORTED, "%s: op %s does not apply to dtype %s", fn,
                            tc_redop_name(op), tc_dtype_name(dtype));
    size_t esize = tc_dtype_size(dtype);
    if (count > SIZE_MAX / esize || count > (UINT64_C(1) << 48))
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: count %zu of %s is too large", fn, count,
                            tc_dtype_name(dtype));
    if (count == 0)
        return TC_OK;
    if (!sendbuf || !recvbuf)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", fn,
                            !sendbuf ? "sendbuf" : "recvbuf", count);
    uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf, bytes = count * esize;
    if (s != r && s < r + bytes && r < s + bytes)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: sendbuf %p and recvbuf %p overlap (%zu bytes"
                            " each) without being the same buffer (in place)", fn, sendbuf,
                            recvbuf, (size_t)bytes);
    return TC_OK;
}

tc_status_t tc_all_reduce(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, tc_redop_t op, const tc_op_opts_t *opts,
                          tc_work_t **work_p)
{
    static const char fn[] = "tc_all_reduce";
    tc_status_t st = tc_api_check_comm(comm, fn);
    if (st != TC_OK)
        return st;
    if (work_p)
        return tc_error_set(TC_ERR_UNSUPPORTED, "%s: asynchronous operations (work_p) are not "
                            "available yet; pass NULL", fn);
    if ((st = check_reduce_args(fn, sendbuf, recvbuf, count, dtype, op)) != TC_OK)
        return st;
    tc_hints_t hints;
    tc_hints_init(&hints);
    int64_t timeout_ms;
    if ((st = tc_api_op_opts(opts, fn, &hints, &timeout_ms)) == TC_OK) {
        tc_rt_coll_t call = {TC_COLL_ALL_REDUCE, sendbuf, recvbuf, count, dtype, op, -1, &hints,
                             timeout_ms};
        st = tc_rt_coll_run(comm->rt, &call);
    }
    tc_hints_free(&hints);
    return st;
}
