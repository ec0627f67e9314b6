"""Programs of one hand-made ``kernel`` eqn that no fusion makes and no backend writes as
one kernel: what ``passes.kernels.split_into_ops`` takes apart (tests/passes and
tests/backends)."""

from __future__ import annotations

import numpy as np

from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var
from numbax.ir.higher_order import kernel_p
from numbax.ir.primitive import PRIMITIVES

SQUARE = ShapedArray((3, 3), np.dtype("float32"))


def across_rows(outvars_of) -> ClosedJaxpr:
    """A program of one reduction kernel ``x * x.sum(1)`` broadcast across the rows (an
    epilogue reading other rows' sums), whose results are ``outvars_of(x, out)`` of its
    body: a value it makes, its input, a value twice, a literal."""
    x, sums, across, out = Var(SQUARE), Var(SQUARE.update(shape=(3,))), Var(SQUARE), Var(SQUARE)
    broadcast = {"shape": (3, 3), "broadcast_dimensions": (1,)}
    eqns = [
        Eqn(PRIMITIVES["reduce_sum"], [x], [sums], {"axes": (1,)}),
        Eqn(PRIMITIVES["broadcast_in_dim"], [sums], [across], broadcast),
        Eqn(PRIMITIVES["mul"], [x, across], [out], {}),
    ]
    body = Jaxpr([], [x], eqns, outvars_of(x, out))
    outer_x, outputs = Var(SQUARE), [Var(v.aval) for v in body.outvars]
    params = {"jaxpr": body, "kind": "reduction", "name": "across_rows"}
    kernel = Eqn(kernel_p, [outer_x], outputs, params, "user.py:7")
    return ClosedJaxpr(Jaxpr([], [outer_x], [kernel], outputs), [])
