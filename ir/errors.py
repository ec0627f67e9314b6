"""Every error numbax raises, in one place.

Each message names the operation, the user's file:line and the fix. The classes are
re-exported from ``numbax``; they subclass the built-in exception a Python user
would expect (``TypeError``, ``ValueError``) so existing ``except`` clauses still work.
"""

from __future__ import annotations

import numpy as np


class NumbaxError(Exception):
    """Base class of every numbax error."""


class NumbaxTypeError(NumbaxError, TypeError):
    """A value of the wrong type or dtype was given to a numbax operation."""


class ScalarOverflowError(NumbaxError, OverflowError):
    """A Python int outside the range of the dtype it takes: the array's dtype next to an
    array (NEP 50), int64 for an argument. NumPy 2 raises ``OverflowError`` here too."""


class ShapeError(NumbaxError, ValueError):
    """Shapes that do not broadcast, or do not match for a contraction."""


class AxisError(ShapeError, np.exceptions.AxisError):
    """An ``axis=`` outside the array's dimensions; NumPy's ``AxisError`` too (so also an
    ``IndexError``), with its ``axis`` and ``ndim`` attributes."""

    def __init__(self, message: str, axis: int, ndim: int):
        Exception.__init__(self, message)
        self.message, self.axis, self.ndim = message, axis, ndim

    def __str__(self) -> str:
        return self.message


class ConcretizationError(NumbaxError, TypeError):
    """An abstract traced value was converted to a concrete Python value."""


class TracerArrayConversionError(ConcretizationError):
    """``np.asarray`` (or similar) was called on an abstract traced value."""


class LeakedTracerError(NumbaxError, RuntimeError):
    """A traced value escaped its trace and was used after the trace ended."""


class InPlaceUpdateError(NumbaxError, TypeError):
    """Item assignment on an immutable traced array."""


class UnsupportedFunctionError(NumbaxError, NotImplementedError):
    """A NumPy function or ufunc that numbax does not implement."""


class UnsupportedAttributeError(UnsupportedFunctionError, AttributeError):
    """An ndarray attribute or method that traced arrays lack (``x.sort()``); an
    ``AttributeError`` too, so ``hasattr`` and ``getattr(x, name, default)`` still work."""


class UnsupportedOnBackendError(NumbaxError, NotImplementedError):
    """A program the selected backend cannot compile (yet); the message names the
    operation and a backend that can run it."""


class StaticArgumentError(NumbaxError, ValueError):
    """A static argument of ``jit`` that cannot be used as a cache key."""


class GradientError(NumbaxError, TypeError):
    """``grad`` asked for something without a gradient (non-scalar output, int input)."""


class SerializationError(NumbaxError, ValueError):
    """A serialised jaxpr that is malformed or refers to unknown primitives."""


class MissingDependencyError(NumbaxError, ImportError):
    """An optional package or program that a feature needs is not installed; the message
    names what to install (``Lowered.as_svg`` needs Graphviz)."""


class TypecheckError(NumbaxError, TypeError):
    """A jaxpr whose recorded types disagree with its primitives' rules."""


class ControlFlowError(NumbaxTypeError):
    """A ``cond`` branch or loop body whose types do not match (branches, carry)."""


class BatchingError(NumbaxError, ValueError):
    """``vmap`` given inconsistent axes or sizes, or a primitive it cannot batch."""


class CollectiveMismatchError(NumbaxError, RuntimeError):
    """The processes of an SPMD program disagree on the collective they call (its name,
    shapes or dtypes), found by ``NUMBAX_MPI_CHECK=1`` (docs/distributed.md)."""


class InternalCompilerError(NumbaxError, RuntimeError):
    """A backend failed on a program numbax generated from a valid trace: a numbax bug,
    never the user's. The message names the function, the failure and what to run
    instead; the backend's own error is chained as its ``__cause__``."""


class NumbaxWarning(UserWarning):
    """Base class of every warning numbax gives."""


class RetraceWarning(NumbaxWarning):
    """A jitted function retraced again and again: an argument's shape, dtype or static
    value keeps changing, so every call pays for a new trace and compile."""


class ProgramSizeWarning(NumbaxWarning):
    """A traced program so large (a Python loop unrolled while tracing) that compiling it
    takes long: ``fori_loop``/``scan`` keep a loop one operation."""


def at_line(message: str, source_info: str | None) -> str:
    """Append the user's file:line to a message."""
    return f"{message}\n  at {source_info}" if source_info else message


def function_name(function) -> str:
    """What a message calls the user's function: its name, or its type's (a partial, a
    callable object)."""
    return getattr(function, "__name__", type(function).__name__)
