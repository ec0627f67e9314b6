"""Arrays on the device: recognising them, viewing them without copies, moving NumPy
arrays in.

A device array is anything with ``__cuda_array_interface__`` (Numba, CuPy, PyTorch,
JAX...) or Numba's own marker ``__cuda_ndarray__`` (which the simulator's arrays also
carry). Foreign ones are viewed through ``numba.cuda.as_cuda_array``: no copy, and
the producer's stream is synchronised as the interface asks. The kernels read flat
C-contiguous arrays, so every array crosses into them as a 1-D view.

A bfloat16 array is held on the device as its bits (``narrow_floats``): it goes in as a
``uint16`` view, every device array made here for a bfloat16 value is ``uint16``, and a
result comes back viewed as bfloat16 (``as_result``): ``copy_to_host()`` (and on a GPU
``np.asarray``) gives the bfloat16 array NumPy would, and the result goes into the next
call as it came out. (The simulator's arrays hand ``np.asarray`` their raw bytes, as
``void16``: read them with ``copy_to_host()``.)
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ...ir import dtypes
from ...ir.core import ShapedArray
from ...ir.errors import NumbaxTypeError
from .narrow_floats import is_held_as_bits, storage_dtype
from .options import simulating


def is_device_array(value) -> bool:
    return hasattr(value, "__cuda_array_interface__") or bool(
        getattr(value, "__cuda_ndarray__", False)
    )


def as_numba_array(value):
    """A Numba device array viewing ``value``'s memory (no copy)."""
    from numba import cuda

    if getattr(value, "__cuda_ndarray__", False):
        return value
    return cuda.as_cuda_array(value)


def flat_view(array):
    return array.reshape(array.size)


def device_input(value, aval: ShapedArray, stream):
    """A flat device array holding the argument: a view of a device array, or a copy
    of a host array."""
    from numba import cuda

    if is_device_array(value):
        array = as_numba_array(value)
        if np.dtype(array.dtype) != aval.dtype or tuple(array.shape) != aval.shape:
            raise NumbaxTypeError(
                f"device array of type {np.dtype(array.dtype)}{list(array.shape)} passed where "
                f"the compiled function expects {aval.str_short()}; convert it on the device "
                "first (x.astype(...))"
            )
        if array.size and not array.is_c_contiguous():
            raise NumbaxTypeError(
                "the cuda backend reads C-contiguous device arrays; pass a contiguous copy "
                "(cupy.ascontiguousarray(x), tensor.contiguous())"
            )
        return _held(flat_view(array))
    host = np.ascontiguousarray(np.asarray(value, dtype=aval.dtype)).reshape(-1)
    return cuda.to_device(_held(host), stream=stream)


def _held(array):
    """``array`` (host or device) as the device holds its values: bfloat16 as uint16."""
    return array.view(dtypes.uint16) if is_held_as_bits(array.dtype) else array


def as_result(array, aval: ShapedArray):
    """A flat device array of the program, shaped as ``aval`` and seen in its dtype."""
    array = array.reshape(aval.shape)
    return array.view(aval.dtype) if is_held_as_bits(aval.dtype) else array


def to_host(array, aval: ShapedArray, stream):
    """A flat device array of the program, copied to a NumPy array of ``aval`` (once the
    stream's work before is done: ``stream.synchronize()``)."""
    host = array.copy_to_host(stream=stream).reshape(aval.shape)
    return host.view(aval.dtype) if is_held_as_bits(aval.dtype) else host


def device_empty(size: int, dtype, stream):
    from numba import cuda

    return cuda.device_array(size, dtype=storage_dtype(dtype), stream=stream)


def device_constant(value, aval: ShapedArray, stream):
    """A device array of ``aval`` filled from a host value (consts, literal outputs)."""
    from numba import cuda

    host = np.ascontiguousarray(np.broadcast_to(np.asarray(value, aval.dtype), aval.shape))
    return cuda.to_device(_held(host.reshape(-1)), stream=stream).reshape(aval.shape)


def device_copy(array, stream):
    """A new device array with ``array``'s elements."""
    copy = device_empty(array.size, array.dtype, stream).reshape(array.shape)
    if array.size:
        copy.copy_to_device(array, stream=stream)
    return copy


def may_share(a, b) -> bool:
    """Whether two device arrays' memory may overlap: their byte ranges do."""
    (start_a, end_a), (start_b, end_b) = _byte_range(a), _byte_range(b)
    return start_a < end_b and start_b < end_a


def _byte_range(array) -> tuple[int, int]:
    if simulating():  # the simulator's device array holds a NumPy one
        return byte_bounds(as_numba_array(array)._ary)
    if not array.size:
        return 0, 0
    # The program's arrays are C-contiguous: flat buffers and their reshapes.
    start = as_numba_array(array).__cuda_array_interface__["data"][0]
    return start, start + array.size * np.dtype(array.dtype).itemsize
