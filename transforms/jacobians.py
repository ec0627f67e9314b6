"""Full Jacobians and Hessians: one batched JVP or VJP over a standard basis.

``jacfwd`` is ``vmap`` of the JVP program over the standard basis of the inputs: every
input element's basis vector is one example of the batch, so the whole Jacobian is one
batched forward-mode program. ``jacrev`` runs the forward once and ``vmap``s the
backward program over the standard basis of the outputs. ``hessian`` is
``jacfwd(jacrev(f))``. The batching interpreter (``batching.eval_batched``) emits into
whatever trace is current, so under ``jit`` the Jacobian is one staged program, and
eagerly it runs on arrays.

The Jacobian of an output of shape ``O`` with respect to an input of shape ``I`` has
shape ``O + I``. The basis of all inputs (or outputs) together is one batch of size
``n`` (their total number of elements); input (output) leaf ``i`` owns the rows
``offset_i : offset_i + size_i`` of it, in C order.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence

from ..ir import dtypes
from ..ir.core import ShapedArray
from ..ir.errors import GradientError, at_line, function_name
from ..tracer import lax
from ..tracer.closure import closure_convert
from ..tracer.core import replay
from ..tracer.pytree import tree_unflatten
from ..tracer.source_info import user_frame_info
from . import derivatives as d
from .autodiff import Pullback, split_aux, trace_with_respect_to
from .batching import eval_batched, moveaxis, to_front
from .jvp import jvp_jaxpr
from .tracing import Traced


def jacfwd(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """The Jacobian of ``fun`` by forward mode (good for few inputs, many outputs).
    Complex inputs need ``holomorphic=True`` (as in JAX): the Jacobian is then ``f'(z)``.

    >>> import numpy as np, numbax
    >>> numbax.jacfwd(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return _jacobian(fun, argnums, has_aux, _forward_columns, holomorphic)


def jacrev(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """The Jacobian of ``fun`` by reverse mode (good for many inputs, few outputs).
    Complex outputs need ``holomorphic=True`` (as in JAX): the Jacobian is then ``f'(z)``.

    >>> import numpy as np, numbax
    >>> numbax.jacrev(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return _jacobian(fun, argnums, has_aux, _reverse_rows, holomorphic)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))``.

    >>> import numpy as np, numbax
    >>> numbax.hessian(lambda x: (x**3).sum())(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


def _jacobian(fun, argnums, has_aux, blocks, holomorphic=False):
    name = function_name(fun)

    @functools.wraps(fun, updated=())
    def jacobian_fun(*args, **kwargs):
        traced = trace_with_respect_to(fun, args, kwargs, argnums, name, holomorphic)
        main_tree, aux_tree = split_aux(traced, has_aux)
        _check_complex(traced, main_tree, blocks is _forward_columns, holomorphic, name)
        num_main = main_tree.num_leaves
        # jac[o][i]: output leaf o with respect to input leaf i, shape O + I.
        outs, jac = blocks(traced, main_tree)
        in_trees = [tree_unflatten(traced.in_tree, row)[0] for row in jac]
        per_output = [t[0] if isinstance(argnums, int) else t for t in in_trees]
        result = tree_unflatten(main_tree, per_output)
        return (result, tree_unflatten(aux_tree, outs[num_main:])) if has_aux else result

    return jacobian_fun


def _check_complex(traced: Traced, main_tree, forward: bool, holomorphic: bool, name: str):
    """JAX's rule: a complex input of ``jacfwd`` or a complex output of ``jacrev`` means
    a holomorphic function, which the caller must say; one that is not holomorphic has
    no complex Jacobian (differentiate its real and imaginary parts instead)."""
    if holomorphic:
        return
    outputs = traced.closed.jaxpr.outvars[: main_tree.num_leaves]
    avals = [d.aval(x) for x in traced.leaves] if forward else [v.aval for v in outputs]
    if any(dtypes.is_complex(a.dtype) for a in avals):
        kind, what = ("jacfwd", "inputs") if forward else ("jacrev", "outputs")
        raise _error(
            f"{kind} of {name}: complex {what} need holomorphic=True (as in JAX) for a "
            "holomorphic function; otherwise take the Jacobian of np.real(...) and "
            "np.imag(...) of it"
        )


def _error(message: str):
    return GradientError(at_line(message, user_frame_info()))


def _forward_columns(traced: Traced, main_tree):
    """One JVP, batched over the inputs' basis: tangent output ``o`` comes back as
    ``(n,) + O``, and input ``i``'s rows of it, moved last, are the block ``O + I``."""
    jaxpr, consts = closure_convert(traced.closed)
    leaves = traced.leaves
    program, program_consts = jvp_jaxpr(jaxpr, (False,) * len(consts) + (True,) * len(leaves))
    in_avals = [d.aval(x) for x in leaves]
    float_leaves = [i for i, a in enumerate(in_avals) if d.has_tangent(a)]
    offsets, n = _offsets([in_avals[i] for i in float_leaves])
    primal_args = [*program_consts, *consts, *leaves]
    if n == 0:
        outs = replay(jaxpr, [], [*consts, *leaves])
        tangents_out: list = [None] * len(jaxpr.outvars)
    else:
        basis = [
            _basis(in_avals[i], offset, n) for i, offset in zip(float_leaves, offsets, strict=True)
        ]
        results, dims = eval_batched(
            program, [], [*primal_args, *basis], [None] * len(primal_args) + [0] * len(basis)
        )
        num_outs = len(jaxpr.outvars)
        outs = [
            _one_example(x, dim) for x, dim in zip(results[:num_outs], dims[:num_outs], strict=True)
        ]
        batched = iter(zip(results[num_outs:], dims[num_outs:], strict=True))
        tangents_out = [
            to_front(*next(batched), n) if d.has_tangent(var.aval) else None
            for var in jaxpr.outvars
        ]
    row_of = dict(zip(float_leaves, offsets, strict=True))
    jac = []
    num_main = main_tree.num_leaves
    for var, tangent in zip(jaxpr.outvars[:num_main], tangents_out[:num_main], strict=True):
        row = []
        for i, in_aval in enumerate(in_avals):
            block = None
            if tangent is not None and i in row_of:
                block = _columns_block(tangent, row_of[i], var.aval, in_aval)
            row.append(block if block is not None else _zeros_block(var.aval, in_aval))
        jac.append(row)
    return outs, jac


def _reverse_rows(traced: Traced, main_tree):
    """The forward once, then one backward batched over the outputs' basis: input
    cotangent ``i`` comes back as ``(n,) + I``, and output ``o``'s rows of it are the
    block ``O + I``."""
    pullback = Pullback(traced, main_tree)
    split, leaves = pullback.split, traced.leaves
    out_avals = [v.aval for v in traced.closed.jaxpr.outvars[: main_tree.num_leaves]]
    in_avals = [d.aval(x) for x in leaves]
    num_consts = len(split.wrt) - len(leaves)
    ct_outs = [o for o, m in enumerate(split.cotangent_mask) if m]
    wrt_leaves = [i for i, w in enumerate(split.wrt[num_consts:]) if w]
    offsets, n = _offsets([out_avals[o] for o in ct_outs])
    cts_in: dict[int, object] = {}
    if n and wrt_leaves:
        basis = [
            _basis(out_avals[o], offset, n) for o, offset in zip(ct_outs, offsets, strict=True)
        ]
        fixed = [*split.backward_consts, *pullback.residuals]
        results, dims = eval_batched(
            split.backward, [], [*fixed, *basis], [None] * len(fixed) + [0] * len(basis)
        )
        cts_in = {
            i: to_front(x, dim, n) for i, x, dim in zip(wrt_leaves, results, dims, strict=True)
        }
    row_of = dict(zip(ct_outs, offsets, strict=True))
    jac = []
    for o, out_aval in enumerate(out_avals):
        row = []
        for i, in_aval in enumerate(in_avals):
            block = None
            if i in cts_in and o in row_of:
                block = _rows_block(cts_in[i], row_of[o], out_aval, in_aval)
            row.append(block if block is not None else _zeros_block(out_aval, in_aval))
        jac.append(row)
    return pullback.outs, jac


def _offsets(avals: list[ShapedArray]) -> tuple[list[int], int]:
    """Where each aval's rows start in the stacked basis, and the basis's size."""
    sizes = [a.size for a in avals]
    starts = [0, *itertools.accumulate(sizes)]
    return starts[:-1], starts[-1]


def _basis(aval: ShapedArray, offset: int, n: int):
    """Rows ``offset : offset + size`` of the ``n x n`` identity, as ``(n,) + shape``:
    example ``r`` is the basis vector of element ``r - offset`` (zero elsewhere). Built
    from ``iota`` so a staged program carries no ``n x n`` constant."""
    rows = lax.iota(dtypes.int64, (n, aval.size), 0)
    columns = lax.iota(dtypes.int64, (n, aval.size), 1)
    if offset:
        columns = lax.add(columns, lax.full((), offset, dtypes.int64))
    one_hot = lax.convert_element_type(lax.eq(rows, columns), aval.dtype)
    return lax.reshape(one_hot, (n, *aval.shape))


def _columns_block(tangent, offset, out_aval, in_aval):
    """Input ``in_aval``'s examples of a batched tangent ``(n,) + O`` as ``O + I``."""
    if in_aval.size == 0 or out_aval.size == 0:
        return None
    rows = _rows(tangent, offset, in_aval.size)
    moved = moveaxis(rows, 0, out_aval.ndim)
    return lax.reshape(moved, out_aval.shape + in_aval.shape)


def _rows_block(cotangent, offset, out_aval, in_aval):
    """Output ``out_aval``'s examples of a batched cotangent ``(n,) + I`` as ``O + I``."""
    if in_aval.size == 0 or out_aval.size == 0:
        return None
    rows = _rows(cotangent, offset, out_aval.size)
    return lax.reshape(rows, out_aval.shape + in_aval.shape)


def _rows(x, offset: int, count: int):
    shape = tuple(x.shape)
    return lax.slice(x, (offset,) + (0,) * (len(shape) - 1), (offset + count,) + shape[1:])


def _one_example(x, dim):
    """A value that is the same for every example (a primal output), unbatched."""
    if dim is None:
        return x
    x = moveaxis(x, dim, 0)
    first = lax.slice(x, (0,) * len(x.shape), (1,) + tuple(x.shape[1:]))
    return lax.reshape(first, tuple(x.shape[1:]))


def _zeros_block(out_aval, in_aval):
    dtype = out_aval.dtype if d.has_tangent(out_aval) else in_aval.dtype
    return lax.zeros_like_aval(ShapedArray(out_aval.shape + in_aval.shape, dtype))
