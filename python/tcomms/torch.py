"""The "tcomms" backend of torch.distributed.

``import tcomms.torch`` registers it; then ``dist.init_process_group("tcomms")``
(torchrun, env://, or an explicit store) and ``dist.new_group(..., backend=
"tcomms")`` create tcomms communicators that start up through the c10d Store
torch hands the backend (tc_comm_create_from_store): no environment variable,
no port of tcomms' own.

The process group is defined in Python (a subclass of dist.ProcessGroup).
Every operation is issued asynchronously to tcomms, whose progress thread
moves the data; a completion thread per group waits on the tcomms work
objects (without the GIL) and completes the torch Futures, so work finishes
without the caller's help, and DDP's hooks run on completion. Errors (a
timeout, a failed peer naming the rank) reach ``work.wait()`` as exceptions.
"""
import queue
import threading

import torch
import torch.distributed as dist

from . import _buffers as B
from .comm import Comm, ReduceOp
from . import _ext

_create_work = torch._C._distributed_c10d._create_work_from_future


def _redop(op):
    for theirs, ours in ((dist.ReduceOp.SUM, ReduceOp.SUM), (dist.ReduceOp.PRODUCT, ReduceOp.PROD),
                         (dist.ReduceOp.MIN, ReduceOp.MIN), (dist.ReduceOp.MAX, ReduceOp.MAX),
                         (dist.ReduceOp.BAND, ReduceOp.BAND), (dist.ReduceOp.BOR, ReduceOp.BOR),
                         (dist.ReduceOp.BXOR, ReduceOp.BXOR)):
        if op == theirs:
            return ours
    if hasattr(dist.ReduceOp, "AVG") and op == dist.ReduceOp.AVG:
        return ReduceOp.AVG
    raise ValueError(f"tcomms: reduction {op} is not supported")


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError(f"tcomms: {what} takes one tensor per process (got {len(tensors)})")
    return tensors[0]


