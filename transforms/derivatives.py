"""Local derivatives shared by forward and reverse mode, and symbolic zeros.

An elementwise primitive's Jacobian is diagonal, so one map per operand, "multiply a
(co)tangent by this operand's partial derivative", serves both modes: forward mode sums
the maps over the operands' tangents, reverse mode applies each to the output's
cotangent. ``ELEMENTWISE`` holds those maps, micrograd style: each line is the formula.
Each map is called as ``d(t, *operands, out, **params)``; ``None`` marks an operand
without a derivative (``select``'s predicate).

The partial derivatives of the reductions that choose or multiply (``reduce_max``,
``reduce_prod``, scatter ``max``/``min``) are here too, for the same reason.
So is the refusal of a differentiated value closed over by a ``custom_jvp`` or
``custom_vjp`` function, which both modes share.

A zero (co)tangent is ``None`` while it propagates, and becomes an array only where an
operation needs one (``instantiate``). Integer and bool values never carry one.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..ir.core import Jaxpr, ShapedArray, Var, aval_of
from ..ir.errors import GradientError, UnsupportedFunctionError, at_line
from ..tracer import lax
from ..tracer.core import Tracer
from ..tracer.source_info import user_frame_info


def aval(x) -> ShapedArray:
    return x.aval if isinstance(x, Tracer) else aval_of(np.asarray(x))


def taking_rule_consts(primal: Jaxpr, num_primal_consts: int, rule_consts) -> Jaxpr:
    """A custom rule's primal as the call binds it: it takes every operand of the call,
    its own consts, then the rules' (``rule_consts``, ignored), then the arguments."""
    ignored = [Var(aval(c)) for c in rule_consts]
    invars = primal.invars[:num_primal_consts] + ignored + primal.invars[num_primal_consts:]
    return Jaxpr([], invars, primal.eqns, primal.outvars)


def has_tangent(a: ShapedArray) -> bool:
    """Only floating-point values, real or complex, are differentiated; integers and bools
    are constants."""
    return dtypes.is_inexact(a.dtype)


def typed(value, like) -> np.ndarray:
    """A scalar constant in ``like``'s dtype (a Python float would promote to float64)."""
    return np.asarray(value, dtype=aval(like).dtype)


def instantiate(t, like):
    """A symbolic zero (``None``) made into a zero array of ``like``'s type."""
    return lax.zeros_like_aval(aval(like)) if t is None else t


def in_place(values, mask) -> list:
    """``values`` at the positions ``mask`` marks, symbolic zeros elsewhere."""
    values = iter(values)
    return [next(values) if m else None for m in mask]


def add(a, b):
    """Sum of two (co)tangents, either of which may be a symbolic zero."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def broadcast_to(t, like):
    """A tangent of a rank-0 operand, spread over the output's shape."""
    shape = aval(like).shape
    return t if t is None or aval(t).shape == shape else lax.broadcast_to_rank(t, shape)


def unbroadcast(ct, like):
    """A cotangent of a rank-0 operand that broadcast implicitly: summed over every axis."""
    ndim = aval(ct).ndim
    return lax.reduce_sum(ct, range(ndim)) if aval(like).ndim == 0 and ndim else ct


def indicator(pred, like):
    """1 where ``pred`` holds, else 0, in ``like``'s dtype."""
    return lax.convert_element_type(pred, aval(like).dtype)


def tie_weight(x, y):
    """Weight of ``x`` in ``max(x, y)``: 1 if it is larger, 1/2 on a tie (the subgradient
    split equally, as JAX does), 0 if smaller. ``min`` swaps the operands' roles."""
    return indicator(x > y, x) + 0.5 * indicator(x == y, x)


def truncate(q):
    """Round toward zero: how many whole ``y`` fit in ``x`` for ``rem(x, y)``."""
    return lax.sign(q) * lax.floor(lax.abs(q))


def nonzero_or_one(x):
    return lax.select(x == 0, typed(1, x), x)


