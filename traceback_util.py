"""Tracebacks of numbax errors without numbax's own frames, as JAX shows them.

A numbax error raised while tracing or compiling a user's function unwinds through
dozens of frames of the tracer, the transforms and the dispatch cache before it reaches
the user. The public entry points (a ``jit`` call, the function ``grad`` or ``vmap``
returns, ``make_jaxpr``) are boundaries: the outermost one an error leaves rebuilds its
traceback from the frames outside the numbax package only, so the user's own lines
(their function, and any function of theirs in between, as in ``jit(grad(jit(f)))``) are
what remains, and a note says how to see everything. ``NUMBAX_TRACEBACK_FILTERING=off``
keeps the full traceback.

Only numbax errors are filtered: an exception of the user's own, or a bug inside numbax,
keeps every frame.
"""

from __future__ import annotations

import functools
import os
import sys
import types
from collections.abc import Callable

from .config import config
from .ir.errors import NumbaxError

FILTERED_NOTE = (
    "numbax removed its internal frames from this traceback; "
    "set NUMBAX_TRACEBACK_FILTERING=off to see them."
)
_PACKAGE = __name__.rpartition(".")[0]
_BOUNDARIES: set[types.CodeType] = set()  # the code of every boundary's frame


def register_boundary(code: types.CodeType) -> None:
    """Mark a function's frames as a boundary (for one that catches errors itself)."""
    _BOUNDARIES.add(code)


def api_boundary(fun: Callable) -> Callable:
    """``fun`` as a public entry point: a numbax error leaving it loses numbax's frames."""

    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except NumbaxError as err:
            filter_traceback(err)
            raise  # a bare raise keeps the rebuilt traceback and adds no frame of ours

    return boundary


def transform_boundary(transform: Callable) -> Callable:
    """A transform (``grad``, ``vmap``, ...) whose returned function is an api_boundary."""

    @functools.wraps(transform)
    def transform_with_boundary(fun, *args, **kwargs):
        return api_boundary(transform(fun, *args, **kwargs))

    return transform_with_boundary


register_boundary(api_boundary(lambda: None).__code__)


def filter_traceback(err: BaseException) -> None:
    """Drop numbax's frames from ``err``'s traceback; called by a boundary's ``except``.

    An inner boundary (``jit(f)`` called while an outer ``jit`` traces) leaves the error
    alone: the outermost boundary filters the whole traceback once, so the full one
    survives until then and the note is added once."""
    if not config.traceback_filtering or _inside_another_boundary(sys._getframe(1)):
        return
    internal = _internal_files()
    kept = None
    frames = []
    tb = err.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    for entry in reversed(frames):
        if _normalised(entry.tb_frame.f_code.co_filename) not in internal:
            kept = types.TracebackType(kept, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    err.__traceback__ = kept
    if hasattr(err, "add_note") and FILTERED_NOTE not in getattr(err, "__notes__", ()):
        err.add_note(FILTERED_NOTE)


def _inside_another_boundary(boundary: types.FrameType) -> bool:
    """Whether another boundary's frame is on the stack above ``boundary``'s."""
    frame = boundary.f_back
    while frame is not None:
        if frame.f_code in _BOUNDARIES:
            return True
        frame = frame.f_back
    return False


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` that names the user's line: the first
    frame above the caller that is not numbax's."""
    internal = _internal_files()
    frame, level = sys._getframe(1), 1
    while frame is not None and _normalised(frame.f_code.co_filename) in internal:
        frame, level = frame.f_back, level + 1
    return level


def _internal_files() -> frozenset[str]:
    """The files of numbax's imported modules: exactly the package, wherever it sits
    (the tests and scripts next to it in a checkout are the user's)."""
    return frozenset(
        _normalised(module.__file__)
        for name, module in list(sys.modules.items())
        if (name == _PACKAGE or name.startswith(_PACKAGE + "."))
        and getattr(module, "__file__", None)
    )


def _normalised(filename: str) -> str:
    return os.path.normcase(os.path.abspath(filename))
