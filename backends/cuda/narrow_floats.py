"""bfloat16 on the device: held as its 16 bits, computed in float32.

Numba's CUDA simulator has no bfloat16 type (and the CUDA target's comes as C++ shims
that NVRTC compiles for each kernel), so the generated kernels hold a bfloat16 as its
bits, a ``uint16``, arrays included: a host bfloat16 array goes to the device as its
``uint16`` view and a result comes back viewed as bfloat16 (``device``). The
``narrow_floats`` pass has left conversions as the only operations that read or make a
narrow float, and these are the two conversions the kernels call:

- ``bfloat16_to_float32``: the bits are the upper half of the float32's (a shift, exact);
- ``bfloat16_from_float`` (from float32 or float64): round to nearest even on the
  float32's bits, as ml_dtypes does (a float64 goes through float32 first, as ml_dtypes'
  cast does), and a NaN becomes the quiet NaN of its sign (``0x7fc0``/``0xffc0``):
  ml_dtypes' result, bit for bit.

On a GPU they are LLVM intrinsics, inlined into the kernel as a few integer operations
(a kernel that converts is bound by memory, not by these): the cpu backend's, the same
LLVM IR and typing (``backends.float_rounding``) wrapped in the CUDA target's
``intrinsic``. Integer rounding rather than sm_90's ``cvt.rn.bf16.f32``: a NaN is then
ml_dtypes' NaN, not whichever the hardware makes, and the simulator, which runs kernels
as Python, computes the same arithmetic, written with NumPy scalars (as ``devicelib``
does for the math library). The tests check both against ml_dtypes, the intrinsics
compiled for the CPU: it is the same IR.

float16 needs none of this: Numba's CUDA target has a float16 type (``ld.global.u16``
and ``cvt.f32.f16``), so it is stored as it is.
"""

from __future__ import annotations

import numpy as np

from ...ir import dtypes
from .. import float_rounding
from ..float_rounding import BFLOAT16_HALF_ULP, BFLOAT16_QUIET_NAN
from .options import simulating


def storage_dtype(dtype) -> np.dtype:
    """The dtype the device holds ``dtype`` as: uint16 bits for bfloat16."""
    return dtypes.uint16 if is_held_as_bits(dtype) else np.dtype(dtype)


def is_held_as_bits(dtype) -> bool:
    return dtypes.bfloat16 is not None and np.dtype(dtype) == dtypes.bfloat16


def simulated_to_float32(bits):
    return (np.uint32(bits) << np.uint32(16)).view(np.float32)


def simulated_from_float(x):
    value = np.float32(x)
    if isinstance(x, (float, np.float64)) and value == value and np.float64(value) != x:
        # float64: rounded to odd into float32 first, so the one rounding below is the
        # correctly rounded bfloat16 of x (as ml_dtypes >= 0.7 casts), never a double one.
        odd = value.view(np.uint32) - np.uint32(abs(np.float64(value)) > abs(x))
        value = (odd | np.uint32(1)).view(np.float32)
    bits = value.view(np.uint32)
    upper = bits >> np.uint32(16)
    if value != value:
        return np.uint16((upper & np.uint32(0x8000)) | np.uint32(BFLOAT16_QUIET_NAN))
    # Nothing carries out of 32 bits: below the NaNs, -inf's 0xff800000 is the largest.
    rounded = bits + np.uint32(BFLOAT16_HALF_ULP) + (upper & np.uint32(1))
    return np.uint16(rounded >> np.uint32(16))


if simulating():
    bfloat16_to_float32 = simulated_to_float32
    bfloat16_from_float = simulated_from_float
else:
    try:
        from numba.cuda.extending import intrinsic
    except ImportError:  # no numba-cuda: no kernel compiles, so nothing calls these
        bfloat16_to_float32 = bfloat16_from_float = None
    else:
        bfloat16_to_float32 = intrinsic(float_rounding.bfloat16_to_float32)
        bfloat16_from_float = intrinsic(float_rounding.bfloat16_from_float)
