"""Float-to-integer conversions are defined for every float on every backend.

LLVM's ``fptosi`` of NaN, an infinity or an out-of-range value is poison, and LLVM folds
``abs(float(int(x)))`` to ``abs(trunc(x))``: the CPU backend returned inf where NumPy
gives the smallest integer (found by the differential fuzzer). The generated code now
checks the range, and the result is NumPy's on x86-64: through int32 for every integer of
up to 16 bits, wrapped (260.0 is 4 as uint8, -1.0 is 255), through int64 for uint32, and
for uint64 a value past int64's range lowered first and its top bit set back
(``dtypes.float_to_integer_steps``). NumPy's uint32 cast answers by where a value lies in
the array (its vector and scalar loops differ), so the oracle is NumPy's cast of each
element on its own (its scalar loop), which every backend, the interpreter too, gives.
The compiled backends gave the smallest integer for every value out of the target's
range (0 for 260.0 as uint8) until the corpus's uint8 ``np.around(x, -1)`` (255 rounds
to 260) failed in the GPU check's dry run under the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax

SPECIALS = [np.inf, -np.inf, np.nan, 3e9, -3e9, 1e300, 2.5, -2.9, 0.0, -0.0]
# Past each narrower type's range, and around 2^31, 2^32, 2^63 and 2^64.
WRAPPING = [260.0, -1.0, -129.0, 255.9, -0.5, 70000.7, -70000.7, 1e10, -1e10]
WRAPPING += [2.0**31, 2.0**31 - 1, 2.0**32 - 1, 2.0**32, 9.3e18, 1e19, 2e19, -1e19]
INTEGERS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _numpy(f, *args):
    with np.errstate(all="ignore"):
        return f(*args)


@pytest.mark.parametrize("source", [np.float32, np.float64])
@pytest.mark.parametrize("target", INTEGERS)
def test_out_of_range_floats_convert_as_numpy(backend, source, target):
    x = np.array(SPECIALS + WRAPPING, source)
    for f in (
        lambda v: v.astype(target),
        lambda v: np.abs((v * 3.0).astype(target).astype(np.float64)),  # the folded form
        lambda v: (v.astype(target) + 1).astype(source) * 0.5,
    ):
        got = backend.to_host(_numpy(numbax.jit(f, backend=backend), x))
        one_by_one = np.concatenate([_numpy(f, x[k : k + 1]) for k in range(x.size)])
        np.testing.assert_array_equal(got, one_by_one)
