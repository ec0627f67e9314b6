"""Memory planning: which buffer holds each intermediate of the fused program.

Liveness-based: going through the kernels in order, an output takes a buffer of its
dtype and number of elements whose value nothing reads any more, and a new buffer
otherwise. The program's inputs and outputs are never planned: they are the caller's
arrays.

``Liveness.overwrite_refusal`` is the one proof behind every buffer a value takes over
from another, here and in the backends (a contraction's epilogue written over its
product): it says why the write could be followed by a read of the old value, or
nothing when no read can follow.

Functional updates (``dynamic_update_slice``, ``scatter``: what in-place NumPy is traced
into) are turned back into writes: ``Liveness.update_refusal`` says why an update may
not write into its operand's memory, and where nothing refuses, ``Liveness.in_place``
records that the output takes the operand's memory (its buffer, in the plan), so the
backend writes only the window or the indexed elements. The proof follows memory, not
values: ``Liveness.storage`` is what each value's memory may be (a reshape is a view of
its operand, a loop or a branch may return its operand as it is), and every value that
may share the operand's memory must be read for the last time by the update. A loop
body may write its carries in place when the loop owns them (``loop_ownership``).
Where a loop kernel makes the window such an update writes, it may store it straight
into the operand's memory (``Liveness.window_stores``, proven in ``window_stores.py``).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var
from ..ir.primitive import Pattern
from .pointwise import pointwise_refusal
from .refusals import MemoryRefusal, Refused
from .window_stores import store_refusal, update_window

# Functional updates: the output is operand 0 with some elements replaced.
UPDATES = ("dynamic_update_slice", "scatter")
# Ops whose result a backend may make a view of its operand's memory.
VIEWS = ("reshape", "squeeze", "expand_dims")


def is_row_window(eqn: Eqn) -> bool:
    """Whether ``eqn`` is a ``slice`` or ``dynamic_slice`` of whole rows, ``x[s:s + k]``
    with every axis after the first whole and unit strides: in a C-contiguous array such
    a window is contiguous itself, so a backend may read it as a view of ``x`` (a loop
    reading row ``i`` of its carry reads it in place instead of copying it)."""
    if eqn.prim.name not in ("slice", "dynamic_slice") or not isinstance(eqn.inputs[0], Var):
        return False
    shape, window = eqn.inputs[0].aval.shape, eqn.outputs[0].aval.shape
    if not shape or shape[1:] != window[1:]:
        return False
    if eqn.prim.name == "slice":
        strides = eqn.params["strides"] or (1,) * len(shape)
        return all(s == 1 for s in strides) and not any(eqn.params["start_indices"][1:])
    return True


def makes_view(eqn: Eqn) -> bool:
    """Whether a backend may make ``eqn``'s result a view of its operand's memory."""
    return (eqn.prim.name in VIEWS and isinstance(eqn.inputs[0], Var)) or is_row_window(eqn)


@dataclass
class MemoryPlan:
    """``buffer_of[var]`` is an index into ``buffers``; each buffer is a flat array
    (``ShapedArray((n,), dtype)``), viewed with the shape of the value it holds."""

    buffer_of: dict[Var, int] = field(default_factory=dict)
    buffers: list[ShapedArray] = field(default_factory=list)
    total_intermediate_bytes: int = 0  # what one buffer per intermediate would take
    in_place: dict[Var, Var] = field(default_factory=dict)  # update output -> its operand
    # A loop kernel's output stored straight into the window of the update that takes it:
    # the output -> that update's output (``Liveness.window_stores``). It keeps its buffer
    # in the plan, for a backend that writes it there and copies it (CUDA does).
    window_stores: dict[Var, Var] = field(default_factory=dict)
    # Why values took memory of their own, by ``MemoryRefusal``: a spare buffer refused,
    # an update not in place, a window not stored into, a loop's carry copied before it.
    refusals: Counter = field(default_factory=Counter)
    # The proof the plan was made by: a backend writes the program by this one rather
    # than proving it again (which updates write in place, what memory values share).
    liveness: Liveness | None = field(default=None, repr=False, compare=False)

    @property
    def num_buffers(self) -> int:
        return len(self.buffers)

    @property
    def peak_bytes(self) -> int:
        """Scratch memory the program needs: all its buffers, live at once or not."""
        return sum(b.nbytes for b in self.buffers)

    def __str__(self):
        counts = sorted((str(reason), count) for reason, count in self.refusals.items())
        refused = ", ".join(f"{reason}={count}" for reason, count in counts if count)
        return (
            f"{len(self.buffer_of)} intermediates in {self.num_buffers} buffers, "
            f"{self.peak_bytes} bytes (unplanned: {self.total_intermediate_bytes} bytes), "
            f"{len(self.in_place)} updates in place, "
            f"{len(self.window_stores)} stored into their windows by their kernels"
            + (f"; refused: {refused}" if refused else "")
        )


class Liveness:
    """Where each value of a program is made and where it is last read, what memory it
    may share, and which of its updates write in place.

    ``owned`` are inputs whose memory the program may write (a loop's carries that the
    loop owns, see ``loop_ownership``); every other input, constant and result is the
    caller's.
    """

    def __init__(self, program: Jaxpr | ClosedJaxpr, owned=()):
        jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
        self.eqns = jaxpr.eqns
        self.made_at = {var: index for index, eqn in enumerate(jaxpr.eqns) for var in eqn.outputs}
        self.last_read: dict[Var, int] = {}
        for index, eqn in enumerate(jaxpr.eqns):
            for atom in eqn.inputs:
                if isinstance(atom, Var):
                    self.last_read[atom] = index
        results = [v for v in jaxpr.outvars if isinstance(v, Var)]
        owned = set(owned)
        self.callers = {*jaxpr.constvars, *(v for v in jaxpr.invars if v not in owned), *results}
        self.storage: dict[Var, frozenset[Var]] = {}  # value -> the memories it may be in
        self._sharers: dict[Var, list[Var]] = defaultdict(list)  # memory -> values in it
        self.in_place: dict[Var, Var] = {}  # update output -> the operand it writes into
        self.loops: dict[int, LoopOwnership] = {}  # loop eqn -> the carries it owns
        self.written: set[Var] = set()  # memories that updates or loops write into
        self._refusals: dict[int, Refused | None] = {}  # update eqn -> why not in place
        # A loop kernel's output -> the in-place update whose window the kernel stores it in.
        self.window_stores: dict[Var, int] = {}
        self._store_refusals: dict[int, Refused | None] = {}  # update eqn -> why not
        for var in [*jaxpr.constvars, *jaxpr.invars]:
            self._store(var, frozenset([var]))
        for index, eqn in enumerate(jaxpr.eqns):
            if LoopLayout.of(eqn) is not None:
                self._own_carries(index)
            position = updated_operand(eqn)
            if position is not None:
                self._refusals[index] = self._update_refusal(index)
            if position is not None and self._refusals[index] is None:
                memory = self.storage[eqn.inputs[position]]
                self._store_refusals[index] = store_refusal(self, index)
                if self._store_refusals[index] is None:
                    self.window_stores[update_window(eqn).update] = index
                for root in memory:  # all dead now (the proof): no later update asks again
                    self._sharers[root].clear()
                self.in_place[eqn.outputs[0]] = eqn.inputs[position]
                self.written |= memory
                self._store(eqn.outputs[0], memory)
                continue
            if index in self.loops:
                memories = self._loop_output_storage(index)
            else:
                memories = _output_storage(eqn, self.storage)
            for var, memory in zip(eqn.outputs, memories, strict=True):
                self._store(var, memory)
        self._memory_end: dict[Var, float] = defaultdict(lambda: -1)
        for var, memory in self.storage.items():
            end = math.inf if var in self.callers else self.last_read.get(var, -1)
            for root in memory:
                self._memory_end[root] = max(self._memory_end[root], end)

    def refusals(self) -> Counter:
        """Why updates of this program and of its loops' bodies do not write in place, or
        their kernels not into the window, and loops copy carries, by ``MemoryRefusal``."""
        counts: Counter = Counter()
        for index, refusal in self._refusals.items():
            if refusal is None:
                refusal = self._store_refusals.get(index)
            if refusal is not None:
                counts[refusal.reason] += 1
        for loop in self.loops.values():
            counts.update(refusal.reason for refusal in loop.why_copied)
            counts.update(loop.body.refusals())
        return counts

    def release(self, var: Var) -> float:
        """After which eqn nothing reads the memory ``var`` was made in: its own last
        read, or the last read of any value that came to share it (a view of it, an
        update written into it); infinite when a result of the program shares it."""
        if var not in self.storage.get(var, ()):  # a view: made in no memory of its own
            return self.last_read.get(var, self.made_at.get(var, -1))
        return max(self._memory_end[var], self.made_at.get(var, -1))

    def _own_carries(self, index: int) -> None:
        ownership = loop_ownership(self, index)
        self.loops[index] = ownership
        first = LoopLayout.of(self.eqns[index]).first_carry
        for k in ownership.reaching - ownership.copied:
            operand = self.eqns[index].inputs[first + k]
            if isinstance(operand, Var):
                self.written |= self.storage[operand]

    def _loop_output_storage(self, index: int) -> list[frozenset[Var]]:
        """The memories each output of loop eqn ``index`` may be in. A final carry is in
        new memory of the body, or in the memory of a body input its next value may be
        in (a const, a row of ``xs``), or in another carry's, whose value it may have
        been at the last step (followed to a fixed point), or its own initial value's
        (a loop that does not run). A carry's initial value that the loop copies
        (``LoopOwnership.copied``) is new memory: it shares the operand's no more. A
        scan's ``ys`` are new arrays."""
        eqn, ownership = self.eqns[index], self.loops[index]
        layout = LoopLayout.of(eqn)
        body, first = layout.body, layout.body_first_carry
        operand_of = dict(zip(body.invars, eqn.inputs[layout.first_carry - first :], strict=True))
        position = {carry: k for k, carry in enumerate(layout.carry_invars())}

        def inputs_in(result) -> set[Var]:
            memory = ownership.body.storage.get(result, ()) if isinstance(result, Var) else ()
            return {root for root in memory if root in operand_of}

        results = body.outvars[: layout.num_carry]
        reach = [inputs_in(r) | {carry} for r, carry in zip(results, position, strict=True)]
        while True:  # a carry may hold another carry's value, which may hold a third's
            grown = [
                found.union(*(reach[position[v]] for v in found if v in position))
                for found in reach
            ]
            if grown == reach:
                break
            reach = grown
        copied = {carry for carry, k in position.items() if k in ownership.copied}
        memories = []
        for var, found in zip(eqn.outputs, reach, strict=False):
            memory = {var}
            for root in found - copied:
                if isinstance(operand_of[root], Var):
                    memory |= self.storage[operand_of[root]]
            memories.append(frozenset(memory))
        return memories + [frozenset([var]) for var in eqn.outputs[layout.num_carry :]]

    def _store(self, var: Var, memory: frozenset[Var]) -> None:
        self.storage[var] = memory
        for root in memory:
            self._sharers[root].append(var)

    def sharing(self, var: Var) -> list[Var]:
        """The values made so far that may share memory with ``var`` (itself included)."""
        found = {}
        for root in self.storage[var]:
            found.update(dict.fromkeys(self._sharers[root]))
        return list(found)

    def update_refusal(self, index: int) -> Refused | None:
        """Why update eqn ``index`` may not write into its operand's memory; None when
        nothing reads that memory after the update (nor the update itself, but for the
        operand it overwrites) and it is not the caller's."""
        return self._refusals[index]

    def window_store_refusal(self, index: int) -> Refused | None:
        """Why the loop kernel making update eqn ``index``'s update may not store it
        straight into the window of the operand (``window_stores.store_refusal``)."""
        if self._refusals[index] is not None:
            return Refused(
                MemoryRefusal.NOT_IN_PLACE,
                f"the update does not write in place: {self._refusals[index]}",
            )
        return self._store_refusals[index]

    def _update_refusal(self, index: int) -> Refused | None:
        """``update_refusal``, asked when the values made before ``index`` are known."""
        eqn = self.eqns[index]
        operand = eqn.inputs[updated_operand(eqn)]
        if not isinstance(operand, Var):
            return Refused(MemoryRefusal.CONSTANT, "the operand is a constant of the program")
        others = _other_update_inputs(eqn)
        for value in self.sharing(operand):
            what = "the operand" if value is operand else "a value sharing the operand's memory"
            if value in self.callers:
                return Refused(
                    MemoryRefusal.CALLERS_MEMORY,
                    f"{what} is the caller's array, an input or a result of the program",
                )
            last = self.last_read.get(value, self.made_at.get(value, -1))
            if last > index:
                return Refused(
                    MemoryRefusal.READ_LATER, f"eqn {last} reads {what} after the update"
                )
            if value in others:
                return Refused(
                    MemoryRefusal.READ_ELSEWHERE, f"the update reads {what} as another operand"
                )
        return None

    def overwrite_refusal(self, index: int, output: Var, value: Var) -> Refused | None:
        """Why eqn ``index`` may not write its ``output`` into the buffer holding
        ``value``; None when nothing can read ``value`` once that write has begun.

        ``value`` is a value of the program (a buffer reused once its last reader has
        run), or one the eqn's kernel body makes and reads (a contraction's product,
        which its epilogue may overwrite element by element).
        """
        if value in self.callers:
            return Refused(
                MemoryRefusal.CALLERS_MEMORY,
                "the value is the caller's array, an input or a result of the program",
            )
        made = self.made_at.get(value)
        if made is None:
            return _body_overwrite_refusal(self.eqns[index], output, value)
        if made >= index:
            return Refused(
                MemoryRefusal.NOT_MADE_YET,
                f"the value is made by eqn {made}, not before eqn {index}",
            )
        last = self.last_read.get(value, made)
        if last > index:
            return Refused(
                MemoryRefusal.READ_LATER, f"eqn {last} reads the value after eqn {index} writes"
            )
        if last == index:
            # A kernel's operand may be a view of another array (a reshape, a branch
            # that returns its operand): only its own values are proven pointwise.
            return Refused(
                MemoryRefusal.READ_ELSEWHERE,
                f"eqn {index} reads the value as an operand, which may be a view",
            )
        return None


