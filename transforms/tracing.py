"""Tracing a user's function for a transform: pytrees in and out, concrete when it can.

``grad(f)(x)`` on arrays traces ``f`` with a *concrete* trace (each tracer carries its
value, so Python ``if``/``while`` on array values work: define-by-run). Under ``jit``
the arguments are abstract tracers and so is the trace. A jitted function is always
traced abstractly: it cannot branch on values anyway, and its call then stays one
``jit_call`` that the transform splits into compiled halves, instead of being run once
while tracing and again in the transformed program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ir.core import ClosedJaxpr, Literal, ShapedArray, Var
from ..ir.errors import function_name
from ..tracer import functionalize
from ..tracer.core import Tracer, new_trace
from ..tracer.numpy_namespace import tracing_numpy
from ..tracer.promote import argument_aval
from ..tracer.pytree import PyTreeDef, tree_flatten, tree_unflatten


@dataclass
class Traced:
    closed: ClosedJaxpr
    in_tree: PyTreeDef
    out_tree: PyTreeDef
    leaves: list  # the flat arguments, as arrays or tracers of an enclosing trace
    # With ``keep_values`` and a concrete trace: every var's value (invars, constvars,
    # equation outputs), so the forward need not be computed again.
    values: dict[Var, object] | None = None

    def output_values(self) -> list | None:
        """The outputs' values, when the trace kept them all."""
        if self.values is None:
            return None
        outs = [
            v.val if isinstance(v, Literal) else self.values.get(v)
            for v in self.closed.jaxpr.outvars
        ]
        return None if any(out is None for out in outs) else outs


def as_operand(leaf, aval: ShapedArray):
    """An argument leaf as something ``bind`` takes: a tracer, or an array of ``aval``."""
    if isinstance(leaf, Tracer):
        return leaf
    if isinstance(leaf, np.ndarray) and leaf.dtype == aval.dtype:
        return leaf
    return np.asarray(leaf, dtype=aval.dtype)


_NO_WRITE_BACK = (
    "a transform (grad, vjp, jvp) traced abstractly (under jit, or over the traced "
    "values of an enclosing transform)"
)


def needs_concrete_values(fun) -> bool:
    return getattr(fun, "needs_concrete_values", True)


def trace_function(
    fun: Callable,
    args: tuple,
    kwargs: dict | None = None,
    keep_values: bool = False,
    constants: tuple = (),
) -> Traced:
    """Trace ``fun(*args, **kwargs)`` over the leaves of ``(args, kwargs)``.
    ``constants`` are the caller's other arguments that ``fun`` closes over (a
    transform's non-differentiated ones): a written argument may not share their memory."""
    leaves, in_tree = tree_flatten((tuple(args), kwargs or {}))
    avals_weak = [argument_aval(leaf) for leaf in leaves]
    operands = [as_operand(leaf, a) for leaf, (a, _) in zip(leaves, avals_weak, strict=True)]
    out_tree_box = []
    traced_fun = tracing_numpy(fun)

    def flat_fun(*tracers):
        for tracer, (_, weak) in zip(tracers, avals_weak, strict=True):
            tracer.weak_type = weak
        entry_vars = [tracer._var for tracer in tracers]
        call_args, call_kwargs = tree_unflatten(in_tree, tracers)
        out_leaves, out_tree = tree_flatten(traced_fun(*call_args, **call_kwargs))
        out_tree_box.append(out_tree)
        written = functionalize.written_arguments(tracers, entry_vars)
        if not (concrete and all(isinstance(leaves[i], np.ndarray) for i in written)):
            functionalize.refuse_argument_writes(tracers, entry_vars, _NO_WRITE_BACK)
        finals.extend((i, tracers[i]._value) for i in written)
        return out_leaves

    values = [x._value if isinstance(x, Tracer) else x for x in operands]
    concrete = needs_concrete_values(fun) and all(v is not None for v in values)
    finals: list = []  # (argument position, its value after the call) of each write
    with new_trace(concrete) as trace:
        if concrete and keep_values:
            trace.values = {}
        args = [
            trace.new_arg(a, v if concrete else None)
            for (a, _), v in zip(avals_weak, values, strict=True)
        ]
        closed = trace.to_jaxpr(flat_fun(*args))
    # Eager (concrete) on NumPy arrays, a written argument is written back to the caller's
    # array as NumPy would leave it; the derivative is of the function of its value on
    # entry, which the transform keeps a copy of.
    if finals:
        name = function_name(fun)
        functionalize.refuse_aliased_writes(
            leaves + tree_flatten(constants)[0], [i for i, _ in finals], name
        )
    for i, final in finals:
        values[i] = operands[i] = values[i].copy()
        functionalize.write_back(leaves[i], final)
    kept = trace.values
    if kept is not None:
        kept.update(zip(closed.jaxpr.invars, values, strict=True))
        kept.update(
            (var, c._value if isinstance(c, Tracer) else c)
            for var, c in zip(closed.jaxpr.constvars, closed.consts, strict=True)
        )
    return Traced(closed, in_tree, out_tree_box[0], operands, kept)
