"""The CUDA program as steps: kernels the device runs, updates their producers stored
already, and what the host runs (control flow, callbacks, library calls), in blocks.

``program.build_program`` makes them; the launcher runs them in order.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.core import Eqn, Jaxpr
from ...passes.manager import PassLog
from ...passes.memory import Liveness, LoopOwnership, MemoryPlan
from .. import source as escape
from . import loader
from .callbacks import NAMES as CALLBACK_NAMES
from .collectives import NAMES as COLLECTIVE_NAMES
from .linalg import NAMES as LINALG_NAMES
from .writer import KernelSource

CONTROL_FLOW = ("cond", "while", "scan")  # run by the host over blocks of their bodies
# Ops the host runs as steps of their own, between the kernels.
HOST_OPS = (*CALLBACK_NAMES, "sort", *LINALG_NAMES, "fft", *COLLECTIVE_NAMES)


@dataclass
class _EqnStep:
    eqn: Eqn  # its operands are its block's variables

    @property
    def inputs(self) -> list:
        return self.eqn.inputs

    @property
    def outputs(self) -> list:
        return self.eqn.outputs


@dataclass
class Step(_EqnStep):
    """One kernel of the program: its eqn, generated source, and ``number``, its
    position among all the program's kernels."""

    kernel: KernelSource
    number: int
    stored: frozenset = frozenset()  # outputs stored into their updates' windows


@dataclass
class StoredUpdate(_EqnStep):
    """An update in place whose value the kernel that made it stored into the window
    already: it launches nothing, and its output is its operand's buffer, handed on."""


@dataclass
class ControlStep(_EqnStep):
    """A ``cond``, ``while`` or ``scan`` eqn, run by the host: ``bodies`` are its
    sub-jaxprs' blocks, in ``control_bodies`` order. Or a callback into Python, which
    the host runs too, without bodies (``callbacks``)."""

    bodies: list[Block]
    ownership: LoopOwnership | None = None  # a loop's: the initial carries it copies


@dataclass
class LaidOutKernel(_EqnStep):
    """A kernel of a block being built, named: ``kernel`` is its source, or None while it
    waits for the block's window stores (a map kernel, which may store outputs into
    windows, and an update's window kernel, which may then launch nothing)."""

    name: str
    kernel: KernelSource | None
    can_store: bool = False  # a map kernel: the one generator that stores into windows


@dataclass
class Block:
    """A jaxpr as steps: the top level of the program, or a body of its control flow."""

    jaxpr: Jaxpr  # kernel and control eqns only, reshapes dropped
    out_avals: list  # the declared output types (an output may be a view of a buffer)
    steps: list[Step | ControlStep | StoredUpdate]
    liveness: Liveness  # of ``jaxpr``: which updates write in place
    plan: tuple  # ``plan_block``'s: (var -> buffer, buffers, update output -> operand)
    memory_plan: MemoryPlan  # the pass's plan of ``jaxpr``, which ``plan`` narrows


@dataclass
class CudaProgram:
    name: str
    block: Block  # the top level
    consts: list
    kernels: list[Step]  # every block's kernels, by number
    source: str  # the whole module
    # The pass log of the fused program, with the backend's rewrites (``cuda_launch``).
    pass_log: PassLog | None = None

    @property
    def jaxpr(self) -> Jaxpr:
        return self.block.jaxpr

    @property
    def steps(self) -> list[Step | ControlStep]:
        return self.block.steps

    @property
    def out_avals(self) -> list:
        return self.block.out_avals

    @property
    def module_name(self) -> str:
        """The name of the whole program's module (``source``), which ``ptx`` loads."""
        return loader.module_name(escape.identifier(self.name), self.source)

    @property
    def units(self) -> list[loader.Unit]:
        """The distinct kernels the program compiles, each a unit of its own keyed by what
        it computes (``loader.Unit``), in launch order: identical kernels are one."""
        return loader.program_units(self)
