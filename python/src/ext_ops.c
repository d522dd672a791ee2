/* tcomms._ext: the operations of a communicator and the work object. Each
 * operation takes buffer addresses (ints), counts in elements, a type code,
 * then (timeout_ms, hints, async, keep): keep is what must stay alive until
 * the operation completes, held by the returned Work. */
#include <string.h>

#include "ext.h"

/* ---- work ---- */

static void work_dealloc(tc_py_work_t *self)
{
    if (self->work) {
        tc_work_t *w = self->work;
        PyThreadState *ts = PyEval_SaveThread();
        tc_work_free(w);
        PyEval_RestoreThread(ts);
    }
    Py_XDECREF(self->keep);
    PyObject_Free(self);
}

/* wait(timeout_ms=-1) -> True when completed, False when @p timeout_ms ran out
 * first (the operation goes on); raises the operation's error. */
static PyObject *work_wait(tc_py_work_t *self, PyObject *args)
{
    long long timeout_ms = -1;
    if (!PyArg_ParseTuple(args, "|L", &timeout_ms))
        return NULL;
    if (!self->work)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the work was released");
    tc_status_t st;
    tc_work_state_t state = TC_WORK_COMPLETED;
    PyThreadState *ts = PyEval_SaveThread();
    st = tc_work_wait(self->work, timeout_ms);
    if (st == TC_ERR_TIMEOUT && timeout_ms >= 0)
        (void)tc_work_status(self->work, &state, NULL);
    PyEval_RestoreThread(ts);
    if (st == TC_OK)
        Py_RETURN_TRUE;
    if (state == TC_WORK_IN_PROGRESS)
        Py_RETURN_FALSE;
    const char *text = tc_work_error(self->work);
    return tc_py_raise(st, text && *text ? text : NULL);
}

static PyObject *work_is_completed(tc_py_work_t *self, PyObject *unused)
{
    if (!self->work)
        Py_RETURN_TRUE;
    int done = 0;
    tc_status_t st;
    TC_PY_NOGIL(st, tc_work_test(self->work, &done));
    (void)st; /* an error completes the work: done says so */
    return PyBool_FromLong(done);
}

/* source() -> the rank a completed receive from any source took its message from. */
static PyObject *work_source(tc_py_work_t *self, PyObject *unused)
{
    (void)unused;
    if (!self->work)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the work was released");
    int src = -1;
    tc_status_t st = tc_work_source(self->work, &src);
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    return PyLong_FromLong(src);
}

static PyMethodDef work_methods[] = {
    {"wait", (PyCFunction)work_wait, METH_VARARGS, "wait(timeout_ms=-1) -> bool"},
    {"is_completed", (PyCFunction)work_is_completed, METH_NOARGS, "is_completed() -> bool"},
    {"source", (PyCFunction)work_source, METH_NOARGS, "source() -> int"},
    {NULL, NULL, 0, NULL}};

PyTypeObject tc_py_work_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tcomms._ext.Work",
    .tp_basicsize = sizeof(tc_py_work_t),
    .tp_dealloc = (destructor)work_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An asynchronous tcomms operation.",
    .tp_methods = work_methods,
};

int tc_py_op_opts(tc_op_opts_t *o, long long timeout_ms, const char *hints, int async)
{
    *o = (tc_op_opts_t)TC_OP_OPTS_INIT;
    o->timeout_ms = timeout_ms;
    o->hints = hints;
    o->async = async;
    return 0;
}

PyObject *tc_py_op_result(tc_status_t st, tc_work_t *work, PyObject *keep)
{
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    if (!work)
        Py_RETURN_NONE;
    tc_py_work_t *w = PyObject_New(tc_py_work_t, &tc_py_work_type);
    if (!w) {
        tc_work_free(work);
        return NULL;
    }
    w->work = work;
    w->keep = Py_NewRef(keep);
    return (PyObject *)w;
}

/* ---- size_t arrays from Python sequences (counts, displacements) ---- */

typedef struct {
    size_t *v; /* NULL when the argument is None */
    size_t small[64];
} sizes_t;

