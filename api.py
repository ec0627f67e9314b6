"""The public API: ``jit`` with its dispatch cache, and ``make_jaxpr``.

This is the layer that wires tracer, transforms, passes and backends together.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import os
import threading
import time
import warnings
from collections import Counter, namedtuple
from collections.abc import Callable, Sequence

import numpy as np

from . import backends, compile_log, graph, passes, traceback_util
from .backends import tiered as tiering
from .backends.compile_cache import KeyedLock
from .backends.source import identifier
from .config import config
from .ir.core import ClosedJaxpr, Jaxpr, ShapedArray, first_source_info
from .ir.errors import (
    InternalCompilerError,
    NumbaxError,
    NumbaxTypeError,
    ProgramSizeWarning,
    ShapeError,
    StaticArgumentError,
    UnsupportedOnBackendError,
    at_line,
    function_name,
)
from .ir.graph import jaxpr_to_dot
from .ir.higher_order import jit_call_p, set_impl
from .tracer import (
    Tracer,
    bind,
    control_flow,
    functionalize,
    tree_flatten,
    tree_structure,
    tree_unflatten,
)
from .tracer.closure import closure_convert
from .tracer.core import current_trace, trace_flat
from .tracer.numpy_namespace import tracing_numpy
from .tracer.promote import argument_aval, is_device_array
from .tracer.pytree import PyTreeDef
from .tracer.source_info import user_frame_info
from .transforms import autodiff, jacobians
from .transforms import checkpoint as rematerialise
from .transforms import vmap as batched

CacheInfo = namedtuple("CacheInfo", ["traces", "hits", "misses", "size"])


def _fast_signature(args) -> tuple | None:
    """The fast path's key of positional ``args``: per argument, a NumPy array's shape and
    dtype, or a tuple of those for a tuple of arrays; None for anything else. (Loops,
    not generators: this runs on every call.)"""
    signature = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            signature.append((a.shape, a.dtype))
        elif kind is tuple:
            part = ["tuple"]
            for x in a:
                if type(x) is not np.ndarray:
                    return None
                part.append((x.shape, x.dtype))
            signature.append(tuple(part))
        else:
            return None
    return tuple(signature)


def _fast_leaves(args) -> list:
    """The arrays of arguments ``_fast_signature`` accepts, in pytree order."""
    return [x for a in args for x in (a if type(a) is tuple else (a,))]


def as_executable_argument(leaf, aval: ShapedArray, keep_device: bool = False):
    """The argument as the executable takes it: a NumPy array, or the device array
    itself when the executable runs on the device (``accepts_device_arrays``). An accepted
    ndarray subclass is passed as its base array: the executable computes NumPy's meaning."""
    if type(leaf) is np.ndarray and leaf.dtype == aval.dtype:
        return leaf
    if is_device_array(leaf):
        if keep_device:
            return leaf
        try:
            return np.asarray(leaf, dtype=aval.dtype)
        except TypeError:  # CuPy refuses implicit copies to the host
            from numba import cuda

            return cuda.as_cuda_array(leaf).copy_to_host().astype(aval.dtype, copy=False)
    return np.asarray(leaf, dtype=aval.dtype)


