/* Internal: what public communicator and work handles hold. */
#ifndef TC_API_IMPL_H
#define TC_API_IMPL_H

#include "handles.h"
#include "tcomms/base/config.h"
#include "tcomms/runtime/comm.h"
#include "tcomms/runtime/win.h"
#include "tcomms/tcomms.h"

/* A user's hook, called through the runtime's. */
typedef struct tc_api_hook {
    tc_comm_t *comm; /* the handle the application holds */
    tc_hook_fn fn;
    void *arg;
} tc_api_hook_t;

/* What a communicator handle stands for (handles.c: the handle is an opaque
 * value, decoded at every entry point, never this object's address). */
typedef struct tc_api_comm {
    tc_comm_t *handle; /* the value the application holds */
    tc_rt_comm_t *rt;
    tc_api_hook_t hooks[TC_RT_HOOKS];
    int nhooks;
    /* Between tc_batch_begin and tc_batch_end: the mark of the thread that began the batch
     * (tc_api_thread_mark; atomic: other threads read it to refuse their calls), else NULL */
    void *batch_owner;
    tc_rt_p2p_t *batch; /* the sends and receives recorded (by the owner only) */
    int batch_n, batch_cap;
} tc_api_comm_t;

typedef struct tc_api_work {
    tc_work_t *handle; /* the value the application holds */
    tc_rt_work_t *rt;
} tc_api_work_t;

typedef struct tc_api_win {
    tc_win_t *handle; /* the value the application holds */
    tc_rt_win_t *rt;
} tc_api_win_t;

/* handles.c: a new object with its handle (TC_ERR_NO_MEMORY, or
 * TC_ERR_NO_RESOURCE past 2^22 alive); retire frees the object and makes its
 * handle stale for good. */
TC_MUST_USE tc_status_t tc_api_comm_new(const char *fn, tc_api_comm_t **c_p);
void tc_api_comm_retire(tc_api_comm_t *c);
TC_MUST_USE tc_status_t tc_api_work_new(const char *fn, tc_api_work_t **w_p);
void tc_api_work_drop(tc_api_work_t *w); /* NULL: nothing */

TC_MUST_USE tc_status_t tc_api_win_new(const char *fn, tc_api_win_t **w_p);
void tc_api_win_retire(tc_api_win_t *w); /* NULL: nothing */

/* Decode a handle (handles.h: TC_ERR_INVALID_ARG for NULL, TC_ERR_INVALID_STATE for a
 * destroyed / freed one ("was destroyed", "was freed") or a value that is no handle of that
 * kind; the detail names @p fn; the object is NULL then). Inline: every entry point runs one. */
TC_MUST_USE static inline tc_status_t tc_api_comm_get(const tc_comm_t *comm, const char *fn,
                                                      tc_api_comm_t **c_p)
{
    tc_status_t st;
    *c_p = tc_api_handle_obj(TC_API_H_COMM, comm, fn, &st);
    return st;
}

TC_MUST_USE static inline tc_status_t tc_api_work_get(const tc_work_t *work, const char *fn,
                                                      tc_api_work_t **w_p)
{
    tc_status_t st;
    *w_p = tc_api_handle_obj(TC_API_H_WORK, work, fn, &st);
    return st;
}

TC_MUST_USE static inline tc_status_t tc_api_win_get(const tc_win_t *win, const char *fn,
                                                     tc_api_win_t **w_p)
{
    tc_status_t st;
    *w_p = tc_api_handle_obj(TC_API_H_WIN, win, fn, &st);
    return st;
}

/* The calling thread's mark: a distinct address per thread. */
void *tc_api_thread_mark(void);
/* TC_ERR_INVALID_STATE for @p fn: another thread is recording a batch on @p c. */
TC_MUST_USE tc_status_t tc_api_batch_other(const char *fn, const tc_api_comm_t *c);
/* @p c's batch owner now (NULL: none). */
static inline void *tc_api_batch_owner(const tc_api_comm_t *c)
{
    return __atomic_load_n(&c->batch_owner, __ATOMIC_ACQUIRE);
}
static inline void tc_api_batch_close(tc_api_comm_t *c)
{
    __atomic_store_n(&c->batch_owner, NULL, __ATOMIC_RELEASE);
}
/* tc_api_comm_get, and that no batch is being recorded; sets the detail naming @p fn. */
TC_MUST_USE tc_status_t tc_api_comm_get_not_batching(const tc_comm_t *comm, const char *fn,
                                                     tc_api_comm_t **c_p);

/* Whether @p opts carries hints to parse. */
static inline int tc_api_opts_have_hints(const tc_op_opts_t *opts)
{
    return opts && opts->size >= sizeof(*opts) && opts->hints;
}

/* opts.c: parse @p text into @p hints (NULL: parsed, checked and dropped) and refuse every key
 * but @p accept (NULL: the call takes no hints, every key is refused); TC_ERR_CONFIG for bad
 * syntax, TC_ERR_INVALID_ARG naming an unknown key. */
TC_MUST_USE tc_status_t tc_api_op_hints(const char *text, const char *fn, tc_hints_t *hints,
                                        const char *accept);

/* Parse per-operation options into hints (keys other than @p accept refused), a timeout and
 * the runtime flags; checks that asynchronous calls have somewhere to put their work. @p hints
 * may be NULL when tc_api_opts_have_hints() says there are none. Inline: every call of the API
 * runs it, most with no options or only a timeout. */
TC_MUST_USE static inline tc_status_t tc_api_op_opts(const tc_op_opts_t *opts, const char *fn,
                                                     tc_hints_t *hints, const char *accept,
                                                     int64_t *timeout_ms_p, int *flags_p,
                                                     tc_work_t **work_p)
{
    *timeout_ms_p = 0;
    *flags_p = 0;
    if (work_p)
        *work_p = NULL;
    if (!opts)
        return TC_OK;
    if (opts->size < sizeof(tc_op_opts_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: opts->size is %u, expected %zu (initialise "
                            "with TC_OP_OPTS_INIT)",
                            fn, opts->size, sizeof(tc_op_opts_t));
    if (opts->async && !work_p)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: opts->async is set but work_p is NULL "
                            "(an asynchronous operation needs a work object)",
                            fn);
    *timeout_ms_p = opts->timeout_ms;
    *flags_p = opts->async ? TC_RT_ASYNC : 0;
    return opts->hints ? tc_api_op_hints(opts->hints, fn, hints, accept) : TC_OK;
}

/* vcheck.c: the non-empty blocks (@p displs[q], @p counts[q]) of @p size ranks,
 * all in range, do not overlap in @p bufname; else TC_ERR_INVALID_ARG naming
 * @p fn, @p dname, the two ranks and their ranges. */
TC_MUST_USE tc_status_t tc_api_v_disjoint(const char *fn, int size, const size_t *counts,
                                          const char *dname, const size_t *displs,
                                          const char *bufname);

#endif
