"""The user-facing derivatives: ``jvp``, ``vjp``, ``grad``, ``value_and_grad``.

Each traces the user's function (concretely on arrays, see ``tracing``), rewrites the
recorded jaxpr (``jvp_jaxpr`` / ``vjp_split``) and evaluates the result with
``replay``: eagerly on arrays, or recorded into the enclosing trace when called under
``jit`` or another transform. That is why they nest in any order.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence

import numpy as np

from ..ir import dtypes
from ..ir.errors import GradientError, NumbaxTypeError, ShapeError, at_line, function_name
from ..tracer import lax
from ..tracer.closure import closure_convert
from ..tracer.core import current_trace, replay
from ..tracer.numpy_namespace import tracing_numpy
from ..tracer.promote import argument_aval
from ..tracer.pytree import tree_flatten, tree_unflatten
from ..tracer.source_info import user_frame_info
from . import derivatives as d
from .jvp import jvp_jaxpr
from .tracing import Traced, as_operand, needs_concrete_values, trace_function
from .vjp import vjp_split


def jvp(fun: Callable, primals: Sequence, tangents: Sequence):
    """Forward mode: ``(fun(*primals), J(primals) @ tangents)``.

    >>> import numpy as np, numbax
    >>> numbax.jvp(np.sin, (0.0,), (2.0,))
    (array(0.), array(2.))
    """
    primals, tangents = _as_tuple(primals, "primals"), _as_tuple(tangents, "tangents")
    traced = trace_function(fun, primals)
    tangent_leaves, tangent_tree = tree_flatten((tangents, {}))
    if tangent_tree != traced.in_tree:
        raise _error(
            ShapeError,
            f"jvp: tangents {tangent_tree} do not have the structure of "
            f"the primals {traced.in_tree}",
        )
    tangent_leaves = [
        _like(t, p, "tangent") for t, p in zip(tangent_leaves, traced.leaves, strict=True)
    ]
    jaxpr, consts = closure_convert(traced.closed)
    nonzeros = [False] * len(consts) + [True] * len(traced.leaves)
    jvp_program, jvp_consts = jvp_jaxpr(jaxpr, tuple(nonzeros))
    float_tangents = [t for t in tangent_leaves if d.has_tangent(d.aval(t))]
    results = replay(jvp_program, [], [*jvp_consts, *consts, *traced.leaves, *float_tangents])
    outs, rest = results[: len(jaxpr.outvars)], iter(results[len(jaxpr.outvars) :])
    out_tangents = [
        next(rest) if d.has_tangent(v.aval) else lax.zeros_like_aval(v.aval) for v in jaxpr.outvars
    ]
    return (tree_unflatten(traced.out_tree, outs), tree_unflatten(traced.out_tree, out_tangents))


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """Reverse mode: ``(fun(*primals), vjp_fn)`` where ``vjp_fn(cotangent)`` returns one
    cotangent per primal (``(out, vjp_fn, aux)`` with ``has_aux``).

    >>> import numpy as np, numbax
    >>> out, vjp_fn = numbax.vjp(lambda x: x * x, np.array([1.0, 2.0]))
    >>> vjp_fn(np.ones(2))
    (array([2., 4.]),)
    """
    traced = trace_function(fun, primals, keep_values=True)
    main_tree, aux_tree = split_aux(traced, has_aux)
    pullback = Pullback(traced, main_tree)
    if has_aux:
        return pullback.main_output(), pullback, pullback.aux_output(aux_tree)
    return pullback.main_output(), pullback


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """``fun``'s value and its gradient with respect to the arguments ``argnums``.

    Complex arguments follow JAX: the gradient of a real ``fun`` of ``z = x + iy`` is
    ``df/dx - i df/dy`` (the conjugate of the steepest-ascent direction); with
    ``holomorphic=True`` a complex ``fun`` of complex arguments gets its derivative
    ``f'(z)``.

    >>> import numbax
    >>> numbax.value_and_grad(lambda x, y: (x + y) * y, argnums=(0, 1))(2.0, 3.0)
    (array(15.), (array(3.), array(8.)))
    """
    name = function_name(fun)

    # updated=(): a jitted ``fun``'s attributes (its caches) are not the wrapper's.
    @functools.wraps(fun, updated=())
    def value_and_grad_fun(*args, **kwargs):
        traced = trace_with_respect_to(fun, args, kwargs, argnums, name, holomorphic)
        main_tree, aux_tree = split_aux(traced, has_aux)
        _check_scalar_output(traced, main_tree, name, holomorphic)
        pullback = Pullback(traced, main_tree)
        value = pullback.main_output()
        grads = pullback(np.ones((), traced.closed.jaxpr.outvars[0].aval.dtype))
        grads = grads[0] if isinstance(argnums, int) else grads
        if has_aux:
            return (value, pullback.aux_output(aux_tree)), grads
        return value, grads

    return value_and_grad_fun


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """The gradient of a scalar-valued ``fun`` with respect to the arguments ``argnums``
    (an int, or a tuple for a tuple of gradients; each may be any pytree of arrays).

    >>> import numpy as np, numbax
    >>> numbax.grad(lambda x: np.sum(np.sin(x) * x**2))(np.zeros(2))
    array([0., 0.])
    >>> numbax.grad(lambda z: np.real(z * np.conj(z)))(3 + 4j)  # JAX: df/dx - i df/dy
    array(6.-8.j)
    """
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic)

    @functools.wraps(fun, updated=())
    def grad_fun(*args, **kwargs):
        value, grads = value_and_grad_fun(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_fun


class Pullback:
    """``vjp_fn``: the VJP split of a traced function, its forward already run."""

    def __init__(self, traced: Traced, main_tree):
        self.traced, self.main_tree = traced, main_tree
        jaxpr, consts = closure_convert(traced.closed)
        self.num_main = main_tree.num_leaves
        mask = [i < self.num_main for i in range(len(jaxpr.outvars))]
        self.split = vjp_split(jaxpr, [False] * len(consts) + [True] * len(traced.leaves), mask)
        primals = [*consts, *traced.leaves]
        # Eager and concrete: the trace already computed the forward; reuse its values.
        outs = residuals = None
        if current_trace() is None and traced.values is not None:
            outs = traced.output_values()
            residuals = self.split.residuals_from(traced.values, primals)
        if outs is None or residuals is None:
            outs, residuals = self.split.run_forward(primals)
        self.outs, self.residuals = outs, residuals

    def main_output(self):
        return tree_unflatten(self.main_tree, self.outs[: self.num_main])

    def aux_output(self, aux_tree):
        return tree_unflatten(aux_tree, self.outs[self.num_main :])

    def __call__(self, cotangent):
        leaves, tree = tree_flatten(cotangent)
        if tree != self.main_tree:
            raise _error(
                ShapeError,
                f"vjp_fn: the cotangent {tree} does not have the "
                f"structure of the output {self.main_tree}",
            )
        outs = self.outs[: self.num_main]
        given = [_like(ct, out, "cotangent") for ct, out in zip(leaves, outs, strict=True)]
        mask = self.split.cotangent_mask[: self.num_main]
        given = [ct for ct, m in zip(given, mask, strict=True) if m]
        in_cts = iter(self.split.run_backward(self.residuals, given))
        num_consts = len(self.split.wrt) - len(self.traced.leaves)
        cts = [
            next(in_cts) if w else lax.zeros_like_aval(d.aval(leaf))
            for w, leaf in zip(self.split.wrt[num_consts:], self.traced.leaves, strict=True)
        ]
        args, _ = tree_unflatten(self.traced.in_tree, cts)
        return args


def trace_with_respect_to(
    fun: Callable, args, kwargs, argnums, name: str, holomorphic: bool = False
) -> Traced:
    """Trace ``fun`` as a function of the arguments at ``argnums`` (the others, and the
    keyword arguments, are constants of the trace)."""
    positions = _argnum_positions(argnums, len(args), name)
    for i in positions:
        _check_differentiable_argument(fun, args[i], i, name, holomorphic)

    traced_fun = tracing_numpy(fun)  # its np.zeros(...) are traced arrays

    def restricted(*diff_args):
        full = list(args)
        for i, value in zip(positions, diff_args, strict=True):
            full[i] = value
        return traced_fun(*full, **kwargs)

    restricted.needs_concrete_values = needs_concrete_values(fun)
    restricted.__name__ = function_name(fun)
    others = (tuple(a for i, a in enumerate(args) if i not in positions), kwargs)
    return trace_function(
        restricted, tuple(args[i] for i in positions), keep_values=True, constants=others
    )


def split_aux(traced: Traced, has_aux: bool):
    """The output's tree and, with ``has_aux``, the auxiliary data's tree."""
    if not has_aux:
        return traced.out_tree, None
    tree = traced.out_tree
    if tree.kind not in (tuple, list) or len(tree.children) != 2:
        raise _error(
            NumbaxTypeError,
            "has_aux=True needs the function to return a pair "
            f"(output, auxiliary data), but it returned {tree}",
        )
    return tree.children


def _argnum_positions(argnums, num_args: int, name: str) -> tuple[int, ...]:
    positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not positions:
        raise _error(
            GradientError,
            f"grad of {name}: argnums is empty; pass the positions of "
            "the arguments to differentiate",
        )
    for i in positions:
        if not -num_args <= i < num_args:
            raise _error(
                GradientError,
                f"grad of {name}: argnums={argnums} refers to argument "
                f"{i}, but {name} was called with {num_args} "
                "positional arguments",
            )
    return tuple(i % num_args for i in positions)


def _check_differentiable_argument(
    fun, arg, position: int, name: str, holomorphic: bool = False
) -> None:
    for leaf in tree_flatten(arg)[0]:
        aval, _ = argument_aval(leaf)
        if holomorphic and not dtypes.is_complex(aval.dtype):
            raise _error(
                GradientError,
                f"grad of {name} with holomorphic=True needs complex arguments, but argument "
                f"{position}{_parameter_name(fun, position)} is {aval.str_short()}: pass "
                "x.astype(complex), or drop holomorphic=True for a real argument.",
            )
        if not dtypes.is_inexact(aval.dtype):
            raise _error(
                GradientError,
                f"grad of {name} with respect to argument {position}"
                f"{_parameter_name(fun, position)}, which has dtype {aval.dtype} "
                f"({aval.str_short()}): only floating-point and complex arguments have "
                "gradients. Pass "
                "a float array (x.astype(float), or 2.0 rather than 2), or leave the argument "
                "out of argnums.",
            )


def _parameter_name(fun, position: int) -> str:
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return ""
    if position < len(params) and params[position].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        return f" ({params[position].name!r})"
    return ""


def _check_scalar_output(traced: Traced, main_tree, name: str, holomorphic: bool = False) -> None:
    outvars = traced.closed.jaxpr.outvars
    if main_tree.num_leaves != 1 or main_tree.kind != "leaf":
        raise _error(
            GradientError,
            f"grad of {name}: the function must return one scalar, "
            f"but it returned a {main_tree}. Use jacrev/jacfwd, or vjp "
            "for a vector-Jacobian product.",
        )
    aval = outvars[0].aval
    if aval.shape != () or not dtypes.is_inexact(aval.dtype):
        raise _error(
            GradientError,
            f"grad of {name} needs a scalar floating-point output, but it returned an array "
            f"of shape {aval.shape} ({aval.str_short()}). Reduce it to a scalar (e.g. .sum()), "
            "or use jacrev/jacfwd for the Jacobian, or vjp for a vector-Jacobian product.",
        )
    _check_output_kind(aval, name, holomorphic)


def _check_output_kind(aval, name: str, holomorphic: bool) -> None:
    """JAX's rule: a real output, or with ``holomorphic=True`` a complex one."""
    if holomorphic and not dtypes.is_complex(aval.dtype):
        raise _error(
            GradientError,
            f"grad of {name} with holomorphic=True needs a complex output, but it returned "
            f"{aval.str_short()}: drop holomorphic=True to differentiate a real function.",
        )
    if not holomorphic and dtypes.is_complex(aval.dtype):
        raise _error(
            GradientError,
            f"grad of {name} needs a real output, but it returned {aval.str_short()}: pass "
            "holomorphic=True for a holomorphic function, or differentiate np.real(...) or "
            "np.abs(...) of the output.",
        )


def _like(value, reference, what: str):
    """``value`` as an operand of ``reference``'s type (a tangent or cotangent)."""
    aval, _ = argument_aval(value)
    expected = d.aval(reference)
    if aval.shape != expected.shape:
        raise _error(
            ShapeError,
            f"a {what} of shape {aval.shape} was given for a value of shape {expected.shape}",
        )
    return lax.convert_element_type(as_operand(value, aval), expected.dtype)


def _as_tuple(values, what: str) -> tuple:
    if not isinstance(values, (tuple, list)):
        raise _error(
            NumbaxTypeError,
            f"jvp: {what} must be a tuple or list with one entry per "
            f"argument, got {type(values).__name__}",
        )
    return tuple(values)


def _error(cls, message: str):
    return cls(at_line(message, user_frame_info()))
