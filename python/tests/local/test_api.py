"""The torchcomms-shaped API in one process, ranks as threads over an
in-process store (which also shows the GIL released while tcomms waits: the
ranks of one collective run in threads of one interpreter). Results are
checked element by element against NumPy computed here."""
import threading
import time

import numpy as np
import pytest

import tcomms
from tcomms.store import DictStore

DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]


def run_ranks(n, fn, name="t", timeout=30, store=None):
    """fn(comm, rank, n) on @p n threads; the results by rank (exceptions re-raised)."""
    store = store or DictStore()
    out, errs = [None] * n, [None] * n

    def main(r):
        c = None
        try:
            c = tcomms.new_comm(store=store, rank=r, size=n, name=name, timeout=timeout)
            out[r] = fn(c, r, n)
        except BaseException as e:  # handed to the test's thread
            errs[r] = e
        finally:
            if c is not None:
                c.finalize()
    ts = [threading.Thread(target=main, args=(r,), daemon=True) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    stuck = [r for r, t in enumerate(ts) if t.is_alive()]
    assert not stuck, f"rank threads {stuck} still running after 90 s"
    for e in errs:
        if e is not None:
            raise e
    return out


def data(rank, n, dtype, salt=0):
    return np.random.default_rng(100 * salt + rank).integers(0, 5, n).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce_numpy(dtype):
    def fn(c, r, n):
        a = data(r, 33, dtype)
        c.all_reduce(a, tcomms.ReduceOp.SUM)
        b = data(r, 33, dtype, 1)
        c.all_reduce(b, tcomms.ReduceOp.MAX, async_op=True, timeout=10).wait()
        return a, b
    res = run_ranks(3, fn)
    want_a = sum(data(r, 33, dtype).astype(np.int64) for r in range(3)).astype(dtype)
    want_b = np.maximum.reduce([data(r, 33, dtype, 1) for r in range(3)])
    for a, b in res:
        np.testing.assert_array_equal(a, want_a)
        np.testing.assert_array_equal(b, want_b)


def test_bfloat16_torch():
    torch = pytest.importorskip("torch")

    def fn(c, r, n):
        t = torch.full((17,), float(r + 1), dtype=torch.bfloat16)
        c.all_reduce(t)
        return t
    for t in run_ranks(2, fn):
        assert t.dtype == torch.bfloat16 and t.tolist() == [3.0] * 17


def test_reduce_ops_from_torch_and_by_name():
    """torch's ReduceOp numbers the reductions otherwise than tcomms (its AVG is 1, tcomms'
    PROD): each is mapped by its name (int() of it ran another reduction); a reduction
    tcomms lacks, or anything else, is refused naming what is accepted."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    R = dist.ReduceOp
    cases = [(R.SUM, [6, 6]), (R.AVG, [3, 3]), (R.PRODUCT, [8, 5]), (R.MIN, [2, 1]),
             (R.MAX, [4, 5]), (R(R.MAX), [4, 5]), ("max", [4, 5]), ("PRODUCT", [8, 5]),
             (tcomms.ReduceOp.MIN, [2, 1])]

    def fn(c, r, n):
        got = []
        for op, _ in cases:
            t = torch.tensor([2.0, 5.0]) if r == 0 else torch.tensor([4.0, 1.0])
            c.all_reduce(t, op)
            got.append(t.tolist())
        t = torch.tensor([1.0])
        with pytest.raises(ValueError, match="reduction PREMUL_SUM is not supported .*sum"):
            c.all_reduce(t, dist._make_nccl_premul_sum(2.0))
        with pytest.raises(ValueError, match="reduction median is not supported"):
            c.reduce(t, 0, "median")
        with pytest.raises(TypeError, match="reduction 3 .*expected a tcomms.ReduceOp"):
            c.reduce_scatter_single(t, torch.ones(n), 3)
        return got
    for got in run_ranks(2, fn):
        assert got == [want for _, want in cases]


def test_v_forms_and_rooted():
    def fn(c, r, n):
        counts = [q + 1 for q in range(n)]
        mine = np.full(r + 1, r, dtype=np.int32)
        ag = np.zeros(sum(counts), dtype=np.int32)
        c.all_gather_v(ag, mine, counts)
        rs_in = np.arange(sum(counts), dtype=np.float64) * (r + 1)
        rs = np.zeros(counts[r])
        c.reduce_scatter_v(rs, rs_in, counts)
        # all_to_all_v: rank r sends q + 1 elements valued 10 r + q to rank q
        send = np.concatenate([np.full(q + 1, 10 * r + q, dtype=np.int64) for q in range(n)])
        recv = np.zeros(n * (r + 1), dtype=np.int64)
        c.all_to_all_v_single(recv, send, [r + 1] * n, [q + 1 for q in range(n)])
        g = [np.zeros(2, dtype=np.int64) for _ in range(n)]
        c.gather(g, np.array([r, r], dtype=np.int64), root=1)
        s = np.zeros(2, dtype=np.int64)
        c.scatter(s, [np.array([q, -q], dtype=np.int64) for q in range(n)], root=0)
        b = np.array([r] * 3, dtype=np.float32)
        c.broadcast(b, root=n - 1)
        red = np.array([r + 1] * 3, dtype=np.int32)
        c.reduce(red, root=0, op=tcomms.ReduceOp.PROD)
        c.barrier()
        return ag, rs, recv, g, s, b, red
    n = 3
    res = run_ranks(n, fn)
    counts = [1, 2, 3]
    total = np.arange(6, dtype=np.float64) * sum(range(1, n + 1))
    for r, (ag, rs, recv, g, s, b, red) in enumerate(res):
        np.testing.assert_array_equal(ag, [0, 1, 1, 2, 2, 2])
        off = sum(counts[:r])
        np.testing.assert_array_equal(rs, total[off:off + counts[r]])
        np.testing.assert_array_equal(recv, np.repeat([10 * q + r for q in range(n)], r + 1))
        if r == 1:
            np.testing.assert_array_equal(np.stack(g), [[q, q] for q in range(n)])
        np.testing.assert_array_equal(s, [r, -r])
        np.testing.assert_array_equal(b, [n - 1] * 3)
        if r == 0:
            np.testing.assert_array_equal(red, [6] * 3)


def test_batch_split_stats_revoke():
    def fn(c, r, n):
        nxt, prv = (r + 1) % n, (r - 1) % n
        out = np.zeros(5, dtype=np.float32)
        c.batch_op_create().send(np.full(5, r, dtype=np.float32), nxt).recv(out, prv).issue()
        sub = c.split([2, 0])  # rank 1 is not in it and gets None
        subres = None
        if sub is not None:
            x = np.array([r], dtype=np.int64)
            sub.all_reduce(x)
            subres = (sub.get_rank(), sub.get_size(), int(x[0]))
            sub.finalize()
        stats = {s["coll"] for s in c.stats()}
        return out, subres, stats
    res = run_ranks(3, fn)
    for r, (out, subres, stats) in enumerate(res):
        np.testing.assert_array_equal(out, [(r - 1) % 3] * 5)
        assert subres == ({0: (1, 2, 2), 1: None, 2: (0, 2, 2)}[r])
        assert "send_recv" in stats or "all_reduce" in stats

    def revoke(c, r, n):
        if r == 0:
            return c.revoke()
        with pytest.raises(tcomms.RevokedError):
            c.all_reduce(np.zeros(1))  # rank 0 never joins: the notice ends it
        return True
    assert run_ranks(2, revoke) == [True, True]  # the notice goes through the store


def test_recv_from_any_source():
    """recv(t, src=None) takes whichever rank's message comes first and says which;
    blocking and several posted at once; refused inside a batch."""
    def fn(c, r, n):
        got = []
        for k in range(2):  # k 0: blocking receives, k 1: all posted at once
            if r != 0:
                c.send(np.full(4, 10 * r + k, dtype=np.int32), 0)
            else:
                outs = [np.zeros(4, dtype=np.int32) for _ in range(n - 1)]
                ws = [c.recv(o, None, async_op=k == 1) for o in outs]
                assert all(w.wait() for w in ws)
                got.append(sorted((w.source, int(o[0]), list(o).count(o[0])) for w, o in
                                  zip(ws, outs)))
            c.barrier()
        if r == 0:
            with pytest.raises(tcomms.UnsupportedError, match="any source.*batch"):
                c.batch_op_create().recv(np.zeros(1, dtype=np.int32), None).issue()
            w = c.recv(np.zeros(2), 1, async_op=True)
        if r == 1:
            c.send(np.ones(2), 0)
        if r == 0:
            w.wait()
            got.append(w.source)  # a receive from a given rank says it too
        return got
    res = run_ranks(3, fn)
    assert res[0] == [[(q, 10 * q, 4) for q in (1, 2)], [(q, 10 * q + 1, 4) for q in (1, 2)], 1]
    assert res[1] == [] and res[2] == []


def test_abort_and_wait_timeout():
    done = threading.Event()

    def fn(c, r, n):
        if r == 0:
            w = c.all_reduce(np.zeros(4), async_op=True)  # rank 1 never joins it
            assert w.wait(timeout=0.2) is False and not w.is_completed()
            c.abort()
            with pytest.raises(tcomms.AbortedError):
                w.wait()
            done.set()
        else:
            # rank 1 stays until then: its communicator's end would close its endpoint to rank
            # 0 (connected at creation for the heartbeats) and fail the all_reduce instead
            assert done.wait(30)
        return True
    assert run_ranks(2, fn) == [True, True]


def until_ended(c, works, secs):
    """_ext.Comm.wait_any until one of @p works ended or @p secs ran out: what ended."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        got = c._c.wait_any([w._w for w in works], max(1, int((end - time.monotonic()) * 1000)))
        if got:
            return got
    return []


def test_wait_any():
    """The asleep wait of the torch backend's completion thread: nothing when its timeout
    runs out first (in about that time, almost no CPU taken), the index of the work that
    ended (a later one before an earlier), wake() ending a wait at once, an ended work's
    error left for wait()."""
    joined, sent, done = threading.Event(), threading.Event(), threading.Event()

    def fn(c, r, n):
        x = np.full(1000, r + 1.0)
        if r == 0:
            c._enable_wait_asleep()
            c._enable_wait_asleep()  # again: nothing happens
            got = np.zeros(8)
            early = c.recv(got, 1, async_op=True)  # its send comes last
            w = c.all_reduce(x, async_op=True)
            t0, cpu0 = time.monotonic(), time.thread_time()
            assert until_ended(c, [early, w], 0.5) == []
            took, cpu = time.monotonic() - t0, time.thread_time() - cpu0
            assert 0.45 <= took < 5 and cpu < 0.25, (took, cpu)
            waker = threading.Timer(0.2, c._c.wake)
            waker.start()
            t0 = time.monotonic()
            assert c._c.wait_any([early._w, w._w], 20000) == []  # woken, nothing ended
            assert time.monotonic() - t0 < 10
            waker.join()
            joined.set()
            assert until_ended(c, [early, w], 30) == [1]  # the later one
            assert w.wait() is True and not early.is_completed()
            sent.set()
            assert until_ended(c, [early], 30) == [0]
            assert early.wait() is True and got.tolist() == [7.0] * 8
            lone = c.all_reduce(np.zeros(4), async_op=True, timeout=0.3)  # rank 1 never joins
            assert until_ended(c, [lone], 30) == [0]
            with pytest.raises(tcomms.TimeoutError, match="timed out after 300 ms"):
                lone.wait()
            done.set()
        else:
            assert joined.wait(30)
            c.all_reduce(x, async_op=True).wait()  # as rank 0's (a blocking one is not matched)
            assert sent.wait(30)
            c.send(np.full(8, 7.0), 0)
            assert done.wait(30)  # stays until rank 0's lone all_reduce timed out
        return x.tolist()
    assert run_ranks(2, fn) == [[3.0] * 1000, [3.0] * 1000]


def test_wait_any_ends_when_the_communicator_is_destroyed():
    """finalize() while a thread sleeps in wait_any on a receive that never comes (the
    torch backend's completion thread at interpreter exit): the wait raises, the
    communicator is destroyed only after it left (a segmentation fault before)."""
    gone = threading.Event()

    def fn(c, r, n):
        if r == 1:
            assert gone.wait(30)  # its end would fail rank 0's receive first
        else:
            c._enable_wait_asleep()
            w = c.recv(np.zeros(4), 1, async_op=True)
            raised = []

            def waiter():
                try:
                    until_ended(c, [w], 30)
                except tcomms.Error as e:
                    raised.append(e)
            t = threading.Thread(target=waiter)
            t.start()
            time.sleep(0.3)
            try:
                c.finalize()
                t.join(30)
            finally:
                gone.set()
            assert not t.is_alive() and len(raised) == 1
            assert raised[0].status_name == "TC_ERR_INVALID_STATE"
            assert "the communicator was destroyed" in str(raised[0])
        return True
    assert run_ranks(2, fn) == [True, True]


def test_is_completed_polled_while_the_store_is_called():
    """A thread polls ``is_completed()`` in a loop while the progress thread, under the
    world's lock, calls the Python store (the event poll of a store-started communicator,
    which needs the GIL): the poll must not wait for the lock holding the GIL (a deadlock:
    the run_ranks bound fails)."""
    def fn(c, r, n):
        x = np.full(4, r + 1.0)
        if r == 1:
            time.sleep(1.5)  # rank 0 polls meanwhile
        w = c.all_reduce(x, async_op=True)
        t0 = time.monotonic()
        while not w.is_completed():
            assert time.monotonic() - t0 < 30
        w.wait()
        return x.tolist()
    assert run_ranks(2, fn) == [[3.0] * 4, [3.0] * 4]


def test_errors_carry_status_and_detail():
    with pytest.raises(tcomms.InvalidArgumentError, match="rank 3 of size 2") as e:
        tcomms.new_comm(store=DictStore(), rank=3, size=2)
    assert e.value.status_name == "TC_ERR_INVALID_ARG" and e.value.status == -1

    class Broken(DictStore):
        def add(self, key, delta):
            raise OSError("the store is down")
    with pytest.raises(tcomms.Error, match="add callback failed on key 'tcomms/.*the store is "
                                           "down") as e:
        tcomms.new_comm(store=Broken(), rank=0, size=1)
    assert e.value.status_name == "TC_ERR_BOOTSTRAP"

    # a rank that never comes: a timeout naming it, in time
    import time
    t0 = time.monotonic()
    with pytest.raises(tcomms.TimeoutError, match="missing: 1"):
        tcomms.new_comm(store=DictStore(), rank=0, size=2, timeout=0.5)
    assert time.monotonic() - t0 < 5

    def bad_root(c, r, n):
        with pytest.raises(tcomms.InvalidArgumentError, match="root"):
            c.broadcast(np.zeros(2), root=7)
        with pytest.raises(TypeError, match="torch tensor or a NumPy array"):
            c.all_reduce([1, 2, 3])
        return True
    assert run_ranks(2, bad_root) == [True, True]


def test_bad_options_named():
    """hints and timeout of the wrong kind name the argument (AttributeError and a bare
    float conversion before); an algorithm that does not exist is an InvalidArgumentError
    (TC_ERR_NOT_FOUND was the base Error)."""
    def fn(c, r, n):
        x = np.ones(4, dtype=np.float32)
        with pytest.raises(TypeError, match="hints 5: expected a dict"):
            c.all_reduce(x, hints=5)
        with pytest.raises(TypeError, match="timeout 'a': expected seconds"):
            c.all_reduce(x, timeout="a")
        with pytest.raises(TypeError, match="timeout"):
            tcomms.new_comm(store=DictStore(), rank=0, size=1, timeout=[1])
        with pytest.raises(tcomms.InvalidArgumentError, match="opts->name is empty"):
            tcomms.new_comm(store=DictStore(), rank=0, size=1, name="")
        with pytest.raises(tcomms.InvalidArgumentError, match="no all_reduce algorithm named "
                                                              "'nonexistent'") as e:
            c.all_reduce(x, hints={"algo": "nonexistent"})
        assert e.value.status_name == "TC_ERR_NOT_FOUND"
        c.all_reduce(x)
        return x.tolist()
    assert run_ranks(2, fn) == [[2.0] * 4] * 2


def test_buffer_sizes_types_and_read_only_outputs():
    """Refused before any data moves, on every rank alike (the library would write past an
    output or read past an input: found by an independent checker)."""
    def fn(c, r, n):
        f32 = np.zeros(8, dtype=np.float32)
        cases = [
            (ValueError, "the output holds 8 elements, the operation needs 16",
             lambda: c.all_gather_single(f32, np.ones(8, dtype=np.float32))),
            (TypeError, "differ in element type",
             lambda: c.all_gather_single(np.zeros(16, dtype=np.float32), np.ones(8))),
            (ValueError, "the input holds 10 elements, the operation needs 16",
             lambda: c.reduce_scatter_single(f32, np.ones(10, dtype=np.float32))),
            (ValueError, "the output holds 2 elements, the operation needs 8",
             lambda: c.all_to_all_single(np.zeros(2, dtype=np.float32), f32)),
            (ValueError, "do not split into 2 equal blocks",
             lambda: c.all_to_all_single(np.zeros(7, dtype=np.float32),
                                         np.ones(7, dtype=np.float32))),
            (ValueError, "the output holds 3 elements, its blocks reach 8",
             lambda: c.all_gather_v(np.zeros(3, dtype=np.float32),
                                    np.ones(4, dtype=np.float32), [4, 4])),
            (ValueError, "the output holds 1 elements, its blocks reach 4",
             lambda: c.all_to_all_v_single(np.zeros(1, dtype=np.float32), f32, [2, 2],
                                           [4, 4])),
            (ValueError, "input_list must hold 2 tensors of 8 elements",
             lambda: c.scatter(f32, [np.ones(1, dtype=np.float32)] * 2, r)),  # its root
            (ValueError, "tensor_list must hold 2 tensors of 8 elements",
             lambda: c.all_gather([np.zeros(8, dtype=np.float32)], f32)),
            # count lists the library reads one entry per rank of (it read past short ones)
            (ValueError, "recv_counts has 1 entries; the communicator has 2 ranks",
             lambda: c.all_gather_v(f32, np.ones(4, dtype=np.float32), [4])),
            (ValueError, "displs has 3 entries",
             lambda: c.all_gather_v(f32, np.ones(4, dtype=np.float32), [4, 4], [0, 4, 8])),
            (ValueError, r"recv_counts\[0\] is -1, not a count",
             lambda: c.all_gather_v(f32, np.ones(4, dtype=np.float32), [-1, 4])),
            (ValueError, "recv_counts has 1 entries",
             lambda: c.reduce_scatter_v(f32, np.ones(8, dtype=np.float32), [8])),
            (ValueError, "input_split_sizes has 1 entries",
             lambda: c.all_to_all_v_single(f32, f32, [4, 4], [8])),
            (ValueError, r"output_split_sizes\[1\] is 2.5, not a count",
             lambda: c.all_to_all_v_single(f32, f32, [4, 2.5], [4, 4])),
            (ValueError, "input_list holds 1 tensors; the communicator has 2 ranks",
             lambda: c.all_to_all([f32, f32], [f32])),
            # element types of list forms (a float64 list took float32 data, converted)
            (TypeError, r"tensor_list\[0\] is float64, the operation moves float32",
             lambda: c.all_gather([np.zeros(8), np.zeros(8)], f32)),
            (TypeError, r"output_list\[1\] is float64",
             lambda: c.all_to_all([f32, np.zeros(8)], [f32, f32])),
            (ValueError, "timeout -5 is negative", lambda: c.barrier(timeout=-5)),
            (ValueError, "timeout nan is not a finite number",
             lambda: c.barrier(timeout=float("nan"))),
            (ValueError, "timeout inf is not a finite",
             lambda: c.barrier(timeout=float("inf"))),
            (ValueError, r"timeout 1e\+300 is not a finite", lambda: c.barrier(timeout=1e300)),
            (ValueError, "allocate_window: -5 bytes is negative",
             lambda: c.allocate_window(-5, np.uint8)),
            (ValueError, "not a strided, conjugate or negative view",
             lambda: c.new_window(np.zeros(8)[::2])),
        ]
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:  # an expanded output: refused before the data moved
            cases.append((ValueError, "has elements sharing memory",
                          lambda: c.broadcast(torch.zeros(1).expand(4), 0)))
            cases.append((ValueError, "has elements sharing memory",
                          lambda: c.all_reduce(torch.zeros(1, 3).expand(2, 3))))
        ro = np.frombuffer(bytes(32), dtype=np.float64)
        cases.append((ValueError, "read-only", lambda: c.broadcast(ro, 0)))
        cases.append((ValueError, "read-only", lambda: c.all_reduce(ro)))
        for exc, words, call in cases:
            with pytest.raises(exc, match=words):
                call()
        assert bytes(ro.tobytes()) == bytes(32)
        x = np.full(4, r + 1.0)  # the communicator still works
        c.all_reduce(x)
        return x
    for x in run_ranks(2, fn):
        assert (x == 3.0).all()


def test_is_completed_copies_back():
    """A non-contiguous output is copied back by the time is_completed() says True
    (it was copied only by wait())."""
    def fn(c, r, n):
        torch = pytest.importorskip("torch")
        t = torch.ones(4, 4).t()
        w = c.all_reduce(t, async_op=True)
        deadline = time.monotonic() + 30
        while not w.is_completed():
            assert time.monotonic() < deadline
            time.sleep(0.001)
        return float(t.sum())
    assert run_ranks(2, fn) == [32.0, 32.0]


def test_conjugate_and_negative_views():
    """torch's conjugate and negative views (t.conj(), t.conj().imag) keep the memory and a
    bit: an input is sent as its values, an output receives values (the raw memory was
    sent and written, the conjugate bit ignored)."""
    torch = pytest.importorskip("torch")
    base = torch.tensor([1 + 2j, 3 - 4j, -5 + 0.5j], dtype=torch.complex64)

    def fn(c, r, n):
        got = torch.zeros(3, dtype=torch.complex64)
        out = torch.zeros(3, dtype=torch.complex64).conj()  # receives values through the bit
        neg = torch.zeros(3, dtype=torch.complex64).conj().imag  # a negative view
        if r == 0:
            c.send(base.conj(), 1)
            c.send(base.conj(), 1)
            c.send(base.conj().imag, 1)
            c.all_gather_single(torch.zeros(6), base.conj().imag)  # the input's values
            return None
        c.recv(got, 0)
        c.recv(out, 0)
        c.recv(neg, 0)
        all_in = torch.zeros(6)
        c.all_gather_single(all_in, base.imag)
        return got, out, neg, all_in
    res = run_ranks(2, fn)[1]
    got, out, neg, all_in = res
    assert torch.equal(got, base.conj().resolve_conj())
    assert out.is_conj() and torch.equal(out.resolve_conj(), base.conj().resolve_conj())
    assert torch.equal(neg.resolve_neg(), -base.imag)
    assert torch.equal(all_in, torch.cat([-base.imag, base.imag]))


def test_integer_avg_wraps_as_documented():
    """avg on an integer type sums in that type (wrapping) and divides truncating, as
    dtype.h says: uint8 255 and 255 give 127, int32 1 and 2 give 1."""
    def fn(c, r, n):
        u = np.array([255, 200], dtype=np.uint8)
        c.all_reduce(u, tcomms.ReduceOp.AVG)
        i = np.array([1 + r], dtype=np.int32)
        c.all_reduce(i, tcomms.ReduceOp.AVG)
        return u.tolist(), i.tolist()
    assert run_ranks(2, fn) == [([127, 72], [1])] * 2


def test_batch_refused_while_another_thread_is_inside():
    """A batch issued while another thread is inside a call on the communicator: refused, and
    dropped (the C batch stayed open after the refusal and every later call on the
    communicator, from any thread, was refused)."""
    def fn(c, r, n):
        if r == 1:
            time.sleep(1.0)
            c.send(np.full(4, 1.0), 0)
            got = np.zeros(2)
            c.recv(got, 0)  # the batch's send, issued again once the communicator is free
            c.barrier()
            return got.tolist()
        x = np.zeros(4)
        inside = threading.Thread(target=lambda: c.recv(x, 1))  # inside a call for ~1 s
        inside.start()
        time.sleep(0.3)
        batch = c.batch_op_create().send(np.full(2, 5.0), 1)
        with pytest.raises(tcomms.Error, match="another thread is inside a call"):
            batch.issue()
        inside.join()
        c.batch_op_create().send(np.full(2, 5.0), 1).issue()
        c.barrier()
        return x.tolist()
    assert run_ranks(2, fn) == [[1.0] * 4, [5.0, 5.0]]


def test_name_thread_cut_to_the_kernels_length():
    """The backend names its threads (tc-py-complete, ...) through _ext.name_thread; a name
    longer than the kernel's 15 bytes is cut, not refused."""
    seen = []

    def run():
        tcomms._ext.name_thread("tc-a-name-longer-than-fifteen")
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
            seen.append(f.read().strip())
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == ["tc-a-name-longe"]
    with pytest.raises(TypeError):
        tcomms._ext.name_thread(7)
