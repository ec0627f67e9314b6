"""Reductions and scans beyond sum/max/min/prod/mean: any/all, the nan-reductions, cumprod,
nancumsum, ptp, average, count_nonzero, cov and corrcoef; compositions of primitives.

A nan-reduction replaces the NaNs by the reduction's identity *before* reducing (and masks
them out of counts), so no NaN meets a multiplication in the derivative: the gradient at a
NaN position is exactly 0. Each name in ``FUNCTIONS`` joins ``numbax.numpy`` and NumPy's
dispatch tables (``numpy_lib/numpy_api.py``).
"""

from __future__ import annotations

import builtins

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError, at_line
from ..tracer import lax
from ..tracer.core import known_value
from ..tracer.promote import asarray, convert, normalize_axes, normalize_axis
from ..tracer.source_info import user_frame_info, warn_at_user_line
from . import linalg, numpy_complex, reductions, shapes, ufuncs
from .numpy_construction import diagonal
from .reductions import (
    accumulator_dtype,
    as_1d_if_scalar,
    is_unmasked,
    keep_dims,
    refuse_unsupported,
    resolve_ddof,
    ufunc_reduce_axes,
)


def _logical(prim_fn, identity, name):
    def fn(a, axis=None, keepdims=False, *, where=True, **unsupported):
        refuse_unsupported(name, unsupported)
        x = as_bool(asarray(a))
        axes = ufunc_reduce_axes(axis, x.ndim, name)
        out = reductions.masked_reduce(prim_fn, x, axes, identity, where, name)
        return keep_dims(out, x.shape, axes, keepdims)

    fn.__name__ = name
    return fn


# On bools, max is "any is true" and min is "all are true".
any = _logical(lax.reduce_max, False, "any")
all = _logical(lax.reduce_min, True, "all")


def as_bool(x):
    return x if x.dtype == dtypes.bool_ else ufuncs.not_equal(x, 0)


def count_nonzero(a, axis=None, *, keepdims=False):
    return reductions.sum(as_bool(asarray(a)), axis=axis, keepdims=keepdims)


# ------------------------------------------------------------------ nan-reductions


def _is_float(x) -> bool:
    return dtypes.is_float(x.dtype)


def _nan_to(x, value):
    """``x`` with its NaNs replaced by ``value``: what a nan-reduction reduces."""
    if not _is_float(x):
        return x
    return lax.select(ufuncs.isnan(x), np.asarray(value, x.dtype), x)


def _not_nan(x, where):
    """The entries a nan-reduction counts: not NaN, and selected by ``where=``."""
    keep = ufuncs.logical_not(ufuncs.isnan(x))
    return keep if is_unmasked(where) else ufuncs.logical_and(keep, where)


def nansum(a, axis=None, dtype=None, keepdims=False, initial=None, where=True, **unsupported):
    refuse_unsupported("nansum", unsupported)
    x = asarray(a)
    return reductions.sum(_nan_to(x, 0), axis, dtype, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, keepdims=False, initial=None, where=True, **unsupported):
    refuse_unsupported("nanprod", unsupported)
    x = asarray(a)
    return reductions.prod(_nan_to(x, 1), axis, dtype, keepdims, initial, where)


def _nan_chooser(reduce, identity, name):
    def fn(a, axis=None, keepdims=False, initial=None, where=True, **unsupported):
        refuse_unsupported(name, unsupported)
        x = asarray(a)
        out = reduce(_nan_to(x, identity), axis, keepdims, initial, where)
        if not _is_float(x) or initial is not None:
            return out
        # A slice of NaNs only is NaN (NumPy warns); with initial= it is the initial value.
        none_left = ufuncs.logical_not(any(_not_nan(x, where), axis, keepdims))
        return lax.select(none_left, np.asarray(np.nan, x.dtype), out)

    fn.__name__ = name
    return fn


nanmax = _nan_chooser(reductions.max, -np.inf, "nanmax")
nanmin = _nan_chooser(reductions.min, np.inf, "nanmin")


