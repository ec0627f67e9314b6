"""Differences: ``diff`` and ``gradient`` (second-order central differences inside,
one-sided ones at the ends), written as compositions of primitives. Each name in
``FUNCTIONS`` joins ``numbax.numpy`` and NumPy's dispatch tables
(``numpy_lib/numpy_api.py``)."""

from __future__ import annotations

import builtins
import operator

import numpy as np

from ..ir import dtypes
from ..ir.errors import ShapeError
from ..tracer import lax
from ..tracer.core import Tracer
from ..tracer.promote import asarray, convert, normalize_axes, normalize_axis, operand
from ..tracer.source_info import error_at_user_line as _error
from . import shapes, ufuncs
from .numpy_construction import slice_axis

_NO_VALUE = object()


def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    x = asarray(a)
    n = operator.index(n)
    if n < 0:
        raise _error(ShapeError, f"diff: order must be non-negative but got {n}")
    if n == 0:
        return x
    if x.ndim == 0:
        raise _error(ShapeError, "diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, x.ndim, "diff")
    ends = []
    for end in (prepend, append):
        if end is not _NO_VALUE:
            end = asarray(end)
            if end.ndim == 0:
                end = lax.broadcast_to_rank(end, x.shape[:axis] + (1,) + x.shape[axis + 1 :])
        ends.append(end)
    parts = [e for e in (ends[0], x, ends[1]) if e is not _NO_VALUE]
    x = shapes.concatenate(parts, axis) if len(parts) > 1 else x
    # NumPy differences bools with ``!=``: they have no subtraction.
    step = ufuncs.not_equal if x.dtype == dtypes.bool_ else ufuncs.subtract
    for _ in range(n):
        size = x.shape[axis]
        later = slice_axis(x, axis, builtins.min(1, size), size)
        x = step(later, slice_axis(x, axis, 0, builtins.max(size - 1, 0)))
    return x


def gradient(f, *varargs, axis=None, edge_order=1):
    """Second-order central differences inside, one-sided ones of ``edge_order`` at the
    ends; spacing per axis is a scalar or the coordinates (concrete or traced) of the
    samples, as NumPy's ``gradient``."""
    x = asarray(f)
    axes = normalize_axes(axis, x.ndim, "gradient")
    if len(varargs) not in (0, 1, len(axes)):
        raise _error(ShapeError, f"gradient: give no spacing, one, or one per axis ({len(axes)})")
    spacings = list(varargs) if len(varargs) == len(axes) else list(varargs) * len(axes)
    spacings = spacings or [1.0] * len(axes)
    if edge_order not in (1, 2):
        raise _error(ShapeError, "gradient: edge_order greater than 2 is not supported")
    otype = dtypes.float64 if not dtypes.is_float(x.dtype) else x.dtype
    x = convert(x, otype)
    outs = [
        convert(_gradient_along(x, ax, _spacing(h, x.shape[ax]), edge_order), otype)
        for ax, h in zip(axes, spacings, strict=True)
    ]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _spacing(h, size):
    """A scalar step, or the steps between coordinates (None marks a uniform step of 1
    never reached: a scalar spacing stays a scalar)."""
    h = operand(h)
    if np.ndim(h) == 0:
        return h
    if np.ndim(h) != 1:
        raise _error(ShapeError, "gradient: distances must be either scalars or 1d")
    if h.shape[0] != size:
        raise _error(
            ShapeError,
            f"gradient: {h.shape[0]} coordinates for an axis of length {size}; when 1d, "
            "distances must match the length of the corresponding dimension",
        )
    if not dtypes.is_float(h.dtype):
        h = convert(h, dtypes.float64)
    steps = diff(h)
    if not isinstance(steps, Tracer) and steps.size and (steps == steps[0]).all():
        return steps[0]  # NumPy's uniform formulas for evenly spaced coordinates
    return steps


def _gradient_along(x, axis, step, edge_order):
    size = x.shape[axis]
    if size < edge_order + 1:
        raise _error(
            ShapeError,
            "gradient: shape of the array too small to calculate a numerical gradient, at "
            f"least (edge_order + 1) elements are required (axis {axis} has {size})",
        )

    def part(start, stop):
        return slice_axis(x, axis, start, stop)

    def along(coefficient):  # a 1-d coefficient per position, broadcast along ``axis``
        if np.ndim(coefficient) == 0:
            return coefficient
        shape = [1] * x.ndim
        shape[axis] = coefficient.shape[0]
        return shapes.reshape(coefficient, shape)

    def combine(terms):
        total = None
        for coefficient, values in terms:
            term = ufuncs.multiply(along(coefficient), values)
            total = term if total is None else ufuncs.add(total, term)
        return total

    mul, add, sub, div = ufuncs.multiply, ufuncs.add, ufuncs.subtract, ufuncs.true_divide
    if np.ndim(step) == 0:
        inner = div(sub(part(2, size), part(0, size - 2)), mul(2.0, step))
        if edge_order == 1:
            first = div(sub(part(1, 2), part(0, 1)), step)
            last = div(sub(part(size - 1, size), part(size - 2, size - 1)), step)
        else:
            first = combine(
                [(div(-1.5, step), part(0, 1)), (div(2.0, step), part(1, 2)),
                 (div(-0.5, step), part(2, 3))]
            )  # fmt: skip
            last = combine(
                [(div(0.5, step), part(size - 3, size - 2)),
                 (div(-2.0, step), part(size - 2, size - 1)),
                 (div(1.5, step), part(size - 1, size))]
            )  # fmt: skip
        return shapes.concatenate([first, inner, last], axis)
    dx1, dx2 = slice_axis(step, 0, 0, size - 2), slice_axis(step, 0, 1, size - 1)
    inner = combine(
        [(ufuncs.negative(div(dx2, mul(dx1, add(dx1, dx2)))), part(0, size - 2)),
         (div(sub(dx2, dx1), mul(dx1, dx2)), part(1, size - 1)),
         (div(dx1, mul(dx2, add(dx1, dx2))), part(2, size))]
    )  # fmt: skip
    if edge_order == 1:
        first = div(sub(part(1, 2), part(0, 1)), slice_axis(step, 0, 0, 1))
        last = div(
            sub(part(size - 1, size), part(size - 2, size - 1)),
            slice_axis(step, 0, size - 2, size - 1),
        )
    else:
        first = _second_order_edge(step, 0, 1, [part(0, 1), part(1, 2), part(2, 3)], combine)
        last = _second_order_edge(
            step, size - 2, size - 3,
            [part(size - 3, size - 2), part(size - 2, size - 1), part(size - 1, size)], combine,
            at_end=True,
        )  # fmt: skip
    return shapes.concatenate([first, inner, last], axis)


def _second_order_edge(step, i, j, values, combine, at_end=False):
    """NumPy's one-sided second-order formula over three uneven steps at an end."""
    mul, add, div = ufuncs.multiply, ufuncs.add, ufuncs.true_divide
    dx1, dx2 = slice_axis(step, 0, i, i + 1), slice_axis(step, 0, j, j + 1)
    if at_end:
        dx1, dx2 = dx2, dx1
        a = div(dx2, mul(dx1, add(dx1, dx2)))
        b = ufuncs.negative(div(add(dx2, dx1), mul(dx1, dx2)))
        c = div(add(mul(2.0, dx2), dx1), mul(dx2, add(dx1, dx2)))
    else:
        a = ufuncs.negative(div(add(mul(2.0, dx1), dx2), mul(dx1, add(dx1, dx2))))
        b = div(add(dx1, dx2), mul(dx1, dx2))
        c = ufuncs.negative(div(dx1, mul(dx2, add(dx1, dx2))))
    return combine(list(zip((a, b, c), values, strict=True)))


FUNCTIONS: dict = {"diff": diff, "gradient": gradient}
UFUNCS: dict = {}
