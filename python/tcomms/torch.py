"""The "tcomms" backend of torch.distributed (PyTorch 2.x).

``import tcomms.torch`` registers it for CPU tensors; then
``dist.init_process_group("tcomms")`` (torchrun, env://, or an explicit store)
and ``dist.new_group(..., backend="tcomms")`` create tcomms communicators that
start up through the c10d Store torch hands the backend
(tc_comm_create_from_store): no environment variable, no port of tcomms' own.

The backend is a c10d ``Backend`` written in Python; torch's ProcessGroup
dispatches to it (DDP's reducer included). A blocking call (``async_op``
False) is an asynchronous tcomms call waited for in the calling thread (the GIL
released), which returns a completed torch Work. An asynchronous one is issued asynchronously
to tcomms, whose progress thread moves the data; one thread per group waits
on the tcomms work objects and completes each torch Future as soon as its
operation ended (in any order: a receive waiting for a later send holds back
nothing), so work finishes without the caller's help and DDP's hooks run on
completion. Errors (a timeout, a failed peer naming the rank): a blocking
call raises from torch's wait of it; an asynchronous one's is raised by
``work.wait()`` and is the error of its torch Future (``work.get_future()``,
DDP's backward): see tcomms._torch_work.TorchWork. Between
``start_coalescing`` and ``end_coalescing`` (``dist._coalescing_manager``,
``dist.batch_isend_irecv``) sends and receives become one tcomms batch and
every operation issued is covered by the one work ``end_coalescing`` returns.
"""
import collections
import functools
import os
import queue
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend

from .comm import Comm, _redop, new_comm
from . import _ext
from ._torch_work import Settlers, TorchWork


def _timeout(opts):
    """The operation's timeout from torch's options; None: the group's."""
    t = getattr(opts, "timeout", None)
    return t if t is not None and t.total_seconds() >= 0 else None


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError(f"tcomms: {what} takes one tensor per process (got {len(tensors)})")
    return tensors[0]


class _Completer:
    """Completes the torch Futures of one group on its own thread, each once the
    tcomms works of its operation ended: a receive that waits for a later send
    holds back nothing issued after it. The thread sleeps between looks
    (_ext.Comm.wait_any): a waiter that spins and yields took as much CPU as
    the data movement itself during DDP's backward, on the cores the backward
    computes on."""

    def __init__(self, c, name):
        self._c = c  # the group's _ext.Comm, with enable_wait_done()
        self._settlers = Settlers(name)  # for the futures handed out
        self._q = queue.SimpleQueue()
        self._t = threading.Thread(target=self._run, name=f"tcomms-{name}", daemon=True)
        self._t.start()

    def _run(self):
        _ext.name_thread("tc-py-complete")
        pending = []  # [TorchWork, its works, those not yet ended], in issue order
        stopping = False
        while pending or not stopping:
            items = [] if pending else [self._q.get()]  # asleep while nothing is in flight
            items += self._drain()
            for item in items:
                if item is _STOP:
                    stopping = True
                else:
                    pending.append([item[0], item[1], [w for w in item[1] if not w._done]])
            for p in [p for p in pending if not p[2]]:
                pending.remove(p)
                self._complete(p[0], p[0]._settle, p[1])  # every work ended: no wait
            if pending:
                try:
                    self._look(pending)
                except Exception as e:  # the communicator is gone: nothing more can end
                    for p in pending:
                        self._complete(p[0], p[0]._fail, e)
                    pending = []
        self._settlers.stop()

    def _complete(self, work, fn, arg):
        """fn(arg) for TorchWork @p work: here, or on a settler once its future was handed
        out (its callbacks may wait for operations this thread completes)."""
        if not work._settle_unshared(fn, arg):
            self._settlers.put(fn, arg)

    def _drain(self):
        items = []
        while True:
            try:
                items.append(self._q.get_nowait())
            except queue.Empty:
                return items

    def _look(self, pending):
        """Sleep until a work of @p pending ended (or put() woke us); strike the ended."""
        live = list({id(w): w for p in pending for w in p[2]}.values())
        ended = {id(live[i]) for i in self._c.wait_any([w._w for w in live])}
        for p in pending:
            p[2] = [w for w in p[2] if id(w) not in ended]

    def put(self, work, works):
        self._q.put((work, works))
        self._c.wake()

    def stop(self, join=True):
        """End the thread once what is pending completed; @p join: wait for that."""
        self._q.put(_STOP)
        self._c.wake()
        if join and self._t is not threading.current_thread():
            self._t.join()


