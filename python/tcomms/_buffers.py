"""Tensors and arrays as (address, element count, tcomms type code), without copies.

torch CPU tensors and NumPy arrays are used in place when contiguous; a
non-contiguous input is copied to a contiguous one, a non-contiguous output
gets a contiguous stand-in whose data is copied back when the operation ends.
torch's conjugate and negative views (``t.conj()``, ``t.conj().imag``) are
treated as non-contiguous: their memory holds other values than they show.
"""
import operator

# tcomms' type codes (tcomms/base/dtype.h) and reduction codes
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = range(10)
_ITEMSIZE = {INT8: 1, UINT8: 1, INT32: 4, UINT32: 4, INT64: 8, UINT64: 8, FLOAT16: 2,
             BFLOAT16: 2, FLOAT32: 4, FLOAT64: 8}

_torch_codes = None
_numpy_codes = None


def _torch():
    global _torch_codes
    import torch
    if _torch_codes is None:
        _torch_codes = {torch.int8: INT8, torch.uint8: UINT8, torch.int32: INT32,
                        torch.int64: INT64, torch.float16: FLOAT16, torch.bfloat16: BFLOAT16,
                        torch.float32: FLOAT32, torch.float64: FLOAT64}
        for name, code in (("uint32", UINT32), ("uint64", UINT64)):
            if hasattr(torch, name):
                _torch_codes[getattr(torch, name)] = code
    return torch


def _is_torch(x):
    mod = type(x).__module__
    return mod.startswith("torch")


def dtype_code(x, reducing):
    """The type code of @p x; for data movement (not @p reducing) any other
    element type moves as bytes (code UINT8, count scaled by the item size)."""
    if _is_torch(x):
        _torch()
        code = _torch_codes.get(x.dtype)
        itemsize = x.element_size()
    else:
        import numpy as np
        global _numpy_codes
        if _numpy_codes is None:
            _numpy_codes = {np.dtype(k): v for k, v in (
                ("int8", INT8), ("uint8", UINT8), ("int32", INT32), ("uint32", UINT32),
                ("int64", INT64), ("uint64", UINT64), ("float16", FLOAT16),
                ("float32", FLOAT32), ("float64", FLOAT64))}
        code = _numpy_codes.get(x.dtype)
        itemsize = x.dtype.itemsize
    if code is not None:
        return code, 1
    if reducing and is_bool(x):
        return UINT8, 1  # bytes 0 and 1: comm._redop makes the reduction a logical one
    if reducing:
        raise TypeError(f"tcomms: no reduction on element type {x.dtype} (accepted: int8, "
                        "uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, "
                        "float64, bool)")
    return UINT8, itemsize


def is_bool(x):
    """Whether @p x holds booleans (torch.bool or NumPy's bool)."""
    return str(x.dtype) in ("torch.bool", "bool")


def check_cpu(x):
    if _is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"tcomms: tensor on {x.device}; this build moves CPU tensors only")
        if x.is_sparse:
            raise ValueError("tcomms: sparse tensors are not supported")
    elif not hasattr(x, "__array_interface__"):
        raise TypeError(f"tcomms: expected a torch tensor or a NumPy array, got {type(x).__name__}")


def numel(x):
    return x.numel() if _is_torch(x) else x.size


def in_place(x):
    """Whether @p x's memory holds its elements as they are, in order."""
    if _is_torch(x):
        return x.is_contiguous() and not x.is_conj() and not x.is_neg()
    return x.flags["C_CONTIGUOUS"]


def contiguous(x):
    """@p x itself when in_place, else a contiguous copy of its values."""
    if in_place(x):
        return x
    if _is_torch(x):
        return x.resolve_conj().resolve_neg().contiguous()
    import numpy as np
    return np.ascontiguousarray(x)


def address(x):
    return x.data_ptr() if _is_torch(x) else x.__array_interface__["data"][0]


def empty_like(x, n):
    """A new contiguous 1-D buffer of @p n elements of @p x's type."""
    if _is_torch(x):
        return _torch().empty(n, dtype=x.dtype)
    import numpy as np
    return np.empty(n, dtype=x.dtype)


def copy_into(dst, src):
    """dst[...] = src (same number of elements), for torch or NumPy."""
    if _is_torch(dst):
        dst.copy_(src.reshape(dst.shape))
    else:
        dst[...] = src.reshape(dst.shape)


