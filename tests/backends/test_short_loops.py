"""Short loops stay vector loops, and multi-pass row reductions prefetch the rows ahead.

A sequential loop of 8 to 256 iterations runs to a bound LLVM cannot see
(``loopnest.OPAQUE_EXTENTS``): with a constant bound LLVM unrolled such loops completely and
left them scalar, and a 262144x16 softmax ran 4x slower than as a vector loop. A row
reduction that reads each row more than once prefetches the rows it reaches next
(``reductions._prefetch_rows_ahead``). Neither may change a result: both are checked against
NumPy across the extents around the thresholds, on serial and parallel kernels, with NaN
and inf in the rows.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import loopnest, reductions

WIDTHS = [1, 7, 8, 16, 63, 64, 256, 257, 1024]


def _softmax(x):
    exps = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exps / np.sum(exps, axis=-1, keepdims=True)


def _layer_norm(x, gamma):
    mean = np.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    return centered / np.sqrt(np.mean(centered * centered, axis=-1, keepdims=True) + 1e-5) * gamma


def _row_sum(x, gamma):
    return np.sum(x * gamma, axis=-1)


def _broadcast(x, gamma):
    return np.exp(x) * gamma[None, :] + gamma


PROGRAMS = {
    "softmax": lambda x, gamma: _softmax(x),
    "layer_norm": _layer_norm,
    "row_sum": _row_sum,
    "broadcast": _broadcast,
}


def _rows(width: int, rng) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal((40, width)).astype(np.float32)
    x[3, 0] = np.nan
    x[5, -1] = np.inf
    x[7, :] = -np.inf
    return x, rng.uniform(0.5, 1.5, width).astype(np.float32)


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "prange"])
@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("width", WIDTHS)
def test_short_and_long_rows_match_numpy(monkeypatch, rng, parallel, name, width):
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16 if parallel else 1 << 40)
    x, gamma = _rows(width, rng)
    program = PROGRAMS[name]
    with np.errstate(invalid="ignore"):
        want = program(x, gamma)
        # A row sum's float32 rounding grows with its terms' magnitudes, whoever sums.
        scale = np.abs(x * gamma).sum(axis=-1) if name == "row_sum" else 1.0
    got = numbax.jit(program, backend="cpu")(x, gamma)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    exact = got == want  # the infinities among them
    with np.errstate(invalid="ignore"):  # inf - inf where they agree
        close = np.abs(got - want) <= 2e-6 * (np.abs(want) + np.nan_to_num(scale))
    assert np.all(close | exact | np.isnan(want)), (got, want)


def _vector_loops(llvm_ir: str, function_name: str) -> int:
    """The vectorised loop bodies in a function's own IR (not its callees', not its
    CPython or C wrapper's)."""
    count, inside = 0, False
    for line in llvm_ir.splitlines():
        if line.startswith("define"):
            inside = function_name in line and "cpython" not in line and "@cfunc." not in line
        elif inside and re.match(r"vector\.body\d*:", line):
            count += 1
    return count


@pytest.mark.parametrize("width", [16, 64])
def test_short_row_loops_run_to_an_opaque_bound_and_vectorise(monkeypatch, width):
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 1 << 40)  # the loops in the kernel's IR
    assert width in loopnest.OPAQUE_EXTENTS
    x = np.linspace(-3.0, 3.0, 64 * width, dtype=np.float32).reshape(64, width)
    executable = numbax.jit(_softmax, backend="cpu").lower(x).compile()
    # The softmax is one kernel, a function of its own (``units``): its loops, in its IR.
    (unit,) = executable.program.units
    source = unit.source
    assert f"opaque_int({width})" in source
    short_loops = len(re.findall(rf"for i1 in range\(n{width}_\d+\):", source))
    assert short_loops == 3, source  # the max, the sum of exps, the division
    vectorised = _vector_loops(executable.llvm_ir(), unit.name)
    assert vectorised >= short_loops, source


def test_long_and_tiny_loops_keep_their_constant_bounds():
    for width in (4, 1024):
        assert width not in loopnest.OPAQUE_EXTENTS
        x = np.ones((64, width), np.float32)
        source = numbax.jit(_softmax, backend="cpu").lower(x).compile().source
        assert f"opaque_int({width})" not in source and f"for i1 in range({width}):" in source


def test_rows_read_twice_are_prefetched_ahead_and_rows_read_once_are_not(monkeypatch):
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16)
    x = np.ones((64, 1024), np.float32)
    gamma = np.ones(1024, np.float32)
    ahead = reductions.PREFETCH_ROWS_AHEAD
    layer_norm = numbax.jit(_layer_norm, backend="cpu").lower(x, gamma).compile().source
    # x's rows (4 KiB), not gamma, which every row reads whole.
    assert re.findall(r"prefetch_span\((\w+), \(i0 \+ (\d+)\) \* 1024, 1024\)", layer_norm) == [
        ("a", str(ahead))
    ], layer_norm
    row_sum = numbax.jit(_row_sum, backend="cpu").lower(x, gamma).compile().source
    assert "prefetch_span" not in row_sum
    narrow = np.ones((4096, 16), np.float32)  # 64-byte rows: left to the hardware
    assert 16 * 4 not in reductions.PREFETCH_ROW_BYTES
    narrow_source = numbax.jit(_layer_norm, backend="cpu").lower(narrow, gamma[:16]).compile()
    assert "prefetch_span" not in narrow_source.source
