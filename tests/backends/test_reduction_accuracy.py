"""Long float sums against an exactly rounded oracle (math.fsum), on every axis layout.

A serial float32 accumulation of 2 * 10**6 values errs by about 2e-5 relative, NumPy's
pairwise summation by about 1e-7. numbax must be no worse than NumPy on any layout
(NumPy sums a leading axis serially, so there it is easily beaten). The compiled CPU
backend sums 2 * 10**6 values, the interpreter (NumPy itself) fewer, and the CUDA
simulator a tiny array whose values it only checks.
"""

import math

import numpy as np
import pytest

import numbax

# name -> (how to make the input from a flat array of n values, reduced axis, keepdims);
# axis None is the full reduction.
LAYOUTS = {
    "full": (lambda v: v, None, False),
    "trailing": (lambda v: v.reshape(4, -1), 1, False),
    "leading": (lambda v: v.reshape(-1, 4), 0, False),
    "middle": (lambda v: v.reshape(2, -1, 2), 1, False),
    "keepdims": (lambda v: v.reshape(-1, 2), 0, True),
    "transposed": (lambda v: v.reshape(-1, 4).T, 1, False),
    "strided": (lambda v: v.reshape(-1, 8)[:, ::2], 0, False),
}


def exact_sum(x, axis, keepdims) -> np.ndarray:
    """The sum rounded once, to float64 (math.fsum is exact until its final rounding)."""
    wide = np.asarray(x, np.float64)
    if axis is None:
        return np.float64(math.fsum(wide.ravel()))
    moved = np.moveaxis(wide, axis, -1)
    sums = np.array([math.fsum(row) for row in moved.reshape(-1, moved.shape[-1])])
    out = sums.reshape(moved.shape[:-1])
    return np.expand_dims(out, axis) if keepdims else out


def inputs(dtype, n, rng):
    """Constant 0.1 (rounding errors all of one sign) and uniform [0, 1) values."""
    return [np.full(n, 0.1, dtype), rng.random(n).astype(dtype)]


def relative_error(result, exact) -> float:
    return float(np.max(np.abs(np.asarray(result, np.float64) - exact) / np.abs(exact)))


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_long_sums_are_as_accurate_as_numpy(backend, layout, dtype, reduction, rng):
    make, axis, keepdims = LAYOUTS[layout]

    def program(x):
        return getattr(x, reduction)(axis=axis, keepdims=keepdims)

    n = 8 * backend.size(2**18 if backend.compiled else 2**13, simulated=6)
    f = numbax.jit(program, backend=backend)
    eps = np.finfo(dtype).eps
    for flat in inputs(dtype, n, rng):
        x = make(flat)
        exact = exact_sum(x, axis, keepdims)
        if reduction == "mean":
            exact = exact / (x.size // exact.size)
        result = np.asarray(backend.to_host(f(x)))
        assert result.dtype == np.dtype(dtype) and result.shape == np.shape(exact)
        if backend.simulated:
            np.testing.assert_allclose(result, exact, rtol=4 * eps)
            continue
        # NumPy may be exact by luck: a few ulps of the result are always allowed.
        allowed = 2 * relative_error(program(x), exact) + 4 * eps
        error = relative_error(result, exact)
        assert error <= allowed, f"{layout}: error {error:.3g}, NumPy's {allowed:.3g}"
