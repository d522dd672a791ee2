/* tcomms._ext: waiting for a work asleep. tc_work_wait() spins, yields, then progresses the
 * world itself: right for a caller that wants its result at once, but a background thread
 * waiting that way (the torch backend's completion thread) takes the cores the training
 * computes on and moves the data the progress thread would move anyway. Here the waiter
 * sleeps on a semaphore the communicator's hook posts whenever one of its operations ends,
 * looking at its works after each post (and every 10 ms in any case), and returns as soon as
 * any one of them ended: a receive that waits for a later send holds back nothing issued
 * after it. enable_wait_done sets it up. */
#include "ext.h" /* first: Python.h sets _GNU_SOURCE (sem_clockwait) */

#include <errno.h>
#include <time.h>

#define TC_PY_NAP_NS 10000000LL /* the longest sleep between two looks at the works */

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
    atomic_init(&self->closing, 0);
    self->hooked = 0;
}

void tc_py_done_close(tc_py_comm_t *self)
{
    atomic_store(&self->closing, 1); /* seq_cst, as the waiters' count and look */
    while (self->hooked && atomic_load(&self->sleepers) > 0) {
        (void)sem_post(&self->done);
        struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
        nanosleep(&ms, NULL);
    }
}

/* enable_wait_done(): set up the semaphore and the hook (once). Only for communicators that
 * want wait_any: with a hook, each operation on the small-message path reads the clock. */
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

/* Post done with no sleeper check: a completion thread told of new work wakes at once. */
static PyObject *comm_wake(tc_py_comm_t *self, PyObject *unused)
{
    (void)unused;
    if (self->hooked)
        (void)sem_post(&self->done);
    Py_RETURN_NONE;
}

/* Which of @p works (n) ended, as flags in @p ended; asleep until one has, the semaphore is
 * posted, or @p timeout_ms (< 0: none) ran out. The count of ended works; -1 when the
 * communicator is being destroyed (tc_py_done_close). Without the GIL. */
static int sleep_until_any(tc_py_comm_t *self, tc_work_t **works, char *ended, Py_ssize_t n,
                           long long timeout_ms)
{
    long long end = timeout_ms < 0 ? -1 : now_ns() + timeout_ms * 1000000LL;
    int count = 0, woken = 0;
    atomic_fetch_add(&self->sleepers, 1);
    for (;;) {
        if (atomic_load(&self->closing)) {
            count = -1;
            break;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            int done = 0;
            (void)tc_work_test(works[i], &done); /* an error ends the work: done says so */
            ended[i] = (char)done;
            count += done;
        }
        long long now = now_ns(), nap = TC_PY_NAP_NS;
        if (count > 0 || woken || n == 0 || (end >= 0 && now >= end))
            break;
        if (end >= 0 && end - now < nap)
            nap = end - now;
        long long at = now + nap;
        struct timespec ts = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL};
        int rc;
        while ((rc = sem_clockwait(&self->done, CLOCK_MONOTONIC, &ts)) != 0 && errno == EINTR)
            ;
        /* Posted: an operation ended, or wake() was called (the caller has more to look at).
         * One more look, then back to the caller; the posts that piled up meanwhile are
         * covered by that look and the caller's. */
        woken = rc == 0;
        while (woken && sem_trywait(&self->done) == 0)
            ;
    }
    atomic_fetch_sub(&self->sleepers, 1);
    return count;
}

/* wait_any(works, timeout_ms=-1) -> [indices of the works that ended], asleep until one has,
 * an operation of the communicator ended or wake() was called, or @p timeout_ms ran out (then
 * possibly empty: look again). Errors stay for Work.wait. */
static PyObject *comm_wait_any(tc_py_comm_t *self, PyObject *args)
{
    PyObject *seq;
    long long timeout_ms = -1;
    if (!PyArg_ParseTuple(args, "O|L", &seq, &timeout_ms))
        return NULL;
    if (!self->comm)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");
    if (!self->hooked)
        return tc_py_raise(TC_ERR_INVALID_STATE, "wait_any needs enable_wait_done() first");
    /* a tuple of its own holds every work alive while the GIL is released (a list passed in
     * could lose an item to another thread meanwhile) */
    PyObject *fast = PySequence_Tuple(seq);
    if (!fast)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(fast);
    tc_work_t **works = PyMem_Malloc(sizeof(*works) * (size_t)(n ? n : 1));
    char *ended = PyMem_Malloc((size_t)(n ? n : 1));
    PyObject *out = NULL;
    if (!works || !ended) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(fast, i);
        if (!PyObject_TypeCheck(o, &tc_py_work_type) || !((tc_py_work_t *)o)->work) {
            PyErr_Format(PyExc_TypeError, "wait_any: item %zd is not a live work", i);
            goto done;
        }
        works[i] = ((tc_py_work_t *)o)->work;
    }
    PyThreadState *ts = PyEval_SaveThread();
    int count = sleep_until_any(self, works, ended, n, timeout_ms);
    PyEval_RestoreThread(ts);
    if (count < 0) {
        tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");
        goto done;
    }
    out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        if (!ended[i])
            continue;
        PyObject *idx = PyLong_FromSsize_t(i);
        if (!idx || PyList_Append(out, idx) != 0)
            Py_CLEAR(out);
        Py_XDECREF(idx);
    }
done:
    PyMem_Free(works);
    PyMem_Free(ended);
    Py_DECREF(fast);
    return out;
}

PyMethodDef tc_py_comm_wait_ops[] = {
    {"enable_wait_done", (PyCFunction)comm_enable_wait_done, METH_NOARGS,
     "enable_wait_done(): set up wait_any (a hook on the communicator)"},
    {"wait_any", (PyCFunction)comm_wait_any, METH_VARARGS,
     "wait_any(works, timeout_ms=-1) -> [indices ended], asleep until one has"},
    {"wake", (PyCFunction)comm_wake, METH_NOARGS, "wake(): end a wait_any at once"},
    {NULL, NULL, 0, NULL}};
