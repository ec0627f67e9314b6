"""Kernels compiled to machine code by llvmlite, with no Numba typing or lowering.

A unit (``units``) is written as a small Python module in the language every kernel
writer uses: arrays rebuilt from the pointer table with ``carray``, loops over ``range``,
scalar arithmetic, calls of numbax's intrinsics and math functions. Numba compiling such
a kernel costs 60-300 ms: it infers types numbax already knows, lowers every array access
through its array model with reference counting, and runs LLVM over the result. This
module translates the same text straight to LLVM IR: the types are what the text states
(``carray(args[k], shape, dtype)``, ``np.float32(...)`` constants), an array is a pointer
and a static C-contiguous shape, a scalar local is a stack slot that LLVM's ``mem2reg``
promotes, and the kernel is optimised and compiled to an object file by llvmlite alone
(3-20 ms a kernel). The source shown by ``Lowered.source()`` stays the kernel's text.

Semantics are Numba's, taken from Numba where they are not plain LLVM instructions:

- binary operators and comparisons are typed by Numba's typing context (``int64 +
  float32`` is ``float64``, ``int / int`` is ``float64``), then computed in the chosen type
  (float ops with no fast-math flag, ``error_model="numpy"``: no division checks);
- casts (``np.float32(x)``, ``int(x)``) are Numba's own ``context.cast``;
- numbax's ``@intrinsic`` helpers (``nbx.add_reassoc``, ``nbx.select``, ``opaque_int``, the
  guarded integer divisions, ``nbx_gemm.gemm``) are lowered by their own code generators,
  called with Numba's CPU context on this module's builder;
- numbax's ``njit`` helpers (``fm.tanh_f32`` and the other vectorisable math functions,
  ``nbx.compensated_add``) are compiled by Numba once per installation, and their
  optimised IR, kept beside Numba's cache of numbax's own helpers, is linked into each
  kernel that calls them and inlined there, where the loop vectoriser sees it as it does
  in a Numba kernel; a parallel helper (``gemm.blocked_gemm``) is called by a symbol of
  numbax's instead, registered as the kernel loads (``llvm_helpers.external_function``);
- an array index is wrapped when negative, its arithmetic is ``nsw`` and its address
  ``inbounds``, as Numba's are (LLVM drops the wrap where the index is a loop's);
- a parallel kernel's ``prange`` loop becomes a chunk function over a piece of its range,
  run on Numba's threads by ``parallel_chunks.run_chunks``;
- the module has the target's data layout, and its loops are rotated and combined before
  the -O3 pipeline, as ``numba.core.codegen`` does; but LLVM's loop unrolling is off and
  only the short innermost loops of constant bounds are unrolled, in full
  (``llvm_translate._unrolled``). LLVM's heuristics also unrolled the loops around
  vectorised loops, copying those and their runtime checks: over the 118 distinct kernels
  of five training steps and two stencils, the -O3 pipeline took 1.65 s and code
  generation 1.46 s with them, 1.21 s and 0.81 s without, and the kernels' time was the
  same (geometric mean of the ratio 1.00, quiet, best of 9).

Measured against Numba on the same texts (the tests and benchmarks' kernels): the same
results bit for bit (but for the order of reassociable block sums) and the same speed
(kernel time llvmlite / Numba, geometric mean 1.00 over 248 kernels).

Anything else the translation does not know (a slice, a ``while``, an array allocated in
a loop, a call it has no rule for) raises ``Unsupported`` and the kernel is compiled by
Numba as before (``units``); the compile log counts the kernels ``by llvmlite``.
``NUMBAX_LLVM_KERNELS=0`` compiles every kernel with Numba.

The object files live beside Numba's in ``cache_dir/cpu`` (``numbax_llvm_<key>.o``), keyed
by the kernel's key and the host CPU, each with a digest (LLVM aborts the process on a
damaged object file rather than raise) and the helpers it calls by symbol, and are loaded
into one MCJIT engine per process.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import warnings
from pathlib import Path

from ..compile_cache import stored
from .llvm_expressions import Unsupported, numba_parts
from .llvm_helpers import LOCK, host, resolve, target_features
from .llvm_translate import translate

CACHE_PREFIX = "numbax_llvm_"
_MAGIC = b"numbax-llvm-object-2\n"


def start() -> None:
    """What every llvmlite compile needs once per process, started ahead of the first
    (``CpuBackend.initialise``): Numba's typing tables (0.35 s) and the engine."""
    numba_parts()
    _machine()


@functools.cache
def _machine():
    import llvmlite.binding as llvm
    from numba.np.ufunc.parallel import _launch_threads

    from . import blas, gemm, lapack, threads  # noqa: F401 - the symbols kernels may call

    # Numba's threading layer defines symbols numbax's helpers call (``get_num_threads``).
    _launch_threads()
    machine = target_machine(target_features())
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    return llvm, machine, engine


