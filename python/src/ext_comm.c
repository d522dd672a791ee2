/* tcomms._ext: the module, its exceptions, the bridge to a caller's store,
 * creation and the management calls of a communicator. */
#include <stdio.h>
#include <string.h>

#include "ext.h" /* before pthread.h: Python.h sets _GNU_SOURCE (pthread_setname_np) */

#include <pthread.h>

/* ---- exceptions: one class per kind of failure, all tcomms._ext.Error ---- */

static PyObject *err_base, *err_timeout, *err_peer, *err_aborted, *err_revoked, *err_mismatch,
    *err_invalid, *err_unsupported;

int tc_py_errors_init(PyObject *m)
{
    err_base = PyErr_NewExceptionWithDoc("tcomms._ext.Error",
                                         "A tcomms call failed; .status and .status_name say "
                                         "how, the message what and where.",
                                         PyExc_RuntimeError, NULL);
    if (!err_base)
        return -1;
    struct {
        PyObject **cls;
        const char *name;
        PyObject *also;
    } sub[] = {{&err_timeout, "tcomms._ext.TimeoutError", PyExc_TimeoutError},
               {&err_peer, "tcomms._ext.PeerFailedError", NULL},
               {&err_aborted, "tcomms._ext.AbortedError", NULL},
               {&err_revoked, "tcomms._ext.RevokedError", NULL},
               {&err_mismatch, "tcomms._ext.MismatchError", NULL},
               {&err_invalid, "tcomms._ext.InvalidArgumentError", PyExc_ValueError},
               {&err_unsupported, "tcomms._ext.UnsupportedError", NULL}};
    for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
        PyObject *bases =
            sub[i].also ? PyTuple_Pack(2, err_base, sub[i].also) : PyTuple_Pack(1, err_base);
        *sub[i].cls = bases ? PyErr_NewException(sub[i].name, bases, NULL) : NULL;
        Py_XDECREF(bases);
        if (!*sub[i].cls || PyModule_AddObjectRef(m, strrchr(sub[i].name, '.') + 1, *sub[i].cls))
            return -1;
    }
    return PyModule_AddObjectRef(m, "Error", err_base);
}

/* The exception for @p st carrying @p text, .status and .status_name; NULL with an error set. */
static PyObject *error_new(tc_status_t st, const char *text)
{
    PyObject *cls = st == TC_ERR_TIMEOUT       ? err_timeout
                    : st == TC_ERR_PEER_FAILED ? err_peer
                    : st == TC_ERR_ABORTED     ? err_aborted
                    : st == TC_ERR_REVOKED     ? err_revoked
                    : st == TC_ERR_MISMATCH    ? err_mismatch
                    : st == TC_ERR_INVALID_ARG ? err_invalid
                    : st == TC_ERR_NOT_FOUND   ? err_invalid /* a name given that does not exist */
                    : st == TC_ERR_UNSUPPORTED ? err_unsupported
                                               : err_base;
    PyObject *exc = PyObject_CallFunction(cls, "s", text);
    if (!exc)
        return NULL;
    PyObject *code = PyLong_FromLong(st);
    PyObject *name = PyUnicode_FromString(tc_status_string(st));
    int ok = code && name && PyObject_SetAttrString(exc, "status", code) == 0 &&
             PyObject_SetAttrString(exc, "status_name", name) == 0;
    Py_XDECREF(code);
    Py_XDECREF(name);
    if (!ok)
        Py_CLEAR(exc);
    return exc;
}

