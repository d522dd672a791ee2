"""tcomms for Python: a torchcomms-shaped API over tcomms' C library.

    import tcomms
    comm = tcomms.new_comm(store=store, rank=rank, size=size, name="world")
    comm.all_reduce(tensor)                      # in place, blocking
    work = comm.all_reduce(tensor, async_op=True)
    work.wait()
    win = comm.new_window(tensor)                # one-sided: put, get, signals

``import tcomms.torch`` registers the "tcomms" torch.distributed backend.
"""
from ._ext import (AbortedError, Error, InvalidArgumentError, MismatchError, PeerFailedError,
                   RevokedError, TimeoutError, UnsupportedError, version)
from .comm import BatchOp, Comm, ReduceOp, SignalWork, Work, new_comm
from .window import ALL_PEERS, SIGNAL_SLOTS, Cmp, SignalOp, Window

__all__ = ["new_comm", "Comm", "Work", "BatchOp", "ReduceOp", "Error", "TimeoutError",
           "PeerFailedError", "AbortedError", "RevokedError", "MismatchError",
           "InvalidArgumentError", "UnsupportedError", "version", "Window", "SignalWork",
           "SignalOp", "Cmp", "SIGNAL_SLOTS", "ALL_PEERS"]
