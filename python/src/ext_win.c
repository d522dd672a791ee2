/* tcomms._ext: one-sided windows (tc_win_*). Buffers arrive as addresses
 * (ints) and byte counts; the Python layer (tcomms/window.py) checks them,
 * turns element offsets into bytes and keeps the memory alive. Every call
 * into tcomms runs without the GIL. */
#include "ext.h"

typedef struct {
    PyObject_HEAD tc_win_t *win;
    PyObject *comm; /* the _ext.Comm the window was made on */
    PyObject *keep; /* the memory's owner, alive until the window is destroyed */
} tc_py_win_t;

#define P(x) ((void *)(uintptr_t)(x))
#define NOGIL(call) TC_PY_NOGIL(st, call)
#define WIN_LIVE(self)                                                                             \
    do {                                                                                           \
        if (!(self)->win)                                                                          \
            return tc_py_raise(TC_ERR_INVALID_STATE, "the window was destroyed");                  \
    } while (0)

static void win_dealloc(tc_py_win_t *self)
{
    if (self->win) {
        /* Not destroyed: tc_win_destroy is collective, so it cannot run from
         * a garbage collection. Other ranks may still write into the memory:
         * keep it (and the window) for the life of the process. tcomms.Comm
         * holds its windows, so this happens only when the package is
         * bypassed. */
        PyErr_WarnEx(PyExc_ResourceWarning,
                     "tcomms: a window was never destroyed; its memory stays allocated", 1);
        self->win = NULL;
        self->keep = NULL;
    }
    Py_XDECREF(self->keep);
    Py_XDECREF(self->comm);
    PyObject_Free(self);
}

/* destroy() (collective; after the communicator's destruction, local). */
static PyObject *win_destroy(tc_py_win_t *self, PyObject *unused)
{
    if (!self->win)
        Py_RETURN_NONE;
    tc_win_t *w = self->win;
    tc_status_t st;
    self->win = NULL;
    NOGIL(tc_win_destroy(w));
    Py_CLEAR(self->keep); /* the window is freed whatever the status */
    Py_CLEAR(self->comm);
    return st == TC_OK ? Py_NewRef(Py_None) : tc_py_raise(st, NULL);
}

/* put(addr, nbytes, peer, offset, timeout_ms, async, keep); get alike. */
static PyObject *win_move(tc_py_win_t *self, PyObject *args, int is_get)
{
    unsigned long long addr, offset;
    Py_ssize_t nbytes;
    int peer, async;
    long long timeout_ms;
    PyObject *keep;
    if (!PyArg_ParseTuple(args, "KniKLpO", &addr, &nbytes, &peer, &offset, &timeout_ms, &async,
                          &keep))
        return NULL;
    WIN_LIVE(self);
    tc_op_opts_t o;
    tc_work_t *work = NULL;
    tc_status_t st;
    tc_py_op_opts(&o, timeout_ms, NULL, async);
    if (is_get)
        NOGIL(
            tc_win_get(self->win, P(addr), (size_t)nbytes, peer, offset, &o, async ? &work : NULL));
    else
        NOGIL(
            tc_win_put(self->win, P(addr), (size_t)nbytes, peer, offset, &o, async ? &work : NULL));
    return tc_py_op_result(st, work, keep);
}

static PyObject *win_put(tc_py_win_t *self, PyObject *args)
{
    return win_move(self, args, 0);
}

static PyObject *win_get(tc_py_win_t *self, PyObject *args)
{
    return win_move(self, args, 1);
}

/* put_signal(addr, nbytes, peer, offset, slot, value, op, timeout_ms, async, keep) */
static PyObject *win_put_signal(tc_py_win_t *self, PyObject *args)
{
    unsigned long long addr, offset, value;
    Py_ssize_t nbytes;
    int peer, slot, op, async;
    long long timeout_ms;
    PyObject *keep;
    if (!PyArg_ParseTuple(args, "KniKiKiLpO", &addr, &nbytes, &peer, &offset, &slot, &value, &op,
                          &timeout_ms, &async, &keep))
        return NULL;
    WIN_LIVE(self);
    tc_op_opts_t o;
    tc_work_t *work = NULL;
    tc_status_t st;
    tc_py_op_opts(&o, timeout_ms, NULL, async);
    NOGIL(tc_win_put_signal(self->win, P(addr), (size_t)nbytes, peer, offset, slot, value,
                            (tc_win_signal_op_t)op, &o, async ? &work : NULL));
    return tc_py_op_result(st, work, keep);
}

