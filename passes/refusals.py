"""Why fusion says no: the named reason behind every refusal to make one kernel.

XLA's fusion answers ``FusionDecision::Forbid("...")``; numbax's answers a ``Refusal``.
``kernels.decide`` returns one where equations form no kernel, and fusion
(``Partition.decide``) one where two kernels may not merge. Fusion counts, per reason,
the kernel boundaries of the program it built (a value one kernel writes and another
reads: a pair of kernels counted once), and the pass log shows the counts after
``refused:`` on the fusion line, so every array that goes through memory between two
kernels has its reason in the log::

    12 fusion   eqns 6 -> 2   0.7 ms  ...; refused: contraction_and_reduction=1
"""

from __future__ import annotations

import enum


class Refusal(enum.Enum):
    """A reason two sets of equations are not one kernel; ``why`` says it in words."""

    CONTROL_FLOW = "control_flow"
    OPAQUE = "opaque"
    VIEW_COPY = "view_copy"
    VIEW_OF_COMPUTED = "view_of_computed"
    VIEW_SHAPE = "view_shape"
    SHAPE = "shape"
    BROADCAST_OF_COMPUTED = "broadcast_of_computed"
    CONTRACTION_PROLOGUE = "contraction_prologue"
    TWO_CONTRACTIONS = "two_contractions"
    CONTRACTION_AND_REDUCTION = "contraction_and_reduction"
    REDUCTION_SPACES = "reduction_spaces"
    CYCLE = "cycle"
    NO_SAVING = "no_saving"
    MISSED = "missed"
    EMPTY = "empty"

    @property
    def why(self) -> str:
        return _WHY[self]

    def __str__(self) -> str:
        return self.value


_WHY = {
    Refusal.CONTROL_FLOW: "a cond, while or scan is an equation of its own (its bodies are "
    "fused apart)",
    Refusal.OPAQUE: "an op that fuses with nothing (several results, a gather, a sort, a "
    "reduction to a scalar, ...) is a kernel of its own",
    Refusal.VIEW_COPY: "a window that no kernel reads in place is copied out, one kernel per op",
    Refusal.VIEW_OF_COMPUTED: "a window, pad or concatenate reads memory in place, never a "
    "value computed in the same loop",
    Refusal.VIEW_SHAPE: "a view with none of the kernel's shapes may be read there by "
    "broadcasts and other views only",
    Refusal.SHAPE: "the values have two iteration spaces (different shapes)",
    Refusal.BROADCAST_OF_COMPUTED: "a broadcast would read a value computed in the same "
    "loop at other indices",
    Refusal.CONTRACTION_PROLOGUE: "a dot_general reads its operands from memory (no prologue)",
    Refusal.TWO_CONTRACTIONS: "one dot_general per kernel",
    Refusal.CONTRACTION_AND_REDUCTION: "a reduction needs a loop nest besides the product's",
    Refusal.REDUCTION_SPACES: "two reductions over different shapes or axes need two loop nests",
    Refusal.CYCLE: "a path joins the two through a third kernel, which would have to run "
    "both before and after the merged one",
    Refusal.NO_SAVING: "the kernels allow the merge, which saves no bytes (empty arrays)",
    Refusal.MISSED: "the kernels allow the merge, which saves bytes, but fusion never "
    "weighed it once it became legal (a pad or concatenate gathering its pieces after the "
    "greedy merging): a fusion to make",
    Refusal.EMPTY: "no equations make no kernel",
}


def counted(counts) -> dict[Refusal, int]:
    """The refusals among a pass's counts (``PassRecord.changes`` keys may be either)."""
    return {key: value for key, value in counts.items() if isinstance(key, Refusal)}
