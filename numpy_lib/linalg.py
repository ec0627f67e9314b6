"""Contractions: matmul, dot, tensordot, outer, all lowered to dot_general; einsum is in
``einsum``."""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import ShapeError, at_line
from ..tracer import lax
from ..tracer.promote import asarray, broadcast_shapes, convert, operand, result_type
from ..tracer.source_info import user_frame_info
from . import numpy_complex, ufuncs
from .einsum import einsum  # noqa: F401 - numpy_api imports it from here
from .shapes import ravel


def _promoted(a, b):
    a, b = operand(a), operand(b)
    dtype = result_type(a, b)
    return asarray(convert(a, dtype)), asarray(convert(b, dtype))


def _mismatch(name, a, b, detail):
    return ShapeError(
        at_line(
            f"{name}: shapes {a.shape} and {b.shape} are not aligned: {detail}", user_frame_info()
        )
    )


def matmul(a, b):
    a, b = _promoted(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            at_line("matmul: operands must not be scalars (use * instead)", user_frame_info())
        )
    a2 = lax.reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = lax.reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise _mismatch(
            "matmul",
            a,
            b,
            f"{a2.shape[-1]} (dim {a.ndim - 1}) != {b2.shape[-2]} (dim {max(b.ndim - 2, 0)})",
        )
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], operation="matmul")
    a3 = lax.broadcast_to_rank(a2, batch + a2.shape[-2:])
    b3 = lax.broadcast_to_rank(b2, batch + b2.shape[-2:])
    nb = len(batch)
    out = lax.dot_general(a3, b3, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))
    if a.ndim == 1:
        out = lax.reshape(out, out.shape[:-2] + out.shape[-1:])
    if b.ndim == 1:
        out = lax.reshape(out, out.shape[:-1])
    return out


def dot(a, b):
    a, b = _promoted(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return ufuncs.multiply(a, b)
    b_axis = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[b_axis]:
        raise _mismatch(
            "dot", a, b, f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[b_axis]} (dim {b_axis})"
        )
    return lax.dot_general(a, b, (((a.ndim - 1,), (b_axis,)), ((), ())))


def vdot(a, b):
    """NumPy's ``vdot``: both flattened, the first conjugated (``sum(conj(a) * b)``)."""
    a, b = _promoted(a, b)
    a, b = ravel(a), ravel(b)
    if a.size != b.size:
        raise _mismatch("vdot", a, b, "vdot flattens both, and their sizes differ")
    if dtypes.is_complex(a.dtype):
        a = numpy_complex.conj(a)
    return lax.dot_general(a, b, (((0,), (0,)), ((), ())))


def inner(a, b):
    a, b = _promoted(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return ufuncs.multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise _mismatch("inner", a, b, "last dimensions differ")
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())))


def outer(a, b):
    a, b = _promoted(a, b)
    a, b = ravel(a), ravel(b)
    return ufuncs.multiply(lax.reshape(a, (a.size, 1)), lax.reshape(b, (1, b.size)))


def tensordot(a, b, axes=2):
    a, b = _promoted(a, b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        a_axes, b_axes = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    else:
        a_axes, b_axes = axes
        a_axes = (a_axes,) if isinstance(a_axes, (int, np.integer)) else tuple(a_axes)
        b_axes = (b_axes,) if isinstance(b_axes, (int, np.integer)) else tuple(b_axes)
        a_axes = tuple(int(i) % a.ndim for i in a_axes)
        b_axes = tuple(int(i) % b.ndim for i in b_axes)
    if len(a_axes) != len(b_axes) or any(
        a.shape[i] != b.shape[j] for i, j in zip(a_axes, b_axes, strict=False)
    ):
        raise _mismatch("tensordot", a, b, f"axes {a_axes} and {b_axes} differ in size")
    return lax.dot_general(a, b, ((a_axes, b_axes), ((), ())))
