/* Public windows: handles and options; the runtime (runtime/src/win.c,
 * win_ops.c) checks peers, ranges and slots against what each rank exposed. */
#include <stdlib.h>

#include "api_impl.h"
#include "tcomms/win.h"

/* Options of a collective window call: a timeout, never async. */
static tc_status_t win_coll_opts(const tc_op_opts_t *opts, const char *fn, int64_t *timeout_ms_p)
{
    int flags;
    /* before the generic checks, which would ask for a work_p this call does not have */
    if (opts && opts->size >= sizeof(*opts) && opts->async)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: cannot be asynchronous (opts->async is set)",
                            fn);
    return tc_api_op_opts(opts, fn, NULL, NULL, timeout_ms_p, &flags, NULL);
}

static tc_status_t win_make(tc_comm_t *comm, const char *fn, void *buf, size_t bytes, int allocate,
                            const tc_op_opts_t *opts, void **base_p, tc_win_t **win_p)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get_not_batching(comm, fn, &c);
    if (st != TC_OK)
        return st;
    if (!win_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: win_p is NULL", fn);
    if (allocate && !base_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: base_p is NULL", fn);
    if (!allocate && bytes && !buf)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: buf is NULL with %zu bytes", fn, bytes);
    if (bytes > (UINT64_C(1) << 48))
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %zu bytes is too large", fn, bytes);
    if (tc_rt_comm_device(c->rt) >= 0)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "%s: comm '%s' is bound to CUDA device %d: windows are host memory "
                            "only",
                            fn, tc_rt_comm_name(c->rt), tc_rt_comm_device(c->rt));
    int64_t timeout_ms = 0;
    if ((st = win_coll_opts(opts, fn, &timeout_ms)) != TC_OK)
        return st;
    tc_api_win_t *w;
    if ((st = tc_api_win_new(fn, &w)) != TC_OK)
        return st;
    void *base = NULL;
    if ((st = tc_rt_win_create(c->rt, buf, bytes, allocate, timeout_ms, &base, &w->rt)) != TC_OK) {
        tc_error_prefix("%s: ", fn);
        tc_api_win_retire(w);
        return st;
    }
    if (base_p)
        *base_p = base;
    *win_p = w->handle;
    return TC_OK;
}

tc_status_t tc_win_create(tc_comm_t *comm, void *buf, size_t bytes, const tc_op_opts_t *opts,
                          tc_win_t **win_p)
{
    return win_make(comm, "tc_win_create", buf, bytes, 0, opts, NULL, win_p);
}

tc_status_t tc_win_allocate(tc_comm_t *comm, size_t bytes, const tc_op_opts_t *opts, void **base_p,
                            tc_win_t **win_p)
{
    return win_make(comm, "tc_win_allocate", NULL, bytes, 1, opts, base_p, win_p);
}

tc_status_t tc_win_destroy(tc_win_t *win)
{
    tc_api_win_t *w;
    tc_status_t st = tc_api_win_get(win, "tc_win_destroy", &w);
    if (st != TC_OK)
        return st;
    st = tc_rt_win_destroy(w->rt);
    if (st != TC_OK)
        tc_error_prefix("tc_win_destroy: ");
    tc_api_win_retire(w);
    return st;
}

