"""``fastmath``'s functions as separately compiled Numba functions, cached on disk.

Compiling a ``fastmath`` function takes up to seconds (sin's exact reduction most), once
per process; the generated code calls these wrappers instead, which are compiled once
and then loaded from the disk cache by every later process. LLVM inlines a wrapper's
optimised code into the caller's loop when the program is linked, where it vectorises.
The wrapper module is generated (``functions()``) and keyed like a program, so editing
``fastmath.py`` invalidates the cached wrappers too.

Generated code imports it as ``from numbax.backends.cpu.mathlib import functions as fm``.
"""

from __future__ import annotations

import functools
import types

from ...config import config


def _source(cache: bool) -> str:
    from . import fastmath

    lines = [
        '"""numbax cpu backend: fastmath\'s functions, compiled once, inlined by LLVM."""',
        "",
        "from numba import njit",
        "",
        "from numbax.backends.cpu import fastmath",
    ]
    for function in fastmath.FUNCTIONS.values():
        name = function.py_func.__name__
        assert getattr(fastmath, name) is function, name
        lines += [
            "",
            "",
            # alwaysinline: LLVM's inliner would leave the larger ones (sin and cos, with
            # their exact reduction) as calls, and a loop with a call does not vectorise.
            f'@njit(error_model="numpy", no_cfunc_wrapper=True, cache={cache}, forceinline=True)',
            f"def {name}(x):",
            f"    return fastmath.{name}(x)",
        ]
    return "\n".join(lines) + "\n"


@functools.cache
def _functions(cache_dir: str | None) -> types.ModuleType:
    from .cache import MATHLIB_PREFIX, load_module, program_key

    source = _source(cache_dir is not None)
    return load_module(source, f"{MATHLIB_PREFIX}{program_key(source)}", cache_dir)


def __getattr__(name: str):
    if name == "functions":
        return _functions(config.cache_dir)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
