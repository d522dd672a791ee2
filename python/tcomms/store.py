"""Stores tcomms can start up through (tc_comm_create_from_store).

The extension calls ``set(key, value: bytes)``, ``get(key) -> bytes | None``
(None at once when absent), ``wait(key, timeout_ms) -> bool`` and
``add(key, delta) -> int``, possibly from tcomms' progress thread.
"""
import threading
import time


class C10dStore:
    """A torch.distributed Store (TCPStore, FileStore, PrefixStore, ...), one
    call at a time.

    A key is looked up without blocking through ``compare_set`` with a
    sentinel expected value (absent: the sentinel comes back and nothing is
    written); ``wait`` polls that. The store's own ``wait`` with a short
    timeout is not used: a TCPStore client whose wait timed out reads the late
    reply as the answer to its next request.
    """

    _ABSENT = b"\x00tcomms: no such key\xff"
    _POLL_S = 0.002

    def __init__(self, store):
        self._s = store
        self._lock = threading.Lock()

    def set(self, key, value):
        with self._lock:
            self._s.set(key, value)

    def get(self, key):
        with self._lock:
            v = self._s.compare_set(key, self._ABSENT, self._ABSENT)
        return None if v == self._ABSENT else v

    def wait(self, key, timeout_ms):
        until = time.monotonic() + timeout_ms / 1000.0
        while self.get(key) is None:
            left = until - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, self._POLL_S))
        return True

    def add(self, key, delta):
        with self._lock:
            return int(self._s.add(key, delta))


class DictStore:
    """A store inside one process (threads as ranks, tests)."""

    def __init__(self):
        self._d = {}
        self._cv = threading.Condition()

    def set(self, key, value):
        with self._cv:
            self._d[key] = bytes(value)
            self._cv.notify_all()

    def get(self, key):
        with self._cv:
            return self._d.get(key)

    def wait(self, key, timeout_ms):
        with self._cv:
            return self._cv.wait_for(lambda: key in self._d, timeout_ms / 1000.0)

    def add(self, key, delta):
        with self._cv:
            v = int(self._d.get(key, b"0")) + delta
            self._d[key] = str(v).encode()
            self._cv.notify_all()
            return v


def adapt(store):
    """@p store as the extension wants it."""
    if all(hasattr(store, m) for m in ("set", "get", "wait", "add")) and \
            not type(store).__module__.startswith("torch"):
        return store
    return C10dStore(store)
