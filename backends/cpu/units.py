"""Kernels as units of compilation: each loop kernel a function of its own, keyed by what
it computes, compiled once per process and cached on disk; the program is their launcher.

A loop kernel (elementwise or reduction) is written by the program writer's own kernel
writers into a ``KernelContext``: a writer whose names start afresh at ``a`` for the
kernel's parameters (its inputs, the outputs the launcher allocated for it, the window
an output is stored into) and whose comments carry no source positions. Its text
therefore depends only on what it computes, dtypes, shapes and layout included, and its
key is a hash of that text and the compiler's environment (``cache.program_key``: the
numbax, Numba and Python versions and the helper modules). The launcher (the program
function, one ``njit`` function that allocates from the memory plan and runs the control
flow; or, for a program of kernel calls alone, the steps of ``steps.py``) calls each
kernel by address with one argument, a table of pointers: an array's data, a scalar's
value, and where a returned scalar goes (``nbx_launch.call(kernel_addresses[k], ...)``
builds it); the kernel, a ``numba.cfunc``, rebuilds its arrays with ``carray`` at their
static shapes. The addresses reach the
launcher as an int64 array argument at call time, so the launcher's machine code holds
none and is cached on disk like any program. Identical kernels in a program are one
unit; a kernel this process compiled or loaded before is taken from memory; on disk a
kernel is a module under ``cache_dir/cpu`` loaded by the one module loader
(``cache.load_module``) and compiled with Numba's cache, so another process loads it.

A matrix product (``dot_general``) of floats is a unit too (``write_product``): the
launcher allocates the product from the memory plan and passes its operands, which are
always C-contiguous arrays there; the kernel's text holds every size, stride and which
operand BLAS reads transposed, so these are part of its key, and it calls
``sgemm``/``dgemm`` itself (``gemm.py``) rather than Numba's ``np.dot``, whose checks and
dispatch Numba would type and LLVM compile for every kernel (0.2 s each, against 0.03 s).
BLAS reads each batch's matrix where it lies, by offset and leading dimension
(``contraction.matrices``): ``x.T @ y``, attention's ``(B, T, H, D)`` operands split by
head, a batch dimension in any position, with no transposed copy. A large product
(``contraction.SPLITTABLE_FLOPS``, ``calibration.py``) runs in blocks on the call's threads, one
single-threaded BLAS call per block (``gemm.blocked_gemm``, one parallel helper every
such unit calls). A product's epilogue is the next unit, reading the product's array.
The program still calls BLAS (``calls_blas``), so the executable runs it on the call's
chosen threads with OpenBLAS on one thread (``threads.py``).

An opaque op that is a loop nest into a new array (``OPAQUE``: a transpose, a window
copy, a pad, a concatenate, a gather, a scatter, a cumulative sum, a dynamic slice or
update) or a call of LAPACK (a factorisation, a triangular solve, an eigen- or singular
value decomposition: ``linalg.py``) is a unit too, its outputs allocated by the launcher
(an update that may write in place stores into its operand's array, which the launcher
then names as its output). A program of linear algebra is then a program of steps: a
Gaussian process's compiled no launcher (1.9 s of Numba and LLVM) and reached compiled
code in 0.44 s instead of 2.07 s (quiet, after ``initialise``).
Kernels stay inline in the launcher where a call would cost more than it saves or the
kernel needs what a C function cannot give: a kernel of scalars only (no array to loop
over), one returning several scalars, a product of integers, of a dot of one element,
of operands BLAS cannot read where they lie (a group of dimensions split by another: a
copy, and a kernel allocates nothing), views, and the other opaque ops (sorts,
callbacks, FFT, collectives).

A unit's module is compiled by llvmlite from its text where the translation knows every
construct in it (``llvm_kernels``: milliseconds, no Numba typing or lowering), else by
Numba as below; both read and write the same pointer table.

A program's new kernels compile in worker processes as the program is written and while
the launcher compiles here (``compile_workers.py``, ``EarlyStart``, ``start`` and
``addresses``).

Why a call by address and not Numba's own call of an ``njit`` kernel: Numba links every
callee's library into its caller and ``CodeLibrary.finalize`` runs the module pipeline and
code generation over the linked whole again, so every program would pay LLVM for every
kernel it contains, new or not. By address, each distinct kernel's machine code is made
once and the launcher is glue. A parallel kernel's loops are an ``njit`` function its C
entry calls: Numba's parallel loops in a ``cfunc`` misread arrays ``carray`` made there.

A damaged kernel entry on disk is recompiled with a warning, as a damaged program entry
is (``cache._load_compiled``). The compile log counts a program's distinct kernels as
new, taken from memory and loaded from disk, and times them apart from the launcher.

What units saved against one ``njit`` program, cold and warm, is measured in
``benchmarks/RESULTS.md`` (sessions of 2026-12-04: kernels and products as units).
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ...config import config
from ...ir import dtypes
from ...ir.core import Literal, Var
from ..compile_cache import KeyedLock
from . import llvm_kernels, scalar
from .cache import (
    _compiled_files,
    built_again_if_damaged,
    forget_modules,
    lean_cache,
    load_module,
    program_key,
    write_module,
)
from .kind_writers import KIND_WRITERS
from .loopnest import tuple_source
from .program import ADDRESSES, IMPORTS, _ProgramWriter
from .steps import Recorder

# Kernel kinds written as units (the others stay inline, module doc), and the opaque ops
# written as units: loop nests into arrays the launcher allocates.
KINDS = ("elementwise", "reduction", "opaque")
OPAQUE = ("transpose", "slice", "concatenate", "pad", "gather", "scatter", "cumsum")
OPAQUE += ("dynamic_slice", "dynamic_update_slice")
OPAQUE += ("cholesky", "lu", "triangular_solve", "qr", "eigh", "svd")  # ``linalg.py``
LAUNCH_MODULE = "numbax.backends.cpu.launch"
MODULE_PREFIX = "numbax_kernel_"  # a kernel's module: the prefix and its key

# Kernels by outcome, over this process: compiled, taken from memory, loaded from disk.
COUNTS: Counter = Counter()
_COMPILED: dict[str, object] = {}  # key -> the compiled ``numba.cfunc``
_LOCK = threading.Lock()
_ONE_THREAD = KeyedLock()  # per kernel key: one thread compiles it, the others wait


@dataclass(frozen=True)
class Unit:
    """One distinct kernel of a program: its key, function and module."""

    key: str
    name: str
    source: str
    parallel: bool

    @property
    def module_name(self) -> str:
        return f"{MODULE_PREFIX}{self.key}"


@dataclass
class Written:
    """A kernel written as a unit: what the launcher passes and gets back."""

    unit: Unit
    parameters: list  # every argument, in order: program atoms
    allocated: list[Var]  # outputs the launcher allocates before the call
    returned: list[Var] = field(default_factory=list)  # at most one scalar output


class KernelContext(_ProgramWriter):
    """The program writer's kernel-writing context, for one kernel as a function of its
    own: names start at ``a``; a program value the kernel reads or writes becomes a
    parameter when first named; its one-element outputs are returned; what it
    allocates, the launcher allocates."""

    comments_show_lines = False  # its text must not depend on where its eqns came from

    def __init__(self, program: _ProgramWriter, kernel, reuse: dict):
        self.program = program
        self.reuse = dict(reuse)  # output -> the input whose array it is stored into
        self.jaxpr = program.jaxpr
        self.name_text = program.name_text
        self.parallel_work = program.parallel_work
        self.names = {}
        self.letters = 0
        self.counts = Counter()
        self.constants = {}
        self.modules = set()
        self.lines = []
        self.indent = ""
        self.parallel = False
        self.kernels = []
        self.functions = []
        self.buffer_of, self.buffers, self.flat_buffer = {}, {}, {}
        self.place = program.place
        self.windows_written = set(program.windows_written)
        self.arrays = set(program.arrays)
        self.mentioned = set()
        self.poolable, self.pooled = {}, []
        self.steps = Recorder()  # a kernel's own lines are no launcher's steps
        body = kernel.jaxpr
        self.body_vars = {v for v in body.invars if isinstance(v, Var)}
        self.body_vars |= {v for eqn in body.eqns for v in eqn.outputs}
        self.outputs = set(kernel.outputs)
        self.parameters: list = []
        self.allocated: list[Var] = []
        self.returned: list[Var] = []
        self.calls_blas = False  # the launcher's, where the kernel calls BLAS or LAPACK

    def name(self, var: Var) -> str:
        if var not in self.names:
            name = super().name(var)
            if var in self.body_vars:
                return name
            if var in self.outputs and self._returns(var):
                self.returned.append(var)
            else:
                self.parameters.append(var)
        return self.names[var]

    def _returns(self, top: Var) -> bool:
        liveness, _ = self.place
        return self.is_scalar(top) and top not in liveness.window_stores

    def _name_body(self, kernel) -> None:
        """Body inputs take their parameters' names; the rest are the kernel's locals."""
        body = kernel.jaxpr
        for inner, atom in zip(body.invars, kernel.inputs, strict=True):
            if isinstance(atom, Var):
                self.names[inner] = self.name(atom)
        for eqn in body.eqns:
            for var in eqn.outputs:
                self.name(var)

    def _output_uses(self, kernel, writer, reuse: dict) -> list[tuple]:
        reuse = {**reuse, **{top: self.name(held) for top, held in self.reuse.items()}}
        return super()._output_uses(kernel, writer, reuse)

    def allocate(self, var: Var) -> str:
        """The launcher allocates ``var`` (``write_call``): here it is a parameter."""
        self.arrays.add(var)
        self.allocated.append(var)
        return self.name(var)

    def new_array(self, name: str, shape, dtype) -> list[str]:
        """An output's new array (an opaque op's) is the launcher's (``allocate``); any
        other is the kernel's own."""
        for var in self.outputs:
            if self.names.get(var) == name and var not in self.allocated:
                self.allocate(var)
                return []
        return super().new_array(name, shape, dtype)

    def updated_in_place(self, var: Var, operand: Var, name: str) -> str:
        """An update's output stored into its operand: a local of the kernel, which the
        launcher binds to the operand's array after the call (``reuse``)."""
        self.parameters.remove(var)
        self.reuse[var] = operand
        return super().updated_in_place(var, operand, name)

    def updated_copy(self, var: Var, operand: str) -> str:
        """An update's output: an array the launcher allocates, the operand copied in."""
        size = (var.aval.size,)
        return f"{self.view(self.allocate(var), size)}[:] = {self.view(operand, size)}"

    # --- the unit ---------------------------------------------------------------------

    def written(self, kind: str) -> Written | None:
        """The unit this context wrote, or None where the kernel stays inline (module
        doc): no array to pass, or more than one scalar to return."""
        arrays = [v for v in self.parameters if not self.is_scalar(v)]
        if not arrays or len(self.returned) > 1:
            return None
        if kind == "opaque" and not set(self.outputs) <= {*self.allocated, *self.reuse}:
            return None  # a view or a copy Numba makes: inline
        text = self._function("KERNEL")
        key = program_key(text, comments=False)  # ``comments_show_lines``: no positions
        name = f"{kind}_{key[:16]}"
        unit = Unit(key, name, text.replace("KERNEL", name), self.parallel)
        return Written(unit, list(self.parameters), list(self.allocated), self.returned)

    def _function(self, name: str) -> str:
        """The unit's module: its C entry takes one argument, an array of pointers (the
        calling convention every kernel shares, ``launch.call`` and ``steps``): an
        array's data, a scalar's value, then where a returned scalar is stored."""
        locals_, prologue = [], []
        for k, var in enumerate(self.parameters):
            local = self.names[var]
            locals_.append(local)
            dtype = scalar.dtype_source(var.aval.dtype)
            if self.is_scalar(var):
                prologue.append(f"{local} = carray(args[{k}], (1,), {dtype})[0]")
            else:
                shape = tuple_source(var.aval.shape)
                prologue.append(f"{local} = carray(args[{k}], {shape}, {dtype})")
        body, entry = prologue + self.lines, []
        if self.parallel:
            # Numba's parallel loops read no array that ``carray`` made in the same
            # function: the C entry makes the arrays, an njit function runs the loops.
            call = f"{name}_loops({', '.join(locals_)})"
            entry = ["", "", f"def {name}_loops({', '.join(locals_)}):"]
            entry += ["    " + line if line else "" for line in self.lines]
            if self.returned:
                entry.append(f"    return {self.names[self.returned[0]]}")
            body = [
                *prologue,
                f"{self.names[self.returned[0]]} = {call}" if self.returned else call,
            ]
        if self.returned:
            (var,) = self.returned
            dtype = scalar.dtype_source(var.aval.dtype)
            slot = len(self.parameters)
            body.append(f"carray(args[{slot}], (1,), {dtype})[0] = {self.names[var]}")
        lines = [
            '"""A numbax cpu kernel (numbax/backends/cpu/units.py)."""',
            "",
            "import numpy as np",
            "from numba import carray, prange",
            "from numba import types as nt",
            *sorted(IMPORTS[module][1] for module in self.modules),
            "",
            *(f"{local} = {source}" for (_, source), local in self.constants.items()),
            "SIGNATURE = nt.void(nt.CPointer(nt.voidptr))",
            f"PARALLEL = {self.parallel}",
            *entry,
            "",
            "",
            f"def {name}(args):",
            *("    " + line if line else "" for line in body),
        ]
        return "\n".join(lines) + "\n"