class Buf:
    """One buffer of an operation: its address, element count and type code,
    and the copy back owed to a non-contiguous output."""

    __slots__ = ("obj", "addr", "count", "code", "scale", "post")

    def __init__(self, x, writable, reducing=False):
        check_cpu(x)
        if writable and not _is_torch(x) and not x.flags["WRITEABLE"]:
            raise ValueError("tcomms: the output array is read-only")
        if writable and _is_torch(x) and _torch()._debug_has_internal_overlap(x) == 1:
            # refused before anything moves: torch's copy back refused it after the data moved
            raise ValueError(f"tcomms: the output tensor (shape {tuple(x.shape)}, strides "
                             f"{x.stride()}) has elements sharing memory, an expanded or "
                             "stride-0 view: pass one whose elements are its own (.clone())")
        self.code, self.scale = dtype_code(x, reducing)
        c = contiguous(x)
        self.obj = c
        self.post = (x, c) if writable and c is not x else None
        self.addr = address(c)
        self.count = numel(c) * self.scale

    def finish(self):
        if self.post is not None:
            copy_into(*self.post)
            self.post = None

    def snapshot(self):
        """Send a copy of the values from now on (an input its output overlaps)."""
        self.obj = self.obj.clone() if _is_torch(self.obj) else self.obj.copy()
        self.addr = address(self.obj)

    def stand_in(self):
        """Receive into a new buffer, copied into this one when the operation ends (an
        output that overlaps its input; never a stand-in already: that one is new)."""
        tmp = empty_like(self.obj, numel(self.obj))
        self.post = (self.obj, tmp)
        self.obj, self.addr = tmp, address(tmp)


def nbytes(b):
    """Bytes of @p b's memory."""
    return b.count * _ITEMSIZE[b.code]


def elem_bytes(b):
    """Bytes of one element of @p b's own type (a displacement's unit)."""
    return b.scale * _ITEMSIZE[b.code]


def unalias(i, o, in_place):
    """Input @p i and output @p o of one operation with torch's meaning: the output gets the
    result of the input as it was, whatever their memory shares. @p in_place: the call is one
    of the library's in-place forms for the operation, with that meaning; it goes as it is.
    Otherwise buffers whose bytes overlap (which the library refuses, or takes for an
    in-place form meaning something else, on some ranks only) are parted: the input is
    copied, or, when the output is the smaller, the output is a stand-in copied back."""
    if in_place or not nbytes(i) or not nbytes(o):
        return
    if i.addr < o.addr + nbytes(o) and o.addr < i.addr + nbytes(i):
        if nbytes(o) < nbytes(i):
            o.stand_in()
        else:
            i.snapshot()


def check_fits(what, b, elems):
    """@p b must hold @p elems elements of its type: ValueError before any data moves (the
    library would read or write past it)."""
    if b.count != elems * b.scale:
        raise ValueError(f"tcomms: {what} holds {b.count // b.scale} elements, the operation "
                         f"needs {elems}")


def check_same_type(i, o):
    """Input @p i and output @p o of one operation have one element type."""
    if (i.code, i.scale) != (o.code, o.scale) or is_bool(i.obj) != is_bool(o.obj):
        raise TypeError(f"tcomms: input and output differ in element type "
                        f"({i.obj.dtype} and {o.obj.dtype})")


def type_name(dtype):
    """torch's or NumPy's element type by its name ("float32"), to compare the two."""
    if type(dtype).__module__.startswith("torch"):
        return str(dtype).rsplit(".", 1)[-1]
    import numpy as np
    return np.dtype(dtype).name


def check_list(what, tensors, size, each, like):
    """A list of one tensor per rank, each of @p each elements of @p like's element type."""
    if len(tensors) != size or any(numel(t) != each for t in tensors):
        raise ValueError(f"tcomms: {what} must hold {size} tensors of {each} elements each "
                         f"(got {[numel(t) for t in tensors]})")
    for k, t in enumerate(tensors):
        if type_name(t.dtype) != type_name(like.dtype):
            raise TypeError(f"tcomms: {what}[{k}] is {type_name(t.dtype)}, the operation "
                            f"moves {type_name(like.dtype)}")


def check_counts(what, values, size):
    """@p values (a list, tuple, array or integer tensor) as a list of @p size non-negative
    ints, else ValueError (the library reads @p size entries)."""
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    if len(values) != size:
        raise ValueError(f"tcomms: {what} has {len(values)} entries; the communicator has "
                         f"{size} ranks")
    out = []
    for k, v in enumerate(values):
        try:
            n = operator.index(v)
        except TypeError:
            n = None
        if n is None or isinstance(v, bool) or n < 0:
            raise ValueError(f"tcomms: {what}[{k}] is {v!r}, not a count (a non-negative "
                             "integer)")
        out.append(n)
    return out


def check_extent(what, b, counts, displs, size, names=("counts", "displs")):
    """@p counts and @p displs (None: packed) as lists of one int per rank (@p size), checked
    (check_counts), and that @p b holds the blocks they describe, in elements; @p names:
    theirs in messages. Returns (counts, displs)."""
    counts = check_counts(names[0], counts, size)
    if displs is not None:
        displs = check_counts(names[1], displs, size)
    need = packed = 0
    for k, c in enumerate(counts):
        need = max(need, c + (displs[k] if displs is not None else packed))
        packed += c
    if b.count < need * b.scale:
        raise ValueError(f"tcomms: {what} holds {b.count // b.scale} elements, its blocks "
                         f"reach {need}")
    return counts, displs
