"""Windows with ranks as threads of one process (tests/local/test_api.py's
run_ranks): rank 0 blocks in wait_signal while rank 1, another thread of the
same interpreter, puts and signals, which only works when the wait releases
the GIL; every element is checked against NumPy."""
import numpy as np

import tcomms
from test_api import run_ranks


def test_wait_signal_releases_the_gil():
    def fn(c, r, n):
        buf = np.zeros(1000, dtype=np.float16)
        with c.new_window(buf, timeout=20) as win:
            if r == 1:
                src = (np.arange(1000) % 97).astype(np.float16)
                win.put_signal(src, 0, 0, slot=2, value=1, timeout=20)
                win.put_signal(src[:10] + 1, 0, 990, slot=2, value=1, async_op=True,
                               timeout=20).wait(timeout=20)
            else:
                seen = win.wait_signal(2, tcomms.Cmp.GE, 2, timeout=20)
                assert seen == 2
            c.barrier(timeout=20)
            return buf.copy()
    res = run_ranks(2, fn, name="win")
    want = (np.arange(1000) % 97).astype(np.float16)
    want[990:] = want[:10] + 1
    np.testing.assert_array_equal(res[0], want)
    np.testing.assert_array_equal(res[1], np.zeros(1000, dtype=np.float16))


def test_windows_left_alive_are_destroyed_by_finalize():
    def fn(c, r, n):
        a = np.arange(8, dtype=np.int32) * (r + 1)
        win = c.new_window(a, timeout=20)
        got = np.zeros(8, dtype=np.int32)
        win.get(got, 1 - r, timeout=20)
        c.barrier(timeout=20)
        return got, win
    res = run_ranks(2, fn, name="win2")  # finalize runs with the windows alive
    for r, (got, win) in enumerate(res):
        np.testing.assert_array_equal(got, np.arange(8, dtype=np.int32) * (2 - r))
        try:
            win.put(got, 0)
            raise AssertionError("a window outlived its communicator's finalize")
        except tcomms.Error as e:
            assert "destroyed" in str(e)


def test_offsets_beyond_any_window_refused_without_wrapping():
    """offset * itemsize is not taken modulo 2**64 (2**62 floats wrapped to byte 0 of the
    peer's window): every offset whose bytes reach past the window is refused, nothing
    written or read."""
    huge = [2**62, 2**62 + 3, 2**63 - 1, 2**64 - 1, 2**64, 2**100]

    def fn(c, r, n):
        buf = np.arange(100, 116, dtype=np.float32)
        with c.new_window(buf, timeout=20) as win:
            if r == 0:
                for off in huge:
                    for call in (lambda: win.put(np.full(2, -1, dtype=np.float32), 1, off),
                                 lambda: win.put_signal(np.full(2, -1, dtype=np.float32), 1,
                                                        off, slot=0),
                                 lambda: win.get(buf[:2], 1, off)):
                        try:
                            call()
                            raise AssertionError(f"offset {off} accepted")
                        except tcomms.InvalidArgumentError as e:
                            assert e.status_name == "TC_ERR_INVALID_ARG", e
            c.barrier(timeout=20)
            return buf.copy(), win.read_signal(0)
    for buf, sig in run_ranks(2, fn, name="winovf"):
        np.testing.assert_array_equal(buf, np.arange(100, 116, dtype=np.float32))
        assert sig == 0


def test_views_outlive_the_window():
    """allocate_window's buffer and map_remote's view stay usable memory after the window is
    destroyed and the communicator finalized (reading them was a segmentation fault): each
    holds what it held, and writes reach only the views of the same pages (here rank 0's
    buffer and rank 1's view of it: the ranks are threads of one process)."""
    def fn(c, r, n):
        win = c.allocate_window(4096 * 3 + 8, np.int64, timeout=20)
        mine = win.buffer
        mine[:] = np.arange(mine.size, dtype=np.int64) * (r + 1)
        c.barrier(timeout=20)
        theirs = win.map_remote(1 - r)  # both ranks are threads of this process
        seen = theirs.copy()
        c.barrier(timeout=20)
        win.destroy()
        return mine, theirs, seen
    res = run_ranks(2, fn, name="win_views")  # every communicator finalized
    for r, (mine, theirs, seen) in enumerate(res):
        want = np.arange(mine.size, dtype=np.int64) * (r + 1)
        np.testing.assert_array_equal(seen, np.arange(mine.size, dtype=np.int64) * (2 - r))
        np.testing.assert_array_equal(mine, want)  # read after the end: no fault, same data
        np.testing.assert_array_equal(theirs, np.arange(mine.size, dtype=np.int64) * (2 - r))
    for r, (mine, _, _) in enumerate(res):
        mine[:] = 7 + r
    for r, (mine, theirs, _) in enumerate(res):
        np.testing.assert_array_equal(mine, np.full(mine.size, 7 + r))
        np.testing.assert_array_equal(theirs, np.full(mine.size, 8 - r))
    import gc
    del res, mine, theirs
    gc.collect()  # the last views go: their pages are unmapped without a fault


def test_torch_view_outlives_the_window():
    torch = __import__("pytest").importorskip("torch")

    def fn(c, r, n):
        with c.allocate_window(64, torch.float32, timeout=20) as win:
            t = win.buffer
            t.fill_(r + 0.5)
            c.barrier(timeout=20)
        return t
    for r, t in enumerate(run_ranks(2, fn, name="win_views_t")):
        assert t.dtype == torch.float32 and t.numel() == 16
        assert torch.equal(t, torch.full((16,), r + 0.5))
        t.add_(1)  # writable still


def test_map_remote_refused_with_why():
    """map_remote of a window the caller made (not allocate_window): UnsupportedError saying
    why, from the one query the view makes."""
    def fn(c, r, n):
        with c.new_window(np.zeros(8), timeout=20) as win:
            try:
                win.map_remote(1 - r)
                return "no error"
            except tcomms.UnsupportedError as e:
                return str(e)
            finally:
                c.barrier(timeout=20)
    for msg in run_ranks(2, fn, name="win_refused"):
        assert "cannot be reached by load and store" in msg, msg
