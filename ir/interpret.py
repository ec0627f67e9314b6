"""The reference interpreter: runs a jaxpr with the primitives' NumPy implementations.

It is the oracle every pass and backend is tested against, so it does nothing clever.
``walk_jaxpr`` is the one environment-threading loop; the tracer's ``replay`` walks with
``bind`` instead of the NumPy implementations.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import Eqn, Jaxpr, Literal


def walk_jaxpr(jaxpr: Jaxpr, consts, args, apply: Callable[[Eqn, list], list]) -> list:
    """Evaluate ``jaxpr`` with ``apply(eqn, input_values) -> output_values`` per equation."""
    env: dict = {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[var] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[var] = value
    for eqn in jaxpr.eqns:
        outs = apply(eqn, [read(a) for a in eqn.inputs])
        for var, value in zip(eqn.outputs, outs, strict=True):
            env[var] = value
    return [read(v) for v in jaxpr.outvars]


def _apply_impl(eqn: Eqn, values: list) -> list:
    outs = eqn.prim.impl(*values, **eqn.params)
    # Pin every value to its recorded dtype: NumPy returns scalars for 0-d results and
    # may widen (e.g. sums of int32), the IR may not.
    return [np.asarray(v, dtype=var.aval.dtype) for v, var in zip(outs, eqn.outputs, strict=True)]


def eval_jaxpr(jaxpr: Jaxpr, consts, *args) -> list[np.ndarray]:
    return [np.asarray(v) for v in walk_jaxpr(jaxpr, consts, args, _apply_impl)]