_STOP = object()  # put on a completion thread's queue: end once nothing is pending


class _Coalescing:
    """What a group issues between start_coalescing and end_coalescing."""

    def __init__(self, comm):
        self.batch = comm.batch_op_create()  # sends and receives, issued at the end
        self.p2p = 0
        self.works = []                       # collectives issued meanwhile
        self.torch_works = []                 # the TorchWork of every operation
        self.error = None                     # the first operation refused, raised at the end


def _elements(t):
    """The storage offsets of @p t's elements (a tensor of int64)."""
    idx = torch.tensor([t.storage_offset()], dtype=torch.int64)
    for n, st in zip(t.shape, t.stride()):
        idx = (idx.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st).reshape(-1)
    return idx


def _disjoint(tensors, what):
    """Refuse tensors of one operation that share elements: each is reduced in place by an
    operation of its own, at the same time, so shared elements came out reduced once, twice or
    more, differently from run to run. Views that interleave without sharing pass."""
    spans = []
    for k, t in enumerate(tensors):
        if t.numel() == 0:
            continue
        es = t.element_size()
        lo = t.data_ptr() + es * sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if st < 0)
        hi = t.data_ptr() + es * (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())
                                          if st > 0))
        spans.append((lo, hi, k))
    spans.sort()
    for i, (lo_a, hi_a, a) in enumerate(spans):
        for lo_b, _, b in spans[i + 1:]:
            if lo_b >= hi_a:
                break
            x, y = tensors[a], tensors[b]
            if x.element_size() == y.element_size() and x.is_contiguous() + y.is_contiguous() < 2 \
                    and x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr() \
                    and not bool(torch.isin(_elements(x), _elements(y)).any()):
                continue  # interleaved, no element in common
            raise ValueError(f"tcomms: {what}: tensors {min(a, b)} and {max(a, b)} share memory "
                             "(each is reduced in place on its own, at the same time); pass "
                             "tensors that do not overlap")


def _torch_coalescing():
    """Whether torch is inside a coalescing block of any group (None: this torch does not
    say). A block that raised (torch's own check of the operations' types, or an error of
    the block's body) never calls end_coalescing."""
    state = getattr(getattr(dist.distributed_c10d, "_world", None), "pg_coalesce_state", None)
    return None if state is None else bool(state)


