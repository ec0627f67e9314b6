"""Pointwise reads: whether a kernel body reads some of its values only at the point it
writes, on the way to one output.

Two proofs of the memory plan rest on it. A kernel may write an output over a value its
body makes (``Liveness.overwrite_refusal``: a contraction's epilogue over its product),
and it may store an output straight into the window of the update that takes it while
it reads the destination through that very window (``window_stores``). Both hold when
the body reads those values only through elementwise ops over the output's points, on
the way to that one output: each element is then read before the output overwrites it
and never after, in whatever order a loop visits the points and the outputs.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..ir.core import Eqn, Jaxpr, Var
from ..ir.primitive import Pattern
from .refusals import MemoryRefusal, Refused

# Ops that move no element when their result has the same dims but for 1s: they keep
# the iteration point (broadcast_dimensions are increasing).
UNIT_MOVES = ("reshape", "squeeze", "expand_dims", "broadcast_in_dim")


def pointwise_refusal(
    body: Jaxpr, read: Iterable[Var], result: Var, what: str, *, unit_moves: bool = False
) -> Refused | None:
    """Why ``body`` may read the values ``read`` (``what`` they are, for the reason) at
    other points than the ones it writes its output ``result`` at; None when it reads
    them only through elementwise ops of ``result``'s shape, and only on the way to it.

    With ``unit_moves``, also through ops that only add or drop unit dims, which keep
    each element where it was: the window-store proof admits them, where a row is read
    through a reshape (``y.at[i].set(y[i] * 2)``).
    """
    reached = set(read)
    for eqn in body.eqns:
        if not any(isinstance(a, Var) and a in reached for a in eqn.inputs):
            continue
        if not _keeps_points(eqn, result.aval.shape, unit_moves):
            return Refused(
                MemoryRefusal.NOT_POINTWISE,
                f"{eqn.prim.name} reads {what} at other points than the one written",
            )
        reached.update(eqn.outputs)
    if any(v in reached and v is not result for v in body.outvars):
        return Refused(MemoryRefusal.NOT_POINTWISE, f"another output of the kernel reads {what}")
    return None


def _keeps_points(eqn: Eqn, shape: tuple, unit_moves: bool) -> bool:
    """Whether each output of ``eqn`` at a point of ``shape`` reads its inputs there."""
    if unit_moves:
        moves = eqn.prim.pattern is Pattern.ELEMENTWISE or eqn.prim.name in UNIT_MOVES
        return moves and all(_live(v.aval.shape) == _live(shape) for v in eqn.outputs)
    return eqn.prim.pattern is Pattern.ELEMENTWISE and all(
        v.aval.shape == shape for v in eqn.outputs
    )


def _live(shape: tuple) -> list[int]:
    """The dims of ``shape`` that are not 1, in order: what a unit move keeps."""
    return [n for n in shape if n != 1]