def _nan_arg(arg, worst, name):
    def fn(a, axis=None, *, keepdims=False, **unsupported):
        refuse_unsupported(name, unsupported)
        x = asarray(a)
        if not _is_float(x):
            return arg(x, axis, keepdims)
        _check_not_empty(x, axis, name)
        index = arg(_nan_to(x, worst), axis, keepdims)
        found = any(_not_nan(x, True), axis, keepdims)
        return lax.select(found, index, np.asarray(-1, index.dtype))

    fn.__name__ = name
    fn.__doc__ = f"""NumPy's {name}, NaNs counted as the worst value; -1 for a slice of NaNs
    only. NumPy raises ValueError ("All-NaN slice encountered") there, which a traced
    function cannot do on data, so numbax returns -1, as ``jax.numpy`` does."""
    return fn


def _check_not_empty(x, axis, name):
    if x.ndim == 0:
        return
    size = x.size if axis is None else x.shape[normalize_axis(axis, x.ndim, name)]
    if size == 0:
        raise ShapeError(at_line(f"{name} of an empty axis (NumPy raises too)", user_frame_info()))


nanargmax = _nan_arg(reductions.argmax, -np.inf, "nanargmax")
nanargmin = _nan_arg(reductions.argmin, np.inf, "nanargmin")


def nanmean(a, axis=None, dtype=None, keepdims=False, *, where=True, **unsupported):
    refuse_unsupported("nanmean", unsupported)
    x = asarray(a)
    if not _is_float(x):
        return reductions.mean(x, axis, dtype, keepdims, where=where)
    return reductions.mean(_nan_to(x, 0), axis, dtype, keepdims, where=_not_nan(x, where))


def nanvar(
    a, axis=None, dtype=None, ddof=0, keepdims=False, *, where=True, correction=None, **unsupported
):
    refuse_unsupported("nanvar", unsupported)
    x = asarray(a)
    if not _is_float(x):
        return reductions.var(x, axis, dtype, ddof, keepdims, where=where, correction=correction)
    keep = _not_nan(x, where)
    out = reductions.var(
        _nan_to(x, 0), axis, dtype, ddof, keepdims, where=keep, correction=correction
    )
    # Unlike var, NumPy's nanvar is NaN wherever no degree of freedom is left.
    count = reductions.sum(keep, axis, keepdims=keepdims)
    no_freedom = ufuncs.less_equal(count, resolve_ddof(ddof, correction, "nanvar"))
    return lax.select(no_freedom, np.asarray(np.nan, out.dtype), out)


def nanstd(
    a, axis=None, dtype=None, ddof=0, keepdims=False, *, where=True, correction=None, **unsupported
):
    refuse_unsupported("nanstd", unsupported)
    out = nanvar(a, axis, dtype, ddof, keepdims, where=where, correction=correction)
    return ufuncs.sqrt(out)


# ------------------------------------------------------------------ scans


def cumprod(a, axis=None, dtype=None, **unsupported):
    """The running product, as log2(n) rounds of multiplying by a shifted copy
    (Hillis-Steele): products only, so the derivative is exact at zeros and negatives
    (no division, no logarithm) and every round is one elementwise kernel."""
    refuse_unsupported("cumprod", unsupported)
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    x = as_1d_if_scalar(x)
    axis = normalize_axis(axis, x.ndim, "cumprod")
    x = convert(x, accumulator_dtype(x.dtype, dtype))
    n, shift = x.shape[axis], 1
    one = np.ones((), x.dtype)
    while shift < n:
        limits = [n - shift if d == axis else size for d, size in enumerate(x.shape)]
        head = lax.slice(x, [0] * x.ndim, limits)
        padding = [(shift, 0) if d == axis else (0, 0) for d in range(x.ndim)]
        x = lax.mul(x, lax.pad(head, one, padding))
        shift *= 2
    return x


