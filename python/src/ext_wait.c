/* tcomms._ext: waiting for a work asleep. tc_work_wait() spins, yields, then progresses the
 * world itself: right for a caller that wants its result at once, but a background thread
 * waiting that way (the torch backend's completion thread) takes the cores the training
 * computes on and moves the data the progress thread would move anyway. Here the waiter
 * sleeps on a semaphore the communicator's hook posts whenever one of its operations ends,
 * looking at its work after each post (and every 10 ms in any case). enable_wait_done sets it
 * up; without it wait_done is Work.wait. */
#include "ext.h" /* first: Python.h sets _GNU_SOURCE (sem_clockwait) */

#include <errno.h>
#include <time.h>

#define TC_PY_NAP_NS 10000000LL /* the longest sleep between two looks at the work */

static void done_hook(tc_comm_t *comm, const tc_op_info_t *info, int after, void *arg)
{
    tc_py_comm_t *self = arg;
    (void)comm;
    (void)info;
    if (after && atomic_load_explicit(&self->sleepers, memory_order_acquire) > 0)
        (void)sem_post(&self->done);
}

void tc_py_done_init(tc_py_comm_t *self)
{
    atomic_init(&self->sleepers, 0);
    self->hooked = 0;
}

/* enable_wait_done(): set up the semaphore and the hook (once). Only for communicators that
 * want wait_done: with a hook, each operation on the small-message path reads the clock. */
static PyObject *comm_enable_wait_done(tc_py_comm_t *self, PyObject *unused)
{
    if (!self->comm)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");
    if (self->hooked)
        Py_RETURN_NONE;
    if (sem_init(&self->done, 0, 0) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    tc_status_t st;
    TC_PY_NOGIL(st, tc_comm_add_hook(self->comm, done_hook, self));
    if (st != TC_OK) {
        sem_destroy(&self->done);
        return tc_py_raise(st, NULL);
    }
    self->hooked = 1;
    Py_RETURN_NONE;
}

void tc_py_done_fini(tc_py_comm_t *self)
{
    if (self->hooked)
        sem_destroy(&self->done);
    self->hooked = 0;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Until @p work finished or @p timeout_ms (< 0: none but the operation's own) ran out; its
 * result in *st_p; 1 when finished. Called without the GIL. */
static int sleep_until_done(tc_py_comm_t *self, tc_work_t *work, long long timeout_ms,
                            tc_status_t *st_p)
{
    long long end = timeout_ms < 0 ? -1 : now_ns() + timeout_ms * 1000000LL;
    int done = 0;
    atomic_fetch_add_explicit(&self->sleepers, 1, memory_order_acq_rel);
    for (;;) {
        *st_p = tc_work_test(work, &done); /* one progress pass; deadlines are checked */
        if (done)
            break;
        long long now = now_ns(), nap = TC_PY_NAP_NS;
        if (end >= 0 && now >= end)
            break;
        if (end >= 0 && end - now < nap)
            nap = end - now;
        long long at = now + nap;
        struct timespec ts = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL};
        while (sem_clockwait(&self->done, CLOCK_MONOTONIC, &ts) != 0 && errno == EINTR)
            ;
    }
    atomic_fetch_sub_explicit(&self->sleepers, 1, memory_order_acq_rel);
    return done;
}

/* wait_done(work, timeout_ms=-1) -> as Work.wait (True; False when @p timeout_ms ran out
 * first; raises the operation's error), asleep while it runs. */
static PyObject *comm_wait_done(tc_py_comm_t *self, PyObject *args)
{
    tc_py_work_t *w;
    long long timeout_ms = -1;
    if (!PyArg_ParseTuple(args, "O!|L", &tc_py_work_type, &w, &timeout_ms))
        return NULL;
    if (!w->work)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the work was released");
    if (!self->comm || !self->hooked)
        return PyObject_CallMethod((PyObject *)w, "wait", "L", timeout_ms);
    tc_status_t st;
    int done;
    PyThreadState *ts = PyEval_SaveThread();
    done = sleep_until_done(self, w->work, timeout_ms, &st);
    PyEval_RestoreThread(ts);
    if (!done)
        Py_RETURN_FALSE;
    if (st == TC_OK)
        Py_RETURN_TRUE;
    const char *text = tc_work_error(w->work);
    return tc_py_raise(st, text && *text ? text : NULL);
}

PyMethodDef tc_py_comm_wait_ops[] = {
    {"enable_wait_done", (PyCFunction)comm_enable_wait_done, METH_NOARGS,
     "enable_wait_done(): set up wait_done (a hook on the communicator)"},
    {"wait_done", (PyCFunction)comm_wait_done, METH_VARARGS,
     "wait_done(work, timeout_ms=-1) -> bool: Work.wait asleep"},
    {NULL, NULL, 0, NULL}};