PyObject *tc_py_raise(tc_status_t st, const char *detail)
{
    PyObject *exc = error_new(st, detail ? detail : tc_last_error());
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* error(status, message) -> the exception tcomms raises for @p status (not raised): for the
 * errors the Python layer finds itself (a torch Work's wait timing out, an unsupported call). */
static PyObject *py_error(PyObject *mod, PyObject *args)
{
    int st;
    const char *text;
    if (!PyArg_ParseTuple(args, "is", &st, &text))
        return NULL;
    return error_new((tc_status_t)st, text);
}

/* ---- the store bridge: callbacks may run on tcomms' progress thread ---- */

static int bridge_failed(tc_py_bridge_t *b, const char *cb)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    snprintf(b->last_error, sizeof(b->last_error), "the store's %s raised: %s", cb,
             s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "(no message)");
    PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return TC_STORE_FAILED;
}

/* Once the interpreter is finalizing, no thread may take the GIL: a
 * callback from tcomms' progress thread then fails instead of hanging. */
static int bridge_closed(tc_py_bridge_t *b)
{
    if (!_Py_IsFinalizing())
        return 0;
    snprintf(b->last_error, sizeof(b->last_error), "the Python interpreter is exiting");
    return 1;
}

static int bridge_set(void *ctx, const char *key, const void *val, size_t len)
{
    tc_py_bridge_t *b = ctx;
    if (bridge_closed(b))
        return TC_STORE_FAILED;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r =
        PyObject_CallMethod(b->store, "set", "sy#", key, (const char *)val, (Py_ssize_t)len);
    int rc = r ? TC_STORE_OK : bridge_failed(b, "set");
    Py_XDECREF(r);
    PyGILState_Release(g);
    return rc;
}

static int bridge_get(void *ctx, const char *key, void *buf, size_t cap, size_t *len_p)
{
    tc_py_bridge_t *b = ctx;
    if (bridge_closed(b))
        return TC_STORE_FAILED;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(b->store, "get", "s", key);
    int rc = TC_STORE_ABSENT;
    char *data;
    Py_ssize_t len;
    if (!r)
        rc = bridge_failed(b, "get");
    else if (r != Py_None && PyBytes_AsStringAndSize(r, &data, &len) != 0)
        rc = bridge_failed(b, "get (not bytes)");
    else if (r != Py_None) {
        memcpy(buf, data, (size_t)len < cap ? (size_t)len : cap);
        *len_p = (size_t)len;
        rc = TC_STORE_OK;
    }
    Py_XDECREF(r);
    PyGILState_Release(g);
    return rc;
}

static int bridge_wait(void *ctx, const char *key, int64_t timeout_ms)
{
    tc_py_bridge_t *b = ctx;
    if (bridge_closed(b))
        return TC_STORE_FAILED;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(b->store, "wait", "sL", key, (long long)timeout_ms);
    int rc = !r ? bridge_failed(b, "wait") : PyObject_IsTrue(r) ? TC_STORE_OK : TC_STORE_TIMEOUT;
    Py_XDECREF(r);
    PyGILState_Release(g);
    return rc;
}

static int bridge_add(void *ctx, const char *key, int64_t delta, int64_t *value_p)
{
    tc_py_bridge_t *b = ctx;
    if (bridge_closed(b))
        return TC_STORE_FAILED;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(b->store, "add", "sL", key, (long long)delta);
    int rc = TC_STORE_OK;
    if (!r)
        rc = bridge_failed(b, "add");
    else if ((*value_p = PyLong_AsLongLong(r)) == -1 && PyErr_Occurred())
        rc = bridge_failed(b, "add (not an int)");
    Py_XDECREF(r);
    PyGILState_Release(g);
    return rc;
}

static void bridge_release(tc_py_bridge_t *b)
{
    if (b && --b->refs == 0) {
        Py_DECREF(b->store);
        PyMem_RawFree(b);
    }
}

/* ---- the communicator object ---- */

PyObject *tc_py_comm_wrap(tc_comm_t *comm, tc_py_bridge_t *bridge)
{
    tc_py_comm_t *self = PyObject_New(tc_py_comm_t, &tc_py_comm_type);
    if (!self) {
        tc_comm_destroy(comm);
        return NULL;
    }
    self->comm = comm;
    self->bridge = bridge;
    if (bridge)
        bridge->refs++;
    tc_py_done_init(self);
    return (PyObject *)self;
}

static void comm_close(tc_py_comm_t *self)
{
    if (self->comm) {
        tc_comm_t *c = self->comm;
        self->comm = NULL;
        PyThreadState *ts = PyEval_SaveThread();
        tc_py_done_close(self); /* tc_comm_destroy must not overlap a wait on its works */
        tc_comm_destroy(c);
        PyEval_RestoreThread(ts);
    }
    bridge_release(self->bridge);
    self->bridge = NULL;
}

static void comm_dealloc(tc_py_comm_t *self)
{
    comm_close(self);
    tc_py_done_fini(self);
    PyObject_Free(self);
}

static int comm_opts(tc_comm_opts_t *o, const char *name, long long timeout_ms, const char *hints)
{
    *o = (tc_comm_opts_t)TC_COMM_OPTS_INIT;
    o->name = name;
    o->timeout_ms = timeout_ms;
    o->hints = hints;
    return 0;
}

/* create(bootstrap, name, timeout_ms, hints): the launcher's job (tc_comm_create). */
static PyObject *py_create(PyObject *mod, PyObject *args)
{
    int boot;
    const char *name, *hints;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "izLz", &boot, &name, &timeout_ms, &hints))
        return NULL;
    tc_comm_opts_t o;
    comm_opts(&o, name, timeout_ms, hints);
    o.bootstrap = (tc_bootstrap_t)boot;
    tc_comm_t *comm = NULL;
    tc_status_t st;
    PyThreadState *ts = PyEval_SaveThread();
    st = tc_comm_create(&o, &comm);
    PyEval_RestoreThread(ts);
    return st == TC_OK ? tc_py_comm_wrap(comm, NULL) : tc_py_raise(st, NULL);
}