def _numba_scalar(dtype) -> str:
    dtype = scalar.storage_dtype(dtype)
    return "nt.boolean" if dtype == dtypes.bool_ else f"nt.{dtype.name}"


def write_unit(program: _ProgramWriter, kernel, kind: str, reuse=None) -> bool:
    """Write ``kernel`` as a unit and its call into ``program``; False where it stays
    inline (``KINDS``, ``KernelContext.written``). An ``Unfusable`` body raises.
    ``reuse`` maps outputs to the inputs whose arrays they are stored into."""
    if kind not in KINDS:
        return False
    if kind == "opaque":
        (eqn,) = kernel.jaxpr.eqns
        outputs = kernel.outputs
        if eqn.prim.name not in OPAQUE or any(program.is_scalar(v) for v in outputs):
            return False
    reuse = reuse or {}
    context = KernelContext(program, kernel, reuse)
    context._name_body(kernel)
    KIND_WRITERS[kind](context, kernel)
    written = context.written(kind)
    if written is None:
        return False
    program.windows_written |= context.windows_written
    program.calls_blas |= context.calls_blas
    write_call(program, written)
    for top, held in context.reuse.items():
        program.aliases([top], program.name(held))
    return True


def write_product(program: _ProgramWriter, dot, lhs: Var, rhs: Var, out: Var) -> bool:
    """Write the ``dot_general`` eqn ``dot`` of ``lhs`` and ``rhs`` as a product unit that
    writes ``out`` (the launcher allocates it), and its call into ``program``; False,
    having written nothing, where the product stays inline (``contraction.into_array``:
    a large product runs on the call's threads, an integer one is a loop nest, operands
    in another axis order are copied). The operands are the launcher's C-contiguous
    arrays; which one BLAS reads transposed, and every shape, is in the kernel's text,
    hence in its key. The program calls BLAS (``calls_blas``) as it did inline."""
    from .contraction import into_array, write_gemm

    avals = (lhs.aval, rhs.aval, out.aval)
    if not into_array(*avals, dot.params):
        return False
    if any(program.is_scalar(v) for v in (lhs, rhs)):
        return False
    body = SimpleNamespace(jaxpr=SimpleNamespace(invars=[], eqns=[]), outputs=[])
    context = KernelContext(program, body, {})
    a, b = context.name(lhs), context.name(rhs)
    c = context.allocate(out)
    context.emit(*write_gemm(context, a, lhs.aval, b, rhs.aval, c, out.aval, dot.params))
    written = context.written("product")
    if written is None:
        return False
    program.calls_blas = True
    write_call(program, written)
    return True