def trace_to_jaxpr(
    fun: Callable,
    args: Sequence,
    kwargs: dict | None = None,
    concrete=False,
    writes: list | None = None,
):
    """Trace ``fun(*args, **kwargs)`` over its pytree leaves.

    Returns ``(closed_jaxpr, in_tree, out_tree, weak_types)``. With a ``writes`` list,
    the arguments ``fun`` writes into (their leaf positions, appended to ``writes``) get
    their final values as extra outputs after those of ``out_tree``; without one, such
    a write is an error naming its line.
    """
    kwargs = kwargs or {}
    leaves, in_tree = tree_flatten((tuple(args), kwargs))
    avals_weak = [argument_aval(leaf) for leaf in leaves]
    avals = [a for a, _ in avals_weak]
    out_tree_box = []

    def flat_fun(*tracers):
        for tracer, (_, weak) in zip(tracers, avals_weak, strict=False):
            tracer.weak_type = weak
        entry_vars = [tracer._var for tracer in tracers]
        call_args, call_kwargs = tree_unflatten(in_tree, tracers)
        out = fun(*call_args, **call_kwargs)
        out_leaves, out_tree = tree_flatten(out)
        out_tree_box.append(out_tree)
        if writes is None:
            functionalize.refuse_argument_writes(tracers, entry_vars, "this trace")
            return out_leaves
        writes.extend(functionalize.written_arguments(tracers, entry_vars))
        return out_leaves + [tracers[i] for i in writes]

    values = (
        [as_executable_argument(leaf, a) for leaf, a in zip(leaves, avals, strict=False)]
        if concrete
        else None
    )
    closed, _ = trace_flat(flat_fun, avals, values)
    return closed, in_tree, out_tree_box[0], [w for _, w in avals_weak]


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = ()):
    """Trace ``fun`` and return its closed jaxpr.

    >>> import numbax
    >>> print(numbax.make_jaxpr(lambda x, y: (x + y) * y)(2.0, 3.0))
    { lambda ; a:f64[] b:f64[]. let c:f64[] = add a b; d:f64[] = mul c b in (d,) }
    """
    static = _as_tuple(static_argnums)
    traced_fun = tracing_numpy(fun)

    @traceback_util.api_boundary
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        dynamic = [a for i, a in enumerate(args) if i not in static]

        def call(*dyn, **kw):
            it = iter(dyn)
            full = [args[i] if i in static else next(it) for i in range(len(args))]
            return traced_fun(*full, **kw)

        closed, _, _, _ = trace_to_jaxpr(call, dynamic, kwargs, writes=[])
        return closed

    return wrapper


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, int) else tuple(x)


