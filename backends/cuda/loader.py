"""Turning generated kernels into compiled CUDA kernels, or into PTX.

A kernel is a unit of compilation (``Unit``): its source becomes a module of its own,
keyed by what it computes (``kernel_unit``): its code with the program's name for it
replaced and its comments left out (they name the user's lines), the dtypes of its
parameters (its signature: every argument is a flat C-contiguous array), the device
functions it calls (``_HELPERS``) and the numbax, Numba, numba-cuda and Python versions.
Shapes, strides and layout are literals in its code, so they are in the key; launch
shapes are not (the launcher picks them per step), nor the program around the kernel.
A unit's module is loaded by the loader every backend shares (``compile_cache``):
written to the compile cache folder's ``cuda`` folder under its key and imported under
that name, which lets Numba cache the kernel's compiled code beside it, so a second
process finds it on disk; in memory without a cache folder.

Units compile eagerly, when the program is compiled (``program_kernels``): once per
process each, by the first thread that asks, while the others wait. Identical kernels
within a program are one unit, and a later program (an edited one, or another with
kernels in common) compiles only the units this process has not compiled and the disk
does not hold. The compile log counts a program's distinct units as new, from memory
and from disk (``CudaCompileStats``).

The program's own module (``module_name``, ``load_module``: every kernel under the name
the program gives it, commented) is what ``Lowered.source()`` shows; ``ptx`` compiles it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import types
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...config import config
from .. import compile_cache
from ..compile_cache import KeyedLock, helpers_text, program_text
from ..compile_stats import CompileStats
from .options import simulating

PTX_COMPUTE_CAPABILITY = (9, 0)  # sm_90: H100/H200

# What every generated module imports: a program's module and each unit's.
KERNEL_IMPORTS = """import math

from numba import boolean, complex64, complex128, cuda, float32, float64, int32, int64
from numba import int8, int16, uint8, uint16, uint32, uint64
from numba.types import float16

from numbax.backends.cuda.devicelib import complex_power, libdevice
from numbax.backends.cuda.devicelib import threefry2x32_bits64, threefry2x32_word0
from numbax.backends.cuda.devicelib import threefry2x32_word1, threefry2x32_xor
from numbax.backends.cuda.narrow_floats import bfloat16_from_float, bfloat16_to_float32
"""

_ONE_THREAD = KeyedLock()  # per unit key: one thread compiles it, the others wait
_COMPILED: dict = {}  # unit key -> its compiled kernel, for this process


# The device functions a kernel calls, compiled into its cached code: their source is part
# of every key, so a change to them is a new module (Numba's cache checks only the
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


@functools.cache
def _versions() -> str:
    """What else decides a kernel's machine code: the compilers' and numbax's versions."""
    from importlib.metadata import PackageNotFoundError, version

    found = [platform.python_version(), platform.machine()]
    for package in ("numbax", "numba", "numba-cuda"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} absent")
    return "\n".join(found)


def module_name(identifier: str, source: str) -> str:
    """The name a program's module is imported and cached under: equal programs (with
    the same device functions) share it."""
    digest = hashlib.sha256(_helpers_text().encode())
    digest.update(program_text(source).encode())
    return f"numbax_cuda_{identifier}_{digest.hexdigest()[:16]}"


def load_module(module_name: str, source: str) -> tuple[types.ModuleType, bool]:
    """The module, and whether it lives in a file (so Numba may cache its kernels)."""
    module = compile_cache.load_module(source, module_name, _folder(), "cuda")
    return module, bool(getattr(module, "__file__", None))


def _folder() -> Path | None:
    return Path(config.cache_dir) / "cuda" if config.cache_dir else None


# --- kernels as units of compilation ----------------------------------------------------

_UNIT_HEADER = '"""A numbax cuda kernel, keyed by what it computes (backends/cuda/loader.py)."""'
_PLACEHOLDER = "numbax_kernel"  # the kernel's name while its key is computed


@dataclass(frozen=True)
class Unit:
    """One distinct kernel: its key, its function's name in its module, the module's
    source, and its parameters' dtypes (its signature)."""

    key: str
    name: str
    source: str
    dtypes: tuple

    @property
    def module_name(self) -> str:
        return f"numbax_cuda_kernel_{self.key}"


def kernel_unit(kernel) -> Unit:
    """``kernel`` (a ``writer.KernelSource``) as a unit of compilation: a module of its
    own whose function is named after its key, the name the program gave it replaced."""
    dtypes = tuple(np.dtype(param.dtype) for param in kernel.params)
    return _unit(kernel.name, kernel.source, dtypes, _versions(), _helpers_text())


@functools.lru_cache(maxsize=1024)  # a compile and ``CudaProgram.units`` ask alike
def _unit(given: str, source: str, dtypes: tuple, versions: str, helpers: str) -> Unit:
    """The unit of a kernel the program named ``given``."""
    code = re.sub(rf"\b{re.escape(given)}\b", _PLACEHOLDER, source)
    # The signature, in the key: the code alone does not tell a float32 from a float64.
    signature = f"PARAMETER_DTYPES = {tuple(dtype.name for dtype in dtypes)!r}"
    text = "\n".join([_UNIT_HEADER, "", KERNEL_IMPORTS, signature, "", "", code])
    digest = hashlib.sha256(versions.encode())
    digest.update(helpers.encode())
    digest.update(program_text(text).encode())
    key = digest.hexdigest()[:24]
    name = f"kernel_{key[:16]}"
    return Unit(key, name, re.sub(rf"\b{_PLACEHOLDER}\b", name, text), dtypes)


