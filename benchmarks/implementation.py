"""What a peer hands the runner for one workload: an `Implementation`, one row of the table."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .workloads import compile_constant

# The kernel group's first-call row that waits for compiled code (``NumbaxPeer``'s
# ``compiled_first_calls``): time to compiled code, as issue #34 asks.
COMPILED_FIRST_CALL = "numbax compiled"


class NotSupportedYet(Exception):
    """The implementation cannot run this workload yet; a row that says so, not a failure."""


class PeerUnavailable(Exception):
    """A peer library is not installed, or cannot run on this backend."""


def _identity(value):
    return value


def _no_sync(result) -> None:
    return None


def _nothing_unsupported(error: BaseException) -> str | None:
    return None


def _nothing_left() -> None:
    return None


@dataclass(frozen=True)
class Implementation:
    """One way to run a workload, with what the runner needs to feed, wait for and check it.

    `build` returns the callable (it may compile); the runner's first call of it compiles too
    where compilation is lazy. `to_device` and `to_numpy` apply to each array of the inputs
    and of the result. `unsupported_reason` tells apart an exception that means "not
    supported yet" (the reason) from a failure (None) during build and first call.
    """

    label: str
    build: Callable[[], Callable[..., Any]] | None
    to_device: Callable[[Any], Any] = _identity
    sync: Callable[[Any], None] = _no_sync
    to_numpy: Callable[[Any], Any] = _identity
    is_numbax: bool = False
    skip_reason: str | None = None
    unsupported_reason: Callable[[BaseException], str | None] = _nothing_unsupported
    # Called once the row is timed: waits for work the row left running (numbax's tiered
    # first calls compile in the background), so that it slows no later row.
    finish: Callable[[], None] = _nothing_left


def skipped(label: str, reason: str) -> Implementation:
    return Implementation(label, build=None, skip_reason=reason)


def tree_map(function: Callable[[Any], Any], tree):
    """Apply `function` to each array of a tuple/list tree (the MLP params are a tuple)."""
    if isinstance(tree, tuple | list):
        return type(tree)(tree_map(function, item) for item in tree)
    return function(tree)


def bind(program: Callable, *leading) -> Callable:
    """`program` with its leading arguments (the namespace, a grad) bound.

    A named function, not a `functools.partial`: numbax names its generated code after the
    function, and JAX reads the signature, which `partial`/`wraps` would report wrongly.
    """

    def bound(*args):
        return program(*leading, *args)

    bound.__name__ = bound.__qualname__ = program.__name__
    return bound


def fresh_compiles(compile_instance: Callable[[float], Callable]) -> Callable:
    """A callable whose every call compiles a new program instance and runs it once.

    The first call gets instance 0, the one the runner checks against NumPy.
    """
    instances = itertools.count()

    def compile_and_call(*args):
        return compile_instance(compile_constant(next(instances)))(*args)

    return compile_and_call


def first_calls(program: Callable, jit: Callable) -> Callable:
    """A callable whose every call jits a new instance of `program` and runs it once.

    Each instance is a new function object, which misses every cache keyed on the function,
    under a new name, which numbax writes into its generated module and JAX into its HLO
    module: neither finds the instance in memory or on disk, so a call is trace to result.
    """
    instances = itertools.count()

    def compile_and_call(*args):
        def instance(*inner):
            return program(*inner)

        instance.__name__ = instance.__qualname__ = f"{program.__name__}_{next(instances)}"
        return jit(instance)(*args)

    return compile_and_call
