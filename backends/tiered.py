"""Tiered execution: a first call answered by the reference interpreter while the compiled
program is built in a background thread, which then replaces the interpreter.

Compiling a program through Numba costs seconds (LLVM's optimisation of one large
function), running its traced jaxpr with NumPy costs milliseconds for most programs. So a
``jit`` signature's first calls can run interpreted (``eval_jaxpr``'s reference
implementations, the oracle every backend is tested against: results agree with the
compiled ones within floating-point reassociation) while a thread compiles it:

    executable = TieredExecutable(closed, compile_program, name)
    executable(*arrays)  # interpreted; then compile_program() runs in a thread
    executable(*arrays)  # interpreted until the compiled program is ready, then compiled

Which tier answers is decided per call, and each call is answered by one tier only:

- The compile starts when the first call has returned, not during it: Numba's compiler is
  mostly Python, and while it holds the GIL the interpreter waits (measured on jacobi-2d,
  heat-3d and deriche: an interpreted call takes 2.2-3x as long while a compile runs; on
  adi, whose compile takes longer than its interpretation, the first call took 7.4x JAX's
  with the compile started at once).
- A call that starts while the compile runs is interpreted. The interpreter looks at the
  compile between equations and in every loop iteration; once the compiled program is
  ready it stops and the call is answered by the compiled program instead, so a long
  interpreted run (a loop of many small steps) never takes much longer than the compile.
  A program with side effects (``debug.print``, callbacks) is interpreted to the end:
  stopping half-way and running it again would repeat its effects.
- A compile that failed raises its error on every later call (``compiled``): the error is
  the one the compile raised, never lost, never replaced by interpreting forever. A call
  being interpreted when it fails is not stopped: its answer is right.
- ``worth_interpreting`` declines programs the interpreter would run for longer than a
  compile takes (``interpreted_steps``: equations executed, counting every iteration of
  a loop of known length): those compile before their first call, as without tiering.

The compiling thread is not a daemon: a process that ends while a program compiles waits
for it, so the compiled program reaches the disk cache and the next process loads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..ir.core import ClosedJaxpr, Jaxpr, Literal

# The backends whose executables take and return NumPy arrays, as the interpreter does.
# A cuda executable returns device arrays: interpreting its first calls would change the
# type of what a call returns.
TIERED_BACKENDS = ("cpu",)

# Equations the interpreter may execute for one call before a program is compiled first
# instead. One executed equation costs the interpreter 3-15 us on small arrays (measured on
# the kernels benchmark group), so this is ~3-15 s of interpreting: about what compiling a
# program of a few hundred equations costs. Beyond it interpreting would not win.
INTERPRET_MAX_STEPS = 1_000_000

# How many iterations a while loop (whose trip count is not known before it runs) is
# assumed to run when estimating the interpreter's work.
ASSUMED_WHILE_TRIPS = 100


class _CompiledReady(Exception):
    """Raised inside the interpreter when the compiled program became ready."""


def interpreted_steps(jaxpr: Jaxpr) -> int:
    """How many equations interpreting ``jaxpr`` executes, loop iterations included."""
    return sum(1 + _body_steps(eqn) for eqn in jaxpr.eqns)


def _body_steps(eqn) -> int:
    params, name = eqn.params, eqn.prim.name
    if name == "scan":
        return params["length"] * interpreted_steps(params["jaxpr"])
    if name == "while":
        per_trip = interpreted_steps(params["cond_jaxpr"]) + interpreted_steps(params["body_jaxpr"])
        return ASSUMED_WHILE_TRIPS * per_trip
    if name == "cond":
        return max(interpreted_steps(branch) for branch in params["branches"])
    if isinstance(params.get("jaxpr"), Jaxpr):  # jit_call, checkpoint, custom_vjp_call
        return interpreted_steps(params["jaxpr"])
    return 0


def has_side_effects(jaxpr: Jaxpr) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.prim.side_effects:
            return True
        if any(has_side_effects(sub) for sub in _sub_jaxprs(eqn.params)):
            return True
    return False


def _sub_jaxprs(params: dict):
    for value in params.values():
        if isinstance(value, Jaxpr):
            yield value
        elif isinstance(value, tuple | list):
            yield from (v for v in value if isinstance(v, Jaxpr))


def worth_interpreting(closed: ClosedJaxpr, backend_name: str) -> tuple[bool, str]:
    """Whether to interpret this program's first calls while it compiles, and why (not)."""
    if backend_name not in TIERED_BACKENDS:
        return False, f"the {backend_name} backend is not tiered"
    steps = interpreted_steps(closed.jaxpr)
    if steps > INTERPRET_MAX_STEPS:
        return False, f"{steps} interpreted steps would outlast the compile"
    return True, f"{steps} interpreted steps"


