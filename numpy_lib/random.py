"""``numbax.random``: counter-based random numbers, Threefry-2x32 as in ``jax.random``.

**Keys.** A key is an int64 array of shape ``(2,)`` holding two 32-bit words, each in
``[0, 2**32)``: the words of ``jax.random.key_data(jax.random.PRNGKey(seed))``. It is an
ordinary array with no hidden state: pass it into jitted functions as an argument,
``vmap`` over a stack of keys (``split(key, n)`` has shape ``(n, 2)``), and never draw
twice from one key: ``split`` it or ``fold_in`` a counter instead.

**The generator** is one elementwise primitive, ``threefry2x32`` (``ir/threefry.py``,
as JAX's ``threefry2x32_p``): it traces, fuses with what consumes it, batches and
compiles like ``add``, and the backends call a helper compiled once per process
instead of some 180 equations of rounds unrolled into every program that draws.
numbax has no uint32, so each 32-bit word lives in an int64. The primitive's
``output`` param picks what a draw needs of the two cipher words (one of them, their
xor, or both as a 64-bit word), so every draw is one equation.
Element ``i`` (row-major) of a draw is ``threefry2x32(key, (i >> 32, i & 0xFFFFFFFF))``:
JAX's "partitionable" layout, its default since 0.5. ``bits``, ``split``, ``fold_in``,
``uniform`` (float32 and float64), ``bernoulli`` and ``randint`` give JAX's numbers bit
for bit (JAX with x64 for the 64-bit dtypes; checked by the tests when JAX is installed).
``normal`` is Box-Muller and ``truncated_normal`` the inverse CDF through numbax's own
``erf`` (``numpy_lib/special.py``): same distributions as JAX's, not the same numbers.

**Reproducibility.** Integer draws and uniforms use only integer operations and
correctly rounded products and sums, so every backend gives the same bits. Draws that
go through ``log``, ``cos`` or ``exp`` (``normal``, ``truncated_normal``, ``gumbel``,
``categorical`` near ties) can differ in the last bit between the interpreter's NumPy
and a compiled backend's math library.

>>> import numbax
>>> key = numbax.random.key(0)
>>> numbax.random.bits(key, (2,))
array([4070199207, 4202968722])
>>> k1, k2 = numbax.random.split(key)
>>> numbax.random.uniform(k1, (3,)).shape
(3,)
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError
from ..ir.threefry import threefry2x32_p
from ..tracer import lax
from ..tracer.control_flow import fori_loop
from ..tracer.core import Tracer, bind
from ..tracer.promote import asarray, broadcast_shapes, normalize_axis, static_shape, static_size
from ..tracer.source_info import error_at_user_line as _error
from . import numpy_api as xnp
from .special import erf, erfinv

_MASK = np.int64(0xFFFFFFFF)


# --- Threefry-2x32 on int64-held 32-bit words -------------------------------------


def _word(x):
    return lax.bitwise_and(x, _MASK)


def _threefry(key0, key1, count0, count1, output: str):
    """One ``output`` of the cipher (``ir/threefry.py``): "word0", "word1", "xor" or
    "bits64"."""
    return bind(threefry2x32_p, key0, key1, count0, count1, output=output)


def threefry2x32(key0, key1, count0, count1):
    """The Threefry-2x32 block cipher (20 rounds) of the counter words under the key
    words, elementwise: int64 arrays holding 32-bit words in, the two cipher words out."""
    return tuple(_threefry(key0, key1, count0, count1, w) for w in ("word0", "word1"))


def _key_words(key, operation: str):
    key = asarray(key)
    if key.shape != (2,) or key.dtype != dtypes.int64:
        raise _error(
            NumbaxTypeError,
            f"{operation}: a key is an int64 array of shape (2,), from "
            f"numbax.random.key(seed) or split(key); got {key.dtype}{list(key.shape)}. "
            "Under vmap, map over a stack of keys of shape (n, 2).",
        )
    return tuple(lax.reshape(lax.slice(key, (i,), (i + 1,)), ()) for i in (0, 1))


def _shape(shape, operation: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer, Tracer)):
        return static_shape(shape, operation)
    sizes = [static_size(d, operation) if isinstance(d, Tracer) else d for d in shape]
    try:
        return tuple(int(d) for d in sizes)
    except TypeError:
        raise _error(
            NumbaxTypeError, f"{operation}: shape must be a tuple of ints, got {shape!r}"
        ) from None


def _counters(shape):
    """The two counter words of every element: its row-major index's halves."""
    size = math.prod(shape)
    index = lax.reshape(lax.iota(dtypes.int64, (size,)), shape)
    if size <= 2**32:
        return np.int64(0), index
    return lax.shift_right_arithmetic(index, np.int64(32)), _word(index)


