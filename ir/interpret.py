"""The reference interpreter: runs a jaxpr with the primitives' NumPy implementations.

It is the oracle every pass and backend is tested against, so it does nothing clever.
"""

from __future__ import annotations

import numpy as np

from .core import Jaxpr, Literal


def eval_jaxpr(jaxpr: Jaxpr, consts, *args) -> list[np.ndarray]:
    env: dict = {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[var] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[var] = value
    for eqn in jaxpr.eqns:
        outs = eqn.prim.impl(*map(read, eqn.inputs), **eqn.params)
        for var, value in zip(eqn.outputs, outs, strict=True):
            # Pin every value to its recorded dtype: NumPy returns scalars for 0-d
            # results and may widen (e.g. sums of int32), the IR may not.
            env[var] = np.asarray(value, dtype=var.aval.dtype)
    return [np.asarray(read(v)) for v in jaxpr.outvars]