def updated_operand(eqn: Eqn) -> int | None:
    """The position of the input an update eqn (alone, or as a kernel of one op) writes
    into, or None for any other eqn."""
    if eqn.prim.name in UPDATES:
        return 0
    if eqn.prim.name != "kernel":
        return None
    body = eqn.params["jaxpr"]
    if len(body.eqns) != 1 or body.eqns[0].prim.name not in UPDATES:
        return None
    (inner,) = body.eqns
    operand = inner.inputs[0]
    if body.outvars != inner.outputs or operand not in body.invars:
        return None
    position = body.invars.index(operand)
    return position if isinstance(eqn.inputs[position], Var) else None


def _other_update_inputs(eqn: Eqn) -> set[Var]:
    """The values an update eqn reads besides its operand (the update, the indices): a
    kernel passes a value it reads twice once, so its body says which uses are which."""
    if eqn.prim.name != "kernel":
        return {a for a in eqn.inputs[1:] if isinstance(a, Var)}
    body = eqn.params["jaxpr"]
    top = dict(zip(body.invars, eqn.inputs, strict=True))
    (inner,) = body.eqns
    return {top[a] for a in inner.inputs[1:] if a in top and isinstance(top[a], Var)}


def _output_storage(eqn: Eqn, storage) -> list[frozenset[Var]]:
    """The memories each output of ``eqn`` may be in: its own, a view's operand's, and for
    other control flow (a ``cond``, a call: it may return an operand as it is) every
    operand's too. A loop's are ``Liveness._loop_output_storage``'s."""

    def of(atom) -> frozenset[Var]:
        return storage[atom] if isinstance(atom, Var) else frozenset()

    if makes_view(eqn):  # a literal has no memory: its views are copies
        return [of(eqn.inputs[0])]
    if eqn.prim.name == "kernel":
        return _kernel_output_storage(eqn, of)
    if eqn.prim.pattern is Pattern.CONTROL:
        operands = frozenset().union(*map(of, eqn.inputs))
        return [operands | {var} for var in eqn.outputs]
    return [frozenset([var]) for var in eqn.outputs]


