"""One-sided windows between the torchrun processes, on the tcomms group's
communicator: every element a put or get moved is compared with what the
origin wrote (recomputed here from its rank), signals are counted, misuse
raises the package's exceptions with the library's message. Every wait has a
timeout."""
import numpy as np
import pytest
import torch
import torch.distributed as dist

import tcomms
from tcomms.torch import backend_of

T = 30  # seconds: the bound of every operation and wait here


@pytest.fixture
def comm():
    return backend_of().comm()


def data(rank, n, dtype, salt=0):
    """Rank @p rank's data: distinct small integers (exact in every type)."""
    g = torch.Generator().manual_seed(1000 * salt + rank)
    return torch.randint(-60, 60, (n,), generator=g).to(dtype)


def as_numpy(t, dtype):
    return t.to(torch.float64).numpy().astype(dtype)


FILL = -99  # what no data() value is


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int8])
@pytest.mark.parametrize("async_op", [False, True])
def test_put_ring_torch(comm, rank, size, dtype, async_op):
    n = 37
    buf = torch.full((n * size,), FILL, dtype=dtype)
    with comm.new_window(buf, timeout=T) as win:
        assert win.size() == buf.numel() * buf.element_size()
        right = (rank + 1) % size
        src = data(rank, n, dtype)
        w = win.put(src, right, offset=rank * n, async_op=async_op, timeout=T)
        if async_op:
            assert w.wait(timeout=T)
        win.flush(right, timeout=T)
        comm.barrier(timeout=T)
        left = (rank - 1) % size
        want = torch.full((n * size,), FILL, dtype=dtype)
        want[left * n:(left + 1) * n] = data(left, n, dtype)
        for i in range(n * size):  # element by element
            assert buf[i].item() == want[i].item(), f"element {i}: {buf[i]} != {want[i]}"
        comm.barrier(timeout=T)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "float64"])
def test_get_from_every_peer_numpy(comm, rank, size, dtype):
    n = 1000
    mine = as_numpy(data(rank, n, torch.float64, 2), dtype) if dtype != "uint8" else \
        (np.arange(n) * (rank + 3)).astype(np.uint8)

    def expected(q):
        return as_numpy(data(q, n, torch.float64, 2), dtype) if dtype != "uint8" else \
            (np.arange(n) * (q + 3)).astype(np.uint8)
    with comm.new_window(mine, timeout=T) as win:
        comm.barrier(timeout=T)
        for q in range(size):
            dst = np.full(n - 10, 7, dtype=dtype)
            win.get(dst, q, offset=10, async_op=(q % 2 == 1), timeout=T).wait(timeout=T)
            want = expected(q)[10:]
            mism = [i for i in range(n - 10) if dst[i] != want[i]]
            assert not mism, f"from rank {q}: elements {mism[:10]} differ"
        comm.barrier(timeout=T)


def test_get_into_non_contiguous(comm, rank, size):
    src = torch.arange(64, dtype=torch.float32) + 100 * rank
    with comm.new_window(src, timeout=T) as win:
        comm.barrier(timeout=T)
        peer = (rank + 1) % size
        dst = torch.zeros(8, 4)[:, 1]  # a column: strided
        win.get(dst, peer, offset=16, timeout=T)
        assert dst.tolist() == [16.0 + i + 100 * peer for i in range(8)]
        comm.barrier(timeout=T)


def test_put_signal_counts_and_order(comm, rank, size):
    """Every rank sends k put_signals to each other rank, each into its own
    block; the target waits for k*(size-1) on slot 3 and then must see every
    block (a signal is applied only after its data)."""
    k, n = 5, 256
    buf = torch.full((size * k * n,), FILL, dtype=torch.float32)
    with comm.new_window(buf, timeout=T) as win:
        comm.barrier(timeout=T)
        works = []
        for j in range(k):
            for q in range(size):
                if q != rank:
                    works.append(win.put_signal(data(rank, n, torch.float32, j), q,
                                                offset=(rank * k + j) * n, slot=3, value=1,
                                                async_op=True, timeout=T))
        seen = win.wait_signal(3, tcomms.Cmp.GE, k * (size - 1), timeout=T)
        assert seen == k * (size - 1)
        for q in range(size):
            for j in range(k):
                blk = buf[(q * k + j) * n:(q * k + j + 1) * n]
                want = torch.full((n,), FILL, dtype=torch.float32) if q == rank else \
                    data(q, n, torch.float32, j)
                assert torch.equal(blk, want), f"block of rank {q}, put {j}"
        for w in works:
            assert w.wait(timeout=T)
        win.flush(timeout=T)
        comm.barrier(timeout=T)
        assert win.read_signal(3) == k * (size - 1)  # nothing more came


