"""``numpy.fft``, traced: every transform is the ``fft`` primitive (``ir/fft.py``) with
the front end's pads, slices, transposes and scales around it.

- ``n`` / ``s``: each transformed axis is cut or zero-padded to its length first (for
  ``irfft``, the input's last axis to ``n // 2 + 1``), as NumPy does.
- ``axis`` / ``axes``: the axes move to the end, where the primitive transforms them,
  and back. More than three axes are transformed three at a time (the transform is
  separable); ``rfftn`` does its last axis first, ``irfftn`` its last axis last.
  ``hfft``/``ihfft`` are ``irfft``/``rfft`` of the conjugate, as NumPy's.
- ``norm``: the primitive's ``fft``/``rfft`` are unscaled and ``ifft``/``irfft`` carry
  ``1/n`` (``"backward"``); ``"ortho"`` and ``"forward"`` multiply by a constant.

Dtypes are NumPy 2's: float32 and complex64 transform in single precision (complex64
results), integers and bools in double. ``fftfreq``, ``rfftfreq``, ``fftshift`` and
``ifftshift`` are compositions. Each name in ``FUNCTIONS`` joins ``numbax.numpy.fft``
and NumPy's dispatch table (``np.fft.fft(tracer)`` is traced).
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError
from ..tracer import functionalize, lax
from ..tracer.core import Tracer
from ..tracer.lax_complex import conj, fft_primitive
from ..tracer.promote import asarray, normalize_axes, normalize_axis
from ..tracer.source_info import error_at_user_line as _error
from .numpy_construction import roll
from .registry import implements

FUNCTIONS: dict = {}
NORMS = (None, "backward", "ortho", "forward")
_MAX_AXES = 3  # the primitive transforms one to three trailing axes


# --- operands ------------------------------------------------------------------------------


def _complex_operand(a, name: str):
    x = asarray(a)
    if dtypes.is_complex(x.dtype):
        return x
    return lax.convert_element_type(x, dtypes.complex_dtype(_real_dtype(x.dtype)))


def _real_operand(a, name: str):
    x = asarray(a)
    if dtypes.is_complex(x.dtype):
        raise _error(
            NumbaxTypeError,
            f"numpy.fft.{name} needs a real input, got {x.dtype} (NumPy raises TypeError "
            "too): take np.real(x) first, or use numpy.fft.fft for a complex signal",
        )
    dtype = _real_dtype(x.dtype)
    return x if x.dtype == dtype else lax.convert_element_type(x, dtype)


def _real_dtype(dtype) -> np.dtype:
    """float32 stays single precision; integers and bools transform in float64."""
    dtype = np.dtype(dtype)
    if dtype in (dtypes.float32, dtypes.complex64):
        return dtypes.float32
    return dtypes.float64


def _check_norm(norm, name: str) -> None:
    if norm not in NORMS:
        raise _error(
            ValueError,
            f'numpy.fft.{name}: norm={norm!r} is not one of "backward", "ortho", "forward"',
        )


def _written(result, out, name: str):
    """NumPy 2's ``out=``: the result written into ``out`` (a traced array the function
    made, or an argument, written back after the call)."""
    if out is None:
        return result
    return functionalize.write_out(out, result, f"numpy.fft.{name}", "same_kind")


def _resized(x, axis: int, length: int, name: str):
    """``x`` cut or zero-padded along ``axis`` to ``length``, as NumPy's ``n``."""
    if length < 1:
        raise _error(ShapeError, f"numpy.fft.{name}: invalid number of data points ({length})")
    size = x.shape[axis]
    if size == length:
        return x
    if size > length:
        limits = list(x.shape)
        limits[axis] = length
        return lax.slice(x, [0] * x.ndim, limits)
    config = [(0, 0)] * x.ndim
    config[axis] = (0, length - size)
    return lax.pad(x, np.zeros((), x.dtype), config)


