"""Turning the generated module source into CUDA kernels, or into PTX.

The module is written to the compile cache folder (named by a hash of its source, via a
temporary file and a rename, so a concurrent writer never leaves half a file) and
imported under that name in ``sys.modules``, which lets Numba cache each kernel's
compiled code beside it: a second process finds it on disk. Without a cache folder the
source is executed in memory (registered with ``linecache`` so tracebacks show it).

Every kernel argument is a flat C-contiguous array, so the signatures are fixed at
generation time and the kernels compile eagerly, when the program is compiled.
"""

from __future__ import annotations

import importlib.util
import linecache
import os
import sys
import tempfile
import types

from ...config import config
from .options import simulating

PTX_COMPUTE_CAPABILITY = (9, 0)  # sm_90: H100/H200


def _cache_path(module_name: str, source: str) -> str | None:
    if not config.cache_dir:
        return None
    folder = os.path.join(config.cache_dir, "cuda")
    path = os.path.join(folder, module_name + ".py")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path, encoding="utf-8") as existing:
            if existing.read() == source:
                return path
    except FileNotFoundError:
        pass
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
    if module_name in sys.modules:
        module = sys.modules[module_name]
        return module, bool(getattr(module, "__file__", None))
    path = _cache_path(module_name, source)
    if path is not None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
            return module, True
        except Exception:  # noqa: BLE001 - a corrupt cache entry: compile in memory
            del sys.modules[module_name]
    module = types.ModuleType(module_name)
    filename = f"<numbax-cuda {module_name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), module.__dict__)
    sys.modules[module_name] = module
    return module, False


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
