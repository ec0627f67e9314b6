"""NumPy reductions over tracers: sum, prod, max, min, mean, var, std, argmax, argmin,
cumsum, with NumPy's axis, keepdims and dtype rules (sums of ints are int64)."""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import ShapeError, at_line
from . import lax, ufuncs
from .promote import asarray, convert, normalize_axes, normalize_axis
from .source_info import user_frame_info


def _accumulator_dtype(x_dtype, dtype):
    if dtype is not None:
        return dtypes.canonicalize(dtype)
    # NumPy sums and multiplies bools and small ints in the platform integer (int64).
    return dtypes.int64 if x_dtype.kind in "biu" else x_dtype


def _keep(out, x_shape, axes, keepdims):
    if not keepdims:
        return out
    return lax.reshape(out, [1 if i in axes else d for i, d in enumerate(x_shape)])


def _ufunc_reduce_axes(axis, ndim: int, name: str) -> tuple[int, ...]:
    """NumPy's ufunc reductions (sum, prod, max, min) let a 0-d array take an int axis of
    0 or -1 (not a tuple), and reduce nothing; anything else goes through the one axis
    check."""
    if ndim == 0 and isinstance(axis, (int, np.integer)) and int(axis) in (0, -1):
        return ()
    return normalize_axes(axis, ndim, name)


def _as_1d_if_scalar(x):
    """NumPy's argmax, argmin, cumsum and take see a 0-d array as one of shape (1,)."""
    return lax.reshape(x, (1,)) if x.ndim == 0 else x


def _reduction(prim_fn, name, accumulate=True):
    def fn(a, axis=None, dtype=None, keepdims=False, **unsupported):
        _no_extra(name, unsupported)
        x = asarray(a)
        axes = _ufunc_reduce_axes(axis, x.ndim, name)
        out_dtype = _accumulator_dtype(x.dtype, dtype) if accumulate else x.dtype
        if not accumulate and any(x.shape[i] == 0 for i in axes):
            raise ShapeError(
                at_line(
                    f"{name} of an empty axis has no identity (NumPy raises too); "
                    "pass a non-empty array or use where= logic first",
                    user_frame_info(),
                )
            )
        out = prim_fn(convert(x, out_dtype), axes)
        return _keep(out, x.shape, axes, keepdims)

    fn.__name__ = name
    return fn


sum = _reduction(lax.reduce_sum, "sum")
prod = _reduction(lax.reduce_prod, "prod")
_max = _reduction(lax.reduce_max, "max", accumulate=False)
_min = _reduction(lax.reduce_min, "min", accumulate=False)


def max(a, axis=None, keepdims=False, **unsupported):
    return _max(a, axis=axis, keepdims=keepdims, **unsupported)


def min(a, axis=None, keepdims=False, **unsupported):
    return _min(a, axis=axis, keepdims=keepdims, **unsupported)


amax, amin = max, min


def _count(x, axes) -> int:
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def mean(a, axis=None, dtype=None, keepdims=False, **unsupported):
    _no_extra("mean", unsupported)
    x = asarray(a)
    axes = normalize_axes(axis, x.ndim, "mean")
    out_dtype = dtypes.canonicalize(dtype) if dtype else dtypes.float_result_type(x.dtype)
    total = lax.reduce_sum(convert(x, out_dtype), axes)
    out = ufuncs.true_divide(total, np.asarray(_count(x, axes), out_dtype))
    return _keep(out, x.shape, axes, keepdims)


def var(a, axis=None, dtype=None, ddof=0, keepdims=False, **unsupported):
    _no_extra("var", unsupported)
    x = asarray(a)
    axes = normalize_axes(axis, x.ndim, "var")
    out_dtype = dtypes.canonicalize(dtype) if dtype else dtypes.float_result_type(x.dtype)
    x = convert(x, out_dtype)
    centered = ufuncs.subtract(x, mean(x, axis=axes, keepdims=True))
    total = lax.reduce_sum(ufuncs.multiply(centered, centered), axes)
    out = ufuncs.true_divide(total, np.asarray(_count(x, axes) - ddof, out_dtype))
    return _keep(out, x.shape, axes, keepdims)


def std(a, axis=None, dtype=None, ddof=0, keepdims=False, **unsupported):
    return ufuncs.sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **unsupported))


def _arg(prim_fn, name):
    def fn(a, axis=None, keepdims=False, **unsupported):
        _no_extra(name, unsupported)
        x = asarray(a)
        if axis is None:
            out = prim_fn(lax.reshape(x, (x.size,)), 0)
            return lax.reshape(out, (1,) * x.ndim) if keepdims else out
        if x.ndim == 0:
            return prim_fn(_as_1d_if_scalar(x), normalize_axis(axis, 1, name))
        axis = normalize_axis(axis, x.ndim, name)
        if x.shape[axis] == 0:
            raise ShapeError(at_line(f"{name} of an empty axis", user_frame_info()))
        return _keep(prim_fn(x, axis), x.shape, (axis,), keepdims)

    fn.__name__ = name
    return fn


argmax = _arg(lax.argmax, "argmax")
argmin = _arg(lax.argmin, "argmin")


def cumsum(a, axis=None, dtype=None):
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    x = _as_1d_if_scalar(x)
    axis = normalize_axis(axis, x.ndim, "cumsum")
    return lax.cumsum(convert(x, _accumulator_dtype(x.dtype, dtype)), axis)


def _no_extra(name, unsupported):
    if unsupported:
        from ..ir.errors import UnsupportedFunctionError

        raise UnsupportedFunctionError(
            at_line(
                f"{name}() does not support the argument(s) {sorted(unsupported)} in numbax",
                user_frame_info(),
            )
        )
