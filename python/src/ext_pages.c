/* tcomms._ext.Pages: a second mapping of an allocated window's pages, which the
 * tensors and arrays viewing that memory (Window.buffer, Window.map_remote) are
 * made over. The library unmaps its own mapping when the window is destroyed;
 * the views keep theirs, so a view used after the window's end reads and
 * writes pages nobody else uses any more, never unmapped memory (a
 * segmentation fault) or memory since given to something else. The pages are
 * freed with the last view. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ext.h"

typedef struct {
    PyObject_HEAD void *addr;
    size_t len;        /* mapped: nbytes rounded up to pages */
    Py_ssize_t nbytes; /* exposed */
} tc_py_pages_t;

static void pages_dealloc(tc_py_pages_t *self)
{
    if (self->addr)
        munmap(self->addr, self->len);
    PyObject_Free(self);
}

static int pages_getbuffer(tc_py_pages_t *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->addr, self->nbytes, 0, flags);
}

static PyBufferProcs pages_as_buffer = {
    .bf_getbuffer = (getbufferproc)pages_getbuffer,
};

PyTypeObject tc_py_pages_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tcomms._ext.Pages",
    .tp_basicsize = sizeof(tc_py_pages_t),
    .tp_dealloc = (destructor)pages_dealloc,
    .tp_as_buffer = &pages_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A window's memory mapped again, for views that may outlive the window.",
};

PyObject *tc_py_pages_new(void *addr, size_t nbytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (nbytes == 0 || nbytes > PY_SSIZE_T_MAX - page)
        return tc_py_raise(TC_ERR_INVALID_ARG, "pages: a window of 0 bytes, or too large");
    if ((uintptr_t)addr % page)
        return tc_py_raise(TC_ERR_INVALID_ARG, "pages: the window's memory does not start "
                                               "on a page");
    size_t len = (nbytes + page - 1) / page * page;
    /* old size 0: a new mapping of the same pages (the library's memory is a shared mapping) */
    void *again = mremap(addr, 0, len, MREMAP_MAYMOVE);
    if (again == MAP_FAILED) {
        char why[160];
        snprintf(why, sizeof(why), "pages: mapping the window's %zu bytes again: %s", nbytes,
                 strerror(errno));
        return tc_py_raise(TC_ERR_SYSTEM, why);
    }
    tc_py_pages_t *self = PyObject_New(tc_py_pages_t, &tc_py_pages_type);
    if (!self) {
        munmap(again, len);
        return NULL;
    }
    self->addr = again;
    self->len = len;
    self->nbytes = (Py_ssize_t)nbytes;
    return (PyObject *)self;
}
