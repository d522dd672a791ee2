"""One-sided communication: windows (tc_win_* of the C API).

A window is memory every rank of a communicator exposes to the others:
``comm.new_window(tensor_or_array)`` over the caller's CPU tensor or NumPy
array (used in place, never copied; the window keeps a reference to it), or
``comm.allocate_window(nbytes, dtype)`` over memory the library allocates
(in shared memory for same-node peers; ``window.buffer`` is this rank's part).
Both are collective. Every rank also has ``SIGNAL_SLOTS`` 64-bit signal slots,
zero at creation, that other ranks update (``signal``, ``put_signal``) and the
owner waits on (``wait_signal``).

Offsets are in elements of this window's element type (the tensor's, or the
``dtype`` of allocate_window): give every rank's window the same element type.
Operations take ``async_op`` and ``timeout`` (seconds or a timedelta; None: the
communicator's) and return a :class:`Work` (already completed when
``async_op`` is False); errors are the package's exceptions with the library's
message (an offset beyond a peer's window: InvalidArgumentError).

Completion and ordering are the C API's (docs/python.md, tcomms.h): a completed
put is in the target's window; ``flush(peer)`` completes every operation issued
to ``peer``; a signal is applied only after the data of every earlier put of
the same origin to that target, so a target that sees a signal sees the data.
"""
import enum
import threading

from . import _buffers as B
from . import _ext

SIGNAL_SLOTS = 64
ALL_PEERS = -1


class SignalOp(enum.IntEnum):
    ADD = 0  # slot += value (atomic)
    SET = 1  # slot = value


class Cmp(enum.IntEnum):
    """wait_signal waits until ``slot CMP value``."""
    EQ = 0
    NE = 1
    GE = 2
    GT = 3
    LE = 4
    LT = 5


class _ThreadWork:
    """A blocking C call (it releases the GIL and is bounded by its timeout) run
    on a helper thread, with _ext.Work's interface: the async form of
    wait_signal and flush, which the C API only has blocking."""

    def __init__(self, fn):
        self.value = None
        self._error = None
        self._thread = threading.Thread(target=self._main, args=(fn,), daemon=True,
                                        name="tcomms-window")
        self._thread.start()

    def _main(self, fn):
        _ext.name_thread("tc-py-window")
        try:
            self.value = fn()
        except BaseException as e:  # raised by wait()
            self._error = e

    def wait(self, timeout_ms=-1):
        self._thread.join(None if timeout_ms < 0 else timeout_ms / 1000)
        if self._thread.is_alive():
            return False
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        return not self._thread.is_alive()


def _view(w, peer, nbytes, dtype):
    """A tensor (torch dtype) or NumPy array (anything else) over rank @p peer's
    window of @p nbytes (an allocated window's memory), without a copy. It is
    made over a mapping of its own of those pages (_ext.Pages), which it keeps:
    used after the window's end it reads and writes pages nobody else uses any
    more, where the library's memory would be gone (a segmentation fault)."""
    if type(dtype).__module__.startswith("torch"):
        torch = B._torch()
        if nbytes == 0:
            return torch.empty(0, dtype=dtype)
        return torch.frombuffer(w.pages(peer), dtype=dtype)
    import numpy as np
    if nbytes == 0:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(w.pages(peer), dtype=dtype)


def _itemsize(dtype):
    if type(dtype).__module__.startswith("torch"):
        return B._torch().empty(0, dtype=dtype).element_size()
    import numpy as np
    return np.dtype(dtype).itemsize


def _nbytes(b):
    """Bytes of a _buffers.Buf."""
    return b.count * B._ITEMSIZE[b.code]


