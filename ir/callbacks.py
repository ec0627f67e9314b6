"""Calls from a program back into Python: ``debug_callback`` and ``pure_callback``.

The Python function is not a param (params are plain data every stage can print,
compare and hash): it sits in ``CALLBACKS`` and the eqn carries its integer id. Every
backend calls it through the table at run time (the cpu backend from inside its
compiled program, the cuda backend from its host runner, the interpreter through the
reference implementation below), so a program loaded from the compile cache calls the
function this process registered under that id: the id is part of the generated
source, which this process generated.

  debug_callback  (*operands) -> ()        [callback]                 has side effects
  pure_callback   (*operands) -> results   [callback, result_avals]   pure

``debug_callback`` returns nothing, so only its side-effect flag keeps it alive and in
order. ``pure_callback``'s function returns exactly ``result_avals`` (the front end wraps
the user's function so it does: ``tracer/callbacks.py``); being pure, it may be merged,
dropped when unread, or folded like any other primitive.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .core import ShapedArray
from .primitive import Pattern, check, register

# Registered functions are kept for the life of the process: compiled programs (in
# memory and in the compile cache) name them by id.
CALLBACKS: list[Callable] = []
_REGISTERING = threading.Lock()


def register_callback(fn: Callable) -> int:
    """The id under which programs call ``fn``."""
    with _REGISTERING:
        CALLBACKS.append(fn)
        return len(CALLBACKS) - 1


def call(callback: int, *args):
    """Run callback ``callback`` on concrete arrays; what it returns."""
    return CALLBACKS[callback](*args)


def _check_callback(name: str, callback) -> None:
    check(
        type(callback) is int and 0 <= callback < len(CALLBACKS),
        name,
        f"callback {callback!r} is not a registered callback id",
    )


def _debug_callback_rule(*avals: ShapedArray, callback: int):
    _check_callback("debug_callback", callback)
    return []


def _debug_callback_impl(*args, callback: int):
    call(callback, *args)
    return []


debug_callback_p = register(
    "debug_callback",
    Pattern.OPAQUE,
    _debug_callback_rule,
    _debug_callback_impl,
    multiple_results=True,
    differentiable=False,  # a derivative passes by: the primal is printed, tangents are not
    side_effects=True,
)


def _pure_callback_rule(*avals: ShapedArray, callback: int, result_avals: tuple):
    _check_callback("pure_callback", callback)
    check(
        isinstance(result_avals, tuple) and all(isinstance(a, ShapedArray) for a in result_avals),
        "pure_callback",
        "result_avals must be a tuple of ShapedArray",
    )
    return list(result_avals)


def _pure_callback_impl(*args, callback: int, result_avals: tuple):
    return list(call(callback, *args))


pure_callback_p = register(
    "pure_callback",
    Pattern.OPAQUE,
    _pure_callback_rule,
    _pure_callback_impl,
    multiple_results=True,
    expensive=True,  # a call into Python: never duplicated into several consumers
)
