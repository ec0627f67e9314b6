"""Front ends of the control-flow primitives: ``cond``, ``switch``, ``while_loop``,
``fori_loop`` and ``scan``.

Each traces its Python callables once, on abstract values, into closure-converted
sub-jaxprs (a 1000-step loop is one body in the program, not 1000 copies), checks that
branches agree and that loop bodies keep their carry's types, and binds one primitive.
Outside any trace the primitive then runs eagerly through its reference implementation.

A carry leaf that started as a Python scalar is weakly typed, as a ``jit`` argument is:
if the body turns it into another dtype of the same shape (``0.0`` carried through
``x + float32_array``), the body is traced again with the carry in that dtype, which is
what the equivalent Python loop computes.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.control_flow import cond_p, scan_p, while_p
from ..ir.core import ShapedArray, aval_of
from ..ir.errors import ControlFlowError, at_line
from . import lax
from .closure import closure_convert, closure_convert_all
from .core import Tracer, bind, new_trace
from .promote import argument_aval, is_python_scalar, is_weak, result_type
from .pytree import tree_flatten, tree_structure, tree_unflatten
from .source_info import user_frame_info


def _error(message: str) -> ControlFlowError:
    return ControlFlowError(at_line(message, user_frame_info()))


def _types(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _leaf_aval(leaf, what: str) -> ShapedArray:
    return argument_aval(leaf, lambda message: _error(f"{what}: {message}"))[0]


def _cast(leaf, aval: ShapedArray):
    """An operand of exactly ``aval``'s dtype (NumPy inputs are also made canonical)."""
    if isinstance(leaf, Tracer):
        return lax.convert_element_type(leaf, aval.dtype)
    if is_python_scalar(leaf) and aval_of(leaf) == aval:
        return leaf
    return np.asarray(leaf, dtype=aval.dtype)


def _trace(flat_fun, avals, weak):
    """Trace ``flat_fun`` on abstract arguments; the jaxpr is closed later, once the
    outputs' types are settled. Returns the trace, output leaves and output tree."""
    with new_trace(concrete=False) as trace:
        tracers = [trace.new_arg(aval) for aval in avals]
        for tracer, is_weak in zip(tracers, weak, strict=True):
            tracer.weak_type = is_weak
        out = flat_fun(*tracers)
    leaves, tree = tree_flatten(out)
    return trace, leaves, tree


