"""Memory planning: which buffer holds each intermediate of the fused program.

Liveness-based: going through the kernels in order, an output takes a free buffer of
its dtype and number of elements if there is one, and a new buffer otherwise; a
buffer becomes free once the last kernel reading its value has run (not during that
kernel: a kernel may read all its inputs after writing some outputs). The program's
inputs and outputs are never planned: they are the caller's arrays.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..ir.core import ClosedJaxpr, Jaxpr, ShapedArray, Var


@dataclass
class MemoryPlan:
    """``buffer_of[var]`` is an index into ``buffers``; each buffer is a flat array
    (``ShapedArray((n,), dtype)``), viewed with the shape of the value it holds."""

    buffer_of: dict[Var, int] = field(default_factory=dict)
    buffers: list[ShapedArray] = field(default_factory=list)
    total_intermediate_bytes: int = 0  # what one buffer per intermediate would take

    @property
    def num_buffers(self) -> int:
        return len(self.buffers)

    @property
    def peak_bytes(self) -> int:
        """Scratch memory the program needs: all its buffers, live at once or not."""
        return sum(b.nbytes for b in self.buffers)

    def __str__(self):
        return (
            f"{len(self.buffer_of)} intermediates in {self.num_buffers} buffers, "
            f"{self.peak_bytes} bytes (unplanned: {self.total_intermediate_bytes} bytes)"
        )


def plan_memory(program: Jaxpr | ClosedJaxpr) -> MemoryPlan:
    """The buffers of a fused program's intermediates.

    >>> import numpy as np, numbax
    >>> from numbax.passes import optimize
    >>> chain = lambda x: np.tanh(np.tanh(np.tanh(x @ x) @ x) @ x) @ x
    >>> fused, _ = optimize(numbax.make_jaxpr(chain)(np.ones((4, 4))))
    >>> plan = plan_memory(fused)  # the third intermediate reuses the first one's buffer
    >>> len(plan.buffer_of), plan.num_buffers, plan.peak_bytes
    (3, 2, 256)
    """
    jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
    outvars = {v for v in jaxpr.outvars if isinstance(v, Var)}
    last_read: dict[Var, int] = {}
    for index, eqn in enumerate(jaxpr.eqns):
        for atom in eqn.inputs:
            if isinstance(atom, Var):
                last_read[atom] = index
    plan = MemoryPlan()
    free: dict[tuple, list[int]] = defaultdict(list)
    freed_after: dict[int, list[int]] = defaultdict(list)
    for index, eqn in enumerate(jaxpr.eqns):
        for var in eqn.outputs:
            if var in outvars:
                continue
            key = (var.aval.dtype, var.aval.size)
            if free[key]:
                buffer = free[key].pop()
            else:
                buffer = len(plan.buffers)
                plan.buffers.append(ShapedArray((var.aval.size,), var.aval.dtype))
            plan.buffer_of[var] = buffer
            plan.total_intermediate_bytes += var.aval.nbytes
            freed_after[last_read.get(var, index)].append(buffer)
        for buffer in freed_after.pop(index, ()):
            aval = plan.buffers[buffer]
            free[(aval.dtype, aval.size)].append(buffer)
    return plan
