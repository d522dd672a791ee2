"""The Work the "tcomms" torch.distributed backend returns: c10d's Work contract
over tcomms work objects.

torch 2.15's Work made from a Future (``_create_work_from_future``) returns
True from ``wait()`` when its operation failed; this one raises the tcomms
error (a timeout, a failed peer naming the rank) from ``wait()``, honours
``wait(timeout)``, and completes its torch Future for DDP's reducer.

The backend's completion thread, once the tcomms works the operation issued
have ended (or, for a blocking call, the calling thread) calls ``_settle`` once
with them: itself while nobody holds the work's future, else on a settler
(``Settlers``), because completing a future runs the callbacks chained to it,
and a callback may wait for another operation of the group, which the
completion thread must go on completing (PowerSGD's DDP hook does; it hung).
"""
import queue
import sys
import threading
from datetime import timedelta

import torch
import torch.distributed as dist

from . import _ext


def _value(fut):
    """The value of @p fut, or its error raised. The Future torch sees is the one
    this callback completes: an error set from Python (set_exception) is only
    seen by Python's wait(), but an exception in a callback is an error of the
    C++ Future, which DDP's reducer checks (with set_exception alone a failed
    all_reduce under DDP read the exception as its tensors and crashed)."""
    return fut.value()


def _seconds(timeout):
    """@p timeout (a timedelta, seconds, or None) in seconds; None: no limit.
    c10d's "no timeout" is 0 (kNoTimeout), which torch passes by default."""
    if timeout is None:
        return None
    s = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    return s if s > 0 else None


class TorchWork(dist._Work):
    """One torch operation on a tcomms group (or a coalesced set of them).

    ``wait(timeout)`` returns True once the operation completed and raises its
    tcomms error if it failed (every time it is called); when ``timeout`` (a
    timedelta; 0, the default: none but the operation's own) runs out first it
    raises ``tcomms.TimeoutError`` and the operation goes on. ``is_completed``,
    ``is_success``, ``exception``, ``result``, ``source_rank`` (receives) and
    ``get_future`` follow c10d's Work. torch 2.15 forwards only ``wait`` and
    ``get_future`` of the object a ``dist.*`` call returns to this class (its
    other methods answer from torch's base Work: use the future's ``done()``);
    the backend's own methods return this object itself.
    """

    def __init__(self, what, rank, value, src=None, translate=None):
        super().__init__()
        self._translate = translate  # an error -> the error torch's caller sees (or None)
        self._what = what  # the operation, for messages
        self._rank = rank
        self._value = value  # the future's value: the output tensors
        self._src = src  # the source rank of a receive
        self._error = None
        self._done = threading.Event()
        self._raw = torch.futures.Future()
        self._fut = self._raw.then(_value)
        self._lock = threading.Lock()
        self._shared = False  # get_future() was called: callbacks may be chained to it

    def _settle_unshared(self, fn, arg):
        """fn(arg) (_settle or _fail) here and now, unless the future was handed out (then
        False): under the lock, so no callback is chained to it meanwhile."""
        with self._lock:
            if self._shared:
                return False
            fn(arg)
            return True

    def _settle(self, works):
        """Wait for the tcomms @p works (each bounded by its own timeout, without
        the GIL), then complete: the error first, the futures, then waiters."""
        try:
            for w in works:
                w.wait()
        except Exception as e:  # the tcomms error, given to whoever waits
            self._fail(self._translate(e) if self._translate and isinstance(e, _ext.Error)
                       else e)
            return
        self._raw.set_result(self._value)
        self._done.set()

    def _fail(self, error):
        """Complete with @p error (a tcomms exception)."""
        self._error = error
        self._raw.set_exception(error)
        self._done.set()

    def wait(self, timeout=timedelta(0)):
        secs = _seconds(timeout)
        if not self._done.wait(secs):
            raise _ext.error(_ext.TC_ERR_TIMEOUT,
                             f"tcomms: wait for {self._what} on rank {self._rank} timed out "
                             f"after {secs * 1000:.0f} ms (the operation goes on: wait again)")
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        return self._done.is_set()

    def is_success(self):
        return self._done.is_set() and self._error is None

    def exception(self):
        return self._error if self._done.is_set() else None

    def result(self):
        """The output tensors, once the operation completed (waits; raises its error)."""
        self.wait()
        return self._value

    def source_rank(self):
        if self._src is None:
            raise RuntimeError(f"tcomms: source_rank() of {self._what}: only a receive has a "
                               "source rank")
        return self._src

    def get_future(self):
        with self._lock:
            self._shared = True
        return self._fut


class Settlers:
    """Threads that complete handed-out futures for a completion thread: each handed a
    settlement gets a thread of its own, an idle one or a new one (up to MAX), so a callback
    that waits for another operation's future never waits behind itself. Idle threads stay
    for the group's life."""

    MAX = 16

    def __init__(self, name):
        self._name = name
        self._q = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting on the queue and not yet promised an item
        self._n = 0

    def put(self, fn, arg):
        with self._lock:
            spawn = self._idle == 0 and self._n < self.MAX
            if spawn:
                self._n += 1
            elif self._idle:
                self._idle -= 1  # promised to this item
        self._q.put((fn, arg))
        if spawn:
            threading.Thread(target=self._run, name=f"tcomms-{self._name}-settle",
                             daemon=True).start()

    def _run(self):
        _ext.name_thread("tc-py-settle")
        while True:
            item = self._q.get()
            if item is None:
                return
            try:
                item[0](item[1])
            except Exception:  # reported as a thread's error is; the thread goes on
                threading.excepthook(threading.ExceptHookArgs(
                    (*sys.exc_info(), threading.current_thread())))
            with self._lock:
                self._idle += 1

    def stop(self):
        """End the threads once what they were handed is done."""
        with self._lock:
            n = self._n
        for _ in range(n):
            self._q.put(None)