/* create_from_store(store, rank, size, prefix, name, timeout_ms, hints). */
static PyObject *py_create_from_store(PyObject *mod, PyObject *args)
{
    PyObject *store;
    int rank, size;
    const char *prefix, *name, *hints;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "OiiszLz", &store, &rank, &size, &prefix, &name, &timeout_ms,
                          &hints))
        return NULL;
    tc_py_bridge_t *b = PyMem_RawCalloc(1, sizeof(*b));
    if (!b)
        return PyErr_NoMemory();
    Py_INCREF(store);
    b->store = store;
    b->refs = 1;
    tc_store_t s = TC_STORE_INIT;
    s.set = bridge_set;
    s.get = bridge_get;
    s.wait = bridge_wait;
    s.add = bridge_add;
    s.ctx = b;
    tc_comm_opts_t o;
    comm_opts(&o, name, timeout_ms, hints);
    tc_comm_t *comm = NULL;
    tc_status_t st;
    PyThreadState *ts = PyEval_SaveThread();
    st = tc_comm_create_from_store(&s, rank, size, prefix, &o, &comm);
    PyEval_RestoreThread(ts);
    PyObject *r;
    if (st != TC_OK) {
        char detail[1024];
        snprintf(detail, sizeof(detail), "%s%s%s", tc_last_error(), b->last_error[0] ? "; " : "",
                 b->last_error);
        r = tc_py_raise(st, detail);
    } else {
        r = tc_py_comm_wrap(comm, b);
    }
    bridge_release(b);
    return r;
}

static PyObject *py_create_abort(PyObject *mod, PyObject *unused)
{
    tc_comm_create_abort();
    Py_RETURN_NONE;
}

/* The calling thread's name as top -H, perf and gdb show it (cut to 15 bytes, the kernel's). */
static PyObject *py_name_thread(PyObject *mod, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    char cut[16];
    snprintf(cut, sizeof(cut), "%s", name);
    int err = pthread_setname_np(pthread_self(), cut);
    if (err != 0)
        return tc_py_raise(TC_ERR_SYSTEM, strerror(err));
    Py_RETURN_NONE;
}

static PyObject *py_version(PyObject *mod, PyObject *unused)
{
    return PyLong_FromLong(tc_version());
}

static PyMethodDef module_methods[] = {
    {"create", py_create, METH_VARARGS, "create(bootstrap, name, timeout_ms, hints) -> Comm"},
    {"create_from_store", py_create_from_store, METH_VARARGS,
     "create_from_store(store, rank, size, prefix, name, timeout_ms, hints) -> Comm"},
    {"create_abort", py_create_abort, METH_NOARGS, "tc_comm_create_abort()"},
    {"version", py_version, METH_NOARGS, "tc_version()"},
    {"name_thread", py_name_thread, METH_VARARGS, "name_thread(name): this thread's OS name"},
    {"error", py_error, METH_VARARGS, "error(status, message) -> the exception, not raised"},
    {NULL, NULL, 0, NULL}};

/* ---- the communicator's own calls (the operations are in ext_ops.c) ---- */

#define COMM_LIVE(self)                                                                            \
    do {                                                                                           \
        if (!(self)->comm)                                                                         \
            return tc_py_raise(TC_ERR_INVALID_STATE, "the communicator was destroyed");            \
    } while (0)

