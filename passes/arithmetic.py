"""Simplifications of arithmetic, exact in IEEE arithmetic for every input.

What is deliberately missing: ``x * 0 -> 0`` (NaN * 0 and inf * 0 are NaN, -1 * 0 is
-0.0), ``x - x -> 0`` (inf - inf is NaN), ``x + 0.0 -> x`` (-0.0 + 0.0 is +0.0) and
``x / x -> 1`` (0 / 0 is NaN). ``x + -0.0`` and ``x - 0.0`` are exact and are used.
"""

from __future__ import annotations

import numpy as np

from ..ir.core import Literal
from .rewrite import is_literal, literal_value
from .simplify_rules import SIMPLIFICATIONS, elementwise_simplification, operand_orders, same_type

# pow(x, n) for an integral n becomes integer_pow[y=n] up to this |n|: the backends
# expand integer_pow into multiplications.
MAX_INTEGER_POWER = 16


@SIMPLIFICATIONS.rule("mul")
def multiply_by_one(eqn, ctx):
    """x * 1 = x, and x * -1 = -x."""
    for x, c in operand_orders(eqn):
        if is_literal(c, 1):
            return same_type(eqn, x)
        if is_literal(c, -1) and same_type(eqn, x) is not None:
            return ctx.emit("neg", [x])
    return None


@SIMPLIFICATIONS.rule("add")
def add_negative_zero(eqn, ctx):
    """x + -0.0 = x (and x + 0 = x for integers); x + 0.0 is NOT x when x is -0.0."""
    for x, c in operand_orders(eqn):
        if is_literal(c, 0, negative_zero=True):
            return same_type(eqn, x)
    return None


@SIMPLIFICATIONS.rule("sub")
def subtract_zero(eqn, ctx):
    """x - 0.0 = x, and -0.0 - x = -x (but 0.0 - x is not -x when x is 0.0)."""
    x, c = eqn.inputs
    if is_literal(c, 0, negative_zero=False):
        return same_type(eqn, x)
    if is_literal(x, 0, negative_zero=True) and same_type(eqn, c) is not None:
        return ctx.emit("neg", [c])
    return None


@SIMPLIFICATIONS.rule("div")
def divide_by_one(eqn, ctx):
    """x / 1 = x (integer division too)."""
    x, c = eqn.inputs
    return same_type(eqn, x) if is_literal(c, 1) else None


@SIMPLIFICATIONS.rule("neg")
def double_negation(eqn, ctx):
    """-(-x) = x."""
    inner = ctx.producer(eqn.inputs[0], "neg")
    return inner.inputs[0] if inner is not None else None


@SIMPLIFICATIONS.rule("integer_pow")
def small_integer_power(eqn, ctx):
    """x**1 = x, x**2 = x * x, x**0 = 1 (NaN**0 is 1 in IEEE and NumPy)."""
    x, y = eqn.inputs[0], eqn.params["y"]
    if y == 1:
        return x
    if y == 2:
        return ctx.emit("mul", [x, x])
    if y == 0:
        one = Literal(1, x.aval.dtype)
        if x.aval.shape == ():
            return one
        return ctx.emit("broadcast_in_dim", [one], shape=x.aval.shape, broadcast_dimensions=())
    return None


@SIMPLIFICATIONS.rule("pow")
def integral_power(eqn, ctx):
    """x ** 3.0 = integer_pow[y=3] x: the reference computes both with the same pow."""
    x, c = eqn.inputs
    value = literal_value(c)
    if value is None or same_type(eqn, x) is None or not np.isfinite(value):
        return None
    if np.imag(value) != 0:  # a complex exponent
        return None
    value = np.real(value)
    if float(value).is_integer() and abs(value) <= MAX_INTEGER_POWER:
        return ctx.emit("integer_pow", [x], y=int(value))
    return None


