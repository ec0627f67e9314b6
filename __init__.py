"""numbax: a tracing JIT compiler for NumPy-style array programs, through Numba.

>>> import numpy as np, numbax
>>> numbax.jit(lambda x: np.tanh(x) * 2.0)(np.zeros(2))
array([0., 0.])
"""

import sys as _sys

from . import ir, tracer
from .api import jit, make_jaxpr
from .ir import ClosedJaxpr, Jaxpr, ShapedArray, typecheck
from .ir.errors import (
    ConcretizationError,
    GradientError,
    InPlaceUpdateError,
    LeakedTracerError,
    NumbaxError,
    NumbaxTypeError,
    SerializationError,
    ShapeError,
    StaticArgumentError,
    TracerArrayConversionError,
    TypecheckError,
    UnsupportedFunctionError,
)
from .tracer import nn, numpy_api as numpy
from .tracer.lax import stop_gradient
from .tracer.pytree import (
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

# ``numbax.numpy`` cannot be a file or folder at the package root: the root is also the
# repository root, where it would shadow the real NumPy for scripts run from there.
_sys.modules[__name__ + ".numpy"] = numpy
_sys.modules[__name__ + ".nn"] = nn

__version__ = "0.1.0"

__all__ = [
    "ClosedJaxpr",
    "ConcretizationError",
    "GradientError",
    "InPlaceUpdateError",
    "Jaxpr",
    "LeakedTracerError",
    "NumbaxError",
    "NumbaxTypeError",
    "SerializationError",
    "ShapeError",
    "ShapedArray",
    "StaticArgumentError",
    "TracerArrayConversionError",
    "TypecheckError",
    "UnsupportedFunctionError",
    "ir",
    "jit",
    "make_jaxpr",
    "nn",
    "numpy",
    "register_pytree_node",
    "stop_gradient",
    "tracer",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]
