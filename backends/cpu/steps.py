"""A program of kernel calls as a list of steps, run by one machine compiled once.

A program that is only kernels written as units (``units``) and views of their arrays
needs no code of its own: its launcher would allocate the memory plan's buffers, call
each kernel by address with pointers into them, and return the outputs, and Numba typing
and LLVM compiling that straight-line function cost 5-13 s for a two-layer transformer's
training step (92 calls), more than all its kernels. Here such a program is a list of
steps (``Recorder``: int64 codes) that a machine runs (``step_machine``: a
``numba.cfunc`` compiled once per installation and kept in Numba's disk cache); what
its launcher does (allocate the outputs and one arena for every other buffer, hand the
machine the pointers, return the outputs) is a ``Plan`` that ``step_machine.StepLauncher``
carries out with no code of the program's own to compile.

The program writer records, as it writes the launcher's lines, what each line does
(``Recorder.array``, ``alias``, ``call``; for a ``scan``, ``carries``, ``loop``, ``row``,
``store``, ``update``, ``assign``); a program with any other line (a loop nest written
inline, a ``while`` or ``cond``, a callback, a scalar computed inline) keeps its compiled
launcher. The launcher's lines stay in the module's source as comments: what the steps
do, readable. A loop's body is the lines indented under its ``for``.

A step's operand is a pointer, as two codes: where and a byte offset from there. Where
is -1 for the arena, k >= 0 for entry k of the launcher's tuple of arrays (the program's
arguments, then its output arrays), and -2 - s for the pointer stored in the arena at
byte s (a row of a scan's xs or ys, which moves with the loop). The codes: ``[length,
table offset, steps...]``, each step one of

- ``CALL kernel n operands...``: the kernel's pointer table is written into the arena
  at the table offset, then the kernel at ``addresses[kernel]`` called with it (the
  calling convention of every unit);
- ``SET operand nbytes bits``: a literal's value (a literal argument, a carry's start);
- ``COPY destination source nbytes``: an output the program's arguments hold, a row of
  a scan's ys, a loop carry's first and next values;
- ``VIEW slot operand counter stride``: the pointer at arena byte ``slot`` becomes the
  operand's address plus ``stride`` bytes times the int64 at arena byte ``counter``
  (row ``i`` of an array; a reversed scan starts at the last row, stride negative);
- ``LOOP count counter length``, then the body, then ``NEXT back``: the body runs
  ``count`` times with the counter at arena byte ``counter`` going 0, 1, ...;
  ``length`` codes (the body and its ``NEXT``) are skipped when ``count`` is 0, and
  ``NEXT`` jumps ``back`` codes to its ``LOOP`` while the count is not reached;
- ``POINT slot operand``: the pointer at arena byte ``slot`` becomes the operand's
  address; ``SWAP slot slot``: two such pointers trade places.

A ``scan`` (a ``fori_loop`` of fixed trip count is one) becomes: its carries copied
into memory of their own, then the loop, whose body reads the carries, runs its kernels
on memory of the arena that every iteration reuses, stores its ys rows, and copies the
carries' new values in (a value that is another carry's memory staged first, so a body
may swap its carries; a carry updated in place is not copied). A carry whose next value
is an array the body makes is not copied either: the carry and that array are two
buffers that pointers in the arena point at (``POINT`` before the loop), which trade
places (``SWAP``) at the end of each iteration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir.core import Literal
from .loopnest import tuple_source
from .scalar import storage_dtype

CALL, SET, COPY, VIEW, LOOP, NEXT, POINT, SWAP = range(
    8
)  # the machine's operations (``step_machine``)
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


@dataclass(frozen=True)
class _Carries:
    """A loop's carries, each memory of its own holding its first value (a name or a
    Literal)."""

    names: tuple
    initial: tuple
    nbytes: tuple


@dataclass(frozen=True)
class _Update:
    """The carries take the body's results (names or Literals), all at once."""

    names: tuple
    results: tuple


@dataclass(frozen=True)
class _Loop:
    step: str  # the loop variable: what its rows move with
    count: int
    reverse: bool


@dataclass(frozen=True)
class _Row:
    """``name`` is row ``step`` of ``of``, rows ``row_nbytes`` apart."""

    name: str
    of: str
    row_nbytes: int
    step: str