def _launched(program):
    """``(step, kernel source, whether it is the step's cuBLAS epilogue)`` for every
    kernel ``program`` compiles, in launch order."""
    for step in program.kernels:
        yield step, step.kernel, False
        plan = step.kernel.cublas
        if plan is not None and plan.epilogue is not None:
            yield step, plan.epilogue, True


def program_units(program) -> list[Unit]:
    """``program``'s distinct kernels as units, in launch order."""
    units = {}
    for _, kernel, _ in _launched(program):
        unit = kernel_unit(kernel)
        units.setdefault(unit.key, unit)
    return list(units.values())


@dataclass
class ProgramKernels:
    """A program's compiled kernels: one per step (``program.kernels``' order), its cuBLAS
    epilogues by step number, and its distinct units by outcome (``compiled`` here,
    from ``memory``, from ``disk``)."""

    kernels: list
    epilogues: dict
    counts: Counter


def program_kernels(program) -> ProgramKernels:
    """The compiled kernels of ``program``: each distinct unit compiled or loaded once."""
    by_key, counts = {}, Counter()
    kernels, epilogues = [], {}
    for step, kernel, epilogue in _launched(program):
        unit = kernel_unit(kernel)
        if unit.key not in by_key:
            by_key[unit.key], outcome = compiled_unit(unit)
            counts[outcome] += 1
        if epilogue:
            epilogues[step.number] = by_key[unit.key]
        else:
            kernels.append(by_key[unit.key])
    return ProgramKernels(kernels, epilogues, counts)


def compiled_unit(unit: Unit) -> tuple[object, str]:
    """``unit``'s compiled kernel and where it came from: ``memory`` (this process has it),
    ``disk`` (Numba's cache beside its module) or ``compiled``."""
    with _ONE_THREAD(unit.key):
        if unit.key in _COMPILED:
            return _COMPILED[unit.key], "memory"
        module = compile_cache.load_module(unit.source, unit.module_name, _folder(), "cuda")
        in_file = bool(getattr(module, "__file__", None))
        kernel = _compiled(getattr(module, unit.name), unit.dtypes, in_file)
        _COMPILED[unit.key] = kernel
        return kernel, "disk" if in_file and _cache_hits(kernel) else "compiled"


def _cache_hits(kernel) -> int:
    stats = getattr(kernel, "stats", None)  # the simulator's kernels keep none
    return sum(stats.cache_hits.values()) if stats is not None else 0


class CudaCompileStats(CompileStats):
    """The compile log's line for a CUDA program: its distinct kernels by outcome. The
    host launches them (``launcher``): there is no launcher to compile."""

    def __str__(self) -> str:
        counts = [self.kernels.get(k, 0) for k in ("compiled", "memory", "disk")]
        kernels = "kernels: {} new, {} from memory, {} from disk".format(*counts)
        if self.cache == "off":
            kernels += "; no disk cache"
        return (
            f"optimise {self.optimize_s * 1e3:.1f} ms, codegen {self.codegen_s * 1e3:.1f} ms, "
            f"backend {self.backend_s * 1e3:.1f} ms ({kernels})"
        )


def compile_stats(optimize_s: float, codegen_s: float, backend_s: float, counts) -> CompileStats:
    """A compile's stats from its units' ``counts`` (``ProgramKernels.counts``)."""
    if counts.get("compiled"):
        cache = "off" if simulating() or not config.cache_dir else "disk miss"
    else:
        cache = "disk hit" if counts.get("disk") else "memory"
    return CudaCompileStats(
        optimize_s, codegen_s, backend_s, cache, kernels=dict(counts), kernels_s=backend_s
    )


def signature(kernel):
    """``void(float32[::1], ...)``: every argument a flat C-contiguous array."""
    return _signature(param.dtype for param in kernel.params)


def _signature(dtypes):
    from numba import from_dtype, types

    return types.void(*[types.Array(from_dtype(dtype), 1, "C") for dtype in dtypes])


def _compiled(function, dtypes, cache: bool):
    from numba import cuda

    if simulating():
        return cuda.jit(_signature(dtypes))(function)
    if cache:
        try:
            return cuda.jit(_signature(dtypes), cache=True)(function)
        except Exception:  # noqa: BLE001 - an unusable disk cache only costs compile time
            pass
    return cuda.jit(_signature(dtypes))(function)


def unit_ptx(unit: Unit, cc=PTX_COMPUTE_CAPABILITY) -> str:
    """``unit``'s kernel as PTX for ``cc``, from the unit's own module (no GPU needed; not
    under the simulator)."""
    from numba import cuda

    module = compile_cache.load_module(unit.source, unit.module_name, _folder(), "cuda")
    ptx, _ = cuda.compile_ptx(getattr(module, unit.name), _signature(unit.dtypes), cc=cc)
    return ptx


def compile_ptx(function, kernel, cc=PTX_COMPUTE_CAPABILITY) -> str:
    """The kernel's PTX for ``cc`` (no GPU needed; not under the simulator)."""
    from numba import cuda

    ptx, _ = cuda.compile_ptx(function, signature(kernel), cc=cc)
    return ptx