tc_status_t tc_win_shared_query(tc_win_t *win, int peer, void **ptr_p)
{
    static const char fn[] = "tc_win_shared_query";
    tc_api_win_t *w;
    tc_status_t st = tc_api_win_get(win, fn, &w);
    if (st != TC_OK)
        return st;
    if (!ptr_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: ptr_p is NULL", fn);
    if ((st = tc_rt_win_shared_query(w->rt, peer, ptr_p)) != TC_OK)
        tc_error_prefix("%s: ", fn);
    return st;
}

tc_status_t tc_win_size(tc_win_t *win, int peer, size_t *bytes_p)
{
    static const char fn[] = "tc_win_size";
    tc_api_win_t *w;
    tc_status_t st = tc_api_win_get(win, fn, &w);
    if (st != TC_OK)
        return st;
    if (!bytes_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: bytes_p is NULL", fn);
    if ((st = tc_rt_win_size(w->rt, peer, bytes_p)) != TC_OK)
        tc_error_prefix("%s: ", fn);
    return st;
}

/* An operation with a work object, or options of the wrong size (the error): out of line, so
 * that the inlined path below keeps a small frame. */
static __attribute__((noinline)) tc_status_t win_op_work(tc_api_win_t *w, const char *fn,
                                                         tc_rt_win_op_t *op,
                                                         const tc_op_opts_t *opts,
                                                         tc_work_t **work_p)
{
    int flags;
    tc_status_t st = tc_api_op_opts(opts, fn, NULL, NULL, &op->timeout_ms, &flags, work_p);
    if (st != TC_OK)
        return st;
    tc_api_work_t *work = NULL;
    if (work_p && (st = tc_api_work_new(fn, &work)) != TC_OK)
        return st;
    tc_rt_work_t *rt = NULL;
    st = tc_rt_win_issue(w->rt, op, flags, work_p ? &rt : NULL);
    if (st != TC_OK)
        tc_error_prefix("tc_");
    if (rt) {
        work->rt = rt;
        *work_p = work->handle;
        work = NULL;
    }
    tc_api_work_drop(work);
    return st;
}

/* Inlined into each operation: a put's call chain is the window's whole latency. */
static inline __attribute__((always_inline)) tc_status_t win_op(tc_win_t *win, const char *fn,
                                                                tc_rt_win_op_t *op,
                                                                const tc_op_opts_t *opts,
                                                                tc_work_t **work_p)
{
    tc_api_win_t *w;
    tc_status_t st = tc_api_win_get(win, fn, &w);
    if (st != TC_OK)
        return st;
    if (work_p || (opts && opts->size < sizeof(*opts)))
        return win_op_work(w, fn, op, opts, work_p);
    /* no work object: of tc_api_op_opts' checks the size and the hints (a window operation
     * takes none) apply (async without work_p is fire-and-forget, completed by tc_win_flush),
     * so a small put goes straight to the runtime */
    if (opts && opts->hints && (st = tc_api_op_hints(opts->hints, fn, NULL, NULL)) != TC_OK)
        return st;
    op->timeout_ms = opts ? opts->timeout_ms : 0;
    st = tc_rt_win_issue(w->rt, op, opts && opts->async ? TC_RT_ASYNC : 0, NULL);
    if (st != TC_OK)
        tc_error_prefix("tc_");
    return st;
}

tc_status_t tc_win_put(tc_win_t *win, const void *src, size_t bytes, int peer, uint64_t offset,
                       const tc_op_opts_t *opts, tc_work_t **work_p)
{
    tc_rt_win_op_t op = {
        .kind = TC_RT_WIN_PUT, .buf = (void *)src, .bytes = bytes, .peer = peer, .offset = offset};
    return win_op(win, "tc_win_put", &op, opts, work_p);
}

tc_status_t tc_win_get(tc_win_t *win, void *dst, size_t bytes, int peer, uint64_t offset,
                       const tc_op_opts_t *opts, tc_work_t **work_p)
{
    tc_rt_win_op_t op = {
        .kind = TC_RT_WIN_GET, .buf = dst, .bytes = bytes, .peer = peer, .offset = offset};
    return win_op(win, "tc_win_get", &op, opts, work_p);
}

tc_status_t tc_win_put_signal(tc_win_t *win, const void *src, size_t bytes, int peer,
                              uint64_t offset, int slot, uint64_t value, tc_win_signal_op_t sop,
                              const tc_op_opts_t *opts, tc_work_t **work_p)
{
    tc_rt_win_op_t op = {.kind = TC_RT_WIN_PUT_SIGNAL,
                         .buf = (void *)src,
                         .bytes = bytes,
                         .peer = peer,
                         .offset = offset,
                         .slot = slot,
                         .value = value,
                         .sig_op = (int)sop};
    return win_op(win, "tc_win_put_signal", &op, opts, work_p);
}

tc_status_t tc_win_signal(tc_win_t *win, int peer, int slot, uint64_t value, tc_win_signal_op_t sop,
                          const tc_op_opts_t *opts, tc_work_t **work_p)
{
    tc_rt_win_op_t op = {
        .kind = TC_RT_WIN_SIGNAL, .peer = peer, .slot = slot, .value = value, .sig_op = (int)sop};
    return win_op(win, "tc_win_signal", &op, opts, work_p);
}

tc_status_t tc_win_wait_signal(tc_win_t *win, int slot, tc_win_cmp_t cmp, uint64_t value,
                               int64_t timeout_ms, uint64_t *seen_p)
{
    static const char fn[] = "tc_win_wait_signal";
    tc_api_win_t *w;
    tc_status_t st = tc_api_win_get(win, fn, &w);
    if (st != TC_OK)
        return st;
    uint64_t seen = 0;
    st = tc_rt_win_wait_signal(w->rt, slot, (int)cmp, value, timeout_ms, &seen);
    if (st != TC_OK)
        tc_error_prefix("tc_");
    if (seen_p)
        *seen_p = seen;
    return st;
}

tc_status_t tc_win_read_signal(tc_win_t *win, int slot, uint64_t *value_p)
{
    static const char fn[] = "tc_win_read_signal";
    tc_api_win_t *w;
    tc_status_t st = tc_api_win_get(win, fn, &w);
    if (st != TC_OK)
        return st;
    if (!value_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: value_p is NULL", fn);
    if ((st = tc_rt_win_read_signal(w->rt, slot, value_p)) != TC_OK)
        tc_error_prefix("tc_");
    return st;
}

tc_status_t tc_win_flush(tc_win_t *win, int peer, int64_t timeout_ms)
{
    static const char fn[] = "tc_win_flush";
    tc_api_win_t *w;
    tc_status_t st = tc_api_win_get(win, fn, &w);
    if (st != TC_OK)
        return st;
    if ((st = tc_rt_win_flush(w->rt, peer, timeout_ms)) != TC_OK)
        tc_error_prefix("tc_");
    return st;
}
