"""Float-to-integer conversions are defined for every float on every backend.

LLVM's ``fptosi`` of NaN, an infinity or an out-of-range value is poison, and LLVM folds
``abs(float(int(x)))`` to ``abs(trunc(x))``: the CPU backend returned inf where NumPy
gives the smallest integer (found by the differential fuzzer). The generated code now
checks the range, and the result is NumPy's on x86-64.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax

SPECIALS = [np.inf, -np.inf, np.nan, 3e9, -3e9, 1e300, 2.5, -2.9, 0.0, -0.0]


def _numpy(f, *args):
    with np.errstate(all="ignore"):
        return f(*args)


@pytest.mark.parametrize("source", [np.float32, np.float64])
@pytest.mark.parametrize("target", [np.int32, np.int64])
def test_out_of_range_floats_convert_as_numpy(backend, source, target):
    x = np.array(SPECIALS, source)
    for f in (
        lambda v: v.astype(target),
        lambda v: np.abs((v * 3.0).astype(target).astype(np.float64)),  # the folded form
        lambda v: (v.astype(target) + 1).astype(source) * 0.5,
    ):
        got = backend.to_host(_numpy(numbax.jit(f, backend=backend), x))
        np.testing.assert_array_equal(got, _numpy(f, x))