def write_call(program: _ProgramWriter, written: Written) -> None:
    """The launcher's lines: allocate the outputs, call the kernel by its index."""
    for var in written.allocated:
        program.allocate(var)
    index = program.unit_index.setdefault(written.unit.key, len(program.units))
    if index == len(program.units):
        program.units.append(written.unit)
        if program.on_unit is not None:
            program.on_unit(written.unit)
    program.modules.add(LAUNCH_MODULE)
    program.mentioned.add(ADDRESSES)
    arguments = [_argument(program, atom) for atom in written.parameters]
    result_type = "None"
    if written.returned:
        result_type = "nt." + _numba_scalar(written.returned[0].aval.dtype)[3:]
    call = f"nbx_launch.call({ADDRESSES}[{index}], {result_type}, {tuple_source(arguments)})"
    call += f"  # {written.unit.name}"
    returned = written.returned[0] if written.returned else None
    if returned is not None:
        call = f"{program.name(returned)} = {call}"
    program.steps.call(program, call, index, written.parameters, returned)


def _argument(program: _ProgramWriter, atom) -> str:
    if isinstance(atom, Literal) or program.is_scalar(atom):
        return program.scalar_of(atom)
    return program.name(atom)


# --- compiling and loading ----------------------------------------------------------------


def forget() -> None:
    """This process's compiled kernels forgotten, with their modules
    (``CpuBackend.clear_caches``)."""
    with _LOCK:
        _COMPILED.clear()
    forget_modules(MODULE_PREFIX)


