"""A work dropped before its operation ended (a bare ``comm.send(t, peer, async_op=True)``
statement, ``del work``), as torch lets an isend's work be dropped: dropping never waits,
the communicator keeps the operation and its buffers until it ends, frees those ended on
later calls, and warns of one that failed. Freeing the work waited for the operation (a
large send's exchange deadlocked until the timeout)."""
import time
import warnings

import numpy as np
import pytest

import tcomms
from tcomms.store import DictStore
from test_api import run_ranks

N = 1 << 20  # large: a send waits for its receive


def test_exchange_with_dropped_sends():
    def fn(c, r, n):
        peer = 1 - r
        got = []
        for k in range(3):
            y = np.zeros(N, dtype=np.float32)
            t0 = time.monotonic()
            c.send(np.full(N, 10 * r + k, dtype=np.float32), peer, async_op=True)  # dropped
            assert time.monotonic() - t0 < 3, "dropping the send's work waited for it"
            c.recv(y, peer)
            got.append(y)
        c.barrier()
        return got
    for r, got in enumerate(run_ranks(2, fn, timeout=15)):
        for k, y in enumerate(got):
            np.testing.assert_array_equal(y, np.full(N, 10 * (1 - r) + k, dtype=np.float32))


def test_dropped_works_kept_then_freed_and_failures_warned():
    c = tcomms.new_comm(store=DictStore(), rank=0, size=1, name="drop", timeout=10)
    try:
        x = np.arange(N, dtype=np.float32)
        out = np.zeros(2 * N, dtype=np.float32)[::2]  # non-contiguous: copied back once done
        for _ in range(50):
            t0 = time.monotonic()
            w = c.send(x, 0, async_op=True)
            del w
            c.recv(out, 0, async_op=True)  # dropped too
            assert time.monotonic() - t0 < 3, "dropping a work waited for it"
            c.barrier()  # frees those ended
            assert len(c._dropped) <= 2
        while c._dropped:
            c.barrier()
        np.testing.assert_array_equal(out, x)  # the last receive's copy back
        c.send(x, 0, async_op=True)  # never received: ends failed at finalize, with a warning
    finally:
        with pytest.warns(RuntimeWarning, match="whose work was dropped failed"):
            c.finalize()
    assert not c._dropped


def test_a_failed_work_seen_is_not_warned_again():
    c = tcomms.new_comm(store=DictStore(), rank=0, size=1, name="seen", timeout=10)
    w = c.send(np.zeros(N, dtype=np.float32), 0, async_op=True)
    c.abort()
    with pytest.raises(tcomms.Error):
        w.wait()
    del w
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c.finalize()
