"""Text from outside, made safe to put into generated source: the one place that escapes.

The backends write Python modules and import them, so anything a user's program or a
loaded IR file controls (function and kernel names, ``source_info``, literal values,
params, the printed jaxpr) could otherwise close a comment or a docstring and run as
code. Every such value reaches generated source through one of these functions:

- ``identifier``: a name in code (functions, modules), reduced to ``[A-Za-z0-9_]``;
- ``comment``: text after ``#``, on one line whatever it holds;
- ``docstring``: the body of a triple-quoted string that decodes back to the text;
- ``number``: a scalar as a numeric literal of its dtype, with inf and nan by name
  (a complex one as ``complex(re, im)``).

    >>> comment("x.py:1\\nimport os")
    'x.py:1\\\\nimport os'
    >>> number(float("-inf"), "float32", "np")
    '-np.inf'
"""

from __future__ import annotations

import hashlib
import keyword
import math
import re

import numpy as np

# Generated module names hold one of these and a 24-digit key; Numba's cache files add the
# function name again: 2 * 48 + 60 stays well under the usual 255-byte file name limit.
MAX_IDENTIFIER = 48


def identifier(text: str, reserved=frozenset(), default: str = "fn") -> str:
    """``text`` as a Python identifier: other characters become ``_``; a name that starts
    with a digit gets ``default`` in front; a keyword or ``reserved`` name gets ``_`` after.
    A long name is cut, with a hash of the whole text, so that it stays distinct and the
    module and cache file names made from it stay within the file system's limit."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", str(text)).strip("_") or default
    if name[0].isdigit():
        name = f"{default}_{name}"
    if len(name) > MAX_IDENTIFIER:
        digest = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[: MAX_IDENTIFIER - 9]}_{digest}"
    return name + "_" if keyword.iskeyword(name) or name in reserved else name


def _escaped(char: str) -> str:
    return ascii(char)[1:-1]  # '\n' -> '\\n', '\x85' -> '\\x85', '\u2028' -> '\\u2028'


def comment(text: str) -> str:
    """``text`` for a ``#`` comment: every character that could end the line (newlines,
    carriage returns, form feeds, Unicode line separators) or hide (other control
    characters) is written as its escape, so the comment stays one line."""
    text = str(text)
    if text.isprintable():  # the usual case, checked at C speed
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def docstring(text: str) -> str:
    """``text`` as the body of a ``\"\"\"`` string literal, lines kept: backslashes and
    quotes are escaped (no ``\"\"\"`` can close it early) and so is every line-ending or
    control character other than ``\\n``."""
    text = str(text)
    if text.replace("\n", "").isprintable():  # the usual case, checked at C speed
        return text.replace("\\", "\\\\").replace('"', '\\"')
    return "".join(_docstring_char(c) for c in text)


def _docstring_char(char: str) -> str:
    if char in '\\"':
        return "\\" + char
    return char if char == "\n" or char.isprintable() else _escaped(char)


def number(value, dtype, module: str) -> str:
    """``value`` as a literal of ``dtype``: ``True``, ``-3``, ``1.5``, or ``{module}.inf``
    / ``-{module}.inf`` / ``{module}.nan`` (``module`` is ``np`` or ``math``: whichever
    the generated module imports). The value is converted to the dtype first, so what is
    written is always a number, whatever was passed in."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc":
        raise TypeError(f"no literal for dtype {dtype}")
    value = np.asarray(value).astype(dtype).item()
    if dtype.kind == "c":  # complex(re, im): each part a float literal, inf and nan too
        parts = (number(part, np.float64, module) for part in (value.real, value.imag))
        return "complex({}, {})".format(*parts)
    if dtype.kind == "b":
        return repr(bool(value))
    if dtype.kind in "iu":
        return repr(int(value))
    value = float(value)
    if math.isnan(value):
        return f"{module}.nan"
    if math.isinf(value):
        return f"{module}.inf" if value > 0 else f"-{module}.inf"
    return repr(value)
