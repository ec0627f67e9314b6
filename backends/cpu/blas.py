"""OpenBLAS's thread count inside a call: one.

The BLAS Numba calls (SciPy's) runs single-threaded in compiled code: the executable sets
its thread count to one as the call starts and back to the user's when it returns
(``enter_single_threaded``, ``leave_single_threaded``, called by ``threads.py``), without
touching ``OPENBLAS_NUM_THREADS``, which OpenBLAS reads only when it loads. A large
product runs in blocks on Numba's threads, one single-threaded call each
(``contraction.py``), not on OpenBLAS's threads: those spin after a call, waiting for the
next, and where the cores are busy with other work a two-thread OpenBLAS product waited
for the scheduler's next time slice (a 0.24 ms product took 8 or 16 ms).

The thread controls are looked up in the library that exports the BLAS Numba calls
(found from ``dgemm``'s address), under the names SciPy's and OpenBLAS's builds give them,
and linked under symbols of their own, as ``lapack.py`` does. ``AVAILABLE`` is False
when that BLAS is not an OpenBLAS with them: numbax then leaves that BLAS's threads as
the user set them (a BLAS that threads by itself may then oversubscribe the cores).
"""

from __future__ import annotations

import ctypes
import os

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address

from .threads import cap_numba_threads, set_numba_threads

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


def _file_of(address: int) -> str | None:
    """The file of the loaded library that holds ``address``."""
    info = _DlInfo()
    if not ctypes.CDLL(None).dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
        return None
    return info.dli_fname.decode() if info.dli_fname else None


def _thread_controls() -> tuple[str | None, dict[str, int]]:
    """The addresses of the get and set thread-count functions of the library that holds
    SciPy's ``dgemm`` or that it links, and the file of the library they are in; (None,
    {}) when it has none (not OpenBLAS, or not on Linux/macOS)."""
    try:
        path = _file_of(get_cython_function_address("scipy.linalg.cython_blas", "dgemm"))
        if path is None:
            return None, {}
        library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        found: dict[str, int] = {}
        for name, verb in _NAMES:
            if verb not in found and hasattr(library, name):
                found[verb] = ctypes.cast(getattr(library, name), ctypes.c_void_p).value
        if len(found) != 2:
            return None, {}
        return _file_of(found["get"]), found
    except (OSError, AttributeError, ImportError, ValueError):
        return None, {}


# The OpenBLAS whose threads numbax sets (the file threadpoolctl reports it by).
LIBRARY, _CONTROLS = _thread_controls()
AVAILABLE = bool(_CONTROLS)
for _verb, _address in _CONTROLS.items():
    llvm.add_symbol(f"numbax_blas_{_verb}_num_threads", _address)
_get_threads = types.ExternalFunction("numbax_blas_get_num_threads", types.intc())
_set_threads = types.ExternalFunction("numbax_blas_set_num_threads", types.void(types.intc))


@njit(**_JIT)
def enter_single_threaded(allowed):
    """Cap the calling thread's Numba thread count (``threads.cap_numba_threads``) and
    run OpenBLAS on one thread; the counts they had, for ``leave_single_threaded``."""
    threads = cap_numba_threads(allowed)
    blas_threads = _get_threads()
    _set_threads(np.intc(1))
    return threads, blas_threads


@njit(**_JIT)
def leave_single_threaded(saved):
    threads, blas_threads = saved
    _set_threads(blas_threads)
    set_numba_threads(threads)
