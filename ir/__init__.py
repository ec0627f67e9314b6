"""The IR: dtypes, abstract values, jaxprs, the primitive registry and its oracle."""

from . import (  # noqa: F401
    callbacks,
    complex,
    control_flow,
    dtypes,
    elementwise,
    fft,
    higher_order,
    linalg,
    reductions,
    sorting,
    structural,
    threefry,
)
from .core import Atom, ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var, aval_of
from .interpret import eval_jaxpr
from .primitive import PRIMITIVES, Pattern, Primitive
from .printer import pp_jaxpr
from .serialize import dumps, loads
from .typecheck import typecheck

__all__ = [
    "Atom",
    "ClosedJaxpr",
    "Eqn",
    "Jaxpr",
    "Literal",
    "PRIMITIVES",
    "Pattern",
    "Primitive",
    "ShapedArray",
    "Var",
    "aval_of",
    "dtypes",
    "dumps",
    "eval_jaxpr",
    "loads",
    "pp_jaxpr",
    "typecheck",
]
