"""Turning the generated module source into CUDA kernels, or into PTX.

The module is loaded by the loader every backend shares (``compile_cache.load_module``):
written to the compile cache folder's ``cuda`` folder under ``module_name`` (a hash of its
source without comments) and imported under that name, which lets Numba cache each
kernel's compiled code beside it, so a second process finds it on disk; in memory without
a cache folder.

Every kernel argument is a flat C-contiguous array, so the signatures are fixed at
generation time and the kernels compile eagerly, when the program is compiled: once
per process (``program_kernels``), by the first thread that asks, while the others wait.
"""

from __future__ import annotations

import hashlib
import os
import types
from pathlib import Path

from ...config import config
from .. import compile_cache
from ..compile_cache import KeyedLock, helpers_text, program_text
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


def load_module(module_name: str, source: str) -> tuple[types.ModuleType, bool]:
    """The module, and whether it lives in a file (so Numba may cache its kernels)."""
    folder = Path(config.cache_dir) / "cuda" if config.cache_dir else None
    module = compile_cache.load_module(source, module_name, folder, "cuda")
    return module, bool(getattr(module, "__file__", None))


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
