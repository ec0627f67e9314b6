"""Full Jacobians and Hessians, one JVP or VJP per standard basis vector.

``jacfwd`` pushes each input basis vector forward (one JVP program, replayed per
vector); ``jacrev`` pulls each output basis vector back (one forward run, then one
backward per vector). The results are stacked so that the Jacobian of an output of
shape ``O`` with respect to an input of shape ``I`` has shape ``O + I``. (A later
``vmap`` replaces the loops with one batched program.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from ..tracer import lax
from ..tracer.core import replay
from ..tracer.pytree import tree_unflatten
from ..tracer.shapes import stack
from . import derivatives as d
from .autodiff import Pullback, split_aux, trace_with_respect_to
from .jaxprs import closure_convert
from .jvp import jvp_jaxpr
from .tracing import Traced


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The Jacobian of ``fun`` by forward mode (good for few inputs, many outputs).

    >>> import numpy as np, numbax
    >>> numbax.jacfwd(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return _jacobian(fun, argnums, has_aux, _forward_columns)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The Jacobian of ``fun`` by reverse mode (good for many inputs, few outputs).

    >>> import numpy as np, numbax
    >>> numbax.jacrev(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return _jacobian(fun, argnums, has_aux, _reverse_rows)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))``.

    >>> import numpy as np, numbax
    >>> numbax.hessian(lambda x: (x**3).sum())(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


def _jacobian(fun, argnums, has_aux, blocks):
    name = getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun, updated=())
    def jacobian_fun(*args, **kwargs):
        traced = trace_with_respect_to(fun, args, kwargs, argnums, name)
        main_tree, aux_tree = split_aux(traced, has_aux)
        num_main = main_tree.num_leaves
        # jac[o][i]: output leaf o with respect to input leaf i, shape O + I.
        outs, jac = blocks(traced, main_tree)
        in_trees = [tree_unflatten(traced.in_tree, row)[0] for row in jac]
        per_output = [t[0] if isinstance(argnums, int) else t for t in in_trees]
        result = tree_unflatten(main_tree, per_output)
        return (result, tree_unflatten(aux_tree, outs[num_main:])) if has_aux else result

    return jacobian_fun


def _forward_columns(traced: Traced, main_tree):
    jaxpr, consts = closure_convert(traced.closed)
    leaves, num_main, num_consts = traced.leaves, main_tree.num_leaves, len(consts)
    program, program_consts = jvp_jaxpr(jaxpr, (False,) * num_consts + (True,) * len(leaves))
    float_leaves = [i for i, x in enumerate(leaves) if d.has_tangent(d.aval(x))]
    outvars = jaxpr.outvars[:num_main]
    columns = [[[] for _ in leaves] for _ in outvars]  # per output, per input: tangents
    outs = None
    for i in float_leaves:
        for k in range(d.aval(leaves[i]).size):
            tangents = [_basis(d.aval(leaves[j]), k if j == i else None) for j in float_leaves]
            results = replay(program, [], [*program_consts, *consts, *leaves, *tangents])
            outs = results[: len(jaxpr.outvars)]
            tangent_outs = iter(results[len(jaxpr.outvars) :])
            for o, var in enumerate(jaxpr.outvars):
                tangent = next(tangent_outs) if d.has_tangent(var.aval) else None
                if o < num_main:
                    columns[o][i].append(tangent)
    if outs is None:
        outs = replay(jaxpr, [], [*consts, *leaves])
    jac = [
        [_assemble(columns[o][i], var.aval, d.aval(x), axis=-1) for i, x in enumerate(leaves)]
        for o, var in enumerate(outvars)
    ]
    return outs, jac


def _reverse_rows(traced: Traced, main_tree):
    pullback = Pullback(traced, main_tree)
    split, residuals, outs = pullback.split, pullback.residuals, pullback.outs
    jaxpr, leaves, num_main = traced.closed.jaxpr, traced.leaves, main_tree.num_leaves
    num_consts = len(split.wrt) - len(leaves)
    ct_outs = [o for o, m in enumerate(split.cotangent_mask) if m]
    wrt_leaves = [i for i, w in enumerate(split.wrt[num_consts:]) if w]
    rows = [[[] for _ in leaves] for _ in range(num_main)]
    for o in ct_outs:
        for k in range(jaxpr.outvars[o].aval.size):
            cts = [_basis(jaxpr.outvars[p].aval, k if p == o else None) for p in ct_outs]
            for i, ct in zip(wrt_leaves, split.run_backward(residuals, cts), strict=True):
                rows[o][i].append(ct)
    jac = [
        [_assemble(rows[o][i], var.aval, d.aval(x), axis=0) for i, x in enumerate(leaves)]
        for o, var in enumerate(jaxpr.outvars[:num_main])
    ]
    return outs, jac


def _basis(aval, k):
    """The k-th standard basis vector of ``aval`` (all zeros for ``k=None``)."""
    e = np.zeros(aval.size, aval.dtype)
    if k is not None:
        e[k] = 1
    return e.reshape(aval.shape)


def _assemble(pieces, out_aval, in_aval, axis):
    """Stack per-element derivatives into an ``O + I`` block (zeros if none flowed)."""
    shape = out_aval.shape + in_aval.shape
    if not pieces or any(p is None for p in pieces) or 0 in shape:
        return lax.zeros_like_aval(
            out_aval.update(shape=shape, dtype=_jacobian_dtype(out_aval, in_aval))
        )
    # Columns (axis -1) are indexed by the input's flat position, rows (axis 0) by the
    # output's, both in C order: one reshape gives O + I.
    return lax.reshape(stack(pieces, axis=axis), shape)


def _jacobian_dtype(out_aval, in_aval):
    return out_aval.dtype if d.has_tangent(out_aval) else in_aval.dtype