/* signal(peer, slot, value, op, timeout_ms, async) */
static PyObject *win_signal(tc_py_win_t *self, PyObject *args)
{
    unsigned long long value;
    int peer, slot, op, async;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "iiKiLp", &peer, &slot, &value, &op, &timeout_ms, &async))
        return NULL;
    WIN_LIVE(self);
    tc_op_opts_t o;
    tc_work_t *work = NULL;
    tc_status_t st;
    tc_py_op_opts(&o, timeout_ms, NULL, async);
    NOGIL(tc_win_signal(self->win, peer, slot, value, (tc_win_signal_op_t)op, &o,
                        async ? &work : NULL));
    return tc_py_op_result(st, work, Py_None);
}

/* wait_signal(slot, cmp, value, timeout_ms) -> the slot's value that satisfied it */
static PyObject *win_wait_signal(tc_py_win_t *self, PyObject *args)
{
    unsigned long long value;
    int slot, cmp;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "iiKL", &slot, &cmp, &value, &timeout_ms))
        return NULL;
    WIN_LIVE(self);
    uint64_t seen = 0;
    tc_status_t st;
    NOGIL(tc_win_wait_signal(self->win, slot, (tc_win_cmp_t)cmp, value, timeout_ms, &seen));
    return st == TC_OK ? PyLong_FromUnsignedLongLong(seen) : tc_py_raise(st, NULL);
}

/* read_signal(slot) -> int */
static PyObject *win_read_signal(tc_py_win_t *self, PyObject *args)
{
    int slot;
    if (!PyArg_ParseTuple(args, "i", &slot))
        return NULL;
    WIN_LIVE(self);
    uint64_t v = 0;
    tc_status_t st;
    NOGIL(tc_win_read_signal(self->win, slot, &v));
    return st == TC_OK ? PyLong_FromUnsignedLongLong(v) : tc_py_raise(st, NULL);
}

/* flush(peer, timeout_ms); peer -1: every rank */
static PyObject *win_flush(tc_py_win_t *self, PyObject *args)
{
    int peer;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "iL", &peer, &timeout_ms))
        return NULL;
    WIN_LIVE(self);
    tc_status_t st;
    NOGIL(tc_win_flush(self->win, peer, timeout_ms));
    return st == TC_OK ? Py_NewRef(Py_None) : tc_py_raise(st, NULL);
}

/* size(peer) -> bytes of rank peer's window (-1: this rank's) */
static PyObject *win_size(tc_py_win_t *self, PyObject *args)
{
    int peer;
    if (!PyArg_ParseTuple(args, "i", &peer))
        return NULL;
    WIN_LIVE(self);
    size_t n = 0;
    tc_status_t st = tc_win_size(self->win, peer, &n);
    return st == TC_OK ? PyLong_FromSize_t(n) : tc_py_raise(st, NULL);
}

/* shared_query(peer) -> the address peer's window can be loaded and stored through */
static PyObject *win_shared_query(tc_py_win_t *self, PyObject *args)
{
    int peer;
    if (!PyArg_ParseTuple(args, "i", &peer))
        return NULL;
    WIN_LIVE(self);
    void *p = NULL;
    tc_status_t st = tc_win_shared_query(self->win, peer, &p);
    return st == TC_OK ? PyLong_FromVoidPtr(p) : tc_py_raise(st, NULL);
}

/* pages(peer) -> Pages: rank peer's window (this rank's too) mapped again, for views */
static PyObject *win_pages(tc_py_win_t *self, PyObject *args)
{
    int peer;
    if (!PyArg_ParseTuple(args, "i", &peer))
        return NULL;
    WIN_LIVE(self);
    void *p = NULL;
    size_t n = 0;
    tc_status_t st = tc_win_shared_query(self->win, peer, &p);
    if (st == TC_OK)
        st = tc_win_size(self->win, peer, &n);
    return st == TC_OK ? tc_py_pages_new(p, n) : tc_py_raise(st, NULL);
}

