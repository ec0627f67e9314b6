"""``JitFunction``: a jitted function, its dispatch cache (keyed by argument structure,
types, static values and backend), the fast path of plain arrays, write-back into the
arguments it mutates, and the jitted method bound to an instance."""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections import namedtuple

from .. import backends, compile_log, traceback_util
from ..backends import tiered as tiering
from ..backends.compile_cache import KeyedLock
from ..config import config
from ..ir import collector
from ..ir.errors import NumbaxError, StaticArgumentError, at_line, function_name
from ..ir.higher_order import jit_call_p
from ..tracer import Tracer, bind, functionalize, tree_flatten, tree_structure, tree_unflatten
from ..tracer.closure import closure_convert
from ..tracer.core import current_trace
from ..tracer.numpy_namespace import tracing_numpy
from ..tracer.promote import argument_aval
from ..tracer.source_info import user_frame_info
from .arguments import (
    Static,
    as_executable_argument,
    as_tuple,
    complete_statics,
    fast_leaves,
    fast_signature,
)
from .cache_entry import CacheEntry
from .compiling import warn_if_large
from .stages import Lowered
from .tracing import trace_to_jaxpr

CacheInfo = namedtuple("CacheInfo", ["traces", "hits", "misses", "size"])


_EVERY: weakref.WeakSet = weakref.WeakSet()  # every live JitFunction (``clear_caches``)


def clear_caches() -> None:
    """Every live jitted function forgets its traces and compiled programs."""
    for function in list(_EVERY):
        function._clear_cache()


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
        self.static_argnums, self.static_argnames = complete_statics(
            fun,
            as_tuple(static_argnums),
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
        _EVERY.add(self)

    def _clear_cache(self) -> None:
        with self._counting:
            self._cache = {}
            self._fast = {}
            self._last_key = None

    def __repr__(self) -> str:
        module = getattr(self.fun, "__module__", None)
        name = getattr(self.fun, "__qualname__", self.__name__)
        name = f"{module}.{name}" if module else name
        entries = list(self._cache.values())
        tiered = [entry.tiered for entry in entries if entry.tiered is not None]
        # A signature compiled in the background counts from the moment it is ready.
        compiled = sum(e.compiled or (e.tiered is not None and e.tiered.ready) for e in entries)
        backend = self.backend or backends.default_backend_name()
        plural = "" if compiled == 1 else "s"
        tiers = tiering.tiers_summary(tiered)  # which tier answered the calls
        signatures = f"{compiled} signature{plural} compiled{tiers}"
        return f"<numbax.jit of {name} (backend {backend}, {signatures})>"

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
        keys = [(where, Static(value)) for where, value in statics]
        if bound and 0 not in static_pos and tree_structure(args[0]).kind == "leaf":
            # A plain object is no array: it is static, the receiver of this trace.
            static_pos += (0,)
            keys.insert(0, (0, Static(args[0], by_identity=True)))
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
            signature = fast_signature(args) if not kwargs and self._fast_ok else None
            if signature is not None:
                backend_name = self.backend or backends.default_backend_name()
                entry = self._fast.get((backend_name, signature))
                if entry is not None:
                    self._count_hit()
                    executable, out_tree = entry
                    outs = executable(*fast_leaves(args))
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
        signature = None if kwargs else fast_signature(args)
        if signature is None:
            return
        leaves = fast_leaves(args)
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

    def _entry(self, call, dynamic, dyn_kwargs, key, backend_name) -> CacheEntry:
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
        with collector.paused():  # the trace's many containers (``ir.collector``)
            closed, _, out_tree, _ = trace_to_jaxpr(call, dynamic, dyn_kwargs, writes=writes)
        warn_if_large(closed, self.__name__)
        traced = None
        if config.log_compiles:
            trace_s = time.perf_counter() - start
            traced = compile_log.traced_summary(reason, trace_s, len(closed.eqns))
        self._cache[key] = entry = CacheEntry(closed, out_tree, backend_name, traced, writes)
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
