"""The interpreter: runs a jaxpr with the primitives' NumPy reference implementations.

One implementation serves as the oracle every pass and backend is tested against (the
``interpret`` backend, constant folding, the reference implementations of control flow)
and as the interpreter of a tiered ``jit`` signature's first calls
(``backends/tiered.py``). So it does nothing clever beyond two things the first calls
need:

- Each (sub-)jaxpr is laid out once per evaluation as a list of steps over numbered slots
  (``_Layout``): a loop body then runs each iteration without looking its variables up
  in a dictionary, a quarter less time per step than an environment dict (measured on
  adi and seidel-2d).
- ``should_stop`` is asked before every equation, at every loop iteration included: once
  it answers true, the evaluation raises ``Stopped`` (the tiered executable's compiled
  program is ready and answers the call instead).

Primitives that hold sub-jaxprs (``cond``, ``while``, ``scan``, the calls, ``kernel``)
register a body rule (``body_rule``) that runs them with the same ``run``, so that
every iteration can stop, and their reference implementation is that rule
(``reference_impl``). A nested ``jit_call`` is interpreted as well, never compiled.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import Jaxpr, Literal
from .primitive import Pattern
from .rules import RuleTable

# run(jaxpr, consts, *values) -> outputs: how a body rule evaluates its sub-jaxprs.
Run = Callable[..., list]

# rule(run, operands, **params) -> outputs of every primitive with sub-jaxprs, filled by
# the modules that register them (control_flow.py, higher_order.py) before registering
# the primitive (the rule is its reference implementation); the others have their impl.
BODY_RULES = RuleTable(
    "interpreter body rules", not_applicable=lambda prim: prim.pattern is not Pattern.CONTROL
)


class Stopped(Exception):
    """Raised by ``eval_jaxpr`` when its ``should_stop()`` answered true."""


def eval_jaxpr(
    jaxpr: Jaxpr, consts, *args, should_stop: Callable[[], bool] | None = None
) -> list[np.ndarray]:
    """Evaluate ``jaxpr`` on NumPy arrays. ``should_stop``, when given, is asked before
    each equation (every loop iteration included); once it answers true the evaluation
    raises ``Stopped``.

    >>> import numbax, numpy as np
    >>> from numbax.ir import eval_jaxpr
    >>> closed = numbax.make_jaxpr(lambda x: np.sin(x) * 2.0)(np.zeros(2))
    >>> eval_jaxpr(closed.jaxpr, closed.consts, np.zeros(2))
    [array([0., 0.])]
    """
    # The quiet implementations run unwrapped (``_step``) under this one errstate.
    with np.errstate(all="ignore"):
        outs = _Interpreter(should_stop).run(jaxpr, consts, *args)
    return [_writable(np.asarray(v)) for v in outs]


def body_rule(name: str, rule: Callable) -> Callable:
    """Register ``rule(run, operands, **params)`` as the interpreter's rule for the
    primitive ``name``; returns the primitive's reference implementation (the rule, run
    by an interpreter that never stops)."""
    BODY_RULES.rule(name, registered_later=True)(rule)

    def reference_impl(*operands, **params):
        with np.errstate(all="ignore"):
            outs = rule(_Interpreter(None).run, list(operands), **params)
        return [_writable(np.asarray(v)) for v in outs]

    return reference_impl


def _writable(value: np.ndarray) -> np.ndarray:
    """A result the caller owns, as the compiled program's are: a broadcast view (below)
    is read-only."""
    return value if value.flags.writeable else value.copy()


class _Interpreter:
    """One evaluation: the layouts of the jaxprs it has run, and when to stop."""

    def __init__(self, should_stop: Callable[[], bool] | None):
        self.should_stop = should_stop
        self.layouts: dict[Jaxpr, _Layout] = {}

    def run(self, jaxpr: Jaxpr, consts, *values) -> list:
        layout = self.layouts.get(jaxpr)
        if layout is None:
            layout = self.layouts[jaxpr] = _Layout(jaxpr)
        slots = [None] * layout.size
        for slot, value in zip(layout.entry, (*consts, *values), strict=True):
            slots[slot] = value
        should_stop = self.should_stop
        if should_stop is not None and should_stop():  # a loop iteration of no equations
            raise Stopped
        for step, inputs, outputs in layout.steps:
            if should_stop is not None and should_stop():
                raise Stopped
            results = step(self.run, [slots[i] if is_slot else i for is_slot, i in inputs])
            # Pinned to the recorded dtypes: NumPy returns scalars for 0-d results and may
            # widen (sums of int32), the IR may not.
            for (slot, dtype), result in zip(outputs, results, strict=True):
                slots[slot] = np.asarray(result, dtype=dtype)
        return [slots[i] if is_slot else i for is_slot, i in layout.outputs]


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
    ``eval_jaxpr`` runs every step in one quiet errstate (a third less time per step on
    adi's scalar index arithmetic)."""
    params, rule = eqn.params, BODY_RULES.get(eqn.prim)
    if rule is not None:
        return lambda run, operands: rule(run, operands, **params)
    impl = eqn.prim.impl_rule
    impl = getattr(impl, "without_errstate", impl)
    if eqn.prim.multiple_results:
        return lambda run, operands: impl(*operands, **params)
    return lambda run, operands: (impl(*operands, **params),)


def _broadcast_view(run, operands, *, shape, broadcast_dimensions):
    # The reference implementation materialises the broadcast; the reference
    # implementations never write into their operands, so a read-only view does: a
    # contraction against a broadcast matrix (doitgen's) then costs no copy of it.
    # ``eval_jaxpr`` copies such a view if it is a result (``_writable``).
    (x,) = operands
    expanded = [1] * len(shape)
    for in_dim, out_dim in enumerate(broadcast_dimensions):
        expanded[out_dim] = x.shape[in_dim]
    return [np.broadcast_to(np.reshape(x, expanded), shape)]


BODY_RULES.rule("broadcast_in_dim", registered_later=True)(_broadcast_view)
