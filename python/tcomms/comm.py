"""The torchcomms-shaped communicator over tcomms' C API.

Every operation takes ``async_op``, ``timeout`` (seconds or a timedelta; None:
the communicator's) and ``hints`` (a dict or "k=v,...": ``algo`` for a
collective; sends, receives and batches take none), and returns a
:class:`Work` (with ``async_op=False`` an already completed one). Tensors are
used in place; see _buffers for non-contiguous ones.
"""
import atexit
import collections
import collections.abc
import enum
import warnings
import weakref
from datetime import timedelta

from . import _buffers as B
from . import _ext

BOOTSTRAPS = {"auto": 0, "pmix": 1, "self": 2, "env": 3}


class ReduceOp(enum.IntEnum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4
    BAND = 5
    BOR = 6
    BXOR = 7


_OP_NAMES = {"sum": ReduceOp.SUM, "prod": ReduceOp.PROD, "product": ReduceOp.PROD,
             "min": ReduceOp.MIN, "max": ReduceOp.MAX, "avg": ReduceOp.AVG,
             "band": ReduceOp.BAND, "bor": ReduceOp.BOR, "bxor": ReduceOp.BXOR}
_OPS_ACCEPTED = ("a tcomms.ReduceOp, a torch.distributed.ReduceOp, or a name: sum, prod "
                 "(product), min, max, avg, band, bor, bxor")


# On booleans (bytes 0 and 1) a sum is a logical or and a product a logical and, as torch's
# gloo backend computes them: the bytes' max and min, which stay 0 or 1 (a byte sum wraps).
_BOOL_OPS = {ReduceOp.SUM: ReduceOp.MAX, ReduceOp.PROD: ReduceOp.MIN}


def _redop(op, buf=None):
    """@p op as a tcomms.ReduceOp, from a tcomms.ReduceOp, a torch.distributed.ReduceOp (or
    its RedOpType), or a name ("sum", "MAX", "product"). Not a bare int: torch numbers the
    reductions otherwise (its AVG is 1, tcomms' PROD). With @p buf (a _buffers.Buf), the
    reduction its elements take: a logical one on booleans."""
    code = _redop_code(op)
    if buf is None or not B.is_bool(buf.obj):
        return code
    if code == ReduceOp.AVG:
        raise ValueError(f"tcomms: no average of {buf.obj.dtype} elements (sum: logical or, "
                         "prod: logical and, min, max, band, bor, bxor)")
    return _BOOL_OPS.get(code, code)


def _redop_code(op):
    if isinstance(op, ReduceOp):
        return op
    name = op if isinstance(op, str) else None
    if type(op).__module__.startswith("torch"):
        name = getattr(getattr(op, "op", op), "name", None)  # a ReduceOp holds a RedOpType
    if not isinstance(name, str):
        raise TypeError(f"tcomms: reduction {op!r} ({type(op).__name__}): expected "
                        f"{_OPS_ACCEPTED}")
    code = _OP_NAMES.get(name.lower())
    if code is None:
        raise ValueError(f"tcomms: reduction {name} is not supported (accepted: "
                         f"{_OPS_ACCEPTED})")
    return code


def _ms(timeout):
    """@p timeout (seconds or a timedelta; None: the communicator's) in milliseconds."""
    if timeout is None:
        return 0
    try:
        s = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    except (TypeError, ValueError):
        raise TypeError(f"tcomms: timeout {timeout!r}: expected seconds (a number), a "
                        "timedelta, or None (the communicator's own)") from None
    if s < 0:
        raise ValueError(f"tcomms: timeout {timeout!r} is negative (None: the "
                         "communicator's own)")
    if not s * 1000 < 2**63:  # NaN and infinity too: every wait is bounded
        raise ValueError(f"tcomms: timeout {timeout!r} is not a finite number of seconds "
                         "that fits in 64-bit milliseconds (None: the communicator's own)")
    return max(1, int(s * 1000))


def _hints(hints):
    if hints is None or isinstance(hints, str):
        return hints
    if not isinstance(hints, collections.abc.Mapping):
        raise TypeError(f"tcomms: hints {hints!r}: expected a dict ({{\"algo\": \"ring\"}}), "
                        "a \"k=v,...\" string, or None")
    return ",".join(f"{k}={v}" for k, v in hints.items())


class Work:
    """An operation in flight (or done). ``wait`` raises its error."""

    __slots__ = ("_w", "_post", "_done", "_src", "_drop", "_err")

    def __init__(self, w, post, src=None):
        self._w = w          # _ext.Work, or None when the call was blocking
        self._post = post    # Bufs / callables owed a copy back
        self._src = src      # a receive's source rank; -1: from any source, known once done
        self._drop = None    # where it goes when dropped unfinished (Comm._track)
        self._err = None     # the copy back's error, raised by every wait
        self._done = w is None
        if self._done:
            self._finish()

    def __del__(self):
        # dropped before it ended: the communicator keeps the operation and its buffers (freeing
        # the _ext.Work would wait for the operation to end)
        if not self._done and self._drop is not None:
            self._drop.append((self._w, self._post))

    def _finish(self):
        for p in self._post:
            p() if callable(p) else p.finish()
        self._post = ()

    def wait(self, timeout=None):
        """Wait until done, at most ``timeout`` (None: the operation's own
        timeout). True when done; False when ``timeout`` ran out first."""
        if not self._done:
            try:
                if not self._w.wait(-1 if timeout is None else _ms(timeout)):
                    return False
            except _ext.Error:
                self._drop = None  # it ended, its error seen: nothing to keep or report if dropped
                raise
            self._done = True
            try:
                self._finish()
            except Exception as e:  # noqa: BLE001 - a copy back that failed: every wait says so
                self._err = e
        if self._err is not None:
            raise self._err
        return True

    def is_completed(self):
        """Whether it ended; ended well, its non-contiguous outputs are copied back
        by then, as by wait(). An error stays for wait() to raise."""
        if self._done:
            return True
        if not self._w.is_completed():
            return False
        try:
            self.wait()
        except Exception:  # noqa: BLE001 - raised again by wait()
            pass
        return True

    @property
    def source(self):
        """The rank a receive's message came from (for ``recv(t, src=None)``, once
        ``wait()`` returned True; None before); None for other operations."""
        if self._src is None or self._src >= 0:
            return self._src
        return self._w.source() if self._done else None


class SignalWork(Work):
    """The Work of ``Window.wait_signal(async_op=True)``: ``value`` is the
    slot's value that satisfied the wait, once ``wait()`` returned True."""

    __slots__ = ()

    @property
    def value(self):
        return self._w.value if self._done else None


class _Dropped(collections.deque):
    """The operations of a communicator whose works were dropped before they ended, each
    (_ext.Work, what it owes when done), kept with their buffers until they end, as torch
    lets an isend's work be dropped. Looked at by each later call on the communicator (those
    ended are freed, their outputs copied back) and ended at finalize. A deque: works are
    dropped from any thread (a garbage collection), each append and pop atomic."""

    def reap(self):
        for _ in range(len(self)):
            w, post = self.popleft()
            if not w.is_completed():
                self.append((w, post))
                continue
            try:
                w.wait()
            except _ext.Error as e:  # nobody waits for it: said once, as a warning
                warnings.warn(f"tcomms: an operation whose work was dropped failed: {e}",
                              RuntimeWarning, stacklevel=3)
                continue
            for p in post:
                p() if callable(p) else p.finish()


class BatchOp:
    """Sends and receives issued together: ``comm.batch_op_create()``, then
    ``.send(t, dst)``, ``.recv(t, src)`` and ``.issue()``."""

    def __init__(self, comm):
        self._comm = comm
        self._ops = []

    def send(self, tensor, dst):
        self._ops.append(("send", tensor, dst))
        return self

    def recv(self, tensor, src):
        # src None (any source) is refused by the issue: receives from any source go alone
        self._ops.append(("recv", tensor, _ext.TC_ANY_SOURCE if src is None else src))
        return self

    def issue(self, async_op=False, timeout=None, hints=None):
        c = self._comm._c
        bufs, post = [], []
        c.batch_begin()
        try:
            for kind, t, peer in self._ops:
                b = B.Buf(t, kind == "recv")
                bufs.append(b)
                post.append(b)
                getattr(c, kind)(b.addr, b.count, b.code, peer, 0, None, False, None)
            w = self._comm._run(c.batch_end, bufs, post, async_op, timeout, hints)
        except BaseException:
            # nothing issued: the batch is dropped, not left open (tc_batch_end refused while
            # another thread is inside a call keeps it) nor issued in part
            try:
                c.batch_cancel()
            except _ext.Error:
                pass  # tc_batch_end ended it
            raise
        self._ops = []
        return w


_live = weakref.WeakSet()


@atexit.register
def _finalize_all():
    """Destroy the communicators still alive before the interpreter goes: their
    progress threads may call into a Python store."""
    for comm in list(_live):
        comm.finalize()


class Comm:
    """A tcomms communicator (create with :func:`new_comm`)."""

    def __init__(self, c):
        self._c = c
        self._windows = set()  # alive windows: destroyed by finalize at the latest
        self._dropped = _Dropped()
        _live.add(self)
        info = c.info()
        self._rank, self._size, self._name = info["rank"], info["size"], info["name"]

    # ---- facts
    def get_rank(self):
        return self._rank

    def get_size(self):
        return self._size

    def get_name(self):
        return self._name

    def info(self):
        return self._c.info()

    # ---- collectives
    def all_reduce(self, tensor, op=ReduceOp.SUM, async_op=False, timeout=None, hints=None):
        b = B.Buf(tensor, True, reducing=True)
        return self._run(self._c.all_reduce, [b], [b], async_op, timeout, hints,
                    b.addr, b.addr, b.count, b.code, _redop(op, b))

    def reduce(self, tensor, root, op=ReduceOp.SUM, async_op=False, timeout=None, hints=None):
        b = B.Buf(tensor, True, reducing=True)
        return self._run(self._c.reduce, [b], [b], async_op, timeout, hints,
                    b.addr, b.addr, b.count, b.code, _redop(op, b), root)

    def broadcast(self, tensor, root, async_op=False, timeout=None, hints=None):
        b = B.Buf(tensor, True)
        return self._run(self._c.broadcast, [b], [b], async_op, timeout, hints,
                    b.addr, b.count, b.code, root)

    def all_gather_single(self, output, input, async_op=False, timeout=None, hints=None):
        i, o = B.Buf(input, False), B.Buf(output, True)
        B.check_same_type(i, o)
        B.check_fits("the output", o, i.count // i.scale * self._size)
        B.unalias(i, o, i.addr == o.addr + self._rank * B.nbytes(i))
        return self._run(self._c.all_gather, [i, o], [o], async_op, timeout, hints,
                    i.addr, o.addr, i.count, i.code, 0)

    def all_gather(self, tensor_list, tensor, async_op=False, timeout=None, hints=None):
        B.check_list("tensor_list", tensor_list, self._size, B.numel(tensor), tensor)
        flat = B.empty_like(tensor, B.numel(tensor) * len(tensor_list))
        n = B.numel(tensor)

        def scatter_out():
            for k, t in enumerate(tensor_list):
                B.copy_into(t, flat[k * n:(k + 1) * n])
        w = self.all_gather_single(flat, tensor, async_op, timeout, hints)
        return self._then(w, scatter_out)

    def all_gather_v(self, output, input, recv_counts, displs=None, async_op=False,
                     timeout=None, hints=None):
        i, o = B.Buf(input, False), B.Buf(output, True)
        B.check_same_type(i, o)
        recv_counts, displs = B.check_extent("the output", o, recv_counts, displs, self._size,
                                             ("recv_counts", "displs"))
        B.unalias(i, o, i.addr == o.addr + self._block(recv_counts, displs) * B.elem_bytes(o))
        s = i.scale
        return self._run(self._c.all_gather_v, [i, o], [o], async_op, timeout, hints,
                    i.addr, i.count, o.addr, [c * s for c in recv_counts],
                    None if displs is None else [d * s for d in displs], i.code)

    def reduce_scatter_single(self, output, input, op=ReduceOp.SUM, async_op=False,
                              timeout=None, hints=None):
        i, o = B.Buf(input, False, True), B.Buf(output, True, True)
        B.check_same_type(i, o)
        B.check_fits("the input", i, o.count * self._size)
        B.unalias(i, o, o.addr == i.addr + self._rank * B.nbytes(o))
        return self._run(self._c.reduce_scatter, [i, o], [o], async_op, timeout, hints,
                    i.addr, o.addr, o.count, o.code, _redop(op, o))

    def reduce_scatter(self, output, input_list, op=ReduceOp.SUM, async_op=False,
                       timeout=None, hints=None):
        flat = B.contiguous(_cat(input_list))
        return self.reduce_scatter_single(output, flat, op, async_op, timeout, hints)

    def reduce_scatter_v(self, output, input, recv_counts, displs=None, op=ReduceOp.SUM,
                         async_op=False, timeout=None, hints=None):
        i, o = B.Buf(input, False, True), B.Buf(output, True, True)
        B.check_same_type(i, o)
        recv_counts, displs = B.check_extent("the input", i, recv_counts, displs, self._size,
                                             ("recv_counts", "displs"))
        B.check_fits("the output", o, recv_counts[self._rank])
        B.unalias(i, o, o.addr == i.addr + self._block(recv_counts, displs) * B.elem_bytes(i))
        return self._run(self._c.reduce_scatter_v, [i, o], [o], async_op, timeout, hints,
                    i.addr, o.addr, list(recv_counts), displs, o.code, _redop(op, o))

    def all_to_all_single(self, output, input, async_op=False, timeout=None, hints=None):
        i, o = B.Buf(input, False), B.Buf(output, True)
        B.check_same_type(i, o)
        if i.count % (self._size * i.scale):
            raise ValueError(f"tcomms: the input's {i.count // i.scale} elements do not split "
                             f"into {self._size} equal blocks")
        B.check_fits("the output", o, i.count // i.scale)
        B.unalias(i, o, i.addr == o.addr)
        return self._run(self._c.all_to_all, [i, o], [o], async_op, timeout, hints,
                    i.addr, o.addr, i.count // self._size, i.code, 0)

    def all_to_all_v_single(self, output, input, output_split_sizes, input_split_sizes,
                            async_op=False, timeout=None, hints=None):
        """Split sizes in elements (torch's convention: of the flattened tensors)."""
        i, o = B.Buf(input, False), B.Buf(output, True)
        B.check_same_type(i, o)
        input_split_sizes, _ = B.check_extent("the input", i, input_split_sizes, None,
                                              self._size, ("input_split_sizes", None))
        output_split_sizes, _ = B.check_extent("the output", o, output_split_sizes, None,
                                               self._size, ("output_split_sizes", None))
        B.unalias(i, o, False)  # the library's all_to_all_v is never in place
        s = i.scale
        return self._run(self._c.all_to_all_v, [i, o], [o], async_op, timeout, hints,
                    i.addr, [c * s for c in input_split_sizes], None, o.addr,
                    [c * s for c in output_split_sizes], None, i.code)

    def all_to_all(self, output_list, input_list, async_op=False, timeout=None, hints=None):
        for what, lst in (("output_list", output_list), ("input_list", input_list)):
            if len(lst) != self._size:
                raise ValueError(f"tcomms: {what} holds {len(lst)} tensors; the communicator "
                                 f"has {self._size} ranks")
            for k, t in enumerate(lst):
                if B.type_name(t.dtype) != B.type_name(input_list[0].dtype):
                    raise TypeError(f"tcomms: {what}[{k}] is {B.type_name(t.dtype)}, "
                                    f"input_list[0] is {B.type_name(input_list[0].dtype)}")
        flat_in = B.contiguous(_cat(input_list))
        out_counts = [B.numel(t) for t in output_list]
        flat_out = B.empty_like(output_list[0], sum(out_counts))

        def scatter_out():
            off = 0
            for t, n in zip(output_list, out_counts):
                B.copy_into(t, flat_out[off:off + n])
                off += n
        w = self.all_to_all_v_single(flat_out, flat_in, out_counts,
                                     [B.numel(t) for t in input_list], async_op, timeout, hints)
        return self._then(w, scatter_out)

    def gather(self, output_list, tensor, root, async_op=False, timeout=None, hints=None):
        i = B.Buf(tensor, False)
        n = B.numel(tensor)
        if self._rank == root:
            B.check_list("output_list", output_list, self._size, n, tensor)
        flat = B.empty_like(tensor, n * self._size) if self._rank == root else None
        o = B.Buf(flat, True) if flat is not None else None
        post = []
        if o is not None:
            post.append(lambda: [B.copy_into(t, flat[k * n:(k + 1) * n])
                                 for k, t in enumerate(output_list)])
        return self._run(self._c.gather, [i] + ([o] if o else []), post, async_op, timeout, hints,
                    i.addr, o.addr if o else 0, i.count, i.code, root)

    def scatter(self, tensor, input_list, root, async_op=False, timeout=None, hints=None):
        o = B.Buf(tensor, True)
        if self._rank == root:
            B.check_list("input_list", input_list, self._size, o.count // o.scale, tensor)
        i = B.Buf(B.contiguous(_cat(input_list)), False) if self._rank == root else None
        return self._run(self._c.scatter, [o] + ([i] if i else []), [o], async_op, timeout, hints,
                    i.addr if i else 0, o.addr, o.count, o.code, root)

    def barrier(self, async_op=False, timeout=None, hints=None):
        return self._run(self._c.barrier, [], [], async_op, timeout, hints)

    # ---- point to point
    def send(self, tensor, dst, async_op=False, timeout=None, hints=None):
        b = B.Buf(tensor, False)
        return self._run(self._c.send, [b], [], async_op, timeout, hints, b.addr, b.count,
                         b.code, dst)

    def recv(self, tensor, src=None, async_op=False, timeout=None, hints=None):
        """Receive into @p tensor from rank @p src, or (None) from whichever rank's
        message comes first: the returned work's ``source`` says which."""
        b = B.Buf(tensor, True)
        peer = _ext.TC_ANY_SOURCE if src is None else src
        work = self._run(self._c.recv, [b], [b], async_op, timeout, hints, b.addr, b.count, b.code,
                    peer, src=peer)
        if src is None and not async_op:
            work.wait()  # done already: the data and its source
        return work

    def batch_op_create(self):
        return BatchOp(self)

    # ---- one-sided: windows (tcomms.window)
    def new_window(self, buf, timeout=None):
        """A window over @p buf, a contiguous CPU tensor or NumPy array, used in
        place (collective). See :class:`tcomms.Window`."""
        from .window import new_window
        return new_window(self, buf, timeout)

    def allocate_window(self, nbytes, dtype="uint8", timeout=None):
        """A window over @p nbytes the library allocates, zeroed (in shared
        memory for same-node peers), seen as elements of @p dtype (a torch
        dtype: ``window.buffer`` is a tensor; else a NumPy array). Collective."""
        from .window import allocate_window
        return allocate_window(self, nbytes, dtype, timeout)

    def _enable_wait_asleep(self):
        """Let a thread sleep until one of this communicator's works ends (_ext.Comm.wait_any):
        a hook on it, which makes each operation on the small-message path read the clock
        twice (so not by default)."""
        self._c.enable_wait_done()

    def _adopt(self, window):
        self._windows.add(window)
        return window

    # ---- communicators and failures
    def split(self, ranks, name=None, timeout=None, hints=None):
        """A communicator of @p ranks (ranks of this one, in their new order);
        collective over this communicator; None on ranks not listed."""
        c = self._c.split_ranks(list(ranks), name, _ms(timeout), _hints(hints))
        return Comm(c) if c is not None else None

    def shrink(self, name=None, timeout=None, hints=None):
        c = self._c.shrink(name, _ms(timeout), _hints(hints))
        return Comm(c) if c is not None else None

    def abort(self):
        self._c.abort()

    def revoke(self):
        """True when every rank was told; False when revoked here only (a
        bootstrap without notices, or one that could not send it)."""
        return self._c.revoke()

    def get_failed_ranks(self):
        return self._c.failed_ranks()

    def stats(self):
        return self._c.stats()

    def dump_flight_recorder(self):
        self._c.dump_fr()

    def finalize(self):
        self._c.destroy()
        self._dropped.reap()  # every operation ended with the communicator
        # windows left: destroyed without a barrier now that the communicator
        # is gone; only then is their memory released
        for w in list(self._windows):
            try:
                w.destroy()
            except _ext.Error:
                pass

    # ---- helpers
    def _run(self, fn, bufs, post, async_op, timeout, hints, *args, src=None):
        """Call @p fn with @p args then the option tail; the Bufs stay alive in the work."""
        keep = tuple(b.obj for b in bufs)
        w = fn(*args, _ms(timeout), _hints(hints), bool(async_op), keep)
        return self._track(Work(w, post, src))

    def _track(self, work):
        """@p work, kept by this communicator when dropped before it ended (its buffers with
        it); those dropped before and ended since are freed now."""
        self._dropped.reap()
        work._drop = self._dropped
        return work

    def _block(self, counts, displs):
        """The element offset of this rank's block of a v-form buffer."""
        return displs[self._rank] if displs is not None else sum(counts[:self._rank])

    @staticmethod
    def _then(w, fn):
        w._post = tuple(w._post) + (fn,)
        if w._done:
            w._finish()
        return w


def _cat(tensors):
    first = tensors[0]
    if B._is_torch(first):
        return B._torch().cat([t.reshape(-1) for t in tensors])
    import numpy as np
    return np.concatenate([np.ravel(t) for t in tensors])


def new_comm(device="cpu", name=None, store=None, rank=None, size=None, timeout=None,
             hints=None, bootstrap="auto", prefix=None):
    """Create a communicator.

    With ``store`` (a torch.distributed Store, or an object with ``set``,
    ``get``, ``wait``, ``add`` as in tcomms.store), ``rank`` and ``size``, the
    start-up goes through that store under ``prefix`` (default: ``name`` or
    "tcomms"). Without it, the launcher's job: PMIx (tcrun, mpirun, srun), the
    torchrun environment, or a world of one (``bootstrap`` chooses).
    """
    if str(device) != "cpu":
        raise ValueError(f"tcomms.new_comm: device {device!r}: this package moves CPU tensors")
    if store is None:
        if bootstrap not in BOOTSTRAPS:
            raise ValueError(f"tcomms.new_comm: bootstrap {bootstrap!r} (accepted: "
                             f"{', '.join(BOOTSTRAPS)})")
        return Comm(_ext.create(BOOTSTRAPS[bootstrap], name, _ms(timeout), _hints(hints)))
    if rank is None or size is None:
        raise ValueError("tcomms.new_comm: a store needs rank and size")
    from .store import adapt
    return Comm(_ext.create_from_store(adapt(store), int(rank), int(size),
                                       prefix or name or "tcomms", name, _ms(timeout),
                                       _hints(hints)))
