"""``custom_vjp``: a function whose reverse-mode derivative the user writes, as in JAX.

    @numbax.custom_vjp
    def f(x): ...
    def f_fwd(x): return f(x), residuals          # (output, anything to save)
    def f_bwd(residuals, ct): return (ct_x,)      # one cotangent per argument
    f.defvjp(f_fwd, f_bwd)

Called under a trace, ``f`` becomes one ``custom_vjp_call`` equation holding the
jaxprs of ``f``, ``f_fwd`` and ``f_bwd`` (see ``ir/higher_order.py``). Reverse mode
replays ``f_fwd`` in the forward and ``f_bwd`` in the backward; forward mode, for
which the rule says nothing, differentiates ``f`` itself (``jvp.py``).

The rule gives cotangents of the arguments only. A value that ``f``, ``f_fwd`` or
``f_bwd`` closes over and that is being differentiated is refused in reverse mode, as in
JAX (its derivative would silently be zero): pass it as an argument. Closing over
constants, or over values that jit or vmap trace but nothing differentiates, is fine.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..ir.errors import GradientError, at_line
from ..ir.higher_order import custom_vjp_call_p
from ..tracer import lax
from ..tracer.closure import closure_convert
from ..tracer.core import bind, current_trace, replay, trace_flat
from ..tracer.pytree import tree_flatten, tree_unflatten
from ..tracer.source_info import user_frame_info
from . import derivatives as d
from .tracing import trace_function
from .vjp_rules import VJP_RULES


class custom_vjp:  # noqa: N801 - lower case, as the decorator it is (jax.custom_vjp)
    """Decorate a function to give it a custom VJP with ``defvjp(fwd, bwd)``.

    >>> import numpy as np, numbax
    >>> @numbax.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda _, ct: (np.clip(ct, -1, 1),))
    >>> numbax.grad(lambda x: 3.0 * clip_gradient(x))(2.0)
    array(1.)
    """

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        # fwd usually calls the function itself (``return f(x), res``): while fwd and
        # bwd are traced, such a call is the plain primal, not another custom_vjp_call.
        self._tracing_rule = False

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """``fwd(*args) -> (output, residuals)``; ``bwd(residuals, cotangent)`` -> a tuple
        with one cotangent per argument (``None`` for zero)."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise GradientError(
                at_line(
                    f"custom_vjp function {self.__name__} has no VJP yet: call "
                    f"{self.__name__}.defvjp(fwd, bwd) before using it",
                    user_frame_info(),
                )
            )
        if current_trace() is None or self._tracing_rule:
            return self.fun(*args)  # nothing is being differentiated
        primal = trace_function(self.fun, args)
        self._tracing_rule = True
        try:
            forward = trace_function(self.fwd, args)
            _check_forward(self.__name__, forward, primal)
            out_avals = primal.closed.jaxpr.out_avals
            residual_avals = forward.closed.jaxpr.out_avals[len(out_avals) :]
            residual_tree = forward.out_tree.children[1]
            backward_closed, _ = trace_flat(
                self._flat_backward(args, residual_tree, primal.out_tree, len(residual_avals)),
                residual_avals + out_avals,
            )
        finally:
            self._tracing_rule = False
        primal_jaxpr, primal_consts = closure_convert(primal.closed)
        fwd_jaxpr, fwd_consts = closure_convert(forward.closed)
        bwd_jaxpr, bwd_consts = closure_convert(backward_closed)
        num_primal_consts = len(primal_consts)
        call_jaxpr = d.taking_rule_consts(primal_jaxpr, num_primal_consts, fwd_consts + bwd_consts)
        outs = bind(
            custom_vjp_call_p,
            *primal_consts,
            *fwd_consts,
            *bwd_consts,
            *primal.leaves,
            jaxpr=call_jaxpr,
            fwd_jaxpr=fwd_jaxpr,
            bwd_jaxpr=bwd_jaxpr,
            const_counts=(num_primal_consts, len(fwd_consts), len(bwd_consts)),
        )
        return tree_unflatten(primal.out_tree, outs)

    def _flat_backward(self, args, residual_tree, out_tree, num_residuals):
        arg_trees = [tree_flatten(a) for a in args]

        def flat_backward(*flat):
            residuals = tree_unflatten(residual_tree, flat[:num_residuals])
            cotangent = tree_unflatten(out_tree, flat[num_residuals:])
            cts = self.bwd(residuals, cotangent)
            if not isinstance(cts, (tuple, list)) or len(cts) != len(args):
                raise GradientError(
                    at_line(
                        f"custom_vjp bwd of {self.__name__} must return a tuple with one "
                        f"cotangent per argument ({len(args)}), got {_describe(cts)}",
                        user_frame_info(),
                    )
                )
            flat_cts = []
            for i, (ct, (leaves, tree)) in enumerate(zip(cts, arg_trees, strict=True)):
                if ct is None:
                    flat_cts += [lax.zeros_like_aval(d.aval(x)) for x in leaves]
                    continue
                ct_leaves, ct_tree = tree_flatten(ct)
                if ct_tree != tree:
                    raise GradientError(
                        at_line(
                            f"custom_vjp bwd of {self.__name__}: the cotangent of argument {i} has "
                            f"structure {ct_tree}, but the argument has {tree}",
                            user_frame_info(),
                        )
                    )
                flat_cts += [_cotangent_like(c, x) for c, x in zip(ct_leaves, leaves, strict=True)]
            return flat_cts

        return flat_backward


