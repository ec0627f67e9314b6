"""The public API: ``jit`` with its dispatch cache, and ``make_jaxpr``.

This is the layer that wires tracer, transforms, passes and backends together.
"""

from __future__ import annotations

import functools
import logging
from collections import namedtuple
from collections.abc import Callable, Sequence

import numpy as np

from . import backends
from .config import config
from .ir import dtypes
from .ir.core import ClosedJaxpr, Jaxpr, ShapedArray
from .ir.errors import NumbaxTypeError, StaticArgumentError, at_line
from .ir.higher_order import jit_call_p, set_impl
from .tracer import Tracer, bind, tree_flatten, tree_unflatten
from .tracer.core import current_trace, trace_flat
from .tracer.source_info import user_frame_info

logger = logging.getLogger("numbax")

CacheInfo = namedtuple("CacheInfo", ["traces", "hits", "misses", "size"])


def _leaf_aval(leaf) -> tuple[ShapedArray, bool]:
    """The abstract value of an argument leaf, and whether it is weakly typed."""
    if isinstance(leaf, Tracer):
        return leaf.aval, False
    if isinstance(leaf, (bool, int, float)):
        # A Python scalar argument promotes like a Python scalar (NEP 50), as in JAX.
        return ShapedArray((), dtypes.result_type(leaf)), True
    try:
        array = np.asarray(leaf)
    except Exception as err:  # noqa: BLE001 - reported as a numbax error below
        raise NumbaxTypeError(f"argument of type {type(leaf).__name__} is not an array: {err}")
    if array.dtype == object:
        raise NumbaxTypeError(
            at_line(f"argument of type {type(leaf).__name__} is not an array", user_frame_info())
        )
    return ShapedArray(array.shape, array.dtype), False


def _to_array(leaf, aval: ShapedArray):
    if isinstance(leaf, np.ndarray) and leaf.dtype == aval.dtype:
        return leaf
    return np.asarray(leaf, dtype=aval.dtype)


def closure_convert(closed: ClosedJaxpr) -> tuple[Jaxpr, list]:
    """Turn constvars into leading invars, returning the jaxpr and the const values."""
    jaxpr = closed.jaxpr
    return Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.eqns, jaxpr.outvars), list(
        closed.consts
    )


def trace_to_jaxpr(fun: Callable, args: Sequence, kwargs: dict | None = None, concrete=False):
    """Trace ``fun(*args, **kwargs)`` over its pytree leaves.

    Returns ``(closed_jaxpr, in_tree, out_tree, weak_types)``.
    """
    kwargs = kwargs or {}
    leaves, in_tree = tree_flatten((tuple(args), kwargs))
    avals_weak = [_leaf_aval(leaf) for leaf in leaves]
    avals = [a for a, _ in avals_weak]
    out_tree_box = []

    def flat_fun(*tracers):
        for tracer, (_, weak) in zip(tracers, avals_weak):
            tracer.weak_type = weak
        call_args, call_kwargs = tree_unflatten(in_tree, tracers)
        out = fun(*call_args, **call_kwargs)
        out_leaves, out_tree = tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

    values = [_to_array(leaf, a) for leaf, a in zip(leaves, avals)] if concrete else None
    closed, _ = trace_flat(flat_fun, avals, values)
    return closed, in_tree, out_tree_box[0], [w for _, w in avals_weak]


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = ()):
    """Trace ``fun`` and return its closed jaxpr.

    >>> import numbax
    >>> print(numbax.make_jaxpr(lambda x, y: (x + y) * y)(2.0, 3.0))
    { lambda ; a:f64[] b:f64[]. let c:f64[] = add a b; d:f64[] = mul c b in (d,) }
    """
    static = _as_tuple(static_argnums)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        dynamic = [a for i, a in enumerate(args) if i not in static]

        def call(*dyn, **kw):
            it = iter(dyn)
            full = [args[i] if i in static else next(it) for i in range(len(args))]
            return fun(*full, **kw)

        closed, _, _, _ = trace_to_jaxpr(call, dynamic, kwargs)
        return closed

    return wrapper


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, int) else tuple(x)