# ---------------------------------------------------------------------------- cond


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, staged.

    Both branches are traced; they must return the same pytree of types.

    >>> import numpy as np, numbax
    >>> numbax.cond(np.float64(2.0) > 0, lambda x: x * 2, lambda x: -x, np.float64(3.0))
    array(6.)
    """
    pred_aval = _leaf_aval(pred, "cond")
    if pred_aval.shape != ():
        raise _error(
            f"cond: the predicate must be a scalar, got {pred_aval.str_short()}. For an "
            "elementwise choice use numpy.where(pred, a, b)."
        )
    if isinstance(pred, Tracer):
        if pred.dtype != dtypes.bool_:
            pred = lax.ne(pred, np.zeros((), pred.dtype))
        index = lax.convert_element_type(pred, dtypes.int32)
    else:
        index = np.asarray(bool(np.asarray(pred)), dtype=dtypes.int32)
    return _cond(index, (false_fun, true_fun), operands, "cond", ("false_fun", "true_fun"))


def switch(index, branches, *operands):
    """``branches[index](*operands)``, staged; ``index`` clamps into range.

    >>> import numpy as np, numbax
    >>> numbax.switch(1, [lambda x: x + 1, lambda x: x * 10], np.float64(2.0))
    array(20.)
    """
    branches = tuple(branches)
    if not branches:
        raise _error("switch: needs at least one branch")
    index_aval = _leaf_aval(index, "switch")
    if index_aval.shape != () or not dtypes.is_integer(index_aval.dtype):
        raise _error(f"switch: the index must be an integer scalar, got {index_aval.str_short()}")
    names = tuple(f"branches[{i}]" for i in range(len(branches)))
    return _cond(index, branches, operands, "switch", names)


def _cond(index, branches, operands, what, names):
    leaves, in_tree = tree_flatten(tuple(operands))
    avals = [_leaf_aval(leaf, what) for leaf in leaves]
    weak = [is_weak(leaf) for leaf in leaves]

    def traced(branch):
        return _trace(lambda *xs: branch(*tree_unflatten(in_tree, xs)), avals, weak)

    results = [traced(branch) for branch in branches]
    out_tree = results[0][2]
    for name, (_, _, tree) in zip(names, results, strict=True):
        if tree != out_tree:
            raise _error(
                f"{what}: the branches must return the same structure, but {name} returns "
                f"{tree} and {names[0]} returns {out_tree}"
            )
    out_avals = _agreed_avals([outs for _, outs, _ in results])
    closeds = []
    for name, (trace, outs, _) in zip(names, results, strict=True):
        outs = [_weak_output(leaf, aval) for leaf, aval in zip(outs, out_avals, strict=True)]
        got = [_leaf_aval(leaf, what) for leaf in outs]
        if got != out_avals:
            first = [_leaf_aval(leaf, what) for leaf in results[0][1]]
            raise _error(
                f"{what}: the branches must return the same types, but {name} returns "
                f"{_types(got)} and {names[0]} returns {_types(first)}. Make them agree "
                "with .astype(...) or numpy.broadcast_to(...)."
            )
        closeds.append(trace.to_jaxpr(outs))
    jaxprs, consts = closure_convert_all(closeds)
    args = [_cast(leaf, aval) for leaf, aval in zip(leaves, avals, strict=True)]
    outs = bind(cond_p, index, *consts, *args, branches=tuple(jaxprs))
    return tree_unflatten(out_tree, outs)


def _agreed_avals(outs_per_branch) -> list[ShapedArray]:
    """Per output, the type a non-scalar branch gives (Python scalars adapt to it)."""
    avals = []
    for leaves in zip(*outs_per_branch, strict=True):
        typed = [leaf for leaf in leaves if not is_python_scalar(leaf)]
        avals.append(_leaf_aval(typed[0] if typed else leaves[0], "cond"))
    return avals


def _weak_output(leaf, aval: ShapedArray):
    """A Python scalar returned where a scalar of ``aval`` is expected takes its dtype."""
    if is_python_scalar(leaf) and aval.shape == ():
        return np.asarray(leaf, dtype=aval.dtype)
    return leaf


# --------------------------------------------------------------------------- loops


def _trace_step(step, carry_tree, avals, weak, x_tree, x_avals, what, fun_name):
    """Trace ``step(carry, x) -> (carry, y)``; returns the closed jaxpr, the tree of
    ``y`` and the carry's types (weak Python-scalar carries may have been promoted)."""
    num_carry = len(avals)
    for attempt in range(2):

        def flat(*tracers):
            carry = tree_unflatten(carry_tree, tracers[:num_carry])
            return step(carry, tree_unflatten(x_tree, tracers[num_carry:]))

        trace, outs, out_tree = _trace(flat, avals + x_avals, weak + [False] * len(x_avals))
        if out_tree.kind is not tuple or len(out_tree.children) != 2:
            raise _error(f"{what}: {fun_name} must return a pair (carry, y), got {out_tree}")
        carry_out_tree, y_tree = out_tree.children
        if carry_out_tree != carry_tree:
            raise _error(
                f"{what}: {fun_name} must return a carry with the structure of its input, "
                f"{carry_tree}, but returns {carry_out_tree}"
            )
        carry_outs = [
            _weak_output(leaf, a) for leaf, a in zip(outs[:num_carry], avals, strict=True)
        ]
        got = [_leaf_aval(leaf, what) for leaf in carry_outs]
        promoted = [
            new if is_weak and new.shape == old.shape else old
            for old, new, is_weak in zip(avals, got, weak, strict=True)
        ]
        if promoted == avals or attempt == 1:
            break
        avals = promoted
    if got != avals:
        raise _error(
            f"{what}: {fun_name} must return a carry of the same types as its input, but it "
            f"maps {_types(avals)} to {_types(got)}. Cast with .astype(...) inside "
            f"{fun_name}, or give the initial value the dtype the loop computes in."
        )
    return trace.to_jaxpr(carry_outs + outs[num_carry:]), y_tree, avals


def while_loop(cond_fun, body_fun, init_val):
    """``while cond_fun(val): val = body_fun(val)``, staged; returns the final ``val``.

    >>> import numpy as np, numbax
    >>> numbax.while_loop(lambda x: x < 100, lambda x: x * 2, np.int64(3))
    array(192)
    """
    leaves, carry_tree = tree_flatten(init_val)
    avals = [_leaf_aval(leaf, "while_loop") for leaf in leaves]
    weak = [is_weak(leaf) for leaf in leaves]
    body_closed, _, avals = _trace_step(
        lambda carry, _: (body_fun(carry), None),
        carry_tree,
        avals,
        weak,
        tree_structure(None),
        [],
        "while_loop",
        "body_fun",
    )

    def flat_cond(*tracers):
        return cond_fun(tree_unflatten(carry_tree, tracers))

    trace, outs, _ = _trace(flat_cond, avals, weak)
    got = [_leaf_aval(leaf, "while_loop") for leaf in outs]
    if got != [ShapedArray((), dtypes.bool_)]:
        raise _error(
            f"while_loop: cond_fun must return one bool scalar, but returns {_types(got)}. "
            "Compare explicitly (e.g. x > 0), or reduce with numpy.any/numpy.all."
        )
    cond_jaxpr, cond_consts = closure_convert(trace.to_jaxpr(outs))
    body_jaxpr, body_consts = closure_convert(body_closed)
    init = [_cast(leaf, aval) for leaf, aval in zip(leaves, avals, strict=True)]
    outs = bind(
        while_p,
        *cond_consts,
        *body_consts,
        *init,
        cond_jaxpr=cond_jaxpr,
        body_jaxpr=body_jaxpr,
        cond_nconsts=len(cond_consts),
        body_nconsts=len(body_consts),
    )
    return tree_unflatten(carry_tree, outs)