class _Completer:
    """Completes the torch Futures of one group, in issue order, on its own thread."""

    def __init__(self, name):
        self._q = queue.SimpleQueue()
        self._t = threading.Thread(target=self._run, name=f"tcomms-{name}", daemon=True)
        self._t.start()

    def _run(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            works, fut, value = item
            try:
                for w in works:
                    w.wait()
                fut.set_result(value)
            except Exception as e:  # the tcomms error, given to whoever waits
                fut.set_exception(e)

    def submit(self, works, value):
        fut = torch.futures.Future()
        self._q.put((works, fut, value))
        return _create_work(fut)

    def stop(self):
        self._q.put(None)
        self._t.join()


class ProcessGroupTcomms(dist.ProcessGroup):
    """torch.distributed over one tcomms communicator."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        from .comm import new_comm
        self._comm = new_comm(store=store, rank=rank, size=size, name="torch",
                              prefix="tcomms", timeout=timeout)
        self._done = _Completer(f"pg{rank}")

    def getBackendName(self):
        return "tcomms"

    def _submit(self, works, value):
        return self._done.submit([w for w in works if w is not None], value)

    # ---- reductions
    def allreduce(self, tensors, opts=None):
        op = _redop(opts.reduceOp) if opts is not None else ReduceOp.SUM
        works = [self._comm.all_reduce(t, op, async_op=True) for t in tensors]
        return self._submit(works, tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts):
        t = _one(tensors, "reduce")
        return self._submit([self._comm.reduce(t, opts.rootRank, _redop(opts.reduceOp),
                                               async_op=True)], tensors)

    def reduce_scatter(self, output_tensors, input_tensors, opts):
        out, ins = _one(output_tensors, "reduce_scatter"), input_tensors[0]
        self._same_shapes(out, ins, "reduce_scatter")
        return self._submit([self._comm.reduce_scatter(out, ins, _redop(opts.reduceOp),
                                                       async_op=True)], output_tensors)

    def _reduce_scatter_base(self, output, input, opts):
        if input.numel() != output.numel() * self.size():
            raise ValueError(f"tcomms: reduce_scatter_tensor input has {input.numel()} "
                             f"elements, expected {output.numel()} x {self.size()}")
        return self._submit([self._comm.reduce_scatter_single(output, input, _redop(
            opts.reduceOp), async_op=True)], [output])

    # ---- data movement
    def broadcast(self, tensors, opts):
        works = [self._comm.broadcast(t, opts.rootRank, async_op=True) for t in tensors]
        return self._submit(works, tensors)

    def allgather(self, output_tensors, input_tensors, opts=None):
        t = _one(input_tensors, "allgather")
        outs = output_tensors[0]
        self._same_shapes(t, outs, "allgather")
        return self._submit([self._comm.all_gather(outs, t, async_op=True)], output_tensors)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        works = [self._comm.all_gather(outs, t, async_op=True)
                 for outs, t in zip(output_lists, input_list)]
        return self._submit(works, output_lists)

    def _allgather_base(self, output, input, opts=None):
        if output.numel() != input.numel() * self.size():
            raise ValueError(f"tcomms: all_gather_into_tensor output has {output.numel()} "
                             f"elements, expected {input.numel()} x {self.size()}")
        return self._submit([self._comm.all_gather_single(output, input, async_op=True)],
                            [output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        return self._submit([self._comm.all_to_all(output_tensors, input_tensors, async_op=True)],
                            output_tensors)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        n = self.size()
        if not output_split_sizes and not input_split_sizes:
            if input.numel() != output.numel() or input.numel() % n:
                raise ValueError(f"tcomms: all_to_all_single of {input.numel()} elements into "
                                 f"{output.numel()} over {n} ranks")
            w = self._comm.all_to_all_single(output, input, async_op=True)
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
                                               [s * row_in for s in ins], async_op=True)
        return self._submit([w], [output])

    def gather(self, output_tensors, input_tensors, opts):
        t = _one(input_tensors, "gather")
        outs = output_tensors[0] if output_tensors else []
        if self.rank() == opts.rootRank:
            self._same_shapes(t, outs, "gather")
        return self._submit([self._comm.gather(outs, t, opts.rootRank, async_op=True)],
                            output_tensors)

    def scatter(self, output_tensors, input_tensors, opts):
        t = _one(output_tensors, "scatter")
        ins = input_tensors[0] if input_tensors else []
        if self.rank() == opts.rootRank:
            self._same_shapes(t, ins, "scatter")
        return self._submit([self._comm.scatter(t, ins, opts.rootRank, async_op=True)],
                            output_tensors)

    def barrier(self, opts=None):
        return self._submit([self._comm.barrier(async_op=True)], [])

    # ---- point to point
    def send(self, tensors, dst, tag=0):
        return self._submit([self._comm.send(_one(tensors, "send"), dst, async_op=True)], tensors)

    def recv(self, tensors, src, tag=0):
        return self._submit([self._comm.recv(_one(tensors, "recv"), src, async_op=True)], tensors)

    def recv_anysource(self, tensors, tag=0):
        raise _ext.UnsupportedError("tcomms: recv from any source is not supported")

    # ---- checks and the end
    def _same_shapes(self, t, lst, what):
        if len(lst) != self.size():
            raise ValueError(f"tcomms: {what} needs {self.size()} tensors (got {len(lst)})")
        for k, x in enumerate(lst):
            if x.dtype != t.dtype or x.numel() != t.numel():
                raise ValueError(f"tcomms: {what} tensor {k} is {x.dtype} x {x.numel()}, "
                                 f"expected {t.dtype} x {t.numel()}")

    def comm(self):
        """The tcomms communicator underneath (tcomms.Comm)."""
        return self._comm

    def shutdown(self):
        self._done.stop()
        self._comm.finalize()

    def __del__(self):
        done = getattr(self, "_done", None)
        if done is not None:
            done._q.put(None)  # ends the completion thread; the Comm frees itself


def _create(store, rank, size, timeout, *rest):
    return ProcessGroupTcomms(store, rank, size, timeout)


if "tcomms" not in dist.Backend.__dict__ and not hasattr(dist.Backend, "TCOMMS"):
    dist.Backend.register_backend("tcomms", _create)

__all__ = ["ProcessGroupTcomms", "Comm"]
