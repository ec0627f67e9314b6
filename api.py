"""The public API: ``jit``, ``make_jaxpr`` and the transforms and control flow as entry
points whose numbax errors lose numbax's frames.

This is the layer that wires tracer, transforms, passes and backends together; the
machinery behind ``jit`` (dispatch cache, tracing, compiling, ``Lowered``) is the
subpackage ``dispatch/``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from . import traceback_util
from .dispatch.arguments import as_executable_argument
from .dispatch.compiling import LARGE_PROGRAM_EQNS, compile_closed
from .dispatch.jit_function import BoundJitMethod, CacheInfo, JitFunction
from .dispatch.stages import Compiled, Lowered
from .dispatch.tracing import make_jaxpr, trace_to_jaxpr
from .tracer import control_flow
from .tracer.closure import closure_convert
from .transforms import autodiff, jacobians
from .transforms import checkpoint as rematerialise
from .transforms import vmap as batched

__all__ = [
    "LARGE_PROGRAM_EQNS",
    "BoundJitMethod",
    "CacheInfo",
    "Compiled",
    "JitFunction",
    "Lowered",
    "as_executable_argument",
    "checkpoint",
    "clear_caches",
    "closure_convert",
    "compile_closed",
    "cond",
    "fori_loop",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "make_jaxpr",
    "remat",
    "scan",
    "switch",
    "trace_to_jaxpr",
    "value_and_grad",
    "vjp",
    "vmap",
    "while_loop",
]


def clear_caches() -> None:
    """Forget every program and kernel compiled in this process, as ``jax.clear_caches``
    does: each jitted function traces again at its next call, and each kernel is
    compiled again or, where the disk cache holds it, loaded from disk (to clear that
    too, remove its folder: ``numbax.config.cache_dir``, ``NUMBAX_CACHE_DIR``).

    >>> import numpy as np, numbax
    >>> f = numbax.jit(lambda x: x + 1.0, tiered=False)
    >>> f(np.zeros(2))
    array([1., 1.])
    >>> numbax.clear_caches()
    >>> f(np.zeros(2)), f.cache_info().traces
    (array([1., 1.]), 2)
    """
    from . import backends
    from .dispatch import jit_function

    jit_function.clear_caches()
    backends.clear_caches()


def jit(
    fun: Callable | None = None,
    *,
    static_argnums=(),
    static_argnames=(),
    backend=None,
    tiered: bool | None = None,
):
    """Compile ``fun``: trace it once per argument signature, cache, and run.

    Used as ``@numbax.jit``, ``@numbax.jit(...)`` or ``numbax.jit(fun, ...)``. A call
    flattens the arguments, looks up the compiled program of their shapes, dtypes,
    structure and static values, traces and compiles it on a miss, runs it, and writes
    back into the arguments the function mutated. ``f(x)`` equals ``fun(x)`` run with
    plain NumPy, up to floating-point reassociation.

    Arguments:

    ``fun``: the function to compile. Its arguments and results are arrays, Python
    scalars, or pytrees of them (tuples, lists, dicts, None, registered classes). Left
    out, ``jit(...)`` returns a decorator with the options below.

    >>> import numpy as np, numbax
    >>> @numbax.jit
    ... def f(x):
    ...     return np.sin(x) * 2.0
    >>> f(np.zeros(3))
    array([0., 0., 0.])

    ``static_argnums``: an int or a sequence of ints, the positions of arguments that
    are Python values rather than arrays (sizes, flags, functions). Their values are
    part of the cache key, so they must be hashable, and each new value traces and
    compiles again; Python control flow on them is allowed. A negative position counts
    from the end of the parameter list, and a static argument may be passed by position
    or by name either way.

    >>> power = numbax.jit(lambda x, n: x**n, static_argnums=1)
    >>> power(np.arange(3.0), 2)
    array([0., 1., 4.])

    ``static_argnames``: a str or a sequence of str, the same as ``static_argnums`` by
    parameter name (keyword-only parameters too).

    >>> def scaled(x, *, mode):
    ...     return x * 2.0 if mode == "double" else x
    >>> numbax.jit(scaled, static_argnames="mode")(np.ones(2), mode="double")
    array([2., 2.])

    ``backend``: ``"cpu"`` (Numba, on this machine's CPU), ``"interpret"`` (the traced
    program run with NumPy, without compiling: the reference every backend is tested
    against) or ``"cuda"`` (Numba's CUDA, on an NVIDIA GPU). ``None``, the default, is
    ``config.backend`` (``NUMBAX_BACKEND``) if set, else ``"cuda"`` where a GPU is
    visible and ``"cpu"`` otherwise.

    >>> numbax.jit(lambda x: x + 1.0, backend="interpret")(np.zeros(2))
    array([1., 1.])

    ``tiered``: whether a new signature's first calls on the cpu backend are answered by
    the interpreter while the program compiles in a background thread, which then
    answers every call (a long interpreted call is handed over at its next loop
    iteration); a script that ends does not wait for that compile. ``None``, the
    default, is ``config.tiered`` (``NUMBAX_TIERED``, on); ``False`` compiles before the
    first call returns. ``f.wait_compiled()`` blocks until every signature of ``f`` is
    compiled.

    >>> g = numbax.jit(lambda x: x * 3.0, tiered=False)
    >>> g(np.ones(2))  # compiled before it returns
    array([3., 3.])
    >>> g.cache_info().traces
    1

    The result is called as ``fun`` is. ``f.lower(*args)`` traces without running
    (``.as_text()`` is the optimised program, ``.source()`` the generated code,
    ``.compile()`` the compiled program), ``f.cache_info()`` counts traces and cache
    hits. Converting a traced value to a Python value inside ``fun`` (``if x > 0``,
    ``float(x)``) raises ``ConcretizationError``: use ``numpy.where``, ``numbax.cond``
    or a static argument; an unhashable static argument raises ``StaticArgumentError``.
    """
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            backend=backend,
            tiered=tiered,
        )
    return JitFunction(fun, static_argnums, static_argnames, backend, tiered)


# The transforms and control flow as the public API gives them: each is, or returns, an
# entry point whose numbax errors lose numbax's frames (traceback_util), like a jit call.
grad = traceback_util.transform_boundary(autodiff.grad)
value_and_grad = traceback_util.transform_boundary(autodiff.value_and_grad)
jvp = traceback_util.api_boundary(autodiff.jvp)
vjp = traceback_util.api_boundary(autodiff.vjp)
vmap = traceback_util.transform_boundary(batched.vmap)
jacfwd = traceback_util.transform_boundary(jacobians.jacfwd)
jacrev = traceback_util.transform_boundary(jacobians.jacrev)
hessian = traceback_util.transform_boundary(jacobians.hessian)
checkpoint = remat = traceback_util.transform_boundary(rematerialise.checkpoint)
cond = traceback_util.api_boundary(control_flow.cond)
switch = traceback_util.api_boundary(control_flow.switch)
while_loop = traceback_util.api_boundary(control_flow.while_loop)
fori_loop = traceback_util.api_boundary(control_flow.fori_loop)
scan = traceback_util.api_boundary(control_flow.scan)