class ProcessGroupTcomms(_C10dBackend):
    """The torch.distributed backend over one tcomms communicator."""

    def __init__(self, store, rank, size, timeout, global_ranks=None, name="torch",
                 prefix="tcomms"):
        super().__init__(rank, size)
        self._comm = new_comm(store=store, rank=rank, size=size, name=name[:63],
                              prefix=prefix, timeout=timeout)
        # a subgroup's torch (global) ranks by its own, for its errors: tcomms names the
        # group's ranks (None: they are torch's)
        g = list(global_ranks or [])
        self._global = g if g and g != list(range(size)) else None
        self._closing = threading.Lock()  # finalize against _torch_error's call
        self._comm._enable_wait_asleep()  # for the completion thread
        self._done = _Completer(self._comm._c, f"pg{rank}")
        self._coal = None
        self._inline = False  # the operation being issued is a blocking torch call

    def getBackendName(self):
        return "tcomms"

    @property
    def supports_coalescing(self):
        return True

    # What torch asks of a backend and tcomms' backend does not offer (splitting is
    # new_group's job here): said plainly, because the base class's getters call back into
    # these names and recursed without end (split_group raised RecursionError).
    @property
    def supports_splitting(self):
        return False

    @property
    def supports_shrinking(self):
        return False

    @property
    def supports_reconfigure(self):
        return False

    @property
    def supports_window(self):
        return False

    def comm(self):
        """The tcomms communicator underneath (tcomms.Comm)."""
        return self._comm

    # ---- completion
    def _finish(self, what, works, value, src=None):
        """The torch Work of operation @p what, done with the tcomms @p works; its
        future's value is @p value; @p src: a receive's source rank."""
        inline, self._inline = self._inline, False  # set by _kw for this operation only
        work = TorchWork(what, self.rank(), value, src, self._translate())
        if self._coal is not None:
            self._coal.works.extend(works)
            self._coal.torch_works.append(work)
        elif inline:
            work._settle(works)  # a blocking torch call: waited for here
        else:
            self._done.put(work, works)
        return work

    def _kw(self, opts):
        """tcomms' async_op and timeout for torch's @p opts. Every operation is
        asynchronous in tcomms, so that each gives a work the torch Work waits
        for (small ones run on the shm lanes either way). A blocking torch
        call outside coalescing is waited for in this thread (the GIL released),
        with no hand-off to another thread and back."""
        self._inline = self._coal is None and not getattr(opts, "asyncOp", True)
        return {"async_op": True, "timeout": _timeout(opts)}

    def _end_stale_coalescing(self):
        """A coalescing block that torch left without end_coalescing (it raised inside): its
        operations fail, and later ones are issued on their own again (they were added to it,
        and their works waited forever)."""
        coal, self._coal = self._coal, None
        err = RuntimeError(f"tcomms: a coalescing block on rank {self.rank()} ended without "
                           "end_coalescing (torch raised inside it): its operations were not "
                           "completed")
        for w in coal.torch_works:
            w._fail(err)

    def start_coalescing(self):
        if self._coal is not None and _torch_coalescing() is False:
            self._end_stale_coalescing()
        if self._coal is not None:
            raise RuntimeError("tcomms: start_coalescing while already coalescing")
        self._coal = _Coalescing(self._comm)

    def end_coalescing(self):
        coal, self._coal = self._coal, None
        if coal is None:
            raise RuntimeError("tcomms: end_coalescing without start_coalescing")
        works = coal.works
        if coal.error is not None:  # refused inside the block: raised here, where torch is done
            for w in coal.torch_works:
                w._fail(coal.error)
            raise coal.error
        try:
            if coal.p2p:
                works = works + [coal.batch.issue(async_op=True)]
        except Exception as e:
            for w in coal.torch_works:
                w._fail(self._torch_error(e) if self._global and isinstance(e, _ext.Error)
                        else e)
            raise
        for w in coal.torch_works:  # each operation's work completes with the whole
            self._done.put(w, works)
        work = TorchWork("coalesced operations", self.rank(), [], None, self._translate())
        self._done.put(work, works)
        return work

    # ---- reductions
    def _allreduce(self, tensors, opts, what):
        op = _redop(opts.reduceOp)
        return self._finish(what, [self._comm.all_reduce(t, op, **self._kw(opts))
                                   for t in tensors], tensors)

    def allreduce(self, tensors, opts):
        return self._allreduce(tensors, opts, "allreduce")

    def allreduce_coalesced(self, tensors, opts):
        _disjoint(tensors, "allreduce_coalesced")
        return self._allreduce(tensors, opts, "allreduce_coalesced")

    def reduce(self, tensors, opts):
        t = _one(tensors, "reduce")
        w = self._comm.reduce(t, opts.rootRank, _redop(opts.reduceOp), **self._kw(opts))
        return self._finish("reduce", [w], tensors)

    def reduce_scatter(self, output_tensors, input_tensors, opts):
        out, ins = _one(output_tensors, "reduce_scatter"), _one(input_tensors, "reduce_scatter")
        self._same_shapes(out, ins, "reduce_scatter")
        w = self._comm.reduce_scatter(out, ins, _redop(opts.reduceOp), **self._kw(opts))
        return self._finish("reduce_scatter", [w], output_tensors)

    def _reduce_scatter_one(self, output, input, opts):
        if input.numel() != output.numel() * self.size():
            raise ValueError(f"tcomms: reduce_scatter_tensor input has {input.numel()} "
                             f"elements, expected {output.numel()} x {self.size()}")
        return self._comm.reduce_scatter_single(output, input, _redop(opts.reduceOp),
                                                **self._kw(opts))

    def reduce_scatter_single(self, output, input, opts):
        return self._finish("reduce_scatter_tensor",
                            [self._reduce_scatter_one(output, input, opts)], [output])

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):
        self._pairs(outputs, inputs, "reduce_scatter_tensor_coalesced")
        return self._finish("reduce_scatter_tensor_coalesced",
                            [self._reduce_scatter_one(o, i, opts)
                             for o, i in zip(outputs, inputs)], outputs)

    # ---- data movement
    def broadcast(self, tensors, opts):
        return self._finish("broadcast", [self._comm.broadcast(t, opts.rootRank, **self._kw(opts))
                                          for t in tensors], tensors)

    def allgather(self, output_tensors, input_tensors, opts):
        t, outs = _one(input_tensors, "allgather"), _one(output_tensors, "allgather")
        self._same_shapes(t, outs, "allgather")
        return self._finish("allgather", [self._comm.all_gather(outs, t, **self._kw(opts))],
                            output_tensors)

    def allgather_coalesced(self, output_lists, input_list, opts):
        self._pairs(output_lists, input_list, "all_gather_coalesced")
        for outs, t in zip(output_lists, input_list):
            self._same_shapes(t, outs, "all_gather_coalesced")
        return self._finish("allgather_coalesced",
                            [self._comm.all_gather(outs, t, **self._kw(opts))
                             for outs, t in zip(output_lists, input_list)], output_lists)

    def _all_gather_one(self, output, input, opts):
        if output.numel() != input.numel() * self.size():
            raise ValueError(f"tcomms: all_gather_into_tensor output has {output.numel()} "
                             f"elements, expected {input.numel()} x {self.size()}")
        return self._comm.all_gather_single(output, input, **self._kw(opts))

    def all_gather_single(self, output, input, opts):
        return self._finish("all_gather_into_tensor",
                            [self._all_gather_one(output, input, opts)], [output])

    def all_gather_single_coalesced(self, outputs, inputs, opts):
        self._pairs(outputs, inputs, "all_gather_into_tensor_coalesced")
        return self._finish("all_gather_into_tensor_coalesced",
                            [self._all_gather_one(o, i, opts) for o, i in zip(outputs, inputs)],
                            outputs)

    def alltoall(self, output_tensors, input_tensors, opts):
        self._pairs(output_tensors, input_tensors, "all_to_all", self.size())
        w = self._comm.all_to_all(output_tensors, input_tensors, **self._kw(opts))
        return self._finish("alltoall", [w], output_tensors)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts):
        n = self.size()
        if not output_split_sizes and not input_split_sizes:
            if input.numel() != output.numel() or input.numel() % n:
                raise ValueError(f"tcomms: all_to_all_single of {input.numel()} elements into "
                                 f"{output.numel()} over {n} ranks")
            w = self._comm.all_to_all_single(output, input, **self._kw(opts))
        else:
            # torch's split sizes count rows of dimension 0
            row_in = input.numel() // max(1, input.shape[0]) if input.dim() else 1
            row_out = output.numel() // max(1, output.shape[0]) if output.dim() else 1
            ins = list(input_split_sizes) or [input.shape[0] // n] * n
            outs = list(output_split_sizes) or [output.shape[0] // n] * n
            if len(ins) != n or len(outs) != n or sum(ins) != input.shape[0] or \
                    sum(outs) != output.shape[0]:
                raise ValueError(f"tcomms: all_to_all_single splits {ins} / {outs} do not "
                                 f"match {n} ranks and the tensors' first dimension")
            w = self._comm.all_to_all_v_single(output, input, [s * row_out for s in outs],
                                               [s * row_in for s in ins], **self._kw(opts))
        return self._finish("all_to_all_single", [w], [output])

    def gather(self, output_tensors, input_tensors, opts):
        t = _one(input_tensors, "gather")
        outs = output_tensors[0] if output_tensors else []
        if self.rank() == opts.rootRank:
            self._same_shapes(t, outs, "gather")
        w = self._comm.gather(outs, t, opts.rootRank, **self._kw(opts))
        return self._finish("gather", [w], output_tensors)

    def scatter(self, output_tensors, input_tensors, opts):
        t = _one(output_tensors, "scatter")
        ins = input_tensors[0] if input_tensors else []
        if self.rank() == opts.rootRank:
            self._same_shapes(t, ins, "scatter")
        w = self._comm.scatter(t, ins, opts.rootRank, **self._kw(opts))
        return self._finish("scatter", [w], output_tensors)

    def barrier(self, opts):
        return self._finish("barrier", [self._comm.barrier(**self._kw(opts))], [])

    # ---- point to point (inside coalescing: one tcomms batch)
    def _p2p(self, kind, tensors, peer, tag):
        self._inline = False  # never waited for here (a send may wait for its peer's recv)
        t = _one(tensors, kind)
        src = peer if kind == "recv" else None
        if tag != 0:
            raise ValueError(f"tcomms: {kind} with tag {tag}: tcomms matches messages by "
                             f"order between two ranks and takes no tags")
        if self._coal is not None:
            getattr(self._coal.batch, kind)(t, peer)
            self._coal.p2p += 1
            return self._finish(kind, [], tensors, src)
        return self._finish(kind, [getattr(self._comm, kind)(t, peer, async_op=True)], tensors,
                            src)

    def send(self, tensors, dst, tag):
        return self._p2p("send", tensors, dst, tag)

    def recv(self, tensors, src, tag):
        return self._p2p("recv", tensors, src, tag)

    def recv_anysource(self, tensors, tag):
        # tcomms receives from any source (tcomms.Comm.recv(t, None)), but torch 2.15 asks the
        # source of a Python backend's work through c10d's Work, which forwards only wait and
        # get_future to it: dist.recv would take a message, then fail. Refused before.
        raise _ext.error(_ext.TC_ERR_UNSUPPORTED,
                         f"tcomms: recv from any source (src=None) on rank {self.rank()}: torch "
                         "cannot ask a Python backend's work for the source rank; pass src, or "
                         "use tcomms' own API (comm.recv(tensor, None), work.source)")

    # ---- checks and the end
    def _same_shapes(self, t, lst, what):
        if len(lst) != self.size():
            raise ValueError(f"tcomms: {what} needs {self.size()} tensors (got {len(lst)})")
        for k, x in enumerate(lst):
            if x.dtype != t.dtype or x.numel() != t.numel():
                raise ValueError(f"tcomms: {what} tensor {k} is {x.dtype} x {x.numel()}, "
                                 f"expected {t.dtype} x {t.numel()}")

    @staticmethod
    def _pairs(a, b, what, n=None):
        if len(a) != len(b) or (n is not None and len(a) != n):
            raise ValueError(f"tcomms: {what} with {len(a)} outputs and {len(b)} inputs"
                             + (f" (needs {n} of each)" if n is not None else ""))

    def _translate(self):
        return self._torch_error if self._global else None

    def _torch_error(self, e):
        """@p e (a tcomms error of this subgroup) with its ranks in torch's numbering too: the
        library's messages number the group's ranks (its "world" is the group). Also called
        on the completion thread: the lock keeps shutdown from destroying the communicator
        during the call that asks it for its failed ranks."""
        try:
            with self._closing:
                failed = [r for r in self._comm.get_failed_ranks() if 0 <= r < len(self._global)]
        except _ext.Error:
            failed = []
        shown = failed or list(range(len(self._global)))
        pairs = ", ".join(f"{r} is torch rank {self._global[r]}" for r in shown[:16])
        more = ", ..." if len(shown) > 16 else ""
        what = "failed ranks" if failed else "ranks"
        out = _ext.error(e.status, f"{e} [tcomms numbers this group's ranks; its {what}: "
                                   f"{pairs}{more}]")
        out._tc_torch_ranks = True  # translated once (a wrapped method may call another)
        return out

    def shutdown(self):
        """Destroys the communicator (idempotent); dist.destroy_process_group calls it.
        Operations still pending end with an error at once (they waited for their
        timeout): the completion thread fails their works when the communicator goes."""
        with self._closing:
            self._comm.finalize()
        self._done.stop()

    def __del__(self):
        done = getattr(self, "_done", None)
        if done is not None:
            done.stop(join=False)  # the Comm frees itself


# Backends this process made per torch group name. torch names groups again from "0" after
# destroy_process_group and keys them in the same store, so a group made again meets under
# keys of its own: "tcomms", then "tcomms.1", ... (each member counts the same).
_made = collections.Counter()
_made_lock = threading.Lock()


def _prefix(group_id):
    """The store prefix of the next backend of torch group @p group_id in this process. Under
    torchrun with restarts the workers of every attempt meet in the agent's store, which keeps
    the keys of the attempts before (their rank claims counted twice): an attempt after the
    first has keys of its own, "tcomms.a<restart count>"."""
    with _made_lock:
        gen = _made[group_id]
        _made[group_id] += 1
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    parts = ["tcomms"]
    if restart.isdigit() and int(restart) > 0:
        parts.append(f"a{int(restart)}")
    if gen:
        parts.append(str(gen))
    return ".".join(parts)


def _create(opts, backend_options):
    """torch's extended creator API: @p opts carries the group's global ranks."""
    # named after torch's group: each group's communicator its own flight-recorder dumps and
    # log lines (all were "torch")
    return ProcessGroupTcomms(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                              opts.global_ranks_in_group, f"torch.{opts.group_id}",
                              _prefix(opts.group_id))


def _backend_op(method):
    """@p method of the backend, with the tcomms errors it raises numbered in torch's ranks too
    (subgroups). Inside a coalescing block an error is kept for end_coalescing to raise and
    the operation's work fails with it: raised inside the block, it left torch's coalescing
    state behind (torch does not end a block whose body raised), and the group's next
    operations were dropped or waited forever. A block torch left without end_coalescing
    ends first."""
    # torch leaves its block (pg_coalesce_state) before it calls the *_coalesced operation
    # of the block's fast path and end_coalescing: those find the block open
    ends_block = method.__name__ == "end_coalescing" or method.__name__.endswith("_coalesced")

    @functools.wraps(method)
    def op(self, *args, **kwargs):
        if self._coal is not None and not ends_block and _torch_coalescing() is False:
            self._end_stale_coalescing()
        try:
            return method(self, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - every refusal, the library's and the checks'
            err = e
            if isinstance(e, _ext.Error) and self._global is not None and \
                    not getattr(e, "_tc_torch_ranks", False):
                err = self._torch_error(e)
            if self._coal is None or method.__name__ == "end_coalescing":
                if err is e:
                    raise
                raise err from None
            self._coal.error = self._coal.error or err
            work = TorchWork(method.__name__, self.rank(), [], None, None)
            work._fail(err)
            return work
    return op


for _name in ("allreduce", "allreduce_coalesced", "reduce", "reduce_scatter",
              "reduce_scatter_single", "reduce_scatter_single_coalesced", "broadcast",
              "allgather", "allgather_coalesced", "all_gather_single",
              "all_gather_single_coalesced", "alltoall", "all_to_all_single", "gather", "scatter",
              "barrier", "send", "recv", "end_coalescing"):
    setattr(ProcessGroupTcomms, _name, _backend_op(getattr(ProcessGroupTcomms, _name)))


def backend_of(group=None):
    """The ProcessGroupTcomms of @p group (None: the default group)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    b = pg._get_backend(torch.device("cpu"))
    if not isinstance(b, ProcessGroupTcomms):
        raise ValueError(f"tcomms: group {pg.group_name} has backend {pg.name()}, not tcomms")
    return b


def register():
    """Register "tcomms" with torch.distributed, once; done when this module is imported.
    The installed package (python/build_wheel.py) names this function as its entry point
    torch.distributed.backends, so dist.init_process_group("tcomms") and
    dist.new_group(backend="tcomms") find the backend without an import of tcomms.torch."""
    if "tcomms" not in dist.Backend.backend_list:
        dist.Backend.register_backend("tcomms", _create, extended_api=True, devices=["cpu"])


register()

__all__ = ["ProcessGroupTcomms", "Comm", "backend_of", "register"]