def _axes_and_lengths(x, s, axes, name: str):
    """NumPy's ``s``/``axes`` rules: ``axes`` defaults to the last ``len(s)`` axes, or to
    every axis; ``s`` to the operand's sizes along ``axes``."""
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = (int(axes),) if isinstance(axes, (int, np.integer)) else tuple(map(int, axes))
        axes = tuple(normalize_axis(a, x.ndim, f"numpy.fft.{name}") for a in axes)
    if s is None:
        s = tuple(x.shape[a] for a in axes)
    s = tuple(int(n) for n in s)
    if len(s) != len(axes):
        raise _error(ShapeError, f"numpy.fft.{name}: s={s} and axes={axes} differ in length")
    if len(set(axes)) != len(axes):
        raise _error(ShapeError, f"numpy.fft.{name}: repeated axis in axes={axes}")
    return axes, s


def _on_trailing(x, axes, transform):
    """``transform`` of ``x`` with ``axes`` moved to the end (in order), moved back."""
    rest = [a for a in range(x.ndim) if a not in axes]
    order = [*rest, *axes]
    if order != list(range(x.ndim)):
        x = lax.transpose(x, order)
    y = transform(x)
    if order == list(range(x.ndim)):
        return y
    inverse = sorted(range(x.ndim), key=lambda i: order[i])
    return lax.transpose(y, inverse)


def _scaled(y, norm, count: int, inverse: bool):
    """The ``norm`` factor on a result whose primitive applied NumPy's ``"backward"``."""
    if norm in (None, "backward") or count == 0:
        return y
    factor = {
        ("ortho", False): 1 / math.sqrt(count),
        ("ortho", True): math.sqrt(count),
        ("forward", False): 1 / count,
        ("forward", True): float(count),
    }[norm, inverse]
    return lax.mul(y, np.asarray(factor, y.dtype))


# --- complex to complex --------------------------------------------------------------------


def _c2c(a, s, axes, norm, inverse: bool, name: str):
    _check_norm(norm, name)
    x = _complex_operand(a, name)
    axes, s = _axes_and_lengths(x, s, axes, name)
    for axis, length in zip(axes, s, strict=True):
        x = _resized(x, axis, length, name)
    fft_type = "ifft" if inverse else "fft"
    # Three axes at a time, the last ones first (separable: any order gives the same).
    for start in range(0, len(axes), _MAX_AXES):
        group = axes[max(0, len(axes) - start - _MAX_AXES) : len(axes) - start]
        x = _on_trailing(
            x, group, lambda t, g=group: fft_primitive(t, fft_type, t.shape[-len(g) :])
        )
    return _scaled(x, norm, math.prod(s), inverse)


@implements(FUNCTIONS)
def fft(a, n=None, axis=-1, norm=None, out=None):
    return _written(_c2c(a, None if n is None else (n,), (axis,), norm, False, "fft"), out, "fft")


@implements(FUNCTIONS)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    return _written(_c2c(a, None if n is None else (n,), (axis,), norm, True, "ifft"), out, "ifft")


@implements(FUNCTIONS)
def fftn(a, s=None, axes=None, norm=None, out=None):
    return _written(_c2c(a, s, axes, norm, False, "fftn"), out, "fftn")


@implements(FUNCTIONS)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    return _written(_c2c(a, s, axes, norm, True, "ifftn"), out, "ifftn")


@implements(FUNCTIONS)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _written(_c2c(a, s, axes, norm, False, "fft2"), out, "fft2")


@implements(FUNCTIONS)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _written(_c2c(a, s, axes, norm, True, "ifft2"), out, "ifft2")


# --- real to complex and back --------------------------------------------------------------


def _r2c(a, s, axes, norm, name: str):
    _check_norm(norm, name)
    x = _real_operand(a, name)
    axes, s = _axes_and_lengths(x, s, axes, name)
    for axis, length in zip(axes, s, strict=True):
        x = _resized(x, axis, length, name)
    last = axes[-len(axes) :][-_MAX_AXES:]  # the real transform, with up to two more axes
    y = _on_trailing(x, last, lambda t: fft_primitive(t, "rfft", t.shape[-len(last) :]))
    rest = axes[: len(axes) - len(last)]
    if rest:
        y = _c2c(y, None, rest, None, False, name)
    return _scaled(y, norm, math.prod(s), False)


