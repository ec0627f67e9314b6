"""Control flow as Python control flow: ``cond`` as ``if``/``elif``, ``while`` as a
``while`` loop, ``scan`` as a ``for`` loop, calls as their bodies, each body's kernels
written inline.

A body's inputs are plain names: a ``cond`` branch reads the operands, a loop body
reads carry variables that the loop reassigns (all at once, as a tuple, so a body that
swaps two carries swaps them). A value of one element is a scalar local throughout
(``scalar_values``): a rank-0 carry, a loop index, a branch's rank-0 result are Numba
scalars, never 0-d arrays. A carry of more elements shares its initial value's array,
unless the loop owns the carry and its memory may be written
(``passes.memory.loop_ownership``): then the initial value is copied once before the loop
where something else still reads it, and the body's updates of the carry write into it,
with no copy per iteration.

``WRITERS[prim](writer, eqn)`` writes a control-flow eqn; the program writer looks it up.
"""

from __future__ import annotations

import math

from ...ir.core import Eqn, Jaxpr
from ...ir.primitive import Pattern
from ...ir.rules import RuleTable
from .scalar import storage_dtype

# Every control-flow primitive but ``kernel``, which is fusion's unit of code, written by
# the writer of its kind (``program._ProgramWriter._kernel``), not as control flow.
WRITERS = RuleTable(
    "cpu control writers",
    not_applicable=lambda prim: prim.pattern is not Pattern.CONTROL or prim.name == "kernel",
)


def _bind(writer, jaxpr: Jaxpr, names) -> None:
    for var, name in zip(jaxpr.invars, names, strict=True):
        writer.names[var] = name


def _operand(writer, atom) -> str:
    """What a body reads for ``atom``: a scalar local for one element, else its array."""
    return writer.scalar_local(atom) if atom.aval.size == 1 else writer.array_of(atom)


def _value(writer, atom) -> str:
    """``atom`` as a result: a scalar expression for one element, else its array."""
    return writer.scalar_of(atom) if atom.aval.size == 1 else writer.array_of(atom)


def _results(writer, jaxpr: Jaxpr) -> list[str]:
    return [_value(writer, atom) for atom in jaxpr.outvars]


def _body(writer, jaxpr: Jaxpr, inputs, liveness=None) -> list[str]:
    """Write ``jaxpr``'s eqns reading ``inputs``; the names of its results."""
    _bind(writer, jaxpr, inputs)
    writer.write_eqns(jaxpr, liveness)
    return _results(writer, jaxpr)


def _ownership(writer):
    """The carries the loop being written owns (``passes.memory.loop_ownership``)."""
    liveness, index = writer.place
    return liveness.loops[index]


def _initial_carries(writer, operands, ownership) -> list[str]:
    """The carries' first values: a scalar for one element; an array of more, copied
    where the loop may write a memory still read elsewhere, else the operand's own."""
    values = []
    for k, atom in enumerate(operands):
        value = _value(writer, atom)
        copied = k in ownership.copied and atom.aval.size != 1
        values.append(f"{value}.copy()" if copied else value)
    return values


def _assign(writer, targets, values) -> None:
    """``targets = values``, all at once (a body may return its carries swapped)."""
    if targets:
        writer.emit(_assignment(targets, values))


def _assignment(targets, values) -> str:
    return f"{', '.join(targets)} = {', '.join(values)}"


@WRITERS.rule("jit_call", "checkpoint", "custom_vjp_call", "custom_jvp_call")
def write_call(writer, eqn: Eqn) -> None:
    """A call (``jit_call``, ``checkpoint``, a custom call's primal): its body inline.
    The results are bound to new names, so the body may be written again later."""
    writer.emit(f"# {writer.comment(eqn)}")
    results = _body(writer, eqn.params["jaxpr"], [_operand(writer, a) for a in eqn.inputs])
    _assign(writer, [writer.name(v) for v in eqn.outputs], results)


@WRITERS.rule("cond")
def write_cond(writer, eqn: Eqn) -> None:
    branches = eqn.params["branches"]
    index = writer.fresh("branch")
    operands = [_operand(writer, a) for a in eqn.inputs[1:]]
    outputs = [writer.name(v) for v in eqn.outputs]
    writer.emit(f"# {writer.comment(eqn)}")
    writer.emit(f"{index} = min(max({writer.scalar_of(eqn.inputs[0])}, 0), {len(branches) - 1})")
    for k, branch in enumerate(branches):
        if k == len(branches) - 1:
            writer.emit("else:" if k else "if True:")
        else:
            writer.emit(f"{'elif' if k else 'if'} {index} == {k}:")
        with _indented(writer):
            _assign(writer, outputs, _body(writer, branch, operands))
            writer.emit("pass")


