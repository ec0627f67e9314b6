"""The derivative oracle: central finite differences in float64.

``check_derivatives(fn, args, rng)`` differentiates ``fn`` with respect to its float
arguments in forward mode (``numbax.jvp``) and reverse mode (``numbax.vjp``) and
compares both with the Jacobian built column by column from central differences,
typechecking the transformed jaxprs on the way.
"""

from __future__ import annotations

import numpy as np

import numbax
from numbax.ir import typecheck
from numbax.tracer.closure import closure_convert
from numbax.transforms.jvp import jvp_jaxpr
from numbax.transforms.vjp import vjp_split

RTOL = 1e-6


def relative_error(actual, expected) -> float:
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.size == 0:
        return 0.0
    return float(np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), 1.0))


def _float_leaves(tree):
    leaves = numbax.tree_leaves(tree)
    return [np.asarray(x, np.float64) for x in leaves if np.asarray(x).dtype.kind == "f"]


def finite_difference_jacobian(fn, args, wrt, step):
    """J[o][i]: d(float output o)/d(arg i), shape out.shape + arg.shape."""
    outs = _float_leaves(fn(*args))
    jac = [[np.zeros(o.shape + args[i].shape) for i in wrt] for o in outs]
    for k, i in enumerate(wrt):
        for index in np.ndindex(args[i].shape):
            shifted = []
            for sign in (1, -1):
                moved = list(args)
                moved[i] = args[i].copy()
                moved[i][index] += sign * step
                shifted.append(_float_leaves(fn(*moved)))
            for o, (up, down) in enumerate(zip(*shifted, strict=True)):
                jac[o][k][(...,) + index] = (up - down) / (2 * step)
    return jac


def check_derivatives(fn, args, rng, step=1e-5, rtol=RTOL, reverse=True, reference=None):
    """jvp and (unless ``reverse`` is False) vjp of ``fn`` at ``args`` against finite
    differences of ``reference`` (default ``fn``: it must then run on NumPy arrays)."""
    args = [np.asarray(a) for a in args]
    wrt = [i for i, a in enumerate(args) if a.dtype.kind == "f"]
    jac = finite_difference_jacobian(reference or fn, args, wrt, step)
    _check_typed_programs(fn, args, wrt, reverse)

    # Forward mode: J @ t for a random tangent of every float argument.
    tangents = [
        rng.standard_normal(a.shape).astype(a.dtype) if a.dtype.kind == "f" else np.zeros_like(a)
        for a in args
    ]
    _, tangent_out = numbax.jvp(fn, tuple(args), tuple(tangents))
    for o, got in enumerate(_float_leaves(tangent_out)):
        expected = sum(
            np.tensordot(jac[o][k], tangents[i], axes=tangents[i].ndim) for k, i in enumerate(wrt)
        )
        assert relative_error(got, expected) < rtol, f"jvp output {o}: {got} != {expected}"

    if not reverse:
        return
    # Reverse mode: ct @ J for a random cotangent of every output.
    out, vjp_fn = numbax.vjp(fn, *args)
    leaves, tree = numbax.tree_flatten(out)
    cts = [
        rng.standard_normal(np.shape(x)).astype(np.asarray(x).dtype)
        if np.asarray(x).dtype.kind == "f"
        else np.zeros_like(x)
        for x in leaves
    ]
    in_cts = vjp_fn(numbax.tree_unflatten(tree, cts))
    float_cts = [c for c in cts if c.dtype.kind == "f"]
    for k, i in enumerate(wrt):
        expected = sum(np.tensordot(ct, jac[o][k], axes=ct.ndim) for o, ct in enumerate(float_cts))
        got = in_cts[i]
        assert got.shape == args[i].shape and got.dtype == args[i].dtype
        assert relative_error(got, expected) < rtol, f"vjp argument {i}: {got} != {expected}"


def _check_typed_programs(fn, args, wrt, reverse):
    """The transformed jaxprs typecheck (and can be transformed again)."""
    jaxpr, consts = closure_convert(numbax.make_jaxpr(fn)(*args))
    mask = (False,) * len(consts) + tuple(i in wrt for i in range(len(args)))
    typecheck(jvp_jaxpr(jaxpr, mask)[0])
    if not reverse:
        return
    split = vjp_split(jaxpr, mask)
    typecheck(split.forward)
    typecheck(split.backward)