def _draw(key, shape, operation: str, output: str):
    """The cipher's ``output`` of every element of ``shape``'s counter under ``key``."""
    key0, key1 = _key_words(key, operation)
    count0, count1 = _counters(shape)
    return _threefry(key0, key1, count0, count1, output)


def _stack_words(word0, word1):
    return lax.concatenate(
        [lax.expand_dims(word0, (word0.ndim,)), lax.expand_dims(word1, (word1.ndim,))],
        word0.ndim,
    )


# --- Keys --------------------------------------------------------------------------


def key(seed):
    """The key of an integer seed (a Python int, or an integer array of shape ``()``,
    traced or not): the high and low 32-bit words of the seed as an int64.

    >>> import numbax
    >>> numbax.random.key(42)
    array([ 0, 42])
    """
    seed = asarray(seed)
    if seed.shape != () or not dtypes.is_integer(seed.dtype):
        raise _error(NumbaxTypeError, f"key: the seed must be an integer scalar, got {seed!r}")
    seed = lax.convert_element_type(seed, dtypes.int64)
    high = _word(lax.shift_right_arithmetic(seed, np.int64(32)))
    return _stack_words(high, _word(seed))


PRNGKey = key


def split(key, num=2):
    """``num`` new keys (shape ``(num, 2)``; ``num`` may be a shape), independent of
    each other and of ``key``, which should not be used again."""
    shape = _shape(num, "split")
    return _stack_words(*(_draw(key, shape, "split", w) for w in ("word0", "word1")))


def fold_in(key, data):
    """A new key from ``key`` and an integer ``data`` (taken modulo 2**32, as JAX)."""
    data = asarray(data)
    if data.shape != () or not dtypes.is_integer(data.dtype):
        raise _error(NumbaxTypeError, f"fold_in: data must be an integer scalar, got {data!r}")
    key0, key1 = _key_words(key, "fold_in")
    data = _word(lax.convert_element_type(data, dtypes.int64))
    return _stack_words(*threefry2x32(key0, key1, np.int64(0), data))


def bits(key, shape=()):
    """Uniform 32-bit words, as int64 in ``[0, 2**32)`` (JAX's uint32 ``bits``)."""
    return _draw(key, _shape(shape, "bits"), "bits", "xor")


def _bits64(key, shape, operation: str):
    """64 random bits per element, wrapped into int64 (the high word first)."""
    return _draw(key, shape, operation, "bits64")


# --- Floats ------------------------------------------------------------------------


def _float_dtype(dtype, operation: str) -> np.dtype:
    dtype = dtypes.canonicalize(dtype)
    if not dtypes.is_float(dtype):
        raise _error(NumbaxTypeError, f"{operation}: dtype must be a float dtype, got {dtype}")
    return dtype


def _unit(key, shape, dtype, operation: str):
    """Uniform on ``[0, 1)`` on the grid of ``2**-mantissa_bits``: the top bits of the
    random word as an integer, scaled exactly (what JAX's bitcast of ``1.m - 1`` is)."""
    if dtype == dtypes.float64:  # the top 52 of the 64 bits: a logical shift right
        top52 = lax.shift_right_arithmetic(_bits64(key, shape, operation), np.int64(12))
        top52 = lax.bitwise_and(top52, np.int64(2**52 - 1))
        return lax.mul(lax.convert_element_type(top52, dtype), np.float64(2.0**-52))
    top23 = lax.shift_right_arithmetic(_draw(key, shape, operation, "xor"), np.int64(9))
    return lax.mul(lax.convert_element_type(top23, dtype), np.float32(2.0**-23))


def _next_below(x):
    """The largest float of x's dtype below ``x`` (NumPy's ``nextafter(x, -inf)``),
    elementwise, in primitives: one correctly rounded step of a relative size that
    always lands one ulp down, with an exact power-of-two rescaling where that step
    would underflow."""
    info = np.finfo(x.dtype)
    digits = info.nmant + 1
    magnitude = xnp.absolute(x)
    scale = 2.0 ** (2 * digits)
    small = magnitude < 2.0 ** (info.minexp + digits + 1)
    y = xnp.where(small, xnp.multiply(x, scale), x)
    # Down from y > 0: y * (1 - 2**-digits) rounds to y - ulp. Down from y < 0 (away from
    # zero): adding 3/4 of the ulp above |y| rounds to exactly one ulp more.
    down = xnp.where(
        y > 0,
        xnp.subtract(y, xnp.multiply(y, 2.0**-digits)),
        xnp.add(y, xnp.multiply(y, 0.75 * 2.0 ** (1 - digits))),
    )
    below = xnp.where(small, xnp.divide(down, scale), down)
    # Among the subnormals and the smallest normals the spacing is the smallest subnormal.
    below = xnp.where(
        magnitude < 2.0 ** (info.minexp + 1), xnp.subtract(x, info.smallest_subnormal), below
    )
    return xnp.where(x == np.inf, np.asarray(info.max, x.dtype), below)