def start(units: list[Unit], cache_dir: str | None) -> dict:
    """Hand the kernels of ``units`` that this process has not compiled and the disk
    cache does not hold to compile workers (``compile_workers``), their modules written
    where the workers read them; their futures by key (none where this process compiles
    every kernel itself). The launcher compiles meanwhile; ``addresses`` collects them."""
    if cache_dir is None:
        return {}
    from . import compile_workers

    new = [unit for unit in units if _new(unit, cache_dir)]
    if len(new) < compile_workers.MIN_NEW_KERNELS or compile_workers.worker_count() == 0:
        return {}
    for unit in new:
        write_module(unit.source, unit.module_name, cache_dir)
    return compile_workers.submit(new, cache_dir)


def _new(unit: Unit, cache_dir: str) -> bool:
    """Whether ``unit``'s kernel is neither in this process nor in the disk cache."""
    return (
        unit.key not in _COMPILED
        and not _compiled_files(Path(cache_dir) / "cpu", (unit.module_name,))
        and not llvm_kernels.cached(unit, cache_dir)
    )


class EarlyStart:
    """New kernels handed to warm compile workers as the program's writer finds them
    (``write_program``'s ``on_unit``), so that they compile while the rest of the program
    is written: a model's distinct kernels are found in its first layers, and writing its
    other layers (0.1 s of an 8-layer transformer step) left the workers' cores idle.
    Cold workers, or fewer than ``MIN_NEW_KERNELS`` new kernels in all, wait for
    ``finish``, which decides as ``start`` does."""

    def __init__(self, cache_dir: str | None):
        from . import compile_workers

        self.cache_dir = cache_dir
        self.futures: dict = {}
        self.found: list[Unit] = []  # new kernels not handed over yet
        self.streaming = cache_dir is not None and compile_workers.warm()

    def __call__(self, unit: Unit) -> None:
        from . import compile_workers

        if not self.streaming or not _new(unit, self.cache_dir):
            return
        self.found.append(unit)
        if len(self.found) + len(self.futures) < compile_workers.MIN_NEW_KERNELS:
            return
        for new in self.found:
            write_module(new.source, new.module_name, self.cache_dir)
        self.futures.update(compile_workers.submit(self.found, self.cache_dir, least=1))
        self.found = []

    def finish(self, units: list[Unit]) -> dict:
        """The futures of ``units``' new kernels, as ``start`` gives them: those handed
        over early (a kernel the writer dropped again is not waited for), else all of
        them now."""
        if not self.futures:
            return start(units, self.cache_dir)
        keys = {unit.key for unit in units}
        return {key: future for key, future in self.futures.items() if key in keys}