@dataclass(frozen=True)
class _Store:
    """Row ``step`` of ``of`` takes ``value`` (a name or a Literal) of ``nbytes``."""

    of: str
    value: object
    row_nbytes: int
    nbytes: int
    step: str


_NOTHING = object()  # a recorded line that does nothing the steps need (advice)


def _operand(writer, atom):
    return atom if isinstance(atom, Literal) else writer.name(atom)


def _nbytes(aval) -> int:
    return aval.size * np.dtype(storage_dtype(aval.dtype)).itemsize


@dataclass
class Recorder:
    """What each line of the launcher does, by line index: a new array, a name for
    another name's memory, a kernel call, a loop's parts, or nothing the steps need. A
    line whose index now holds other text (the writer deleted lines and wrote others)
    records nothing."""

    events: dict[int, tuple[str, object]] = field(default_factory=dict)

    def emit(self, writer, lines: list[str], event) -> None:
        """Emit ``lines`` into ``writer``: the first does ``event`` (or a tuple of events,
        in order), the rest nothing."""
        for k, line in enumerate(lines):
            self.events[len(writer.lines)] = (writer.indent + line, event if k == 0 else _NOTHING)
            writer.emit(line)

    def array(self, writer, name: str, lines: list[str], nbytes: int) -> None:
        self.emit(writer, lines, _Array(name, nbytes))

    def alias(self, writer, name: str, of: str, line: str | None = None, offset: int = 0):
        """Emit a line binding ``name`` to the memory of ``of``, ``offset`` bytes in (a
        view)."""
        self.emit(writer, [line or f"{name} = {of}"], _Alias(name, of, offset))

    def assign(self, writer, line: str, names: list[str], of: list[str]) -> None:
        """Emit ``line``, binding each of ``names`` to the memory of the name in ``of``."""
        self.emit(writer, [line], tuple(map(_Alias, names, of)))

    def call(self, writer, line: str, index: int, operands: list, returned) -> None:
        names = tuple(_operand(writer, a) for a in operands)
        event = _Call(index, names)
        if returned is not None:
            nbytes = np.dtype(storage_dtype(returned.aval.dtype)).itemsize
            event = _Call(index, names, writer.name(returned), nbytes)
        self.emit(writer, [line], event)

    def carries(self, writer, line: str, names: list[str], initial: list) -> None:
        """Emit ``line``, which gives the carries ``names`` the values of ``initial``."""
        values = tuple(_operand(writer, a) for a in initial)
        self.emit(
            writer, [line], _Carries(tuple(names), values, tuple(_nbytes(a.aval) for a in initial))
        )

    def loop(self, writer, line: str, step: str, count: int, reverse: bool) -> None:
        """Emit ``line``, a ``for`` over ``step`` whose body is the lines indented under it."""
        self.emit(writer, [line], _Loop(step, count, reverse))

    def row(self, writer, line: str, name: str, of, step: str) -> None:
        """Emit ``line``, binding ``name`` to row ``step`` of the array ``of``."""
        row_nbytes = _nbytes(of.aval) // max(of.aval.shape[0], 1)
        self.emit(writer, [line], _Row(name, writer.name(of), row_nbytes, step))

    def store(self, writer, lines: list[str], ys, value, step: str) -> None:
        """Emit ``lines``, which store ``value`` into row ``step`` of ``ys``."""
        row_nbytes = _nbytes(ys.aval) // max(ys.aval.shape[0], 1)
        event = _Store(
            writer.name(ys), _operand(writer, value), row_nbytes, _nbytes(value.aval), step
        )
        self.emit(writer, lines, event)

    def update(self, writer, line: str, names: list[str], results: list) -> None:
        """Emit ``line``, which gives the carries ``names`` the values ``results``."""
        values = tuple(_operand(writer, a) for a in results)
        self.emit(writer, [line], _Update(tuple(names), values))


@dataclass(frozen=True)
class Plan:
    """What a launcher of steps does, for ``step_machine.StepLauncher`` to do it with no
    code of the program's own: the codes; the arguments' count; the shape and dtype of
    each output array it makes (after the arguments in the machine's table, the arena
    last); the results, as indices into that table; the arena's size in bytes."""

    codes: np.ndarray
    arguments: int
    made: list
    results: list
    arena_nbytes: int
    dtypes: tuple = ()  # the arguments' (``program.write``)