def scan(f, init, xs=None, length=None, reverse=False):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``, staged; returns
    the final carry and the ``y``s stacked.

    >>> import numpy as np, numbax
    >>> numbax.scan(lambda c, x: (c + x, c), 0.0, np.arange(4.0))
    (array(6.), array([0., 0., 1., 3.]))
    """
    return _scan(f, init, xs, length, reverse, "scan", "f")


def _scan(f, init, xs, length, reverse, what, fun_name):
    leaves, carry_tree = tree_flatten(init)
    avals = [_leaf_aval(leaf, what) for leaf in leaves]
    weak = [is_weak(leaf) for leaf in leaves]
    x_leaves, x_tree = tree_flatten(xs)
    x_full = [_leaf_aval(leaf, what) for leaf in x_leaves]
    length = _scan_length(x_full, length, what)
    x_avals = [aval.update(shape=aval.shape[1:]) for aval in x_full]
    closed, y_tree, avals = _trace_step(f, carry_tree, avals, weak, x_tree, x_avals, what, fun_name)
    jaxpr, consts = closure_convert(closed)
    init = [_cast(leaf, aval) for leaf, aval in zip(leaves, avals, strict=True)]
    x_args = [_cast(leaf, aval) for leaf, aval in zip(x_leaves, x_full, strict=True)]
    outs = bind(
        scan_p,
        *consts,
        *init,
        *x_args,
        jaxpr=jaxpr,
        length=length,
        reverse=bool(reverse),
        num_consts=len(consts),
        num_carry=len(avals),
    )
    return tree_unflatten(carry_tree, outs[: len(avals)]), tree_unflatten(
        y_tree, outs[len(avals) :]
    )


def _scan_length(x_avals, length, what) -> int:
    lengths = {aval.shape[0] if aval.ndim else None for aval in x_avals}
    if None in lengths:
        raise _error(f"{what}: every leaf of xs must have a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) > 1:
        raise _error(f"{what}: xs leaves and length disagree on the length: {sorted(lengths)}")
    if not lengths:
        raise _error(f"{what}: give xs or length, so the number of steps is known")
    return lengths.pop()


def fori_loop(lower, upper, body_fun, init_val):
    """``for i in range(lower, upper): val = body_fun(i, val)``, staged.

    With concrete bounds the loop is a ``scan`` of static length (reverse-mode
    differentiable); with traced bounds it is a ``while``.

    >>> import numbax
    >>> numbax.fori_loop(0, 5, lambda i, total: total + i, 0)
    array(10)
    """
    if isinstance(lower, Tracer) or isinstance(upper, Tracer):
        return _fori_while(lower, upper, body_fun, init_val)
    dtype = _bound_dtype(lower, upper)
    both_python = isinstance(lower, int) and isinstance(upper, int)
    start = int(lower) if both_python else np.asarray(lower, dtype=dtype)

    def step(carry, _):
        i, val = carry
        return (i + 1, body_fun(i, val)), None

    steps = max(int(upper) - int(lower), 0)
    (_, out), _ = _scan(step, (start, init_val), None, steps, False, "fori_loop", "body_fun")
    return out


def _fori_while(lower, upper, body_fun, init_val):
    dtype = _bound_dtype(lower, upper)
    start, stop = _cast(lower, ShapedArray((), dtype)), _cast(upper, ShapedArray((), dtype))

    def body(carry):
        i, val = carry
        return i + 1, body_fun(i, val)

    _, out = while_loop(lambda carry: carry[0] < stop, body, (start, init_val))
    return out


def map_rows(f, xs):
    """``np.stack([f(x) for x in xs])``, staged as a ``scan`` without a carry: one trace
    of ``f`` whatever the length (``jax.lax.map``; ``numbax.lax.map``). ``xs`` and the
    result are pytrees whose leaves share a leading axis.

    >>> import numpy as np, numbax
    >>> numbax.lax.map(lambda row: row.sum(), np.arange(6.0).reshape(3, 2))
    array([1., 5., 9.])
    """
    _, ys = _scan(lambda carry, x: (carry, f(x)), (), xs, None, False, "map", "f")
    return ys


def _bound_dtype(lower, upper) -> np.dtype:
    for bound in (lower, upper):
        aval = _leaf_aval(bound, "fori_loop")
        if aval.shape != () or not dtypes.is_integer(aval.dtype):
            raise _error(f"fori_loop: bounds must be integer scalars, got {aval.str_short()}")
    return result_type(lower, upper)


__all__ = ["cond", "fori_loop", "map_rows", "scan", "switch", "while_loop"]
