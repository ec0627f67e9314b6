"""NumPy reductions over tracers: sum, prod, max, min, mean, var, std, argmax, argmin,
cumsum, with NumPy's axis, keepdims and dtype rules (sums of ints are int64)."""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError, UnsupportedFunctionError, at_line
from ..tracer import lax
from ..tracer.core import Tracer
from ..tracer.promote import (
    asarray,
    broadcast_shapes,
    broadcast_to,
    convert,
    normalize_axes,
    normalize_axis,
    python_scalar_as,
)
from ..tracer.source_info import user_frame_info
from . import complex_math, ufuncs


def accumulator_dtype(x_dtype, dtype):
    if dtype is not None:
        return dtypes.canonicalize(dtype)
    # NumPy sums and multiplies bools and small ints in the platform integer (int64),
    # unsigned ones in uint64.
    if x_dtype.kind == "u":
        return dtypes.uint64
    return dtypes.int64 if x_dtype.kind in "bi" else x_dtype


def keep_dims(out, x_shape, axes, keepdims):
    if not keepdims:
        return out
    return lax.reshape(out, [1 if i in axes else d for i, d in enumerate(x_shape)])


def ufunc_reduce_axes(axis, ndim: int, name: str) -> tuple[int, ...]:
    """NumPy's ufunc reductions (sum, prod, max, min) let a 0-d array take an int axis of
    0 or -1 (not a tuple), and reduce nothing; anything else goes through the one axis
    check."""
    if ndim == 0 and isinstance(axis, (int, np.integer)) and int(axis) in (0, -1):
        return ()
    return normalize_axes(axis, ndim, name)


def as_1d_if_scalar(x):
    """NumPy's argmax, argmin, cumsum and take see a 0-d array as one of shape (1,)."""
    return lax.reshape(x, (1,)) if x.ndim == 0 else x


def where_mask(where, shape, name):
    """``where=`` as a bool array of ``shape`` (NumPy broadcasts it against the array and
    casts it safely, so only bools are accepted)."""
    mask = asarray(where)
    if mask.dtype != dtypes.bool_:
        raise NumbaxTypeError(
            at_line(
                f"{name}(where=...) needs a bool mask, got {mask.dtype}; pass a comparison "
                "(where=x > 0) or .astype(bool)",
                user_frame_info(),
            )
        )
    if broadcast_shapes(mask.shape, shape, operation=f"{name}(where=...)") != tuple(shape):
        raise ShapeError(
            at_line(
                f"{name}: the where= mask of shape {mask.shape} does not broadcast to the "
                f"array's shape {tuple(shape)}",
                user_frame_info(),
            )
        )
    return broadcast_to(mask, shape)


def is_unmasked(where) -> bool:
    return where is True or (isinstance(where, np.ndarray) and where.shape == () and bool(where))


def masked(x, where, identity, name):
    """``x`` with the entries ``where=`` leaves out replaced by the reduction's identity."""
    if is_unmasked(where):
        return x
    return lax.select(where_mask(where, x.shape, name), x, np.asarray(identity, x.dtype))


def _initial_value(initial, dtype, name):
    """``initial=`` as a scalar of the reduction's dtype (NumPy casts it unsafely, but
    refuses a Python int outside the dtype's range, as NumPy 2 does)."""
    if type(initial) is int:
        python_scalar_as(initial, dtype)
    value = asarray(initial)
    if value.shape != ():
        raise ShapeError(
            at_line(
                f"{name}(initial=...) must be a scalar, got shape {value.shape}",
                user_frame_info(),
            )
        )
    return (
        lax.convert_element_type(value, dtype) if isinstance(value, Tracer) else value.astype(dtype)
    )


def masked_reduce(prim_fn, x, axes, identity, where, name):
    """``prim_fn`` over ``axes`` of ``x`` after ``masked``; a reduction over an empty axis is
    ``identity`` (known at trace time, so no loop runs over nothing)."""
    x = masked(x, where, identity, name)
    if any(x.shape[a] == 0 for a in axes):
        kept = [d for i, d in enumerate(x.shape) if i not in axes]
        return lax.full(kept, identity, x.dtype)
    return prim_fn(x, axes)