def interpret(closed: ClosedJaxpr, args, ready: threading.Event | None = None) -> list:
    """``eval_jaxpr`` of ``closed``; with ``ready``, stops (``_CompiledReady``) once it is set.

    Loops, conds and calls are run here rather than by their primitives' reference
    implementations, so that every iteration can stop, and so that a nested ``jit_call``
    is interpreted too instead of being compiled in the calling thread. Each (sub-)jaxpr
    is laid out once per call as a list of steps over numbered slots (``_Layout``): a loop
    body then runs each iteration without looking its variables up in a dictionary, a
    quarter less time per step than ``walk_jaxpr``'s environment (measured on adi and
    seidel-2d).
    """
    layouts: dict[Jaxpr, _Layout] = {}

    def run(jaxpr: Jaxpr, consts, *values) -> list:
        layout = layouts.get(jaxpr)
        if layout is None:
            layout = layouts[jaxpr] = _Layout(jaxpr)
        slots = [None] * layout.size
        for slot, value in zip(layout.entry, (*consts, *values), strict=True):
            slots[slot] = value
        for step, inputs, outputs in layout.steps:
            if ready is not None and ready.is_set():
                raise _CompiledReady
            results = step(run, [slots[i] if is_slot else i for is_slot, i in inputs])
            # Pinned to the recorded dtypes, as eval_jaxpr does (NumPy returns 0-d scalars).
            for (slot, dtype), result in zip(outputs, results, strict=True):
                slots[slot] = np.asarray(result, dtype=dtype)
        return [slots[i] if is_slot else i for is_slot, i in layout.outputs]

    # The quiet implementations run unwrapped (``_step``) under this one errstate.
    with np.errstate(all="ignore"):
        outs = run(closed.jaxpr, closed.consts, *args)
    return [_writable(np.asarray(v)) for v in outs]


def _writable(value: np.ndarray) -> np.ndarray:
    """A result the caller owns, as the compiled program's are: a broadcast view (below)
    is read-only."""
    return value if value.flags.writeable else value.copy()


class _Layout:
    """A jaxpr's variables numbered: its steps read and write slots of one list. An
    operand is ``(True, slot)`` or, for a literal, ``(False, value)``."""

    def __init__(self, jaxpr: Jaxpr):
        numbers: dict = {}

        def number(var) -> int:
            return numbers.setdefault(var, len(numbers))

        def operand(atom) -> tuple[bool, object]:
            return (False, atom.val) if isinstance(atom, Literal) else (True, number(atom))

        self.entry = [number(v) for v in (*jaxpr.constvars, *jaxpr.invars)]
        self.steps = [
            (
                _step(eqn),
                [operand(a) for a in eqn.inputs],
                [(number(v), v.aval.dtype) for v in eqn.outputs],
            )
            for eqn in jaxpr.eqns
        ]
        self.outputs = [operand(a) for a in jaxpr.outvars]
        self.size = len(numbers)


def _step(eqn) -> Callable:
    """``(run, operands) -> results`` for ``eqn``: its body rule, or its primitive's
    reference implementation. An elementwise implementation wrapped to be quiet
    (``np.errstate``, whose enter and exit cost more than a scalar op) is called unwrapped:
    ``interpret`` runs every step in one quiet errstate (a third less time per step on
    adi's scalar index arithmetic)."""
    params, rule = eqn.params, _BODY_RULES.get(eqn.prim.name)
    if rule is not None:
        return lambda run, operands: rule(run, operands, **params)
    impl = eqn.prim.impl_rule
    impl = getattr(impl, "without_errstate", impl)
    if eqn.prim.multiple_results:
        return lambda run, operands: impl(*operands, **params)
    return lambda run, operands: (impl(*operands, **params),)