@dataclass
class _Nest:
    """A loop and the events of its body."""

    loop: _Loop
    events: list = field(default_factory=list)


def write_launcher(writer, arguments: list[str], end: int):
    """The launcher's lines running ``writer``'s program as steps (its lines before
    ``end``, where its results begin, each recorded), with the step codes as a module
    constant; None where a line is no step or an output is no array the steps can hand
    back."""
    from ...config import config

    if not writer.units or not config.steps:
        return None
    try:
        return _Layout(writer, arguments, _events(writer, end)).launcher()
    except _NotSteps:
        return None


def _events(writer, end: int) -> list:
    """The events of ``writer``'s lines before ``end``, a loop's body nested in it."""
    top: list = []
    open_ = [(0, top)]  # (the indent of the events, where they go), innermost last
    for index, line in enumerate(writer.lines[:end]):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        entry = writer.steps.events.get(index)
        if entry is None or entry[0] != line:
            raise _NotSteps
        if entry[1] is _NOTHING:
            continue
        indent = len(line) - len(line.lstrip())
        while indent < open_[-1][0]:
            open_.pop()
        if indent != open_[-1][0]:
            raise _NotSteps
        for event in entry[1] if isinstance(entry[1], tuple) else (entry[1],):
            if isinstance(event, _Loop):
                nest = _Nest(event)
                open_[-1][1].append(nest)
                open_.append((indent + 4, nest.events))
            else:
                open_[-1][1].append(event)
    return top


class _NotSteps(Exception):
    """The program is not kernel calls on arrays alone."""