@SIMPLIFICATIONS.rule("convert_element_type")
def redundant_conversion(eqn, ctx):
    """A conversion to the same dtype is nothing; so is a round trip through a dtype
    that holds every value exactly (f32 -> f64 -> f32, i32 -> i64 -> i32)."""
    x, dtype = eqn.inputs[0], eqn.params["new_dtype"]
    if x.aval.dtype == dtype:
        return x
    inner = ctx.producer(x, "convert_element_type")
    if inner is not None and inner.inputs[0].aval.dtype == dtype:
        if _lossless(np.dtype(dtype), np.dtype(x.aval.dtype)):
            return same_type(eqn, inner.inputs[0])
    return None


def _lossless(source: np.dtype, target: np.dtype) -> bool:
    if source.kind == "b":
        return True
    if source.kind == target.kind:
        return target.itemsize >= source.itemsize
    if source.kind in "iu" and target.kind == "f":
        return np.finfo(target).nmant + 1 >= source.itemsize * 8 - 1
    return False


@SIMPLIFICATIONS.rule("select")
def select_known_predicate(eqn, ctx):
    """select(True, a, b) = a (a broadcast True too); select(p, a, a) = a."""
    pred, on_true, on_false = eqn.inputs
    splat = ctx.producer(pred, "broadcast_in_dim")
    known = literal_value(splat.inputs[0] if splat is not None else pred)
    if known is not None:
        chosen = on_true if known else on_false
        if same_type(eqn, chosen) is None and chosen.aval.shape == ():
            out = eqn.outputs[0].aval.shape  # the chosen scalar, broadcast as select did
            return ctx.emit("broadcast_in_dim", [chosen], shape=out, broadcast_dimensions=())
        return same_type(eqn, chosen)
    if on_true is on_false:
        return same_type(eqn, on_true)
    return None


@SIMPLIFICATIONS.rule("stop_gradient")
def drop_stop_gradient(eqn, ctx):
    """stop_gradient only speaks to autodiff, which is over when passes run."""
    return eqn.inputs[0]


@elementwise_simplification
def sink_broadcast(eqn, ctx):
    """f(broadcast(a), broadcast(b)) = broadcast(f(a, b)) when both broadcasts are the
    same: exact, and f runs on the smaller array. Done when f is expensive; when the
    broadcast only adds size-1 dims (keepdims reshapes), which puts reductions' results
    back in the reduced shape fusion expects; and when only literals are broadcast, so
    that folding makes one literal of them. A cheap f over a growing broadcast is left
    for fusion, which computes it inside the consumer's loop anyway."""
    bcasts = []
    for atom in eqn.inputs:
        if atom.aval.shape == ():
            continue
        bcast = ctx.producer(atom, "broadcast_in_dim")
        if bcast is None:
            return None
        bcasts.append(bcast)
    if not bcasts:
        return None
    first = bcasts[0]
    source = first.inputs[0].aval.shape
    if any(b.params != first.params or b.inputs[0].aval.shape != source for b in bcasts):
        return None
    grows = first.outputs[0].aval.size != first.inputs[0].aval.size
    splats = all(isinstance(b.inputs[0], Literal) for b in bcasts)
    if grows and not (eqn.prim.expensive or splats):
        return None
    sources = iter(b.inputs[0] for b in bcasts)
    inner = ctx.emit(
        eqn.prim.name,
        [a if a.aval.shape == () else next(sources) for a in eqn.inputs],
        **eqn.params,
    )
    return ctx.emit("broadcast_in_dim", [inner], **first.params)


@elementwise_simplification
def scalar_broadcast_operand(eqn, ctx):
    """f(x, broadcast(s)) = f(x, s) for a rank-0 s: elementwise ops broadcast rank-0
    operands themselves, so a broadcast of a scalar costs nothing."""
    out_shape = eqn.outputs[0].aval.shape
    inputs, changed = list(eqn.inputs), False
    for i, atom in enumerate(inputs):
        bcast = ctx.producer(atom, "broadcast_in_dim")
        if bcast is None or bcast.inputs[0].aval.shape != ():
            continue
        others = inputs[:i] + inputs[i + 1 :]
        if any(o.aval.shape == out_shape for o in others):
            inputs[i], changed = bcast.inputs[0], True
    if not changed:
        return None
    return ctx.emit(eqn.prim.name, inputs, **eqn.params)