def _check_broadcasts_to(from_shape, shape, operation: str) -> None:
    if broadcast_shapes(from_shape, shape, operation=operation) != shape:
        raise _error(
            ShapeError,
            f"{operation}: an argument of shape {from_shape} does not broadcast "
            f"to the requested shape {shape}",
        )


def _bound(value, dtype, shape, operation: str):
    value = xnp.array(asarray(value), dtype=dtype)
    _check_broadcasts_to(value.shape, shape, operation)
    return value


def _scaled(unit, minval, maxval):
    """``unit * (maxval - minval) + minval`` (JAX's formula), kept inside
    ``[minval, maxval)``: a product rounded up onto ``maxval`` becomes the float below."""
    value = xnp.add(xnp.multiply(unit, xnp.subtract(maxval, minval)), minval)
    value = xnp.where(value < maxval, value, _next_below(maxval))
    return xnp.maximum(minval, value)


def uniform(key, shape=(), dtype=dtypes.float64, minval=0.0, maxval=1.0):
    """Uniform floats on ``[minval, maxval)`` (bounds broadcast against ``shape``)."""
    shape, dtype = _shape(shape, "uniform"), _float_dtype(dtype, "uniform")
    minval = _bound(minval, dtype, shape, "uniform")
    maxval = _bound(maxval, dtype, shape, "uniform")
    unit = _unit(key, shape, dtype, "uniform")
    return xnp.broadcast_to(_scaled(unit, minval, maxval), shape)


def normal(key, shape=(), dtype=dtypes.float64):
    """Standard normal floats, by Box-Muller on two 52-bit (float32: 23-bit) uniforms:
    ``sqrt(-2 log(1 - u)) cos(2 pi v)``, so ``|x| <= 8.5`` in float64 (5.7 in float32)."""
    shape, dtype = _shape(shape, "normal"), _float_dtype(dtype, "normal")
    radius_key, angle_key = split(key)
    u = _unit(radius_key, shape, dtype, "normal")
    v = _unit(angle_key, shape, dtype, "normal")
    radius = xnp.sqrt(xnp.multiply(-2.0, xnp.log1p(xnp.negative(u))))
    return xnp.multiply(radius, xnp.cos(xnp.multiply(2.0 * math.pi, v)))


def truncated_normal(key, lower, upper, shape=None, dtype=dtypes.float64):
    """Standard normal floats conditioned on ``lower < x < upper`` (bounds broadcast;
    ``+-inf`` allowed), by the inverse CDF computed in float64, as ``jax.random``:
    ``sqrt(2) erfinv(u)``, ``u`` uniform between ``erf(lower/sqrt 2)`` and
    ``erf(upper/sqrt 2)``, clipped into the open interval."""
    dtype = _float_dtype(dtype, "truncated_normal")
    lower, upper = xnp.array(asarray(lower), dtype=dtype), xnp.array(asarray(upper), dtype=dtype)
    bounds_shape = broadcast_shapes(lower.shape, upper.shape, operation="truncated_normal")
    shape = bounds_shape if shape is None else _shape(shape, "truncated_normal")
    _check_broadcasts_to(bounds_shape, shape, "truncated_normal")
    wide = dtypes.float64
    low_cdf = erf(xnp.divide(xnp.array(lower, dtype=wide), math.sqrt(2.0)))
    high_cdf = erf(xnp.divide(xnp.array(upper, dtype=wide), math.sqrt(2.0)))
    u = uniform(key, shape, wide, low_cdf, high_cdf)
    out = xnp.array(xnp.multiply(math.sqrt(2.0), erfinv(u)), dtype=dtype)
    above_lower = xnp.negative(_next_below(xnp.negative(lower)))
    return xnp.minimum(xnp.maximum(out, above_lower), _next_below(upper))