def _complete_statics(fun, argnums: tuple, argnames: tuple) -> tuple[tuple, tuple]:
    """A static parameter may be passed by position or by name, as in JAX: complete
    ``static_argnums`` and ``static_argnames`` from each other through the signature."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return argnums, argnames
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in parameters if p.kind in kinds]
    count = len(positional)
    nums = [i + count if i < 0 and -count <= i else i for i in argnums]
    names = list(argnames)
    for i in nums:
        if 0 <= i < count and positional[i].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            names.append(positional[i].name)
    nums += [k for k, p in enumerate(positional) if p.name in argnames]
    return tuple(dict.fromkeys(nums)), tuple(dict.fromkeys(names))


class _Static:
    """A static argument in a cache key: equal exactly when the traces would be. The type
    counts (2 == 2.0 and they hash alike, but an int static times an int array stays
    int), NaN equals itself (else every call with NaN retraces), -0.0 differs from 0.0
    (``1 / s`` tells them apart), recursively through tuples. A bound method's receiver
    counts by identity: the trace reads its attributes."""

    __slots__ = ("value", "_key")

    def __init__(self, value, by_identity: bool = False):
        self.value = value
        self._key = (type(value), id(value)) if by_identity else _static_key(value)

    def __eq__(self, other):
        return isinstance(other, _Static) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return repr(self.value)


def _static_key(value):
    if isinstance(value, tuple):
        return (type(value), tuple(_static_key(v) for v in value))
    if isinstance(value, (float, np.floating)):
        return (type(value), "nan" if value != value else (value, math.copysign(1.0, value)))
    if isinstance(value, (complex, np.complexfloating)):
        return (type(value), _static_key(value.real), _static_key(value.imag))
    return (type(value), value)


class _CacheEntry:
    """One traced signature of a jitted function. Compiling waits for the first concrete
    call: a function only ever traced under another transform (``grad(jit(f))``) is
    compiled as part of that transform's program instead. The first thread to call it
    compiles it; the others wait for that executable. Tiered (``jit(tiered=True)``), the
    first call starts the compile in a thread and the calls until it is ready are
    interpreted (``backends/tiered.py``)."""

    __slots__ = (
        "closed",
        "out_tree",
        "backend_name",
        "traced",
        "writes",
        "_executable",
        "_compiling",
        "tiered",
    )

    def __init__(
        self, closed: ClosedJaxpr, out_tree, backend_name: str, traced: str | None, writes=()
    ):
        self.closed, self.out_tree, self.backend_name = closed, out_tree, backend_name
        # The argument leaves the function writes into: outputs after out_tree's.
        self.writes = tuple(writes)
        self.traced = traced  # what the compile log says of the trace, until it says it
        self._executable = None
        self._compiling = threading.Lock()
        self.tiered: tiering.TieredExecutable | None = None

    def executable(self, name: str, tiered: bool = False):
        """The compiled executable; tiered, the interpreting one until it is compiled."""
        if self._executable is None:
            with self._compiling:
                if self._executable is None and self.tiered is None:
                    self._start(name, tiered)
                if self.tiered is not None and self.tiered.compiled is not None:
                    self._executable = self.tiered.compiled
        return self._executable or self.tiered

    def _start(self, name: str, tiered: bool) -> None:
        why, self.traced = self.traced or "(traced earlier)", None
        program = self.closed
        if tiered and self.backend_name in tiering.TIERED_BACKENDS:
            # The interpreter runs the program cleaned (no fusion): fewer eqns to execute;
            # the compile goes on from it (its cleanup is then at its fixed point).
            program = passes.clean(program)
        worth, reason = tiering.worth_interpreting(program, self.backend_name)
        writes = self.writes  # the last outputs: written back into these arguments
        if not (tiered and worth):
            self._executable = _compile_closed(program, self.backend_name, name, why, writes)
            return
        if config.log_compiles:
            compile_log.log_tiered(name, why, self.backend_name, reason)
        why = f"{why}, compiled in the background"
        compile_program = functools.partial(
            _compile_closed, program, self.backend_name, name, why, writes
        )
        self.tiered = tiering.TieredExecutable(program, compile_program, name, writes=writes)

    @property
    def compiled(self) -> bool:
        return self._executable is not None

    def log_trace_only(self, name: str) -> None:
        """A signature first traced inside another trace is compiled within that program."""
        if self.traced is not None:
            compile_log.log_trace_only(name, self.traced)
            self.traced = None


class JitFunction:
    """A function compiled by ``jit``; call it like the original."""

    # It cannot branch on values, so transforms trace it abstractly (transforms/tracing.py).
    needs_concrete_values = False

    def __init__(self, fun, static_argnums=(), static_argnames=(), backend=None, tiered=None):
        functools.update_wrapper(self, fun)
        # update_wrapper copies only what exists: a functools.partial has no __name__.
        self.__name__ = function_name(fun)
        self.fun = fun
        self._traced_fun = tracing_numpy(fun)  # its np.zeros(...) are traced arrays
        self.static_argnums, self.static_argnames = _complete_statics(
            fun,
            _as_tuple(static_argnums),
            (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames),
        )
        self.backend = backend
        self.tiered = tiered  # None: config.tiered
        self._cache: dict = {}
        self._tracing = KeyedLock()  # one thread traces each new signature, others wait
        self._counting = threading.Lock()
        self._last_key = None
        # signature -> (executable, out_tree or None for a single array output)
        self._fast: dict = {}
        self._fast_ok = not self.static_argnums and not self.static_argnames
        self.traces = 0
        self.hits = 0
        self._retraces = compile_log.RetraceCounter(self.__name__)

    def __repr__(self) -> str:
        module = getattr(self.fun, "__module__", None)
        name = getattr(self.fun, "__qualname__", self.__name__)
        name = f"{module}.{name}" if module else name
        compiled = sum(entry.compiled for entry in list(self._cache.values()))
        backend = self.backend or backends.default_backend_name()
        plural = "" if compiled == 1 else "s"
        return f"<numbax.jit of {name} (backend {backend}, {compiled} signature{plural} compiled)>"

    def cache_info(self) -> CacheInfo:
        """How often this function was traced, and how often the cache answered."""
        return CacheInfo(self.traces, self.hits, self.traces, len(self._cache))

    @property
    def interpreted_calls(self) -> int:
        """Calls answered by the interpreter while their signature compiled (tiered)."""
        entries = list(self._cache.values())
        return sum(e.tiered.interpreted_calls for e in entries if e.tiered is not None)

    def wait_compiled(self, timeout: float | None = None) -> None:
        """Block until every signature compiling in the background is compiled; raise
        the error of one whose compile failed (as its next call would)."""
        for entry in list(self._cache.values()):
            if entry.tiered is not None:
                entry.tiered.wait(timeout)

    def _split(self, args, kwargs, bound: bool = False):
        """The static and dynamic arguments of a call. ``bound``: ``args[0]`` is the
        instance a method was looked up on (see ``__get__``)."""
        # A static argument not given by position was given by name, or left at its default.
        static_pos = tuple(i + len(args) if i < 0 else i for i in self.static_argnums)
        statics = [(i, args[i]) for i in static_pos if i < len(args)]
        statics += [(k, kwargs[k]) for k in self.static_argnames if k in kwargs]
        keys = [(where, _Static(value)) for where, value in statics]
        if bound and 0 not in static_pos and tree_structure(args[0]).kind == "leaf":
            # A plain object is no array: it is static, the receiver of this trace.
            static_pos += (0,)
            keys.insert(0, (0, _Static(args[0], by_identity=True)))
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
            return self._traced_fun(*full, **kw)

        return call, dynamic, dyn_kwargs, tuple(keys)

    def __call__(self, *args, **kwargs):
        # An api boundary written out rather than decorated: a wrapper would cost every
        # call a frame, and a try block costs nothing until it catches.
        try:
            # Fast path: positional NumPy arrays of supported dtypes, or tuples of them (a
            # model's parameters), nothing static. The key is built without flattening a
            # pytree; a miss takes the general path.
            signature = _fast_signature(args) if not kwargs and self._fast_ok else None
            if signature is not None:
                backend_name = self.backend or backends.default_backend_name()
                entry = self._fast.get((backend_name, signature))
                if entry is not None:
                    self._count_hit()
                    executable, out_tree = entry
                    outs = executable(*_fast_leaves(args))
                    if out_tree is None or out_tree is tuple:  # one array, a tuple of arrays
                        return outs[0] if out_tree is None else tuple(outs)
                    return tree_unflatten(out_tree, outs)
            return self._call_general(args, kwargs)
        except NumbaxError as err:
            traceback_util.filter_traceback(err)
            raise

    def __get__(self, instance, owner=None):
        """A jitted function in a class body is a method, as with any decorator made by
        ``functools.wraps``: ``obj.m(x)`` calls it with ``obj`` first. An instance that is
        not a pytree is a static argument keyed by its identity, so each instance is
        traced once, reading its attributes then (pass state that changes as arguments,
        or register the class as a pytree to make its arrays dynamic)."""
        if instance is None:
            return self
        return BoundJitMethod(self, instance)

    def _call_general(self, args, kwargs, bound: bool = False):
        call, dynamic, dyn_kwargs, statics = self._split(args, kwargs, bound)
        leaves, in_tree = tree_flatten((tuple(dynamic), dyn_kwargs))
        avals_weak = tuple(argument_aval(leaf) for leaf in leaves)
        backend_name = self.backend or backends.default_backend_name()
        key = (in_tree, avals_weak, statics, backend_name)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._entry(call, dynamic, dyn_kwargs, key, backend_name)
        else:
            self._count_hit()
        closed, out_tree = entry.closed, entry.out_tree
        if entry.writes:
            functionalize.refuse_aliased_writes(leaves, entry.writes, self.__name__)
        if current_trace() is not None and any(isinstance(x, Tracer) for x in leaves):
            entry.log_trace_only(self.__name__)
            jaxpr, consts = closure_convert(closed)
            outs = bind(jit_call_p, *consts, *leaves, jaxpr=jaxpr, name=self.__name__)
            outs = functionalize.write_back_outputs(leaves, entry.writes, outs)
        else:
            tiered = config.tiered if self.tiered is None else self.tiered
            executable = entry.executable(self.__name__, tiered)
            if self._fast_ok and not entry.writes and entry.compiled:
                self._remember_fast(args, kwargs, avals_weak, backend_name, executable, out_tree)
            keep = getattr(executable, "accepts_device_arrays", False)
            arrays = [
                as_executable_argument(x, a, keep)
                for x, (a, _) in zip(leaves, avals_weak, strict=True)
            ]
            outs = functionalize.write_back_outputs(leaves, entry.writes, executable(*arrays))
        return tree_unflatten(out_tree, outs)

    def _remember_fast(self, args, kwargs, avals_weak, backend_name, executable, out_tree):
        """Enter this signature in the fast-path cache when the fast path can see it."""
        signature = None if kwargs else _fast_signature(args)
        if signature is None:
            return
        leaves = _fast_leaves(args)
        if any(a.dtype != aval.dtype for a, (aval, _) in zip(leaves, avals_weak, strict=True)):
            return
        shape = out_tree
        if out_tree.kind == "leaf":
            shape = None
        elif out_tree.kind is tuple and all(c.kind == "leaf" for c in out_tree.children):
            shape = tuple
        self._fast[(backend_name, signature)] = (executable, shape)

    def _count_hit(self) -> None:
        with self._counting:
            self.hits += 1

    def _entry(self, call, dynamic, dyn_kwargs, key, backend_name) -> _CacheEntry:
        """The cache entry of a signature not seen when the call began: traced by the first
        thread to ask, found in the cache (a hit) by those that waited for it."""
        with self._tracing(key):
            entry = self._cache.get(key)
            if entry is not None:
                self._count_hit()
                return entry
            return self._compile(call, dynamic, dyn_kwargs, key, backend_name)

    def _compile(self, call, dynamic, dyn_kwargs, key, backend_name):
        with self._counting:
            self.traces += 1
        reason, changed = compile_log.retrace_reason(self.fun, self._last_key, key)
        self._retraces.record(reason, changed)
        start = time.perf_counter()
        writes = []
        closed, _, out_tree, _ = trace_to_jaxpr(call, dynamic, dyn_kwargs, writes=writes)
        _warn_if_large(closed, self.__name__)
        traced = None
        if config.log_compiles:
            trace_s = time.perf_counter() - start
            traced = compile_log.traced_summary(reason, trace_s, len(closed.eqns))
        self._cache[key] = entry = _CacheEntry(closed, out_tree, backend_name, traced, writes)
        self._last_key = key
        return entry

    @traceback_util.api_boundary
    def lower(self, *args, **kwargs):
        """The traced program for these arguments (see ``Lowered``)."""
        return self._lower(args, kwargs)

    def _lower(self, args, kwargs, bound: bool = False):
        call, dynamic, dyn_kwargs, _ = self._split(args, kwargs, bound)
        writes = []
        closed, in_tree, out_tree, _ = trace_to_jaxpr(call, dynamic, dyn_kwargs, writes=writes)
        backend_name = self.backend or backends.default_backend_name()
        return Lowered(closed, backend_name, self.__name__, in_tree, out_tree, tuple(writes))


traceback_util.register_boundary(JitFunction.__call__.__code__)


# A traced program with more equations than this gets a ProgramSizeWarning: compile time
# grows with the program, and a Python loop over range(n) is unrolled n times.
LARGE_PROGRAM_EQNS = 5000


def _warn_if_large(closed: ClosedJaxpr, name: str) -> None:
    count = len(closed.eqns)
    if count <= LARGE_PROGRAM_EQNS:
        return
    line, made = Counter(e.source_info for e in closed.eqns).most_common(1)[0]
    warnings.warn(
        at_line(
            f"{name}: the traced program has {count} operations ({made} of them from the "
            "line below), so compiling it takes long. A Python loop is unrolled while "
            "tracing, once per iteration: write it with numbax.fori_loop(lower, upper, "
            "body, carry) or numbax.scan, which keep the loop one operation",
            line,
        ),
        ProgramSizeWarning,
        stacklevel=4,
    )


class BoundJitMethod:
    """A jitted method bound to an instance (``obj.m``); calls, ``lower`` and the
    counters are those of the class's ``JitFunction``, with ``obj`` as first argument."""

    def __init__(self, function: JitFunction, instance):
        self.__func__, self.__self__ = function, instance

    @traceback_util.api_boundary
    def __call__(self, *args, **kwargs):
        return self.__func__._call_general((self.__self__, *args), kwargs, bound=True)

    @traceback_util.api_boundary
    def lower(self, *args, **kwargs):
        return self.__func__._lower((self.__self__, *args), kwargs, bound=True)

    def __getattr__(self, name):
        return getattr(self.__func__, name)


