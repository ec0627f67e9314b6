"""Find the user's file:line that is executing a numbax operation.

Every equation records it, and every error message shows it. A frame is the user's
when its file is not part of numbax's pipeline nor of NumPy (whose dispatch
machinery sits between the user's ``np.sin(x)`` and our ``__array_function__``).
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

from ..ir.errors import at_line

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INTERNAL_PREFIXES = tuple(
    os.path.join(_PACKAGE_ROOT, folder) + os.sep
    for folder in ("ir", "tracer", "numpy_lib", "transforms", "passes", "backends", "dispatch")
) + (os.path.dirname(np.__file__) + os.sep,)
_INTERNAL_FILES = frozenset(
    os.path.join(_PACKAGE_ROOT, name)
    for name in (
        "__init__.py",
        "api.py",
        "nn.py",
        "lax.py",
        "optim.py",
        "export.py",
        "traceback_util.py",
        "compile_log.py",
    )
)


def _is_internal(filename: str) -> bool:
    return (
        filename.startswith(_INTERNAL_PREFIXES)
        or filename in _INTERNAL_FILES
        or filename.startswith("<__array_function__")
    )


# filename -> _is_internal(filename): every traced equation walks ~15 frames of a few
# dozen files.
_INTERNAL: dict[str, bool] = {}


def _user_frame():
    frame = sys._getframe(2)
    known = _INTERNAL
    while frame is not None:
        filename = frame.f_code.co_filename
        internal = known.get(filename)
        if internal is None:
            internal = known[filename] = _is_internal(filename)
        if not internal:
            break
        frame = frame.f_back
    return frame


def user_frame_info() -> str | None:
    """``file:line`` of the innermost frame outside numbax and NumPy."""
    frame = _user_frame()
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def error_at_user_line(cls: type[Exception], message: str) -> Exception:
    """``cls(message)``, the message ending with the user's line (``at_line``)."""
    return cls(at_line(message, user_frame_info()))


def warn_at_user_line(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` as if raised by the user's line (the filters and the once-per-
    location registry of the default action work as for NumPy's own warnings)."""
    frame = _user_frame()
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(
        message, category, frame.f_code.co_filename, frame.f_lineno, registry=registry
    )