static int sizes_get(PyObject *seq, sizes_t *s)
{
    s->v = NULL;
    if (seq == Py_None)
        return 0;
    PyObject *fast = PySequence_Fast(seq, "counts and displacements must be sequences of ints");
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    s->v = n <= 64 ? s->small : PyMem_Malloc(sizeof(size_t) * (size_t)n);
    for (Py_ssize_t i = 0; s->v && i < n; i++)
        s->v[i] = PyLong_AsSize_t(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    if (!s->v)
        PyErr_NoMemory();
    return PyErr_Occurred() ? -1 : 0;
}

static void sizes_free(sizes_t *s)
{
    if (s->v && s->v != s->small)
        PyMem_Free(s->v);
}

#define P(x) ((void *)(uintptr_t)(x))
#define TAIL "LzpO" /* timeout_ms, hints, async, keep */
#define TAIL_VARS                                                                                  \
    long long timeout_ms;                                                                          \
    const char *hints;                                                                             \
    int async;                                                                                     \
    PyObject *keep;                                                                                \
    tc_op_opts_t o;                                                                                \
    tc_work_t *work = NULL;                                                                        \
    tc_status_t st = TC_OK
#define TAIL_ARGS &timeout_ms, &hints, &async, &keep
#define LIVE()                                                                                     \
    do {                                                                                           \
        if (!self->comm)                                                                           \
            return tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");            \
        tc_py_op_opts(&o, timeout_ms, hints, async);                                               \
    } while (0)
/* Run @p call without the GIL; async operations return a Work, others None. */
#define RUN(call)                                                                                  \
    do {                                                                                           \
        TC_PY_NOGIL(st, call);                                                                     \
    } while (0)
#define WP (async ? &work : NULL)

/* all_reduce(send, recv, count, dtype, op, ...); reduce_scatter alike (count: per rank). */
static PyObject *op_all_reduce(tc_py_comm_t *self, PyObject *args)
{
    unsigned long long s, r;
    Py_ssize_t n;
    int dt, op;
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "KKnii" TAIL, &s, &r, &n, &dt, &op, TAIL_ARGS))
        return NULL;
    LIVE();
    RUN(tc_all_reduce(self->comm, P(s), P(r), (size_t)n, dt, op, &o, WP));
    return tc_py_op_result(st, work, keep);
}

static PyObject *op_reduce_scatter(tc_py_comm_t *self, PyObject *args)
{
    unsigned long long s, r;
    Py_ssize_t n;
    int dt, op;
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "KKnii" TAIL, &s, &r, &n, &dt, &op, TAIL_ARGS))
        return NULL;
    LIVE();
    RUN(tc_reduce_scatter(self->comm, P(s), P(r), (size_t)n, dt, op, &o, WP));
    return tc_py_op_result(st, work, keep);
}

/* reduce(send, recv, count, dtype, op, root, ...) */
static PyObject *op_reduce(tc_py_comm_t *self, PyObject *args)
{
    unsigned long long s, r;
    Py_ssize_t n;
    int dt, op, root;
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "KKniii" TAIL, &s, &r, &n, &dt, &op, &root, TAIL_ARGS))
        return NULL;
    LIVE();
    RUN(tc_reduce(self->comm, P(s), P(r), (size_t)n, dt, op, root, &o, WP));
    return tc_py_op_result(st, work, keep);
}

/* Rooted or plain (send, recv, count, dtype[, root]): all_gather, all_to_all,
 * gather, scatter share one shape; which is the method's closure. */
enum { K_ALL_GATHER, K_ALL_TO_ALL, K_GATHER, K_SCATTER };