class Lowered:
    """A traced program before compilation.

    ``jaxpr`` is the program as traced; ``as_text()`` prints it optimised and fused into
    kernels (``fused``), ``pass_log`` says what each pass changed, ``memory_plan`` how
    intermediates share buffers, ``dump_passes(dir)`` writes the IR after every pass.
    ``compile()`` gives a ``Compiled``, called as the function is (static arguments left
    out) and returning the function's output structure.
    """

    def __init__(
        self,
        closed: ClosedJaxpr,
        backend_name: str,
        name: str,
        in_tree: PyTreeDef | None = None,
        out_tree: PyTreeDef | None = None,
        writes: tuple[int, ...] = (),
    ):
        self.jaxpr = closed
        self.backend_name = backend_name
        self.name = name
        # The structure of (dynamic args, kwargs) and of the result; the argument leaves
        # the function writes into (their final values are outputs after out_tree's).
        self.in_tree, self.out_tree, self.writes = in_tree, out_tree, writes
        self._optimized = None

    def _optimize(self):
        if self._optimized is None:
            self._optimized = passes.optimize(self.jaxpr, name=self.name)
        return self._optimized

    @property
    def fused(self) -> ClosedJaxpr:
        return self._optimize()[0]

    @property
    def pass_log(self) -> passes.PassLog:
        return self._optimize()[1]

    @property
    def memory_plan(self) -> passes.MemoryPlan:
        return self.pass_log.memory_plan

    def dump_passes(self, directory: str) -> None:
        passes.optimize(self.jaxpr, dump_dir=directory, name=self.name)

    def as_text(self) -> str:
        return str(self.fused)

    def as_dot(self, optimized: bool = True) -> str:
        """The program as a Graphviz DOT graph: the fused one with its kernels as
        clusters, or with ``optimized=False`` the jaxpr as traced (see ir/graph.py)."""
        program, stage = (self.fused, "fused") if optimized else (self.jaxpr, "traced")
        return jaxpr_to_dot(program, name=self.name, title=f"{self.name} ({stage})")

    def as_svg(self, optimized: bool = True) -> str:
        """``as_dot`` drawn by Graphviz (needs ``pip install graphviz`` and ``dot``)."""
        return graph.render_svg(self.as_dot(optimized))

    def source(self) -> str:
        """The program the backend generates for this, not compiled: the Python module
        that Numba would compile (``cpu``), or the kernels' module (``cuda``)."""
        backend = backends.get_backend(self.backend_name)
        if not hasattr(backend, "lower"):
            raise UnsupportedOnBackendError(
                f"the {self.backend_name} backend runs the jaxpr as traced and generates no "
                "source; lower with backend='cpu' or 'cuda' to see generated code."
            )
        return backend.lower(self.jaxpr, self.name).source

    def compile(self) -> Compiled:
        executable = _compile_closed(self.jaxpr, self.backend_name, self.name, writes=self.writes)
        return Compiled(executable, self)