def _c2r(a, s, axes, norm, name: str, default_axes=None):
    _check_norm(norm, name)
    x = _complex_operand(a, name)
    if axes is None and s is None and default_axes is not None:
        axes = default_axes
    if s is None:
        axes, sizes = _axes_and_lengths(x, None, axes, name)
        s = (*sizes[:-1], 2 * (sizes[-1] - 1))
    axes, s = _axes_and_lengths(x, s, axes, name)
    if s[-1] < 1:
        raise _error(ShapeError, f"numpy.fft.{name}: invalid number of output points ({s[-1]})")
    for axis, length in zip(axes[:-1], s[:-1], strict=True):
        x = _resized(x, axis, length, name)
    x = _resized(x, axes[-1], s[-1] // 2 + 1, name)
    rest = axes[: max(0, len(axes) - _MAX_AXES)]
    if rest:  # the complex axes first, the real transform last
        x = _c2c(x, None, rest, None, True, name)
    last = axes[len(rest) :]
    lengths = s[len(rest) :]
    y = _on_trailing(x, last, lambda t: fft_primitive(t, "irfft", lengths))
    return _scaled(y, norm, math.prod(s), True)


@implements(FUNCTIONS)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    return _written(_r2c(a, None if n is None else (n,), (axis,), norm, "rfft"), out, "rfft")


@implements(FUNCTIONS)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    return _written(_c2r(a, None if n is None else (n,), (axis,), norm, "irfft"), out, "irfft")


@implements(FUNCTIONS)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    return _written(_r2c(a, s, axes, norm, "rfftn"), out, "rfftn")


@implements(FUNCTIONS)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    return _written(_c2r(a, s, axes, norm, "irfftn"), out, "irfftn")


@implements(FUNCTIONS)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _written(_r2c(a, s, axes, norm, "rfft2"), out, "rfft2")


@implements(FUNCTIONS)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _written(_c2r(a, s, axes, norm, "irfft2"), out, "irfft2")


# --- Hermitian signals -----------------------------------------------------------------------

# NumPy's hfft/ihfft are irfft/rfft of the conjugate with the scaling the other way round.
_SWAPPED_NORMS = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _swapped(norm, name: str):
    _check_norm(norm, name)
    return _SWAPPED_NORMS[norm]


@implements(FUNCTIONS)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """The real spectrum of a signal with Hermitian symmetry, given by its first half:
    ``irfft(conj(a))`` scaled as a forward transform; ``n`` defaults to
    ``2 * (a.shape[axis] - 1)``."""
    x = conj(_complex_operand(a, "hfft"))
    s = None if n is None else (n,)
    return _written(_c2r(x, s, (axis,), _swapped(norm, "hfft"), "hfft"), out, "hfft")


@implements(FUNCTIONS)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse of ``hfft``: ``conj(rfft(a))`` scaled as an inverse transform, the
    ``n // 2 + 1`` coefficients of a real signal's Hermitian spectrum."""
    s = None if n is None else (n,)
    y = _r2c(a, s, (axis,), _swapped(norm, "ihfft"), "ihfft")
    return _written(conj(y), out, "ihfft")


# --- compositions --------------------------------------------------------------------------


def _frequencies(integers: np.ndarray, n: int, d):
    """``integers / (n d)``: a constant, unless the spacing ``d`` is traced."""
    if not isinstance(d, Tracer):
        return integers / (n * d)
    spacing = asarray(d)
    dtype = dtypes.float_result_type(spacing.dtype)
    return lax.div(
        np.asarray(integers, dtype),
        lax.mul(lax.convert_element_type(spacing, dtype), dtype.type(n)),
    )


@implements(FUNCTIONS)
def fftfreq(n, d=1.0, device=None):
    n = int(n)
    integers = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _frequencies(integers.astype(np.float64), n, d)


@implements(FUNCTIONS)
def rfftfreq(n, d=1.0, device=None):
    n = int(n)
    return _frequencies(np.arange(0, n // 2 + 1, dtype=np.float64), n, d)


def _shift(x, axes, name: str, direction: int):
    x = asarray(x)
    axes = normalize_axes(axes, x.ndim, f"numpy.fft.{name}")
    shifts = tuple(direction * (x.shape[a] // 2) for a in axes)
    return roll(x, shifts, axes) if axes else x


@implements(FUNCTIONS)
def fftshift(x, axes=None):
    return _shift(x, axes, "fftshift", 1)


@implements(FUNCTIONS)
def ifftshift(x, axes=None):
    return _shift(x, axes, "ifftshift", -1)