class _Layout:
    """Where each name's memory is (an argument, an output array, the arena, a row a
    pointer in the arena points at), and the steps, with their operands as (root,
    offset) pairs or Literals until the roots are placed."""

    def __init__(self, writer, arguments: list[str], events: list):
        self.writer = writer
        self.arguments = arguments  # the program's, without the kernels' addresses
        self.root = {name: (name, 0) for name in self.arguments}  # name -> (root, offset)
        self.nbytes: dict[str, int] = {}  # root -> bytes, for the roots the steps make
        self.pointers: dict[str, str] = {}  # a row's root -> the root of its pointer
        self.loops: dict[str, tuple[str, int, bool]] = {}  # step -> counter, count, reverse
        # The roots made by the body of each loop being laid out, innermost last.
        self.made: list[set[str]] = [set()]
        # A carry's root -> the POINT steps before its loop (where it ping-pongs).
        self.points: dict[str, list] = {}
        self.ops = self._ops(events)

    def _memory(self, label: str, nbytes: int) -> str:
        """A new root of ``nbytes`` the steps make, named after ``label``."""
        root = label
        while root in self.nbytes or root in self.pointers or root in self.arguments:
            root += "'"  # a name written again (a body written twice) is new memory
        self.nbytes[root] = nbytes
        self.made[-1].add(root)
        return root

    def _at(self, operand):
        """A Literal as it is, a name as (root, offset)."""
        if isinstance(operand, Literal):
            return operand
        if operand not in self.root:
            raise _NotSteps
        return self.root[operand]

    def _ops(self, events: list) -> list:
        ops = []
        for event in events:
            if isinstance(event, _Array):
                self.root[event.name] = (self._memory(event.name, event.nbytes), 0)
            elif isinstance(event, _Alias):
                root, offset = self._at(event.of)
                self.root[event.name] = (root, offset + event.offset)
            elif isinstance(event, _Call):
                operands = [self._at(operand) for operand in event.operands]
                if event.returned is not None:
                    root = self._memory(event.returned, event.returned_nbytes)
                    self.root[event.returned] = (root, 0)
                    operands.append((root, 0))
                ops.append(("call", event.index, operands))
            elif isinstance(event, _Carries):
                for name, value, nbytes in zip(
                    event.names, event.initial, event.nbytes, strict=True
                ):
                    source = self._at(value)  # before ``name`` is bound: it may be read
                    self.root[name] = (self._memory(name, nbytes), 0)
                    self.points[self.root[name][0]] = []
                    ops.append(("points", self.points[self.root[name][0]]))
                    ops.append(_assignment(self.root[name], source, nbytes))
            elif isinstance(event, _Nest):
                loop = event.loop
                counter = self._memory(f"{loop.step}#counter", 8)
                self.loops[loop.step] = (counter, loop.count, loop.reverse)
                self.made.append(set())
                ops.append(("loop", loop.count, counter, self._ops(event.events)))
                self.made.pop()
            elif isinstance(event, _Row):
                self.root[event.name] = self._row(event.of, event.row_nbytes, event.step, ops)
            elif isinstance(event, _Store):
                row = self._row(event.of, event.row_nbytes, event.step, ops)
                ops.append(_assignment(row, self._at(event.value), event.nbytes))
            elif isinstance(event, _Update):
                ops += self._update(event)
            else:
                raise _NotSteps
        return ops

    def _row(self, of: str, row_nbytes: int, step: str, ops: list) -> tuple[str, int]:
        """The root of row ``step`` of ``of``: memory a pointer points at, which a
        ``VIEW`` step appended to ``ops`` moves to the row of each iteration."""
        if step not in self.loops:
            raise _NotSteps
        counter, count, reverse = self.loops[step]
        root, offset = self._at(of)
        if reverse:  # the counter goes up, the rows down
            offset, row_nbytes = offset + (count - 1) * row_nbytes, -row_nbytes
        row = f"{of}#row"
        while row in self.nbytes or row in self.pointers:
            row += "'"
        self.pointers[row] = self._memory(f"{row}#pointer", 8)
        ops.append(("view", self.pointers[row], (root, offset), counter, row_nbytes))
        return (row, 0)

    def _update(self, event: _Update) -> list:
        """The copies giving the carries their next values: a value in a carry's memory
        is staged into memory of its own first, so no copy reads a carry already
        written (a body may return its carries swapped)."""
        carries = {self.root[name][0] for name in event.names}
        sources = [self._at(result) for result in event.results]
        staged, copies, swaps = [], [], []
        for name, source in zip(event.names, sources, strict=True):
            to = self.root[name]
            nbytes = self.nbytes.get(to[0], 0)
            if source == to:  # updated in place, or passed through
                continue
            if self._swappable(to[0], source, nbytes, sources):
                swaps.append(("swap", *self._ping_pong(to[0], source[0], nbytes)))
                continue
            if not isinstance(source, Literal) and source[0] in carries:
                staging = (self._memory(f"{name}#staged", nbytes), 0)
                staged.append(("copy", staging, source, nbytes))
                source = staging
            copies.append(_assignment(to, source, nbytes))
        return staged + copies + swaps

    def _swappable(self, carry: str, source, nbytes: int, sources: list) -> bool:
        """Whether the carry and its next value ``source`` may trade buffers: the value is
        a whole array this loop's body makes (no view, no other carry's value, no memory
        the loop does not own), of the carry's size."""
        return (
            not isinstance(source, Literal)
            and carry in self.nbytes
            and source[1] == 0
            and source[0] in self.made[-1]
            and source[0] not in self.pointers
            and self.nbytes[source[0]] == nbytes
            and sources.count(source) == 1
        )

    def _ping_pong(self, carry: str, value: str, nbytes: int) -> tuple[str, str]:
        """Make ``carry`` and ``value`` memory that two pointers point at, each pointing at
        a buffer of its own before the loop; the pointers' roots."""
        pointers = []
        for root in (carry, value):
            del self.nbytes[root]
            buffer = self._memory(f"{root}#buffer", nbytes)
            self.pointers[root] = self._memory(f"{root}#pointer", 8)
            self.points[carry].append(("point", self.pointers[root], (buffer, 0)))
            pointers.append(self.pointers[root])
        return pointers[0], pointers[1]

    def launcher(self):
        writer = self.writer
        pooled = {writer.poolable[v] for v in writer.pooled}
        lines, results, outputs, copies, made = [], [], {}, [], {}
        for atom in writer.jaxpr.outvars:
            if isinstance(atom, Literal) or atom not in writer.names:
                raise _NotSteps
            aval, (root, offset) = atom.aval, self.root.get(writer.names[atom], (None, 0))
            if root is None:
                raise _NotSteps
            nbytes = _nbytes(aval)
            if root in pooled:
                results.append(root)
                continue
            if outputs.get(root, (None, None))[1] == aval.shape and not offset:
                results.append(outputs[root][0])  # the same value again
                continue
            name = writer.fresh("output")
            made[name] = (aval.shape, storage_dtype(aval.dtype))
            lines += writer.new_array(name, *made[name])
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
        self.place = {name: (k, 0) for k, name in enumerate(entries)}
        for root, (name, _) in outputs.items():
            self.place[root] = self.place[name]
        self.offset = 0
        for root, nbytes in self.nbytes.items():
            if root not in self.place:
                self.place[root] = (-1, self.offset)
                self.offset += -(-nbytes // ALIGNMENT) * ALIGNMENT
        self.literals, self.literal_codes = {}, []
        codes = self._codes(self.ops)
        for name, root, at, nbytes in copies:
            codes += [COPY, *self.place[name], *self._operand((root, at)), nbytes]
        codes = self.literal_codes + codes
        longest = max(_longest_call(self.ops), 1)
        table = self.offset
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
        plan = Plan(
            np.array(codes, dtype=np.int64),
            len(self.arguments),
            [made[name] for name in entries[len(self.arguments) :]],
            [entries.index(name) for name in results],
            table + 8 * longest,
        )
        return lines, steps, plan

    def _operand(self, operand) -> list[int]:
        """The two codes of an operand: a Literal's memory (set once, first), or a root's
        place and the offset into it."""
        if isinstance(operand, Literal):
            value = np.asarray(operand.val, storage_dtype(operand.aval.dtype))
            key = (value.dtype.str, value.tobytes())
            if key not in self.literals:
                self.literals[key] = [-1, self.offset]
                self.literal_codes += [SET, -1, self.offset, value.nbytes, _bits(value)]
                self.offset += ALIGNMENT
            return self.literals[key]
        root, offset = operand
        if root in self.pointers:  # a row: the pointer in the arena
            return [-2 - self.place[self.pointers[root]][1], offset]
        where, start = self.place[root]
        return [where, start + offset]

    def _codes(self, ops: list) -> list[int]:
        codes = []
        for op in ops:
            kind = op[0]
            if kind == "call":
                operands = [code for operand in op[2] for code in self._operand(operand)]
                codes += [CALL, op[1], len(operands) // 2, *operands]
            elif kind == "set":
                _, to, value = op
                value = np.asarray(value.val, storage_dtype(value.aval.dtype))
                codes += [SET, *self._operand(to), value.nbytes, _bits(value)]
            elif kind == "copy":
                _, to, source, nbytes = op
                codes += [COPY, *self._operand(to), *self._operand(source), nbytes]
            elif kind == "points":
                codes += self._codes(op[1])
            elif kind == "point":
                codes += [POINT, self.place[op[1]][1], *self._operand(op[2])]
            elif kind == "swap":
                codes += [SWAP, self.place[op[1]][1], self.place[op[2]][1]]
            elif kind == "view":
                _, pointer, base, counter, stride = op
                at = self.place[pointer][1]
                codes += [VIEW, at, *self._operand(base), self.place[counter][1], stride]
            else:  # a loop
                _, count, counter, body = op
                body = self._codes(body)
                codes += [LOOP, count, self.place[counter][1], len(body) + 2, *body]
                codes += [NEXT, len(body) + 4]
        return codes


def _assignment(to, value, nbytes: int):
    """The step giving the memory ``to`` the value of a Literal or of memory."""
    if isinstance(value, Literal):
        return ("set", to, value)
    return ("copy", to, value, nbytes)


def _bits(value: np.ndarray) -> int:
    """A literal's bytes as the int64 ``SET`` writes: a value of more than 8 bytes (a
    complex128) is no step."""
    if value.nbytes > 8:
        raise _NotSteps
    return int.from_bytes(value.tobytes().ljust(8, b"\0"), "little", signed=True)


def _longest_call(ops: list) -> int:
    """The most operands of one call, in ``ops`` and their loops' bodies."""
    longest = 0
    for op in ops:
        if op[0] == "call":
            longest = max(longest, len(op[2]))
        elif op[0] == "loop":
            longest = max(longest, _longest_call(op[3]))
    return longest