static PyObject *op_move(tc_py_comm_t *self, PyObject *args, int kind)
{
    unsigned long long s, r;
    Py_ssize_t n;
    int dt, root = 0;
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "KKnii" TAIL, &s, &r, &n, &dt, &root, TAIL_ARGS))
        return NULL;
    LIVE();
    switch (kind) {
    case K_ALL_GATHER:
        RUN(tc_all_gather(self->comm, P(s), P(r), (size_t)n, dt, &o, WP));
        break;
    case K_ALL_TO_ALL:
        RUN(tc_all_to_all(self->comm, P(s), P(r), (size_t)n, dt, &o, WP));
        break;
    case K_GATHER:
        RUN(tc_gather(self->comm, P(s), P(r), (size_t)n, dt, root, &o, WP));
        break;
    default:
        RUN(tc_scatter(self->comm, P(s), P(r), (size_t)n, dt, root, &o, WP));
        break;
    }
    return tc_py_op_result(st, work, keep);
}

static PyObject *op_all_gather(tc_py_comm_t *self, PyObject *a)
{
    return op_move(self, a, K_ALL_GATHER);
}
static PyObject *op_all_to_all(tc_py_comm_t *self, PyObject *a)
{
    return op_move(self, a, K_ALL_TO_ALL);
}
static PyObject *op_gather(tc_py_comm_t *self, PyObject *a)
{
    return op_move(self, a, K_GATHER);
}
static PyObject *op_scatter(tc_py_comm_t *self, PyObject *a)
{
    return op_move(self, a, K_SCATTER);
}

/* One buffer and a rank: broadcast (root), send and recv (peer). */
enum { K_BROADCAST, K_SEND, K_RECV };

static PyObject *op_one(tc_py_comm_t *self, PyObject *args, int kind)
{
    unsigned long long b;
    Py_ssize_t n;
    int dt, rank;
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "Knii" TAIL, &b, &n, &dt, &rank, TAIL_ARGS))
        return NULL;
    LIVE();
    /* inside a batch, send and recv take no options and no work */
    const tc_op_opts_t *op = async || timeout_ms > 0 || hints ? &o : NULL;
    switch (kind) {
    case K_BROADCAST:
        RUN(tc_broadcast(self->comm, P(b), (size_t)n, dt, rank, &o, WP));
        break;
    case K_SEND:
        RUN(tc_send(self->comm, P(b), (size_t)n, dt, rank, op, WP));
        break;
    default: /* from any source: a work even when blocking, which tells the source */
        RUN(tc_recv(self->comm, P(b), (size_t)n, dt, rank, op,
                    rank == TC_ANY_SOURCE ? &work : WP)); /* refused in a batch */
        break;
    }
    return tc_py_op_result(st, work, keep);
}

static PyObject *op_broadcast(tc_py_comm_t *self, PyObject *a)
{
    return op_one(self, a, K_BROADCAST);
}
static PyObject *op_send(tc_py_comm_t *self, PyObject *a)
{
    return op_one(self, a, K_SEND);
}
static PyObject *op_recv(tc_py_comm_t *self, PyObject *a)
{
    return op_one(self, a, K_RECV);
}

/* all_gather_v(send, sendcount, recv, recvcounts, displs|None, dtype, ...) */
static PyObject *op_all_gather_v(tc_py_comm_t *self, PyObject *args)
{
    unsigned long long s, r;
    Py_ssize_t n;
    PyObject *rc, *dp;
    int dt;
    sizes_t rcs, dps;
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "KnKOOi" TAIL, &s, &n, &r, &rc, &dp, &dt, TAIL_ARGS))
        return NULL;
    LIVE();
    if (sizes_get(rc, &rcs) != 0)
        return NULL;
    if (sizes_get(dp, &dps) != 0) {
        sizes_free(&rcs);
        return NULL;
    }
    RUN(tc_all_gather_v(self->comm, P(s), (size_t)n, P(r), rcs.v, dps.v, dt, &o, WP));
    sizes_free(&rcs);
    sizes_free(&dps);
    return tc_py_op_result(st, work, keep);
}

/* reduce_scatter_v(send, recv, recvcounts, displs|None, dtype, op, ...) */
static PyObject *op_reduce_scatter_v(tc_py_comm_t *self, PyObject *args)
{
    unsigned long long s, r;
    PyObject *rc, *dp;
    int dt, op;
    sizes_t rcs, dps;
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "KKOOii" TAIL, &s, &r, &rc, &dp, &dt, &op, TAIL_ARGS))
        return NULL;
    LIVE();
    if (sizes_get(rc, &rcs) != 0)
        return NULL;
    if (sizes_get(dp, &dps) != 0) {
        sizes_free(&rcs);
        return NULL;
    }
    RUN(tc_reduce_scatter_v(self->comm, P(s), P(r), rcs.v, dps.v, dt, op, &o, WP));
    sizes_free(&rcs);
    sizes_free(&dps);
    return tc_py_op_result(st, work, keep);
}

