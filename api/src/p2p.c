/* Public point-to-point: send, receive, and batches of them. */
#include <stdlib.h>

#include "api_impl.h"

_Static_assert(TC_ANY_SOURCE == TC_RT_ANY_SOURCE, "the API passes TC_ANY_SOURCE on as it is");

void *tc_api_thread_mark(void)
{
    static _Thread_local char mark;
    return &mark;
}

tc_status_t tc_api_batch_other(const char *fn, const tc_api_comm_t *c)
{
    return tc_error_set(TC_ERR_INVALID_STATE,
                        "%s: another thread is recording a batch on comm '%s' (a batch belongs "
                        "to the thread that began it: calls from other threads are refused "
                        "until its tc_batch_end)",
                        fn, tc_rt_comm_name(c->rt));
}

static tc_status_t p2p_check(const tc_api_comm_t *comm, const char *fn, int is_send,
                             const void *buf, size_t count, tc_dtype_t dtype, int peer,
                             int in_batch)
{
    int size = tc_rt_comm_size(comm->rt);
    if ((unsigned)dtype >= TC_DTYPE_COUNT)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: dtype %d is not a tc_dtype_t", fn, (int)dtype);
    if (peer == TC_ANY_SOURCE && !is_send && in_batch)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "%s: a receive from any source (TC_ANY_SOURCE) is issued alone, not "
                            "inside a batch",
                            fn);
    if ((peer < 0 || peer >= size) && (peer != TC_ANY_SOURCE || is_send))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: peer %d is not a rank of the communicator "
                            "(size %d)",
                            fn, peer, size);
    if (count > (UINT64_C(1) << 48) / tc_dtype_size(dtype))
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: count %zu of %s is too large", fn, count,
                            tc_dtype_name(dtype));
    if (count && !buf)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: buf is NULL with %zu elements", fn, count);
    return TC_OK;
}

static tc_status_t batch_add(tc_api_comm_t *comm, const char *fn, const tc_rt_p2p_t *op,
                             const tc_op_opts_t *opts, tc_work_t **work_p)
{
    if (opts || work_p)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: inside a batch, opts and work_p must be "
                            "NULL (pass them to tc_batch_end)",
                            fn);
    if (comm->batch_n == comm->batch_cap) {
        int cap = comm->batch_cap ? comm->batch_cap * 2 : 16;
        tc_rt_p2p_t *b = realloc(comm->batch, (size_t)cap * sizeof(*b));
        if (!b)
            return tc_error_set(TC_ERR_NO_MEMORY, "%s: a batch of %d operations", fn, cap);
        comm->batch = b;
        comm->batch_cap = cap;
    }
    comm->batch[comm->batch_n++] = *op;
    return TC_OK;
}

/* @p entered: TC_RT_ENTERED when the caller holds the communicator, else 0. */
static tc_status_t p2p_issue(tc_api_comm_t *comm, const char *fn, const tc_rt_p2p_t *ops, int n,
                             const tc_op_opts_t *opts, tc_work_t **work_p, int entered)
{
    int64_t timeout_ms;
    int flags;
    tc_api_work_t *work = NULL;
    tc_status_t st = tc_api_op_opts(opts, fn, NULL, NULL, &timeout_ms, &flags, work_p);
    if (st == TC_OK && work_p)
        st = tc_api_work_new(fn, &work);
    if (st == TC_OK) {
        tc_rt_work_t *rt = NULL;
        st = tc_rt_p2p_issue(comm->rt, ops, n, timeout_ms, flags | entered, work_p ? &rt : NULL);
        if (rt) {
            work->rt = rt;
            *work_p = work->handle;
            work = NULL;
        }
    }
    tc_api_work_drop(work);
    return st;
}

static tc_status_t p2p(tc_comm_t *comm, const char *fn, int is_send, void *buf, size_t count,
                       tc_dtype_t dtype, int peer, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, fn, &c);
    if (st != TC_OK)
        return st;
    void *owner = tc_api_batch_owner(c);
    if (owner && owner != tc_api_thread_mark())
        return tc_api_batch_other(fn, c);
    if ((st = p2p_check(c, fn, is_send, buf, count, dtype, peer, owner != NULL)) != TC_OK)
        return st;
    tc_rt_p2p_t op = {is_send, buf, count, dtype, peer};
    if (owner)
        return batch_add(c, fn, &op, opts, work_p);
    return p2p_issue(c, fn, &op, 1, opts, work_p, 0);
}

tc_status_t tc_send(tc_comm_t *comm, const void *buf, size_t count, tc_dtype_t dtype, int peer,
                    const tc_op_opts_t *opts, tc_work_t **work_p)
{
    return p2p(comm, "tc_send", 1, (void *)buf, count, dtype, peer, opts, work_p);
}

tc_status_t tc_recv(tc_comm_t *comm, void *buf, size_t count, tc_dtype_t dtype, int peer,
                    const tc_op_opts_t *opts, tc_work_t **work_p)
{
    return p2p(comm, "tc_recv", 0, buf, count, dtype, peer, opts, work_p);
}

tc_status_t tc_batch_begin(tc_comm_t *comm)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get_not_batching(comm, "tc_batch_begin", &c);
    if (st != TC_OK)
        return st;
    void *none = NULL;
    if (!__atomic_compare_exchange_n(&c->batch_owner, &none, tc_api_thread_mark(), 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return tc_api_batch_other("tc_batch_begin", c); /* another thread began one meanwhile */
    c->batch_n = 0;
    return TC_OK;
}

/* The communicator of @p comm whose batch the calling thread records, or why not (@p fn). */
static tc_status_t batch_mine(tc_comm_t *comm, const char *fn, tc_api_comm_t **c_p)
{
    tc_status_t st = tc_api_comm_get(comm, fn, c_p);
    if (st != TC_OK)
        return st;
    void *owner = tc_api_batch_owner(*c_p);
    if (!owner)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s: no tc_batch_begin on comm '%s'", fn,
                            tc_rt_comm_name((*c_p)->rt));
    return owner == tc_api_thread_mark() ? TC_OK : tc_api_batch_other(fn, *c_p);
}

tc_status_t tc_batch_cancel(tc_comm_t *comm)
{
    tc_api_comm_t *c;
    tc_status_t st = batch_mine(comm, "tc_batch_cancel", &c);
    if (st != TC_OK)
        return st;
    c->batch_n = 0;
    tc_api_batch_close(c);
    return TC_OK;
}

tc_status_t tc_batch_end(tc_comm_t *comm, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    static const char fn[] = "tc_batch_end";
    tc_api_comm_t *c;
    tc_status_t st = batch_mine(comm, fn, &c);
    if (st != TC_OK)
        return st;
    /* Refused for its options, or while another thread is inside a call: the batch stays open
     * for a retry or tc_batch_cancel (a bad option dropped it, its peers then waited) */
    int64_t timeout_ms;
    int flags;
    if ((st = tc_api_op_opts(opts, fn, NULL, NULL, &timeout_ms, &flags, work_p)) != TC_OK ||
        (st = tc_rt_comm_enter(c->rt, fn)) != TC_OK)
        return st;
    int n = c->batch_n;
    c->batch_n = 0;
    st = p2p_issue(c, fn, c->batch, n, opts, work_p, TC_RT_ENTERED);
    tc_api_batch_close(c); /* after the issue read the batch: no other thread writes it before */
    tc_rt_comm_leave(c->rt);
    return st;
}