def _pow_base(t, x, y, out):
    # d/dx x**y = y * x**(y-1), taken as 0 for y == 0 (x**0 is constant even at x = 0).
    return t * lax.select(y == 0, typed(0, x), y * lax.pow(x, y - typed(1, y)))


def _pow_exponent(t, x, y, out):
    # d/dy x**y = log(x) * x**y, taken as 0 at x == 0 (where x**y is 0 or 1 for y >= 0).
    return t * out * lax.log(nonzero_or_one(x))


def _integer_pow(t, x, out, y):
    if y == 0:
        return t * typed(0, x)
    if y == 1:
        return t
    return t * (y * (x if y == 2 else lax.integer_pow(x, y - 1)))


ELEMENTWISE = {
    "neg": (lambda t, x, out: -t,),
    "exp": (lambda t, x, out: t * out,),
    "log": (lambda t, x, out: t / x,),
    "log1p": (lambda t, x, out: t / (1 + x),),
    "expm1": (lambda t, x, out: t * (out + 1),),
    "sin": (lambda t, x, out: t * lax.cos(x),),
    "cos": (lambda t, x, out: -t * lax.sin(x),),
    "tanh": (lambda t, x, out: t * (1 - out * out),),
    "logistic": (lambda t, x, out: t * out * (1 - out),),
    "erf": (lambda t, x, out: t * (2 / math.sqrt(math.pi)) * lax.exp(-(x * x)),),
    "sqrt": (lambda t, x, out: t / (2 * out),),
    "rsqrt": (lambda t, x, out: -0.5 * t * out / x,),
    # |x|' = sign(x): 0 at x = 0, as in JAX.
    "abs": (lambda t, x, out: t * lax.sign(x),),
    "integer_pow": (_integer_pow,),
    "add": (lambda t, x, y, out: t, lambda t, x, y, out: t),
    "sub": (lambda t, x, y, out: t, lambda t, x, y, out: -t),
    "mul": (lambda t, x, y, out: t * y, lambda t, x, y, out: x * t),
    "div": (lambda t, x, y, out: t / y, lambda t, x, y, out: -t * out / y),
    "pow": (_pow_base, _pow_exponent),
    "max": (lambda t, x, y, out: t * tie_weight(x, y), lambda t, x, y, out: t * tie_weight(y, x)),
    "min": (lambda t, x, y, out: t * tie_weight(y, x), lambda t, x, y, out: t * tie_weight(x, y)),
    # atan2(x, y) = arctan(x / y), quadrant-aware.
    "atan2": (
        lambda t, x, y, out: t * y / (x * x + y * y),
        lambda t, x, y, out: -t * x / (x * x + y * y),
    ),
    # rem(x, y) = x - y * trunc(x / y), with trunc locally constant.
    "rem": (lambda t, x, y, out: t, lambda t, x, y, out: -t * truncate(x / y)),
    "select": (
        None,
        lambda t, pred, on_true, on_false, out: lax.select(pred, t, typed(0, t)),
        lambda t, pred, on_true, on_false, out: lax.select(pred, typed(0, t), t),
    ),
}


def reduce_chooser_weights(x, out, axes):
    """d reduce_max(x)/dx (or reduce_min): the positions equal to the result share its
    derivative equally when there are ties, as in JAX."""
    kept = [d for d in range(aval(x).ndim) if d not in axes]
    hits = indicator(x == lax.broadcast_in_dim(out, aval(x).shape, kept), x)
    count = lax.reduce_sum(hits, axes)
    return hits / lax.broadcast_in_dim(count, aval(x).shape, kept)


def reduce_prod_partials(x, axes):
    """d prod(x)/dx_i = the product of the others, exact with zeros in ``x``: with no zero
    it is prod/x_i; with one zero only that position has a nonzero partial; with more
    than one every partial is 0."""
    shape = aval(x).shape
    kept = [d for d in range(len(shape)) if d not in axes]

    def spread(r):
        return lax.broadcast_in_dim(r, shape, kept)

    is_zero = x == 0
    zeros = spread(lax.reduce_sum(indicator(is_zero, x), axes))
    safe = lax.select(is_zero, typed(1, x), x)
    others = spread(lax.reduce_prod(safe, axes))
    at_zero = lax.select(zeros == 1, others, typed(0, x))
    elsewhere = lax.select(zeros == 0, others / safe, typed(0, x))
    return lax.select(is_zero, at_zero, elsewhere)


