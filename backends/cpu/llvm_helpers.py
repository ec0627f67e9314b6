"""numbax's ``njit`` helpers in the kernels llvmlite compiles: their IR linked into a
kernel (``library_function``, compiled once per installation and kept beside Numba's cache
of numbax's own helpers), or called by a symbol of numbax's (``external_function``: the
parallel helpers, whose IR holds Numba's parallel runtime), registered as a cached kernel
loads (``resolve``)."""

from __future__ import annotations

import functools
import hashlib
import pickle
import threading
from pathlib import Path

from ..compile_cache import stored

LIBRARY_PREFIX = "numbax_llvmlib_"
LOCK = threading.RLock()  # LLVM's global context, the engine, Numba's compiles

_LIBRARY: dict = {}  # (dispatcher id, argtypes) -> (llvm name, return type, IR text)


def library_function(function, argtypes) -> tuple:
    """``function``'s optimised IR for ``argtypes``, compiled once per installation: Numba
    keeps none for code it loads from its disk cache, so the IR is kept beside the cache
    Numba keeps of numbax's own helpers (in the package's ``__pycache__``, or where Numba
    finds a writable folder): it is numbax's runtime, not the user's programs' code."""
    from numba.core.caching import FunctionCache

    from .cache import program_key

    memory_key = (function.py_func.__module__, function.py_func.__qualname__, argtypes)
    found = _LIBRARY.get(memory_key)
    if found is not None:
        return found
    with LOCK:
        found = _LIBRARY.get(memory_key)
        if found is not None:
            return found
        name = f"{memory_key[0]}.{memory_key[1]}{argtypes}"
        key = program_key(name + host())
        path = Path(FunctionCache(function.py_func)._cache_path) / f"{LIBRARY_PREFIX}{key}.pickle"
        try:
            found = pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            found = None
        if found is None:
            from numba import njit

            options = dict(function.targetoptions)
            options.pop("cache", None)
            options.pop("nopython", None)
            fresh = njit(**options)(function.py_func)
            fresh.compile(argtypes)
            overload = fresh.overloads[argtypes]
            found = (
                overload.fndesc.llvm_func_name,
                overload.signature.return_type,
                overload.library.get_llvm_str(),
            )
            stored(path, pickle.dumps(found))
        _LIBRARY[memory_key] = found
        return found


def external_name(function, argtypes) -> tuple:
    """What names a helper called by symbol in a kernel's cache entry (``resolve``)."""
    return (function.py_func.__module__, function.py_func.__qualname__, argtypes)


@functools.cache
def external_function(name: tuple) -> tuple:
    """The symbol a kernel calls the helper ``name`` (``external_name``) by, and its return
    type: the helper compiled (or loaded from Numba's cache) and its address registered
    with LLVM under a symbol of numbax's, the same in every process (Numba's own symbol
    holds a counter of its process)."""
    import importlib

    import llvmlite.binding as llvm

    module, qualname, argtypes = name
    function = importlib.import_module(module)
    for part in qualname.split("."):
        function = getattr(function, part)
    from .cache import load_lean

    with LOCK:
        load_lean(function)
        function.compile(argtypes)
        overload = function.overloads[argtypes]
        address = overload.library.get_pointer_to_function(overload.fndesc.llvm_func_name)
        symbol = "numbax_helper_" + hashlib.sha256(repr(name).encode()).hexdigest()[:24]
        llvm.add_symbol(symbol, address)
        return symbol, overload.signature.return_type


def resolve(externals) -> None:
    """Register the symbols of the helpers a cached kernel calls (``external_function``)."""
    for name in externals:
        external_function(name)


@functools.cache
def target_features() -> str:
    """The features llvmlite's kernels are compiled for: the host's, with 512-bit vectors
    where it has AVX-512. LLVM's tuning for AVX-512 processors prefers 256-bit vectors
    (``prefer-256-bit``: the first ones slowed their clock on wide instructions); on the
    processors of today's machines the wide loops pay. A float32 row softmax, exp-bound,
    took 1.8 ms at 16 lanes against 2.35 ms at 8 on a Sapphire Rapids-class Xeon, 2
    threads. Only numbax's kernels are compiled so: Numba's code keeps its tuning."""
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in features.split(","):
        features += ",-prefer-256-bit"
    return features


@functools.cache
def host() -> str:
    """The processor code is compiled for, in the keys of cached code."""
    import llvmlite.binding as llvm

    return f"{llvm.get_host_cpu_name()} {target_features()}"