def _cotangent_like(ct, x):
    aval = d.aval(x)
    ct = lax.convert_element_type(ct, aval.dtype)
    return lax.broadcast_to_rank(ct, aval.shape) if d.aval(ct).shape != aval.shape else ct


def _check_forward(name, forward, primal) -> None:
    tree = forward.out_tree
    if tree.kind not in (tuple, list) or len(tree.children) != 2:
        raise GradientError(
            at_line(
                f"custom_vjp fwd of {name} must return a pair (output, residuals), got {tree}",
                user_frame_info(),
            )
        )
    num_outs = len(primal.closed.jaxpr.outvars)
    if (
        tree.children[0] != primal.out_tree
        or forward.closed.jaxpr.out_avals[:num_outs] != primal.closed.jaxpr.out_avals
    ):
        raise GradientError(
            at_line(
                f"custom_vjp fwd of {name} returns an output that differs from the function's: "
                f"{[a.str_short() for a in forward.closed.jaxpr.out_avals[:num_outs]]} vs "
                f"{[a.str_short() for a in primal.closed.jaxpr.out_avals]}",
                user_frame_info(),
            )
        )


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of length {len(value)}"
    return f"a {type(value).__name__}"


@VJP_RULES.rule(custom_vjp_call_p)
def _custom_vjp_call_vjp(primals, wrt, *, jaxpr, fwd_jaxpr, bwd_jaxpr, const_counts):
    num_primal_consts, num_fwd_consts, num_bwd_consts = const_counts
    d.refuse_closed_over("custom_vjp", wrt[: sum(const_counts)])
    fwd_consts = primals[num_primal_consts : num_primal_consts + num_fwd_consts]
    bwd_consts = primals[num_primal_consts + num_fwd_consts : sum(const_counts)]
    args = primals[sum(const_counts) :]
    results = replay(fwd_jaxpr, [], [*fwd_consts, *args])
    outs, residuals = results[: len(jaxpr.outvars)], results[len(jaxpr.outvars) :]

    def backward(cts):
        cts = [d.instantiate(ct, out) for ct, out in zip(cts, outs, strict=True)]
        arg_cts = replay(bwd_jaxpr, [], [*bwd_consts, *residuals, *cts])
        return [None] * sum(const_counts) + [
            ct if d.has_tangent(d.aval(x)) else None for ct, x in zip(arg_cts, args, strict=True)
        ]

    return outs, backward