def gumbel(key, shape=(), dtype=dtypes.float64):
    """Standard Gumbel floats, ``-log(-log(u))`` with ``u`` uniform on ``[tiny, 1)``."""
    shape, dtype = _shape(shape, "gumbel"), _float_dtype(dtype, "gumbel")
    u = uniform(key, shape, dtype, np.finfo(dtype).tiny, 1.0)
    return xnp.negative(xnp.log(xnp.negative(xnp.log(u))))


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability ``p`` (shape: ``p``'s by default)."""
    p = asarray(p)
    if not dtypes.is_float(p.dtype):
        p = xnp.array(p, dtype=dtypes.float64)
    shape = p.shape if shape is None else _shape(shape, "bernoulli")
    _check_broadcasts_to(p.shape, shape, "bernoulli")
    return xnp.less(uniform(key, shape, p.dtype), p)


def categorical(key, logits, axis=-1, shape=None):
    """Indices drawn with probabilities ``softmax(logits, axis)``, by the Gumbel-max
    trick; ``shape`` (default: the logits' shape without ``axis``) may add leading
    dimensions of independent draws."""
    logits = asarray(logits)
    if not dtypes.is_float(logits.dtype):
        logits = xnp.array(logits, dtype=dtypes.float64)
    axis = normalize_axis(axis, logits.ndim, "categorical")
    batch = logits.shape[:axis] + logits.shape[axis + 1 :]
    shape = batch if shape is None else _shape(shape, "categorical")
    prefix = len(shape) - len(batch)
    if prefix < 0:
        raise _error(
            ShapeError,
            f"categorical: shape {shape} must end with the logits' batch shape {batch} "
            f"(their shape without axis {axis})",
        )
    _check_broadcasts_to(batch, shape[prefix:], "categorical")
    draw_shape = list(shape)
    draw_shape.insert(prefix + axis, logits.shape[axis])
    noise = gumbel(key, tuple(draw_shape), logits.dtype)
    return xnp.argmax(xnp.add(noise, logits), axis=prefix + axis)


# --- Integers ----------------------------------------------------------------------


def _unsigned_rem(x, span, width: int):
    """``x mod span`` for x an unsigned ``width``-bit word (int64-held; for 64 bits,
    wrapped into the sign) and ``0 < span < 2**63``."""
    if width == 32:
        return lax.rem(x, span)  # both non-negative: fmod is the modulus

    def add_mod(a, b):  # (a + b) mod span for a, b in [0, span), without overflow
        total = lax.sub(a, lax.sub(span, b))
        return lax.select(lax.lt(total, np.int64(0)), lax.add(total, span), total)

    # 2**64 mod span, from 2**63 = (2**63 - 1) + 1.
    half = add_mod(lax.rem(np.int64(2**63 - 1), span), lax.rem(np.int64(1), span))
    wrap = add_mod(half, half)
    signed = lax.rem(x, span)  # in (-span, span): the sign of x
    low = lax.select(lax.lt(signed, np.int64(0)), lax.add(signed, span), signed)
    return lax.select(lax.lt(x, np.int64(0)), add_mod(low, wrap), low)


def randint(key, shape, minval, maxval, dtype=dtypes.int64):
    """Integers uniform on ``[minval, maxval)`` (bounds broadcast; a span of 0 or less
    gives ``minval``). JAX's algorithm: two random words per element reduced modulo the
    span, so the bias is below ``span / 2**(2 * bits)``. The bounds are clipped to the
    dtype's range; for int64 the span must be below ``2**63``."""
    shape, dtype = _shape(shape, "randint"), dtypes.canonicalize(dtype)
    if not dtypes.is_integer(dtype):
        raise _error(NumbaxTypeError, f"randint: dtype must be an integer dtype, got {dtype}")
    info = np.iinfo(dtype)
    bounds = []
    for bound in (minval, maxval):
        bound = xnp.clip(xnp.array(asarray(bound), dtype=dtypes.int64), info.min, info.max)
        _check_broadcasts_to(bound.shape, shape, "randint")
        bounds.append(lax.broadcast_to_rank(bound, shape))
    low, high = bounds
    span = lax.select(lax.le(high, low), lax.full(shape, 1, dtypes.int64), lax.sub(high, low))
    high_key, low_key = split(key)
    if info.bits == 32:
        wrap = _word
        high_bits, low_bits = bits(high_key, shape), bits(low_key, shape)
    else:
        wrap = lambda x: x  # noqa: E731 - int64 arithmetic wraps modulo 2**64 itself
        high_bits, low_bits = (
            _bits64(high_key, shape, "randint"),
            _bits64(low_key, shape, "randint"),
        )
    multiplier = lax.rem(np.int64(2 ** (info.bits // 2)), span)
    multiplier = _unsigned_rem(wrap(lax.mul(multiplier, multiplier)), span, info.bits)
    offset = wrap(lax.mul(_unsigned_rem(high_bits, span, info.bits), multiplier))
    offset = wrap(lax.add(offset, _unsigned_rem(low_bits, span, info.bits)))
    offset = _unsigned_rem(offset, span, info.bits)
    return lax.convert_element_type(lax.add(low, offset), dtype)


def _axis_length(x, axis: int, operation: str) -> tuple[object, int, int | None]:
    """``x`` as an array, its length along ``axis`` (None for an int ``x``: ``range``)."""
    if isinstance(x, (int, np.integer)):
        if int(x) < 0:
            raise _error(ShapeError, f"{operation}: a population of {int(x)} elements")
        return None, int(x), None
    x = asarray(x)
    if x.ndim == 0:
        raise _error(ShapeError, f"{operation}: x must be an int or an array of rank >= 1")
    axis = normalize_axis(axis, x.ndim, operation)
    return x, x.shape[axis], axis


def permutation(key, x, axis=0):
    """A random permutation of ``range(x)`` (an int), or of ``x``'s entries along
    ``axis``. numbax has no sort primitive, so this is Fisher-Yates: entry ``i`` swaps
    with a uniform ``j`` in ``[i, n)``, in a ``fori_loop`` of ``n - 1`` swaps (linear
    work; the result is a permutation by construction)."""
    array, n, axis = _axis_length(x, axis, "permutation")
    order = lax.iota(dtypes.int64, (n,))
    if n > 1:
        targets = randint(key, (n,), order, n)

        def swap(i, order):
            j = lax.reshape(lax.dynamic_slice(targets, (i,), (1,)), ())
            at_i, at_j = lax.dynamic_slice(order, (i,), (1,)), lax.dynamic_slice(order, (j,), (1,))
            order = lax.dynamic_update_slice(order, at_j, (i,))
            return lax.dynamic_update_slice(order, at_i, (j,))

        order = fori_loop(0, n - 1, swap, order)
    return order if array is None else xnp.take(array, order, axis=axis)


def _top_indices(scores, count: int):
    """The indices of the ``count`` largest scores, largest first (``count`` argmaxes)."""
    positions = lax.iota(dtypes.int64, scores.shape)

    def pick(i, state):
        scores, chosen = state
        best = xnp.argmax(scores)
        chosen = lax.dynamic_update_slice(chosen, lax.reshape(best, (1,)), (i,))
        scores = xnp.where(xnp.equal(positions, best), -np.inf, scores)
        return scores, chosen

    _, chosen = fori_loop(0, count, pick, (scores, lax.full((count,), 0, dtypes.int64)))
    return chosen


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Draws from ``range(a)`` (an int) or from ``a``'s entries along ``axis``, with or
    without replacement, uniformly or with probabilities ``p`` (normalised here)."""
    shape = _shape(shape, "choice")
    array, n, axis = _axis_length(a, axis, "choice")
    count = math.prod(shape)
    if n == 0 and count:
        raise _error(ShapeError, "choice: cannot draw from an empty population")
    if not replace and count > n:
        raise _error(
            ShapeError,
            f"choice: cannot draw {count} distinct entries from {n} (replace=False); "
            "draw fewer or pass replace=True",
        )
    if p is not None:
        p = asarray(p)
        if p.shape != (n,):
            raise _error(ShapeError, f"choice: p must have shape ({n},), got {p.shape}")
        if not dtypes.is_float(p.dtype):
            p = xnp.array(p, dtype=dtypes.float64)
    if replace and p is None:
        indices = randint(key, shape, 0, n)
    elif replace:
        # The inverse CDF: the first index whose cumulative weight exceeds a uniform.
        cumulative = xnp.cumsum(p)
        total = lax.reshape(lax.slice(cumulative, (n - 1,), (n,)), ())
        target = xnp.multiply(total, xnp.subtract(1.0, uniform(key, shape, p.dtype)))
        below = xnp.less(cumulative, xnp.expand_dims(target, -1))
        indices = xnp.minimum(xnp.sum(xnp.array(below, dtype=dtypes.int64), axis=-1), n - 1)
    elif p is None:
        indices = xnp.reshape(lax.slice(permutation(key, n), (0,), (count,)), shape)
    else:
        # Gumbel top-k: the k largest of log p + Gumbel noise are a weighted draw of k
        # distinct entries.
        scores = xnp.add(gumbel(key, (n,), p.dtype), xnp.log(p))
        indices = xnp.reshape(_top_indices(scores, count), shape)
    return indices if array is None else xnp.take(array, indices, axis=axis)


__all__ = [
    "PRNGKey", "bernoulli", "bits", "categorical", "choice", "fold_in", "gumbel", "key",
    "normal", "permutation", "randint", "split", "threefry2x32", "truncated_normal",
    "uniform",
]  # fmt: skip
