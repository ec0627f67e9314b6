"""Turning the generated module source into CUDA kernels, or into PTX.

The module is written to the compile cache folder (named by a hash of its source without
comments, ``module_name``, via a temporary file and a rename, so a concurrent writer
never leaves half a file) and imported under that name in ``sys.modules``, which lets
Numba cache each kernel's compiled code beside it: a second process finds it on disk.
Numba checks the file's bytes, so a file that differs from the source only in comments
(the user's file:line) is kept. Without a cache folder the source is executed in memory
(registered with ``linecache`` so tracebacks show it).

Every kernel argument is a flat C-contiguous array, so the signatures are fixed at
generation time and the kernels compile eagerly, when the program is compiled: once
per process (``program_kernels``), by the first thread that asks, while the others wait.
"""

from __future__ import annotations

import hashlib
import importlib.util
import linecache
import os
import sys
import tempfile
import types

from ...config import config
from ..compile_cache import KeyedLock, helpers_text, program_text, same_program
from .options import simulating

PTX_COMPUTE_CAPABILITY = (9, 0)  # sm_90: H100/H200

_ONE_THREAD = KeyedLock()  # per module name
_COMPILED: dict = {}  # module name -> kernels, so equal programs compile once per process


# The device functions a kernel calls, compiled into its cached code: their source is part
# of the module's name, so a change to them is a new module (Numba's cache checks only the
# module's own file).
_HELPERS = (
    "devicelib.py",
    "narrow_floats.py",
    "../complex_functions.py",
    "../float_rounding.py",
    "../threefry.py",
    "../../ir/threefry.py",
)


def _helpers_text() -> str:
    return helpers_text(os.path.dirname(__file__), _HELPERS)


def module_name(identifier: str, source: str) -> str:
    """The name a program's module is imported and cached under: equal programs (with
    the same device functions) share it."""
    digest = hashlib.sha256(_helpers_text().encode())
    digest.update(program_text(source).encode())
    return f"numbax_cuda_{identifier}_{digest.hexdigest()[:16]}"


def _cache_path(module_name: str, source: str) -> str | None:
    if not config.cache_dir:
        return None
    folder = os.path.join(config.cache_dir, "cuda")
    path = os.path.join(folder, module_name + ".py")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path, encoding="utf-8") as existing:
            if same_program(existing.read(), source):
                return path
    except (FileNotFoundError, UnicodeDecodeError):
        pass  # no file, or a damaged one: (re)write it
    except OSError:
        return None
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(source)
        os.replace(temporary, path)
    except OSError:
        return None  # an unwritable cache is no reason to fail: compile in memory
    return path


def load_module(module_name: str, source: str) -> tuple[types.ModuleType, bool]:
    """The module, and whether it lives in a file (so Numba may cache its kernels)."""
    with _ONE_THREAD(module_name):
        if module_name not in sys.modules:
            # Registered once it has run to its end: no thread sees half a module.
            sys.modules[module_name] = _executed(module_name, source)
        module = sys.modules[module_name]
        return module, bool(getattr(module, "__file__", None))


def _executed(module_name: str, source: str) -> types.ModuleType:
    path = _cache_path(module_name, source)
    if path is not None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            return module
        except Exception:  # noqa: BLE001 - a corrupt cache entry: compile in memory
            pass
    module = types.ModuleType(module_name)
    filename = f"<numbax-cuda {module_name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def program_kernels(program) -> tuple[list, dict]:
    """The compiled kernels of ``program``, in order, and its cuBLAS epilogue kernels by
    step number; compiled once per process for every program with this module."""
    with _ONE_THREAD(program.module_name):
        if program.module_name not in _COMPILED:
            module, in_file = load_module(program.module_name, program.source)
            kernels, epilogues = [], {}
            for step in program.kernels:
                function = getattr(module, step.kernel.name)
                kernels.append(compile_kernel(function, step.kernel, in_file))
                plan = step.kernel.cublas
                if plan is not None and plan.epilogue is not None:
                    function = getattr(module, plan.epilogue.name)
                    epilogues[step.number] = compile_kernel(function, plan.epilogue, in_file)
            _COMPILED[program.module_name] = kernels, epilogues
        return _COMPILED[program.module_name]


def is_compiled(program) -> bool:
    """Whether this process has compiled ``program``'s kernels already."""
    return program.module_name in _COMPILED


def cache_outcome(kernels) -> str:
    """Where newly compiled ``kernels`` came from (``compile_stats.CACHE_OUTCOMES``): the
    simulator and a program without a cache folder have no disk cache."""
    if simulating() or not config.cache_dir:
        return "off"
    return "disk hit" if all(sum(k.stats.cache_hits.values()) for k in kernels) else "disk miss"


def signature(kernel):
    """``void(float32[::1], ...)``: every argument a flat C-contiguous array."""
    from numba import from_dtype, types

    return types.void(*[types.Array(from_dtype(p.dtype), 1, "C") for p in kernel.params])


def compile_kernel(function, kernel, cache: bool):
    from numba import cuda

    if simulating():
        return cuda.jit(signature(kernel))(function)
    if cache:
        try:
            return cuda.jit(signature(kernel), cache=True)(function)
        except Exception:  # noqa: BLE001 - an unusable disk cache only costs compile time
            pass
    return cuda.jit(signature(kernel))(function)


def compile_ptx(function, kernel, cc=PTX_COMPUTE_CAPABILITY) -> str:
    """The kernel's PTX for ``cc`` (no GPU needed; not under the simulator)."""
    from numba import cuda

    ptx, _ = cuda.compile_ptx(function, signature(kernel), cc=cc)
    return ptx
