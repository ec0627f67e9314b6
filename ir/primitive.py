"""The primitive registry.

A ``Primitive`` is a name plus the three things every stage of the pipeline reads:
its shape/dtype rule (``abstract_eval``), its NumPy reference implementation (``impl``,
the oracle) and its pattern class (what fusion may do with it). Transforms, passes and
backends keep their own per-primitive tables, keyed by the same objects: each an
``ir.rules.RuleTable``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from .core import ShapedArray
from .errors import TypecheckError


class Pattern(str, Enum):
    ELEMENTWISE = "elementwise"
    BROADCAST = "broadcast"
    INJECTIVE = "injective"
    REDUCTION = "reduction"
    CONTRACTION = "contraction"
    OPAQUE = "opaque"
    CONTROL = "control"  # holds sub-jaxprs: jit_call, cond, while, scan, kernel, ...


class Primitive:
    """A primitive operation of the IR."""

    def __init__(
        self,
        name: str,
        pattern: Pattern,
        *,
        multiple_results: bool = False,
        differentiable: bool = True,
        expensive: bool = False,
        side_effects: bool = False,
    ):
        self.name = name
        self.pattern = pattern
        self.multiple_results = multiple_results
        # A non-differentiable primitive contributes a zero cotangent (argmax, floor, ...).
        self.differentiable = differentiable
        # Fusion never duplicates an expensive producer into several consumers.
        self.expensive = expensive
        # An effect (printing) is part of the meaning: passes never drop, merge, fold,
        # hoist or reorder such an equation, even when nothing reads its outputs.
        self.side_effects = side_effects
        self.shape_rule: Callable | None = None
        self.impl_rule: Callable | None = None

    def abstract_eval(self, *avals: ShapedArray, **params) -> list[ShapedArray]:
        out = self.shape_rule(*avals, **params)
        return list(out) if self.multiple_results else [out]

    def impl(self, *args, **params) -> list:
        out = self.impl_rule(*args, **params)
        return list(out) if self.multiple_results else [out]

    def __repr__(self):
        return self.name


PRIMITIVES: dict[str, Primitive] = {}


def register(
    name: str,
    pattern: Pattern,
    shape_rule: Callable,
    impl: Callable,
    **flags,
) -> Primitive:
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name!r} is already registered")
    prim = Primitive(name, pattern, **flags)
    prim.shape_rule = shape_rule
    prim.impl_rule = impl
    PRIMITIVES[name] = prim
    return prim


def has_side_effects(eqn) -> bool:
    """Whether running ``eqn`` does more than compute its outputs: its primitive has side
    effects, or an equation of one of its sub-jaxprs (a loop body that prints) does."""
    if eqn.prim.side_effects:
        return True
    return any(has_side_effects(inner) for sub in eqn.bodies for inner in sub.eqns)


def get(name: str) -> Primitive:
    return PRIMITIVES[name]


def check(condition: bool, prim: str, message: str | Callable[[], str]) -> None:
    """Raise a typecheck error for a rule violation inside a shape rule. A message that
    formats values is a function, called only on a violation: the rules run for every
    equation traced or rewritten, and formatting shapes and dtypes cost more than the
    rules themselves."""
    if not condition:
        raise TypecheckError(f"{prim}: {message() if callable(message) else message}")
