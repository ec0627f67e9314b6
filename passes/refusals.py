"""Why a stage says no: the named reason behind every refusal, counted on the pass log.

XLA's fusion answers ``FusionDecision::Forbid("...")``; numbax's answers a ``Refusal``.
``kernels.decide`` returns one where equations form no kernel, and fusion
(``Partition.decide``) one where two kernels may not merge. Fusion counts, per reason,
the kernel boundaries of the program it built (a value one kernel writes and another
reads: a pair of kernels counted once), and the pass log shows the counts after
``refused:`` on the fusion line, so every array that goes through memory between two
kernels has its reason in the log::

    12 fusion   eqns 6 -> 2   0.7 ms  ...; refused: contraction_and_reduction=1

The memory plan's proofs answer a ``Refused`` (their words, with a ``MemoryRefusal``),
and the plan counts the reasons of each value it gives memory of its own
(``MemoryPlan.refusals``, on the log's ``memory_plan`` line). A backend names its own
reasons the same way (the cpu writer's ``WriterRefusal``, backends/cpu/unfusable.py) and
records them on the log as a pass of its own (``PassLog.add``). ``PassLog.refusals(name)``
counts any of them by reason.
"""

from __future__ import annotations

import enum


class Reason(enum.Enum):
    """A named reason for a refusal, of one stage (fusion's ``Refusal``, the memory plan's
    ``MemoryRefusal``, a backend's): a member is written ``NAME = "name", "why, in words"``,
    and a pass's counts keyed by any ``Reason`` are its refusals on the pass log."""

    def __new__(cls, value: str, why: str):
        member = object.__new__(cls)
        member._value_ = value
        member.why = why
        return member

    def __str__(self) -> str:
        return self.value


class Refusal(Reason):
    """A reason two sets of equations are not one kernel."""

    CONTROL_FLOW = (
        "control_flow",
        "a cond, while or scan is an equation of its own (its bodies are fused apart)",
    )
    OPAQUE = (
        "opaque",
        "an op that fuses with nothing (several results, a gather, a sort, a reduction to "
        "a scalar, ...) is a kernel of its own",
    )
    VIEW_COPY = (
        "view_copy",
        "a window that no kernel reads in place is copied out, one kernel per op",
    )
    VIEW_OF_COMPUTED = (
        "view_of_computed",
        "a window, pad or concatenate reads memory in place, never a value computed in the "
        "same loop",
    )
    VIEW_SHAPE = (
        "view_shape",
        "a view with none of the kernel's shapes may be read there by broadcasts and other "
        "views only",
    )
    SHAPE = "shape", "the values have two iteration spaces (different shapes)"
    BROADCAST_OF_COMPUTED = (
        "broadcast_of_computed",
        "a broadcast would read a value computed in the same loop at other indices",
    )
    CONTRACTION_PROLOGUE = (
        "contraction_prologue",
        "a dot_general reads its operands from memory (no prologue)",
    )
    TWO_CONTRACTIONS = "two_contractions", "one dot_general per kernel"
    CONTRACTION_AND_REDUCTION = (
        "contraction_and_reduction",
        "a reduction needs a loop nest besides the product's",
    )
    REDUCTION_SPACES = (
        "reduction_spaces",
        "two reductions over different shapes or axes need two loop nests",
    )
    CYCLE = (
        "cycle",
        "a path joins the two through a third kernel, which would have to run both before "
        "and after the merged one",
    )
    NO_SAVING = "no_saving", "the kernels allow the merge, which saves no bytes (empty arrays)"
    MISSED = (
        "missed",
        "the kernels allow the merge, which saves bytes, but fusion never weighed it once it "
        "became legal (a pad or concatenate gathering its pieces after the greedy merging): "
        "a fusion to make",
    )
    EMPTY = "empty", "no equations make no kernel"


class MemoryRefusal(Reason):
    """A reason the memory plan gives a value memory of its own: a buffer not reused, an
    update not written in place, a loop kernel's result not stored into the window of the
    update that takes it, a loop's carry copied before the loop."""

    CALLERS_MEMORY = (
        "callers_memory",
        "the memory is the caller's: an argument, a constant or a result of the program",
    )
    CONSTANT = "constant", "the operand is a literal, which has no memory to write"
    READ_LATER = "read_later", "an eqn reads the old value after the write would begin"
    READ_ELSEWHERE = (
        "read_elsewhere",
        "the memory is read through another operand (which may be a view of it), or by an "
        "eqn between the write and the eqn it stands for, as well",
    )
    NOT_MADE_YET = (
        "not_made_yet",
        "the value (or the window's operand or start) is made at or after the eqn that "
        "would write over it",
    )
    NOT_POINTWISE = (
        "not_pointwise",
        "the kernel reads the value at other points than it writes, or through another "
        "output, so an element could be read after it is overwritten",
    )
    SHAPE_OR_DTYPE = "shape_or_dtype", "the value and the output differ in shape or dtype"
    NOT_MADE_BY_THE_KERNEL = (
        "not_made_by_the_kernel",
        "the value is not an intermediate of the kernel that writes the output (a "
        "result, or made elsewhere), or the update is not made by an elementwise loop kernel",
    )
    RESHAPED = (
        "reshaped",
        "the update reads its operand or its value through a reshape of another shape",
    )
    NO_WINDOW = (
        "no_window",
        "the update writes no window a kernel could store into: a scatter, or a rank-0 "
        "update of the whole value",
    )
    NOT_IN_PLACE = (
        "not_in_place",
        "the update does not write in place, so its kernel has no window to store into",
    )


class Refused(str):
    """A refusal in words (what the memory plan's proofs answer: tests and messages read
    the text) carrying its named ``reason``; ``None`` is the answer where nothing refuses.

    >>> refused = Refused(MemoryRefusal.READ_LATER, "eqn 4 reads the operand after the update")
    >>> refused.reason, "eqn 4" in refused
    (<MemoryRefusal.READ_LATER: 'read_later'>, True)
    """

    reason: Reason

    def __new__(cls, reason: Reason, text: str):
        refused = super().__new__(cls, text)
        refused.reason = reason
        return refused

    def __reduce__(self):  # a copy or a pickle keeps the reason
        return Refused, (self.reason, str(self))


def counted(counts) -> dict[Reason, int]:
    """The refusals among a pass's counts (``PassRecord.changes`` keys may be either)."""
    return {key: value for key, value in counts.items() if isinstance(key, Reason)}