def nancumsum(a, axis=None, dtype=None, **unsupported):
    refuse_unsupported("nancumsum", unsupported)
    return reductions.cumsum(_nan_to(asarray(a), 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None, **unsupported):
    refuse_unsupported("nancumprod", unsupported)
    return cumprod(_nan_to(asarray(a), 1), axis, dtype)


# ------------------------------------------------------------------ ptp, average


def ptp(a, axis=None, keepdims=False, **unsupported):
    refuse_unsupported("ptp", unsupported)
    x = asarray(a)
    if x.dtype == dtypes.bool_:
        raise NumbaxTypeError(
            at_line(
                "ptp of a bool array subtracts bools, which NumPy refuses too; pass "
                "x.astype(int) (or use any/all)",
                user_frame_info(),
            )
        )
    high = reductions.max(x, axis, keepdims)
    return ufuncs.subtract(high, reductions.min(x, axis, keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """NumPy's weighted mean. Where the weights of a slice sum to 0 NumPy raises
    ZeroDivisionError; under tracing that is data, so the slice is inf or nan."""
    x = asarray(a)
    if weights is None:
        out = reductions.mean(x, axis, keepdims=keepdims)
        count = np.prod([x.shape[k] for k in normalize_axes(axis, x.ndim, "average")])
        return (out, lax.full(out.shape, count, out.dtype)) if returned else out
    w = asarray(weights)
    axes = normalize_axes(axis, x.ndim, "average")
    # NumPy averages ints in float64, floats in their promoted dtype.
    floor = [dtypes.float64] if x.dtype.kind in "bi" else []
    dtype = dtypes.result_type(x.dtype, w.dtype, *floor)
    w = _weights_along(w, x.shape, axis, axes)
    scale = reductions.sum(w, axes, dtype, keepdims)
    total = reductions.sum(ufuncs.multiply(convert(x, dtype), convert(w, dtype)), axes)
    out = ufuncs.true_divide(keep_dims(total, x.shape, axes, keepdims), scale)
    if not returned:
        return out
    return out, lax.broadcast_to_rank(scale, out.shape) if scale.shape != out.shape else scale


def _weights_along(w, shape, axis, axes):
    """NumPy's rule: weights of ``a``'s shape, or of the shape of the averaged axes (in
    the order ``axis`` names them), spread along those axes."""
    if w.shape == tuple(shape):
        return w
    if axis is None:
        raise NumbaxTypeError(
            at_line(
                f"average: weights of shape {w.shape} differ from a's shape {tuple(shape)}, "
                "so axis= must say which axes they weigh (NumPy refuses too)",
                user_frame_info(),
            )
        )
    if w.shape != tuple(shape[k] for k in axes):
        raise ShapeError(
            at_line(
                f"average: weights of shape {w.shape} do not match a's shape "
                f"{tuple(shape)} along axis {axis}; give weights of shape "
                f"{tuple(shape[k] for k in axes)} or {tuple(shape)}",
                user_frame_info(),
            )
        )
    w = lax.transpose(w, np.argsort(axes))
    return lax.reshape(w, [d if k in axes else 1 for k, d in enumerate(shape)])


# ------------------------------------------------------------------ cov, corrcoef


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """NumPy's covariance, in float64 for ints (``dtype=`` otherwise). ``fweights`` are
    checked to be whole and not negative, ``aweights`` not negative, when known while
    tracing; the degrees of freedom of weighted data are traced (0 when not positive)."""
    if ddof is not None and ddof != int(ddof):
        raise ShapeError(at_line("cov: ddof must be integer", user_frame_info()))
    variables = [asarray(v) for v in (m, y) if v is not None]
    if builtins.any(v.ndim > 2 for v in variables):
        raise ShapeError(at_line("cov: m and y must have at most 2 dimensions", user_frame_info()))
    dtype = dtypes.result_type(*variables, dtypes.float64) if dtype is None else dtype
    rows = [_observations(v, rowvar, dtype, first=k == 0) for k, v in enumerate(variables)]
    if rows[0].shape[0] == 0:
        return np.array([]).reshape(0, 0)
    x = shapes.concatenate(rows, 0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    w = _product(_sample_weights(fweights, x, "fweights"), _sample_weights(aweights, x, "aweights"))
    average_x, w_sum = average(x, axis=1, weights=w, returned=True)
    x = convert(ufuncs.subtract(x, lax.reshape(average_x, (x.shape[0], 1))), x.dtype)
    spread = x if w is None else ufuncs.multiply(x, w)
    spread = numpy_complex.conjugate(spread) if dtypes.is_complex(spread.dtype) else spread
    c = linalg.matmul(x, shapes.transpose(spread))
    factor = _inverse_freedom(x.shape[1], ddof, w, w_sum, aweights)
    return shapes.squeeze(convert(ufuncs.multiply(c, factor), c.dtype))


def _observations(v, rowvar, dtype, first):
    """One variable a row: NumPy's ``array(v, ndmin=2)``, transposed when not ``rowvar``
    (``m`` unless it is 1-d, ``y`` unless it is one row)."""
    v = convert(lax.reshape(v, (1,) * (2 - v.ndim) + v.shape), dtype)
    one_row = (v.shape[0] == 1) if not first else False
    return v if rowvar or one_row else shapes.transpose(v)


def _sample_weights(weights, x, name):
    if weights is None:
        return None
    w = convert(asarray(weights), dtypes.float64)
    if w.ndim > 1 or w.shape[0] != x.shape[1]:
        raise ShapeError(
            at_line(
                f"cov: {name} must be 1-d with one weight per observation ({x.shape[1]}); "
                f"got shape {w.shape}",
                user_frame_info(),
            )
        )
    known = known_value(w)
    if known is not None and (known < 0).any():
        raise ShapeError(at_line(f"cov: {name} cannot be negative", user_frame_info()))
    if known is not None and name == "fweights" and (known != np.around(known)).any():
        raise NumbaxTypeError(at_line("cov: fweights must be integer", user_frame_info()))
    return w


def _product(fweights, aweights):
    if fweights is None or aweights is None:
        return aweights if fweights is None else fweights
    return ufuncs.multiply(fweights, aweights)


def _inverse_freedom(count, ddof, w, w_sum, aweights):
    """``1 / fact``, NumPy's normalization; ``fact <= 0`` counts as 0 (an infinite factor)."""
    if w is None:
        fact = count - ddof
        if fact <= 0:
            warn_at_user_line("Degrees of freedom <= 0 for slice", RuntimeWarning)
        with np.errstate(divide="ignore"):
            return np.true_divide(1, builtins.max(fact, 0.0))
    w_sum = lax.reshape(lax.slice(w_sum, [0], [1]), ())
    if ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = ufuncs.subtract(w_sum, ddof)
    else:
        correction = reductions.sum(ufuncs.multiply(w, convert(asarray(aweights), w.dtype)))
        fact = ufuncs.subtract(w_sum, ufuncs.true_divide(ufuncs.multiply(ddof, correction), w_sum))
    fact = ufuncs.where(ufuncs.less_equal(fact, 0), 0.0, fact)
    return ufuncs.true_divide(1, fact)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if np.ndim(c) == 0:
        return ufuncs.true_divide(c, c)  # NaN where the variance is NaN, inf or 0, else 1
    variances = numpy_complex.real(diagonal(c))
    stddev = ufuncs.sqrt(variances)
    c = ufuncs.true_divide(ufuncs.true_divide(c, lax.reshape(stddev, (stddev.shape[0], 1))), stddev)
    if not dtypes.is_complex(c.dtype):
        return ufuncs.clip(c, -1, 1)
    clipped = [ufuncs.clip(part(c), -1, 1) for part in (numpy_complex.real, numpy_complex.imag)]
    return numpy_complex.make_complex(*clipped)


FUNCTIONS: dict = {
    "all": all,
    "any": any,
    "average": average,
    "corrcoef": corrcoef,
    "count_nonzero": count_nonzero,
    "cov": cov,
    "cumprod": cumprod,
    "nanargmax": nanargmax,
    "nanargmin": nanargmin,
    "nancumprod": nancumprod,
    "nancumsum": nancumsum,
    "nanmax": nanmax,
    "nanmean": nanmean,
    "nanmin": nanmin,
    "nanprod": nanprod,
    "nanstd": nanstd,
    "nansum": nansum,
    "nanvar": nanvar,
    "ptp": ptp,
}
UFUNCS: dict = {}