def _kernel_output_storage(eqn: Eqn, of) -> list[frozenset[Var]]:
    """A kernel's output is new memory, unless its body returns an input, or a view of one
    (a reshape kernel), or one value as two outputs (which then share it)."""
    body = eqn.params["jaxpr"]
    inner: dict = {v: of(a) for v, a in zip(body.invars, eqn.inputs, strict=True)}
    for body_eqn in body.eqns:
        if makes_view(body_eqn):
            inner[body_eqn.outputs[0]] = inner.get(body_eqn.inputs[0], frozenset())
    first: dict = {}
    memories = []
    for result, var in zip(body.outvars, eqn.outputs, strict=True):
        if not isinstance(result, Var):
            memories.append(frozenset([var]))
            continue
        made_here = first.setdefault(result, var)
        memories.append(inner.get(result, frozenset()) | {made_here})
    return memories


def _body_overwrite_refusal(eqn: Eqn, output: Var, value: Var) -> Refused | None:
    """Why ``eqn``'s kernel may not write ``output`` over ``value``, a value its body makes:
    it may when the body reads ``value`` only pointwise on the way to that one output
    (``pointwise.pointwise_refusal``)."""
    elsewhere = Refused(
        MemoryRefusal.NOT_MADE_BY_THE_KERNEL,
        "the value is not made by the kernel that writes the output",
    )
    body = eqn.params.get("jaxpr") if eqn.prim.name == "kernel" else None
    if body is None or output not in eqn.outputs:
        return elsewhere
    made = {var for inner in body.eqns for var in inner.outputs}
    if value not in made:
        return elsewhere
    result = body.outvars[eqn.outputs.index(output)]
    if value in body.outvars:
        return Refused(
            MemoryRefusal.NOT_MADE_BY_THE_KERNEL, "the value is itself a result of the kernel"
        )
    if (value.aval.shape, value.aval.dtype) != (result.aval.shape, result.aval.dtype):
        return Refused(
            MemoryRefusal.SHAPE_OR_DTYPE, "the value and the output differ in shape or dtype"
        )
    return pointwise_refusal(body, [value], result, "the value")