class Window:
    """A window of a :class:`tcomms.Comm` (create with ``comm.new_window`` or
    ``comm.allocate_window``). Destroy it with :meth:`destroy` (collective) or
    use it as a context manager; windows still alive when their communicator
    is finalized are destroyed then."""

    def __init__(self, comm, w, buffer, dtype):
        self._comm = comm
        self._w = w
        self._buffer = buffer  # this rank's memory: the caller's, or a view of the library's
        self._dtype = dtype
        self._itemsize = _itemsize(dtype)

    # ---- facts
    @property
    def buffer(self):
        """This rank's memory (the tensor or array given to new_window, or a view
        of allocate_window's memory: after destroy it no longer is the window's)."""
        self._live()
        return self._buffer

    @property
    def dtype(self):
        return self._dtype

    def size(self, peer=-1):
        """Bytes of rank @p peer's window (-1: this rank's)."""
        self._live()
        return self._w.size(int(peer))

    def map_remote(self, peer):
        """A tensor/array through which rank @p peer's window is loaded and
        stored directly (torchcomms' map_remote_tensor): both windows made by
        allocate_window, the peer on this node. UnsupportedError otherwise.
        Order accesses with signals or a barrier; after destroy it no longer
        reaches the peer's window."""
        self._live()
        return _view(self._w, int(peer), self._w.size(int(peer)), self._dtype)

    # ---- operations
    def put(self, src, peer, offset=0, async_op=False, timeout=None):
        """Write @p src into rank @p peer's window at element @p offset."""
        from .comm import Work, _ms
        b = self._buf(src, False)
        n = _nbytes(b)
        w = self._op().put(b.addr, n, int(peer), self._off(offset, n), _ms(timeout),
                           bool(async_op), b.obj)
        return self._comm._track(Work(w, ()))

    def get(self, dst, peer, offset=0, async_op=False, timeout=None):
        """Read rank @p peer's window at element @p offset into @p dst."""
        from .comm import Work, _ms
        b = self._buf(dst, True)
        n = _nbytes(b)
        w = self._op().get(b.addr, n, int(peer), self._off(offset, n), _ms(timeout),
                           bool(async_op), b.obj)
        return self._comm._track(Work(w, (b,)))

    def put_signal(self, src, peer, offset, slot, value=1, op=SignalOp.ADD, async_op=False,
                   timeout=None):
        """put, then update rank @p peer's slot @p slot (it sees the new value
        only once the data is in its window)."""
        from .comm import Work, _ms
        b = self._buf(src, False)
        n = _nbytes(b)
        w = self._op().put_signal(b.addr, n, int(peer), self._off(offset, n), int(slot),
                                  int(value), int(op), _ms(timeout), bool(async_op), b.obj)
        return self._comm._track(Work(w, ()))

    def signal(self, peer, slot, value=1, op=SignalOp.ADD, async_op=False, timeout=None):
        """Update rank @p peer's slot @p slot, after every earlier put of this
        rank to it is in its window."""
        from .comm import Work, _ms
        w = self._op().signal(int(peer), int(slot), int(value), int(op), _ms(timeout),
                              bool(async_op))
        return self._comm._track(Work(w, ()))

    def wait_signal(self, slot, cmp=Cmp.GE, value=1, timeout=None, async_op=False):
        """Wait until this rank's slot @p slot satisfies ``slot CMP value``;
        returns the value seen (with ``async_op``: a Work whose ``value`` is set
        once it completed). TimeoutError names the slot and its value."""
        from .comm import SignalWork, _ms
        w = self._op()
        args = (int(slot), int(cmp), int(value), _ms(timeout))
        if not async_op:
            return w.wait_signal(*args)
        return SignalWork(_ThreadWork(lambda: w.wait_signal(*args)), ())

    def read_signal(self, slot):
        """This rank's slot @p slot now."""
        return self._op().read_signal(int(slot))

    def flush(self, peer=None, async_op=False, timeout=None):
        """Complete every operation this rank issued on the window to @p peer
        (None: to every rank)."""
        from .comm import Work, _ms
        w = self._op()
        args = (ALL_PEERS if peer is None else int(peer), _ms(timeout))
        if not async_op:
            w.flush(*args)
            return Work(None, ())
        return Work(_ThreadWork(lambda: w.flush(*args)), ())

    def destroy(self):
        """Free the window (collective: every rank calls it). Idempotent."""
        if self._w is None:
            return
        w, self._w = self._w, None
        self._comm._windows.discard(self)
        self._buffer = None
        w.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    # ---- helpers
    def _live(self):
        if self._w is None:
            raise _ext.Error("tcomms: the window was destroyed")

    def _op(self):
        self._live()
        return self._w

    def _buf(self, x, writable):
        """@p x as a Buf, of the window's element type (offsets count its elements); a
        window of uint8 (bytes: allocate_window's default) takes any."""
        B.check_cpu(x)
        mine = B.type_name(self._dtype)
        if mine != "uint8" and B.type_name(x.dtype) != mine:
            raise TypeError(f"tcomms: a buffer of {B.type_name(x.dtype)} for a window of "
                            f"{mine} (offsets count the window's elements)")
        return B.Buf(x, writable)

    def _off(self, offset, nbytes):
        """Element @p offset in bytes, for an access of @p nbytes: checked here with Python's
        unbounded ints, for the library takes 64 bits (2**62 floats wrapped to byte 0)."""
        offset = int(offset)
        if offset < 0:
            raise _ext.error(_ext.TC_ERR_INVALID_ARG, f"tcomms: window offset {offset} is "
                                                      "negative")
        if offset * self._itemsize + nbytes >= 1 << 63:
            raise _ext.error(_ext.TC_ERR_INVALID_ARG,
                             f"tcomms: window offset {offset} ({self._itemsize}-byte "
                             f"elements) and {nbytes} bytes are beyond any window")
        return offset * self._itemsize


def new_window(comm, buf, timeout=None):
    from .comm import _ms
    B.check_cpu(buf)
    if not B.in_place(buf):
        raise ValueError("tcomms: new_window needs a contiguous tensor or array, not a "
                         "strided, conjugate or negative view (the window is its memory, "
                         "never a copy): pass a contiguous one, e.g. .contiguous() or .clone()")
    if B._is_torch(buf):
        nbytes, dtype = buf.numel() * buf.element_size(), buf.dtype
    else:
        if not buf.flags["WRITEABLE"]:
            raise ValueError("tcomms: new_window needs a writable array")
        nbytes, dtype = buf.nbytes, buf.dtype
    w = comm._c.win_create(B.address(buf) if nbytes else 0, nbytes, _ms(timeout), buf)
    return comm._adopt(Window(comm, w, buf, dtype))


def allocate_window(comm, nbytes, dtype, timeout=None):
    from .comm import _ms
    nbytes = int(nbytes)
    size = _itemsize(dtype)
    if nbytes < 0:
        raise ValueError(f"tcomms: allocate_window: {nbytes} bytes is negative")
    if nbytes % size:
        raise ValueError(f"tcomms: allocate_window: {nbytes} bytes is not a whole number of "
                         f"{size}-byte elements")
    w, _ = comm._c.win_allocate(nbytes, _ms(timeout))
    try:
        buf = _view(w, comm._rank, nbytes, dtype)
    except BaseException:
        comm._adopt(Window(comm, w, None, dtype))  # destroyed with the communicator
        raise
    return comm._adopt(Window(comm, w, buf, dtype))
