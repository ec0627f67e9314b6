"""``np.random`` inside a traced function: NumPy's numbers where they are the same on
every call, an error where a frozen constant would differ from NumPy.

Under ``jit`` a call such as ``np.random.normal(size=3)`` runs once, while tracing; its
numbers would become constants of the compiled program, the same on every call, where
NumPy's global generator gives new ones. So while a thread is inside an abstract trace,
the functions of ``numpy.random`` (the legacy ``normal``, ``rand``, ``seed``, ...; not its
classes) raise an error that names ``numbax.random``.

``np.random.default_rng(seed)`` with a fixed seed (an int or ints) is NumPy's own meaning
frozen: NumPy gives the same numbers on every call too, so it returns NumPy's generator
(fixed weights in an initialiser or a test). Drawn from inside a trace nested in the one
that created it (a loop body, ``vmap``, ``cond``, an inner ``jit``: traced once, run many
times) its draws would repeat where NumPy's advance, so that is refused. Without a seed
(fresh entropy), with a traced seed, or with a generator or bit generator from outside
(which the call advances), ``default_rng`` is refused.

The mechanism, and why: NumPy's generators are Cython methods of immutable extension
types, invisible to ``sys.setprofile`` and impossible to patch on the type, and Python
3.10/3.11 have no ``sys.monitoring``. What can change is the ``numpy.random`` module's
attributes. While at least one thread traces, they are replaced by wrappers that raise
*only in a thread that is tracing* and otherwise call the original, so other threads
running plain NumPy meanwhile are unaffected; the first trace to start installs them and
the last to end restores the originals (counted under a lock, so nested and concurrent
traces are safe).

Limits, by construction: a function bound before the trace started
(``from numpy.random import normal`` at import time, ``draw = np.random.rand``) and the
methods of a ``Generator`` or ``RandomState`` created outside the traced function are
not seen; they still freeze. ``np.random.default_rng()`` called inside the trace is
seen, so a generator created there is caught or allowed as above.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager

import numpy as np

from ..ir.errors import UnsupportedFunctionError, at_line
from .source_info import user_frame_info

_tracing = threading.local()  # .depth: abstract traces open on this thread
_install_lock = threading.Lock()
_installed_by = 0  # abstract traces open on every thread
_originals: dict[str, object] = {}


@functools.cache
def _guarded_names() -> tuple[str, ...]:
    """NumPy's public random functions; the classes stay, so ``isinstance`` still works."""
    return tuple(
        name for name in np.random.__all__ if not isinstance(getattr(np.random, name), type)
    )


def _refusal(name: str, why: str) -> UnsupportedFunctionError:
    return UnsupportedFunctionError(
        at_line(
            f"np.random.{name}() was called inside a traced function (jit, vmap, a loop "
            f"body) {why}: it would run once, while tracing, and its numbers would be "
            "frozen into the compiled program as constants, the same on every call, where "
            "NumPy's change. Use numbax.random with an explicit key: create key = "
            "numbax.random.key(seed) outside, pass it in as an argument, draw with "
            "numbax.random.normal(key, shape) and split the key for each further draw "
            "(numbax.random.split). Or draw with NumPy outside the traced function and "
            "pass the array in. (A generator created where it is drawn from, with a fixed "
            "seed, np.random.default_rng(1234), is fine: NumPy repeats its numbers too.)",
            user_frame_info(),
        )
    )


def _guarded(name: str, original):
    @functools.wraps(original)
    def call(*args, **kwargs):
        depth = getattr(_tracing, "depth", 0)
        if not depth:
            return original(*args, **kwargs)
        if name != "default_rng":
            raise _refusal(name, "and draws from NumPy's global generator")
        seed = args[0] if args else kwargs.get("seed")
        why = _unfixed_seed(seed)
        if why is not None:
            raise _refusal(name, why)
        generator = _SeededInTrace(original(seed).bit_generator)  # NumPy's checks
        generator._created_at_depth = depth
        return generator

    return call


def _unfixed_seed(seed) -> str | None:
    """Why NumPy's ``default_rng(seed)`` gives other numbers on another call, or None.
    NumPy takes nothing else than these and ints (it refuses the rest itself)."""
    from .core import Tracer  # core imports this module

    if seed is None:
        return "without a seed (NumPy seeds it from fresh entropy on every call)"
    if isinstance(seed, (np.random.Generator, np.random.BitGenerator)):
        return "on a generator from outside the traced function, which every call advances"
    if isinstance(seed, np.random.SeedSequence):
        return "with a SeedSequence, which may hold fresh entropy (seed it with an int)"
    if isinstance(seed, Tracer) or (
        isinstance(seed, (list, tuple)) and any(isinstance(s, Tracer) for s in seed)
    ):
        return "with a traced seed, whose value is known only when the program runs"
    return None


class _SeededInTrace(np.random.Generator):
    """NumPy's generator from ``default_rng(seed)`` with a fixed seed, called inside a
    trace: drawn from in a trace nested in that one it is refused (see the module)."""

    def __getattribute__(self, name):
        attribute = super().__getattribute__(name)
        if name.startswith("_") or not callable(attribute):
            return attribute
        if getattr(_tracing, "depth", 0) > super().__getattribute__("_created_at_depth"):
            raise _refusal(
                f"default_rng(...).{name}",
                "on a generator created outside the loop body, vmap, cond or inner jit that "
                "draws from it (traced once, run many times)",
            )
        return attribute


_SeededInTrace.__name__ = _SeededInTrace.__qualname__ = "Generator"  # NumPy's repr


def _install() -> None:
    for name in _guarded_names():
        _originals[name] = getattr(np.random, name)
        setattr(np.random, name, _guarded(name, _originals[name]))


def _restore() -> None:
    for name, original in _originals.items():
        setattr(np.random, name, original)
    _originals.clear()


@contextmanager
def numpy_random_refused():
    """While open, ``numpy.random``'s functions raise in this thread (see the module)."""
    global _installed_by
    with _install_lock:
        if _installed_by == 0:
            _install()
        _installed_by += 1
    _tracing.depth = getattr(_tracing, "depth", 0) + 1
    try:
        yield
    finally:
        _tracing.depth -= 1
        with _install_lock:
            _installed_by -= 1
            if _installed_by == 0:
                _restore()