def plan_memory(program: Jaxpr | ClosedJaxpr, liveness: Liveness | None = None) -> MemoryPlan:
    """The buffers of a fused program's intermediates (``liveness``: the program's, when
    it owns some of its inputs, as a loop body its carries).

    >>> import numpy as np, numbax
    >>> from numbax.passes import optimize
    >>> chain = lambda x: np.tanh(np.tanh(np.tanh(x @ x) @ x) @ x) @ x
    >>> fused, _ = optimize(numbax.make_jaxpr(chain)(np.ones((4, 4))))
    >>> plan = plan_memory(fused)  # the third intermediate reuses the first one's buffer
    >>> len(plan.buffer_of), plan.num_buffers, plan.peak_bytes
    (3, 2, 256)
    """
    liveness = liveness or Liveness(program)
    plan = MemoryPlan(
        in_place=dict(liveness.in_place), refusals=liveness.refusals(), liveness=liveness
    )
    for var, index in liveness.window_stores.items():
        plan.window_stores[var] = liveness.eqns[index].outputs[0]
    held: list[Var] = []  # buffer -> the value it holds last
    spare: dict[tuple, list[int]] = defaultdict(list)  # (dtype, size) -> buffers
    released_after: dict[int, list[int]] = defaultdict(list)  # eqn -> buffers free after it
    for index, eqn in enumerate(liveness.eqns):
        for var in eqn.outputs:
            operand = liveness.in_place.get(var)
            if operand is not None:  # the update's output stays in its operand's buffer
                _hand_on(plan, held, liveness, operand, var)
                continue
            if var in liveness.callers:
                continue
            candidates = spare[(var.aval.dtype, var.aval.size)]
            refusal = None
            if candidates:
                refusal = liveness.overwrite_refusal(index, var, held[candidates[-1]])
            if candidates and refusal is None:
                buffer = candidates.pop()
                held[buffer] = var
            else:
                if refusal is not None:
                    plan.refusals[refusal.reason] += 1
                buffer = len(plan.buffers)
                plan.buffers.append(ShapedArray((var.aval.size,), var.aval.dtype))
                held.append(var)
            plan.buffer_of[var] = buffer
            plan.total_intermediate_bytes += var.aval.nbytes
            released_after[liveness.release(var)].append(buffer)
        for buffer in released_after.pop(index, ()):
            spare[(held[buffer].aval.dtype, held[buffer].aval.size)].append(buffer)
    return plan