def clamped_indices(indices, size: int):
    """``indices`` clamped into ``[0, size)``: the entries a gather actually reads."""
    dtype = aval(indices).dtype
    low = lax.max(indices, np.zeros((), dtype))
    return lax.min(low, np.asarray(max(size - 1, 0), dtype))


def scatter_lands(indices, updates, axis: int, size: int):
    """Which updates of a scatter along ``axis`` (of ``size``) reach the output, as a mask
    of ``updates``' shape: one whose index is outside the axis is dropped."""
    dtype = aval(indices).dtype
    inside = lax.bitwise_and(
        lax.ge(indices, np.zeros((), dtype)), lax.lt(indices, np.asarray(size, dtype))
    )
    index_dims = range(axis, axis + aval(indices).ndim)
    return lax.broadcast_in_dim(inside, aval(updates).shape, index_dims)


def scatter_chooser_weights(x, indices, updates, out, axis):
    """For scatter max/min: each contender (the original entry and the updates landing
    on it) equal to the result gets an equal share of its derivative."""
    x_hit = indicator(x == out, x)
    lands = scatter_lands(indices, updates, axis, aval(x).shape[axis])
    equal = lax.bitwise_and(updates == lax.gather(out, indices, axis), lands)
    updates_hit = indicator(equal, updates)
    count = lax.scatter(x_hit, indices, updates_hit, axis, "add")
    return x_hit / count, updates_hit / lax.gather(count, indices, axis)


def scatter_mode_error(mode: str) -> UnsupportedFunctionError:
    return UnsupportedFunctionError(
        at_line(
            f"the derivative of scatter with mode {mode!r} (x.at[i].multiply(v)) is not "
            "implemented: numbax differentiates the add, set, min and max modes. With unique "
            "indices, write x * ones_like(x).at[i].set(v) instead.",
            user_frame_info(),
        )
    )


def refuse_closed_over(decorator: str, derivatives_of_consts) -> None:
    """A ``custom_jvp`` or ``custom_vjp`` rule gives derivatives with respect to the
    function's arguments only, as in JAX: a value it closes over that is being
    differentiated would silently get a zero derivative, so it is refused."""
    if any(derivatives_of_consts):
        raise GradientError(
            at_line(
                f"a {decorator} function (or its rules) closes over a value that is being "
                "differentiated, whose derivative the rules cannot see: pass that value to "
                "the function as an argument (and give its derivative in the rules)",
                user_frame_info(),
            )
        )


def sort_with_order(primals, *, dimension, is_stable, num_keys):
    """``sort`` of ``primals`` and the permutation it applied, as positions in the
    flattened operand (``gather_flat`` / ``scatter_flat`` move tangents by it): sort's
    derivative is the same permutation of the tangent, its transpose the inverse one."""
    shape = aval(primals[0]).shape
    iota = lax.iota(dtypes.int64, shape, dimension)
    *outs, order = lax.sort([*primals, iota], dimension, is_stable, num_keys)
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    positions = None
    for k, stride in enumerate(strides):
        index = order if k == dimension else lax.iota(dtypes.int64, shape, k)
        term = lax.mul(index, np.asarray(stride, dtypes.int64))
        positions = term if positions is None else lax.add(positions, term)
    return outs, positions


def gather_flat(t, positions):
    """``t`` read at flat ``positions`` (an array of ``t``'s shape)."""
    return lax.gather(lax.reshape(t, (aval(t).size,)), positions, 0)


def scatter_flat(ct, positions):
    """The transpose of ``gather_flat``: ``ct`` summed into the flat positions it read."""
    shape = aval(ct).shape
    zeros = lax.zeros_like_aval(ShapedArray((aval(ct).size,), aval(ct).dtype))
    return lax.reshape(lax.scatter(zeros, positions, ct, 0, "add"), shape)
