"""``Unfusable``: the refusal of the cpu backend's kernel writers, raised where a kernel's
body is outside what one loop nest can write (``kernels``, ``index_maps``,
``reductions``, ``kind_writers``); the program writer then writes its eqns one by one.

Each refusal names its reason (a ``WriterRefusal``, the pass log's kind of reason,
passes/refusals.py); the program writer counts them, and the backend records the counts
on the pass log as the pass ``cpu_write`` (``GeneratedProgram.refusals``). Fusion's
contract is the writer's, so a program fusion made should show none: each one counted is
a kernel fusion accepted and the writer split, a difference between the two to remove.
"""

from __future__ import annotations

from ...passes.refusals import Reason


class WriterRefusal(Reason):
    """Why the cpu writer splits a kernel into its eqns."""

    RESHAPE_MOVES_DATA = (
        "reshape_moves_data",
        "a reshape that moves elements (not only size-1 dims) inside a loop kernel",
    )
    NOT_A_LOOP_OP = "not_a_loop_op", "an op that is no per-element statement inside a loop kernel"
    VIEW_OF_COMPUTED = (
        "view_of_computed",
        "a window, pad or concatenate of a value the kernel computes (they read memory)",
    )
    REDUCTION_SPACES = (
        "reduction_spaces",
        "reductions over different shapes or axes in one loop nest",
    )
    REDUCTION_READ_BACK = (
        "reduction_read_back",
        "a reduction's result read at other dims than it was reduced to",
    )
    OUTPUT_SHAPES = "output_shapes", "outputs of different shapes in an elementwise kernel"
    REDUCTION_OUTPUT = (
        "reduction_output",
        "an output of a reduction kernel with neither the reduced nor the full shape",
    )
    CONTRACTION_BODY = (
        "contraction_body",
        "a contraction kernel holds one dot_general of kernel inputs (no prologue)",
    )


class Unfusable(Exception):
    """The kernel's body is outside the contract, for ``reason``; ``str()`` is the detail.
    The caller emits its eqns one by one."""

    def __init__(self, reason: WriterRefusal, detail: str):
        super().__init__(detail)
        self.reason = reason