def _hand_on(plan, held, liveness, operand, var) -> None:
    """``var``, written into ``operand``'s memory, stays in its buffer (if the plan gave it
    one), which is released when that memory's last reader has run (``release``)."""
    buffer = plan.buffer_of.get(operand)
    if buffer is None or var in liveness.callers:
        return
    plan.buffer_of[var] = buffer
    plan.total_intermediate_bytes += var.aval.nbytes
    held[buffer] = var


@dataclass(frozen=True)
class LoopLayout:
    """Where a loop eqn's carries are: in its operands, and in its body's inputs and
    results (``while``: consts of the condition and the body, then the carries; ``scan``:
    consts, carries, then the rows of ``xs``, and results: carries, then ``ys``)."""

    body: Jaxpr
    first_carry: int  # the first carry among the eqn's operands
    body_first_carry: int  # ... and among the body's inputs
    num_carry: int

    @classmethod
    def of(cls, eqn: Eqn) -> LoopLayout | None:
        p = eqn.params
        if eqn.prim.name == "while":
            first = p["cond_nconsts"] + p["body_nconsts"]
            return cls(p["body_jaxpr"], first, p["body_nconsts"], len(eqn.inputs) - first)
        if eqn.prim.name == "scan":
            return cls(p["jaxpr"], p["num_consts"], p["num_consts"], p["num_carry"])
        return None

    def carry_invars(self) -> list[Var]:
        return self.body.invars[self.body_first_carry : self.body_first_carry + self.num_carry]


