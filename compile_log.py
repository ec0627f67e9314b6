"""Why a jitted function traced, what compiling it cost, and a warning when it keeps
retracing.

``NUMBAX_LOG_COMPILES=1`` logs one line per compile (logger ``numbax``, level WARNING so
it shows without any logging set up)::

    numbax: step (retracing: new shapes/dtypes: x: f64[5] (was f64[4])): tracing 0.4 ms
    (12 eqns); cpu: optimise 2.1 ms, codegen 0.6 ms, backend 402.3 ms (disk cache miss,
    compiled)

A tiered first call (``jit(tiered=True)``, the default) logs a line saying that it runs
interpreted; the compile's own line follows when the background thread has compiled it.
A signature traced only inside another transform's trace (``grad(jit(f))``) is compiled
as part of that program: its line says so. After ``RETRACE_WARNING_AFTER`` retraces a
function gets one ``RetraceWarning`` naming the argument that keeps changing.

The keys read here are ``JitFunction``'s dispatch-cache keys: ``(in_tree, avals_weak,
statics, backend_name)``, ``in_tree`` the tree of ``(dynamic positional args, dynamic
keyword args)`` and ``statics`` pairs of (position or name, value).
"""

from __future__ import annotations

import inspect
import itertools
import logging
import warnings
from collections import Counter

from .ir.errors import RetraceWarning
from .traceback_util import user_stacklevel

logger = logging.getLogger("numbax")

RETRACE_WARNING_AFTER = 10


def retrace_reason(fun, old_key, key) -> tuple[str, tuple[str, ...]]:
    """Why ``key`` traced again after ``old_key`` (None: the first trace), and the names
    of the arguments whose change it was."""
    if old_key is None:
        return "first call", ()
    old_tree, old_avals, old_static, old_backend = old_key
    tree, avals, static, backend = key
    if tree != old_tree:
        return f"new argument structure {tree} (was {old_tree})", ("the argument structure",)
    if avals != old_avals:
        names = leaf_names(fun, key)
        changed = [
            (names[i], old, new)
            for i, (old, new) in enumerate(zip(old_avals, avals, strict=True))
            if old != new
        ]
        text = "; ".join(f"{n}: {_aval(new)} (was {_aval(old)})" for n, old, new in changed)
        return f"new shapes/dtypes: {text}", tuple(n for n, _, _ in changed)
    if static != old_static:
        parameters = _positional_parameters(fun)
        old_values = dict(old_static)
        changed = [where for where, value in static if old_values.get(where) != value]
        shown = [_parameter(where, parameters) for where in changed]
        text = ", ".join(
            f"{name}={dict(static)[where]!r} (was {old_values.get(where)!r})"
            for name, where in zip(shown, changed, strict=True)
        )
        return f"new static arguments {text}", tuple(shown)
    return f"new backend {backend} (was {old_backend})", ("the backend",)


def leaf_names(fun, key) -> list[str]:
    """The parameter each dynamic leaf of a call belongs to: ``x``, ``params['w']``."""
    tree, _, statics, _ = key
    positional, keywords = tree.children
    static_positions = {where for where, _ in statics if isinstance(where, int)}
    parameters = _positional_parameters(fun)
    positions = (i for i in itertools.count() if i not in static_positions)
    names = []
    for child, position in zip(positional.children, positions, strict=False):
        names += _paths(_parameter(position, parameters), child)
    for keyword, child in zip(keywords.aux, keywords.children, strict=True):
        names += _paths(keyword, child)
    return names


def _paths(name: str, tree) -> list[str]:
    if tree.kind == "leaf":
        return [name]
    keys = tree.aux if tree.kind is dict else range(len(tree.children))
    return [
        p for k, c in zip(keys, tree.children, strict=True) for p in _paths(f"{name}[{k!r}]", c)
    ]


def _positional_parameters(fun) -> list[str]:
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in kinds]


def _parameter(where, parameters: list[str]) -> str:
    if isinstance(where, str):
        return where
    return parameters[where] if where < len(parameters) else f"argument {where}"


def _aval(aval_weak) -> str:
    aval, weak = aval_weak
    return aval.str_short() + (" (weak)" if weak else "")


class RetraceCounter:
    """What made one function retrace, counted; warns once when it has retraced
    ``RETRACE_WARNING_AFTER`` times."""

    def __init__(self, name: str):
        self.name = name
        self.retraces = 0
        self.changed: Counter = Counter()

    def record(self, reason: str, changed: tuple[str, ...]) -> None:
        if not changed:  # the first trace
            return
        self.retraces += 1
        self.changed.update(changed)
        if self.retraces == RETRACE_WARNING_AFTER:
            culprit, _ = self.changed.most_common(1)[0]
            warnings.warn(
                f"numbax: {self.name} has been retraced {self.retraces} times because "
                f"{culprit} keeps changing (last: {reason}). Each new shape, dtype or static "
                "value traces and compiles the function again: give the argument a few fixed "
                "shapes (pad or bucket it), or pass a changing static argument as an array.",
                RetraceWarning,
                stacklevel=user_stacklevel(),
            )


def log_trace_only(name: str, traced: str) -> None:
    logger.warning("numbax: %s %s; compiled within the enclosing program", name, traced)


def log_tiered(name: str, why: str, backend_name: str, reason: str) -> None:
    """A first call answered by the interpreter while the program compiles (its own line
    follows, from the compiling thread, saying ``in the background``)."""
    logger.warning(
        "numbax: %s %s; %s: interpreting (%s) while it compiles in the background",
        name,
        why,
        backend_name,
        reason,
    )


def log_compile(name: str, why: str, backend_name: str, executable) -> None:
    """``why``: ``traced_summary``'s text, or why a program traced earlier compiles now."""
    stats = getattr(executable, "compile_stats", None)
    cost = str(stats) if stats is not None else "nothing to compile"
    logger.warning("numbax: %s %s; %s: %s", name, why, backend_name, cost)


def traced_summary(reason: str, trace_s: float, eqns: int) -> str:
    """``(reason): tracing 0.4 ms (12 eqns)``, the part of a line the trace tells."""
    why = reason if reason == "first call" else f"retracing: {reason}"
    plural = "" if eqns == 1 else "s"
    return f"({why}): tracing {trace_s * 1e3:.1f} ms ({eqns} eqn{plural})"
