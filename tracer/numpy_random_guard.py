"""``np.random`` inside a traced function is an error, not a silently frozen constant.

Under ``jit`` a call such as ``np.random.normal(size=3)`` runs once, while tracing; its
numbers would become constants of the compiled program, the same on every call. So while
a thread is inside an abstract trace, the functions of ``numpy.random`` (the legacy
``normal``, ``rand``, ``seed``, ..., and ``default_rng``; not its classes) raise an error
that names ``numbax.random``.

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
refused, so a generator created there is caught.
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


def _refusal(name: str) -> UnsupportedFunctionError:
    return UnsupportedFunctionError(
        at_line(
            f"np.random.{name}() was called inside a traced function (jit, vmap, a loop "
            "body): it would run once, while tracing, and its numbers would be frozen into "
            "the compiled program as constants, the same on every call. Use numbax.random "
            "with an explicit key: create key = numbax.random.key(seed) outside, pass it "
            "in as an argument, draw with numbax.random.normal(key, shape) and split the "
            "key for each further draw (numbax.random.split). Or draw with NumPy outside "
            "the traced function and pass the array in.",
            user_frame_info(),
        )
    )


def _guarded(name: str, original):
    @functools.wraps(original)
    def call(*args, **kwargs):
        if getattr(_tracing, "depth", 0):
            raise _refusal(name)
        return original(*args, **kwargs)

    return call


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
