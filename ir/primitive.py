"""The primitive registry.

A ``Primitive`` is a name plus the three things every stage of the pipeline reads:
its shape/dtype rule (``abstract_eval``), its NumPy reference implementation (``impl``,
the oracle) and its pattern class (what fusion may do with it). Transforms and
backends keep their own per-primitive tables, keyed by the same objects.
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
    ):
        self.name = name
        self.pattern = pattern
        self.multiple_results = multiple_results
        # A non-differentiable primitive contributes a zero cotangent (argmax, floor, ...).
        self.differentiable = differentiable
        # Fusion never duplicates an expensive producer into several consumers.
        self.expensive = expensive
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


def get(name: str) -> Primitive:
    return PRIMITIVES[name]


def check(condition: bool, prim: str, message: str) -> None:
    """Raise a typecheck error for a rule violation inside a shape rule."""
    if not condition:
        raise TypecheckError(f"{prim}: {message}")