/* all_to_all_v(send, sendcounts, sdispls|None, recv, recvcounts, rdispls|None, dtype, ...) */
static PyObject *op_all_to_all_v(tc_py_comm_t *self, PyObject *args)
{
    unsigned long long s, r;
    PyObject *seqs[4];
    int dt;
    sizes_t v[4];
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, "KOOKOOi" TAIL, &s, &seqs[0], &seqs[1], &r, &seqs[2], &seqs[3], &dt,
                          TAIL_ARGS))
        return NULL;
    LIVE();
    int got = 0;
    while (got < 4 && sizes_get(seqs[got], &v[got]) == 0)
        got++;
    if (got == 4)
        RUN(tc_all_to_all_v(self->comm, P(s), v[0].v, v[1].v, P(r), v[2].v, v[3].v, dt, &o, WP));
    for (int i = 0; i < got; i++)
        sizes_free(&v[i]);
    return got == 4 ? tc_py_op_result(st, work, keep) : NULL;
}

/* barrier(...) */
static PyObject *op_barrier(tc_py_comm_t *self, PyObject *args)
{
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, TAIL, TAIL_ARGS))
        return NULL;
    LIVE();
    RUN(tc_barrier(self->comm, &o, WP));
    return tc_py_op_result(st, work, keep);
}

/* @p fn (tc_batch_begin or tc_batch_cancel) on the communicator: None, or its error. */
static PyObject *batch_call(tc_py_comm_t *self, tc_status_t (*fn)(tc_comm_t *))
{
    if (!self->comm)
        return tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");
    tc_status_t st;
    TC_PY_NOGIL(st, fn(self->comm));
    return st == TC_OK ? Py_NewRef(Py_None) : tc_py_raise(st, NULL);
}

static PyObject *op_batch_begin(tc_py_comm_t *self, PyObject *unused)
{
    return batch_call(self, tc_batch_begin);
}

/* batch_cancel(): drops what was recorded (nothing issued). */
static PyObject *op_batch_cancel(tc_py_comm_t *self, PyObject *unused)
{
    return batch_call(self, tc_batch_cancel);
}

/* batch_end(...): issues what was recorded. */
static PyObject *op_batch_end(tc_py_comm_t *self, PyObject *args)
{
    TAIL_VARS;
    if (!PyArg_ParseTuple(args, TAIL, TAIL_ARGS))
        return NULL;
    LIVE();
    RUN(tc_batch_end(self->comm, &o, WP));
    return tc_py_op_result(st, work, keep);
}

#define M(name, fn)                                                                                \
    {                                                                                              \
        name, (PyCFunction)fn, METH_VARARGS, NULL                                                  \
    }
PyMethodDef tc_py_comm_ops[] = {M("all_reduce", op_all_reduce),
                                M("reduce", op_reduce),
                                M("broadcast", op_broadcast),
                                M("all_gather", op_all_gather),
                                M("all_gather_v", op_all_gather_v),
                                M("reduce_scatter", op_reduce_scatter),
                                M("reduce_scatter_v", op_reduce_scatter_v),
                                M("all_to_all", op_all_to_all),
                                M("all_to_all_v", op_all_to_all_v),
                                M("gather", op_gather),
                                M("scatter", op_scatter),
                                M("barrier", op_barrier),
                                M("send", op_send),
                                M("recv", op_recv),
                                {"batch_begin", (PyCFunction)op_batch_begin, METH_NOARGS, NULL},
                                M("batch_end", op_batch_end),
                                {"batch_cancel", (PyCFunction)op_batch_cancel, METH_NOARGS, NULL},
                                {NULL, NULL, 0, NULL}};