class Compiled:
    """A compiled program, from ``jit(f).lower(*args).compile()``.

    Called with arguments of the types it was lowered for (the static ones left out, as
    in JAX), it returns ``f``'s output structure and writes back into the arguments ``f``
    writes into, as the jitted function does. ``executable`` is the backend's program;
    its attributes (``source``, ``compile_stats``, ...) are read through this object.

    >>> import numpy as np, numbax
    >>> f = numbax.jit(lambda x, n: {"y": x * n}, static_argnums=1, backend="interpret")
    >>> f.lower(np.ones(2), 3).compile()(np.arange(2.0))
    {'y': array([0., 3.])}
    """

    def __init__(self, executable, lowered: Lowered):
        self.executable = executable
        self.lowered = lowered

    def __call__(self, *args, **kwargs):
        lowered = self.lowered
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != lowered.in_tree:
            raise NumbaxTypeError(
                at_line(
                    f"compiled {lowered.name} was lowered for arguments {lowered.in_tree}, "
                    f"got {in_tree} (the static arguments are left out of the call); lower "
                    "it again for these arguments",
                    user_frame_info(),
                )
            )
        avals = lowered.jaxpr.jaxpr.in_avals
        for k, (leaf, expected) in enumerate(zip(leaves, avals, strict=True)):
            aval, _ = argument_aval(leaf)
            if aval != expected:
                error = ShapeError if aval.shape != expected.shape else NumbaxTypeError
                raise error(
                    at_line(
                        f"compiled {lowered.name} was lowered for argument leaf {k} of type "
                        f"{expected.str_short()}, got {aval.str_short()}; lower it again for "
                        "these arguments, or call the jitted function, which compiles per type",
                        user_frame_info(),
                    )
                )
        if lowered.writes:
            functionalize.refuse_aliased_writes(leaves, lowered.writes, lowered.name)
        keep = getattr(self.executable, "accepts_device_arrays", False)
        arrays = [as_executable_argument(x, a, keep) for x, a in zip(leaves, avals, strict=True)]
        outs = functionalize.write_back_outputs(leaves, lowered.writes, self.executable(*arrays))
        return tree_unflatten(lowered.out_tree, outs)

    def __getattr__(self, name):
        return getattr(self.executable, name)


