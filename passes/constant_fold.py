"""Constant folding: an equation whose inputs are all known (literals, or constvars
with concrete values) is evaluated now, with the primitives' reference implementations
(the same NumPy code the interpreter runs, so folding cannot change a result).

A scalar result becomes a ``Literal``; an array result becomes a new constvar. An
equation whose result is bigger than its inputs is not folded (a broadcast of a scalar
stays a broadcast, ``iota`` stays ``iota``): storing the array would cost more memory
traffic than recomputing it inside a fused kernel. For the same reason a constvar whose
elements are all equal (``np.ones(n)`` closed over) becomes a broadcast of a literal,
and a scalar constvar a literal.
Inside sub-jaxprs (closure-converted, so without constvars) only scalars are folded.
An equation with side effects (a print of constants) is never folded: it must run when
the program does, not once while it compiles.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ..ir.primitive import PRIMITIVES, Pattern, has_side_effects
from .rewrite import Rebuilder, is_concrete, map_subjaxprs

BROADCAST = PRIMITIVES["broadcast_in_dim"]


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    out = Rebuilder()
    known: dict[Var, np.ndarray] = {}
    constvars, consts = [], []
    for var, value in zip(closed.jaxpr.constvars, closed.consts, strict=True):
        if is_concrete(value) and np.ndim(value) == 0:
            out.alias(var, Literal(value, var.aval.dtype))
            counts["scalar_consts_inlined"] += 1
            continue
        if is_concrete(value) and _uniform(value):
            splat = Literal(np.asarray(value).reshape(-1)[0], var.aval.dtype)
            out.alias(
                var, out.emit1(BROADCAST, [splat], shape=var.aval.shape, broadcast_dimensions=())
            )
            counts["uniform_consts_broadcast"] += 1
            continue
        if is_concrete(value):
            known[var] = np.asarray(value)
        constvars.append(var)
        consts.append(value)
    new_arrays: list = []
    _fold_into(out, closed.jaxpr, known, counts, new_arrays)
    constvars += [var for var, _ in new_arrays]
    consts += [value for _, value in new_arrays]
    return ClosedJaxpr(out.finish(closed.jaxpr, constvars), consts), counts


def fold_scalars(jaxpr: Jaxpr, counts: Counter) -> Jaxpr:
    out = Rebuilder()
    _fold_into(out, jaxpr, {}, counts, None)
    return out.finish(jaxpr)


def _fold_into(out: Rebuilder, jaxpr: Jaxpr, known: dict, counts: Counter, new_arrays) -> None:
    """Fold ``jaxpr``'s equations into ``out``; array results go to ``new_arrays`` as
    ``(constvar, value)``, or are not folded at all when ``new_arrays`` is None."""
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        values = _known_inputs(eqn, known)
        if values is None or not _worth_folding(eqn, new_arrays is not None):
            out.add(map_subjaxprs(eqn, lambda sub: fold_scalars(sub, counts)))
            continue
        try:
            results = eqn.prim.impl(*values, **eqn.params)
        except Exception:  # noqa: BLE001 - it may sit in a branch never taken; run it then
            out.add(eqn)
            continue
        counts["folded"] += 1
        for var, value in zip(eqn.outputs, results, strict=True):
            value = np.asarray(value, dtype=var.aval.dtype)
            if value.shape == ():
                out.alias(var, Literal(value, var.aval.dtype))
            else:
                known[var] = value
                new_arrays.append((var, value))


def _uniform(value) -> bool:
    """Whether every element has the same bits (so -0.0 and 0.0 differ, NaNs agree)."""
    flat = np.ascontiguousarray(value).reshape(-1)
    if flat.size == 0:
        return False
    as_bytes = flat.view(np.uint8).reshape(flat.size, -1)
    return bool((as_bytes == as_bytes[0]).all())


def _known_inputs(eqn: Eqn, known: dict) -> list | None:
    values = []
    for atom in eqn.inputs:
        if isinstance(atom, Literal):
            values.append(atom.val)
        elif atom in known:
            values.append(known[atom])
        else:
            return None
    return values


def _worth_folding(eqn: Eqn, arrays_allowed: bool) -> bool:
    if eqn.prim.pattern is Pattern.CONTROL or has_side_effects(eqn):
        return False
    out_sizes = [v.aval.size for v in eqn.outputs]
    if not arrays_allowed and any(v.aval.shape != () for v in eqn.outputs):
        return False
    in_size = sum(a.aval.size for a in eqn.inputs)
    return all(size <= max(1, in_size) for size in out_sizes)