def target_machine(features: str):
    """A target machine for the host processor with ``features`` (the kernels':
    ``llvm_helpers.target_features``)."""
    import llvmlite.binding as llvm

    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=features,
        opt=3,
        reloc="static",
        codemodel="jitdefault",
        jit=True,
    )


def optimised(source: str, name: str):
    """The kernel's LLVM module, linked with the functions it calls and optimised."""
    llvm, machine, _ = _machine()
    text, libraries, _ = translate(source, name)
    with LOCK:
        module = llvm.parse_assembly(text)
        for library in libraries.values():
            module.link_in(llvm.parse_assembly(library))
        for function in module.functions:
            if function.name != name and not function.is_declaration:
                function.linkage = "internal"
        for variable in module.global_variables:
            if not variable.is_declaration:
                variable.linkage = "internal"
        module.verify()
        module.data_layout = str(machine.target_data)  # the cost models read sizes from it
        # Numba's pipeline (``numba.core.codegen``): loops rotated and the IR combined
        # first, so the vectoriser reads the loops' phis, then the full -O3 pipeline.
        early = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(0))
        passes = early.getModulePassManager()
        passes.add_loop_rotate_pass()
        passes.add_instruction_combine_pass()
        passes.add_jump_threading_pass()
        passes.run(module, early)
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        options.loop_vectorization = True
        options.slp_vectorization = True
        # Only the loops the translation marks are unrolled (``llvm_translate._unrolled``):
        # LLVM's heuristics also unrolled loops around vectorised ones, copying them and
        # their runtime checks; without them the kernels of five training steps and two
        # stencils compile in 35% less time at the same speed (module doc).
        options.loop_unrolling = False
        builder = llvm.create_pass_builder(machine, options)
        builder.getModulePassManager().run(module, builder)
        return module


class Compiled:
    """A kernel's machine code in this process's engine."""

    def __init__(self, address: int, outcome: str):
        self.address = address
        self.outcome = outcome


def compiled(unit, cache_dir: str | None) -> Compiled | None:
    """``unit``'s kernel compiled by llvmlite or loaded from ``cache_dir``; None where the
    translation has no rule for its text (Numba compiles it)."""
    from ...config import config

    if not config.llvm_kernels:
        return None
    llvm, machine, engine = _machine()
    path = _object_path(unit, cache_dir)
    if path is not None and path.exists():
        try:
            externals, code = _entry(path.read_bytes())
            resolve(externals)
            return Compiled(_load(code, unit.name), "disk")
        except Exception as err:  # noqa: BLE001 - a damaged entry: compile again
            warnings.warn(
                f"numbax: the compile cache entry {path.name} could not be loaded ({err!r}); "
                "recompiling it.",
                RuntimeWarning,
                stacklevel=3,
            )
            path.unlink(missing_ok=True)
    try:
        module = optimised(unit.source, unit.name)
    except Unsupported:
        return None
    with LOCK:
        code = machine.emit_object(module)
    if path is not None:
        _, _, externals = translate(unit.source, unit.name)
        payload = pickle.dumps((externals, code))
        stored(path, _MAGIC + hashlib.sha256(payload).digest() + payload)
    return Compiled(_load(code, unit.name), "compiled")


def _entry(entry: bytes) -> tuple:
    """The helpers called by symbol and the object code of a cache entry whose digest
    matches it (LLVM aborts the process on a damaged object file rather than raise)."""
    digest_at = len(_MAGIC)
    payload_at = digest_at + 32
    payload = entry[payload_at:]
    if (
        entry[:digest_at] != _MAGIC
        or hashlib.sha256(payload).digest() != entry[digest_at:payload_at]
    ):
        raise ValueError("its digest does not match its code")
    return pickle.loads(payload)


def cached(unit, cache_dir: str | None) -> bool:
    """Whether ``cache_dir`` holds llvmlite's object code of ``unit``'s kernel."""
    path = _object_path(unit, cache_dir)
    return path is not None and path.exists()


def llvm_ir(unit, assembly: bool = False) -> str | None:
    """The optimised IR of ``unit``'s kernel where llvmlite compiles it (its assembly where
    ``assembly``), else None."""
    try:
        module = optimised(unit.source, unit.name)
    except Unsupported:
        return None
    if not assembly:
        return str(module)
    with LOCK:
        return _machine()[1].emit_assembly(module)


def _object_path(unit, cache_dir: str | None) -> Path | None:
    if cache_dir is None:
        return None
    key = hashlib.sha256(f"{unit.key} {host()}".encode()).hexdigest()[:24]
    return Path(cache_dir) / "cpu" / f"{CACHE_PREFIX}{key}.o"


def _load(code: bytes, name: str) -> int:
    llvm, _, engine = _machine()
    with LOCK:
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        address = engine.get_function_address(name)
    if not address:
        raise RuntimeError(f"no function {name} in its object file")
    return address