def _lowest(dtype):
    """The identity of max: below every value of ``dtype`` (complex: lexicographically)."""
    if dtypes.is_complex(dtype):
        return complex(-np.inf, -np.inf)
    if dtypes.is_float(dtype):
        return -np.inf
    return False if dtype == dtypes.bool_ else np.iinfo(dtype).min


def _highest(dtype):
    if dtypes.is_complex(dtype):
        return complex(np.inf, np.inf)
    if dtypes.is_float(dtype):
        return np.inf
    return True if dtype == dtypes.bool_ else np.iinfo(dtype).max


def _accumulation(prim_fn, combine, identity, name):
    def fn(a, axis=None, dtype=None, keepdims=False, initial=None, where=True, **unsupported):
        refuse_unsupported(name, unsupported)
        x = asarray(a)
        axes = ufunc_reduce_axes(axis, x.ndim, name)
        out_dtype = accumulator_dtype(x.dtype, dtype)
        out = masked_reduce(prim_fn, convert(x, out_dtype), axes, identity, where, name)
        if initial is not None:
            out = combine(out, _initial_value(initial, out_dtype, name))
        return keep_dims(out, x.shape, axes, keepdims)

    fn.__name__ = name
    return fn


sum = _accumulation(lax.reduce_sum, ufuncs.add, 0, "sum")
prod = _accumulation(lax.reduce_prod, ufuncs.multiply, 1, "prod")


def _chooser(prim_fn, combine, identity_of, name):
    def fn(a, axis=None, keepdims=False, initial=None, where=True, **unsupported):
        refuse_unsupported(name, unsupported)
        x = asarray(a)
        axes = ufunc_reduce_axes(axis, x.ndim, name)
        if initial is None and not is_unmasked(where):
            raise ShapeError(
                at_line(
                    f"{name}(where=...) needs initial=: {name} has no identity, so the value of "
                    "a slice the mask leaves empty must be given (NumPy raises too); pass "
                    f"initial=, e.g. {name}(x, where=mask, initial=-numpy.inf)",
                    user_frame_info(),
                )
            )
        if initial is None and any(x.shape[i] == 0 for i in axes):
            raise ShapeError(
                at_line(
                    f"{name} of an empty axis has no identity (NumPy raises too); pass "
                    f"initial= (the value an empty slice takes) or a non-empty array",
                    user_frame_info(),
                )
            )
        out = masked_reduce(prim_fn, x, axes, identity_of(x.dtype), where, name)
        if initial is not None:
            out = combine(out, _initial_value(initial, x.dtype, name))
        return keep_dims(out, x.shape, axes, keepdims)

    fn.__name__ = name
    return fn


# Complex numbers are ordered lexicographically, with NumPy's NaN rules (complex_math).
max = _chooser(
    ufuncs.real_or_complex(lax.reduce_max, complex_math.reduce_max), ufuncs.maximum, _lowest, "max"
)
min = _chooser(
    ufuncs.real_or_complex(lax.reduce_min, complex_math.reduce_min), ufuncs.minimum, _highest, "min"
)
amax, amin = max, min


def _count(x, axes, where, dtype):
    """How many entries each slice reduces: static without a mask, counted with one."""
    if is_unmasked(where):
        return np.asarray(np.prod([x.shape[a] for a in axes], dtype=np.int64), dtype)
    mask = where_mask(where, x.shape, "mean")
    return lax.reduce_sum(lax.convert_element_type(mask, dtype), axes)


def _float_dtype(x, dtype):
    return dtypes.canonicalize(dtype) if dtype else dtypes.float_result_type(x.dtype)


def _divide(total, count, dtype):
    # NumPy divides into the requested dtype unsafely: an integer dtype= truncates.
    return convert(ufuncs.true_divide(total, count), dtype)