def _compile_closed(
    closed: ClosedJaxpr,
    backend_name: str,
    name: str,
    why: str = "(lowered)",
    writes: tuple[int, ...] = (),
):
    """``why``: what the compile log says of the trace this program came from;
    ``writes``: the arguments the caller writes the last outputs into, in order (no
    result shares memory it should not: ``backends/results.py``)."""
    backend = backends.get_backend(backend_name)
    try:
        executable = backend.compile(closed, name=name, writes=writes)
    except (NumbaxError, MemoryError, ImportError):  # ImportError: what the machine lacks
        raise
    except Exception as error:  # noqa: BLE001 - a backend failing on numbax's own program
        raise _internal_error(closed, backend_name, name, error) from error
    if config.log_compiles:
        compile_log.log_compile(name, why, backend_name, executable)
    if config.dump_dir and hasattr(executable, "source"):
        _dump_source(config.dump_dir, name, backend_name, executable.source)
    return executable


def _internal_error(closed: ClosedJaxpr, backend_name: str, name: str, error: Exception):
    """The clear error for a backend that failed on the program numbax generated."""
    # Numba's first line names only the stage that failed: the two after it say what.
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    failure = f"{type(error).__name__}: {' '.join(lines[:3])}"[:300]
    traced_at = first_source_info(closed.jaxpr.eqns)
    return InternalCompilerError(
        at_line(
            f"numbax failed to compile {name!r} on the {backend_name} backend ({failure}). "
            "The program traced correctly: this is a bug in numbax, not in your code; "
            "please report it with the program (`f.lower(*args).source()` shows the code "
            "generated for it). Until then jit(..., backend='interpret') runs it.",
            traced_at,
        )
    )


def _dump_source(directory: str, name: str, backend_name: str, source: str) -> None:
    """Beside the passes' dumps: one file per distinct program, named after its function."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:8]
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{identifier(name)}_{backend_name}_{digest}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)


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


_COMPILING_CALL = KeyedLock()


def _compiled_call(jaxpr: Jaxpr, backend_name: str):
    # lru_cache alone would let threads that miss together each compile the jaxpr.
    with _COMPILING_CALL((jaxpr, backend_name)):
        return _cached_call(jaxpr, backend_name)


@functools.lru_cache(maxsize=512)
def _cached_call(jaxpr: Jaxpr, backend_name: str):
    return _compile_closed(ClosedJaxpr(jaxpr, []), backend_name, "jit_call", "(eager call)")


def _jit_call_impl(*args, jaxpr: Jaxpr, name: str = "jit_call"):
    outs = _compiled_call(jaxpr, backends.default_backend_name())(*args)
    # An eager call computes on the host: results on the device come back as NumPy arrays.
    return [np.asarray(out) if is_device_array(out) else out for out in outs]


set_impl(jit_call_p, _jit_call_impl)