@WRITERS.rule("while")
def write_while(writer, eqn: Eqn) -> None:
    p = eqn.params
    cond_consts = [_operand(writer, a) for a in eqn.inputs[: p["cond_nconsts"]]]
    split = p["cond_nconsts"] + p["body_nconsts"]
    body_consts = [_operand(writer, a) for a in eqn.inputs[p["cond_nconsts"] : split]]
    carries = [writer.fresh("carry") for _ in eqn.inputs[split:]]
    ownership = _ownership(writer)
    writer.emit(f"# {writer.comment(eqn)}")
    _assign(writer, carries, _initial_carries(writer, eqn.inputs[split:], ownership))
    writer.emit("while True:")
    with _indented(writer):
        (going,) = _body(writer, p["cond_jaxpr"], cond_consts + carries)
        writer.emit(f"if not {going}:", "    break")
        results = _body(writer, p["body_jaxpr"], body_consts + carries, ownership.body)
        _assign(writer, carries, results)
    _assign(writer, [writer.name(v) for v in eqn.outputs], carries)


@WRITERS.rule("scan")
def write_scan(writer, eqn: Eqn) -> None:
    p = eqn.params
    jaxpr, length = p["jaxpr"], p["length"]
    n_consts, n_carry = p["num_consts"], p["num_carry"]
    consts = [_operand(writer, a) for a in eqn.inputs[:n_consts]]
    carries = [writer.fresh("carry") for _ in range(n_carry)]
    xs = eqn.inputs[n_consts + n_carry :]
    ys = eqn.outputs[n_carry:]
    ownership = _ownership(writer)
    writer.emit(f"# {writer.comment(eqn)}")
    # Each line is recorded for the steps (``steps.py``): a scan of kernel calls is a
    # loop of steps, with no launcher code of its own.
    initial = eqn.inputs[n_consts : n_consts + n_carry]
    if carries:
        line = _assignment(carries, _initial_carries(writer, initial, ownership))
        writer.steps.carries(writer, line, carries, initial)
    for y in ys:  # one element (one step of one element): a scalar the step assigns
        if writer.is_scalar(y):
            writer.emit(f"{writer.name(y)} = {writer.constant(0, y.aval.dtype)}")
        else:
            name, nbytes = writer.name(y), y.aval.size * storage_dtype(y.aval.dtype).itemsize
            writer.steps.array(
                writer, name, writer.new_array(name, y.aval.shape, y.aval.dtype), nbytes
            )
    step = writer.fresh("step")
    order = f"range({length} - 1, -1, -1)" if p["reverse"] else f"range({length})"
    writer.steps.loop(writer, f"for {step} in {order}:", step, length, p["reverse"])
    with _indented(writer):
        slices = [_slice(writer, x, step) for x in xs]
        results = _body(writer, jaxpr, consts + carries + slices, ownership.body)
        # Store the ys before the carries move on: a y may be this step's incoming carry
        # (the backward pass of a scan reads exactly that).
        outvars = jaxpr.outvars
        for y, result, atom in zip(ys, results[n_carry:], outvars[n_carry:], strict=True):
            _store_row(writer, y, step, result, atom)
        if carries:
            line = _assignment(carries, results[:n_carry])
            writer.steps.update(writer, line, carries, outvars[:n_carry])
    outputs = [writer.name(v) for v in eqn.outputs[:n_carry]]
    if outputs:
        writer.steps.assign(writer, _assignment(outputs, carries), outputs, carries)


def _store_row(writer, y, step: str, result: str, atom) -> None:
    """``ys[step] = result`` (the value of the body's ``atom``) as a loop nest: LLVM
    vectorises it, where Numba's slice assignment copies element by element through a
    generic strided path. A row of one element is a scalar store."""
    ys, shape = writer.name(y), y.aval.shape[1:]
    if writer.is_scalar(y):
        writer.emit(f"{ys} = {result}")
        return
    if math.prod(shape) == 1:
        line = f"{ys}[{', '.join([step] + ['0'] * len(shape))}] = {result}"
        writer.steps.store(writer, [line], y, atom, step)
        return
    row = writer.fresh(f"{ys}_row")
    lines = [f"{row} = {ys}[{step}]"]
    indices = [writer.fresh("i") for _ in shape]
    for depth, (index, size) in enumerate(zip(indices, shape, strict=True)):
        lines.append(f"{'    ' * depth}for {index} in range({size}):")
    at = ", ".join(indices)
    lines.append(f"{'    ' * len(shape)}{row}[{at}] = {result}[{at}]")
    writer.steps.store(writer, lines, y, atom, step)


def _slice(writer, xs, step: str) -> str:
    """Row ``step`` of ``xs``: a view of the row, or the scalar of a row of one element."""
    if writer.is_scalar(xs):  # one step of one element
        return writer.name(xs)
    array = writer.name(xs)
    name = writer.fresh(f"{array}_row")
    if math.prod(xs.aval.shape[1:]) == 1:
        line = f"{name} = {array}[{', '.join([step] + ['0'] * (xs.aval.ndim - 1))}]"
    else:
        line = f"{name} = {array}[{step}]"
    writer.steps.row(writer, line, name, xs, step)
    return name


class _indented:
    def __init__(self, writer):
        self.writer = writer

    def __enter__(self):
        self.writer.indent += "    "

    def __exit__(self, *exc):
        self.writer.indent = self.writer.indent[:-4]