def test_signal_set_add_and_wait_forms(comm, rank, size):
    buf = np.zeros(4, dtype=np.int64)
    with comm.new_window(buf, timeout=T) as win:
        right, left = (rank + 1) % size, (rank - 1) % size
        win.signal(right, 7, 40 + rank, tcomms.SignalOp.SET, timeout=T)
        win.signal(right, 7, 2, tcomms.SignalOp.ADD, async_op=True, timeout=T).wait(timeout=T)
        assert win.wait_signal(7, tcomms.Cmp.EQ, 42 + left, timeout=T) == 42 + left
        w = win.wait_signal(7, tcomms.Cmp.GT, 41 + left, timeout=T, async_op=True)
        assert w.wait(timeout=T) and w.value == 42 + left
        # nobody signals slot 9: a bounded wait that times out, naming the slot
        with pytest.raises(tcomms.TimeoutError, match="slot 9 is 0 .* waiting for it to be"):
            win.wait_signal(9, tcomms.Cmp.GE, 1, timeout=0.2)
        w = win.wait_signal(9, tcomms.Cmp.NE, 0, timeout=0.2, async_op=True)
        with pytest.raises(tcomms.TimeoutError, match="slot 9"):
            w.wait(timeout=T)
        comm.barrier(timeout=T)
        # the window still works after the timeouts
        win.signal(right, 9, 5, tcomms.SignalOp.SET, timeout=T)
        assert win.wait_signal(9, tcomms.Cmp.EQ, 5, timeout=T) == 5
        comm.barrier(timeout=T)


def test_misuse_raises_with_the_library_message(comm, rank, size):
    buf = torch.zeros(16, dtype=torch.float32)
    with comm.new_window(buf, timeout=T) as win:
        peer = (rank + 1) % size
        with pytest.raises(tcomms.InvalidArgumentError,
                           match=r"tc_win_put: 20 bytes at offset 48 are beyond rank "
                                 rf"{peer}'s window of 64 bytes"):
            win.put(torch.ones(5), peer, offset=12, timeout=T)
        with pytest.raises(tcomms.InvalidArgumentError, match="beyond rank"):
            win.get(torch.ones(1), peer, offset=16, timeout=T)
        with pytest.raises(tcomms.InvalidArgumentError, match=f"peer {size + 2} is not a rank"):
            win.put(torch.ones(1), size + 2, timeout=T)
        with pytest.raises(tcomms.InvalidArgumentError, match="signal slot 64 is not in"):
            win.signal(peer, tcomms.SIGNAL_SLOTS, timeout=T)
        with pytest.raises(tcomms.InvalidArgumentError, match="negative"):
            win.put(torch.ones(1), peer, offset=-1)
        with pytest.raises(TypeError, match="a buffer of float64 for a window of "
                                            "float32"):  # it wrote 8-byte elements
            win.put(torch.ones(2, dtype=torch.float64), peer, timeout=T)
        with pytest.raises(TypeError, match="int32"):
            win.get(np.zeros(1, dtype=np.int32), peer, timeout=T)
        comm.barrier(timeout=T)
        assert buf.tolist() == [0.0] * 16  # nothing was written
        win.put(torch.zeros(0), peer, offset=16, timeout=T)  # zero bytes at the end: allowed
        comm.barrier(timeout=T)
    with pytest.raises(tcomms.Error, match="destroyed"):
        win.put(torch.ones(1), peer)
    win.destroy()  # idempotent
    for view in (torch.zeros(4, dtype=torch.complex64).conj(), torch.zeros(4).t()[::2]):
        with pytest.raises(ValueError, match="new_window needs a contiguous tensor"):
            comm.new_window(view, timeout=T)  # refused before any collective: no rank waits


def test_allocate_window_and_map_remote(comm, rank, size):
    win = comm.allocate_window(64 * 2, torch.bfloat16, timeout=T)
    try:
        assert win.buffer.dtype == torch.bfloat16 and win.buffer.numel() == 64
        assert win.buffer.tolist() == [0.0] * 64  # zeroed
        win.buffer[:] = torch.arange(64, dtype=torch.bfloat16) + rank
        comm.barrier(timeout=T)
        peer = (rank + 1) % size
        got = torch.zeros(64, dtype=torch.bfloat16)
        win.get(got, peer, timeout=T)
        assert got.tolist() == (torch.arange(64, dtype=torch.bfloat16) + peer).tolist()
        try:
            remote = win.map_remote(peer)
        except tcomms.UnsupportedError as e:  # TC_SHM=0 or another node
            pytest.skip(f"no shared memory to rank {peer}: {e}")
        assert remote.tolist() == got.tolist()
        comm.barrier(timeout=T)
    finally:
        win.destroy()
    arr = comm.allocate_window(24, np.float64, timeout=T)
    with arr:
        assert isinstance(arr.buffer, np.ndarray) and arr.buffer.shape == (3,)
        arr.put(np.array([1.5, 2.5], dtype=np.float64), (rank + 1) % size, offset=1, timeout=T)
        arr.flush(async_op=True, timeout=T).wait(timeout=T)
        comm.barrier(timeout=T)
        assert arr.buffer.tolist() == [0.0, 1.5, 2.5]
        comm.barrier(timeout=T)