# The rules mirror the primitives' reference implementations (ir/control_flow.py,
# ir/higher_order.py, ir/structural.py), with the sub-jaxprs run by ``run`` so that the
# interpreter can stop.
def _call(run, values, *, jaxpr, **_):
    return run(jaxpr, [], *values)


def _broadcast_view(run, values, *, shape, broadcast_dimensions):
    # The reference implementation materialises the broadcast; the reference
    # implementations never write into their operands, so a read-only view does: a
    # contraction against a broadcast matrix (doitgen's) then costs no copy of it.
    (x,) = values
    expanded = [1] * len(shape)
    for in_dim, out_dim in enumerate(broadcast_dimensions):
        expanded[out_dim] = x.shape[in_dim]
    return [np.broadcast_to(np.reshape(x, expanded), shape)]


def _cond(run, values, *, branches):
    index, *operands = values
    # Out-of-range indices clamp, as lax.switch does.
    return run(branches[int(np.clip(index, 0, len(branches) - 1))], [], *operands)


def _while(run, values, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = values[:cond_nconsts]
    body_consts = values[cond_nconsts : cond_nconsts + body_nconsts]
    carry = values[cond_nconsts + body_nconsts :]
    while run(cond_jaxpr, [], *cond_consts, *carry)[0]:
        carry = run(body_jaxpr, [], *body_consts, *carry)
    return carry


def _scan(run, values, *, jaxpr, length, reverse, num_consts, num_carry):
    consts = values[:num_consts]
    carry = values[num_consts : num_consts + num_carry]
    xs = values[num_consts + num_carry :]
    ys = [np.empty((length,) + y.shape, y.dtype) for y in jaxpr.out_avals[num_carry:]]
    for i in reversed(range(length)) if reverse else range(length):
        outs = run(jaxpr, [], *consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for stacked, y in zip(ys, outs[num_carry:], strict=True):
            stacked[i] = y
    return carry + ys


_BODY_RULES = {
    "broadcast_in_dim": _broadcast_view,
    "jit_call": _call,
    "checkpoint": _call,
    "custom_vjp_call": _call,
    "kernel": _call,
    "cond": _cond,
    "while": _while,
    "scan": _scan,
}


class TieredExecutable:
    """Interprets ``closed`` until ``compile_program()``, run in a thread, has returned.

    ``interpreted_calls`` counts the calls the interpreter answered (to the end);
    ``interrupted_calls`` those it began and handed to the compiled program when it
    became ready.
    """

    def __init__(
        self,
        closed: ClosedJaxpr,
        compile_program: Callable[[], object],
        name: str,
        compile_at_once: bool = False,
    ):
        self.closed = closed
        self.interpreted_calls = 0
        self.interrupted_calls = 0
        self._counting = threading.Lock()
        self._stoppable = not has_side_effects(closed.jaxpr)
        self._compile_program = compile_program
        self._compiled = None
        self._error: BaseException | None = None
        self._ready = threading.Event()  # the compile has finished
        self._replaced = threading.Event()  # ... and succeeded: stop interpreting
        self._thread = threading.Thread(target=self._build, name=f"numbax-compile-{name}")
        self._started = False
        if compile_at_once:
            self._start()

    def _start(self) -> None:
        with self._counting:
            if self._started:
                return
            self._started = True
        self._thread.start()

    def _build(self) -> None:
        try:
            self._compiled = self._compile_program()
            self._replaced.set()
        except BaseException as error:  # noqa: BLE001 - kept, raised by the next call
            self._error = error
        finally:
            self._ready.set()

    @property
    def compiled(self):
        """The compiled executable, None while it compiles; the compile's error if it failed."""
        if not self._ready.is_set():
            return None
        if self._error is not None:
            raise self._error
        return self._compiled

    def wait(self, timeout: float | None = None):
        """Block until the compile has finished; the compiled executable (or its error)."""
        self._start()
        self._ready.wait(timeout)
        return self.compiled

    def __call__(self, *args):
        compiled = self.compiled
        if compiled is not None:
            return compiled(*args)
        try:
            outs = interpret(self.closed, args, self._replaced if self._stoppable else None)
        except _CompiledReady:
            with self._counting:
                self.interrupted_calls += 1
            return self.compiled(*args)
        finally:
            self._start()  # an interpreter that raised still leaves the program to compile
        with self._counting:
            self.interpreted_calls += 1
        return outs
