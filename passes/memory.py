"""Memory planning: which buffer holds each intermediate of the fused program.

Liveness-based: going through the kernels in order, an output takes a buffer of its
dtype and number of elements whose value nothing reads any more, and a new buffer
otherwise. The program's inputs and outputs are never planned: they are the caller's
arrays.

``Liveness.overwrite_refusal`` is the one proof behind every buffer a value takes over
from another, here and in the backends (a contraction's epilogue written over its
product): it says why the write could be followed by a read of the old value, or
nothing when no read can follow.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var
from ..ir.primitive import Pattern


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


class Liveness:
    """Where each value of a program is made and where it is last read."""

    def __init__(self, program: Jaxpr | ClosedJaxpr):
        jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
        self.eqns = jaxpr.eqns
        self.made_at = {var: index for index, eqn in enumerate(jaxpr.eqns) for var in eqn.outputs}
        self.last_read: dict[Var, int] = {}
        for index, eqn in enumerate(jaxpr.eqns):
            for atom in eqn.inputs:
                if isinstance(atom, Var):
                    self.last_read[atom] = index
        results = [v for v in jaxpr.outvars if isinstance(v, Var)]
        self.callers = {*jaxpr.constvars, *jaxpr.invars, *results}

    def overwrite_refusal(self, index: int, output: Var, value: Var) -> str | None:
        """Why eqn ``index`` may not write its ``output`` into the buffer holding
        ``value``; None when nothing can read ``value`` once that write has begun.

        ``value`` is a value of the program (a buffer reused once its last reader has
        run), or one the eqn's kernel body makes and reads (a contraction's product,
        which its epilogue may overwrite element by element).
        """
        if value in self.callers:
            return "the value is the caller's array, an input or a result of the program"
        made = self.made_at.get(value)
        if made is None:
            return _pointwise_refusal(self.eqns[index], output, value)
        if made >= index:
            return f"the value is made by eqn {made}, not before eqn {index}"
        last = self.last_read.get(value, made)
        if last > index:
            return f"eqn {last} reads the value after eqn {index} writes"
        if last == index:
            # A kernel's operand may be a view of another array (a reshape, a branch
            # that returns its operand): only its own values are proven pointwise.
            return f"eqn {index} reads the value as an operand, which may be a view"
        return None


def _pointwise_refusal(eqn: Eqn, output: Var, value: Var) -> str | None:
    """Why ``eqn``'s kernel may not write ``output`` over ``value``, a value its body makes.

    It may when the body reads ``value`` only on the way to that one output and only at
    the point being written (elementwise ops of ``value``'s shape): each element is then
    read before the output overwrites it and never after, in whatever order a loop
    visits the points and the outputs.
    """
    body = eqn.params.get("jaxpr") if eqn.prim.name == "kernel" else None
    if body is None or output not in eqn.outputs:
        return "the value is not made by the kernel that writes the output"
    made = {var for inner in body.eqns for var in inner.outputs}
    if value not in made:
        return "the value is not made by the kernel that writes the output"
    result = body.outvars[eqn.outputs.index(output)]
    if value in body.outvars:
        return "the value is itself a result of the kernel"
    if (value.aval.shape, value.aval.dtype) != (result.aval.shape, result.aval.dtype):
        return "the value and the output differ in shape or dtype"
    reached = {value}
    for inner in body.eqns:
        if not any(isinstance(a, Var) and a in reached for a in inner.inputs):
            continue
        pointwise = inner.prim.pattern is Pattern.ELEMENTWISE and all(
            v.aval.shape == value.aval.shape for v in inner.outputs
        )
        if not pointwise:
            return f"{inner.prim.name} reads the value at other points than the one written"
        reached.update(inner.outputs)
    if any(v in reached and v is not result for v in body.outvars):
        return "another output of the kernel reads the value"
    return None


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
    liveness = Liveness(program)
    plan = MemoryPlan()
    held: list[Var] = []  # buffer -> the value it holds last
    spare: dict[tuple, list[int]] = defaultdict(list)  # (dtype, size) -> buffers
    released_after: dict[int, list[int]] = defaultdict(list)  # eqn -> buffers free after it
    for index, eqn in enumerate(liveness.eqns):
        for var in eqn.outputs:
            if var in liveness.callers:
                continue
            candidates = spare[(var.aval.dtype, var.aval.size)]
            if candidates and liveness.overwrite_refusal(index, var, held[candidates[-1]]) is None:
                buffer = candidates.pop()
                held[buffer] = var
            else:
                buffer = len(plan.buffers)
                plan.buffers.append(ShapedArray((var.aval.size,), var.aval.dtype))
                held.append(var)
            plan.buffer_of[var] = buffer
            plan.total_intermediate_bytes += var.aval.nbytes
            released_after[liveness.last_read.get(var, index)].append(buffer)
        for buffer in released_after.pop(index, ()):
            spare[(held[buffer].aval.dtype, held[buffer].aval.size)].append(buffer)
    return plan
