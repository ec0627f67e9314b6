"""The program's module as text: the modules generated code imports (``IMPORTS``, with
the names they have there), the names no value may take (``_RESERVED``), the Numba types
of the arguments, the comments' parameters, and the assembly of the module (docstring,
imports, constants, signature, helpers and functions), a mixin of the program writer.
"""

from __future__ import annotations

import builtins
import keyword

import numpy as np

from ...ir import dtypes
from ...ir.core import Jaxpr
from .. import source as escape
from . import callbacks, contraction, fft, linalg, parts, scalar, sorting, steps
from .loopnest import tuple_source

# Modules generated code calls into: module -> (the name it has there, its import line).
IMPORTS = {
    scalar.MATHLIB: ("fm", "from numbax.backends.cpu.mathlib import functions as fm"),
    scalar.INTRINSICS: ("nbx", "from numbax.backends.cpu import intrinsics as nbx"),
    scalar.NARROW_FLOATS: ("nf", "from numbax.backends.cpu import narrow_floats as nf"),
    **callbacks.IMPORTS,
    **contraction.IMPORTS,
    **linalg.IMPORTS,
    **sorting.IMPORTS,
    **fft.IMPORTS,
    "numbax.backends.cpu.launch": (
        "nbx_launch",
        "from numbax.backends.cpu import launch as nbx_launch",
    ),
    steps.MACHINE_MODULE: (
        "nbx_steps",
        "from numbax.backends.cpu import step_machine as nbx_steps",
    ),
}
_RESERVED = (
    set(keyword.kwlist)
    | set(dir(builtins))
    | {"np", "nt", "njit", "prange", "carray", "SIGNATURE", "PARALLEL"}
    | {alias for alias, _ in IMPORTS.values()}
)


def function_name(name: str) -> str:
    return escape.identifier(name, _RESERVED)


def numba_type(aval) -> str:
    dtype = "boolean" if aval.dtype == dtypes.bool_ else scalar.storage_dtype(aval.dtype).name
    return f'nt.Array(nt.{dtype}, {len(aval.shape)}, "C")'


def _shown(value) -> bool:
    """Sub-jaxprs are left out of comments: the module docstring prints them."""
    if isinstance(value, tuple):
        return all(map(_shown, value))
    return not isinstance(value, Jaxpr)


def _param(value) -> str:
    if isinstance(value, np.dtype):
        return value.name
    return repr(value) if isinstance(value, str) else str(value)


class ModuleWriter:
    """The module's assembly, mixed into ``program._ProgramWriter``."""

    def _module(self, functions: list[parts.Function]) -> str:
        """The module: docstring, imports, constants, helpers, then ``functions`` (the
        program function last, the parts it calls before it)."""
        docstring = "\n".join(
            [
                f"numbax cpu backend: the compiled program of {self.name_text!r}.",
                "",
                "Generated code (numbax/backends/cpu/program.py), compiled for SIGNATURE by",
                "numbax/backends/cpu/cache.py. The program:",
                "",
                str(self.jaxpr),
            ]
        )
        lines = [
            f'"""{escape.docstring(docstring)}',
            '"""',
            "",
            "import numpy as np",
            "from numba import njit, prange",
            "from numba import types as nt",
            *sorted(IMPORTS[module][1] for module in self.modules),
            "",
            *(f"{name} = {source}" for (_, source), name in self.constants.items()),
        ]
        avals = [v.aval for v in self.jaxpr.constvars + self.jaxpr.invars + self.pooled]
        signature = [numba_type(a) for a in avals]
        if self.units:
            signature.insert(0, 'nt.Array(nt.int64, 1, "C")')
        lines.append(f"SIGNATURE = {tuple_source(signature)}")
        for function in self.functions:
            lines += ["", "", *function]
        for function in functions:
            options = f'parallel={function.parallel}, error_model="numpy", no_cfunc_wrapper=True'
            lines += ["", "", f"@njit({options})"]
            lines.append(f"def {function.name}({', '.join(function.arguments)}):")
            lines += ["    " + line if line else "" for line in function.lines]
        return "\n".join(lines) + "\n"
