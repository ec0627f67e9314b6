"""A program of kernel calls as a list of steps, run by one machine compiled once.

A program that is only kernels written as units (``units``) and views of their arrays
needs no code of its own: its launcher would allocate the memory plan's buffers, call
each kernel by address with pointers into them, and return the outputs, and Numba typing
and LLVM compiling that straight-line function cost 5-13 s for a two-layer transformer's
training step (92 calls), more than all its kernels. Here such a program is a list of
steps (``Recorder``: int64 codes) that a machine runs (``step_machine``: a
``numba.cfunc`` compiled once per installation and kept in Numba's disk cache); the
launcher that remains allocates the outputs and one arena for every other buffer, hands
the machine the pointers, and
returns the outputs: a few lines whatever the program's size.

The program writer records, as it writes the launcher's lines, what each top-level line
does (``Recorder.array``, ``alias``, ``call``); a program with any other line (a loop
nest written inline, control flow, a callback) keeps its compiled launcher. The
launcher's lines stay in the module's source as comments: what the steps do, readable.

A step's operand is a pointer, as two codes: where (-1: the arena; else an entry of the
launcher's tuple of arrays: the program's arguments, then its output arrays) and a byte
offset from there. The codes: ``[length, table offset, steps...]``, each step one of
``CALL kernel n operands...`` (the kernel's pointer table is written into the arena at
the table offset, then the kernel at ``addresses[kernel]`` called with it: the calling
convention of every unit), ``SET operand nbytes bits`` (a literal argument's value),
``COPY destination source nbytes`` (an output the program's arguments hold).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir.core import Literal
from .loopnest import tuple_source
from .scalar import storage_dtype

CALL, SET, COPY = 0, 1, 2  # the machine's operations (``step_machine``)
ALIGNMENT = 64  # bytes: each arena buffer starts on a cache line
MACHINE_MODULE = "numbax.backends.cpu.step_machine"


@dataclass(frozen=True)
class _Array:
    name: str
    nbytes: int


@dataclass(frozen=True)
class _Alias:
    name: str
    of: str
    offset: int = 0  # bytes into ``of``'s memory


@dataclass(frozen=True)
class _Call:
    index: int  # the kernel's index among the program's units
    operands: tuple  # names, or Literals (set into the arena once, ``SET``)
    returned: str | None = None  # the local a returned scalar is bound to
    returned_nbytes: int = 0


_NOTHING = object()  # a recorded line that does nothing the steps need (advice)


@dataclass
class Recorder:
    """What each top-level line of the launcher does, by line index: a new array, a name
    for another name's memory, a kernel call, or nothing the steps need. A line whose
    index now holds other text (the writer deleted lines and wrote others) records
    nothing."""

    events: dict[int, tuple[str, object]] = field(default_factory=dict)

    def emit(self, writer, lines: list[str], event) -> None:
        """Emit ``lines`` into ``writer``: the first does ``event``, the rest nothing."""
        for k, line in enumerate(lines):
            self.events[len(writer.lines)] = (writer.indent + line, event if k == 0 else _NOTHING)
            writer.emit(line)

    def array(self, writer, name: str, lines: list[str], nbytes: int) -> None:
        self.emit(writer, lines, _Array(name, nbytes))

    def alias(self, writer, name: str, of: str, line: str | None = None, offset: int = 0):
        """Emit a line binding ``name`` to the memory of ``of``, ``offset`` bytes in (a
        view)."""
        self.emit(writer, [line or f"{name} = {of}"], _Alias(name, of, offset))

    def call(self, writer, line: str, index: int, operands: list, returned) -> None:
        names = tuple(a if isinstance(a, Literal) else writer.name(a) for a in operands)
        event = _Call(index, names)
        if returned is not None:
            nbytes = np.dtype(storage_dtype(returned.aval.dtype)).itemsize
            event = _Call(index, names, writer.name(returned), nbytes)
        self.emit(writer, [line], event)


def write_launcher(writer, arguments: list[str], end: int):
    """The launcher's lines running ``writer``'s program as steps (its lines before
    ``end``, where its results begin, each a recorded top-level step), with the step
    codes as a module constant; None where a line is no step or an output is no array
    the steps can hand back."""
    from ...config import config

    if not writer.units or not config.steps:
        return None
    events = []
    for index, line in enumerate(writer.lines[:end]):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        entry = writer.steps.events.get(index)
        if entry is None or entry[0] != line or line != line.lstrip():
            return None
        if entry[1] is not _NOTHING:
            events.append(entry[1])
    try:
        return _Layout(writer, arguments, events).launcher()
    except _NotSteps:
        return None


class _NotSteps(Exception):
    """The program is not kernel calls on arrays alone."""


class _Layout:
    """Where each name's memory is: an argument, an output array or the arena."""

    def __init__(self, writer, arguments: list[str], events: list):
        self.writer = writer
        self.arguments = arguments  # the program's, without the kernels' addresses
        self.root = {name: (name, 0) for name in self.arguments}  # name -> (root, offset)
        self.nbytes: dict[str, int] = {}  # root -> bytes, for the roots the steps make
        self.calls: list[_Call] = []
        for event in events:
            if isinstance(event, _Array):
                self.root[event.name] = (event.name, 0)
                self.nbytes[event.name] = event.nbytes
            elif isinstance(event, _Alias):
                if event.of not in self.root:
                    raise _NotSteps
                root, offset = self.root[event.of]
                self.root[event.name] = (root, offset + event.offset)
            else:
                for operand in event.operands:
                    if not isinstance(operand, Literal) and operand not in self.root:
                        raise _NotSteps
                if event.returned is not None:
                    self.root[event.returned] = (event.returned, 0)
                    self.nbytes[event.returned] = event.returned_nbytes
                self.calls.append(event)

    def launcher(self):
        writer = self.writer
        pooled = {writer.poolable[v] for v in writer.pooled}
        lines, results, outputs, copies = [], [], {}, []
        for atom in writer.jaxpr.outvars:
            if isinstance(atom, Literal) or atom not in writer.names:
                raise _NotSteps
            aval, (root, offset) = atom.aval, self.root.get(writer.names[atom], (None, 0))
            if root is None:
                raise _NotSteps
            nbytes = aval.size * np.dtype(storage_dtype(aval.dtype)).itemsize
            if root in pooled:
                results.append(root)
                continue
            if outputs.get(root, (None, None))[1] == aval.shape and not offset:
                results.append(outputs[root][0])  # the same value again
                continue
            name = writer.fresh("output")
            lines += writer.new_array(name, aval.shape, storage_dtype(aval.dtype))
            if root in self.nbytes and root not in outputs and not offset:
                if self.nbytes[root] != nbytes:
                    raise _NotSteps
                outputs[root] = (name, aval.shape)  # the steps write it into the output
            else:  # a view of an argument, a buffer or an output: copied into the output
                copies.append((name, root, offset, nbytes))
            results.append(name)
        entries = self.arguments + [name for name, _ in outputs.values()]
        entries += [name for name, *_ in copies]
        # Where each root's memory starts: (-1, an offset into the arena) or (an entry of
        # the launcher's tuple of arrays, 0).
        place = {name: (k, 0) for k, name in enumerate(entries)}
        for root, (name, _) in outputs.items():
            place[root] = place[name]
        offset = 0
        for root, nbytes in self.nbytes.items():
            if root not in place:
                place[root] = (-1, offset)
                offset += -(-nbytes // ALIGNMENT) * ALIGNMENT
        codes, literals = [], {}
        for call in self.calls:
            operands = []
            for operand in call.operands + ((call.returned,) if call.returned else ()):
                if isinstance(operand, Literal):
                    value = np.asarray(operand.val, storage_dtype(operand.aval.dtype))
                    key = (value.dtype.str, value.tobytes())
                    if key not in literals:
                        literals[key] = (-1, offset)
                        bits = int.from_bytes(
                            value.tobytes().ljust(8, b"\0"), "little", signed=True
                        )
                        codes[:0] = [SET, -1, offset, value.nbytes, bits]
                        offset += ALIGNMENT
                    operands += literals[key]
                else:
                    root, at = self.root[operand]
                    source, start = place[root]
                    operands += [source, start + at]
            codes += [CALL, call.index, len(operands) // 2, *operands]
        for name, root, at, nbytes in copies:
            source, start = place[root]
            codes += [COPY, *place[name], source, start + at, nbytes]
        longest = max(len(c.operands) + 1 for c in self.calls)
        table = offset
        codes = [len(codes) + 2, table, *codes]
        arena = writer.fresh("arena")
        lines += writer.new_array(arena, (table + 8 * longest,), np.uint8)
        machine = len(writer.units)  # its address follows the kernels' (``addresses``)
        run = writer.function(MACHINE_MODULE, "run")
        tuple_ = tuple_source(entries)
        lines.append(
            f"{run}(kernel_addresses[{machine}], kernel_addresses, STEPS, {tuple_}, {arena})"
        )
        lines.append(f"return {tuple_source(results)}")
        steps = f"np.array({codes!r}, dtype=np.int64)"
        return lines, steps
