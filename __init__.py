"""numbax: a tracing JIT compiler for NumPy-style array programs, through Numba.

>>> import numpy as np, numbax
>>> numbax.jit(lambda x: np.tanh(x) * 2.0)(np.zeros(2))
array([0., 0.])
"""

import sys as _sys

from . import debug, ir, lax, optim, tracer, tree_util
from .api import (
    checkpoint,
    clear_caches,
    cond,
    fori_loop,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jit,
    jvp,
    make_jaxpr,
    remat,
    scan,
    switch,
    value_and_grad,
    vjp,
    vmap,
    while_loop,
)
from .export import Exported, deserialize, export, load
from .ir import ClosedJaxpr, Jaxpr, ShapedArray, typecheck
from .ir.errors import (
    AxisError,
    BatchingError,
    ConcretizationError,
    ControlFlowError,
    GradientError,
    InPlaceUpdateError,
    InternalCompilerError,
    LeakedTracerError,
    MissingDependencyError,
    NumbaxError,
    NumbaxTypeError,
    NumbaxWarning,
    ProgramSizeWarning,
    RetraceWarning,
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
from .numpy_lib import nn, random
from .numpy_lib import numpy_api as numpy
from .numpy_lib import scipy_api as scipy
from .tracer import tree_api as tree
from .tracer.callbacks import ShapeDtypeStruct, pure_callback
from .tracer.lax import stop_gradient
from .tracer.pytree import (
    register_pytree_node,
    register_pytree_node_class,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from .transforms.custom_jvp import custom_jvp
from .transforms.custom_vjp import custom_vjp

# ``numbax.numpy`` cannot be a file or folder at the package root: the root is also the
# repository root, where it would shadow the real NumPy for scripts run from there.
_sys.modules[__name__ + ".numpy"] = numpy
_sys.modules[__name__ + ".nn"] = nn
_sys.modules[__name__ + ".random"] = random
# Not a file ``tree.py`` at the root either: it would shadow dm-tree's ``tree`` there.
_sys.modules[__name__ + ".tree"] = tree
# Nor ``scipy``: numbax.scipy, .linalg and .special are modules of tracer/, named here.
_sys.modules[__name__ + ".scipy"] = scipy
_sys.modules[__name__ + ".scipy.linalg"] = scipy.linalg
_sys.modules[__name__ + ".scipy.special"] = scipy.special

__version__ = "0.1.0"

__all__ = [
    "AxisError",
    "BatchingError",
    "ClosedJaxpr",
    "ConcretizationError",
    "ControlFlowError",
    "Exported",
    "GradientError",
    "InPlaceUpdateError",
    "InternalCompilerError",
    "Jaxpr",
    "LeakedTracerError",
    "MissingDependencyError",
    "NumbaxError",
    "NumbaxTypeError",
    "NumbaxWarning",
    "ProgramSizeWarning",
    "RetraceWarning",
    "ScalarOverflowError",
    "ShapeDtypeStruct",
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
    "clear_caches",
    "cond",
    "custom_jvp",
    "custom_vjp",
    "debug",
    "deserialize",
    "export",
    "fori_loop",
    "grad",
    "hessian",
    "ir",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "load",
    "make_jaxpr",
    "nn",
    "numpy",
    "random",
    "optim",
    "pure_callback",
    "register_pytree_node",
    "register_pytree_node_class",
    "remat",
    "scan",
    "scipy",
    "stop_gradient",
    "switch",
    "tracer",
    "tree",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "tree_util",
    "typecheck",
    "value_and_grad",
    "vjp",
    "vmap",
    "while_loop",
]
