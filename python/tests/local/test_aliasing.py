"""Outputs that share memory with their inputs, through the torchcomms-shaped API (ranks
as threads, tests/local/test_api.py's run_ranks), every element against NumPy: the output
gets the result of the input as it was, on every rank, in the library's in-place forms and
in any other overlap (which the library refuses, or reads as an in-place form with another
meaning, on some ranks only)."""
import numpy as np

from test_api import run_ranks


def inputs(r, n):
    return np.random.default_rng(50 + r).integers(0, 9, n).astype(np.float64)


def test_v_forms_and_single_forms_overlapping():
    n = 3
    counts = [q + 1 for q in range(n)]          # rank q's block: q + 1 elements
    offs = [sum(counts[:q]) for q in range(n)]
    total = sum(counts)

    def fn(c, r, size):
        res = {}
        # reduce_scatter_v: into the input's own block (in place), into its start
        x = inputs(r, total)
        c.reduce_scatter_v(x[offs[r]:offs[r] + counts[r]], x, counts)
        res["rsv own block"] = x[offs[r]:offs[r] + counts[r]].copy()
        x = inputs(r, total)
        c.reduce_scatter_v(x[:counts[r]], x, counts)
        res["rsv start"] = x.copy()
        # reduce_scatter_single into the start of its input (async: copied back at the end)
        x = inputs(r, 2 * size)
        c.reduce_scatter_single(x[:2], x, async_op=True).wait()
        res["rs start"] = x.copy()
        # all_gather_v: from its own block (in place), from the output's start
        out = np.full(total, -1.0)
        out[offs[r]:offs[r] + counts[r]] = inputs(r, counts[r])
        c.all_gather_v(out, out[offs[r]:offs[r] + counts[r]], counts)
        res["agv own block"] = out
        out = np.full(total, -1.0)
        out[:counts[r]] = inputs(r, counts[r])
        c.all_gather_v(out, out[:counts[r]], counts)
        res["agv start"] = out
        # all_to_all_v_single with the output in the input (never in place in the library)
        buf = np.zeros(1 + max(total, size * (r + 1)))
        buf[:total] = inputs(r, total)
        c.all_to_all_v_single(buf[1:1 + size * (r + 1)], buf[:total], [r + 1] * size, counts)
        res["a2av"] = buf[1:1 + size * (r + 1)]
        return res

    res = run_ranks(n, fn)
    full = [inputs(q, total) for q in range(n)]
    summed = sum(full)
    for r in range(n):
        got = res[r]
        mine = summed[offs[r]:offs[r] + counts[r]]
        np.testing.assert_array_equal(got["rsv own block"], mine)
        want = inputs(r, total)
        want[:counts[r]] = mine
        np.testing.assert_array_equal(got["rsv start"], want)
        want = inputs(r, 2 * n)
        want[:2] = sum(inputs(q, 2 * n) for q in range(n))[2 * r:2 * r + 2]
        np.testing.assert_array_equal(got["rs start"], want)
        gathered = np.concatenate([inputs(q, counts[q]) for q in range(n)])
        np.testing.assert_array_equal(got["agv own block"], gathered)
        np.testing.assert_array_equal(got["agv start"], gathered)
        np.testing.assert_array_equal(got["a2av"], np.concatenate(
            [full[q][offs[r]:offs[r] + counts[r]] for q in range(n)]))


def test_failed_copy_back_raises_on_every_wait():
    """An asynchronous all_reduce into a strided view of a leaf that requires grad cannot be
    copied back (torch refuses the in-place copy): every wait raises, not the first one only
    (the second returned True and left the output as it was). (An expanded output, which
    failed here too, is refused before the operation now: test_api.py.)"""
    torch = __import__("pytest").importorskip("torch")

    def fn(c, r, size):
        t = torch.ones(4, 2, requires_grad=True)[:, 0]
        w = c.all_reduce(t, async_op=True)
        raised = 0
        for _ in range(2):
            try:
                w.wait()
            except Exception:  # noqa: BLE001 - whatever torch's copy says
                raised += 1
        return raised

    assert run_ranks(2, fn) == [2, 2]
