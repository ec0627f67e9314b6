"""Window stores: a loop kernel stores its result straight into the window of the
update that takes it, so neither a temporary nor the update's copy remains.

``y = dynamic_update_slice(x, v, *starts)`` written in place (``Liveness.in_place``)
still copies ``v``, which a loop kernel made in an array of its own, into ``x``'s
window: a stencil sweep ``x.at[1:-1, 1:-1].set(f(src))`` writes a temporary as large as
the grid and reads it back, and a loop allocates that temporary on every iteration.
Where ``store_refusal`` finds no reason against it, the kernel stores each element of
``v`` at ``x[start + i]`` instead, and the update only hands ``x``'s memory on to ``y``.

The proof is about memory: from the kernel on, ``x``'s window holds new values, so
nothing may read the old ones there after the kernel's store. The update's in-place
proof covers what comes after the update; between the kernel and the update nothing
may read ``x``'s memory; and the kernel itself may read ``x`` only through the window
it writes and only pointwise on the way to ``v``: each element is then read before the
kernel overwrites it and never after, in whatever order its loops visit the points. A
Gauss-Seidel-like read of ``x`` at other points (``x[1:-1] = f(x[:-2], x[2:])``) is
refused, so it reads the old values from ``x`` and writes them through the temporary.
So is an update that reads its operand or its value through a reshape of another shape
(a backend that drops reshape kernels hands it their operands): a store indexes the
window by the shapes the update reads.

The fused program does not change: the decision is an analysis the memory plan makes
(``Liveness.window_stores``) and a backend may act on (the CPU backend does; one that
does not writes the temporary and the copy, which are still correct).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..ir.core import Atom, Eqn, Jaxpr, Literal, Var
from .pointwise import pointwise_refusal
from .refusals import MemoryRefusal, Refused

WINDOWS = ("slice", "dynamic_slice")


class ProgramFacts(Protocol):
    """What ``store_refusal`` reads of the program: the memory plan's ``Liveness``, which
    asks it while it is being built (so this module does not import the memory plan)."""

    eqns: list[Eqn]
    made_at: dict[Var, int]  # value -> the eqn that makes it
    last_read: dict[Var, int]  # value -> the last eqn that reads it
    callers: set[Var]  # the constants, inputs and results the caller owns

    def sharing(self, var: Var) -> list[Var]:
        """The values made so far that may share memory with ``var`` (itself included)."""
        ...


@dataclass(frozen=True)
class UpdateWindow:
    """A ``dynamic_update_slice``'s operands, as atoms of the program it is an eqn of."""

    operand: Atom
    update: Atom
    starts: tuple[Atom, ...]
    # The operand's and the update's shapes as the update reads them. A backend that
    # drops reshape kernels (CUDA: every buffer is flat) hands a kernel the reshapes'
    # operands, whose shapes then differ (``reshaped``).
    read_shapes: tuple[tuple[int, ...], tuple[int, ...]]

    @property
    def reshaped(self) -> bool:
        """Whether the operand or the update is read through a reshape of another shape."""
        return (self.operand.aval.shape, self.update.aval.shape) != self.read_shapes

    def static_start(self, dim: int) -> int | None:
        """Start ``dim`` clamped so the window fits (the IR's rule), when it is a literal."""
        start = self.starts[dim]
        if not isinstance(start, Literal):
            return None
        size, n = self.operand.aval.shape[dim], self.update.aval.shape[dim]
        return min(max(int(start.val), 0), size - n)


def update_window(eqn: Eqn) -> UpdateWindow | None:
    """The window a ``dynamic_update_slice`` eqn (alone, or as a kernel of that one op)
    writes, or None for any other eqn."""
    if eqn.prim.name == "dynamic_update_slice":
        shapes = (eqn.inputs[0].aval.shape, eqn.inputs[1].aval.shape)
        return UpdateWindow(eqn.inputs[0], eqn.inputs[1], tuple(eqn.inputs[2:]), shapes)
    if eqn.prim.name != "kernel" or len(eqn.params["jaxpr"].eqns) != 1:
        return None
    body = eqn.params["jaxpr"]
    (inner,) = body.eqns
    if inner.prim.name != "dynamic_update_slice" or body.outvars != inner.outputs:
        return None
    top = dict(zip(body.invars, eqn.inputs, strict=True))
    atoms = [top.get(a, a) if isinstance(a, Var) else a for a in inner.inputs]
    shapes = (inner.inputs[0].aval.shape, inner.inputs[1].aval.shape)
    return UpdateWindow(atoms[0], atoms[1], tuple(atoms[2:]), shapes)


