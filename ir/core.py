"""The IR: abstract values, variables, equations and jaxprs.

A ``Jaxpr`` is a typed SSA program in the style of JAX's: constvars and invars, a list
of equations ``outputs = prim[params] inputs``, and outvars. Variables are compared by
identity; their printed names are assigned by the printer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes


class ShapedArray:
    """The abstract value of an array: a static shape and a dtype; ``size`` (elements) and
    ``nbytes``, as NumPy's arrays have them."""

    # Never changed once made, so the size and bytes are counted once: the fusion pass
    # reads them for every pair of kernels it weighs.
    __slots__ = ("shape", "dtype", "size", "nbytes")

    def __init__(self, shape, dtype):
        self.shape = tuple(map(int, shape))
        self.dtype = dtypes.canonicalize(dtype)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def update(self, shape=None, dtype=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape, dtype or self.dtype)

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return (
            isinstance(other, ShapedArray)
            and self.shape == other.shape
            and self.dtype == other.dtype
        )

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"


def aval_of(value) -> ShapedArray:
    """The abstract value of a concrete array or Python scalar."""
    if isinstance(value, bool):
        return ShapedArray((), dtypes.bool_)
    if isinstance(value, int):
        return ShapedArray((), dtypes.int64)
    if isinstance(value, float):
        return ShapedArray((), dtypes.float64)
    value = np.asarray(value)
    return ShapedArray(value.shape, value.dtype)


class Var:
    """An SSA variable. Identity is the variable; ``aval`` is its type."""

    __slots__ = ("aval", "suffix")

    def __init__(self, aval: ShapedArray, suffix: str = ""):
        self.aval = aval
        self.suffix = suffix

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in an equation (``mul a 2.0:f32[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, dtype):
        dtype = dtypes.canonicalize(dtype)
        self.val = np.asarray(val, dtype=dtype)
        if self.val.shape != ():
            raise ValueError("a Literal holds a scalar; put arrays in constvars")
        self.aval = ShapedArray((), dtype)

    def __repr__(self):
        return f"Literal({self.val.item()!r}:{self.aval.str_short()})"


Atom = Var | Literal


@dataclass(eq=False)
class Eqn:
    """``outputs = prim[params] inputs``, remembering the user's line that made it."""

    prim: Any  # ir.primitive.Primitive
    inputs: list[Atom]
    outputs: list[Var]
    params: dict[str, Any]
    source_info: str | None = None

    def replace(self, **changes) -> Eqn:
        fields = dict(
            prim=self.prim,
            inputs=self.inputs,
            outputs=self.outputs,
            params=self.params,
            source_info=self.source_info,
        )
        fields.update(changes)
        eqn = Eqn(**fields)
        if "params" not in changes and "bodies" in self.__dict__:
            eqn.__dict__["bodies"] = self.bodies  # found in the same params
        return eqn

    @functools.cached_property
    def bodies(self) -> tuple[Jaxpr, ...]:
        """The jaxprs in ``params`` (a loop's body, a cond's branches, a kernel's body),
        found once: an equation's params are not changed once it is built, and every
        pass asks this of every equation, most of which hold none."""
        return tuple(jaxprs_in(self.params.values()))


def jaxprs_in(values) -> Iterator[Jaxpr]:
    """The jaxprs among ``values`` and in their tuples (an equation's bodies, given its
    params' values)."""
    for value in values:
        if isinstance(value, Jaxpr):
            yield value
        elif isinstance(value, tuple):
            yield from jaxprs_in(value)


def first_source_info(eqns) -> str | None:
    """The user's line of the first of ``eqns`` that has one (where a group of them began)."""
    return next((e.source_info for e in eqns if e.source_info), None)


@dataclass(eq=False)
class Jaxpr:
    constvars: list[Var]
    invars: list[Var]
    eqns: list[Eqn]
    outvars: list[Atom]

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self):
        from .printer import pp_jaxpr

        return pp_jaxpr(self)


@dataclass(eq=False)
class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    jaxpr: Jaxpr
    consts: list[Any] = field(default_factory=list)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.jaxpr.out_avals

    @property
    def eqns(self) -> list[Eqn]:
        return self.jaxpr.eqns

    def __str__(self):
        from .printer import pp_jaxpr

        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__