def addresses(
    units: list[Unit], cache_dir: str | None, started: dict | None = None, on_done=None
) -> tuple[np.ndarray, Counter]:
    """The machine-code address of each unit's kernel, compiled or loaded, and how many
    were compiled here, compiled in a worker (``started``), taken from memory, loaded from
    disk. A kernel no worker has begun is taken back and compiled here, the last first
    (the workers take the first first); a worker's failure is compiled again here, which
    raises the error itself if it is the kernel's. ``on_done(key)`` as each is ready (the
    compile's progress)."""
    started = dict(started or {})
    found: dict[str, tuple] = {}  # key -> (function, outcome)
    # Take back the kernels no worker has begun, one at a time from the last, compiling
    # each here while the workers go on from the first: the work is shared even when
    # the workers are still starting.
    for unit in reversed(units):
        future = started.get(unit.key)
        if future is not None and future.cancel():
            del started[unit.key]
            found[unit.key] = _kernel(unit, cache_dir)
            if on_done is not None:
                on_done(unit.key)
    by_worker = {key for key, future in started.items() if future.exception() is None}
    counts: Counter = Counter()
    addresses = []
    for unit in units:
        function, outcome = found.get(unit.key) or _kernel(unit, cache_dir)
        if unit.key in by_worker and outcome == "disk":
            outcome = "worker"
        if unit.key not in found:
            found[unit.key] = (function, "memory")  # a repeated unit of this program
            if on_done is not None:
                on_done(unit.key)
        counts[outcome] += 1
        addresses.append(function.address)
    with _LOCK:
        COUNTS.update(counts)
    return np.array(addresses, dtype=np.int64), counts