def store_refusal(liveness: ProgramFacts, index: int) -> Refused | None:
    """Why the loop kernel that makes update eqn ``index``'s update may not store it
    straight into the operand's window; None when it may. Asked once the update is
    proven in place, while ``liveness`` knows the values made before it."""
    window = update_window(liveness.eqns[index])
    if window is None:
        return Refused(MemoryRefusal.NO_WINDOW, "the update is not a dynamic_update_slice")
    update = window.update
    if not window.starts:
        return Refused(MemoryRefusal.NO_WINDOW, "a rank-0 update replaces the whole value")
    if window.reshaped:
        return Refused(
            MemoryRefusal.RESHAPED, "the update reads its operand or its value through a reshape"
        )
    if not isinstance(update, Var) or update not in liveness.made_at:
        return Refused(
            MemoryRefusal.NOT_MADE_BY_THE_KERNEL, "the update is not computed by the program"
        )
    made = liveness.made_at[update]
    kernel = liveness.eqns[made]
    if kernel.prim.name != "kernel" or kernel.params["kind"] != "elementwise":
        return Refused(
            MemoryRefusal.NOT_MADE_BY_THE_KERNEL,
            "the update is not made by an elementwise loop kernel",
        )
    if update in liveness.callers or liveness.last_read.get(update) != index:
        return Refused(
            MemoryRefusal.READ_LATER,
            "the update is read after the update eqn, or is a result of the program",
        )
    if any(a is update for a in window.starts):
        return Refused(MemoryRefusal.READ_ELSEWHERE, "the update is also a start of the window")
    if liveness.made_at.get(window.operand, -1) >= made:
        return Refused(MemoryRefusal.NOT_MADE_YET, "the operand is made after the kernel begins")
    for start in window.starts:
        if isinstance(start, Var) and liveness.made_at.get(start, -1) >= made:
            return Refused(
                MemoryRefusal.NOT_MADE_YET,
                "a start of the window is computed after the kernel begins",
            )
    memory = set(liveness.sharing(window.operand))
    for between in range(made + 1, index):
        for atom in liveness.eqns[between].inputs:
            if atom is update:
                return Refused(
                    MemoryRefusal.READ_ELSEWHERE,
                    f"eqn {between} reads the update besides the update eqn",
                )
            if isinstance(atom, Var) and atom in memory:
                return Refused(
                    MemoryRefusal.READ_ELSEWHERE,
                    f"eqn {between} reads the operand's memory before the update",
                )
    return _kernel_refusal(kernel, update, window, memory)


def _kernel_refusal(kernel: Eqn, update: Var, window: UpdateWindow, memory: set) -> Refused | None:
    """Why ``kernel`` may not store ``update`` into ``window`` given what it reads of
    ``memory``, the memory the window is in."""
    body: Jaxpr = kernel.params["jaxpr"]
    result = body.outvars[kernel.outputs.index(update)]
    top = dict(zip(body.invars, kernel.inputs, strict=True))
    for invar, atom in top.items():
        if atom not in memory:
            continue
        if atom is not window.operand:
            return Refused(
                MemoryRefusal.READ_ELSEWHERE,
                "the kernel reads a value sharing the operand's memory",
            )
        refusal = _pointwise_refusal(body, invar, result, window, top)
        if refusal is not None:
            return refusal
    return None


def _pointwise_refusal(body: Jaxpr, operand: Var, result: Var, window, top) -> Refused | None:
    """Why ``body`` may read its input ``operand`` (the destination) at other points than
    the ones it stores ``result`` at: through anything but the window it writes, or from
    that window into anything but a pointwise walk to ``result`` (unit moves included:
    ``pointwise.pointwise_refusal``)."""
    windows = []
    for eqn in body.eqns:
        if not any(a is operand for a in eqn.inputs):
            continue
        if eqn.prim.name not in WINDOWS or eqn.inputs[0] is not operand:
            return Refused(
                MemoryRefusal.NOT_POINTWISE,
                f"the kernel reads the operand through {eqn.prim.name}, not a window",
            )
        if not _same_window(eqn, window, top):
            return Refused(
                MemoryRefusal.NOT_POINTWISE,
                "the kernel reads the operand through another window than it writes",
            )
        windows.append(eqn.outputs[0])
    return pointwise_refusal(body, windows, result, "the operand", unit_moves=True)


def _same_window(eqn: Eqn, window: UpdateWindow, top: dict) -> bool:
    """Whether window eqn ``eqn`` (of a kernel body whose inputs are ``top``'s keys) reads
    exactly the elements ``window`` writes."""
    if eqn.outputs[0].aval.shape != window.update.aval.shape:
        return False
    dims = range(len(window.starts))
    if eqn.prim.name == "slice":
        starts, strides = eqn.params["start_indices"], eqn.params["strides"]
        wanted = [window.static_start(d) for d in dims]
        return None not in wanted and list(starts) == wanted and set(strides) <= {1}
    for d, atom in zip(dims, eqn.inputs[1:], strict=True):
        if isinstance(atom, Literal):
            size = eqn.inputs[0].aval.shape[d]
            here = min(max(int(atom.val), 0), size - window.update.aval.shape[d])
            if here != window.static_start(d):
                return False
        elif top.get(atom) is not window.starts[d]:
            return False
    return True