static PyObject *comm_destroy(tc_py_comm_t *self, PyObject *unused)
{
    comm_close(self);
    Py_RETURN_NONE;
}

static PyObject *comm_info(tc_py_comm_t *self, PyObject *unused)
{
    COMM_LIVE(self);
    tc_comm_info_t i;
    tc_status_t st;
    TC_PY_NOGIL(st, tc_comm_info(self->comm, &i));
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:s,s:s,s:s,s:i,s:i}", "rank", i.rank, "size", i.size,
                         "local_size", i.local_size, "device", i.device, "name", i.name, "launcher",
                         i.launcher, "host", i.host, "peers_shm", i.peers_shm, "peers_tcp",
                         i.peers_tcp);
}

/* split_ranks(ranks, name, timeout_ms, hints) -> Comm or None. */
static PyObject *comm_split_ranks(tc_py_comm_t *self, PyObject *args)
{
    PyObject *seq;
    const char *name, *hints;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "OzLz", &seq, &name, &timeout_ms, &hints))
        return NULL;
    COMM_LIVE(self);
    PyObject *fast = PySequence_Fast(seq, "ranks must be a sequence of ints");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int *ranks = PyMem_Malloc(sizeof(int) * (size_t)(n ? n : 1));
    for (Py_ssize_t i = 0; ranks && i < n; i++)
        ranks[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    if (!ranks || PyErr_Occurred()) {
        PyMem_Free(ranks);
        return ranks ? NULL : PyErr_NoMemory();
    }
    tc_comm_opts_t o;
    comm_opts(&o, name, timeout_ms, hints);
    tc_comm_t *nc = NULL;
    tc_status_t st;
    PyThreadState *ts = PyEval_SaveThread();
    st = tc_comm_split_ranks(self->comm, ranks, (int)n, &o, &nc);
    PyEval_RestoreThread(ts);
    PyMem_Free(ranks);
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    if (!nc)
        Py_RETURN_NONE;
    return tc_py_comm_wrap(nc, self->bridge);
}

/* shrink(name, timeout_ms, hints) -> Comm or None. */
static PyObject *comm_shrink(tc_py_comm_t *self, PyObject *args)
{
    const char *name, *hints;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "zLz", &name, &timeout_ms, &hints))
        return NULL;
    COMM_LIVE(self);
    tc_comm_opts_t o;
    comm_opts(&o, name, timeout_ms, hints);
    tc_comm_t *nc = NULL;
    tc_status_t st;
    PyThreadState *ts = PyEval_SaveThread();
    st = tc_comm_shrink(self->comm, &o, &nc);
    PyEval_RestoreThread(ts);
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    if (!nc)
        Py_RETURN_NONE;
    return tc_py_comm_wrap(nc, self->bridge);
}

static PyObject *comm_abort(tc_py_comm_t *self, PyObject *unused)
{
    COMM_LIVE(self);
    tc_status_t st;
    TC_PY_NOGIL(st, tc_comm_abort(self->comm));
    return st == TC_OK ? Py_NewRef(Py_None) : tc_py_raise(st, NULL);
}

/* revoke() -> True when the other ranks were told, False when revoked here only. */
static PyObject *comm_revoke(tc_py_comm_t *self, PyObject *unused)
{
    COMM_LIVE(self);
    tc_status_t st;
    PyThreadState *ts = PyEval_SaveThread();
    st = tc_comm_revoke(self->comm);
    PyEval_RestoreThread(ts);
    if (st == TC_OK || st == TC_ERR_UNSUPPORTED)
        return PyBool_FromLong(st == TC_OK);
    return tc_py_raise(st, NULL);
}

static PyObject *comm_failed_ranks(tc_py_comm_t *self, PyObject *unused)
{
    COMM_LIVE(self);
    int ranks[256], n = 0;
    tc_status_t st;
    TC_PY_NOGIL(st, tc_comm_failed_ranks(self->comm, ranks, 256, &n));
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n && i < 256; i++) {
        PyObject *v = PyLong_FromLong(ranks[i]);
        if (!v || PyList_Append(l, v) != 0)
            Py_CLEAR(l);
        Py_XDECREF(v);
    }
    return l;
}