def by_llvmlite(units: list[Unit]) -> int:
    """How many of the distinct kernels of ``units`` (compiled or loaded) are llvmlite's."""
    keys = {unit.key for unit in units}
    return sum(isinstance(_COMPILED.get(key), llvm_kernels.Compiled) for key in keys)


def _kernel(unit: Unit, cache_dir: str | None):
    with _ONE_THREAD(unit.key):
        function = _COMPILED.get(unit.key)
        if function is not None:
            return function, "memory"
        direct = llvm_kernels.compiled(unit, cache_dir)
        if direct is not None:
            _COMPILED[unit.key] = direct
            return direct, direct.outcome
        folder = Path(cache_dir) / "cpu" if cache_dir else None
        cached = _compiled_files(folder, (unit.module_name,)) if folder else []
        function = built_again_if_damaged(
            lambda: _compiled(unit, cache_dir), cached, unit.module_name, f"of kernel {unit.name}"
        )
        _COMPILED[unit.key] = function
        return function, "disk" if getattr(function, "_cache_hits", 0) else "compiled"


def _compiled(unit: Unit, cache_dir: str | None):
    """``unit``'s kernel as a ``numba.cfunc``, loaded from or written to the disk cache."""
    module = load_module(unit.source, unit.module_name, cache_dir)
    return _cfunc(module, unit.name, cache_dir is not None)


def compile_written(module_name: str, name: str, cache_dir: str) -> None:
    """A compile worker's task (``compile_workers``): compile the kernel ``name`` of the
    module ``start`` wrote under ``cache_dir`` into the disk cache."""
    path = Path(cache_dir) / "cpu" / f"{module_name}.py"
    source = path.read_text()
    key = module_name.removeprefix(MODULE_PREFIX)
    unit = Unit(key, name, source, "\nPARALLEL = True\n" in source)
    if llvm_kernels.compiled(unit, cache_dir) is not None:
        return  # llvmlite's object code, in the disk cache
    loaded = sys.modules.get(module_name)
    if loaded is not None and Path(getattr(loaded, "__file__", "")) != path:
        del sys.modules[module_name]  # from another cache folder: its code is cached there
    _cfunc(load_module(source, module_name, cache_dir), name, True)


def _cfunc(module, name: str, cached: bool):
    """The kernel ``name`` of ``module`` as a ``numba.cfunc``, with Numba's disk cache
    where ``cached``: the lean one the launcher loads with (``cache._compile``), which does
    not import every registry again per kernel (``numba.cfunc(cache=True)`` did: 20 ms a
    kernel in a second process)."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    _compile_loops(module, name)
    function = getattr(module, name)
    signature = sigutils.normalize_signature(module.SIGNATURE)
    kernel = CFunc(function, signature, locals={}, options={"error_model": "numpy"})
    if cached:
        kernel._cache = lean_cache(function)
    kernel.compile()
    return kernel


def _compile_loops(module, name: str) -> None:
    """A parallel kernel's loops as the ``njit`` function its C entry calls."""
    loops = getattr(module, f"{name}_loops", None)
    if loops is not None and not hasattr(loops, "py_func"):
        from numba import njit

        setattr(module, f"{name}_loops", njit(parallel=True, error_model="numpy")(loops))


def llvm_ir(unit: Unit, assembly: bool = False) -> str:
    """The optimised LLVM IR of ``unit``'s kernel (its machine code as assembly where
    ``assembly``), compiled afresh in memory (code loaded from the disk cache keeps
    none): llvmlite's where it compiles the kernel."""
    if config.llvm_kernels:
        text = llvm_kernels.llvm_ir(unit, assembly)
        if text is not None:
            return text
    module = load_module(unit.source, unit.module_name, None)
    kernel = _cfunc(module, unit.name, False)
    return kernel.inspect_asm() if assembly else kernel.inspect_llvm()
