/* The extension module tcomms._ext: a thin layer over the public C API only.
 * Buffers arrive as addresses (Python ints) with counts and a type code; the
 * Python layer (tcomms/) keeps the tensors or arrays alive and checks them.
 * Every call into tcomms runs without the GIL. */
#ifndef TC_PY_EXT_H
#define TC_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "tcomms/tcomms.h"

/* Run @p call without the GIL, its status into @p st. Every library call that may take the
 * world's lock goes through it: the lock's holder may be calling back into Python (a store's
 * callback, from the progress thread's event poll) and so be waiting for the GIL. */
#define TC_PY_NOGIL(st, call)                                                                      \
    do {                                                                                           \
        PyThreadState *ts_ = PyEval_SaveThread();                                                  \
        (st) = (call);                                                                             \
        PyEval_RestoreThread(ts_);                                                                 \
    } while (0)

/* The caller's store, shared by a communicator and those split from it. */
typedef struct {
    PyObject *store; /* set/get/wait/add methods */
    int refs;        /* communicators using it (changed with the GIL held) */
    char last_error[256];
} tc_py_bridge_t;

typedef struct {
    PyObject_HEAD tc_comm_t *comm;
    tc_py_bridge_t *bridge; /* NULL when not created through a store */
    sem_t done;             /* posted when an operation ends while someone sleeps (ext_wait.c) */
    atomic_int sleepers;    /* threads in wait_any */
    atomic_int closing;     /* set before the communicator is destroyed: wait_any returns */
    int hooked;             /* done and its hook are set up (enable_wait_done) */
} tc_py_comm_t;

typedef struct {
    PyObject_HEAD tc_work_t *work;
    PyObject *keep; /* what must outlive the operation (buffers' owners) */
} tc_py_work_t;

extern PyTypeObject tc_py_comm_type;
extern PyTypeObject tc_py_work_type;
extern PyTypeObject tc_py_win_type;
extern PyTypeObject tc_py_pages_type;
/* @p nbytes at @p addr (a page, in a shared mapping) mapped again (ext_pages.c). */
PyObject *tc_py_pages_new(void *addr, size_t nbytes);

/* Raise the exception for @p st with tc_last_error() (or @p detail when not NULL). */
PyObject *tc_py_raise(tc_status_t st, const char *detail);
/* The exception classes; 0 on success. */
int tc_py_errors_init(PyObject *module);
/* The operations of a communicator (ext_ops.c). */
extern PyMethodDef tc_py_comm_ops[];
/* The communicator's asleep wait (ext_wait.c); its fields' set-up at wrapping, and their end
 * at deallocation (after the communicator is destroyed). */
extern PyMethodDef tc_py_comm_wait_ops[];
void tc_py_done_init(tc_py_comm_t *self);
void tc_py_done_fini(tc_py_comm_t *self);
/* Before the communicator is destroyed (GIL released): every wait_any returns, none begins. */
void tc_py_done_close(tc_py_comm_t *self);
/* The communicator's window constructors (ext_win.c). */
extern PyMethodDef tc_py_comm_win_ops[];
/* Wrap @p comm (created through @p bridge, or NULL) in a new Python object. */
PyObject *tc_py_comm_wrap(tc_comm_t *comm, tc_py_bridge_t *bridge);
/* Fill @p o from (timeout_ms, hints, async); 0 on success. */
int tc_py_op_opts(tc_op_opts_t *o, long long timeout_ms, const char *hints, int async);
/* The result of an operation: a Work (async) or None, or an exception. */
PyObject *tc_py_op_result(tc_status_t st, tc_work_t *work, PyObject *keep);

#endif
