"""A large matrix product as one BLAS call on OpenBLAS's own threads.

The BLAS Numba calls (SciPy's) runs single-threaded in compiled code (the backend sets
``OPENBLAS_NUM_THREADS=1``). A large product split into one block of rows per thread made
each thread pack the whole right operand for itself; OpenBLAS's threads, in one call,
share the packed panels. Float32 products, Haswell kernels, two cores: 64x784 @ 784x512
took 0.43 ms as two row blocks and 0.29 ms on OpenBLAS's two threads, 256x784 @ 784x512
1.19 ms and 0.95 ms, and ``x.T @ n`` (784x256 @ 256x512) needs no transposed copy.

``threaded_dot`` raises the OpenBLAS's thread count for the call and sets it back after.
The thread controls are looked up in the library that exports the BLAS Numba calls
(found from ``dgemm``'s address), under the names SciPy's and OpenBLAS's builds give them,
and linked under symbols of their own, as ``lapack.py`` does. ``AVAILABLE`` is False
when that BLAS is not an OpenBLAS with them: products are then split into row blocks.
"""

from __future__ import annotations

import ctypes
import os

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address

_JIT = {"error_model": "numpy", "no_cfunc_wrapper": True, "cache": True}


def openblas_names(function: str) -> list[str]:
    """The names OpenBLAS's ``function`` has in SciPy's and NumPy's builds and in
    OpenBLAS's own, with 32- and 64-bit integers."""
    return [
        f"{prefix}{function}{suffix}"
        for prefix in ("scipy_openblas_", "openblas_")
        for suffix in ("", "64_")
    ]


_NAMES = [(name, verb) for verb in ("get", "set") for name in openblas_names(f"{verb}_num_threads")]


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def _thread_controls() -> dict[str, int]:
    """The addresses of the get and set thread-count functions of the library that holds
    SciPy's ``dgemm``; empty when it has none (not OpenBLAS, or not on Linux/macOS)."""
    try:
        address = get_cython_function_address("scipy.linalg.cython_blas", "dgemm")
        libc = ctypes.CDLL(None)
        info = _DlInfo()
        if not libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info)) or not info.dli_fname:
            return {}
        library = ctypes.CDLL(info.dli_fname.decode(), mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except (OSError, AttributeError, ImportError, ValueError):
        return {}
    found: dict[str, int] = {}
    for name, verb in _NAMES:
        if verb not in found and hasattr(library, name):
            found[verb] = ctypes.cast(getattr(library, name), ctypes.c_void_p).value
    return found if len(found) == 2 else {}


_CONTROLS = _thread_controls()
AVAILABLE = bool(_CONTROLS)
for _verb, _address in _CONTROLS.items():
    llvm.add_symbol(f"numbax_blas_{_verb}_num_threads", _address)
_get_threads = types.ExternalFunction("numbax_blas_get_num_threads", types.intc())
_set_threads = types.ExternalFunction("numbax_blas_set_num_threads", types.void(types.intc))


@njit(**_JIT)
def threaded_dot(a, b, out, threads):
    """``np.dot(a, b, out)`` on ``threads`` of OpenBLAS's threads."""
    previous = _get_threads()
    _set_threads(np.intc(threads))
    np.dot(a, b, out)
    _set_threads(previous)
