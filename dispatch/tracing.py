"""A call traced to a closed jaxpr over its pytree leaves, and ``make_jaxpr``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from .. import traceback_util
from ..tracer import functionalize, tree_flatten, tree_unflatten
from ..tracer.core import trace_flat
from ..tracer.numpy_namespace import tracing_numpy
from ..tracer.promote import argument_aval
from .arguments import as_executable_argument, as_tuple


def trace_to_jaxpr(
    fun: Callable,
    args: Sequence,
    kwargs: dict | None = None,
    concrete=False,
    writes: list | None = None,
):
    """Trace ``fun(*args, **kwargs)`` over its pytree leaves.

    Returns ``(closed_jaxpr, in_tree, out_tree, weak_types)``. With a ``writes`` list,
    the arguments ``fun`` writes into (their leaf positions, appended to ``writes``) get
    their final values as extra outputs after those of ``out_tree``; without one, such
    a write is an error naming its line.
    """
    kwargs = kwargs or {}
    leaves, in_tree = tree_flatten((tuple(args), kwargs))
    avals_weak = [argument_aval(leaf) for leaf in leaves]
    avals = [a for a, _ in avals_weak]
    out_tree_box = []

    def flat_fun(*tracers):
        for tracer, (_, weak) in zip(tracers, avals_weak, strict=False):
            tracer.weak_type = weak
        entry_vars = [tracer._var for tracer in tracers]
        call_args, call_kwargs = tree_unflatten(in_tree, tracers)
        out = fun(*call_args, **call_kwargs)
        out_leaves, out_tree = tree_flatten(out)
        out_tree_box.append(out_tree)
        if writes is None:
            functionalize.refuse_argument_writes(tracers, entry_vars, "this trace")
            return out_leaves
        writes.extend(functionalize.written_arguments(tracers, entry_vars))
        return out_leaves + [tracers[i] for i in writes]

    values = (
        [as_executable_argument(leaf, a) for leaf, a in zip(leaves, avals, strict=False)]
        if concrete
        else None
    )
    closed, _ = trace_flat(flat_fun, avals, values)
    return closed, in_tree, out_tree_box[0], [w for _, w in avals_weak]


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = ()):
    """Trace ``fun`` and return its closed jaxpr.

    >>> import numbax
    >>> print(numbax.make_jaxpr(lambda x, y: (x + y) * y)(2.0, 3.0))
    { lambda ; a:f64[] b:f64[]. let c:f64[] = add a b; d:f64[] = mul c b in (d,) }
    """
    static = as_tuple(static_argnums)
    traced_fun = tracing_numpy(fun)

    @traceback_util.api_boundary
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        dynamic = [a for i, a in enumerate(args) if i not in static]

        def call(*dyn, **kw):
            it = iter(dyn)
            full = [args[i] if i in static else next(it) for i in range(len(args))]
            return traced_fun(*full, **kw)

        closed, _, _, _ = trace_to_jaxpr(call, dynamic, kwargs, writes=[])
        return closed

    return wrapper