static PyObject *comm_stats(tc_py_comm_t *self, PyObject *unused)
{
    COMM_LIVE(self);
    tc_comm_stat_t s[64];
    int n = 0;
    tc_status_t st;
    TC_PY_NOGIL(st, tc_comm_stats(self->comm, s, 64, &n));
    if (st != TC_OK)
        return tc_py_raise(st, NULL);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n && i < 64; i++) {
        PyObject *d =
            Py_BuildValue("{s:s,s:s,s:K,s:K,s:K,s:d}", "coll", s[i].coll, "algo", s[i].algo, "ops",
                          (unsigned long long)s[i].ops, "failed", (unsigned long long)s[i].failed,
                          "bytes", (unsigned long long)s[i].bytes, "time_s", s[i].time_s);
        if (!d || PyList_Append(l, d) != 0)
            Py_CLEAR(l);
        Py_XDECREF(d);
    }
    return l;
}

static PyObject *comm_dump_fr(tc_py_comm_t *self, PyObject *unused)
{
    COMM_LIVE(self);
    tc_status_t st;
    TC_PY_NOGIL(st, tc_comm_dump_fr(self->comm));
    return st == TC_OK ? Py_NewRef(Py_None) : tc_py_raise(st, NULL);
}

static PyMethodDef comm_methods[] = {
    {"destroy", (PyCFunction)comm_destroy, METH_NOARGS, "tc_comm_destroy"},
    {"info", (PyCFunction)comm_info, METH_NOARGS, "tc_comm_info as a dict"},
    {"split_ranks", (PyCFunction)comm_split_ranks, METH_VARARGS, "tc_comm_split_ranks"},
    {"shrink", (PyCFunction)comm_shrink, METH_VARARGS, "tc_comm_shrink"},
    {"abort", (PyCFunction)comm_abort, METH_NOARGS, "tc_comm_abort"},
    {"revoke", (PyCFunction)comm_revoke, METH_NOARGS, "tc_comm_revoke"},
    {"failed_ranks", (PyCFunction)comm_failed_ranks, METH_NOARGS, "tc_comm_failed_ranks"},
    {"stats", (PyCFunction)comm_stats, METH_NOARGS, "tc_comm_stats as dicts"},
    {"dump_fr", (PyCFunction)comm_dump_fr, METH_NOARGS, "tc_comm_dump_fr"},
    {NULL, NULL, 0, NULL}};

PyTypeObject tc_py_comm_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tcomms._ext.Comm",
    .tp_basicsize = sizeof(tc_py_comm_t),
    .tp_dealloc = (destructor)comm_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tcomms communicator (see tcomms.Comm for the documented interface).",
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_ext",
    .m_doc = "tcomms' C API, for the tcomms package",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__ext(void)
{
    /* the management calls, then the operations: one table */
    static PyMethodDef all[64];
    size_t n = 0;
    for (PyMethodDef *d = comm_methods; d->ml_name; d++)
        all[n++] = *d;
    for (PyMethodDef *d = tc_py_comm_ops; d->ml_name; d++)
        all[n++] = *d;
    for (PyMethodDef *d = tc_py_comm_win_ops; d->ml_name; d++)
        all[n++] = *d;
    for (PyMethodDef *d = tc_py_comm_wait_ops; d->ml_name; d++)
        all[n++] = *d;
    tc_py_comm_type.tp_methods = all;
    if (PyType_Ready(&tc_py_comm_type) < 0 || PyType_Ready(&tc_py_work_type) < 0 ||
        PyType_Ready(&tc_py_win_type) < 0 || PyType_Ready(&tc_py_pages_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m || tc_py_errors_init(m) != 0 ||
        PyModule_AddObjectRef(m, "Comm", (PyObject *)&tc_py_comm_type) != 0 ||
        PyModule_AddObjectRef(m, "Work", (PyObject *)&tc_py_work_type) != 0 ||
        PyModule_AddObjectRef(m, "Window", (PyObject *)&tc_py_win_type) != 0 ||
        PyModule_AddIntConstant(m, "TC_ERR_INVALID_ARG", TC_ERR_INVALID_ARG) != 0 ||
        PyModule_AddIntConstant(m, "TC_ERR_TIMEOUT", TC_ERR_TIMEOUT) != 0 ||
        PyModule_AddIntConstant(m, "TC_ERR_UNSUPPORTED", TC_ERR_UNSUPPORTED) != 0 ||
        PyModule_AddIntConstant(m, "TC_ANY_SOURCE", TC_ANY_SOURCE) != 0) {
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
