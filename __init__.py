"""numbax: a tracing JIT compiler for NumPy-style array programs, through Numba.

>>> import numpy as np, numbax
>>> numbax.jit(lambda x: np.tanh(x) * 2.0)(np.zeros(2))
array([0., 0.])
"""

import sys as _sys

from . import ir, lax, tracer
from .api import jit, make_jaxpr
from .ir import ClosedJaxpr, Jaxpr, ShapedArray, typecheck
from .ir.errors import (
    AxisError,
    BatchingError,
    ConcretizationError,
    ControlFlowError,
    GradientError,
    InPlaceUpdateError,
    LeakedTracerError,
    NumbaxError,
    NumbaxTypeError,
    ScalarOverflowError,
    SerializationError,
    ShapeError,
    StaticArgumentError,
    TracerArrayConversionError,
    TypecheckError,
    UnsupportedAttributeError,
    UnsupportedFunctionError,
    UnsupportedOnBackendError,
)
from .tracer import nn
from .tracer import numpy_api as numpy
from .tracer.control_flow import cond, fori_loop, scan, switch, while_loop
from .tracer.lax import stop_gradient
from .tracer.pytree import (
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from .transforms.autodiff import grad, jvp, value_and_grad, vjp
from .transforms.checkpoint import checkpoint, remat
from .transforms.custom_vjp import custom_vjp
from .transforms.jacobians import hessian, jacfwd, jacrev
from .transforms.vmap import vmap

# ``numbax.numpy`` cannot be a file or folder at the package root: the root is also the
# repository root, where it would shadow the real NumPy for scripts run from there.
_sys.modules[__name__ + ".numpy"] = numpy
_sys.modules[__name__ + ".nn"] = nn

__version__ = "0.1.0"

__all__ = [
    "AxisError",
    "BatchingError",
    "ClosedJaxpr",
    "ConcretizationError",
    "ControlFlowError",
    "GradientError",
    "InPlaceUpdateError",
    "Jaxpr",
    "LeakedTracerError",
    "NumbaxError",
    "NumbaxTypeError",
    "ScalarOverflowError",
    "SerializationError",
    "ShapeError",
    "ShapedArray",
    "StaticArgumentError",
    "TracerArrayConversionError",
    "TypecheckError",
    "UnsupportedAttributeError",
    "UnsupportedFunctionError",
    "UnsupportedOnBackendError",
    "checkpoint",
    "cond",
    "custom_vjp",
    "fori_loop",
    "grad",
    "hessian",
    "ir",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "make_jaxpr",
    "nn",
    "numpy",
    "register_pytree_node",
    "remat",
    "scan",
    "stop_gradient",
    "switch",
    "tracer",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "typecheck",
    "value_and_grad",
    "vjp",
    "vmap",
    "while_loop",
]
