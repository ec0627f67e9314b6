"""Contractions: matmul, dot, tensordot, einsum, outer, all lowered to dot_general."""

from __future__ import annotations

import numpy as np

from ..ir.errors import ShapeError, UnsupportedFunctionError, at_line
from . import lax, ufuncs
from .promote import asarray, broadcast_shapes, convert, operand, result_type
from .reductions import sum as _sum
from .shapes import ravel
from .source_info import user_frame_info


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
    return dot(ravel(a), ravel(b))


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


def einsum(subscripts, *operands, optimize=None):
    """Pairwise contraction left to right, each pair one dot_general."""
    if not isinstance(subscripts, str):
        raise UnsupportedFunctionError(
            at_line("einsum: only the string form is supported", user_frame_info())
        )
    spec = subscripts.replace(" ", "")
    if "..." in spec:
        raise UnsupportedFunctionError(
            at_line("einsum: '...' is not supported yet; write the axes out", user_frame_info())
        )
    if "->" in spec:
        inputs, output = spec.split("->")
    else:
        inputs = spec
        letters = inputs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ShapeError(
            at_line(f"einsum: {len(terms)} terms but {len(operands)} operands", user_frame_info())
        )
    dtype = result_type(*[operand(x) for x in operands])
    arrays = [asarray(convert(operand(x), dtype)) for x in operands]
    for term, x in zip(terms, arrays, strict=False):
        if len(term) != x.ndim:
            raise ShapeError(
                at_line(
                    f"einsum: term {term!r} has {len(term)} indices but the "
                    f"operand has shape {x.shape}",
                    user_frame_info(),
                )
            )
        if len(set(term)) != len(term):
            raise UnsupportedFunctionError(
                at_line(
                    f"einsum: repeated index in {term!r} (diagonals) is not supported",
                    user_frame_info(),
                )
            )
    current, term = arrays[0], terms[0]
    for k in range(1, len(arrays)):
        later = "".join(terms[k + 1 :]) + output
        current, term = _contract_pair(current, term, arrays[k], terms[k], later)
    current, term = _sum_unused(current, term, output)
    return lax.transpose(current, [term.index(c) for c in output])


def _sum_unused(x, term, keep):
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return _sum(x, axis=axes), "".join(c for c in term if c in keep)


def _contract_pair(a, ta, b, tb, later):
    a, ta = _sum_unused(a, ta, tb + later)
    b, tb = _sum_unused(b, tb, ta + later)
    batch = [c for c in ta if c in tb and c in later]
    contract = [c for c in ta if c in tb and c not in later]
    for c in batch + contract:
        if a.shape[ta.index(c)] != b.shape[tb.index(c)]:
            raise _mismatch("einsum", a, b, f"index {c!r} has different sizes")
    numbers = (
        (tuple(ta.index(c) for c in contract), tuple(tb.index(c) for c in contract)),
        (tuple(ta.index(c) for c in batch), tuple(tb.index(c) for c in batch)),
    )
    out = lax.dot_general(a, b, numbers)
    free_a = [c for c in ta if c not in batch + contract]
    free_b = [c for c in tb if c not in batch + contract]
    return out, "".join(batch + free_a + free_b)
