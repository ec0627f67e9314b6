"""``custom_jvp``: a function whose forward-mode derivative the user writes, as in JAX.

    @numbax.custom_jvp
    def f(x): ...
    @f.defjvp
    def f_jvp(primals, tangents):             # tuples, one entry per argument
        (x,), (t,) = primals, tangents
        return f(x), tangent_out              # tangent_out linear in the tangents

Called under a trace, ``f`` becomes one ``custom_jvp_call`` equation holding the jaxprs
of ``f`` and of the rule (see ``ir/higher_order.py``). Forward mode replays the rule.
Reverse mode uses it too, as JAX does: the rule's tangent output is linear in the
tangents, so the VJP of the rule with respect to its tangents (taken at zero tangents)
is the transpose of the derivative the user wrote. Either way the equation is replaced
by the rule's operations, which are differentiated again for higher orders. Compiled
without differentiation, the inline pass splices in the primal body.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..ir.errors import GradientError, at_line
from ..ir.higher_order import custom_jvp_call_p
from ..tracer import lax
from ..tracer.closure import closure_convert
from ..tracer.core import bind, current_trace, replay, trace_flat
from ..tracer.numpy_namespace import tracing_numpy
from ..tracer.pytree import tree_flatten, tree_map, tree_unflatten
from ..tracer.source_info import user_frame_info
from . import derivatives as d
from .jvp import JVP_RULES
from .tracing import trace_function
from .vjp import vjp_split
from .vjp_rules import VJP_RULES


class custom_jvp:  # noqa: N801 - lower case, as the decorator it is (jax.custom_jvp)
    """Decorate a function to give it a custom JVP with ``defjvp(rule)``; ``grad`` and
    ``vjp`` use the rule too (its tangent output must be linear in the tangents).

    ``nondiff_argnums``: positions of arguments that are not arrays (a callable, a
    flag); the rule receives them first, before ``primals`` and ``tangents``.

    >>> import numpy as np, numbax
    >>> @numbax.custom_jvp
    ... def log1pexp(x):
    ...     return np.log1p(np.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t / (1.0 + np.exp(-x))  # finite where exp(x) overflows
    >>> numbax.grad(log1pexp)(1000.0)
    array(1.)
    """

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        # The rule usually calls the function itself (``return f(x), ...``): while the
        # rule is traced, such a call is the plain primal, not another custom_jvp_call.
        self._tracing_rule = False

    def defjvp(self, jvp: Callable) -> Callable:
        """``jvp(primals, tangents) -> (primal_out, tangent_out)``: ``primals`` and
        ``tangents`` are tuples with one entry per argument, ``tangent_out`` has the
        output's structure. Returns ``jvp``, so it can be used as a decorator."""
        self.jvp = jvp
        return jvp

    def defjvps(self, *tangent_fns: Callable | None) -> None:
        """One function per argument, ``tangent_fn(t, primal_out, *primals)``: the output
        tangent's part from that argument's tangent ``t`` (``None``: the output does not
        depend on it). The parts are summed.

        >>> import numpy as np, numbax
        >>> @numbax.custom_jvp
        ... def f(x, y):
        ...     return np.sin(x) * y
        >>> f.defjvps(lambda t, out, x, y: np.cos(x) * y * t, lambda t, out, x, y: np.sin(x) * t)
        >>> numbax.grad(f, argnums=(0, 1))(0.0, 2.0)
        (array(2.), array(0.))
        """

        def jvp(*fixed_primals_tangents):
            *fixed, primals, tangents = fixed_primals_tangents
            out = self.fun(*_merged(self.nondiff_argnums, fixed, primals))
            tangent_out = None
            for tangent_fn, t in zip(tangent_fns, tangents, strict=True):
                if tangent_fn is not None:
                    part = tangent_fn(t, out, *primals)
                    tangent_out = part if tangent_out is None else tree_map(_add, tangent_out, part)
            if tangent_out is None:
                tangent_out = tree_map(lambda x: lax.zeros_like_aval(d.aval(x)), out)
            return out, tangent_out

        self.defjvp(jvp)

    def __call__(self, *args):
        if self.jvp is None:
            raise GradientError(
                at_line(
                    f"custom_jvp function {self.__name__} has no JVP yet: call "
                    f"{self.__name__}.defjvp(rule) before using it",
                    user_frame_info(),
                )
            )
        if current_trace() is None or self._tracing_rule:
            return self.fun(*args)  # nothing is being differentiated
        fun, rule, args = self._without_nondiff(args)
        primal = trace_function(fun, args)
        self._tracing_rule = True
        try:
            rule_closed, _ = trace_flat(
                self._flat_rule(rule, primal), primal.closed.jaxpr.in_avals * 2
            )
        finally:
            self._tracing_rule = False
        primal_jaxpr, primal_consts = closure_convert(primal.closed)
        jvp_jaxpr, jvp_consts = closure_convert(rule_closed)
        num_primal_consts = len(primal_consts)
        call_jaxpr = d.taking_rule_consts(primal_jaxpr, num_primal_consts, jvp_consts)
        outs = bind(
            custom_jvp_call_p,
            *primal_consts,
            *jvp_consts,
            *primal.leaves,
            jaxpr=call_jaxpr,
            jvp_jaxpr=jvp_jaxpr,
            const_counts=(num_primal_consts, len(jvp_consts)),
        )
        return tree_unflatten(primal.out_tree, outs)

    def _without_nondiff(self, args):
        """The function and rule of the differentiable arguments only, and those."""
        if not self.nondiff_argnums:
            return self.fun, self.jvp, args
        positions = sorted({i % len(args) for i in self.nondiff_argnums})
        fixed = [args[i] for i in positions]
        free = [a for i, a in enumerate(args) if i not in positions]

        def fun(*free_args):
            return self.fun(*_merged(positions, fixed, free_args))

        def rule(primals, tangents):
            return self.jvp(*fixed, primals, tangents)

        return fun, rule, free

    def _flat_rule(self, rule, primal):
        num_args = len(primal.closed.jaxpr.invars)
        out_avals = primal.closed.jaxpr.out_avals
        rule = tracing_numpy(rule)

        def flat_rule(*flat):
            (primals, _), (tangents, _) = (
                tree_unflatten(primal.in_tree, flat[:num_args]),
                tree_unflatten(primal.in_tree, flat[num_args:]),
            )
            result = rule(tuple(primals), tuple(tangents))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise GradientError(
                    at_line(
                        f"custom_jvp rule of {self.__name__} must return a pair "
                        f"(primal_out, tangent_out), got {_describe(result)}",
                        user_frame_info(),
                    )
                )
            outs, out_tree = tree_flatten(result[0])
            tangents_out, tangent_tree = tree_flatten(result[1])
            if out_tree != primal.out_tree or [d.aval(x) for x in outs] != out_avals:
                raise GradientError(
                    at_line(
                        f"custom_jvp rule of {self.__name__} returns a primal output "
                        f"{out_tree} {[d.aval(x).str_short() for x in outs]} that differs from "
                        f"the function's {primal.out_tree} {[a.str_short() for a in out_avals]}",
                        user_frame_info(),
                    )
                )
            if tangent_tree != out_tree:
                raise GradientError(
                    at_line(
                        f"custom_jvp rule of {self.__name__} returns a tangent of structure "
                        f"{tangent_tree}, but the output has {out_tree}",
                        user_frame_info(),
                    )
                )
            return outs + [_tangent_like(t, x) for t, x in zip(tangents_out, outs, strict=True)]

        return flat_rule


def _merged(positions, fixed, free) -> list:
    """The full argument list: ``fixed`` at ``positions``, ``free`` in the other places."""
    count = len(fixed) + len(free)
    positions = {i % count for i in positions}
    fixed_values, free_values = iter(fixed), iter(free)
    return [next(fixed_values) if i in positions else next(free_values) for i in range(count)]


def _add(a, b):
    return a + b


def _tangent_like(t, x):
    """The rule's tangent in its output's dtype and shape (a rule may return ``0.0``)."""
    like = d.aval(x)
    t = lax.convert_element_type(t, like.dtype)
    return lax.broadcast_to_rank(t, like.shape) if d.aval(t).shape != like.shape else t


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of length {len(value)}"
    return f"a {type(value).__name__}"


@JVP_RULES.rule(custom_jvp_call_p)
def _custom_jvp_call_jvp(primals, tangents, *, jaxpr, jvp_jaxpr, const_counts):
    num_consts = sum(const_counts)
    d.refuse_closed_over("custom_jvp", (t is not None for t in tangents[:num_consts]))
    jvp_consts, args = primals[const_counts[0] : num_consts], primals[num_consts:]
    arg_tangents = [d.instantiate(t, x) for t, x in zip(tangents[num_consts:], args, strict=True)]
    results = replay(jvp_jaxpr, [], [*jvp_consts, *args, *arg_tangents])
    outs, tangents_out = results[: len(jaxpr.outvars)], results[len(jaxpr.outvars) :]
    return outs, [
        t if d.has_tangent(d.aval(out)) else None for t, out in zip(tangents_out, outs, strict=True)
    ]


@VJP_RULES.rule(custom_jvp_call_p)
def _custom_jvp_call_vjp(primals, wrt, *, jaxpr, jvp_jaxpr, const_counts):
    num_consts = sum(const_counts)
    d.refuse_closed_over("custom_jvp", wrt[:num_consts])
    jvp_consts, args = primals[const_counts[0] : num_consts], primals[num_consts:]
    num_outs = len(jaxpr.outvars)
    # The transpose of the rule's tangent map: its VJP with respect to the tangents only,
    # for cotangents of the tangent outputs only.
    split = vjp_split(
        jvp_jaxpr,
        (False,) * (const_counts[1] + len(args)) + tuple(wrt[num_consts:]),
        (False,) * num_outs + (True,) * num_outs,
    )
    zeros = [lax.zeros_like_aval(d.aval(x)) for x in args]
    results, residuals = split.run_forward([*jvp_consts, *args, *zeros])
    outs = results[:num_outs]

    def backward(cts):
        given = [
            d.instantiate(ct, out)
            for ct, out, m in zip(cts, outs, split.cotangent_mask[num_outs:], strict=True)
            if m
        ]
        in_cts = d.in_place(split.run_backward(residuals, given), split.wrt)
        return [None] * num_consts + in_cts[const_counts[1] + len(args) :]

    return outs, backward
