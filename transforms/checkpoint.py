"""``checkpoint(f)`` (alias ``remat``): trade compute for memory in reverse mode.

The function becomes one ``checkpoint`` equation. Its VJP saves only the equation's
inputs; the backward half is another ``checkpoint`` equation that recomputes the
forward from them and then runs the backward, so the intermediate values of ``f`` are
never residuals. (Forward mode treats it as a plain call: see ``jvp.call_jvp``.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..ir.core import Jaxpr
from ..ir.errors import function_name
from ..ir.higher_order import checkpoint_p
from ..tracer.closure import closure_convert
from ..tracer.core import bind, current_trace, trace_flat
from ..tracer.pytree import tree_unflatten
from . import derivatives as d
from .jaxprs import JaxprCache, dce_closed
from .tracing import trace_function
from .vjp import vjp_split
from .vjp_rules import VJP_RULES


def checkpoint(fun: Callable) -> Callable:
    """``fun``, recomputed in the backward pass instead of saving its intermediates.

    >>> import numpy as np, numbax
    >>> layer = numbax.checkpoint(lambda w, x: np.tanh(x @ w))
    >>> numbax.grad(lambda w, x: layer(w, x).sum())(np.eye(2), np.ones(2))
    array([[0.41997434, 0.41997434],
           [0.41997434, 0.41997434]])
    """
    name = function_name(fun)

    @functools.wraps(fun, updated=())
    def checkpointed(*args, **kwargs):
        if current_trace() is None:
            return fun(*args, **kwargs)  # nothing is being differentiated
        traced = trace_function(fun, args, kwargs)
        jaxpr, consts = closure_convert(traced.closed)
        outs = bind(checkpoint_p, *consts, *traced.leaves, jaxpr=jaxpr, name=name)
        return tree_unflatten(traced.out_tree, outs)

    return checkpointed


remat = checkpoint


@VJP_RULES.rule(checkpoint_p)
def _checkpoint_vjp(primals, wrt, *, jaxpr: Jaxpr, name: str = "checkpoint"):
    outs = bind(checkpoint_p, *primals, jaxpr=jaxpr, name=name)

    def backward(cts):
        mask = tuple(ct is not None for ct in cts)
        recompute, consts = _recompute_and_backward(jaxpr, tuple(wrt), mask)
        given = [ct for ct in cts if ct is not None]
        in_cts = bind(checkpoint_p, *consts, *primals, *given, jaxpr=recompute, name=f"{name}_bwd")
        return d.in_place(in_cts, vjp_split(jaxpr, wrt, mask).wrt)

    return outs, backward


_recompute_cache = JaxprCache()


def _recompute_and_backward(jaxpr: Jaxpr, wrt, mask) -> tuple[Jaxpr, list]:
    """``(*primals, *cotangents) -> input cotangents``: the forward half, then the
    backward half, as one jaxpr."""

    def build():
        split = vjp_split(jaxpr, wrt, mask)
        num_inputs = len(jaxpr.invars)
        ct_avals = [v.aval for v, m in zip(jaxpr.outvars, split.cotangent_mask, strict=True) if m]

        def recompute(*args):
            _, residuals = split.run_forward(list(args[:num_inputs]))
            return split.run_backward(residuals, list(args[num_inputs:]))

        closed, _ = trace_flat(recompute, jaxpr.in_avals + ct_avals)
        return closure_convert(dce_closed(closed))

    return _recompute_cache.get(jaxpr, (wrt, mask), build)