static PyMethodDef win_methods[] = {
    {"destroy", (PyCFunction)win_destroy, METH_NOARGS, "tc_win_destroy (collective)"},
    {"put", (PyCFunction)win_put, METH_VARARGS, "tc_win_put"},
    {"get", (PyCFunction)win_get, METH_VARARGS, "tc_win_get"},
    {"put_signal", (PyCFunction)win_put_signal, METH_VARARGS, "tc_win_put_signal"},
    {"signal", (PyCFunction)win_signal, METH_VARARGS, "tc_win_signal"},
    {"wait_signal", (PyCFunction)win_wait_signal, METH_VARARGS, "tc_win_wait_signal"},
    {"read_signal", (PyCFunction)win_read_signal, METH_VARARGS, "tc_win_read_signal"},
    {"flush", (PyCFunction)win_flush, METH_VARARGS, "tc_win_flush"},
    {"size", (PyCFunction)win_size, METH_VARARGS, "tc_win_size"},
    {"shared_query", (PyCFunction)win_shared_query, METH_VARARGS, "tc_win_shared_query"},
    {"pages", (PyCFunction)win_pages, METH_VARARGS, "pages(peer) -> Pages (ext_pages.c)"},
    {NULL, NULL, 0, NULL}};

PyTypeObject tc_py_win_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tcomms._ext.Window",
    .tp_basicsize = sizeof(tc_py_win_t),
    .tp_dealloc = (destructor)win_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tcomms window (see tcomms.Window for the documented interface).",
    .tp_methods = win_methods,
};

static PyObject *win_wrap(tc_win_t *win, PyObject *comm, PyObject *keep)
{
    tc_py_win_t *w = PyObject_New(tc_py_win_t, &tc_py_win_type);
    if (!w) {
        PyThreadState *ts = PyEval_SaveThread();
        (void)tc_win_destroy(win);
        PyEval_RestoreThread(ts);
        return NULL;
    }
    w->win = win;
    w->comm = Py_NewRef(comm);
    w->keep = Py_NewRef(keep);
    return (PyObject *)w;
}

/* Comm.win_create(addr, nbytes, timeout_ms, keep) -> Window (collective) */
static PyObject *comm_win_create(tc_py_comm_t *self, PyObject *args)
{
    unsigned long long addr;
    Py_ssize_t nbytes;
    long long timeout_ms;
    PyObject *keep;
    if (!PyArg_ParseTuple(args, "KnLO", &addr, &nbytes, &timeout_ms, &keep))
        return NULL;
    if (!self->comm)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");
    tc_op_opts_t o;
    tc_py_op_opts(&o, timeout_ms, NULL, 0);
    tc_win_t *win = NULL;
    tc_status_t st;
    NOGIL(tc_win_create(self->comm, P(addr), (size_t)nbytes, &o, &win));
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    return win_wrap(win, (PyObject *)self, keep);
}

/* Comm.win_allocate(nbytes, timeout_ms) -> (Window, base address) (collective) */
static PyObject *comm_win_allocate(tc_py_comm_t *self, PyObject *args)
{
    Py_ssize_t nbytes;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "nL", &nbytes, &timeout_ms))
        return NULL;
    if (!self->comm)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");
    tc_op_opts_t o;
    tc_py_op_opts(&o, timeout_ms, NULL, 0);
    tc_win_t *win = NULL;
    void *base = NULL;
    tc_status_t st;
    NOGIL(tc_win_allocate(self->comm, (size_t)nbytes, &o, &base, &win));
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    PyObject *w = win_wrap(win, (PyObject *)self, Py_None);
    return w ? Py_BuildValue("(NK)", w, (unsigned long long)(uintptr_t)base) : NULL;
}

PyMethodDef tc_py_comm_win_ops[] = {
    {"win_create", (PyCFunction)comm_win_create, METH_VARARGS, "tc_win_create"},
    {"win_allocate", (PyCFunction)comm_win_allocate, METH_VARARGS, "tc_win_allocate"},
    {NULL, NULL, 0, NULL}};