@dataclass(frozen=True)
class LoopOwnership:
    """Which carries a loop's body may write in place, and which initial values are
    copied once, before the loop, so that those writes never reach memory read elsewhere.
    ``body`` is the body's liveness with the owned carries as its owned inputs: the one
    the backend writes the body by."""

    owned: frozenset[int]  # carry positions whose memory the body may write
    reaching: frozenset[int]  # carry positions whose initial memory the loop may write
    copied: frozenset[int]  # those whose initial value is copied before the loop
    body: Liveness
    why_copied: tuple[Refused, ...] = ()  # why each copied one is


def loop_ownership(liveness: Liveness, index: int) -> LoopOwnership:
    """The carries that loop eqn ``index`` of ``liveness``'s program owns (asked while
    ``liveness`` is being built, when it knows the values made before the loop).

    The body may write carry ``k`` in place when, at the start of every iteration, its
    memory is the loop's alone. That holds by induction: the memory of each owned carry's
    next value must be new in the body or an owned carry's (never a const, a row of
    ``xs`` or a carry that is not owned), shared with no other carry's next value; and
    before the loop, each initial value that may reach a written carry is copied unless
    it dies at the loop, is not the caller's, and is no other operand of the loop.
    """
    layout = LoopLayout.of(liveness.eqns[index])
    carries = layout.carry_invars()
    owned = set(range(layout.num_carry))
    while True:
        body = Liveness(layout.body, owned=[carries[k] for k in owned])
        memories = [_memory_of(body, r) for r in layout.body.outvars[: layout.num_carry]]
        allowed = {carries[k] for k in owned}
        keep = set()
        for k in owned:
            others = set().union(*(m for j, m in enumerate(memories) if j != k))
            outside = {root for root in memories[k] if root in layout.body.invars}
            if outside <= allowed and not memories[k] & others:
                keep.add(k)
        if keep == owned:
            break
        owned = keep
    reaching = {k for k in owned if carries[k] in body.written}
    while True:  # an initial value moves to the carry whose next value it becomes
        more = {j for k in reaching for j, carry in enumerate(carries) if carry in memories[k]}
        if more <= reaching:
            break
        reaching |= more
    why = {k: _initial_refusal(liveness, index, layout.first_carry + k) for k in reaching}
    copied = {k: refusal for k, refusal in why.items() if refusal is not None}
    return LoopOwnership(
        frozenset(owned), frozenset(reaching), frozenset(copied), body, tuple(copied.values())
    )


def _memory_of(liveness: Liveness, atom) -> frozenset[Var]:
    return liveness.storage[atom] if isinstance(atom, Var) else frozenset()


def _initial_refusal(liveness: Liveness, index: int, position: int) -> Refused | None:
    """Why loop eqn ``index`` may not hand operand ``position``'s memory to its body to
    write; None when nothing else reads it after the loop starts."""
    eqn = liveness.eqns[index]
    operand = eqn.inputs[position]
    if not isinstance(operand, Var):
        return None  # a literal becomes a new array
    others = {a for k, a in enumerate(eqn.inputs) if k != position and isinstance(a, Var)}
    for value in liveness.sharing(operand):  # the values made before the loop
        if value in liveness.callers:
            return Refused(
                MemoryRefusal.CALLERS_MEMORY, "the initial value's memory is the caller's"
            )
        if liveness.last_read.get(value, liveness.made_at.get(value, -1)) > index:
            return Refused(
                MemoryRefusal.READ_LATER, "the initial value's memory is read after the loop"
            )
        if value in others:
            return Refused(
                MemoryRefusal.READ_ELSEWHERE,
                "the initial value's memory is another operand of the loop",
            )
    return None