class JitFunction:
    """A function compiled by ``jit``; call it like the original."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), backend=None):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = _as_tuple(static_argnums)
        self.static_argnames = tuple(
            (static_argnames,) if isinstance(static_argnames, str) else static_argnames
        )
        self.backend = backend
        self._cache: dict = {}
        self._last_key = None
        self.traces = 0
        self.hits = 0

    def cache_info(self) -> CacheInfo:
        """How often this function was traced, and how often the cache answered."""
        return CacheInfo(self.traces, self.hits, self.traces, len(self._cache))

    def _split(self, args, kwargs):
        static_pos = tuple(i % len(args) if args else i for i in self.static_argnums)
        statics = []
        for i in static_pos:
            if i >= len(args):
                raise StaticArgumentError(
                    at_line(f"static_argnums={self.static_argnums} refers to argument {i}, but "
                            f"only {len(args)} positional arguments were given",
                            user_frame_info())
                )
            statics.append((i, args[i]))
        statics += [(k, kwargs[k]) for k in self.static_argnames if k in kwargs]
        for where, value in statics:
            try:
                hash(value)
            except TypeError:
                raise StaticArgumentError(
                    at_line(
                        f"static argument {where!r} of {self.__name__} has unhashable type "
                        f"{type(value).__name__}; static arguments are cache keys. Pass a "
                        "tuple instead of a list, or make the argument dynamic.",
                        user_frame_info(),
                    )
                ) from None
        dynamic = [a for i, a in enumerate(args) if i not in static_pos]
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}

        def call(*dyn, **kw):
            it = iter(dyn)
            full = [args[i] if i in static_pos else next(it) for i in range(len(args))]
            kw.update({k: v for k, v in kwargs.items() if k in self.static_argnames})
            return self.fun(*full, **kw)

        return call, dynamic, dyn_kwargs, tuple(statics)

    def __call__(self, *args, **kwargs):
        call, dynamic, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, in_tree = tree_flatten((tuple(dynamic), dyn_kwargs))
        avals_weak = tuple(_leaf_aval(leaf) for leaf in leaves)
        backend_name = self.backend or backends.default_backend_name()
        key = (in_tree, avals_weak, statics, backend_name)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._compile(call, dynamic, dyn_kwargs, key, backend_name)
        else:
            self.hits += 1
        closed, executable, out_tree = entry
        if current_trace() is not None and any(isinstance(x, Tracer) for x in leaves):
            jaxpr, consts = closure_convert(closed)
            outs = bind(jit_call_p, *consts, *leaves, jaxpr=jaxpr, name=self.__name__)
        else:
            arrays = [_to_array(leaf, a) for leaf, (a, _) in zip(leaves, avals_weak)]
            outs = executable(*arrays)
        return tree_unflatten(out_tree, outs)

    def _compile(self, call, dynamic, dyn_kwargs, key, backend_name):
        self.traces += 1
        if config.log_compiles:
            logger.warning("numbax: tracing %s (%s)", self.__name__, self._reason(key))
        closed, _, out_tree, _ = trace_to_jaxpr(call, dynamic, dyn_kwargs)
        executable = _compile_closed(closed, backend_name, self.__name__)
        self._cache[key] = entry = (closed, executable, out_tree)
        self._last_key = key
        if config.log_compiles:
            logger.warning("numbax: %s traced to %d equations", self.__name__, len(closed.eqns))
        return entry

    def _reason(self, key) -> str:
        if self._last_key is None:
            return "first call"
        old_tree, old_avals, old_static, old_backend = self._last_key
        tree, avals, static, backend = key
        if tree != old_tree:
            return f"new argument structure {tree} (was {old_tree})"
        if avals != old_avals:
            changes = [
                f"argument {i}: {new[0].str_short()}{' (weak)' if new[1] else ''} "
                f"(was {old[0].str_short()})"
                for i, (old, new) in enumerate(zip(old_avals, avals))
                if old != new
            ]
            return "new shapes/dtypes: " + "; ".join(changes)
        if static != old_static:
            return f"new static arguments {static} (was {old_static})"
        return f"new backend {backend} (was {old_backend})"

    def lower(self, *args, **kwargs):
        """The traced program for these arguments (see ``Lowered``)."""
        call, dynamic, dyn_kwargs, _ = self._split(args, kwargs)
        closed, _, _, _ = trace_to_jaxpr(call, dynamic, dyn_kwargs)
        return Lowered(closed, self.backend or backends.default_backend_name(), self.__name__)


class Lowered:
    """A traced program before compilation: ``as_text()``, ``compile()``."""

    def __init__(self, closed: ClosedJaxpr, backend_name: str, name: str):
        self.jaxpr = closed
        self.backend_name = backend_name
        self.name = name

    def as_text(self) -> str:
        return str(self.jaxpr)

    def compile(self):
        return _compile_closed(self.jaxpr, self.backend_name, self.name)


def _compile_closed(closed: ClosedJaxpr, backend_name: str, name: str):
    return backends.get_backend(backend_name).compile(closed, name=name)


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(), backend=None):
    """Compile ``fun``: trace once per argument signature, cache, and run.

    >>> import numpy as np, numbax
    >>> @numbax.jit
    ... def f(x):
    ...     return np.sin(x) * 2.0
    >>> f(np.zeros(3))
    array([0., 0., 0.])
    """
    if fun is None:
        return functools.partial(
            jit, static_argnums=static_argnums, static_argnames=static_argnames, backend=backend
        )
    return JitFunction(fun, static_argnums, static_argnames, backend)


@functools.lru_cache(maxsize=512)
def _compiled_call(jaxpr: Jaxpr, backend_name: str):
    return _compile_closed(ClosedJaxpr(jaxpr, []), backend_name, "jit_call")


def _jit_call_impl(*args, jaxpr: Jaxpr, name: str = "jit_call"):
    return _compiled_call(jaxpr, backends.default_backend_name())(*args)


set_impl(jit_call_p, _jit_call_impl)