def mean(a, axis=None, dtype=None, keepdims=False, *, where=True, **unsupported):
    refuse_unsupported("mean", unsupported)
    x = asarray(a)
    axes = normalize_axes(axis, x.ndim, "mean")
    out_dtype = _float_dtype(x, dtype)
    # NumPy takes the mean of float16 in float32 and rounds once at the end.
    sum_dtype = dtypes.float32 if dtypes.is_narrow_float(out_dtype) else out_dtype
    total = lax.reduce_sum(masked(convert(x, sum_dtype), where, 0, "mean"), axes)
    out = _divide(total, _count(x, axes, where, _division_dtype(sum_dtype)), out_dtype)
    return keep_dims(out, x.shape, axes, keepdims)


def _division_dtype(dtype):
    return dtype if dtypes.is_float(dtype) else dtypes.float64


def var(
    a, axis=None, dtype=None, ddof=0, keepdims=False, *, where=True, correction=None, **unsupported
):
    refuse_unsupported("var", unsupported)
    ddof = resolve_ddof(ddof, correction, "var")
    x = asarray(a)
    axes = normalize_axes(axis, x.ndim, "var")
    out_dtype = _float_dtype(x, dtype)
    x = convert(x, _division_dtype(out_dtype))
    centered = ufuncs.subtract(x, mean(x, axis=axes, keepdims=True, where=where))
    squares = masked(ufuncs.multiply(centered, centered), where, 0, "var")
    count = _count(x, axes, where, x.dtype)
    # NumPy clips the degrees of freedom at 0: too large a ddof gives inf or nan, not a sign flip.
    dof = ufuncs.maximum(ufuncs.subtract(count, np.asarray(ddof, x.dtype)), np.asarray(0, x.dtype))
    out = _divide(lax.reduce_sum(squares, axes), dof, out_dtype)
    return keep_dims(out, x.shape, axes, keepdims)


def resolve_ddof(ddof, correction, name):
    if correction is None:
        return ddof
    if ddof != 0:
        raise NumbaxTypeError(
            at_line(
                f"{name}: ddof= and correction= name the same thing; pass only one (NumPy "
                "refuses both too)",
                user_frame_info(),
            )
        )
    return correction


def std(
    a, axis=None, dtype=None, ddof=0, keepdims=False, *, where=True, correction=None, **unsupported
):
    refuse_unsupported("std", unsupported)
    out = var(a, axis, dtype, ddof, keepdims, where=where, correction=correction)
    return ufuncs.sqrt(out)


def _arg(prim_fn, name):
    def fn(a, axis=None, keepdims=False, **unsupported):
        refuse_unsupported(name, unsupported)
        x = asarray(a)
        if axis is None:
            out = prim_fn(lax.reshape(x, (x.size,)), 0)
            return lax.reshape(out, (1,) * x.ndim) if keepdims else out
        if x.ndim == 0:
            return prim_fn(as_1d_if_scalar(x), normalize_axis(axis, 1, name))
        axis = normalize_axis(axis, x.ndim, name)
        if x.shape[axis] == 0:
            raise ShapeError(at_line(f"{name} of an empty axis", user_frame_info()))
        return keep_dims(prim_fn(x, axis), x.shape, (axis,), keepdims)

    fn.__name__ = name
    return fn


argmax = _arg(ufuncs.real_or_complex(lax.argmax, complex_math.argmax), "argmax")
argmin = _arg(ufuncs.real_or_complex(lax.argmin, complex_math.argmin), "argmin")


def cumsum(a, axis=None, dtype=None, **unsupported):
    refuse_unsupported("cumsum", unsupported)
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    x = as_1d_if_scalar(x)
    axis = normalize_axis(axis, x.ndim, "cumsum")
    return lax.cumsum(convert(x, accumulator_dtype(x.dtype, dtype)), axis)


def refuse_unsupported(name, unsupported):
    """Refuse, by name, the keyword arguments NumPy takes and numbax does not."""
    if "out" in unsupported:
        raise UnsupportedFunctionError(
            at_line(
                f"numbax.numpy.{name}(..., out=...) is not supported: use the returned value "
                f"(y = {name}(...)), or call numpy.{name}(..., out=...), which numbax traces "
                "by writing the result into out",
                user_frame_info(),
            )
        )
    if unsupported:
        raise UnsupportedFunctionError(
            at_line(
                f"{name}() does not support the argument(s) {sorted(unsupported)} in numbax",
                user_frame_info(),
            )
        )
