"""Values of one element held as Numba scalars (local variables: registers), not arrays.

Every value the program computes whose type holds one element (rank 0, or every dim 1, as
the one-wide window ``f64[1]`` that ``x.at[j].set(v)`` updates) is a scalar local of the
generated function: a kernel making it binds ``e = ...`` where it would allocate
``np.empty(())`` and store into it, a loop carry of rank 0 is a scalar the loop reassigns,
and a kernel reading it reads the local. In a loop body of scalar recurrences (a
Gauss-Seidel point, an index wrapped and checked) that is the difference between a few
machine instructions and several allocations per iteration. The program's arguments stay
what the caller passed, arrays, and are read as ``a[()]``.

An op that needs an array gets one where it needs it (``materialize``): the program's
outputs, the operands of a contraction, and the operands of the opaque ops that have no
scalar form here. ``FORMS`` are the scalar forms of the opaque ops that scalars meet in
loops: a reshape, transpose or window with one element is that element, and an update of
one element is a scalar store into the operand.
"""

from __future__ import annotations

from collections.abc import Callable

from ...ir.core import Eqn, Literal
from ...ir.rules import RuleTable, any_primitive
from .loopnest import tuple_source
from .scalar import dtype_source

# The first of the operands an opaque emitter reads with ``scalar_of`` (the starts, a
# fill value): those pass as scalars, every other operand held as a scalar is
# materialized first.
SCALAR_OPERANDS = {"dynamic_slice": 1, "dynamic_update_slice": 2, "pad": 1}


def element_index(aval) -> str:
    """The index of an array's one element: ``()`` at rank 0, else ``0, 0, ...``."""
    return ", ".join("0" for _ in aval.shape) or "()"


def materialize(name: str, value: str, aval) -> list[str]:
    """Lines binding ``name`` to a new array of ``aval`` holding the scalar ``value``."""
    return [
        f"{name} = np.empty({tuple_source(aval.shape)}, {dtype_source(aval.dtype)})",
        f"{name}[{element_index(aval)}] = {value}",
    ]


# A scalar form: (program, eqn over program values) -> its lines, or None where the form
# does not apply (the opaque emitter writes the op, on materialized arrays). Optional:
# a primitive without one runs on materialized arrays.
Form = Callable[..., "list[str] | None"]
FORMS = RuleTable("cpu scalar forms", not_applicable=any_primitive)


def element_form(prim, index: Callable[..., str]) -> Form:
    """The scalar form of an op whose one-element result is one element of its first
    operand: the operand itself where it is a scalar, else the element at the index that
    ``index(program, eqn) -> index source`` writes (``FORMS.rule(..., build=element_form)``)."""

    def element(program, eqn: Eqn) -> list[str] | None:
        (out,) = eqn.outputs
        if not program.is_scalar(out):
            return None
        x = eqn.inputs[0]
        if program.is_scalar(x):
            return [f"{program.name(out)} = {program.scalar_of(x)}"]
        return [f"{program.name(out)} = {program.name(x)}[{index(program, eqn)}]"]

    return element


@FORMS.rule("reshape", "squeeze", "expand_dims", "transpose", build=element_form)
def _only_element(program, eqn: Eqn) -> str:
    """An op that moves no data: its one-element operand's element."""
    return element_index(eqn.inputs[0].aval)


@FORMS.rule("slice", build=element_form)
def _slice_start(program, eqn: Eqn) -> str:
    return ", ".join(map(str, eqn.params["start_indices"]))


@FORMS.rule("dynamic_slice", build=element_form)
def _clamped_starts(program, eqn: Eqn) -> str:
    """``x[i]`` with a traced ``i``: the element at the clamped starts, read once."""
    x, *starts = eqn.inputs
    shape = x.aval.shape
    return ", ".join(_clamped(program, s, n - 1) for s, n in zip(starts, shape, strict=True))


@FORMS.rule("dynamic_update_slice")
def _element_store(program, eqn: Eqn) -> list[str] | None:
    """An update of one element is a store of the scalar at the clamped starts, into the
    operand's own array when the memory plan proves it dies there, else into a copy."""
    operand, update, *starts = eqn.inputs
    (out,) = eqn.outputs
    if not program.is_scalar(update):
        return None
    name = program.name(out)
    if program.is_scalar(out):  # a one-element operand: the update replaces it
        return [f"{name} = {program.scalar_of(update)}"]
    shape = operand.aval.shape
    index = [_clamped(program, start, size - 1) for start, size in zip(starts, shape, strict=True)]
    array = program.name(operand)
    if program.in_place(out):
        first = f"{name} = {array}  # in place: the operand dies here"
    else:
        first = f"{name} = {array}.copy()"
    return [first, f"{name}[{', '.join(index)}] = {program.scalar_of(update)}"]


def _clamped(program, start, high: int) -> str:
    """A start clamped into ``[0, high]``, as the reference clamps a window into place."""
    if isinstance(start, Literal):
        return str(min(max(int(start.val), 0), high))
    if high == 0:
        return "0"
    return f"min(max({program.scalar_of(start)}, 0), {high})"
